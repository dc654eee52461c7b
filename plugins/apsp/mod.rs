//! `apsp`: all-pairs shortest paths as n single-source shortest paths.
//!
//! Every source vertex is one task. The CPU half is Dijkstra with a radix heap
//! ([`dijkstra`]) or PHAST ([`phast`]); the GPU half ([`gpu`]) runs a batch of sources at once
//! with PHAST or the work-list, Crauser, Martin or two-phase frontier algorithms. Both produce,
//! per source, a record `[reached, sum_lo, sum_hi, max]` and, with `apsp.distances = true`,
//! the distance row.
//!
//! Distances are computed in u32 unless most trees provably need u64 ([`width`]): a u32 tree
//! whose distances overflow is detected exactly and redone in u64. Rows are u32 when every
//! shortest path provably fits (`(n-1)·max_weight < 2^32-1`), else u64; unreachable is the
//! type's maximum. Per-source sums are 128-bit.

pub mod dijkstra;
pub mod gpu;
pub mod isochrone;
pub mod od;
pub mod pairs;
pub mod paths;
pub mod phantom;
pub mod phast;
pub mod reach;
pub mod route;
pub mod targets;
pub mod width;

use crate::common::geo::{self, Geo};
use crate::common::Sources;
use crate::common::{resolve_sources, write_summary_records, Dist, PathSummary, RowWrite};
use crate::graph::Csr;
use dijkstra::Dijkstra;
use serde::Deserialize;
use std::ops::Range;
use tuccompi::config::AutoOr;
use tuccompi::device::{Device, KernelSource};
use tuccompi::plugin::{
    Details, DeviceData, Gpu, Job, Out, Plugin, PrepareCtx, Record, Records, RecordsOut, Worker,
};
use tuccompi::sink::NpyRows;
use tuccompi::tuning::{LaunchParams, Tuner};
use tuccompi::Result;

/// The plugin.
#[derive(Debug)]
pub struct Apsp;

/// GPU algorithm for the single-source part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuAlgorithm {
    /// Crauser et al.'s criterion, as in the TuCCompi thesis: Δ = min over unsettled u of
    /// δ(u) + ω(u), ω(u) the lightest arc out of u.
    Crauser,
    /// Martin et al.'s baseline: Δ = min over unsettled u of δ(u).
    Martin,
    /// The multi-GPU Dijkstra paper's two kernels over mask / cost / updating-cost arrays
    /// (Bellman-Ford-like frontier relaxation until no cost changes).
    TwoPhase,
    /// Work-efficient Bellman-Ford over a compacted frontier (a work list) with a persistent
    /// grid: per round, work proportional to the frontier, not to n. The default: on road
    /// graphs it ran 15-150x faster than Crauser on an H100 (BENCHMARKS.md).
    #[default]
    Worklist,
    /// PHAST over a contraction hierarchy (`gpu/phast.rs`): a small upward search per source,
    /// then one sweep over the vertices level by level, `k` trees at once. Chosen through
    /// `gpu_algorithm = "phast"` or `"auto"` (phast::auto).
    Phast,
}

