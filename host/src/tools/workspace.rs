//! The granted workspace roots. File tools only ever touch the filesystem
//! through the cap-std `Dir` of a root, so `..`, absolute paths and symlinks
//! that lead outside a root are refused by construction.

use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt};

use super::ToolError;

/// Decides whether a path may be read: `true` when it may, `false` when it
/// must stay hidden (no contents, no name). The workspace consults it while
/// Glob and Grep walk and when Read opens a file; it is built from policy
/// (the `Read` deny rules) by whoever builds the workspace: tools know no
/// policy. It is called with absolute, normalized paths.
pub type PathFilter = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// Longest path a file tool accepts, in bytes: Linux's `PATH_MAX`. A longer
/// path cannot be opened, and refusing it up front keeps the per-directory
/// checks of [`Workspace::resolve`] from growing with a hostile path's depth.
pub const MAX_PATH_BYTES: usize = 4096;

/// A child name used to ask a [`PathFilter`] whether a directory's contents
/// are hidden (so `dir/**` prunes `dir` itself).
pub const PROBE_CHILD: &str = "__wrepl_search_probe__";

#[derive(Clone)]
struct Root {
    path: PathBuf,
    dir: Arc<Dir>,
    /// The root lies on a local file system of a known kind (ext4, XFS,
    /// Btrfs, tmpfs, overlayfs, F2FS): one whose opens and small reads do
    /// not wait on a network or a user-space server (NFS, FUSE, 9p). Only
    /// then may a tool open a file on an async worker thread
    /// ([`Workspace::open_local`]).
    local: bool,
    /// The root directory's identity (device, inode), read once: the open
    /// directory it names cannot change.
    id: Option<(u64, u64)>,
}

impl Root {
    /// The identity of `prefix` (relative to the root; empty: the root).
    fn id_of(&self, prefix: &Path) -> Option<(u64, u64)> {
        if prefix.as_os_str().is_empty() {
            return self.id;
        }
        self.dir.metadata(prefix).ok().map(|m| (m.dev(), m.ino()))
    }
}

/// Whether `dir` is on a local file system of a known kind (see `Root::local`).
fn on_local_fs(dir: &Dir) -> bool {
    // statfs(2) f_type magic numbers (linux/magic.h).
    const LOCAL: [i64; 6] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // XFS
        0x9123_683E, // Btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs
        0xF2F5_2010, // F2FS
    ];
    rustix::fs::fstatfs(dir).is_ok_and(|s| LOCAL.contains(&{ s.f_type }))
}

/// The directories scripts may work in, and what inside them file tools may
/// never touch (wrepl's own state) or read (a [`PathFilter`]).
///
/// Cheap to clone (the root handles are shared).
#[derive(Clone)]
pub struct Workspace {
    roots: Vec<Root>,
    /// wrepl's own state (compile cache, session store, settings, hook
    /// scripts, MCP config): absolute paths no file tool may touch, even
    /// inside a root. Both the canonical and the lexical form are kept.
    protected: Vec<PathBuf>,
    /// (device, inode) of every protected path that existed when it was
    /// added: a path that reaches one by another name (a case-insensitive
    /// file system, a bind mount) is protected too.
    protected_ids: Vec<(u64, u64)>,
    /// What may be read (`None`: everything).
    read_filter: Option<PathFilter>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("roots", &self.roots.iter().map(|r| &r.path).collect::<Vec<_>>())
            .field("protected", &self.protected)
            .field("read_filter", &self.read_filter.is_some())
            .finish()
    }
}

/// A user path resolved against the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Index of the root that contains it.
    pub root: usize,
    /// Path relative to that root: no `..`, no root, possibly empty (the root itself).
    pub rel: PathBuf,
    /// The absolute host path (for messages and results).
    pub abs: PathBuf,
}

impl Resolved {
    /// The path for messages: relative to its root, and the root named
    /// (`src/a.rs (in the root /work/app)`), as a script can use it again.
    pub fn shown(&self) -> String {
        let root = self.abs.ancestors().nth(self.rel.components().count()).unwrap_or(&self.abs);
        if self.rel.as_os_str().is_empty() {
            format!("the root {}", root.display())
        } else {
            format!("{} (in the root {})", self.rel.display(), root.display())
        }
    }
}

