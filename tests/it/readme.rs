//! The README's examples, run as written.
//!
//! Every line of every ```sh block is either run (in order, block by block,
//! by bash in a scratch directory, with `wrepl` on the PATH as the binary
//! under test and `cargo run --release --` meaning that binary too) and
//! checked against what the README says it prints, or listed in [`NOT_RUN`]
//! with the reason and the test that covers it. A new example that is
//! neither fails this test. Every ```json block must parse, and the ```js
//! block is `hosts/node/example.mjs`, which `node_host.rs` runs. (The ```rust
//! block is a doctest of the library, the ```python block runs in
//! `python_sdk.rs`, the interactive transcript in `terminal.rs`.)

use std::path::Path;
use std::process::Command;

/// Lines not run here, and why (a prefix of the line, as written).
const NOT_RUN: &[(&str, &str)] = &[
    ("scripts/test.sh", "the test command itself: it runs this test"),
    ("createdb wrepl", "needs a database server of the reader's; tests/it/postgres.rs runs the same commands"),
    ("export WREPL_STORE=", "names the reader's database host; tests/it/postgres.rs covers the store"),
    ("wrepl store migrate", "needs the reader's database; tests/it/postgres.rs runs `store migrate`"),
    ("wrepl serve --http 0.0.0.0:8931", "serves until stopped; tests/it/postgres.rs runs two such servers"),
    ("just guest-toolchain", "installs system packages; .ci/run runs it"),
    ("just guest", "rebuilds the guest; .ci/run checks it is byte-for-byte the committed one"),
    (
        "OTEL_EXPORTER_OTLP_ENDPOINT=",
        "needs the reader's OTLP collector; tests/it/telemetry.rs runs a receiver and checks what arrives",
    ),
];

/// What a line run here must print (its stdout), when the README says.
fn expected(line: &str) -> Option<Check> {
    Some(match line {
        l if l.contains("-e 'let x = 41' -e 'x + 1'") => Check::Stdout("{}\n42\n"),
        l if l.contains("r(7), 10)); r'") => Check::Stdout("7\n"),
        l if l.contains("while (true) {}") => Check::Fails("next one still works"),
        l if l.contains("console.log(\"from stdin\")") => Check::Contains("from stdin"),
        l if l.contains("--json -e 'o.answer = 42'") => Check::Contains("\"result\":42"),
        // `ls | wc -l` in the scratch directory, plus one.
        l if l.contains("-e 'n + 1'") => Check::Number,
        // The sum of i % 7 for i below 1e7, plus one, from the snapshot.
        l if l.contains("-e 's + 1'") => Check::Stdout("29999995\n"),
        l if l.starts_with("wrepl log verify --replay") => Check::Contains("0 with a problem"),
        l if l.starts_with("wrepl log verify") => Check::Contains("hash chain and head intact"),
        l if l.starts_with("wrepl store gc") => Check::Contains("unreachable snapshot(s)"),
        l if l.contains("--context helper -e 'typeof n'") => Check::Stdout("undefined\n"),
        l if l.contains("u.searchParams.append(\"y\", \"2\"); u.href'") => {
            Check::Stdout("https://example.com/b?x=1&y=2\n")
        }
        l if l.contains("crypto.subtle.digest(\"SHA-256\"") => Check::Stdout("186\n"),
        l if l.contains("--fork work -e 'n + 100'") => Check::Number,
        l if l.starts_with("wrepl log list") => Check::Contains("work"),
        _ => return None,
    })
}

