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

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

pub use crate::process::confine::ConfineMode;

/// Default hook timeout in seconds.
pub const DEFAULT_HOOK_TIMEOUT_SECS: f64 = 60.0;

/// Largest accepted hook timeout in seconds.
pub const MAX_HOOK_TIMEOUT_SECS: f64 = 600.0;

/// Why settings could not be loaded or a rule could not be accepted.
///
/// Each message already contains the message of its cause (`{}` of a
/// [`SettingsError::File`] reads `settings.json: permissions.allow[0]: …`),
/// so [`source`](std::error::Error::source) continues with the cause's OWN
/// cause instead of the cause itself: a chain printer (`{:#}` of
/// `anyhow::Error`) then shows every reason once, not once per level. The
/// causes themselves stay in the variants' `source` fields.
#[derive(Debug)]
pub enum SettingsError {
    /// The settings file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An error in a settings file (wraps the actual error with the file name).
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<SettingsError>,
    },
    /// The JSON is malformed or does not have the expected shape (unknown
    /// key, wrong type, missing `hooks` list, ...).
    Parse(serde_json::Error),
    /// A field has an unacceptable value.
    Invalid {
        /// Path of the field, e.g. `hooks.PreToolUse[0].matcher`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A permission rule (or tool pattern) is malformed.
    InvalidRule {
        /// Where the rule came from, e.g. `permissions.allow[2]` or `allow`.
        field: String,
        /// The rule as written.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::Io { path, source } => write!(f, "cannot read settings file {}: {source}", path.display()),
            SettingsError::File { path, source } => write!(f, "{}: {source}", path.display()),
            SettingsError::Parse(e) => write!(f, "invalid settings: {e}"),
            SettingsError::Invalid { field, message } => write!(f, "{field}: {message}"),
            SettingsError::InvalidRule { field, rule, reason } => write!(f, "{field}: invalid rule {rule:?}: {reason}"),
        }
    }
}

impl std::error::Error for SettingsError {
    /// The cause's cause: the cause's message is part of ours (see the type's
    /// docs).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettingsError::Io { source, .. } => source.source(),
            SettingsError::File { source, .. } => source.source(),
            SettingsError::Parse(e) => e.source(),
            SettingsError::Invalid { .. } | SettingsError::InvalidRule { .. } => None,
        }
    }
}

impl From<serde_json::Error> for SettingsError {
    fn from(e: serde_json::Error) -> Self {
        SettingsError::Parse(e)
    }
}

impl SettingsError {
    /// An [`SettingsError::Invalid`] for `field`.
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError::Invalid { field: field.into(), message: message.into() }
    }
}

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
    /// Bash's timeout for calls that give none, in milliseconds (1 to
    /// 600000; default 120000). The CLI takes `BASH_DEFAULT_TIMEOUT_MS` from
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
}

/// Why the variable `name=value` may not be set for Bash commands and hooks,
/// or `None` when it may.
///
/// Refused: names that are not plain identifiers; values with a NUL byte;
/// the loader's and the shell's own variables (`LD_*`, `BASH_*` including
/// exported functions, `ENV`, `SHELLOPTS`, `IFS`, `PS4`, ...); where programs
/// are found or what runs them (`PATH`, `HOME`, `SHELL`, `TMPDIR`, pagers and
/// editors, interpreters' start-up options, git's programs and config);
/// and wrepl's own (`WREPL_*`).
pub fn env_refusal(name: &str, value: &str) -> Option<String> {
    let ident = name.chars().next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    if !ident {
        return Some(format!("{name:?} is not a variable name (letters, digits and _)"));
    }
    if value.contains('\0') {
        return Some(format!("{name}'s value contains a NUL byte"));
    }
    const PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_", "BASH", "WREPL_", "GIT_CONFIG"];
    const NAMES: &[&str] = &[
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "PATH",
        "HOME",
        "SHELL",
        "TMPDIR",
        "TMP",
        "TEMP",
        "GCONV_PATH",
        "HOSTALIASES",
        "LOCPATH",
        "NLSPATH",
        "MALLOC_CHECK_",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "LESSCLOSE",
        "MANPAGER",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_EXEC_PATH",
        "GIT_EXTERNAL_DIFF",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_TEMPLATE_DIR",
        "GIT_PROXY_COMMAND",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ];
    let upper = name.to_ascii_uppercase();
    if NAMES.contains(&upper.as_str()) || PREFIXES.iter().any(|p| upper.starts_with(p)) {
        return Some(format!(
            "{name} is not set: it would change which program runs or what a shell does before the command, \
             which Bash rules and hooks cannot see"
        ));
    }
    None
}

