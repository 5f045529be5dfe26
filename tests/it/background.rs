//! Background commands (`Bash` with `run_in_background`) and `TaskOutput`:
//! the output arrives while the script goes on, a context reads only its own
//! tasks, a command ends at its timeout, and when its context ends, the whole
//! process group ends with it (checked in the process table, by a marker
//! only these commands carry).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

/// Host pids of live processes with `marker` as an argument.
fn pids_with(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == marker.as_bytes()))
        })
        .filter(|pid| {
            // A zombie waiting to be reaped is gone as far as this test cares.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
        })
        .collect()
}

async fn repl(root: &Path) -> wrepl::Repl {
    builder().roots([root]).allow(["Bash"]).build().await.expect("repl")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_command_runs_on_and_taskoutput_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = repl(dir.path()).await;
    // The call returns at once; the command finishes while the script waits.
    let v = ok(&ev(
        &mut r,
        "const s = await Bash({command: 'echo start; sleep 1; echo done > flag; echo end >&2; exit 3', run_in_background: true});
         const first = await TaskOutput({task_id: s.backgroundTaskId, block: false});
         const last = await TaskOutput({task_id: s.backgroundTaskId, timeout: 20000});
         ({id: s.backgroundTaskId, first: first.status, last})",
    )
    .await);
    assert_eq!(v["id"], "bash_1");
    assert_eq!(v["first"], "running");
    assert_eq!(v["last"]["status"], "completed");
    assert_eq!(v["last"]["exitCode"], 3);
    assert_eq!(v["last"]["stdout"], "start\n");
    assert_eq!(v["last"]["stderr"], "end\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("flag")).unwrap(), "done\n");
    // Reported finished, it is forgotten.
    let (_, msg) = err(&ev(&mut r, "await TaskOutput({task_id: 'bash_1'})").await);
    assert!(msg.contains("no background task \"bash_1\""), "{msg}");

    // A command ends at its timeout, its group with it.
    let marker = format!("wrepl-bg-timeout-{}", std::process::id());
    let v = ok(&ev(
        &mut r,
        &format!(
            "const t = await Bash({{command: '(exec -a {marker} sleep 300) & exec -a {marker} sleep 301', run_in_background: true, timeout: 1000}});
             await TaskOutput({{task_id: t.backgroundTaskId, timeout: 30000}})"
        ),
    )
    .await);
    assert_eq!(v["status"], "killed", "{v}");
    assert!(v["note"].as_str().unwrap().contains("timeout of 1000 ms"), "{v}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the timed-out command is still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_belong_to_their_context_and_end_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = builder().roots([dir.path()]).allow(["Bash"]);
    let (mut a, mut other) = (b.build().await.unwrap(), b.build().await.unwrap());
    let marker = format!("wrepl-bg-context-{}", std::process::id());
    let v = ok(&ev(
        &mut a,
        &format!("(await Bash({{command: '(exec -a {marker} sleep 300) & exec -a {marker} sleep 302', run_in_background: true}})).backgroundTaskId"),
    )
    .await);
    assert_eq!(v, json!("bash_1"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the background command did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Another context cannot read it (it has tasks of its own, numbered apart).
    let (_, msg) = err(&ev(&mut other, "await TaskOutput({task_id: 'bash_1', block: false})").await);
    assert!(msg.contains("no background task \"bash_1\" in this context (it has none)"), "{msg}");
    // The evaluation that started it ended; the command runs on.
    let v = ok(&ev(&mut a, "(await TaskOutput({task_id: 'bash_1', block: false})).status").await);
    assert_eq!(v, json!("running"));
    // The context ends: so does the command, its whole group included.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the command outlived its context: {:?}", pids_with(&marker));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(other);
}

#[tokio::test(flavor = "multi_thread")]
async fn background_output_past_the_cap_is_said_to_be_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = repl(dir.path()).await;
    let v = ok(&ev(
        &mut r,
        "const s = await Bash({command: 'head -c 10485770 /dev/zero | tr \"\\\\0\" x', run_in_background: true});
         const o = await TaskOutput({task_id: s.backgroundTaskId, timeout: 60000});
         ({status: o.status, length: o.stdout.length, truncated: o.truncated})",
    )
    .await);
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(v["length"], 10 << 20);
    assert_eq!(v["truncated"], "10 bytes of output were left out: each stream keeps its first 10485760 bytes");
}
