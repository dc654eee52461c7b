//! Work-efficient Bellman-Ford over a compacted frontier (a work list) with a persistent grid:
//! per round, work proportional to the frontier, not to n. Near-far thresholds per source
//! (Δ-stepping buckets of width `[apsp] delta`) keep far vertices out of the frontier until the
//! near ones settle. The default: on road graphs it ran 15-150x faster than Crauser on an H100
//! (BENCHMARKS.md).
//!
//! The device reads the frontier's size itself, so the host only reads a count every 1..64
//! rounds, and enqueues the next block of rounds before it waits for that count (pipelined).

use super::buffers::{Batch, DistBuf};
use super::{iteration_limit, Algorithm, Ctx, Setup, Spec};
use crate::apsp::ApspJob;
use tuccompi::device::Kernel;
use tuccompi::device::{Arg, DBuf, Local};
use tuccompi::{Error, Result};

/// The algorithm as [`GpuAlgorithm::Worklist`](crate::apsp::GpuAlgorithm::Worklist).
pub(super) const SPEC: Spec = Spec {
    launched: &["wl_init", "wl_round", "sssp_summary"],
    bytes_per_vertex: |dist| dist + 4 + 3 * 4,
    make: |setup| Ok(Box::new(Worklist::new(setup)?)),
    batch_major: true,
};

/// The bucket width: `[apsp] delta`, else 64 x the mean arc weight; 0 means no threshold (the
/// type's maximum).
fn delta(job: &ApspJob) -> u64 {
    let g = &job.graph;
    let d = match job.options.delta.and_then(|d| d.value()) {
        Some(d) => d as u64,
        None => {
            let mean = g.weights.iter().map(|&w| w as u64).sum::<u64>() / (g.m().max(1) as u64);
            (64 * mean).max(1)
        }
    };
    match (d, job.wide) {
        (0, true) => u64::MAX,
        (0, false) => u32::MAX as u64,
        (d, false) => d.min(u32::MAX as u64),
        (d, true) => d,
    }
}

/// Kernels and buffers of one queue.
struct Worklist {
    init: Kernel,
    round: Kernel,
    stamp: DBuf<u32>,
    lists: [DBuf<u32>; 3],
    counts: DBuf<u32>,
    thresh: DistBuf,
    farmin: DistBuf,
    active: DBuf<u32>,
    delta: u64,
}

impl Worklist {
    fn new(setup: &Setup<'_>) -> Result<Self> {
        let (items, batch, device) = (setup.items(), setup.batch(), setup.device);
        Ok(Worklist {
            init: setup.kernel("wl_init")?,
            round: setup.kernel("wl_round")?,
            stamp: DBuf::new(device, items)?,
            lists: [
                DBuf::new(device, items)?,
                DBuf::new(device, items)?,
                DBuf::new(device, items)?,
            ],
            counts: DBuf::new(device, 3)?,
            // Per-source state, one copy per round modulo 3 (see wl_round).
            thresh: setup.dist_buf(3 * batch)?,
            farmin: setup.dist_buf(3 * batch)?,
            active: DBuf::new(device, 3 * batch)?,
            delta: delta(setup.job),
        })
    }

    fn delta_arg(&self, cx: &Ctx<'_>) -> Arg<'static> {
        if cx.job.wide {
            Arg::U64(self.delta)
        } else {
            Arg::U32(self.delta as u32)
        }
    }

    /// Enqueue round `k`.
    fn round(&self, cx: &Ctx<'_>, batch: &Batch, k: usize) -> Result<()> {
        let g = &cx.sh.graph;
        let lr = cx.local("wl_round")?;
        // Appends gathered in local memory: 8 per work-item (road graphs have degree < 8; a
        // fuller group falls back to global appends).
        let lcap = 8 * lr;
        let slot = k % 3;
        cx.q.launch(
            &self.round,
            cx.sh.params.persistent_items(),
            Some(lr),
            &[
                &g.off,
                &g.tgt,
                &g.wt,
                &batch.dist,
                &self.stamp,
                &self.lists[slot],
                &self.lists[(slot + 1) % 3],
                &self.counts,
                &self.thresh,
                &self.farmin,
                &self.active,
                &Local::of::<u32>(lcap),
                &self.delta_arg(cx),
                &(slot as u32),
                &(cx.n as u32),
                &(cx.b as u32),
                &(k as u32),
                &(lcap as u32),
                &g.m,
            ],
        )
    }
}

impl Algorithm for Worklist {
    fn solve(&mut self, cx: &Ctx<'_>, batch: &Batch, _sources: &[u32]) -> Result<usize> {
        cx.q.launch(
            &self.init,
            cx.n * cx.b,
            Some(cx.local("wl_init")?),
            &[
                &batch.dist,
                &self.stamp,
                &self.lists[0],
                &self.counts,
                &batch.src,
                &self.thresh,
                &self.farmin,
                &self.active,
                &self.delta_arg(cx),
                &(cx.n as u32),
                &(cx.b as u32),
            ],
        )?;
        // Pipelined: the next block of rounds is enqueued before waiting for the frontier count
        // at the end of the previous one, so the device never idles while the host thread
        // catches up (rounds past the end are no-ops).
        let (mut k, mut check) = (0usize, 1usize);
        for _ in 0..check {
            self.round(cx, batch, k)?;
            k += 1;
        }
        loop {
            let next_check = (check * 2).min(64);
            let start = k;
            let left = cx.q.read_one_pipelined(&self.counts, k % 3, || {
                for r in start..start + next_check {
                    self.round(cx, batch, r)?;
                }
                Ok(())
            })?;
            k += next_check;
            check = next_check;
            if left == 0 {
                return Ok(k);
            }
            if k > iteration_limit(cx.n) {
                return Err(Error::Device(format!(
                    "work-list SSSP did not converge after {k} rounds on {} vertices (a bug; please report it)",
                    cx.n
                )));
            }
        }
    }
}
