//! The hostile-script suite: every `tests/hostile/*.js` file is one case, run
//! through the full pipeline (built-in tools, permissions, hooks) in a fresh
//! context with a fresh workspace.
//!
//! # Case format
//!
//! A case file starts with header lines `// key: value` (the header ends at the
//! first line that is not a `//` comment); the rest of the file is the code of
//! one evaluation. Keys:
//!
//! - `title: <text>` — what the case does (required).
//! - `expect: <outcome>` (required, exactly one):
//!   - `error /re/` — the evaluation fails and `"<name>: <message>"` matches `re`;
//!   - `result <json>` — it succeeds and the result value equals this JSON;
//!   - `result-matches /re/` — it succeeds and the result text matches `re`;
//!   - `ok` — it succeeds (any value);
//!   - `timeout` — the script budget or wall clock stopped it (`timed_out`);
//!   - `contained` — any outcome, as long as the invariants below hold.
//!
//!   A regex is written `/.../` or `/.../i` (case-insensitive), `regex` crate syntax.
//! - `expect-stdout: /re/`, `expect-stderr: /re/` — the console output matches.
//! - `then: <code>` with `then-expect: <outcome>` — a second evaluation in the same
//!   context, on one line (e.g. to show a tampered global was refreshed).
//! - `expect-reset: yes` — the case must report a fresh context (in its own
//!   result or in a later evaluation); `expect-reset: /re/` — and the reported
//!   reason matches `re`; `expect-reset: allowed` — it may.
//!   Without this key, neither evaluation may report one.
//! - `tools: <rule> ...` — extra allow rules (`Bash`, `Write`, `Edit`, ...). Without
//!   them only the read-only defaults apply (Read/Glob/Grep inside the workspace).
//! - `timeout: <ms>` — the script budget (default 2000).
//! - `settings: <json>` — the settings object (permissions, hooks), on one line.
//! - `setup: <key> ...` — workspace preparation before the case runs:
//!   - `symlink-escape`: `link` → the outside directory, `leak.txt` → the outside canary;
//!   - `dev-links`: `zero` → `/dev/zero`, `proc` → `/proc/self`;
//!   - `big-file`: `big.txt`, 40 MiB of text lines;
//!   - `many-lines`: `lines.txt`, 300,000 lines that all match `needle`;
//!   - `fifo`: `pipe`, a named pipe nobody writes to;
//!   - `files`: `a.txt` (`alpha`) and `sub/b.txt` (`beta`);
//!   - `symlink-loop`: `loop` → `.`, and `cyc1` ↔ `cyc2` (a cycle of links).
//!   - `protected-state`: wrepl's own state inside the root, protected as the
//!     CLI and the builder protect it: a compile cache `cache/` (`guest.cwasm`,
//!     `cache.key`, `pic.png`), a session store `state/sessions.sqlite3` with
//!     its `-wal` and `-shm`, `settings.json`, `mcp.json` and a hook script
//!     `hooks/guard.sh` (protected when the case's settings run it); links to
//!     them: `innocent` → `cache`, `readme.md` → `settings.json`, `db` → the
//!     store, `st` → `state`; and `notes.txt`, an ordinary file. Every file
//!     holds the marker `PROTECTED-STATE`. After the case, each protected file
//!     must have its bytes and no file may have appeared under `cache/` or `state/`.
//! - `known-bug: <one line>` — the case currently fails because of a real
//!   host/guest defect; a failure is reported (printed), not fatal. A known-bug
//!   case that passes fails the suite, so the marker is removed with the fix.
//!
//! The code may use `{{ROOT}}` and `{{OUTSIDE}}`, replaced by the absolute paths
//! of the workspace root and of the outside directory.
//!
//! # Invariants checked after every case
//!
//! 1. The evaluation returned, without a panic, within a wall-clock cap well
//!    above the case's budget (`hard_wall` of the REPL + 15 s).
//! 2. The expected outcome (and console expectations) hold.
//! 3. The same context still works: a follow-up `1 + 1` returns 2 (after `then`), with no
//!    fresh context reported unless `expect-reset` says so; and unless one was
//!    reported, a variable declared before the case (`hostileSentinel`) still exists.
//! 4. No side effect outside the workspace: each case has its own temporary
//!    directory holding the workspace `root/` and a sibling `outside/` with a
//!    canary file; afterwards the canary is unchanged and nothing else exists or
//!    changed outside `root/`. When the case grants no writing tool (`Write`,
//!    `Edit`, `Bash`) the workspace is unchanged too: denied calls have no effect.
//! 5. Host memory stays bounded: the suite runs in a process of its own, and
//!    its RSS (`VmRSS`, read after `malloc_trim` returns freed pages) after
//!    the whole suite is at most [`RSS_GROWTH_BOUND`] above what it was
//!    before. Each guest is
//!    capped at 64 MiB of QuickJS heap inside a 256 MiB linear memory, and at
//!    most [`PARALLEL`] contexts live at once, so a bounded host keeps well under
//!    the bound; a leak of a context per case (≥ 110 × tens of MiB) or of a
//!    hostile tool output (a 40 MiB file per read) would cross it.
//!
//! `HOSTILE_FILTER=<substring>` runs only the cases whose file name contains it;
//! `HOSTILE_VERBOSE=1` prints every case's outcome; `HOSTILE_REPEAT=<n>` runs the
//! list n times and prints the RSS after each pass (to tell a leak from
//! allocator high-water marks).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};
use wrepl::{EvalOptions, EvalResult, Repl, Settings};