/// `[apsp]` options.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ApspOptions {
    /// `gpu_algorithm` as configured: "auto" (the default), "phast" or a frontier algorithm.
    #[serde(rename = "gpu_algorithm", default)]
    pub gpu_request: phast::auto::GpuRequest,
    /// The GPU algorithm that runs: `gpu_request` resolved in `prepare` (never read from TOML).
    #[serde(skip)]
    pub gpu_algorithm: GpuAlgorithm,
    /// Whether `od.csv` is written beside `od.npz`: `apsp.format = "csv"` (set in `prepare`,
    /// never read from TOML).
    #[serde(skip)]
    pub od_csv: bool,
    /// CPU algorithm: "auto" (the default), "dijkstra" or "phast".
    #[serde(default)]
    pub cpu_algorithm: phast::auto::CpuAlgorithm,
    /// PHAST trees per CPU sweep ("auto" = the tuning rule, from the cache size).
    pub cpu_batch: Option<AutoOr>,
    /// Which part of the hierarchy the CPU sweeps visit when targets are set: "auto" (the
    /// targets' selection whenever the outputs allow it), "full" or "restricted".
    #[serde(default)]
    pub sweep: phast::auto::SweepRequest,
    /// Targets of the summary and of distances.npy: "all" (default), the first N vertices, or
    /// a list of vertex ids in the input's numbering.
    pub targets: Option<Sources>,
    /// Hierarchy cache file (default: a file named by the graph's content in the user's cache
    /// directory).
    pub hierarchy: Option<std::path::PathBuf>,
    /// Sources per GPU batch ("auto" = from device memory and graph size).
    pub batch: Option<AutoOr>,
    /// Work-group size for the SSSP kernels ("auto" = the tuner's choice).
    pub local_size: Option<AutoOr>,
    /// Bucket width of the work-list algorithm's threshold ("auto" = 64 x the mean arc weight;
    /// 0 = no threshold, plain Bellman-Ford rounds).
    pub delta: Option<AutoOr>,
    /// Where GPU PHAST runs the per-source upward searches ("auto" = device when the
    /// distances' atomics exist).
    #[serde(default)]
    pub gpu_upward: gpu::phast::Upward,
    /// Entries of each of GPU PHAST's two local-memory frontier lists ("auto" = 1024, less
    /// when local memory is short); a tree that overflows is redone on the host.
    pub gpu_frontier: Option<AutoOr>,
    /// Leading (small) levels GPU PHAST sweeps in one launch ("auto" = those too small to fill
    /// the device; 0 = one launch per level).
    pub gpu_top_levels: Option<AutoOr>,
    /// Trailing levels GPU PHAST sweeps and folds into the summaries at once when nothing but
    /// the summaries is wanted ("auto" = the bottom level and the large ones above it; 0 =
    /// every level swept, then summarized).
    pub gpu_fold_levels: Option<AutoOr>,
    /// Tree quads (4 trees each) GPU PHAST's fold sweeps at a time, every slice of a level's
    /// vertices for them before the next ("auto" = 64 on a GPU, every quad on a CPU device).
    pub gpu_fold_quads: Option<AutoOr>,
    /// Slices of a folded level's vertices in GPU PHAST's fold, whose items number slices x
    /// k/4 ("auto" = every item resident at once on a GPU, the summary's slices on a CPU
    /// device).
    pub gpu_fold_slices: Option<AutoOr>,
    /// `[apsp.reach]`: counts, sums, nearest targets and isochrones folded per source.
    pub reach: Option<reach::ReachOptions>,
    /// Write `predecessors.npy`: each tree's predecessors in the input's numbering ([`paths`]).
    #[serde(default)]
    pub predecessors: bool,
    /// Write each (source, target) pair's path as `paths.csv` (and `paths.geojson` for
    /// OpenStreetMap input); needs `targets` ([`paths`]).
    #[serde(default)]
    pub paths: bool,
    /// How `paths` are written: "csv" (the default: `paths.csv`, `paths.geojson`) or "npy"
    /// (`path_offsets.npy` and `path_vertices.npy`, [`paths::PathsFormat`]).
    pub paths_format: Option<paths::PathsFormat>,
}

impl ApspOptions {
    /// Values no half can run, refused whichever units run (a key is checked even when no
    /// device would read it, so that a config's mistake does not wait for the machine that
    /// has a GPU).
    fn check(&self) -> Result<()> {
        let zero = |v: Option<AutoOr>| v.and_then(|v| v.value()) == Some(0);
        for (key, v, what) in [
            ("batch", self.batch, "sources per GPU batch: use at least 1"),
            (
                "cpu_batch",
                self.cpu_batch,
                "trees per CPU sweep: use at least 1",
            ),
            (
                "gpu_frontier",
                self.gpu_frontier,
                "entries of GPU PHAST's frontier lists: use at least 1, or \"auto\"",
            ),
            (
                "gpu_fold_quads",
                self.gpu_fold_quads,
                "the fold sweeps at least 1 tree quad (4 trees) at a time; use 1 or more (more \
                 than the batch's quads means all of them) or \"auto\"",
            ),
            (
                "gpu_fold_slices",
                self.gpu_fold_slices,
                "the fold's items take at least 1 slice of a level's vertices; use 1 or more \
                 (more than the vertices means one each) or \"auto\"",
            ),
        ] {
            if zero(v) {
                return Err(tuccompi::Error::Config(format!("[apsp] {key} = 0: {what}")));
            }
        }
        Ok(())
    }
}

