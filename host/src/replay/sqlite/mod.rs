//! The SQLite backend of [`LogStore`]: the embedded default store.
//!
//! # Schema (version [`SCHEMA_VERSION`])
//!
//! ```text
//! meta(key TEXT PRIMARY KEY, value TEXT)                 -- schema_version
//! sessions(name TEXT PRIMARY KEY, created_at_ms INTEGER, log_version INTEGER,
//!          head_events INTEGER, head_hash TEXT)           -- the recorded head
//! events(session TEXT, seq INTEGER, block INTEGER, json TEXT, hash TEXT,
//!        PRIMARY KEY(session, seq))
//! leases(session TEXT PRIMARY KEY, owner TEXT, pid INTEGER, host TEXT,
//!        boot_id TEXT, start_ticks INTEGER, pid_ns TEXT, since_ms INTEGER,
//!        heartbeat_ms INTEGER)
//! ```
//!
//! A trigger moves a session's head with every inserted event, so the head
//! stays right whoever inserts (an older build still running against a
//! migrated store, too); deleting rows does not move it.
//!
//! Version 1 stores (no head, no leases) are migrated when opened: the head
//! is taken from the newest row as it is then.
//!
//! The database runs in WAL mode with `synchronous=FULL` (a committed append
//! is on disk when [`LogStore::append`] returns) and a 5 s busy timeout, so
//! several processes can share one file; appends take the write lock up front
//! (`BEGIN IMMEDIATE`), which keeps each session's `seq` gapless.
//!
//! Appends are committed in groups: a writer that finds the connection busy
//! leaves its write in a queue, and whoever holds the connection next runs
//! every queued write in one transaction (each in a savepoint of its own, so
//! one that fails takes nothing else with it) and commits them with one
//! fsync. Every writer returns only after the commit that holds its write:
//! nothing is acknowledged before it is on disk.
//!
//! The schema and its migrations are in `schema`, reading rows in `rows`,
//! appending events in `append`, leases in `lease`, checking a chain in
//! `verify`, and the [`LogStore`] operations over them in `log_store`.
//! The helpers the Postgres backend shares are re-exported here.
//!
//! [`LogStore`]: super::store::LogStore
//! [`LogStore::append`]: super::store::LogStore::append
//! [`SCHEMA_VERSION`]: super::store::SCHEMA_VERSION

mod append;
mod lease;
mod log_store;
mod rows;
mod schema;
mod verify;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use super::log::StoredEvent;
use super::store::{Head, StoreError};

pub(super) use append::{encode, newest_matches_head};
pub(super) use lease::{lease_lost, stale};
pub(super) use verify::{check_and_decode, orphans_report};

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// [`LogStore`] on a SQLite database (one connection behind a mutex).
///
/// [`LogStore`]: super::store::LogStore
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// The database file (absolute), `None` in memory.
    path: Option<std::path::PathBuf>,
    /// Writes waiting for the next group commit ([`SqliteStore::group_write`]).
    pending: Mutex<Vec<(Work, Arc<Slot>)>>,
    /// Group commits run so far (each one transaction, one fsync).
    groups: std::sync::atomic::AtomicU64,
    /// Writes made through the group commit so far.
    writes: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

/// What a grouped write gives back.
pub(super) enum Written {
    /// The events stored.
    Stored(Vec<StoredEvent>),
    /// The lease was given back: why the events could not be written, if
    /// they could not, and the head after.
    Released(Option<StoreError>, Option<Head>),
}

impl Written {
    pub(super) fn into_stored(self) -> Vec<StoredEvent> {
        match self {
            Written::Stored(s) => s,
            Written::Released(..) => Vec::new(),
        }
    }
}

