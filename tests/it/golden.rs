//! Golden test of the stored log format: `tests/fixtures/golden-log.jsonl`
//! holds a session log of every event kind the store keeps (an evaluation's
//! begin and end, a call's intent and its result, a refused call, a timer, a
//! clock read, a random draw, a stopped block whose call has no outcome, a
//! suspended block and its continuation with an `outcome-unknown` result, a
//! model's call of a script-registered tool, a snapshot, a fork and a lease
//! takeover),
//! exactly as the SQLite store holds it: per event its block, its position,
//! its link hash and its JSON text.
//!
//! 1. The fixture is loaded into a SQLite store and checked with the store's
//!    own verification (so the hash-chain input is pinned), decoded with the
//!    store's own loading (so an old log still decodes), re-encoded (so the
//!    canonical JSON is pinned) and replayed (so an old log still restores).
//! 2. The same evaluations are run again, against a fresh store, with a fixed
//!    clock and a fixed random source; the export of that store must be the
//!    fixture, byte for byte.
//!
//! A difference means that every existing session would stop verifying or
//! replaying: the stored log format changed, which needs a deliberate,
//! versioned migration (`LOG_VERSION`, `SCHEMA_VERSION`). When the change is
//! deliberate and migrated, rewrite the fixture with
//! `WREPL_BLESS=1 cargo test --locked --test it golden` and commit it.
//!
//! Two events are normalised. The takeover event's text names the host the
//! stale writer ran on, and a writer's lease is only judged dead on the same
//! host, so the recorded text holds this machine's host name; the export
//! writes `<host>` instead. The snapshot event's digests name the guest build,
//! the wasmtime version and the state of the guest's memory, which change
//! with every guest build; the export writes `<state>`, `<digest>` and so on
//! (and 0 bytes), so the fixture pins the event's fields, not a guest build.
//! A block's end event holds its cost, whose times and peak memory differ
//! run to run: the export writes 0 for them (its calls and bytes stay); so
//! do a call's start (`at_ms`) and its completion's duration (`ms`).
//! The export recomputes the link hashes from the first normalised event of a
//! session on. (Replayed, the normalised snapshot is never loaded: it names
//! another guest build.)

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use wrepl::replay::log::{Event, LOG_VERSION};
use wrepl::replay::store::{canonical_json, link_hash, LeaseOwner, LogStore, SqliteStore, SCHEMA_VERSION};
use wrepl::{
    replay::player::Verdict, Ambient, Approver, CancellationToken, EvalOptions, EvalResult, Repl, Resumption,
    SessionConfig, Tool, ToolContext, ToolFuture, ToolOutput,
};

use crate::support::shared_engine;

/// The committed fixture.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/golden-log.jsonl");

/// The session the scripted evaluations record, and its fork.
const MAIN_LOG: &str = "golden";
const FORK_LOG: &str = "golden-fork";

/// The pid of the stale lease holder the fork's takeover finds dead: above
/// every default `pid_max`, so it is never a live process.
const DEAD_PID: u32 = 4_194_303;

const CHANGED: &str = "the stored log format changed: this needs a deliberate, versioned migration";

/// A clock that advances 1 ms per read from a fixed instant, and a fixed
/// sequence of random bits (splitmix64 from a fixed seed).
#[derive(Default)]
struct FixedAmbient {
    reads: AtomicU64,
    draws: AtomicU64,
}

impl Ambient for FixedAmbient {
    fn now_us(&self) -> f64 {
        // 2026-01-01T00:00:00Z
        1_767_225_600_000_000.0 + 1000.0 * self.reads.fetch_add(1, Ordering::SeqCst) as f64
    }

