//! `tuccompi._native`: the Python package's native module, a thin layer over
//! `tuccompi_plugins::api`. The package's Python half (`python/tuccompi/__init__.py`) turns
//! numpy arrays into the flat little-endian bytes taken here and the bytes handed back into
//! arrays; this half runs the work.
//!
//! Every run happens on a thread of its own while the calling thread waits with the GIL
//! released, waking every [`POLL`] to forward log records to Python's `logging` and to check
//! for signals: on KeyboardInterrupt the run is told to stop (the runtime's interrupt flag: no
//! more chunks are handed out), the call waits at most [`STOP_WAIT`] for it, and re-raises. A
//! run that is still busy then (a contraction hierarchy being built cannot stop midway)
//! finishes on its own thread; caches it writes appear whole or not at all. Runs write
//! nothing else: their results stay in memory (`api::run_apsp`, an in-memory run), so no
//! call leaves a file behind. [`wait_runs`] stops every run still working and waits for it
//! (at interpreter exit, and when a terminating signal comes during a call: the Python half
//! turns SIGTERM into an exception while a call runs, then ends the process by that signal),
//! so that a cache being written is finished or not started.
//!
//! Arrays come in as little-endian bytes and go out as Python `bytes`/`bytearray` allocated
//! by Python: every allocation that depends on an input's size is fallible, so a request too
//! large for the machine is a MemoryError, not an abort.

use pyo3::exceptions::{
    PyFileNotFoundError, PyKeyboardInterrupt, PyMemoryError, PyOSError, PyRuntimeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyBytes};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tuccompi::Error;
use tuccompi_plugins::api;

mod log;

/// How often the waiting thread forwards log records and checks for signals.
const POLL: Duration = Duration::from_millis(100);
/// How long a KeyboardInterrupt waits for the run to stop before it is raised anyway.
const STOP_WAIT: Duration = Duration::from_millis(400);

/// A graph held in memory (`tuccompi.Graph` wraps it).
#[pyclass(frozen, module = "tuccompi._native")]
struct Graph(Arc<api::Graph>);

#[pymethods]
impl Graph {
    /// Vertices.
    #[getter]
    fn n(&self) -> usize {
        self.0.csr.n
    }
    /// Arcs, after parallel arcs were collapsed and self-loops dropped.
    #[getter]
    fn m(&self) -> usize {
        self.0.csr.m()
    }
    /// The first vertex id of the input's numbering (1 for `.gr`/`.mtx`, else 0).
    #[getter]
    fn id_base(&self) -> u64 {
        self.0.csr.id_base
    }
    /// The input's name.
    #[getter]
    fn name(&self) -> String {
        self.0.csr.name.clone()
    }
    /// The CSR as three arrays of little-endian u32 bytes: offsets, targets, weights.
    fn csr_bytes<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
    )> {
        let g = &self.0.csr;
        let bytes = |w: &[u32]| {
            PyBytes::new_with(py, std::mem::size_of_val(w), |buf| {
                le_bytes(w, buf, u32::to_le_bytes);
                Ok(())
            })
        };
        Ok((bytes(&g.offsets)?, bytes(&g.targets)?, bytes(&g.weights)?))
    }
    /// The vertices' places as little-endian f64 bytes (x, y per vertex; NaN where a vertex
    /// has none), whether they are longitude/latitude, and the OpenStreetMap node ids as i64
    /// bytes (OSM input); `None` for a graph without places.
    #[allow(clippy::type_complexity)]
    fn places<'py>(
        &self,
        py: Python<'py>,
    ) -> Option<(Bound<'py, PyBytes>, bool, Option<Bound<'py, PyBytes>>)> {
        let geo = self.0.geo.as_ref()?;
        let c = &geo.coords;
        // Every vertex of the graph: the road vertices, then the vertices added to them (a
        // turn-restriction copy at its junction's place with its junction's node id).
        let n = self.0.csr.n as u32;
        let xy: Vec<u8> = (0..n)
            .flat_map(|v| geo.place(v).unwrap_or([f64::NAN; 2]))
            .flat_map(f64::to_le_bytes)
            .collect();
        let roads = c.points.len() as u32;
        let ids = c.osm_ids.as_ref().map(|ids| {
            let v: Vec<u8> = (0..n)
                .map(|v| match geo.road_vertex(v) {
                    r if r < roads => ids[r as usize],
                    _ => -1,
                })
                .flat_map(|x| x.to_le_bytes())
                .collect();
            PyBytes::new(py, &v)
        });
        Some((PyBytes::new(py, &xy), c.spherical, ids))
    }
}

/// Little-endian i64 values from `bytes`, named `what` in the error.
fn words(bytes: &[u8], what: &str) -> PyResult<Vec<i64>> {
    values(bytes, what, "int64", i64::from_le_bytes)
}

