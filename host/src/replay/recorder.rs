//! Writes a live session's boundary events to a [`LogStore`]: buffered, and
//! flushed durably whenever an intent must be on disk before a call runs;
//! and holds the session's single-writer lease ([`Lease`]) while it does.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::log::Event;
use super::store::{Head, LeaseOwner, LeaseTaken, LogStore, StoreError};
use crate::runtime::{RecordError, Recorder};

/// A lease nobody renewed for this long is stale and may be taken over.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often a held lease's heartbeat is written.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);

/// A held single-writer lease: a heartbeat thread renews it every
/// [`HEARTBEAT_EVERY`]; dropping it stops the heartbeat and releases it.
pub struct Lease {
    store: Arc<dyn LogStore>,
    session: String,
    owner_id: String,
    stop: Option<mpsc::Sender<()>>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
    /// False once the caller gives the lease back itself ([`Lease::disarm`]).
    armed: bool,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("session", &self.session).finish_non_exhaustive()
    }
}

impl Lease {
    /// Take `session`'s lease for this process. A live holder elsewhere
    /// gives [`StoreError::SessionBusy`] at once, or, with `wait`, after
    /// retrying until that much time has passed.
    pub fn acquire(
        store: Arc<dyn LogStore>,
        session: &str,
        wait: Option<Duration>,
    ) -> Result<(Self, LeaseTaken), StoreError> {
        Self::take(store, session, wait, false).map(|(lease, taken, _)| (lease, taken))
    }

    /// [`Lease::acquire`], and the session's head as it is once the lease
    /// is held (in the same round trip where the store can).
    pub fn acquire_with_head(
        store: Arc<dyn LogStore>,
        session: &str,
        wait: Option<Duration>,
    ) -> Result<(Self, LeaseTaken, Option<Head>), StoreError> {
        Self::take(store, session, wait, true)
    }

    fn take(
        store: Arc<dyn LogStore>,
        session: &str,
        wait: Option<Duration>,
        with_head: bool,
    ) -> Result<(Self, LeaseTaken, Option<Head>), StoreError> {
        let owner = LeaseOwner::this_process();
        // `Some(None)`: wait as long as it takes.
        let deadline = wait.map(|w| Instant::now().checked_add(w));
        let try_once = || {
            if with_head {
                store.acquire_lease_and_head(session, &owner, LEASE_TTL)
            } else {
                store.acquire_lease(session, &owner, LEASE_TTL).map(|t| (t, None))
            }
        };
        let (taken, head) = loop {
            match try_once() {
                Err(StoreError::SessionBusy { .. })
                    if deadline.is_some_and(|d| d.is_none_or(|d| Instant::now() < d)) =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                other => break other?,
            }
        };
        let (stop, ticks) = mpsc::channel::<()>();
        let heartbeat = {
            let (store, session, id) = (store.clone(), session.to_string(), owner.id.clone());
            std::thread::Builder::new().name("wrepl-lease".into()).spawn(move || loop {
                match ticks.recv_timeout(HEARTBEAT_EVERY) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        // A lost lease fences every later append; the
                        // heartbeat has nothing more to do.
                        if let Err(StoreError::LeaseLost { .. }) = store.renew_lease(&session, &id) {
                            return;
                        }
                    }
                    _ => return,
                }
            })
        };
        let heartbeat = match heartbeat {
            Ok(h) => h,
            Err(e) => {
                let _ = store.release_lease(session, &owner.id);
                return Err(StoreError::Io(e));
            }
        };
        let lease = Self {
            store,
            session: session.to_string(),
            owner_id: owner.id,
            stop: Some(stop),
            heartbeat: Some(heartbeat),
            armed: true,
        };
        Ok((lease, taken, head))
    }

    /// The lease id appends are fenced with.
    pub fn owner_id(&self) -> &str {
        &self.owner_id
    }

    /// Stop the heartbeat and leave giving the lease back to the caller
    /// (dropping the result releases nothing more).
    fn disarm(mut self) -> String {
        self.stop_heartbeat();
        self.armed = false;
        std::mem::take(&mut self.owner_id)
    }

    fn stop_heartbeat(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop_heartbeat();
        if self.armed {
            let _ = self.store.release_lease(&self.session, &self.owner_id);
        }
    }
}

/// Records one session's blocks, every append fenced by the session's lease.
pub struct SessionRecorder {
    store: Arc<dyn LogStore>,
    session: String,
    /// The lease appends are fenced with; `None` while given back
    /// ([`SessionRecorder::release`]): then nothing can be written.
    lease: Mutex<Option<Lease>>,
    /// The current block, the events not yet written, and their bytes of
    /// text (as the tape's per-evaluation limit counts them).
    state: Mutex<Buffered>,
    /// Set once an append found the lease taken over: nothing more is
    /// buffered or written (every later record fails at once).
    lost: std::sync::atomic::AtomicBool,
}

/// A recorder's current block and its unwritten events (each with its
/// block), with their bytes of text kept in step with them.
#[derive(Default)]
struct Buffered {
    block: u64,
    events: Vec<(u64, Event)>,
    bytes: usize,
}

impl Buffered {
    /// Buffer `event` in the current block; the events and bytes now held.
    fn push(&mut self, event: Event) -> (usize, usize) {
        self.bytes += event.text_bytes();
        self.events.push((self.block, event));
        (self.events.len(), self.bytes)
    }

