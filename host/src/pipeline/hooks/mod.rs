//! Command hooks: shell commands run before and after tool calls.
//!
//! Every hook whose group matcher matches the tool name runs as
//! `/bin/sh -c <command>`:
//!
//! - in the project directory — the first workspace root, fixed for the
//!   whole session, never the script's `chdir()` directory — in a process
//!   group of its own, with `WREPL_PROJECT_DIR` set to that directory;
//! - with the minimal environment: the variables Bash commands get (`PATH`,
//!   `HOME`, `USER`, `LOGNAME`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ`, `TMPDIR`,
//!   `TERM`, each when wrepl has it) plus `WREPL_PROJECT_DIR`; nothing else of
//!   wrepl's environment (API keys, tokens) reaches a hook. Hooks are trusted
//!   configuration, so they are not confined like Bash commands;
//! - stdin is one JSON object: `session_id`, `hook_event_name`, `tool_name`,
//!   `tool_input`, `tool_use_id`, `cwd` (the call's working directory, which
//!   may differ from the hook's), plus `tool_response`
//!   (`PostToolUse`) or `error` (`PostToolUseFailure`);
//! - stdout and stderr are captured up to [`MAX_HOOK_OUTPUT`] bytes each (the
//!   rest is read and discarded);
//! - a hook is finished when its shell has exited and its output pipes are
//!   closed (a background process that keeps them open counts as running);
//! - when the timeout expires the whole process group is killed (`SIGKILL`)
//!   and `onTimeout` applies: `deny` (default) refuses the call — or, for
//!   the post events, flags the result — with a reason naming the hook;
//!   `allow` only reports a warning. Dropping the returned future (e.g. on
//!   cancellation) kills the process group as well.
//!
//! # What a hook's result means
//!
//! - **exit 0**: stdout, when not blank, must be a JSON object. Recognised
//!   keys, inside `hookSpecificOutput` or at top level (the former wins):
//!   `permissionDecision` (`"allow"`, `"ask"`, `"deny"`),
//!   `permissionDecisionReason`, `updatedInput` (an object: the replacement
//!   tool input) and `additionalContext` (a string or a list of strings,
//!   shown in the evaluation's output, where the model reads it);
//!   plus the legacy top-level `decision` (`"approve"` or `"block"`) with
//!   `reason`; and, at top level for every event, `continue` (`false`
//!   stops: the call does not run, or after it its result is withheld, and
//!   the evaluation stops, for `stopReason`) and `systemMessage` (shown as a
//!   warning). Other keys are ignored. If `hookSpecificOutput.hookEventName`
//!   is present it must name the running event, else that object is ignored.
//!   Keywords are accepted in any case. Output that is not a JSON object
//!   produces a warning and no decision; a recognised key with a wrong value
//!   produces a warning and is ignored (the rest of the output still counts);
//! - **exit 2**: block — PreToolUse denies the call, the post events flag the
//!   result; the trimmed stderr (capped at [`MAX_REASON_CHARS`]) is the reason;
//! - **any other exit, death by signal, failure to start**: a warning only.
//!
//! # Merging
//!
//! Matching hooks of one event run in parallel; their results are merged in
//! configuration order, independent of completion order:
//!
//! - decision: the strictest (`deny` > `ask` > `allow`); the reason is the
//!   reasons of the hooks that gave that decision, joined by newlines;
//! - `updatedInput`: the objects are shallow-merged (later hooks' keys win).
//!   The result replaces the tool input, so the caller must validate it
//!   again. It is reported whatever the decision;
//! - additional context and warnings: concatenated.
//!
//! For `PostToolUse` / `PostToolUseFailure` the tool already ran: exit 2 or
//! `"decision": "block"` yields a [`PostOutcome::block_reason`] to show the
//! model; `permissionDecision` and `updatedInput` are ignored there.
//!
//! The hooks configured for an event are validated and matched in
//! `matchers`, one hook process is run in `process`, and what it said is
//! read and merged in `verdict`.

mod matchers;
mod process;
mod verdict;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use futures_util::future::join_all;
use serde_json::{json, Map, Value};

use super::permissions::Decision;
use super::settings::{HookCommand, HookMatcher, HookSettings, SettingsError};

use matchers::{compile_matcher, configured, validate_group, Group};
use process::run_hook;
use verdict::{interpret, join_reasons, merge_post, Verdict};

/// Most bytes of stdout and of stderr kept per hook.
pub const MAX_HOOK_OUTPUT: usize = 1 << 20;

/// Most characters of a block reason taken from a hook's stderr.
pub const MAX_REASON_CHARS: usize = 8 * 1024;

