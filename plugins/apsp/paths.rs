//! Shortest paths beyond distances: `[apsp] predecessors = true` writes `predecessors.npy`, and
//! `[apsp] paths = true` (with `[apsp] targets`) writes each (source, target) pair's path as
//! `paths.csv`, plus `paths.geojson` for inputs with longitude/latitude places.
//!
//! **Predecessors from distances.** No algorithm here keeps parents: PHAST's sweep pulls over
//! the hierarchy's arcs, whose shortcuts store no middle vertex. Instead, after any tree
//! (Dijkstra, PHAST on the CPU, any GPU algorithm), a vertex `v`'s predecessor is read off the
//! distances and the **original** graph's in-arcs: an in-neighbour `u` with
//! `d(u) + w(u, v) = d(v)` (a *tight* arc). Among tight arcs the first of positive weight (in
//! the in-arcs' order, by tail id) is taken: it strictly lowers the distance, so these choices
//! alone cannot close a cycle. A vertex whose only tight in-arcs weigh 0 (it sits in a
//! zero-weight component at its own distance) gets its predecessor from a breadth-first search
//! over tight zero-weight arcs that starts at the vertices already settled (the source, and
//! every vertex with a positive tight in-arc): a vertex is given a predecessor only once that
//! predecessor is itself in the tree, so the result is a tree rooted at the source, however
//! many zero-weight cycles the graph has. The choice depends on the distances alone, so every
//! algorithm and every unit gives the same predecessors, and a resumed run the same bytes.
//! Cost: O(n + m) per tree, no change to the hierarchy; the GPU half runs the first pass as
//! the `paths_pred` kernel (`gpu/paths.rs`) and the search, when a tree needs it, on the host.
//!
//! **Paths of an origin-destination run as `paths.csv`.** The union of one source's paths to
//! its targets can hold every vertex, so no fixed width smaller than `n` bounds it: each task
//! writes its whole predecessor row (u32, internal ids) into the hidden staging file
//! `.paths-trees.npy`, a bulk output like any other (written at its offset, journaled,
//! resumed), and `finish` walks every target back to its source from it. The file costs `4·n`
//! bytes per source on disk while the run lasts (1.6 MB a source on osm-moscow) and is never
//! committed. Each walk is checked: its arcs exist and their weights sum to the pair's distance
//! exactly.
//!
//! **The compact form** (`[apsp] paths_format = "npy"`, [`PathsFormat`]) writes the same
//! walks as two arrays instead of text: `path_offsets.npy` (u64, pairs + 1 entries) and
//! `path_vertices.npy` (the ids in the input's numbering, u32 when they fit, else u64), pair
//! `i` (sources major, `paths.csv`'s row order) being `vertices[offsets[i]..offsets[i + 1]]`,
//! empty when unreachable. No geometry is written in this form. Here the **workers** walk: right
//! after a task's tree ([`Tracer`], whose predecessor row is in memory), its targets are walked
//! and checked (arcs exist, weights sum to the pair's distance: an error there, as `finish`'s
//! walk would be) and only the walked ids are staged, as a [`RaggedRows`] ([`WALKED`]): the ids
//! appended to a hidden data file (`.paths-data.<k>`, one per process and run) at a place
//! reserved with an atomic counter, and the task's row of the index `.paths-index.npy` (a
//! bulk output, journaled and resumed like the distances: data file, start, checksum, and each
//! target's path length, 0 = unreachable). The data is synced before the chunk is journaled
//! ([`chunk_done`], at the end of each worker's chunk). A GPU unit's rows are
//! finished and walked a launch at a time in parallel (`gpu/paths.rs`). `finish` then writes
//! the offsets from the lengths and copies each task's ids, checked against the index's
//! checksum, to its place in `path_vertices.npy` (known from the lengths), in parallel. Disk
//! while the run lasts: the paths' ids once (about as much as a predecessor row on osm-moscow,
//! 1,000 targets), not read back but once. O(n / 64 + the paths' vertices) a tree in the
//! worker, O(pairs + path vertices) in `finish`.

use super::ApspJob;
use crate::common::Dist;
use crate::graph::Csr;
use rayon::prelude::*;
use serde::Deserialize;
use std::fmt::Write as _;
use std::io::Write;
use std::os::unix::fs::FileExt;
use tuccompi::sink::{NpyRows, NpyType, Out, RaggedRow, RaggedRows};
use tuccompi::{Error, Result};

/// The mark of "no predecessor" in `predecessors.npy` (the source itself, and vertices the
/// source does not reach), as scipy's `shortest_path(..., return_predecessors=True)` marks it.
pub const NO_PREDECESSOR: i64 = -9999;

/// "No predecessor" in a predecessor row of internal ids (source, unreachable).
pub const NONE: u32 = u32::MAX;

/// A reached vertex whose tight in-arcs all weigh 0: its predecessor comes from the search over
/// zero-weight arcs ([`settle_zero`]).
pub const PENDING: u32 = u32::MAX - 1;

/// The staging-folder name of the whole predecessor rows `paths.csv` is walked from: hidden,
/// so the commit leaves it behind.
pub const TREES: &str = ".paths-trees.npy";

/// The staging name of the compact form's walked paths: `.paths-index.npy` (a bulk output:
/// each task's data file, start, checksum and per-target path lengths) and the data files
/// `.paths-data.<k>` ([`RaggedRows`]); hidden, so the commit leaves them behind.
pub const WALKED: &str = ".paths";

