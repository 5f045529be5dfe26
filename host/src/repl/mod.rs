//! The embeddable REPL: one persistent JavaScript context, evaluations with
//! budgets, result assembly and caps. The CLI and the MCP server are thin
//! front ends over it; [`Repl::builder`] wires one.

mod builder;
mod evaluation;
mod session;

use std::sync::Arc;

pub use crate::text::DEFAULT_TEXT_CAP;
pub use builder::{Limits, ReplBuilder};
pub use evaluation::{EvalOptions, EvalResult, Evaluation, Resumption};
pub(crate) use session::verified;
pub use session::{OnTamper, SessionConfig};

pub use crate::replay::player::RestoreReport;

use crate::budget::BudgetError;
use crate::call::{Shorthand, REGISTERED_PREFIX, SHORTHANDS};
use crate::pipeline::dispatcher::{Dispatcher, PipelineError};
use crate::pipeline::front::{FrontCall, FrontDefault};
use crate::replay::log::Event;
use crate::replay::store::StoreError;
use crate::runtime::{
    Ambient, EvalRequest, Fault, RegisteredTool, RuntimeError, Sandbox, SandboxEngine, SandboxOptions, ToolBinding,
};
use crate::runtime::{Recorder, ReplayObservation, Tape};
use crate::script;
use crate::tools::ToolError;
use evaluation::push_warnings;
use session::ActiveSession;

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
    /// A snapshot asked for could not be taken or stored (the log is
    /// complete without it: the context comes back by replay).
    #[error("snapshot: {0}")]
    Snapshot(String),
}

