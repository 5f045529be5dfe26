//! The one dispatch point every inner call goes through, stage by stage:
//! schema validation → isolation latch → PreToolUse hooks → permission →
//! execution with native timeout and watchdog → output validation →
//! PostToolUse / PostToolUseFailure hooks → progress events and a record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::events::{EventSink, Phase, ProgressEvent};
use super::hooks::{HookContext, HookEvent, HookRunner};
use super::latch::IsolationLatch;
use super::permissions::{Decision, Matched, PermissionRequest, PermissionRules, RuleKinds};
use super::settings::{Settings, SettingsError};
use crate::ids;
use crate::runtime::{CallFailure, CallFuture, CallHandler, FailureKind, ToolBinding};
use crate::tools::{Media, ProgressFn, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolProgress, Workspace};

/// The hard limit no watchdog may reach (the REPL's wall clock ends such calls).
pub const HARD_LIMIT: Duration = Duration::from_secs(600);
/// Most images kept per evaluation.
pub const MAX_IMAGES: usize = 8;
/// Most PDFs kept per evaluation.
pub const MAX_PDFS: usize = 4;

/// Watchdog for a native timeout: `ceil(native × 1.5) + 5000` ms, or none
/// when that reaches the hard limit.
pub fn watchdog_for(native: Duration) -> Option<Duration> {
    let ms = (native.as_millis() as f64 * 1.5).ceil() as u64 + 5000;
    let w = Duration::from_millis(ms);
    (w < HARD_LIMIT).then_some(w)
}

/// Asked when a permission decision is `ask`.
pub trait Approver: Send + Sync + 'static {
    /// Decide; `true` allows the call.
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> futures_util::future::BoxFuture<'static, bool>;
}

/// Errors building a dispatcher.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The settings are invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// A tool's schema does not compile.
    #[error("the input schema of tool {tool} is invalid: {message}")]
    Schema {
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// Two tools share a name.
    #[error("two tools are named {0}")]
    Duplicate(String),
}

/// One completed (or refused) inner call, for the transcript and replay.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Tool-use id (`toolu_…`).
    pub id: String,
    /// Tool name.
    pub tool: String,
    /// The input that actually ran (after hook rewrites).
    pub input: Value,
    /// True when the call succeeded.
    pub ok: bool,
    /// The value the script received, or the error.
    pub output: Value,
    /// Text rendering (the tool_result content).
    pub text: String,
    /// Milliseconds from start to completion.
    pub duration_ms: f64,
}

/// What an evaluation's inner calls left behind.
#[derive(Debug, Clone, Default)]
pub struct EvalCalls {
    /// Completed and refused calls, in completion order.
    pub records: Vec<CallRecord>,
    /// Images and PDFs returned by tools (capped: 8 images, 4 PDFs).
    pub media: Vec<Media>,
    /// Warnings for the evaluation's stderr (hook problems, dropped media).
    pub warnings: Vec<String>,
    /// Bytes of output and text held by `records` so far.
    record_bytes: usize,
}

impl EvalCalls {
    fn push_record(&mut self, record: CallRecord, output_bytes: usize) {
        self.record_bytes += output_bytes + record.text.len();
        self.records.push(record);
    }
}