use crate::support::builder;

/// How many cases run at once.
const PARALLEL: usize = 3;
/// Largest allowed growth of the process RSS over the whole suite.
const RSS_GROWTH_BOUND: u64 = 512 << 20;
/// Default script budget of a case.
const DEFAULT_BUDGET_MS: u64 = 2000;
/// Hard wall clock of one evaluation (ends inner calls that hang); no case
/// relies on it, so it is far above what any case needs on a loaded machine.
const HARD_WALL: Duration = Duration::from_secs(60);
/// Extra time on top of the hard wall before a case counts as hung.
const CAP_MARGIN: Duration = Duration::from_secs(15);
/// The canary's content.
const CANARY: &str = "canary: must never change\n";

#[derive(Debug, Clone)]
enum Expect {
    Error(Regex),
    Result(Value),
    ResultMatches(Regex),
    Ok,
    Timeout,
    Contained,
}

#[derive(Debug, Clone)]
enum Reset {
    Forbidden,
    Allowed,
    /// Required, and when a regex is given the reported reason must match it.
    Required(Option<Regex>),
}

#[derive(Debug, Clone)]
struct Case {
    file: String,
    title: String,
    expect: Expect,
    stdout: Option<Regex>,
    stderr: Option<Regex>,
    reset: Reset,
    tools: Vec<String>,
    budget_ms: u64,
    settings: String,
    setup: Vec<String>,
    known_bug: Option<String>,
    then: Option<String>,
    then_expect: Option<Expect>,
    code: String,
}

fn parse_regex(file: &str, s: &str) -> Result<Regex, String> {
    let s = s.trim();
    let (body, flags) = match s.strip_prefix('/') {
        Some(rest) => match rest.rfind('/') {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => return Err(format!("{file}: unterminated regex {s:?}")),
        },
        None => return Err(format!("{file}: a regex is written /.../, got {s:?}")),
    };
    let pattern = match flags {
        "" => body.to_string(),
        "i" => format!("(?i){body}"),
        other => return Err(format!("{file}: unknown regex flags {other:?}")),
    };
    Regex::new(&pattern).map_err(|e| format!("{file}: bad regex {s:?}: {e}"))
}

fn parse_expect(file: &str, value: &str) -> Result<Expect, String> {
    let (kind, arg) = value.split_once(' ').unwrap_or((value, ""));
    Ok(match kind {
        "error" => Expect::Error(parse_regex(file, arg)?),
        "result" => {
            Expect::Result(serde_json::from_str(arg).map_err(|e| format!("{file}: bad result JSON {arg:?}: {e}"))?)
        }
        "result-matches" => Expect::ResultMatches(parse_regex(file, arg)?),
        "ok" => Expect::Ok,
        "timeout" => Expect::Timeout,
        "contained" => Expect::Contained,
        other => return Err(format!("{file}: unknown expectation {other:?}")),
    })
}

