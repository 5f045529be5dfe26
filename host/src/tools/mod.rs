//! Built-in tools. Tools touch the OS (files through cap-std `Dir`s rooted at
//! the granted workspace roots) but know no policy: permission, hooks,
//! schema validation and timeouts are the pipeline's job.

pub mod chdir;
pub mod files;
pub mod mcp;
pub mod modules;
pub mod sampling;
pub mod search;
pub mod shell;
pub mod tasks;
mod typed;
pub mod web;
pub mod workspace;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use workspace::{PathFilter, Workspace};

/// Native timeout of file and search tools.
pub const FILE_TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// A boxed, sendable tool future.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// Why a tool failed. The message is shown to the script and the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The input is well-formed JSON but not acceptable (beyond the schema).
    #[error("{0}")]
    InvalidInput(String),
    /// A path leaves the granted workspace roots (`..`, absolute paths,
    /// symlinks) or names something that is not allowed.
    #[error("{0}")]
    PathEscape(String),
    /// The path is wrepl's own state (compile cache, session store, settings,
    /// hook scripts, MCP configuration): no file tool touches it, even inside
    /// a workspace root.
    #[error("{0}")]
    Protected(String),
    /// The file or directory does not exist.
    #[error("{0}")]
    NotFound(String),
    /// An OS error.
    #[error("{0}")]
    Io(String),
    /// The tool's own (native) timeout expired.
    #[error("{0}")]
    Timeout(String),
    /// The call was cancelled.
    #[error("{0}")]
    Cancelled(String),
    /// Any other failure.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// Short machine-readable kind, as the script sees it in `error.kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::InvalidInput(_) => "invalid-input",
            ToolError::PathEscape(_) => "path-escape",
            ToolError::Protected(_) => "protected",
            ToolError::NotFound(_) => "not-found",
            ToolError::Io(_) => "io",
            ToolError::Timeout(_) => "timeout",
            ToolError::Cancelled(_) => "aborted",
            ToolError::Failed(_) => "failed",
        }
    }
}

/// A media attachment produced by a tool (e.g. `Read` of an image or PDF).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Media {
    /// An image.
    Image {
        /// MIME type, e.g. `image/png`.
        mime: String,
        /// Base64 data.
        data: String,
    },
    /// A PDF document.
    Pdf {
        /// Base64 data.
        data: String,
    },
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// The value the script receives (structured content).
    pub value: Value,
    /// Text for the transcript / the model (e.g. `cat -n` style for Read).
    pub text: String,
    /// Media attachments.
    pub media: Vec<Media>,
    /// A new working directory for the rest of the evaluation (only the
    /// built-in `chdir` sets it; the pipeline re-checks it against the roots).
    #[serde(skip)]
    pub(crate) cwd: Option<PathBuf>,
}

impl ToolOutput {
    /// Output with a value and a text rendering, no media.
    pub fn new(value: Value, text: impl Into<String>) -> Self {
        Self { value, text: text.into(), media: Vec::new(), cwd: None }
    }

    /// The same output with `media` attached.
    pub fn with_media(mut self, media: Vec<Media>) -> Self {
        self.media = media;
        self
    }
}

/// How permission rules with a specifier (`Tool(spec)`) match a tool's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleKind {
    /// The specifier is a path glob matched against [`Tool::input_paths`]
    /// (`Read(./src/**)`).
    Path,
    /// The specifier is a shell command pattern matched against every
    /// subcommand of [`Tool::rule_subject`] (`Bash(git status:*)`).
    Shell,
    /// The specifier is matched against the whole of [`Tool::rule_subject`].
    Command,
    /// The specifier is `domain:HOST` or `domain:*.SUFFIX`, matched against
    /// the host [`Tool::rule_subject`] names (`WebFetch(domain:example.com)`).
    Domain,
}

/// What a running call may use.
#[derive(Clone)]
pub struct ToolContext {
    /// The granted workspace roots.
    pub workspace: Arc<Workspace>,
    /// The evaluation's working directory (absolute host path inside a root).
    pub cwd: PathBuf,
    /// Cancelled when the call must stop (native timeout, watchdog, eval end).
    pub cancel: CancellationToken,
    /// The native timeout the pipeline applies to this call.
    pub timeout: Duration,
    /// Where the tool reports intermediate progress (e.g. a downstream MCP
    /// server's `notifications/progress`); `None` when nobody listens.
    pub progress: Option<ProgressFn>,
    /// How commands the call starts are confined (`Bash`; from the settings
    /// keys `confine` and `allowNet`).
    pub confinement: crate::process::confine::Confinement,
    /// The call's W3C trace context, when its evaluation is traced: Bash
    /// commands get it as `TRACEPARENT`/`TRACESTATE`, `WebFetch` sends it.
    pub trace: Option<crate::call::TraceContext>,
    /// The context's background commands (`Bash` with `run_in_background`,
    /// read by `TaskOutput`).
    pub tasks: Arc<tasks::BackgroundTasks>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("confinement", &self.confinement)
            .finish_non_exhaustive()
    }
}