/// The shared state of an APSP run.
pub struct ApspJob {
    /// The graph.
    pub graph: Csr,
    /// The files read: `[input]`'s and `apsp.targets = { file = ... }`.
    pub inputs: Vec<std::path::PathBuf>,
    /// What `tuccompi check` prints of the plan: the input and the sources.
    pub check: Vec<(String, String)>,
    /// Source vertex (internal id) of each task.
    pub sources: Vec<u32>,
    /// Whether the trees are computed in 64 bits from the start (else in 32, a tree that
    /// overflows redone in 64: [`width`]).
    pub wide: bool,
    /// The widths and why.
    pub width: width::Width,
    /// Options.
    pub options: ApspOptions,
    /// The distance matrix, when requested.
    pub rows: Option<NpyRows>,
    /// The contraction hierarchy, when a PHAST half runs.
    pub hierarchy: Option<std::sync::Arc<phast::AnyHierarchy>>,
    /// The CPU algorithm that runs.
    pub cpu_algorithm: phast::auto::CpuAlgorithm,
    /// Why these algorithms, and the hierarchy's facts (for the report).
    pub choice: serde_json::Value,
    /// Target vertices (internal ids) of each record and row; `None` = every vertex.
    pub targets: Option<Vec<u32>>,
    /// Where the config's keys were set (the GPU half's messages name the place).
    pub origins: tuccompi::config::Origins,
    /// The input's places and the points snapped to them (empty for inputs without places).
    pub geo: GeoJob,
    /// The reductions folded per source (`[apsp.reach]`), if any.
    pub reach: Option<reach::Reach>,
    /// Predecessors and paths, when asked for.
    pub paths: Option<paths::PathsJob>,
    /// The hierarchy's route index, when the CPU workers answer by pair queries
    /// (`cpu_algorithm = "pairs"`; kept in a session).
    pub router: Option<std::sync::Arc<pairs::JobRouter>>,
    /// The part of the hierarchy the CPU sweeps visit, when restricted to the targets
    /// ([`phast::restrict`]).
    pub selection: Option<std::sync::Arc<phast::restrict::Selection>>,
    /// The hierarchy's cache file, written beside the run when this job built it; `finish`
    /// waits for it.
    pub stored: phast::auto::Stored,
}

/// An APSP job's places: the input's coordinates (OpenStreetMap or `.co`) and the sources' and
/// targets' points snapped to vertices, for `vertices.csv`, `snapped.csv` and the report.
#[derive(Debug, Default)]
pub struct GeoJob {
    /// The input's coordinates, when it has them.
    pub geo: Option<Geo>,
    /// One snap per source given as a point (empty when the sources are ids).
    pub sources: Vec<crate::graph::Snap>,
    /// One snap per target given as a point.
    pub targets: Vec<crate::graph::Snap>,
}

impl std::fmt::Debug for ApspJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ApspJob(n={}, m={}, tasks={})",
            self.graph.n,
            self.graph.m(),
            self.sources.len()
        )
    }
}

