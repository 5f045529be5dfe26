//! `wrepl serve` with the official MCP Python SDK (PyPI `mcp`, pinned in
//! `tests/python/requirements.txt`, installed by `scripts/test.sh` into
//! `tests/python/.venv`): both revisions (the SDK's default 2026-07-28 and
//! its legacy mode) over both transports, and the README's client example.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::mcp_server::spawn_http;

/// The venv's Python, or `None` (with a note) when it is not installed and
/// `WREPL_REQUIRE_PYTHON` is not `1`.
fn python() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/.venv/bin/python");
    if bin.exists() {
        return Some(bin);
    }
    if std::env::var("WREPL_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!(
            "{} is missing: scripts/test.sh creates it (python3 -m venv, pip install -r requirements.txt)",
            bin.display()
        );
    }
    eprintln!("note: skipping the Python SDK tests: {} is missing (run scripts/test.sh)", bin.display());
    None
}

#[tokio::test]
async fn the_python_sdk_works_in_both_revisions_over_both_transports() {
    let Some(python) = python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/test_sdk.py");
    let out = tokio::time::timeout(
        Duration::from_secs(600),
        tokio::process::Command::new(python).arg(script).arg(env!("CARGO_BIN_EXE_wrepl")).kill_on_drop(true).output(),
    )
    .await
    .expect("the SDK test finished within 600 s")
    .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("all checks passed"), "{text}");
    eprintln!("{}", text.lines().last().unwrap_or(""));
}

#[tokio::test]
async fn the_readme_python_client_example_runs_as_written() {
    let Some(python) = python() else { return };
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let start = readme.find("```python\n").expect("a Python example in the README") + "```python\n".len();
    let example = &readme[start..start + readme[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    // The server the README names, on a free port instead of 8931.
    let (tokens, store) = (dir.path().join("tokens"), dir.path().join("sessions.sqlite3"));
    let args = ["--token-file", tokens.to_str().unwrap(), "--store", store.to_str().unwrap()];
    let mut server = spawn_http(dir.path(), "127.0.0.1:0", &args, &[]).await.expect("wrepl serve --http");
    let example = example.replace("127.0.0.1:8931", &server.addr);
    std::fs::write(dir.path().join("client.py"), &example).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(python).arg("client.py").current_dir(dir.path()).kill_on_drop(true).output(),
    )
    .await
    .expect("the example finished within 120 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "42");
    server.child.kill().await.unwrap();
}
