//! `wrepl serve` driven by a real MCP client (rmcp's), over stdio and
//! streamable HTTP: tools, persistence, progress, sampling, elicitation,
//! registered tools with list_changed, cancellation, async mode.

#![allow(deprecated)] // sampling is deprecated by the newest protocol revision, still part of 2025-11-25

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest, CreateMessageRequestParams,
    CreateMessageResult, CustomNotification, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam, ProtocolVersion, Request, SamplingMessage,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
use serde_json::{json, Value};

/// What the test client saw.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) progress: Mutex<Vec<ProgressNotificationParam>>,
    pub(crate) list_changed: AtomicUsize,
    pub(crate) samplings: Mutex<Vec<CreateMessageRequestParams>>,
    pub(crate) elicitations: Mutex<Vec<String>>,
    /// The whole `elicitation/create` params (with `_meta`), as JSON.
    pub(crate) elicitation_requests: Mutex<Vec<Value>>,
    pub(crate) custom: Mutex<Vec<CustomNotification>>,
}

/// A client that can sample (answers from a script) and approves through
/// elicitation whatever mentions `approve_word`.
#[derive(Clone)]
pub(crate) struct TestClient {
    pub(crate) seen: Arc<Seen>,
    capable: bool,
    approve_word: &'static str,
    version: ProtocolVersion,
}

impl ClientHandler for TestClient {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.seen.samplings.lock().unwrap().push(params.clone());
        let v = serde_json::to_value(&params).unwrap();
        let prompt = v["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_string();
        let system = v["systemPrompt"].as_str().unwrap_or_default();
        let reply = if system.contains("JSON Schema") {
            // Deliberately fenced: the server must strip it.
            format!("```json\n{{\"answer\": {}}}\n```", prompt.len())
        } else {
            format!("echo: {prompt}")
        };
        let result = CreateMessageResult::new(SamplingMessage::assistant_text(reply), "test-model".into());
        // A prompt asking for a long story gets a reply cut at the token limit.
        Ok(if prompt.contains("long story") { result.with_stop_reason("maxTokens") } else { result })
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let mut whole = serde_json::to_value(&request).unwrap();
        // rmcp moves the request's `_meta` into the context
        whole["_meta"] = serde_json::to_value(&context.meta).unwrap();
        let message = whole["message"].as_str().unwrap_or_default().to_string();
        self.seen.elicitations.lock().unwrap().push(message.clone());
        self.seen.elicitation_requests.lock().unwrap().push(whole);
        Ok(if message.contains(self.approve_word) {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.seen.progress.lock().unwrap().push(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.seen.list_changed.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_custom_notification(&self, n: CustomNotification, _context: NotificationContext<RoleClient>) {
        self.seen.custom.lock().unwrap().push(n);
    }

    fn get_info(&self) -> ClientConfig {
        let caps = if self.capable {
            ClientCapabilities::builder().enable_sampling().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("wrepl-test-client", "0.0.0"))
            .with_protocol_version(self.version.clone())
    }
}

/// A client speaking 2025-11-25 (initialize, sessions, live server requests).
pub(crate) fn client(capable: bool, approve_word: &'static str) -> TestClient {
    TestClient { seen: Arc::new(Seen::default()), capable, approve_word, version: ProtocolVersion::V_2025_11_25 }
}

/// A client speaking 2026-07-28 (stateless; questions come as
/// `input_required` rounds, which rmcp's `call_tool` answers through the
/// same handler): connect it with [`modern`].
pub(crate) fn modern_client(capable: bool, approve_word: &'static str) -> TestClient {
    TestClient { seen: Arc::new(Seen::default()), capable, approve_word, version: ProtocolVersion::V_2026_07_28 }
}

/// Connect `c` over `transport` with `server/discover` (2026-07-28).
pub(crate) async fn modern<T, E, A>(c: TestClient, transport: T) -> RunningService<RoleClient, TestClient>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    c.serve_with_lifecycle(transport, mode).await.expect("server/discover with wrepl serve")
}

pub(crate) async fn start_stdio(c: TestClient, root: &Path, extra: &[&str]) -> RunningService<RoleClient, TestClient> {
    start_stdio_env(c, root, extra, &[]).await
}

/// [`start_stdio`] with more variables in the server's environment.
pub(crate) async fn start_stdio_env(
    c: TestClient,
    root: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> RunningService<RoleClient, TestClient> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrepl"));
    cmd.arg("serve").arg("--root").arg(root).args(extra).kill_on_drop(true);
    cmd.envs(env.iter().copied());
    let transport = TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn().unwrap().0;
    c.serve(transport).await.expect("MCP handshake with wrepl serve")
}

pub(crate) async fn call(service: &RunningService<RoleClient, TestClient>, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    tokio::time::timeout(
        Duration::from_secs(60),
        service.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)),
    )
    .await
    .expect("tool call timed out")
    .expect("tool call failed at the protocol level")
}

/// [`call`] with `meta` as the request's `_meta`.
pub(crate) async fn call_with_meta(
    service: &RunningService<RoleClient, TestClient>,
    tool: &str,
    args: Value,
    meta: Value,
) -> CallToolResult {
    let (Value::Object(args), Value::Object(meta)) = (args, meta) else { panic!("arguments and meta are objects") };
    let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(meta)));
    tokio::time::timeout(Duration::from_secs(60), service.call_tool(params))
        .await
        .expect("tool call timed out")
        .expect("tool call failed at the protocol level")
}

