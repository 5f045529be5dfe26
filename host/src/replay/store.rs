//! Durable storage for replay logs: one append-only, hash-chained stream of
//! [`Event`]s per named session, behind the [`LogStore`] trait (the
//! embedded default is SQLite, [`SqliteStore`]; the hash chain is in
//! `replay::chain`, shared by every backend).

use std::path::PathBuf;

use super::log::{Event, StoredEvent};

pub use super::chain::{canonical_json, fingerprint, link_hash};
pub use super::sqlite::SqliteStore;

/// Version of the database layout this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Longest accepted session name, in characters.
pub const MAX_SESSION_NAME: usize = 128;

/// Errors of the log store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database reported an error (including "database is locked" after
    /// the busy timeout, and "file is not a database").
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Creating the database's directory failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The database holds something this build cannot make sense of.
    #[error("corrupt store{}: {reason}", corrupt_location(session, *seq))]
    Corrupt {
        /// The session concerned ("" for database-level problems).
        session: String,
        /// The event concerned, if any.
        seq: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// The database was written by an incompatible (typically newer) build.
    #[error("store schema version {found} is not supported (this build supports {supported})")]
    VersionMismatch {
        /// Version found in the database.
        found: u32,
        /// Version this build supports.
        supported: u32,
    },
    /// The session's events use an event encoding this build does not know.
    #[error("session {session:?} uses log version {found}, this build supports {supported}")]
    LogVersionMismatch {
        /// The session.
        session: String,
        /// Version recorded for the session.
        found: u32,
        /// Version this build supports ([`LOG_VERSION`]).
        supported: u32,
    },
    /// A session name outside 1-128 characters of `[A-Za-z0-9._-]`.
    #[error("invalid session name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// An append whose block number cannot be stored: it goes backwards
    /// relative to the session's last event, or exceeds `i64::MAX`.
    #[error("invalid block {block} for session {session:?}: {reason}")]
    InvalidBlock {
        /// The session.
        session: String,
        /// The rejected block number.
        block: u64,
        /// Why it was rejected.
        reason: String,
    },
    /// An event could not be encoded as JSON.
    #[error("encoding event: {0}")]
    Encode(#[from] serde_json::Error),
}

fn corrupt_location(session: &str, seq: Option<u64>) -> String {
    match (session.is_empty(), seq) {
        (true, None) => String::new(),
        (true, Some(seq)) => format!(" (seq {seq})"),
        (false, None) => format!(" (session {session:?})"),
        (false, Some(seq)) => format!(" (session {session:?}, seq {seq})"),
    }
}

/// Summary of one stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session name.
    pub name: String,
    /// Creation time (first append), milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Number of stored events.
    pub events: u64,
    /// Number of distinct blocks among the stored events.
    pub blocks: u64,
    /// Event encoding version the session was created with.
    pub log_version: u32,
}

/// The first broken link found by [`LogStore::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLink {
    /// Sequence number where the chain breaks (for a missing row: the
    /// expected sequence number that is absent).
    pub seq: u64,
    /// Human-readable description.
    pub reason: String,
}

/// Result of [`LogStore::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Number of event rows stored for the session.
    pub events: u64,
    /// True when every link checked out.
    pub ok: bool,
    /// The first problem, when `ok` is false.
    pub first_bad: Option<BadLink>,
}

/// Durable, append-only storage of replay logs.
pub trait LogStore: Send + Sync {
    /// Appends `events` (each with its block number) to `session` in one
    /// transaction, assigning `seq` numbers that continue after the last
    /// stored event and extending the hash chain. The session is created on
    /// first append (even when `events` is empty). Block numbers must not go
    /// backwards. When this returns `Ok`, the events are durably stored.
    fn append(&self, session: &str, events: &[(u64, Event)]) -> Result<Vec<StoredEvent>, StoreError>;

    /// All events of `session` in `seq` order (empty if the session does not
    /// exist). Does not check the hash chain; see [`LogStore::verify`].
    fn load(&self, session: &str) -> Result<Vec<StoredEvent>, StoreError>;

    /// All stored sessions, ordered by name.
    fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError>;

    /// Recomputes `session`'s hash chain and reports the first broken link
    /// (modified, missing or reordered rows, hash mismatches, undecodable
    /// events, blocks going backwards). A session that does not exist
    /// verifies as ok with zero events. Truncation of the newest events is
    /// not detectable from the chain alone.
    fn verify(&self, session: &str) -> Result<VerifyReport, StoreError>;

    /// Removes `session` and all its events (no error if it does not exist).
    fn delete(&self, session: &str) -> Result<(), StoreError>;

    /// The file the store keeps its data in, when it has one (absolute):
    /// wrepl protects it (and its `-wal`, `-shm` and `-journal` siblings)
    /// from the file tools.
    fn file_path(&self) -> Option<&std::path::Path> {
        None
    }
}

/// Checks a session name: 1-128 characters of `[A-Za-z0-9._-]`.
pub fn validate_session_name(name: &str) -> Result<(), StoreError> {
    let invalid = |reason| Err(StoreError::InvalidName { name: name.to_string(), reason });
    if name.is_empty() {
        return invalid("empty");
    }
    if name.len() > MAX_SESSION_NAME {
        return invalid("longer than 128 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return invalid("only A-Z, a-z, 0-9, '.', '_' and '-' are allowed");
    }
    Ok(())
}

/// Where the session store lives by default: `$WREPL_STORE` if set, else
/// `$XDG_DATA_HOME/wrepl/sessions.sqlite3`, else
/// `$HOME/.local/share/wrepl/sessions.sqlite3` (empty variables count as
/// unset; a relative `XDG_DATA_HOME` is ignored, as the XDG spec asks).
pub fn default_store_path() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var("WREPL_STORE") {
        return Some(PathBuf::from(path));
    }
    if let Some(data) = var("XDG_DATA_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Some(data.join("wrepl").join("sessions.sqlite3"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".local/share/wrepl/sessions.sqlite3"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_is_absolute_or_overridden() {
        // Environment variables are process-global; only read them here.
        if let Some(path) = default_store_path() {
            if std::env::var_os("WREPL_STORE").is_none() {
                assert!(path.ends_with("wrepl/sessions.sqlite3"));
            }
        }
    }
}
