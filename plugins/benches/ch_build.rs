//! Contraction-hierarchy build benchmark: time (wall and CPU), peak memory and the
//! hierarchy's quality (shortcuts per arc, levels, upward search space), with a few trees
//! checked against Dijkstra.
//!
//!     cargo bench --bench ch_build -- [GRAPH] [REPEATS]
//!
//! Default graph: ../shared/data/osm-moscow.gr.gz. `GRAPH` may be `road:N` for the generated
//! road model. Threads: rayon's default (`RAYON_NUM_THREADS`).

use std::time::Instant;
use tuccompi_plugins::apsp::dijkstra::Dijkstra;
use tuccompi_plugins::apsp::phast::auto::upward_space;
use tuccompi_plugins::apsp::phast::ch::{ChParams, Hierarchy};
use tuccompi_plugins::graph::{generate, read_graph, Csr, GenModel, GenSpec};

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |x: libc::timeval| x.tv_sec as f64 + x.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn peak_rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let path = args.first().cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/osm-moscow.gr.gz"
        )
        .into()
    });
    let repeats: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let list = if let Some(n) = path.strip_prefix("road:") {
        generate(&GenSpec {
            model: GenModel::Road,
            vertices: n.parse().expect("road:N"),
            degree: None,
            seed: 1,
            min_weight: None,
            max_weight: None,
        })
        .expect("generate")
    } else {
        read_graph(std::path::Path::new(&path)).expect("graph")
    };
    let g = Csr::from_edges(&list).expect("csr");
    drop(list);
    let before = peak_rss_mib();
    println!(
        "graph {path}: n={} m={}; {} rayon threads; peak RSS after reading {before:.0} MiB",
        g.n,
        g.m(),
        rayon::current_num_threads()
    );
    let mut last = None;
    for _ in 0..repeats {
        drop(last.take());
        let (t, c) = (Instant::now(), cpu_seconds());
        let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).expect("hierarchy");
        let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        println!(
            "build: {wall:.2} s wall, {cpu:.2} s CPU; {} shortcuts ({:.3} per arc), {} levels, \
             {} rounds; upward search mean {:.1} (1,000 sources); peak RSS {:.0} MiB",
            h.info.shortcuts,
            h.info.shortcuts as f64 / g.m().max(1) as f64,
            h.num_levels(),
            h.info.rounds,
            upward_space(&h, 1000),
            peak_rss_mib()
        );
        last = Some(h);
    }
    let h = last.expect("one build");
    let mut dj = Dijkstra::<u32>::new(g.n);
    for i in 0..8u64 {
        let s = (i * 7919 * 13 % g.n as u64) as u32;
        assert_eq!(h.distances_from(s), dj.run(&g, s), "source {s}");
    }
    println!("8 trees equal Dijkstra's");
}
