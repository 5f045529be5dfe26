//! The call vocabulary every layer shares: one [`Call`] of a tool (who asked,
//! what, under which share of the evaluation's budget), the one
//! [`FailureKind`] enum every failure is named by, the [`CallFailure`] a
//! script sees, the fingerprint a call's schema is recorded under, and the
//! prefix the model sees script-registered tools under.
//!
//! It sits below every other module: the runtime hands calls to a handler
//! and delivers their failures, the pipeline admits and runs them, replay
//! records and compares them, and the front ends name them; none of them
//! defines its own shape of a call.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// Prefix of the names script-registered tools are offered to the model
/// under (`<prefix><name>`). Sent to the guest at init; no other place
/// writes it.
pub const REGISTERED_PREFIX: &str = "eval_registered__";

/// Why an inner call failed, as the script sees it in `error.kind`: every
/// failure a call can meet, each with a stable name.
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
    /// A limit of the sandbox refused the call (e.g. too many calls in flight).
    Limit,
    /// The result is larger than a script may receive.
    ResultTooLarge,
    /// The session log could not record the call, so it was not run.
    LogFailure,
    /// On replay, the call differs from the one the log recorded.
    ReplayDrift,
    /// The log recorded the call's intent but not its outcome: it may or may
    /// not have taken effect, and it is not run again.
    OutcomeUnknown,
}

impl FailureKind {
    /// Every kind, in declaration order.
    pub const ALL: [FailureKind; 18] = [
        FailureKind::Denied,
        FailureKind::InvalidInput,
        FailureKind::InvalidOutput,
        FailureKind::UnknownTool,
        FailureKind::Isolation,
        FailureKind::PathEscape,
        FailureKind::Protected,
        FailureKind::NotFound,
        FailureKind::Io,
        FailureKind::Timeout,
        FailureKind::Watchdog,
        FailureKind::Aborted,
        FailureKind::Failed,
        FailureKind::Limit,
        FailureKind::ResultTooLarge,
        FailureKind::LogFailure,
        FailureKind::ReplayDrift,
        FailureKind::OutcomeUnknown,
    ];

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
            FailureKind::Limit => "limit",
            FailureKind::ResultTooLarge => "result-too-large",
            FailureKind::LogFailure => "log-failure",
            FailureKind::ReplayDrift => "replay-drift",
            FailureKind::OutcomeUnknown => "outcome-unknown",
        }
    }

    /// The kind named `name` ([`FailureKind::as_str`]), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
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

/// Where a call comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// An inner call the script made (a tool global, a shorthand, `chdir`).
    Script,
    /// The model's call of a tool wrepl serves itself (the MCP `repl` tool,
    /// a script-registered tool).
    Model,
}

/// A W3C trace context a call continues (`traceparent`, `tracestate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The `traceparent` header value.
    pub traceparent: String,
    /// The `tracestate` header value, if any.
    pub tracestate: Option<String>,
}

/// A call's share of its evaluation's budget: when it started, and the
/// token that stops it when the evaluation ends, is stopped or cancelled
/// (a child of the evaluation's token).
#[derive(Debug, Clone)]
pub struct CallBudget {
    /// When the call started.
    pub started: Instant,
    /// Cancelled when the call must stop.
    pub cancel: CancellationToken,
}

/// One call of a tool as it passes the pipeline.
#[derive(Debug)]
pub struct Call {
    /// The call's `toolu_…` id.
    pub id: String,
    /// The tool's wire name.
    pub tool: String,
    /// The input (a PreToolUse hook may rewrite it).
    pub input: Value,
    /// Who made the call.
    pub origin: Origin,
    /// The working directory the call starts in.
    pub cwd: PathBuf,
    /// Its share of the evaluation's budget.
    pub budget: CallBudget,
    /// The trace context it continues, if any.
    pub trace: Option<TraceContext>,
    /// The [`fingerprint`] of the input schema the call is checked against
    /// (`None` until its tool is known): a recorded call whose fingerprint
    /// differs on replay has drifted.
    pub fingerprint: Option<Arc<str>>,
    /// How the permission stage decided it (for its span); `None` until it did.
    pub permission: Option<PermissionNote>,
}

