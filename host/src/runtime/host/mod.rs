//! Host side of the WIT imports, split the way wasmtime splits WASI: one
//! [`HostState`] (the store data) composed of one part per interface or
//! concern, each in its own file —
//!
//! - `calls.rs`: the `calls` interface (start, complete, cancel inner calls);
//! - `ambient.rs`: clock and randomness;
//! - `timers.rs`: the guest's timers;
//! - `registry.rs`: tools the script registers;
//! - the console buffer (`runtime/console.rs`) and the budgets
//!   (`runtime/budget.rs`);
//! - the evaluation's tape (`runtime/tape/`), which every import asks
//!   instead of branching on record or replay itself.
//!
//! This file composes them, begins and ends evaluations, and implements the
//! `host` interface by delegating each function to its part. Everything the
//! guest passes is untrusted.

mod ambient;
mod calls;
mod handler;
mod registry;
mod timers;

pub use ambient::{Ambient, SystemAmbient};
pub(crate) use calls::MAX_CALLS_IN_FLIGHT;
pub use handler::{CallFailure, CallFuture, CallHandler, FailureKind, NoTools};
pub(crate) use registry::MAX_REGISTERED_NAME;
pub use registry::{RegisteredTool, MAX_REGISTERED_TOOLS};

use std::sync::Arc;
use std::time::Duration;

use super::bindings::wrepl::sandbox::{host, types};
use super::budget::{Budget, StopReason, Watch};
use super::console::{ConsoleBuffer, ConsoleOutput, CONSOLE_BUDGET_BYTES};
use super::tape::{self, Deck, ReplayObservation, Tape, TapeHost};
use super::{EngineOptions, SandboxOptions};
use calls::Calls;
use registry::Registry;
use timers::Timers;
use tokio_util::sync::CancellationToken;

/// The error an overdue guest is killed with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Killed(pub StopReason);

impl std::fmt::Display for Killed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "killed: {}", super::stop_text(self.0))
    }
}

impl std::error::Error for Killed {}

/// The linear-memory cap of one guest, and the peak it asked for.
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

/// Per-instance host state (the wasmtime store data).
pub(crate) struct HostState {
    /// Memory limits (the store's resource limiter).
    pub(crate) limits: Limits,
    /// Inner calls.
    calls: Calls,
    /// The live clock and randomness.
    ambient: Arc<dyn Ambient>,
    /// The guest's timers.
    timers: Timers,
    /// The running evaluation's budgets and stop latch.
    watch: Watch,
    /// Console output of the running evaluation.
    console: ConsoleBuffer,
    /// Whether a spent budget first asks the guest to stop (`should-interrupt`).
    graceful_stop: bool,
    /// The running evaluation's tape: record, replay, or neither.
    tape: Box<dyn Deck>,
    /// Tools the script registered (`registerTool`).
    pub(crate) registry: Registry,
}

/// The parts of a [`HostState`] a tape may use, borrowed beside the tape.
struct Services<'a> {
    calls: &'a mut Calls,
    ambient: &'a dyn Ambient,
    timers: &'a mut Timers,
    watch: &'a mut Watch,
    console: &'a mut ConsoleBuffer,
}

impl TapeHost for Services<'_> {
    fn stopping(&self) -> bool {
        self.watch.stop_reason().is_some()
    }
    fn stop(&mut self, reason: StopReason) {
        self.watch.request_stop(reason);
    }
    fn note(&mut self, text: &str) {
        self.console.note(text);
    }
    fn interrupted(&mut self) -> bool {
        self.watch.poll().is_some() || !self.watch.is_active()
    }
    fn live_now(&mut self) -> f64 {
        self.ambient.now_us()
    }
    fn live_random(&mut self) -> u64 {
        self.ambient.random_u64()
    }
    fn elapsed_ms(&self) -> f64 {
        self.watch.clock.wall().as_secs_f64() * 1e3
    }
    fn call_id(&self, index: u32) -> Option<u32> {
        self.calls.id_of(index)
    }
    fn oldest_call(&self) -> Option<u32> {
        self.calls.oldest()
    }
    fn settle(&mut self, id: u32) -> u32 {
        self.calls.settle(id)
    }
    fn timers_armed(&self) -> bool {
        !self.timers.is_empty()
    }
    fn disarm(&mut self, id: u32) {
        self.timers.disarm(id);
    }
}

impl HostState {
    pub(crate) fn new(options: &SandboxOptions, engine: &EngineOptions) -> Self {
        Self {
            limits: Limits { max_memory: engine.max_linear_memory, peak: 0 },
            calls: Calls::new(options.handler.clone()),
            ambient: options.ambient.clone(),
            timers: Timers::default(),
            watch: Watch::idle(),
            console: ConsoleBuffer::new(CONSOLE_BUDGET_BYTES),
            graceful_stop: engine.graceful_stop,
            tape: tape::load(Tape::Off),
            registry: Registry::default(),
        }
    }