/// `[apsp] paths_format`: how `[apsp] paths = true` writes the pairs' paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "String")]
pub enum PathsFormat {
    /// `paths.csv` (and `paths.geojson` for inputs with longitude/latitude places): text.
    #[default]
    Csv,
    /// `path_offsets.npy` and `path_vertices.npy`: offsets plus vertex ids (module doc).
    Npy,
}

impl TryFrom<String> for PathsFormat {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.as_str() {
            "csv" => Ok(PathsFormat::Csv),
            "npy" => Ok(PathsFormat::Npy),
            _ => Err(format!(
                "paths_format = {s:?}: use \"csv\" (paths.csv, the default) or \"npy\" \
                 (path_offsets.npy and path_vertices.npy)"
            )),
        }
    }
}

/// The compact form's offsets file: u64, pairs + 1 entries.
pub const OFFSETS: &str = "path_offsets.npy";

/// The compact form's vertices file: the paths' ids, concatenated.
pub const VERTICES: &str = "path_vertices.npy";

/// The original graph's arcs by head: `tails[offsets[v]..offsets[v+1]]` are the tails of the
/// arcs into `v` (sorted by tail), `weights` theirs.
#[derive(Debug, Clone)]
pub struct InArcs {
    /// Row offsets, length `n + 1`.
    pub offsets: Vec<u32>,
    /// Arc tails.
    pub tails: Vec<u32>,
    /// Arc weights.
    pub weights: Vec<u32>,
}

