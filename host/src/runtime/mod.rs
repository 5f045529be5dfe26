//! The Wasm side of wrepl: the wasmtime engine, one guest instance per
//! context, resource limits and budgets. This module knows WebAssembly but no
//! tool semantics: inner calls are handed to a [`CallHandler`].

mod budget;
mod cache;
mod console;
mod engine;
mod host;
mod snapshot;
mod tape;

pub use budget::{Budget, StopReason};
pub use console::{ConsoleOutput, CONSOLE_BUDGET_BYTES};
pub use engine::{
    paging_out_possible, precompile_guest, slots_reset_in_place, EngineOptions, SandboxEngine, GUEST_COMPONENT,
    MAX_JS_STACK_LIMIT, PRECOMPILED_CPU, PRECOMPILED_GUEST, PRECOMPILED_TARGET, WASMTIME_VERSION,
};
pub use host::{Ambient, CallFuture, CallHandler, NoTools, RegisteredTool, SystemAmbient, MAX_REGISTERED_TOOLS};
pub(crate) use host::{MAX_CALLS_IN_FLIGHT, MAX_REGISTERED_NAME};
pub use snapshot::{SnapshotError, SnapshotImage};
pub use tape::{Continuation, Divergence, Event, RecordError, Recorder, ReplayObservation, Tape, View};

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::call::{Shorthand, ShorthandForm, REGISTERED_PREFIX};

use host::HostState;

tokio::task_local! {
    /// Index (among its evaluation's calls) of the inner call whose handler
    /// future is being polled.
    static CALL_INDEX: u32;
}

/// Inside an inner call's handler (its pipeline, tool, approver or
/// sampler), the call's index among its evaluation's calls, as the replay
/// log numbers them; `None` outside an inner call (e.g. a front end's own
/// call).
pub fn current_call_index() -> Option<u32> {
    CALL_INDEX.try_with(|i| *i).ok()
}
use wasmtime::Store;

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        world: "guest",
        path: "wit",
        imports: {
            "wrepl:sandbox/calls.next-completion": async,
            default: trappable,
        },
        exports: { default: async },
    });
}

use bindings::exports::wrepl::sandbox::repl::EvalOutcome;
use bindings::wrepl::sandbox::types;

/// A shorthand's form as the WIT contract names it.
fn wit_form(form: ShorthandForm) -> types::ShorthandForm {
    match form {
        ShorthandForm::Shell => types::ShorthandForm::Shell,
        ShorthandForm::Read => types::ShorthandForm::Read,
        ShorthandForm::GrepContent => types::ShorthandForm::GrepContent,
        ShorthandForm::GrepFiles => types::ShorthandForm::GrepFiles,
        ShorthandForm::Glob => types::ShorthandForm::Glob,
        ShorthandForm::Write => types::ShorthandForm::Write,
        ShorthandForm::Sample => types::ShorthandForm::Sample,
        ShorthandForm::Chdir => types::ShorthandForm::Chdir,
    }
}

