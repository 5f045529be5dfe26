//! Raw system calls: what a confined child does between `fork` and `exec`
//! ([`install`]), and the few queries the parent makes ([`euid`],
//! [`landlock_abi`], [`mount_flags`], the dumpable flag).
//!
//! Together with `send_signal` in the module root this file holds every
//! `unsafe` block of the process module; nothing else in the crate forks.
//!
//! # The child's rules
//!
//! The closure [`install`] registers runs in the child of a multi-threaded
//! process, after `fork` and before `exec`. There only async-signal-safe work
//! is allowed, so [`Plan::enter`] makes raw system calls on data the parent
//! prepared before the fork (C strings, byte buffers, descriptors): it does
//! not allocate, take locks or use Rust's I/O, and the only memory it writes
//! is on its own stack. Errors are errno values, reported to the parent as
//! one [`Step`] byte and the errno through the report pipe.
//!
//! # The steps, in order
//!
//! In the child std forked (the *supervisor*, which keeps the pid the
//! parent knows, so signals to its process group reach the command too):
//!
//! 1. `PR_SET_PDEATHSIG(SIGKILL)`, then `getppid()` must still be wrepl;
//! 2. when wrepl is not root: `unshare(CLONE_NEWUSER)` and the `setgroups`,
//!    `uid_map` and `gid_map` files, mapping the own uid and gid to themselves
//!    (see [`write_id_maps`] for why the process is briefly dumpable then);
//! 3. `unshare` of a mount, a PID and (without `allowNet`) a network namespace;
//! 4. with a PID namespace, the *init* (pid 1 of the new namespace) is
//!    started with `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, the
//!    way `posix_spawn` starts a child: wrepl's (large) address space is not
//!    copied a second time, and the supervisor is suspended until the init
//!    has exec'd. The supervisor then closes every descriptor but one, waits
//!    for the init and `_exit`s with its status (re-raising a signal death);
//!    it never returns to std, so it never execs. When the init ends, the
//!    kernel kills everything left in its namespace: `setsid`, `nohup` and
//!    double forks cannot outlive the command.
//!
//! In the init (or, without a PID namespace, in the supervisor itself):
//!
//! 5. `PR_SET_PDEATHSIG(SIGKILL)` again (a new process does not inherit it),
//!    and the supervisor must still be alive (a pipe whose write end only
//!    the supervisor holds);
//! 6. every mount made private, a fresh `proc` on `/proc`, the bind mounts
//!    that hide the protected paths (remounted read-only), `lo` up;
//! 7. every descriptor above 2 close-on-exec, `no_new_privs`, and Landlock's
//!    `landlock_restrict_self` as the very last step (a Landlock domain
//!    forbids mount changes, so the hiding binds cannot be undone);
//! 8. the init execs the command itself ([`Exec`], prepared by the parent);
//!    without a PID namespace std does.

#![allow(unsafe_code)] // fork-to-exec code and raw system calls; see the SAFETY notes

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;

use libc::{c_int, c_ulong, pid_t};

/// `close_range(2)` flag: mark the descriptors close-on-exec instead of closing them.
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
/// `landlock_create_ruleset(2)` flag: return the ABI version.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
/// Highest descriptor the fallback loops touch when `close_range` is missing.
const FALLBACK_MAX_FD: c_int = 65_536;

/// One step of a child's setup. The one that fails is reported to the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Step {
    /// The supervisor's parent-death signal.
    ParentDeath = 1,
    /// `unshare(CLONE_NEWUSER)`.
    UserNamespace,
    /// The `setgroups`, `uid_map` and `gid_map` files.
    IdMaps,
    /// `unshare(CLONE_NEWNS)`.
    MountNamespace,
    /// `unshare(CLONE_NEWPID)`.
    PidNamespace,
    /// `unshare(CLONE_NEWNET)`.
    NetNamespace,
    /// The fork of the namespace's init.
    Fork,
    /// The init's parent-death signal.
    InitDeath,
    /// Making every mount private.
    PrivateMounts,
    /// Mounting a fresh `/proc`.
    Proc,
    /// A bind mount over a protected path.
    Hide,
    /// Bringing `lo` up.
    Loopback,
    /// Marking inherited descriptors close-on-exec.
    Descriptors,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// `landlock_restrict_self`.
    Landlock,
    /// The init's `execve` of the command.
    Exec,
}

