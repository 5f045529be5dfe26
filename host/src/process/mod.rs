//! Child processes in process groups of their own.
//!
//! Every program wrepl starts — `Bash` commands ([`crate::tools::shell`]),
//! hook commands ([`crate::pipeline::hooks`]) and downstream MCP servers
//! ([`crate::mcp::downstream`]) — goes through this module:
//!
//! - the child leads a new process group (`process_group(0)`, so the group id
//!   is its pid) and is spawned with `kill_on_drop`;
//! - the returned [`ProcessGroup`] kills the whole group (`SIGKILL` to
//!   `-pgid`) when dropped, unless it was [disarmed](ProcessGroup::disarm),
//!   and on request ([`ProcessGroup::kill`]) — so a timeout, a cancellation
//!   or dropping the caller's future also ends everything the child started;
//! - its environment is an [`EnvPolicy`]: a base taken from wrepl's own
//!   environment ([`HostEnv`]) plus explicit additions;
//! - its output pipes are read with [`read_capped`], which keeps the first
//!   bytes up to a cap and drains the rest so the child never blocks on a
//!   full pipe.
//!
//! Hooks and MCP servers are plain children ([`ProcessGroup::spawn`]). Bash
//! commands are *confined* ([`confine::spawn`]): Landlock, their own user,
//! mount, PID and network namespaces, hidden protected paths, a fresh
//! `/proc`, `no_new_privs` — see [`confine`] for what that means and
//! [`sys`] for how the child is set up between fork and exec.
//!
//! This is the only module that sends signals: `kill(2)` is called in
//! `send_signal` below, and by a confined command's supervisor process to
//! re-raise the signal that ended the command (in [`sys`]).

pub mod confine;
mod spawner;
mod sys;

use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

/// Size of the buffer [`read_capped`] reads with.
const READ_CHUNK: usize = 64 * 1024;

/// The minimal environment: the only variables of wrepl's own environment
/// that Bash commands and hooks get (each when it is set). Nothing else —
/// API keys, tokens — reaches them.
pub(crate) const MINIMAL_ENV: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"];

/// Which of wrepl's own environment variables a child starts with. No child
/// inherits wrepl's whole environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostEnv {
    /// Only these, each when it is set; nothing else of wrepl's environment
    /// (API keys, tokens) reaches the child.
    Only(&'static [&'static str]),
}

/// The environment of a child: a base taken from wrepl's environment plus
/// explicit additions, which win over the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvPolicy {
    /// What is taken from wrepl's environment.
    host: HostEnv,
    /// Variables set on top, in order (a later one wins over an earlier one).
    vars: Vec<(OsString, OsString)>,
}

impl EnvPolicy {
    /// Only the named variables of wrepl's environment (those that are set).
    pub(crate) const fn only(names: &'static [&'static str]) -> Self {
        EnvPolicy { host: HostEnv::Only(names), vars: Vec::new() }
    }

    /// Adds `key=value` on top of the base.
    pub(crate) fn set(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.vars.push((key.into(), value.into()));
        self
    }

    /// Adds every `key=value` of `vars` on top of the base, in order.
    pub(crate) fn set_all<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.vars.extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Sets up `cmd`'s environment: it is cleared and the named variables
    /// are copied from wrepl's environment (read now); the additions come last.
    pub(crate) fn apply(&self, cmd: &mut Command) {
        cmd.env_clear();
        for (key, value) in self.resolve() {
            cmd.env(key, value);
        }
    }

    /// The environment this policy gives a child now: each variable once,
    /// in order, an addition replacing a variable of the same name.
    pub(crate) fn resolve(&self) -> Vec<(OsString, OsString)> {
        let HostEnv::Only(names) = self.host;
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        let host = names.iter().filter_map(|n| std::env::var_os(n).map(|v| (OsString::from(n), v)));
        for (key, value) in host.chain(self.vars.iter().cloned()) {
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => out.push((key, value)),
            }
        }
        out
    }
}

/// A child process that leads its own process group, and the guard that
/// kills the group.
///
/// Dropping it sends `SIGKILL` to the whole group unless [`Self::kill`] or
/// [`Self::disarm`] was called before; the child itself is also spawned with
/// `kill_on_drop`.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    /// The group leader.
    child: Child,
    /// The group id (the leader's pid), taken at spawn time so the group can
    /// still be signalled after the leader has been reaped.
    pgid: Option<libc::pid_t>,
    /// Whether dropping this kills the group.
    armed: bool,
    /// A confined command's per-call temp dir, removed after the group was
    /// killed (fields drop after `Drop::drop`).
    _scratch: Option<confine::Scratch>,
}

