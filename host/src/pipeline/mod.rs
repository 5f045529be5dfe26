//! The inner-call pipeline.

pub mod hooks;
pub mod permissions;
pub mod settings;