fn parse_case(file: &str, text: &str) -> Result<Case, String> {
    let mut title = None;
    let mut expect = None;
    let mut case = Case {
        file: file.to_string(),
        title: String::new(),
        expect: Expect::Contained,
        stdout: None,
        stderr: None,
        reset: Reset::Forbidden,
        tools: Vec::new(),
        budget_ms: DEFAULT_BUDGET_MS,
        settings: "{}".into(),
        setup: Vec::new(),
        known_bug: None,
        then: None,
        then_expect: None,
        code: String::new(),
    };
    let mut body_start = text.len();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let Some(comment) = line.trim_end().strip_prefix("//") else {
            body_start = offset;
            break;
        };
        offset += line.len();
        let Some((key, value)) = comment.split_once(':') else { continue };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "title" => title = Some(value.to_string()),
            "expect" => {
                if expect.is_some() {
                    return Err(format!("{file}: more than one expect line"));
                }
                expect = Some(parse_expect(file, value)?);
            }
            "then" => case.then = Some(value.to_string()),
            "then-expect" => case.then_expect = Some(parse_expect(file, value)?),
            "expect-stdout" => case.stdout = Some(parse_regex(file, value)?),
            "expect-stderr" => case.stderr = Some(parse_regex(file, value)?),
            "expect-reset" => {
                case.reset = match value {
                    "yes" => Reset::Required(None),
                    "allowed" => Reset::Allowed,
                    "no" => Reset::Forbidden,
                    re if re.starts_with('/') => Reset::Required(Some(parse_regex(file, re)?)),
                    other => return Err(format!("{file}: expect-reset is yes, /regex/, allowed or no, got {other:?}")),
                }
            }
            "tools" => case.tools = value.split_whitespace().map(String::from).collect(),
            "timeout" => case.budget_ms = value.parse().map_err(|e| format!("{file}: bad timeout {value:?}: {e}"))?,
            "settings" => {
                Settings::from_json(value).map_err(|e| format!("{file}: bad settings: {e}"))?;
                case.settings = value.to_string();
            }
            "setup" => {
                for key in value.split_whitespace() {
                    if !SETUPS.contains(&key) {
                        return Err(format!("{file}: unknown setup {key:?}"));
                    }
                    case.setup.push(key.to_string());
                }
            }
            "known-bug" => case.known_bug = Some(value.to_string()),
            other => return Err(format!("{file}: unknown header key {other:?}")),
        }
    }
    case.title = title.ok_or_else(|| format!("{file}: missing title"))?;
    case.expect = expect.ok_or_else(|| format!("{file}: missing expect"))?;
    if case.then.is_some() != case.then_expect.is_some() {
        return Err(format!("{file}: `then` and `then-expect` go together"));
    }
    case.code = text[body_start..].to_string();
    if case.code.trim().is_empty() {
        return Err(format!("{file}: no code"));
    }
    Ok(case)
}

const SETUPS: &[&str] =
    &["symlink-escape", "dev-links", "big-file", "many-lines", "fifo", "files", "symlink-loop", "protected-state"];

/// The files of the `protected-state` setup (relative to the root) and their content.
const PROTECTED_STATE: &[(&str, &[u8])] = &[
    ("cache/guest.cwasm", b"WREPLCW1 PROTECTED-STATE compiled guest\n"),
    ("cache/cache.key", b"PROTECTED-STATE key material 0123456789abcdef\n"),
    ("cache/pic.png", b"\x89PNG\r\n\x1a\n PROTECTED-STATE image in the cache\n"),
    ("state/sessions.sqlite3", b"SQLite format 3\0 PROTECTED-STATE other sessions\n"),
    ("state/sessions.sqlite3-wal", b"PROTECTED-STATE wal\n"),
    ("state/sessions.sqlite3-shm", b"PROTECTED-STATE shm\n"),
    ("settings.json", b"{\"permissions\": {\"deny\": [\"Bash\"]}, \"x\": \"PROTECTED-STATE\"}\n"),
    ("mcp.json", b"{\"mcpServers\": {}, \"x\": \"PROTECTED-STATE\"}\n"),
    ("hooks/guard.sh", b"#!/bin/sh\n# PROTECTED-STATE hook\ncat > /dev/null\n"),
];

