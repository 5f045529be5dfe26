//! The granted workspace roots. File tools only ever touch the filesystem
//! through the cap-std `Dir` of a root, so `..`, absolute paths and symlinks
//! that lead outside a root are refused by construction.

use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::ToolError;

struct Root {
    path: PathBuf,
    dir: Dir,
}

/// The directories scripts may work in.
pub struct Workspace {
    roots: Vec<Root>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.roots.iter().map(|r| &r.path)).finish()
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
            out.push(Root { path, dir });
        }
        if out.is_empty() {
            return Err(ToolError::InvalidInput("at least one workspace root is required".into()));
        }
        Ok(Self { roots: out })
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
    pub fn resolve(&self, cwd: &Path, path: &str) -> Result<Resolved, ToolError> {
        if path.is_empty() {
            return Err(ToolError::InvalidInput("the path is empty".into()));
        }
        if path.contains('\0') {
            return Err(ToolError::InvalidInput("the path contains a NUL byte".into()));
        }
        let p = Path::new(path);
        let joined = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
        let abs = normalize(&joined).ok_or_else(|| self.escape(path))?;
        let (root, rel) = self.locate(&abs).ok_or_else(|| self.escape(path))?;
        Ok(Resolved { root, rel, abs })
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

    /// Validate a directory for `chdir`: it must exist inside a root.
    pub fn resolve_dir(&self, cwd: &Path, path: &str) -> Result<Resolved, ToolError> {
        let r = self.resolve(cwd, path)?;
        let dir = self.dir(r.root);
        let ok = if r.rel.as_os_str().is_empty() {
            true
        } else {
            dir.metadata(&r.rel).map(|m| m.is_dir()).map_err(|e| map_io(&r, e))?
        };
        if !ok {
            return Err(ToolError::InvalidInput(format!("{} is not a directory", r.abs.display())));
        }
        Ok(r)
    }
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
    let shown = r.abs.display();
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
}
