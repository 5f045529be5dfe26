//! Recording and replaying the WIT boundary. In record mode every answer the
//! guest gets from the outside (call results, timers, clock, randomness) is
//! reported to a [`Recorder`]; intents of inner calls durably BEFORE they
//! run. In replay mode every import is answered from a block's recorded
//! events instead, so no tool, shell, file or model call runs again.
//!
//! The evaluation's [`Tape`] choice becomes one [`Deck`] (see [`load`]): the
//! strategy the WIT imports ask "a call starts", "a call completed", "now",
//! "random", "a timer fired". The imports themselves carry no record or
//! replay branches; everything mode-specific lives here.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::bindings::wrepl::sandbox::types;
use super::budget::StopReason;

/// One boundary event of an evaluation, as a session's log stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// An evaluation (block) starts.
    Begin {
        /// The code as the user sent it.
        code: String,
        /// The session boundary the block ran under.
        boundary: String,
    },
    /// The guest started an inner call. Written (durably) BEFORE the call
    /// runs: an intent without a matching `Done` means the outcome is unknown.
    Call {
        /// Tool wire name.
        tool: String,
        /// Input JSON text, as the guest sent it.
        input: String,
        /// Fingerprint of the tool's input schema at the time ("" if unknown).
        schema: String,
    },
    /// An inner call's result was delivered to the guest.
    Done {
        /// Index of the call among this block's `Call` events (0-based).
        call: u32,
        /// True for a result, false for an error.
        ok: bool,
        /// Result JSON text, or the error message.
        payload: String,
        /// Error kind (empty for results).
        error_kind: String,
    },
    /// The host refused to start the call just recorded (no result follows).
    Refused {
        /// Index of the call among this block's `Call` events.
        call: u32,
        /// Error kind.
        error_kind: String,
        /// Error message.
        message: String,
    },
    /// The guest's timer fired (delivered).
    Timer {
        /// Timer id.
        id: u32,
    },
    /// The guest read the clock.
    Now {
        /// Microseconds since the Unix epoch.
        us: f64,
    },
    /// The guest drew random bits.
    Random {
        /// The value.
        value: u64,
    },
    /// The block ended.
    End {
        /// True when the script threw (or was stopped).
        threw: bool,
        /// The error's name and message, if any.
        error: Option<String>,
        /// True when a budget or cancellation stopped the block.
        #[serde(default)]
        stopped: bool,
    },
    /// A writer took the session over from a stale lease holder (written by
    /// the store; not part of any evaluation's tape).
    Takeover {
        /// The previous holder and why its lease was stale.
        previous: String,
    },
    /// The block stopped at calls that wait for the client's input (an
    /// approval or a model sample asked through a multi round-trip request).
    /// Written before the block's `End`; replay skips a suspended block: its
    /// continuation (a later block with [`Event::Continues`]) re-records it
    /// whole.
    Suspended {
        /// Indices of the calls that wait for input (never started).
        calls: Vec<u32>,
    },
    /// This block continues suspended block `block`: its events replay that
    /// block's recording up to the waiting calls, then run live.
    Continues {
        /// The suspended block's number.
        block: u64,
    },
}

/// Why a [`Recorder`] could not record an event.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The log's storage failed.
    #[error("the session log could not be written: {0}")]
    Storage(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The per-evaluation event limit was reached.
    #[error("the replay log limit of {0} events for this evaluation was reached")]
    LimitReached(usize),
    /// The per-evaluation byte limit was reached.
    #[error("the replay log limit of {} MiB for this evaluation was reached", .0 >> 20)]
    BytesLimitReached(usize),
}

/// Receives boundary events of live evaluations.
pub trait Recorder: Send + Sync + 'static {
    /// Record `event`. When `durable`, it (and everything before it) must be
    /// persisted before returning; an error then stops the call from running.
    fn record(&self, event: Event, durable: bool) -> Result<(), RecordError>;
}

/// How an evaluation meets the outside world.
#[derive(Clone, Default)]
pub enum Tape {
    /// Live, not recorded.
    #[default]
    Off,
    /// Live, every boundary event reported to the recorder.
    Record(std::sync::Arc<dyn Recorder>),
    /// Answered from these recorded events (one block, without Begin/End).
    Replay(Vec<Event>),
    /// A suspended block continued: answered from its recorded events
    /// (re-recorded), except the calls that waited for input, which run
    /// live; once the recording is used up, live and recorded.
    Continue(Continuation),
}

impl std::fmt::Debug for Continuation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Continuation")
            .field("prefix", &self.prefix.len())
            .field("live_calls", &self.live_calls)
            .finish_non_exhaustive()
    }
}

