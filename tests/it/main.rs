//! wrepl integration tests: one binary, one module per area.

mod support;

mod budgets;
mod calls;
mod caps;
mod cli;
mod confine;
mod conformance;
mod contexts;
mod cost;
mod golden;
mod host_conformance;
mod hostile;
mod http_auth;
mod integrity;
mod limits;
mod mcp_downstream;
mod mcp_modern;
mod mcp_server;
mod modules;
mod node_host;
mod pipeline;
mod postgres;
mod protected;
mod python_sdk;
mod readme;
mod registered;
mod repl_semantics;
mod resilience;
mod sessions;
mod shell_rules;
mod snapshots;
mod telemetry;
mod terminal;
mod types;
mod web_platform;
