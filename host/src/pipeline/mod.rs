//! The inner-call pipeline: one dispatcher every guest call goes through.
//! It knows tool calls, policy and hooks, but not WebAssembly.

pub mod dispatcher;
pub mod events;
pub mod hooks;
pub mod latch;
pub mod permissions;
pub mod settings;
