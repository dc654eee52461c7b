//! Which SSSP algorithms an apsp run uses, and the one hierarchy its PHAST halves share.
//!
//! `[apsp] cpu_algorithm` and `gpu_algorithm` may name an algorithm or say `"auto"` (the
//! default). Auto takes PHAST when all of these hold, else Dijkstra on CPU cores and the work
//! list on GPUs:
//!
//! 1. the hierarchy pays back ([`Forecast`]): a cached hierarchy of this graph exists, or the
//!    cost model, from a few sampled Dijkstra trees timed on this machine ([`Sample`]), the
//!    graph's size, the build's threads, the CPU workers, the GPUs present and the tasks
//!    still to run, predicts the build plus the PHAST run to be cheaper than the run without
//!    it; and no cached verdict says the build would stop again ([`Verdict`]);
//! 2. the build stays within its budget: the witness-search work a road graph needs, scaled
//!    by how much slack the forecast leaves, and at most [`Budget::for_graph`] (skewed graphs
//!    such as R-MAT stop early). A build that passes it stops, and the verdict is cached;
//! 3. the upward search space, sampled from [`SAMPLES`] sources, stays under n/8 vertices
//!    (otherwise the per-tree upward Dijkstra is no longer small; also cached as a verdict).
//!
//! **A busy machine.** The build and the CPU cores' trees are both CPU work, so the forecast
//! puts them in the same terms: a sampled tree is timed in thread CPU seconds (what it costs
//! a core, however busy the machine; wall-clock samples of a few tens of milliseconds mostly
//! measure time slices), and the share of a core each of the run's threads gets is measured
//! apart, as the CPU seconds the sampling threads obtained over their wall seconds. The share
//! slows the build and the CPU workers' trees alike, and not the GPUs' trees (a load takes
//! cores, not the GPU): where only CPU cores run, the decision does not depend on the load
//! at all, and beside a GPU a loaded machine makes the CPU-bound build dearer against the
//! GPU's trees, as it is.
//!
//! **Deciding again while building.** What decides whether a build pays is the work it
//! really needs, which the forecast can only bound (road graphs scan 430 to 1,534 arcs per
//! arc): the build therefore runs under a witness-search work budget at the break-even
//! ([`Forecast::work`]: the time the PHAST run saves, in the build's own cost per arc
//! scanned). A build that needs less finishes, however long it takes in wall time; one that
//! needs more than it can win back stops there and the run goes on without it. The budget
//! counts arcs scanned, not seconds, so a build that is merely slower because other
//! processes take the cores is never stopped by it, and since the build and the runs'
//! CPU parts are forecast at the same share, the budget is the same loaded and idle. A
//! build the forecast rejects is not started on a hunch: on the quick start's 256 sources
//! such a build, stopped at the break-even, would double the run. The forecast's build cost
//! ([`SCAN_COST`]) is set above what the current build measures (osm-moscow: 132 trees of
//! CPU time, forecast 400), so the forecast errs towards Dijkstra by at most that factor.
//! `report.json` keeps the forecast beside what happened: `input.algorithm.forecast` holds
//! the forecast build and run seconds (`build_seconds`, `run_seconds` of the algorithms
//! chosen, `chosen`), the tree's CPU and wall seconds and the core share it was made from,
//! and, when a build ran, `measured_build_seconds` and `build_finished`; the measured run is
//! `phase_seconds.run`.
//!
//! `tuccompi check` (a dry run) reads the caches but never builds under `"auto"`: it prints
//! the forecast. An explicit `"phast"` builds without the budget and skips the checks. The
//! hierarchy is built (or read from the cache, see [`super::cache`]) once per run, in
//! `prepare`; under MPI once per job ([`choose_for_job`]): rank 0 decides (its forecast
//! weighs the build against its share of the tasks) and builds or reads the hierarchy, and
//! sends the choice and the hierarchy to every other rank, which checks that it was built
//! from the same graph.

use super::cache::{self, Key, Miss};
use super::ch::{Budget, ChError, ChParams, ChWeight, Hierarchy};
use super::AnyHierarchy;
use crate::apsp::GpuAlgorithm;
use crate::graph::Csr;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tuccompi::{Error, Result};

/// Sources whose upward search spaces `"auto"` samples.
pub const SAMPLES: usize = 64;

/// `[apsp] cpu_algorithm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum CpuAlgorithm {
    /// PHAST when the hierarchy is good (module doc), else Dijkstra.
    #[default]
    Auto,
    /// Dijkstra with a radix heap, one source at a time.
    Dijkstra,
    /// PHAST over a contraction hierarchy, k sources at once.
    Phast,
    /// One upward search per source and one backward search per target on the hierarchy
    /// (origin-destination runs with few targets: [`crate::apsp::pairs`]).
    Pairs,
}

impl TryFrom<String> for CpuAlgorithm {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.as_str() {
            "auto" => Ok(CpuAlgorithm::Auto),
            "dijkstra" => Ok(CpuAlgorithm::Dijkstra),
            "phast" => Ok(CpuAlgorithm::Phast),
            "pairs" => Ok(CpuAlgorithm::Pairs),
            _ => Err(format!(
                "cpu_algorithm = {s:?}: use \"auto\", \"dijkstra\", \"phast\" or \"pairs\""
            )),
        }
    }
}

/// The GPU algorithm that runs PHAST (`plugins/apsp/gpu/phast.rs`); `None` in a build without
/// a GPU half of PHAST.
pub const GPU_PHAST: Option<GpuAlgorithm> = Some(GpuAlgorithm::Phast);
/// Whether the GPU half of PHAST honours `[apsp] targets` (it does: summaries and rows over
/// the targets' sweep positions, on the device). Without it, `"auto"` would run the work list
/// on GPUs when targets are set, and an explicit `"phast"` with targets would be refused.
pub const GPU_PHAST_TARGETS: bool = true;

/// `[apsp] gpu_algorithm` as written: `"auto"`, `"phast"` or one frontier algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum GpuRequest {
    /// PHAST when the hierarchy is good (module doc), else the work list.
    #[default]
    Auto,
    /// PHAST.
    Phast,
    /// This frontier algorithm.
    Fixed(GpuAlgorithm),
}

impl<'de> Deserialize<'de> for GpuRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "auto" => return Ok(GpuRequest::Auto),
            "phast" => return Ok(GpuRequest::Phast),
            _ => {}
        }
        let de = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(&s);
        GpuAlgorithm::deserialize(de)
            .map(GpuRequest::Fixed)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "gpu_algorithm = {s:?}: use \"auto\", \"phast\", \"worklist\", \"crauser\", \
                 \"martin\" or \"two-phase\""
                ))
            })
    }
}