    fn random_u64(&self) -> u64 {
        let n = self.draws.fetch_add(1, Ordering::SeqCst) + 1;
        let mut z = 0x5EED_u64.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The calls an evaluation stopped at to wait for input (what
/// [`EvalOptions::waiting`] holds).
type Waiting = Arc<Mutex<BTreeSet<u32>>>;

/// What the approver does with the next call of `ask`.
#[derive(Default)]
struct Gate {
    /// `Some`: stop that call to wait for input (as the MCP server does when
    /// it must ask the client): mark call `index` waiting, cancel the
    /// evaluation, never answer. `None`: approve.
    suspend: Mutex<Option<(Waiting, CancellationToken, u32)>>,
}

impl Approver for Gate {
    fn approve(&self, tool: &str, _input: &Value, _reason: &str) -> BoxFuture<'static, bool> {
        if tool == "ask" {
            if let Some((waiting, cancel, index)) = self.suspend.lock().unwrap().take() {
                waiting.lock().unwrap().insert(index);
                cancel.cancel();
                return Box::pin(std::future::pending());
            }
        }
        Box::pin(async { true })
    }
}

/// `ask(x)`: not read-only (so the approver is asked); echoes its input.
struct Ask;

impl Tool for Ask {
    fn name(&self) -> &str {
        "ask"
    }
    fn description(&self) -> &str {
        "golden: a call that needs approval"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"q": {"type": "number"}}})
    }
    fn read_only(&self, _input: &Value) -> bool {
        false
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        Box::pin(async move { Ok(ToolOutput::new(input, "")) })
    }
}

/// `stall()`: cancels the running evaluation and never completes, so the
/// block ends with a call whose intent has no outcome (what a crash during
/// a call leaves too).
struct Stall(Arc<Mutex<Option<CancellationToken>>>);

