//! Traces over OTLP/HTTP, received by a real receiver started here (an HTTP
//! server that keeps what it is sent): `http/json` and `http/protobuf`, the
//! evaluation span and its calls' children, the trace context a Bash command
//! sees, an MCP client's `_meta.traceparent` continued, and no socket at all
//! when no OTEL variable is set.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message;
use serde_json::{json, Value};

use super::mcp_server::{call, client, start_stdio_env};

/// What the receiver got: (path, content type or, for a path outside
/// /v1/ (OTLP's), the request's `traceparent` header, body).
type Received = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

fn receiver() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let got: Received = Arc::default();
    let keep = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
                    let (mut length, mut kind, mut traceparent) = (0usize, String::new(), String::new());
                    loop {
                        let mut h = String::new();
                        reader.read_line(&mut h).unwrap();
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((n, v)) = h.split_once(':') {
                            match n.to_ascii_lowercase().as_str() {
                                "content-length" => length = v.trim().parse().unwrap_or(0),
                                "content-type" => kind = v.trim().to_string(),
                                "traceparent" => traceparent = v.trim().to_string(),
                                _ => {}
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let reply: &[u8] = if kind.contains("json") { b"{}" } else { b"" };
                    let noted = if path.starts_with("/v1/") { kind.clone() } else { traceparent };
                    keep.lock().unwrap().push((path, noted, body));
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
                        reply.len()
                    );
                    let _ = stream.write_all(reply);
                }
            });
        }
    });
    (url, got)
}

/// One exported span: its name, ids (hex) and parent.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace: String,
    id: String,
    parent: String,
    attrs: Value,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The spans of every request the receiver got, and the service name.
fn spans(got: &Received) -> (Vec<Span>, Vec<String>) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    let mut out = Vec::new();
    let mut services = Vec::new();
    for (path, kind, body) in got.lock().unwrap().iter() {
        if path != "/v1/traces" {
            continue;
        }
        let req: ExportTraceServiceRequest = if kind.contains("json") {
            serde_json::from_slice(body)
                .unwrap_or_else(|e| panic!("OTLP/JSON body: {e}: {}", String::from_utf8_lossy(body)))
        } else {
            assert_eq!(kind, "application/x-protobuf");
            ExportTraceServiceRequest::decode(body.as_slice()).unwrap()
        };
        for rs in req.resource_spans {
            for a in rs.resource.iter().flat_map(|r| r.attributes.iter()) {
                if a.key == "service.name" {
                    services.push(format!("{:?}", a.value));
                }
            }
            for ss in rs.scope_spans {
                for s in ss.spans {
                    let attrs: serde_json::Map<String, Value> =
                        s.attributes.iter().map(|a| (a.key.clone(), json!(format!("{:?}", a.value)))).collect();
                    out.push(Span {
                        name: s.name,
                        trace: hex(&s.trace_id),
                        id: hex(&s.span_id),
                        parent: hex(&s.parent_span_id),
                        attrs: Value::Object(attrs),
                    });
                }
            }
        }
    }
    (out, services)
}

