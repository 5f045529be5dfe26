//! Downstream MCP servers: connects to the servers named in an `mcpServers`
//! config file and offers each of their tools to scripts as one inner tool
//! named `mcp__<server>__<tool>`.
//!
//! Everything a server sends is untrusted: tool names, descriptions and
//! schemas are checked and capped when listed (bad tools are skipped with a
//! warning), results are size-bounded, and a server that dies or sends an
//! oversized message fails its calls with a clear error instead of hanging.
//! Child processes run in their own process group, which is killed when the
//! [`Downstream`] is dropped or [`Downstream::shutdown`] runs.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, ContentBlock,
    Implementation, JsonRpcMessage, ListToolsRequest, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    Request, ResourceContents, ServerNotification, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use crate::process::{EnvPolicy, ProcessGroup};
use crate::text::floor_char_boundary;
use crate::tools::{Media, ProgressFn, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolProgress};

/// Most servers one config may name.
pub const MAX_SERVERS: usize = 64;
/// Largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Most tools taken from one server; the rest are skipped with a warning.
pub const MAX_TOOLS_PER_SERVER: usize = 1000;
/// Longest tool description kept (longer ones are truncated).
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;
/// Largest serialized input or output schema accepted.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// Largest tool result accepted (serialized `tools/call` result).
pub const MAX_RESULT_BYTES: usize = 64 * 1024 * 1024;
/// Largest single message read from a server: a maximal result plus room for
/// the JSON-RPC envelope. A longer message disconnects the server.
pub const MAX_MESSAGE_BYTES: usize = MAX_RESULT_BYTES + 64 * 1024;
/// How long a server may take to start and list its tools, by default.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Native timeout of a downstream tool call unless the server sets `timeout_ms`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
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
/// Longest `timeout_ms` accepted (one day).
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// Environment variables a command server inherits from wrepl (as the MCP
/// reference SDK does); everything else must be given in its `env`.
const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR"];

/// Why downstream servers could not be configured or connected.
#[derive(Debug, thiserror::Error)]
pub enum DownstreamError {
    /// The config file could not be read.
    #[error("cannot read MCP config {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// The config is not valid JSON of the expected shape (including unknown fields).
    #[error("invalid MCP config: {0}")]
    Invalid(String),
    /// A server name is not acceptable.
    #[error("invalid MCP server name {name:?}: {reason}")]
    ServerName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A server's entry is not acceptable.
    #[error("MCP server {server:?}: {message}")]
    Server {
        /// The server.
        server: String,
        /// What is wrong.
        message: String,
    },
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process speaking MCP over stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (added to a small inherited set).
        env: BTreeMap<String, String>,
        /// Working directory, if not wrepl's.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// `http://` or `https://` URL.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// How to reach it.
    pub transport: ServerTransport,
    /// Native timeout of its tool calls (`timeout_ms`); [`DEFAULT_CALL_TIMEOUT`] when `None`.
    pub timeout: Option<Duration>,
}

/// The parsed `{"mcpServers": {...}}` config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownstreamConfig {
    /// Servers by name (validated: `^[A-Za-z0-9_-]{1,64}$`, no `__`, no trailing `_`).
    pub servers: BTreeMap<String, ServerConfig>,
    /// How long each server may take to start and list its tools.
    pub startup_timeout: Duration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "mcpServers")]
    mcp_servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    timeout_ms: Option<u64>,
}

/// Checks a server name: `^[A-Za-z0-9_-]{1,64}$`, no `__` (it separates the
/// parts of `mcp__<server>__<tool>`) and no trailing `_` (which would make
/// `mcp__a___b` ambiguous).
pub fn validate_server_name(name: &str) -> Result<(), DownstreamError> {
    let bad = |reason| Err(DownstreamError::ServerName { name: name.to_string(), reason });
    if !is_wire_part(name) {
        return bad("must be 1 to 64 characters from A-Z a-z 0-9 _ -");
    }
    if name.contains("__") {
        return bad("must not contain \"__\" (it separates the parts of mcp__<server>__<tool>)");
    }
    if name.ends_with('_') {
        return bad("must not end with \"_\"");
    }
    Ok(())
}

