//! Pieces shared by the graph plugins (`apsp`, the `fw-*` family, `dense-dijkstra`), so that no
//! plugin imports a sibling: the input graph a plan names, `run.sources` resolved against it,
//! distance widths, the per-source summary record and `summary.csv`, and distance rows.

pub mod geo;
pub mod ids;
pub mod input;
pub mod npz;
pub mod sources;

use crate::common::ids::IdOrigins;
use crate::common::input::{is_osm, name_path, Input, InputSpec};
pub use crate::common::sources::{RunKeys, Sources, TableFormat};
use crate::graph::{generate, read_graph_with, Csr, EdgeList, GenSpec, MatrixStats, NpyMatrix};
use rayon::prelude::*;
use std::path::Path;
use tuccompi::config::Plan;
use tuccompi::plugin::{PrepareCtx, Record, Records};
use tuccompi::sink::{Column, NpyRows, NpyType, Out, Table};
use tuccompi::{Error, Result};

/// `[input.generate]` (the table `t` of the plan's input) as the generator's spec: an unknown
/// key or a bad value is an error naming `input.generate.KEY` and where it was set.
pub fn generate_spec(plan: &Plan, t: &toml::Table) -> Result<GenSpec> {
    plan.table("input.generate", t)
}

/// `[input.osm]` of the plan's parsed `input` as the OpenStreetMap reader's options (its
/// defaults when absent).
pub fn osm_options(plan: &Plan, input: &Input) -> Result<crate::graph::osm::OsmOptions> {
    match &input.osm {
        Some(t) => plan.table("input.osm", t),
        None => Ok(Default::default()),
    }
}

/// The format of an input file: its extension, lower case, without a trailing `.gz`.
pub fn input_format(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    stem.rsplit_once('.').map_or("", |(_, e)| e).to_string()
}

/// Refuse the `[input]` keys that do not apply to a file of `format`: `columns` belongs to
/// `.csv`/`.tsv`, `no_arc` to `.npy`, `weight_scale` to both.
pub fn check_input_options(plan: &Plan, input: &Input, format: &str) -> Result<()> {
    let o = &input.options;
    let table = matches!(format, "csv" | "tsv");
    let npy = format == "npy";
    let wrong = [
        (
            o.columns.is_some() && !table,
            "input.columns",
            ".csv and .tsv edge lists",
        ),
        (o.no_arc.is_some() && !npy, "input.no_arc", ".npy matrices"),
        (
            o.weight_scale.is_some() && !table && !npy,
            "input.weight_scale",
            ".csv and .tsv edge lists and .npy matrices",
        ),
    ];
    for (bad, key, applies) in wrong {
        if bad {
            return Err(plan.origins.error(
                key,
                format!(
                    "{key} applies to {applies}, and input.path is a .{format} file; remove {key}"
                ),
            ));
        }
    }
    Ok(())
}

/// The files a plan's `[input]` names (`input.path`, `input.coordinates`) and the sources' id
/// file (`apsp.sources = { file = ... }`): what a built-in job declares it reads
/// ([`Details::inputs`](tuccompi::plugin::Details::inputs)), so that `--resume` refuses when
/// one changed.
pub fn input_files(keys: &RunKeys, input: &Input) -> Vec<std::path::PathBuf> {
    input
        .path()
        .map(Path::to_path_buf)
        .into_iter()
        .chain(input.coordinates.clone())
        .chain(ids::sources_file(keys))
        .collect()
}

/// What `tuccompi check` prints of a built-in job's plan: its input and its sources.
pub fn check_lines(keys: &RunKeys, input: &Input) -> Vec<(String, String)> {
    input
        .describe()
        .map(|d| ("input".to_string(), d))
        .into_iter()
        .chain([("sources".to_string(), keys.sources.to_string())])
        .collect()
}

/// Load the graph `input` names (file or generator); `plan` for the messages.
pub fn load_graph_of(plan: &Plan, input: &Input) -> Result<EdgeList> {
    if let Some(p) = input.path() {
        let format = input_format(p);
        if format == "npy" {
            return Err(plan.origins.error(
                "input.path",
                format!(
                    "input.path = \"{}\": a .npy matrix is the input of the dense plugins \
                     (fw-naive, fw-blocked, rkleene, dense-dijkstra); {} reads graph files \
                     (.gr, .mtx, .el, .wel, .txt, .csv, .tsv, .osm.pbf)",
                    p.display(),
                    plan.plugin
                ),
            ));
        }
        check_input_options(plan, input, &format)?;
    }
    match &input.spec {
        // A file that cannot be opened is named by the key that names it.
        Some(InputSpec::Path(p)) => if is_osm(p) {
            crate::graph::osm::read_osm(p, osm_options(plan, input)?).map(|(list, _, _)| list)
        } else {
            read_graph_with(p, &input.options)
        }
        .map_err(|e| name_path(plan, p, e)),
        Some(InputSpec::Generate(g)) => {
            generate(&generate_spec(plan, g)?).map_err(|e| plan.origins.locate(e))
        }
        None => Err(Error::Config(format!(
            "{}: this plugin reads a graph: add [input] with 'path = \"FILE\"' or an [input.generate] table",
            plan.config_path.display()
        ))),
    }
}

