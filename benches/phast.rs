//! PHAST benchmark: hierarchy build, then PHAST trees per thread against tuccompi's Dijkstra.
//!
//!     cargo bench --bench phast -- [GRAPH]

use std::time::Instant;
use tuccompi::graph::{read_graph, Csr};
use tuccompi::plugins::apsp::phast::ch::{ChParams, Hierarchy};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let path = args
        .first()
        .cloned()
        .unwrap_or_else(|| "../shared/data/osm-moscow.gr.gz".into());
    let settle: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(300);
    let list = if let Some(spec) = path.strip_prefix("rmat:") {
        let v: Vec<u64> = spec.split(':').map(|x| x.parse().unwrap()).collect();
        tuccompi::graph::generate(&tuccompi::graph::GenSpec {
            model: tuccompi::graph::GenModel::Rmat,
            vertices: v[0],
            degree: Some(v[1] as f64),
            seed: 1,
            min_weight: None,
            max_weight: None,
        })
        .unwrap()
    } else {
        read_graph(std::path::Path::new(&path)).unwrap()
    };
    let g = Csr::from_edges(&list).unwrap();
    let t = Instant::now();
    let p = ChParams {
        settle_limit: settle,
        ..Default::default()
    };
    let h = Hierarchy::<u32>::build(&g, &p, None).unwrap();
    let secs = t.elapsed().as_secs_f64();
    // Upward search space.
    let mut seen = vec![false; g.n];
    let mut total = 0usize;
    let mut mx = 0usize;
    let samples = 1000.min(g.n);
    for i in 0..samples {
        let s = h.pos[(i * g.n / samples) as usize];
        let mut stack = vec![s];
        let mut list = vec![s];
        seen[s as usize] = true;
        while let Some(p) = stack.pop() {
            for e in h.up_offsets[p as usize] as usize..h.up_offsets[p as usize + 1] as usize {
                let q = h.up_heads[e];
                if !seen[q as usize] {
                    seen[q as usize] = true;
                    stack.push(q);
                    list.push(q);
                }
            }
        }
        total += list.len();
        mx = mx.max(list.len());
        for q in list {
            seen[q as usize] = false;
        }
    }
    println!(
        "{path}: n {} m {}: build {:.2} s, {:?}, levels {}, upward space mean {:.0} max {mx}",
        g.n,
        g.m(),
        secs,
        h.info,
        h.num_levels(),
        total as f64 / samples as f64
    );
}