/// What [`Tape::Continue`] needs.
#[derive(Clone)]
pub struct Continuation {
    /// The suspended block's recorded events (without Begin, End and notes).
    pub prefix: Vec<Event>,
    /// Indices of the calls that waited for input: these run live.
    pub live_calls: Vec<u32>,
    /// Where the continuing block is recorded.
    pub recorder: std::sync::Arc<dyn Recorder>,
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tape::Off => f.write_str("Off"),
            Tape::Record(_) => f.write_str("Record"),
            Tape::Replay(e) => write!(f, "Replay({} events)", e.len()),
            Tape::Continue(c) => write!(f, "Continue({} events, live {:?})", c.prefix.len(), c.live_calls),
        }
    }
}

/// What replay mode observed in one block.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplayObservation {
    /// The first divergence from the recording, if any.
    pub divergence: Option<Divergence>,
    /// Calls whose recorded intent had no outcome (answered `outcome_unknown`).
    pub unknown: Vec<u32>,
}

/// The first point where a replayed block left its recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// Position in the block's event stream (0-based).
    pub position: usize,
    /// Index of the inner call involved, if any.
    pub call: Option<u32>,
    /// What the log has there.
    pub expected: String,
    /// What the guest did.
    pub actual: String,
}

/// A block's events, consumed in order during replay.
#[derive(Debug)]
pub(crate) struct Cursor {
    events: VecDeque<Event>,
    position: usize,
    calls: u32,
    /// Calls started during replay whose intent has no recorded outcome.
    pub(crate) unknown: Vec<u32>,
    pub(crate) divergence: Option<Divergence>,
}

pub(crate) fn describe(e: Option<&Event>) -> String {
    match e {
        None => "the end of the recording".into(),
        Some(Event::Call { tool, .. }) => format!("call of {tool}"),
        Some(Event::Done { call, .. }) => format!("completion of call #{call}"),
        Some(Event::Refused { call, .. }) => format!("refusal of call #{call}"),
        Some(Event::Timer { id }) => format!("timer {id}"),
        Some(Event::Now { .. }) => "a clock read".into(),
        Some(Event::Random { .. }) => "a random draw".into(),
        Some(Event::Begin { .. }) => "the start of a block".into(),
        Some(Event::End { .. }) => "the end of the block".into(),
        Some(Event::Takeover { .. }) => "a lease takeover".into(),
        Some(Event::Suspended { .. }) => "a suspension for input".into(),
        Some(Event::Continues { .. }) => "a continuation".into(),
    }
}

impl Cursor {
    pub(crate) fn new(events: Vec<Event>) -> Self {
        Self { events: events.into(), position: 0, calls: 0, unknown: Vec::new(), divergence: None }
    }

    pub(crate) fn peek(&self) -> Option<&Event> {
        self.events.front()
    }

    pub(crate) fn next(&mut self) -> Option<Event> {
        let e = self.events.pop_front()?;
        self.position += 1;
        Some(e)
    }

    /// Index the next started call gets.
    pub(crate) fn next_call_index(&mut self) -> u32 {
        let i = self.calls;
        self.calls += 1;
        i
    }

    pub(crate) fn diverge(&mut self, call: Option<u32>, actual: String) {
        if self.divergence.is_none() {
            let expected = describe(self.events.front());
            self.divergence = Some(Divergence { position: self.position, call, expected, actual });
        }
    }

    pub(crate) fn is_exhausted(&self) -> bool {
        self.events.is_empty()
    }

    /// What replay observed, once the block ended (a recording not used up
    /// is a divergence too).
    pub(crate) fn observation(mut self) -> ReplayObservation {
        if self.divergence.is_none() && !self.is_exhausted() {
            self.diverge(None, "the block ended".into());
        }
        ReplayObservation { divergence: self.divergence, unknown: self.unknown }
    }
}

/// Most boundary events recorded per evaluation (bounds the log's growth).
pub const MAX_RECORDED_EVENTS: usize = 1_000_000;

/// Most bytes of call inputs, results and messages recorded per evaluation:
/// a script cannot fill the store's disk with large inputs (each call's is
/// written before it runs, up to 64 MiB) or results.
pub const MAX_RECORDED_BYTES: usize = 1 << 30;

impl Event {
    /// The bytes of text this event adds to the log: a call's tool, input
    /// and schema fingerprint, a result's payload, an error's message (what
    /// [`MAX_RECORDED_BYTES`] counts).
    pub fn text_bytes(&self) -> usize {
        match self {
            Event::Call { tool, input, schema } => tool.len() + input.len() + schema.len(),
            Event::Done { payload, error_kind, .. } => payload.len() + error_kind.len(),
            Event::Refused { error_kind, message, .. } => error_kind.len() + message.len(),
            _ => 0,
        }
    }
}

