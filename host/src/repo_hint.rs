//! The repository hint (the sandbox global `repoHint`): a one-line
//! description of the git repository a directory belongs to, e.g.
//! `repo: /work/widget (main; origin github.com/acme/widget)`.
//!
//! It is read from the repository's files (`.git/HEAD`, `.git/config`), never
//! by running `git`: a repository is the workspace, which scripts can write,
//! and git runs configured programs (fsmonitor, hooks) for some commands. The
//! files are read bounded, a remote URL loses any user name and password, and
//! whatever cannot be understood is left out of the hint rather than guessed.

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Most bytes read of `HEAD`, `config` or a `.git` file.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Longest hint, in characters.
pub const MAX_HINT_CHARS: usize = 400;

/// The hint for the repository that `dir` lies in (searching `dir` and its
/// ancestors for `.git`), or `None` when it is in none.
pub fn repo_hint_for(dir: &Path) -> Option<String> {
    let (top, git_dir) = find_git_dir(dir)?;
    let mut details = Vec::new();
    if let Some(head) = read_small(&git_dir.join("HEAD")) {
        if let Some(branch) = branch_of(&head) {
            details.push(branch);
        }
    }
    // A linked worktree keeps its config in the main repository.
    let common = read_small(&git_dir.join("commondir"))
        .map(|c| {
            let c = PathBuf::from(c.trim());
            if c.is_absolute() {
                c
            } else {
                git_dir.join(c)
            }
        })
        .filter(|c| is_git_dir_path(c))
        .unwrap_or_else(|| git_dir.clone());
    if let Some(url) = read_small(&common.join("config")).and_then(|c| origin_url(&c)) {
        if let Some(remote) = describe_remote(&url) {
            details.push(format!("origin {remote}"));
        }
    }
    let mut hint = format!("repo: {}", top.display());
    if !details.is_empty() {
        hint.push_str(&format!(" ({})", details.join("; ")));
    }
    let hint: String = hint.chars().filter(|c| !c.is_control()).take(MAX_HINT_CHARS).collect();
    Some(hint)
}

/// The repository's top-level directory and its git directory.
fn find_git_dir(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let start = dir.canonicalize().ok()?;
    for d in start.ancestors() {
        let dot = d.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot) else { continue };
        if meta.is_dir() {
            return Some((d.to_path_buf(), dot));
        }
        if meta.is_file() {
            // A worktree or submodule: `gitdir: <path>`.
            let text = read_small(&dot)?;
            let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
            let target = PathBuf::from(target);
            let target = if target.is_absolute() { target } else { d.join(target) };
            return (is_git_dir_path(&target) && target.is_dir()).then(|| (d.to_path_buf(), target));
        }
        return None;
    }
    None
}

/// Whether `path` names a git directory: a `.git` directory, one inside it
/// (a worktree's or a submodule's), or a bare `NAME.git`. A `.git` file or a
/// `commondir` is workspace content a script may have written: it must not
/// send the hint reading files named `HEAD` or `config` anywhere else.
fn is_git_dir_path(path: &Path) -> bool {
    let Ok(real) = path.canonicalize() else { return false };
    real.components().any(|c| {
        let name = c.as_os_str().to_string_lossy();
        name == ".git" || (name.ends_with(".git") && name.len() > 4)
    })
}

/// A small text file's content (`None` when missing, a symbolic link, not a
/// regular file, too large or not UTF-8). A link is not followed: `.git`'s
/// files are workspace content, and `HEAD` linked to a token file must not
/// put its first characters into the hint.
fn read_small(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The branch `HEAD` names, or a detached HEAD's abbreviated commit.
fn branch_of(head: &str) -> Option<String> {
    let head = head.trim();
    if let Some(r) = head.strip_prefix("ref:") {
        let r = r.trim();
        return Some(r.strip_prefix("refs/heads/").unwrap_or(r).to_string()).filter(|b| !b.is_empty());
    }
    (head.len() >= 12 && head.chars().all(|c| c.is_ascii_hexdigit())).then(|| format!("detached at {}", &head[..12]))
}

/// The `url` of `[remote "origin"]` in a git config file.
fn origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_origin = line == "[remote \"origin\"]";
            continue;
        }
        if !in_origin {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.trim().eq_ignore_ascii_case("url") {
            let v = value.trim();
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            return Some(v.to_string()).filter(|v| !v.is_empty());
        }
    }
    None
}

