//! Bash commands run confined by the kernel (issue #13 §2), proven on the
//! real effects: files on disk, the host's process table, the network, the
//! bytes a command prints. Every test requires confinement (`confine:
//! "require"`): a machine that cannot set it up fails them, never skips.
//! Each effect is also shown to happen with `confine: "off"`, so a test
//! cannot pass because its probe is blind.
//!
//! Run as root in process (the test binary) and unprivileged through the
//! CLI under `setpriv --reuid=65534` (where a user namespace does the work).

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wrepl::{Repl, Settings};

use crate::support::{alive, ev, ok, pids_with, shared_engine};

/// A variable only the test process has.
const SECRET_NAME: &str = "WREPL_CONFINE_TEST_SECRET";
const SECRET_VALUE: &str = "confine-s3cret-7f3a9c";

fn set_secret() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var(SECRET_NAME, SECRET_VALUE));
}

/// A REPL with Bash allowed, rooted at `root`, under `settings` (JSON).
async fn repl(root: &Path, settings: &str, protect: &[PathBuf]) -> Repl {
    let mut b = Repl::builder()
        .engine(shared_engine())
        .roots([root])
        .settings(Settings::from_json(settings).expect("settings"))
        .allow(["Bash"])
        .session_id("confine");
    for p in protect {
        b = b.protect(p.clone());
    }
    b.build().await.expect("repl")
}

const REQUIRE: &str = r#"{"confine": "require"}"#;
const OFF: &str = r#"{"confine": "off"}"#;

/// Runs `command` through `Bash` and returns its result value.
async fn bash(r: &mut Repl, command: &str) -> Value {
    let code = format!("await Bash({{command: {}}})", json!(command));
    ok(&ev(r, &code).await)
}

fn stdout(v: &Value) -> &str {
    v["stdout"].as_str().unwrap_or_default()
}

