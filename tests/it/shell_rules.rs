//! Bash permission rules on the real shell parser, end to end (issue 13 §3):
//! every bypass class of an allow rule is refused and its side effect does
//! not happen; every wrapper and unknown word is denied by a deny rule and
//! the file survives; messages name the construct and the narrowest rule.
//! The REPLs here have no approver, so `ask` is a denial.

use std::path::Path;

use serde_json::{json, Value};
use wrepl::Repl;

use crate::support::*;

const CATCH: &str = "catch (e) { ({ kind: e.kind, message: e.message }) }";

async fn repl(root: &Path, allow: &[&str], deny: &[&str]) -> Repl {
    builder()
        .roots([root])
        .allow(allow.iter().copied())
        .deny(deny.iter().copied())
        .session_id("shell-rules")
        .build()
        .await
        .expect("build")
}

/// Run `command` through the Bash tool; the result value (stdout) or the
/// refusal's `{kind, message}`.
async fn run(r: &mut Repl, command: &str) -> Value {
    let code = format!("try {{ await sh({}) }} {CATCH}", serde_json::to_string(command).unwrap());
    ok(&ev(r, &code).await)
}

fn git_repo(root: &Path) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).current_dir(root).output().expect("git is installed");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["config", "user.email", "t@example.com"]);
    git(&["config", "user.name", "t"]);
    std::fs::write(root.join("tracked.txt"), "one\n").unwrap();
    git(&["add", "tracked.txt"]);
    git(&["commit", "-qm", "init"]);
}

/// Each bypass class from the issue, written to create `pwned` if it ran,
/// with the words the refusal must name.
const BYPASSES: &[(&str, &str)] = &[
    ("git status # it's a comment\ntouch pwned", "a comment `#`"),
    ("git status $'\\'' ; touch pwned", "ANSI-C quoting"),
    ("git status <<EOF\n$(touch pwned)\nEOF", "here-document"),
    ("git status ${x:-$(touch pwned)}", "parameter expansion `${x:-$(touch pwned)}`"),
    ("git status $((1+$(touch pwned)))", "arithmetic"),
    ("git status `touch pwned`", "backticks"),
    ("git status $(touch pwned)", "command substitution `$(…)`"),
    ("git status \"$(touch pwned)\"", "command substitution `$(…)`"),
    ("git status <(touch pwned)", "process substitution"),
    ("git status; touch pwned", "`touch pwned` is not covered"),
    ("git status\ntouch pwned", "`touch pwned` is not covered"),
    ("git status | touch pwned", "`touch pwned` is not covered"),
    ("git status && touch pwned", "`touch pwned` is not covered"),
    ("git status || touch pwned", "`touch pwned` is not covered"),
    ("git status |& touch pwned", "`touch pwned` is not covered"),
    ("git status & touch pwned", "background"),
    ("git status > pwned", "output redirection `>pwned`"),
    ("git status 2>&1 >> pwned", "output redirection `>>pwned`"),
    ("git status &> pwned", "output redirection `&>pwned`"),
    ("git status <<< x; touch pwned", "here-string"),
    ("eval touch pwned", "`eval`"),
    ("bash -c 'touch pwned'", "`bash -c`"),
    ("X=$(touch pwned) git status", "variable assignment"),
    ("git status\r\ntouch pwned", "control character"),
    ("f() { touch pwned; }; f", "function definition"),
    ("(touch pwned)", "subshell"),
    // brush alone reads `\$'` as ANSI-C quoting; bash runs the second line.
    ("git status \\$'\\'\\'\ntouch pwned\n'", "could not be verified"),
];