/// What a line's stdout must be.
#[derive(Debug)]
enum Check {
    /// Exit status 1 (the README says why), and this on stdout.
    Fails(&'static str),
    Stdout(&'static str),
    Contains(&'static str),
    Number,
}

/// The runnable lines of the README's ```sh blocks, a block at a time, and
/// its ```json blocks.
fn blocks(readme: &str) -> (Vec<Vec<String>>, Vec<String>, Vec<String>) {
    let (mut sh, mut json, mut js) = (Vec::new(), Vec::new(), Vec::new());
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else { continue };
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
        match lang.trim() {
            "sh" => sh.push(body.iter().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect()),
            "json" => json.push(body.join("\n")),
            "js" => js.push(body.join("\n") + "\n"),
            _ => {}
        }
    }
    (sh, json, js)
}

#[test]
fn every_readme_example_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (sh, json, js) = blocks(&readme);
    // The ```js block is the Node host's example, which its tests run
    // (node_host.rs): the README shows it as it is.
    let example = std::fs::read_to_string(root.join("hosts/node/example.mjs")).unwrap();
    assert_eq!(js, [example], "the README's JavaScript example is not hosts/node/example.mjs");
    assert!(sh.len() >= 5 && !json.is_empty(), "the README's blocks were not found");
    for j in &json {
        serde_json::from_str::<serde_json::Value>(j)
            .unwrap_or_else(|e| panic!("a JSON block does not parse: {e}\n{j}"));
    }

    // The scratch directory: `wrepl` on the PATH, a HOME of its own (the
    // default store lands there), the TypeScript compiler of tests/node.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_wrepl"), bin.join("wrepl")).unwrap();
    let node_bin = root.join("tests/node/node_modules/.bin").canonicalize();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    // What the `tsc` example checks.
    std::fs::write(work.join("script.ts"), "const r = await Read({ file_path: 'a.txt' });\nconsole.log(r.type);\n")
        .unwrap();
    let path = format!(
        "{}:{}{}",
        bin.display(),
        node_bin.as_ref().map(|p| format!("{}:", p.display())).unwrap_or_default(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut ran = 0;
    for block in &sh {
        for line in block {
            if line.starts_with('#') {
                continue;
            }
            if let Some((_, why)) = NOT_RUN.iter().find(|(prefix, _)| line.starts_with(prefix)) {
                eprintln!("not run ({why}): {line}");
                continue;
            }
            let command = line.replace("cargo run --release --", "wrepl");
            let runnable = command.starts_with("wrepl ")
                || command.contains("| wrepl ")
                || command.ends_with("| wrepl eval")
                || command.starts_with("tsc ");
            assert!(
                runnable,
                "a README example is neither run by this test nor listed in NOT_RUN with a reason: {line}"
            );
            if command.starts_with("tsc ") && node_bin.is_err() {
                if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
                    panic!("tests/node has no TypeScript compiler: run npm ci there");
                }
                eprintln!("note: skipping {line}: tests/node is not installed");
                continue;
            }
            let o = Command::new("bash")
                .args(["-c", &command])
                .current_dir(&work)
                .env("PATH", &path)
                .env("HOME", &dir)
                .env_remove("XDG_CONFIG_HOME")
                .env_remove("XDG_STATE_HOME")
                .env_remove("XDG_DATA_HOME")
                .env_remove("WREPL_STORE")
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            let check = expected(&command);
            let want = if matches!(check, Some(Check::Fails(_))) { Some(1) } else { Some(0) };
            assert_eq!(o.status.code(), want, "README example ({}): {line}\nstdout:\n{out}\nstderr:\n{err}", o.status);
            match check {
                Some(Check::Fails(want)) => assert!(out.contains(want), "{line}: {want:?} not in\n{out}\n{err}"),
                Some(Check::Stdout(want)) => assert_eq!(out, want, "{line}\nstderr:\n{err}"),
                Some(Check::Contains(want)) => assert!(out.contains(want), "{line}: {want:?} not in\n{out}\n{err}"),
                Some(Check::Number) => {
                    assert!(out.trim().parse::<u64>().is_ok(), "{line}: not a number:\n{out}\n{err}")
                }
                None => {}
            }
            ran += 1;
        }
    }
    assert!(ran >= 12, "only {ran} README examples ran");
}
