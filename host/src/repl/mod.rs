//! The embeddable REPL: one persistent JavaScript context, evaluations with
//! budgets, result assembly and caps. The CLI and the MCP server are thin
//! front ends over it; [`Repl::builder`] wires one.

mod builder;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

pub use crate::text::cap_text;
pub use builder::{Limits, ReplBuilder};

use crate::pipeline::dispatcher::{CallRecord, Dispatcher, FrontCall, FrontDefault, PipelineError};
use crate::replay::log::Event;
use crate::replay::player::{self, Replayed};
use crate::replay::recorder::{Lease, SessionRecorder};
use crate::replay::store::{LeaseTaken, LogStore, StoreError};
use crate::runtime::{
    Ambient, Budget, CancelToken, EvalReport, EvalRequest, Fault, RegisteredTool, RuntimeError, Sandbox, SandboxEngine,
    SandboxOptions, ScriptError, StopReason,
};
use crate::runtime::{Recorder, ReplayObservation, Tape};
use crate::script;
use crate::tools::{Media, ToolError};

/// Prefix of the names script-registered tools are offered to the model under.
pub const REGISTERED_PREFIX: &str = "eval_registered__";

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
#[non_exhaustive]
pub enum ReplError {
    /// The request itself is invalid (e.g. a bad timeout).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The sandbox runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The session log could not be read or written.
    #[error("session log: {0}")]
    Session(#[from] StoreError),
    /// The session is in use elsewhere (one writer per session).
    #[error("session {0:?} is in use by another connection (one connection per session)")]
    SessionBusy(String),
    /// The session's log failed verification: it is not replayed.
    #[error(
        "session {session:?} failed verification at event {seq}: {reason}; it was not replayed (to move the log aside and start the session fresh: wrepl eval --session {session} --on-tamper fresh -e 1, with the same --store)"
    )]
    Tampered {
        /// The session.
        session: String,
        /// The first bad event.
        seq: u64,
        /// What is wrong there.
        reason: String,
    },
    /// The pipeline could not be built (settings, rules, tool schemas).
    #[error("pipeline: {0}")]
    Pipeline(#[from] PipelineError),
    /// A workspace root is unusable.
    #[error("workspace: {0}")]
    Roots(#[source] ToolError),
    /// The current directory (the default root) cannot be read.
    #[error("workspace: cannot read the current directory: {0}")]
    Workspace(#[source] std::io::Error),
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
    /// What to do when the log fails verification.
    pub on_tamper: OnTamper,
    /// How long to wait for another writer to let go of the session
    /// (`None`: fail at once with "in use").
    pub wait: Option<Duration>,
}

impl SessionConfig {
    /// The session `name` in `store`: boundary `main`, refuse a tampered
    /// log, do not wait for another writer.
    pub fn new(name: impl Into<String>, store: Arc<dyn LogStore>) -> Self {
        Self { name: name.into(), store, boundary: "main".into(), on_tamper: OnTamper::Refuse, wait: None }
    }
}

/// What resuming does with a log that fails verification (a broken hash
/// chain, or a head that does not match its newest rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTamper {
    /// Refuse to resume ([`ReplError::Tampered`]); nothing is replayed.
    #[default]
    Refuse,
    /// Move the log aside (`<name>.tampered-<ms>`, kept for inspection) and
    /// start the session fresh, saying so; nothing forged is replayed.
    Fresh,
}

impl std::str::FromStr for OnTamper {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "refuse" => Ok(Self::Refuse),
            "fresh" => Ok(Self::Fresh),
            other => Err(format!("unknown --on-tamper value {other:?}: expected refuse or fresh")),
        }
    }
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("name", &self.name)
            .field("boundary", &self.boundary)
            .field("on_tamper", &self.on_tamper)
            .field("wait", &self.wait)
            .finish()
    }
}

struct ActiveSession {
    recorder: Arc<SessionRecorder>,
    store: Arc<dyn LogStore>,
    name: String,
    next_block: u64,
    boundary: String,
    /// Set while the lease is given back: the head the log had then.
    released_head: Option<String>,
}

pub use crate::replay::player::{BlockVerdict, RestoreReport, Verdict};

