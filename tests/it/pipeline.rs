//! The inner-call pipeline end to end (SPEC §4, §8): schema, latch, hooks,
//! permissions, watchdog, concurrency, events, records, shorthands.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wrepl::{Phase, ProgressEvent, Repl, ReplBuilder, Settings, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

use crate::support::*;

/// A test tool: sleeps `input.ms`, concurrency-safe or not, counting overlap.
struct Nap {
    name: &'static str,
    safe: bool,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Tool for Nap {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test: sleep"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}, "required": ["ms"], "additionalProperties": false})
    }
    fn read_only(&self, _: &Value) -> bool {
        true
    }
    fn concurrency_safe(&self, _: &Value) -> bool {
        self.safe
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        let ms = input["ms"].as_u64().unwrap_or(0);
        let running = self.running.clone();
        let peak = self.peak.clone();
        Box::pin(async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::new(json!({"slept": ms}), format!("slept {ms} ms")))
        })
    }
}

fn nap(name: &'static str, safe: bool) -> (Arc<dyn Tool>, Arc<AtomicUsize>) {
    let peak = Arc::new(AtomicUsize::new(0));
    (Arc::new(Nap { name, safe, running: Arc::new(AtomicUsize::new(0)), peak: peak.clone() }), peak)
}

/// A test tool that ignores cancellation and never finishes (for the watchdog).
struct Stuck;

impl Tool for Stuck {
    fn name(&self) -> &str {
        "Stuck"
    }
    fn description(&self) -> &str {
        "test: hangs, ignoring cancellation"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "additionalProperties": false})
    }
    fn native_timeout(&self, _: &Value) -> Duration {
        Duration::from_millis(100)
    }
    fn read_only(&self, _: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolFuture {
        Box::pin(std::future::pending::<Result<ToolOutput, ToolError>>())
    }
}

/// A test tool that panics with a 500 KB message while it runs.
struct Boom;

impl Tool for Boom {
    fn name(&self) -> &str {
        "Boom"
    }
    fn description(&self) -> &str {
        "test: panics"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self, _: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            tokio::task::yield_now().await;
            panic!("boom {}", "x".repeat(500_000))
        })
    }
}

/// A generic side-effect-free test tool under an arbitrary name.
struct Named(&'static str);

impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self, _: &Value) -> bool {
        true
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        Box::pin(async move { Ok(ToolOutput::new(input, "ok")) })
    }
}

struct Env {
    dir: tempfile::TempDir,
    events: Arc<Mutex<Vec<ProgressEvent>>>,
}

impl Env {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().unwrap(), events: Arc::new(Mutex::new(Vec::new())) }
    }
    fn root(&self) -> &Path {
        self.dir.path()
    }
    /// The template: built-in tools plus `extra`, rooted at the temp dir, events recorded.
    fn builder(&self, settings: &str, allow: &[&str], extra: Vec<Arc<dyn Tool>>) -> ReplBuilder {
        let events = self.events.clone();
        builder()
            .roots([self.root()])
            .settings(Settings::from_json(settings).expect("settings"))
            .allow(allow.iter().copied())
            .tools(extra)
            .events(Arc::new(move |e: &ProgressEvent| events.lock().unwrap().push(e.clone())))
            .session_id("test")
    }
    async fn repl(&self, settings: &str, allow: &[&str], extra: Vec<Arc<dyn Tool>>) -> Repl {
        self.builder(settings, allow, extra).build().await.unwrap()
    }
}

fn error_kind(r: &wrepl::EvalResult) -> String {
    let v = ok(r);
    v["kind"].as_str().unwrap_or_default().to_string()
}

const CATCH: &str = "catch (e) { ({ kind: e.kind, message: e.message, name: e.name }) }";

