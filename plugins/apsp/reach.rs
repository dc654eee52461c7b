//! `[apsp.reach]`: accessibility queries folded per source inside the run, no matrix written.
//!
//! Each tree is reduced, as soon as it is computed, over the job's targets (`[apsp] targets`,
//! or every vertex) into a few numbers that travel in the task's record behind its
//! [`PathSummary`] words, so they are journaled, resumable and merged across nodes like the
//! summary itself:
//!
//! - for each radius `r` of `radii`: the targets at distance `<= r` (`count_r`) and the sum of
//!   their weights (`sum_r`), each weight times the decay `f(d, r)`: 1 (`flat`), `1 - d/r`
//!   (`linear`) or `exp(-d/r)` (`exp`), pandana's `aggregate` decays;
//! - the `nearest` closest reachable targets with their distances, ties broken by the target's
//!   position in the targets list (lower first), so the answer never depends on the unit;
//! - for each limit of `isochrones`: the vertices (all of them, whatever the targets) at
//!   distance `<= limit`.
//!
//! [`Job::finish`](tuccompi::plugin::Job::finish) writes them as `reach.csv`, `nearest.csv` and
//! `isochrones.csv`, one row per source; asked for, also `isochrone_ids.csv` (the vertices
//! within each limit) and `isochrones.geojson` (the reachable network within each limit,
//! buffered into polygons: [`super::isochrone`]), both from each source's tree made again on
//! the CPU. The CPU halves fold their host rows here ([`put`],
//! [`Reach::fold`]); the GPU half folds on the device (`gpu/reach.rs`, `kernels/reach.cl`) and
//! only the folded words come back.
//!
//! Cost per tree: `O(T (R + log K) + n L)` for `T` targets, `R` radii, `K` nearest, `L`
//! isochrone limits (`O(T K)` in the worst case of the nearest list's insertions).

use super::ApspJob;
use crate::common::{Dist, PathSummary};
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tuccompi::plugin::{Field, FieldType, Out, Record, Records, RecordsOut, Tolerance};
use tuccompi::sink::{Column, Table};
use tuccompi::{Error, Result};

/// Most radii (and most isochrone limits) one run folds.
pub const MAX_RADII: usize = 16;
/// Most nearest targets one run keeps per source.
pub const MAX_NEAREST: usize = 64;
/// Unset entry of a nearest list (fewer targets reachable than asked): both words.
pub const NONE: u64 = u64::MAX;

/// How a target's weight decays with its distance `d` inside a radius `r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decay {
    /// The weight itself, whatever the distance.
    #[default]
    Flat,
    /// `weight x (1 - d/r)`.
    Linear,
    /// `weight x exp(-d/r)`.
    Exp,
}

impl Decay {
    /// The factor at distance `d` within radius `r` (`d <= r`, `r > 0`).
    pub fn factor(self, d: u64, r: u64) -> f64 {
        match self {
            Decay::Flat => 1.0,
            Decay::Linear => 1.0 - d as f64 / r as f64,
            Decay::Exp => (-(d as f64) / r as f64).exp(),
        }
    }
    /// The code `kernels/reach.cl` takes.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// `weights = { file = ..., column = ... }`: one weight per target.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightsFile {
    /// A `.npy` (1-D float64, one value per target) or a `.csv` with a header.
    pub file: PathBuf,
    /// The `.csv` column that holds the weights.
    pub column: Option<String>,
}

/// `[apsp.reach]` as written.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ReachOptions {
    /// Radii, in the graph's weight units: count and weighted sum of the targets within each.
    #[serde(default)]
    pub radii: Vec<u64>,
    /// How the weights decay inside a radius.
    #[serde(default)]
    pub decay: Decay,
    /// Per-target weights (default 1 each).
    pub weights: Option<WeightsFile>,
    /// The nearest targets kept per source (0: none).
    #[serde(default)]
    pub nearest: usize,
    /// Limits: vertices within each, counted over every vertex.
    #[serde(default)]
    pub isochrones: Vec<u64>,
    /// Also write `isochrone_ids.csv`: for each source and limit, the ids of the vertices
    /// within it.
    #[serde(default)]
    pub isochrone_ids: bool,
    /// Also write `isochrones.geojson`: for each source and limit, the reachable network
    /// buffered by `isochrone_width` ([`super::isochrone`]).
    #[serde(default)]
    pub isochrone_polygons: bool,
    /// The polygons' buffer width: metres for longitude/latitude places, a `.co` file's units
    /// otherwise (default [`super::isochrone::DEFAULT_WIDTH`]).
    pub isochrone_width: Option<f64>,
}

