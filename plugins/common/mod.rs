//! Pieces shared by the graph plugins (`apsp`, the `fw-*` family, `dense-dijkstra`), so that no
//! plugin imports a sibling: the input graph a plan names, `run.sources` resolved against it,
//! distance widths, the per-source summary record and `summary.csv`, and distance rows.

use crate::config::{InputSpec, Plan, Sources};
use crate::graph::{generate, read_graph, Csr, EdgeList};
use crate::plugin::{PrepareCtx, Record, Records};
use crate::sink::{write_file, NpyRows, NpyType};
use crate::{Error, Result};
use std::fmt::Write as _;
use std::path::Path;

/// Load the input graph a plan names (file or generator).
pub fn load_graph(plan: &Plan) -> Result<EdgeList> {
    match &plan.input {
        // A file that cannot be opened is named by the key that names it.
        Some(InputSpec::Path(p)) => read_graph(p).map_err(|e| match e {
            Error::Io { path, source } if path == *p => plan.origins.error(
                "input.path",
                format!(
                    "input.path = \"{}\": {source}; check the path (relative paths start at \
                     the directory tuccompi runs in)",
                    p.display()
                ),
            ),
            e => e,
        }),
        Some(InputSpec::Generate(g)) => generate(g).map_err(|e| plan.origins.locate(e)),
        None => Err(Error::Config(format!(
            "{}: this plugin reads a graph: add [input] with 'path = \"FILE\"' or an [input.generate] table",
            plan.config_path.display()
        ))),
    }
}

/// The input graph as a CSR: under MPI, built by one rank of each machine and mapped read-only
/// by the others (one copy per machine, in memory and in the caches).
pub fn load_csr(ctx: &PrepareCtx<'_>) -> Result<Csr> {
    let mut build = || read_csr(ctx.plan, !ctx.dry_run);
    match ctx.graphs {
        Some(s) => s.share(&mut build),
        None => build(),
    }
}

/// The CSR of the plan's input. A file of [`crate::graph::cache::MIN_BYTES`] or more is read from
/// the graph cache when it holds this file's graph (`graph::cache`: keyed by the file's path,
/// size, time, inode and sampled content), else parsed and then cached (`store`; not for
/// `tuccompi check`). Reading a large file says so at the default verbosity, before and after.
fn read_csr(plan: &Plan, store: bool) -> Result<Csr> {
    use crate::graph::cache::{self, Identity};
    let Some(InputSpec::Path(p)) = &plan.input else {
        return Csr::from_edges(&load_graph(plan)?);
    };
    let id = Identity::of(p).ok().filter(|id| id.len >= cache::MIN_BYTES);
    let Some(id) = id else {
        return Csr::from_edges(&load_graph(plan)?);
    };
    let name = p.display().to_string();
    let t = std::time::Instant::now();
    let file = cache::default_dir().map(|d| d.join(id.file_name()));
    if let Some(f) = &file {
        match cache::load(f, &id, &name) {
            Ok(Some(g)) => {
                tracing::info!(
                    target: "stage",
                    "{name}: {} vertices, {} arcs read from the graph cache {} in {:.1} s",
                    g.n,
                    g.m(),
                    f.display(),
                    t.elapsed().as_secs_f64()
                );
                return Ok(g);
            }
            Ok(None) => {}
            Err(why) => tracing::warn!("{}: {why}; reading {name} again", f.display()),
        }
    }
    tracing::info!(
        target: "stage",
        "{name}: reading {:.1} MB of input",
        id.len as f64 / 1e6
    );
    let g = Csr::from_edges(&load_graph(plan)?)?;
    let kept = match (&file, store) {
        // Kept only when the file did not change while it was read.
        (Some(f), true) if Identity::of(p).is_ok_and(|now| now == id) => {
            match cache::store(f, &id, &g) {
                Ok(()) => "; cached for later runs",
                Err(e) => {
                    tracing::warn!("could not keep the graph of {name} for later runs: {e}");
                    ""
                }
            }
        }
        _ => "",
    };
    tracing::info!(
        target: "stage",
        "{name}: {} vertices, {} arcs read in {:.1} s{kept}",
        g.n,
        g.m(),
        t.elapsed().as_secs_f64()
    );
    Ok(g)
}

/// Resolve `run.sources` against a graph of `n` vertices numbered from `base`: internal ids.
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

/// Whether shortest-path distances need 64 bits: u32 only when even a relaxation candidate (a
/// distance plus one arc, at most `n · max_weight`) stays below `u32::MAX`, which marks
/// unreachable.
pub fn needs_wide(n: usize, max_weight: u64) -> bool {
    n as u128 * max_weight as u128 >= u32::MAX as u128
}

/// A distance type: u32 when every path fits ([`needs_wide`] is false), else u64. `INF` marks
/// unreachable.
pub trait Dist: Copy + Ord + Send + Sync + std::fmt::Debug + 'static {
    /// Unreachable.
    const INF: Self;
    /// Zero.
    const ZERO: Self;
    /// `self + w`; never overflows for a graph whose width was chosen by [`needs_wide`].
    fn plus(self, w: u32) -> Self;
    /// As u64 (INF included).
    fn to_u64(self) -> u64;
}

