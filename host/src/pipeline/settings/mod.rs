//! The settings file: permission rules, command hooks and tool isolation.
//!
//! ```json
//! {
//!   "permissions": { "allow": ["Bash(git status:*)", "Read(./src/**)"], "ask": [], "deny": [] },
//!   "hooks": {
//!     "PreToolUse": [
//!       { "matcher": "Bash|Write",
//!         "hooks": [ { "type": "command", "command": "./check.sh", "timeout": 60, "onTimeout": "deny" } ] }
//!     ],
//!     "PostToolUse": [],
//!     "PostToolUseFailure": []
//!   },
//!   "isolation": { "enabled": false, "web": ["mcp__fetch__*"], "connectors": ["mcp__gmail__*"] },
//!   "confine": "prefer",
//!   "allowNet": false
//! }
//! ```
//!
//! Every section and every list is optional; unknown keys are errors (a
//! misspelt `"deny"` must not silently become no rule at all). The defaults
//! are fail-closed:
//!
//! - no permission rules: `PermissionRules::evaluate` matches nothing and the
//!   caller applies its own default (ask or deny, never allow);
//! - no hooks; a hook's `timeout` defaults to [`DEFAULT_HOOK_TIMEOUT_SECS`]
//!   and an expired hook denies the call (`"onTimeout": "deny"`);
//! - isolation off, with no web and no connector tools;
//! - `confine: "prefer"`: Bash commands run confined as far as the machine
//!   allows (`"require"` refuses Bash when anything is missing, `"off"` runs
//!   them unconfined; see `wrepl::confinement`), and `allowNet: false`: they
//!   get no network but their own loopback interface.
//!
//! Loading validates everything that can be checked without running anything:
//! permission rules are parsed, matchers compiled, timeouts range-checked. A
//! validation error names the offending field, e.g.
//! `hooks.PreToolUse[0].hooks[1].timeout: must be greater than 0 and at most 600 seconds`.
//!
//! This module is plain data: the types, their serde shape and defaults. The
//! checks belong to the modules that give the data meaning (rule parsing to
//! `permissions`, matchers and timeouts to `hooks`, isolation patterns to
//! `latch`); [`Settings::load`] and [`Settings::from_json`] run them all
//! through [`validate_settings`](super::validate_settings).
//!
//! Here are the settings' shape and its serde helpers; loading a file
//! (parsing and validation) is in `load`, reading a Claude Code settings
//! file in `claude`, the variables `env` may set in `env`, and
//! [`SettingsError`] in `error`.

mod claude;
mod env;
mod error;
mod load;

#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

pub use crate::process::confine::ConfineMode;
pub use claude::ClaudeSettings;
pub use env::env_refusal;
pub use error::SettingsError;

/// Default hook timeout in seconds.
pub const DEFAULT_HOOK_TIMEOUT_SECS: f64 = 60.0;

/// Largest accepted hook timeout in seconds: the hard limit.
pub const MAX_HOOK_TIMEOUT_SECS: f64 = crate::budget::HARD_LIMIT.as_secs_f64();

