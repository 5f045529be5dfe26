//! The MCP server: `wrepl serve` (stdio) and `wrepl serve --http ADDR`
//! (streamable HTTP). One [`WreplServer`] per MCP connection owns one REPL
//! context and one inner-call pipeline whose model sampling (`haiku`) and
//! `ask` approvals go back to that connection's client
//! (`sampling/createMessage`, `elicitation/create`). Inner-call progress is
//! sent as `notifications/progress` on the outer call's progress token;
//! `notifications/cancelled` stops the running evaluation and its calls.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
#[allow(deprecated)] // sampling is deprecated in the newest protocol, still supported by 2025 clients
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, CreateMessageRequestParams,
    ElicitRequestParams, ElicitationAction, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerNotification, Tool as McpTool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::context::{ContextManager, ContextStatus, Hydration, MAIN};
use crate::pipeline::dispatcher::{Approver, CallRecord, FrontCall, FrontDefault};
use crate::pipeline::events::{EventSink, Phase, ProgressEvent};
use crate::repl::{
    cap_text, parse_timeout, EvalOptions, EvalResult, Repl, ReplBuilder, ReplError, RestoreReport, REGISTERED_PREFIX,
};
use crate::replay::store::LogStore;
use crate::runtime::{CancelToken, RegisteredTool};
use crate::tools::sampling::{SampleError, SampleRequest, Sampler};
use crate::tools::Media;

/// Name of the REPL tool.
pub const REPL_TOOL: &str = "repl";
/// Name of the async-mode polling tool.
pub const RESULT_TOOL: &str = "repl_result";
/// Async mode: queued plus running evaluations per context.
pub const MAX_ASYNC_EVALS: usize = 8;
/// Async mode: finished evaluations kept for polling.
pub const MAX_FINISHED_EVALS: usize = 64;
/// Method of the async-mode completion notification.
pub const EVAL_NOTIFICATION: &str = "notifications/wrepl/repl-eval";
/// How long an approval question may wait for the user.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The pipeline could not be built (bad settings or tools).
    #[error(transparent)]
    Repl(#[from] ReplError),
    /// The transport failed.
    #[error("MCP transport: {0}")]
    Transport(String),
    /// A socket or stdio error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What every connection of one server shares.
pub struct ServerOptions {
    /// Template of each connection's REPL: roots, settings, rules, tools,
    /// limits, engine. Per connection, the server adds the client as
    /// approver and sampler, its progress sink and its session.
    pub builder: ReplBuilder,
    /// Where sessions are recorded (`None`: not durable).
    pub store: Option<Arc<dyn LogStore>>,
    /// Session to resume and record into (stdio: one connection). Without
    /// it, each connection records under its own generated name.
    pub session: Option<String>,
    /// Async mode: `repl` returns an eval id at once.
    pub async_mode: bool,
    /// When false, no `repl` tool is listed (disabled by configuration).
    pub repl_enabled: bool,
    /// Sessions held by a live connection (one writer per session log).
    pub live_sessions: Mutex<std::collections::HashSet<String>>,
}

impl ServerOptions {
    /// Options with the defaults: REPL enabled, synchronous, no store. The
    /// builder's pipeline is compiled here, so bad settings fail at start.
    pub fn new(builder: ReplBuilder) -> Result<Self, ServeError> {
        builder.dispatcher()?;
        Ok(Self {
            builder,
            store: None,
            session: None,
            async_mode: false,
            repl_enabled: true,
            live_sessions: Default::default(),
        })
    }

    fn text_cap(&self) -> usize {
        self.builder.current_limits().text_cap
    }
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("session", &self.session)
            .field("async_mode", &self.async_mode)
            .field("repl_enabled", &self.repl_enabled)
            .finish_non_exhaustive()
    }
}

/// Where the current outer call's progress goes.
struct ProgressTarget {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    count: u64,
}

/// One async evaluation.
#[derive(Debug, Clone)]
enum AsyncState {
    Queued,
    Running,
    Done(Box<Value>),
}

#[derive(Default)]
struct AsyncBook {
    next: u64,
    /// Queued or running ids, in order.
    active: VecDeque<String>,
    states: HashMap<String, AsyncState>,
    finished: VecDeque<String>,
}

