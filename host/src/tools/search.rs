//! Search tools: [`Glob`] (find files by name) and [`Grep`] (search file
//! contents with ripgrep's regex engine).
//!
//! Directories are walked with `ignore::WalkBuilder`: symlinks are never
//! followed (nor listed), hidden entries and `.git` are skipped, `.gitignore`
//! and `.ignore` files are honoured (also outside git repositories, and those
//! of the directories between the workspace root and the search directory).
//! Ignore files above the workspace roots and global git excludes are not
//! read. File contents are always read through the cap-std `Dir` of the root.

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
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::files::{cancelled, cut_line, show, strip_eol};
use super::typed::BlockingTool;
use super::workspace::{map_io, Resolved};
use super::{ToolContext, ToolError, ToolOutput, Workspace};

/// Most files `Glob` returns.
pub const GLOB_MAX_RESULTS: usize = 100;
/// Most output lines `Grep` returns in `content` mode.
pub const GREP_MAX_LINES: usize = 10_000;
/// Most output bytes `Grep` returns in `content` mode.
pub const GREP_MAX_BYTES: usize = 10 * 1024 * 1024;
/// Most entries `Grep` returns in `files_with_matches` and `count` modes.
pub const GREP_MAX_ENTRIES: usize = 10_000;
/// Most memory `Grep` uses for one file (whole files in multiline mode, the
/// longest line otherwise); larger files are skipped.
const GREP_HEAP_LIMIT: usize = 64 * 1024 * 1024;
/// Ignore files larger than this are not read.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

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
    b.filter_entry(move |e| {
        if e.depth() == 0 {
            return true;
        }
        if e.file_name() == ".git" {
            return false;
        }
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
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

/// `Glob`: find files whose path (relative to the search directory) matches a
/// glob pattern, newest first.
///
/// Matching: `*`, `?` and `[...]` never cross `/`, `**` matches any number of
/// directories and `{a,b}` alternates; so `*.rs` matches only files directly
/// in the search directory and `**/*.rs` matches at any depth. Leading literal
/// directories of the pattern (`src/**/*.ts`, or an absolute pattern inside a
/// root) narrow the search directory. Hidden entries are included only when
/// the pattern names one (`.github/**`, `**/.env`). Only regular files are
/// listed (no directories, no symlinks).
///
/// Value: `{"filenames": [absolute paths], "numFiles", "truncated"}`, at most
/// [`GLOB_MAX_RESULTS`] files, most recently modified first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

/// The input of [`Glob`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobInput {
    /// Glob pattern matched against paths relative to the search directory, e.g. "**/*.js" or "src/**/*.ts".
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search in: absolute, or relative to the working directory (default: the working directory).
    path: Option<String>,
}

impl BlockingTool for Glob {
    type Input = GlobInput;
    const NAME: &'static str = "Glob";
    const DESCRIPTION: &'static str =
        "Find files by name with a glob pattern, e.g. \"**/*.rs\" (any depth), \"*.toml\" (directly in the \
         search directory) or \"src/**/*.{ts,tsx}\". `*` does not cross `/`; `**` matches any number of \
         directories. Returns absolute paths of regular files, most recently modified first, at most 100. \
         Respects .gitignore/.ignore; hidden files are skipped unless the pattern names them.";
    const READ_ONLY: bool = true;
    const PATH_FIELD: &'static str = "path";
    const ALSO_CHECKED_AS: Option<&'static str> = Some("Read");

    fn run(input: GlobInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        glob(&ctx.workspace, &ctx.cwd, &input.pattern, input.path.as_deref(), &ctx.cancel)
    }
}

/// Split a glob pattern into the directory to search and the pattern to match
/// below it. `None` when the literal directory does not exist.
fn split_glob(
    ws: &Workspace,
    cwd: &Path,
    search: &Resolved,
    pattern: &str,
) -> Result<Option<(Resolved, String)>, ToolError> {
    let absolute = pattern.starts_with('/');
    let mut rest = pattern.trim_start_matches('/');
    while let Some(r) = rest.strip_prefix("./") {
        rest = r.trim_start_matches('/');
    }
    let rest = rest.trim_end_matches('/');
    let comps: Vec<&str> = rest.split('/').collect();
    let literal = comps[..comps.len().saturating_sub(1)].iter().take_while(|c| is_literal(c)).count();
    let prefix = comps[..literal].join("/");
    let glob = comps[literal..].join("/");
    let base = if absolute {
        search_dir(ws, cwd, &format!("/{prefix}"))?
    } else if prefix.is_empty() {
        Some(search.clone())
    } else {
        match ws.resolve_dir(&search.abs, &prefix) {
            Ok(r) => Some(r),
            Err(ToolError::NotFound(_) | ToolError::InvalidInput(_)) => None,
            Err(e) => return Err(e),
        }
    };
    Ok(base.map(|b| (b, glob)))
}

fn glob(
    ws: &Workspace,
    cwd: &Path,
    pattern: &str,
    path: Option<&str>,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let search = ws.resolve_dir(cwd, path.unwrap_or("."))?;
    let mut heap: BinaryHeap<Reverse<(SystemTime, Reverse<PathBuf>)>> = BinaryHeap::new();
    let mut total = 0usize;
    if let Some((base, glob)) = split_glob(ws, cwd, &search, pattern)? {
        let matcher = globset::GlobBuilder::new(&glob)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| ToolError::InvalidInput(format!("invalid glob pattern {pattern:?}: {e}")))?
            .compile_matcher();
        let opts = WalkOpts { hidden: mentions_hidden(&glob), overrides: None, types: None };
        for ent in walker(ws, &base, opts).build() {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            let Ok(ent) = ent else { continue };
            if ent.depth() == 0 || !ent.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = ent.path().strip_prefix(&base.abs) else {
                continue;
            };
            if !matcher.is_match(rel) {
                continue;
            }
            total += 1;
            let mtime = ent.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
            heap.push(Reverse((mtime, Reverse(ent.into_path()))));
            if heap.len() > GLOB_MAX_RESULTS {
                heap.pop();
            }
        }
    }
    // `into_sorted_vec` of `Reverse` keys is best (newest, then by path) first.
    let files: Vec<String> = heap.into_sorted_vec().into_iter().map(|Reverse((_, Reverse(p)))| show(&p)).collect();
    let truncated = total > files.len();
    let mut text = if files.is_empty() { "No files found".to_string() } else { files.join("\n") };
    if truncated {
        text.push_str(&format!(
            "\n(Showing the {} most recently modified of {total} matching files; use a more specific pattern or path.)",
            files.len()
        ));
    }
    let value = json!({"filenames": files, "numFiles": files.len(), "truncated": truncated});
    Ok(ToolOutput::new(value, text))
}

