//! u32 distances unless a tree really overflows: on a graph where only some sources reach a
//! chain of 3·10^9 arcs, every algorithm (CPU Dijkstra, CPU PHAST, the GPU frontier
//! algorithms and GPU PHAST on PoCL) computes in u32, redoes exactly the trees with an output
//! distance past 2^32 - 2 in u64, and equals a u128 Bellman-Ford in summary.csv and in
//! distances.npy (u64, one consistent file).

use crate::util::*;

/// Chain arcs: two of them overflow u32.
const HEAVY: i64 = 3_000_000_000;

/// A few one-way "suburb" vertices 0..20 lead into a strongly connected "city" 20..250 and to
/// the head of a chain 250..260 of heavy arcs; the city never leads back. So the trees of the
/// suburb's sources and of the chain's first 8 vertices overflow u32; the city's do not.
fn graph() -> (usize, Vec<(u32, u32, i64)>) {
    let mut arcs = Vec::new();
    let mut x = 12345u64;
    let mut rnd = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for v in 20..250u32 {
        let next = if v == 249 { 20 } else { v + 1 };
        arcs.push((v, next, 1 + rnd(1000) as i64));
        arcs.push((next, v, 1 + rnd(1000) as i64));
        let w = 20 + rnd(230) as u32;
        arcs.push((v, w, rnd(5000) as i64));
    }
    for s in 0..20u32 {
        arcs.push((s, 20 + rnd(230) as u32, 1 + rnd(100) as i64));
        arcs.push((s, (s + 1) % 20, rnd(50) as i64));
    }
    arcs.push((3, 250, 7));
    for v in 250..259u32 {
        arcs.push((v, v + 1, HEAVY));
    }
    (260, arcs)
}

fn write_gr(n: usize, arcs: &[(u32, u32, i64)]) -> std::path::PathBuf {
    let p = tmpdir("width").join("g.gr");
    let mut s = format!("p sp {n} {}\n", arcs.len());
    for &(u, v, w) in arcs {
        s.push_str(&format!("a {} {} {w}\n", u + 1, v + 1));
    }
    std::fs::write(&p, s).unwrap();
    p
}

/// The expected summary rows (over `targets`, or every vertex) and distance rows (u64,
/// unreachable = u64::MAX), and the number of trees with an output distance >= 2^32 - 2.
struct Want {
    summary: Vec<[u128; 5]>,
    rows: Vec<u64>,
    overflowing: u64,
}

fn reference(n: usize, arcs: &[(u32, u32, i64)], targets: Option<&[usize]>) -> Want {
    let all: Vec<usize> = (0..n).collect();
    let ts = targets.unwrap_or(&all);
    let (mut summary, mut rows, mut overflowing) = (Vec::new(), Vec::new(), 0);
    for s in 0..n {
        let d = bellman_ford(n, arcs, s);
        let out: Vec<Option<u128>> = ts.iter().map(|&t| d[t]).collect();
        let reached = out.iter().flatten().count() as u128;
        let sum: u128 = out.iter().flatten().sum();
        let max = out.iter().flatten().max().copied().unwrap_or(0);
        summary.push([s as u128 + 1, reached, ts.len() as u128 - reached, sum, max]);
        rows.extend(out.iter().map(|x| x.map_or(u64::MAX, |d| d as u64)));
        overflowing += (max >= u32::MAX as u128 - 1) as u64;
    }
    Want {
        summary,
        rows,
        overflowing,
    }
}

fn check(out: &Out, want: &Want, what: &str) {
    let input = &out.report["input"];
    assert_eq!(input["compute_type"], "u32", "{what}: {input}");
    assert_eq!(input["distance_type"], "u64", "{what}: {input}");
    assert_eq!(out.summary(), want.summary, "{what}: summary.csv");
    let file =
        npyz::NpyFile::new(std::fs::File::open(out.dir.join("distances.npy")).unwrap()).unwrap();
    assert_eq!(file.dtype().descr(), "'<u8'", "{what}");
    let rows = file.into_vec::<u64>().unwrap();
    assert!(
        rows == want.rows,
        "{what}: distances.npy differs from Bellman-Ford"
    );
    assert_eq!(
        out.report["checksum"]["redone_u64"].as_u64(),
        Some(want.overflowing),
        "{what}: trees redone in u64"
    );
}

