//! The `wrepl` command line, as a user runs it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn wrepl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wrepl")).args(args).stdin(Stdio::null()).output().expect("run wrepl")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn eval_persists_across_snippets() {
    let o = wrepl(&["eval", "-e", "let x = 41", "-e", "x + 1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().last(), Some("42"));
    let o = wrepl(&["eval", "-e", "const a = 1", "-e", "const a = 2; a"]);
    assert_eq!(stdout(&o).lines().last(), Some("2"));
    let o = wrepl(&["eval", "-e", "await new Promise(r => setTimeout(r, 10)); 7"]);
    assert_eq!(stdout(&o).trim(), "7");
}

#[test]
fn timeout_then_next_snippet_still_works() {
    let t = Instant::now();
    let o = wrepl(&["eval", "--timeout", "1000", "-e", "while(true){}", "-e", "'next ok'"]);
    // It needs about 1 s (the budget) plus process start.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(stderr(&o).contains("TimeoutError"), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "next ok");
    assert_eq!(o.status.code(), Some(1), "the first snippet was stopped");
}

#[test]
fn exit_status_is_1_when_any_snippet_failed() {
    // A failure in the middle: the rest still runs, and the status says so.
    let o = wrepl(&["eval", "-e", "1", "-e", "throw new Error('middle')", "-e", "'after'"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "1\nafter\n");
    assert!(stderr(&o).contains("Error: middle") && stderr(&o).contains("1 of 3 snippets failed"), "{}", stderr(&o));
    let o = wrepl(&["eval", "-e", "1", "-e", "throw new Error('last')"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Error: last"), "{}", stderr(&o));
    let o = wrepl(&["eval", "-e", "1", "-e", "2"]);
    assert!(o.status.success());
}

#[test]
fn sealed_sandbox_from_the_cli() {
    for code in ["import(\"x\")", "require(\"fs\")"] {
        let o = wrepl(&["eval", "-e", code]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("sealed sandbox"), "{}", stderr(&o));
    }
    let o = wrepl(&["eval", "-e", "typeof WebAssembly"]);
    assert_eq!(stdout(&o).trim(), "undefined");
}

#[test]
fn json_output_has_one_object_per_snippet() {
    let o = wrepl(&[
        "eval",
        "--json",
        "-e",
        "console.log('hi'); 5",
        "-e",
        "throw new TypeError('t')",
        "-e",
        "while(1){}",
        "--timeout",
        "200",
    ]);
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["result"], 5);
    assert_eq!(lines[0]["stdout"], "hi\n");
    assert_eq!(lines[0]["error"], serde_json::Value::Null);
    assert_eq!(lines[0]["timed_out"], false);
    assert_eq!(lines[1]["error"]["name"], "TypeError");
    assert_eq!(lines[2]["timed_out"], true);
    for l in &lines {
        for k in ["result", "stdout", "stderr", "error", "timed_out"] {
            assert!(l.get(k).is_some(), "{k} missing in {l}");
        }
    }
    assert_eq!(o.status.code(), Some(1));
    // Which snippet it was, and which call failed (with the path relative to its root).
    let o = wrepl(&["eval", "--json", "-e", "1", "-e", "await cat('no/such.txt')"]);
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!((lines[0]["snippet"].as_u64(), lines[1]["snippet"].as_u64()), (Some(0), Some(1)));
    assert_eq!(lines[0]["failed_calls"], serde_json::json!([]));
    let failed = &lines[1]["failed_calls"][0];
    assert_eq!((failed["tool"].as_str(), failed["kind"].as_str()), (Some("Read"), Some("not-found")), "{failed}");
    assert!(failed["message"].as_str().unwrap().starts_with("no/such.txt (in the root "), "{failed}");
    assert_eq!(o.status.code(), Some(1));
    // The inner calls, as tool_use/tool_result pairs.
    let o = wrepl(&["eval", "--json", "-e", "(await gl('*.none')).length"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{v}");
    assert_eq!((calls[0]["type"].as_str(), calls[0]["name"].as_str()), (Some("tool_use"), Some("Glob")), "{v}");
    assert_eq!(calls[1]["type"], "tool_result");
    assert_eq!(calls[1]["tool_use_id"], calls[0]["id"]);
    assert!(v["script_ms"].is_number() && v["wall_ms"].is_number(), "{v}");
}

#[test]
fn code_from_stdin() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .arg("eval")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"const n = 6\nn * 7\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o).trim(), "42");
}

#[test]
fn invalid_timeouts_are_rejected() {
    for t in ["0", "-5", "abc", "NaN"] {
        let o = wrepl(&["eval", "--timeout", t, "-e", "1"]);
        assert_eq!(o.status.code(), Some(2), "--timeout {t}");
        assert!(stderr(&o).contains("timeout"), "{}", stderr(&o));
    }
    // larger values are clamped, not rejected
    let o = wrepl(&["eval", "--timeout", "99999999", "-e", "1"]);
    assert!(o.status.success());
}

#[test]
fn memory_and_recursion_never_crash_the_host() {
    let o = wrepl(&["eval", "-e", "'x'.repeat(2**30)", "-e", "function f(n){return f(n+1)+1}; f(0)", "-e", "'alive'"]);
    assert_eq!(stdout(&o).trim(), "alive");
    assert!(stderr(&o).contains("RangeError"), "{}", stderr(&o));
}

#[test]
fn write_needs_allow_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wrepl"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = run(&["eval", "--allow", "Write", "-e", "await put(\"a.txt\",\"hi\"); await cat(\"a.txt\")"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "hi");
    std::fs::remove_file(dir.path().join("a.txt")).unwrap();
    let o = run(&["eval", "-e", "await put(\"a.txt\",\"hi\"); await cat(\"a.txt\")"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not granted"), "{}", stderr(&o));
    assert!(!dir.path().join("a.txt").exists());
    // a bad rule or settings file is a usage error
    let o = run(&["eval", "--allow", "Bash(unclosed", "-e", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    std::fs::write(dir.path().join("s.json"), r#"{"permissions": {"alow": []}}"#).unwrap();
    let o = run(&["eval", "--settings", "s.json", "-e", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("alow"), "{}", stderr(&o));
}

#[test]
fn types_prints_declarations_for_the_tools_and_shorthands() {
    let o = wrepl(&["types"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = stdout(&o);
    for needle in
        ["declare function Bash(", "declare function Read(", "declare function sh(", "declare function haiku("]
    {
        assert!(d.contains(needle), "missing {needle:?}");
    }
}

#[test]
fn mcp_config_offers_downstream_tools_deny_by_default() {
    let Some(bin) = crate::mcp_downstream::everything_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("mcp.json");
    let v = serde_json::json!({"mcpServers": {"everything": {"command": bin, "args": ["stdio"]}}});
    std::fs::write(&cfg, v.to_string()).unwrap();
    let cfg = cfg.to_str().unwrap();
    let o = wrepl(&[
        "eval",
        "--mcp-config",
        cfg,
        "--allow",
        "mcp__everything__echo",
        "-e",
        "await mcp__everything__echo({message: 'via cli'})",
        "-e",
        "await mcp__everything__get_sum({a: 1, b: 2})",
    ]);
    assert!(stdout(&o).contains("Echo: via cli"), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("mcp__everything__get-sum was not granted"), "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(1));
    let o = wrepl(&["types", "--mcp-config", cfg]);
    assert!(stdout(&o).contains("mcp__everything__echo"), "{}", stderr(&o));
}

#[test]
fn an_invalid_settings_file_states_its_reason_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    for (json, reason) in [
        (r#"{"permissions": {"allow": ["Bash(git"]}}"#, "unbalanced parentheses"),
        (r#"{"permissions": {"allow": [1]}}"#, "invalid type: integer `1`"),
    ] {
        std::fs::write(&file, json).unwrap();
        let o = wrepl(&["eval", "--settings", file.to_str().unwrap(), "-e", "1"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert_eq!(stderr(&o).matches(reason).count(), 1, "{}", stderr(&o));
    }
    // a bad rule on the command line, too
    let o = wrepl(&["eval", "--allow", "Bash(git", "-e", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("unbalanced parentheses").count(), 1, "{}", stderr(&o));
}

/// `wrepl` with `dir` as its working directory and HOME.
fn wrepl_at(dir: &std::path::Path, args: &[&str]) -> Output {
    wrepl_home(dir, dir, args)
}

/// `wrepl` in `cwd`, with HOME `home` (and no XDG_CONFIG_HOME, XDG_DATA_HOME
/// or WREPL_STORE: settings and the session store are under `home`).
fn wrepl_home(cwd: &std::path::Path, home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("WREPL_STORE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_claude_code_settings_file_from_a_real_project_loads_with_warnings_only() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let project = base.join("project");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::create_dir_all(base.join("shared")).unwrap();
    std::fs::write(base.join("shared/notes.txt"), "shared notes").unwrap();
    std::fs::write(project.join("secret.txt"), "s3cret").unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "env": {"DEBUG": "1", "PATH": "/nowhere"},
  "includeCoAuthoredBy": false,
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "printenv DEBUG > hook-env.txt"}]}]},
  "permissions": {
    "allow": ["Bash(echo *)", "Bash(printf:*)", "Bash(printenv DEBUG)", "WebFetch(domain:docs.rs)"],
    "deny": ["Read(./secret.txt)"],
    "additionalDirectories": ["../shared"],
    "defaultMode": "acceptEdits"
  }
}"#,
    )
    .unwrap();
    let code = "[(await Bash({command: 'echo hi'})).stdout.trim(), (await Bash({command: 'printf x'})).stdout, \
                await cat('../shared/notes.txt'), await cat('secret.txt').catch(e => e.kind), \
                (await Bash({command: 'printenv DEBUG'})).stdout.trim()].join('|')";
    for how in [vec!["--claude-settings"], vec!["--settings", ".claude/settings.json"]] {
        let mut args = vec!["eval"];
        args.extend(how.iter().copied());
        args.extend(["-e", code]);
        let o = wrepl_at(&project, &args);
        let err = stderr(&o);
        assert!(o.status.success(), "{how:?}: {err}");
        // `env` reaches Bash and hooks, but for PATH (refused: the commands
        // above still found echo and printf).
        assert_eq!(stdout(&o).trim(), "hi|x|shared notes|denied|1", "{how:?}: {err}");
        assert_eq!(std::fs::read_to_string(project.join("hook-env.txt")).unwrap(), "1\n");
        std::fs::remove_file(project.join("hook-env.txt")).unwrap();
        for named in ["env: PATH is not set", "includeCoAuthoredBy", "defaultMode \"acceptEdits\""] {
            assert!(err.contains(named), "{how:?}: {named} is warned about: {err}");
        }
        // WebFetch rules apply here (to fetch()): no warning names them.
        assert!(!err.contains("WebFetch"), "{how:?}: {err}");
        assert!(!err.contains("$schema"), "{err}");
    }
    // The user's settings are read when they lie outside the roots...
    let home = base.join("home");
    std::fs::create_dir_all(home.join(".config/wrepl")).unwrap();
    std::fs::write(home.join(".config/wrepl/settings.json"), r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#)
        .unwrap();
    let echo = "(await Bash({command: 'echo found'})).stdout.trim()";
    let o = wrepl_home(&project, &home, &["eval", "-e", echo]);
    assert_eq!(stdout(&o).trim(), "found", "{}", stderr(&o));
    assert!(stderr(&o).contains("settings from") && stderr(&o).contains(".config/wrepl/settings.json"));
    // ...and not when a root holds them: the tools could have written them.
    let base_root = base.to_str().unwrap();
    let o = wrepl_home(&project, &home, &["eval", "--root", base_root, "-e", echo]);
    assert!(stderr(&o).contains("not read: it lies inside a workspace root"), "{}", stderr(&o));
    assert_ne!(stdout(&o).trim(), "found", "{}", stderr(&o));
    // Nor may the tools create them for a later run.
    let write = "await Write({file_path: 'home/.config/wrepl/x/../settings.json', content: '{}'})\
                 .then(() => 'written', e => e.kind)";
    let o = wrepl_home(&base, &home, &["eval", "--root", base_root, "--allow", "Write", "-e", write]);
    assert_eq!(stdout(&o).trim(), "protected", "{}", stderr(&o));
}

#[test]
fn the_repl_takes_an_empty_history_flag_for_none() {
    // `--history ''` (the README's way to keep no history) parses; without a
    // terminal the REPL then says it needs one.
    let tmp = tempfile::tempdir().unwrap();
    let o = wrepl_at(tmp.path(), &["repl", "--history", ""]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("needs a terminal") && !err.contains("a value is required"), "{err}");
}

#[test]
fn contexts_and_forks_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let store = dir.join("s.sqlite3");
    let run = |args: &[&str]| {
        let mut all = vec!["eval", "--store", store.to_str().unwrap()];
        all.extend(args);
        let o = wrepl_at(&dir, &all);
        (o.status.code(), stdout(&o).trim().to_string(), stderr(&o))
    };
    let value = |args: &[&str]| {
        let (code, out, err) = run(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        out
    };
    value(&["--session", "p", "-e", "let x = 1"]);
    // Another context of the session: a log of its own.
    assert_eq!(value(&["--session", "p", "--context", "agent-1", "-e", "typeof x"]), "undefined");
    value(&["--session", "p", "--context", "agent-1", "-e", "let y = 2"]);
    assert_eq!(value(&["--session", "p", "-e", "[x, typeof y].join()"]), "1,undefined");
    assert_eq!(value(&["--session", "p", "--context", "agent-1", "-e", "y"]), "2");
    // A fork starts from the parent's log and records apart from it.
    assert_eq!(value(&["--session", "c", "--fork", "p", "-e", "x = x + 10"]), "11");
    assert_eq!(value(&["--session", "c", "-e", "x"]), "11");
    assert_eq!(value(&["--session", "p", "-e", "x"]), "1");
    assert_eq!(value(&["--session", "d", "--fork", "p:agent-1", "-e", "[y, typeof x].join()"]), "2,undefined");
    // A fork never overwrites a log, and needs a parent.
    let (code, _, err) = run(&["--session", "c", "--fork", "p", "-e", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("already has a log"), "{err}");
    assert_eq!(value(&["--session", "c", "-e", "x"]), "11");
    let (code, _, err) = run(&["--session", "e", "--fork", "nobody", "-e", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no session \"nobody\""), "{err}");
    let (code, _, err) = run(&["--context", "agent-1", "-e", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("give --session NAME"), "{err}");
}

#[test]
fn repo_hint_comes_from_the_projects_repository_or_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().canonicalize().unwrap().join("widget");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        project.join(".git/config"),
        "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://me:t0ken@github.com/acme/widget.git\n",
    )
    .unwrap();
    let show = "typeof repoHint === 'string' ? repoHint : 'none'";
    let o = wrepl_at(&project.join("src"), &["eval", "-e", show]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), format!("repo: {} (main; origin github.com/acme/widget)", project.display()));
    assert!(!stdout(&o).contains("t0ken"));
    let o = wrepl_at(&project, &["eval", "--repo-hint", "the widget repo", "-e", show]);
    assert_eq!(stdout(&o).trim(), "the widget repo", "{}", stderr(&o));
    let o = wrepl_at(&project, &["eval", "--repo-hint", "", "-e", show]);
    assert_eq!(stdout(&o).trim(), "none", "{}", stderr(&o));
    // The first root decides, not the working directory.
    let elsewhere = tmp.path().canonicalize().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let o = wrepl_at(&project, &["eval", "--root", elsewhere.to_str().unwrap(), "-e", show]);
    assert_eq!(stdout(&o).trim(), "none", "{}", stderr(&o));
}

#[test]
fn mcp_config_auto_finds_the_projects_mcp_json_and_expands_variables() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().canonicalize().unwrap();
    // The downstream server is wrepl itself (`wrepl serve` speaks MCP on stdio).
    std::fs::write(
        project.join(".mcp.json"),
        r#"{"mcpServers": {"inner": {"command": "${WREPL_TEST_BIN}", "args": ["serve", "--root", "${INNER_ROOT:-.}"]}}}"#,
    )
    .unwrap();
    let run = |env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wrepl"));
        c.args(["types", "--mcp-config", "auto"]).current_dir(&project).env("HOME", &project).stdin(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let o = run(&[("WREPL_TEST_BIN", env!("CARGO_BIN_EXE_wrepl"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("mcp__inner__repl"), "{}", stdout(&o));
    assert!(stderr(&o).contains(".mcp.json"), "the file found is named: {}", stderr(&o));
    // A variable that is not set (and has no default) is a clear error.
    let o = Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args(["types", "--mcp-config", "auto"])
        .current_dir(&project)
        .env_remove("WREPL_TEST_BIN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("WREPL_TEST_BIN is not set"), "{}", stderr(&o));
}

#[test]
fn typescript_runs_with_its_types_stripped_and_errors_point_at_its_lines() {
    let o = wrepl(&[
        "eval",
        "-e",
        "const n: number = 21; n * 2",
        "-e",
        "interface P { x: number }\nclass C implements P { private readonly x: number = 1; get(): number { return this.x! } }\nnew C().get() as number",
        "-e",
        "function g(a: string): never {\n  throw new Error('from line 2')\n}\ng('x')",
    ]);
    let out = stdout(&o);
    assert_eq!(out.lines().collect::<Vec<_>>(), ["42", "1"], "{}", stderr(&o));
    assert!(stderr(&o).contains("<repl>:2:13"), "the stack names the TypeScript's own line and column: {}", stderr(&o));
    // A construct with run-time meaning is refused, saying what to write.
    let o = wrepl(&["eval", "-e", "enum Color { Red }"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("enum") && stderr(&o).contains("use an object"), "{}", stderr(&o));
}

#[test]
fn bash_default_timeout_comes_from_settings_or_the_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let code = "await Bash({command: 'sleep 60'}).then(() => 'finished', e => e.kind + ': ' + e.message)";
    let root = dir.to_str().unwrap();
    let run = |extra_env: Option<&str>, settings: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wrepl"));
        c.args(["eval", "--root", root, "--allow", "Bash"]);
        if let Some(s) = settings {
            let f = dir.join("s.json");
            std::fs::write(&f, s).unwrap();
            c.arg("--settings").arg(f);
        }
        c.args(["-e", code]).env_remove("BASH_DEFAULT_TIMEOUT_MS").stdin(Stdio::null());
        if let Some(v) = extra_env {
            c.env("BASH_DEFAULT_TIMEOUT_MS", v);
        }
        c.output().unwrap()
    };
    let o = run(Some("300"), None);
    assert!(stdout(&o).contains("timeout: Bash timed out after its native timeout of 300 ms"), "{}", stderr(&o));
    // The settings key wins over the environment.
    let o = run(Some("300"), Some(r#"{"bashDefaultTimeoutMs": 400}"#));
    assert!(stdout(&o).contains("native timeout of 400 ms"), "{}{}", stdout(&o), stderr(&o));
    // A bad settings value is an error; a bad inherited variable is said
    // and set aside (or capped), and wrepl still starts.
    for settings in [r#"{"bashDefaultTimeoutMs": 0}"#, r#"{"bashDefaultTimeoutMs": 700000}"#] {
        let o = run(None, Some(settings));
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("bashDefaultTimeoutMs must be"), "{}", stderr(&o));
    }
    for (v, says) in [("soon", "ignored"), ("1800000", "using 600000")] {
        let o = Command::new(env!("CARGO_BIN_EXE_wrepl"))
            .args(["eval", "--root", root, "-e", "1"])
            .env("BASH_DEFAULT_TIMEOUT_MS", v)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success() && stderr(&o).contains(says), "{v}: {}", stderr(&o));
    }
}

#[test]
fn a_call_left_running_when_the_evaluation_ends_emits_an_aborted_error_event() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    // The script ends while its Bash call still runs: the call is abandoned.
    let o =
        wrepl(&["eval", "--root", root, "--progress", "--allow", "Bash", "-e", "Bash({command: 'sleep 30'}); 'left'"]);
    assert_eq!(stdout(&o).trim(), "left", "{}", stderr(&o));
    let err = stderr(&o);
    let events: Vec<&str> = err.lines().filter(|l| l.starts_with("[progress]") && l.contains(" Bash ")).collect();
    let last = events.last().unwrap_or_else(|| panic!("{err}"));
    assert!(last.contains(" Error ") && last.contains("aborted"), "{events:?}");
}

#[test]
fn the_text_cap_comes_from_the_flag_or_claude_repl_variant() {
    let run = |args: &[&str], variant: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wrepl"));
        c.args(args).stdin(Stdio::null()).env_remove("CLAUDE_REPL_VARIANT");
        if let Some(v) = variant {
            c.env("CLAUDE_REPL_VARIANT", v);
        }
        c.output().unwrap()
    };
    let code = "'x'.repeat(5000)";
    // trim1k: 1,000 characters, the marker stating the true total.
    let o = run(&["eval", "-e", code], Some("trim1k"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("showing 1000 of 5000 characters"), "{}", stdout(&o));
    // The flag wins over the variable.
    let o = run(&["eval", "--text-cap", "2000", "-e", code], Some("trim1k"));
    assert!(stdout(&o).contains("showing 2000 of 5000 characters"), "{}", stdout(&o));
    // Without either, the default (100,000) keeps it whole.
    let o = run(&["eval", "-e", code], None);
    assert_eq!(stdout(&o).trim().len(), 5000, "{}", stdout(&o));
    // A variant wrepl does not know, or a zero cap, is an error saying what is understood.
    for bad in ["fancy", "trimk", "trim0k"] {
        let o = run(&["eval", "-e", "1"], Some(bad));
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("trim<N>k") || stderr(&o).contains("at least 1"), "{bad}: {}", stderr(&o));
    }
}

#[test]
fn quiet_drops_the_notes_but_not_warnings_errors_or_output() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| wrepl_at(home.path(), args);
    let o = run(&["eval", "--session", "q", "-e", "let a = 1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Resumed: the note says what was restored.
    let o = run(&["eval", "--session", "q", "--snapshot-after", "never", "-e", "a + 1"]);
    assert_eq!(stdout(&o).trim(), "2");
    assert!(stderr(&o).contains("[wrepl] restored 1 block(s)"), "{}", stderr(&o));
    // --quiet: the same run prints no note; the result, a script's error and the summary still show.
    let o = run(&[
        "eval",
        "--quiet",
        "--session",
        "q",
        "--snapshot-after",
        "never",
        "-e",
        "a + 2",
        "-e",
        "throw new Error('shown')",
    ]);
    assert_eq!(stdout(&o).trim(), "3");
    assert!(!stderr(&o).contains("restored"), "{}", stderr(&o));
    assert!(stderr(&o).contains("Error: shown") && stderr(&o).contains("1 of 2 snippets failed"), "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line_definition() {
    // bash: the script defines the completion function, and bash takes it.
    let o = wrepl(&["completions", "bash"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let script = stdout(&o);
    assert!(script.contains("_wrepl()") && script.contains("serve") && script.contains("--allow"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wrepl.bash"), &script).unwrap();
    let b = Command::new("bash")
        .args(["-c", "source ./wrepl.bash && complete -p wrepl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&b.stdout).contains("-F _wrepl wrepl"), "{b:?}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = wrepl(&["completions", shell]);
        assert!(o.status.success() && stdout(&o).contains("wrepl"), "{shell}: {}", stderr(&o));
    }
    let o = wrepl(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "an unknown shell is refused");
    // The man page: roff with the name, the options and the subcommands.
    let o = wrepl(&["man"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    for want in [".TH wrepl 1", ".SH NAME", "\\-\\-allow", "serve", "completions"] {
        assert!(page.contains(want), "{want:?} in the man page:\n{page}");
    }
}

#[test]
fn images_are_described_or_saved_never_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0u8..200).collect::<Vec<_>>());
    std::fs::write(dir.path().join("p.png"), &png).unwrap();
    let code = "(await Read({file_path: 'p.png'})).bytes";
    let o = wrepl_at(dir.path(), &["eval", "-e", code]);
    assert_eq!(stdout(&o).trim(), "208");
    assert!(
        stderr(&o).contains("holds an image (image/png, 208 bytes)") && stderr(&o).contains("--media-dir"),
        "{}",
        stderr(&o)
    );
    let o = wrepl_at(dir.path(), &["eval", "--media-dir", "out", "-e", code]);
    assert!(stderr(&o).contains("saved to out/snippet0-1.png"), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.path().join("out/snippet0-1.png")).unwrap(), png, "the saved bytes are the image's");
    let o = wrepl_at(dir.path(), &["eval", "--json", "--media-dir", "j", "-e", code]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["media"][0]["type"], "image");
    assert_eq!(v["media"][0]["bytes"], 208);
    assert_eq!(v["media"][0]["file"], "j/snippet0-1.png");
}

#[test]
fn a_boundary_id_continues_its_context_and_a_new_one_starts_fresh() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = wrepl_at(home.path(), args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    assert_eq!(run(&["eval", "--session", "s", "--boundary", "b1", "-e", "let x = 1; x"]), "1");
    assert_eq!(run(&["eval", "--session", "s", "--boundary", "b1", "-e", "x + 1"]), "2", "the same id continues");
    assert_eq!(
        run(&["eval", "--session", "s", "--boundary", "b2", "-e", "typeof x"]),
        "undefined",
        "a new id starts fresh"
    );
    assert_eq!(run(&["eval", "--session", "s", "-e", "typeof x"]), "undefined", "the main boundary is another");
    assert_eq!(run(&["eval", "--session", "s", "--boundary", "b1", "-e", "x + 2"]), "3", "an earlier id continues");
    // Each boundary has its log, and its blocks record the boundary.
    let list = run(&["log", "list"]);
    assert!(list.contains("s.main.b1") && list.contains("s.main.b2"), "{list}");
    let blocks = run(&["log", "export", "s.main.b1", "--format", "jsonl"]);
    let recorded: Vec<serde_json::Value> = blocks
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["type"] == "block")
        .collect();
    assert_eq!(recorded.len(), 3, "{blocks}");
    assert!(recorded.iter().all(|b| b["boundary"] == "b1"), "{blocks}");
    // Without --session it is refused, as --context is.
    let o = Command::new(env!("CARGO_BIN_EXE_wrepl")).args(["eval", "--boundary", "b1", "-e", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give --session NAME"), "{}", stderr(&o));
}

#[test]
fn a_long_failed_call_message_is_cut_with_a_marker_in_failed_calls() {
    let dir = tempfile::tempdir().unwrap();
    let o = wrepl_at(dir.path(), &["eval", "--json", "-e", "await cat('x'.repeat(600) + '.txt')"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap_or_default()).unwrap();
    let cut = v["failed_calls"][0]["message"].as_str().unwrap_or_default();
    assert!(cut.contains("…[cut: ") && cut.ends_with("the whole message is in calls]"), "{cut}");
    let whole = v["calls"].as_array().unwrap().iter().find(|c| c["type"] == "tool_result").unwrap();
    assert!(whole.to_string().contains(&"x".repeat(600)), "{whole}");
}