/// What a [`Deck`] may ask of the host it serves: stopping the evaluation,
/// a console note, the live clock and randomness, and (for replay) the
/// in-flight calls and armed timers.
pub(crate) trait TapeHost {
    /// Whether the evaluation is already stopping.
    fn stopping(&self) -> bool;
    /// Ask the evaluation to stop (the first reason wins).
    fn stop(&mut self, reason: StopReason);
    /// A host note on the console (stderr).
    fn note(&mut self, text: &str);
    /// Whether a waiting guest must be answered `interrupted` now (a budget
    /// ran out, the evaluation was cancelled, or none is running).
    fn interrupted(&mut self) -> bool;
    /// The live clock: microseconds since the Unix epoch.
    fn live_now(&mut self) -> f64;
    /// 64 live random bits.
    fn live_random(&mut self) -> u64;
    /// The id of this evaluation's call #`index`, if it was started and not settled.
    fn call_id(&self, index: u32) -> Option<u32>;
    /// The oldest call still in flight.
    fn oldest_call(&self) -> Option<u32>;
    /// Forget call `id`; returns its index among this evaluation's calls
    /// (`u32::MAX` if unknown).
    fn settle(&mut self, id: u32) -> u32;
    /// Whether any timer is armed.
    fn timers_armed(&self) -> bool;
    /// Disarm timer `id`.
    fn disarm(&mut self, id: u32);
}

/// The tape's answer to "a call starts".
#[derive(Debug)]
pub(crate) enum Start {
    /// Run the call live; it is call #`index` of this evaluation.
    Run {
        /// Index among this evaluation's calls.
        index: u32,
    },
    /// The call is pending without running; its completion comes from the tape.
    Replayed {
        /// Index among this evaluation's calls.
        index: u32,
    },
    /// The call is refused and nothing runs.
    Refused(types::CallError),
}

/// The tape's answer to "what completes next?".
#[derive(Debug)]
pub(crate) enum Next {
    /// Wait for the live calls and timers.
    Live,
    /// This answer (`None`: nothing is pending).
    Answer(Option<types::Completion>),
}

/// One evaluation's tape strategy: record, replay, or neither. The defaults
/// are the live, unrecorded behaviour.
pub(crate) trait Deck: Send {
    /// The guest starts a call of `tool` with `input`; `fingerprint` gives the
    /// tool's schema fingerprint (asked only when recording).
    fn call_starts(
        &mut self,
        tool: &str,
        input: &str,
        fingerprint: &dyn Fn() -> String,
        host: &mut dyn TapeHost,
    ) -> Start;

    /// The handler refused call #`index` before it ran.
    fn call_refused(&mut self, _index: u32, _error: &types::CallError, _host: &mut dyn TapeHost) {}

    /// Call #`index` completed with `outcome` (about to be delivered).
    fn call_done(&mut self, _index: u32, _outcome: &Result<String, types::CallError>, _host: &mut dyn TapeHost) {}

    /// Timer `id` fired (about to be delivered).
    fn timer_fired(&mut self, _id: u32, _host: &mut dyn TapeHost) {}

    /// The guest reads the clock.
    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        host.live_now()
    }

    /// The guest draws random bits.
    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        host.live_random()
    }

    /// The guest waits for the next completion.
    fn next_completion(&mut self, _host: &mut dyn TapeHost) -> Next {
        Next::Live
    }

    /// The evaluation ended: what replay observed (`None` outside replay).
    fn finish(self: Box<Self>) -> Option<ReplayObservation> {
        None
    }
}

/// The strategy for one evaluation under `tape`.
pub(crate) fn load(tape: Tape) -> Box<dyn Deck> {
    match tape {
        Tape::Off => Box::new(Off::default()),
        Tape::Record(recorder) => Box::new(Recording::new(recorder)),
        Tape::Replay(events) => Box::new(Replaying { cursor: Cursor::new(events) }),
        Tape::Continue(c) => Box::new(Continuing {
            cursor: Cursor::new(c.prefix),
            rec: Recording::new(c.recorder),
            live: c.live_calls.into_iter().collect(),
            replayed: Default::default(),
        }),
    }
}

fn call_error(kind: &str, message: String) -> types::CallError {
    types::CallError { kind: kind.into(), message }
}

/// Live and unrecorded.
#[derive(Debug, Default)]
struct Off {
    calls: u32,
}

impl Deck for Off {
    fn call_starts(&mut self, _: &str, _: &str, _: &dyn Fn() -> String, _: &mut dyn TapeHost) -> Start {
        let index = self.calls;
        self.calls += 1;
        Start::Run { index }
    }
}

/// Live, every boundary event reported to the recorder.
struct Recording {
    recorder: Arc<dyn Recorder>,
    /// Calls started in this evaluation.
    calls: u32,
    /// Events recorded in this evaluation.
    recorded: usize,
    /// Bytes of text recorded in this evaluation (see [`Event::text_bytes`]).
    bytes: usize,
}

impl Recording {
    fn new(recorder: Arc<dyn Recorder>) -> Self {
        Self { recorder, calls: 0, recorded: 0, bytes: 0 }
    }

