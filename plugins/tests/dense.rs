//! Dense plugins (fw-naive, fw-blocked, rkleene, dense-dijkstra), CPU and GPU halves, against a
//! plain triple-loop Floyd-Warshall: awkward sizes, missing arcs, negative weights without
//! negative cycles, and a negative cycle.

use crate::util::*;

/// A random graph as a DIMACS `.gr` file (explicit n, so isolated vertices count): ~`density`% of the pairs, weights 1..=20 shifted by
/// vertex potentials when `negative` (w' = w + p(v) - p(u) keeps every cycle's weight, so no
/// negative cycle appears, yet many arcs are negative).
fn graph(n: usize, density: u64, negative: bool, seed: u64) -> (String, Vec<(u32, u32, i64)>) {
    let mut x = seed;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let pot: Vec<i64> = (0..n).map(|_| (next() % 30) as i64).collect();
    let mut arcs = Vec::new();
    let mut text = String::new();
    for u in 0..n {
        for v in 0..n {
            if u != v && next() % 100 < density {
                let w = (next() % 20) as i64 + 1 + if negative { pot[v] - pot[u] } else { 0 };
                arcs.push((u as u32, v as u32, w));
                text.push_str(&format!("a {} {} {w}\n", u + 1, v + 1));
            }
        }
    }
    (format!("p sp {n} {}\n{text}", arcs.len()), arcs)
}

fn reference(n: usize, arcs: &[(u32, u32, i64)]) -> Vec<Option<i64>> {
    let mut d = vec![None; n * n];
    for i in 0..n {
        d[i * n + i] = Some(0);
    }
    for &(u, v, w) in arcs {
        let c = &mut d[u as usize * n + v as usize];
        *c = Some(c.map_or(w, |c: i64| c.min(w)));
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if let (Some(a), Some(b)) = (d[i * n + k], d[k * n + j]) {
                    if d[i * n + j].is_none_or(|c| a + b < c) {
                        d[i * n + j] = Some(a + b);
                    }
                }
            }
        }
    }
    d
}

fn summary_of(n: usize, d: &[Option<i64>]) -> Vec<[i128; 5]> {
    (0..n)
        .map(|s| {
            let row = &d[s * n..(s + 1) * n];
            let reached = row.iter().flatten().count() as i128;
            let sum: i128 = row.iter().flatten().map(|&x| x as i128).sum();
            let max = row.iter().flatten().copied().max().unwrap_or(0) as i128;
            [s as i128 + 1, reached, n as i128 - reached, sum, max]
        })
        .collect()
}

fn signed_summary(p: &std::path::Path) -> Vec<[i128; 5]> {
    let text = std::fs::read_to_string(p).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            // The last column is the mean (a decimal, or empty).
            let v: Vec<i128> = l
                .rsplit_once(',')
                .unwrap()
                .0
                .split(',')
                .map(|x| x.parse().unwrap())
                .collect();
            [v[0], v[1], v[2], v[3], v[4]]
        })
        .collect()
}

const PLUGINS: [&str; 3] = ["fw-naive", "fw-blocked", "rkleene"];

