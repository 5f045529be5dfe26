//! The one dispatch point every inner call goes through, stage by stage:
//! schema validation → isolation latch → PreToolUse hooks → permission →
//! execution with native timeout and watchdog → output validation →
//! PostToolUse / PostToolUseFailure hooks → progress events and a record.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::events::{EventSink, Phase, ProgressEvent};
use super::hooks::{HookContext, HookEvent, HookRunner};
use super::latch::IsolationLatch;
use super::permissions::{Decision, PermissionRequest, PermissionRules, RuleKinds};
use super::settings::{Settings, SettingsError};

pub use super::gate::PipelineError;
use super::gate::{compile, Gate};
pub use super::records::{CallRecord, EvalCalls, RecordJson, MAX_IMAGES, MAX_PDFS};
use super::records::{Finished, JsonText};
pub use super::stages::watchdog_for;
use super::stages::{run_with_watchdog, tool_failure, validate};
use crate::call::{fingerprint, Call, CallBudget, CallFailure, FailureKind, Origin};
use crate::ids;
use crate::runtime::{CallFuture, CallHandler, ToolBinding};
use crate::tools::{Media, ProgressFn, Tool, ToolContext, ToolOutput, ToolProgress, Workspace};

/// Asked when a permission decision is `ask`.
pub trait Approver: Send + Sync + 'static {
    /// Decide; `true` allows the call.
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> futures_util::future::BoxFuture<'static, bool>;
}

