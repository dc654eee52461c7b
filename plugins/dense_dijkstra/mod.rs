//! `dense-dijkstra`: one Dijkstra per source on the adjacency matrix, as in the OpenMP/CUDA
//! Dijkstra study: each of up to n steps finds the nearest unsettled vertex (a scan on the
//! CPU; a work-group reduction on the GPU) and relaxes its matrix row. Sources are tasks, like
//! the sparse `apsp`. O(n²) per source, O(n²) memory. Non-negative weights; u32 distances when
//! n · max weight < 2^32 - 1 (always, on devices), else u64 on the CPU.

use crate::common::{
    distance_rows, load_dense, needs_wide, resolve_sources, write_summary_records, DenseInput,
    Dist, PathSummary, RowWrite,
};
use std::ops::Range;
use tuccompi::device::{DBuf, Device, KernelSource, Local, Queue};
use tuccompi::plugin::{
    Details, DeviceData, Gpu, Job, Out, Plugin, PrepareCtx, Record, Records, RecordsOut, Worker,
};
use tuccompi::sink::{NpyRows, NpyType};
use tuccompi::tuning::{Choice, LaunchParams, Request, Shape, Tuner};
use tuccompi::{Error, Result};

/// The kernel (`kernels/dense_dijkstra.cl`) and its characterization.
pub const KERNELS: KernelSource = KernelSource {
    stem: "dense_dijkstra",
    source: include_str!("../kernels/dense_dijkstra.cl"),
    characterization: include_str!("../kernels/dense_dijkstra.toml"),
};

/// The plugin.
#[derive(Debug)]
pub struct DenseDijkstra;

/// A prepared run.
pub struct DdJob {
    inputs: Vec<std::path::PathBuf>,
    check: Vec<(String, String)>,
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

/// `[dense-dijkstra]` has none but the graph plugins' run keys.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

impl Plugin for DenseDijkstra {
    fn name(&self) -> &'static str {
        "dense-dijkstra"
    }
    fn description(&self) -> &'static str {
        "dense APSP, one O(n^2) Dijkstra per source on the adjacency matrix (parallel find-min / update on GPUs)"
    }
    fn tables(&self) -> &'static [&'static str] {
        &["input"]
    }
    fn renamed_keys(&self) -> &'static [(&'static str, &'static str)] {
        crate::common::sources::RENAMED_KEYS
    }
    fn selects_tasks(&self) -> bool {
        true
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        // No options of its own: `sources`, `distances` and `format` only.
        let (NoOptions {}, keys) = crate::common::sources::split_options(ctx.plan, self.name())?;
        // Its tasks are rows, spread over the ranks: each reads rank 0's input.
        let given = crate::common::input::Input::on_this_rank(ctx.plan, ctx.share)?;
        let input = load_dense(ctx.plan, &given)?;
        let n = input.n();
        if (n as u128) * (n as u128) * 4 > 1 << 36 {
            return Err(Error::Input(format!(
                "{}: {n} vertices are too many for a dense matrix; use apsp",
                input.name()
            )));
        }
        let (w, max_weight) = match &input {
            DenseInput::Edges(list) => {
                // The CSR builder refuses negative weights (naming the line) and collapses
                // parallel arcs.
                let g = crate::graph::Csr::from_edges(list)?;
                let mut w =
                    tuccompi::filled(n * n, u32::MAX, &format!("a dense {n} x {n} matrix"))?;
                for u in 0..n {
                    for e in g.offsets[u] as usize..g.offsets[u + 1] as usize {
                        w[u * n + g.targets[e] as usize] = g.weights[e];
                    }
                }
                (w, g.max_weight())
            }
            DenseInput::Matrix(m, stats) => {
                if stats.negative {
                    return Err(Error::Input(format!(
                        "{}: the matrix has negative weights; dense-dijkstra needs weights >= 0 \
                         (fw-naive, fw-blocked and rkleene take negative weights)",
                        m.name
                    )));
                }
                if stats.max_abs >= u32::MAX as u64 {
                    return Err(Error::Input(format!(
                        "{}: the largest weight, {}, is outside 0..{}, the weights \
                         dense-dijkstra takes; rescale the weights",
                        m.name,
                        stats.max_abs,
                        u32::MAX
                    )));
                }
                let mut w =
                    tuccompi::filled(n * n, u32::MAX, &format!("a dense {n} x {n} matrix"))?;
                // The diagonal reads as no arc (a self-loop never shortens a path).
                m.fill(&mut w, u32::MAX, u32::MAX, |x| x as u32);
                m.unchanged()?;
                (w, stats.max_abs as u32)
            }
        };
        let wide = needs_wide(n, max_weight as u64);
        let (id_base, name) = (input.id_base(), input.name().to_string());
        drop(input);
        let (sources, origins) = crate::common::ids::sources(ctx.plan, &keys)?;
        let sources = resolve_sources(&keys.sources_key, &sources, origins.as_ref(), n, id_base)?;
        let ty = if wide { NpyType::U64 } else { NpyType::U32 };
        let rows = distance_rows(ctx, &keys, sources.len(), n, ty)?;
        Ok(Box::new(DdJob {
            check: crate::common::check_lines(&keys, &given),
            inputs: crate::common::input_files(&keys, &given),
            n,
            w,
            sources,
            id_base,
            wide,
            rows,
            name,
        }))
    }
}

