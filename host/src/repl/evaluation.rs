//! One evaluation as a value: the code, its budgets (checked once), its
//! outer caps and trace context ([`Evaluation`]), built by the CLI, the MCP
//! front end and the library from [`EvalOptions`], and by replay from a
//! log's blocks; and what it returns ([`EvalResult`]), assembled from the
//! runtime's report.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{Limits, Repl, ReplError};
use crate::budget::Budget;
use crate::call::TraceContext;
use crate::pipeline::dispatcher::CallRecord;
use crate::runtime::{Cost, EvalReport, Fault, ScriptError, StopReason, View};
use crate::text::{cap_text, cap_text_of};
use crate::tools::Media;

/// One evaluation, as every front end and replay describe it: the code, the
/// budgets it runs under (its script budget checked and clamped once, the
/// context's wall clock), the outer cap on its result text and the trace
/// context it continues.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The code (JavaScript, or TypeScript whose types are stripped).
    pub code: String,
    /// Script time and wall clock.
    pub budget: Budget,
    /// Optional deterministic instruction budget (needs an engine with fuel).
    pub fuel: Option<u64>,
    /// Cancels the evaluation when triggered; inner calls get child tokens.
    pub cancel: CancellationToken,
    /// Cap on the result text (and on error parts), in characters.
    pub text_cap: usize,
    /// The W3C trace context the evaluation continues, if any.
    pub trace: Option<TraceContext>,
    /// The MCP tool whose `tools/call` this evaluation serves, if any (its
    /// span is then the MCP server span `tools/call <tool>`).
    pub mcp_tool: Option<String>,
    /// Inner calls that stopped to wait for the client's input (see
    /// [`EvalOptions::waiting`]).
    pub waiting: Option<Arc<std::sync::Mutex<std::collections::BTreeSet<u32>>>>,
    /// How the result is shown (see [`EvalOptions::view`]).
    pub view: View,
}

impl Evaluation {
    /// `code` under `opts` in a context with `limits`: the script budget is
    /// checked here, once (zero is refused, more than the hard limit
    /// clamped); the wall clock and the text cap are the context's.
    pub fn new(code: impl Into<String>, opts: &EvalOptions, limits: &Limits) -> Result<Self, ReplError> {
        let script = Budget::script(opts.timeout)?.script;
        Ok(Self {
            code: code.into(),
            budget: Budget { script, wall: limits.hard_wall },
            fuel: opts.fuel,
            cancel: opts.cancel.clone(),
            text_cap: limits.text_cap,
            trace: opts.trace.clone(),
            mcp_tool: opts.mcp_tool.clone(),
            waiting: opts.waiting.clone(),
            view: opts.view,
        })
    }

    /// A recorded block re-evaluated on replay, with the script budget the
    /// player gives it.
    pub(crate) fn replayed(code: String, view: View, script: Duration, limits: &Limits) -> Self {
        Self {
            code,
            budget: Budget { script, wall: limits.hard_wall },
            fuel: None,
            cancel: CancellationToken::new(),
            text_cap: limits.text_cap,
            trace: None,
            mcp_tool: None,
            waiting: None,
            view,
        }
    }
}

/// Options of one evaluation.
#[derive(Debug, Clone, Default)]
pub struct EvalOptions {
    /// Script budget (`None`: 30 s).
    pub timeout: Option<Duration>,
    /// Optional deterministic instruction budget (needs an engine with fuel).
    pub fuel: Option<u64>,
    /// Cancels the evaluation when triggered.
    pub cancel: CancellationToken,
    /// Inner calls that stopped to wait for the client's input (filled by
    /// the approver or sampler that stopped them). When any are left at the
    /// end, the block is recorded as suspended at them, to be continued
    /// later with [`Repl::continue_block`].
    pub waiting: Option<Arc<std::sync::Mutex<std::collections::BTreeSet<u32>>>>,
    /// Continue this suspended block instead of starting a new one (the
    /// code must be the block's own): see [`Resumption`].
    pub continues: Option<Resumption>,
    /// The W3C trace context the evaluation continues (an MCP request's
    /// `_meta.traceparent`): its span is that span's child.
    pub trace: Option<TraceContext>,
    /// The MCP tool whose `tools/call` this evaluation serves (set by the
    /// MCP server): its span is named and marked as the MCP conventions say.
    pub mcp_tool: Option<String>,
    /// How the result is shown: for the model (the default), or for a
    /// person at a terminal ([`View::Terminal`]: as node's `util.inspect`
    /// shows it, `undefined` shown as such, the value kept as `_` and a
    /// thrown value as `_error`). Recorded with the block, so replay shows
    /// it (and keeps `_`) the same way.
    pub view: View,
}