/// The reductions of a job, checked and with their weights read.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// Radii, as configured.
    pub radii: Vec<u64>,
    /// The decay inside a radius.
    pub decay: Decay,
    /// One weight per target column (`None`: 1 each).
    pub weights: Option<Vec<f64>>,
    /// Nearest targets per source.
    pub nearest: usize,
    /// Isochrone limits.
    pub isochrones: Vec<u64>,
    /// The weights file, for the job's declared inputs.
    pub file: Option<PathBuf>,
    /// Whether `isochrone_ids.csv` is written.
    pub isochrone_ids: bool,
    /// The width of the polygons of `isochrones.geojson`, when they are written.
    pub isochrone_polygons: Option<f64>,
}

impl Reach {
    /// Check `options` against a job of `cols` target columns and read the weights (or take
    /// `given`, the weights a caller handed over in memory, with its name of them).
    /// `None` when nothing is asked.
    pub fn prepare(
        options: Option<ReachOptions>,
        cols: usize,
        given: Option<(&str, &[f64])>,
    ) -> Result<Option<Reach>> {
        let Some(o) = options else { return Ok(None) };
        let key = |k: &str| format!("[apsp.reach] {k}");
        if o.radii.is_empty() && o.nearest == 0 && o.isochrones.is_empty() {
            return Err(Error::Config(format!(
                "[apsp.reach] asks for nothing: set radii = [500, 1000], nearest = 5 or \
                 isochrones = [600], or remove the table{}",
                if o.weights.is_some() || o.decay != Decay::Flat {
                    " (weights and decay apply to radii)"
                } else {
                    ""
                }
            )));
        }
        for (name, list) in [("radii", &o.radii), ("isochrones", &o.isochrones)] {
            if list.len() > MAX_RADII {
                return Err(Error::Config(format!(
                    "{} has {} values; at most {MAX_RADII} are folded in one run: split the \
                     list over several runs",
                    key(name),
                    list.len()
                )));
            }
            if list.contains(&0) {
                return Err(Error::Config(format!(
                    "{} contains 0; each limit must be a positive distance in the graph's \
                     weight units",
                    key(name)
                )));
            }
            let mut seen = list.clone();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(Error::Config(format!(
                    "{} repeats a value; list each limit once",
                    key(name)
                )));
            }
        }
        if o.nearest > MAX_NEAREST {
            return Err(Error::Config(format!(
                "{} = {}: at most {MAX_NEAREST} nearest targets are kept per source",
                key("nearest"),
                o.nearest
            )));
        }
        if o.radii.is_empty() && (o.weights.is_some() || o.decay != Decay::Flat) {
            return Err(Error::Config(
                "[apsp.reach] weights and decay apply to radii, and radii is empty: set radii \
                 = [...] or remove them"
                    .into(),
            ));
        }
        let weights = match (&o.weights, given) {
            (_, Some((name, w))) => Some(checked_weights(
                w.iter()
                    .enumerate()
                    .map(|(i, &x)| (x, format!("{name}[{i}]")))
                    .collect(),
                cols,
                name,
            )?),
            (Some(w), None) => Some(read_weights(w, cols)?),
            (None, None) => None,
        };
        if o.isochrone_ids && o.isochrones.is_empty() {
            return Err(Error::Config(format!(
                "{}: the ids within each isochrone limit need the limits: set isochrones = \
                 [600, 1200] too",
                key("isochrone_ids = true")
            )));
        }
        if o.isochrone_polygons && o.isochrones.is_empty() {
            return Err(Error::Config(format!(
                "{}: polygons of the area within each isochrone limit need the limits: set \
                 isochrones = [600, 1200] too",
                key("isochrone_polygons = true")
            )));
        }
        if let Some(w) = o.isochrone_width {
            if !o.isochrone_polygons {
                return Err(Error::Config(format!(
                    "{} is the buffer width of the isochrone polygons, which are not asked \
                     for: set isochrone_polygons = true, or remove isochrone_width",
                    key("isochrone_width")
                )));
            }
            if !(w.is_finite() && w > 0.0) {
                return Err(Error::Config(format!(
                    "{} = {w}: the polygons' buffer width must be a positive number (metres \
                     for OpenStreetMap input, the .co file's units otherwise; default {})",
                    key("isochrone_width"),
                    super::isochrone::DEFAULT_WIDTH
                )));
            }
        }
        Ok(Some(Reach {
            isochrone_polygons: o
                .isochrone_polygons
                .then(|| o.isochrone_width.unwrap_or(super::isochrone::DEFAULT_WIDTH)),
            isochrone_ids: o.isochrone_ids,
            radii: o.radii,
            decay: o.decay,
            weights,
            nearest: o.nearest,
            isochrones: o.isochrones,
            file: o.weights.map(|w| w.file),
        }))
    }

    /// Refuse isochrone polygons on an input without places (`geo`: the input's), naming the
    /// key: the polygons are drawn from them.
    pub fn check_places(&self, geo: Option<&crate::common::geo::Geo>, graph: &str) -> Result<()> {
        match (self.isochrone_polygons, geo) {
            (Some(_), None) => Err(super::isochrone::no_places(
                "[apsp.reach] isochrone_polygons = true",
                graph,
            )),
            _ => Ok(()),
        }
    }

    /// Words each task's record holds after its [`PathSummary`]: a count and a sum per radius,
    /// a target and a distance per nearest entry, a count per isochrone limit.
    pub fn words(&self) -> usize {
        2 * self.radii.len() + 2 * self.nearest + self.isochrones.len()
    }

    /// The weight of target column `i`.
    #[inline]
    fn weight(&self, i: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }

    /// Fold one tree into `out` ([`words`](Reach::words) long): `dist(v)` is its distance to
    /// vertex `v` (internal id), `targets` the job's target columns (`None`: every vertex of
    /// `n`).
    pub fn fold<D: Dist>(
        &self,
        targets: Option<&[u32]>,
        n: usize,
        dist: impl Fn(u32) -> D,
        out: &mut [u64],
    ) {
        let (r, k) = (self.radii.len(), self.nearest);
        let mut count = [0u64; MAX_RADII];
        let mut sum = [0f64; MAX_RADII];
        // Sorted by (distance, column): a later column of equal distance never displaces one.
        let mut near: Vec<(u64, u64)> = Vec::with_capacity(k + 1);
        let cols = targets.map_or(n, <[u32]>::len);
        // Unweighted and flat: each sum is its count (exactly, in f64), added up at the end.
        let plain = self.weights.is_none() && self.decay == Decay::Flat;
        if r > 0 || k > 0 {
            for i in 0..cols {
                let v = targets.map_or(i as u32, |t| t[i]);
                let d = dist(v);
                if d == D::INF {
                    continue;
                }
                let d = d.to_u64();
                if plain {
                    for (c, &radius) in count.iter_mut().zip(&self.radii) {
                        *c += u64::from(d <= radius);
                    }
                } else {
                    for (j, &radius) in self.radii.iter().enumerate() {
                        if d <= radius {
                            count[j] += 1;
                            sum[j] += self.weight(i) * self.decay.factor(d, radius);
                        }
                    }
                }
                if k > 0 && (near.len() < k || d < near[k - 1].0) {
                    let at = near.partition_point(|&(nd, _)| nd <= d);
                    near.insert(at, (d, i as u64));
                    near.truncate(k);
                }
            }
        }
        if plain {
            for (s, &c) in sum.iter_mut().zip(&count) {
                *s = c as f64;
            }
        }
        let mut iso = [0u64; MAX_RADII];
        if !self.isochrones.is_empty() {
            for v in 0..n as u32 {
                let d = dist(v);
                if d == D::INF {
                    continue;
                }
                let d = d.to_u64();
                for (j, &limit) in self.isochrones.iter().enumerate() {
                    iso[j] += u64::from(d <= limit);
                }
            }
        }
        let mut folded = Folded::new(self);
        folded.count[..r].copy_from_slice(&count[..r]);
        folded.sum[..r].copy_from_slice(&sum[..r]);
        folded.near = near;
        folded.iso.copy_from_slice(&iso[..self.isochrones.len()]);
        folded.to_words(self, out);
    }

    /// The record's fields after the summary's, for `[verify]` and messages.
    fn fields(&self) -> Vec<Field> {
        let mut f = Vec::with_capacity(self.words());
        for r in &self.radii {
            f.push(Field::new(format!("count_{r}"), FieldType::U64));
            f.push(Field::new(format!("sum_{r}"), FieldType::F64));
        }
        for i in 1..=self.nearest {
            f.push(Field::new(format!("target_{i}"), FieldType::U64));
            f.push(Field::new(format!("distance_{i}"), FieldType::U64));
        }
        for l in &self.isochrones {
            f.push(Field::new(format!("within_{l}"), FieldType::U64));
        }
        f
    }
}