fn load_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/hostile");
    let filter = std::env::var("HOSTILE_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    files.sort();
    let mut errors = Vec::new();
    let mut cases = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        match parse_case(&name, &std::fs::read_to_string(&path).unwrap()) {
            Ok(c) if name.contains(&filter) => cases.push(c),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    assert!(errors.is_empty(), "malformed hostile cases:\n{}", errors.join("\n"));
    cases
}

/// A case's directories: `base/root` (the workspace) and `base/outside`.
struct Dirs {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

fn prepare(case: &Case) -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    // canonical, so resolved paths compare equal
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("canary.txt"), CANARY).unwrap();
    std::fs::create_dir(outside.join("dir")).unwrap();
    std::fs::write(outside.join("dir/secret.txt"), "TOP SECRET outside the workspace\n").unwrap();
    for key in &case.setup {
        match key.as_str() {
            "symlink-escape" => {
                std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
                std::os::unix::fs::symlink(outside.join("canary.txt"), root.join("leak.txt")).unwrap();
            }
            "dev-links" => {
                std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
                std::os::unix::fs::symlink("/proc/self", root.join("proc")).unwrap();
            }
            "big-file" => {
                let line = format!("{}\n", "b".repeat(1023));
                std::fs::write(root.join("big.txt"), line.repeat(40 << 10)).unwrap();
            }
            "many-lines" => {
                let mut s = String::with_capacity(300_000 * 24);
                for i in 0..300_000 {
                    s.push_str(&format!("needle line {i:07}\n"));
                }
                std::fs::write(root.join("lines.txt"), s).unwrap();
            }
            "fifo" => {
                let p = std::ffi::CString::new(root.join("pipe").as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: `p` is a valid NUL-terminated path.
                #[allow(unsafe_code)]
                let rc = unsafe { libc::mkfifo(p.as_ptr(), 0o600) };
                assert_eq!(rc, 0, "mkfifo");
            }
            "files" => {
                std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
                std::fs::create_dir(root.join("sub")).unwrap();
                std::fs::write(root.join("sub/b.txt"), "beta\n").unwrap();
            }
            "symlink-loop" => {
                std::os::unix::fs::symlink(".", root.join("loop")).unwrap();
                std::os::unix::fs::symlink("cyc2", root.join("cyc1")).unwrap();
                std::os::unix::fs::symlink("cyc1", root.join("cyc2")).unwrap();
            }
            "protected-state" => {
                for (rel, body) in PROTECTED_STATE {
                    let p = root.join(rel);
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(p, body).unwrap();
                }
                std::fs::write(root.join("notes.txt"), "an ordinary file naming PROTECTED-STATE\n").unwrap();
                for (link, target) in [
                    ("innocent", "cache"),
                    ("readme.md", "settings.json"),
                    ("db", "state/sessions.sqlite3"),
                    ("st", "state"),
                ] {
                    std::os::unix::fs::symlink(target, root.join(link)).unwrap();
                }
            }
            other => unreachable!("setup {other} was validated"),
        }
    }
    Dirs { _tmp: tmp, base, root, outside }
}

/// Every entry under `dir` (not following symlinks): kind, size and a content
/// digest for files, the target for links. `skip` is left out.
fn snapshot(dir: &Path, skip: Option<&Path>) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if Some(p.as_path()) == skip {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
            let ft = meta.file_type();
            let desc = if ft.is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).map(|t| t.display().to_string()).unwrap_or_default())
            } else if ft.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else if ft.is_file() {
                let digest = std::fs::read(&p).map(|b| format!("{:x}", Sha256::digest(&b))).unwrap_or_default();
                format!("file {} {digest}", meta.len())
            } else {
                format!("other {:?}", ft)
            };
            out.insert(p, desc);
        }
    }
    out
}

fn diff(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut d = Vec::new();
    for (p, v) in after {
        match before.get(p) {
            None => d.push(format!("new: {}", p.display())),
            Some(old) if old != v => d.push(format!("changed: {}", p.display())),
            _ => {}
        }
    }
    for p in before.keys().filter(|p| !after.contains_key(*p)) {
        d.push(format!("removed: {}", p.display()));
    }
    d
}

fn summary(r: &EvalResult) -> String {
    let err = r.error.as_ref().map(|e| format!("{}: {}", e.name, e.message));
    let text: String = r.text.chars().take(300).collect();
    let stderr: String = r.stderr.chars().take(300).collect();
    format!("error={err:?} text={text:?} timed_out={} reset={:?} stderr={stderr:?}", r.timed_out, r.context_reset)
}

