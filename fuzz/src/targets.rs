//! The fuzz targets: one function per parser or recovery path, taking the input's bytes and
//! calling the real reader through its public API (a reader that takes a path gets a file in
//! this thread's scratch folder). Each returns whether the reader accepted the input. A target
//! passes when the reader returns `Ok` or `Err`; it panics (a finding) when the reader does, or
//! when what it accepted breaks the reader's own promises (ids within the graph, a `.gz` read
//! like its text, counts that agree).
//!
//! Binary targets with a *mode* take it from their first byte: the raw bytes as a file, or the
//! bytes wrapped or sealed (valid checksums, a valid container) so that mutations reach the
//! checks behind the checksums.

use crate::encode;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use tuccompi::config::Plan;
use tuccompi_plugins::apsp::phast::cache as ch_cache;
use tuccompi_plugins::apsp::phast::ch::{ChParams, ChWeight, Hierarchy};
use tuccompi_plugins::common::input::{Input, InputOptions, InputSpec, NoArc};
use tuccompi_plugins::common::Sources;
use tuccompi_plugins::graph::{self, cache as graph_cache, osm, Csr, EdgeList, NpyMatrix};

/// Inputs of text formats are at most this long; binary ones too.
pub const MAX_LEN: usize = 64 << 10;

/// A fuzz target: its name (the corpus folder `corpus/NAME`), the function, and how the
/// mutator treats its inputs.
#[derive(Debug)]
pub struct Target {
    /// The name: its test, its corpus folder, its findings folder.
    pub name: &'static str,
    /// What it fuzzes, in words.
    pub about: &'static str,
    /// Calls the parser on the input; whether the parser accepted it.
    pub run: fn(&[u8]) -> bool,
    /// Whether its inputs are text (token-level mutations apply).
    pub text: bool,
    /// Tokens of its format, inserted by the mutator.
    pub dict: &'static [&'static str],
    /// Mutated cases the CI runs (fixed seed), sized so that the 23 targets together stay a
    /// small part of CI's time (longer fuzzing: `TUCCOMPI_FUZZ_SECONDS` or the libfuzzer
    /// crate).
    pub cases: u64,
}

const GR: &[&str] = &["c", "p", "sp", "a", "p sp ", "a 1 1 "];
const MTX: &[&str] = &[
    "%%MatrixMarket",
    "matrix",
    "coordinate",
    "pattern",
    "integer",
    "real",
    "general",
    "symmetric",
    "%",
];
const EL: &[&str] = &["#", "%", "0", "1"];
const CSV: &[&str] = &[
    "source", "target", "weight", "a", "b", "\"", "\"\"", ",", "\t",
];
const CO: &[&str] = &["c", "p", "aux", "sp", "co", "v", "p aux sp co ", "v 1 "];
const IDS: &[&str] = &["id", "lon", "lat", "#", ",", "\u{feff}"];
const NPY: &[&str] = &[
    "\u{93}NUMPY",
    "'descr'",
    "'<i8'",
    "'<f4'",
    "'>u2'",
    "'|u1'",
    "'<f8'",
    "'<c16'",
    "'O'",
    "'fortran_order'",
    "True",
    "False",
    "'shape'",
    "(2, 2)",
    "(,)",
    "()",
    "(0,)",
    "(4294967296, 4294967296)",
];
const CONFIG: &[&str] = &[
    "[run]",
    "[input]",
    "[input.generate]",
    "[input.osm]",
    "[units]",
    "[scheduler]",
    "[output]",
    "[verify]",
    "[apsp]",
    "[nodes]",
    "plugin",
    "sources",
    "tasks",
    "path",
    "model",
    "vertices",
    "device_type",
    "policy",
    "dir",
    "\"apsp\"",
    "\"all\"",
    "\"auto\"",
    "\"road\"",
    "\"grid\"",
    "true",
    "{ file = \"x.txt\" }",
    "[1, 2, 3]",
    "[[1.0, 2.0]]",
    "#--set ",
    "run.tasks=",
    "apsp.sources=",
    "input.path=",
    "'''",
    "\"\"\"",
];
const SET: &[&str] = &[
    "run.tasks=",
    "apsp.sources=",
    "run.plugin=",
    "input.path=",
    "input.generate.vertices=",
    "units.device_type=",
    "scheduler.policy=",
    "apsp.batch=",
    "output.dir=",
    "all",
    "\"all\"",
    "{ file = \"x.txt\" }",
    "[1, 2]",
    "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p",
    "=",
    ".",
];
const JSON: &[&str] = &[
    "{",
    "}",
    "\"version\"",
    "\"entries\"",
    "\"latency\"",
    "\"per_task\"",
    "\"tasks\"",
    "\"stored\"",
    ":",
    "1e999",
    "-0.0",
    "null",
];
const TOML: &[&str] = &[
    "# tuccompi tuning cache",
    "[entries]",
    "[entries.\"a | b\"]",
    "local_size",
    "batch",
    "knobs",
    "= 0",
    "= 18446744073709551615",
    "= -1",
    "{}",
];