/// The `N`-byte little-endian values of `bytes` (a whole number of them, `ty` in the error), in
/// a vector allocated fallibly (MemoryError, not an abort).
fn values<T, const N: usize>(
    bytes: &[u8],
    what: &str,
    ty: &str,
    from: fn([u8; N]) -> T,
) -> PyResult<Vec<T>> {
    if !bytes.len().is_multiple_of(N) {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes, not a whole number of {ty} values",
            bytes.len()
        )));
    }
    let mut v = tuccompi::reserved(bytes.len() / N, what).map_err(to_py)?;
    v.extend(
        bytes
            .chunks_exact(N)
            .map(|c| from(c.try_into().expect("N bytes"))),
    );
    Ok(v)
}

/// `values` as little-endian bytes into `buf` (exactly their size).
fn le_bytes<T: Copy, const N: usize>(values: &[T], buf: &mut [u8], to: fn(T) -> [u8; N]) {
    for (c, &x) in buf.chunks_exact_mut(N).zip(values) {
        c.copy_from_slice(&to(x));
    }
}

/// A graph from arcs (0-based int64 arrays as bytes); `names` are the caller's names of the
/// three arrays.
#[pyfunction]
fn graph_from_arcs(
    py: Python<'_>,
    n: u64,
    tails: &[u8],
    heads: &[u8],
    weights: &[u8],
    names: (String, String, String),
    name: &str,
) -> PyResult<Graph> {
    let (t, h, w) = (
        words(tails, &names.0)?,
        words(heads, &names.1)?,
        words(weights, &names.2)?,
    );
    let g = py
        .detach(|| api::Graph::from_arcs(n, &t, &h, &w, [&names.0, &names.1, &names.2], name))
        .map_err(to_py)?;
    Ok(Graph(Arc::new(g)))
}

/// A graph from CSR arrays (int64 as bytes).
#[pyfunction]
fn graph_from_csr(
    py: Python<'_>,
    indptr: &[u8],
    indices: &[u8],
    weights: &[u8],
    name: &str,
) -> PyResult<Graph> {
    let (p, i, w) = (
        words(indptr, "indptr")?,
        words(indices, "indices")?,
        words(weights, "weights")?,
    );
    let g = py
        .detach(|| api::Graph::from_csr(&p, &i, &w, name))
        .map_err(to_py)?;
    Ok(Graph(Arc::new(g)))
}

/// Read a graph file as `[input]` (given as JSON) says.
#[pyfunction]
fn read_graph(py: Python<'_>, input_json: &str) -> PyResult<Graph> {
    let input: toml::Table = table_of(input_json)?;
    let g = in_thread(py, move |_| api::Graph::read(input))?;
    Ok(Graph(Arc::new(g)))
}

/// A table's columns as Python takes them: (column name, numpy dtype string, little-endian
/// bytes). Integers are `<u8`; a sum that does not fit in 64 unsigned bits makes its column
/// 16-byte little-endian signed integers, dtype `i16` (the package turns them into Python
/// ints); a column with a missing value is `<f8`, NaN where a value is missing.
type PyTable<'py> = Vec<(String, &'static str, Bound<'py, PyByteArray>)>;

fn table_to_py<'py>(py: Python<'py>, t: &tuccompi::sink::Table) -> PyResult<PyTable<'py>> {
    use tuccompi::sink::Column;
    let maybe = |v: &mut dyn Iterator<Item = Option<f64>>| -> Vec<f64> {
        v.map(|x| x.unwrap_or(f64::NAN)).collect()
    };
    t.columns()
        .iter()
        .map(|(name, c)| {
            let (dtype, bytes) = match c {
                Column::U64(v) => ("<u8", bytearray(py, v, u64::to_le_bytes)?),
                Column::F64(v) => ("<f8", bytearray(py, v, f64::to_le_bytes)?),
                Column::MaybeU64(v) => match v.iter().copied().collect::<Option<Vec<u64>>>() {
                    Some(all) => ("<u8", bytearray(py, &all, u64::to_le_bytes)?),
                    None => {
                        let f = maybe(&mut v.iter().map(|x| x.map(|y| y as f64)));
                        ("<f8", bytearray(py, &f, f64::to_le_bytes)?)
                    }
                },
                Column::MaybeF64(v) => {
                    let f = maybe(&mut v.iter().copied());
                    ("<f8", bytearray(py, &f, f64::to_le_bytes)?)
                }
                Column::I128(v) => match v
                    .iter()
                    .map(|&x| u64::try_from(x))
                    .collect::<Result<Vec<u64>, _>>()
                {
                    Ok(u) => ("<u8", bytearray(py, &u, u64::to_le_bytes)?),
                    Err(_) => ("i16", bytearray(py, v, i128::to_le_bytes)?),
                },
            };
            Ok((name.clone(), dtype, bytes))
        })
        .collect()
}