pub(crate) fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

/// The result's text, without the `[context: HANDLE]` line it ends with.
pub(crate) fn text(r: &CallToolResult) -> String {
    let all = serde_json::to_value(&r.content)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n");
    match all.rfind("[context: ") {
        Some(i) if all[i..].ends_with(']') && !all[i..].contains('\n') => all[..i].trim_end_matches('\n').to_string(),
        _ => all,
    }
}

async fn tool_names(service: &RunningService<RoleClient, TestClient>) -> Vec<String> {
    service.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn stdio_session_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let c = client(true, "Write");
    let seen = c.seen.clone();
    let service = start_stdio(c, dir.path(), &[]).await;

    // tools/list
    assert_eq!(tool_names(&service).await, vec!["repl".to_string()]);

    // two calls, one context
    let r = call(&service, "repl", json!({"code": "let x = 41; const y = 1", "description": "set"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&service, "repl", json!({"code": "x + y"})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    assert_eq!(text(&r), "42");
    // A 2025-11-25 connection continues its own context: the handle is in
    // structuredContent, and no `[context: …]` line is added to the text.
    assert!(structured(&r)["context"].is_string(), "{r:?}");
    assert!(!format!("{:?}", r.content).contains("[context:"), "{r:?}");

    // progress: an inner call reports start/executing/complete on the outer call's token
    std::fs::write(dir.path().join("a.md"), "hello").unwrap();
    let before = seen.progress.lock().unwrap().len();
    let r = call(&service, "repl", json!({"code": "(await gl('*.md')).length"})).await;
    assert_eq!(structured(&r)["result"], json!(1), "{r:?}");
    let calls = structured(&r)["calls"].clone();
    assert_eq!(calls[0]["type"], "tool_use");
    assert_eq!(calls[0]["name"], "Glob");
    assert_eq!(calls[1]["type"], "tool_result");
    assert_eq!(calls[1]["tool_use_id"], calls[0]["id"]);
    // The cost record, in structuredContent and in _meta.
    let cost = &structured(&r)["cost"];
    assert_eq!(cost["calls"], json!({"Glob": 1}), "{cost}");
    assert!(cost["bytes_in"].as_u64() > Some(0) && cost["bytes_out"].as_u64() > Some(0), "{cost}");
    assert!(cost["peak_memory_bytes"].as_u64() > Some(1 << 20), "{cost}");
    let meta = serde_json::to_value(r.meta.as_ref().expect("_meta")).unwrap();
    assert_eq!(&meta["wrepl/cost"], cost);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let progress: Vec<String> =
        seen.progress.lock().unwrap()[before..].iter().filter_map(|p| p.message.clone()).collect();
    assert!(progress.iter().any(|m| m.starts_with("Glob ") && m.ends_with(" executing")), "{progress:?}");
    assert!(progress.iter().any(|m| m.starts_with("Glob ") && m.contains(" complete")), "{progress:?}");

    // sampling round trip, plain and with a schema (validated, fences stripped)
    let r = call(&service, "repl", json!({"code": "await haiku('hi there')"})).await;
    assert_eq!(structured(&r)["result"], json!("echo: hi there"), "{r:?}");
    let r = call(
        &service,
        "repl",
        json!({"code": "await sonnet('abcd', {type: 'object', properties: {answer: {type: 'integer'}}, required: ['answer']})"}),
    )
    .await;
    assert_eq!(structured(&r)["result"], json!({"answer": 4}), "{r:?}");
    let r = call(&service, "repl", json!({"code": "await haiku('x', {type: 'object', required: ['nope']})"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("does not match the schema"), "{}", text(&r));
    // A reply the client cut at the token limit is an error naming it, not a part.
    let r = call(&service, "repl", json!({"code": "await haiku('tell a long story').catch(e => e.message)"})).await;
    let said = structured(&r)["result"].as_str().unwrap_or_default().to_string();
    assert!(said.contains("token limit (4096 tokens)") && said.contains("max_tokens"), "{r:?}");
    {
        let s = seen.samplings.lock().unwrap();
        assert_eq!(s.len(), 4);
        let v = serde_json::to_value(&s[0]).unwrap();
        assert_eq!(v["modelPreferences"]["hints"][0]["name"], "haiku");
    }

    // ask → elicitation: Write is approved (the file exists), Edit is declined (nothing changes)
    let r = call(&service, "repl", json!({"code": "await put('out.txt', 'written'); 'ok'"})).await;
    assert_eq!(structured(&r)["result"], json!("ok"), "{r:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "written");
    let r = call(
        &service,
        "repl",
        json!({"code": "await Edit({file_path: 'out.txt', old_string: 'written', new_string: 'edited'})"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("declined"), "{}", text(&r));
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "written");
    assert!(seen.elicitations.lock().unwrap().iter().any(|m| m.contains("Edit")));

    // a registered tool appears (list_changed) and is callable; it always asks
    let changed = seen.list_changed.load(Ordering::SeqCst);
    let r = call(
        &service,
        "repl",
        json!({"code": "registerTool('double', 'Write twice the number', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, ({n}) => n * 2)"}),
    )
    .await;
    assert_eq!(structured(&r)["new_tools"], json!(["eval_registered__double"]), "{r:?}");
    let def = &structured(&r)["new_tool_definitions"][0];
    assert_eq!(def["name"], "eval_registered__double", "{r:?}");
    assert_eq!(def["inputSchema"]["required"], json!(["n"]), "{r:?}");
    for _ in 0..50 {
        if seen.list_changed.load(Ordering::SeqCst) > changed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.list_changed.load(Ordering::SeqCst) > changed, "no notifications/tools/list_changed");
    assert!(tool_names(&service).await.contains(&"eval_registered__double".to_string()));
    // approved because its description (shown in the question) says "Write"... the question names the tool
    let r = call(&service, "eval_registered__double", json!({"n": 21})).await;
    let asked = seen.elicitations.lock().unwrap().last().cloned().unwrap_or_default();
    assert!(asked.contains("eval_registered__double"), "{asked}");
    // the client declines (the question does not contain "Write"): refused, clearly
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("Execute registered tool"), "{}", text(&r));
    // bad input is refused before asking
    let n = seen.elicitations.lock().unwrap().len();
    let r = call(&service, "eval_registered__double", json!({"n": "x"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(seen.elicitations.lock().unwrap().len(), n);

    // media: an image read by an inner call comes back as an MCP image block after the text;
    // the outer result also carries the code and the new tools' definitions
    std::fs::write(dir.path().join("dot.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRrest").unwrap();
    let r = call(&service, "repl", json!({"code": "await Read({file_path: 'dot.png'}); 'read'"})).await;
    let blocks = serde_json::to_value(&r.content).unwrap();
    assert_eq!(blocks[0]["type"], "text", "{blocks}");
    assert_eq!(blocks[1]["type"], "image", "{blocks}");
    assert_eq!(blocks[1]["mimeType"], "image/png", "{blocks}");
    assert_eq!(structured(&r)["code"], "await Read({file_path: 'dot.png'}); 'read'");

    // input errors are clear tool errors
    let r = call(&service, "repl", json!({"code": "1", "timeout": 0})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("timeout"), "{}", text(&r));
    let r = call(&service, "repl", json!({"source": "1"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("code"), "{}", text(&r));
    let e = service.call_tool(CallToolRequestParams::new("nope")).await;
    assert!(e.is_err(), "unknown tools are protocol errors");

    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_long_approval_question_says_how_long_and_carries_the_whole_input() {
    let dir = tempfile::tempdir().unwrap();
    let c = client(true, "Write");
    let seen = c.seen.clone();
    let service = start_stdio(c, dir.path(), &[]).await;
    // a short input is shown whole
    let r = call(&service, "repl", json!({"code": "await put('short.txt', 'tiny'); 'ok'"})).await;
    assert_eq!(structured(&r)["result"], json!("ok"), "{r:?}");
    let asked = seen.elicitations.lock().unwrap().last().cloned().unwrap();
    assert!(asked.contains(r#""content":"tiny""#) && asked.contains("short.txt"), "{asked}");
    // a long one: the question says how long it is, and the request carries all of it
    let code = "await put('long.txt', 'ab'.repeat(10000) + 'THE-END'); 'ok'";
    let r = call(&service, "repl", json!({"code": code})).await;
    assert_eq!(structured(&r)["result"], json!("ok"), "{r:?}");
    let written = std::fs::read_to_string(dir.path().join("long.txt")).unwrap();
    assert_eq!(written.len(), 20007);
    let request = seen.elicitation_requests.lock().unwrap().last().cloned().unwrap();
    let message = request["message"].as_str().unwrap();
    let input = request["_meta"][wrepl::mcp::server::APPROVAL_INPUT_META].as_str().expect("the whole input in _meta");
    let input: Value = serde_json::from_str(input).unwrap();
    assert_eq!(input["content"], json!(written), "the approved text is exactly what was written");
    let total = request["_meta"]["wrepl/inputChars"].as_u64().unwrap();
    assert!(total > 20007, "{total}");
    assert!(message.contains(&format!("Input ({total} characters")), "{}", &message[..300]);
    assert!(message.contains("more characters]") && !message.contains("THE-END"), "the cut is announced");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_result_is_bounded_as_a_whole_and_every_cut_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    let service = start_stdio(client(true, "x"), dir.path(), &[]).await;
    let code = "console.log('x'.repeat(300000)); console.error('e'.repeat(250000)); \
                await Promise.all(Array.from({length: 5000}, () => cat('a.txt'))); 'done'";
    let r = call(&service, "repl", json!({ "code": code })).await;
    let st = structured(&r);
    assert_eq!(st["result"], json!("done"), "{}", &st.to_string()[..300]);
    assert_eq!(st["stdout_truncated"], json!({"shown": 100000, "total": 300001}));
    assert!(st["stdout"].as_str().unwrap().chars().count() < 100_100);
    assert_eq!(st["stderr_truncated"]["total"], json!(250001));
    let shown = st["calls"].as_array().unwrap().len() / 2;
    let omitted = &st["calls_omitted"];
    assert_eq!(omitted["count"].as_u64().unwrap() as usize + shown, 5000, "{omitted}");
    assert_eq!(omitted["by_tool"]["Read"]["ok"], omitted["count"], "{omitted}");
    assert!(shown > 0, "the first calls are listed");
    let bytes = serde_json::to_string(&st).unwrap().len();
    assert!(bytes < 1 << 20, "the structured result is bounded: {bytes} bytes");
    // One budget for the whole response: every part at once at its largest
    // (text, result, stdout, stderr, a thrown error's message and stack,
    // call records) stays within it, and every cut says so.
    let code = "console.log('o'.repeat(400000)); console.error('e'.repeat(400000));                 await Promise.all(Array.from({length: 3000}, () => cat('a.txt')));                 const e = new Error('m'.repeat(400000)); throw e";
    let r = call(&service, "repl", json!({ "code": code })).await;
    let whole = serde_json::to_string(&r).unwrap().len();
    let budget = 5 * wrepl::text::DEFAULT_TEXT_CAP;
    assert!(whole < budget + (16 << 10), "the whole response is {whole} bytes, the budget {budget}");
    let st = structured(&r);
    assert_eq!(st["stdout_truncated"]["total"], json!(400001), "{}", st["stdout_truncated"]);
    assert!(st["error"]["message"].as_str().unwrap().contains("truncated: showing"), "the error's cut is marked");
    let listed = st["calls"].as_array().unwrap().len() / 2;
    assert_eq!(st["calls_omitted"]["count"].as_u64().unwrap() as usize + listed, 3000, "{}", st["calls_omitted"]);
    // A value too big to carry as JSON comes back as its marked text, never null.
    let r = call(&service, "repl", json!({"code": "'y'.repeat(50000000)"})).await;
    let st = structured(&r);
    if st["error"].is_null() {
        let result = st["result"].as_str().expect("the result's text, not null");
        assert!(result.starts_with("yyyy") && result.contains("truncated"), "{}", &result[result.len() - 80..]);
        assert_eq!(st["result_truncated"]["total"], json!(50_000_000), "the true total: {}", st["result_truncated"]);
        assert!(text(&r).contains("of 50000000 characters"), "{}", &text(&r)[100_000..]);
    } else {
        assert!(text(&r).contains("out of memory"), "a failure says what ran out: {}", text(&r));
    }
}

#[tokio::test]
async fn registered_tool_approved_through_elicitation_runs() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_stdio(client(true, "registered"), dir.path(), &[]).await;
    call(
        &service,
        "repl",
        json!({"code": "let n = 0; registerTool('bump', 'bump a counter', {type: 'object'}, () => ++n)"}),
    )
    .await;
    let r = call(&service, "eval_registered__bump", json!({})).await;
    assert_eq!(structured(&r)["result"], json!(1), "{r:?}");
    let r = call(&service, "repl", json!({"code": "n"})).await;
    assert_eq!(structured(&r)["result"], json!(1), "the handler ran in the same context: {r:?}");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn cancellation_stops_the_eval_and_its_inner_calls() {
    let dir = tempfile::tempdir().unwrap();
    let c = client(true, "never");
    let seen = c.seen.clone();
    let service = start_stdio(c, dir.path(), &["--allow", "Bash"]).await;
    let marker = dir.path().join("after-sleep");
    let code = format!("await sh('sleep 20.4321 && touch {}'); 'finished'", marker.display());
    let Value::Object(args) = json!({"code": code}) else { unreachable!() };
    let handle = service
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("repl").with_arguments(args))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // wait until the shell is running
    let mut running = false;
    for _ in 0..200 {
        if seen
            .progress
            .lock()
            .unwrap()
            .iter()
            .any(|p| p.message.as_deref().is_some_and(|m| m.contains("Bash") && m.ends_with("executing")))
        {
            running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(running, "the inner Bash call never started");
    for _ in 0..200 {
        if sleeper_alive("20.4321") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(sleeper_alive("20.4321"), "the shell command never started");
    let started = std::time::Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    // the context is free again quickly: the next eval does not wait 20 s
    let r = call(&service, "repl", json!({"code": "'after'"})).await;
    assert_eq!(structured(&r)["result"], json!("after"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "cancellation took {:?}", started.elapsed());
    // the shell's process group was killed
    let mut gone = false;
    for _ in 0..100 {
        if !sleeper_alive("20.4321") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the cancelled shell command is still running");
    assert!(!marker.exists());
    service.cancel().await.unwrap();
}

/// True when a process whose command line contains `needle` runs.
fn sleeper_alive(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        cmdline.starts_with("sleep ") && cmdline.contains(needle)
    })
}

#[tokio::test]
async fn without_client_capabilities_sampling_and_ask_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_stdio(client(false, "Write"), dir.path(), &[]).await;
    let r = call(&service, "repl", json!({"code": "await haiku('hi')"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("sampling"), "{}", text(&r));
    let r = call(&service, "repl", json!({"code": "await put('x.txt', 'no')"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(!dir.path().join("x.txt").exists());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn disabled_repl_lists_no_tool() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_stdio(client(true, "x"), dir.path(), &["--no-repl"]).await;
    assert!(tool_names(&service).await.is_empty());
    assert!(service.call_tool(CallToolRequestParams::new("repl")).await.is_err());
    service.cancel().await.unwrap();
    // CLAUDE_CODE_REPL=false does the same; true leaves the tool listed.
    let service = start_stdio_env(client(true, "x"), dir.path(), &[], &[("CLAUDE_CODE_REPL", "false")]).await;
    assert!(tool_names(&service).await.is_empty());
    service.cancel().await.unwrap();
    let service = start_stdio_env(client(true, "x"), dir.path(), &[], &[("CLAUDE_CODE_REPL", "1")]).await;
    assert_eq!(tool_names(&service).await, vec!["repl".to_string()]);
    service.cancel().await.unwrap();
    // A value that is neither is refused at start, saying what is understood.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args(["serve", "--root"])
        .arg(dir.path())
        .env("CLAUDE_CODE_REPL", "maybe")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("give true or false"), "{out:?}");
}

#[tokio::test]
async fn async_mode_queues_serially_and_refuses_when_full() {
    let dir = tempfile::tempdir().unwrap();
    let c = client(true, "x");
    let seen = c.seen.clone();
    let service = start_stdio(c, dir.path(), &["--async"]).await;
    assert_eq!(tool_names(&service).await, vec!["repl".to_string(), "repl_result".to_string()]);
    // a slow first eval (timers: script time does not run while waiting)
    let r = call(
        &service,
        "repl",
        json!({"code": "await new Promise(r => setTimeout(r, 1500)); globalThis.seq = ['slow']; 1"}),
    )
    .await;
    let first = structured(&r)["eval_id"].as_str().unwrap().to_string();
    let mut ids = vec![first.clone()];
    for i in 0..7 {
        let r = call(&service, "repl", json!({"code": format!("seq.push({i}); {i}")})).await;
        assert_eq!(structured(&r)["status"], "queued", "{r:?}");
        ids.push(structured(&r)["eval_id"].as_str().unwrap().to_string());
    }
    // the ninth is refused clearly; the queued ones are kept
    let r = call(&service, "repl", json!({"code": "0"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("queue full"), "{}", text(&r));
    // results come in order (serial), pollable
    let r = call(&service, "repl_result", json!({"eval_id": ids[7], "wait_ms": 30000})).await;
    assert_eq!(structured(&r)["result"], json!(6), "{r:?}");
    let r = call(&service, "repl_result", json!({"eval_id": first, "wait_ms": 1000})).await;
    assert_eq!(structured(&r)["result"], json!(1), "{r:?}");
    let r = call(&service, "repl", json!({"code": "seq"})).await;
    let last = structured(&r)["eval_id"].as_str().unwrap().to_string();
    let r = call(&service, "repl_result", json!({"eval_id": last, "wait_ms": 30000})).await;
    assert_eq!(structured(&r)["result"], json!(["slow", 0, 1, 2, 3, 4, 5, 6]), "{r:?}");
    let r = call(&service, "repl_result", json!({"eval_id": "eval-999"})).await;
    assert_eq!(r.is_error, Some(true));
    // completion notifications were sent
    tokio::time::sleep(Duration::from_millis(200)).await;
    let done = seen.custom.lock().unwrap().iter().filter(|n| n.method == "notifications/wrepl/repl-eval").count();
    assert!(done >= 9, "{done} completion notifications");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn async_mode_settle_hook_can_withhold_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let hook = "grep -q classified && { echo 'the result mentions classified data' >&2; exit 2; } || exit 0";
    let cfg =
        json!({"hooks": {"PostToolUse": [{"matcher": "^repl$", "hooks": [{"type": "command", "command": hook}]}]}});
    std::fs::write(&settings, cfg.to_string()).unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let service = start_stdio(client(true, "x"), &root, &["--async", "--settings", settings.to_str().unwrap()]).await;
    let r = call(&service, "repl", json!({"code": "'public'"})).await;
    let ok_id = structured(&r)["eval_id"].as_str().unwrap().to_string();
    let r = call(&service, "repl", json!({"code": "'classified'"})).await;
    let blocked_id = structured(&r)["eval_id"].as_str().unwrap().to_string();
    let r = call(&service, "repl_result", json!({"eval_id": ok_id, "wait_ms": 30000})).await;
    assert_eq!(structured(&r)["result"], json!("public"), "{r:?}");
    let r = call(&service, "repl_result", json!({"eval_id": blocked_id, "wait_ms": 30000})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text(&r);
    assert!(t.contains("withheld") && t.contains("classified data"), "{t}");
    assert!(r.structured_content.is_none(), "the withheld result must not leak: {r:?}");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn stdio_session_resumes_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let store = store.to_str().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let args = ["--allow", "Bash", "--session", "s1", "--store", store];
    let service = start_stdio(client(true, "x"), &root, &args).await;
    let r =
        call(&service, "repl", json!({"code": "var n = Number(await sh('echo 5 >> log.txt; wc -l < log.txt'))"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&service, "repl", json!({"code": "var said = await haiku('remember me')"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&service, "repl", json!({"code": "registerTool('kept', 'k', {type: 'object'}, () => 1)"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    service.cancel().await.unwrap();
    // a new process resumes the session: the variables are back, the shell and the model were not asked again
    let c = client(true, "x");
    let seen = c.seen.clone();
    let service = start_stdio(c, &root, &args).await;
    // the registered tool is listed at once, before any call
    assert!(tool_names(&service).await.contains(&"eval_registered__kept".to_string()));
    let r = call(&service, "repl", json!({"code": "[n, said]"})).await;
    assert_eq!(structured(&r)["result"], json!([1, "echo: remember me"]), "{r:?}");
    assert!(seen.samplings.lock().unwrap().is_empty(), "replay asked the model again");
    // Rebuilt by replay (each block `ok`, and the text says so), or from the
    // snapshot the first process took when its stdin closed (nothing replayed).
    let replayed = structured(&r)["replay"]["blocks"].as_array().cloned().unwrap_or_default();
    assert!(replayed.iter().all(|b| b["verdict"] == "ok"), "{r:?}");
    assert_eq!(text(&r).contains("session restored"), !replayed.is_empty(), "{}", text(&r));
    assert_eq!(std::fs::read_to_string(root.join("log.txt")).unwrap(), "5\n");
    service.cancel().await.unwrap();
}

/// A running `wrepl serve --http` process.
pub(crate) struct HttpServer {
    pub(crate) child: tokio::process::Child,
    /// `http://ADDR/mcp`.
    pub(crate) url: String,
    /// `ADDR` (host:port).
    pub(crate) addr: String,
    /// The token it printed at start (a generated one), if any.
    pub(crate) token: Option<String>,
    /// Everything it wrote to stderr so far (kept up to date).
    pub(crate) stderr: Arc<Mutex<Vec<String>>>,
}

/// A `wrepl serve --http` process that exited before listening.
#[derive(Debug)]
pub(crate) struct NotServing {
    pub(crate) status: std::process::ExitStatus,
    pub(crate) stderr: Vec<String>,
}

/// Start `wrepl serve --http LISTEN --root ROOT ARGS` with `env` added (and
/// no inherited `WREPL_TOKEN`); returns once it listens, or how it ended.
pub(crate) async fn spawn_http(
    root: &Path,
    listen: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<HttpServer, NotServing> {
    // reqwest is built without a default TLS provider; plain http still needs one installed.
    // rustls 0.23.48 deprecates ring's provider (no post-quantum key exchange); wrepl keeps it.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let _ = provider.install_default();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrepl"));
    cmd.args(["serve", "--http", listen, "--root"]).arg(root).args(extra).env_remove("WREPL_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stderr(std::process::Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.lock().unwrap().push(line.clone());
            if let Some(u) = line.strip_prefix("wrepl: serving MCP at ") {
                return Some(u.to_string());
            }
        }
        None
    })
    .await
    .expect("wrepl serve --http neither listened nor exited within 60 s");
    let Some(url) = found else {
        let status = child.wait().await.unwrap();
        return Err(NotServing { status, stderr: seen.lock().unwrap().clone() });
    };
    // Keep draining stderr so the server never blocks on (or fails writing to) it.
    let sink = seen.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push(line);
        }
    });
    let token = seen.lock().unwrap().iter().find_map(|l| l.strip_prefix("wrepl: access token: ").map(str::to_string));
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    Ok(HttpServer { child, url, addr, token, stderr: seen })
}

/// Start `wrepl serve --http 127.0.0.1:0 ARGS --no-auth` (loopback, no
/// token: for tests about other things); returns the child and its URL.
pub(crate) async fn start_http(root: &Path, extra: &[&str]) -> (tokio::process::Child, String) {
    let mut args = vec!["--no-auth"];
    args.extend_from_slice(extra);
    let s = spawn_http(root, "127.0.0.1:0", &args, &[]).await.expect("wrepl serve --http --no-auth");
    (s.child, s.url)
}

/// Start `wrepl serve --http 127.0.0.1:0 ARGS` with a generated token.
pub(crate) async fn start_http_with_token(root: &Path, extra: &[&str]) -> HttpServer {
    let s = spawn_http(root, "127.0.0.1:0", extra, &[]).await.expect("wrepl serve --http");
    assert!(s.token.is_some(), "no token printed: {:?}", s.stderr.lock().unwrap());
    s
}

/// An rmcp streamable HTTP transport to `url` sending `token` as bearer.
pub(crate) fn http_transport(url: &str, token: &str) -> impl rmcp::transport::Transport<RoleClient> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    rmcp::transport::StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token.to_string()),
    )
}

#[tokio::test]
async fn http_sessions_are_exclusive_and_resume_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let mut server = start_http_with_token(dir.path(), &["--store", store.to_str().unwrap()]).await;
    let (url, token) = (server.url.clone(), server.token.clone().unwrap());
    let named = format!("{url}?session=proj");
    let a = client(true, "x").serve(http_transport(&named, &token)).await.unwrap();
    call(&a, "repl", json!({"code": "var kept = 'from a'"})).await;
    // a second live connection may not write the same session
    let b = client(true, "x").serve(http_transport(&named, &token)).await.unwrap();
    let r = call(&b, "repl", json!({"code": "1"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("in use"), "{}", text(&r));
    b.cancel().await.unwrap();
    let bad = client(true, "x").serve(http_transport(&format!("{url}?session=../x"), &token)).await.unwrap();
    let r = call(&bad, "repl", json!({"code": "1"})).await;
    assert!(text(&r).contains("invalid session name"), "{}", text(&r));
    bad.cancel().await.unwrap();
    a.cancel().await.unwrap();
    // once A has gone, a new connection resumes the session from the store
    let mut resumed = None;
    for _ in 0..50 {
        let c = client(true, "x").serve(http_transport(&named, &token)).await.unwrap();
        let r = call(&c, "repl", json!({"code": "kept"})).await;
        if r.is_error != Some(true) {
            resumed = Some(r);
            c.cancel().await.unwrap();
            break;
        }
        c.cancel().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = resumed.expect("the session was never released after its connection closed");
    assert_eq!(structured(&r)["result"], json!("from a"), "{r:?}");
    server.child.kill().await.unwrap();
}

#[tokio::test]
async fn streamable_http_serves_independent_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start_http_with_token(dir.path(), &[]).await;
    let (url, token) = (server.url.clone(), server.token.clone().unwrap());
    let a = client(true, "x").serve(http_transport(&url, &token)).await.unwrap();
    let b = client(true, "x").serve(http_transport(&url, &token)).await.unwrap();
    call(&a, "repl", json!({"code": "var who = 'a'"})).await;
    call(&b, "repl", json!({"code": "var who = 'b'"})).await;
    let ra = call(&a, "repl", json!({"code": "who"})).await;
    let rb = call(&b, "repl", json!({"code": "who"})).await;
    assert_eq!(structured(&ra)["result"], json!("a"));
    assert_eq!(structured(&rb)["result"], json!("b"));
    let r = call(&a, "repl", json!({"code": "await haiku('over http')"})).await;
    assert_eq!(structured(&r)["result"], json!("echo: over http"), "{r:?}");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    server.child.kill().await.unwrap();
}

/// The outcome of a `repl` call: the result itself, or in async mode the
/// result its eval id is polled for.
async fn finished(service: &RunningService<RoleClient, TestClient>, r: CallToolResult, polled: bool) -> CallToolResult {
    if !polled {
        return r;
    }
    let id = structured(&r)["eval_id"].as_str().unwrap().to_string();
    call(service, "repl_result", json!({"eval_id": id, "wait_ms": 30000})).await
}

#[tokio::test]
async fn the_repl_tool_itself_passes_deny_rules_and_pre_tool_use_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let marker = dir.path().join("hook-ran");
    let settings = dir.path().join("settings.json");
    let hook = format!(
        "cat > {}; grep -q forbidden {} && {{ echo 'no forbidden code' >&2; exit 2; }} || exit 0",
        marker.display(),
        marker.display()
    );
    let cfg =
        json!({"hooks": {"PreToolUse": [{"matcher": "^repl$", "hooks": [{"type": "command", "command": hook}]}]}});
    std::fs::write(&settings, cfg.to_string()).unwrap();
    for mode in [&[][..], &["--async"][..]] {
        // a PreToolUse deny hook on `repl` stops the evaluation before it runs
        let mut args: Vec<&str> = mode.to_vec();
        args.extend(["--settings", settings.to_str().unwrap(), "--allow", "Bash"]);
        let service = start_stdio(client(true, "x"), &root, &args).await;
        let code = "await sh('touch ran-forbidden'); 'forbidden'";
        let r = call(&service, "repl", json!({"code": code})).await;
        let r = finished(&service, r, !mode.is_empty()).await;
        assert_eq!(r.is_error, Some(true), "{mode:?}: {r:?}");
        assert!(text(&r).contains("no forbidden code"), "{mode:?}: {}", text(&r));
        assert!(!root.join("ran-forbidden").exists(), "{mode:?}: the evaluation ran");
        let seen: Value = serde_json::from_str(&std::fs::read_to_string(&marker).unwrap()).unwrap();
        assert_eq!(seen["tool_name"], "repl");
        assert_eq!(seen["tool_input"]["code"], code);
        // other code passes the same hook
        let r = call(&service, "repl", json!({"code": "1 + 1"})).await;
        let r = finished(&service, r, !mode.is_empty()).await;
        assert_eq!(structured(&r)["result"], json!(2), "{mode:?}: {r:?}");
        service.cancel().await.unwrap();

        // a deny rule on `repl` stops every evaluation
        let mut args: Vec<&str> = mode.to_vec();
        args.extend(["--deny", "repl", "--allow", "Bash"]);
        let service = start_stdio(client(true, "x"), &root, &args).await;
        let r = call(&service, "repl", json!({"code": "await sh('touch ran-denied'); 1"})).await;
        let r = finished(&service, r, !mode.is_empty()).await;
        assert_eq!(r.is_error, Some(true), "{mode:?}: {r:?}");
        assert!(text(&r).contains("repl is denied by the rule"), "{mode:?}: {}", text(&r));
        assert!(!root.join("ran-denied").exists(), "{mode:?}: the evaluation ran");
        service.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn sync_settle_hook_can_withhold_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let hook = "grep -q classified && { echo 'the result mentions classified data' >&2; exit 2; } || exit 0";
    let cfg =
        json!({"hooks": {"PostToolUse": [{"matcher": "^repl$", "hooks": [{"type": "command", "command": hook}]}]}});
    std::fs::write(&settings, cfg.to_string()).unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let service = start_stdio(client(true, "x"), &root, &["--settings", settings.to_str().unwrap()]).await;
    let r = call(&service, "repl", json!({"code": "'public'"})).await;
    assert_eq!(structured(&r)["result"], json!("public"), "{r:?}");
    let r = call(&service, "repl", json!({"code": "'classi' + 'fied'"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text(&r);
    assert!(t.contains("withheld") && t.contains("classified data"), "{t}");
    assert!(r.structured_content.is_none(), "the withheld result must not leak: {r:?}");
    service.cancel().await.unwrap();
}

/// Without a store, a 2025-11-25 session's context ends with the session:
/// its handle then says the context was closed (not that it expired).
#[tokio::test]
async fn a_closed_sessions_handle_says_closed() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let mut s = spawn_http(dir.path(), "127.0.0.1:0", &[], &[]).await.expect("wrepl serve --http");
    let token = s.token.clone().expect("a generated token");
    let first = client(true, "x").serve(http_transport(&s.url, &token)).await.unwrap();
    let r = call(&first, "repl", json!({"code": "let v = 1; v"})).await;
    assert_eq!(structured(&r)["result"], json!(1), "{r:?}");
    let handle = structured(&r)["context"].as_str().expect("a handle").to_string();
    first.cancel().await.unwrap();
    let second = client(true, "x").serve(http_transport(&s.url, &token)).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let said = loop {
        let r = call(&second, "repl", json!({"code": "v", "context": handle})).await;
        let t = text(&r);
        if r.is_error == Some(true) && !t.contains("busy") {
            break t;
        }
        assert!(std::time::Instant::now() < deadline, "the closed session's context still answers: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(said.contains("context closed") && !said.contains("expired"), "{said}");
    second.cancel().await.unwrap();
    s.child.kill().await.unwrap();
}

/// `serve --print-client-config`: over HTTP, the printed configuration's URL
/// and header reach the running server; over stdio, the printed command
/// starts one with the same flags.
#[tokio::test]
async fn printed_client_configurations_work() {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::ServiceExt;
    use tokio::io::AsyncBufReadExt;
    // reqwest is built without a default TLS provider; plain http still needs one installed.
    #[allow(deprecated)]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    for (client_kind, servers_key) in [("claude", "mcpServers"), ("cursor", "mcpServers"), ("vscode", "servers")] {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
            .args(["serve", "--http", "127.0.0.1:0", "--root"])
            .arg(dir.path())
            .args(["--print-client-config", client_kind])
            .env_remove("WREPL_TOKEN")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut text = String::new();
        let printed = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(l) = lines.next_line().await.unwrap() {
                text.push_str(&l);
                text.push('\n');
                if l == "}" {
                    break;
                }
            }
            text
        })
        .await
        .expect("the configuration is printed");
        let config: Value = serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{client_kind}: {e}: {printed}"));
        let server = &config[servers_key]["wrepl"];
        let url = server["url"].as_str().unwrap_or_else(|| panic!("{client_kind}: no url in {config}"));
        if client_kind != "cursor" {
            assert_eq!(server["type"], "http", "{config}");
        }
        let auth = server["headers"]["Authorization"].as_str().expect("an Authorization header");
        let token = auth.strip_prefix("Bearer ").expect("a bearer token");
        let cfg = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token.to_string());
        let service =
            client(true, "x").serve(rmcp::transport::StreamableHttpClientTransport::from_config(cfg)).await.unwrap();
        let r = call(&service, "repl", json!({"code": "6 * 7"})).await;
        assert_eq!(structured(&r)["result"], json!(42), "{client_kind}: {r:?}");
        service.cancel().await.unwrap();
        child.kill().await.unwrap();
    }
    // Over stdio: the command and the flags, without --print-client-config.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args(["serve", "--root"])
        .arg(dir.path())
        .args(["--allow", "Write", "--print-client-config", "claude"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &config["mcpServers"]["wrepl"];
    assert_eq!(server["type"], "stdio", "{config}");
    let args: Vec<String> = serde_json::from_value(server["args"].clone()).unwrap();
    assert!(!args.iter().any(|a| a.contains("print-client-config")), "{args:?}");
    let mut cmd = tokio::process::Command::new(server["command"].as_str().unwrap());
    cmd.args(&args).kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let service = client(true, "x").serve(transport).await.unwrap();
    let r = call(&service, "repl", json!({"code": "await put('p.txt', 'x'); 1"})).await;
    assert_eq!(structured(&r)["result"], json!(1), "the printed flags (--allow Write) are in force: {r:?}");
    assert!(dir.path().join("p.txt").exists());
    service.cancel().await.unwrap();
}

/// The `boundary` argument: the same id continues the context's variables,
/// a new one starts them fresh, an earlier one continues where it was, and
/// a call without one stays at the current boundary.
#[tokio::test]
async fn a_boundary_argument_starts_and_continues_contexts() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_stdio(client(true, "x"), dir.path(), &[]).await;
    let value = |r: &CallToolResult| structured(r)["result"].clone();
    let r = call(&service, "repl", json!({"code": "let v = 1; v", "boundary": "b1"})).await;
    assert_eq!(value(&r), json!(1), "{r:?}");
    let r = call(&service, "repl", json!({"code": "v + 1", "boundary": "b1"})).await;
    assert_eq!(value(&r), json!(2), "the same boundary continues: {r:?}");
    let r = call(&service, "repl", json!({"code": "typeof v", "boundary": "b2"})).await;
    assert_eq!(value(&r), json!("undefined"), "a new boundary starts fresh: {r:?}");
    let r = call(&service, "repl", json!({"code": "v + 2", "boundary": "b1"})).await;
    assert_eq!(value(&r), json!(3), "an earlier boundary continues where it was: {r:?}");
    let r = call(&service, "repl", json!({"code": "v + 3"})).await;
    assert_eq!(value(&r), json!(4), "no boundary: the current one: {r:?}");
    for bad in [json!(""), json!(7), json!("x".repeat(129))] {
        let r = call(&service, "repl", json!({"code": "1", "boundary": bad})).await;
        assert_eq!(r.is_error, Some(true), "{bad}: {r:?}");
        assert!(text(&r).contains("`boundary` must be"), "{}", text(&r));
    }
    service.cancel().await.unwrap();
}