impl Tool for Stall {
    fn name(&self) -> &str {
        "stall"
    }
    fn description(&self) -> &str {
        "golden: stop the evaluation while this call runs"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolFuture {
        if let Some(token) = self.0.lock().unwrap().take() {
            token.cancel();
        }
        Box::pin(std::future::pending())
    }
}

/// The tools and approver every context of the scripted session has.
#[derive(Default)]
struct Rig {
    gate: Arc<Gate>,
    stall: Arc<Mutex<Option<CancellationToken>>>,
}

impl Rig {
    /// A context on `session` of `store` (resumed from its log).
    async fn repl(&self, store: &Arc<SqliteStore>, session: &str) -> Repl {
        let log = wrepl::testing::CallLog::default();
        Repl::builder()
            .engine(shared_engine())
            .roots([std::env::temp_dir()])
            .without_builtin_tools()
            .tools(wrepl::testing::test_tools(&log))
            .tool(Arc::new(Ask))
            .tool(Arc::new(Stall(self.stall.clone())))
            .deny(["sleep"])
            .approver(self.gate.clone())
            .ambient(Arc::new(FixedAmbient::default()))
            // Snapshots only where the script takes one (`snapshot_now`): an
            // automatic one depends on how long blocks take.
            .session_config(Some(SessionConfig {
                snapshot_after: Some(std::time::Duration::from_secs(3600)),
                ..SessionConfig::new(session, store.clone() as Arc<dyn LogStore>)
            }))
            .build()
            .await
            .expect("a context on the golden session")
    }
}

async fn eval(repl: &mut Repl, code: &str, opts: EvalOptions) -> EvalResult {
    repl.eval(code, opts).await.expect("eval")
}

fn value(r: &EvalResult) -> Value {
    assert!(r.error.is_none(), "script failed: {:?}\nstderr: {}", r.error, r.stderr);
    r.result.clone().expect("a result value")
}

/// The code of the block that is suspended and then continued.
const SUSPENDED: &str = "const pending = hang({}); pending.catch(() => {}); const asked = await ask({q: 7}); asked.q";

/// Run the scripted evaluations into the store at `path` (which must be
/// new): the golden session and its fork.
async fn record(path: &Path) {
    let store = Arc::new(SqliteStore::open(path).expect("open the store"));
    let rig = Rig::default();
    let mut r = rig.repl(&store, MAIN_LOG).await;
    // Block 0: an intent and its result, a random draw, a clock read, a timer.
    let res = eval(
        &mut r,
        "const x = await t({a: 1}); const coin = Math.random() < 2; const when = Date.now(); \
         await new Promise(done => setTimeout(done, 1)); [x.a, coin, when]",
        EvalOptions::default(),
    )
    .await;
    let got = value(&res);
    assert_eq!((&got[0], &got[1]), (&json!(1), &json!(true)), "{got}");
    assert!(got[2].as_f64().is_some_and(|ms| ms >= 1_767_225_600_000.0), "the fixed clock was not read: {got}");
    // Block 1: a call the host refuses to start (its input is no Unicode
    // text: a lone surrogate), one the permission rules deny, one that fails.
    let res = eval(
        &mut r,
        "const refused = await t({s: '\\ud800'}).catch(e => e.kind); \
         const denied = await sleep({ms: 1}).catch(e => e.kind); \
         const failed = await fail({}).catch(e => e.kind); [refused, denied, failed]",
        EvalOptions::default(),
    )
    .await;
    assert_eq!(value(&res), json!(["invalid-input", "denied", "failed"]));
    // Block 2: a script registers a tool; block 3: the model calls it.
    let res = eval(
        &mut r,
        "registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, \
         async ({n}) => ({doubled: (await t({n})).n * 2}))",
        EvalOptions::default(),
    )
    .await;
    assert!(res.error.is_none(), "{:?}", res.error);
    let res = r.call_registered("double", json!({"n": 21}), EvalOptions::default()).await.expect("registered call");
    assert_eq!(value(&res), json!({"doubled": 42}));
    // Block 4: stopped while a call runs: its intent has no outcome.
    let cancel = CancellationToken::new();
    *rig.stall.lock().unwrap() = Some(cancel.clone());
    let res = eval(&mut r, "await stall({})", EvalOptions { cancel, ..Default::default() }).await;
    assert!(res.error.is_some(), "the stalled block was not stopped: {:?}", res.result);
    // Block 5: suspended at a call that waits for input (call #1), while
    // call #0 runs.
    let (waiting, cancel): (Waiting, _) = (Arc::default(), CancellationToken::new());
    *rig.gate.suspend.lock().unwrap() = Some((waiting.clone(), cancel.clone(), 1));
    let opts = EvalOptions { cancel, waiting: Some(waiting), ..Default::default() };
    let res = eval(&mut r, SUSPENDED, opts).await;
    assert!(res.error.is_some(), "the suspended block was not stopped: {:?}", res.result);
    assert_eq!(r.last_block(), Some(5));
    // The context is rebuilt from the log (which skips the suspended block),
    // then block 6 continues block 5: call #0 is answered outcome_unknown
    // (never run again), call #1 runs now.
    drop(r);
    let mut r = rig.repl(&store, MAIN_LOG).await;
    let opts = EvalOptions { continues: Some(Resumption { block: 5, waiting: vec![1] }), ..Default::default() };
    let res = eval(&mut r, SUSPENDED, opts).await;
    assert_eq!(value(&res), json!(7));
    // Block 7: the restored context goes on.
    // (Each context's fixed clock starts again at the same instant.)
    let res = eval(&mut r, "[x.a, asked.q, typeof (Date.now() - when)]", EvalOptions::default()).await;
    assert_eq!(value(&res), json!([1, 7, "number"]));
    // A snapshot after block 7.
    assert!(r.snapshot_now().await.expect("a snapshot"), "no snapshot was taken");
    drop(r);

    // The fork: a verified copy of the golden log, resumed and extended.
    let copied = wrepl::context::fork_log(&*store, MAIN_LOG, FORK_LOG).expect("fork");
    assert!(copied > 0);
    let mut r = rig.repl(&store, FORK_LOG).await;
    let restored = r.restore_report().expect("restored");
    assert!(
        restored.snapshot.is_some() && restored.blocks.is_empty(),
        "the fork did not start from the snapshot: {restored:?}"
    );
    let res = eval(&mut r, "await t({fork: x.a + asked.q})", EvalOptions::default()).await;
    assert_eq!(value(&res), json!({"fork": 8}));
    drop(r);
    // A writer of the fork died holding its lease (same host, boot and PID
    // namespace, a pid that is gone): the next writer takes the session over
    // and records it. Its lease times are in the future, so the recorded
    // text says "0.0 s ago" whenever the test runs.
    let me = LeaseOwner::this_process();
    assert!(!Path::new(&format!("/proc/{DEAD_PID}")).exists(), "pid {DEAD_PID} is alive here");
    drop(store);
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute(
        "INSERT OR REPLACE INTO leases(session, owner, pid, host, boot_id, start_ticks, pid_ns, since_ms, heartbeat_ms) \
         VALUES (?1, 'a-dead-writer', ?2, ?3, ?4, 1, ?5, ?6, ?6)",
        rusqlite::params![FORK_LOG, DEAD_PID, me.host, me.boot_id, me.pid_ns, i64::MAX],
    )
    .unwrap();
    drop(db);
    let store = Arc::new(SqliteStore::open(path).expect("reopen the store"));
    let r = rig.repl(&store, FORK_LOG).await;
    let notes = &r.restore_report().expect("restored").notes;
    assert!(notes.iter().any(|n| n.contains("took the session over")), "no takeover: {notes:?}");
}

/// One stored event row.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    session: String,
    block: u64,
    seq: u64,
    hash: String,
    json: String,
}