/// Environment variable holding the project directory (the first workspace
/// root), where hooks run.
pub const PROJECT_DIR_ENV: &str = "WREPL_PROJECT_DIR";

/// Hook events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before a tool call.
    PreToolUse,
    /// After a successful tool call.
    PostToolUse,
    /// After a failed tool call.
    PostToolUseFailure,
}

impl HookEvent {
    /// Every event.
    pub const ALL: [HookEvent; 3] = [HookEvent::PreToolUse, HookEvent::PostToolUse, HookEvent::PostToolUseFailure];

    /// The event's name in settings and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
        }
    }
}

/// The call a hook runs for.
#[derive(Debug, Clone, Copy)]
pub struct HookContext<'a> {
    /// Session id, passed through to the hook.
    pub session_id: &'a str,
    /// Tool name (what matchers are tested against).
    pub tool_name: &'a str,
    /// Id of this tool call.
    pub tool_use_id: &'a str,
    /// The call's working directory (`cwd` in the hook's input; the hook
    /// itself runs in the project directory).
    pub cwd: &'a Path,
    /// The call's W3C trace context, when its evaluation is traced: the hook
    /// gets it as `TRACEPARENT` (and `TRACESTATE`).
    pub trace: Option<&'a crate::call::TraceContext>,
}

/// Merged result of the `PreToolUse` hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolUseOutcome {
    /// The strictest decision any hook gave; `None` when no hook decided.
    pub decision: Option<Decision>,
    /// Reasons of the hooks that gave `decision`, joined by newlines.
    pub reason: Option<String>,
    /// Replacement tool input (shallow merge of every hook's object, in
    /// configuration order). Must be validated again by the caller.
    pub updated_input: Option<Value>,
    /// Extra context for the model, in configuration order.
    pub additional_context: Vec<String>,
    /// Problems with hooks (failures, bad output, tolerated timeouts), and
    /// their `systemMessage`s.
    pub warnings: Vec<String>,
    /// Set when a hook said `"continue": false`: the call does not run and
    /// the evaluation stops, for these reasons (`stopReason`s, joined by
    /// newlines). It wins over every decision.
    pub stop: Option<String>,
}

/// Merged result of the `PostToolUse` or `PostToolUseFailure` hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostOutcome {
    /// Extra context for the model, in configuration order.
    pub additional_context: Vec<String>,
    /// Problems with hooks.
    pub warnings: Vec<String>,
    /// Set when a hook flagged the result (exit 2, `"decision": "block"` or
    /// a timeout with `onTimeout: deny`); shown to the model. The tool has
    /// already run.
    pub block_reason: Option<String>,
    /// Set when a hook said `"continue": false`: the evaluation stops, for
    /// these reasons (the tool has already run).
    pub stop: Option<String>,
}

/// Runs the configured hooks. Matchers are compiled once, here.
#[derive(Debug)]
pub struct HookRunner {
    pre_tool_use: Vec<Group>,
    post_tool_use: Vec<Group>,
    post_tool_use_failure: Vec<Group>,
    /// Where every hook runs, and `WREPL_PROJECT_DIR`.
    project_dir: PathBuf,
    /// Variables set for every hook (the settings' `env`).
    env: Vec<(String, String)>,
}

impl HookRunner {
    /// Validate the settings and compile the matchers. Every hook runs in
    /// `project_dir` (the first workspace root), whatever the call's working
    /// directory.
    pub fn new(settings: HookSettings, project_dir: impl Into<PathBuf>) -> Result<Self, SettingsError> {
        Self::validate(&settings)?;
        let compile = |groups: Vec<HookMatcher>| {
            groups
                .into_iter()
                .map(|g| {
                    // Cannot fail after `validate`, but never panic.
                    let matcher = compile_matcher(g.matcher.as_deref()).map_err(|e| SettingsError::Invalid {
                        field: "hooks.matcher".into(),
                        message: e.to_string(),
                    })?;
                    Ok(Group { matcher, hooks: g.hooks })
                })
                .collect::<Result<Vec<_>, SettingsError>>()
        };
        Ok(HookRunner {
            pre_tool_use: compile(settings.pre_tool_use)?,
            post_tool_use: compile(settings.post_tool_use)?,
            post_tool_use_failure: compile(settings.post_tool_use_failure)?,
            project_dir: project_dir.into(),
            env: Vec::new(),
        })
    }

    /// The same runner, setting `env` for every hook (on top of the minimal
    /// environment; `WREPL_PROJECT_DIR` stays wrepl's).
    pub fn with_env(mut self, env: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = env.into_iter().collect();
        self
    }

