//! MCP front end: [`server`] serves the REPL to MCP clients (stdio and
//! streamable HTTP).
//!
//! The client side — downstream MCP servers whose tools scripts call as
//! `mcp__<server>__<tool>` — lives with the other tools in `tools::mcp`; it
//! stays reachable here as [`downstream`].

pub use crate::tools::mcp as downstream;
pub mod server;
