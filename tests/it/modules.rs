//! Vetted modules: the real npm packages `marked@15` (one ESM file) and
//! `lodash-es@4` (a package directory of ~640 files), installed by `npm ci`
//! in tests/node, imported by name as the settings configure them; digests
//! that refuse a changed file and make a resumed session drift; and what a
//! hostile script or module cannot do (escape the package, import anything
//! else, load a huge module, break the context with a throwing module).

use std::path::{Path, PathBuf};

use super::support::*;

/// tests/node/node_modules/`package`, or `None` (with a note) when npm has
/// not installed it and `WREPL_REQUIRE_NPM` is not `1`.
fn npm_package(package: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/node_modules").join(package);
    if dir.join("package.json").exists() {
        return Some(dir);
    }
    if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("{} is missing: run `npm ci` in tests/node", dir.display());
    }
    eprintln!("note: skipping: {} is missing (npm ci in tests/node)", dir.display());
    None
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn sha256_file(p: &Path) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(p).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A project with marked and lodash-es vendored, and settings naming them.
fn project() -> Option<tempfile::TempDir> {
    let marked = npm_package("marked")?;
    let lodash = npm_package("lodash-es")?;
    let dir = tempfile::tempdir().unwrap();
    let vendor = dir.path().join("vendor");
    std::fs::create_dir_all(&vendor).unwrap();
    std::fs::copy(marked.join("lib/marked.esm.js"), vendor.join("marked.esm.js")).unwrap();
    copy_dir(&lodash, &vendor.join("lodash-es"));
    let settings = serde_json::json!({"modules": {
        "marked": {"path": "vendor/marked.esm.js", "sha256": sha256_file(&vendor.join("marked.esm.js"))},
        "lodash-es": {"path": "vendor/lodash-es", "entry": "lodash.js"}
    }});
    std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
    Some(dir)
}

#[test]
fn real_packages_import_by_name() {
    let Some(dir) = project() else { return };
    let o = wrepl_in(
        dir.path(),
        &[
            "eval",
            "--settings",
            "settings.json",
            "--json",
            "-e",
            r##"import { marked } from "marked"; marked.parse("# Hi *there*")"##,
            "-e",
            r#"import _, { camelCase } from "lodash-es"; [_.chunk([1, 2, 3, 4, 5], 2), camelCase("hello big world"), _.VERSION]"#,
            "-e",
            r#"const { kebabCase } = await import("lodash-es"); kebabCase("Hello World")"#,
        ],
    );
    assert!(o.status.success(), "{}\n{}", out(&o), err_text(&o));
    let lines: Vec<serde_json::Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["result"], "<h1>Hi <em>there</em></h1>\n");
    assert_eq!(lines[1]["result"], serde_json::json!([[[1, 2], [3, 4], [5]], "helloBigWorld", "4.18.1"]));
    assert_eq!(lines[2]["result"], "hello-world");
    // Each module is loaded once, by one recorded ImportModule call.
    let imports: Vec<usize> = lines
        .iter()
        .map(|l| l["calls"].as_array().unwrap().iter().filter(|c| c["name"] == "ImportModule").count())
        .collect();
    assert_eq!(imports, [1, 1, 0]);
}

