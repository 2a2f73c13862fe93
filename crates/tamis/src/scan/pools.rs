//! Worker pools kept from one scan to the next.
//!
//! A scan runs on a pool of its own, sized by its thread count, so concurrent scans never
//! queue behind each other's threads. Starting that pool for every scan cost more than the
//! threads: a new thread starts with empty thread-local state — its Zstandard context
//! ([`crate::column::inflate`]) and its allocator heap, whose fresh memory the kernel zeroes
//! (2 MiB at a time where huge pages are on). On a point query over 4 M dictionary codes
//! (`dictsize`, warm) that was about a tenth of the scan. So a finished scan hands its pool
//! back here, and the next scan of the same size takes it.

use std::ops::Deref;
use std::sync::Mutex;

use rayon::ThreadPool;

use crate::error::{Error, Result};

/// Idle pools, at most [`idle_pools`]: as many as scans that ran at once, up to that bound.
/// Each with the id of the process that started its threads: a child made by `fork` (Python's
/// `multiprocessing`) inherits this list but not the threads, and a scan handed such a pool
/// would wait forever.
static IDLE: Mutex<Vec<(u32, ThreadPool)>> = Mutex::new(Vec::new());

/// How many idle pools are kept: four a core (at least 16). A SQL query reads each table with
/// as many one-thread scans as it has partitions, several tables at once (TPC-H Q17 at 16
/// threads: up to 48), so a bound of 4 started most of them anew on every query.
fn idle_pools() -> usize {
    static BOUND: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BOUND.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        (4 * cores).clamp(16, 256)
    })
}

/// A pool of `threads` workers for one scan: an idle one if there is one of that size, else a
/// new one. It goes back to the idle pools when dropped.
pub(crate) struct Lease(Option<ThreadPool>);

impl Lease {
    pub(crate) fn take(threads: usize) -> Result<Lease> {
        let idle = {
            let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
            let here = std::process::id();
            if idle.iter().any(|(pid, _)| *pid != here) {
                // Forked: the pools' threads are not in this process. Dropping a pool would
                // signal them, so the handles are forgotten instead.
                for (_, pool) in idle.drain(..) {
                    std::mem::forget(pool);
                }
            }
            let at = (idle.iter()).position(|(_, p)| p.current_num_threads() == threads);
            at.map(|at| idle.swap_remove(at).1)
        };
        let pool = match idle {
            Some(pool) => pool,
            None => rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("tamis-{i}"))
                .build()
                .map_err(|e| Error::internal(format!("cannot start threads: {e}")))?,
        };
        Ok(Lease(Some(pool)))
    }
}

impl Deref for Lease {
    type Target = ThreadPool;

    fn deref(&self) -> &ThreadPool {
        self.0
            .as_ref()
            .expect("a lease holds its pool until dropped")
    }
}

impl Drop for Lease {
    /// Back to the idle pools; the oldest idle pool's threads end when there are too many.
    /// Tasks of a cancelled scan still running finish on it (they stop at their next batch).
    fn drop(&mut self) {
        let Some(pool) = self.0.take() else { return };
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        idle.push((std::process::id(), pool));
        if idle.len() > idle_pools() {
            let (_, oldest) = idle.remove(0);
            drop(idle);
            drop(oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two leases held at once never share a pool; a dropped lease's pool is taken again.
    #[test]
    fn leases_are_exclusive_and_reused() {
        let a = Lease::take(3).unwrap();
        let b = Lease::take(3).unwrap();
        assert!(!std::ptr::eq::<ThreadPool>(&*a, &*b));
        let id = |l: &Lease| l.install(|| std::thread::current().id());
        let (ia, ib) = (id(&a), id(&b));
        assert_ne!(ia, ib);
        assert_eq!(a.current_num_threads(), 3);
        drop(a);
        // Another test may take it meanwhile; then a fresh pool serves, which is also correct.
        let c = Lease::take(3).unwrap();
        assert_eq!(c.current_num_threads(), 3);
        assert_ne!(id(&c), ib);
    }
}
