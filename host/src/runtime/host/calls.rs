//! The `calls` interface: `start-call`, `next-completion`, `cancel-call`.
//! Owns the in-flight calls (their futures, polled on the guest's task),
//! the limits on what a script may send and receive, and the abort of what is
//! still running when an evaluation ends. Whether a call is recorded,
//! replayed or neither is the tape's business (`runtime/tape/`).

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{AbortHandle, Abortable, FutureExt};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::super::bindings::wrepl::sandbox::{calls, types};
use super::super::tape::{Next, Start};
use super::{CallFailure, CallHandler, FailureKind, HostState};

/// Most inner calls in flight at once per sandbox.
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;
/// Largest input (JSON text) a script may send to one inner call.
pub const MAX_CALL_INPUT_BYTES: usize = 64 << 20;
/// Largest result (JSON text) delivered back to the script.
pub const MAX_CALL_RESULT_BYTES: usize = 64 << 20;
/// Longest error message passed to the guest.
const MAX_MESSAGE_BYTES: usize = 1 << 20;

struct Done {
    id: u32,
    result: Result<String, CallFailure>,
}

type Running = Pin<Box<dyn Future<Output = Option<Done>> + Send>>;

struct InFlight {
    tool: String,
    abort: AbortHandle,
}

/// The inner calls of one sandbox.
pub(super) struct Calls {
    /// Where calls go.
    pub(super) handler: Arc<dyn CallHandler>,
    /// In-flight call futures, polled on the guest's task when a call starts
    /// and whenever the guest waits in `next-completion` (no cross-thread
    /// hand-off per call). Tools that must progress while the script computes
    /// spawn their own work.
    running: FuturesUnordered<Running>,
    /// Calls that finished while being polled in `start-call`, in completion
    /// order; delivered (and taped) by `next-completion`.
    ready: VecDeque<Done>,
    next_id: u32,
    /// By call id (small sequential keys: a B-tree, no hashing per call).
    in_flight: BTreeMap<u32, InFlight>,
    /// Index (among this eval's calls) of each in-flight call id.
    index: BTreeMap<u32, u32>,
    /// This evaluation's calls, counted (for its cost record).
    pub(super) usage: crate::runtime::CallUsage,
}

impl Calls {
    pub(super) fn new(handler: Arc<dyn CallHandler>) -> Self {
        Self {
            handler,
            running: FuturesUnordered::new(),
            ready: VecDeque::new(),
            next_id: 1,
            in_flight: BTreeMap::new(),
            index: BTreeMap::new(),
            usage: crate::runtime::CallUsage::default(),
        }
    }

    fn new_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    /// The id of this evaluation's call #`index`, if not yet settled.
    pub(super) fn id_of(&self, index: u32) -> Option<u32> {
        self.index.iter().find(|(_, i)| **i == index).map(|(id, _)| *id)
    }

    /// The oldest call in flight.
    pub(super) fn oldest(&self) -> Option<u32> {
        self.in_flight.keys().min().copied()
    }

    /// Forget call `id`; its index (`u32::MAX` if unknown).
    pub(super) fn settle(&mut self, id: u32) -> u32 {
        let index = self.index.remove(&id).unwrap_or(u32::MAX);
        self.in_flight.remove(&id);
        index
    }

    /// Clear the per-evaluation call indices.
    pub(super) fn begin(&mut self) {
        self.index.clear();
        self.usage = crate::runtime::CallUsage::default();
    }

    /// The evaluation ended: abort what is still in flight and drop every
    /// future (processes are killed on drop). Returns the abandoned calls'
    /// tool names in start order.
    pub(super) fn end(&mut self) -> Vec<String> {
        // Ids are given out in start order, and the map iterates by id.
        let abandoned: Vec<String> = std::mem::take(&mut self.in_flight)
            .into_values()
            .map(|f| {
                f.abort.abort();
                f.tool
            })
            .collect();
        self.running = FuturesUnordered::new();
        self.ready.clear();
        self.index.clear();
        abandoned
    }
}

fn cap_message(mut m: String) -> String {
    if m.len() > MAX_MESSAGE_BYTES {
        let cut = crate::text::floor_char_boundary(&m, MAX_MESSAGE_BYTES);
        m.truncate(cut);
        m.push_str("…[truncated]");
    }
    m
}