    /// Ask the evaluation's tape, with the rest of the state as its host.
    fn taped<R>(&mut self, f: impl FnOnce(&mut dyn Deck, &mut dyn TapeHost) -> R) -> R {
        let mut host = Services {
            calls: &mut self.calls,
            ambient: &*self.ambient,
            timers: &mut self.timers,
            watch: &mut self.watch,
            console: &mut self.console,
        };
        f(&mut *self.tape, &mut host)
    }

    pub(crate) fn peak_memory(&self) -> usize {
        self.limits.peak
    }

    /// Start an evaluation under `budget`, `cancel` and `tape`.
    pub(crate) fn begin_eval(&mut self, budget: Budget, cancel: CancellationToken, tape: Tape) {
        self.tape = tape::load(tape);
        self.calls.begin();
        self.watch.begin(budget, cancel);
    }

    /// Finish an evaluation: abort what is still in flight, clear timers.
    /// Returns the console output, the abandoned calls and the times.
    pub(crate) fn end_eval(&mut self) -> (ConsoleOutput, Vec<String>, Duration, Duration) {
        let abandoned = self.calls.end();
        if !abandoned.is_empty() {
            self.console.note(&format!(
                "[wrepl] warning: {} inner call(s) were still pending when the script ended; they were aborted and their results dropped: {}. Await every call (e.g. `await Promise.all([...])`).\n",
                abandoned.len(),
                count_by_name(&abandoned)
            ));
        }
        self.timers.clear();
        self.watch.end();
        self.tape = tape::load(Tape::Off);
        let script = self.watch.clock.used();
        let wall = self.watch.clock.wall();
        (self.console.take(), abandoned, script, wall)
    }

    /// The evaluation's calls, counted (taken: the counters start again).
    pub(crate) fn take_usage(&mut self) -> crate::runtime::CallUsage {
        std::mem::take(&mut self.calls.usage)
    }

    /// Check budgets; latch the first stop reason.
    pub(crate) fn poll_budget(&mut self) -> Option<StopReason> {
        self.watch.poll()
    }

    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        self.watch.stop_reason()
    }

    /// The guest was asked to stop more than `grace` ago and still runs.
    pub(crate) fn overdue(&self, grace: Duration) -> Option<StopReason> {
        self.watch.overdue(grace)
    }

    /// Register `tools` again (a restored snapshot's), validated as when
    /// the script registered them.
    pub(crate) fn restore_tools(&mut self, tools: Vec<RegisteredTool>) -> Result<(), String> {
        let handler = self.calls.handler.clone();
        for t in tools {
            let schema = t.input_schema.to_string();
            let display = t.display_name.unwrap_or_default();
            self.registry.register(t.name, t.description, schema, display, &|s| handler.check_schema(s))?;
        }
        Ok(())
    }

    /// Take the replay observation (divergence, outcome-unknown calls) of the
    /// evaluation that just ended; `None` outside replay mode.
    pub(crate) fn take_replay(&mut self) -> Option<ReplayObservation> {
        std::mem::replace(&mut self.tape, tape::load(Tape::Off)).finish()
    }
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn now_us(&mut self) -> wasmtime::Result<f64> {
        Ok(self.read_clock())
    }

    fn random_u64(&mut self) -> wasmtime::Result<u64> {
        Ok(self.draw_random())
    }

    fn console_write(&mut self, target: types::ConsoleStream, text: String) -> wasmtime::Result<()> {
        self.console.write(matches!(target, types::ConsoleStream::Stderr), &text);
        Ok(())
    }

    fn set_timer(&mut self, id: u32, delay_ms: u32) -> wasmtime::Result<bool> {
        Ok(self.arm_timer(id, delay_ms))
    }

    fn clear_timer(&mut self, id: u32) -> wasmtime::Result<()> {
        self.timers.disarm(id);
        Ok(())
    }

    fn register_tool(
        &mut self,
        name: String,
        description: String,
        schema: String,
        display_name: String,
    ) -> wasmtime::Result<Result<(), String>> {
        let handler = self.calls.handler.clone();
        Ok(self.registry.register(name, description, schema, display_name, &|s| handler.check_schema(s)))
    }

    fn unregister_tool(&mut self, name: String) -> wasmtime::Result<bool> {
        Ok(self.registry.unregister(&name))
    }

    fn should_interrupt(&mut self) -> wasmtime::Result<bool> {
        let stop = self.poll_budget();
        Ok(self.graceful_stop && stop.is_some())
    }
}
/// Tool names with their counts, in first-seen order: `Read ×866, Bash`
/// (one line, however many calls).
fn count_by_name(names: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match counts.iter_mut().find(|(m, _)| *m == n.as_str()) {
            Some((_, c)) => *c += 1,
            None => counts.push((n.as_str(), 1)),
        }
    }
    let shown: Vec<String> =
        counts.iter().map(|(n, c)| if *c == 1 { n.to_string() } else { format!("{n} \u{d7}{c}") }).collect();
    shown.join(", ")
}
