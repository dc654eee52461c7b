//! Dense APSP: `fw-naive`, `fw-blocked` (three-phase Kleene, Pandey & Sharma) and `rkleene`
//! (recursive R-Kleene) Floyd-Warshall, each with a CPU half (rayon) and an OpenCL half.
//!
//! The whole matrix is one task, run by one unit (a GPU when one is selected). Values are i32
//! when every path provably fits (`(n-1)·max|w| < 2^28`, so with INF = 2^30-1 no sum of two
//! values wraps), else i64 (CPU only; INF = 2^61, paths < 2^59). Values at or above INF/2 are
//! unreachable: without negative cycles a value derived from INF stays above it. Negative
//! weights are allowed; a negative cycle is an error naming a vertex on it.
//!
//! Complexity: O(n³) time, O(n²) memory.

mod blocked_gpu;
pub mod cpu;
mod gpu;
pub mod tile;

use crate::common::{
    distance_rows, resolve_sources, write_summary, DenseInput, PathSummary, RowWrite,
};
use parking_lot::Mutex;
use serde::Deserialize;
use std::ops::Range;
use tuccompi::config::AutoOr;
use tuccompi::device::{Device, KernelSource};
use tuccompi::plugin::{
    Details, DeviceData, Gpu, Job, Out, Plugin, PrepareCtx, Record, Records, RecordsOut, Worker,
};
use tuccompi::sink::{NpyRows, NpyType};
use tuccompi::tuning::{LaunchParams, Tuner};
use tuccompi::{Error, Result};

/// The dense kernels (`kernels/fw.cl`) and their characterization (`kernels/fw.toml`).
const KERNELS: tuccompi::device::KernelSource = tuccompi::device::KernelSource {
    stem: "fw",
    source: include_str!("../kernels/fw.cl"),
    characterization: include_str!("../kernels/fw.toml"),
};

/// Which Floyd-Warshall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// One pass per k over the whole matrix.
    Naive,
    /// Tiles: close the diagonal tile, then its row and column, then the rest.
    Blocked,
    /// Recursive quadrants with min-plus products.
    RKleene,
}

/// A dense plugin.
#[derive(Debug)]
pub struct Fw(pub Variant);

/// `[fw-blocked]` etc. options.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FwOptions {
    /// Tile size of the blocked and recursive variants ("auto": 64 on CPUs; on devices the
    /// tuner's block for fw-blocked, 16 for rkleene).
    pub tile: Option<AutoOr>,
    /// fw-blocked on devices: side of the C tile one work-group updates ("auto").
    pub group: Option<AutoOr>,
    /// fw-blocked on devices: register tile of the min-plus kernels, "ROWSxCOLS" ("auto").
    pub register_tile: Option<String>,
    /// fw-blocked on devices: pivots per local-memory slab ("auto").
    pub slab: Option<AutoOr>,
    /// fw-blocked on devices: row strips whose transfers overlap the rounds ("auto"; 1 = none).
    pub strips: Option<AutoOr>,
    /// fw-blocked on devices: time every kernel launch (profiled queue) and report each
    /// phase's device seconds.
    #[serde(default)]
    pub profile: bool,
}

/// Parse a register tile "ROWSxCOLS" (or "auto").
fn parse_register_tile(s: &str, plugin: &str) -> Result<Option<(usize, usize)>> {
    if s == "auto" {
        return Ok(None);
    }
    let parsed = s
        .split_once(['x', 'X'])
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    match parsed {
        Some((a, b)) if a > 0 && b > 0 => Ok(Some((a, b))),
        _ => Err(Error::Config(format!(
            "[{plugin}] register_tile = {s:?}: expected \"auto\" or \"ROWSxCOLS\" such as \"8x8\""
        ))),
    }
}