struct ConnState {
    /// The connection's contexts (built on first use, once the session name
    /// is settled); the model's calls go to the main one.
    contexts: Option<ContextManager>,
}

/// One MCP connection's state.
struct Connection {
    options: Arc<ServerOptions>,
    /// The session this connection records under; chosen (from `?session=`
    /// over HTTP) until the context is built.
    name: Mutex<String>,
    /// True once `name` is claimed in `options.live_sessions`.
    claimed: Mutex<bool>,
    peer: Mutex<Option<Peer<RoleServer>>>,
    progress: Mutex<Option<ProgressTarget>>,
    progress_tx: tokio::sync::mpsc::UnboundedSender<(Peer<RoleServer>, ProgressNotificationParam)>,
    state: tokio::sync::Mutex<ConnState>,
    registered: Mutex<Vec<RegisteredTool>>,
    book: Mutex<AsyncBook>,
    queue: tokio::sync::mpsc::UnboundedSender<(String, String, Option<Duration>)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The MCP server handler of one connection.
#[derive(Clone)]
pub struct WreplServer {
    conn: Arc<Connection>,
}

impl std::fmt::Debug for WreplServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WreplServer").field("session", &*lock(&self.conn.name)).finish_non_exhaustive()
    }
}

impl WreplServer {
    /// A handler for one new connection. Must be called inside a tokio
    /// runtime (it starts the connection's progress and async-eval tasks).
    pub fn new(options: Arc<ServerOptions>) -> Self {
        let name = options.session.clone().unwrap_or_else(|| format!("mcp-{}", crate::ids::short_id()));
        let (progress_tx, mut progress_rx) =
            tokio::sync::mpsc::unbounded_channel::<(Peer<RoleServer>, ProgressNotificationParam)>();
        // One forwarding task keeps progress notifications in order.
        tokio::spawn(async move {
            while let Some((peer, p)) = progress_rx.recv().await {
                let _ = peer.notify_progress(p).await;
            }
        });
        let (queue, queue_rx) = tokio::sync::mpsc::unbounded_channel();
        let conn = Arc::new(Connection {
            options,
            name: Mutex::new(name),
            claimed: Mutex::new(false),
            peer: Mutex::new(None),
            progress: Mutex::new(None),
            progress_tx,
            state: tokio::sync::Mutex::new(ConnState { contexts: None }),
            registered: Mutex::new(Vec::new()),
            book: Mutex::new(AsyncBook::default()),
            queue,
        });
        tokio::spawn(async_worker(Arc::downgrade(&conn), queue_rx));
        Self { conn }
    }

    /// The session name this connection records under.
    pub fn session_name(&self) -> String {
        lock(&self.conn.name).clone()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if *lock(&self.claimed) {
            let name = lock(&self.name).clone();
            lock(&self.options.live_sessions).remove(&name);
        }
    }
}

/// Runs a connection's async evaluations one after another.
async fn async_worker(
    conn: Weak<Connection>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(String, String, Option<Duration>)>,
) {
    while let Some((id, code, timeout)) = rx.recv().await {
        let Some(c) = conn.upgrade() else { return };
        if let Some(s) = lock(&c.book).states.get_mut(&id) {
            *s = AsyncState::Running;
        }
        let opts = EvalOptions { timeout, ..EvalOptions::default() };
        let (value, failed) = match c.run_repl(&code, opts, None).await {
            Ok(out) => {
                let failed = out.is_error == Some(true);
                (json!({"eval_id": id, "status": "done", "is_error": failed, "result": to_value(&out)}), failed)
            }
            Err(e) => (json!({"eval_id": id, "status": "done", "is_error": true, "error": e.to_string()}), true),
        };
        {
            let mut book = lock(&c.book);
            book.active.retain(|x| x != &id);
            book.states.insert(id.clone(), AsyncState::Done(Box::new(value)));
            book.finished.push_back(id.clone());
            while book.finished.len() > MAX_FINISHED_EVALS {
                if let Some(old) = book.finished.pop_front() {
                    book.states.remove(&old);
                }
            }
        }
        let peer = lock(&c.peer).clone();
        if let Some(peer) = peer {
            let n = rmcp::model::CustomNotification::new(
                EVAL_NOTIFICATION,
                Some(json!({"eval_id": id, "status": "done", "is_error": failed})),
            );
            let _ = peer.send_notification(ServerNotification::CustomNotification(n)).await;
        }
        c.announce_tool_changes().await;
    }
}