/// Which suspended block an evaluation continues: its number, and the
/// calls that waited for input (they run now; everything the block did
/// before it stopped is answered from the log, so nothing runs twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumption {
    /// The suspended block's number.
    pub block: u64,
    /// The calls it stopped at, as its `Suspended` event names them.
    pub waiting: Vec<u32>,
}

/// What one evaluation returns.
#[derive(Debug, Clone, Serialize)]
pub struct EvalResult {
    /// The result value as JSON (the last expression, or `o`), when the
    /// script completed.
    pub result: Option<serde_json::Value>,
    /// Display text of the result, capped (see [`Limits::text_cap`]).
    pub text: String,
    /// Length of the result's display text before it was capped, in characters.
    pub text_chars: usize,
    /// Console output (stdout).
    pub stdout: String,
    /// Console output (stderr) and host warnings.
    pub stderr: String,
    /// The error, when the script threw, was refused, or was stopped.
    pub error: Option<ScriptError>,
    /// True when the script budget or wall clock stopped the script.
    pub timed_out: bool,
    /// Set when this evaluation ran in (or caused) a fresh context, with why.
    pub context_reset: Option<String>,
    /// Inner calls that were still pending at the end (aborted).
    pub abandoned_calls: Vec<String>,
    /// Script time in milliseconds (guest execution, excluding inner calls).
    pub script_ms: f64,
    /// Wall time in milliseconds.
    pub wall_ms: f64,
    /// Inner calls that completed or were refused (tool_use/tool_result pairs).
    pub calls: Vec<CallRecord>,
    /// Images and PDFs returned by inner calls (at most 8 and 4).
    pub media: Vec<Media>,
    /// Wire names ([`crate::call::REGISTERED_PREFIX`] and the name) of tools this evaluation registered.
    pub new_tools: Vec<String>,
    /// What the evaluation cost (guest time, wall time, memory, calls, bytes, fuel).
    pub cost: Cost,
}