/// One tree's reductions, unpacked.
#[derive(Debug, Clone, PartialEq)]
pub struct Folded {
    /// Targets within each radius.
    pub count: Vec<u64>,
    /// Their decayed weights summed.
    pub sum: Vec<f64>,
    /// The nearest `(distance, target column)`, closest first.
    pub near: Vec<(u64, u64)>,
    /// Vertices within each isochrone limit.
    pub iso: Vec<u64>,
}

impl Folded {
    /// Nothing folded yet, shaped for `reach`.
    pub fn new(reach: &Reach) -> Folded {
        Folded {
            count: vec![0; reach.radii.len()],
            sum: vec![0.0; reach.radii.len()],
            near: Vec::new(),
            iso: vec![0; reach.isochrones.len()],
        }
    }

    /// Laid out in the record's words after the summary.
    pub fn to_words(&self, reach: &Reach, out: &mut [u64]) {
        let r = reach.radii.len();
        for j in 0..r {
            out[2 * j] = self.count[j];
            out[2 * j + 1] = self.sum[j].to_bits();
        }
        let near = &mut out[2 * r..2 * r + 2 * reach.nearest];
        for (i, pair) in near.chunks_exact_mut(2).enumerate() {
            let (d, c) = self.near.get(i).copied().unwrap_or((NONE, NONE));
            pair[0] = c;
            pair[1] = d;
        }
        out[2 * r + 2 * reach.nearest..].copy_from_slice(&self.iso);
    }

