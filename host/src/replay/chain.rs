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

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

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

/// Fingerprint of a tool's input schema: the first 16 hex characters of the
/// SHA-256 of `serde_json::to_string(schema)`.
pub fn fingerprint(schema: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    let text = serde_json::to_string(schema).unwrap_or_default();
    let mut hex = to_hex(&Sha256::digest(text.as_bytes()));
    hex.truncate(16);
    hex
}

pub(super) fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_short_and_stable() {
        let a = fingerprint(&serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}}));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, fingerprint(&serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}})));
        assert_ne!(a, fingerprint(&serde_json::json!({"type": "object"})));
        // sha256("null")
        assert_eq!(fingerprint(&serde_json::Value::Null), "74234e98afe7498f");
    }
}