/// Errors of the sandbox runtime (engine setup and instantiation). Failures
/// of the script itself are not errors: they are part of [`EvalReport`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The wasmtime engine could not be configured.
    #[error("cannot configure the WebAssembly engine: {0}")]
    Engine(#[source] BoxError),
    /// The guest component could not be compiled or loaded.
    #[error("cannot load the guest component: {0}")]
    Component(#[source] BoxError),
    /// A new guest instance could not be created.
    #[error("cannot instantiate the guest: {0}")]
    Instantiate(#[source] BoxError),
    /// The guest refused its configuration (its own message).
    #[error("the guest failed to initialise: {0}")]
    GuestInit(String),
    /// The guest trapped while initialising.
    #[error("the guest failed to initialise: {0}")]
    GuestTrap(#[source] BoxError),
}

/// The cause of a [`RuntimeError`] (a wasmtime or OS error).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A wasmtime error as a [`RuntimeError`] cause, keeping its context chain.
pub(crate) fn boxed(e: wasmtime::Error) -> BoxError {
    e.into()
}

/// A tool exposed to scripts as a global async function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBinding {
    /// Name the call is dispatched under (the tool's wire name).
    pub name: String,
    /// JavaScript global the wrapper is installed as.
    pub global: String,
}

/// Per-sandbox settings.
#[derive(Clone)]
pub struct SandboxOptions {
    /// QuickJS heap limit in bytes (default 64 MiB).
    pub js_memory_limit: u64,
    /// QuickJS stack limit in bytes (default 256 KiB, at most
    /// [`MAX_JS_STACK_LIMIT`]: larger values are clamped so that QuickJS's
    /// catchable RangeError comes before the engine's native stack runs out).
    pub js_stack_limit: u32,
    /// Tools installed as globals.
    pub tools: Vec<ToolBinding>,
    /// Where inner calls go.
    pub handler: Arc<dyn CallHandler>,
    /// Clock and randomness.
    pub ambient: Arc<dyn Ambient>,
    /// Installed as the global `repoHint` (empty: none); kept across context resets.
    pub repo_hint: String,
    /// Shorthand globals to install (their tools must be among `tools`).
    pub shorthands: Vec<Shorthand>,
}

impl std::fmt::Debug for SandboxOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxOptions")
            .field("js_memory_limit", &self.js_memory_limit)
            .field("js_stack_limit", &self.js_stack_limit)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            js_memory_limit: 64 << 20,
            js_stack_limit: 256 << 10,
            tools: Vec::new(),
            handler: Arc::new(NoTools),
            ambient: Arc::new(SystemAmbient),
            repo_hint: String::new(),
            shorthands: Vec::new(),
        }
    }
}

/// One evaluation request for [`Sandbox::eval`].
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// Script already prepared by the REPL transform.
    pub script: String,
    /// Time budgets.
    pub budget: Budget,
    /// Optional deterministic instruction budget (wasmtime fuel).
    pub fuel: Option<u64>,
    /// External cancellation.
    pub cancel: CancellationToken,
    /// Record, replay, or neither.
    pub tape: Tape,
    /// How the result is shown (`eval` or `eval-inspect`).
    pub view: View,
}

/// An exception that escaped the script.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScriptError {
    /// Error class name (`TypeError`, `SyntaxError`, ...).
    pub name: String,
    /// Message.
    pub message: String,
    /// Stack trace, possibly empty.
    pub stack: String,
}

/// Why an instance died (and must be replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The budget ran out and the guest did not stop when asked.
    Unresponsive(StopReason),
    /// The fuel budget was spent.
    OutOfFuel,
    /// The guest exhausted its native stack.
    StackOverflow,
    /// The guest ran out of linear memory (the host cap was reached).
    OutOfMemory,
    /// The JavaScript heap was exhausted to the point where even small
    /// allocations failed; the context is not trusted after that.
    HeapExhausted,
    /// Managed globals were made non-configurable or otherwise tampered with.
    Tampered(String),
    /// Any other trap.
    Trap(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Unresponsive(r) => write!(f, "the script did not stop after its {} and was killed", stop_text(*r)),
            Fault::OutOfFuel => f.write_str("the instruction (fuel) budget was exhausted"),
            Fault::StackOverflow => f.write_str("the guest's native stack was exhausted"),
            Fault::OutOfMemory => f.write_str("the guest ran out of memory (linear memory cap reached)"),
            Fault::HeapExhausted => f.write_str("out of memory: the script exhausted the JavaScript heap"),
            Fault::Tampered(names) => write!(f, "managed globals were tampered with and cannot be refreshed ({names})"),
            Fault::Trap(m) => write!(f, "the guest trapped: {m}"),
        }
    }
}

pub(crate) fn stop_text(r: StopReason) -> &'static str {
    match r {
        StopReason::ScriptBudget => "script time budget ran out",
        StopReason::WallClock => "hard wall-clock limit was reached",
        StopReason::Cancelled => "evaluation was cancelled",
    }
}

