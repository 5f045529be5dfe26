//! Leases: the lease row of a session, the error of a writer that lost it,
//! and when a holder's lease is stale.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use super::super::store::{now_ms, LeaseHolder, LeaseOwner, StoreError};

/// The lease row of `session`: its owner id, who holds it, and the holder's
/// identity as recorded (to judge whether it is dead).
pub(super) fn read_lease(
    conn: &Connection,
    session: &str,
) -> Result<Option<(String, LeaseHolder, LeaseOwner)>, StoreError> {
    let row = conn
        .prepare_cached(
            "SELECT owner, pid, host, boot_id, start_ticks, since_ms, heartbeat_ms, pid_ns FROM leases WHERE session = ?1",
        )?
        .query_row(
            [session],
            |r| {
                let int = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0).max(0) as u64);
                let text = |i: usize| r.get::<_, Option<String>>(i).map(Option::unwrap_or_default);
                let (id, pid, host) = (r.get::<_, String>(0)?, u32::try_from(int(1)?).unwrap_or(0), text(2)?);
                let holder = LeaseHolder { pid, host: host.clone(), since_ms: int(5)?, heartbeat_ms: int(6)? };
                let recorded =
                    LeaseOwner { id: id.clone(), pid, host, boot_id: text(3)?, start_ticks: int(4)?, pid_ns: text(7)? };
                Ok((id, holder, recorded))
            },
        )
        .optional()?;
    Ok(row)
}

/// `Ok` while `owner_id` holds `session`'s lease, else the lease-lost error
/// naming who holds it now.
pub(super) fn check_held(conn: &Connection, session: &str, owner_id: &str) -> Result<(), StoreError> {
    match read_lease(conn, session)? {
        Some((owner, ..)) if owner == owner_id => Ok(()),
        other => Err(lease_lost(session, other)),
    }
}

/// The error of a writer whose lease is no longer its own, naming who holds
/// the session now (from [`read_lease`]).
pub(in crate::replay) fn lease_lost(session: &str, now_held: Option<(String, LeaseHolder, LeaseOwner)>) -> StoreError {
    let by = now_held.map_or_else(|| "nobody".to_string(), |(_, h, _)| format!("pid {} on {}", h.pid, h.host));
    StoreError::LeaseLost { session: session.to_string(), by }
}

/// Why a lease is stale, as `me` sees it; `None` while its holder is live.
pub(in crate::replay) fn stale(
    me: &LeaseOwner,
    holder: &LeaseHolder,
    recorded: &LeaseOwner,
    ttl: Duration,
) -> Option<&'static str> {
    if me.sees_dead(recorded) {
        Some("its process is gone")
    } else if holder.heartbeat_ms.saturating_add(ttl.as_millis() as u64) < now_ms() {
        Some("no heartbeat within the lease's time to live")
    } else {
        None
    }
}
