//! Appending events: the chain continued after the newest row, which must
//! be the session's recorded head, and the head moved.

use rusqlite::{params, OptionalExtension, Transaction};

use super::super::chain::{canonical_json, link_hash};
use super::super::log::{Event, StoredEvent, LOG_VERSION};
use super::super::store::{now_ms, Head, StoreError};
use super::rows::{read_head, session_log_version, to_u64};
use super::verify::short_hash;

/// Events with their canonical JSON, encoded before any lock is taken.
pub(in crate::replay) fn encode(events: &[(u64, Event)]) -> Result<Vec<(u64, String, &Event)>, StoreError> {
    events.iter().map(|(block, event)| Ok((*block, canonical_json(event)?, event))).collect()
}

/// Events with their canonical JSON, owned (for a write another thread may
/// carry out: see the group commit in `log_store`).
pub(super) fn encode_owned(events: &[(u64, Event)]) -> Result<Vec<(u64, String, Event)>, StoreError> {
    events.iter().map(|(block, event)| Ok((*block, canonical_json(event)?, event.clone()))).collect()
}

/// Append inside an open write transaction: continue the chain after the
/// newest row, which must be the recorded head (a log whose newest rows are
/// gone is not extended), then move the head.
pub(super) fn append_in(
    tx: &Transaction<'_>,
    session: &str,
    encoded: Vec<(u64, String, Event)>,
) -> Result<Vec<StoredEvent>, StoreError> {
    if session_log_version(tx, session)?.is_none() {
        tx.prepare_cached("INSERT INTO sessions(name, created_at_ms, log_version) VALUES (?1, ?2, ?3)")?
            .execute(params![session, i64::try_from(now_ms()).unwrap_or(i64::MAX), i64::from(LOG_VERSION)])?;
    }
    let head = read_head(tx, session)?.unwrap_or(Head { events: 0, hash: String::new() });
    let last: Option<(i64, i64, Option<String>)> = tx
        .prepare_cached("SELECT seq, block, hash FROM events WHERE session = ?1 ORDER BY seq DESC LIMIT 1")?
        .query_row([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let (mut seq, mut prev_block, mut prev_hash) = match last {
        None => (0u64, None, String::new()),
        Some((seq, block, hash)) => {
            let seq = to_u64(seq, session, None, "seq")?;
            let block = to_u64(block, session, Some(seq), "block")?;
            let next = seq.checked_add(1).ok_or_else(|| StoreError::Corrupt {
                session: session.to_string(),
                seq: Some(seq),
                reason: "sequence number exhausted".into(),
            })?;
            (next, Some(block), hash.unwrap_or_default())
        }
    };
    newest_matches_head(session, seq, &prev_hash, &head)?;
    let mut stored = Vec::with_capacity(encoded.len());
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO events(session, seq, block, json, hash) VALUES (?1, ?2, ?3, ?4, ?5)")?;
        for (block, json, event) in encoded {
            let invalid = |reason: String| StoreError::InvalidBlock { session: session.to_string(), block, reason };
            if let Some(prev) = prev_block.filter(|prev| block < *prev) {
                return Err(invalid(format!("goes backwards (previous event is in block {prev})")));
            }
            let block_sql = i64::try_from(block).map_err(|_| invalid("exceeds i64::MAX".into()))?;
            let seq_sql = i64::try_from(seq).map_err(|_| StoreError::Corrupt {
                session: session.to_string(),
                seq: Some(seq),
                reason: "sequence number exhausted".into(),
            })?;
            let hash = link_hash(&prev_hash, block, seq, &json);
            insert.execute(params![session, seq_sql, block_sql, json, hash])?;
            stored.push(StoredEvent { block, seq, event, hash: hash.clone() });
            prev_hash = hash;
            prev_block = Some(block);
            seq += 1;
        }
    }
    tx.prepare_cached("UPDATE sessions SET head_events = ?1, head_hash = ?2 WHERE name = ?3")?.execute(params![
        i64::try_from(seq).unwrap_or(i64::MAX),
        prev_hash,
        session
    ])?;
    Ok(stored)
}

/// An append continues the chain only when the newest stored event (the
/// next `seq`, and `prev_hash`) is the session's recorded head: a log whose
/// newest rows are gone is not extended.
pub(in crate::replay) fn newest_matches_head(
    session: &str,
    seq: u64,
    prev_hash: &str,
    head: &Head,
) -> Result<(), StoreError> {
    if head.events == seq && head.hash == prev_hash {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        session: session.to_string(),
        seq: Some(seq),
        reason: format!(
            "the newest stored event does not match the session's recorded head ({} events ending in {:?}, found {seq}); the log was truncated or altered",
            head.events,
            short_hash(&head.hash)
        ),
    })
}
