//! Snapshots of session contexts: resume loads the newest one that checks
//! out and replays only the blocks after it; a damaged, foreign, missing or
//! mismatched snapshot is never loaded (resume replays instead and says so
//! in a line naming it); `log verify --replay` checks replay against every
//! snapshot; forks carry them; `store gc` removes what no log names. On
//! SQLite and PostgreSQL.

use wrepl::replay::log::Event;
use wrepl::replay::store::{LogStore, PostgresStore, SqliteStore};

use crate::on_both;
use crate::sessions::Backend;
use crate::support::*;

/// Run `wrepl` with `args` and `--store` in `dir`; (status, stdout, stderr).
fn run(dir: &std::path::Path, store: &str, args: &[&str]) -> (bool, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--store", store]);
    let o = wrepl_in(dir, &all);
    (o.status.success(), out(&o), err_text(&o))
}

fn open(store: &str) -> Box<dyn LogStore> {
    if store.starts_with("postgres") {
        let url = store.to_string();
        std::thread::spawn(move || Box::new(PostgresStore::open(&url).unwrap()) as Box<dyn LogStore>).join().unwrap()
    } else {
        Box::new(SqliteStore::open(std::path::Path::new(store)).unwrap())
    }
}

/// Change the data of the snapshot rows stored under `digest` (all with
/// `None`) behind the store's back.
fn edit_rows(store: &str, digest: Option<&str>, edit: fn(&mut Vec<u8>)) {
    let (store, digest) = (store.to_string(), digest.map(str::to_string));
    std::thread::spawn(move || {
        if store.starts_with("postgres") {
            let mut db = postgres::Client::connect(&store, postgres::NoTls).unwrap();
            for row in db.query("SELECT session, digest, data FROM wrepl_snapshots", &[]).unwrap() {
                let (s, d, mut data): (String, String, Vec<u8>) = (row.get(0), row.get(1), row.get(2));
                if digest.as_ref().is_none_or(|x| *x == d) {
                    edit(&mut data);
                    db.execute(
                        "UPDATE wrepl_snapshots SET data = $1 WHERE session = $2 AND digest = $3",
                        &[&data, &s, &d],
                    )
                    .unwrap();
                }
            }
        } else {
            let db = rusqlite::Connection::open(&store).unwrap();
            let rows: Vec<(String, String, Vec<u8>)> = db
                .prepare("SELECT session, digest, data FROM snapshots")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for (s, d, mut data) in rows {
                if digest.as_ref().is_none_or(|x| *x == d) {
                    edit(&mut data);
                    db.execute(
                        "UPDATE snapshots SET data = ?1 WHERE session = ?2 AND digest = ?3",
                        rusqlite::params![data, s, d],
                    )
                    .unwrap();
                }
            }
        }
    })
    .join()
    .unwrap();
}

/// The snapshot events of `session`: (block, digest).
fn snapshot_events(store: &str, session: &str) -> Vec<(u64, String)> {
    let (store, session) = (store.to_string(), session.to_string());
    std::thread::spawn(move || {
        open(&store)
            .load(&session)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::Snapshot { digest, .. } => Some((e.block, digest)),
                _ => None,
            })
            .collect()
    })
    .join()
    .unwrap()
}

/// A session `s` of three blocks with a snapshot after each (state worth
/// keeping: a map, a closure, a registered tool).
fn three_blocks(dir: &std::path::Path, store: &str) {
    let blocks = [
        "globalThis.m = new Map([[1, 'one']]); let count = 0; globalThis.inc = () => ++count; 1",
        "inc(); inc(); registerTool('twice', 'doubles', {type: 'object', properties: {n: {type: 'number'}}}, ({n}) => 2 * n); m.set(2, 'two'); m.size",
        "inc(); [...m.values()].join()",
    ];
    for code in blocks {
        let (ok, _, err) = run(dir, store, &["eval", "--session", "s", "--snapshot-after", "0", "-e", code]);
        assert!(ok, "{err}");
    }
    assert_eq!(snapshot_events(store, "s").iter().map(|(b, _)| *b).collect::<Vec<_>>(), [0, 1, 2]);
}

