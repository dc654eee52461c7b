//! Entry points for callers that hold a graph in memory and want the results in memory: the
//! Python package (`python/`) is built on these.
//!
//! A [`Graph`] is made from arrays ([`Graph::from_arcs`], [`Graph::from_csr`]) or read from a
//! file by the same code the command line reads `[input]` with ([`Graph::read`]: the graph
//! cache, the OpenStreetMap profiles, `.co` coordinates). [`run_apsp`] runs the `apsp` plugin
//! on it through the whole runtime (units, scheduler, tuning, the hierarchy cache keyed by the
//! graph's content, so a graph from memory and the same graph read by the CLI share one
//! hierarchy) and hands back the distance rows, `summary.csv` and the report.
//!
//! The runtime writes its results into an output directory; here that is a private temporary
//! directory (created exclusive, mode 0700) that is removed before the call returns, whatever
//! the outcome. Long lists (sources, targets, weights: [`List`]) reach the run as `.npy` files
//! in that directory. Nothing else is written but the caches the CLI also keeps.
//!
//! No config file stands behind a plan made here, so errors never name one: a message that
//! would start with `<arguments>:LINE` (the config text this module writes) names the key
//! alone, and a list's message names the list as the caller does, not its file.

use crate::apsp;
use crate::apsp::gpu::phast::DevWeight;
use crate::common::geo::{self, Geo};
use crate::common::sources::Sources;
use crate::graph::{Csr, EdgeList, Origin};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use tuccompi::plugin::{DeviceCount, Job, Plugin, PrepareCtx};
use tuccompi::sink::Table;
use tuccompi::{Error, Plan, Result, RunOptions};

/// The name a plan made here carries (no config file stands behind it); [`unplaced`] takes it
/// out of messages.
const MEMORY_CONFIG: &str = "<arguments>";

/// The most vertices a graph may have: ids are 32-bit and `u32::MAX` is no vertex (as the
/// file readers say).
pub const MAX_VERTICES: u64 = u32::MAX as u64 - 1;

/// The heaviest arc weight: distances are computed in 32 or 64 bits from 32-bit weights.
pub const MAX_WEIGHT: i64 = u32::MAX as i64;

/// A graph held in memory: its CSR (0-based inside, `csr.id_base` the input's numbering) and,
/// when its input had them, its vertices' places (OpenStreetMap, `.co`).
#[derive(Debug)]
pub struct Graph {
    /// The graph as every algorithm reads it.
    pub csr: Csr,
    /// The vertices' places, when the input has them.
    pub geo: Option<Geo>,
    /// The session every run on this graph is a job of ([`tuccompi::Session`]): its devices,
    /// programs, speed history and the hierarchy stay between calls.
    pub session: tuccompi::Session,
}

impl Graph {
    /// A graph of `n` vertices from its arcs `tails[i] -> heads[i]` of weight `weights[i]`,
    /// ids 0-based. Parallel arcs collapse to their lightest, self-loops are dropped, as for
    /// any input. `names` are the caller's names of the three arrays, for messages.
    ///
    /// O(n + m log d) for maximum out-degree d.
    pub fn from_arcs(
        n: u64,
        tails: &[i64],
        heads: &[i64],
        weights: &[i64],
        names: [&str; 3],
        name: &str,
    ) -> Result<Graph> {
        let [tn, hn, wn] = names;
        if n > MAX_VERTICES {
            return Err(Error::Input(format!(
                "n = {n}: more than the {MAX_VERTICES} vertices a graph may have (vertex ids \
                 are 32-bit)"
            )));
        }
        for (a, an) in [(heads, hn), (weights, wn)] {
            if a.len() != tails.len() {
                return Err(Error::Input(format!(
                    "{an} has {} entries and {tn} has {}: give one per arc",
                    a.len(),
                    tails.len()
                )));
            }
        }
        for (a, an) in [(tails, tn), (heads, hn)] {
            if let Some((i, &v)) = a.iter().enumerate().find(|&(_, &v)| v < 0 || v as u64 >= n) {
                return Err(Error::Input(format!(
                    "{an}[{i}] = {v} is not a vertex of a graph of {n} vertices (ids 0..{})",
                    n.saturating_sub(1)
                )));
            }
        }
        if let Some((i, &w)) = weights.iter().enumerate().find(|&(_, &w)| w < 0) {
            return Err(Error::Input(format!(
                "{wn}[{i}] = {w}: negative arc weight; shortest paths by Dijkstra and its GPU \
                 variants need weights >= 0"
            )));
        }
        if let Some((i, &w)) = weights.iter().enumerate().find(|&(_, &w)| w > MAX_WEIGHT) {
            return Err(Error::Input(format!(
                "{wn}[{i}] = {w}: above the heaviest arc weight, {MAX_WEIGHT} (2^32 - 1); \
                 rescale the weights"
            )));
        }
        // Linux overcommits: the reservations below succeed for any size and the process is
        // killed later, as the pages are written. So the whole build is weighed first.
        let m = tails.len() as u64;
        crate::graph::memory::check(
            &format!("{name} ({n} vertices, {m} arcs)"),
            crate::graph::memory::input_bytes(n, m),
            "its arcs, the counters and arc pairs of the CSR build, and the CSR",
        )
        .map_err(not_enough_memory)?;
        let mut arcs = tuccompi::reserved(tails.len(), &format!("the arcs of {name}"))?;
        arcs.extend(
            tails
                .iter()
                .zip(heads)
                .zip(weights)
                .map(|((&u, &v), &w)| (u as u32, v as u32, w)),
        );
        let list = EdgeList {
            n: n as usize,
            arcs,
            id_base: 0,
            origin: Origin {
                name: name.to_string(),
                ..Origin::default()
            },
        };
        Ok(Graph {
            csr: Csr::from_edges(&list)?,
            geo: None,
            session: tuccompi::Session::new(),
        })
    }