/// Canonical temp dir (roots are canonicalized).
fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_outside_the_roots_fail() {
    let root = tempdir();
    let outside = tempdir();
    let target = outside.path().join("escaped");
    let cmd = format!("touch made-inside && touch '{}'; echo rc=$?", target.display());
    let mut r = repl(root.path(), REQUIRE, &[]).await;
    let v = bash(&mut r, &cmd).await;
    assert_eq!(v["confined"], true, "{v}");
    assert!(stdout(&v).trim().starts_with("rc=") && stdout(&v).trim() != "rc=0", "{v}");
    assert!(v["stderr"].as_str().unwrap().contains("Permission denied"), "{v}");
    assert!(!target.exists(), "a confined command created {}", target.display());
    assert!(root.path().join("made-inside").exists(), "writes inside the root work");
    // A directory the command would create, a rename out of the root and a
    // write under /tmp itself fail the same way.
    let moved = outside.path().join("moved");
    let cmd = format!(
        "mkdir '{o}/d'; mv made-inside '{m}'; echo x > /tmp/wrepl-confine-escape-$$; ls",
        o = outside.path().display(),
        m = moved.display()
    );
    let v = bash(&mut r, &cmd).await;
    assert_eq!(stdout(&v), "made-inside\n", "{v}");
    assert!(!outside.path().join("d").exists() && !moved.exists(), "{v}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // The probe sees a write when there is no confinement.
    let mut r = repl(root.path(), OFF, &[]).await;
    let v = bash(&mut r, &format!("touch '{}'", target.display())).await;
    assert_eq!((v["exitCode"].as_i64(), v["confined"].as_bool()), (Some(0), Some(false)), "{v}");
    assert!(target.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn protected_paths_are_hidden_and_cannot_be_written() {
    let root = tempdir();
    let store = root.path().join("sessions.sqlite3");
    std::fs::write(&store, "SECRET-STORE-CONTENT").unwrap();
    let cache = root.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::write(cache.join("guest.cwasm"), "SECRET-CACHE-CONTENT").unwrap();
    let mut r = repl(root.path(), REQUIRE, &[store.clone(), cache.clone()]).await;
    let v = bash(
        &mut r,
        "cat sessions.sqlite3; ls -A cache; cat cache/guest.cwasm; \
         echo forged > sessions.sqlite3; echo forged >> sessions.sqlite3; : > sessions.sqlite3; \
         echo forged > cache/guest.cwasm; touch cache/new; rm -f sessions.sqlite3; rm -rf cache; \
         mv sessions.sqlite3 moved; echo done",
    )
    .await;
    assert_eq!(v["confined"], true, "{v}");
    let out = stdout(&v);
    assert_eq!(out, "done\n", "a hidden path showed content: {v}");
    assert!(v["confinement"].as_str().unwrap().contains("protected path"), "{v}");
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "SECRET-STORE-CONTENT");
    assert_eq!(std::fs::read_to_string(cache.join("guest.cwasm")).unwrap(), "SECRET-CACHE-CONTENT");
    assert!(!cache.join("new").exists() && !root.path().join("moved").exists());
    // Ordinary files next to them are readable and writable.
    std::fs::write(root.path().join("plain.txt"), "plain").unwrap();
    let v = bash(&mut r, "cat plain.txt && echo more >> plain.txt").await;
    assert_eq!(stdout(&v), "plain");
    assert_eq!(std::fs::read_to_string(root.path().join("plain.txt")).unwrap(), "plainmore\n");

    let mut r = repl(root.path(), OFF, std::slice::from_ref(&store)).await;
    let v = bash(&mut r, "cat sessions.sqlite3").await;
    assert_eq!(stdout(&v), "SECRET-STORE-CONTENT", "without confinement the store is readable: {v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_environment_is_out_of_sight() {
    // /proc/<pid>/environ shows a process's initial environment: the test
    // process's variables that commands do not get (cargo's CARGO_*, ...;
    // the CLI tests below pass a secret of their own).
    let initial = std::fs::read("/proc/self/environ").unwrap();
    let shell_sets = ["SHLVL", "PWD", "OLDPWD", "_"];
    let host_only: Vec<String> = initial
        .split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .filter(|kv| kv.split_once('=').is_some_and(|(k, v)| !v.is_empty() && !shell_sets.contains(&k)))
        .filter(|kv| !wrepl::confinement::MINIMAL_ENV.iter().any(|m| kv.starts_with(&format!("{m}="))))
        .map(str::to_string)
        .collect();
    assert!(!host_only.is_empty(), "the test process has variables of its own");
    let root = tempdir();
    let cmd = "cat /proc/$PPID/environ; cat /proc/1/environ; echo; env; \
               for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null; echo; \
               ls -d /proc/[0-9]* | wc -l";
    let mut r = repl(root.path(), REQUIRE, &[]).await;
    let v = bash(&mut r, cmd).await;
    assert_eq!(v["confined"], true, "{v}");
    let all = format!("{}{}", stdout(&v), v["stderr"].as_str().unwrap()).replace('\0', "\n");
    for kv in &host_only {
        assert!(!all.lines().any(|l| l == kv), "the host's {kv:?} leaked: {all}");
    }
    // Only the command's own processes are in its /proc.
    let count: u32 = stdout(&v).lines().last().unwrap().trim().parse().unwrap();
    assert!(count <= 4, "{count} processes visible: {v}");

    // Without confinement, wrepl's (here: the test process's) environment
    // is right there.
    let mut r = repl(root.path(), OFF, &[]).await;
    let v = bash(&mut r, &format!("cat /proc/{}/environ", std::process::id())).await;
    let seen = stdout(&v).replace('\0', "\n");
    assert!(host_only.iter().all(|kv| seen.lines().any(|l| l == kv)), "{v}");
}

/// Waits (generously) until none of `pids` is alive.
async fn all_gone(pids: &[u32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    !pids.iter().any(|p| alive(*p))
}

/// A `sleep` duration no other process uses.
fn marker(tag: u32) -> String {
    format!("1000.{}{tag:03}", std::process::id())
}

#[tokio::test(flavor = "multi_thread")]
async fn background_children_die_with_the_call() {
    let root = tempdir();
    let m = marker(1);
    // setsid, nohup and a double fork, each checked alive before the
    // command ends.
    let cmd = format!(
        "setsid sleep {m} & echo $! > pid; nohup sleep {m} >/dev/null 2>&1 & (sleep {m} &) ; \
         sleep 0.3; kill -0 $(cat pid) && echo alive; ps -e -o pid= 2>/dev/null | wc -l"
    );
    let mut r = repl(root.path(), REQUIRE, &[]).await;
    let started = Instant::now();
    let v = bash(&mut r, &cmd).await;
    assert_eq!(v["confined"], true, "{v}");
    assert!(stdout(&v).starts_with("alive\n"), "{v}");
    assert!(started.elapsed() < Duration::from_secs(10), "the call waited for its children");
    let pid_in_ns: u32 = std::fs::read_to_string(root.path().join("pid")).unwrap().trim().parse().unwrap();
    assert!(pid_in_ns < 100, "a pid of the command's own namespace, got {pid_in_ns}");
    // The kernel killed the namespace when its init (the shell) exited.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pids_with(&m).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(pids_with(&m), Vec::<u32>::new(), "background children outlived the call");

    // Without confinement the setsid child survives the call (and is
    // cleaned up here).
    let m = marker(2);
    let mut r = repl(root.path(), OFF, &[]).await;
    let v = bash(&mut r, &format!("setsid sleep {m} >/dev/null 2>&1 & sleep 0.2")).await;
    assert_eq!(v["exitCode"], 0, "{v}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let survivors = pids_with(&m);
    assert_eq!(survivors.len(), 1, "the unconfined setsid child runs on: {survivors:?}");
    for pid in survivors {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn network_is_loopback_only_unless_allowed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = tempdir();
    let connect = format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo connected");
    let mut r = repl(root.path(), REQUIRE, &[]).await;
    let v = bash(&mut r, &connect).await;
    assert_eq!(v["confined"], true, "{v}");
    assert_ne!(v["exitCode"], 0, "{v}");
    assert!(!stdout(&v).contains("connected"), "{v}");
    assert!(v["confinement"].as_str().unwrap().contains("no network"), "{v}");
    assert!(listener.accept().is_err(), "nothing reached the host's listener");
    // Its own loopback is up: nothing listens there, so the connection is
    // refused (not "network is unreachable").
    let v = bash(&mut r, &format!("echo > /dev/tcp/127.0.0.1/{port}")).await;
    assert!(v["stderr"].as_str().unwrap().contains("Connection refused"), "{v}");

    let mut r = repl(root.path(), r#"{"confine": "require", "allowNet": true}"#, &[]).await;
    let v = bash(&mut r, &connect).await;
    assert_eq!(v["confined"], true, "{v}");
    assert_eq!(stdout(&v), "connected\n", "{v}");
    assert!(v["confinement"].as_str().unwrap().contains("host network (allowNet)"), "{v}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = String::new();
    loop {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false).unwrap();
                s.read_to_string(&mut got).unwrap();
                break;
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("no connection arrived: {e}"),
        }
    }
    assert_eq!(got, "hello\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_run_in_the_project_dir_without_secrets() {
    set_secret();
    let root = tempdir();
    std::fs::create_dir(root.path().join("sub")).unwrap();
    let project = root.path().canonicalize().unwrap();
    let settings = json!({
        "confine": "require",
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "pwd > \"$WREPL_PROJECT_DIR/hook-pwd\"; env > \"$WREPL_PROJECT_DIR/hook-env\"; cat > hook-in"}]}]}
    });
    let mut r = repl(root.path(), &settings.to_string(), &[]).await;
    let res = ev(&mut r, "await chdir('sub'); (await Bash({command: 'pwd'})).stdout").await;
    assert_eq!(ok(&res), json!(format!("{}/sub\n", project.display())));
    assert_eq!(std::fs::read_to_string(project.join("hook-pwd")).unwrap().trim(), project.to_str().unwrap());
    assert!(!project.join("sub/hook-in").exists() && project.join("hook-in").exists());
    let input: Value = serde_json::from_str(&std::fs::read_to_string(project.join("hook-in")).unwrap()).unwrap();
    assert_eq!(input["cwd"], json!(project.join("sub")), "the hook input still names the call's cwd");
    let env = std::fs::read_to_string(project.join("hook-env")).unwrap();
    assert!(!env.contains(SECRET_VALUE), "a hook inherited the host's secret: {env}");
    assert!(env.lines().any(|l| l == format!("WREPL_PROJECT_DIR={}", project.display())), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
}

// ---------------------------------------------------------------------------
// The CLI, as root and as an unprivileged user

/// A user that is not root, and the file modes that let it work.
const NOBODY: u32 = 65534;

struct CliEnv {
    /// The workspace root (writable by the user).
    root: tempfile::TempDir,
    /// A directory the user could write without confinement.
    outside: tempfile::TempDir,
    /// HOME and the compile cache.
    home: tempfile::TempDir,
    unprivileged: bool,
}

impl CliEnv {
    fn new(unprivileged: bool) -> Self {
        let env = CliEnv { root: tempdir(), outside: tempdir(), home: tempdir(), unprivileged };
        for d in [env.root.path(), env.outside.path(), env.home.path()] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
            if unprivileged {
                std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
            }
        }
        env
    }

    /// `wrepl <args>` (under setpriv when unprivileged) with only a few
    /// variables and the secret.
    fn command(&self, args: &[&str]) -> Command {
        let bin = env!("CARGO_BIN_EXE_wrepl");
        let mut c = if self.unprivileged {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(unprivileged_bin());
            c
        } else {
            Command::new(bin)
        };
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("WREPL_CACHE_DIR", self.home.path().join("cache"))
            .env(SECRET_NAME, SECRET_VALUE)
            .current_dir(self.root.path())
            .stdin(Stdio::null());
        c
    }

    /// Evaluates `code` with Bash allowed under `--confine <mode>`; the
    /// first snippet's JSON line.
    fn eval(&self, mode: &str, code: &str) -> Value {
        let root = self.root.path().to_str().unwrap();
        let out = self
            .command(&["eval", "--json", "--root", root, "--allow", "Bash", "--confine", mode, "-e", code])
            .output()
            .expect("run wrepl");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().next().unwrap_or_else(|| {
            panic!("no output; stderr: {}", String::from_utf8_lossy(&out.stderr));
        });
        serde_json::from_str(line).expect("a JSON line")
    }
}

fn cli_effects(unprivileged: bool) {
    let env = CliEnv::new(unprivileged);
    let escaped = env.outside.path().join("escaped");
    let command = format!(
        "id -u; touch inside; touch '{e}'; echo rc=$?; cat /proc/$PPID/environ /proc/1/environ; echo; \
         ls -d /proc/[0-9]* | wc -l",
        e = escaped.display()
    );
    let code = format!("await Bash({{command: {}}})", json!(command));
    let v = env.eval("require", &code);
    let result = &v["result"];
    assert!(v["error"].is_null(), "{v}");
    assert_eq!(result["confined"], true, "{v}");
    let out = result["stdout"].as_str().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], if unprivileged { "65534" } else { "0" }, "{v}");
    assert!(lines[1].starts_with("rc=") && lines[1] != "rc=0", "{v}");
    assert!(!escaped.exists(), "the command wrote outside the root");
    assert!(env.root.path().join("inside").exists(), "{v}");
    assert!(!v.to_string().contains(SECRET_VALUE), "the host's environment leaked: {v}");
    let count: u32 = lines.last().unwrap().trim().parse().unwrap();
    assert!(count <= 4, "{v}");

    let v = env.eval("off", &code);
    assert_eq!(v["result"]["confined"], false, "{v}");
    assert!(escaped.exists(), "without confinement the write outside the root happens: {v}");
    if !unprivileged {
        // Root reads any process's environment; an unprivileged user cannot
        // read wrepl's, which is not dumpable.
        assert!(v.to_string().contains(SECRET_VALUE), "{v}");
    } else {
        assert!(!v.to_string().contains(SECRET_VALUE), "{v}");
    }
}

