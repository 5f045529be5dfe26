//! Reading a session's rows: its recorded log version and head, its events
//! in `seq` order, and the integer columns checked on the way.

use rusqlite::{Connection, OptionalExtension};

use super::super::log::LOG_VERSION;
use super::super::store::{Head, StoreError};

pub(super) fn to_u64(value: i64, session: &str, seq: Option<u64>, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        session: session.to_string(),
        seq,
        reason: format!("negative {what} {value}"),
    })
}

pub(super) fn to_u32(value: i64, session: &str, what: &str) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt {
        session: session.to_string(),
        seq: None,
        reason: format!("{what} {value} out of range"),
    })
}

/// One raw row of the `events` table.
pub(super) struct Row {
    pub(super) seq: i64,
    pub(super) block: i64,
    pub(super) json: String,
    pub(super) hash: String,
}

/// The session's recorded log version, if the session exists; errors if it
/// is not one this build can read or extend.
pub(super) fn session_log_version(conn: &Connection, session: &str) -> Result<Option<u32>, StoreError> {
    let found: Option<Option<i64>> = conn
        .prepare_cached("SELECT log_version FROM sessions WHERE name = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()?;
    let Some(found) = found else { return Ok(None) };
    let found = to_u32(found.unwrap_or(0), session, "log_version")?;
    if found != LOG_VERSION {
        return Err(StoreError::LogVersionMismatch { session: session.to_string(), found, supported: LOG_VERSION });
    }
    Ok(Some(found))
}

pub(super) fn load_rows(conn: &Connection, session: &str) -> Result<Vec<Row>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT seq, block, json, hash FROM events WHERE session = ?1 ORDER BY seq")?;
    let rows = stmt.query_map([session], |r| {
        Ok(Row {
            seq: r.get(0)?,
            block: r.get(1)?,
            json: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            hash: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// The session's recorded head (`None`: no such session).
pub(super) fn read_head(conn: &Connection, session: &str) -> Result<Option<Head>, StoreError> {
    let found: Option<(i64, String)> = conn
        .prepare_cached("SELECT head_events, head_hash FROM sessions WHERE name = ?1")?
        .query_row([session], |r| {
            Ok((r.get::<_, Option<i64>>(0)?.unwrap_or(0), r.get::<_, Option<String>>(1)?.unwrap_or_default()))
        })
        .optional()?;
    found
        .map(|(events, hash)| Ok(Head { events: to_u64(events, session, None, "head event count")?, hash }))
        .transpose()
}
