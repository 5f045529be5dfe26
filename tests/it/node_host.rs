//! The second host: the committed guest component transpiled by jco and run
//! on Node.js (`hosts/node/`), through its own test suite (`node --test`):
//! the host-conformance programs, the README's example, a deadline stopping
//! `while (true) {}` through `should-interrupt`, the heap limit.
//!
//! `scripts/test.sh` installs `hosts/node` (jco and a Node.js build with
//! JSPI, both from npm) and sets `WREPL_REQUIRE_NPM=1`, so a missing install
//! fails here instead of skipping.

use std::path::Path;
use std::process::Command;

#[test]
fn the_jco_host_passes_its_tests_and_the_conformance_programs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hosts/node");
    let node = dir.join("node_modules/.bin/node");
    if !node.exists() || !dir.join("node_modules/@bytecodealliance/jco").exists() {
        if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
            panic!("hosts/node is not installed: run `npm ci` there (scripts/test.sh does)");
        }
        eprintln!("note: skipping the jco host: hosts/node is not installed (npm ci there)");
        return;
    }
    // Transpile the committed component (the one `cargo test` embeds), then
    // run the host's tests.
    let gen = tempfile::tempdir().unwrap();
    let build = Command::new(&node).arg(dir.join("build.mjs")).arg("--out").arg(gen.path()).output().unwrap();
    assert!(build.status.success(), "jco transpile failed:\n{}", String::from_utf8_lossy(&build.stderr));
    let test = Command::new(&node)
        .arg("--test")
        .arg("--test-reporter=tap")
        .arg(dir.join("test"))
        .current_dir(&dir)
        .env("WREPL_GUEST_GEN", gen.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&test.stdout);
    assert!(test.status.success(), "node --test failed:\n{out}\n{}", String::from_utf8_lossy(&test.stderr));
    // Every conformance case ran (a test per case, plus the host's own).
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("../../tests/host-conformance/programs.json")).unwrap())
            .unwrap();
    let n = cases["cases"].as_array().unwrap().len();
    let passed = out.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(passed > n, "{passed} tests passed for {n} conformance cases:\n{out}");
    assert!(!out.lines().any(|l| l.starts_with("not ok")), "{out}");
}