#[test]
fn cli_confines_as_root() {
    cli_effects(false);
}

#[test]
fn cli_confines_an_unprivileged_user_through_a_user_namespace() {
    cli_effects(true);
}

/// Starts `wrepl eval` running a command that starts a `setsid` child and
/// waits; returns the CLI and the host pids of the child and the shell.
fn start_long_command(env: &CliEnv, m: &str) -> (Child, Vec<u32>) {
    let root = env.root.path().to_str().unwrap().to_string();
    let command = format!("setsid sleep {m} & sleep {m}");
    let code = format!("await Bash({{command: {}, timeout: 600000}})", json!(command));
    let child = env
        .command(&["eval", "--root", &root, "--allow", "Bash", "--confine", "require", "-e", &code])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(env.home.path().join("long-command.stderr")).expect("a file for wrepl's stderr"))
        .spawn()
        .expect("start wrepl");
    let deadline = Instant::now() + Duration::from_secs(60);
    while pids_with(m).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
    }
    let pids = pids_with(m);
    (child, pids)
}

fn survives_no_host_sigkill(unprivileged: bool, tag: u32) {
    let env = CliEnv::new(unprivileged);
    let m = marker(tag);
    let (mut cli, pids) = start_long_command(&env, &m);
    let stderr = || std::fs::read_to_string(env.home.path().join("long-command.stderr")).unwrap_or_default();
    assert_eq!(pids.len(), 2, "the command and its setsid child run: {pids:?}; wrepl's stderr: {}", stderr());
    cli.kill().unwrap(); // SIGKILL
    cli.wait().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(rt.block_on(all_gone(&pids)), "{:?} outlived the SIGKILLed host; its stderr: {}", pids_with(&m), stderr());
}

