//! Starting a command: the request, the decision (confine, run plain, or
//! refuse) with the once-per-process warning, the spawn itself, and what
//! was in force ([`Applied`]).

use std::io;
use std::path::PathBuf;
use std::sync::Once;

use tokio::process::Command;

use super::super::sys::{self, Step};
use super::super::{spawner, EnvPolicy, ProcessGroup};
use super::plan::{exec_of, plan};
use super::policy::{wanted, ConfineMode, Confinement, Feature};
use super::probe::{probe, probe_async, read_report, Probe};
use super::scratch::Scratch;

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
pub(super) enum Decision {
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
pub(super) fn decide(probe: Option<&Probe>, confinement: Confinement) -> Decision {
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
