//! The MCP server: `wrepl serve` (stdio) and `wrepl serve --http ADDR`
//! (streamable HTTP). One [`WreplServer`] per MCP connection owns one REPL
//! context and one inner-call pipeline whose model sampling (`haiku`) and
//! `ask` approvals go back to that connection's client
//! (`sampling/createMessage`, `elicitation/create`). Inner-call progress is
//! sent as `notifications/progress` on the outer call's progress token;
//! `notifications/cancelled` stops the running evaluation and its calls.
//!
//! Over HTTP every request passes one middleware ([`http`]): a foreign
//! `Origin` gets 403, a missing or wrong bearer token 401 ([`auth`]), and an
//! MCP session or a store session belongs to the token that created it.

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

pub mod auth;
mod client;
mod connection;
pub mod http;
mod results;

pub use auth::{AuthError, Fingerprint, TokenSet, TokenSource};
use client::{McpApprover, McpSampler};
pub use client::{APPROVAL_INPUT_META, APPROVAL_SHOWN_CHARS};
use connection::{async_worker, lock, AsyncBook, AsyncState, ConnState, Connection, ProgressTarget};
pub use http::{serve_http, HttpAuth, HttpSecurity};
use results::{input_error, new_definitions, object_schema, repl_schema, to_value, tool_def, REPL_DESCRIPTION};
pub use results::{outer_result, transcript, Settled};

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
    /// The HTTP server would be open to anyone (`--no-auth` on a
    /// non-loopback address).
    #[error("refusing to serve: {0}")]
    Insecure(String),
    /// An `--allow-origin` value is not an origin.
    #[error("invalid origin {0}")]
    BadOrigin(String),
    /// The server's tokens could not be obtained.
    #[error(transparent)]
    Auth(#[from] AuthError),
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
    /// Store sessions opened over authenticated HTTP: the token that
    /// opened each. Another token cannot open them.
    owners: Mutex<HashMap<String, Fingerprint>>,
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
            owners: Default::default(),
        })
    }

    /// Lets the token `who` record into the store session `name`: a session
    /// it opened before, or one that is not in the store yet (now its own).
    /// A session another token opened, or one recorded by anything but this
    /// server's authenticated HTTP (another process, the CLI), is refused:
    /// ownership is known only for sessions this process saw opened.
    fn claim_session(&self, name: &str, who: Fingerprint) -> Result<(), String> {
        let Some(store) = &self.store else { return Ok(()) };
        let mut owners = lock(&self.owners);
        match owners.get(name) {
            Some(owner) if *owner == who => Ok(()),
            Some(_) => Err(format!("session {name:?} belongs to another token; choose another session name")),
            None => {
                let sessions = store.sessions().map_err(|e| format!("session store: {e}"))?;
                if sessions.iter().any(|s| s.name == name) {
                    return Err(format!(
                        "session {name:?} was not opened through this server with your token (it was recorded by                          another process or by the CLI), so it cannot be resumed over HTTP; resume it over stdio                          with `wrepl serve --session {name}`, or choose another session name"
                    ));
                }
                owners.insert(name.to_string(), who);
                Ok(())
            }
        }
    }

    pub(super) fn text_cap(&self) -> usize {
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
            principal: Mutex::new(None),
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

    /// Over authenticated HTTP, the token of the request: every request of
    /// a connection must carry the same one (the middleware sees to it),
    /// and the session the connection records into must be that token's.
    fn check_owner(&self, context: &RequestContext<RoleServer>) -> Result<(), String> {
        let who = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<http::Authenticated>())
            .map(|a| a.0);
        let mut principal = lock(&self.conn.principal);
        match (*principal, who) {
            (None, None) => return Ok(()),
            (None, Some(w)) => *principal = Some(w),
            (Some(p), Some(w)) if p == w => {}
            _ => return Err("this MCP connection belongs to another token".into()),
        }
        drop(principal);
        let Some(who) = who else { return Ok(()) };
        if *lock(&self.conn.claimed) {
            return Ok(());
        }
        let name = lock(&self.conn.name).clone();
        self.conn.options.claim_session(&name, who)
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
        if let Err(e) = self.choose_session(&context).and_then(|()| self.check_owner(&context)) {
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