fn to_value(r: &CallToolResult) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

/// Answers `haiku(...)` through the client's `sampling/createMessage`.
struct McpSampler {
    conn: Weak<Connection>,
}

impl Sampler for McpSampler {
    fn sample(
        &self,
        request: SampleRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<String, SampleError>> {
        let peer = self.conn.upgrade().and_then(|c| lock(&c.peer).clone());
        Box::pin(async move {
            let Some(peer) = peer else {
                return Err(SampleError::Unsupported("model sampling: the MCP connection is gone".into()));
            };
            if peer.peer_info().is_none_or(|i| i.capabilities.sampling.is_none()) {
                return Err(SampleError::Unsupported(
                    "model sampling is not available: the MCP client did not declare the `sampling` capability \
                     (sampling/createMessage)"
                        .into(),
                ));
            }
            let mut params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": request.prompt}}],
                "maxTokens": request.max_tokens,
                "modelPreferences": {"hints": [{"name": request.model}]},
            });
            if let Some(system) = request.system {
                params["systemPrompt"] = Value::String(system);
            }
            #[allow(deprecated)]
            let params: CreateMessageRequestParams = serde_json::from_value(params)
                .map_err(|e| SampleError::Failed(format!("cannot build the sampling request: {e}")))?;
            #[allow(deprecated)]
            let call = peer.create_message(params);
            let result = tokio::select! {
                r = call => r.map_err(|e| SampleError::Failed(e.to_string()))?,
                _ = cancel.cancelled() => return Err(SampleError::Failed("cancelled".into())),
            };
            let v = serde_json::to_value(&result).unwrap_or(Value::Null);
            let content = &v["content"];
            let text = match content {
                Value::Array(items) => items
                    .iter()
                    .filter(|c| c["type"] == "text")
                    .filter_map(|c| c["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                c if c["type"] == "text" => c["text"].as_str().unwrap_or_default().to_string(),
                _ => {
                    return Err(SampleError::Failed(format!(
                        "the client's reply has no text content (got {})",
                        content.get("type").and_then(Value::as_str).unwrap_or("nothing")
                    )))
                }
            };
            Ok(text)
        })
    }
}

/// Answers permission `ask` through `elicitation/create`; without client
/// support the answer is no.
struct McpApprover {
    conn: Weak<Connection>,
}

impl Approver for McpApprover {
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> BoxFuture<'static, bool> {
        let peer = self.conn.upgrade().and_then(|c| lock(&c.peer).clone());
        let shown = {
            let s = input.to_string();
            if s.len() > 2000 {
                format!("{}…", crate::text::prefix(&s, 2000))
            } else {
                s
            }
        };
        let message = format!("wrepl asks permission to run {tool} ({reason}).\nInput: {shown}\nAllow this call?");
        Box::pin(async move {
            let Some(peer) = peer else { return false };
            if peer.peer_info().is_none_or(|i| i.capabilities.elicitation.is_none()) {
                return false;
            }
            let params = json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"approve": {"type": "boolean", "title": "Allow", "description": "Allow this call"}},
                    "required": ["approve"]
                }
            });
            let Ok(params) = serde_json::from_value::<ElicitRequestParams>(params) else { return false };
            let answer = tokio::time::timeout(APPROVAL_TIMEOUT, peer.create_elicitation(params)).await;
            match answer {
                Ok(Ok(r)) => {
                    matches!(r.action, ElicitationAction::Accept)
                        && r.content.as_ref().and_then(|c| c.get("approve")).and_then(Value::as_bool) == Some(true)
                }
                _ => false,
            }
        })
    }
}

