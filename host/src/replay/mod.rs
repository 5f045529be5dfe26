//! Replay: the durable, hash-chained log of every evaluation's boundary
//! events, and the machinery to restore a context from it.

pub mod log;
pub mod recorder;
pub mod store;
