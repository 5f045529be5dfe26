//! Background commands (`Bash` with `run_in_background`) and the
//! `TaskOutput` tool that reads them.
//!
//! A background command is started like any other (confined, in its own
//! process group), then handed to its context's [`BackgroundTasks`] and the
//! call returns its task id at once. Its output is kept as it comes (at most
//! [`MAX_STREAM_BYTES`] per stream, the rest counted and said to be cut),
//! and `TaskOutput` reports it, waiting for the command to end when asked
//! to. The registry belongs to one context (each dispatcher has its own):
//! a context cannot read another's tasks, and when the context ends, so do
//! its commands, whole process groups included. A command also ends at its
//! `timeout` (default and at most [`crate::budget::HARD_LIMIT`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use super::shell::MAX_STREAM_BYTES;
use super::{str_field, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::process::ProcessGroup;

/// Most background commands a context may have at once (finished ones
/// included, until `TaskOutput` reported them finished).
pub const MAX_TASKS: usize = 16;
/// How long `TaskOutput` waits by default for a command to end.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// The longest wait a `TaskOutput` call may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// One stream's output so far.
#[derive(Default)]
struct Stream {
    bytes: Vec<u8>,
    /// Bytes that did not fit (dropped, and said to be).
    dropped: u64,
}

/// What is known of a background command.
struct State {
    command: String,
    started: Instant,
    stdout: Stream,
    stderr: Stream,
    /// Set once the command ended: (exit code, signal, why it was stopped).
    ended: Option<(Option<i32>, Option<i32>, Option<String>)>,
}

struct Task {
    state: Arc<Mutex<State>>,
    /// Notified when the command ends.
    done: Arc<tokio::sync::Notify>,
    /// The tokio task that reads the pipes and waits; aborting it drops the
    /// process group, which kills it.
    runner: tokio::task::JoinHandle<()>,
}

impl Drop for Task {
    fn drop(&mut self) {
        self.runner.abort();
    }
}

/// One context's background commands. Dropping it ends every one of them.
#[derive(Default)]
pub struct BackgroundTasks {
    tasks: Mutex<BTreeMap<String, Task>>,
    next: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for BackgroundTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.tasks.lock().map(|t| t.len()).unwrap_or(0);
        f.debug_struct("BackgroundTasks").field("tasks", &n).finish()
    }
}

async fn pump(mut pipe: impl tokio::io::AsyncRead + Unpin, state: Arc<Mutex<State>>, stderr: bool) {
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        let s = if stderr { &mut st.stderr } else { &mut st.stdout };
        let room = MAX_STREAM_BYTES.saturating_sub(s.bytes.len()).min(n);
        s.bytes.extend_from_slice(&buf[..room]);
        s.dropped += (n - room) as u64;
    }
}

impl BackgroundTasks {
    /// Hand `group` (its pipes not yet taken) over: it runs until it ends,
    /// `limit` passes or this registry is dropped. The task's id.
    pub(crate) fn start(&self, command: &str, mut group: ProcessGroup, limit: Duration) -> Result<String, ToolError> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        if tasks.len() >= MAX_TASKS {
            return Err(ToolError::Failed(format!(
                "this context already has {MAX_TASKS} background commands: read the finished ones with TaskOutput (a finished task is forgotten once reported)"
            )));
        }
        let id = format!("bash_{}", self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
        let state = Arc::new(Mutex::new(State {
            command: command.to_string(),
            started: Instant::now(),
            stdout: Stream::default(),
            stderr: Stream::default(),
            ended: None,
        }));
        let done = Arc::new(tokio::sync::Notify::new());
        let stdout = group.child_mut().stdout.take();
        let stderr = group.child_mut().stderr.take();
        let (st, notify) = (state.clone(), done.clone());
        let runner = tokio::spawn(async move {
            let pipes = async {
                let out = async {
                    if let Some(p) = stdout {
                        pump(p, st.clone(), false).await
                    }
                };
                let err = async {
                    if let Some(p) = stderr {
                        pump(p, st.clone(), true).await
                    }
                };
                tokio::join!(out, err);
                group.wait().await
            };
            let ended = match tokio::time::timeout(limit, pipes).await {
                Ok(Ok(status)) => {
                    use std::os::unix::process::ExitStatusExt;
                    (status.code(), status.signal(), None)
                }
                Ok(Err(e)) => (None, None, Some(format!("waiting for the command failed: {e}"))),
                Err(_) => (None, None, Some(format!("stopped after its timeout of {} ms", limit.as_millis()))),
            };
            // Whatever the command left running in its group ends with it.
            drop(group);
            st.lock().unwrap_or_else(|p| p.into_inner()).ended = Some(ended);
            notify.notify_waiters();
        });
        tasks.insert(id.clone(), Task { state, done, runner });
        Ok(id)
    }

