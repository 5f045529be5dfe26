//! The Bash permission matcher against real bash (differential). Each input
//! is a command line, built from shell fragments and arbitrary text; it is
//! sent through the pipeline (`Dispatcher::call_once`) of two fixed rule
//! sets, with a `Bash` tool of this target's own that, when the pipeline
//! lets it run, runs the line in bash under a tracer instead of plainly:
//!
//! - **allow world** — `allow` = a few builtins (`Bash(echo:*)`,
//!   `Bash(printf:*)`, `Bash(read:*)`, `Bash(export:*)`, …), no approver: a
//!   line the matcher allowed must make bash run only simple commands whose
//!   command word is one of those builtins;
//! - **deny world** — `allow Bash`, `deny Bash(rm:*)`: a line the matcher
//!   allowed must never make bash run `rm` (by any spelling), nor a command
//!   whose word is an expansion or a pattern.
//!
//! The tracer is bash's own: the script's first line installs a `DEBUG` trap with
//! `set -T` (inherited by substitutions and subshells) and `extdebug` (a
//! non-zero trap status skips the command), which records `$BASH_COMMAND`
//! and skips everything but a small set of harmless builtins (and, in the
//! allow world, flags a violation). So even a matcher bug runs nothing
//! harmful; and bash runs in a temporary directory, from a thread that
//! Landlock confines to writing there (and to no network), under `ulimit`s
//! and a wall-clock limit. Invariants:
//!
//! - never a panic, a hang, or different decisions for the same line;
//! - an allowed line executes only what its world allows (no violation in
//!   the trace); in the allow world the temporary directory is unchanged.
//!   The deny world allows every command but `rm`, so a line may write
//!   files there (bash performs a redirection even for a command the
//!   tracer skips, e.g. `((1)) >&2file`): the directory is put back as it
//!   was after each of its runs.
//!
//! Every 8192 lines it prints how many each world allowed (and so ran).
//! `WREPL_FUZZ_SELFTEST=1` checks the harness itself: the allow world then
//! grants all of `Bash`, so the fuzzer must soon report a violation.
#![no_main]

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use wrepl::{Dispatcher, Repl, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, call::FailureKind};
use wrepl_fuzz::runtime;

/// Builtins the allow world grants (one rule each, `Bash(<name>:*)`).
const ALLOWED: &[&str] = &["echo", "printf", "true", "test", "[", "read", "export", "declare", ":"];

/// Shell fragments the generator strings together.
const FRAGMENTS: &[&str] = &[
    "echo",
    "printf",
    "true",
    "test",
    "[",
    "]",
    "read",
    "export",
    "declare",
    ":",
    "rm",
    "/bin/rm",
    "f",
    "x",
    " ",
    " ",
    " ",
    ";",
    "&&",
    "||",
    "|",
    "|&",
    "&",
    "\n",
    "'",
    "\"",
    "\\",
    "$",
    "$(",
    ")",
    "`",
    "${",
    "}",
    "$((",
    "))",
    "<<",
    "<<<",
    "EOF\n",
    "<(",
    ">",
    ">>",
    "2>&1",
    ">&2",
    "/dev/null",
    "<",
    "#",
    "$'",
    "\\$'",
    "$$",
    "\\'",
    "eval",
    "bash -c",
    "sh",
    "xargs",
    "env",
    "nice",
    "timeout 1",
    "command",
    "builtin",
    "exec",
    "x=",
    "$x",
    "${x}",
    "\"$x\"",
    "a[",
    "-v",
    "*",
    "?",
    "{",
    ",",
    "..",
    "~",
    "=",
    "-",
    "(",
    "!",
    "if",
    "then",
    "fi",
    "for",
    "do",
    "done",
    "case",
    "in",
    "esac",
    "function",
    "alias",
    "trap",
    "\t",
    "\r",
    "-c",
    "'rm f'",
    "r'm'",
    "\"r\"m",
    "\\rm",
    "{rm,f}",
    "r?",
    "$'rm'",
    ":-",
    "@P",
    "!x",
    "x[$(",
    "PS4=",
    "set -x",
    "shopt -s expand_aliases",
    "-exec",
    "find",
    "+",
];

