//! `[verify] sample = N`: re-run N randomly chosen tasks that an accelerator ran on this node,
//! on the plugin's CPU half, and compare the records word for word. A mismatch is an error
//! naming the task and the unit. Cost: N tasks on one CPU thread, after the run.

use crate::plugin::{Job, Records, RecordsOut};
use crate::thread::{Slice, Unit, UnitSpec};
use crate::{Error, Result};
use std::collections::BTreeSet;

/// What was verified on this node.
#[derive(Debug, Clone, Copy)]
pub(super) struct Verified {
    /// Tasks re-run and found equal.
    pub(super) checked: usize,
    /// Seed of the random choice (in the report, to repeat it).
    pub(super) seed: u64,
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
    want: usize,
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
    want: usize,
    seed: u64,
) -> Result<Verified> {
    let ran: Vec<&Slice> = slices
        .iter()
        .filter(|s| matches!(units[s.unit].spec, UnitSpec::Gpu { .. }))
        .collect();
    let total: usize = ran.iter().map(|s| s.tasks.len()).sum();
    let chosen = sample(total, want, seed);
    if chosen.is_empty() {
        return Ok(Verified { checked: 0, seed });
    }
    let cpu = job
        .cpu()
        .ok_or_else(|| Error::Config("[verify] needs a CPU half".into()))?;
    let mut worker = cpu.worker()?;
    let words = job.record_words();
    let mut buf = vec![0u64; words];
    // Walk the accelerator's slices in order, mapping the chosen indices to tasks.
    let (mut base, mut picks) = (0usize, chosen.iter().peekable());
    for s in ran {
        while let Some(&&i) = picks.peek() {
            if i >= base + s.tasks.len() {
                break;
            }
            picks.next();
            let t = s.tasks.start + (i - base);
            buf.iter_mut().for_each(|w| *w = 0);
            worker.run(t..t + 1, &mut RecordsOut::new(t, words, &mut buf))?;
            if buf != records.get(t) {
                return Err(Error::Unit {
                    unit: units[s.unit].name.clone(),
                    msg: format!(
                        "task {t}: its record {:?} differs from the CPU half's {:?} ([verify] \
                         re-ran it on the CPU); the unfinished run was discarded",
                        records.get(t),
                        buf
                    ),
                });
            }
        }
        base += s.tasks.len();
    }
    Ok(Verified {
        checked: chosen.len(),
        seed,
    })
}

#[cfg(test)]
mod test {
    use super::*;

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
