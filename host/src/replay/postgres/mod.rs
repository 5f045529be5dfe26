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
//!
//! The connection threads are in `pool`, the schema in `schema`, reading
//! rows in `rows`, leases in `lease`, appending events in `append`, and
//! the [`LogStore`] operations over them in `log_store`.
//!
//! [`LogStore`]: super::store::LogStore

mod append;
mod lease;
mod log_store;
mod pool;
mod rows;
mod schema;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use postgres::{Client, Transaction};

use super::store::StoreError;
use pool::{Job, Pool};
use schema::setup;

/// At most this many connections per store: opened one at a time, when
/// every open one is busy (an idle server holds one).
pub const MAX_CONNECTIONS: usize = 8;

/// [`LogStore`] on a PostgreSQL database.
///
/// [`LogStore`]: super::store::LogStore
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
