//! `wrepl serve` with clients speaking the stateless revision 2026-07-28
//! (rmcp's client in `server/discover` mode): REPL state by context handle,
//! approvals and model samples through multi round-trip requests (also
//! across a server restart and between two servers sharing a store),
//! `subscriptions/listen`, and the protocol errors the revision asks for.

#![allow(deprecated)] // sampling is deprecated by the newest protocol revision

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, InputRequiredResult, SubscriptionFilter};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{json, Value};
use wrepl::replay::store::{LogStore, SqliteStore};

use super::mcp_server::{
    call, http_transport, modern, modern_client, spawn_http, structured, text, HttpServer, TestClient,
};

/// A server on a loopback port whose tokens are in `dir/tokens` (so a
/// restarted server accepts the same token), recording into `dir/store`.
async fn server(dir: &Path, extra: &[&str]) -> HttpServer {
    let tokens = dir.join("tokens");
    let store = dir.join("store.sqlite3");
    let mut args = vec!["--token-file", tokens.to_str().unwrap(), "--store", store.to_str().unwrap()];
    args.extend_from_slice(extra);
    spawn_http(dir, "127.0.0.1:0", &args, &[]).await.expect("wrepl serve --http")
}

pub(crate) fn token(dir: &Path) -> String {
    let t = std::fs::read_to_string(dir.join("tokens")).unwrap();
    t.lines().find(|l| !l.trim().is_empty() && !l.starts_with('#')).unwrap().trim().to_string()
}

async fn connect(s: &HttpServer, token: &str, c: TestClient) -> RunningService<RoleClient, TestClient> {
    modern(c, http_transport(&s.url, token)).await
}

fn args(v: Value) -> rmcp::model::JsonObject {
    let Value::Object(m) = v else { panic!("arguments must be an object") };
    m
}

/// One `tools/call` without answering `input_required`.
pub(crate) async fn once(
    service: &RunningService<RoleClient, TestClient>,
    tool: &str,
    a: Value,
    answers: Option<(BTreeMap<String, Value>, String)>,
) -> CallToolResponse {
    let mut p = CallToolRequestParams::new(tool.to_string()).with_arguments(args(a));
    if let Some((responses, state)) = answers {
        p = p.with_input_responses(responses).with_request_state(state);
    }
    tokio::time::timeout(Duration::from_secs(60), service.call_tool_once(p))
        .await
        .expect("tool call timed out")
        .expect("tool call failed at the protocol level")
}

pub(crate) fn input_required(r: CallToolResponse) -> InputRequiredResult {
    match r {
        CallToolResponse::InputRequired(i) => i,
        other => panic!("expected input_required, got {other:?}"),
    }
}

pub(crate) fn complete(r: CallToolResponse) -> rmcp::model::CallToolResult {
    match r {
        CallToolResponse::Complete(c) => c,
        other => panic!("expected a result, got {other:?}"),
    }
}

