//! Record-vs-replay equivalence. Small scripts are generated from a grammar
//! (calls of a deterministic tool with a side effect, `Date.now()`,
//! `Math.random()`, timers, caught tool failures, random branches, top-level
//! declarations, throws), evaluated block by block into a recorded session,
//! then a fresh `Repl` resumes the session from the store. Invariants:
//! - recording: every block ends without a timeout or a context reset;
//! - resume runs no tool (the side-effect counter does not move);
//! - one verdict per recorded block, `ok` where the block completed and
//!   `threw` where it threw (never `drift`);
//! - the restored state equals the recorded one (the accumulated values,
//!   including clock readings, random draws and tool results);
//! - snapshots: the recording takes one after every block; replay from
//!   nothing reaches the state each of them holds (`verify_replay`: no
//!   non-determinism), and a resume from the newest gives the same state
//!   without replaying anything.
#![no_main]

use std::sync::Arc;
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use wrepl::replay::store::SqliteStore;
use wrepl::{EvalOptions, Repl, SessionConfig, replay::player::Verdict};
use wrepl_fuzz::{runtime, FuzzTools};

#[derive(Debug, Arbitrary)]
enum Stmt {
    /// A call whose result is the tool's call counter (a side effect).
    Count(u8),
    Echo(u8),
    /// Two calls in flight at once.
    Parallel(u8, u8),
    /// A tool failure, caught.
    FailCaught(u8),
    Now,
    Random,
    /// A timer (0-3 ms) resolving a value.
    Timer(u8, u8),
    /// A timer racing a call.
    TimerRace(u8),
    /// A branch on a random draw.
    RandomBranch,
    /// A top-level `let`/`const` (names repeat across blocks).
    Decl(u8, bool),
    Throw(u8),
    /// A throw on a random draw.
    ThrowIfRandom,
}

fn render(s: &Stmt) -> String {
    match s {
        Stmt::Count(k) => format!("L.push((await count({{k: {k}}})).n);"),
        Stmt::Echo(k) => format!("L.push(await echo({{k: {k}, s: 'x{k}'}}));"),
        Stmt::Parallel(a, b) => {
            format!(
                "L.push(...(await Promise.all([count({{a: {a}}}), echo({{b: {b}}})])).map((x) => JSON.stringify(x)));"
            )
        }
        Stmt::FailCaught(k) => {
            format!("try {{ await fail({{k: {k}}}); L.push('no') }} catch (e) {{ L.push(e.kind + e.message) }}")
        }
        Stmt::Now => "L.push(Date.now());".into(),
        Stmt::Random => "L.push(Math.random());".into(),
        Stmt::Timer(d, v) => format!("L.push(await new Promise((r) => setTimeout(() => r({v}), {})));", d % 4),
        Stmt::TimerRace(v) => {
            format!("setTimeout(() => L.push('tm{v}'), 0); L.push((await count({{race: {v}}})).n); await new Promise((r) => setTimeout(r, 1));")
        }
        Stmt::RandomBranch => "if (Math.random() < 0.5) L.push('heads'); else L.push('tails');".into(),
        Stmt::Decl(n, c) => format!("{} d{n} = L.length; L.push(d{n});", if *c { "const" } else { "let" }, n = n % 4),
        Stmt::Throw(k) => format!("throw new Error('stop {k}');"),
        Stmt::ThrowIfRandom => "if (Math.random() < 0.3) throw new RangeError('unlucky');".into(),
    }
}

#[derive(Debug, Arbitrary)]
struct Session {
    blocks: Vec<Vec<Stmt>>,
}

const STATE: &str = "JSON.stringify(globalThis.L ?? null)";