/// Every target, in the order the tests and the guide list them.
#[rustfmt::skip]
pub const TARGETS: &[Target] = &[
    Target { name: "gr", about: "DIMACS .gr (and its .gz)", run: gr, text: true, dict: GR, cases: 4000 },
    Target { name: "mtx", about: "Matrix Market .mtx (and its .gz)", run: mtx, text: true, dict: MTX, cases: 3000 },
    Target { name: "el", about: "edge list .el (and its .gz)", run: el, text: true, dict: EL, cases: 2500 },
    Target { name: "wel", about: "weighted edge list .wel (and its .gz)", run: wel, text: true, dict: EL, cases: 3000 },
    Target { name: "txt", about: "edge list .txt (and its .gz)", run: txt, text: true, dict: EL, cases: 3000 },
    Target { name: "csv", about: ".csv edge list with a header, with columns and weight_scale", run: csv, text: true, dict: CSV, cases: 2000 },
    Target { name: "tsv", about: ".tsv edge list with a header (and its .gz)", run: tsv, text: true, dict: CSV, cases: 2000 },
    Target { name: "gz", about: "gzip streams of every graph format and .co", run: gz, text: false, dict: &[], cases: 4000 },
    Target { name: "co", about: "DIMACS .co coordinates", run: co, text: true, dict: CO, cases: 5000 },
    Target { name: "ids_txt", about: "id files: .txt (apsp.sources = { file })", run: ids_txt, text: true, dict: IDS, cases: 4000 },
    Target { name: "ids_csv", about: "id and point files: .csv", run: ids_csv, text: true, dict: IDS, cases: 4000 },
    Target { name: "ids_npy", about: "id and point files: .npy", run: ids_npy, text: false, dict: NPY, cases: 4000 },
    Target { name: "npy", about: "tuccompi::npy::read, every element type", run: npy, text: false, dict: NPY, cases: 1500 },
    Target { name: "npy_matrix", about: "dense .npy matrices (open, scan, fill, arcs)", run: npy_matrix, text: false, dict: NPY, cases: 3000 },
    Target { name: "osm", about: ".osm.pbf (raw, and blocks wrapped in valid blobs)", run: osm_pbf, text: false, dict: &[], cases: 6000 },
    Target { name: "config", about: "the config: TOML to Plan, with --set lines", run: config, text: true, dict: CONFIG, cases: 3000 },
    Target { name: "set", about: "--set KEY=VALUE overrides on a fixed config", run: set, text: true, dict: SET, cases: 6000 },
    Target { name: "journal", about: "journal replay (raw, and sealed against bulk rows)", run: journal, text: false, dict: &[], cases: 4000 },
    Target { name: "commit_marker", about: "the commit marker and the output directory's manifest (parse, prove, finish, validate)", run: commit_marker, text: true, dict: JSON, cases: 1500 },
    Target { name: "history", about: "the speed history", run: history, text: true, dict: JSON, cases: 4000 },
    Target { name: "tuning_cache", about: "the tuning cache (read, load, save, read again)", run: tuning_cache, text: true, dict: TOML, cases: 2000 },
    Target { name: "graph_cache", about: "the graph cache (raw, with the identity, sealed)", run: graph_cache, text: false, dict: &[], cases: 5000 },
    Target { name: "hierarchy_cache", about: "the hierarchy cache (raw, sealed; 32- and 64-bit)", run: hierarchy_cache, text: false, dict: &[], cases: 2000 },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

thread_local! {
    /// This thread's scratch folder (removed when the thread ends).
    static SCRATCH: tempfile::TempDir = tempfile::Builder::new()
        .prefix("tuccompi-fuzz-")
        .tempdir()
        .expect("a temporary folder for the fuzz inputs");
    /// Per-thread fixtures that cost more than a case: plans, cache templates.
    static FIXTURES: RefCell<Fixtures> = RefCell::new(Fixtures::default());
}

#[derive(Default)]
struct Fixtures {
    ids_plans: Vec<(String, Plan)>,
    graph_cache: Option<(graph_cache::Identity, Vec<u8>)>,
}

/// The path of `name` in this thread's scratch folder.
pub fn scratch(name: &str) -> PathBuf {
    SCRATCH.with(|d| d.path().join(name))
}

/// `data` written to `name` in this thread's scratch folder.
pub fn file(name: &str, data: &[u8]) -> PathBuf {
    let p = scratch(name);
    std::fs::write(&p, data).expect("writing a fuzz input to the scratch folder");
    p
}

// ---------------------------------------------------------------------------------------------
// Graph formats.

/// What a reader accepted must be a graph: at least one vertex, every arc inside it; a small
/// one also builds a CSR whose rows hold every arc.
fn check_edges(g: &EdgeList, input_len: usize) {
    assert!(g.n > 0, "a graph of no vertices accepted");
    for &(u, v, _) in &g.arcs {
        assert!(
            (u as usize) < g.n && (v as usize) < g.n,
            "arc {u} -> {v} outside the {} vertices",
            g.n
        );
    }
    // A header may declare many isolated vertices; build only graphs the size of the input.
    if g.n <= 64 * (input_len + 64) {
        if let Ok(c) = Csr::from_edges(g) {
            assert_eq!(c.offsets.len(), c.n + 1);
            assert_eq!(c.offsets[c.n] as usize, c.m());
            assert!(c.offsets.windows(2).all(|w| w[0] <= w[1]));
            assert!(c.targets.iter().all(|&v| (v as usize) < c.n));
            assert!(c.m() <= g.arcs.len());
        }
    }
}

/// Read `data` as `g.EXT` and as `g.EXT.gz`: the two must agree.
fn graph(ext: &str, data: &[u8], options: &InputOptions) -> bool {
    let plain = graph::read_graph_with(&file(&format!("g.{ext}"), data), options);
    let gz = graph::read_graph_with(&file(&format!("g.{ext}.gz"), &encode::gzip(data)), options);
    match (&plain, &gz) {
        (Ok(a), Ok(b)) => assert!(
            (a.n, &a.arcs, a.id_base) == (b.n, &b.arcs, b.id_base),
            "g.{ext} and g.{ext}.gz read as different graphs"
        ),
        (Ok(_), Err(e)) => panic!("g.{ext} is read, its .gz refused: {e}"),
        (Err(e), Ok(_)) => panic!("g.{ext}.gz is read, g.{ext} refused: {e}"),
        (Err(_), Err(_)) => {}
    }
    match plain {
        Ok(g) => {
            check_edges(&g, data.len());
            true
        }
        Err(_) => false,
    }
}

/// DIMACS `.gr`.
pub fn gr(data: &[u8]) -> bool {
    graph("gr", data, &InputOptions::default())
}

/// Matrix Market `.mtx`.
pub fn mtx(data: &[u8]) -> bool {
    graph("mtx", data, &InputOptions::default())
}

/// Unweighted edge list `.el`.
pub fn el(data: &[u8]) -> bool {
    graph("el", data, &InputOptions::default())
}

/// Weighted edge list `.wel`.
pub fn wel(data: &[u8]) -> bool {
    graph("wel", data, &InputOptions::default())
}

/// Edge list `.txt` (two or three columns).
pub fn txt(data: &[u8]) -> bool {
    graph("txt", data, &InputOptions::default())
}

/// The `[input]` options a delimited file is also read with: scaled weights, and columns
/// `a,b` (unweighted) or `a,b,w`.
fn table_options() -> [InputOptions; 3] {
    let names = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect());
    [
        InputOptions {
            weight_scale: Some(1000.0),
            ..Default::default()
        },
        InputOptions {
            columns: names(&["a", "b"]),
            ..Default::default()
        },
        InputOptions {
            columns: names(&["a", "b", "w"]),
            weight_scale: Some(0.1),
            ..Default::default()
        },
    ]
}

