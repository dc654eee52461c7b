//! The GPU half of APSP: batched SSSP on an OpenCL device.
//!
//! A chunk of sources is processed `batch` at a time; all state is `batch × n` (index
//! `b·n + v`), so every launch serves the whole batch and the graph's arcs are shared. The host
//! checks for the end after 1, 2, 4 ... 64 iterations rather than after each one (iterations
//! after the end are no-ops), and the per-source summary is reduced on the device, so only
//! `batch × groups × 4` words come back unless distance rows are requested.
//!
//! One file per algorithm ([`GpuAlgorithm`]), each an [`Algorithm`] with its own kernels and
//! buffers: `crauser` and `martin` (relax / minimum / update over every vertex),
//! `two_phase` (mask / cost / updating cost over every vertex), `worklist` (rounds over a
//! compacted frontier only), [`phast`] (PHAST: an upward search per source, then one sweep over
//! the contraction hierarchy's levels, `k` trees at once, distances vertex-major, with its own
//! kernel file and tuning rules). What every algorithm shares is in one place: the graph on the
//! device ([`GraphBuffers`], one copy per device) and the batch's distances, sources and
//! summary reduction (`buffers::Batch`, one per queue).
//!
//! Adding an algorithm: a file here with a [`Spec`] (the kernels it launches, its device bytes
//! per source, its constructor) and an [`Algorithm`] impl; a variant of [`GpuAlgorithm`]; one arm
//! in [`GpuAlgorithm::spec`]. An algorithm whose distances are not batch-major `b·n + v` (or that
//! summarizes on its own) overrides [`Algorithm::summaries`] and [`Algorithm::write_rows`].
//!
//! Every launch is checked ([`Queue::launch`]): its arguments against the parameters
//! `kernels/sssp.cl` declares (a [`DistBuf`] is the width of `dist_t` for the build options of
//! [`Setup::kernel`]), and every buffer against what `kernels/sssp.toml` declares the kernel may
//! index from the `n` and `b` it is given: every per-source buffer holds `batch × n` items (or
//! `batch`, or `3 × batch`), the graph's arcs the `m` its offsets reach ([`GraphBuffers::m`]).

mod buffers;
mod crauser;
mod martin;
pub mod paths;
pub mod phast;
pub mod reach;
pub mod sweep;
mod two_phase;
mod worklist;

use super::{width, ApspJob, GpuAlgorithm};
use crate::common::PathSummary;
use buffers::Batch;
use std::ops::Range;
use tuccompi::device::{DBuf, Device, KernelSource, Queue};
use tuccompi::plugin::{Gpu, RecordsOut, Worker};
use tuccompi::sink::NpyRows;
use tuccompi::tuning::{LaunchParams, Request, Setting, Shape, Tuner};
use tuccompi::{Error, Result};

pub use buffers::DistBuf;

/// The SSSP kernels (`kernels/sssp.cl`) and their characterization (`kernels/sssp.toml`).
pub const KERNELS: KernelSource = KernelSource {
    stem: "sssp",
    source: include_str!("../../kernels/sssp.cl"),
    characterization: include_str!("../../kernels/sssp.toml"),
};

/// What the half knows about an algorithm before any queue exists.
#[derive(Debug)]
pub struct Spec {
    /// The kernels of [`KERNELS`] it launches (the tuner reads their characterizations).
    pub launched: &'static [&'static str],
    /// Device bytes per vertex of each source in flight, given the distance width in bytes.
    pub bytes_per_vertex: fn(dist_bytes: u64) -> u64,
    /// Its per-queue state: kernels and buffers.
    pub make: fn(&Setup<'_>) -> Result<Box<dyn Algorithm>>,
    /// Whether its distances are batch-major `b·n + v` in the shared `Batch` (whose summary
    /// and row reads then serve it); false: the batch holds only the sources, and the algorithm
    /// keeps its own distances and overrides [`Algorithm::summaries`] and
    /// [`Algorithm::write_rows`] (PHAST, vertex-major).
    pub batch_major: bool,
}

