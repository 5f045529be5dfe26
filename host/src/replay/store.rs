//! Durable storage for replay logs: one append-only, hash-chained stream of
//! [`Event`]s per named session, behind the [`LogStore`] trait (the
//! embedded default is SQLite, [`SqliteStore`]; the hash chain is in
//! `replay::chain`, shared by every backend).

use std::path::PathBuf;

use super::log::{Event, StoredEvent};

pub use super::chain::{canonical_json, link_hash};
pub use super::postgres::PostgresStore;
pub use super::sqlite::SqliteStore;

/// Version of the database layout this build reads and writes (version 1
/// stores are migrated when opened).
pub const SCHEMA_VERSION: u32 = 2;

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
    /// A read-only command named a store file that does not exist (it is
    /// never created by reading).
    #[error("no session store at {0}")]
    NoStore(PathBuf),
    /// The file exists but is not a wrepl session store.
    #[error("{0} is not a wrepl session store")]
    NotAStore(PathBuf),
    /// Another live writer holds the session's lease.
    #[error("session {session:?} is in use by {holder}")]
    SessionBusy {
        /// The session.
        session: String,
        /// Who holds it (pid, host, since when).
        holder: LeaseHolder,
    },
    /// The PostgreSQL server reported an error (or could not be reached).
    #[error("postgres: {0}")]
    Postgres(String),
    /// This writer's lease was taken over (it was stale: no heartbeat within
    /// its time to live), so it may no longer append.
    #[error("the lease on session {session:?} was lost (taken over by {by}); nothing more is recorded")]
    LeaseLost {
        /// The session.
        session: String,
        /// Who holds the session now (or "nobody").
        by: String,
    },
}

/// Who holds (or last held) a session's writer lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// Process id of the holder.
    pub pid: u32,
    /// Host name of the holder's machine.
    pub host: String,
    /// When the lease was taken, milliseconds since the Unix epoch.
    pub since_ms: u64,
    /// Last heartbeat, milliseconds since the Unix epoch.
    pub heartbeat_ms: u64,
}

impl std::fmt::Display for LeaseHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ago = |ms: u64| now_ms().saturating_sub(ms) as f64 / 1000.0;
        write!(
            f,
            "pid {} on {} since {:.1} s ago (last heartbeat {:.1} s ago)",
            self.pid,
            self.host,
            ago(self.since_ms),
            ago(self.heartbeat_ms)
        )
    }
}

/// The identity a writer takes a session's lease with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// A random id, unique to this lease.
    pub id: String,
    /// This process.
    pub pid: u32,
    /// This machine's host name.
    pub host: String,
    /// This machine's boot id (`/proc/sys/kernel/random/boot_id`): a pid is
    /// only meaningful on the same machine and boot.
    pub boot_id: String,
    /// This process's start time in clock ticks since boot (from
    /// `/proc/<pid>/stat`), so a reused pid is not mistaken for the holder.
    pub start_ticks: u64,
    /// This process's PID namespace (`/proc/self/ns/pid`): a pid means the
    /// same process only inside the same namespace (containers sharing a
    /// store share the boot id but not the pids).
    pub pid_ns: String,
}