/// What a run needs to decide.
#[derive(Clone)]
pub struct Request<'a> {
    /// CPU algorithm as configured; `None` when no CPU worker runs.
    pub cpu: Option<CpuAlgorithm>,
    /// GPU algorithm as configured; `None` when no OpenCL device is wanted.
    pub gpu: Option<GpuRequest>,
    /// Source vertex (internal id) of each task: the forecast times trees from some of them.
    pub sources: &'a [u32],
    /// Tasks still to run (fewer than the sources when a run is resumed).
    pub pending: usize,
    /// CPU workers of the run.
    pub cpu_workers: usize,
    /// OpenCL devices the run's GPU half would use, asked only when the forecast needs them
    /// (discovery may still be under way).
    pub gpus: &'a (dyn Fn() -> tuccompi::plugin::DeviceCount + Sync),
    /// `[apsp] hierarchy`: a cache file, or `None` for the user's cache directory.
    pub cache_path: Option<&'a Path>,
    /// Whether a built hierarchy (or a verdict) is stored in the cache, and whether `"auto"`
    /// may build at all: not for `tuccompi check`, which writes nothing and builds nothing it
    /// does not need.
    pub store: bool,
    /// Whether `[apsp] targets` limits the records and rows.
    pub targets: bool,
    /// The session's host data ([`tuccompi::plugin::PrepareCtx::kept`]): a hierarchy kept
    /// there by an earlier job on the same graph is used as it is, and one read or built here
    /// is kept for the next.
    pub kept: Option<&'a tuccompi::session::Kept>,
    /// The targets of an origin-destination run that pair queries could answer (no folds, no
    /// paths): `auto` weighs them against a sweep.
    pub pair_targets: Option<usize>,
    /// The targets (internal ids) when every output of the run reads the trees at the targets
    /// only (no isochrones, no paths): the CPU sweeps may then be restricted to them
    /// ([`super::restrict`]), as `[apsp] sweep` allows.
    pub restrict: Option<&'a [u32]>,
    /// `[apsp] sweep`.
    pub sweep: SweepRequest,
}

/// `[apsp] sweep`: which part of the hierarchy the CPU PHAST sweeps visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum SweepRequest {
    /// Restricted to the targets' selection whenever the run's outputs allow it.
    #[default]
    Auto,
    /// Every vertex.
    Full,
    /// Restricted, or the run is refused when its outputs need whole trees.
    Restricted,
}

impl TryFrom<String> for SweepRequest {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.as_str() {
            "auto" => Ok(SweepRequest::Auto),
            "full" => Ok(SweepRequest::Full),
            "restricted" => Ok(SweepRequest::Restricted),
            _ => Err(format!(
                "sweep = {s:?}: use \"auto\", \"full\" or \"restricted\""
            )),
        }
    }
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("cpu", &self.cpu)
            .field("gpu", &self.gpu)
            .field("sources", &self.sources.len())
            .field("pending", &self.pending)
            .field("cpu_workers", &self.cpu_workers)
            .field("cache_path", &self.cache_path)
            .field("store", &self.store)
            .field("targets", &self.targets)
            .finish()
    }
}

/// Witness-search arcs scanned per input arc by a build on a road graph, which the forecast
/// assumes (measured: osm-moscow 430, the generated road graph 849, rome99 1,534).
pub const ROAD_WORK_PER_ARC: f64 = 1000.0;
/// CPU seconds of a build per witness-search arc scanned, in Dijkstra arc scans (a Dijkstra
/// tree's CPU seconds over the arcs it scanned, sampled). With [`ROAD_WORK_PER_ARC`] a build
/// is forecast at 400 Dijkstra trees of CPU time; on the 2-core machine the build of
/// osm-moscow measured 132 (4.70 CPU seconds against 35.5 ms trees, both beside other
/// builds) since its parallel rounds and pair-once witness searches; the generated road
/// graph scans twice the arcs per arc. Before those the builds measured 410 to 1,430 trees
/// and this was 0.9, which chose Dijkstra for 1,000 osm-moscow sources on 2 cores.
pub const SCAN_COST: f64 = 0.4;
/// The build's threads count as `threads^BUILD_SCALING` (the generated 100k road graph: 8.2 s
/// on 2 loaded cores, 1.7 s on 16, about 675 and 141 sampled trees; 16^0.65 = 6.1).
pub const BUILD_SCALING: f64 = 0.65;
/// A CPU PHAST tree against a Dijkstra tree on one core: measured 30-65x at the tuned trees
/// per sweep (BENCHMARKS.md, "PHAST"); the forecast takes less.
pub const CPU_PHAST_SPEEDUP: f64 = 20.0;
/// One GPU running the work list, in cores running Dijkstra (H100: 2,441 SSSP/s against 443
/// on 16 cores on osm-moscow, 88; 165 on the generated 100k road graph).
pub const GPU_WORKLIST_CORES: f64 = 120.0;
/// One GPU running PHAST, in cores running Dijkstra (H200, osm-moscow: 470,000 trees/s
/// against 41 per core, 11,000; less on small graphs and short runs).
pub const GPU_PHAST_CORES: f64 = 4000.0;
/// Dijkstra trees the forecast times.
pub const SAMPLE_TREES: usize = 4;
/// The least share of a core the forecast assumes a thread gets (a sampling that obtained
/// less was most likely descheduled as a whole, not a measure of the run to come).
pub const MIN_SHARE: f64 = 0.05;
/// Below this many CPU seconds in all, the sampled trees are too short to measure the share
/// of the cores the run gets (thread wake-ups weigh more than the trees): it is taken as 1.
pub const MIN_SHARE_SAMPLE: f64 = 0.02;

/// What the sampled Dijkstra trees measured, in terms the load does not change: a tree's
/// CPU time, and apart from it the share of a core each of the run's threads obtained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Thread CPU seconds of one tree (median): what it costs a core, however busy the machine.
    pub tree_cpu: f64,
    /// Wall seconds of one tree (median), for the report only.
    pub tree_wall: f64,
    /// Arcs one tree scanned (median).
    pub scanned: f64,
    /// The share of a core each thread of the run gets, in (0, 1]: the CPU seconds the
    /// sampling threads obtained over their wall seconds, per thread (1 on an idle machine,
    /// about 1/2 with as many busy processes as cores).
    pub share: f64,
}