fn table(ext: &str, data: &[u8]) -> bool {
    let ok = graph(ext, data, &InputOptions::default());
    for o in table_options() {
        if let Ok(g) = graph::read_graph_with(&file(&format!("o.{ext}"), data), &o) {
            check_edges(&g, data.len());
        }
    }
    ok
}

/// `.csv` edge list with a header.
pub fn csv(data: &[u8]) -> bool {
    table("csv", data)
}

/// `.tsv` edge list with a header.
pub fn tsv(data: &[u8]) -> bool {
    table("tsv", data)
}

/// A gzip stream (first byte: which format it holds) as `.gr.gz`, `.mtx.gz`, `.wel.gz`,
/// `.csv.gz` or `.co.gz`.
pub fn gz(data: &[u8]) -> bool {
    let Some((&which, rest)) = data.split_first() else {
        return false;
    };
    let names = ["g.gr.gz", "g.mtx.gz", "g.wel.gz", "g.csv.gz", "c.co.gz"];
    let name = names[which as usize % names.len()];
    let p = file(name, rest);
    if name.starts_with("c.") {
        return graph::read_co(&p, 4).is_ok();
    }
    match graph::read_graph(&p) {
        Ok(g) => {
            check_edges(&g, rest.len());
            true
        }
        Err(_) => false,
    }
}

