use super::*;
use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::params;

use super::super::chain::{canonical_json, link_hash};
use super::super::log::{Event, LOG_VERSION};
use super::super::store::{validate_session_name, LeaseOwner, LeaseTaken, LogStore, VerifyReport, MAX_SESSION_NAME};

fn call(n: u32) -> Event {
    Event::Call { tool: format!("tool{n}"), input: format!("{{\"n\":{n}}}"), schema: String::new(), at_ms: None }
}

fn block_events(block: u64) -> Vec<(u64, Event)> {
    vec![
        (block, Event::Begin { code: format!("block {block}"), boundary: "b".into(), view: Default::default() }),
        (block, call(block as u32)),
        (block, Event::Done { call: 0, ok: true, payload: "{}".into(), error_kind: String::new(), ms: None }),
        (block, Event::Now { us: 1.5e15 }),
        (block, Event::Random { value: u64::MAX }),
        (block, Event::End { threw: false, error: None, stopped: false, cost: None }),
    ]
}

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("sessions.sqlite3");
    (dir, path)
}

/// Stores five blocks of events in session "s" and returns the path.
fn seeded() -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = temp_db();
    let store = SqliteStore::open(&path).unwrap();
    for block in 0..5 {
        store.append("s", &block_events(block)).unwrap();
    }
    assert!(store.verify("s").unwrap().ok);
    (dir, path)
}

fn raw(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

#[test]
fn round_trip_persists_across_opens() {
    let (_dir, path) = temp_db();
    let written = {
        let store = SqliteStore::open(&path).unwrap();
        store.append("sess-1", &block_events(0)).unwrap()
    };
    assert_eq!(written.len(), 6);
    let store = SqliteStore::open(&path).unwrap();
    let loaded = store.load("sess-1").unwrap();
    assert_eq!(loaded, written);
    assert_eq!(loaded.iter().map(|e| e.seq).collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());
    assert_eq!(loaded[0].hash, link_hash("", 0, 0, &canonical_json(&loaded[0].event).unwrap()));
    assert_eq!(loaded[1].hash, link_hash(&loaded[0].hash, 0, 1, &canonical_json(&loaded[1].event).unwrap()));
    assert_eq!(loaded[0].hash.len(), 64);
    let info = store.sessions().unwrap();
    assert_eq!(info.len(), 1);
    assert_eq!((info[0].name.as_str(), info[0].events, info[0].blocks), ("sess-1", 6, 1));
    assert_eq!(info[0].log_version, LOG_VERSION);
    assert!(info[0].created_at_ms > 0);
}

#[test]
fn seq_continues_over_appends() {
    let store = SqliteStore::in_memory().unwrap();
    let mut all = Vec::new();
    for block in 0..4 {
        let got = store.append("s", &block_events(block)).unwrap();
        assert_eq!(got.first().unwrap().seq, block * 6);
        all.extend(got);
    }
    // An empty append creates nothing and changes nothing.
    assert!(store.append("s", &[]).unwrap().is_empty());
    // Several events of one block across appends, then the next block.
    all.extend(store.append("s", &[(4, call(1))]).unwrap());
    all.extend(store.append("s", &[(4, call(2)), (5, call(3))]).unwrap());
    let loaded = store.load("s").unwrap();
    assert_eq!(loaded, all);
    assert!(loaded.iter().enumerate().all(|(i, e)| e.seq == i as u64));
    let report = store.verify("s").unwrap();
    assert_eq!(report, VerifyReport { events: 27, ok: true, first_bad: None });
    assert_eq!(store.sessions().unwrap()[0].blocks, 6);
}

#[test]
fn sessions_are_isolated() {
    let store = SqliteStore::in_memory().unwrap();
    store.append("a", &block_events(0)).unwrap();
    store.append("b", &block_events(0)[..2]).unwrap();
    store.append("a", &block_events(1)).unwrap();
    assert_eq!(store.load("a").unwrap().len(), 12);
    let b = store.load("b").unwrap();
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].seq, 0);
    assert!(store.load("missing").unwrap().is_empty());
    assert_eq!(store.verify("missing").unwrap(), VerifyReport { events: 0, ok: true, first_bad: None });
    let names: Vec<_> = store.sessions().unwrap().into_iter().map(|s| (s.name, s.events, s.blocks)).collect();
    assert_eq!(names, vec![("a".to_string(), 12, 2), ("b".to_string(), 2, 1)]);
    store.delete("a").unwrap();
    store.delete("a").unwrap();
    assert!(store.load("a").unwrap().is_empty());
    assert_eq!(store.sessions().unwrap().len(), 1);
    assert!(store.verify("b").unwrap().ok);
    // A deleted session starts over.
    assert_eq!(store.append("a", &[(0, call(0))]).unwrap()[0].seq, 0);
}

