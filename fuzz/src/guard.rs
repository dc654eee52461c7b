//! The memory guard: a global allocator (install it with `#[global_allocator]` in the binary
//! that fuzzes) that refuses an allocation larger than a few hundred MiB, or one that would
//! take the process past a total, and records the refusal against the case running on the
//! thread. An input of a few KiB that makes a parser ask for that much is a finding: the
//! parser trusted a size it read. A fallible allocation (`try_reserve`, [`tuccompi::filled`])
//! then fails and the harness reports the case; an infallible one aborts the process, so the
//! guard writes the case's input to the findings folder before it refuses.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default limit of one allocation (MiB); `TUCCOMPI_FUZZ_ALLOC_MIB` changes it.
pub const DEFAULT_ALLOC_MIB: usize = 256;
/// Bytes the whole process may hold at once (every test thread together).
const TOTAL: usize = 3 << 30;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_ALLOC_MIB << 20);
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A case as the guard knows it: its input (pointer, length) and the hook that saves it.
type Case = (*const u8, usize, fn(&[u8], usize));

thread_local! {
    /// The case running on this thread, set by the harness around each case.
    static CASE: Cell<Option<Case>> = const { Cell::new(None) };
    /// The largest allocation refused on this thread since the harness last asked.
    static REFUSED: Cell<usize> = const { Cell::new(0) };
    /// Set while the guard itself runs the hook (its own allocations are not checked).
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// The allocator: [`System`]'s, with the limits above.
#[derive(Debug)]
pub struct Guard;

impl Guard {
    /// Whether a block of `size` bytes may be had, `grow` of them new to the process.
    fn admit(&self, size: usize, grow: usize) -> bool {
        if BUSY.try_with(Cell::get).unwrap_or(true) {
            LIVE.fetch_add(grow, Ordering::Relaxed);
            return true;
        }
        let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
        if size <= LIMIT.load(Ordering::Relaxed) && live <= TOTAL {
            return true;
        }
        LIVE.fetch_sub(grow, Ordering::Relaxed);
        let _ = REFUSED.try_with(|r| r.set(r.get().max(size)));
        // Save the input now: an infallible allocation aborts as soon as this returns.
        if let Ok(Some((ptr, len, hook))) = CASE.try_with(Cell::get) {
            let _ = BUSY.try_with(|b| b.set(true));
            // SAFETY: the harness sets `CASE` to an input that outlives the case, and clears
            // it before the input is dropped.
            hook(unsafe { std::slice::from_raw_parts(ptr, len) }, size);
            let _ = BUSY.try_with(|b| b.set(false));
        }
        false
    }
}

// SAFETY: every block comes from `System` and goes back to it with its own layout; the guard
// only counts and refuses.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size(), layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size(), layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !self.admit(new_size, new_size - layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller's new size.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            if new_size > layout.size() {
                LIVE.fetch_sub(new_size - layout.size(), Ordering::Relaxed);
            }
        } else if new_size < layout.size() {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        p
    }
}

/// Set the limit of one allocation, in bytes.
pub fn set_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The limit of one allocation, in bytes.
pub fn limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Mark `input` as the case running on this thread until [`end_case`]; `hook` saves it if the
/// guard refuses an allocation meanwhile (it gets the input and the size refused).
pub(crate) fn begin_case(input: &[u8], hook: fn(&[u8], usize)) {
    let _ = REFUSED.try_with(|r| r.set(0));
    let _ = CASE.try_with(|c| c.set(Some((input.as_ptr(), input.len(), hook))));
}

/// End the case [`begin_case`] marked: the largest allocation refused during it, if any.
pub(crate) fn end_case() -> Option<usize> {
    let _ = CASE.try_with(|c| c.set(None));
    REFUSED
        .try_with(|r| r.replace(0))
        .ok()
        .filter(|&size| size > 0)
}
