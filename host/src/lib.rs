//! wrepl: a sealed JavaScript REPL for LLM agents.
//!
//! Model-written JavaScript runs in QuickJS compiled to a WebAssembly
//! component; its only way out is the WIT interface in `wit/`. The layers:
//!
//! - [`runtime`]: wasmtime engine, guest instances, limits and budgets
//!   (knows WebAssembly, not tool semantics);
//! - [`script`]: the REPL transform and the sealed-sandbox scan (oxc parser);
//! - [`repl`]: the embeddable API — one persistent context, evaluations,
//!   result assembly.

pub mod context;
pub mod mcp;
pub mod pipeline;
pub mod repl;
pub mod replay;
pub mod runtime;
pub mod script;
mod text;
pub mod tools;
pub mod types;

pub use repl::{EvalOptions, EvalResult, Repl, ReplError, ReplOptions};
