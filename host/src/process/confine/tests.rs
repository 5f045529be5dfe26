//! Unit tests of the confinement: modes, the probe's bookkeeping, the
//! decisions, the per-call directory, and confined commands on this machine.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use tokio::process::Command;

use super::launch::{decide, spawn, Applied, ConfineError, Decision, Request, Spawned};
use super::policy::{wanted, ConfineMode, Confinement, Feature};
use super::probe::{base_probe, probe, Probe};
use super::scratch::{pid_namespace, Scratch, SCRATCH_PREFIX};
use crate::process::EnvPolicy;

#[test]
fn modes_parse_exactly() {
    for (name, mode) in ConfineMode::ALL {
        assert_eq!(name.parse::<ConfineMode>(), Ok(mode));
        assert_eq!(mode.to_string(), name);
    }
    assert_eq!(ConfineMode::default(), ConfineMode::Prefer);
    for bad in ["", "Require", "on", "prefer ", "true"] {
        let e = bad.parse::<ConfineMode>().unwrap_err().to_string();
        assert!(e.contains("\"require\", \"prefer\" or \"off\"") && e.contains(&format!("{bad:?}")), "{e}");
    }
}

fn probe_with(missing: &[(Feature, &str)]) -> Probe {
    Probe {
        landlock_abi: 7,
        root: false,
        user_namespace: true,
        user_namespace_error: None,
        missing: missing.iter().map(|(f, w)| (*f, w.to_string())).collect(),
    }
}

#[test]
fn dropping_a_feature_drops_what_needs_it() {
    let mut p = probe_with(&[]);
    p.drop_feature(Feature::MountNamespace, "EPERM".into());
    assert!(!p.available(Feature::MountNamespace) && !p.available(Feature::ProcMount));
    assert!(!p.available(Feature::HiddenPaths));
    assert!(p.available(Feature::PidNamespace) && p.available(Feature::Landlock));
    assert_eq!(p.missing[&Feature::ProcMount], "needs the mount namespace");
    assert!(!p.nothing_works());
    p.drop_all("gone");
    assert!(p.nothing_works());
    assert_eq!(p.missing[&Feature::MountNamespace], "EPERM", "the first reason stays");
}

#[test]
fn wanted_features_follow_the_network_choice() {
    assert_eq!(wanted(false), Feature::ALL.to_vec());
    let w = wanted(true);
    assert!(!w.contains(&Feature::NetNamespace) && !w.contains(&Feature::Loopback));
    assert!(w.contains(&Feature::Landlock) && w.contains(&Feature::PidNamespace));
    let p = probe_with(&[(Feature::NetNamespace, "no"), (Feature::Loopback, "needs")]);
    assert!(p.missing_of(&wanted(true)).is_empty());
    assert_eq!(p.missing_of(&wanted(false)).len(), 2);
}

#[test]
fn probe_lines_say_what_is_in_force() {
    let p = probe_with(&[]);
    let lines = p.lines();
    assert_eq!(lines.len(), 7, "{lines:#?}");
    assert!(lines[0].starts_with("landlock: ABI 7 ("), "{}", lines[0]);
    assert_eq!(lines[1], "user namespace: yes (own uid and gid mapped to themselves)");
    assert_eq!(lines[2], "mount namespace: yes");
    assert!(lines[6].starts_with("network namespace: yes (loopback only"), "{}", lines[6]);

    let mut p = probe_with(&[]);
    p.root = true;
    p.user_namespace = false;
    p.drop_feature(Feature::PidNamespace, "creating a PID namespace failed: EPERM".into());
    let lines = p.lines();
    assert_eq!(lines[1], "user namespace: not needed (running as root)");
    assert_eq!(
        lines[3],
        "pid namespace: NO — creating a PID namespace failed: EPERM; processes a command starts (setsid, nohup) \
         can outlive it"
    );
    assert!(lines[4].starts_with("/proc remount: NO — needs the PID namespace;"), "{}", lines[4]);
    assert_eq!(lines[5], "protected paths hidden: yes");

    let mut p = base_probe();
    p.drop_all("nothing");
    assert!(p.lines().iter().skip(2).all(|l| l.contains(": NO — nothing;")), "{:#?}", p.lines());
}

