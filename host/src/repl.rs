//! The embeddable REPL: one persistent JavaScript context, evaluations with
//! budgets, result assembly and caps. This is the API the CLI (and later the
//! MCP server) are thin front ends over.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::pipeline::dispatcher::{CallRecord, Dispatcher};
use crate::replay::log::Event;
use crate::replay::recorder::SessionRecorder;
use crate::replay::store::LogStore;
use crate::runtime::{
    Budget, CancelToken, EngineOptions, EvalReport, EvalRequest, Fault, RuntimeError, Sandbox, SandboxEngine,
    SandboxOptions, ScriptError, StopReason,
};
use crate::runtime::{Divergence, Recorder, ReplayObservation, Tape};
use crate::script::{self, ScriptLimits};

/// Default script budget in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Largest script budget; larger requests are clamped to it.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Hard wall-clock limit of one evaluation.
pub const HARD_WALL_MS: u64 = 600_000;
/// Default cap on the result text, in characters.
pub const DEFAULT_TEXT_CAP: usize = 100_000;

/// Errors of the REPL API. Script failures are not errors: they are reported
/// in [`EvalResult`].
#[derive(Debug, thiserror::Error)]
pub enum ReplError {
    /// The request itself is invalid (e.g. a bad timeout).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The sandbox runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The session log could not be read.
    #[error("session log: {0}")]
    Session(String),
}

/// A durable session: its log is replayed when the REPL starts and every
/// evaluation is appended to it.
#[derive(Clone)]
pub struct SessionConfig {
    /// Session name.
    pub name: String,
    /// Where the log lives.
    pub store: Arc<dyn LogStore>,
    /// Boundary id recorded with new blocks (default `main`).
    pub boundary: String,
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig").field("name", &self.name).field("boundary", &self.boundary).finish()
    }
}

struct ActiveSession {
    recorder: Arc<SessionRecorder>,
    next_block: u64,
    boundary: String,
}

/// How a replayed block matched its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Same calls, same order, same outcome.
    Ok,
    /// The block left its recording (call count, tool order or throw position).
    Drift,
    /// The block threw, as it did when recorded.
    Threw,
}

/// The verdict of one replayed block.
#[derive(Debug, Clone, Serialize)]
pub struct BlockVerdict {
    /// Block number.
    pub block: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// The first divergence, for `drift`.
    pub divergence: Option<Divergence>,
    /// Where in the block's code the divergence surfaced (`line:column`), when known.
    pub location: Option<String>,
    /// Calls whose outcome is unknown (the recording process died while they ran): `#index tool`.
    pub outcome_unknown: Vec<String>,
    /// The block's code (first line).
    pub code: String,
}

/// What restoring a session found.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RestoreReport {
    /// One verdict per block, in order.
    pub blocks: Vec<BlockVerdict>,
    /// One-line summary.
    pub summary: String,
}

/// Settings of a [`Repl`].
#[derive(Debug, Clone)]
pub struct ReplOptions {
    /// Per-sandbox settings (tools, JS limits).
    pub sandbox: SandboxOptions,
    /// Limits on accepted code.
    pub script_limits: ScriptLimits,
    /// Cap on the result text, in characters.
    pub text_cap: usize,
    /// Hard wall-clock limit of one evaluation.
    pub hard_wall: Duration,
    /// The inner-call pipeline. When set, its tools are installed as globals
    /// and every guest call goes through it (overriding `sandbox.handler`
    /// and `sandbox.tools`).
    pub dispatcher: Option<Arc<Dispatcher>>,
    /// A durable session to resume and record into.
    pub session: Option<SessionConfig>,
}

impl Default for ReplOptions {
    fn default() -> Self {
        Self {
            sandbox: SandboxOptions::default(),
            script_limits: ScriptLimits::default(),
            text_cap: DEFAULT_TEXT_CAP,
            hard_wall: Duration::from_millis(HARD_WALL_MS),
            dispatcher: None,
            session: None,
        }
    }
}

/// Validate a user-supplied timeout (milliseconds). `None` gives the default;
/// values above the maximum are clamped; zero, negative, non-finite and
/// non-numeric values are rejected.
pub fn parse_timeout(value: Option<&serde_json::Value>) -> Result<Duration, ReplError> {
    let Some(v) = value.filter(|v| !v.is_null()) else {
        return Ok(Duration::from_millis(DEFAULT_TIMEOUT_MS));
    };
    let Some(ms) = v.as_f64() else {
        return Err(ReplError::InvalidInput(format!(
            "timeout must be a number of milliseconds (1..={MAX_TIMEOUT_MS}), got {v}"
        )));
    };
    timeout_from_ms(ms)
}

