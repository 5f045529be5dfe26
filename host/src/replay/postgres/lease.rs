//! Lease rows: reading who holds a session, writing this process's lease.

use super::super::store::{now_ms, LeaseHolder, LeaseOwner, StoreError};
use super::db;

type LeaseRow = (String, LeaseHolder, LeaseOwner);

pub(super) fn read_lease(tx: &mut impl postgres::GenericClient, session: &str) -> Result<Option<LeaseRow>, StoreError> {
    let row = tx
        .query_opt(
            "SELECT owner, pid, host, boot_id, start_ticks, since_ms, heartbeat_ms, pid_ns FROM wrepl_leases WHERE session = $1",
            &[&session],
        )
        .map_err(db)?;
    Ok(row.map(|r| {
        let int = |i: usize| r.get::<_, Option<i64>>(i).unwrap_or(0).max(0) as u64;
        let text = |i: usize| r.get::<_, Option<String>>(i).unwrap_or_default();
        let id: String = r.get(0);
        let pid = u32::try_from(int(1)).unwrap_or(0);
        let holder = LeaseHolder { pid, host: text(2), since_ms: int(5), heartbeat_ms: int(6) };
        let recorded =
            LeaseOwner { id: id.clone(), pid, host: text(2), boot_id: text(3), start_ticks: int(4), pid_ns: text(7) };
        (id, holder, recorded)
    }))
}

/// Write `owner`'s lease row for `session`, now: only when there is none
/// (`replace` false; the rows written, 0 or 1), or over any there is.
pub(super) fn put_lease(
    c: &mut impl postgres::GenericClient,
    session: &str,
    owner: &LeaseOwner,
    replace: bool,
) -> Result<u64, StoreError> {
    let conflict = if replace {
        "DO UPDATE SET owner = $2, pid = $3, host = $4, boot_id = $5, start_ticks = $6, pid_ns = $7, \
         since_ms = $8, heartbeat_ms = $8"
    } else {
        "DO NOTHING"
    };
    let sql = format!(
        "INSERT INTO wrepl_leases(session, owner, pid, host, boot_id, start_ticks, pid_ns, since_ms, heartbeat_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (session) {conflict}"
    );
    c.execute(
        &sql,
        &[
            &session,
            &owner.id,
            &i64::from(owner.pid),
            &owner.host,
            &owner.boot_id,
            &(i64::try_from(owner.start_ticks).unwrap_or(0)),
            &owner.pid_ns,
            &(now_ms() as i64),
        ],
    )
    .map_err(db)
}