fn de_bash_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = f64::deserialize(d)?;
    if !(v.is_finite() && (1.0..=600_000.0).contains(&v) && v.fract() == 0.0) {
        return Err(de::Error::custom(format!(
            "bashDefaultTimeoutMs must be a whole number of milliseconds from 1 to 600000, got {v}"
        )));
    }
    Ok(Some(v as u64))
}

impl Settings {
    /// Read, parse and validate a settings file.
    pub fn load(path: impl AsRef<Path>) -> Result<Settings, SettingsError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|source| SettingsError::Io { path: path.to_path_buf(), source })?;
        Settings::from_json(&text).map_err(|e| SettingsError::File { path: path.to_path_buf(), source: Box::new(e) })
    }

    /// Parse and validate settings from JSON text.
    pub fn from_json(json: &str) -> Result<Settings, SettingsError> {
        // serde would read a JSON array into a struct positionally
        // (`[{"allow": ["Bash"]}]` as permissions): every level that is a
        // struct must be a JSON object.
        let value: serde_json::Value = serde_json::from_str(json)?;
        require_objects(&value)?;
        let settings: Settings = serde_json::from_value(value)?;
        settings.validate()?;
        Ok(settings)
    }

    /// Check everything that can be checked statically: permission rules
    /// parse, hook matchers compile, hook commands are not empty, timeouts
    /// are in range, isolation patterns parse (each by the pipeline module
    /// that gives the data meaning). [`Settings::load`] and
    /// [`Settings::from_json`] already call this; call it again after
    /// building or changing settings in code.
    pub fn validate(&self) -> Result<(), SettingsError> {
        super::validate_settings(self)
    }
}

/// A settings file as Claude Code writes it (`.claude/settings.json`), read
/// for what it means here: see [`Settings::from_claude_json`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaudeSettings {
    /// The settings wrepl applies: permission rules and hooks.
    pub settings: Settings,
    /// `permissions.additionalDirectories`, resolved against the project
    /// directory: more workspace roots.
    pub roots: Vec<PathBuf>,
    /// One line per key, rule or value that is not applied, naming it.
    pub warnings: Vec<String>,
}

/// Tools of Claude Code that wrepl does not have: rules naming them are
/// dropped (with a warning) from a Claude settings file, since no call can
/// reach such a tool here.
const CLAUDE_ONLY_TOOLS: &[&str] = &[
    "WebFetch",
    "WebSearch",
    "Task",
    "Agent",
    "TodoWrite",
    "TodoRead",
    "NotebookEdit",
    "NotebookRead",
    "MultiEdit",
    "LS",
    "ExitPlanMode",
    "BashOutput",
    "KillShell",
    "KillBash",
    "SlashCommand",
    "Skill",
];