#[test]
fn a_changed_module_is_refused_or_drifts() {
    let Some(dir) = project() else { return };
    let store = dir.path().join("s.sqlite3");
    let store = store.to_str().unwrap();
    let session =
        ["eval", "--settings", "settings.json", "--store", store, "--session", "m", "--snapshot-after", "never"];
    let mut args = session.to_vec();
    args.extend(["-e", r#"import { marked } from "marked"; const html = marked.parse("*x*"); html"#]);
    let o = wrepl_in(dir.path(), &args);
    assert!(o.status.success(), "{}", err_text(&o));
    // Resumed unchanged: the recorded load replays and no drift is reported.
    let mut args = session.to_vec();
    args.extend(["-e", "html.trim()"]);
    let o = wrepl_in(dir.path(), &args);
    assert!(o.status.success(), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), "<p><em>x</em></p>");
    assert!(err_text(&o).contains("0 drift"), "{}", err_text(&o));
    // The file changes: its pinned sha256 refuses a new import, naming it...
    let file = dir.path().join("vendor/marked.esm.js");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n// changed\n");
    std::fs::write(&file, text).unwrap();
    let o = wrepl_in(dir.path(), &["eval", "--settings", "settings.json", "-e", r#"import { marked } from "marked""#]);
    assert!(!o.status.success());
    assert!(
        err_text(&o).contains("module \"marked\"") && err_text(&o).contains("does not match its sha256"),
        "{}",
        err_text(&o)
    );
    // ...and a resumed session reports the block that imported it as drift.
    let mut args = session.to_vec();
    args.extend(["-e", "1"]);
    let o = wrepl_in(dir.path(), &args);
    assert!(
        !err_text(&o).contains(" 0 drift") && err_text(&o).contains("ImportModule with another input"),
        "{}",
        err_text(&o)
    );
}

#[test]
fn packages_stay_closed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("vendor/pkg")).unwrap();
    std::fs::write(p.join("secret.js"), "export const secret = 'SECRET-MARKER';").unwrap();
    std::fs::write(p.join("vendor/pkg/up.js"), "export * from '../../secret.js';").unwrap();
    std::os::unix::fs::symlink(p.join("secret.js"), p.join("vendor/pkg/link.js")).unwrap();
    std::fs::write(p.join("vendor/pkg/via-link.js"), "export * from './link.js';").unwrap();
    std::fs::write(p.join("vendor/pkg/throws.js"), "throw new Error('module top level');").unwrap();
    std::fs::write(p.join("vendor/pkg/bare.js"), "import fs from 'node:fs'; export default fs;").unwrap();
    std::fs::write(p.join("vendor/huge.js"), format!("export const s = '{}';", "x".repeat(17 << 20))).unwrap();
    let settings = serde_json::json!({"modules": {
        "up": {"path": "vendor/pkg", "entry": "up.js"},
        "link": {"path": "vendor/pkg", "entry": "via-link.js"},
        "throws": {"path": "vendor/pkg", "entry": "throws.js"},
        "bare": {"path": "vendor/pkg", "entry": "bare.js"},
        "huge": {"path": "vendor/huge.js"}
    }});
    std::fs::write(p.join("settings.json"), settings.to_string()).unwrap();
    let why = |spec: &str| format!("await import({spec:?}).then(() => 'imported', (e) => e.message)");
    let o = wrepl_in(
        p,
        &[
            "eval",
            "--settings",
            "settings.json",
            "--json",
            "-e",
            &why("up"),
            "-e",
            &why("link"),
            "-e",
            &why("throws"),
            "-e",
            &why("bare"),
            "-e",
            &why("huge"),
            "-e",
            &why("node:fs"),
            "-e",
            &why("https://example.com/x.js"),
            "-e",
            &why("./secret.js"),
            "-e",
            "import('up', { with: { type: 'json' } })",
            "-e",
            "'the context lives: ' + (1 + 1)",
        ],
    );
    let lines: Vec<serde_json::Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let text =
        |i: usize| lines[i]["result"].as_str().map(str::to_string).unwrap_or_else(|| lines[i]["error"].to_string());
    assert!(text(0).contains("leaves the package"), "{}", text(0));
    assert!(text(1).contains("cannot read link.js"), "{}", text(1));
    assert_eq!(text(2), "module top level");
    assert!(text(3).contains("not a file of the package"), "{}", text(3));
    assert!(text(4).contains("past the cap of 16777216 bytes"), "{}", text(4));
    for i in [5, 6, 7] {
        assert!(
            text(i).contains("only the modules named in the settings' \\\"modules\\\"")
                || text(i).contains("only the modules named in the settings' \"modules\""),
            "{i}: {}",
            text(i)
        );
    }
    assert!(text(8).contains("import() with options is not supported"), "{}", text(8));
    assert_eq!(text(9), "the context lives: 2");
    assert!(!out(&o).contains("SECRET-MARKER"), "nothing of the secret file came back");
    // Without modules in the settings, module syntax stays refused.
    let o = wrepl_in(p, &["eval", "-e", "import x from 'up'"]);
    assert!(err_text(&o).contains("sealed sandbox"), "{}", err_text(&o));
}
