//! wrepl's own state is out of the file tools' reach (issue #13, section 1),
//! `Read` deny rules filter what Glob and Grep walk (section 3), and a forged
//! compile cache is never loaded. Everything is checked on the real effect:
//! the bytes on disk, the names and lines the tools return.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use serde_json::{json, Value};
use wrepl::replay::store::SqliteStore;
use wrepl::Settings;

use crate::support::{builder, ev, ok};

/// The magic of a verified cache file.
const CACHE_MAGIC: &[u8] = b"WREPLCW1";

fn wrepl(root: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wrepl"));
    c.args(args).current_dir(root).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run wrepl")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `.cwasm` artifacts in a cache directory.
fn artifacts(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    v.sort();
    v
}

/// Bytes of every file below `dir` (symlinks not followed).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A workspace root holding wrepl's own state: the compile cache
/// (`cache/`, the CLI's `WREPL_CACHE_DIR`), the default session store
/// (`state/`, `WREPL_STORE`), the settings file with a hook, its hook script
/// and the MCP configuration, plus symlinks and hard links to them and
/// ordinary files.
struct StateRoot {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    cache: PathBuf,
    store: PathBuf,
}

impl StateRoot {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let w = |rel: &str, body: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        };
        let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "sh hooks/pre.sh PROTECTED_MARKER"}
        ]}]}});
        w("settings.json", &settings.to_string());
        w("hooks/pre.sh", "#!/bin/sh\n# PROTECTED_MARKER hook\ncat > /dev/null\n");
        w("mcp.json", "{\"mcpServers\": {}}\n");
        w("state/default.sqlite3", "SQLite format 3\0 PROTECTED_MARKER other sessions' data\n");
        w("state/default.sqlite3-wal", "PROTECTED_MARKER wal\n");
        w("state/default.sqlite3-shm", "PROTECTED_MARKER shm\n");
        w("state/notes.txt", "an ordinary file beside the store\n");
        w("visible.txt", "PROTECTED_MARKER in an ordinary file\n");
        w("a.txt", "a\n");
        std::fs::create_dir(root.join("links")).unwrap();
        for (link, target) in [
            ("links/cache", "../cache"),
            ("links/settings.json", "../settings.json"),
            ("links/store", "../state/default.sqlite3"),
            ("links/state", "../state"),
            ("links/hook", "../hooks/pre.sh"),
        ] {
            std::os::unix::fs::symlink(target, root.join(link)).unwrap();
        }
        // Hard links: other names for the same files, along paths with no
        // symbolic link (known only by the files' identities). Their names
        // carry the markers the listing test looks for.
        std::fs::create_dir(root.join("hard")).unwrap();
        for (link, target) in [
            ("hard/linked-settings.json", "settings.json"),
            ("hard/linked-pre.sh", "hooks/pre.sh"),
            ("hard/linked.sqlite3", "state/default.sqlite3"),
        ] {
            std::fs::hard_link(root.join(target), root.join(link)).unwrap();
        }
        let cache = root.join("cache");
        let store = root.join("state/default.sqlite3");
        Self { _tmp: tmp, root, cache, store }
    }

    fn env(&self) -> Vec<(&'static str, &Path)> {
        vec![("WREPL_CACHE_DIR", self.cache.as_path()), ("WREPL_STORE", self.store.as_path())]
    }

    /// `wrepl eval --json` with the state's settings and MCP config.
    fn eval(&self, extra: &[&str], code: &str) -> Value {
        let settings = self.root.join("settings.json");
        let mcp = self.root.join("mcp.json");
        let mut args = vec![
            "eval",
            "--json",
            "--root",
            self.root.to_str().unwrap(),
            "--settings",
            settings.to_str().unwrap(),
            "--mcp-config",
            mcp.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-e", code]);
        let o = wrepl(&self.root, &self.env(), &args);
        assert!(o.status.success(), "wrepl failed: {}\n{}", text(&o.stderr), text(&o.stdout));
        let line = text(&o.stdout);
        let v: Value = serde_json::from_str(line.lines().last().unwrap()).expect("json");
        assert!(v["error"].is_null(), "script failed: {v}\nstderr: {}", text(&o.stderr));
        v["result"].clone()
    }
}

