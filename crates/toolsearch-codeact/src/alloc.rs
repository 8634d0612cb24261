//! Memory accounting for the sandbox, and the one module of this crate with `unsafe`.
//!
//! monty checks a run's memory by reading a process-wide counter of live bytes
//! (`monty_types::LIVE_MEMORY`) at its checkpoints; its own allocator (`monty-alloc`) counts
//! every allocation of the process, which suits a worker process running one program, not a
//! gateway running many beside everything else. [`SandboxAllocator`] wraps the real allocator
//! and counts only what interpreter threads allocate, each thread (one run) on its own; while
//! a run's interpreter executes, it holds the VM turn ([`vm_turn`]) and the counter monty reads
//! is that run's count. Python execution is therefore one run at a time across the process
//! (host calls are not: they run outside the turn), which is what makes the count exact.

#![allow(unsafe_code)]

use parking_lot::{Mutex, MutexGuard};
use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::Ordering;

use monty_types::{BASELINE_MEMORY, LIVE_MEMORY};

/// A global allocator that counts what interpreter threads allocate (see the module docs);
/// every other allocation goes straight to the wrapped allocator `A`. Install it in the
/// binary to enforce CodeAct memory limits:
///
/// ```
/// #[global_allocator]
/// static GLOBAL: toolsearch_codeact::SandboxAllocator<std::alloc::System> =
///     toolsearch_codeact::SandboxAllocator(std::alloc::System);
/// # fn main() {}
/// ```
#[derive(Debug, Default)]
pub struct SandboxAllocator<A>(pub A);

/// What the current thread is, for the allocator.
#[derive(Debug, Clone, Copy)]
struct ThreadState {
    /// An interpreter thread: its allocations are its run's.
    sandbox: bool,
    /// It holds the VM turn: its count is what monty reads.
    in_vm: bool,
    /// Bytes its run holds (may dip below zero when it frees what it was given).
    bytes: isize,
}

thread_local! {
    static STATE: Cell<ThreadState> = const {
        Cell::new(ThreadState { sandbox: false, in_vm: false, bytes: 0 })
    };
}

/// Adds `delta` bytes to the current thread's run, when it is an interpreter thread.
#[inline]
fn charge(delta: isize) {
    // `try_with`: the allocator may run while the thread's locals are being torn down.
    let _ = STATE.try_with(|cell| {
        let mut s = cell.get();
        if !s.sandbox {
            return;
        }
        s.bytes = s.bytes.saturating_add(delta);
        cell.set(s);
        if s.in_vm {
            LIVE_MEMORY.store(s.bytes.max(0) as usize, Ordering::Relaxed);
        }
    });
}

// SAFETY: every method forwards its arguments unchanged to the wrapped allocator and returns
// what it returned; the bookkeeping around the calls touches only a thread-local cell and an
// atomic counter, allocates nothing and never unwinds.
unsafe impl<A: GlobalAlloc> GlobalAlloc for SandboxAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, forwarded unchanged.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            charge(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            charge(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with this layout (the caller's contract).
        unsafe { self.0.dealloc(ptr, layout) };
        charge(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr`, `layout` and `new_size` are the caller's, forwarded unchanged.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            charge(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Marks the current thread as an interpreter thread with a fresh count (call it first thing
/// on a thread that runs one program).
pub(crate) fn enter_sandbox_thread() {
    STATE.with(|c| {
        c.set(ThreadState {
            sandbox: true,
            in_vm: false,
            bytes: 0,
        })
    });
}

/// Whether [`SandboxAllocator`] is the global allocator: an allocation on an interpreter
/// thread must show in its count. Call it on an interpreter thread.
pub(crate) fn counting() -> bool {
    let before = STATE.with(|c| c.get().bytes);
    let probe = std::hint::black_box(vec![0u8; 256]);
    let after = STATE.with(|c| c.get().bytes);
    drop(probe);
    after - before >= 256
}

/// Python runs one program at a time (see the module docs).
static VM: Mutex<()> = Mutex::new(());

/// The VM turn: while it is held, monty's memory counter is this thread's run.
#[derive(Debug)]
pub(crate) struct VmTurn {
    _guard: MutexGuard<'static, ()>,
}

/// Waits for the VM turn and makes monty's counter this thread's run.
pub(crate) fn vm_turn() -> VmTurn {
    let guard = VM.lock();
    BASELINE_MEMORY.store(0, Ordering::Relaxed);
    STATE.with(|c| {
        let mut s = c.get();
        s.in_vm = true;
        c.set(s);
        LIVE_MEMORY.store(s.bytes.max(0) as usize, Ordering::Relaxed);
    });
    VmTurn { _guard: guard }
}

impl Drop for VmTurn {
    fn drop(&mut self) {
        STATE.with(|c| {
            let mut s = c.get();
            s.in_vm = false;
            c.set(s);
        });
    }
}
