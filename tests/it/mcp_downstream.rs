//! Downstream MCP servers as inner tools: config rules, listing caps and
//! skip rules, results, progress, cancellation, dead and oversized servers
//! (against a scripted in-process server that can misbehave), and the
//! official reference server (`server-everything`) through the pipeline.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use wrepl::mcp::downstream::{
    Downstream, DownstreamConfig, DownstreamError, ServerTransport, MAX_DESCRIPTION_BYTES, MAX_MESSAGE_BYTES,
    MAX_RESULT_BYTES, MAX_TOOLS_PER_SERVER,
};
use wrepl::{
    EventSink, Media, Phase, ProgressEvent, ProgressFn, ReplBuilder, Tool, ToolContext, ToolError, ToolProgress,
    Workspace,
};

use crate::support::*;

// ---------------------------------------------------------------------------
// Config

#[test]
fn config_accepts_command_and_url_servers() {
    let c = DownstreamConfig::from_json(
        r#"{"mcpServers": {
            "files": {"command": "node", "args": ["s.js"], "env": {"K": "v"}, "cwd": "/tmp", "timeout_ms": 5000},
            "web-1": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}
        }}"#,
    )
    .unwrap();
    assert_eq!(c.servers.len(), 2);
    let files = &c.servers["files"];
    assert_eq!(files.timeout, Some(Duration::from_millis(5000)));
    match &files.transport {
        ServerTransport::Stdio { command, args, env, cwd } => {
            assert_eq!(command, "node");
            assert_eq!(args, &["s.js".to_string()]);
            assert_eq!(env["K"], "v");
            assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&c.servers["web-1"].transport, ServerTransport::Http { url, .. } if url == "https://example.com/mcp")
    );
}

