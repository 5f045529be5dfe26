//! [`SettingsError`]: why settings could not be loaded or a rule could not
//! be accepted.

use std::path::PathBuf;

/// Why settings could not be loaded or a rule could not be accepted.
///
/// Each message already contains the message of its cause (`{}` of a
/// [`SettingsError::File`] reads `settings.json: permissions.allow[0]: …`),
/// so [`source`](std::error::Error::source) continues with the cause's OWN
/// cause instead of the cause itself: a chain printer (`{:#}` of
/// `anyhow::Error`) then shows every reason once, not once per level. The
/// causes themselves stay in the variants' `source` fields.
#[derive(Debug)]
pub enum SettingsError {
    /// The settings file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An error in a settings file (wraps the actual error with the file name).
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<SettingsError>,
    },
    /// The JSON is malformed or does not have the expected shape (unknown
    /// key, wrong type, missing `hooks` list, ...).
    Parse(serde_json::Error),
    /// A field has an unacceptable value.
    Invalid {
        /// Path of the field, e.g. `hooks.PreToolUse[0].matcher`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A permission rule (or tool pattern) is malformed.
    InvalidRule {
        /// Where the rule came from, e.g. `permissions.allow[2]` or `allow`.
        field: String,
        /// The rule as written.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::Io { path, source } => write!(f, "cannot read settings file {}: {source}", path.display()),
            SettingsError::File { path, source } => write!(f, "{}: {source}", path.display()),
            SettingsError::Parse(e) => write!(f, "invalid settings: {e}"),
            SettingsError::Invalid { field, message } => write!(f, "{field}: {message}"),
            SettingsError::InvalidRule { field, rule, reason } => write!(f, "{field}: invalid rule {rule:?}: {reason}"),
        }
    }
}

impl std::error::Error for SettingsError {
    /// The cause's cause: the cause's message is part of ours (see the type's
    /// docs).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettingsError::Io { source, .. } => source.source(),
            SettingsError::File { source, .. } => source.source(),
            SettingsError::Parse(e) => e.source(),
            SettingsError::Invalid { .. } | SettingsError::InvalidRule { .. } => None,
        }
    }
}

impl From<serde_json::Error> for SettingsError {
    fn from(e: serde_json::Error) -> Self {
        SettingsError::Parse(e)
    }
}

impl SettingsError {
    /// An [`SettingsError::Invalid`] for `field`.
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError::Invalid { field: field.into(), message: message.into() }
    }
}
