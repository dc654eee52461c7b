//! Target-restricted CPU sweeps (`[apsp] sweep`, `plugins/apsp/phast/restrict.rs`): an
//! origin-destination matrix and accessibility folds from sweeps over the targets' selection
//! equal Bellman-Ford's and the full sweep's, the report says which sweep ran, and outputs that
//! read whole trees keep the full sweep.

use crate::util::*;
use std::path::Path;

/// The pseudo-random picks of a test (SplitMix64).
fn picks(seed: u64, count: usize, n: u64) -> Vec<u64> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            1 + (z ^ (z >> 31)) % n
        })
        .collect()
}

/// The arcs of a DIMACS `.gr` or `.gr.gz` file (0-based) and its vertex count.
fn read_arcs(p: &Path) -> (usize, Vec<(u32, u32, i64)>) {
    let list = tuccompi_plugins::graph::read_graph(p).unwrap();
    (list.n, list.arcs)
}

fn distances(out: &Out) -> (Vec<u64>, Vec<u64>) {
    let f =
        npyz::NpyFile::new(std::fs::File::open(out.dir.join("distances.npy")).unwrap()).unwrap();
    let shape = f.shape().to_vec();
    let rows = f
        .into_vec::<u32>()
        .unwrap()
        .into_iter()
        .map(|d| if d == u32::MAX { u64::MAX } else { d as u64 })
        .collect();
    (rows, shape)
}

fn algorithm(out: &Out) -> &serde_json::Value {
    &out.report["input"]["algorithm"]
}

/// Sources and targets (one repeated, one equal to a source) on `graph`, as config lists.
fn od_config(graph: &Path, sources: &[u64], targets: &[u64]) -> String {
    format!(
        "{}[apsp]\ntargets = {targets:?}\n",
        apsp_file(graph, &format!("{sources:?}"))
    )
}

/// An origin-destination matrix through restricted sweeps: Bellman-Ford's distances, the
/// full sweep's bytes, and a report that says how much was swept.
fn od_matches(graph: &Path, n: u64) {
    let sources = picks(3, 24, n);
    let mut targets = picks(11, 60, n);
    targets.push(targets[5]);
    targets.push(sources[2]);
    let cfg = od_config(graph, &sources, &targets);
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "apsp.cpu_algorithm=\"phast\"",
        "output.distances=true",
    ];
    let restricted = run(&cfg, &[&sets[..], &["apsp.sweep=\"auto\""]].concat());
    let full = run(&cfg, &[&sets[..], &["apsp.sweep=\"full\""]].concat());
    let a = algorithm(&restricted);
    assert_eq!(a["sweep"], "restricted", "{a}");
    let swept = a["restricted_vertices"].as_u64().unwrap();
    assert!(swept > 0 && swept < n / 2, "{swept} of {n} vertices swept");
    assert!(algorithm(&full).get("sweep").is_none());
    let (rows, shape) = distances(&restricted);
    assert_eq!(shape, [sources.len() as u64, targets.len() as u64]);
    assert_eq!(
        std::fs::read(restricted.dir.join("distances.npy")).unwrap(),
        std::fs::read(full.dir.join("distances.npy")).unwrap()
    );
    assert_eq!(restricted.summary(), full.summary());
    let (vertices, arcs) = read_arcs(graph);
    for (i, &s) in sources.iter().enumerate() {
        let want = bellman_ford(vertices, &arcs, s as usize - 1);
        for (j, &t) in targets.iter().enumerate() {
            let expect = want[t as usize - 1].map_or(u64::MAX, |d| d as u64);
            assert_eq!(rows[i * targets.len() + j], expect, "{s} -> {t}");
        }
    }
}

#[test]
fn an_od_matrix_from_restricted_sweeps_equals_bellman_ford_on_rome() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    od_matches(&g, 3353);
}

