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

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

use super::chain::{canonical_json, link_hash};
use super::log::{Event, StoredEvent, LOG_VERSION};
use super::store::{
    now_ms, validate_session_name, BadLink, Head, LeaseHolder, LeaseOwner, LeaseTaken, LogStore, SessionInfo,
    StoreError, VerifyReport, MAX_SESSION_NAME, SCHEMA_VERSION,
};

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The leases table and the trigger that moves a session's head with
/// every inserted event (added in version 2).
const LEASES_AND_HEAD_TRIGGER: &str = "
    CREATE TABLE IF NOT EXISTS leases(
        session TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        pid INTEGER,
        host TEXT,
        boot_id TEXT,
        start_ticks INTEGER,
        pid_ns TEXT,
        since_ms INTEGER,
        heartbeat_ms INTEGER);
    CREATE TRIGGER IF NOT EXISTS events_move_head AFTER INSERT ON events BEGIN
        UPDATE sessions SET head_events = NEW.seq + 1, head_hash = NEW.hash
        WHERE name = NEW.session AND head_events <= NEW.seq;
    END;";

/// The sessions and events tables of a new store (the current schema).
const CREATE_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS sessions(
        name TEXT PRIMARY KEY,
        created_at_ms INTEGER,
        log_version INTEGER,
        head_events INTEGER NOT NULL DEFAULT 0,
        head_hash TEXT NOT NULL DEFAULT '');
    CREATE TABLE IF NOT EXISTS events(
        session TEXT,
        seq INTEGER,
        block INTEGER,
        json TEXT,
        hash TEXT,
        PRIMARY KEY(session, seq));";

/// Version 1 to 2: the recorded head of every session (taken from its
/// newest row as it is), then [`LEASES_AND_HEAD_TRIGGER`].
const MIGRATE_1_TO_2: &str = "
    ALTER TABLE sessions ADD COLUMN head_events INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN head_hash TEXT NOT NULL DEFAULT '';
    UPDATE sessions SET
        head_events = (SELECT COUNT(*) FROM events e WHERE e.session = sessions.name),
        head_hash = COALESCE((SELECT hash FROM events e WHERE e.session = sessions.name ORDER BY seq DESC LIMIT 1), '');";

fn to_u64(value: i64, session: &str, seq: Option<u64>, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        session: session.to_string(),
        seq,
        reason: format!("negative {what} {value}"),
    })
}

fn to_u32(value: i64, session: &str, what: &str) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt {
        session: session.to_string(),
        seq: None,
        reason: format!("{what} {value} out of range"),
    })
}

/// One raw row of the `events` table.
struct Row {
    seq: i64,
    block: i64,
    json: String,
    hash: String,
}

/// [`LogStore`] on a SQLite database (one connection behind a mutex).
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// The database file (absolute), `None` in memory.
    path: Option<std::path::PathBuf>,
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

    fn init(mut conn: Connection) -> Result<Self, StoreError> {
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);")?;
        let found: Option<Option<String>> =
            tx.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).optional()?;
        match found {
            None => {
                tx.execute_batch(CREATE_TABLES)?;
                tx.execute_batch(LEASES_AND_HEAD_TRIGGER)?;
                tx.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', ?1)",
                    params![SCHEMA_VERSION.to_string()],
                )?;
            }
            Some(value) => {
                let text = value.unwrap_or_default();
                let version: u32 = text.trim().parse().map_err(|_| StoreError::Corrupt {
                    session: String::new(),
                    seq: None,
                    reason: format!("unreadable schema_version {text:?}"),
                })?;
                match version {
                    SCHEMA_VERSION => {}
                    1 => {
                        tx.execute_batch(MIGRATE_1_TO_2)?;
                        tx.execute_batch(LEASES_AND_HEAD_TRIGGER)?;
                        tx.execute(
                            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                            [SCHEMA_VERSION.to_string()],
                        )?;
                    }
                    found => return Err(StoreError::VersionMismatch { found, supported: SCHEMA_VERSION }),
                }
            }
        }
        // Not part of the log's schema: servers' keys and when each session
        // was last used (read by nothing that verifies or replays a log).
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS secrets(name TEXT PRIMARY KEY, value BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS activity(session TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);",
        )?;
        tx.commit()?;
        Ok(Self { conn: Mutex::new(conn), path: None })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no open transaction behind
        // (rusqlite rolls back on drop), so the connection is still usable.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The session's recorded log version, if the session exists; errors if it
/// is not one this build can read or extend.
fn session_log_version(conn: &Connection, session: &str) -> Result<Option<u32>, StoreError> {
    let found: Option<Option<i64>> =
        conn.query_row("SELECT log_version FROM sessions WHERE name = ?1", [session], |r| r.get(0)).optional()?;
    let Some(found) = found else { return Ok(None) };
    let found = to_u32(found.unwrap_or(0), session, "log_version")?;
    if found != LOG_VERSION {
        return Err(StoreError::LogVersionMismatch { session: session.to_string(), found, supported: LOG_VERSION });
    }
    Ok(Some(found))
}