/// Run `apsp` on `graph` with the config tables given as JSON and `lists`, each (dotted config
/// key, the caller's name of it, kind, little-endian bytes): kind `"ids"` (int64), `"points"`
/// (float64 pairs) or `"numbers"` (float64); they reach the run in memory (`api::List`).
/// `rows` asks for the distance rows. Returns the report (JSON text), the rows (a bytearray of
/// little-endian values, their numpy dtype string and shape, or `None`), `summary.csv`'s
/// columns ([`table_to_py`]), the other tables the config asked for (`reach.csv`,
/// `nearest.csv`, `isochrones.csv`) as (file name, columns), the ragged ones (`paths.csv`,
/// `isochrone_ids.csv`) as (file name, text), and the compact paths.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn run_apsp<'py>(
    py: Python<'py>,
    graph: &Graph,
    config_json: &str,
    lists: Vec<(String, String, String, PyBackedBytes)>,
    rows: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<(
    String,
    Option<(Bound<'py, PyByteArray>, &'static str, (usize, usize))>,
    PyTable<'py>,
    Vec<(String, PyTable<'py>)>,
    Vec<(String, String)>,
    Option<(
        Bound<'py, PyByteArray>,
        Bound<'py, PyByteArray>,
        &'static str,
    )>,
)> {
    let config = table_of(config_json)?;
    let lists = lists
        .into_iter()
        .map(|(key, name, kind, bytes)| OwnedList::new(key, name, &kind, &bytes))
        .collect::<PyResult<Vec<_>>>()?;
    let g = graph.0.clone();
    // The run's thread stores (done, tasks); the waiting thread hands changes to `progress`.
    let state = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let seen = state.clone();
    let work = move |stop: &AtomicBool| {
        let lists: Vec<api::List<'_>> = lists.iter().map(OwnedList::list).collect();
        let store = |done: u64, tasks: u64| {
            seen[1].store(tasks, Ordering::Relaxed);
            seen[0].store(done, Ordering::Relaxed);
        };
        let control = api::Control {
            interrupt: stop,
            progress: Some(&store),
        };
        Ok(api::run_apsp_watched(&g, config, &lists, rows, &control))
    };
    let mut last = (0, 0);
    let mut tick = |py: Python<'_>| -> PyResult<()> {
        let now = (
            state[0].load(Ordering::Relaxed),
            state[1].load(Ordering::Relaxed),
        );
        match &progress {
            Some(f) if now != last && now.1 > 0 => {
                last = now;
                f.call1(py, now).map(|_| ())
            }
            _ => Ok(()),
        }
    };
    let r = in_thread_ticking(py, work, &mut tick)?.map_err(to_py)?;
    let shape = (r.shape[0], r.shape[1]);
    let rows = match r.rows {
        None => None,
        Some(api::Rows::U32(v)) => Some((bytearray(py, &v, u32::to_le_bytes)?, "<u4", shape)),
        Some(api::Rows::U64(v)) => Some((bytearray(py, &v, u64::to_le_bytes)?, "<u8", shape)),
    };
    // The paths of `paths_format = "npy"`: offsets (u64, pairs + 1) and the vertex ids.
    let paths = match &r.paths {
        None => None,
        Some(p) => {
            let offsets = bytearray(py, &p.offsets, u64::to_le_bytes)?;
            Some(match &p.vertices {
                api::Ids::U32(v) => (offsets, bytearray(py, v, u32::to_le_bytes)?, "<u4"),
                api::Ids::U64(v) => (offsets, bytearray(py, v, u64::to_le_bytes)?, "<u8"),
            })
        }
    };
    let tables = r
        .tables
        .iter()
        .map(|(name, t)| Ok((name.clone(), table_to_py(py, t)?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((
        r.report.to_string(),
        rows,
        table_to_py(py, &r.summary)?,
        tables,
        r.texts,
        paths,
    ))
}

/// The shortest distance of each pair `origins[i] -> destinations[i]` (0-based int64 ids as
/// bytes, equal lengths) on the graph's resident hierarchy (`api::Graph::routes`): the
/// distances as little-endian u64 bytes (`u64::MAX` unreachable), and with `paths` the path
/// offsets (u64, pairs + 1) and vertices (u32, 0-based), and where the hierarchy came from.
#[pyfunction]
fn route<'py>(
    py: Python<'py>,
    graph: &Graph,
    origins: &[u8],
    destinations: &[u8],
    paths: bool,
) -> PyResult<RoutesPy<'py>> {
    let ids = |bytes: &[u8], what: &str| -> PyResult<Vec<u32>> {
        words(bytes, what)?
            .into_iter()
            .map(|v| {
                u32::try_from(v)
                    .map_err(|_| PyValueError::new_err(format!("{what}: {v} is not a vertex id")))
            })
            .collect()
    };
    let (o, d) = (ids(origins, "origins")?, ids(destinations, "destinations")?);
    let g = graph.0.clone();
    let r = in_thread(py, move |_| g.routes(&o, &d, paths))?;
    routes_to_py(py, r, paths)
}

/// A routes call's answer as Python takes it: the distances as little-endian u64 bytes, with
/// `paths` the path offsets (u64) and vertices (u32), and where the hierarchy came from.
type RoutesPy<'py> = (
    Bound<'py, PyByteArray>,
    Option<(Bound<'py, PyByteArray>, Bound<'py, PyByteArray>)>,
    String,
);

