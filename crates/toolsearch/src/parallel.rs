//! Splitting per-item work over the machine's cores (scoped threads, order kept).

use std::num::NonZeroUsize;

/// Below this many items, work stays on the calling thread.
const MIN_PARALLEL_ITEMS: usize = 2048;

/// Worker count for `items` items: the available cores (at most 8), or 1 for small inputs.
pub(crate) fn workers(items: usize) -> usize {
    if items < MIN_PARALLEL_ITEMS {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .clamp(1, 8)
}

/// The item ranges of a run of consecutive tools whose items lie in one array of `len` items,
/// tool `k`'s from `starts[k]`: `(k, range)` per tool, in order.
pub(crate) fn per_tool(
    starts: &[u32],
    len: usize,
) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
    starts.iter().enumerate().map(move |(k, &start)| {
        let end = starts.get(k + 1).map_or(len, |&e| e as usize);
        (k, start as usize..end)
    })
}

/// Runs `f(0)` … `f(workers - 1)`, each on its own scoped thread (on the calling thread when
/// there is one worker); the results come back in order, and a worker's panic resumes here.
pub(crate) fn on_workers<U, F>(workers: usize, f: F) -> Vec<U>
where
    U: Send,
    F: Fn(usize) -> U + Sync,
{
    if workers <= 1 {
        return vec![f(0)];
    }
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = (0..workers).map(|k| scope.spawn(move || f(k))).collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// Maps contiguous ranges of `0..len` on scoped threads; the results come back in order.
pub(crate) fn map_ranges<U, F>(len: usize, f: F) -> Vec<U>
where
    U: Send,
    F: Fn(std::ops::Range<usize>) -> U + Sync,
{
    let n = workers(len);
    let size = len.div_ceil(n).max(1);
    on_workers(len.div_ceil(size).max(1), |k| {
        f((k * size).min(len)..((k + 1) * size).min(len))
    })
}

/// Maps every item of an owned vector, in parallel chunks, keeping order.
pub(crate) fn map_owned<T, U, F>(items: Vec<T>, f: F) -> Vec<U>
where
    T: Send,
    U: Send,
    F: Fn(T) -> U + Sync,
{
    let n = workers(items.len());
    if n <= 1 {
        return items.into_iter().map(f).collect();
    }
    let size = items.len().div_ceil(n);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(n);
    let mut rest = items;
    while rest.len() > size {
        let tail = rest.split_off(size);
        chunks.push(rest);
        rest = tail;
    }
    chunks.push(rest);
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let f = &f;
                scope.spawn(move || chunk.into_iter().map(f).collect::<Vec<U>>())
            })
            .collect();
        let mut out = Vec::new();
        for h in handles {
            match h.join() {
                Ok(v) => out.extend(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_kept() {
        let items: Vec<u32> = (0..10_000).collect();
        let doubled = map_owned(items.clone(), |x| x * 2);
        assert_eq!(doubled, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        let ranges = map_ranges(items.len(), |r| r);
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(ranges.last().map(|r| r.end), Some(items.len()));
        assert_eq!(map_ranges(10, |r| r), vec![0..10]);
        assert_eq!(map_ranges(0, |r| r), vec![0..0]);
        assert_eq!(on_workers(3, |k| k * 10), vec![0, 10, 20]);
    }
}