/// The whole settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Permission rules.
    pub permissions: PermissionSettings,
    /// Command hooks.
    pub hooks: HookSettings,
    /// Tool isolation classes.
    pub isolation: IsolationSettings,
    /// How Bash commands are confined (`"require"`, `"prefer"` — the
    /// default — or `"off"`).
    #[serde(deserialize_with = "de_confine")]
    pub confine: ConfineMode,
    /// Bash commands keep the host's network (no network namespace): they can
    /// connect and listen wherever the user can. Default: false (loopback only).
    #[serde(rename = "allowNet", deserialize_with = "de_allow_net")]
    pub allow_net: bool,
    /// Also read the project's Claude Code settings (`.claude/settings.json`
    /// and `.claude/settings.local.json`; the CLI's `--claude-settings`).
    #[serde(rename = "claudeSettings")]
    pub claude_settings: bool,
    /// Bash's timeout for calls that give none, in milliseconds (1 to the
    /// hard limit, [`crate::budget::HARD_LIMIT`]; default 120000). The CLI takes `BASH_DEFAULT_TIMEOUT_MS` from
    /// its environment when this is not set.
    #[serde(
        rename = "bashDefaultTimeoutMs",
        deserialize_with = "de_bash_timeout",
        skip_serializing_if = "Option::is_none"
    )]
    pub bash_default_timeout_ms: Option<u64>,
    /// Variables set for Bash commands and hooks, on top of the few wrepl
    /// passes from its own environment. Variables that would change which
    /// program runs or what a shell executes before the command (`PATH`,
    /// `BASH_ENV`, `LD_PRELOAD`, `GIT_SSH_COMMAND`, ...) are refused: Bash
    /// rules match the command line, and could not see their effect (see
    /// [`env_refusal`]).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// `fetch()` and the `WebFetch` tool: which non-public addresses they
    /// may reach, and their caps.
    #[serde(rename = "webFetch", skip_serializing_if = "WebFetchSettings::is_default")]
    pub web_fetch: WebFetchSettings,
    /// The ES modules scripts may `import`, by the name they import them by:
    /// one file (`{"path": "vendor/marked.esm.js"}`) or a package directory
    /// (`{"path": "vendor/lodash-es", "entry": "lodash.js"}`), each with an
    /// optional `sha256`. Paths are relative to the project directory (the
    /// first root). Nothing else can be imported.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub modules: std::collections::BTreeMap<String, ModuleSetting>,
}

/// One entry of `modules`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleSetting {
    /// The ESM file, or the package directory.
    pub path: String,
    /// A package's entry file, relative to it (default `index.js`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The expected SHA-256 (hex): of the file, or for a package of its
    /// files (see `wrepl::policy::LoadedModule`); a mismatch refuses the
    /// import and names the digest found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl ModuleSetting {
    /// Check one entry; the error names what is wrong.
    pub(crate) fn check(&self, name: &str) -> Result<(), String> {
        if name.is_empty() || name.len() > 214 || name.chars().any(char::is_control) {
            return Err(format!("{name:?} is not a module name (1 to 214 characters, no control characters)"));
        }
        if self.path.trim().is_empty() {
            return Err(format!("{name}: path is empty"));
        }
        if let Some(h) = &self.sha256 {
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("{name}: sha256 must be 64 hexadecimal digits"));
            }
        }
        if let Some(e) = &self.entry {
            let p = std::path::Path::new(e);
            if e.is_empty() || p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
                return Err(format!("{name}: entry must be a path inside the package, not {e:?}"));
            }
        }
        Ok(())
    }

    /// The module as the tool reads it, its path resolved against `project`.
    pub fn spec(&self, project: &std::path::Path) -> crate::tools::modules::ModuleSpec {
        crate::tools::modules::ModuleSpec {
            path: project.join(&self.path),
            entry: self.entry.clone(),
            sha256: self.sha256.as_ref().map(|h| h.to_ascii_lowercase()),
        }
    }
}

/// `webFetch`: the grants and caps of `WebFetch` (see
/// [`crate::tools::web::WebConfig`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebFetchSettings {
    /// `true`: loopback, private and link-local addresses may be fetched;
    /// a list of networks (`["127.0.0.1/32", "10.0.0.0/8"]`): those only.
    /// Default: none.
    #[serde(rename = "allowPrivateNetwork", deserialize_with = "de_private_network")]
    pub allow_private_network: PrivateNetworkSetting,
    /// Most bytes of a response body (default 10 MiB).
    #[serde(rename = "maxBodyBytes", skip_serializing_if = "Option::is_none")]
    pub max_body_bytes: Option<u64>,
    /// Most bytes of a response's headers (default 64 KiB).
    #[serde(rename = "maxHeaderBytes", skip_serializing_if = "Option::is_none")]
    pub max_header_bytes: Option<u64>,
    /// Longest one request may take, in milliseconds (default 30000).
    #[serde(rename = "timeoutMs", skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `webFetch.allowPrivateNetwork`, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PrivateNetworkSetting {
    /// `false` (the default) or `true`.
    Flag(bool),
    /// These networks (CIDR, or a single address).
    Networks(Vec<String>),
}