impl Plugin for Apsp {
    fn name(&self) -> &'static str {
        "apsp"
    }
    fn description(&self) -> &'static str {
        "all-pairs shortest paths as one SSSP per source: PHAST over a contraction hierarchy \
         (auto on road graphs) or Dijkstra on CPU cores; PHAST (auto on road graphs), batched \
         work-list, Crauser, Martin or two-phase SSSP on OpenCL devices"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let mut load = |points: &[(&str, &[[f64; 2]])]| {
            let input = crate::common::input::Input::on_this_rank(ctx.plan, ctx.share)?;
            geo::load_input(ctx, &input, points)
        };
        prepare_with(ctx, &mut load, &Given::default())
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
}

/// What loads a job's graph (and its places), given the `[lon, lat]` points the job snaps
/// (`(key, points)`: snapped onto edges where the input allows, as they become vertices).
pub type Load<'a> = dyn FnMut(&[(&str, &[[f64; 2]])]) -> Result<(Csr, Option<Geo>)> + 'a;

/// Lists a caller hands over in memory instead of the config's keys (the Python package's
/// numpy arrays): each with the caller's name of it, which messages use.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// The sources (`apsp.sources`): ids in the input's numbering, or points.
    pub sources: Option<(String, Sources)>,
    /// The targets (`apsp.targets`).
    pub targets: Option<(String, Sources)>,
    /// One weight per target (`[apsp.reach] weights`).
    pub weights: Option<(String, Vec<f64>)>,
}

/// The plugin's `prepare` on the graph (and its places) that `load` gives instead of the
/// plan's `[input]`, with the lists `given` in memory: how a caller holding a graph in memory
/// runs `apsp` ([`crate::api`]).
pub fn prepare_with(
    ctx: &PrepareCtx<'_>,
    load: &mut Load<'_>,
    given: &Given,
) -> Result<Box<dyn Job>> {
    // Checks below name their key; this adds where it was set.
    prepare(ctx, load, given).map_err(|e| ctx.plan.origins.locate(e))
}

