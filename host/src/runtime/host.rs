//! Host side of the WIT imports: inner calls, timers, clock, randomness,
//! console and the interrupt flag. Everything the guest passes is untrusted.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{AbortHandle, Abortable, FutureExt};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::bindings::wrepl::sandbox::{calls, host, types};
use super::budget::{Budget, CancelToken, ScriptClock, StopReason};
use super::console::{ConsoleBuffer, ConsoleOutput, CONSOLE_BUDGET_BYTES};
use super::tape::{Cursor, Event, RecordError, Recorder, ReplayObservation, Tape};
use super::{EngineOptions, SandboxOptions};

/// Most inner calls in flight at once per sandbox.
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;
/// Largest input (JSON text) a script may send to one inner call.
pub const MAX_CALL_INPUT_BYTES: usize = 64 << 20;
/// Largest result (JSON text) delivered back to the script.
pub const MAX_CALL_RESULT_BYTES: usize = 64 << 20;
/// Most timers armed at once per sandbox.
pub const MAX_TIMERS: usize = 10_000;
/// Longest error message passed to the guest.
const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Why an inner call failed, as the script sees it in `error.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// Refused by a permission rule, a hook, or the approver.
    Denied,
    /// The input does not match the tool's schema (or is otherwise unacceptable).
    InvalidInput,
    /// The tool returned output that violates its declared schema.
    InvalidOutput,
    /// No tool of that name is available.
    UnknownTool,
    /// The isolation latch refused the call.
    Isolation,
    /// A path leaves the granted workspace roots.
    PathEscape,
    /// The file or directory does not exist.
    NotFound,
    /// An OS error.
    Io,
    /// The tool's native timeout expired.
    Timeout,
    /// The tool ignored its timeout and the watchdog aborted it.
    Watchdog,
    /// The call was cancelled.
    Aborted,
    /// Any other failure of the tool.
    Failed,
}

impl FailureKind {
    /// The kebab-case name the script sees (`denied`, `invalid-input`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Denied => "denied",
            FailureKind::InvalidInput => "invalid-input",
            FailureKind::InvalidOutput => "invalid-output",
            FailureKind::UnknownTool => "unknown-tool",
            FailureKind::Isolation => "isolation",
            FailureKind::PathEscape => "path-escape",
            FailureKind::NotFound => "not-found",
            FailureKind::Io => "io",
            FailureKind::Timeout => "timeout",
            FailureKind::Watchdog => "watchdog",
            FailureKind::Aborted => "aborted",
            FailureKind::Failed => "failed",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed or refused inner call, as the script sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFailure {
    /// Machine-readable kind.
    pub kind: FailureKind,
    /// Human-readable explanation.
    pub message: String,
}

impl CallFailure {
    /// Build a failure of `kind` with `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

/// The running part of an inner call: resolves to the JSON text of the value
/// the script receives.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<String, CallFailure>> + Send>>;

/// Where inner calls go. The runtime knows nothing about tools: it hands the
/// tool name and the untrusted JSON input text to this handler.
pub trait CallHandler: Send + Sync + 'static {
    /// Begin a call. Refusals that need no work may be returned directly.
    fn start(&self, tool: &str, input: &str) -> Result<CallFuture, CallFailure>;
    /// A fingerprint of the tool's input schema, recorded with each call.
    fn fingerprint(&self, _tool: &str) -> String {
        String::new()
    }
}

/// A handler with no tools: every call is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl CallHandler for NoTools {
    fn start(&self, tool: &str, _input: &str) -> Result<CallFuture, CallFailure> {
        Err(CallFailure::new(FailureKind::UnknownTool, format!("no tool named {tool:?} is available in this sandbox")))
    }
}

/// Clock and randomness for the guest (replaceable for deterministic replay).
pub trait Ambient: Send + Sync + 'static {
    /// Microseconds since the Unix epoch.
    fn now_us(&self) -> f64;
    /// 64 random bits.
    fn random_u64(&self) -> u64;
}

/// The real clock and an OS-seeded generator.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemAmbient;

thread_local! {
    static RNG: std::cell::Cell<u64> = std::cell::Cell::new({
        let mut b = [0u8; 8];
        // An unseeded generator would make every context's Math.random()
        // identical; fall back to the clock only if the OS refuses.
        if getrandom::fill(&mut b).is_err() {
            b = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64).to_le_bytes();
        }
        u64::from_le_bytes(b) | 1
    });
}