impl From<BudgetError> for ReplError {
    fn from(e: BudgetError) -> Self {
        ReplError::InvalidInput(e.to_string())
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
    /// The configured modules' digests, for the imports the transform
    /// rewrites (`None`: no modules; import syntax is refused).
    modules: Option<Arc<dyn script::ModuleDigests>>,
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
        modules: Option<Arc<dyn script::ModuleDigests>>,
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
            modules,
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
        let bindings = self.dispatcher.bindings();
        SandboxOptions {
            js_memory_limit: self.limits.js_memory,
            js_stack_limit: self.limits.js_stack,
            shorthands: shorthands_for(&bindings),
            tools: bindings,
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

    /// A model's call of a registered tool (its wire name, with
    /// [`REGISTERED_PREFIX`], or the bare name). It passes the pipeline like any call — schema, isolation
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
            trace: None,
        };
        let admission = match self.dispatcher.admit(call).await {
            Ok(a) => a,
            Err(refusal) => {
                let js_name = match refusal.failure.kind {
                    crate::call::FailureKind::InvalidInput => "ToolInputError",
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

    /// Evaluate `code` in this context.
    ///
    /// With [`EvalOptions::continues`], the suspended block is continued
    /// instead (see [`Resumption`]); `code` must be that block's code.
    pub async fn eval(&mut self, code: &str, mut opts: EvalOptions) -> Result<EvalResult, ReplError> {
        let continues = opts.continues.take();
        let ev = Evaluation::new(code, &opts, &self.limits)?;
        match continues {
            Some(r) => self.continue_block(ev, r).await,
            None => self.run(ev).await,
        }
    }

    /// Run one [`Evaluation`] in this context (recorded, when the context
    /// records a session).
    pub async fn run(&mut self, ev: Evaluation) -> Result<EvalResult, ReplError> {
        self.eval_block(ev, None).await
    }

    async fn eval_block(
        &mut self,
        ev: Evaluation,
        continues: Option<(u64, Vec<Event>, Vec<u32>)>,
    ) -> Result<EvalResult, ReplError> {
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
            let _ = rec
                .record(Event::Begin { code: ev.code.clone(), boundary: sess.boundary.clone(), view: ev.view }, false);
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
        let waiting = ev.waiting.clone();
        // The registry is only copied when its revision moved.
        self.refresh_tools_seen();
        let (mut result, _) = self.run_block(&ev, tape).await?;
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
                cost: Some(result.cost.clone()),
            };
            // The end is buffered here, in order, and the block counted
            // before anything is awaited: an evaluation dropped while its
            // commit runs cannot leave the next block's events ahead of
            // this end, nor a second block under this number. The events
            // are then committed on the blocking pool: while this
            // evaluation waits for its commit, the worker runs other
            // contexts, whose commits join the same group (one transaction
            // and one fsync for all of them). The evaluation is answered
            // only after the commit.
            let buffered = rec.record(end, false);
            sess.next_block += 1;
            let written = match buffered {
                Err(e) => Err(e),
                Ok(()) => {
                    let r = rec.clone();
                    tokio::task::spawn_blocking(move || r.flush()).await.unwrap_or_else(|e| {
                        Err(crate::runtime::RecordError::Storage(Box::new(std::io::Error::other(format!(
                            "the commit of the block's events stopped: {e}"
                        )))))
                    })
                }
            };
            if let Err(e) = written {
                result.stderr.push_str(&format!("[wrepl] warning: {e}\n"));
            }
        }
        // A block that stopped for input ran only in part: replay skips it,
        // so its state is not one a snapshot may hold.
        if recorder.is_some() && waiting.is_empty() {
            if let Err(why) = self.snapshot_if_due(session::block_cost(result.script_ms)).await {
                result.stderr.push_str(&format!("[wrepl] warning: {why}\n"));
            }
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
        ev: &Evaluation,
        tape: Tape,
    ) -> Result<(EvalResult, Option<ReplayObservation>), ReplError> {
        self.ensure_sandbox().await?;
        let script = match script::prepare_with(&ev.code, &self.limits.script, self.modules.as_ref()) {
            Ok(s) => s,
            Err(rejected) => return Ok((EvalResult::refused(rejected.js_name(), rejected.to_string()), None)),
        };
        self.dispatcher.begin_eval(&ev.cancel);
        // A replayed block ran before: its spans were exported then.
        let replaying = matches!(tape, Tape::Replay(_));
        let trace = if replaying { None } else { crate::telemetry::EvalTrace::for_evaluation(ev.trace.as_ref()) };
        self.dispatcher.set_trace(trace.clone());
        let started_at = std::time::SystemTime::now();
        let request =
            EvalRequest { script, budget: ev.budget, fuel: ev.fuel, cancel: ev.cancel.clone(), tape, view: ev.view };
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
        let mut result = self.assemble_result(report, ev);
        if let Some(note) = poisoned_note {
            result.stderr.insert_str(0, &format!("[wrepl] note: {note}\n"));
            result.context_reset = Some(note);
        }
        let calls = self.dispatcher.finish_eval();
        if let Some(t) = trace.as_ref().filter(|_| crate::telemetry::enabled()) {
            let eval = crate::telemetry::EvalSpan {
                started: started_at,
                wall: std::time::Duration::from_secs_f64(result.wall_ms.max(0.0) / 1e3),
                error: result.error.as_ref().map(|e| e.name.as_str()),
                guest_cpu_us: result.cost.guest_cpu_us,
                session: self.session.as_ref().map(|s| s.name.as_str()),
                replayed: false,
                mcp_tool: ev.mcp_tool.as_deref(),
            };
            crate::telemetry::export_evaluation(t, &eval, &calls.spans);
        }
        push_warnings(&mut result, &calls.warnings);
        result.calls = calls.records;
        result.media = calls.media;
        Ok((result, replay))
    }
}

/// The shorthands whose tool is bound, in [`SHORTHANDS`] order.
fn shorthands_for(bindings: &[ToolBinding]) -> Vec<Shorthand> {
    SHORTHANDS.iter().filter(|s| bindings.iter().any(|b| b.name == s.tool)).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn every_shorthand_names_a_builtin_tool() {
        let names: Vec<String> = crate::tools::builtin_tools().iter().map(|t| t.name().to_string()).collect();
        for s in SHORTHANDS {
            assert!(names.iter().any(|n| n == s.tool), "{} calls {}, which is no built-in tool", s.global, s.tool);
        }
        // Only bound tools get their shorthands.
        let bound = |name: &str| ToolBinding { name: name.into(), global: name.into() };
        let got: Vec<&str> = shorthands_for(&[bound("Read"), bound("Grep")]).iter().map(|s| s.global).collect();
        assert_eq!(got, ["cat", "rg", "rgf"]);
    }

    #[test]
    fn timeouts_validate_and_clamp() {
        let parse = |v: Option<&serde_json::Value>| crate::budget::Budget::from_json(v).map_err(ReplError::from);
        assert_eq!(parse(None).unwrap(), Duration::from_millis(30_000));
        assert_eq!(parse(Some(&json!(1500))).unwrap(), Duration::from_millis(1500));
        assert_eq!(parse(Some(&json!(10_000_000))).unwrap(), Duration::from_millis(600_000));
        for bad in [json!(0), json!(-5), json!("100"), json!(true), json!({})] {
            assert!(matches!(parse(Some(&bad)), Err(ReplError::InvalidInput(_))), "{bad}");
        }
        let opts = |ms| EvalOptions { timeout: Some(Duration::from_millis(ms)), ..EvalOptions::default() };
        let limits = Limits::default();
        assert!(matches!(Evaluation::new("1", &opts(0), &limits), Err(ReplError::InvalidInput(_))));
        assert_eq!(Evaluation::new("1", &opts(9_999_999), &limits).unwrap().budget.script, Duration::from_secs(600));
    }
}