impl GpuAlgorithm {
    /// The algorithm's [`Spec`].
    pub fn spec(self) -> &'static Spec {
        match self {
            GpuAlgorithm::Crauser => &crauser::SPEC,
            GpuAlgorithm::Martin => &martin::SPEC,
            GpuAlgorithm::TwoPhase => &two_phase::SPEC,
            GpuAlgorithm::Worklist => &worklist::SPEC,
            GpuAlgorithm::Phast => &phast::SPEC,
        }
    }
}

/// The graph on one device, shared by its queues.
#[derive(Debug)]
pub struct GraphBuffers {
    /// CSR offsets (n + 1).
    pub off: DBuf<u32>,
    /// Arc targets (m).
    pub tgt: DBuf<u32>,
    /// Arc weights (m).
    pub wt: DBuf<u32>,
    /// Lightest arc out of each vertex (n; Crauser's ω).
    pub minw: DBuf<u32>,
    /// The arcs the offsets reach (the last offset: `m`), which the kernels that walk the graph
    /// are given for their launches' checks.
    pub m: u32,
}

impl GraphBuffers {
    /// Upload `g` through `q`.
    fn upload(device: &Device, q: &Queue, g: &crate::graph::Csr) -> Result<Self> {
        let upload = |data: &[u32]| -> Result<DBuf<u32>> {
            let mut b = DBuf::new(device, data.len())?;
            q.write(&mut b, 0, data)?;
            Ok(b)
        };
        Ok(GraphBuffers {
            off: upload(&g.offsets)?,
            tgt: upload(&g.targets)?,
            wt: upload(&g.weights)?,
            minw: upload(&g.min_out_weight())?,
            m: g.offsets.last().copied().unwrap_or(0),
        })
    }
}

/// What each device keeps for all its queues.
#[derive(Debug)]
pub struct Shared {
    /// The graph.
    pub graph: std::sync::Arc<GraphBuffers>,
    /// The contraction hierarchy, for PHAST.
    pub phast: Option<phast::DeviceHierarchy>,
    /// The launch parameters.
    pub params: LaunchParams,
}

/// What an algorithm's constructor gets: the device, the job and the launch parameters.
#[derive(Debug)]
pub struct Setup<'a> {
    /// The device.
    pub device: &'a Device,
    /// The job.
    pub job: &'a ApspJob,
    /// The launch parameters.
    pub params: &'a LaunchParams,
}

impl Setup<'_> {
    /// Kernel `name` of [`KERNELS`], built for this job's distance width.
    pub fn kernel(&self, name: &str) -> Result<tuccompi::device::Kernel> {
        self.device.kernel(&KERNELS, self.job.build_options(), name)
    }
    /// Most sources per batch.
    pub fn batch(&self) -> usize {
        self.params.batch.value
    }
    /// `batch × n`: items of per-source state (1 for an algorithm that keeps its own,
    /// [`Spec::batch_major`]).
    pub fn items(&self) -> usize {
        if self.job.options.gpu_algorithm.spec().batch_major {
            self.batch() * self.job.graph.n
        } else {
            1
        }
    }
    /// A distance buffer of `len` elements of this job's width.
    pub fn dist_buf(&self, len: usize) -> Result<DistBuf> {
        DistBuf::new(self.device, len, self.job.wide)
    }
}

/// What an algorithm sees while it runs one batch.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The job (graph, options, distance width).
    pub job: &'a ApspJob,
    /// The device's graph and launch parameters.
    pub sh: &'a Shared,
    /// This worker's queue.
    pub q: &'a Queue,
    /// The device.
    pub device: &'a Device,
    /// Vertices.
    pub n: usize,
    /// Sources in this batch (at most `params.batch`).
    pub b: usize,
    /// The batch's tasks.
    pub tasks: Range<usize>,
}

impl Ctx<'_> {
    /// The local size chosen for kernel `name` (an error naming it when it has none).
    pub fn local(&self, name: &str) -> Result<usize> {
        self.sh.params.local(name)
    }
}