impl Sample {
    /// A sample measured on an idle machine: `tree` seconds of CPU and wall per tree.
    pub fn idle(tree: f64, scanned: f64) -> Sample {
        Sample {
            tree_cpu: tree,
            tree_wall: tree,
            scanned,
            share: 1.0,
        }
    }

    /// The sample that the trees' CPU and wall seconds and the sampling's wall seconds give:
    /// `trees` holds each tree's (CPU seconds, wall seconds, arcs scanned), `obtained` the
    /// CPU seconds the sampling threads obtained in all (the trees and their set-up),
    /// `threads` how many ran at once over `wall` seconds (or 1, with `wall` the seconds each
    /// thread spent, summed).
    ///
    /// O(trees log trees).
    pub fn of(trees: &[(f64, f64, f64)], obtained: f64, threads: usize, wall: f64) -> Sample {
        let median = |i: fn(&(f64, f64, f64)) -> f64| {
            let mut v: Vec<f64> = trees.iter().map(i).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let share = if obtained < MIN_SHARE_SAMPLE || wall <= 0.0 {
            1.0
        } else {
            (obtained / wall / threads.max(1) as f64).clamp(MIN_SHARE, 1.0)
        };
        Sample {
            tree_cpu: median(|t| t.0),
            tree_wall: median(|t| t.1),
            scanned: median(|t| t.2),
            share,
        }
    }
}

/// The forecast of a run with and without a hierarchy, in seconds of wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Forecast {
    /// The run without a hierarchy: Dijkstra on the CPU workers, the work list on the GPUs.
    pub without: f64,
    /// The build of the hierarchy.
    pub build: f64,
    /// The run with PHAST where `"auto"` may take it.
    pub phast: f64,
    /// The witness-search work the build may spend: the work a road graph's build needs,
    /// scaled by the time the forecast leaves it (`without - phast`) over its forecast. It
    /// counts arcs scanned, so a build that is only slower in wall time (a busy machine) is
    /// not stopped by it; and since the build and the runs are forecast from the same CPU
    /// seconds and core share, its size does not depend on the load where only CPU cores run.
    pub work: u64,
}

impl Forecast {
    /// Whether the build plus the PHAST run is forecast to be cheaper.
    pub fn pays(&self) -> bool {
        self.build + self.phast < self.without
    }

    /// The forecast from measured and known quantities:
    /// - `sample`: one Dijkstra tree's CPU seconds and the arcs it scanned, and the share of
    ///   a core each of the run's threads gets ([`Sample`]);
    /// - `m`: the graph's arcs; `threads`: the build's threads;
    /// - `pending`: tasks to run; `cores`: groups of cores running Dijkstra (CPU workers,
    ///   CPU-type OpenCL devices' compute units), each with whether it may take PHAST;
    ///   `gpus`: GPUs (`gpu_phast`: whether they may take PHAST).
    ///
    /// The build and the CPU cores' trees are both CPU work slowed alike by the share; the
    /// GPUs' trees are not (the load takes cores, not the GPU).
    ///
    /// O(1).
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        sample: Sample,
        m: usize,
        threads: usize,
        pending: usize,
        cores: [(usize, bool); 2],
        gpus: usize,
        gpu_phast: bool,
    ) -> Forecast {
        let gpus = gpus as f64;
        let share = sample.share.clamp(MIN_SHARE, 1.0);
        // Trees per second of an idle Dijkstra core, and of the units without and with PHAST.
        let rate = 1.0 / sample.tree_cpu.max(1e-9);
        let cpus: f64 = cores.iter().map(|&(c, _)| c as f64 * share).sum();
        let cpus_with: f64 = cores
            .iter()
            .map(|&(c, phast)| c as f64 * share * if phast { CPU_PHAST_SPEEDUP } else { 1.0 })
            .sum();
        let without = (cpus + gpus * GPU_WORKLIST_CORES) * rate;
        let gpu_with = if gpu_phast {
            GPU_PHAST_CORES
        } else {
            GPU_WORKLIST_CORES
        };
        let with = (cpus_with + gpus * gpu_with) * rate;
        let time = |rate: f64| {
            if rate > 0.0 {
                pending as f64 / rate
            } else {
                f64::INFINITY
            }
        };
        let road_work = ROAD_WORK_PER_ARC * m as f64;
        let per_scan = SCAN_COST * sample.tree_cpu
            / sample.scanned.max(1.0)
            / ((threads.max(1) as f64).powf(BUILD_SCALING) * share);
        let build = road_work * per_scan;
        let (without, phast) = (time(without), time(with));
        let slack = (without - phast).max(0.0);
        let work = if build > 0.0 {
            (road_work * (slack / build).min(1e6)).min(u64::MAX as f64 / 2.0) as u64
        } else {
            u64::MAX / 2
        };
        Forecast {
            without,
            build,
            phast,
            work,
        }
    }

    /// The forecast in words: `"build 1.20 s + PHAST 0.05 s against 0.80 s without"`.
    pub fn words(&self) -> String {
        format!(
            "build {:.2} s + PHAST {:.2} s against {:.2} s without",
            self.build, self.phast, self.without
        )
    }
}