#[test]
fn file_tools_refuse_wrepls_own_state_even_inside_a_root() {
    let s = StateRoot::new();
    // A run with fuel metering compiles the guest into the cache inside
    // the root (without, the binary's precompiled guest is used).
    assert_eq!(s.eval(&["--fuel", "100000000"], "1 + 1"), json!(2));
    let art = artifacts(&s.cache);
    assert_eq!(art.len(), 1, "{art:?}");
    let art_name = art[0].file_name().unwrap().to_str().unwrap().to_string();
    let before = tree(&s.root);
    assert!(before.contains_key(&s.cache.join("cache.key")));

    let root = s.root.display().to_string();
    let targets = [
        format!("cache/{art_name}"),
        "cache/cache.key".into(),
        "cache/new.cwasm".into(),
        "cache/sub/deeper.txt".into(),
        "cache".into(),
        "cache//./cache.key".into(),
        "state/default.sqlite3".into(),
        "state/default.sqlite3-wal".into(),
        "state/default.sqlite3-shm".into(),
        "state/default.sqlite3-journal".into(),
        "settings.json".into(),
        "mcp.json".into(),
        "hooks/pre.sh".into(),
        "nope/../settings.json".into(),
        "./hooks/../mcp.json".into(),
        format!("{root}/settings.json"),
        format!("{root}/cache/{art_name}"),
        format!("{root}/state/../state/default.sqlite3-wal"),
        format!("links/cache/{art_name}"),
        "links/cache/new.cwasm".into(),
        "links/settings.json".into(),
        "links/store".into(),
        "links/hook".into(),
        "links/state/default.sqlite3-wal".into(),
        "links/state/default.sqlite3-journal".into(),
        "hard/linked-settings.json".into(),
        "hard/linked-pre.sh".into(),
        "hard/linked.sqlite3".into(),
        format!("{root}/hard/../hard/linked-pre.sh"),
    ];
    let code = format!(
        r#"const out = {{}};
        for (const t of {targets}) {{
          const r = {{}};
          try {{ await Write({{ file_path: t, content: 'pwned' }}); r.write = 'ok' }} catch (e) {{ r.write = e.kind }}
          try {{ await Edit({{ file_path: t, old_string: 'a', new_string: 'pwned' }}); r.edit = 'ok' }} catch (e) {{ r.edit = e.kind }}
          try {{ await Read({{ file_path: t }}); r.read = 'ok' }} catch (e) {{ r.read = e.kind }}
          out[t] = r;
        }}
        try {{ await chdir('cache'); out.chdir = 'ok' }} catch (e) {{ out.chdir = e.kind }}
        try {{ await chdir('links/cache'); out.chdirLink = 'ok' }} catch (e) {{ out.chdirLink = e.kind }}
        try {{ await Read({{ file_path: 'cache/cache.key' }}) }} catch (e) {{ out.message = e.message }}
        // Control: an ordinary file in the same root is writable.
        await Write({{ file_path: 'a.txt', content: 'written' }});
        out"#,
        targets = serde_json::to_string(&targets).unwrap()
    );
    let r = s.eval(&["--allow", "Write", "--allow", "Edit"], &code);
    for t in &targets {
        assert_eq!(r[t], json!({"write": "protected", "edit": "protected", "read": "protected"}), "{t}: {r}");
    }
    assert_eq!(r["chdir"], "protected", "{r}");
    assert_eq!(r["chdirLink"], "protected", "{r}");
    assert!(r["message"].as_str().unwrap().contains("wrepl's own state"), "{r}");

    // On disk: every protected file has the same bytes, nothing was created.
    let after = tree(&s.root);
    for (p, bytes) in &before {
        if p.ends_with("a.txt") {
            continue;
        }
        assert_eq!(after.get(p), Some(bytes), "{} changed", p.display());
    }
    let new: Vec<&PathBuf> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert!(new.is_empty(), "new files: {new:?}");
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "written");
}