/// [`RoutesPy`] of `r`.
fn routes_to_py<'py>(
    py: Python<'py>,
    r: api::Routes,
    paths: bool,
) -> PyResult<RoutesPy<'py>> {
    let distances = bytearray(py, &r.distances, u64::to_le_bytes)?;
    let paths = if paths {
        Some((
            bytearray(py, &r.offsets, u64::to_le_bytes)?,
            bytearray(py, &r.vertices, u32::to_le_bytes)?,
        ))
    } else {
        None
    };
    Ok((distances, paths, r.hierarchy))
}

/// Isochrone polygons (`apsp::isochrone`, the command line's `isochrones.geojson`) of each of
/// `sources` (0-based int64 ids as bytes) for each of `limits`, buffered by `width`: a GeoJSON
/// FeatureCollection's text, one feature per source and limit in that order, in the graph's
/// coordinates (longitude/latitude, or a `.co` file's plane).
#[pyfunction]
fn isochrones(
    py: Python<'_>,
    graph: &Graph,
    sources: &[u8],
    limits: Vec<u64>,
    width: f64,
) -> PyResult<String> {
    use tuccompi_plugins::apsp::isochrone;
    use tuccompi_plugins::common::geo;
    let ids = vertex_ids(sources, "sources", graph.0.csr.n)?;
    let g = graph.0.clone();
    in_thread(py, move |_| {
        let Some(places) = g.geo.as_ref() else {
            return Err(isochrone::no_places("polygons=True", &g.csr.name));
        };
        if !(width.is_finite() && width > 0.0) {
            return Err(Error::Config(format!(
                "width = {width}: the polygons' buffer width must be a positive number (metres \
                 for longitude/latitude, the .co file's units otherwise)"
            )));
        }
        // From a restricted via vertex, the tree starts at its departure copy, as a run's
        // sources do; outputs name it by its junction.
        let starts = geo::departures(Some(places), ids.clone());
        let labels: Vec<u64> = geo::source_labels(Some(places), &starts)
            .iter()
            .map(|&v| v as u64 + g.csr.id_base)
            .collect();
        let isos = isochrone::of_sources(&g.csr, places, &starts, &labels, &limits, width)?;
        let mut text = isochrone::collection_head(places, width);
        for (k, iso) in isos.iter().enumerate() {
            if k > 0 {
                text.push_str(",\n");
            }
            isochrone::feature(&mut text, iso, width, places.coords.spherical);
        }
        text.push_str("\n]}\n");
        Ok(text)
    })
}

/// The lines of paths (`offsets`: u64 bytes, paths + 1 entries; `vertices`: 0-based u32
/// bytes, as [`route`] gives them), along the network's edges where it has their geometry
/// (OpenStreetMap), else straight between the vertices' places: each path's points start at
/// `2 * point_offsets[i]` of the f64 bytes returned (x, y each), with the point offsets (u64
/// bytes, paths + 1); an empty path, or one through a vertex without a place, has none.
#[pyfunction]
fn path_lines<'py>(
    py: Python<'py>,
    graph: &Graph,
    offsets: &[u8],
    vertices: &[u8],
) -> PyResult<(Bound<'py, PyByteArray>, Bound<'py, PyByteArray>)> {
    use tuccompi_plugins::apsp::isochrone::ArcShapes;
    let offsets = values(offsets, "offsets", "uint64", u64::from_le_bytes)?;
    let vertices = values(vertices, "vertices", "uint32", u32::from_le_bytes)?;
    let g = graph.0.clone();
    let (points, starts) = in_thread(py, move |_| {
        let Some(geo) = g.geo.as_ref() else {
            return Err(Error::Config(format!(
                "geometry=True: {} has no vertex places: read an OpenStreetMap extract, or a .gr \
                 file with coordinates=\"x.co\"",
                g.csr.name
            )));
        };
        let shapes = ArcShapes::of(geo);
        let (mut points, mut starts, mut line) = (Vec::new(), vec![0u64], Vec::new());
        for w in offsets.windows(2) {
            let path = vertices.get(w[0] as usize..w[1] as usize).unwrap_or(&[]);
            if shapes.path_line(geo, path, &mut line) {
                points.extend(line.iter().flatten().copied());
            }
            starts.push(points.len() as u64 / 2);
        }
        Ok((points, starts))
    })?;
    Ok((
        bytearray(py, &points, f64::to_le_bytes)?,
        bytearray(py, &starts, u64::to_le_bytes)?,
    ))
}

