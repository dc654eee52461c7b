//! PHAST on the GPU (`kernels/phast.cl`): `k` shortest-path trees per batch over the job's
//! contraction hierarchy (`plugins/apsp/phast`).
//!
//! The hierarchy's downward graph (by head), upward graph, level boundaries and the vertices'
//! sweep positions are uploaded once per device ([`DeviceHierarchy`], in `Shared`). Each queue
//! owns two `held × k` distance arrays in vertex-major order (`d[p·k + j]`, `k` rounded up to a
//! multiple of 4): `init`, holding the upward searches' results and all INF between batches,
//! and `dist`, which the sweep writes; and a bit mask of `held × k` bits saying which `init`
//! entries are set. `held` is `n`, or, when the bottom level is folded (summaries only), the
//! positions above it: its rows are never written, and a source there is 0 in its own tree
//! (`phast_fold_bottom` compares with the batch's sources). A batch of `b <= k` sources is:
//!
//! 1. the upward searches: on the device (`phast_up`, one work-group per tree, Bellman-Ford
//!    rounds over the upward DAG; a tree whose frontier overflows local memory is redone on
//!    the host), or on the host (a Dijkstra per tree, then `phast_scatter`);
//! 2. the sweep: the small leading levels in one `phast_top` launch (a work-group per slice of
//!    trees, barriers between levels), then one `phast_sweep` launch per level;
//! 3. `phast_summary` + `phast_reduce`: `[reached, sum_lo, sum_hi, max]` per tree on the device
//!    (over `[apsp] targets` when set), so `4b` words come back. When nothing but these
//!    summaries is wanted, the bottom level (vertices no vertex pulls over, 45% of osm-moscow's)
//!    and the large levels above it are swept and folded at once (`phast_fold`, and
//!    `phast_fold_bottom` for the bottom level; the sweep plan's `fold_levels`, in one wave of
//!    `fold_slices` x k/4 items): the summary reads only the rows above them, and the bottom
//!    level's distances are never written;
//! 4. with `output.distances`, `phast_rows` gathers the rows in the input's numbering (or the
//!    targets' order).
//!
//! The distances are not batch-major, so the shared `Batch` holds only the sources
//! ([`Spec::batch_major`] is false) and this algorithm overrides the summaries and rows.
//!
//! Cost per batch: `levels - top + 5` launches and `O(b (n + m_down))` device work; a tree moves
//! at most `w (2n + m_down) + n/8` bytes (`w` the distance width: the sweep's writes and
//! gathers, the summary's reads, the mask), less the tails' rows still in the device's cache
//! (`benches/sweep_bytes.rs` models it) and, with levels folded, `w` per folded vertex (the
//! summary's read) and `w` more per bottom vertex (its write).
//!
//! Every launch is checked ([`Queue::launch`]): its arguments against the parameters
//! `kernels/phast.cl` declares (distances and weights of the job's width, matching `-DWIDE=1`),
//! and every buffer against what `kernels/phast.toml` declares the kernel may index, from the
//! launch's arguments: `held × stride(b)` distances and `held × ⌈stride(b)/32⌉` mask words for
//! a batch of `b <= k` trees (no kernel touches them at a position from `held` on), `b`
//! sources, `slices × b × 4` partial words (`(slices + fold_slices) × b × 4` with levels
//! folded), `b × 4` sums, `b` overflow flags, rows `chunk × targets`. The kernels that walk the
//! hierarchy are given its sizes for that check: its positions (`n`), the arcs its offsets
//! reach (`arcs`, the host's last offset) and the positions a launch's levels end at.

use super::sweep::{sweep_plan, SweepPlan, SweepRequest, FOLD_REGISTERS};
use super::{Algorithm, Batch, Ctx, DistBuf, Setup, Spec};
use crate::apsp::phast::{AnyHierarchy, ChWeight, Hierarchy};
use crate::apsp::ApspJob;
use crate::common::{PathSummary, RowWrite};
use serde::{Deserialize, Serialize};
use std::ops::Range;
use tuccompi::device::Kernel;
use tuccompi::device::{Arg, DBuf, Device, KernelArg, KernelSource, Local, Queue, Scalar};
use tuccompi::plugin::Record;
use tuccompi::sink::NpyRows;
use tuccompi::tuning::{Choice, LaunchParams, Request, Setting, Shape, Source, Tuner};
use tuccompi::{Error, Result};

/// The PHAST kernels (`kernels/phast.cl`) and their characterization (`kernels/phast.toml`).
pub const KERNELS: KernelSource = KernelSource {
    stem: "phast",
    source: include_str!("../../kernels/phast.cl"),
    characterization: include_str!("../../kernels/phast.toml"),
};

/// The kernels of [`KERNELS`] this algorithm launches (all of them).
const LAUNCHED: &[&str] = &[
    "phast_reset",
    "phast_scatter",
    "phast_up",
    "phast_sweep",
    "phast_top",
    "phast_summary",
    "phast_fold",
    "phast_fold_bottom",
    "phast_reduce",
    "phast_rows",
];

/// The algorithm as [`GpuAlgorithm::Phast`](crate::apsp::GpuAlgorithm::Phast).
pub(super) const SPEC: Spec = Spec {
    launched: LAUNCHED,
    // init and dist, and a mask bit (rounded up to a byte).
    bytes_per_vertex: |dist| 2 * dist + 1,
    make,
    batch_major: false,
};

/// Where GPU PHAST runs the per-source upward searches (`[apsp] gpu_upward`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Upward {
    /// The measured default ([`UPWARD_RULE`]).
    #[default]
    Auto,
    /// A Dijkstra per tree on the queue's host thread, then one scatter.
    Host,
    /// `phast_up` on the device (64-bit distances need 64-bit atomics).
    Device,
}

/// Why `gpu_upward = "auto"` picks what it picks.
pub const UPWARD_RULE: &str = "device when the distances' atomics exist, else host: on an \
    H200, phast_up took 0.48 ms per batch of 2048 osm-moscow trees, the host's Dijkstras 90 ms \
    on one thread";

/// A distance type the kernels take: u32, or u64 with `-DWIDE=1`.
pub trait DevWeight: ChWeight + Scalar + RowWrite {
    /// A buffer of this type for the predecessor kernel.
    fn dist_ref(b: &DBuf<Self>) -> super::paths::DistRef<'_>;
    /// The job's hierarchy at this width.
    fn of(h: &AnyHierarchy) -> Option<&Hierarchy<Self>>;
}

impl DevWeight for u32 {
    fn dist_ref(b: &DBuf<u32>) -> super::paths::DistRef<'_> {
        super::paths::DistRef::Narrow(b)
    }
    fn of(h: &AnyHierarchy) -> Option<&Hierarchy<u32>> {
        match h {
            AnyHierarchy::Narrow(h) => Some(h),
            AnyHierarchy::Wide(_) => None,
        }
    }
}

impl DevWeight for u64 {
    fn dist_ref(b: &DBuf<u64>) -> super::paths::DistRef<'_> {
        super::paths::DistRef::Wide(b)
    }
    fn of(h: &AnyHierarchy) -> Option<&Hierarchy<u64>> {
        match h {
            AnyHierarchy::Wide(h) => Some(h),
            AnyHierarchy::Narrow(_) => None,
        }
    }
}