/// DIMACS `.co` coordinates, for a graph of as many vertices as its `p` line declares (when
/// that is small) and as it has `v` lines.
pub fn co(data: &[u8]) -> bool {
    let p = file("c.co", data);
    let text = String::from_utf8_lossy(data);
    let declared = text.lines().find_map(|l| {
        let t: Vec<&str> = l.split_ascii_whitespace().collect();
        match t.as_slice() {
            ["p", "aux", "sp", "co", n] => n.parse::<usize>().ok().filter(|&n| n <= 1 << 16),
            _ => None,
        }
    });
    let v_lines = text.lines().filter(|l| l.starts_with('v')).count();
    let mut ok = false;
    for n in declared.into_iter().chain([v_lines]) {
        if let Ok(c) = graph::read_co(&p, n) {
            assert_eq!(c.points.len(), n);
            assert!(c
                .points
                .iter()
                .all(|p| p.is_some_and(|[x, y]| x.is_finite() && y.is_finite())));
            if n > 0 {
                let first = c.points[0].expect("checked");
                let s = c.index().snap(first, "apsp.sources", 0);
                assert!(s.is_ok_and(|s| (s.vertex as usize) < n));
            }
            ok = true;
        }
    }
    ok
}

// ---------------------------------------------------------------------------------------------
// Id files.

/// `apsp.sources = { file = NAME }` read as a run reads it (duplicates refused, naming lines),
/// then resolved against a graph of 1000 vertices.
fn ids(name: &str, data: &[u8]) -> bool {
    let path = file(name, data);
    FIXTURES.with(|f| {
        let mut f = f.borrow_mut();
        if !f.ids_plans.iter().any(|(n, _)| n == name) {
            let text = format!(
                "[run]\nplugin = \"apsp\"\n[apsp]\nsources = {{ file = {:?} }}\n",
                path.display().to_string()
            );
            let plan = Plan::from_toml(&text, Path::new("fuzz.toml"), &[])
                .expect("the id files' config is valid");
            f.ids_plans.push((name.to_string(), plan));
        }
        let plan = &f.ids_plans.iter().find(|(n, _)| n == name).expect("made").1;
        let keys = tuccompi_plugins::common::sources::split_options::<
            tuccompi_plugins::apsp::ApspOptions,
        >(plan, "apsp")
        .expect("the id files' config is valid")
        .1;
        let Ok((sources, origins)) = tuccompi_plugins::common::ids::sources(plan, &keys) else {
            return false;
        };
        match &sources {
            Sources::List(list) => {
                assert!(!list.is_empty(), "an empty id list accepted");
                let n = 1000;
                if let Ok(v) = tuccompi_plugins::common::ids::resolve(
                    list,
                    origins.as_ref(),
                    "apsp.sources",
                    n,
                    0,
                ) {
                    assert!(v.iter().all(|&i| (i as usize) < n));
                }
            }
            Sources::Points(points) => {
                assert!(!points.is_empty(), "an empty point list accepted");
                assert!(points.iter().flatten().all(|c| c.is_finite()));
            }
            other => panic!("an id file read as {other:?}"),
        }
        true
    })
}