    /// A graph from compressed sparse rows, as scipy.sparse keeps them: the arcs out of `u`
    /// are `indices[indptr[u]..indptr[u+1]]` with weights `data[...]`; `n = indptr.len() - 1`.
    pub fn from_csr(indptr: &[i64], indices: &[i64], data: &[i64], name: &str) -> Result<Graph> {
        let Some(n) = indptr.len().checked_sub(1) else {
            return Err(Error::Input(
                "indptr is empty: it has one entry per vertex and one more (scipy's \
                 csr_matrix.indptr)"
                    .into(),
            ));
        };
        if indptr[0] != 0 {
            return Err(Error::Input(format!(
                "indptr[0] = {}: the rows start at 0",
                indptr[0]
            )));
        }
        if let Some(u) = (0..n).find(|&u| indptr[u + 1] < indptr[u]) {
            return Err(Error::Input(format!(
                "indptr[{}] = {} < indptr[{u}] = {}: row offsets never decrease",
                u + 1,
                indptr[u + 1],
                indptr[u]
            )));
        }
        let m = indptr[n] as u64;
        if m != indices.len() as u64 {
            return Err(Error::Input(format!(
                "indptr[-1] = {m} but indices has {} entries: they must agree",
                indices.len()
            )));
        }
        let mut tails = tuccompi::reserved(indices.len(), &format!("the arcs of {name}"))?;
        for u in 0..n {
            let len = (indptr[u + 1] - indptr[u]) as usize;
            tails.extend(std::iter::repeat_n(u as i64, len));
        }
        Self::from_arcs(
            n as u64,
            &tails,
            indices,
            data,
            ["indptr", "indices", "weights"],
            name,
        )
    }

    /// Read a graph file as the command line reads `[input]`: `input` holds the table's keys
    /// (`path`, and as the file needs them `columns`, `weight_scale`, `coordinates`, `osm`).
    /// Errors name those keys, as the CLI's do.
    pub fn read(input: toml::Table) -> Result<Graph> {
        Self::read_plan(input).map_err(unplaced)
    }

    fn read_plan(input: toml::Table) -> Result<Graph> {
        let mut config = toml::Table::new();
        config.insert("run".into(), run_table());
        config.insert("input".into(), toml::Value::Table(input));
        let plan = plan_of(config)?;
        let devices = DeviceCount::default;
        let ctx = PrepareCtx {
            plan: &plan,
            share: None,
            dry_run: false,
            done_tasks: 0,
            devices: &devices,
            space: None,
            kept: None,
        };
        let input = crate::common::input::Input::of(&plan)?;
        let (csr, geo) = geo::load_input(&ctx, &input, &[])?;
        Ok(Graph {
            csr,
            geo,
            session: tuccompi::Session::new(),
        })
    }

    /// A copy of the places (the runtime takes its job's by value).
    fn geo_copy(&self) -> Option<Geo> {
        self.geo.clone()
    }
}

fn run_table() -> toml::Value {
    let mut run = toml::Table::new();
    run.insert("plugin".into(), "apsp".into());
    toml::Value::Table(run)
}

fn plan_of(config: toml::Table) -> Result<Plan> {
    let text = toml::to_string(&config).map_err(|e| Error::Config(e.to_string()))?;
    Plan::from_toml(&text, Path::new(MEMORY_CONFIG), &[])
}

/// A memory estimate's refusal (`graph::memory::check`) worded as the allocation helpers word
/// theirs ("not enough memory for ..."), so that callers tell it from a bad argument.
fn not_enough_memory(e: Error) -> Error {
    match e {
        Error::Input(msg) => Error::Input(format!("not enough memory for {msg}")),
        e => e,
    }
}

/// Whether `e` says that the memory a request needs cannot be had: an allocation that failed
/// (`not enough memory for ...`) or a memory estimate refused before allocating
/// (`graph::memory::check`: `... needs about X GiB (...), but this machine has Y GiB
/// available`), as opposed to a bad argument.
pub fn out_of_memory(e: &Error) -> bool {
    match e {
        Error::Input(msg) => {
            msg.contains("not enough memory")
                || (msg.contains(" needs about ") && msg.contains(" but this machine has "))
        }
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::OutOfMemory,
        _ => false,
    }
}

/// `e` without the place of a plan made here: `<arguments>:LINE: ` in front of a message would
/// name a line of the config text this module wrote, which the caller never saw. The message
/// goes on with the key it is about (`apsp.sources ...`).
fn unplaced(e: Error) -> Error {
    match e {
        Error::Config(msg) => Error::Config(unplace(&msg)),
        Error::Input(msg) => Error::Input(unplace(&msg)),
        Error::Output(msg) => Error::Output(unplace(&msg)),
        Error::Unit { unit, msg } => Error::Unit {
            unit,
            msg: unplace(&msg),
        },
        Error::NoUnitLeft {
            left,
            tasks,
            failures,
        } => Error::NoUnitLeft {
            left,
            tasks,
            failures: unplace(&failures),
        },
        Error::Parse { path, msg, .. } if path == Path::new(MEMORY_CONFIG) => {
            Error::Config(unplace(&msg))
        }
        e => e,
    }
}

/// `msg` with every `<arguments>:LINE: ` (or `<arguments>: `) taken out.
fn unplace(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(MEMORY_CONFIG) {
        out.push_str(&rest[..i]);
        let after = &rest[i + MEMORY_CONFIG.len()..];
        let after = match after.strip_prefix(':') {
            Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => {
                r.trim_start_matches(|c: char| c.is_ascii_digit())
            }
            _ => after,
        };
        rest = after.strip_prefix(": ").unwrap_or(after);
    }
    out.push_str(rest);
    out
}

/// Distance rows in the width the run chose (u32 when every distance provably fits, else
/// u64), row-major; unreachable is the type's maximum.
#[derive(Debug)]
pub enum Rows {
    /// 32-bit distances.
    U32(Vec<u32>),
    /// 64-bit distances.
    U64(Vec<u64>),
}

/// What [`run_apsp`] hands back.
#[derive(Debug)]
pub struct Results {
    /// `report.json`'s content.
    pub report: serde_json::Value,
    /// The distance rows (sources x targets, or sources x n without targets), when asked for.
    pub rows: Option<Rows>,
    /// Rows and columns of `rows`.
    pub shape: [usize; 2],
    /// `summary.csv`'s columns (`source,reached,unreachable,sum,max,mean`).
    pub summary: Table,
    /// The run's other tables as typed columns, by file name (`reach.csv`, `nearest.csv`,
    /// `isochrones.csv`, when the config asks for them), in name order.
    pub tables: Vec<(String, Table)>,
    /// Its ragged tables as text, by file name (`paths.csv`, `isochrone_ids.csv`, when the
    /// config asks for them), in name order.
    pub texts: Vec<(String, String)>,
    /// The pairs' paths in the compact form, when the config asks for them (`[apsp] paths =
    /// true` with `paths_format = "npy"`; `tables` then has no `paths.csv`).
    pub paths: Option<CompactPaths>,
}

/// The paths of an origin-destination run as arrays (`path_offsets.npy` and
/// `path_vertices.npy`): pair `i`, sources major as `paths.csv`'s rows and the distance rows
/// order them (`i = source_row · targets + target_column`), is
/// `vertices[offsets[i]..offsets[i + 1]]`, source first; an unreachable pair's is empty.
#[derive(Debug)]
pub struct CompactPaths {
    /// Pairs + 1 offsets into `vertices`, from 0.
    pub offsets: Vec<u64>,
    /// The paths' vertex ids in the graph's numbering (as `paths.csv` writes them: a
    /// turn-restriction copy as its road vertex), concatenated.
    pub vertices: Ids,
}