impl Step {
    const ALL: [Step; 16] = [
        Step::ParentDeath,
        Step::UserNamespace,
        Step::IdMaps,
        Step::MountNamespace,
        Step::PidNamespace,
        Step::NetNamespace,
        Step::Fork,
        Step::InitDeath,
        Step::PrivateMounts,
        Step::Proc,
        Step::Hide,
        Step::Loopback,
        Step::Descriptors,
        Step::NoNewPrivs,
        Step::Landlock,
        Step::Exec,
    ];

    /// The step a report byte names.
    pub(super) fn from_code(code: u8) -> Option<Step> {
        Step::ALL.iter().copied().find(|s| *s as u8 == code)
    }

    /// What the step does, for messages.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Step::ParentDeath => "setting the parent-death signal",
            Step::UserNamespace => "creating a user namespace (unshare CLONE_NEWUSER)",
            Step::IdMaps => "writing the user namespace's uid_map/gid_map",
            Step::MountNamespace => "creating a mount namespace (unshare CLONE_NEWNS)",
            Step::PidNamespace => "creating a PID namespace (unshare CLONE_NEWPID)",
            Step::NetNamespace => "creating a network namespace (unshare CLONE_NEWNET)",
            Step::Fork => "starting the PID namespace's init (fork)",
            Step::InitDeath => "setting the init's parent-death signal",
            Step::PrivateMounts => "making the mounts private",
            Step::Proc => "mounting a fresh /proc",
            Step::Hide => "hiding a protected path (bind mount)",
            Step::Loopback => "bringing the loopback interface up",
            Step::Descriptors => "marking inherited descriptors close-on-exec",
            Step::NoNewPrivs => "setting no_new_privs",
            Step::Landlock => "enforcing the Landlock ruleset (landlock_restrict_self)",
            Step::Exec => "starting the command (execve)",
        }
    }
}

/// A bind mount of an empty file or directory over a protected path.
#[derive(Debug)]
pub(super) struct Hide {
    /// The empty file or directory (in the per-call scratch directory).
    pub(super) source: CString,
    /// The protected path.
    pub(super) target: CString,
    /// `MS_NOSUID`/`MS_NODEV`/`MS_NOEXEC` of the source's mount, which a
    /// read-only remount inside a user namespace must keep.
    pub(super) flags: c_ulong,
    /// Remount the bind read-only (a hide); false for a pin, a directory
    /// bound onto itself so that it cannot be renamed or removed.
    pub(super) read_only: bool,
}

/// The contents of the id-map files of a new user namespace.
#[derive(Debug)]
pub(super) struct IdMaps {
    /// `uid_map`: `<uid> <uid> 1`.
    pub(super) uid_map: Vec<u8>,
    /// `gid_map`: `<gid> <gid> 1`.
    pub(super) gid_map: Vec<u8>,
}