/// Everything an evaluation produced.
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// JSON text of the result value, when the script completed.
    pub value_json: Option<String>,
    /// Display text of the result.
    pub text: String,
    /// When the guest cut the display text, the whole text's length
    /// (UTF-16 code units); 0 when it did not.
    pub text_total: u64,
    /// The exception, when the script threw.
    pub error: Option<ScriptError>,
    /// Set when a budget or cancellation stopped the script.
    pub stopped: Option<StopReason>,
    /// Set when the instance died; the sandbox must be replaced.
    pub fault: Option<Fault>,
    /// Console output.
    pub console: ConsoleOutput,
    /// Inner calls still in flight when the script ended (tool names); they
    /// were aborted and their results dropped.
    pub abandoned_calls: Vec<String>,
    /// Guest execution time counted against the script budget.
    pub script_time: Duration,
    /// Wall time of the evaluation.
    pub wall_time: Duration,
    /// In replay mode: how the block matched its recording.
    pub replay: Option<ReplayObservation>,
    /// The inner calls, counted at the boundary.
    pub usage: CallUsage,
    /// The guest's linear memory at its largest, in bytes.
    pub peak_memory_bytes: u64,
    /// Fuel spent, when the engine meters fuel.
    pub fuel_used: Option<u64>,
}

/// The inner calls of one evaluation as the guest made them, counted at the
/// WIT boundary: how many of each tool, and the bytes of their inputs (the
/// JSON the guest sent) and outcomes (the JSON or error text it got back).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallUsage {
    /// Calls started, by tool (refused ones included).
    pub calls: std::collections::BTreeMap<String, u64>,
    /// Bytes of the calls' inputs.
    pub bytes_in: u64,
    /// Bytes of the outcomes delivered to the guest.
    pub bytes_out: u64,
}

/// What one evaluation cost: the `cost` of `--json`, of the MCP result and
/// of the log's `End` event.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cost {
    /// Guest execution time, in microseconds (the script budget's clock: it
    /// pauses while inner calls run).
    pub guest_cpu_us: u64,
    /// Wall time, in milliseconds.
    pub wall_ms: f64,
    /// The guest's linear memory at its largest, in bytes (memory is never
    /// given back, so it includes what earlier evaluations of the context
    /// grew it to).
    pub peak_memory_bytes: u64,
    /// Inner calls started, by tool.
    pub calls: std::collections::BTreeMap<String, u64>,
    /// Bytes of the inner calls' inputs.
    pub bytes_in: u64,
    /// Bytes of the inner calls' outcomes.
    pub bytes_out: u64,
    /// Fuel (wasmtime instructions) spent, when the engine meters fuel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
}

impl Cost {
    /// Add `other` (for sums over a session).
    pub fn add(&mut self, other: &Cost) {
        self.guest_cpu_us += other.guest_cpu_us;
        self.wall_ms += other.wall_ms;
        self.peak_memory_bytes = self.peak_memory_bytes.max(other.peak_memory_bytes);
        for (tool, n) in &other.calls {
            *self.calls.entry(tool.clone()).or_default() += n;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        if let Some(f) = other.fuel {
            self.fuel = Some(self.fuel.unwrap_or(0) + f);
        }
    }
}

/// One guest instance: a persistent QuickJS runtime and its store.
pub struct Sandbox {
    store: Store<HostState>,
    guest: bindings::Guest,
    poisoned: Option<Fault>,
    fuel: bool,
    /// The configuration `init` got (snapshots are bound to its digest,
    /// computed only when one is taken or restored).
    config: types::Config,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("poisoned", &self.poisoned).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Instantiate a fresh guest and initialise its JavaScript runtime.
    pub async fn new(engine: &SandboxEngine, options: SandboxOptions) -> Result<Self, RuntimeError> {
        let mut sandbox = Self::instantiate(engine, &options).await?;
        sandbox.store.data_mut().begin_eval(
            Budget { script: Duration::from_secs(10), wall: Duration::from_secs(20) },
            CancellationToken::new(),
            Tape::Off,
        );
        let init = sandbox.guest.wrepl_sandbox_repl().call_init(&mut sandbox.store, &sandbox.config).await;
        sandbox.store.data_mut().end_eval();
        match init {
            Ok(Ok(())) => Ok(sandbox),
            Ok(Err(msg)) => Err(RuntimeError::GuestInit(msg)),
            Err(e) => Err(RuntimeError::GuestTrap(boxed(e))),
        }
    }