impl Ambient for SystemAmbient {
    fn now_us(&self) -> f64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as f64).unwrap_or(0.0)
    }
    fn random_u64(&self) -> u64 {
        // splitmix64 over a per-thread OS-seeded state
        RNG.with(|s| {
            let x = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
            s.set(x);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
    }
}

/// The error an overdue guest is killed with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Killed(pub StopReason);

impl std::fmt::Display for Killed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "killed: {}", super::stop_text(self.0))
    }
}

impl std::error::Error for Killed {}

pub(crate) struct Limits {
    max_memory: usize,
    peak: usize,
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let ok = desired <= self.max_memory;
        if ok {
            self.peak = self.peak.max(desired);
        }
        Ok(ok)
    }
    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

struct Done {
    id: u32,
    result: Result<String, CallFailure>,
}

type Running = Pin<Box<dyn Future<Output = Option<Done>> + Send>>;

struct InFlight {
    tool: String,
    abort: AbortHandle,
}

/// Per-instance host state (the wasmtime store data).
pub(crate) struct HostState {
    pub(crate) limits: Limits,
    handler: Arc<dyn CallHandler>,
    ambient: Arc<dyn Ambient>,
    /// In-flight call futures, polled on the guest's task when a call starts
    /// and whenever the guest waits in `next-completion` (no cross-thread
    /// hand-off per call). Tools that must progress while the script computes
    /// spawn their own work.
    running: FuturesUnordered<Running>,
    /// Calls that finished while being polled in `start-call`, in completion
    /// order; delivered (and recorded) by `next-completion`.
    ready: VecDeque<Done>,
    next_id: u32,
    in_flight: HashMap<u32, InFlight>,
    timers: BTreeSet<(Instant, u32)>,
    timer_at: HashMap<u32, Instant>,
    clock: ScriptClock,
    budget: Budget,
    cancel: CancelToken,
    active: bool,
    stop: Option<StopReason>,
    stop_since: Option<Instant>,
    console: ConsoleBuffer,
    graceful_stop: bool,
    /// Record mode: where boundary events go.
    recorder: Option<Arc<dyn Recorder>>,
    /// Replay mode: the block's recorded events.
    cursor: Option<Cursor>,
    /// Index (among this eval's calls) of each in-flight call id.
    call_index: HashMap<u32, u32>,
    /// Calls started in this eval (record mode).
    calls_started: u32,
    /// Events recorded in this eval.
    recorded: usize,
    /// Tools the script registered (`registerTool`), by name.
    pub(crate) registered: std::collections::BTreeMap<String, RegisteredTool>,
    /// Changes whenever `registered` does; unique across instances (0: none ever).
    pub(crate) registry_revision: u64,
}

/// A process-wide counter, so revisions of different instances never collide.
fn next_revision() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Most boundary events recorded per evaluation (bounds the log's growth).
pub const MAX_RECORDED_EVENTS: usize = 1_000_000;

/// Most registered tools per context.
pub const MAX_REGISTERED_TOOLS: usize = 100;

/// A tool defined by the script with `registerTool`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RegisteredTool {
    /// Name (the model sees `eval_registered__<name>`).
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: serde_json::Value,
    /// Optional display name.
    pub display_name: Option<String>,
}