impl ProcessGroup {
    /// Spawns `cmd` with the environment `env` as the leader of a new process
    /// group, with `kill_on_drop`. Stdio, arguments and working directory are
    /// the caller's; the error is the one of [`Command::spawn`].
    pub(crate) fn spawn(cmd: &mut Command, env: &EnvPolicy) -> io::Result<Self> {
        env.apply(cmd);
        cmd.process_group(0).kill_on_drop(true);
        Ok(Self::from_child(cmd.spawn()?, None))
    }

    /// The guard of a child spawned as a group leader, owning `scratch`.
    fn from_child(child: Child, scratch: Option<confine::Scratch>) -> Self {
        let pgid = child.id().and_then(|id| libc::pid_t::try_from(id).ok());
        ProcessGroup { child, pgid, armed: true, _scratch: scratch }
    }

    /// The group leader (to take its pipes).
    pub(crate) fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's pid; `None` once it has been reaped (see [`Child::id`]).
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for the leader to exit (see [`Child::wait`]); other members of
    /// the group may still be running.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Sends `SIGKILL` to every process of the group, and to the leader if it
    /// has not been reaped yet. May be called more than once (e.g. once on a
    /// timeout and once more after the leader was reaped, for whatever it
    /// left behind); after it, dropping no longer kills.
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
        // Fails harmlessly (and sends nothing) once the leader was reaped.
        let _ = self.child.start_kill();
        self.armed = false;
    }

    /// Dropping no longer kills the group (for a child that finished on its
    /// own and whose leftovers may keep running).
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

