//! The JavaScript heap: the allocator QuickJS runs on, which enforces the
//! sandbox's memory limit itself (QuickJS's own limit stays off) so that a
//! refused allocation can be told apart, and the latch that records a heap
//! exhausted beyond recovery.

use std::cell::Cell;

use rquickjs::allocator::{Allocator, RustAllocator};

thread_local! {
    /// Latched when the JavaScript heap is exhausted (see [`HeapLimit`]);
    /// never cleared: the context is unusable from then on.
    static HEAP_EXHAUSTED: Cell<bool> = const { Cell::new(false) };
    /// The JavaScript heap limit in bytes, set by `init` (unlimited while booting).
    static HEAP_LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
    /// Bytes in use: QuickJS's allocations, and the working memory natives
    /// hold while they run (see [`charge`]).
    static USED: Cell<usize> = const { Cell::new(0) };
}

/// Working memory a native holds against the heap limit: released on drop.
pub(crate) struct Charge(usize);

impl Drop for Charge {
    fn drop(&mut self) {
        USED.with(|u| u.set(u.get().saturating_sub(self.0)));
    }
}

/// Count `bytes` of a native's working memory (Rust buffers, which QuickJS
/// does not see) against the heap limit, or `None` when they do not fit:
/// a native that needs more memory than the heap has left fails with an
/// error instead of taking the guest's linear memory past its cap (a trap
/// that would lose the context). Never latches heap exhaustion.
pub(crate) fn charge(bytes: usize) -> Option<Charge> {
    let limit = HEAP_LIMIT.with(Cell::get);
    USED.with(|u| {
        let next = u.get().checked_add(bytes).filter(|n| *n <= limit)?;
        u.set(next);
        Some(Charge(bytes))
    })
}

/// The heap limit and the bytes in use, for messages.
pub(crate) fn usage() -> (usize, usize) {
    (HEAP_LIMIT.with(Cell::get), USED.with(Cell::get))
}

/// A refused allocation smaller than this means the heap is full to the
/// brim: QuickJS can no longer allocate even its own error objects (it then
/// throws `null`), and its state after such failures is not trustworthy.
/// Larger refusals (a huge string or array) leave room and stay catchable.
const EXHAUSTED_BELOW: usize = 16 << 10;

/// Bytes of bookkeeping counted per allocation (the allocator's header).
const ALLOC_OVERHEAD: usize = 8;

/// Whether the heap is exhausted: no more JavaScript may run in this context.
pub(crate) fn heap_exhausted() -> bool {
    HEAP_EXHAUSTED.with(|h| h.get())
}

/// Set the heap limit from the sandbox's configuration (`0`: unlimited).
pub(crate) fn set_limit(memory_limit: u64) {
    HEAP_LIMIT.with(|l| {
        l.set(match memory_limit {
            0 => usize::MAX,
            n => n.min(usize::MAX as u64) as usize,
        })
    });
}

/// The QuickJS heap allocator: Rust's allocator with the heap limit enforced
/// here (instead of by QuickJS) so that a refusal can be told apart: a small
/// one latches [`HEAP_EXHAUSTED`].
pub(crate) struct HeapLimit {
    inner: RustAllocator,
}

impl HeapLimit {
    /// An allocator with nothing allocated yet.
    pub(crate) fn new() -> Self {
        USED.with(|u| u.set(0));
        HeapLimit { inner: RustAllocator }
    }

    fn admit(&mut self, extra: usize) -> bool {
        if USED.with(Cell::get).saturating_add(extra) <= HEAP_LIMIT.with(|l| l.get()) {
            return true;
        }
        if extra < EXHAUSTED_BELOW {
            HEAP_EXHAUSTED.with(|h| h.set(true));
        }
        false
    }
}

unsafe impl Allocator for HeapLimit {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(size.saturating_add(ALLOC_OVERHEAD)) {
            return std::ptr::null_mut();
        }
        let p = self.inner.alloc(size);
        if !p.is_null() {
            // SAFETY: `p` was just returned by the inner allocator.
            let n = unsafe { RustAllocator::usable_size(p) } + ALLOC_OVERHEAD;
            USED.with(|u| u.set(u.get() + n));
        }
        p
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        if !self.admit(count.saturating_mul(size).saturating_add(ALLOC_OVERHEAD)) {
            return std::ptr::null_mut();
        }
        let p = self.inner.calloc(count, size);
        if !p.is_null() {
            // SAFETY: `p` was just returned by the inner allocator.
            let n = unsafe { RustAllocator::usable_size(p) } + ALLOC_OVERHEAD;
            USED.with(|u| u.set(u.get() + n));
        }
        p
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller passes a pointer from this allocator.
        let size = unsafe { RustAllocator::usable_size(ptr) } + ALLOC_OVERHEAD;
        USED.with(|u| u.set(u.get().saturating_sub(size)));
        // SAFETY: as above.
        unsafe { self.inner.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a pointer from this allocator.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on failure the old block is left intact.
        let p = unsafe { self.inner.realloc(ptr, new_size) };
        if !p.is_null() {
            // SAFETY: `p` was just returned by the inner allocator.
            let new = unsafe { RustAllocator::usable_size(p) };
            USED.with(|u| u.set(u.get().saturating_sub(old).saturating_add(new)));
        }
        p
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: forwarded contract.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
