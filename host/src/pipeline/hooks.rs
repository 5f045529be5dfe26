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
//!   tool input) and `additionalContext` (a string or a list of strings);
//!   plus the legacy top-level `decision` (`"approve"` or `"block"`) with
//!   `reason`. Other keys are ignored. If `hookSpecificOutput.hookEventName`
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
//! (Length: the code is about 589 lines; the rest of the file is its unit
//! tests, kept next to what they test.)

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures_util::future::{join_all, OptionFuture};
use regex::Regex;
use serde_json::{json, Map, Value};
use tokio::io::AsyncWriteExt;

use super::permissions::Decision;
use super::settings::{HookCommand, HookMatcher, HookSettings, OnTimeout, SettingsError, MAX_HOOK_TIMEOUT_SECS};
use crate::process::{read_capped, Captured, EnvPolicy, ProcessGroup, MINIMAL_ENV};

/// Most bytes of stdout and of stderr kept per hook.
pub const MAX_HOOK_OUTPUT: usize = 1 << 20;

/// Most characters of a block reason taken from a hook's stderr.
pub const MAX_REASON_CHARS: usize = 8 * 1024;

/// Environment variable holding the project directory (the first workspace
/// root), where hooks run.
pub const PROJECT_DIR_ENV: &str = "WREPL_PROJECT_DIR";

/// Longest stderr excerpt quoted in a warning.
const MAX_WARNING_STDERR_CHARS: usize = 500;

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
    /// Problems with hooks (failures, bad output, tolerated timeouts).
    pub warnings: Vec<String>,
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
}

#[derive(Debug)]
struct Group {
    matcher: Option<Regex>,
    hooks: Vec<HookCommand>,
}

impl Group {
    fn matches(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|re| re.is_match(tool))
    }
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
        let mut updated: Option<Map<String, Value>> = None;
        for v in verdicts {
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
        let runs = join_all(hooks.iter().map(|h| run_hook(h, &stdin, &self.project_dir, &self.env))).await;
        hooks.into_iter().zip(runs).map(|(hook, run)| interpret(event, hook, run)).collect()
    }
}

/// The matcher groups configured for one event.
fn configured(settings: &HookSettings, event: HookEvent) -> &[HookMatcher] {
    match event {
        HookEvent::PreToolUse => &settings.pre_tool_use,
        HookEvent::PostToolUse => &settings.post_tool_use,
        HookEvent::PostToolUseFailure => &settings.post_tool_use_failure,
    }
}

fn validate_group(group: &HookMatcher, field: &str) -> Result<(), SettingsError> {
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
fn compile_matcher(matcher: Option<&str>) -> Result<Option<Regex>, regex::Error> {
    match matcher.map(str::trim) {
        None | Some("") | Some("*") => Ok(None),
        Some(pattern) => Regex::new(&format!("^(?:{pattern})$")).map(Some),
    }
}

fn merge_post(verdicts: Vec<Verdict>) -> PostOutcome {
    let mut out = PostOutcome::default();
    let mut blocks = Vec::new();
    for v in verdicts {
        blocks.extend(v.block);
        out.additional_context.extend(v.additional_context);
        out.warnings.extend(v.warnings);
    }
    out.block_reason = join_reasons(blocks);
    out
}

fn join_reasons(reasons: Vec<String>) -> Option<String> {
    (!reasons.is_empty()).then(|| reasons.join("\n"))
}

/// What one hook said.
#[derive(Debug, Default)]
struct Verdict {
    decision: Option<Decision>,
    reason: Option<String>,
    updated_input: Option<Map<String, Value>>,
    additional_context: Vec<String>,
    warnings: Vec<String>,
    /// Post events: the result is flagged with this reason.
    block: Option<String>,
}

impl Verdict {
    fn warning(msg: String) -> Self {
        Verdict { warnings: vec![msg], ..Default::default() }
    }

    /// Deny (PreToolUse) or flag (post events) with `reason`.
    fn blocked(event: HookEvent, reason: String) -> Self {
        match event {
            HookEvent::PreToolUse => {
                Verdict { decision: Some(Decision::Deny), reason: Some(reason), ..Default::default() }
            }
            _ => Verdict { block: Some(reason), ..Default::default() },
        }
    }
}

/// How a hook process ended.
#[derive(Debug)]
enum RunResult {
    Exited { code: Option<i32>, signal: Option<i32>, stdout: Captured, stderr: Captured },
    TimedOut,
    Failed(String),
}

/// `hook `cmd``, shortened, for messages.
fn hook_name(hook: &HookCommand) -> String {
    const MAX: usize = 80;
    let cmd = hook.command.trim();
    match cmd.char_indices().nth(MAX) {
        Some((i, _)) => format!("hook `{}…`", &cmd[..i]),
        None => format!("hook `{cmd}`"),
    }
}

fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… [truncated]", &s[..i]),
        None => s.to_string(),
    }
}