/// CPU seconds this thread has run.
fn thread_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Time `SAMPLE_TREES` Dijkstra trees from sources spread over `sources` (in parallel, one per
/// rayon thread), in CPU and wall seconds: their [`Sample`].
///
/// O(SAMPLE_TREES · (n + m log n)).
fn sample_trees(g: &Csr, sources: &[u32]) -> Sample {
    use rayon::prelude::*;
    let count = SAMPLE_TREES.min(sources.len()).max(1);
    let picks: Vec<u32> = (0..count)
        .map(|i| sources.get(i * sources.len() / count).copied().unwrap_or(0))
        .collect();
    // Each tree with its set-up: (CPU, wall, arcs) of the tree, (CPU, wall) of the whole.
    // The share is the CPU seconds obtained over the wall seconds each thread spent on its
    // trees, summed: how rayon spread the trees over its threads does not change it.
    type Timed = ((f64, f64, f64), (f64, f64));
    let got: Vec<Timed> = picks
        .par_iter()
        .map(|&s| {
            let (t0, c0) = (Instant::now(), thread_cpu());
            let mut dj = crate::apsp::dijkstra::Dijkstra::<u64>::new(g.n);
            let (t, c) = (Instant::now(), thread_cpu());
            let dist = dj.run(g, s);
            let (wall, cpu) = (t.elapsed().as_secs_f64(), thread_cpu() - c);
            let scanned: u64 = dist
                .iter()
                .enumerate()
                .filter(|(_, &d)| d != u64::MAX)
                .map(|(v, _)| (g.offsets[v + 1] - g.offsets[v]) as u64)
                .sum();
            (
                (cpu, wall, scanned as f64),
                (thread_cpu() - c0, t0.elapsed().as_secs_f64()),
            )
        })
        .collect();
    let obtained = got.iter().map(|x| x.1 .0).sum();
    let wall = got.iter().map(|x| x.1 .1).sum();
    let trees: Vec<_> = got.into_iter().map(|x| x.0).collect();
    Sample::of(&trees, obtained, 1, wall)
}

/// The decision, with what it is based on.
#[derive(Debug)]
pub struct Choice {
    /// The CPU algorithm that runs (never `Auto`).
    pub cpu: CpuAlgorithm,
    /// The GPU algorithm that runs.
    pub gpu: GpuAlgorithm,
    /// Why, in one sentence, for `check` and `report.json`.
    pub reason: String,
    /// The hierarchy, when a PHAST half runs (shared with the session that keeps it).
    pub hierarchy: Option<std::sync::Arc<AnyHierarchy>>,
    /// Facts for the report: where the hierarchy came from, its shape, `preprocess_seconds`.
    pub report: serde_json::Value,
    /// The part of the hierarchy the CPU sweeps visit, when restricted to the targets (made
    /// where the choice is made; not sent to other MPI ranks, which make their own).
    pub selection: Option<std::sync::Arc<super::restrict::Selection>>,
    /// The hierarchy's cache file being written, when it was built here: the job waits for it
    /// at its end ([`Stored`]).
    pub stored: Stored,
}

/// What [`Choice::to_bytes`] writes before the hierarchy.
#[derive(Serialize, Deserialize)]
struct ChoiceHead {
    cpu: CpuAlgorithm,
    gpu: GpuAlgorithm,
    reason: String,
    report: serde_json::Value,
    /// 0: no hierarchy; 4 or 8: its bytes per weight.
    width: u8,
}

impl Choice {
    /// This choice as bytes for the other ranks of an MPI job: a length-prefixed JSON head,
    /// then the hierarchy as a cache file holds it (keyed by `g`).
    pub fn to_bytes(&self, g: &Csr) -> Vec<u8> {
        let params = ChParams::default();
        let (width, tail) = match self.hierarchy.as_deref() {
            None => (0, Vec::new()),
            Some(AnyHierarchy::Narrow(h)) => (4, cache::to_bytes(&Key::of::<u32>(g, &params), h)),
            Some(AnyHierarchy::Wide(h)) => (8, cache::to_bytes(&Key::of::<u64>(g, &params), h)),
        };
        let head = ChoiceHead {
            cpu: self.cpu,
            gpu: self.gpu,
            reason: self.reason.clone(),
            report: self.report.clone(),
            width,
        };
        let head = serde_json::to_vec(&head).expect("a choice serializes");
        let mut out = Vec::with_capacity(8 + head.len() + tail.len());
        out.extend_from_slice(&(head.len() as u64).to_le_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(&tail);
        out
    }

    /// The choice [`Choice::to_bytes`] wrote, for this rank's copy of `g` (the hierarchy's key
    /// is checked against it: every rank must hold the same graph).
    pub fn from_bytes(bytes: &[u8], g: &Csr) -> Result<Choice> {
        let bad = |what: String| Error::Node(format!("rank 0's algorithm choice: {what}"));
        let len = bytes
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .filter(|&l| l <= bytes.len() - 8)
            .ok_or_else(|| bad("it ends early".into()))?;
        let head: ChoiceHead =
            serde_json::from_slice(&bytes[8..8 + len]).map_err(|e| bad(e.to_string()))?;
        let tail = &bytes[8 + len..];
        let params = ChParams::default();
        let miss = |m: Miss| bad(format!("its hierarchy: {m}"));
        let hierarchy = match head.width {
            0 => None,
            4 => Some(std::sync::Arc::new(AnyHierarchy::Narrow(
                cache::from_bytes(tail, &Key::of::<u32>(g, &params)).map_err(miss)?,
            ))),
            8 => Some(std::sync::Arc::new(AnyHierarchy::Wide(
                cache::from_bytes(tail, &Key::of::<u64>(g, &params)).map_err(miss)?,
            ))),
            w => return Err(bad(format!("a hierarchy of {w}-byte weights"))),
        };
        let mut report = head.report;
        report["from_rank_0"] = serde_json::json!(true);
        Ok(Choice {
            cpu: head.cpu,
            gpu: head.gpu,
            reason: head.reason,
            hierarchy,
            report,
            selection: None,
            stored: Stored::default(),
        })
    }
}

/// [`choose`] once for a whole MPI job (`share` with several ranks): rank 0 decides, for its
/// share of the tasks, and builds or reads the hierarchy; every other rank receives both
/// (deterministic, so the same as it would build, but built once). Without `share`, or with
/// one rank, [`choose`] itself.
pub fn choose_for_job(
    g: &Csr,
    wide: bool,
    req: &Request<'_>,
    share: Option<&dyn tuccompi::node::share::Share>,
) -> Result<Choice> {
    let Some(share) = share.filter(|s| s.ranks() > 1) else {
        return choose(g, wide, req);
    };
    // The ranks split the tasks: rank 0's forecast weighs the build against its share.
    let req = Request {
        pending: req.pending.div_ceil(share.ranks()),
        ..req.clone()
    };
    let mut mine = None;
    let bytes = share.made_on_rank_0("hierarchy", &mut || {
        let c = choose(g, wide, &req)?;
        let bytes = c.to_bytes(g);
        mine = Some(c);
        Ok(bytes)
    })?;
    match mine {
        Some(c) => Ok(c),
        None => Choice::from_bytes(&bytes, g),
    }
}

/// Decide the algorithms of a run on `g` and get the hierarchy PHAST needs.
pub fn choose(g: &Csr, wide: bool, req: &Request<'_>) -> Result<Choice> {
    let asked = Asked::of(req)?;
    if !asked.explicit && !asked.auto {
        return asked.fallback("as configured".into(), serde_json::json!({}));
    }
    let params = ChParams::default();
    // The graph's fingerprint, once: it names the cache file and checks what is read there.
    let key = if wide {
        Key::of::<u64>(g, &params)
    } else {
        Key::of::<u32>(g, &params)
    };
    let path = usable_cache_file(&key, req.cache_path)?;
    // Kept by an earlier job of this session: no forecast, no reading, no build.
    let kept_key = format!("apsp hierarchy {}", key.file_name());
    if let Some(h) = req.kept.and_then(|k| k.get::<AnyHierarchy>(&kept_key)) {
        let report = serde_json::json!({
            "width": if wide { 64 } else { 32 },
            "source": "session",
        });
        return asked.with_hierarchy(g, h, report, 0.0, path.as_deref(), req);
    }
    let cache = Cache {
        path: path.as_deref(),
        store: req.store,
    };
    // A verdict is kept where the hierarchy would be.
    let verdicts = path.clone();
    let mut budget = None;
    let mut forecast_report = serde_json::json!({});
    if !asked.explicit {
        match asked.attempt(g, req, path.as_deref(), &mut forecast_report) {
            Attempt::Within(b) => budget = Some(b),
            Attempt::Without(reason) => return asked.fallback(reason, forecast_report),
        }
    }
    let t = Instant::now();
    let got = if wide {
        obtain::<u64>(g, &key, &params, budget, &cache).map(|(h, r)| (AnyHierarchy::Wide(h), r))
    } else {
        obtain::<u32>(g, &key, &params, budget, &cache).map(|(h, r)| (AnyHierarchy::Narrow(h), r))
    };
    let seconds = t.elapsed().as_secs_f64();
    // What happened beside what was forecast: the build's wall seconds, whether it finished.
    if let Some(f) = forecast_report
        .get_mut("forecast")
        .and_then(|f| f.as_object_mut())
    {
        f.insert("measured_build_seconds".into(), serde_json::json!(seconds));
        f.insert(
            "build_finished".into(),
            serde_json::json!(matches!(got, Ok((_, ref r)) if r["source"] == "built")),
        );
    }
    let merge = |mut r: serde_json::Value| {
        if let (Some(r), Some(f)) = (r.as_object_mut(), forecast_report.as_object()) {
            r.extend(f.clone());
        }
        r
    };
    let (h, report) = match got {
        Ok(x) => x,
        Err(Obtain::Poor(e)) => {
            warn_fallback(&format!("auto: {e}"));
            if let (ChError::Poor { used, .. }, Some(file), true) = (&e, &verdicts, req.store) {
                Verdict::store(file, &e.to_string(), *used, false);
            }
            return asked.fallback(
                format!("auto: {e}"),
                merge(serde_json::json!({ "preprocess_seconds": seconds })),
            );
        }
        Err(Obtain::Fail(e)) => return Err(e),
    };
    let built = report["source"] == "built";
    let h = match req.kept {
        Some(k) => {
            let bytes = h.bytes();
            k.get_or_make(&kept_key, || Ok((h, bytes)))?
        }
        None => std::sync::Arc::new(h),
    };
    let stored = match (cache.path, cache.store && built) {
        (Some(path), true) => Stored::later(path.to_path_buf(), key, h.clone()),
        _ => Stored::default(),
    };
    let mut choice =
        asked.with_hierarchy(g, h, merge(report), seconds, verdicts.as_deref(), req)?;
    choice.stored = stored;
    Ok(choice)
}

/// `auto` tried PHAST and gave it up after spending time on the hierarchy: one line at
/// the default verbosity, so the time spent is not a mystery.
fn warn_fallback(why: &str) {
    tracing::warn!(
        "apsp: {why}; running Dijkstra on CPUs and the work list on GPUs instead of PHAST \
         (apsp.cpu_algorithm / apsp.gpu_algorithm = \"phast\" insists, \"dijkstra\" / \
         \"worklist\" skips the attempt)"
    )
}

/// The cache file for `key` ([`cache_file`]), when what is there may be read and replaced.
fn usable_cache_file(key: &Key, configured: Option<&Path>) -> Result<Option<PathBuf>> {
    let path = cache_file(key, configured);
    // What is at the cache path must be a hierarchy (or nothing) to be read or replaced: a
    // configured path holding anything else (a user's file, a link) is refused before any
    // work; in the default directory it is left alone with a warning.
    let path = match path.map(|p| (cache::ownable(&p), p)) {
        Some((Err(what), p)) if configured.is_some() => {
            return Err(Error::Config(format!(
                "[apsp] hierarchy = {:?}: it is {what}; tuccompi reads and replaces only a \
                 hierarchy file there: name another file (a new one is created), or remove \
                 this one",
                p.display().to_string()
            )))
        }
        Some((Err(what), p)) => {
            tracing::warn!(
                "{}: it is {what}, not a hierarchy: left alone, the hierarchy is not cached",
                p.display()
            );
            None
        }
        Some((Ok(()), p)) => Some(p),
        None => None,
    };
    Ok(path)
}

/// The algorithms a run asks for, as [`choose`] reads them.
#[derive(Clone, Copy)]
struct Asked {
    /// The CPU algorithm asked for (Dijkstra when no CPU worker runs).
    cpu: CpuAlgorithm,
    /// The GPU algorithm asked for (the work list when no OpenCL device is wanted).
    gpu: GpuRequest,
    /// The GPU half of PHAST, when it exists and can serve this run.
    gpu_phast: Option<GpuAlgorithm>,
    /// Whether PHAST is asked for by name.
    explicit: bool,
    /// Whether `"auto"` decides.
    auto: bool,
}

/// What `"auto"` does before obtaining a hierarchy.
enum Attempt {
    /// Obtain it (read or build it) within this budget.
    Within(Budget),
    /// Run without it, for this reason.
    Without(String),
}

impl Asked {
    /// What `req` asks for; a GPU PHAST that cannot serve the run is refused when asked for
    /// by name and not tried under `"auto"`.
    fn of(req: &Request<'_>) -> Result<Asked> {
        let cpu_req = req.cpu.unwrap_or(CpuAlgorithm::Dijkstra);
        let mut gpu_req = req.gpu.unwrap_or(GpuRequest::Fixed(GpuAlgorithm::Worklist));
        // The GPU half of PHAST, when it exists and can serve this run.
        let gpu_phast = GPU_PHAST.filter(|_| GPU_PHAST_TARGETS || !req.targets);
        if gpu_phast.is_none() {
            match gpu_req {
                GpuRequest::Phast => {
                    return Err(Error::Config(if GPU_PHAST.is_some() {
                        "[apsp] gpu_algorithm = \"phast\" does not support [apsp] targets yet: use \
                         \"auto\" or \"worklist\" on GPUs, or leave targets = \"all\""
                            .into()
                    } else {
                        "[apsp] gpu_algorithm = \"phast\": this build has no GPU half of PHAST; use \
                         \"auto\" or \"worklist\" (cpu_algorithm = \"phast\" runs PHAST on CPU cores)"
                            .into()
                    }))
                }
                GpuRequest::Auto => gpu_req = GpuRequest::Fixed(GpuAlgorithm::Worklist),
                GpuRequest::Fixed(_) => {}
            }
        }
        if cpu_req == CpuAlgorithm::Pairs && req.pair_targets.is_none() {
            return Err(Error::Config(
                "[apsp] cpu_algorithm = \"pairs\" answers an origin-destination run (apsp.targets, \
                 without [apsp.reach], paths or predecessors); use \"auto\", \"phast\" or \
                 \"dijkstra\" for this run"
                    .into(),
            ));
        }
        let explicit = matches!(cpu_req, CpuAlgorithm::Phast | CpuAlgorithm::Pairs)
            || gpu_req == GpuRequest::Phast;
        let auto = cpu_req == CpuAlgorithm::Auto || gpu_req == GpuRequest::Auto;
        Ok(Asked {
            cpu: cpu_req,
            gpu: gpu_req,
            gpu_phast,
            explicit,
            auto,
        })
    }

    /// The CPU and GPU algorithms that run, with PHAST where `"auto"` may take it (`phast`)
    /// or without.
    fn resolve(&self, phast: bool) -> (CpuAlgorithm, GpuAlgorithm) {
        let Asked {
            cpu: cpu_req,
            gpu: gpu_req,
            gpu_phast,
            ..
        } = *self;
        let cpu = match cpu_req {
            CpuAlgorithm::Auto if phast => CpuAlgorithm::Phast,
            CpuAlgorithm::Auto | CpuAlgorithm::Pairs if !phast => CpuAlgorithm::Dijkstra,
            fixed => fixed,
        };
        let gpu = match (gpu_req, gpu_phast) {
            (GpuRequest::Auto | GpuRequest::Phast, Some(g)) if phast => g,
            (GpuRequest::Fixed(a), _) => a,
            _ => GpuAlgorithm::Worklist,
        };
        (cpu, gpu)
    }

    /// The choice without a hierarchy, for `reason`.
    fn fallback(&self, reason: String, report: serde_json::Value) -> Result<Choice> {
        let (cpu, gpu) = self.resolve(false);
        Ok(Choice {
            cpu,
            gpu,
            reason,
            hierarchy: None,
            report,
            selection: None,
            stored: Stored::default(),
        })
    }

    /// Under `"auto"`, whether to obtain the hierarchy (from the cache at `path`, else built)
    /// and within which budget; the forecast, when one is made, goes to `forecast_report`.
    fn attempt(
        &self,
        g: &Csr,
        req: &Request<'_>,
        path: Option<&Path>,
        forecast_report: &mut serde_json::Value,
    ) -> Attempt {
        let verdict = path.and_then(Verdict::load);
        let cached = verdict.is_none()
            && path.is_some_and(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0));
        if cached {
            // A file is there: read it (a miss is rebuilt within the structural budget).
            return Attempt::Within(Budget::for_graph(g.n, g.m()));
        }
        let (f, devices, cpus) = self.forecast(g, req, forecast_report);
        let gpus = devices.gpus;
        if !f.pays() {
            return Attempt::Without(format!(
                "auto: a contraction hierarchy would not pay back for {} tasks on {cpus} \
                 CPU workers and {gpus} GPUs{} (forecast: {})",
                req.pending,
                match devices.cpu_units {
                    0 => String::new(),
                    u => format!(" (and CPU OpenCL devices of {u} compute units)"),
                },
                f.words()
            ));
        }
        let structural = Budget::for_graph(g.n, g.m());
        let b = Budget {
            work: structural.work.min(f.work),
            ..structural
        };
        if let Some(v) = verdict {
            if v.stops(b.work) {
                return Attempt::Without(format!(
                    "auto: {} (a cached verdict: {})",
                    v.reason, v.file
                ));
            }
        }
        if !req.store {
            // `tuccompi check` builds nothing it does not need: it says what `run` does.
            return Attempt::Without(format!(
                "auto: `run` builds a contraction hierarchy here and takes PHAST if it \
                 is good (forecast: {}); `check` builds none, so it shows the plan \
                 without it",
                f.words()
            ));
        }
        tracing::info!("apsp: building a contraction hierarchy ({})", f.words());
        Attempt::Within(b)
    }

    /// The forecast of the run with and without a hierarchy ([`Forecast`]) from trees sampled
    /// now, with the OpenCL devices and CPU workers it counted; its facts go to `report`.
    fn forecast(
        &self,
        g: &Csr,
        req: &Request<'_>,
        report: &mut serde_json::Value,
    ) -> (Forecast, tuccompi::plugin::DeviceCount, usize) {
        let Asked {
            cpu: cpu_req,
            gpu: gpu_req,
            gpu_phast,
            ..
        } = *self;
        let t = Instant::now();
        let sample = sample_trees(g, req.sources);
        let cpu_phast = cpu_req == CpuAlgorithm::Auto;
        let gpu_phast = gpu_req == GpuRequest::Auto && gpu_phast.is_some();
        let devices = match req.gpu {
            Some(_) => (req.gpus)(),
            None => Default::default(),
        };
        let gpus = devices.gpus;
        // CPU-type OpenCL devices (PoCL) count as cores, taking PHAST as the GPUs do.
        let cpus = req.cpu.map_or(0, |_| req.cpu_workers);
        let threads = rayon::current_num_threads();
        let f = Forecast::of(
            sample,
            g.m(),
            threads,
            req.pending,
            [(cpus, cpu_phast), (devices.cpu_units, gpu_phast)],
            gpus,
            gpu_phast,
        );
        *report = serde_json::json!({
            "forecast": {
                "dijkstra_tree_cpu_seconds": sample.tree_cpu,
                "dijkstra_tree_wall_seconds": sample.tree_wall,
                "core_share": sample.share,
                "build_threads": threads,
                "tasks": req.pending,
                "cpu_workers": cpus,
                "gpus": gpus,
                "cpu_device_units": devices.cpu_units,
                "without_seconds": f.without,
                "build_seconds": f.build,
                "phast_seconds": f.phast,
                "work_budget": f.work,
                "sample_seconds": t.elapsed().as_secs_f64(),
                // The run forecast for the algorithms chosen, beside the measured run
                // phase (`phase_seconds.run`) and, when built, the measured build.
                "chosen": if f.pays() { "phast" } else { "without" },
                "run_seconds": if f.pays() { f.phast } else { f.without },
            }
        });
        (f, devices, cpus)
    }

    /// The choice with the hierarchy `h`, obtained in `seconds`: its shape in `report`; PHAST
    /// unless `"auto"` finds the hierarchy poor (a verdict then kept at `verdicts`).
    fn with_hierarchy(
        &self,
        g: &Csr,
        h: std::sync::Arc<AnyHierarchy>,
        mut report: serde_json::Value,
        seconds: f64,
        verdicts: Option<&Path>,
        req: &Request<'_>,
    ) -> Result<Choice> {
        let (shortcuts, arcs, levels) = match &*h {
            AnyHierarchy::Narrow(h) => (h.info.shortcuts, h.info.arcs, h.num_levels()),
            AnyHierarchy::Wide(h) => (h.info.shortcuts, h.info.arcs, h.num_levels()),
        };
        let upward = match &*h {
            AnyHierarchy::Narrow(h) => upward_space(h, SAMPLES),
            AnyHierarchy::Wide(h) => upward_space(h, SAMPLES),
        };
        report["preprocess_seconds"] = serde_json::json!(seconds);
        report["shortcuts"] = serde_json::json!(shortcuts);
        report["shortcuts_per_arc"] = serde_json::json!(shortcuts as f64 / arcs.max(1) as f64);
        report["levels"] = serde_json::json!(levels);
        report["upward_search_mean"] = serde_json::json!(upward);
        let shape = format!(
            "{:.2} shortcuts per arc, {levels} levels, upward search {upward:.0} of {} vertices",
            shortcuts as f64 / arcs.max(1) as f64,
            g.n
        );
        if !self.explicit && upward > (g.n as f64 / 8.0).max(1.0) {
            warn_fallback(&format!("auto: the hierarchy is poor ({shape})"));
            if let (Some(file), true) = (verdicts, req.store) {
                let why = format!("the hierarchy is poor ({shape})");
                Verdict::store(file, &why, u64::MAX, true);
            }
            return self.fallback(
                format!(
                    "auto: the hierarchy is poor ({shape}: over n/8 vertices per upward search)"
                ),
                report,
            );
        }
        let (mut cpu, gpu) = self.resolve(true);
        let mut reason = if self.explicit && !self.auto {
            format!("as configured ({shape})")
        } else {
            format!("auto: the hierarchy is good ({shape})")
        };
        // Targets only: the CPU sweeps visit the part of the hierarchy the targets need.
        let mut selection = None;
        let restrict = req.restrict.filter(|_| {
            req.cpu.is_some()
                && req.sweep != SweepRequest::Full
                && matches!(cpu, CpuAlgorithm::Phast | CpuAlgorithm::Auto)
        });
        let t = Instant::now();
        if let Some(targets) = restrict {
            selection = Some(super::restrict::Selection::of(&h, targets));
        }
        let swept = selection
            .as_ref()
            .map_or(g.n, super::restrict::Selection::len);
        // Few targets: a backward search each beats a sweep.
        if let (CpuAlgorithm::Auto, Some(t)) = (self.cpu, req.pair_targets) {
            let pairs = t as f64 * upward * PAIR_COST;
            report["pairs_cost_per_source"] = serde_json::json!(pairs);
            if pairs < swept as f64 {
                cpu = CpuAlgorithm::Pairs;
                reason = format!(
                    "{reason}; {t} targets: pair queries on CPUs ({t} x upward search {upward:.0} \
                     x {PAIR_COST} < {swept} vertices a sweep visits)"
                );
                selection = None;
            }
        }
        if let Some(sel) = &selection {
            report["sweep"] = serde_json::json!("restricted");
            report["restricted_vertices"] = serde_json::json!(sel.len());
            report["selection_seconds"] = serde_json::json!(t.elapsed().as_secs_f64());
            reason = format!(
                "{reason}; CPU sweeps restricted to the {} of {} vertices the targets need",
                sel.len(),
                g.n
            );
        }
        let selection = selection.map(std::sync::Arc::new);
        Ok(Choice {
            cpu,
            gpu,
            reason,
            hierarchy: Some(h),
            report,
            selection,
            stored: Stored::default(),
        })
    }
}

/// The cache file for this graph: `[apsp] hierarchy`, else one named by the key in the user's
/// cache directory.
fn cache_file(key: &Key, configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = configured {
        return Some(p.to_path_buf());
    }
    cache::default_dir().map(|d| d.join(key.file_name()))
}

/// A cached "poor hierarchy" verdict: a build of this graph that stopped past its budget (the
/// witness-search work it had spent then), or a hierarchy found poor (`structural`: no budget
/// changes that). A later `"auto"` run skips the build when its own budget would stop it as
/// early. Kept like a hierarchy and in its place (the cache file, whose first bytes it shares:
/// [`cache::ownable`] lets a later build replace it), written through [`tuccompi::owned`] (an
/// exclusive temporary file renamed into place), and only over nothing, an empty file, a
/// hierarchy or another verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Why, in words.
    pub reason: String,
    /// Witness-search work (arcs scanned) spent when the build stopped.
    pub work: u64,
    /// Whether the graph's hierarchy is poor whatever the budget.
    pub structural: bool,
    /// The file it was read from (not stored).
    #[serde(skip)]
    pub file: String,
}

