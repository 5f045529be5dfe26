//! The inner-call pipeline: one dispatcher every guest call goes through.
//! It knows tool calls, policy and hooks, but not WebAssembly.

pub mod dispatcher;
pub mod events;
mod front;
pub mod hooks;
pub mod latch;
pub mod permissions;
mod records;
pub mod settings;
mod stages;
