//! Integrity and robustness as a user meets them on the command line: a
//! forged or truncated log is never replayed, one writer per session, `log`
//! commands tell the truth and create nothing, a stopped evaluation does not
//! eat the next one's budget, and the terminal only gets printable text.
//! The log and lease tests run on SQLite and on PostgreSQL.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::on_both;
use crate::sessions::Backend;
use crate::support::{err_text, out, wrepl_in};
use std::time::{Duration, Instant};

fn spawn_in(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to a minute) until some process holds `session`'s lease.
fn wait_for_lease(b: &Backend, session: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = b.lease_pid(session) {
            return pid;
        }
        assert!(Instant::now() < deadline, "nobody took the lease of {session}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

on_both!(a_forged_result_is_never_replayed, forged_result);

fn forged_result(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "genuine").unwrap();
    let s = &b.arg();
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "t", "-e", "let v = await cat('f.txt'); v"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "genuine");
    // Forge the recorded result, as an attacker with the store would.
    let forged = b.exec(
        "UPDATE events SET json = replace(json, 'genuine', 'FORGED!') WHERE session = 't' AND json LIKE '%genuine%'",
        "UPDATE wrepl_events SET json = replace(json, 'genuine', 'FORGED!') WHERE session = 't' AND json LIKE '%genuine%'",
    );
    assert_eq!(forged, 1, "the recorded result was forged");

    // Resuming refuses, names the first bad event, prints nothing forged.
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "t", "-e", "v"]);
    assert_eq!(o.status.code(), Some(2), "{}", err_text(&o));
    assert!(err_text(&o).contains("failed verification at event") && err_text(&o).contains("hash mismatch"));
    assert!(out(&o).is_empty(), "nothing was evaluated: {}", out(&o));

    // --on-tamper fresh: the log is set aside, the session starts empty.
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "t", "--on-tamper", "fresh", "-e", "typeof v"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "undefined");
    assert!(err_text(&o).contains("moved aside as \"t.tampered-"), "{}", err_text(&o));
    let o = wrepl_in(dir.path(), &["log", "list", "--store", s]);
    let aside =
        out(&o).lines().find(|l| l.starts_with("t.tampered-")).map(|l| l.split('\t').next().unwrap().to_string());
    let aside = aside.unwrap_or_else(|| panic!("{}", out(&o)));
    let o = wrepl_in(dir.path(), &["log", "verify", &aside, "--store", s]);
    assert_eq!(o.status.code(), Some(1), "the evidence is kept as it was: {}", out(&o));
    let o = wrepl_in(dir.path(), &["log", "verify", "t", "--store", s]);
    assert!(o.status.success(), "{}", out(&o));
}

on_both!(a_truncated_log_is_never_replayed, truncated_log);

fn truncated_log(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = &b.arg();
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "t", "-e", "let a = 1", "-e", "a = 2"]);
    assert!(o.status.success(), "{}", err_text(&o));
    // Drop the newest block: the chain that is left is intact on its own.
    let gone = b.exec(
        "DELETE FROM events WHERE session = 't' AND block = 1",
        "DELETE FROM wrepl_events WHERE session = 't' AND block = 1",
    );
    assert!(gone > 0);
    let o = wrepl_in(dir.path(), &["log", "verify", "t", "--store", s]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("newest events were removed"), "{}", out(&o));
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "t", "-e", "a"]);
    assert_eq!(o.status.code(), Some(2), "{}", err_text(&o));
    assert!(err_text(&o).contains("failed verification"), "{}", err_text(&o));
}