/// The program the init execs, with its arguments and environment, as the
/// NUL-terminated pointer arrays `execve(2)` takes (prepared before the
/// fork: the init cannot allocate).
#[derive(Debug)]
pub(super) struct Exec {
    /// The program: an absolute path (no `PATH` search).
    path: CString,
    /// The strings the pointers point into.
    _strings: Vec<CString>,
    /// `argv`: the path, the arguments, null.
    argv: Vec<*const libc::c_char>,
    /// `envp`: `KEY=value` strings, null.
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the heap buffers of the `CString`s this
// struct owns, which are never changed or freed while it exists; they are
// only read (by execve).
unsafe impl Send for Exec {}
// SAFETY: as for `Send`: shared access only reads.
unsafe impl Sync for Exec {}

impl Exec {
    /// `path` with `args` (argv[0] is the path) and the environment `env`.
    pub(super) fn new(path: CString, args: Vec<CString>, env: Vec<CString>) -> Exec {
        let mut argv: Vec<*const libc::c_char> = Vec::with_capacity(args.len() + 2);
        argv.push(path.as_ptr());
        argv.extend(args.iter().map(|a| a.as_ptr()));
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        let mut strings = args;
        strings.extend(env);
        Exec { path, _strings: strings, argv, envp }
    }
}

/// Everything a confined child does, prepared before the fork.
#[derive(Debug)]
pub(super) struct Plan {
    /// wrepl's pid: the supervisor's parent must still be this.
    pub(super) host_pid: pid_t,
    /// Create a user namespace with these maps first.
    pub(super) id_maps: Option<IdMaps>,
    /// Create a mount namespace (and make every mount private).
    pub(super) mount_ns: bool,
    /// Create a PID namespace, and start its init, which execs `exec`.
    pub(super) pid_ns: bool,
    /// What the init execs (required with `pid_ns`).
    pub(super) exec: Option<Exec>,
    /// Create a network namespace.
    pub(super) net_ns: bool,
    /// Mount a fresh `proc` on `/proc` (needs the mount and PID namespaces).
    pub(super) proc: bool,
    /// Bind mounts over the protected paths (needs the mount namespace).
    pub(super) hides: Vec<Hide>,
    /// Bring `lo` up (needs the network namespace).
    pub(super) loopback: bool,
    /// The Landlock ruleset, enforced last.
    pub(super) landlock: Option<OwnedFd>,
    /// Write end of the report pipe (close-on-exec).
    pub(super) report: OwnedFd,
}

/// Makes `cmd` run `plan` in its child before exec.
pub(super) fn install(cmd: &mut std::process::Command, plan: Plan) {
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed. `Plan::enter` only makes raw system
    // calls on data prepared before the fork (owned by `plan`, which the
    // closure owns): no allocation, no locks, no std I/O; it writes only its
    // own stack. In the parent the closure is never called, and dropping the
    // command drops `plan` (closing its descriptors).
    unsafe {
        cmd.pre_exec(move || plan.enter());
    }
}

/// The current errno.
fn errno() -> c_int {
    // Reads errno; `Error::last_os_error` does not allocate.
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// `Ok` when a system call returned 0, else the errno.
fn check_zero(rc: libc::c_long) -> Result<(), c_int> {
    if rc == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

impl Plan {
    /// Runs in the child: every step of the module docs, in order. Returns
    /// only in the process that goes on to exec the command.
    fn enter(&self) -> io::Result<()> {
        self.step(Step::ParentDeath, die_with_parent(self.host_pid))?;
        unblock_all_signals();
        if let Some(maps) = &self.id_maps {
            self.step(Step::UserNamespace, unshare(libc::CLONE_NEWUSER))?;
            self.step(Step::IdMaps, write_id_maps(maps))?;
        }
        if self.mount_ns {
            self.step(Step::MountNamespace, unshare(libc::CLONE_NEWNS))?;
        }
        if self.pid_ns {
            self.step(Step::PidNamespace, unshare(libc::CLONE_NEWPID))?;
        }
        if self.net_ns {
            self.step(Step::NetNamespace, unshare(libc::CLONE_NEWNET))?;
        }
        if self.pid_ns {
            return self.start_init();
        }
        self.init_steps()
    }

    /// The steps of the process that execs the command (the init, or the
    /// supervisor itself without a PID namespace): 6 and 7 of the module docs.
    fn init_steps(&self) -> io::Result<()> {
        if self.mount_ns {
            self.step(Step::PrivateMounts, mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE))?;
        }
        if self.proc {
            let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            self.step(Step::Proc, mount(Some(c"proc"), c"/proc", Some(c"proc"), flags))?;
        }
        for hide in &self.hides {
            self.step(Step::Hide, bind_read_only(hide))?;
        }
        if self.loopback {
            self.step(Step::Loopback, loopback_up())?;
        }
        self.step(Step::Descriptors, cloexec_from(3))?;
        self.step(Step::NoNewPrivs, no_new_privs())?;
        if let Some(ruleset) = &self.landlock {
            self.step(Step::Landlock, landlock_restrict(ruleset.as_raw_fd()))?;
        }
        Ok(())
    }

    /// Reports a failed step to the parent and turns it into the error std
    /// hands back from `spawn`.
    fn step(&self, step: Step, result: Result<(), c_int>) -> io::Result<()> {
        result.map_err(|errno| {
            let mut buf = [0u8; 5];
            buf[0] = step as u8;
            buf[1..].copy_from_slice(&errno.to_ne_bytes());
            // SAFETY: write(2) of a 5-byte stack buffer to a descriptor we own;
            // a failure (the parent is gone) leaves nothing to do.
            unsafe { libc::write(self.report.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
            io::Error::from_raw_os_error(errno)
        })
    }

    /// Starts the new PID namespace's init and supervises it; never returns.
    fn start_init(&self) -> io::Result<()> {
        let Some(exec) = &self.exec else {
            return self.step(Step::Fork, Err(libc::EINVAL));
        };
        let mut alive: [c_int; 2] = [-1, -1];
        // SAFETY: pipe2(2) writes two descriptors into the stack array.
        if unsafe { libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return self.step(Step::Fork, Err(errno()));
        }
        // wrepl's handlers must not run in this process or the init:
        // default dispositions, so a signal that ends the supervisor ends
        // the command too (its init has a parent-death signal).
        default_signal_dispositions();
        // SAFETY: mmap(2) of a private anonymous region; checked below.
        let stack = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                INIT_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if stack == libc::MAP_FAILED {
            return self.step(Step::Fork, Err(errno()));
        }
        let start = InitStart { plan: self, exec, alive };
        // SAFETY: CLONE_VM | CLONE_VFORK, as posix_spawn does: the init runs
        // `init_main` on the fresh stack (its top, 16-byte aligned, as the
        // stack grows down) and shares our memory until it execs or exits,
        // while this process is suspended. `init_main` only reads `start`
        // (alive on our stack for that whole time) and makes raw system
        // calls; it never returns into our frames.
        let pid = unsafe {
            let top = stack.cast::<u8>().add(INIT_STACK).cast::<libc::c_void>();
            libc::clone(
                init_main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::addr_of!(start).cast_mut().cast(),
            )
        };
        if pid < 0 {
            return self.step(Step::Fork, Err(errno()));
        }
        // SAFETY: closing the read end; only the init keeps one (until exec).
        unsafe { libc::close(alive[0]) };
        supervise(pid, alive[1])
    }
}

/// Size of the init's stack until it execs.
const INIT_STACK: usize = 256 * 1024;

/// What the init gets: the plan, the program, the liveness pipe.
struct InitStart<'a> {
    plan: &'a Plan,
    exec: &'a Exec,
    /// Read end, write end.
    alive: [RawFd; 2],
}

/// The init, until it execs: steps 5 to 8 of the module docs. Runs on its own
/// stack in the supervisor's memory (which is suspended meanwhile).
extern "C" fn init_main(arg: *mut libc::c_void) -> c_int {
    // SAFETY: `arg` is the `InitStart` in `start_init`'s frame, which stays
    // alive and unchanged until this process execs or exits.
    let start = unsafe { &*arg.cast::<InitStart<'_>>() };
    let plan = start.plan;
    // Only the supervisor may hold the write end (this process has a copy
    // of its descriptor table).
    // SAFETY: close(2) of our copy.
    unsafe { libc::close(start.alive[1]) };
    if plan.step(Step::InitDeath, die_with_supervisor(start.alive[0])).is_err() || plan.init_steps().is_err() {
        // SAFETY: _exit(2) ends only this process (its own thread group).
        unsafe { libc::_exit(127) };
    }
    // SAFETY: execve(2) with a NUL-terminated path and null-terminated
    // pointer arrays into strings `exec` owns.
    unsafe { libc::execve(start.exec.path.as_ptr(), start.exec.argv.as_ptr(), start.exec.envp.as_ptr()) };
    let _ = plan.step(Step::Exec, Err(errno()));
    // SAFETY: as above.
    unsafe { libc::_exit(127) }
}

/// Resets every catchable signal to its default disposition.
fn default_signal_dispositions() {
    for sig in 1..=64 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: signal(2) with a valid disposition; invalid numbers
            // (glibc's reserved ones) fail harmlessly.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
}

/// Sets the parent-death signal and checks that the parent is still `parent`
/// (it may have died before the signal was set).
fn die_with_parent(parent: pid_t) -> Result<(), c_int> {
    // SAFETY: prctl(2) with integer arguments.
    check_zero(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_ulong, 0, 0, 0) }.into())?;
    // SAFETY: getppid(2) has no arguments.
    if unsafe { libc::getppid() } == parent {
        Ok(())
    } else {
        Err(libc::ESRCH)
    }
}

/// The init's parent-death signal. Its parent (the supervisor) is outside
/// the new PID namespace, so `getppid` says 0; instead `alive` is a pipe
/// whose only write end the supervisor holds: a hang-up means it is gone.
fn die_with_supervisor(alive: RawFd) -> Result<(), c_int> {
    // SAFETY: prctl(2) with integer arguments.
    check_zero(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_ulong, 0, 0, 0) }.into())?;
    let mut fds = libc::pollfd { fd: alive, events: libc::POLLIN, revents: 0 };
    // SAFETY: poll(2) on one pollfd on our stack, without waiting.
    let n = unsafe { libc::poll(&mut fds, 1, 0) };
    // SAFETY: closing our read end of the pipe.
    unsafe { libc::close(alive) };
    match n {
        0 => Ok(()),
        n if n < 0 => Err(errno()),
        _ => Err(libc::ESRCH),
    }
}