impl LeaseOwner {
    /// The identity of this process, with a fresh random lease id.
    pub fn this_process() -> Self {
        let pid = std::process::id();
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
        Self {
            id: format!("{}{}", crate::ids::short_id(), crate::ids::short_id()),
            pid,
            host: read("/proc/sys/kernel/hostname"),
            boot_id: read("/proc/sys/kernel/random/boot_id"),
            start_ticks: process_start_ticks(pid).unwrap_or(0),
            pid_ns: std::fs::read_link("/proc/self/ns/pid")
                .map(|l| l.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    /// Whether `holder` (recorded with its boot id, PID namespace and start
    /// time) is certainly dead: same machine, boot and PID namespace, and its
    /// pid is gone or is now another process. A holder anywhere else is
    /// judged by its heartbeat alone.
    pub fn sees_dead(&self, holder: &LeaseOwner) -> bool {
        let same = |a: &str, b: &str| !a.is_empty() && a == b;
        if !same(&holder.boot_id, &self.boot_id) || !same(&holder.pid_ns, &self.pid_ns) || holder.host != self.host {
            return false;
        }
        let (pid, start_ticks) = (holder.pid, holder.start_ticks);
        match process_start_ticks(pid) {
            None => true,
            Some(t) => start_ticks != 0 && t != start_ticks,
        }
    }
}

/// A process's start time (field 22 of `/proc/<pid>/stat`), `None` when the
/// process does not exist.
fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// What taking a lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseTaken {
    /// Nobody held the session (or this owner already did).
    Free,
    /// A stale lease was taken over (the new holder records the takeover in
    /// the log once it has verified the log).
    TakenOver {
        /// The previous holder.
        holder: LeaseHolder,
        /// Why its lease was stale.
        reason: String,
    },
}

/// The newest event of a session as the store records it separately from
/// the rows, so that losing the newest rows is detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Number of events.
    pub events: u64,
    /// Hash of the newest event ("" when there is none).
    pub hash: String,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
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

/// A stored snapshot of a session's context (see `replay::snapshots`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSnapshot {
    /// The block it follows.
    pub block: u64,
    /// The seal: HMAC-SHA256 with the store's key over the session, block and digests.
    pub seal: Vec<u8>,
    /// The snapshot's bytes.
    pub data: Vec<u8>,
}

/// What a session's stored snapshot is, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// SHA-256 (hex) of its bytes.
    pub digest: String,
    /// The block it follows.
    pub block: u64,
    /// Its size in bytes.
    pub bytes: u64,
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

    /// [`LogStore::verify`] and, when the log verifies, its events as
    /// [`LogStore::load`] gives them (none when it does not). Stores that
    /// can do both in one read of the rows do (resume needs both).
    fn load_verified(&self, session: &str) -> Result<(VerifyReport, Vec<StoredEvent>), StoreError> {
        let report = self.verify(session)?;
        if !report.ok {
            return Ok((report, Vec::new()));
        }
        Ok((report, self.load(session)?))
    }

    /// Recomputes `session`'s hash chain and reports the first broken link
    /// (modified, missing or reordered rows, hash mismatches, undecodable
    /// events, blocks going backwards), then compares the newest row with
    /// the session's recorded [`Head`] (count and hash), which catches the
    /// newest rows being removed. A session that does not exist verifies as
    /// ok with zero events (see [`LogStore::head`] to tell it apart).
    fn verify(&self, session: &str) -> Result<VerifyReport, StoreError>;

    /// The session's recorded head, `None` when the session does not exist.
    fn head(&self, session: &str) -> Result<Option<Head>, StoreError>;

    /// Take the single-writer lease of `session` for `owner`. A lease held
    /// by another owner is taken over only when it is stale: its heartbeat
    /// is older than `ttl`, or its holder is a dead process of this machine
    /// ([`LeaseOwner::sees_dead`]). A live holder gives
    /// [`StoreError::SessionBusy`]. Nothing is written to the log here: the
    /// new holder records an [`Event::Takeover`] after verifying the log.
    fn acquire_lease(
        &self,
        session: &str,
        owner: &LeaseOwner,
        ttl: std::time::Duration,
    ) -> Result<LeaseTaken, StoreError>;

    /// Refresh the heartbeat of `owner_id`'s lease; [`StoreError::LeaseLost`]
    /// when the lease is no longer its own.
    fn renew_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError>;

    /// Give up `owner_id`'s lease (nothing happens when it is not its own).
    fn release_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError>;