/// A remote URL as `host/path` (no scheme, user, password, port or `.git`),
/// or a local path as it is.
fn describe_remote(url: &str) -> Option<String> {
    let trim = |p: &str| p.trim_end_matches('/').trim_end_matches(".git").trim_matches('/').to_string();
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme == "file" {
            return Some(trim(rest)).filter(|p| !p.is_empty());
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = match host.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => host,
        };
        if host.is_empty() {
            return None;
        }
        let path = trim(path);
        return Some(if path.is_empty() { host.to_string() } else { format!("{host}/{path}") });
    }
    // scp-like `user@host:path` (a colon before any slash).
    if let Some((authority, path)) = url.split_once(':') {
        if !authority.contains('/') && !authority.is_empty() {
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            return Some(format!("{host}/{}", trim(path)));
        }
    }
    Some(trim(url)).filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_lose_credentials_schemes_and_ports() {
        for (url, want) in [
            ("https://github.com/acme/widget.git", "github.com/acme/widget"),
            ("https://user:s3cret@github.com/acme/widget.git/", "github.com/acme/widget"),
            ("ssh://git@git.example.com:2222/team/tool.git", "git.example.com/team/tool"),
            ("git@github.com:acme/widget.git", "github.com/acme/widget"),
            ("file:///srv/git/widget.git", "srv/git/widget"),
            ("/srv/git/widget", "srv/git/widget"),
            ("https://tok@host", "host"),
        ] {
            assert_eq!(describe_remote(url).as_deref(), Some(want), "{url}");
        }
        assert_eq!(describe_remote("https://user:pw@/x"), None);
    }

    #[test]
    fn config_and_head_are_read_as_git_writes_them() {
        let config = "[core]\n\turl = nope\n[remote \"upstream\"]\n\turl = https://a/b\n[remote \"origin\"]\n\
                      \tfetch = +refs/heads/*:refs/remotes/origin/*\n\tURL = \"git@github.com:acme/widget.git\"\n";
        assert_eq!(origin_url(config).as_deref(), Some("git@github.com:acme/widget.git"));
        assert_eq!(origin_url("[remote \"origin\"]\n"), None);
        assert_eq!(branch_of("ref: refs/heads/feature/x\n").as_deref(), Some("feature/x"));
        assert_eq!(branch_of("0123456789abcdef0123\n").as_deref(), Some("detached at 0123456789ab"));
        assert_eq!(branch_of("garbage"), None);
    }

    #[test]
    fn hint_of_a_repository_its_worktree_and_no_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("widget");
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("src/deep")).unwrap();
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            top.join(".git/config"),
            "[remote \"origin\"]\n\turl = https://me:token@github.com/acme/widget.git\n",
        )
        .unwrap();
        let top = top.canonicalize().unwrap();
        let want = format!("repo: {} (main; origin github.com/acme/widget)", top.display());
        assert_eq!(repo_hint_for(&top.join("src/deep")).as_deref(), Some(want.as_str()));
        assert!(!want.contains("token"));

        // A linked worktree: `.git` is a file naming its git dir, whose
        // `commondir` leads to the config.
        let wt_git = top.join(".git/worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/topic\n").unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        let wt = wt.canonicalize().unwrap();
        assert_eq!(
            repo_hint_for(&wt).unwrap(),
            format!("repo: {} (topic; origin github.com/acme/widget)", wt.display())
        );

        // A `.git` file pointing somewhere that is no git directory is not
        // followed.
        let lure = tmp.path().join("lure");
        std::fs::create_dir_all(lure.join("secrets")).unwrap();
        std::fs::write(lure.join("secrets/config"), "[remote \"origin\"]\n\turl = https://leak/x\n").unwrap();
        std::fs::write(lure.join(".git"), format!("gitdir: {}\n", lure.join("secrets").display())).unwrap();
        assert_eq!(repo_hint_for(&lure), None);

        // Nor is a `HEAD` or `config` that is a symbolic link.
        let linked = tmp.path().join("linked");
        std::fs::create_dir_all(linked.join(".git")).unwrap();
        std::fs::write(tmp.path().join("token"), "0123456789abcdef0123456789abcdef\n").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("token"), linked.join(".git/HEAD")).unwrap();
        std::os::unix::fs::symlink(lure.join("secrets/config"), linked.join(".git/config")).unwrap();
        let hint = repo_hint_for(&linked).unwrap();
        assert!(!hint.contains("0123456789ab") && !hint.contains("leak"), "{hint}");

        let plain = tmp.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        // (tmp itself lies in no repository.)
        assert_eq!(repo_hint_for(&plain), None);
    }
}
