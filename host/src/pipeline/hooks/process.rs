//! Running one hook process: `/bin/sh -c` in the project directory with the
//! minimal environment, its input fed, its output captured, its process
//! group killed on timeout or cancellation.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use futures_util::future::OptionFuture;
use tokio::io::AsyncWriteExt;

use super::super::settings::HookCommand;
use super::{MAX_HOOK_OUTPUT, PROJECT_DIR_ENV};
use crate::process::{read_capped, Captured, EnvPolicy, ProcessGroup, MINIMAL_ENV};

/// How a hook process ended.
#[derive(Debug)]
pub(super) enum RunResult {
    Exited { code: Option<i32>, signal: Option<i32>, stdout: Captured, stderr: Captured },
    TimedOut,
    Failed(String),
}

/// Runs one hook in `project_dir` with the minimal environment.
pub(super) async fn run_hook(
    hook: &HookCommand,
    stdin: &[u8],
    project_dir: &Path,
    vars: &[(String, String)],
) -> RunResult {
    use std::os::unix::process::ExitStatusExt;

    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let env = EnvPolicy::only(MINIMAL_ENV).set_all(vars.iter().cloned()).set(PROJECT_DIR_ENV, project_dir);
    // Dropping `group` (e.g. the future on cancellation) kills the group.
    let mut group = match ProcessGroup::spawn(&mut command, &env) {
        Ok(group) => group,
        Err(e) => return RunResult::Failed(e.to_string()),
    };

    let input = group.child_mut().stdin.take();
    let stdout = OptionFuture::from(group.child_mut().stdout.take().map(|p| read_capped(p, MAX_HOOK_OUTPUT)));
    let stderr = OptionFuture::from(group.child_mut().stderr.take().map(|p| read_capped(p, MAX_HOOK_OUTPUT)));
    let feed = async move {
        if let Some(mut pipe) = input {
            // The hook may not read its input: a broken pipe is fine.
            let _ = pipe.write_all(stdin).await;
            let _ = pipe.shutdown().await;
        }
    };
    let work = async {
        let ((), out, err, status) = tokio::join!(feed, stdout, stderr, group.wait());
        (out.unwrap_or_default(), err.unwrap_or_default(), status)
    };
    let finished = tokio::time::timeout(hook.timeout_duration(), work).await;
    match finished {
        Ok((stdout, stderr, Ok(status))) => {
            // Finished on its own: whatever it left running (with its output
            // pipes closed) is not killed.
            group.disarm();
            RunResult::Exited { code: status.code(), signal: status.signal(), stdout, stderr }
        }
        Ok((_, _, Err(e))) => {
            group.kill();
            RunResult::Failed(format!("waiting for the process failed: {e}"))
        }
        Err(_elapsed) => {
            group.kill();
            // Reap the shell; SIGKILL cannot be ignored, but do not hang on a
            // process stuck in the kernel (kill_on_drop and tokio's orphan
            // reaping take over then).
            let _ = tokio::time::timeout(Duration::from_secs(1), group.wait()).await;
            RunResult::TimedOut
        }
    }
}