#[test]
fn only_overflowing_trees_are_redone_on_the_cpu() {
    let (n, arcs) = graph();
    let gr = write_gr(n, &arcs);
    let want = reference(n, &arcs, None);
    assert!(
        want.overflowing > 5 && want.overflowing < n as u64 / 4,
        "the graph should make a few trees overflow: {}",
        want.overflowing
    );
    let cfg = apsp_file(&gr, "\"all\"");
    let cache = format!(
        "apsp.hierarchy={:?}",
        tmpdir("widthch").join("h.ch").display().to_string()
    );
    for (algo, workers) in [("dijkstra", "1"), ("dijkstra", "3"), ("phast", "2")] {
        let out = run(
            &cfg,
            &[
                "units.opencl=none",
                &format!("units.cpu_workers={workers}"),
                &format!("apsp.cpu_algorithm={algo:?}"),
                "apsp.cpu_batch=8",
                "output.distances=true",
                &cache,
            ],
        );
        assert_eq!(out.report["input"]["cpu_algorithm"], algo);
        check(&out, &want, &format!("CPU {algo}, {workers} workers"));
    }
    // Targets that no heavy chain reaches: trees overflow inside, but no output does.
    let ts: Vec<usize> = (20..250).step_by(7).collect();
    let list: Vec<String> = ts.iter().map(|t| (t + 1).to_string()).collect();
    let want_t = reference(n, &arcs, Some(&ts));
    assert_eq!(want_t.overflowing, 0);
    let tset = format!("apsp.targets=[{}]", list.join(","));
    for algo in ["dijkstra", "phast"] {
        let out = run(
            &cfg,
            &[
                "units.opencl=none",
                &format!("apsp.cpu_algorithm={algo:?}"),
                "output.distances=true",
                &tset,
                &cache,
            ],
        );
        check(&out, &want_t, &format!("CPU {algo} with targets"));
    }
}

#[test]
fn only_overflowing_trees_are_redone_on_the_gpu() {
    if !opencl() {
        return;
    }
    let (n, arcs) = graph();
    let gr = write_gr(n, &arcs);
    let want = reference(n, &arcs, None);
    let cfg = apsp_file(&gr, "\"all\"");
    let cache = format!(
        "apsp.hierarchy={:?}",
        tmpdir("widthch").join("h.ch").display().to_string()
    );
    for algo in ["worklist", "crauser", "two-phase", "phast"] {
        for up in ["host", "device"] {
            if algo != "phast" && up == "device" {
                continue;
            }
            let out = run(
                &cfg,
                &[
                    "units.device_type=all",
                    "units.cpu_workers=0",
                    &format!("apsp.gpu_algorithm={algo:?}"),
                    &format!("apsp.gpu_upward={up:?}"),
                    "apsp.batch=12",
                    "output.distances=true",
                    &cache,
                ],
            );
            assert_eq!(out.report["input"]["gpu_algorithm"], algo);
            check(&out, &want, &format!("GPU {algo}, upward {up}"));
        }
    }
}

/// Weights that make every path of two arcs overflow: the BFS sample proves it, and the run
/// computes in u64 from the start (nothing to redo).
#[test]
fn u64_from_the_start_when_most_trees_must_overflow() {
    let cfg = apsp_gen(
        "uniform",
        120,
        "degree = 2.0\nmin_weight = 3_000_000_000\nmax_weight = 4_000_000_000",
        "\"all\"",
    );
    let out = run(&cfg, &["units.opencl=none", "units.cpu_workers=2"]);
    assert_eq!(out.report["input"]["compute_type"], "u64");
    assert_eq!(out.report["checksum"]["redone_u64"], 0);
    let why = out.report["input"]["width_reason"].as_str().unwrap();
    assert!(why.contains("sampled sources"), "{why}");
}