/// Validate a timeout given as a number of milliseconds.
pub fn timeout_from_ms(ms: f64) -> Result<Duration, ReplError> {
    if !ms.is_finite() || ms <= 0.0 {
        return Err(ReplError::InvalidInput(format!(
            "timeout must be a positive number of milliseconds (at most {MAX_TIMEOUT_MS}), got {ms}"
        )));
    }
    Ok(Duration::from_millis(ms.ceil().min(MAX_TIMEOUT_MS as f64) as u64))
}

/// Options of one evaluation.
#[derive(Debug, Clone, Default)]
pub struct EvalOptions {
    /// Script budget (`None`: 30 s).
    pub timeout: Option<Duration>,
    /// Optional deterministic instruction budget (needs an engine with fuel).
    pub fuel: Option<u64>,
    /// Cancels the evaluation when triggered.
    pub cancel: CancelToken,
}

/// What one evaluation returns.
#[derive(Debug, Clone, Serialize)]
pub struct EvalResult {
    /// The result value as JSON (the last expression, or `o`), when the
    /// script completed.
    pub result: Option<serde_json::Value>,
    /// Display text of the result, capped (see [`ReplOptions::text_cap`]).
    pub text: String,
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
    pub media: Vec<crate::tools::Media>,
    /// Wire names (`eval_registered__<name>`) of tools this evaluation registered.
    pub new_tools: Vec<String>,
}

impl EvalResult {
    /// True when the script did not complete normally.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// A persistent JavaScript REPL context.
pub struct Repl {
    engine: Arc<SandboxEngine>,
    options: ReplOptions,
    sandbox: Option<Sandbox>,
    /// Why the previous context was lost, to report on the next evaluation.
    lost: Option<String>,
    session: Option<ActiveSession>,
    restore: Option<RestoreReport>,
    /// The registry as of a revision, to tell which tools an eval added.
    tools_seen: (u64, Vec<crate::runtime::RegisteredTool>),
}

impl std::fmt::Debug for Repl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repl").field("options", &self.options).finish_non_exhaustive()
    }
}

impl Repl {
    /// Create a REPL with its own engine (default engine options).
    pub async fn new(options: ReplOptions) -> Result<Self, ReplError> {
        let engine = Arc::new(SandboxEngine::new(EngineOptions::default())?);
        Self::with_engine(engine, options).await
    }

    /// Create a REPL on a shared engine.
    pub async fn with_engine(engine: Arc<SandboxEngine>, mut options: ReplOptions) -> Result<Self, ReplError> {
        if let Some(d) = &options.dispatcher {
            options.sandbox.handler = Arc::new(d.clone());
            options.sandbox.tools = d.bindings();
        }
        let sandbox = Sandbox::new(&engine, options.sandbox.clone()).await?;
        let session_cfg = options.session.clone();
        let mut repl = Self {
            engine,
            options,
            sandbox: Some(sandbox),
            lost: None,
            session: None,
            restore: None,
            tools_seen: (0, Vec::new()),
        };
        if let Some(cfg) = session_cfg {
            repl.hydrate(cfg).await?;
        }
        Ok(repl)
    }

    /// Tools the script registered with `registerTool`.
    pub fn registered_tools(&self) -> Vec<crate::runtime::RegisteredTool> {
        self.sandbox.as_ref().map(|s| s.registered_tools()).unwrap_or_default()
    }

    /// Replace a missing or poisoned instance; true when it had to.
    async fn ensure_sandbox(&mut self) -> Result<bool, ReplError> {
        if self.sandbox.as_ref().is_some_and(|s| s.poisoned().is_none()) {
            return Ok(false);
        }
        self.rebuild_sandbox().await?;
        Ok(true)
    }

    /// Drop the instance (freeing its pool slot first) and build a fresh one.
    async fn rebuild_sandbox(&mut self) -> Result<(), ReplError> {
        self.sandbox = None;
        self.sandbox = Some(Sandbox::new(&self.engine, self.options.sandbox.clone()).await?);
        Ok(())
    }

    fn registry_revision(&self) -> u64 {
        self.sandbox.as_ref().map(|s| s.registry_revision()).unwrap_or(0)
    }

