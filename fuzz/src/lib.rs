//! Helpers shared by the wrepl fuzz targets: one tokio runtime and one
//! wasmtime engine per fuzzing process, a bounded `arbitrary` JSON value
//! generator, and deterministic test [`Tool`]s (`echo`, `fail`, `count`)
//! wired into a REPL through [`Repl::builder`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};
use wrepl::{EngineOptions, Repl, ReplBuilder, SandboxEngine, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The process's tokio runtime (current-thread: the fuzzer is single-threaded).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime"))
}

/// The process's sandbox engine. Pooling is off: the pooling allocator
/// reserves a large address range up front, which sanitizers dislike, and a
/// fuzzing process needs only a couple of instances at a time.
pub fn engine() -> Arc<SandboxEngine> {
    static ENGINE: OnceLock<Arc<SandboxEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let options = EngineOptions { pool_slots: 0, ..EngineOptions::default() };
            Arc::new(SandboxEngine::new(options).expect("sandbox engine"))
        })
        .clone()
}

/// Limits of [`arb_json`].
#[derive(Debug, Clone, Copy)]
pub struct JsonShape<'a> {
    /// Deepest nesting of arrays and objects.
    pub max_depth: u32,
    /// Most values in the whole tree.
    pub max_nodes: usize,
    /// Longest generated string, in bytes.
    pub max_string: usize,
    /// Object keys and string values picked with preference (the rest are arbitrary).
    pub words: &'a [&'a str],
}

/// A `serde_json::Value` of bounded depth and size, driven by `u`.
pub fn arb_json(u: &mut Unstructured<'_>, shape: &JsonShape<'_>) -> Result<Value> {
    let mut nodes = 0usize;
    value(u, shape, 0, &mut nodes)
}

/// A string: one of `words` or an arbitrary one, at most `max` bytes.
pub fn arb_string(u: &mut Unstructured<'_>, words: &[&str], max: usize) -> Result<String> {
    if !words.is_empty() && u.ratio(2u8, 3u8)? {
        return Ok((*u.choose(words)?).to_string());
    }
    let s: String = u.arbitrary()?;
    let cut = (0..=max.min(s.len())).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
    Ok(s[..cut].to_string())
}

fn value(u: &mut Unstructured<'_>, shape: &JsonShape<'_>, depth: u32, nodes: &mut usize) -> Result<Value> {
    *nodes += 1;
    let leaf_only = depth >= shape.max_depth || *nodes >= shape.max_nodes;
    let kind = u.int_in_range(0..=if leaf_only { 4 } else { 6 })?;
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => {
            let n = match u.int_in_range(0..=2)? {
                0 => Number::from(u.arbitrary::<i64>()?),
                1 => Number::from(u.arbitrary::<u64>()?),
                _ => Number::from_f64(u.arbitrary()?).unwrap_or_else(|| Number::from(0)),
            };
            Value::Number(n)
        }
        3 | 4 => Value::String(arb_string(u, shape.words, shape.max_string)?),
        5 => {
            let len = u.int_in_range(0..=4)?;
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                if *nodes >= shape.max_nodes {
                    break;
                }
                items.push(value(u, shape, depth + 1, nodes)?);
            }
            Value::Array(items)
        }
        _ => {
            let len = u.int_in_range(0..=4)?;
            let mut map = Map::new();
            for _ in 0..len {
                if *nodes >= shape.max_nodes {
                    break;
                }
                let key = arb_string(u, shape.words, shape.max_string)?;
                map.insert(key, value(u, shape, depth + 1, nodes)?);
            }
            Value::Object(map)
        }
    })
}

/// Deterministic test tools for sandboxes: ordinary [`Tool`]s, so every call
/// of them passes wrepl's pipeline (the input must be a JSON object; they are
/// read-only, so allowed without any rule):
/// - `echo` answers with its input object (on the next poll);
/// - `fail` fails with kind `failed`; the message is the input's `m` when it
///   is a string, the input's JSON text otherwise;
/// - `count` answers `{"n": <calls so far>, "input": <input>}`: a side effect
///   that replay must never repeat.
///
/// All three share one counter of started calls ([`FuzzTools::started`]).
#[derive(Debug, Default, Clone)]
pub struct FuzzTools {
    started: Arc<AtomicU64>,
}

/// The globals [`FuzzTools`] is installed under (their tool names).
pub const FUZZ_TOOLS: &[&str] = &["echo", "fail", "count"];

impl FuzzTools {
    /// Calls started so far (every tool).
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// The three tools, sharing this set's call counter.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        FUZZ_TOOLS
            .iter()
            .map(|name| Arc::new(FuzzTool { name, started: self.started.clone() }) as Arc<dyn Tool>)
            .collect()
    }

    /// A REPL template on the process's [`engine`] with only these tools (and
    /// the always-present `chdir`), rooted at the system temporary directory.
    pub fn builder(&self) -> ReplBuilder {
        Repl::builder().engine(engine()).roots([std::env::temp_dir()]).without_builtin_tools().tools(self.tools())
    }
}

/// One of the [`FuzzTools`], by name.
#[derive(Debug)]
struct FuzzTool {
    name: &'static str,
    started: Arc<AtomicU64>,
}

impl Tool for FuzzTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        match self.name {
            "echo" => "Answers with its input object (fuzzing).",
            "fail" => "Fails with the input's `m` (or its JSON text) as the message (fuzzing).",
            _ => "Answers {n: calls so far, input} (fuzzing; a side effect replay must not repeat).",
        }
    }
    fn input_schema(&self) -> Value {
        serde_json::json!({"type": "object"})
    }
    fn read_only(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        let n = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        match self.name {
            "echo" => Box::pin(async move {
                tokio::task::yield_now().await;
                let text = input.to_string();
                Ok(ToolOutput::new(input, text))
            }),
            "fail" => {
                let message = match input.get("m") {
                    Some(Value::String(m)) => m.clone(),
                    _ => input.to_string(),
                };
                Box::pin(async move { Err(ToolError::Failed(message)) })
            }
            _ => Box::pin(async move {
                tokio::time::sleep(Duration::from_micros(50)).await;
                let value = serde_json::json!({ "n": n, "input": input });
                let text = value.to_string();
                Ok(ToolOutput::new(value, text))
            }),
        }
    }
}

/// A JavaScript string literal for `s` (JSON string syntax is valid JS).
pub fn js_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}
