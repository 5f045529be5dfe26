use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::*;
use crate::pipeline::settings::{HookType, OnTimeout};
use crate::process::MINIMAL_ENV;

fn hook(command: &str) -> HookCommand {
    HookCommand::new(command)
}

fn runner(pre: Vec<HookMatcher>) -> HookRunner {
    HookRunner::new(HookSettings { pre_tool_use: pre, ..Default::default() }, std::env::temp_dir()).unwrap()
}

fn group(matcher: Option<&str>, hooks: Vec<HookCommand>) -> HookMatcher {
    HookMatcher { matcher: matcher.map(str::to_string), hooks }
}

fn ctx<'a>(tool: &'a str, cwd: &'a Path) -> HookContext<'a> {
    HookContext { session_id: "s1", tool_name: tool, tool_use_id: "call-1", cwd, trace: None }
}

async fn pre(r: &HookRunner, tool: &str, dir: &Path) -> PreToolUseOutcome {
    r.pre_tool_use(&ctx(tool, dir), &json!({"command": "ls"})).await
}

/// `printf '%s' '<json>'` with the JSON single-quote-escaped.
fn print_json(v: Value) -> String {
    format!("printf '%s' '{}'", v.to_string().replace('\'', r"'\''"))
}

#[tokio::test]
async fn no_hooks_no_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let r = HookRunner::new(HookSettings::default(), dir.path()).unwrap();
    assert!(!r.has_hooks(HookEvent::PreToolUse, "Bash"));
    assert_eq!(pre(&r, "Bash", dir.path()).await, PreToolUseOutcome::default());
}

#[tokio::test]
async fn allow_and_silent_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![group(
        None,
        vec![
            hook("true"),
            hook(&print_json(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": "fine",
                "additionalContext": "ctx-a"
            }}))),
        ],
    )]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, Some(Decision::Allow));
    assert_eq!(out.reason.as_deref(), Some("fine"));
    assert_eq!(out.additional_context, ["ctx-a"]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.updated_input, None);
}

#[tokio::test]
async fn deny_via_json_beats_allow() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![
        group(None, vec![hook(&print_json(json!({"permissionDecision": "allow", "permissionDecisionReason": "ok"})))]),
        group(
            Some("Bash"),
            vec![
                hook(&print_json(
                    json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}),
                )),
                hook(&print_json(json!({"decision": "block", "reason": "legacy says no"}))),
                hook(&print_json(json!({"permissionDecision": "ask"}))),
                hook(&print_json(json!({"permissionDecision": " DENY "}))),
            ],
        ),
    ]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, Some(Decision::Deny));
    let reason = out.reason.unwrap();
    let lines: Vec<&str> = reason.lines().collect();
    assert_eq!(lines[..2], ["no rm", "legacy says no"]);
    assert!(lines[2].starts_with("denied by hook `printf") && lines.len() == 3, "{reason}");
    // The Bash-only group does not run for Write.
    let out = pre(&r, "Write", dir.path()).await;
    assert_eq!(out.decision, Some(Decision::Allow));
    assert_eq!(out.reason.as_deref(), Some("ok"));
}

#[tokio::test]
async fn deny_via_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![group(
        Some("Bash"),
        vec![hook("echo '  dangerous command  ' >&2; echo '{\"permissionDecision\":\"allow\"}'; exit 2")],
    )]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, Some(Decision::Deny));
    assert_eq!(out.reason.as_deref(), Some("dangerous command"));

    let r = runner(vec![group(None, vec![hook("exit 2")])]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, Some(Decision::Deny));
    assert!(out.reason.unwrap().contains("exit status 2"));

    // Long stderr is capped.
    let r = runner(vec![group(None, vec![hook("head -c 100000 /dev/zero | tr '\\0' x >&2; exit 2")])]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert!(out.reason.unwrap().len() < MAX_REASON_CHARS + 100);
}

