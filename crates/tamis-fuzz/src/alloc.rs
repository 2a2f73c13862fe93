//! A counting global allocator for the fuzzer and the byte-flipping test (a binary has one global
//! allocator, so each installs this with `#[global_allocator]`).
//!
//! It tracks live bytes and their peak since [`reset_peak`], so a run can assert that a hostile
//! input never made tamis hold more than a budget. A single request above [`set_cap`] is not
//! attempted: [`set_on_over_cap`]'s hook runs (the fuzzer saves the input there) and the process
//! aborts, as it would have on a failed allocation — but with the input kept.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::OnceLock;

/// Counts live bytes and the peak since the last reset.
pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static CAP: AtomicUsize = AtomicUsize::new(usize::MAX);
static ON_OVER_CAP: OnceLock<fn(usize)> = OnceLock::new();

/// Bytes allocated and not yet freed.
pub fn current() -> usize {
    CURRENT.load(SeqCst)
}

/// Starts a measurement: the peak becomes the current live bytes, which are returned.
pub fn reset_peak() -> usize {
    let now = CURRENT.load(SeqCst);
    PEAK.store(now, SeqCst);
    now
}

/// The highest live bytes since [`reset_peak`] returned `base`, minus `base`.
pub fn peak_since(base: usize) -> usize {
    PEAK.load(SeqCst).saturating_sub(base)
}

/// Refuses single allocations above `bytes` (see the module docs).
pub fn set_cap(bytes: usize) {
    CAP.store(bytes, SeqCst);
}

/// What to run before aborting on a request above the cap (once per process).
pub fn set_on_over_cap(hook: fn(usize)) {
    let _ = ON_OVER_CAP.set(hook);
}

fn counted(p: *mut u8, size: usize) -> *mut u8 {
    if !p.is_null() {
        let now = CURRENT.fetch_add(size, SeqCst) + size;
        PEAK.fetch_max(now, SeqCst);
    }
    p
}

fn check_cap(size: usize) {
    if size > CAP.load(SeqCst) {
        // Lift the cap so that the hook may allocate, then stop: this request would be the
        // unbounded allocation the fuzzer is looking for.
        CAP.store(usize::MAX, SeqCst);
        if let Some(hook) = ON_OVER_CAP.get() {
            hook(size);
        }
        std::process::abort();
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counters
// are plain atomics and never affect the pointers returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check_cap(layout.size());
        // SAFETY: forwarded from our caller, who upholds `GlobalAlloc::alloc`'s contract.
        counted(unsafe { System.alloc(layout) }, layout.size())
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was returned by `System` for `layout` (every method forwards to it).
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), SeqCst);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check_cap(layout.size());
        // SAFETY: as in `alloc`.
        counted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check_cap(new_size);
        // SAFETY: `ptr` and `layout` come from `System` (see `dealloc`); the caller upholds the
        // rest of `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                counted(p, new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, SeqCst);
            }
        }
        p
    }
}