/// The hierarchy's sizes, whatever its width.
struct Sizes {
    n: usize,
    down: usize,
    up: usize,
    level_sizes: Vec<u32>,
}

fn sizes(job: &ApspJob) -> Result<Sizes> {
    let s = |h_n: usize, down: usize, up: usize, levels: &[u32]| Sizes {
        n: h_n,
        down,
        up,
        level_sizes: levels.windows(2).map(|w| w[1] - w[0]).collect(),
    };
    Ok(match job.hierarchy.as_deref() {
        Some(AnyHierarchy::Narrow(h)) => s(h.n, h.down_tails.len(), h.up_heads.len(), &h.levels),
        Some(AnyHierarchy::Wide(h)) => s(h.n, h.down_tails.len(), h.up_heads.len(), &h.levels),
        None => return Err(no_hierarchy()),
    })
}

fn no_hierarchy() -> Error {
    Error::Device("GPU PHAST was set up without a hierarchy (a bug; please report it)".into())
}

/// The row stride of a batch of `b` trees: `b` rounded up to the sweep's 4 trees per item (the
/// extra columns are trees without a source: all INF, never read back).
fn stride(b: usize) -> usize {
    b.next_multiple_of(4)
}

/// The last of a CSR's offsets: the arcs they reach (what the kernels that walk the graph are
/// given as `arcs`, for their launches' checks).
fn last_offset(offsets: &[u32]) -> u32 {
    offsets.last().copied().unwrap_or(0)
}

/// Arguments built as [`Arg`]s, as a launch takes them.
fn refs<'a>(args: &'a [Arg<'a>]) -> Vec<&'a dyn KernelArg> {
    args.iter().map(|a| a as &dyn KernelArg).collect()
}

/// Columns of the records and rows: the targets, else every vertex.
fn cols(job: &ApspJob) -> usize {
    job.targets.as_ref().map_or(job.graph.n, Vec::len)
}

/// Trees whose distance rows one `phast_rows` launch gathers (about 16M words at most).
fn row_chunk(cols: usize, k: usize) -> usize {
    ((1usize << 24) / cols.max(1)).clamp(1, k.max(1))
}

/// Device bytes shared by the queues (the hierarchy, positions, level bounds).
fn shared_bytes(s: &Sizes, wide: bool) -> u64 {
    let w = if wide { 8 } else { 4 };
    (2 * (s.n as u64 + 1) + (s.down + s.up) as u64 + 2 * s.n as u64 + s.level_sizes.len() as u64)
        * 4
        + (s.down + s.up) as u64 * w
}

/// Launch parameters: the tuner's local sizes over the PHAST kernels, then the sweep rules for
/// the trees per batch, the queues and the sweep's own parameters
/// ([`sweep_plan`]); where the upward searches run.
pub(super) fn params(job: &ApspJob, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
    let s = sizes(job)?;
    let w = if job.wide { 8u64 } else { 4 };
    let o = &job.options;
    // With only summaries wanted the bottom level is folded (unless the config says 0 levels)
    // and holds no rows.
    let folds = job.summaries_only()
        && o.gpu_fold_levels.and_then(|f| f.value()) != Some(0)
        && s.level_sizes.len() > 1
        && match job.hierarchy.as_deref() {
            Some(AnyHierarchy::Narrow(h)) => bottom_is_free(h),
            Some(AnyHierarchy::Wide(h)) => bottom_is_free(h),
            None => false,
        };
    let held = if folds {
        s.n - *s.level_sizes.last().unwrap_or(&0) as usize
    } else {
        s.n
    };
    // init and dist, and a mask bit, per held position.
    let bytes_per_tree = held as u64 * 2 * w + (held as u64).div_ceil(8) + 64;
    let shape = Shape {
        n: s.n,
        bytes_per_task: bytes_per_tree,
        shared_bytes: shared_bytes(&s, job.wide),
    };
    let mut p = tuner.params(
        &device.info,
        Request {
            kernels: &KERNELS,
            launched: LAUNCHED,
            cache_name: Some(job.cache_name()),
            shape,
            batch: Setting::from_config(o.batch.and_then(|b| b.value()), "[apsp] batch"),
            local_size: Setting::from_config(
                o.local_size.and_then(|l| l.value()),
                "[apsp] local_size",
            ),
        },
    )?;
    sweep_plan(
        &device.info,
        &mut p,
        &SweepRequest {
            level_sizes: &s.level_sizes,
            n: s.n,
            held,
            dist_bytes: w,
            sharers: device.sharers(),
            sweep_bytes: w * (s.n + s.down) as u64,
            bytes_per_tree,
            shared_bytes: shape.shared_bytes,
            top_levels: Setting::from_config(
                o.gpu_top_levels.and_then(|t| t.value()),
                "[apsp] gpu_top_levels",
            ),
            frontier: Setting::from_config(
                o.gpu_frontier.and_then(|f| f.value()),
                "[apsp] gpu_frontier",
            ),
            fold_levels: Setting::from_config(
                o.gpu_fold_levels.and_then(|f| f.value()),
                "[apsp] gpu_fold_levels",
            ),
            fold_quads: Setting::from_config(
                o.gpu_fold_quads.and_then(|f| f.value()),
                "[apsp] gpu_fold_quads",
            ),
            fold_slices: Setting::from_config(
                o.gpu_fold_slices.and_then(|f| f.value()),
                "[apsp] gpu_fold_slices",
            ),
            summaries_only: job.summaries_only(),
        },
    );
    check_frontier(&device.info, plan(&p).frontier.value)?;
    check_fold_slices(&device.info, &plan(&p), p.batch.value)?;
    if o.local_size.and_then(|l| l.value()) == Some(0) {
        return Err(Error::Config(
            "[apsp] local_size = 0: GPU PHAST sizes its grids in work-groups, so it cannot \
             take the driver's choice; give a power of two such as 64 or 256, or \"auto\" \
             (the frontier algorithms, apsp.gpu_algorithm = \"worklist\" and others, take 0)"
                .into(),
        ));
    }
    // gpu_fold_quads = 0 and gpu_fold_slices = 0 are refused in `prepare`
    // (ApspOptions::check), whichever units run.
    let can_device = !job.wide || device.info.int64_atomics;
    let upward = match o.gpu_upward {
        Upward::Auto => Choice {
            value: can_device as usize,
            source: Source::Predicted,
            reason: UPWARD_RULE.into(),
        },
        Upward::Device if !can_device => {
            return Err(Error::Config(format!(
                "[apsp] gpu_upward = \"device\": '{}' lacks 64-bit atomics, which this graph's \
                 64-bit distances need; use gpu_upward = \"host\" or \"auto\"",
                device.info.name
            )))
        }
        u => Choice {
            value: (u == Upward::Device) as usize,
            source: Source::Config,
            reason: "[apsp] gpu_upward (1 = device, 0 = host)".into(),
        },
    };
    p.set_knob("upward_on_device", upward);
    Ok(p)
}

/// Local memory of `phast_up` with frontier lists of `entries`: two lists of u32 and three
/// counters (kernels/phast.cl).
fn up_local_bytes(entries: usize) -> u128 {
    2 * 4 * entries as u128 + 3 * 4
}

/// Refuse a frontier list the device's local memory cannot hold (PoCL asserts, other drivers
/// fail the launch), or one of 0 entries, naming the key.
fn check_frontier(dev: &tuccompi::device::DeviceInfo, entries: usize) -> Result<()> {
    let most = (dev.local_mem.saturating_sub(12) / 8) as usize;
    if entries == 0 || up_local_bytes(entries) > dev.local_mem as u128 {
        return Err(Error::Config(format!(
            "[apsp] gpu_frontier = {entries}: phast_up keeps two frontier lists of that many \
             entries in local memory ({} bytes), and '{}' has {} bytes of local memory; use \
             1..={most} or \"auto\"",
            up_local_bytes(entries),
            dev.name,
            dev.local_mem
        )));
    }
    Ok(())
}

/// Refuse fold slices set in the config whose partial sums (with the summary's, 4 words per
/// tree per slice) exceed the device's largest allocation, naming the key and the most it
/// allows.
fn check_fold_slices(dev: &tuccompi::device::DeviceInfo, plan: &SweepPlan, k: usize) -> Result<()> {
    let (fs, summary) = (plan.fold_slices.value, plan.summary_slices.value);
    let per_slice = stride(k) as u64 * 4 * 8;
    if plan.fold_slices.source != Source::Config
        || dev.max_alloc == 0
        || (summary + fs) as u64 * per_slice <= dev.max_alloc
    {
        return Ok(());
    }
    Err(Error::Config(format!(
        "[apsp] gpu_fold_slices = {fs}: the fold's partial sums ({summary} + {fs} slices x {} \
         trees x 32 bytes) exceed '{}''s largest allocation ({} bytes); use at most {} or \
         \"auto\"",
        stride(k),
        dev.name,
        dev.max_alloc,
        (dev.max_alloc / per_slice).saturating_sub(summary as u64)
    )))
}

/// Rows of partial sums per tree: the summary's slices, then, with levels folded, the fold's.
fn partial_rows(plan: &SweepPlan, folded: bool) -> usize {
    plan.summary_slices.value + if folded { plan.fold_slices.value } else { 0 }
}

fn plan(params: &LaunchParams) -> SweepPlan {
    SweepPlan::of(params).expect("PHAST launch parameters come from sweep_plan")
}

/// The program's build options: 64-bit distances (`WIDE`), without `phast_up` where the
/// device lacks 64-bit atomics, and on NVIDIA's compiler the 32-bit program's registers capped
/// at [`FOLD_REGISTERS`] (so that `phast_fold` keeps its items resident per
/// compute unit, which its slices assume: [`super::sweep::FOLD_RESIDENT`]; on an H100 ptxas
/// gave phast_fold and phast_fold_bottom 47, phast_top 40 and the others 35 or fewer).
fn build_options(wide: bool, device_up: bool, dev: &tuccompi::device::DeviceInfo) -> &'static str {
    // NVIDIA's own platform ("NVIDIA CUDA"), not another driver on an NVIDIA device (PoCL's
    // CUDA driver reports NVIDIA as the vendor and rejects -cl-nv options).
    let nvidia = dev.platform.contains("NVIDIA");
    match (wide, device_up, nvidia) {
        (true, true, _) => "-DWIDE=1",
        // Without 64-bit atomics phast_up cannot build; the host searches replace it.
        (true, false, _) => "-DWIDE=1 -DNO_DEVICE_UP=1",
        (false, _, true) => NVIDIA_NARROW,
        (false, _, false) => "",
    }
}