    /// Read back from the record's words after the summary.
    pub fn from_words(reach: &Reach, w: &[u64]) -> Folded {
        let r = reach.radii.len();
        let near_words = &w[2 * r..2 * r + 2 * reach.nearest];
        Folded {
            count: (0..r).map(|j| w[2 * j]).collect(),
            sum: (0..r).map(|j| f64::from_bits(w[2 * j + 1])).collect(),
            near: near_words
                .chunks_exact(2)
                .filter(|p| p[0] != NONE)
                .map(|p| (p[1], p[0]))
                .collect(),
            iso: w[2 * r + 2 * reach.nearest..].to_vec(),
        }
    }
}

/// Read the weights file: one finite weight per target column (`cols` of them).
fn read_weights(w: &WeightsFile, cols: usize) -> Result<Vec<f64>> {
    let path = &w.file;
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let values: Vec<(f64, String)> = if name.ends_with(".npy") {
        if w.column.is_some() {
            return Err(Error::Config(format!(
                "[apsp.reach] weights: {} is a .npy file, which has no columns: remove column",
                path.display()
            )));
        }
        let a = tuccompi::npy::read::<f64>(path, Some(1))?;
        a.data
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, format!("{}: element {i}", path.display())))
            .collect()
    } else if name.ends_with(".csv") {
        let Some(column) = &w.column else {
            return Err(Error::Config(format!(
                "[apsp.reach] weights = {{ file = \"{}\" }}: name the column that holds the \
                 weights: weights = {{ file = \"{}\", column = \"...\" }}",
                path.display(),
                path.display()
            )));
        };
        read_csv_column(path, column)?
    } else {
        return Err(Error::Config(format!(
            "[apsp.reach] weights: {}: unknown format; use a .npy (1-D float64, one weight per \
             target) or a .csv with a header and column = \"name\"",
            path.display()
        )));
    };
    checked_weights(values, cols, &path.display().to_string())
}