fn interpret(event: HookEvent, hook: &HookCommand, run: RunResult) -> Verdict {
    let name = hook_name(hook);
    match run {
        RunResult::Failed(e) => Verdict::warning(format!("{name} could not be run: {e}")),
        RunResult::TimedOut => {
            let msg = format!("{name} timed out after {}s", hook.timeout_duration().as_secs_f64());
            match hook.on_timeout {
                OnTimeout::Deny => Verdict::blocked(event, msg),
                OnTimeout::Allow => Verdict::warning(format!("{msg} (ignored: onTimeout is allow)")),
            }
        }
        RunResult::Exited { code: Some(0), stdout, .. } => parse_output(event, &name, &stdout),
        RunResult::Exited { code: Some(2), stderr, .. } => {
            let text = String::from_utf8_lossy(&stderr.bytes);
            let text = text.trim();
            let reason = if text.is_empty() {
                format!("blocked by {name} (exit status 2)")
            } else {
                cap_chars(text, MAX_REASON_CHARS)
            };
            Verdict::blocked(event, reason)
        }
        RunResult::Exited { code, signal, stderr, .. } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                (None, None) => "ended abnormally".to_string(),
            };
            let text = String::from_utf8_lossy(&stderr.bytes);
            let text = text.trim();
            if text.is_empty() {
                Verdict::warning(format!("{name} {how}"))
            } else {
                Verdict::warning(format!("{name} {how}: {}", cap_chars(text, MAX_WARNING_STDERR_CHARS)))
            }
        }
    }
}

