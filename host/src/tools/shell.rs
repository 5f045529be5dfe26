//! The `Bash` tool: runs a command with `/bin/bash -c` (or `/bin/sh`),
//! confined by the kernel as [`crate::process::confine`] describes (writes
//! only in the workspace roots and a per-call `TMPDIR`, wrepl's own files
//! hidden, its own PID namespace, no network unless `allowNet`), in its own
//! process group, so a timeout, an abort or the end of the evaluation kills
//! the command and everything it started.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Command;

use super::{str_field, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::process::confine::{self, ConfineError, Request};
use crate::process::{read_capped, Captured, EnvPolicy, MINIMAL_ENV};

/// Default native timeout of a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest timeout a call may ask for: the hard limit.
pub const MAX_TIMEOUT: Duration = crate::budget::HARD_LIMIT;
/// Most bytes kept of each of stdout and stderr.
pub const MAX_STREAM_BYTES: usize = 10 << 20;
/// Most characters of output in the transcript text.
const MAX_TEXT_CHARS: usize = 30_000;
/// Environment variables passed through to commands; nothing else of the
/// host's environment (API keys, tokens) reaches them. A confined command's
/// `TMPDIR` is its per-call temp dir.
pub const ENV_PASSTHROUGH: &[&str] = MINIMAL_ENV;

/// Git configuration every command gets, through git's own environment
/// variables (which the settings' `env` may not set): a directory that
/// merely looks like a git directory (`HEAD`, `objects/`, `refs/` and a
/// `config` a script wrote anywhere in the roots) is never taken as a
/// repository, so its `core.fsmonitor`, hooks or filters cannot make a
/// `git status` run a program. A bare repository is still used when named
/// (`git --git-dir=DIR`).
const GIT_ENV: [(&str, &str); 3] =
    [("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "safe.bareRepository"), ("GIT_CONFIG_VALUE_0", "explicit")];

/// Run a shell command.
#[derive(Debug, Clone)]
pub struct Bash {
    /// The timeout of a call that gives none.
    default_timeout: Duration,
    description: String,
    /// Variables set on top of the passed-through ones (the settings' `env`,
    /// checked by `env_refusal`).
    env: std::sync::Arc<Vec<(String, String)>>,
}

impl Default for Bash {
    fn default() -> Self {
        Self::with_default_timeout(DEFAULT_TIMEOUT)
    }
}

impl Bash {
    /// Bash whose calls without a `timeout` get `default` (at most
    /// [`MAX_TIMEOUT`]).
    pub fn with_default_timeout(default: Duration) -> Self {
        let default_timeout = default.clamp(Duration::from_millis(1), MAX_TIMEOUT);
        let description = DESCRIPTION
            .replace("{default}", &default_timeout.as_millis().to_string())
            .replace("{max}", &MAX_TIMEOUT.as_millis().to_string());
        Self { default_timeout, description, env: Default::default() }
    }

    /// The same tool, with `env` set for every command on top of the
    /// variables passed from wrepl's environment.
    pub fn with_env(mut self, env: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = std::sync::Arc::new(env.into_iter().collect());
        self
    }
}

const DESCRIPTION: &str = "Run a shell command (bash -c) in the evaluation's working directory. Returns stdout, stderr and the exit code. \
         The command runs in its own process group, which is killed on timeout (default {default} ms, max {max} ms) or abort. \
         Only PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR and TERM are passed from the host environment. \
         On Linux the command runs confined by default: it can read everywhere but write only in the workspace roots and \
         its own $TMPDIR (a fresh directory, removed afterwards; /tmp itself is not writable), wrepl's own files are \
         hidden, it is pid 1 of its own PID namespace (everything it starts, even with setsid or nohup, ends with it), \
         and it has no network but its own loopback interface unless allowNet (--allow-net) grants the host's network \
         (connecting and listening wherever the user can). The result's `confined` and `confinement` fields say what was \
         in force; with confine \"require\" the command is refused when confinement cannot be set up.";

/// Commands whose every top-level simple command starts with one of these
/// words (and that parse as a plain list of simple commands without
/// substitutions or output redirection, `crate::shell_syntax`) are treated
/// as read-only, and may run in parallel with other calls. This only affects
/// scheduling, never permission.
const READ_ONLY_COMMANDS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "find",
    "echo",
    "printf",
    "pwd",
    "stat",
    "file",
    "du",
    "df",
    "date",
    "which",
    "true",
    "false",
    "test",
    "sleep",
    "sort",
    "uniq",
    "cut",
    "tr",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "env",
    "id",
    "uname",
    "whoami",
    "diff",
    "cmp",
    "md5sum",
    "sha256sum",
    "jq",
    "seq",
    "git status",
    "git log",
    "git diff",
    "git show",
    "git branch",
    "git rev-parse",
    "git ls-files",
    "git blame",
];

fn is_read_only(command: &str) -> bool {
    /// `find` predicates that run commands or write.
    const FIND_ACTIONS: &[&str] =
        &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];
    let script = crate::shell_syntax::parse(command);
    if script.structure.is_some() || script.opaque.is_some() {
        return false;
    }
    let all_read_only = script.top().all(|c| {
        // Values (`None`: a variable or a pattern, known only when it runs).
        let words: Vec<Option<&str>> = c.words.iter().map(|w| w.lit.as_deref()).collect();
        let starts = |entry: &str| {
            let e: Vec<&str> = entry.split(' ').collect();
            words.len() >= e.len() && words.iter().zip(&e).all(|(w, e)| *w == Some(*e))
        };
        let side_effects = match words.first() {
            Some(Some("find")) => words.iter().any(|w| w.is_none_or(|w| FIND_ACTIONS.contains(&w))),
            // `env` alone prints; with a command it runs it.
            Some(Some("env")) => words.len() > 1,
            _ => false,
        };
        c.construct().is_none() && !side_effects && READ_ONLY_COMMANDS.iter().any(|e| starts(e))
    });
    all_read_only
}

fn background(input: &Value) -> bool {
    input.get("run_in_background").and_then(Value::as_bool) == Some(true)
}

fn timeout_of(input: &Value, default: Duration) -> Duration {
    match input.get("timeout").and_then(Value::as_f64) {
        Some(ms) if ms.is_finite() && ms >= 1.0 => Duration::from_millis(ms as u64).min(MAX_TIMEOUT),
        _ => default,
    }
}

impl Tool for Bash {
    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command to run."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT.as_millis() as u64, "description": format!("Timeout in milliseconds (default {}).", self.default_timeout.as_millis())},
                "description": {"type": "string", "description": "What the command does, in a few words."},
                "run_in_background": {"type": "boolean", "description": "Start the command and return at once with its backgroundTaskId; read its output with TaskOutput. It runs until it ends, its timeout (default and at most the hard limit) passes, or its context ends."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "exitCode": {"type": ["integer", "null"]},
                "signal": {"type": ["integer", "null"]},
                "truncated": {"type": "boolean"},
                "confined": {"type": "boolean", "description": "Every confinement mechanism was in force."},
                "confinement": {"type": "string", "description": "What confined the command."},
                "backgroundTaskId": {"type": "string", "description": "With run_in_background: the id TaskOutput takes."}
            },
            "required": ["stdout", "stderr", "exitCode"]
        }))
    }

    fn native_timeout(&self, input: &Value) -> Duration {
        if background(input) {
            // The call only starts the command.
            return super::FILE_TOOL_TIMEOUT;
        }
        timeout_of(input, self.default_timeout)
    }

    /// A shell is never treated as read-only for permission purposes: it is
    /// not confined to the workspace and can do anything.
    fn read_only(&self, _input: &Value) -> bool {
        false
    }

    /// Commands that look read-only may run in parallel with other calls.
    fn concurrency_safe(&self, input: &Value) -> bool {
        str_field(input, "command").is_some_and(is_read_only)
    }

    fn rule_kind(&self) -> RuleKind {
        RuleKind::Shell
    }

    fn rule_subject(&self, input: &Value) -> Option<String> {
        str_field(input, "command").map(str::to_string)
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        let limit = if background(&input) { Some(timeout_of(&input, MAX_TIMEOUT)) } else { None };
        Box::pin(run(input, ctx, self.env.clone(), limit))
    }
}

