//! Connections to downstream servers: starting a command server (its own
//! process group, a small environment, stderr kept and forwarded) or
//! connecting a streamable HTTP one, reading with bounded message sizes,
//! listing tools within the page and tool caps, routing progress to the
//! calling tool, cancelling calls, and shutting servers down.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, JsonRpcMessage, ListToolsRequest, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    Request, ServerNotification, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use super::config::{ServerConfig, ServerTransport, DEFAULT_CALL_TIMEOUT, MAX_MESSAGE_BYTES, MAX_TOOLS_PER_SERVER};
use super::tool::McpTool;
use super::{cap_text, shown};
use crate::process::{EnvPolicy, ProcessGroup};
use crate::text::floor_char_boundary;
use crate::tools::{ProgressFn, Tool, ToolContext, ToolError, ToolProgress};

/// Most `tools/list` pages read from one server.
const MAX_LIST_PAGES: usize = 100;
/// Longest server-provided error text kept in an error message.
const MAX_ERROR_TEXT: usize = 4 * 1024;
/// Progress reports kept for calls whose route is not registered yet.
const MAX_EARLY_PROGRESS: usize = 32;
/// Longest progress message kept.
const MAX_PROGRESS_MESSAGE: usize = 1024;
/// How much of a child's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2048;
/// Environment variables a command server inherits from wrepl (as the MCP
/// reference SDK does); everything else must be given in its `env`.
const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR"];

// ---------------------------------------------------------------------------
// Progress routing

/// Routes `notifications/progress` to the call that owns the progress token.
#[derive(Default)]
struct ProgressRouter {
    inner: Mutex<RouterInner>,
}

#[derive(Default)]
struct RouterInner {
    routes: HashMap<ProgressToken, ProgressFn>,
    /// Reports that arrived before their call registered its route (the
    /// token is known only once the request is sent); bounded.
    early: VecDeque<ProgressNotificationParam>,
}

impl ProgressRouter {
    fn deliver(&self, p: ProgressNotificationParam) {
        let route = {
            let Ok(mut inner) = self.inner.lock() else { return };
            match inner.routes.get(&p.progress_token) {
                Some(f) => f.clone(),
                None => {
                    if inner.early.len() >= MAX_EARLY_PROGRESS {
                        inner.early.pop_front();
                    }
                    inner.early.push_back(p);
                    return;
                }
            }
        };
        route(to_tool_progress(p));
    }

    /// Routes `token` to `f` until the returned guard is dropped.
    fn register(self: &Arc<Self>, token: ProgressToken, f: ProgressFn) -> RouteGuard {
        let early: Vec<_> = match self.inner.lock() {
            Ok(mut inner) => {
                inner.routes.insert(token.clone(), f.clone());
                let (mine, rest): (Vec<_>, Vec<_>) = inner.early.drain(..).partition(|p| p.progress_token == token);
                inner.early = rest.into();
                mine
            }
            Err(_) => Vec::new(),
        };
        for p in early {
            f(to_tool_progress(p));
        }
        RouteGuard { router: self.clone(), token }
    }
}

fn to_tool_progress(p: ProgressNotificationParam) -> ToolProgress {
    ToolProgress { progress: p.progress, total: p.total, message: p.message.map(|m| cap_text(m, MAX_PROGRESS_MESSAGE)) }
}

struct RouteGuard {
    router: Arc<ProgressRouter>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.router.inner.lock() {
            inner.routes.remove(&self.token);
            inner.early.retain(|p| p.progress_token != self.token);
        }
    }
}

/// Our side of each connection: answers nothing beyond the defaults (no
/// sampling, no roots, elicitation declined).
#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("wrepl", env!("CARGO_PKG_VERSION")))
    }
}

