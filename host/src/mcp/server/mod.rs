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
//!
//! A tool call (its session, context and evaluation) is handled in
//! `tool_call`, async mode's queue and polling in `async_mode`, the tool
//! list and the rest of rmcp's `ServerHandler` in `handler`, and the stdio
//! transport in `stdio`.

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

mod async_mode;
pub mod auth;
mod client;
mod connection;
mod handler;
pub mod http;
pub mod hub;
pub mod metrics;
mod results;
mod stdio;
mod tool_call;

pub use auth::{token_lines, AuthError, Fingerprint, TokenSet, TokenSource};
use client::{McpApprover, McpSampler};
pub use client::{APPROVAL_INPUT_META, APPROVAL_SHOWN_CHARS};
use connection::{async_worker, lock, AsyncBook, AsyncState, Call, CallId, Connection, ProgressTarget, Retry, Served};
pub use http::{serve_http, HttpAuth, HttpSecurity};
pub use hub::{
    LiveLimits, DEFAULT_CONTEXT_TTL, DEFAULT_HIBERNATE_AFTER, DEFAULT_MAX_LIVE_MEMORY, MAX_LIVE_CONTEXTS,
    REQUEST_STATE_TTL,
};
pub use metrics::{serve_metrics, Metrics};
use results::{input_error, new_definitions, object_schema, repl_schema, to_value, tool_def};
pub use results::{outer_result, result_value, transcript, Settled};
pub use stdio::{serve_stdio, serve_streams};

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
    /// Hibernate a context unused for this long: snapshot it and drop its
    /// instance, keeping its handle (the next call wakes it from the
    /// snapshot); `None`: contexts stay live until evicted.
    pub hibernate_after: Option<Duration>,
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
            hibernate_after: Some(DEFAULT_HIBERNATE_AFTER),
            state_key: None,
            metrics: Arc::new(Metrics::new()),
            owners: Default::default(),
            hub: std::sync::OnceLock::new(),
        })
    }

    /// Hibernate idle contexts every so often ([`ServerOptions::hibernate_after`]),
    /// for as long as the server runs (the task ends with the runtime).
    pub fn spawn_hibernation(self: &Arc<Self>) {
        let Some(after) = self.hibernate_after else { return };
        let me = Arc::downgrade(self);
        let period = (after / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(options) = me.upgrade() else { return };
                if let Ok(hub) = options.hub() {
                    let n = hub.hibernate_idle(after).await;
                    options.metrics.hibernated(n as u64);
                }
            }
        });
    }

    /// Snapshot every live context before the server stops (waiting up to
    /// `wait` for busy ones); one line per context that could not be.
    pub async fn snapshot_contexts(&self, wait: Duration) -> Vec<String> {
        match self.hub.get() {
            Some(hub) => hub.snapshot_all(wait).await,
            None => Vec::new(),
        }
    }

    /// The server's contexts (made on first use from the options as they
    /// are then).
    fn hub(&self) -> Result<&hub::Hub, ServeError> {
        if let Some(h) = self.hub.get() {
            return Ok(h);
        }
        // The server's store, with its commits timed for the metrics.
        let store = self.store.clone().map(|s| metrics::MeteredStore::wrap(s, &self.metrics));
        let h = hub::Hub::new(store, self.state_key.clone(), self.context_ttl, self.live_limits)?;
        let mut fresh = false;
        let hub = self.hub.get_or_init(|| {
            fresh = true;
            h
        });
        if fresh {
            self.metrics.count_contexts_with(hub.context_counter());
        }
        Ok(hub)
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