/// Matrix element: i32 or i64.
pub trait Val:
    Copy + Ord + Send + Sync + Default + std::fmt::Debug + tuccompi::ZeroBits + 'static
{
    /// Unreachable.
    const INF: Self;
    /// Zero.
    const ZERO: Self;
    /// a + b (never wraps for the bounds above).
    fn add(self, b: Self) -> Self;
    /// As i64.
    fn to_i64(self) -> i64;
    /// From an i64 weight (checked by the caller).
    fn from_i64(w: i64) -> Self;
    /// Whether this value means unreachable.
    #[inline(always)]
    fn unreachable(self) -> bool {
        self.to_i64() >= Self::INF.to_i64() / 2
    }
    /// fw-blocked's update of rows outside the pivot tile (`cpu::relax_panel`).
    #[inline(always)]
    fn relax_panel(rows: &mut [Self], n: usize, k0: usize, kr: &[Self]) {
        cpu::relax_panel(rows, n, k0, kr)
    }
    /// `row[j] = min(row[j], aik + rk[j])` for every j: the inner loop of every variant.
    #[inline(always)]
    fn relax_row(row: &mut [Self], aik: Self, rk: &[Self]) {
        for (c, &b) in row.iter_mut().zip(rk) {
            *c = (*c).min(aik.add(b));
        }
    }
}

/// The i32 row update compiled for AVX2 (`vpminsd` on 8 lanes); the portable x86-64 baseline
/// has no packed 32-bit min before SSE4.1, which made the loop about 4x slower.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn relax_row_avx2(row: &mut [i32], aik: i32, rk: &[i32]) {
    for (c, &b) in row.iter_mut().zip(rk) {
        *c = (*c).min(aik + b);
    }
}

/// [`cpu::relax_panel`] on i32 compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn relax_panel_avx2(rows: &mut [i32], n: usize, k0: usize, kr: &[i32]) {
    cpu::relax_panel(rows, n, k0, kr)
}

impl Val for i32 {
    #[inline(always)]
    fn relax_panel(rows: &mut [i32], n: usize, k0: usize, kr: &[i32]) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above; the answer is cached).
            unsafe { relax_panel_avx2(rows, n, k0, kr) };
            return;
        }
        cpu::relax_panel(rows, n, k0, kr)
    }
    #[inline(always)]
    fn relax_row(row: &mut [i32], aik: i32, rk: &[i32]) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above; the answer is cached).
            unsafe { relax_row_avx2(row, aik, rk) };
            return;
        }
        for (c, &b) in row.iter_mut().zip(rk) {
            *c = (*c).min(aik + b);
        }
    }
    const INF: Self = (1 << 30) - 1;
    const ZERO: Self = 0;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        self + b
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(w: i64) -> Self {
        w as i32
    }
}

impl Val for i64 {
    const INF: Self = 1 << 61;
    const ZERO: Self = 0;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        self + b
    }
    fn to_i64(self) -> i64 {
        self
    }
    fn from_i64(w: i64) -> Self {
        w
    }
}

/// The distance matrix, in the width the bounds allow.
#[derive(Debug, Clone)]
pub enum Matrix {
    /// 32-bit.
    Narrow(Vec<i32>),
    /// 64-bit.
    Wide(Vec<i64>),
}

/// The input matrix: held in memory, or, for a scanned `.npy` whose weights fit the 32-bit
/// width, read from the file where it is used (the GPU half converts it a piece at a time into
/// its staging buffers as it uploads them: no whole host copy; `prepare` only scanned it).
enum Source {
    Held(Matrix),
    Npy(crate::graph::NpyMatrix),
}

impl Source {
    /// Whether the matrix is 32-bit.
    fn narrow(&self) -> bool {
        !matches!(self, Source::Held(Matrix::Wide(_)))
    }

    /// The whole matrix, owned (the CPU half works in place).
    fn matrix(&self) -> Result<Matrix> {
        match self {
            Source::Held(m) => Ok(m.clone()),
            Source::Npy(_) => self.narrow_matrix().map(|a| Matrix::Narrow(a.into_owned())),
        }
    }