fn load_rows(conn: &Connection, session: &str) -> Result<Vec<Row>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT seq, block, json, hash FROM events WHERE session = ?1 ORDER BY seq")?;
    let rows = stmt.query_map([session], |r| {
        Ok(Row {
            seq: r.get(0)?,
            block: r.get(1)?,
            json: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            hash: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// The lease row of `session`: its owner id, who holds it, and the holder's
/// identity as recorded (to judge whether it is dead).
fn read_lease(conn: &Connection, session: &str) -> Result<Option<(String, LeaseHolder, LeaseOwner)>, StoreError> {
    let row = conn
        .query_row(
            "SELECT owner, pid, host, boot_id, start_ticks, since_ms, heartbeat_ms, pid_ns FROM leases WHERE session = ?1",
            [session],
            |r| {
                let int = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0).max(0) as u64);
                let text = |i: usize| r.get::<_, Option<String>>(i).map(Option::unwrap_or_default);
                let (id, pid, host) = (r.get::<_, String>(0)?, u32::try_from(int(1)?).unwrap_or(0), text(2)?);
                let holder = LeaseHolder { pid, host: host.clone(), since_ms: int(5)?, heartbeat_ms: int(6)? };
                let recorded =
                    LeaseOwner { id: id.clone(), pid, host, boot_id: text(3)?, start_ticks: int(4)?, pid_ns: text(7)? };
                Ok((id, holder, recorded))
            },
        )
        .optional()?;
    Ok(row)
}

/// The error of a writer whose lease is no longer its own, naming who holds
/// the session now (from [`read_lease`]).
pub(super) fn lease_lost(session: &str, now_held: Option<(String, LeaseHolder, LeaseOwner)>) -> StoreError {
    let by = now_held.map_or_else(|| "nobody".to_string(), |(_, h, _)| format!("pid {} on {}", h.pid, h.host));
    StoreError::LeaseLost { session: session.to_string(), by }
}

/// Why a lease is stale, as `me` sees it; `None` while its holder is live.
pub(super) fn stale(
    me: &LeaseOwner,
    holder: &LeaseHolder,
    recorded: &LeaseOwner,
    ttl: Duration,
) -> Option<&'static str> {
    if me.sees_dead(recorded) {
        Some("its process is gone")
    } else if holder.heartbeat_ms.saturating_add(ttl.as_millis() as u64) < now_ms() {
        Some("no heartbeat within the lease's time to live")
    } else {
        None
    }
}

/// Events with their canonical JSON, encoded before any lock is taken.
pub(super) fn encode(events: &[(u64, Event)]) -> Result<Vec<(u64, String, &Event)>, StoreError> {
    events.iter().map(|(block, event)| Ok((*block, canonical_json(event)?, event))).collect()
}

/// The session's recorded head (`None`: no such session).
fn read_head(conn: &Connection, session: &str) -> Result<Option<Head>, StoreError> {
    let found: Option<(i64, String)> = conn
        .query_row("SELECT head_events, head_hash FROM sessions WHERE name = ?1", [session], |r| {
            Ok((r.get::<_, Option<i64>>(0)?.unwrap_or(0), r.get::<_, Option<String>>(1)?.unwrap_or_default()))
        })
        .optional()?;
    found
        .map(|(events, hash)| Ok(Head { events: to_u64(events, session, None, "head event count")?, hash }))
        .transpose()
}

/// Append inside an open write transaction: continue the chain after the
/// newest row, which must be the recorded head (a log whose newest rows are
/// gone is not extended), then move the head.
fn append_in(
    tx: &Transaction<'_>,
    session: &str,
    encoded: Vec<(u64, String, &Event)>,
) -> Result<Vec<StoredEvent>, StoreError> {
    if session_log_version(tx, session)?.is_none() {
        tx.execute(
            "INSERT INTO sessions(name, created_at_ms, log_version) VALUES (?1, ?2, ?3)",
            params![session, i64::try_from(now_ms()).unwrap_or(i64::MAX), i64::from(LOG_VERSION)],
        )?;
    }
    let head = read_head(tx, session)?.unwrap_or(Head { events: 0, hash: String::new() });
    let last: Option<(i64, i64, Option<String>)> = tx
        .query_row("SELECT seq, block, hash FROM events WHERE session = ?1 ORDER BY seq DESC LIMIT 1", [session], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let (mut seq, mut prev_block, mut prev_hash) = match last {
        None => (0u64, None, String::new()),
        Some((seq, block, hash)) => {
            let seq = to_u64(seq, session, None, "seq")?;
            let block = to_u64(block, session, Some(seq), "block")?;
            let next = seq.checked_add(1).ok_or_else(|| StoreError::Corrupt {
                session: session.to_string(),
                seq: Some(seq),
                reason: "sequence number exhausted".into(),
            })?;
            (next, Some(block), hash.unwrap_or_default())
        }
    };
    newest_matches_head(session, seq, &prev_hash, &head)?;
    let mut stored = Vec::with_capacity(encoded.len());
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO events(session, seq, block, json, hash) VALUES (?1, ?2, ?3, ?4, ?5)")?;
        for (block, json, event) in encoded {
            let invalid = |reason: String| StoreError::InvalidBlock { session: session.to_string(), block, reason };
            if let Some(prev) = prev_block.filter(|prev| block < *prev) {
                return Err(invalid(format!("goes backwards (previous event is in block {prev})")));
            }
            let block_sql = i64::try_from(block).map_err(|_| invalid("exceeds i64::MAX".into()))?;
            let seq_sql = i64::try_from(seq).map_err(|_| StoreError::Corrupt {
                session: session.to_string(),
                seq: Some(seq),
                reason: "sequence number exhausted".into(),
            })?;
            let hash = link_hash(&prev_hash, block, seq, &json);
            insert.execute(params![session, seq_sql, block_sql, json, hash])?;
            stored.push(StoredEvent { block, seq, event: event.clone(), hash: hash.clone() });
            prev_hash = hash;
            prev_block = Some(block);
            seq += 1;
        }
    }
    tx.execute(
        "UPDATE sessions SET head_events = ?1, head_hash = ?2 WHERE name = ?3",
        params![i64::try_from(seq).unwrap_or(i64::MAX), prev_hash, session],
    )?;
    Ok(stored)
}

/// An append continues the chain only when the newest stored event (the
/// next `seq`, and `prev_hash`) is the session's recorded head: a log whose
/// newest rows are gone is not extended.
pub(super) fn newest_matches_head(session: &str, seq: u64, prev_hash: &str, head: &Head) -> Result<(), StoreError> {
    if head.events == seq && head.hash == prev_hash {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        session: session.to_string(),
        seq: Some(seq),
        reason: format!(
            "the newest stored event does not match the session's recorded head ({} events ending in {:?}, found {seq}); the log was truncated or altered",
            head.events,
            short_hash(&head.hash)
        ),
    })
}

