//! Durable sessions of a [`Repl`]: their configuration, resuming one from
//! its verified log (replay), continuing a suspended block, and the
//! single-writer lease given back and taken again between calls.

use std::sync::Arc;
use std::time::Duration;

use super::{EvalResult, Evaluation, Repl, ReplError, Resumption};
use crate::budget::HARD_LIMIT;
use crate::call::to_hex;
use crate::replay::log::Event;
use crate::replay::player::{self, Replayed, RestoreReport};
use crate::replay::recorder::{Lease, SessionRecorder};
use crate::replay::snapshots::{self, SnapshotCheck, SnapshotRef};
use crate::replay::store::{LeaseTaken, LogStore, StoreError, VerifyReport};
use crate::runtime::{Recorder, Sandbox, WASMTIME_VERSION};

/// A durable session: its log is replayed when the REPL starts and every
/// evaluation is appended to it.
#[derive(Clone)]
pub struct SessionConfig {
    /// Session name.
    pub name: String,
    /// Where the log lives.
    pub store: Arc<dyn LogStore>,
    /// Boundary id recorded with new blocks (default `main`).
    pub boundary: String,
    /// What to do when the log fails verification.
    pub on_tamper: OnTamper,
    /// How long to wait for another writer to let go of the session
    /// (`None`: fail at once with "in use").
    pub wait: Option<Duration>,
    /// Take a snapshot of the context once replaying the blocks since the
    /// last one would cost about this much ([`SessionConfig::DEFAULT_SNAPSHOT_AFTER`]);
    /// `None`: never take or load snapshots (every resume replays the log).
    pub snapshot_after: Option<Duration>,
}

/// How many snapshots that could not be loaded resume names one by one.
const NAMED_FAILURES: usize = 5;
/// How many of the newest snapshots a log names resume tries at most (only
/// the newest few are kept; the rest are replayed).
const TRIED_SNAPSHOTS: usize = 16;

/// About how fast a snapshot is taken and stored, per byte of guest memory
/// (read through the guest, diffed, compressed, written).
const SNAPSHOT_BYTES_PER_SEC: f64 = 200e6;

/// What replaying one block costs besides its guest time (preparing its
/// code, the evaluation's set-up): about 100 µs measured for a trivial
/// block, rounded up.
const BLOCK_REPLAY_OVERHEAD: Duration = Duration::from_micros(120);

impl SessionConfig {
    /// The default of [`SessionConfig::snapshot_after`]: a resume replays at
    /// most about this much of the log's history.
    pub const DEFAULT_SNAPSHOT_AFTER: Duration = Duration::from_millis(20);

    /// The session `name` in `store`: boundary `main`, refuse a tampered
    /// log, do not wait for another writer.
    pub fn new(name: impl Into<String>, store: Arc<dyn LogStore>) -> Self {
        Self {
            name: name.into(),
            store,
            boundary: "main".into(),
            on_tamper: OnTamper::Refuse,
            wait: None,
            snapshot_after: Some(Self::DEFAULT_SNAPSHOT_AFTER),
        }
    }
}

/// What resuming does with a log that fails verification (a broken hash
/// chain, or a head that does not match its newest rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTamper {
    /// Refuse to resume ([`ReplError::Tampered`]); nothing is replayed.
    #[default]
    Refuse,
    /// Move the log aside (`<name>.tampered-<ms>`, kept for inspection) and
    /// start the session fresh, saying so; nothing forged is replayed.
    Fresh,
}

impl std::str::FromStr for OnTamper {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "refuse" => Ok(Self::Refuse),
            "fresh" => Ok(Self::Fresh),
            other => Err(format!("unknown --on-tamper value {other:?}: expected refuse or fresh")),
        }
    }
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("name", &self.name)
            .field("boundary", &self.boundary)
            .field("on_tamper", &self.on_tamper)
            .field("wait", &self.wait)
            .field("snapshot_after", &self.snapshot_after)
            .finish()
    }
}

