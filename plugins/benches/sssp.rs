//! CPU SSSP benchmark on osm-moscow: tuccompi's Dijkstra (radix heap) against petgraph 0.8's
//! `dijkstra` and a binary-heap Dijkstra, each with the same sources split over the same
//! threads, in one process.
//!
//!     cargo bench --bench sssp -- [SOURCES] [THREADS] [GRAPH]
//!
//! Defaults: 64 sources, every core, ../shared/data/osm-moscow.gr.gz. Prints ms per SSSP per
//! thread and throughput (SSSP/s) with the ratio against petgraph.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;
mod common;

use tuccompi_plugins::apsp::dijkstra::Dijkstra;
use tuccompi_plugins::graph::Csr;

fn binary_heap_dijkstra(
    g: &Csr,
    s: u32,
    dist: &mut [u32],
    heap: &mut BinaryHeap<Reverse<(u32, u32)>>,
) -> u64 {
    dist.fill(u32::MAX);
    heap.clear();
    dist[s as usize] = 0;
    heap.push(Reverse((0, s)));
    while let Some(Reverse((d, u))) = heap.pop() {
        if d != dist[u as usize] {
            continue;
        }
        for e in g.offsets[u as usize] as usize..g.offsets[u as usize + 1] as usize {
            let (v, nd) = (g.targets[e] as usize, d + g.weights[e]);
            if nd < dist[v] {
                dist[v] = nd;
                heap.push(Reverse((nd, v as u32)));
            }
        }
    }
    dist.iter()
        .filter(|&&d| d != u32::MAX)
        .map(|&d| d as u64)
        .sum()
}

/// Run `f(source)` for `sources` split over `threads` scoped threads; returns seconds and the
/// sum of the per-source checksums (to compare the implementations).
fn timed<S: Send>(
    sources: &[u32],
    threads: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, u32) -> u64 + Sync,
) -> (f64, u64) {
    let t = Instant::now();
    let per = sources.len().div_ceil(threads);
    let sum = std::thread::scope(|sc| {
        let hs: Vec<_> = sources
            .chunks(per)
            .map(|part| {
                let (init, f) = (&init, &f);
                sc.spawn(move || {
                    let mut st = init();
                    part.iter().map(|&s| f(&mut st, s)).sum::<u64>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    (t.elapsed().as_secs_f64(), sum)
}

fn main() {
    let common::Setup {
        graph: g,
        sources,
        threads,
        ..
    } = common::setup(64);
    let k = sources.len();

    let mut pg = petgraph::graph::DiGraph::<(), u32>::with_capacity(g.n, g.m());
    for _ in 0..g.n {
        pg.add_node(());
    }
    for u in 0..g.n {
        for e in g.offsets[u] as usize..g.offsets[u + 1] as usize {
            pg.add_edge((u as u32).into(), g.targets[e].into(), g.weights[e]);
        }
    }

    let ours = || {
        timed(
            &sources,
            threads,
            || Dijkstra::<u32>::new(g.n),
            |dj, s| {
                dj.run(&g, s)
                    .iter()
                    .filter(|&&d| d != u32::MAX)
                    .map(|&d| d as u64)
                    .sum()
            },
        )
    };
    let binary = || {
        timed(
            &sources,
            threads,
            || (vec![0u32; g.n], BinaryHeap::new()),
            |(d, h), s| binary_heap_dijkstra(&g, s, d, h),
        )
    };
    let petgraph = || {
        timed(
            &sources,
            threads,
            || (),
            |_, s| {
                petgraph::algo::dijkstra(&pg, s.into(), None, |e| *e.weight())
                    .values()
                    .map(|&d| d as u64)
                    .sum()
            },
        )
    };
    // Warm up once each, then take the median of three.
    let mut rows = Vec::new();
    for (name, f) in [
        ("tuccompi radix heap", &ours as &dyn Fn() -> (f64, u64)),
        ("binary heap", &binary),
        ("petgraph 0.8 dijkstra", &petgraph),
    ] {
        f();
        let mut ts: Vec<(f64, u64)> = (0..3).map(|_| f()).collect();
        ts.sort_by(|a, b| a.0.total_cmp(&b.0));
        rows.push((name, ts[1].0, ts[1].1));
    }
    assert!(
        rows.iter().all(|r| r.2 == rows[0].2),
        "implementations disagree: {rows:?}"
    );
    let base = rows[2].1;
    println!(
        "{:<24} {:>14} {:>10} {:>12}",
        "implementation", "ms/SSSP/thread", "SSSP/s", "vs petgraph"
    );
    for (name, secs, _) in &rows {
        println!(
            "{name:<24} {:>14.1} {:>10.1} {:>11.2}x",
            secs * 1e3 * threads as f64 / k as f64,
            k as f64 / secs,
            base / secs
        );
    }
}
