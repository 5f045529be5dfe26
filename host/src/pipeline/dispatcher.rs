//! The one dispatch point every inner call goes through, stage by stage:
//! schema validation → isolation latch → PreToolUse hooks → permission →
//! execution with native timeout and watchdog → output validation →
//! PostToolUse / PostToolUseFailure hooks → progress events and a record.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::events::{EventSink, Phase, ProgressEvent};
use super::hooks::{HookContext, HookEvent, HookRunner};
use super::latch::IsolationLatch;
use super::permissions::{Decision, PermissionRequest, PermissionRules};
use super::settings::{Settings, SettingsError};
use crate::runtime::{CallFailure, CallFuture, CallHandler, ToolBinding};
use crate::tools::{Media, Tool, ToolContext, ToolError, ToolOutput, Workspace};

/// The hard limit no watchdog may reach (the REPL's wall clock ends such calls).
pub const HARD_LIMIT: Duration = Duration::from_secs(600);
/// Most images kept per evaluation.
pub const MAX_IMAGES: usize = 8;
/// Most PDFs kept per evaluation.
pub const MAX_PDFS: usize = 4;
/// Name of the internal working-directory call behind `chdir()`.
pub const CHDIR: &str = "chdir";

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
pub struct PipelineConfig {
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

/// The inner-call pipeline. Serves guest calls through [`CallHandler`].
pub struct Dispatcher {
    tools: BTreeMap<String, Registered>,
    rules: PermissionRules,
    hooks: HookRunner,
    latch: IsolationLatch,
    workspace: Arc<Workspace>,
    approver: Option<Arc<dyn Approver>>,
    events: Option<EventSink>,
    session_id: String,
    serial: Arc<tokio::sync::Mutex<()>>,
    scope: Arc<Mutex<Scope>>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").field("tools", &self.tools.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

fn compile(tool: &str, schema: &Value) -> Result<jsonschema::Validator, PipelineError> {
    jsonschema::validator_for(schema).map_err(|e| PipelineError::Schema { tool: tool.into(), message: e.to_string() })
}

/// A fresh `toolu_…` id (24 hex digits): a per-process random key from the OS
/// mixed with a counter (splitmix64), so ids are unique within the process and
/// unpredictable across processes without a system call per tool call.
fn new_tool_use_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static KEY: OnceLock<(u64, u32)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (key, tag) = *KEY.get_or_init(|| {
        let mut b = [0u8; 12];
        if getrandom::fill(&mut b).is_err() {
            // Unique, if not unpredictable: the time and the process id.
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            b[..8].copy_from_slice(&(t.as_nanos() as u64).to_le_bytes());
            b[8..].copy_from_slice(&std::process::id().to_le_bytes());
        }
        let mut k = [0u8; 8];
        k.copy_from_slice(&b[..8]);
        let mut t = [0u8; 4];
        t.copy_from_slice(&b[8..]);
        (u64::from_le_bytes(k), u32::from_le_bytes(t))
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // splitmix64 of key + n: a bijection of n, so ids never repeat.
    let mut z = key.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    format!("toolu_{z:016x}{:08x}", tag ^ (n >> 32) as u32)
}

impl Dispatcher {
    /// Build a dispatcher over `tools` (schemas compiled once).
    pub fn new(config: PipelineConfig, tools: Vec<Arc<dyn Tool>>) -> Result<Self, PipelineError> {
        let mut rules = PermissionRules::from_settings(&config.settings.permissions)?;
        for r in &config.allow {
            rules.add_allow(r)?;
        }
        for r in &config.deny {
            rules.add_deny(r)?;
        }
        let hooks = HookRunner::new(config.settings.hooks.clone())?;
        let latch = IsolationLatch::new(&config.settings.isolation)?;
        let mut map = BTreeMap::new();
        for tool in tools {
            let name = tool.name().to_string();
            if name == CHDIR || map.contains_key(&name) {
                return Err(PipelineError::Duplicate(name));
            }
            let input = compile(&name, &tool.input_schema())?;
            let output = tool.output_schema().map(|s| compile(&name, &s)).transpose()?;
            let fingerprint = crate::replay::store::fingerprint(&tool.input_schema());
            map.insert(name, Registered { tool, fingerprint, input, output });
        }
        let cwd = config.workspace.default_cwd().to_path_buf();
        Ok(Self {
            tools: map,
            rules,
            hooks,
            latch,
            workspace: config.workspace,
            approver: config.approver,
            events: config.events,
            session_id: config.session_id,
            serial: Arc::new(tokio::sync::Mutex::new(())),
            scope: Arc::new(Mutex::new(Scope { cwd, cancel: CancellationToken::new(), calls: EvalCalls::default() })),
        })
    }

    /// The globals the guest installs: one per tool, named like the tool,
    /// plus the internal `chdir` call.
    pub fn bindings(&self) -> Vec<ToolBinding> {
        // Tool names that are not JavaScript identifiers (`mcp__srv__get-sum`)
        // get a global with every other character replaced by `_`, unless
        // that clashes with another tool's name or global.
        let mut used: std::collections::HashSet<String> = self.tools.keys().cloned().collect();
        let mut b = Vec::new();
        for name in self.tools.keys() {
            let global = if is_js_identifier(name) {
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
        b.push(ToolBinding { name: CHDIR.into(), global: "__wrepl_chdir".into() });
        b
    }

    /// The registered tools.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values().map(|r| &r.tool)
    }

    /// The workspace.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// Start an evaluation: the working directory is reset to the first root.
    pub fn begin_eval(&self) {
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        s.cwd = self.workspace.default_cwd().to_path_buf();
        s.cancel = CancellationToken::new();
        s.calls = EvalCalls::default();
    }

    /// End an evaluation: stop what still runs and hand over the records.
    pub fn finish_eval(&self) -> EvalCalls {
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        s.cancel.cancel();
        std::mem::take(&mut s.calls)
    }

    fn emit(&self, id: &str, tool: &str, phase: Phase, message: Option<String>, started: Instant) {
        if let Some(sink) = &self.events {
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

    fn chdir(&self, input: &str) -> Result<CallFuture, CallFailure> {
        let v: Value = serde_json::from_str(input).map_err(|e| CallFailure::new("invalid-input", e.to_string()))?;
        let path = v
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| CallFailure::new("invalid-input", "chdir needs a directory path"))?;
        let mut s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
        let r = self.workspace.resolve_dir(&s.cwd, path).map_err(|e| CallFailure::new(e.kind(), e.to_string()))?;
        s.cwd = r.abs.clone();
        let out = json!(r.abs.display().to_string()).to_string();
        Ok(Box::pin(async move { Ok(out) }))
    }

    /// Run one call through every stage. `Ok` is the JSON text the script
    /// receives.
    pub async fn dispatch(self: Arc<Self>, tool_name: String, mut input: Value) -> Result<String, CallFailure> {
        let id = new_tool_use_id();
        let started = Instant::now();
        self.emit(&id, &tool_name, Phase::Start, None, started);
        let (cwd, eval_cancel) = {
            let s = self.scope.lock().unwrap_or_else(|p| p.into_inner());
            (s.cwd.clone(), s.cancel.clone())
        };
        let result = self.run_stages(&id, &tool_name, &mut input, cwd, eval_cancel, started).await;
        let duration_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut scope = self.scope.lock().unwrap_or_else(|p| p.into_inner());
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
                let (output, output_bytes, text) = bounded_record(scope.calls.record_bytes, &json, out.value, out.text);
                let record = CallRecord { id, tool: tool_name, input, ok: true, output, text, duration_ms };
                scope.calls.push_record(record, output_bytes);
                Ok(json)
            }
            Err(f) => {
                self.emit(&id, &tool_name, Phase::Error, Some(f.message.clone()), started);
                let output = json!({"kind": f.kind, "message": f.message});
                let output_bytes = output.to_string().len();
                let record =
                    CallRecord { id, tool: tool_name, input, ok: false, output, text: f.message.clone(), duration_ms };
                scope.calls.push_record(record, output_bytes);
                Err(f)
            }
        }
    }

    /// Authorize a model's call of a script-registered tool. Registered tools
    /// always ask (`Execute registered tool "<name>"`): PreToolUse hooks and
    /// deny rules may refuse first; without an approver the answer is no.
    pub async fn authorize_registered(&self, name: &str, input: &Value) -> Result<(), CallFailure> {
        let wire = format!("eval_registered__{name}");
        let cwd = self.workspace.default_cwd().to_path_buf();
        let id = new_tool_use_id();
        if self.hooks.has_hooks(HookEvent::PreToolUse, &wire) {
            let ctx = HookContext { session_id: &self.session_id, tool_name: &wire, tool_use_id: &id, cwd: &cwd };
            let pre = self.hooks.pre_tool_use(&ctx, input).await;
            if pre.decision == Some(Decision::Deny) {
                return Err(CallFailure::new(
                    "denied",
                    format!("a PreToolUse hook denied {wire}: {}", pre.reason.unwrap_or_default()),
                ));
            }
        }
        let req = PermissionRequest { tool: &wire, command: None, paths: &[], project_root: &cwd };
        if let Some(m) = self.rules.evaluate(&req) {
            if m.decision == Decision::Deny {
                return Err(CallFailure::new("denied", format!("{wire} is denied by the rule {:?}", m.rule)));
            }
        }
        let why = format!("Execute registered tool \"{name}\"");
        match &self.approver {
            Some(a) if a.approve(&wire, input, &why).await => Ok(()),
            Some(_) => Err(CallFailure::new("denied", format!("{why}: the approver declined"))),
            None => Err(CallFailure::new(
                "denied",
                format!("{why}: registered tools always ask, and nobody can be asked in this session"),
            )),
        }
    }

    fn warn(&self, w: String) {
        self.scope.lock().unwrap_or_else(|p| p.into_inner()).calls.warnings.push(w);
    }

    async fn run_stages(
        &self,
        id: &str,
        tool_name: &str,
        input: &mut Value,
        cwd: PathBuf,
        eval_cancel: CancellationToken,
        started: Instant,
    ) -> Result<ToolOutput, CallFailure> {
        // 1. the tool and its input schema
        let reg = self.tools.get(tool_name).ok_or_else(|| {
            CallFailure::new("unknown-tool", format!("no tool named {tool_name:?} is available in this sandbox"))
        })?;
        if !input.is_object() {
            return Err(CallFailure::new("invalid-input", format!("the input of {tool_name} must be a JSON object")));
        }
        validate(tool_name, &reg.input, input)?;
        // 2. isolation latch: checked and reserved in one step, before any
        // await, so parallel calls cannot both pass (a refused call still
        // latches: the conservative choice).
        self.latch.check_and_latch(tool_name).map_err(|m| CallFailure::new("isolation", m))?;
        // 3. PreToolUse hooks: may decide and rewrite the input
        let hook_ctx = HookContext { session_id: &self.session_id, tool_name, tool_use_id: id, cwd: &cwd };
        let mut hook_decision = None;
        let mut hook_reason = None;
        if self.hooks.has_hooks(HookEvent::PreToolUse, tool_name) {
            let pre = self.hooks.pre_tool_use(&hook_ctx, input).await;
            for w in pre.warnings {
                self.warn(format!("PreToolUse hook for {tool_name}: {w}"));
            }
            if let Some(updated) = pre.updated_input {
                validate(tool_name, &reg.input, &updated).map_err(|f| {
                    CallFailure::new(
                        "invalid-input",
                        format!("a PreToolUse hook rewrote the input into an invalid one: {}", f.message),
                    )
                })?;
                *input = updated;
            }
            hook_decision = pre.decision;
            hook_reason = pre.reason;
        }
        // 4. permission, against the input that will actually run
        let tool = &reg.tool;
        let mut paths = Vec::new();
        for p in tool.input_paths(input) {
            let r = self.workspace.resolve(&cwd, &p).map_err(|e| CallFailure::new(e.kind(), e.to_string()))?;
            // Rules see both the path as written and where it really leads
            // inside the root (deny matches if either does).
            let real = self.workspace.real_path(&r);
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
            project_root: self.workspace.default_cwd(),
        };
        let mut matched = self.rules.evaluate(&req);
        // Searching reads file contents: Read deny rules also cover Glob/Grep
        // of the paths they name.
        if matches!(tool_name, "Glob" | "Grep") && !paths.is_empty() {
            // A searched directory is denied if a rule denies it or what is
            // inside it (probed with a child path, so `dir/**` matches).
            let probed: Vec<PathBuf> =
                paths.iter().flat_map(|p| [p.clone(), p.join("__wrepl_search_probe__")]).collect();
            let read = PermissionRequest { tool: "Read", paths: &probed, ..req };
            if let Some(m) = self.rules.evaluate(&read).filter(|m| m.decision == Decision::Deny) {
                matched = Some(m);
            }
        }
        let (decision, why) = decide(tool_name, tool.read_only(input), matched, hook_decision, hook_reason);
        match decision {
            Decision::Allow => {}
            Decision::Deny => return Err(CallFailure::new("denied", why)),
            Decision::Ask => {
                let approved = match &self.approver {
                    Some(a) => a.approve(tool_name, input, &why).await,
                    None => false,
                };
                if !approved {
                    return Err(CallFailure::new(
                        "denied",
                        match &self.approver {
                            Some(_) => format!("{why}; the approver declined"),
                            None => format!(
                                "{why}; nobody can be asked in this non-interactive session, so it is denied. Grant it with an allow rule (e.g. --allow '{tool_name}')"
                            ),
                        },
                    ));
                }
            }
        }
        // 5. execute with the native timeout and the watchdog
        let _serial = if tool.concurrency_safe(input) { None } else { Some(self.serial.clone().lock_owned().await) };
        self.emit(id, tool_name, Phase::Executing, None, started);
        let native = tool.native_timeout(input);
        let cancel = eval_cancel.child_token();
        let ctx = ToolContext {
            workspace: self.workspace.clone(),
            cwd: cwd.clone(),
            cancel: cancel.clone(),
            timeout: native,
            progress: self.events.clone().map(|sink| {
                let (id, tool) = (id.to_string(), tool_name.to_string());
                let f: crate::tools::ProgressFn = Arc::new(move |p: crate::tools::ToolProgress| {
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
        // 6. output validation and post hooks
        match outcome {
            Ok(out) => {
                if let Some(v) = &reg.output {
                    validate(tool_name, v, &out.value).map_err(|f| {
                        CallFailure::new(
                            "invalid-output",
                            format!("{tool_name} returned output that violates its schema: {}", f.message),
                        )
                    })?;
                }
                if self.hooks.has_hooks(HookEvent::PostToolUse, tool_name) {
                    let post = self.hooks.post_tool_use(&hook_ctx, input, &out.value).await;
                    for w in post.warnings {
                        self.warn(format!("PostToolUse hook for {tool_name}: {w}"));
                    }
                    if let Some(r) = post.block_reason {
                        self.warn(format!("PostToolUse hook feedback for {tool_name} ({id}): {r}"));
                    }
                }
                Ok(out)
            }
            Err(f) => {
                if self.hooks.has_hooks(HookEvent::PostToolUseFailure, tool_name) {
                    let post = self.hooks.post_tool_use_failure(&hook_ctx, input, &f.message).await;
                    for w in post.warnings {
                        self.warn(format!("PostToolUseFailure hook for {tool_name}: {w}"));
                    }
                }
                Err(f)
            }
        }
    }
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
    let cut = |s: &str, n: usize| s[..crate::text::floor_char_boundary(s, n)].to_string();
    let preview = if used < MAX_RECORDS_BYTES { 4096 } else { 0 };
    let output = json!({"truncated": true, "bytes": json.len(), "preview": cut(json, preview)});
    let output_bytes = output.to_string().len();
    (output, output_bytes, format!("{}…[record truncated: {} bytes]", cut(&text, preview), text.len()))
}

/// Combine rules, hook decisions and defaults: deny > ask > allow; a hook's
/// `allow` cannot override a deny or ask rule; without any decision,
/// read-only tools are allowed (they are confined to the workspace) and
/// everything else asks.
fn decide(
    tool: &str,
    read_only: bool,
    matched: Option<super::permissions::Matched>,
    hook: Option<Decision>,
    hook_reason: Option<String>,
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
    if read_only || tool == CHDIR {
        return (Decision::Allow, format!("{tool} is read-only and confined to the workspace"));
    }
    (Decision::Ask, format!("permission to use {tool} was not granted"))
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
        Err(CallFailure::new("invalid-input", format!("invalid input for {tool}: {}", errors.join("; "))))
    }
}

async fn run_with_watchdog(
    fut: crate::tools::ToolFuture,
    tool: &str,
    native: Duration,
    cancel: &CancellationToken,
) -> Result<ToolOutput, CallFailure> {
    let started = Instant::now();
    let mut fut = fut;
    let fail = |e: ToolError| CallFailure::new(e.kind(), e.to_string());
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
            "timeout",
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
                "watchdog",
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
        if tool == CHDIR {
            return self.chdir(input);
        }
        let input: Value = serde_json::from_str(input)
            .map_err(|_| CallFailure::new("invalid-input", format!("the input of {tool} is not valid JSON")))?;
        Ok(Box::pin(self.clone().dispatch(tool.to_string(), input)))
    }

    fn fingerprint(&self, tool: &str) -> String {
        self.tools.get(tool).map(|r| r.fingerprint.clone()).unwrap_or_default()
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
        use super::super::permissions::Matched;
        let m = |d| Some(Matched { decision: d, rule: "R".into() });
        assert_eq!(decide("Write", false, m(Decision::Deny), Some(Decision::Allow), None).0, Decision::Deny);
        assert_eq!(decide("Write", false, m(Decision::Allow), Some(Decision::Deny), None).0, Decision::Deny);
        assert_eq!(decide("Write", false, m(Decision::Ask), Some(Decision::Allow), None).0, Decision::Ask);
        assert_eq!(decide("Write", false, None, Some(Decision::Allow), None).0, Decision::Allow);
        assert_eq!(decide("Write", false, None, None, None).0, Decision::Ask);
        assert_eq!(decide("Read", true, None, None, None).0, Decision::Allow);
        assert_eq!(decide("Read", true, m(Decision::Deny), None, None).0, Decision::Deny);
    }

    #[test]
    fn tool_use_ids_are_unique_and_well_formed() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| new_tool_use_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(100) {
            let hex = id.strip_prefix("toolu_").expect("prefix");
            assert_eq!(hex.len(), 24, "{id}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
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