pub(super) struct Registered {
    tool: Arc<dyn Tool>,
    fingerprint: Arc<str>,
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

/// What a call leaves besides its outcome: hook warnings, and the input
/// that ran (its text written before the tool took it).
#[derive(Default)]
struct Trail {
    warnings: Vec<String>,
    ran: Option<JsonText>,
    /// What the PostToolUse (or PostToolUseFailure) hooks said, when any
    /// ran: `ok`, `block` (feedback for the model) or `stop`.
    post_hook: Option<&'static str>,
}

struct Scope {
    cwd: PathBuf,
    /// The running evaluation's own token: a hook's `"continue": false`
    /// cancels it (the evaluation stops).
    eval: CancellationToken,
    /// The calls' parent token (a child of `eval`, cancelled when the
    /// evaluation ends).
    cancel: CancellationToken,
    calls: EvalCalls,
    /// The evaluation's trace, when it has one: each call gets a span of it.
    trace: Option<crate::telemetry::EvalTrace>,
}

/// Settings of a [`Dispatcher`].
pub(crate) struct PipelineConfig {
    /// Permissions, hooks, isolation.
    pub settings: Settings,
    /// Extra allow rules (e.g. from `--allow`).
    pub allow: Vec<String>,
    /// Extra deny rules (e.g. from `--deny`).
    pub deny: Vec<String>,
    /// Workspace roots.
    pub workspace: Arc<Workspace>,
    /// Who answers `ask` (none: `ask` resolves to deny).
    pub approver: Option<Arc<dyn Approver>>,
    /// Progress events go here.
    pub events: Option<EventSink>,
    /// Session id passed to hooks.
    pub session_id: String,
}

/// The inner-call pipeline. Serves guest calls through [`CallHandler`], and
/// the model's calls of wrepl's own tools through [`Dispatcher::admit`] /
/// [`Dispatcher::settle`].
///
/// The compiled policy (tools and their validators, rules, hooks) is shared
/// by every context built from one [`crate::ReplBuilder`]; the per-context
/// state (isolation latch, working directory, the evaluation's records) is
/// each dispatcher's own.
pub struct Dispatcher {
    pub(super) p: Arc<Policy>,
    pub(super) latch: IsolationLatch,
    serial: Arc<tokio::sync::Mutex<()>>,
    scope: Arc<Mutex<Scope>>,
    /// This context's background commands (ended when it is dropped).
    tasks: Arc<crate::tools::tasks::BackgroundTasks>,
}

/// The immutable part of a pipeline (but for the grants a person adds at
/// the terminal).
pub(super) struct Policy {
    pub(super) tools: BTreeMap<String, Registered>,
    pub(super) rules: PermissionRules,
    /// Allow rules granted while running ([`Dispatcher::grant`]): they
    /// answer what the rules leave to a question, never what they deny.
    pub(super) granted: std::sync::RwLock<PermissionRules>,
    pub(super) hooks: HookRunner,
    pub(super) workspace: Arc<Workspace>,
    pub(super) approver: Option<Arc<dyn Approver>>,
    pub(super) events: Option<EventSink>,
    pub(super) session_id: String,
    pub(super) confinement: crate::process::confine::Confinement,
    /// Front calls' compiled schemas.
    pub(super) front_validators: super::gate::FrontValidators,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").field("tools", &self.p.tools.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// Build a dispatcher over `tools` (schemas compiled once).
    pub(crate) fn new(config: PipelineConfig, tools: Vec<Arc<dyn Tool>>) -> Result<Self, PipelineError> {
        let mut map = BTreeMap::new();
        for tool in tools {
            let name = tool.name().to_string();
            if map.contains_key(&name) {
                return Err(PipelineError::Duplicate(name));
            }
            let input = compile(&name, &tool.input_schema())?;
            let output = tool.output_schema().map(|s| compile(&name, &s)).transpose()?;
            let fingerprint = fingerprint(&tool.input_schema()).into();
            map.insert(name, Registered { tool, fingerprint, input, output });
        }
        let kinds = RuleKinds::of(map.values().map(|r| &r.tool));
        let mut rules = PermissionRules::from_settings_for(&config.settings.permissions, kinds.clone())?;
        for r in &config.allow {
            rules.add_allow(r)?;
        }
        for r in &config.deny {
            rules.add_deny(r)?;
        }
        let hooks = HookRunner::new(config.settings.hooks.clone(), config.workspace.default_cwd())?
            .with_env(config.settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let confinement = crate::process::confine::Confinement {
            mode: config.settings.confine,
            allow_net: config.settings.allow_net,
        };
        let latch = IsolationLatch::new(&config.settings.isolation)?;
        let policy = Policy {
            tools: map,
            rules,
            granted: std::sync::RwLock::new(PermissionRules::with_kinds(kinds)),
            hooks,
            workspace: config.workspace,
            approver: config.approver,
            events: config.events,
            session_id: config.session_id,
            confinement,
            front_validators: Default::default(),
        };
        Ok(Self::with_state(Arc::new(policy), latch))
    }

    fn with_state(p: Arc<Policy>, latch: IsolationLatch) -> Self {
        let cwd = p.workspace.default_cwd().to_path_buf();
        Self {
            p,
            latch,
            serial: Arc::new(tokio::sync::Mutex::new(())),
            scope: Arc::new(Mutex::new(Scope {
                cwd,
                eval: CancellationToken::new(),
                cancel: CancellationToken::new(),
                calls: EvalCalls::default(),
                trace: None,
            })),
            tasks: Arc::default(),
        }
    }

    /// Allow `rule` (permission rule syntax, e.g. `Write(./src/**)`) for the
    /// rest of this dispatcher's life, and its siblings': what the rules
    /// would ask about and this rule covers is allowed; what they deny stays
    /// denied, and hooks still decide. For a person at a terminal (the
    /// REPL's `.allow`).
    pub fn grant(&self, rule: &str) -> Result<(), SettingsError> {
        self.p.granted.write().unwrap_or_else(|p| p.into_inner()).add_allow(rule)
    }

    /// The granted allow rule covering `req`, if any.
    pub(super) fn granted(&self, req: &PermissionRequest<'_>) -> Option<super::permissions::Matched> {
        let granted = self.p.granted.read().unwrap_or_else(|p| p.into_inner());
        if granted.is_empty() {
            return None;
        }
        granted.evaluate(req).filter(|m| m.decision == Decision::Allow)
    }

    /// A dispatcher with the same policy and fresh per-context state (an
    /// unlatched isolation latch, the default working directory): cheap, no
    /// schema is compiled again.
    pub(crate) fn sibling(&self) -> Self {
        Self::with_state(self.p.clone(), self.latch.fresh())
    }

    /// The globals the guest installs: one per tool, named like the tool
    /// (or as the tool asks, e.g. `chdir`'s internal `__wrepl_chdir`).
    pub fn bindings(&self) -> Vec<ToolBinding> {
        // Tool names that are not JavaScript identifiers (`mcp__srv__get-sum`)
        // get a global with every other character replaced by `_`, unless
        // that clashes with another tool's name or global.
        let mut used: std::collections::HashSet<String> = self.p.tools.keys().cloned().collect();
        let mut b = Vec::new();
        for (name, reg) in &self.p.tools {
            let global = if let Some(g) = reg.tool.global() {
                g.to_string()
            } else if is_js_identifier(name) {
                name.clone()
            } else {
                let g = js_global_for(name);
                if !is_js_identifier(&g) || !used.insert(g.clone()) {
                    continue;
                }
                g
            };
            b.push(ToolBinding { name: name.clone(), global });
        }
        b
    }

    /// The allow rules in force (the settings', the flags' and those
    /// granted since), as written.
    pub fn allow_rules(&self) -> Vec<String> {
        let mut rules = self.p.rules.allow_rules();
        rules.extend(self.p.granted.read().unwrap_or_else(|p| p.into_inner()).allow_rules());
        rules
    }

    /// The tools.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.p.tools.values().map(|r| &r.tool)
    }