fn check(n: usize, density: u64, negative: bool, gpu: bool) {
    let (text, arcs) = graph(n, density, negative, n as u64 * 7 + negative as u64);
    let dir = tmpdir("dense");
    let g = dir.join("g.gr");
    std::fs::write(&g, text).unwrap();
    let want = reference(n, &arcs);
    // Tiny graphs may draw no negative arc at all: the output is signed only when one exists.
    let negative = arcs.iter().any(|a| a.2 < 0);
    let units: &[&str] = if gpu {
        &["units.cpu_workers=0", "units.device_type=all"]
    } else {
        &["units.opencl=none"]
    };
    let mut plugins = PLUGINS.to_vec();
    if !negative {
        plugins.push("dense-dijkstra");
    }
    for p in plugins {
        for tile in ["", "fw-blocked.tile=5", "rkleene.tile=3"] {
            if !tile.is_empty() && (gpu || !tile.starts_with(p)) {
                continue;
            }
            let cfg = format!(
                "[run]\nplugin = \"{p}\"\n[input]\npath = {:?}\n",
                g.display().to_string()
            );
            let mut sets = vec!["output.distances=true"];
            sets.extend_from_slice(units);
            if !tile.is_empty() {
                sets.push(tile);
            }
            let out = run(&cfg, &sets);
            assert_eq!(
                signed_summary(&out.dir.join("summary.csv")),
                summary_of(n, &want),
                "{p} {tile} n={n} neg={negative} gpu={gpu}"
            );
            let npy =
                npyz::NpyFile::new(std::fs::File::open(out.dir.join("distances.npy")).unwrap())
                    .unwrap();
            let got: Vec<Option<i64>> = if negative {
                assert_eq!(npy.dtype().descr(), "'<i8'");
                npy.into_vec::<i64>()
                    .unwrap()
                    .into_iter()
                    .map(|d| (d != i64::MAX).then_some(d))
                    .collect()
            } else {
                npy.into_vec::<u32>()
                    .unwrap()
                    .into_iter()
                    .map(|d| (d != u32::MAX).then_some(d as i64))
                    .collect()
            };
            assert!(
                got == want,
                "{p} n={n} neg={negative} gpu={gpu}: distances.npy differs from the triple loop"
            );
            if p != "dense-dijkstra" {
                let by = out.report["checksum"]["computed_by"].as_str().unwrap();
                assert!(by.starts_with(if gpu { "gpu" } else { "cpu" }), "{by}");
            }
        }
    }
}

#[test]
fn cpu_halves_awkward_sizes_inf_and_negative() {
    for n in [1, 2, 17, 45, 100] {
        check(n, 30, false, false);
        check(n, 30, true, false);
    }
    check(70, 3, false, false); // mostly unreachable
}

#[test]
fn gpu_halves_awkward_sizes_inf_and_negative() {
    if !opencl() {
        return;
    }
    for n in [1, 17, 45, 100] {
        check(n, 30, false, true);
        check(n, 30, true, true);
    }
    check(70, 3, false, true);
}

/// GPU fw-blocked with shapes other than the tuner's: small blocks so that many rounds, padded
/// sizes and several strips (transfers overlapped) occur on small graphs.
#[test]
fn gpu_blocked_shapes_and_strips() {
    if !opencl() {
        return;
    }
    let shapes: [&[&str]; 2] = [
        &[
            "fw-blocked.tile=16",
            "fw-blocked.register_tile=\"4x4\"",
            "fw-blocked.strips=3",
        ],
        &[
            "fw-blocked.tile=32",
            "fw-blocked.group=16",
            "fw-blocked.register_tile=\"8x4\"",
            "fw-blocked.slab=8",
            "fw-blocked.strips=2",
            "fw-blocked.profile=true",
            // The task's record (every source's summary) re-made by the CPU half and compared.
            "verify.sample=1",
        ],
    ];
    for (n, density, negative) in [(100, 30, true), (45, 30, false), (70, 3, true)] {
        let (text, arcs) = graph(n, density, negative, n as u64 * 13 + 5);
        let dir = tmpdir("dense-shapes");
        let g = dir.join("g.gr");
        std::fs::write(&g, text).unwrap();
        let want = summary_of(n, &reference(n, &arcs));
        let cfg = format!(
            "[run]\nplugin = \"fw-blocked\"\n[input]\npath = {:?}\n",
            g.display().to_string()
        );
        for shape in shapes {
            let mut sets = vec!["units.cpu_workers=0", "units.device_type=\"all\""];
            sets.extend_from_slice(shape);
            let out = run(&cfg, &sets);
            assert_eq!(
                signed_summary(&out.dir.join("summary.csv")),
                want,
                "n={n} {shape:?}"
            );
            let t = &out.report["checksum"]["gpu_seconds"];
            assert!(t["rounds"].as_u64().unwrap() >= 2, "{t}");
            if shape.contains(&"fw-blocked.profile=true") {
                assert!(t["phase3"].as_f64().unwrap() > 0.0, "{t}");
                assert_eq!(
                    out.report["verify"]["verified"], 1,
                    "{}",
                    out.report["verify"]
                );
                // The unit that ran the task, not the CPU half that re-ran it.
                let by = out.report["checksum"]["computed_by"].as_str().unwrap();
                assert!(by.starts_with("gpu"), "{by}");
            }
        }
    }
}

