//! What a hook said: its exit status and stdout read as a verdict
//! (decision, reason, updated input, context, warnings, block), and the
//! verdicts of an event's hooks merged.

use serde_json::{Map, Value};

use super::super::permissions::Decision;
use super::super::settings::{HookCommand, OnTimeout};
use super::process::RunResult;
use super::{HookEvent, PostOutcome, MAX_HOOK_OUTPUT, MAX_REASON_CHARS};
use crate::process::Captured;

/// Longest stderr excerpt quoted in a warning.
const MAX_WARNING_STDERR_CHARS: usize = 500;

pub(super) fn merge_post(verdicts: Vec<Verdict>) -> PostOutcome {
    let mut out = PostOutcome::default();
    let mut blocks = Vec::new();
    let mut stops = Vec::new();
    for v in verdicts {
        blocks.extend(v.block);
        stops.extend(v.stop);
        out.additional_context.extend(v.additional_context);
        out.warnings.extend(v.warnings);
    }
    out.block_reason = join_reasons(blocks);
    out.stop = join_reasons(stops);
    out
}

pub(super) fn join_reasons(reasons: Vec<String>) -> Option<String> {
    (!reasons.is_empty()).then(|| reasons.join("\n"))
}

/// What one hook said.
#[derive(Debug, Default)]
pub(super) struct Verdict {
    pub(super) decision: Option<Decision>,
    pub(super) reason: Option<String>,
    pub(super) updated_input: Option<Map<String, Value>>,
    pub(super) additional_context: Vec<String>,
    pub(super) warnings: Vec<String>,
    /// Post events: the result is flagged with this reason.
    block: Option<String>,
    /// `"continue": false`: the evaluation stops, for this reason (the
    /// hook's `stopReason`, or one naming the hook).
    pub(super) stop: Option<String>,
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

pub(super) fn interpret(event: HookEvent, hook: &HookCommand, run: RunResult) -> Verdict {
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

    // The fields every event shares (top level): `continue: false` stops
    // the evaluation whatever else the hook said; `systemMessage` is shown.
    match obj.get("continue") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            v.stop = Some(match obj.get("stopReason") {
                Some(Value::String(r)) if !r.trim().is_empty() => cap_chars(r.trim(), MAX_REASON_CHARS),
                _ => format!("stopped by {name}"),
            });
        }
        Some(other) => v.warnings.push(format!("{name}: `continue` is not a boolean ({other}); ignored")),
    }
    match obj.get("systemMessage") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if !m.trim().is_empty() => {
            v.warnings.push(format!("{name}: {}", cap_chars(m.trim(), MAX_REASON_CHARS)))
        }
        Some(Value::String(_)) => {}
        Some(_) => v.warnings.push(format!("{name}: `systemMessage` is not a string; ignored")),
    }
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