/// Vertex ids in the width the run wrote them: u32 when every id fits, else u64.
#[derive(Debug)]
pub enum Ids {
    /// 32-bit ids.
    U32(Vec<u32>),
    /// 64-bit ids.
    U64(Vec<u64>),
}

/// `apsp` on a graph from memory: [`Plugin`] whose `prepare` takes the graph it holds instead
/// of the plan's `[input]`, and the lists given in memory instead of the config's keys.
struct InMemory<'g>(&'g Graph, apsp::Given);

impl std::fmt::Debug for InMemory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InMemory({})", self.0.csr.name)
    }
}

impl Plugin for InMemory<'_> {
    fn name(&self) -> &'static str {
        "apsp"
    }
    fn description(&self) -> &'static str {
        "apsp on a graph held in memory"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        // Points snap through the places read with the graph (to vertices: a graph already
        // built has no room for phantom vertices).
        let mut load = |_: &[(&str, &[[f64; 2]])]| Ok((self.0.csr.clone(), self.0.geo_copy()));
        apsp::prepare_with(ctx, &mut load, &self.1)
    }
}

/// A list a run's config would take as a file (`apsp.sources`, `apsp.targets`,
/// `apsp.reach.weights`), handed over in memory: [`run_apsp`] gives it to the run as it is
/// (no file, no text). Messages name it `name`.
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    /// The dotted config key (`apsp.sources`).
    pub key: &'a str,
    /// The caller's name of the list, for messages (`sources`).
    pub name: &'a str,
    /// The entries.
    pub values: Values<'a>,
}