/// `Ok` when `session`'s log verifies (chain and head), else
/// [`ReplError::Tampered`] naming the first bad event; store errors as they are.
pub(crate) fn verified(store: &dyn LogStore, session: &str) -> Result<(), ReplError> {
    let report = store.verify(session)?;
    if report.ok {
        return Ok(());
    }
    let (seq, reason) = report.first_bad.map_or((0, "the log failed verification".to_string()), |b| (b.seq, b.reason));
    Err(ReplError::Tampered { session: session.to_string(), seq, reason })
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
    /// Inner calls that stopped to wait for the client's input (filled by
    /// the approver or sampler that stopped them). When any are left at the
    /// end, the block is recorded as suspended at them, to be continued
    /// later with [`Repl::continue_block`].
    pub waiting: Option<Arc<std::sync::Mutex<std::collections::BTreeSet<u32>>>>,
    /// Continue this suspended block instead of starting a new one (the
    /// code must be the block's own): see [`Resumption`].
    pub continues: Option<Resumption>,
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
///
/// Every capability a script reaches — the built-in tools, an embedder's
/// own [`crate::Tool`]s, `chdir`, the model's calls of script-registered
/// tools — passes one [`Dispatcher`].
pub struct Repl {
    engine: Arc<SandboxEngine>,
    dispatcher: Arc<Dispatcher>,
    limits: Limits,
    ambient: Arc<dyn Ambient>,
    repo_hint: String,
    sandbox: Option<Sandbox>,
    /// Why the previous context was lost, to report on the next evaluation.
    lost: Option<String>,
    session: Option<ActiveSession>,
    restore: Option<RestoreReport>,
    /// The registry as of a revision, to tell which tools an eval added.
    tools_seen: (u64, Vec<RegisteredTool>),
}

impl std::fmt::Debug for Repl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repl")
            .field("limits", &self.limits)
            .field("dispatcher", &self.dispatcher)
            .finish_non_exhaustive()
    }
}

impl Repl {
    /// Start wiring a REPL: roots, settings, rules, tools, approver,
    /// sampler, session, limits.
    pub fn builder() -> ReplBuilder {
        ReplBuilder::default()
    }

    async fn assemble(
        engine: Arc<SandboxEngine>,
        dispatcher: Arc<Dispatcher>,
        limits: Limits,
        ambient: Arc<dyn Ambient>,
        repo_hint: String,
        session: Option<SessionConfig>,
    ) -> Result<Self, ReplError> {
        let mut repl = Self {
            engine,
            dispatcher,
            limits,
            ambient,
            repo_hint,
            sandbox: None,
            lost: None,
            session: None,
            restore: None,
            tools_seen: (0, Vec::new()),
        };
        repl.rebuild_sandbox().await?;
        if let Some(cfg) = session {
            repl.hydrate(cfg).await?;
        }
        Ok(repl)
    }

    /// The pipeline every call of this context goes through.
    pub fn dispatcher(&self) -> &Arc<Dispatcher> {
        &self.dispatcher
    }

