//! wrepl integration tests: one binary, one module per area.

mod support;

mod budgets;
mod calls;
mod cli;
mod contexts;
mod limits;
mod mcp_downstream;
mod pipeline;
mod registered;
mod repl_semantics;
mod sessions;
