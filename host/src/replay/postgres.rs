//! The PostgreSQL backend of [`LogStore`], for several servers sharing
//! sessions: the same schema version, hash chain, head and leases as
//! SQLite (the chain and its checks are shared code).
//!
//! The store runs its connections on threads of their own (the synchronous
//! `postgres` client; one to start with, more while all are busy, up to
//! [`MAX_CONNECTIONS`]), so it can be called from anywhere, a tokio worker
//! included, exactly like the SQLite store. Every write is one transaction
//! that first takes the session's transaction-level advisory lock, so that
//! writers of one session on different servers are serialized; the schema
//! is created (or checked) at open under a global advisory lock, so that
//! servers starting together do not race.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::types::Type;
use postgres::{Client, Transaction};

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

type Job = Box<dyn FnOnce(&mut Client) + Send>;

/// At most this many connections per store: opened one at a time, when
/// every open one is busy (an idle server holds one).
pub const MAX_CONNECTIONS: usize = 8;

/// A connection unused for this long is checked (one round trip) before
/// its next job, so that one the server closed meanwhile is replaced.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The connections: each a thread taking jobs from one queue.
struct Pool {
    target: super::pg_tls::Target,
    jobs: Mutex<mpsc::Receiver<Job>>,
    /// Threads waiting for a job.
    idle: AtomicUsize,
    /// Threads running (each with its connection).
    workers: AtomicUsize,
    /// How many times a job found its connection closed.
    failures: AtomicU64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("workers", &self.workers.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl Pool {
    /// One connection's thread: jobs until the store is dropped.
    fn work(&self, mut client: Client) {
        let mut last_used = std::time::Instant::now();
        let mut seen = self.failures.load(Ordering::SeqCst);
        loop {
            self.idle.fetch_add(1, Ordering::SeqCst);
            let job = self.jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
            self.idle.fetch_sub(1, Ordering::SeqCst);
            let Ok(job) = job else { break };
            // A connection the server closed (a restart, a failover) is
            // opened again before the next job: one a job found closed; and
            // one that does not answer a check (one round trip), made when
            // it idled for a while or when a job on another connection
            // found that one closed (the server went away for all). If
            // opening fails, the job fails on the closed one, with its
            // error.
            let epoch = self.failures.load(Ordering::SeqCst);
            let check = epoch != seen || last_used.elapsed() >= IDLE_CHECK;
            seen = epoch;
            if client.is_closed() || (check && client.is_valid(Duration::from_secs(5)).is_err()) {
                if let Ok(c) = self.target.connect() {
                    client = c;
                }
            }
            // A job that panics fails its caller (its answer channel is
            // dropped), not this connection's thread.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut client)));
            if client.is_closed() {
                seen = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
            }
            last_used = std::time::Instant::now();
        }
        self.workers.fetch_sub(1, Ordering::SeqCst);
    }

    /// A job was queued: open another connection when none is free and
    /// there are fewer than [`MAX_CONNECTIONS`]. (Meanwhile the job goes to
    /// whichever connection is free first.)
    fn grow(self: &Arc<Self>) {
        if self.idle.load(Ordering::SeqCst) > 0 {
            return;
        }
        let n = self.workers.load(Ordering::SeqCst);
        if n >= MAX_CONNECTIONS || self.workers.compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst).is_err()
        {
            return;
        }
        let pool = self.clone();
        let spawned = std::thread::Builder::new().name("wrepl-postgres".into()).spawn(move || {
            match pool.target.connect() {
                Ok(client) => pool.work(client),
                // The server may be at its connection limit: the open
                // connections carry on.
                Err(_) => {
                    pool.workers.fetch_sub(1, Ordering::SeqCst);
                }
            }
        });
        if spawned.is_err() {
            self.workers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// [`LogStore`] on a PostgreSQL database.
#[derive(Debug)]
pub struct PostgresStore {
    jobs: Mutex<mpsc::Sender<Job>>,
    pool: Arc<Pool>,
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

/// A connection error, with what to do when it is the server's certificate.
fn connect_error(e: &postgres::Error) -> String {
    let mut text = super::pg_tls::chain(e);
    if text.contains("certificate") || text.contains("CertificateError") {
        text.push_str(
            " (wrepl verifies the server's certificate: name its CA with sslrootcert=FILE, or connect over a unix \
             socket or with sslmode=disable on a network you trust)",
        );
    }
    text
}

fn db(e: postgres::Error) -> StoreError {
    StoreError::Postgres(super::pg_tls::chain(&e))
}

impl PostgresStore {
    /// Connect to `url` (`postgres://…` or `postgresql://…`; a unix socket
    /// with `?host=/dir`) and create or check the schema. TLS is used as
    /// the URL's `sslmode` asks, always verifying the server's certificate
    /// (against `sslrootcert=FILE`, or the system's roots): see `pg_tls`.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let shown = redact(url);
        let target = super::pg_tls::parse(url, &shown)?;
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
        let pool = Arc::new(Pool {
            target,
            jobs: Mutex::new(jobs_rx),
            idle: AtomicUsize::new(0),
            workers: AtomicUsize::new(1),
            failures: AtomicU64::new(0),
        });
        // The first connection is opened (on its thread: the client must
        // not run inside the caller's runtime) before this returns, so that
        // a bad URL, a refused certificate or a schema of another version
        // fails the open.
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), StoreError>>();
        let (p, thread_shown) = (pool.clone(), shown.clone());
        std::thread::Builder::new()
            .name("wrepl-postgres".into())
            .spawn(move || {
                let opened = p
                    .target
                    .connect()
                    .map_err(|e| StoreError::Postgres(format!("{thread_shown}: {}", connect_error(&e))));
                let mut client = match opened {
                    Ok(c) => c,
                    Err(e) => return drop(ready_tx.send(Err(e))),
                };
                if let Err(e) = setup(&mut client) {
                    return drop(ready_tx.send(Err(e)));
                }
                let _ = ready_tx.send(Ok(()));
                p.work(client);
            })
            .map_err(StoreError::Io)?;
        ready_rx.recv().map_err(|_| StoreError::Postgres(format!("{shown}: the connection thread ended")))??;
        Ok(Self { jobs: Mutex::new(jobs_tx), pool, heads: Mutex::new(Default::default()), shown })
    }

    /// Run `f` on a connection's thread and wait for its answer. When no
    /// connection is free, another is opened (up to [`MAX_CONNECTIONS`]).
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
            return Err(StoreError::Postgres(format!("{}: the connection threads ended", self.shown)));
        }
        self.pool.grow();
        rx.recv().map_err(|_| StoreError::Postgres(format!("{}: the connection threads ended", self.shown)))?
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
    /// With `release`, the lease is given back in the same transaction.
    fn append_fast(
        &self,
        session: &str,
        owner_id: &str,
        encoded: &[(u64, String, Event)],
        release: bool,
    ) -> Result<Option<Vec<StoredEvent>>, StoreError> {
        let known = self.heads.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned();
        let Some((events, head_hash, last_block)) = known else { return Ok(None) };
        if (encoded.is_empty() && !release)
            || encoded.iter().any(|(b, ..)| *b < last_block || i64::try_from(*b).is_err())
        {
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
                .query_typed_one(
                    "SELECT wrepl_append_leased($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    &[
                        (&s, Type::TEXT),
                        (&o, Type::TEXT),
                        (&(events as i64), Type::INT8),
                        (&h, Type::TEXT),
                        (&seqs, Type::INT8_ARRAY),
                        (&blocks, Type::INT8_ARRAY),
                        (&jsons, Type::TEXT_ARRAY),
                        (&hashes, Type::TEXT_ARRAY),
                        (&release, Type::BOOL),
                    ],
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

/// A head read as nullable columns (a session that does not exist: none).
fn head_of(session: &str, events: Option<i64>, hash: Option<String>) -> Result<Option<Head>, StoreError> {
    match (events, hash) {
        (Some(events), Some(hash)) => {
            Ok(Some(Head { events: to_u64(events, session, None, "head event count")?, hash }))
        }
        _ => Ok(None),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The test cluster (`scripts/test.sh` starts one), or `None` when
    /// there is none and none is required.
    fn cluster() -> Option<String> {
        match std::env::var("WREPL_TEST_POSTGRES") {
            Ok(url) => Some(url),
            Err(_) if std::env::var("WREPL_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
                panic!("WREPL_TEST_POSTGRES is not set: scripts/test.sh starts a cluster")
            }
            Err(_) => None,
        }
    }

    #[test]
    fn a_busy_connection_gets_company_and_the_store_answers_meanwhile() {
        let Some(url) = cluster() else { return };
        let store = Arc::new(PostgresStore::open(&url).unwrap());
        assert_eq!(store.pool.workers.load(Ordering::SeqCst), 1, "an idle store holds one connection");
        // A job that holds its connection until told to let go.
        let (release, wait) = mpsc::channel::<()>();
        let (started, running) = mpsc::channel::<()>();
        let busy = {
            let store = store.clone();
            std::thread::spawn(move || {
                store.run(move |c| {
                    c.simple_query("SELECT 1").map_err(db)?;
                    let _ = started.send(());
                    let _ = wait.recv();
                    Ok(())
                })
            })
        };
        running.recv().unwrap();
        // The only connection is busy: this is answered on a second one.
        assert!(store.head("nobody").unwrap().is_none());
        assert!(store.pool.workers.load(Ordering::SeqCst) >= 2);
        release.send(()).unwrap();
        busy.join().unwrap().unwrap();
        drop(store);
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("postgres://u:secret@db:5432/x"), "postgres://u:***@db:5432/x");
        assert_eq!(redact("postgres://u@db/x"), "postgres://u@db/x");
        assert_eq!(redact("postgresql:///x?host=/tmp"), "postgresql:///x?host=/tmp");
    }
}
