//! Recording and replaying the WIT boundary. In record mode every answer the
//! guest gets from the outside (call results, timers, clock, randomness) is
//! reported to a [`Recorder`]; intents of inner calls durably BEFORE they
//! run. In replay mode every import is answered from a block's recorded
//! events instead, so no tool, shell, file or model call runs again.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

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
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tape::Off => f.write_str("Off"),
            Tape::Record(_) => f.write_str("Record"),
            Tape::Replay(e) => write!(f, "Replay({} events)", e.len()),
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
}