on_both!(resume_loads_the_newest_snapshot_and_replays_only_the_rest, resume_from_snapshot);
fn resume_from_snapshot(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    let (ok, out, err) = run(
        dir.path(),
        &store,
        &["eval", "--session", "s", "--snapshot-after", "0", "-e", "[inc(), m.get(2), listTools().length]"],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "[4,\"two\",1]", "{err}");
    assert!(err.contains("restored from snapshot") && err.contains("(after block 2), then 0 block(s)"), "{err}");
    // The snapshot of the new block is the newest now.
    assert_eq!(snapshot_events(&store, "s").last().map(|(b, _)| *b), Some(3));
    // Replay from nothing reaches every snapshot's state; rows beyond the
    // newest three are gone, as kept.
    let (ok, out, _) = run(dir.path(), &store, &["log", "verify", "--replay", "s"]);
    assert!(ok, "{out}");
    assert!(out.contains("4 snapshot(s) checked, 0 with a problem"), "{out}");
    assert!(out.contains("(after block 0): replay reaches the state it holds (its row was removed"), "{out}");
    // --snapshot-after never: the log is replayed whole.
    let (ok, out, err) =
        run(dir.path(), &store, &["eval", "--session", "s", "--snapshot-after", "never", "-e", "inc()"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "5");
    assert!(err.contains("restored 4 block(s): 4 ok") && !err.contains("snapshot"), "{err}");
}

on_both!(a_damaged_snapshot_is_never_loaded, damaged_snapshot);
fn damaged_snapshot(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    let newest = snapshot_events(&store, "s").last().unwrap().1.clone();
    // A flipped byte in the newest row's data: resume falls back to the one
    // before it, naming the damaged one, and answers correctly.
    edit_rows(&store, Some(&newest), |d| d[40] ^= 1);
    let (ok, out, err) =
        run(dir.path(), &store, &["eval", "--session", "s", "--snapshot-after", "3600000", "-e", "[inc(), m.size]"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "[4,2]");
    let short = &newest[..12];
    assert!(err.contains(&format!("snapshot {short} (after block 2) was not loaded: its bytes do not match")), "{err}");
    assert!(err.contains("(after block 1), then 1 block(s)"), "{err}");
    // `log verify --replay` names it.
    let (ok, out, _) = run(dir.path(), &store, &["log", "verify", "--replay", "s"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "snapshot {short} (after block 2): replay reaches the state it holds, but its row: its bytes do not match"
        )),
        "{out}"
    );
    // Every row cut short: the log is replayed whole.
    edit_rows(&store, None, |d| d.truncate(d.len() / 2));
    let (ok, out, err) =
        run(dir.path(), &store, &["eval", "--session", "s", "--snapshot-after", "3600000", "-e", "[inc(), m.size]"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "[5,2]");
    assert!(err.contains("restored 4 block(s): 4 ok"), "{err}");
    assert_eq!(err.matches("was not loaded").count(), 3, "{err}");
}

on_both!(a_snapshot_copied_from_another_session_is_refused, copied_snapshot);
fn copied_snapshot(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    // A second session with other values, snapshotted after block 0.
    let (ok, _, err) = run(
        dir.path(),
        &store,
        &["eval", "--session", "t", "--snapshot-after", "0", "-e", "globalThis.secret = 'mine'; 1"],
    );
    assert!(ok, "{err}");
    let theirs = snapshot_events(&store, "t")[0].1.clone();
    // Put t's snapshot bytes into s's newest row (and under s's digest):
    // the seal binds the session, block and digests, so it is refused.
    let newest = snapshot_events(&store, "s").last().unwrap().1.clone();
    backend.exec(
        &format!("UPDATE snapshots SET data = (SELECT data FROM snapshots WHERE session = 't' AND digest = '{theirs}'), seal = (SELECT seal FROM snapshots WHERE session = 't' AND digest = '{theirs}') WHERE session = 's' AND digest = '{newest}'"),
        &format!("UPDATE wrepl_snapshots SET data = (SELECT data FROM wrepl_snapshots WHERE session = 't' AND digest = '{theirs}'), seal = (SELECT seal FROM wrepl_snapshots WHERE session = 't' AND digest = '{theirs}') WHERE session = 's' AND digest = '{newest}'"),
    );
    // And t's row copied whole under session s.
    backend.exec(
        &format!("INSERT INTO snapshots SELECT 's', digest, block, seal, data, created_ms FROM snapshots WHERE session = 't' AND digest = '{theirs}'"),
        &format!("INSERT INTO wrepl_snapshots SELECT 's', digest, block, seal, data, created_ms FROM wrepl_snapshots WHERE session = 't' AND digest = '{theirs}'"),
    );
    let (ok, out, err) = run(
        dir.path(),
        &store,
        &["eval", "--session", "s", "--snapshot-after", "3600000", "-e", "[typeof secret, inc()]"],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "[\"undefined\",4]");
    assert!(
        err.contains(&format!("snapshot {} (after block 2) was not loaded: its seal does not match", &newest[..12])),
        "{err}"
    );
}

on_both!(snapshots_the_log_cannot_use_are_skipped_by_name, unusable_snapshots);
fn unusable_snapshots(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    // Chain events (appended through the store, so the chain verifies) for
    // a snapshot of another wasmtime, of another guest, of a block the log
    // does not have, and of a row that is gone.
    let events = {
        let store = store.clone();
        std::thread::spawn(move || open(&store).load("s").unwrap()).join().unwrap()
    };
    let Some(Event::Snapshot { state, digest, guest, wasmtime, config, bytes }) =
        events.iter().rev().find(|e| matches!(e.event, Event::Snapshot { .. })).map(|e| e.event.clone())
    else {
        panic!("no snapshot event")
    };
    let forged = vec![
        (2, base(&state, &digest, &guest, "1.0.0", &config, bytes)),
        (2, base(&state, &digest, &"00".repeat(32), &wasmtime, &config, bytes)),
        (9, base(&state, &digest, &guest, &wasmtime, &config, bytes)),
    ];
    {
        let store = store.clone();
        std::thread::spawn(move || open(&store).append("s", &forged).unwrap()).join().unwrap();
    }
    let (ok, out, err) =
        run(dir.path(), &store, &["eval", "--session", "s", "--snapshot-after", "3600000", "-e", "inc()"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "4");
    let short = &digest[..12];
    assert!(err.contains(&format!("snapshot {short} (after block 9) names a block the log does not have")), "{err}");
    assert!(err.contains("was not loaded: it was taken by another guest build"), "{err}");
    assert!(err.contains("was not loaded: it was taken under wasmtime 1.0.0"), "{err}");
    assert!(err.contains(&format!("restored from snapshot {short} (after block 2), then 0 block(s)")), "{err}");
    // The row gone: the next one back is used, and the gone one named.
    backend.exec(
        &format!("DELETE FROM snapshots WHERE digest = '{digest}'"),
        &format!("DELETE FROM wrepl_snapshots WHERE digest = '{digest}'"),
    );
    let (ok, out, err) =
        run(dir.path(), &store, &["eval", "--session", "s", "--snapshot-after", "3600000", "-e", "inc()"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "5");
    assert!(err.contains(&format!("snapshot {short} (after block 2) was not loaded: it is not stored")), "{err}");
    assert!(err.contains("(after block 1), then 2 block(s)"), "{err}");
}

fn base(state: &str, digest: &str, guest: &str, wasmtime: &str, config: &str, bytes: u64) -> Event {
    Event::Snapshot {
        state: state.into(),
        digest: digest.into(),
        guest: guest.into(),
        wasmtime: wasmtime.into(),
        config: config.into(),
        bytes,
    }
}

on_both!(a_fork_resumes_from_the_snapshots_it_copied, fork_carries_snapshots);
fn fork_carries_snapshots(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    let (ok, out, err) = run(dir.path(), &store, &["eval", "--fork", "s", "--session", "f", "-e", "[inc(), m.size]"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "[4,2]");
    assert!(err.contains("restored from snapshot") && err.contains("(after block 2), then 0 block(s)"), "{err}");
    // The parent is unchanged.
    let (ok, out, _) = run(dir.path(), &store, &["eval", "--session", "s", "-e", "inc()"]);
    assert!(ok);
    assert_eq!(out.trim(), "4");
}

on_both!(replay_that_does_not_reach_a_snapshot_state_is_reported, nondeterminism_reported);
fn nondeterminism_reported(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    // A snapshot event whose state is not the one replay reaches.
    let (ok, out, _) = run(dir.path(), &store, &["log", "verify", "--replay", "s"]);
    assert!(ok, "{out}");
    let events = {
        let store = store.clone();
        std::thread::spawn(move || open(&store).load("s").unwrap()).join().unwrap()
    };
    let Some(Event::Snapshot { digest, guest, wasmtime, config, bytes, .. }) =
        events.iter().rev().find(|e| matches!(e.event, Event::Snapshot { .. })).map(|e| e.event.clone())
    else {
        panic!("no snapshot event")
    };
    let forged = vec![(2, base(&"ab".repeat(32), &digest, &guest, &wasmtime, &config, bytes))];
    {
        let store = store.clone();
        std::thread::spawn(move || open(&store).append("s", &forged).unwrap()).join().unwrap();
    }
    let (ok, out, _) = run(dir.path(), &store, &["log", "verify", "--replay", "s"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("NON-DETERMINISM: replay reached state")
            && out.contains("after block 2, the snapshot holds abababababab"),
        "{out}"
    );
}

on_both!(store_gc_removes_the_snapshots_no_log_can_use, gc_removes_unreachable);
fn gc_removes_unreachable(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    three_blocks(dir.path(), &store);
    // A row no chain event names, and the rows of a session that is gone.
    backend.exec(
        "INSERT INTO snapshots SELECT 'gone', digest, block, seal, data, created_ms FROM snapshots WHERE session = 's'",
        "INSERT INTO wrepl_snapshots SELECT 'gone', digest, block, seal, data, created_ms FROM wrepl_snapshots WHERE session = 's'",
    );
    backend.exec(
        "INSERT INTO snapshots SELECT session, 'stray', block, seal, data, created_ms FROM snapshots WHERE session = 's' LIMIT 1",
        "INSERT INTO wrepl_snapshots SELECT session, 'stray', block, seal, data, created_ms FROM wrepl_snapshots WHERE session = 's' LIMIT 1",
    );
    let count = |b: &Backend| b.exec("UPDATE snapshots SET block = block", "UPDATE wrepl_snapshots SET block = block");
    assert_eq!(count(&backend), 7);
    let (ok, out, err) = run(dir.path(), &store, &["store", "gc", "--dry-run"]);
    assert!(ok, "{err}");
    assert!(out.contains("4 unreachable snapshot(s)") && out.contains("to remove"), "{out}");
    assert_eq!(count(&backend), 7, "a dry run removes nothing");
    let (ok, out, err) = run(dir.path(), &store, &["store", "gc"]);
    assert!(ok, "{err}");
    assert!(out.contains("4 unreachable snapshot(s)") && out.contains("removed"), "{out}");
    assert_eq!(count(&backend), 3, "the three the log names stay");
    // And the session still resumes from its newest.
    let (ok, out, err) = run(dir.path(), &store, &["eval", "--session", "s", "-e", "inc()"]);
    assert!(ok && out.trim() == "4", "{err}");
    assert!(err.contains("(after block 2), then 0 block(s)"), "{err}");
    // Removing the session removes its snapshots.
    let (ok, _, err) = run(dir.path(), &store, &["store", "gc", "--older-than", "0s"]);
    assert!(ok, "{err}");
    assert_eq!(count(&backend), 0);
}
