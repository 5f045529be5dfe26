//! The PostgreSQL backend of [`LogStore`], for several servers sharing
//! sessions: the same schema version, hash chain, head and leases as
//! SQLite (the chain and its checks are shared code).
//!
//! The store runs its own thread with one connection (the synchronous
//! `postgres` client), so it can be called from anywhere, a tokio worker
//! included, exactly like the SQLite store. Every write is one transaction
//! that first takes the session's transaction-level advisory lock, so that
//! writers of one session on different servers are serialized; the schema
//! is created (or checked) at open under a global advisory lock, so that
//! servers starting together do not race.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use postgres::{Client, NoTls, Transaction};

use super::chain::link_hash;
use super::log::{Event, StoredEvent, LOG_VERSION};
use super::sqlite::{check_chain, encode, lease_lost, newest_matches_head, orphans_report, stale};
use super::store::{
    now_ms, validate_session_name, Head, LeaseHolder, LeaseOwner, LeaseTaken, LogStore, SessionInfo, StoreError,
    VerifyReport, MAX_SESSION_NAME, SCHEMA_VERSION,
};

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
    CREATE OR REPLACE FUNCTION wrepl_append_leased(
        p_session TEXT, p_owner TEXT, p_head_events BIGINT, p_head_hash TEXT,
        p_seqs BIGINT[], p_blocks BIGINT[], p_jsons TEXT[], p_hashes TEXT[]) RETURNS TEXT AS $$
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
        INSERT INTO wrepl_events(session, seq, block, json, hash)
            SELECT p_session, e.seq, e.block, e.json, e.hash FROM unnest(p_seqs, p_blocks, p_jsons, p_hashes) AS e(seq, block, json, hash);
        UPDATE wrepl_sessions SET head_events = p_head_events + cardinality(p_seqs),
            head_hash = p_hashes[cardinality(p_hashes)] WHERE name = p_session;
        RETURN 'ok';
    END $$ LANGUAGE plpgsql;";

type Job = Box<dyn FnOnce(&mut Client) + Send>;

/// [`LogStore`] on a PostgreSQL database.
#[derive(Debug)]
pub struct PostgresStore {
    jobs: Mutex<mpsc::Sender<Job>>,
    /// Per session this writer appended to: the head it left (event count,
    /// hash) and the newest block, so that the next leased append is one
    /// round trip (the database checks that nothing moved).
    heads: Mutex<std::collections::HashMap<String, (u64, String, u64)>>,
    /// The URL without its password, for messages.
    shown: String,
}

/// The URL with any password replaced by `***`.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_string() };
    let rest = &url[scheme_end + 3..];
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..auth_end].rfind('@') {
        Some(at) => match rest[..at].find(':') {
            Some(colon) => format!("{}://{}:***{}", &url[..scheme_end], &rest[..colon], &rest[at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn db(e: postgres::Error) -> StoreError {
    StoreError::Postgres(e.to_string())
}

impl PostgresStore {
    /// Connect to `url` (`postgres://…` or `postgresql://…`; a unix socket
    /// with `?host=/dir`) and create or check the schema. A URL that asks
    /// for TLS (`sslmode=require`, `verify-ca`, `verify-full`) is refused:
    /// this build connects without TLS, so use a unix socket or a loopback
    /// or otherwise protected network.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let shown = redact(url);
        let lower = url.to_ascii_lowercase();
        if ["sslmode=require", "sslmode=verify-ca", "sslmode=verify-full"].iter().any(|m| lower.contains(m)) {
            return Err(StoreError::Postgres(format!(
                "{shown}: this build of wrepl connects to PostgreSQL without TLS; use a unix socket (?host=/dir) or \
                 a protected network, and sslmode=disable or prefer"
            )));
        }
        let config: postgres::Config =
            url.parse().map_err(|e: postgres::Error| StoreError::Postgres(format!("{shown}: {e}")))?;
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), StoreError>>();
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
        let thread_shown = shown.clone();
        std::thread::Builder::new()
            .name("wrepl-postgres".into())
            .spawn(move || {
                let mut client = match config.connect(NoTls) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(StoreError::Postgres(format!("{thread_shown}: {e}"))));
                        return;
                    }
                };
                if let Err(e) = setup(&mut client) {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
                let _ = ready_tx.send(Ok(()));
                while let Ok(job) = jobs_rx.recv() {
                    // A connection the server closed (a restart, a failover)
                    // is opened again before the next job; if that fails,
                    // the job fails on the closed one, with its error.
                    if client.is_closed() {
                        if let Ok(c) = config.connect(NoTls) {
                            client = c;
                        }
                    }
                    job(&mut client);
                }
            })
            .map_err(StoreError::Io)?;
        ready_rx.recv().map_err(|_| StoreError::Postgres(format!("{shown}: the connection thread ended")))??;
        Ok(Self { jobs: Mutex::new(jobs_tx), heads: Mutex::new(Default::default()), shown })
    }

    /// Run `f` on the connection's thread and wait for its answer.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |c| {
            let _ = tx.send(f(c));
        });
        let sent = self.jobs.lock().unwrap_or_else(|p| p.into_inner()).send(job);
        if sent.is_err() {
            return Err(StoreError::Postgres(format!("{}: the connection thread ended", self.shown)));
        }
        rx.recv().map_err(|_| StoreError::Postgres(format!("{}: the connection thread ended", self.shown)))?
    }

    /// Run `f` in a transaction holding `session`'s advisory lock.
    fn write<T: Send + 'static>(
        &self,
        session: &str,
        f: impl FnOnce(&mut Transaction<'_>, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let session = session.to_string();
        self.run(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", &[&session]).map_err(db)?;
            let out = f(&mut tx, &session)?;
            tx.commit().map_err(db)?;
            Ok(out)
        })
    }
}