#[test]
fn block_order_enforced_on_append() {
    let store = SqliteStore::in_memory().unwrap();
    store.append("s", &[(3, call(0))]).unwrap();
    let err = store.append("s", &[(3, call(1)), (2, call(2))]).unwrap_err();
    assert!(matches!(err, StoreError::InvalidBlock { block: 2, .. }), "{err}");
    let err = store.append("s", &[(u64::MAX, call(1))]).unwrap_err();
    assert!(matches!(err, StoreError::InvalidBlock { .. }), "{err}");
    // The failed appends wrote nothing.
    assert_eq!(store.load("s").unwrap().len(), 1);
    assert_eq!(store.append("s", &[(3, call(3))]).unwrap()[0].seq, 1);
}

#[test]
fn tampered_json_detected() {
    let (_dir, path) = seeded();
    raw(&path)
        .execute(
            "UPDATE events SET json = ?1 WHERE session = 's' AND seq = 8",
            [canonical_json(&Event::Random { value: 7 }).unwrap()],
        )
        .unwrap();
    let report = SqliteStore::open(&path).unwrap().verify("s").unwrap();
    assert!(!report.ok);
    assert_eq!(report.events, 30);
    let bad = report.first_bad.unwrap();
    assert_eq!(bad.seq, 8);
    assert!(bad.reason.contains("hash mismatch"), "{}", bad.reason);
}

#[test]
fn undecodable_json_detected() {
    let (_dir, path) = seeded();
    raw(&path).execute("UPDATE events SET json = '{\"kind\":\"bogus\"}' WHERE seq = 4", []).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let bad = store.verify("s").unwrap().first_bad.unwrap();
    assert_eq!(bad.seq, 4);
    assert!(bad.reason.contains("undecodable"), "{}", bad.reason);
    assert!(matches!(store.load("s").unwrap_err(), StoreError::Corrupt { seq: Some(4), .. }));
}

#[test]
fn deleted_row_detected() {
    let (_dir, path) = seeded();
    raw(&path).execute("DELETE FROM events WHERE session = 's' AND seq = 13", []).unwrap();
    let report = SqliteStore::open(&path).unwrap().verify("s").unwrap();
    assert!(!report.ok);
    assert_eq!(report.events, 29);
    let bad = report.first_bad.unwrap();
    assert_eq!(bad.seq, 13);
    assert!(bad.reason.contains("gap"), "{}", bad.reason);
}

#[test]
fn changed_hash_detected() {
    let (_dir, path) = seeded();
    raw(&path).execute("UPDATE events SET hash = ?1 WHERE session = 's' AND seq = 20", ["0".repeat(64)]).unwrap();
    let bad = SqliteStore::open(&path).unwrap().verify("s").unwrap().first_bad.unwrap();
    assert_eq!(bad.seq, 20);
    assert!(bad.reason.contains("hash mismatch"), "{}", bad.reason);
}

#[test]
fn reordered_rows_detected() {
    let (_dir, path) = seeded();
    let conn = raw(&path);
    conn.execute_batch(
        "UPDATE events SET seq = -1 WHERE session = 's' AND seq = 10;
         UPDATE events SET seq = 10 WHERE session = 's' AND seq = 11;
         UPDATE events SET seq = 11 WHERE session = 's' AND seq = -1;",
    )
    .unwrap();
    let bad = SqliteStore::open(&path).unwrap().verify("s").unwrap().first_bad.unwrap();
    assert_eq!(bad.seq, 10);
}

