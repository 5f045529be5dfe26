//! Downstream MCP servers (placeholder; being written).