/// The supervisor: waits for the init and exits with its status. Keeps only
/// `keep` (the write end of the init's liveness pipe) open, so the caller's
/// pipes see their end when the command's processes are gone.
fn supervise(init: pid_t, keep: RawFd) -> ! {
    // SAFETY: integer-only system calls; `status` is on our stack; _exit(2)
    // ends the process without running anything of the parent's.
    unsafe {
        // This process is a copy of wrepl's memory: never dump it.
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as c_ulong, 0, 0, 0);
        if keep > 0 {
            close_range(0, keep as libc::c_uint - 1);
        }
        close_range(keep as libc::c_uint + 1, libc::c_uint::MAX);
        let mut status: c_int = 0;
        loop {
            let r = libc::waitpid(init, &mut status, 0);
            if r == init {
                break;
            }
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            // Cannot wait: exiting makes the init's parent-death signal end it.
            libc::_exit(126);
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(126)
    }
}

/// Closes descriptors `first..=last` (close_range(2), or one by one).
fn close_range(first: libc::c_uint, last: libc::c_uint) {
    // SAFETY: close_range(2)/close(2) take integers.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint) != 0 {
            let end = last.min(FALLBACK_MAX_FD as libc::c_uint);
            let mut fd = first;
            while fd <= end {
                libc::close(fd as c_int);
                fd += 1;
            }
        }
    }
}

