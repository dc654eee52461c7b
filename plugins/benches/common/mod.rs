//! What the SSSP benches share: `[SOURCES] [THREADS] [GRAPH] [REST...]` from the command line
//! (cargo's `--bench` flags skipped), the graph, and sources spread over it.

use tuccompi_plugins::graph::{read_graph, Csr};

/// A bench's graph, sources and threads, and the arguments after the graph.
#[allow(dead_code)]
pub struct Setup {
    pub graph: Csr,
    pub sources: Vec<u32>,
    pub threads: usize,
    /// Arguments after the graph (not every bench takes any).
    #[allow(dead_code)]
    pub rest: Vec<String>,
}

/// The first GPU, else the first OpenCL device of any kind (PoCL).
#[allow(dead_code)]
pub fn first_device() -> tuccompi::Result<std::sync::Arc<tuccompi::device::Device>> {
    use tuccompi::device::{discover, Filter};
    let of = |kind: &str| {
        discover(&Filter {
            device_type: kind.into(),
            names: vec![],
        })
    };
    let mut devices = of("gpu").or_else(|_| of("all"))?;
    Ok(devices.swap_remove(0))
}

/// Read the arguments (`default_sources` sources, every core, osm-moscow by default), load the
/// graph and print one line about the run.
#[allow(dead_code)]
pub fn setup(default_sources: usize) -> Setup {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let k: usize = args
        .first()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_sources);
    let threads: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let path = args.get(2).cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/osm-moscow.gr.gz"
        )
        .into()
    });
    let graph =
        Csr::from_edges(&read_graph(std::path::Path::new(&path)).expect("graph")).expect("csr");
    let first = std::env::var_os("FIRST").is_some();
    // SKIP=j: sources j..j+k of the sequence (processes splitting one run's sources).
    let skip: u32 = std::env::var("SKIP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let sources: Vec<u32> = (skip..skip + k as u32)
        .map(|i| {
            if first {
                i % graph.n as u32
            } else {
                (i as u64 * 7919 % graph.n as u64) as u32
            }
        })
        .collect();
    println!(
        "graph {path} n={} m={}; {k} sources over {threads} threads",
        graph.n,
        graph.m()
    );
    Setup {
        graph,
        sources,
        threads,
        rest: args.into_iter().skip(3).collect(),
    }
}