/// The input of a dense plugin: a graph file or generator (arcs), or an `n × n` `.npy` matrix
/// read in place.
#[derive(Debug)]
pub enum DenseInput {
    /// Arcs, from any graph input.
    Edges(EdgeList),
    /// A numpy matrix, scanned (every entry checked; its largest weight, sign, arcs).
    Matrix(NpyMatrix, MatrixStats),
}

impl DenseInput {
    /// Vertices.
    pub fn n(&self) -> usize {
        match self {
            DenseInput::Edges(l) => l.n,
            DenseInput::Matrix(m, _) => m.n,
        }
    }
    /// The input's name for messages and the report.
    pub fn name(&self) -> &str {
        match self {
            DenseInput::Edges(l) => &l.origin.name,
            DenseInput::Matrix(m, _) => &m.name,
        }
    }
    /// The first id of the input's numbering (0 for a matrix, as numpy indexes it).
    pub fn id_base(&self) -> u64 {
        match self {
            DenseInput::Edges(l) => l.id_base,
            DenseInput::Matrix(..) => 0,
        }
    }
    /// Largest |weight| of an arc.
    pub fn max_abs(&self) -> u64 {
        match self {
            DenseInput::Edges(l) => l.arcs.iter().map(|a| a.2.unsigned_abs()).max().unwrap_or(0),
            DenseInput::Matrix(_, s) => s.max_abs,
        }
    }
    /// Whether an arc has a negative weight.
    pub fn negative(&self) -> bool {
        match self {
            DenseInput::Edges(l) => l.arcs.iter().any(|a| a.2 < 0),
            DenseInput::Matrix(_, s) => s.negative,
        }
    }
}

/// Load a dense plugin's input: a `.npy` matrix mapped and scanned (every entry checked, its
/// largest weight, sign and arcs found; the plugin reads its values where it uses them), else
/// [`load_graph_of`].
pub fn load_dense(plan: &Plan, input: &Input) -> Result<DenseInput> {
    let Some(p) = input.path().filter(|p| input_format(p) == "npy") else {
        return load_graph_of(plan, input).map(DenseInput::Edges);
    };
    check_input_options(plan, input, "npy")?;
    let m = NpyMatrix::open(p, &input.options).map_err(|e| name_path(plan, p, e))?;
    crate::graph::memory::check(
        &m.name,
        (m.n as u64).saturating_mul(m.n as u64).saturating_mul(8),
        &format!("a dense {} x {} matrix", m.n, m.n),
    )?;
    let stats = m.scan()?;
    Ok(DenseInput::Matrix(m, stats))
}

/// The input graph as a CSR: under MPI, built by one rank of each machine and mapped read-only
/// by the others (one copy per machine, in memory and in the caches).
pub fn load_csr(ctx: &PrepareCtx<'_>, input: &Input) -> Result<Csr> {
    // A job of a session: the graph an earlier job read from this very file (its path, size,
    // time, inode and sampled content) with the same `[input]`, kept in the session.
    let identity = input
        .path()
        .filter(|_| ctx.kept.is_some() && ctx.share.is_none())
        .and_then(|p| crate::graph::cache::Identity::of(p).ok());
    if let Some(id) = identity {
        let key = format!("input graph {} {input:?}", id.file_name());
        let g = ctx.keep(&key, || {
            let g = read_csr(ctx.plan, input, !ctx.dry_run)?;
            let bytes = 4 * (g.offsets.len() + g.targets.len() + g.weights.len()) as u64;
            Ok((g, bytes))
        })?;
        return Ok((*g).clone());
    }
    let mut build = || read_csr(ctx.plan, input, !ctx.dry_run);
    match ctx.share {
        Some(s) => crate::graph::share_csr(s, &mut build),
        None => build(),
    }
}

