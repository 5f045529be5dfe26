//! What the runtime hands inner calls to: the [`CallHandler`] contract, the
//! running [`CallFuture`], and the [`CallFailure`] (of a [`FailureKind`]) a
//! script sees when a call fails or is refused.

pub use crate::call::{CallFailure, FailureKind};

use std::future::Future;
use std::pin::Pin;

/// The running part of an inner call: resolves to the JSON text of the value
/// the script receives.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<String, CallFailure>> + Send>>;

/// Where inner calls go. The runtime knows nothing about tools: it hands the
/// tool name and the untrusted JSON input text to this handler.
pub trait CallHandler: Send + Sync + 'static {
    /// Begin a call. Refusals that need no work may be returned directly.
    fn start(&self, tool: &str, input: &str) -> Result<CallFuture, CallFailure>;
    /// A fingerprint of the tool's input schema, recorded with each call.
    fn fingerprint(&self, _tool: &str) -> String {
        String::new()
    }
    /// Whether a recorded call's intent must be durable before it runs (so
    /// that a crash while it runs leaves `outcome_unknown`, never a second
    /// run). False only for calls that cannot change anything (a read): their
    /// intent and result are written with the next durable event, at the
    /// latest when the block ends. The default is true.
    fn durable_intent(&self, _tool: &str, _input: &str) -> bool {
        true
    }
    /// Check a JSON Schema a script registers a tool with (`Err`: why it is
    /// not a usable schema). The runtime knows no schema language, so
    /// without a handler that does, every schema is refused.
    fn check_schema(&self, _schema: &serde_json::Value) -> Result<(), String> {
        Err("no schema validator is available in this sandbox".into())
    }
}

/// A handler with no tools: every call is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl CallHandler for NoTools {
    fn start(&self, tool: &str, _input: &str) -> Result<CallFuture, CallFailure> {
        Err(CallFailure::new(FailureKind::UnknownTool, format!("no tool named {tool:?} is available in this sandbox")))
    }
}
