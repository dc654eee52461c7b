//! `[verify] sample = N`: re-run N randomly chosen tasks that an accelerator ran on this node,
//! on the plugin's CPU half, and compare the records word for word, or, for the words the job
//! declares floating point ([`Job::tolerance`]), within its tolerance. A mismatch is an error
//! naming the task and the unit. Cost: N tasks on one CPU thread, after the run.
//!
//! `sample = "auto"` (the default) re-runs up to [`AUTO_TASKS`] of them, stopping once the
//! re-runs took 1% of the run's time (the first always runs), and none when the accelerators
//! ran fewer than [`AUTO_MIN_TASKS`] tasks (a job of one big task, such as Floyd-Warshall on
//! the whole matrix, would pay the whole run again on one thread).

use crate::plugin::{Job, Records, RecordsOut};
use crate::thread::{Slice, Unit, UnitSpec};
use crate::{Error, Result};
use std::collections::BTreeSet;

/// Most tasks `"auto"` re-runs.
pub(super) const AUTO_TASKS: usize = 8;
/// `"auto"` checks nothing when the accelerators ran fewer tasks than this.
pub(super) const AUTO_MIN_TASKS: usize = 16;

/// How many tasks to re-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// This many (fewer if the accelerators ran fewer).
    Tasks(usize),
    /// Up to [`AUTO_TASKS`], stopping once the re-runs took this long.
    Auto(std::time::Duration),
}

/// What was verified on this node.
#[derive(Debug, Clone, Copy)]
pub(super) struct Verified {
    /// Tasks re-run and found equal.
    pub(super) checked: usize,
    /// Seed of the random choice (in the report, to repeat it).
    pub(super) seed: u64,
    /// Seconds the re-runs took (the cost of the check).
    pub(super) seconds: f64,
}

/// The `i`-th number of the stream `seed` (xxh3 of the counter: uniform enough to sample).
fn random(seed: u64, i: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(&i.to_le_bytes(), seed)
}

/// `k` distinct numbers of `0..n`, uniformly (Floyd's algorithm).
fn sample(n: usize, k: usize, seed: u64) -> BTreeSet<usize> {
    let mut chosen = BTreeSet::new();
    for (i, j) in (n - k.min(n)..n).enumerate() {
        let t = (random(seed, i as u64) % (j as u64 + 1)) as usize;
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen
}

/// Re-run up to `want` of the tasks the accelerator units of `units` ran (`slices`) on the CPU
/// half and compare them with `records`.
pub(super) fn verify(
    job: &dyn Job,
    units: &[Unit<'_>],
    slices: &[Slice],
    records: &Records,
    want: Want,
) -> Result<Verified> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    verify_seeded(job, units, slices, records, want, seed)
}

fn verify_seeded(
    job: &dyn Job,
    units: &[Unit<'_>],
    slices: &[Slice],
    records: &Records,
    want: Want,
    seed: u64,
) -> Result<Verified> {
    let ran: Vec<&Slice> = slices
        .iter()
        .filter(|s| matches!(units[s.unit].spec, UnitSpec::Gpu { .. }))
        .collect();
    let total: usize = ran.iter().map(|s| s.tasks.len()).sum();
    let (count, budget) = match want {
        Want::Tasks(n) => (n, None),
        Want::Auto(_) if total < AUTO_MIN_TASKS => (0, None),
        Want::Auto(b) => (AUTO_TASKS, Some(b)),
    };
    let chosen = sample(total, count, seed);
    if chosen.is_empty() {
        return Ok(Verified {
            checked: 0,
            seed,
            seconds: 0.0,
        });
    }
    let start = std::time::Instant::now();
    let cpu = job
        .cpu()
        .ok_or_else(|| Error::Config("[verify] needs a CPU half".into()))?;
    let mut worker = cpu.worker()?;
    let words = job.record_words();
    let tolerance = job.tolerance();
    let mut checked = 0;
    let mut buf = vec![0u64; words];
    // Walk the accelerator's slices in order, mapping the chosen indices to tasks.
    let (mut base, mut picks) = (0usize, chosen.iter().peekable());
    'slices: for s in ran {
        while let Some(&&i) = picks.peek() {
            if checked > 0 && budget.is_some_and(|b| start.elapsed() >= b) {
                break 'slices;
            }
            if i >= base + s.tasks.len() {
                break;
            }
            picks.next();
            let t = s.tasks.start + (i - base);
            buf.iter_mut().for_each(|w| *w = 0);
            worker.run(t..t + 1, &mut RecordsOut::new(t, words, &mut buf))?;
            checked += 1;
            if !tolerance.same(&buf, records.get(t)) {
                return Err(Error::Unit {
                    unit: units[s.unit].name.clone(),
                    msg: format!(
                        "task {t}: its record {} differs from the CPU half's {}{} ([verify] \
                         re-ran it on the CPU); the unfinished run was discarded",
                        tolerance.show(records.get(t)),
                        tolerance.show(&buf),
                        tolerance.describe()
                    ),
                });
            }
        }
        base += s.tasks.len();
    }
    Ok(Verified {
        checked,
        seed,
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::plugin::Tolerance;

    #[test]
    fn tolerance_compares_float_words_relatively_and_the_rest_exactly() {
        let f = |x: f64| x.to_bits();
        let t = Tolerance::f64_words([1], 1e-9);
        assert!(t.same(&[7, f(1.0)], &[7, f(1.0 + 5e-10)]));
        assert!(!t.same(&[7, f(1.0)], &[7, f(1.0 + 5e-9)]));
        assert!(!t.same(&[8, f(1.0)], &[7, f(1.0)]), "word 0 is exact");
        assert!(t.same(&[7, f(f64::NAN)], &[7, f(-f64::NAN)]));
        assert!(!t.same(&[7, f(0.0)], &[7, f(1e-300)]));
        let exact = Tolerance::exact();
        assert!(!exact.same(&[f(1.0)], &[f(1.0 + 1e-15)]));
        assert_eq!(t.show(&[7, f(0.5)]), "[7, 5e-1]");
    }

    #[test]
    fn sample_is_distinct_uniform_and_capped() {
        for seed in 0..50 {
            let s = sample(10, 4, seed);
            assert_eq!(s.len(), 4);
            assert!(s.iter().all(|&x| x < 10));
        }
        assert_eq!(sample(3, 10, 7).len(), 3);
        assert!(sample(0, 5, 7).is_empty());
        // Every element gets picked about equally often.
        let mut hits = [0usize; 10];
        for seed in 0..5000 {
            for x in sample(10, 3, seed) {
                hits[x] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (1200..1800).contains(&h)), "{hits:?}");
    }
}
