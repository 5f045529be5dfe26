//! Tools for tests and benchmarks (not part of the stable API): `t` echoes
//! its input, `sleep` echoes after `input.ms` milliseconds on a real tokio
//! timer, `fail` always fails, `hang` never completes (until cancelled).
//! They are ordinary [`Tool`]s, so calls of them pass the whole pipeline.
//! Every started call is logged in a shared [`CallLog`].
//!
//! [`conformance_tools`] are the four tools of the host-conformance programs
//! (`tests/host-conformance/programs.json`), which every host of the guest
//! provides alike (the Node.js host's are in `hosts/node/test/`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::tools::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The calls the test tools started: `(tool, input JSON text)`.
pub type CallLog = Arc<Mutex<Vec<(String, String)>>>;

/// Which test tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Echo,
    Sleep,
    Fail,
    Hang,
}

/// One of the test tools.
#[derive(Clone)]
pub struct TestTool {
    kind: Kind,
    log: Option<CallLog>,
}

impl std::fmt::Debug for TestTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestTool").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// Names of the test tools.
pub const TEST_TOOLS: &[&str] = &["t", "sleep", "fail", "hang"];

/// `t(x)`: echoes its input on the next poll.
pub fn echo() -> TestTool {
    TestTool { kind: Kind::Echo, log: None }
}

/// `sleep({ms})`: echoes its input after `ms` milliseconds.
pub fn sleep() -> TestTool {
    TestTool { kind: Kind::Sleep, log: None }
}

/// The four test tools, logging every started call into `log`.
pub fn test_tools(log: &CallLog) -> Vec<Arc<dyn Tool>> {
    [Kind::Echo, Kind::Sleep, Kind::Fail, Kind::Hang]
        .into_iter()
        .map(|kind| Arc::new(TestTool { kind, log: Some(log.clone()) }) as Arc<dyn Tool>)
        .collect()
}

impl Tool for TestTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Echo => "t",
            Kind::Sleep => "sleep",
            Kind::Fail => "fail",
            Kind::Hang => "hang",
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Echo => "test: echo the input",
            Kind::Sleep => "test: sleep `ms` milliseconds, then echo the input",
            Kind::Fail => "test: always fail",
            Kind::Hang => "test: never complete",
        }
    }

    fn input_schema(&self) -> Value {
        match self.kind {
            Kind::Sleep => json!({"type": "object", "properties": {"ms": {"type": "number", "minimum": 0}}}),
            _ => json!({"type": "object"}),
        }
    }

    fn read_only(&self, _input: &Value) -> bool {
        true
    }

    fn native_timeout(&self, _input: &Value) -> Duration {
        // Longer than any test waits, so the REPL's budgets are what stop them.
        crate::budget::HARD_LIMIT
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        if let Some(log) = &self.log {
            log.lock().unwrap_or_else(|p| p.into_inner()).push((self.name().to_string(), input.to_string()));
        }
        let kind = self.kind;
        Box::pin(async move {
            match kind {
                Kind::Echo => {
                    tokio::task::yield_now().await;
                    Ok(ToolOutput::new(input, ""))
                }
                Kind::Sleep => {
                    let ms = input.get("ms").and_then(Value::as_f64).unwrap_or(0.0).max(0.0);
                    tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
                    Ok(ToolOutput::new(input, ""))
                }
                Kind::Fail => Err(ToolError::Failed("this tool always fails".into())),
                Kind::Hang => std::future::pending().await,
            }
        })
    }
}

/// One tool of the host-conformance programs.
#[derive(Debug, Clone, Copy)]
struct Conformance(&'static str);

/// The host-conformance tools: `echo` resolves to its input, `add` to
/// `input.a + input.b`, `fail` rejects with kind `failed` and message
/// `input.message`, `sleep` resolves to `input.value` after `input.ms`
/// milliseconds.
pub fn conformance_tools() -> Vec<Arc<dyn Tool>> {
    ["echo", "add", "fail", "sleep"].into_iter().map(|n| Arc::new(Conformance(n)) as Arc<dyn Tool>).collect()
}

impl Tool for Conformance {
    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        "host conformance tool"
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }

    fn read_only(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        let name = self.0;
        Box::pin(async move {
            match name {
                "echo" => Ok(ToolOutput::new(input, "")),
                "add" => {
                    let n = |k: &str| input.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
                    Ok(ToolOutput::new(json!(n("a") + n("b")), ""))
                }
                "fail" => Err(ToolError::Failed(input["message"].as_str().unwrap_or("failed").to_string())),
                _ => {
                    let ms = input["ms"].as_u64().unwrap_or(0).min(60_000);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(ToolOutput::new(input["value"].clone(), ""))
                }
            }
        })
    }
}