/// One GPU SSSP algorithm bound to one queue: its own kernels and buffers, made once per queue
/// by its [`Spec::make`] and reused for every batch.
///
/// Per batch the worker uploads the sources (`batch.src`, and `sources` on the host), calls
/// [`solve`](Algorithm::solve), then [`summaries`](Algorithm::summaries) for the records and,
/// when distance rows are requested, [`write_rows`](Algorithm::write_rows).
pub trait Algorithm: Send {
    /// Compute the shortest paths of the batch's `cx.b` sources; by default the distances end
    /// in `batch.dist` at `b·n + v`. Returns the iterations it took (for the log).
    fn solve(&mut self, cx: &Ctx<'_>, batch: &Batch, sources: &[u32]) -> Result<usize>;
    /// One summary per source of the batch, tasks `tasks` (default: the device reduction over
    /// `batch.dist`; with `[apsp] targets`, the targets gathered from the rows read back, which
    /// also writes their distance rows when requested).
    fn summaries(
        &mut self,
        cx: &Ctx<'_>,
        batch: &Batch,
        tasks: Range<usize>,
    ) -> Result<Vec<PathSummary>> {
        if cx.job.targets.is_some() {
            batch.target_summaries(cx, tasks)
        } else {
            batch.summaries(cx)
        }
    }
    /// Where the batch's distances are, for the predecessor kernel (default: `batch.dist`,
    /// `b·n + v`).
    fn distances<'b>(&'b self, cx: &Ctx<'b>, batch: &'b Batch) -> paths::DistView<'b> {
        paths::DistView {
            dist: match &batch.dist {
                DistBuf::Narrow(d) => paths::DistRef::Narrow(d),
                DistBuf::Wide(d) => paths::DistRef::Wide(d),
            },
            index: None,
            vstride: 1,
            jstride: cx.n,
        }
    }
    /// Write the batch's distance rows (tasks `tasks`) into `rows` (default: read `batch.dist`
    /// row by row; with targets, [`summaries`](Algorithm::summaries) wrote them).
    fn write_rows(
        &mut self,
        cx: &Ctx<'_>,
        batch: &Batch,
        tasks: Range<usize>,
        rows: &NpyRows,
    ) -> Result<()> {
        if cx.job.targets.is_some() {
            return Ok(());
        }
        batch.write_rows(cx, tasks, rows)
    }
    /// Where the batch's distances lie after [`solve`](Algorithm::solve), for the
    /// `[apsp.reach]` folds (default: `batch.dist` at `b·n + v`).
    fn layout<'b>(&'b self, cx: &Ctx<'_>, batch: &'b Batch) -> reach::Layout<'b> {
        reach::Layout {
            dist: batch.dist.arg(),
            vstride: 1,
            tstride: cx.n,
        }
    }
}

/// Run iterations of `step` (which enqueues one iteration) until `done` (which reads the "not
/// done" word) says so; the check doubles from 1 to 64 iterations apart. Errors past the bound
/// every algorithm here meets: Crauser and Martin settle at least one vertex of every unfinished
/// source per iteration; two-phase is Bellman-Ford by rounds (at most n + 1); the work list adds
/// at most one round per threshold step, and a step always reaches a far vertex.
pub fn iterate<S>(
    state: &mut S,
    cx: &Ctx<'_>,
    mut step: impl FnMut(&mut S, usize) -> Result<()>,
    mut done: impl FnMut(&mut S) -> Result<bool>,
) -> Result<usize> {
    let (mut check, mut k) = (1usize, 0usize);
    loop {
        for _ in 0..check {
            step(state, k)?;
            k += 1;
        }
        if done(state)? {
            return Ok(k);
        }
        if k > iteration_limit(cx.n) {
            return Err(not_converged(cx, k));
        }
        check = (check * 2).min(64);
    }
}

/// The most iterations any algorithm here needs on `n` vertices (see [`iterate`]).
pub fn iteration_limit(n: usize) -> usize {
    2 * n + 2 + 128
}

/// The error for an algorithm that ran past [`iteration_limit`].
pub fn not_converged(cx: &Ctx<'_>, k: usize) -> Error {
    Error::Device(format!(
        "{:?} SSSP did not converge after {k} iterations on {} vertices (a bug; please report it)",
        cx.job.options.gpu_algorithm, cx.n
    ))
}