#[tokio::test(flavor = "multi_thread")]
async fn write_needs_a_grant_and_denial_has_no_side_effect() {
    let env = Env::new();
    let mut r = env.repl("{}", &[], vec![]).await;
    let res = ev(&mut r, &format!("try {{ await put('a.txt', 'hi') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied");
    assert!(ok(&res)["message"].as_str().unwrap().contains("--allow 'Write'"), "{res:?}");
    assert!(!env.root().join("a.txt").exists(), "a denied call must not write");
    // a shell is never allowed by default, even for a read-only-looking command
    let res = ev(&mut r, &format!("try {{ await sh('cat /etc/hostname') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied");
    // reads inside the workspace are allowed by default
    std::fs::write(env.root().join("b.txt"), "bee").unwrap();
    assert_eq!(ok(&ev(&mut r, "await cat('b.txt')").await), json!("bee"));

    let mut r = env.repl("{}", &["Write"], vec![]).await;
    let res = ev(&mut r, "await put('a.txt', 'hi'); await cat('a.txt')").await;
    assert_eq!(ok(&res), json!("hi"));
    assert_eq!(std::fs::read_to_string(env.root().join("a.txt")).unwrap(), "hi");
    // the records show both calls
    let tools: Vec<&str> = res.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, vec!["Write", "Read"]);
    // big outputs reach the script whole, but the record keeps a bounded preview
    std::fs::write(env.root().join("big.txt"), "x".repeat(300_000)).unwrap();
    let res = ev(&mut r, "(await cat('big.txt')).length").await;
    assert_eq!(ok(&res), json!(300_000));
    assert_eq!(res.calls[0].output.value()["truncated"], json!(true));
    assert!(res.calls[0].output.as_str().len() < 10_000);
    assert!(res.calls.iter().all(|c| c.ok && c.id.starts_with("toolu_")));
}

#[tokio::test(flavor = "multi_thread")]
async fn deny_rules_beat_allow_rules() {
    let env = Env::new();
    let settings = r#"{"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}"#;
    let mut r = env.repl(settings, &[], vec![]).await;
    std::fs::write(env.root().join("keep"), "x").unwrap();
    let res = ev(&mut r, &format!("try {{ await sh('rm keep') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied");
    assert!(env.root().join("keep").exists());
    let res = ev(&mut r, &format!("try {{ await sh('echo ok && rm keep') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied", "a compound command cannot smuggle a denied part");
    assert!(env.root().join("keep").exists());
    assert_eq!(ok(&ev(&mut r, "await sh('echo fine')").await), json!("fine\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_errors_refuse_before_anything_runs() {
    let env = Env::new();
    let mut r = env.repl("{}", &["Write", "Bash"], vec![]).await;
    let res = ev(&mut r, &format!("try {{ await Write({{file_path: 'x.txt'}}) }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "invalid-input");
    assert!(ok(&res)["message"].as_str().unwrap().contains("content"), "{res:?}");
    let res = ev(&mut r, &format!("try {{ await Bash({{command: 'touch made', bogus: 1}}) }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "invalid-input");
    let res = ev(&mut r, &format!("try {{ await Bash('touch made') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "invalid-input");
    assert!(!env.root().join("x.txt").exists());
    assert!(!env.root().join("made").exists());
    // the error event was emitted with the same id as the start event
    let events = env.events.lock().unwrap();
    let errors: Vec<_> = events.iter().filter(|e| e.phase == Phase::Error).collect();
    assert_eq!(errors.len(), 3);
    for e in errors {
        assert!(events.iter().any(|s| s.phase == Phase::Start && s.tool_use_id == e.tool_use_id));
        assert!(!events.iter().any(|s| s.phase == Phase::Executing && s.tool_use_id == e.tool_use_id));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_events_follow_each_call() {
    let env = Env::new();
    let mut r = env.repl("{}", &["Bash"], vec![]).await;
    ok(&ev(&mut r, "await sh('true')").await);
    let events = env.events.lock().unwrap();
    let phases: Vec<Phase> = events.iter().map(|e| e.phase).collect();
    assert_eq!(phases, vec![Phase::Start, Phase::Executing, Phase::Complete]);
    assert!(events.iter().all(|e| e.tool_use_id == events[0].tool_use_id && e.tool == "Bash"));
}

#[tokio::test(flavor = "multi_thread")]
async fn isolation_latch_refuses_the_other_side() {
    let env = Env::new();
    let settings = r#"{"isolation": {"enabled": true, "web": ["mcp__web__*"], "connectors": ["mcp__mail__*"]}}"#;
    let extra: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("mcp__web__get")), Arc::new(Named("mcp__mail__send"))];
    let mut r = env.repl(settings, &[], extra).await;
    ok(&ev(&mut r, "await mcp__web__get({url: 'x'})").await);
    let res = ev(&mut r, &format!("try {{ await mcp__mail__send({{}}) }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "isolation");
    // the latch state is kept across evaluations
    let res = ev(&mut r, &format!("try {{ await mcp__mail__send({{}}) }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "isolation");
    ok(&ev(&mut r, "await mcp__web__get({})").await);
}

fn hook_settings(event: &str, matcher: &str, command: &str, extra: &str) -> String {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [serde_json::from_str::<Value>(&format!(
        r#"{{"type": "command", "command": {} {extra}}}"#, json!(command)
    )).unwrap()]}]}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_tool_use_hook_can_block() {
    let env = Env::new();
    let s = hook_settings("PreToolUse", "Write", "echo 'no writes today' >&2; exit 2", "");
    let mut r = env.repl(&s, &["Write"], vec![]).await;
    let res = ev(&mut r, &format!("try {{ await put('h.txt', 'x') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied");
    assert!(ok(&res)["message"].as_str().unwrap().contains("no writes today"));
    assert!(!env.root().join("h.txt").exists());
    // other tools are not matched
    ok(&ev(&mut r, "await sh('true').catch(() => 1)").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_that_says_continue_false_stops_the_call_and_the_evaluation() {
    let env = Env::new();
    // Even with an allow decision beside it, and a grant, the call does not run.
    let out = r#"{"continue": false, "stopReason": "the release is frozen", "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}"#;
    let s = hook_settings("PreToolUse", "Write", &format!("cat > /dev/null; echo '{out}'"), "");
    let mut r = env.repl(&s, &["Write"], vec![]).await;
    assert_eq!(ok(&ev(&mut r, "globalThis.kept = 41").await), serde_json::json!(41));
    // The script catches the refusal and tries to go on: the evaluation
    // stops all the same, so the second write never happens either.
    let code =
        "try { await put('a.txt', 'x') } catch (e) { globalThis.seen = e.message }\nawait put('b.txt', 'y'); 'went on'";
    let res = ev(&mut r, code).await;
    let err = res.error.as_ref().expect("the evaluation was stopped");
    assert_eq!(err.name, "AbortError", "{err:?}");
    assert!(!env.root().join("a.txt").exists(), "the stopped call did not run");
    assert!(!env.root().join("b.txt").exists(), "nothing after the stop ran");
    assert!(
        res.stderr.contains("a PreToolUse hook stopped the evaluation at Write")
            && res.stderr.contains("the release is frozen"),
        "the stop is reported: {}",
        res.stderr
    );
    assert_eq!(res.calls.len(), 1, "{:?}", res.calls);
    assert!(!res.calls[0].ok);
    // The context is kept, and the next evaluation runs. (Whether the catch
    // ran before the stop reached the script depends on timing: if it did,
    // it saw the reason.)
    let res = ev(&mut r, "[kept + 1, typeof seen === 'undefined' || seen.includes('the release is frozen')]").await;
    assert_eq!(ok(&res), serde_json::json!([42, true]), "{res:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_use_hook_that_says_continue_false_stops_after_the_call() {
    let env = Env::new();
    let out = r#"{"continue": false, "stopReason": "one write is enough", "systemMessage": "written"}"#;
    let s = hook_settings("PostToolUse", "Write", &format!("cat > /dev/null; echo '{out}'"), "");
    let mut r = env.repl(&s, &["Write"], vec![]).await;
    let res = ev(&mut r, "await put('a.txt', 'x').catch(() => 0); await put('b.txt', 'y'); 'went on'").await;
    assert_eq!(res.error.as_ref().map(|e| e.name.as_str()), Some("AbortError"), "{res:?}");
    assert_eq!(std::fs::read_to_string(env.root().join("a.txt")).unwrap(), "x", "the call had run");
    assert!(!env.root().join("b.txt").exists(), "nothing after the stop ran");
    assert!(
        res.stderr.contains("one write is enough") && res.stderr.contains("its result is withheld"),
        "{}",
        res.stderr
    );
    assert!(res.stderr.contains(": written"), "systemMessage is shown: {}", res.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_narrow_grants_do_not_add_up_to_running_programs_through_git() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git").args(args).current_dir(env.root()).output().expect("git");
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["init", "-q"]);
    let config = env.root().join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let marker = env.root().join("pwned");
    // `Write` and `Bash(git status:*)`: writing core.fsmonitor into
    // .git/config would make `git status` run a program.
    let mut r = env.repl("{}", &["Write", "Edit", "Bash(git status:*)"], vec![]).await;
    let evil = format!("[core]\n\tfsmonitor = touch {}\n", marker.display());
    let code = format!(
        "const out = []; for (const p of ['.git/config', '.git/hooks/pre-commit', './sub/../.git/config']) {{ \
           try {{ await put(p, {evil:?}); out.push('written ' + p) }} catch (e) {{ out.push(e.kind + ': ' + e.message) }} }} \
         try {{ await Edit({{file_path: '.git/config', old_string: '[core]', new_string: {evil:?}}}) }} catch (e) {{ out.push(e.kind) }} \
         out"
    );
    let v = ok(&ev(&mut r, &code).await);
    let lines: Vec<&str> = v.as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines[..3] {
        assert!(line.starts_with("denied: ") && line.contains("inside a .git directory"), "{line}");
        assert!(line.contains("--allow 'Write(.git/"), "it says which rule allows it: {line}");
    }
    assert_eq!(lines[3], "denied");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before, ".git/config is unchanged on disk");
    assert!(!env.root().join(".git/hooks/pre-commit").exists());
    ok(&ev(&mut r, "await sh('git status')").await);
    assert!(!marker.exists(), "git status ran no program");
    // Writing elsewhere is allowed as before.
    ok(&ev(&mut r, "await put('notes.txt', 'x')").await);
    // A rule that names the path allows it.
    let mut r = env.repl("{}", &["Write(./.git/description)"], vec![]).await;
    ok(&ev(&mut r, "await put('.git/description', 'mine')").await);
    assert_eq!(std::fs::read_to_string(env.root().join(".git/description")).unwrap(), "mine");
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_tool_use_hook_rewrites_the_input_that_runs() {
    let env = Env::new();
    let out = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"file_path": "h.txt", "content": "rewritten"}}}"#;
    let s = hook_settings("PreToolUse", "Write", &format!("cat > /dev/null; echo '{out}'"), "");
    let mut r = env.repl(&s, &[], vec![]).await;
    let res = ev(&mut r, "await put('h.txt', 'original')").await;
    ok(&res);
    assert_eq!(std::fs::read_to_string(env.root().join("h.txt")).unwrap(), "rewritten");
    assert_eq!(res.calls[0].input.value()["content"], "rewritten", "the record holds the input that ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn permission_rules_see_the_rewritten_input() {
    let env = Env::new();
    let out = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "touch sneaky"}}}"#;
    let s = json!({
        "permissions": {"allow": ["Bash(echo:*)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": format!("cat > /dev/null; echo '{out}'")}]}]}
    })
    .to_string();
    let mut r = env.repl(&s, &[], vec![]).await;
    let res = ev(&mut r, &format!("try {{ await sh('echo hi') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied");
    assert!(!env.root().join("sneaky").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn hook_warnings_of_a_long_script_are_cut_capped_and_counted() {
    let env = Env::new();
    // A PostToolUse hook that blocks every call with a 20,000-byte reason:
    // each block is a warning on the evaluation's stderr.
    let out = json!({"decision": "block", "reason": "r".repeat(20_000)}).to_string();
    let s = hook_settings("PostToolUse", "probe", &format!("cat > /dev/null; echo '{out}'"), "");
    let mut r = env.repl(&s, &[], vec![Arc::new(Named("probe"))]).await;
    let res = ev(&mut r, "for (let i = 0; i < 130; i++) await probe({i}); 'done'").await;
    assert_eq!(ok(&res), json!("done"));
    assert_eq!(res.calls.len(), 130, "every call keeps its record");
    let feedback: Vec<&str> =
        res.stderr.lines().filter(|l| l.starts_with("[wrepl] PostToolUse hook feedback for probe")).collect();
    assert_eq!(feedback.len(), 100, "{} warning lines", feedback.len());
    assert!(
        feedback.iter().all(|l| l.len() < 4200 && l.ends_with("…[warning cut: 20070 bytes]")),
        "{}",
        &feedback[0][4000..]
    );
    assert!(
        res.stderr
            .contains("[wrepl] 30 more warnings from inner calls are not shown: one evaluation keeps at most 100\n"),
        "{}",
        &res.stderr[res.stderr.len().saturating_sub(300)..]
    );
    assert!(res.stderr.len() < 101 * 4200, "{} bytes of stderr", res.stderr.len());
    // The next evaluation starts with an empty budget.
    let res = ev(&mut r, "await probe({}); 1").await;
    assert_eq!(res.stderr.lines().filter(|l| l.contains("hook feedback")).count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn hook_timeout_fails_closed() {
    let env = Env::new();
    let s = hook_settings("PreToolUse", "Write", "sleep 5", r#", "timeout": 0.3"#);
    let mut r = env.repl(&s, &["Write"], vec![]).await;
    let t = Instant::now();
    let res = ev(&mut r, &format!("try {{ await put('t.txt', 'x') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied");
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(!env.root().join("t.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_tool_is_a_one_line_failed_call() {
    let env = Env::new();
    let mut r = env.repl("{}", &["Boom"], vec![Arc::new(Boom)]).await;
    let res = ev(&mut r, &format!("try {{ await Boom({{}}) }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "failed");
    let msg = ok(&res)["message"].as_str().unwrap().to_string();
    assert!(msg.starts_with("the tool panicked: boom xxx") && msg.ends_with("… (500005 bytes)"), "{}", &msg[..100]);
    assert!(msg.len() < 400, "{} bytes", msg.len());
    // The context and the pipeline carry on.
    assert_eq!(ok(&ev(&mut r, "1 + 1").await), json!(2));
    let res = ev(&mut r, &format!("try {{ await Boom({{}}) }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn watchdog_aborts_a_tool_that_ignores_its_timeout() {
    let env = Env::new();
    let mut r = env.repl("{}", &[], vec![Arc::new(Stuck)]).await;
    let t = Instant::now();
    let res = ev(&mut r, &format!("try {{ await Stuck({{}}) }} {CATCH}")).await;
    let el = t.elapsed();
    assert_eq!(error_kind(&res), "watchdog");
    let msg = ok(&res)["message"].as_str().unwrap().to_string();
    assert!(msg.contains("Stuck") && msg.contains("5150 ms") && msg.contains("100 ms"), "{msg}");
    // The tool never ends on its own: the watchdog (5.15 s) ended it.
    assert!(el >= Duration::from_millis(5100) && el < Duration::from_secs(30), "{el:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_native_timeout_kills_the_process_group() {
    let env = Env::new();
    let mut r = env.repl("{}", &["Bash"], vec![]).await;
    let res = ev(
        &mut r,
        &format!("try {{ await Bash({{command: 'sleep 30.0301 & sleep 30.0302; wait', timeout: 500}}) }} {CATCH}"),
    )
    .await;
    assert_eq!(error_kind(&res), "timeout", "{res:?}");
    // The command's pids are its PID namespace's; find its processes by their arguments.
    assert!(gone_within(&["30.0301", "30.0302"], Duration::from_secs(20)).await, "the background child must be gone");
}

/// Waits until no process has any of `markers` as an argument (true), or `limit` passed (false).
async fn gone_within(markers: &[&str], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if markers.iter().all(|m| pids_with(m).is_empty()) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_shell_at_script_end_is_aborted_with_a_warning() {
    let env = Env::new();
    let mut r = env.repl("{}", &["Bash"], vec![]).await;
    let res = ev(&mut r, "sh('sleep 30.0303'); await new Promise(r => setTimeout(r, 300)); 'done'").await;
    assert_eq!(ok(&res), json!("done"));
    assert!(res.stderr.contains("still pending"), "{}", res.stderr);
    assert_eq!(res.abandoned_calls, vec!["Bash".to_string()]);
    assert!(gone_within(&["30.0303"], Duration::from_secs(20)).await, "the abandoned command must be killed");
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_calls_are_concurrent_and_unsafe_tools_are_serial() {
    let env = Env::new();
    let (safe, safe_peak) = nap("Nap", true);
    let (unsafe_tool, unsafe_peak) = nap("Exclusive", false);
    let mut r = env.repl("{}", &["Exclusive", "Bash"], vec![safe, unsafe_tool]).await;
    let t = Instant::now();
    let res = ev(&mut r, "(await Promise.all(Array.from({length: 100}, () => Nap({ms: 10})))).length").await;
    assert_eq!(ok(&res), json!(100));
    assert!(t.elapsed() < Duration::from_millis(500), "{:?}", t.elapsed());
    assert!(safe_peak.load(Ordering::SeqCst) > 50);
    ok(&ev(&mut r, "await Promise.all([Exclusive({ms: 30}), Exclusive({ms: 30}), Exclusive({ms: 30})])").await);
    assert_eq!(unsafe_peak.load(Ordering::SeqCst), 1, "non-concurrency-safe calls run one at a time");
    // 10 parallel one-second shell sleeps (read-only commands run concurrently): run one
    // at a time they would take at least 10 s; together about 1 s.
    let t = Instant::now();
    let res = ev(&mut r, "(await Promise.all(Array.from({length: 10}, () => sh('sleep 1')))).length").await;
    assert_eq!(ok(&res), json!(10));
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn chdir_is_per_eval_and_confined() {
    let env = Env::new();
    std::fs::create_dir(env.root().join("sub")).unwrap();
    std::fs::write(env.root().join("sub/inner.txt"), "in sub").unwrap();
    let mut r = env.repl("{}", &["Bash"], vec![]).await;
    let res = ev(&mut r, "await chdir('sub'); [await sh('pwd'), await cat('inner.txt')]").await;
    let v = ok(&res);
    assert!(v[0].as_str().unwrap().trim_end().ends_with("/sub"), "{v}");
    assert_eq!(v[1], "in sub");
    // reset at the next eval
    let v = ok(&ev(&mut r, "await sh('pwd')").await);
    assert!(!v.as_str().unwrap().trim_end().ends_with("/sub"), "{v}");
    let res = ev(&mut r, &format!("try {{ await chdir('..') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "path-escape");
}

#[tokio::test(flavor = "multi_thread")]
async fn shorthands_and_shquote() {
    let env = Env::new();
    std::fs::write(env.root().join("notes.md"), "alpha\nbeta\n").unwrap();
    let mut r = env.repl("{}", &["Bash", "Write"], vec![]).await;
    assert_eq!(ok(&ev(&mut r, "shQuote(\"it's\")").await), json!("'it'\\''s'"));
    assert_eq!(
        ok(&ev(&mut r, "await sh('echo ' + shQuote(\"a b; rm -rf x 'q'\"))").await),
        json!("a b; rm -rf x 'q'\n")
    );
    let files = ok(&ev(&mut r, "await gl('*.md')").await);
    assert!(files.to_string().contains("notes.md"), "{files}");
    let files = ok(&ev(&mut r, "await rgf('beta')").await);
    assert!(files.to_string().contains("notes.md"), "{files}");
    let text = ok(&ev(&mut r, "await rg('beta')").await);
    assert!(text.as_str().unwrap().contains("beta"), "{text}");
    let res = ev(&mut r, &format!("try {{ await sh('exit 4') }} {CATCH}")).await;
    assert_eq!(ok(&res)["name"], "ShellError");
    let full = ok(&ev(&mut r, "await Bash({command: 'echo out; echo err >&2; exit 1'})").await);
    assert_eq!(full["stdout"], "out\n");
    assert_eq!(full["stderr"], "err\n");
    assert_eq!(full["exitCode"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn file_tools_refuse_escapes_through_the_pipeline() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.root().join("link")).unwrap();
    let mut r = env.repl("{}", &["Write", "Edit"], vec![]).await;
    for code in [
        "await cat('../x')".to_string(),
        format!("await cat({})", json!(outside.path().join("secret"))),
        "await cat('link/secret')".to_string(),
        "await put('link/new.txt', 'x')".to_string(),
        "await Edit({file_path: 'link/secret', old_string: 's', new_string: 't'})".to_string(),
    ] {
        let res = ev(&mut r, &format!("try {{ {code} }} {CATCH}")).await;
        assert_eq!(error_kind(&res), "path-escape", "{code}: {res:?}");
    }
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(outside.path().join("secret")).unwrap(), "s");
}

#[tokio::test(flavor = "multi_thread")]
async fn images_are_returned_as_media_and_capped() {
    let env = Env::new();
    // a valid 1x1 PNG
    let png: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00,
        0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D,
        0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];
    for i in 0..10 {
        std::fs::write(env.root().join(format!("img{i}.png")), png).unwrap();
    }
    let mut r = env.repl("{}", &[], vec![]).await;
    let res = ev(&mut r, "const one = await Read({file_path: 'img0.png'}); [one.type, one.mime]").await;
    assert_eq!(ok(&res), json!(["image", "image/png"]));
    assert_eq!(res.media.len(), 1);
    let res =
        ev(&mut r, "await Promise.all(Array.from({length: 10}, (_, i) => Read({file_path: `img${i}.png`}))); 'ok'")
            .await;
    assert_eq!(ok(&res), json!("ok"));
    assert_eq!(res.media.len(), 8, "at most 8 images per evaluation");
    assert!(res.stderr.contains("dropped"), "{}", res.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_deny_rules_cover_searches_of_those_paths() {
    let env = Env::new();
    std::fs::create_dir(env.root().join("secret")).unwrap();
    std::fs::write(env.root().join("secret/key"), "API_KEY=1").unwrap();
    let mut r = env.repl(r#"{"permissions": {"deny": ["Read(./secret/**)"]}}"#, &[], vec![]).await;
    for code in ["await cat('secret/key')", "await rg('API_KEY', {path: 'secret'})", "await gl('*', {path: 'secret'})"]
    {
        let res = ev(&mut r, &format!("try {{ {code} }} {CATCH}")).await;
        assert_eq!(error_kind(&res), "denied", "{code}: {res:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinks_inside_the_root_do_not_dodge_deny_rules() {
    let env = Env::new();
    std::fs::create_dir(env.root().join("secret")).unwrap();
    std::fs::write(env.root().join("secret/key"), "API_KEY=1").unwrap();
    std::fs::create_dir(env.root().join("docs")).unwrap();
    std::os::unix::fs::symlink("../secret", env.root().join("docs/s")).unwrap();
    let mut r =
        env.repl(r#"{"permissions": {"deny": ["Read(./secret/**)", "Write(./secret/**)"]}}"#, &["Write"], vec![]).await;
    for code in ["await cat('docs/s/key')", "await put('docs/s/new', 'x')", "await rg('API', {path: 'docs/s'})"] {
        let res = ev(&mut r, &format!("try {{ {code} }} {CATCH}")).await;
        assert_eq!(error_kind(&res), "denied", "{code}: {res:?}");
    }
    assert!(!env.root().join("secret/new").exists());
    // ordinary files are unaffected
    std::fs::write(env.root().join("docs/readme"), "hi").unwrap();
    assert_eq!(ok(&ev(&mut r, "await cat('docs/readme')").await), json!("hi"));
}

// ---------------------------------------------------------------------------
// One dispatch point: chdir and the model's calls of registered tools pass
// the same stages as every other call (schema, latch, hooks, permission,
// events, records).

/// A hook that writes `marker` into the directory it runs in, then denies.
fn deny_hook(matcher: &str, marker: &Path) -> String {
    let cmd = format!("echo ran > {}; echo 'the hook says no' >&2; exit 2", marker.display());
    hook_settings("PreToolUse", matcher, &cmd, "")
}

#[tokio::test(flavor = "multi_thread")]
async fn chdir_passes_hooks_rules_events_and_records() {
    let env = Env::new();
    std::fs::create_dir(env.root().join("sub")).unwrap();
    // a PreToolUse deny hook on chdir stops it: the working directory stays
    let marker = env.root().join("hook-ran");
    let mut r = env.repl(&deny_hook("^chdir$", &marker), &["Bash"], vec![]).await;
    let res = ev(&mut r, &format!("try {{ await chdir('sub') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "denied", "{res:?}");
    assert!(ok(&res)["message"].as_str().unwrap().contains("the hook says no"));
    assert!(marker.exists(), "the hook ran");
    let pwd = ok(&ev(&mut r, "await chdir('sub').catch(() => 0); await sh('pwd')").await);
    assert!(!pwd.as_str().unwrap().trim_end().ends_with("/sub"), "{pwd}");

    // a deny rule stops it too (by name, and by a path rule)
    for rule in ["chdir", "chdir(./sub)", "chdir(//**/sub)"] {
        let mut r = env.builder("{}", &["Bash"], vec![]).deny([rule]).build().await.unwrap();
        let res = ev(&mut r, &format!("try {{ await chdir('sub') }} {CATCH}")).await;
        assert_eq!(error_kind(&res), "denied", "{rule}: {res:?}");
        assert!(ok(&res)["message"].as_str().unwrap().contains("denied by the rule"), "{rule}");
        let pwd = ok(&ev(&mut r, "await chdir('sub').catch(() => 0); await sh('pwd')").await);
        assert!(!pwd.as_str().unwrap().trim_end().ends_with("/sub"), "{rule}: {pwd}");
    }

    // allowed: it is an ordinary call, with events and a record
    env.events.lock().unwrap().clear();
    let mut r = env.repl("{}", &[], vec![]).await;
    let res = ev(&mut r, "await chdir('sub')").await;
    assert!(ok(&res).as_str().unwrap().ends_with("/sub"), "{res:?}");
    assert_eq!(res.calls.len(), 1);
    assert_eq!(res.calls[0].tool, "chdir");
    assert_eq!(res.calls[0].input.value(), json!({"path": "sub"}));
    let phases: Vec<Phase> = env.events.lock().unwrap().iter().map(|e| e.phase).collect();
    assert_eq!(phases, vec![Phase::Start, Phase::Executing, Phase::Complete]);
    // a failure is recorded like any call's
    std::fs::write(env.root().join("file.txt"), "x").unwrap();
    let res = ev(&mut r, &format!("try {{ await chdir('file.txt') }} {CATCH}")).await;
    assert_eq!(error_kind(&res), "invalid-input", "{res:?}");
    assert!(ok(&res)["message"].as_str().unwrap().contains("is not a directory"));
    assert_eq!(res.calls.iter().map(|c| (c.tool.as_str(), c.ok)).collect::<Vec<_>>(), [("chdir", false)]);
}

struct Asker {
    asked: Arc<Mutex<Vec<String>>>,
}

impl wrepl::Approver for Asker {
    fn approve(&self, tool: &str, _input: &Value, reason: &str) -> futures_util::future::BoxFuture<'static, bool> {
        self.asked.lock().unwrap().push(format!("{tool}: {reason}"));
        Box::pin(async { true })
    }
}

const DOUBLE: &str = "registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, async ({n}) => { globalThis.ran = (globalThis.ran || 0) + 1; return n * 2 })";

#[tokio::test(flavor = "multi_thread")]
async fn registered_tool_calls_pass_hooks_rules_events_and_records() {
    let env = Env::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let approver = Arc::new(Asker { asked: asked.clone() });

    // a PreToolUse deny hook on the wire name stops the call; the handler never runs
    let marker = env.root().join("hook-ran");
    let mut r = env
        .builder(&deny_hook("^eval_registered__double$", &marker), &[], vec![])
        .approver(approver.clone())
        .build()
        .await
        .unwrap();
    ok(&ev(&mut r, DOUBLE).await);
    let res = r.call_registered("double", json!({"n": 2}), Default::default()).await.unwrap();
    let (name, msg) = err(&res);
    assert_eq!(name, "PermissionDenied");
    assert!(msg.contains("the hook says no"), "{msg}");
    assert!(marker.exists());
    assert_eq!(ok(&ev(&mut r, "globalThis.ran === undefined").await), json!(true), "the handler did not run");
    assert!(asked.lock().unwrap().is_empty(), "a hook deny comes before the approver");
    assert_eq!(res.calls.last().map(|c| (c.tool.as_str(), c.ok)), Some(("eval_registered__double", false)));

    // a deny rule stops it too, even with an approver that says yes
    for rule in ["eval_registered__double", "eval_registered__double(*)"] {
        let mut r = env.builder("{}", &[], vec![]).deny([rule]).approver(approver.clone()).build().await.unwrap();
        ok(&ev(&mut r, DOUBLE).await);
        let res = r.call_registered("double", json!({"n": 2}), Default::default()).await.unwrap();
        let (name, msg) = err(&res);
        assert_eq!(name, "PermissionDenied");
        assert!(msg.contains("denied by the rule"), "{msg}");
        assert_eq!(ok(&ev(&mut r, "globalThis.ran === undefined").await), json!(true));
    }
    assert!(asked.lock().unwrap().is_empty(), "deny rules come before the approver");

    // an allow rule with a pattern does not skip the question (registered tools always ask)...
    env.events.lock().unwrap().clear();
    let mut r = env
        .builder("{}", &[], vec![])
        .allow(["eval_registered__double(*)"])
        .approver(approver.clone())
        .build()
        .await
        .unwrap();
    ok(&ev(&mut r, DOUBLE).await);
    let res = r.call_registered("double", json!({"n": 21}), Default::default()).await.unwrap();
    assert_eq!(ok(&res), json!(42));
    assert_eq!(asked.lock().unwrap().as_slice(), ["eval_registered__double: Execute registered tool \"double\""]);
    // ...nor does an allow rule naming exactly the tool: the person is asked
    asked.lock().unwrap().clear();
    env.events.lock().unwrap().clear();
    let mut r =
        env.builder("{}", &[], vec![]).allow(["eval_registered__double"]).approver(approver).build().await.unwrap();
    ok(&ev(&mut r, DOUBLE).await);
    let res = r.call_registered("double", json!({"n": 21}), Default::default()).await.unwrap();
    assert_eq!(ok(&res), json!(42));
    assert_eq!(asked.lock().unwrap().as_slice(), ["eval_registered__double: Execute registered tool \"double\""]);
    let record = res.calls.last().expect("a record of the call");
    assert_eq!(
        (record.tool.as_str(), record.ok, record.input.value()),
        ("eval_registered__double", true, json!({"n": 21}))
    );
    assert_eq!(record.output.value(), json!(42));
    let events = env.events.lock().unwrap();
    let own: Vec<Phase> = events.iter().filter(|e| e.tool == "eval_registered__double").map(|e| e.phase).collect();
    assert_eq!(own, vec![Phase::Start, Phase::Executing, Phase::Complete]);
}

#[tokio::test(flavor = "multi_thread")]
async fn registered_tool_post_hook_can_withhold_its_result() {
    let env = Env::new();
    let s = hook_settings(
        "PostToolUse",
        "^eval_registered__secret$",
        "grep -q classified && { echo 'mentions classified data' >&2; exit 2; } || exit 0",
        "",
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut r = env.builder(&s, &[], vec![]).approver(Arc::new(Asker { asked })).build().await.unwrap();
    ok(&ev(&mut r, "registerTool('secret', 's', {type: 'object'}, async () => 'classified plans')").await);
    let res = r.call_registered("secret", json!({}), Default::default()).await.unwrap();
    let (name, msg) = err(&res);
    assert_eq!(name, "ResultWithheld");
    assert!(msg.contains("mentions classified data"), "{msg}");
    assert!(res.result.is_none() && res.text.is_empty(), "the withheld result must not leak: {res:?}");
}