impl Connection {
    /// This connection's main context, built on first use (resuming its
    /// session when one is stored); the restore report comes with the
    /// evaluation that built it.
    async fn ensure_repl<'a>(
        self: &Arc<Self>,
        state: &'a mut ConnState,
    ) -> Result<(&'a mut Repl, Option<RestoreReport>), ReplError> {
        if state.contexts.is_none() {
            let name = lock(&self.name).clone();
            if !*lock(&self.claimed) {
                if !lock(&self.options.live_sessions).insert(name.clone()) {
                    return Err(ReplError::SessionBusy(name));
                }
                *lock(&self.claimed) = true;
            }
            let me = Arc::downgrade(self);
            let sink_conn = Arc::downgrade(self);
            let events: EventSink = Arc::new(move |e: &ProgressEvent| {
                if let Some(c) = sink_conn.upgrade() {
                    c.progress_event(e);
                }
            });
            let template = self
                .options
                .builder
                .clone()
                .sampler(Arc::new(McpSampler { conn: me.clone() }))
                .approver(Arc::new(McpApprover { conn: me }))
                .events(events)
                .session_id(name.clone());
            state.contexts = Some(ContextManager::named(template, self.options.store.clone(), name));
        }
        let contexts = state.contexts.as_mut().expect("built above");
        let (repl, status) = contexts.get(MAIN, MAIN, Hydration::Resume).await?;
        let restore = match status {
            ContextStatus::Built { .. } => {
                *lock(&self.registered) = repl.registered_tools();
                repl.restore_report().cloned()
            }
            ContextStatus::Reused => None,
        };
        Ok((repl, restore))
    }

    fn progress_event(&self, e: &ProgressEvent) {
        let mut target = lock(&self.progress);
        let Some(t) = target.as_mut() else { return };
        t.count += 1;
        let what = match e.phase {
            Phase::Start => "start".to_string(),
            Phase::Executing => "executing".to_string(),
            Phase::Progress => match e.progress {
                Some((p, Some(total))) => format!("progress {p}/{total}"),
                Some((p, None)) => format!("progress {p}"),
                None => "progress".to_string(),
            },
            Phase::Complete => format!("complete in {:.0} ms", e.elapsed_ms),
            Phase::Error => format!("error: {}", e.message.as_deref().unwrap_or("")),
        };
        let mut message = format!("{} {} {what}", e.tool, e.tool_use_id);
        if e.phase == Phase::Progress {
            if let Some(m) = &e.message {
                message.push_str(": ");
                message.push_str(m);
            }
        }
        let param = json!({"progressToken": t.token, "progress": t.count, "message": message});
        if let Ok(param) = serde_json::from_value::<ProgressNotificationParam>(param) {
            let _ = self.progress_tx.send((t.peer.clone(), param));
        }
    }

    /// The model's call of the `repl` tool: admitted by the pipeline like
    /// any call (a deny rule or a PreToolUse hook on `repl` stops it; a hook
    /// may rewrite the code), evaluated, and settled (PostToolUse hooks on
    /// `repl` see the structured result; one that blocks withholds it).
    /// Progress goes to `progress` (set once the context is ours, so
    /// concurrent calls do not mix tokens).
    async fn run_repl(
        self: &Arc<Self>,
        code: &str,
        opts: EvalOptions,
        progress: Option<ProgressTarget>,
    ) -> Result<CallToolResult, ReplError> {
        let mut state = self.state.lock().await;
        *lock(&self.progress) = progress;
        let text_cap = self.options.text_cap();
        let outcome = async {
            let (repl, restore) = self.ensure_repl(&mut state).await?;
            let dispatcher = repl.dispatcher().clone();
            let call = FrontCall {
                tool: REPL_TOOL.into(),
                input: json!({"code": code}),
                schema: Value::Object(repl_schema()),
                default: FrontDefault::Allow,
            };
            let admission = match dispatcher.admit(call).await {
                Ok(a) => a,
                Err(refusal) => return Ok(input_error(format!("wrepl: {}", refusal.failure.message))),
            };
            let code = admission.input()["code"].as_str().unwrap_or_default().to_string();
            let r = repl.eval(&code, opts).await?;
            let new_tools = new_definitions(repl, &r);
            let settled = Settled { result: r, restore, new_tools };
            let out = outer_result(&code, &settled, text_cap);
            let response = out.structured_content.clone().unwrap_or(Value::Null);
            let text = out.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<String>();
            let verdict = if settled.result.failed() { Err(text) } else { Ok((response, text)) };
            let settlement = dispatcher.settle(admission, verdict).await;
            Ok(match settlement.blocked {
                Some(reason) => {
                    input_error(format!("the result of {REPL_TOOL} was withheld by a PostToolUse hook: {reason}"))
                }
                None => out,
            })
        }
        .await;
        *lock(&self.progress) = None;
        outcome
    }

    /// Run a registered tool for the model.
    async fn run_registered(
        self: &Arc<Self>,
        name: &str,
        input: Value,
        opts: EvalOptions,
    ) -> Result<Settled, ReplError> {
        let mut state = self.state.lock().await;
        let (repl, restore) = self.ensure_repl(&mut state).await?;
        let r = repl.call_registered(name, input, opts).await?;
        let defs = new_definitions(repl, &r);
        Ok(Settled { result: r, restore, new_tools: defs })
    }

    /// Tell the client when the registered tools changed.
    async fn announce_tool_changes(self: &Arc<Self>) {
        let now = {
            let state = self.state.lock().await;
            state.contexts.as_ref().and_then(|c| c.live(MAIN)).map(|r| r.registered_tools()).unwrap_or_default()
        };
        let changed = {
            let mut seen = lock(&self.registered);
            let same = seen.len() == now.len()
                && seen.iter().zip(&now).all(|(a, b)| {
                    a.name == b.name && a.description == b.description && a.input_schema == b.input_schema
                });
            if !same {
                *seen = now.clone();
            }
            !same
        };
        if changed {
            let peer = lock(&self.peer).clone();
            if let Some(peer) = peer {
                let _ = peer.notify_tool_list_changed().await;
            }
        }
    }
}