/// [`build_options`] for 32-bit distances on NVIDIA's compiler.
const NVIDIA_NARROW: &str = "-cl-nv-maxrregcount=48";
const _: () = assert!(FOLD_REGISTERS == 48, "NVIDIA_NARROW names FOLD_REGISTERS");

/// The hierarchy on one device, shared by its queues: the buffers of the hierarchy (kept on
/// the device for the session's next jobs on the same hierarchy, [`Device::keep`]) and this
/// job's targets.
#[derive(Debug)]
pub struct DeviceHierarchy {
    kept: std::sync::Arc<KeptHierarchy>,
    /// The targets' sweep positions in their order (`[apsp] targets`).
    tpos: Option<DBuf<u32>>,
}

impl std::ops::Deref for DeviceHierarchy {
    type Target = KeptHierarchy;
    fn deref(&self) -> &KeptHierarchy {
        &self.kept
    }
}

impl DeviceHierarchy {
    /// The graph's CSR on the device (kept with the hierarchy).
    pub fn graph(&self) -> std::sync::Arc<super::GraphBuffers> {
        self.kept.graph.clone()
    }
}

/// What [`DeviceHierarchy`] keeps on a device between jobs.
#[derive(Debug)]
pub struct KeptHierarchy {
    /// The host hierarchy these buffers hold: kept alive with them, so that the key naming it
    /// by address never names another.
    _source: std::sync::Arc<AnyHierarchy>,
    /// The graph (unused by PHAST; every algorithm shares one layout).
    graph: std::sync::Arc<super::GraphBuffers>,
    doff: DBuf<u32>,
    dtail: DBuf<u32>,
    dw: DistBuf,
    uoff: DBuf<u32>,
    uhead: DBuf<u32>,
    uw: DistBuf,
    /// Sweep position of each vertex (the upward searches' starts; the rows' gather list
    /// without targets).
    pos: DBuf<u32>,
    /// Level boundaries.
    bounds: DBuf<u32>,
}

/// Check memory and indices, build the program, upload the hierarchy.
pub(super) fn setup(
    job: &ApspJob,
    device: &Device,
    params: &LaunchParams,
) -> Result<DeviceHierarchy> {
    let Some(src) = job.hierarchy.as_ref() else {
        return Err(no_hierarchy());
    };
    match &**src {
        AnyHierarchy::Narrow(h) => setup_typed(job, src, h, device, params),
        AnyHierarchy::Wide(h) => setup_typed(job, src, h, device, params),
    }
}