    /// The 32-bit matrix: borrowed when held, else read from the file (an error for a 64-bit
    /// one, which the GPU half's setup refuses).
    fn narrow_matrix(&self) -> Result<std::borrow::Cow<'_, [i32]>> {
        match self {
            Source::Held(Matrix::Narrow(a)) => Ok(std::borrow::Cow::Borrowed(a)),
            Source::Npy(m) => Ok(std::borrow::Cow::Owned(dense_of_npy(m)?)),
            Source::Held(Matrix::Wide(_)) => Err(wide_on_device()),
        }
    }

    /// An error if the file of a `.npy` input changed since it was scanned (call after the
    /// last [`narrow_rows`](Source::narrow_rows)).
    fn unchanged(&self) -> Result<()> {
        match self {
            Source::Npy(m) => m.unchanged(),
            Source::Held(_) => Ok(()),
        }
    }

    /// Rows `rows` of the 32-bit matrix (`n` columns) into `out`, packed, on every core.
    fn narrow_rows(&self, n: usize, rows: Range<usize>, out: &mut [i32]) -> Result<()> {
        use rayon::prelude::*;
        match self {
            Source::Held(Matrix::Narrow(a)) => {
                out[..rows.len() * n]
                    .par_chunks_mut(1 << 16)
                    .zip(a[rows.start * n..rows.end * n].par_chunks(1 << 16))
                    .for_each(|(d, s)| d.copy_from_slice(s));
                Ok(())
            }
            Source::Npy(m) => {
                m.fill_rows(rows, out, i32::ZERO, i32::INF, <i32 as Val>::from_i64);
                Ok(())
            }
            Source::Held(Matrix::Wide(_)) => Err(wide_on_device()),
        }
    }
}

/// A 64-bit matrix on a device (the GPU half's setup refuses them first).
fn wide_on_device() -> Error {
    Error::Device("a 64-bit matrix reached the device (setup refuses them; a bug)".into())
}

/// A prepared dense job.
pub struct FwJob {
    inputs: Vec<std::path::PathBuf>,
    check: Vec<(String, String)>,
    variant: Variant,
    /// Vertices.
    pub n: usize,
    input: Source,
    sources: Vec<u32>,
    id_base: u64,
    negative: bool,
    tile: Option<usize>,
    gpu_tile: tile::TileRequest,
    profile: bool,
    rows: Option<NpyRows>,
    /// The unit that ran the task (report: checksum.computed_by).
    unit: Mutex<Option<String>>,
    /// Where a GPU run spent its time (report: checksum.gpu_seconds).
    timing: Mutex<Option<serde_json::Value>>,
    name: String,
    /// Where the config's keys were set (the GPU half's messages name the place).
    origins: tuccompi::config::Origins,
}

impl std::fmt::Debug for FwJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FwJob({:?}, n={})", self.variant, self.n)
    }
}

/// Build the dense matrix of an input: from arcs ([`dense_of_arcs`]) or from a `.npy` matrix
/// (0 on the diagonal, each entry's weight, INF where it has no arc).
fn dense<T: Val>(input: &DenseInput) -> Result<Vec<T>> {
    match input {
        DenseInput::Edges(l) => dense_of_arcs(l.n, &l.arcs, l.id_base),
        DenseInput::Matrix(m, _) => dense_of_npy(m),
    }
}

/// The dense matrix of a scanned `.npy` file, read from it (an error if it changed since).
fn dense_of_npy<T: Val>(m: &crate::graph::NpyMatrix) -> Result<Vec<T>> {
    let n = m.n;
    // `fill` writes every entry, rows in parallel: the zeroed pages are first touched there,
    // by every core, not filled with INF on one core beforehand.
    let mut out = tuccompi::zeros::<T>(n * n, &format!("a dense {n} x {n} matrix"))?;
    m.fill(&mut out, T::ZERO, T::INF, T::from_i64);
    m.unchanged()?;
    Ok(out)
}