    /// Check matchers, commands and timeouts without building a runner.
    /// An error names the field, e.g. `hooks.PreToolUse[0].hooks[1].timeout`.
    pub fn validate(settings: &HookSettings) -> Result<(), SettingsError> {
        for event in HookEvent::ALL {
            for (i, group) in configured(settings, event).iter().enumerate() {
                validate_group(group, &format!("hooks.{}[{i}]", event.as_str()))?;
            }
        }
        Ok(())
    }

    fn groups(&self, event: HookEvent) -> &[Group] {
        match event {
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
            HookEvent::PostToolUseFailure => &self.post_tool_use_failure,
        }
    }

    fn matching<'a>(&'a self, event: HookEvent, tool: &'a str) -> impl Iterator<Item = &'a HookCommand> + 'a {
        self.groups(event).iter().filter(move |g| g.matches(tool)).flat_map(|g| &g.hooks)
    }

    /// True when at least one hook would run for `tool` on `event`.
    pub fn has_hooks(&self, event: HookEvent, tool: &str) -> bool {
        self.matching(event, tool).next().is_some()
    }

    /// Run the `PreToolUse` hooks for a call.
    pub async fn pre_tool_use(&self, ctx: &HookContext<'_>, input: &Value) -> PreToolUseOutcome {
        let verdicts = self.run(HookEvent::PreToolUse, ctx, input, None).await;
        let mut out =
            PreToolUseOutcome { decision: verdicts.iter().filter_map(|v| v.decision).max(), ..Default::default() };
        let mut reasons = Vec::new();
        let mut stops = Vec::new();
        let mut updated: Option<Map<String, Value>> = None;
        for v in verdicts {
            stops.extend(v.stop);
            if v.decision.is_some() && v.decision == out.decision {
                reasons.extend(v.reason);
            }
            if let Some(obj) = v.updated_input {
                updated.get_or_insert_with(Map::new).extend(obj);
            }
            out.additional_context.extend(v.additional_context);
            out.warnings.extend(v.warnings);
        }
        out.reason = join_reasons(reasons);
        out.stop = join_reasons(stops);
        out.updated_input = updated.map(Value::Object);
        out
    }

    /// Run the `PostToolUse` hooks after a successful call.
    pub async fn post_tool_use(&self, ctx: &HookContext<'_>, input: &Value, response: &Value) -> PostOutcome {
        let extra = ("tool_response", response.clone());
        merge_post(self.run(HookEvent::PostToolUse, ctx, input, Some(extra)).await)
    }

    /// Run the `PostToolUseFailure` hooks after a failed call.
    pub async fn post_tool_use_failure(&self, ctx: &HookContext<'_>, input: &Value, error: &str) -> PostOutcome {
        let extra = ("error", Value::String(error.to_string()));
        merge_post(self.run(HookEvent::PostToolUseFailure, ctx, input, Some(extra)).await)
    }

    /// Run every matching hook in parallel; verdicts in configuration order.
    async fn run(
        &self,
        event: HookEvent,
        ctx: &HookContext<'_>,
        input: &Value,
        extra: Option<(&str, Value)>,
    ) -> Vec<Verdict> {
        let hooks: Vec<&HookCommand> = self.matching(event, ctx.tool_name).collect();
        if hooks.is_empty() {
            return Vec::new();
        }
        let mut payload = json!({
            "session_id": ctx.session_id,
            "hook_event_name": event.as_str(),
            "tool_name": ctx.tool_name,
            "tool_input": input,
            "tool_use_id": ctx.tool_use_id,
            "cwd": ctx.cwd.to_string_lossy(),
        });
        if let (Some((key, value)), Some(obj)) = (extra, payload.as_object_mut()) {
            obj.insert(key.to_string(), value);
        }
        // Serialising a `Value` cannot fail; fall back to `{}` rather than panic.
        let stdin = serde_json::to_vec(&payload).unwrap_or_else(|_| b"{}".to_vec());
        let mut env = self.env.clone();
        if let Some(t) = ctx.trace {
            env.push(("TRACEPARENT".into(), t.traceparent.clone()));
            if let Some(state) = &t.tracestate {
                env.push(("TRACESTATE".into(), state.clone()));
            }
        }
        let runs = join_all(hooks.iter().map(|h| run_hook(h, &stdin, &self.project_dir, &env))).await;
        hooks.into_iter().zip(runs).map(|(hook, run)| interpret(event, hook, run)).collect()
    }
}
