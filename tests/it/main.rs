//! wrepl integration tests: one binary, one module per area.

mod support;

mod budgets;
mod calls;
mod cli;
mod contexts;
mod hostile;
mod limits;
mod mcp_downstream;
mod mcp_server;
mod pipeline;
mod registered;
mod repl_semantics;
mod resilience;
mod sessions;
mod types;
