//! The ordered merge: results that helpers send in any order are put
//! together in walk order ([`InOrder`]), so the output is the one a single
//! thread would give, caps included ([`Merged`]).

use super::file_search::{FileSearch, Lines, Searched};
use super::*;

/// Results that may arrive out of order, merged in walk order.
pub(super) struct InOrder {
    merged: Merged,
    waiting: std::collections::BTreeMap<usize, Searched>,
    next: usize,
    full: bool,
}

impl InOrder {
    pub(super) fn new(merged: Merged) -> Self {
        Self { merged, waiting: Default::default(), next: 0, full: false }
    }

    /// The result of the `i`-th file of the walk. A file a helper could not
    /// keep all the lines of is searched again, with `searcher` and the room
    /// the output has left, when its turn comes.
    pub(super) fn put(&mut self, i: usize, found: Searched, search: &FileSearch<'_>, searcher: &mut Searcher) {
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
    pub(super) fn put_batch(
        &mut self,
        found: Vec<(usize, Searched)>,
        search: &FileSearch<'_>,
        searcher: &mut Searcher,
    ) {
        for (i, f) in found {
            self.put(i, f, search, searcher);
        }
    }

    /// How many files' results wait for a file before them.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The output is full: nothing more is wanted.
    pub(super) fn full(&self) -> bool {
        self.full
    }

    pub(super) fn into_inner(self) -> Merged {
        self.merged
    }
}

/// The files' results, merged in walk order.
pub(super) struct Merged {
    pub(super) mode: Mode,
    /// Context lines were asked for: `--` separates groups.
    pub(super) context: bool,
    pub(super) lines: Lines,
    pub(super) entry_cap: usize,
    pub(super) newest: BinaryHeap<Reverse<(Option<cap_std::time::SystemTime>, Reverse<String>)>>,
    pub(super) counts: Vec<(String, u64)>,
    pub(super) matched_files: usize,
    pub(super) skipped: usize,
    pub(super) entries_truncated: bool,
}

impl Merged {
    /// Add the next file's result; false once the output is full.
    pub(super) fn add(&mut self, found: Searched) -> bool {
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