/// First line of a verdict file.
/// First line of a verdict file (it begins with a hierarchy's magic, `TUCCOMPI-CH`, so the
/// cache's [`cache::ownable`] treats it as its own; [`cache::load`] reads it as stale).
const VERDICT_MAGIC: &str = "TUCCOMPI-CH-VERDICT 1";
/// A file in a hierarchy's place this long or longer is no verdict.
const VERDICT_MAX: u64 = 1 << 16;

impl Verdict {
    /// Whether a build with a budget of `work` would stop as this one did.
    pub fn stops(&self, work: u64) -> bool {
        self.structural || work <= self.work
    }

    /// The verdict at `path`, when one is there and readable.
    pub fn load(path: &Path) -> Option<Verdict> {
        use std::io::Read;
        // A verdict is a line and a small JSON object; the file in its place is most often a
        // hierarchy of up to gigabytes, of which only the first bytes are read.
        let f = tuccompi::owned::reopen(path, false, "").ok()?;
        let mut bytes = Vec::new();
        f.take(VERDICT_MAX).read_to_end(&mut bytes).ok()?;
        if !bytes.starts_with(VERDICT_MAGIC.as_bytes()) || bytes.len() as u64 >= VERDICT_MAX {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        let (magic, json) = text.split_once('\n')?;
        let mut v: Verdict =
            (magic == VERDICT_MAGIC).then(|| serde_json::from_str(json).ok())??;
        v.file = path.display().to_string();
        Some(v)
    }

    /// Store a verdict at `path` (warning, not failing, when it cannot be written or when
    /// something other than a verdict is there).
    pub fn store(path: &Path, reason: &str, work: u64, structural: bool) {
        let v = Verdict {
            reason: reason.into(),
            work,
            structural,
            file: String::new(),
        };
        let text = format!(
            "{VERDICT_MAGIC}\n{}\n",
            serde_json::to_string(&v).expect("a verdict serializes")
        );
        let stored = if let Err(what) = cache::ownable(path) {
            Err(Error::Config(what))
        } else {
            path.parent()
                .map_or(Ok(()), |d| {
                    std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))
                })
                .and_then(|()| tuccompi::owned::write_atomic(path, text.as_bytes(), ""))
        };
        match stored {
            Ok(()) => tracing::info!("{}: verdict kept for later runs", path.display()),
            Err(e) => tracing::warn!(
                "{}: could not keep the verdict on this hierarchy for later runs ({e}); it is \
                 left alone",
                path.display()
            ),
        }
    }
}

