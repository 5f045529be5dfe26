//! The [`LogStore`] operations on SQLite, each one transaction over the
//! connection.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::super::log::{Event, StoredEvent, LOG_VERSION};
use super::super::store::{
    now_ms, validate_session_name, GroupCommits, Head, LeaseOwner, LeaseTaken, LogStore, SessionInfo, SnapshotInfo,
    StoreError, StoredSnapshot, VerifyReport, MAX_SESSION_NAME,
};
use super::append::{append_in, encode_owned};
use super::lease::{check_held, lease_lost, read_lease, stale};
use super::rows::{load_rows, read_head, session_log_version, to_u32, to_u64};
use super::verify::{check_and_decode, orphans_report};
use super::{in_savepoint, SqliteStore, Written};

impl LogStore for SqliteStore {
    fn file_path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn group_commits(&self) -> Option<GroupCommits> {
        use std::sync::atomic::Ordering::Relaxed;
        Some(GroupCommits { writes: self.writes.load(Relaxed), transactions: self.groups.load(Relaxed) })
    }

    fn append(&self, session: &str, events: &[(u64, Event)]) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let encoded = encode_owned(events)?;
        let session = session.to_string();
        self.group_write(Box::new(move |tx| append_in(tx, &session, encoded).map(Written::Stored)))
            .map(Written::into_stored)
    }

    fn append_leased(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let encoded = encode_owned(events)?;
        let (session, owner_id) = (session.to_string(), owner_id.to_string());
        self.group_write(Box::new(move |tx| {
            check_held(tx, &session, &owner_id)?;
            append_in(tx, &session, encoded).map(Written::Stored)
        }))
        .map(Written::into_stored)
    }

    /// The events, the lease given back and the head read, in one
    /// transaction (one commit, grouped with other writers'). The lease is
    /// given back even when the events cannot be written.
    fn append_and_release(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Option<Head>, StoreError> {
        validate_session_name(session)?;
        let encoded = encode_owned(events)?;
        let (session, owner_id) = (session.to_string(), owner_id.to_string());
        let written = self.group_write(Box::new(move |tx| {
            let written = if encoded.is_empty() {
                Ok(())
            } else {
                // In a savepoint of its own: a failed append leaves nothing
                // behind, and the release below still happens.
                in_savepoint(tx, "appended", || {
                    check_held(tx, &session, &owner_id)?;
                    append_in(tx, &session, encoded).map(drop)
                })?
            };
            // A failed append rolled back only its own savepoint's changes
            // (see `group_write`); the lease goes back either way, so an
            // error here is reported after the release is committed.
            tx.execute("DELETE FROM leases WHERE session = ?1 AND owner = ?2", params![session, owner_id])?;
            Ok(Written::Released(written.err(), read_head(tx, &session)?))
        }))?;
        match written {
            Written::Released(Some(e), _) => Err(e),
            Written::Released(None, head) => Ok(head),
            Written::Stored(_) => Ok(None),
        }
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
        // Snapshots are sealed to the name and never loaded for a log set aside.
        tx.execute("DELETE FROM snapshots WHERE session = ?1", [session])?;
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
        Ok(self.verify_rows(session, false)?.0)
    }

    fn load_verified(&self, session: &str) -> Result<(VerifyReport, Vec<StoredEvent>), StoreError> {
        self.verify_rows(session, true)
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
        tx.execute("DELETE FROM snapshots WHERE session = ?1", [session])?;
        tx.commit()?;
        Ok(())
    }

    fn put_snapshot(&self, session: &str, digest: &str, snap: StoredSnapshot) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let block = i64::try_from(snap.block).unwrap_or(i64::MAX);
        let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        self.lock()
            .prepare_cached(
                "INSERT OR REPLACE INTO snapshots(session, digest, block, seal, data, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![session, digest, block, &snap.seal, &snap.data, now])?;
        Ok(())
    }

    fn get_snapshot(&self, session: &str, digest: &str) -> Result<Option<StoredSnapshot>, StoreError> {
        let conn = self.lock();
        let row = conn
            .query_row(
                "SELECT block, seal, data FROM snapshots WHERE session = ?1 AND digest = ?2",
                [session, digest],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?, r.get::<_, Vec<u8>>(2)?)),
            )
            .optional()?;
        Ok(row.map(|(block, seal, data)| StoredSnapshot { block: block.max(0) as u64, seal, data }))
    }

    fn snapshots(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT digest, block, length(data) FROM snapshots WHERE session = ?1 ORDER BY block, created_ms",
        )?;
        let rows = stmt.query_map([session], |r| {
            Ok(SnapshotInfo {
                digest: r.get(0)?,
                block: r.get::<_, i64>(1)?.max(0) as u64,
                bytes: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    fn delete_snapshots(&self, session: &str, digests: &[String]) -> Result<u64, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut n = 0;
        for d in digests {
            n += tx.execute("DELETE FROM snapshots WHERE session = ?1 AND digest = ?2", [session, d])? as u64;
        }
        tx.commit()?;
        Ok(n)
    }

    fn snapshot_sessions(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT DISTINCT session FROM snapshots ORDER BY session")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
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
        super::super::store::checked_secret(name, value)
    }

    fn touch(&self, session: &str, at_ms: u64) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let conn = self.lock();
        conn.prepare_cached(
            "INSERT INTO activity(session, at_ms) VALUES (?1, ?2) \
             ON CONFLICT(session) DO UPDATE SET at_ms = MAX(at_ms, excluded.at_ms)",
        )?
        .execute(params![session, at_ms as i64])?;
        Ok(())
    }

    fn touched(&self, session: &str) -> Result<Option<u64>, StoreError> {
        let conn = self.lock();
        let at: Option<i64> =
            conn.query_row("SELECT at_ms FROM activity WHERE session = ?1", [session], |r| r.get(0)).optional()?;
        Ok(at.map(|v| v.max(0) as u64))
    }
}

impl SqliteStore {
    /// Verify `session`'s rows (and, with `keep`, decode them once for the
    /// caller): [`LogStore::verify`] and [`LogStore::load_verified`].
    fn verify_rows(&self, session: &str, keep: bool) -> Result<(VerifyReport, Vec<StoredEvent>), StoreError> {
        validate_session_name(session)?;
        let (rows, head) = {
            let mut conn = self.lock();
            let tx = conn.transaction()?;
            if session_log_version(&tx, session)?.is_none() {
                // Events whose session row was removed: the log was altered.
                let orphans: i64 =
                    tx.query_row("SELECT COUNT(*) FROM events WHERE session = ?1", [session], |r| r.get(0))?;
                return Ok((orphans_report(orphans), Vec::new()));
            }
            let head = read_head(&tx, session)?.unwrap_or(Head { events: 0, hash: String::new() });
            (load_rows(&tx, session)?, head)
        };
        Ok(check_and_decode(rows.into_iter().map(|r| (r.seq, r.block, r.json, r.hash)), head, keep))
    }
}