/// `values` (each with where it came from) as weights, one per target of `cols`, each finite;
/// `name` names the list in messages.
fn checked_weights(values: Vec<(f64, String)>, cols: usize, name: &str) -> Result<Vec<f64>> {
    if values.len() != cols {
        return Err(Error::Input(format!(
            "{name}: {} weights for {cols} targets; [apsp.reach] weights needs one per target, \
             in the targets' order ({})",
            values.len(),
            if cols == 0 {
                "there are none"
            } else {
                "[apsp] targets, or every vertex when it is unset"
            }
        )));
    }
    values
        .into_iter()
        .map(|(x, at)| {
            if x.is_finite() {
                Ok(x)
            } else {
                Err(Error::Input(format!(
                    "{at}: weight {x} is not a finite number; [apsp.reach] weights must be finite"
                )))
            }
        })
        .collect()
}

/// The values of `column` in a `.csv` with a header, each with its place (`file:line`).
fn read_csv_column(path: &Path, column: &str) -> Result<Vec<(f64, String)>> {
    let mut r = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    let header = r
        .headers()
        .map_err(|e| Error::Input(format!("{}: line 1: {e}", path.display())))?
        .clone();
    let Some(at) = header.iter().position(|h| h == column) else {
        return Err(Error::Config(format!(
            "[apsp.reach] weights: {} has no column \"{column}\"; its header has {}",
            path.display(),
            header.iter().collect::<Vec<_>>().join(", ")
        )));
    };
    let mut out = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let line = i + 2;
        let place = format!("{}:{line}", path.display());
        let rec = rec.map_err(|e| Error::Input(format!("{place}: {e}")))?;
        let cell = rec.get(at).unwrap_or("");
        let x: f64 = cell.parse().map_err(|_| {
            Error::Input(format!(
                "{place}: column \"{column}\" holds \"{cell}\", not a number"
            ))
        })?;
        out.push((x, place));
    }
    Ok(out)
}

/// Words of a task's record: the summary's, then the reductions'.
pub fn record_words(job: &ApspJob) -> usize {
    PathSummary::WORDS + job.reach.as_ref().map_or(0, Reach::words)
}

/// Write task `t`'s record: the summary `s` and, when the job folds, tree `dist` folded.
pub fn put<D: Dist>(
    job: &ApspJob,
    out: &mut RecordsOut<'_>,
    t: usize,
    s: &PathSummary,
    dist: impl Fn(u32) -> D,
) {
    put_over(job, out, t, s, job.targets.as_deref(), job.graph.n, dist);
}

/// [`put`] with the fold reading `dist` over `targets` (`None`: every vertex of `n`) instead
/// of the job's: a worker that gathered the targets' distances into a row folds it by column.
pub fn put_over<D: Dist>(
    job: &ApspJob,
    out: &mut RecordsOut<'_>,
    t: usize,
    s: &PathSummary,
    targets: Option<&[u32]>,
    n: usize,
    dist: impl Fn(u32) -> D,
) {
    let rec = out.record(t);
    s.to_words(&mut rec[..PathSummary::WORDS]);
    if let Some(r) = &job.reach {
        r.fold(targets, n, dist, &mut rec[PathSummary::WORDS..]);
    }
}

/// Write task `t`'s record from its summary and folded words (a GPU's).
pub fn put_words(out: &mut RecordsOut<'_>, t: usize, s: &PathSummary, words: &[u64]) {
    let rec = out.record(t);
    s.to_words(&mut rec[..PathSummary::WORDS]);
    rec[PathSummary::WORDS..].copy_from_slice(words);
}

/// Write the record of task `t`, whose u32 tree overflowed and was redone in u64 (`s`): the
/// reductions from a u64 Dijkstra of its own (such trees are rare: the width rule chose u32).
pub fn put_redone(job: &ApspJob, out: &mut RecordsOut<'_>, t: usize, s: &PathSummary) {
    if job.reach.is_none() {
        put::<u64>(job, out, t, s, |_| u64::INF);
        return;
    }
    let mut dj = super::dijkstra::Dijkstra::<u64>::new(job.graph.n);
    let dist = dj.run(&job.graph, job.sources[t]);
    put(job, out, t, s, |v| dist[v as usize]);
}

/// The summaries alone (the first [`PathSummary::WORDS`] words of each record), for the
/// writers that read records as [`PathSummary`].
pub fn summaries(job: &ApspJob, records: &Records) -> Records {
    if job.reach.is_none() {
        return records.clone();
    }
    let w = PathSummary::WORDS;
    Records {
        words: w,
        data: records
            .data
            .chunks_exact(records.words)
            .flat_map(|r| r[..w].iter().copied())
            .collect(),
    }
}