fn setup_typed<W: DevWeight>(
    job: &ApspJob,
    src: &std::sync::Arc<AnyHierarchy>,
    h: &Hierarchy<W>,
    device: &Device,
    params: &LaunchParams,
) -> Result<DeviceHierarchy> {
    let (n, k) = (h.n as u64, params.batch.value as u64);
    if k == 0 {
        return Err(Error::Config("[apsp] batch = 0: use at least 1".into()));
    }
    let k4 = stride(k as usize) as u64;
    let w = std::mem::size_of::<W>() as u64;
    let held = Phast::<W>::folding(h, &plan(params)).1 as u64;
    let most = super::sweep::max_trees(held as usize, w, device.info.max_alloc);
    if k4 > most as u64 {
        return Err(Error::Config(format!(
            "[apsp] batch = {k}: one distance buffer of {k4} x {held} positions x {w} bytes \
             exceeds '{}''s largest allocation ({} bytes); use batch <= {most} or \"auto\"",
            device.info.name,
            if device.info.max_alloc > 0 {
                device.info.max_alloc
            } else {
                1 << 33
            }
        )));
    }
    let per_queue = 2 * held * k4 * w
        + held * k4.div_ceil(32) * 4
        + (row_chunk(cols(job), k as usize) * cols(job)) as u64 * w;
    let s = sizes(job)?;
    device.check_fits(
        shared_bytes(&s, job.wide) + params.queues.value as u64 * per_queue,
        held * k4 * w,
        &format!("PHAST on {n} vertices, {k} trees per batch ([apsp] batch)"),
    )?;
    let device_up = plan(params).upward_on_device.value == 1;
    // Build now, so a kernel that fails to compile is reported once, with its log.
    device.program(&KERNELS, build_options(job.wide, device_up, &device.info))?;
    let q = device.queue()?;
    fn upload<T: Scalar>(device: &Device, q: &Queue, data: &[T]) -> Result<DBuf<T>> {
        let mut b = DBuf::new(device, data.len())?;
        q.write(&mut b, 0, data)?;
        Ok(b)
    }
    let weights = |data: &[W]| -> Result<DistBuf> {
        // A DistBuf of the job's width: W is u64 exactly when the job is wide.
        let words: Vec<u64> = data.iter().map(|&x| x.to_u64()).collect();
        if job.wide {
            Ok(DistBuf::Wide(upload(device, &q, &words)?))
        } else {
            let narrow: Vec<u32> = words.iter().map(|&x| x as u32).collect();
            Ok(DistBuf::Narrow(upload(device, &q, &narrow)?))
        }
    };
    let tpos = match &job.targets {
        Some(ts) => {
            let tp: Vec<u32> = ts.iter().map(|&v| h.pos[v as usize]).collect();
            Some(upload(device, &q, &tp)?)
        }
        None => None,
    };
    // The same hierarchy (the one the session keeps on the host) at the same width: the
    // buffers an earlier job of the session uploaded.
    let key = format!(
        "apsp phast hierarchy {:p} wide={}",
        std::sync::Arc::as_ptr(src),
        job.wide
    );
    let kept = device.keep(&key, || {
        let k = KeptHierarchy {
            _source: src.clone(),
            graph: std::sync::Arc::new(super::GraphBuffers::upload(device, &q, &job.graph)?),
            doff: upload(device, &q, &h.down_offsets)?,
            dtail: upload(device, &q, &h.down_tails)?,
            dw: weights(&h.down_weights)?,
            uoff: upload(device, &q, &h.up_offsets)?,
            uhead: upload(device, &q, &h.up_heads)?,
            uw: weights(&h.up_weights)?,
            pos: upload(device, &q, &h.pos)?,
            bounds: upload(device, &q, &h.levels)?,
        };
        let bytes = src.bytes() + 4 * (2 * job.graph.n as u64 + 2 * job.graph.m() as u64);
        Ok((k, bytes))
    })?;
    Ok(DeviceHierarchy { kept, tpos })
}

fn make(setup: &Setup<'_>) -> Result<Box<dyn Algorithm>> {
    if setup.job.wide {
        Ok(Box::new(Phast::<u64>::new(setup)?))
    } else {
        Ok(Box::new(Phast::<u32>::new(setup)?))
    }
}

/// The trees a batch's second pass searches on the host: those whose device search overflowed
/// in the first pass (`first[j] != 0`) or in the second (`second[j] != 0`), read before the
/// second pass's sweep.
fn redo_on_host(first: &[u32], second: &[u32]) -> Vec<usize> {
    (0..first.len())
        .filter(|&j| first[j] != 0 || second[j] != 0)
        .collect()
}

/// Whether `h`'s bottom level may be folded without rows: no downward tail and no upward head
/// lies in it (so only a tree's own source is ever there). Always so for a hierarchy from `ch`
/// (a vertex's level is above its earlier-contracted neighbours'); checked, since a cached one
/// could differ.
fn bottom_is_free<W>(h: &Hierarchy<W>) -> bool {
    let bottom = bottom_start(h);
    h.levels.len() >= 2
        && !h.down_tails.iter().any(|&t| t >= bottom)
        && !h.up_heads.iter().any(|&q| q >= bottom)
}

/// The first position of the bottom level (`n` without levels).
fn bottom_start<W>(h: &Hierarchy<W>) -> u32 {
    h.levels.iter().rev().nth(1).copied().unwrap_or(h.n as u32)
}

/// A Dijkstra over the upward graph from one position, resetting only what it touched.
struct UpSearch<W> {
    dist: Vec<W>,
    touched: Vec<u32>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(W, u32)>>,
}

impl<W: DevWeight> UpSearch<W> {
    fn new(n: usize) -> Self {
        UpSearch {
            dist: vec![W::INF; n],
            touched: Vec::new(),
            heap: std::collections::BinaryHeap::new(),
        }
    }

    /// Search from position `s` for tree `j`; append every vertex reached to `out`.
    fn run(&mut self, h: &Hierarchy<W>, s: u32, j: u32, out: &mut HostUp<W>) {
        for &t in &self.touched {
            self.dist[t as usize] = W::INF;
        }
        self.touched.clear();
        self.dist[s as usize] = W::ZERO;
        self.touched.push(s);
        self.heap.push(std::cmp::Reverse((W::ZERO, s)));
        while let Some(std::cmp::Reverse((d, p))) = self.heap.pop() {
            if d > self.dist[p as usize] {
                continue;
            }
            out.pos.push(p);
            out.tree.push(j);
            out.val.push(d);
            let (a, b) = (h.up_offsets[p as usize], h.up_offsets[p as usize + 1]);
            for e in a as usize..b as usize {
                let q = h.up_heads[e];
                let nd = d.sat_add(h.up_weights[e]);
                let dq = &mut self.dist[q as usize];
                if nd < *dq {
                    if *dq == W::INF {
                        self.touched.push(q);
                    }
                    *dq = nd;
                    self.heap.push(std::cmp::Reverse((nd, q)));
                }
            }
        }
    }
}

/// Host upward searches, ready to upload: (position, tree, distance) triples.
struct HostUp<W> {
    pos: Vec<u32>,
    tree: Vec<u32>,
    val: Vec<W>,
}

/// GPU PHAST bound to one queue.
struct Phast<W: DevWeight> {
    reset: Kernel,
    scatter: Kernel,
    up: Option<Kernel>,
    sweep: Kernel,
    top: Kernel,
    summary: Kernel,
    fold: Kernel,
    fold_bottom: Kernel,
    reduce: Kernel,
    gather: Kernel,
    /// The first level folded into the summaries (`phast_fold`, the plan's `fold_levels`).
    fold_from: Option<usize>,
    /// Positions held in `dist`, `init` and the mask (`rows` in the kernels): all of them, or
    /// those above the bottom level when it is folded (its rows are never written; a source
    /// there is 0 in its own tree, which `phast_fold_bottom` gives it).
    held: usize,
    dist: DBuf<W>,
    init: DBuf<W>,
    mask: DBuf<u32>,
    hpos: DBuf<u32>,
    htree: DBuf<u32>,
    hval: DBuf<W>,
    partial: DBuf<u64>,
    sums: DBuf<u64>,
    overflow: DBuf<u32>,
    rows: Option<DBuf<W>>,
    search: UpSearch<W>,
    /// The last batch's sums, `[reached, sum_lo, sum_hi, max]` per tree.
    host_sums: Vec<u64>,
    /// `init` or the mask may hold values (new buffers, or a batch that failed half-way): reset
    /// them first.
    dirty: bool,
    /// Trees whose device upward search overflowed its frontier (redone on the host).
    overflowed: usize,
}