fn call_error(kind: FailureKind, message: String) -> types::CallError {
    types::CallError { kind: kind.as_str().into(), message }
}

fn truncate_name(s: &str) -> String {
    let cut = crate::text::floor_char_boundary(s, 200);
    s[..cut].to_string()
}

impl calls::Host for HostState {
    fn start_call(&mut self, tool: String, input: String) -> wasmtime::Result<Result<u32, types::CallError>> {
        if let Err(e) = self.admit(&tool, &input) {
            return Ok(Err(e));
        }
        let usage = &mut self.calls.usage;
        match usage.calls.get_mut(tool.as_str()) {
            Some(n) => *n += 1,
            None => {
                usage.calls.insert(truncate_name(&tool), 1);
            }
        }
        usage.bytes_in += input.len() as u64;
        let handler = self.calls.handler.clone();
        let intent = || crate::runtime::tape::Intent {
            fingerprint: handler.fingerprint(&tool),
            durable: handler.durable_intent(&tool, &input),
        };
        let index = match self.taped(|tape, host| tape.call_starts(&tool, &input, &intent, host)) {
            Start::Refused(e) => return Ok(Err(e)),
            Start::Replayed { index } => {
                // Pending without running: the tape delivers its completion.
                let id = self.calls.new_id();
                let (abort, _) = AbortHandle::new_pair();
                self.calls.in_flight.insert(id, InFlight { tool: truncate_name(&tool), abort });
                self.calls.index.insert(id, index);
                return Ok(Ok(id));
            }
            Start::Run { index } => index,
        };
        let fut = match handler.start(&tool, &input) {
            Ok(f) => f,
            Err(f) => {
                let error = types::CallError { kind: f.kind.as_str().into(), message: cap_message(f.message) };
                self.taped(|tape, host| tape.call_refused(index, &error, host));
                return Ok(Err(error));
            }
        };
        let id = self.calls.new_id();
        self.calls.index.insert(id, index);
        let (abort, registration) = AbortHandle::new_pair();
        let fut = Abortable::new(super::super::CALL_INDEX.scope(index, fut), registration);
        self.calls.running.push(Box::pin(async move { fut.await.ok().map(|result| Done { id, result }) }));
        self.calls.in_flight.insert(id, InFlight { tool: truncate_name(&tool), abort });
        self.poll_started();
        Ok(Ok(id))
    }

    async fn next_completion(&mut self) -> Option<types::Completion> {
        // Script time counts guest execution: it pauses only while the guest
        // is blocked here waiting for inner calls (not for its own timers).
        if !self.calls.in_flight.is_empty() {
            self.watch.clock.pause();
        }
        let next = match self.taped(|tape, host| tape.next_completion(host)) {
            Next::Answer(answer) => answer,
            Next::Live => self.wait_completion().await,
        };
        self.watch.clock.resume();
        if let Some(types::Completion::Call(done)) = &next {
            self.calls.usage.bytes_out += match &done.outcome {
                Ok(json) => json.len() as u64,
                Err(e) => e.message.len() as u64,
            };
        }
        next
    }

    fn cancel_call(&mut self, id: u32) -> wasmtime::Result<()> {
        if let Some(f) = self.calls.in_flight.remove(&id) {
            f.abort.abort();
        }
        Ok(())
    }
}

impl HostState {
    /// The checks every call passes before the tape or the handler sees it.
    fn admit(&self, tool: &str, input: &str) -> Result<(), types::CallError> {
        if !self.watch.is_active() {
            return Err(call_error(FailureKind::Aborted, "no evaluation is running; inner calls cannot start".into()));
        }
        if self.watch.stop_reason().is_some() {
            return Err(call_error(
                FailureKind::Aborted,
                "the evaluation is stopping; no new inner calls may start".into(),
            ));
        }
        if self.calls.in_flight.len() >= MAX_CALLS_IN_FLIGHT {
            return Err(call_error(
                FailureKind::Limit,
                format!(
                    "too many inner calls in flight (limit {MAX_CALLS_IN_FLIGHT}); await some before starting more"
                ),
            ));
        }
        if input.len() > MAX_CALL_INPUT_BYTES {
            return Err(call_error(
                FailureKind::InvalidInput,
                format!(
                    "the input of {:?} is {} bytes; the limit is {MAX_CALL_INPUT_BYTES}",
                    truncate_name(tool),
                    input.len()
                ),
            ));
        }
        Ok(())
    }