#[test]
fn backwards_block_detected() {
    let (_dir, path) = seeded();
    raw(&path).execute("UPDATE events SET block = 0 WHERE session = 's' AND seq = 6", []).unwrap();
    let bad = SqliteStore::open(&path).unwrap().verify("s").unwrap().first_bad.unwrap();
    // Rewriting a stored block number breaks that row's hash.
    assert_eq!(bad.seq, 6);
    assert!(bad.reason.contains("hash mismatch"), "{}", bad.reason);

    // With a recomputed chain, only the block order is wrong.
    let (_dir2, path2) = temp_db();
    let store = SqliteStore::open(&path2).unwrap();
    store.append("s", &[(1, call(0))]).unwrap();
    let json = canonical_json(&call(1)).unwrap();
    let prev = store.load("s").unwrap()[0].hash.clone();
    raw(&path2)
        .execute(
            "INSERT INTO events(session, seq, block, json, hash) VALUES ('s', 1, 0, ?1, ?2)",
            params![json, link_hash(&prev, 0, 1, &json)],
        )
        .unwrap();
    let bad = store.verify("s").unwrap().first_bad.unwrap();
    assert_eq!(bad.seq, 1);
    assert!(bad.reason.contains("backwards"), "{}", bad.reason);
}

#[test]
fn newer_schema_refused() {
    let (_dir, path) = temp_db();
    SqliteStore::open(&path).unwrap().append("s", &[(0, call(0))]).unwrap();
    raw(&path).execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'", []).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { found: 3, supported: 2 }), "{err}");
    raw(&path).execute("UPDATE meta SET value = 'x' WHERE key = 'schema_version'", []).unwrap();
    assert!(matches!(SqliteStore::open(&path).unwrap_err(), StoreError::Corrupt { .. }));
}

#[test]
fn newer_log_version_refused() {
    let (_dir, path) = temp_db();
    let store = SqliteStore::open(&path).unwrap();
    store.append("s", &[(0, call(0))]).unwrap();
    raw(&path).execute("UPDATE sessions SET log_version = 99", []).unwrap();
    let is_mismatch = |e: StoreError| matches!(e, StoreError::LogVersionMismatch { found: 99, supported: 1, .. });
    assert!(is_mismatch(store.load("s").unwrap_err()));
    assert!(is_mismatch(store.append("s", &[(0, call(1))]).unwrap_err()));
    assert!(is_mismatch(store.verify("s").unwrap_err()));
    assert_eq!(store.sessions().unwrap()[0].log_version, 99);
}

#[test]
fn not_a_database_is_an_error() {
    let (_dir, path) = temp_db();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    assert!(matches!(SqliteStore::open(&path).unwrap_err(), StoreError::Sqlite(_)));
}

#[test]
fn invalid_names_rejected() {
    let store = SqliteStore::in_memory().unwrap();
    let long = "a".repeat(129);
    for name in ["", "a b", "a/b", "../x", "é", "a\0", long.as_str()] {
        let invalid = |e: StoreError| matches!(e, StoreError::InvalidName { .. });
        assert!(invalid(store.append(name, &[(0, call(0))]).unwrap_err()), "{name:?}");
        assert!(invalid(store.load(name).unwrap_err()), "{name:?}");
        assert!(invalid(store.verify(name).unwrap_err()), "{name:?}");
        assert!(invalid(store.delete(name).unwrap_err()), "{name:?}");
    }
    for name in ["a", "A-z_0.9", "a".repeat(128).as_str(), "..."] {
        store.append(name, &[(0, call(0))]).unwrap();
    }
    assert!(store.sessions().unwrap().len() == 4);
}