struct Registered {
    tool: Arc<dyn Tool>,
    fingerprint: String,
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

struct Scope {
    cwd: PathBuf,
    cancel: CancellationToken,
    calls: EvalCalls,
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

/// How a call the model makes of a tool wrepl serves itself is decided when
/// no rule or hook decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontDefault {
    /// Allowed (the `repl` tool itself: whoever started the server offered it).
    Allow,
    /// Always put to the approver with this question, even when an allow
    /// rule or hook matches (script-registered tools); deny rules and hooks
    /// still refuse first.
    AlwaysAsk(String),
}

/// A call the model makes of a tool wrepl serves itself (the MCP `repl`
/// tool, a script-registered tool): it passes the same stages as an inner
/// call, but runs outside the pipeline (in the guest), between
/// [`Dispatcher::admit`] and [`Dispatcher::settle`].
#[derive(Debug, Clone)]
pub struct FrontCall {
    /// The name the model called (`repl`, `eval_registered__<name>`).
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// The input's JSON Schema.
    pub schema: Value,
    /// What happens when no rule or hook decides.
    pub default: FrontDefault,
}

/// A front call that passed every stage up to execution.
#[derive(Debug)]
pub struct Admission {
    id: String,
    tool: String,
    input: Value,
    started: Instant,
    cwd: PathBuf,
    /// Hook warnings so far.
    pub warnings: Vec<String>,
}

impl Admission {
    /// The input to run (after PreToolUse rewrites).
    pub fn input(&self) -> &Value {
        &self.input
    }
    /// The call's `toolu_…` id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A front call refused before it ran.
#[derive(Debug)]
pub struct Refusal {
    /// Why.
    pub failure: CallFailure,
    /// Its record (input as given, the refusal as output).
    pub record: CallRecord,
    /// Hook warnings.
    pub warnings: Vec<String>,
}

/// A front call after its PostToolUse stage.
#[derive(Debug)]
pub struct Settlement {
    /// Its record.
    pub record: CallRecord,
    /// Set when a PostToolUse hook blocked the result (exit 2 / `decision:
    /// block`): the reason the result is withheld.
    pub blocked: Option<String>,
    /// Hook warnings.
    pub warnings: Vec<String>,
}

/// Which policy a call is checked under.
enum Gate<'a> {
    /// An inner call of a pipeline tool.
    Tool(&'a Registered),
    /// A front call.
    Front { validator: &'a jsonschema::Validator, default: &'a FrontDefault },
}

impl Gate<'_> {
    fn validator(&self) -> &jsonschema::Validator {
        match self {
            Gate::Tool(r) => &r.input,
            Gate::Front { validator, .. } => validator,
        }
    }
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
    p: Arc<Policy>,
    latch: IsolationLatch,
    serial: Arc<tokio::sync::Mutex<()>>,
    scope: Arc<Mutex<Scope>>,
}

/// The immutable part of a pipeline.
struct Policy {
    tools: BTreeMap<String, Registered>,
    rules: PermissionRules,
    hooks: HookRunner,
    workspace: Arc<Workspace>,
    approver: Option<Arc<dyn Approver>>,
    events: Option<EventSink>,
    session_id: String,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").field("tools", &self.p.tools.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

fn compile(tool: &str, schema: &Value) -> Result<jsonschema::Validator, PipelineError> {
    jsonschema::validator_for(schema).map_err(|e| PipelineError::Schema { tool: tool.into(), message: e.to_string() })
}

fn tool_failure(e: ToolError) -> CallFailure {
    let kind = match &e {
        ToolError::InvalidInput(_) => FailureKind::InvalidInput,
        ToolError::PathEscape(_) => FailureKind::PathEscape,
        ToolError::NotFound(_) => FailureKind::NotFound,
        ToolError::Io(_) => FailureKind::Io,
        ToolError::Timeout(_) => FailureKind::Timeout,
        ToolError::Cancelled(_) => FailureKind::Aborted,
        ToolError::Failed(_) => FailureKind::Failed,
    };
    CallFailure::new(kind, e.to_string())
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
            let fingerprint = crate::replay::store::fingerprint(&tool.input_schema());
            map.insert(name, Registered { tool, fingerprint, input, output });
        }
        let kinds = RuleKinds::of(map.values().map(|r| &r.tool));
        let mut rules = PermissionRules::from_settings_for(&config.settings.permissions, kinds)?;
        for r in &config.allow {
            rules.add_allow(r)?;
        }
        for r in &config.deny {
            rules.add_deny(r)?;
        }
        let hooks = HookRunner::new(config.settings.hooks.clone())?;
        let latch = IsolationLatch::new(&config.settings.isolation)?;
        let policy = Policy {
            tools: map,
            rules,
            hooks,
            workspace: config.workspace,
            approver: config.approver,
            events: config.events,
            session_id: config.session_id,
        };
        Ok(Self::with_state(Arc::new(policy), latch))
    }

