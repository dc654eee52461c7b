//! `dense-dijkstra`: one Dijkstra per source on the adjacency matrix, as in the OpenMP/CUDA
//! Dijkstra study: each of up to n steps finds the nearest unsettled vertex (a scan on the
//! CPU; a work-group reduction on the GPU) and relaxes its matrix row. Sources are tasks, like
//! the sparse `apsp`. O(n²) per source, O(n²) memory. Non-negative weights; u32 distances when
//! n · max weight < 2^32 - 1 (always, on devices), else u64 on the CPU.

use crate::device::{Arg, DBuf, Device, Queue};
use crate::plugin::{
    CpuHalf, DeviceSetup, GpuHalf, Job, Plugin, PrepareCtx, Records, RecordsOut, Worker,
};
use crate::plugins::apsp::dijkstra::Dist;
use crate::plugins::apsp::{
    load_graph, resolve_sources, summarize, write_summary, RowWrite, RECORD_WORDS,
};
use crate::sink::{NpyRows, NpyType};
use crate::{Error, Result};
use std::ops::Range;
use std::path::Path;

/// The plugin.
#[derive(Debug)]
pub struct DenseDijkstra;

/// A prepared run.
pub struct DdJob {
    n: usize,
    w: Vec<u32>,
    sources: Vec<u32>,
    id_base: u64,
    wide: bool,
    rows: Option<NpyRows>,
    name: String,
}

impl std::fmt::Debug for DdJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DdJob(n={})", self.n)
    }
}

impl Plugin for DenseDijkstra {
    fn name(&self) -> &'static str {
        "dense-dijkstra"
    }
    fn description(&self) -> &'static str {
        "dense APSP, one O(n^2) Dijkstra per source on the adjacency matrix (parallel find-min / update on GPUs)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        if !ctx.plan.plugin_options.is_empty() {
            return Err(Error::Config(format!(
                "[dense-dijkstra] takes no options; remove {:?}",
                ctx.plan.plugin_options.keys().collect::<Vec<_>>()
            )));
        }
        let list = load_graph(ctx.plan)?;
        let n = list.n;
        if (n as u128) * (n as u128) * 4 > 1 << 36 {
            return Err(Error::Input(format!(
                "{}: {n} vertices are too many for a dense matrix; use apsp",
                list.origin.name
            )));
        }
        // The CSR builder refuses negative weights (naming the line) and collapses parallel arcs.
        let g = crate::graph::Csr::from_edges(&list)?;
        let mut w = crate::filled(n * n, u32::MAX, &format!("a dense {n} x {n} matrix"))?;
        for u in 0..n {
            for e in g.offsets[u] as usize..g.offsets[u + 1] as usize {
                w[u * n + g.targets[e] as usize] = g.weights[e];
            }
        }
        let wide = n as u128 * g.max_weight() as u128 >= u32::MAX as u128;
        let sources = resolve_sources(&ctx.plan.sources, n, list.id_base)?;
        let rows = if ctx.plan.output.distances {
            let ty = if wide { NpyType::U64 } else { NpyType::U32 };
            Some(NpyRows::distances(
                ctx.out_dir,
                ctx.is_root,
                sources.len(),
                n,
                ty,
            )?)
        } else {
            None
        };
        Ok(Box::new(DdJob {
            n,
            w,
            sources,
            id_base: list.id_base,
            wide,
            rows,
            name: list.origin.name,
        }))
    }
}

impl Job for DdJob {
    fn tasks(&self) -> usize {
        self.sources.len()
    }
    fn record_words(&self) -> usize {
        RECORD_WORDS
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name, "n": self.n, "distance_type": if self.wide { "u64" } else { "u32" } })
    }
    fn cpu(&self) -> Option<&dyn CpuHalf> {
        Some(self)
    }
    fn gpu(&self) -> Option<&dyn GpuHalf> {
        Some(self)
    }
    fn finish(&self, records: &Records, dir: &Path) -> Result<serde_json::Value> {
        if let Some(rows) = &self.rows {
            rows.sync()?;
        }
        write_summary(dir, &self.sources, self.id_base, self.n, records)
    }
}

/// O(n²) Dijkstra from `s` on the matrix `w` (u32::MAX = no arc).
fn dense_sssp<D: Dist + From<u32>>(
    w: &[u32],
    n: usize,
    s: usize,
    dist: &mut [D],
    done: &mut [bool],
) {
    dist.fill(D::INF);
    done.fill(false);
    dist[s] = D::ZERO;
    for _ in 0..n {
        let mut best = (D::INF, usize::MAX);
        for (v, (&d, &f)) in dist.iter().zip(done.iter()).enumerate() {
            if !f && d < best.0 {
                best = (d, v);
            }
        }
        let (du, u) = best;
        if u == usize::MAX {
            break;
        }
        done[u] = true;
        for (v, &wuv) in w[u * n..(u + 1) * n].iter().enumerate() {
            if wuv != u32::MAX && !done[v] {
                let nd = du.plus(wuv);
                if nd < dist[v] {
                    dist[v] = nd;
                }
            }
        }
    }
}