// ---------------------------------------------------------------------------
// Grep

/// What `Grep` returns (its `output_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
enum Mode {
    // Matching lines.
    #[serde(rename = "content")]
    Content,
    // Paths of matching files.
    #[default]
    #[serde(rename = "files_with_matches")]
    Files,
    // Matching lines per file.
    #[serde(rename = "count")]
    Count,
}

/// `Grep`: search file contents with a regular expression (Rust regex syntax,
/// as ripgrep).
///
/// Values by `output_mode`:
/// - `content`: `{"mode":"content","content": "<lines>","numLines","truncated"}`
///   where lines are `path:line:text` for matches and `path-line-text` for
///   context lines (`path:text`/`path-text` with `"-n": false`) and `--`
///   separates non-adjacent groups when context is requested;
/// - `files_with_matches` (default): `{"mode":"files_with_matches",
///   "filenames": [...], "numFiles","truncated"}`, most recently modified first;
/// - `count`: `{"mode":"count","counts":[{"file","count"}],"numMatches",
///   "numFiles","truncated"}` counting matching lines per file.
///
/// Paths are absolute. `head_limit` keeps the first N lines/entries (0 means
/// no limit); output is also bounded by [`GREP_MAX_LINES`], [`GREP_MAX_BYTES`]
/// and [`GREP_MAX_ENTRIES`], with `truncated` set when anything was left out.
/// Binary files (NUL bytes) are skipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// The input of [`Grep`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepInput {
    /// The regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// File or directory to search: absolute, or relative to the working directory (default: the working directory).
    path: Option<String>,
    /// Only search files matching this glob (ripgrep --glob semantics: "*.js" matches at any depth; several globs may be separated by spaces or commas; a leading ! excludes).
    glob: Option<String>,
    /// "files_with_matches" (default): paths of matching files; "content": matching lines; "count": matching lines per file.
    output_mode: Option<Mode>,
    /// Case-insensitive search.
    #[serde(rename = "-i")]
    case_insensitive: Option<bool>,
    /// Show line numbers in content mode (default true).
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    /// Lines of context after each match (content mode).
    #[serde(rename = "-A")]
    after: Option<u64>,
    /// Lines of context before each match (content mode).
    #[serde(rename = "-B")]
    before: Option<u64>,
    /// Lines of context before and after each match (content mode); -A/-B take precedence.
    #[serde(rename = "-C")]
    context: Option<u64>,
    /// Return only the first N lines (content) or entries (other modes); 0 means no limit.
    head_limit: Option<u64>,
    /// Let the pattern match across lines (`.` matches newlines).
    multiline: Option<bool>,
    /// Only search files of this ripgrep type (e.g. rust, js, ts, py, go, java, c, cpp, md, json, yaml).
    #[serde(rename = "type")]
    file_type: Option<String>,
}

