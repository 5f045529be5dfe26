//! wrepl: a sealed JavaScript REPL for LLM agents.
//!
//! Model-written JavaScript runs in QuickJS compiled to a WebAssembly
//! component whose only imports are the WIT interfaces in `wit/`. Every
//! capability a script reaches — the built-in tools, your own [`Tool`]s,
//! `chdir`, the model's calls of script-registered tools — passes ONE
//! pipeline ([`Dispatcher`]): schema, isolation latch, PreToolUse hooks,
//! permission, execution with a watchdog, PostToolUse hooks, progress
//! events and a record. Wire a context with [`Repl::builder`].
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::{json, Value};
//! use wrepl::{EvalOptions, Repl, Tool, ToolContext, ToolFuture, ToolOutput};
//!
//! /// A tool of the embedder's own: `greet({name})`.
//! struct Greet;
//!
//! impl Tool for Greet {
//!     fn name(&self) -> &str { "greet" }
//!     fn description(&self) -> &str { "Greets someone." }
//!     fn input_schema(&self) -> Value {
//!         json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
//!     }
//!     fn read_only(&self, _input: &Value) -> bool { true }
//!     fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
//!         Box::pin(async move {
//!             let who = input["name"].as_str().unwrap_or("nobody").to_string();
//!             Ok(ToolOutput::new(json!({"greeting": format!("hello, {who}")}), "greeted"))
//!         })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), wrepl::ReplError> {
//! let dir = std::env::temp_dir();
//! let mut repl = Repl::builder()
//!     .roots([dir])
//!     .tool(Arc::new(Greet))
//!     .deny(["Bash"])
//!     .build()
//!     .await?;
//! let r = repl.eval("const g = await greet({name: 'ada'}); g.greeting", EvalOptions::default()).await?;
//! assert_eq!(r.result, Some(json!("hello, ada")));
//! // the call passed the pipeline and left a record
//! assert_eq!(r.calls[0].tool, "greet");
//! // variables persist in the context
//! let r = repl.eval("g.greeting.length", EvalOptions::default()).await?;
//! assert_eq!(r.result, Some(json!(10)));
//! // a schema violation is refused before the tool runs
//! let r = repl.eval("try { await greet({}) } catch (e) { e.kind }", EvalOptions::default()).await?;
//! assert_eq!(r.result, Some(json!("invalid-input")));
//! # Ok(())
//! # }
//! ```
//!
//! The layers, each knowing only what it needs:
//!
//! - `runtime`: the wasmtime engine, one guest instance per context, limits
//!   and budgets, and the boundary [`Event`]s a [`Recorder`] receives — it
//!   knows WebAssembly, not tools or storage;
//! - `pipeline`: the [`Dispatcher`] and its stages (permissions, hooks,
//!   isolation, settings) — it knows tool calls, not WebAssembly;
//! - `tools`: the built-in tools; they touch the OS (files through cap-std
//!   directories rooted at the workspace roots) and know no policy;
//! - [`replay`]: the hash-chained session log, its SQLite store, recording
//!   and restoring (replay) of contexts;
//! - `repl`: the embeddable [`Repl`] and its [`ReplBuilder`];
//!   `context`: [`ContextManager`], contexts per key and boundary;
//! - [`mcp`]: the MCP server (`wrepl serve`) and the client for downstream
//!   MCP servers; [`dts`]: TypeScript declarations of the sandbox.

mod context;
pub mod dts;
mod ids;
pub mod mcp;
mod pipeline;
pub(crate) mod process;
mod repl;
pub mod replay;
mod repo_hint;
mod runtime;
mod script;
mod shell_syntax;
#[doc(hidden)]
pub mod testing;
mod text;
mod tools;

pub use context::{context_log_name, fork_log, session_name, ContextManager, ContextStatus, Hydration, MAIN};
pub use pipeline::dispatcher::{
    js_global_for, watchdog_for, Admission, Approver, CallRecord, Dispatcher, EvalCalls, FrontCall, FrontDefault,
    PipelineError, RecordJson, Refusal, Settlement, HARD_LIMIT, MAX_IMAGES, MAX_PDFS,
};
pub use pipeline::events::{EventSink, Phase, ProgressEvent};
pub use pipeline::permissions::Decision;
pub use pipeline::settings::{ClaudeSettings, Settings, SettingsError};
/// How `Bash` commands are confined (Landlock, namespaces; see the module docs), and what works here.
pub use process::confine as confinement;
pub use repl::{
    cap_text, parse_timeout, timeout_from_ms, BlockVerdict, EvalOptions, EvalResult, Limits, OnTamper, Repl,
    ReplBuilder, ReplError, RestoreReport, Resumption, SessionConfig, Verdict, DEFAULT_TEXT_CAP, DEFAULT_TIMEOUT_MS,
    HARD_WALL_MS, MAX_TIMEOUT_MS, REGISTERED_PREFIX,
};
pub use repo_hint::repo_hint_for;
pub use runtime::{precompile_guest, GUEST_COMPONENT, PRECOMPILED_CPU, PRECOMPILED_GUEST, PRECOMPILED_TARGET};
pub use runtime::{
    Ambient, CallFailure, CancelToken, Divergence, EngineOptions, Event, FailureKind, RecordError, Recorder,
    RegisteredTool, SandboxEngine, ScriptError, StopReason, SystemAmbient, CONSOLE_BUDGET_BYTES, MAX_JS_STACK_LIMIT,
    MAX_REGISTERED_TOOLS,
};
pub use script::{needs_more_input, prepare, ScriptLimits, ScriptRejected};
pub use text::{panic_line, terminal_safe};
pub use tools::chdir::CHDIR;
pub use tools::sampling::{SampleError, SampleRequest, Sampler};
pub use tools::{
    builtin_tools, Media, ProgressFn, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolProgress,
    Workspace, FILE_TOOL_TIMEOUT,
};

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