/// Marks every descriptor from `first` on close-on-exec, so the command gets
/// only its stdio whatever the host left inheritable.
fn cloexec_from(first: libc::c_uint) -> Result<(), c_int> {
    // SAFETY: close_range(2) and fcntl(2) take integers.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC) == 0 {
            return Ok(());
        }
        for fd in first as c_int..FALLBACK_MAX_FD {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) != 0 {
                return Err(errno());
            }
        }
    }
    Ok(())
}

/// Unblocks every signal (the mask is inherited across fork and exec).
fn unblock_all_signals() {
    // SAFETY: a sigset on our stack, emptied and installed as the mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// unshare(2).
fn unshare(flags: c_int) -> Result<(), c_int> {
    // SAFETY: unshare(2) takes an integer.
    check_zero(unsafe { libc::unshare(flags) }.into())
}

/// Writes `data` to the file `path` in one write(2).
fn write_file(path: &CStr, data: &[u8]) -> Result<(), c_int> {
    // SAFETY: open/write/close on a NUL-terminated path and a byte slice we own.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let e = errno();
        libc::close(fd);
        if n == data.len() as isize {
            Ok(())
        } else if n < 0 {
            Err(e)
        } else {
            Err(libc::EIO)
        }
    }
}

/// The new user namespace's `setgroups` (deny, as an unprivileged process
/// must before writing `gid_map`), `uid_map` and `gid_map`.
///
/// wrepl is not dumpable, and so neither is this copy of it: its `/proc/self`
/// files then belong to the initial namespace's root, and an unprivileged
/// process cannot open its own map files. So the process is dumpable for
/// the three writes only, and not dumpable again right after (also on
/// failure). In that window no command exists yet, and other confined
/// commands cannot name this process (they live in PID namespaces of
/// their own).
fn write_id_maps(maps: &IdMaps) -> Result<(), c_int> {
    set_dumpable(true)?;
    let written = write_file(c"/proc/self/setgroups", b"deny")
        .and_then(|()| write_file(c"/proc/self/uid_map", &maps.uid_map))
        .and_then(|()| write_file(c"/proc/self/gid_map", &maps.gid_map));
    let undone = set_dumpable(false);
    written.and(undone)
}

/// `PR_SET_DUMPABLE`.
fn set_dumpable(yes: bool) -> Result<(), c_int> {
    // SAFETY: prctl(2) with integer arguments.
    check_zero(
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, c_ulong::from(yes), 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) }
            .into(),
    )
}

