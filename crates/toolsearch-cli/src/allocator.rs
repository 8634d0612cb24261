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
use std::sync::atomic::{AtomicI64, Ordering};
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

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_t`, mimalloc.h of the v2 line
/// that the workspace builds; the `libmimalloc-sys` crate names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Hands memory back to the system as soon as it is free, rather than 10 ms later (mimalloc's
/// default). For the one-shot commands: a large catalog is read, parsed and indexed in well
/// under a second, each stage freeing what the last one used, and with the delay the process
/// still held the catalog text and the parse's scratch when the indexes were built (100k
/// MCP-sized tools: 220 MB resident after parsing 80 MB of live data, 123 MB without the
/// delay; BENCHMARKS.md). `serve` keeps the delay: a gateway's requests free and reuse pages
/// all the time, and it returns idle memory itself (see [`idle`]).
pub(crate) fn purge_at_once() {
    // SAFETY: `mi_option_get`/`mi_option_set` take no pointer; they read and set one of
    // mimalloc's own options, which mimalloc reads at each purge decision.
    let usual = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
    if usual != 0 {
        USUAL_PURGE_DELAY.store(usual, Ordering::Relaxed);
    }
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
}

/// Back to mimalloc's own purge delay: for work that frees and reuses memory over and over,
/// as `eval`'s timed queries do (each query's result lists handed back to the system and
/// faulted in again cost BM25 a third of its median latency at 100k tools).
pub(crate) fn purge_as_usual() {
    // SAFETY: as in `purge_at_once`.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, USUAL_PURGE_DELAY.load(Ordering::Relaxed))
    };
}

/// The purge delay before [`purge_at_once`] (mimalloc's default, 10 ms, unless the
/// environment set another).
static USUAL_PURGE_DELAY: AtomicI64 = AtomicI64::new(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_after_eager_commit_delay_set_to_zero_and_back() {
        // mimalloc.h lists `mi_option_purge_delay` right after `mi_option_eager_commit_delay`
        // (which the crate names); its default is 10 ms.
        assert_eq!(
            PURGE_DELAY,
            libmimalloc_sys::mi_option_eager_commit_delay + 1
        );
        // SAFETY: reads one of mimalloc's options.
        let before = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(before, 10);
        purge_at_once();
        // SAFETY: as above.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }, 0);
        purge_as_usual();
        // SAFETY: as above.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }, 10);
    }
}
