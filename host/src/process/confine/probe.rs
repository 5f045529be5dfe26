//! The probe: what confinement works on this machine, found once per
//! process by starting a trivial confined command with every mechanism and
//! dropping what fails.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::super::spawner;
use super::super::sys::{self, Step};
use super::launch::Request;
use super::plan::{exec_of, plan};
use super::policy::{Confinement, Feature};
use super::scratch::Scratch;

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
    pub(super) fn drop_feature(&mut self, feature: Feature, why: String) {
        for f in Feature::ALL {
            if (f == feature || f.needs().contains(&feature)) && !self.missing.contains_key(&f) {
                let reason = if f == feature { why.clone() } else { format!("needs the {}", feature.name()) };
                self.missing.insert(f, reason);
            }
        }
    }

    /// Marks everything missing.
    pub(super) fn drop_all(&mut self, why: &str) {
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

pub(super) fn base_probe() -> Probe {
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
pub(super) fn read_report(mut reader: io::PipeReader) -> Option<(Step, i32)> {
    let mut buf = Vec::new();
    let _ = reader.read_to_end(&mut buf);
    let step = Step::from_code(*buf.first()?)?;
    let errno = i32::from_ne_bytes(buf.get(1..5)?.try_into().ok()?);
    Some((step, errno))
}