impl Settings {
    /// Read settings written for Claude Code: known keys are used, the rest
    /// is reported, one warning each, never silently dropped.
    /// - `permissions.allow`, `ask`, `deny`: the rules (`Bash(cmd *)` and
    ///   `Bash(cmd:*)` alike). Rules naming a tool only Claude Code has
    ///   (`WebFetch(...)`, `Task`, ...) are dropped with a warning: nothing
    ///   here can call such a tool.
    /// - `permissions.additionalDirectories`: more roots, relative to
    ///   `project` (the directory holding `.claude/`).
    /// - `permissions.defaultMode`: `"default"` is what wrepl does (deny
    ///   what no rule allows, ask where a rule says so); any other mode is
    ///   not applied (never more permissive), with a warning.
    /// - `hooks`: `PreToolUse`, `PostToolUse` and `PostToolUseFailure`;
    ///   other events are reported.
    /// - `$schema` is ignored; wrepl's own keys (`isolation`, `confine`,
    ///   `allowNet`, ...) are read as in wrepl's format.
    /// - `env`: set for Bash commands and hooks, but for the variables
    ///   [`env_refusal`] refuses, each reported.
    /// - Every other key is reported.
    ///
    /// The result is validated like any settings file.
    pub fn from_claude_json(json: &str, project: &Path) -> Result<ClaudeSettings, SettingsError> {
        use serde_json::{Map, Value};
        let value: Value = serde_json::from_str(json)?;
        let Value::Object(root) = value else {
            return Err(SettingsError::invalid("settings", "must be a JSON object"));
        };
        let mut out = ClaudeSettings::default();
        let mut kept = Map::new();
        for (key, v) in root {
            match key.as_str() {
                "$schema" => {}
                "permissions" => {
                    let Value::Object(perms) = v else {
                        return Err(SettingsError::invalid("permissions", "must be a JSON object"));
                    };
                    let mut p = Map::new();
                    for (k, v) in perms {
                        match k.as_str() {
                            "allow" | "ask" | "deny" => {
                                let Value::Array(rules) = v else {
                                    return Err(SettingsError::invalid(format!("permissions.{k}"), "must be an array"));
                                };
                                let mut list = Vec::new();
                                for rule in rules {
                                    let Value::String(text) = &rule else {
                                        return Err(SettingsError::invalid(
                                            format!("permissions.{k}"),
                                            "must be an array of strings",
                                        ));
                                    };
                                    let tool = text.split('(').next().unwrap_or("").trim();
                                    if CLAUDE_ONLY_TOOLS.contains(&tool) {
                                        out.warnings.push(format!(
                                            "permissions.{k}: {text:?} is not applied: wrepl has no {tool} tool"
                                        ));
                                    } else {
                                        list.push(rule);
                                    }
                                }
                                p.insert(k, Value::Array(list));
                            }
                            "additionalDirectories" => {
                                let dirs = match v {
                                    Value::Array(d) => d,
                                    _ => {
                                        return Err(SettingsError::invalid(
                                            "permissions.additionalDirectories",
                                            "must be an array of paths",
                                        ))
                                    }
                                };
                                for d in dirs {
                                    let Value::String(d) = d else {
                                        return Err(SettingsError::invalid(
                                            "permissions.additionalDirectories",
                                            "must be an array of paths",
                                        ));
                                    };
                                    let path = match d.strip_prefix("~/") {
                                        Some(rest) => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                                            Some(home) => PathBuf::from(home).join(rest),
                                            None => {
                                                out.warnings.push(format!(
                                                    "permissions.additionalDirectories: {d:?} is not applied: HOME is \
                                                     not set"
                                                ));
                                                continue;
                                            }
                                        },
                                        None => project.join(d),
                                    };
                                    out.roots.push(path);
                                }
                            }
                            "defaultMode" => match v.as_str() {
                                Some("default") => {}
                                Some(mode) => out.warnings.push(format!(
                                    "permissions.defaultMode {mode:?} is not applied: wrepl denies what no rule \
                                     allows and asks where a rule says so"
                                )),
                                None => {
                                    return Err(SettingsError::invalid("permissions.defaultMode", "must be a string"))
                                }
                            },
                            other => out.warnings.push(format!("permissions.{other} is not applied")),
                        }
                    }
                    kept.insert(key, Value::Object(p));
                }
                "hooks" => {
                    let Value::Object(events) = v else {
                        return Err(SettingsError::invalid("hooks", "must be a JSON object"));
                    };
                    let mut h = Map::new();
                    for (event, groups) in events {
                        if matches!(event.as_str(), "PreToolUse" | "PostToolUse" | "PostToolUseFailure") {
                            h.insert(event, groups);
                        } else {
                            out.warnings.push(format!("hooks.{event} is not applied: wrepl has no such event"));
                        }
                    }
                    kept.insert(key, Value::Object(h));
                }
                // wrepl's own keys in a file that names Claude Code's
                // schema keep their meaning (a `confine: "require"` must
                // not become a warning).
                "isolation" | "confine" | "allowNet" | "claudeSettings" | "bashDefaultTimeoutMs" => {
                    kept.insert(key, v);
                }
                "env" => {
                    let Value::Object(vars) = v else {
                        return Err(SettingsError::invalid("env", "must be a JSON object of strings"));
                    };
                    let mut env = Map::new();
                    for (name, value) in vars {
                        let Value::String(text) = &value else {
                            out.warnings.push(format!("env.{name} is not applied: its value is not a string"));
                            continue;
                        };
                        match env_refusal(&name, text) {
                            Some(why) => out.warnings.push(format!("env: {why}")),
                            None => {
                                env.insert(name, value);
                            }
                        }
                    }
                    kept.insert(key, Value::Object(env));
                }
                other => {
                    out.warnings.push(format!("{other} is not applied (a Claude Code setting wrepl does not use)"))
                }
            }
        }
        let text = Value::Object(kept).to_string();
        out.settings = Settings::from_json(&text)?;
        Ok(out)
    }
}