/// Build the dense input of arcs: 0 on the diagonal, the lightest arc, INF elsewhere. A
/// negative self-loop is a negative cycle.
fn dense_of_arcs<T: Val>(n: usize, arcs: &[(u32, u32, i64)], id_base: u64) -> Result<Vec<T>> {
    let mut m = tuccompi::filled(n * n, T::INF, &format!("a dense {n} x {n} matrix"))?;
    for i in 0..n {
        m[i * n + i] = T::ZERO;
    }
    for &(u, v, w) in arcs {
        if u == v {
            if w < 0 {
                return Err(Error::Input(format!(
                    "negative cycle: vertex {} has a self-loop of weight {w}",
                    u as u64 + id_base
                )));
            }
            continue;
        }
        let c = &mut m[u as usize * n + v as usize];
        *c = (*c).min(T::from_i64(w));
    }
    Ok(m)
}

impl Plugin for Fw {
    fn name(&self) -> &'static str {
        match self.0 {
            Variant::Naive => "fw-naive",
            Variant::Blocked => "fw-blocked",
            Variant::RKleene => "rkleene",
        }
    }
    fn description(&self) -> &'static str {
        match self.0 {
            Variant::Naive => {
                "dense APSP, Floyd-Warshall with one pass per k (negative weights allowed)"
            }
            Variant::Blocked => {
                "dense APSP, blocked three-phase Kleene Floyd-Warshall (negative weights allowed)"
            }
            Variant::RKleene => {
                "dense APSP, recursive R-Kleene with min-plus products (negative weights allowed)"
            }
        }
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        // Checks below name their key; this adds where it was set.
        self.prepare_job(ctx)
            .map_err(|e| ctx.plan.origins.locate(e))
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

impl Fw {
    fn prepare_job(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let (options, keys): (FwOptions, _) =
            crate::common::sources::split_options(ctx.plan, self.name())?;
        if self.0 != Variant::Blocked
            && (options.register_tile.is_some()
                || options.group.is_some()
                || options.slab.is_some()
                || options.strips.is_some()
                || options.profile)
        {
            return Err(Error::Config(format!(
                "[{}]: group, register_tile, slab, strips and profile belong to [fw-blocked] (its GPU half)",
                self.name()
            )));
        }
        if self.0 == Variant::Naive && options.tile.is_some() {
            // One pass per k over the whole matrix: there is no tile to size.
            return Err(ctx.plan.origins.error(
                "fw-naive.tile",
                "[fw-naive] tile: fw-naive has no tiles (one pass over the matrix per k); \
                 remove the key, or use fw-blocked or rkleene, whose tiles it sizes",
            ));
        }
        let given = crate::common::input::Input::of(ctx.plan)?;
        // A `.npy` matrix is only scanned here (checked, its weights' bound found); a 32-bit
        // one is read again where it is used (`Source::Npy`).
        let input = crate::common::load_dense(ctx.plan, &given)?;
        let n = input.n();
        let bytes = (n as u128) * (n as u128) * 8;
        if bytes > 1 << 36 {
            return Err(Error::Input(format!(
                "{}: {n} vertices need {:.1} GiB as a dense matrix; dense plugins take at most ~90,000 vertices (use apsp for sparse graphs)",
                input.name(),
                bytes as f64 / (1u64 << 30) as f64
            )));
        }
        let maxw = input.max_abs() as u128;
        let bound = (n.saturating_sub(1) as u128) * maxw;
        if bound >= 1 << 59 {
            let heaviest = match &input {
                DenseInput::Edges(list) => match &list.origin.heaviest {
                    Some((path, line)) => format!("; the heaviest weight is at {path}:{line}"),
                    None => String::new(),
                },
                DenseInput::Matrix(..) => String::new(),
            };
            return Err(Error::Input(format!(
                "{}: paths can reach (vertices - 1) x max |weight| = {} x {maxw} = {bound} in \
                 magnitude, beyond exact 64-bit Floyd-Warshall (2^59){heaviest}; rescale the weights",
                input.name(),
                n.saturating_sub(1)
            )));
        }
        let negative = input.negative();
        // A negative cycle is a property of the input: found here, before the run starts, it
        // leaves no unfinished run behind (found after the sweep, the run would stop with its
        // staging folder and advise --resume, which the corrected input then refuses).
        let cycle = match &input {
            _ if !negative => None,
            DenseInput::Edges(list) => negative_cycle(n, &list.arcs),
            DenseInput::Matrix(m, _) => negative_cycle(n, &m.arcs()),
        };
        if let Some(v) = cycle {
            return Err(Error::Input(format!(
                "{}: negative cycle through vertex {}: shortest paths are undefined; remove the \
                 cycle or make its total weight non-negative",
                input.name(),
                v as u64 + input.id_base()
            )));
        }
        let list_name = input.name().to_string();
        let id_base = input.id_base();
        let matrix = match (bound < 1 << 28, input) {
            (true, DenseInput::Matrix(m, _)) => Source::Npy(m),
            (true, input) => Source::Held(Matrix::Narrow(dense(&input)?)),
            (false, input) => Source::Held(Matrix::Wide(dense(&input)?)),
        };
        let (sources, origins) = crate::common::ids::sources(ctx.plan, &keys)?;
        let sources = resolve_sources(&keys.sources_key, &sources, origins.as_ref(), n, id_base)?;
        let ty = if negative {
            NpyType::I64
        } else if bound < u32::MAX as u128 {
            NpyType::U32
        } else {
            NpyType::U64
        };
        let rows = distance_rows(ctx, &keys, sources.len(), n, ty)?;
        let gpu_tile = tile::TileRequest {
            block: options.tile.and_then(|t| t.value()),
            group: options.group.and_then(|t| t.value()),
            register: match &options.register_tile {
                Some(s) => parse_register_tile(s, self.name())?,
                None => None,
            },
            slab: options.slab.and_then(|t| t.value()),
            strips: options.strips.and_then(|t| t.value()),
        };
        Ok(Box::new(FwJob {
            check: crate::common::check_lines(&keys, &given),
            inputs: crate::common::input_files(&keys, &given),
            variant: self.0,
            n,
            input: matrix,
            sources,
            id_base,
            negative,
            tile: options.tile.and_then(|t| t.value()),
            gpu_tile,
            profile: options.profile,
            rows,
            unit: Mutex::new(None),
            timing: Mutex::new(None),
            name: list_name,
            origins: ctx.plan.origins.clone(),
        }))
    }
}

