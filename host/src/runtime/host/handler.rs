//! What the runtime hands inner calls to: the [`CallHandler`] contract, the
//! running [`CallFuture`], and the [`CallFailure`] (of a [`FailureKind`]) a
//! script sees when a call fails or is refused.

use std::future::Future;
use std::pin::Pin;

/// Why an inner call failed, as the script sees it in `error.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// Refused by a permission rule, a hook, or the approver.
    Denied,
    /// The input does not match the tool's schema (or is otherwise unacceptable).
    InvalidInput,
    /// The tool returned output that violates its declared schema.
    InvalidOutput,
    /// No tool of that name is available.
    UnknownTool,
    /// The isolation latch refused the call.
    Isolation,
    /// A path leaves the granted workspace roots.
    PathEscape,
    /// The path is wrepl's own state (compile cache, session store, settings, ...).
    Protected,
    /// The file or directory does not exist.
    NotFound,
    /// An OS error.
    Io,
    /// The tool's native timeout expired.
    Timeout,
    /// The tool ignored its timeout and the watchdog aborted it.
    Watchdog,
    /// The call was cancelled.
    Aborted,
    /// Any other failure of the tool.
    Failed,
}

impl FailureKind {
    /// The kebab-case name the script sees (`denied`, `invalid-input`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Denied => "denied",
            FailureKind::InvalidInput => "invalid-input",
            FailureKind::InvalidOutput => "invalid-output",
            FailureKind::UnknownTool => "unknown-tool",
            FailureKind::Isolation => "isolation",
            FailureKind::PathEscape => "path-escape",
            FailureKind::Protected => "protected",
            FailureKind::NotFound => "not-found",
            FailureKind::Io => "io",
            FailureKind::Timeout => "timeout",
            FailureKind::Watchdog => "watchdog",
            FailureKind::Aborted => "aborted",
            FailureKind::Failed => "failed",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed or refused inner call, as the script sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFailure {
    /// Machine-readable kind.
    pub kind: FailureKind,
    /// Human-readable explanation.
    pub message: String,
}

impl CallFailure {
    /// Build a failure of `kind` with `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

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