/// Intermediate progress of a running call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolProgress {
    /// Progress so far (monotonic, unit chosen by the tool).
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// A human-readable message.
    pub message: Option<String>,
}

/// Receives a call's [`ToolProgress`] reports.
pub type ProgressFn = Arc<dyn Fn(ToolProgress) + Send + Sync>;

/// A tool the pipeline can run.
pub trait Tool: Send + Sync + 'static {
    /// Wire name (`Read`, `Bash`, `mcp__srv__tool`, ...).
    fn name(&self) -> &str;
    /// One-paragraph description for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the input.
    fn input_schema(&self) -> Value;
    /// JSON Schema of the output value, if the tool declares one.
    fn output_schema(&self) -> Option<Value> {
        None
    }
    /// Native timeout for this input.
    fn native_timeout(&self, _input: &Value) -> Duration {
        FILE_TOOL_TIMEOUT
    }
    /// True when the tool never changes anything.
    fn read_only(&self, _input: &Value) -> bool {
        false
    }
    /// True when a call may run with no rule allowing it (the file tools'
    /// reads inside the roots). Default: [`Tool::read_only`].
    fn allowed_by_default(&self, input: &Value) -> bool {
        self.read_only(input)
    }
    /// True when calls may run at the same time as other calls.
    fn concurrency_safe(&self, input: &Value) -> bool {
        self.read_only(input)
    }
    /// Paths the input refers to, for path-scoped permission rules
    /// (`Read(./src/**)`). Raw strings as given by the caller.
    fn input_paths(&self, _input: &Value) -> Vec<String> {
        Vec::new()
    }
    /// The string command-scoped rules match (`Bash(git status:*)`).
    fn rule_subject(&self, _input: &Value) -> Option<String> {
        None
    }
    /// How rules that name this tool with a specifier match its calls.
    fn rule_kind(&self) -> RuleKind {
        RuleKind::Command
    }
    /// Another tool whose deny rules also cover this tool's paths (Glob and
    /// Grep read file contents, so `Read` deny rules apply to them).
    fn also_checked_as(&self) -> Option<&str> {
        None
    }
    /// The JavaScript global the tool is installed as (`None`: its name, or
    /// its name made an identifier).
    fn global(&self) -> Option<&str> {
        None
    }
    /// Run the call. The input has already been validated against the schema.
    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture;
}

/// The built-in tools, with model sampling unavailable (`haiku` fails clearly).
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    builtin_tools_with(None)
}

/// The built-in tools, with `sampler` answering `haiku` (model sampling).
pub fn builtin_tools_with(sampler: Option<Arc<dyn sampling::Sampler>>) -> Vec<Arc<dyn Tool>> {
    builtin_tools_configured(sampler, shell::DEFAULT_TIMEOUT, Vec::new(), web::WebConfig::default())
}

/// The built-in tools, with `sampler` answering `haiku`, Bash's timeout for
/// calls that give none and its environment, and `WebFetch`'s limits and
/// grants.
pub fn builtin_tools_configured(
    sampler: Option<Arc<dyn sampling::Sampler>>,
    bash_default_timeout: std::time::Duration,
    bash_env: Vec<(String, String)>,
    web: web::WebConfig,
) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(chdir::Chdir),
        Arc::new(sampling::Sample::new(sampler)),
        Arc::new(shell::Bash::with_default_timeout(bash_default_timeout).with_env(bash_env)),
        Arc::new(files::Read),
        Arc::new(files::Write),
        Arc::new(files::Edit),
        Arc::new(search::Glob),
        Arc::new(search::Grep),
        Arc::new(web::WebFetch::new(web)),
        Arc::new(tasks::TaskOutput),
    ]
}

/// Test helper: a successful output's value matches the tool's declared
/// output schema (every built-in tool declares one).
#[cfg(test)]
pub(crate) fn assert_declared_output(tool: &dyn Tool, out: &Result<ToolOutput, ToolError>) {
    let Ok(out) = out else { return };
    let schema = tool.output_schema().unwrap_or_else(|| panic!("{} declares no output schema", tool.name()));
    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", tool.name()));
    let first = validator.iter_errors(&out.value).next().map(|e| e.to_string());
    if let Some(err) = first {
        panic!("{}: output {} does not match its declared schema {schema}: {err}", tool.name(), out.value);
    }
}

/// Read a string field of an input object.
pub(crate) fn str_field<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}