    /// [`LogStore::append`] by the holder of the session's lease: in the same
    /// transaction, the lease must still be `owner_id`'s, else nothing is
    /// written and the error is [`StoreError::LeaseLost`].
    fn append_leased(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// [`LogStore::acquire_lease`], then the session's head as it is once
    /// the lease is held (so nothing another writer did before is missed).
    /// A backend over a network does both in one round trip.
    fn acquire_lease_and_head(
        &self,
        session: &str,
        owner: &LeaseOwner,
        ttl: std::time::Duration,
    ) -> Result<(LeaseTaken, Option<Head>), StoreError> {
        let taken = self.acquire_lease(session, owner, ttl)?;
        Ok((taken, self.head(session)?))
    }

    /// Write `events` as [`LogStore::append_leased`] (nothing when empty),
    /// then give the lease back, and say where the head is then. The lease
    /// is given back even when the write fails. A backend over a network
    /// does all of it in one round trip.
    fn append_and_release(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Option<Head>, StoreError> {
        let written = if events.is_empty() { Ok(()) } else { self.append_leased(session, owner_id, events).map(drop) };
        let released = self.release_lease(session, owner_id);
        written?;
        released?;
        self.head(session)
    }

    /// Move a session's events aside under a new name (`<name>.tampered-<n>`,
    /// returned), so that a fresh log can start under the old name while the
    /// evidence is kept.
    fn quarantine(&self, session: &str) -> Result<String, StoreError>;

    /// Removes `session` and all its events (no error if it does not exist).
    /// A session whose lease a live writer holds is not removed
    /// ([`StoreError::SessionBusy`]).
    fn delete(&self, session: &str) -> Result<(), StoreError>;

    /// The store's secret `name` (32 random bytes, created on first use and
    /// kept in the store): the key servers sharing this store sign context
    /// handles and request states with.
    fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError>;

    /// Record that `session` was used at `at_ms` (milliseconds since the
    /// Unix epoch): idle lifetimes are measured from it.
    fn touch(&self, session: &str, at_ms: u64) -> Result<(), StoreError>;

    /// When `session` was last [`LogStore::touch`]ed, if ever.
    fn touched(&self, session: &str) -> Result<Option<u64>, StoreError>;

    /// True when several servers share this store as a matter of course
    /// (a database server): a server then holds a session's lease only
    /// while it serves a call, so any server can continue it next.
    fn shared(&self) -> bool {
        false
    }

    /// Store a snapshot of `session`'s context under `digest` (the SHA-256,
    /// hex, of its data), replacing one stored under the same digest. Taken
    /// by value: its bytes are written without another copy.
    fn put_snapshot(&self, session: &str, digest: &str, snapshot: StoredSnapshot) -> Result<(), StoreError>;

    /// The snapshot of `session` stored under `digest`, if there is one.
    fn get_snapshot(&self, session: &str, digest: &str) -> Result<Option<StoredSnapshot>, StoreError>;

    /// `session`'s stored snapshots (without their bytes), oldest block first.
    fn snapshots(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError>;

    /// Remove `session`'s snapshots stored under `digests`; how many were removed.
    fn delete_snapshots(&self, session: &str, digests: &[String]) -> Result<u64, StoreError>;

    /// The sessions that have stored snapshots (for `wrepl gc`), by name.
    fn snapshot_sessions(&self) -> Result<Vec<String>, StoreError>;

    /// The file the store keeps its data in, when it has one (absolute):
    /// wrepl protects it (and its `-wal`, `-shm` and `-journal` siblings)
    /// from the file tools.
    fn file_path(&self) -> Option<&std::path::Path> {
        None
    }

    /// How many event writes this process has made through the store's
    /// group commit, and in how many transactions (committed or tried),
    /// where the store groups its writes: one transaction holds the writes
    /// of several contexts, so the second runs behind the first.
    fn group_commits(&self) -> Option<GroupCommits> {
        None
    }
}

/// What a store's group commit has done ([`LogStore::group_commits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupCommits {
    /// Writes made through it.
    pub writes: u64,
    /// Transactions that held them.
    pub transactions: u64,
}

/// A stored secret as read back: at least 32 bytes, or the store is corrupt.
pub(crate) fn checked_secret(name: &str, value: Vec<u8>) -> Result<Vec<u8>, StoreError> {
    if value.len() < 32 {
        return Err(StoreError::Corrupt {
            session: String::new(),
            seq: None,
            reason: format!("the stored secret {name:?} is {} bytes, fewer than 32", value.len()),
        });
    }
    Ok(value)
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
