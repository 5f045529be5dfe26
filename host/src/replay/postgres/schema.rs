//! The schema of a store (tables and the functions that make appends and
//! leases one round trip), created or checked at open under a global
//! advisory lock.

use postgres::Client;

use super::super::store::{StoreError, SCHEMA_VERSION};
use super::db;

/// Advisory-lock key of schema creation and migration.
const SCHEMA_LOCK: i64 = 0x7772_6570_6c00_0001;

const CREATE: &str = "
    CREATE TABLE IF NOT EXISTS wrepl_meta(key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE IF NOT EXISTS wrepl_sessions(
        name TEXT PRIMARY KEY,
        created_at_ms BIGINT,
        log_version INTEGER,
        head_events BIGINT NOT NULL DEFAULT 0,
        head_hash TEXT NOT NULL DEFAULT '');
    CREATE TABLE IF NOT EXISTS wrepl_events(
        session TEXT NOT NULL,
        seq BIGINT NOT NULL,
        block BIGINT NOT NULL,
        json TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY(session, seq));
    CREATE TABLE IF NOT EXISTS wrepl_leases(
        session TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        pid BIGINT,
        host TEXT,
        boot_id TEXT,
        start_ticks BIGINT,
        pid_ns TEXT,
        since_ms BIGINT,
        heartbeat_ms BIGINT);
    CREATE TABLE IF NOT EXISTS wrepl_secrets(name TEXT PRIMARY KEY, value BYTEA NOT NULL);
    CREATE TABLE IF NOT EXISTS wrepl_activity(session TEXT PRIMARY KEY, at_ms BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS wrepl_snapshots(
        session TEXT NOT NULL,
        digest TEXT NOT NULL,
        block BIGINT NOT NULL,
        seal BYTEA NOT NULL,
        data BYTEA NOT NULL,
        created_ms BIGINT NOT NULL,
        PRIMARY KEY(session, digest));
    CREATE OR REPLACE FUNCTION wrepl_append_leased(
        p_session TEXT, p_owner TEXT, p_head_events BIGINT, p_head_hash TEXT,
        p_seqs BIGINT[], p_blocks BIGINT[], p_jsons TEXT[], p_hashes TEXT[], p_release BOOLEAN) RETURNS TEXT AS $$
    DECLARE
        cur_owner TEXT;
        h_events BIGINT;
        h_hash TEXT;
        last_seq BIGINT;
        last_hash TEXT;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(p_session, 7));
        SELECT owner INTO cur_owner FROM wrepl_leases WHERE session = p_session;
        IF cur_owner IS DISTINCT FROM p_owner THEN RETURN 'lease'; END IF;
        SELECT head_events, head_hash INTO h_events, h_hash FROM wrepl_sessions WHERE name = p_session;
        IF NOT FOUND OR h_events <> p_head_events OR h_hash <> p_head_hash THEN RETURN 'head'; END IF;
        SELECT seq, hash INTO last_seq, last_hash FROM wrepl_events WHERE session = p_session ORDER BY seq DESC LIMIT 1;
        IF (h_events = 0 AND FOUND) OR (h_events > 0 AND (last_seq IS DISTINCT FROM h_events - 1
            OR last_hash IS DISTINCT FROM h_hash)) THEN
            RETURN 'head';
        END IF;
        IF cardinality(p_seqs) > 0 THEN
            INSERT INTO wrepl_events(session, seq, block, json, hash)
                SELECT p_session, e.seq, e.block, e.json, e.hash
                FROM unnest(p_seqs, p_blocks, p_jsons, p_hashes) AS e(seq, block, json, hash);
            UPDATE wrepl_sessions SET head_events = p_head_events + cardinality(p_seqs),
                head_hash = p_hashes[cardinality(p_hashes)] WHERE name = p_session;
        END IF;
        IF p_release THEN
            DELETE FROM wrepl_leases WHERE session = p_session AND owner = p_owner;
        END IF;
        RETURN 'ok';
    END $$ LANGUAGE plpgsql;
    CREATE OR REPLACE FUNCTION wrepl_take_lease(
        p_session TEXT, p_owner TEXT, p_pid BIGINT, p_host TEXT, p_boot_id TEXT, p_start_ticks BIGINT,
        p_pid_ns TEXT, p_now BIGINT, OUT taken BOOLEAN, OUT h_events BIGINT, OUT h_hash TEXT) AS $$
    BEGIN
        INSERT INTO wrepl_leases(session, owner, pid, host, boot_id, start_ticks, pid_ns, since_ms, heartbeat_ms)
            VALUES (p_session, p_owner, p_pid, p_host, p_boot_id, p_start_ticks, p_pid_ns, p_now, p_now)
            ON CONFLICT (session) DO NOTHING;
        taken := FOUND;
        -- A statement of its own, so its snapshot sees whatever the
        -- lease's previous holder committed before giving it back.
        SELECT s.head_events, s.head_hash INTO h_events, h_hash FROM wrepl_sessions s WHERE s.name = p_session;
    END $$ LANGUAGE plpgsql;
    CREATE OR REPLACE FUNCTION wrepl_release_lease(p_session TEXT, p_owner TEXT,
        OUT h_events BIGINT, OUT h_hash TEXT) AS $$
    BEGIN
        DELETE FROM wrepl_leases WHERE session = p_session AND owner = p_owner;
        SELECT s.head_events, s.head_hash INTO h_events, h_hash FROM wrepl_sessions s WHERE s.name = p_session;
    END $$ LANGUAGE plpgsql;";

/// Create the schema, or check the version of the one there, under the
/// global advisory lock.
pub(super) fn setup(client: &mut Client) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).map_err(db)?;
    tx.batch_execute(CREATE).map_err(db)?;
    let found: Option<String> = tx
        .query_opt("SELECT value FROM wrepl_meta WHERE key = 'schema_version'", &[])
        .map_err(db)?
        .map(|r| r.get::<_, Option<String>>(0).unwrap_or_default());
    match found {
        None => {
            tx.execute(
                "INSERT INTO wrepl_meta(key, value) VALUES ('schema_version', $1)",
                &[&SCHEMA_VERSION.to_string()],
            )
            .map_err(db)?;
        }
        Some(v) => {
            let version: u32 = v.trim().parse().map_err(|_| StoreError::Corrupt {
                session: String::new(),
                seq: None,
                reason: format!("unreadable schema_version {v:?}"),
            })?;
            if version != SCHEMA_VERSION {
                return Err(StoreError::VersionMismatch { found: version, supported: SCHEMA_VERSION });
            }
        }
    }
    tx.commit().map_err(db)
}