/// How `[verify]` compares two units' records: the sums as `f64` within a relative 1e-9 (a
/// device folds a source's targets in slices, so its sums are added in another order), every
/// other word exactly.
pub fn tolerance(job: &ApspJob) -> Tolerance {
    let Some(r) = &job.reach else {
        return Tolerance::exact();
    };
    let mut fields = PathSummary::fields();
    fields.extend(r.fields());
    Tolerance {
        fields,
        ..Tolerance::default()
    }
    .f64(1e-12, 1e-9)
}

/// Bytes of the files [`write`](fn@write) adds, at most (for the free-space check).
pub fn finish_bytes(job: &ApspJob) -> u64 {
    let Some(r) = &job.reach else { return 0 };
    // A u64 id or count is at most 20 digits, a sum at most 24 characters, plus a comma.
    let per_source =
        21 + 45 * r.radii.len() as u64 + 42 * r.nearest as u64 + 21 * r.isochrones.len() as u64;
    // isochrone_ids.csv: a count and every vertex id within a limit, at most 11 bytes each.
    let ids = if r.isochrone_ids {
        r.isochrones.len() as u64 * (64 + 11 * job.graph.n as u64)
    } else {
        0
    };
    // isochrones.geojson: an estimate, as a ring's length is known once drawn: up to 16
    // corners per arc of the graph, at most 65,536 per feature, 26 bytes each.
    let polygons = if r.isochrone_polygons.is_some() {
        let corners = (16 * job.graph.m() as u64).min(1 << 16);
        r.isochrones.len() as u64 * (256 + 26 * corners)
    } else {
        0
    };
    job.sources.len() as u64 * (per_source + ids + polygons) + 4096
}

/// Write `reach.csv`, `nearest.csv` and `isochrones.csv` (those asked) through `out` from the
/// records; return their totals for the report.
pub fn write(job: &ApspJob, records: &Records, out: &Out) -> Result<serde_json::Value> {
    let Some(r) = &job.reach else {
        return Ok(serde_json::Value::Null);
    };
    let base = job.graph.id_base;
    let folded: Vec<Folded> = (0..job.sources.len())
        .map(|t| Folded::from_words(r, &records.get(t)[PathSummary::WORDS..]))
        .collect();
    // Sources as outputs name them (a turn-restriction departure copy as its via vertex).
    let labels = crate::common::geo::source_labels(job.geo.geo.as_ref(), &job.sources);
    let source_id = |t: usize| labels[t] as u64 + base;
    let target_id = |c: u64| {
        job.targets
            .as_ref()
            .map_or(c, |ts| u64::from(ts[c as usize]))
            + base
    };
    let mut report = serde_json::Map::new();
    let sources = || Column::U64((0..folded.len()).map(source_id).collect());
    if !r.radii.is_empty() {
        let mut table = Table::new().with("source", sources());
        let mut total = Vec::with_capacity(r.radii.len());
        for (i, x) in r.radii.iter().enumerate() {
            let counts: Vec<u64> = folded.iter().map(|f| f.count[i]).collect();
            total.push(counts.iter().sum::<u64>());
            table = table.with(format!("count_{x}"), Column::U64(counts)).with(
                format!("sum_{x}"),
                Column::F64(folded.iter().map(|f| f.sum[i]).collect()),
            );
        }
        out.write_table("reach.csv", table)?;
        report.insert("reach_counts".into(), serde_json::json!(total));
    }
    if r.nearest > 0 {
        let listed = job.targets.is_some();
        let mut table = Table::new().with("source", sources());
        let mut found = 0u64;
        for i in 0..r.nearest {
            let near: Vec<Option<(u64, u64)>> =
                folded.iter().map(|f| f.near.get(i).copied()).collect();
            found += near.iter().flatten().count() as u64;
            table = table
                .with(
                    format!("target_{}", i + 1),
                    Column::MaybeU64(near.iter().map(|n| n.map(|(_, c)| target_id(c))).collect()),
                )
                .with(
                    format!("distance_{}", i + 1),
                    Column::MaybeU64(near.iter().map(|n| n.map(|(d, _)| d)).collect()),
                );
            if listed {
                table = table.with(
                    format!("index_{}", i + 1),
                    Column::MaybeU64(near.iter().map(|n| n.map(|(_, c)| c)).collect()),
                );
            }
        }
        out.write_table("nearest.csv", table)?;
        report.insert("nearest_found".into(), serde_json::json!(found));
    }
    if !r.isochrones.is_empty() {
        let mut table = Table::new().with("source", sources());
        let mut total = Vec::with_capacity(r.isochrones.len());
        for (j, x) in r.isochrones.iter().enumerate() {
            let counts: Vec<u64> = folded.iter().map(|f| f.iso[j]).collect();
            total.push(counts.iter().sum::<u64>());
            table = table.with(format!("within_{x}"), Column::U64(counts));
        }
        out.write_table("isochrones.csv", table)?;
        report.insert("isochrone_counts".into(), serde_json::json!(total));
        if r.isochrone_ids {
            write_isochrone_ids(job, r, &folded, &source_id, out)?;
            report.insert("isochrone_ids".into(), "isochrone_ids.csv".into());
        }
        if let Some(width) = r.isochrone_polygons {
            let coarsened = write_isochrone_polygons(job, r, width, &folded, &source_id, out)?;
            report.insert("isochrone_polygons".into(), "isochrones.geojson".into());
            report.insert("isochrone_width".into(), serde_json::json!(width));
            if coarsened > 0 {
                report.insert(
                    "isochrone_polygons_coarsened".into(),
                    serde_json::json!(coarsened),
                );
            }
        }
    }
    Ok(serde_json::Value::Object(report))
}

