//! The child's plan for a request ([`sys::Plan`]): what the init execs, the
//! namespaces, the bind mounts that hide protected paths (and the pins that
//! keep their directories in place), and the Landlock ruleset.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::super::sys::{self, Exec, Hide, IdMaps, Plan};
use super::landlock::ruleset;
use super::launch::{ConfineError, Request};
use super::policy::Feature;
use super::probe::Probe;
use super::scratch::Scratch;

/// Absolute paths only, as C strings; `None` for a path with a NUL byte
/// (which cannot exist).
fn c_path(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// What the init of `cmd` execs: its program (an absolute path) and
/// arguments, with the environment `env`.
pub(super) fn exec_of(cmd: &std::process::Command, env: Vec<(OsString, OsString)>) -> Result<Exec, ConfineError> {
    let nul = |what: &str| ConfineError::Prepare(format!("the command's {what} contains a NUL byte"));
    let program = Path::new(cmd.get_program());
    if !program.is_absolute() {
        return Err(ConfineError::Prepare(format!("{} is not an absolute path", program.display())));
    }
    let path = c_path(program).ok_or_else(|| nul("program"))?;
    let args = cmd
        .get_args()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| nul("arguments")))
        .collect::<Result<Vec<_>, _>>()?;
    let env = env
        .into_iter()
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.as_bytes());
            CString::new(kv).map_err(|_| nul("environment"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Exec::new(path, args, env))
}

/// The child's plan for a request, with what `probe` allows, and the read
/// end of its report pipe.
pub(super) fn plan(
    probe: &Probe,
    request: &Request,
    scratch: &Scratch,
    exec: Exec,
) -> Result<(Plan, io::PipeReader), ConfineError> {
    let prepare = |what: &str, e: io::Error| ConfineError::Prepare(format!("{what}: {e}"));
    let has = |f: Feature| probe.available(f);
    let allow_net = request.confinement.allow_net;
    let (reader, writer) = io::pipe().map_err(|e| prepare("report pipe", e))?;
    let id_maps = probe.user_namespace.then(|| IdMaps {
        uid_map: format!("{0} {0} 1\n", sys::euid()).into_bytes(),
        gid_map: format!("{0} {0} 1\n", sys::egid()).into_bytes(),
    });
    let hides =
        if has(Feature::HiddenPaths) { hides(&request.protected, &request.writable, scratch)? } else { Vec::new() };
    let landlock = if has(Feature::Landlock) {
        let mut writable = request.writable.clone();
        writable.push(scratch.tmp());
        ruleset(&writable)?
    } else {
        None
    };
    let plan = Plan {
        host_pid: libc::pid_t::try_from(std::process::id()).unwrap_or(0),
        id_maps,
        mount_ns: has(Feature::MountNamespace),
        pid_ns: has(Feature::PidNamespace),
        exec: Some(exec),
        net_ns: !allow_net && has(Feature::NetNamespace),
        proc: has(Feature::ProcMount),
        hides,
        loopback: !allow_net && has(Feature::Loopback),
        landlock,
        report: OwnedFd::from(writer),
    };
    Ok((plan, reader))
}

/// The bind mounts that hide the protected paths that exist now: an empty
/// directory over a directory, an empty file over anything else. Deepest
/// first, so a directory bound later hides what was bound beneath it.
///
/// Before them come the pins: every directory strictly between a writable
/// root and a hidden path is bound onto itself (shallowest first, so a pin
/// never drops a bind beneath it). A mount point cannot be renamed or
/// removed, so a command cannot move a protected file's directory aside
/// (`mv state st2`) and read the file under a path nobody hides.
fn hides(protected: &[PathBuf], writable: &[PathBuf], scratch: &Scratch) -> Result<Vec<Hide>, ConfineError> {
    let prepare = |what: &str, e: io::Error| ConfineError::Prepare(format!("{what}: {e}"));
    let (Some(file), Some(dir)) = (c_path(&scratch.empty_file()), c_path(&scratch.empty_dir())) else {
        return Err(ConfineError::Prepare("the temp dir's path contains a NUL byte".into()));
    };
    let file_flags = sys::mount_flags(&file).map_err(|e| prepare("statfs of the temp dir", e))?;
    let dir_flags = sys::mount_flags(&dir).map_err(|e| prepare("statfs of the temp dir", e))?;
    let mut targets: Vec<(&PathBuf, bool)> = protected
        .iter()
        .filter(|p| p.is_absolute())
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| (p, m.is_dir())))
        .collect();
    targets.sort_by(|a, b| b.0.components().count().cmp(&a.0.components().count()).then(a.0.cmp(b.0)));
    targets.dedup_by(|a, b| a.0 == b.0);
    let mut pins: Vec<&Path> = targets
        .iter()
        .flat_map(|(p, _)| p.ancestors().skip(1))
        .filter(|a| writable.iter().any(|root| a.starts_with(root) && a != root))
        .collect();
    pins.sort_by(|a, b| a.components().count().cmp(&b.components().count()).then(a.cmp(b)));
    pins.dedup();
    let pins = pins.into_iter().filter_map(|a| {
        let target = c_path(a)?;
        Some(Hide { source: target.clone(), target, flags: 0, read_only: false })
    });
    let hidden = targets.into_iter().filter_map(|(p, is_dir)| {
        let target = c_path(p)?;
        let (source, flags) = if is_dir { (dir.clone(), dir_flags) } else { (file.clone(), file_flags) };
        Some(Hide { source, target, flags, read_only: true })
    });
    Ok(pins.chain(hidden).collect())
}