enum Obtain {
    Poor(ChError),
    Fail(Error),
}

/// Where [`obtain`] reads and stores a hierarchy.
struct Cache<'a> {
    /// The cache file (checked [`cache::ownable`]), if any.
    path: Option<&'a Path>,
    /// Whether a built hierarchy is written there.
    store: bool,
}

/// The hierarchy from the cache at `path`, else built (and then stored there). A cache that
/// cannot be used is reported and replaced; one that cannot be written is reported and left.
fn obtain<W: ChWeight>(
    g: &Csr,
    key: &Key,
    p: &ChParams,
    budget: Option<Budget>,
    cache: &Cache<'_>,
) -> std::result::Result<(Hierarchy<W>, serde_json::Value), Obtain> {
    debug_assert_eq!(key.width as usize, std::mem::size_of::<W>());
    let mut report = serde_json::json!({ "width": std::mem::size_of::<W>() * 8 });
    if let Some(path) = cache.path {
        report["cache"] = serde_json::json!(path.display().to_string());
        // A verdict there is no hierarchy: build (and replace it), with no "stale" warning.
        let load = match Verdict::load(path) {
            Some(_) => Err(Miss::Absent),
            None => cache::load::<W>(path, key),
        };
        match load {
            Ok(h) => {
                report["source"] = serde_json::json!("cache");
                return Ok((h, report));
            }
            Err(Miss::Absent) => {}
            Err(miss) => {
                tracing::warn!("{}: {miss}; building the hierarchy again", path.display());
                report["cache_miss"] = serde_json::json!(miss.to_string());
            }
        }
    }
    let h = Hierarchy::<W>::build(g, p, budget).map_err(|e| match e {
        ChError::Poor { .. } => Obtain::Poor(e),
        ChError::Unfit(_) => Obtain::Fail(Error::Input(format!("{}: {e}", g.name))),
    })?;
    report["source"] = serde_json::json!("built");
    // Stored by the caller, beside the run ([`Stored::later`]).
    Ok((h, report))
}