    /// Record `event`; past a per-evaluation limit (events or bytes), stop
    /// the evaluation (once, with a note) and record nothing.
    fn record(&mut self, event: Event, durable: bool, host: &mut dyn TapeHost) -> Result<(), RecordError> {
        self.recorded += 1;
        let limit = if self.recorded > MAX_RECORDED_EVENTS {
            Some((RecordError::LimitReached(MAX_RECORDED_EVENTS), format!("{MAX_RECORDED_EVENTS} events")))
        } else {
            let bytes = self.bytes.saturating_add(event.text_bytes());
            if bytes > MAX_RECORDED_BYTES {
                Some((RecordError::BytesLimitReached(MAX_RECORDED_BYTES), format!("{} MiB", MAX_RECORDED_BYTES >> 20)))
            } else {
                self.bytes = bytes;
                None
            }
        };
        if let Some((error, what)) = limit {
            if !host.stopping() {
                host.note(&format!(
                    "[wrepl] the replay log limit of {what} per evaluation was reached; the evaluation was stopped\n"
                ));
                host.stop(StopReason::Cancelled);
            }
            return Err(error);
        }
        self.recorder.record(event, durable)
    }
}

impl Deck for Recording {
    fn call_starts(
        &mut self,
        tool: &str,
        input: &str,
        fingerprint: &dyn Fn() -> String,
        host: &mut dyn TapeHost,
    ) -> Start {
        let index = self.calls;
        self.calls += 1;
        // The intent is durable BEFORE the call runs; without it, no call.
        let intent = Event::Call { tool: tool.to_string(), input: input.to_string(), schema: fingerprint() };
        if let Err(e) = self.record(intent, true, host) {
            return Start::Refused(call_error(
                "log-failure",
                format!("the call was not run because its intent could not be written to the replay log: {e}"),
            ));
        }
        Start::Run { index }
    }

    fn call_refused(&mut self, index: u32, error: &types::CallError, host: &mut dyn TapeHost) {
        let event = Event::Refused { call: index, error_kind: error.kind.clone(), message: error.message.clone() };
        let _ = self.record(event, false, host);
    }

    fn call_done(&mut self, index: u32, outcome: &Result<String, types::CallError>, host: &mut dyn TapeHost) {
        let event = match outcome {
            Ok(json) => Event::Done { call: index, ok: true, payload: json.clone(), error_kind: String::new() },
            Err(e) => Event::Done { call: index, ok: false, payload: e.message.clone(), error_kind: e.kind.clone() },
        };
        let _ = self.record(event, false, host);
    }

    fn timer_fired(&mut self, id: u32, host: &mut dyn TapeHost) {
        let _ = self.record(Event::Timer { id }, false, host);
    }

    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        let us = host.live_now();
        let _ = self.record(Event::Now { us }, false, host);
        us
    }

    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        let value = host.live_random();
        let _ = self.record(Event::Random { value }, false, host);
        value
    }
}

/// Answered from a block's recorded events; nothing runs.
struct Replaying {
    cursor: Cursor,
}

impl Replaying {
    /// The recording does not continue this way: note the divergence and stop.
    fn drift(&mut self, call: Option<u32>, actual: String, host: &mut dyn TapeHost) -> Next {
        self.cursor.diverge(call, actual);
        host.stop(StopReason::Cancelled);
        Next::Answer(Some(types::Completion::Interrupted))
    }
}

impl Deck for Replaying {
    fn call_starts(&mut self, tool: &str, _: &str, _: &dyn Fn() -> String, _: &mut dyn TapeHost) -> Start {
        let c = &mut self.cursor;
        let index = c.next_call_index();
        match c.peek() {
            Some(Event::Call { tool: t, .. }) if t == tool => {
                c.next();
            }
            _ => {
                c.diverge(Some(index), format!("call of {tool}"));
                // The call fails in the script (at its call site); nothing
                // beyond the recording runs.
                return Start::Refused(call_error(
                    "replay-drift",
                    format!("replay drift: this block did not make call #{index} ({tool}) when it was recorded; nothing was run"),
                ));
            }
        }
        if let Some(Event::Refused { call, .. }) = c.peek() {
            if *call == index {
                let Some(Event::Refused { error_kind, message, .. }) = c.next() else { unreachable!() };
                return Start::Refused(call_error(&error_kind, message));
            }
        }
        Start::Replayed { index }
    }

    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        if let Some(Event::Now { us }) = self.cursor.peek() {
            let us = *us;
            self.cursor.next();
            return us;
        }
        self.cursor.diverge(None, "a clock read".into());
        host.live_now()
    }

    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        if let Some(Event::Random { value }) = self.cursor.peek() {
            let value = *value;
            self.cursor.next();
            return value;
        }
        self.cursor.diverge(None, "a random draw".into());
        host.live_random()
    }

    fn next_completion(&mut self, host: &mut dyn TapeHost) -> Next {
        if host.interrupted() {
            return Next::Answer(Some(types::Completion::Interrupted));
        }
        match self.cursor.peek() {
            Some(Event::Done { call, .. }) => {
                let call = *call;
                let Some(id) = host.call_id(call) else {
                    return self.drift(Some(call), "a completion of a call that was not started".into(), host);
                };
                let Some(Event::Done { ok, payload, error_kind, .. }) = self.cursor.next() else { unreachable!() };
                host.settle(id);
                let outcome = if ok { Ok(payload) } else { Err(call_error(&error_kind, payload)) };
                Next::Answer(Some(types::Completion::Call(types::CallDone { id, outcome })))
            }
            Some(Event::Timer { id }) => {
                let id = *id;
                self.cursor.next();
                host.disarm(id);
                Next::Answer(Some(types::Completion::Timer(id)))
            }
            None => match host.oldest_call() {
                // The recording ends while calls were running: the process
                // died between intent and completion. Never re-run them.
                Some(id) => {
                    let index = host.settle(id);
                    self.cursor.unknown.push(index);
                    Next::Answer(Some(types::Completion::Call(types::CallDone {
                        id,
                        outcome: Err(call_error(
                            "outcome-unknown",
                            "outcome_unknown: the process that ran this call ended before it completed; whether it took effect is unknown, so it was not run again".into(),
                        )),
                    })))
                }
                None if !host.timers_armed() => Next::Answer(None),
                None => self.drift(None, "waiting for a completion".into(), host),
            },
            Some(_) => self.drift(None, "waiting for a completion".into(), host),
        }
    }

    fn finish(self: Box<Self>) -> Option<ReplayObservation> {
        Some(self.cursor.observation())
    }
}