#[tokio::test]
async fn a_context_handle_keeps_state_between_stateless_requests_and_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &[]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "let x = 41"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let handle = structured(&r)["context"].as_str().expect("a context handle").to_string();
    let all = serde_json::to_string(&r.content).unwrap();
    assert!(all.contains(&format!("[context: {handle}]")), "the text names the handle: {all}");
    let r = call(&c, "repl", json!({"code": "x + 1", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    assert_eq!(text(&r), "42");
    // Without a handle: a fresh context, with its own handle.
    let r = call(&c, "repl", json!({"code": "typeof x"})).await;
    assert_eq!(structured(&r)["result"], json!("undefined"));
    assert_ne!(structured(&r)["context"], json!(handle));
    // A handle that was not issued: a clear tool error saying how to start fresh.
    let r = call(&c, "repl", json!({"code": "1", "context": "rs1.bogus.handle"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("unknown context handle") && text(&r).contains("without `context`"), "{}", text(&r));
    drop(c);

    // A restarted server (same store, same key in it) continues the context by replay.
    s.child.kill().await.unwrap();
    let mut s = server(dir.path(), &[]).await;
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "x + 2", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(43), "{r:?}");

    // A fork: a new context starting from the handle's, recording apart.
    let r = call(
        &c,
        "repl",
        json!({"code": "registerTool('inc', 'x+1', {type: 'object'}, () => ++x); x += 100", "fork": handle}),
    )
    .await;
    assert_eq!(structured(&r)["result"], json!(141), "{r:?}");
    let child = structured(&r)["context"].as_str().expect("the fork's handle").to_string();
    assert_ne!(child, handle);
    let r = call(&c, "repl", json!({"code": "x", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(41), "the parent is unchanged: {r:?}");
    let r = call(&c, "repl", json!({"code": "[x, listTools().map(t => t.name)]", "context": child})).await;
    assert_eq!(structured(&r)["result"], json!([141, ["inc"]]), "{r:?}");
    // A registered tool's own `fork` property is its input, not a handle.
    let r = call(
        &c,
        "repl",
        json!({"code": "registerTool('keeps', 'k', {type: 'object', properties: {fork: {type: 'string'}}}, (i) => i.fork)", "context": child}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&c, "eval_registered__keeps", json!({"fork": "mine", "context": child})).await;
    assert_eq!(structured(&r)["result"], json!("mine"), "{r:?}");
    for bad in [json!({"code": "1", "fork": handle, "context": handle}), json!({"code": "1", "fork": "rs1.bogus"})] {
        let r = call(&c, "repl", bad.clone()).await;
        assert_eq!(r.is_error, Some(true), "{bad}: {r:?}");
    }
    drop(c);
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_registered_name_in_two_contexts_runs_only_where_the_call_says() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &[]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "x")).await;
    // Two contexts of one token register the same name with different handlers.
    let mut handles = Vec::new();
    for k in [2, 3] {
        let code = format!("registerTool('times', 'n times k', {{type: 'object'}}, ({{n}}) => n * {k}); 'registered'");
        let r = call(&c, "repl", json!({ "code": code })).await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
        handles.push(structured(&r)["context"].as_str().expect("a handle").to_string());
    }
    // Named without a context, the call is refused: it names both, and runs neither.
    let r = call(&c, "eval_registered__times", json!({"n": 21})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let msg = text(&r);
    assert!(msg.contains("registered in 2 of your contexts"), "{msg}");
    assert!(handles.iter().all(|h| msg.contains(h.as_str())), "{msg}");
    // Each context runs its own handler.
    for (h, want) in handles.iter().zip([42, 63]) {
        let r = call(&c, "eval_registered__times", json!({"n": 21, "context": h})).await;
        assert_eq!(structured(&r)["result"], json!(want), "{r:?}");
    }
    drop(c);
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_handle_is_bound_to_the_token_that_got_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "token-number-one-0123456789abcdef\ntoken-number-two-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut s = server(dir.path(), &[]).await;
    let a = connect(&s, "token-number-one-0123456789abcdef", modern_client(true, "x")).await;
    let b = connect(&s, "token-number-two-0123456789abcdef", modern_client(true, "x")).await;
    let r = call(&a, "repl", json!({"code": "var secret = 'a'"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    let r = call(&b, "repl", json!({"code": "secret", "context": handle})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("unknown context handle"), "{}", text(&r));
    let r = call(&a, "repl", json!({"code": "secret", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!("a"));
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn approvals_and_samples_are_answered_through_input_required_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &["--allow", "Write(once/**)"]).await;
    let t = token(dir.path());
    let c = modern_client(true, "Write");
    let seen = c.seen.clone();
    let c = connect(&s, &t, c).await;
    // rmcp's client answers the rounds through the same handler: an
    // allowed write runs once, the asked one runs after the approval.
    let code = "const n = Math.random(); await put('once/' + n + '.txt', 'x'); await put('out.txt', 'y'); n";
    let r = call(&c, "repl", json!({"code": code})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let n = structured(&r)["result"].as_f64().expect("the number");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "y");
    let once: Vec<String> = std::fs::read_dir(dir.path().join("once"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(once, vec![format!("{n}.txt")], "the write before the approval ran exactly once");
    assert!(seen.elicitations.lock().unwrap().iter().any(|m| m.contains("Write")), "the question was asked");
    // Declined: the call fails in the script, nothing is written.
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    let r = call(
        &c,
        "repl",
        json!({"code": "await Edit({file_path: 'out.txt', old_string: 'y', new_string: 'z'})", "context": handle}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "y");
    // haiku() is a sampling input request; the variable set before it survives the round.
    let r = call(
        &c,
        "repl",
        json!({"code": "let before = 7; (await haiku('hi there')) + ' ' + before", "context": handle}),
    )
    .await;
    assert_eq!(structured(&r)["result"], json!("echo: hi there 7"), "{r:?}");
    assert_eq!(seen.samplings.lock().unwrap().len(), 1);
    let r = call(&c, "repl", json!({"code": "before", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(7), "{r:?}");
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn an_approval_survives_a_restart_and_is_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &["--allow", "Write(once/**)"]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let code = "globalThis.k = 5; const n = Math.random(); await put('once/' + n + '.txt', 'x'); \
                await put('out.txt', 'approved'); [n, k]";
    let first = input_required(once(&c, "repl", json!({"code": code}), None).await);
    let requests = first.input_requests.clone().expect("input requests");
    assert_eq!(requests.len(), 1, "{requests:?}");
    let (key, request) = requests.iter().next().unwrap();
    let request = serde_json::to_value(request).unwrap();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert!(request["params"]["message"].as_str().unwrap().contains("out.txt"), "{request}");
    assert!(!dir.path().join("out.txt").exists());
    let state = first.request_state.clone().expect("a request state");
    drop(c);

    // The server restarts between the two rounds.
    s.child.kill().await.unwrap();
    let mut s = server(dir.path(), &["--allow", "Write(once/**)"]).await;
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let yes: BTreeMap<String, Value> =
        [(key.clone(), json!({"action": "accept", "content": {"approve": true}}))].into_iter().collect();
    // A forged state is refused.
    let mut forged = state.clone();
    forged.pop();
    forged.push(if state.ends_with('A') { 'B' } else { 'A' });
    let r = complete(once(&c, "repl", json!({"code": code}), Some((yes.clone(), forged))).await);
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("invalid requestState"), "{}", text(&r));
    // Another call's state is refused.
    let r = complete(once(&c, "repl", json!({"code": "1"}), Some((yes.clone(), state.clone()))).await);
    assert!(text(&r).contains("another call"), "{}", text(&r));
    // The answer continues the script: the first write is not made again.
    let r = complete(once(&c, "repl", json!({"code": code}), Some((yes.clone(), state.clone()))).await);
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let v = structured(&r)["result"].clone();
    assert_eq!(v[1], json!(5), "{v}");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "approved");
    let files = std::fs::read_dir(dir.path().join("once")).unwrap().count();
    assert_eq!(files, 1, "the write before the question ran once");
    assert!(dir.path().join("once").join(format!("{}.txt", v[0].as_f64().unwrap())).exists());
    // The same state again: already used.
    let r = complete(once(&c, "repl", json!({"code": code}), Some((yes, state))).await);
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("stale"), "{}", text(&r));
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_round_asked_on_one_server_is_answered_on_another_sharing_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = server(dir.path(), &[]).await;
    let mut b = server(dir.path(), &[]).await;
    let t = token(dir.path());
    let ca = connect(&a, &t, modern_client(true, "x")).await;
    let cb = connect(&b, &t, modern_client(true, "x")).await;
    let r = call(&ca, "repl", json!({"code": "let base = 40"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    let code = "base + (await haiku('two')).length";
    let first = input_required(once(&ca, "repl", json!({"code": code, "context": handle}), None).await);
    let (key, request) = first.input_requests.clone().unwrap().into_iter().next().unwrap();
    assert_eq!(serde_json::to_value(&request).unwrap()["method"], "sampling/createMessage");
    let answer: BTreeMap<String, Value> = [(
        key,
        json!({"role": "assistant", "content": {"type": "text", "text": "ab"}, "model": "m", "stopReason": "endTurn"}),
    )]
    .into_iter()
    .collect();
    let state = first.request_state.unwrap();
    let r = complete(once(&cb, "repl", json!({"code": code, "context": handle}), Some((answer, state))).await);
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    a.child.kill().await.unwrap();
    b.child.kill().await.unwrap();
}

#[tokio::test]
async fn listen_delivers_tool_list_changes_and_registered_tools_run_by_handle() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &[]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "double")).await;
    let mut sub = tokio::time::timeout(
        Duration::from_secs(30),
        c.peer().listen(SubscriptionFilter::builder().tools_list_changed().build()),
    )
    .await
    .expect("listen timed out")
    .expect("subscriptions/listen");
    let r = call(
        &c,
        "repl",
        json!({"code": "registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, ({n}) => n * 2)"}),
    )
    .await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    let n = tokio::time::timeout(Duration::from_secs(30), sub.next()).await.expect("no notification").unwrap();
    let n = serde_json::to_value(n.expect("a notification")).unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    let tools = c.list_all_tools().await.unwrap();
    let t = tools.iter().find(|t| t.name == "eval_registered__double").expect("listed");
    assert!(t.input_schema.get("properties").and_then(|p| p.get("context")).is_some(), "{t:?}");
    // It asks (always); the client approves what mentions "double".
    let r = call(&c, "eval_registered__double", json!({"n": 21, "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    s.child.kill().await.unwrap();
}

/// One raw HTTP/1.1 request; returns (status, body).
pub(crate) async fn raw_http(addr: &str, request: String) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    sock.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), sock.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn protocol_errors_are_the_ones_the_specification_gives() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &[]).await;
    let t = token(dir.path());
    let post = |body: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let (status, body) = raw_http(&s.addr, post("{not json")).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("-32700"), "{body}");
    // JSON that is not one JSON-RPC message: 400 and a JSON-RPC error, never 415 text.
    let ping = r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#;
    for bad in [
        "[]".to_string(),
        format!("[{ping}]"),
        "{}".into(),
        r#"{"jsonrpc": "2.0", "id": 7}"#.into(),
        "42".into(),
        r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#.into(),
    ] {
        let (status, body) = raw_http(&s.addr, post(&bad)).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("-32600") && body.contains("application/json"), "{bad}: {body}");
    }
    let (_, body) = raw_http(&s.addr, post(r#"{"jsonrpc": "2.0", "id": 7}"#)).await;
    assert!(body.contains(r#""id":7"#), "the error answers the request's id: {body}");

    let c = connect(&s, &t, modern_client(true, "x")).await;
    // tools/call with arguments that are not an object: invalid params.
    let bad = rmcp::model::ClientRequest::CustomRequest(rmcp::model::CustomRequest::new(
        "tools/call",
        Some(json!({"name": "repl", "arguments": [1, 2]})),
    ));
    let e = c.peer().send_request(bad).await.expect_err("refused");
    assert!(e.to_string().contains("-32602") || e.to_string().to_lowercase().contains("invalid params"), "{e}");
    // A cursor this server never gave: invalid params.
    let e = c
        .peer()
        .list_tools(Some(rmcp::model::PaginatedRequestParams::default().with_cursor(Some("bogus".into()))))
        .await
        .expect_err("a bogus cursor is refused");
    assert!(e.to_string().contains("cursor"), "{e}");
    // repl declares its output schema and is neither read-only nor idempotent.
    let tools = c.list_all_tools().await.unwrap();
    let repl = tools.iter().find(|t| t.name == "repl").unwrap();
    assert!(repl.output_schema.is_some());
    let ann = repl.annotations.clone().unwrap();
    assert_eq!((ann.read_only_hint, ann.idempotent_hint), (Some(false), Some(false)));
    // A long result is capped in structuredContent too, with the true total.
    let r = call(&c, "repl", json!({"code": "'x'.repeat(300000)"})).await;
    let st = structured(&r);
    assert_eq!(st["result_truncated"]["total"], json!(300002), "{}", st["result_truncated"]);
    assert!(st["result"].as_str().unwrap().len() < 300000);
    // The text's marker counts the whole result too, not the already capped text.
    let t = text(&r);
    let total: usize = t
        .rsplit("showing ")
        .next()
        .and_then(|m| m.split(" of ").nth(1))
        .and_then(|m| m.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no marker in {}", &t[t.len().saturating_sub(200)..]));
    assert!(total >= 300000, "the marker says {total}");
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_closed_session_is_deleted_with_no_content() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &[]).await;
    let t = token(dir.path());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let (status, head) = raw_http(
        &s.addr,
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{init}",
            init.len()
        ),
    )
    .await;
    assert_eq!(status, 200, "{head}");
    let id = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("mcp-session-id:")
                .map(|_| l.split_once(':').unwrap().1.trim().to_string())
        })
        .expect("a session id");
    let (status, body) = raw_http(
        &s.addr,
        format!(
            "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {t}\r\nMcp-Session-Id: {id}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(status == 204 || status == 200, "{body}");
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_line_that_is_not_json_on_stdio_gets_a_parse_error() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .arg("serve")
        .arg("--root")
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"{this is not json\n").await.unwrap();
    let line =
        tokio::time::timeout(Duration::from_secs(60), out.next_line()).await.expect("an answer").unwrap().unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["error"]["code"], json!(-32700), "{line}");
    assert_eq!(v["id"], Value::Null);
    // The connection goes on: a ping after it is answered.
    let init = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let line =
        tokio::time::timeout(Duration::from_secs(60), out.next_line()).await.expect("an answer").unwrap().unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["id"], json!(7), "{line}");
    assert!(v["result"]["serverInfo"]["name"] == "wrepl", "{line}");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
}

#[tokio::test]
async fn servers_with_the_same_state_key_file_share_handles_without_sharing_a_store() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, [9u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let other = tempfile::tempdir().unwrap();
    let mut a = server(dir.path(), &["--state-key-file", key.to_str().unwrap()]).await;
    let t = token(dir.path());
    let c = connect(&a, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "1"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    drop(c);
    a.child.kill().await.unwrap();
    // A server with another store but the same key opens the handle: the
    // context is not in its store, so it is reported gone, not forged.
    std::fs::copy(dir.path().join("tokens"), other.path().join("tokens")).unwrap();
    let mut b = server(other.path(), &["--state-key-file", key.to_str().unwrap()]).await;
    let c = connect(&b, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "1", "context": handle})).await;
    assert!(text(&r).contains("not in this server's store") && text(&r).contains("without `context`"), "{}", text(&r));
    b.child.kill().await.unwrap();
    // A world-readable key file is refused at start.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = spawn_http(dir.path(), "127.0.0.1:0", &["--state-key-file", key.to_str().unwrap()], &[]).await;
    let Err(refused) = refused else { panic!("a readable key file must be refused") };
    assert!(refused.stderr.join("\n").contains("chmod 600"), "{:?}", refused.stderr);
}

#[tokio::test]
async fn metrics_count_evaluations_inner_calls_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "x").unwrap();
    let mut s = server(dir.path(), &["--metrics", "127.0.0.1:0"]).await;
    let t = token(dir.path());
    let addr = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| l.strip_prefix("wrepl: metrics at http://").map(|r| r.trim_end_matches("/metrics").to_string()))
        .expect("the metrics address is printed");
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "(await gl('*.md')).length"})).await;
    assert_eq!(structured(&r)["result"], json!(1));
    let r = call(&c, "repl", json!({"code": "throw new Error('no')"})).await;
    assert_eq!(r.is_error, Some(true));
    // A refused call counts as denied; a stopped evaluation as a budget exhaustion.
    let r =
        call(&c, "repl", json!({"code": "await Write({file_path: 'b.md', content: 'y'}).catch((e) => e.kind)"})).await;
    assert_eq!(structured(&r)["result"], json!("denied"));
    let r = call(&c, "repl", json!({"code": "while (true) {}", "timeout": 300})).await;
    assert_eq!(structured(&r)["timed_out"], json!(true));
    let (status, body) =
        raw_http(&addr, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_string()).await;
    assert_eq!(status, 200, "{body}");
    // The Write asks this client first (input_required), and it declines on the retry.
    assert!(body.contains("wrepl_evals_total{outcome=\"ok\"} 2"), "{body}");
    assert!(body.contains("wrepl_evals_total{outcome=\"error\"} 2"), "{body}");
    assert!(body.contains("wrepl_evals_total{outcome=\"input_required\"} 1"), "{body}");
    assert!(body.contains("wrepl_inner_calls_total{tool=\"Glob\",outcome=\"ok\"} 1"), "{body}");
    assert!(body.contains("wrepl_eval_duration_seconds_count 5"), "{body}");
    assert!(body.contains("wrepl_inner_calls_total{tool=\"Write\",outcome=\"denied\"} 1"), "{body}");
    assert!(body.contains("wrepl_inner_call_duration_seconds_count 3"), "{body}");
    assert!(body.contains("wrepl_budget_exhaustions_total 1"), "{body}");
    // The store's commits are timed; each of the four calls (none named a
    // context) started a context of its own, and all four are live.
    let commits = body
        .lines()
        .find_map(|l| l.strip_prefix("wrepl_store_commit_duration_seconds_count "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no commit count in {body}"));
    assert!(commits >= 4, "at least a commit per evaluation: {commits}\n{body}");
    assert!(body.contains("wrepl_contexts{state=\"live\"} 4"), "{body}");
    assert!(body.contains("wrepl_contexts{state=\"hibernated\"} 0"), "{body}");
    // The MCP listener serves the same at /metrics, behind its token.
    let mcp = s.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let get = |auth: &str| format!("GET /metrics HTTP/1.1\r\nHost: {mcp}\r\n{auth}Connection: close\r\n\r\n");
    let (status, refused) = raw_http(&mcp, get("")).await;
    assert_eq!(status, 401, "{refused}");
    assert!(!refused.contains("wrepl_evals_total"), "{refused}");
    let (status, _) = raw_http(&mcp, get("Authorization: Bearer not-the-token\r\n")).await;
    assert_eq!(status, 401);
    let (status, behind) = raw_http(&mcp, get(&format!("Authorization: Bearer {t}\r\n"))).await;
    assert_eq!(status, 200, "{behind}");
    assert!(behind.contains("wrepl_evals_total{outcome=\"ok\"} 2"), "{behind}");
    // A foreign Origin is refused there as on /mcp.
    let (status, _) =
        raw_http(&mcp, get(&format!("Authorization: Bearer {t}\r\nOrigin: http://evil.example\r\n"))).await;
    assert_eq!(status, 403);
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn an_endless_stdio_line_is_refused_without_holding_it() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .arg("serve")
        .arg("--root")
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // 320 MiB without a newline (five times the 64 MiB message limit), then the end of the line.
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..320 {
        stdin.write_all(&chunk).await.unwrap();
    }
    stdin.write_all(b"\n").await.unwrap();
    let line =
        tokio::time::timeout(Duration::from_secs(60), out.next_line()).await.expect("an answer").unwrap().unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["error"]["code"], json!(-32700), "{line}");
    assert!(line.contains("too long"), "{line}");
    let init = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let line =
        tokio::time::timeout(Duration::from_secs(60), out.next_line()).await.expect("an answer").unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], json!(3), "{line}");
    // The server never held the line whole: its peak memory stays far below it.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(peak_kb < 300 * 1024, "peak RSS {peak_kb} kB for a 320 MiB line");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
}

#[tokio::test]
async fn past_the_memory_bound_the_least_recently_used_context_goes_and_comes_back_by_replay() {
    let dir = tempfile::tempdir().unwrap();
    // 48 MiB for all live contexts: one holding a 25 MB string fits, two do not.
    let mut s = server(dir.path(), &["--max-context-memory", "48", "--metrics", "127.0.0.1:0"]).await;
    let t = token(dir.path());
    let addr = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| l.strip_prefix("wrepl: metrics at http://").map(|r| r.trim_end_matches("/metrics").to_string()))
        .expect("the metrics address is printed");
    // Rebuilds: by replay, or from a snapshot (taken after a block that cost
    // enough guest time, which depends on the machine).
    let replays = || async {
        let (_, body) =
            raw_http(&addr, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_string()).await;
        let count = |name: &str| {
            body.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0)
        };
        (count("wrepl_replays_total "), count("wrepl_snapshot_resumes_total "))
    };
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let big = "globalThis.big = 'ab'.repeat(12_500_000); big.length";
    let r = call(&c, "repl", json!({"code": big})).await;
    assert_eq!(structured(&r)["result"], json!(25_000_000), "{}", text(&r));
    let first = structured(&r)["context"].as_str().unwrap().to_string();
    // Within the bound, the context stays live: no replay.
    let r = call(&c, "repl", json!({"code": "big.length", "context": first})).await;
    assert_eq!(structured(&r)["result"], json!(25_000_000), "{}", text(&r));
    assert_eq!(replays().await, (0, 0));
    // A second one like it: the first, least recently used, goes...
    let r = call(&c, "repl", json!({"code": big})).await;
    let second = structured(&r)["context"].as_str().unwrap().to_string();
    assert_ne!(first, second);
    // ...and comes back by replay when its handle is used, with its state.
    let r = call(&c, "repl", json!({"code": "big.slice(0, 4) + big.length", "context": first})).await;
    assert_eq!(structured(&r)["result"], json!("abab25000000"), "{}", text(&r));
    // (A rebuild from a snapshot that replayed the block after it counts in both.)
    let (by_replay, from_snapshot) = replays().await;
    assert!(
        by_replay <= 1 && from_snapshot <= 1 && by_replay + from_snapshot >= 1,
        "rebuilt once: {by_replay}, {from_snapshot}"
    );
    s.child.kill().await.unwrap();
}