/// The network's arcs with their lines (`Graph.edges`): tails, heads (0-based u32 bytes) and
/// weights (u32 bytes), and the lines as [`path_lines`] gives them (f64 x, y bytes, and u64
/// point offsets, arcs + 1). Turn-restriction copies are shown as their junction
/// (`Geo::road_vertex`, as [`route`]'s paths): the arcs that then join the same two junctions
/// are one, at the lightest weight (its line the lightest way's, as routes draw it), and a
/// copy's zero-weight link to its own junction, a loop there, is left out. A graph without
/// copies gives its CSR's arcs in order. O(A) for A arcs, and the lines' points.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn edges<'py>(
    py: Python<'py>,
    graph: &Graph,
) -> PyResult<(
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
)> {
    use std::collections::HashMap;
    use tuccompi_plugins::apsp::isochrone::ArcShapes;
    let g = graph.0.clone();
    let (arcs, points, starts) = in_thread(py, move |_| {
        let Some(geo) = g.geo.as_ref() else {
            return Err(Error::Config(format!(
                "edges: {} has no coordinates: read an OpenStreetMap extract, or a .gr file \
                 with coordinates=\"x.co\"",
                g.csr.name
            )));
        };
        let c = &g.csr;
        // (junction tail, junction head, weight, graph tail, graph head), in CSR order.
        let mut all: Vec<(u32, u32, u32, u32, u32)> = Vec::with_capacity(c.m());
        for u in 0..c.n {
            for k in c.offsets[u] as usize..c.offsets[u + 1] as usize {
                let (u, v) = (u as u32, c.targets[k]);
                let (a, b) = (geo.road_vertex(u), geo.road_vertex(v));
                if a != b {
                    all.push((a, b, c.weights[k], u, v));
                }
            }
        }
        // Copies have ids above every road vertex: a stable sort by junction puts their arcs
        // after the junction's own, and leaves a graph without copies in CSR order.
        all.sort_by_key(|a| a.0);
        let mut arcs: Vec<(u32, u32, u32, u32, u32)> = Vec::with_capacity(all.len());
        let mut at: HashMap<u32, usize> = HashMap::new();
        for group in all.chunk_by(|x, y| x.0 == y.0) {
            at.clear();
            for &arc in group {
                match at.get(&arc.1) {
                    Some(&i) if arcs[i].2 <= arc.2 => {}
                    Some(&i) => arcs[i] = arc,
                    None => {
                        at.insert(arc.1, arcs.len());
                        arcs.push(arc);
                    }
                }
            }
        }
        let shapes = ArcShapes::of(geo);
        let (mut points, mut starts, mut line) = (Vec::new(), vec![0u64], Vec::new());
        for &(_, _, _, u, v) in &arcs {
            if shapes.line(geo, u, v, &mut line) {
                points.extend(line.iter().flatten().copied());
            }
            starts.push(points.len() as u64 / 2);
        }
        Ok((arcs, points, starts))
    })?;
    let column =
        |f: fn(&(u32, u32, u32, u32, u32)) -> u32| -> Vec<u32> { arcs.iter().map(f).collect() };
    Ok((
        bytearray(py, &column(|a| a.0), u32::to_le_bytes)?,
        bytearray(py, &column(|a| a.1), u32::to_le_bytes)?,
        bytearray(py, &column(|a| a.2), u32::to_le_bytes)?,
        bytearray(py, &points, f64::to_le_bytes)?,
        bytearray(py, &starts, u64::to_le_bytes)?,
    ))
}

/// 0-based vertex ids from int64 bytes, each checked against the `n` vertices.
fn vertex_ids(bytes: &[u8], what: &str, n: usize) -> PyResult<Vec<u32>> {
    words(bytes, what)?
        .into_iter()
        .map(|v| match u32::try_from(v) {
            Ok(u) if (u as usize) < n => Ok(u),
            _ => Err(PyValueError::new_err(format!(
                "{what}: {v} is not a vertex of a graph of {n} vertices"
            ))),
        })
        .collect()
}