/// Routes `notifications/progress` as messages are read, in order and before
/// the reply they precede (rmcp hands notifications to the client handler on
/// separate tasks, which may run after the call has already returned).
struct ProgressTap<T> {
    inner: T,
    router: Arc<ProgressRouter>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let router = self.router.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(JsonRpcMessage::Notification(n)) = &message {
                if let ServerNotification::ProgressNotification(p) = &n.notification {
                    router.deliver(p.params.clone());
                }
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

// ---------------------------------------------------------------------------
// Child processes and bounded reads

/// Reads a server's stdout, ending the stream (EOF) when one line grows past
/// the limit, so an oversized message disconnects the server instead of
/// being silently dropped (which would leave its call waiting forever).
struct BoundedLines<R> {
    inner: R,
    line: usize,
    max: usize,
    tripped: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.tripped.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let mut segments = buf.filled()[before..].split(|b| *b == b'\n').peekable();
        while let Some(seg) = segments.next() {
            this.line = this.line.saturating_add(seg.len());
            if this.line > this.max {
                this.tripped.store(true, Ordering::Relaxed);
                buf.set_filled(before);
                return Poll::Ready(Ok(()));
            }
            if segments.peek().is_some() {
                this.line = 0;
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of a child's stderr (for error
/// messages) and forwards it, line-prefixed, to wrepl's stderr (never stdout).
fn spawn_stderr_pump(
    name: String,
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<String>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        loop {
            let n = match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let chunk = String::from_utf8_lossy(&buf[..n]);
            if let Ok(mut t) = tail.lock() {
                t.push_str(&chunk);
                if t.len() > STDERR_TAIL_BYTES {
                    let cut = t.len() - STDERR_TAIL_BYTES;
                    let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(t.len());
                    t.drain(..cut);
                }
            }
            let mut out = String::new();
            for line in chunk.lines() {
                let line = &line[..floor_char_boundary(line, 1024)];
                out.push_str(&format!("[mcp:{name}] {line}\n"));
            }
            let _ = io::Write::write_all(&mut io::stderr().lock(), out.as_bytes());
        }
    })
}

// ---------------------------------------------------------------------------
// Connections

/// One live server connection.
pub(super) struct ServerConn {
    /// The configured server name.
    pub(super) name: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Client>>>,
    progress: Arc<ProgressRouter>,
    /// The server's child process (command servers); its group is killed
    /// when this is dropped.
    pub(super) child: Mutex<Option<ProcessGroup>>,
    /// Set when the server sent a message over [`MAX_MESSAGE_BYTES`].
    oversized: Arc<AtomicBool>,
    stderr_tail: Arc<Mutex<String>>,
    /// Native timeout of its tool calls.
    pub(super) timeout: Duration,
}

impl ServerConn {
    /// Why calls to this server fail at the transport level.
    fn down_reason(&self) -> String {
        let mut why = format!("MCP server {:?} is not running (its connection closed)", self.name);
        if self.oversized.load(Ordering::Relaxed) {
            why = format!(
                "MCP server {:?} sent a message larger than {MAX_MESSAGE_BYTES} bytes and was disconnected",
                self.name
            );
        }
        let tail = self.stderr_tail.lock().map(|t| t.trim().to_string()).unwrap_or_default();
        if !tail.is_empty() {
            why.push_str(&format!("; its stderr ended with: {tail}"));
        }
        why
    }

    /// Stops the connection now: cancels the service and kills the process group.
    pub(super) fn terminate(&self) {
        if let Ok(mut s) = self.service.lock() {
            if let Some(s) = s.as_ref() {
                s.cancellation_token().cancel();
            }
            s.take();
        }
        if let Ok(mut c) = self.child.lock() {
            if let Some(c) = c.as_mut() {
                c.kill();
            }
        }
    }

    /// Closes the connection politely, then makes sure the process is gone.
    pub(super) async fn shutdown(&self) {
        let service = self.service.lock().ok().and_then(|mut s| s.take());
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(Duration::from_secs(2)).await;
        }
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut group) = child {
            if tokio::time::timeout(Duration::from_secs(2), group.wait()).await.is_err() {
                group.kill();
                let _ = tokio::time::timeout(Duration::from_secs(2), group.wait()).await;
            }
            // Whatever the leader left behind in its group goes too. The group
            // id cannot be reused while any member is alive.
            group.kill();
        }
    }
}

/// Installs rustls' `ring` provider as the process default (once; an
/// already-installed provider is kept).
pub(crate) fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // See `ring_provider` on its deprecation.
        #[allow(deprecated)]
        let provider = rustls::crypto::ring::default_provider();
        let _ = provider.install_default();
    });
}

/// What connecting one server produced.
pub(super) struct Connected {
    /// The connection.
    pub(super) conn: Arc<ServerConn>,
    /// Its tools.
    pub(super) tools: Vec<Arc<dyn Tool>>,
    /// What was skipped or truncated while listing.
    pub(super) warnings: Vec<String>,
}