/// Input schema of the `repl` tool (SPEC §1).
fn repl_schema() -> JsonObject {
    let v = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "JavaScript to evaluate in the persistent context (top-level await works; the value of the last expression is the result)."},
            "description": {"type": "string", "description": "What this code does, in a few words (shown to the user)."},
            "timeout": {"type": "number", "description": "Script-time budget in milliseconds (default 30000, max 600000; time spent waiting for tools does not count)."}
        },
        "required": ["code"],
        "additionalProperties": false
    });
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

const REPL_DESCRIPTION: &str = "Run JavaScript in a sealed, persistent QuickJS sandbox (WebAssembly). Variables survive between calls. \
Tools are async globals: Read, Write, Edit, Bash, Glob, Grep (and mcp__server__tool for configured MCP servers), with \
shorthands sh(cmd), cat(path), rg(pattern, opts), rgf(pattern), gl(glob), put(path, text), chdir(dir); haiku(prompt, schema?) \
asks the model; registerTool(name, description, schema, handler) adds a tool (eval_registered__<name>). Start independent \
calls together and await them with Promise.all. No import/require, no network or filesystem except through the tools; \
every call passes the permission pipeline. The result is the last expression's value (or the per-call object `o`).";

fn tool_def(name: &str, description: &str, schema: JsonObject) -> McpTool {
    let v = json!({"name": name, "description": description, "inputSchema": Value::Object(schema)});
    serde_json::from_value(v)
        .unwrap_or_else(|_| McpTool::new(name.to_string(), description.to_string(), JsonObject::new()))
}

fn object_schema(v: &Value) -> JsonObject {
    match v {
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("object") => m.clone(),
        // MCP needs an object schema; wrap anything else so the listing stays valid.
        Value::Object(m) => {
            let mut o = m.clone();
            o.insert("type".into(), json!("object"));
            o
        }
        _ => match json!({"type": "object"}) {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        },
    }
}

/// A finished evaluation with what the outer result needs besides it.
pub struct Settled {
    /// The evaluation.
    pub result: EvalResult,
    /// What resuming the session found, on the first evaluation after it.
    pub restore: Option<RestoreReport>,
    /// Definitions of the tools this evaluation registered.
    pub new_tools: Vec<RegisteredTool>,
}

fn new_definitions(repl: &Repl, r: &EvalResult) -> Vec<RegisteredTool> {
    if r.new_tools.is_empty() {
        return Vec::new();
    }
    repl.registered_tools()
        .into_iter()
        .filter(|t| r.new_tools.iter().any(|w| w.strip_prefix(REGISTERED_PREFIX) == Some(t.name.as_str())))
        .collect()
}

