//! Durable sessions: record, resume by replay (no side effect runs twice),
//! drift verdicts, outcome_unknown after a crash, tamper detection. Every
//! test runs against both backends: a SQLite file and a PostgreSQL
//! database of its own (see `postgres.rs`).

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use wrepl::replay::log::Event;
use wrepl::replay::store::{LogStore, PostgresStore, SqliteStore};
use wrepl::{replay::player::Verdict, SessionConfig};

use crate::support::*;

/// Where a test's sessions are kept.
pub(crate) enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Backend {
    /// SQLite: a file in a directory of its own.
    pub(crate) fn sqlite() -> Option<Self> {
        Some(Self::Sqlite(tempfile::tempdir().unwrap()))
    }

    /// PostgreSQL: a fresh database on the test cluster (`None` when there
    /// is none and it is not required).
    pub(crate) fn postgres() -> Option<Self> {
        crate::postgres::fresh_db().map(Self::Postgres)
    }

    /// The `--store` argument.
    pub(crate) fn arg(&self) -> String {
        match self {
            Self::Sqlite(dir) => dir.path().join("s.sqlite3").to_string_lossy().into_owned(),
            Self::Postgres(url) => url.clone(),
        }
    }

    /// The store, opened.
    fn open(&self) -> Arc<dyn LogStore> {
        match self {
            Self::Sqlite(_) => Arc::new(SqliteStore::open(std::path::Path::new(&self.arg())).unwrap()),
            Self::Postgres(url) => Arc::new(PostgresStore::open(url).unwrap()),
        }
    }

    /// Alter event `seq` of `session` behind the store's back.
    fn tamper(&self, session: &str, seq: i64, from: &str, to: &str) {
        match self {
            Self::Sqlite(_) => {
                let db = rusqlite::Connection::open(self.arg()).unwrap();
                db.execute(
                    "UPDATE events SET json = replace(json, ?1, ?2) WHERE session = ?3 AND seq = ?4",
                    rusqlite::params![from, to, session, seq],
                )
                .unwrap();
            }
            Self::Postgres(url) => {
                let (url, session, from, to) = (url.clone(), session.to_string(), from.to_string(), to.to_string());
                std::thread::spawn(move || {
                    let mut db = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                    db.execute(
                        "UPDATE wrepl_events SET json = replace(json, $1, $2) WHERE session = $3 AND seq = $4",
                        &[&from, &to, &session, &seq],
                    )
                    .unwrap();
                })
                .join()
                .unwrap();
            }
        }
    }
}

impl Backend {
    /// Run `sqlite` or `pg` (a statement without parameters) on the store
    /// behind its back; the rows it changed.
    pub(crate) fn exec(&self, sqlite: &str, pg: &str) -> u64 {
        match self {
            Self::Sqlite(_) => rusqlite::Connection::open(self.arg()).unwrap().execute(sqlite, []).unwrap() as u64,
            Self::Postgres(url) => {
                let (url, pg) = (url.clone(), pg.to_string());
                std::thread::spawn(move || postgres::Client::connect(&url, postgres::NoTls).unwrap().execute(&pg, &[]))
                    .join()
                    .unwrap()
                    .unwrap()
            }
        }
    }

    /// The pid holding `session`'s lease, if any.
    pub(crate) fn lease_pid(&self, session: &str) -> Option<u32> {
        match self {
            Self::Sqlite(_) => {
                let db = rusqlite::Connection::open(self.arg()).ok()?;
                db.query_row("SELECT pid FROM leases WHERE session = ?1", [session], |r| r.get::<_, i64>(0))
                    .ok()
                    .map(|p| p as u32)
            }
            Self::Postgres(url) => {
                let (url, session) = (url.clone(), session.to_string());
                std::thread::spawn(move || {
                    let mut db = postgres::Client::connect(&url, postgres::NoTls).ok()?;
                    let row = db.query_opt("SELECT pid FROM wrepl_leases WHERE session = $1", &[&session]).ok()??;
                    row.get::<_, Option<i64>>(0).map(|p| p as u32)
                })
                .join()
                .unwrap()
            }
        }
    }
}

/// `#[test]`s running `$body(backend)` on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! on_both {
    ($name:ident, $body:ident) => {
        mod $name {
            #[test]
            fn sqlite() {
                if let Some(b) = $crate::sessions::Backend::sqlite() {
                    super::$body(b);
                }
            }
            #[test]
            fn postgres() {
                if let Some(b) = $crate::sessions::Backend::postgres() {
                    super::$body(b);
                }
            }
        }
    };
    (async $name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread")]
            async fn sqlite() {
                if let Some(b) = $crate::sessions::Backend::sqlite() {
                    super::$body(b).await;
                }
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn postgres() {
                if let Some(b) = $crate::sessions::Backend::postgres() {
                    super::$body(b).await;
                }
            }
        }
    };
}