impl CpuHalf for DdJob {
    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(if self.wide {
            Box::new(CpuDd::<u64>::new(self))
        } else {
            Box::new(CpuDd::<u32>::new(self))
        })
    }
}

struct CpuDd<'a, D> {
    job: &'a DdJob,
    dist: Vec<D>,
    done: Vec<bool>,
}

impl<'a, D: Dist + From<u32>> CpuDd<'a, D> {
    fn new(job: &'a DdJob) -> Self {
        CpuDd {
            job,
            dist: vec![D::INF; job.n],
            done: vec![false; job.n],
        }
    }
}

impl<D: Dist + From<u32> + RowWrite> Worker for CpuDd<'_, D> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in range {
            dense_sssp(
                &self.job.w,
                self.job.n,
                self.job.sources[t] as usize,
                &mut self.dist,
                &mut self.done,
            );
            summarize(&self.dist, out.record(t));
            if let Some(rows) = &self.job.rows {
                D::write_row(rows, t, &self.dist)?;
            }
        }
        Ok(())
    }
}

/// Sources per launch on a device (one work-group each).
const GPU_BATCH: usize = 256;
const GPU_LOCAL: usize = 256;

impl GpuHalf for DdJob {
    fn setup(&self, device: &Device, _queues: Option<usize>) -> Result<DeviceSetup> {
        if self.wide {
            return Err(Error::Device(format!(
                "{}: n x max weight does not fit 32 bits, beyond the device kernel; run it on CPU workers (units.opencl = \"none\")",
                self.name
            )));
        }
        let nn = (self.n * self.n) as u64 * 4;
        device.check_fits(
            nn + (GPU_BATCH * self.n * 5) as u64,
            nn,
            &format!("a dense {} x {} matrix", self.n, self.n),
        )?;
        device.program("fw", "")?;
        let q = device.queue()?;
        let mut w = DBuf::<u32>::new(device, self.n * self.n)?;
        q.write(&mut w, 0, &self.w)?;
        Ok(DeviceSetup {
            shared: Box::new(w),
            chunk: GPU_BATCH,
            queues: 1,
            tuning: serde_json::json!({ "batch": GPU_BATCH, "local": GPU_LOCAL }),
        })
    }

    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a (dyn std::any::Any + Send + Sync),
        _queue: usize,
    ) -> Result<Box<dyn Worker + 'a>> {
        let w = shared.downcast_ref::<DBuf<u32>>().expect("dense matrix");
        let local = GPU_LOCAL
            .min(device.info.max_work_group)
            .next_power_of_two()
            / if GPU_LOCAL.min(device.info.max_work_group).is_power_of_two() {
                1
            } else {
                2
            };
        Ok(Box::new(GpuDd {
            job: self,
            w,
            q: device.queue()?,
            k: device.kernel("fw", "", "dd_sssp")?,
            dist: DBuf::new(device, GPU_BATCH * self.n)?,
            done: DBuf::new(device, GPU_BATCH * self.n)?,
            src: DBuf::new(device, GPU_BATCH)?,
            local,
        }))
    }
}

struct GpuDd<'a> {
    job: &'a DdJob,
    w: &'a DBuf<u32>,
    q: Queue,
    k: opencl3::kernel::Kernel,
    dist: DBuf<u32>,
    done: DBuf<u8>,
    src: DBuf<u32>,
    local: usize,
}

impl Worker for GpuDd<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let n = self.job.n;
        let mut start = range.start;
        let mut row = vec![0u32; n];
        while start < range.end {
            let end = (start + GPU_BATCH).min(range.end);
            let b = end - start;
            self.q
                .write(&mut self.src, 0, &self.job.sources[start..end])?;
            let l = self.local;
            self.q.launch(
                &self.k,
                b * l,
                Some(l),
                &[
                    Arg::U32s(self.w),
                    Arg::U32s(&self.dist),
                    Arg::U8s(&self.done),
                    Arg::U32s(&self.src),
                    Arg::Local(l * 4),
                    Arg::Local(l * 4),
                    Arg::U32(n as u32),
                ],
            )?;
            for (i, t) in (start..end).enumerate() {
                self.q.read(&self.dist, i * n, &mut row)?;
                summarize(&row, out.record(t));
                if let Some(rows) = &self.job.rows {
                    rows.write_u32(t, &row)?;
                }
            }
            start = end;
        }
        Ok(())
    }
}