pub(super) struct ActiveSession {
    pub(super) recorder: Arc<SessionRecorder>,
    pub(super) store: Arc<dyn LogStore>,
    pub(super) name: String,
    pub(super) next_block: u64,
    pub(super) boundary: String,
    /// Set while the lease is given back: the head the log had then.
    pub(super) released_head: Option<String>,
    /// The snapshots the log names, oldest first.
    pub(super) snapshots: Vec<SnapshotRef>,
    /// What replaying the blocks since the newest snapshot would cost (about).
    pub(super) since_snapshot: Duration,
    /// See [`SessionConfig::snapshot_after`].
    pub(super) snapshot_after: Option<Duration>,
}

/// `Ok` when `session`'s log verifies (chain and head), else
/// [`ReplError::Tampered`] naming the first bad event; store errors as they are.
pub(crate) fn verified(store: &dyn LogStore, session: &str) -> Result<(), ReplError> {
    let report = store.verify(session)?;
    if report.ok {
        return Ok(());
    }
    Err(tampered(session, report))
}

/// The [`ReplError::Tampered`] of a log `report` found broken.
fn tampered(session: &str, report: VerifyReport) -> ReplError {
    let (seq, reason) = report.first_bad.map_or((0, "the log failed verification".to_string()), |b| (b.seq, b.reason));
    ReplError::Tampered { session: session.to_string(), seq, reason }
}

impl Repl {
    /// What resuming the session found (`None` without a session).
    pub fn restore_report(&self) -> Option<&RestoreReport> {
        self.restore.as_ref()
    }

