//! The streamable HTTP front of `wrepl serve --http`: one axum middleware
//! in front of every route and method (POST, GET for SSE, DELETE, and any
//! other path) that, in this order,
//! 1. refuses a request whose `Origin` is not the server's own or an
//!    allowed one (403; a request without `Origin` passes: it is not from a
//!    browser page),
//! 2. refuses a request without one of the server's bearer tokens (401 with
//!    `WWW-Authenticate: Bearer realm="wrepl"`),
//! 3. refuses a request naming an MCP session (`Mcp-Session-Id`) that
//!    another token created, or that it never saw created (404).
//!
//! Behind it, rmcp's streamable HTTP service keeps its own `Host` check
//! (loopback names only). The token's [`Fingerprint`] is put in the
//! request's extensions ([`Authenticated`]) so that the handler can record
//! it with the store sessions it opens.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio_util::sync::CancellationToken;

use super::auth::{presented, Fingerprint, Presented, TokenSet};
use super::{lock, ServeError, ServerOptions, WreplServer};

/// The MCP session header (case-insensitive).
const SESSION_HEADER: &str = "mcp-session-id";
/// Realm named in `WWW-Authenticate`.
pub const REALM: &str = "wrepl";
/// Ownership records kept before dead MCP sessions are pruned from them.
const PRUNE_AT: usize = 1024;

/// Who may use the server.
#[derive(Debug, Clone)]
pub enum HttpAuth {
    /// A request must carry `Authorization: Bearer <token>` with one of these.
    Bearer(TokenSet),
    /// No authentication (`--no-auth`): allowed on a loopback address only.
    Disabled,
}

/// The HTTP server's access rules: authentication and allowed origins.
#[derive(Debug, Clone)]
pub struct HttpSecurity {
    auth: HttpAuth,
    origins: Vec<Origin>,
    /// `Host` names (or `host:port`) accepted besides the loopback ones.
    hosts: Vec<String>,
}

impl HttpSecurity {
    /// Requests must carry one of `tokens`.
    pub fn bearer(tokens: TokenSet) -> Self {
        Self { auth: HttpAuth::Bearer(tokens), origins: Vec::new(), hosts: Vec::new() }
    }

    /// No authentication: [`serve_http`] refuses it on a non-loopback address.
    pub fn no_auth() -> Self {
        Self { auth: HttpAuth::Disabled, origins: Vec::new(), hosts: Vec::new() }
    }

    /// Also accept requests from the browser origin `origin`
    /// (`scheme://host[:port]`, http or https, nothing after the authority).
    /// The server's own origins (`http://127.0.0.1:PORT`,
    /// `http://localhost:PORT`, `http://[::1]:PORT`) are always accepted.
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, ServeError> {
        let parsed = Origin::parse(origin).ok_or_else(|| {
            ServeError::BadOrigin(format!(
                "{origin:?}: give scheme://host[:port] with scheme http or https and nothing after the port, \
                 e.g. https://app.example.com"
            ))
        })?;
        self.origins.push(parsed);
        Ok(self)
    }

    /// Also accept requests whose `Host` is `host` (a name, or
    /// `name:port`), e.g. the name a load balancer forwards. Only loopback
    /// names are accepted otherwise (against DNS rebinding).
    pub fn allow_host(mut self, host: &str) -> Result<Self, ServeError> {
        let h = host.trim();
        let valid = !h.is_empty()
            && h.len() <= 255
            && h.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
        if !valid {
            return Err(ServeError::BadHost(format!(
                "{host:?}: give a host name or address, optionally with :port (e.g. wrepl.internal)"
            )));
        }
        self.hosts.push(h.to_ascii_lowercase());
        Ok(self)
    }

    /// The authentication rule.
    pub fn auth(&self) -> &HttpAuth {
        &self.auth
    }
}

/// A request authenticated with the token of this fingerprint (set in the
/// request's extensions by the middleware).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Authenticated(pub(crate) Fingerprint);