/// mount(2).
fn mount(source: Option<&CStr>, target: &CStr, fstype: Option<&CStr>, flags: c_ulong) -> Result<(), c_int> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: NUL-terminated strings (or null, which mount(2) accepts for
    // these arguments) and no data argument.
    check_zero(unsafe { libc::mount(ptr(source), target.as_ptr(), ptr(fstype), flags, std::ptr::null()) }.into())
}

/// Binds `hide.source` over `hide.target`, then makes that bind read-only.
/// A target that no longer exists (an earlier bind hid a directory above
/// it) is hidden already.
fn bind_read_only(hide: &Hide) -> Result<(), c_int> {
    match mount(Some(&hide.source), &hide.target, None, libc::MS_BIND) {
        Ok(()) => {}
        Err(libc::ENOENT | libc::ENOTDIR) => return Ok(()),
        Err(e) => return Err(e),
    }
    if !hide.read_only {
        return Ok(());
    }
    mount(None, &hide.target, None, libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | hide.flags)
}

/// Brings the network namespace's `lo` up (SIOCSIFFLAGS).
fn loopback_up() -> Result<(), c_int> {
    // SAFETY: socket/ioctl/close on a descriptor we own; `req` is a zeroed
    // ifreq on our stack (all-zero is a valid ifreq).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as libc::c_short;
        let rc = libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &req);
        let e = errno();
        libc::close(fd);
        if rc < 0 {
            Err(e)
        } else {
            Ok(())
        }
    }
}

/// `PR_SET_NO_NEW_PRIVS`: exec can never grant privileges (setuid bits,
/// file capabilities) again.
fn no_new_privs() -> Result<(), c_int> {
    // SAFETY: prctl(2) with integer arguments.
    check_zero(
        unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) }
            .into(),
    )
}

/// landlock_restrict_self(2) with the ruleset `fd`.
fn landlock_restrict(fd: RawFd) -> Result<(), c_int> {
    // SAFETY: the system call takes a descriptor and flags.
    check_zero(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) })
}

// ---------------------------------------------------------------------------
// Queries of the parent

/// The effective user id.
pub(super) fn euid() -> u32 {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The effective group id.
pub(super) fn egid() -> u32 {
    // SAFETY: getegid(2) has no arguments and cannot fail.
    unsafe { libc::getegid() }
}

/// The Landlock ABI version the kernel offers: `Ok(0)` never happens; an
/// error is the errno (`EOPNOTSUPP`: built in but disabled, `ENOSYS`: absent).
pub(super) fn landlock_abi() -> Result<u32, c_int> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the system
    // call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        Err(errno())
    } else {
        Ok(u32::try_from(v).unwrap_or(u32::MAX))
    }
}

/// `MS_NOSUID`, `MS_NODEV` and `MS_NOEXEC` of the mount `path` is on (the
/// flags a read-only remount of a bind from there must keep; `ST_*` and
/// `MS_*` have the same values for these three).
pub(super) fn mount_flags(path: &CStr) -> io::Result<c_ulong> {
    // SAFETY: statvfs(3) fills a zeroed struct on our stack.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_flag & (libc::ST_NOSUID | libc::ST_NODEV | libc::ST_NOEXEC))
}

/// `prctl(PR_SET_DUMPABLE, 0)`: no core dumps of wrepl, and no other process
/// of the same user may ptrace it or read its `/proc/<pid>/environ` or memory.
pub(super) fn set_not_dumpable() -> io::Result<()> {
    // SAFETY: prctl(2) with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Let a write to a closed pipe end the process quietly (`SIGPIPE` back
/// to its default), as it does for other command-line tools.
pub(super) fn default_sigpipe() -> io::Result<()> {
    // SAFETY: signal(2) with a constant disposition and no handler code.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) } == libc::SIG_ERR {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Whether wrepl is dumpable (`PR_GET_DUMPABLE`).
pub(super) fn is_dumpable() -> io::Result<bool> {
    // SAFETY: prctl(2) with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc != 0)
    }
}

/// Whether `no_new_privs` is set on wrepl itself (`PR_GET_NO_NEW_PRIVS`).
pub(super) fn has_no_new_privs() -> io::Result<bool> {
    // SAFETY: prctl(2) with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip_their_codes() {
        for step in Step::ALL {
            assert_eq!(Step::from_code(step as u8), Some(step));
            assert!(!step.describe().is_empty());
        }
        assert_eq!(Step::from_code(0), None);
        assert_eq!(Step::from_code(200), None);
    }
}
