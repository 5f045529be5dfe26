//! Search tools: [`Glob`] (find files by name) and [`Grep`] (search file
//! contents with ripgrep's regex engine).
//!
//! Directories are walked with `ignore::WalkBuilder`: symlinks are never
//! followed (nor listed), hidden entries and `.git` are skipped, `.gitignore`
//! and `.ignore` files are honoured (also outside git repositories, and those
//! of the directories between the workspace root and the search directory).
//! Ignore files above the workspace roots and global git excludes are not
//! read. File contents are always read through the cap-std `Dir` of the root.
//!
//! Protected paths (wrepl's own state) and what the workspace's read filter
//! hides (the `Read` deny rules) are skipped while walking, whatever `path`,
//! pattern or `glob` is given: no names, no contents (see
//! [`super::workspace::WalkGuard`]); the base directory of a walk that is
//! hidden itself yields nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::WalkBuilder;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::files::{cancelled, cut_line, show, strip_eol};
use super::typed::{BlockingTool, Out};
use super::workspace::{map_io, Resolved};
use super::{ToolContext, ToolError, Workspace};

mod glob;
mod grep;

pub use glob::Glob;
pub use grep::Grep;

/// Most files `Glob` returns.
pub const GLOB_MAX_RESULTS: usize = 100;
/// Most output lines `Grep` returns in `content` mode.
pub const GREP_MAX_LINES: usize = 10_000;
/// Most output bytes `Grep` returns in `content` mode.
pub const GREP_MAX_BYTES: usize = 10 * 1024 * 1024;
/// Most threads `Grep` searches files on (besides the one walking).
const GREP_MAX_THREADS: usize = 8;
/// Files handed to a `Grep` helper thread at once.
const GREP_BATCH: usize = 32;
/// Most entries `Grep` returns in `files_with_matches` and `count` modes.
pub const GREP_MAX_ENTRIES: usize = 10_000;
/// Most memory `Grep` uses for one file (whole files in multiline mode, the
/// longest line otherwise); larger files are skipped.
const GREP_HEAP_LIMIT: usize = 64 * 1024 * 1024;
/// Ignore files larger than this are not read.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;
/// Longest glob pattern (`Glob`'s pattern, each of `Grep`'s globs), in bytes.
pub const MAX_GLOB_BYTES: usize = 1024;
/// Most patterns in `Grep`'s `glob` (separated by spaces or commas).
pub const MAX_GREP_GLOBS: usize = 64;
/// Most wildcard and class characters (`*`, `?`, `[`, `{`) in one glob: a
/// glob becomes a regular expression whose size grows with them.
pub const MAX_GLOB_WILDCARDS: usize = 64;