#[test]
fn gpu_blocked_options_are_checked() {
    let dir = tmpdir("dense-opts");
    let g = dir.join("g.wel");
    std::fs::write(&g, "0 1 2\n1 2 3\n").unwrap();
    let cfg = |p: &str| {
        format!(
            "[run]\nplugin = \"{p}\"\n[input]\npath = {:?}\n",
            g.display().to_string()
        )
    };
    let e = try_run(&cfg("fw-blocked"), &["fw-blocked.register_tile=\"8by8\""])
        .unwrap_err()
        .to_string();
    assert!(e.contains("[fw-blocked] register_tile = \"8by8\""), "{e}");
    let e = try_run(&cfg("rkleene"), &["rkleene.strips=2"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("[rkleene]") && e.contains("belong to [fw-blocked]"),
        "{e}"
    );
    // fw-naive has no tiles: a tile it would ignore is refused.
    let e = try_run(&cfg("fw-naive"), &["fw-naive.tile=32"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("[fw-naive] tile: fw-naive has no tiles"), "{e}");
    if opencl() {
        let e = try_run(
            &cfg("fw-blocked"),
            &[
                "units.cpu_workers=0",
                "units.device_type=\"all\"",
                "fw-blocked.tile=24",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("[fw-blocked]") && e.contains("24"), "{e}");
    }
}

#[test]
fn negative_cycle_is_an_error() {
    let dir = tmpdir("negcycle");
    let g = dir.join("g.wel");
    std::fs::write(&g, "0 1 2\n1 2 -3\n2 0 0\n2 3 1\n").unwrap();
    for p in PLUGINS {
        let cfg = format!(
            "[run]\nplugin = \"{p}\"\n[input]\npath = {:?}\n",
            g.display().to_string()
        );
        for units in [
            &["units.opencl=none"][..],
            &["units.cpu_workers=0", "units.device_type=all"],
        ] {
            if units.len() == 2 && !opencl() {
                continue;
            }
            let e = try_run(&cfg, units).unwrap_err().to_string();
            assert!(e.contains("negative cycle through vertex"), "{p}: {e}");
        }
    }
    // dense-dijkstra refuses negative weights with the line.
    let cfg = format!(
        "[run]\nplugin = \"dense-dijkstra\"\n[input]\npath = {:?}\n",
        g.display().to_string()
    );
    let e = try_run(&cfg, &["units.opencl=none"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("g.wel:2: negative arc weight"), "{e}");
    // A negative self-loop is a negative cycle too.
    std::fs::write(&g, "0 0 -1\n0 1 2\n").unwrap();
    let cfg = format!(
        "[run]\nplugin = \"fw-naive\"\n[input]\npath = {:?}\n",
        g.display().to_string()
    );
    let e = try_run(&cfg, &["units.opencl=none"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("negative cycle"), "{e}");
}

#[test]
fn complete_graph_generator_as_in_the_papers() {
    let cfg = "[run]\nplugin = \"fw-blocked\"\n[input.generate]\nmodel = \"complete\"\nvertices = 130\nseed = 9\n";
    let cpu = run(cfg, &["units.opencl=none"]);
    let dd = run(cfg, &["units.opencl=none", "run.plugin=\"dense-dijkstra\""]);
    assert_eq!(cpu.checksum(), dd.checksum());
    assert_eq!(cpu.checksum().1, 0);
}