    /// The workspace.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.p.workspace
    }

    /// Start an evaluation cancelled by `cancel`: the working directory is
    /// reset to the first root, and every call of the evaluation gets a
    /// share of its budget under `cancel` (a child token, also cancelled
    /// when the evaluation ends).
    pub(crate) fn begin_eval(&self, cancel: &CancellationToken) {
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        s.cwd = self.p.workspace.default_cwd().to_path_buf();
        s.eval = cancel.clone();
        s.cancel = cancel.child_token();
        s.calls = EvalCalls::default();
        s.trace = None;
    }

    /// The running evaluation's trace (its calls' spans continue it).
    pub(crate) fn set_trace(&self, trace: Option<crate::telemetry::EvalTrace>) {
        self.scope.lock().unwrap_or_else(|p| p.into_inner()).trace = trace;
    }

    /// A hook said `"continue": false`: stop the running evaluation (as a
    /// cancellation does; what completed is kept). Outside an evaluation
    /// (a front call being admitted) there is nothing to stop: the call is
    /// refused by its caller.
    pub(super) fn stop_evaluation(&self) {
        self.scope.lock().unwrap_or_else(|p| p.into_inner()).eval.cancel();
    }

    /// End an evaluation: stop what still runs and hand over the records.
    pub(crate) fn finish_eval(&self) -> EvalCalls {
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        s.cancel.cancel();
        let mut calls = std::mem::take(&mut s.calls);
        calls.close_warnings();
        calls
    }

    pub(super) fn emit(&self, id: &str, tool: &str, phase: Phase, message: Option<String>, started: Instant) {
        self.emit_event(id, tool, phase, message, None, started);
    }

    /// The `error` event of a call that failed with `kind`.
    pub(super) fn emit_error(&self, id: &str, tool: &str, message: String, kind: &'static str, started: Instant) {
        self.emit_event(id, tool, Phase::Error, Some(message), Some(kind), started);
    }

    fn emit_event(
        &self,
        id: &str,
        tool: &str,
        phase: Phase,
        message: Option<String>,
        failure: Option<&'static str>,
        started: Instant,
    ) {
        if let Some(sink) = &self.p.events {
            sink(&ProgressEvent {
                tool_use_id: id.to_string(),
                tool: tool.to_string(),
                phase,
                message,
                elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
                progress: None,
                failure,
            });
        }
    }