#[tokio::test]
async fn rewrite_merges_in_config_order() {
    let dir = tempfile::tempdir().unwrap();
    // The first hook finishes last; configuration order still wins.
    let first = format!(
        "sleep 0.2; {}",
        print_json(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "updatedInput": {"command": "first", "timeout": 5}, "additionalContext": "one"}}))
    );
    let second = print_json(json!({"updatedInput": {"command": "second", "extra": true},
        "additionalContext": ["two", "three"]}));
    let third = print_json(json!({"updatedInput": "not an object"}));
    let r = runner(vec![group(None, vec![hook(&first)]), group(Some("Ba.*"), vec![hook(&second), hook(&third)])]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.updated_input, Some(json!({"command": "second", "timeout": 5, "extra": true})));
    assert_eq!(out.additional_context, ["one", "two", "three"]);
    assert_eq!(out.decision, None);
    assert_eq!(out.warnings.len(), 1);
    assert!(out.warnings[0].contains("updatedInput"), "{:?}", out.warnings);
}

#[tokio::test]
async fn garbage_and_failures_are_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![group(
        None,
        vec![
            hook("echo 'not json {'"),
            hook("echo '[1,2]'"),
            hook(&print_json(json!({"permissionDecision": "maybe", "additionalContext": 7}))),
            hook(&print_json(
                json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}),
            )),
            hook("echo oops >&2; exit 1"),
            hook("kill -9 $$"),
            hook("/nonexistent/program"),
        ],
    )]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, None, "{out:?}");
    assert_eq!(out.reason, None);
    let w = &out.warnings;
    assert_eq!(w.len(), 8, "{w:#?}");
    assert!(w[0].contains("not a JSON object") && w[0].contains("not json {"));
    assert!(w[1].contains("not a JSON object"));
    assert!(w[2].contains("additionalContext") && w[3].contains("maybe"), "{w:#?}");
    assert!(w[4].contains("is for PostToolUse"));
    assert!(w[5].contains("exited with status 1: oops"));
    assert!(w[6].contains("killed by signal 9"));
    assert!(w[7].contains("exited with status 127"));

    // A missing project directory: the hook cannot start.
    let missing = dir.path().join("missing");
    let settings = HookSettings { pre_tool_use: vec![group(None, vec![hook("true")])], ..Default::default() };
    let r = HookRunner::new(settings, &missing).unwrap();
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, None);
    assert!(out.warnings[0].contains("could not be run"), "{:?}", out.warnings);
}

fn process_gone(pid: u32) -> bool {
    !crate::process::is_running(pid)
}

fn read_pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path).unwrap().split_whitespace().map(|p| p.parse().unwrap()).collect()
}

#[tokio::test]
async fn timeout_fails_closed_and_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let mut h = hook(&format!("sleep 5 & echo $! > '{p}'; echo $$ >> '{p}'; sleep 5; wait", p = pids.display()));
    h.timeout = 0.3;
    let r = runner(vec![group(Some("Bash"), vec![h])]);
    let start = Instant::now();
    let out = pre(&r, "Bash", dir.path()).await;
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
    assert_eq!(out.decision, Some(Decision::Deny));
    let reason = out.reason.unwrap();
    assert!(reason.contains("timed out after 0.3s") && reason.contains("sleep 5"), "{reason}");
    let pids = read_pids(&pids);
    assert_eq!(pids.len(), 2);
    let deadline = Instant::now() + Duration::from_secs(2);
    for pid in pids {
        while !process_gone(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(process_gone(pid), "process {pid} survived the timeout");
    }
}

#[tokio::test]
async fn timeout_allow_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = hook("sleep 5");
    h.timeout = 0.2;
    h.on_timeout = OnTimeout::Allow;
    let r = runner(vec![group(None, vec![h, hook(&print_json(json!({"permissionDecision": "allow"})))])]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, Some(Decision::Allow));
    assert_eq!(out.warnings.len(), 1);
    assert!(out.warnings[0].contains("timed out"), "{:?}", out.warnings);
}

#[tokio::test]
async fn matcher_filtering() {
    let r = runner(vec![
        group(Some("Bash|Write"), vec![hook("true")]),
        group(Some("mcp__srv__.*"), vec![hook("true")]),
        group(Some(""), vec![]),
    ]);
    assert!(r.has_hooks(HookEvent::PreToolUse, "Bash"));
    assert!(r.has_hooks(HookEvent::PreToolUse, "Write"));
    assert!(r.has_hooks(HookEvent::PreToolUse, "mcp__srv__x"));
    assert!(!r.has_hooks(HookEvent::PreToolUse, "BashX"));
    assert!(!r.has_hooks(HookEvent::PreToolUse, "Read"));
    assert!(!r.has_hooks(HookEvent::PostToolUse, "Bash"));

    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![
        group(Some("Write"), vec![hook("exit 2")]),
        group(Some("*"), vec![hook("echo '{\"permissionDecision\":\"ask\"}'")]),
    ]);
    assert_eq!(pre(&r, "Read", dir.path()).await.decision, Some(Decision::Ask));
    assert_eq!(pre(&r, "Write", dir.path()).await.decision, Some(Decision::Deny));
}