impl Dist for u32 {
    const INF: Self = u32::MAX;
    const ZERO: Self = 0;
    #[inline(always)]
    fn plus(self, w: u32) -> Self {
        self + w
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl Dist for u64 {
    const INF: Self = u64::MAX;
    const ZERO: Self = 0;
    #[inline(always)]
    fn plus(self, w: u32) -> Self {
        self + w as u64
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
}

/// One source's summary, the record of a shortest-path task: vertices reached (the source
/// included), the sum of their distances (128-bit, signed for the Floyd-Warshall plugins'
/// negative weights) and the largest. Laid out as `[reached, sum_lo, sum_hi, max]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathSummary {
    /// Vertices reached, the source included.
    pub reached: u64,
    /// Sum of the finite distances.
    pub sum: i128,
    /// Largest finite distance (0 when only the source is reached).
    pub max: u64,
}

impl Record for PathSummary {
    const WORDS: usize = 4;
    fn to_words(&self, w: &mut [u64]) {
        w[0] = self.reached;
        w[1] = self.sum as u64;
        w[2] = (self.sum >> 64) as u64;
        w[3] = self.max;
    }
    fn from_words(w: &[u64]) -> Self {
        PathSummary {
            reached: w[0],
            sum: (w[1] as u128 | (w[2] as u128) << 64) as i128,
            max: w[3],
        }
    }
}

impl PathSummary {
    /// The summary of a distance row (`D::INF` = unreachable).
    pub fn of<D: Dist>(dist: &[D]) -> Self {
        let mut s = PathSummary::default();
        for &d in dist {
            if d != D::INF {
                let d = d.to_u64();
                s.reached += 1;
                s.sum += d as i128;
                s.max = s.max.max(d);
            }
        }
        s
    }

    /// Add the part of a row that `other` summarizes (partial sums of one row).
    pub fn merge(&mut self, other: PathSummary) {
        self.reached += other.reached;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }
}

/// Write `summary.csv` (`source,reached,unreachable,sum,max`, ids in the input's numbering) from
/// one summary per source, in task order, and return the checksum for the report.
pub fn write_summary(
    dir: &Path,
    sources: &[u32],
    id_base: u64,
    n: usize,
    summaries: impl IntoIterator<Item = PathSummary>,
) -> Result<serde_json::Value> {
    let n = n as u64;
    let mut csv = String::with_capacity(sources.len() * 40 + 64);
    csv.push_str("source,reached,unreachable,sum,max\n");
    let (mut total, mut unreachable, mut largest) = (0i128, 0u64, 0u64);
    for (&s, r) in sources.iter().zip(summaries) {
        total += r.sum;
        unreachable += n - r.reached;
        largest = largest.max(r.max);
        let _ = writeln!(
            csv,
            "{},{},{},{},{}",
            s as u64 + id_base,
            r.reached,
            n - r.reached,
            r.sum,
            r.max
        );
    }
    write_file(dir, "summary.csv", &csv)?;
    let sum = if let Ok(s) = u64::try_from(total) {
        serde_json::json!(s)
    } else if let Ok(s) = i64::try_from(total) {
        serde_json::json!(s)
    } else {
        serde_json::json!(total.to_string())
    };
    Ok(serde_json::json!({
        "sum": sum, "unreachable": unreachable, "max": largest, "sources": sources.len(),
    }))
}

/// [`write_summary`] over the records of every task (each a [`PathSummary`]).
pub fn write_summary_records(
    dir: &Path,
    sources: &[u32],
    id_base: u64,
    n: usize,
    records: &Records,
) -> Result<serde_json::Value> {
    let summaries = (0..sources.len()).map(|t| records.read::<PathSummary>(t));
    write_summary(dir, sources, id_base, n, summaries)
}

/// `distances.npy` for `sources × n` of `ty` when `output.distances` is set: declared here,
/// opened by the runtime in the run's staging folder when the run starts (see
/// `Job::bulk_outputs`).
pub fn distance_rows(
    ctx: &PrepareCtx<'_>,
    sources: usize,
    n: usize,
    ty: NpyType,
) -> Result<Option<NpyRows>> {
    if !ctx.plan.output.distances {
        return Ok(None);
    }
    NpyRows::new("distances.npy", sources, n, ty).map(Some)
}

/// Writing a distance row of this element type into `distances.npy`.
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
impl RowWrite for i64 {
    fn write_row(rows: &NpyRows, t: usize, row: &[i64]) -> Result<()> {
        rows.write_i64(t, row)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn summary_record_round_trips_a_128_bit_sum() {
        let s = PathSummary {
            reached: 7,
            sum: (u64::MAX as i128) * 5 + 3,
            max: u64::MAX - 1,
        };
        let mut w = [0u64; 4];
        s.to_words(&mut w);
        assert_eq!(w[2], 4, "the high word carries the sum's upper bits");
        assert_eq!(PathSummary::from_words(&w), s);
        let neg = PathSummary {
            reached: 1,
            sum: -42,
            max: 0,
        };
        neg.to_words(&mut w);
        assert_eq!(PathSummary::from_words(&w), neg);
    }

    #[test]
    fn summaries_of_rows_merge() {
        let row = [0u32, 5, u32::MAX, 9, 1];
        let whole = PathSummary::of(&row);
        assert_eq!((whole.reached, whole.sum, whole.max), (4, 15, 9));
        let mut parts = PathSummary::of(&row[..2]);
        parts.merge(PathSummary::of(&row[2..]));
        assert_eq!(parts, whole);
    }
}