impl Job for DdJob {
    fn tasks(&self) -> usize {
        self.sources.len()
    }
    fn details(&self) -> Details<'_> {
        Details {
            inputs: self.inputs.clone(),
            check_lines: self.check.clone(),
            bulk: self.rows.iter().collect(),
            ..Details::default()
        }
    }
    fn record_words(&self) -> usize {
        PathSummary::WORDS
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name, "n": self.n, "distance_type": if self.wide { "u64" } else { "u32" } })
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(if self.wide {
            Box::new(CpuDd::<u64>::new(self))
        } else {
            Box::new(CpuDd::<u32>::new(self))
        })
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        let n = self.n as u64;
        let mut p = tuner.params(
            &device.info,
            Request::new(
                &KERNELS,
                &["dd_sssp"],
                Shape {
                    n: self.n,
                    bytes_per_task: n * 5,
                    shared_bytes: n * n * 4,
                },
            ),
        )?;
        p.batch = Choice::fixed(
            GPU_BATCH,
            "one work-group per source: 256 sources per launch fill a GPU's compute units",
        );
        p.queues = Choice::fixed(1, "one queue: each launch already fills the device");
        Ok(p)
    }
    fn gpu_setup(&self, device: &Device, params: &LaunchParams) -> Result<DeviceData> {
        if self.wide {
            return Err(Error::Device(format!(
                "{}: n x max weight does not fit 32 bits, beyond the device kernel; run it on CPU workers (units.opencl = \"none\")",
                self.name
            )));
        }
        let nn = (self.n * self.n) as u64 * 4;
        let batch = params.batch.value;
        device.check_fits(
            nn + (batch * self.n * 5) as u64,
            nn,
            &format!("a dense {} x {} matrix", self.n, self.n),
        )?;
        device.program(&KERNELS, "")?;
        let q = device.queue()?;
        let mut w = DBuf::<u32>::new(device, self.n * self.n)?;
        q.write(&mut w, 0, &self.w)?;
        Ok(DeviceData::new(w))
    }
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let batch = gpu.batch();
        Ok(Box::new(GpuDd {
            job: self,
            w: gpu.data::<DBuf<u32>>()?,
            k: gpu.kernel(&KERNELS, "dd_sssp")?,
            dist: gpu.buffer(batch * self.n)?,
            done: gpu.buffer(batch * self.n)?,
            src: gpu.buffer(batch)?,
            batch,
            local: gpu.local("dd_sssp")?,
            q: gpu.queue,
        }))
    }
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        if let Some(rows) = &self.rows {
            rows.sync()?;
        }
        write_summary_records(out, &self.sources, self.id_base, self.n, None, records)
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
            out.put(t, &PathSummary::of(&self.dist));
            if let Some(rows) = &self.job.rows {
                D::write_row(rows, t, &self.dist)?;
            }
        }
        Ok(())
    }
}

/// Sources per launch on a device (one work-group each).
const GPU_BATCH: usize = 256;

struct GpuDd<'a> {
    job: &'a DdJob,
    w: &'a DBuf<u32>,
    q: Queue,
    k: tuccompi::device::Kernel,
    dist: DBuf<u32>,
    done: DBuf<u8>,
    src: DBuf<u32>,
    batch: usize,
    local: usize,
}

impl Worker for GpuDd<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let n = self.job.n;
        let mut start = range.start;
        let mut row = vec![0u32; n];
        while start < range.end {
            let end = (start + self.batch).min(range.end);
            let b = end - start;
            self.q
                .write(&mut self.src, 0, &self.job.sources[start..end])?;
            let l = self.local;
            let local = Local::of::<u32>(l);
            self.q.launch(
                &self.k,
                b * l,
                Some(l),
                &[
                    self.w,
                    &self.dist,
                    &self.done,
                    &self.src,
                    &local,
                    &local,
                    &(n as u32),
                ],
            )?;
            for (i, t) in (start..end).enumerate() {
                self.q.read(&self.dist, i * n, &mut row)?;
                out.put(t, &PathSummary::of(&row));
                if let Some(rows) = &self.job.rows {
                    rows.write_u32(t, &row)?;
                }
            }
            start = end;
        }
        Ok(())
    }
}
