//! The SQLite backend of [`LogStore`]: the embedded default store.
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

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::chain::{canonical_json, link_hash};
use super::log::{Event, StoredEvent, LOG_VERSION};
use super::store::{validate_session_name, BadLink, LogStore, SessionInfo, StoreError, VerifyReport, SCHEMA_VERSION};

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// The database file (absolute), `None` in memory.
    path: Option<std::path::PathBuf>,
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

impl LogStore for SqliteStore {
    fn file_path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

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
}