impl BlockingTool for Grep {
    type Input = GrepInput;
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str =
        "Search file contents with a regular expression (ripgrep / Rust regex syntax, e.g. \"fn\\s+main\", \
         \"log.*Error\"; escape literal braces and dots). `path` is a directory (default: the working \
         directory) or a single file; filter files with `glob` (e.g. \"*.rs\", \"*.{ts,tsx}\") or `type` \
         (ripgrep type names: rust, js, ts, py, go, ...). output_mode \"files_with_matches\" (default) lists \
         matching files newest first, \"content\" shows matching lines as path:line:text with optional \
         context (-A/-B/-C), \"count\" counts matching lines per file. Set multiline to let patterns span \
         lines (`.` then matches newlines too). Respects .gitignore; skips hidden and binary files.";
    const READ_ONLY: bool = true;
    const PATH_FIELD: &'static str = "path";
    const ALSO_CHECKED_AS: Option<&'static str> = Some("Read");

    fn run(input: GrepInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        grep(&ctx.workspace, &ctx.cwd, GrepRequest::new(input)?, &ctx.cancel)
    }
}

/// A `Grep` input made ready to search.
struct GrepRequest {
    matcher: RegexMatcher,
    path: Option<String>,
    glob: Option<String>,
    file_type: Option<String>,
    mode: Mode,
    line_numbers: bool,
    before: usize,
    after: usize,
    limit: Option<usize>,
    multiline: bool,
}

impl GrepRequest {
    fn new(input: GrepInput) -> Result<Self, ToolError> {
        let pattern = &input.pattern;
        let mode = input.output_mode.unwrap_or_default();
        let multiline = input.multiline.unwrap_or(false);
        let mut mb = RegexMatcherBuilder::new();
        mb.case_insensitive(input.case_insensitive.unwrap_or(false)).multi_line(true);
        if multiline {
            mb.dot_matches_new_line(true);
        } else {
            mb.line_terminator(Some(b'\n'));
        }
        let matcher = mb.build(pattern).map_err(|e| {
            let hint = if !multiline && e.to_string().contains("\\n") {
                " (set multiline to true to match across lines)"
            } else {
                ""
            };
            ToolError::InvalidInput(format!("invalid regex {pattern:?}: {e}{hint}"))
        })?;
        let usize_of = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let c = usize_of(input.context).unwrap_or(0);
        let (before, after) = if mode == Mode::Content {
            (usize_of(input.before).unwrap_or(c), usize_of(input.after).unwrap_or(c))
        } else {
            (0, 0)
        };
        Ok(Self {
            matcher,
            path: input.path,
            glob: input.glob,
            file_type: input.file_type,
            mode,
            line_numbers: input.line_numbers.unwrap_or(true),
            before,
            after,
            limit: usize_of(input.head_limit).filter(|&n| n > 0),
            multiline,
        })
    }
}

/// Split a `glob` argument into globs: whitespace separates, and so do commas
/// outside `{...}`.
fn split_globs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in s.split_whitespace() {
        let mut depth = 0usize;
        let mut cur = String::new();
        for ch in word.chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

/// A reader that fails once the call is cancelled.
struct CancelRead<R> {
    inner: R,
    cancel: CancellationToken,
}

impl<R: io::Read> io::Read for CancelRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("cancelled"));
        }
        self.inner.read(buf)
    }
}

/// Content-mode output across files.
struct Lines {
    lines: Vec<String>,
    bytes: usize,
    limit: usize,
    truncated: bool,
}

impl Lines {
    /// Add a line; false (and `truncated`) when the output is full.
    fn push(&mut self, line: String) -> bool {
        if self.lines.len() >= self.limit || self.bytes + line.len() + 1 > GREP_MAX_BYTES {
            self.truncated = true;
            return false;
        }
        self.bytes += line.len() + 1;
        self.lines.push(line);
        true
    }
}

