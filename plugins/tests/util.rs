//! Helpers: temp dirs, the data folder, OpenCL presence, running a plan, reading outputs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use tuccompi::{node::Single, Plan, RunOptions};

/// Point the user's cache directory (hierarchies, graphs, tuning, speed history; PoCL's kernel
/// cache) at a temporary directory of this test process, once, before the first run: the
/// tests write only into temporary directories, never into `~/.cache`. Called by every helper
/// a test starts with (`tmpdir`, `data`, `opencl`, `try_run`); the binaries the tests start
/// inherit it unless they are given their own.
pub fn private_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let d = std::env::temp_dir().join(format!("tuccompi-test-{}-cache", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        // Before any OpenCL, MPI or run of this process reads the environment: the first helper
        // call of the first test, the others waiting on the Once.
        std::env::set_var("XDG_CACHE_HOME", &d);
    });
}

/// A fresh empty directory under the system temp dir.
pub fn tmpdir(tag: &str) -> PathBuf {
    private_cache();
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "tuccompi-test-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file of `../shared/data`, or `None` (with a message) when the folder is absent on a
/// user's clone. With `TUCCOMPI_REQUIRE_DATA=1` (set by `.ci/run`) absence is a failure.
pub fn data(name: &str) -> Option<PathBuf> {
    private_cache();
    let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("../shared/data")
        .join(name);
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("TUCCOMPI_REQUIRE_DATA").is_some() {
        panic!(
            "TUCCOMPI_REQUIRE_DATA is set but {} is missing",
            p.display()
        );
    }
    eprintln!(
        "NOT RUN: {} not found (real-graph tests need ../shared/data beside the checkout)",
        p.display()
    );
    None
}

/// Whether an OpenCL device exists. With `TUCCOMPI_REQUIRE_OPENCL=1` (set by `.ci/run`) its
/// absence is a failure; on a user's machine the test says it did not run.
pub fn opencl() -> bool {
    private_cache();
    match tuccompi::device::list() {
        Ok(list) if !list.is_empty() => true,
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                _ => "no device".into(),
            };
            if std::env::var_os("TUCCOMPI_REQUIRE_OPENCL").is_some() {
                panic!("TUCCOMPI_REQUIRE_OPENCL is set but OpenCL is unusable: {why}");
            }
            eprintln!("NOT RUN: OpenCL test skipped: {why}");
            false
        }
    }
}

/// Outputs of a run.
#[derive(Debug)]
pub struct Out {
    pub dir: PathBuf,
    pub report: serde_json::Value,
}

impl Out {
    pub fn summary(&self) -> Vec<[u128; 5]> {
        read_summary(&self.dir.join("summary.csv"))
    }
    pub fn checksum(&self) -> (u64, u64, u64) {
        let c = &self.report["checksum"];
        (
            c["sum"].as_u64().unwrap(),
            c["unreachable"].as_u64().unwrap(),
            c["max"].as_u64().unwrap(),
        )
    }
}

/// Parse summary.csv, checking its header, without its `mean` column (checked to be empty or
/// a number; `means` reads it).
pub fn read_summary(p: &Path) -> Vec<[u128; 5]> {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("source,reached,unreachable,sum,max,mean")
    );
    lines
        .map(|l| {
            let (ints, mean) = l.rsplit_once(',').unwrap();
            assert!(mean.is_empty() || mean.parse::<f64>().is_ok(), "{l}");
            let v: Vec<u128> = ints.split(',').map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2], v[3], v[4]]
        })
        .collect()
}

/// The `mean` column of summary.csv (`None` where empty).
pub fn means(p: &Path) -> Vec<Option<f64>> {
    let text = std::fs::read_to_string(p).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let m = l.rsplit_once(',').unwrap().1;
            (!m.is_empty()).then(|| m.parse().unwrap())
        })
        .collect()
}

