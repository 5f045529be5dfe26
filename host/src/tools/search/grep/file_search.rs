//! Searching one file: ripgrep's searcher over a file opened where the walk
//! saw it, into a sink that keeps the file's own output lines ([`Lines`]),
//! within the room the whole output has left and a helper's hold.

use super::budget::{Held, HoldBudget};
use super::*;

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
pub(super) struct Lines {
    pub(super) lines: Vec<String>,
    /// The records of matches mode (one per entry of `lines`).
    pub(super) found: Vec<GrepMatch>,
    bytes: usize,
    limit: usize,
    max_bytes: usize,
    pub(super) truncated: bool,
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
    pub(super) fn new(limit: usize, max_bytes: usize) -> Self {
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
    pub(super) fn room(&self) -> (usize, usize) {
        (self.limit.saturating_sub(self.lines.len()), self.max_bytes.saturating_sub(self.bytes))
    }

    /// Add a line; false (and `truncated`, or `over_held`) when the output
    /// is full.
    pub(super) fn push(&mut self, line: String) -> bool {
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

/// What searching one file gave.
pub(super) enum Searched {
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
pub(super) struct FileSearch<'a> {
    pub(super) ws: &'a Workspace,
    pub(super) root: usize,
    pub(super) req: &'a GrepRequest,
    pub(super) cancel: &'a CancellationToken,
}

impl FileSearch<'_> {
    /// Search the file at `rel` (shown as `abs`), keeping at most `room`
    /// (lines, bytes) of its output: what the whole output has left, so the
    /// file's lines and the output together stay within the output's bounds.
    /// A helper passes its search's `hold`, and its lines count against it.
    pub(super) fn file(
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