impl PostgresStore {
    fn forget_head(&self, session: &str) {
        self.heads.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
    }

    /// A leased append in one round trip, from the head this writer left:
    /// `None` when it cannot be (nothing known, or the database says the
    /// lease or the head moved): then the full transaction decides.
    fn append_fast(
        &self,
        session: &str,
        owner_id: &str,
        encoded: &[(u64, String, Event)],
    ) -> Result<Option<Vec<StoredEvent>>, StoreError> {
        let known = self.heads.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned();
        let Some((events, head_hash, last_block)) = known else { return Ok(None) };
        if encoded.is_empty() || encoded.iter().any(|(b, ..)| *b < last_block || i64::try_from(*b).is_err()) {
            return Ok(None);
        }
        let (mut prev, mut seq) = (head_hash.clone(), events);
        let mut stored = Vec::with_capacity(encoded.len());
        let (mut seqs, mut blocks, mut jsons, mut hashes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut prev_block = last_block;
        for (block, json, event) in encoded {
            if *block < prev_block {
                return Ok(None);
            }
            let hash = link_hash(&prev, *block, seq, json);
            seqs.push(seq as i64);
            blocks.push(*block as i64);
            jsons.push(json.clone());
            hashes.push(hash.clone());
            stored.push(StoredEvent { block: *block, seq, event: event.clone(), hash: hash.clone() });
            prev = hash;
            prev_block = *block;
            seq += 1;
        }
        let (s, o, h) = (session.to_string(), owner_id.to_string(), head_hash);
        let verdict = self.run(move |c| {
            let row = c
                .query_one(
                    "SELECT wrepl_append_leased($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[&s, &o, &(events as i64), &h, &seqs, &blocks, &jsons, &hashes],
                )
                .map_err(db)?;
            Ok(row.get::<_, String>(0))
        });
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        match verdict {
            Ok(v) if v == "ok" => {
                heads.insert(session.to_string(), (seq, prev, prev_block));
                Ok(Some(stored))
            }
            // The lease or the head moved: the full transaction says how.
            Ok(_) => {
                heads.remove(session);
                Ok(None)
            }
            Err(e) => {
                heads.remove(session);
                Err(e)
            }
        }
    }
}

/// Create the schema, or check the version of the one there, under the
/// global advisory lock.
fn setup(client: &mut Client) -> Result<(), StoreError> {
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

fn to_u64(v: i64, session: &str, seq: Option<u64>, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt {
        session: session.to_string(),
        seq,
        reason: format!("negative {what} {v}"),
    })
}

fn read_head(tx: &mut impl postgres::GenericClient, session: &str) -> Result<Option<Head>, StoreError> {
    let row =
        tx.query_opt("SELECT head_events, head_hash FROM wrepl_sessions WHERE name = $1", &[&session]).map_err(db)?;
    row.map(|r| Ok(Head { events: to_u64(r.get(0), session, None, "head event count")?, hash: r.get(1) })).transpose()
}

type LeaseRow = (String, LeaseHolder, LeaseOwner);

fn read_lease(tx: &mut impl postgres::GenericClient, session: &str) -> Result<Option<LeaseRow>, StoreError> {
    let row = tx
        .query_opt(
            "SELECT owner, pid, host, boot_id, start_ticks, since_ms, heartbeat_ms, pid_ns FROM wrepl_leases WHERE session = $1",
            &[&session],
        )
        .map_err(db)?;
    Ok(row.map(|r| {
        let int = |i: usize| r.get::<_, Option<i64>>(i).unwrap_or(0).max(0) as u64;
        let text = |i: usize| r.get::<_, Option<String>>(i).unwrap_or_default();
        let id: String = r.get(0);
        let pid = u32::try_from(int(1)).unwrap_or(0);
        let holder = LeaseHolder { pid, host: text(2), since_ms: int(5), heartbeat_ms: int(6) };
        let recorded =
            LeaseOwner { id: id.clone(), pid, host: text(2), boot_id: text(3), start_ticks: int(4), pid_ns: text(7) };
        (id, holder, recorded)
    }))
}

/// Write `owner`'s lease row for `session`, now: only when there is none
/// (`replace` false; the rows written, 0 or 1), or over any there is.
fn put_lease(
    c: &mut impl postgres::GenericClient,
    session: &str,
    owner: &LeaseOwner,
    replace: bool,
) -> Result<u64, StoreError> {
    let conflict = if replace {
        "DO UPDATE SET owner = $2, pid = $3, host = $4, boot_id = $5, start_ticks = $6, pid_ns = $7, \
         since_ms = $8, heartbeat_ms = $8"
    } else {
        "DO NOTHING"
    };
    let sql = format!(
        "INSERT INTO wrepl_leases(session, owner, pid, host, boot_id, start_ticks, pid_ns, since_ms, heartbeat_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (session) {conflict}"
    );
    c.execute(
        &sql,
        &[
            &session,
            &owner.id,
            &i64::from(owner.pid),
            &owner.host,
            &owner.boot_id,
            &(i64::try_from(owner.start_ticks).unwrap_or(0)),
            &owner.pid_ns,
            &(now_ms() as i64),
        ],
    )
    .map_err(db)
}

fn log_version(tx: &mut impl postgres::GenericClient, session: &str) -> Result<Option<u32>, StoreError> {
    let row = tx.query_opt("SELECT log_version FROM wrepl_sessions WHERE name = $1", &[&session]).map_err(db)?;
    let Some(row) = row else { return Ok(None) };
    let found = row.get::<_, Option<i32>>(0).unwrap_or(0).max(0) as u32;
    if found != LOG_VERSION {
        return Err(StoreError::LogVersionMismatch { session: session.to_string(), found, supported: LOG_VERSION });
    }
    Ok(Some(found))
}

/// Append inside the session's write transaction (see the SQLite backend:
/// the same checks, the same chain).
fn append_in(
    tx: &mut Transaction<'_>,
    session: &str,
    encoded: Vec<(u64, String, Event)>,
) -> Result<Vec<StoredEvent>, StoreError> {
    if log_version(tx, session)?.is_none() {
        tx.execute(
            "INSERT INTO wrepl_sessions(name, created_at_ms, log_version) VALUES ($1, $2, $3)",
            &[&session, &(now_ms() as i64), &(LOG_VERSION as i32)],
        )
        .map_err(db)?;
    }
    let head = read_head(tx, session)?.unwrap_or(Head { events: 0, hash: String::new() });
    let last = tx
        .query_opt(
            "SELECT seq, block, hash FROM wrepl_events WHERE session = $1 ORDER BY seq DESC LIMIT 1",
            &[&session],
        )
        .map_err(db)?;
    let (mut seq, mut prev_block, mut prev_hash) = match last {
        None => (0u64, None, String::new()),
        Some(r) => {
            let seq = to_u64(r.get(0), session, None, "seq")?;
            let block = to_u64(r.get(1), session, Some(seq), "block")?;
            (seq + 1, Some(block), r.get::<_, String>(2))
        }
    };
    newest_matches_head(session, seq, &prev_hash, &head)?;
    let insert = tx
        .prepare("INSERT INTO wrepl_events(session, seq, block, json, hash) VALUES ($1, $2, $3, $4, $5)")
        .map_err(db)?;
    let mut stored = Vec::with_capacity(encoded.len());
    for (block, json, event) in encoded {
        let invalid = |reason: String| StoreError::InvalidBlock { session: session.to_string(), block, reason };
        if let Some(prev) = prev_block.filter(|prev| block < *prev) {
            return Err(invalid(format!("goes backwards (previous event is in block {prev})")));
        }
        let block_sql = i64::try_from(block).map_err(|_| invalid("exceeds i64::MAX".into()))?;
        let hash = link_hash(&prev_hash, block, seq, &json);
        tx.execute(&insert, &[&session, &(seq as i64), &block_sql, &json, &hash]).map_err(db)?;
        stored.push(StoredEvent { block, seq, event, hash: hash.clone() });
        prev_hash = hash;
        prev_block = Some(block);
        seq += 1;
    }
    tx.execute(
        "UPDATE wrepl_sessions SET head_events = $1, head_hash = $2 WHERE name = $3",
        &[&(seq as i64), &prev_hash, &session],
    )
    .map_err(db)?;
    Ok(stored)
}

fn owned(events: &[(u64, Event)]) -> Result<Vec<(u64, String, Event)>, StoreError> {
    Ok(encode(events)?.into_iter().map(|(b, j, e)| (b, j, e.clone())).collect())
}

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
        if let Some(stored) = self.append_fast(session, owner_id, &encoded)? {
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
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| {
            let mut tx = c.build_transaction().read_only(true).start().map_err(db)?;
            if log_version(&mut tx, &session)?.is_none() {
                let orphans: i64 = tx
                    .query_one("SELECT COUNT(*) FROM wrepl_events WHERE session = $1", &[&session])
                    .map_err(db)?
                    .get(0);
                return Ok(orphans_report(orphans));
            }
            let head = read_head(&mut tx, &session)?.unwrap_or(Head { events: 0, hash: String::new() });
            let rows = tx
                .query("SELECT seq, block, json, hash FROM wrepl_events WHERE session = $1 ORDER BY seq", &[&session])
                .map_err(db)?;
            let rows: Vec<(i64, i64, String, String)> =
                rows.into_iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect();
            Ok(check_chain(rows.into_iter(), head))
        })
    }

    fn head(&self, session: &str) -> Result<Option<Head>, StoreError> {
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| read_head(c, &session))
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
            let n = c
                .execute(
                    "UPDATE wrepl_leases SET heartbeat_ms = $1 WHERE session = $2 AND owner = $3",
                    &[&(now_ms() as i64), &s, &owner_id],
                )
                .map_err(db)?;
            if n == 1 {
                return Ok(());
            }
            Err(lease_lost(&s, read_lease(c, &s)?))
        })
    }

    fn release_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        let (s, owner_id) = (session.to_string(), owner_id.to_string());
        self.run(move |c| {
            c.execute("DELETE FROM wrepl_leases WHERE session = $1 AND owner = $2", &[&s, &owner_id]).map_err(db)?;
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
            Ok(())
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
            super::store::checked_secret(&name, value)
        })
    }

    fn touch(&self, session: &str, at_ms: u64) -> Result<(), StoreError> {
        validate_session_name(session)?;
        let session = session.to_string();
        self.run(move |c| {
            c.execute(
                "INSERT INTO wrepl_activity(session, at_ms) VALUES ($1, $2)
                 ON CONFLICT (session) DO UPDATE SET at_ms = GREATEST(wrepl_activity.at_ms, EXCLUDED.at_ms)",
                &[&session, &(at_ms as i64)],
            )
            .map_err(db)?;
            Ok(())
        })
    }

    fn touched(&self, session: &str) -> Result<Option<u64>, StoreError> {
        let session = session.to_string();
        self.run(move |c| {
            let row = c.query_opt("SELECT at_ms FROM wrepl_activity WHERE session = $1", &[&session]).map_err(db)?;
            Ok(row.map(|r| r.get::<_, i64>(0).max(0) as u64))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("postgres://u:secret@db:5432/x"), "postgres://u:***@db:5432/x");
        assert_eq!(redact("postgres://u@db/x"), "postgres://u@db/x");
        assert_eq!(redact("postgresql:///x?host=/tmp"), "postgresql:///x?host=/tmp");
    }
}