#[tokio::test]
async fn hooks_run_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![group(None, vec![hook("sleep 0.3"), hook("sleep 0.3")])]);
    let start = Instant::now();
    let out = pre(&r, "Bash", dir.path()).await;
    let took = start.elapsed();
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(took < Duration::from_millis(550), "took {took:?}");
}

#[tokio::test]
async fn stdin_env_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let dir_path: PathBuf = dir.path().canonicalize().unwrap();
    // The call runs in a subdirectory (a script's `chdir`); the hook
    // still runs in the project directory.
    let sub = dir_path.join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::env::set_var("WREPL_HOOK_TEST_SECRET", "hook-s3cret");
    let r = HookRunner::new(
        HookSettings {
            post_tool_use: vec![group(
                None,
                vec![hook("cat > \"$WREPL_PROJECT_DIR/post.json\"; pwd > pwd.txt; env > env.txt")],
            )],
            post_tool_use_failure: vec![group(None, vec![hook("cat > fail.json")])],
            ..Default::default()
        },
        &dir_path,
    )
    .unwrap();
    let c = ctx("Read", &sub);
    let out = r.post_tool_use(&c, &json!({"file_path": "a"}), &json!({"content": "x"})).await;
    assert_eq!(out, PostOutcome::default());
    let got: Value = serde_json::from_str(&std::fs::read_to_string(dir_path.join("post.json")).unwrap()).unwrap();
    assert_eq!(
        got,
        json!({
            "session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Read",
            "tool_input": {"file_path": "a"}, "tool_use_id": "call-1",
            "cwd": sub.to_str().unwrap(), "tool_response": {"content": "x"}
        })
    );
    assert_eq!(std::fs::read_to_string(dir_path.join("pwd.txt")).unwrap().trim(), dir_path.to_str().unwrap());
    assert!(!sub.join("pwd.txt").exists());
    let env = std::fs::read_to_string(dir_path.join("env.txt")).unwrap();
    assert!(!env.contains("hook-s3cret"), "a hook inherited a host secret:\n{env}");
    assert!(env.lines().any(|l| l == format!("WREPL_PROJECT_DIR={}", dir_path.display())), "{env}");
    for line in env.lines() {
        let name = line.split('=').next().unwrap_or_default();
        assert!(
            MINIMAL_ENV.contains(&name) || ["WREPL_PROJECT_DIR", "PWD", "SHLVL", "_", "OLDPWD"].contains(&name),
            "unexpected variable {line:?} in a hook's environment"
        );
    }

    r.post_tool_use_failure(&c, &json!({}), "boom").await;
    let got: Value = serde_json::from_str(&std::fs::read_to_string(dir_path.join("fail.json")).unwrap()).unwrap();
    assert_eq!(got["hook_event_name"], "PostToolUseFailure");
    assert_eq!(got["error"], "boom");
    assert!(got.get("tool_response").is_none());
}

