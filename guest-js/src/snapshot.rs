//! The `snapshot` export: the guest's linear memory copied out between
//! evaluations, and copied into a fresh instance to continue from there.
//!
//! The host drives it (`begin`, then `read`s or `grow` and `write`s, then
//! `end`) only between evaluations, when nothing of the guest is running:
//! the shadow stack is then dead, and everything else the guest is (the
//! QuickJS heap, the allocator's state, every static) lies in linear memory.
//! The one mutable global, the stack pointer, is back at the stack's top.
//!
//! While a snapshot runs, allocations (the lists the canonical ABI moves in
//! and out) come from a scratch area of static memory instead of the global
//! allocator, whose state is what is being copied. The scratch area and the
//! stack are the two ranges the host leaves out of a snapshot ([`Layout`]).

use std::arch::wasm32;
use std::cell::{Cell, UnsafeCell};

use crate::exports::wrepl::sandbox::snapshot::Layout;

/// A WebAssembly page, the unit of `memory.grow`.
const WASM_PAGE: u64 = 64 << 10;

/// Bytes of the scratch area: the largest list `read` returns or `write` takes.
pub(crate) const SCRATCH: usize = 256 << 10;

extern "C" {
    /// The lowest byte of the shadow stack (set by the linker).
    static __stack_low: u8;
    /// One past the highest byte of the shadow stack (set by the linker).
    static __stack_high: u8;
}

/// The scratch area and its state. Page-aligned, so that the range the host
/// leaves out is whole pages.
#[repr(C, align(4096))]
struct Scratch {
    /// True between `begin` and `end`.
    active: Cell<bool>,
    /// True when `begin` was asked to restore into this (fresh) instance.
    restoring: Cell<bool>,
    /// Bytes of `buf` handed out since the last time nothing was live.
    used: Cell<usize>,
    /// Allocations from `buf` not yet freed.
    live: Cell<usize>,
    buf: UnsafeCell<[u8; SCRATCH]>,
}

// SAFETY: the guest is single-threaded (wasm32 without the atomics feature).
unsafe impl Sync for Scratch {}

static AREA: Scratch = Scratch {
    active: Cell::new(false),
    restoring: Cell::new(false),
    used: Cell::new(0),
    live: Cell::new(0),
    buf: UnsafeCell::new([0; SCRATCH]),
};

fn area_range() -> (usize, usize) {
    let low = std::ptr::addr_of!(AREA) as usize;
    (low, low + std::mem::size_of::<Scratch>())
}

/// Whether allocations go to the scratch area now.
pub(crate) fn active() -> bool {
    AREA.active.get()
}

/// Whether `ptr` was handed out by [`alloc`] (its free is a no-op there).
pub(crate) fn owns(ptr: *mut u8) -> bool {
    let (low, high) = area_range();
    (low..high).contains(&(ptr as usize))
}

/// An allocation from the scratch area (null when it does not fit).
pub(crate) fn alloc(size: usize, align: usize) -> *mut u8 {
    if AREA.live.get() == 0 {
        AREA.used.set(0);
    }
    let base = AREA.buf.get() as usize;
    let Some(start) = (base + AREA.used.get()).checked_next_multiple_of(align.max(1)) else {
        return std::ptr::null_mut();
    };
    let end = start + size;
    if end > base + SCRATCH {
        return std::ptr::null_mut();
    }
    AREA.used.set(end - base);
    AREA.live.set(AREA.live.get() + 1);
    std::ptr::with_exposed_provenance_mut(start)
}

/// Free a scratch allocation.
pub(crate) fn free() {
    AREA.live.set(AREA.live.get().saturating_sub(1));
}

/// Leave snapshot mode, whatever the host did before (`init` and `eval`
/// call this, so that a snapshot never outlives its `end`).
pub(crate) fn leave() {
    AREA.active.set(false);
    AREA.restoring.set(false);
}

/// The `begin` export.
pub(crate) fn begin(restore: bool) -> Result<Layout, String> {
    if restore && crate::eval::initialised() {
        return Err("a snapshot is only restored into a fresh instance".into());
    }
    AREA.active.set(true);
    AREA.restoring.set(restore);
    AREA.live.set(0);
    let (scratch_low, scratch_high) = area_range();
    Ok(Layout {
        memory_bytes: wasm32::memory_size(0) as u64 * WASM_PAGE,
        stack_low: std::ptr::addr_of!(__stack_low) as u32,
        stack_high: std::ptr::addr_of!(__stack_high) as u32,
        scratch_low: scratch_low as u32,
        scratch_high: scratch_high as u32,
        chunk: SCRATCH as u32,
    })
}

/// Whether `[offset, offset + len)` lies in memory and outside the stack
/// and the scratch area.
fn writable(offset: u32, len: usize) -> bool {
    let start = offset as usize;
    let Some(end) = start.checked_add(len) else { return false };
    let memory = wasm32::memory_size(0) as u64 * WASM_PAGE;
    let (scratch_low, scratch_high) = area_range();
    let stack = (std::ptr::addr_of!(__stack_low) as usize, std::ptr::addr_of!(__stack_high) as usize);
    let overlaps = |(low, high): (usize, usize)| start < high && low < end;
    (end as u64) <= memory && !overlaps((scratch_low, scratch_high)) && !overlaps(stack)
}

/// The `read` export: `len` bytes at `offset` (cut at the end of memory).
pub(crate) fn read(offset: u32, len: u32) -> Vec<u8> {
    if !AREA.active.get() {
        return Vec::new();
    }
    let memory = wasm32::memory_size(0) as u64 * WASM_PAGE;
    let start = u64::from(offset).min(memory);
    let len = u64::from(len).min(memory - start).min(SCRATCH as u64) as usize;
    let src: *const u8 = std::ptr::with_exposed_provenance(start as usize);
    // SAFETY: `[start, start + len)` lies inside linear memory (checked
    // above); every byte of linear memory is readable.
    unsafe { std::slice::from_raw_parts(src, len) }.to_vec()
}

/// The `grow` export: grow memory to at least `bytes` (restore only).
pub(crate) fn grow(bytes: u64) -> bool {
    if !AREA.restoring.get() {
        return false;
    }
    let have = wasm32::memory_size(0) as u64;
    let want = bytes.div_ceil(WASM_PAGE);
    want <= have || wasm32::memory_grow(0, (want - have) as usize) != usize::MAX
}

/// The `write` export: copy `bytes` to `offset` (restore only).
pub(crate) fn write(offset: u32, bytes: Vec<u8>) -> bool {
    if !AREA.restoring.get() || !writable(offset, bytes.len()) {
        return false;
    }
    let dst: *mut u8 = std::ptr::with_exposed_provenance_mut(offset as usize);
    // SAFETY: the destination lies in linear memory outside the stack and
    // the scratch area that holds `bytes` (checked by `writable`); nothing
    // else of the guest runs while a snapshot is restored.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
    true
}