    /// Run one inner call through every stage. `Ok` is the JSON text the
    /// script receives.
    pub(crate) async fn dispatch(self: Arc<Self>, tool_name: String, input: Value) -> Result<String, CallFailure> {
        let started = Instant::now();
        let (cwd, cancel, trace) = {
            let s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
            (s.cwd.clone(), s.cancel.child_token(), s.trace.as_ref().map(|t| t.child()))
        };
        let (span, trace) = trace.unzip();
        let started_at = span.map(|_| std::time::SystemTime::now());
        let call = Call {
            id: ids::tool_use_id(),
            tool: tool_name,
            input,
            origin: Origin::Script,
            cwd,
            budget: CallBudget { started, cancel },
            trace,
            fingerprint: None,
            permission: None,
        };
        self.emit(&call.id, &call.tool, Phase::Start, None, started);
        // A call whose future is dropped before it settles (the evaluation
        // ended, was cancelled or stopped) still ends with an error event.
        let mut unfinished = Unfinished { d: &self, call, armed: true };
        let mut trail = Trail::default();
        let result = self.run_stages(&mut unfinished.call, &mut trail).await;
        unfinished.armed = false;
        // The input that ran, written before the tool took it; or the input
        // as admission left it, for a call that never ran.
        let input = trail.ran.unwrap_or_else(|| JsonText::of(&unfinished.call.input));
        let id = std::mem::take(&mut unfinished.call.id);
        let tool_name = std::mem::take(&mut unfinished.call.tool);
        let permission = unfinished.call.permission.take();
        drop(unfinished);
        let (warnings, post_hook) = (trail.warnings, trail.post_hook);
        let duration_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut scope = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        for w in warnings {
            scope.calls.push_warning(w);
        }
        if let (Some(span_id), Some(started_at)) = (span, started_at) {
            let (failure, bytes_out) = match &result {
                Ok(out) => (None, out.value.to_string().len() as u64),
                Err(f) => (Some(f.kind.as_str()), f.message.len() as u64),
            };
            scope.calls.spans.push(crate::telemetry::CallSpan {
                span_id,
                tool: tool_name.clone(),
                call_id: id.clone(),
                started: started_at,
                duration: started.elapsed(),
                failure,
                bytes_in: input.bytes() as u64,
                bytes_out,
                permission,
                post_hook,
            });
        }
        match result {
            Ok(out) => {
                self.emit(&id, &tool_name, Phase::Complete, None, started);
                let json = out.value.to_string();
                for m in out.media.iter().cloned() {
                    let (imgs, pdfs) = scope.calls.media.iter().fold((0, 0), |(i, p), m| match m {
                        Media::Image { .. } => (i + 1, p),
                        Media::Pdf { .. } => (i, p + 1),
                    });
                    let room = match m {
                        Media::Image { .. } => imgs < MAX_IMAGES,
                        Media::Pdf { .. } => pdfs < MAX_PDFS,
                    };
                    if room {
                        scope.calls.media.push(m);
                    } else {
                        scope.calls.push_warning(format!(
                            "a media attachment from {tool_name} was dropped (at most {MAX_IMAGES} images and {MAX_PDFS} PDFs per evaluation)"
                        ));
                    }
                }
                if let Some(dir) = out.cwd {
                    scope.cwd = dir;
                }
                let output = JsonText::of_text(&json);
                scope.calls.push_record(Finished {
                    id,
                    tool: tool_name,
                    input,
                    ok: true,
                    output,
                    text: out.text,
                    duration_ms,
                });
                Ok(json)
            }
            Err(f) => {
                self.emit_error(&id, &tool_name, f.message.clone(), f.kind.as_str(), started);
                scope.calls.push_record(Finished::failure(id, tool_name, input, &f, duration_ms));
                Err(f)
            }
        }
    }

    /// Run one call through every stage outside any evaluation, and return
    /// its outcome (the JSON text the script would receive) with what it
    /// left behind (its record, media, warnings). For tooling and tests, on
    /// a dispatcher of its own ([`crate::ReplBuilder::dispatcher`]): it
    /// starts and ends an evaluation scope, so it must not be used on the
    /// dispatcher of a REPL that is evaluating.
    pub async fn call_once(self: &Arc<Self>, tool: &str, input: Value) -> (Result<String, CallFailure>, EvalCalls) {
        self.begin_eval(&CancellationToken::new());
        let result = self.clone().dispatch(tool.to_string(), input).await;
        (result, self.finish_eval())
    }