#[test]
fn glob_and_grep_never_list_wrepls_own_state() {
    let s = StateRoot::new();
    assert_eq!(s.eval(&[], "1 + 1"), json!(2));
    let code = r#"
        const names = [];
        for (const [p, o] of [['**/*', {}], ['**/*', { path: '.' }], ['**/*', { path: 'state' }],
                              ['cache/*', {}], ['**/*.cwasm', {}], ['**/*.sqlite3*', {}], ['*.json', {}],
                              ['**/*.sh', {}], ['**/cache.key', {}], ['**/*', { path: 'hooks' }],
                              ['**/*', { path: 'links/state' }]]) {
          try { names.push(...await gl(p, o)) } catch (e) { names.push('error ' + p + ': ' + e.kind) }
        }
        const lines = [];
        for (const o of [{}, { path: '.' }, { glob: '*' }, { glob: '**/*.sqlite3*' }, { path: 'state' },
                         { '-i': true }, { glob: '*.{json,sh}' }, { path: 'hooks' }, { type: 'sh' },
                         { multiline: true }, { path: 'links' }, { path: 'links/state' }]) {
          try { lines.push(await rg('PROTECTED_MARKER|mcpServers|hooks/pre', o)) } catch (e) { lines.push('error: ' + e.kind) }
        }
        const files = await rgf('.', { glob: '**/*' });
        const counts = await Grep({ pattern: '.', output_mode: 'count' });
        ({ names, lines, files, counts: counts.counts.map(c => c.file) })
    "#;
    let r = s.eval(&[], code);
    let shown = r.to_string();
    let root = s.root.display().to_string();
    for bad in ["/cache", "cache.key", ".cwasm", "sqlite3", "settings.json", "mcp.json", "pre.sh"] {
        assert!(!shown.contains(bad), "{bad:?} was listed: {r:#}");
    }
    // The tools do work (the test can fail): ordinary files are listed and searched.
    assert!(r["names"].as_array().unwrap().contains(&json!(format!("{root}/visible.txt"))), "{r:#}");
    assert!(r["lines"][0].as_str().unwrap().contains("visible.txt:1:PROTECTED_MARKER"), "{r:#}");
    assert!(r["files"].as_array().unwrap().contains(&json!(format!("{root}/a.txt"))), "{r:#}");
    // Walked through a link to the store's directory (the walk's base is
    // then not where its entries really are), the store stays hidden and
    // the ordinary file beside it is listed.
    assert!(r["names"].as_array().unwrap().contains(&json!(format!("{root}/links/state/notes.txt"))), "{r:#}");
    // A protected directory named as the search directory is refused outright.
    assert!(shown.contains("error cache/*: protected"), "{r:#}");
}