/// `^[A-Za-z0-9_-]{1,64}$`.
fn is_wire_part(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl DownstreamConfig {
    /// Parse a config from JSON text.
    pub fn from_json(text: &str) -> Result<Self, DownstreamError> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| DownstreamError::Invalid(e.to_string()))?;
        if raw.mcp_servers.len() > MAX_SERVERS {
            return Err(DownstreamError::Invalid(format!(
                "{} servers configured; at most {MAX_SERVERS} are allowed",
                raw.mcp_servers.len()
            )));
        }
        let mut servers = BTreeMap::new();
        for (name, raw) in raw.mcp_servers {
            validate_server_name(&name)?;
            let server = raw.into_config(&name)?;
            servers.insert(name, server);
        }
        Ok(Self { servers, startup_timeout: DEFAULT_STARTUP_TIMEOUT })
    }

    /// Read and parse a config file (at most [`MAX_CONFIG_BYTES`]).
    pub fn load(path: &Path) -> Result<Self, DownstreamError> {
        let read_err = |e: io::Error| DownstreamError::Read { path: path.to_path_buf(), message: e.to_string() };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let mut text = String::new();
        io::Read::read_to_string(&mut io::Read::take(file, MAX_CONFIG_BYTES + 1), &mut text).map_err(read_err)?;
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(DownstreamError::Read {
                path: path.to_path_buf(),
                message: format!("larger than {MAX_CONFIG_BYTES} bytes"),
            });
        }
        Self::from_json(&text)
    }
}

