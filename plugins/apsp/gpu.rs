//! The GPU half of APSP: batched frontier SSSP on an OpenCL device.
//!
//! A chunk of sources is processed `batch` at a time; every kernel works on batch × n items,
//! so launches and the graph's arcs are shared by the batch. The host checks the "something
//! settled" flag after 1, 2, 4 ... 64 iterations instead of after each one (iterations after
//! the end are no-ops), and the per-source summary is reduced on the device, so only
//! `batch × groups × 4` words come back unless distance rows are requested.

use super::{ApspJob, GpuAlgorithm, RowWrite};
use crate::device::{Arg, DBuf, Device, Queue};
use crate::plugin::{DeviceSetup, GpuHalf, RecordsOut, Worker};
use crate::tuning::{characterizations, predict, LaunchParams, Shape};
use crate::{Error, Result};
use opencl3::kernel::Kernel;
use std::ops::Range;

/// What each device keeps for all its queues.
struct Shared {
    off: DBuf<u32>,
    tgt: DBuf<u32>,
    wt: DBuf<u32>,
    minw: DBuf<u32>,
    params: LaunchParams,
}

impl ApspJob {
    fn build_options(&self) -> &'static str {
        if self.wide {
            "-DWIDE=1"
        } else {
            ""
        }
    }
    fn dist_bytes(&self) -> u64 {
        if self.wide {
            8
        } else {
            4
        }
    }
}

impl GpuHalf for ApspJob {
    fn setup(&self, device: &Device, queues: Option<usize>) -> Result<DeviceSetup> {
        let g = &self.graph;
        if self.wide && !device.info.int64_atomics {
            return Err(Error::Device(format!(
                "'{}' lacks 64-bit atomics (cl_khr_int64_base_atomics and _extended_atomics), which \
                 this graph needs: n x max weight = {} x {} does not fit 32 bits. Use CPU workers \
                 (units.opencl = \"none\") or another device",
                device.info.name,
                g.n,
                g.max_weight()
            )));
        }
        let n = g.n as u64;
        let two_phase = self.options.gpu_algorithm == GpuAlgorithm::TwoPhase;
        let shape = Shape {
            n: g.n,
            mean_degree: g.m() as f64 / g.n.max(1) as f64,
            bytes_per_task: n * (self.dist_bytes() * if two_phase { 2 } else { 1 } + 2) + 64,
            shared_bytes: (2 * n + 1 + 2 * g.m() as u64) * 4,
        };
        let chars = characterizations("sssp")?;
        let params = predict(
            &chars,
            &device.info,
            shape,
            self.options.batch.and_then(|b| b.value()),
            queues,
            self.options.local_size.and_then(|l| l.value()),
        );
        let total = shape.shared_bytes + params.queues.value as u64 * params.batch.value as u64 * shape.bytes_per_task;
        let largest = (params.batch.value as u64 * n * self.dist_bytes()).max(g.m() as u64 * 4);
        device.check_fits(total, largest, &format!("APSP on {} vertices, batch {}", g.n, params.batch.value))?;
        // Build now, so a kernel that fails to compile is reported once, with its log.
        device.program("sssp", self.build_options())?;
        let q = device.queue()?;
        let upload = |data: &[u32]| -> Result<DBuf<u32>> {
            let mut b = DBuf::new(device, data.len())?;
            q.write(&mut b, 0, data)?;
            Ok(b)
        };
        let shared = Shared {
            off: upload(&g.offsets)?,
            tgt: upload(&g.targets)?,
            wt: upload(&g.weights)?,
            minw: upload(&g.min_out_weight())?,
            params: params.clone(),
        };
        Ok(DeviceSetup {
            shared: Box::new(shared),
            chunk: params.batch.value,
            queues: params.queues.value,
            tuning: serde_json::to_value(&params).unwrap_or_default(),
        })
    }

    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a (dyn std::any::Any + Send + Sync),
        _queue: usize,
    ) -> Result<Box<dyn Worker + 'a>> {
        let sh = shared.downcast_ref::<Shared>().expect("APSP shared device data");
        let batch = sh.params.batch.value;
        let items = batch * self.graph.n;
        let opts = self.build_options();
        let k = |name| device.kernel("sssp", opts, name);
        let two_phase = self.options.gpu_algorithm == GpuAlgorithm::TwoPhase;
        let dist = DistBuf::new(device, items, self.wide)?;
        let aux = if two_phase { Some(DistBuf::new(device, items, self.wide)?) } else { None };
        let groups = batch * sh.params.groups_per_task.value;
        Ok(Box::new(GpuWorker {
            job: self,
            sh,
            q: device.queue()?,
            init: k("sssp_init")?,
            relax: k(if two_phase { "tp_relax" } else { "sssp_relax" })?,
            minimum: k("sssp_minimum")?,
            update: k(if two_phase { "tp_update" } else { "sssp_update" })?,
            summary: k("sssp_summary")?,
            dist,
            aux,
            settled: DBuf::new(device, items)?,
            frontier: DBuf::new(device, items)?,
            delta: DistBuf::new(device, batch, self.wide)?,
            changed: DBuf::new(device, 1)?,
            src: DBuf::new(device, batch)?,
            partial: DBuf::new(device, groups * 4)?,
        }))
    }
}