on_both!(separate_processes_continue_one_session, separate_processes);
fn separate_processes(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    let store = store.as_str();
    let o = wrepl_in(dir.path(), &["eval", "--store", store, "--session", "s", "-e", "let n = 1"]);
    assert!(o.status.success(), "{}", err_text(&o));
    let o = wrepl_in(dir.path(), &["eval", "--store", store, "--session", "s", "-e", "n + 1"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "2");
    assert!(err_text(&o).contains("restored 1 block(s): 1 ok"), "{}", err_text(&o));
}

on_both!(resume_does_not_rerun_side_effects, no_rerun);
fn no_rerun(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    let store = store.as_str();
    let code = "const before = await sh('echo tick >> counter; wc -l < counter'); const r = Math.random(); const t0 = Date.now(); before";
    let o = wrepl_in(dir.path(), &["eval", "--store", store, "--session", "c", "--allow", "Bash", "-e", code]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "1");
    let o = wrepl_in(
        dir.path(),
        &[
            "eval",
            "--store",
            store,
            "--session",
            "c",
            "--allow",
            "Bash",
            "-e",
            "await sh('echo tick >> counter'); [before.trim(), typeof r, t0 > 0]",
        ],
    );
    assert!(o.status.success(), "{}", err_text(&o));
    assert!(out(&o).contains("\"1\""), "{}", out(&o));
    // a third process restores both blocks; the counter shows exactly one write per original call
    let o = wrepl_in(dir.path(), &["eval", "--store", store, "--session", "c", "-e", "[r === r, before]"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert!(err_text(&o).contains("restored 2 block(s): 2 ok"), "{}", err_text(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("counter")).unwrap(), "tick\ntick\n");
    // the log shows the calls and verifies
    let o = wrepl_in(dir.path(), &["log", "show", "c", "--store", store]);
    assert!(out(&o).contains("call #0 Bash"), "{}", out(&o));
    let o = wrepl_in(dir.path(), &["log", "verify", "c", "--store", store]);
    assert!(o.status.success(), "{}", out(&o));
    assert!(out(&o).contains("hash chain and head intact"));
}

async fn resumed(store: Arc<dyn LogStore>, name: &str) -> wrepl::Repl {
    let session = SessionConfig::new(name, store);
    TestSandbox::new().tools(test_tools(), TEST_TOOLS).configure(|b| b.session_config(Some(session))).build().await
}

fn call(tool: &str) -> Event {
    Event::Call { tool: tool.into(), input: "{}".into(), schema: String::new(), at_ms: None }
}

fn done(i: u32) -> Event {
    Event::Done { call: i, ok: true, payload: "{}".into(), error_kind: String::new(), ms: None }
}

fn block(code: &str, body: Vec<Event>, threw: bool) -> Vec<Event> {
    let mut v = vec![Event::Begin { code: code.into(), boundary: "main".into(), view: Default::default() }];
    v.extend(body);
    v.push(Event::End { threw, error: None, stopped: false, cost: None });
    v
}

on_both!(async drift_verdicts_name_the_first_divergence, drift_verdicts);
async fn drift_verdicts(backend: Backend) {
    let store = backend.open();
    let blocks = [
        // 0: faithful
        block("globalThis.a = (await t({})); 1", vec![call("t"), done(0)], false),
        // 1: count: the code makes two calls, the log has one
        block("await t({}); await t({}); 2", vec![call("t"), done(0)], false),
        // 2: order: the log has `sleep` where the code calls `t`
        block("await t({}); 3", vec![call("sleep"), done(0)], false),
        // 3: throw position: recorded as a throw, replays as a completion
        block("4", vec![], true),
        // 4: a block that threw and throws again
        block("throw new Error('x')", vec![], true),
        // 5: the code makes fewer calls than recorded
        block("5", vec![call("t"), done(0)], false),
    ];
    for (i, b) in blocks.iter().enumerate() {
        let evs: Vec<(u64, Event)> = b.iter().cloned().map(|e| (i as u64, e)).collect();
        store.append("d", &evs).unwrap();
    }
    let r = resumed(store.clone(), "d").await;
    let rep = r.restore_report().unwrap();
    let verdicts: Vec<Verdict> = rep.blocks.iter().map(|b| b.verdict).collect();
    assert_eq!(
        verdicts,
        vec![Verdict::Ok, Verdict::Drift, Verdict::Drift, Verdict::Drift, Verdict::Threw, Verdict::Drift],
        "{rep:?}"
    );
    let count = rep.blocks[1].divergence.as_ref().unwrap();
    assert_eq!(count.call, Some(1));
    assert!(rep.blocks[1].location.as_deref().is_some_and(|l| l.starts_with("1:1")), "{:?}", rep.blocks[1]);
    assert!(count.actual.contains("call of t"), "{count:?}");
    let order = rep.blocks[2].divergence.as_ref().unwrap();
    assert_eq!(order.call, Some(0));
    assert!(order.expected.contains("sleep") && order.actual.contains("t"), "{order:?}");
    assert!(rep.summary.contains("6 block(s)"), "{}", rep.summary);
    // the faithful block's effect is back
    let mut r = r;
    assert_eq!(ok(&ev(&mut r, "a").await), json!({}));
}

on_both!(async extra_calls_beyond_the_cache_run_nothing, extra_calls);
async fn extra_calls(backend: Backend) {
    let store = backend.open();
    let b = block("await t({}); await sleep({ms: 1}); 1", vec![call("t"), done(0)], false);
    store.append("x", &b.into_iter().map(|e| (0, e)).collect::<Vec<_>>()).unwrap();
    let tools = test_tools();
    let session = SessionConfig::new("x", store);
    let r = TestSandbox::new()
        .tools(tools.clone(), TEST_TOOLS)
        .configure(|b| b.session_config(Some(session)))
        .build()
        .await;
    assert_eq!(r.restore_report().unwrap().blocks[0].verdict, Verdict::Drift);
    assert!(tools.log.lock().unwrap().is_empty(), "replay must not run any tool");
}

on_both!(kill_during_a_call_resumes_as_outcome_unknown, killed_call);
fn killed_call(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args([
            "eval",
            "--store",
            &store,
            "--session",
            "k",
            "--allow",
            "Bash",
            "-e",
            "let before = 1; await sh('echo ran >> marker; sleep 3')",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait until the command is running (its intent is on disk by then)
    for _ in 0..100 {
        if dir.path().join("marker").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(dir.path().join("marker").exists(), "the command did not start");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let o = wrepl_in(dir.path(), &["eval", "--store", &store, "--session", "k", "--allow", "Bash", "-e", "before"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "1");
    assert!(err_text(&o).contains("1 call(s) with unknown outcome"), "{}", err_text(&o));
    assert!(err_text(&o).contains("#0 Bash"), "{}", err_text(&o));
    // never re-run: the marker has one line
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(std::fs::read_to_string(dir.path().join("marker")).unwrap(), "ran\n");
    let o = wrepl_in(dir.path(), &["log", "show", "k", "--store", &store]);
    assert!(out(&o).contains("outcome_unknown"), "{}", out(&o));
}

on_both!(tampered_log_is_detected, tampered);
fn tampered(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = backend.arg();
    let s = s.as_str();
    let o = wrepl_in(dir.path(), &["eval", "--store", s, "--session", "t", "-e", "let secret = 'a'", "-e", "secret"]);
    assert!(o.status.success(), "{}", err_text(&o));
    let o = wrepl_in(dir.path(), &["log", "verify", "t", "--store", s]);
    assert!(o.status.success());
    backend.tamper("t", 0, "secret = 'a'", "secret = 'b'");
    let o = wrepl_in(dir.path(), &["log", "verify", "t", "--store", s]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("TAMPERED at event 0"), "{}", out(&o));
}

on_both!(reads_are_not_written_ahead_but_a_write_after_them_is, reads_not_written_ahead);
fn reads_not_written_ahead(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.arg();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    // A hook outside the recording says when the read has finished.
    let settings = dir.path().join("settings.json");
    let hook = json!({"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
        "command": format!("cat > /dev/null; touch {}", dir.path().join("read-done").display())}]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
    let spawn = |code: &str| {
        Command::new(env!("CARGO_BIN_EXE_wrepl"))
            .args(["eval", "--store", &store, "--session", "r", "--allow", "Bash", "--settings"])
            .arg(&settings)
            .args(["-e", code])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let wait_for = |name: &str| {
        for _ in 0..200 {
            if dir.path().join(name).exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{name} never appeared");
    };
    // Killed after a read, while waiting: the read's intent and result were
    // not forced to disk, so the block left nothing (a read has no effect).
    let mut child = spawn("const c = await cat('a.txt'); await new Promise(r => setTimeout(r, 60000))");
    wait_for("read-done");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let o = wrepl_in(dir.path(), &["log", "show", "r", "--store", &store]);
    assert!(!out(&o).contains("Read"), "the read was written ahead: {}", out(&o));
    std::fs::remove_file(dir.path().join("read-done")).unwrap();
    // Killed while a command runs after a read: the command's intent is
    // durable, and the read before it was written with it, in order.
    let mut child = spawn("const d = await cat('a.txt'); await sh('echo ran >> marker; sleep 5')");
    wait_for("marker");
    child.kill().unwrap();
    child.wait().unwrap();
    let o = wrepl_in(dir.path(), &["eval", "--store", &store, "--session", "r", "-e", "[typeof c, d]"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), r#"["undefined","alpha"]"#, "{}", err_text(&o));
    assert!(
        err_text(&o).contains("1 call(s) with unknown outcome") && err_text(&o).contains("#1 Bash"),
        "{}",
        err_text(&o)
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("marker")).unwrap(), "ran\n", "never run again");
}