/// `isochrone_ids.csv`: `source,limit,count,vertices`, one line per source and limit in task
/// order, the ids (the input's numbering, ascending, space-separated) of every vertex within
/// the limit. Each source's tree is made again here, on the CPU (a Dijkstra over the job's
/// graph, sources in parallel a block at a time): the sweep keeps no distance rows, and the
/// sets are variable in length. Each set's size is checked against the count the run folded.
fn write_isochrone_ids(
    job: &ApspJob,
    r: &Reach,
    folded: &[Folded],
    source_id: &(dyn Fn(usize) -> u64 + Sync),
    out: &Out,
) -> Result<()> {
    use std::io::Write as _;
    let base = job.graph.id_base;
    out.write_stream("isochrone_ids.csv", |w| {
        let out = |e: std::io::Error| Error::Output(format!("isochrone_ids.csv: {e}"));
        w.write_all(b"source,limit,count,vertices\n").map_err(out)?;
        crate::common::write_in_order(
            w,
            "isochrone_ids.csv",
            job.sources.len(),
            || super::dijkstra::Dijkstra::<u64>::new(job.graph.n),
            |dj, t| {
                let dist = dj.run(&job.graph, job.sources[t]);
                let mut text = String::new();
                for (j, &limit) in r.isochrones.iter().enumerate() {
                    let within: Vec<usize> =
                        (0..dist.len()).filter(|&v| dist[v] <= limit).collect();
                    if within.len() as u64 != folded[t].iso[j] {
                        return Err(Error::Output(format!(
                            "isochrone_ids.csv: source {} has {} vertices within {limit}, \
                             its tree counted {} (a bug in tuccompi; please report it)",
                            source_id(t),
                            within.len(),
                            folded[t].iso[j]
                        )));
                    }
                    let _ = write!(text, "{},{limit},{},", source_id(t), within.len());
                    for (k, v) in within.iter().enumerate() {
                        if k > 0 {
                            text.push(' ');
                        }
                        let _ = write!(text, "{}", *v as u64 + base);
                    }
                    text.push('\n');
                }
                Ok(text)
            },
        )
    })
}

