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

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::bindings::wrepl::sandbox::types;
use super::budget::StopReason;
use crate::call::FailureKind;

mod continuing;
mod cursor;
mod recording;
mod replaying;
#[cfg(test)]
mod tests;

use continuing::Continuing;
pub(crate) use cursor::Cursor;
use recording::{Off, Recording};
use replaying::Replaying;

/// How an evaluation's result is shown: for the model (the guest's `eval`),
/// or for a person at a terminal (`eval-inspect`: node's util.inspect, `_`
/// and `_error` kept). Recorded with each block, since the terminal view
/// changes the context (`_`): replay evaluates the block the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// The model's rendering (`eval`).
    #[default]
    Model,
    /// The terminal's, without colours.
    Terminal,
    /// The terminal's, with ANSI colours.
    TerminalColors,
}

impl View {
    /// True for [`View::Model`] (left out of the log, as in logs written
    /// before views were).
    pub fn is_model(&self) -> bool {
        *self == View::Model
    }
}

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
        /// How its result was shown (absent: for the model).
        #[serde(default, skip_serializing_if = "View::is_model")]
        view: View,
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
        /// When it started, in milliseconds from the start of the block
        /// (absent in logs written before this was).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<f64>,
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
        /// How long the call took, in milliseconds (absent in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms: Option<f64>,
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
        /// What the block cost (absent in logs written before costs were).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<crate::runtime::Cost>,
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
    /// A snapshot of the context was stored after this event's block (its
    /// state once that block ended). Written between blocks, not part of
    /// any evaluation's tape; the snapshot itself is stored beside the log,
    /// sealed with the store's key, and is only loaded when all of these
    /// match.
    Snapshot {
        /// SHA-256 (hex) of the state it holds; replay reaching this block
        /// must arrive at the same digest.
        state: String,
        /// SHA-256 (hex) of the stored bytes.
        digest: String,
        /// SHA-256 (hex) of the guest component that took it.
        guest: String,
        /// The wasmtime version that ran it.
        wasmtime: String,
        /// SHA-256 (hex) of the sandbox configuration it was taken under.
        config: String,
        /// Bytes stored.
        bytes: u64,
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
            Event::Call { tool, input, schema, .. } => tool.len() + input.len() + schema.len(),
            Event::Done { payload, error_kind, .. } => payload.len() + error_kind.len(),
            Event::Refused { error_kind, message, .. } => error_kind.len() + message.len(),
            _ => 0,
        }
    }
}

/// What a call's recorded intent needs from the call handler.
pub(crate) struct Intent {
    /// The tool's schema fingerprint.
    pub(crate) fingerprint: String,
    /// Whether the intent must be durable before the call runs (see
    /// `CallHandler::durable_intent`).
    pub(crate) durable: bool,
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
    /// Milliseconds since the evaluation began (for the log's timings).
    fn elapsed_ms(&self) -> f64 {
        0.0
    }
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
    /// The guest starts a call of `tool` with `input`; `intent` gives what
    /// its recorded intent needs of the handler (asked only when recording).
    fn call_starts(&mut self, tool: &str, input: &str, intent: &dyn Fn() -> Intent, host: &mut dyn TapeHost) -> Start;

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

/// A failure the tape itself decides (drift, a log failure, an unknown
/// outcome).
fn call_error(kind: FailureKind, message: String) -> types::CallError {
    types::CallError { kind: kind.as_str().into(), message }
}

/// A failure as the log recorded it (its kind as recorded: the log is read
/// back as it was written).
fn recorded_error(kind: &str, message: String) -> types::CallError {
    types::CallError { kind: kind.into(), message }
}
