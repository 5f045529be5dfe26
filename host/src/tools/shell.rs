//! The Bash tool (placeholder until implemented).
