//! Durable log storage (placeholder until implemented).