fn traced_eval(dir: &std::path::Path, url: &str, protocol: &str, code: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args([
            "eval",
            "--allow",
            "Bash",
            "--allow",
            "Write",
            "--allow",
            "WebFetch(domain:127.0.0.1)",
            "--allow-private-network=127.0.0.1",
            "--settings",
            "settings.json",
            "--json",
            "-e",
            code,
        ])
        .current_dir(dir)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env("OTEL_SERVICE_NAME", "wrepl-under-test")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn check_export(protocol: &str) {
    let (url, got) = receiver();
    let dir = tempfile::tempdir().unwrap();
    // A PreToolUse hook of Bash writes down the context it was given.
    let command = r#"printenv TRACEPARENT > hook-traceparent.txt; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'"#;
    // A PostToolUse hook of Write gives the model feedback (`decision: block`).
    let feedback = r#"echo '{"decision": "block", "reason": "noted"}'"#;
    let hook = json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}],
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": feedback}]}],
    }})
    .to_string();
    std::fs::write(dir.path().join("settings.json"), hook).unwrap();
    let code = format!("await put('a.txt', 'x'); await fetch('{url}/echo'); (await sh('printenv TRACEPARENT')).trim()");
    let o = traced_eval(dir.path(), &url, protocol, &code);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let traceparent = printed["result"].as_str().unwrap_or_default().to_string();
    let (spans, services) = spans(&got);
    assert!(services.iter().any(|s| s.contains("wrepl-under-test")), "{services:?}");
    let eval = spans.iter().find(|s| s.name == "wrepl.evaluation").unwrap_or_else(|| panic!("{spans:#?}"));
    let write = spans.iter().find(|s| s.name == "execute_tool Write").expect("the Write call's span");
    let bash = spans.iter().find(|s| s.name == "execute_tool Bash").expect("the Bash call's span");
    for child in [write, bash] {
        assert_eq!((&child.trace, &child.parent), (&eval.trace, &eval.id), "{child:?} is the evaluation's child");
        assert!(child.attrs["gen_ai.tool.name"].to_string().contains(child.name.trim_start_matches("execute_tool ")));
    }
    assert!(eval.parent.is_empty(), "a root span: {eval:?}");
    // The permission decision and the rule that made it.
    assert!(bash.attrs["wrepl.permission.decision"].to_string().contains("allow"), "{bash:?}");
    assert!(bash.attrs["wrepl.permission.rule"].to_string().contains("Bash"), "{bash:?}");
    assert!(bash.attrs["wrepl.hook.pre_tool_use"].to_string().contains("allow"), "the hook's decision: {bash:?}");
    assert!(write.attrs.get("wrepl.hook.pre_tool_use").is_none(), "no PreToolUse hook ran for Write: {write:?}");
    assert!(write.attrs["wrepl.hook.post_tool_use"].to_string().contains("block"), "{write:?}");
    assert!(bash.attrs.get("wrepl.hook.post_tool_use").is_none(), "no PostToolUse hook ran for Bash: {bash:?}");
    // The command saw its own call's span as TRACEPARENT; the server fetch()
    // reached got the WebFetch call's as its traceparent header.
    assert_eq!(traceparent, format!("00-{}-{}-01", eval.trace, bash.id));
    let hooked = std::fs::read_to_string(dir.path().join("hook-traceparent.txt")).unwrap();
    assert_eq!(hooked.trim(), traceparent, "the hook of the Bash call got the call's context");
    let fetch = spans.iter().find(|s| s.name == "execute_tool WebFetch").unwrap_or_else(|| {
        panic!("the fetch span: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    });
    let sent = got.lock().unwrap().iter().find(|(p, _, _)| p == "/echo").map(|(_, t, _)| t.clone());
    assert_eq!(sent, Some(format!("00-{}-{}-01", eval.trace, fetch.id)));
    // No input or output text in the spans.
    let all = format!("{spans:?}");
    assert!(!all.contains("printenv") && !all.contains("a.txt"), "{all}");
}

#[test]
fn spans_arrive_over_http_json() {
    check_export("http/json");
}

#[test]
fn spans_arrive_over_http_protobuf() {
    check_export("http/protobuf");
}

#[tokio::test]
async fn an_mcp_clients_traceparent_is_continued() {
    let (url, got) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let service = start_stdio_env(
        client(true, "Write"),
        dir.path(),
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
    )
    .await;
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let r = super::mcp_server::call_with_meta(
        &service,
        "repl",
        json!({"code": "1 + 1"}),
        json!({"traceparent": parent, "tracestate": "vendor=x"}),
    )
    .await;
    assert_eq!(super::mcp_server::structured(&r)["result"], json!(2));
    let _ = call(&service, "repl", json!({"code": "2"})).await;
    service.cancel().await.unwrap();
    // The server flushes at its end.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (spans, _) = spans(&got);
        if let Some(s) = spans.iter().find(|s| s.trace == "4bf92f3577b34da6a3ce929d0e0e4736") {
            // The server side of the client's tools/call (MCP conventions).
            assert_eq!(s.name, "tools/call repl");
            assert!(s.attrs["mcp.method.name"].to_string().contains("tools/call"), "{s:?}");
            assert_eq!(s.parent, "00f067aa0ba902b7", "the client's span is the parent");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no span of the client's trace arrived: {spans:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The network (TCP and UDP) sockets a process has open: its socket
/// inodes that the kernel's tables of inet sockets list (Unix sockets, such
/// as the confined-command spawner's, are not network).
fn inet_sockets(pid: u32) -> usize {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter_map(|l| l.to_string_lossy().strip_prefix("socket:[")?.strip_suffix(']').map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut listed = std::collections::BTreeSet::new();
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            if let Some(inode) = line.split_whitespace().nth(9) {
                listed.insert(inode.to_string());
            }
        }
    }
    inodes.iter().filter(|i| listed.contains(*i)).count()
}

/// The names of a process's threads.
fn threads(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|c| c.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn eval_while_watching(env: &[(&str, &str)]) -> (usize, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args([
            "eval",
            "--allow",
            "Write",
            "-e",
            "await put('b.txt', 'y'); await new Promise((r) => setTimeout(r, 1500)); 1",
        ])
        .current_dir(dir.path())
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let seen = (inet_sockets(child.id()), threads(child.id()));
    assert!(child.wait().unwrap().success());
    seen
}

#[test]
fn without_otel_variables_nothing_connects() {
    let (open, names) = eval_while_watching(&[]);
    assert_eq!(open, 0, "wrepl eval with no OTEL variable has a network socket open");
    assert!(!names.iter().any(|n| n.starts_with("OpenTelemetry")), "no exporter thread: {names:?}");
    // The control: with the variable set, the exporter is there.
    let (url, _got) = receiver();
    let (_, names) = eval_while_watching(&[("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str())]);
    assert!(names.iter().any(|n| n.starts_with("OpenTelemetry")), "the exporter thread runs: {names:?}");
}

#[tokio::test]
async fn a_traceparent_header_on_http_is_continued() {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::ServiceExt;
    let (url, got) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let server = super::mcp_server::spawn_http(dir.path(), "127.0.0.1:0", &[], &env).await.expect("wrepl serve --http");
    let token = server.token.clone().expect("a token");
    let mut headers = std::collections::HashMap::new();
    headers.insert(
        axum::http::HeaderName::from_static("traceparent"),
        axum::http::HeaderValue::from_static("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    );
    let cfg =
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(token).custom_headers(headers);
    let service =
        client(true, "x").serve(rmcp::transport::StreamableHttpClientTransport::from_config(cfg)).await.unwrap();
    let r = call(&service, "repl", json!({"code": "6 * 7"})).await;
    assert_eq!(super::mcp_server::structured(&r)["result"], json!(42));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (spans, _) = spans(&got);
        if let Some(s) = spans.iter().find(|s| s.trace == "0af7651916cd43dd8448eb211c80319c") {
            assert_eq!((s.name.as_str(), s.parent.as_str()), ("tools/call repl", "b7ad6b7169203331"));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no span of the header's trace arrived: {spans:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    service.cancel().await.unwrap();
}

/// Every metric data point the receiver got: (metric name, attributes as
/// `key=value` text, value: a sum's or gauge's number, a histogram's count).
fn metric_points(got: &Received) -> Vec<(String, Vec<String>, f64)> {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point::Value as Number};
    let text = |attrs: &[opentelemetry_proto::tonic::common::v1::KeyValue]| -> Vec<String> {
        attrs
            .iter()
            .map(|a| match a.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => format!("{}={s}", a.key),
                other => format!("{}={other:?}", a.key),
            })
            .collect()
    };
    let number = |v: &Option<Number>| match v {
        Some(Number::AsInt(i)) => *i as f64,
        Some(Number::AsDouble(d)) => *d,
        None => f64::NAN,
    };
    let mut out = Vec::new();
    for (path, kind, body) in got.lock().unwrap().iter() {
        if path != "/v1/metrics" {
            continue;
        }
        assert_eq!(kind, "application/x-protobuf");
        let req = ExportMetricsServiceRequest::decode(body.as_slice()).expect("an OTLP metrics request");
        for m in req.resource_metrics.into_iter().flat_map(|r| r.scope_metrics).flat_map(|s| s.metrics) {
            match m.data {
                Some(Data::Sum(s)) => {
                    out.extend(s.data_points.iter().map(|p| (m.name.clone(), text(&p.attributes), number(&p.value))))
                }
                Some(Data::Gauge(g)) => {
                    out.extend(g.data_points.iter().map(|p| (m.name.clone(), text(&p.attributes), number(&p.value))))
                }
                Some(Data::Histogram(h)) => {
                    out.extend(h.data_points.iter().map(|p| (m.name.clone(), text(&p.attributes), p.count as f64)))
                }
                _ => {}
            }
        }
    }
    out
}

#[tokio::test]
async fn metrics_arrive_over_otlp() {
    let (url, got) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let service = start_stdio_env(
        client(true, "x"),
        dir.path(),
        &["--allow", "Write", "--store", store.to_str().unwrap()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
            // Spans off: only metrics go out.
            ("OTEL_TRACES_EXPORTER", "none"),
        ],
    )
    .await;
    let r = call(&service, "repl", json!({"code": "await put('a.txt', 'x'); await put('b.txt', 'y'); 2"})).await;
    assert_eq!(super::mcp_server::structured(&r)["result"], json!(2));
    let r = call(&service, "repl", json!({"code": "throw new Error('no')"})).await;
    assert_eq!(r.is_error, Some(true));
    let has = |points: &[(String, Vec<String>, f64)], name: &str, attrs: &[&str], at_least: f64| {
        points.iter().any(|(n, a, v)| n == name && attrs.iter().all(|w| a.iter().any(|x| x == w)) && *v >= at_least)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let points = metric_points(&got);
        let live = has(&points, "wrepl.contexts", &["state=live"], 1.0);
        if has(&points, "wrepl.inner_calls", &["gen_ai.tool.name=Write", "outcome=ok"], 2.0)
            && has(&points, "wrepl.evaluations", &["outcome=ok"], 1.0)
            && has(&points, "wrepl.evaluations", &["outcome=error"], 1.0)
            && has(
                &points,
                "mcp.server.operation.duration",
                &["mcp.method.name=tools/call", "gen_ai.tool.name=repl"],
                1.0,
            )
            && has(&points, "mcp.server.operation.duration", &["error.type=error"], 1.0)
            && has(&points, "wrepl.inner_call.duration", &["gen_ai.tool.name=Write"], 2.0)
            && has(&points, "wrepl.store.commit.duration", &[], 2.0)
            && live
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the metrics did not all arrive: {points:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    service.cancel().await.unwrap();
    // Nothing but metrics was sent.
    assert!(
        got.lock().unwrap().iter().all(|(p, _, _)| p == "/v1/metrics"),
        "spans were sent with OTEL_TRACES_EXPORTER=none"
    );
}