/// Read a flag word, and clear it for the next block of iterations; true when it was 0.
pub fn take_flag(q: &Queue, flag: &mut DBuf<u32>) -> Result<bool> {
    let mut v = [0u32];
    q.read(flag, 0, &mut v)?;
    if v[0] != 0 {
        q.write(flag, 0, &[0])?;
    }
    Ok(v[0] == 0)
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
    /// Device bytes per source in flight for the chosen algorithm.
    fn bytes_per_source(&self) -> u64 {
        let spec = self.options.gpu_algorithm.spec();
        64 + self.graph.n as u64 * (spec.bytes_per_vertex)(self.dist_bytes())
    }
    /// The kernel set's name in the tuning cache (`apsp.worklist.u32`).
    fn cache_name(&self) -> String {
        format!(
            "apsp.{:?}.{}",
            self.options.gpu_algorithm,
            if self.wide { "u64" } else { "u32" }
        )
        .to_lowercase()
    }
}

/// The kernel files of the job's GPU half ([`Job::kernels`](tuccompi::plugin::Job::kernels)):
/// the file of the algorithm that runs only (so `TUCCOMPI_KERNELS` needs only that one),
/// `kernels/paths.cl` when predecessors are asked, `kernels/reach.cl` when the job folds its
/// trees (`[apsp.reach]`).
pub fn kernel_files(job: &ApspJob) -> &'static [KernelSource] {
    match (
        job.options.gpu_algorithm == GpuAlgorithm::Phast,
        job.paths.is_some(),
        job.reach.is_some(),
    ) {
        (true, false, false) => &[phast::KERNELS],
        (true, true, false) => &[phast::KERNELS, paths::KERNELS],
        (true, false, true) => &[phast::KERNELS, reach::KERNELS],
        (true, true, true) => &[phast::KERNELS, paths::KERNELS, reach::KERNELS],
        (false, false, false) => &[KERNELS],
        (false, true, false) => &[KERNELS, paths::KERNELS],
        (false, false, true) => &[KERNELS, reach::KERNELS],
        (false, true, true) => &[KERNELS, paths::KERNELS, reach::KERNELS],
    }
}

/// Launch parameters on `device` ([`Job::gpu_params`](tuccompi::plugin::Job::gpu_params)).
pub fn params(job: &ApspJob, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
    // The tuner's refusals name their key (`[apsp] batch = 0`); this adds where it was set.
    launch_params(job, device, tuner).map_err(|e| job.origins.locate(e))
}

/// Set the half up on `device`: check that it fits, build the program, upload the graph (and
/// the hierarchy for PHAST) once for its queues
/// ([`Job::gpu_setup`](tuccompi::plugin::Job::gpu_setup) shares the result).
pub fn setup(job: &ApspJob, device: &Device, params: &LaunchParams) -> Result<Shared> {
    reach::check_device(job, device)?;
    let g = &job.graph;
    let phast = job.options.gpu_algorithm == GpuAlgorithm::Phast;
    if job.wide && !device.info.int64_atomics && !phast {
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
    let batch = params.batch.value as u64;
    if phast {
        // Its own memory check, indices and program (the CSR, unused, costs 4(2n + 2m)
        // bytes and keeps one shared layout for every algorithm).
        let hierarchy = phast::setup(job, device, params)?;
        return Ok(Shared {
            graph: hierarchy.graph(),
            phast: Some(hierarchy),
            params: params.clone(),
        });
    }
    if batch * n >= u32::MAX as u64 {
        return Err(Error::Config(format!(
            "[apsp] batch = {batch}: batch x n = {} must stay below 2^32; use a smaller batch",
            batch * n
        )));
    }
    let shared_bytes = (2 * n + 1 + 2 * g.m() as u64) * 4;
    let total = shared_bytes + params.queues.value as u64 * batch * job.bytes_per_source();
    let largest = (batch * n * job.dist_bytes()).max(g.m() as u64 * 4);
    device.check_fits(
        total,
        largest,
        &format!("APSP on {} vertices, batch {batch} ([apsp] batch)", g.n),
    )?;
    // Build now, so a kernel that fails to compile is reported once, with its log.
    device.program(&KERNELS, job.build_options())?;
    let q = device.queue()?;
    Ok(Shared {
        graph: std::sync::Arc::new(GraphBuffers::upload(device, &q, g)?),
        phast: None,
        params: params.clone(),
    })
}

/// A worker owning one queue of a device that [`setup`] prepared
/// ([`Job::gpu_worker`](tuccompi::plugin::Job::gpu_worker)).
pub fn worker<'a>(job: &'a ApspJob, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
    let shared: &'a Shared = gpu.data()?;
    let (device, queue) = (gpu.device, gpu.queue);
    let setup = Setup {
        device,
        job,
        params: &shared.params,
    };
    Ok(Box::new(GpuWorker {
        job,
        sh: shared,
        device,
        batch: Batch::new(&setup)?,
        algo: (job.options.gpu_algorithm.spec().make)(&setup)?,
        paths: match &job.paths {
            Some(p) => Some(paths::DevicePaths::new(
                device,
                &queue,
                &p.arcs,
                job.graph.n,
                shared.params.batch.value,
                job.wide,
            )?),
            None => None,
        },
        q: queue,
        redo: width::Redo::default(),
        reach: reach::DeviceReach::new(job, device, shared.params.batch.value)?,
    }))
}

