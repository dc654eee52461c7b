//! The multi-GPU Dijkstra paper's two kernels over mask / cost / updating-cost arrays: relax
//! the arcs out of masked vertices into the updating cost, then move improved costs back and
//! mask their vertices; Bellman-Ford-like rounds until no cost changes.
//!
//! Every kernel touches all `b·n` items per round. Complexity: O(n + m) work per round, at most
//! n + 1 rounds per batch.

use super::buffers::{Batch, DistBuf};
use super::{iterate, take_flag, Algorithm, Ctx, Setup, Spec};
use tuccompi::device::DBuf;
use tuccompi::device::Kernel;
use tuccompi::Result;

/// The algorithm as [`GpuAlgorithm::TwoPhase`](crate::apsp::GpuAlgorithm::TwoPhase).
pub(super) const SPEC: Spec = Spec {
    launched: &["sssp_init", "tp_relax", "tp_update", "sssp_summary"],
    bytes_per_vertex: |dist| 2 * dist + 2,
    make: |setup| Ok(Box::new(TwoPhase::new(setup)?)),
    batch_major: true,
};

/// Kernels and buffers of one queue.
struct TwoPhase {
    init: Kernel,
    relax: Kernel,
    update: Kernel,
    upd: DistBuf,
    settled: DBuf<u8>,
    mask: DBuf<u8>,
    changed: DBuf<u32>,
}

impl TwoPhase {
    fn new(setup: &Setup<'_>) -> Result<Self> {
        let items = setup.items();
        Ok(TwoPhase {
            init: setup.kernel("sssp_init")?,
            relax: setup.kernel("tp_relax")?,
            update: setup.kernel("tp_update")?,
            upd: setup.dist_buf(items)?,
            settled: DBuf::new(setup.device, items)?,
            mask: DBuf::new(setup.device, items)?,
            changed: DBuf::new(setup.device, 1)?,
        })
    }

    /// Enqueue one round: relax, update.
    fn step(&self, cx: &Ctx<'_>, batch: &Batch) -> Result<()> {
        let g = &cx.sh.graph;
        let items = cx.n * cx.b;
        let (nn, bb) = (cx.n as u32, cx.b as u32);
        cx.q.launch(
            &self.relax,
            items,
            Some(cx.local("tp_relax")?),
            &[
                &g.off,
                &g.tgt,
                &g.wt,
                &batch.dist,
                &self.upd,
                &self.mask,
                &nn,
                &bb,
                &g.m,
            ],
        )?;
        cx.q.launch(
            &self.update,
            items,
            Some(cx.local("tp_update")?),
            &[&batch.dist, &self.upd, &self.mask, &self.changed, &nn, &bb],
        )
    }
}

impl Algorithm for TwoPhase {
    fn solve(&mut self, cx: &Ctx<'_>, batch: &Batch, _sources: &[u32]) -> Result<usize> {
        // sssp_init gives cost = dist and mask = {source}; the updating cost starts as a copy of
        // the cost (a second init into it).
        let li = cx.local("sssp_init")?;
        for cost in [&batch.dist, &self.upd] {
            cx.q.launch(
                &self.init,
                cx.n * cx.b,
                Some(li),
                &[
                    cost,
                    &self.settled,
                    &self.mask,
                    &batch.src,
                    &(cx.n as u32),
                    &(cx.b as u32),
                ],
            )?;
        }
        cx.q.write(&mut self.changed, 0, &[0])?;
        iterate(
            self,
            cx,
            |me, _| me.step(cx, batch),
            |me| take_flag(cx.q, &mut me.changed),
        )
    }
}
