//! Test helpers: a shared engine, a `TestSandbox` builder and test tools.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wrepl::testing::CallLog;
use wrepl::{Ambient, EngineOptions, EvalOptions, EvalResult, Limits, Repl, ReplBuilder, SandboxEngine};

pub use wrepl::testing::TEST_TOOLS;

/// One engine for all tests that use default engine options.
pub fn shared_engine() -> Arc<SandboxEngine> {
    static ENGINE: OnceLock<Arc<SandboxEngine>> = OnceLock::new();
    ENGINE.get_or_init(|| Arc::new(SandboxEngine::new(EngineOptions::default()).expect("engine"))).clone()
}

/// A builder on the shared engine, rooted at the temporary directory.
pub fn builder() -> ReplBuilder {
    Repl::builder().engine(shared_engine()).roots([std::env::temp_dir()])
}

/// Builds a [`Repl`] for a test: no built-in tools unless asked for.
pub struct TestSandbox {
    engine: Option<EngineOptions>,
    builder: ReplBuilder,
}

impl Default for TestSandbox {
    fn default() -> Self {
        Self { engine: None, builder: Repl::builder().roots([std::env::temp_dir()]).without_builtin_tools() }
    }
}

impl TestSandbox {
    pub fn new() -> Self {
        Self::default()
    }

    /// Use a dedicated engine with these options.
    pub fn engine(mut self, e: EngineOptions) -> Self {
        self.engine = Some(e);
        self
    }

    /// Offer the test tools named `names` (of [`TEST_TOOLS`]), logging into `tools.log`.
    pub fn tools(mut self, tools: Arc<TestTools>, names: &[&str]) -> Self {
        for t in wrepl::testing::test_tools(&tools.log) {
            if names.contains(&t.name()) {
                self.builder = self.builder.tool(t);
            }
        }
        self
    }

    pub fn ambient(mut self, a: Arc<dyn Ambient>) -> Self {
        self.builder = self.builder.ambient(a);
        self
    }

    pub fn hard_wall(mut self, d: Duration) -> Self {
        self.builder = self.builder.with_limits(|l| l.hard_wall = d);
        self
    }

    pub fn limits(mut self, f: impl FnOnce(&mut Limits)) -> Self {
        self.builder = self.builder.with_limits(f);
        self
    }

    pub fn configure(mut self, f: impl FnOnce(ReplBuilder) -> ReplBuilder) -> Self {
        self.builder = f(self.builder);
        self
    }

    pub async fn build(self) -> Repl {
        let engine = match self.engine {
            Some(e) => Arc::new(SandboxEngine::new(e).expect("engine")),
            None => shared_engine(),
        };
        self.builder.engine(engine).build().await.expect("repl")
    }
}

/// Evaluate with default options; panics on API errors (not script errors).
pub async fn ev(repl: &mut Repl, code: &str) -> EvalResult {
    repl.eval(code, EvalOptions::default()).await.expect("eval")
}

/// Evaluate with a script budget in milliseconds.
pub async fn ev_timeout(repl: &mut Repl, code: &str, ms: u64) -> EvalResult {
    repl.eval(code, EvalOptions { timeout: Some(Duration::from_millis(ms)), ..Default::default() }).await.expect("eval")
}

/// The result value, asserting the script succeeded.
pub fn ok(r: &EvalResult) -> serde_json::Value {
    assert!(r.error.is_none(), "script failed: {:?}\nstderr: {}", r.error, r.stderr);
    r.result.clone().expect("a result value")
}

/// The error name and message, asserting the script failed.
pub fn err(r: &EvalResult) -> (String, String) {
    let e = r.error.as_ref().unwrap_or_else(|| panic!("expected an error, got {:?}", r.result));
    (e.name.clone(), e.message.clone())
}

/// The test tools' call log (the tools are wrepl's own, `wrepl::testing`,
/// shared with the benchmarks): every started call is logged.
#[derive(Default)]
pub struct TestTools {
    pub log: CallLog,
}

pub fn test_tools() -> Arc<TestTools> {
    Arc::new(TestTools::default())
}

/// Host pids of live (not zombie) processes with an argument equal to
/// `marker`. Confined Bash commands run in their own PID namespace, so tests
/// find them by a unique argument instead of the pid they report.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == marker.as_bytes()))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// The number of the `key` line (`VmRSS:`, `VmSwap:`, …, in kB) of
/// `/proc/PID/status` (`pid` may be `self`).
pub fn proc_status(pid: impl std::fmt::Display, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().unwrap()))
        .unwrap_or_else(|| panic!("no {key} line in /proc/{pid}/status"))
}

/// True while process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// Runs the `wrepl` binary in `dir` with `args` (stdin closed) to its end.
pub fn wrepl_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// A finished command's standard output, as text.
pub fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A finished command's standard error, as text.
pub fn err_text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
