//! The MCP server: `wrepl serve` (stdio) and `wrepl serve --http ADDR`
//! (streamable HTTP), speaking both protocol revisions on one endpoint,
//! negotiated per request:
//! - **2025-11-25** (initialize, sessions): a connection has its own REPL
//!   context; model sampling (`haiku`) and `ask` approvals go back to the
//!   client live (`sampling/createMessage`, `elicitation/create`).
//! - **2026-07-28** (stateless): protocol version and client capabilities
//!   come with every request's `_meta`; the REPL context is named by a
//!   handle the server mints (`context`, see [`hub`]), and an approval or a
//!   sample ends the call as `input_required` (multi round-trip requests):
//!   the retry, on any server sharing the store, replays the log up to the
//!   waiting call, applies the answer and goes on.
//!
//! Inner-call progress is sent as `notifications/progress` on the outer
//! call's progress token; cancelling a request stops its evaluation and its
//! calls. `subscriptions/listen` delivers `tools/list_changed`.
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
    CustomRequest, CustomResult, ElicitRequestParams, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerNotification,
    SubscriptionFilter, Tool as McpTool,
};
use rmcp::service::{Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::budget::Budget;
use crate::call::REGISTERED_PREFIX;
use crate::context::{ContextManager, ContextStatus, Hydration, MAIN};
use crate::pipeline::dispatcher::{Approver, CallRecord};
use crate::pipeline::events::{EventSink, Phase, ProgressEvent};
use crate::pipeline::front::{FrontCall, FrontDefault};
use crate::repl::{EvalOptions, EvalResult, Repl, ReplBuilder, ReplError, RestoreReport};
use crate::replay::store::LogStore;
use crate::runtime::RegisteredTool;
use crate::tools::sampling::{SampleError, SampleRequest, Sampler};
use crate::tools::Media;

pub mod auth;
mod client;
mod connection;
pub mod http;
pub mod hub;
pub mod metrics;
mod results;

pub use auth::{AuthError, Fingerprint, TokenSet, TokenSource};
use client::{McpApprover, McpSampler};
pub use client::{APPROVAL_INPUT_META, APPROVAL_SHOWN_CHARS};
use connection::{async_worker, lock, AsyncBook, AsyncState, Call, CallId, Connection, ProgressTarget, Retry, Served};
pub use http::{serve_http, HttpAuth, HttpSecurity};
pub use hub::{LiveLimits, DEFAULT_CONTEXT_TTL, DEFAULT_MAX_LIVE_MEMORY, MAX_LIVE_CONTEXTS, REQUEST_STATE_TTL};
pub use metrics::{serve_metrics, Metrics};
use results::{input_error, new_definitions, object_schema, repl_schema, to_value, tool_def};
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
/// What a busy context's error suggests waiting before a retry.
pub const BUSY_RETRY_AFTER_MS: u64 = 2000;
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
    /// An `--allow-host` value is not a host.
    #[error("invalid host {0}")]
    BadHost(String),
    /// The server's tokens could not be obtained.
    #[error(transparent)]
    Auth(#[from] AuthError),
}

/// What every connection of one server shares.
pub struct ServerOptions {
    /// Template of each context's REPL: roots, settings, rules, tools,
    /// limits, engine. Per context, the server adds the client as approver
    /// and sampler, its progress sink and its session.
    pub builder: ReplBuilder,
    /// Where contexts are recorded (`None`: a private in-memory store, so
    /// contexts do not outlive the process).
    pub store: Option<Arc<dyn LogStore>>,
    /// Session to resume and record into (stdio: one connection). Without
    /// it, each context records under its own generated id.
    pub session: Option<String>,
    /// Async mode: `repl` returns an eval id at once.
    pub async_mode: bool,
    /// When false, no `repl` tool is listed (disabled by configuration).
    pub repl_enabled: bool,
    /// How long an unused context lives.
    pub context_ttl: Duration,
    /// How many contexts stay live, and how much guest memory they hold.
    pub live_limits: LiveLimits,
    /// The key (at least 32 bytes) that seals context handles and request
    /// states; every server sharing a store must use the same one. `None`:
    /// a key generated once and kept in the store (or, without a store, in
    /// memory).
    pub state_key: Option<Vec<u8>>,
    /// The server's metrics (served with [`serve_metrics`]).
    pub metrics: Arc<Metrics>,
    /// Store sessions opened over authenticated HTTP: the token that
    /// opened each. Another token cannot open them.
    owners: Mutex<HashMap<String, Fingerprint>>,
    hub: std::sync::OnceLock<hub::Hub>,
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
            context_ttl: DEFAULT_CONTEXT_TTL,
            live_limits: LiveLimits::default(),
            state_key: None,
            metrics: Arc::new(Metrics::new()),
            owners: Default::default(),
            hub: std::sync::OnceLock::new(),
        })
    }

    /// The server's contexts (made on first use from the options as they
    /// are then).
    fn hub(&self) -> Result<&hub::Hub, ServeError> {
        if let Some(h) = self.hub.get() {
            return Ok(h);
        }
        let h = hub::Hub::new(self.store.clone(), self.state_key.clone(), self.context_ttl, self.live_limits)?;
        Ok(self.hub.get_or_init(|| h))
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
                        "session {name:?} was not opened through this server with your token (it was recorded by \
                         another process or by the CLI), so it cannot be resumed over HTTP; resume it over stdio \
                         with `wrepl serve --session {name}`, or choose another session name"
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
            .field("context_ttl", &self.context_ttl)
            .finish_non_exhaustive()
    }
}