impl Row {
    /// The fixture line: the event's stored JSON text verbatim, after the
    /// row's place and link hash.
    fn line(&self) -> String {
        format!("{}\"event\":{}}}", self.prefix(), self.json)
    }

    fn prefix(&self) -> String {
        format!(
            "{{\"session\":{},\"block\":{},\"seq\":{},\"hash\":{},",
            Value::from(self.session.as_str()),
            self.block,
            self.seq,
            Value::from(self.hash.as_str())
        )
    }
}

/// The fixture's first line: the versions the rows were written with.
fn header() -> String {
    json!({"wrepl_golden_log": {"schema_version": SCHEMA_VERSION, "log_version": LOG_VERSION}}).to_string()
}

/// The store's rows as they are on disk (the table, not a re-encoding), in
/// session and `seq` order, the takeover's host name normalised (see the
/// module documentation).
fn export(path: &Path) -> Vec<Row> {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut stmt = db.prepare("SELECT session, block, seq, hash, json FROM events ORDER BY session, seq").unwrap();
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok(Row {
                session: r.get(0)?,
                block: r.get::<_, i64>(1)? as u64,
                seq: r.get::<_, i64>(2)? as u64,
                hash: r.get(3)?,
                json: r.get(4)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let host = LeaseOwner::this_process().host;
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut rehash = false;
    for mut row in rows {
        if row.seq == 0 {
            rehash = false;
        }
        if let Ok(Event::Takeover { previous }) = serde_json::from_str::<Event>(&row.json) {
            let normal = previous.replace(&format!(" on {host} since "), " on <host> since ");
            let json = canonical_json(&Event::Takeover { previous: normal }).unwrap();
            assert_eq!(
                canonical_json(&Event::Takeover { previous }).unwrap(),
                row.json,
                "the takeover event is not stored as its canonical JSON"
            );
            rehash |= json != row.json;
            row.json = json;
        }
        if let Ok(Event::Snapshot { state, digest, guest, wasmtime, config, bytes }) =
            serde_json::from_str::<Event>(&row.json)
        {
            let stored = Event::Snapshot { state, digest, guest, wasmtime, config, bytes };
            assert_eq!(
                canonical_json(&stored).unwrap(),
                row.json,
                "the snapshot event is not stored as its canonical JSON"
            );
            let normal = Event::Snapshot {
                state: "<state>".into(),
                digest: "<digest>".into(),
                guest: "<guest>".into(),
                wasmtime: "<wasmtime>".into(),
                config: "<config>".into(),
                bytes: 0,
            };
            row.json = canonical_json(&normal).unwrap();
            rehash = true;
        }
        // A call's start and duration differ run to run: the fixture keeps 0.
        if let Ok(Event::Call { tool, input, schema, at_ms: Some(at) }) = serde_json::from_str::<Event>(&row.json) {
            let stored =
                Event::Call { tool: tool.clone(), input: input.clone(), schema: schema.clone(), at_ms: Some(at) };
            assert_eq!(
                canonical_json(&stored).unwrap(),
                row.json,
                "the call event is not stored as its canonical JSON"
            );
            row.json = canonical_json(&Event::Call { tool, input, schema, at_ms: Some(0.0) }).unwrap();
            rehash = true;
        }
        if let Ok(Event::Done { call, ok, payload, error_kind, ms: Some(ms) }) =
            serde_json::from_str::<Event>(&row.json)
        {
            let stored =
                Event::Done { call, ok, payload: payload.clone(), error_kind: error_kind.clone(), ms: Some(ms) };
            assert_eq!(
                canonical_json(&stored).unwrap(),
                row.json,
                "the done event is not stored as its canonical JSON"
            );
            row.json = canonical_json(&Event::Done { call, ok, payload, error_kind, ms: Some(0.0) }).unwrap();
            rehash = true;
        }
        // A block's cost holds times and memory, which differ run to run:
        // the fixture pins its fields, its calls and bytes, not the figures.
        if let Ok(Event::End { threw, error, stopped, cost: Some(cost) }) = serde_json::from_str::<Event>(&row.json) {
            let stored = Event::End { threw, error: error.clone(), stopped, cost: Some(cost.clone()) };
            assert_eq!(canonical_json(&stored).unwrap(), row.json, "the end event is not stored as its canonical JSON");
            let normal = wrepl::Cost { guest_cpu_us: 0, wall_ms: 0.0, peak_memory_bytes: 0, ..cost };
            row.json = canonical_json(&Event::End { threw, error, stopped, cost: Some(normal) }).unwrap();
            rehash = true;
        }
        if rehash {
            let prev = out.last().filter(|p| p.session == row.session).map_or("", |p| p.hash.as_str());
            row.hash = link_hash(prev, row.block, row.seq, &row.json);
        }
        out.push(row);
    }
    out
}

fn render(rows: &[Row]) -> String {
    let mut text = header();
    text.push('\n');
    for row in rows {
        text.push_str(&row.line());
        text.push('\n');
    }
    text
}

/// Parse the fixture (every line must be understood).
fn parse(text: &str) -> Vec<Row> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header().as_str()), "{CHANGED}: the fixture's versions differ from this build's");
    lines
        .enumerate()
        .map(|(i, line)| {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("fixture line {}: {e}", i + 2));
            let field = |k: &str| v[k].clone();
            let row = Row {
                session: field("session").as_str().expect("session").to_string(),
                block: field("block").as_u64().expect("block"),
                seq: field("seq").as_u64().expect("seq"),
                hash: field("hash").as_str().expect("hash").to_string(),
                json: String::new(),
            };
            let prefix = row.prefix();
            let json = line
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix("\"event\":"))
                .and_then(|rest| rest.strip_suffix('}'))
                .unwrap_or_else(|| panic!("fixture line {} is not in the fixture's layout", i + 2));
            Row { json: json.to_string(), ..row }
        })
        .collect()
}