/// A browser origin: scheme, host and port (explicit or the scheme's default).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        let uri = axum::http::Uri::try_from(value).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let authority = uri.authority()?;
        if authority.as_str().contains('@') || uri.query().is_some() || !matches!(uri.path(), "" | "/") {
            return None;
        }
        // An origin is serialized without a trailing slash; accept one only in --allow-origin values.
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        if host.is_empty() {
            return None;
        }
        Some(Self { scheme, host, port: authority.port_u16().unwrap_or(default_port) })
    }

    fn own(port: u16, bound: IpAddr) -> Vec<Self> {
        let mut hosts = vec!["127.0.0.1".to_string(), "localhost".to_string(), "::1".to_string()];
        if !bound.is_loopback() && !bound.is_unspecified() {
            hosts.push(bound.to_string().to_ascii_lowercase());
        }
        hosts.into_iter().map(|host| Self { scheme: "http".into(), host, port }).collect()
    }
}

/// The middleware's state.
struct Guard {
    auth: HttpAuth,
    origins: Vec<Origin>,
    /// Owner of every MCP session created through the middleware (`None`:
    /// created without authentication).
    sessions: Mutex<HashMap<String, Option<Fingerprint>>>,
    manager: Arc<LocalSessionManager>,
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    let mut r = Response::new(Body::from(text.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

fn unauthorized(error: Option<&'static str>) -> Response {
    let (challenge, text) = match error {
        None => (
            format!("Bearer realm=\"{REALM}\""),
            "Unauthorized: this wrepl server needs the header `Authorization: Bearer <token>` (the token is \
             printed once when the server starts, or kept in its --token-file)",
        ),
        Some("invalid_token") => (
            format!("Bearer realm=\"{REALM}\", error=\"invalid_token\""),
            "Unauthorized: the bearer token is not one of this server's tokens",
        ),
        Some(other) => (
            format!("Bearer realm=\"{REALM}\", error=\"{other}\""),
            "Unauthorized: the Authorization header must be exactly one `Bearer <token>`",
        ),
    };
    let mut r = plain(StatusCode::UNAUTHORIZED, text);
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// The one header named `name`: `Ok(None)` when absent, `Err` when repeated
/// or not text.
fn single<'a>(req: &'a Request, name: &str) -> Result<Option<&'a str>, ()> {
    let mut values = req.headers().get_all(name).iter();
    let Some(v) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(());
    }
    v.to_str().map(Some).map_err(|_| ())
}

async fn guard(State(g): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
    // 1. Origin (MCP transports: servers MUST validate it to stop DNS rebinding).
    match single(&req, header::ORIGIN.as_str()) {
        Ok(None) => {}
        Ok(Some(o)) if Origin::parse(o).is_some_and(|o| g.origins.contains(&o)) => {}
        Ok(Some(o)) => {
            return plain(
                StatusCode::FORBIDDEN,
                format!("Forbidden: Origin {o:?} is not allowed (start the server with --allow-origin to allow it)"),
            )
        }
        Err(()) => return plain(StatusCode::FORBIDDEN, "Forbidden: a request may carry one text Origin header"),
    }
    // 2. The bearer token.
    let principal = match &g.auth {
        HttpAuth::Disabled => None,
        HttpAuth::Bearer(tokens) => match presented(req.headers()) {
            Presented::Nothing => return unauthorized(None),
            Presented::Malformed => return unauthorized(Some("invalid_request")),
            Presented::Bearer(t) => match tokens.verify(t) {
                Some(fp) => Some(fp),
                None => return unauthorized(Some("invalid_token")),
            },
        },
    };
    if let Some(fp) = principal {
        req.extensions_mut().insert(Authenticated(fp));
    }
    // 3. The MCP session belongs to the token that created it.
    let session = match single(&req, SESSION_HEADER) {
        Ok(s) => s.map(str::to_string),
        Err(()) => return plain(StatusCode::BAD_REQUEST, "Bad Request: one text Mcp-Session-Id header at most"),
    };
    if let Some(id) = &session {
        let owner = lock(&g.sessions).get(id).copied();
        if owner != Some(principal) {
            return plain(StatusCode::NOT_FOUND, "Not Found: no such MCP session for this token");
        }
    }
    let delete = req.method() == Method::DELETE;
    // 4. A JSON body that does not parse is a JSON-RPC parse error (400 /
    // -32700), not rmcp's 415.
    let req = match parse_error(req).await {
        Ok(req) => req,
        Err(response) => return response,
    };
    let mut response = next.run(req).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        // The session is closed: nothing more to accept.
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = Body::empty();
    }
    match &session {
        None => {
            let created = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
            if let Some(id) = created {
                g.record(id, principal).await;
            }
        }
        Some(id) if delete && response.status().is_success() => {
            lock(&g.sessions).remove(id);
        }
        Some(_) => {}
    }
    response
}