pub(super) async fn connect_one(name: &str, server: ServerConfig) -> Result<Connected, String> {
    match server.transport {
        ServerTransport::Stdio { command, args, env, cwd } => {
            let mut cmd = tokio::process::Command::new(&command);
            cmd.args(&args);
            if let Some(cwd) = &cwd {
                cmd.current_dir(cwd);
            }
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            let policy = EnvPolicy::only(INHERITED_ENV).set_all(&env);
            let mut group =
                ProcessGroup::spawn(&mut cmd, &policy).map_err(|e| format!("cannot start {command:?}: {e}"))?;
            let child = group.child_mut();
            let (Some(stdout), Some(stdin), Some(stderr)) =
                (child.stdout.take(), child.stdin.take(), child.stderr.take())
            else {
                return Err("the child process has no stdio pipes".into());
            };
            let tail: Arc<Mutex<String>> = Arc::default();
            let pump = spawn_stderr_pump(name.to_string(), stderr, tail.clone());
            start(name, Box::new(stdout), Box::new(stdin), Some((group, pump)), tail, server.timeout).await
        }
        ServerTransport::Http { url, headers } => {
            ensure_crypto_provider();
            let mut map = HashMap::new();
            for (k, v) in &headers {
                let k =
                    axum::http::HeaderName::try_from(k.as_str()).map_err(|_| format!("invalid header name {k:?}"))?;
                let v = axum::http::HeaderValue::try_from(v.as_str()).map_err(|_| format!("invalid value for {k}"))?;
                map.insert(k, v);
            }
            let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
            cfg.max_sse_event_size = MAX_MESSAGE_BYTES;
            cfg.max_json_response_size = MAX_MESSAGE_BYTES;
            let transport = StreamableHttpClientTransport::from_config(cfg);
            let progress = Arc::new(ProgressRouter::default());
            let transport = ProgressTap { inner: transport, router: progress.clone() };
            let service = Client.serve(transport).await.map_err(|e| e.to_string())?;
            finish(name, service, progress, None, Arc::default(), Arc::default(), server.timeout).await
        }
    }
}

/// Starts the MCP client over a byte stream (a child's stdio or a test pipe).
pub(super) async fn start(
    name: &str,
    read: Box<dyn AsyncRead + Send + Unpin>,
    write: Box<dyn AsyncWrite + Send + Unpin>,
    child: Option<(ProcessGroup, tokio::task::JoinHandle<()>)>,
    tail: Arc<Mutex<String>>,
    timeout: Option<Duration>,
) -> Result<Connected, String> {
    let (child, pump) = child.unzip();
    let oversized = Arc::new(AtomicBool::new(false));
    let read = BoundedLines { inner: read, line: 0, max: MAX_MESSAGE_BYTES, tripped: oversized.clone() };
    let transport = AsyncRwTransport::new_client(read, write).with_max_line_length(MAX_MESSAGE_BYTES + 1);
    let progress = Arc::new(ProgressRouter::default());
    let transport = ProgressTap { inner: transport, router: progress.clone() };
    let service = match Client.serve(transport).await {
        Ok(s) => s,
        Err(e) => {
            let mut why = e.to_string();
            if oversized.load(Ordering::Relaxed) {
                why.push_str(&format!("; it sent a message larger than {MAX_MESSAGE_BYTES} bytes"));
            }
            // Let the last words on its stderr arrive (bounded: a grandchild
            // may hold the pipe open).
            if let Some(pump) = pump {
                let _ = tokio::time::timeout(Duration::from_millis(500), pump).await;
            }
            let tail = tail.lock().map(|t| t.trim().to_string()).unwrap_or_default();
            if !tail.is_empty() {
                why.push_str(&format!("; its stderr ended with: {tail}"));
            }
            return Err(why);
        }
    };
    finish(name, service, progress, child, oversized, tail, timeout).await
}

async fn finish(
    name: &str,
    service: RunningService<RoleClient, Client>,
    progress: Arc<ProgressRouter>,
    child: Option<ProcessGroup>,
    oversized: Arc<AtomicBool>,
    stderr_tail: Arc<Mutex<String>>,
    timeout: Option<Duration>,
) -> Result<Connected, String> {
    let conn = Arc::new(ServerConn {
        name: name.to_string(),
        peer: service.peer().clone(),
        service: Mutex::new(Some(service)),
        progress,
        child: Mutex::new(child),
        oversized,
        stderr_tail,
        timeout: timeout.unwrap_or(DEFAULT_CALL_TIMEOUT),
    });
    let (listed, mut warnings) = match list_tools(&conn).await {
        Ok(r) => r,
        Err(e) => {
            conn.terminate();
            return Err(e);
        }
    };
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut names = HashSet::new();
    for raw in listed {
        match McpTool::from_listing(&conn, raw) {
            Ok(t) if !names.insert(t.tool.clone()) => {
                warnings.push(format!("MCP server {name:?}: skipped a second tool named {}", shown(&t.tool)))
            }
            Ok(t) => tools.push(Arc::new(t)),
            Err(w) => warnings.push(format!("MCP server {name:?}: {w}")),
        }
    }
    Ok(Connected { conn, tools, warnings })
}

