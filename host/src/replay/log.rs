//! The replay log's data model: one append-only stream of events per
//! session, recorded at the WIT boundary. Everything the guest learned from
//! the outside world is here, so re-evaluating the code with these answers
//! rebuilds the same state without running any side effect again.

use serde::{Deserialize, Serialize};

/// Version of the event encoding; stored with each session.
pub const LOG_VERSION: u32 = 1;

pub use crate::runtime::Event;

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