    /// Replay the session's recorded blocks (hydration `resume`): every
    /// capability is answered from the log, so no tool runs again.
    ///
    /// First the session's single-writer lease is taken (a live writer
    /// elsewhere makes this fail, or wait), then the whole log is verified:
    /// a broken chain or head is never replayed.
    pub(super) async fn hydrate(&mut self, cfg: SessionConfig) -> Result<(), ReplError> {
        let mut report = RestoreReport::default();
        let (lease, taken) = {
            let (store, name, wait) = (cfg.store.clone(), cfg.name.clone(), cfg.wait);
            match tokio::task::spawn_blocking(move || Lease::acquire(store, &name, wait)).await {
                Ok(r) => r?,
                Err(e) => return Err(ReplError::Session(StoreError::Io(std::io::Error::other(e.to_string())))),
            }
        };
        let takeover = match taken {
            LeaseTaken::TakenOver { holder, reason } => {
                report.notes.push(format!("took the session over from a stale writer ({holder}: {reason})"));
                Some(format!("{holder}: {reason}"))
            }
            LeaseTaken::Free => None,
        };
        // The log is verified and decoded in one read of its rows.
        let (checked, mut events) = cfg.store.load_verified(&cfg.name)?;
        if !checked.ok {
            let broken = tampered(&cfg.name, checked);
            let ReplError::Tampered { seq, reason, .. } = &broken else { return Err(broken) };
            match cfg.on_tamper {
                OnTamper::Refuse => return Err(broken),
                OnTamper::Fresh => {
                    let aside = cfg.store.quarantine(&cfg.name)?;
                    report.notes.push(format!(
                        "the session's log failed verification at event {seq} ({reason}); it was moved aside as {aside:?} and the session starts fresh: nothing was replayed"
                    ));
                    events = cfg.store.load(&cfg.name)?;
                }
            }
        }
        if let Some(previous) = takeover {
            // Recorded once the log is known to be intact (or was set aside).
            let block = events.last().map_or(0, |e| e.block);
            cfg.store.append_leased(&cfg.name, lease.owner_id(), &[(block, Event::Takeover { previous })])?;
        }
        let continued: Vec<u64> = events
            .iter()
            .filter_map(|e| match e.event {
                Event::Continues { block } => Some(block),
                _ => None,
            })
            .collect();
        let named = snapshots::refs(&events);
        let plan = player::plan(events, HARD_LIMIT);
        for b in plan.suspended.iter().filter(|b| !continued.contains(b)) {
            report.notes.push(format!(
                "block {b} stopped to wait for the client's input and has not been continued; it was not \
                 replayed (calls it made before stopping did run)"
            ));
        }
        // Start from the newest snapshot that checks out; replay the rest.
        let mut from = None;
        if cfg.snapshot_after.is_some() {
            let known = |b: u64| plan.blocks.iter().any(|p| p.number == b) || plan.suspended.contains(&b);
            // Each snapshot not loaded is named, up to a few; past them (older
            // ones, mostly removed), one line counts the rest.
            let mut skipped = 0usize;
            for r in named.iter().rev().take(TRIED_SNAPSHOTS) {
                let why = if !known(r.block) {
                    Err(format!("{} names a block the log does not have; not loaded", r.name()))
                } else {
                    self.restore_snapshot(&*cfg.store, &cfg.name, r).await.map_err(|why| {
                        format!("{} was not loaded: {why}; the blocks it covers are replayed instead", r.name())
                    })
                };
                match why {
                    Ok(()) => {
                        report.snapshot = Some(r.name());
                        from = Some(r.block);
                        break;
                    }
                    Err(note) if skipped < NAMED_FAILURES => report.notes.push(note),
                    Err(_) => {}
                }
                skipped += 1;
            }
            if skipped > NAMED_FAILURES {
                report.notes.push(format!("{} older snapshot(s) could not be loaded either", skipped - NAMED_FAILURES));
            }
        }
        let mut since_snapshot = Duration::ZERO;
        for mut block in plan.blocks.into_iter().filter(|b| from.is_none_or(|f| b.number > f)) {
            let tape = std::mem::take(&mut block.tape);
            let ev = Evaluation::replayed(block.code.clone(), block.view, block.budget, &self.limits);
            let started = std::time::Instant::now();
            let (result, observation) = self.run_block(&ev, tape).await?;
            since_snapshot += started.elapsed();
            let stack = result.error.as_ref().map(|e| e.stack.clone()).unwrap_or_default();
            report.judge(block, Replayed { threw: result.error.is_some(), stack, observation });
        }
        report.summarize();
        let next_block = plan.next_block;
        let recorder = Arc::new(SessionRecorder::leased(cfg.store.clone(), cfg.name.clone(), lease));
        self.session = Some(ActiveSession {
            recorder,
            store: cfg.store.clone(),
            name: cfg.name.clone(),
            next_block,
            boundary: cfg.boundary,
            released_head: None,
            snapshots: named,
            since_snapshot,
            snapshot_after: cfg.snapshot_after,
        });
        if let Err(why) = self.snapshot_if_due(Duration::ZERO).await {
            report.notes.push(why);
        }
        self.restore = Some(report);
        Ok(())
    }

