//! Appending events: in one round trip from the head this writer left, or
//! in the session's write transaction with the same checks and chain as
//! SQLite.

use postgres::types::Type;
use postgres::Transaction;

use super::super::chain::link_hash;
use super::super::log::{Event, StoredEvent, LOG_VERSION};
use super::super::sqlite::{encode, newest_matches_head};
use super::super::store::{now_ms, Head, StoreError};
use super::rows::{log_version, read_head, to_u64};
use super::{db, PostgresStore};

impl PostgresStore {
    pub(super) fn forget_head(&self, session: &str) {
        self.heads.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
    }

    /// A leased append in one round trip, from the head this writer left:
    /// `None` when it cannot be (nothing known, or the database says the
    /// lease or the head moved): then the full transaction decides.
    /// With `release`, the lease is given back in the same transaction.
    pub(super) fn append_fast(
        &self,
        session: &str,
        owner_id: &str,
        encoded: &[(u64, String, Event)],
        release: bool,
    ) -> Result<Option<Vec<StoredEvent>>, StoreError> {
        let known = self.heads.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned();
        let Some((events, head_hash, last_block)) = known else { return Ok(None) };
        if (encoded.is_empty() && !release)
            || encoded.iter().any(|(b, ..)| *b < last_block || i64::try_from(*b).is_err())
        {
            return Ok(None);
        }
        let (mut prev, mut seq) = (head_hash.clone(), events);
        let mut stored = Vec::with_capacity(encoded.len());
        let (mut seqs, mut blocks, mut jsons, mut hashes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut prev_block = last_block;
        for (block, json, event) in encoded {
            if *block < prev_block {
                return Ok(None);
            }
            let hash = link_hash(&prev, *block, seq, json);
            seqs.push(seq as i64);
            blocks.push(*block as i64);
            jsons.push(json.clone());
            hashes.push(hash.clone());
            stored.push(StoredEvent { block: *block, seq, event: event.clone(), hash: hash.clone() });
            prev = hash;
            prev_block = *block;
            seq += 1;
        }
        let (s, o, h) = (session.to_string(), owner_id.to_string(), head_hash);
        let verdict = self.run(move |c| {
            let row = c
                .query_typed_one(
                    "SELECT wrepl_append_leased($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    &[
                        (&s, Type::TEXT),
                        (&o, Type::TEXT),
                        (&(events as i64), Type::INT8),
                        (&h, Type::TEXT),
                        (&seqs, Type::INT8_ARRAY),
                        (&blocks, Type::INT8_ARRAY),
                        (&jsons, Type::TEXT_ARRAY),
                        (&hashes, Type::TEXT_ARRAY),
                        (&release, Type::BOOL),
                    ],
                )
                .map_err(db)?;
            Ok(row.get::<_, String>(0))
        });
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        match verdict {
            Ok(v) if v == "ok" => {
                heads.insert(session.to_string(), (seq, prev, prev_block));
                Ok(Some(stored))
            }
            // The lease or the head moved: the full transaction says how.
            Ok(_) => {
                heads.remove(session);
                Ok(None)
            }
            Err(e) => {
                heads.remove(session);
                Err(e)
            }
        }
    }
}

/// Append inside the session's write transaction (see the SQLite backend:
/// the same checks, the same chain).
pub(super) fn append_in(
    tx: &mut Transaction<'_>,
    session: &str,
    encoded: Vec<(u64, String, Event)>,
) -> Result<Vec<StoredEvent>, StoreError> {
    if log_version(tx, session)?.is_none() {
        tx.execute(
            "INSERT INTO wrepl_sessions(name, created_at_ms, log_version) VALUES ($1, $2, $3)",
            &[&session, &(now_ms() as i64), &(LOG_VERSION as i32)],
        )
        .map_err(db)?;
    }
    let head = read_head(tx, session)?.unwrap_or(Head { events: 0, hash: String::new() });
    let last = tx
        .query_opt(
            "SELECT seq, block, hash FROM wrepl_events WHERE session = $1 ORDER BY seq DESC LIMIT 1",
            &[&session],
        )
        .map_err(db)?;
    let (mut seq, mut prev_block, mut prev_hash) = match last {
        None => (0u64, None, String::new()),
        Some(r) => {
            let seq = to_u64(r.get(0), session, None, "seq")?;
            let block = to_u64(r.get(1), session, Some(seq), "block")?;
            (seq + 1, Some(block), r.get::<_, String>(2))
        }
    };
    newest_matches_head(session, seq, &prev_hash, &head)?;
    let insert = tx
        .prepare("INSERT INTO wrepl_events(session, seq, block, json, hash) VALUES ($1, $2, $3, $4, $5)")
        .map_err(db)?;
    let mut stored = Vec::with_capacity(encoded.len());
    for (block, json, event) in encoded {
        let invalid = |reason: String| StoreError::InvalidBlock { session: session.to_string(), block, reason };
        if let Some(prev) = prev_block.filter(|prev| block < *prev) {
            return Err(invalid(format!("goes backwards (previous event is in block {prev})")));
        }
        let block_sql = i64::try_from(block).map_err(|_| invalid("exceeds i64::MAX".into()))?;
        let hash = link_hash(&prev_hash, block, seq, &json);
        tx.execute(&insert, &[&session, &(seq as i64), &block_sql, &json, &hash]).map_err(db)?;
        stored.push(StoredEvent { block, seq, event, hash: hash.clone() });
        prev_hash = hash;
        prev_block = Some(block);
        seq += 1;
    }
    tx.execute(
        "UPDATE wrepl_sessions SET head_events = $1, head_hash = $2 WHERE name = $3",
        &[&(seq as i64), &prev_hash, &session],
    )
    .map_err(db)?;
    Ok(stored)
}

pub(super) fn owned(events: &[(u64, Event)]) -> Result<Vec<(u64, String, Event)>, StoreError> {
    Ok(encode(events)?.into_iter().map(|(b, j, e)| (b, j, e.clone())).collect())
}
