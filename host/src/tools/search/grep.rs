//! `Grep`: ripgrep's searcher over the workspace walker — content, files
//! with matches or counts, with context, caps and cancellation.

use super::*;

/// What `Grep` returns (its `output_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
pub(super) enum Mode {
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
    // Matching lines as records.
    #[serde(rename = "matches")]
    Matches,
}

/// One matching line, in `matches` mode.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct GrepMatch {
    /// The file's absolute path.
    file: String,
    /// The 1-based line number.
    line: u64,
    /// The line, without its terminator (cut past 2000 characters).
    text: String,
}

/// Matching lines of one file, in `count` mode.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct FileCount {
    /// The file's absolute path.
    file: String,
    /// How many of its lines match.
    count: u64,
}

/// What [`Grep`] returns, by `output_mode`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(tag = "mode")]
pub(crate) enum GrepOutput {
    /// Matching lines as text.
    #[serde(rename = "content")]
    Content {
        /// `path:line:text` for matches, `path-line-text` for context lines, `--` between groups.
        content: String,
        /// Lines in `content`.
        #[serde(rename = "numLines")]
        num_lines: u64,
        /// The output stopped at a bound (head_limit or the size bounds).
        truncated: bool,
    },
    /// Paths of matching files.
    #[serde(rename = "files_with_matches")]
    Files {
        /// Absolute paths, most recently modified first.
        filenames: Vec<String>,
        /// How many paths `filenames` holds.
        #[serde(rename = "numFiles")]
        num_files: u64,
        /// More files matched than are listed.
        truncated: bool,
    },
    /// Matching lines per file.
    #[serde(rename = "count")]
    Count {
        /// One entry per matching file.
        counts: Vec<FileCount>,
        /// Matching lines in all listed files.
        #[serde(rename = "numMatches")]
        num_matches: u64,
        /// How many files `counts` holds.
        #[serde(rename = "numFiles")]
        num_files: u64,
        /// More files matched than are listed.
        truncated: bool,
    },
    /// Matching lines as records.
    #[serde(rename = "matches")]
    Matches {
        /// One record per matching line.
        matches: Vec<GrepMatch>,
        /// How many records `matches` holds.
        #[serde(rename = "numMatches")]
        num_matches: u64,
        /// The output stopped at a bound (head_limit or the size bounds).
        truncated: bool,
    },
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
///   "numFiles","truncated"}` counting matching lines per file;
/// - `matches`: `{"mode":"matches","matches":[{"file","line","text"}],
///   "numMatches","truncated"}`, one record per matching line (no context).
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
    /// "files_with_matches" (default): paths of matching files; "content": matching lines; "count": matching lines per file; "matches": matching lines as {file, line, text} records.
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
    type Output = GrepOutput;
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str =
        "Search file contents with a regular expression (ripgrep / Rust regex syntax, e.g. \"fn\\s+main\", \
         \"log.*Error\"; escape literal braces and dots). `path` is a directory (default: the working \
         directory) or a single file; filter files with `glob` (e.g. \"*.rs\", \"*.{ts,tsx}\") or `type` \
         (ripgrep type names: rust, js, ts, py, go, ...). output_mode \"files_with_matches\" (default) lists \
         matching files newest first, \"content\" shows matching lines as path:line:text with optional \
         context (-A/-B/-C), \"count\" counts matching lines per file, \"matches\" returns matching lines \
         as {file, line, text} records. Set multiline to let patterns span \
         lines (`.` then matches newlines too). Respects .gitignore; skips hidden and binary files.";
    const READ_ONLY: bool = true;
    const PATH_FIELD: &'static str = "path";
    const ALSO_CHECKED_AS: Option<&'static str> = Some("Read");

