//! `wrepl serve --http` lets no one in who was not given a key: bearer
//! tokens (generated, `--token-file`, `WREPL_TOKEN`), `--no-auth` on
//! loopback only, `Origin` validation, and sessions that belong to the token
//! that created them. Real server processes, raw HTTP on loopback.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use rmcp::ServiceExt as _;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::mcp_server::{http_transport, spawn_http, start_http_with_token, HttpServer};

/// One HTTP response: status, headers (lower-case names) and body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body (plain JSON or SSE `data:` lines).
    fn messages(&self) -> Vec<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return vec![v];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect()
    }

    /// The message answering request `id`.
    fn answer(&self, id: u64) -> Value {
        self.messages().into_iter().find(|m| m["id"] == json!(id)).unwrap_or_else(|| panic!("no answer {id}: {self:?}"))
    }
}

/// Send one HTTP/1.1 request to `addr` and read the reply: to the end of
/// the connection, or (an SSE stream) until the message answering `until`
/// arrived.
async fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    until: Option<u64>,
) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let read = async {
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
            if let Some(id) = until {
                let r = parse(&raw);
                if r.messages().iter().any(|m| m["id"] == json!(id)) {
                    break;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read).await.expect("no complete HTTP reply within 60 s");
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect::<Vec<_>>();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Reply { status, headers, body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            out.push_str(&rest[..rest.len().min(n)]);
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");
const VERSION: (&str, &str) = ("MCP-Protocol-Version", "2025-11-25");

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Initialize an MCP session over raw HTTP with `extra` headers; returns
/// its id.
async fn open_session(addr: &str, extra: &[(&str, &str)]) -> String {
    let mut h = vec![ACCEPT, JSON];
    h.extend_from_slice(extra);
    let r = request(addr, "POST", "/mcp", &h, &initialize_body(), Some(1)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.answer(1)["result"]["serverInfo"]["name"] == "wrepl", "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    h.push(("Mcp-Session-Id", &id));
    h.push(VERSION);
    let r = request(addr, "POST", "/mcp", &h, &note, None).await;
    assert_eq!(r.status, 202, "{r:?}");
    id
}

/// `tools/call repl {code}` in session `session` with `extra` headers.
async fn call_repl(addr: &str, session: &str, extra: &[(&str, &str)], id: u64, code: &str) -> Reply {
    let mut h = vec![ACCEPT, JSON, VERSION, ("Mcp-Session-Id", session)];
    h.extend_from_slice(extra);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "repl", "arguments": {"code": code}}});
    request(addr, "POST", "/mcp", &h, &body.to_string(), Some(id)).await
}

fn assert_401(r: &Reply, error: Option<&str>) {
    assert_eq!(r.status, 401, "{r:?}");
    let challenge = r.header("www-authenticate").unwrap_or_else(|| panic!("no WWW-Authenticate: {r:?}"));
    match error {
        None => assert_eq!(challenge, r#"Bearer realm="wrepl""#),
        Some(e) => assert_eq!(challenge, format!(r#"Bearer realm="wrepl", error="{e}""#)),
    }
}

async fn stop(mut s: HttpServer) {
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn without_the_token_nothing_runs_on_any_route_or_method() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_http_with_token(dir.path(), &["--allow", "Write"]).await;
    let (addr, token) = (server.addr.clone(), server.token.clone().unwrap());
    // printed once, and it looks like 32 random bytes in base64url
    let lines = server.stderr.lock().unwrap().clone();
    assert_eq!(lines.iter().filter(|l| l.contains(&token)).count(), 1, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("Authorization: Bearer <token>")), "{lines:?}");
    assert_eq!(token.len(), 43, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{token}");
    let auth = bearer(&token);

    // initialize without a token, with a wrong one, with another scheme
    let r = request(&addr, "POST", "/mcp", &[ACCEPT, JSON], &initialize_body(), None).await;
    assert_401(&r, None);
    assert!(r.header("mcp-session-id").is_none(), "{r:?}");
    let wrong = bearer(&format!("{}x", &token[..42]));
    let r = request(&addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", &wrong)], &initialize_body(), None).await;
    assert_401(&r, Some("invalid_token"));
    let basic = format!("Basic {token}");
    let r = request(&addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", &basic)], &initialize_body(), None).await;
    assert_401(&r, Some("invalid_request"));

    // a real session: its calls still need the token, on every method
    let session = open_session(&addr, &[("Authorization", &auth)]).await;
    let write = |name: &str| format!("await Write({{file_path: '{name}', content: 'ran'}}); 'wrote'");
    let r = call_repl(&addr, &session, &[], 2, &write("no-token.txt")).await;
    assert_401(&r, None);
    let r = call_repl(&addr, &session, &[("Authorization", &wrong)], 3, &write("wrong-token.txt")).await;
    assert_401(&r, Some("invalid_token"));
    let sse = [("Accept", "text/event-stream"), ("Mcp-Session-Id", session.as_str()), VERSION];
    let r = request(&addr, "GET", "/mcp", &sse, "", None).await;
    assert_401(&r, None);
    let del = [("Mcp-Session-Id", session.as_str()), VERSION];
    let r = request(&addr, "DELETE", "/mcp", &del, "", None).await;
    assert_401(&r, None);
    for path in ["/", "/other", "/mcp/x"] {
        let r = request(&addr, "GET", path, &[], "", None).await;
        assert_401(&r, None);
    }

    // with the token the session works (the DELETE above did not end it), and the refused calls never ran
    let r = call_repl(&addr, &session, &[("Authorization", &auth)], 4, &write("with-token.txt")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.answer(4)["result"]["structuredContent"]["result"], json!("wrote"), "{r:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("with-token.txt")).unwrap(), "ran");
    assert!(!dir.path().join("no-token.txt").exists(), "a call without the token ran");
    assert!(!dir.path().join("wrong-token.txt").exists(), "a call with a wrong token ran");

    // rmcp's own client with the token: initialize + tools/call
    let c = ().serve(http_transport(&server.url, &token)).await.unwrap();
    let Value::Object(args) = json!({"code": "6 * 7"}) else { unreachable!() };
    let r = c.call_tool(rmcp::model::CallToolRequestParams::new("repl").with_arguments(args)).await.unwrap();
    assert_eq!(r.structured_content.unwrap()["result"], json!(42));
    c.cancel().await.unwrap();
    // and without it the client cannot even connect
    assert!(().serve(rmcp::transport::StreamableHttpClientTransport::from_uri(server.url.clone())).await.is_err());
    stop(server).await;
}

#[tokio::test]
async fn a_foreign_origin_gets_403_even_with_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_http_with_token(dir.path(), &["--allow-origin", "https://app.example"]).await;
    let (addr, token) = (server.addr.clone(), server.token.clone().unwrap());
    let auth = bearer(&token);
    let port = addr.rsplit(':').next().unwrap().to_string();
    for origin in [
        "http://evil.example".to_string(),
        "null".to_string(),
        format!("http://evil.example:{port}"),
        format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap().wrapping_add(1)),
        format!("https://127.0.0.1:{port}"),
        "https://app.example.evil".to_string(),
    ] {
        let h = [ACCEPT, JSON, ("Authorization", auth.as_str()), ("Origin", origin.as_str())];
        let r = request(&addr, "POST", "/mcp", &h, &initialize_body(), None).await;
        assert_eq!(r.status, 403, "{origin}: {r:?}");
        assert!(r.header("mcp-session-id").is_none(), "{origin}: {r:?}");
        // without the token too: the Origin is checked first
        let r = request(&addr, "POST", "/mcp", &[ACCEPT, JSON, ("Origin", origin.as_str())], &initialize_body(), None)
            .await;
        assert_eq!(r.status, 403, "{origin}: {r:?}");
    }
    // an established session cannot be driven from a foreign page either
    let session = open_session(&addr, &[("Authorization", &auth)]).await;
    let r = call_repl(&addr, &session, &[("Authorization", &auth), ("Origin", "http://evil.example")], 2, "1").await;
    assert_eq!(r.status, 403, "{r:?}");
    // the server's own origins and the allowed one pass
    for origin in [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}"), "https://app.example".into()]
    {
        let session = open_session(&addr, &[("Authorization", &auth), ("Origin", &origin)]).await;
        let r = call_repl(&addr, &session, &[("Authorization", &auth), ("Origin", &origin)], 2, "'from ' + 1").await;
        assert_eq!(r.answer(2)["result"]["structuredContent"]["result"], json!("from 1"), "{origin}: {r:?}");
    }
    // an own Origin does not replace the token
    let own = format!("http://127.0.0.1:{port}");
    let r = request(&addr, "POST", "/mcp", &[ACCEPT, JSON, ("Origin", &own)], &initialize_body(), None).await;
    assert_401(&r, None);
    stop(server).await;

    // a malformed --allow-origin stops the server at start
    let e = spawn_http(dir.path(), "127.0.0.1:0", &["--allow-origin", "*"], &[]).await.err().expect("refused");
    assert!(!e.status.success());
    assert!(e.stderr.iter().any(|l| l.contains("invalid origin")), "{e:?}");
}

/// An MCP client with `token` answers `code` (through rmcp's client).
async fn eval_with(url: &str, token: &str, code: &str) -> Result<Value, String> {
    let c = ().serve(http_transport(url, token)).await.map_err(|e| e.to_string())?;
    let Value::Object(args) = json!({"code": code}) else { unreachable!() };
    let r = c.call_tool(rmcp::model::CallToolRequestParams::new("repl").with_arguments(args)).await;
    let _ = c.cancel().await;
    let r = r.map_err(|e| e.to_string())?;
    if r.is_error == Some(true) {
        return Err(serde_json::to_string(&r.content).unwrap());
    }
    Ok(r.structured_content.unwrap_or(Value::Null)["result"].clone())
}

#[tokio::test]
async fn the_token_file_is_created_0600_and_reused_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    let path = file.to_str().unwrap();
    let server = spawn_http(dir.path(), "127.0.0.1:0", &["--token-file", path], &[]).await.unwrap();
    let meta = std::fs::metadata(&file).expect("the token file was created");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let token = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert_eq!(token.len(), 43, "{token}");
    assert!(server.token.is_none(), "a token kept in a file is not printed");
    let lines = server.stderr.lock().unwrap().clone();
    assert!(!lines.iter().any(|l| l.contains(&token)), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains(path) && l.contains("0600")), "{lines:?}");
    assert_eq!(eval_with(&server.url, &token, "'first run'").await.unwrap(), json!("first run"));
    assert!(eval_with(&server.url, "not-the-token-0123456789", "1").await.is_err());
    stop(server).await;

    // a restart reads the same token; the file is not rewritten
    let server = spawn_http(dir.path(), "127.0.0.1:0", &["--token-file", path], &[]).await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    assert_eq!(eval_with(&server.url, &token, "'second run'").await.unwrap(), json!("second run"));
    stop(server).await;

    // a token file others may read is refused at start
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = spawn_http(dir.path(), "127.0.0.1:0", &["--token-file", path], &[]).await.err().expect("refused");
    assert!(!e.status.success());
    assert!(e.stderr.iter().any(|l| l.contains("chmod 600")), "{e:?}");
    // --token-file and WREPL_TOKEN together are ambiguous
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let env = [("WREPL_TOKEN", "some-other-token-0123456789")];
    let e = spawn_http(dir.path(), "127.0.0.1:0", &["--token-file", path], &env).await.err().expect("refused");
    assert!(e.stderr.iter().any(|l| l.contains("WREPL_TOKEN")), "{e:?}");
}

#[tokio::test]
async fn wrepl_token_from_the_environment_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let token = "env-token-0123456789-abcdefghij";
    let server =
        spawn_http(dir.path(), "127.0.0.1:0", &["--allow", "Bash(env)"], &[("WREPL_TOKEN", token)]).await.unwrap();
    assert!(server.token.is_none(), "no token is generated when WREPL_TOKEN gives one");
    let lines = server.stderr.lock().unwrap().clone();
    assert!(!lines.iter().any(|l| l.contains(token)), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("WREPL_TOKEN")), "{lines:?}");
    assert_eq!(eval_with(&server.url, token, "'env'").await.unwrap(), json!("env"));
    // the shell the scripts run does not inherit it
    let env = eval_with(&server.url, token, "await sh('env')").await.unwrap();
    let env = env.as_str().unwrap_or_else(|| panic!("{env}"));
    assert!(env.contains("PATH=") && !env.contains("WREPL_TOKEN") && !env.contains(token), "{env}");
    let r = request(&server.addr, "POST", "/mcp", &[ACCEPT, JSON], &initialize_body(), None).await;
    assert_401(&r, None);
    let other = bearer("env-token-0123456789-abcdefghiJ");
    let r = request(&server.addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", &other)], &initialize_body(), None)
        .await;
    assert_401(&r, Some("invalid_token"));
    stop(server).await;
    // a weak token is refused at start
    let e = spawn_http(dir.path(), "127.0.0.1:0", &[], &[("WREPL_TOKEN", "short")]).await.err().expect("refused");
    assert!(e.stderr.iter().any(|l| l.contains("WREPL_TOKEN") && l.contains("at least")), "{e:?}");
}

#[tokio::test]
async fn no_auth_works_on_loopback_with_a_warning_and_is_refused_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn_http(dir.path(), "127.0.0.1:0", &["--no-auth"], &[]).await.unwrap();
    let lines = server.stderr.lock().unwrap().clone();
    assert!(lines.iter().any(|l| l.contains("WARNING") && l.contains("--no-auth")), "{lines:?}");
    assert!(server.token.is_none());
    let session = open_session(&server.addr, &[]).await;
    let r = call_repl(&server.addr, &session, &[], 2, "'open'").await;
    assert_eq!(r.answer(2)["result"]["structuredContent"]["result"], json!("open"), "{r:?}");
    // the Origin check still applies
    let r = request(
        &server.addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Origin", "http://evil.example")],
        &initialize_body(),
        None,
    )
    .await;
    assert_eq!(r.status, 403, "{r:?}");
    stop(server).await;

    for listen in ["0.0.0.0:0", "[::]:0"] {
        let e = spawn_http(dir.path(), listen, &["--no-auth"], &[]).await.err().expect("refused");
        assert!(!e.status.success(), "{listen}");
        assert!(e.stderr.iter().any(|l| l.contains("loopback")), "{listen}: {e:?}");
    }
    let file = dir.path().join("tok");
    let e = spawn_http(dir.path(), "127.0.0.1:0", &["--no-auth", "--token-file", file.to_str().unwrap()], &[])
        .await
        .err()
        .expect("refused");
    assert!(e.stderr.iter().any(|l| l.contains("--no-auth")), "{e:?}");
    assert!(!file.exists());
}

fn token_file(dir: &Path, tokens: &[&str]) -> String {
    let file = dir.join("tokens");
    let text: String = tokens.iter().enumerate().map(|(i, t)| format!("# user {i}\n{t}\n")).collect();
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file.to_str().unwrap().to_string()
}

#[tokio::test]
async fn sessions_belong_to_the_token_that_created_them() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ("alice-token-0123456789-abcdef", "bobby-token-0123456789-abcdef");
    let tokens = token_file(dir.path(), &[a, b]);
    let store = dir.path().join("store.sqlite3");
    let store = store.to_str().unwrap();
    let args = ["--token-file", tokens.as_str(), "--store", store, "--allow", "Write"];
    let server = spawn_http(dir.path(), "127.0.0.1:0", &args, &[]).await.unwrap();
    let addr = server.addr.clone();
    let (auth_a, auth_b) = (bearer(a), bearer(b));

    // an MCP session opened with A cannot be driven, streamed or deleted with B
    let session = open_session(&addr, &[("Authorization", &auth_a)]).await;
    let r = call_repl(&addr, &session, &[("Authorization", &auth_a)], 2, "var secret = 'only a'; 1").await;
    assert_eq!(r.answer(2)["result"]["structuredContent"]["result"], json!(1), "{r:?}");
    let steal = "await Write({file_path: 'stolen.txt', content: secret}); secret";
    let r = call_repl(&addr, &session, &[("Authorization", &auth_b)], 3, steal).await;
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.body.contains("no such MCP session for this token"), "{r:?}");
    assert!(!r.body.contains("only a"), "{r:?}");
    let sse =
        [("Accept", "text/event-stream"), ("Mcp-Session-Id", session.as_str()), VERSION, ("Authorization", &auth_b)];
    assert_eq!(request(&addr, "GET", "/mcp", &sse, "", None).await.status, 404);
    let del_b = [("Mcp-Session-Id", session.as_str()), VERSION, ("Authorization", auth_b.as_str())];
    assert_eq!(request(&addr, "DELETE", "/mcp", &del_b, "", None).await.status, 404);
    // A's session is intact (B's DELETE did nothing), and B's call never ran
    let r = call_repl(&addr, &session, &[("Authorization", &auth_a)], 4, "secret").await;
    assert_eq!(r.answer(4)["result"]["structuredContent"]["result"], json!("only a"), "{r:?}");
    assert!(!dir.path().join("stolen.txt").exists());
    // A may delete it; afterwards it is gone for A too
    let del_a = [("Mcp-Session-Id", session.as_str()), VERSION, ("Authorization", auth_a.as_str())];
    let r = request(&addr, "DELETE", "/mcp", &del_a, "", None).await;
    assert!((200..300).contains(&r.status), "{r:?}");
    let r = call_repl(&addr, &session, &[("Authorization", &auth_a)], 5, "secret").await;
    assert_eq!(r.status, 404, "{r:?}");
    // an invented session id is not a way in either
    let r = call_repl(&addr, "00000000-0000-0000-0000-000000000000", &[("Authorization", &auth_a)], 6, "1").await;
    assert_eq!(r.status, 404, "{r:?}");

    // a store session opened by name with A cannot be resumed with B
    let named = format!("{}?session=proj", server.url);
    assert_eq!(eval_with(&named, a, "var kept = 'kept by a'; 'saved'").await.unwrap(), json!("saved"));
    let e = eval_with(&named, b, "kept").await.unwrap_err();
    assert!(e.contains("belongs to another token") && !e.contains("kept by a"), "{e}");
    // B may use a name of its own; A cannot take it over
    assert_eq!(eval_with(&format!("{}?session=bobs", server.url), b, "'b'").await.unwrap(), json!("b"));
    let e = eval_with(&format!("{}?session=bobs", server.url), a, "1").await.unwrap_err();
    assert!(e.contains("belongs to another token"), "{e}");
    // A resumes its own
    let mut resumed = None;
    for _ in 0..50 {
        match eval_with(&named, a, "kept").await {
            Ok(v) => {
                resumed = Some(v);
                break;
            }
            // the previous connection may still hold the session for a moment
            Err(e) if e.contains("in use") => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(resumed, Some(json!("kept by a")));
    stop(server).await;

    // another server process on the same store, with another token, cannot resume it either
    let c = "carol-token-0123456789-abcdef";
    let args = ["--store", store];
    let other = spawn_http(dir.path(), "127.0.0.1:0", &args, &[("WREPL_TOKEN", c)]).await.unwrap();
    let e = eval_with(&format!("{}?session=proj", other.url), c, "kept").await.unwrap_err();
    assert!(e.contains("not opened through this server with your token") && !e.contains("kept by a"), "{e}");
    assert_eq!(eval_with(&format!("{}?session=carols", other.url), c, "'c'").await.unwrap(), json!("c"));
    stop(other).await;
}

#[tokio::test]
async fn a_foreign_host_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let get = |addr: &str, host: &str, token: Option<&str>| {
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let request = format!("GET /mcp HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
        let addr = addr.to_string();
        async move { crate::mcp_modern::raw_http(&addr, request).await }
    };
    let mut s = crate::mcp_server::spawn_http(dir.path(), "127.0.0.1:0", &[], &[]).await.expect("serve");
    let (status, body) = get(&s.addr, "wrepl.internal", None).await;
    // Past the token check (a foreign Host with the right token is still refused).
    assert_eq!(status, 401, "{body}");
    let (status, body) = get(&s.addr, "wrepl.internal", s.token.as_deref()).await;
    assert_eq!(status, 403, "{body}");
    s.child.kill().await.unwrap();
    let mut s = crate::mcp_server::spawn_http(dir.path(), "127.0.0.1:0", &["--allow-host", "wrepl.internal"], &[])
        .await
        .expect("serve");
    let (status, body) = get(&s.addr, "wrepl.internal", s.token.as_deref()).await;
    assert_ne!(status, 403, "an allowed host passes: {body}");
    s.child.kill().await.unwrap();
    let bad = crate::mcp_server::spawn_http(dir.path(), "127.0.0.1:0", &["--allow-host", "a b"], &[]).await;
    let Err(bad) = bad else { panic!("a bad host must be refused") };
    assert!(bad.stderr.join("\n").contains("invalid host"), "{:?}", bad.stderr);
}