/// Interpret the stdout of a hook that exited 0.
fn parse_output(event: HookEvent, name: &str, stdout: &Captured) -> Verdict {
    let mut v = Verdict::default();
    let text = String::from_utf8_lossy(&stdout.bytes);
    if text.trim().is_empty() {
        return v;
    }
    if stdout.truncated {
        v.warnings.push(format!("{name}: output exceeds {MAX_HOOK_OUTPUT} bytes; ignored"));
        return v;
    }
    let obj = match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(obj)) => obj,
        Ok(_) | Err(_) => {
            v.warnings.push(format!("{name}: output is not a JSON object; ignored: {}", cap_chars(text.trim(), 200)));
            return v;
        }
    };
    let specific = match obj.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(hso)) => match hso.get("hookEventName") {
            Some(Value::String(e)) if e != event.as_str() => {
                v.warnings.push(format!("{name}: hookSpecificOutput is for {e}, not {}; ignored", event.as_str()));
                None
            }
            _ => Some(hso),
        },
        Some(_) => {
            v.warnings.push(format!("{name}: hookSpecificOutput is not an object; ignored"));
            None
        }
    };
    let get = |key: &str| specific.and_then(|s| s.get(key)).or_else(|| obj.get(key));
    let string = |key: &str, warnings: &mut Vec<String>| match get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            warnings.push(format!("{name}: `{key}` is not a string; ignored"));
            None
        }
    };

    match get("additionalContext") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => v.additional_context.push(s.clone()),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            v.additional_context.extend(items.iter().filter_map(Value::as_str).map(str::to_string))
        }
        Some(_) => v.warnings.push(format!("{name}: `additionalContext` is not a string; ignored")),
    }

    // Legacy `decision` / `reason` (top level only).
    let legacy = match obj.get("decision") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if d.eq_ignore_ascii_case("block") => Some(Decision::Deny),
        Some(Value::String(d)) if d.eq_ignore_ascii_case("approve") => Some(Decision::Allow),
        Some(other) => {
            v.warnings.push(format!("{name}: unknown `decision` {other}; ignored"));
            None
        }
    };
    let legacy_reason = match obj.get("reason") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };

    if event != HookEvent::PreToolUse {
        if legacy == Some(Decision::Deny) {
            v.block = Some(legacy_reason.unwrap_or_else(|| format!("flagged by {name}")));
        }
        return v;
    }

    let decision = match string("permissionDecision", &mut v.warnings) {
        None => None,
        Some(d) => match d.trim().to_ascii_lowercase().as_str() {
            "allow" | "approve" => Some(Decision::Allow),
            "ask" => Some(Decision::Ask),
            "deny" | "block" => Some(Decision::Deny),
            _ => {
                v.warnings.push(format!("{name}: unknown `permissionDecision` {d:?}; ignored"));
                None
            }
        },
    };
    // Contradictory outputs resolve to the stricter decision.
    v.decision = decision.max(legacy);
    let reason = string("permissionDecisionReason", &mut v.warnings).or(legacy_reason);
    v.reason = match (v.decision, reason) {
        (_, Some(r)) if !r.trim().is_empty() => Some(r),
        (Some(Decision::Deny), _) => Some(format!("denied by {name}")),
        (Some(Decision::Ask), _) => Some(format!("{name} asks for confirmation")),
        _ => None,
    };

    match get("updatedInput") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => v.updated_input = Some(o.clone()),
        Some(_) => v.warnings.push(format!("{name}: `updatedInput` is not an object; ignored")),
    }
    v
}

