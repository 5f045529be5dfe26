//! MCP front end and client: [`server`] serves the REPL to MCP clients
//! (stdio and streamable HTTP); [`downstream`] connects to configured MCP
//! servers and offers their tools to scripts as `mcp__<server>__<tool>`.

pub mod downstream;
pub mod server;