/// The first 12 bytes of a stored hash, for messages (a forged one may hold
/// anything, so the cut lands on a char boundary and is shown escaped).
pub(super) fn short_hash(h: &str) -> &str {
    crate::text::prefix(h, 12)
}

/// The verification of a session the store does not list: fine when no
/// events name it, else broken (its record was removed, its events remain).
pub(super) fn orphans_report(orphans: i64) -> VerifyReport {
    if orphans <= 0 {
        return VerifyReport { events: 0, ok: true, first_bad: None };
    }
    VerifyReport {
        events: orphans as u64,
        ok: false,
        first_bad: Some(BadLink {
            seq: 0,
            reason: format!(
                "{orphans} stored events belong to a session the store does not list (its record was removed)"
            ),
        }),
    }
}

/// Recompute a session's chain from its rows (seq, block, JSON, hash) in
/// `seq` order and compare the newest with the recorded `head`: the first
/// broken link, as [`LogStore::verify`] reports it.
pub(super) fn check_chain(rows: impl ExactSizeIterator<Item = (i64, i64, String, String)>, head: Head) -> VerifyReport {
    let events = rows.len() as u64;
    let bad = |seq: u64, reason: String| VerifyReport { events, ok: false, first_bad: Some(BadLink { seq, reason }) };
    let mut prev_hash = String::new();
    let mut prev_block: Option<u64> = None;
    for (expected, (seq, block, json, hash)) in (0u64..).zip(rows) {
        if seq != expected as i64 {
            return bad(expected, format!("sequence gap: expected seq {expected}, found {seq}"));
        }
        let Ok(block) = u64::try_from(block) else {
            return bad(expected, format!("negative block number {block}"));
        };
        if let Some(prev) = prev_block.filter(|prev| block < *prev) {
            return bad(expected, format!("block number goes backwards ({prev} -> {block})"));
        }
        if let Err(e) = serde_json::from_str::<Event>(&json) {
            return bad(expected, format!("undecodable event JSON: {e}"));
        }
        let computed = link_hash(&prev_hash, block, expected, &json);
        if computed != hash {
            return bad(expected, format!("hash mismatch: stored {hash}, computed {computed}"));
        }
        prev_hash = hash;
        prev_block = Some(block);
    }
    if head.events != events || head.hash != prev_hash {
        return bad(
            events.min(head.events),
            format!(
                "the session's recorded head says {} events ending in {:?}, the log has {events} ending in {:?}: its newest events were removed or altered",
                head.events,
                short_hash(&head.hash),
                short_hash(&prev_hash)
            ),
        );
    }
    VerifyReport { events, ok: true, first_bad: None }
}

