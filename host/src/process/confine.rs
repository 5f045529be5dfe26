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

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::process::Command;

use super::sys::{self, Exec, Hide, IdMaps, Plan, Step};
use super::{spawner, EnvPolicy, ProcessGroup};

/// The only variables of wrepl's environment that Bash commands and hooks
/// get (each when it is set); a confined command's `TMPDIR` is its own.
pub const MINIMAL_ENV: &[&str] = super::MINIMAL_ENV;

/// How `Bash` commands are confined: the `confine` settings key and the
/// `--confine` flag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfineMode {
    /// Refuse to run a command when any part of the confinement cannot be set up.
    Require,
    /// Confine as far as this machine allows; warn once about the rest. The default.
    #[default]
    Prefer,
    /// No confinement: a plain child in its own process group, with the
    /// minimal environment.
    Off,
}

impl ConfineMode {
    /// Every mode, with its name.
    pub const ALL: [(&'static str, ConfineMode); 3] =
        [("require", ConfineMode::Require), ("prefer", ConfineMode::Prefer), ("off", ConfineMode::Off)];

    /// The mode's name in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfineMode::Require => "require",
            ConfineMode::Prefer => "prefer",
            ConfineMode::Off => "off",
        }
    }
}

impl std::fmt::Display for ConfineMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A confinement mode that is not `require`, `prefer` or `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected \"require\", \"prefer\" or \"off\", got {0:?}")]
pub struct ConfineModeError(pub String);

impl FromStr for ConfineMode {
    type Err = ConfineModeError;

    /// Exactly `require`, `prefer` or `off`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ConfineMode::ALL.iter().find(|(name, _)| *name == s).map(|(_, m)| *m).ok_or_else(|| ConfineModeError(s.into()))
    }
}

/// The confinement policy of `Bash` calls (from the settings keys `confine`
/// and `allowNet`, or `--confine` and `--allow-net`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Confinement {
    /// Whether confinement is required, preferred or off.
    pub mode: ConfineMode,
    /// Keep the host's network (no network namespace): commands can connect
    /// and listen wherever the user can.
    pub allow_net: bool,
}

/// One mechanism of the confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Feature {
    /// Landlock: writes only in the roots and the per-call temp dir.
    Landlock,
    /// A mount namespace of the command's own.
    MountNamespace,
    /// A PID namespace of the command's own.
    PidNamespace,
    /// A fresh `/proc` in it.
    ProcMount,
    /// Read-only bind mounts over the protected paths.
    HiddenPaths,
    /// A network namespace of the command's own.
    NetNamespace,
    /// Its loopback interface up.
    Loopback,
}

impl Feature {
    /// Every feature, in the order of reports.
    pub const ALL: [Feature; 7] = [
        Feature::Landlock,
        Feature::MountNamespace,
        Feature::PidNamespace,
        Feature::ProcMount,
        Feature::HiddenPaths,
        Feature::NetNamespace,
        Feature::Loopback,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Landlock => "Landlock",
            Feature::MountNamespace => "mount namespace",
            Feature::PidNamespace => "PID namespace",
            Feature::ProcMount => "fresh /proc",
            Feature::HiddenPaths => "hiding of wrepl's own files",
            Feature::NetNamespace => "network namespace",
            Feature::Loopback => "loopback interface",
        }
    }

    /// What a command can do when the feature is missing.
    pub fn consequence(self) -> &'static str {
        match self {
            Feature::Landlock => "commands can write anywhere the user can",
            Feature::MountNamespace => "wrepl's own files are not hidden and /proc is the host's",
            Feature::PidNamespace => "processes a command starts (setsid, nohup) can outlive it",
            Feature::ProcMount => "commands see the host's processes in /proc",
            Feature::HiddenPaths => "commands can read wrepl's own files (session store, settings, cache)",
            Feature::NetNamespace => "commands can reach the network",
            Feature::Loopback => "commands have no loopback interface",
        }
    }

    /// The features this one needs.
    fn needs(self) -> &'static [Feature] {
        match self {
            Feature::ProcMount => &[Feature::MountNamespace, Feature::PidNamespace],
            Feature::HiddenPaths => &[Feature::MountNamespace],
            Feature::Loopback => &[Feature::NetNamespace],
            _ => &[],
        }
    }

    /// The namespace features (impossible without privileges or a user namespace).
    fn is_namespace(self) -> bool {
        !matches!(self, Feature::Landlock)
    }
}

/// The features a confined command gets, for a network choice.
pub fn wanted(allow_net: bool) -> Vec<Feature> {
    Feature::ALL.into_iter().filter(|f| !allow_net || !matches!(f, Feature::NetNamespace | Feature::Loopback)).collect()
}

/// What confinement works on this machine, for this process (see [`probe`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// The Landlock ABI version the kernel offers (0: none).
    pub landlock_abi: u32,
    /// wrepl runs as root: the namespaces need no user namespace.
    pub root: bool,
    /// A user namespace is created for the others.
    pub user_namespace: bool,
    /// Why a user namespace could not be created, when that was tried.
    pub user_namespace_error: Option<String>,
    /// The features that cannot be set up, and why.
    pub missing: BTreeMap<Feature, String>,
}

impl Probe {
    /// Whether `feature` works.
    pub fn available(&self, feature: Feature) -> bool {
        !self.missing.contains_key(&feature)
    }

    /// The features of `wanted` that do not work, with the reason.
    pub fn missing_of(&self, wanted: &[Feature]) -> Vec<(Feature, &str)> {
        wanted.iter().filter_map(|f| self.missing.get(f).map(|why| (*f, why.as_str()))).collect()
    }

    /// Nothing works (a confined child cannot be started at all).
    pub fn nothing_works(&self) -> bool {
        Feature::ALL.iter().all(|f| !self.available(*f))
    }

    /// Marks `feature` missing, and everything that needs it.
    fn drop_feature(&mut self, feature: Feature, why: String) {
        for f in Feature::ALL {
            if (f == feature || f.needs().contains(&feature)) && !self.missing.contains_key(&f) {
                let reason = if f == feature { why.clone() } else { format!("needs the {}", feature.name()) };
                self.missing.insert(f, reason);
            }
        }
    }

    /// Marks everything missing.
    fn drop_all(&mut self, why: &str) {
        for f in Feature::ALL {
            self.missing.entry(f).or_insert_with(|| why.to_string());
        }
    }

    /// One line per feature, as `wrepl doctor` prints them: `name: yes`,
    /// or `name: NO — reason; consequence`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.push(match (self.available(Feature::Landlock), self.landlock_abi) {
            (true, abi) => format!(
                "landlock: ABI {abi} (writes only in the workspace roots and the per-call TMPDIR{})",
                if abi >= 6 { "; no signals or abstract sockets out of the sandbox" } else { "" }
            ),
            (false, _) => self.no_line("landlock", Feature::Landlock),
        });
        out.push(match (&self.user_namespace_error, self.root, self.user_namespace) {
            (Some(e), _, _) => format!("user namespace: NO — {e}"),
            (None, true, false) => "user namespace: not needed (running as root)".into(),
            (None, _, true) => "user namespace: yes (own uid and gid mapped to themselves)".into(),
            (None, false, false) => "user namespace: NO".into(),
        });
        for (key, feature) in [
            ("mount namespace", Feature::MountNamespace),
            ("pid namespace", Feature::PidNamespace),
            ("/proc remount", Feature::ProcMount),
            ("protected paths hidden", Feature::HiddenPaths),
        ] {
            out.push(if self.available(feature) { format!("{key}: yes") } else { self.no_line(key, feature) });
        }
        out.push(match (self.available(Feature::NetNamespace), self.available(Feature::Loopback)) {
            (true, true) => "network namespace: yes (loopback only, unless allowNet / --allow-net)".into(),
            (true, false) => format!(
                "network namespace: yes, but no loopback — {}",
                self.missing.get(&Feature::Loopback).map(String::as_str).unwrap_or("")
            ),
            (false, _) => self.no_line("network namespace", Feature::NetNamespace),
        });
        out
    }

    fn no_line(&self, key: &str, feature: Feature) -> String {
        let why = self.missing.get(&feature).map(String::as_str).unwrap_or("not available");
        format!("{key}: NO — {why}; {}", feature.consequence())
    }
}

/// The probe's result, run once per process (on first use) and cached. Runs
/// a trivial `/bin/true` under the full confinement and, when a step fails,
/// again without that mechanism (and what needs it), until one runs.
pub fn probe() -> &'static Probe {
    if let Some(p) = PROBE.get() {
        return p;
    }
    if spawner::on_spawner() {
        return PROBE.get_or_init(run_probe);
    }
    spawner::run_blocking(|| PROBE.get_or_init(run_probe)).unwrap_or_else(unavailable)
}

/// [`probe`] without blocking the async runtime.
pub(crate) async fn probe_async() -> &'static Probe {
    if let Some(p) = PROBE.get() {
        return p;
    }
    spawner::run(|| PROBE.get_or_init(run_probe)).await.unwrap_or_else(unavailable)
}

static PROBE: OnceLock<Probe> = OnceLock::new();

/// The probe when the spawner thread cannot be started: nothing works.
fn unavailable() -> &'static Probe {
    static NONE: OnceLock<Probe> = OnceLock::new();
    NONE.get_or_init(|| {
        let mut p = base_probe();
        p.drop_all("the thread that starts confined commands could not be started");
        p
    })
}

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

fn base_probe() -> Probe {
    let root = sys::euid() == 0;
    let mut p =
        Probe { landlock_abi: 0, root, user_namespace: !root, user_namespace_error: None, missing: BTreeMap::new() };
    match sys::landlock_abi() {
        Ok(abi) => p.landlock_abi = abi,
        Err(libc::EOPNOTSUPP) => {
            p.missing.insert(Feature::Landlock, "Landlock is built into the kernel but not enabled".into());
        }
        Err(e) => {
            let e = io::Error::from_raw_os_error(e);
            p.missing.insert(Feature::Landlock, format!("the kernel has no Landlock ({e})"));
        }
    }
    p
}

/// The probe itself (on the spawner thread).
fn run_probe() -> Probe {
    let mut p = base_probe();
    // Root without CAP_SYS_ADMIN (a container) may still get the namespaces
    // through a user namespace: tried once, on the first namespace failure.
    let mut tried_user_namespace = p.user_namespace;
    for _ in 0..16 {
        if p.nothing_works() {
            return p;
        }
        let (step, errno) = match trial(&p) {
            Ok(()) => return p,
            Err(TrialError::Other(msg)) => {
                p.drop_all(&msg);
                return p;
            }
            Err(TrialError::Step(step, errno)) => (step, errno),
        };
        let why = format!("{} failed: {}", step.describe(), io::Error::from_raw_os_error(errno));
        let feature = match step {
            Step::UserNamespace | Step::IdMaps => {
                p.user_namespace = false;
                p.user_namespace_error = Some(why.clone());
                let why = format!("needs a user namespace, and {why}");
                for f in Feature::ALL.into_iter().filter(|f| f.is_namespace()) {
                    p.drop_feature(f, why.clone());
                }
                continue;
            }
            Step::MountNamespace | Step::PrivateMounts => Feature::MountNamespace,
            Step::PidNamespace | Step::Fork | Step::InitDeath => Feature::PidNamespace,
            Step::NetNamespace => Feature::NetNamespace,
            Step::Proc => Feature::ProcMount,
            Step::Hide => Feature::HiddenPaths,
            Step::Loopback => Feature::Loopback,
            Step::Landlock => Feature::Landlock,
            Step::ParentDeath | Step::Descriptors | Step::NoNewPrivs | Step::Exec => {
                p.drop_all(&why);
                return p;
            }
        };
        if feature.is_namespace() && !tried_user_namespace {
            tried_user_namespace = true;
            p.user_namespace = true;
            continue;
        }
        p.drop_feature(feature, why);
    }
    p.drop_all("the probe did not settle");
    p
}

/// Why a probe run failed.
enum TrialError {
    /// A setup step failed with this errno.
    Step(Step, i32),
    /// Anything else (nothing can be trusted then).
    Other(String),
}

/// Runs `/bin/true` (or `sh -c :`) with every feature `p` still allows, a
/// protected file to hide and a Landlock ruleset.
fn trial(p: &Probe) -> Result<(), TrialError> {
    let other = |what: &str, e: io::Error| TrialError::Other(format!("{what}: {e}"));
    let scratch = Scratch::create().map_err(|e| other("cannot create a temp dir", e))?;
    let target = scratch.base.join("probe-target");
    std::fs::write(&target, b"probe").map_err(|e| other("cannot create a temp file", e))?;
    let mut cmd = if Path::new("/bin/true").exists() {
        std::process::Command::new("/bin/true")
    } else {
        let mut c = std::process::Command::new("/bin/sh");
        c.args(["-c", ":"]);
        c
    };
    cmd.env_clear().current_dir(&scratch.base).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let request = Request { confinement: Confinement::default(), writable: Vec::new(), protected: vec![target] };
    let exec = exec_of(&cmd, Vec::new()).map_err(|e| TrialError::Other(e.to_string()))?;
    let (plan, reader) = plan(p, &request, &scratch, exec).map_err(|e| TrialError::Other(e.to_string()))?;
    sys::install(&mut cmd, plan);
    let spawned = cmd.spawn();
    drop(cmd);
    let step = read_report(reader);
    let mut child = match (spawned, step) {
        (Ok(mut child), Some((step, errno))) => {
            // The init failed after the supervisor had started.
            let _ = child.kill();
            let _ = child.wait();
            return Err(TrialError::Step(step, errno));
        }
        (Ok(child), None) => child,
        (Err(_), Some((step, errno))) => return Err(TrialError::Step(step, errno)),
        (Err(e), None) => return Err(other("cannot start the probe command", e)),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(TrialError::Other(format!("the probe command failed ({status})"))),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TrialError::Other("the probe command did not finish in 10 s".into()));
            }
            Err(e) => return Err(other("waiting for the probe command", e)),
        }
    }
}

/// Reads the step report of a spawn: nothing when every step succeeded.
fn read_report(mut reader: io::PipeReader) -> Option<(Step, i32)> {
    let mut buf = Vec::new();
    let _ = reader.read_to_end(&mut buf);
    let step = Step::from_code(*buf.first()?)?;
    let errno = i32::from_ne_bytes(buf.get(1..5)?.try_into().ok()?);
    Some((step, errno))
}

/// The per-call directory, under the host's temp dir: `tmp/` (the command's
/// `TMPDIR`, writable) and `hide/` (the empty file and directory bound over
/// protected paths, read-only). Removed on drop.
///
/// Its name, `wrepl-bash-<pid namespace>-<pid>-<random>`, says which wrepl
/// made it: the directories a SIGKILLed wrepl left behind are removed by the
/// next wrepl of the same user and PID namespace ([`Scratch::sweep`]).
#[derive(Debug)]
pub(crate) struct Scratch {
    base: PathBuf,
}

/// Name prefix of the per-call directories.
const SCRATCH_PREFIX: &str = "wrepl-bash-";

/// The inode of our PID namespace (0 when unknown).
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map(|m| m.ino()).unwrap_or(0)
}

impl Scratch {
    fn create() -> io::Result<Scratch> {
        static SWEPT: Once = Once::new();
        SWEPT.call_once(|| Scratch::sweep(&std::env::temp_dir()));
        let mut id = [0u8; 12];
        getrandom::fill(&mut id).map_err(|e| io::Error::other(format!("no randomness for a temp dir name: {e}")))?;
        let name: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let base =
            std::env::temp_dir().join(format!("{SCRATCH_PREFIX}{}-{}-{name}", pid_namespace(), std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&base)?;
        let scratch = Scratch { base };
        let hide = scratch.base.join("hide");
        std::fs::DirBuilder::new().mode(0o700).create(scratch.tmp())?;
        std::fs::DirBuilder::new().mode(0o700).create(&hide)?;
        std::fs::DirBuilder::new().mode(0o500).create(scratch.empty_dir())?;
        std::fs::write(scratch.empty_file(), b"")?;
        std::fs::set_permissions(scratch.empty_file(), std::fs::Permissions::from_mode(0o400))?;
        std::fs::set_permissions(&hide, std::fs::Permissions::from_mode(0o500))?;
        Ok(scratch)
    }

    /// Removes the per-call directories under `dir` that a wrepl of this
    /// user and PID namespace which no longer runs left behind (it was
    /// killed). Anything else — other users', other namespaces', live
    /// processes', symlinks — is left alone.
    fn sweep(dir: &Path) {
        use std::os::unix::fs::MetadataExt;
        let ns = pid_namespace();
        if ns == 0 {
            return;
        }
        let prefix = format!("{SCRATCH_PREFIX}{ns}-");
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
            let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
            if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let path = entry.path();
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() && m.uid() == sys::euid() => drop(Scratch { base: path }),
                _ => {}
            }
        }
    }

    /// The command's `TMPDIR`.
    pub(crate) fn tmp(&self) -> PathBuf {
        self.base.join("tmp")
    }

    fn empty_file(&self) -> PathBuf {
        self.base.join("hide").join("file")
    }

    fn empty_dir(&self) -> PathBuf {
        self.base.join("hide").join("dir")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(self.base.join("hide"), std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::set_permissions(self.empty_dir(), std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// What to confine a command to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    /// Mode and network.
    pub(crate) confinement: Confinement,
    /// Directories the command may write beneath (the workspace roots).
    pub(crate) writable: Vec<PathBuf>,
    /// Paths to hide (wrepl's own state).
    pub(crate) protected: Vec<PathBuf>,
}

/// What was in force for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The mode asked for.
    pub(crate) mode: ConfineMode,
    /// The host network was kept.
    pub(crate) allow_net: bool,
    /// Wanted features that were missing (everything, when the command ran
    /// as a plain child).
    pub(crate) missing: Vec<Feature>,
    /// The Landlock ABI in force (0: none).
    pub(crate) landlock_abi: u32,
    /// How many protected paths were hidden.
    pub(crate) hidden: usize,
}

impl Applied {
    /// Every wanted mechanism was in force.
    pub(crate) fn fully_confined(&self) -> bool {
        self.mode != ConfineMode::Off && self.missing.is_empty()
    }

    /// One line for the tool result.
    pub(crate) fn describe(&self) -> String {
        if self.mode == ConfineMode::Off {
            return "not confined (confine: off)".into();
        }
        let has = |f: Feature| !self.missing.contains(&f);
        if Feature::ALL.iter().all(|f| !has(*f)) {
            return "not confined: confinement cannot be set up on this machine (see `wrepl doctor`)".into();
        }
        let mut parts = Vec::new();
        if has(Feature::Landlock) {
            parts.push(format!("Landlock ABI {} (writes only in the workspace roots and $TMPDIR)", self.landlock_abi));
        }
        let namespaces: Vec<&str> =
            [(Feature::MountNamespace, "mount"), (Feature::PidNamespace, "PID"), (Feature::NetNamespace, "network")]
                .into_iter()
                .filter(|(f, _)| has(*f) && !(self.allow_net && *f == Feature::NetNamespace))
                .map(|(_, n)| n)
                .collect();
        if !namespaces.is_empty() {
            parts.push(format!(
                "own {} namespace{}",
                namespaces.join("/"),
                if namespaces.len() > 1 { "s" } else { "" }
            ));
        }
        if has(Feature::ProcMount) {
            parts.push("fresh /proc".into());
        }
        if has(Feature::HiddenPaths) {
            parts.push(format!("{} protected path{} hidden", self.hidden, if self.hidden == 1 { "" } else { "s" }));
        }
        parts.push(if self.allow_net { "host network (allowNet)".into() } else { "no network".to_string() });
        parts.push("no_new_privs".into());
        let head = if self.missing.is_empty() {
            "confined".to_string()
        } else {
            let names: Vec<&str> = self.missing.iter().map(|f| f.name()).collect();
            format!("partly confined (missing: {})", names.join(", "))
        };
        format!("{head}: {}", parts.join(", "))
    }
}

/// Why a command could not be started confined.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfineError {
    /// `require` mode and something is missing.
    #[error(
        "confinement is required (confine: \"require\") but cannot be fully set up here: {0}; \
         see `wrepl doctor`, or use confine \"prefer\" to run with what works"
    )]
    Unavailable(String),
    /// A setup step failed in the child.
    #[error("cannot set up the confinement: {step} failed: {source}")]
    Setup {
        /// What the step does.
        step: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The command could not be started.
    #[error("{0}")]
    Spawn(io::Error),
    /// The per-call temp dir, the Landlock ruleset or the hiding could not
    /// be prepared.
    #[error("cannot prepare the confinement: {0}")]
    Prepare(String),
}

/// A started command and what confined it.
#[derive(Debug)]
pub(crate) struct Spawned {
    /// The command's process group (owning the per-call temp dir).
    pub(crate) group: ProcessGroup,
    /// What was in force.
    pub(crate) applied: Applied,
}

/// Starts `cmd` confined as `request` says (see the module docs), with the
/// environment `env` plus `TMPDIR`, in a process group of its own. Stdio,
/// arguments and working directory are the caller's.
pub(crate) async fn spawn(mut cmd: Command, env: EnvPolicy, request: Request) -> Result<Spawned, ConfineError> {
    let Confinement { mode, allow_net } = request.confinement;
    let probe = if mode == ConfineMode::Off { None } else { Some(probe_async().await) };
    let missing = match decide(probe, request.confinement) {
        Decision::Refuse(why) => return Err(ConfineError::Unavailable(why)),
        Decision::Plain { missing } => {
            let group = ProcessGroup::spawn(&mut cmd, &env).map_err(ConfineError::Spawn)?;
            return Ok(Spawned { group, applied: Applied { mode, allow_net, missing, landlock_abi: 0, hidden: 0 } });
        }
        Decision::Confine { missing } => missing,
    };
    let Some(probe) = probe else {
        return Err(ConfineError::Prepare("no probe of this machine's confinement".into()));
    };
    let handle = tokio::runtime::Handle::try_current().map_err(|e| ConfineError::Prepare(e.to_string()))?;
    let job = move || -> Result<Spawned, ConfineError> {
        let scratch = Scratch::create().map_err(|e| ConfineError::Prepare(format!("per-call temp dir: {e}")))?;
        let env = env.set("TMPDIR", scratch.tmp());
        env.apply(&mut cmd);
        cmd.process_group(0).kill_on_drop(true);
        let exec = exec_of(cmd.as_std(), env.resolve())?;
        let (plan, reader) = plan(probe, &request, &scratch, exec)?;
        let hidden = plan.hides.len();
        let landlock_abi = if plan.landlock.is_some() { probe.landlock_abi } else { 0 };
        sys::install(cmd.as_std_mut(), plan);
        let spawned = {
            let _runtime = handle.enter();
            cmd.spawn()
        };
        drop(cmd);
        let step = read_report(reader);
        let failed = |step: Step, errno| match step {
            Step::Exec => ConfineError::Spawn(io::Error::from_raw_os_error(errno)),
            step => ConfineError::Setup { step: step.describe(), source: io::Error::from_raw_os_error(errno) },
        };
        let child = match (spawned, step) {
            // The init failed after the supervisor had started: dropping the
            // group kills what is left.
            (Ok(child), Some((step, errno))) => {
                drop(ProcessGroup::from_child(child, Some(scratch)));
                return Err(failed(step, errno));
            }
            (Ok(child), None) => child,
            (Err(_), Some((step, errno))) => return Err(failed(step, errno)),
            (Err(e), None) => return Err(ConfineError::Spawn(e)),
        };
        let group = ProcessGroup::from_child(child, Some(scratch));
        Ok(Spawned { group, applied: Applied { mode, allow_net, missing, landlock_abi, hidden } })
    };
    spawner::run(job).await.unwrap_or_else(|| {
        Err(ConfineError::Prepare("the thread that starts confined commands is not available".into()))
    })
}

/// What to do with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    /// Run it as a plain child: confinement is off, or nothing of it works
    /// (`missing` then names everything).
    Plain { missing: Vec<Feature> },
    /// Refuse it (`require`, and something is missing): what is missing, and why.
    Refuse(String),
    /// Confine it, without `missing` (`prefer`).
    Confine { missing: Vec<Feature> },
}

/// The decision for a command under `confinement`, given what works
/// (`None`: not probed, for `off`). Prints the once-per-process warning
/// when a preferred confinement is incomplete.
fn decide(probe: Option<&Probe>, confinement: Confinement) -> Decision {
    let probe = match (confinement.mode, probe) {
        (ConfineMode::Off, _) | (_, None) => return Decision::Plain { missing: Vec::new() },
        (_, Some(p)) => p,
    };
    let missing = probe.missing_of(&wanted(confinement.allow_net));
    if missing.is_empty() {
        return Decision::Confine { missing: Vec::new() };
    }
    if confinement.mode == ConfineMode::Require {
        let list: Vec<String> = missing.iter().map(|(f, why)| format!("no {} ({why})", f.name())).collect();
        return Decision::Refuse(list.join("; "));
    }
    warn_once(&missing);
    let missing = missing.into_iter().map(|(f, _)| f).collect();
    if probe.nothing_works() {
        Decision::Plain { missing }
    } else {
        Decision::Confine { missing }
    }
}

/// At startup: when `confinement` is not off and this machine cannot set up
/// all of it, prints the (once-per-process) warning about what is missing —
/// the same one the first command would print. Returns what is missing.
pub fn warn_if_incomplete(confinement: Confinement) -> Vec<Feature> {
    if confinement.mode == ConfineMode::Off {
        return Vec::new();
    }
    let missing = probe().missing_of(&wanted(confinement.allow_net));
    if !missing.is_empty() {
        warn_once(&missing);
    }
    missing.into_iter().map(|(f, _)| f).collect()
}

/// Prints what is missing on stderr, once per process.
fn warn_once(missing: &[(Feature, &str)]) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        let mut msg = String::from("wrepl: warning: Bash commands run only partly confined on this machine:\n");
        for (f, why) in missing {
            msg.push_str(&format!("  - no {}: {} ({why})\n", f.name(), f.consequence()));
        }
        msg.push_str(
            "  Use confine \"require\" (--confine require) to refuse Bash instead; `wrepl doctor` shows the details.",
        );
        eprintln!("{msg}");
    });
}

/// Absolute paths only, as C strings; `None` for a path with a NUL byte
/// (which cannot exist).
fn c_path(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// What the init of `cmd` execs: its program (an absolute path) and
/// arguments, with the environment `env`.
fn exec_of(cmd: &std::process::Command, env: Vec<(OsString, OsString)>) -> Result<Exec, ConfineError> {
    let nul = |what: &str| ConfineError::Prepare(format!("the command's {what} contains a NUL byte"));
    let program = Path::new(cmd.get_program());
    if !program.is_absolute() {
        return Err(ConfineError::Prepare(format!("{} is not an absolute path", program.display())));
    }
    let path = c_path(program).ok_or_else(|| nul("program"))?;
    let args = cmd
        .get_args()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| nul("arguments")))
        .collect::<Result<Vec<_>, _>>()?;
    let env = env
        .into_iter()
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.as_bytes());
            CString::new(kv).map_err(|_| nul("environment"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Exec::new(path, args, env))
}

/// The child's plan for a request, with what `probe` allows, and the read
/// end of its report pipe.
fn plan(
    probe: &Probe,
    request: &Request,
    scratch: &Scratch,
    exec: Exec,
) -> Result<(Plan, io::PipeReader), ConfineError> {
    let prepare = |what: &str, e: io::Error| ConfineError::Prepare(format!("{what}: {e}"));
    let has = |f: Feature| probe.available(f);
    let allow_net = request.confinement.allow_net;
    let (reader, writer) = io::pipe().map_err(|e| prepare("report pipe", e))?;
    let id_maps = probe.user_namespace.then(|| IdMaps {
        uid_map: format!("{0} {0} 1\n", sys::euid()).into_bytes(),
        gid_map: format!("{0} {0} 1\n", sys::egid()).into_bytes(),
    });
    let hides =
        if has(Feature::HiddenPaths) { hides(&request.protected, &request.writable, scratch)? } else { Vec::new() };
    let landlock = if has(Feature::Landlock) {
        let mut writable = request.writable.clone();
        writable.push(scratch.tmp());
        ruleset(&writable)?
    } else {
        None
    };
    let plan = Plan {
        host_pid: libc::pid_t::try_from(std::process::id()).unwrap_or(0),
        id_maps,
        mount_ns: has(Feature::MountNamespace),
        pid_ns: has(Feature::PidNamespace),
        exec: Some(exec),
        net_ns: !allow_net && has(Feature::NetNamespace),
        proc: has(Feature::ProcMount),
        hides,
        loopback: !allow_net && has(Feature::Loopback),
        landlock,
        report: OwnedFd::from(writer),
    };
    Ok((plan, reader))
}

/// The bind mounts that hide the protected paths that exist now: an empty
/// directory over a directory, an empty file over anything else. Deepest
/// first, so a directory bound later hides what was bound beneath it.
///
/// Before them come the pins: every directory strictly between a writable
/// root and a hidden path is bound onto itself (shallowest first, so a pin
/// never drops a bind beneath it). A mount point cannot be renamed or
/// removed, so a command cannot move a protected file's directory aside
/// (`mv state st2`) and read the file under a path nobody hides.
fn hides(protected: &[PathBuf], writable: &[PathBuf], scratch: &Scratch) -> Result<Vec<Hide>, ConfineError> {
    let prepare = |what: &str, e: io::Error| ConfineError::Prepare(format!("{what}: {e}"));
    let (Some(file), Some(dir)) = (c_path(&scratch.empty_file()), c_path(&scratch.empty_dir())) else {
        return Err(ConfineError::Prepare("the temp dir's path contains a NUL byte".into()));
    };
    let file_flags = sys::mount_flags(&file).map_err(|e| prepare("statfs of the temp dir", e))?;
    let dir_flags = sys::mount_flags(&dir).map_err(|e| prepare("statfs of the temp dir", e))?;
    let mut targets: Vec<(&PathBuf, bool)> = protected
        .iter()
        .filter(|p| p.is_absolute())
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| (p, m.is_dir())))
        .collect();
    targets.sort_by(|a, b| b.0.components().count().cmp(&a.0.components().count()).then(a.0.cmp(b.0)));
    targets.dedup_by(|a, b| a.0 == b.0);
    let mut pins: Vec<&Path> = targets
        .iter()
        .flat_map(|(p, _)| p.ancestors().skip(1))
        .filter(|a| writable.iter().any(|root| a.starts_with(root) && a != root))
        .collect();
    pins.sort_by(|a, b| a.components().count().cmp(&b.components().count()).then(a.cmp(b)));
    pins.dedup();
    let pins = pins.into_iter().filter_map(|a| {
        let target = c_path(a)?;
        Some(Hide { source: target.clone(), target, flags: 0, read_only: false })
    });
    let hidden = targets.into_iter().filter_map(|(p, is_dir)| {
        let target = c_path(p)?;
        let (source, flags) = if is_dir { (dir.clone(), dir_flags) } else { (file.clone(), file_flags) };
        Some(Hide { source, target, flags, read_only: true })
    });
    Ok(pins.chain(hidden).collect())
}

/// Character devices commands may write (file rules).
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The Landlock ruleset: read and execute everywhere, every right beneath
/// `writable`, read and write on [`DEVICES`]; the signal and abstract-socket
/// scopes. Best effort: rights the kernel lacks are left out. `None` when
/// the kernel has no Landlock.
fn ruleset(writable: &[PathBuf]) -> Result<Option<OwnedFd>, ConfineError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, Scope, ABI,
    };
    let abi = ABI::V7;
    let all = AccessFs::from_all(abi);
    let build = || -> Result<Option<OwnedFd>, RulesetError> {
        let created = Ruleset::default()
            .handle_access(all)?
            .scope(Scope::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(writable, all))?
            .add_rules(path_beneath_rules(DEVICES, all))?;
        Ok(created.into())
    };
    build().map_err(|e| ConfineError::Prepare(format!("Landlock ruleset: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_exactly() {
        for (name, mode) in ConfineMode::ALL {
            assert_eq!(name.parse::<ConfineMode>(), Ok(mode));
            assert_eq!(mode.to_string(), name);
        }
        assert_eq!(ConfineMode::default(), ConfineMode::Prefer);
        for bad in ["", "Require", "on", "prefer ", "true"] {
            let e = bad.parse::<ConfineMode>().unwrap_err().to_string();
            assert!(e.contains("\"require\", \"prefer\" or \"off\"") && e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    fn probe_with(missing: &[(Feature, &str)]) -> Probe {
        Probe {
            landlock_abi: 7,
            root: false,
            user_namespace: true,
            user_namespace_error: None,
            missing: missing.iter().map(|(f, w)| (*f, w.to_string())).collect(),
        }
    }

    #[test]
    fn dropping_a_feature_drops_what_needs_it() {
        let mut p = probe_with(&[]);
        p.drop_feature(Feature::MountNamespace, "EPERM".into());
        assert!(!p.available(Feature::MountNamespace) && !p.available(Feature::ProcMount));
        assert!(!p.available(Feature::HiddenPaths));
        assert!(p.available(Feature::PidNamespace) && p.available(Feature::Landlock));
        assert_eq!(p.missing[&Feature::ProcMount], "needs the mount namespace");
        assert!(!p.nothing_works());
        p.drop_all("gone");
        assert!(p.nothing_works());
        assert_eq!(p.missing[&Feature::MountNamespace], "EPERM", "the first reason stays");
    }

    #[test]
    fn wanted_features_follow_the_network_choice() {
        assert_eq!(wanted(false), Feature::ALL.to_vec());
        let w = wanted(true);
        assert!(!w.contains(&Feature::NetNamespace) && !w.contains(&Feature::Loopback));
        assert!(w.contains(&Feature::Landlock) && w.contains(&Feature::PidNamespace));
        let p = probe_with(&[(Feature::NetNamespace, "no"), (Feature::Loopback, "needs")]);
        assert!(p.missing_of(&wanted(true)).is_empty());
        assert_eq!(p.missing_of(&wanted(false)).len(), 2);
    }

    #[test]
    fn probe_lines_say_what_is_in_force() {
        let p = probe_with(&[]);
        let lines = p.lines();
        assert_eq!(lines.len(), 7, "{lines:#?}");
        assert!(lines[0].starts_with("landlock: ABI 7 ("), "{}", lines[0]);
        assert_eq!(lines[1], "user namespace: yes (own uid and gid mapped to themselves)");
        assert_eq!(lines[2], "mount namespace: yes");
        assert!(lines[6].starts_with("network namespace: yes (loopback only"), "{}", lines[6]);

        let mut p = probe_with(&[]);
        p.root = true;
        p.user_namespace = false;
        p.drop_feature(Feature::PidNamespace, "creating a PID namespace failed: EPERM".into());
        let lines = p.lines();
        assert_eq!(lines[1], "user namespace: not needed (running as root)");
        assert_eq!(
            lines[3],
            "pid namespace: NO — creating a PID namespace failed: EPERM; processes a command starts (setsid, nohup) \
             can outlive it"
        );
        assert!(lines[4].starts_with("/proc remount: NO — needs the PID namespace;"), "{}", lines[4]);
        assert_eq!(lines[5], "protected paths hidden: yes");

        let mut p = base_probe();
        p.drop_all("nothing");
        assert!(p.lines().iter().skip(2).all(|l| l.contains(": NO — nothing;")), "{:#?}", p.lines());
    }

    #[test]
    fn decisions_follow_the_mode() {
        let prefer = Confinement { mode: ConfineMode::Prefer, allow_net: false };
        let require = Confinement { mode: ConfineMode::Require, allow_net: false };
        let off = Confinement { mode: ConfineMode::Off, allow_net: false };
        let full = probe_with(&[]);
        assert_eq!(decide(Some(&full), prefer), Decision::Confine { missing: vec![] });
        assert_eq!(decide(Some(&full), require), Decision::Confine { missing: vec![] });
        assert_eq!(decide(Some(&full), off), Decision::Plain { missing: vec![] });
        assert_eq!(decide(None, off), Decision::Plain { missing: vec![] });

        let mut no_pid = probe_with(&[]);
        no_pid.drop_feature(Feature::PidNamespace, "creating a PID namespace failed: EPERM".into());
        assert_eq!(
            decide(Some(&no_pid), prefer),
            Decision::Confine { missing: vec![Feature::PidNamespace, Feature::ProcMount] }
        );
        let Decision::Refuse(why) = decide(Some(&no_pid), require) else { panic!("require must refuse") };
        assert_eq!(
            why,
            "no PID namespace (creating a PID namespace failed: EPERM); no fresh /proc (needs the PID namespace)"
        );
        assert_eq!(decide(Some(&no_pid), off), Decision::Plain { missing: vec![] });

        // A missing network namespace does not matter with allowNet.
        let mut no_net = probe_with(&[]);
        no_net.drop_feature(Feature::NetNamespace, "EPERM".into());
        assert_eq!(
            decide(Some(&no_net), Confinement { allow_net: true, ..require }),
            Decision::Confine { missing: vec![] }
        );
        assert!(matches!(decide(Some(&no_net), require), Decision::Refuse(_)));

        let mut nothing = probe_with(&[]);
        nothing.drop_all("no spawner");
        assert_eq!(decide(Some(&nothing), prefer), Decision::Plain { missing: wanted(false) });
        assert!(matches!(decide(Some(&nothing), require), Decision::Refuse(_)));
    }

    #[test]
    fn applied_descriptions() {
        let mut a =
            Applied { mode: ConfineMode::Prefer, allow_net: false, missing: vec![], landlock_abi: 7, hidden: 2 };
        assert!(a.fully_confined());
        assert_eq!(
            a.describe(),
            "confined: Landlock ABI 7 (writes only in the workspace roots and $TMPDIR), own mount/PID/network \
             namespaces, fresh /proc, 2 protected paths hidden, no network, no_new_privs"
        );
        a.allow_net = true;
        assert!(a.describe().contains("own mount/PID namespaces") && a.describe().contains("host network (allowNet)"));
        a.missing = vec![Feature::Landlock];
        assert!(!a.fully_confined());
        assert!(a.describe().starts_with("partly confined (missing: Landlock): own mount/PID"), "{}", a.describe());
        a.missing = Feature::ALL.to_vec();
        assert!(a.describe().starts_with("not confined:"), "{}", a.describe());
        a.mode = ConfineMode::Off;
        assert_eq!(a.describe(), "not confined (confine: off)");
        assert!(!a.fully_confined());
    }

    #[test]
    fn stale_scratch_dirs_of_dead_processes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let ns = pid_namespace();
        assert_ne!(ns, 0);
        // A pid that is certainly gone: a child that was reaped.
        let mut child = std::process::Command::new("/bin/true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let make = |name: String| {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.join("hide/dir")).unwrap();
            std::fs::write(p.join("hide/file"), b"").unwrap();
            std::fs::set_permissions(p.join("hide"), std::fs::Permissions::from_mode(0o500)).unwrap();
            p
        };
        let stale = make(format!("{SCRATCH_PREFIX}{ns}-{dead}-aa"));
        let mine = make(format!("{SCRATCH_PREFIX}{ns}-{}-bb", std::process::id()));
        let other_ns = make(format!("{SCRATCH_PREFIX}{}-{dead}-cc", ns + 1));
        let unrelated = make(format!("other-{ns}-{dead}"));
        let link = dir.path().join(format!("{SCRATCH_PREFIX}{ns}-{dead}-dd"));
        std::os::unix::fs::symlink(&unrelated, &link).unwrap();
        Scratch::sweep(dir.path());
        assert!(!stale.exists(), "the dead process's directory is removed");
        assert!(mine.exists() && other_ns.exists() && unrelated.join("hide/file").exists());
        assert!(link.symlink_metadata().is_ok(), "a symlink is not followed or removed");
    }

    #[test]
    fn scratch_is_laid_out_and_removed() {
        let s = Scratch::create().unwrap();
        let base = s.base.clone();
        assert!(s.tmp().is_dir() && s.empty_dir().is_dir());
        assert_eq!(std::fs::read(s.empty_file()).unwrap(), b"");
        assert!(base.starts_with(std::env::temp_dir()));
        std::fs::write(s.tmp().join("left"), b"x").unwrap();
        drop(s);
        assert!(!base.exists());
    }

    #[tokio::test]
    async fn a_program_that_cannot_start_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let request = |mode| Request {
            confinement: Confinement { mode, allow_net: false },
            writable: vec![dir.path().to_path_buf()],
            protected: Vec::new(),
        };
        for mode in [ConfineMode::Require, ConfineMode::Off] {
            let mut cmd = Command::new("/nonexistent/program");
            cmd.current_dir(dir.path()).stdin(Stdio::null());
            let e = spawn(cmd, EnvPolicy::only(&[]), request(mode)).await.unwrap_err();
            assert!(matches!(&e, ConfineError::Spawn(io) if io.kind() == io::ErrorKind::NotFound), "{mode}: {e:?}");
        }
        let mut cmd = Command::new("relative-program");
        cmd.current_dir(dir.path());
        let e = spawn(cmd, EnvPolicy::only(&[]), request(ConfineMode::Require)).await.unwrap_err();
        assert!(e.to_string().contains("not an absolute path"), "{e}");
    }

    #[tokio::test]
    async fn the_init_gets_the_resolved_environment() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/usr/bin/env");
        cmd.current_dir(dir.path()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        let env = EnvPolicy::only(&["PATH", "HOME"]).set("HOME", "/nowhere").set("A", "1");
        let request = Request {
            confinement: Confinement { mode: ConfineMode::Require, allow_net: false },
            writable: vec![dir.path().to_path_buf()],
            protected: Vec::new(),
        };
        let Spawned { mut group, applied } = spawn(cmd, env, request).await.unwrap();
        assert!(applied.fully_confined(), "{applied:?}");
        let out = super::super::read_capped(group.child_mut().stdout.take().unwrap(), 1 << 16).await;
        assert!(group.wait().await.unwrap().success());
        let text = String::from_utf8(out.bytes).unwrap();
        let mut names: Vec<&str> = text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
        names.sort_unstable();
        let mut want = vec!["A", "HOME", "TMPDIR"];
        if std::env::var_os("PATH").is_some() {
            want.push("PATH");
        }
        want.sort_unstable();
        assert_eq!(names, want, "{text}");
        assert!(text.lines().any(|l| l == "HOME=/nowhere"), "{text}");
    }

    #[test]
    fn this_machine_confines_fully() {
        // The machine and CI run Linux 6.18 with Landlock ABI 7 and every
        // namespace: all of it must work (a missing component fails).
        let p = probe();
        assert!(p.missing.is_empty(), "{:#?}", p.lines());
        assert!(p.landlock_abi >= 1);
        assert!(std::ptr::eq(p, probe()), "cached");
    }
}
