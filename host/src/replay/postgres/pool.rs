//! The connections of a store: each a thread with its own connection,
//! taking jobs from one queue; more are opened while all are busy (up to
//! [`MAX_CONNECTIONS`]), and a closed one is opened again.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::Client;

use super::MAX_CONNECTIONS;

pub(super) type Job = Box<dyn FnOnce(&mut Client) + Send>;

/// A connection unused for this long is checked (one round trip) before
/// its next job, so that one the server closed meanwhile is replaced.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The connections: each a thread taking jobs from one queue.
pub(super) struct Pool {
    pub(super) target: super::super::pg_tls::Target,
    pub(super) jobs: Mutex<mpsc::Receiver<Job>>,
    /// Threads waiting for a job.
    pub(super) idle: AtomicUsize,
    /// Threads running (each with its connection).
    pub(super) workers: AtomicUsize,
    /// How many times a job found its connection closed.
    pub(super) failures: AtomicU64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("workers", &self.workers.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl Pool {
    /// One connection's thread: jobs until the store is dropped.
    pub(super) fn work(&self, mut client: Client) {
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
    pub(super) fn grow(self: &Arc<Self>) {
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