/// Refuse a glob pattern too long or too complex to compile cheaply, before
/// it reaches the glob compiler.
pub(crate) fn check_glob(pattern: &str) -> Result<(), ToolError> {
    if pattern.len() > MAX_GLOB_BYTES {
        return Err(ToolError::InvalidInput(format!(
            "the glob pattern is {} bytes long; the limit is {MAX_GLOB_BYTES}",
            pattern.len()
        )));
    }
    let wild = pattern.bytes().filter(|b| matches!(b, b'*' | b'?' | b'[' | b'{')).count();
    if wild > MAX_GLOB_WILDCARDS {
        return Err(ToolError::InvalidInput(format!(
            "the glob pattern has {wild} wildcard characters (*, ?, [, {{); the limit is {MAX_GLOB_WILDCARDS}"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Walking

/// How to walk a directory.
struct WalkOpts {
    hidden: bool,
    overrides: Option<Override>,
    types: Option<Types>,
}

/// A walker over `base` (a directory inside a root) with the module's rules.
fn walker(ws: &Workspace, base: &Resolved, opts: WalkOpts) -> WalkBuilder {
    let mut b = WalkBuilder::new(&base.abs);
    b.follow_links(false)
        .hidden(!opts.hidden)
        .parents(false)
        .ignore(true)
        // Handle .gitignore like .ignore: honoured without a git repository,
        // and without reading anything above the walk's start.
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    b.add_custom_ignore_filename(".gitignore");
    if let Some(o) = opts.overrides {
        b.overrides(o);
    }
    if let Some(t) = opts.types {
        b.types(t);
    }
    let ancestors = ancestor_ignores(ws, base);
    let guard = ws.walk_guard(base);
    b.filter_entry(move |e| {
        if e.depth() == 0 {
            return true;
        }
        if e.file_name() == ".git" {
            return false;
        }
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        // wrepl's own state and what the read filter hides: never listed,
        // never entered, never read.
        if guard.hides(e.path(), e.ino(), is_dir) {
            return false;
        }
        for gi in &ancestors {
            let m = gi.matched(e.path(), is_dir);
            if m.is_ignore() {
                return false;
            }
            if m.is_whitelist() {
                return true;
            }
        }
        true
    });
    b
}

/// Visit every regular file below a walk's start. With two or more
/// `threads`, the walk is parallel and each thread visits with a visitor of
/// its own from `visitor` (files then come in no set order); otherwise this
/// thread visits them in walk order. Stops once `cancel` is set.
fn for_each_file<'s, V>(
    walk: WalkBuilder,
    threads: usize,
    cancel: &'s CancellationToken,
    mut visitor: impl FnMut() -> V,
) where
    V: FnMut(ignore::DirEntry) + Send + 's,
{
    let is_file = |e: &ignore::DirEntry| e.depth() > 0 && e.file_type().is_some_and(|t| t.is_file());
    if threads > 1 {
        let mut walk = walk;
        walk.threads(threads).build_parallel().run(|| {
            let mut visit = visitor();
            Box::new(move |ent| {
                if cancel.is_cancelled() {
                    return ignore::WalkState::Quit;
                }
                if let Some(e) = ent.ok().filter(is_file) {
                    visit(e);
                }
                ignore::WalkState::Continue
            })
        });
    } else {
        let mut visit = visitor();
        for ent in walk.build() {
            if cancel.is_cancelled() {
                break;
            }
            if let Some(e) = ent.ok().filter(is_file) {
                visit(e);
            }
        }
    }
}

/// The `.ignore` and `.gitignore` matchers of the directories from the root
/// down to the parent of `base`, deepest first, read through cap-std.
fn ancestor_ignores(ws: &Workspace, base: &Resolved) -> Vec<Gitignore> {
    let dir = ws.dir(base.root);
    let root_abs = base.abs.ancestors().nth(base.rel.components().count()).unwrap_or(&base.abs);
    let mut prefixes = vec![PathBuf::new()];
    let comps: Vec<_> = base.rel.components().collect();
    for i in 1..comps.len() {
        prefixes.push(comps[..i].iter().collect());
    }
    if comps.is_empty() {
        prefixes.clear();
    }
    let mut out = Vec::new();
    for p in prefixes.iter().rev() {
        for name in [".ignore", ".gitignore"] {
            let rel = p.join(name);
            let Ok(meta) = dir.metadata(&rel) else {
                continue;
            };
            if !meta.is_file() || meta.len() > MAX_IGNORE_FILE {
                continue;
            }
            let Ok(text) = dir.read_to_string(&rel) else {
                continue;
            };
            let mut gb = GitignoreBuilder::new(root_abs.join(p));
            for line in text.lines() {
                let _ = gb.add_line(None, line);
            }
            if let Ok(gi) = gb.build() {
                out.push(gi);
            }
        }
    }
    out
}

/// True when nothing below `base` may be listed (the read filter hides it).
fn base_hidden(ws: &Workspace, base: &Resolved) -> bool {
    ws.walk_guard(base).hides_base()
}

/// True when some component of a glob names a hidden entry explicitly.
fn mentions_hidden(glob: &str) -> bool {
    glob.split(['/', ',', '{', ' ']).any(|c| c.starts_with('.') && c != "." && c != ".." && !c.starts_with("./"))
}

fn is_literal(component: &str) -> bool {
    !component.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Resolve the directory to search, or `None` if it does not exist.
fn search_dir(ws: &Workspace, cwd: &Path, path: &str) -> Result<Option<Resolved>, ToolError> {
    match ws.resolve_dir(cwd, path) {
        Ok(r) => Ok(Some(r)),
        Err(ToolError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------
// Glob

#[cfg(test)]
mod tests;