    /// A fresh instance, not initialised (`init` not called).
    async fn instantiate(engine: &SandboxEngine, options: &SandboxOptions) -> Result<Self, RuntimeError> {
        let mut store = engine.new_store(HostState::new(options, engine.options()));
        if engine.options().fuel {
            store.set_fuel(u64::MAX).map_err(|e| RuntimeError::Instantiate(boxed(e)))?;
        }
        let guest =
            engine.pre().instantiate_async(&mut store).await.map_err(|e| RuntimeError::Instantiate(boxed(e)))?;
        Ok(Self { store, guest, poisoned: None, fuel: engine.options().fuel, config: init_config(options) })
    }

    /// Why this instance can no longer be used, if it cannot.
    pub fn poisoned(&self) -> Option<&Fault> {
        self.poisoned.as_ref()
    }

    /// Evaluate a prepared script. Never fails: script errors, budget stops
    /// and instance faults are all part of the report.
    pub async fn eval(&mut self, req: EvalRequest) -> EvalReport {
        if let Some(f) = &self.poisoned {
            return EvalReport::fault_only(f.clone());
        }
        let fuel_given = req.fuel.unwrap_or(u64::MAX);
        if self.fuel {
            let _ = self.store.set_fuel(fuel_given);
        }
        self.store.set_epoch_deadline(1);
        self.store.data_mut().begin_eval(req.budget, req.cancel.clone(), req.tape.clone());
        let repl = self.guest.wrepl_sandbox_repl();
        let result = match req.view {
            View::Model => repl.call_eval(&mut self.store, &req.script).await,
            View::Terminal => repl.call_eval_inspect(&mut self.store, &req.script, false).await,
            View::TerminalColors => repl.call_eval_inspect(&mut self.store, &req.script, true).await,
        };
        let state = self.store.data_mut();
        let stop = state.stop_reason();
        let replay = state.take_replay();
        let (console, abandoned, script_time, wall_time) = state.end_eval();
        let usage = state.take_usage();
        let peak_memory_bytes = state.peak_memory() as u64;
        let fuel_used =
            if self.fuel { self.store.get_fuel().ok().map(|left| fuel_given.saturating_sub(left)) } else { None };
        let mut report = self.report(result, stop, replay, console, abandoned, script_time, wall_time);
        report.usage = usage;
        report.peak_memory_bytes = peak_memory_bytes;
        report.fuel_used = fuel_used;
        report
    }

    /// The report of an evaluation that ended with `result`.
    #[allow(clippy::too_many_arguments)]
    fn report(
        &mut self,
        result: wasmtime::Result<types::EvalOutcome>,
        stop: Option<StopReason>,
        replay: Option<ReplayObservation>,
        console: ConsoleOutput,
        abandoned: Vec<String>,
        script_time: Duration,
        wall_time: Duration,
    ) -> EvalReport {
        match result {
            Ok(outcome) if outcome.poisoned.is_some() => {
                let fault = Fault::Tampered(outcome.poisoned.unwrap_or_default());
                self.poisoned = Some(fault.clone());
                let mut r = EvalReport::fault_only(fault);
                r.console = console;
                r
            }
            Ok(outcome) if outcome.heap_exhausted => {
                // The guest stopped running JavaScript in that context: it is
                // replaced, and the report says so.
                self.poisoned = Some(Fault::HeapExhausted);
                let mut r = EvalReport::from_outcome(outcome, stop, console, abandoned, script_time, wall_time);
                r.fault = Some(Fault::HeapExhausted);
                r.replay = replay;
                r
            }
            Ok(outcome) => {
                let mut r = EvalReport::from_outcome(outcome, stop, console, abandoned, script_time, wall_time);
                r.replay = replay;
                r
            }
            Err(e) => {
                let fault = classify_trap(&e, stop);
                self.poisoned = Some(fault.clone());
                EvalReport {
                    value_json: None,
                    text: String::new(),
                    text_total: 0,
                    error: None,
                    stopped: stop,
                    fault: Some(fault),
                    console,
                    abandoned_calls: abandoned,
                    script_time,
                    wall_time,
                    replay,
                    usage: CallUsage::default(),
                    peak_memory_bytes: 0,
                    fuel_used: None,
                }
            }
        }
    }