/// A built hierarchy being written to its cache file by a thread of its own, beside the rest
/// of the job (a cold start does not wait for the file). Joined by [`Stored::wait`] (the job's
/// `finish`) or on drop (a job that ends early), so that no process exits while it writes; a
/// write that fails is a warning, as a cache that cannot be written always was.
#[derive(Debug, Default)]
pub struct Stored(std::sync::Mutex<Option<std::thread::JoinHandle<()>>>);

impl Stored {
    /// Start writing `h` (keyed by `key`) to `path`.
    fn later(path: PathBuf, key: Key, h: std::sync::Arc<AnyHierarchy>) -> Stored {
        let write = move || {
            let t = Instant::now();
            let stored = match &*h {
                AnyHierarchy::Narrow(h) => cache::store(&path, &key, h),
                AnyHierarchy::Wide(h) => cache::store(&path, &key, h),
            };
            match stored {
                Ok(()) => tracing::debug!(
                    "{}: hierarchy stored in {:.3} s, beside the run",
                    path.display(),
                    t.elapsed().as_secs_f64()
                ),
                Err(e) => tracing::warn!(
                    "{}: could not keep the hierarchy for later runs: {e}",
                    path.display()
                ),
            }
        };
        match std::thread::Builder::new()
            .name("hierarchy store".into())
            .spawn(write)
        {
            Ok(handle) => Stored(std::sync::Mutex::new(Some(handle))),
            Err(e) => {
                tracing::warn!("the hierarchy is not cached: no thread to write it ({e})");
                Stored::default()
            }
        }
    }

