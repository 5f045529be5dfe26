//! The per-call directory of a confined command ([`Scratch`]): its `TMPDIR`
//! and the empty file and directory bound over protected paths.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Once;

use super::super::sys;

/// The per-call directory, under the host's temp dir: `tmp/` (the command's
/// `TMPDIR`, writable) and `hide/` (the empty file and directory bound over
/// protected paths, read-only). Removed on drop.
///
/// Its name, `wrepl-bash-<pid namespace>-<pid>-<random>`, says which wrepl
/// made it: the directories a SIGKILLed wrepl left behind are removed by the
/// next wrepl of the same user and PID namespace ([`Scratch::sweep`]).
#[derive(Debug)]
pub(crate) struct Scratch {
    pub(super) base: PathBuf,
}

/// Name prefix of the per-call directories.
pub(super) const SCRATCH_PREFIX: &str = "wrepl-bash-";

/// The inode of our PID namespace (0 when unknown).
pub(super) fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map(|m| m.ino()).unwrap_or(0)
}

impl Scratch {
    pub(super) fn create() -> io::Result<Scratch> {
        static SWEPT: Once = Once::new();
        SWEPT.call_once(|| Scratch::sweep(&std::env::temp_dir()));
        let mut id = [0u8; 12];
        getrandom::fill(&mut id).map_err(|e| io::Error::other(format!("no randomness for a temp dir name: {e}")))?;
        let name: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let base =
            std::env::temp_dir().join(format!("{SCRATCH_PREFIX}{}-{}-{name}", pid_namespace(), std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&base)?;
        let scratch = Scratch { base };
        let hide = scratch.base.join("hide");
        std::fs::DirBuilder::new().mode(0o700).create(scratch.tmp())?;
        std::fs::DirBuilder::new().mode(0o700).create(&hide)?;
        std::fs::DirBuilder::new().mode(0o500).create(scratch.empty_dir())?;
        std::fs::write(scratch.empty_file(), b"")?;
        std::fs::set_permissions(scratch.empty_file(), std::fs::Permissions::from_mode(0o400))?;
        std::fs::set_permissions(&hide, std::fs::Permissions::from_mode(0o500))?;
        Ok(scratch)
    }

    /// Removes the per-call directories under `dir` that a wrepl of this
    /// user and PID namespace which no longer runs left behind (it was
    /// killed). Anything else — other users', other namespaces', live
    /// processes', symlinks — is left alone.
    pub(super) fn sweep(dir: &Path) {
        use std::os::unix::fs::MetadataExt;
        let ns = pid_namespace();
        if ns == 0 {
            return;
        }
        let prefix = format!("{SCRATCH_PREFIX}{ns}-");
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
            let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
            if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let path = entry.path();
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() && m.uid() == sys::euid() => drop(Scratch { base: path }),
                _ => {}
            }
        }
    }

    /// The command's `TMPDIR`.
    pub(crate) fn tmp(&self) -> PathBuf {
        self.base.join("tmp")
    }

    pub(super) fn empty_file(&self) -> PathBuf {
        self.base.join("hide").join("file")
    }

    pub(super) fn empty_dir(&self) -> PathBuf {
        self.base.join("hide").join("dir")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(self.base.join("hide"), std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::set_permissions(self.empty_dir(), std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