#[tokio::test]
async fn continue_false_stops_whatever_else_was_said() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(vec![group(
        None,
        vec![
            hook(&print_json(json!({"continue": false, "stopReason": "the release is frozen",
                "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))),
            hook(&print_json(json!({"continue": false}))),
            hook(&print_json(json!({"continue": true, "systemMessage": "remember to lint"}))),
            hook(&print_json(json!({"continue": "no", "systemMessage": 7}))),
        ],
    )]);
    let out = pre(&r, "Bash", dir.path()).await;
    let stop = out.stop.expect("a hook said continue: false");
    let lines: Vec<&str> = stop.lines().collect();
    assert_eq!(lines[0], "the release is frozen");
    assert!(lines[1].starts_with("stopped by hook `printf"), "{stop}");
    assert_eq!(lines.len(), 2, "{stop}");
    assert!(out.warnings.iter().any(|w| w.ends_with(": remember to lint")), "{:?}", out.warnings);
    assert!(out.warnings.iter().any(|w| w.contains("`continue` is not a boolean")), "{:?}", out.warnings);
    assert!(out.warnings.iter().any(|w| w.contains("`systemMessage` is not a string")), "{:?}", out.warnings);
    // Post events stop too.
    let post = HookRunner::new(
        HookSettings {
            post_tool_use: vec![group(
                None,
                vec![hook(&print_json(json!({"continue": false, "stopReason": "enough"})))],
            )],
            ..Default::default()
        },
        dir.path(),
    )
    .unwrap();
    let out = post.post_tool_use(&ctx("Bash", dir.path()), &json!({}), &json!("ok")).await;
    assert_eq!(out.stop.as_deref(), Some("enough"));
    assert_eq!(out.block_reason, None);
    // No `continue`, no stop.
    let quiet = runner(vec![group(None, vec![hook(&print_json(json!({"permissionDecision": "deny"})))])]);
    assert_eq!(pre(&quiet, "Bash", dir.path()).await.stop, None);
}

#[tokio::test]
async fn post_hooks_block_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let mut slow = hook("sleep 5");
    slow.timeout = 0.2;
    let r = HookRunner::new(
        HookSettings {
            post_tool_use: vec![group(
                None,
                vec![
                    hook(&print_json(json!({"decision": "block", "reason": "lint failed",
                    "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see lint"}}))),
                    hook("echo 'secret leaked' >&2; exit 2"),
                    hook(&print_json(json!({"permissionDecision": "deny", "updatedInput": {"x": 1}}))),
                    slow,
                ],
            )],
            ..Default::default()
        },
        dir.path(),
    )
    .unwrap();
    let out = r.post_tool_use(&ctx("Bash", dir.path()), &json!({}), &json!("ok")).await;
    assert_eq!(out.additional_context, ["see lint"]);
    let block = out.block_reason.unwrap();
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 3, "{block}");
    assert_eq!(lines[0], "lint failed");
    assert_eq!(lines[1], "secret leaked");
    assert!(lines[2].contains("timed out"));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn large_output_is_capped_and_drained() {
    let dir = tempfile::tempdir().unwrap();
    // 3 MiB on stdout and stderr: the hook must not block on a full pipe.
    let r = runner(vec![group(None, vec![hook("head -c 3145728 /dev/zero >&2; head -c 3145728 /dev/zero; exit 0")])]);
    let out = pre(&r, "Bash", dir.path()).await;
    assert_eq!(out.decision, None);
    assert!(out.warnings[0].contains("output exceeds"), "{:?}", out.warnings);
}

#[test]
fn futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let r = HookRunner::new(HookSettings::default(), "/").unwrap();
    let c = ctx("Bash", Path::new("/"));
    let input = json!({});
    assert_send(&r.pre_tool_use(&c, &input));
    assert_send(&r.post_tool_use(&c, &input, &input));
    assert_send(&r.post_tool_use_failure(&c, &input, "e"));
}

#[test]
fn invalid_settings_rejected() {
    let mut h = hook("true");
    h.timeout = 0.0;
    assert!(
        HookRunner::new(HookSettings { pre_tool_use: vec![group(None, vec![h])], ..Default::default() }, "/").is_err()
    );
    assert!(HookRunner::new(
        HookSettings { post_tool_use: vec![group(Some("("), vec![hook("true")])], ..Default::default() },
        "/"
    )
    .is_err());
    assert_eq!(hook("x").kind, HookType::Command);
}

#[test]
fn matcher_semantics() {
    assert!(compile_matcher(None).unwrap().is_none());
    assert!(compile_matcher(Some("")).unwrap().is_none());
    assert!(compile_matcher(Some("*")).unwrap().is_none());
    let re = compile_matcher(Some("Bash|Write")).unwrap().unwrap();
    assert!(re.is_match("Bash") && re.is_match("Write"));
    assert!(!re.is_match("BashX") && !re.is_match("XWrite"));
    let re = compile_matcher(Some("mcp__srv__.*")).unwrap().unwrap();
    assert!(re.is_match("mcp__srv__a") && !re.is_match("mcp__other__a"));
}