    /// Bring the cached copy of the registry up to date (copies only on change).
    fn refresh_tools_seen(&mut self) {
        let rev = self.registry_revision();
        if rev != self.tools_seen.0 {
            self.tools_seen = (rev, self.registered_tools());
        }
    }

    /// A model's call of a registered tool (`eval_registered__<name>` or the
    /// bare name): the input is validated against the tool's schema, the
    /// pipeline must approve (registered tools always ask), then the handler
    /// runs in the guest realm as an evaluation of its own (recorded, so
    /// replay restores what it did).
    pub async fn call_registered(
        &mut self,
        name: &str,
        input: serde_json::Value,
        opts: EvalOptions,
    ) -> Result<EvalResult, ReplError> {
        let name = name.strip_prefix("eval_registered__").unwrap_or(name);
        let tool = self
            .registered_tools()
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ReplError::InvalidInput(format!("no registered tool named {name:?}")))?;
        let validator = jsonschema::validator_for(&tool.input_schema)
            .map_err(|e| ReplError::InvalidInput(format!("the schema of {name} is invalid: {e}")))?;
        let errors: Vec<String> = validator.iter_errors(&input).take(5).map(|e| e.to_string()).collect();
        if !errors.is_empty() {
            return Ok(EvalResult::refused(
                "ToolInputError",
                format!("invalid input for {name}: {}", errors.join("; ")),
            ));
        }
        let decision = match &self.options.dispatcher {
            Some(d) => d.authorize_registered(name, &input).await,
            None => Err(crate::runtime::CallFailure::new(
                "denied",
                format!(
                    "Execute registered tool \"{name}\": registered tools always ask, and no pipeline is configured"
                ),
            )),
        };
        if let Err(f) = decision {
            return Ok(EvalResult::refused("PermissionDenied", f.message));
        }
        let code =
            format!("await __wrepl_invoke_registered({}, {})", serde_json::Value::String(name.to_string()), input);
        self.eval(&code, opts).await
    }

    /// What resuming the session found (`None` without a session).
    pub fn restore_report(&self) -> Option<&RestoreReport> {
        self.restore.as_ref()
    }

    /// Replay the session's recorded blocks (hydration `resume`): every
    /// capability is answered from the log, so no tool runs again.
    async fn hydrate(&mut self, cfg: SessionConfig) -> Result<(), ReplError> {
        let events = cfg.store.load(&cfg.name).map_err(|e| ReplError::Session(e.to_string()))?;
        let mut blocks: std::collections::BTreeMap<u64, Vec<Event>> = std::collections::BTreeMap::new();
        for e in events {
            blocks.entry(e.block).or_default().push(e.event);
        }
        let mut report = RestoreReport::default();
        let mut next_block = 0;
        for (n, events) in blocks {
            next_block = n + 1;
            let mut code = None;
            let mut end = None;
            let mut body = Vec::new();
            for e in events {
                match e {
                    Event::Begin { code: c, .. } => code = Some(c),
                    Event::End { threw, stopped, .. } => end = Some((threw, stopped)),
                    other => body.push(other),
                }
            }
            let Some(code) = code else { continue };
            let tools: Vec<String> = body
                .iter()
                .filter_map(|e| match e {
                    Event::Call { tool, .. } => Some(tool.clone()),
                    _ => None,
                })
                .collect();
            let budget = match end {
                Some((_, true)) => Duration::from_millis(1000),
                _ => Duration::from_millis(MAX_TIMEOUT_MS),
            };
            let (result, obs) = self.run_block(&code, budget, EvalOptions::default(), Tape::Replay(body)).await?;
            let obs = obs.unwrap_or_default();
            let threw_now = result.error.is_some();
            let mut divergence = obs.divergence;
            if divergence.is_none() {
                if let Some((threw_then, _)) = end {
                    if threw_then != threw_now {
                        divergence = Some(Divergence {
                            position: 0,
                            call: None,
                            expected: if threw_then { "a throw".into() } else { "completion".into() },
                            actual: if threw_now { "a throw".into() } else { "completion".into() },
                        });
                    }
                }
            }
            // A drifting call throws in the script at the call site; its stack
            // names the location in the block's code.
            let location = divergence.as_ref().and(result.error.as_ref()).and_then(|e| {
                let at = e.stack.find("<repl>:")?;
                let rest = &e.stack[at + "<repl>:".len()..];
                Some(rest.split(|c: char| c == ')' || c.is_whitespace()).next().unwrap_or("").to_string())
            });
            let verdict = if divergence.is_some() {
                Verdict::Drift
            } else if threw_now {
                Verdict::Threw
            } else {
                Verdict::Ok
            };
            report.blocks.push(BlockVerdict {
                block: n,
                verdict,
                divergence,
                location,
                outcome_unknown: obs
                    .unknown
                    .iter()
                    .map(|i| format!("#{i} {}", tools.get(*i as usize).map(String::as_str).unwrap_or("?")))
                    .collect(),
                code: code.lines().next().unwrap_or("").chars().take(120).collect(),
            });
        }
        let count = |v: Verdict| report.blocks.iter().filter(|b| b.verdict == v).count();
        let unknown: usize = report.blocks.iter().map(|b| b.outcome_unknown.len()).sum();
        report.summary = format!(
            "restored {} block(s): {} ok, {} threw, {} drift; {} call(s) with unknown outcome",
            report.blocks.len(),
            count(Verdict::Ok),
            count(Verdict::Threw),
            count(Verdict::Drift),
            unknown
        );
        let recorder = Arc::new(SessionRecorder::new(cfg.store.clone(), cfg.name.clone()));
        self.session = Some(ActiveSession { recorder, next_block, boundary: cfg.boundary });
        self.restore = Some(report);
        Ok(())
    }

    /// Evaluate `code` in this context.
    pub async fn eval(&mut self, code: &str, opts: EvalOptions) -> Result<EvalResult, ReplError> {
        let timeout = opts.timeout.unwrap_or(Duration::from_millis(DEFAULT_TIMEOUT_MS));
        if timeout.is_zero() {
            return Err(ReplError::InvalidInput("timeout must be positive".into()));
        }
        let timeout = timeout.min(Duration::from_millis(MAX_TIMEOUT_MS));
        let mut reset_note = None;
        if self.ensure_sandbox().await? {
            reset_note = Some(match self.lost.take() {
                Some(why) => format!("this evaluation runs in a fresh context: the previous one was lost ({why}); earlier variables are gone"),
                None => "this evaluation runs in a fresh context".to_string(),
            });
        }
        let recorder = self.session.as_ref().map(|s| s.recorder.clone());
        if let (Some(rec), Some(sess)) = (&recorder, &self.session) {
            rec.set_block(sess.next_block);
            let _ = rec.record(Event::Begin { code: code.to_string(), boundary: sess.boundary.clone() }, false);
        }
        let tape = match &recorder {
            Some(r) => Tape::Record(r.clone()),
            None => Tape::Off,
        };
        // The registry is only copied when its revision moved.
        self.refresh_tools_seen();
        let (mut result, _) = self.run_block(code, timeout, opts, tape).await?;
        if self.registry_revision() != self.tools_seen.0 {
            let before = std::mem::take(&mut self.tools_seen.1);
            self.refresh_tools_seen();
            result.new_tools = self
                .tools_seen
                .1
                .iter()
                .filter(|t| !before.contains(t))
                .map(|t| format!("eval_registered__{}", t.name))
                .collect();
        }
        if let (Some(rec), Some(sess)) = (&recorder, self.session.as_mut()) {
            let end = Event::End {
                threw: result.error.is_some(),
                error: result.error.as_ref().map(|e| format!("{}: {}", e.name, e.message)),
                stopped: result.timed_out || result.error.as_ref().is_some_and(|e| e.name == "AbortError"),
            };
            if let Err(e) = rec.record(end, true) {
                result.stderr.push_str(&format!("[wrepl] warning: the session log could not be written: {e}\n"));
            }
            sess.next_block += 1;
        }
        if let Some(note) = reset_note {
            result.stderr.insert_str(0, &format!("[wrepl] note: {note}\n"));
            result.context_reset.get_or_insert(note);
        }
        Ok(result)
    }

    /// Evaluate one block with a tape; returns the result and, in replay
    /// mode, how the block matched its recording.
    async fn run_block(
        &mut self,
        code: &str,
        timeout: Duration,
        opts: EvalOptions,
        tape: Tape,
    ) -> Result<(EvalResult, Option<ReplayObservation>), ReplError> {
        self.ensure_sandbox().await?;
        let script = match script::prepare(code, &self.options.script_limits) {
            Ok(s) => s,
            Err(rejected) => return Ok((EvalResult::refused(rejected.js_name(), rejected.to_string()), None)),
        };
        if let Some(d) = &self.options.dispatcher {
            d.begin_eval();
        }
        let request = EvalRequest {
            script,
            budget: Budget { script: timeout, wall: self.options.hard_wall },
            fuel: opts.fuel,
            cancel: opts.cancel,
            tape,
        };
        let sandbox = self.sandbox.as_mut().expect("sandbox was just ensured");
        let mut report = sandbox.eval(request.clone()).await;
        let mut poisoned_note = None;
        if let Some(Fault::Tampered(names)) = &report.fault {
            // The script did not run: the context could not be refreshed.
            // Drop it and continue in a fresh one (the repo hint is config
            // and comes back with it).
            poisoned_note = Some(format!(
                "the previous context was poisoned (managed globals tampered with: {names}); this evaluation ran in a fresh context and earlier variables are gone"
            ));
            self.rebuild_sandbox().await?;
            let sandbox = self.sandbox.as_mut().expect("sandbox was just rebuilt");
            report = sandbox.eval(request).await;
        }
        let replay = report.replay.clone();
        let mut result = self.assemble(report, timeout);
        if let Some(note) = poisoned_note {
            result.stderr.insert_str(0, &format!("[wrepl] note: {note}\n"));
            result.context_reset = Some(note);
        }
        if let Some(d) = &self.options.dispatcher {
            let calls = d.finish_eval();
            for w in &calls.warnings {
                result.stderr.push_str(&format!("[wrepl] {w}\n"));
            }
            result.calls = calls.records;
            result.media = calls.media;
        }
        Ok((result, replay))
    }

    fn assemble(&mut self, report: EvalReport, timeout: Duration) -> EvalResult {
        let EvalReport {
            value_json,
            text,
            error,
            stopped,
            fault,
            console,
            abandoned_calls,
            script_time,
            wall_time,
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
                Fault::Unresponsive(r) => (stop_error_name(*r), stop_message(*r, timeout, &self.options, true)),
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
                message: stop_message(r, timeout, &self.options, false),
                stack: String::new(),
            })
        } else {
            error
        };
        let result = value_json.as_deref().and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok());
        EvalResult {
            result: if error.is_some() { None } else { result },
            text: if error.is_some() { String::new() } else { cap_text(text, self.options.text_cap) },
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
        }
    }
}