/// Points (little-endian float64 x, y pairs) snapped as the graph snaps them (`to`: `None`),
/// onto the nearest edge (`"edge"`) or to the nearest vertex (`"vertex"`): per point the
/// vertex (u32 bytes, `u32::MAX` inside an edge), the distance (f64), the edge's tail and head
/// (u32, `u32::MAX` when snapped to a vertex), the fraction along the edge (f64, NaN then),
/// the weight from the tail (u64) and the place it snapped to (f64 pairs).
#[pyfunction]
#[pyo3(signature = (graph, points, name, to=None))]
#[allow(clippy::type_complexity)]
fn snap<'py>(
    py: Python<'py>,
    graph: &Graph,
    points: &[u8],
    name: &str,
    to: Option<&str>,
) -> PyResult<(
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
    Bound<'py, PyByteArray>,
)> {
    let p = points_of(points, name)?;
    let onto = match to {
        None => None,
        Some("edge") => Some(true),
        Some("vertex") => Some(false),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "to = {other:?}: \"edge\" (the nearest road) or \"vertex\" (the nearest \
                 junction), or None for the graph's own setting"
            )))
        }
    };
    let g = graph.0.clone();
    let what = name.to_string();
    let s = in_thread(py, move |_| match onto {
        None => g.snap(&p, &what),
        Some(edges) => g.snap_to(&p, &what, edges),
    })?;
    let places: Vec<f64> = s.places.iter().flatten().copied().collect();
    Ok((
        bytearray(py, &s.vertices, u32::to_le_bytes)?,
        bytearray(py, &s.distances, f64::to_le_bytes)?,
        bytearray(py, &s.tails, u32::to_le_bytes)?,
        bytearray(py, &s.heads, u32::to_le_bytes)?,
        bytearray(py, &s.fractions, f64::to_le_bytes)?,
        bytearray(py, &s.offsets, u64::to_le_bytes)?,
        bytearray(py, &places, f64::to_le_bytes)?,
    ))
}

/// Whether the graph snaps points onto the nearest edge (an OpenStreetMap graph read with
/// `snap = "edge"`, the default): its trips from points start on the roads, as phantoms.
#[pyfunction]
fn snaps_onto_edges(graph: &Graph) -> bool {
    graph.0.snaps_onto_edges()
}

/// Trip ends from Python: `("ids", int64 bytes)` (0-based vertex ids) or `("points", float64
/// pair bytes)`, owned by the work's thread.
enum OwnedEnds {
    Vertices(Vec<u32>),
    Points(Vec<[f64; 2]>),
}

impl OwnedEnds {
    fn new(kind: &str, bytes: &[u8], what: &str, n: usize) -> PyResult<OwnedEnds> {
        match kind {
            "ids" => Ok(OwnedEnds::Vertices(vertex_ids(bytes, what, n)?)),
            "points" => Ok(OwnedEnds::Points(points_of(bytes, what)?)),
            _ => Err(PyValueError::new_err(format!(
                "{what}: kind {kind:?} is neither \"ids\" nor \"points\""
            ))),
        }
    }

    fn ends(&self) -> api::Ends<'_> {
        match self {
            OwnedEnds::Vertices(v) => api::Ends::Vertices(v),
            OwnedEnds::Points(p) => api::Ends::Points(p),
        }
    }
}

/// [`route`] between trip ends that may be points snapped onto edges (`api::Graph::routes_at`):
/// each list as (kind, bytes) ([`OwnedEnds`]).
#[pyfunction]
fn route_at<'py>(
    py: Python<'py>,
    graph: &Graph,
    origins: (String, PyBackedBytes),
    destinations: (String, PyBackedBytes),
    paths: bool,
) -> PyResult<RoutesPy<'py>> {
    let n = graph.0.csr.n;
    let o = OwnedEnds::new(&origins.0, &origins.1, "origins", n)?;
    let d = OwnedEnds::new(&destinations.0, &destinations.1, "destinations", n)?;
    let g = graph.0.clone();
    let r = in_thread(py, move |_| g.routes_at(o.ends(), d.ends(), paths))?;
    routes_to_py(py, r, paths)
}

/// The distance matrix between trip ends that may be points snapped onto edges
/// (`api::Graph::matrix_at`): row-major little-endian u64 (`u64::MAX` unreachable), and
/// where the hierarchy came from.
#[pyfunction]
fn od_at<'py>(
    py: Python<'py>,
    graph: &Graph,
    sources: (String, PyBackedBytes),
    targets: (String, PyBackedBytes),
) -> PyResult<(Bound<'py, PyByteArray>, String)> {
    let n = graph.0.csr.n;
    let s = OwnedEnds::new(&sources.0, &sources.1, "sources", n)?;
    let t = OwnedEnds::new(&targets.0, &targets.1, "targets", n)?;
    let g = graph.0.clone();
    let r = in_thread(py, move |_| g.matrix_at(s.ends(), t.ends()))?;
    Ok((bytearray(py, &r.distances, u64::to_le_bytes)?, r.hierarchy))
}

/// `[x, y]` points from little-endian float64 pairs.
fn points_of(bytes: &[u8], name: &str) -> PyResult<Vec<[f64; 2]>> {
    values(bytes, name, "point (2 x float64)", |b: [u8; 16]| {
        let (x, y) = b.split_at(8);
        [
            f64::from_le_bytes(x.try_into().expect("8 bytes")),
            f64::from_le_bytes(y.try_into().expect("8 bytes")),
        ]
    })
}

