//! Work over many files across cores, with the results handed on in input order.
//!
//! [`map_ordered`] runs a job per item on N threads and gives each result to a sink in the
//! order of the items, so what a verb prints is byte for byte what the one-thread run prints.
//! Memory is bounded by the thread count: at most [`window`] items are out (taken by a worker,
//! or done and waiting for an earlier one) at any time, whatever the number of items; a slow
//! item holds the others back rather than letting finished results pile up behind it.
//!
//! With one thread it is a plain loop on the calling thread (no thread, no channel).

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::channel;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The default thread count: the cores this process may use (1 when that cannot be told).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// How many items may be out at once with `threads` workers: each worker busy with one, and
/// as many done ones waiting for an earlier, slower item.
pub fn window(threads: usize) -> usize {
    threads.saturating_mul(2).max(1)
}

/// What the workers share: the items not yet taken and how far the caller has got.
struct Queue<It> {
    items: It,
    /// The index of the next item to take.
    taken: usize,
    /// How many results the sink has had.
    passed: usize,
    /// Set when the caller stops early (a panic): the workers take nothing more.
    stop: bool,
}

/// The queue and the condition its workers wait on (the window full).
struct Shared<It> {
    queue: Mutex<Queue<It>>,
    moved: Condvar,
}

impl<It> Shared<It> {
    fn lock(&self) -> MutexGuard<'_, Queue<It>> {
        // Nothing panics while holding the lock (`next` of the items aside, and that leaves
        // the queue as sound as any other point), so a poisoned lock is still usable.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Stops the workers when the caller's loop ends, by completion or by a panic.
struct StopOnDrop<'a, It>(&'a Shared<It>);

impl<It> Drop for StopOnDrop<'_, It> {
    fn drop(&mut self) {
        self.0.lock().stop = true;
        self.0.moved.notify_all();
    }
}

/// Runs `work` on each of `items` with `threads` threads (1: on this thread) and passes each
/// result to `sink` in the items' order. A panic in `work` or `sink` is resumed on this
/// thread once every worker has stopped.
pub fn map_ordered<T, R, I, W, S>(items: I, threads: usize, work: W, mut sink: S)
where
    I: IntoIterator<Item = T>,
    I::IntoIter: Send,
    T: Send,
    R: Send,
    W: Fn(T) -> R + Sync,
    S: FnMut(R),
{
    if threads <= 1 {
        for item in items {
            sink(work(item));
        }
        return;
    }
    let window = window(threads);
    let shared = Shared {
        queue: Mutex::new(Queue { items: items.into_iter(), taken: 0, passed: 0, stop: false }),
        moved: Condvar::new(),
    };
    let (done_tx, done_rx) = channel::<(usize, std::thread::Result<R>)>();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let (shared, work) = (&shared, &work);
            scope.spawn(move || loop {
                let (i, item) = {
                    let mut q = shared.lock();
                    // The window: never more than `window` items between the sink and the
                    // newest item taken.
                    while !q.stop && q.taken >= q.passed.saturating_add(window) {
                        q = shared.moved.wait(q).unwrap_or_else(PoisonError::into_inner);
                    }
                    if q.stop {
                        return;
                    }
                    let Some(item) = q.items.next() else { return };
                    q.taken += 1;
                    (q.taken - 1, item)
                };
                // Caught so that a panic reaches the caller in order instead of leaving this
                // item's result missing and the others waiting for it.
                let result = panic::catch_unwind(AssertUnwindSafe(|| work(item)));
                if done_tx.send((i, result)).is_err() {
                    return;
                }
            });
        }
        drop(done_tx);

        let _stop = StopOnDrop(&shared);
        // Results arrive in any order; at most `window` wait here, by the window.
        let mut waiting: Vec<Option<std::thread::Result<R>>> = (0..window).map(|_| None).collect();
        let mut next = 0usize;
        for (i, result) in done_rx.iter() {
            waiting[i % window] = Some(result);
            while let Some(result) = waiting[next % window].take() {
                match result {
                    Ok(r) => sink(r),
                    Err(payload) => panic::resume_unwind(payload),
                }
                next += 1;
                shared.lock().passed = next;
                shared.moved.notify_all();
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn results_come_in_input_order_whatever_the_finishing_order() {
        for threads in [1, 2, 3, 8] {
            let mut got = Vec::new();
            // Earlier items sleep longer, so they finish after later ones.
            map_ordered(
                0..40u64,
                threads,
                |i| {
                    std::thread::sleep(Duration::from_micros((40 - i) * 50));
                    i * 10
                },
                |r| got.push(r),
            );
            assert_eq!(got, (0..40).map(|i| i * 10).collect::<Vec<_>>(), "{threads} threads");
        }
    }

    #[test]
    fn no_more_than_the_window_is_out_at_once() {
        let threads = 3;
        let out = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let mut seen = 0;
        map_ordered(
            0..200u64,
            threads,
            |i| {
                let now = out.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Item 0 is slow: without the window the others would run far ahead of it.
                std::thread::sleep(Duration::from_millis(if i == 0 { 50 } else { 0 }));
                i
            },
            |r| {
                assert_eq!(r, seen);
                seen += 1;
                out.fetch_sub(1, Ordering::SeqCst);
            },
        );
        assert_eq!(seen, 200);
        let most = most.load(Ordering::SeqCst);
        assert!(most <= window(threads), "{most} items out at once, window {}", window(threads));
    }

    #[test]
    fn a_panic_in_a_job_reaches_the_caller() {
        let caught = panic::catch_unwind(|| {
            map_ordered(0..50u32, 2, |i| assert_ne!(i, 7, "job seven"), |()| {});
        });
        let payload = caught.expect_err("the panic is resumed");
        let text = payload.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(text.contains("job seven"), "{text}");
    }
}