    /// Every stage of an inner call; what it leaves besides its outcome
    /// (hook warnings, the input that ran) goes to `trail`.
    async fn run_stages(&self, call: &mut Call, trail: &mut Trail) -> Result<ToolOutput, CallFailure> {
        let reg = self.p.tools.get(&call.tool).ok_or_else(|| {
            CallFailure::new(
                FailureKind::UnknownTool,
                format!("no tool named {:?} is available in this sandbox", call.tool),
            )
        })?;
        // 1-4. schema, latch, PreToolUse hooks, permission
        call.fingerprint = Some(reg.fingerprint.clone());
        self.admit_stages(call, &Gate::Tool { tool: &reg.tool, validator: &reg.input }, &mut trail.warnings).await?;
        let Call { id, tool, input, cwd, budget, trace, .. } = call;
        let (id, tool_name, started, warnings) = (id.as_str(), tool.as_str(), budget.started, &mut trail.warnings);
        let post_hook = &mut trail.post_hook;
        // 5. execute with the native timeout and the watchdog
        let tool = &reg.tool;
        let _serial = if tool.concurrency_safe(input) { None } else { Some(self.serial.clone().lock_owned().await) };
        self.emit(id, tool_name, Phase::Executing, None, started);
        let native = tool.native_timeout(input);
        let cancel = budget.cancel.clone();
        let ctx = ToolContext {
            workspace: self.p.workspace.clone(),
            cwd: cwd.clone(),
            cancel: cancel.clone(),
            timeout: native,
            progress: self.p.events.clone().map(|sink| {
                let (id, tool) = (id.to_string(), tool_name.to_string());
                let f: ProgressFn = Arc::new(move |p: ToolProgress| {
                    sink(&ProgressEvent {
                        tool_use_id: id.clone(),
                        tool: tool.clone(),
                        phase: Phase::Progress,
                        message: p.message,
                        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
                        progress: Some((p.progress, p.total)),
                        failure: None,
                    })
                });
                f
            }),
            confinement: self.p.confinement,
            trace: trace.clone(),
            tasks: self.tasks.clone(),
        };
        // The record's copy of the input is its text, written now; the tool
        // takes the value itself unless a post hook needs it afterwards.
        trail.ran = Some(JsonText::of(input));
        let post_hooks = self.p.hooks.has_hooks(HookEvent::PostToolUse, tool_name)
            || self.p.hooks.has_hooks(HookEvent::PostToolUseFailure, tool_name);
        let taken = if post_hooks { input.clone() } else { std::mem::take(input) };
        let outcome = run_with_watchdog(tool.call(taken, ctx), tool_name, native, &cancel).await;
        // 6. output validation, the working-directory effect, post hooks
        let hook_ctx =
            HookContext { session_id: &self.p.session_id, tool_name, tool_use_id: id, cwd, trace: trace.as_ref() };
        match outcome {
            Ok(mut out) => {
                if let Some(v) = &reg.output {
                    validate(tool_name, v, &out.value).map_err(|f| {
                        CallFailure::new(
                            FailureKind::InvalidOutput,
                            format!("{tool_name} returned output that violates its schema: {}", f.message),
                        )
                    })?;
                }
                if let Some(dir) = out.cwd.take() {
                    // Only a directory inside the roots becomes the working directory.
                    let text = dir.to_str().ok_or_else(|| {
                        CallFailure::new(FailureKind::PathEscape, "the new working directory is not valid UTF-8")
                    })?;
                    out.cwd = Some(self.p.workspace.resolve_dir(cwd, text).map_err(tool_failure)?.abs);
                }
                if self.p.hooks.has_hooks(HookEvent::PostToolUse, tool_name) {
                    let post = self.p.hooks.post_tool_use(&hook_ctx, input, &out.value).await;
                    *post_hook = Some(match (&post.stop, &post.block_reason) {
                        (Some(_), _) => "stop",
                        (None, Some(_)) => "block",
                        (None, None) => "ok",
                    });
                    warnings
                        .extend(post.warnings.into_iter().map(|w| format!("PostToolUse hook for {tool_name}: {w}")));
                    warnings.extend(
                        post.additional_context
                            .into_iter()
                            .map(|c| format!("PostToolUse hook context for {tool_name} ({id}): {c}")),
                    );
                    if let Some(r) = post.block_reason {
                        warnings.push(format!("PostToolUse hook feedback for {tool_name} ({id}): {r}"));
                    }
                    if let Some(reason) = post.stop {
                        return Err(self.hook_stop("PostToolUse", tool_name, id, &reason, warnings));
                    }
                }
                Ok(out)
            }
            Err(f) => {
                if self.p.hooks.has_hooks(HookEvent::PostToolUseFailure, tool_name) {
                    let post = self.p.hooks.post_tool_use_failure(&hook_ctx, input, &f.message).await;
                    *post_hook = Some(if post.stop.is_some() { "stop" } else { "ok" });
                    warnings.extend(
                        post.warnings.into_iter().map(|w| format!("PostToolUseFailure hook for {tool_name}: {w}")),
                    );
                    warnings.extend(
                        post.additional_context
                            .into_iter()
                            .map(|c| format!("PostToolUseFailure hook context for {tool_name} ({id}): {c}")),
                    );
                    if let Some(reason) = post.stop {
                        return Err(self.hook_stop("PostToolUseFailure", tool_name, id, &reason, warnings));
                    }
                }
                Err(f)
            }
        }
    }
}