#[tokio::test]
async fn the_builder_protects_the_session_store_and_the_hook_scripts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    std::fs::create_dir_all(root.join("hooks")).unwrap();
    std::fs::write(root.join("hooks/check.py"), "# PROTECTED hook helper\n").unwrap();
    let store = Arc::new(SqliteStore::open(&root.join("state/s.sqlite3")).unwrap());
    let settings = Settings::from_json(
        &json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 \"$WREPL_PROJECT_DIR/hooks/check.py\" --strict"},
            {"type": "command", "command": "./hooks/missing-yet.sh"}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let mut repl = builder()
        .roots([root.as_path()])
        .settings(settings)
        .allow(["Write", "Edit"])
        .session(store, "s")
        .build()
        .await
        .unwrap();
    ok(&ev(&mut repl, "let recorded = 1").await);
    let r = ev(
        &mut repl,
        r#"const out = {};
        for (const t of ['state/s.sqlite3', 'state/s.sqlite3-wal', 'state/s.sqlite3-shm', 'state/s.sqlite3-journal',
                         'hooks/check.py', 'hooks/missing-yet.sh']) {
          try { await Write({ file_path: t, content: 'pwned' }); out[t] = 'ok' } catch (e) { out[t] = e.kind }
        }
        out.grep = await rgf('.', { glob: '**/*' });
        out"#,
    )
    .await;
    let v = ok(&r);
    for t in ["state/s.sqlite3", "state/s.sqlite3-wal", "state/s.sqlite3-shm", "state/s.sqlite3-journal"] {
        assert_eq!(v[t], "protected", "{t}: {v}");
    }
    assert_eq!(v["hooks/check.py"], "protected", "{v}");
    assert_eq!(v["hooks/missing-yet.sh"], "protected", "the first word is protected before it exists: {v}");
    assert_eq!(v["grep"], json!([]), "{v}");
    assert!(!root.join("state/s.sqlite3-journal").exists());
    assert!(!root.join("hooks/missing-yet.sh").exists());
    assert_eq!(std::fs::read_to_string(root.join("hooks/check.py")).unwrap(), "# PROTECTED hook helper\n");
    // The store is intact (the session still works, and it holds no "pwned").
    let db_after = std::fs::read(root.join("state/s.sqlite3")).unwrap();
    assert!(!db_after.windows(5).any(|w| w == b"pwned"));
    assert_eq!(ok(&ev(&mut repl, "recorded").await), json!(1));
}

/// The workspace of the Read-deny tests: `secret/` (denied) and ordinary files.
fn secret_root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    for (rel, body) in [
        ("secret/a.txt", "SECRET_LINE one\n"),
        ("secret/sub/b.md", "SECRET_LINE two\n"),
        ("secret/.hidden", "SECRET_LINE three\n"),
        ("secret/.gitignore", "!*\n"),
        ("open.txt", "SECRET_LINE is named here, in an ordinary file\n"),
        ("docs/c.txt", "nothing\n"),
    ] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    std::os::unix::fs::symlink("secret", root.join("alias")).unwrap();
    (tmp, root)
}

const SEARCHES: &str = r#"
    const got = [];
    const note = async (what, f) => { try { got.push([what, await f()]) } catch (e) { got.push([what, 'error ' + e.kind]) } };
    for (const o of [{}, { path: '.' }, { glob: '*' }, { glob: '**/*' }, { glob: 'secret/**' }, { glob: '*.txt' },
                     { '-i': true }, { glob: '.*' }, { type: 'txt' }, { multiline: true }, { path: root },
                     { path: 'docs/..' }]) {
      await note('rg ' + JSON.stringify(o), () => rg('SECRET_LINE|one|two', o));
      await note('rgf ' + JSON.stringify(o), () => rgf('.', o));
    }
    for (const p of ['**/*', '*/*', 'secret/**', 'secret/*', '**/a.txt', '**/.*', '**/sub/*', root + '/secret/*']) {
      await note('gl ' + p, () => gl(p));
      await note('gl . ' + p, () => gl(p, { path: '.' }));
    }
    await note('count', async () => (await Grep({ pattern: '.', output_mode: 'count' })).counts);
    await note('rg path secret', () => rg('SECRET_LINE', { path: 'secret' }));
    await note('rg path alias', () => rg('SECRET_LINE', { path: 'alias' }));
    await note('gl path alias', () => gl('**/*', { path: 'alias' }));
    await chdir('secret');
    await note('rg in chdir', () => rg('SECRET_LINE'));
    await note('gl in chdir', () => gl('**/*'));
    got
"#;

