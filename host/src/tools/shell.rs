//! The `Bash` tool: runs a command with `/bin/bash -c` (or `/bin/sh`) in its
//! own process group, so a timeout, an abort or the end of the evaluation
//! kills the command and everything it started.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Command;

use super::{str_field, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::process::{read_capped, Captured, EnvPolicy, ProcessGroup};

/// Default native timeout of a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Most bytes kept of each of stdout and stderr.
pub const MAX_STREAM_BYTES: usize = 10 << 20;
/// Most characters of output in the transcript text.
const MAX_TEXT_CHARS: usize = 30_000;
/// Environment variables passed through to commands; nothing else of the
/// host's environment (API keys, tokens) reaches them.
pub const ENV_PASSTHROUGH: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"];

/// Run a shell command.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bash;

/// Commands whose every simple command starts with one of these (and that
/// have no output redirection) are treated as read-only, and may run in
/// parallel with other calls. This only affects scheduling, never permission.
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
    let parts = crate::shell_syntax::split_shell(command);
    !parts.is_empty()
        && parts.iter().all(|p| {
            let part = p.text.as_str();
            p.safe
                && READ_ONLY_COMMANDS
                    .iter()
                    .any(|c| part == *c || part.strip_prefix(c).is_some_and(|r| r.starts_with(char::is_whitespace)))
        })
}

fn timeout_of(input: &Value) -> Duration {
    match input.get("timeout").and_then(Value::as_f64) {
        Some(ms) if ms.is_finite() && ms >= 1.0 => Duration::from_millis(ms as u64).min(MAX_TIMEOUT),
        _ => DEFAULT_TIMEOUT,
    }
}

impl Tool for Bash {
    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the evaluation's working directory. Returns stdout, stderr and the exit code. \
         The command runs in its own process group, which is killed on timeout (default 120000 ms, max 600000 ms) or abort. \
         Only PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR and TERM are passed from the host environment."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command to run."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 600000, "description": "Timeout in milliseconds (default 120000)."},
                "description": {"type": "string", "description": "What the command does, in a few words."}
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
                "truncated": {"type": "boolean"}
            },
            "required": ["stdout", "stderr", "exitCode"]
        }))
    }

    fn native_timeout(&self, input: &Value) -> Duration {
        timeout_of(input)
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
        Box::pin(run(input, ctx))
    }
}

fn shell() -> &'static str {
    if std::path::Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

async fn run(input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let command = str_field(&input, "command").ok_or_else(|| ToolError::InvalidInput("command is required".into()))?;
    if command.contains('\0') {
        return Err(ToolError::InvalidInput("the command contains a NUL byte".into()));
    }
    let mut cmd = Command::new(shell());
    cmd.arg("-c").arg(command).current_dir(&ctx.cwd);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // The group is killed when `group` is dropped (timeout, abort, eval end).
    let mut group = ProcessGroup::spawn(&mut cmd, &EnvPolicy::only(ENV_PASSTHROUGH))
        .map_err(|e| ToolError::Io(format!("cannot start {}: {e}", shell())))?;
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
        json!({"stdout": stdout, "stderr": stderr, "exitCode": code, "signal": signal, "truncated": t1 || t2}),
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        }
    }

    #[tokio::test]
    async fn runs_in_cwd_with_a_clean_environment() {
        let t = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new([t.path()]).unwrap());
        std::env::set_var("WREPL_TEST_SECRET", "s3cret");
        let out = Bash
            .call(json!({"command": "pwd; echo err >&2; echo ${WREPL_TEST_SECRET:-unset}; exit 3"}), ctx(&ws))
            .await
            .unwrap();
        let cwd = ws.default_cwd().display().to_string();
        assert_eq!(out.value["stdout"], format!("{cwd}\nunset\n"));
        assert_eq!(out.value["stderr"], "err\n");
        assert_eq!(out.value["exitCode"], 3);
        assert!(out.text.contains("[exit code 3]"));
    }

    #[tokio::test]
    async fn cancellation_kills_the_whole_process_group() {
        let t = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new([t.path()]).unwrap());
        let c = ctx(&ws);
        let cancel = c.cancel.clone();
        let pidfile = t.path().join("pids");
        let cmd = format!("sleep 30 & echo $! > {p}; sleep 30 & echo $! >> {p}; wait", p = pidfile.display());
        let task = tokio::spawn(Bash.call(json!({ "command": cmd }), c));
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
        let r = task.await.unwrap();
        assert!(matches!(r, Err(ToolError::Cancelled(_))), "{r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let pids = std::fs::read_to_string(&pidfile).unwrap();
        for pid in pids.lines() {
            let pid: u32 = pid.trim().parse().unwrap();
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
    }

    #[test]
    fn timeouts() {
        assert_eq!(timeout_of(&json!({"command": "x"})), DEFAULT_TIMEOUT);
        assert_eq!(timeout_of(&json!({"command": "x", "timeout": 1500})), Duration::from_millis(1500));
        assert_eq!(timeout_of(&json!({"command": "x", "timeout": 9e9})), MAX_TIMEOUT);
    }
}