    /// Peak linear memory the current guest instance asked for, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.sandbox.as_ref().map(|s| s.peak_memory()).unwrap_or(0)
    }

    /// The limits of this context.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn sandbox_options(&self) -> SandboxOptions {
        SandboxOptions {
            js_memory_limit: self.limits.js_memory,
            js_stack_limit: self.limits.js_stack,
            tools: self.dispatcher.bindings(),
            handler: Arc::new(self.dispatcher.clone()),
            ambient: self.ambient.clone(),
            repo_hint: self.repo_hint.clone(),
        }
    }

    /// Tools the script registered with `registerTool`.
    pub fn registered_tools(&self) -> Vec<RegisteredTool> {
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
        self.sandbox = Some(Sandbox::new(&self.engine, self.sandbox_options()).await?);
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
    /// bare name). It passes the pipeline like any call — schema, isolation
    /// latch, PreToolUse hooks, permission (registered tools always ask),
    /// events, a record — then the handler runs in the guest realm as an
    /// evaluation of its own (recorded, so replay restores what it did), and
    /// PostToolUse hooks see its result (a blocking one withholds it).
    pub async fn call_registered(
        &mut self,
        name: &str,
        input: serde_json::Value,
        opts: EvalOptions,
    ) -> Result<EvalResult, ReplError> {
        let name = name.strip_prefix(REGISTERED_PREFIX).unwrap_or(name);
        let tool = self
            .registered_tools()
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ReplError::InvalidInput(format!("no registered tool named {name:?}")))?;
        let call = FrontCall {
            tool: format!("{REGISTERED_PREFIX}{name}"),
            input,
            schema: tool.input_schema.clone(),
            default: FrontDefault::AlwaysAsk(format!("Execute registered tool \"{name}\"")),
        };
        let admission = match self.dispatcher.admit(call).await {
            Ok(a) => a,
            Err(refusal) => {
                let js_name = match refusal.failure.kind {
                    crate::runtime::FailureKind::InvalidInput => "ToolInputError",
                    _ => "PermissionDenied",
                };
                let mut r = EvalResult::refused(js_name, refusal.failure.message);
                push_warnings(&mut r, &refusal.warnings);
                r.calls.push(refusal.record);
                return Ok(r);
            }
        };
        let code = format!(
            "await __wrepl_invoke_registered({}, {})",
            serde_json::Value::String(name.to_string()),
            admission.input()
        );
        let mut result = match self.eval(&code, opts).await {
            Ok(r) => r,
            Err(e) => {
                // The call still ends in the pipeline (its error event and hooks).
                self.dispatcher.settle(admission, Err(e.to_string())).await;
                return Err(e);
            }
        };
        let outcome = match &result.error {
            Some(e) => Err(format!("{}: {}", e.name, e.message)),
            None => Ok((result.result.clone().unwrap_or(serde_json::Value::Null), result.text.clone())),
        };
        let settled = self.dispatcher.settle(admission, outcome).await;
        push_warnings(&mut result, &settled.warnings);
        result.calls.push(settled.record);
        if let Some(reason) = settled.blocked {
            result.withhold(&format!("{REGISTERED_PREFIX}{name}"), &reason);
        }
        Ok(result)
    }

    /// What resuming the session found (`None` without a session).
    pub fn restore_report(&self) -> Option<&RestoreReport> {
        self.restore.as_ref()
    }

    /// Replay the session's recorded blocks (hydration `resume`): every
    /// capability is answered from the log, so no tool runs again.
    ///
    /// First the session's single-writer lease is taken (a live writer
    /// elsewhere makes this fail, or wait), then the whole log is verified:
    /// a broken chain or head is never replayed.
    async fn hydrate(&mut self, cfg: SessionConfig) -> Result<(), ReplError> {
        let mut report = RestoreReport::default();
        let (lease, taken) = {
            let (store, name, wait) = (cfg.store.clone(), cfg.name.clone(), cfg.wait);
            match tokio::task::spawn_blocking(move || Lease::acquire(store, &name, wait)).await {
                Ok(r) => r?,
                Err(e) => return Err(ReplError::Session(StoreError::Io(std::io::Error::other(e.to_string())))),
            }
        };
        let takeover = match taken {
            LeaseTaken::TakenOver { holder, reason } => {
                report.notes.push(format!("took the session over from a stale writer ({holder}: {reason})"));
                Some(format!("{holder}: {reason}"))
            }
            LeaseTaken::Free => None,
        };
        if let Err(tampered) = verified(&*cfg.store, &cfg.name) {
            let ReplError::Tampered { seq, reason, .. } = &tampered else { return Err(tampered) };
            match cfg.on_tamper {
                OnTamper::Refuse => return Err(tampered),
                OnTamper::Fresh => {
                    let aside = cfg.store.quarantine(&cfg.name)?;
                    report.notes.push(format!(
                        "the session's log failed verification at event {seq} ({reason}); it was moved aside as {aside:?} and the session starts fresh: nothing was replayed"
                    ));
                }
            }
        }
        let events = cfg.store.load(&cfg.name)?;
        if let Some(previous) = takeover {
            // Recorded once the log is known to be intact (or was set aside).
            let block = events.last().map_or(0, |e| e.block);
            cfg.store.append_leased(&cfg.name, lease.owner_id(), &[(block, Event::Takeover { previous })])?;
        }
        let continued: Vec<u64> = events
            .iter()
            .filter_map(|e| match e.event {
                Event::Continues { block } => Some(block),
                _ => None,
            })
            .collect();
        let plan = player::plan(events, Duration::from_millis(MAX_TIMEOUT_MS));
        for b in plan.suspended.iter().filter(|b| !continued.contains(b)) {
            report.notes.push(format!(
                "block {b} stopped to wait for the client's input and has not been continued; it was not \
                 replayed (calls it made before stopping did run)"
            ));
        }
        for mut block in plan.blocks {
            let tape = std::mem::take(&mut block.tape);
            let (result, observation) = self.run_block(&block.code, block.budget, EvalOptions::default(), tape).await?;
            let stack = result.error.as_ref().map(|e| e.stack.clone()).unwrap_or_default();
            report.judge(block, Replayed { threw: result.error.is_some(), stack, observation });
        }
        report.summarize();
        let next_block = plan.next_block;
        let recorder = Arc::new(SessionRecorder::leased(cfg.store.clone(), cfg.name.clone(), lease));
        self.session = Some(ActiveSession {
            recorder,
            store: cfg.store.clone(),
            name: cfg.name.clone(),
            next_block,
            boundary: cfg.boundary,
            released_head: None,
        });
        self.restore = Some(report);
        Ok(())
    }

    /// Evaluate `code` in this context.
    ///
    /// With [`EvalOptions::continues`], the suspended block is continued
    /// instead (see [`Resumption`]); `code` must be that block's code.
    pub async fn eval(&mut self, code: &str, mut opts: EvalOptions) -> Result<EvalResult, ReplError> {
        match opts.continues.take() {
            Some(r) => self.continue_block(code, r, opts).await,
            None => self.eval_block(code, opts, None).await,
        }
    }

    /// The number of the newest block recorded in this context's session.
    pub fn last_block(&self) -> Option<u64> {
        self.session.as_ref().and_then(|s| s.next_block.checked_sub(1))
    }

    /// Give the session's lease back between calls (a shared store: any
    /// server may serve the next one). Nothing can be recorded until
    /// [`Repl::reacquire_lease`] takes it again.
    pub fn release_lease(&mut self) -> Result<(), ReplError> {
        let Some(sess) = self.session.as_mut() else { return Ok(()) };
        sess.released_head = Some(sess.recorder.release()?.unwrap_or_default());
        Ok(())
    }

    /// Take the lease back (waiting up to `wait` for another writer). True
    /// when the log is as this context left it, so the live context is
    /// current; false when another writer extended the log (or took the
    /// lease over from a dead one): then the context must be rebuilt from
    /// the log (drop it and build it again).
    pub async fn reacquire_lease(&mut self, wait: Option<Duration>) -> Result<bool, ReplError> {
        let Some(sess) = self.session.as_mut() else { return Ok(true) };
        let Some(left) = sess.released_head.clone() else { return Ok(true) };
        let (store, name) = (sess.store.clone(), sess.name.clone());
        let (lease, taken, head) =
            match tokio::task::spawn_blocking(move || Lease::acquire_with_head(store, &name, wait)).await {
                Ok(r) => r?,
                Err(e) => return Err(ReplError::Session(StoreError::Io(std::io::Error::other(e.to_string())))),
            };
        let head = head.map(|h| h.hash).unwrap_or_default();
        sess.recorder.hold(lease);
        sess.released_head = None;
        Ok(matches!(taken, LeaseTaken::Free) && head == left)
    }

    /// The session this context records into, when it records.
    pub fn session_name(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.name.as_str())
    }

    /// Continue suspended block `block` of this context's session: its
    /// code is evaluated again as a new block, every boundary event up to
    /// the suspension answered from the log (nothing that ran runs again),
    /// except the calls that waited for input (`waiting`, which must be the
    /// ones the log names), which run now; then live. The context must be
    /// in the state the block started from: hydrated from the log, which
    /// skips suspended blocks.
    async fn continue_block(&mut self, code: &str, r: Resumption, opts: EvalOptions) -> Result<EvalResult, ReplError> {
        let Resumption { block, waiting } = r;
        let Some(sess) = &self.session else {
            return Err(ReplError::InvalidInput("this context records no session; nothing can be continued".into()));
        };
        if sess.next_block <= block {
            return Err(ReplError::InvalidInput(format!("block {block} is not in this context's session")));
        }
        let events = sess.store.load(&sess.name)?;
        if events.iter().any(|e| matches!(&e.event, Event::Continues { block: b } if *b == block)) {
            return Err(ReplError::InvalidInput(format!("block {block} was already continued")));
        }
        let Some((logged, prefix, calls)) = player::suspended_block(&events, block) else {
            return Err(ReplError::InvalidInput(format!("block {block} is not a suspended block of this session")));
        };
        if logged != code {
            return Err(ReplError::InvalidInput(format!(
                "the code differs from the code of suspended block {block}; a continuation runs the same code"
            )));
        }
        if calls != waiting {
            return Err(ReplError::InvalidInput(format!("block {block} waits on call(s) {calls:?}, not {waiting:?}")));
        }
        self.eval_block(code, opts, Some((block, prefix, calls))).await
    }

    async fn eval_block(
        &mut self,
        code: &str,
        opts: EvalOptions,
        continues: Option<(u64, Vec<Event>, Vec<u32>)>,
    ) -> Result<EvalResult, ReplError> {
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
            if let Some((block, ..)) = &continues {
                let _ = rec.record(Event::Continues { block: *block }, false);
            }
        }
        let tape = match (&recorder, continues) {
            (Some(r), Some((_, prefix, live_calls))) => {
                Tape::Continue(crate::runtime::Continuation { prefix, live_calls, recorder: r.clone() })
            }
            (Some(r), None) => Tape::Record(r.clone()),
            (None, _) => Tape::Off,
        };
        let waiting = opts.waiting.clone();
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
                .map(|t| format!("{REGISTERED_PREFIX}{}", t.name))
                .collect();
        }
        let waiting: Vec<u32> =
            waiting.map(|w| w.lock().unwrap_or_else(|p| p.into_inner()).iter().copied().collect()).unwrap_or_default();
        if let (Some(rec), Some(sess)) = (&recorder, self.session.as_mut()) {
            if !waiting.is_empty() {
                if let Err(e) = rec.record(Event::Suspended { calls: waiting.clone() }, false) {
                    result.stderr.push_str(&format!("[wrepl] warning: {e}\n"));
                }
            }
            let end = Event::End {
                threw: result.error.is_some(),
                error: result.error.as_ref().map(|e| format!("{}: {}", e.name, e.message)),
                stopped: result.timed_out || result.error.as_ref().is_some_and(|e| e.name == "AbortError"),
            };
            if let Err(e) = rec.record(end, true) {
                result.stderr.push_str(&format!("[wrepl] warning: {e}\n"));
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
        let script = match script::prepare(code, &self.limits.script) {
            Ok(s) => s,
            Err(rejected) => return Ok((EvalResult::refused(rejected.js_name(), rejected.to_string()), None)),
        };
        self.dispatcher.begin_eval();
        let request = EvalRequest {
            script,
            budget: Budget { script: timeout, wall: self.limits.hard_wall },
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
        let mut result = self.assemble_result(report, timeout);
        if let Some(note) = poisoned_note {
            result.stderr.insert_str(0, &format!("[wrepl] note: {note}\n"));
            result.context_reset = Some(note);
        }
        let calls = self.dispatcher.finish_eval();
        push_warnings(&mut result, &calls.warnings);
        result.calls = calls.records;
        result.media = calls.media;
        Ok((result, replay))
    }

    fn assemble_result(&mut self, report: EvalReport, timeout: Duration) -> EvalResult {
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
                Fault::Unresponsive(r) => (stop_error_name(*r), stop_message(*r, timeout, &self.limits, true)),
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
                message: stop_message(r, timeout, &self.limits, false),
                stack: String::new(),
            })
        } else {
            // The error's parts are capped like results (same cap, same marker).
            error.map(|e| ScriptError {
                name: cap_text(e.name, self.limits.text_cap),
                message: cap_text(e.message, self.limits.text_cap),
                stack: cap_text(e.stack, self.limits.text_cap),
            })
        };
        let result = value_json.as_deref().and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok());
        let text_chars = if error.is_some() { 0 } else { text.chars().count() };
        EvalResult {
            result: if error.is_some() { None } else { result },
            text: if error.is_some() { String::new() } else { cap_text(text, self.limits.text_cap) },
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
        }
    }
}

fn stop_error_name(r: StopReason) -> &'static str {
    match r {
        StopReason::Cancelled => "AbortError",
        _ => "TimeoutError",
    }
}

fn stop_message(r: StopReason, timeout: Duration, o: &Limits, killed: bool) -> String {
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

fn push_warnings(r: &mut EvalResult, warnings: &[String]) {
    for w in warnings {
        r.stderr.push_str(&format!("[wrepl] {w}\n"));
    }
}

impl EvalResult {
    /// Replace the outcome with an error saying a PostToolUse hook withheld it.
    fn withhold(&mut self, tool: &str, reason: &str) {
        self.result = None;
        self.text = String::new();
        self.text_chars = 0;
        self.error = Some(ScriptError {
            name: "ResultWithheld".into(),
            message: format!("the result of {tool} was withheld by a PostToolUse hook: {reason}"),
            stack: String::new(),
        });
    }

    fn refused(name: &str, message: String) -> Self {
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
}