    /// Replay `session`'s whole log from nothing in this context (which must
    /// record no session), checking at every snapshot the log names that
    /// replay reached the state the snapshot holds, and that its row is
    /// there and checks out (`wrepl log verify --replay`). A difference is
    /// non-determinism (a bug), reported with its block. The log is
    /// verified first; nothing is recorded.
    pub async fn verify_replay(
        &mut self,
        store: &dyn LogStore,
        session: &str,
    ) -> Result<(RestoreReport, Vec<SnapshotCheck>), ReplError> {
        if self.session.is_some() {
            return Err(ReplError::InvalidInput("verify_replay needs a context that records no session".into()));
        }
        verified(store, session)?;
        let events = store.load(session)?;
        let named = snapshots::refs(&events);
        let plan = player::plan(events, HARD_LIMIT);
        let mut report = RestoreReport::default();
        let mut checks = Vec::new();
        let config = to_hex(&Sandbox::config_digest(&self.sandbox_options()));
        let mut pending = named.iter().enumerate().peekable();
        // The rows of all but the newest few are removed as new ones come.
        let kept_from = named.len().saturating_sub(snapshots::KEEP);
        // Snapshots taken before the first block that is replayed (after a
        // suspended block 0, say) are checked against a fresh context.
        // A block its budget stopped is stopped elsewhere by replay: the
        // states after it are not expected to match.
        let mut stopped: Option<u64> = None;
        let mut check_up_to =
            async |repl: &mut Self, upto: u64, stopped: Option<u64>, checks: &mut Vec<SnapshotCheck>| {
                while let Some((i, r)) = pending.next_if(|(_, r)| r.block <= upto) {
                    let mut problem = repl.check_snapshot(store, session, r, &config, i >= kept_from).await;
                    let mut note = None;
                    if let Some(b) =
                        stopped.filter(|_| problem.as_ref().is_some_and(|p| p.starts_with("NON-DETERMINISM")))
                    {
                        problem = None;
                        note = Some(format!(
                            "not comparable: block {b} was stopped by its budget when recorded, and replay stops it \
                         elsewhere (the snapshot holds the state the recording reached)"
                        ));
                    }
                    let stored = matches!(store.get_snapshot(session, &r.digest), Ok(Some(_)));
                    checks.push(SnapshotCheck { name: r.name(), block: r.block, stored, problem, note });
                }
            };
        for mut block in plan.blocks {
            if block.number > 0 {
                check_up_to(self, block.number - 1, stopped, &mut checks).await;
            }
            if block.was_stopped() {
                stopped.get_or_insert(block.number);
            }
            let tape = std::mem::take(&mut block.tape);
            let ev = Evaluation::replayed(block.code.clone(), block.view, block.budget, &self.limits);
            let (result, observation) = self.run_block(&ev, tape).await?;
            let stack = result.error.as_ref().map(|e| e.stack.clone()).unwrap_or_default();
            report.judge(block, Replayed { threw: result.error.is_some(), stack, observation });
        }
        check_up_to(self, u64::MAX, stopped, &mut checks).await;
        report.summarize();
        Ok((report, checks))
    }

    /// What is wrong with snapshot `r` given the context's state now (the
    /// state replay reached at its block); `None` when nothing is.
    async fn check_snapshot(
        &mut self,
        store: &dyn LogStore,
        session: &str,
        r: &SnapshotRef,
        config: &str,
        newest: bool,
    ) -> Option<String> {
        if r.guest != to_hex(&self.engine.guest_digest()) || r.wasmtime != WASMTIME_VERSION {
            return Some(format!(
                "taken by another guest build or wasmtime ({}); it cannot be checked here (and is never loaded here)",
                r.wasmtime
            ));
        }
        if r.config != config {
            return Some("taken under another configuration: verify with the tool flags the session runs with".into());
        }
        let row = snapshots::load(store, session, r).err();
        let sandbox = match self.ensure_sandbox().await {
            Ok(_) => self.sandbox.as_mut()?,
            Err(e) => return Some(format!("no context to compare: {e}")),
        };
        match sandbox.snapshot(&self.engine).await {
            Ok(image) if to_hex(&image.state) == r.state => match row {
                // Only the newest few are kept; the chain still names the others.
                Some(_) if !newest => None,
                Some(why) => Some(format!("replay reaches the state it holds, but its row: {why}")),
                None => None,
            },
            Ok(image) => Some(format!(
                "NON-DETERMINISM: replay reached state {} after block {}, the snapshot holds {}; please report this \
                 with the block's code",
                &to_hex(&image.state)[..12],
                r.block,
                &r.state[..r.state.len().min(12)]
            )),
            Err(e) => Some(format!("the replayed context could not be snapshotted: {e}")),
        }
    }

    /// Replace the context by the one snapshot `r` of `session` holds, when
    /// everything it is bound to matches and its row checks out; else why not.
    async fn restore_snapshot(&mut self, store: &dyn LogStore, session: &str, r: &SnapshotRef) -> Result<(), String> {
        if r.guest != to_hex(&self.engine.guest_digest()) {
            return Err("it was taken by another guest build".into());
        }
        if r.wasmtime != WASMTIME_VERSION {
            return Err(format!("it was taken under wasmtime {}, this is {WASMTIME_VERSION}", r.wasmtime));
        }
        let options = self.sandbox_options();
        if r.config != to_hex(&Sandbox::config_digest(&options)) {
            return Err("it was taken under another configuration (tools, limits or repository hint)".into());
        }
        let state = from_hex(&r.state).ok_or("the log records an unreadable state digest")?;
        let bytes = snapshots::load(store, session, r)?;
        // The fresh instance made at assembly gives its pool slot back first.
        self.sandbox = None;
        match Sandbox::restore(&self.engine, &options, &bytes, &state).await {
            Ok(sandbox) => {
                self.sandbox = Some(sandbox);
                Ok(())
            }
            Err(e) => {
                self.sandbox = Some(Sandbox::new(&self.engine, options).await.map_err(|e| e.to_string())?);
                Err(e.to_string())
            }
        }
    }