impl Default for PrivateNetworkSetting {
    fn default() -> Self {
        PrivateNetworkSetting::Flag(false)
    }
}

fn de_private_network<'de, D: Deserializer<'de>>(d: D) -> Result<PrivateNetworkSetting, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    match v {
        serde_json::Value::Bool(b) => Ok(PrivateNetworkSetting::Flag(b)),
        serde_json::Value::Array(items) => {
            let mut nets = Vec::new();
            for item in items {
                let Some(text) = item.as_str() else {
                    return Err(de::Error::custom(
                        "webFetch.allowPrivateNetwork: each network must be a string such as \"127.0.0.1/32\"",
                    ));
                };
                crate::tools::web::parse_network(text)
                    .map_err(|e| de::Error::custom(format!("webFetch.allowPrivateNetwork: {e}")))?;
                nets.push(text.to_string());
            }
            Ok(PrivateNetworkSetting::Networks(nets))
        }
        _ => Err(de::Error::custom("webFetch.allowPrivateNetwork must be true, false or a list of networks")),
    }
}

impl WebFetchSettings {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The tool's configuration (the defaults where nothing is set).
    pub fn config(&self) -> crate::tools::web::WebConfig {
        use crate::tools::web::{parse_network, PrivateNetwork, WebConfig};
        let d = WebConfig::default();
        let private_network = match &self.allow_private_network {
            PrivateNetworkSetting::Flag(true) => PrivateNetwork::All,
            PrivateNetworkSetting::Flag(false) => PrivateNetwork::Refused,
            // Validated when read: a network that does not parse grants nothing.
            PrivateNetworkSetting::Networks(nets) => {
                PrivateNetwork::Only(nets.iter().filter_map(|n| parse_network(n).ok()).collect())
            }
        };
        WebConfig {
            private_network,
            max_body_bytes: self.max_body_bytes.unwrap_or(d.max_body_bytes),
            max_header_bytes: self.max_header_bytes.unwrap_or(d.max_header_bytes),
            timeout: self.timeout_ms.map(std::time::Duration::from_millis).unwrap_or(d.timeout),
        }
    }
}

fn de_bash_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = f64::deserialize(d)?;
    let max = crate::budget::hard_limit_ms();
    if !(v.is_finite() && (1.0..=max as f64).contains(&v) && v.fract() == 0.0) {
        return Err(de::Error::custom(format!(
            "bashDefaultTimeoutMs must be a whole number of milliseconds from 1 to {max}, got {v}"
        )));
    }
    Ok(Some(v as u64))
}

/// `permissions`: rule lists. Evaluation order is deny, then ask, then allow
/// (see `PermissionRules` in the `permissions` module).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionSettings {
    /// Rules that let a call run without asking.
    pub allow: Vec<String>,
    /// Rules that make the caller ask the user.
    pub ask: Vec<String>,
    /// Rules that refuse a call.
    pub deny: Vec<String>,
}

/// `hooks`: matcher groups per event, run in configuration order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HookSettings {
    /// Run before a tool call; may allow, ask, deny or rewrite the input.
    #[serde(rename = "PreToolUse")]
    pub pre_tool_use: Vec<HookMatcher>,
    /// Run after a successful tool call; may add context or flag the result.
    #[serde(rename = "PostToolUse")]
    pub post_tool_use: Vec<HookMatcher>,
    /// Run after a failed tool call; may add context.
    #[serde(rename = "PostToolUseFailure")]
    pub post_tool_use_failure: Vec<HookMatcher>,
}

