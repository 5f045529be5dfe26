//! The stage helpers of the pipeline: how rules, hooks and the fallback
//! combine into one decision, schema validation with readable errors, and
//! running a tool under its native timeout and the watchdog.

use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::permissions::{Decision, Matched};
use crate::call::{CallFailure, FailureKind};
use crate::tools::{ToolError, ToolFuture, ToolOutput};

use crate::budget::HARD_LIMIT;

/// Watchdog for a native timeout: `ceil(native × 1.5) + 5000` ms, or none
/// when that reaches the hard limit (the evaluation's wall clock ends such
/// calls).
pub fn watchdog_for(native: Duration) -> Option<Duration> {
    let ms = (native.as_millis() as f64 * 1.5).ceil() as u64 + 5000;
    let w = Duration::from_millis(ms);
    (w < HARD_LIMIT).then_some(w)
}

pub(super) fn tool_failure(e: ToolError) -> CallFailure {
    let kind = match &e {
        ToolError::InvalidInput(_) => FailureKind::InvalidInput,
        ToolError::PathEscape(_) => FailureKind::PathEscape,
        ToolError::Protected(_) => FailureKind::Protected,
        ToolError::NotFound(_) => FailureKind::NotFound,
        ToolError::Io(_) => FailureKind::Io,
        ToolError::Timeout(_) => FailureKind::Timeout,
        ToolError::Cancelled(_) => FailureKind::Aborted,
        ToolError::Failed(_) => FailureKind::Failed,
    };
    CallFailure::new(kind, e.to_string())
}

/// Combine rules, hook decisions and the fallback: deny > ask > allow; a
/// hook's `allow` cannot override a deny or ask rule; without any decision,
/// the fallback (read-only tools are allowed, as they are confined to the
/// workspace; everything else asks). With the decision comes the reason a
/// refusal or a question states; an allow has none (nothing reports it, and
/// it is the decision of nearly every call).
pub(super) fn decide(
    tool: &str,
    matched: Option<Matched>,
    hook: Option<Decision>,
    hook_reason: Option<String>,
    fallback: (Decision, impl FnOnce() -> String),
) -> (Decision, String) {
    let hook_why = |d: &str| match &hook_reason {
        Some(r) => format!("a PreToolUse hook {d} {tool}: {r}"),
        None => format!("a PreToolUse hook {d} {tool}"),
    };
    if let Some(m) = &matched {
        if m.decision == Decision::Deny {
            let part = m.part.as_deref().map(|p| format!(": {p}")).unwrap_or_default();
            return (Decision::Deny, format!("{tool} is denied by the rule {:?}{part}", m.rule));
        }
    }
    if hook == Some(Decision::Deny) {
        return (Decision::Deny, hook_why("denied"));
    }
    if let Some(m) = &matched {
        if m.decision == Decision::Ask {
            return (Decision::Ask, format!("the rule {:?} requires approval for {tool}", m.rule));
        }
    }
    if hook == Some(Decision::Ask) {
        return (Decision::Ask, hook_why("asks for approval of"));
    }
    if matched.is_some() || hook == Some(Decision::Allow) || fallback.0 == Decision::Allow {
        return (Decision::Allow, String::new());
    }
    (fallback.0, (fallback.1)())
}

pub(super) fn validate(tool: &str, v: &jsonschema::Validator, value: &Value) -> Result<(), CallFailure> {
    // The first five errors are shown; the rest are counted.
    let mut all = v.iter_errors(value);
    let mut errors: Vec<String> = all
        .by_ref()
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    let more = all.take(10_000).count();
    if more > 0 {
        errors.push(format!("and {more} more error{}", if more == 1 { "" } else { "s" }));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CallFailure::new(FailureKind::InvalidInput, format!("invalid input for {tool}: {}", errors.join("; "))))
    }
}

