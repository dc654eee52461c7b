//! Scheduling policies: who runs which chunk of tasks.
//!
//! Takes nothing from below; offers the thread layer a [`TaskSource`] that units pull chunks
//! from. **Equitable** splits the task space into one contiguous share per unit before the run
//! (the thesis' static policy); each unit still pulls its share in chunks, so results stream.
//! **Work-queue** is a central queue; each idle unit takes the next chunk. Chunks follow the
//! units' measured speeds: a unit takes at most half of its speed-proportional share of what is
//! left (guided self-scheduling, weighted; before a unit has a measurement, 1/(2·units) of what
//! is left), never more than it asks for. Near the end a unit declines work that it would
//! finish later than the other units could finish everything left — a GPU's batch costs about
//! the same for 5 sources as for 256, so it must not take the last few tasks from the CPUs.

use crate::config::Policy;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

/// A source of chunks for units.
pub trait TaskSource: Sync {
    /// The next chunk for `unit`, at most `want` tasks; `None` when nothing is left for it.
    fn next(&self, unit: usize, want: usize) -> Option<Range<usize>>;
    /// Stop handing out work (after a failure).
    fn stop(&self);
    /// `unit` finished `tasks` tasks in `secs` seconds (speed-aware policies learn from it).
    fn done(&self, _unit: usize, _tasks: usize, _secs: f64) {}
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

/// What the queue knows of a unit's speed.
#[derive(Debug, Clone, Copy, Default)]
struct Speed {
    /// Tasks per second over everything it ran (0 = not measured yet).
    rate: f64,
    tasks: f64,
    secs: f64,
    /// The shortest chunk it ran: a floor on any chunk's time (a GPU batch's latency).
    min_chunk: f64,
    /// Got `None` (so its thread has ended): no longer counted among the others.
    gone: bool,
}

#[derive(Debug)]
struct QueueState {
    next: usize,
    speeds: Vec<Speed>,
}

/// A central queue with speed-weighted guided chunk sizes.
#[derive(Debug)]
pub struct WorkQueue {
    state: Mutex<QueueState>,
    end: usize,
    units: usize,
    stopped: AtomicBool,
}

impl WorkQueue {
    /// A queue over `tasks` shared by `units` units.
    pub fn new(tasks: Range<usize>, units: usize) -> Self {
        let units = units.max(1);
        WorkQueue {
            state: Mutex::new(QueueState {
                next: tasks.start,
                speeds: vec![Speed::default(); units],
            }),
            end: tasks.end,
            units,
            stopped: AtomicBool::new(false),
        }
    }
}

impl TaskSource for WorkQueue {
    fn next(&self, unit: usize, want: usize) -> Option<Range<usize>> {
        let mut st = self.state.lock();
        if self.stopped.load(Ordering::Relaxed) || st.next >= self.end {
            if let Some(s) = st.speeds.get_mut(unit) {
                s.gone = true;
            }
            return None;
        }
        let left = self.end - st.next;
        let me = st.speeds.get(unit).copied().unwrap_or_default();
        let known: f64 = st.speeds.iter().filter(|s| !s.gone).map(|s| s.rate).sum();
        let take = if me.rate > 0.0 {
            let others = known - me.rate;
            // Decline when even my fastest chunk would end after the others (still running)
            // clear what is left; the last unit standing never declines.
            if others > 0.0 && me.min_chunk > left as f64 / others {
                st.speeds[unit].gone = true;
                return None;
            }
            let share = left as f64 * me.rate / known / 2.0;
            (share.ceil() as usize).clamp(1, want.max(1))
        } else {
            want.max(1).min((left / (2 * self.units)).max(1))
        }
        .min(left);
        let r = st.next..st.next + take;
        st.next += take;
        Some(r)
    }
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
    fn done(&self, unit: usize, tasks: usize, secs: f64) {
        let mut st = self.state.lock();
        if let Some(s) = st.speeds.get_mut(unit) {
            s.tasks += tasks as f64;
            s.secs += secs;
            s.rate = s.tasks / s.secs.max(1e-9);
            s.min_chunk = if s.min_chunk == 0.0 {
                secs
            } else {
                s.min_chunk.min(secs)
            };
        }
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
    fn slow_batch_unit_leaves_the_tail_to_fast_units() {
        // Unit 0 is a "GPU": chunks of 100 in 1 s each; units 1-2 are "CPUs" at 50 tasks/s.
        let q = WorkQueue::new(0..1000, 3);
        q.done(0, 100, 1.0);
        q.done(1, 5, 0.1);
        q.done(2, 5, 0.1);
        // Plenty left: the GPU gets a full chunk.
        assert_eq!(q.next(0, 100).map(|r| r.len()), Some(100));
        // Drain to 40 tasks: the CPUs clear 40 in 0.4 s, sooner than the GPU's 1 s batch.
        while q.state.lock().next < 960 {
            q.next(1, 10);
        }
        assert_eq!(q.next(0, 100), None);
        assert!(q.next(1, 10).is_some());
    }

    #[test]
    fn chunks_follow_measured_speed() {
        let q = WorkQueue::new(0..10_000, 2);
        q.done(0, 90, 1.0);
        q.done(1, 10, 1.0);
        // Half of a 90% share of 10,000 is 4,500, capped by what the unit asks for.
        assert_eq!(q.next(0, 100_000).unwrap().len(), 4500);
        assert_eq!(q.next(1, 100_000).unwrap().len(), 275);
    }

    #[test]
    fn two_slow_units_never_both_decline_the_tail() {
        let q = WorkQueue::new(0..10, 2);
        q.done(0, 100, 1.0);
        q.done(1, 100, 1.0);
        let mut seen = drain(&q, 2, 100);
        seen.dedup();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn stop_ends_the_queue() {
        let q = WorkQueue::new(0..100, 2);
        q.stop();
        assert!(q.next(0, 1).is_none());
    }
}