/// A suspended block continued: its recording answers the guest (and is
/// recorded again, into the continuing block) until it is used up, except
/// the calls that waited for input, which run live now; then everything is
/// live and recorded. Calls the recording started but never completed
/// (other than the waiting ones) are answered `outcome_unknown`, never run.
struct Continuing {
    cursor: Cursor,
    rec: Recording,
    /// Call indices that run live although the recording has their intent.
    live: std::collections::BTreeSet<u32>,
    /// Replayed calls whose completion has not been delivered yet.
    replayed: std::collections::BTreeSet<u32>,
}

impl Continuing {
    /// A clock read or random draw: the recorded value (`recorded`, the
    /// next event's) again, re-recorded; past the recording a live one,
    /// recorded; anything else at this point is drift (then live).
    fn value<T>(
        &mut self,
        recorded: Option<T>,
        what: &str,
        host: &mut dyn TapeHost,
        live: impl FnOnce(&mut Recording, &mut dyn TapeHost) -> T,
    ) -> T {
        if let Some(v) = recorded {
            if let Some(event) = self.cursor.next() {
                let _ = self.rec.record(event, false, host);
            }
            return v;
        }
        if !self.cursor.is_exhausted() {
            self.cursor.diverge(None, what.into());
        }
        live(&mut self.rec, host)
    }

    fn drift(&mut self, call: Option<u32>, actual: String, host: &mut dyn TapeHost) -> Next {
        self.cursor.diverge(call, actual);
        host.stop(StopReason::Cancelled);
        Next::Answer(Some(types::Completion::Interrupted))
    }
}

impl Deck for Continuing {
    fn call_starts(
        &mut self,
        tool: &str,
        input: &str,
        fingerprint: &dyn Fn() -> String,
        host: &mut dyn TapeHost,
    ) -> Start {
        if self.cursor.divergence.is_some() {
            return Start::Refused(call_error(
                "replay-drift",
                format!("continuation drift: this block left its recording earlier; {tool} was not run"),
            ));
        }
        if self.cursor.is_exhausted() {
            return self.rec.call_starts(tool, input, fingerprint, host);
        }
        let index = self.cursor.next_call_index();
        self.rec.calls = index + 1;
        let recorded = match self.cursor.peek() {
            Some(Event::Call { tool: t, input: i, .. }) if t == tool && i == input => self.cursor.next(),
            _ => None,
        };
        let Some(intent) = recorded else {
            self.cursor.diverge(Some(index), format!("call of {tool}"));
            return Start::Refused(call_error(
                "replay-drift",
                format!(
                    "continuation drift: when this block was suspended it did not make call #{index} ({tool}) with \
                     this input here; nothing was run"
                ),
            ));
        };
        if let Err(e) = self.rec.record(intent, true, host) {
            return Start::Refused(call_error(
                "log-failure",
                format!("the call was not run because its intent could not be written to the replay log: {e}"),
            ));
        }
        if self.live.contains(&index) {
            return Start::Run { index };
        }
        if let Some(Event::Refused { call, .. }) = self.cursor.peek() {
            if *call == index {
                let Some(refused @ Event::Refused { .. }) = self.cursor.next() else { unreachable!() };
                let Event::Refused { error_kind, message, .. } = refused.clone() else { unreachable!() };
                let _ = self.rec.record(refused, false, host);
                return Start::Refused(call_error(&error_kind, message));
            }
        }
        self.replayed.insert(index);
        Start::Replayed { index }
    }

