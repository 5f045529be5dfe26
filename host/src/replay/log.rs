//! The replay log's data model: one append-only stream of events per
//! session, recorded at the WIT boundary. Everything the guest learned from
//! the outside world is here, so re-evaluating the code with these answers
//! rebuilds the same state without running any side effect again.

use serde::{Deserialize, Serialize};

/// Version of the event encoding; stored with each session.
pub const LOG_VERSION: u32 = 1;

/// One event of a session's log.
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

/// An event as stored: where it is and the hash chain link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Block number within the session (0-based).
    pub block: u64,
    /// Position within the session's stream (0-based, gapless).
    pub seq: u64,
    /// The event.
    pub event: Event,
    /// Hex SHA-256 of (previous hash, block, seq, canonical event JSON).
    pub hash: String,
}