/// Lists a server's tools page by page (raw JSON, so that one malformed
/// entry skips that tool, not the server), within the page and tool caps.
async fn list_tools(conn: &ServerConn) -> Result<(Vec<Value>, Vec<String>), String> {
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for page in 0.. {
        if page == MAX_LIST_PAGES {
            warnings.push(format!(
                "MCP server {:?}: tools/list has more than {MAX_LIST_PAGES} pages; the rest are ignored",
                conn.name
            ));
            break;
        }
        let mut params = PaginatedRequestParams::default();
        params.cursor = cursor.take();
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let result = conn.peer.send_request(request).await.map_err(|e| service_error(conn, "tools/list", e))?;
        let value = match result {
            ServerResult::ListToolsResult(r) => serde_json::to_value(r),
            ServerResult::CustomResult(c) => Ok(c.0),
            other => serde_json::to_value(other),
        }
        .map_err(|e| format!("unreadable tools/list reply: {e}"))?;
        let Some(Value::Array(items)) = value.get("tools") else {
            return Err("its tools/list reply has no \"tools\" array".into());
        };
        for item in items {
            if tools.len() == MAX_TOOLS_PER_SERVER {
                warnings.push(format!(
                    "MCP server {:?} lists more than {MAX_TOOLS_PER_SERVER} tools; the rest are ignored",
                    conn.name
                ));
                return Ok((tools, warnings));
            }
            tools.push(item.clone());
        }
        match value.get("nextCursor") {
            Some(Value::String(c)) if !c.is_empty() => {
                if c.len() > 4096 || !seen.insert(c.clone()) {
                    warnings.push(format!(
                        "MCP server {:?}: tools/list returned a repeated or oversized cursor; listing stopped",
                        conn.name
                    ));
                    break;
                }
                cursor = Some(c.clone());
            }
            _ => break,
        }
    }
    Ok((tools, warnings))
}

fn service_error(conn: &ServerConn, what: &str, e: ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => format!(
            "MCP server {:?} answered {what} with error {}: {}",
            conn.name,
            data.code.0,
            cap_text(data.message.to_string(), MAX_ERROR_TEXT)
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => conn.down_reason(),
        other => format!("MCP server {:?}: {what} failed: {}", conn.name, cap_text(other.to_string(), MAX_ERROR_TEXT)),
    }
}

/// Sends `notifications/cancelled` for a request if dropped while armed
/// (the caller stopped waiting without going through the cancel token).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let param = CancelledNotificationParam::new(Some(id), Some("the caller stopped waiting".into()));
                let _ = tokio::time::timeout(Duration::from_secs(2), peer.notify_cancelled(param)).await;
            });
        }
    }
}

impl ServerConn {
    /// Sends `tools/call` for `tool` and waits for its reply, routing the
    /// call's progress to `ctx.progress`; `ctx.cancel` stops the wait and
    /// sends `notifications/cancelled`. `what` names the call in errors.
    pub(super) async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        ctx: &ToolContext,
        what: &str,
    ) -> Result<CallToolResult, ToolError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(arguments);
        // The call's span (SEP-414): the server may continue the trace.
        if let Some(t) = &ctx.trace {
            let mut meta = rmcp::model::MetaObject::new();
            meta.set_traceparent(t.traceparent.clone());
            if let Some(state) = &t.tracestate {
                meta.set_tracestate(state.clone());
            }
            params.meta = Some(rmcp::model::RequestMetaObject(meta));
        }
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let handle = self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| ToolError::Failed(service_error(self, what, e)))?;
        let _route = ctx.progress.clone().map(|f| self.progress.register(handle.progress_token.clone(), f));
        let mut guard = CancelOnDrop { peer: self.peer.clone(), id: Some(handle.id.clone()) };
        let response = tokio::select! {
            biased;
            r = handle.await_response() => r,
            _ = ctx.cancel.cancelled() => {
                if let Some(id) = guard.id.take() {
                    let param = CancelledNotificationParam::new(Some(id), Some("cancelled by wrepl".into()));
                    let _ = tokio::time::timeout(Duration::from_secs(2), self.peer.notify_cancelled(param)).await;
                }
                return Err(ToolError::Cancelled(format!("{what} on MCP server {:?} was cancelled", self.name)));
            }
        };
        guard.id = None;
        let result = match response.map_err(|e| ToolError::Failed(service_error(self, what, e)))? {
            ServerResult::CallToolResult(r) => r,
            ServerResult::EmptyResult(_) => Default::default(),
            ServerResult::InputRequiredResult(_) => {
                return Err(ToolError::Failed(format!(
                    "MCP server {:?} asked for user input during {what}, which wrepl cannot give",
                    self.name
                )))
            }
            _ => {
                return Err(ToolError::Failed(format!("MCP server {:?} sent an unexpected reply to {what}", self.name)))
            }
        };
        Ok(result)
    }
}
