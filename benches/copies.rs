//! Does each process's own copy of the graph cost speed? Four MPI ranks of 4 workers, and four
//! independent processes of 4 workers, were both about 5-11% slower than one process of 16
//! workers on the H200 machine (BENCHMARKS.md, "A minute of work"). This runs THREADS
//! Dijkstra threads in one process, all on one graph, or in C groups each on its own copy
//! (what C processes hold), interleaved REPS times.
//!
//!     cargo bench --bench copies -- [SOURCES] [THREADS] [GRAPH] [COPIES...]
//!
//! Defaults: 2,048 sources, every core, ../shared/data/osm-moscow.gr.gz, copies 1 and 4.

use std::time::Instant;
mod common;

use tuccompi::graph::Csr;
use tuccompi::plugins::apsp::dijkstra::Dijkstra;

/// SSSP/s of `threads` threads pulling `sources` from one counter, thread t on `copies[t %
/// copies.len()]`; and the checksum.
fn run(copies: &[Csr], sources: &[u32], threads: usize) -> (f64, u64) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let t = Instant::now();
    let sum: u64 = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (g, next) = (&copies[i % copies.len()], &next);
                sc.spawn(move || {
                    let mut dj = Dijkstra::<u32>::new(g.n);
                    let mut sum = 0u64;
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&s) = sources.get(k) else { break };
                        sum += dj
                            .run(g, s)
                            .iter()
                            .filter(|&&d| d != u32::MAX)
                            .map(|&d| d as u64)
                            .sum::<u64>();
                    }
                    sum
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    (sources.len() as f64 / t.elapsed().as_secs_f64(), sum)
}

fn main() {
    let common::Setup {
        graph: g,
        sources,
        threads,
        rest,
    } = common::setup(2048);
    let mut counts: Vec<usize> = rest.iter().filter_map(|s| s.parse().ok()).collect();
    if counts.is_empty() {
        counts = vec![1, 4];
    }
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    // Each copy is built apart (its own allocations, as in its own process).
    let most = counts.iter().copied().max().unwrap_or(1);
    let copies: Vec<Csr> = (0..most).map(|_| g.clone()).collect();
    let mut sums = Vec::new();
    for rep in 0..reps {
        for &c in &counts {
            let (rate, sum) = run(&copies[..c], &sources, threads);
            sums.push(sum);
            println!("rep {rep}: {c} copies of the graph: {rate:.1} SSSP/s");
        }
    }
    assert!(
        sums.iter().all(|&s| s == sums[0]),
        "checksums differ: {sums:?}"
    );
}
