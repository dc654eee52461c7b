//! PHAST benchmark: the hierarchy build, then PHAST trees per thread (k trees at once, for
//! each supported k) against tuccompi's Dijkstra on the same sources, each with the per-tree
//! summary the apsp plugin writes, checked equal.
//!
//!     cargo bench --bench phast -- [GRAPH] [THREADS] [SOURCES]
//!
//! Defaults: ../shared/data/osm-moscow.gr.gz, 1 thread (per-thread figures), 256 PHAST sources
//! (Dijkstra runs 32 of them). `GRAPH` may be `rmat:N:DEGREE` for a generated R-MAT graph, `road:N` for the generated road
//! graph of `configs/apsp.toml` (seed 1, weights up to 1000).
//! Prints the build's time and shape, ms per tree and the speed-up over Dijkstra.

use std::time::Instant;
use tuccompi::plugin::Record;
use tuccompi_plugins::apsp::dijkstra::Dijkstra;
use tuccompi_plugins::apsp::phast::ch::{ChParams, Hierarchy};
use tuccompi_plugins::apsp::phast::cpu::{Sweeper, SUPPORTED_K};
use tuccompi_plugins::common::PathSummary;
use tuccompi_plugins::graph::{generate, read_graph, Csr, GenModel, GenSpec};

/// Run `f(state, part)` over `parts` split across `threads` scoped threads; seconds and the
/// concatenated records.
fn timed<S>(
    sources: &[u32],
    threads: usize,
    per: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &[u32], &mut Vec<[u64; 4]>) + Sync,
) -> (f64, Vec<[u64; 4]>) {
    let t = Instant::now();
    let share = sources.len().div_ceil(threads).div_ceil(per) * per;
    let recs = std::thread::scope(|sc| {
        let hs: Vec<_> = sources
            .chunks(share)
            .map(|part| {
                let (init, f) = (&init, &f);
                sc.spawn(move || {
                    let mut st = init();
                    let mut out = Vec::new();
                    for batch in part.chunks(per) {
                        f(&mut st, batch, &mut out);
                    }
                    out
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    (t.elapsed().as_secs_f64(), recs)
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
    let threads: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(256);
    let list = if let Some(spec) = path.strip_prefix("rmat:") {
        let v: Vec<f64> = spec.split(':').map(|x| x.parse().unwrap()).collect();
        generate(&GenSpec {
            model: GenModel::Rmat,
            vertices: v[0] as u64,
            degree: Some(v[1]),
            seed: 1,
            min_weight: None,
            max_weight: None,
        })
        .unwrap()
    } else if let Some(n) = path.strip_prefix("road:") {
        generate(&GenSpec {
            model: GenModel::Road,
            vertices: n.parse().expect("road:VERTICES"),
            degree: None,
            seed: 1,
            min_weight: None,
            max_weight: Some(1000),
        })
        .unwrap()
    } else {
        read_graph(std::path::Path::new(&path)).expect("graph")
    };
    let g = Csr::from_edges(&list).expect("csr");
    drop(list);
    println!(
        "graph {path}: n={} m={}; {threads} thread(s), machine with {} cores",
        g.n,
        g.m(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let t = Instant::now();
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).expect("hierarchy");
    let build = t.elapsed().as_secs_f64();
    let (mean, max) = upward_space(&h);
    println!(
        "hierarchy: {build:.2} s on {} rayon threads; {} shortcuts ({:.2} per arc), {} levels, \
         {} rounds; upward search space mean {mean:.0}, max {max} (1,000 sources)",
        rayon::current_num_threads(),
        h.info.shortcuts,
        h.info.shortcuts as f64 / g.m().max(1) as f64,
        h.num_levels(),
        h.info.rounds
    );

    let sources: Vec<u32> = (0..count as u64)
        .map(|i| (i * 7919 % g.n as u64) as u32)
        .collect();
    let few = &sources[..32.min(sources.len())];
    let (secs, want) = timed(
        few,
        threads,
        1,
        || Dijkstra::<u32>::new(g.n),
        |dj, batch, out| {
            let mut rec = [0u64; 4];
            PathSummary::of(dj.run(&g, batch[0])).to_words(&mut rec);
            out.push(rec);
        },
    );
    let dj_ms = secs * 1e3 * threads as f64 / few.len() as f64;
    println!(
        "dijkstra: {dj_ms:.3} ms per tree per thread ({} trees)",
        few.len()
    );
    // Each k twice: summaries by a second pass over the distances, then tallied in the sweep.
    for k in SUPPORTED_K {
        for tally in [false, true] {
            let (secs, got) = timed(
                &sources,
                threads,
                k,
                || Sweeper::new(&h, k).expect("memory"),
                |sw, batch, out| {
                    sw.run_with(batch, tally);
                    let mut recs = vec![[0u64; 4]; batch.len()];
                    sw.summarize(None, &mut recs);
                    out.extend(recs);
                },
            );
            assert_eq!(
                &got[..few.len()],
                &want[..],
                "k = {k}: summaries differ from Dijkstra"
            );
            let ms = secs * 1e3 * threads as f64 / sources.len() as f64;
            println!(
                "phast k={k:2} {}: {ms:.3} ms per tree per thread, {:.0} trees/s in all, {:.1}x \
                 Dijkstra",
                if tally {
                    "tally in sweep"
                } else {
                    "tally after  "
                },
                sources.len() as f64 / secs,
                dj_ms / ms
            );
        }
    }
}

/// Mean and largest number of vertices an upward search reaches, over 1,000 sources.
fn upward_space(h: &Hierarchy<u32>) -> (f64, usize) {
    let mut seen = vec![false; h.n];
    let (mut total, mut max) = (0usize, 0usize);
    let samples = 1000.min(h.n);
    for i in 0..samples {
        let s = h.pos[i * h.n / samples];
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
        max = max.max(list.len());
        for q in list {
            seen[q as usize] = false;
        }
    }
    (total as f64 / samples.max(1) as f64, max)
}
