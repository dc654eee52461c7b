//! Dense APSP on the CPU: fw-blocked, fw-naive and R-Kleene (rayon over every core) and a
//! serial R-Kleene (one thread), on the complete digraph with weights 1..10 of the seed
//! papers. Prints seconds and updates per second (n³ / time).
//!
//!     cargo bench --bench dense -- [N...] [blocked]   (default 256 512 1024 2048)
//!
//! With `blocked`, only fw-blocked runs (best of three).
//!
//! `benches/dense.sh N` runs this and SciPy's `floyd_warshall` on the same graph in one
//! command and prints the ratio.

use std::time::Instant;
use tuccompi_plugins::fw::cpu::solve;
use tuccompi_plugins::fw::{Val, Variant};
use tuccompi_plugins::graph::{generate, GenModel, GenSpec};

fn matrix(n: usize) -> Vec<i32> {
    let list = generate(&GenSpec {
        model: GenModel::Complete,
        vertices: n as u64,
        degree: None,
        seed: 1,
        min_weight: None,
        max_weight: None,
    })
    .unwrap();
    let mut m = vec![i32::INF; n * n];
    for i in 0..n {
        m[i * n + i] = 0;
    }
    for (u, v, w) in list.arcs {
        m[u as usize * n + v as usize] = w as i32;
    }
    m
}

fn time(m: &[i32], n: usize, v: Variant, tile: usize) -> (f64, i64) {
    let t = Instant::now();
    let out = solve(m.to_vec(), n, v, tile);
    let s = t.elapsed().as_secs_f64();
    (s, out.iter().map(|&d| d as i64).sum())
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if std::env::args().any(|a| a == "blocked") {
        for n in if sizes.is_empty() { vec![2048] } else { sizes } {
            let m = matrix(n);
            let runs: Vec<(f64, i64)> = (0..3).map(|_| time(&m, n, Variant::Blocked, 64)).collect();
            let best = runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
            println!(
                "{n:>6} blocked best of 3 {best:.4} s  {:.2} G upd/s  checksum {}",
                (n as f64).powi(3) / best / 1e9,
                runs[0].1
            );
        }
        return;
    }
    let sizes = if sizes.is_empty() {
        vec![256, 512, 1024, 2048]
    } else {
        sizes
    };
    let serial = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    println!(
        "{:>6} {:>12} {:>12} {:>12} {:>14} {:>10} {:>12}",
        "n", "blocked s", "naive s", "rkleene s", "rkleene 1T s", "blocked/naive", "G upd/s (blk)"
    );
    for n in sizes {
        let m = matrix(n);
        let (tb, cb) = time(&m, n, Variant::Blocked, 64);
        let (tn, cn) = if n <= 2048 {
            time(&m, n, Variant::Naive, 1)
        } else {
            (f64::NAN, cb)
        };
        let (tr, cr) = time(&m, n, Variant::RKleene, 64);
        let (ts, cs) = if n <= 2048 {
            serial.install(|| time(&m, n, Variant::RKleene, 64))
        } else {
            (f64::NAN, cb)
        };
        assert!(cb == cn && cb == cr && cb == cs, "variants disagree");
        println!(
            "{n:>6} {tb:>12.4} {tn:>12.4} {tr:>12.4} {ts:>14.4} {:>10.2}x {:>12.2}   checksum {cb}",
            tn / tb,
            (n as f64).powi(3) / tb / 1e9
        );
    }
}
