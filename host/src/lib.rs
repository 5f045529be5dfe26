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
//! The layers, each knowing only what it needs, from the bottom up:
//!
//! - [`call`] and [`budget`]: the vocabulary every layer shares — one
//!   [`call::Call`] of a tool, the [`call::FailureKind`] of every failure, the
//!   names sent to the guest at init, and the one script budget and hard
//!   limit;
//! - `runtime` (its face: [`engine`]): the wasmtime engine, one guest
//!   instance per context, limits and budgets, and the boundary
//!   [`engine::Event`]s a [`engine::Recorder`] receives — it knows
//!   WebAssembly, not tools or storage;
//! - `tools`: the built-in tools; they touch the OS (files through cap-std
//!   directories rooted at the workspace roots) and know no policy;
//! - [`replay`]: the hash-chained session log, its SQLite and PostgreSQL
//!   stores, recording and restoring (replay) of contexts;
//! - `pipeline` (its face: [`policy`]): the [`Dispatcher`] and its stages
//!   (permissions, hooks, isolation, settings) — it knows tool calls, not
//!   WebAssembly;
//! - `repl`: the embeddable [`Repl`], its [`ReplBuilder`] and the
//!   [`Evaluation`] every front end and replay build; [`context`]:
//!   [`context::ContextManager`], contexts per key and boundary;
//! - [`mcp`]: the MCP server (`wrepl serve`) and the client for downstream
//!   MCP servers; [`dts`]: TypeScript declarations of the sandbox.

pub mod budget;
pub mod call;
pub mod context;
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
pub mod telemetry;
pub mod testing;
pub mod text;
mod tools;

// The crate root holds what an embedder wires a REPL with; the rest is in
// the modules above and the facades below.

pub use pipeline::dispatcher::{Approver, Dispatcher};
pub use pipeline::events::{EventSink, Phase, ProgressEvent};
pub use pipeline::settings::Settings;
/// How `Bash` commands are confined (Landlock, namespaces; see the module docs), and what works here.
pub use process::confine as confinement;
pub use repl::{
    EvalOptions, EvalResult, Evaluation, Limits, OnTamper, Repl, ReplBuilder, ReplError, Resumption, SessionConfig,
};
pub use repo_hint::repo_hint_for;
pub use runtime::{Ambient, CallUsage, Cost, EngineOptions, SandboxEngine, View};
/// The cancellation token of evaluations and calls (tokio-util's).
pub use tokio_util::sync::CancellationToken;
pub use tools::sampling::{SampleError, SampleRequest, Sampler};
pub use tools::{
    Media, ProgressFn, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolProgress, Workspace,
};

/// The WebAssembly engine and the guest: engine options, the precompiled
/// guest, the boundary events a [`engine::Recorder`] receives, the clock and
/// randomness a guest sees, and the runtime's limits.
pub mod engine {
    pub use crate::runtime::{
        paging_out_possible, precompile_guest, slots_reset_in_place, Ambient, Divergence, EngineOptions, Event,
        RecordError, Recorder, RegisteredTool, SandboxEngine, ScriptError, SnapshotError, SnapshotImage, StopReason,
        SystemAmbient, CONSOLE_BUDGET_BYTES, GUEST_COMPONENT, MAX_JS_STACK_LIMIT, MAX_REGISTERED_TOOLS,
        PRECOMPILED_CPU, PRECOMPILED_GUEST, PRECOMPILED_TARGET, WASMTIME_VERSION,
    };
}

/// The inner-call pipeline's policy and records: settings, permission
/// decisions, the [`policy::Dispatcher`] and its front calls, call records
/// and progress events, the built-in tools and the watchdog.
pub mod policy {
    pub use crate::pipeline::dispatcher::{
        js_global_for, watchdog_for, Approver, CallRecord, Dispatcher, EvalCalls, PipelineError, RecordJson,
        MAX_IMAGES, MAX_PDFS,
    };
    pub use crate::pipeline::events::{EventSink, Phase, ProgressEvent};
    pub use crate::pipeline::front::{Admission, FrontCall, FrontDefault, Refusal, Settlement};
    pub use crate::pipeline::permissions::Decision;
    pub use crate::pipeline::settings::{
        ClaudeSettings, PrivateNetworkSetting, Settings, SettingsError, WebFetchSettings,
    };
    pub use crate::tools::chdir::CHDIR;
    pub use crate::tools::modules::{LoadedModule, ModuleSet, ModuleSpec, IMPORT_MODULE};
    pub use crate::tools::web::{is_public, parse_network, PrivateNetwork, WebConfig, WEB_FETCH};
    pub use crate::tools::{builtin_tools, FILE_TOOL_TIMEOUT};
}

/// The REPL transform every snippet passes before it runs: what is
/// accepted, and whether a line typed so far needs more input.
pub mod source {
    pub use crate::script::{needs_more_input, prepare, prepare_with, ModuleDigests, ScriptLimits, ScriptRejected};
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