/// Sends `signal` to `target`, with the meaning of kill(2): a positive
/// target is one process, a negative one a process group, signal 0 only
/// checks that the target exists. The crate's only call of kill(2).
#[allow(unsafe_code)] // kill(2): see the SAFETY note
fn send_signal(target: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill(2) takes two integers and touches no memory of ours; it
    // has no memory-safety preconditions. Callers only signal groups and
    // processes they started, whose ids cannot be reused while a member of
    // the group exists (or, for the leader, until it is reaped).
    let rc = unsafe { libc::kill(target, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends `SIGKILL` to every process of group `pgid`. Ids of 0 (our own
/// group) and 1 (with the minus sign: every process) are never signalled.
fn kill_group(pgid: libc::pid_t) {
    if pgid > 1 {
        // ESRCH (the group is already gone) is the expected failure.
        let _ = send_signal(-pgid, libc::SIGKILL);
    }
}

/// Whether process `pid` exists and is not a zombie (one that has exited
/// but not been reaped, e.g. by an absent init in a container, is dead).
#[cfg(test)]
pub(crate) fn is_running(pid: u32) -> bool {
    let Ok(target) = libc::pid_t::try_from(pid) else { return false };
    if target <= 0 || send_signal(target, 0).is_err() {
        return false;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Bytes read from a pipe, up to a cap.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The first bytes read, at most the cap.
    pub(crate) bytes: Vec<u8>,
    /// More than the cap arrived; the rest was read and discarded.
    pub(crate) truncated: bool,
}

/// Reads `reader` to its end (or its first error, which ends the read
/// quietly), keeping the first `cap` bytes. The rest is read and discarded,
/// so the writer never blocks on a full pipe; `truncated` tells it happened.
pub(crate) async fn read_capped<R: AsyncRead + Unpin>(mut reader: R, cap: usize) -> Captured {
    let mut out = Captured::default();
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(out.bytes.len());
                if n > room {
                    out.truncated = true;
                }
                out.bytes.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;

    /// `sh -c script` with stdout piped.
    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        cmd
    }

    /// Starts a shell that starts `sleep 30` in its group and waits for it;
    /// returns the group and the pids of the shell and of the sleep.
    async fn with_grandchild() -> (ProcessGroup, u32, u32) {
        let mut group = ProcessGroup::spawn(&mut sh("sleep 30 & echo $!; wait"), &EnvPolicy::only(&["PATH"])).unwrap();
        let stdout = group.child_mut().stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).await.unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let leader = group.id().unwrap();
        assert!(is_running(leader) && is_running(grandchild));
        (group, leader, grandchild)
    }

    /// Waits up to 2 s for `pid` to be gone.
    async fn gone(pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(2);
        while is_running(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        !is_running(pid)
    }

    #[tokio::test]
    async fn dropping_kills_the_whole_group() {
        let (group, leader, grandchild) = with_grandchild().await;
        drop(group);
        assert!(gone(grandchild).await, "grandchild {grandchild} survived the drop");
        assert!(gone(leader).await, "leader {leader} survived the drop");
    }

    #[tokio::test]
    async fn kill_kills_the_whole_group_and_the_leader_is_reaped() {
        let (mut group, _, grandchild) = with_grandchild().await;
        assert_eq!(group.pgid, libc::pid_t::try_from(group.id().unwrap()).ok());
        group.kill();
        let status = tokio::time::timeout(Duration::from_secs(2), group.wait()).await.unwrap().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(gone(grandchild).await, "grandchild {grandchild} survived kill");
        // Killing again after the leader was reaped is harmless.
        group.kill();
        assert_eq!(group.id(), None);
    }

    #[tokio::test]
    async fn a_disarmed_group_survives_the_drop() {
        let (mut group, _, grandchild) = with_grandchild().await;
        let pgid = group.pgid.unwrap();
        group.disarm();
        // Only the leader goes (tokio's kill_on_drop); the rest of its group stays.
        drop(group);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(is_running(grandchild), "a disarmed guard killed {grandchild}");
        kill_group(pgid);
        assert!(gone(grandchild).await, "grandchild {grandchild} survived kill_group");
    }

    #[test]
    fn no_signal_to_our_own_group_or_everyone() {
        // Would kill the test process (0) or everything it may signal (1).
        kill_group(0);
        kill_group(1);
        kill_group(-5);
        assert!(is_running(std::process::id()));
        assert!(!is_running(0));
    }

    #[tokio::test]
    async fn output_is_capped_and_drained() {
        let mut group =
            ProcessGroup::spawn(&mut sh("head -c 300000 /dev/zero | tr '\\0' x"), &EnvPolicy::only(&["PATH"])).unwrap();
        let stdout = group.child_mut().stdout.take().unwrap();
        let got = read_capped(stdout, 1000).await;
        assert_eq!(got.bytes, vec![b'x'; 1000]);
        assert!(got.truncated);
        // Everything was read: the writer was not left blocked on the pipe.
        let status = tokio::time::timeout(Duration::from_secs(5), group.wait()).await.unwrap().unwrap();
        assert!(status.success());

        for (cap, truncated) in [(6, false), (5, true), (0, true), (100, false)] {
            let got = read_capped(&b"abcdef"[..], cap).await;
            assert_eq!(got.bytes, &b"abcdef"[..cap.min(6)]);
            assert_eq!(got.truncated, truncated, "cap {cap}");
        }
        assert_eq!(read_capped(&b""[..], 0).await, Captured::default());
    }

    /// The environment `env` prints in a child spawned under `policy`.
    async fn child_env(policy: &EnvPolicy) -> BTreeMap<String, String> {
        let mut cmd = Command::new("/usr/bin/env");
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut group = ProcessGroup::spawn(&mut cmd, policy).unwrap();
        let stdout = group.child_mut().stdout.take().unwrap();
        let out = read_capped(stdout, 1 << 20).await;
        assert!(group.wait().await.unwrap().success());
        String::from_utf8(out.bytes)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[tokio::test]
    async fn the_environment_is_only_the_policy() {
        const NAMES: &[&str] = &["PATH", "HOME", "WREPL_TEST_SURELY_UNSET_VARIABLE"];
        let policy = EnvPolicy::only(NAMES).set("WREPL_EXTRA", "1").set_all([("HOME", "/nowhere"), ("B", "2")]);
        assert_eq!(policy.host, HostEnv::Only(NAMES));
        let env = child_env(&policy).await;
        let mut expected = BTreeMap::new();
        if let Ok(path) = std::env::var("PATH") {
            expected.insert("PATH".to_string(), path);
        }
        expected.insert("HOME".to_string(), "/nowhere".to_string());
        expected.insert("WREPL_EXTRA".to_string(), "1".to_string());
        expected.insert("B".to_string(), "2".to_string());
        assert_eq!(env, expected);
        // cargo sets this for the test process; it must not leak.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());

        assert_eq!(child_env(&EnvPolicy::only(&[])).await, BTreeMap::new());
    }
}