    fn with_state(p: Arc<Policy>, latch: IsolationLatch) -> Self {
        let cwd = p.workspace.default_cwd().to_path_buf();
        Self {
            p,
            latch,
            serial: Arc::new(tokio::sync::Mutex::new(())),
            scope: Arc::new(Mutex::new(Scope { cwd, cancel: CancellationToken::new(), calls: EvalCalls::default() })),
        }
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

    /// The tools.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.p.tools.values().map(|r| &r.tool)
    }

    /// The workspace.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.p.workspace
    }

    /// Start an evaluation: the working directory is reset to the first root.
    pub(crate) fn begin_eval(&self) {
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        s.cwd = self.p.workspace.default_cwd().to_path_buf();
        s.cancel = CancellationToken::new();
        s.calls = EvalCalls::default();
    }

    /// End an evaluation: stop what still runs and hand over the records.
    pub(crate) fn finish_eval(&self) -> EvalCalls {
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        s.cancel.cancel();
        std::mem::take(&mut s.calls)
    }

    fn emit(&self, id: &str, tool: &str, phase: Phase, message: Option<String>, started: Instant) {
        if let Some(sink) = &self.p.events {
            sink(&ProgressEvent {
                tool_use_id: id.to_string(),
                tool: tool.to_string(),
                phase,
                message,
                elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
                progress: None,
            });
        }
    }

    /// Run one inner call through every stage. `Ok` is the JSON text the
    /// script receives.
    pub(crate) async fn dispatch(self: Arc<Self>, tool_name: String, mut input: Value) -> Result<String, CallFailure> {
        let id = ids::tool_use_id();
        let started = Instant::now();
        self.emit(&id, &tool_name, Phase::Start, None, started);
        let (cwd, eval_cancel) = {
            let s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
            (s.cwd.clone(), s.cancel.clone())
        };
        let mut warnings = Vec::new();
        let result = self.run_stages(&id, &tool_name, &mut input, cwd, eval_cancel, started, &mut warnings).await;
        let duration_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut scope = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        scope.calls.warnings.append(&mut warnings);
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
                        scope.calls.warnings.push(format!(
                            "a media attachment from {tool_name} was dropped (at most {MAX_IMAGES} images and {MAX_PDFS} PDFs per evaluation)"
                        ));
                    }
                }
                if let Some(dir) = out.cwd {
                    scope.cwd = dir;
                }
                let (output, output_bytes, text) = bounded_record(scope.calls.record_bytes, &json, out.value, out.text);
                let record = CallRecord { id, tool: tool_name, input, ok: true, output, text, duration_ms };
                scope.calls.push_record(record, output_bytes);
                Ok(json)
            }
            Err(f) => {
                self.emit(&id, &tool_name, Phase::Error, Some(f.message.clone()), started);
                let record = failure_record(id, tool_name, input, &f, duration_ms);
                let output_bytes = record.output.to_string().len();
                scope.calls.push_record(record, output_bytes);
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
        self.begin_eval();
        let result = self.clone().dispatch(tool.to_string(), input).await;
        (result, self.finish_eval())
    }

    /// Admit a model's call of a tool wrepl serves itself: a `toolu_…` id and
    /// a `start` event, then schema, isolation latch, PreToolUse hooks (which
    /// may rewrite the input) and permission, exactly as for inner calls.
    /// On success the caller runs it and hands the outcome to
    /// [`Dispatcher::settle`].
    pub async fn admit(&self, call: FrontCall) -> Result<Admission, Refusal> {
        let FrontCall { tool, mut input, schema, default } = call;
        let id = ids::tool_use_id();
        let started = Instant::now();
        self.emit(&id, &tool, Phase::Start, None, started);
        let cwd = self.p.workspace.default_cwd().to_path_buf();
        let mut warnings = Vec::new();
        let admitted = match compile(&tool, &schema) {
            Err(e) => Err(CallFailure::new(FailureKind::InvalidInput, e.to_string())),
            Ok(validator) => {
                let gate = Gate::Front { validator: &validator, default: &default };
                self.admit_stages(&id, &tool, &mut input, &cwd, &gate, &mut warnings).await
            }
        };
        match admitted {
            Ok(()) => {
                self.emit(&id, &tool, Phase::Executing, None, started);
                Ok(Admission { id, tool, input, started, cwd, warnings })
            }
            Err(failure) => {
                self.emit(&id, &tool, Phase::Error, Some(failure.message.clone()), started);
                let ms = started.elapsed().as_secs_f64() * 1e3;
                let record = failure_record(id, tool, input, &failure, ms);
                Err(Refusal { failure, record, warnings })
            }
        }
    }

    /// Finish an admitted front call: PostToolUse (or PostToolUseFailure)
    /// hooks, a `complete` / `error` event and its record. `outcome` is the
    /// structured result and its text, or the error message.
    pub async fn settle(&self, admission: Admission, outcome: Result<(Value, String), String>) -> Settlement {
        let Admission { id, tool, input, started, cwd, mut warnings } = admission;
        let hook_ctx = HookContext { session_id: &self.p.session_id, tool_name: &tool, tool_use_id: &id, cwd: &cwd };
        let mut blocked = None;
        match &outcome {
            Ok((value, _)) => {
                if self.p.hooks.has_hooks(HookEvent::PostToolUse, &tool) {
                    let post = self.p.hooks.post_tool_use(&hook_ctx, &input, value).await;
                    warnings.extend(post.warnings.into_iter().map(|w| format!("PostToolUse hook for {tool}: {w}")));
                    blocked = post.block_reason;
                }
            }
            Err(message) => {
                if self.p.hooks.has_hooks(HookEvent::PostToolUseFailure, &tool) {
                    let post = self.p.hooks.post_tool_use_failure(&hook_ctx, &input, message).await;
                    warnings
                        .extend(post.warnings.into_iter().map(|w| format!("PostToolUseFailure hook for {tool}: {w}")));
                }
            }
        }
        let duration_ms = started.elapsed().as_secs_f64() * 1e3;
        let record = match outcome {
            Ok((value, text)) => {
                self.emit(&id, &tool, Phase::Complete, None, started);
                let json = value.to_string();
                let (output, _, text) = bounded_record(0, &json, value, text);
                CallRecord { id, tool, input, ok: true, output, text, duration_ms }
            }
            Err(message) => {
                self.emit(&id, &tool, Phase::Error, Some(message.clone()), started);
                let f = CallFailure::new(FailureKind::Failed, message);
                failure_record(id, tool, input, &f, duration_ms)
            }
        };
        Settlement { record, blocked, warnings }
    }

    /// Stages 1-4, shared by inner and front calls: schema, isolation latch,
    /// PreToolUse hooks (a rewrite is re-validated), permission (and the
    /// approver for `ask`).
    async fn admit_stages(
        &self,
        id: &str,
        tool_name: &str,
        input: &mut Value,
        cwd: &Path,
        gate: &Gate<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), CallFailure> {
        // 1. the input schema
        if !input.is_object() {
            return Err(CallFailure::new(
                FailureKind::InvalidInput,
                format!("the input of {tool_name} must be a JSON object"),
            ));
        }
        validate(tool_name, gate.validator(), input)?;
        // 2. isolation latch: checked and reserved in one step, before any
        // await, so parallel calls cannot both pass (a refused call still
        // latches: the conservative choice).
        self.latch.check_and_latch(tool_name).map_err(|m| CallFailure::new(FailureKind::Isolation, m))?;
        // 3. PreToolUse hooks: may decide and rewrite the input
        let mut hook_decision = None;
        let mut hook_reason = None;
        if self.p.hooks.has_hooks(HookEvent::PreToolUse, tool_name) {
            let hook_ctx = HookContext { session_id: &self.p.session_id, tool_name, tool_use_id: id, cwd };
            let pre = self.p.hooks.pre_tool_use(&hook_ctx, input).await;
            warnings.extend(pre.warnings.into_iter().map(|w| format!("PreToolUse hook for {tool_name}: {w}")));
            if let Some(updated) = pre.updated_input {
                validate(tool_name, gate.validator(), &updated).map_err(|f| {
                    CallFailure::new(
                        FailureKind::InvalidInput,
                        format!("a PreToolUse hook rewrote the input into an invalid one: {}", f.message),
                    )
                })?;
                *input = updated;
            }
            hook_decision = pre.decision;
            hook_reason = pre.reason;
        }
        // 4. permission, against the input that will actually run
        let (matched, fallback, always_ask) = match gate {
            Gate::Tool(reg) => {
                let tool = &reg.tool;
                let mut paths = Vec::new();
                for p in tool.input_paths(input) {
                    let r = self.p.workspace.resolve(cwd, &p).map_err(tool_failure)?;
                    // Rules see both the path as written and where it really
                    // leads inside the root (deny matches if either does).
                    let real = self.p.workspace.real_path(&r);
                    if real != r.abs {
                        paths.push(real);
                    }
                    paths.push(r.abs);
                }
                let subject = tool.rule_subject(input);
                let req = PermissionRequest {
                    tool: tool_name,
                    command: subject.as_deref(),
                    paths: &paths,
                    project_root: self.p.workspace.default_cwd(),
                };
                let mut matched = self.p.rules.evaluate(&req);
                // A tool "also checked as" another (Glob and Grep as Read) is
                // denied by that tool's deny rules for the paths it names: a
                // searched directory is denied if a rule denies it or what is
                // inside it (probed with a child path, so `dir/**` matches).
                if let Some(other) = tool.also_checked_as().filter(|_| !paths.is_empty()) {
                    let probed: Vec<PathBuf> =
                        paths.iter().flat_map(|p| [p.clone(), p.join("__wrepl_search_probe__")]).collect();
                    let as_other = PermissionRequest { tool: other, paths: &probed, ..req };
                    if let Some(m) = self.p.rules.evaluate(&as_other).filter(|m| m.decision == Decision::Deny) {
                        matched = Some(m);
                    }
                }
                let fallback = if tool.read_only(input) {
                    (Decision::Allow, format!("{tool_name} is read-only and confined to the workspace"))
                } else {
                    (Decision::Ask, format!("permission to use {tool_name} was not granted"))
                };
                (matched, fallback, None)
            }
            Gate::Front { default, .. } => {
                let req = PermissionRequest {
                    tool: tool_name,
                    command: None,
                    paths: &[],
                    project_root: self.p.workspace.default_cwd(),
                };
                let matched = self.p.rules.evaluate(&req);
                match default {
                    FrontDefault::Allow => {
                        (matched, (Decision::Allow, format!("{tool_name} is served by wrepl itself")), None)
                    }
                    FrontDefault::AlwaysAsk(q) => (matched, (Decision::Ask, q.clone()), Some(q.as_str())),
                }
            }
        };
        let (mut decision, mut why) = decide(tool_name, matched, hook_decision, hook_reason, fallback);
        if let Some(q) = always_ask.filter(|_| decision != Decision::Deny) {
            (decision, why) = (Decision::Ask, q.to_string());
        }
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(CallFailure::new(FailureKind::Denied, why)),
            Decision::Ask => {
                let approved = match &self.p.approver {
                    Some(a) => a.approve(tool_name, input, &why).await,
                    None => false,
                };
                if approved {
                    return Ok(());
                }
                let message = match (&self.p.approver, always_ask) {
                    (Some(_), None) => format!("{why}; the approver declined"),
                    (Some(_), Some(_)) => format!("{why}: the approver declined"),
                    (None, None) => format!(
                        "{why}; nobody can be asked in this non-interactive session, so it is denied. Grant it with an allow rule (e.g. --allow '{tool_name}')"
                    ),
                    (None, Some(_)) => {
                        format!("{why}: registered tools always ask, and nobody can be asked in this session")
                    }
                };
                Err(CallFailure::new(FailureKind::Denied, message))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_stages(
        &self,
        id: &str,
        tool_name: &str,
        input: &mut Value,
        cwd: PathBuf,
        eval_cancel: CancellationToken,
        started: Instant,
        warnings: &mut Vec<String>,
    ) -> Result<ToolOutput, CallFailure> {
        let reg = self.p.tools.get(tool_name).ok_or_else(|| {
            CallFailure::new(
                FailureKind::UnknownTool,
                format!("no tool named {tool_name:?} is available in this sandbox"),
            )
        })?;
        // 1-4. schema, latch, PreToolUse hooks, permission
        self.admit_stages(id, tool_name, input, &cwd, &Gate::Tool(reg), warnings).await?;
        // 5. execute with the native timeout and the watchdog
        let tool = &reg.tool;
        let _serial = if tool.concurrency_safe(input) { None } else { Some(self.serial.clone().lock_owned().await) };
        self.emit(id, tool_name, Phase::Executing, None, started);
        let native = tool.native_timeout(input);
        let cancel = eval_cancel.child_token();
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
                    })
                });
                f
            }),
        };
        let outcome = run_with_watchdog(tool.call(input.clone(), ctx), tool_name, native, &cancel).await;
        // 6. output validation, the working-directory effect, post hooks
        let hook_ctx = HookContext { session_id: &self.p.session_id, tool_name, tool_use_id: id, cwd: &cwd };
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
                    out.cwd = Some(self.p.workspace.resolve_dir(&cwd, text).map_err(tool_failure)?.abs);
                }
                if self.p.hooks.has_hooks(HookEvent::PostToolUse, tool_name) {
                    let post = self.p.hooks.post_tool_use(&hook_ctx, input, &out.value).await;
                    warnings
                        .extend(post.warnings.into_iter().map(|w| format!("PostToolUse hook for {tool_name}: {w}")));
                    if let Some(r) = post.block_reason {
                        warnings.push(format!("PostToolUse hook feedback for {tool_name} ({id}): {r}"));
                    }
                }
                Ok(out)
            }
            Err(f) => {
                if self.p.hooks.has_hooks(HookEvent::PostToolUseFailure, tool_name) {
                    let post = self.p.hooks.post_tool_use_failure(&hook_ctx, input, &f.message).await;
                    warnings.extend(
                        post.warnings.into_iter().map(|w| format!("PostToolUseFailure hook for {tool_name}: {w}")),
                    );
                }
                Err(f)
            }
        }
    }
}