/// Inner calls as the `tool_use`/`tool_result` pairs of a transcript.
pub fn transcript(calls: &[CallRecord]) -> Vec<Value> {
    calls
        .iter()
        .flat_map(|c| {
            [
                json!({"type": "tool_use", "id": c.id, "name": c.tool, "input": c.input}),
                json!({"type": "tool_result", "tool_use_id": c.id, "is_error": !c.ok, "content": c.text, "structured": c.output, "duration_ms": c.duration_ms}),
            ]
        })
        .collect()
}

/// The outer result of one evaluation (SPEC §1): capped text, then media
/// blocks; `structuredContent` with everything else.
pub fn outer_result(code: &str, settled: &Settled, text_cap: usize) -> CallToolResult {
    let r = &settled.result;
    let restore = settled.restore.as_ref();
    let mut text = String::new();
    if let Some(reset) = &r.context_reset {
        text.push_str(&format!("[context reset: {reset}]\n"));
    }
    if let Some(rr) = restore.filter(|rr| !rr.blocks.is_empty()) {
        text.push_str(&format!("[session restored: {}]\n", rr.summary));
    }
    if !r.stdout.is_empty() {
        text.push_str(&r.stdout);
        if !r.stdout.ends_with('\n') {
            text.push('\n');
        }
    }
    if !r.stderr.is_empty() {
        text.push_str("[stderr]\n");
        text.push_str(&r.stderr);
        if !r.stderr.ends_with('\n') {
            text.push('\n');
        }
    }
    match &r.error {
        Some(e) => {
            if !e.stack.is_empty() && !e.stack.contains(&e.message) {
                text.push_str(&format!("{}: {}\n{}", e.name, e.message, e.stack.trim_end()));
            } else {
                text.push_str(&format!("{}: {}", e.name, e.message));
            }
        }
        None => text.push_str(&r.text),
    }
    if !r.new_tools.is_empty() {
        text.push_str(&format!("\n[new tools: {}]", r.new_tools.join(", ")));
    }
    let mut content = vec![Content::text(cap_text(text, text_cap))];
    for (i, m) in r.media.iter().enumerate() {
        let block = match m {
            Media::Image { mime, data } => json!({"type": "image", "data": data, "mimeType": mime}),
            Media::Pdf { data } => json!({"type": "resource", "resource": {
                "uri": format!("wrepl://media/{i}.pdf"), "mimeType": "application/pdf", "blob": data}}),
        };
        if let Ok(c) = serde_json::from_value::<Content>(block) {
            content.push(c);
        }
    }
    let definitions: Vec<Value> = settled
        .new_tools
        .iter()
        .map(|t| {
            json!({"name": format!("{REGISTERED_PREFIX}{}", t.name), "description": t.description,
                   "inputSchema": t.input_schema, "displayName": t.display_name})
        })
        .collect();
    let structured = json!({
        "code": code,
        "result": r.result,
        "stdout": r.stdout,
        "stderr": r.stderr,
        "error": r.error,
        "timed_out": r.timed_out,
        "context_reset": r.context_reset,
        "abandoned_calls": r.abandoned_calls,
        "calls": transcript(&r.calls),
        "new_tools": r.new_tools,
        "new_tool_definitions": definitions,
        "script_ms": r.script_ms,
        "wall_ms": r.wall_ms,
        "replay": restore.map(|rr| json!({"summary": rr.summary, "blocks": rr.blocks})),
    });
    let mut out = if r.failed() { CallToolResult::error(content) } else { CallToolResult::success(content) };
    out.structured_content = Some(structured);
    out
}

/// A cancel token for an evaluation, triggered by the request's
/// `notifications/cancelled`; abort the returned task when done.
fn cancel_on(context: &RequestContext<RoleServer>) -> (CancelToken, tokio::task::JoinHandle<()>) {
    let cancel = CancelToken::new();
    let (ct, c) = (context.ct.clone(), cancel.clone());
    let watcher = tokio::spawn(async move {
        ct.cancelled().await;
        c.cancel();
    });
    (cancel, watcher)
}

fn input_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(message.into())])
}

impl WreplServer {
    fn remember_peer(&self, context: &RequestContext<RoleServer>) {
        let mut p = lock(&self.conn.peer);
        if p.is_none() {
            *p = Some(context.peer.clone());
        }
    }