#[test]
fn config_errors_are_typed() {
    let parse = |s: &str| DownstreamConfig::from_json(s).unwrap_err();
    assert!(matches!(parse("{"), DownstreamError::Invalid(_)));
    assert!(matches!(parse(r#"{"servers": {}}"#), DownstreamError::Invalid(_)));
    assert!(matches!(parse(r#"{"mcpServers": {"a": {"command": "x", "colour": 1}}}"#), DownstreamError::Invalid(_)));
    for bad in ["a__b", "a_", "", "a b", "a.b", &"x".repeat(65)] {
        let e = parse(&format!(r#"{{"mcpServers": {{"{bad}": {{"command": "x"}}}}}}"#));
        assert!(matches!(&e, DownstreamError::ServerName { name, .. } if name == bad), "{bad}: {e}");
    }
    // 64 characters and inner single underscores are fine
    DownstreamConfig::from_json(&format!(r#"{{"mcpServers": {{"{}": {{"command": "x"}}}}}}"#, "x".repeat(64))).unwrap();
    DownstreamConfig::from_json(r#"{"mcpServers": {"_a-b_c": {"command": "x"}}}"#).unwrap();
    for entry in [
        r#"{}"#,
        r#"{"command": "x", "url": "http://h"}"#,
        r#"{"command": ""}"#,
        r#"{"command": "x", "timeout_ms": 0}"#,
        r#"{"command": "x", "headers": {"a": "b"}}"#,
        r#"{"command": "x", "type": "http"}"#,
        r#"{"url": "ftp://h"}"#,
        r#"{"url": "http://h", "type": "sse"}"#,
        r#"{"url": "http://h", "args": []}"#,
        r#"{"url": "http://h", "headers": {"bad name": "v"}}"#,
        r#"{"url": "http://h", "headers": {"x": "line\nbreak"}}"#,
        r#"{"url": "http://h", "headers": {"Mcp-Session-Id": "s"}}"#,
        r#"{"command": "x", "env": {"A=B": "v"}}"#,
    ] {
        let e = parse(&format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#));
        assert!(matches!(&e, DownstreamError::Server { server, .. } if server == "s"), "{entry}: {e}");
    }
    let many: Vec<String> = (0..65).map(|i| format!(r#""s{i}": {{"command": "x"}}"#)).collect();
    assert!(matches!(parse(&format!(r#"{{"mcpServers": {{{}}}}}"#, many.join(","))), DownstreamError::Invalid(_)));
    let missing = DownstreamConfig::load(std::path::Path::new("/nonexistent/mcp.json")).unwrap_err();
    assert!(matches!(missing, DownstreamError::Read { .. }), "{missing}");
}

// ---------------------------------------------------------------------------
// A scripted in-process server (newline-delimited JSON-RPC over a duplex
// pipe) that lists whatever it is told to and can misbehave on purpose.

/// What the fake server observed.
#[derive(Default)]
struct Seen {
    /// Request ids of `hang` calls, in order.
    hanging: Mutex<Vec<Value>>,
    /// `notifications/cancelled` params received.
    cancelled: Mutex<Vec<Value>>,
    /// `tools/call` requests received (name, arguments).
    calls: Mutex<Vec<(String, Value)>>,
}

/// Connects to a fake server; `pages[i]` is its `tools/list` result for
/// cursor `None` (i = 0) or `"p<i>"`.
async fn connect_fake(
    pages: Vec<Value>,
    timeout: Option<Duration>,
) -> (Downstream, Arc<Seen>, mpsc::UnboundedReceiver<()>) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(ours);
    let seen = Arc::new(Seen::default());
    let (hang_tx, hang_rx) = mpsc::unbounded_channel();
    tokio::spawn(serve_fake(theirs, pages, seen.clone(), hang_tx));
    let d = Downstream::connect_streams(
        vec![("fake".into(), Box::new(read), Box::new(write), timeout)],
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    (d, seen, hang_rx)
}

async fn serve_fake(
    io: tokio::io::DuplexStream,
    pages: Vec<Value>,
    seen: Arc<Seen>,
    hanging: mpsc::UnboundedSender<()>,
) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    async fn send(w: &mut (impl AsyncWriteExt + Unpin), v: Value) -> bool {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        w.write_all(&line).await.is_ok() && w.flush().await.is_ok()
    }
    while let Ok(Some(line)) = lines.next_line().await {
        let msg: Value = serde_json::from_str(&line).unwrap();
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        let id = msg["id"].clone();
        let params = msg["params"].clone();
        let reply = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"}
            }),
            "notifications/cancelled" => {
                seen.cancelled.lock().unwrap().push(params);
                continue;
            }
            "tools/list" => {
                let i = match params["cursor"].as_str() {
                    None => 0,
                    Some(c) => c.trim_start_matches('p').parse::<usize>().unwrap(),
                };
                pages[i].clone()
            }
            "tools/call" => {
                let name = params["name"].as_str().unwrap().to_string();
                seen.calls.lock().unwrap().push((name.clone(), params["arguments"].clone()));
                match name.as_str() {
                    "structured" => json!({
                        "content": [{"type": "text", "text": "{\"sum\":3}"}],
                        "structuredContent": {"sum": 3}
                    }),
                    "text" => json!({"content": [
                        {"type": "text", "text": "line one"},
                        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                        {"type": "image", "data": "aGk=", "mimeType": "text/html"},
                        {"type": "text", "text": "{\"looks\": \"like json\"}"}
                    ]}),
                    "fails" => json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
                    "protoerr" => {
                        send(
                            &mut write,
                            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "bad arguments"}}),
                        )
                        .await;
                        continue;
                    }
                    "progress" => {
                        let token = params["_meta"]["progressToken"].clone();
                        for i in 1..=3 {
                            let n = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                                "progressToken": token, "progress": i, "total": 3, "message": format!("step {i}")
                            }});
                            send(&mut write, n).await;
                        }
                        // a report for somebody else's token goes nowhere
                        send(
                            &mut write,
                            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                                "progressToken": "not-a-token", "progress": 99
                            }}),
                        )
                        .await;
                        json!({"content": [{"type": "text", "text": "done"}]})
                    }
                    "hang" => {
                        seen.hanging.lock().unwrap().push(id.clone());
                        let _ = hanging.send(());
                        continue;
                    }
                    "big" => json!({"content": [{"type": "text", "text": "y".repeat(MAX_RESULT_BYTES)}]}),
                    "huge" => {
                        let text = "x".repeat(MAX_MESSAGE_BYTES);
                        send(&mut write, json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})).await;
                        continue;
                    }
                    "die" => return,
                    "meta" => json!({"content": [{"type": "text", "text": params["_meta"].to_string()}]}),
                    _ => json!({"content": [{"type": "text", "text": "ok"}]}),
                }
            }
            _ if msg.get("id").is_none() => continue,
            _ => {
                send(
                    &mut write,
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}),
                )
                .await;
                continue;
            }
        };
        if !send(&mut write, json!({"jsonrpc": "2.0", "id": id, "result": reply})).await {
            return;
        }
    }
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("the {name} tool"), "inputSchema": {"type": "object"}})
}