fn failure_record(id: String, tool: String, input: Value, f: &CallFailure, duration_ms: f64) -> CallRecord {
    let output = json!({"kind": f.kind.as_str(), "message": f.message});
    CallRecord { id, tool, input, ok: false, output, text: f.message.clone(), duration_ms }
}

/// Largest output kept verbatim in one call record.
pub const MAX_RECORD_BYTES: usize = 64 << 10;
/// Total output bytes kept verbatim in the records of one evaluation.
pub const MAX_RECORDS_BYTES: usize = 8 << 20;

/// Keep a record's output within the per-record and per-evaluation caps (the
/// script still received the full value). `used` is what earlier records of
/// the evaluation hold; returns the output to keep, its JSON size and the text.
fn bounded_record(used: usize, json: &str, value: Value, text: String) -> (Value, usize, String) {
    let fits = json.len() <= MAX_RECORD_BYTES && used + json.len() + text.len() <= MAX_RECORDS_BYTES;
    if fits && text.len() <= MAX_RECORD_BYTES {
        return (value, json.len(), text);
    }
    let cut = |s: &str, n: usize| crate::text::prefix(s, n).to_string();
    let preview = if used < MAX_RECORDS_BYTES { 4096 } else { 0 };
    let output = json!({"truncated": true, "bytes": json.len(), "preview": cut(json, preview)});
    let output_bytes = output.to_string().len();
    (output, output_bytes, format!("{}…[record truncated: {} bytes]", cut(&text, preview), text.len()))
}