#[test]
fn concurrent_appends_keep_chain() {
    let (_dir, path) = temp_db();
    let shared = Arc::new(SqliteStore::open(&path).unwrap());
    let mut handles = Vec::new();
    for t in 0..4u32 {
        // Two threads share one store; two have their own connection.
        let store = if t < 2 { Arc::clone(&shared) } else { Arc::new(SqliteStore::open(&path).unwrap()) };
        handles.push(std::thread::spawn(move || {
            for i in 0..25u32 {
                let got = store.append("c", &[(0, call(t * 100 + i)), (0, call(t * 100 + i + 1000))]).unwrap();
                assert_eq!(got[1].seq, got[0].seq + 1);
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let loaded = shared.load("c").unwrap();
    assert_eq!(loaded.len(), 200);
    assert!(loaded.iter().enumerate().all(|(i, e)| e.seq == i as u64));
    assert_eq!(shared.verify("c").unwrap(), VerifyReport { events: 200, ok: true, first_bad: None });
}

#[test]
fn truncating_the_newest_rows_is_detected_and_not_extended() {
    let (_dir, path) = seeded();
    raw(&path).execute("DELETE FROM events WHERE session = 's' AND seq >= 24", []).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let report = store.verify("s").unwrap();
    assert!(!report.ok);
    let bad = report.first_bad.unwrap();
    assert_eq!(bad.seq, 24);
    assert!(bad.reason.contains("30 events") && bad.reason.contains("removed"), "{}", bad.reason);
    // Appending would hide the truncation: refused, nothing written.
    let err = store.append("s", &[(5, call(9))]).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert_eq!(store.load("s").unwrap().len(), 24);
    assert_eq!(store.head("s").unwrap().unwrap().events, 30, "the head still says 30");
    assert_eq!(store.head("nosuch").unwrap(), None);
    // A forged head of any text is reported, never a panic.
    raw(&path).execute("UPDATE sessions SET head_hash = ?1", ["ab\u{1b}]0;x\u{7}é€😀cdef"]).unwrap();
    let bad = store.verify("s").unwrap().first_bad.unwrap();
    assert!(bad.reason.contains("\\u{1b}"), "escaped in the message: {}", bad.reason);
}

#[test]
fn version_1_stores_are_migrated_with_their_head() {
    let (_dir, path) = temp_db();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        // A store as version 1 wrote it.
        let conn = raw(&path);
        conn.execute_batch(
            "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
             INSERT INTO meta VALUES ('schema_version', '1');
             CREATE TABLE sessions(name TEXT PRIMARY KEY, created_at_ms INTEGER, log_version INTEGER);
             CREATE TABLE events(session TEXT, seq INTEGER, block INTEGER, json TEXT, hash TEXT, PRIMARY KEY(session, seq));
             INSERT INTO sessions VALUES ('old', 1, 1);",
        )
        .unwrap();
        let mut prev = String::new();
        for seq in 0..3u64 {
            let json = canonical_json(&call(seq as u32)).unwrap();
            let hash = link_hash(&prev, 0, seq, &json);
            conn.execute("INSERT INTO events VALUES ('old', ?1, 0, ?2, ?3)", params![seq as i64, json, hash]).unwrap();
            prev = hash;
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.verify("old").unwrap(), VerifyReport { events: 3, ok: true, first_bad: None });
    assert_eq!(store.head("old").unwrap().unwrap().events, 3);
    store.append("old", &[(1, call(7))]).unwrap();
    assert!(store.verify("old").unwrap().ok);
    let version: String =
        raw(&path).query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
    assert_eq!(version, "2");
}

#[test]
fn read_only_opens_never_create_a_store() {
    let (dir, path) = temp_db();
    let err = SqliteStore::open_existing(&path).unwrap_err();
    assert!(matches!(err, StoreError::NoStore(_)), "{err}");
    assert!(!path.exists() && !path.parent().unwrap().exists());
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    assert!(matches!(SqliteStore::open_existing(&junk).unwrap_err(), StoreError::NotAStore(_)));
    let other = dir.path().join("other.sqlite3");
    raw(&other).execute_batch("CREATE TABLE t(x);").unwrap();
    assert!(matches!(SqliteStore::open_existing(&other).unwrap_err(), StoreError::NotAStore(_)));
    SqliteStore::open(&path).unwrap().append("s", &[(0, call(0))]).unwrap();
    assert_eq!(SqliteStore::open_existing(&path).unwrap().load("s").unwrap().len(), 1);
}

fn owner(id: &str) -> LeaseOwner {
    LeaseOwner { id: id.into(), ..LeaseOwner::this_process() }
}

#[test]
fn one_writer_per_session() {
    let (_dir, path) = temp_db();
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    let ttl = Duration::from_secs(60);
    assert_eq!(a.acquire_lease("s", &owner("A"), ttl).unwrap(), LeaseTaken::Free);
    // Taking one's own lease again is fine; another live owner is refused.
    assert_eq!(a.acquire_lease("s", &owner("A"), ttl).unwrap(), LeaseTaken::Free);
    let err = b.acquire_lease("s", &owner("B"), ttl).unwrap_err();
    let StoreError::SessionBusy { holder, .. } = &err else { panic!("{err}") };
    assert_eq!(holder.pid, std::process::id());
    assert!(err.to_string().contains(&format!("pid {}", std::process::id())), "{err}");
    // Other sessions are independent.
    assert_eq!(b.acquire_lease("t", &owner("B"), ttl).unwrap(), LeaseTaken::Free);
    // Only the holder appends through the lease.
    a.append_leased("s", "A", &[(0, call(0))]).unwrap();
    let err = b.append_leased("s", "B", &[(0, call(1))]).unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
    a.renew_lease("s", "A").unwrap();
    assert!(matches!(b.renew_lease("s", "B").unwrap_err(), StoreError::LeaseLost { .. }));
    // Releasing someone else's lease does nothing; the holder's frees it.
    b.release_lease("s", "B").unwrap();
    assert!(b.acquire_lease("s", &owner("B"), ttl).is_err());
    a.release_lease("s", "A").unwrap();
    assert_eq!(b.acquire_lease("s", &owner("B"), ttl).unwrap(), LeaseTaken::Free);
    assert_eq!(b.load("s").unwrap().len(), 1, "no takeover was recorded");
}

#[test]
fn stale_leases_are_taken_over() {
    let (_dir, path) = temp_db();
    let store = SqliteStore::open(&path).unwrap();
    store.append("s", &block_events(0)).unwrap();
    // A holder whose heartbeat is older than the time to live.
    store.acquire_lease("s", &owner("old"), Duration::from_secs(60)).unwrap();
    raw(&path).execute("UPDATE leases SET heartbeat_ms = heartbeat_ms - 120000", []).unwrap();
    let taken = store.acquire_lease("s", &owner("new"), Duration::from_secs(60)).unwrap();
    let LeaseTaken::TakenOver { holder, reason } = taken else { panic!("{taken:?}") };
    assert_eq!(holder.pid, std::process::id());
    assert!(reason.contains("no heartbeat"), "{reason}");
    // Taking the lease writes nothing (the new holder logs the takeover
    // once it has verified the log).
    assert_eq!(store.load("s").unwrap().len(), 6);
    // The old holder can no longer write.
    let err = store.append_leased("s", "old", &[(1, call(1))]).unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
    // A live lease keeps the session from being deleted.
    let err = store.delete("s").unwrap_err();
    assert!(matches!(err, StoreError::SessionBusy { .. }), "{err}");

    // A holder on this machine and in this PID namespace whose process is
    // gone, with a fresh heartbeat.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let dead = LeaseOwner { id: "dead".into(), pid: dead_pid, ..LeaseOwner::this_process() };
    store.release_lease("s", "new").unwrap();
    store.acquire_lease("s", &dead, Duration::from_secs(60)).unwrap();
    let taken = store.acquire_lease("s", &owner("next"), Duration::from_secs(60)).unwrap();
    let LeaseTaken::TakenOver { holder, reason } = taken else { panic!("{taken:?}") };
    assert_eq!(holder.pid, dead_pid);
    assert!(reason.contains("process is gone"), "{reason}");
    // The same pid in another PID namespace or on another boot is judged
    // by its heartbeat only.
    let me = LeaseOwner::this_process();
    assert!(me.sees_dead(&dead));
    assert!(!me.sees_dead(&LeaseOwner { pid_ns: "pid:[1]".into(), ..dead.clone() }));
    assert!(!me.sees_dead(&LeaseOwner { boot_id: "another-boot".into(), ..dead.clone() }));
    assert!(!me.sees_dead(&LeaseOwner { host: "elsewhere".into(), ..dead }));
    // Once released, the session can be deleted.
    store.release_lease("s", "next").unwrap();
    store.delete("s").unwrap();
}

#[test]
fn events_without_their_session_record_fail_verification() {
    let (_dir, path) = seeded();
    raw(&path).execute("DELETE FROM sessions WHERE name = 's'", []).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let report = store.verify("s").unwrap();
    assert!(!report.ok && report.first_bad.as_ref().unwrap().reason.contains("does not list"), "{report:?}");
    let aside = store.quarantine("s").unwrap();
    assert_eq!(store.load(&aside).unwrap().len(), 30);
    assert!(!store.verify(&aside).unwrap().ok, "the evidence keeps failing");
    assert!(store.verify("s").unwrap().ok);
}

#[test]
fn quarantine_keeps_the_evidence_and_frees_the_name() {
    let (_dir, path) = seeded();
    let store = SqliteStore::open(&path).unwrap();
    let aside = store.quarantine("s").unwrap();
    assert!(aside.starts_with("s.tampered-"), "{aside}");
    assert_eq!(store.load(&aside).unwrap().len(), 30);
    assert!(store.verify(&aside).unwrap().ok);
    assert_eq!(store.head("s").unwrap(), None);
    assert_eq!(store.append("s", &[(0, call(0))]).unwrap()[0].seq, 0);
    let long = "n".repeat(MAX_SESSION_NAME);
    store.append(&long, &[(0, call(0))]).unwrap();
    let aside = store.quarantine(&long).unwrap();
    assert!(aside.len() <= MAX_SESSION_NAME && validate_session_name(&aside).is_ok(), "{aside}");
}

/// Writers that find the connection busy are committed together, in one
/// transaction, by whoever takes the connection next; each gets its own
/// outcome, and a write that fails (its lease was taken over) takes nothing
/// else with it.
#[test]
fn queued_writes_are_committed_as_one_group_each_with_its_own_outcome() {
    let (_dir, path) = temp_db();
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let ttl = std::time::Duration::from_secs(60);
    for s in ["a", "b", "c", "d"] {
        assert_eq!(store.acquire_lease(s, &owner(&format!("owner-{s}")), ttl).unwrap(), LeaseTaken::Free);
    }
    let groups_before = store.groups.load(std::sync::atomic::Ordering::Relaxed);
    // Hold the connection: the three writers queue behind it.
    let held = store.lock();
    // d's events go backwards: its first row is inserted before the error,
    // and must be rolled back alone.
    let backwards = vec![(5, call(5)), (3, call(3))];
    let writers: Vec<_> = [
        ("a", "owner-a", None),
        ("b", "owner-b", None),
        ("c", "not-the-owner", None),
        ("d", "owner-d", Some(backwards)),
    ]
    .into_iter()
    .map(|(s, o, events)| {
        let store = store.clone();
        std::thread::spawn(move || store.append_leased(s, o, &events.unwrap_or_else(|| block_events(0))))
    })
    .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.pending.lock().unwrap().len() < 4 {
        assert!(std::time::Instant::now() < deadline, "the writers did not queue");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(held);
    let outcomes: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(store.groups.load(std::sync::atomic::Ordering::Relaxed) - groups_before, 1, "one commit for the four");
    assert_eq!(outcomes[0].as_ref().unwrap().len(), 6);
    assert_eq!(outcomes[1].as_ref().unwrap().len(), 6);
    assert!(matches!(outcomes[2], Err(StoreError::LeaseLost { .. })), "{:?}", outcomes[2].as_ref().err());
    assert!(matches!(outcomes[3], Err(StoreError::InvalidBlock { .. })), "{:?}", outcomes[3].as_ref().err());
    // On disk, as a new connection sees it: a and b whole, c untouched.
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.load("a").unwrap().len(), 6);
    assert_eq!(reopened.load("b").unwrap().len(), 6);
    assert!(reopened.load("c").unwrap().is_empty());
    assert!(reopened.load("d").unwrap().is_empty(), "the failed write's first row was rolled back");
    assert!(reopened.verify("a").unwrap().ok && reopened.verify("b").unwrap().ok);
}

/// Many writers at once, on sessions of their own: every append lands,
/// in order, on an intact chain, with fewer commits than writes when they
/// overlap; the lease goes back with the last events in the same commit.
#[test]
fn concurrent_writers_keep_every_chain_intact() {
    let (_dir, path) = temp_db();
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let ttl = std::time::Duration::from_secs(60);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                let (s, o) = (format!("ctx-{i}"), owner(&format!("owner-{i}")));
                assert_eq!(store.acquire_lease(&s, &o, ttl).unwrap(), LeaseTaken::Free);
                for block in 0..20 {
                    store.append_leased(&s, &o.id, &block_events(block)).unwrap();
                }
                store.append_and_release(&s, &o.id, &block_events(20)).unwrap()
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let head = t.join().unwrap().expect("a head after the last append");
        assert_eq!(head.events, 21 * 6, "ctx-{i}");
    }
    let reopened = SqliteStore::open(&path).unwrap();
    for i in 0..8 {
        let s = format!("ctx-{i}");
        let rows = reopened.load(&s).unwrap();
        assert_eq!(rows.len(), 21 * 6);
        assert!(rows.windows(2).all(|w| w[1].seq == w[0].seq + 1 && w[1].block >= w[0].block));
        assert!(reopened.verify(&s).unwrap().ok);
        // The lease went back: another owner takes it at once.
        assert_eq!(reopened.acquire_lease(&s, &owner("next"), ttl).unwrap(), LeaseTaken::Free);
    }
}

/// A write alone in its group runs without a savepoint: when it fails after
/// inserting a row, the whole transaction goes back, and the next write
/// finds the connection ready.
#[test]
fn a_lone_write_that_fails_leaves_nothing_and_the_next_one_lands() {
    let (_dir, path) = temp_db();
    let store = SqliteStore::open(&path).unwrap();
    let ttl = std::time::Duration::from_secs(60);
    assert_eq!(store.acquire_lease("s", &owner("o"), ttl).unwrap(), LeaseTaken::Free);
    let groups = |s: &SqliteStore| s.groups.load(std::sync::atomic::Ordering::Relaxed);
    let before = groups(&store);
    let backwards = vec![(5, call(5)), (3, call(3))];
    let e = store.append_leased("s", "o", &backwards).unwrap_err();
    assert!(matches!(e, StoreError::InvalidBlock { .. }), "{e:?}");
    assert_eq!(groups(&store) - before, 1, "a group of one");
    assert!(SqliteStore::open(&path).unwrap().load("s").unwrap().is_empty(), "the first row was rolled back");
    assert_eq!(store.append_leased("s", "o", &block_events(0)).unwrap().len(), 6);
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.load("s").unwrap().len(), 6);
    assert!(reopened.verify("s").unwrap().ok);
}

/// The append's statements stay prepared: none is prepared again for each
/// append. (Without the query planner's stability guarantee, the newest-row
/// query was re-prepared on every run: its bound session name may change
/// the plan.)
#[test]
fn appends_reuse_their_prepared_statements() {
    let (_dir, path) = temp_db();
    let store = SqliteStore::open(&path).unwrap();
    let ttl = std::time::Duration::from_secs(60);
    store.acquire_lease("s", &owner("o"), ttl).unwrap();
    for b in 0..20 {
        store.append_leased("s", "o", &block_events(b)).unwrap();
    }
    let conn = store.lock();
    for sql in [
        "SELECT seq, block, hash FROM events WHERE session = ?1 ORDER BY seq DESC LIMIT 1",
        "SELECT head_events, head_hash FROM sessions WHERE name = ?1",
        "INSERT INTO events(session, seq, block, json, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
    ] {
        let st = conn.prepare_cached(sql).unwrap();
        assert!(st.get_status(rusqlite::StatementStatus::Run) >= 20, "{sql} is the cached statement the appends ran");
        assert_eq!(st.get_status(rusqlite::StatementStatus::RePrepare), 0, "{sql}");
    }
}