impl Dispatcher {
    /// A hook of `event` said `"continue": false` at call `id` of `tool`:
    /// the evaluation stops, the stop is reported (a warning the output
    /// shows) and the call fails with why.
    pub(super) fn hook_stop(
        &self,
        event: &str,
        tool: &str,
        id: &str,
        reason: &str,
        warnings: &mut Vec<String>,
    ) -> CallFailure {
        self.stop_evaluation();
        let when = if event == "PreToolUse" { "before it ran" } else { "after it ran; its result is withheld" };
        warnings.push(format!("a {event} hook stopped the evaluation at {tool} ({id}), {when}: {reason}"));
        CallFailure::new(FailureKind::Denied, format!("a {event} hook stopped the evaluation at {tool}: {reason}"))
    }
}

/// The global a tool name gets when it is not an identifier itself: every
/// character outside `[A-Za-z0-9_$]` becomes `_` (`get-sum` → `get_sum`).
pub fn js_global_for(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect()
}

/// A valid JavaScript identifier (ASCII subset) that is not reserved.
pub fn is_js_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_ascii_alphabetic() || first == '_' || first == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !matches!(s, "eval" | "arguments" | "this" | "new" | "function" | "class" | "var" | "let" | "const")
}

/// Why a tool input the guest sent did not parse, in the script's terms.
/// The guest's `JSON.stringify` always writes JSON, so what fails here is a
/// lone UTF-16 surrogate (escaped as `\udXXX`) or nesting past the limit.
fn input_json_error(tool: &str, e: &serde_json::Error) -> String {
    let text = e.to_string();
    // serde_json names these "lone leading surrogate in hex escape",
    // "unexpected end of hex escape" (a high half not followed by a low one)
    // or "invalid unicode code point" (a low half alone).
    if ["surrogate", "hex escape", "unicode code point"].iter().any(|w| text.contains(w)) {
        format!(
            "the input of {tool} contains a lone surrogate (half of a UTF-16 pair, such as \"\\ud800\") at column {}: tool inputs must be valid Unicode text",
            e.column()
        )
    } else if text.contains("recursion limit") {
        format!("the input of {tool} nests more than 128 levels deep; tool inputs are limited to 128 levels")
    } else {
        format!("the input of {tool} is not valid JSON: {text}")
    }
}

impl CallHandler for Arc<Dispatcher> {
    fn start(&self, tool: &str, input: &str) -> Result<CallFuture, CallFailure> {
        let input: Value = serde_json::from_str(input)
            .map_err(|e| CallFailure::new(FailureKind::InvalidInput, input_json_error(tool, &e)))?;
        Ok(Box::pin(self.clone().dispatch(tool.to_string(), input)))
    }

    fn fingerprint(&self, tool: &str) -> String {
        self.p.tools.get(tool).map(|r| r.fingerprint.to_string()).unwrap_or_default()
    }

    fn durable_intent(&self, tool: &str, input: &str) -> bool {
        // Unknown tools and unreadable input: durable (the call is refused
        // anyway, and nothing is assumed of it).
        let Some(r) = self.p.tools.get(tool) else { return true };
        serde_json::from_str::<Value>(input).map_or(true, |v| !r.tool.read_only(&v))
    }

    fn check_schema(&self, schema: &Value) -> Result<(), String> {
        jsonschema::validator_for(schema).map(drop).map_err(|e| e.to_string())
    }
}

/// Emits a call's terminal `error` event (`aborted`) when its dispatch is
/// dropped before the call settled.
struct Unfinished<'a> {
    d: &'a Dispatcher,
    call: Call,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if self.armed {
            let message = "aborted: the evaluation ended, was cancelled or was stopped before the call finished";
            let c = &self.call;
            self.d.emit_error(&c.id, &c.tool, message.to_string(), FailureKind::Aborted.as_str(), c.budget.started);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_say_what_is_wrong() {
        let err = |json: &str| input_json_error("Write", &serde_json::from_str::<Value>(json).unwrap_err());
        for lone in [r#"{"content":"a\ud800b"}"#, r#"{"content":"a\ud800"}"#, r#"{"content":"\udc00"}"#] {
            let e = err(lone);
            assert!(e.contains("lone surrogate") && e.contains("Write"), "{lone}: {e}");
        }
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert!(err(&deep).contains("nests more than 128 levels"), "{}", err(&deep));
        assert!(err("{").contains("is not valid JSON: EOF"), "{}", err("{"));
    }

    #[test]
    fn identifiers() {
        assert!(is_js_identifier("Read"));
        assert!(is_js_identifier("mcp__srv__tool"));
        assert!(!is_js_identifier("mcp-srv"));
        assert!(!is_js_identifier("1a"));
        assert!(!is_js_identifier(""));
    }
}