    fn run(input: GrepInput, ctx: &ToolContext) -> Result<Out<GrepOutput>, ToolError> {
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
pub(super) fn split_globs(s: &str) -> Vec<String> {
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

/// Content- and matches-mode output across files.
struct Lines {
    lines: Vec<String>,
    /// The records of matches mode (one per entry of `lines`).
    found: Vec<GrepMatch>,
    bytes: usize,
    limit: usize,
    max_bytes: usize,
    truncated: bool,
    /// A helper's output, counted against what every helper of the search
    /// may hold until the merge takes it (`None`: the merge's own output,
    /// or a search on the merging thread).
    held: Option<Held>,
    /// The shared hold was full: this file's lines were not all kept, and
    /// the merge searches it again.
    over_held: bool,
}

impl Lines {
    /// Empty output of at most `limit` lines and `max_bytes` bytes.
    fn new(limit: usize, max_bytes: usize) -> Self {
        Self {
            lines: Vec::new(),
            found: Vec::new(),
            bytes: 0,
            limit,
            max_bytes,
            truncated: false,
            held: None,
            over_held: false,
        }
    }

    /// Room left: lines and bytes.
    fn room(&self) -> (usize, usize) {
        (self.limit.saturating_sub(self.lines.len()), self.max_bytes.saturating_sub(self.bytes))
    }

    /// Add a line; false (and `truncated`, or `over_held`) when the output
    /// is full.
    fn push(&mut self, line: String) -> bool {
        if self.lines.len() >= self.limit || self.bytes + line.len() + 1 > self.max_bytes {
            self.truncated = true;
            return false;
        }
        if let Some(held) = &mut self.held {
            if !held.take(line.len()) {
                self.over_held = true;
                return false;
            }
        }
        self.bytes += line.len() + 1;
        self.lines.push(line);
        true
    }
}

/// What the helpers of one search may hold in output lines not yet merged
/// (a file's lines wait for the files before it in walk order): without a
/// bound, files full of matches found ahead of a slow one would hold many
/// times the output's own bound. Each line is charged what it takes in
/// memory, not only its text: many short lines cost more than their bytes.
#[derive(Clone)]
pub(super) struct HoldBudget {
    used: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Bytes charged per byte of a line: matches mode keeps each line twice
    /// (the text and its record).
    weight: usize,
    /// Bytes charged per line besides its text: the `String` in the list,
    /// the allocator's rounding, and in matches mode the record.
    per_line: usize,
}

impl HoldBudget {
    /// Most bytes the helpers of one search hold at once in lines.
    pub(super) const MAX: usize = GREP_MAX_BYTES;
    /// What an allocation may take beyond the bytes asked for (its rounding
    /// up to a size class), counted once per allocation.
    const ALLOC_SLACK: usize = 16;

    pub(super) fn new(mode: Mode) -> Self {
        let line = std::mem::size_of::<String>() + Self::ALLOC_SLACK;
        let (weight, per_line) = match mode {
            // The record: its struct, and its path and text allocations.
            Mode::Matches => (2, line + std::mem::size_of::<GrepMatch>() + 2 * Self::ALLOC_SLACK),
            _ => (1, line),
        };
        Self { used: Default::default(), weight, per_line }
    }

    /// A share of the budget for one file's lines, empty at first.
    pub(super) fn share(&self) -> Held {
        Held { budget: self.clone(), bytes: 0 }
    }
}

/// One file's share of a [`HoldBudget`], given back when dropped (merged,
/// or left out).
pub(super) struct Held {
    budget: HoldBudget,
    bytes: usize,
}

impl Held {
    /// Count one more line of `len` bytes (without its terminator); false,
    /// with nothing counted, when the budget has no room for it.
    pub(super) fn take(&mut self, len: usize) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let n = (len + 1).saturating_mul(self.budget.weight).saturating_add(self.budget.per_line);
        let before = self.budget.used.fetch_add(n, SeqCst);
        if before.saturating_add(n) > HoldBudget::MAX {
            self.budget.used.fetch_sub(n, SeqCst);
            return false;
        }
        self.bytes += n;
        true
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What searching one file gave.
enum Searched {
    /// Left out without a trace: a binary file, one that is not where the
    /// walk saw it (a directory swapped for a symlink must not lead into
    /// wrepl's state or a hidden path), or one not searched after a stop.
    Hidden,
    /// It could not be opened or read (counted as skipped).
    Unreadable,
    /// A helper found more lines than the search's hold had room for: the
    /// merge searches the file again, in its turn.
    Again {
        /// The path relative to its root.
        rel: PathBuf,
        /// The absolute path.
        abs: PathBuf,
    },
    /// Searched.
    Found {
        /// The path shown.
        shown: String,
        /// Its modification time (missing times sort as oldest).
        mtime: Option<cap_std::time::SystemTime>,
        /// Matching lines.
        matches: u64,
        /// Its output lines (content and matches modes).
        out: Lines,
    },
}

/// What one search needs, shared by the searcher threads.
struct FileSearch<'a> {
    ws: &'a Workspace,
    root: usize,
    req: &'a GrepRequest,
    cancel: &'a CancellationToken,
}

impl FileSearch<'_> {
    /// Search the file at `rel` (shown as `abs`), keeping at most `room`
    /// (lines, bytes) of its output: what the whole output has left, so the
    /// file's lines and the output together stay within the output's bounds.
    /// A helper passes its search's `hold`, and its lines count against it.
    fn file(
        &self,
        searcher: &mut Searcher,
        rel: PathBuf,
        abs: PathBuf,
        room: (usize, usize),
        hold: Option<&HoldBudget>,
    ) -> Searched {
        let opened = Resolved { root: self.root, rel, abs };
        let file = match self.ws.open_walked(&opened) {
            Ok(Some(file)) => file,
            Ok(None) => return Searched::Hidden,
            Err(_) => return Searched::Unreadable,
        };
        let shown = show(&opened.abs);
        let mut out = Lines::new(room.0, room.1);
        out.held = hold.map(HoldBudget::share);
        let mut sink = FileSink {
            mode: self.req.mode,
            path: &shown,
            line_numbers: self.req.line_numbers,
            out: &mut out,
            matches: 0,
            binary: false,
            cancel: self.cancel,
        };
        let reader = CancelRead { inner: &file, cancel: self.cancel.clone() };
        let res = searcher.search_reader(&self.req.matcher, reader, &mut sink);
        let (matches, binary) = (sink.matches, sink.binary);
        // Only listed files are ordered by their modification time (most
        // files of a search match nothing: no `fstat` for them).
        let mtime = if matches > 0 && self.req.mode == Mode::Files {
            file.metadata().ok().and_then(|m| m.modified().ok())
        } else {
            None
        };
        match res {
            Err(_) if !self.cancel.is_cancelled() => Searched::Unreadable,
            _ if binary => Searched::Hidden,
            _ if out.over_held => Searched::Again { rel: opened.rel, abs: opened.abs },
            _ => Searched::Found { shown, mtime, matches, out },
        }
    }
}

/// Threads Grep may add to the one it runs on, shared by every Grep of the
/// process: a share of what is taken back when dropped.
pub(super) struct HelperThreads {
    pub(super) count: usize,
}

/// Helper threads in use by every Grep of the process.
static HELPERS_IN_USE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl HelperThreads {
    /// Up to one helper per core (at most [`GREP_MAX_THREADS`]), within a
    /// process-wide budget of two per core; possibly none.
    pub(super) fn take() -> Self {
        use std::sync::atomic::Ordering::SeqCst;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores < 2 {
            return Self { count: 0 };
        }
        let want = cores.min(GREP_MAX_THREADS);
        let budget = 2 * cores.min(GREP_MAX_THREADS);
        let before = HELPERS_IN_USE.fetch_add(want, SeqCst);
        let count = want.min(budget.saturating_sub(before));
        HELPERS_IN_USE.fetch_sub(want - count, SeqCst);
        Self { count }
    }
}

impl Drop for HelperThreads {
    fn drop(&mut self) {
        HELPERS_IN_USE.fetch_sub(self.count, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Most files searched ahead of the first one the merge still waits for.
pub(super) const GREP_MAX_AHEAD: usize = 2048;

/// Raises its flag if its thread unwinds (a helper that panicked).
struct PanicFlag<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// Results that may arrive out of order, merged in walk order.
struct InOrder {
    merged: Merged,
    waiting: std::collections::BTreeMap<usize, Searched>,
    next: usize,
    full: bool,
}

impl InOrder {
    fn new(merged: Merged) -> Self {
        Self { merged, waiting: Default::default(), next: 0, full: false }
    }

    /// The result of the `i`-th file of the walk. A file a helper could not
    /// keep all the lines of is searched again, with `searcher` and the room
    /// the output has left, when its turn comes.
    fn put(&mut self, i: usize, found: Searched, search: &FileSearch<'_>, searcher: &mut Searcher) {
        if self.full {
            return;
        }
        self.waiting.insert(i, found);
        #[cfg(test)]
        stall::saw_waiting(self.waiting.len());
        while let Some(mut found) = self.waiting.remove(&self.next) {
            self.next += 1;
            if let Searched::Again { rel, abs } = found {
                found = search.file(searcher, rel, abs, self.merged.lines.room(), None);
            }
            if !self.merged.add(found) {
                self.full = true;
                self.waiting.clear();
                return;
            }
        }
    }

    /// The results of a batch of files (see [`Self::put`]).
    fn put_batch(&mut self, found: Vec<(usize, Searched)>, search: &FileSearch<'_>, searcher: &mut Searcher) {
        for (i, f) in found {
            self.put(i, f, search, searcher);
        }
    }

    /// How many files' results wait for a file before them.
    fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The output is full: nothing more is wanted.
    fn full(&self) -> bool {
        self.full
    }

    fn into_inner(self) -> Merged {
        self.merged
    }
}

/// The files' results, merged in walk order.
struct Merged {
    mode: Mode,
    /// Context lines were asked for: `--` separates groups.
    context: bool,
    lines: Lines,
    entry_cap: usize,
    newest: BinaryHeap<Reverse<(Option<cap_std::time::SystemTime>, Reverse<String>)>>,
    counts: Vec<(String, u64)>,
    matched_files: usize,
    skipped: usize,
    entries_truncated: bool,
}

impl Merged {
    /// Add the next file's result; false once the output is full.
    fn add(&mut self, found: Searched) -> bool {
        let (shown, mtime, matches, out) = match found {
            Searched::Hidden => return true,
            // (Never here: `InOrder` searches such a file again first.
            // Counted as skipped rather than left out without a trace.)
            Searched::Unreadable | Searched::Again { .. } => {
                self.skipped += 1;
                return true;
            }
            Searched::Found { shown, mtime, matches, out } => (shown, mtime, matches, out),
        };
        if !out.lines.is_empty() {
            if self.context && !self.lines.lines.is_empty() && !self.lines.push("--".into()) {
                return false;
            }
            let mut found = out.found.into_iter();
            for line in out.lines {
                if !self.lines.push(line) {
                    return false;
                }
                if self.mode == Mode::Matches {
                    self.lines.found.extend(found.next());
                }
            }
        }
        if out.truncated {
            // The file alone filled its share of the output.
            self.lines.truncated = true;
            return false;
        }
        if matches == 0 {
            return true;
        }
        self.matched_files += 1;
        match self.mode {
            Mode::Content | Mode::Matches => {}
            Mode::Files => {
                self.newest.push(Reverse((mtime, Reverse(shown))));
                if self.newest.len() > self.entry_cap {
                    self.newest.pop();
                    self.entries_truncated = true;
                }
            }
            Mode::Count => {
                if self.counts.len() >= self.entry_cap {
                    self.entries_truncated = true;
                    return false;
                }
                self.counts.push((shown, matches));
            }
        }
        true
    }
}

/// The sink for one file (its own output; the merge puts files together).
struct FileSink<'a> {
    mode: Mode,
    path: &'a str,
    line_numbers: bool,
    out: &'a mut Lines,
    matches: u64,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl FileSink<'_> {
    fn line(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(strip_eol(bytes));
        let text = cut_line(&text, strip_eol(bytes).len());
        let line = match number.filter(|_| self.line_numbers) {
            Some(n) => format!("{}{sep}{n}{sep}{text}", self.path),
            None => format!("{}{sep}{text}", self.path),
        };
        if !self.out.push(line) {
            return false;
        }
        if self.mode == Mode::Matches {
            let line = number.unwrap_or(0);
            self.out.found.push(GrepMatch { file: self.path.to_string(), line, text: text.into_owned() });
        }
        true
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
            Mode::Content | Mode::Matches => {
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
        Ok(self.out.lines.is_empty() || self.out.push("--".into()))
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn grep(
    ws: &Workspace,
    cwd: &Path,
    req: GrepRequest,
    cancel: &CancellationToken,
) -> Result<Out<GrepOutput>, ToolError> {
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

    // What to search: nothing, one file, or a walk over a directory.
    let base_is_hidden = base_hidden(ws, &target);
    let walk = if base_is_hidden || is_file {
        None
    } else {
        let mut hidden = false;
        let overrides = match &req.glob {
            Some(g) if !g.trim().is_empty() => {
                let mut ob = OverrideBuilder::new(&target.abs);
                let globs = split_globs(g);
                if globs.len() > MAX_GREP_GLOBS {
                    return Err(ToolError::InvalidInput(format!(
                        "glob holds {} patterns; the limit is {MAX_GREP_GLOBS}",
                        globs.len()
                    )));
                }
                for g in globs {
                    check_glob(&g)?;
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
        Some(walker(ws, &target, WalkOpts { hidden, overrides, types }))
    };

    let searcher = SearcherBuilder::new()
        .line_number(req.mode == Mode::Matches || (req.mode == Mode::Content && req.line_numbers))
        .multi_line(req.multiline)
        .before_context(req.before)
        .after_context(req.after)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(GREP_HEAP_LIMIT))
        .clone();

    let limit = req.limit.unwrap_or(usize::MAX);
    let merged = Merged {
        mode: req.mode,
        context: req.before > 0 || req.after > 0,
        lines: Lines::new(limit.min(GREP_MAX_LINES), GREP_MAX_BYTES),
        entry_cap: limit.min(GREP_MAX_ENTRIES),
        newest: BinaryHeap::new(),
        counts: Vec::new(),
        matched_files: 0,
        skipped: 0,
        entries_truncated: false,
    };

    // The walk (this thread) hands files to helper threads and merges their
    // results in walk order, so the output is the same as one thread's
    // would be, caps included. Once the output is full, the walk and the
    // searches stop. Helpers come from a budget shared by every Grep of the
    // process (a script running many at once gets no more threads); without
    // one, or for a single file, this thread searches alone. The lines that
    // helpers found and the merge has not taken yet are bounded by one
    // `HoldBudget` (the output's own bound): a file whose lines do not fit
    // in it is searched again by this thread in its turn, so files full of
    // matches (one file hard-linked many times) cannot hold many times the
    // output bound in memory.
    let helpers = if walk.is_some() { HelperThreads::take() } else { HelperThreads { count: 0 } };
    let search = FileSearch { ws, root: target.root, req: &req, cancel };
    // Listing files: with two or more helpers the walk itself runs on them,
    // each searching the files it finds, as ripgrep does. The listing (the newest files, how
    // many matched, how many were skipped) does not depend on the order in
    // which files are found, unlike the other modes' output.
    let walk = match walk {
        Some(w) if req.mode == Mode::Files => {
            let merged = std::sync::Mutex::new(merged);
            for_each_file(w, helpers.count, cancel, || {
                let mut searcher = searcher.build();
                let (merged, search, base) = (&merged, &search, &target);
                move |ent: ignore::DirEntry| {
                    let Ok(sub) = ent.path().strip_prefix(&base.abs) else { return };
                    // (No output lines in this mode.)
                    let found = search.file(&mut searcher, base.rel.join(sub), ent.into_path(), (0, 0), None);
                    merged.lock().unwrap_or_else(|p| p.into_inner()).add(found);
                }
            });
            drop(helpers);
            return finish(req.mode, merged.into_inner().unwrap_or_else(|p| p.into_inner()), cancel);
        }
        w => w,
    };
    // The files to search: (path relative to the root, absolute path).
    let files: Box<dyn Iterator<Item = (PathBuf, PathBuf)>> = match walk {
        None if is_file && !base_is_hidden => Box::new(std::iter::once((target.rel.clone(), target.abs.clone()))),
        None => Box::new(std::iter::empty()),
        Some(w) => {
            let base = target.clone();
            Box::new(w.build().filter_map(move |ent| {
                let ent = ent.ok()?;
                if ent.depth() == 0 || !ent.file_type().is_some_and(|t| t.is_file()) {
                    return None;
                }
                let sub = ent.path().strip_prefix(&base.abs).ok()?;
                Some((base.rel.join(sub), ent.into_path()))
            }))
        }
    };
    let mut sequence = InOrder::new(merged);
    // This thread's searcher: every file when it searches alone, else the
    // files helpers could not keep the lines of.
    let mut own = searcher.build();
    // What a helper may keep of one file: the whole output's bounds.
    let room = (limit.min(GREP_MAX_LINES), GREP_MAX_BYTES);
    if helpers.count == 0 {
        for (i, (rel, abs)) in files.enumerate() {
            if sequence.full() || cancel.is_cancelled() {
                break;
            }
            sequence.put(i, Searched::Again { rel, abs }, &search, &mut own);
        }
    } else {
        let hold = HoldBudget::new(req.mode);
        // Files travel in batches: one hand-over (and wake-up) per batch, not per file.
        type Batch = Vec<(usize, PathBuf, PathBuf)>;
        let queue = 2 * helpers.count;
        let (work_tx, work_rx) = std::sync::mpsc::sync_channel::<Batch>(queue);
        let work_rx = std::sync::Mutex::new(work_rx);
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<Vec<(usize, Searched)>>(queue);
        let stop = std::sync::atomic::AtomicBool::new(false);
        // Set when a helper panics: the merge may then wait for a file
        // nobody will send, so the walk stops (and the scope re-raises).
        let failed = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..helpers.count {
                let (done_tx, work_rx, searcher, search, stop, hold, failed) =
                    (done_tx.clone(), &work_rx, &searcher, &search, &stop, &hold, &failed);
                scope.spawn(move || {
                    let _failed = PanicFlag(failed);
                    let mut searcher = searcher.build();
                    loop {
                        let job = work_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(batch) = job else { return };
                        let found = batch
                            .into_iter()
                            .map(|(i, rel, abs)| {
                                let found = if stop.load(std::sync::atomic::Ordering::Relaxed) {
                                    Searched::Hidden
                                } else {
                                    #[cfg(test)]
                                    stall::before_search(&abs);
                                    search.file(&mut searcher, rel, abs, room, Some(hold))
                                };
                                (i, found)
                            })
                            .collect();
                        if done_tx.send(found).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            let mut files = files.enumerate().peekable();
            'walk: while files.peek().is_some() {
                if sequence.full() || cancel.is_cancelled() {
                    break;
                }
                // The merge waits for a file a helper still searches (a
                // large or slow one): walk on only so far ahead of it, so
                // the results waiting for it stay bounded however many
                // files follow.
                while sequence.waiting() >= GREP_MAX_AHEAD && !sequence.full() && !cancel.is_cancelled() {
                    use std::sync::mpsc::RecvTimeoutError;
                    if failed.load(std::sync::atomic::Ordering::SeqCst) {
                        break 'walk;
                    }
                    #[cfg(test)]
                    stall::release();
                    match done_rx.recv_timeout(std::time::Duration::from_millis(100)) {
                        Ok(found) => sequence.put_batch(found, &search, &mut own),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break 'walk,
                    }
                }
                let job: Batch = files.by_ref().take(GREP_BATCH).map(|(i, (rel, abs))| (i, rel, abs)).collect();
                match work_tx.try_send(job) {
                    Ok(()) => {}
                    // The helpers are busy: this thread searches the batch
                    // itself (as a helper would, its lines within the
                    // hold), then walks on.
                    Err(std::sync::mpsc::TrySendError::Full(job)) => {
                        for (k, rel, abs) in job {
                            if sequence.full() || cancel.is_cancelled() {
                                break;
                            }
                            let found = search.file(&mut own, rel, abs, room, Some(&hold));
                            sequence.put(k, found, &search, &mut own);
                        }
                    }
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => break,
                }
                while let Ok(found) = done_rx.try_recv() {
                    sequence.put_batch(found, &search, &mut own);
                }
            }
            // Queued files are searched only while their output is wanted.
            if sequence.full() || cancel.is_cancelled() {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            drop(work_tx);
            // (Only a search held up by the test hook has this many waiting:
            // other tests' searches must not release it early.)
            #[cfg(test)]
            if sequence.waiting() >= GREP_MAX_AHEAD {
                stall::release();
            }
            for found in done_rx {
                sequence.put_batch(found, &search, &mut own);
            }
        });
    }
    drop(helpers);
    finish(req.mode, sequence.into_inner(), cancel)
}

/// The tool's output from the merged results of a search.
fn finish(mode: Mode, merged: Merged, cancel: &CancellationToken) -> Result<Out<GrepOutput>, ToolError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    let Merged { lines, newest, counts, matched_files, skipped, entries_truncated, .. } = merged;

    let note_skipped = |t: &mut String| {
        if skipped > 0 {
            t.push_str(&format!(
                "\n({skipped} file{} could not be read or exceeded the size limit and were skipped.)",
                if skipped == 1 { "" } else { "s" }
            ));
        }
    };
    let out = match mode {
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
            Out::new(GrepOutput::Content { content, num_lines: n as u64, truncated: lines.truncated }, text)
        }
        Mode::Matches => {
            let n = lines.lines.len();
            let mut text = if n == 0 { "No matches found".to_string() } else { lines.lines.join("\n") };
            if lines.truncated {
                text.push_str(&format!(
                    "\n… (output stopped after {n} matches; narrow the search with path, glob, type or head_limit)"
                ));
            }
            note_skipped(&mut text);
            let truncated = lines.truncated;
            Out::new(GrepOutput::Matches { matches: lines.found, num_matches: n as u64, truncated }, text)
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
            let num_files = files.len() as u64;
            Out::new(GrepOutput::Files { filenames: files, num_files, truncated: entries_truncated }, text)
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
            let num_files = counts.len() as u64;
            let counts = counts.into_iter().map(|(file, count)| FileCount { file, count }).collect();
            Out::new(GrepOutput::Count { counts, num_matches: total, num_files, truncated: entries_truncated }, text)
        }
    };
    Ok(out)
}

/// A test's hold on the merge: a helper about to search a file named
/// [`stall::NAME`] waits until the walking thread of a search with at least
/// [`GREP_MAX_AHEAD`] results waiting releases it (when it waits for results,
/// or has walked everything), so the files after it are searched while the
/// merge waits for it. Other tests' searches never have that many waiting.
#[cfg(test)]
pub(super) mod stall {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::{Condvar, Mutex};

    /// The name of the file a helper stalls on.
    pub(crate) const NAME: &str = "wrepl-test-stall.txt";
    static RELEASED: Mutex<bool> = Mutex::new(true);
    static CHANGED: Condvar = Condvar::new();
    /// How many times a helper stalled, since [`arm`].
    pub(crate) static STALLS: AtomicUsize = AtomicUsize::new(0);
    /// Most results that waited for the merge at once, in any search since [`arm`].
    pub(crate) static MAX_WAITING: AtomicUsize = AtomicUsize::new(0);

    /// The next search of [`NAME`] by a helper stalls.
    pub(crate) fn arm() {
        *RELEASED.lock().unwrap_or_else(|p| p.into_inner()) = false;
        STALLS.store(0, SeqCst);
        MAX_WAITING.store(0, SeqCst);
    }

    pub(crate) fn before_search(abs: &std::path::Path) {
        if abs.file_name().is_none_or(|n| n != NAME) {
            return;
        }
        STALLS.fetch_add(1, SeqCst);
        let mut released = RELEASED.lock().unwrap_or_else(|p| p.into_inner());
        while !*released {
            released = CHANGED.wait(released).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub(crate) fn release() {
        *RELEASED.lock().unwrap_or_else(|p| p.into_inner()) = true;
        CHANGED.notify_all();
    }

    pub(crate) fn saw_waiting(n: usize) {
        MAX_WAITING.fetch_max(n, SeqCst);
    }
}