/// An id file `.txt`.
pub fn ids_txt(data: &[u8]) -> bool {
    ids("ids.txt", data)
}

/// An id or point file `.csv`.
pub fn ids_csv(data: &[u8]) -> bool {
    ids("ids.csv", data)
}

/// An id or point file `.npy`.
pub fn ids_npy(data: &[u8]) -> bool {
    ids("ids.npy", data)
}

// ---------------------------------------------------------------------------------------------
// .npy.

fn npy_as<T: tuccompi::npy::Element + std::fmt::Debug>(p: &Path) -> bool {
    let mut ok = false;
    for dims in [None, Some(1), Some(2)] {
        if let Ok(a) = tuccompi::npy::read::<T>(p, dims) {
            let count: usize = a.shape.iter().product();
            assert_eq!(a.data.len(), count, "shape {:?}", a.shape);
            if a.shape.len() <= 2 {
                // Rows of no columns hold no data: a shape of (10^15, 0) is read in no time.
                for i in 0..a.rows().min(a.data.len() + 1) {
                    let _ = a.row(i);
                }
            }
            ok = true;
        }
    }
    ok
}

/// [`tuccompi::npy::read`] at every element type and a few dimension counts.
pub fn npy(data: &[u8]) -> bool {
    let p = file("a.npy", data);
    let mut ok = npy_as::<i8>(&p);
    ok |= npy_as::<u8>(&p);
    ok |= npy_as::<i16>(&p);
    ok |= npy_as::<u16>(&p);
    ok |= npy_as::<i32>(&p);
    ok |= npy_as::<u32>(&p);
    ok |= npy_as::<i64>(&p);
    ok |= npy_as::<u64>(&p);
    ok |= npy_as::<f32>(&p);
    ok |= npy_as::<f64>(&p);
    ok
}

/// A dense `.npy` matrix (the Floyd-Warshall and dense Dijkstra input) with the default
/// options, `no_arc`, and `weight_scale`: opened, scanned, filled and listed as arcs; the
/// scan and the arcs must count the same.
pub fn npy_matrix(data: &[u8]) -> bool {
    let p = file("m.npy", data);
    let variants = [
        InputOptions::default(),
        InputOptions {
            no_arc: Some(NoArc::Int(-1)),
            ..Default::default()
        },
        InputOptions {
            no_arc: Some(NoArc::Float(0.0)),
            weight_scale: Some(1000.0),
            ..Default::default()
        },
    ];
    let mut ok = false;
    for o in &variants {
        let Ok(m) = NpyMatrix::open(&p, o) else {
            continue;
        };
        let Ok(stats) = m.scan() else {
            continue;
        };
        let arcs = m.arcs();
        assert_eq!(stats.arcs, arcs.len() as u64, "scan and arcs disagree");
        assert!(arcs
            .iter()
            .all(|&(u, v, _)| u != v && (u as usize) < m.n && (v as usize) < m.n));
        let mut out = vec![0i64; m.n * m.n];
        m.fill(&mut out, 0, i64::MAX, |w| w);
        ok = true;
    }
    ok
}

// ---------------------------------------------------------------------------------------------
// OpenStreetMap.