/// The MCP server handler of one connection (2025-11-25) or one request
/// (2026-07-28).
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
    /// runtime (it starts the connection's async-eval worker).
    pub fn new(options: Arc<ServerOptions>) -> Self {
        let name = options.session.clone();
        let (queue, queue_rx) = tokio::sync::mpsc::unbounded_channel();
        let conn = Arc::new(Connection {
            options,
            name: Mutex::new(name),
            principal: Mutex::new(None),
            default: Mutex::new(None),
            peer: Mutex::new(None),
            book: Mutex::new(AsyncBook::default()),
            queue,
        });
        tokio::spawn(async_worker(Arc::downgrade(&conn), queue_rx));
        Self { conn }
    }

    /// The session this connection's own context records under, once it
    /// has one (or the name chosen for it).
    pub fn session_name(&self) -> Option<String> {
        if let Some(c) = lock(&self.conn.default).as_ref() {
            return Some(c.id.clone());
        }
        lock(&self.conn.name).clone()
    }
}

/// A cancel token for an evaluation, triggered when the request is
/// cancelled; abort the returned task when done.
fn cancel_on(context: &RequestContext<RoleServer>) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let (ct, c) = (context.ct.clone(), cancel.clone());
    let watcher = tokio::spawn(async move {
        ct.cancelled().await;
        c.cancel();
    });
    (cancel, watcher)
}

/// True when the request speaks a revision without an initialize
/// handshake (2026-07-28 or later): stateless, questions through MRTR.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// The bearer token of an authenticated HTTP request.
fn token_of(context: &RequestContext<RoleServer>) -> Option<Fingerprint> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<http::Authenticated>())
        .map(|a| a.0)
}

/// Digest of a call's arguments (a retry must repeat them).
fn args_digest(args: &JsonObject) -> String {
    hub::digest(&[&Value::Object(args.clone()).to_string()])
}

impl WreplServer {
    fn remember_peer(&self, context: &RequestContext<RoleServer>) {
        let mut p = lock(&self.conn.peer);
        if p.is_none() {
            *p = Some(context.peer.clone());
        }
    }