/// Runs one hook in `project_dir` with the minimal environment.
async fn run_hook(hook: &HookCommand, stdin: &[u8], project_dir: &Path, vars: &[(String, String)]) -> RunResult {
    use std::os::unix::process::ExitStatusExt;

    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let env = EnvPolicy::only(MINIMAL_ENV).set_all(vars.iter().cloned()).set(PROJECT_DIR_ENV, project_dir);
    // Dropping `group` (e.g. the future on cancellation) kills the group.
    let mut group = match ProcessGroup::spawn(&mut command, &env) {
        Ok(group) => group,
        Err(e) => return RunResult::Failed(e.to_string()),
    };

    let input = group.child_mut().stdin.take();
    let stdout = OptionFuture::from(group.child_mut().stdout.take().map(|p| read_capped(p, MAX_HOOK_OUTPUT)));
    let stderr = OptionFuture::from(group.child_mut().stderr.take().map(|p| read_capped(p, MAX_HOOK_OUTPUT)));
    let feed = async move {
        if let Some(mut pipe) = input {
            // The hook may not read its input: a broken pipe is fine.
            let _ = pipe.write_all(stdin).await;
            let _ = pipe.shutdown().await;
        }
    };
    let work = async {
        let ((), out, err, status) = tokio::join!(feed, stdout, stderr, group.wait());
        (out.unwrap_or_default(), err.unwrap_or_default(), status)
    };
    let finished = tokio::time::timeout(hook.timeout_duration(), work).await;
    match finished {
        Ok((stdout, stderr, Ok(status))) => {
            // Finished on its own: whatever it left running (with its output
            // pipes closed) is not killed.
            group.disarm();
            RunResult::Exited { code: status.code(), signal: status.signal(), stdout, stderr }
        }
        Ok((_, _, Err(e))) => {
            group.kill();
            RunResult::Failed(format!("waiting for the process failed: {e}"))
        }
        Err(_elapsed) => {
            group.kill();
            // Reap the shell; SIGKILL cannot be ignored, but do not hang on a
            // process stuck in the kernel (kill_on_drop and tokio's orphan
            // reaping take over then).
            let _ = tokio::time::timeout(Duration::from_secs(1), group.wait()).await;
            RunResult::TimedOut
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Instant;

    use super::*;
    use crate::pipeline::settings::HookType;

    fn hook(command: &str) -> HookCommand {
        HookCommand::new(command)
    }

    fn runner(pre: Vec<HookMatcher>) -> HookRunner {
        HookRunner::new(HookSettings { pre_tool_use: pre, ..Default::default() }, std::env::temp_dir()).unwrap()
    }

    fn group(matcher: Option<&str>, hooks: Vec<HookCommand>) -> HookMatcher {
        HookMatcher { matcher: matcher.map(str::to_string), hooks }
    }

    fn ctx<'a>(tool: &'a str, cwd: &'a Path) -> HookContext<'a> {
        HookContext { session_id: "s1", tool_name: tool, tool_use_id: "call-1", cwd }
    }

    async fn pre(r: &HookRunner, tool: &str, dir: &Path) -> PreToolUseOutcome {
        r.pre_tool_use(&ctx(tool, dir), &json!({"command": "ls"})).await
    }

    /// `printf '%s' '<json>'` with the JSON single-quote-escaped.
    fn print_json(v: Value) -> String {
        format!("printf '%s' '{}'", v.to_string().replace('\'', r"'\''"))
    }

    #[tokio::test]
    async fn no_hooks_no_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let r = HookRunner::new(HookSettings::default(), dir.path()).unwrap();
        assert!(!r.has_hooks(HookEvent::PreToolUse, "Bash"));
        assert_eq!(pre(&r, "Bash", dir.path()).await, PreToolUseOutcome::default());
    }

    #[tokio::test]
    async fn allow_and_silent_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(vec![group(
            None,
            vec![
                hook("true"),
                hook(&print_json(json!({"hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": "fine",
                    "additionalContext": "ctx-a"
                }}))),
            ],
        )]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, Some(Decision::Allow));
        assert_eq!(out.reason.as_deref(), Some("fine"));
        assert_eq!(out.additional_context, ["ctx-a"]);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert_eq!(out.updated_input, None);
    }

    #[tokio::test]
    async fn deny_via_json_beats_allow() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(vec![
            group(
                None,
                vec![hook(&print_json(json!({"permissionDecision": "allow", "permissionDecisionReason": "ok"})))],
            ),
            group(
                Some("Bash"),
                vec![
                    hook(&print_json(
                        json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}),
                    )),
                    hook(&print_json(json!({"decision": "block", "reason": "legacy says no"}))),
                    hook(&print_json(json!({"permissionDecision": "ask"}))),
                    hook(&print_json(json!({"permissionDecision": " DENY "}))),
                ],
            ),
        ]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, Some(Decision::Deny));
        let reason = out.reason.unwrap();
        let lines: Vec<&str> = reason.lines().collect();
        assert_eq!(lines[..2], ["no rm", "legacy says no"]);
        assert!(lines[2].starts_with("denied by hook `printf") && lines.len() == 3, "{reason}");
        // The Bash-only group does not run for Write.
        let out = pre(&r, "Write", dir.path()).await;
        assert_eq!(out.decision, Some(Decision::Allow));
        assert_eq!(out.reason.as_deref(), Some("ok"));
    }

    #[tokio::test]
    async fn deny_via_exit_2() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(vec![group(
            Some("Bash"),
            vec![hook("echo '  dangerous command  ' >&2; echo '{\"permissionDecision\":\"allow\"}'; exit 2")],
        )]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, Some(Decision::Deny));
        assert_eq!(out.reason.as_deref(), Some("dangerous command"));

        let r = runner(vec![group(None, vec![hook("exit 2")])]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, Some(Decision::Deny));
        assert!(out.reason.unwrap().contains("exit status 2"));

        // Long stderr is capped.
        let r = runner(vec![group(None, vec![hook("head -c 100000 /dev/zero | tr '\\0' x >&2; exit 2")])]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert!(out.reason.unwrap().len() < MAX_REASON_CHARS + 100);
    }

    #[tokio::test]
    async fn rewrite_merges_in_config_order() {
        let dir = tempfile::tempdir().unwrap();
        // The first hook finishes last; configuration order still wins.
        let first = format!(
            "sleep 0.2; {}",
            print_json(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "updatedInput": {"command": "first", "timeout": 5}, "additionalContext": "one"}}))
        );
        let second = print_json(json!({"updatedInput": {"command": "second", "extra": true},
            "additionalContext": ["two", "three"]}));
        let third = print_json(json!({"updatedInput": "not an object"}));
        let r = runner(vec![group(None, vec![hook(&first)]), group(Some("Ba.*"), vec![hook(&second), hook(&third)])]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.updated_input, Some(json!({"command": "second", "timeout": 5, "extra": true})));
        assert_eq!(out.additional_context, ["one", "two", "three"]);
        assert_eq!(out.decision, None);
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].contains("updatedInput"), "{:?}", out.warnings);
    }

    #[tokio::test]
    async fn garbage_and_failures_are_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(vec![group(
            None,
            vec![
                hook("echo 'not json {'"),
                hook("echo '[1,2]'"),
                hook(&print_json(json!({"permissionDecision": "maybe", "additionalContext": 7}))),
                hook(&print_json(
                    json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}),
                )),
                hook("echo oops >&2; exit 1"),
                hook("kill -9 $$"),
                hook("/nonexistent/program"),
            ],
        )]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, None, "{out:?}");
        assert_eq!(out.reason, None);
        let w = &out.warnings;
        assert_eq!(w.len(), 8, "{w:#?}");
        assert!(w[0].contains("not a JSON object") && w[0].contains("not json {"));
        assert!(w[1].contains("not a JSON object"));
        assert!(w[2].contains("additionalContext") && w[3].contains("maybe"), "{w:#?}");
        assert!(w[4].contains("is for PostToolUse"));
        assert!(w[5].contains("exited with status 1: oops"));
        assert!(w[6].contains("killed by signal 9"));
        assert!(w[7].contains("exited with status 127"));

        // A missing project directory: the hook cannot start.
        let missing = dir.path().join("missing");
        let settings = HookSettings { pre_tool_use: vec![group(None, vec![hook("true")])], ..Default::default() };
        let r = HookRunner::new(settings, &missing).unwrap();
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, None);
        assert!(out.warnings[0].contains("could not be run"), "{:?}", out.warnings);
    }

    fn process_gone(pid: u32) -> bool {
        !crate::process::is_running(pid)
    }

    fn read_pids(path: &Path) -> Vec<u32> {
        std::fs::read_to_string(path).unwrap().split_whitespace().map(|p| p.parse().unwrap()).collect()
    }

    #[tokio::test]
    async fn timeout_fails_closed_and_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let mut h = hook(&format!("sleep 5 & echo $! > '{p}'; echo $$ >> '{p}'; sleep 5; wait", p = pids.display()));
        h.timeout = 0.3;
        let r = runner(vec![group(Some("Bash"), vec![h])]);
        let start = Instant::now();
        let out = pre(&r, "Bash", dir.path()).await;
        assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
        assert_eq!(out.decision, Some(Decision::Deny));
        let reason = out.reason.unwrap();
        assert!(reason.contains("timed out after 0.3s") && reason.contains("sleep 5"), "{reason}");
        let pids = read_pids(&pids);
        assert_eq!(pids.len(), 2);
        let deadline = Instant::now() + Duration::from_secs(2);
        for pid in pids {
            while !process_gone(pid) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(process_gone(pid), "process {pid} survived the timeout");
        }
    }

    #[tokio::test]
    async fn timeout_allow_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = hook("sleep 5");
        h.timeout = 0.2;
        h.on_timeout = OnTimeout::Allow;
        let r = runner(vec![group(None, vec![h, hook(&print_json(json!({"permissionDecision": "allow"})))])]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, Some(Decision::Allow));
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].contains("timed out"), "{:?}", out.warnings);
    }

    #[tokio::test]
    async fn matcher_filtering() {
        let r = runner(vec![
            group(Some("Bash|Write"), vec![hook("true")]),
            group(Some("mcp__srv__.*"), vec![hook("true")]),
            group(Some(""), vec![]),
        ]);
        assert!(r.has_hooks(HookEvent::PreToolUse, "Bash"));
        assert!(r.has_hooks(HookEvent::PreToolUse, "Write"));
        assert!(r.has_hooks(HookEvent::PreToolUse, "mcp__srv__x"));
        assert!(!r.has_hooks(HookEvent::PreToolUse, "BashX"));
        assert!(!r.has_hooks(HookEvent::PreToolUse, "Read"));
        assert!(!r.has_hooks(HookEvent::PostToolUse, "Bash"));

        let dir = tempfile::tempdir().unwrap();
        let r = runner(vec![
            group(Some("Write"), vec![hook("exit 2")]),
            group(Some("*"), vec![hook("echo '{\"permissionDecision\":\"ask\"}'")]),
        ]);
        assert_eq!(pre(&r, "Read", dir.path()).await.decision, Some(Decision::Ask));
        assert_eq!(pre(&r, "Write", dir.path()).await.decision, Some(Decision::Deny));
    }

    #[tokio::test]
    async fn hooks_run_in_parallel() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(vec![group(None, vec![hook("sleep 0.3"), hook("sleep 0.3")])]);
        let start = Instant::now();
        let out = pre(&r, "Bash", dir.path()).await;
        let took = start.elapsed();
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert!(took < Duration::from_millis(550), "took {took:?}");
    }

    #[tokio::test]
    async fn stdin_env_and_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let dir_path: PathBuf = dir.path().canonicalize().unwrap();
        // The call runs in a subdirectory (a script's `chdir`); the hook
        // still runs in the project directory.
        let sub = dir_path.join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::env::set_var("WREPL_HOOK_TEST_SECRET", "hook-s3cret");
        let r = HookRunner::new(
            HookSettings {
                post_tool_use: vec![group(
                    None,
                    vec![hook("cat > \"$WREPL_PROJECT_DIR/post.json\"; pwd > pwd.txt; env > env.txt")],
                )],
                post_tool_use_failure: vec![group(None, vec![hook("cat > fail.json")])],
                ..Default::default()
            },
            &dir_path,
        )
        .unwrap();
        let c = ctx("Read", &sub);
        let out = r.post_tool_use(&c, &json!({"file_path": "a"}), &json!({"content": "x"})).await;
        assert_eq!(out, PostOutcome::default());
        let got: Value = serde_json::from_str(&std::fs::read_to_string(dir_path.join("post.json")).unwrap()).unwrap();
        assert_eq!(
            got,
            json!({
                "session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Read",
                "tool_input": {"file_path": "a"}, "tool_use_id": "call-1",
                "cwd": sub.to_str().unwrap(), "tool_response": {"content": "x"}
            })
        );
        assert_eq!(std::fs::read_to_string(dir_path.join("pwd.txt")).unwrap().trim(), dir_path.to_str().unwrap());
        assert!(!sub.join("pwd.txt").exists());
        let env = std::fs::read_to_string(dir_path.join("env.txt")).unwrap();
        assert!(!env.contains("hook-s3cret"), "a hook inherited a host secret:\n{env}");
        assert!(env.lines().any(|l| l == format!("WREPL_PROJECT_DIR={}", dir_path.display())), "{env}");
        for line in env.lines() {
            let name = line.split('=').next().unwrap_or_default();
            assert!(
                MINIMAL_ENV.contains(&name) || ["WREPL_PROJECT_DIR", "PWD", "SHLVL", "_", "OLDPWD"].contains(&name),
                "unexpected variable {line:?} in a hook's environment"
            );
        }

        r.post_tool_use_failure(&c, &json!({}), "boom").await;
        let got: Value = serde_json::from_str(&std::fs::read_to_string(dir_path.join("fail.json")).unwrap()).unwrap();
        assert_eq!(got["hook_event_name"], "PostToolUseFailure");
        assert_eq!(got["error"], "boom");
        assert!(got.get("tool_response").is_none());
    }

    #[tokio::test]
    async fn post_hooks_block_and_context() {
        let dir = tempfile::tempdir().unwrap();
        let mut slow = hook("sleep 5");
        slow.timeout = 0.2;
        let r = HookRunner::new(
            HookSettings {
                post_tool_use: vec![group(
                    None,
                    vec![
                        hook(&print_json(json!({"decision": "block", "reason": "lint failed",
                        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see lint"}}))),
                        hook("echo 'secret leaked' >&2; exit 2"),
                        hook(&print_json(json!({"permissionDecision": "deny", "updatedInput": {"x": 1}}))),
                        slow,
                    ],
                )],
                ..Default::default()
            },
            dir.path(),
        )
        .unwrap();
        let out = r.post_tool_use(&ctx("Bash", dir.path()), &json!({}), &json!("ok")).await;
        assert_eq!(out.additional_context, ["see lint"]);
        let block = out.block_reason.unwrap();
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines.len(), 3, "{block}");
        assert_eq!(lines[0], "lint failed");
        assert_eq!(lines[1], "secret leaked");
        assert!(lines[2].contains("timed out"));
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    }

    #[tokio::test]
    async fn large_output_is_capped_and_drained() {
        let dir = tempfile::tempdir().unwrap();
        // 3 MiB on stdout and stderr: the hook must not block on a full pipe.
        let r =
            runner(vec![group(None, vec![hook("head -c 3145728 /dev/zero >&2; head -c 3145728 /dev/zero; exit 0")])]);
        let out = pre(&r, "Bash", dir.path()).await;
        assert_eq!(out.decision, None);
        assert!(out.warnings[0].contains("output exceeds"), "{:?}", out.warnings);
    }

    #[test]
    fn futures_are_send() {
        fn assert_send<T: Send>(_: &T) {}
        let r = HookRunner::new(HookSettings::default(), "/").unwrap();
        let c = ctx("Bash", Path::new("/"));
        let input = json!({});
        assert_send(&r.pre_tool_use(&c, &input));
        assert_send(&r.post_tool_use(&c, &input, &input));
        assert_send(&r.post_tool_use_failure(&c, &input, "e"));
    }

    #[test]
    fn invalid_settings_rejected() {
        let mut h = hook("true");
        h.timeout = 0.0;
        assert!(HookRunner::new(HookSettings { pre_tool_use: vec![group(None, vec![h])], ..Default::default() }, "/")
            .is_err());
        assert!(HookRunner::new(
            HookSettings { post_tool_use: vec![group(Some("("), vec![hook("true")])], ..Default::default() },
            "/"
        )
        .is_err());
        assert_eq!(hook("x").kind, HookType::Command);
    }

    #[test]
    fn matcher_semantics() {
        assert!(compile_matcher(None).unwrap().is_none());
        assert!(compile_matcher(Some("")).unwrap().is_none());
        assert!(compile_matcher(Some("*")).unwrap().is_none());
        let re = compile_matcher(Some("Bash|Write")).unwrap().unwrap();
        assert!(re.is_match("Bash") && re.is_match("Write"));
        assert!(!re.is_match("BashX") && !re.is_match("XWrite"));
        let re = compile_matcher(Some("mcp__srv__.*")).unwrap().unwrap();
        assert!(re.is_match("mcp__srv__a") && !re.is_match("mcp__other__a"));
    }
}
