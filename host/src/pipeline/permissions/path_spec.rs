//! Path rules: the gitignore-style globs of `Read(…)`, `Edit(…)`, … —
//! parsing a specifier into an anchored glob set, and matching request paths
//! against it. What a path specifier means is described in the parent
//! module's documentation ([Path globs](super#path-globs)).

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

#[derive(Debug, Clone)]
enum Anchor {
    /// Relative to the request's project root.
    Root,
    /// An absolute glob.
    Absolute,
    /// Relative to this home directory.
    Home(PathBuf),
    /// Anywhere (the glob starts with `**/`).
    Anywhere,
}

#[derive(Debug, Clone)]
pub(super) struct PathSpec {
    anchor: Anchor,
    set: GlobSet,
}

impl PathSpec {
    pub(super) fn matches(&self, path: &Path, root: &Path) -> bool {
        match &self.anchor {
            Anchor::Root => path.strip_prefix(root).is_ok_and(|rel| self.set.is_match(rel)),
            Anchor::Home(home) => path.strip_prefix(home).is_ok_and(|rel| self.set.is_match(rel)),
            Anchor::Absolute | Anchor::Anywhere => self.set.is_match(path),
        }
    }
}

pub(super) fn parse_path_spec(spec: &str) -> Result<PathSpec, String> {
    let (anchor, pattern) = if let Some(rest) = spec.strip_prefix("//") {
        (Anchor::Absolute, format!("/{rest}"))
    } else if spec == "~" || spec.starts_with("~/") {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .ok_or("`~` needs $HOME to be set to an absolute path")?;
        (Anchor::Home(normalize(&home)), spec[1..].trim_start_matches('/').to_string())
    } else if let Some(rest) = spec.strip_prefix("./").or_else(|| spec.strip_prefix('/')) {
        (Anchor::Root, rest.to_string())
    } else {
        let body = spec.trim_end_matches('/');
        if body.contains('/') && !body.starts_with("**/") {
            (Anchor::Root, body.to_string())
        } else if body.starts_with("**/") {
            (Anchor::Anywhere, body.to_string())
        } else {
            (Anchor::Anywhere, format!("**/{body}"))
        }
    };
    let pattern = pattern.trim_end_matches('/');
    if pattern.split('/').any(|c| c == ".." || c == ".") {
        return Err("`.` and `..` are not allowed in path rules (write a normalised path, \
                    or an absolute one with `//`)"
            .into());
    }
    let mut globs = Vec::with_capacity(2);
    match pattern {
        // The anchor directory itself and everything below it.
        "" => globs.push("**".to_string()),
        p if p.ends_with("/**") || p == "**" => globs.push(p.to_string()),
        p => {
            globs.push(p.to_string());
            globs.push(format!("{p}/**"));
        }
    }
    if matches!(anchor, Anchor::Absolute) && pattern.is_empty() {
        globs = vec!["/**".to_string(), "/".to_string()];
    }
    let mut set = GlobSetBuilder::new();
    for g in &globs {
        let glob = GlobBuilder::new(g).literal_separator(true).build().map_err(|e| format!("invalid glob: {e}"))?;
        set.add(glob);
    }
    let set = set.build().map_err(|e| format!("invalid glob: {e}"))?;
    Ok(PathSpec { anchor, set })
}

/// Lexical normalisation: drop `.`, resolve `..` against the preceding
/// component (never above the root).
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::testing::{path_req, rules, ROOT};
    use super::super::{Decision::*, PermissionRequest};

    #[test]
    fn path_rules_relative_to_root() {
        for rule in ["Read(./src/**)", "Read(src/**)", "Read(/src/**)", "Read(./src/)", "Read(./src)"] {
            let r = rules(&[rule], &[], &[]);
            assert_eq!(path_req(&r, "Read", &["/proj/src/a.rs"]), Some(Allow), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/src/a/b/c.rs"]), Some(Allow), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/srcx/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/other/src/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/lib/src/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/src/../secret"]), None, "{rule}");
            assert_eq!(path_req(&r, "Write", &["/proj/src/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &[]), None, "{rule}");
        }
        // `*` does not cross `/`.
        let r = rules(&["Edit(src/*.rs)"], &[], &[]);
        assert_eq!(path_req(&r, "Edit", &["/proj/src/a.rs"]), Some(Allow));
        assert_eq!(path_req(&r, "Edit", &["/proj/src/x/a.rs"]), None);
        // A root with glob metacharacters is not a pattern.
        let r = rules(&["Read(./a/**)"], &[], &[]);
        let paths = [PathBuf::from("/p[r]oj*/a/b")];
        let req = PermissionRequest { tool: "Read", command: None, paths: &paths, project_root: Path::new("/p[r]oj*") };
        assert_eq!(r.evaluate(&req).map(|m| m.decision), Some(Allow));
    }

    #[test]
    fn path_rules_all_for_allow_any_for_deny() {
        let r = rules(&["Read(./src/**)", "Read(./docs/**)"], &[], &["Read(**/.env)"]);
        assert_eq!(path_req(&r, "Read", &["/proj/src/a", "/proj/docs/b"]), Some(Allow));
        assert_eq!(path_req(&r, "Read", &["/proj/src/a", "/etc/passwd"]), None);
        assert_eq!(path_req(&r, "Read", &["/proj/src/a", "/proj/src/.env"]), Some(Deny));
        let m = r
            .evaluate(&PermissionRequest {
                tool: "Read",
                command: None,
                paths: &[PathBuf::from("/proj/src/a"), PathBuf::from("/proj/docs/b")],
                project_root: Path::new(ROOT),
            })
            .unwrap();
        assert_eq!(m.rule, "Read(./src/**), Read(./docs/**)");
    }

    #[test]
    fn path_rules_anywhere_absolute_home() {
        for rule in ["Read(**/.env)", "Read(.env)"] {
            let r = rules(&[], &[], &[rule]);
            assert_eq!(path_req(&r, "Read", &["/proj/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/a/b/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/elsewhere/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/.env/inner"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/.envx"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/x.env"]), None, "{rule}");
        }
        // gitignore-style: a trailing `/` does not anchor the pattern.
        let r = rules(&[], &[], &["Read(build/)"]);
        assert_eq!(path_req(&r, "Read", &["/proj/a/build/x"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/build"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/builds/x"]), None);
        let r = rules(&[], &[], &["Read(*.pem)"]);
        assert_eq!(path_req(&r, "Read", &["/proj/k/key.pem"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/k/key.pem.txt"]), None);

        let r = rules(&["Read(//etc/**)"], &[], &["Read(//etc/shadow)"]);
        assert_eq!(path_req(&r, "Read", &["/etc/passwd"]), Some(Allow));
        assert_eq!(path_req(&r, "Read", &["/etc/shadow"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/etc/../etc/shadow"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/etc/passwd"]), None);
        let r = rules(&["Read(//)"], &[], &[]);
        assert_eq!(path_req(&r, "Read", &["/anything/at/all"]), Some(Allow));

        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute()) {
            let r = rules(&[], &[], &["Read(~/.ssh/**)"]);
            let key = home.join(".ssh/id_ed25519");
            assert_eq!(path_req(&r, "Read", &[key.to_str().unwrap()]), Some(Deny));
            assert_eq!(path_req(&r, "Read", &["/proj/.ssh/id_ed25519"]), None);
        }
    }
}