fn valid_tool_name(name: &str) -> bool {
    (1..=111).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl HostState {
    pub(crate) fn new(options: &SandboxOptions, engine: &EngineOptions) -> Self {
        Self {
            limits: Limits { max_memory: engine.max_linear_memory, peak: 0 },
            handler: options.handler.clone(),
            ambient: options.ambient.clone(),
            running: FuturesUnordered::new(),
            ready: VecDeque::new(),
            next_id: 1,
            in_flight: HashMap::new(),
            timers: BTreeSet::new(),
            timer_at: HashMap::new(),
            clock: ScriptClock::start(),
            budget: Budget { script: Duration::from_secs(30), wall: Duration::from_secs(600) },
            cancel: CancelToken::new(),
            active: false,
            stop: None,
            stop_since: None,
            console: ConsoleBuffer::new(CONSOLE_BUDGET_BYTES),
            graceful_stop: engine.graceful_stop,
            recorder: None,
            cursor: None,
            call_index: HashMap::new(),
            calls_started: 0,
            recorded: 0,
            registry_revision: 0,
            registered: std::collections::BTreeMap::new(),
        }
    }

    pub(crate) fn peak_memory(&self) -> usize {
        self.limits.peak
    }

    pub(crate) fn begin_eval(&mut self, budget: Budget, cancel: CancelToken, tape: Tape) {
        (self.recorder, self.cursor) = match tape {
            Tape::Off => (None, None),
            Tape::Record(r) => (Some(r), None),
            Tape::Replay(events) => (None, Some(Cursor::new(events))),
        };
        self.call_index.clear();
        self.calls_started = 0;
        self.recorded = 0;
        self.budget = budget;
        self.cancel = cancel;
        self.clock = ScriptClock::start();
        self.active = true;
        self.stop = None;
        self.stop_since = None;
    }

    /// Finish an evaluation: abort what is still in flight, clear timers.
    /// Returns the console output, the abandoned calls and the times.
    pub(crate) fn end_eval(&mut self) -> (ConsoleOutput, Vec<String>, Duration, Duration) {
        let mut abandoned: Vec<(u32, String)> = self
            .in_flight
            .drain()
            .map(|(id, f)| {
                f.abort.abort();
                (id, f.tool)
            })
            .collect();
        abandoned.sort();
        let abandoned: Vec<String> = abandoned.into_iter().map(|(_, t)| t).collect();
        if !abandoned.is_empty() {
            self.console.note(&format!(
                "[wrepl] warning: {} inner call(s) were still pending when the script ended; they were aborted and their results dropped: {}. Await every call (e.g. `await Promise.all([...])`).\n",
                abandoned.len(),
                abandoned.join(", ")
            ));
        }
        self.timers.clear();
        self.timer_at.clear();
        // Dropping the futures ends their work (processes are killed on drop).
        self.running = FuturesUnordered::new();
        self.ready.clear();
        self.active = false;
        self.recorder = None;
        self.call_index.clear();
        let script = self.clock.used();
        let wall = self.clock.wall();
        (self.console.take(), abandoned, script, wall)
    }

    /// Check budgets; latch the first stop reason.
    pub(crate) fn poll_budget(&mut self) -> Option<StopReason> {
        if self.active && self.stop.is_none() {
            if let Some(r) = self.clock.check(&self.budget, &self.cancel) {
                self.stop = Some(r);
                self.stop_since = Some(Instant::now());
            }
        }
        self.stop
    }

    /// Ask the guest to stop (latched with its time, so the kill path works).
    fn request_stop(&mut self, reason: StopReason) {
        if self.stop.is_none() {
            self.stop = Some(reason);
            self.stop_since = Some(Instant::now());
        }
    }

    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }

    /// The guest was asked to stop more than `grace` ago and still runs.
    pub(crate) fn overdue(&self, grace: Duration) -> Option<StopReason> {
        match (self.stop, self.stop_since) {
            (Some(r), Some(t)) if t.elapsed() > grace => Some(r),
            _ => None,
        }
    }

    /// Take the replay observation (divergence, outcome-unknown calls) of the
    /// evaluation that just ended; `None` outside replay mode.
    pub(crate) fn take_replay(&mut self) -> Option<ReplayObservation> {
        let mut c = self.cursor.take()?;
        if c.divergence.is_none() && !c.is_exhausted() {
            c.diverge(None, "the block ended".into());
        }
        Some(ReplayObservation { divergence: c.divergence, unknown: c.unknown })
    }

    fn record(&mut self, event: Event, durable: bool) -> Result<(), RecordError> {
        let Some(r) = &self.recorder else { return Ok(()) };
        self.recorded += 1;
        if self.recorded > MAX_RECORDED_EVENTS {
            if self.stop.is_none() {
                self.console.note(&format!(
                    "[wrepl] the replay log limit of {MAX_RECORDED_EVENTS} events per evaluation was reached; the evaluation was stopped\n"
                ));
                self.request_stop(StopReason::Cancelled);
            }
            return Err(RecordError::LimitReached(MAX_RECORDED_EVENTS));
        }
        r.record(event, durable)
    }

    fn accept(&mut self, done: Done) -> Option<types::Completion> {
        // Unknown ids were cancelled or belong to an earlier evaluation.
        self.in_flight.remove(&done.id)?;
        let index = self.call_index.remove(&done.id).unwrap_or(u32::MAX);
        let outcome = match done.result {
            Ok(json) if json.len() > MAX_CALL_RESULT_BYTES => Err(types::CallError {
                kind: "result-too-large".into(),
                message: format!(
                    "the result ({} bytes) exceeds the {} byte limit for one inner call",
                    json.len(),
                    MAX_CALL_RESULT_BYTES
                ),
            }),
            Ok(json) => Ok(json),
            Err(f) => Err(types::CallError { kind: f.kind.as_str().into(), message: cap_message(f.message) }),
        };
        let event = match &outcome {
            Ok(json) => Event::Done { call: index, ok: true, payload: json.clone(), error_kind: String::new() },
            Err(e) => Event::Done { call: index, ok: false, payload: e.message.clone(), error_kind: e.kind.clone() },
        };
        let _ = self.record(event, false);
        Some(types::Completion::Call(types::CallDone { id: done.id, outcome }))
    }

    fn new_call_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    /// Replay mode: answer `start-call` from the recording.
    fn replay_start(&mut self, tool: String) -> Result<u32, types::CallError> {
        let Some(c) = self.cursor.as_mut() else { unreachable!("replay_start outside replay") };
        let index = c.next_call_index();
        match c.peek() {
            Some(Event::Call { tool: t, .. }) if *t == tool => {
                c.next();
            }
            _ => {
                c.diverge(Some(index), format!("call of {tool}"));
                // The call fails in the script (at its call site); nothing
                // beyond the recording runs.
                return Err(call_error(
                    "replay-drift",
                    format!("replay drift: this block did not make call #{index} ({tool}) when it was recorded; nothing was run"),
                ));
            }
        }
        if let Some(Event::Refused { call, .. }) = c.peek() {
            if *call == index {
                let Some(Event::Refused { error_kind, message, .. }) = c.next() else { unreachable!() };
                return Err(call_error(&error_kind, message));
            }
        }
        let id = self.new_call_id();
        let (abort, _) = AbortHandle::new_pair();
        self.in_flight.insert(id, InFlight { tool: truncate_name(&tool), abort });
        self.call_index.insert(id, index);
        Ok(id)
    }

    /// Replay mode: the next completion from the recording.
    fn replay_next(&mut self) -> Option<types::Completion> {
        if self.poll_budget().is_some() || !self.active {
            return Some(types::Completion::Interrupted);
        }
        let c = self.cursor.as_mut()?;
        match c.peek() {
            Some(Event::Done { call, .. }) => {
                let call = *call;
                let id = self.call_index.iter().find(|(_, i)| **i == call).map(|(id, _)| *id);
                let Some(id) = id else {
                    c.diverge(Some(call), "a completion of a call that was not started".into());
                    self.request_stop(StopReason::Cancelled);
                    return Some(types::Completion::Interrupted);
                };
                let Some(Event::Done { ok, payload, error_kind, .. }) = c.next() else { unreachable!() };
                self.in_flight.remove(&id);
                self.call_index.remove(&id);
                let outcome = if ok { Ok(payload) } else { Err(call_error(&error_kind, payload)) };
                Some(types::Completion::Call(types::CallDone { id, outcome }))
            }
            Some(Event::Timer { id }) => {
                let id = *id;
                c.next();
                self.disarm(id);
                Some(types::Completion::Timer(id))
            }
            None if !self.in_flight.is_empty() => {
                // The recording ends while calls were running: the process
                // died between intent and completion. Never re-run them.
                let (&id, _) = self.in_flight.iter().min_by_key(|(id, _)| **id)?;
                let index = self.call_index.remove(&id).unwrap_or(u32::MAX);
                self.in_flight.remove(&id);
                if let Some(c) = self.cursor.as_mut() {
                    c.unknown.push(index);
                }
                Some(types::Completion::Call(types::CallDone {
                    id,
                    outcome: Err(call_error(
                        "outcome-unknown",
                        "outcome_unknown: the process that ran this call ended before it completed; whether it took effect is unknown, so it was not run again".into(),
                    )),
                }))
            }
            None if self.in_flight.is_empty() && self.timers.is_empty() => None,
            _ => {
                c.diverge(None, "waiting for a completion".into());
                self.request_stop(StopReason::Cancelled);
                Some(types::Completion::Interrupted)
            }
        }
    }

    fn pop_due_timer(&mut self, now: Instant) -> Option<u32> {
        let first = *self.timers.first()?;
        if first.0 > now {
            return None;
        }
        self.timers.remove(&first);
        self.timer_at.remove(&first.1);
        Some(first.1)
    }

    fn disarm(&mut self, id: u32) {
        if let Some(at) = self.timer_at.remove(&id) {
            self.timers.remove(&(at, id));
        }
    }
}