impl InArcs {
    /// The in-arcs of `g`. O(n + m).
    pub fn of(g: &Csr) -> InArcs {
        let n = g.n;
        let mut offsets = vec![0u32; n + 1];
        for &v in g.targets.iter() {
            offsets[v as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut next: Vec<u32> = offsets[..n].to_vec();
        let mut tails = vec![0u32; g.m()];
        let mut weights = vec![0u32; g.m()];
        // Tails in increasing order: the out-arcs are visited by tail.
        for u in 0..n {
            for e in g.offsets[u] as usize..g.offsets[u + 1] as usize {
                let v = g.targets[e] as usize;
                let at = next[v] as usize;
                tails[at] = u as u32;
                weights[at] = g.weights[e];
                next[v] += 1;
            }
        }
        InArcs {
            offsets,
            tails,
            weights,
        }
    }

    /// Arcs into `v` as `(tails, weights)`.
    #[inline]
    pub fn of_head(&self, v: usize) -> (&[u32], &[u32]) {
        let (a, b) = (self.offsets[v] as usize, self.offsets[v + 1] as usize);
        (&self.tails[a..b], &self.weights[a..b])
    }
}

/// The first pass of [`predecessors`] for one vertex `v` of distance `dv` (finite, not the
/// source): the first positive tight in-arc's tail, else [`PENDING`] when a zero-weight tight
/// arc exists, else [`NONE`] (no tight arc: the distances are not a shortest-path tree's).
#[inline]
fn tight<D: Dist>(arcs: &InArcs, dist: &[D], v: usize, dv: u64) -> u32 {
    let (tails, weights) = arcs.of_head(v);
    let mut zero = false;
    for (&u, &w) in tails.iter().zip(weights) {
        let du = dist[u as usize];
        if du == D::INF || du.to_u64() + w as u64 != dv {
            continue;
        }
        if w > 0 {
            return u;
        }
        zero = true;
    }
    if zero {
        PENDING
    } else {
        NONE
    }
}

/// Each vertex's predecessor (internal id) on a shortest path from `s`, from the tree's
/// distances `dist` (`D::INF` = unreachable), into `pred`: [`NONE`] for `s` and unreachable
/// vertices. `queue` is scratch. See the module's documentation for the rule and why it is
/// acyclic. O(n + m).
pub fn predecessors<D: Dist>(
    g: &Csr,
    arcs: &InArcs,
    s: u32,
    dist: &[D],
    pred: &mut Vec<u32>,
    queue: &mut Vec<u32>,
) -> Result<()> {
    pred.clear();
    pred.resize(g.n, NONE);
    let mut pending = false;
    for (v, &d) in dist.iter().enumerate() {
        if d == D::INF || v == s as usize {
            continue;
        }
        let p = tight(arcs, dist, v, d.to_u64());
        if p == NONE {
            return Err(not_a_tree(g, s, v));
        }
        pending |= p == PENDING;
        pred[v] = p;
    }
    if pending {
        settle_zero(g, arcs, s, dist, pred, queue)?;
    }
    Ok(())
}

/// Give every [`PENDING`] vertex of `pred` a predecessor by a breadth-first search over tight
/// zero-weight arcs from the vertices already settled: a vertex is attached only to a vertex
/// already in the tree, so no cycle can form.
pub fn settle_zero<D: Dist>(
    g: &Csr,
    arcs: &InArcs,
    s: u32,
    dist: &[D],
    pred: &mut [u32],
    queue: &mut Vec<u32>,
) -> Result<()> {
    queue.clear();
    // Entry points: pending vertices with a settled zero-weight tight in-neighbour (settled:
    // reached and not pending; the source's entry NONE counts as settled).
    for v in 0..g.n {
        if pred[v] != PENDING {
            continue;
        }
        let (tails, weights) = arcs.of_head(v);
        let entry = tails.iter().zip(weights).find(|&(&u, &w)| {
            w == 0
                && dist[u as usize] == dist[v]
                && (pred[u as usize] != PENDING)
                && (pred[u as usize] != NONE || u == s)
        });
        if let Some((&u, _)) = entry {
            pred[v] = u;
            queue.push(v as u32);
        }
    }
    let mut head = 0;
    while head < queue.len() {
        let u = queue[head] as usize;
        head += 1;
        for e in g.offsets[u] as usize..g.offsets[u + 1] as usize {
            let v = g.targets[e] as usize;
            if g.weights[e] == 0 && pred[v] == PENDING && dist[v] == dist[u] {
                pred[v] = u as u32;
                queue.push(v as u32);
            }
        }
    }
    match pred.iter().position(|&p| p == PENDING) {
        Some(v) => Err(not_a_tree(g, s, v)),
        None => Ok(()),
    }
}

fn not_a_tree(g: &Csr, s: u32, v: usize) -> Error {
    Error::Output(format!(
        "predecessors of source {}: vertex {} has a distance no in-arc explains (a bug in \
         tuccompi; please report it with the input)",
        s as u64 + g.id_base,
        v as u64 + g.id_base
    ))
}

/// What a run writes about paths: `predecessors.npy`, the hidden rows `paths.csv` is walked
/// from, and the graph's in-arcs both are computed over.
#[derive(Debug)]
pub struct PathsJob {
    /// The original graph's in-arcs.
    pub arcs: InArcs,
    /// `predecessors.npy` (`[apsp] predecessors`): sources x targets (or n), input numbering.
    pub predecessors: Option<NpyRows>,
    /// The rows `finish` writes the paths from (`[apsp] paths`), a bulk output: for
    /// `paths.csv`, [`TREES`] (sources x n predecessor rows, internal ids); for the compact
    /// form, the index of the paths the workers walked ([`WALKED`], `compact`'s).
    pub trees: Option<NpyRows>,
    /// The compact form's walked paths (the data `trees`' index rows point into).
    pub compact: Option<RaggedRows>,
    /// How `finish` writes the paths from the trees.
    pub format: PathsFormat,
    /// The compact form's id type (as `vertex_type` chooses it).
    pub ids: NpyType,
}

/// Which of `[apsp] predecessors` / `paths` a run asks for, checked: paths need targets and fit
/// `paths.csv`'s limit (the compact form has none but the disk's; `paths_format` alone
/// changes nothing). `None` when neither is asked for.
pub fn prepare(
    options: &super::ApspOptions,
    g: &Csr,
    sources: usize,
    targets: Option<&[u32]>,
) -> Result<Option<PathsJob>> {
    let format = options.paths_format.unwrap_or_default();
    if !options.predecessors && !options.paths {
        return Ok(None);
    }
    let mut compact = None;
    let trees = if options.paths {
        let Some(ts) = targets else {
            return Err(Error::Config(
                "[apsp] paths = true writes the path of each (source, target) pair: set [apsp] \
                 targets (the vertices to route to), or ask for whole trees with [apsp] \
                 predecessors = true"
                    .into(),
            ));
        };
        let pairs = sources as u64 * ts.len() as u64;
        if format == PathsFormat::Csv && pairs > super::od::MAX_CSV_PAIRS {
            return Err(Error::Config(format!(
                "[apsp] paths = true: {sources} sources x {} targets = {pairs} pairs, more than \
                 paths.csv takes ({}); set [apsp] paths_format = \"npy\" (path_offsets.npy \
                 and path_vertices.npy, no limit), ask for fewer sources or targets, or for \
                 whole trees with [apsp] predecessors = true",
                ts.len(),
                super::od::MAX_CSV_PAIRS
            )));
        }
        if format == PathsFormat::Npy {
            let walked = RaggedRows::new(WALKED, ts.len(), vertex_type(g).size());
            let index = walked.index(sources)?;
            compact = Some(walked);
            Some(index)
        } else {
            Some(NpyRows::new(TREES, sources, g.n, NpyType::U32)?)
        }
    } else {
        None
    };
    let predecessors = if options.predecessors {
        let cols = targets.map_or(g.n, <[u32]>::len);
        Some(NpyRows::new("predecessors.npy", sources, cols, id_type(g))?)
    } else {
        None
    };
    Ok(Some(PathsJob {
        arcs: InArcs::of(g),
        predecessors,
        trees,
        compact,
        format,
        ids: vertex_type(g),
    }))
}

/// `path_vertices.npy`'s element type: u32 when every id of the input's numbering fits, else
/// u64.
fn vertex_type(g: &Csr) -> NpyType {
    if (g.n.max(1) as u64 - 1 + g.id_base) <= u32::MAX as u64 {
        NpyType::U32
    } else {
        NpyType::U64
    }
}

/// `predecessors.npy`'s element type: int32 as scipy's, int64 when the ids do not fit.
fn id_type(g: &Csr) -> NpyType {
    if (g.n as u64 + g.id_base) <= i32::MAX as u64 {
        NpyType::I32
    } else {
        NpyType::I64
    }
}

/// Bytes of the bulk rows the paths write (`predecessors.npy` and the hidden trees, or the
/// compact form's index and an estimate of its walked paths' data, as [`text_bytes`]'s).
pub fn rows_bytes(job: Option<&PathsJob>) -> u64 {
    job.map_or(0, |p| {
        let walked = match (&p.compact, &p.trees) {
            (Some(c), Some(index)) => {
                let n = p.arcs.offsets.len().saturating_sub(1);
                compact_ids_bytes(p, index.rows() as u64 * c.cols() as u64, n)
            }
            _ => 0,
        };
        p.predecessors.as_ref().map_or(0, NpyRows::bytes)
            + p.trees.as_ref().map_or(0, NpyRows::bytes)
            + walked
    })
}

/// An estimate of the bytes of the paths `finish` writes, a pair's path taken as `2·√n`
/// vertices: `paths.csv` (8 bytes a vertex, 48 a row) and `paths.geojson` (`geo`: an input with
/// places; 24 bytes a vertex), or the compact form (the vertices' width each, 8 bytes of
/// offset a pair).
pub fn text_bytes(
    job: Option<&PathsJob>,
    sources: usize,
    targets: Option<&[u32]>,
    n: usize,
    geo: bool,
) -> u64 {
    let Some(p) = job.filter(|p| p.trees.is_some()) else {
        return 0;
    };
    let Some(ts) = targets else { return 0 };
    let pairs = sources as u64 * ts.len() as u64;
    let hops = hops_estimate(n);
    match p.format {
        PathsFormat::Csv => pairs * (48 + 8 * hops + if geo { 24 * hops + 80 } else { 0 }),
        PathsFormat::Npy => 2 * 128 + 8 * (pairs + 1) + compact_ids_bytes(p, pairs, n),
    }
}

/// The estimates' length of a pair's path in a graph of `n` vertices: `2·√n` hops.
fn hops_estimate(n: usize) -> u64 {
    2 * (n as f64).sqrt() as u64 + 2
}

/// The compact form's ids of `pairs` paths (the vertices' width each), estimated.
fn compact_ids_bytes(p: &PathsJob, pairs: u64, n: usize) -> u64 {
    pairs * p.ids.size() as u64 * (hops_estimate(n) + 1)
}

/// A worker's path state: scratch rows, reused across trees.
#[derive(Debug, Default)]
pub struct Tracer {
    pred: Vec<u32>,
    queue: Vec<u32>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    /// The compact form's walks: buffers, the walked ids, the per-target counts.
    walker: TreeWalker,
    ids: Vec<u8>,
    counts: Vec<u64>,
}

/// The end of a worker's chunk: the compact form's walked paths synced, before the runtime
/// journals the chunk (whose index rows name them). Every worker that writes paths through a
/// [`Tracer`] calls it at the end of `Worker::run`.
pub fn chunk_done(job: &ApspJob) -> Result<()> {
    match job.paths.as_ref().and_then(|p| p.compact.as_ref()) {
        Some(c) => c.sync_data(),
        None => Ok(()),
    }
}

impl Tracer {
    /// Task `t`'s predecessors from its whole distance row `dist` (vertex ids), written into
    /// the job's path outputs; nothing when it has none. `dist` must be exact (not an
    /// overflowed u32 tree).
    pub fn tree<D: Dist>(&mut self, job: &ApspJob, t: usize, dist: &[D]) -> Result<()> {
        let Some(p) = &job.paths else { return Ok(()) };
        predecessors(
            &job.graph,
            &p.arcs,
            job.sources[t],
            dist,
            &mut self.pred,
            &mut self.queue,
        )?;
        self.write(job, t, |_, v| {
            let d = dist[v as usize];
            (d != D::INF).then(|| d.to_u64())
        })
    }

    /// The predecessor row being filled (for a GPU unit, whose first pass runs on the device).
    pub fn row(&mut self) -> &mut Vec<u32> {
        &mut self.pred
    }

    /// Finish a row the device's first pass filled ([`NONE`], [`PENDING`] or a tail): settle
    /// its zero-weight components with the distances `dist` (read only when some are pending)
    /// and write it as task `t`'s. The compact form's walks are checked against task `t`'s
    /// row of distances to the targets, which must be written already.
    pub fn finish_device_row<D: Dist>(
        &mut self,
        job: &ApspJob,
        t: usize,
        dist: impl FnOnce() -> Result<Vec<D>>,
    ) -> Result<()> {
        let Some(p) = &job.paths else { return Ok(()) };
        if self.pred.contains(&PENDING) {
            let d = dist()?;
            settle_zero(
                &job.graph,
                &p.arcs,
                job.sources[t],
                &d,
                &mut self.pred,
                &mut self.queue,
            )?;
        }
        match (&p.compact, &job.targets, &job.rows) {
            (Some(_), Some(ts), Some(rows)) => {
                debug_assert_eq!(rows.cols(), ts.len());
                let row = rows.read_row(t)?;
                let wide = rows.ty() != NpyType::U32;
                self.write(job, t, |i, _| row_distance(&row, i, wide))
            }
            _ => self.write(job, t, |_, _| None),
        }
    }

    /// Write the predecessor row in `self.pred` as task `t`'s rows; `dist(i, v)` is the
    /// distance to target `i`, vertex `v` (`None` = unreachable), for the compact form's check.
    fn write(
        &mut self,
        job: &ApspJob,
        t: usize,
        dist: impl Fn(usize, u32) -> Option<u64>,
    ) -> Result<()> {
        let Some(p) = &job.paths else { return Ok(()) };
        // (Without distance rows `finish` writes no paths: none are walked.)
        match (&p.compact, &p.trees, &job.targets) {
            (Some(c), Some(index), Some(ts)) if job.rows.is_some() => {
                walk_targets(
                    job,
                    &p.arcs,
                    &self.pred,
                    t,
                    ts,
                    p.ids,
                    dist,
                    &mut self.walker,
                    &mut self.ids,
                    &mut self.counts,
                )?;
                c.write(index, t, &self.counts, &self.ids)?;
            }
            (None, Some(rows), _) => rows.write(t, &self.pred)?,
            _ => {}
        }
        if let Some(rows) = &p.predecessors {
            let base = job.graph.id_base as i64;
            let id = |v: u32| {
                if v == NONE {
                    NO_PREDECESSOR
                } else {
                    v as i64 + base
                }
            };
            let pred = &self.pred;
            let cols = |f: &mut dyn FnMut(u32)| match &job.targets {
                None => pred.iter().for_each(|&v| f(v)),
                Some(ts) => ts.iter().for_each(|&v| f(pred[v as usize])),
            };
            if rows.ty() == NpyType::I32 {
                self.i32s.clear();
                cols(&mut |v| self.i32s.push(id(v) as i32));
                rows.write(t, &self.i32s)?;
            } else {
                self.i64s.clear();
                cols(&mut |v| self.i64s.push(id(v)));
                rows.write(t, &self.i64s)?;
            }
        }
        Ok(())
    }
}

/// The weight of arc `u -> v` of `g` (out-arcs are sorted by head).
fn arc_weight(g: &Csr, u: u32, v: u32) -> Option<u32> {
    let (a, b) = (
        g.offsets[u as usize] as usize,
        g.offsets[u as usize + 1] as usize,
    );
    let heads = &g.targets[a..b];
    heads.binary_search(&v).ok().map(|i| g.weights[a + i])
}

/// Entry `i` of a distance row's little-endian bytes (`wide`: u64, else u32); `None` for the
/// type's maximum (unreachable).
fn row_distance(row: &[u8], i: usize, wide: bool) -> Option<u64> {
    if wide {
        let d = u64::from_le_bytes(row[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        (d != u64::MAX).then_some(d)
    } else {
        let d = u32::from_le_bytes(row[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        (d != u32::MAX).then_some(u64::from(d))
    }
}

/// Read row `t` of a bulk file (its bytes, as written) into `buf`.
fn read_row(rows: &NpyRows, t: usize, buf: &mut Vec<u8>) -> Result<()> {
    let bytes = rows.read_row(t)?;
    buf.clear();
    buf.extend_from_slice(&bytes);
    Ok(())
}

/// One pair's walk: the path's vertices (internal ids, source first) into `path`, its length
/// returned; `None` when the target is unreachable (`pred` has no entry for it; `path` left
/// empty).
fn walk(g: &Csr, pred: &[u32], s: u32, target: u32, path: &mut Vec<u32>) -> Result<Option<u64>> {
    path.clear();
    if target != s && pred[target as usize] == NONE {
        return Ok(None);
    }
    let mut v = target;
    let mut length = 0u64;
    path.push(v);
    while v != s {
        let u = pred[v as usize];
        let w = (u != NONE).then(|| arc_weight(g, u, v)).flatten();
        let Some(w) = w.filter(|_| path.len() <= g.n) else {
            return Err(Error::Output(format!(
                "{TREES}: the walk from vertex {} back to source {} breaks at vertex {} (a bug \
                 in tuccompi, or a file changed by hand; start over with --restart)",
                target as u64 + g.id_base,
                s as u64 + g.id_base,
                v as u64 + g.id_base
            )));
        };
        length += w as u64;
        v = u;
        path.push(v);
    }
    path.reverse();
    Ok(Some(length))
}

/// One pair as the writers see it: source and target in the input's numbering, the distance
/// (`None` = unreachable) and the path (internal ids, source first; empty when unreachable),
/// and whether it is the run's first pair.
struct PairOf<'a> {
    src: u64,
    tgt: u64,
    d: Option<u64>,
    path: &'a [u32],
    first: bool,
}

/// A thread's buffers for walking one source's pairs after another.
#[derive(Default)]
struct Walker {
    bytes: Vec<u8>,
    pred: Vec<u32>,
    dist: Vec<u8>,
    path: Vec<u32>,
}

/// Task `t`'s pairs in target order, walked from its finished predecessor and distance rows,
/// each handed to `f`. Every path's arc weights sum to its pair's distance, or this is an
/// error. O(n + the pairs' path vertices · log(degree)).
fn source_pairs(
    job: &ApspJob,
    trees: &NpyRows,
    targets: &[u32],
    dist_rows: &NpyRows,
    t: usize,
    wk: &mut Walker,
    mut f: impl FnMut(PairOf<'_>),
) -> Result<()> {
    let g = &job.graph;
    let base = g.id_base;
    read_row(trees, t, &mut wk.bytes)?;
    wk.pred.clear();
    wk.pred.extend(
        wk.bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))),
    );
    read_row(dist_rows, t, &mut wk.dist)?;
    let wide = dist_rows.ty() != NpyType::U32;
    let s = job.sources[t];
    // Inputs with turn-restriction copies name them by their junctions.
    let geo = job.geo.geo.as_ref().filter(|g| !g.departure.is_empty());
    let path = &mut wk.path;
    for (i, &target) in targets.iter().enumerate() {
        let d = row_distance(&wk.dist, i, wide);
        let length = walk(g, &wk.pred, s, target, path)?;
        // Shown in road vertices: a turn-restriction copy as its via vertex, once.
        if let Some(geo) = geo {
            for v in path.iter_mut() {
                *v = geo.road_vertex(*v);
            }
            path.dedup();
        }
        let road = |v: u32| geo.map_or(v, |g| g.road_vertex(v));
        let (src, tgt) = (road(s) as u64 + base, road(target) as u64 + base);
        if length != d {
            return Err(Error::Output(format!(
                "paths: the path from {src} to {tgt} has length {length:?}, its distance is \
                 {d:?} (a bug in tuccompi; please report it)"
            )));
        }
        f(PairOf {
            src,
            tgt,
            d,
            path,
            first: t == 0 && i == 0,
        });
    }
    Ok(())
}

/// Every pair's text (`f`) into `w` in row order: sources walked in parallel, a few per
/// thread at a time, their texts written in order (memory: one block of sources' text).
fn write_pairs(
    job: &ApspJob,
    trees: &NpyRows,
    targets: &[u32],
    dist_rows: &NpyRows,
    w: &mut dyn Write,
    name: &str,
    f: impl Fn(&mut String, PairOf<'_>) + Sync,
) -> Result<()> {
    crate::common::write_in_order(w, name, job.sources.len(), Walker::default, |wk, t| {
        let mut text = String::new();
        source_pairs(job, trees, targets, dist_rows, t, wk, |p| f(&mut text, p))?;
        Ok(text)
    })
}

/// Write the paths from the finished predecessor rows and distance rows: `paths.csv` (and
/// `paths.geojson` for inputs with longitude/latitude places), or the compact form.
pub fn write(job: &ApspJob, out: &Out) -> Result<()> {
    let Some(p) = &job.paths else { return Ok(()) };
    if let Some(rows) = &p.predecessors {
        rows.sync()?;
    }
    let (Some(trees), Some(targets), Some(dist_rows)) = (&p.trees, &job.targets, &job.rows) else {
        return Ok(());
    };
    if let Some(walked) = &p.compact {
        return write_compact(job, p, walked, trees, out);
    }
    trees.sync()?;
    let base = job.graph.id_base;
    out.write_stream("paths.csv", |w| {
        writeln!(w, "source,target,distance,hops,path")
            .map_err(|e| Error::Output(format!("paths.csv: {e}")))?;
        write_pairs(job, trees, targets, dist_rows, w, "paths.csv", |line, p| {
            match p.d {
                None => {
                    let _ = write!(line, "{},{},,,", p.src, p.tgt);
                }
                Some(d) => {
                    let _ = write!(line, "{},{},{d},{},", p.src, p.tgt, p.path.len() - 1);
                    for (k, &v) in p.path.iter().enumerate() {
                        if k > 0 {
                            line.push(' ');
                        }
                        let _ = write!(line, "{}", v as u64 + base);
                    }
                }
            }
            line.push('\n');
        })
    })?;
    let places = job.geo.geo.as_ref().filter(|geo| geo.coords.spherical);
    if let Some(geo) = places {
        let shapes = super::isochrone::ArcShapes::of(geo);
        out.write_stream("paths.geojson", |w| {
            let out = |e: std::io::Error| Error::Output(format!("paths.geojson: {e}"));
            w.write_all(b"{\"type\":\"FeatureCollection\",\"features\":[\n")
                .map_err(out)?;
            write_pairs(
                job,
                trees,
                targets,
                dist_rows,
                w,
                "paths.geojson",
                |text, p| {
                    if !p.first {
                        text.push_str(",\n");
                    }
                    feature(text, geo, &shapes, p.src, p.tgt, p.d, p.path);
                },
            )?;
            w.write_all(b"\n]}\n").map_err(out)
        })?;
    }
    Ok(())
}

/// The `.npy` header of a 1-D array of `len` elements of `ty` (u32 or u64), from npyz.
pub fn header_1d(ty: NpyType, len: u64) -> Result<Vec<u8>> {
    fn of<T: npyz::AutoSerialize>(len: u64) -> std::io::Result<Vec<u8>> {
        use npyz::WriterBuilder;
        let mut bytes = Vec::new();
        // Dropped before any element: only the header is written.
        let _ = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(&[len])
            .writer(&mut bytes)
            .begin_nd()?;
        Ok(bytes)
    }
    let bytes = if ty == NpyType::U32 {
        of::<u32>(len)
    } else {
        of::<u64>(len)
    };
    bytes.map_err(|e| Error::Output(format!("npy header: {e}")))
}

/// A vertex whose path from the source is already written in a walk's ids: it is
/// `ids[start..=at]` (a prefix of an earlier pair's path; in ids, not bytes).
#[derive(Debug, Clone, Copy)]
struct Known {
    /// The entry of `v`'s predecessor ([`NONE`] for the source), always an earlier one.
    parent: u32,
    /// The weight of the arc from the predecessor (set by the arcs' check).
    weight: u32,
    start: usize,
    at: usize,
}

/// A worker's buffers for the compact form's walks ([`walk_targets`]).
#[derive(Debug, Default)]
struct TreeWalker {
    /// Per vertex: its predecessor (low 32 bits) and its entry of `known` + 1 (high 32 bits;
    /// 0 while its path is not written), side by side so that a step of a walk reads one
    /// place.
    node: Vec<u64>,
    /// The vertices of the source's paths, each after its predecessor.
    known: Vec<Known>,
    /// The same vertices as bits by id, for the arcs' check in id order.
    marks: Vec<u64>,
    /// Per entry of `known`: its path's length.
    length: Vec<u64>,
    /// Per target: its entry of `known` + 1, 0 when unreachable.
    ends: Vec<u32>,
    /// The walk back to the first known vertex.
    stack: Vec<u32>,
}

/// Task `t`'s pairs in target order in the compact form, walked from its predecessor row
/// `pred` (internal ids): each path's vertex count into `counts` (0 when unreachable) and the
/// ids (input numbering, little-endian in `ty`'s width) into `ids`. One source's paths form a
/// tree: each walk goes back only to the first vertex an earlier walk wrote, and copies that
/// vertex's path (a prefix of the earlier one) before its own new vertices, so the predecessor
/// lookups are one per vertex of the paths' union and the rest is copying. Then the union's
/// arcs are checked in vertex order (the in-arcs read in sequence, not at random): each exists,
/// and every path's weights, summed once per vertex along the tree, equal its pair's distance
/// `dist(i, target)`. O(n / 64 + the union's vertices · in-degree + the paths' vertices).
#[allow(clippy::too_many_arguments)]
fn walk_targets(
    job: &ApspJob,
    arcs: &InArcs,
    pred: &[u32],
    t: usize,
    targets: &[u32],
    ty: NpyType,
    dist: impl Fn(usize, u32) -> Option<u64>,
    wk: &mut TreeWalker,
    ids: &mut Vec<u8>,
    counts: &mut Vec<u64>,
) -> Result<()> {
    let g = &job.graph;
    let base = g.id_base;
    wk.node.clear();
    wk.node.extend(pred.iter().map(|&p| p as u64));
    let pred = |node: u64| node as u32;
    let entry = |node: u64| (node >> 32) as u32;
    let s = job.sources[t];
    let broken = |target: u32, v: u32| {
        Error::Output(format!(
            "paths: the walk from vertex {} back to source {} breaks at vertex {} (a bug in \
             tuccompi; please report it with the input)",
            target as u64 + base,
            s as u64 + base,
            v as u64 + base
        ))
    };
    // Inputs with turn-restriction copies name them by their junctions, once.
    let geo = job.geo.geo.as_ref().filter(|g| !g.departure.is_empty());
    let road = |v: u32| geo.map_or(v, |g| g.road_vertex(v)) as u64 + base;
    // The ids are written as they go, little-endian in `w` bytes (a u32 is a u64's first 4).
    let w = ty.size();
    wk.marks.clear();
    wk.marks.resize(g.n.div_ceil(64), 0);
    wk.known.clear();
    ids.clear();
    wk.ends.clear();
    counts.clear();
    // The walks: ids and the union, in target order.
    for &target in targets {
        let start = ids.len() / w;
        let tn = wk.node[target as usize];
        if target != s && entry(tn) == 0 && pred(tn) == NONE {
            wk.ends.push(0);
            counts.push(0);
            continue;
        }
        // Back to the first known vertex, or to the source (then the prefix is empty).
        wk.stack.clear();
        let mut v = target;
        let mut parent = NONE;
        loop {
            let node = wk.node[v as usize];
            if entry(node) > 0 {
                parent = entry(node) - 1;
                break;
            }
            wk.stack.push(v);
            if v == s {
                break;
            }
            v = pred(node);
            if v == NONE || wk.stack.len() >= g.n {
                return Err(broken(target, *wk.stack.last().expect("pushed")));
            }
        }
        if parent != NONE {
            let k = wk.known[parent as usize];
            ids.extend_from_within(w * k.start..w * (k.at + 1));
        }
        for &v in wk.stack.iter().rev() {
            let id = road(v).to_le_bytes();
            if ids.len() == w * start || ids[ids.len() - w..] != id[..w] {
                ids.extend_from_slice(&id[..w]);
            }
            wk.known.push(Known {
                parent,
                weight: 0,
                start,
                at: ids.len() / w - 1,
            });
            parent = wk.known.len() as u32 - 1;
            wk.node[v as usize] |= (parent as u64 + 1) << 32;
            wk.marks[v as usize / 64] |= 1 << (v % 64);
        }
        wk.ends.push(parent + 1);
        counts.push((ids.len() / w - start) as u64);
    }
    // Each union vertex's arc from its predecessor, in vertex order.
    for (word, &bits) in wk.marks.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            let v = (word * 64) as u32 + bits.trailing_zeros();
            bits &= bits - 1;
            if v == s {
                continue;
            }
            let node = wk.node[v as usize];
            let (tails, weights) = arcs.of_head(v as usize);
            let w = tails.iter().zip(weights).filter(|&(&x, _)| x == pred(node));
            match w.map(|(_, &w)| w).min() {
                Some(w) => wk.known[entry(node) as usize - 1].weight = w,
                None => return Err(broken(v, v)),
            }
        }
    }
    // The lengths along the tree (each entry after its parent), then each pair's check.
    wk.length.clear();
    for k in &wk.known {
        let length = match k.parent {
            NONE => 0,
            p => wk.length[p as usize] + k.weight as u64,
        };
        wk.length.push(length);
    }
    for (i, (&target, &end)) in targets.iter().zip(&wk.ends).enumerate() {
        let d = dist(i, target);
        let length = (end > 0).then(|| wk.length[end as usize - 1]);
        if length != d {
            return Err(Error::Output(format!(
                "{VERTICES}: the path from {} to {} has length {length:?}, its distance is \
                 {d:?} (a bug in tuccompi; please report it)",
                road(s),
                road(target)
            )));
        }
    }
    Ok(())
}

/// Write [`OFFSETS`] and [`VERTICES`] from the paths the workers walked (`index`'s rows and
/// `walked`'s data): the offsets from the per-target counts, in order; each task's ids,
/// checked against its row's checksum, copied to its place (known from the counts) in
/// parallel, a block of tasks at a time, each block synced while the next is copied.
fn write_compact(
    job: &ApspJob,
    p: &PathsJob,
    walked: &RaggedRows,
    index: &NpyRows,
    out: &Out,
) -> Result<()> {
    let tasks = job.sources.len();
    let rows: Vec<RaggedRow> = (0..tasks)
        .into_par_iter()
        .map(|t| walked.row(index, t))
        .collect::<Result<_>>()?;
    let pairs: u64 = rows.iter().map(|r| r.lengths.len() as u64).sum();
    // Each task's first id in the vertices.
    let mut places = Vec::with_capacity(tasks + 1);
    let mut total = 0u64;
    for r in &rows {
        places.push(total);
        total += r.items();
    }
    out.write_stream(OFFSETS, |wo| {
        use npyz::WriterBuilder;
        let off = |e: std::io::Error| Error::Output(format!("{OFFSETS}: {e}"));
        let mut offsets = npyz::WriteOptions::<u64>::new()
            .default_dtype()
            .shape(&[pairs + 1])
            .writer(&mut *wo)
            .begin_nd()
            .map_err(off)?;
        let mut at = 0u64;
        offsets.push(&at).map_err(off)?;
        for r in &rows {
            for &c in &r.lengths {
                at += c;
                offsets.push(&at).map_err(off)?;
            }
        }
        offsets.finish().map_err(off)
    })?;
    let header = header_1d(p.ids, total)?;
    let width = p.ids.size() as u64;
    out.write_stream(VERTICES, |wv| {
        let file: &std::fs::File = wv.get_ref();
        let out = |e: std::io::Error| Error::Output(format!("{VERTICES}: {e}"));
        file.write_all_at(&header, 0).map_err(out)?;
        let block = 16 * rayon::current_num_threads();
        // The disk writes back each block while the next is copied (one sync at a time), so
        // that little is left for the sync that ends the file.
        std::thread::scope(|scope| -> Result<()> {
            let mut syncing: Option<std::thread::ScopedJoinHandle<'_, std::io::Result<()>>> = None;
            let mut start = 0;
            while start < tasks {
                let end = (start + block).min(tasks);
                (start..end)
                    .into_par_iter()
                    .try_for_each_init(Vec::new, |buf, t| {
                        walked.read(index, &rows[t], buf)?;
                        let at = header.len() as u64 + places[t] * width;
                        file.write_all_at(buf, at).map_err(out)
                    })?;
                if let Some(h) = syncing.take() {
                    h.join().expect("sync_data does not panic").map_err(out)?;
                }
                syncing = Some(scope.spawn(|| file.sync_data()));
                start = end;
            }
            if let Some(h) = syncing.take() {
                h.join().expect("sync_data does not panic").map_err(out)?;
            }
            Ok(())
        })
    })?;
    Ok(())
}

/// Append one pair's GeoJSON feature: a LineString over its vertices' lon/lat (a single
/// vertex repeated for a source equal to its target), null geometry when unreachable or a
/// vertex has no place.
fn feature(
    text: &mut String,
    geo: &crate::common::geo::Geo,
    shapes: &super::isochrone::ArcShapes,
    src: u64,
    tgt: u64,
    d: Option<u64>,
    path: &[u32],
) {
    let _ = write!(
        text,
        "{{\"type\":\"Feature\",\"properties\":{{\"source\":{src},\"target\":{tgt},\"distance\":"
    );
    match d {
        Some(d) => {
            let _ = write!(text, "{d},\"hops\":{}}},\"geometry\":", path.len() - 1);
        }
        None => text.push_str("null,\"hops\":null},\"geometry\":"),
    }
    // Along the ways: each step's edge geometry where the network has one, else straight to
    // the next vertex (a single vertex as its place twice).
    let mut line = Vec::new();
    let located = (d.is_some() && shapes.path_line(geo, path, &mut line)).then_some(line);
    match located {
        None => text.push_str("null}"),
        Some(l) => {
            text.push_str("{\"type\":\"LineString\",\"coordinates\":[");
            for (k, [x, y]) in l.iter().enumerate() {
                if k > 0 {
                    text.push(',');
                }
                // 7 decimals: OSM's own precision (100 nanodegrees), as vertices.csv.
                let _ = write!(text, "[{x:.7},{y:.7}]");
            }
            text.push_str("]}}");
        }
    }
}

#[cfg(test)]
mod test;