/// The sink for one file.
struct FileSink<'a> {
    mode: Mode,
    path: &'a str,
    line_numbers: bool,
    context: bool,
    out: &'a mut Lines,
    /// Lines of `out` before this file (to roll back a binary file).
    mark: usize,
    matches: u64,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl FileSink<'_> {
    fn line(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) -> bool {
        if self.context && self.out.lines.len() == self.mark && self.mark > 0 && !self.out.push("--".into()) {
            return false;
        }
        let text = String::from_utf8_lossy(strip_eol(bytes));
        let text = cut_line(&text, strip_eol(bytes).len());
        let line = match number.filter(|_| self.line_numbers) {
            Some(n) => format!("{}{sep}{n}{sep}{text}", self.path),
            None => format!("{}{sep}{text}", self.path),
        };
        self.out.push(line)
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _s: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("cancelled"));
        }
        match self.mode {
            Mode::Files => {
                self.matches = 1;
                Ok(false)
            }
            Mode::Count => {
                self.matches += mat.lines().count().max(1) as u64;
                Ok(true)
            }
            Mode::Content => {
                self.matches += 1;
                let first = mat.line_number();
                for (i, line) in mat.lines().enumerate() {
                    if !self.line(':', first.map(|n| n + i as u64), line) {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _s: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("cancelled"));
        }
        Ok(self.line('-', ctx.line_number(), ctx.bytes()))
    }

    fn context_break(&mut self, _s: &Searcher) -> Result<bool, io::Error> {
        Ok(self.out.lines.len() == self.mark || self.out.push("--".into()))
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn grep(ws: &Workspace, cwd: &Path, req: GrepRequest, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve(cwd, req.path.as_deref().unwrap_or("."))?;
    let dir = ws.dir(target.root);
    let is_file = if target.rel.as_os_str().is_empty() {
        false
    } else {
        let meta = dir.metadata(&target.rel).map_err(|e| map_io(&target, e))?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(ToolError::InvalidInput(format!("{} is neither a file nor a directory", target.abs.display())));
        }
        meta.is_file()
    };

    // The files to search: (path relative to the root, absolute path).
    let files: Box<dyn Iterator<Item = (PathBuf, PathBuf)>> = if is_file {
        Box::new(std::iter::once((target.rel.clone(), target.abs.clone())))
    } else {
        let mut hidden = false;
        let overrides = match &req.glob {
            Some(g) if !g.trim().is_empty() => {
                let mut ob = OverrideBuilder::new(&target.abs);
                for g in split_globs(g) {
                    hidden |= mentions_hidden(&g);
                    ob.add(&g).map_err(|e| ToolError::InvalidInput(format!("invalid glob {g:?}: {e}")))?;
                }
                Some(ob.build().map_err(|e| ToolError::InvalidInput(format!("invalid glob: {e}")))?)
            }
            _ => None,
        };
        let types = match &req.file_type {
            Some(t) => {
                let mut tb = TypesBuilder::new();
                tb.add_defaults();
                for name in t.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    tb.select(name);
                }
                Some(tb.build().map_err(|e| {
                    ToolError::InvalidInput(format!(
                        "{e}; use a ripgrep type name such as rust, js, ts, py, go, java, c, cpp, md, json, yaml, or the glob parameter"
                    ))
                })?)
            }
            None => None,
        };
        let walk = walker(ws, &target, WalkOpts { hidden, overrides, types }).build();
        let base = target.clone();
        Box::new(walk.filter_map(move |ent| {
            let ent = ent.ok()?;
            if ent.depth() == 0 || !ent.file_type().is_some_and(|t| t.is_file()) {
                return None;
            }
            let sub = ent.path().strip_prefix(&base.abs).ok()?;
            Some((base.rel.join(sub), ent.into_path()))
        }))
    };

    let mut searcher = SearcherBuilder::new()
        .line_number(req.mode == Mode::Content && req.line_numbers)
        .multi_line(req.multiline)
        .before_context(req.before)
        .after_context(req.after)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(GREP_HEAP_LIMIT))
        .build();

    let limit = req.limit.unwrap_or(usize::MAX);
    let mut lines = Lines { lines: Vec::new(), bytes: 0, limit: limit.min(GREP_MAX_LINES), truncated: false };
    let entry_cap = limit.min(GREP_MAX_ENTRIES);
    let mut newest: BinaryHeap<Reverse<(Option<cap_std::time::SystemTime>, Reverse<String>)>> = BinaryHeap::new();
    let mut counts: Vec<(String, u64)> = Vec::new();
    let mut matched_files = 0usize;
    let mut skipped = 0usize;
    let mut entries_truncated = false;

    for (rel, abs) in files {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let Ok(file) = dir.open(&rel) else {
            skipped += 1;
            continue;
        };
        // Missing times sort as oldest.
        let mtime = file.metadata().ok().and_then(|m| m.modified().ok());
        let shown = show(&abs);
        let mark = lines.lines.len();
        let mark_bytes = lines.bytes;
        let mut sink = FileSink {
            mode: req.mode,
            path: &shown,
            line_numbers: req.line_numbers,
            context: req.before > 0 || req.after > 0,
            out: &mut lines,
            mark,
            matches: 0,
            binary: false,
            cancel,
        };
        let reader = CancelRead { inner: file, cancel: cancel.clone() };
        let res = searcher.search_reader(&req.matcher, reader, &mut sink);
        let (matches, binary) = (sink.matches, sink.binary);
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        if binary || res.is_err() {
            // Roll back whatever a binary or unreadable file produced.
            lines.lines.truncate(mark);
            lines.bytes = mark_bytes;
            if res.is_err() {
                skipped += 1;
            }
            continue;
        }
        if lines.truncated {
            break;
        }
        if matches == 0 {
            continue;
        }
        matched_files += 1;
        match req.mode {
            Mode::Content => {}
            Mode::Files => {
                newest.push(Reverse((mtime, Reverse(shown))));
                if newest.len() > entry_cap {
                    newest.pop();
                    entries_truncated = true;
                }
            }
            Mode::Count => {
                if counts.len() >= entry_cap {
                    entries_truncated = true;
                    break;
                }
                counts.push((shown, matches));
            }
        }
    }

    let note_skipped = |t: &mut String| {
        if skipped > 0 {
            t.push_str(&format!(
                "\n({skipped} file{} could not be read or exceeded the size limit and were skipped.)",
                if skipped == 1 { "" } else { "s" }
            ));
        }
    };
    let out = match req.mode {
        Mode::Content => {
            let content = lines.lines.join("\n");
            let n = lines.lines.len();
            let mut text = if n == 0 { "No matches found".to_string() } else { content.clone() };
            if lines.truncated {
                text.push_str(&format!(
                    "\n… (output stopped after {n} lines; narrow the search with path, glob, type or head_limit)"
                ));
            }
            note_skipped(&mut text);
            ToolOutput::new(
                json!({"mode": "content", "content": content, "numLines": n, "truncated": lines.truncated}),
                text,
            )
        }
        Mode::Files => {
            let files: Vec<String> = newest.into_sorted_vec().into_iter().map(|Reverse((_, Reverse(p)))| p).collect();
            let mut text = if files.is_empty() {
                "No files found".to_string()
            } else {
                format!("Found {} file{}\n{}", files.len(), if files.len() == 1 { "" } else { "s" }, files.join("\n"))
            };
            if entries_truncated {
                text.push_str(&format!(
                    "\n(Showing the {} most recently modified of {matched_files} matching files.)",
                    files.len()
                ));
            }
            note_skipped(&mut text);
            ToolOutput::new(
                json!({"mode": "files_with_matches", "filenames": files, "numFiles": files.len(), "truncated": entries_truncated}),
                text,
            )
        }
        Mode::Count => {
            let total: u64 = counts.iter().map(|(_, c)| c).sum();
            let mut text = if counts.is_empty() {
                "No matches found".to_string()
            } else {
                let mut t: String = counts.iter().map(|(f, c)| format!("{f}:{c}\n")).collect();
                t.push_str(&format!(
                    "\nFound {total} matching line{} in {} file{}.",
                    if total == 1 { "" } else { "s" },
                    counts.len(),
                    if counts.len() == 1 { "" } else { "s" }
                ));
                t
            };
            if entries_truncated {
                text.push_str("\n(More files matched; the list was cut at head_limit or the entry bound.)");
            }
            note_skipped(&mut text);
            let list: Vec<Value> = counts.iter().map(|(f, c)| json!({"file": f, "count": c})).collect();
            ToolOutput::new(
                json!({"mode": "count", "counts": list, "numMatches": total, "numFiles": counts.len(), "truncated": entries_truncated}),
                text,
            )
        }
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::tools::{Tool, FILE_TOOL_TIMEOUT};

    struct Env {
        _dir: tempfile::TempDir,
        root: PathBuf,
        ctx: ToolContext,
    }

    fn env() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new([dir.path()]).unwrap();
        let root = ws.default_cwd().to_path_buf();
        let ctx = ToolContext {
            cwd: root.clone(),
            workspace: Arc::new(ws),
            cancel: CancellationToken::new(),
            timeout: FILE_TOOL_TIMEOUT,
            progress: None,
        };
        Env { _dir: dir, root, ctx }
    }

    impl Env {
        fn write(&self, rel: &str, body: &str) {
            let p = self.root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        fn abs(&self, rel: &str) -> String {
            show(&self.root.join(rel))
        }
        fn abss(&self, rels: &[&str]) -> Vec<String> {
            rels.iter().map(|r| self.abs(r)).collect()
        }
    }

    fn set_mtime(p: &Path, secs: u64) {
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
    }

    async fn run(tool: &dyn Tool, e: &Env, input: Value) -> Result<ToolOutput, ToolError> {
        tool.call(input, e.ctx.clone()).await
    }

    fn names(v: &Value) -> Vec<String> {
        v["filenames"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn schemas_are_closed_objects() {
        for t in [&Glob as &dyn Tool, &Grep] {
            let s = t.input_schema();
            assert_eq!(s["type"], "object");
            assert_eq!(s["additionalProperties"], false);
            assert_eq!(s["required"], json!(["pattern"]));
            for (_, p) in s["properties"].as_object().unwrap() {
                assert!(p["description"].is_string());
            }
            assert!(t.read_only(&json!({})));
            assert_eq!(t.input_paths(&json!({"pattern": "x"})), Vec::<String>::new());
            assert_eq!(t.input_paths(&json!({"pattern": "x", "path": "src"})), vec!["src".to_string()]);
        }
        assert!(Grep.input_schema()["properties"]["-C"].is_object());
    }

    #[test]
    fn builtin_schemas_are_valid_json_schema() {
        for t in crate::tools::builtin_tools() {
            let s = t.input_schema();
            jsonschema::meta::validate(&s).unwrap_or_else(|e| panic!("{}: {e}", t.name()));
            let v = jsonschema::validator_for(&s).unwrap();
            assert!(!v.is_valid(&json!({"bogus": 1})), "{}", t.name());
        }
        let v = jsonschema::validator_for(&Grep.input_schema()).unwrap();
        assert!(v.is_valid(&json!({"pattern": "x", "-i": true, "-C": 2, "output_mode": "count"})));
        assert!(!v.is_valid(&json!({"pattern": "x", "output_mode": "lines"})));
        let v = jsonschema::validator_for(&crate::tools::files::Read.input_schema()).unwrap();
        assert!(v.is_valid(&json!({"file_path": "a", "offset": 3, "limit": 1})));
        assert!(!v.is_valid(&json!({"file_path": "a", "offset": 0})));
    }

    #[test]
    fn globs_split() {
        assert_eq!(split_globs("*.ts, *.{js,jsx} !x"), vec!["*.ts", "*.{js,jsx}", "!x"]);
        assert_eq!(split_globs("*.rs,*.toml"), vec!["*.rs", "*.toml"]);
        assert!(mentions_hidden(".github/**") && mentions_hidden("**/.env"));
        assert!(!mentions_hidden("./src/*.rs") && !mentions_hidden("**/*.rs"));
    }

    #[tokio::test]
    async fn glob_matches_sorts_and_respects_ignores() {
        let e = env();
        e.write("a.rs", "");
        e.write("src/b.rs", "");
        e.write("src/deep/c.rs", "");
        e.write("src/notes.md", "");
        e.write(".hidden/h.rs", "");
        e.write("target/t.rs", "");
        e.write("src/gen/g.rs", "");
        e.write("src/deep/gen/z.rs", "");
        e.write(".gitignore", "target/\n");
        e.write("src/.ignore", "gen/\n");
        set_mtime(&e.root.join("a.rs"), 1000);
        set_mtime(&e.root.join("src/b.rs"), 3000);
        set_mtime(&e.root.join("src/deep/c.rs"), 2000);

        let out = run(&Glob, &e, json!({"pattern": "**/*.rs"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/b.rs", "src/deep/c.rs", "a.rs"]));
        assert_eq!(out.value["numFiles"], 3);
        assert_eq!(out.value["truncated"], false);
        assert_eq!(out.text, e.abss(&["src/b.rs", "src/deep/c.rs", "a.rs"]).join("\n"));

        // `*` stays in one directory.
        let out = run(&Glob, &e, json!({"pattern": "*.rs"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["a.rs"]));
        let out = run(&Glob, &e, json!({"pattern": "*.rs", "path": "src"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/b.rs"]));
        // Literal leading directories, absolute patterns, `./`.
        let out = run(&Glob, &e, json!({"pattern": "src/**/*.{rs,md}"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/notes.md", "src/b.rs", "src/deep/c.rs"]));
        let abs = format!("{}/src/*.rs", show(&e.root));
        let out = run(&Glob, &e, json!({"pattern": abs})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/b.rs"]));
        let out = run(&Glob, &e, json!({"pattern": "./src/deep/*"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/deep/c.rs"]));
        // Ignored directories searched from inside still honour the parent's rules,
        // hidden entries appear when named.
        let out = run(&Glob, &e, json!({"pattern": "**/*.rs", "path": "src/deep"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/deep/c.rs"]));
        let out = run(&Glob, &e, json!({"pattern": ".hidden/*.rs"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&[".hidden/h.rs"]));
        let out = run(&Glob, &e, json!({"pattern": "*.rs", "path": "target"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["target/t.rs"]));

        let out = run(&Glob, &e, json!({"pattern": "**/*.py"})).await.unwrap();
        assert_eq!(out.text, "No files found");
        assert_eq!(out.value, json!({"filenames": [], "numFiles": 0, "truncated": false}));
        let out = run(&Glob, &e, json!({"pattern": "nope/**/*.rs"})).await.unwrap();
        assert_eq!(out.value["numFiles"], 0);
        let err = run(&Glob, &e, json!({"pattern": "src/[a"})).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}");
        for p in ["/etc/*", "../*"] {
            let err = run(&Glob, &e, json!({"pattern": p})).await.unwrap_err();
            assert!(matches!(err, ToolError::PathEscape(_)), "{p}: {err:?}");
        }
        let err = run(&Glob, &e, json!({"pattern": "*", "path": "/tmp"})).await;
        assert!(matches!(err, Err(ToolError::PathEscape(_))));
    }

    #[tokio::test]
    async fn glob_caps_results_and_skips_symlinks() {
        let e = env();
        for i in 0..(GLOB_MAX_RESULTS + 20) {
            let rel = format!("f{i:03}.txt");
            e.write(&rel, "");
            set_mtime(&e.root.join(&rel), 1000 + i as u64);
        }
        let out = run(&Glob, &e, json!({"pattern": "*.txt"})).await.unwrap();
        assert_eq!(out.value["numFiles"], GLOB_MAX_RESULTS);
        assert_eq!(out.value["truncated"], true);
        let got = names(&out.value);
        assert_eq!(got[0], e.abs(&format!("f{:03}.txt", GLOB_MAX_RESULTS + 19)));
        assert_eq!(got[GLOB_MAX_RESULTS - 1], e.abs("f020.txt"));
        assert!(out.text.contains("Showing the 100 most recently modified of 120"));

        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.md"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), e.root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.md"), e.root.join("link.md")).unwrap();
        let out = run(&Glob, &e, json!({"pattern": "**/*.md"})).await.unwrap();
        assert_eq!(out.value["numFiles"], 0);
        let err = run(&Glob, &e, json!({"pattern": "*.md", "path": "out"})).await.unwrap_err();
        assert!(matches!(err, ToolError::PathEscape(_)), "{err:?}");
    }

    fn grep_env() -> Env {
        let e = env();
        e.write("a.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
        e.write("src/lib.rs", "// hello world\npub fn hello() {}\nfn other() {}\n");
        e.write("src/notes.md", "Hello notes\nsecond\nthird\nhello again\n");
        e.write("bin.dat", "hello\0binary\n");
        e.write("ignored/x.rs", "hello ignored\n");
        e.write(".gitignore", "ignored/\n");
        set_mtime(&e.root.join("a.rs"), 1000);
        set_mtime(&e.root.join("src/lib.rs"), 3000);
        set_mtime(&e.root.join("src/notes.md"), 2000);
        e
    }

    #[tokio::test]
    async fn grep_files_with_matches_and_count() {
        let e = grep_env();
        let out = run(&Grep, &e, json!({"pattern": "hello"})).await.unwrap();
        assert_eq!(out.value["mode"], "files_with_matches");
        assert_eq!(names(&out.value), e.abss(&["src/lib.rs", "src/notes.md"]));
        assert_eq!(out.value["numFiles"], 2);
        assert!(out.text.starts_with("Found 2 files\n"));

        let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/lib.rs", "src/notes.md", "a.rs"]));
        let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "head_limit": 1})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/lib.rs"]));
        assert_eq!(out.value["truncated"], true);

        let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "count", "-i": true})).await.unwrap();
        assert_eq!(
            out.value,
            json!({"mode": "count", "counts": [
                {"file": e.abs("a.rs"), "count": 1},
                {"file": e.abs("src/lib.rs"), "count": 2},
                {"file": e.abs("src/notes.md"), "count": 2},
            ], "numMatches": 5, "numFiles": 3, "truncated": false})
        );
        assert!(out.text.contains("Found 5 matching lines in 3 files."));

        let out = run(&Grep, &e, json!({"pattern": "zzz"})).await.unwrap();
        assert_eq!(out.text, "No files found");
        assert_eq!(out.value["filenames"], json!([]));
    }

    #[tokio::test]
    async fn grep_content_with_context_and_line_numbers() {
        let e = grep_env();
        let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "content", "path": "src"})).await.unwrap();
        let lib = e.abs("src/lib.rs");
        let notes = e.abs("src/notes.md");
        let expected = format!("{lib}:1:// hello world\n{lib}:2:pub fn hello() {{}}\n{notes}:4:hello again");
        assert_eq!(out.value, json!({"mode": "content", "content": expected, "numLines": 3, "truncated": false}));
        assert_eq!(out.text, expected);

        let out = run(
            &Grep,
            &e,
            json!({"pattern": "^hello", "output_mode": "content", "path": "src/notes.md", "-i": true, "-n": false}),
        )
        .await
        .unwrap();
        assert_eq!(out.value["content"], format!("{notes}:Hello notes\n{notes}:hello again"));

        let out = run(
            &Grep,
            &e,
            json!({"pattern": "notes|again", "output_mode": "content", "path": "src/notes.md", "-A": 1}),
        )
        .await
        .unwrap();
        assert_eq!(out.value["content"], format!("{notes}:1:Hello notes\n{notes}-2-second\n--\n{notes}:4:hello again"));
        let out = run(&Grep, &e, json!({"pattern": "third", "output_mode": "content", "path": "src", "-C": 1}))
            .await
            .unwrap();
        assert_eq!(out.value["content"], format!("{notes}-2-second\n{notes}:3:third\n{notes}-4-hello again"));
        let out = run(&Grep, &e, json!({"pattern": "hello", "output_mode": "content", "-i": true, "head_limit": 2}))
            .await
            .unwrap();
        assert_eq!(out.value["numLines"], 2);
        assert_eq!(out.value["truncated"], true);

        // Multiline.
        let out = run(&Grep, &e, json!({"pattern": "second\\nthird", "output_mode": "content", "path": "src"}))
            .await
            .unwrap_err();
        assert!(matches!(&out, ToolError::InvalidInput(m) if m.contains("multiline")), "{out:?}");
        let out = run(
            &Grep,
            &e,
            json!({"pattern": "second.third", "output_mode": "content", "path": "src", "multiline": true}),
        )
        .await
        .unwrap();
        assert_eq!(out.value["content"], format!("{notes}:2:second\n{notes}:3:third"));
    }

    #[tokio::test]
    async fn grep_filters_and_errors() {
        let e = grep_env();
        let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "glob": "*.md"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/notes.md"]));
        let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "glob": "*.{md,toml}, a.*"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/notes.md", "a.rs"]));
        let out = run(&Grep, &e, json!({"pattern": "hello", "-i": true, "type": "rust"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["src/lib.rs", "a.rs"]));
        let err = run(&Grep, &e, json!({"pattern": "x", "type": "nosuchtype"})).await.unwrap_err();
        assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("nosuchtype")), "{err:?}");
        let err = run(&Grep, &e, json!({"pattern": "fn ("})).await.unwrap_err();
        assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("invalid regex")), "{err:?}");
        let err = run(&Grep, &e, json!({"pattern": "x", "output_mode": "lines"})).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput(_)));
        let err = run(&Grep, &e, json!({"pattern": "x", "path": "missing"})).await.unwrap_err();
        assert!(matches!(err, ToolError::NotFound(_)));
        // The binary file and the ignored directory are skipped; explicit paths are searched.
        let out = run(&Grep, &e, json!({"pattern": "binary|ignored"})).await.unwrap();
        assert_eq!(out.value["numFiles"], 0);
        let out = run(&Grep, &e, json!({"pattern": "hello", "path": "ignored"})).await.unwrap();
        assert_eq!(names(&out.value), e.abss(&["ignored/x.rs"]));
    }

    #[tokio::test]
    async fn grep_does_not_follow_symlinks_out() {
        let e = grep_env();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "hello secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), e.root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), e.root.join("s.txt")).unwrap();
        let out = run(&Grep, &e, json!({"pattern": "secret", "output_mode": "content"})).await.unwrap();
        assert_eq!(out.value["numLines"], 0, "{}", out.text);
        for p in ["out", "s.txt", "out/secret.txt", "../", "/etc/passwd"] {
            let err = run(&Grep, &e, json!({"pattern": "secret", "path": p})).await.unwrap_err();
            assert!(matches!(err, ToolError::PathEscape(_)), "{p}: {err:?}");
        }
    }

    #[tokio::test]
    async fn grep_honours_cancellation() {
        let e = grep_env();
        e.ctx.cancel.cancel();
        let err = run(&Grep, &e, json!({"pattern": "x"})).await.unwrap_err();
        assert!(matches!(err, ToolError::Cancelled(_)));
        let err = run(&Glob, &e, json!({"pattern": "x"})).await.unwrap_err();
        assert!(matches!(err, ToolError::Cancelled(_)));
    }
}