enum DistBuf {
    Narrow(DBuf<u32>),
    Wide(DBuf<u64>),
}

impl DistBuf {
    fn new(device: &Device, len: usize, wide: bool) -> Result<Self> {
        Ok(if wide { DistBuf::Wide(DBuf::new(device, len)?) } else { DistBuf::Narrow(DBuf::new(device, len)?) })
    }
    fn arg(&self) -> Arg<'_> {
        match self {
            DistBuf::Narrow(b) => Arg::U32s(b),
            DistBuf::Wide(b) => Arg::U64s(b),
        }
    }
}

struct GpuWorker<'a> {
    job: &'a ApspJob,
    sh: &'a Shared,
    q: Queue,
    init: Kernel,
    relax: Kernel,
    minimum: Kernel,
    update: Kernel,
    summary: Kernel,
    dist: DistBuf,
    aux: Option<DistBuf>,
    settled: DBuf<u8>,
    frontier: DBuf<u8>,
    delta: DistBuf,
    changed: DBuf<u32>,
    src: DBuf<u32>,
    partial: DBuf<u64>,
}

// SAFETY-free note: Kernel is Send; the worker lives on one unit thread.

impl GpuWorker<'_> {
    fn local(&self, kernel: &str) -> usize {
        self.sh.params.local[kernel].value
    }

    /// Run one batch of at most `params.batch` sources (tasks `range`).
    fn batch(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let job = self.job;
        let n = job.graph.n;
        let b = range.len();
        let items = n * b;
        let (nn, bb) = (Arg::U32(n as u32), Arg::U32(b as u32));
        let srcs: Vec<u32> = job.sources[range.clone()].to_vec();
        self.q.write(&mut self.src, 0, &srcs)?;
        let (sh, q) = (self.sh, &self.q);
        let algo = job.options.gpu_algorithm;
        let two_phase = algo == GpuAlgorithm::TwoPhase;
        // sssp_init(dist, settled, frontier, src, n, batch); for two-phase the same kernel
        // gives cost = dist and mask = frontier; the updating cost starts as a copy of cost.
        q.launch(&self.init, items, Some(self.local("sssp_init")), &[self.dist.arg(), Arg::U8s(&self.settled), Arg::U8s(&self.frontier), Arg::U32s(&self.src), nn, bb])?;
        if let Some(aux) = &self.aux {
            q.launch(&self.init, items, Some(self.local("sssp_init")), &[aux.arg(), Arg::U8s(&self.settled), Arg::U8s(&self.frontier), Arg::U32s(&self.src), nn, bb])?;
        }
        let gpt = sh.params.groups_per_task.value;
        let lmin = self.local("sssp_minimum");
        let dsize = if job.wide { 8 } else { 4 };
        let mut check = 1usize;
        let mut iterations = 0usize;
        // Crauser settles at least one vertex of every unfinished source per iteration and
        // two-phase is Bellman-Ford by rounds: neither needs more than n + 1 iterations.
        let limit = n + 2 + 128;
        loop {
            q.write(&mut self.changed, 0, &[0])?;
            for _ in 0..check {
                if two_phase {
                    let aux = self.aux.as_ref().expect("two-phase has an updating-cost buffer");
                    q.launch(&self.relax, items, Some(self.local("tp_relax")), &[Arg::U32s(&sh.off), Arg::U32s(&sh.tgt), Arg::U32s(&sh.wt), self.dist.arg(), aux.arg(), Arg::U8s(&self.frontier), nn, bb])?;
                    q.launch(&self.update, items, Some(self.local("tp_update")), &[self.dist.arg(), aux.arg(), Arg::U8s(&self.frontier), Arg::U32s(&self.changed), nn, bb])?;
                } else {
                    q.launch(&self.relax, items, Some(self.local("sssp_relax")), &[Arg::U32s(&sh.off), Arg::U32s(&sh.tgt), Arg::U32s(&sh.wt), self.dist.arg(), Arg::U8s(&self.settled), Arg::U8s(&self.frontier), self.delta.arg(), nn, bb])?;
                    let use_omega = (algo == GpuAlgorithm::Crauser) as u32;
                    q.launch(&self.minimum, b * gpt * lmin, Some(lmin), &[self.dist.arg(), Arg::U8s(&self.settled), Arg::U32s(&sh.minw), self.delta.arg(), Arg::Local(lmin * dsize), nn, Arg::U32(gpt as u32), Arg::U32(use_omega)])?;
                    q.launch(&self.update, items, Some(self.local("sssp_update")), &[self.dist.arg(), Arg::U8s(&self.settled), Arg::U8s(&self.frontier), self.delta.arg(), Arg::U32s(&self.changed), nn, bb])?;
                }
            }
            iterations += check;
            let mut flag = [0u32];
            q.read(&self.changed, 0, &mut flag)?;
            if flag[0] == 0 {
                break;
            }
            if iterations > limit {
                return Err(Error::Device(format!(
                    "{algo:?} SSSP did not converge after {iterations} iterations on {n} vertices (a bug; please report it)"
                )));
            }
            check = (check * 2).min(64);
        }
        let lsum = self.local("sssp_summary");
        q.launch(&self.summary, b * gpt * lsum, Some(lsum), &[self.dist.arg(), Arg::U64s(&self.partial), Arg::Local(4 * lsum * 8), nn, Arg::U32(gpt as u32)])?;
        let mut partial = vec![0u64; b * gpt * 4];
        q.read(&self.partial, 0, &mut partial)?;
        for (i, t) in range.clone().enumerate() {
            let (mut cnt, mut sum, mut max) = (0u64, 0u128, 0u64);
            for p in partial[i * gpt * 4..(i + 1) * gpt * 4].chunks_exact(4) {
                cnt += p[0];
                sum += p[1] as u128 | (p[2] as u128) << 64;
                max = max.max(p[3]);
            }
            let rec = out.record(t);
            rec[0] = cnt;
            rec[1] = sum as u64;
            rec[2] = (sum >> 64) as u64;
            rec[3] = max;
        }
        if let Some(rows) = &job.rows {
            match &self.dist {
                DistBuf::Narrow(d) => write_rows::<u32>(q, d, rows, range, n)?,
                DistBuf::Wide(d) => write_rows::<u64>(q, d, rows, range, n)?,
            }
        }
        tracing::trace!(iterations, sources = b, "batch done");
        Ok(())
    }
}

fn write_rows<D: crate::device::Scalar + RowWrite>(
    q: &Queue,
    d: &DBuf<D>,
    rows: &crate::sink::NpyRows,
    range: Range<usize>,
    n: usize,
) -> Result<()> {
    let mut row = vec![D::default(); n];
    for (i, t) in range.enumerate() {
        q.read(d, i * n, &mut row)?;
        D::write_row(rows, t, &row)?;
    }
    Ok(())
}

impl Worker for GpuWorker<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let batch = self.sh.params.batch.value;
        let mut start = range.start;
        while start < range.end {
            let end = (start + batch).min(range.end);
            self.batch(start..end, out)?;
            start = end;
        }
        Ok(())
    }
}