impl Workspace {
    /// Open the given roots (the only use of ambient authority for files).
    /// At least one root is required; each must be an existing directory.
    pub fn new<I, P>(roots: I) -> Result<Self, ToolError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut out = Vec::new();
        for r in roots {
            let r = r.as_ref();
            let path = std::fs::canonicalize(r)
                .map_err(|e| ToolError::NotFound(format!("workspace root {}: {e}", r.display())))?;
            let dir = Dir::open_ambient_dir(&path, ambient_authority())
                .map_err(|e| ToolError::Io(format!("cannot open workspace root {}: {e}", path.display())))?;
            let local = on_local_fs(&dir);
            let id = dir.dir_metadata().ok().map(|m| (m.dev(), m.ino()));
            out.push(Root { path, dir: Arc::new(dir), local, id });
        }
        if out.is_empty() {
            return Err(ToolError::InvalidInput("at least one workspace root is required".into()));
        }
        Ok(Self { roots: out, protected: Vec::new(), protected_ids: Vec::new(), read_filter: None })
    }

    /// Add protected paths (wrepl's own state): file tools refuse them and
    /// everything under them, Glob and Grep never list them. Each path is
    /// kept as given (made absolute, lexically normalized) and, when it
    /// exists, canonicalized as well (for a file not created yet: its
    /// canonical parent joined with its name); the identity (device, inode)
    /// of what exists is recorded too.
    pub fn with_protected(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        for p in paths {
            let forms = protected_forms(&p);
            if let Some(id) = forms.iter().find_map(|f| std::fs::metadata(f).ok()).map(|m| file_id_std(&m)) {
                if !self.protected_ids.contains(&id) {
                    self.protected_ids.push(id);
                }
            }
            for q in forms {
                if !self.protected.contains(&q) {
                    self.protected.push(q);
                }
            }
        }
        self
    }

    /// The protected absolute paths (canonical and lexical forms).
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// Hide what `filter` refuses from Glob, Grep and Read (see
    /// [`PathFilter`]). A second filter is combined with the first (a path
    /// must pass both).
    pub fn with_read_filter(mut self, filter: PathFilter) -> Self {
        self.read_filter = Some(match self.read_filter.take() {
            None => filter,
            Some(first) => Arc::new(move |p: &Path| first(p) && filter(p)),
        });
        self
    }

    /// True when `abs` (absolute, normalized) is a protected path or lies
    /// inside one. A lexical check; [`Workspace::resolve`] also follows
    /// symlinks and compares file identities.
    pub fn is_protected(&self, abs: &Path) -> bool {
        self.protected.iter().any(|p| abs.starts_with(p))
    }

    /// True when the read filter lets `abs` be read (no filter: always).
    pub fn readable(&self, abs: &Path) -> bool {
        self.read_filter.as_ref().is_none_or(|f| f(abs))
    }

    fn guarded(&self) -> bool {
        !self.protected.is_empty() || self.read_filter.is_some()
    }

    /// The roots' absolute paths.
    pub fn roots(&self) -> Vec<&Path> {
        self.roots.iter().map(|r| r.path.as_path()).collect()
    }

    /// The working directory an evaluation starts in: the first root.
    pub fn default_cwd(&self) -> &Path {
        &self.roots[0].path
    }

    /// The capability handle of root `i`.
    pub fn dir(&self, i: usize) -> &Dir {
        &self.roots[i].dir
    }

    /// Which root contains the absolute, normalized path `abs` (longest match).
    fn locate(&self, abs: &Path) -> Option<(usize, PathBuf)> {
        self.roots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| abs.strip_prefix(&r.path).ok().map(|rel| (i, rel.to_path_buf())))
            .max_by_key(|(i, _)| self.roots[*i].path.as_os_str().len())
    }

    /// Resolve `path` (absolute, or relative to `cwd`) to a root and a path
    /// inside it. Refuses paths that leave every root.
    ///
    /// Paths longer than [`MAX_PATH_BYTES`] are refused before any file
    /// system work (no such path can be opened anyway).
    pub fn resolve(&self, cwd: &Path, path: &str) -> Result<Resolved, ToolError> {
        let r = self.resolve_lexical(cwd, path)?;
        self.check_protected(&r)?;
        Ok(r)
    }

    /// [`Workspace::resolve`], and the path permission rules should see
    /// ([`Workspace::real_path`]), found once for both.
    pub fn resolve_with_real(&self, cwd: &Path, path: &str) -> Result<(Resolved, PathBuf), ToolError> {
        let r = self.resolve_lexical(cwd, path)?;
        let (real, opened) = self.real_path_opened(&r);
        self.check_protected_at(&r, &real, opened.as_ref())?;
        Ok((r, real))
    }

    /// The path inside a root that `path` names from `cwd`, by its text
    /// alone (`..` folded, symlinks not followed), without the check against
    /// wrepl's own files: for a tool that checks the file it opens
    /// ([`Workspace::check_opened`]) after the pipeline checked the path.
    pub fn resolve_lexical(&self, cwd: &Path, path: &str) -> Result<Resolved, ToolError> {
        if path.is_empty() {
            return Err(ToolError::InvalidInput("the path is empty".into()));
        }
        if path.contains('\0') {
            return Err(ToolError::InvalidInput("the path contains a NUL byte".into()));
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(ToolError::InvalidInput(format!(
                "the path is {} bytes long; the limit is {MAX_PATH_BYTES} (the kernel's PATH_MAX)",
                path.len()
            )));
        }
        let p = Path::new(path);
        let joined = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
        let abs = normalize(&joined).ok_or_else(|| self.escape(path))?;
        let (root, rel) = self.locate(&abs).ok_or_else(|| self.escape(path))?;
        Ok(Resolved { root, rel, abs })
    }

    /// Refuse a resolved path that is, or lies inside, a protected path: as
    /// written, where it really leads (symlinks inside the root followed),
    /// or by the identity of it or any existing directory above it.
    pub fn check_protected(&self, r: &Resolved) -> Result<(), ToolError> {
        if self.protected.is_empty() {
            return Ok(());
        }
        let (real, opened) = self.real_path_opened(r);
        self.check_protected_at(r, &real, opened.as_ref())
    }

    /// [`Workspace::check_protected`] with the real path already found
    /// (and, when it was opened on the way, the `O_PATH` descriptor of it).
    fn check_protected_at(&self, r: &Resolved, real: &Path, opened: Option<&std::fs::File>) -> Result<(), ToolError> {
        if self.protected.is_empty() {
            return Ok(());
        }
        if self.is_protected(&r.abs) {
            return Err(protected_error(&r.abs));
        }
        if self.is_protected(real) {
            return Err(protected_error(&r.abs));
        }
        // Identities: the real path and each existing directory above it
        // inside the root (the root included).
        let root = &self.roots[r.root];
        if let Ok(rel) = real.strip_prefix(&root.path) {
            for (i, prefix) in rel.ancestors().enumerate() {
                // The path itself, when it was opened on the way: its
                // descriptor's identity (no second walk).
                let id = match opened {
                    Some(f) if i == 0 && !prefix.as_os_str().is_empty() => {
                        use std::os::unix::fs::MetadataExt as _;
                        f.metadata().ok().map(|m| (m.dev(), m.ino()))
                    }
                    _ => root.id_of(prefix),
                };
                if id.is_some_and(|id| self.protected_ids.contains(&id)) {
                    return Err(protected_error(&r.abs));
                }
            }
        }
        Ok(())
    }

    /// Check a file a tool has opened for the resolved path `r`: where the
    /// kernel says it is (so a symlink swapped in after the path was checked
    /// cannot redirect the tool) and what it is must not be protected, and,
    /// when the tool reads it (`read`), the read filter must let it be read.
    /// With `ancestors`, the identities of the directories above it are
    /// checked as well (walks have checked them already).
    pub fn check_opened(
        &self,
        file: &cap_std::fs::File,
        r: &Resolved,
        read: bool,
        ancestors: bool,
    ) -> Result<(), ToolError> {
        if !self.guarded() {
            return Ok(());
        }
        let meta = file.metadata().map_err(|e| map_io(r, e))?;
        self.check_fd(file.as_raw_fd(), (meta.dev(), meta.ino()), r, read, ancestors).map(drop)
    }

    /// The same check for a directory a tool has opened to create or
    /// replace an entry in (`r` names that entry); returns the directory's
    /// real path, The directory must be inside `r`'s root, and neither it nor
    /// a directory above it may be protected.
    /// `None` when nothing is protected (no check is needed).
    pub fn check_opened_dir(&self, dir: &Dir, r: &Resolved) -> Result<Option<PathBuf>, ToolError> {
        if !self.guarded() {
            return Ok(None);
        }
        let meta = dir.dir_metadata().map_err(|e| map_io(r, e))?;
        self.check_fd(dir.as_raw_fd(), (meta.dev(), meta.ino()), r, false, true).map(Some)
    }

    fn check_fd(
        &self,
        fd: std::os::fd::RawFd,
        id: (u64, u64),
        r: &Resolved,
        read: bool,
        ancestors: bool,
    ) -> Result<PathBuf, ToolError> {
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|e| {
            ToolError::Io(format!("{}: cannot check where the opened file is (/proc/self/fd: {e})", r.shown()))
        })?;
        let text = link.to_string_lossy();
        let real = match text.strip_suffix(" (deleted)") {
            Some(t) => PathBuf::from(t),
            None => link.clone(),
        };
        self.check_real(real, id, r, read, ancestors)
    }

    /// The checks of an opened file or directory whose real path is `real`.
    fn check_real(
        &self,
        real: PathBuf,
        id: (u64, u64),
        r: &Resolved,
        read: bool,
        ancestors: bool,
    ) -> Result<PathBuf, ToolError> {
        let root = &self.roots[r.root];
        let Some(rel) = real.is_absolute().then(|| real.strip_prefix(&root.path).ok()).flatten() else {
            return Err(ToolError::PathEscape(format!("{} leads outside the workspace", r.shown())));
        };
        if self.is_protected(&real) {
            return Err(protected_error(&r.abs));
        }
        if self.protected_ids.contains(&id) {
            return Err(protected_error(&r.abs));
        }
        if ancestors && !self.protected_ids.is_empty() {
            for prefix in rel.ancestors().skip(1) {
                if root.id_of(prefix).is_some_and(|id| self.protected_ids.contains(&id)) {
                    return Err(protected_error(&r.abs));
                }
            }
        }
        if read && !self.readable(&real) {
            return Err(hidden_error(&r.abs));
        }
        Ok(real)
    }

    /// [`Workspace::open_checked`] for a caller on an async worker thread,
    /// where nothing may wait long: only on a root on a local file system,
    /// and only along a path that neither follows a symbolic link nor
    /// crosses into another mount (`RESOLVE_NO_XDEV`: a network or FUSE file
    /// system mounted inside the root is never entered here). `Ok(None)`:
    /// not here; open it on the blocking pool instead.
    pub fn open_local(&self, r: &Resolved) -> Result<Option<(cap_std::fs::File, cap_std::fs::Metadata)>, ToolError> {
        if !self.roots[r.root].local {
            return Ok(None);
        }
        let Ok(file) = self.open_unlinked(r, rustix::fs::ResolveFlags::NO_XDEV) else { return Ok(None) };
        let meta = self.check_unlinked(&file, r)?;
        Ok(Some((file, meta)))
    }

    /// Open `r` for reading, non-blocking, along a path that follows no
    /// symbolic link (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`,
    /// and `extra`): the file is then exactly at the root's path joined
    /// with `r.rel`.
    fn open_unlinked(&self, r: &Resolved, extra: rustix::fs::ResolveFlags) -> rustix::io::Result<cap_std::fs::File> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | extra;
        let fd = rustix::fs::openat2(self.dir(r.root), &r.rel, flags, Mode::empty(), how)?;
        Ok(cap_std::fs::File::from_std(std::fs::File::from(fd)))
    }

    /// The checks of [`Self::check_opened`] (ancestors included) for a file
    /// [`Self::open_unlinked`] opened, at the path it is known to be at; its
    /// metadata.
    fn check_unlinked(&self, file: &cap_std::fs::File, r: &Resolved) -> Result<cap_std::fs::Metadata, ToolError> {
        let meta = file.metadata().map_err(|e| map_io(r, e))?;
        if self.guarded() {
            let real = self.roots[r.root].path.join(&r.rel);
            self.check_real(real, (meta.dev(), meta.ino()), r, true, true)?;
        }
        Ok(meta)
    }

    /// Open the file at `r` for reading, non-blocking (a FIFO or a device
    /// cannot stall the open), and check it as [`Self::check_opened`] does,
    /// the directories above it included; with its metadata, read from the
    /// opened file (so nothing can be swapped in between). A path through no
    /// symbolic link (`openat2` with `RESOLVE_NO_SYMLINKS`) is checked at the
    /// root's path joined with `r.rel`, without asking /proc; one through a
    /// link (or a system without `openat2`) is opened inside the root and
    /// checked where /proc says it is.
    pub fn open_checked(&self, r: &Resolved) -> Result<(cap_std::fs::File, cap_std::fs::Metadata), ToolError> {
        match self.open_unlinked(r, rustix::fs::ResolveFlags::empty()) {
            Ok(file) => {
                let meta = self.check_unlinked(&file, r)?;
                Ok((file, meta))
            }
            Err(
                rustix::io::Errno::LOOP | rustix::io::Errno::XDEV | rustix::io::Errno::NOSYS | rustix::io::Errno::PERM,
            ) => {
                let mut options = cap_std::fs::OpenOptions::new();
                options.read(true);
                cap_std::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK | libc::O_NOCTTY);
                let file = self.dir(r.root).open_with(&r.rel, &options).map_err(|e| map_io(r, e))?;
                self.check_opened(&file, r, true, true)?;
                let meta = file.metadata().map_err(|e| map_io(r, e))?;
                Ok((file, meta))
            }
            Err(e) => Err(map_io(r, e.into())),
        }
    }

    /// Open, for reading, a regular file a walk found at `r` (relative to its
    /// root). The fast way refuses every symbolic link on the way (`openat2`
    /// with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, non-blocking): the file
    /// is then exactly at the root's path joined with `r.rel`, and the checks
    /// of [`Self::check_opened`] run on that path without asking `/proc`
    /// where it is. A path through a symbolic link (one the caller named, or
    /// one swapped in since the walk), or a system without `openat2`, takes
    /// the way the other file tools take: `open` inside the root, then
    /// [`Self::check_opened`] on where the file really is. `Ok(None)`: it is
    /// not to be shown (wrepl's own state, or hidden by a read rule).
    pub fn open_walked(&self, r: &Resolved) -> Result<Option<cap_std::fs::File>, ToolError> {
        let file = match self.open_unlinked(r, rustix::fs::ResolveFlags::empty()) {
            Ok(file) => file,
            // A symbolic link on the way (the path named one, or one was
            // swapped in), or no openat2 (an old kernel, a seccomp filter):
            // open as the other file tools do, and check where it leads.
            Err(
                rustix::io::Errno::LOOP | rustix::io::Errno::XDEV | rustix::io::Errno::NOSYS | rustix::io::Errno::PERM,
            ) => {
                let file = self.dir(r.root).open(&r.rel).map_err(|e| map_io(r, e))?;
                return Ok(self.check_opened(&file, r, true, false).ok().map(|()| file));
            }
            Err(e) => return Err(map_io(r, e.into())),
        };
        if !self.guarded() {
            return Ok(Some(file));
        }
        let meta = file.metadata().map_err(|e| map_io(r, e))?;
        let real = self.roots[r.root].path.join(&r.rel);
        Ok(self.check_real(real, (meta.dev(), meta.ino()), r, true, false).ok().map(|_| file))
    }

    /// True when the identity (device, inode) is one of a protected path.
    pub fn is_protected_id(&self, dev: u64, ino: u64) -> bool {
        self.protected_ids.contains(&(dev, ino))
    }

    /// What a walk below `base` must skip: see [`WalkGuard`].
    pub fn walk_guard(&self, base: &Resolved) -> WalkGuard {
        let base_real = self.real_path(base);
        let bases = [&base.abs, &base_real];
        // An entry of the walk is its base joined with more components, so
        // only a protected path at or below a base (or above it, which hides
        // the whole walk) can be a prefix of one: the others are not asked
        // about every entry.
        let protected = self
            .protected
            .iter()
            .filter(|q| bases.iter().any(|b| q.starts_with(b) || b.starts_with(q)))
            .cloned()
            .collect();
        WalkGuard {
            base: base.abs.clone(),
            base_real,
            protected,
            protected_ids: self.protected_ids.clone(),
            read_filter: self.read_filter.clone(),
        }
    }

    fn escape(&self, path: &str) -> ToolError {
        let roots: Vec<String> = self.roots.iter().map(|r| r.path.display().to_string()).collect();
        ToolError::PathEscape(format!(
            "{path:?} is outside the workspace (allowed roots: {}); paths may not leave a root with `..`, absolute paths or symlinks",
            roots.join(", ")
        ))
    }

    /// The path permission rules should see: symlinks inside the root are
    /// followed (through the root's capability, so they cannot leave it) for
    /// the longest existing prefix, so a link cannot dodge a path rule.
    pub fn real_path(&self, r: &Resolved) -> PathBuf {
        self.real_path_opened(r).0
    }

    /// [`Workspace::real_path`], and the `O_PATH` descriptor of the path
    /// when the fast way opened it (no symbolic link on the way).
    fn real_path_opened(&self, r: &Resolved) -> (PathBuf, Option<std::fs::File>) {
        let dir = self.dir(r.root);
        // Fast: when no component is a symbolic link (an `O_PATH` open that
        // refuses them succeeds), the path leads where it is written. This
        // asks no /proc link, which costs more than the rest of a small read.
        if !r.rel.as_os_str().is_empty() {
            use rustix::fs::{Mode, OFlags, ResolveFlags};
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
            if let Ok(fd) = rustix::fs::openat2(dir, &r.rel, OFlags::PATH | OFlags::CLOEXEC, Mode::empty(), how) {
                return (self.roots[r.root].path.join(&r.rel), Some(std::fs::File::from(fd)));
            }
        }
        (self.real_path_slow(r), None)
    }

    /// [`Workspace::real_path`] along a path with a symbolic link (or on a
    /// system without `openat2`).
    fn real_path_slow(&self, r: &Resolved) -> PathBuf {
        let dir = self.dir(r.root);
        let root = &self.roots[r.root].path;
        let mut existing = r.rel.clone();
        let mut rest = Vec::new();
        loop {
            if existing.as_os_str().is_empty() {
                return r.abs.clone();
            }
            if let Ok(real) = dir.canonicalize(&existing) {
                let mut p = root.join(real);
                for part in rest.iter().rev() {
                    p.push(part);
                }
                return p;
            }
            match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent.to_path_buf();
                }
                _ => return r.abs.clone(),
            }
        }
    }

    /// Validate a directory for `chdir`: it must exist inside a root (and
    /// not be protected, see [`Workspace::resolve`]).
    pub fn resolve_dir(&self, cwd: &Path, path: &str) -> Result<Resolved, ToolError> {
        let r = self.resolve(cwd, path)?;
        let dir = self.dir(r.root);
        let ok = if r.rel.as_os_str().is_empty() {
            true
        } else {
            dir.metadata(&r.rel).map(|m| m.is_dir()).map_err(|e| map_io(&r, e))?
        };
        if !ok {
            return Err(ToolError::InvalidInput(format!("{} is not a directory", r.shown())));
        }
        Ok(r)
    }
}