impl<W: DevWeight> Phast<W> {
    fn new(setup: &Setup<'_>) -> Result<Self> {
        let (device, job, p) = (setup.device, setup.job, setup.params);
        let (n, k) = (job.graph.n, stride(p.batch.value));
        let device_up = plan(p).upward_on_device.value == 1;
        let kern = |name| {
            device.kernel(
                &KERNELS,
                build_options(job.wide, device_up, &device.info),
                name,
            )
        };
        let (fold_from, held) = job
            .hierarchy
            .as_deref()
            .and_then(W::of)
            .map_or((None, n), |h| Self::folding(h, &plan(p)));
        Ok(Phast {
            reset: kern("phast_reset")?,
            scatter: kern("phast_scatter")?,
            up: if device_up {
                Some(kern("phast_up")?)
            } else {
                None
            },
            sweep: kern("phast_sweep")?,
            top: kern("phast_top")?,
            summary: kern("phast_summary")?,
            fold: kern("phast_fold")?,
            fold_bottom: kern("phast_fold_bottom")?,
            reduce: kern("phast_reduce")?,
            gather: kern("phast_rows")?,
            fold_from,
            held,
            dist: DBuf::new(device, held * k)?,
            init: DBuf::new(device, held * k)?,
            mask: DBuf::new(device, held * k.div_ceil(32))?,
            hpos: DBuf::new(device, 1)?,
            htree: DBuf::new(device, 1)?,
            hval: DBuf::new(device, 1)?,
            partial: DBuf::new(device, partial_rows(&plan(p), fold_from.is_some()) * k * 4)?,
            sums: DBuf::new(device, k * 4)?,
            overflow: DBuf::new(device, k)?,
            rows: match job.rows {
                Some(_) => Some(DBuf::new(device, row_chunk(cols(job), k) * cols(job))?),
                None => None,
            },
            search: UpSearch::new(n),
            host_sums: vec![0; k * 4],
            dirty: true,
            overflowed: 0,
        })
    }

    /// The first level `phast_fold` folds: of the plan's `fold_levels` (only levels after
    /// the leading launch's), the first non-empty one, since the first fold launch of a batch
    /// sets the partials. `None` without any, or when a bottom-level vertex is some vertex's
    /// tail (never so for a hierarchy from `ch`; checked, since the bottom level's fold
    /// writes no rows).
    fn first_folded(h: &Hierarchy<W>, plan: &SweepPlan) -> Option<usize> {
        let levels = h.levels.len().saturating_sub(1);
        let folded = plan
            .fold_levels
            .value
            .min(levels.saturating_sub(plan.top_levels.value));
        if folded == 0 || !bottom_is_free(h) {
            return None;
        }
        (levels - folded..levels).find(|&l| h.levels[l + 1] > h.levels[l])
    }

    /// The first folded level ([`Self::first_folded`]) and the positions holding rows: those
    /// above the bottom level when it is folded, else all of them.
    fn folding(h: &Hierarchy<W>, plan: &SweepPlan) -> (Option<usize>, usize) {
        let fold_from = Self::first_folded(h, plan);
        let held = match fold_from {
            Some(_) => bottom_start(h) as usize,
            None => h.n,
        };
        (fold_from, held)
    }