impl LogStore for SqliteStore {
    fn file_path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn append(&self, session: &str, events: &[(u64, Event)]) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let encoded = encode(events)?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored = append_in(&tx, session, encoded)?;
        tx.commit()?;
        Ok(stored)
    }

    fn append_leased(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let encoded = encode(events)?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        match read_lease(&tx, session)? {
            Some((owner, ..)) if owner == owner_id => {}
            other => return Err(lease_lost(session, other)),
        }
        let stored = append_in(&tx, session, encoded)?;
        tx.commit()?;
        Ok(stored)
    }

    fn head(&self, session: &str) -> Result<Option<Head>, StoreError> {
        validate_session_name(session)?;
        let conn = self.lock();
        read_head(&conn, session)
    }

    fn acquire_lease(&self, session: &str, owner: &LeaseOwner, ttl: Duration) -> Result<LeaseTaken, StoreError> {
        validate_session_name(session)?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let taken = match read_lease(&tx, session)? {
            None => LeaseTaken::Free,
            Some((id, ..)) if id == owner.id => LeaseTaken::Free,
            Some((_, holder, recorded)) => match stale(owner, &holder, &recorded, ttl) {
                None => return Err(StoreError::SessionBusy { session: session.to_string(), holder }),
                Some(reason) => LeaseTaken::TakenOver { holder, reason: reason.to_string() },
            },
        };
        let now_sql = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT OR REPLACE INTO leases(session, owner, pid, host, boot_id, start_ticks, pid_ns, since_ms, heartbeat_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
            params![
                session,
                owner.id,
                i64::from(owner.pid),
                owner.host,
                owner.boot_id,
                i64::try_from(owner.start_ticks).unwrap_or(0),
                owner.pid_ns,
                now_sql
            ],
        )?;
        tx.commit()?;
        Ok(taken)
    }

    fn renew_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        let conn = self.lock();
        let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        let n = conn.execute(
            "UPDATE leases SET heartbeat_ms = ?1 WHERE session = ?2 AND owner = ?3",
            params![now, session, owner_id],
        )?;
        if n == 1 {
            return Ok(());
        }
        Err(lease_lost(session, read_lease(&conn, session)?))
    }

    fn release_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute("DELETE FROM leases WHERE session = ?1 AND owner = ?2", params![session, owner_id])?;
        Ok(())
    }

    fn quarantine(&self, session: &str) -> Result<String, StoreError> {
        validate_session_name(session)?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let taken = |name: &str| -> Result<bool, StoreError> {
            let n: i64 = tx.query_row(
                "SELECT (SELECT COUNT(*) FROM sessions WHERE name = ?1) + (SELECT COUNT(*) FROM events WHERE session = ?1)",
                [name],
                |r| r.get(0),
            )?;
            Ok(n > 0)
        };
        // Session names are ASCII (validated), so byte cuts are char cuts.
        let mut n = 0u32;
        let target = loop {
            let suffix = if n == 0 { format!(".tampered-{}", now_ms()) } else { format!(".tampered-{}-{n}", now_ms()) };
            let keep = session.len().min(MAX_SESSION_NAME.saturating_sub(suffix.len()));
            let candidate = format!("{}{suffix}", &session[..keep]);
            if !taken(&candidate)? {
                break candidate;
            }
            n += 1;
        };
        tx.execute("UPDATE events SET session = ?1 WHERE session = ?2", [&target, session])?;
        let moved = tx.execute("UPDATE sessions SET name = ?1 WHERE name = ?2", [&target, session])?;
        if moved == 0 {
            // Orphaned events: list them (with an empty head, so they keep
            // failing verification, as the evidence should).
            tx.execute(
                "INSERT INTO sessions(name, created_at_ms, log_version) VALUES (?1, ?2, ?3)",
                params![target, i64::try_from(now_ms()).unwrap_or(i64::MAX), i64::from(LOG_VERSION)],
            )?;
        }
        tx.commit()?;
        Ok(target)
    }

    fn load(&self, session: &str) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        if session_log_version(&tx, session)?.is_none() {
            return Ok(Vec::new());
        }
        let rows = load_rows(&tx, session)?;
        drop(tx);
        rows.into_iter()
            .map(|row| {
                let seq = to_u64(row.seq, session, None, "seq")?;
                let block = to_u64(row.block, session, Some(seq), "block")?;
                let event = serde_json::from_str(&row.json).map_err(|e| StoreError::Corrupt {
                    session: session.to_string(),
                    seq: Some(seq),
                    reason: format!("undecodable event JSON: {e}"),
                })?;
                Ok(StoredEvent { block, seq, event, hash: row.hash })
            })
            .collect()
    }

    fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT s.name, s.created_at_ms, s.log_version, COUNT(e.seq), COUNT(DISTINCT e.block)
             FROM sessions s LEFT JOIN events e ON e.session = s.name
             GROUP BY s.name ORDER BY s.name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, created, version, events, blocks) = row?;
            out.push(SessionInfo {
                created_at_ms: to_u64(created.unwrap_or(0), &name, None, "created_at_ms")?,
                log_version: to_u32(version.unwrap_or(0), &name, "log_version")?,
                events: to_u64(events, &name, None, "event count")?,
                blocks: to_u64(blocks, &name, None, "block count")?,
                name,
            });
        }
        Ok(out)
    }

    fn verify(&self, session: &str) -> Result<VerifyReport, StoreError> {
        validate_session_name(session)?;
        let rows = {
            let mut conn = self.lock();
            let tx = conn.transaction()?;
            if session_log_version(&tx, session)?.is_none() {
                // Events whose session row was removed: the log was altered.
                let orphans: i64 =
                    tx.query_row("SELECT COUNT(*) FROM events WHERE session = ?1", [session], |r| r.get(0))?;
                return Ok(orphans_report(orphans));
            }
            let head = read_head(&tx, session)?.unwrap_or(Head { events: 0, hash: String::new() });
            (load_rows(&tx, session)?, head)
        };
        let (rows, head) = rows;
        Ok(check_chain(rows.into_iter().map(|r| (r.seq, r.block, r.json, r.hash)), head))
    }

    fn delete(&self, session: &str) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some((_, holder, recorded)) = read_lease(&tx, session)? {
            let me = LeaseOwner::this_process();
            if stale(&me, &holder, &recorded, crate::replay::recorder::LEASE_TTL).is_none() {
                return Err(StoreError::SessionBusy { session: session.to_string(), holder });
            }
            tx.execute("DELETE FROM leases WHERE session = ?1", [session])?;
        }
        tx.execute("DELETE FROM events WHERE session = ?1", [session])?;
        tx.execute("DELETE FROM sessions WHERE name = ?1", [session])?;
        tx.execute("DELETE FROM activity WHERE session = ?1", [session])?;
        tx.commit()?;
        Ok(())
    }

    fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("no randomness for a new key: {e}"))))?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("INSERT OR IGNORE INTO secrets(name, value) VALUES (?1, ?2)", params![name, &fresh[..]])?;
        let value: Vec<u8> = tx.query_row("SELECT value FROM secrets WHERE name = ?1", [name], |r| r.get(0))?;
        tx.commit()?;
        super::store::checked_secret(name, value)
    }

    fn touch(&self, session: &str, at_ms: u64) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let conn = self.lock();
        conn.execute(
            "INSERT INTO activity(session, at_ms) VALUES (?1, ?2) \
             ON CONFLICT(session) DO UPDATE SET at_ms = MAX(at_ms, excluded.at_ms)",
            params![session, at_ms as i64],
        )?;
        Ok(())
    }

    fn touched(&self, session: &str) -> Result<Option<u64>, StoreError> {
        let conn = self.lock();
        let at: Option<i64> =
            conn.query_row("SELECT at_ms FROM activity WHERE session = ?1", [session], |r| r.get(0)).optional()?;
        Ok(at.map(|v| v.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn call(n: u32) -> Event {
        Event::Call { tool: format!("tool{n}"), input: format!("{{\"n\":{n}}}"), schema: String::new() }
    }

    fn block_events(block: u64) -> Vec<(u64, Event)> {
        vec![
            (block, Event::Begin { code: format!("block {block}"), boundary: "b".into() }),
            (block, call(block as u32)),
            (block, Event::Done { call: 0, ok: true, payload: "{}".into(), error_kind: String::new() }),
            (block, Event::Now { us: 1.5e15 }),
            (block, Event::Random { value: u64::MAX }),
            (block, Event::End { threw: false, error: None, stopped: false }),
        ]
    }

    fn temp_db() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("sessions.sqlite3");
        (dir, path)
    }

    /// Stores five blocks of events in session "s" and returns the path.
    fn seeded() -> (tempfile::TempDir, PathBuf) {
        let (dir, path) = temp_db();
        let store = SqliteStore::open(&path).unwrap();
        for block in 0..5 {
            store.append("s", &block_events(block)).unwrap();
        }
        assert!(store.verify("s").unwrap().ok);
        (dir, path)
    }

    fn raw(path: &Path) -> Connection {
        Connection::open(path).unwrap()
    }

    #[test]
    fn round_trip_persists_across_opens() {
        let (_dir, path) = temp_db();
        let written = {
            let store = SqliteStore::open(&path).unwrap();
            store.append("sess-1", &block_events(0)).unwrap()
        };
        assert_eq!(written.len(), 6);
        let store = SqliteStore::open(&path).unwrap();
        let loaded = store.load("sess-1").unwrap();
        assert_eq!(loaded, written);
        assert_eq!(loaded.iter().map(|e| e.seq).collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());
        assert_eq!(loaded[0].hash, link_hash("", 0, 0, &canonical_json(&loaded[0].event).unwrap()));
        assert_eq!(loaded[1].hash, link_hash(&loaded[0].hash, 0, 1, &canonical_json(&loaded[1].event).unwrap()));
        assert_eq!(loaded[0].hash.len(), 64);
        let info = store.sessions().unwrap();
        assert_eq!(info.len(), 1);
        assert_eq!((info[0].name.as_str(), info[0].events, info[0].blocks), ("sess-1", 6, 1));
        assert_eq!(info[0].log_version, LOG_VERSION);
        assert!(info[0].created_at_ms > 0);
    }

    #[test]
    fn seq_continues_over_appends() {
        let store = SqliteStore::in_memory().unwrap();
        let mut all = Vec::new();
        for block in 0..4 {
            let got = store.append("s", &block_events(block)).unwrap();
            assert_eq!(got.first().unwrap().seq, block * 6);
            all.extend(got);
        }
        // An empty append creates nothing and changes nothing.
        assert!(store.append("s", &[]).unwrap().is_empty());
        // Several events of one block across appends, then the next block.
        all.extend(store.append("s", &[(4, call(1))]).unwrap());
        all.extend(store.append("s", &[(4, call(2)), (5, call(3))]).unwrap());
        let loaded = store.load("s").unwrap();
        assert_eq!(loaded, all);
        assert!(loaded.iter().enumerate().all(|(i, e)| e.seq == i as u64));
        let report = store.verify("s").unwrap();
        assert_eq!(report, VerifyReport { events: 27, ok: true, first_bad: None });
        assert_eq!(store.sessions().unwrap()[0].blocks, 6);
    }

    #[test]
    fn sessions_are_isolated() {
        let store = SqliteStore::in_memory().unwrap();
        store.append("a", &block_events(0)).unwrap();
        store.append("b", &block_events(0)[..2]).unwrap();
        store.append("a", &block_events(1)).unwrap();
        assert_eq!(store.load("a").unwrap().len(), 12);
        let b = store.load("b").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].seq, 0);
        assert!(store.load("missing").unwrap().is_empty());
        assert_eq!(store.verify("missing").unwrap(), VerifyReport { events: 0, ok: true, first_bad: None });
        let names: Vec<_> = store.sessions().unwrap().into_iter().map(|s| (s.name, s.events, s.blocks)).collect();
        assert_eq!(names, vec![("a".to_string(), 12, 2), ("b".to_string(), 2, 1)]);
        store.delete("a").unwrap();
        store.delete("a").unwrap();
        assert!(store.load("a").unwrap().is_empty());
        assert_eq!(store.sessions().unwrap().len(), 1);
        assert!(store.verify("b").unwrap().ok);
        // A deleted session starts over.
        assert_eq!(store.append("a", &[(0, call(0))]).unwrap()[0].seq, 0);
    }

    #[test]
    fn block_order_enforced_on_append() {
        let store = SqliteStore::in_memory().unwrap();
        store.append("s", &[(3, call(0))]).unwrap();
        let err = store.append("s", &[(3, call(1)), (2, call(2))]).unwrap_err();
        assert!(matches!(err, StoreError::InvalidBlock { block: 2, .. }), "{err}");
        let err = store.append("s", &[(u64::MAX, call(1))]).unwrap_err();
        assert!(matches!(err, StoreError::InvalidBlock { .. }), "{err}");
        // The failed appends wrote nothing.
        assert_eq!(store.load("s").unwrap().len(), 1);
        assert_eq!(store.append("s", &[(3, call(3))]).unwrap()[0].seq, 1);
    }

    #[test]
    fn tampered_json_detected() {
        let (_dir, path) = seeded();
        raw(&path)
            .execute(
                "UPDATE events SET json = ?1 WHERE session = 's' AND seq = 8",
                [canonical_json(&Event::Random { value: 7 }).unwrap()],
            )
            .unwrap();
        let report = SqliteStore::open(&path).unwrap().verify("s").unwrap();
        assert!(!report.ok);
        assert_eq!(report.events, 30);
        let bad = report.first_bad.unwrap();
        assert_eq!(bad.seq, 8);
        assert!(bad.reason.contains("hash mismatch"), "{}", bad.reason);
    }

    #[test]
    fn undecodable_json_detected() {
        let (_dir, path) = seeded();
        raw(&path).execute("UPDATE events SET json = '{\"kind\":\"bogus\"}' WHERE seq = 4", []).unwrap();
        let store = SqliteStore::open(&path).unwrap();
        let bad = store.verify("s").unwrap().first_bad.unwrap();
        assert_eq!(bad.seq, 4);
        assert!(bad.reason.contains("undecodable"), "{}", bad.reason);
        assert!(matches!(store.load("s").unwrap_err(), StoreError::Corrupt { seq: Some(4), .. }));
    }

    #[test]
    fn deleted_row_detected() {
        let (_dir, path) = seeded();
        raw(&path).execute("DELETE FROM events WHERE session = 's' AND seq = 13", []).unwrap();
        let report = SqliteStore::open(&path).unwrap().verify("s").unwrap();
        assert!(!report.ok);
        assert_eq!(report.events, 29);
        let bad = report.first_bad.unwrap();
        assert_eq!(bad.seq, 13);
        assert!(bad.reason.contains("gap"), "{}", bad.reason);
    }

    #[test]
    fn changed_hash_detected() {
        let (_dir, path) = seeded();
        raw(&path).execute("UPDATE events SET hash = ?1 WHERE session = 's' AND seq = 20", ["0".repeat(64)]).unwrap();
        let bad = SqliteStore::open(&path).unwrap().verify("s").unwrap().first_bad.unwrap();
        assert_eq!(bad.seq, 20);
        assert!(bad.reason.contains("hash mismatch"), "{}", bad.reason);
    }

    #[test]
    fn reordered_rows_detected() {
        let (_dir, path) = seeded();
        let conn = raw(&path);
        conn.execute_batch(
            "UPDATE events SET seq = -1 WHERE session = 's' AND seq = 10;
             UPDATE events SET seq = 10 WHERE session = 's' AND seq = 11;
             UPDATE events SET seq = 11 WHERE session = 's' AND seq = -1;",
        )
        .unwrap();
        let bad = SqliteStore::open(&path).unwrap().verify("s").unwrap().first_bad.unwrap();
        assert_eq!(bad.seq, 10);
    }

    #[test]
    fn backwards_block_detected() {
        let (_dir, path) = seeded();
        raw(&path).execute("UPDATE events SET block = 0 WHERE session = 's' AND seq = 6", []).unwrap();
        let bad = SqliteStore::open(&path).unwrap().verify("s").unwrap().first_bad.unwrap();
        // Rewriting a stored block number breaks that row's hash.
        assert_eq!(bad.seq, 6);
        assert!(bad.reason.contains("hash mismatch"), "{}", bad.reason);

        // With a recomputed chain, only the block order is wrong.
        let (_dir2, path2) = temp_db();
        let store = SqliteStore::open(&path2).unwrap();
        store.append("s", &[(1, call(0))]).unwrap();
        let json = canonical_json(&call(1)).unwrap();
        let prev = store.load("s").unwrap()[0].hash.clone();
        raw(&path2)
            .execute(
                "INSERT INTO events(session, seq, block, json, hash) VALUES ('s', 1, 0, ?1, ?2)",
                params![json, link_hash(&prev, 0, 1, &json)],
            )
            .unwrap();
        let bad = store.verify("s").unwrap().first_bad.unwrap();
        assert_eq!(bad.seq, 1);
        assert!(bad.reason.contains("backwards"), "{}", bad.reason);
    }

    #[test]
    fn newer_schema_refused() {
        let (_dir, path) = temp_db();
        SqliteStore::open(&path).unwrap().append("s", &[(0, call(0))]).unwrap();
        raw(&path).execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'", []).unwrap();
        let err = SqliteStore::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::VersionMismatch { found: 3, supported: 2 }), "{err}");
        raw(&path).execute("UPDATE meta SET value = 'x' WHERE key = 'schema_version'", []).unwrap();
        assert!(matches!(SqliteStore::open(&path).unwrap_err(), StoreError::Corrupt { .. }));
    }

    #[test]
    fn newer_log_version_refused() {
        let (_dir, path) = temp_db();
        let store = SqliteStore::open(&path).unwrap();
        store.append("s", &[(0, call(0))]).unwrap();
        raw(&path).execute("UPDATE sessions SET log_version = 99", []).unwrap();
        let is_mismatch = |e: StoreError| matches!(e, StoreError::LogVersionMismatch { found: 99, supported: 1, .. });
        assert!(is_mismatch(store.load("s").unwrap_err()));
        assert!(is_mismatch(store.append("s", &[(0, call(1))]).unwrap_err()));
        assert!(is_mismatch(store.verify("s").unwrap_err()));
        assert_eq!(store.sessions().unwrap()[0].log_version, 99);
    }

    #[test]
    fn not_a_database_is_an_error() {
        let (_dir, path) = temp_db();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        assert!(matches!(SqliteStore::open(&path).unwrap_err(), StoreError::Sqlite(_)));
    }

    #[test]
    fn invalid_names_rejected() {
        let store = SqliteStore::in_memory().unwrap();
        let long = "a".repeat(129);
        for name in ["", "a b", "a/b", "../x", "é", "a\0", long.as_str()] {
            let invalid = |e: StoreError| matches!(e, StoreError::InvalidName { .. });
            assert!(invalid(store.append(name, &[(0, call(0))]).unwrap_err()), "{name:?}");
            assert!(invalid(store.load(name).unwrap_err()), "{name:?}");
            assert!(invalid(store.verify(name).unwrap_err()), "{name:?}");
            assert!(invalid(store.delete(name).unwrap_err()), "{name:?}");
        }
        for name in ["a", "A-z_0.9", "a".repeat(128).as_str(), "..."] {
            store.append(name, &[(0, call(0))]).unwrap();
        }
        assert!(store.sessions().unwrap().len() == 4);
    }

    #[test]
    fn concurrent_appends_keep_chain() {
        let (_dir, path) = temp_db();
        let shared = Arc::new(SqliteStore::open(&path).unwrap());
        let mut handles = Vec::new();
        for t in 0..4u32 {
            // Two threads share one store; two have their own connection.
            let store = if t < 2 { Arc::clone(&shared) } else { Arc::new(SqliteStore::open(&path).unwrap()) };
            handles.push(std::thread::spawn(move || {
                for i in 0..25u32 {
                    let got = store.append("c", &[(0, call(t * 100 + i)), (0, call(t * 100 + i + 1000))]).unwrap();
                    assert_eq!(got[1].seq, got[0].seq + 1);
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        let loaded = shared.load("c").unwrap();
        assert_eq!(loaded.len(), 200);
        assert!(loaded.iter().enumerate().all(|(i, e)| e.seq == i as u64));
        assert_eq!(shared.verify("c").unwrap(), VerifyReport { events: 200, ok: true, first_bad: None });
    }

    #[test]
    fn truncating_the_newest_rows_is_detected_and_not_extended() {
        let (_dir, path) = seeded();
        raw(&path).execute("DELETE FROM events WHERE session = 's' AND seq >= 24", []).unwrap();
        let store = SqliteStore::open(&path).unwrap();
        let report = store.verify("s").unwrap();
        assert!(!report.ok);
        let bad = report.first_bad.unwrap();
        assert_eq!(bad.seq, 24);
        assert!(bad.reason.contains("30 events") && bad.reason.contains("removed"), "{}", bad.reason);
        // Appending would hide the truncation: refused, nothing written.
        let err = store.append("s", &[(5, call(9))]).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert_eq!(store.load("s").unwrap().len(), 24);
        assert_eq!(store.head("s").unwrap().unwrap().events, 30, "the head still says 30");
        assert_eq!(store.head("nosuch").unwrap(), None);
        // A forged head of any text is reported, never a panic.
        raw(&path).execute("UPDATE sessions SET head_hash = ?1", ["ab\u{1b}]0;x\u{7}é€😀cdef"]).unwrap();
        let bad = store.verify("s").unwrap().first_bad.unwrap();
        assert!(bad.reason.contains("\\u{1b}"), "escaped in the message: {}", bad.reason);
    }

    #[test]
    fn version_1_stores_are_migrated_with_their_head() {
        let (_dir, path) = temp_db();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        {
            // A store as version 1 wrote it.
            let conn = raw(&path);
            conn.execute_batch(
                "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
                 INSERT INTO meta VALUES ('schema_version', '1');
                 CREATE TABLE sessions(name TEXT PRIMARY KEY, created_at_ms INTEGER, log_version INTEGER);
                 CREATE TABLE events(session TEXT, seq INTEGER, block INTEGER, json TEXT, hash TEXT, PRIMARY KEY(session, seq));
                 INSERT INTO sessions VALUES ('old', 1, 1);",
            )
            .unwrap();
            let mut prev = String::new();
            for seq in 0..3u64 {
                let json = canonical_json(&call(seq as u32)).unwrap();
                let hash = link_hash(&prev, 0, seq, &json);
                conn.execute("INSERT INTO events VALUES ('old', ?1, 0, ?2, ?3)", params![seq as i64, json, hash])
                    .unwrap();
                prev = hash;
            }
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.verify("old").unwrap(), VerifyReport { events: 3, ok: true, first_bad: None });
        assert_eq!(store.head("old").unwrap().unwrap().events, 3);
        store.append("old", &[(1, call(7))]).unwrap();
        assert!(store.verify("old").unwrap().ok);
        let version: String =
            raw(&path).query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
        assert_eq!(version, "2");
    }

    #[test]
    fn read_only_opens_never_create_a_store() {
        let (dir, path) = temp_db();
        let err = SqliteStore::open_existing(&path).unwrap_err();
        assert!(matches!(err, StoreError::NoStore(_)), "{err}");
        assert!(!path.exists() && !path.parent().unwrap().exists());
        let junk = dir.path().join("junk");
        std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
        assert!(matches!(SqliteStore::open_existing(&junk).unwrap_err(), StoreError::NotAStore(_)));
        let other = dir.path().join("other.sqlite3");
        raw(&other).execute_batch("CREATE TABLE t(x);").unwrap();
        assert!(matches!(SqliteStore::open_existing(&other).unwrap_err(), StoreError::NotAStore(_)));
        SqliteStore::open(&path).unwrap().append("s", &[(0, call(0))]).unwrap();
        assert_eq!(SqliteStore::open_existing(&path).unwrap().load("s").unwrap().len(), 1);
    }

    fn owner(id: &str) -> LeaseOwner {
        LeaseOwner { id: id.into(), ..LeaseOwner::this_process() }
    }

    #[test]
    fn one_writer_per_session() {
        let (_dir, path) = temp_db();
        let a = SqliteStore::open(&path).unwrap();
        let b = SqliteStore::open(&path).unwrap();
        let ttl = Duration::from_secs(60);
        assert_eq!(a.acquire_lease("s", &owner("A"), ttl).unwrap(), LeaseTaken::Free);
        // Taking one's own lease again is fine; another live owner is refused.
        assert_eq!(a.acquire_lease("s", &owner("A"), ttl).unwrap(), LeaseTaken::Free);
        let err = b.acquire_lease("s", &owner("B"), ttl).unwrap_err();
        let StoreError::SessionBusy { holder, .. } = &err else { panic!("{err}") };
        assert_eq!(holder.pid, std::process::id());
        assert!(err.to_string().contains(&format!("pid {}", std::process::id())), "{err}");
        // Other sessions are independent.
        assert_eq!(b.acquire_lease("t", &owner("B"), ttl).unwrap(), LeaseTaken::Free);
        // Only the holder appends through the lease.
        a.append_leased("s", "A", &[(0, call(0))]).unwrap();
        let err = b.append_leased("s", "B", &[(0, call(1))]).unwrap_err();
        assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
        a.renew_lease("s", "A").unwrap();
        assert!(matches!(b.renew_lease("s", "B").unwrap_err(), StoreError::LeaseLost { .. }));
        // Releasing someone else's lease does nothing; the holder's frees it.
        b.release_lease("s", "B").unwrap();
        assert!(b.acquire_lease("s", &owner("B"), ttl).is_err());
        a.release_lease("s", "A").unwrap();
        assert_eq!(b.acquire_lease("s", &owner("B"), ttl).unwrap(), LeaseTaken::Free);
        assert_eq!(b.load("s").unwrap().len(), 1, "no takeover was recorded");
    }

    #[test]
    fn stale_leases_are_taken_over() {
        let (_dir, path) = temp_db();
        let store = SqliteStore::open(&path).unwrap();
        store.append("s", &block_events(0)).unwrap();
        // A holder whose heartbeat is older than the time to live.
        store.acquire_lease("s", &owner("old"), Duration::from_secs(60)).unwrap();
        raw(&path).execute("UPDATE leases SET heartbeat_ms = heartbeat_ms - 120000", []).unwrap();
        let taken = store.acquire_lease("s", &owner("new"), Duration::from_secs(60)).unwrap();
        let LeaseTaken::TakenOver { holder, reason } = taken else { panic!("{taken:?}") };
        assert_eq!(holder.pid, std::process::id());
        assert!(reason.contains("no heartbeat"), "{reason}");
        // Taking the lease writes nothing (the new holder logs the takeover
        // once it has verified the log).
        assert_eq!(store.load("s").unwrap().len(), 6);
        // The old holder can no longer write.
        let err = store.append_leased("s", "old", &[(1, call(1))]).unwrap_err();
        assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
        // A live lease keeps the session from being deleted.
        let err = store.delete("s").unwrap_err();
        assert!(matches!(err, StoreError::SessionBusy { .. }), "{err}");

        // A holder on this machine and in this PID namespace whose process is
        // gone, with a fresh heartbeat.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        let dead = LeaseOwner { id: "dead".into(), pid: dead_pid, ..LeaseOwner::this_process() };
        store.release_lease("s", "new").unwrap();
        store.acquire_lease("s", &dead, Duration::from_secs(60)).unwrap();
        let taken = store.acquire_lease("s", &owner("next"), Duration::from_secs(60)).unwrap();
        let LeaseTaken::TakenOver { holder, reason } = taken else { panic!("{taken:?}") };
        assert_eq!(holder.pid, dead_pid);
        assert!(reason.contains("process is gone"), "{reason}");
        // The same pid in another PID namespace or on another boot is judged
        // by its heartbeat only.
        let me = LeaseOwner::this_process();
        assert!(me.sees_dead(&dead));
        assert!(!me.sees_dead(&LeaseOwner { pid_ns: "pid:[1]".into(), ..dead.clone() }));
        assert!(!me.sees_dead(&LeaseOwner { boot_id: "another-boot".into(), ..dead.clone() }));
        assert!(!me.sees_dead(&LeaseOwner { host: "elsewhere".into(), ..dead }));
        // Once released, the session can be deleted.
        store.release_lease("s", "next").unwrap();
        store.delete("s").unwrap();
    }

    #[test]
    fn events_without_their_session_record_fail_verification() {
        let (_dir, path) = seeded();
        raw(&path).execute("DELETE FROM sessions WHERE name = 's'", []).unwrap();
        let store = SqliteStore::open(&path).unwrap();
        let report = store.verify("s").unwrap();
        assert!(!report.ok && report.first_bad.as_ref().unwrap().reason.contains("does not list"), "{report:?}");
        let aside = store.quarantine("s").unwrap();
        assert_eq!(store.load(&aside).unwrap().len(), 30);
        assert!(!store.verify(&aside).unwrap().ok, "the evidence keeps failing");
        assert!(store.verify("s").unwrap().ok);
    }

    #[test]
    fn quarantine_keeps_the_evidence_and_frees_the_name() {
        let (_dir, path) = seeded();
        let store = SqliteStore::open(&path).unwrap();
        let aside = store.quarantine("s").unwrap();
        assert!(aside.starts_with("s.tampered-"), "{aside}");
        assert_eq!(store.load(&aside).unwrap().len(), 30);
        assert!(store.verify(&aside).unwrap().ok);
        assert_eq!(store.head("s").unwrap(), None);
        assert_eq!(store.append("s", &[(0, call(0))]).unwrap()[0].seq, 0);
        let long = "n".repeat(MAX_SESSION_NAME);
        store.append(&long, &[(0, call(0))]).unwrap();
        let aside = store.quarantine(&long).unwrap();
        assert!(aside.len() <= MAX_SESSION_NAME && validate_session_name(&aside).is_ok(), "{aside}");
    }
}