/// Check that each part of the settings that is a struct is a JSON object
/// (the root, `permissions`, `hooks`, `isolation`, each matcher group and
/// each hook), naming the first that is not.
fn require_objects(root: &serde_json::Value) -> Result<(), SettingsError> {
    use serde_json::Value;
    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
    let object = |v: &Value, field: &str| -> Result<(), SettingsError> {
        if v.is_object() {
            Ok(())
        } else {
            let field = if field.is_empty() { "settings" } else { field };
            Err(SettingsError::invalid(field, format!("must be a JSON object, found {}", kind(v))))
        }
    };
    object(root, "")?;
    for key in ["permissions", "hooks", "isolation"] {
        if let Some(v) = root.get(key) {
            object(v, key)?;
        }
    }
    let Some(Value::Object(hooks)) = root.get("hooks") else { return Ok(()) };
    for (event, groups) in hooks {
        let Value::Array(groups) = groups else { continue };
        for (i, group) in groups.iter().enumerate() {
            object(group, &format!("hooks.{event}[{i}]"))?;
            let Some(Value::Array(list)) = group.get("hooks") else { continue };
            for (j, hook) in list.iter().enumerate() {
                object(hook, &format!("hooks.{event}[{i}].hooks[{j}]"))?;
            }
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_full() {
        assert_eq!(Settings::from_json("{}").unwrap(), Settings::default());
        let s = Settings::from_json(
            r#"{
              "permissions": { "allow": ["Bash(git status:*)", "Read(./src/**)", "Write", "mcp__srv__tool"], "ask": [], "deny": [] },
              "hooks": {
                "PreToolUse": [ { "matcher": "Bash|Write", "hooks": [ { "type": "command", "command": "true", "timeout": 60, "onTimeout": "deny" } ] } ],
                "PostToolUse": [ { "hooks": [ { "type": "command", "command": "true", "timeout": 0.5, "onTimeout": "allow" } ] } ],
                "PostToolUseFailure": []
              },
              "isolation": { "enabled": true, "web": ["mcp__fetch__*"], "connectors": ["mcp__gmail"] }
            }"#,
        )
        .unwrap();
        assert_eq!(s.permissions.allow.len(), 4);
        let pre = &s.hooks.pre_tool_use[0];
        assert_eq!(pre.matcher.as_deref(), Some("Bash|Write"));
        assert_eq!(pre.hooks[0].on_timeout, OnTimeout::Deny);
        let post = &s.hooks.post_tool_use[0].hooks[0];
        assert_eq!(post.timeout_duration(), Duration::from_millis(500));
        assert_eq!(post.on_timeout, OnTimeout::Allow);
        assert!(s.isolation.enabled);
        assert_eq!(s.isolation.web, ["mcp__fetch__*"]);
        assert_eq!(s.isolation.connectors, ["mcp__gmail"]);
    }

    #[test]
    fn defaults() {
        let s =
            Settings::from_json(r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x"}]}]}}"#).unwrap();
        let h = &s.hooks.pre_tool_use[0].hooks[0];
        assert_eq!(h.timeout, DEFAULT_HOOK_TIMEOUT_SECS);
        assert_eq!(h.on_timeout, OnTimeout::Deny);
        assert_eq!(h.timeout_duration(), Duration::from_secs(60));
        assert!(!s.isolation.enabled);
    }

    fn err(json: &str) -> String {
        Settings::from_json(json).unwrap_err().to_string()
    }

    #[test]
    fn every_struct_level_must_be_an_object() {
        // An array is not read positionally: it grants nothing.
        let e = err(r#"[{"allow": ["Bash"]}]"#);
        assert_eq!(e, "settings: must be a JSON object, found an array");
        assert!(err(r#""Bash""#).contains("found a string"));
        assert!(err(r#"{"permissions": [["Bash"]]}"#).contains("permissions: must be a JSON object, found an array"));
        assert!(err(r#"{"isolation": [true]}"#).contains("isolation: must be a JSON object"));
        assert!(err(r#"{"hooks": []}"#).contains("hooks: must be a JSON object"));
        let e = err(r#"{"hooks": {"PreToolUse": [["Bash", []]]}}"#);
        assert!(e.contains("hooks.PreToolUse[0]: must be a JSON object"), "{e}");
        let e = err(r#"{"hooks": {"PreToolUse": [{"hooks": [["command", "rm -rf /"]]}]}}"#);
        assert!(e.contains("hooks.PreToolUse[0].hooks[0]: must be a JSON object"), "{e}");
    }

    #[test]
    fn a_claude_code_settings_file_loads_with_warnings() {
        let json = r#"{
          "$schema": "https://json.schemastore.org/claude-code-settings.json",
          "env": {"FOO": "bar", "NODE_ENV": "test", "PATH": "/evil:/usr/bin", "BASH_ENV": "./x.sh", "N": 3},
          "model": "opus",
          "permissions": {
            "allow": ["Bash(git diff *)", "Bash(npm run test:*)", "Read(./src/**)", "WebFetch(domain:docs.rs)"],
            "ask": ["Write"],
            "deny": ["Read(./.env)", "WebSearch"],
            "additionalDirectories": ["../shared", "~/notes"],
            "defaultMode": "acceptEdits"
          },
          "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]
          }
        }"#;
        let c = Settings::from_claude_json(json, Path::new("/p")).unwrap();
        assert_eq!(c.settings.permissions.allow, ["Bash(git diff *)", "Bash(npm run test:*)", "Read(./src/**)"]);
        assert_eq!(c.settings.permissions.ask, ["Write"]);
        assert_eq!(c.settings.permissions.deny, ["Read(./.env)"]);
        assert_eq!(c.settings.hooks.pre_tool_use.len(), 1);
        assert_eq!(c.roots[0], Path::new("/p/../shared"));
        let w = c.warnings.join("\n");
        for named in
            ["env: PATH", "env: BASH_ENV", "env.N", "model", "WebFetch", "WebSearch", "acceptEdits", "hooks.Stop"]
        {
            assert!(w.contains(named), "{named} is named: {w}");
        }
        assert!(!w.contains("$schema"), "{w}");
        assert_eq!(c.warnings.len(), 8, "{w}");
        // The variables that change nothing but themselves are kept.
        let env: Vec<(&str, &str)> = c.settings.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(env, [("FOO", "bar"), ("NODE_ENV", "test")]);
        // wrepl's own keys keep their meaning beside Claude Code's.
        let c = Settings::from_claude_json(r#"{"$schema": "claude", "confine": "require"}"#, Path::new("/p")).unwrap();
        assert_eq!(c.settings.confine, ConfineMode::Require);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // What wrepl does check still fails: a malformed rule list.
        assert!(Settings::from_claude_json(r#"{"permissions": {"allow": "Bash"}}"#, Path::new("/p")).is_err());
    }

    #[test]
    fn env_refuses_what_changes_which_program_runs() {
        let s = Settings::from_json(r#"{"env": {"RUST_LOG": "debug", "API_URL": "http://localhost"}}"#).unwrap();
        assert_eq!(s.env.len(), 2);
        for (name, why) in [
            ("PATH", "which program runs"),
            ("LD_PRELOAD", "which program runs"),
            ("BASH_FUNC_ls%%", "not a variable name"),
            ("BASH_ENV", "which program runs"),
            ("bash_env", "which program runs"),
            ("GIT_CONFIG_COUNT", "which program runs"),
            ("GIT_SSH_COMMAND", "which program runs"),
            ("WREPL_PROJECT_DIR", "which program runs"),
            ("1X", "not a variable name"),
            ("A=B", "not a variable name"),
        ] {
            let e = err(&format!(r#"{{"env": {{{}: "x"}}}}"#, serde_json::to_string(name).unwrap()));
            assert!(e.starts_with(&format!("env.{name}:")) && e.contains(why), "{name}: {e}");
        }
        let e = err(r#"{"env": {"A": "x\u0000y"}}"#);
        assert!(e.contains("NUL"), "{e}");
        assert!(err(r#"{"env": {"A": 1}}"#).contains("invalid type"));
    }

    #[test]
    fn unknown_fields_rejected() {
        assert!(err(r#"{"permission": {}}"#).contains("unknown field `permission`"));
        assert!(err(r#"{"permissions": {"denny": []}}"#).contains("unknown field `denny`"));
        assert!(err(r#"{"hooks": {"PreToolUse": [{"hooks": [], "match": "x"}]}}"#).contains("unknown field `match`"));
        assert!(err(r#"{"hooks": {"Stop": []}}"#).contains("unknown field `Stop`"));
        assert!(err(r#"{"isolation": {"enable": true}}"#).contains("unknown field `enable`"));
        assert!(err(r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","time":1}]}]}}"#)
            .contains("unknown field `time`"));
    }

    #[test]
    fn field_errors_name_the_field() {
        let hook = |extra: &str| {
            err(&format!(
                r#"{{"hooks":{{"PostToolUse":[{{"hooks":[{{"type":"command","command":"x"}}]}},
                   {{"matcher":"Bash","hooks":[{{"type":"command","command":"x"}}, {{{extra}}}]}}]}}}}"#
            ))
        };
        let e = hook(r#""type":"command","command":"x","timeout":0"#);
        assert!(e.starts_with("hooks.PostToolUse[1].hooks[1].timeout:"), "{e}");
        let e = hook(r#""type":"command","command":"x","timeout":601"#);
        assert!(e.starts_with("hooks.PostToolUse[1].hooks[1].timeout:"), "{e}");
        let e = hook(r#""type":"command","command":"x","timeout":"5""#);
        assert!(e.contains("timeout:"), "{e}");
        let e = hook(r#""type":"command","command":"  ""#);
        assert!(e.starts_with("hooks.PostToolUse[1].hooks[1].command:"), "{e}");
        let e = hook(r#""type":"prompt","command":"x""#);
        assert!(e.contains("type: expected \"command\""), "{e}");
        let e = hook(r#""type":"command","command":"x","onTimeout":"maybe""#);
        assert!(e.contains("onTimeout: expected \"deny\" or \"allow\""), "{e}");
        let e = hook(r#""command":"x""#);
        assert!(e.contains("missing field `type`"), "{e}");

        let e = err(r#"{"hooks":{"PreToolUse":[{"matcher":"Bash(","hooks":[]}]}}"#);
        assert!(e.starts_with("hooks.PreToolUse[0].matcher: invalid regex"), "{e}");
        let e = err(r#"{"permissions":{"deny":["Bash", "Bash(git"]}}"#);
        assert!(e.starts_with("permissions.deny[1]: invalid rule"), "{e}");
        let e = err(r#"{"isolation":{"web":["mcp__x__*y"]}}"#);
        assert!(e.starts_with("isolation.web[0]: invalid rule"), "{e}");
    }

    #[test]
    fn confine_and_allow_net() {
        let s = Settings::default();
        assert_eq!((s.confine, s.allow_net), (ConfineMode::Prefer, false));
        let s = Settings::from_json(r#"{"confine": "require", "allowNet": true}"#).unwrap();
        assert_eq!((s.confine, s.allow_net), (ConfineMode::Require, true));
        assert_eq!(Settings::from_json(r#"{"confine": "off"}"#).unwrap().confine, ConfineMode::Off);
        let e = err(r#"{"confine": "strict"}"#);
        assert!(e.contains("confine: expected \"require\" or \"prefer\" or \"off\", got \"strict\""), "{e}");
        let e = err(r#"{"confine": true}"#);
        assert!(e.contains("confine:"), "{e}");
        let e = err(r#"{"allowNet": "yes"}"#);
        assert!(e.contains("allowNet:") && e.contains("invalid type"), "{e}");
        assert!(err(r#"{"allow_net": true}"#).contains("unknown field `allow_net`"));
        // The keys round-trip under their settings names.
        let v = serde_json::to_value(Settings::from_json(r#"{"confine": "off", "allowNet": true}"#).unwrap()).unwrap();
        assert_eq!((v["confine"].as_str(), v["allowNet"].as_bool()), (Some("off"), Some(true)));
    }

    #[test]
    fn load_reports_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let e = Settings::load(&path).unwrap_err();
        assert!(matches!(e, SettingsError::Io { .. }));
        std::fs::write(&path, r#"{"permissions":{"allow":["Read("]}}"#).unwrap();
        let e = Settings::load(&path).unwrap_err().to_string();
        assert!(e.contains("settings.json") && e.contains("permissions.allow[0]"), "{e}");
        std::fs::write(&path, r#"{"permissions":{"allow":["Read"]}}"#).unwrap();
        assert_eq!(Settings::load(&path).unwrap().permissions.allow, ["Read"]);
    }

    /// Every message of the source chain once (what `{:#}` of anyhow prints).
    fn chain(e: &SettingsError) -> String {
        let mut out = e.to_string();
        let mut next = std::error::Error::source(e);
        while let Some(cause) = next {
            out = format!("{out}: {cause}");
            next = cause.source();
        }
        out
    }

    #[test]
    fn reasons_are_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let reason = "unbalanced parentheses";
        std::fs::write(&path, r#"{"permissions":{"allow":["Bash(git"]}}"#).unwrap();
        let e = chain(&Settings::load(&path).unwrap_err());
        assert_eq!(e.matches(reason).count(), 1, "{e}");
        assert_eq!(e.matches("permissions.allow[0]").count(), 1, "{e}");
        std::fs::write(&path, r#"{"permissions":{"allow":[1]}}"#).unwrap();
        let e = chain(&Settings::load(&path).unwrap_err());
        assert_eq!(e.matches("invalid type").count(), 1, "{e}");
        let absent = dir.path().join("absent.json");
        let os_reason = std::fs::read(&absent).unwrap_err().to_string();
        let e = chain(&Settings::load(&absent).unwrap_err());
        assert_eq!(e.matches(&os_reason).count(), 1, "{e}");
    }
}