    fn call_refused(&mut self, index: u32, error: &types::CallError, host: &mut dyn TapeHost) {
        self.rec.call_refused(index, error, host);
    }

    fn call_done(&mut self, index: u32, outcome: &Result<String, types::CallError>, host: &mut dyn TapeHost) {
        self.rec.call_done(index, outcome, host);
    }

    fn timer_fired(&mut self, id: u32, host: &mut dyn TapeHost) {
        self.rec.timer_fired(id, host);
    }

    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        let recorded = match self.cursor.peek() {
            Some(Event::Now { us }) => Some(*us),
            _ => None,
        };
        self.value(recorded, "a clock read", host, |rec, host| rec.now(host))
    }

    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        let recorded = match self.cursor.peek() {
            Some(Event::Random { value }) => Some(*value),
            _ => None,
        };
        self.value(recorded, "a random draw", host, |rec, host| rec.random(host))
    }

    fn next_completion(&mut self, host: &mut dyn TapeHost) -> Next {
        if host.interrupted() {
            return Next::Answer(Some(types::Completion::Interrupted));
        }
        if self.cursor.divergence.is_some() {
            return self.drift(None, "waiting for a completion".into(), host);
        }
        match self.cursor.peek() {
            Some(Event::Done { call, .. }) => {
                let call = *call;
                if self.live.contains(&call) || !self.replayed.contains(&call) {
                    return self.drift(Some(call), "a completion of a call that was not started".into(), host);
                }
                let Some(id) = host.call_id(call) else {
                    return self.drift(Some(call), "a completion of a call that was not started".into(), host);
                };
                let Some(done) = self.cursor.next() else { unreachable!() };
                let Event::Done { ok, payload, error_kind, .. } = done.clone() else { unreachable!() };
                let _ = self.rec.record(done, false, host);
                host.settle(id);
                self.replayed.remove(&call);
                let outcome = if ok { Ok(payload) } else { Err(call_error(&error_kind, payload)) };
                Next::Answer(Some(types::Completion::Call(types::CallDone { id, outcome })))
            }
            Some(Event::Timer { id }) => {
                let id = *id;
                let Some(timer) = self.cursor.next() else { unreachable!() };
                let _ = self.rec.record(timer, false, host);
                host.disarm(id);
                Next::Answer(Some(types::Completion::Timer(id)))
            }
            None => {
                // The recording is used up. Replayed calls it never completed
                // were running when the block was suspended: never re-run them.
                while let Some(index) = self.replayed.pop_first() {
                    let Some(id) = host.call_id(index) else { continue };
                    host.settle(id);
                    self.cursor.unknown.push(index);
                    let outcome = Err(call_error(
                        "outcome-unknown",
                        "outcome_unknown: this call was running when its block was suspended for input; whether it took effect is unknown, so it was not run again".into(),
                    ));
                    self.rec.call_done(index, &outcome, host);
                    return Next::Answer(Some(types::Completion::Call(types::CallDone { id, outcome })));
                }
                Next::Live
            }
            Some(_) => self.drift(None, "waiting for a completion".into(), host),
        }
    }

    fn finish(self: Box<Self>) -> Option<ReplayObservation> {
        Some(self.cursor.observation())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A host with calls `ids` in flight (id → index) and a console.
    #[derive(Default)]
    struct FakeHost {
        stop: Option<StopReason>,
        notes: String,
        calls: Vec<(u32, u32)>,
        timers: Vec<u32>,
    }

    impl TapeHost for FakeHost {
        fn stopping(&self) -> bool {
            self.stop.is_some()
        }
        fn stop(&mut self, reason: StopReason) {
            self.stop.get_or_insert(reason);
        }
        fn note(&mut self, text: &str) {
            self.notes.push_str(text);
        }
        fn interrupted(&mut self) -> bool {
            self.stop.is_some()
        }
        fn live_now(&mut self) -> f64 {
            7.0
        }
        fn live_random(&mut self) -> u64 {
            9
        }
        fn call_id(&self, index: u32) -> Option<u32> {
            self.calls.iter().find(|(_, i)| *i == index).map(|(id, _)| *id)
        }
        fn oldest_call(&self) -> Option<u32> {
            self.calls.iter().map(|(id, _)| *id).min()
        }
        fn settle(&mut self, id: u32) -> u32 {
            let at = self.calls.iter().position(|(i, _)| *i == id);
            at.map(|at| self.calls.remove(at).1).unwrap_or(u32::MAX)
        }
        fn timers_armed(&self) -> bool {
            !self.timers.is_empty()
        }
        fn disarm(&mut self, id: u32) {
            self.timers.retain(|t| *t != id);
        }
    }

    /// Keeps (event, durable); fails every write when `fail`.
    #[derive(Default)]
    struct Log {
        events: Mutex<Vec<(Event, bool)>>,
        fail: bool,
    }

    impl Recorder for Log {
        fn record(&self, event: Event, durable: bool) -> Result<(), RecordError> {
            if self.fail {
                return Err(RecordError::Storage("disk full".into()));
            }
            self.events.lock().unwrap().push((event, durable));
            Ok(())
        }
    }

    fn call(tool: &str) -> Event {
        Event::Call { tool: tool.into(), input: "{}".into(), schema: String::new() }
    }

    #[test]
    fn recording_writes_the_intent_durably_and_refuses_when_it_cannot() {
        let log = Arc::new(Log::default());
        let mut deck = load(Tape::Record(log.clone()));
        let mut host = FakeHost::default();
        let start = deck.call_starts("t", "{}", &|| "fp".into(), &mut host);
        assert!(matches!(start, Start::Run { index: 0 }));
        let events = log.events.lock().unwrap().clone();
        assert_eq!(events, vec![(Event::Call { tool: "t".into(), input: "{}".into(), schema: "fp".into() }, true)]);

        let mut deck = load(Tape::Record(Arc::new(Log { fail: true, ..Log::default() })));
        let Start::Refused(e) = deck.call_starts("t", "{}", &String::new, &mut host) else { panic!("ran") };
        assert_eq!(e.kind, "log-failure");
        assert_eq!(
            e.message,
            "the call was not run because its intent could not be written to the replay log: the session log could not be written: disk full"
        );
    }

    #[test]
    fn the_event_limit_stops_the_evaluation_once_with_a_note() {
        let log = Arc::new(Log::default());
        let mut deck = Recording { recorded: MAX_RECORDED_EVENTS - 1, ..Recording::new(log.clone()) };
        let mut host = FakeHost::default();
        assert_eq!(deck.now(&mut host), 7.0);
        assert!(host.stop.is_none());
        assert_eq!(deck.random(&mut host), 9);
        assert_eq!(host.stop, Some(StopReason::Cancelled));
        deck.timer_fired(1, &mut host);
        assert_eq!(host.notes.matches("replay log limit").count(), 1);
        assert_eq!(log.events.lock().unwrap().len(), 1);
        let Start::Refused(e) = deck.call_starts("t", "{}", &String::new, &mut host) else { panic!("ran") };
        assert_eq!(e.kind, "log-failure");
    }

    #[test]
    fn the_byte_limit_stops_the_evaluation_before_the_input_is_written() {
        let log = Arc::new(Log::default());
        let mut deck = Recording { bytes: MAX_RECORDED_BYTES - 100, ..Recording::new(log.clone()) };
        let mut host = FakeHost::default();
        // A call whose input fits is written, and runs.
        let input = "x".repeat(80);
        assert!(matches!(deck.call_starts("t", &input, &String::new, &mut host), Start::Run { index: 0 }));
        assert!(host.stop.is_none());
        // One that does not is refused before anything is written.
        let Start::Refused(e) = deck.call_starts("t", &input, &String::new, &mut host) else { panic!("ran") };
        assert_eq!(e.kind, "log-failure");
        assert!(e.message.contains("1024 MiB"), "{}", e.message);
        assert_eq!(host.stop, Some(StopReason::Cancelled));
        assert_eq!(host.notes.matches("replay log limit of 1024 MiB").count(), 1);
        assert_eq!(log.events.lock().unwrap().len(), 1);
        // Events with no text (the clock) are still written while it stops.
        assert_eq!(deck.now(&mut host), 7.0);
        assert_eq!(log.events.lock().unwrap().len(), 2);
    }

    #[test]
    fn off_asks_for_no_fingerprint() {
        let mut deck = load(Tape::Off);
        let mut host = FakeHost::default();
        let start = deck.call_starts("t", "{}", &|| panic!("fingerprint asked"), &mut host);
        assert!(matches!(start, Start::Run { index: 0 }));
        assert!(matches!(deck.next_completion(&mut host), Next::Live));
        assert!(deck.finish().is_none());
    }

    #[test]
    fn replay_answers_from_the_recording_and_marks_drift() {
        let refused = Event::Refused { call: 1, error_kind: "denied".into(), message: "no".into() };
        let done = Event::Done { call: 0, ok: true, payload: "1".into(), error_kind: String::new() };
        let events = vec![call("a"), call("b"), refused, Event::Now { us: 3.0 }, done, call("c")];
        let mut deck = load(Tape::Replay(events));
        let mut host = FakeHost::default();
        assert!(matches!(deck.call_starts("a", "", &String::new, &mut host), Start::Replayed { index: 0 }));
        host.calls.push((5, 0));
        let Start::Refused(e) = deck.call_starts("b", "", &String::new, &mut host) else { panic!("ran") };
        assert_eq!((e.kind.as_str(), e.message.as_str()), ("denied", "no"));
        assert_eq!(deck.now(&mut host), 3.0);
        let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
        assert_eq!((d.id, d.outcome.ok()), (5, Some("1".to_string())));
        assert!(host.calls.is_empty());
        assert!(matches!(deck.call_starts("c", "", &String::new, &mut host), Start::Replayed { index: 2 }));
        host.calls.push((6, 2));
        let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
        assert_eq!(d.outcome.unwrap_err().kind, "outcome-unknown");
        assert!(matches!(deck.next_completion(&mut host), Next::Answer(None)));
        let Start::Refused(e) = deck.call_starts("d", "", &String::new, &mut host) else { panic!("ran") };
        assert_eq!(e.kind, "replay-drift");
        let seen = deck.finish().expect("replay observes");
        assert_eq!(seen.unknown, vec![2]);
        let divergence = seen.divergence.expect("diverged");
        assert_eq!((divergence.position, divergence.call), (6, Some(3)));
        assert_eq!(divergence.actual, "call of d");
        assert!(host.stop.is_none());
    }

    #[test]
    fn a_continuation_replays_the_prefix_runs_the_waiting_call_and_records_the_whole_block() {
        // Recorded: a (done), b (ran when the block stopped: no outcome), c (waiting for input).
        let done = Event::Done { call: 0, ok: true, payload: "1".into(), error_kind: String::new() };
        let prefix = vec![call("a"), Event::Random { value: 4 }, done.clone(), call("b"), call("c")];
        let log = Arc::new(Log::default());
        let mut deck = load(Tape::Continue(Continuation { prefix, live_calls: vec![2], recorder: log.clone() }));
        let mut host = FakeHost::default();
        assert!(matches!(deck.call_starts("a", "{}", &String::new, &mut host), Start::Replayed { index: 0 }));
        host.calls.push((1, 0));
        assert_eq!(deck.random(&mut host), 4, "randomness comes from the recording");
        let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
        assert_eq!((d.id, d.outcome.ok()), (1, Some("1".to_string())));
        assert!(matches!(deck.call_starts("b", "{}", &String::new, &mut host), Start::Replayed { index: 1 }));
        host.calls.push((2, 1));
        // The waiting call runs live now.
        assert!(matches!(deck.call_starts("c", "{}", &String::new, &mut host), Start::Run { index: 2 }));
        host.calls.push((3, 2));
        // The recording is used up: b is answered outcome_unknown (never re-run), then live.
        let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
        assert_eq!((d.id, d.outcome.unwrap_err().kind.as_str()), (2, "outcome-unknown"));
        assert!(matches!(deck.next_completion(&mut host), Next::Live));
        deck.call_done(2, &Ok("\"c\"".into()), &mut host);
        // After the prefix, new calls run live and are recorded.
        assert!(matches!(deck.call_starts("d", "{}", &|| "fp".into(), &mut host), Start::Run { index: 3 }));
        assert_eq!(deck.now(&mut host), 7.0);
        let seen = deck.finish().expect("a continuation observes");
        assert!(seen.divergence.is_none(), "{:?}", seen.divergence);
        assert_eq!(seen.unknown, vec![1]);
        let events: Vec<Event> = log.events.lock().unwrap().iter().map(|(e, _)| e.clone()).collect();
        let unknown = Event::Done {
            call: 1,
            ok: false,
            payload: "outcome_unknown: this call was running when its block was suspended for input; whether it took effect is unknown, so it was not run again".into(),
            error_kind: "outcome-unknown".into(),
        };
        let c_done = Event::Done { call: 2, ok: true, payload: "\"c\"".into(), error_kind: String::new() };
        let d = Event::Call { tool: "d".into(), input: "{}".into(), schema: "fp".into() };
        assert_eq!(
            events,
            vec![
                call("a"),
                Event::Random { value: 4 },
                done,
                call("b"),
                call("c"),
                unknown,
                c_done,
                d,
                Event::Now { us: 7.0 }
            ]
        );
    }

    #[test]
    fn a_continuation_that_leaves_its_recording_runs_nothing_more() {
        let prefix = vec![call("a"), call("c")];
        let log = Arc::new(Log::default());
        let mut deck = load(Tape::Continue(Continuation { prefix, live_calls: vec![1], recorder: log }));
        let mut host = FakeHost::default();
        // Another input than recorded: drift, refused.
        let Start::Refused(e) = deck.call_starts("a", "{\"x\":1}", &String::new, &mut host) else { panic!("ran") };
        assert_eq!(e.kind, "replay-drift");
        // Nothing after the drift runs, not even the waiting call.
        let Start::Refused(e) = deck.call_starts("c", "{}", &String::new, &mut host) else { panic!("ran") };
        assert_eq!(e.kind, "replay-drift");
        assert!(matches!(deck.next_completion(&mut host), Next::Answer(Some(types::Completion::Interrupted))));
        assert!(deck.finish().unwrap().divergence.is_some());
    }
}