/// Combine rules, hook decisions and the fallback: deny > ask > allow; a
/// hook's `allow` cannot override a deny or ask rule; without any decision,
/// the fallback (read-only tools are allowed, as they are confined to the
/// workspace; everything else asks).
fn decide(
    tool: &str,
    matched: Option<Matched>,
    hook: Option<Decision>,
    hook_reason: Option<String>,
    fallback: (Decision, String),
) -> (Decision, String) {
    let hook_why = |d: &str| match &hook_reason {
        Some(r) => format!("a PreToolUse hook {d} {tool}: {r}"),
        None => format!("a PreToolUse hook {d} {tool}"),
    };
    if let Some(m) = &matched {
        if m.decision == Decision::Deny {
            return (Decision::Deny, format!("{tool} is denied by the rule {:?}", m.rule));
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
    if let Some(m) = &matched {
        return (Decision::Allow, format!("allowed by {:?}", m.rule));
    }
    if hook == Some(Decision::Allow) {
        return (Decision::Allow, hook_why("allowed"));
    }
    fallback
}

fn validate(tool: &str, v: &jsonschema::Validator, value: &Value) -> Result<(), CallFailure> {
    let errors: Vec<String> = v
        .iter_errors(value)
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
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CallFailure::new(FailureKind::InvalidInput, format!("invalid input for {tool}: {}", errors.join("; "))))
    }
}