    /// Count `cost` (what replaying the block that just ended would cost
    /// beyond [`BLOCK_REPLAY_OVERHEAD`]) and take a snapshot when replaying
    /// since the last one would now cost more than the session allows.
    /// A snapshot that cannot be taken or stored is not an error of the
    /// evaluation: the log is complete without it. Returns why it failed.
    pub(super) async fn snapshot_if_due(&mut self, cost: Duration) -> Result<(), String> {
        self.snapshot_when(cost, false).await.map(|_| ())
    }

    /// Take a snapshot of this session's context now, unless the newest
    /// one already holds its state (or snapshots are off, or the context
    /// records no session): before the context is dropped (evicted,
    /// hibernated, the server stopping) or handed over, so that it comes
    /// back without replay. True when one was taken.
    pub async fn snapshot_now(&mut self) -> Result<bool, ReplError> {
        self.snapshot_when(Duration::ZERO, true).await.map_err(ReplError::Snapshot)
    }

    /// Take a snapshot if one is due (replaying the blocks since the newest
    /// one would cost more than the session allows), counting no new cost:
    /// before a lease is given back on a shared store,
    /// so that whoever continues the context replays at most what the
    /// session allows, while a context served call after call by one
    /// instance is not copied out after every call.
    pub async fn snapshot_if_worth(&mut self) -> Result<(), ReplError> {
        self.snapshot_if_due(Duration::ZERO).await.map_err(ReplError::Snapshot)
    }

    async fn snapshot_when(&mut self, cost: Duration, force: bool) -> Result<bool, String> {
        let Some(sess) = self.session.as_mut() else { return Ok(false) };
        let Some(after) = sess.snapshot_after else { return Ok(false) };
        if sess.next_block == 0 || sess.released_head.is_some() {
            return Ok(false);
        }
        sess.since_snapshot += cost;
        let current = sess.snapshots.last().is_some_and(|r| r.block + 1 == sess.next_block);
        let Some(sandbox) = self.sandbox.as_mut().filter(|s| s.poisoned().is_none()) else { return Ok(false) };
        // Never more often than a snapshot costs: one is worth taking once
        // replay would take about as long as writing it (a large heap that
        // cheap blocks barely touch is not copied after each of them).
        // (`Some(ZERO)` asks for one after every block, whatever it costs.)
        let floor = Duration::from_secs_f64(sandbox.peak_memory() as f64 / SNAPSHOT_BYTES_PER_SEC);
        let worth = if after.is_zero() { after } else { after.max(floor) };
        if current || (!force && sess.since_snapshot < worth) {
            return Ok(false);
        }
        let block = sess.next_block - 1;
        let image = sandbox.snapshot(&self.engine).await.map_err(|e| format!("no snapshot was taken: {e}"))?;
        let config = sandbox.config_digest_now();
        let taken = snapshots::Taken {
            bytes: image.bytes,
            state: image.state,
            guest: self.engine.guest_digest(),
            wasmtime: WASMTIME_VERSION,
            config,
        };
        let event = snapshots::store(&*sess.store, &sess.name, block, taken)
            .map_err(|e| format!("the snapshot could not be stored: {e}"))?;
        sess.recorder.set_block(block);
        sess.recorder.record(event.clone(), true).map_err(|e| format!("the snapshot could not be logged: {e}"))?;
        if let Event::Snapshot { state, digest, guest, wasmtime, config, .. } = event {
            sess.snapshots.push(SnapshotRef { block, state, digest, guest, wasmtime, config });
        }
        sess.since_snapshot = Duration::ZERO;
        snapshots::prune(&*sess.store, &sess.name, &sess.snapshots)
            .map_err(|e| format!("older snapshots could not be removed: {e}"))?;
        Ok(true)
    }

