//! Reading a session's row: its head and its log version, and the integer
//! columns checked on the way.

use super::super::log::LOG_VERSION;
use super::super::store::{Head, StoreError};
use super::db;

pub(super) fn to_u64(v: i64, session: &str, seq: Option<u64>, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt {
        session: session.to_string(),
        seq,
        reason: format!("negative {what} {v}"),
    })
}

pub(super) fn read_head(tx: &mut impl postgres::GenericClient, session: &str) -> Result<Option<Head>, StoreError> {
    let row =
        tx.query_opt("SELECT head_events, head_hash FROM wrepl_sessions WHERE name = $1", &[&session]).map_err(db)?;
    row.map(|r| Ok(Head { events: to_u64(r.get(0), session, None, "head event count")?, hash: r.get(1) })).transpose()
}

/// A head read as nullable columns (a session that does not exist: none).
pub(super) fn head_of(session: &str, events: Option<i64>, hash: Option<String>) -> Result<Option<Head>, StoreError> {
    match (events, hash) {
        (Some(events), Some(hash)) => {
            Ok(Some(Head { events: to_u64(events, session, None, "head event count")?, hash }))
        }
        _ => Ok(None),
    }
}

pub(super) fn log_version(tx: &mut impl postgres::GenericClient, session: &str) -> Result<Option<u32>, StoreError> {
    let row = tx.query_opt("SELECT log_version FROM wrepl_sessions WHERE name = $1", &[&session]).map_err(db)?;
    let Some(row) = row else { return Ok(None) };
    let found = row.get::<_, Option<i32>>(0).unwrap_or(0).max(0) as u32;
    if found != LOG_VERSION {
        return Err(StoreError::LogVersionMismatch { session: session.to_string(), found, supported: LOG_VERSION });
    }
    Ok(Some(found))
}
