//! Verifying a session: its chain recomputed from its rows and compared
//! with the recorded head, and the report for events without a session.

use super::super::chain::link_hash;
use super::super::log::{Event, StoredEvent};
use super::super::store::{BadLink, Head, VerifyReport};

/// The first 12 bytes of a stored hash, for messages (a forged one may hold
/// anything, so the cut lands on a char boundary and is shown escaped).
pub(super) fn short_hash(h: &str) -> &str {
    crate::text::prefix(h, 12)
}

/// The verification of a session the store does not list: fine when no
/// events name it, else broken (its record was removed, its events remain).
pub(in crate::replay) fn orphans_report(orphans: i64) -> VerifyReport {
    if orphans <= 0 {
        return VerifyReport { events: 0, ok: true, first_bad: None };
    }
    VerifyReport {
        events: orphans as u64,
        ok: false,
        first_bad: Some(BadLink {
            seq: 0,
            reason: format!(
                "{orphans} stored events belong to a session the store does not list (its record was removed)"
            ),
        }),
    }
}

/// Recompute a session's chain from its rows (seq, block, JSON, hash) in
/// `seq` order and compare the newest with the recorded `head`: the first
/// broken link, as [`LogStore::verify`] reports it; with `keep`, also the
/// decoded events of a log that verifies (each row is read and decoded
/// once: resume needs both).
pub(in crate::replay) fn check_and_decode(
    rows: impl ExactSizeIterator<Item = (i64, i64, String, String)>,
    head: Head,
    keep: bool,
) -> (VerifyReport, Vec<StoredEvent>) {
    let events = rows.len() as u64;
    let bad = |seq: u64, reason: String| {
        (VerifyReport { events, ok: false, first_bad: Some(BadLink { seq, reason }) }, Vec::new())
    };
    let mut decoded = Vec::with_capacity(if keep { rows.len() } else { 0 });
    let mut prev_hash = String::new();
    let mut prev_block: Option<u64> = None;
    for (expected, (seq, block, json, hash)) in (0u64..).zip(rows) {
        if seq != expected as i64 {
            return bad(expected, format!("sequence gap: expected seq {expected}, found {seq}"));
        }
        let Ok(block) = u64::try_from(block) else {
            return bad(expected, format!("negative block number {block}"));
        };
        if let Some(prev) = prev_block.filter(|prev| block < *prev) {
            return bad(expected, format!("block number goes backwards ({prev} -> {block})"));
        }
        let event = match serde_json::from_str::<Event>(&json) {
            Ok(e) => e,
            Err(e) => return bad(expected, format!("undecodable event JSON: {e}")),
        };
        let computed = link_hash(&prev_hash, block, expected, &json);
        if computed != hash {
            return bad(expected, format!("hash mismatch: stored {hash}, computed {computed}"));
        }
        prev_block = Some(block);
        if keep {
            decoded.push(StoredEvent { block, seq: expected, event, hash: hash.clone() });
        }
        prev_hash = hash;
    }
    if head.events != events || head.hash != prev_hash {
        return bad(
            events.min(head.events),
            format!(
                "the session's recorded head says {} events ending in {:?}, the log has {events} ending in {:?}: its newest events were removed or altered",
                head.events,
                short_hash(&head.hash),
                short_hash(&prev_hash)
            ),
        );
    }
    (VerifyReport { events, ok: true, first_bad: None }, decoded)
}