/// An `.osm.pbf`. First byte: bits 0-1 the mode (0 and 3: the rest is the file; 1: the rest
/// is a primitive block, put in a zlib blob after a valid header blob; 2: the same, stored
/// raw), bits 2-3 the profile (car, bike, foot), bit 4 the weight (distance, time), bit 5
/// whether a point is snapped onto the network.
pub fn osm_pbf(data: &[u8]) -> bool {
    let Some((&b, rest)) = data.split_first() else {
        return false;
    };
    let bytes = match b & 3 {
        1 => encode::pbf::file(&[rest.to_vec()], true),
        2 => encode::pbf::file(&[rest.to_vec()], false),
        _ => rest.to_vec(),
    };
    let p = file("m.osm.pbf", &bytes);
    let opts = osm::OsmOptions {
        profile: [osm::Profile::Car, osm::Profile::Bike, osm::Profile::Foot]
            [(b >> 2 & 3) as usize % 3],
        weight: if b & 16 == 0 {
            osm::Weight::Distance
        } else {
            osm::Weight::Time
        },
        ..Default::default()
    };
    let Ok(mut net) = osm::read_network(&p, opts) else {
        return false;
    };
    let n = net.coords.points.len();
    for e in &net.edges {
        assert!(
            (e.tail as usize) < n && (e.head as usize) < n,
            "edge outside the vertices"
        );
        assert!(e.geometry.len() >= 2, "an edge without a segment");
    }
    if b & 32 != 0 && n > 0 {
        if let Some(Some(at)) = net.coords.points.first().copied() {
            let point = [at[0] + 1e-5, at[1] + 1e-5];
            let _ = net.snap(&[("apsp.sources", &[point])]);
        }
    }
    if let Ok(turns) = opts.turns() {
        let g = net.graph(turns);
        let n = g.n;
        assert!(g
            .arcs
            .iter()
            .all(|&(u, v, w)| (u as usize) < n && (v as usize) < n && w >= 0));
    }
    true
}

// ---------------------------------------------------------------------------------------------
// The config and --set.

/// The checks a plugin makes of a plan's `[input]` before it reads anything.
fn check_plan(plan: &Plan) {
    let Ok(input) = Input::of(plan) else {
        return;
    };
    let _ = tuccompi_plugins::common::osm_options(plan, &input);
    match &input.spec {
        Some(InputSpec::Generate(t)) => {
            let _ = tuccompi_plugins::common::generate_spec(plan, t);
        }
        Some(InputSpec::Path(p)) => {
            let format = tuccompi_plugins::common::input_format(p);
            let _ = tuccompi_plugins::common::check_input_options(plan, &input, &format);
        }
        None => {}
    }
    let _ = plan.result_config();
}

/// A config file, with every line that starts with `#--set ` also given as a `--set`.
pub fn config(data: &[u8]) -> bool {
    let p = file("c.toml", data);
    let sets: Vec<String> = String::from_utf8_lossy(data)
        .lines()
        .filter_map(|l| l.strip_prefix("#--set "))
        .map(str::to_string)
        .collect();
    match Plan::load(&p, &sets) {
        Ok(plan) => {
            check_plan(&plan);
            true
        }
        Err(_) => false,
    }
}

/// The config `--set` lines apply to.
const BASE: &str = "[run]\nplugin = \"apsp\"\ntasks = 8\n\n[input.generate]\nmodel = \"road\"\n\
                    vertices = 2000\n\n[output]\ndir = \"out\"\n";