fn cap_message(mut m: String) -> String {
    if m.len() > MAX_MESSAGE_BYTES {
        let cut = crate::text::floor_char_boundary(&m, MAX_MESSAGE_BYTES);
        m.truncate(cut);
        m.push_str("…[truncated]");
    }
    m
}

fn call_error(kind: &str, message: String) -> types::CallError {
    types::CallError { kind: kind.into(), message }
}

impl types::Host for HostState {}

impl calls::Host for HostState {
    fn start_call(&mut self, tool: String, input: String) -> wasmtime::Result<Result<u32, types::CallError>> {
        if !self.active {
            return Ok(Err(call_error("aborted", "no evaluation is running; inner calls cannot start".into())));
        }
        if self.stop.is_some() {
            return Ok(Err(call_error("aborted", "the evaluation is stopping; no new inner calls may start".into())));
        }
        if self.in_flight.len() >= MAX_CALLS_IN_FLIGHT {
            return Ok(Err(call_error(
                "limit",
                format!(
                    "too many inner calls in flight (limit {MAX_CALLS_IN_FLIGHT}); await some before starting more"
                ),
            )));
        }
        if input.len() > MAX_CALL_INPUT_BYTES {
            return Ok(Err(call_error(
                "invalid-input",
                format!(
                    "the input of {:?} is {} bytes; the limit is {MAX_CALL_INPUT_BYTES}",
                    truncate_name(&tool),
                    input.len()
                ),
            )));
        }
        if self.cursor.is_some() {
            return Ok(self.replay_start(tool));
        }
        let index = self.calls_started;
        self.calls_started += 1;
        if self.recorder.is_some() {
            let schema = self.handler.fingerprint(&tool);
            let intent = Event::Call { tool: tool.clone(), input: input.clone(), schema };
            if let Err(e) = self.record(intent, true) {
                return Ok(Err(call_error(
                    "log-failure",
                    format!("the call was not run because its intent could not be written to the replay log: {e}"),
                )));
            }
        }
        let fut = match self.handler.start(&tool, &input) {
            Ok(f) => f,
            Err(f) => {
                let message = cap_message(f.message);
                let _ = self.record(
                    Event::Refused { call: index, error_kind: f.kind.as_str().into(), message: message.clone() },
                    false,
                );
                return Ok(Err(types::CallError { kind: f.kind.as_str().into(), message }));
            }
        };
        let id = self.new_call_id();
        self.call_index.insert(id, index);
        let (abort, registration) = AbortHandle::new_pair();
        let fut = Abortable::new(fut, registration);
        self.running.push(Box::pin(async move { fut.await.ok().map(|result| Done { id, result }) }));
        self.in_flight.insert(id, InFlight { tool: truncate_name(&tool), abort });
        self.poll_started();
        Ok(Ok(id))
    }