fn stop_error_name(r: StopReason) -> &'static str {
    match r {
        StopReason::Cancelled => "AbortError",
        _ => "TimeoutError",
    }
}

fn stop_message(r: StopReason, timeout: Duration, o: &ReplOptions, killed: bool) -> String {
    let base = match r {
        StopReason::ScriptBudget => format!(
            "the script ran out of its {} ms time budget (time spent waiting for inner tools does not count)",
            timeout.as_millis()
        ),
        StopReason::WallClock => {
            format!("the evaluation hit the hard wall-clock limit of {} ms", o.hard_wall.as_millis())
        }
        StopReason::Cancelled => "the evaluation was cancelled".to_string(),
    };
    if killed {
        format!("{base}; it did not stop when asked, so the context was killed and will be rebuilt fresh")
    } else {
        format!("{base}; completed inner calls and their effects are kept, and so is the context")
    }
}

/// Cap `text` at `cap` characters, with a marker saying how much was cut.
pub fn cap_text(text: String, cap: usize) -> String {
    match text.char_indices().nth(cap) {
        None => text,
        Some((cut, _)) => {
            let total = text.chars().count();
            let mut t = text[..cut].to_string();
            t.push_str(&format!("\n…[truncated: showing {cap} of {total} characters]"));
            t
        }
    }
}

impl EvalResult {
    fn refused(name: &str, message: String) -> Self {
        Self {
            result: None,
            text: String::new(),
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timeouts_validate_and_clamp() {
        assert_eq!(parse_timeout(None).unwrap(), Duration::from_millis(30_000));
        assert_eq!(parse_timeout(Some(&json!(1500))).unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_timeout(Some(&json!(10_000_000))).unwrap(), Duration::from_millis(600_000));
        for bad in [json!(0), json!(-5), json!("100"), json!(true), json!({})] {
            assert!(matches!(parse_timeout(Some(&bad)), Err(ReplError::InvalidInput(_))), "{bad}");
        }
        assert!(timeout_from_ms(f64::NAN).is_err());
        assert!(timeout_from_ms(f64::INFINITY).is_err());
    }

    #[test]
    fn text_cap_marks_truncation() {
        assert_eq!(cap_text("abc".into(), 5), "abc");
        let t = cap_text("é".repeat(10), 4);
        assert!(t.starts_with("éééé\n…[truncated: showing 4 of 10 characters]"));
    }
}