async fn searches(root: &Path, configure: impl FnOnce(wrepl::ReplBuilder) -> wrepl::ReplBuilder) -> Vec<Value> {
    let mut repl = configure(builder().roots([root])).build().await.unwrap();
    let code = format!("const root = {};\n{SEARCHES}", json!(root.display().to_string()));
    ok(&ev(&mut repl, &code).await).as_array().unwrap().clone()
}

fn assert_nothing_from_secret(root: &Path, got: &[Value]) {
    let secret = format!("{}/secret", root.display());
    for pair in got {
        let shown = pair[1].to_string();
        for bad in [secret.as_str(), "SECRET_LINE one", "SECRET_LINE two", "SECRET_LINE three", "a.txt", "b.md"] {
            assert!(!shown.contains(bad), "{}: {bad:?} leaked: {shown}", pair[0]);
        }
    }
    // The searches themselves work: the ordinary file is found.
    let open = format!("{}/open.txt", root.display());
    let first = got.iter().find(|p| p[0] == "rg {}").unwrap();
    assert!(first[1].as_str().unwrap().contains(&format!("{open}:1:SECRET_LINE is named here")), "{first}");
    let all = got.iter().find(|p| p[0] == "gl **/*").unwrap();
    assert!(all[1].as_array().unwrap().contains(&json!(open)), "{all}");
    // Naming the denied directory is denied by the rule itself.
    for what in ["rg path secret", "rg path alias", "gl path alias"] {
        let p = got.iter().find(|p| p[0] == what).unwrap();
        assert_eq!(p[1], "error denied", "{what}");
    }
}

