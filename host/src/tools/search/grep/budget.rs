//! What the searches share: helper threads (a process-wide budget), the
//! memory of output lines helpers hold until the merge takes them (one
//! budget per search), and how far the walk may run ahead of the merge.

use super::*;

/// What the helpers of one search may hold in output lines not yet merged
/// (a file's lines wait for the files before it in walk order): without a
/// bound, files full of matches found ahead of a slow one would hold many
/// times the output's own bound. Each line is charged what it takes in
/// memory, not only its text: many short lines cost more than their bytes.
#[derive(Clone)]
pub(in crate::tools::search) struct HoldBudget {
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
    pub(in crate::tools::search) const MAX: usize = GREP_MAX_BYTES;
    /// What an allocation may take beyond the bytes asked for (its rounding
    /// up to a size class), counted once per allocation.
    const ALLOC_SLACK: usize = 16;

    pub(in crate::tools::search) fn new(mode: Mode) -> Self {
        let line = std::mem::size_of::<String>() + Self::ALLOC_SLACK;
        let (weight, per_line) = match mode {
            // The record: its struct, and its path and text allocations.
            Mode::Matches => (2, line + std::mem::size_of::<GrepMatch>() + 2 * Self::ALLOC_SLACK),
            _ => (1, line),
        };
        Self { used: Default::default(), weight, per_line }
    }

    /// A share of the budget for one file's lines, empty at first.
    pub(in crate::tools::search) fn share(&self) -> Held {
        Held { budget: self.clone(), bytes: 0 }
    }
}

/// One file's share of a [`HoldBudget`], given back when dropped (merged,
/// or left out).
pub(in crate::tools::search) struct Held {
    budget: HoldBudget,
    bytes: usize,
}

impl Held {
    /// Count one more line of `len` bytes (without its terminator); false,
    /// with nothing counted, when the budget has no room for it.
    pub(in crate::tools::search) fn take(&mut self, len: usize) -> bool {
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

/// Threads Grep may add to the one it runs on, shared by every Grep of the
/// process: a share of what is taken back when dropped.
pub(in crate::tools::search) struct HelperThreads {
    pub(in crate::tools::search) count: usize,
}

/// Helper threads in use by every Grep of the process.
static HELPERS_IN_USE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl HelperThreads {
    /// Up to one helper per core (at most [`GREP_MAX_THREADS`]), within a
    /// process-wide budget of two per core; possibly none.
    pub(in crate::tools::search) fn take() -> Self {
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
pub(in crate::tools::search) const GREP_MAX_AHEAD: usize = 2048;
