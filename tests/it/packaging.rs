//! The MCP Bundle: `scripts/package-mcpb.sh` packs the binary under test
//! with packaging/mcpb/manifest.json and runs its own checks (the versions,
//! `mcpb validate`, server.json against the MCP registry's schema, the
//! unpacked bundle's server); the bundle it writes, unzipped here by python3's
//! zipfile module, holds that binary, executable, and started as the manifest
//! says it answers an MCP `initialize` over stdio.
//!
//! `scripts/test.sh` installs packaging/mcpb (the mcpb CLI and ajv, from npm)
//! and sets `WREPL_REQUIRE_NPM=1`, so a missing install fails here instead of
//! skipping.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// Extract the zip file argv[1] into argv[2], keeping the Unix modes the
/// archive records; print each entry's name.
const UNZIP: &str = r#"
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(path, mode)
        print(info.filename)
"#;

fn sha256_file(p: &Path) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(p).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.display()))
}

#[test]
fn the_mcp_bundle_packs_and_its_binary_answers_initialize() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if !root.join("packaging/mcpb/node_modules/.bin/mcpb").exists() {
        if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
            panic!("packaging/mcpb is not installed: run `npm ci` there (scripts/test.sh does)");
        }
        eprintln!("note: skipping the MCP bundle: packaging/mcpb is not installed (npm ci there)");
        return;
    }
    let version = env!("CARGO_PKG_VERSION");
    let wrepl = Path::new(env!("CARGO_BIN_EXE_wrepl"));
    let out = tempfile::tempdir().unwrap();
    let o = Command::new("bash")
        .arg(root.join("scripts/package-mcpb.sh"))
        .arg(wrepl)
        .arg(out.path())
        .current_dir(&root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "scripts/package-mcpb.sh failed:\n{log}");
    let bundle = out.path().join(format!("wrepl-{version}.mcpb"));
    assert!(bundle.is_file(), "no {} after scripts/package-mcpb.sh:\n{log}", bundle.display());

    // The registry entry to publish names this release's bundle and its hash.
    let server = read_json(&out.path().join("server.json"));
    assert_eq!(server["name"], "io.github.wrepl/wrepl", "{server:#}");
    assert_eq!(server["version"], version, "{server:#}");
    let package = &server["packages"][0];
    assert_eq!(package["registryType"], "mcpb", "{server:#}");
    assert_eq!(
        package["identifier"],
        format!("https://github.com/wrepl/wrepl/releases/download/v{version}/wrepl-{version}.mcpb"),
        "{server:#}"
    );
    assert_eq!(package["fileSha256"], sha256_file(&bundle), "{server:#}");

    // The bundle, unzipped: the manifest and the binary under test.
    let unpacked = out.path().join("unpacked");
    let unzip = Command::new("python3").args(["-c", UNZIP]).arg(&bundle).arg(&unpacked).output().unwrap();
    assert!(unzip.status.success(), "unzip {}: {}", bundle.display(), String::from_utf8_lossy(&unzip.stderr));
    let names = String::from_utf8_lossy(&unzip.stdout);
    assert!(names.lines().any(|n| n == "manifest.json") && names.lines().any(|n| n == "server/wrepl"), "{names}");
    let manifest = read_json(&unpacked.join("manifest.json"));
    assert_eq!(manifest["version"], version, "{manifest:#}");
    assert_eq!(manifest["server"]["type"], "binary", "{manifest:#}");
    assert_eq!(manifest["server"]["entry_point"], "server/wrepl", "{manifest:#}");
    assert_eq!(manifest["compatibility"]["platforms"], json!(["linux"]), "{manifest:#}");
    let binary = unpacked.join("server/wrepl");
    let mode = std::fs::metadata(&binary).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "server/wrepl is not executable: mode {mode:o}");
    assert!(std::fs::read(&binary).unwrap() == std::fs::read(wrepl).unwrap(), "server/wrepl is not the binary packed");

    // Started as an MCPB host starts it: ${__dirname} is the unpacked bundle,
    // ${user_config.workspace} the directory the user chose.
    let workspace = tempfile::tempdir().unwrap();
    let config = &manifest["server"]["mcp_config"];
    let resolve = |v: &Value| {
        v.as_str()
            .unwrap_or_else(|| panic!("not a string in mcp_config: {v}"))
            .replace("${__dirname}", unpacked.to_str().unwrap())
            .replace("${user_config.workspace}", workspace.path().to_str().unwrap())
    };
    let command = resolve(&config["command"]);
    let args: Vec<String> = config["args"].as_array().expect("mcp_config.args").iter().map(resolve).collect();
    assert_eq!(Path::new(&command), binary, "{config}");
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{config}");
    let mut child = Command::new(&command)
        .args(&args)
        .current_dir(workspace.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcpb-test", "version": "0"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let answer = rx.recv_timeout(Duration::from_secs(120));
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let line = answer.expect("the bundle's wrepl did not answer initialize within 120 s");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(v["id"], json!(1), "{line}");
    assert_eq!(v["result"]["serverInfo"]["name"], "wrepl", "{line}");
    assert_eq!(v["result"]["serverInfo"]["version"], version, "{line}");
    assert!(v["result"]["capabilities"]["tools"].is_object(), "{line}");
}