    fn h<'a>(cx: &Ctx<'a>) -> &'a Hierarchy<W> {
        cx.job
            .hierarchy
            .as_deref()
            .and_then(W::of)
            .expect("GPU PHAST runs with a hierarchy of the job's width")
    }

    fn dh<'a>(cx: &Ctx<'a>) -> &'a DeviceHierarchy {
        cx.sh
            .phast
            .as_ref()
            .expect("GPU PHAST's hierarchy is on the device")
    }

    /// Start a batch: make `init` all INF and the mask all zero if a previous batch may have
    /// left values in them (a whole sweep resets every entry it reads and clears every bit).
    /// `init` is reset by a kernel: NVIDIA's driver fails clEnqueueFillBuffer on buffers of
    /// 2^31 elements and more, which `init` is at k x held positions above 2^31.
    fn clean(&mut self, cx: &Ctx<'_>) -> Result<()> {
        if self.dirty {
            let len = self.init.len();
            let local = cx.local("phast_reset")?;
            let items = len.div_ceil(local).min(4096) * local;
            cx.q.launch(
                &self.reset,
                items,
                Some(local),
                &[&self.init, &(len as u64)],
            )?;
            cx.q.fill(&self.mask, 0)?;
        }
        self.dirty = true;
        Ok(())
    }

    /// Enqueue the device upward searches of the batch (sources in `batch.src`).
    fn enqueue_up(&self, cx: &Ctx<'_>, batch: &Batch) -> Result<()> {
        let up = self.up.as_ref().expect("phast_up kernel");
        let (dh, lu) = (Self::dh(cx), cx.local("phast_up")?);
        let cap = plan(&cx.sh.params).frontier.value;
        let h = Self::h(cx);
        // One group per tree (b groups); two local lists of cap words.
        cx.q.launch(
            up,
            cx.b * lu,
            Some(lu),
            &[
                &dh.uoff,
                &dh.uhead,
                &dh.uw.arg(),
                &self.init,
                &self.mask,
                &batch.src,
                &dh.pos,
                &(stride(cx.b) as u32),
                &Local::of::<u32>(cap),
                &Local::of::<u32>(cap),
                &(cap as u32),
                &self.overflow,
                &(self.held as u32),
                &(h.n as u32),
                &last_offset(&h.up_offsets),
            ],
        )
    }

    /// Host upward searches of `trees` ((column, task) pairs), uploaded and scattered.
    fn host_up(
        &mut self,
        cx: &Ctx<'_>,
        trees: impl IntoIterator<Item = (u32, usize)>,
    ) -> Result<()> {
        let h = Self::h(cx);
        let mut hu = HostUp {
            pos: Vec::new(),
            tree: Vec::new(),
            val: Vec::new(),
        };
        for (j, t) in trees {
            self.search
                .run(h, h.pos[cx.job.sources[t] as usize], j, &mut hu);
        }
        let count = hu.pos.len();
        if self.hpos.len() < count {
            let cap = count.next_power_of_two();
            self.hpos = DBuf::new(cx.device, cap)?;
            self.htree = DBuf::new(cx.device, cap)?;
            self.hval = DBuf::new(cx.device, cap)?;
        }
        cx.q.write(&mut self.hpos, 0, &hu.pos)?;
        cx.q.write(&mut self.htree, 0, &hu.tree)?;
        cx.q.write(&mut self.hval, 0, &hu.val)?;
        // Each entry's tree is below b (positions from held on are skipped).
        cx.q.launch(
            &self.scatter,
            count,
            Some(cx.local("phast_scatter")?),
            &[
                &self.init,
                &self.mask,
                &self.hpos,
                &self.htree,
                &self.hval,
                &(count as u32),
                &(stride(cx.b) as u32),
                &(self.held as u32),
            ],
        )
    }

    /// The arguments the sweep's kernels (`phast_top`, `phast_sweep`, `phast_fold`,
    /// `phast_fold_bottom`) begin
    /// with: the downward graph, `init`, the mask and the distances.
    fn pull_args<'a>(&'a self, dh: &'a DeviceHierarchy) -> [Arg<'a>; 6] {
        [
            Arg::U32s(&dh.doff),
            Arg::U32s(&dh.dtail),
            dh.dw.arg(),
            Arg::buf(&self.init),
            Arg::U32s(&self.mask),
            Arg::buf(&self.dist),
        ]
    }

    /// Enqueue the sweep: the top levels in one launch, then one launch per level.
    fn enqueue_levels(&self, cx: &Ctx<'_>, batch: &Batch) -> Result<()> {
        for l in self.launches(cx) {
            self.enqueue_level(cx, batch, l)?;
        }
        Ok(())
    }

    /// The sweep's launches in order: `None` for the leading levels' one launch (when there
    /// are any), then each later non-empty level.
    fn launches(&self, cx: &Ctx<'_>) -> Vec<Option<usize>> {
        let h = Self::h(cx);
        let top = plan(&cx.sh.params).top_levels.value;
        let levels = h.levels.len().saturating_sub(1);
        (top > 0)
            .then_some(None)
            .into_iter()
            .chain(
                (top..levels)
                    .filter(|&l| h.levels[l + 1] > h.levels[l])
                    .map(Some),
            )
            .collect()
    }

    /// Enqueue one launch of the sweep ([`Self::launches`]): the leading levels (`None`) or
    /// level `l` (`phast_fold` for a folded level).
    fn enqueue_level(&self, cx: &Ctx<'_>, batch: &Batch, level: Option<usize>) -> Result<()> {
        let (h, dh) = (Self::h(cx), Self::dh(cx));
        let k = stride(cx.b);
        let common = self.pull_args(dh);
        let Some(l) = level else {
            let top = plan(&cx.sh.params).top_levels.value;
            // About 2 groups per compute unit, each owning qpg quads of trees.
            let quads = k / 4;
            let qpg = (quads / (2 * cx.device.info.compute_units as usize)).max(1);
            let lt = cx.local("phast_top")?;
            let mut a = common.to_vec();
            a.extend([
                Arg::U32s(&dh.bounds),
                Arg::U32(top as u32),
                Arg::U32(k as u32),
                Arg::U32(qpg as u32),
                // Every position of the leading levels lies below it, above the bottom level.
                Arg::U32(h.levels[top]),
                Arg::U32(last_offset(&h.down_offsets)),
            ]);
            return cx
                .q
                .launch(&self.top, quads.div_ceil(qpg) * lt, Some(lt), &refs(&a));
        };
        let (first, last) = (h.levels[l], h.levels[l + 1]);
        if let Some(f) = self.fold_from.filter(|&f| l >= f) {
            let bottom = l + 2 == h.levels.len();
            return self.enqueue_fold(cx, batch, first, last, bottom, l > f);
        }
        let count = (last - first) as usize;
        // Positions first..first+count, above the bottom level when it is folded (< held).
        let mut a = common.to_vec();
        a.extend([
            Arg::U32(first),
            Arg::U32(count as u32),
            Arg::U32(k as u32),
            Arg::U32(last_offset(&h.down_offsets)),
        ]);
        cx.q.launch(
            &self.sweep,
            count * k / 4,
            Some(cx.local("phast_sweep")?),
            &refs(&a),
        )
    }

    /// Enqueue the fold of a folded level (positions `first..last`): `phast_fold`, which
    /// writes its rows, above the bottom level, `phast_fold_bottom` (no rows) for the bottom
    /// level; adding to the fold's partials (the second set, after the summary's) if `add`.
    fn enqueue_fold(
        &self,
        cx: &Ctx<'_>,
        batch: &Batch,
        first: u32,
        last: u32,
        bottom: bool,
        add: bool,
    ) -> Result<()> {
        let (h, dh) = (Self::h(cx), Self::dh(cx));
        let slices = plan(&cx.sh.params).summary_slices.value;
        let fs = plan(&cx.sh.params).fold_slices.value;
        let mut a = self.pull_args(dh).to_vec();
        a.extend([
            Arg::U32(first),
            Arg::U32(last - first),
            Arg::U32(stride(cx.b) as u32),
            Arg::U32(cx.b as u32),
            Arg::U32(fs as u32),
            Arg::U32(slices as u32),
            Arg::U32(add as u32),
            Arg::U64s(&self.partial),
            Arg::U32(
                plan(&cx.sh.params)
                    .fold_quads
                    .value
                    .clamp(1, cx.b.div_ceil(4)) as u32,
            ),
            Arg::U32s(&batch.src),
            Arg::U32s(&dh.pos),
            Arg::U32(last_offset(&h.down_offsets)),
            Arg::U32(h.n as u32),
        ]);
        let (kernel, name) = match bottom {
            true => (&self.fold_bottom, "phast_fold_bottom"),
            false => (&self.fold, "phast_fold"),
        };
        // Items fold_slices x ceil(b/4), each pulling positions first..last over their tails
        // (< first, so < held); phast_fold's positions are above the bottom level (< held:
        // their init, mask and dist entries exist), phast_fold_bottom's are the bottom level's
        // (from held on: it touches no init, mask or dist entry of theirs). Partials from row
        // slices (base) on: the buffer holds (slices + fold_slices) x k x 4 words when
        // fold_from is set.
        cx.q.launch(
            kernel,
            fs * cx.b.div_ceil(4),
            Some(cx.local(name)?),
            &refs(&a),
        )
    }

    /// Enqueue the summaries of the batch into `sums` (with levels folded, over the positions
    /// above them, and the reduction over both sets of partials).
    fn enqueue_summary(&self, cx: &Ctx<'_>) -> Result<()> {
        let dh = Self::dh(cx);
        let slices = plan(&cx.sh.params).summary_slices.value;
        // With targets, fold their positions in their order; else every position in memory
        // order (the same set, read sequentially), up to the first folded level.
        let (list, ident) = match &dh.tpos {
            Some(t) => (t, 0u32),
            None => (&dh.pos, 1),
        };
        let targets = match self.fold_from {
            Some(f) => Self::h(cx).levels[f] as usize,
            None => cols(cx.job),
        };
        // Items slices x ceil(b/4), each reading rows of positions < held (from `list`,
        // cols(job) long; `targets` <= cols(job) of them, all above the first folded level
        // when held < n) and writing its trees' partials.
        cx.q.launch(
            &self.summary,
            slices * cx.b.div_ceil(4),
            Some(cx.local("phast_summary")?),
            &[
                &self.dist,
                list,
                &ident,
                &(targets as u32),
                &(stride(cx.b) as u32),
                &(cx.b as u32),
                &(slices as u32),
                &self.partial,
                &(self.held as u32),
            ],
        )?;
        let lr = cx.local("phast_reduce")?;
        // b groups of a power-of-two size (the characterization says reduction).
        cx.q.launch(
            &self.reduce,
            cx.b * lr,
            Some(lr),
            &[
                &self.partial,
                &(partial_rows(&plan(&cx.sh.params), self.fold_from.is_some()) as u32),
                &(cx.b as u32),
                &self.sums,
                &Local::of::<u64>(4 * lr),
            ],
        )
    }

    /// Read the sums of the batch.
    fn read_sums(&mut self, cx: &Ctx<'_>) -> Result<()> {
        cx.q.read(&self.sums, 0, &mut self.host_sums[..cx.b * 4])?;
        self.dirty = false;
        Ok(())
    }
}

