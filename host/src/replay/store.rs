//! Durable storage for replay logs: one append-only, hash-chained stream of
//! [`Event`]s per named session, kept in a SQLite database.
//!
//! # Hash chain
//!
//! Every stored event carries
//!
//! ```text
//! hash = hex(sha256(prev_hash || block || ":" || seq || ":" || canonical_json(event)))
//! ```
//!
//! where `prev_hash` is the previous event's hash as its 64 lowercase hex
//! characters (the empty string for `seq` 0), `block` and `seq` are written in
//! decimal ASCII, and `canonical_json(event)` is `serde_json::to_string(&event)`
//! (compact, fields in declaration order with `kind` first). That exact text is
//! what the `events.json` column holds, so [`LogStore::verify`] recomputes the
//! chain from the stored text without re-encoding.
//!
//! # Schema (version [`SCHEMA_VERSION`])
//!
//! ```text
//! meta(key TEXT PRIMARY KEY, value TEXT)                 -- schema_version
//! sessions(name TEXT PRIMARY KEY, created_at_ms INTEGER, log_version INTEGER)
//! events(session TEXT, seq INTEGER, block INTEGER, json TEXT, hash TEXT,
//!        PRIMARY KEY(session, seq))
//! ```
//!
//! The database runs in WAL mode with `synchronous=FULL` (a committed append
//! is on disk when [`LogStore::append`] returns) and a 5 s busy timeout, so
//! several processes can share one file; appends take the write lock up front
//! (`BEGIN IMMEDIATE`), which keeps each session's `seq` gapless.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use sha2::{Digest, Sha256};

use super::log::{Event, StoredEvent, LOG_VERSION};

/// Version of the database layout this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Longest accepted session name, in characters.
pub const MAX_SESSION_NAME: usize = 128;

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Errors of the log store.
#[derive(Debug, thiserror::Error)]
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

/// The canonical JSON text of an event: `serde_json::to_string(event)`.
pub fn canonical_json(event: &Event) -> Result<String, StoreError> {
    Ok(serde_json::to_string(event)?)
}

/// One link of the hash chain (see the module documentation):
/// `hex(sha256(prev_hash || block || ":" || seq || ":" || json))`.
pub fn link_hash(prev_hash: &str, block: u64, seq: u64, json: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev_hash.as_bytes());
    hasher.update(block.to_string().as_bytes());
    hasher.update(b":");
    hasher.update(seq.to_string().as_bytes());
    hasher.update(b":");
    hasher.update(json.as_bytes());
    to_hex(&hasher.finalize())
}

/// Fingerprint of a tool's input schema: the first 16 hex characters of the
/// SHA-256 of `serde_json::to_string(schema)`.
pub fn fingerprint(schema: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    let text = serde_json::to_string(schema).unwrap_or_default();
    let mut hex = to_hex(&Sha256::digest(text.as_bytes()));
    hex.truncate(16);
    hex
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

fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

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
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, creating its parent
    /// directory. Refuses databases with a newer schema version.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let conn = Connection::open(path)?;
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
        Self::init(conn)
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
                tx.execute_batch(
                    "CREATE TABLE IF NOT EXISTS sessions(
                         name TEXT PRIMARY KEY,
                         created_at_ms INTEGER,
                         log_version INTEGER);
                     CREATE TABLE IF NOT EXISTS events(
                         session TEXT,
                         seq INTEGER,
                         block INTEGER,
                         json TEXT,
                         hash TEXT,
                         PRIMARY KEY(session, seq));",
                )?;
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
                if version != SCHEMA_VERSION {
                    return Err(StoreError::VersionMismatch { found: version, supported: SCHEMA_VERSION });
                }
            }
        }
        tx.commit()?;
        Ok(Self { conn: Mutex::new(conn) })
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

impl LogStore for SqliteStore {
    fn append(&self, session: &str, events: &[(u64, Event)]) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        // Encode before taking the write lock.
        let encoded = events
            .iter()
            .map(|(block, event)| Ok((*block, canonical_json(event)?, event)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if session_log_version(&tx, session)?.is_none() {
            tx.execute(
                "INSERT INTO sessions(name, created_at_ms, log_version) VALUES (?1, ?2, ?3)",
                params![session, i64::try_from(now_ms()).unwrap_or(i64::MAX), i64::from(LOG_VERSION)],
            )?;
        }
        let last: Option<(i64, i64, Option<String>)> = tx
            .query_row(
                "SELECT seq, block, hash FROM events WHERE session = ?1 ORDER BY seq DESC LIMIT 1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
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
        tx.commit()?;
        Ok(stored)
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
                return Ok(VerifyReport { events: 0, ok: true, first_bad: None });
            }
            load_rows(&tx, session)?
        };
        let events = rows.len() as u64;
        let bad =
            |seq: u64, reason: String| Ok(VerifyReport { events, ok: false, first_bad: Some(BadLink { seq, reason }) });
        let mut prev_hash = String::new();
        let mut prev_block: Option<u64> = None;
        for (expected, row) in (0u64..).zip(rows) {
            if row.seq != expected as i64 {
                return bad(expected, format!("sequence gap: expected seq {expected}, found {}", row.seq));
            }
            let Ok(block) = u64::try_from(row.block) else {
                return bad(expected, format!("negative block number {}", row.block));
            };
            if let Some(prev) = prev_block.filter(|prev| block < *prev) {
                return bad(expected, format!("block number goes backwards ({prev} -> {block})"));
            }
            if let Err(e) = serde_json::from_str::<Event>(&row.json) {
                return bad(expected, format!("undecodable event JSON: {e}"));
            }
            let computed = link_hash(&prev_hash, block, expected, &row.json);
            if computed != row.hash {
                return bad(expected, format!("hash mismatch: stored {}, computed {computed}", row.hash));
            }
            prev_hash = row.hash;
            prev_block = Some(block);
        }
        Ok(VerifyReport { events, ok: true, first_bad: None })
    }

    fn delete(&self, session: &str) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM events WHERE session = ?1", [session])?;
        tx.execute("DELETE FROM sessions WHERE name = ?1", [session])?;
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        raw(&path).execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'", []).unwrap();
        let err = SqliteStore::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::VersionMismatch { found: 2, supported: 1 }), "{err}");
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
    fn fingerprint_is_short_and_stable() {
        let a = fingerprint(&serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}}));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, fingerprint(&serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}})));
        assert_ne!(a, fingerprint(&serde_json::json!({"type": "object"})));
        // sha256("null")
        assert_eq!(fingerprint(&serde_json::Value::Null), "74234e98afe7498f");
    }

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