    async fn next_completion(&mut self) -> Option<types::Completion> {
        // Script time counts guest execution: it pauses only while the guest
        // is blocked here waiting for inner calls (not for its own timers).
        if !self.in_flight.is_empty() {
            self.clock.pause();
        }
        let next = if self.cursor.is_some() { self.replay_next() } else { self.wait_completion().await };
        self.clock.resume();
        next
    }

    fn cancel_call(&mut self, id: u32) -> wasmtime::Result<()> {
        if let Some(f) = self.in_flight.remove(&id) {
            f.abort.abort();
        }
        Ok(())
    }
}

impl HostState {
    /// Poll the running calls once, right away: a call that can finish at
    /// once is ready for the next `next-completion`, and a slow one starts
    /// its work (timers, I/O) now instead of when the script next waits. The
    /// time counts as waiting, not as script time.
    fn poll_started(&mut self) {
        self.clock.pause();
        while let Some(Some(item)) = self.running.next().now_or_never() {
            if let Some(done) = item {
                self.ready.push_back(done);
            }
        }
        self.clock.resume();
    }

    async fn wait_completion(&mut self) -> Option<types::Completion> {
        loop {
            let now = Instant::now();
            if let Some(id) = self.pop_due_timer(now) {
                let _ = self.record(Event::Timer { id }, false);
                return Some(types::Completion::Timer(id));
            }
            if self.poll_budget().is_some() || !self.active {
                return Some(types::Completion::Interrupted);
            }
            if let Some(done) = self.ready.pop_front() {
                if let Some(c) = self.accept(done) {
                    return Some(c);
                }
                continue;
            }
            if self.in_flight.is_empty() && self.timers.is_empty() {
                return None;
            }
            // A call that is already done needs no timer.
            if let Some(Some(item)) = self.running.next().now_or_never() {
                if let Some(c) = item.and_then(|done| self.accept(done)) {
                    return Some(c);
                }
                continue;
            }
            let mut deadline = self.clock.next_deadline(&self.budget);
            if let Some((t, _)) = self.timers.first() {
                deadline = deadline.min(*t);
            }
            // Wake regularly to notice cancellation.
            deadline = deadline.min(now + Duration::from_millis(20));
            let next = if self.running.is_empty() {
                tokio::time::sleep_until(deadline.into()).await;
                None
            } else {
                tokio::select! {
                    biased;
                    done = self.running.next() => done.flatten(),
                    _ = tokio::time::sleep_until(deadline.into()) => None,
                }
            };
            if let Some(done) = next {
                if let Some(c) = self.accept(done) {
                    return Some(c);
                }
            }
        }
    }
}

