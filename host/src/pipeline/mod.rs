//! The inner-call pipeline: one dispatcher every guest call goes through.
//! It knows tool calls, policy and hooks, but not WebAssembly.

mod admit;
pub mod dispatcher;
pub mod events;
pub mod front;
mod gate;
pub mod hooks;
pub mod latch;
pub mod permissions;
mod records;
pub mod settings;
mod stages;

use hooks::HookRunner;
use latch::IsolationLatch;
use permissions::PermissionRules;
use settings::{Settings, SettingsError};

/// Check everything in `settings` that can be checked without running
/// anything, each part by the module that gives it meaning: permission rules
/// are parsed ([`PermissionRules::from_settings`]), hook matchers compiled
/// and timeouts range-checked ([`HookRunner::validate`]), isolation patterns
/// parsed ([`IsolationLatch::validate`]). The first error wins and names its
/// field. [`Settings::load`] and [`Settings::from_json`] call this, so the
/// settings module itself stays plain data.
pub fn validate_settings(settings: &Settings) -> Result<(), SettingsError> {
    for (name, value) in &settings.env {
        if let Some(why) = settings::env_refusal(name, value) {
            return Err(SettingsError::invalid(format!("env.{name}"), why));
        }
    }
    for (name, m) in &settings.modules {
        m.check(name).map_err(|why| SettingsError::invalid(format!("modules.{name}"), why))?;
    }
    PermissionRules::from_settings(&settings.permissions)?;
    HookRunner::validate(&settings.hooks)?;
    IsolationLatch::validate(&settings.isolation)
}