/// `values` as a bytearray of little-endian bytes, allocated by Python (MemoryError when it
/// cannot be had).
fn bytearray<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyByteArray>> {
    PyByteArray::new_with(py, values.len() * N, |buf| {
        le_bytes(values, buf, to);
        Ok(())
    })
}

/// A list from Python (see [`run_apsp`]), owned by the run's thread.
struct OwnedList {
    key: String,
    name: String,
    values: OwnedValues,
}

enum OwnedValues {
    Ids(Vec<i64>),
    Points(Vec<[f64; 2]>),
    Numbers(Vec<f64>),
}

impl OwnedList {
    fn new(key: String, name: String, kind: &str, bytes: &[u8]) -> PyResult<OwnedList> {
        let values = match kind {
            "ids" => OwnedValues::Ids(words(bytes, &name)?),
            "points" => OwnedValues::Points(points_of(bytes, &name)?),
            "numbers" => OwnedValues::Numbers(values(bytes, &name, "float64", f64::from_le_bytes)?),
            other => {
                return Err(PyValueError::new_err(format!(
                    "{name}: list kind {other:?}, not \"ids\", \"points\" or \"numbers\" (a bug in tuccompi)"
                )))
            }
        };
        Ok(OwnedList { key, name, values })
    }

    fn list(&self) -> api::List<'_> {
        api::List {
            key: &self.key,
            name: &self.name,
            values: match &self.values {
                OwnedValues::Ids(v) => api::Values::Ids(v),
                OwnedValues::Points(v) => api::Values::Points(v),
                OwnedValues::Numbers(v) => api::Values::Numbers(v),
            },
        }
    }
}

/// Run a config file as `tuccompi run` does (any plugin of the registry); `unfinished` is
/// "refuse", "resume" or "restart". Returns the report as JSON text.
#[pyfunction]
fn run_config(
    py: Python<'_>,
    path: std::path::PathBuf,
    overrides: Vec<String>,
    unfinished: &str,
) -> PyResult<String> {
    use tuccompi::runtime::Unfinished;
    let unfinished = match unfinished {
        "refuse" => Unfinished::Refuse,
        "resume" => Unfinished::Resume,
        "restart" => Unfinished::Discard,
        other => {
            return Err(PyValueError::new_err(format!(
                "unfinished = {other:?}: one of \"refuse\", \"resume\", \"restart\""
            )))
        }
    };
    let r = in_thread(py, move |stop| {
        api::run_config(&path, &overrides, unfinished, stop)
    })?;
    Ok(r.to_string())
}

/// The registry's plugins: (name, description) each.
#[pyfunction]
fn plugins() -> Vec<(&'static str, &'static str)> {
    tuccompi_plugins::registry()
        .iter()
        .map(|p| (p.name(), p.description()))
        .collect()
}

/// A JSON object (from the Python half's `json.dumps`) as a TOML table.
fn table_of(json: &str) -> PyResult<toml::Table> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let toml::Value::Table(t) = json_to_toml(v)? else {
        return Err(PyValueError::new_err("the config is not a table"));
    };
    Ok(t)
}

fn json_to_toml(v: serde_json::Value) -> PyResult<toml::Value> {
    use serde_json::Value as J;
    Ok(match v {
        J::Bool(b) => toml::Value::Boolean(b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => match n.as_f64() {
                Some(f) if n.is_f64() => toml::Value::Float(f),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "{n}: an integer beyond the 64-bit range the config takes"
                    )))
                }
            },
        },
        J::String(s) => toml::Value::String(s),
        J::Array(a) => toml::Value::Array(
            a.into_iter()
                .map(json_to_toml)
                .collect::<PyResult<Vec<_>>>()?,
        ),
        J::Object(o) => {
            let mut t = toml::Table::new();
            for (k, v) in o {
                if !v.is_null() {
                    t.insert(k, json_to_toml(v)?);
                }
            }
            toml::Value::Table(t)
        }
        J::Null => {
            return Err(PyValueError::new_err(
                "None is not a config value (leave the key out)",
            ))
        }
    })
}

/// Run `work` on a thread of its own while this one waits with the GIL released (module doc):
/// log records go to `logging` as they come, and KeyboardInterrupt stops the work.
fn in_thread<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> tuccompi::Result<T> + Send + 'static,
) -> PyResult<T> {
    in_thread_ticking(py, work, &mut |_| Ok(()))
}

