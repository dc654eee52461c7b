//! `apsp`: all-pairs shortest paths as n single-source shortest paths.
//!
//! Every source vertex is one task. The CPU half is Dijkstra with a radix heap
//! ([`dijkstra`]); the GPU half ([`gpu`]) runs a batch of sources at once with the
//! Crauser, Martin or two-phase frontier algorithms. Both produce, per source, a record
//! `[reached, sum_lo, sum_hi, max]` and, with `output.distances = true`, the distance row.
//!
//! Distances are u32 when every shortest path provably fits (`(n-1)·max_weight < 2^32-1`),
//! else u64; unreachable is the type's maximum. Per-source sums are 128-bit.

pub mod dijkstra;
pub mod gpu;

use crate::config::{AutoOr, Sources};
use crate::graph::{generate, read_graph, Csr};
use crate::plugin::{CpuHalf, GpuHalf, Job, Plugin, PrepareCtx, Records, RecordsOut, Worker};
use crate::sink::{write_file, NpyRows, NpyType};
use crate::{Error, Result};
use dijkstra::{Dijkstra, Dist};
use serde::Deserialize;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

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
}

impl GpuAlgorithm {
    /// The kernels of kernels/sssp.cl this algorithm launches.
    pub fn kernels(self) -> &'static [&'static str] {
        match self {
            GpuAlgorithm::Crauser | GpuAlgorithm::Martin => &[
                "sssp_init",
                "sssp_relax",
                "sssp_minimum",
                "sssp_update",
                "sssp_summary",
            ],
            GpuAlgorithm::TwoPhase => &["sssp_init", "tp_relax", "tp_update", "sssp_summary"],
            GpuAlgorithm::Worklist => &["wl_init", "wl_round", "sssp_summary"],
        }
    }
}

/// `[apsp]` options.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ApspOptions {
    /// GPU algorithm (default worklist).
    #[serde(default)]
    pub gpu_algorithm: GpuAlgorithm,
    /// Sources per GPU batch ("auto" = from device memory and graph size).
    pub batch: Option<AutoOr>,
    /// Work-group size for the SSSP kernels ("auto" = the tuner's choice).
    pub local_size: Option<AutoOr>,
    /// Bucket width of the work-list algorithm's threshold ("auto" = 64 x the mean arc weight;
    /// 0 = no threshold, plain Bellman-Ford rounds).
    pub delta: Option<AutoOr>,
}

/// Words per task record.
pub const RECORD_WORDS: usize = 4;

/// Fill a task record from a distance row; `inf` marks unreachable.
pub fn summarize<D: Dist>(dist: &[D], rec: &mut [u64]) {
    let (mut reached, mut sum, mut max) = (0u64, 0u128, 0u64);
    for &d in dist {
        if d != D::INF {
            let d = d.to_u64();
            reached += 1;
            sum += d as u128;
            max = max.max(d);
        }
    }
    rec[0] = reached;
    rec[1] = sum as u64;
    rec[2] = (sum >> 64) as u64;
    rec[3] = max;
}

/// Write `summary.csv` from per-source records `[reached, sum_lo, sum_hi, max]` and return the
/// checksum for the report. Shared by the plugins that run one SSSP per source.
pub fn write_summary(
    dir: &Path,
    sources: &[u32],
    id_base: u64,
    n: usize,
    records: &Records,
) -> Result<serde_json::Value> {
    let n = n as u64;
    let mut csv = String::with_capacity(sources.len() * 40 + 64);
    csv.push_str("source,reached,unreachable,sum,max\n");
    let (mut total, mut unreachable, mut largest) = (0u128, 0u64, 0u64);
    for (t, &s) in sources.iter().enumerate() {
        let r = records.get(t);
        let sum = r[1] as u128 | (r[2] as u128) << 64;
        total += sum;
        unreachable += n - r[0];
        largest = largest.max(r[3]);
        let _ = writeln!(
            csv,
            "{},{},{},{},{}",
            s as u64 + id_base,
            r[0],
            n - r[0],
            sum,
            r[3]
        );
    }
    write_file(dir, "summary.csv", &csv)?;
    let sum = if total <= u64::MAX as u128 {
        serde_json::json!(total as u64)
    } else {
        serde_json::json!(total.to_string())
    };
    Ok(
        serde_json::json!({ "sum": sum, "unreachable": unreachable, "max": largest, "sources": sources.len() }),
    )
}