/// One write of a group commit, run inside the group's transaction.
pub(super) type Work = Box<dyn FnOnce(&Transaction<'_>) -> Result<Written, StoreError> + Send>;

/// Where a write's outcome is left for its writer.
#[derive(Default)]
pub(super) struct Slot(Mutex<Option<Result<Written, StoreError>>>);

impl Slot {
    fn take(&self) -> Option<Result<Written, StoreError>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn put(&self, r: Result<Written, StoreError>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    }
}

/// The error every write of a group gets when the group's transaction could
/// not be begun or committed (nothing of it was written).
fn group_failed(e: &rusqlite::Error) -> StoreError {
    StoreError::Io(std::io::Error::other(format!("the store could not commit: {e}")))
}

/// Run `f` in savepoint `name` of `tx`: its changes are kept when it
/// succeeds and rolled back when it fails; its outcome. The outer error: the
/// savepoint could not be begun or ended (the transaction is then in doubt).
pub(super) fn in_savepoint<T>(
    tx: &Transaction<'_>,
    name: &str,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<Result<T, StoreError>, rusqlite::Error> {
    tx.prepare_cached(&format!("SAVEPOINT {name}"))?.execute([])?;
    let outcome = f();
    if outcome.is_err() {
        tx.prepare_cached(&format!("ROLLBACK TO {name}"))?.execute([])?;
    }
    tx.prepare_cached(&format!("RELEASE {name}"))?.execute([])?;
    Ok(outcome)
}

/// Run `works` in one transaction, each in a savepoint (a failed one is
/// rolled back alone), and commit once; the outcome of each, in order.
fn run_group(conn: &mut Connection, works: Vec<Work>) -> Vec<Result<Written, StoreError>> {
    let n = works.len();
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return (0..n).map(|_| Err(group_failed(&e))).collect(),
    };
    let guarded = |work: Work, tx: &Transaction<'_>| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(tx))).unwrap_or_else(|p| {
            Err(StoreError::Io(std::io::Error::other(format!("the write panicked: {}", crate::text::panic_line(&*p)))))
        })
    };
    // A group of one needs no savepoint: a write that fails takes the whole
    // transaction back with it.
    if n == 1 {
        let Some(work) = works.into_iter().next() else { return Vec::new() };
        return match guarded(work, &tx) {
            Ok(written) => match tx.commit() {
                Ok(()) => vec![Ok(written)],
                Err(e) => vec![Err(group_failed(&e))],
            },
            Err(e) => {
                // Dropping the transaction rolls it back.
                drop(tx);
                vec![Err(e)]
            }
        };
    }
    let mut results = Vec::with_capacity(n);
    for work in works {
        let outcome = in_savepoint(&tx, "grouped_write", || guarded(work, &tx));
        match outcome {
            Ok(outcome) => results.push(outcome),
            // The transaction is in doubt: nothing of the group is kept.
            Err(e) => return (0..n).map(|_| Err(group_failed(&e))).collect(),
        }
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => (0..n).map(|_| Err(group_failed(&e))).collect(),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, creating its parent
    /// directory. Refuses databases with a newer schema version and migrates
    /// older ones.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Self::setup(Connection::open(path)?, path)
    }

    /// Opens the store at `path` only if it exists and is a wrepl store:
    /// read-only commands (`log`, `types --session`) never create one.
    pub fn open_existing(path: &Path) -> Result<Self, StoreError> {
        if !path.is_file() {
            return Err(StoreError::NoStore(path.to_path_buf()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let has_meta: bool = conn
            .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n > 0)
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                    StoreError::NotAStore(path.to_path_buf())
                }
                e => StoreError::Sqlite(e),
            })?;
        if !has_meta {
            return Err(StoreError::NotAStore(path.to_path_buf()));
        }
        Self::setup(conn, path)
    }

    fn setup(conn: Connection, path: &Path) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt {
                session: String::new(),
                seq: None,
                reason: format!("could not enable WAL journal mode (got {mode:?})"),
            });
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        let mut store = Self::init(conn)?;
        // The file exists now: its canonical path (else as given, made absolute).
        store.path = Some(std::fs::canonicalize(path).or_else(|_| std::path::absolute(path))?);
        Ok(store)
    }

    /// A private, non-persistent store (for tests and throwaway sessions).
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory()?)
    }

    /// Run `work` in the next group commit (see the module documentation):
    /// its outcome, once the transaction that holds it is committed.
    pub(super) fn group_write(&self, work: Work) -> Result<Written, StoreError> {
        self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).push((work, slot.clone()));
        let mut conn = self.lock();
        // The writer that held the connection may have committed this write
        // with its own.
        if let Some(done) = slot.take() {
            return done;
        }
        let group = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        let (works, slots): (Vec<Work>, Vec<Arc<Slot>>) = group.into_iter().unzip();
        self.groups.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut mine = None;
        for (s, r) in slots.into_iter().zip(run_group(&mut conn, works)) {
            if Arc::ptr_eq(&s, &slot) {
                mine = Some(r);
            } else {
                s.put(r);
            }
        }
        drop(conn);
        // Not in the group: a writer before took it and stopped (a panic)
        // before answering; it was not committed.
        mine.or_else(|| slot.take()).unwrap_or_else(|| {
            Err(StoreError::Io(std::io::Error::other(
                "the write was lost with another writer's failure; it was not committed",
            )))
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no open transaction behind
        // (rusqlite rolls back on drop), so the connection is still usable.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