/// [`in_thread`], calling `tick` with the GIL at each wake-up and once at the end (a progress
/// callback): its error (a KeyboardInterrupt raised in it, say) stops the work as a signal
/// does.
fn in_thread_ticking<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> tuccompi::Result<T> + Send + 'static,
    tick: &mut dyn FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::bounded(1);
    let flag = stop.clone();
    let id = LIVE.lock().add(stop.clone());
    let spawned = std::thread::Builder::new()
        .name("tuccompi-run".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&flag)));
            let _ = tx.send(r);
            LIVE.lock().remove(id);
            ENDED.notify_all();
        });
    if let Err(e) = spawned {
        LIVE.lock().remove(id);
        return Err(PyRuntimeError::new_err(format!(
            "could not start the run's thread: {e}"
        )));
    }
    loop {
        let got = py.detach(|| rx.recv_timeout(POLL));
        log::forward(py);
        let ticked = tick(py);
        match got {
            Ok(Ok(r)) => return ticked.and(r.map_err(to_py)),
            Ok(Err(panic)) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                return Err(PyRuntimeError::new_err(format!(
                    "tuccompi panicked (a bug in tuccompi: please report it): {what}"
                )));
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                if let Err(e) = ticked.and_then(|()| py.check_signals()) {
                    stop.store(true, Ordering::Relaxed);
                    // The run's running chunks finish; its temporary files go with it.
                    let _ = py.detach(|| rx.recv_timeout(STOP_WAIT));
                    log::forward(py);
                    return Err(e);
                }
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the run's thread ended without a result (a bug in tuccompi)",
                ))
            }
        }
    }
}

/// The Python exception of an error, with the CLI's message.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            std::io::ErrorKind::OutOfMemory => PyMemoryError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
        ref e if api::out_of_memory(e) => PyMemoryError::new_err(msg),
        Error::Config(_) | Error::Input(_) | Error::Parse { .. } => PyValueError::new_err(msg),
        Error::Interrupted { .. } => PyKeyboardInterrupt::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// Bytes this process can still have (MemAvailable, lowered to a cgroup's limit), or `None`
/// where that cannot be read: what a result is checked against before a run.
#[pyfunction]
fn available_memory() -> Option<u64> {
    tuccompi_plugins::graph::memory::available()
}

/// Runs whose thread is still working (one a KeyboardInterrupt left behind, say), each with
/// its stop flag.
static LIVE: parking_lot::Mutex<Live> = parking_lot::Mutex::new(Live {
    next: 0,
    runs: Vec::new(),
});
/// Signalled each time a run's thread ends.
static ENDED: parking_lot::Condvar = parking_lot::Condvar::new();

struct Live {
    next: u64,
    runs: Vec<(u64, Arc<AtomicBool>)>,
}

impl Live {
    fn add(&mut self, stop: Arc<AtomicBool>) -> u64 {
        self.next += 1;
        self.runs.push((self.next, stop));
        self.next
    }
    fn remove(&mut self, id: u64) {
        self.runs.retain(|(i, _)| *i != id);
    }
}

/// Wait at most `timeout` seconds for every run's thread to end, after telling each to stop
/// when `stop` (no more chunks are handed out). The package calls it at interpreter exit and
/// when a terminating signal came during a call, so that the runs end (and a cache being
/// written is finished) before the process goes. Whether all had ended.
#[pyfunction]
#[pyo3(signature = (timeout, stop = false))]
fn wait_runs(py: Python<'_>, timeout: f64, stop: bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
    py.detach(|| {
        let mut live = LIVE.lock();
        if stop {
            for (_, flag) in &live.runs {
                flag.store(true, Ordering::Relaxed);
            }
        }
        while !live.runs.is_empty() {
            if ENDED.wait_until(&mut live, deadline).timed_out() {
                break;
            }
        }
        live.runs.is_empty()
    })
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    log::install();
    m.add_class::<Graph>()?;
    m.add_function(wrap_pyfunction!(graph_from_arcs, m)?)?;
    m.add_function(wrap_pyfunction!(graph_from_csr, m)?)?;
    m.add_function(wrap_pyfunction!(read_graph, m)?)?;
    m.add_function(wrap_pyfunction!(run_apsp, m)?)?;
    m.add_function(wrap_pyfunction!(route, m)?)?;
    m.add_function(wrap_pyfunction!(snap, m)?)?;
    m.add_function(wrap_pyfunction!(route_at, m)?)?;
    m.add_function(wrap_pyfunction!(od_at, m)?)?;
    m.add_function(wrap_pyfunction!(snaps_onto_edges, m)?)?;
    m.add_function(wrap_pyfunction!(isochrones, m)?)?;
    m.add_function(wrap_pyfunction!(path_lines, m)?)?;
    m.add_function(wrap_pyfunction!(edges, m)?)?;
    m.add_function(wrap_pyfunction!(run_config, m)?)?;
    m.add_function(wrap_pyfunction!(plugins, m)?)?;
    m.add_function(wrap_pyfunction!(wait_runs, m)?)?;
    m.add_function(wrap_pyfunction!(available_memory, m)?)?;
    Ok(())
}
