//! Search tools: Glob, Grep (placeholder until implemented).