impl RawServer {
    fn into_config(self, name: &str) -> Result<ServerConfig, DownstreamError> {
        let err = |message: String| DownstreamError::Server { server: name.to_string(), message };
        let timeout = match self.timeout_ms {
            None => None,
            Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Some(Duration::from_millis(ms)),
            Some(ms) => return Err(err(format!("timeout_ms {ms} must be between 1 and {MAX_TIMEOUT_MS}"))),
        };
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => return Err(err("give either \"command\" or \"url\", not both".into())),
            (None, None) => return Err(err("needs a \"command\" (stdio server) or a \"url\" (HTTP server)".into())),
            (Some(command), None) => {
                if !matches!(self.kind.as_deref(), None | Some("stdio")) {
                    return Err(err(format!("type {:?} does not fit a \"command\" server", self.kind)));
                }
                if self.headers.is_some() {
                    return Err(err("\"headers\" only applies to \"url\" servers".into()));
                }
                if command.is_empty() || command.contains('\0') {
                    return Err(err("\"command\" must be a non-empty string without NUL".into()));
                }
                let args = self.args.unwrap_or_default();
                let env = self.env.unwrap_or_default();
                if args.iter().any(|a| a.contains('\0')) {
                    return Err(err("arguments must not contain NUL".into()));
                }
                for (k, v) in &env {
                    if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                        return Err(err(format!("invalid environment variable {k:?}")));
                    }
                }
                ServerTransport::Stdio { command, args, env, cwd: self.cwd }
            }
            (None, Some(url)) => {
                if !matches!(self.kind.as_deref(), None | Some("http") | Some("streamable-http")) {
                    return Err(err(format!(
                        "type {:?} is not supported for \"url\" servers (only streamable HTTP)",
                        self.kind
                    )));
                }
                if self.args.is_some() || self.env.is_some() || self.cwd.is_some() {
                    return Err(err("\"args\", \"env\" and \"cwd\" only apply to \"command\" servers".into()));
                }
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    return Err(err(format!("url {url:?} must start with http:// or https://")));
                }
                let headers = self.headers.unwrap_or_default();
                for (k, v) in &headers {
                    axum::http::HeaderName::try_from(k.as_str())
                        .map_err(|_| err(format!("invalid header name {k:?}")))?;
                    axum::http::HeaderValue::try_from(v.as_str())
                        .map_err(|_| err(format!("invalid value for header {k:?}")))?;
                    if ["accept", "mcp-session-id", "last-event-id"].contains(&k.to_ascii_lowercase().as_str()) {
                        return Err(err(format!("header {k:?} is managed by the MCP transport")));
                    }
                }
                ServerTransport::Http { url, headers }
            }
        };
        Ok(ServerConfig { transport, timeout })
    }
}

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
struct ServerConn {
    name: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Client>>>,
    progress: Arc<ProgressRouter>,
    /// The server's child process (command servers); its group is killed
    /// when this is dropped.
    child: Mutex<Option<ProcessGroup>>,
    /// Set when the server sent a message over [`MAX_MESSAGE_BYTES`].
    oversized: Arc<AtomicBool>,
    stderr_tail: Arc<Mutex<String>>,
    timeout: Duration,
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
    fn terminate(&self) {
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
    async fn shutdown(&self) {
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

/// Connected downstream servers and the tools they offer.
pub struct Downstream {
    servers: Vec<Arc<ServerConn>>,
    tools: Vec<Arc<dyn Tool>>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for Downstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downstream")
            .field("servers", &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>())
            .field("tools", &self.tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>())
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// Installs rustls' `ring` provider as the process default (once; an
/// already-installed provider is kept).
fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What connecting one server produced.
struct Connected {
    conn: Arc<ServerConn>,
    tools: Vec<Arc<dyn Tool>>,
    warnings: Vec<String>,
}

impl Downstream {
    /// Connects every configured server concurrently (each within
    /// `config.startup_timeout`) and lists their tools. A server that fails
    /// to start is left out with a warning naming it (see [`Self::warnings`]);
    /// the others are still connected. Errors only for an invalid config.
    pub async fn connect(config: DownstreamConfig) -> Result<Self, DownstreamError> {
        for name in config.servers.keys() {
            validate_server_name(name)?;
        }
        if config.servers.len() > MAX_SERVERS {
            return Err(DownstreamError::Invalid(format!("at most {MAX_SERVERS} servers are allowed")));
        }
        let startup = config.startup_timeout;
        let attempts = config.servers.into_iter().map(|(name, server)| async move {
            let result = match tokio::time::timeout(startup, connect_one(&name, server)).await {
                Ok(r) => r,
                Err(_) => Err(format!("did not start and list its tools within {} ms", startup.as_millis())),
            };
            (name, result)
        });
        Ok(Self::collect(futures_util::future::join_all(attempts).await))
    }

    /// Connects servers over already-open byte streams (e.g. in-process test
    /// servers over `tokio::io::duplex`), with the same checks and limits as
    /// [`Self::connect`]. Each entry: name, read half, write half, call timeout.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    pub async fn connect_streams(
        servers: Vec<(String, Box<dyn AsyncRead + Send + Unpin>, Box<dyn AsyncWrite + Send + Unpin>, Option<Duration>)>,
        startup_timeout: Duration,
    ) -> Result<Self, DownstreamError> {
        for (name, ..) in &servers {
            validate_server_name(name)?;
        }
        let attempts = servers.into_iter().map(|(name, read, write, timeout)| async move {
            let fut = start(&name, read, write, None, Arc::default(), timeout);
            let result = match tokio::time::timeout(startup_timeout, fut).await {
                Ok(r) => r,
                Err(_) => Err(format!("did not start and list its tools within {} ms", startup_timeout.as_millis())),
            };
            (name, result)
        });
        Ok(Self::collect(futures_util::future::join_all(attempts).await))
    }

    fn collect(results: Vec<(String, Result<Connected, String>)>) -> Self {
        let mut out = Self { servers: Vec::new(), tools: Vec::new(), warnings: Vec::new() };
        for (name, result) in results {
            match result {
                Ok(c) => {
                    out.servers.push(c.conn);
                    out.tools.extend(c.tools);
                    out.warnings.extend(c.warnings);
                }
                Err(e) => out.warnings.push(format!("MCP server {name:?} was not connected: {e}")),
            }
        }
        out
    }

    /// One tool per listed server tool, named `mcp__<server>__<tool>`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    /// What went wrong while connecting: servers left out, tools skipped or truncated.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Names of the connected servers.
    pub fn servers(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }

    /// Process ids of the running command servers, by server name.
    pub fn child_pids(&self) -> Vec<(String, u32)> {
        self.servers
            .iter()
            .filter_map(|s| {
                let pid = s.child.lock().ok()?.as_ref()?.id()?;
                Some((s.name.clone(), pid))
            })
            .collect()
    }

    /// Closes every connection (stdin closed, then the process group is
    /// killed if it has not exited within 2 s) and waits for the processes.
    pub async fn shutdown(self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        for s in &self.servers {
            s.terminate();
        }
    }
}

async fn connect_one(name: &str, server: ServerConfig) -> Result<Connected, String> {
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
async fn start(
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

/// A server's text, capped for error messages.
fn cap_text(mut s: String, max: usize) -> String {
    if s.len() > max {
        s.truncate(floor_char_boundary(&s, max));
        s.push_str("...");
    }
    s
}

/// A name from the server, safe to show in a warning.
fn shown(s: &str) -> String {
    format!("{:?}", cap_text(s.to_string(), 80))
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

/// Checks a schema from a server: a JSON object of bounded size that compiles.
fn check_schema(schema: &Value, what: &str) -> Result<(), String> {
    let Value::Object(map) = schema else { return Err(format!("its {what} is not a JSON object")) };
    let size = serialized_len(schema);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("its {what} is {size} bytes (at most {MAX_SCHEMA_BYTES})"));
    }
    if let Some(t) = map.get("type") {
        if t != "object" {
            return Err(format!("its {what} does not describe an object (type {})", cap_text(t.to_string(), 80)));
        }
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| format!("its {what} does not compile: {}", cap_text(e.to_string(), 200)))
}

/// Serialized size of a value, without building the string.
fn serialized_len<T: serde::Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, value) {
        Ok(()) => c.0,
        Err(_) => usize::MAX,
    }
}

// ---------------------------------------------------------------------------
// Tools

/// One downstream tool, as the pipeline sees it.
struct McpTool {
    wire: String,
    tool: String,
    server_name: String,
    server: Weak<ServerConn>,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    timeout: Duration,
}

impl McpTool {
    fn from_listing(conn: &Arc<ServerConn>, raw: Value) -> Result<Self, String> {
        let Value::Object(mut raw) = raw else { return Err("skipped a tool entry that is not an object".into()) };
        let name = match raw.get("name") {
            Some(Value::String(n)) if is_wire_part(n) => n.clone(),
            Some(Value::String(n)) => {
                return Err(format!("skipped tool {}: names must be 1-64 characters from A-Z a-z 0-9 _ -", shown(n)))
            }
            _ => return Err("skipped a tool without a string name".into()),
        };
        let description = match raw.remove("description") {
            Some(Value::String(d)) => cap_text(d, MAX_DESCRIPTION_BYTES),
            _ => String::new(),
        };
        let input_schema = raw.remove("inputSchema").unwrap_or(Value::Null);
        check_schema(&input_schema, "inputSchema").map_err(|e| format!("skipped tool {}: {e}", shown(&name)))?;
        let output_schema = match raw.remove("outputSchema") {
            None | Some(Value::Null) => None,
            Some(s) => {
                check_schema(&s, "outputSchema").map_err(|e| format!("skipped tool {}: {e}", shown(&name)))?;
                Some(s)
            }
        };
        Ok(Self {
            wire: format!("mcp__{}__{}", conn.name, name),
            tool: name,
            server_name: conn.name.clone(),
            server: Arc::downgrade(conn),
            description,
            input_schema,
            output_schema,
            timeout: conn.timeout,
        })
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.wire
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn output_schema(&self) -> Option<Value> {
        self.output_schema.clone()
    }

    fn native_timeout(&self, _input: &Value) -> Duration {
        self.timeout
    }

    /// Never: a server's `readOnlyHint` is an unverified claim, and
    /// deny-by-default permission must not auto-allow its tools.
    fn read_only(&self, _input: &Value) -> bool {
        false
    }

    fn concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        let server = self.server.upgrade();
        let (tool, server_name) = (self.tool.clone(), self.server_name.clone());
        Box::pin(async move {
            let Some(server) = server else {
                return Err(ToolError::Failed(format!("MCP server {server_name:?} has been shut down")));
            };
            call_remote(&server, tool, input, ctx).await
        })
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

async fn call_remote(conn: &ServerConn, tool: String, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let what = format!("the call to {tool:?}");
    let Value::Object(arguments) = input else {
        return Err(ToolError::InvalidInput(format!("{} takes an object", tool)));
    };
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled(format!("{what} was cancelled before it started")));
    }
    let mut params = CallToolRequestParams::new(tool.clone());
    params.arguments = Some(arguments);
    let request = ClientRequest::CallToolRequest(Request::new(params));
    let handle = conn
        .peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| ToolError::Failed(service_error(conn, &what, e)))?;
    let _route = ctx.progress.clone().map(|f| conn.progress.register(handle.progress_token.clone(), f));
    let mut guard = CancelOnDrop { peer: conn.peer.clone(), id: Some(handle.id.clone()) };
    let response = tokio::select! {
        biased;
        r = handle.await_response() => r,
        _ = ctx.cancel.cancelled() => {
            if let Some(id) = guard.id.take() {
                let param = CancelledNotificationParam::new(Some(id), Some("cancelled by wrepl".into()));
                let _ = tokio::time::timeout(Duration::from_secs(2), conn.peer.notify_cancelled(param)).await;
            }
            return Err(ToolError::Cancelled(format!("{what} on MCP server {:?} was cancelled", conn.name)));
        }
    };
    guard.id = None;
    let result = match response.map_err(|e| ToolError::Failed(service_error(conn, &what, e)))? {
        ServerResult::CallToolResult(r) => r,
        ServerResult::EmptyResult(_) => Default::default(),
        ServerResult::InputRequiredResult(_) => {
            return Err(ToolError::Failed(format!(
                "MCP server {:?} asked for user input during {what}, which wrepl cannot give",
                conn.name
            )))
        }
        _ => return Err(ToolError::Failed(format!("MCP server {:?} sent an unexpected reply to {what}", conn.name))),
    };
    let size = serialized_len(&result);
    if size > MAX_RESULT_BYTES {
        return Err(ToolError::Failed(format!(
            "MCP server {:?} returned {size} bytes for {what}; at most {MAX_RESULT_BYTES} are accepted",
            conn.name
        )));
    }
    let mut texts = Vec::new();
    let mut media = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text),
            ContentBlock::Image(i) => {
                if is_image_mime(&i.mime_type) {
                    media.push(Media::Image { mime: i.mime_type, data: i.data });
                } else {
                    texts.push(format!("[image with unsupported type {} omitted]", shown(&i.mime_type)));
                }
            }
            ContentBlock::Audio(a) => texts.push(format!("[audio ({}) omitted]", cap_text(a.mime_type, 80))),
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { text, .. } => texts.push(text),
                ResourceContents::BlobResourceContents { uri, .. } => {
                    texts.push(format!("[binary resource {} omitted]", shown(&uri)))
                }
                _ => texts.push("[resource of an unknown kind omitted]".into()),
            },
            ContentBlock::ResourceLink(l) => texts.push(format!("[resource link {}]", shown(&l.uri))),
            _ => texts.push("[content of an unknown kind omitted]".into()),
        }
    }
    let text = texts.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::Failed(if text.is_empty() {
            format!("MCP tool {tool:?} on server {:?} reported an error without a message", conn.name)
        } else {
            text
        }));
    }
    let value = result.structured_content.unwrap_or_else(|| Value::String(text.clone()));
    Ok(ToolOutput::new(value, text).with_media(media))
}

/// `image/<subtype>` with a plain subtype.
fn is_image_mime(m: &str) -> bool {
    m.strip_prefix("image/").is_some_and(|s| {
        (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    })
}