    /// The number of the newest block recorded in this context's session.
    pub fn last_block(&self) -> Option<u64> {
        self.session.as_ref().and_then(|s| s.next_block.checked_sub(1))
    }

    /// Give the session's lease back between calls (a shared store: any
    /// server may serve the next one). Nothing can be recorded until
    /// [`Repl::reacquire_lease`] takes it again.
    pub fn release_lease(&mut self) -> Result<(), ReplError> {
        let Some(sess) = self.session.as_mut() else { return Ok(()) };
        sess.released_head = Some(sess.recorder.release()?.unwrap_or_default());
        Ok(())
    }

    /// Take the lease back (waiting up to `wait` for another writer). True
    /// when the log is as this context left it, so the live context is
    /// current; false when another writer extended the log (or took the
    /// lease over from a dead one): then the context must be rebuilt from
    /// the log (drop it and build it again).
    pub async fn reacquire_lease(&mut self, wait: Option<Duration>) -> Result<bool, ReplError> {
        let Some(sess) = self.session.as_mut() else { return Ok(true) };
        let Some(left) = sess.released_head.clone() else { return Ok(true) };
        let (store, name) = (sess.store.clone(), sess.name.clone());
        let (lease, taken, head) =
            match tokio::task::spawn_blocking(move || Lease::acquire_with_head(store, &name, wait)).await {
                Ok(r) => r?,
                Err(e) => return Err(ReplError::Session(StoreError::Io(std::io::Error::other(e.to_string())))),
            };
        let head = head.map(|h| h.hash).unwrap_or_default();
        sess.recorder.hold(lease);
        sess.released_head = None;
        Ok(matches!(taken, LeaseTaken::Free) && head == left)
    }

    /// The session this context records into, when it records.
    pub fn session_name(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.name.as_str())
    }

    /// Continue suspended block `block` of this context's session: its
    /// code is evaluated again as a new block, every boundary event up to
    /// the suspension answered from the log (nothing that ran runs again),
    /// except the calls that waited for input (`waiting`, which must be the
    /// ones the log names), which run now; then live. The context must be
    /// in the state the block started from: hydrated from the log, which
    /// skips suspended blocks.
    pub(super) async fn continue_block(&mut self, ev: Evaluation, r: Resumption) -> Result<EvalResult, ReplError> {
        let Resumption { block, waiting } = r;
        let Some(sess) = &self.session else {
            return Err(ReplError::InvalidInput("this context records no session; nothing can be continued".into()));
        };
        if sess.next_block <= block {
            return Err(ReplError::InvalidInput(format!("block {block} is not in this context's session")));
        }
        let events = sess.store.load(&sess.name)?;
        if events.iter().any(|e| matches!(&e.event, Event::Continues { block: b } if *b == block)) {
            return Err(ReplError::InvalidInput(format!("block {block} was already continued")));
        }
        let Some((logged, prefix, calls)) = player::suspended_block(&events, block) else {
            return Err(ReplError::InvalidInput(format!("block {block} is not a suspended block of this session")));
        };
        if logged != ev.code {
            return Err(ReplError::InvalidInput(format!(
                "the code differs from the code of suspended block {block}; a continuation runs the same code"
            )));
        }
        if calls != waiting {
            return Err(ReplError::InvalidInput(format!("block {block} waits on call(s) {calls:?}, not {waiting:?}")));
        }
        self.eval_block(ev, Some((block, prefix, calls))).await
    }
}

/// The replay cost of a block that took `script_ms` of guest time.
pub(super) fn block_cost(script_ms: f64) -> Duration {
    Duration::from_secs_f64((script_ms / 1000.0).max(0.0)) + BLOCK_REPLAY_OVERHEAD
}

/// 32 bytes from 64 hex characters.
fn from_hex(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}
