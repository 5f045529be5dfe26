//! The guest's global allocator: dlmalloc, as Rust's standard library uses on
//! this target, except that its first region starts at the end of the static
//! data instead of at the next 64 KiB boundary of linear memory.
//!
//! The standard allocator takes memory only from `memory.grow`, so the bytes
//! between the end of the static data and the end of the initial memory (up
//! to 64 KiB) are never used, and the booted heap above them sits that much
//! higher. Both end up in the pre-initialised image every sandbox maps, and a
//! page of the image costs every sandbox its resident page however little of
//! it is used (the kernel maps the image's neighbouring pages on each read fault).

use std::alloc::{GlobalAlloc, Layout};
use std::arch::wasm32;
use std::cell::{Cell, UnsafeCell};

use dlmalloc::{Allocator, Dlmalloc};

/// A WebAssembly page, the unit of `memory.grow`.
const WASM_PAGE: usize = 64 << 10;
/// Where the first region may start: dlmalloc's chunk alignment on wasm32 is
/// two words; this is more than enough.
const REGION_ALIGN: usize = 16;

extern "C" {
    /// The first byte past the static data and the stack (set by the linker).
    static __heap_base: u8;
    /// The end of the initial memory (set by the linker).
    static __heap_end: u8;
}

/// Memory for dlmalloc: first the unused tail of the initial memory, then
/// whole pages from `memory.grow`, which follow it and so extend that region.
struct System {
    tail_claimed: Cell<bool>,
}

impl System {
    /// The unused tail of the initial memory, once: `(start, length)`.
    fn take_tail(&self) -> Option<(usize, usize)> {
        if self.tail_claimed.replace(true) {
            return None;
        }
        // Only the symbol's address is taken; the byte is not read.
        let start = std::ptr::addr_of!(__heap_base) as usize;
        let start = start.checked_next_multiple_of(REGION_ALIGN)?;
        // The initial memory's end, not the current one: pages grown since
        // (by anything) lie above it.
        let end = std::ptr::addr_of!(__heap_end) as usize;
        (end > start).then(|| (start, end - start))
    }
}

// SAFETY: regions are handed out once each and never overlap: the tail lies
// below the initial memory's end (`__heap_end`, whatever grew the memory
// before the first allocation) and every grown page above it. Memory only
// grows here, so `free` and `remap` refuse (as the standard allocator does).
unsafe impl Allocator for System {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let tail = self.take_tail();
        let have = tail.map_or(0, |(_, len)| len);
        let pages = size.saturating_sub(have).div_ceil(WASM_PAGE);
        let grown = if pages == 0 { None } else { Some(wasm32::memory_grow(0, pages)) };
        match (tail, grown) {
            // The tail alone is enough, or growing failed: the tail is still
            // a region (dlmalloc keeps it and fails this one request).
            (Some((start, len)), None) | (Some((start, len)), Some(usize::MAX)) => (start as *mut u8, len, 0),
            (None, Some(usize::MAX)) | (None, None) => (std::ptr::null_mut(), 0, 0),
            (tail, Some(prev)) => {
                let base = prev * WASM_PAGE;
                let mut len = pages * WASM_PAGE;
                // A region must not reach the very top of the address space
                // (a pointer may not wrap to 0), as in the standard allocator.
                if base.wrapping_add(len) == 0 {
                    len -= 16;
                }
                match tail {
                    // The grown pages follow the tail: one region.
                    Some((start, tail_len)) if start + tail_len == base => (start as *mut u8, tail_len + len, 0),
                    _ => (base as *mut u8, len, 0),
                }
            }
        }
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        std::ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        // The tail was never written: the linker places nothing between
        // `__heap_base` and `__heap_end`, and `memory.grow` (the only other
        // way to memory) adds pages above the end. Grown pages are zero.
        true
    }

    fn page_size(&self) -> usize {
        WASM_PAGE
    }
}

/// The global allocator (see the module's documentation).
struct Heap(UnsafeCell<Dlmalloc<System>>);

// SAFETY: the guest is single-threaded (wasm32 without the atomics feature),
// so the allocator is never used from two threads.
unsafe impl Sync for Heap {}

#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new(Dlmalloc::new_with_allocator(System { tail_claimed: Cell::new(false) })));

// SAFETY: forwards to dlmalloc, which upholds `GlobalAlloc`'s contract; the
// guest is single-threaded and dlmalloc never re-enters the global allocator.
// While a snapshot runs, allocations come from the snapshot's scratch area
// instead (which upholds the same contract for the few lists a snapshot
// moves), so that dlmalloc's state, part of what is copied, stays as it was.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if crate::snapshot::active() {
            return crate::snapshot::alloc(layout.size(), layout.align());
        }
        // SAFETY: see the impl.
        unsafe { (*self.0.get()).malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if crate::snapshot::active() {
            let p = crate::snapshot::alloc(layout.size(), layout.align());
            if !p.is_null() {
                // SAFETY: `p` holds `layout.size()` bytes.
                unsafe { p.write_bytes(0, layout.size()) };
            }
            return p;
        }
        // SAFETY: see the impl.
        unsafe { (*self.0.get()).calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if crate::snapshot::owns(ptr) {
            return crate::snapshot::free();
        }
        // SAFETY: see the impl; `ptr` came from this allocator with `layout`.
        unsafe { (*self.0.get()).free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if crate::snapshot::active() || crate::snapshot::owns(ptr) {
            // SAFETY: `new_size` with `layout`'s alignment is a valid layout
            // (GlobalAlloc::realloc's contract).
            let new = unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
            if !new.is_null() {
                // SAFETY: both blocks hold at least the smaller size and do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
                // SAFETY: `ptr` came from this allocator with `layout`.
                unsafe { self.dealloc(ptr, layout) };
            }
            return new;
        }
        // SAFETY: see the impl; `ptr` came from this allocator with `layout`.
        unsafe { (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size) }
    }
}