impl<W: DevWeight> Algorithm for Phast<W> {
    fn solve(&mut self, cx: &Ctx<'_>, batch: &Batch, _sources: &[u32]) -> Result<usize> {
        let b = cx.b;
        let levels = Self::h(cx).levels.len().saturating_sub(1);
        self.clean(cx)?;
        if self.up.is_none() {
            let tasks = cx.tasks.clone();
            self.host_up(cx, tasks.enumerate().map(|(j, t)| (j as u32, t)))?;
            self.enqueue_levels(cx, batch)?;
            self.enqueue_summary(cx)?;
            self.read_sums(cx)?;
            return Ok(levels);
        }
        self.enqueue_up(cx, batch)?;
        self.enqueue_levels(cx, batch)?;
        self.enqueue_summary(cx)?;
        let mut first = vec![0u32; b];
        cx.q.read(&self.overflow, 0, &mut first)?;
        self.read_sums(cx)?;
        if first.iter().all(|&f| f == 0) {
            return Ok(levels);
        }
        // A device search that overflowed its frontier stopped early, leaving a part of its
        // search space: the first pass reads the flags after its sweep (no wait when none
        // overflows). A second pass runs the device searches again, waits for them, and
        // searches on the host every tree that overflowed in either pass (overflow depends on
        // the order of the device's relaxations, so a tree that fit in the first pass may not
        // fit in the second); the host's exact values overwrite the device's partial ones.
        self.clean(cx)?;
        self.enqueue_up(cx, batch)?;
        let mut second = vec![0u32; b];
        cx.q.read(&self.overflow, 0, &mut second)?;
        let host = redo_on_host(&first, &second);
        tracing::debug!(
            trees = host.len(),
            "phast_up frontier overflow: host upward searches"
        );
        self.overflowed += host.len();
        let trees: Vec<(u32, usize)> = host
            .iter()
            .map(|&j| (j as u32, cx.tasks.start + j))
            .collect();
        self.host_up(cx, trees)?;
        self.enqueue_levels(cx, batch)?;
        self.enqueue_summary(cx)?;
        self.read_sums(cx)?;
        Ok(levels)
    }

    fn summaries(
        &mut self,
        cx: &Ctx<'_>,
        _batch: &Batch,
        _tasks: Range<usize>,
    ) -> Result<Vec<PathSummary>> {
        Ok(self.host_sums[..cx.b * 4]
            .chunks_exact(4)
            .map(PathSummary::from_words)
            .collect())
    }

    fn distances<'b>(&'b self, cx: &Ctx<'b>, _batch: &'b Batch) -> super::paths::DistView<'b> {
        // Distances are read only when more than summaries is wanted: nothing is folded.
        debug_assert_eq!(self.held, cx.n, "every position holds a row");
        super::paths::DistView {
            dist: W::dist_ref(&self.dist),
            index: Some(&Self::dh(cx).pos),
            vstride: stride(cx.b),
            jstride: 1,
        }
    }

    fn layout<'b>(&'b self, cx: &Ctx<'_>, _batch: &'b Batch) -> super::reach::Layout<'b> {
        debug_assert_eq!(self.held, cx.n, "every position holds a row");
        // Vertex-major over sweep positions: `d[p·stride(b) + j]`.
        super::reach::Layout {
            dist: Arg::buf(&self.dist),
            vstride: stride(cx.b),
            tstride: 1,
        }
    }

    fn write_rows(
        &mut self,
        cx: &Ctx<'_>,
        _batch: &Batch,
        tasks: Range<usize>,
        rows: &NpyRows,
    ) -> Result<()> {
        debug_assert_eq!(self.held, cx.n, "every position holds a row");
        let dh = Self::dh(cx);
        let buf = self
            .rows
            .as_ref()
            .expect("a rows buffer when rows are written");
        let (c, b) = (cols(cx.job), cx.b);
        let chunk = row_chunk(c, cx.sh.params.batch.value);
        let list = dh.tpos.as_ref().unwrap_or(&dh.pos);
        let mut host = vec![W::default(); chunk * c];
        let mut j0 = 0;
        while j0 < b {
            let r = chunk.min(b - j0);
            // r x c items, each reading a position of `list` (c long) for a tree below b.
            cx.q.launch(
                &self.gather,
                r * c,
                Some(cx.local("phast_rows")?),
                &[
                    &self.dist,
                    list,
                    &(c as u32),
                    &(stride(b) as u32),
                    &(j0 as u32),
                    &(r as u32),
                    buf,
                    &(self.held as u32),
                ],
            )?;
            cx.q.read(buf, 0, &mut host[..r * c])?;
            for i in 0..r {
                W::write_row(rows, tasks.start + j0 + i, &host[i * c..(i + 1) * c])?;
            }
            j0 += r;
        }
        Ok(())
    }
}

impl<W: DevWeight> Drop for Phast<W> {
    fn drop(&mut self) {
        if self.overflowed > 0 {
            tracing::info!(
                trees = self.overflowed,
                "GPU PHAST: upward searches that overflowed phast_up's frontier lists were \
                 redone on the host ([apsp] gpu_frontier)"
            );
        }
    }
}

/// Phase timings of GPU PHAST on one device (`benches/phast_gpu.rs`): medians over `reps`
/// batches of `k` trees, each phase waited for before the next starts.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// Trees per batch.
    pub k: usize,
    /// Vertices.
    pub n: usize,
    /// Downward arcs.
    pub down_arcs: usize,
    /// Levels.
    pub levels: usize,
    /// Leading levels swept in one `phast_top` launch.
    pub top_levels: usize,
    /// Work-items per `phast_up` group.
    pub up_local: usize,
    /// Resetting `init` (`phast_reset`) and filling the mask where a batch may have left values
    /// (seconds; nothing after a whole batch, whose sweep resets them).
    pub zero_s: f64,
    /// The device upward searches of one batch (`phast_up`).
    pub up_device_s: f64,
    /// The host upward searches of one batch on one thread, their upload and scatter.
    pub up_host_s: f64,
    /// The sweep of one batch.
    pub sweep_s: f64,
    /// Summary + reduce + reading the sums.
    pub summary_s: f64,
    /// One whole batch as the worker runs it with device upward searches.
    pub batch_s: f64,
    /// Trees of the batch whose device upward search overflowed its frontier list.
    pub overflowed: usize,
    /// Bytes the sweep of one batch must move at least: per tree a distance written per
    /// vertex and one read per downward arc, the mask, and the arcs and offsets once.
    pub sweep_bytes: u64,
    /// Trailing levels folded into the summaries (`phast_fold`).
    pub fold_levels: usize,
    /// Each launch of the sweep alone (median seconds), in order: its first level, vertices,
    /// downward arcs into them.
    pub launches: Vec<LaunchTime>,
}

/// One launch of the sweep in [`Profile::launches`].
#[derive(Debug, Clone, Serialize)]
pub struct LaunchTime {
    /// The launch's first level (0 = the top).
    pub level: usize,
    /// Vertices it sweeps.
    pub vertices: u32,
    /// Downward arcs into them.
    pub arcs: u32,
    /// Median seconds, the launch waited for alone.
    pub seconds: f64,
}