    /// Wait until the hierarchy is in its file (at once when none is being written).
    pub fn wait(&self) {
        let handle = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            // The writer reports its own failure; a panic there is not the run's.
            let _ = handle.join();
        }
    }
}

impl Drop for Stored {
    fn drop(&mut self) {
        self.wait();
    }
}

/// What a target's backward search costs against a sweep's visit of one vertex, per vertex of the
/// upward search (`auto` answers a source's row by pair queries when targets x upward search x this
/// is below the vertices a sweep visits: n, or the targets' selection when the sweep is restricted,
/// which on osm-moscow beat pair queries from one target on). On osm-moscow (upward search 242 of
/// 411,992 vertices; 2-core machine, `plugins/benches/pairs.sh`) a target's backward search took
/// 9-13 us and a PHAST tree 0.4-0.5 ms: even at about 40 targets.
pub const PAIR_COST: f64 = 40.0;

/// Mean number of vertices an upward search from `samples` evenly spread sources reaches.
///
/// O(samples · S) for search spaces of S vertices.
pub fn upward_space<W>(h: &Hierarchy<W>, samples: usize) -> f64 {
    let samples = samples.min(h.n);
    if samples == 0 {
        return 0.0;
    }
    let mut seen = vec![false; h.n];
    let (mut stack, mut list) = (Vec::new(), Vec::new());
    let mut total = 0usize;
    for i in 0..samples {
        let s = h.pos[i * h.n / samples];
        seen[s as usize] = true;
        stack.push(s);
        list.push(s);
        while let Some(p) = stack.pop() {
            let (a, b) = (h.up_offsets[p as usize], h.up_offsets[p as usize + 1]);
            for &q in &h.up_heads[a as usize..b as usize] {
                if !seen[q as usize] {
                    seen[q as usize] = true;
                    stack.push(q);
                    list.push(q);
                }
            }
        }
        total += list.len();
        for q in list.drain(..) {
            seen[q as usize] = false;
        }
    }
    total as f64 / samples as f64
}

#[cfg(test)]
mod test;