    /// Poll the running calls once, right away: a call that can finish at
    /// once is ready for the next `next-completion`, and a slow one starts
    /// its work (timers, I/O) now instead of when the script next waits. The
    /// time counts as waiting, not as script time.
    fn poll_started(&mut self) {
        self.watch.clock.pause();
        while let Some(Some(item)) = self.calls.running.next().now_or_never() {
            if let Some(done) = item {
                self.calls.ready.push_back(done);
            }
        }
        self.watch.clock.resume();
    }

    /// Live: wait for the next due timer or finished call (or a stop).
    async fn wait_completion(&mut self) -> Option<types::Completion> {
        let mut yielded = false;
        loop {
            // The budget first: a script that spent it gets no more timer
            // callbacks or results to run.
            if self.poll_budget().is_some() || !self.watch.is_active() {
                return Some(types::Completion::Interrupted);
            }
            // The clock is read only when a timer could be due.
            if let Some(id) = (!self.timers.is_empty()).then(|| self.timers.pop_due(Instant::now())).flatten() {
                self.taped(|tape, host| tape.timer_fired(id, host));
                return Some(types::Completion::Timer(id));
            }
            if let Some(done) = self.calls.ready.pop_front() {
                if let Some(c) = self.accept(done) {
                    return Some(c);
                }
                continue;
            }
            if self.calls.in_flight.is_empty() && self.timers.is_empty() {
                return None;
            }
            // A call that is already done needs no timer.
            if let Some(Some(item)) = self.calls.running.next().now_or_never() {
                if let Some(c) = item.and_then(|done| self.accept(done)) {
                    return Some(c);
                }
                continue;
            }
            // Nor does one that finishes within one turn of the scheduler (an
            // in-process tool awaiting something already done): arming the
            // timer below and clearing it again costs more than such a
            // call's whole wait.
            if !yielded && !self.calls.running.is_empty() {
                yielded = true;
                tokio::task::yield_now().await;
                if let Some(Some(item)) = self.calls.running.next().now_or_never() {
                    if let Some(c) = item.and_then(|done| self.accept(done)) {
                        return Some(c);
                    }
                    continue;
                }
            }
            let now = Instant::now();
            let mut deadline = self.watch.next_deadline();
            if let Some(t) = self.timers.next_deadline() {
                deadline = deadline.min(t);
            }
            // Wake regularly to notice cancellation.
            deadline = deadline.min(now + Duration::from_millis(20));
            let next = if self.calls.running.is_empty() {
                tokio::time::sleep_until(deadline.into()).await;
                None
            } else {
                tokio::select! {
                    biased;
                    done = self.calls.running.next() => done.flatten(),
                    _ = tokio::time::sleep_until(deadline.into()) => None,
                }
            };
            if let Some(done) = next {
                if let Some(c) = self.accept(done) {
                    return Some(c);
                }
            }
        }
    }

    /// A live call finished: cap what the script receives, tape it, deliver.
    fn accept(&mut self, done: Done) -> Option<types::Completion> {
        // Unknown ids were cancelled or belong to an earlier evaluation.
        self.calls.in_flight.remove(&done.id)?;
        let index = self.calls.index.remove(&done.id).unwrap_or(u32::MAX);
        let outcome = match done.result {
            Ok(json) if json.len() > MAX_CALL_RESULT_BYTES => Err(call_error(
                FailureKind::ResultTooLarge,
                format!(
                    "the result ({} bytes) exceeds the {} byte limit for one inner call",
                    json.len(),
                    MAX_CALL_RESULT_BYTES
                ),
            )),
            Ok(json) => Ok(json),
            Err(f) => Err(types::CallError { kind: f.kind.as_str().into(), message: cap_message(f.message) }),
        };
        self.taped(|tape, host| tape.call_done(index, &outcome, host));
        Some(types::Completion::Call(types::CallDone { id: done.id, outcome }))
    }
}
