//! Crauser et al.'s criterion, as in the TuCCompi thesis: per iteration, relax the arcs out of
//! the frontier (vertices settled last), find Δ = min over unsettled u of δ(u) + ω(u) (ω(u)
//! the lightest arc out of u) by a reduction per source, and settle every unsettled vertex with
//! δ ≤ Δ. [`martin`](super::martin) is the same loop with Δ = min δ(u).
//!
//! Every kernel touches all `b·n` items per iteration. Complexity: O(n + m) work per iteration,
//! at most n iterations per batch (each settles at least one vertex of every unfinished source).

use super::buffers::{Batch, DistBuf};
use super::{iterate, take_flag, Algorithm, Ctx, Setup, Spec};
use tuccompi::device::Kernel;
use tuccompi::device::{DBuf, Local};
use tuccompi::Result;

/// The algorithm as [`GpuAlgorithm::Crauser`](crate::apsp::GpuAlgorithm::Crauser).
pub(super) const SPEC: Spec = Spec {
    launched: LAUNCHED,
    bytes_per_vertex: |dist| dist + 2,
    make: |setup| Ok(Box::new(Settle::new(setup, Threshold::Crauser)?)),
    batch_major: true,
};

/// The kernels of the settle-by-threshold loop (Crauser and Martin).
pub(super) const LAUNCHED: &[&str] = &[
    "sssp_init",
    "sssp_relax",
    "sssp_minimum",
    "sssp_update",
    "sssp_summary",
];

/// How Δ is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Threshold {
    /// Δ = min δ(u) + ω(u).
    Crauser,
    /// Δ = min δ(u).
    Martin,
}

/// Kernels and buffers of one queue.
pub(super) struct Settle {
    threshold: Threshold,
    init: Kernel,
    relax: Kernel,
    minimum: Kernel,
    update: Kernel,
    settled: DBuf<u8>,
    frontier: DBuf<u8>,
    delta: DistBuf,
    changed: DBuf<u32>,
}

impl Settle {
    pub(super) fn new(setup: &Setup<'_>, threshold: Threshold) -> Result<Self> {
        let items = setup.items();
        Ok(Settle {
            threshold,
            init: setup.kernel("sssp_init")?,
            relax: setup.kernel("sssp_relax")?,
            minimum: setup.kernel("sssp_minimum")?,
            update: setup.kernel("sssp_update")?,
            settled: DBuf::new(setup.device, items)?,
            frontier: DBuf::new(setup.device, items)?,
            delta: setup.dist_buf(setup.batch())?,
            changed: DBuf::new(setup.device, 1)?,
        })
    }

    /// Enqueue one iteration: relax, minimum, update.
    fn step(&self, cx: &Ctx<'_>, batch: &Batch) -> Result<()> {
        let g = &cx.sh.graph;
        let items = cx.n * cx.b;
        let (nn, bb) = (cx.n as u32, cx.b as u32);
        let gpt = cx.sh.params.groups_per_task();
        let dsize = if cx.job.wide { 8 } else { 4 };
        let lmin = cx.local("sssp_minimum")?;
        let use_omega = (self.threshold == Threshold::Crauser) as u32;
        cx.q.launch(
            &self.relax,
            items,
            Some(cx.local("sssp_relax")?),
            &[
                &g.off,
                &g.tgt,
                &g.wt,
                &batch.dist,
                &self.settled,
                &self.frontier,
                &self.delta,
                &nn,
                &bb,
                &g.m,
            ],
        )?;
        cx.q.launch(
            &self.minimum,
            cx.b * gpt * lmin,
            Some(lmin),
            &[
                &batch.dist,
                &self.settled,
                &g.minw,
                &self.delta,
                &Local(lmin * dsize),
                &nn,
                &(gpt as u32),
                &use_omega,
            ],
        )?;
        cx.q.launch(
            &self.update,
            items,
            Some(cx.local("sssp_update")?),
            &[
                &batch.dist,
                &self.settled,
                &self.frontier,
                &self.delta,
                &self.changed,
                &nn,
                &bb,
            ],
        )
    }
}

impl Algorithm for Settle {
    fn solve(&mut self, cx: &Ctx<'_>, batch: &Batch, _sources: &[u32]) -> Result<usize> {
        cx.q.launch(
            &self.init,
            cx.n * cx.b,
            Some(cx.local("sssp_init")?),
            &[
                &batch.dist,
                &self.settled,
                &self.frontier,
                &batch.src,
                &(cx.n as u32),
                &(cx.b as u32),
            ],
        )?;
        cx.q.write(&mut self.changed, 0, &[0])?;
        iterate(
            self,
            cx,
            |me, _| me.step(cx, batch),
            |me| take_flag(cx.q, &mut me.changed),
        )
    }
}
