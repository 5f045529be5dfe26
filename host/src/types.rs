//! TypeScript declarations of the sandbox globals (placeholder; being written).