#[test]
fn a_sigkilled_host_takes_its_commands_along() {
    survives_no_host_sigkill(false, 10);
}

#[test]
fn a_sigkilled_unprivileged_host_takes_its_commands_along() {
    survives_no_host_sigkill(true, 11);
}

#[test]
fn doctor_reports_what_is_in_force() {
    let env = CliEnv::new(false);
    let out = env.command(&["doctor"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "landlock: ABI ",
        "user namespace: not needed (running as root)",
        "mount namespace: yes",
        "pid namespace: yes",
        "/proc remount: yes",
        "protected paths hidden: yes",
        "network namespace: yes",
        "no_new_privs: set on every confined command",
        "dumpable: no",
        "confine: prefer — Bash commands run fully confined",
        "network for commands: none",
        &format!("compile cache: {}", env.home.path().join("cache").display()),
        "session store: ",
    ] {
        assert!(text.lines().any(|l| l.starts_with(want)), "no line {want:?} in:\n{text}");
    }
    assert!(!text.contains(": NO"), "{text}");

    let out = env.command(&["doctor", "--json", "--confine", "require", "--allow-net"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["confine"], "require");
    assert_eq!(v["allow_net"], true);
    assert_eq!(v["dumpable"], false);
    assert!(v["landlock_abi"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["features"]["pid-namespace"]["available"], true, "{v}");

    // As nobody, through a user namespace.
    let env = CliEnv::new(true);
    let out = env.command(&["doctor"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("user namespace: yes"), "{text}");
    assert!(!text.contains(": NO"), "{text}");

    let out = env.command(&["doctor", "--confine", "sometimes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"require\", \"prefer\" or \"off\""));
}

/// The `wrepl` binary at a path user 65534 can execute: the build's own when
/// every directory above it is searchable by others (a checkout under a 0700
/// home is not), else a copy in a fresh 0755 directory under the temp dir.
fn unprivileged_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_wrepl"));
        let searchable =
            bin.ancestors().skip(1).all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
        if searchable {
            return bin;
        }
        let dir = std::env::temp_dir().join(format!("wrepl-confine-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the binary's directory");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
        let copy = dir.join("wrepl");
        // `install`, a process of its own, writes the copy: a descriptor open
        // for writing in this (multi-threaded) process would be inherited by
        // whatever another test forks meanwhile, and executing the copy
        // would then fail with ETXTBSY until that child execs.
        let status = Command::new("install")
            .args(["-m", "0755"])
            .arg(&bin)
            .arg(&copy)
            .status()
            .expect("run install(1) to copy the wrepl binary");
        assert!(status.success(), "install(1) could not copy the wrepl binary: {status}");
        copy
    })
    .clone()
}
