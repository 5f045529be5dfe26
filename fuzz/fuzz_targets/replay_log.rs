//! The replay log's event model and its SQLite store.
//!
//! - Arbitrary bytes as an event's JSON: decoding never panics; a decoded
//!   event re-encodes canonically and decodes to the same event; the same
//!   text stored as a row loads and verifies exactly when it decodes.
//! - Arbitrary event batches (with arbitrary block numbers and session
//!   names) appended to a file store: each append succeeds or fails exactly
//!   as the rules say (name, block order, `i64` range) and a failed append
//!   stores nothing; loading gives back every stored event, block, seq and
//!   hash; `verify` holds.
//! - One stored row tampered with through a second connection (a changed
//!   character of its JSON, its hash, its block, or a deleted middle row):
//!   `verify` fails and names exactly that row.
#![no_main]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rusqlite::{params, Connection};
use wrepl::replay::log::{Event, StoredEvent};
use wrepl::replay::store::{canonical_json, link_hash, validate_session_name, LogStore, SqliteStore, StoreError};

#[derive(Debug, Arbitrary)]
enum Ev {
    Begin { code: String, boundary: String, view: u8 },
    Call { tool: String, input: String, schema: String },
    Done { call: u32, ok: bool, payload: String, error_kind: String },
    Refused { call: u32, error_kind: String, message: String },
    Timer { id: u32 },
    Now { us: f64 },
    Random { value: u64 },
    End { threw: bool, error: Option<String>, stopped: bool },
}

impl Ev {
    fn into_event(self) -> Event {
        match self {
            Ev::Begin { code, boundary, view } => {
                let view =
                    [wrepl::View::Model, wrepl::View::Terminal, wrepl::View::TerminalColors][usize::from(view % 3)];
                Event::Begin { code, boundary, view }
            }
            Ev::Call { tool, input, schema } => Event::Call { tool, input, schema, at_ms: None },
            Ev::Done { call, ok, payload, error_kind } => Event::Done { call, ok, payload, error_kind, ms: None },
            Ev::Refused { call, error_kind, message } => Event::Refused { call, error_kind, message },
            Ev::Timer { id } => Event::Timer { id },
            // Clock readings are finite (the ambient clock is `SystemTime`);
            // JSON has no NaN or infinity.
            Ev::Now { us } => Event::Now { us: if us.is_finite() { us } else { 0.0 } },
            Ev::Random { value } => Event::Random { value },
            Ev::End { threw, error, stopped } => Event::End { threw, error, stopped, cost: None },
        }
    }
}

/// How the next event's block number moves.
#[derive(Debug, Arbitrary)]
enum Step {
    Same,
    Next,
    Jump(u16),
    Back,
    Huge,
}

#[derive(Debug, Arbitrary)]
enum Tamper {
    JsonChar { at: u16 },
    Hash { at: u8 },
    Block { up: bool },
    DeleteRow,
}

#[derive(Debug, Arbitrary)]
struct Input {
    /// Bytes tried as one event's JSON text.
    raw: Vec<u8>,
    /// A session name to try instead of the generated valid one.
    name: Option<String>,
    batches: Vec<Vec<(Step, Ev)>>,
    tamper: Option<(u16, Tamper)>,
}

struct Db {
    store: SqliteStore,
    raw: Connection,
    _dir: tempfile::TempDir,
}

fn db() -> &'static Mutex<Db> {
    static DB: OnceLock<Mutex<Db>> = OnceLock::new();
    DB.get_or_init(|| {
        // tmpfs when there is one: appends are durable (fsync) by design.
        let shm = PathBuf::from("/dev/shm");
        let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("temp dir");
        let path = dir.path().join("log.sqlite3");
        let store = SqliteStore::open(&path).expect("open store");
        let raw = Connection::open(&path).expect("second connection");
        raw.busy_timeout(std::time::Duration::from_secs(5)).expect("busy timeout");
        Mutex::new(Db { store, raw, _dir: dir })
    })
}

fn next_session() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("fz-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn check_raw_event(db: &Db, raw: &[u8]) {
    let decoded = serde_json::from_slice::<Event>(raw);
    if let Ok(event) = &decoded {
        let json = canonical_json(event).expect("a decoded event encodes");
        let again: Event = serde_json::from_str(&json).expect("canonical JSON decodes");
        assert_eq!(&again, event, "event JSON round trip");
        assert_eq!(canonical_json(&again).expect("encodes"), json, "canonical JSON is stable");
    }
    // The same text as a stored row (with a correct link hash).
    let text = String::from_utf8_lossy(raw).into_owned();
    let decodes = serde_json::from_str::<Event>(&text).is_ok();
    let session = next_session();
    db.raw
        .execute("INSERT INTO sessions(name, created_at_ms, log_version) VALUES (?1, 0, 1)", [&session])
        .expect("insert session");
    db.raw
        .execute(
            "INSERT INTO events(session, seq, block, json, hash) VALUES (?1, 0, 0, ?2, ?3)",
            params![session, text, link_hash("", 0, 0, &text)],
        )
        .expect("insert row");
    let report = db.store.verify(&session).expect("verify");
    assert_eq!(report.ok, decodes, "verify of a row holding {text:?}: {report:?}");
    match db.store.load(&session) {
        Ok(events) => {
            assert!(decodes, "an undecodable row loaded");
            assert_eq!(events.len(), 1);
        }
        Err(StoreError::Corrupt { seq: Some(0), .. }) => assert!(!decodes, "a decodable row failed to load"),
        Err(e) => panic!("unexpected load error {e:?}"),
    }
    db.store.delete(&session).expect("delete");
}

