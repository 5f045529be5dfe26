//! The hash chain every backend stores: each event's link hash covers the
//! previous link, its position and its canonical JSON text.
//!
//! Every stored event carries
//!
//! ```text
//! hash = hex(sha256(prev_hash || block || ":" || seq || ":" || canonical_json(event)))
//! ```
//!
//! where `prev_hash` is the previous event's hash as its 64 lowercase hex
//! characters (the empty string for `seq` 0), `block` and `seq` are written in
//! decimal ASCII, and `canonical_json(event)` is `serde_json::to_string(&event)`
//! (compact, fields in declaration order with `kind` first). That exact text is
//! what the `events.json` column holds, so [`LogStore::verify`] recomputes the
//! chain from the stored text without re-encoding.
//!

use sha2::{Digest, Sha256};

use crate::call::to_hex;

use super::log::Event;
use super::store::StoreError;

/// The canonical JSON text of an event: `serde_json::to_string(event)`.
pub fn canonical_json(event: &Event) -> Result<String, StoreError> {
    Ok(serde_json::to_string(event)?)
}

/// One link of the hash chain (see the module documentation):
/// `hex(sha256(prev_hash || block || ":" || seq || ":" || json))`.
pub fn link_hash(prev_hash: &str, block: u64, seq: u64, json: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev_hash.as_bytes());
    hasher.update(block.to_string().as_bytes());
    hasher.update(b":");
    hasher.update(seq.to_string().as_bytes());
    hasher.update(b":");
    hasher.update(json.as_bytes());
    to_hex(&hasher.finalize())
}