fn shell() -> &'static str {
    if std::path::Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// Run the command; with `background` (its time limit), start it, hand it
/// to the context's background tasks and return its id.
async fn run(
    input: Value,
    ctx: ToolContext,
    env: std::sync::Arc<Vec<(String, String)>>,
    background: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    let command = str_field(&input, "command").ok_or_else(|| ToolError::InvalidInput("command is required".into()))?;
    if command.contains('\0') {
        return Err(ToolError::InvalidInput("the command contains a NUL byte".into()));
    }
    let mut cmd = Command::new(shell());
    cmd.arg("-c").arg(command).current_dir(&ctx.cwd);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let request = Request {
        confinement: ctx.confinement,
        writable: ctx.workspace.roots().into_iter().map(|p| p.to_path_buf()).collect(),
        protected: ctx.workspace.protected().to_vec(),
    };
    // The call's span, for a command that traces itself (W3C's environment
    // carrier: TRACEPARENT, TRACESTATE).
    let trace: Vec<(&str, String)> = ctx
        .trace
        .iter()
        .flat_map(|t| {
            std::iter::once(("TRACEPARENT", t.traceparent.clone()))
                .chain(t.tracestate.clone().map(|s| ("TRACESTATE", s)))
        })
        .collect();
    let policy = EnvPolicy::only(ENV_PASSTHROUGH).set_all(env.iter().cloned()).set_all(GIT_ENV).set_all(trace);
    // The group is killed when `group` is dropped (timeout, abort, eval end).
    let spawned = tokio::select! {
        r = confine::spawn(cmd, policy, request) => r,
        _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled("the command was stopped before it started".into())),
    };
    let confine::Spawned { mut group, applied } = spawned.map_err(|e| match e {
        ConfineError::Spawn(e) => ToolError::Io(format!("cannot start {}: {e}", shell())),
        e @ ConfineError::Unavailable(_) => ToolError::Failed(format!("Bash refused: {e}")),
        e => ToolError::Failed(e.to_string()),
    })?;
    if let Some(limit) = background {
        let id = ctx.tasks.start(command, group, limit)?;
        let text = format!("started in the background as {id}: TaskOutput({{task_id: {id:?}}}) reads its output");
        return Ok(ToolOutput::new(
            json!({
                "stdout": "", "stderr": "", "exitCode": null, "signal": null, "truncated": false,
                "confined": applied.fully_confined(), "confinement": applied.describe(), "backgroundTaskId": id,
            }),
            text,
        ));
    }
    let stdout = group.child_mut().stdout.take().ok_or_else(|| ToolError::Io("no stdout pipe".into()))?;
    let stderr = group.child_mut().stderr.take().ok_or_else(|| ToolError::Io("no stderr pipe".into()))?;
    let waited = async {
        let (o, e) = tokio::join!(read_capped(stdout, MAX_STREAM_BYTES), read_capped(stderr, MAX_STREAM_BYTES));
        (o, e, group.wait().await)
    };
    let finished = tokio::select! {
        r = waited => Some(r),
        _ = ctx.cancel.cancelled() => None,
    };
    let Some((Captured { bytes: out, truncated: t1 }, Captured { bytes: err, truncated: t2 }, status)) = finished
    else {
        drop(group); // kill the group now
        return Err(ToolError::Cancelled(format!(
            "the command was stopped (timeout {} ms or abort); its process group was killed",
            ctx.timeout.as_millis()
        )));
    };
    // The shell exited; kill anything it left running in the group.
    drop(group);
    let status = status.map_err(|e| ToolError::Io(format!("waiting for the command: {e}")))?;
    let stdout = String::from_utf8_lossy(&out).into_owned();
    let stderr = String::from_utf8_lossy(&err).into_owned();
    use std::os::unix::process::ExitStatusExt;
    let code = status.code();
    let signal = status.signal();
    let mut text = stdout.clone();
    if !stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&stderr);
    }
    match (code, signal) {
        (Some(0), _) => {}
        (Some(c), _) => text.push_str(&format!("\n[exit code {c}]")),
        (None, Some(s)) => text.push_str(&format!("\n[killed by signal {s}]")),
        _ => {}
    }
    if t1 || t2 {
        text.push_str(&format!("\n[output truncated at {MAX_STREAM_BYTES} bytes per stream]"));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        let cut: String = text.chars().take(MAX_TEXT_CHARS).collect();
        text = format!("{cut}\n…[output truncated for the transcript]");
    }
    Ok(ToolOutput::new(
        json!({
            "stdout": stdout, "stderr": stderr, "exitCode": code, "signal": signal, "truncated": t1 || t2,
            "confined": applied.fully_confined(), "confinement": applied.describe(),
        }),
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::confine::{ConfineMode, Confinement};
    use crate::tools::{Workspace, FILE_TOOL_TIMEOUT};
    use std::sync::Arc;
    use tokio_util::sync::CancellationToken;

    fn ctx(ws: &Arc<Workspace>) -> ToolContext {
        ToolContext {
            workspace: ws.clone(),
            cwd: ws.default_cwd().to_path_buf(),
            cancel: CancellationToken::new(),
            timeout: FILE_TOOL_TIMEOUT,
            progress: None,
            confinement: Confinement { mode: ConfineMode::Require, allow_net: false },
            trace: None,
            tasks: Default::default(),
        }
    }

    /// Host pids of the live processes whose command line has `marker` as an
    /// argument (a confined command's `$!` is a pid of its own namespace).
    fn host_pids_with(marker: &str) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == marker.as_bytes()))
            })
            .filter(|pid| crate::process::is_running(*pid))
            .collect()
    }

    #[tokio::test]
    async fn runs_in_cwd_with_a_clean_environment() {
        let t = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new([t.path()]).unwrap());
        std::env::set_var("WREPL_TEST_SECRET", "s3cret");
        let out = Bash::default()
            .call(json!({"command": "pwd; echo err >&2; echo ${WREPL_TEST_SECRET:-unset}; exit 3"}), ctx(&ws))
            .await
            .unwrap();
        let cwd = ws.default_cwd().display().to_string();
        assert_eq!(out.value["stdout"], format!("{cwd}\nunset\n"));
        assert_eq!(out.value["stderr"], "err\n");
        assert_eq!(out.value["exitCode"], 3);
        assert!(out.text.contains("[exit code 3]"));
        assert_eq!(out.value["confined"], true, "{}", out.value["confinement"]);
        assert!(out.value["confinement"].as_str().unwrap().starts_with("confined: Landlock ABI"), "{}", out.value);
    }

    #[tokio::test]
    async fn confined_writes_stay_in_the_roots_and_tmpdir() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new([t.path()]).unwrap());
        let cmd = format!(
            "touch inside && echo tmp > \"$TMPDIR/f\" && cat \"$TMPDIR/f\" && echo \"$TMPDIR\"; \
             touch {o}/escaped; echo rc=$?",
            o = outside.path().display()
        );
        let out = Bash::default().call(json!({ "command": cmd }), ctx(&ws)).await.unwrap();
        let stdout = out.value["stdout"].as_str().unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], "tmp", "{out:?}");
        assert!(lines[2].starts_with("rc=") && lines[2] != "rc=0", "{out:?}");
        assert!(t.path().join("inside").exists());
        assert!(!outside.path().join("escaped").exists(), "a confined command wrote outside the roots");
        // The per-call temp dir is gone after the call.
        let tmpdir = std::path::Path::new(lines[1]);
        assert!(tmpdir.starts_with(std::env::temp_dir()), "{tmpdir:?}");
        assert!(!tmpdir.exists(), "{tmpdir:?} was not removed");
    }

    #[tokio::test]
    async fn confine_off_runs_a_plain_child() {
        let t = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new([t.path()]).unwrap());
        let mut c = ctx(&ws);
        c.confinement = Confinement { mode: ConfineMode::Off, allow_net: false };
        let out = Bash::default().call(json!({"command": "echo $$"}), c).await.unwrap();
        assert_eq!(out.value["confined"], false);
        assert_eq!(out.value["confinement"], "not confined (confine: off)");
        // Not pid 1 of a namespace of its own.
        assert_ne!(out.value["stdout"], "1\n");
        let c = ctx(&ws);
        let out = Bash::default().call(json!({"command": "echo $$"}), c).await.unwrap();
        assert_eq!(out.value["stdout"], "1\n", "a confined command is its PID namespace's init");
    }

    #[tokio::test]
    async fn cancellation_kills_the_whole_process_group() {
        let t = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new([t.path()]).unwrap());
        let c = ctx(&ws);
        let cancel = c.cancel.clone();
        let marker = format!("30.{}{}", std::process::id(), line!());
        let ready = t.path().join("ready");
        let cmd = format!("sleep {marker} & setsid sleep {marker} & echo ok > {r}; wait", r = ready.display());
        let task = tokio::spawn(Bash::default().call(json!({ "command": cmd }), c));
        // Both sleeps, once each has become `sleep` (a `setsid` on its way
        // to exec, or forking, shows the marker too, or briefly no command
        // line at all).
        let sleeping = || {
            host_pids_with(&marker)
                .into_iter()
                .filter(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep"))
                .collect::<Vec<u32>>()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while (sleeping().len() < 2 || !ready.exists()) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pids = sleeping();
        assert_eq!(pids.len(), 2, "both sleeps run: {pids:?}");
        cancel.cancel();
        let r = task.await.unwrap();
        assert!(matches!(r, Err(ToolError::Cancelled(_))), "{r:?}");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|p| crate::process::is_running(*p)) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for pid in pids {
            assert!(!crate::process::is_running(pid), "background process {pid} survived");
        }
    }

    #[test]
    fn read_only_classifier() {
        assert!(is_read_only("ls -la | wc -l"));
        assert!(is_read_only("git status && git diff"));
        assert!(is_read_only("sleep 0.01"));
        assert!(!is_read_only("echo hi > f"));
        assert!(!is_read_only("rm -rf x"));
        assert!(!is_read_only("ls; rm x"));
        assert!(!is_read_only("cat $(rm x)"));
        assert!(!is_read_only("lsblk"));
        assert!(is_read_only("git  'status' -s 2>&1 | head -3 >/dev/null"));
        assert!(is_read_only("ls *.rs $HOME"));
        assert!(!is_read_only("find . $action"));
        assert!(!is_read_only("find . -delete"));
        assert!(!is_read_only("find . -exec rm {} +"));
        assert!(!is_read_only("env rm x"));
        assert!(!is_read_only("$x"));
        assert!(!is_read_only("ls # comment\nrm x"));
        assert!(!is_read_only(""));
    }

    #[test]
    fn timeouts() {
        assert_eq!(timeout_of(&json!({"command": "x"}), DEFAULT_TIMEOUT), DEFAULT_TIMEOUT);
        assert_eq!(timeout_of(&json!({"command": "x", "timeout": 1500}), DEFAULT_TIMEOUT), Duration::from_millis(1500));
        assert_eq!(timeout_of(&json!({"command": "x", "timeout": 9e9}), DEFAULT_TIMEOUT), MAX_TIMEOUT);
        let short = Bash::with_default_timeout(Duration::from_millis(2500));
        assert_eq!(short.native_timeout(&json!({"command": "x"})), Duration::from_millis(2500));
        assert!(short.description().contains("default 2500 ms"), "{}", short.description());
    }
}