#[test]
fn log_commands_tell_the_truth_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite3");
    let m = missing.to_str().unwrap();
    for args in [
        vec!["log", "list", "--store", m],
        vec!["log", "verify", "x", "--store", m],
        vec!["log", "show", "x", "--store", m],
        vec!["types", "--session", "x", "--store", m],
    ] {
        let o = wrepl_in(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", out(&o));
        assert!(err_text(&o).contains("no session store at"), "{args:?}: {}", err_text(&o));
        assert!(!missing.exists(), "{args:?} created the store");
    }
    let store = dir.path().join("s.sqlite3");
    let s = store.to_str().unwrap();
    assert!(wrepl_in(dir.path(), &["eval", "--store", s, "--session", "real", "-e", "1"]).status.success());
    for cmd in ["verify", "show"] {
        let o = wrepl_in(dir.path(), &["log", cmd, "nosuch", "--store", s]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", out(&o));
        assert!(err_text(&o).contains("no session named \"nosuch\""), "{}", err_text(&o));
        assert!(!out(&o).contains("intact"));
    }
    // A closed pipe (`| head -1`) ends any output command quietly: as the
    // default SIGPIPE does for other tools, never with a panic or an error.
    for args in [
        vec!["log", "show", "real", "--store", s],
        vec!["types"],
        vec!["eval", "-e", "'line\\n'.repeat(100000)", "-e", "1"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wrepl"))
            .args(&args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        use std::os::unix::process::ExitStatusExt;
        let quiet = o.status.success() || o.status.signal() == Some(libc::SIGPIPE);
        assert!(quiet, "{args:?}: {:?}: {}", o.status, err_text(&o));
        assert!(err_text(&o).is_empty(), "{args:?}: {}", err_text(&o));
    }
}

on_both!(one_writer_per_session, one_writer);

fn one_writer(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = &b.arg();
    // The first writer holds the session until a file appears.
    let hold = "while (!(await Glob({pattern: 'go'})).numFiles) await new Promise(r => setTimeout(r, 50)); 'first'";
    let first = spawn_in(dir.path(), &["eval", "--timeout", "600000", "--store", s, "--session", "w", "-e", hold]);
    let pid = wait_for_lease(&b, "w");
    assert_eq!(pid, first.id());

    // A second writer is refused at once, naming the holder.
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "w", "-e", "'second'"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(err_text(&o).contains(&format!("is in use by pid {pid}")), "{}", err_text(&o));
    // …or waits for it with --wait.
    let waiter = spawn_in(dir.path(), &["eval", "--wait", "--store", s, "--session", "w", "-e", "'second'"]);
    // Let it start waiting (if it had not yet, the test only waits less).
    std::thread::sleep(Duration::from_secs(1));
    assert!(waiter.id() > 0);
    std::fs::write(dir.path().join("go"), "").unwrap();
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", err_text(&first));
    let second = waiter.wait_with_output().unwrap();
    assert!(second.status.success(), "{}", err_text(&second));
    assert_eq!(out(&second).trim(), "second");
    // Restored by replay, or from a snapshot taken after the first block
    // (when it cost enough guest time to be worth one).
    let restored = err_text(&second);
    assert!(
        restored.contains("restored 1 block(s): 1 ok") || restored.contains("(after block 0), then 0 block(s)"),
        "{restored}"
    );
    // Two whole blocks, one after the other, and the chain verifies.
    let o = wrepl_in(dir.path(), &["log", "show", "w", "--store", s]);
    assert!(out(&o).contains("block 0 ") && out(&o).contains("block 1 "), "{}", out(&o));
    assert!(!out(&o).contains("block 2 "), "{}", out(&o));
    assert!(wrepl_in(dir.path(), &["log", "verify", "w", "--store", s]).status.success());
}

on_both!(a_dead_writers_lease_is_taken_over_and_recorded, dead_writer);

fn dead_writer(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = &b.arg();
    // Waits for a file that never comes (a promise that can never settle
    // would end the evaluation at once).
    let hang = "let before = 1; while (true) await new Promise(r => setTimeout(r, 50))";
    let mut first = spawn_in(dir.path(), &["eval", "--timeout", "600000", "--store", s, "--session", "d", "-e", hang]);
    let pid = wait_for_lease(&b, "d");
    first.kill().unwrap();
    first.wait().unwrap();
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "d", "-e", "'next'"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert!(
        err_text(&o).contains(&format!("took the session over from a stale writer (pid {pid}")),
        "{}",
        err_text(&o)
    );
    let o = wrepl_in(dir.path(), &["log", "show", "d", "--store", s]);
    assert!(out(&o).contains(&format!("lease taken over from pid {pid}")), "{}", out(&o));
    assert!(out(&o).contains("its process is gone"), "{}", out(&o));
    assert!(wrepl_in(dir.path(), &["log", "verify", "d", "--store", s]).status.success());
}

#[test]
fn a_stopped_evaluation_does_not_spill_into_the_next() {
    let dir = tempfile::tempdir().unwrap();
    // The issue's example: an endless async chain, stopped (by its budget or
    // by the heap it fills); the next snippet gets its own budget.
    let code = "async function f() { await null; return f() }; await f()";
    for timeout in ["100", "300"] {
        let o = wrepl_in(dir.path(), &["eval", "--timeout", timeout, "-e", code, "-e", "'alive'"]);
        assert!(err_text(&o).contains("TimeoutError") || err_text(&o).contains("out of memory"), "{}", err_text(&o));
        assert_eq!(out(&o).trim(), "alive", "{}", err_text(&o));
        assert_eq!(o.status.code(), Some(1), "the first snippet was stopped");
    }
    // Jobs the stopped snippet queued never run during a later one: the
    // counter they bump is the same in the second and the third snippet.
    // (More jobs than the 100,000 an earlier build drained after a stop;
    // the rest ran after the next snippet's own code.)
    let flood = "const bump = () => { globalThis.ran = (globalThis.ran || 0) + 1 }; \
                 for (let i = 0; i < 150000; i++) queueMicrotask(bump); while (true) {}";
    let o = wrepl_in(
        dir.path(),
        &["eval", "--timeout", "300", "-e", flood, "-e", "globalThis.ran || 0", "-e", "globalThis.ran || 0"],
    );
    assert!(err_text(&o).contains("TimeoutError"), "{}", err_text(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], lines[1], "jobs of the stopped snippet ran during the next one");
}

#[test]
fn the_terminal_gets_no_control_sequences() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evil.txt"), "title\x1b]0;pwned\x07 clip\x1b]52;c;aGk=\x07 clear\x1b[2J\r\n")
        .unwrap();
    let snippets = [
        "'\\x1b]52;c;aGk=\\x07 result'",
        "console.log(await cat('evil.txt')); 1",
        "const e = new Error('msg \\x1b[2J'); e.name = 'Name\\x1b]0;t\\x07'; throw e",
        "console.error('\\u009b31m c1'); 2",
    ];
    let mut args = vec!["eval"];
    for s in &snippets {
        args.extend(["-e", s]);
    }
    let o = wrepl_in(dir.path(), &args);
    for (name, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{name}: {text:?}");
    }
    let (so, se) = (out(&o), err_text(&o));
    assert!(so.contains("\\x1b]52;c;aGk=\\x07 result"), "{so}");
    assert!(so.contains("title\\x1b]0;pwned\\x07 clip\\x1b]52;c;aGk=\\x07 clear\\x1b[2J\\x0d"), "{so}");
    assert!(se.contains("Name\\x1b]0;t\\x07: msg \\x1b[2J"), "{se}");
    assert!(se.contains("\\u{9b}31m c1"), "{se}");
    // --raw prints what the script produced; --json escapes it as JSON does.
    let o = wrepl_in(dir.path(), &["eval", "--raw", "-e", snippets[0]]);
    assert!(o.stdout.starts_with(b"\x1b]52;c;aGk=\x07 result"), "{:?}", out(&o));
    let o = wrepl_in(dir.path(), &["eval", "--json", "-e", snippets[0]]);
    assert!(out(&o).contains("\\u001b]52;c;aGk=\\u0007 result"), "{}", out(&o));
}

#[test]
fn bad_settings_and_tool_panics_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, r#"[{"allow": ["Bash"]}]"#).unwrap();
    let o =
        wrepl_in(dir.path(), &["eval", "--settings", settings.to_str().unwrap(), "-e", "await sh('echo ran > ran')"]);
    assert_eq!(o.status.code(), Some(2), "{}", err_text(&o));
    assert!(err_text(&o).contains("settings: must be a JSON object, found an array"), "{}", err_text(&o));
    assert_eq!(err_text(&o).matches("must be a JSON object").count(), 1, "{}", err_text(&o));
    assert!(!dir.path().join("ran").exists());
    // Error messages quote what they read; control characters in it are shown escaped.
    std::fs::write(&settings, "{\"perm\\u001b]0;pwned\\u0007issions\": {}}").unwrap();
    let o = wrepl_in(dir.path(), &["eval", "--settings", settings.to_str().unwrap(), "-e", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", err_text(&o));
    assert!(!err_text(&o).chars().any(|c| c.is_control() && c != '\n'), "{:?}", err_text(&o));
    assert!(err_text(&o).contains("unknown field `perm\\x1b]0;pwned\\x07issions`"), "{}", err_text(&o));

    // A pathological glob is a tool error of a few lines, and the process lives on.
    let o = wrepl_in(dir.path(), &["eval", "-e", "await gl('*'.repeat(100000) + 'x')", "-e", "'alive'"]);
    assert_eq!(o.status.code(), Some(1), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "alive");
    assert!(err_text(&o).len() < 2000, "{} bytes on stderr", err_text(&o).len());
    assert!(err_text(&o).contains("the glob pattern is 100001 bytes long"), "{}", err_text(&o));
}