/// Check one evaluation against an expectation; `Err` describes the mismatch.
fn check_expect(expect: &Expect, r: &EvalResult) -> Result<(), String> {
    let what = || summary(r);
    match expect {
        Expect::Error(re) => {
            let Some(e) = &r.error else { return Err(format!("expected an error, got {}", what())) };
            let line = format!("{}: {}", e.name, e.message);
            if !re.is_match(&line) {
                let head: String = line.chars().take(500).collect();
                return Err(format!("error {head:?} does not match {re}"));
            }
        }
        Expect::Result(v) => {
            if r.error.is_some() || r.result.as_ref() != Some(v) {
                return Err(format!("expected result {v}, got {}", what()));
            }
        }
        Expect::ResultMatches(re) => {
            if r.error.is_some() || !re.is_match(&r.text) {
                return Err(format!("expected a result matching {re}, got {}", what()));
            }
        }
        Expect::Ok => {
            if r.error.is_some() {
                return Err(format!("expected success, got {}", what()));
            }
        }
        Expect::Timeout => {
            if !r.timed_out {
                return Err(format!("expected a timeout, got {}", what()));
            }
        }
        Expect::Contained => {}
    }
    Ok(())
}

/// Check the outcome of the case's evaluation; `Err` describes a violation.
fn check_outcome(case: &Case, r: &EvalResult) -> Result<(), String> {
    check_expect(&case.expect, r)?;
    if let Some(re) = &case.stdout {
        if !re.is_match(&r.stdout) {
            let head: String = r.stdout.chars().take(300).collect();
            return Err(format!("stdout {head:?} does not match {re}"));
        }
    }
    if let Some(re) = &case.stderr {
        if !re.is_match(&r.stderr) {
            let head: String = r.stderr.chars().take(300).collect();
            return Err(format!("stderr {head:?} does not match {re}"));
        }
    }
    Ok(())
}

async fn build_repl(case: &Case, dirs: &Dirs) -> Repl {
    let mut b = builder()
        .roots([dirs.root.as_path()])
        .settings(Settings::from_json(&case.settings).expect("settings were validated"))
        .allow(case.tools.iter().cloned())
        .session_id(format!("hostile-{}", case.file))
        .with_limits(|l| l.hard_wall = HARD_WALL);
    if case.setup.iter().any(|s| s == "protected-state") {
        // As the CLI protects its settings file and MCP configuration, and
        // the builder its session store and the engine's compile cache (the
        // hook script is protected by the builder from the case's settings).
        b = b
            .protect(dirs.root.join("cache"))
            .protect(dirs.root.join("settings.json"))
            .protect(dirs.root.join("mcp.json"))
            .protect_store(dirs.root.join("state/sessions.sqlite3"));
    }
    b.build().await.expect("repl")
}

/// The bytes (or absence) of the `protected-state` files a case must leave
/// alone, and the names under `cache/` and `state/`.
type ProtectedSnapshot = (Vec<(String, Option<Vec<u8>>)>, Vec<String>);

/// A [`ProtectedSnapshot`] of the root, for cases with the `protected-state` setup.
fn protected_snapshot(case: &Case, root: &Path) -> Option<ProtectedSnapshot> {
    if !case.setup.iter().any(|s| s == "protected-state") {
        return None;
    }
    let files = PROTECTED_STATE
        .iter()
        .filter(|(rel, _)| *rel != "hooks/guard.sh" || case.settings.contains("guard.sh"))
        .map(|(rel, _)| (rel.to_string(), std::fs::read(root.join(rel)).ok()))
        .collect();
    let mut names = Vec::new();
    for dir in ["cache", "state"] {
        for e in std::fs::read_dir(root.join(dir)).into_iter().flatten().flatten() {
            names.push(format!("{dir}/{}", e.file_name().to_string_lossy()));
        }
    }
    names.sort();
    Some((files, names))
}