    /// Over HTTP, `/mcp?session=NAME` picks the session the connection's
    /// own context resumes and records into (needs a store). Read until
    /// the context is made.
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
        if let Some(current) = lock(&self.conn.default).as_ref().map(|c| c.id.clone()) {
            return if current == wanted {
                Ok(())
            } else {
                Err(format!("this connection already records session {current:?}"))
            };
        }
        *lock(&self.conn.name) = Some(wanted.to_string());
        Ok(())
    }

    /// Over authenticated HTTP, the token of the request: every request of
    /// a connection must carry the same one (the middleware sees to it),
    /// and a named session the connection records into must be that token's.
    fn check_owner(&self, context: &RequestContext<RoleServer>) -> Result<Option<Fingerprint>, String> {
        let who = token_of(context);
        let mut principal = lock(&self.conn.principal);
        match (*principal, who) {
            (None, None) => return Ok(None),
            (None, Some(w)) => *principal = Some(w),
            (Some(p), Some(w)) if p == w => {}
            _ => return Err("this MCP connection belongs to another token".into()),
        }
        drop(principal);
        let Some(who) = who else { return Ok(None) };
        if lock(&self.conn.default).is_none() {
            if let Some(name) = lock(&self.conn.name).clone() {
                self.conn.options.claim_session(&name, who)?;
            }
        }
        Ok(Some(who))
    }

    /// The context a call runs in: the one its `context` handle names; for
    /// a retry, the one its request state names; else the connection's own
    /// (2025-11-25) or a fresh one (2026-07-28). A registered tool named
    /// without a handle runs in the context that registered it.
    fn context_for(
        &self,
        handle: Option<&str>,
        pending: Option<&hub::Pending>,
        registered: Option<&str>,
        owner: Option<Fingerprint>,
        modern: bool,
    ) -> Result<Arc<hub::Ctx>, String> {
        let hub = self.conn.options.hub().map_err(|e| e.to_string())?;
        if let Some(h) = handle {
            return hub.resolve(h, owner);
        }
        if let Some(p) = pending {
            return hub.by_id(&p.ctx, owner);
        }
        if !modern {
            return self.conn.default_context();
        }
        if let Some(name) = registered {
            return hub
                .registered_for(owner)
                .into_iter()
                .find(|(t, _)| t.name == name)
                .map(|(_, c)| c)
                .ok_or_else(|| format!("unknown tool {REGISTERED_PREFIX}{name:?}"));
        }
        hub.mint(owner, None)
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let modern = is_modern(&context);
        let owner = if modern {
            token_of(&context)
        } else {
            match self.choose_session(&context).and_then(|()| self.check_owner(&context)) {
                Ok(o) => o,
                Err(e) => return Ok(input_error(e).into()),
            }
        };
        let name = request.name.to_string();
        let mut args = request.arguments.clone().unwrap_or_default();
        let digest = args_digest(&args);
        let handle = match args.remove("context") {
            None | Some(Value::Null) => None,
            Some(Value::String(h)) => Some(h),
            Some(_) => return Ok(input_error("invalid input: `context` must be a string (a context handle)").into()),
        };
        // `fork` is the repl tool's own argument; a registered tool's input
        // may have a property of that name, which stays its own.
        let fork = match (name == REPL_TOOL).then(|| args.remove("fork")).flatten() {
            None | Some(Value::Null) => None,
            Some(Value::String(h)) => Some(h),
            Some(_) => return Ok(input_error("invalid input: `fork` must be a string (a context handle)").into()),
        };
        let enabled = self.conn.options.repl_enabled;
        let registered = name.strip_prefix(REGISTERED_PREFIX).filter(|_| enabled);
        let is_repl = enabled && name == REPL_TOOL;
        if enabled && name == RESULT_TOOL && self.conn.options.async_mode && !modern {
            return Ok(self.poll(args).await.into());
        }
        if !is_repl && registered.is_none() {
            return Err(McpError::invalid_params(format!("unknown tool {name:?}"), None));
        }
        // A retry of a call that asked for input.
        let hub = self.conn.options.hub().map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let retry = match &request.request_state {
            Some(state) if modern => match hub.open_pending(state, owner) {
                Ok(pending) => Some(Retry {
                    pending,
                    answers: request.input_responses.clone().unwrap_or_default().into_iter().collect(),
                    tool: name.clone(),
                    args: digest.clone(),
                }),
                Err(e) => return Ok(input_error(e).into()),
            },
            Some(_) => {
                return Ok(input_error("requestState is only accepted from clients speaking protocol 2026-07-28").into())
            }
            None => None,
        };
        let ctx = match &fork {
            Some(_) if !modern => {
                return Ok(input_error(
                    "invalid input: `fork` takes a context handle, which clients speaking protocol 2026-07-28 get",
                )
                .into())
            }
            Some(_) if handle.is_some() || retry.is_some() => {
                return Ok(input_error(
                    "invalid input: `fork` starts a new context: give it instead of `context`, on a new repl call",
                )
                .into())
            }
            Some(parent) => hub.fork(parent, owner).await,
            None => self.context_for(handle.as_deref(), retry.as_ref().map(|r| &r.pending), registered, owner, modern),
        };
        let ctx = match ctx {
            Ok(c) => c,
            Err(e) => return Ok(input_error(e).into()),
        };
        let call = if is_repl {
            let Some(code) = args.get("code").and_then(Value::as_str).map(str::to_string) else {
                return Ok(input_error("invalid input: `code` (a string of JavaScript) is required").into());
            };
            if let Some(k) = args.keys().find(|k| !matches!(k.as_str(), "code" | "description" | "timeout")) {
                return Ok(input_error(format!(
                    "invalid input: unknown field {k:?} (expected code, description, timeout, context, fork)"
                ))
                .into());
            }
            if self.conn.options.async_mode && !modern && handle.is_none() {
                let timeout = match Budget::from_json(args.get("timeout")).map_err(ReplError::from) {
                    Ok(t) => t,
                    Err(e) => return Ok(input_error(e.to_string()).into()),
                };
                return Ok(self.enqueue(code, timeout).into());
            }
            Call::Repl { code }
        } else {
            let reg = registered.unwrap_or_default();
            let mut known = lock(&ctx.registered).iter().any(|t| t.name == reg);
            if !known {
                // A context that is not live here yet (another server made
                // it, or it was evicted), or whose warm copy is stale (on a
                // shared store, another server wrote since), comes back by
                // replay, with its tools.
                let mut state = ctx.state.lock().await;
                let rebuilt = match connection::reclaim(hub, &ctx, &mut state).await {
                    Ok(()) => connection::ensure_repl(&self.conn.options, &ctx, &mut state).await.map(|_| ()),
                    Err(e) => Err(e),
                };
                if let Err(e) = rebuilt {
                    return Ok(input_error(format!("wrepl: {e}")).into());
                }
                known = lock(&ctx.registered).iter().any(|t| t.name == reg);
                // The call itself takes the lease again when it runs.
                connection::give_back(hub, &mut state);
            }
            if !known {
                return Err(McpError::invalid_params(format!("unknown tool {name:?}"), None));
            }
            Call::Registered { name: reg.to_string(), input: Value::Object(args.clone()) }
        };
        let timeout = match (&call, Budget::from_json(args.get("timeout")).map_err(ReplError::from)) {
            (Call::Repl { .. }, Ok(t)) => Some(t),
            (Call::Repl { .. }, Err(e)) => return Ok(input_error(e.to_string()).into()),
            _ => None,
        };
        let (cancel, watcher) = cancel_on(&context);
        let progress = context.meta.get_progress_token().map(|token| ProgressTarget {
            peer: context.peer.clone(),
            token,
            count: 0,
        });
        let round = modern.then(|| {
            let answers = retry.as_ref().map(|r| r.answers.clone()).unwrap_or_default();
            Arc::new(hub::Round::new(answers, retry.as_ref().map(|r| &r.pending)))
        });
        let link = hub::Link {
            peer: context.peer.clone(),
            caps: context.client_capabilities().unwrap_or_default(),
            round,
            progress,
        };
        let opts = EvalOptions { timeout, cancel, ..EvalOptions::default() };
        let id = CallId { tool: name.clone(), args: digest, owner };
        let mrtr = modern.then_some((id, retry));
        let started = std::time::Instant::now();
        let outcome = connection::serve_call(&self.conn.options, &ctx, call, opts, link, mrtr).await;
        watcher.abort();
        let what = match &outcome {
            Ok(Served::Done(r)) if r.is_error == Some(true) => "error",
            Ok(Served::Done(_)) => "ok",
            Ok(Served::Input(_)) => "input_required",
            Err(ReplError::Session(crate::replay::store::StoreError::SessionBusy { .. })) => "busy",
            Err(_) => "error",
        };
        self.conn.options.metrics.eval(what, started.elapsed().as_secs_f64());
        Ok(match outcome {
            Ok(Served::Done(r)) => r.into(),
            Ok(Served::Input(r)) => CallToolResponse::InputRequired(*r),
            Err(ReplError::Session(crate::replay::store::StoreError::SessionBusy { holder, .. })) => {
                // Another server (or connection) is serving this context: nothing ran here.
                let mut r = input_error(format!(
                    "busy: this context is being served by {holder}; nothing was run; retry the call in a few seconds"
                ));
                r.structured_content = Some(json!({"busy": true, "retry_after_ms": BUSY_RETRY_AFTER_MS}));
                connection::attach_handle(&mut r, &ctx.handle);
                r.into()
            }
            Err(e) => {
                let mut r = input_error(format!("wrepl: {e}"));
                connection::attach_handle(&mut r, &ctx.handle);
                r.into()
            }
        })
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

    /// The tools this caller sees: `repl` (and `repl_result` in async
    /// mode), then the registered tools of its contexts (a 2025-11-25
    /// connection: its own context's, made now, so that tools restored
    /// from a session are listed at once).
    async fn tool_list(&self, context: &RequestContext<RoleServer>) -> Vec<McpTool> {
        let mut tools = Vec::new();
        if !self.conn.options.repl_enabled {
            return tools;
        }
        tools.push(results::repl_tool());
        let modern = is_modern(context);
        // Async mode needs a session to poll in: 2026-07-28 calls run synchronously.
        if self.conn.options.async_mode && !modern {
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
        let Ok(hub) = self.conn.options.hub() else { return tools };
        let registered: Vec<RegisteredTool> = if modern {
            hub.registered_for(token_of(context)).into_iter().map(|(t, _)| t).collect()
        } else {
            let restored = self.conn.options.store.is_some() && lock(&self.conn.name).is_some();
            if restored && self.check_owner(context).is_ok() {
                if let Ok(ctx) = self.conn.default_context() {
                    let mut state = ctx.state.lock().await;
                    if connection::ensure_repl(&self.conn.options, &ctx, &mut state).await.is_ok() {
                        // Listing is no call: give the lease back at once.
                        connection::give_back(hub, &mut state);
                    }
                }
            }
            let default = lock(&self.conn.default).clone();
            default.map(|c| lock(&c.registered).clone()).unwrap_or_default()
        };
        for t in registered {
            tools.push(results::registered_tool(&t));
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
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            return Err(McpError::invalid_params(
                format!("invalid cursor {cursor:?}: this server lists every tool on one page"),
                None,
            ));
        }
        self.remember_peer(&context);
        Ok(ListToolsResult::with_all_items(self.tool_list(&context).await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.remember_peer(&context);
        self.call(request, context).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build().intersection(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let hub = self.conn.options.hub().map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let mut changes = hub.tools_changed.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                r = changes.recv() => match r {
                    Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // A known method whose params did not parse arrives here.
        // (Methods the newest revision removed, such as initialize and
        // ping in a 2026-07-28 request, are not found, as it asks.)
        let known = ["tools/call", "tools/list", "server/discover", "subscriptions/listen"];
        if known.contains(&request.method.as_str()) {
            return Err(McpError::invalid_params(
                format!(
                    "invalid params for {}: {}",
                    request.method,
                    match request.method.as_str() {
                        "tools/call" => "`name` must be a string and `arguments`, when given, an object",
                        _ => "they do not have the shape the protocol gives",
                    }
                ),
                None,
            ));
        }
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {}", request.method),
            None,
        ))
    }
}

/// Largest stdio message read (a longer line is answered as a parse error).
const MAX_STDIO_LINE: usize = 64 << 20;

/// Serve one connection over stdin/stdout until the client disconnects.
///
/// Between the streams and rmcp sits a line filter: a line that is not
/// JSON is answered with a JSON-RPC parse error (-32700) instead of being
/// dropped, and the answers and rmcp's own messages reach stdout as whole
/// lines, never interleaved.
pub async fn serve_stdio(options: Arc<ServerOptions>) -> Result<(), ServeError> {
    serve_streams(options, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve_stdio`] over any pair of byte streams.
pub async fn serve_streams<R, W>(options: Arc<ServerOptions>, input: R, output: W) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    options.hub()?;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    // Input: pass JSON lines on, answer the rest.
    let reader = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(input);
        let mut to_rmcp = to_rmcp;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = match (&mut lines).take(MAX_STDIO_LINE as u64 + 1).read_until(b'\n', &mut line).await {
                Ok(n) => n,
                Err(_) => break,
            };
            if n == 0 {
                break;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > MAX_STDIO_LINE || serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
                let why = if line.len() > MAX_STDIO_LINE { "the message is too long" } else { "the line is not JSON" };
                let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {why}")}});
                let _ = errors_tx.send(e.to_string());
                let unfinished = line.len() > MAX_STDIO_LINE && !line.ends_with(b"\n");
                if line.len() > MAX_STDIO_LINE {
                    // Give back the buffer the overlong line grew.
                    line = Vec::new();
                }
                if unfinished {
                    // Skip the rest of the overlong line, a buffer at a
                    // time: it is never held whole.
                    while let Ok(buf) = lines.fill_buf().await {
                        if buf.is_empty() {
                            break;
                        }
                        match buf.iter().position(|&b| b == b'\n') {
                            Some(i) => {
                                lines.consume(i + 1);
                                break;
                            }
                            None => {
                                let n = buf.len();
                                lines.consume(n);
                            }
                        }
                    }
                }
                continue;
            }
            if to_rmcp.write_all(body).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                break;
            }
        }
        let _ = to_rmcp.shutdown().await;
    });
    // Output: rmcp's lines and the parse errors, each whole.
    let writer = tokio::spawn(async move {
        let mut out = output;
        let mut from_rmcp = tokio::io::BufReader::new(from_rmcp);
        let mut line = Vec::new();
        let mut errors_open = true;
        loop {
            line.clear();
            tokio::select! {
                r = from_rmcp.read_until(b'\n', &mut line) => match r {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                            break;
                        }
                    }
                },
                e = errors_rx.recv(), if errors_open => match e {
                    Some(e) => {
                        if out.write_all(format!("{e}\n").as_bytes()).await.is_err() || out.flush().await.is_err() {
                            break;
                        }
                    }
                    None => errors_open = false,
                },
            }
        }
    });
    let server = WreplServer::new(options);
    let result = async {
        let running = server.serve((rmcp_in, rmcp_out)).await.map_err(|e| ServeError::Transport(e.to_string()))?;
        running.waiting().await.map_err(|e| ServeError::Transport(e.to_string()))?;
        Ok(())
    }
    .await;
    reader.abort();
    let _ = writer.await;
    result
}
