//! Scheduling policies: who runs which chunk of tasks.
//!
//! Takes nothing from below; offers the thread layer a [`TaskSource`] that units pull chunks
//! from. **Equitable** splits the task space into one contiguous share per unit before the run
//! (the thesis' static policy); each unit still pulls its share in chunks, so results stream.
//! **Work-queue** is a central counter; each idle unit takes the next chunk, of the size it asks
//! for but shrinking as the queue drains (guided self-scheduling), so a GPU's big batches do not
//! hold the last tasks while CPU workers idle.

use crate::config::Policy;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A source of chunks for units.
pub trait TaskSource: Sync {
    /// The next chunk for `unit`, at most `want` tasks; `None` when nothing is left for it.
    fn next(&self, unit: usize, want: usize) -> Option<Range<usize>>;
    /// Stop handing out work (after a failure).
    fn stop(&self);
}

/// Static equal shares, one per unit, weighted by `weights` (all 1 = the thesis' policy).
#[derive(Debug)]
pub struct Equitable {
    shares: Vec<Mutex<Range<usize>>>,
    stopped: AtomicBool,
}

impl Equitable {
    /// Split `tasks` into contiguous shares proportional to `weights`.
    pub fn new(tasks: Range<usize>, weights: &[f64]) -> Self {
        let total: f64 = weights.iter().sum();
        let len = tasks.len();
        let mut acc = 0.0;
        let mut start = tasks.start;
        let shares = weights
            .iter()
            .enumerate()
            .map(|(i, w)| {
                acc += w;
                let end = if i + 1 == weights.len() {
                    tasks.end
                } else {
                    tasks.start + ((acc / total) * len as f64).round() as usize
                };
                let r = start..end.max(start);
                start = r.end;
                Mutex::new(r)
            })
            .collect();
        Equitable {
            shares,
            stopped: AtomicBool::new(false),
        }
    }
}

impl TaskSource for Equitable {
    fn next(&self, unit: usize, want: usize) -> Option<Range<usize>> {
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        let mut share = self.shares[unit].lock();
        if share.is_empty() {
            return None;
        }
        let end = (share.start + want.max(1)).min(share.end);
        let r = share.start..end;
        share.start = end;
        Some(r)
    }
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// A central queue with guided chunk sizes.
#[derive(Debug)]
pub struct WorkQueue {
    next: AtomicUsize,
    end: usize,
    units: usize,
    stopped: AtomicBool,
}

impl WorkQueue {
    /// A queue over `tasks` shared by `units` units.
    pub fn new(tasks: Range<usize>, units: usize) -> Self {
        WorkQueue {
            next: AtomicUsize::new(tasks.start),
            end: tasks.end,
            units: units.max(1),
            stopped: AtomicBool::new(false),
        }
    }
}

impl TaskSource for WorkQueue {
    fn next(&self, _unit: usize, want: usize) -> Option<Range<usize>> {
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            if self.stopped.load(Ordering::Relaxed) || cur >= self.end {
                return None;
            }
            // Guided: never take more than a 1/(2·units) slice of what is left, so the tail is
            // spread over every unit; but at least one task.
            let left = self.end - cur;
            let take = want.max(1).min((left / (2 * self.units)).max(1)).min(left);
            match self.next.compare_exchange_weak(
                cur,
                cur + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(cur..cur + take),
                Err(now) => cur = now,
            }
        }
    }
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// Build the source for a policy.
pub fn source(policy: Policy, tasks: Range<usize>, weights: &[f64]) -> Box<dyn TaskSource> {
    match policy {
        Policy::Equitable => Box::new(Equitable::new(tasks, weights)),
        Policy::WorkQueue => Box::new(WorkQueue::new(tasks, weights.len())),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn drain(src: &dyn TaskSource, units: usize, want: usize) -> Vec<usize> {
        let mut seen = Vec::new();
        let mut live = true;
        while live {
            live = false;
            for u in 0..units {
                if let Some(r) = src.next(u, want) {
                    seen.extend(r);
                    live = true;
                }
            }
        }
        seen.sort();
        seen
    }

    #[test]
    fn every_task_exactly_once() {
        for (tasks, units, want) in [(0..0, 3, 4), (0..10, 3, 4), (5..1000, 7, 64), (0..2, 5, 1)] {
            let expect: Vec<usize> = tasks.clone().collect();
            assert_eq!(
                drain(
                    &Equitable::new(tasks.clone(), &vec![1.0; units]),
                    units,
                    want
                ),
                expect
            );
            assert_eq!(
                drain(&WorkQueue::new(tasks.clone(), units), units, want),
                expect
            );
        }
    }

    #[test]
    fn equitable_shares_are_equal_and_contiguous() {
        let e = Equitable::new(0..10, &[1.0, 1.0, 1.0]);
        let lens: Vec<usize> = e.shares.iter().map(|s| s.lock().len()).collect();
        assert_eq!(lens.iter().sum::<usize>(), 10);
        assert!(lens.iter().all(|&l| l == 3 || l == 4), "{lens:?}");
    }

    #[test]
    fn stop_ends_the_queue() {
        let q = WorkQueue::new(0..100, 2);
        q.stop();
        assert!(q.next(0, 1).is_none());
    }
}