    /// Take the buffered events, leaving none.
    fn take(&mut self) -> Vec<(u64, Event)> {
        self.bytes = 0;
        std::mem::take(&mut self.events)
    }

    /// Drop the last event buffered (one that must not be written).
    fn pop(&mut self) {
        if let Some((_, e)) = self.events.pop() {
            self.bytes -= e.text_bytes();
        }
    }
}

impl std::fmt::Debug for SessionRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRecorder").field("session", &self.session).finish_non_exhaustive()
    }
}

impl SessionRecorder {
    /// A recorder whose every append is fenced by `lease`: once the lease is
    /// taken over, nothing more is written.
    pub fn leased(store: Arc<dyn LogStore>, session: impl Into<String>, lease: Lease) -> Self {
        Self {
            store,
            session: session.into(),
            lease: Mutex::new(Some(lease)),
            state: Mutex::new(Buffered::default()),
            lost: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Write what is buffered and give the lease back (another writer may
    /// take the session); the session's head as this writer left it.
    pub fn release(&self) -> Result<Option<String>, StoreError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let lease = self.lease.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(lease) = lease else {
            st.take();
            return Ok(self.store.head(&self.session)?.map(|h| h.hash));
        };
        // The buffered events and the lease in one step (one round trip
        // where the store can); the lease is given back even if the write
        // fails, and the events are gone either way, as with any failed
        // flush: the context is dropped and rebuilt from the log.
        let owner = lease.disarm();
        let events = st.take();
        match self.store.append_and_release(&self.session, &owner, &events) {
            Ok(head) => Ok(head.map(|h| h.hash)),
            Err(e) => {
                if matches!(e, StoreError::LeaseLost { .. }) {
                    self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Err(e)
            }
        }
    }

    /// Hold `lease` again (after [`SessionRecorder::release`]).
    pub fn hold(&self, lease: Lease) {
        *self.lease.lock().unwrap_or_else(|p| p.into_inner()) = Some(lease);
        self.lost.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Events recorded from now on belong to block `block`.
    pub fn set_block(&self, block: u64) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).block = block;
    }

    /// Write everything buffered.
    pub fn flush(&self) -> Result<(), RecordError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.events.is_empty() {
            return Ok(());
        }
        let owner = self.lease.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|l| l.owner_id().to_string());
        let Some(owner) = owner else {
            st.take();
            let e = StoreError::LeaseLost { session: self.session.clone(), by: "nobody (it was given back)".into() };
            return Err(RecordError::Storage(Box::new(e)));
        };
        match self.store.append_leased(&self.session, &owner, &st.events) {
            Ok(_) => {}
            Err(e @ StoreError::LeaseLost { .. }) => {
                self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
                st.take();
                return Err(RecordError::Storage(Box::new(e)));
            }
            Err(e) => return Err(RecordError::Storage(Box::new(e))),
        }
        st.take();
        Ok(())
    }
}

/// Buffered events are written once this many accumulate, so a clock or
/// random loop cannot grow host memory without bound.
const FLUSH_EVERY: usize = 4096;
/// Buffered events are also written once their text (call results and
/// messages) reaches this many bytes, so large results are not held back.
const FLUSH_BYTES: usize = 8 << 20;

impl Recorder for SessionRecorder {
    fn record(&self, event: Event, durable: bool) -> Result<(), RecordError> {
        if self.lost.load(std::sync::atomic::Ordering::SeqCst) {
            let e = StoreError::LeaseLost { session: self.session.clone(), by: "another writer".into() };
            return Err(RecordError::Storage(Box::new(e)));
        }
        let (pending, pending_bytes) = self.state.lock().unwrap_or_else(|p| p.into_inner()).push(event);
        if durable || pending >= FLUSH_EVERY || pending_bytes >= FLUSH_BYTES {
            let r = self.flush();
            if r.is_err() && durable {
                // The intent was not written, so its call will not run: it
                // must not reach the log later either.
                self.state.lock().unwrap_or_else(|p| p.into_inner()).pop();
            }
            r
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::sqlite::SqliteStore;

    fn done(payload_bytes: usize) -> Event {
        Event::Done { call: 0, ok: true, payload: "x".repeat(payload_bytes), error_kind: String::new(), ms: None }
    }

    #[test]
    fn large_results_are_written_without_waiting_for_the_event_count() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn LogStore> = Arc::new(SqliteStore::open(&dir.path().join("log.sqlite3")).unwrap());
        let (lease, _) = Lease::acquire(store.clone(), "s", None).unwrap();
        let rec = SessionRecorder::leased(store.clone(), "s", lease);
        // Small events wait in the buffer (up to FLUSH_EVERY of them)...
        rec.record(done(10), false).unwrap();
        assert!(store.load("s").unwrap().is_empty());
        // ...large ones are written once the buffer holds FLUSH_BYTES of text.
        rec.record(done(FLUSH_BYTES / 2), false).unwrap();
        assert!(store.load("s").unwrap().is_empty());
        rec.record(done(FLUSH_BYTES / 2), false).unwrap();
        assert_eq!(store.load("s").unwrap().len(), 3);
        assert_eq!(rec.state.lock().unwrap().bytes, 0);
        // The count starts again from nothing.
        rec.record(done(FLUSH_BYTES - 1), false).unwrap();
        assert_eq!(store.load("s").unwrap().len(), 3);
        rec.flush().unwrap();
        assert_eq!(store.load("s").unwrap().len(), 4);
    }
}