fn tamper(db: &Db, session: &str, stored: &[StoredEvent], row: usize, how: &Tamper) -> Option<u64> {
    let target = &stored[row];
    let seq = target.seq as i64;
    let changed = match how {
        Tamper::JsonChar { at } => {
            let json = canonical_json(&target.event).expect("encodes");
            let chars: Vec<char> = json.chars().collect();
            let i = usize::from(*at) % chars.len();
            let c = chars[i];
            let replacement = if c.is_ascii() { char::from(c as u8 ^ 1) } else { 'X' };
            let text: String = chars.iter().enumerate().map(|(j, &ch)| if j == i { replacement } else { ch }).collect();
            db.raw.execute("UPDATE events SET json = ?1 WHERE session = ?2 AND seq = ?3", params![text, session, seq])
        }
        Tamper::Hash { at } => {
            let mut hash: Vec<u8> = target.hash.clone().into_bytes();
            let i = usize::from(*at) % hash.len();
            hash[i] = if hash[i] == b'0' { b'1' } else { b'0' };
            let hash = String::from_utf8(hash).expect("hex");
            db.raw.execute("UPDATE events SET hash = ?1 WHERE session = ?2 AND seq = ?3", params![hash, session, seq])
        }
        Tamper::Block { up } => {
            let block = target.block as i64;
            let block = if *up && block < i64::MAX { block + 1 } else { block - 1 };
            db.raw.execute("UPDATE events SET block = ?1 WHERE session = ?2 AND seq = ?3", params![block, session, seq])
        }
        Tamper::DeleteRow => {
            // Dropping the newest rows is not detectable from the chain alone
            // (documented); a middle row is.
            if row + 1 == stored.len() {
                return None;
            }
            db.raw.execute("DELETE FROM events WHERE session = ?1 AND seq = ?2", params![session, seq])
        }
    };
    assert_eq!(changed.expect("tamper"), 1, "tampering changed one row");
    Some(target.seq)
}

fuzz_target!(|input: Input| {
    let guard = db().lock().unwrap_or_else(|p| p.into_inner());
    let db = &*guard;
    check_raw_event(db, &input.raw);

    // Even-length fuzzed names are tried as given (most are invalid: the
    // store must refuse them); otherwise a fresh valid name is used.
    let session = match &input.name {
        Some(name) if !name.is_empty() && name.len() % 2 == 0 => name.clone(),
        _ => next_session(),
    };
    let name_ok = validate_session_name(&session).is_ok();
    if name_ok {
        // A fuzzed name may have been used by an earlier run.
        db.store.delete(&session).expect("delete");
    }
    let mut model: Vec<StoredEvent> = Vec::new();
    let mut block: u64 = 0;
    for batch in input.batches.into_iter().take(8) {
        let last_block = model.last().map(|e| e.block);
        let mut events = Vec::new();
        for (step, ev) in batch.into_iter().take(64) {
            block = match step {
                Step::Same => block,
                Step::Next => block.saturating_add(1),
                Step::Jump(n) => block.saturating_add(u64::from(n)),
                Step::Back => block.saturating_sub(1),
                Step::Huge => (i64::MAX as u64).saturating_add(1),
            };
            events.push((block, ev.into_event()));
        }
        let mut prev = last_block;
        let mut valid_blocks = true;
        for (b, _) in &events {
            if prev.is_some_and(|p| *b < p) || *b > i64::MAX as u64 {
                valid_blocks = false;
                break;
            }
            prev = Some(*b);
        }
        match db.store.append(&session, &events) {
            Ok(stored) => {
                assert!(name_ok && valid_blocks, "append accepted an invalid name or block order");
                assert_eq!(stored.len(), events.len());
                for (s, (b, e)) in stored.iter().zip(&events) {
                    assert_eq!((s.block, &s.event), (*b, e));
                    assert_eq!(s.seq, model.len() as u64, "seq is gapless");
                    let prev_hash = model.last().map(|p| p.hash.as_str()).unwrap_or("");
                    let json = canonical_json(e).expect("encodes");
                    assert_eq!(s.hash, link_hash(prev_hash, s.block, s.seq, &json), "hash link");
                    model.push(s.clone());
                }
            }
            Err(StoreError::InvalidName { .. }) => assert!(!name_ok, "a valid name was refused"),
            Err(StoreError::InvalidBlock { .. }) => assert!(name_ok && !valid_blocks, "a valid block was refused"),
            Err(e) => panic!("unexpected append error: {e:?}"),
        }
        // A backwards block is refused; continue from the last stored one.
        block = model.last().map(|e| e.block).unwrap_or(0);
    }
    if !name_ok {
        assert!(matches!(db.store.load(&session), Err(StoreError::InvalidName { .. })));
        assert!(matches!(db.store.verify(&session), Err(StoreError::InvalidName { .. })));
        return;
    }
    let loaded = db.store.load(&session).expect("load");
    assert_eq!(loaded, model, "load returns what was appended");
    let report = db.store.verify(&session).expect("verify");
    assert!(report.ok && report.first_bad.is_none(), "untampered log fails verify: {report:?}");
    assert_eq!(report.events, model.len() as u64);

    if let Some((row, how)) = &input.tamper {
        if !model.is_empty() {
            let row = usize::from(*row) % model.len();
            if let Some(seq) = tamper(db, &session, &model, row, how) {
                let report = db.store.verify(&session).expect("verify after tampering");
                assert!(!report.ok, "tampering ({how:?} at seq {seq}) not detected");
                let bad = report.first_bad.expect("first bad link");
                assert_eq!(bad.seq, seq, "verify blamed the wrong row ({how:?}): {}", bad.reason);
            }
        }
    }
    db.store.delete(&session).expect("delete");
    assert_eq!(db.store.verify(&session).expect("verify").events, 0);
    assert!(db.store.load(&session).expect("load").is_empty());
});
