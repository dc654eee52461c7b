//! The equitable policy: static contiguous shares, one per unit.

use super::{Chunk, TaskSource};
use parking_lot::{Condvar, Mutex};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

/// Static shares, one per unit, weighted by `weights` (all 1 = the thesis' policy). Tasks of a
/// unit that failed (its failed chunk and the rest of its share) go to the units that have
/// finished their own shares.
#[derive(Debug)]
pub struct Equitable {
    state: Mutex<State>,
    changed: Condvar,
    stopped: AtomicBool,
}

#[derive(Debug)]
struct State {
    shares: Vec<Range<usize>>,
    phases: Vec<Phase>,
    /// Tasks given back by failed units.
    orphans: Vec<Range<usize>>,
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
                r
            })
            .collect();
        Equitable {
            state: Mutex::new(State {
                shares,
                phases: vec![Phase::Running; weights.len()],
                orphans: Vec::new(),
            }),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
        }
    }

    /// The share lengths (for tests).
    #[cfg(test)]
    pub(crate) fn share_lens(&self) -> Vec<usize> {
        self.state.lock().shares.iter().map(|s| s.len()).collect()
    }
}

fn take(range: &mut Range<usize>, want: usize) -> Range<usize> {
    let end = range.start.saturating_add(want.max(1)).min(range.end);
    let r = range.start..end;
    range.start = end;
    r
}

impl TaskSource for Equitable {
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>> {
        let mut st = self.state.lock();
        if self.stopped.load(Ordering::Relaxed) || st.phases[unit] == Phase::Out {
            return None;
        }
        let r = if !st.shares[unit].is_empty() {
            take(&mut st.shares[unit], want)
        } else {
            // My share is done: run what failed units left.
            let last = st.orphans.last_mut()?;
            let r = take(last, want);
            if last.start == last.end {
                st.orphans.pop();
            }
            r
        };
        drop(st);
        Some(Chunk::new(self, unit, r))
    }
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _g = self.state.lock();
        self.changed.notify_all();
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        let mut st = self.state.lock();
        st.phases[unit] = Phase::Out;
        if !tasks.is_empty() {
            st.orphans.push(tasks);
        }
        let rest = std::mem::replace(&mut st.shares[unit], 0..0);
        if !rest.is_empty() {
            st.orphans.push(rest);
        }
        self.changed.notify_all();
    }
    fn left_over(&self) -> usize {
        let st = self.state.lock();
        st.shares.iter().chain(&st.orphans).map(|r| r.len()).sum()
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        let mut st = self.state.lock();
        if st.phases[unit] == Phase::Out {
            return false;
        }
        st.phases[unit] = Phase::Waiting;
        // Wake the other waiters: if this was the last running unit, they leave too.
        self.changed.notify_all();
        loop {
            if self.stopped.load(Ordering::Relaxed) {
                return false;
            }
            if !st.orphans.is_empty() {
                st.phases[unit] = Phase::Running;
                return true;
            }
            if !st.phases.contains(&Phase::Running) {
                return false;
            }
            self.changed.wait(&mut st);
        }
    }
}

/// Where a unit is in the run, as the source sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Running chunks, or not started yet.
    Running,
    /// Got `None` and waits for tasks given back by a failed unit.
    Waiting,
    /// Failed: gets nothing more.
    Out,
}