/// The CSR of the plan's input. A file of [`crate::graph::cache::MIN_BYTES`] or more is read from
/// the graph cache when it holds this file's graph (`graph::cache`: keyed by the file's path,
/// size, time, inode and sampled content), else parsed and then cached (`store`; not for
/// `tuccompi check`). Reading a large file says so at the default verbosity, before and after.
fn read_csr(plan: &Plan, input: &Input, store: bool) -> Result<Csr> {
    use crate::graph::cache::{self, Identity};
    let Some(p) = input.path() else {
        return Csr::from_edges(&load_graph_of(plan, input)?);
    };
    let id = Identity::of(p).ok().filter(|id| id.len >= cache::MIN_BYTES);
    let Some(id) = id else {
        return Csr::from_edges(&load_graph_of(plan, input)?);
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
    let g = Csr::from_edges(&load_graph_of(plan, input)?)?;
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

/// Resolve the sources (given as `key`: `apsp.sources`, `run.tasks`) against a graph of `n`
/// vertices numbered from `base`: internal ids. `origins`: where the ids came from when read
/// from a file ([`ids::sources`]), so that an id outside the graph is named with its file and
/// line.
pub fn resolve_sources(
    key: &str,
    sources: &Sources,
    origins: Option<&IdOrigins>,
    n: usize,
    base: u64,
) -> Result<Vec<u32>> {
    match sources {
        Sources::All => Ok((0..n as u32).collect()),
        Sources::First(k) => {
            if *k as usize > n || *k == 0 {
                return Err(Error::Config(format!(
                    "{key} = {k}, but the graph has {n} vertices; use 1..={n} or \"all\""
                )));
            }
            Ok((0..*k as u32).collect())
        }
        Sources::List(ids) => {
            if ids.is_empty() {
                return Err(Error::Config(format!(
                    "{key} = []: list at least one vertex id"
                )));
            }
            ids::resolve(ids, origins, key, n, base)
        }
        Sources::Points(_) => Err(Error::Config(format!(
            "{key}: points ([lon, lat]) are snapped by the apsp plugin only; list vertex ids"
        ))),
        Sources::File(p) => Err(Error::Config(format!(
            "{key}: {{ file = {:?} }} was not read (ids::sources reads it)",
            p.display().to_string()
        ))),
    }
}

/// Whether shortest-path distances may need 64 bits: false only when even a relaxation
/// candidate (a distance plus one arc, at most `n · max_weight`) provably stays below
/// `u32::MAX`, which marks unreachable. The apsp plugin still computes in u32 when this is true
/// (see [`Dist::CEIL`]); this decides the width of its distance rows.
pub fn needs_wide(n: usize, max_weight: u64) -> bool {
    n as u128 * max_weight as u128 >= u32::MAX as u128
}

/// A distance type: u32 or u64. `INF` marks unreachable.
///
/// Sums saturate at [`Dist::CEIL`], one below `INF`, so that a distance that does not fit is
/// never confused with unreachable: with saturating additions and minima, every algorithm here
/// computes `min(true distance, CEIL)` exactly, so a u32 tree has overflowed exactly when one
/// of its distances equals `CEIL` (then it is redone in u64). A u64 distance never reaches its
/// `CEIL` (fewer than 2^32 vertices, weights below 2^32).
pub trait Dist: Copy + Ord + Send + Sync + std::fmt::Debug + 'static {
    /// Unreachable.
    const INF: Self;
    /// The largest value a sum takes: a u32 distance equal to it has overflowed.
    const CEIL: Self;
    /// Zero.
    const ZERO: Self;
    /// `min(self + w, CEIL)` for a finite `self` (`self` is never `INF`).
    fn plus(self, w: u32) -> Self;
    /// As u64 (INF included).
    fn to_u64(self) -> u64;
}

/// The u32 [`Dist::CEIL`] as u64: a u32 summary's `max` equal to it means the tree overflowed.
pub const NARROW_CEIL: u64 = u32::MAX as u64 - 1;

impl Dist for u32 {
    const INF: Self = u32::MAX;
    const CEIL: Self = u32::MAX - 1;
    const ZERO: Self = 0;
    #[inline(always)]
    fn plus(self, w: u32) -> Self {
        self.saturating_add(w).min(Self::CEIL)
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl Dist for u64 {
    const INF: Self = u64::MAX;
    const CEIL: Self = u64::MAX - 1;
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
    /// The tree overflowed u32 and was redone in u64 (the apsp plugin; carried in the top bit
    /// of the record's `reached` word, so that it survives the journal and MPI).
    pub redone: bool,
}

/// The bit of a record's `reached` word that carries [`PathSummary::redone`] (a count of
/// vertices never reaches it).
pub const REDONE_BIT: u64 = 1 << 63;

impl Record for PathSummary {
    const WORDS: usize = 4;
    fn to_words(&self, w: &mut [u64]) {
        w[0] = self.reached | if self.redone { REDONE_BIT } else { 0 };
        w[1] = self.sum as u64;
        w[2] = (self.sum >> 64) as u64;
        w[3] = self.max;
    }
    fn from_words(w: &[u64]) -> Self {
        PathSummary {
            reached: w[0] & !REDONE_BIT,
            sum: (w[1] as u128 | (w[2] as u128) << 64) as i128,
            max: w[3],
            redone: w[0] & REDONE_BIT != 0,
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
        self.redone |= other.redone;
    }
}

/// The mean distance of a summary row: the sum over the reached entries other than the
/// source's own (`own` of them: 1 over every vertex, the source's occurrences in a target
/// list); `None` (an empty field) when no other entry was reached.
pub fn mean_of(r: &PathSummary, own: u64) -> Option<f64> {
    let others = r.reached.saturating_sub(own);
    (others > 0).then(|| r.sum as f64 / others as f64)
}

/// Write `summary.csv` (`source,reached,unreachable,sum,max,mean`, ids in the input's
/// numbering) from one summary per source, in task order, and return the checksum for the
/// report. `targets`: the columns the summaries cover (`None`: every vertex, `n` of them),
/// internal ids, repeats allowed; the mean leaves out the source's own entries among them.
pub fn write_summary(
    out: &Out,
    sources: &[u32],
    id_base: u64,
    n: usize,
    targets: Option<&[u32]>,
    summaries: impl IntoIterator<Item = PathSummary>,
) -> Result<serde_json::Value> {
    let n = n as u64;
    // How often each vertex appears among the targets (the source's own zero distances).
    let own: Option<std::collections::HashMap<u32, u64>> = targets.map(|ts| {
        let mut m = std::collections::HashMap::with_capacity(ts.len());
        for &t in ts {
            *m.entry(t).or_insert(0u64) += 1;
        }
        m
    });
    let summaries: Vec<PathSummary> = summaries.into_iter().take(sources.len()).collect();
    let sources = &sources[..summaries.len()];
    let (mut total, mut unreachable, mut largest) = (0i128, 0u64, 0u64);
    for r in &summaries {
        total += r.sum;
        unreachable += n - r.reached;
        largest = largest.max(r.max);
    }
    // Typed columns: CSV in a directory (formatted in pieces on every core: 411,992 rows took
    // 0.19 s on one thread, most of a cached osm-moscow run's `finish` on an H100), the
    // columns themselves for an in-memory run.
    let mean = sources
        .iter()
        .zip(&summaries)
        .map(|(&s, r)| {
            mean_of(
                r,
                own.as_ref().map_or(1, |m| m.get(&s).copied().unwrap_or(0)),
            )
        })
        .collect();
    let table = Table::new()
        .with(
            "source",
            Column::U64(sources.iter().map(|&s| s as u64 + id_base).collect()),
        )
        .with(
            "reached",
            Column::U64(summaries.iter().map(|r| r.reached).collect()),
        )
        .with(
            "unreachable",
            Column::U64(summaries.iter().map(|r| n - r.reached).collect()),
        )
        .with(
            "sum",
            Column::I128(summaries.iter().map(|r| r.sum).collect()),
        )
        .with(
            "max",
            Column::U64(summaries.iter().map(|r| r.max).collect()),
        )
        .with("mean", Column::MaybeF64(mean));
    out.write_table("summary.csv", table)?;
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
    out: &Out,
    sources: &[u32],
    id_base: u64,
    n: usize,
    targets: Option<&[u32]>,
    records: &Records,
) -> Result<serde_json::Value> {
    let summaries = (0..sources.len()).map(|t| records.read::<PathSummary>(t));
    write_summary(out, sources, id_base, n, targets, summaries)
}

/// Refuse `format = "csv"` in a plugin that writes no table besides `summary.csv` (only
/// `apsp` with targets writes `od.csv`).
pub fn refuse_csv(plan: &Plan, keys: &RunKeys) -> Result<()> {
    if keys.format == TableFormat::Csv {
        let key = format!("{}.format", plan.plugin);
        return Err(plan.origins.error(
            &key,
            format!(
                "{key} = \"csv\" writes od.csv for apsp with [apsp] targets; {} writes \
                 summary.csv (always text) and distances.npy: remove {key}",
                plan.plugin
            ),
        ));
    }
    Ok(())
}

/// `distances.npy` for `sources × n` of `ty` when `distances` is set: declared here,
/// opened by the runtime in the run's staging folder when the run starts (see
/// [`Details::bulk`](tuccompi::plugin::Details::bulk)).
pub fn distance_rows(
    ctx: &PrepareCtx<'_>,
    keys: &RunKeys,
    sources: usize,
    n: usize,
    ty: NpyType,
) -> Result<Option<NpyRows>> {
    refuse_csv(ctx.plan, keys)?;
    if !keys.distances {
        return Ok(None);
    }
    NpyRows::new("distances.npy", sources, n, ty).map(Some)
}

/// Writing a distance row of this element type into `distances.npy`.
pub trait RowWrite: Sized {
    /// Write `row` into the matrix at row `t`.
    fn write_row(rows: &NpyRows, t: usize, row: &[Self]) -> Result<()>;
}
/// A u32 row into a u64 file (the apsp plugin computes in u32 when its rows may need u64):
/// widened, unreachable (`u32::MAX`) becoming `u64::MAX`.
impl RowWrite for u32 {
    fn write_row(rows: &NpyRows, t: usize, row: &[u32]) -> Result<()> {
        if rows.dtype() == NpyType::U64 {
            let wide: Vec<u64> = row
                .iter()
                .map(|&d| if d == u32::MAX { u64::MAX } else { d as u64 })
                .collect();
            return rows.write_u64(t, &wide);
        }
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

/// The texts `text(state, t)` of tasks `0..tasks` written into `w` in task order, made in
/// parallel a block of a few tasks per thread at a time (memory: one block's text); `state`
/// is made once per thread by `init`. A failed write is an error naming `name`.
pub fn write_in_order<S>(
    w: &mut dyn std::io::Write,
    name: &str,
    tasks: usize,
    init: impl Fn() -> S + Sync + Send,
    text: impl Fn(&mut S, usize) -> Result<String> + Sync + Send,
) -> Result<()> {
    let block = 4 * rayon::current_num_threads();
    let mut start = 0;
    while start < tasks {
        let end = (start + block).min(tasks);
        let texts: Vec<String> = (start..end)
            .into_par_iter()
            .map_init(&init, &text)
            .collect::<Result<_>>()?;
        for t in texts {
            w.write_all(t.as_bytes())
                .map_err(|e| Error::Output(format!("{name}: {e}")))?;
        }
        start = end;
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_bad_generator_table_names_the_table_and_where_it_was_set() {
        let spec = |text: &str, sets: &[&str]| -> String {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let plan = Plan::from_toml(text, Path::new("c.toml"), &sets).unwrap();
            let Some(InputSpec::Generate(g)) = Input::of(&plan).unwrap().spec else {
                panic!("a generated input");
            };
            generate_spec(&plan, &g).unwrap_err().to_string()
        };
        // A generator set over a path config names the table that lacks a field.
        let path = "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr\"\n";
        let e = spec(path, &["input.generate.model=\"road\""]);
        assert!(
            e.starts_with(
                "--set input.generate.model=\"road\": input.generate: missing field `vertices`"
            ),
            "{e}"
        );
        let e = spec(
            "[run]\nplugin = \"apsp\"\n[input]\ngenerate = { vertices = 5 }\n",
            &[],
        );
        assert!(
            e.starts_with("c.toml:4: input.generate: missing field `model`"),
            "{e}"
        );
        let e = spec(
            "[run]\nplugin = \"apsp\"\n[input.generate]\nmodel = \"road\"\nvertices = 5\nseeds = 2\n",
            &[],
        );
        assert!(
            e.starts_with("c.toml:6: input.generate.seeds: unknown field `seeds`"),
            "{e}"
        );
    }

    #[test]
    fn summary_record_round_trips_a_128_bit_sum() {
        let s = PathSummary {
            reached: 7,
            sum: (u64::MAX as i128) * 5 + 3,
            max: u64::MAX - 1,
            redone: true,
        };
        let mut w = [0u64; 4];
        s.to_words(&mut w);
        assert_eq!(w[2], 4, "the high word carries the sum's upper bits");
        assert_eq!(
            w[0],
            7 | REDONE_BIT,
            "the redone flag rides on the count's top bit"
        );
        assert_eq!(PathSummary::from_words(&w), s);
        let neg = PathSummary {
            reached: 1,
            sum: -42,
            max: 0,
            redone: false,
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