fn truncate_name(s: &str) -> String {
    let cut = crate::text::floor_char_boundary(s, 200);
    s[..cut].to_string()
}

impl host::Host for HostState {
    fn now_us(&mut self) -> wasmtime::Result<f64> {
        if let Some(c) = self.cursor.as_mut() {
            if let Some(Event::Now { us }) = c.peek() {
                let us = *us;
                c.next();
                return Ok(us);
            }
            c.diverge(None, "a clock read".into());
        }
        let us = self.ambient.now_us();
        let _ = self.record(Event::Now { us }, false);
        Ok(us)
    }

    fn random_u64(&mut self) -> wasmtime::Result<u64> {
        if let Some(c) = self.cursor.as_mut() {
            if let Some(Event::Random { value }) = c.peek() {
                let value = *value;
                c.next();
                return Ok(value);
            }
            c.diverge(None, "a random draw".into());
        }
        let value = self.ambient.random_u64();
        let _ = self.record(Event::Random { value }, false);
        Ok(value)
    }

    fn console_write(&mut self, target: types::ConsoleStream, text: String) -> wasmtime::Result<()> {
        self.console.write(matches!(target, types::ConsoleStream::Stderr), &text);
        Ok(())
    }

    fn set_timer(&mut self, id: u32, delay_ms: u32) -> wasmtime::Result<bool> {
        if !self.active {
            return Ok(false);
        }
        self.disarm(id);
        if self.timer_at.len() >= MAX_TIMERS {
            return Ok(false);
        }
        let at = Instant::now() + Duration::from_millis(u64::from(delay_ms.min(i32::MAX as u32)));
        self.timers.insert((at, id));
        self.timer_at.insert(id, at);
        Ok(true)
    }

    fn clear_timer(&mut self, id: u32) -> wasmtime::Result<()> {
        self.disarm(id);
        Ok(())
    }

    fn register_tool(
        &mut self,
        name: String,
        description: String,
        schema: String,
        display_name: String,
    ) -> wasmtime::Result<Result<(), String>> {
        if !valid_tool_name(&name) {
            return Ok(Err("the name must match ^[a-zA-Z0-9_-]{1,111}$".into()));
        }
        if description.chars().count() > 10_000 {
            return Ok(Err("the description is longer than 10000 characters".into()));
        }
        if display_name.chars().count() > 200 {
            return Ok(Err("the display name is longer than 200 characters".into()));
        }
        if schema.len() > 64 << 10 {
            return Ok(Err("the schema is larger than 64 KiB".into()));
        }
        let input_schema: serde_json::Value = match serde_json::from_str(&schema) {
            Ok(v @ serde_json::Value::Object(_)) => v,
            _ => return Ok(Err("the schema must be a JSON object".into())),
        };
        if let Err(e) = jsonschema::validator_for(&input_schema) {
            return Ok(Err(format!("the schema is not a valid JSON Schema: {e}")));
        }
        if !self.registered.contains_key(&name) && self.registered.len() >= MAX_REGISTERED_TOOLS {
            return Ok(Err(format!("at most {MAX_REGISTERED_TOOLS} tools may be registered")));
        }
        let display_name = (!display_name.is_empty()).then_some(display_name);
        self.registered.insert(name.clone(), RegisteredTool { name, description, input_schema, display_name });
        self.registry_revision = next_revision();
        Ok(Ok(()))
    }

    fn unregister_tool(&mut self, name: String) -> wasmtime::Result<bool> {
        let removed = self.registered.remove(&name).is_some();
        if removed {
            self.registry_revision = next_revision();
        }
        Ok(removed)
    }

    fn should_interrupt(&mut self) -> wasmtime::Result<bool> {
        let stop = self.poll_budget();
        Ok(self.graceful_stop && stop.is_some())
    }
}
