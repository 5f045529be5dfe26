//! Reading a settings file written for Claude Code (`.claude/settings.json`):
//! the keys wrepl applies, and a warning for each it does not.

use std::path::{Path, PathBuf};

use super::{env_refusal, Settings, SettingsError};

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
    ///   (`WebSearch`, `Task`, ...) are dropped with a warning: nothing
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
