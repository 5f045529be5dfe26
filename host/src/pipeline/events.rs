//! Progress events of inner calls.

use std::sync::Arc;

use serde::Serialize;

/// The phase a call reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The call was received (before validation).
    Start,
    /// Validation, hooks and permission passed; the tool runs.
    Executing,
    /// The running tool reported intermediate progress.
    Progress,
    /// The tool finished successfully.
    Complete,
    /// The call failed or was refused.
    Error,
}

/// One progress event.
#[derive(Debug, Clone, Serialize)]
pub struct ProgressEvent {
    /// Tool-use id of the call.
    pub tool_use_id: String,
    /// Tool name.
    pub tool: String,
    /// Phase.
    pub phase: Phase,
    /// Error message for `error`.
    pub message: Option<String>,
    /// Milliseconds since the call started.
    pub elapsed_ms: f64,
    /// For `progress`: the tool's progress value and total (when known).
    pub progress: Option<(f64, Option<f64>)>,
    /// For `error`: the failure's kind (`denied`, `timeout`, `aborted`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<&'static str>,
}

/// Where progress events go.
pub type EventSink = Arc<dyn Fn(&ProgressEvent) + Send + Sync>;