fn page(tools: Vec<Value>, next: Option<&str>) -> Value {
    match next {
        Some(c) => json!({"tools": tools, "nextCursor": c}),
        None => json!({"tools": tools}),
    }
}

fn call_tools() -> Vec<Value> {
    ["structured", "text", "fails", "protoerr", "progress", "hang", "big", "huge", "die", "plain"]
        .iter()
        .map(|n| tool(n))
        .collect()
}

fn ctx(dir: &std::path::Path, progress: Option<ProgressFn>) -> (ToolContext, CancellationToken) {
    let cancel = CancellationToken::new();
    let c = ToolContext {
        workspace: Arc::new(Workspace::new([dir]).unwrap()),
        cwd: dir.to_path_buf(),
        cancel: cancel.clone(),
        timeout: Duration::from_secs(30),
        progress,
        confinement: Default::default(),
        trace: None,
        tasks: Default::default(),
    };
    (c, cancel)
}

fn find(d: &Downstream, name: &str) -> Arc<dyn Tool> {
    d.tools().into_iter().find(|t| t.name() == name).unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_skips_bad_tools_and_passes_schemas_through() {
    let input = json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
    let output = json!({"type": "object", "properties": {"sum": {"type": "number"}}});
    let first = vec![
        json!({"name": "good", "description": "d".repeat(MAX_DESCRIPTION_BYTES + 100), "inputSchema": input, "outputSchema": output}),
        json!({"name": "dash-ed", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
        json!({"name": "has space", "inputSchema": {"type": "object"}}),
        json!({"name": "x".repeat(65), "inputSchema": {"type": "object"}}),
        json!({"name": 7, "inputSchema": {"type": "object"}}),
        json!("not an object"),
    ];
    let second = vec![
        json!({"name": "good", "inputSchema": {"type": "object"}}),
        json!({"name": "string_schema", "inputSchema": "object"}),
        json!({"name": "no_schema"}),
        json!({"name": "array_type", "inputSchema": {"type": "array"}}),
        json!({"name": "huge_schema", "inputSchema": {"type": "object", "description": "x".repeat(300 * 1024)}}),
        json!({"name": "bad_schema", "inputSchema": {"type": "object", "properties": {"a": {"type": "no-such-type"}}}}),
        json!({"name": "bad_output", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "minimum": "x"}}),
        json!({"name": "under__score", "inputSchema": {"type": "object"}}),
    ];
    let (d, _seen, _) = connect_fake(vec![page(first, Some("p1")), page(second, None)], None).await;
    let mut names: Vec<String> = d.tools().iter().map(|t| t.name().to_string()).collect();
    names.sort();
    assert_eq!(names, ["mcp__fake__dash-ed", "mcp__fake__good", "mcp__fake__under__score"], "{:?}", d.warnings());
    // one warning per skipped entry
    assert_eq!(d.warnings().len(), 11, "{:#?}", d.warnings());
    for needle in
        ["has space", "\"good\"", "string_schema", "no_schema", "array_type", "huge_schema", "bad_schema", "bad_output"]
    {
        assert!(d.warnings().iter().any(|w| w.contains(needle)), "no warning about {needle}: {:#?}", d.warnings());
    }
    let good = find(&d, "mcp__fake__good");
    assert_eq!(good.input_schema(), input);
    assert_eq!(good.output_schema(), Some(output));
    assert!(good.description().len() <= MAX_DESCRIPTION_BYTES + 3 && good.description().starts_with("ddd"));
    let dashed = find(&d, "mcp__fake__dash-ed");
    assert_eq!(dashed.output_schema(), None);
    // annotations are not trusted: never read-only, so permission still asks
    assert!(!dashed.read_only(&json!({})));
    assert!(dashed.concurrency_safe(&json!({})));
    assert_eq!(dashed.native_timeout(&json!({})), Duration::from_secs(120));
    // the pipeline accepts every tool that was kept
    let dir = tempfile::tempdir().unwrap();
    template(dir.path(), &d, &[], None).dispatcher().expect("the pipeline accepts every kept tool");
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_is_capped() {
    let many = |from: usize, n: usize| (from..from + n).map(|i| tool(&format!("t{i}"))).collect::<Vec<_>>();
    let (d, _, _) = connect_fake(
        vec![page(many(0, 600), Some("p1")), page(many(600, 600), None)],
        Some(Duration::from_millis(1500)),
    )
    .await;
    assert_eq!(d.tools().len(), MAX_TOOLS_PER_SERVER);
    assert!(d.warnings().iter().any(|w| w.contains("more than 1000 tools")), "{:?}", d.warnings());
    assert_eq!(d.tools()[0].native_timeout(&json!({})), Duration::from_millis(1500));
    // a server whose cursor never ends is read once per distinct cursor
    let (d, _, _) = connect_fake(vec![page(many(0, 1), Some("p1")), page(many(1, 1), Some("p1"))], None).await;
    assert_eq!(d.tools().len(), 2);
    assert!(d.warnings().iter().any(|w| w.contains("repeated")), "{:?}", d.warnings());
}

#[tokio::test(flavor = "multi_thread")]
async fn results_errors_and_media() {
    let dir = tempfile::tempdir().unwrap();
    let (d, seen, _) = connect_fake(vec![page(call_tools(), None)], None).await;

    let out = find(&d, "mcp__fake__structured").call(json!({"a": 1, "b": 2}), ctx(dir.path(), None).0).await.unwrap();
    assert_eq!(out.value, json!({"sum": 3}));
    assert_eq!(out.text, "{\"sum\":3}");
    assert_eq!(seen.calls.lock().unwrap()[0], ("structured".to_string(), json!({"a": 1, "b": 2})));

    // text blocks joined, kept a string even when it looks like JSON; images become media
    let out = find(&d, "mcp__fake__text").call(json!({}), ctx(dir.path(), None).0).await.unwrap();
    assert!(out.text.starts_with("line one\n"), "{}", out.text);
    assert!(out.text.ends_with("{\"looks\": \"like json\"}"), "{}", out.text);
    assert!(out.text.contains("unsupported type \"text/html\""), "{}", out.text);
    assert_eq!(out.value, Value::String(out.text.clone()));
    assert_eq!(out.media, vec![Media::Image { mime: "image/png".into(), data: "aGk=".into() }]);

    let e = find(&d, "mcp__fake__fails").call(json!({}), ctx(dir.path(), None).0).await.unwrap_err();
    assert_eq!(e, ToolError::Failed("boom".into()));

    let e = find(&d, "mcp__fake__protoerr").call(json!({}), ctx(dir.path(), None).0).await.unwrap_err();
    let ToolError::Failed(m) = e else { panic!("{e:?}") };
    assert!(m.contains("\"fake\"") && m.contains("\"protoerr\"") && m.contains("bad arguments"), "{m}");

    let e = find(&d, "mcp__fake__plain").call(json!("not an object"), ctx(dir.path(), None).0).await.unwrap_err();
    assert!(matches!(e, ToolError::InvalidInput(_)), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_is_forwarded_to_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (d, _, _) = connect_fake(vec![page(call_tools(), None)], None).await;
    let got: Arc<Mutex<Vec<ToolProgress>>> = Arc::default();
    let sink = got.clone();
    let f: ProgressFn = Arc::new(move |p| sink.lock().unwrap().push(p));
    let out = find(&d, "mcp__fake__progress").call(json!({}), ctx(dir.path(), Some(f)).0).await.unwrap();
    assert_eq!(out.value, json!("done"));
    let got = got.lock().unwrap().clone();
    let expected: Vec<ToolProgress> = (1..=3)
        .map(|i| ToolProgress { progress: i as f64, total: Some(3.0), message: Some(format!("step {i}")) })
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_calls_trace_context_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut tools = call_tools();
    tools.push(tool("meta"));
    let (d, _, _) = connect_fake(vec![page(tools, None)], None).await;
    let (mut c, _) = ctx(dir.path(), None);
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    c.trace = Some(wrepl::call::TraceContext { traceparent: traceparent.into(), tracestate: Some("k=v".into()) });
    let out = find(&d, "mcp__fake__meta").call(json!({}), c).await.unwrap();
    let meta: Value = serde_json::from_str(out.value.as_str().unwrap()).unwrap();
    assert_eq!((meta["traceparent"].as_str(), meta["tracestate"].as_str()), (Some(traceparent), Some("k=v")), "{meta}");
    // Without a trace, nothing of one is sent.
    let out = find(&d, "mcp__fake__meta").call(json!({}), ctx(dir.path(), None).0).await.unwrap();
    assert!(!out.text.contains("traceparent"), "{}", out.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (d, seen, mut hanging) = connect_fake(vec![page(call_tools(), None)], None).await;
    let (c, cancel) = ctx(dir.path(), None);
    let call = tokio::spawn(find(&d, "mcp__fake__hang").call(json!({}), c));
    tokio::time::timeout(Duration::from_secs(10), hanging.recv()).await.unwrap().unwrap();
    cancel.cancel();
    let e = tokio::time::timeout(Duration::from_secs(5), call).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(e, ToolError::Cancelled(_)), "{e:?}");
    let id = seen.hanging.lock().unwrap()[0].clone();
    wait_for(|| !seen.cancelled.lock().unwrap().is_empty()).await;
    assert_eq!(seen.cancelled.lock().unwrap()[0]["requestId"], id);

    // dropping the call future (instead of cancelling) also tells the server
    let (c, _cancel) = ctx(dir.path(), None);
    let mut call = find(&d, "mcp__fake__hang").call(json!({}), c);
    tokio::select! {
        _ = &mut call => panic!("hang returned"),
        _ = hanging.recv() => {}
    }
    drop(call);
    let id = seen.hanging.lock().unwrap()[1].clone();
    wait_for(|| seen.cancelled.lock().unwrap().len() == 2).await;
    assert_eq!(seen.cancelled.lock().unwrap()[1]["requestId"], id);
    // the connection still works
    let out = find(&d, "mcp__fake__plain").call(json!({}), ctx(dir.path(), None).0).await.unwrap();
    assert_eq!(out.value, json!("ok"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_server_fails_calls_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (d, _, _) = connect_fake(vec![page(call_tools(), None)], None).await;
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        find(&d, "mcp__fake__die").call(json!({}), ctx(dir.path(), None).0),
    )
    .await
    .expect("a dead server must not hang the call")
    .unwrap_err();
    assert!(matches!(&e, ToolError::Failed(m) if m.contains("\"fake\" is not running")), "{e:?}");
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        find(&d, "mcp__fake__plain").call(json!({}), ctx(dir.path(), None).0),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(&e, ToolError::Failed(m) if m.contains("not running")), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_message_disconnects_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (d, _, _) = connect_fake(vec![page(call_tools(), None)], None).await;
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        find(&d, "mcp__fake__huge").call(json!({}), ctx(dir.path(), None).0),
    )
    .await
    .expect("an oversized reply must not hang the call")
    .unwrap_err();
    assert!(matches!(&e, ToolError::Failed(m) if m.contains("larger than")), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_result_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // just over the result cap, but within the message cap: the call fails, the connection stays
    let (d, _, _) = connect_fake(vec![page(call_tools(), None)], None).await;
    let e = find(&d, "mcp__fake__big").call(json!({}), ctx(dir.path(), None).0).await.unwrap_err();
    assert!(matches!(&e, ToolError::Failed(m) if m.contains("at most 67108864")), "{e:?}");
    let out = find(&d, "mcp__fake__plain").call(json!({}), ctx(dir.path(), None).0).await.unwrap();
    assert_eq!(out.value, json!("ok"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_is_left_out() {
    let (ours, _theirs) = tokio::io::duplex(1024);
    let (read, write) = tokio::io::split(ours);
    let d = Downstream::connect_streams(
        vec![("mute".into(), Box::new(read), Box::new(write), None)],
        Duration::from_millis(300),
    )
    .await
    .unwrap();
    assert!(d.tools().is_empty());
    assert!(d.warnings()[0].contains("\"mute\"") && d.warnings()[0].contains("300 ms"), "{:?}", d.warnings());
}

async fn wait_for(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

// ---------------------------------------------------------------------------
// Child processes and the reference server

fn template(dir: &std::path::Path, d: &Downstream, allow: &[&str], events: Option<EventSink>) -> ReplBuilder {
    let mut b = builder().roots([dir]).allow(allow.iter().copied()).tools(d.tools()).session_id("t");
    if let Some(e) = events {
        b = b.events(e);
    }
    b
}

/// The reference server's stdio launcher, or `None` (with a note) when the
/// node packages are not installed and `WREPL_REQUIRE_NPM` is not set.
pub(crate) fn everything_bin() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/node/node_modules/.bin/mcp-server-everything");
    if bin.exists() {
        return Some(bin);
    }
    if std::env::var("WREPL_REQUIRE_NPM").is_ok_and(|v| v == "1") {
        panic!("{} is missing; run `npm install` in tests/node", bin.display());
    }
    eprintln!("note: {} is missing (run `npm install` in tests/node); test skipped", bin.display());
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn command_servers_get_only_a_small_environment() {
    let Some(bin) = everything_bin() else { return };
    let config = DownstreamConfig::from_json(
        &json!({"mcpServers": {"everything": {"command": bin, "env": {"GIVEN_TO_SERVER": "yes"}}}}).to_string(),
    )
    .unwrap();
    let d = Downstream::connect(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = find(&d, "mcp__everything__get-env").call(json!({}), ctx(dir.path(), None).0).await.unwrap();
    let env: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(env["GIVEN_TO_SERVER"], "yes");
    assert!(env.get("PATH").is_some());
    // the test process has cargo's variables; the server must not see them
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(env.get("CARGO_MANIFEST_DIR").is_none(), "{env}");
}

fn config_for(command: &str, args: &[&str], name: &str) -> DownstreamConfig {
    DownstreamConfig::from_json(&json!({"mcpServers": {name: {"command": command, "args": args}}}).to_string()).unwrap()
}

fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // a zombie has exited; only its exit status is left to collect
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_server_through_the_pipeline() {
    let Some(bin) = everything_bin() else { return };
    let d = Downstream::connect(config_for(bin.to_str().unwrap(), &[], "everything")).await.unwrap();
    assert!(d.servers() == ["everything"], "{:?}", d.warnings());
    let names: Vec<String> = d.tools().iter().map(|t| t.name().to_string()).collect();
    for expected in
        ["mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__trigger-long-running-operation"]
    {
        assert!(names.iter().any(|n| n == expected), "{expected} not in {names:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let events: Arc<Mutex<Vec<ProgressEvent>>> = Arc::default();
    let sink = events.clone();
    let on_event: EventSink = Arc::new(move |e: &ProgressEvent| sink.lock().unwrap().push(e.clone()));
    let disp = template(
        dir.path(),
        &d,
        &["mcp__everything__echo", "mcp__everything__trigger-long-running-operation"],
        Some(on_event),
    );
    let mut r = disp.build().await.unwrap();
    assert_eq!(ok(&ev(&mut r, "await mcp__everything__echo({message: 'hi'})").await), json!("Echo: hi"));

    // not allowed: refused before it runs (deny by default; annotations claim read-only)
    events.lock().unwrap().clear();
    let res = ev(&mut r, "await mcp__everything__get_sum({a: 1, b: 2})").await;
    let (_, msg) = err(&res);
    assert!(msg.contains("mcp__everything__get-sum was not granted"), "{msg}");
    let phases: Vec<Phase> = events.lock().unwrap().iter().map(|e| e.phase).collect();
    assert!(!phases.contains(&Phase::Executing), "{phases:?}");

    // progress reports from the server become progress events
    events.lock().unwrap().clear();
    let res = ev(&mut r, "await mcp__everything__trigger_long_running_operation({duration: 0.3, steps: 3})").await;
    ok(&res);
    let progress = events.lock().unwrap().iter().filter(|e| e.phase == Phase::Progress).count();
    assert!(progress >= 3, "{:?}", events.lock().unwrap());

    let pids = d.child_pids();
    assert_eq!(pids.len(), 1);
    d.shutdown().await;
    wait_for(|| process_gone(pids[0].1)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_downstream_leaves_no_child_processes() {
    let Some(bin) = everything_bin() else { return };
    let d = Downstream::connect(config_for(bin.to_str().unwrap(), &[], "everything")).await.unwrap();
    let pids = d.child_pids();
    assert_eq!(pids.len(), 1, "{:?}", d.warnings());
    let (_, pid) = pids[0];
    assert!(!process_gone(pid));
    let echo = find(&d, "mcp__everything__echo");
    drop(d);
    wait_for(|| process_gone(pid)).await;
    // a tool that outlived its server fails clearly
    let dir = tempfile::tempdir().unwrap();
    let e = echo.call(json!({"message": "x"}), ctx(dir.path(), None).0).await.unwrap_err();
    assert!(matches!(&e, ToolError::Failed(m) if m.contains("shut down")), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn grandchildren_die_with_the_server() {
    // A wrapper shell that starts a long-lived grandchild and then never
    // speaks MCP: the startup timeout gives up, and the whole process group goes.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let mut config = config_for("sh", &["-c", &script], "wrapper");
    config.startup_timeout = Duration::from_millis(500);
    let d = Downstream::connect(config).await.unwrap();
    assert!(d.servers().is_empty());
    assert!(d.warnings()[0].contains("\"wrapper\""), "{:?}", d.warnings());
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    wait_for(|| process_gone(pid)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_does_not_take_the_others_down() {
    let Some(bin) = everything_bin() else { return };
    let config = DownstreamConfig::from_json(
        &json!({"mcpServers": {
            "everything": {"command": bin},
            "missing": {"command": "/nonexistent/mcp-server"},
            "exits": {"command": "sh", "args": ["-c", "echo 'no config here' >&2; exit 3"]}
        }})
        .to_string(),
    )
    .unwrap();
    let d = Downstream::connect(config).await.unwrap();
    assert_eq!(d.servers(), ["everything"]);
    let w = d.warnings().join("\n");
    assert!(w.contains("\"missing\"") && w.contains("cannot start"), "{w}");
    assert!(w.contains("\"exits\"") && w.contains("no config here"), "{w}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_server_over_streamable_http() {
    let Some(bin) = everything_bin() else { return };
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = tokio::process::Command::new(&bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut up = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the HTTP reference server did not start");
    let config = DownstreamConfig::from_json(
        &json!({"mcpServers": {
            "web": {"url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-Test": "1"}, "timeout_ms": 10000},
            "nobody": {"url": "http://127.0.0.1:1/mcp"}
        }})
        .to_string(),
    )
    .unwrap();
    let d = Downstream::connect(config).await.unwrap();
    assert_eq!(d.servers(), ["web"], "{:?}", d.warnings());
    assert!(d.warnings().iter().any(|w| w.contains("\"nobody\"")), "{:?}", d.warnings());
    let dir = tempfile::tempdir().unwrap();
    let echo = find(&d, "mcp__web__echo");
    assert_eq!(echo.native_timeout(&json!({})), Duration::from_secs(10));
    let out = echo.call(json!({"message": "over http"}), ctx(dir.path(), None).0).await.unwrap();
    assert_eq!(out.value, json!("Echo: over http"));
    d.shutdown().await;
    let _ = server.kill().await;
}