/// The tracer, sourced by the first line of the script (not through
/// `BASH_ENV`: `extdebug` set at start-up means "start the debugger", and
/// without one bash turns debugging mode off). `$WREPL_RUN` lists what may run;
/// `$WREPL_WORLD` is `allow` or `deny`; one record per line of the trace
/// file: `run <cmd>`, `skip <cmd>` or `VIOLATION <why>: <cmd>`.
const TRACER: &str = r#"
ulimit -v 262144 -f 64 -t 5 2>/dev/null
set -T
shopt -s extdebug
__wrepl_debug() {
    local c=$BASH_COMMAND w
    c=${c//$'\n'/ }
    w=${c%%[[:space:]]*}
    local plain=${w//[\'\"\\]/}
    local base=${plain##*/}
    if [[ $WREPL_WORLD == deny ]]; then
        if [[ $plain != *[\$\`]* && $base == rm ]]; then
            printf 'VIOLATION rm: %s\n' "$c" >>"$WREPL_TRACE"; return 1
        fi
        if [[ $w != *[\'\"\\]* && ( $w == *[\$\`\*\?]* || $w == *\{*[,.]*\}* || ( $w == *[\[]* && $w != '[' && $w != '[[' ) ) ]]; then
            printf 'VIOLATION unknown command word: %s\n' "$c" >>"$WREPL_TRACE"; return 1
        fi
        if [[ $c == *'>'* ]]; then printf 'skip %s\n' "$c" >>"$WREPL_TRACE"; return 1; fi
        case " $WREPL_RUN " in (*" $plain "*) printf 'run %s\n' "$c" >>"$WREPL_TRACE"; return 0 ;; esac
        if [[ $c =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]]; then printf 'run %s\n' "$c" >>"$WREPL_TRACE"; return 0; fi
        printf 'skip %s\n' "$c" >>"$WREPL_TRACE"; return 1
    fi
    if [[ $w == *[\$\`]* ]]; then printf 'VIOLATION expansion: %s\n' "$c" >>"$WREPL_TRACE"; return 1; fi
    case " $WREPL_RUN " in
        (*" $plain "*) printf 'run %s\n' "$c" >>"$WREPL_TRACE"; return 0 ;;
    esac
    printf 'VIOLATION not allowed: %s\n' "$c" >>"$WREPL_TRACE"; return 1
}
trap __wrepl_debug DEBUG
"#;

type Snapshot = BTreeMap<PathBuf, Vec<u8>>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            if meta.is_dir() {
                stack.push(p.clone());
                out.insert(p, b"dir".to_vec());
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// Put `dir` back as `before` recorded it: what a line of the deny world
/// wrote (a new file, a truncated one) goes.
fn restore(dir: &Path, before: &Snapshot) {
    let now = snapshot(dir);
    if now == *before {
        return;
    }
    // Deepest first, so a directory is empty when it is removed.
    for (p, _) in now.iter().rev().filter(|(p, _)| !before.contains_key(*p)) {
        let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir_all(p));
    }
    for (p, content) in before {
        if content.as_slice() != b"dir" && now.get(p) != Some(content) {
            std::fs::write(p, content).expect("restore a file");
        }
    }
    assert!(snapshot(dir) == *before, "the directory could not be put back");
}

/// A request to the runner thread: a command line, its world, and where to
/// send the trace.
type Job = (String, &'static str, mpsc::Sender<String>);

/// The thread that runs bash: it restricts itself with Landlock first, so
/// every bash it starts can write only in `dir` and `/dev/null`, and connect
/// nowhere.
fn runner(dir: PathBuf, tracer: PathBuf, trace: PathBuf) -> mpsc::Sender<Job> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, ABI,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let abi = ABI::V5;
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
            .and_then(|r| r.add_rules(path_beneath_rules([&dir], AccessFs::from_all(abi))))
            .and_then(|r| r.add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_all(abi))))
            .and_then(|r| r.restrict_self())
            .expect("landlock");
        ready_tx.send(status.ruleset == RulesetStatus::FullyEnforced).expect("ready");
        for (command, world, reply) in rx {
            let _ = std::fs::write(&trace, "");
            // The deny world also runs `eval` (what it parses is traced) and `false`.
            let extra: &[&str] = if world == "deny" { &["false", "eval"] } else { &[] };
            let run = ALLOWED.iter().chain(extra).copied().collect::<Vec<_>>().join(" ");
            // Line 1 installs the tracer; bash parses and runs the line after it on its own.
            let script = format!(". '{}'\n{command}", tracer.display());
            let mut child = Command::new("/bin/bash")
                .arg("-c")
                .arg(script)
                .current_dir(&dir)
                .env_clear()
                .env("WREPL_TRACE", &trace)
                .env("WREPL_WORLD", world)
                .env("WREPL_RUN", run)
                .env("PATH", "/nonexistent")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("bash");
            let started = Instant::now();
            while child.try_wait().expect("wait").is_none() {
                if started.elapsed() > Duration::from_secs(5) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut text = String::new();
            if let Ok(mut f) = std::fs::File::open(&trace) {
                let _ = f.read_to_string(&mut text);
            }
            let _ = reply.send(text);
        }
    });
    assert!(ready_rx.recv().expect("runner"), "Landlock must be fully enforced for this target");
    tx
}

/// The `Bash` tool of this target: runs the line in the traced bash.
struct TracedBash {
    world: &'static str,
    jobs: Arc<Mutex<mpsc::Sender<Job>>>,
}

impl Tool for TracedBash {
    fn name(&self) -> &str {
        "Bash"
    }
    fn description(&self) -> &str {
        "bash under a tracer"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
    }
    fn rule_kind(&self) -> RuleKind {
        RuleKind::Shell
    }
    fn rule_subject(&self, input: &Value) -> Option<String> {
        input["command"].as_str().map(str::to_string)
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        let command = input["command"].as_str().unwrap_or_default().to_string();
        let (tx, rx) = mpsc::channel();
        let sent = self.jobs.lock().expect("jobs").send((command, self.world, tx));
        Box::pin(async move {
            sent.map_err(|_| ToolError::Failed("runner gone".into()))?;
            let trace = rx.recv().map_err(|_| ToolError::Failed("runner gone".into()))?;
            Ok(ToolOutput::new(json!({"trace": trace}), trace))
        })
    }
}

struct World {
    allow: Arc<Dispatcher>,
    deny: Arc<Dispatcher>,
    dir: PathBuf,
    before: Snapshot,
    _tmp: tempfile::TempDir,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("ws");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("f"), "keep\n").expect("write");
        std::fs::write(dir.join("x"), "x\n").expect("write");
        let tracer = tmp.path().join("tracer.sh");
        std::fs::write(&tracer, TRACER).expect("tracer");
        let jobs = Arc::new(Mutex::new(runner(dir.clone(), tracer, tmp.path().join("trace"))));
        let build = |world: &'static str, allow: Vec<String>, deny: Vec<String>| {
            let tool: Arc<dyn Tool> = Arc::new(TracedBash { world, jobs: jobs.clone() });
            Repl::builder()
                .roots([&dir])
                .without_builtin_tools()
                .tool(tool)
                .allow(allow)
                .deny(deny)
                .session_id("fuzz")
                .dispatcher()
                .expect("dispatcher")
        };
        let granted = if std::env::var_os("WREPL_FUZZ_SELFTEST").is_some() {
            vec!["Bash".to_string()]
        } else {
            ALLOWED.iter().map(|b| format!("Bash({b}:*)")).collect()
        };
        let allow = build("allow", granted, Vec::new());
        let deny = build("deny", vec!["Bash".into()], vec!["Bash(rm:*)".into()]);
        let before = snapshot(&dir);
        World { allow, deny, dir, before, _tmp: tmp }
    })
}

/// A command line: fragments and bits of arbitrary text.
#[derive(Debug)]
struct Line(String);

impl<'a> Arbitrary<'a> for Line {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut s = String::new();
        for _ in 0..u.int_in_range(1..=24)? {
            if u.ratio(5u8, 6u8)? {
                s.push_str(u.choose(FRAGMENTS)?);
            } else {
                let t: String = u.arbitrary()?;
                s.extend(t.chars().take(4));
            }
            if s.len() > 400 {
                break;
            }
        }
        Ok(Line(s))
    }
}

/// Decide (twice: the decision is a function of the line) and check what
/// ran. True when the line was allowed (and ran).
fn check(d: &Arc<Dispatcher>, world: &str, line: &str) -> bool {
    let input = json!({"command": line});
    let (first, _) = runtime().block_on(d.call_once("Bash", input.clone()));
    let (second, _) = runtime().block_on(d.call_once("Bash", input));
    assert_eq!(first.is_ok(), second.is_ok(), "{world}: two decisions for {line:?}");
    match first {
        Ok(out) => {
            let trace: Value = serde_json::from_str(&out).expect("output");
            let trace = trace["trace"].as_str().unwrap_or_default();
            assert!(!trace.contains("VIOLATION"), "{world} world allowed {line:?} and bash ran:\n{trace}");
            true
        }
        Err(f) => {
            assert_eq!(f.kind, FailureKind::Denied, "{world}: {line:?}: {f:?}");
            false
        }
    }
}

fuzz_target!(|line: Line| {
    let w = world();
    if line.0.contains('\0') {
        return;
    }
    static STATS: Mutex<(u64, u64, u64)> = Mutex::new((0, 0, 0));
    let allowed = check(&w.allow, "allow", &line.0);
    assert!(snapshot(&w.dir) == w.before, "the allow world changed the directory: {:?}", line.0);
    let denied_world_ran = check(&w.deny, "deny", &line.0);
    restore(&w.dir, &w.before);
    let mut stats = STATS.lock().expect("stats");
    *stats = (stats.0 + 1, stats.1 + u64::from(allowed), stats.2 + u64::from(denied_world_ran));
    if stats.0.is_multiple_of(8192) {
        eprintln!("shell_rules: {} lines; the allow world ran {}, the deny world {}", stats.0, stats.1, stats.2);
    }
});
