//! Hook configuration: the matcher groups of an event, their validation
//! (matchers, commands, timeouts) and which hooks match a tool.

use regex::Regex;

use super::super::settings::{HookCommand, HookMatcher, HookSettings, SettingsError, MAX_HOOK_TIMEOUT_SECS};
use super::HookEvent;

#[derive(Debug)]
pub(super) struct Group {
    pub(super) matcher: Option<Regex>,
    pub(super) hooks: Vec<HookCommand>,
}

impl Group {
    pub(super) fn matches(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|re| re.is_match(tool))
    }
}

/// The matcher groups configured for one event.
pub(super) fn configured(settings: &HookSettings, event: HookEvent) -> &[HookMatcher] {
    match event {
        HookEvent::PreToolUse => &settings.pre_tool_use,
        HookEvent::PostToolUse => &settings.post_tool_use,
        HookEvent::PostToolUseFailure => &settings.post_tool_use_failure,
    }
}

pub(super) fn validate_group(group: &HookMatcher, field: &str) -> Result<(), SettingsError> {
    compile_matcher(group.matcher.as_deref())
        .map_err(|e| SettingsError::invalid(format!("{field}.matcher"), format!("invalid regex: {e}")))?;
    for (j, hook) in group.hooks.iter().enumerate() {
        validate_hook(hook, &format!("{field}.hooks[{j}]"))?;
    }
    Ok(())
}

fn validate_hook(hook: &HookCommand, field: &str) -> Result<(), SettingsError> {
    if hook.command.trim().is_empty() {
        return Err(SettingsError::invalid(format!("{field}.command"), "must not be empty"));
    }
    if !(hook.timeout.is_finite() && hook.timeout > 0.0 && hook.timeout <= MAX_HOOK_TIMEOUT_SECS) {
        return Err(SettingsError::invalid(
            format!("{field}.timeout"),
            format!("must be greater than 0 and at most {MAX_HOOK_TIMEOUT_SECS} seconds, got {}", hook.timeout),
        ));
    }
    Ok(())
}

/// Compile a hook matcher into an anchored regex; `None` means "all tools"
/// (absent, `""` or `"*"`).
pub(super) fn compile_matcher(matcher: Option<&str>) -> Result<Option<Regex>, regex::Error> {
    match matcher.map(str::trim) {
        None | Some("") | Some("*") => Ok(None),
        Some(pattern) => Regex::new(&format!("^(?:{pattern})$")).map(Some),
    }
}