    /// The digest of the configuration a sandbox built with `options` gets
    /// (a snapshot is only restored under the one it was taken under).
    pub fn config_digest(options: &SandboxOptions) -> [u8; 32] {
        snapshot::config_digest(&init_config(options))
    }

    /// The digest of this sandbox's configuration.
    pub fn config_digest_now(&self) -> [u8; 32] {
        snapshot::config_digest(&self.config)
    }

    /// Tools the script registered, by name.
    pub fn registered_tools(&self) -> Vec<RegisteredTool> {
        self.store.data().registry.tools().cloned().collect()
    }

    /// Changes whenever the registered tools do (cheap to compare).
    pub fn registry_revision(&self) -> u64 {
        self.store.data().registry.revision()
    }

    /// Peak linear memory the guest asked for, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.store.data().peak_memory()
    }
}

/// The configuration `init` gets for `options`.
fn init_config(options: &SandboxOptions) -> types::Config {
    types::Config {
        memory_limit: options.js_memory_limit,
        stack_limit: options.js_stack_limit.min(MAX_JS_STACK_LIMIT),
        tools: options
            .tools
            .iter()
            .map(|t| types::ToolBinding { name: t.name.clone(), global: t.global.clone() })
            .collect(),
        repo_hint: options.repo_hint.clone(),
        registered_prefix: REGISTERED_PREFIX.to_string(),
        calls_in_flight: MAX_CALLS_IN_FLIGHT as u32,
        shorthands: options
            .shorthands
            .iter()
            .map(|s| types::Shorthand {
                global: s.global.to_string(),
                form: wit_form(s.form),
                tool: s.tool.to_string(),
            })
            .collect(),
    }
}

fn classify_trap(e: &wasmtime::Error, stop: Option<StopReason>) -> Fault {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        match trap {
            wasmtime::Trap::OutOfFuel => return Fault::OutOfFuel,
            wasmtime::Trap::StackOverflow => return Fault::StackOverflow,
            wasmtime::Trap::Interrupt => return Fault::Unresponsive(stop.unwrap_or(StopReason::ScriptBudget)),
            _ => {}
        }
    }
    if let Some(host::Killed(reason)) = e.downcast_ref::<host::Killed>() {
        return Fault::Unresponsive(*reason);
    }
    let msg = format!("{e:#}");
    if msg.contains("memory allocation") || msg.contains("out of memory") {
        return Fault::OutOfMemory;
    }
    if msg.contains("unreachable") {
        // Rust guests abort on allocation failure with `unreachable`.
        return Fault::Trap(format!("{msg} (likely an allocation failure in the guest)"));
    }
    Fault::Trap(msg)
}

impl EvalReport {
    fn fault_only(f: Fault) -> Self {
        Self {
            value_json: None,
            text: String::new(),
            text_total: 0,
            error: None,
            stopped: None,
            fault: Some(f),
            console: ConsoleOutput::default(),
            abandoned_calls: Vec::new(),
            script_time: Duration::ZERO,
            wall_time: Duration::ZERO,
            replay: None,
            usage: CallUsage::default(),
            peak_memory_bytes: 0,
            fuel_used: None,
        }
    }

    fn from_outcome(
        o: EvalOutcome,
        stop: Option<StopReason>,
        console: ConsoleOutput,
        abandoned: Vec<String>,
        script_time: Duration,
        wall_time: Duration,
    ) -> Self {
        let stopped = if o.interrupted { Some(stop.unwrap_or(StopReason::Cancelled)) } else { None };
        Self {
            value_json: o.value_json,
            text: o.text,
            text_total: o.text_total,
            error: if o.interrupted {
                None
            } else {
                o.error.map(|e| ScriptError { name: e.name, message: e.message, stack: e.stack })
            },
            stopped,
            fault: None,
            console,
            abandoned_calls: abandoned,
            script_time,
            wall_time,
            replay: None,
            usage: CallUsage::default(),
            peak_memory_bytes: 0,
            fuel_used: None,
        }
    }
}
