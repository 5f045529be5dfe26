//! The inner-call pipeline (`Dispatcher::call_once` on the dispatcher
//! `Repl::builder().dispatcher()` wires) with the built-in tools over a
//! temporary workspace and deny-by-default permissions (no rules, no
//! approver, no hooks): arbitrary tool names and bounded arbitrary JSON
//! inputs. Invariants:
//! - never panics; every call ends (the watchdog bounds tool time);
//! - a name that is not one of the dispatcher's built-in tools (asked of
//!   the dispatcher itself: the file, shell, web, task and sampling tools
//!   and `chdir`) fails with `unknown-tool`, and a built-in tool's call
//!   never does;
//! - tools with side effects (`Write`, `Edit`, `Bash`, `WebFetch`) never
//!   succeed: with no allow rule they must be denied (or refused earlier) —
//!   and `Sample` fails without a sampler;
//! - the workspace and the directory beside it stay byte-for-byte unchanged
//!   (checked every 16 calls and at the first failure of the above);
//! - no successful output contains the canary that lives outside the
//!   workspace (reachable only through symlinks inside it);
//! - each call leaves exactly one record whose `ok` matches the result.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use wrepl::{Dispatcher, Repl, call::FailureKind};
use wrepl_fuzz::{arb_json, arb_string, runtime, JsonShape};

const SIDE_EFFECTS: &[&str] = &["Write", "Edit", "Bash", "WebFetch"];
const NAMES: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Glob",
    "Grep",
    "Sample",
    "chdir",
    "WebFetch",
    "TaskOutput",
    "",
    "read",
    "Read ",
    "mcp__srv__tool",
    "eval_registered__x",
    "__proto__",
    "constructor",
];
const WORDS: &[&str] = &[
    "file_path",
    "path",
    "pattern",
    "content",
    "command",
    "old_string",
    "new_string",
    "replace_all",
    "offset",
    "limit",
    "glob",
    "output_mode",
    "timeout",
    "prompt",
    "schema",
    "a.txt",
    "./a.txt",
    "src/lib.rs",
    "escape",
    "escape/canary.txt",
    "canary_link",
    "../outside/canary.txt",
    "/etc/passwd",
    "..",
    ".",
    "**/*",
    "*",
    "sub/**",
    "content",
    "files_with_matches",
    "count",
    "hello",
    "wrepl",
    ".*",
    "(a+)+$",
    "rm -rf .",
    "echo x > y",
    "/tmp",
    "~",
    "\u{0}",
    "sub/dir/b.md",
    "new.txt",
    "sub/../../x",
];

struct World {
    dispatcher: Arc<Dispatcher>,
    root: PathBuf,
    outside: PathBuf,
    canary: String,
    snapshot: Snapshot,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

type Snapshot = BTreeMap<PathBuf, (String, Vec<u8>)>;

/// Every entry under `dir` (symlinks not followed): kind and content/target.
fn snapshot(dir: &Path) -> Snapshot {
    fn walk(base: &Path, dir: &Path, out: &mut Snapshot) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read_dir").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for p in entries {
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            let rel = p.strip_prefix(base).expect("prefix").to_path_buf();
            let perms = format!("{:?}", meta.permissions());
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).expect("read_link");
                out.insert(rel, (format!("link {perms}"), target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                out.insert(rel, (format!("dir {perms}"), Vec::new()));
                walk(base, &p, out);
            } else {
                out.insert(rel, (format!("file {perms}"), std::fs::read(&p).expect("read")));
            }
        }
    }
    let mut out = Snapshot::new();
    walk(dir, dir, &mut out);
    out
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let base = tempfile::tempdir().expect("temp dir");
        let outside_dir = tempfile::tempdir().expect("temp dir");
        let root = base.path().join("ws");
        let outside = outside_dir.path().to_path_buf();
        // A canary the fuzzer cannot guess: only reading outside the
        // workspace can produce it.
        let mut seed = [0u8; 16];
        let canary: String = {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            seed[..8].copy_from_slice(&(t.as_nanos() as u64).to_le_bytes());
            seed[8..].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
            format!("CANARY{}", seed.iter().map(|b| format!("{b:02x}")).collect::<String>())
        };
        std::fs::write(outside.join("canary.txt"), format!("{canary}\n")).expect("canary");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(root.join("sub/dir")).expect("mkdir");
        std::fs::write(root.join("a.txt"), "hello\nworld\n").expect("write");
        std::fs::write(root.join("src/lib.rs"), "fn main() { println!(\"wrepl\"); }\n").expect("write");
        std::fs::write(root.join("sub/dir/b.md"), "# title\ncontent\n").expect("write");
        std::os::unix::fs::symlink(&outside, root.join("escape")).expect("symlink");
        std::os::unix::fs::symlink(outside.join("canary.txt"), root.join("canary_link")).expect("symlink");
        let dispatcher = Repl::builder().roots([&root]).session_id("fuzz").dispatcher().expect("dispatcher");
        let snapshot = (snapshot(&root), snapshot(&outside));
        let snap = snapshot.0.into_iter().chain(snapshot.1.into_iter().map(|(k, v)| (Path::new("OUT").join(k), v)));
        World { dispatcher, root, outside, canary, snapshot: snap.collect(), _dirs: (base, outside_dir) }
    })
}

fn unchanged(w: &World) {
    let now: Snapshot = snapshot(&w.root)
        .into_iter()
        .chain(snapshot(&w.outside).into_iter().map(|(k, v)| (Path::new("OUT").join(k), v)))
        .collect();
    assert!(now == w.snapshot, "the workspace changed: {:?}", now.keys().collect::<Vec<_>>());
}

#[derive(Debug)]
struct Call {
    name: String,
    input: Value,
}

impl<'a> Arbitrary<'a> for Call {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let name = arb_string(u, NAMES, 64)?;
        let shape = JsonShape { max_depth: 4, max_nodes: 24, max_string: 256, words: WORDS };
        // Mostly objects (the only inputs that pass the first stage).
        let input = if u.ratio(7u8, 8u8)? {
            let mut map = serde_json::Map::new();
            for _ in 0..u.int_in_range(0..=5)? {
                map.insert(arb_string(u, WORDS, 32)?, arb_json(u, &shape)?);
            }
            Value::Object(map)
        } else {
            arb_json(u, &shape)?
        };
        Ok(Call { name, input })
    }
}

fuzz_target!(|call: Call| {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let w = world();
    let input_text = call.input.to_string();
    let (result, calls) = runtime().block_on(w.dispatcher.call_once(&call.name, call.input));
    assert_eq!(calls.records.len(), 1, "one record per call");
    assert_eq!(calls.records[0].ok, result.is_ok(), "record and result disagree");
    let builtin = w.dispatcher.tools().any(|t| t.name() == call.name);
    match &result {
        Err(f) if !builtin => assert_eq!(f.kind, FailureKind::UnknownTool, "{}: {f:?}", call.name),
        Err(f) => assert_ne!(f.kind, FailureKind::UnknownTool, "{}: {f:?}", call.name),
        Ok(out) => {
            if !builtin || SIDE_EFFECTS.contains(&call.name.as_str()) || call.name == "Sample" {
                unchanged(w);
                panic!("{} ran without permission: {input_text} -> {out}", call.name);
            }
            if !input_text.contains(&w.canary) {
                assert!(!out.contains(&w.canary), "{} read outside the workspace: {input_text}", call.name);
                assert!(!calls.records[0].text.contains(&w.canary), "outside content in the record text");
            }
        }
    }
    if RUNS.fetch_add(1, Ordering::Relaxed).is_multiple_of(16) {
        unchanged(w);
    }
});
