//! Unit tests of the search tools (and of the walk they share).

use super::grep::split_globs;
use super::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::tools::{Tool, ToolOutput, FILE_TOOL_TIMEOUT};

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new([dir.path()]).unwrap();
    let root = ws.default_cwd().to_path_buf();
    let ctx = ToolContext {
        cwd: root.clone(),
        workspace: Arc::new(ws),
        cancel: CancellationToken::new(),
        timeout: FILE_TOOL_TIMEOUT,
        progress: None,
        confinement: Default::default(),
        trace: None,
        tasks: Default::default(),
    };
    Env { _dir: dir, root, ctx }
}

impl Env {
    fn write(&self, rel: &str, body: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    fn abs(&self, rel: &str) -> String {
        show(&self.root.join(rel))
    }
    fn abss(&self, rels: &[&str]) -> Vec<String> {
        rels.iter().map(|r| self.abs(r)).collect()
    }
}

fn set_mtime(p: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

async fn run(tool: &dyn Tool, e: &Env, input: Value) -> Result<ToolOutput, ToolError> {
    let out = tool.call(input, e.ctx.clone()).await;
    crate::tools::assert_declared_output(tool, &out);
    out
}

fn names(v: &Value) -> Vec<String> {
    v["filenames"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

#[test]
fn schemas_are_closed_objects() {
    for t in [&Glob as &dyn Tool, &Grep] {
        let s = t.input_schema();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], json!(["pattern"]));
        for (_, p) in s["properties"].as_object().unwrap() {
            assert!(p["description"].is_string());
        }
        assert!(t.read_only(&json!({})));
        assert_eq!(t.input_paths(&json!({"pattern": "x"})), Vec::<String>::new());
        assert_eq!(t.input_paths(&json!({"pattern": "x", "path": "src"})), vec!["src".to_string()]);
    }
    assert!(Grep.input_schema()["properties"]["-C"].is_object());
}

#[test]
fn builtin_schemas_are_valid_json_schema() {
    for t in crate::tools::builtin_tools() {
        let s = t.input_schema();
        jsonschema::meta::validate(&s).unwrap_or_else(|e| panic!("{}: {e}", t.name()));
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(!v.is_valid(&json!({"bogus": 1})), "{}", t.name());
    }
    let v = jsonschema::validator_for(&Grep.input_schema()).unwrap();
    assert!(v.is_valid(&json!({"pattern": "x", "-i": true, "-C": 2, "output_mode": "count"})));
    assert!(!v.is_valid(&json!({"pattern": "x", "output_mode": "lines"})));
    let v = jsonschema::validator_for(&crate::tools::files::Read.input_schema()).unwrap();
    assert!(v.is_valid(&json!({"file_path": "a", "offset": 3, "limit": 1})));
    assert!(!v.is_valid(&json!({"file_path": "a", "offset": 0})));
}

#[test]
fn globs_split() {
    assert_eq!(split_globs("*.ts, *.{js,jsx} !x"), vec!["*.ts", "*.{js,jsx}", "!x"]);
    assert_eq!(split_globs("*.rs,*.toml"), vec!["*.rs", "*.toml"]);
    assert!(mentions_hidden(".github/**") && mentions_hidden("**/.env"));
    assert!(!mentions_hidden("./src/*.rs") && !mentions_hidden("**/*.rs"));
}

#[tokio::test]
async fn glob_matches_sorts_and_respects_ignores() {
    let e = env();
    e.write("a.rs", "");
    e.write("src/b.rs", "");
    e.write("src/deep/c.rs", "");
    e.write("src/notes.md", "");
    e.write(".hidden/h.rs", "");
    e.write("target/t.rs", "");
    e.write("src/gen/g.rs", "");
    e.write("src/deep/gen/z.rs", "");
    e.write(".gitignore", "target/\n");
    e.write("src/.ignore", "gen/\n");
    set_mtime(&e.root.join("a.rs"), 1000);
    set_mtime(&e.root.join("src/b.rs"), 3000);
    set_mtime(&e.root.join("src/deep/c.rs"), 2000);

    let out = run(&Glob, &e, json!({"pattern": "**/*.rs"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/b.rs", "src/deep/c.rs", "a.rs"]));
    assert_eq!(out.value["numFiles"], 3);
    assert_eq!(out.value["truncated"], false);
    assert_eq!(out.text, e.abss(&["src/b.rs", "src/deep/c.rs", "a.rs"]).join("\n"));

    // `*` stays in one directory.
    let out = run(&Glob, &e, json!({"pattern": "*.rs"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["a.rs"]));
    let out = run(&Glob, &e, json!({"pattern": "*.rs", "path": "src"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/b.rs"]));
    // Literal leading directories, absolute patterns, `./`.
    let out = run(&Glob, &e, json!({"pattern": "src/**/*.{rs,md}"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/notes.md", "src/b.rs", "src/deep/c.rs"]));
    let abs = format!("{}/src/*.rs", show(&e.root));
    let out = run(&Glob, &e, json!({"pattern": abs})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/b.rs"]));
    let out = run(&Glob, &e, json!({"pattern": "./src/deep/*"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/deep/c.rs"]));
    // Ignored directories searched from inside still honour the parent's rules,
    // hidden entries appear when named.
    let out = run(&Glob, &e, json!({"pattern": "**/*.rs", "path": "src/deep"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/deep/c.rs"]));
    let out = run(&Glob, &e, json!({"pattern": ".hidden/*.rs"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&[".hidden/h.rs"]));
    let out = run(&Glob, &e, json!({"pattern": "*.rs", "path": "target"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["target/t.rs"]));

    let out = run(&Glob, &e, json!({"pattern": "**/*.py"})).await.unwrap();
    assert_eq!(out.text, "No files found");
    assert_eq!(out.value, json!({"filenames": [], "numFiles": 0, "truncated": false, "totalFiles": 0}));
    let out = run(&Glob, &e, json!({"pattern": "nope/**/*.rs"})).await.unwrap();
    assert_eq!(out.value["numFiles"], 0);
    let err = run(&Glob, &e, json!({"pattern": "src/[a"})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}");
    for p in ["/etc/*", "../*"] {
        let err = run(&Glob, &e, json!({"pattern": p})).await.unwrap_err();
        assert!(matches!(err, ToolError::PathEscape(_)), "{p}: {err:?}");
    }
    let err = run(&Glob, &e, json!({"pattern": "*", "path": "/tmp"})).await;
    assert!(matches!(err, Err(ToolError::PathEscape(_))));
}

/// A pattern without `**` is walked only as deep as it can match (its
/// separators plus one), and still finds what every alternative names,
/// however deep; `**` walks the whole tree.
#[tokio::test]
async fn glob_without_double_star_walks_only_as_deep_as_it_can_match() {
    let e = env();
    for rel in ["a/x.txt", "a/b/x.txt", "a/b/c/x.txt", "a/b/c/d/x.txt", "top.txt"] {
        e.write(rel, "");
    }
    let sorted = |out: &ToolOutput| {
        let mut v = names(&out.value);
        v.sort();
        v
    };
    let out = run(&Glob, &e, json!({"pattern": "a/*/x.txt"})).await.unwrap();
    assert_eq!(sorted(&out), e.abss(&["a/b/x.txt"]));
    // Alternatives of different depths, an escaped character and a class.
    let out = run(&Glob, &e, json!({"pattern": "{top,a/b/c/d/x}.txt"})).await.unwrap();
    assert_eq!(sorted(&out), e.abss(&["a/b/c/d/x.txt", "top.txt"]));
    let out = run(&Glob, &e, json!({"pattern": "a/b/[c]/\\x.txt"})).await.unwrap();
    assert_eq!(sorted(&out), e.abss(&["a/b/c/x.txt"]));
    let out = run(&Glob, &e, json!({"pattern": "a/**/x.txt"})).await.unwrap();
    assert_eq!(sorted(&out), e.abss(&["a/b/c/d/x.txt", "a/b/c/x.txt", "a/b/x.txt", "a/x.txt"]));
}

#[tokio::test]
async fn glob_caps_results_and_skips_symlinks() {
    let e = env();
    for i in 0..(GLOB_MAX_RESULTS + 20) {
        let rel = format!("f{i:03}.txt");
        e.write(&rel, "");
        set_mtime(&e.root.join(&rel), 1000 + i as u64);
    }
    let out = run(&Glob, &e, json!({"pattern": "*.txt"})).await.unwrap();
    assert_eq!(out.value["numFiles"], GLOB_MAX_RESULTS);
    assert_eq!(out.value["truncated"], true);
    assert_eq!(out.value["totalFiles"], GLOB_MAX_RESULTS + 20);
    let got = names(&out.value);
    assert_eq!(got[0], e.abs(&format!("f{:03}.txt", GLOB_MAX_RESULTS + 19)));
    assert_eq!(got[GLOB_MAX_RESULTS - 1], e.abs("f020.txt"));
    assert!(out.text.contains("Showing the 100 most recently modified of 120"));

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.md"), "").unwrap();
    std::os::unix::fs::symlink(outside.path(), e.root.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.md"), e.root.join("link.md")).unwrap();
    let out = run(&Glob, &e, json!({"pattern": "**/*.md"})).await.unwrap();
    assert_eq!(out.value["numFiles"], 0);
    let err = run(&Glob, &e, json!({"pattern": "*.md", "path": "out"})).await.unwrap_err();
    assert!(matches!(err, ToolError::PathEscape(_)), "{err:?}");
}

fn grep_env() -> Env {
    let e = env();
    e.write("a.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    e.write("src/lib.rs", "// hello world\npub fn hello() {}\nfn other() {}\n");
    e.write("src/notes.md", "Hello notes\nsecond\nthird\nhello again\n");
    e.write("bin.dat", "hello\0binary\n");
    e.write("ignored/x.rs", "hello ignored\n");
    e.write(".gitignore", "ignored/\n");
    set_mtime(&e.root.join("a.rs"), 1000);
    set_mtime(&e.root.join("src/lib.rs"), 3000);
    set_mtime(&e.root.join("src/notes.md"), 2000);
    e
}

/// Grep's and Glob's listings are found by a parallel walk when helper
/// threads are free (the walk's threads search as they go): they must not
/// depend on which thread finds which file.
#[tokio::test]
async fn file_listings_are_the_same_whatever_order_files_are_found_in() {
    let e = env();
    let mut expected = Vec::new();
    for i in 0..400 {
        let rel = format!("d{:02}/s{}/f{i:03}.txt", i % 20, i % 3);
        let hit = i % 2 == 0;
        e.write(&rel, if hit { "a needle here\n" } else { "nothing\n" });
        // Pairs of files share a time: those are listed by path.
        set_mtime(&e.root.join(&rel), 1000 + (i as u64 / 4));
        if hit {
            expected.push((1000 + i / 4, e.abs(&rel)));
        }
    }
    expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let expected: Vec<String> = expected.into_iter().map(|(_, p)| p).collect();
    let mut all: Vec<(u64, String)> =
        (0..400).map(|i| (1000 + i / 4, e.abs(&format!("d{:02}/s{}/f{i:03}.txt", i % 20, i % 3)))).collect();
    all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let newest: Vec<String> = all.into_iter().take(GLOB_MAX_RESULTS).map(|(_, p)| p).collect();
    for _ in 0..3 {
        let out = run(&Glob, &e, json!({"pattern": "**/*.txt"})).await.unwrap();
        assert_eq!(names(&out.value), newest);
        assert!(out.text.contains("Showing the 100 most recently modified of 400 matching files"), "{}", out.text);
        let out = run(&Grep, &e, json!({"pattern": "needle"})).await.unwrap();
        assert_eq!(out.value["numFiles"], 200);
        assert_eq!(names(&out.value), expected);
        let out = run(&Grep, &e, json!({"pattern": "needle", "head_limit": 7})).await.unwrap();
        assert_eq!(names(&out.value), expected[..7]);
        assert!(out.text.contains("Showing the 7 most recently modified of 200 matching files."), "{}", out.text);
    }
}

#[tokio::test]
async fn grep_files_with_matches_and_count() {
    let e = grep_env();
    let out = run(&Grep, &e, json!({"pattern": "hello"})).await.unwrap();
    assert_eq!(out.value["mode"], "files_with_matches");
    assert_eq!(names(&out.value), e.abss(&["src/lib.rs", "src/notes.md"]));
    assert_eq!(out.value["numFiles"], 2);
    assert!(out.text.starts_with("Found 2 files\n"));

    let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/lib.rs", "src/notes.md", "a.rs"]));
    let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "head_limit": 1})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/lib.rs"]));
    assert_eq!(out.value["truncated"], true);

    let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "count", "-i": true})).await.unwrap();
    assert_eq!(
        out.value,
        json!({"mode": "count", "counts": [
            {"file": e.abs("a.rs"), "count": 1},
            {"file": e.abs("src/lib.rs"), "count": 2},
            {"file": e.abs("src/notes.md"), "count": 2},
        ], "numMatches": 5, "numFiles": 3, "truncated": false})
    );
    assert!(out.text.contains("Found 5 matching lines in 3 files."));

    let out = run(&Grep, &e, json!({"pattern": "zzz"})).await.unwrap();
    assert_eq!(out.text, "No files found");
    assert_eq!(out.value["filenames"], json!([]));
}

#[tokio::test]
async fn grep_on_several_threads_gives_the_one_thread_order_and_caps() {
    let e = env();
    // Files in nested directories, whose names sort differently as
    // strings and as paths (`d-1/` vs `d/`), some binary, some without
    // a match.
    let mut expected = Vec::new();
    for i in 0..400 {
        let dir = ["d", "d-1", "d/e", "a"][i % 4];
        let rel = format!("{dir}/f{i:03}.txt");
        match i % 10 {
            7 => e.write(&rel, "needle\0binary\n"),
            8 => e.write(
                &rel,
                "nothing here
",
            ),
            _ => {
                e.write(
                    &rel,
                    &format!(
                        "x
needle {i}
y
"
                    ),
                );
                expected.push(rel);
            }
        }
    }
    // The one-thread order: a depth-first walk, names sorted.
    expected.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
    let lines_of = |v: &Value| -> Vec<String> { v["content"].as_str().unwrap().lines().map(str::to_string).collect() };
    let first = run(&Grep, &e, json!({"pattern": "needle", "output_mode": "content"})).await.unwrap();
    let got = lines_of(&first.value);
    assert_eq!(got.len(), expected.len());
    for (line, rel) in got.iter().zip(&expected) {
        assert!(line.starts_with(&format!("{}:2:needle ", e.abs(rel))), "{line} for {rel}");
    }
    for _ in 0..5 {
        let again = run(&Grep, &e, json!({"pattern": "needle", "output_mode": "content"})).await.unwrap();
        assert_eq!(again.value, first.value, "the same output every time");
    }
    // A cap keeps the first lines in that order.
    let capped =
        run(&Grep, &e, json!({"pattern": "needle", "output_mode": "content", "head_limit": 25})).await.unwrap();
    assert_eq!(lines_of(&capped.value), got[..25]);
    assert_eq!(capped.value["truncated"], true);
    // Context groups of different files are separated by `--`.
    let ctx =
        run(&Grep, &e, json!({"pattern": "needle", "output_mode": "content", "-C": 1, "head_limit": 7})).await.unwrap();
    let lines = lines_of(&ctx.value);
    assert_eq!(lines.len(), 7, "{lines:?}");
    assert!(lines[0].ends_with("-1-x") && lines[2].ends_with("-3-y") && lines[3] == "--", "{lines:?}");
    // Counts follow the same order.
    let counts = run(&Grep, &e, json!({"pattern": "needle", "output_mode": "count"})).await.unwrap();
    let files: Vec<String> =
        counts.value["counts"].as_array().unwrap().iter().map(|c| c["file"].as_str().unwrap().into()).collect();
    assert_eq!(files, expected.iter().map(|r| e.abs(r)).collect::<Vec<_>>());
}

/// What helpers may hold of lines the merge has not taken is one output
/// bound for the whole search: here the first file's lines fill most of
/// it, so the next files' do not fit and are searched again in their
/// turn. The output is the one-thread output all the same.
#[tokio::test]
async fn grep_files_over_the_hold_are_searched_again_in_order() {
    let e = env();
    let filler = "y".repeat(980);
    for (i, tag) in ["a", "b", "c"].iter().enumerate() {
        let body: String = (0..6000).map(|n| format!("needle {tag} {n:05} {filler}\n")).collect();
        e.write(&format!("f{i}.txt"), &body);
    }
    for mode in ["content", "matches"] {
        let out = run(&Grep, &e, json!({"pattern": "needle", "output_mode": mode, "-n": false})).await.unwrap();
        let lines: Vec<String> = match mode {
            "content" => out.value["content"].as_str().unwrap().lines().map(str::to_string).collect(),
            _ => out.value["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| format!("{}:{}", m["file"].as_str().unwrap(), m["text"].as_str().unwrap()))
                .collect(),
        };
        assert_eq!(out.value["truncated"], true, "{mode}");
        // Matches mode's records count twice against the hold, not
        // against the output: both modes stop at the line bound.
        assert_eq!(lines.len(), GREP_MAX_LINES, "{mode}");
        for (k, line) in lines.iter().enumerate() {
            let (file, tag, n) = if k < 6000 { ("f0.txt", "a", k) } else { ("f1.txt", "b", k - 6000) };
            let want = format!("{}:needle {tag} {n:05} ", e.abs(file));
            assert!(line.starts_with(&want), "{mode} line {k}: {} is not {want}", &line[..60]);
        }
    }
}

/// The hold charges a line what it takes in memory, not only its text:
/// a search of many empty lines holds no more than the bound in `String`s
/// and records (it would hold millions of them on bytes alone).
#[test]
fn grep_hold_charges_each_line_its_memory() {
    for (mode, per_line) in [
        (grep::Mode::Content, std::mem::size_of::<String>()),
        (grep::Mode::Matches, std::mem::size_of::<String>() + std::mem::size_of::<grep::GrepMatch>()),
    ] {
        let hold = grep::HoldBudget::new(mode);
        let mut share = hold.share();
        let mut n = 0usize;
        while share.take(0) {
            n += 1;
        }
        assert!(n > 0, "{mode:?}: the hold took no line");
        assert!(n * per_line <= grep::HoldBudget::MAX, "{mode:?}: {n} empty lines held ({per_line} bytes each)");
        // A share is given back when dropped.
        drop(share);
        assert!(hold.share().take(0), "{mode:?}");
    }
}

/// A file the merge waits for (held up here by a test hook) does not
/// let the results of the files after it pile up: the walk stops so far
/// ahead of it, and goes on once it is merged. The output is still the
/// whole search, in walk order.
#[tokio::test]
async fn grep_walks_only_so_far_ahead_of_the_merge() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cores >= 2, "this test needs helper threads (two cores)");
    let e = env();
    let files = 3 * grep::GREP_MAX_AHEAD;
    e.write(grep::stall::NAME, "needle first\n");
    for i in 0..files {
        e.write(&format!("x{i:05}.txt"), &format!("needle {i}\n"));
    }
    // The search stalls only when it gets helpers, whose budget other
    // tests' searches share: try again until it did.
    for attempt in 0.. {
        grep::stall::arm();
        let out = run(&Grep, &e, json!({"pattern": "needle", "output_mode": "content", "-n": false})).await.unwrap();
        let stalls = grep::stall::STALLS.load(std::sync::atomic::Ordering::SeqCst);
        grep::stall::release();
        let lines: Vec<&str> = out.value["content"].as_str().unwrap().lines().collect();
        assert_eq!(lines.len(), files + 1);
        assert_eq!(lines[0], format!("{}:needle first", e.abs(grep::stall::NAME)));
        for (i, line) in lines[1..].iter().enumerate() {
            assert_eq!(*line, format!("{}:needle {i}", e.abs(&format!("x{i:05}.txt"))));
        }
        if stalls == 0 {
            assert!(attempt < 50, "no search got a helper thread in 50 attempts");
            continue;
        }
        // At most: the bound, the batch the walking thread searched
        // itself, and the batches queued for or held by the helpers.
        let most = grep::GREP_MAX_AHEAD + (3 * GREP_MAX_THREADS + 1) * GREP_BATCH;
        let seen = grep::stall::MAX_WAITING.load(std::sync::atomic::Ordering::SeqCst);
        assert!(seen <= most, "{seen} results waited for the merge at once (at most {most})");
        assert!(seen >= grep::GREP_MAX_AHEAD, "the merge was not held up ({seen} results waited)");
        break;
    }
}

#[test]
fn a_walked_file_is_checked_where_it_really_is() {
    let e = env();
    e.write("real/f.txt", "content\n");
    std::os::unix::fs::symlink("real", e.root.join("link")).unwrap();
    std::os::unix::fs::symlink("real/f.txt", e.root.join("file-link")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), e.root.join("escape")).unwrap();
    let ws = &e.ctx.workspace;
    let at = |rel: &str| Resolved { root: 0, rel: PathBuf::from(rel), abs: e.root.join(rel) };
    assert!(ws.open_walked(&at("real/f.txt")).unwrap().is_some());
    // Links inside the root lead where the other file tools go.
    assert!(ws.open_walked(&at("link/f.txt")).unwrap().is_some());
    assert!(ws.open_walked(&at("file-link")).unwrap().is_some());
    // A link out of the root is never followed.
    assert!(!matches!(ws.open_walked(&at("escape")), Ok(Some(_))));
    assert!(ws.open_walked(&at("missing.txt")).is_err());
}

#[tokio::test]
async fn grep_searches_a_named_link_inside_the_root() {
    let e = env();
    e.write("sub/real.txt", "needle\n");
    std::os::unix::fs::symlink("sub/real.txt", e.root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("sub", e.root.join("linkdir")).unwrap();
    for path in ["link.txt", "linkdir", "sub"] {
        let out = run(&Grep, &e, json!({"pattern": "needle", "path": path})).await.unwrap();
        assert_eq!(out.value["numFiles"], 1, "{path}: {}", out.value);
    }
}

#[test]
fn grep_helper_threads_have_a_process_wide_budget() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let held: Vec<_> = (0..64).map(|_| grep::HelperThreads::take()).collect();
    let total: usize = held.iter().map(|h| h.count).sum();
    // However many searches run at once (64 here, each wanting one per
    // core), they add at most two threads per core (none on one core).
    assert!(total <= 2 * cores.min(GREP_MAX_THREADS), "{total} helper threads on {cores} cores");
    if cores < 2 {
        assert_eq!(total, 0);
    }
    // (Which of the 64 got helpers depends on the other tests' searches,
    // which hold helpers from the same budget while they run.)
    drop(held);
}

#[tokio::test]
async fn grep_matches_are_records() {
    let e = grep_env();
    let lib = e.abs("src/lib.rs");
    let notes = e.abs("src/notes.md");
    // Context options and "-n": false do not change the records.
    let input = json!({"pattern": "hello", "output_mode": "matches", "path": "src", "-C": 2, "-n": false});
    let out = run(&Grep, &e, input).await.unwrap();
    assert_eq!(
        out.value,
        json!({"mode": "matches", "matches": [
            {"file": lib, "line": 1, "text": "// hello world"},
            {"file": lib, "line": 2, "text": "pub fn hello() {}"},
            {"file": notes, "line": 4, "text": "hello again"},
        ], "numMatches": 3, "truncated": false})
    );
    let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "matches", "-i": true, "head_limit": 2}))
        .await
        .unwrap();
    assert_eq!(out.value["matches"].as_array().unwrap().len(), 2);
    assert_eq!(out.value["truncated"], true);
    let out = run(&Grep, &e, json!({"pattern": "nothing-here", "output_mode": "matches"})).await.unwrap();
    assert_eq!(out.value, json!({"mode": "matches", "matches": [], "numMatches": 0, "truncated": false}));
    assert_eq!(out.text, "No matches found");
}

#[tokio::test]
async fn grep_content_with_context_and_line_numbers() {
    let e = grep_env();
    let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "content", "path": "src"})).await.unwrap();
    let lib = e.abs("src/lib.rs");
    let notes = e.abs("src/notes.md");
    let expected = format!("{lib}:1:// hello world\n{lib}:2:pub fn hello() {{}}\n{notes}:4:hello again");
    assert_eq!(out.value, json!({"mode": "content", "content": expected, "numLines": 3, "truncated": false}));
    assert_eq!(out.text, expected);

    let out = run(
        &Grep,
        &e,
        json!({"pattern": "^hello", "output_mode": "content", "path": "src/notes.md", "-i": true, "-n": false}),
    )
    .await
    .unwrap();
    assert_eq!(out.value["content"], format!("{notes}:Hello notes\n{notes}:hello again"));

    let out =
        run(&Grep, &e, json!({"pattern": "notes|again", "output_mode": "content", "path": "src/notes.md", "-A": 1}))
            .await
            .unwrap();
    assert_eq!(out.value["content"], format!("{notes}:1:Hello notes\n{notes}-2-second\n--\n{notes}:4:hello again"));
    let out =
        run(&Grep, &e, json!({"pattern": "third", "output_mode": "content", "path": "src", "-C": 1})).await.unwrap();
    assert_eq!(out.value["content"], format!("{notes}-2-second\n{notes}:3:third\n{notes}-4-hello again"));
    let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "content", "-i": true, "head_limit": 2}))
        .await
        .unwrap();
    assert_eq!(out.value["numLines"], 2);
    assert_eq!(out.value["truncated"], true);

    // Multiline.
    let out = run(&Grep, &e, json!({"pattern": "second\\nthird", "output_mode": "content", "path": "src"}))
        .await
        .unwrap_err();
    assert!(matches!(&out, ToolError::InvalidInput(m) if m.contains("multiline")), "{out:?}");
    let out =
        run(&Grep, &e, json!({"pattern": "second.third", "output_mode": "content", "path": "src", "multiline": true}))
            .await
            .unwrap();
    assert_eq!(out.value["content"], format!("{notes}:2:second\n{notes}:3:third"));
}

#[tokio::test]
async fn grep_filters_and_errors() {
    let e = grep_env();
    let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "glob": "*.md"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/notes.md"]));
    let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "glob": "*.{md,toml}, a.*"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/notes.md", "a.rs"]));
    let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "type": "rust"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["src/lib.rs", "a.rs"]));
    let err = run(&Grep, &e, json!({"pattern": "x", "type": "nosuchtype"})).await.unwrap_err();
    assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("nosuchtype")), "{err:?}");
    let err = run(&Grep, &e, json!({"pattern": "fn ("})).await.unwrap_err();
    assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("invalid regex")), "{err:?}");
    let err = run(&Grep, &e, json!({"pattern": "x", "output_mode": "lines"})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
    let err = run(&Grep, &e, json!({"pattern": "x", "path": "missing"})).await.unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)));
    // The binary file and the ignored directory are skipped; explicit paths are searched.
    let out = run(&Grep, &e, json!({"pattern": "binary|ignored"})).await.unwrap();
    assert_eq!(out.value["numFiles"], 0);
    let out = run(&Grep, &e, json!({"pattern": "hello", "path": "ignored"})).await.unwrap();
    assert_eq!(names(&out.value), e.abss(&["ignored/x.rs"]));
}

#[tokio::test]
async fn grep_does_not_follow_symlinks_out() {
    let e = grep_env();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "hello secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), e.root.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), e.root.join("s.txt")).unwrap();
    let out = run(&Grep, &e, json!({"pattern": "secret", "output_mode": "content"})).await.unwrap();
    assert_eq!(out.value["numLines"], 0, "{}", out.text);
    for p in ["out", "s.txt", "out/secret.txt", "../", "/etc/passwd"] {
        let err = run(&Grep, &e, json!({"pattern": "secret", "path": p})).await.unwrap_err();
        assert!(matches!(err, ToolError::PathEscape(_)), "{p}: {err:?}");
    }
}

#[tokio::test]
async fn grep_honours_cancellation() {
    let e = grep_env();
    e.ctx.cancel.cancel();
    let err = run(&Grep, &e, json!({"pattern": "x"})).await.unwrap_err();
    assert!(matches!(err, ToolError::Cancelled(_)));
    let err = run(&Glob, &e, json!({"pattern": "x"})).await.unwrap_err();
    assert!(matches!(err, ToolError::Cancelled(_)));
}