    /// Over HTTP, `/mcp?session=NAME` picks the session to resume and record
    /// into (needs a store). Read until the context is built.
    fn choose_session(&self, context: &RequestContext<RoleServer>) -> Result<(), String> {
        let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else { return Ok(()) };
        let Some(query) = parts.uri.query() else { return Ok(()) };
        let Some(wanted) = query.split('&').find_map(|kv| kv.strip_prefix("session=")) else { return Ok(()) };
        if crate::replay::store::validate_session_name(wanted).is_err() {
            return Err(format!("invalid session name {wanted:?}: use 1-128 characters of [A-Za-z0-9._-]"));
        }
        if self.conn.options.store.is_none() {
            return Err("?session= needs a session store: start wrepl serve with --store FILE".into());
        }
        if *lock(&self.conn.claimed) {
            let current = lock(&self.conn.name).clone();
            return if current == wanted {
                Ok(())
            } else {
                Err(format!("this connection already records session {current:?}"))
            };
        }
        *lock(&self.conn.name) = wanted.to_string();
        Ok(())
    }

    async fn call_repl(&self, args: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        let Some(code) = args.get("code").and_then(Value::as_str).map(str::to_string) else {
            return input_error("invalid input: `code` (a string of JavaScript) is required");
        };
        if let Some(k) = args.keys().find(|k| !matches!(k.as_str(), "code" | "description" | "timeout")) {
            return input_error(format!("invalid input: unknown field {k:?} (expected code, description, timeout)"));
        }
        let timeout = match parse_timeout(args.get("timeout")) {
            Ok(t) => t,
            Err(e) => return input_error(e.to_string()),
        };
        if self.conn.options.async_mode {
            return self.enqueue(code, timeout);
        }
        let (cancel, watcher) = cancel_on(&context);
        let progress = context.meta.get_progress_token().map(|token| ProgressTarget {
            peer: context.peer.clone(),
            token,
            count: 0,
        });
        let opts = EvalOptions { timeout: Some(timeout), cancel, ..EvalOptions::default() };
        let outcome = self.conn.run_repl(&code, opts, progress).await;
        watcher.abort();
        let result = outcome.unwrap_or_else(|e| input_error(format!("wrepl: {e}")));
        self.conn.announce_tool_changes().await;
        result
    }

    fn enqueue(&self, code: String, timeout: Duration) -> CallToolResult {
        let id = {
            let mut book = lock(&self.conn.book);
            if book.active.len() >= MAX_ASYNC_EVALS {
                return input_error(format!(
                    "async queue full: {MAX_ASYNC_EVALS} evaluations are already queued or running in this context; \
                     poll {RESULT_TOOL} and try again when one has finished"
                ));
            }
            book.next += 1;
            let id = format!("eval-{}", book.next);
            book.active.push_back(id.clone());
            book.states.insert(id.clone(), AsyncState::Queued);
            id
        };
        if self.conn.queue.send((id.clone(), code, Some(timeout))).is_err() {
            return input_error("wrepl: the async evaluation worker has stopped");
        }
        let position = lock(&self.conn.book).active.len();
        let v = json!({"eval_id": id, "status": "queued", "position": position});
        let mut r = CallToolResult::success(vec![Content::text(format!(
            "queued as {id}; poll {RESULT_TOOL} with {{\"eval_id\": \"{id}\"}} or wait for {EVAL_NOTIFICATION}"
        ))]);
        r.structured_content = Some(v);
        r
    }

