//! Snapshots beside a session's log: storing one (its row, sealed with the
//! store's key, then the [`Event::Snapshot`] naming it in the hash chain),
//! finding the ones a log names, and loading one only when its seal, its
//! digest and everything it is bound to check out.
//!
//! A snapshot is a cache of replay, never a replacement for it: whatever
//! fails here makes the caller fall back to replaying the log, and say so.

use hmac::{KeyInit, Mac};

use super::log::{Event, StoredEvent};
use super::store::{LogStore, StoreError, StoredSnapshot};
use crate::call::to_hex;

/// The store secret snapshots are sealed with.
const SEAL_KEY: &str = "snapshot-seal";
/// Domain of the seal's HMAC (so no other HMAC of the key can pass for one).
const SEAL_DOMAIN: &[u8] = b"wrepl snapshot seal v1\0";

/// How many snapshots a session keeps (older ones are removed when a new
/// one is stored; `wrepl gc` removes what no log names).
pub const KEEP: usize = 3;

/// A snapshot as the log names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRef {
    /// The block it follows.
    pub block: u64,
    /// SHA-256 (hex) of the state it holds.
    pub state: String,
    /// SHA-256 (hex) of its bytes.
    pub digest: String,
    /// SHA-256 (hex) of the guest that took it.
    pub guest: String,
    /// The wasmtime version that ran it.
    pub wasmtime: String,
    /// SHA-256 (hex) of the configuration it was taken under.
    pub config: String,
}

impl SnapshotRef {
    /// A short name for messages: the digest's first 12 characters and the block.
    pub fn name(&self) -> String {
        format!("snapshot {} (after block {})", &self.digest[..self.digest.len().min(12)], self.block)
    }
}

/// The snapshots `events` name, oldest first.
pub fn refs(events: &[StoredEvent]) -> Vec<SnapshotRef> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Snapshot { state, digest, guest, wasmtime, config, .. } => Some(SnapshotRef {
                block: e.block,
                state: state.clone(),
                digest: digest.clone(),
                guest: guest.clone(),
                wasmtime: wasmtime.clone(),
                config: config.clone(),
            }),
            _ => None,
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    to_hex(&sha2::Sha256::digest(bytes))
}

fn seal(key: &[u8], session: &str, block: u64, digest: &str, state: &str) -> Result<Vec<u8>, StoreError> {
    let mut mac = hmac::Hmac::<sha2_next::Sha256>::new_from_slice(key)
        .map_err(|e| StoreError::Io(std::io::Error::other(format!("the snapshot key is unusable: {e}"))))?;
    for part in [SEAL_DOMAIN, session.as_bytes(), b"\0", block.to_string().as_bytes(), b"\0", digest.as_bytes(), b"\0"]
    {
        mac.update(part);
    }
    mac.update(state.as_bytes());
    Ok(mac.finalize().into_bytes().to_vec())
}

/// A snapshot to [`store`].
#[derive(Debug, Clone)]
pub struct Taken<'a> {
    /// The compressed snapshot.
    pub bytes: Vec<u8>,
    /// SHA-256 of the state it holds.
    pub state: [u8; 32],
    /// SHA-256 of the guest component.
    pub guest: [u8; 32],
    /// The wasmtime version.
    pub wasmtime: &'a str,
    /// SHA-256 of the configuration.
    pub config: [u8; 32],
}

/// Store a snapshot of `session` taken after `block` (sealed) and return the
/// chain event that names it, for the caller to append.
pub fn store(store: &dyn LogStore, session: &str, block: u64, taken: Taken<'_>) -> Result<Event, StoreError> {
    let digest = sha256_hex(&taken.bytes);
    let state = to_hex(&taken.state);
    let key = store.secret(SEAL_KEY)?;
    let bytes = taken.bytes.len() as u64;
    let row = StoredSnapshot { block, seal: seal(&key, session, block, &digest, &state)?, data: taken.bytes };
    store.put_snapshot(session, &digest, row)?;
    Ok(Event::Snapshot {
        state,
        digest,
        guest: to_hex(&taken.guest),
        wasmtime: taken.wasmtime.to_string(),
        config: to_hex(&taken.config),
        bytes,
    })
}

/// The bytes of the snapshot `r` of `session`, when its row is there, its
/// seal is the store's for this session and block, and its bytes are the
/// ones the log names; otherwise why not (one line).
pub fn load(store: &dyn LogStore, session: &str, r: &SnapshotRef) -> Result<Vec<u8>, String> {
    let row = match store.get_snapshot(session, &r.digest) {
        Ok(Some(row)) => row,
        Ok(None) => return Err("it is not stored (removed, or never written)".into()),
        Err(e) => return Err(format!("it could not be read: {e}")),
    };
    let key = store.secret(SEAL_KEY).map_err(|e| format!("the store's key could not be read: {e}"))?;
    let expected = seal(&key, session, r.block, &r.digest, &r.state).map_err(|e| e.to_string())?;
    use subtle::ConstantTimeEq;
    if row.block != r.block || !bool::from(row.seal.ct_eq(&expected)) {
        return Err("its seal does not match (the row was edited, or belongs to another session)".into());
    }
    if sha256_hex(&row.data) != r.digest {
        return Err("its bytes do not match the digest the log records".into());
    }
    Ok(row.data)
}

/// Copy the snapshots `events` name from session `from` into `into` (a
/// fork), sealed for `into`; how many were copied. Rows that are gone or
/// do not check out are left behind (the fork then replays instead).
pub fn copy(store: &dyn LogStore, from: &str, into: &str, events: &[StoredEvent]) -> Result<usize, StoreError> {
    let key = store.secret(SEAL_KEY)?;
    let mut copied = 0;
    for r in refs(events).iter().rev().take(KEEP) {
        let Ok(data) = load(store, from, r) else { continue };
        let row = StoredSnapshot { block: r.block, seal: seal(&key, into, r.block, &r.digest, &r.state)?, data };
        store.put_snapshot(into, &r.digest, row)?;
        copied += 1;
    }
    Ok(copied)
}

/// Remove `session`'s stored snapshots but the newest [`KEEP`] of `named`
/// (the snapshots its log names, oldest first); how many were removed.
pub fn prune(store: &dyn LogStore, session: &str, named: &[SnapshotRef]) -> Result<u64, StoreError> {
    let keep: Vec<&str> = named.iter().rev().take(KEEP).map(|r| r.digest.as_str()).collect();
    let stale: Vec<String> =
        store.snapshots(session)?.into_iter().map(|s| s.digest).filter(|d| !keep.contains(&d.as_str())).collect();
    if stale.is_empty() {
        return Ok(0);
    }
    store.delete_snapshots(session, &stale)
}

/// What replay found at one snapshot the log names (`log verify --replay`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotCheck {
    /// The snapshot ([`SnapshotRef::name`]).
    pub name: String,
    /// The block it follows.
    pub block: u64,
    /// Whether its row is stored (only the newest few are kept).
    pub stored: bool,
    /// What is wrong, in one line; `None` when replay reached the state it
    /// holds and its row checks out.
    pub problem: Option<String>,
    /// Why it could not be compared, when it could not (no problem).
    pub note: Option<String>,
}