fn prepare(ctx: &PrepareCtx<'_>, load: &mut Load<'_>, given: &Given) -> Result<Box<dyn Job>> {
    let (mut options, keys): (ApspOptions, _) =
        crate::common::sources::split_options(ctx.plan, "apsp")?;
    if let Some((_, t)) = &given.targets {
        options.targets = Some(t.clone());
    }
    options.check()?;
    // An id file's mistakes are found before the graph is read.
    let (source_spec, source_origins) = match &given.sources {
        Some((_, s)) => (s.clone(), None),
        None => crate::common::ids::sources(ctx.plan, &keys)?,
    };
    let source_key = given
        .sources
        .as_ref()
        .map_or(keys.sources_key.as_str(), |(name, _)| name.as_str());
    let target_key = given
        .targets
        .as_ref()
        .map_or("apsp.targets", |(name, _)| name.as_str());
    // The files named for `check` and the run's identity, as the config names them.
    let input = crate::common::input::Input::of(ctx.plan)?;
    let (target_spec, target_origins) = match options.targets.clone() {
        Some(t) => {
            let (t, origins) = crate::common::ids::load_with_origins(t, target_key)?;
            (Some(t), origins)
        }
        None => (None, None),
    };
    // Points snapped onto edges are part of the graph: known before it is built.
    let mut points: Vec<(&str, &[[f64; 2]])> = Vec::new();
    if let Sources::Points(p) = &source_spec {
        points.push((source_key, p));
    }
    if let Some(Sources::Points(p)) = &target_spec {
        points.push((target_key, p));
    }
    let t_read = std::time::Instant::now();
    let (graph, places) = load(&points)?;
    let read_seconds = t_read.elapsed().as_secs_f64();
    check_run_memory(ctx, &graph, &options, &source_spec, source_key)?;
    let (sources, source_snaps) = match &source_spec {
        Sources::Points(p) => geo::resolve(p, places.as_ref(), source_key)?,
        s => (
            resolve_sources(
                source_key,
                s,
                source_origins.as_ref(),
                graph.n,
                graph.id_base,
            )?,
            Vec::new(),
        ),
    };
    let (targets, target_snaps) = match &target_spec {
        None | Some(Sources::All) => (None, Vec::new()),
        Some(Sources::Points(p)) => {
            let (ids, snaps) = geo::resolve(p, places.as_ref(), target_key)?;
            (Some(ids), snaps)
        }
        Some(t) => (
            Some(targets::resolve(
                t,
                target_origins.as_ref(),
                graph.n,
                graph.id_base,
            )?),
            Vec::new(),
        ),
    };
    // Paths from a restricted via vertex start at its departure copy.
    let sources = geo::departures(places.as_ref(), sources);
    let reach = reach::Reach::prepare(
        options.reach.clone(),
        targets.as_ref().map_or(graph.n, Vec::len),
        given
            .weights
            .as_ref()
            .map(|(name, w)| (name.as_str(), &w[..])),
    )?;
    if let Some(r) = &reach {
        r.check_places(places.as_ref(), &graph.name)?;
    }
    let width = width::choose(&graph, &sources, targets.as_deref());
    let wide = width.wide;
    let cols = targets.as_ref().map_or(graph.n, Vec::len);
    // A run that folds its trees (`[apsp.reach]`) writes no matrix unless one is asked for.
    let csv = keys.format == crate::common::TableFormat::Csv;
    let rows = if reach.is_some() && !keys.distances && !csv {
        None
    } else {
        od::rows(
            ctx.plan,
            &keys,
            targets.as_deref(),
            sources.len(),
            cols,
            width.rows,
        )?
    };
    let path_job = paths::prepare(&options, &graph, sources.len(), targets.as_deref())?;
    // The outputs' size is known now: a run that cannot fit is refused before the hierarchy.
    ctx.check_space(tuccompi::plugin::OutputSize {
        tasks: sources.len(),
        record_words: PathSummary::WORDS + reach.as_ref().map_or(0, reach::Reach::words),
        bulk_bytes: rows.as_ref().map_or(0, |r| r.bytes())
            + od::finish_bytes_of(sources.len(), targets.as_deref(), rows.as_ref(), csv)
            + paths::rows_bytes(path_job.as_ref())
            + paths::text_bytes(
                path_job.as_ref(),
                sources.len(),
                targets.as_deref(),
                graph.n,
                places.is_some(),
            ),
    })?;
    // The outputs read the trees at the targets only: the CPU sweeps may skip the rest.
    let restrictable = targets
        .as_deref()
        .filter(|_| path_job.is_none() && reach.as_ref().is_none_or(|r| r.isochrones.is_empty()));
    if options.sweep == phast::auto::SweepRequest::Restricted && restrictable.is_none() {
        return Err(tuccompi::Error::Config(
            "[apsp] sweep = \"restricted\": a sweep restricted to the targets needs [apsp] \
             targets and no output that reads whole trees (paths, predecessors, [apsp.reach] \
             isochrones): set sweep = \"auto\" or \"full\""
                .into(),
        ));
    }
    let units = &ctx.plan.units;
    let request = phast::auto::Request {
        cpu: (units.cpu_workers > 0).then_some(options.cpu_algorithm),
        gpu: (units.opencl != tuccompi::config::DeviceSel::None).then_some(options.gpu_request),
        sources: &sources,
        pending: sources.len().saturating_sub(ctx.done_tasks),
        cpu_workers: units.cpu_workers,
        gpus: ctx.devices,
        cache_path: options.hierarchy.as_deref(),
        store: !ctx.dry_run,
        targets: targets.is_some(),
        kept: ctx.kept,
        // An origin-destination run alone (no folds, no paths) may be answered by pair
        // queries.
        pair_targets: targets
            .as_ref()
            .filter(|_| reach.is_none() && path_job.is_none())
            .map(Vec::len),
        restrict: restrictable,
        sweep: options.sweep,
    };
    let mut choice = phast::auto::choose_for_job(&graph, wide, &request, ctx.share)?;
    // Another MPI rank decided: the selection is made here, as that rank made it.
    if let (true, None, Some(h), Some(t)) = (
        choice.report["sweep"] == "restricted",
        &choice.selection,
        &choice.hierarchy,
        restrictable,
    ) {
        choice.selection = Some(std::sync::Arc::new(phast::restrict::Selection::of(h, t)));
    }
    options.gpu_algorithm = choice.gpu;
    options.od_csv = csv;
    let mut report = choice.report;
    // The cold start's parts: the input read (parsed, from the graph cache or the session),
    // then the hierarchy (`preprocess_seconds`).
    report["read_seconds"] = serde_json::json!(read_seconds);
    if choice.cpu == phast::auto::CpuAlgorithm::Phast {
        let width = if wide { 8 } else { 4 };
        let batch = options.cpu_batch.and_then(|b| b.value());
        let swept = choice.selection.as_ref().map_or(graph.n, |s| s.len());
        report["cpu_batch"] = serde_json::json!(phast::worker::cpu_batch(batch, swept, width)?);
    }
    report["cpu_algorithm"] = serde_json::json!(choice.cpu);
    report["gpu_algorithm"] = serde_json::json!(choice.gpu);
    report["reason"] = serde_json::json!(choice.reason);
    let target_file = match &options.targets {
        Some(Sources::File(f)) => Some(f.clone()),
        _ => None,
    };
    let router = match (choice.cpu, &choice.hierarchy) {
        (phast::auto::CpuAlgorithm::Pairs, Some(h)) => Some(pairs::router_for(ctx, h)?),
        _ => None,
    };
    Ok(Box::new(ApspJob {
        graph,
        check: crate::common::check_lines(&keys, &input),
        inputs: crate::common::input_files(&keys, &input)
            .into_iter()
            .chain(target_file)
            .chain(reach.as_ref().and_then(|r| r.file.clone()))
            .collect(),
        sources,
        wide,
        width,
        options,
        rows,
        hierarchy: choice.hierarchy,
        cpu_algorithm: choice.cpu,
        choice: report,
        targets,
        origins: ctx.plan.origins.clone(),
        geo: GeoJob {
            geo: places,
            sources: source_snaps,
            targets: target_snaps,
        },
        reach,
        paths: path_job,
        router,
        selection: choice
            .selection
            .filter(|_| choice.cpu == phast::auto::CpuAlgorithm::Phast),
        stored: choice.stored,
    }))
}