#[test]
fn an_od_matrix_from_restricted_sweeps_equals_bellman_ford_on_a_generated_road_graph() {
    let dir = tmpdir("restricted-gen");
    let spec = tuccompi_plugins::graph::GenSpec {
        model: tuccompi_plugins::graph::GenModel::Road,
        vertices: 2500,
        degree: Some(0.0),
        seed: 9,
        min_weight: Some(0),
        max_weight: Some(40),
    };
    let list = tuccompi_plugins::graph::generate(&spec).unwrap();
    let mut text = format!("p sp {} {}\n", list.n, list.arcs.len());
    for (u, v, w) in &list.arcs {
        text += &format!("a {} {} {w}\n", u + 1, v + 1);
    }
    let g = dir.join("road.gr");
    std::fs::write(&g, text).unwrap();
    od_matches(&g, list.n as u64);
}

/// Counts within radii and the nearest targets through restricted sweeps equal a reference
/// folded from Bellman-Ford's trees, and the full sweep's files byte for byte.
#[test]
fn accessibility_folds_from_restricted_sweeps_equal_the_reference() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let (vertices, arcs) = read_arcs(&g);
    let sources = picks(5, 16, 3353);
    let targets = picks(17, 200, 3353);
    let radii = [1000u64, 3000, 8000];
    let cfg = format!(
        "{}[apsp.reach]\nradii = {radii:?}\nnearest = 3\n",
        od_config(&g, &sources, &targets)
    );
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "apsp.cpu_algorithm=\"phast\"",
    ];
    let restricted = run(&cfg, &[&sets[..], &["apsp.sweep=\"restricted\""]].concat());
    let full = run(&cfg, &[&sets[..], &["apsp.sweep=\"full\""]].concat());
    assert_eq!(algorithm(&restricted)["sweep"], "restricted");
    for f in ["reach.csv", "nearest.csv", "summary.csv"] {
        assert_eq!(
            std::fs::read(restricted.dir.join(f)).unwrap(),
            std::fs::read(full.dir.join(f)).unwrap(),
            "{f}"
        );
    }
    let reach = std::fs::read_to_string(restricted.dir.join("reach.csv")).unwrap();
    let nearest = std::fs::read_to_string(restricted.dir.join("nearest.csv")).unwrap();
    for ((s, r), nr) in sources
        .iter()
        .zip(reach.lines().skip(1))
        .zip(nearest.lines().skip(1))
    {
        let want = bellman_ford(vertices, &arcs, *s as usize - 1);
        let d: Vec<Option<u128>> = targets.iter().map(|&t| want[t as usize - 1]).collect();
        let cells: Vec<&str> = r.split(',').collect();
        assert_eq!(cells[0], s.to_string());
        for (k, radius) in radii.iter().enumerate() {
            let count = d
                .iter()
                .flatten()
                .filter(|&&x| x <= *radius as u128)
                .count();
            assert_eq!(cells[1 + 2 * k], count.to_string(), "{s} within {radius}");
        }
        // The 3 nearest distances, ties by list position.
        let mut reached: Vec<(u128, usize)> = d
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.map(|x| (x, i)))
            .collect();
        reached.sort();
        let cells: Vec<&str> = nr.split(',').collect();
        for (k, (dist, i)) in reached.iter().take(3).enumerate() {
            assert_eq!(
                cells[1 + 3 * k],
                targets[*i].to_string(),
                "{s}: nearest {k}"
            );
            assert_eq!(cells[2 + 3 * k], dist.to_string(), "{s}: nearest {k}");
        }
    }
}

/// Isochrones count every vertex: the sweep stays full under "auto", and "restricted" is
/// refused naming the key.
#[test]
fn outputs_that_read_whole_trees_keep_the_full_sweep() {
    let cfg = format!(
        "{}[apsp]\ntargets = [3, 9, 40]\n[apsp.reach]\nradii = [10]\nisochrones = [20]\n",
        apsp_gen("road", 400, "seed = 3", "[1, 2, 3]")
    );
    let sets = ["units.opencl=none", "apsp.cpu_algorithm=\"phast\""];
    let out = run(&cfg, &sets);
    assert!(
        algorithm(&out).get("sweep").is_none(),
        "{}",
        algorithm(&out)
    );
    let e = try_run(&cfg, &[&sets[..], &["apsp.sweep=\"restricted\""]].concat())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("[apsp] sweep = \"restricted\"") && e.contains("isochrones"),
        "{e}"
    );
    let e = try_run(&cfg, &["apsp.sweep=\"some\""])
        .unwrap_err()
        .to_string();
    assert!(e.contains("sweep") && e.contains("\"full\""), "{e}");
}
