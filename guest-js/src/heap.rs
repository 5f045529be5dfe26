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
    used: usize,
}

impl HeapLimit {
    /// An allocator with nothing allocated yet.
    pub(crate) fn new() -> Self {
        HeapLimit { inner: RustAllocator, used: 0 }
    }

    fn admit(&mut self, extra: usize) -> bool {
        if self.used.saturating_add(extra) <= HEAP_LIMIT.with(|l| l.get()) {
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
            self.used += unsafe { RustAllocator::usable_size(p) } + ALLOC_OVERHEAD;
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
            self.used += unsafe { RustAllocator::usable_size(p) } + ALLOC_OVERHEAD;
        }
        p
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller passes a pointer from this allocator.
        let size = unsafe { RustAllocator::usable_size(ptr) } + ALLOC_OVERHEAD;
        self.used = self.used.saturating_sub(size);
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
            self.used = self.used.saturating_sub(old).saturating_add(new);
        }
        p
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: forwarded contract.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