struct GpuWorker<'a> {
    job: &'a ApspJob,
    sh: &'a Shared,
    device: &'a Device,
    q: Queue,
    batch: Batch,
    algo: Box<dyn Algorithm>,
    paths: Option<paths::DevicePaths>,
    redo: width::Redo,
    reach: Option<reach::DeviceReach>,
}

impl GpuWorker<'_> {
    /// Run one batch of at most `params.batch` sources (tasks `range`).
    fn run_batch(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let job = self.job;
        let sources = &job.sources[range.clone()];
        self.q.write(&mut self.batch.src, 0, sources)?;
        let cx = Ctx {
            job,
            sh: self.sh,
            q: &self.q,
            device: self.device,
            n: job.graph.n,
            b: range.len(),
            tasks: range.clone(),
        };
        let iterations = self.algo.solve(&cx, &self.batch, sources)?;
        let summaries = self.algo.summaries(&cx, &self.batch, range.clone())?;
        let folded = match (&mut self.reach, &job.reach) {
            (Some(dr), Some(r)) => dr.fold(r, &cx, self.algo.layout(&cx, &self.batch))?,
            _ => vec![Vec::new(); cx.b],
        };
        let mut over = Vec::new();
        for ((t, s), words) in range.clone().zip(summaries).zip(&folded) {
            if width::overflowed(job, &s) {
                over.push(t);
            }
            super::reach::put_words(out, t, &s, words);
        }
        if let Some(rows) = &job.rows {
            self.algo
                .write_rows(&cx, &self.batch, range.clone(), rows)?;
        }
        if let Some(p) = &mut self.paths {
            let view = self.algo.distances(&cx, &self.batch);
            p.trees(&cx, view, &self.batch, range, &over)?;
        }
        // u32 trees that overflowed: redone in u64 on the host (their rows overwritten).
        for t in over {
            let s = self.redo.tree(job, t)?;
            super::reach::put_redone(job, out, t, &s);
        }
        tracing::trace!(iterations, sources = cx.b, "batch done");
        Ok(())
    }
}

impl Worker for GpuWorker<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let batch = self.sh.params.batch.value;
        let mut start = range.start;
        while start < range.end {
            let end = (start + batch).min(range.end);
            self.run_batch(start..end, out)?;
            start = end;
        }
        // The compact form's walked paths on disk before the chunk is journaled.
        crate::apsp::paths::chunk_done(self.job)
    }
}

/// [`params`] of the frontier algorithms and of GPU PHAST.
fn launch_params(job: &ApspJob, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
    if job.options.gpu_algorithm == GpuAlgorithm::Phast {
        return phast::params(job, device, tuner);
    }

    let g = &job.graph;
    let n = g.n as u64;
    let shape = Shape {
        n: g.n,
        bytes_per_task: job.bytes_per_source(),
        shared_bytes: (2 * n + 1 + 2 * g.m() as u64) * 4,
    };
    tuner.params(
        &device.info,
        Request {
            kernels: &KERNELS,
            launched: job.options.gpu_algorithm.spec().launched,
            cache_name: Some(job.cache_name()),
            shape,
            batch: Setting::from_config(job.options.batch.and_then(|b| b.value()), "[apsp] batch"),
            local_size: Setting::from_config(
                job.options.local_size.and_then(|l| l.value()),
                "[apsp] local_size",
            ),
        },
    )
}