#[tokio::test(flavor = "multi_thread")]
async fn allow_rule_bypasses_are_refused_and_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    git_repo(dir.path());
    // eval and bash are allowed too: they still cannot match.
    let mut r = repl(dir.path(), &["Bash(git status:*)", "Bash(eval:*)", "Bash(bash:*)"], &[]).await;
    let pwned = dir.path().join("pwned");
    for (command, named) in BYPASSES {
        let v = run(&mut r, command).await;
        assert_eq!(v["kind"], "denied", "{command:?} ran: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{command:?}: the refusal does not name {named:?}: {message}");
        assert!(!pwned.exists(), "{command:?} created the file");
    }
    // The same refusal without the extra rules.
    let mut r = repl(dir.path(), &["Bash(git status:*)"], &[]).await;
    for (command, _) in BYPASSES {
        assert_eq!(run(&mut r, command).await["kind"], "denied", "{command:?}");
        assert!(!pwned.exists(), "{command:?} created the file");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_commands_run() {
    let dir = tempfile::tempdir().unwrap();
    git_repo(dir.path());
    std::fs::write(dir.path().join("tracked.txt"), "two\n").unwrap();
    let mut r = repl(dir.path(), &["Bash(git status:*)", "Bash(git diff:*)"], &[]).await;
    let v = run(&mut r, "git status").await;
    assert!(v.as_str().is_some_and(|s| s.contains("tracked.txt")), "{v}");
    let v = run(&mut r, "git status --short && git diff").await;
    let out = v.as_str().unwrap_or_else(|| panic!("refused: {v}"));
    assert!(out.contains(" M tracked.txt") && out.contains("+two"), "{out}");
    // quoting and spacing do not change the words; a redirection to a descriptor is fine
    let v = run(&mut r, "git  'status'  --short 2>&1 | git diff --stat").await;
    assert!(v.as_str().is_some_and(|s| s.contains("tracked.txt")), "{v}");
}

/// Each way to run `rm f` that a plain `rm` deny rule must still see.
const EVASIONS: &[&str] = &[
    "nice rm f",
    "nice -n 5 rm f",
    "timeout 5 rm f",
    "timeout -s KILL 5 rm f",
    "env rm f",
    "env -i PATH=/usr/bin:/bin rm f",
    "command rm f",
    "nohup rm f",
    "sudo rm f",
    "stdbuf -o0 rm f",
    "setsid -w rm f",
    "$'rm' f",
    "\"r\"\"m\" f",
    "\\rm f",
    "eval rm f",
    "eval 'rm f'",
    "bash -c 'rm f'",
    "sh -c 'ls; rm f'",
    "x=rm; $x f",
    "echo f | xargs rm",
    "echo f | xargs -I{} rm {}",
    "find . -name f -exec rm {} \\;",
    "echo rm f | sh",
    "/bin/rm f",
    "/usr/bin/env rm f",
    "ls && rm f",
    "ls; (rm f)",
    "echo $(rm f)",
    "if true; then rm f; fi",
    "r? f",
    "trap 'rm f' EXIT",
    "watch -n 1 rm f",
    "x='a[$(rm f)]'; echo $((x))",
    "echo \\$'\\'\\'\nrm f\n'",
];

#[tokio::test(flavor = "multi_thread")]
async fn deny_rules_see_through_wrappers_and_unknown_words() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    std::fs::write(&f, "keep").unwrap();
    let mut r = repl(dir.path(), &["Bash"], &["Bash(rm:*)"]).await;
    for command in EVASIONS {
        let v = run(&mut r, command).await;
        assert_eq!(v["kind"], "denied", "{command:?} ran: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains("denied by the rule \"Bash(rm:*)\""), "{command:?}: {message}");
        assert!(f.exists(), "{command:?} removed the file");
    }
    // The failing part is named.
    let v = run(&mut r, "ls; nice -n 5 rm -f f").await;
    assert!(v["message"].as_str().unwrap().contains("it matches `rm -f f`"), "{v}");
    let v = run(&mut r, "x=rm; $x f").await;
    assert!(v["message"].as_str().unwrap().contains("`$x` is only known when it runs"), "{v}");
    // Other commands still run.
    assert_eq!(run(&mut r, "ls f && echo rm").await, json!("f\nrm\n"));
    assert_eq!(run(&mut r, "rmdir --version >/dev/null && echo ok").await, json!("ok\n"));
    assert!(f.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_name_the_narrowest_rule() {
    let dir = tempfile::tempdir().unwrap();
    git_repo(dir.path());
    let mut r = repl(dir.path(), &["Bash(git status:*)"], &[]).await;
    let v = run(&mut r, "git status && git push origin main").await;
    let m = v["message"].as_str().unwrap();
    assert!(m.contains("`git push origin main` is not covered by an allow rule"), "{m}");
    assert!(m.contains("--allow 'Bash(git push:*)'"), "{m}");
    assert!(!m.contains("--allow 'Bash')"), "{m}");
    let v = run(&mut r, "ls -la /").await;
    assert!(v["message"].as_str().unwrap().contains("--allow 'Bash(ls:*)'"), "{v}");
    // A construct no narrower rule can cover says so.
    let v = run(&mut r, "git status $(id)").await;
    let m = v["message"].as_str().unwrap();
    assert!(m.contains("command substitution `$(…)` cannot match an allow rule (in `git status $(id)`)"), "{m}");
    assert!(m.contains("no narrower rule covers"), "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rules_must_name_a_tool() {
    let dir = tempfile::tempdir().unwrap();
    for (rule, hint) in
        [("write", "did you mean \"Write\"?"), ("bash(ls:*)", "did you mean \"Bash\"?"), ("Grpe", "\"Grep\"")]
    {
        let e = builder().roots([dir.path()]).allow([rule]).build().await.expect_err("refused");
        assert!(e.to_string().contains(hint), "{rule}: {e}");
        let e = builder().roots([dir.path()]).deny([rule]).build().await.expect_err("refused");
        assert!(e.to_string().contains(hint), "{rule}: {e}");
    }
    // Names with their own prefixes, and wrepl's own tools, are fine.
    for rule in ["mcp__srv__tool", "mcp__srv", "eval_registered__x", "repl", "chdir", "Bash(git diff *)"] {
        builder().roots([dir.path()]).allow([rule]).build().await.expect(rule);
    }
    // Shell syntax in a shell rule is an error, not a rule that matches nothing.
    let e = builder().roots([dir.path()]).allow(["Bash(git status && git diff)"]).build().await.expect_err("refused");
    assert!(e.to_string().contains("shell syntax"), "{e}");
}