/// Host bytes of a run's per-task state: the source id, the record (4 words) and its
/// `summary.csv` row.
const TASK_BYTES: u64 = 4 + 32 + 48;
/// Host bytes per vertex of one CPU worker's state (distances and heap entries, wide).
const WORKER_BYTES_PER_VERTEX: u64 = 24;
/// Host bytes per vertex and per arc of building a contraction hierarchy (the dynamic graph
/// being contracted, the witness searches, the hierarchy itself with its shortcuts).
const CH_BYTES: (u64, u64) = (96, 64);

/// Refuse a run whose per-task and per-worker state cannot fit this machine's memory, before
/// any of it is allocated (`apsp.sources = "all"` over a header's 200 million vertices).
/// `key`: where the sources were given.
fn check_run_memory(
    ctx: &PrepareCtx<'_>,
    graph: &Csr,
    options: &ApspOptions,
    sources: &Sources,
    key: &str,
) -> Result<()> {
    let n = graph.n as u64;
    let tasks = match sources {
        Sources::All => n,
        Sources::First(k) => (*k).min(n),
        Sources::List(ids) => ids.len() as u64,
        Sources::Points(p) => p.len() as u64,
        Sources::File(_) => 0,
    };
    let workers = ctx.plan.units.cpu_workers as u64;
    // A hierarchy is built unless only Dijkstra on CPU workers can run.
    let ch = options.cpu_algorithm != phast::auto::CpuAlgorithm::Dijkstra
        || ctx.plan.units.opencl != tuccompi::config::DeviceSel::None;
    let m = graph.m() as u64;
    let ch_bytes = if ch {
        n.saturating_mul(CH_BYTES.0)
            .saturating_add(m.saturating_mul(CH_BYTES.1))
    } else {
        0
    };
    let need = tasks
        .saturating_mul(TASK_BYTES)
        .saturating_add(
            workers
                .saturating_mul(n)
                .saturating_mul(WORKER_BYTES_PER_VERTEX),
        )
        .saturating_add(ch_bytes);
    crate::graph::memory::check(
        &format!("apsp on {} ({n} vertices)", graph.name),
        need,
        &format!(
            "{key} = {}: {tasks} tasks x {TASK_BYTES} bytes, {workers} CPU workers x \
             {n} vertices x {WORKER_BYTES_PER_VERTEX} bytes, and {} for a contraction hierarchy",
            sources,
            crate::graph::memory::gib(ch_bytes)
        ),
    )
}

