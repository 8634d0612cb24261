//! The process's allocator, and the one module of this crate with `unsafe`: mimalloc, wrapped
//! so that what a CodeAct program allocates counts against its memory limit, and asked to hand
//! freed memory back to the system when a serving thread goes idle.
//!
//! Building a large catalog makes millions of small allocations; mimalloc does them markedly
//! faster than the system allocator, and its v2 line (the workspace's choice) returns a load's
//! freed scratch within ~100 ms, keeping the peak resident size down (see BENCHMARKS.md). It
//! does so while it allocates: a thread that then waits keeps the pages its last work freed.
//! A gateway's sessions come and go in bursts, so after a burst of closed sessions each
//! runtime thread kept tens of megabytes nobody used; [`idle`] returns them.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::time::{Duration, Instant};

#[cfg(feature = "codeact")]
#[global_allocator]
static GLOBAL: toolsearch_codeact::SandboxAllocator<mimalloc::MiMalloc> =
    toolsearch_codeact::SandboxAllocator(mimalloc::MiMalloc);

/// Without CodeAct no program's memory is counted: mimalloc alone.
#[cfg(not(feature = "codeact"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A thread returns freed memory at most this often (a forced collection visits every page
/// of the thread's heap: cheap once in a while, not on every park of a busy thread).
const RELEASE_EVERY: Duration = Duration::from_secs(1);

thread_local! {
    /// The thread ran something since it last returned memory.
    static WORKED: Cell<bool> = const { Cell::new(false) };
    /// When the thread last returned memory.
    static RELEASED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// For the runtime's `on_thread_unpark`: the thread is about to run tasks.
pub(crate) fn working() {
    WORKED.set(true);
}

/// For the runtime's `on_thread_park`: the thread has nothing to run. When it worked since it
/// last did so, and that was [`RELEASE_EVERY`] ago or more, it hands its freed pages (and the
/// process's abandoned and expired ones) back to the system.
pub(crate) fn idle() {
    if !WORKED.get() {
        return;
    }
    let now = Instant::now();
    if RELEASED
        .get()
        .is_some_and(|last| now.duration_since(last) < RELEASE_EVERY)
    {
        return;
    }
    WORKED.set(false);
    RELEASED.set(Some(now));
    // SAFETY: `mi_collect` takes no pointer and has no precondition: it only returns memory
    // that mimalloc itself holds free (the calling thread's heap, then abandoned segments and
    // arenas, under mimalloc's own locks). The global allocator is mimalloc (above), so the
    // memory it frees is memory it owns.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