/// Run `toml` with overrides (quietly, single node) into a fresh directory.
pub fn run(toml: &str, sets: &[&str]) -> Out {
    try_run(toml, sets).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// A CPU-only Dijkstra run of an apsp config with `sets` (2 workers): the reference the
/// accelerated runs are compared with.
pub fn dijkstra(cfg: &str, sets: &[&str]) -> Out {
    let mut all = vec![
        "units.opencl=none",
        "units.cpu_workers=2",
        "apsp.cpu_algorithm=\"dijkstra\"",
    ];
    all.extend_from_slice(sets);
    run(cfg, &all)
}

/// Write into `kdir` (for `TUCCOMPI_KERNELS`) the SSSP kernels with a syntax error
/// (`undeclared_name`) and their characterization: a program that fails to build.
pub fn write_broken_sssp_kernels(kdir: &Path) {
    let src = tuccompi_plugins::apsp::gpu::KERNELS;
    std::fs::write(
        kdir.join("sssp.cl"),
        src.source.replace(
            "dist[i] = s ? 0 : INF;",
            "dist[i] = s ? 0 : INF + undeclared_name;",
        ),
    )
    .unwrap();
    std::fs::write(kdir.join("sssp.toml"), src.characterization).unwrap();
}

/// Like [`run`] but returns the error.
pub fn try_run(toml: &str, sets: &[&str]) -> tuccompi::Result<Out> {
    private_cache();
    let dir = tmpdir("run");
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("output.dir={:?}", dir.display().to_string()));
    let plan = Plan::from_toml(toml, Path::new("test.toml"), &all)?;
    let out = tuccompi_plugins::run(
        &plan,
        &RunOptions {
            quiet: true,
            ..Default::default()
        },
        &Single,
    )?;
    assert!(
        !dir.join("INCOMPLETE").exists(),
        "a finished run left INCOMPLETE behind"
    );
    Ok(Out {
        dir,
        report: out.report,
    })
}

/// An APSP config on `input` (a path) with `sources`.
pub fn apsp_file(input: &Path, sources: &str) -> String {
    format!(
        "[run]\nplugin = \"apsp\"\nsources = {sources}\n[input]\npath = {:?}\n",
        input.display().to_string()
    )
}

/// An APSP config on a generated graph.
pub fn apsp_gen(model: &str, n: u64, extra: &str, sources: &str) -> String {
    format!(
        "[run]\nplugin = \"apsp\"\nsources = {sources}\n[input.generate]\nmodel = \"{model}\"\nvertices = {n}\n{extra}\n"
    )
}

/// Dijkstra-free reference: Bellman-Ford on an edge list with u128 distances.
pub fn bellman_ford(n: usize, arcs: &[(u32, u32, i64)], s: usize) -> Vec<Option<u128>> {
    let mut d: Vec<Option<u128>> = vec![None; n];
    d[s] = Some(0);
    for _ in 0..n {
        let mut changed = false;
        for &(u, v, w) in arcs {
            if let Some(du) = d[u as usize] {
                let nd = du + w as u128;
                if d[v as usize].is_none_or(|dv| nd < dv) {
                    d[v as usize] = Some(nd);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    d
}

/// Wait for `child` at most `limit`: past it the child is killed and the test fails with
/// `hung()` (what hung, and what it had said).
pub fn wait_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    hung: impl FnOnce() -> String,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{}", hung());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A DIMACS graph `dir/NAME.gr.gz` that takes seconds to load (a gigabyte of comment lines
/// before its two vertices, a megabyte compressed): it keeps a process in its preparation while
/// a test signals it. (A named pipe no longer does: an input that is not a regular file is
/// refused at once.)
pub fn slow_graph(dir: &Path, name: &str) -> PathBuf {
    use std::io::Write;
    let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    member.write_all(&b"c\n".repeat(32 << 20)).unwrap();
    let member = member.finish().unwrap();
    let mut tail = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    tail.write_all(b"p sp 2 1\na 1 2 1\n").unwrap();
    let mut file = member.repeat(16);
    file.extend_from_slice(&tail.finish().unwrap());
    let p = dir.join(format!("{name}.gr.gz"));
    std::fs::write(&p, file).unwrap();
    p
}

/// The kernel file of the test plugins whose GPU halves run host code: a GPU half declares
/// its kernels, and these build one stub (on PoCL in CI) and launch nothing.
pub const STUB_KERNELS: tuccompi::device::KernelSource = tuccompi::device::KernelSource {
    stem: "stub",
    source: "__kernel void stub(__global uint* a) { a[0] = 0; }\n",
    characterization: "[stub]\ndims = 1\naccess = \"coalesced\"\nload = \"low\"\nsharing = \"low\"\ngrid = \"items\"\nindexes = { a = \"1\" }\n",
};