/// The metrics text of a server started with `--metrics 127.0.0.1:0`.
async fn metrics_of(s: &HttpServer) -> String {
    let addr = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| l.strip_prefix("wrepl: metrics at http://").map(|r| r.trim_end_matches("/metrics").to_string()))
        .expect("the metrics address is printed");
    raw_http(&addr, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_string()).await.1
}

#[tokio::test]
async fn an_idle_context_hibernates_and_its_next_call_wakes_it_from_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &["--metrics", "127.0.0.1:0", "--hibernate-after", "1"]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let r = call(
        &c,
        "repl",
        json!({"code": "let kept = new Map([['k', 41]]); globalThis.bump = () => kept.get('k') + 1; 1"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    // Idle for a second: it is snapshotted and dropped (the sweep runs
    // every quarter of that, at least every 100 ms).
    let hibernated = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if metrics_of(&s).await.contains("wrepl_hibernations_total 1") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(hibernated.is_ok(), "{}", metrics_of(&s).await);
    let m = metrics_of(&s).await;
    assert!(
        m.contains("wrepl_contexts{state=\"live\"} 0") && m.contains("wrepl_contexts{state=\"hibernated\"} 1"),
        "{m}"
    );
    // The next call wakes it from the snapshot: its state is there, nothing
    // was replayed, and the result carries no restore note.
    let r = call(&c, "repl", json!({"code": "bump()", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    assert!(!text(&r).contains("restored"), "{}", text(&r));
    let m = metrics_of(&s).await;
    assert!(m.contains("wrepl_snapshot_resumes_total 1") && m.contains("wrepl_replays_total 0"), "{m}");
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_stopped_server_snapshots_its_contexts_and_the_next_one_resumes_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &["--hibernate-after", "0"]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "let n = 20; n + 1"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    drop(c);
    // SIGTERM: a graceful stop snapshots the live contexts, then exits 0.
    // (The pid of the server this test spawned and has not reaped.)
    let pid = s.child.id().expect("running").to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(60), s.child.wait()).await.expect("it stops").unwrap();
    assert!(status.success(), "{status:?}: {:?}", s.stderr.lock().unwrap());
    assert!(s.stderr.lock().unwrap().iter().any(|l| l.contains("stopping: snapshotting the live contexts")));
    let store = dir.path().join("store.sqlite3");
    let db = rusqlite::Connection::open(&store).unwrap();
    let rows: i64 = db.query_row("SELECT COUNT(*) FROM snapshots", [], |r| r.get(0)).unwrap();
    assert_eq!(rows, 1, "one context, one snapshot");
    // A new server continues the context from it.
    let mut s = server(dir.path(), &["--metrics", "127.0.0.1:0"]).await;
    let c = connect(&s, &t, modern_client(true, "x")).await;
    let r = call(&c, "repl", json!({"code": "n * 2", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(40), "{r:?}");
    assert!(metrics_of(&s).await.contains("wrepl_snapshot_resumes_total 1"));
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_registered_tools_approval_round_continues_from_a_snapshot_without_replay() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = server(dir.path(), &["--metrics", "127.0.0.1:0"]).await;
    let t = token(dir.path());
    let c = connect(&s, &t, modern_client(true, "double")).await;
    let r = call(
        &c,
        "repl",
        json!({"code": "let calls = 0; registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, ({n}) => (++calls, n * 2))"}),
    )
    .await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    // It asks (always): a round trip for the approval, then the call runs
    // in the context rebuilt from the snapshot taken before it.
    let r = call(&c, "eval_registered__double", json!({"n": 21, "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    assert!(!text(&r).contains("restored"), "{}", text(&r));
    let r = call(&c, "repl", json!({"code": "calls", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(1), "{r:?}");
    let m = metrics_of(&s).await;
    assert!(m.contains("wrepl_replays_total 0") && m.contains("wrepl_snapshot_resumes_total 1"), "{m}");
    s.child.kill().await.unwrap();
}

/// A gauge's value in Prometheus text (0 when absent).
fn gauge(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// kill -9 while eight contexts commit their blocks together (SQLite's group
/// commit: one transaction for the writes of every context waiting at the
/// time), at random moments over several rounds: every evaluation a client
/// was answered is in its context after the restart, every evaluation a
/// context says it did had its side effect exactly once, no side effect
/// ran twice or without a recorded intent, and every log verifies.
#[tokio::test]
async fn kill_9_during_group_commits_of_eight_contexts_loses_nothing_acknowledged() {
    use std::sync::atomic::{AtomicU64, Ordering};
    const CONTEXTS: usize = 8;
    // CI: 3 kills; the long mode: 10.
    let rounds = if crate::resilience::long_mode() { 10 } else { 3 };
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--metrics", "127.0.0.1:0", "--allow", "Bash"];
    let mut rng = crate::resilience::Rng(0x5DEE_CE66_D1CE_4E5B);
    let mut handles: Vec<Option<String>> = vec![None; CONTEXTS];
    let mut acked: Vec<Vec<u64>> = vec![Vec::new(); CONTEXTS];
    let mut next: Vec<u64> = vec![0; CONTEXTS];
    let mut grouped_at_kill = Vec::new();
    for round in 0..rounds {
        let mut s = server(dir.path(), &extra).await;
        let t = token(dir.path());
        let answered = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for k in 0..CONTEXTS {
            let (url, t, mut handle, mut i, answered) =
                (s.url.clone(), t.clone(), handles[k].clone(), next[k], answered.clone());
            tasks.push(tokio::spawn(async move {
                let c = modern(modern_client(true, "x"), http_transport(&url, &t)).await;
                let mut acked = Vec::new();
                loop {
                    let code = format!(
                        "await sh('echo c{k}-{i} >> effects-{k}.log'); globalThis.done ??= []; done.push({i}); {i}"
                    );
                    let mut a = json!({ "code": code });
                    if let Some(h) = &handle {
                        a["context"] = json!(h);
                    }
                    let p = CallToolRequestParams::new("repl").with_arguments(args(a));
                    let r = tokio::time::timeout(Duration::from_secs(60), c.call_tool(p)).await;
                    // The server was killed under the call: it was not answered.
                    let Ok(Ok(r)) = r else { break };
                    let st = structured(&r);
                    assert!(r.is_error != Some(true) && st["result"] == json!(i), "context {k}, evaluation {i}: {r:?}");
                    handle = Some(st["context"].as_str().expect("a context handle").to_string());
                    acked.push(i);
                    answered.fetch_add(1, Ordering::SeqCst);
                    i += 1;
                }
                // The evaluation in flight at the kill keeps its number.
                (handle, acked, i + 1)
            }));
        }
        // Kill only once this server has committed writes of several
        // contexts in one transaction, then at a random moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let m = metrics_of(&s).await;
            let (writes, txs) = (gauge(&m, "wrepl_store_grouped_writes"), gauge(&m, "wrepl_store_transactions"));
            if answered.load(Ordering::SeqCst) >= 2 * CONTEXTS as u64 && writes > txs {
                grouped_at_kill.push((writes, txs));
                break;
            }
            assert!(std::time::Instant::now() < deadline, "round {round}: no group commit within 120 s: {m}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.below(40))).await;
        s.child.kill().await.unwrap();
        for (k, task) in tasks.into_iter().enumerate() {
            let (handle, a, n) = task.await.unwrap();
            assert!(handle.is_some(), "context {k} was answered at least once");
            handles[k] = handle;
            acked[k].extend(a);
            next[k] = n;
        }
        // Every log is intact after the crash.
        let store = SqliteStore::open(&dir.path().join("store.sqlite3")).unwrap();
        for info in store.sessions().unwrap() {
            let report = store.verify(&info.name).unwrap();
            assert!(report.ok, "round {round}, session {}: {report:?}", info.name);
        }
    }

    // A last restart: what each context says it did.
    let mut s = server(dir.path(), &extra).await;
    let c = connect(&s, &token(dir.path()), modern_client(true, "x")).await;
    let mut intents = std::collections::HashSet::new();
    let store = SqliteStore::open(&dir.path().join("store.sqlite3")).unwrap();
    for info in store.sessions().unwrap() {
        for e in store.load(&info.name).unwrap() {
            if let wrepl::replay::log::Event::Call { tool, input, .. } = e.event {
                let cmd: Value = serde_json::from_str(&input).unwrap();
                if tool == "Bash" {
                    intents.insert(cmd["command"].as_str().unwrap_or_default().to_string());
                }
            }
        }
    }
    let mut total = 0;
    for k in 0..CONTEXTS {
        let h = handles[k].clone().unwrap();
        let r = call(&c, "repl", json!({"code": "done", "context": h})).await;
        let done: Vec<u64> = serde_json::from_value(structured(&r)["result"].clone())
            .unwrap_or_else(|e| panic!("context {k}: {e}: {r:?}"));
        assert!(done.windows(2).all(|w| w[0] < w[1]), "context {k} did each evaluation once, in order: {done:?}");
        for i in &acked[k] {
            assert!(done.contains(i), "context {k}: answered evaluation {i} is lost after the kills: {done:?}");
        }
        let log = std::fs::read_to_string(dir.path().join(format!("effects-{k}.log"))).unwrap();
        let mut seen = std::collections::HashMap::new();
        for token in log.lines() {
            *seen.entry(token.to_string()).or_insert(0) += 1;
            assert!(
                intents.contains(&format!("echo {token} >> effects-{k}.log")),
                "effect {token} ran without a recorded intent"
            );
        }
        for (token, n) in &seen {
            assert_eq!(*n, 1, "effect {token} ran {n} times");
        }
        for i in &done {
            assert_eq!(seen.get(&format!("c{k}-{i}")), Some(&1), "context {k} says evaluation {i} ran: its effect did");
        }
        total += acked[k].len();
    }
    drop(c);
    s.child.kill().await.unwrap();
    eprintln!(
        "group commit under kill -9: {rounds} kills, {total} answered evaluations in {CONTEXTS} contexts, grouped writes / transactions at each kill: {grouped_at_kill:?}"
    );
}