pub(super) async fn run_with_watchdog(
    fut: ToolFuture,
    tool: &str,
    native: Duration,
    cancel: &CancellationToken,
) -> Result<ToolOutput, CallFailure> {
    // A panic inside a tool ends that call with a `failed` error of one line;
    // it never reaches the runtime (or, on a worker thread, the process).
    let mut fut = std::panic::AssertUnwindSafe(fut).catch_unwind().map(|r| {
        r.unwrap_or_else(|panic| {
            Err(ToolError::Failed(format!("the tool panicked: {}", crate::text::panic_line(&*panic))))
        })
    });
    let fail = tool_failure;
    // The tool first: one that finishes on its first poll, or after one turn
    // of the scheduler (an in-process tool awaiting something already done),
    // never registers the timer. Registering one and clearing it again costs
    // more than such a call's whole pipeline stage, and can wake a parked
    // runtime thread.
    if let std::task::Poll::Ready(r) = futures_util::poll!(&mut fut) {
        return r.map_err(fail);
    }
    tokio::task::yield_now().await;
    if let std::task::Poll::Ready(r) = futures_util::poll!(&mut fut) {
        return r.map_err(fail);
    }
    // The watchdog counts from here: a call still running after its first
    // poll and one turn of the scheduler (the clock is not read, and no
    // timer made, for one that was done by then).
    let started = Instant::now();
    tokio::select! {
        biased;
        r = &mut fut => return r.map_err(fail),
        _ = tokio::time::sleep(native) => {}
    }
    // Native timeout: ask the tool to stop (it kills its processes)…
    cancel.cancel();
    let timed_out = |detail: String| {
        CallFailure::new(
            FailureKind::Timeout,
            format!("{tool} timed out after its native timeout of {} ms{detail}", native.as_millis()),
        )
    };
    let Some(watchdog) = watchdog_for(native) else {
        return match fut.await {
            Ok(out) => Ok(out),
            Err(e) => Err(timed_out(format!(": {e}"))),
        };
    };
    // …and give it until the watchdog to do so.
    tokio::select! {
        r = &mut fut => match r {
            Ok(out) => Ok(out),
            Err(e) => Err(timed_out(format!(": {e}"))),
        },
        _ = tokio::time::sleep_until((started + watchdog).into()) => {
            drop(fut);
            Err(CallFailure::new(
                FailureKind::Watchdog,
                format!(
                    "watchdog: {tool} did not finish within {} ms (native timeout {} ms, watchdog ceil(native x 1.5) + 5000 ms); the call was aborted",
                    watchdog.as_millis(),
                    native.as_millis()
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_formula() {
        assert_eq!(watchdog_for(Duration::from_secs(10)), Some(Duration::from_millis(20_000)));
        assert_eq!(watchdog_for(Duration::from_secs(120)), Some(Duration::from_millis(185_000)));
        assert_eq!(watchdog_for(Duration::from_millis(333)), Some(Duration::from_millis(5500)));
        assert_eq!(watchdog_for(Duration::from_secs(400)), None);
    }

    #[test]
    fn decisions_follow_precedence() {
        let m = |d| Some(Matched { decision: d, rule: "R".into(), part: None });
        let ask = || (Decision::Ask, || String::from("not granted"));
        let allow = || (Decision::Allow, || String::from("read-only"));
        assert_eq!(decide("Write", m(Decision::Deny), Some(Decision::Allow), None, ask()).0, Decision::Deny);
        assert_eq!(decide("Write", m(Decision::Allow), Some(Decision::Deny), None, ask()).0, Decision::Deny);
        assert_eq!(decide("Write", m(Decision::Ask), Some(Decision::Allow), None, ask()).0, Decision::Ask);
        assert_eq!(decide("Write", None, Some(Decision::Allow), None, ask()).0, Decision::Allow);
        assert_eq!(decide("Write", None, None, None, ask()).0, Decision::Ask);
        assert_eq!(decide("Read", None, None, None, allow()).0, Decision::Allow);
        assert_eq!(decide("Read", m(Decision::Deny), None, None, allow()).0, Decision::Deny);
    }
}