    /// The task `id`'s output so far, once it ended or `wait` passed
    /// (whichever comes first; `cancel` ends the wait early). A finished
    /// task is forgotten once reported.
    async fn report(
        &self,
        id: &str,
        wait: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Value, ToolError> {
        let (state, done) = {
            let tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
            let t = tasks.get(id).ok_or_else(|| {
                let known: Vec<&str> = tasks.keys().map(String::as_str).collect();
                ToolError::NotFound(format!(
                    "no background task {id:?} in this context ({}); a task is forgotten once TaskOutput reported it finished, and tasks end with the context (or the process) that started them",
                    if known.is_empty() { "it has none".to_string() } else { format!("it has {}", known.join(", ")) }
                ))
            })?;
            (t.state.clone(), t.done.clone())
        };
        let ended = || state.lock().unwrap_or_else(|p| p.into_inner()).ended.is_some();
        if !ended() && !wait.is_zero() {
            let notified = done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !ended() {
                tokio::select! {
                    _ = notified => {}
                    _ = tokio::time::sleep(wait) => {}
                    _ = cancel.cancelled() => {}
                }
            }
        }
        let st = state.lock().unwrap_or_else(|p| p.into_inner());
        let text = |s: &Stream| String::from_utf8_lossy(&s.bytes).into_owned();
        let (status, exit_code, signal, note) = match &st.ended {
            None => ("running", None, None, None),
            Some((code, signal, note)) => {
                (if note.is_some() || signal.is_some() { "killed" } else { "completed" }, *code, *signal, note.clone())
            }
        };
        let mut out = json!({
            "task_id": id,
            "command": st.command,
            "status": status,
            "exitCode": exit_code,
            "signal": signal,
            "stdout": text(&st.stdout),
            "stderr": text(&st.stderr),
            "elapsedMs": st.started.elapsed().as_millis() as u64,
        });
        let dropped = st.stdout.dropped + st.stderr.dropped;
        if dropped > 0 {
            out["truncated"] = json!(format!(
                "{dropped} bytes of output were left out: each stream keeps its first {MAX_STREAM_BYTES} bytes"
            ));
        }
        if let Some(n) = note {
            out["note"] = json!(n);
        }
        let finished = st.ended.is_some();
        drop(st);
        if finished {
            self.tasks.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        }
        Ok(out)
    }
}

/// Read a background command's output: `TaskOutput({task_id, block, timeout})`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaskOutput;

/// The name of the tool.
pub const TASK_OUTPUT: &str = "TaskOutput";

fn wait_of(input: &Value) -> Duration {
    if input.get("block").and_then(Value::as_bool) == Some(false) {
        return Duration::ZERO;
    }
    match input.get("timeout").and_then(Value::as_f64) {
        Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_millis(ms as u64).min(MAX_WAIT),
        _ => DEFAULT_WAIT,
    }
}

impl Tool for TaskOutput {
    fn name(&self) -> &str {
        TASK_OUTPUT
    }

    fn description(&self) -> &str {
        "Read the output of a background command (Bash with run_in_background: true) of this context. \
         By default it waits up to 30000 ms for the command to end (block: false returns at once; timeout \
         sets the wait, at most 600000 ms), then returns its status (running, completed or killed), exit \
         code, and stdout and stderr so far. A finished task is forgotten once reported."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "minLength": 1, "description": "The id Bash returned (backgroundTaskId)."},
                "block": {"type": "boolean", "description": "Wait for the command to end (default true)."},
                "timeout": {"type": "number", "minimum": 0, "maximum": MAX_WAIT.as_millis() as u64, "description": "Longest wait in milliseconds (default 30000)."}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string"},
                "command": {"type": "string"},
                "status": {"enum": ["running", "completed", "killed"]},
                "exitCode": {"type": ["integer", "null"]},
                "signal": {"type": ["integer", "null"]},
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "elapsedMs": {"type": "integer"},
                "truncated": {"type": "string"},
                "note": {"type": "string"}
            },
            "required": ["task_id", "status", "stdout", "stderr"]
        }))
    }

    /// The wait asked for, and a little more for the answer.
    fn native_timeout(&self, input: &Value) -> Duration {
        wait_of(input) + Duration::from_secs(5)
    }

    /// It only reads what this context's own commands printed.
    fn read_only(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let id =
                str_field(&input, "task_id").ok_or_else(|| ToolError::InvalidInput("task_id is required".into()))?;
            let value = ctx.tasks.report(id, wait_of(&input), &ctx.cancel).await?;
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            Ok(ToolOutput::new(value, text))
        })
    }
}