impl Job for ApspJob {
    fn tasks(&self) -> usize {
        self.sources.len()
    }
    fn record_words(&self) -> usize {
        reach::record_words(self)
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.graph.name,
            "n": self.graph.n,
            "m": self.graph.m(),
            "id_base": self.graph.id_base,
            "distance_type": self.rows_type(),
            "compute_type": if self.wide { "u64" } else { "u32" },
            "width_reason": self.width.reason,
            "targets": self.targets.as_ref().map_or(self.graph.n, Vec::len),
            "cpu_algorithm": self.cpu_algorithm,
            "gpu_algorithm": self.options.gpu_algorithm,
            "algorithm": self.choice,
            "preprocess_seconds": self.choice["preprocess_seconds"].as_f64().unwrap_or(0.0),
            "places": self.geo.geo.as_ref().map(|g| {
                geo::report(g, &[("source", &self.geo.sources), ("target", &self.geo.targets)])
            }),
        })
    }
    fn details(&self) -> Details<'_> {
        let paths = self.paths.iter();
        let (targets, n) = (self.targets.as_deref(), self.graph.n);
        let geo = self.geo.geo.is_some();
        Details {
            bulk: self
                .rows
                .iter()
                .chain(paths.clone().flat_map(|p| &p.predecessors))
                .chain(paths.flat_map(|p| &p.trees))
                .collect(),
            finish_bytes: od::finish_bytes(self, self.options.od_csv)
                + paths::text_bytes(self.paths.as_ref(), self.sources.len(), targets, n, geo)
                + reach::finish_bytes(self),
            inputs: self.inputs.clone(),
            tolerance: reach::tolerance(self),
            check_lines: self.check.clone(),
            // The algorithms as resolved and the input's size: not where the hierarchy came
            // from (built or cached) nor how long it took.
            workload: Some(serde_json::json!({
                "n": self.graph.n,
                "m": self.graph.m(),
                "distance_type": self.rows_type(),
                "compute_type": if self.wide { "u64" } else { "u32" },
                "targets": self.targets.as_ref().map_or(self.graph.n, Vec::len),
                "cpu_algorithm": self.cpu_algorithm,
                "gpu_algorithm": self.options.gpu_algorithm,
                "cpu_batch": self.options.cpu_batch.and_then(|b| b.value()),
                "distances": self.rows.as_ref().is_some_and(|r| r.name() == "distances.npy"),
            })),
            ..Details::default()
        }
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        match (self.cpu_algorithm, &self.hierarchy) {
            (phast::auto::CpuAlgorithm::Phast, Some(h)) => {
                return phast::worker::cpu_worker(self, h)
            }
            (phast::auto::CpuAlgorithm::Pairs, Some(h)) => return pairs::cpu_worker(self, h),
            _ => {}
        }
        Ok(if self.wide {
            Box::new(CpuWorker::<u64> {
                job: self,
                dj: Dijkstra::new(self.graph.n),
                buf: Vec::new(),
                redo: width::Redo::default(),
                tracer: paths::Tracer::default(),
            })
        } else {
            Box::new(CpuWorker::<u32> {
                job: self,
                dj: Dijkstra::new(self.graph.n),
                buf: Vec::new(),
                redo: width::Redo::default(),
                tracer: paths::Tracer::default(),
            })
        })
    }
    fn kernels(&self) -> &'static [KernelSource] {
        gpu::kernel_files(self)
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        gpu::params(self, device, tuner)
    }
    fn gpu_setup(&self, device: &Device, params: &LaunchParams) -> Result<DeviceData> {
        Ok(DeviceData::new(gpu::setup(self, device, params)?))
    }
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        gpu::worker(self, gpu)
    }
    fn tune_candidates(
        &self,
        device: &tuccompi::device::DeviceInfo,
        predicted: &tuccompi::tuning::LaunchParams,
    ) -> Vec<tuccompi::tuning::Knob> {
        let mut knobs = tuccompi::tuning::default_candidates(device, predicted);
        // GPU PHAST sizes its grids in work-groups: the driver's choice (0) is not for it.
        if self.options.gpu_algorithm == GpuAlgorithm::Phast {
            for k in knobs
                .iter_mut()
                .filter(|k| k.name == tuccompi::tuning::LOCAL_SIZE)
            {
                k.values.retain(|&v| v > 0);
            }
        }
        knobs
    }
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        // The hierarchy written beside the run is in its file when the run ends.
        self.stored.wait();
        if let Some(rows) = &self.rows {
            rows.sync()?;
        }
        if let Some(g) = &self.geo.geo {
            geo::write_outputs(
                out,
                g,
                self.graph.id_base,
                &[("source", &self.geo.sources), ("target", &self.geo.targets)],
            )?;
        }
        od::write(self, out, self.options.od_csv)?;
        paths::write(self, out)?;
        let reached = reach::write(self, records, out)?;
        let records = &reach::summaries(self, records);
        let mut checksum = write_summary_records(
            out,
            &geo::source_labels(self.geo.geo.as_ref(), &self.sources),
            self.graph.id_base,
            self.targets.as_ref().map_or(self.graph.n, Vec::len),
            self.targets.as_deref(),
            records,
        )?;
        // Counted from the records (each carries its flag), so that resumed tasks and other
        // ranks' tasks count too.
        let redone = (0..self.sources.len())
            .filter(|&t| records.read::<PathSummary>(t).redone)
            .count();
        checksum["redone_u64"] = serde_json::json!(redone);
        if !reached.is_null() {
            checksum["reach"] = reached;
        }
        Ok(checksum)
    }
}