#[test]
fn decisions_follow_the_mode() {
    let prefer = Confinement { mode: ConfineMode::Prefer, allow_net: false };
    let require = Confinement { mode: ConfineMode::Require, allow_net: false };
    let off = Confinement { mode: ConfineMode::Off, allow_net: false };
    let full = probe_with(&[]);
    assert_eq!(decide(Some(&full), prefer), Decision::Confine { missing: vec![] });
    assert_eq!(decide(Some(&full), require), Decision::Confine { missing: vec![] });
    assert_eq!(decide(Some(&full), off), Decision::Plain { missing: vec![] });
    assert_eq!(decide(None, off), Decision::Plain { missing: vec![] });

    let mut no_pid = probe_with(&[]);
    no_pid.drop_feature(Feature::PidNamespace, "creating a PID namespace failed: EPERM".into());
    assert_eq!(
        decide(Some(&no_pid), prefer),
        Decision::Confine { missing: vec![Feature::PidNamespace, Feature::ProcMount] }
    );
    let Decision::Refuse(why) = decide(Some(&no_pid), require) else { panic!("require must refuse") };
    assert_eq!(
        why,
        "no PID namespace (creating a PID namespace failed: EPERM); no fresh /proc (needs the PID namespace)"
    );
    assert_eq!(decide(Some(&no_pid), off), Decision::Plain { missing: vec![] });

    // A missing network namespace does not matter with allowNet.
    let mut no_net = probe_with(&[]);
    no_net.drop_feature(Feature::NetNamespace, "EPERM".into());
    assert_eq!(
        decide(Some(&no_net), Confinement { allow_net: true, ..require }),
        Decision::Confine { missing: vec![] }
    );
    assert!(matches!(decide(Some(&no_net), require), Decision::Refuse(_)));

    let mut nothing = probe_with(&[]);
    nothing.drop_all("no spawner");
    assert_eq!(decide(Some(&nothing), prefer), Decision::Plain { missing: wanted(false) });
    assert!(matches!(decide(Some(&nothing), require), Decision::Refuse(_)));
}

#[test]
fn applied_descriptions() {
    let mut a = Applied { mode: ConfineMode::Prefer, allow_net: false, missing: vec![], landlock_abi: 7, hidden: 2 };
    assert!(a.fully_confined());
    assert_eq!(
        a.describe(),
        "confined: Landlock ABI 7 (writes only in the workspace roots and $TMPDIR), own mount/PID/network \
         namespaces, fresh /proc, 2 protected paths hidden, no network, no_new_privs"
    );
    a.allow_net = true;
    assert!(a.describe().contains("own mount/PID namespaces") && a.describe().contains("host network (allowNet)"));
    a.missing = vec![Feature::Landlock];
    assert!(!a.fully_confined());
    assert!(a.describe().starts_with("partly confined (missing: Landlock): own mount/PID"), "{}", a.describe());
    a.missing = Feature::ALL.to_vec();
    assert!(a.describe().starts_with("not confined:"), "{}", a.describe());
    a.mode = ConfineMode::Off;
    assert_eq!(a.describe(), "not confined (confine: off)");
    assert!(!a.fully_confined());
}

