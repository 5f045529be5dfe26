//! The policy: the confinement modes ([`ConfineMode`], [`Confinement`]) and
//! the mechanisms a confined command gets ([`Feature`]).

use std::str::FromStr;

use serde::Serialize;

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
    pub(super) fn needs(self) -> &'static [Feature] {
        match self {
            Feature::ProcMount => &[Feature::MountNamespace, Feature::PidNamespace],
            Feature::HiddenPaths => &[Feature::MountNamespace],
            Feature::Loopback => &[Feature::NetNamespace],
            _ => &[],
        }
    }

    /// The namespace features (impossible without privileges or a user namespace).
    pub(super) fn is_namespace(self) -> bool {
        !matches!(self, Feature::Landlock)
    }
}

/// The features a confined command gets, for a network choice.
pub fn wanted(allow_net: bool) -> Vec<Feature> {
    Feature::ALL.into_iter().filter(|f| !allow_net || !matches!(f, Feature::NetNamespace | Feature::Loopback)).collect()
}