/// `/readyz`: 200 when the session store answers (within 5 s), else 503.
async fn ready(options: Arc<ServerOptions>) -> Response {
    let probe = tokio::task::spawn_blocking(move || match options.hub() {
        Ok(hub) => hub.store.touched("readyz").map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    });
    match tokio::time::timeout(std::time::Duration::from_secs(5), probe).await {
        Ok(Ok(Ok(()))) => plain(StatusCode::OK, "ready\n"),
        Ok(Ok(Err(e))) => plain(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: the session store: {e}\n")),
        _ => plain(StatusCode::SERVICE_UNAVAILABLE, "not ready: the session store did not answer within 5 s\n"),
    }
}

/// Largest POST body the server reads (rmcp's own limit).
const MAX_BODY: usize = 4 << 20;

/// A POST whose body is declared JSON but is not: answered 400 with a
/// JSON-RPC parse error (-32700); JSON that is not one JSON-RPC 2.0 message
/// (a batch, `[]`, another value): 400 with an invalid-request error
/// (-32600). Any other request is passed on, its body intact.
async fn parse_error(req: Request) -> Result<Request, Response> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if req.method() != Method::POST || !json {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: the limit is {MAX_BODY} bytes"),
            ))
        }
    };
    let refuse = |code: i64, id: serde_json::Value, message: String| {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let mut r = Response::new(Body::from(body.to_string()));
        *r.status_mut() = StatusCode::BAD_REQUEST;
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r
    };
    let value = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return Err(refuse(-32700, serde_json::Value::Null, format!("Parse error: the body is not JSON ({e})")))
        }
    };
    // One JSON-RPC 2.0 message per request: a batch (the revisions this
    // server speaks have none), `[]` or any other JSON is an invalid request.
    match &value {
        serde_json::Value::Array(_) => {
            return Err(refuse(
                -32600,
                serde_json::Value::Null,
                "Invalid Request: JSON-RPC batches are not supported; send one message per request".into(),
            ))
        }
        serde_json::Value::Object(o) => {
            let version = o.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0");
            let kind = ["method", "result", "error"].iter().any(|k| o.contains_key(*k));
            if !version || !kind {
                let id = o.get("id").filter(|v| v.is_string() || v.is_number()).cloned().unwrap_or_default();
                return Err(refuse(
                    -32600,
                    id,
                    "Invalid Request: the body is not a JSON-RPC 2.0 message (`\"jsonrpc\": \"2.0\"` and a `method`, \
                     `result` or `error`)"
                        .into(),
                ));
            }
        }
        _ => {
            return Err(refuse(
                -32600,
                serde_json::Value::Null,
                "Invalid Request: the body is not a JSON-RPC 2.0 message (a JSON object)".into(),
            ))
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

impl Guard {
    async fn record(&self, id: String, owner: Option<Fingerprint>) {
        let full = {
            let mut s = lock(&self.sessions);
            s.insert(id, owner);
            s.len() > PRUNE_AT
        };
        if full {
            // Forget sessions rmcp has closed (idle timeout, client gone).
            let live: HashSet<String> = self.manager.sessions.read().await.keys().map(|k| k.to_string()).collect();
            lock(&self.sessions).retain(|id, _| live.contains(id));
        }
    }
}

/// Serve streamable HTTP at `addr` (path `/mcp`) until `shutdown` fires,
/// under `security`. Calls `bound` with the actual address once listening
/// (useful with port 0). Without authentication, only a loopback `addr` is
/// accepted.
pub async fn serve_http(
    options: Arc<ServerOptions>,
    addr: SocketAddr,
    security: HttpSecurity,
    shutdown: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if matches!(security.auth, HttpAuth::Disabled) && !addr.ip().is_loopback() {
        return Err(ServeError::Insecure(format!(
            "--no-auth is allowed on a loopback address only (127.0.0.1 or ::1), not {}: anyone who can reach \
             the port could run every tool this server grants",
            addr.ip()
        )));
    }
    options.hub()?;
    let factory_options = options.clone();
    let manager = Arc::new(LocalSessionManager::default());
    let service: StreamableHttpService<WreplServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(WreplServer::new(factory_options.clone())), manager.clone(), {
            let config = StreamableHttpServerConfig::default();
            let mut hosts = config.allowed_hosts.clone();
            hosts.extend(security.hosts.iter().cloned());
            config.with_allowed_hosts(hosts).with_cancellation_token(shutdown.child_token())
        });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let mut origins = Origin::own(local.port(), local.ip());
    origins.extend(security.origins);
    let state = Arc::new(Guard { auth: security.auth, origins, sessions: Default::default(), manager });
    // Health checks for load balancers: outside the token check (they say
    // nothing but whether this server can serve).
    let probe_options = options.clone();
    let metrics = options.metrics.clone();
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        // The metrics, behind the same origin and token checks as /mcp.
        .route(
            "/metrics",
            axum::routing::get(move || {
                let m = metrics.clone();
                async move { super::metrics::response(&m) }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(state, guard))
        .route("/healthz", axum::routing::get(|| async { plain(StatusCode::OK, "ok\n") }))
        .route("/readyz", axum::routing::get(move || ready(probe_options.clone())));
    bound(local);
    axum::serve(listener, router).with_graceful_shutdown(async move { shutdown.cancelled_owned().await }).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_and_compare_as_scheme_host_port() {
        let o = |s| Origin::parse(s);
        assert_eq!(o("http://127.0.0.1:8931"), o("HTTP://127.0.0.1:8931/"));
        assert_eq!(o("https://App.Example.com"), o("https://app.example.com:443"));
        assert_ne!(o("http://localhost:8931"), o("http://localhost:8932"));
        assert_ne!(o("http://localhost:8931"), o("https://localhost:8931"));
        assert_eq!(o("http://[::1]:5").unwrap().host, "::1");
        for bad in ["null", "", "file:///x", "http://", "localhost:80", "http://a@b", "http://x/path", "http://x/?q"] {
            assert_eq!(o(bad), None, "{bad:?}");
        }
        let own = Origin::own(8931, "127.0.0.1".parse().unwrap());
        assert!(own.contains(&o("http://localhost:8931").unwrap()));
        assert!(own.contains(&o("http://[::1]:8931").unwrap()));
        assert!(!own.contains(&o("http://evil.example:8931").unwrap()));
        assert!(Origin::own(1, "10.0.0.5".parse().unwrap()).contains(&o("http://10.0.0.5:1").unwrap()));
        assert!(HttpSecurity::no_auth().allow_origin("https://ok.example").is_ok());
        assert!(HttpSecurity::no_auth().allow_origin("*").is_err());
    }
}
