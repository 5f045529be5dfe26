//! Test helpers: a shared engine, a `TestSandbox` builder and test tools.

#![allow(dead_code)]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use wrepl::repl::{EvalOptions, EvalResult, Repl, ReplOptions};
use wrepl::runtime::{
    Ambient, CallFailure, CallFuture, CallHandler, EngineOptions, SandboxEngine, SandboxOptions, ToolBinding,
};

/// One engine for all tests that use default engine options.
pub fn shared_engine() -> Arc<SandboxEngine> {
    static ENGINE: OnceLock<Arc<SandboxEngine>> = OnceLock::new();
    ENGINE.get_or_init(|| Arc::new(SandboxEngine::new(EngineOptions::default()).expect("engine"))).clone()
}

/// Builds a [`Repl`] for a test.
#[derive(Default)]
pub struct TestSandbox {
    engine: Option<EngineOptions>,
    options: ReplOptions,
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

    pub fn tools(mut self, handler: Arc<dyn CallHandler>, names: &[&str]) -> Self {
        self.options.sandbox.handler = handler;
        self.options.sandbox.tools =
            names.iter().map(|n| ToolBinding { name: n.to_string(), global: n.to_string() }).collect();
        self
    }

    pub fn ambient(mut self, a: Arc<dyn Ambient>) -> Self {
        self.options.sandbox.ambient = a;
        self
    }

    pub fn hard_wall(mut self, d: Duration) -> Self {
        self.options.hard_wall = d;
        self
    }

    pub fn sandbox_options(mut self, f: impl FnOnce(&mut SandboxOptions)) -> Self {
        f(&mut self.options.sandbox);
        self
    }

    pub fn repl_options(mut self, f: impl FnOnce(&mut ReplOptions)) -> Self {
        f(&mut self.options);
        self
    }

    pub async fn build(self) -> Repl {
        let engine = match self.engine {
            Some(e) => Arc::new(SandboxEngine::new(e).expect("engine")),
            None => shared_engine(),
        };
        Repl::with_engine(engine, self.options).await.expect("repl")
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

/// Test tools: `t` echoes its input on the next poll; `sleep` echoes after
/// `input.ms` milliseconds; `fail` fails; `hang` never completes. Every
/// started call is logged.
#[derive(Default)]
pub struct TestTools {
    pub log: Mutex<Vec<(String, String)>>,
}

pub const TEST_TOOLS: &[&str] = &["t", "sleep", "fail", "hang"];

impl CallHandler for TestTools {
    fn start(&self, tool: &str, input: &str) -> Result<CallFuture, CallFailure> {
        self.log.lock().unwrap().push((tool.to_string(), input.to_string()));
        let input = input.to_string();
        match tool {
            "t" => Ok(Box::pin(async move {
                tokio::task::yield_now().await;
                Ok(input)
            })),
            "sleep" => {
                let v: serde_json::Value =
                    serde_json::from_str(&input).map_err(|e| CallFailure::new("invalid-input", e.to_string()))?;
                let ms = v.get("ms").and_then(|m| m.as_u64()).unwrap_or(0);
                Ok(Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(input)
                }))
            }
            "fail" => Ok(Box::pin(async move { Err(CallFailure::new("failed", "this tool always fails")) })),
            "hang" => Ok(Box::pin(std::future::pending())),
            other => Err(CallFailure::new("unknown-tool", format!("no tool {other}"))),
        }
    }
}

pub fn test_tools() -> Arc<TestTools> {
    Arc::new(TestTools::default())
}