/// What a directory walk (Glob, Grep) must skip below one base directory:
/// protected paths and what the read filter hides, by the entry's path as
/// walked and as it really is (the base's symlinks followed), and by the
/// identity of protected paths.
#[derive(Clone)]
pub struct WalkGuard {
    base: PathBuf,
    base_real: PathBuf,
    protected: Vec<PathBuf>,
    protected_ids: Vec<(u64, u64)>,
    read_filter: Option<PathFilter>,
}

impl std::fmt::Debug for WalkGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkGuard")
            .field("base", &self.base)
            .field("base_real", &self.base_real)
            .field("protected", &self.protected)
            .field("read_filter", &self.read_filter.is_some())
            .finish_non_exhaustive()
    }
}

impl WalkGuard {
    /// True when the walk must skip `path` (an entry below the base, as the
    /// walker names it); `ino` is the directory entry's inode number when
    /// known; for a directory (`is_dir`) the filter is also asked about its
    /// contents (so `dir/**` prunes `dir`).
    pub fn hides(&self, path: &Path, ino: Option<u64>, is_dir: bool) -> bool {
        let real = if self.base_real == self.base {
            if !self.below_base(path) {
                // Not below the base: nothing is known about it.
                return true;
            }
            None
        } else {
            match path.strip_prefix(&self.base) {
                Ok(sub) => Some(self.base_real.join(sub)),
                Err(_) => return true,
            }
        };
        let paths = std::iter::once(path).chain(real.as_deref());
        for p in paths {
            if self.protected.iter().any(|q| p.starts_with(q)) {
                return true;
            }
            if let Some(f) = &self.read_filter {
                if !f(p) || (is_dir && !f(&p.join(PROBE_CHILD))) {
                    return true;
                }
            }
        }
        if let Some(ino) = ino {
            if self.protected_ids.iter().any(|&(_, pi)| pi == ino) {
                // Same inode number: compare the device too (one more stat).
                return std::fs::symlink_metadata(path).map_or(true, |m| self.protected_ids.contains(&file_id_std(&m)));
            }
        }
        false
    }