/// A vertex on a negative cycle of the graph of `arcs` over `n` vertices, if it has one.
///
/// Bellman-Ford from a virtual source joined to every vertex by a 0 arc (every distance starts at
/// 0), in the queue order of SPFA, with the parent graph searched for a cycle after every `n`
/// relaxations: a cycle of parent pointers is always negative, and with a negative cycle one
/// forms within n rounds. O(n·m) at worst, within the Floyd-Warshall sweep's own O(n³); on
/// inputs without a negative cycle it usually settles in a few rounds.
pub fn negative_cycle(n: usize, arcs: &[(u32, u32, i64)]) -> Option<u32> {
    let mut offsets = vec![0usize; n + 1];
    for &(u, _, _) in arcs {
        offsets[u as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets.clone();
    let mut adj = vec![(0u32, 0i64); arcs.len()];
    for &(u, v, w) in arcs {
        adj[next[u as usize]] = (v, w);
        next[u as usize] += 1;
    }
    let mut dist = vec![0i64; n];
    let mut parent = vec![u32::MAX; n];
    let mut queued = vec![true; n];
    let mut queue: std::collections::VecDeque<u32> = (0..n as u32).collect();
    let mut relaxed = 0usize;
    while let Some(u) = queue.pop_front() {
        let u = u as usize;
        queued[u] = false;
        for &(v, w) in &adj[offsets[u]..offsets[u + 1]] {
            let d = dist[u].saturating_add(w);
            if d < dist[v as usize] {
                dist[v as usize] = d;
                parent[v as usize] = u as u32;
                relaxed += 1;
                if relaxed.is_multiple_of(n.max(1)) {
                    if let Some(c) = parent_cycle(&parent) {
                        return Some(c);
                    }
                }
                if !queued[v as usize] {
                    queued[v as usize] = true;
                    queue.push_back(v);
                }
            }
        }
    }
    None
}

/// A vertex on a cycle of the parent pointers (`u32::MAX` = none), if they have one. O(n).
fn parent_cycle(parent: &[u32]) -> Option<u32> {
    // 0 = not seen, 1 = on the current walk, 2 = done.
    let mut state = vec![0u8; parent.len()];
    for start in 0..parent.len() {
        let mut v = start;
        while state[v] == 0 {
            state[v] = 1;
            match parent[v] {
                u32::MAX => break,
                p => v = p as usize,
            }
        }
        if state[v] == 1 && parent[v] != u32::MAX {
            return Some(v as u32);
        }
        let mut w = start;
        while state[w] == 1 {
            state[w] = 2;
            match parent[w] {
                u32::MAX => break,
                p => w = p as usize,
            }
        }
    }
    None
}

impl FwJob {
    /// The summary of each source's row of the closed matrix `a`, and with
    /// `output.distances` the row written to `distances.npy`: rows in parallel, each read once.
    fn rows_out<T: Val>(&self, a: &[T]) -> Result<Vec<PathSummary>> {
        use rayon::prelude::*;
        let n = self.n;
        self.sources
            .par_iter()
            .enumerate()
            .map(|(t, &s)| self.row_out(t, &a[s as usize * n..(s as usize + 1) * n]))
            .collect()
    }

    /// The summary of source `t`'s closed row, and with `output.distances` the row written to
    /// `distances.npy` (unreachable = the file's dtype's marker).
    fn row_out<T: Val>(&self, t: usize, row: &[T]) -> Result<PathSummary> {
        let (mut reached, mut sum, mut max) = (0u64, 0i128, 0i64);
        for d in row.iter().filter(|d| !d.unreachable()) {
            let d = d.to_i64();
            reached += 1;
            sum += d as i128;
            max = max.max(d);
        }
        if let Some(rows) = &self.rows {
            let get = |d: &T| (!d.unreachable()).then(|| d.to_i64());
            if self.negative {
                let r: Vec<i64> = row.iter().map(|d| get(d).unwrap_or(i64::MAX)).collect();
                i64::write_row(rows, t, &r)?;
            } else if std::mem::size_of::<T>() == 4 {
                let r: Vec<u32> = row
                    .iter()
                    .map(|d| get(d).map_or(u32::MAX, |x| x as u32))
                    .collect();
                u32::write_row(rows, t, &r)?;
            } else {
                let r: Vec<u64> = row
                    .iter()
                    .map(|d| get(d).map_or(u64::MAX, |x| x as u64))
                    .collect();
                u64::write_row(rows, t, &r)?;
            }
        }
        Ok(PathSummary {
            reached,
            sum,
            // The row holds d(s, s) = 0 (a negative cycle was refused), so max >= 0.
            max: max as u64,
            redone: false,
        })
    }

    /// The negative-cycle error of vertex `v` (index).
    fn cycle_error(&self, v: usize) -> Error {
        Error::Input(format!(
            "{}: negative cycle through vertex {}: shortest paths are undefined",
            self.name,
            v as u64 + self.id_base
        ))
    }

    /// A closed matrix (after checking for negative cycles): its sources' rows summarized and
    /// written ([`rows_out`](FwJob::rows_out)) into the task's record.
    fn closed(&self, m: &Matrix, out: &mut RecordsOut<'_>, unit: &str) -> Result<()> {
        let n = self.n;
        let neg = match m {
            Matrix::Narrow(a) => (0..n).find(|&i| a[i * n + i] < 0),
            Matrix::Wide(a) => (0..n).find(|&i| a[i * n + i] < 0),
        };
        if let Some(v) = neg {
            return Err(self.cycle_error(v));
        }
        let summaries = match m {
            Matrix::Narrow(a) => self.rows_out(a)?,
            Matrix::Wide(a) => self.rows_out(a)?,
        };
        self.done(&summaries, out, unit);
        Ok(())
    }

    /// The task's record: every source's summary in order (what `[verify]` compares between
    /// an accelerator and the CPU half), and the unit that made them.
    fn done(&self, summaries: &[PathSummary], out: &mut RecordsOut<'_>, unit: &str) {
        let record = out.record(0);
        for (s, w) in summaries
            .iter()
            .zip(record.chunks_exact_mut(PathSummary::WORDS))
        {
            s.to_words(w);
        }
        // The first unit's name: a `[verify]` re-run on the CPU half comes after it.
        self.unit.lock().get_or_insert_with(|| unit.to_string());
    }
}

impl Job for FwJob {
    fn tasks(&self) -> usize {
        1
    }
    fn details(&self) -> Details<'_> {
        Details {
            inputs: self.inputs.clone(),
            check_lines: self.check.clone(),
            prefers_gpu: true,
            multi_node: false,
            bulk: self.rows.iter().collect(),
            ..Details::default()
        }
    }
    fn record_words(&self) -> usize {
        PathSummary::WORDS * self.sources.len()
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name, "n": self.n, "variant": format!("{:?}", self.variant),
            "element": if self.input.narrow() { "i32" } else { "i64" },
            "negative_weights": self.negative,
        })
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(CpuFw(self)))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        self.kernel_files()
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        self.params_on(device, tuner)
    }
    fn gpu_setup(&self, device: &Device, params: &LaunchParams) -> Result<DeviceData> {
        self.setup_on(device, params)
    }
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        self.worker_on(gpu)
    }
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        let summaries = records
            .get(0)
            .chunks_exact(PathSummary::WORDS)
            .map(PathSummary::from_words);
        // The one task always runs in this process: a resume redoes it (the runtime replays
        // the journal only for jobs whose tasks split over ranks).
        let Some(unit) = self.unit.lock().clone() else {
            return Err(Error::Unit {
                unit: "none".into(),
                msg: "no unit ran the dense task".into(),
            });
        };
        let n = self.n;
        if let Some(rows) = &self.rows {
            rows.sync()?;
        }
        let mut checksum = write_summary(out, &self.sources, self.id_base, n, None, summaries)?;
        checksum["computed_by"] = serde_json::json!(unit);
        if let Some(t) = self.timing.lock().take() {
            checksum["gpu_seconds"] = t;
        }
        Ok(checksum)
    }
}

