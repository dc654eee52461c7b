//! Does each process's own copy of the graph cost speed? Four MPI ranks of 4 workers, and four
//! independent processes of 4 workers, were both about 5-11% slower than one process of 16
//! workers on the H200 machine (BENCHMARKS.md, "A minute of work"). This runs THREADS
//! Dijkstra threads in one process, all on one graph, or in C groups each on its own copy
//! (what C processes hold), interleaved REPS times.
//!
//!     cargo bench --bench copies -- [SOURCES] [THREADS] [GRAPH] [COPIES...]
//!
//! Defaults: 2,048 sources, every core, ../shared/data/osm-moscow.gr.gz, copies 1 and 4. A
//! count with an `m` (`1m`) maps its copies from files in /dev/shm, as the ranks of one
//! machine share their graph under MPI (`Csr::map_shared`), instead of the heap; with
//! `SHARED_FILE=PATH`, the first mapped copy is the file at PATH (written if absent), which
//! several processes of this bench can share. `FIRST=1` takes sources 0..SOURCES (as
//! `run.sources = N` does) instead of spreading them over the graph, and `SKIP=J` starts at
//! the sequence's J-th source.

use std::time::Instant;
mod common;

use tuccompi_plugins::apsp::dijkstra::Dijkstra;
use tuccompi_plugins::graph::Csr;

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
    // (copies, mapped)
    let mut counts: Vec<(usize, bool)> = rest
        .iter()
        .filter_map(|s| match s.strip_suffix('m') {
            Some(c) => Some((c.parse().ok()?, true)),
            None => Some((s.parse().ok()?, false)),
        })
        .collect();
    if counts.is_empty() {
        counts = vec![(1, false), (4, false)];
    }
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    // Each copy is built apart (its own allocations, as in its own process).
    let most = |mapped: bool| {
        counts
            .iter()
            .filter(|c| c.1 == mapped)
            .map(|c| c.0)
            .max()
            .unwrap_or(0)
    };
    let copies: Vec<Csr> = (0..most(false)).map(|_| g.clone()).collect();
    // SHARED_FILE: the first mapped copy is that file, written by whichever process gets there
    // first and left in place, so several processes of this bench can share one graph as the
    // ranks of a machine do (the caller removes it).
    let shared = std::env::var_os("SHARED_FILE").map(std::path::PathBuf::from);
    let mapped: Vec<Csr> = (0..most(true))
        .map(|i| {
            if let (0, Some(path)) = (i, &shared) {
                let tmp = path.with_extension(format!("tmp{}", std::process::id()));
                if !path.exists() && g.write_shared(&tmp).is_ok() {
                    let _ = std::fs::rename(&tmp, path);
                }
                return Csr::map_shared(path).expect("mapping the shared graph");
            }
            let path = tuccompi::node::share::shared_dir()
                .join(format!("tuccompi-bench-{}-{i}", std::process::id()));
            g.write_shared(&path)
                .expect("writing the graph for mapping");
            let m = Csr::map_shared(&path).expect("mapping the graph");
            let _ = std::fs::remove_file(&path);
            m
        })
        .collect();
    let mut sums = Vec::new();
    for rep in 0..reps {
        for &(c, m) in &counts {
            let (rate, sum) = run(
                if m { &mapped[..c] } else { &copies[..c] },
                &sources,
                threads,
            );
            sums.push(sum);
            let how = if m { " (mapped from /dev/shm)" } else { "" };
            println!("rep {rep}: {c} copies of the graph{how}: {rate:.1} SSSP/s");
        }
    }
    assert!(
        sums.iter().all(|&s| s == sums[0]),
        "checksums differ: {sums:?}"
    );
}