/// One matcher group: a tool-name pattern and the hooks it triggers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcher {
    /// Regular expression that must match the whole tool name (it is
    /// anchored: `Bash|Write` means `^(?:Bash|Write)$`). Absent, `""` or
    /// `"*"` match every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The hooks, in order.
    pub hooks: Vec<HookCommand>,
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HookCommand {
    /// Hook kind; only `"command"` exists.
    #[serde(rename = "type")]
    pub kind: HookType,
    /// Shell command, run as `/bin/sh -c <command>` in the call's working
    /// directory.
    #[serde(deserialize_with = "de_command")]
    pub command: String,
    /// Seconds before the hook's process group is killed (default 60, more
    /// than 0 and at most 600; fractions allowed).
    #[serde(default = "default_timeout", deserialize_with = "de_timeout")]
    pub timeout: f64,
    /// What an expired hook means (default: deny).
    #[serde(default)]
    pub on_timeout: OnTimeout,
}

impl HookCommand {
    /// A command hook with the default timeout and `onTimeout`.
    pub fn new(command: impl Into<String>) -> Self {
        HookCommand {
            kind: HookType::Command,
            command: command.into(),
            timeout: DEFAULT_HOOK_TIMEOUT_SECS,
            on_timeout: OnTimeout::Deny,
        }
    }

    /// The timeout as a duration (clamped to the valid range, so it is
    /// usable even on unvalidated settings).
    pub fn timeout_duration(&self) -> Duration {
        let secs = if self.timeout.is_finite() && self.timeout > 0.0 {
            self.timeout.min(MAX_HOOK_TIMEOUT_SECS)
        } else {
            DEFAULT_HOOK_TIMEOUT_SECS
        };
        Duration::from_secs_f64(secs)
    }
}

fn default_timeout() -> f64 {
    DEFAULT_HOOK_TIMEOUT_SECS
}

fn de_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    f64::deserialize(d).map_err(|e| de::Error::custom(format!("timeout: {e}")))
}

fn de_confine<'de, D: Deserializer<'de>>(d: D) -> Result<ConfineMode, D::Error> {
    de_keyword(d, "confine", &ConfineMode::ALL)
}

fn de_allow_net<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    bool::deserialize(d).map_err(|e| de::Error::custom(format!("allowNet: {e}")))
}

fn de_command<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    String::deserialize(d).map_err(|e| de::Error::custom(format!("command: {e}")))
}

/// Deserialize a lowercase keyword, naming the field in the error.
fn de_keyword<'de, D: Deserializer<'de>, T>(d: D, field: &str, choices: &[(&str, T)]) -> Result<T, D::Error>
where
    T: Copy,
{
    let s = String::deserialize(d).map_err(|e| de::Error::custom(format!("{field}: {e}")))?;
    if let Some((_, v)) = choices.iter().find(|(name, _)| *name == s) {
        return Ok(*v);
    }
    let expected: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
    Err(de::Error::custom(format!("{field}: expected {}, got {s:?}", expected.join(" or "))))
}

/// The kind of a hook. Only command hooks exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookType {
    /// Run a shell command.
    Command,
}

impl<'de> Deserialize<'de> for HookType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de_keyword(d, "type", &[("command", HookType::Command)])
    }
}

/// What an expired hook means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    /// Refuse the call (PreToolUse) or flag the result (post events). Default.
    #[default]
    Deny,
    /// Carry on as if the hook had said nothing (a warning is still reported).
    Allow,
}

impl<'de> Deserialize<'de> for OnTimeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de_keyword(d, "onTimeout", &[("deny", OnTimeout::Deny), ("allow", OnTimeout::Allow)])
    }
}

/// `isolation`: which tools bring in untrusted web content and which reach
/// private data. The policy built on these classes (not letting one session
/// use both) is the isolation latch's, which also checks the patterns; this
/// only holds them.
///
/// Patterns use the tool part of the permission-rule syntax: an exact name,
/// `mcp__server` (every tool of that server) or a trailing `*` on an MCP
/// name (`mcp__fetch__*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IsolationSettings {
    /// Whether the dispatcher enforces isolation (default: off).
    pub enabled: bool,
    /// Tools that fetch untrusted web content.
    pub web: Vec<String>,
    /// Tools that reach private data (mail, documents, ...).
    pub connectors: Vec<String>,
}
