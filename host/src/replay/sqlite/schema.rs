//! The schema of a store (version [`SCHEMA_VERSION`]): creating its tables
//! in a new database, migrating older versions, refusing newer ones.

use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::super::store::{StoreError, SCHEMA_VERSION};
use super::SqliteStore;

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

impl SqliteStore {
    pub(super) fn init(mut conn: Connection) -> Result<Self, StoreError> {
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        // Every statement of an append, a lease check and the group commit's
        // savepoints is kept prepared.
        conn.set_prepared_statement_cache_capacity(64);
        // Plans that do not change with the values bound: otherwise every
        // query on `events` by session is prepared again at each run (a new
        // binding may change its plan), and the plan is the index's anyway.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
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
        // Not part of the log's schema: servers' keys, when each session
        // was last used, and snapshots of contexts (caches of replay, each
        // sealed and named by a chain event; read by nothing that verifies
        // a log).
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS secrets(name TEXT PRIMARY KEY, value BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS activity(session TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS snapshots(
                 session TEXT NOT NULL,
                 digest TEXT NOT NULL,
                 block INTEGER NOT NULL,
                 seal BLOB NOT NULL,
                 data BLOB NOT NULL,
                 created_ms INTEGER NOT NULL,
                 PRIMARY KEY(session, digest));",
        )?;
        tx.commit()?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: None,
            pending: Mutex::default(),
            groups: Default::default(),
            writes: Default::default(),
        })
    }
}