impl EvalResult {
    /// True when the script did not complete normally.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

impl Repl {
    pub(super) fn assemble_result(&mut self, report: EvalReport, ev: &Evaluation) -> EvalResult {
        let EvalReport {
            value_json,
            text,
            text_total,
            error,
            stopped,
            fault,
            console,
            abandoned_calls,
            script_time,
            wall_time,
            usage,
            peak_memory_bytes,
            fuel_used,
            ..
        } = report;
        let timed_out = matches!(stopped, Some(StopReason::ScriptBudget | StopReason::WallClock))
            || matches!(fault, Some(Fault::Unresponsive(StopReason::ScriptBudget | StopReason::WallClock)));
        let mut context_reset = None;
        let error = if let Some(f) = &fault {
            let why = f.to_string();
            self.lost = Some(why.clone());
            context_reset = Some(format!("the context was lost ({why}); the next evaluation starts fresh"));
            let (name, message) = match f {
                Fault::Unresponsive(r) => (stop_error_name(*r), stop_message(*r, &ev.budget, true)),
                Fault::OutOfFuel => ("RangeError", format!("{why}; the context was reset")),
                Fault::StackOverflow => ("RangeError", format!("{why}; the context was reset")),
                Fault::OutOfMemory => ("RangeError", format!("{why}; the context was reset")),
                Fault::HeapExhausted => ("InternalError", format!("{why}; the context was reset")),
                Fault::Trap(_) => ("InternalError", format!("{why}; the context was reset")),
                Fault::Tampered(_) => (
                    "PoisonedContext",
                    format!("{why}; this evaluation did not run, and the next one starts in a fresh context"),
                ),
            };
            Some(ScriptError { name: name.into(), message, stack: String::new() })
        } else if let Some(r) = stopped {
            Some(ScriptError {
                name: stop_error_name(r).into(),
                message: stop_message(r, &ev.budget, false),
                stack: String::new(),
            })
        } else {
            // The error's parts are capped like results (same cap, same marker).
            error.map(|e| ScriptError {
                name: cap_text(e.name, ev.text_cap),
                message: cap_text(e.message, ev.text_cap),
                stack: cap_text(e.stack, ev.text_cap),
            })
        };
        let result = value_json.as_deref().and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok());
        // The whole text's length, where the guest cut it.
        let text_chars = if error.is_some() { 0 } else { text.chars().count().max(text_total as usize) };
        EvalResult {
            result: if error.is_some() { None } else { result },
            text: if error.is_some() { String::new() } else { cap_text_of(text, ev.text_cap, text_chars) },
            text_chars,
            stdout: console.stdout,
            stderr: console.stderr,
            error,
            timed_out,
            context_reset,
            abandoned_calls,
            script_ms: script_time.as_secs_f64() * 1e3,
            wall_ms: wall_time.as_secs_f64() * 1e3,
            calls: Vec::new(),
            media: Vec::new(),
            new_tools: Vec::new(),
            cost: Cost {
                guest_cpu_us: script_time.as_micros() as u64,
                wall_ms: wall_time.as_secs_f64() * 1e3,
                peak_memory_bytes,
                calls: usage.calls,
                bytes_in: usage.bytes_in,
                bytes_out: usage.bytes_out,
                fuel: fuel_used,
            },
        }
    }
}

fn stop_error_name(r: StopReason) -> &'static str {
    match r {
        StopReason::Cancelled => "AbortError",
        _ => "TimeoutError",
    }
}

fn stop_message(r: StopReason, budget: &Budget, killed: bool) -> String {
    let base = match r {
        StopReason::ScriptBudget => format!(
            "the script ran out of its {} ms time budget (time spent waiting for inner tools does not count)",
            budget.script.as_millis()
        ),
        StopReason::WallClock => {
            format!("the evaluation hit the hard wall-clock limit of {} ms", budget.wall.as_millis())
        }
        StopReason::Cancelled => "the evaluation was cancelled".to_string(),
    };
    if killed {
        format!("{base}; it did not stop when asked, so the context was killed and will be rebuilt fresh")
    } else {
        format!("{base}; completed inner calls and their effects are kept, and so is the context")
    }
}

pub(super) fn push_warnings(r: &mut EvalResult, warnings: &[String]) {
    for w in warnings {
        r.stderr.push_str(&format!("[wrepl] {w}\n"));
    }
}

impl EvalResult {
    /// Replace the outcome with an error saying a PostToolUse hook withheld it.
    pub(super) fn withhold(&mut self, tool: &str, reason: &str) {
        self.result = None;
        self.text = String::new();
        self.text_chars = 0;
        self.error = Some(ScriptError {
            name: "ResultWithheld".into(),
            message: format!("the result of {tool} was withheld by a PostToolUse hook: {reason}"),
            stack: String::new(),
        });
    }

    pub(super) fn refused(name: &str, message: String) -> Self {
        Self {
            result: None,
            text: String::new(),
            text_chars: 0,
            stdout: String::new(),
            stderr: String::new(),
            error: Some(ScriptError { name: name.into(), message, stack: String::new() }),
            timed_out: false,
            context_reset: None,
            abandoned_calls: Vec::new(),
            script_ms: 0.0,
            wall_ms: 0.0,
            calls: Vec::new(),
            media: Vec::new(),
            new_tools: Vec::new(),
            cost: Cost::default(),
        }
    }
}