/// A REPL with the fuzzing tools, recording into (and resuming) session `s`,
/// taking a snapshot after every block (`Some(ZERO)`) or none at all.
async fn repl(tools: &FuzzTools, store: Arc<SqliteStore>, snapshot_after: Option<Duration>) -> Repl {
    let cfg = SessionConfig { snapshot_after, ..SessionConfig::new("s", store) };
    tools.builder().session_config(Some(cfg)).build().await.expect("repl")
}

fuzz_target!(|session: Session| {
    let blocks: Vec<String> = session
        .blocks
        .iter()
        .take(6)
        .map(|b| {
            let mut code = String::from("globalThis.L ??= [];\n");
            let mut declared = [false; 4];
            for s in b.iter().take(8) {
                // A name is declared once per block (later blocks re-declare it).
                if let Stmt::Decl(n, _) = s {
                    let n = usize::from(n % 4);
                    if std::mem::replace(&mut declared[n], true) {
                        code.push_str(&format!("d{n} = L.length; L.push(d{n});\n"));
                        continue;
                    }
                }
                code.push_str(&render(s));
                code.push('\n');
            }
            code
        })
        .collect();
    runtime().block_on(async {
        let store = Arc::new(SqliteStore::in_memory().expect("store"));
        let tools = FuzzTools::default();
        let mut recording = repl(&tools, store.clone(), Some(Duration::ZERO)).await;
        let opts = || EvalOptions { timeout: Some(Duration::from_secs(10)), ..Default::default() };
        let mut expected = Vec::new();
        for code in blocks.iter().map(String::as_str).chain([STATE]) {
            let r = recording.eval(code, opts()).await.expect("eval");
            assert!(!r.timed_out && r.context_reset.is_none(), "recording failed: {r:?}\n{code}");
            if let Some(e) = &r.error {
                let generated = e.message.starts_with("stop ") || e.message == "unlucky";
                assert!(generated, "the generated block failed unexpectedly: {e:?}\n{code}");
            }
            expected.push(if r.error.is_some() { Verdict::Threw } else { Verdict::Ok });
        }
        let recorded_state = recording.eval(STATE, opts()).await.expect("eval").result;
        assert!(recorded_state.is_some());
        drop(recording);

        let calls_before = tools.started();
        let mut resumed = repl(&tools, store.clone(), None).await;
        assert_eq!(tools.started(), calls_before, "resuming ran a tool again");
        let report = resumed.restore_report().expect("restore report").clone();
        let verdicts: Vec<Verdict> = report.blocks.iter().map(|b| b.verdict).collect();
        // The second STATE evaluation above was recorded too.
        expected.push(Verdict::Ok);
        assert_eq!(verdicts, expected, "replay verdicts differ from the recording: {report:?}\n{blocks:#?}");
        let replayed_state = resumed.eval(STATE, opts()).await.expect("eval").result;
        assert_eq!(replayed_state, recorded_state, "replayed state differs\n{blocks:#?}");
        assert_eq!(tools.started(), calls_before, "the state check ran a tool");
        drop(resumed);

        // Every snapshot holds the state replay reaches at its block.
        let mut checker = tools.builder().build().await.expect("repl");
        let (_, checks) = checker.verify_replay(&*store, "s").await.expect("verify_replay");
        assert!(checks.len() >= blocks.len(), "a snapshot is missing: {checks:?}");
        for c in &checks {
            assert!(c.problem.is_none(), "{c:?}\n{blocks:#?}");
        }
        // A resume from the newest snapshot replays nothing and has the state.
        let mut fast = repl(&tools, store.clone(), Some(Duration::ZERO)).await;
        let report = fast.restore_report().expect("restore report").clone();
        // (Only the block the resume above recorded comes after it.)
        assert!(report.snapshot.is_some() && report.blocks.len() == 1, "{report:?}");
        let state = fast.eval(STATE, opts()).await.expect("eval").result;
        assert_eq!(state, recorded_state, "the state restored from a snapshot differs\n{blocks:#?}");
        assert_eq!(tools.started(), calls_before, "the snapshot resume ran a tool");
    });
});
