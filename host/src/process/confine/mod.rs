//! Confinement of the commands `Bash` runs (Linux), by the kernel's own
//! mechanisms and without a helper binary.
//!
//! A confined command:
//!
//! - **writes only in the workspace roots and a per-call temp dir** (Landlock:
//!   reading and executing are allowed everywhere, every write, make, remove,
//!   rename and truncate right only beneath those directories, plus writing
//!   the character devices `/dev/null`, `/dev/zero`, `/dev/full` and
//!   `/dev/tty`; on ABI 6 and later it also cannot signal processes or reach
//!   abstract UNIX sockets outside its own sandbox). The temp dir is a fresh
//!   directory under the host's temp dir, passed as `TMPDIR` and removed after
//!   the call. `/tmp` itself is not writable (unless it is a root);
//! - **cannot read wrepl's own state**: in its own mount namespace an empty,
//!   read-only file or directory is bind-mounted over every protected path
//!   ([`Workspace::protected`](crate::Workspace::protected)) that exists
//!   when the command starts. Landlock then forbids any change of mounts, so
//!   not even a command running as root can remove them;
//! - **runs as pid 1 of its own PID namespace**: when it ends, or is killed
//!   (timeout, abort, end of the evaluation), every process it started dies
//!   with it, `setsid`, `nohup` and double forks included; a fresh `/proc`
//!   shows only those processes, so wrepl's `/proc/<pid>/environ` is out of
//!   sight. Parent-death signals end it when wrepl dies, even by SIGKILL;
//! - **has no network** but its own loopback interface (a new network
//!   namespace), unless `allowNet` (`--allow-net`) keeps the host's network:
//!   then it can connect and listen wherever the user can;
//! - runs with `no_new_privs` (setuid programs and file capabilities grant
//!   nothing) and the minimal environment.
//!
//! When wrepl is not root, a user namespace (mapping the own uid and gid to
//! themselves) makes the other namespaces possible without privileges.
//!
//! # Modes
//!
//! What works is probed once per process ([`probe`]: a trivial confined
//! `/bin/true`, with every mechanism, dropping what fails). With
//! [`ConfineMode::Prefer`] (the default) a command runs with what works, and
//! the first command prints one warning on stderr naming what is missing and
//! what that means; with [`ConfineMode::Require`] Bash refuses to run when
//! anything is missing; [`ConfineMode::Off`] runs commands as plain children
//! (own process group, minimal environment) as before.
//!
//! # Limits
//!
//! - Reads are allowed everywhere the user can read, except the hidden
//!   protected paths; `Read` deny rules do not apply to commands.
//! - A protected path created after the command started is not hidden; one
//!   inside a writable root cannot be changed or removed (it is a mount
//!   point), nor can the directories between it and the root (each is bound
//!   onto itself, so `mv state elsewhere` cannot expose it to a later command).
//! - Pathname UNIX sockets (e.g. a Docker socket) are reachable whenever the
//!   user may connect to them: Landlock restricts them only from ABI 9 on,
//!   which this crate does not request yet.
//! - As root, device nodes the user may open (raw disks) stay readable.
//! - When wrepl is SIGKILLed, the per-call temp dirs of running commands are
//!   left behind in the host's temp dir until the next wrepl of the same
//!   user starts a confined command (it removes them).
//! - Starting a confined command costs about 10 ms more than a plain child
//!   (creating and tearing down the namespaces, and one fork of wrepl itself);
//!   commands start in parallel on a few spawner threads.
//!
//! # Layout
//!
//! `policy` holds the modes and the mechanisms ([`Feature`]); `probe` finds
//! out once what works here; `launch` decides how to run a command and
//! starts it; `plan` turns a request into the child's plan (exec,
//! namespaces, the bind mounts that hide protected paths), with the Landlock
//! ruleset from `landlock`; `scratch` is the per-call temp dir.

use std::io;

use super::sys;

mod landlock;
mod launch;
mod plan;
mod policy;
mod probe;
mod scratch;
#[cfg(test)]
mod tests;

pub use launch::warn_if_incomplete;
pub(crate) use launch::{spawn, ConfineError, Request, Spawned};
pub use policy::{wanted, ConfineMode, ConfineModeError, Confinement, Feature};
pub use probe::{probe, Probe};
pub(crate) use scratch::Scratch;

/// The only variables of wrepl's environment that Bash commands and hooks
/// get (each when it is set); a confined command's `TMPDIR` is its own.
pub const MINIMAL_ENV: &[&str] = super::MINIMAL_ENV;

/// Whether wrepl is dumpable (`PR_GET_DUMPABLE`): with 0, other processes of
/// the user can neither ptrace it nor read its `/proc/<pid>/environ`.
pub fn is_dumpable() -> io::Result<bool> {
    sys::is_dumpable()
}

/// Makes wrepl not dumpable (`PR_SET_DUMPABLE 0`); the CLI does this first.
pub fn set_not_dumpable() -> io::Result<()> {
    sys::set_not_dumpable()
}

/// Restores `SIGPIPE`'s default for a command whose output goes to a
/// pipe (`wrepl log show s | head -1`): a closed pipe then ends it quietly,
/// where the Rust runtime's ignored `SIGPIPE` would make every later print
/// fail (and `println!` panic). Only for commands that just print: one
/// that writes to a child (a hook, an MCP server) or serves clients must
/// not end when the other side goes away.
pub fn default_sigpipe() -> io::Result<()> {
    sys::default_sigpipe()
}

/// Whether `no_new_privs` is set on wrepl itself (it is always set on
/// confined commands).
pub fn has_no_new_privs() -> io::Result<bool> {
    sys::has_no_new_privs()
}