    async fn poll(&self, args: JsonObject) -> CallToolResult {
        let Some(id) = args.get("eval_id").and_then(Value::as_str) else {
            return input_error("invalid input: `eval_id` is required");
        };
        let wait = args.get("wait_ms").and_then(Value::as_f64).unwrap_or(0.0).clamp(0.0, 60_000.0);
        let deadline = tokio::time::Instant::now() + Duration::from_millis(wait as u64);
        loop {
            let state = lock(&self.conn.book).states.get(id).cloned();
            match state {
                None => {
                    return input_error(format!(
                    "unknown eval id {id:?} (finished results are kept for the last {MAX_FINISHED_EVALS} evaluations)"
                ))
                }
                Some(AsyncState::Done(v)) => {
                    let failed = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let mut r = match v.get("result").cloned().map(serde_json::from_value::<CallToolResult>) {
                        Some(Ok(r)) => r,
                        _ => input_error(
                            v.get("error").and_then(Value::as_str).unwrap_or("evaluation failed").to_string(),
                        ),
                    };
                    if failed {
                        r.is_error = Some(true);
                    }
                    return r;
                }
                Some(s) if tokio::time::Instant::now() >= deadline => {
                    let status = if matches!(s, AsyncState::Queued) { "queued" } else { "running" };
                    let mut r = CallToolResult::success(vec![Content::text(format!("{id} is {status}"))]);
                    r.structured_content = Some(json!({"eval_id": id, "status": status}));
                    return r;
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    async fn call_registered(
        &self,
        name: &str,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (cancel, watcher) = cancel_on(&context);
        let outcome =
            self.conn.run_registered(name, Value::Object(args), EvalOptions { cancel, ..EvalOptions::default() }).await;
        watcher.abort();
        let result = match outcome {
            Ok(settled) => outer_result(&format!("{REGISTERED_PREFIX}{name}"), &settled, self.conn.options.text_cap()),
            Err(e) => input_error(format!("wrepl: {e}")),
        };
        self.conn.announce_tool_changes().await;
        result
    }

    fn tool_list(&self) -> Vec<McpTool> {
        let mut tools = Vec::new();
        if self.conn.options.repl_enabled {
            tools.push(tool_def(REPL_TOOL, REPL_DESCRIPTION, repl_schema()));
            if self.conn.options.async_mode {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "eval_id": {"type": "string"},
                        "wait_ms": {"type": "number", "description": "Wait up to this long (max 60000) for it to finish."}
                    },
                    "required": ["eval_id"],
                    "additionalProperties": false
                });
                tools.push(tool_def(
                    RESULT_TOOL,
                    "Poll an async evaluation started by repl: its status, or its result when done.",
                    object_schema(&schema),
                ));
            }
            for t in lock(&self.conn.registered).iter() {
                let description = match &t.display_name {
                    Some(d) => format!("{d}: {}", t.description),
                    None => t.description.clone(),
                };
                tools.push(tool_def(
                    &format!("{REGISTERED_PREFIX}{}", t.name),
                    &description,
                    object_schema(&t.input_schema),
                ));
            }
        }
        tools
    }
}

impl ServerHandler for WreplServer {
    fn get_info(&self) -> InitializeResult {
        let caps = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let mut info = InitializeResult::new(caps);
        info.server_info = rmcp::model::Implementation::new("wrepl", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Use the `repl` tool to run JavaScript that calls many tools in one step (see its description).".into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.remember_peer(&context);
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.remember_peer(&context);
        if let Err(e) = self.choose_session(&context) {
            return Ok(input_error(e).into());
        }
        let args = request.arguments.clone().unwrap_or_default();
        let name = request.name.to_string();
        let enabled = self.conn.options.repl_enabled;
        let result = if enabled && name == REPL_TOOL {
            self.call_repl(args, context).await
        } else if enabled && name == RESULT_TOOL && self.conn.options.async_mode {
            self.poll(args).await
        } else if let Some(reg) = name.strip_prefix(REGISTERED_PREFIX).filter(|_| enabled) {
            let known = lock(&self.conn.registered).iter().any(|t| t.name == reg);
            if !known {
                return Err(McpError::invalid_params(format!("unknown tool {name:?}"), None));
            }
            self.call_registered(reg, args, context).await
        } else {
            return Err(McpError::invalid_params(format!("unknown tool {name:?}"), None));
        };
        Ok(result.into())
    }
}

/// Serve one connection over stdin/stdout until the client disconnects.
pub async fn serve_stdio(options: Arc<ServerOptions>) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let server = WreplServer::new(options);
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| ServeError::Transport(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Transport(e.to_string()))?;
    Ok(())
}

/// Serve streamable HTTP at `addr` (path `/mcp`) until `shutdown` fires. Calls
/// `bound` with the actual address once listening (useful with port 0).
pub async fn serve_http(
    options: Arc<ServerOptions>,
    addr: std::net::SocketAddr,
    shutdown: CancellationToken,
    bound: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let factory_options = options.clone();
    let service: StreamableHttpService<WreplServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(WreplServer::new(factory_options.clone())),
        Default::default(),
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    bound(listener.local_addr()?);
    axum::serve(listener, router).with_graceful_shutdown(async move { shutdown.cancelled_owned().await }).await?;
    Ok(())
}