/// Time the phases of GPU PHAST for `job` on `device`: one batch of the job's first `k`
/// sources (`k` from its `batch` option or the prediction), `reps` times. `up_local`
/// replaces the local size of `phast_up`; `fold` the plan's `fold_levels`.
pub fn profile(
    job: &ApspJob,
    device: &std::sync::Arc<Device>,
    reps: usize,
    up_local: Option<usize>,
    fold: Option<usize>,
) -> Result<Profile> {
    use std::time::Instant;
    if job.wide {
        return Err(Error::Config(
            "the GPU PHAST profile times 32-bit distances only".into(),
        ));
    }
    let mut params = super::params(job, device, &Tuner::new(Some(1), Default::default()))?;
    if let Some(l) = up_local {
        params.local.get_mut("phast_up").expect("phast_up").value = l;
    }
    if plan(&params).upward_on_device.value != 1 {
        return Err(Error::Device("profile needs device upward searches".into()));
    }
    if let Some(f) = fold {
        if f > 0 && !job.summaries_only() {
            return Err(Error::Config(
                "the profile folds levels only for a job of summaries alone".into(),
            ));
        }
        params.set_knob("fold_levels", Choice::fixed(f, "profile"));
    }
    let sh = super::setup(job, device, &params)?;
    let setup = Setup {
        device,
        job,
        params: &sh.params,
    };
    let mut batch = Batch::new(&setup)?;
    let mut w = Phast::<u32>::new(&setup)?;
    let q = device.queue()?;
    let k = params.batch.value.min(job.sources.len());
    q.write(&mut batch.src, 0, &job.sources[..k])?;
    let cx = Ctx {
        job,
        sh: &sh,
        q: &q,
        device,
        n: job.graph.n,
        b: k,
        tasks: 0..k,
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mut zero, mut up, mut sweep, mut summary, mut whole, mut host) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut flags = vec![0u32; k];
    let mut overflowed = 0;
    for _ in 0..reps.max(1) {
        q.finish()?;
        let t0 = Instant::now();
        w.clean(&cx)?;
        q.finish()?;
        let t1 = Instant::now();
        w.enqueue_up(&cx, &batch)?;
        q.finish()?;
        let t2 = Instant::now();
        w.enqueue_levels(&cx, &batch)?;
        q.finish()?;
        let t3 = Instant::now();
        w.enqueue_summary(&cx)?;
        w.read_sums(&cx)?;
        let t4 = Instant::now();
        q.read(&w.overflow, 0, &mut flags)?;
        overflowed = flags.iter().filter(|&&f| f != 0).count();
        zero.push((t1 - t0).as_secs_f64());
        up.push((t2 - t1).as_secs_f64());
        sweep.push((t3 - t2).as_secs_f64());
        summary.push((t4 - t3).as_secs_f64());
        // The whole batch as solve runs it.
        let t5 = Instant::now();
        w.solve(&cx, &batch, &job.sources[..k])?;
        whole.push(t5.elapsed().as_secs_f64());
        // Host upward searches, their upload and scatter (then swept, to leave init clean).
        let t6 = Instant::now();
        w.clean(&cx)?;
        w.host_up(&cx, (0..k).map(|j| (j as u32, j)))?;
        q.finish()?;
        host.push(t6.elapsed().as_secs_f64());
        w.enqueue_levels(&cx, &batch)?;
        w.enqueue_summary(&cx)?;
        w.read_sums(&cx)?;
    }
    // Each launch alone: a batch's upward searches, then the sweep launch by launch.
    let order = w.launches(&cx);
    let mut each = vec![Vec::new(); order.len()];
    for _ in 0..reps.max(1) {
        w.clean(&cx)?;
        w.enqueue_up(&cx, &batch)?;
        q.finish()?;
        for (i, &l) in order.iter().enumerate() {
            let t = Instant::now();
            w.enqueue_level(&cx, &batch, l)?;
            q.finish()?;
            each[i].push(t.elapsed().as_secs_f64());
        }
        w.enqueue_summary(&cx)?;
        w.read_sums(&cx)?;
    }
    let h = Phast::<u32>::h(&cx);
    let top = plan(&params).top_levels.value;
    let launches = order
        .iter()
        .zip(each)
        .map(|(&l, t)| {
            let (a, b) = match l {
                None => (0, top),
                Some(l) => (l, l + 1),
            };
            let (p0, p1) = (h.levels[a] as usize, h.levels[b] as usize);
            LaunchTime {
                level: a,
                vertices: (p1 - p0) as u32,
                arcs: h.down_offsets[p1] - h.down_offsets[p0],
                seconds: median(t),
            }
        })
        .collect();
    let s = sizes(job)?;
    let (n, m) = (s.n as u64, s.down as u64);
    Ok(Profile {
        k,
        n: s.n,
        down_arcs: s.down,
        levels: s.level_sizes.len(),
        top_levels: plan(&params).top_levels.value,
        up_local: params.local("phast_up")?,
        zero_s: median(zero),
        up_device_s: median(up),
        up_host_s: median(host),
        sweep_s: median(sweep),
        summary_s: median(summary),
        batch_s: median(whole),
        overflowed,
        sweep_bytes: stride(k) as u64 * (n * 4 + m * 4 + n / 8) + m * 8 + n * 4,
        fold_levels: w.fold_from.map_or(0, |f| h.levels.len() - 1 - f),
        launches,
    })
}

#[cfg(test)]
mod test {
    use super::{check_fold_slices, redo_on_host, SweepPlan};
    use tuccompi::device::DeviceInfo;
    use tuccompi::tuning::{Choice, Source};

    /// Fold slices set in the config whose partials, with the summary's, exceed the largest
    /// allocation are refused naming the key and the most allowed; predicted ones, and those
    /// that fit, pass.
    #[test]
    fn fold_slices_past_the_largest_allocation_are_refused() {
        let mut dev = DeviceInfo::described("gpu", 132, 1024);
        // 1 MiB: 256 trees x 32 bytes = 8 KiB a slice, 128 slices in all.
        dev.max_alloc = 1 << 20;
        let plan = |fs: usize, source: Source| SweepPlan {
            top_levels: Choice::fixed(0, "test"),
            summary_slices: Choice::fixed(28, "test"),
            frontier: Choice::fixed(1024, "test"),
            upward_on_device: Choice::fixed(1, "test"),
            fold_levels: Choice::fixed(1, "test"),
            fold_quads: Choice::fixed(64, "test"),
            fold_slices: Choice {
                value: fs,
                source,
                reason: "test".into(),
            },
        };
        assert!(check_fold_slices(&dev, &plan(100, Source::Config), 256).is_ok());
        let e = check_fold_slices(&dev, &plan(101, Source::Config), 256)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[apsp] gpu_fold_slices = 101") && e.contains("use at most 100"),
            "{e}"
        );
        assert!(check_fold_slices(&dev, &plan(101, Source::Predicted), 256).is_ok());
    }

    #[test]
    fn a_tree_that_overflows_in_either_pass_is_searched_on_the_host() {
        // Trees 1 and 3 overflowed in the first pass; in the second, tree 3 fit but tree 2,
        // which fit before, did not: 1, 2 and 3 are searched on the host.
        assert_eq!(redo_on_host(&[0, 1, 0, 1], &[0, 1, 1, 0]), vec![1, 2, 3]);
        assert_eq!(redo_on_host(&[1, 0], &[0, 0]), vec![0]);
        assert!(redo_on_host(&[0; 3], &[0; 3]).is_empty());
    }
}