/// How the permission stage decided a call: `allow`, `deny`, `approved`
/// (asked, and the approver said yes) or `declined` (asked, and refused or
/// nobody could be asked), and the rule that decided, if a rule did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionNote {
    /// The decision.
    pub decision: &'static str,
    /// The rule (`Bash(git status:*)`), when one matched.
    pub rule: Option<String>,
    /// What the PreToolUse hooks decided (`allow`, `deny`, `ask`), when
    /// one did.
    pub hook: Option<&'static str>,
}

/// How a shorthand global calls its tool: the guest knows each form's
/// behaviour (which input field the first argument fills, what the result
/// resolves to), the host names the global and the tool (see [`SHORTHANDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShorthandForm {
    /// `(command, options)`: the command's stdout; rejects with a ShellError on a non-zero exit.
    Shell,
    /// `(path, options)`: the file's text (the result object for an image or a PDF).
    Read,
    /// `(pattern, options)`: matching lines as text (content mode with line numbers).
    GrepContent,
    /// `(pattern, options)`: the paths of the files that match.
    GrepFiles,
    /// `(pattern, options)`: the paths the glob finds.
    Glob,
    /// `(path, text)`: writes `text` (`str(text)` for a value that is not a string).
    Write,
    /// `(prompt, schema?)`: a language model's reply.
    Sample,
    /// `(dir)`: changes the working directory.
    Chdir,
}

/// A global the guest installs as a shorthand for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shorthand {
    /// The global's name (`sh`, `cat`, ...).
    pub global: &'static str,
    /// How it calls its tool.
    pub form: ShorthandForm,
    /// The tool's wire name; the shorthand exists only where the tool does.
    pub tool: &'static str,
}

/// Every shorthand, in the order the guest installs them. Sent to the guest
/// at init (those whose tool the sandbox has), and declared by `wrepl types`.
pub const SHORTHANDS: &[Shorthand] = &[
    Shorthand { global: "sh", form: ShorthandForm::Shell, tool: "Bash" },
    Shorthand { global: "cat", form: ShorthandForm::Read, tool: "Read" },
    Shorthand { global: "rg", form: ShorthandForm::GrepContent, tool: "Grep" },
    Shorthand { global: "rgf", form: ShorthandForm::GrepFiles, tool: "Grep" },
    Shorthand { global: "gl", form: ShorthandForm::Glob, tool: "Glob" },
    Shorthand { global: "put", form: ShorthandForm::Write, tool: "Write" },
    Shorthand { global: "haiku", form: ShorthandForm::Sample, tool: "Sample" },
    Shorthand { global: "sonnet", form: ShorthandForm::Sample, tool: "Sample" },
    Shorthand { global: "opus", form: ShorthandForm::Sample, tool: "Sample" },
    Shorthand { global: "fable", form: ShorthandForm::Sample, tool: "Sample" },
    Shorthand { global: "chdir", form: ShorthandForm::Chdir, tool: "chdir" },
];

/// Fingerprint of a tool's input schema: the first 16 hex characters of the
/// SHA-256 of `serde_json::to_string(schema)`. Recorded with every call.
pub fn fingerprint(schema: &Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    fingerprint_text(&serde_json::to_string(schema).unwrap_or_default())
}

/// [`fingerprint`] of a schema already serialized as `text`.
pub fn fingerprint_text(text: &str) -> String {
    let mut hex = to_hex(&Sha256::digest(text.as_bytes()));
    hex.truncate(16);
    hex
}

/// Lowercase hex of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_short_and_stable() {
        let a = fingerprint(&serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}}));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, fingerprint(&serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}})));
        assert_ne!(a, fingerprint(&serde_json::json!({"type": "object"})));
        // sha256("null")
        assert_eq!(fingerprint(&serde_json::Value::Null), "74234e98afe7498f");
    }

    #[test]
    fn every_kind_has_a_distinct_stable_name() {
        let names: std::collections::BTreeSet<&str> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), FailureKind::ALL.len());
        for k in FailureKind::ALL {
            assert_eq!(FailureKind::from_name(k.as_str()), Some(k));
            assert!(k.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{k}");
        }
        assert_eq!(FailureKind::from_name("nope"), None);
    }
}