/// The entries of a [`List`].
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    /// Vertex ids, in the input's numbering.
    Ids(&'a [i64]),
    /// Points to snap, (x, y) each.
    Points(&'a [[f64; 2]]),
    /// Numbers.
    Numbers(&'a [f64]),
}

/// Run `apsp` on `graph` with `config` (the tables `[run]`, `[units]`, `[scheduler]`,
/// `[apsp]`, `[verify]` as in a config file; no `[input]`, no `[output]`) and `lists` (each
/// sets its key, which `config` must leave out), into memory: `rows` asks for the distance
/// rows. Nothing is written anywhere (an in-memory run: [`RunOptions::in_memory`]) but the
/// hierarchy cache. `interrupt`, once set, stops the run after its running chunks and the
/// call returns [`Error::Interrupted`].
pub fn run_apsp(
    graph: &Graph,
    config: toml::Table,
    lists: &[List<'_>],
    rows: bool,
    interrupt: &AtomicBool,
) -> Result<Results> {
    let control = Control {
        interrupt,
        progress: None,
    };
    run_apsp_watched(graph, config, lists, rows, &control)
}

/// How a caller watches and stops a run: its stop flag ([`tuccompi::RunOptions::interrupt`])
/// and its progress callback ([`tuccompi::RunOptions::progress`]).
pub struct Control<'a> {
    /// Once set, the run stops after its running chunks.
    pub interrupt: &'a AtomicBool,
    /// Called with (tasks done, tasks) while the run goes.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl std::fmt::Debug for Control<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("interrupt", &self.interrupt)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// [`run_apsp`] with a progress callback beside the stop flag.
pub fn run_apsp_watched(
    graph: &Graph,
    config: toml::Table,
    lists: &[List<'_>],
    rows: bool,
    control: &Control<'_>,
) -> Result<Results> {
    let given = given_of(&config, lists)?;
    run_apsp_plan(graph, config, given, rows, control).map_err(unplaced)
}

/// Answers of [`Graph::routes`], one per (origin, destination) pair, in pair order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes {
    /// Each pair's distance; `u64::MAX` when the destination is unreachable.
    pub distances: Vec<u64>,
    /// With paths: pair `i`'s path is `vertices[offsets[i]..offsets[i + 1]]` (`pairs + 1`
    /// entries); empty without.
    pub offsets: Vec<u64>,
    /// The paths' internal vertex ids (0-based), concatenated; an unreachable pair's is empty.
    pub vertices: Vec<u32>,
    /// Where the hierarchy came from for this call: "session" (kept by an earlier call or
    /// run on this graph), "cache" or "built".
    pub hierarchy: String,
}

impl Routes {
    /// The answers of 32-bit pair queries (`u32::MAX` unreachable) as [`Routes`].
    fn of_narrow(got: apsp::route::Pairs<u32>, hierarchy: String) -> Routes {
        Routes {
            distances: got
                .distances
                .iter()
                .map(|&x| if x == u32::MAX { u64::MAX } else { x as u64 })
                .collect(),
            offsets: got.offsets,
            vertices: got.vertices,
            hierarchy,
        }
    }
}

/// Points snapped ([`Graph::snap`], [`Graph::snap_to`]), one entry per point in each field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapped {
    /// The vertex each point snapped to (internal id), or lies at (a point snapped onto an
    /// edge at one of its ends); `u32::MAX` for a point inside an edge.
    pub vertices: Vec<u32>,
    /// The distance from each point to where it snapped: metres (great-circle) for
    /// longitude and latitude, the coordinates' own units otherwise.
    pub distances: Vec<f64>,
    /// Snapped onto an edge: the edge's tail and head (internal ids; `u32::MAX` when snapped
    /// to a vertex).
    pub tails: Vec<u32>,
    /// See `tails`.
    pub heads: Vec<u32>,
    /// Snapped onto an edge: how far along it from the tail, as a fraction of its length
    /// (NaN when snapped to a vertex).
    pub fractions: Vec<f64>,
    /// Snapped onto an edge: the weight from the tail to the point, `round(W · fraction)`,
    /// the split the routes use (0 when snapped to a vertex).
    pub offsets: Vec<u64>,
    /// Where each point snapped: its foot on the edge, or the vertex's place.
    pub places: Vec<[f64; 2]>,
}

/// Trip ends given to [`Graph::routes_at`] and [`Graph::matrix_at`].
#[derive(Debug, Clone, Copy)]
pub enum Ends<'a> {
    /// Vertices (internal ids).
    Vertices(&'a [u32]),
    /// Points, snapped as the graph snaps them (onto edges for an OpenStreetMap graph read
    /// with `snap = "edge"`, else to the nearest vertex).
    Points(&'a [[f64; 2]]),
}

/// A hierarchy of the graph with the index its route unpacking needs, kept in the graph's
/// session.
struct Resident<W> {
    hierarchy: std::sync::Arc<apsp::phast::AnyHierarchy>,
    router: apsp::route::Router<W>,
}

impl<W: DevWeight> Resident<W> {
    /// [`apsp::route::pairs`] on this hierarchy.
    fn pairs(
        &self,
        g: &Csr,
        origins: &[u32],
        destinations: &[u32],
        paths: bool,
        threads: usize,
    ) -> apsp::route::Pairs<W> {
        let h = W::of(&self.hierarchy).expect("kept at its own width");
        apsp::route::pairs(h, &self.router, g, origins, destinations, paths, threads)
    }
}

impl Graph {
    /// The shortest distance of each pair `origins[i] -> destinations[i]` (internal ids, equal
    /// lengths), and its path when `paths`: a bidirectional query on the contraction
    /// hierarchy per pair, the pairs spread over the machine's cores, shortcuts unpacked into
    /// arcs of the graph. The hierarchy is the one the graph's runs use (kept in its session,
    /// else read from the hierarchy cache or built once); nothing is written but that cache.
    ///
    /// Distances are computed in 32 bits; a pair whose distance reaches the 32-bit ceiling is
    /// answered again on a 64-bit hierarchy (made the first time one is needed).
    pub fn routes(&self, origins: &[u32], destinations: &[u32], paths: bool) -> Result<Routes> {
        if origins.len() != destinations.len() {
            return Err(Error::Input(format!(
                "origins has {} entries and destinations has {}: give one destination per \
                 origin",
                origins.len(),
                destinations.len()
            )));
        }
        if let Some(&v) = origins
            .iter()
            .chain(destinations)
            .find(|&&v| v as usize >= self.csr.n)
        {
            return Err(Error::Input(format!(
                "vertex {v} is not a vertex of {} ({} vertices)",
                self.csr.name, self.csr.n
            )));
        }
        // From a restricted via vertex, a route starts at its departure copy (turn
        // restrictions), as the runs' sources do.
        let departing = geo::departures(self.geo.as_ref(), origins.to_vec());
        let origins = &departing[..];
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (narrow, hierarchy) = self.resident::<u32>()?;
        let got = narrow.pairs(&self.csr, origins, destinations, paths, threads);
        let mut routes = Routes::of_narrow(got, hierarchy);
        // Saturated in 32 bits: those pairs again in 64.
        let ceil: Vec<usize> = (0..origins.len())
            .filter(|&i| routes.distances[i] == crate::common::NARROW_CEIL)
            .collect();
        if !ceil.is_empty() {
            let (wide, _) = self.resident::<u64>()?;
            let o: Vec<u32> = ceil.iter().map(|&i| origins[i]).collect();
            let d: Vec<u32> = ceil.iter().map(|&i| destinations[i]).collect();
            let again = wide.pairs(&self.csr, &o, &d, paths, threads);
            for (j, &i) in ceil.iter().enumerate() {
                routes.distances[i] = again.distances[j];
            }
            if paths {
                let mut offsets = vec![0u64];
                let mut vertices = Vec::with_capacity(routes.vertices.len());
                let mut redone = ceil.iter().enumerate().peekable();
                for i in 0..origins.len() {
                    let path = match redone.peek() {
                        Some(&(j, &r)) if r == i => {
                            redone.next();
                            &again.vertices
                                [again.offsets[j] as usize..again.offsets[j + 1] as usize]
                        }
                        _ => {
                            &routes.vertices
                                [routes.offsets[i] as usize..routes.offsets[i + 1] as usize]
                        }
                    };
                    vertices.extend_from_slice(path);
                    offsets.push(vertices.len() as u64);
                }
                routes.offsets = offsets;
                routes.vertices = vertices;
            }
        }
        if paths {
            self.road_paths(&mut routes);
        }
        Ok(routes)
    }

    /// Each of `points` (`[x, y]`: `[lon, lat]` for OpenStreetMap) snapped as the graph snaps
    /// points ([`Graph::snap_to`]): onto the nearest edge for an OpenStreetMap graph read with
    /// `snap = "edge"` (the default), else to the nearest vertex. `what` names the list in
    /// messages.
    pub fn snap(&self, points: &[[f64; 2]], what: &str) -> Result<Snapped> {
        self.snap_to(points, what, self.snap_edges().is_some())
    }

    /// The graph's hierarchy of weight type `W` with its route index, kept in the session, and
    /// where the hierarchy came from.
    fn resident<W: DevWeight>(&self) -> Result<(std::sync::Arc<Resident<W>>, String)> {
        let wide = std::mem::size_of::<W>() == 8;
        let key = format!("api route index, {} bits", 8 * std::mem::size_of::<W>());
        if let Some(r) = self.session.kept().get::<Resident<W>>(&key) {
            return Ok((r, "session".into()));
        }
        let none = DeviceCount::default;
        let request = apsp::phast::auto::Request {
            cpu: Some(apsp::phast::auto::CpuAlgorithm::Phast),
            gpu: None,
            sources: &[],
            pending: 0,
            cpu_workers: 1,
            gpus: &none,
            cache_path: None,
            store: true,
            targets: false,
            kept: Some(self.session.kept()),
            pair_targets: None,
            restrict: None,
            sweep: apsp::phast::auto::SweepRequest::Full,
        };
        let choice = apsp::phast::auto::choose(&self.csr, wide, &request)?;
        let source = choice.report["source"]
            .as_str()
            .unwrap_or("built")
            .to_string();
        let hierarchy = choice.hierarchy.ok_or_else(|| {
            Error::Input(format!(
                "{}: no contraction hierarchy for its routes",
                self.csr.name
            ))
        })?;
        let router =
            apsp::route::Router::new(W::of(&hierarchy).expect("choose gives the width asked for"));
        // The hierarchy, and the router: its downward arcs again, by tail, and a memo word per
        // arc (together about the hierarchy's size).
        let bytes = 2 * hierarchy.bytes();
        let r = self
            .session
            .kept()
            .get_or_make(&key, || Ok((Resident { hierarchy, router }, bytes)))?;
        Ok((r, source))
    }

    /// `routes`' paths shown in road vertices, as paths.csv: a turn-restriction copy as its
    /// via vertex, once.
    fn road_paths(&self, routes: &mut Routes) {
        let Some(geo) = &self.geo else { return };
        let (mut offsets, mut vertices) = (vec![0u64], Vec::with_capacity(routes.vertices.len()));
        for w in routes.offsets.windows(2) {
            let at = vertices.len();
            for &v in &routes.vertices[w[0] as usize..w[1] as usize] {
                let r = geo.road_vertex(v);
                if vertices.len() == at || vertices.last() != Some(&r) {
                    vertices.push(r);
                }
            }
            offsets.push(vertices.len() as u64);
        }
        routes.offsets = offsets;
        routes.vertices = vertices;
    }

    /// Whether the graph snaps points onto edges (an OpenStreetMap graph read with `snap =
    /// "edge"`, the default): [`Graph::snap`], [`Graph::routes_at`] and [`Graph::matrix_at`]
    /// put points on the roads.
    pub fn snaps_onto_edges(&self) -> bool {
        self.snap_edges().is_some()
    }

    /// The network's edges points snap onto, when the graph snaps points onto edges (an
    /// OpenStreetMap graph read with `snap = "edge"`, the default).
    fn snap_edges(&self) -> Option<&[crate::graph::osm::Edge]> {
        let geo = self.geo.as_ref().filter(|g| g.snap_edges)?;
        geo.edges.as_deref().filter(|e| !e.is_empty())
    }

    /// The R-tree of the network's segments that points snap onto edges with, kept in the
    /// graph's session (built by the first call that snaps onto edges: O(S log S)).
    fn segments(
        &self,
        edges: &[crate::graph::osm::Edge],
    ) -> Result<std::sync::Arc<crate::graph::osm::network::SegmentTree>> {
        self.session.kept().get_or_make("api phantom segments", || {
            let tree = crate::graph::osm::network::segment_tree(edges);
            // A segment: two 3-D points, its tag and the tree's share of nodes.
            let bytes = tree.size() as u64 * 72;
            Ok((tree, bytes))
        })
    }

    /// Each of `points` snapped onto the nearest edge ([`apsp::phantom`]) when `onto_edges`
    /// (the graph needs an OpenStreetMap network), else to the nearest vertex; `what` names
    /// the list in messages.
    pub fn snap_to(&self, points: &[[f64; 2]], what: &str, onto_edges: bool) -> Result<Snapped> {
        if !onto_edges {
            let (vertices, snaps) = geo::resolve(points, self.geo.as_ref(), what)?;
            let k = points.len();
            return Ok(Snapped {
                vertices,
                distances: snaps.iter().map(|s| s.distance).collect(),
                tails: vec![u32::MAX; k],
                heads: vec![u32::MAX; k],
                fractions: vec![f64::NAN; k],
                offsets: vec![0; k],
                places: snaps.iter().map(|s| s.on).collect(),
            });
        }
        let edges = self
            .geo
            .as_ref()
            .and_then(|g| g.edges.as_deref())
            .filter(|e| !e.is_empty())
            .ok_or_else(|| {
                Error::Input(format!(
                    "{what}: snapping onto edges needs an OpenStreetMap graph (its roads);                      snap to vertices instead"
                ))
            })?;
        let tree = self.segments(edges)?;
        let landings = apsp::phantom::land(edges, &tree, points, what)?;
        let mut s = Snapped::default();
        for l in &landings {
            let e = &edges[l.edge];
            s.vertices
                .push(apsp::phantom::at_vertex(edges, l).unwrap_or(u32::MAX));
            s.distances.push(l.distance);
            s.tails.push(e.tail);
            s.heads.push(e.head);
            s.fractions.push(if e.metres > 0.0 {
                (l.along / e.metres).clamp(0.0, 1.0)
            } else {
                0.0
            });
            s.offsets.push(l.cum as u64);
            s.places.push(l.at);
        }
        Ok(s)
    }

    /// Where trip ends lie, as the searches meet them ([`apsp::phantom::end`]): vertices as
    /// given (checked), points snapped onto edges when the graph snaps onto edges, else to
    /// their nearest vertex. `what` names the list in messages.
    fn trip_ends(&self, at: Ends<'_>, what: &str) -> Result<Vec<apsp::phantom::End>> {
        use apsp::phantom::{end, Place};
        let places: Vec<Place> = match at {
            Ends::Vertices(v) => {
                if let Some(&x) = v.iter().find(|&&x| x as usize >= self.csr.n) {
                    return Err(Error::Input(format!(
                        "{what}: vertex {x} is not a vertex of {} ({} vertices)",
                        self.csr.name, self.csr.n
                    )));
                }
                v.iter().map(|&x| Place::Vertex(x)).collect()
            }
            Ends::Points([]) => {
                return Err(Error::Input(format!(
                    "{what}: no points; give at least one"
                )))
            }
            Ends::Points(p) => match self.snap_edges() {
                Some(edges) => {
                    let tree = self.segments(edges)?;
                    apsp::phantom::land(edges, &tree, p, what)?
                        .into_iter()
                        .map(Place::OnEdge)
                        .collect()
                }
                None => geo::resolve(p, self.geo.as_ref(), what)?
                    .0
                    .into_iter()
                    .map(Place::Vertex)
                    .collect(),
            },
        };
        Ok(places.iter().map(|p| end(self.geo.as_ref(), p)).collect())
    }

    /// [`Graph::routes`] between trip ends that may be points on edges (OSRM's phantom nodes,
    /// [`apsp::phantom`]): the answers of the graph the command line makes by splitting the
    /// edges at the points, on this graph's resident hierarchy (nothing is built for a new
    /// set of points). A path holds the road vertices only: from the first the route reaches
    /// from the origin to the last before the destination (a trip along one edge, between no
    /// vertex, has an empty path and a finite distance).
    pub fn routes_at(
        &self,
        origins: Ends<'_>,
        destinations: Ends<'_>,
        paths: bool,
    ) -> Result<Routes> {
        let o = self.trip_ends(origins, "origins")?;
        let d = self.trip_ends(destinations, "destinations")?;
        if o.len() != d.len() {
            return Err(Error::Input(format!(
                "origins has {} entries and destinations has {}: give one destination per \
                 origin",
                o.len(),
                d.len()
            )));
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let edges = self
            .geo
            .as_ref()
            .and_then(|g| g.edges.as_deref())
            .unwrap_or(&[]);
        let (narrow, hierarchy) = self.resident::<u32>()?;
        let seeds = |ends: &[apsp::phantom::End], out: bool| -> Vec<Vec<apsp::route::Seed<u32>>> {
            ends.iter().map(|e| e.seeds(out)).collect()
        };
        let h = u32::of(&narrow.hierarchy).expect("kept at its own width");
        let got = apsp::route::pairs_seeded(
            h,
            &narrow.router,
            &self.csr,
            &seeds(&o, true),
            &seeds(&d, false),
            paths,
            threads,
        );
        let mut routes = Routes::of_narrow(got, hierarchy);
        let ceil: Vec<usize> = (0..o.len())
            .filter(|&i| {
                routes.distances[i] >= crate::common::NARROW_CEIL && routes.distances[i] != u64::MAX
            })
            .collect();
        let mut again = None;
        if !ceil.is_empty() {
            let (wide, _) = self.resident::<u64>()?;
            let h = u64::of(&wide.hierarchy).expect("kept at its own width");
            let pick =
                |ends: &[apsp::phantom::End], out: bool| -> Vec<Vec<apsp::route::Seed<u64>>> {
                    ceil.iter().map(|&i| ends[i].seeds(out)).collect()
                };
            let a = apsp::route::pairs_seeded(
                h,
                &wide.router,
                &self.csr,
                &pick(&o, true),
                &pick(&d, false),
                paths,
                threads,
            );
            for (j, &i) in ceil.iter().enumerate() {
                routes.distances[i] = a.distances[j];
            }
            again = Some(a);
        }
        // Along one edge: its own distance, and then no road vertex on the way.
        let mut within = vec![false; o.len()];
        for i in 0..o.len() {
            if let Some(x) = apsp::phantom::along(edges, &o[i], &d[i]) {
                if x <= routes.distances[i] {
                    routes.distances[i] = x;
                    within[i] = true;
                }
            }
        }
        if paths {
            let mut redone = ceil.iter().enumerate().peekable();
            let (mut offsets, mut vertices) =
                (vec![0u64], Vec::with_capacity(routes.vertices.len()));
            for (i, &within) in within.iter().enumerate() {
                let path: &[u32] = match redone.peek() {
                    Some(&(j, &r)) if r == i => {
                        redone.next();
                        let a = again.as_ref().expect("redone in 64 bits");
                        &a.vertices[a.offsets[j] as usize..a.offsets[j + 1] as usize]
                    }
                    _ => {
                        &routes.vertices[routes.offsets[i] as usize..routes.offsets[i + 1] as usize]
                    }
                };
                if !within {
                    vertices.extend_from_slice(path);
                }
                offsets.push(vertices.len() as u64);
            }
            routes.offsets = offsets;
            routes.vertices = vertices;
            self.road_paths(&mut routes);
        }
        Ok(routes)
    }

    /// The distance from each of `sources` to each of `targets` (row-major; `u64::MAX` where
    /// unreachable), ends as [`Graph::routes_at`] takes them: one upward search per end on the
    /// resident hierarchy, met in buckets ([`apsp::route::many_to_many`]), plus the trips
    /// along one edge. `Routes` without paths; nothing is built for a new set of points.
    pub fn matrix_at(&self, sources: Ends<'_>, targets: Ends<'_>) -> Result<Routes> {
        let o = self.trip_ends(sources, "sources")?;
        let d = self.trip_ends(targets, "targets")?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let edges = self
            .geo
            .as_ref()
            .and_then(|g| g.edges.as_deref())
            .unwrap_or(&[]);
        let (narrow, hierarchy) = self.resident::<u32>()?;
        let h = u32::of(&narrow.hierarchy).expect("kept at its own width");
        let seeds = |ends: &[apsp::phantom::End], out: bool| -> Vec<Vec<apsp::route::Seed<u32>>> {
            ends.iter().map(|e| e.seeds(out)).collect()
        };
        let m = apsp::route::many_to_many(h, &seeds(&o, true), &seeds(&d, false), threads);
        let mut distances: Vec<u64> = m
            .iter()
            .map(|&x| if x == u32::MAX { u64::MAX } else { x as u64 })
            .collect();
        if distances
            .iter()
            .any(|&x| x >= crate::common::NARROW_CEIL && x != u64::MAX)
        {
            let (wide, _) = self.resident::<u64>()?;
            let h = u64::of(&wide.hierarchy).expect("kept at its own width");
            let seeds =
                |ends: &[apsp::phantom::End], out: bool| -> Vec<Vec<apsp::route::Seed<u64>>> {
                    ends.iter().map(|e| e.seeds(out)).collect()
                };
            distances = apsp::route::many_to_many(h, &seeds(&o, true), &seeds(&d, false), threads);
        }
        // Pairs on one edge: also along it.
        let mut on_edge: std::collections::HashMap<usize, Vec<usize>> = Default::default();
        for (j, e) in d.iter().enumerate() {
            if let Some((edge, _)) = e.inside {
                on_edge.entry(edge).or_default().push(j);
            }
        }
        let nt = d.len();
        for (i, a) in o.iter().enumerate() {
            let Some(js) = a.inside.and_then(|(edge, _)| on_edge.get(&edge)) else {
                continue;
            };
            for &j in js {
                if let Some(x) = apsp::phantom::along(edges, a, &d[j]) {
                    let m = &mut distances[i * nt + j];
                    *m = (*m).min(x);
                }
            }
        }
        Ok(Routes {
            distances,
            offsets: Vec::new(),
            vertices: Vec::new(),
            hierarchy,
        })
    }
}

/// The lists as the run takes them: each key once, and not also set in `config`.
fn given_of(config: &toml::Table, lists: &[List<'_>]) -> Result<apsp::Given> {
    let mut given = apsp::Given::default();
    for list in lists {
        let (tables, last) = list.key.rsplit_once('.').unwrap_or(("", list.key));
        let set_in_config = tables
            .split('.')
            .filter(|p| !p.is_empty())
            .try_fold(config, |t, part| match t.get(part) {
                Some(toml::Value::Table(inner)) => Some(inner),
                _ => None,
            })
            .is_some_and(|t| t.contains_key(last));
        if set_in_config {
            return Err(Error::Config(format!(
                "{}: given both in the config and as a list; give it once",
                list.key
            )));
        }
        let name = list.name.to_string();
        let ids = |v: &[i64]| -> Result<Sources> {
            v.iter()
                .enumerate()
                .map(|(i, &x)| {
                    u64::try_from(x)
                        .map_err(|_| Error::Input(format!("{name}[{i}] = {x}: not a vertex id")))
                })
                .collect::<Result<Vec<u64>>>()
                .map(Sources::List)
        };
        let spec = |values: Values<'_>| -> Result<Sources> {
            match values {
                Values::Ids(v) => ids(v),
                Values::Points(p) => Ok(Sources::Points(p.to_vec())),
                Values::Numbers(_) => Err(Error::Config(format!(
                    "{}: numbers where ids or points are wanted (a bug in the caller)",
                    list.key
                ))),
            }
        };
        let twice = || {
            Error::Config(format!(
                "{}: given twice as a list (a bug in the caller)",
                list.key
            ))
        };
        match (list.key, list.values) {
            ("apsp.sources" | "run.sources", v) => {
                if given.sources.replace((name.clone(), spec(v)?)).is_some() {
                    return Err(twice());
                }
            }
            ("apsp.targets", v) => {
                if given.targets.replace((name.clone(), spec(v)?)).is_some() {
                    return Err(twice());
                }
            }
            ("apsp.reach.weights", Values::Numbers(w)) => {
                if given.weights.replace((name.clone(), w.to_vec())).is_some() {
                    return Err(twice());
                }
            }
            (key, _) => {
                return Err(Error::Config(format!(
                    "{key}: not a list a run takes in memory (apsp.sources, apsp.targets, \
                     apsp.reach.weights)"
                )))
            }
        }
    }
    Ok(given)
}

fn run_apsp_plan(
    graph: &Graph,
    mut config: toml::Table,
    given: apsp::Given,
    rows: bool,
    control: &Control<'_>,
) -> Result<Results> {
    for key in ["input", "output"] {
        if config.contains_key(key) {
            return Err(Error::Config(format!(
                "[{key}]: a run on a graph in memory takes no [{key}] table (the graph is \
                 given, the results come back)"
            )));
        }
    }
    if let toml::Value::Table(t) = config
        .entry("apsp")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
    {
        t.insert("distances".into(), rows.into());
    }
    let run = config
        .entry("run")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(t) = run {
        t.insert("plugin".into(), "apsp".into());
    }
    // `[apsp] paths_format` passes through as the caller set it: "npy" makes the paths come
    // back as arrays (`Results::paths`); the default keeps `paths.csv` in `tables`.
    let plan = plan_of(config)?;
    let in_memory = InMemory(graph, given);
    let opts = RunOptions {
        quiet: true,
        interrupt: Some(control.interrupt),
        progress: control.progress,
        plugins: vec![&in_memory],
        in_memory: true,
        ..RunOptions::default()
    };
    let outcome = graph.session.run_with(&plan, opts)?;
    let files = &outcome.files;
    let text = |name: &str| -> Result<Option<String>> {
        files
            .bytes(name)?
            .map(|b| {
                String::from_utf8(b)
                    .map_err(|_| Error::Output(format!("{name}: not UTF-8 (a bug in tuccompi)")))
            })
            .transpose()
    };
    let summary = files.table("summary.csv").cloned().unwrap_or_default();
    let (rows, shape) = match files.bytes("distances.npy")? {
        Some(bytes) if rows => read_rows(&bytes)?,
        _ => (None, [0, 0]),
    };
    let tables = ["isochrones.csv", "nearest.csv", "reach.csv"]
        .into_iter()
        .filter_map(|name| Some((name.to_string(), files.table(name)?.clone())))
        .collect();
    let mut texts = Vec::new();
    for name in ["isochrone_ids.csv", "paths.csv"] {
        if let Some(t) = text(name)? {
            texts.push((name.to_string(), t));
        }
    }
    let paths = read_compact_paths(files)?;
    Ok(Results {
        report: outcome.report,
        rows,
        shape,
        summary,
        tables,
        texts,
        paths,
    })
}

/// The compact paths of an in-memory run's files, if it wrote them.
fn read_compact_paths(files: &tuccompi::sink::MemoryFiles) -> Result<Option<CompactPaths>> {
    let (Some(offsets), Some(vertices)) = (
        files.bytes(apsp::paths::OFFSETS)?,
        files.bytes(apsp::paths::VERTICES)?,
    ) else {
        return Ok(None);
    };
    let bad = |name: &str, e: std::io::Error| Error::Output(format!("{name}: {e}"));
    let offsets_vec = npyz::NpyFile::new(&offsets[..])
        .and_then(|n| n.into_vec::<u64>())
        .map_err(|e| bad(apsp::paths::OFFSETS, e))?;
    let npy = npyz::NpyFile::new(&vertices[..]).map_err(|e| bad(apsp::paths::VERTICES, e))?;
    let ids = match npy.dtype() {
        npyz::DType::Plain(t) if t.size_field() == 4 => {
            Ids::U32(npy.into_vec().map_err(|e| bad(apsp::paths::VERTICES, e))?)
        }
        _ => Ids::U64(npy.into_vec().map_err(|e| bad(apsp::paths::VERTICES, e))?),
    };
    let len = match &ids {
        Ids::U32(v) => v.len(),
        Ids::U64(v) => v.len(),
    };
    if offsets_vec.last() != Some(&(len as u64)) {
        return Err(Error::Output(format!(
            "{}: the offsets end at {:?}, not at the {len} vertices (a bug in tuccompi)",
            apsp::paths::OFFSETS,
            offsets_vec.last()
        )));
    }
    Ok(Some(CompactPaths {
        offsets: offsets_vec,
        vertices: ids,
    }))
}

/// The distance rows of a `distances.npy` (its bytes, whole).
fn read_rows(bytes: &[u8]) -> Result<(Option<Rows>, [usize; 2])> {
    let bad = |e: std::io::Error| Error::Output(format!("distances.npy: {e}"));
    let npy = npyz::NpyFile::new(bytes).map_err(bad)?;
    let shape = match npy.shape() {
        [r, c] => [*r as usize, *c as usize],
        s => {
            return Err(Error::Output(format!(
                "distances.npy: shape {s:?}, not a matrix (a bug in tuccompi)"
            )))
        }
    };
    let rows = match npy.dtype() {
        npyz::DType::Plain(t) if t.size_field() == 4 => {
            Rows::U32(npy.into_vec::<u32>().map_err(bad)?)
        }
        _ => Rows::U64(npy.into_vec::<u64>().map_err(bad)?),
    };
    Ok((Some(rows), shape))
}

/// Run the config at `path` (with `--set` style `overrides`), any plugin of the registry, as
/// `tuccompi run` does, writing where the config says: the report. `interrupt` as in
/// [`run_apsp`]; `unfinished` says what to do with an unfinished run in the output directory.
pub fn run_config(
    path: &Path,
    overrides: &[String],
    unfinished: tuccompi::runtime::Unfinished,
    interrupt: &AtomicBool,
) -> Result<serde_json::Value> {
    let plan = Plan::load(path, overrides)?.with_node_units()?;
    let opts = RunOptions {
        quiet: true,
        unfinished,
        interrupt: Some(interrupt),
        // As the command line keeps it: the run is the config's, with its caches.
        speed_history: true,
        ..RunOptions::default()
    };
    let outcome = crate::run(&plan, &opts, &tuccompi::node::Single)?;
    Ok(outcome.report)
}

#[cfg(test)]
mod test {
    use super::*;

    /// Distances by Bellman-Ford rounds over the arcs: the reference (`u64::MAX` unreachable).
    fn reference(n: usize, arcs: &[(i64, i64, i64)], s: usize) -> Vec<u64> {
        let mut d = vec![u64::MAX; n];
        d[s] = 0;
        for _ in 0..n {
            let mut changed = false;
            for &(u, v, w) in arcs {
                let (u, v) = (u as usize, v as usize);
                if d[u] != u64::MAX && d[u] + (w as u64) < d[v] {
                    d[v] = d[u] + w as u64;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        d
    }

    fn arcs(n: i64) -> Vec<(i64, i64, i64)> {
        // A ring with chords, and vertex n-1 reached by nothing.
        let mut a = Vec::new();
        for u in 0..n - 1 {
            a.push((u, (u + 1) % (n - 1), 1 + (u * 7919) % 13));
            a.push((u, (u * 5 + 3) % (n - 1), 2 + (u * 104_729) % 31));
        }
        a.push((n - 1, 0, 1));
        a
    }

    fn graph(n: i64, a: &[(i64, i64, i64)]) -> Graph {
        let (t, h, w): (Vec<i64>, Vec<i64>, Vec<i64>) = (
            a.iter().map(|x| x.0).collect(),
            a.iter().map(|x| x.1).collect(),
            a.iter().map(|x| x.2).collect(),
        );
        Graph::from_arcs(n as u64, &t, &h, &w, ["tails", "heads", "weights"], "ring").unwrap()
    }

    #[test]
    fn a_graph_in_memory_runs_into_memory() {
        let n = 300;
        let a = arcs(n);
        let g = graph(n, &a);
        let (sources, targets) = ([0u64, 17, 299], [1u64, 150, 299, 0]);
        let config: toml::Table = toml::from_str(&format!(
            "[apsp]\nsources = {sources:?}\ntargets = {targets:?}\n\
             [units]\ncpu_workers = 2\nopencl = \"none\"\n"
        ))
        .unwrap();
        let r = run_apsp(&g, config, &[], true, &AtomicBool::new(false)).unwrap();
        assert_eq!(r.shape, [3, 4]);
        let Some(Rows::U32(rows)) = r.rows else {
            panic!("u32 rows expected: {:?}", r.rows)
        };
        for (i, &s) in sources.iter().enumerate() {
            let want = reference(n as usize, &a, s as usize);
            for (j, &t) in targets.iter().enumerate() {
                let got = rows[i * 4 + j];
                let want = want[t as usize];
                let want = if want == u64::MAX {
                    u32::MAX
                } else {
                    want as u32
                };
                assert_eq!(got, want, "{s} -> {t}");
            }
        }
        assert_eq!(r.summary.rows(), 3);
        assert!(r.summary.to_csv().starts_with("source,reached,"));
        assert_eq!(r.report["tasks"], 3);
    }

    #[test]
    fn bad_arrays_are_named() {
        let e = Graph::from_arcs(3, &[0, 1], &[1, 3], &[1, 1], ["s", "t", "w"], "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t[1] = 3 is not a vertex of a graph of 3 vertices"),
            "{e}"
        );
        let e = Graph::from_arcs(3, &[0], &[1], &[-2], ["s", "t", "w"], "x")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("w[0] = -2: negative arc weight"), "{e}");
        let e = Graph::from_csr(&[0, 2, 1], &[1, 0], &[1, 1], "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("indptr[2] = 1 < indptr[1] = 2"), "{e}");
        let e = Graph::from_csr(&[0, 1], &[0, 0], &[1, 1], "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("indices has 2 entries"), "{e}");
    }

    #[test]
    fn a_config_with_input_or_output_is_refused() {
        let g = graph(5, &arcs(5));
        let config: toml::Table = toml::from_str("[output]\ndir = \"x\"\n").unwrap();
        let e = run_apsp(&g, config, &[], false, &AtomicBool::new(false)).unwrap_err();
        assert!(e.to_string().contains("[output]"), "{e}");
    }

    #[test]
    fn weights_and_vertex_counts_beyond_the_widths_are_named() {
        let e = Graph::from_arcs(2, &[0], &[1], &[1 << 40], ["s", "t", "w"], "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("w[0] = 1099511627776: above the heaviest arc weight, 4294967295"),
            "{e}"
        );
        let e = Graph::from_arcs(u32::MAX as u64, &[0], &[1], &[1], ["s", "t", "w"], "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("n = 4294967295: more than the 4294967294"),
            "{e}"
        );
    }

    #[test]
    fn lists_given_in_memory_equal_inline_lists_and_errors_name_no_config_line() {
        let n = 200;
        let a = arcs(n);
        let g = graph(n, &a);
        let units: toml::Table =
            toml::from_str("[units]\ncpu_workers = 2\nopencl = \"none\"\n").unwrap();
        let (sources, targets) = ([3i64, 0, 150], [199i64, 1, 1, 42]);
        let run = |config: toml::Table, lists: &[List<'_>]| {
            run_apsp(&g, config, lists, true, &AtomicBool::new(false))
        };
        let mut inline = units.clone();
        inline.insert(
            "apsp".into(),
            toml::Value::Table(
                toml::from_str(&format!("sources = {sources:?}\ntargets = {targets:?}")).unwrap(),
            ),
        );
        let want = run(inline, &[]).unwrap();
        let got = run(
            units.clone(),
            &[
                List {
                    key: "apsp.sources",
                    name: "sources",
                    values: Values::Ids(&sources),
                },
                List {
                    key: "apsp.targets",
                    name: "targets",
                    values: Values::Ids(&targets),
                },
            ],
        )
        .unwrap();
        assert_eq!(got.shape, [3, 4]);
        match (got.rows, want.rows) {
            (Some(Rows::U32(a)), Some(Rows::U32(b))) => assert_eq!(a, b),
            other => panic!("u32 rows expected: {other:?}"),
        }
        // A list's problem names the list, a key's problem the key: never `<arguments>:LINE`.
        let mut reach = units.clone();
        reach.insert(
            "apsp".into(),
            toml::Value::Table(toml::from_str("reach = { radii = [5] }").unwrap()),
        );
        let e = run(
            reach,
            &[
                List {
                    key: "apsp.sources",
                    name: "sources",
                    values: Values::Ids(&[0]),
                },
                List {
                    key: "apsp.reach.weights",
                    name: "weights",
                    values: Values::Numbers(&[1.0, 2.0]),
                },
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("weights: 2 weights for 200 targets"), "{e}");
        let mut bad = units;
        bad.insert(
            "apsp".into(),
            toml::Value::Table(toml::from_str("sources = [4, 4]").unwrap()),
        );
        let e = run(bad, &[]).unwrap_err().to_string();
        assert!(e.starts_with("apsp.sources lists vertex id 4 twice"), "{e}");
        assert_eq!(unplace("<arguments>: x (<arguments>:12: y)"), "x (y)");
    }
}