/// Each line a `--set KEY=VALUE` on a fixed config.
pub fn set(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let sets: Vec<String> = text.lines().take(32).map(str::to_string).collect();
    match Plan::from_toml(BASE, Path::new("base.toml"), &sets) {
        Ok(plan) => {
            check_plan(&plan);
            true
        }
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// The commit marker and the manifest.

/// An output directory with an unfinished run of 2 one-word tasks, every task journaled, its
/// `report.json` and `a.csv` staged, and `data` as its commit marker `COMMIT` and as the
/// directory's manifest `.tuccompi-files`. A marker is finished only when it proves the run:
/// then the lock moves the files into place and leaves no partial folder; otherwise nothing
/// moves. The directory's validation never panics either way.
pub fn commit_marker(data: &[u8]) -> bool {
    use tuccompi::sink::outdir;
    let dir = scratch("out");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch output directory");
    let o = outdir::OutputDir::lock(&dir, "fuzz").expect("lock");
    o.begin(&serde_json::json!({"tasks": 2, "record_words": 1}))
        .expect("begin");
    let partial = o.partial();
    let j = tuccompi::sink::journal::Journal::open(
        &partial.join(outdir::JOURNAL),
        1,
        std::time::Duration::ZERO,
        Vec::new(),
        None,
    )
    .expect("journal");
    j.append(0..2, &[1, 2]).expect("append");
    j.flush().expect("flush");
    drop(j);
    std::fs::write(partial.join("report.json"), "{}").expect("report");
    std::fs::write(partial.join("a.csv"), "1\n").expect("a.csv");
    std::fs::write(partial.join("COMMIT"), data).expect("COMMIT");
    std::fs::write(dir.join(outdir::FILES), data).expect("manifest");
    drop(o);
    let parsed = outdir::Manifest::parse(data).is_ok();
    let pending = outdir::commit_pending(&dir);
    assert!(pending.is_some(), "a marker is there");
    let _ = outdir::validate(&dir);
    let proven = matches!(pending, Some(Ok(())));
    assert!(
        parsed || !proven,
        "a marker that does not parse proved a run"
    );
    match outdir::OutputDir::lock(&dir, "fuzz") {
        Ok(o) => assert_eq!(
            o.has_unfinished(),
            !proven,
            "a proven commit is finished by the lock, an unproven one left as it is"
        ),
        Err(e) => assert!(proven, "the lock failed on an unproven marker: {e}"),
    }
    parsed
}

// ---------------------------------------------------------------------------------------------
// The journal.

/// A journal. First byte: bit 0 sealed (each entry's checksum made valid, and its rows'
/// checksum where the word there is even, against a bulk file of 8-byte rows), bits 1-2 the
/// record words (0-3); second byte: the run's tasks less one. Raw: replayed unchecked;
/// sealed: replayed checked against the rows.
pub fn journal(data: &[u8]) -> bool {
    let [b, t, rest @ ..] = data else {
        return false;
    };
    let (sealed, words, tasks) = (b & 1 == 1, (b >> 1 & 3) as usize, *t as usize + 1);
    let each = |r: std::ops::Range<usize>, rec: &[u64]| {
        assert!(
            r.start < r.end && r.end <= tasks,
            "entry {r:?} of {tasks} tasks"
        );
        assert_eq!(rec.len(), r.len() * words);
    };
    let got = if sealed {
        // A bulk file of one 8-byte row per task after a 16-byte header.
        let (offset, row) = (16usize, 8usize);
        let bulk: Vec<u8> = (0..offset + tasks * row)
            .map(|i| (i * 7 + 3) as u8)
            .collect();
        let bulk_path = file("rows.bin", &bulk);
        let mut j = rest.to_vec();
        encode::seal_journal(&mut j, tasks, words, |r| {
            xxhash_rust::xxh3::xxh3_64(&bulk[offset + r.start * row..offset + r.end * row])
        });
        let p = file("journal", &j);
        let files = [tuccompi::sink::journal::BulkFile {
            path: bulk_path,
            offset: offset as u64,
            row_bytes: row as u64,
        }];
        tuccompi::sink::journal::replay_checked(&p, tasks, words, &files, each)
    } else {
        let p = file("journal", rest);
        tuccompi::sink::journal::replay(&p, tasks, words, each)
    };
    match got {
        Ok(r) => {
            assert!(r.tasks + r.changed <= r.entries * tasks);
            assert!(r.valid_len <= rest.len() as u64);
            assert_eq!(r.torn, r.valid_len < rest.len() as u64);
            r.entries > 0
        }
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Caches.

/// The speed history: loaded, queried, saved back and loaded again.
pub fn history(data: &[u8]) -> bool {
    use tuccompi::scheduler::history::History;
    let p = file("speeds.json", data);
    let (mut h, note) = History::load(&p);
    let keys: Vec<String> = h.entries().map(|(k, ..)| k.to_string()).collect();
    for k in &keys {
        let m = h.get(k).expect("an entry listed is found");
        assert!(m.per_task.is_finite() && m.per_task > 0.0 && m.latency >= 0.0);
    }
    if h.save().is_ok() {
        let (again, _) = History::load(&p);
        let back: Vec<String> = again.entries().map(|(k, ..)| k.to_string()).collect();
        assert_eq!(keys, back, "the history saved reads back other entries");
    }
    note.is_none() && !keys.is_empty()
}

/// The tuning cache: read as a run reads it, loaded as `tune` does; what loads is saved and
/// must read back the same.
pub fn tuning_cache(data: &[u8]) -> bool {
    use tuccompi::tuning::Cache;
    let p = file("tuning.toml", data);
    let _ = Cache::read_at(&p);
    let Ok(c) = Cache::load_at(&p) else {
        return false;
    };
    if c.save_at(&p).is_ok() {
        assert_eq!(
            Cache::read_at(&p).entries,
            c.entries,
            "the tuning cache saved reads back other entries"
        );
    }
    !c.entries.is_empty()
}

/// The graph whose caches the cache targets read: 6 vertices, 9 arcs.
pub fn small_graph() -> Csr {
    let arcs = vec![
        (0, 1, 4),
        (1, 2, 1),
        (2, 0, 7),
        (1, 3, 2),
        (3, 4, 3),
        (4, 5, 1),
        (5, 3, 9),
        (2, 5, 5),
        (4, 1, 2),
    ];
    let list = EdgeList {
        n: 6,
        arcs,
        id_base: 0,
        origin: Default::default(),
    };
    Csr::from_edges(&list).expect("a valid graph")
}

/// The graph cache. First byte: 0 the rest is the cache file; 1 the rest follows a valid
/// head (magic, format, this input's identity); 2 the rest is `id_base, n, m` and the payload,
/// behind a valid head with the payload's checksum.
pub fn graph_cache(data: &[u8]) -> bool {
    let Some((&b, rest)) = data.split_first() else {
        return false;
    };
    let (id, head) = FIXTURES.with(|f| {
        f.borrow_mut()
            .graph_cache
            .get_or_insert_with(|| {
                let input = file("input.gr", b"p sp 6 0\n");
                let id = graph_cache::Identity::of(&input).expect("the input's identity");
                let tpl = scratch("template.csr");
                graph_cache::store(&tpl, &id, &small_graph()).expect("a cache stored");
                let bytes = std::fs::read(&tpl).expect("the cache read back");
                let id_len = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
                (id, bytes[..24 + id_len as usize].to_vec())
            })
            .clone()
    });
    let bytes = match b % 3 {
        0 => rest.to_vec(),
        1 => [&head[..], rest].concat(),
        _ => {
            let split = rest.len().min(24);
            let (fields, payload) = rest.split_at(split);
            let sum = xxhash_rust::xxh3::xxh3_128(payload);
            [&head[..], fields, &sum.to_le_bytes(), payload].concat()
        }
    };
    let p = file("graph.csr", &bytes);
    match graph_cache::load(&p, &id, "input.gr") {
        Ok(Some(g)) => {
            assert_eq!(g.offsets.len(), g.n + 1);
            assert_eq!(g.targets.len(), g.weights.len());
            assert!(g.targets.iter().all(|&v| (v as usize) < g.n));
            true
        }
        _ => false,
    }
}

fn hierarchy_as<W: ChWeight>(mode: u8, rest: &[u8]) -> bool {
    let g = small_graph();
    let params = ChParams::default();
    let key = ch_cache::Key::of::<W>(&g, &params);
    let bytes = match mode {
        1 | 3 => {
            let h = Hierarchy::<W>::build(&g, &params, None).expect("a hierarchy of a small graph");
            let full = ch_cache::to_bytes(&key, &h);
            // Magic (11), format (4), key (41); then the payload's length and checksum.
            let head = &full[..56];
            let len = (rest.len() as u64).to_le_bytes();
            let sum = xxhash_rust::xxh3::xxh3_128(rest).to_le_bytes();
            [head, &len, &sum, rest].concat()
        }
        _ => rest.to_vec(),
    };
    let got = if mode >= 2 {
        let p = file("h.ch", &bytes);
        ch_cache::load::<W>(&p, &key)
    } else {
        ch_cache::from_bytes::<W>(&bytes, &key)
    };
    match got {
        Ok(h) => {
            assert_eq!(h.n, g.n);
            for s in 0..h.n as u32 {
                assert_eq!(h.distances_from(s).len(), h.n);
            }
            true
        }
        Err(_) => false,
    }
}

/// The hierarchy cache. First byte: bit 0 the weight width (32, 64 bits), bits 1-2 the mode
/// (0: the rest is the file's bytes; 1: the rest is a payload behind a valid head with its
/// length and checksum; 2, 3: the same read from a file).
pub fn hierarchy_cache(data: &[u8]) -> bool {
    let Some((&b, rest)) = data.split_first() else {
        return false;
    };
    let mode = b >> 1 & 3;
    if b & 1 == 0 {
        hierarchy_as::<u32>(mode, rest)
    } else {
        hierarchy_as::<u64>(mode, rest)
    }
}