#[tokio::test]
async fn read_deny_rules_hide_paths_from_grep_and_glob() {
    let (_t, root) = secret_root();
    let got = searches(&root, |b| b.deny(["Read(secret/**)"])).await;
    assert_nothing_from_secret(&root, &got);

    // The same rule from a settings file.
    let settings = Settings::from_json(r#"{"permissions": {"deny": ["Read(./secret)"]}}"#).unwrap();
    let got = searches(&root, |b| b.settings(settings)).await;
    assert_nothing_from_secret(&root, &got);

    // Control: without the rule the same searches do see secret/.
    let got = searches(&root, |b| b).await;
    let shown = serde_json::to_string(&got).unwrap();
    assert!(shown.contains("SECRET_LINE one") && shown.contains("secret/sub/b.md"), "{shown}");
}

#[tokio::test]
async fn a_whole_tool_read_deny_hides_every_walk() {
    let (_t, root) = secret_root();
    let mut repl = builder().roots([root.as_path()]).deny(["Read"]).build().await.unwrap();
    let r = ok(&ev(
        &mut repl,
        "({ rg: await rg('SECRET_LINE|nothing'), rgf: await rgf('.'), gl: await gl('**/*'), \
           count: (await Grep({ pattern: '.', output_mode: 'count' })).counts })",
    )
    .await);
    assert_eq!(r, json!({"rg": "", "rgf": [], "gl": [], "count": []}));
}

/// Forge the compile cache in every way an attacker with write access to it
/// would, and run the real binary after each: it must still evaluate, and the
/// forged file must have been replaced by a valid one (which the next run
/// loads: it is then left as it is).
#[test]
fn a_forged_compile_cache_is_never_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let cache = dir.join("cache");
    let env = [("WREPL_CACHE_DIR", cache.as_path())];
    let run = |extra: &[&str]| {
        let mut args = vec!["eval", "--root", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-e", "6 * 7"]);
        let o = wrepl(&dir, &env, &args);
        assert!(o.status.success(), "exit {:?}: {}", o.status, text(&o.stderr));
        assert_eq!(text(&o.stdout).trim(), "42");
    };
    // The default engine uses the guest compiled into the binary: nothing
    // is compiled, nothing is cached.
    run(&[]);
    assert!(!cache.exists(), "the cache was not even created");
    // Fuel metering compiles, through the cache.
    let fuel = ["--fuel", "100000000"];
    run(&fuel);
    let plain = artifacts(&cache);
    assert_eq!(plain.len(), 1, "{plain:?}");
    let art = plain[0].clone();
    // Private directory and key.
    assert_eq!(std::fs::metadata(&cache).unwrap().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(cache.join("cache.key")).unwrap().mode() & 0o777, 0o600);
    // A valid artifact of another configuration (no fuel metering), cached
    // by the library with the embedded artifact turned off.
    let options = wrepl::EngineOptions {
        cache_dir: Some(cache.clone()),
        precompiled: false,
        pool_slots: 4,
        ..Default::default()
    };
    drop(wrepl::SandboxEngine::new(options).unwrap());
    let other = artifacts(&cache).into_iter().find(|p| *p != art).expect("the plain engine's artifact");
    let good = std::fs::read(&art).unwrap();
    assert!(good.starts_with(CACHE_MAGIC));
    let n = good.len();
    let mut flipped = good.clone();
    flipped[n / 2] ^= 0x01;
    let garbage: Vec<u8> = CACHE_MAGIC.iter().copied().chain((0..n - CACHE_MAGIC.len()).map(|i| i as u8)).collect();
    let forgeries = [
        ("one byte flipped", flipped),
        ("truncated", good[..n / 3].to_vec()),
        ("same-length garbage", garbage),
        ("a valid artifact of another configuration", std::fs::read(&other).unwrap()),
    ];
    for (what, bytes) in forgeries {
        std::fs::write(&art, &bytes).unwrap();
        run(&fuel);
        let now = std::fs::read(&art).unwrap();
        assert_ne!(now, bytes, "{what}: the forged file is still there");
        assert!(now.starts_with(CACHE_MAGIC), "{what}");
        // The replacement is valid: the next run loads it and leaves it alone.
        let ino = std::fs::metadata(&art).unwrap().ino();
        run(&fuel);
        assert_eq!(std::fs::metadata(&art).unwrap().ino(), ino, "{what}: the replacement was not loaded");
        assert_eq!(std::fs::read(&art).unwrap(), now, "{what}");
    }
}

/// The artifact is read into memory, not mapped: truncating or rewriting the
/// cache file after the engine loaded it (the attack that used to kill the
/// host with SIGBUS) changes nothing for the running engine.
#[tokio::test]
async fn rewriting_the_cache_under_a_loaded_engine_cannot_fault() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let options = || wrepl::EngineOptions {
        cache_dir: Some(cache.clone()),
        precompiled: false,
        pool_slots: 4,
        ..Default::default()
    };
    drop(wrepl::SandboxEngine::new(options()).unwrap());
    let art = artifacts(&cache).pop().expect("an artifact");
    let stored = std::fs::read(&art).unwrap();
    // This engine loads the artifact from the cache.
    let engine = Arc::new(wrepl::SandboxEngine::new(options()).unwrap());
    assert_eq!(std::fs::read(&art).unwrap(), stored, "the second engine loaded the cached artifact");
    // Truncate the very file (same inode) and fill it with garbage.
    let f = std::fs::OpenOptions::new().write(true).open(&art).unwrap();
    f.set_len(0).unwrap();
    f.set_len(stored.len() as u64 / 2).unwrap();
    drop(f);
    let root = tmp.path().canonicalize().unwrap();
    let mut repl = wrepl::Repl::builder().engine(engine.clone()).roots([root.clone()]).build().await.unwrap();
    assert_eq!(ok(&ev(&mut repl, "[1, 2, 3].map(x => x * 14).reduce((a, b) => a + b)").await), json!(84));
    let mut second = wrepl::Repl::builder().engine(engine).roots([root]).build().await.unwrap();
    assert_eq!(ok(&ev(&mut second, "JSON.stringify({ a: [1, { b: 2 }] })").await), json!("{\"a\":[1,{\"b\":2}]}"));
}
