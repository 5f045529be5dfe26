//! `wrepl log export`: a session as JSON lines, and as an HTML page that a
//! real headless Chromium (Debian's, started here) renders: the blocks, each
//! call on its timeline with its decision and duration, a refusal marked.
//! The screenshot is kept in target/test-artifacts/.

use std::path::{Path, PathBuf};

use super::support::*;

/// Debian's Chromium, or `None` (with a note) when it is not installed and
/// `WREPL_REQUIRE_CHROMIUM` is not `1`.
fn chromium() -> Option<PathBuf> {
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).exists() {
            return Some(PathBuf::from(p));
        }
    }
    if std::env::var("WREPL_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
        panic!("chromium is missing: scripts/test.sh installs it (apt-get install chromium)");
    }
    eprintln!("note: skipping the browser check: chromium is not installed");
    None
}

fn session(dir: &Path) -> String {
    let store = dir.join("s.sqlite3").to_string_lossy().into_owned();
    let o = wrepl_in(
        dir,
        &[
            "eval",
            "--store",
            &store,
            "--session",
            "page",
            "--allow",
            "Write",
            "-e",
            "await put('x.txt', 'hi <b>'); await sh('ls').catch((e) => e.message); (await cat('x.txt')).length",
            "-e",
            "await Promise.all([gl('*.txt'), rg('hi')])",
        ],
    );
    assert!(o.status.success(), "{}", err_text(&o));
    store
}

#[test]
fn jsonl_has_the_blocks_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    let store = session(dir.path());
    let o = wrepl_in(dir.path(), &["log", "export", "page", "--store", &store, "--format", "jsonl"]);
    assert!(o.status.success(), "{}", err_text(&o));
    let recs: Vec<serde_json::Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session", "block", "call", "call", "call", "block", "call", "call"]);
    let calls: Vec<&serde_json::Value> = recs.iter().filter(|r| r["type"] == "call").collect();
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["Write", "Bash", "Read", "Glob", "Grep"]);
    assert_eq!((calls[1]["status"].as_str(), calls[1]["decision"].as_str()), (Some("denied"), Some("denied")));
    for c in &calls {
        assert!(c["at_ms"].as_f64().is_some(), "{c}");
        assert!(c["ms"].as_f64().is_some() || c["status"] == "denied", "{c}");
    }
    assert!(recs[1]["cost"]["calls"]["Write"] == 1, "{}", recs[1]);
}

#[test]
fn the_html_page_renders_in_chromium() {
    let Some(chrome) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = session(dir.path());
    let page = dir.path().join("page.html");
    let o = wrepl_in(dir.path(), &["log", "export", "page", "--store", &store, "--html", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err_text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("http://") && !html.contains("https://"), "the page loads nothing");
    let url = format!("file://{}", page.display());
    let run = |args: &[&str]| {
        std::process::Command::new(&chrome)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", dir.path().join("profile").display()))
            .args(args)
            .arg(&url)
            .output()
            .unwrap()
    };
    // The DOM after the page's script ran.
    let o = run(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(dom.contains("data-rendered=\"yes\""), "the script ran: {dom}\n{}", String::from_utf8_lossy(&o.stderr));
    for tool in ["Write", "Bash", "Read", "Glob", "Grep"] {
        assert!(dom.contains(&format!("data-tool=\"{tool}\"")), "{tool} is on the page");
    }
    assert!(dom.contains("class=\"call denied\""), "the refusal is marked");
    assert!(dom.contains("2 block(s), 5 inner call(s)"), "{dom}");
    // The recorded text is text, never markup.
    assert!(dom.contains("hi &lt;b&gt;") && !dom.contains("hi <b>"), "recorded text is escaped");
    // A screenshot, kept for people.
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("session-page.png");
    let _ = std::fs::remove_file(&shot);
    let o = run(&["--window-size=1200,900", &format!("--screenshot={}", shot.display())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a real screenshot: {} bytes", png.len());
}