async fn run_with_watchdog(
    fut: ToolFuture,
    tool: &str,
    native: Duration,
    cancel: &CancellationToken,
) -> Result<ToolOutput, CallFailure> {
    let started = Instant::now();
    let mut fut = fut;
    let fail = tool_failure;
    // The tool first: one that finishes on its first poll never registers
    // the timer (registering one can wake a parked runtime thread).
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

impl CallHandler for Arc<Dispatcher> {
    fn start(&self, tool: &str, input: &str) -> Result<CallFuture, CallFailure> {
        let input: Value = serde_json::from_str(input).map_err(|_| {
            CallFailure::new(FailureKind::InvalidInput, format!("the input of {tool} is not valid JSON"))
        })?;
        Ok(Box::pin(self.clone().dispatch(tool.to_string(), input)))
    }

    fn fingerprint(&self, tool: &str) -> String {
        self.p.tools.get(tool).map(|r| r.fingerprint.clone()).unwrap_or_default()
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
        let m = |d| Some(Matched { decision: d, rule: "R".into() });
        let ask = || (Decision::Ask, String::from("not granted"));
        let allow = || (Decision::Allow, String::from("read-only"));
        assert_eq!(decide("Write", m(Decision::Deny), Some(Decision::Allow), None, ask()).0, Decision::Deny);
        assert_eq!(decide("Write", m(Decision::Allow), Some(Decision::Deny), None, ask()).0, Decision::Deny);
        assert_eq!(decide("Write", m(Decision::Ask), Some(Decision::Allow), None, ask()).0, Decision::Ask);
        assert_eq!(decide("Write", None, Some(Decision::Allow), None, ask()).0, Decision::Allow);
        assert_eq!(decide("Write", None, None, None, ask()).0, Decision::Ask);
        assert_eq!(decide("Read", None, None, None, allow()).0, Decision::Allow);
        assert_eq!(decide("Read", m(Decision::Deny), None, None, allow()).0, Decision::Deny);
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
