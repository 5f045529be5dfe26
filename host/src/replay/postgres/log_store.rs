//! The [`LogStore`] operations on PostgreSQL, each run on a connection's
//! thread, the writes in the session's transaction.

use std::time::Duration;

use postgres::types::Type;

use super::super::log::{Event, StoredEvent, LOG_VERSION};
use super::super::sqlite::{check_and_decode, lease_lost, orphans_report, stale};
use super::super::store::{
    now_ms, validate_session_name, Head, LeaseOwner, LeaseTaken, LogStore, SessionInfo, SnapshotInfo, StoreError,
    StoredSnapshot, VerifyReport, MAX_SESSION_NAME,
};
use super::append::{append_in, owned};
use super::lease::{put_lease, read_lease};
use super::rows::{head_of, log_version, read_head, to_u64};
use super::{db, PostgresStore};

impl LogStore for PostgresStore {
    fn shared(&self) -> bool {
        true
    }

    fn append(&self, session: &str, events: &[(u64, Event)]) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        self.forget_head(session);
        let encoded = owned(events)?;
        self.write(session, move |tx, s| append_in(tx, s, encoded))
    }

    fn append_leased(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let encoded = owned(events)?;
        if let Some(stored) = self.append_fast(session, owner_id, &encoded, false)? {
            return Ok(stored);
        }
        let owner = owner_id.to_string();
        let stored = self.write(session, move |tx, s| {
            match read_lease(tx, s)? {
                Some((o, ..)) if o == owner => {}
                other => return Err(lease_lost(s, other)),
            }
            let stored = append_in(tx, s, encoded)?;
            let head = read_head(tx, s)?.unwrap_or(Head { events: 0, hash: String::new() });
            let last = tx
                .query_opt("SELECT block FROM wrepl_events WHERE session = $1 ORDER BY seq DESC LIMIT 1", &[&s])
                .map_err(db)?
                .map(|r| r.get::<_, i64>(0).max(0) as u64);
            Ok((stored, head, last))
        });
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        match stored {
            Ok((stored, head, last)) => {
                heads.insert(session.to_string(), (head.events, head.hash, last.unwrap_or(0)));
                Ok(stored)
            }
            Err(e) => {
                heads.remove(session);
                Err(e)
            }
        }
    }

    fn load(&self, session: &str) -> Result<Vec<StoredEvent>, StoreError> {
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| {
            if log_version(c, &session)?.is_none() {
                return Ok(Vec::new());
            }
            let rows = c
                .query("SELECT seq, block, json, hash FROM wrepl_events WHERE session = $1 ORDER BY seq", &[&session])
                .map_err(db)?;
            rows.into_iter()
                .map(|r| {
                    let seq = to_u64(r.get(0), &session, None, "seq")?;
                    let block = to_u64(r.get(1), &session, Some(seq), "block")?;
                    let json: String = r.get(2);
                    let event = serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
                        session: session.clone(),
                        seq: Some(seq),
                        reason: format!("undecodable event JSON: {e}"),
                    })?;
                    Ok(StoredEvent { block, seq, event, hash: r.get(3) })
                })
                .collect()
        })
    }

    fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.run(|c| {
            let rows = c
                .query(
                    "SELECT s.name, s.created_at_ms, s.log_version, COUNT(e.seq), COUNT(DISTINCT e.block)
                     FROM wrepl_sessions s LEFT JOIN wrepl_events e ON e.session = s.name
                     GROUP BY s.name, s.created_at_ms, s.log_version ORDER BY s.name",
                    &[],
                )
                .map_err(db)?;
            rows.into_iter()
                .map(|r| {
                    let name: String = r.get(0);
                    Ok(SessionInfo {
                        created_at_ms: to_u64(r.get::<_, Option<i64>>(1).unwrap_or(0), &name, None, "created_at_ms")?,
                        log_version: r.get::<_, Option<i32>>(2).unwrap_or(0).max(0) as u32,
                        events: to_u64(r.get(3), &name, None, "event count")?,
                        blocks: to_u64(r.get(4), &name, None, "block count")?,
                        name,
                    })
                })
                .collect()
        })
    }

    fn verify(&self, session: &str) -> Result<VerifyReport, StoreError> {
        Ok(self.verify_rows(session, false)?.0)
    }

    fn load_verified(&self, session: &str) -> Result<(VerifyReport, Vec<StoredEvent>), StoreError> {
        self.verify_rows(session, true)
    }

    fn head(&self, session: &str) -> Result<Option<Head>, StoreError> {
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| {
            let row = c
                .query_typed_opt(
                    "SELECT head_events, head_hash FROM wrepl_sessions WHERE name = $1",
                    &[(&session, Type::TEXT)],
                )
                .map_err(db)?;
            row.map(|r| head_of(&session, r.get(0), r.get(1))).transpose().map(Option::flatten)
        })
    }

    fn acquire_lease_and_head(
        &self,
        session: &str,
        owner: &LeaseOwner,
        ttl: Duration,
    ) -> Result<(LeaseTaken, Option<Head>), StoreError> {
        validate_session_name(session)?;
        // A free session (the usual case) in one round trip: the lease
        // row is ours if we make it, and the head is read after.
        let (s, o) = (session.to_string(), owner.clone());
        let (taken, head) = self.run(move |c| {
            let r = c
                .query_typed_one(
                    "SELECT taken, h_events, h_hash FROM wrepl_take_lease($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[
                        (&s, Type::TEXT),
                        (&o.id, Type::TEXT),
                        (&i64::from(o.pid), Type::INT8),
                        (&o.host, Type::TEXT),
                        (&o.boot_id, Type::TEXT),
                        (&(i64::try_from(o.start_ticks).unwrap_or(0)), Type::INT8),
                        (&o.pid_ns, Type::TEXT),
                        (&(now_ms() as i64), Type::INT8),
                    ],
                )
                .map_err(db)?;
            Ok((r.get::<_, bool>(0), head_of(&s, r.get(1), r.get(2))?))
        })?;
        if taken {
            return Ok((LeaseTaken::Free, head));
        }
        let taken = self.acquire_lease(session, owner, ttl)?;
        Ok((taken, self.head(session)?))
    }

    fn append_and_release(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Option<Head>, StoreError> {
        validate_session_name(session)?;
        let encoded = owned(events)?;
        // Where this writer knows the head: the events and the lease in
        // one round trip.
        let written = match self.append_fast(session, owner_id, &encoded, true) {
            Ok(Some(_)) => {
                let known = self.heads.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned();
                if let Some((events, hash, _)) = known {
                    return Ok(Some(Head { events, hash }));
                }
                return self.head(session);
            }
            Ok(None) if encoded.is_empty() => Ok(()),
            Ok(None) => self.append_leased(session, owner_id, events).map(drop),
            Err(e) => Err(e),
        };
        let (s, o) = (session.to_string(), owner_id.to_string());
        let released = self.run(move |c| {
            let r = c
                .query_typed_one(
                    "SELECT h_events, h_hash FROM wrepl_release_lease($1, $2)",
                    &[(&s, Type::TEXT), (&o, Type::TEXT)],
                )
                .map_err(db)?;
            head_of(&s, r.get(0), r.get(1))
        });
        written?;
        released
    }

    fn acquire_lease(&self, session: &str, owner: &LeaseOwner, ttl: Duration) -> Result<LeaseTaken, StoreError> {
        validate_session_name(session)?;
        let owner = owner.clone();
        // A free session (the usual case: leases are given back after
        // every call) in one round trip: the row is ours if we make it.
        let (s, o) = (session.to_string(), owner.clone());
        let inserted = self.run(move |c| put_lease(c, &s, &o, false))?;
        if inserted == 1 {
            return Ok(LeaseTaken::Free);
        }
        self.write(session, move |tx, s| {
            let taken = match read_lease(tx, s)? {
                None => LeaseTaken::Free,
                Some((id, ..)) if id == owner.id => LeaseTaken::Free,
                Some((_, holder, recorded)) => match stale(&owner, &holder, &recorded, ttl) {
                    None => return Err(StoreError::SessionBusy { session: s.to_string(), holder }),
                    Some(reason) => LeaseTaken::TakenOver { holder, reason: reason.to_string() },
                },
            };
            put_lease(tx, s, &owner, true)?;
            Ok(taken)
        })
    }

    fn renew_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        let (s, owner_id) = (session.to_string(), owner_id.to_string());
        self.run(move |c| {
            let renewed = c
                .query_typed(
                    "UPDATE wrepl_leases SET heartbeat_ms = $1 WHERE session = $2 AND owner = $3 RETURNING 1",
                    &[(&(now_ms() as i64), Type::INT8), (&s, Type::TEXT), (&owner_id, Type::TEXT)],
                )
                .map_err(db)?;
            if renewed.len() == 1 {
                return Ok(());
            }
            Err(lease_lost(&s, read_lease(c, &s)?))
        })
    }

    fn release_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        let (s, owner_id) = (session.to_string(), owner_id.to_string());
        self.run(move |c| {
            c.query_typed(
                "DELETE FROM wrepl_leases WHERE session = $1 AND owner = $2",
                &[(&s, Type::TEXT), (&owner_id, Type::TEXT)],
            )
            .map_err(db)?;
            Ok(())
        })
    }

    fn quarantine(&self, session: &str) -> Result<String, StoreError> {
        validate_session_name(session)?;
        self.forget_head(session);
        self.write(session, move |tx, s| {
            let mut n = 0u32;
            let target = loop {
                let suffix =
                    if n == 0 { format!(".tampered-{}", now_ms()) } else { format!(".tampered-{}-{n}", now_ms()) };
                let keep = s.len().min(MAX_SESSION_NAME.saturating_sub(suffix.len()));
                let candidate = format!("{}{suffix}", &s[..keep]);
                let taken: i64 = tx
                    .query_one(
                        "SELECT (SELECT COUNT(*) FROM wrepl_sessions WHERE name = $1) + (SELECT COUNT(*) FROM wrepl_events WHERE session = $1)",
                        &[&candidate],
                    )
                    .map_err(db)?
                    .get(0);
                if taken == 0 {
                    break candidate;
                }
                n += 1;
            };
            tx.execute("UPDATE wrepl_events SET session = $1 WHERE session = $2", &[&target, &s]).map_err(db)?;
            // Snapshots are sealed to the name and never loaded for a log set aside.
            tx.execute("DELETE FROM wrepl_snapshots WHERE session = $1", &[&s]).map_err(db)?;
            let moved =
                tx.execute("UPDATE wrepl_sessions SET name = $1 WHERE name = $2", &[&target, &s]).map_err(db)?;
            if moved == 0 {
                tx.execute(
                    "INSERT INTO wrepl_sessions(name, created_at_ms, log_version) VALUES ($1, $2, $3)",
                    &[&target, &(now_ms() as i64), &(LOG_VERSION as i32)],
                )
                .map_err(db)?;
            }
            Ok(target)
        })
    }

    fn delete(&self, session: &str) -> Result<(), StoreError> {
        validate_session_name(session)?;
        self.forget_head(session);
        self.write(session, move |tx, s| {
            if let Some((_, holder, recorded)) = read_lease(tx, s)? {
                let me = LeaseOwner::this_process();
                if stale(&me, &holder, &recorded, crate::replay::recorder::LEASE_TTL).is_none() {
                    return Err(StoreError::SessionBusy { session: s.to_string(), holder });
                }
                tx.execute("DELETE FROM wrepl_leases WHERE session = $1", &[&s]).map_err(db)?;
            }
            tx.execute("DELETE FROM wrepl_events WHERE session = $1", &[&s]).map_err(db)?;
            tx.execute("DELETE FROM wrepl_sessions WHERE name = $1", &[&s]).map_err(db)?;
            tx.execute("DELETE FROM wrepl_activity WHERE session = $1", &[&s]).map_err(db)?;
            tx.execute("DELETE FROM wrepl_snapshots WHERE session = $1", &[&s]).map_err(db)?;
            Ok(())
        })
    }

    fn put_snapshot(&self, session: &str, digest: &str, snap: StoredSnapshot) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let (session, digest) = (session.to_string(), digest.to_string());
        self.run(move |c| {
            let block = i64::try_from(snap.block).unwrap_or(i64::MAX);
            let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
            c.execute(
                "INSERT INTO wrepl_snapshots(session, digest, block, seal, data, created_ms) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (session, digest) DO UPDATE SET block = EXCLUDED.block, seal = EXCLUDED.seal,
                 data = EXCLUDED.data, created_ms = EXCLUDED.created_ms",
                &[&session, &digest, &block, &snap.seal, &snap.data, &now],
            )
            .map_err(db)?;
            Ok(())
        })
    }

    fn get_snapshot(&self, session: &str, digest: &str) -> Result<Option<StoredSnapshot>, StoreError> {
        let (session, digest) = (session.to_string(), digest.to_string());
        self.run(move |c| {
            let row = c
                .query_opt(
                    "SELECT block, seal, data FROM wrepl_snapshots WHERE session = $1 AND digest = $2",
                    &[&session, &digest],
                )
                .map_err(db)?;
            Ok(row.map(|r| StoredSnapshot { block: r.get::<_, i64>(0).max(0) as u64, seal: r.get(1), data: r.get(2) }))
        })
    }

    fn snapshots(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        let session = session.to_string();
        self.run(move |c| {
            let rows = c
                .query(
                    "SELECT digest, block, octet_length(data)::BIGINT FROM wrepl_snapshots WHERE session = $1
                     ORDER BY block, created_ms",
                    &[&session],
                )
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|r| SnapshotInfo {
                    digest: r.get(0),
                    block: r.get::<_, i64>(1).max(0) as u64,
                    bytes: r.get::<_, i64>(2).max(0) as u64,
                })
                .collect())
        })
    }

    fn delete_snapshots(&self, session: &str, digests: &[String]) -> Result<u64, StoreError> {
        let (session, digests) = (session.to_string(), digests.to_vec());
        self.run(move |c| {
            c.execute("DELETE FROM wrepl_snapshots WHERE session = $1 AND digest = ANY($2)", &[&session, &digests])
                .map_err(db)
        })
    }

    fn snapshot_sessions(&self) -> Result<Vec<String>, StoreError> {
        self.run(move |c| {
            let rows = c.query("SELECT DISTINCT session FROM wrepl_snapshots ORDER BY session", &[]).map_err(db)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("no randomness for a new key: {e}"))))?;
        let name = name.to_string();
        self.run(move |c| {
            c.execute(
                "INSERT INTO wrepl_secrets(name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[&name, &&fresh[..]],
            )
            .map_err(db)?;
            let value: Vec<u8> =
                c.query_one("SELECT value FROM wrepl_secrets WHERE name = $1", &[&name]).map_err(db)?.get(0);
            super::super::store::checked_secret(&name, value)
        })
    }

    fn touch(&self, session: &str, at_ms: u64) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| {
            c.query_typed(
                "INSERT INTO wrepl_activity(session, at_ms) VALUES ($1, $2)
                 ON CONFLICT (session) DO UPDATE SET at_ms = GREATEST(wrepl_activity.at_ms, EXCLUDED.at_ms)",
                &[(&session, Type::TEXT), (&(at_ms as i64), Type::INT8)],
            )
            .map_err(db)?;
            Ok(())
        })
    }

    fn touched(&self, session: &str) -> Result<Option<u64>, StoreError> {
        let session = session.to_string();
        self.run(move |c| {
            let row = c
                .query_typed_opt("SELECT at_ms FROM wrepl_activity WHERE session = $1", &[(&session, Type::TEXT)])
                .map_err(db)?;
            Ok(row.map(|r| r.get::<_, i64>(0).max(0) as u64))
        })
    }
}

impl PostgresStore {
    /// Verify `session`'s rows (and, with `keep`, decode them once for the
    /// caller): [`LogStore::verify`] and [`LogStore::load_verified`].
    fn verify_rows(&self, session: &str, keep: bool) -> Result<(VerifyReport, Vec<StoredEvent>), StoreError> {
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| {
            let mut tx = c.build_transaction().read_only(true).start().map_err(db)?;
            if log_version(&mut tx, &session)?.is_none() {
                let orphans: i64 = tx
                    .query_one("SELECT COUNT(*) FROM wrepl_events WHERE session = $1", &[&session])
                    .map_err(db)?
                    .get(0);
                return Ok((orphans_report(orphans), Vec::new()));
            }
            let head = read_head(&mut tx, &session)?.unwrap_or(Head { events: 0, hash: String::new() });
            let rows = tx
                .query("SELECT seq, block, json, hash FROM wrepl_events WHERE session = $1 ORDER BY seq", &[&session])
                .map_err(db)?;
            let rows: Vec<(i64, i64, String, String)> =
                rows.into_iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect();
            Ok(check_and_decode(rows.into_iter(), head, keep))
        })
    }
}