#[test]
fn stale_scratch_dirs_of_dead_processes_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let ns = pid_namespace();
    assert_ne!(ns, 0);
    // A pid that is certainly gone: a child that was reaped.
    let mut child = std::process::Command::new("/bin/true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let make = |name: String| {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.join("hide/dir")).unwrap();
        std::fs::write(p.join("hide/file"), b"").unwrap();
        std::fs::set_permissions(p.join("hide"), std::fs::Permissions::from_mode(0o500)).unwrap();
        p
    };
    let stale = make(format!("{SCRATCH_PREFIX}{ns}-{dead}-aa"));
    let mine = make(format!("{SCRATCH_PREFIX}{ns}-{}-bb", std::process::id()));
    let other_ns = make(format!("{SCRATCH_PREFIX}{}-{dead}-cc", ns + 1));
    let unrelated = make(format!("other-{ns}-{dead}"));
    let link = dir.path().join(format!("{SCRATCH_PREFIX}{ns}-{dead}-dd"));
    std::os::unix::fs::symlink(&unrelated, &link).unwrap();
    Scratch::sweep(dir.path());
    assert!(!stale.exists(), "the dead process's directory is removed");
    assert!(mine.exists() && other_ns.exists() && unrelated.join("hide/file").exists());
    assert!(link.symlink_metadata().is_ok(), "a symlink is not followed or removed");
}

#[test]
fn scratch_is_laid_out_and_removed() {
    let s = Scratch::create().unwrap();
    let base = s.base.clone();
    assert!(s.tmp().is_dir() && s.empty_dir().is_dir());
    assert_eq!(std::fs::read(s.empty_file()).unwrap(), b"");
    assert!(base.starts_with(std::env::temp_dir()));
    std::fs::write(s.tmp().join("left"), b"x").unwrap();
    drop(s);
    assert!(!base.exists());
}

#[tokio::test]
async fn a_program_that_cannot_start_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let request = |mode| Request {
        confinement: Confinement { mode, allow_net: false },
        writable: vec![dir.path().to_path_buf()],
        protected: Vec::new(),
    };
    for mode in [ConfineMode::Require, ConfineMode::Off] {
        let mut cmd = Command::new("/nonexistent/program");
        cmd.current_dir(dir.path()).stdin(Stdio::null());
        let e = spawn(cmd, EnvPolicy::only(&[]), request(mode)).await.unwrap_err();
        assert!(matches!(&e, ConfineError::Spawn(io) if io.kind() == io::ErrorKind::NotFound), "{mode}: {e:?}");
    }
    let mut cmd = Command::new("relative-program");
    cmd.current_dir(dir.path());
    let e = spawn(cmd, EnvPolicy::only(&[]), request(ConfineMode::Require)).await.unwrap_err();
    assert!(e.to_string().contains("not an absolute path"), "{e}");
}

#[tokio::test]
async fn the_init_gets_the_resolved_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("/usr/bin/env");
    cmd.current_dir(dir.path()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let env = EnvPolicy::only(&["PATH", "HOME"]).set("HOME", "/nowhere").set("A", "1");
    let request = Request {
        confinement: Confinement { mode: ConfineMode::Require, allow_net: false },
        writable: vec![dir.path().to_path_buf()],
        protected: Vec::new(),
    };
    let Spawned { mut group, applied } = spawn(cmd, env, request).await.unwrap();
    assert!(applied.fully_confined(), "{applied:?}");
    let out = crate::process::read_capped(group.child_mut().stdout.take().unwrap(), 1 << 16).await;
    assert!(group.wait().await.unwrap().success());
    let text = String::from_utf8(out.bytes).unwrap();
    let mut names: Vec<&str> = text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    names.sort_unstable();
    let mut want = vec!["A", "HOME", "TMPDIR"];
    if std::env::var_os("PATH").is_some() {
        want.push("PATH");
    }
    want.sort_unstable();
    assert_eq!(names, want, "{text}");
    assert!(text.lines().any(|l| l == "HOME=/nowhere"), "{text}");
}

#[test]
fn this_machine_confines_fully() {
    // The machine and CI run Linux 6.18 with Landlock ABI 7 and every
    // namespace: all of it must work (a missing component fails).
    let p = probe();
    assert!(p.missing.is_empty(), "{:#?}", p.lines());
    assert!(p.landlock_abi >= 1);
    assert!(std::ptr::eq(p, probe()), "cached");
}