/// `isochrones.geojson`: one Feature per source and limit in task order, the reachable
/// network within the limit buffered by `width` ([`super::isochrone`]), from each source's tree
/// made again on the CPU as for [`write_isochrone_ids`], each tree's count within the limit
/// checked against the count the run folded. Returns how many polygons were drawn on cells
/// coarsened to fit [`super::isochrone::MAX_CELLS`] (each also logged).
fn write_isochrone_polygons(
    job: &ApspJob,
    r: &Reach,
    width: f64,
    folded: &[Folded],
    source_id: &(dyn Fn(usize) -> u64 + Sync),
    out: &Out,
) -> Result<usize> {
    use super::isochrone;
    use std::io::Write as _;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let name = "isochrones.geojson";
    let Some(geo) = job.geo.geo.as_ref() else {
        return Err(isochrone::no_places(
            "[apsp.reach] isochrone_polygons = true",
            &job.graph.name,
        ));
    };
    let canvas = isochrone::Canvas::new(&job.graph, geo, width);
    let coarsened = AtomicUsize::new(0);
    out.write_stream(name, |w| {
        let out = |e: std::io::Error| Error::Output(format!("{name}: {e}"));
        w.write_all(isochrone::collection_head(geo, width).as_bytes())
            .map_err(out)?;
        crate::common::write_in_order(
            w,
            name,
            job.sources.len(),
            || super::dijkstra::Dijkstra::<u64>::new(job.graph.n),
            |dj, t| {
                let s = job.sources[t];
                let dist = dj.run(&job.graph, s);
                let isos = canvas.of_tree(s, source_id(t), dist, &r.isochrones)?;
                let mut text = String::new();
                for (j, iso) in isos.iter().enumerate() {
                    if iso.vertices != folded[t].iso[j] {
                        return Err(Error::Output(format!(
                            "{name}: source {} has {} vertices within {}, its tree counted {} \
                             (a bug in tuccompi; please report it)",
                            iso.source, iso.vertices, iso.limit, folded[t].iso[j]
                        )));
                    }
                    if iso.drawn.coarsened {
                        coarsened.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            "{name}: the isochrone of source {} within {} covers more than \
                             {} cells of {}: drawn on cells of {:.1} (the feature's cell)",
                            iso.source,
                            iso.limit,
                            isochrone::MAX_CELLS,
                            width / 2.0,
                            iso.drawn.cell
                        );
                    }
                    if t > 0 || j > 0 {
                        text.push_str(",\n");
                    }
                    isochrone::feature(&mut text, iso, width, geo.coords.spherical);
                }
                Ok(text)
            },
        )?;
        w.write_all(b"\n]}\n").map_err(out)
    })?;
    Ok(coarsened.into_inner())
}

#[cfg(test)]
mod test {
    use super::*;

    fn reach(radii: &[u64], nearest: usize, iso: &[u64]) -> Reach {
        Reach {
            radii: radii.to_vec(),
            nearest,
            isochrones: iso.to_vec(),
            ..Reach::default()
        }
    }

    #[test]
    fn folds_counts_nearest_with_ties_by_column_and_isochrones() {
        let r = reach(&[5, 10], 3, &[4]);
        // Distances of vertices 0..6; vertex 5 unreachable.
        let d = [7u32, 3, 10, 3, 12, u32::MAX];
        let mut w = vec![0; r.words()];
        r.fold(None, d.len(), |v| d[v as usize], &mut w);
        let f = Folded::from_words(&r, &w);
        assert_eq!(f.count, vec![2, 4]);
        assert_eq!(f.sum, vec![2.0, 4.0]);
        assert_eq!(f.near, vec![(3, 1), (3, 3), (7, 0)]);
        assert_eq!(f.iso, vec![2]);
        // Fewer reachable than asked: the rest unset.
        let r = reach(&[], 4, &[]);
        let mut w = vec![0; r.words()];
        r.fold(Some(&[4, 5, 1]), d.len(), |v| d[v as usize], &mut w);
        assert_eq!(&w[4..], &[NONE, NONE, NONE, NONE]);
        assert_eq!(Folded::from_words(&r, &w).near, vec![(3, 2), (12, 0)]);
    }

    #[test]
    fn decays_as_pandana() {
        assert_eq!(Decay::Flat.factor(3, 4), 1.0);
        assert_eq!(Decay::Linear.factor(1, 4), 0.75);
        assert_eq!(Decay::Exp.factor(4, 4), (-1f64).exp());
    }

    #[test]
    fn refuses_empty_zero_and_long_lists() {
        let e = |o: ReachOptions| Reach::prepare(Some(o), 3, None).unwrap_err().to_string();
        assert!(e(ReachOptions::default()).contains("asks for nothing"));
        let zero = ReachOptions {
            radii: vec![0],
            ..ReachOptions::default()
        };
        assert!(e(zero).contains("radii contains 0"));
        let long = ReachOptions {
            isochrones: (1..=17).collect(),
            ..ReachOptions::default()
        };
        assert!(e(long).contains("at most 16"));
    }
}