    /// Whether `path` is below the base: first as the walker names its
    /// entries (the base's bytes, a slash, more), else component by component.
    fn below_base(&self, path: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt as _;
        let (p, b) = (path.as_os_str().as_bytes(), self.base.as_os_str().as_bytes());
        let named = p.len() > b.len() + 1 && p.starts_with(b) && p[b.len()] == b'/' && !b.ends_with(b"/");
        named || path.starts_with(&self.base)
    }

    /// True when the walk's base itself must not be listed from.
    pub fn hides_base(&self) -> bool {
        [&self.base, &self.base_real].iter().any(|p| {
            self.protected.iter().any(|q| p.starts_with(q))
                || self.read_filter.as_ref().is_some_and(|f| !f(p) || !f(&p.join(PROBE_CHILD)))
        })
    }
}

fn file_id_std(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (m.dev(), m.ino())
}

/// The error for a protected path.
pub(crate) fn protected_error(shown: &Path) -> ToolError {
    ToolError::Protected(format!(
        "{} is wrepl's own state (its compile cache, session store, settings, hook scripts or MCP server \
         configuration); file tools may not read or change it, even inside a workspace root",
        shown.display()
    ))
}

/// The error for a path the read filter hides (only reached when the file
/// changed between the permission check and the open).
fn hidden_error(shown: &Path) -> ToolError {
    ToolError::PathEscape(format!("{} leads to a path the session's Read deny rules hide", shown.display()))
}