impl ApspJob {
    /// Nothing but each tree's summary over every vertex is wanted (no targets, distance rows,
    /// paths or reach): the sweeps may fold the trees as they go and skip rows nobody reads.
    pub fn summaries_only(&self) -> bool {
        self.targets.is_none()
            && self.rows.is_none()
            && self.paths.is_none()
            && self.reach.is_none()
    }

    /// `distances.npy`'s element type as the report names it.
    fn rows_type(&self) -> &'static str {
        match self.width.rows {
            tuccompi::sink::NpyType::U32 => "u32",
            _ => "u64",
        }
    }
}

struct CpuWorker<'a, D: Dist> {
    job: &'a ApspJob,
    dj: Dijkstra<D>,
    buf: Vec<D>,
    redo: width::Redo,
    tracer: paths::Tracer,
}

impl<D: Dist + RowWrite> Worker for CpuWorker<'_, D> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in range {
            let dist = self.dj.run(&self.job.graph, self.job.sources[t]);
            let s = targets::finish_row(self.job, t, dist, &mut self.buf)?;
            if width::overflowed(self.job, &s) {
                let s = self.redo.tree(self.job, t)?;
                reach::put_redone(self.job, out, t, &s);
            } else {
                self.tracer.tree(self.job, t, &self.dj.dist)?;
                let dist = &self.dj.dist;
                reach::put(self.job, out, t, &s, |v| dist[v as usize]);
            }
        }
        // The compact form's walked paths on disk before the chunk is journaled.
        paths::chunk_done(self.job)
    }
}