struct CpuFw<'a>(&'a FwJob);

impl Worker for CpuFw<'_> {
    fn run(&mut self, _range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let job = self.0;
        let tile = job.tile.unwrap_or(64).max(1);
        let m = match job.input.matrix()? {
            Matrix::Narrow(a) => Matrix::Narrow(cpu::solve(a, job.n, job.variant, tile)),
            Matrix::Wide(a) => Matrix::Wide(cpu::solve(a, job.n, job.variant, tile)),
        };
        job.closed(&m, out, "cpu (rayon over every core)")
    }
}

#[cfg(test)]
mod cycle_test {
    use super::negative_cycle;

    #[test]
    fn negative_cycles_are_found_before_the_run() {
        // 0 -> 1 -> 2 -> 0 of weight 1 - 3 + 1 = -1, reached from 3.
        let arcs = [(3, 0, 5), (0, 1, 1), (1, 2, -3), (2, 0, 1), (2, 4, 2)];
        let v = negative_cycle(5, &arcs).expect("the cycle 0-1-2 is negative");
        assert!(v <= 2, "vertex {v} is not on the cycle");
        // The same cycle at weight 0, and negative arcs without a cycle: none.
        let zero = [(0, 1, 1), (1, 2, -2), (2, 0, 1), (2, 3, -7)];
        assert_eq!(negative_cycle(4, &zero), None);
        // A long cycle (the parent graph is searched every n relaxations).
        let n = 1000u32;
        let mut ring: Vec<_> = (0..n).map(|i| (i, (i + 1) % n, 1i64)).collect();
        assert_eq!(negative_cycle(n as usize, &ring), None);
        ring[500].2 = -(n as i64);
        assert!(negative_cycle(n as usize, &ring).is_some());
        assert_eq!(negative_cycle(0, &[]), None);
    }
}