/// The absolute forms under which a protected path is recorded: the lexical
/// (absolute, normalized) path and, if it exists, its canonical path (or
/// the canonical parent joined with the name, for a file not yet created).
fn protected_forms(p: &Path) -> Vec<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf())
    };
    let mut out = Vec::new();
    if let Some(n) = normalize(&abs) {
        out.push(n);
    }
    if let Ok(c) = std::fs::canonicalize(&abs) {
        out.push(c);
    } else if let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) {
        if let Ok(c) = std::fs::canonicalize(parent) {
            out.push(c.join(name));
        }
    }
    out.dedup();
    out
}

/// Lexically normalize an absolute path (`.` and `..`); `None` if `..`
/// climbs above `/`.
fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Map an I/O error on a resolved path to a tool error; cap-std's sandbox
/// refusals (symlinks out of the root) become path escapes.
pub fn map_io(r: &Resolved, e: std::io::Error) -> ToolError {
    use std::io::ErrorKind;
    let shown = r.shown();
    match e.kind() {
        ErrorKind::NotFound => ToolError::NotFound(format!("{shown} does not exist")),
        ErrorKind::PermissionDenied if e.to_string().contains("outside") => {
            ToolError::PathEscape(format!("{shown} leads outside the workspace (through a symlink or `..`)"))
        }
        _ if e.raw_os_error() == Some(libc::ELOOP) || e.to_string().contains("outside of the filesystem") => {
            ToolError::PathEscape(format!("{shown} leads outside the workspace (through a symlink or `..`)"))
        }
        _ => ToolError::Io(format!("{shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a worker thread may open: only on a local file system, and never
    /// across a mount (here procfs under `/`) or through a symbolic link.
    #[test]
    fn open_local_stays_on_the_roots_own_local_file_system() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f.txt"), "x").unwrap();
        std::os::unix::fs::symlink("f.txt", t.path().join("link")).unwrap();
        let ws = Workspace::new([t.path()]).unwrap();
        let root = ws.default_cwd().to_path_buf();
        assert!(ws.roots[0].local, "the test's temporary directory is on a local file system");
        assert!(ws.open_local(&ws.resolve(&root, "f.txt").unwrap()).unwrap().is_some());
        assert!(ws.open_local(&ws.resolve(&root, "link").unwrap()).unwrap().is_none());
        // /proc is not a local file system of a known kind.
        assert!(!Workspace::new(["/proc"]).unwrap().roots[0].local);
        // From `/` (local on this machine), /proc is another mount: not entered.
        let slash = Workspace::new(["/"]).unwrap();
        if slash.roots[0].local {
            assert!(slash.open_local(&slash.resolve(Path::new("/"), "proc/version").unwrap()).unwrap().is_none());
        }
    }

    /// The path check itself (before any tool opens the file) knows a
    /// protected file by its identity: another name for it (a hard link,
    /// along a path with no symbolic link), or a directory above that is
    /// protected, is refused; an ordinary file beside it is not.
    #[test]
    fn the_path_check_knows_protected_files_by_identity() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("state/store.db"), "secret").unwrap();
        std::fs::write(root.join("state/beside.txt"), "x").unwrap();
        std::fs::write(root.join("plain.txt"), "x").unwrap();
        std::fs::hard_link(root.join("state/store.db"), root.join("other/renamed.txt")).unwrap();
        let ws = Workspace::new([&root]).unwrap().with_protected([root.join("state/store.db")]);
        for path in ["other/renamed.txt", "./other/../other/renamed.txt", "state/store.db"] {
            assert!(matches!(ws.resolve(&root, path), Err(ToolError::Protected(_))), "{path}");
            assert!(matches!(ws.resolve_with_real(&root, path), Err(ToolError::Protected(_))), "{path}");
        }
        for path in ["plain.txt", "state/beside.txt", "other"] {
            assert!(ws.resolve_with_real(&root, path).is_ok(), "{path}");
        }
    }

    #[test]
    fn file_errors_name_the_path_relative_to_its_root() {
        let t = tempfile::tempdir().unwrap();
        let ws = Workspace::new([t.path()]).unwrap();
        let root = ws.default_cwd().to_path_buf();
        let r = ws.resolve(&root, "sub/missing.txt").unwrap();
        let e = map_io(&r, std::io::Error::from(std::io::ErrorKind::NotFound)).to_string();
        assert_eq!(e, format!("sub/missing.txt (in the root {}) does not exist", root.display()));
        let top = ws.resolve(&root, ".").unwrap();
        assert_eq!(top.shown(), format!("the root {}", root.display()));
    }

    #[test]
    fn resolves_inside_and_refuses_escapes() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        let ws = Workspace::new([t.path()]).unwrap();
        let root = ws.default_cwd().to_path_buf();
        let r = ws.resolve(&root, "sub/../a.txt").unwrap();
        assert_eq!(r.rel, PathBuf::from("a.txt"));
        let r = ws.resolve(&root.join("sub"), "b.txt").unwrap();
        assert_eq!(r.rel, PathBuf::from("sub/b.txt"));
        let r = ws.resolve(&root, root.join("sub/c").to_str().unwrap()).unwrap();
        assert_eq!(r.rel, PathBuf::from("sub/c"));
        for bad in ["../x", "/etc/passwd", "sub/../../x", "/", "../../../../../../.."] {
            assert!(matches!(ws.resolve(&root, bad), Err(ToolError::PathEscape(_))), "{bad}");
        }
        assert!(matches!(ws.resolve(&root, ""), Err(ToolError::InvalidInput(_))));
        assert!(matches!(ws.resolve(&root, "a\0b"), Err(ToolError::InvalidInput(_))));
        assert!(ws.resolve_dir(&root, "sub").is_ok());
        assert!(ws.resolve_dir(&root, "nope").is_err());
    }

    /// The walk guard hides a protected path by its name alone (no inode
    /// given), below the walk's base or, walked through a link, below the
    /// base's real path; and it hides what is not below the base at all.
    #[test]
    fn the_walk_guard_hides_protected_paths_by_name_whatever_the_base() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("state/s.db"), "x").unwrap();
        std::os::unix::fs::symlink("state", root.join("link")).unwrap();
        let ws = Workspace::new([&root]).unwrap().with_protected([root.join("state/s.db")]);
        for (base, below) in [("", "state/s.db"), ("state", "state/s.db"), ("link", "link/s.db")] {
            let base = ws.resolve_dir(&root, if base.is_empty() { "." } else { base }).unwrap();
            let guard = ws.walk_guard(&base);
            assert!(guard.hides(&root.join(below), None, false), "{below} from {}", base.abs.display());
            assert!(!guard.hides(&root.join(below).with_file_name("notes.txt"), None, false), "{below}");
        }
        // A base with nothing protected below it: its entries are shown, and
        // a path outside it is hidden.
        let guard = ws.walk_guard(&ws.resolve_dir(&root, "other").unwrap());
        assert!(!guard.hides(&root.join("other/a.txt"), None, false));
        assert!(guard.hides(&root.join("state/s.db"), None, false));
        assert!(guard.hides(&root.join("otherwise/a.txt"), None, false));
    }
}