/// The fixture's rows written into a new store at `path`, behind the
/// store's back (as an older build would have left them).
fn import(path: &Path, rows: &[Row]) {
    drop(SqliteStore::open(path).expect("create the store"));
    let mut db = rusqlite::Connection::open(path).unwrap();
    let tx = db.transaction().unwrap();
    let sessions: BTreeSet<&str> = rows.iter().map(|r| r.session.as_str()).collect();
    for s in &sessions {
        tx.execute(
            "INSERT INTO sessions(name, created_at_ms, log_version) VALUES (?1, 0, ?2)",
            rusqlite::params![s, LOG_VERSION],
        )
        .unwrap();
    }
    for r in rows {
        tx.execute(
            "INSERT INTO events(session, seq, block, json, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![r.session, r.seq as i64, r.block as i64, r.json, r.hash],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// The committed log verifies, decodes, re-encodes to the same text and
/// replays with this build's code.
#[tokio::test(flavor = "multi_thread")]
async fn the_committed_log_verifies_and_replays() {
    let text = std::fs::read_to_string(FIXTURE)
        .unwrap_or_else(|e| panic!("{FIXTURE}: {e}; write it with WREPL_BLESS=1 cargo test --locked --test it golden"));
    let rows = parse(&text);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden.sqlite3");
    import(&path, &rows);
    let store = Arc::new(SqliteStore::open_existing(&path).expect("open the imported store"));
    let mut kinds = BTreeSet::new();
    for session in [MAIN_LOG, FORK_LOG] {
        let expected: Vec<&Row> = rows.iter().filter(|r| r.session == session).collect();
        assert!(!expected.is_empty(), "the fixture has no session {session:?}");
        let report = store.verify(session).expect("verify");
        assert!(
            report.ok && report.events == expected.len() as u64,
            "{CHANGED}: the committed session {session:?} no longer verifies: {:?}",
            report.first_bad
        );
        let loaded = store.load(session).expect("load");
        assert_eq!(loaded.len(), expected.len());
        for (stored, row) in loaded.iter().zip(&expected) {
            assert_eq!((stored.block, stored.seq, stored.hash.as_str()), (row.block, row.seq, row.hash.as_str()));
            let again = canonical_json(&stored.event).unwrap();
            assert_eq!(again, row.json, "{CHANGED}: event {} of {session:?} re-encodes differently", row.seq);
            let v: Value = serde_json::from_str(&row.json).unwrap();
            kinds.insert(v["kind"].as_str().unwrap_or_default().to_string());
        }
    }
    // Every kind of event the log stores is in the fixture.
    let all = [
        "begin",
        "call",
        "done",
        "refused",
        "timer",
        "now",
        "random",
        "end",
        "takeover",
        "suspended",
        "continues",
        "snapshot",
    ];
    let all: BTreeSet<String> = all.iter().map(|k| k.to_string()).collect();
    assert_eq!(kinds, all, "the fixture lacks a kind of event");
    // The fork starts as a copy of the golden log (the chain covers no
    // session name, so its hashes are the same).
    let main: Vec<&Row> = rows.iter().filter(|r| r.session == MAIN_LOG).collect();
    let fork: Vec<&Row> = rows.iter().filter(|r| r.session == FORK_LOG).collect();
    for (a, b) in main.iter().zip(&fork) {
        assert_eq!((a.block, a.seq, &a.hash, &a.json), (b.block, b.seq, &b.hash, &b.json));
    }

    // Replay: the golden session restores with this build, no block drifts,
    // and the stopped block's unknown outcome is reported (nothing runs).
    let rig = Rig::default();
    let mut r = rig.repl(&store, MAIN_LOG).await;
    let report = r.restore_report().expect("restored").clone();
    let lines: Vec<String> = report.blocks.iter().map(|b| b.describe()).collect();
    assert!(report.blocks.iter().all(|b| b.verdict != Verdict::Drift), "{CHANGED}: replay drifts: {lines:#?}");
    let unknown: Vec<(u64, Vec<String>)> = report
        .blocks
        .iter()
        .filter(|b| !b.outcome_unknown.is_empty())
        .map(|b| (b.block, b.outcome_unknown.clone()))
        .collect();
    // Block 4's call has no recorded outcome; block 6's `outcome-unknown`
    // result is recorded, so it replays as any result; suspended block 5 is
    // not replayed (block 6 continued it).
    assert_eq!(unknown, vec![(4, vec!["#0 stall".to_string()])], "{lines:#?}");
    let replayed: Vec<u64> = report.blocks.iter().map(|b| b.block).collect();
    assert_eq!(replayed, vec![0, 1, 2, 3, 4, 6, 7], "{lines:#?}");
    // The committed snapshot names no guest build (normalised): never loaded.
    assert!(
        report.notes.iter().any(|n| n.contains("(after block 7) was not loaded: it was taken by another guest build")),
        "{:?}",
        report.notes
    );
    let res = eval(&mut r, "[x.a, asked.q]", EvalOptions::default()).await;
    assert_eq!(value(&res), json!([1, 7]));
    assert!(r.registered_tools().iter().any(|t| t.name == "double"), "the registered tool was not restored");
    drop(r);
    // The fork (which ends in the takeover) restores too.
    let mut r = rig.repl(&store, FORK_LOG).await;
    let report = r.restore_report().expect("restored").clone();
    let lines: Vec<String> = report.blocks.iter().map(|b| b.describe()).collect();
    assert!(report.blocks.iter().all(|b| b.verdict != Verdict::Drift), "{CHANGED}: replay drifts: {lines:#?}");
    let res = eval(&mut r, "x.a + asked.q", EvalOptions::default()).await;
    assert_eq!(value(&res), json!(8));
}

/// The same evaluations, recorded again, give the committed bytes.
#[tokio::test(flavor = "multi_thread")]
async fn recording_again_gives_the_committed_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden.sqlite3");
    record(&path).await;
    let fresh = render(&export(&path));
    if std::env::var_os("WREPL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(FIXTURE, &fresh).unwrap();
        eprintln!("wrote {FIXTURE}");
        return;
    }
    let committed = std::fs::read_to_string(FIXTURE)
        .unwrap_or_else(|e| panic!("{FIXTURE}: {e}; write it with WREPL_BLESS=1 cargo test --locked --test it golden"));
    if fresh != committed {
        let first = fresh
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| fresh.lines().count().min(committed.lines().count()));
        panic!(
            "{CHANGED}.\nThe recording of the scripted evaluations differs from {FIXTURE} at line {}:\n  committed: {}\n  recorded:  {}\n\
             If the change is deliberate (and old logs are migrated or still read), regenerate the fixture with\n  \
             WREPL_BLESS=1 cargo test --locked --test it golden\nand commit it with the migration.",
            first + 1,
            committed.lines().nth(first).unwrap_or("(end of file)"),
            fresh.lines().nth(first).unwrap_or("(end of file)"),
        );
    }
}