/// Run one case and check every invariant; `Err` lists the violations.
async fn run_case(case: Case) -> Result<(), String> {
    let dirs = prepare(&case);
    let outside_before = snapshot(&dirs.base, Some(&dirs.root));
    let root_before = snapshot(&dirs.root, None);
    let protected_before = protected_snapshot(&case, &dirs.root);
    let code = case
        .code
        .replace("{{ROOT}}", &dirs.root.display().to_string())
        .replace("{{OUTSIDE}}", &dirs.outside.display().to_string());
    let mut repl = build_repl(&case, &dirs).await;
    let cap = HARD_WALL + CAP_MARGIN;
    // A variable that must survive the case unless a fresh context is reported.
    let sentinel = repl.eval("let hostileSentinel = 7", EvalOptions::default()).await;
    if !sentinel.as_ref().is_ok_and(|r| r.error.is_none()) {
        return Err(format!("the sentinel could not be set: {sentinel:?}"));
    }
    let budget = Duration::from_millis(case.budget_ms);
    let mut problems = Vec::new();

    let started = Instant::now();
    let res =
        tokio::time::timeout(cap, repl.eval(&code, EvalOptions { timeout: Some(budget), ..Default::default() })).await;
    let res = match res {
        Err(_) => return Err(format!("the evaluation did not return within {cap:?}")),
        Ok(Err(e)) => return Err(format!("the REPL API failed: {e}")),
        Ok(Ok(r)) => r,
    };
    let elapsed = started.elapsed();
    if std::env::var_os("HOSTILE_VERBOSE").is_some() {
        println!("{}: {} ({elapsed:?})", case.file, summary(&res));
    }
    if let Err(e) = check_outcome(&case, &res) {
        problems.push(e);
    }

    let mut resets: Vec<String> = res.context_reset.iter().cloned().collect();
    if let (Some(then), Some(expect)) = (&case.then, &case.then_expect) {
        match tokio::time::timeout(cap, repl.eval(then, EvalOptions::default())).await {
            Err(_) => problems.push("the `then` evaluation hung".into()),
            Ok(Err(e)) => problems.push(format!("the `then` evaluation failed at the API: {e}")),
            Ok(Ok(t)) => {
                if let Err(e) = check_expect(expect, &t) {
                    problems.push(format!("then: {e}"));
                }
                if t.context_reset.is_some() && matches!(case.reset, Reset::Forbidden) {
                    problems.push(format!("the `then` evaluation ran in a fresh context: {:?}", t.context_reset));
                }
                resets.extend(t.context_reset.iter().cloned());
            }
        }
    }
    let follow = tokio::time::timeout(cap, repl.eval("1 + 1", EvalOptions::default())).await;
    match follow {
        Err(_) => problems.push("the follow-up evaluation hung".into()),
        Ok(Err(e)) => problems.push(format!("the follow-up evaluation failed at the API: {e}")),
        Ok(Ok(f)) => {
            resets.extend(f.context_reset.iter().cloned());
            if f.error.is_some() || f.result != Some(serde_json::json!(2)) {
                problems.push(format!("the follow-up `1 + 1` did not return 2: {}", summary(&f)));
            }
            if f.context_reset.is_some() && matches!(case.reset, Reset::Forbidden) {
                problems.push(format!("the follow-up ran in a fresh context: {:?}", f.context_reset));
            }
        }
    }
    if resets.is_empty() {
        match tokio::time::timeout(cap, repl.eval("typeof hostileSentinel", EvalOptions::default())).await {
            Ok(Ok(s)) if s.result == Some(serde_json::json!("number")) => {}
            other => problems.push(format!(
                "the sentinel check failed (the context was replaced without saying so, or is broken): {:?}",
                other.map(|r| r.map(|r| summary(&r)))
            )),
        }
    }
    match &case.reset {
        Reset::Forbidden if res.context_reset.is_some() => {
            problems.push(format!("unexpected fresh context: {:?}", res.context_reset))
        }
        Reset::Required(_) if resets.is_empty() => problems.push("expected a fresh context to be reported".into()),
        Reset::Required(Some(re)) if !resets.iter().any(|r| re.is_match(r)) => {
            problems.push(format!("no reported fresh context matches {re}: {resets:?}"))
        }
        _ => {}
    }
    drop(repl);

    // Give killed process groups (Bash, hooks) a moment to go away.
    if case.tools.iter().any(|t| t.starts_with("Bash")) || case.settings.contains("hooks") {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let canary = std::fs::read_to_string(dirs.outside.join("canary.txt"));
    if canary.as_deref().ok() != Some(CANARY) {
        problems.push(format!("the canary changed: {canary:?}"));
    }
    let outside = diff(&outside_before, &snapshot(&dirs.base, Some(&dirs.root)));
    if !outside.is_empty() {
        problems.push(format!("side effects outside the workspace: {outside:?}"));
    }
    if protected_snapshot(&case, &dirs.root) != protected_before {
        problems.push("wrepl's own state (the protected-state files) changed".into());
    }
    let writes = case.tools.iter().any(|t| ["Write", "Edit", "Bash"].iter().any(|w| t.starts_with(w)));
    if !writes {
        let inside = diff(&root_before, &snapshot(&dirs.root, None));
        if !inside.is_empty() {
            problems.push(format!("side effects in the workspace without a writing tool: {inside:?}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.push(format!("(case took {elapsed:?})"));
        Err(problems.join("\n    "))
    }
}

/// The process RSS after handing freed heap pages back to the kernel, so the
/// figure reflects memory still in use (plus fragmentation), not the
/// allocator's high-water mark from a few large, already freed allocations
/// made by cases running in parallel (a 100 MiB input, a 40 MiB file read).
fn rss_bytes() -> u64 {
    // SAFETY: malloc_trim only releases free memory of glibc's arenas.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// Runs the suite in a process of its own (this test binary, filtered to
/// [`hostile_scripts_in_this_process`]), so the RSS it measures is the
/// suite's alone and not that of the tests running beside it.
#[test]
fn hostile_scripts() {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args(["hostile::hostile_scripts_in_this_process", "--exact", "--include-ignored", "--nocapture"])
        .output()
        .expect("run the hostile suite");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "the hostile suite failed ({})", out.status);
    assert!(stdout.contains("hostile suite: ") && stdout.contains("1 passed"), "the suite did not run");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "run in a process of its own by hostile_scripts"]
async fn hostile_scripts_in_this_process() {
    let cases = load_cases();
    let filtered = std::env::var("HOSTILE_FILTER").is_ok_and(|f| !f.is_empty());
    if !filtered {
        assert!(cases.len() >= 110, "the suite needs at least 110 cases, found {}", cases.len());
    }
    // Warm the engine so the RSS baseline includes the compiled guest.
    drop(build_repl(&cases[0], &prepare(&cases[0])).await);
    let rss_before = rss_bytes();
    let started = Instant::now();

    // `HOSTILE_REPEAT=n` runs the whole list n times (a leak shows as RSS
    // growing pass after pass); a case counts as failed if any pass failed.
    let passes: usize = std::env::var("HOSTILE_REPEAT").ok().and_then(|n| n.parse().ok()).unwrap_or(1).max(1);
    let mut outcomes: BTreeMap<String, (Result<(), String>, Duration)> = BTreeMap::new();
    for pass in 0..passes {
        let sem = Arc::new(tokio::sync::Semaphore::new(PARALLEL));
        let mut set = tokio::task::JoinSet::new();
        for case in cases.iter().cloned() {
            let sem = sem.clone();
            set.spawn(async move {
                let _permit = sem.acquire_owned().await.unwrap();
                let t = Instant::now();
                let file = case.file.clone();
                // A panic inside the case is caught here and reported as a failure.
                let outcome =
                    tokio::spawn(run_case(case)).await.unwrap_or_else(|e| Err(format!("the host panicked: {e}")));
                (file, outcome, t.elapsed())
            });
        }
        while let Some(joined) = set.join_next().await {
            let (file, outcome, took) = joined.expect("case task");
            if outcomes.get(&file).is_none_or(|(o, _)| o.is_ok()) {
                outcomes.insert(file, (outcome, took));
            }
        }
        if passes > 1 {
            println!("pass {}: RSS {} MiB", pass + 1, rss_bytes() >> 20);
        }
    }
    let rss_after = rss_bytes();

    let mut failed = Vec::new();
    let mut known = Vec::new();
    let mut fixed = Vec::new();
    for case in &cases {
        let (outcome, took) = &outcomes[&case.file];
        if *took > Duration::from_secs(10) {
            println!("slow case: {} took {took:?}", case.file);
        }
        match (outcome, &case.known_bug) {
            (Ok(()), None) => {}
            (Ok(()), Some(bug)) => fixed.push(format!("{} passes but is marked known-bug ({bug})", case.file)),
            (Err(e), Some(bug)) => known.push(format!("{} [{}] known bug: {bug}\n    {e}", case.file, case.title)),
            (Err(e), None) => failed.push(format!("{} [{}]\n    {e}", case.file, case.title)),
        }
    }
    for k in &known {
        println!("KNOWN FAILURE {k}");
    }
    let growth = rss_after.saturating_sub(rss_before);
    println!(
        "hostile suite: {} cases, {} passed, {} known bugs, {} failed, {} fixed known bugs; {:.1} s; RSS {} → {} MiB",
        cases.len(),
        cases.len() - known.len() - failed.len() - fixed.len(),
        known.len(),
        failed.len(),
        fixed.len(),
        started.elapsed().as_secs_f64(),
        rss_before >> 20,
        rss_after >> 20
    );
    assert!(
        failed.is_empty() && fixed.is_empty(),
        "hostile cases failed:\n{}\n{}",
        failed.join("\n"),
        fixed.join("\n")
    );
    assert!(
        growth <= RSS_GROWTH_BOUND,
        "host RSS grew by {} MiB over the suite (bound {} MiB)",
        growth >> 20,
        RSS_GROWTH_BOUND >> 20
    );
}

#[test]
fn case_headers_parse_and_reject_mistakes() {
    let c = parse_case("x.js", "// title: t\n// expect: error /sealed/i\n// tools: Bash Write\nimport('x')\n").unwrap();
    assert!(matches!(c.expect, Expect::Error(ref re) if re.is_match("SandboxError: SEALED")));
    assert_eq!(c.tools, vec!["Bash", "Write"]);
    assert_eq!(c.code, "import('x')\n");
    assert!(parse_case("x.js", "// title: t\n1").is_err(), "expect is required");
    assert!(parse_case("x.js", "// title: t\n// expect: sometimes\n1").is_err());
    assert!(parse_case("x.js", "// title: t\n// expect: ok\n// bogus: 1\n1").is_err());
    assert!(parse_case("x.js", "// title: t\n// expect: ok\n// setup: nope\n1").is_err());
    assert!(parse_case("x.js", "// title: t\n// expect: result {bad\n1").is_err());
}

/// The invariants can fail: deliberately bad cases are caught by the runner.
#[tokio::test(flavor = "multi_thread")]
async fn the_runner_catches_violations() {
    let bad = |text: &str| parse_case("self-test.js", text).expect("valid header");
    let cases = [
        // the canary is modified (Bash is granted and unconfined, so the call runs and writes outside)
        (
            "the canary changed",
            "// title: t\n// expect: ok\n// tools: Bash\n// settings: {\"confine\": \"off\"}\n\nawait sh('echo x >> ../outside/canary.txt')\n",
        ),
        // a new file appears outside the root
        (
            "outside the workspace",
            "// title: t\n// expect: ok\n// tools: Bash\n// settings: {\"confine\": \"off\"}\n\nawait sh('touch ../stray')\n",
        ),
        // a hook changes the workspace although no writing tool is granted
        (
            "without a writing tool",
            r#"// title: t
// expect: ok
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "touch hooked"}]}]}}

await cat('a.txt')
"#,
        ),
        // the outcome does not match
        ("expected result 3", "// title: t\n// expect: result 3\n\n1 + 1\n"),
        ("does not match", "// title: t\n// expect: error /nope/\n\nthrow new Error('other')\n"),
        // a fresh context that the case did not declare
        (
            "fresh context",
            "// title: t\n// expect: ok\n\nObject.defineProperty(globalThis, 'console', { value: 1, configurable: false })\n",
        ),
        // a fresh context for another reason than the one expected
        (
            "no reported fresh context matches",
            "// title: t\n// expect: ok\n// expect-reset: /budget/\n\nObject.freeze(globalThis)\n",
        ),
        // the sentinel variable disappears without a reset being reported
        ("sentinel", "// title: t\n// expect: ok\n\ndelete globalThis.hostileSentinel; hostileSentinel = undefined; 1\n"),
        // a `then` expectation that fails
        ("then:", "// title: t\n// expect: ok\n// then: 5\n// then-expect: result 6\n\n1\n"),
    ];
    for (needle, text) in cases {
        let outcome = run_case(bad(text)).await;
        let e = outcome.expect_err(needle);
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    // and a good case passes
    run_case(bad("// title: t\n// expect: result 2\n\n1 + 1\n")).await.unwrap();
}