/// The shared state of an APSP run.
pub struct ApspJob {
    /// The graph.
    pub graph: Csr,
    /// Source vertex (internal id) of each task.
    pub sources: Vec<u32>,
    /// Whether distances need 64 bits.
    pub wide: bool,
    /// Options.
    pub options: ApspOptions,
    /// The distance matrix, when requested.
    pub rows: Option<NpyRows>,
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

/// Load the input graph a plan names (file or generator).
pub fn load_graph(plan: &crate::config::Plan) -> Result<crate::graph::EdgeList> {
    match &plan.input {
        Some(crate::config::InputSpec::Path(p)) => read_graph(p),
        Some(crate::config::InputSpec::Generate(g)) => generate(g),
        None => Err(Error::Config(format!(
            "{}: this plugin reads a graph: add [input] with 'path = \"FILE\"' or an [input.generate] table",
            plan.config_path.display()
        ))),
    }
}

/// Resolve `run.sources` against a graph of `n` vertices numbered from `base`.
pub fn resolve_sources(sources: &Sources, n: usize, base: u64) -> Result<Vec<u32>> {
    match sources {
        Sources::All => Ok((0..n as u32).collect()),
        Sources::First(k) => {
            if *k as usize > n || *k == 0 {
                return Err(Error::Config(format!(
                    "run.sources = {k}, but the graph has {n} vertices; use 1..={n} or \"all\""
                )));
            }
            Ok((0..*k as u32).collect())
        }
        Sources::List(ids) => {
            if ids.is_empty() {
                return Err(Error::Config(
                    "run.sources = []: list at least one vertex id".into(),
                ));
            }
            ids.iter()
                .map(|&id| {
                    if id < base || id - base >= n as u64 {
                        Err(Error::Config(format!(
                            "run.sources: vertex id {id} is out of range; this graph's ids are {base}..={}",
                            base + n as u64 - 1
                        )))
                    } else {
                        Ok((id - base) as u32)
                    }
                })
                .collect()
        }
    }
}

impl Plugin for Apsp {
    fn name(&self) -> &'static str {
        "apsp"
    }
    fn description(&self) -> &'static str {
        "all-pairs shortest paths as one SSSP per source: Dijkstra on CPU cores; batched \
         work-list (default), Crauser, Martin or two-phase SSSP on OpenCL devices"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let options: ApspOptions = toml::Value::Table(ctx.plan.plugin_options.clone())
            .try_into()
            .map_err(|e: toml::de::Error| Error::Config(format!("[apsp]: {}", e.message())))?;
        let list = load_graph(ctx.plan)?;
        let graph = Csr::from_edges(&list)?;
        drop(list);
        let sources = resolve_sources(&ctx.plan.sources, graph.n, graph.id_base)?;
        // u32 when even a relaxation candidate (a distance plus one arc, <= n * max_weight)
        // stays below u32::MAX, which marks unreachable; else u64.
        let wide = graph.n as u128 * graph.max_weight() as u128 >= u32::MAX as u128;
        let rows = if ctx.plan.output.distances {
            let ty = if wide { NpyType::U64 } else { NpyType::U32 };
            Some(NpyRows::distances(
                ctx.out_dir,
                ctx.is_root,
                sources.len(),
                graph.n,
                ty,
            )?)
        } else {
            None
        };
        Ok(Box::new(ApspJob {
            graph,
            sources,
            wide,
            options,
            rows,
        }))
    }
}

impl Job for ApspJob {
    fn tasks(&self) -> usize {
        self.sources.len()
    }
    fn record_words(&self) -> usize {
        RECORD_WORDS
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.graph.name,
            "n": self.graph.n,
            "m": self.graph.m(),
            "id_base": self.graph.id_base,
            "distance_type": if self.wide { "u64" } else { "u32" },
            "gpu_algorithm": self.options.gpu_algorithm,
        })
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
        write_summary(
            dir,
            &self.sources,
            self.graph.id_base,
            self.graph.n,
            records,
        )
    }
}

impl CpuHalf for ApspJob {
    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(if self.wide {
            Box::new(CpuWorker::<u64> {
                job: self,
                dj: Dijkstra::new(self.graph.n),
            })
        } else {
            Box::new(CpuWorker::<u32> {
                job: self,
                dj: Dijkstra::new(self.graph.n),
            })
        })
    }
}

struct CpuWorker<'a, D: Dist> {
    job: &'a ApspJob,
    dj: Dijkstra<D>,
}

impl<D: Dist + RowWrite> Worker for CpuWorker<'_, D> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in range {
            let dist = self.dj.run(&self.job.graph, self.job.sources[t]);
            summarize(dist, out.record(t));
            if let Some(rows) = &self.job.rows {
                D::write_row(rows, t, dist)?;
            }
        }
        Ok(())
    }
}

/// Writing a distance row of this width.
pub trait RowWrite: Sized {
    /// Write `row` into the matrix at row `t`.
    fn write_row(rows: &NpyRows, t: usize, row: &[Self]) -> Result<()>;
}
impl RowWrite for u32 {
    fn write_row(rows: &NpyRows, t: usize, row: &[u32]) -> Result<()> {
        rows.write_u32(t, row)
    }
}
impl RowWrite for u64 {
    fn write_row(rows: &NpyRows, t: usize, row: &[u64]) -> Result<()> {
        rows.write_u64(t, row)
    }
}
