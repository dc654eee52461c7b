//! Shortest paths: `[apsp] paths` (`paths.csv`, `paths.geojson`, or with `paths_format =
//! "npy"` `path_offsets.npy` and `path_vertices.npy`) and `[apsp] predecessors`
//! (`predecessors.npy`) on the CPU and GPU halves, from PHAST and from Dijkstra, against a
//! plain Dijkstra of this file over the arcs as read: every path is a chain of existing arcs
//! whose weights sum to the pair's distance, and that distance is the reference's.

use crate::util::*;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;
use tuccompi_plugins::graph::EdgeList;

/// The lightest arc of each (tail, head) pair, self-loops dropped (what a path may use).
type Arcs = HashMap<(u32, u32), u64>;

fn arcs_of(list: &EdgeList) -> Arcs {
    let mut arcs = Arcs::new();
    for &(u, v, w) in &list.arcs {
        if u != v {
            let e = arcs.entry((u, v)).or_insert(w as u64);
            *e = (*e).min(w as u64);
        }
    }
    arcs
}

/// A plain binary-heap Dijkstra over `arcs` from `s` (internal ids): the reference.
fn reference(n: usize, adj: &[Vec<(u32, u64)>], s: u32) -> Vec<Option<u64>> {
    let mut d = vec![None; n];
    let mut heap = BinaryHeap::new();
    d[s as usize] = Some(0);
    heap.push(std::cmp::Reverse((0u64, s)));
    while let Some(std::cmp::Reverse((k, u))) = heap.pop() {
        if d[u as usize] != Some(k) {
            continue;
        }
        for &(v, w) in &adj[u as usize] {
            if d[v as usize].is_none_or(|dv| k + w < dv) {
                d[v as usize] = Some(k + w);
                heap.push(std::cmp::Reverse((k + w, v)));
            }
        }
    }
    d
}

fn adjacency(n: usize, arcs: &Arcs) -> Vec<Vec<(u32, u64)>> {
    let mut adj = vec![Vec::new(); n];
    for (&(u, v), &w) in arcs {
        adj[u as usize].push((v, w));
    }
    adj
}

/// A deterministic pseudo-random sequence.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    }
}

/// One line of paths.csv.
#[derive(Debug, PartialEq)]
struct Pair {
    source: u64,
    target: u64,
    distance: Option<u64>,
    path: Vec<u64>,
}

fn read_paths(dir: &Path) -> Vec<Pair> {
    let text = std::fs::read_to_string(dir.join("paths.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("source,target,distance,hops,path"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 5, "{l}");
            let path: Vec<u64> = f[4]
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            let distance = (!f[2].is_empty()).then(|| f[2].parse().unwrap());
            match distance {
                Some(_) => assert_eq!(f[3].parse::<usize>().unwrap() + 1, path.len(), "{l}"),
                None => assert!(f[3].is_empty() && path.is_empty(), "{l}"),
            }
            Pair {
                source: f[0].parse().unwrap(),
                target: f[1].parse().unwrap(),
                distance,
                path,
            }
        })
        .collect()
}

/// Check paths.csv of `dir` (pairs `sources` x `targets`, ids in the input's numbering with
/// `base`) against the reference over `arcs`.
fn check_paths(dir: &Path, n: usize, base: u64, arcs: &Arcs, sources: &[u64], targets: &[u64]) {
    let pairs = read_paths(dir);
    assert_eq!(pairs.len(), sources.len() * targets.len());
    let adj = adjacency(n, arcs);
    let mut reached = 0;
    for (i, &s) in sources.iter().enumerate() {
        let want = reference(n, &adj, (s - base) as u32);
        for (j, &t) in targets.iter().enumerate() {
            let p = &pairs[i * targets.len() + j];
            assert_eq!((p.source, p.target), (s, t));
            assert_eq!(p.distance, want[(t - base) as usize], "{s} -> {t}");
            let Some(d) = p.distance else { continue };
            reached += 1;
            assert_eq!((p.path[0], *p.path.last().unwrap()), (s, t), "{p:?}");
            let mut length = 0;
            let mut seen = std::collections::HashSet::new();
            for w in p.path.windows(2) {
                let (u, v) = ((w[0] - base) as u32, (w[1] - base) as u32);
                length += arcs
                    .get(&(u, v))
                    .unwrap_or_else(|| panic!("{s} -> {t}: no arc {} -> {}", w[0], w[1]));
                assert!(seen.insert(w[0]), "{s} -> {t}: {} twice", w[0]);
            }
            assert_eq!(length, d, "{s} -> {t}: the path's length");
        }
    }
    assert!(reached > 0, "some pair is reachable");
}

/// `count` distinct-ish random ids of `1..=n` shifted to `base`.
fn ids(next: &mut impl FnMut() -> u64, n: usize, base: u64, count: usize) -> Vec<u64> {
    (0..count).map(|_| next() % n as u64 + base).collect()
}

fn od_cfg(input: &Path, sources: &[u64], targets: &[u64]) -> String {
    format!(
        "{}[apsp]\ntargets = {targets:?}\npaths = true\n",
        apsp_file(input, &format!("{sources:?}"))
    )
}

/// The CPU halves (PHAST, Dijkstra) and, where OpenCL is, the GPU half (PHAST and the work
/// list) on `input`: 1,000 pairs, every path checked.
fn thousand_pairs(
    input: &Path,
    list: &EdgeList,
    gpu_algorithms: &[&str],
    extra: &[&str],
) -> Vec<Out> {
    let arcs = arcs_of(list);
    let mut next = lcg(7);
    let sources = ids(&mut next, list.n, list.id_base, 25);
    let targets = ids(&mut next, list.n, list.id_base, 40);
    let cfg = od_cfg(input, &sources, &targets);
    let mut runs = vec![
        vec!["units.opencl=none", "apsp.cpu_algorithm=\"phast\""],
        vec!["units.opencl=none", "apsp.cpu_algorithm=\"dijkstra\""],
    ];
    if opencl() {
        for a in gpu_algorithms {
            runs.push(vec!["units.cpu_workers=0", "units.device_type=\"all\"", a]);
        }
    }
    runs.iter()
        .map(|sets| {
            let sets = [&sets[..], extra].concat();
            let out = run(&cfg, &sets);
            check_paths(&out.dir, list.n, list.id_base, &arcs, &sources, &targets);
            out
        })
        .collect()
}

#[test]
fn helsinki_1000_pairs_on_every_half() {
    let Some(pbf) = data("helsinki.osm.pbf") else {
        return;
    };
    // The road graph as the reference reads it: without turn restrictions, whose paths
    // (junction copies, U-turns) tests/osm.rs checks by hand.
    let options = tuccompi_plugins::graph::osm::OsmOptions {
        turn_restrictions: Some(false),
        ..Default::default()
    };
    let (list, coords, _) = tuccompi_plugins::graph::osm::read_osm(&pbf, options).unwrap();
    let outs = thousand_pairs(
        &pbf,
        &list,
        &[
            "apsp.gpu_algorithm=\"phast\"",
            "apsp.gpu_algorithm=\"worklist\"",
        ],
        &["input.osm.turn_restrictions=false"],
    );
    // Every half chose the same paths (the rule depends on the distances only).
    let csv = std::fs::read(outs[0].dir.join("paths.csv")).unwrap();
    for o in &outs[1..] {
        assert!(std::fs::read(o.dir.join("paths.csv")).unwrap() == csv);
    }
    // paths.geojson: one feature per pair, its coordinates the path's vertices' places.
    let pairs = read_paths(&outs[0].dir);
    let geo: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(outs[0].dir.join("paths.geojson")).unwrap())
            .unwrap();
    let features = geo["features"].as_array().unwrap();
    assert_eq!(features.len(), pairs.len());
    let mut shaped = 0;
    for (f, p) in features.iter().zip(&pairs) {
        assert_eq!(f["properties"]["source"], p.source);
        assert_eq!(f["properties"]["distance"].as_u64(), p.distance);
        let Some(_) = p.distance else {
            assert!(f["geometry"].is_null());
            continue;
        };
        // The line runs along the ways: every path vertex's place in order, the ways' own
        // nodes between them.
        let c = f["geometry"]["coordinates"].as_array().unwrap();
        assert!(c.len() >= p.path.len().max(2));
        let at = |xy: &serde_json::Value, [lon, lat]: [f64; 2]| {
            (xy[0].as_f64().unwrap() - lon).abs() < 1e-6
                && (xy[1].as_f64().unwrap() - lat).abs() < 1e-6
        };
        let mut k = 0;
        for &v in &p.path {
            let place = coords.points[(v - list.id_base) as usize].unwrap();
            while k < c.len() && !at(&c[k], place) {
                k += 1;
            }
            assert!(k < c.len(), "{p:?}: vertex {v} not on the line in order");
        }
        assert!(at(
            &c[0],
            coords.points[(p.path[0] - list.id_base) as usize].unwrap()
        ));
        assert!(at(
            c.last().unwrap(),
            coords.points[(*p.path.last().unwrap() - list.id_base) as usize].unwrap()
        ));
        shaped += (c.len() > p.path.len().max(2)) as usize;
    }
    assert!(
        shaped > pairs.len() / 2,
        "most routes bend with their ways: {shaped} of {}",
        pairs.len()
    );
}

#[test]
fn moscow_1000_pairs_on_every_half() {
    let Some(gr) = data("osm-moscow.gr.gz") else {
        return;
    };
    let list = tuccompi_plugins::graph::read_graph(&gr).unwrap();
    thousand_pairs(&gr, &list, &["apsp.gpu_algorithm=\"phast\""], &[]);
}

/// A DIMACS graph with zero-weight arcs and zero-weight cycles, some parts unreachable.
fn zero_graph() -> (String, EdgeList) {
    let mut next = lcg(3);
    let n = 40usize;
    let mut arcs = Vec::new();
    for _ in 0..110 {
        let (u, v) = ((next() % 36) as u32, (next() % 36) as u32);
        let w = if next().is_multiple_of(3) {
            1 + next() % 9
        } else {
            0
        };
        arcs.push((u, v, w as i64));
    }
    // A zero cycle 36 -> 37 -> 38 -> 36 entered from 0, and 39 reached from nothing.
    arcs.extend([
        (0, 36, 4),
        (36, 37, 0),
        (37, 38, 0),
        (38, 36, 0),
        (38, 39, 0),
    ]);
    arcs.retain(|a| a != &(38, 39, 0));
    let mut text = format!("p sp {n} {}\n", arcs.len());
    for (u, v, w) in &arcs {
        text += &format!("a {} {} {w}\n", u + 1, v + 1);
    }
    let list = EdgeList {
        n,
        arcs,
        id_base: 1,
        ..EdgeList::default()
    };
    (text, list)
}

#[test]
fn zero_weight_arcs_and_cycles_give_exact_loopless_paths() {
    let (text, list) = zero_graph();
    let dir = tmpdir("paths-zero");
    let g = dir.join("z.gr");
    std::fs::write(&g, text).unwrap();
    let all: Vec<u64> = (1..=list.n as u64).collect();
    let cfg = od_cfg(&g, &all, &all);
    let arcs = arcs_of(&list);
    let mut runs = vec![
        vec!["units.opencl=none", "apsp.cpu_algorithm=\"phast\""],
        vec!["units.opencl=none", "apsp.cpu_algorithm=\"dijkstra\""],
    ];
    if opencl() {
        runs.push(vec![
            "units.cpu_workers=0",
            "units.device_type=\"all\"",
            "apsp.gpu_algorithm=\"phast\"",
        ]);
        runs.push(vec![
            "units.cpu_workers=0",
            "units.device_type=\"all\"",
            "apsp.gpu_algorithm=\"worklist\"",
        ]);
    }
    for sets in runs {
        let out = run(&cfg, &sets);
        check_paths(&out.dir, list.n, 1, &arcs, &all, &all);
    }
}

fn npy<T: npyz::Deserialize>(p: &Path) -> (Vec<T>, Vec<u64>, String) {
    let bytes = std::fs::read(p).unwrap();
    let f = npyz::NpyFile::new(bytes.as_slice()).unwrap();
    let (shape, descr) = (f.shape().to_vec(), f.dtype().descr());
    (f.into_vec().unwrap(), shape, descr)
}

/// `predecessors.npy` of a whole-tree run rebuilds every distance of `distances.npy`: walk
/// each vertex back to its source and sum the arcs; the source and unreachable vertices are
/// -9999. With targets, its columns are the full run's at the targets.
fn predecessors_rebuild_distances(g: &Path, list: &EdgeList, sets: &[&str]) {
    let arcs = arcs_of(list);
    let sources: Vec<u64> = (0..12).map(|i| 1 + i * 277).collect();
    let cfg = format!(
        "{}[apsp]\npredecessors = true\n",
        apsp_file(g, &format!("{sources:?}"))
    );
    let mut all = vec!["output.distances=true"];
    all.extend_from_slice(sets);
    let out = run(&cfg, &all);
    let (pred, shape, descr) = npy::<i32>(&out.dir.join("predecessors.npy"));
    assert_eq!(shape, vec![12, list.n as u64]);
    assert!(descr.contains("<i4"), "{descr}");
    let (dist, _, _) = npy::<u32>(&out.dir.join("distances.npy"));
    let n = list.n;
    for (r, &s) in sources.iter().enumerate() {
        for v in 1..=n as u64 {
            let at = |x: u64| r * n + (x - 1) as usize;
            let d = dist[at(v)];
            if d == u32::MAX || v == s {
                assert_eq!(pred[at(v)], -9999, "source {s} vertex {v}");
                continue;
            }
            let (mut x, mut sum, mut hops) = (v, 0u64, 0);
            while x != s {
                let u = pred[at(x)];
                assert!(u > 0, "source {s}: the walk from {v} stops at {x}");
                sum += arcs[&((u - 1) as u32, (x - 1) as u32)];
                x = u as u64;
                hops += 1;
                assert!(hops <= n, "source {s}: the walk from {v} loops");
            }
            assert_eq!(sum, d as u64, "source {s} vertex {v}");
        }
    }
    // Without distances.npy (PHAST then skips the rows nobody reads, unless predecessors need
    // them): the same predecessors.
    let alone = run(&cfg, sets);
    assert!(
        std::fs::read(alone.dir.join("predecessors.npy")).unwrap()
            == std::fs::read(out.dir.join("predecessors.npy")).unwrap(),
        "predecessors without distances.npy differ ({sets:?})"
    );
    // The same run with targets: predecessors.npy holds the targets' columns.
    let targets: Vec<u64> = (0..30).map(|i| 1 + i * 97).collect();
    let cfg_t = format!("{cfg}targets = {targets:?}\n");
    let out_t = run(&cfg_t, sets);
    let (pred_t, shape, _) = npy::<i32>(&out_t.dir.join("predecessors.npy"));
    assert_eq!(shape, vec![12, 30]);
    for r in 0..12 {
        for (j, &t) in targets.iter().enumerate() {
            assert_eq!(pred_t[r * 30 + j], pred[r * n + (t - 1) as usize]);
        }
    }
}

#[test]
fn predecessors_rebuild_every_distance_on_every_half() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let list = tuccompi_plugins::graph::read_graph(&g).unwrap();
    predecessors_rebuild_distances(
        &g,
        &list,
        &["units.opencl=none", "apsp.cpu_algorithm=\"phast\""],
    );
    predecessors_rebuild_distances(
        &g,
        &list,
        &["units.opencl=none", "apsp.cpu_algorithm=\"dijkstra\""],
    );
    if opencl() {
        predecessors_rebuild_distances(
            &g,
            &list,
            &[
                "units.cpu_workers=0",
                "units.device_type=\"all\"",
                "apsp.gpu_algorithm=\"phast\"",
            ],
        );
        predecessors_rebuild_distances(
            &g,
            &list,
            &[
                "units.cpu_workers=0",
                "units.device_type=\"all\"",
                "apsp.gpu_algorithm=\"worklist\"",
            ],
        );
    }
}

#[test]
fn paths_without_targets_are_refused_naming_the_key() {
    let cfg = apsp_gen("road", 100, "", "4");
    let e = try_run(
        &format!("{cfg}[apsp]\npaths = true\n"),
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("[apsp] paths = true") && e.contains("targets"),
        "{e}"
    );
}

#[test]
fn a_paths_run_killed_mid_way_resumes_to_byte_identical_files() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let targets: Vec<u32> = (1..=64).map(|i| i * 50).collect();
    let cfg = format!(
        "{}[apsp]\ntargets = {targets:?}\npaths = true\npredecessors = true\n",
        apsp_file(&g, "\"all\"")
    );
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=16",
        "output.format=\"csv\"",
        "output.sync_seconds=0.05",
        "apsp.cpu_algorithm=\"dijkstra\"",
    ];
    crate::reliability::interrupt_then_resume("paths-kill", &cfg, 3353, &sets, &|child, out| {
        let staged = out.join(tuccompi::sink::outdir::PARTIAL);
        assert!(
            staged.join(".paths-trees.npy").exists(),
            "the trees are staged"
        );
        child.kill().unwrap(); // SIGKILL
    });
}

/// The compact form of `dir`: each pair's path (ids as written), from `path_offsets.npy` and
/// `path_vertices.npy` read with npyz, and the vertices' dtype.
fn read_compact(dir: &Path) -> (Vec<Vec<u64>>, String) {
    let (offsets, shape, descr) = npy::<u64>(&dir.join("path_offsets.npy"));
    assert!(descr.contains("<u8"), "{descr}");
    assert_eq!(shape, vec![offsets.len() as u64]);
    let bytes = std::fs::read(dir.join("path_vertices.npy")).unwrap();
    let f = npyz::NpyFile::new(bytes.as_slice()).unwrap();
    let descr = f.dtype().descr();
    let vertices: Vec<u64> = if descr.contains("<u4") {
        f.into_vec::<u32>()
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect()
    } else {
        f.into_vec::<u64>().unwrap()
    };
    assert_eq!(offsets[0], 0);
    assert_eq!(*offsets.last().unwrap(), vertices.len() as u64);
    let paths = offsets
        .windows(2)
        .map(|w| vertices[w[0] as usize..w[1] as usize].to_vec())
        .collect();
    (paths, descr)
}

/// The compact form of `dir` (pairs `sources` x `targets`, source major) against the reference
/// over `arcs`: an unreachable pair's path is empty, a reachable one runs from its source to
/// its target over existing arcs whose weights sum to the reference distance.
fn check_compact(dir: &Path, n: usize, base: u64, arcs: &Arcs, sources: &[u64], targets: &[u64]) {
    let (paths, _) = read_compact(dir);
    assert_eq!(paths.len(), sources.len() * targets.len());
    let adj = adjacency(n, arcs);
    let mut reached = 0;
    for (i, &s) in sources.iter().enumerate() {
        let want = reference(n, &adj, (s - base) as u32);
        for (j, &t) in targets.iter().enumerate() {
            let path = &paths[i * targets.len() + j];
            let Some(d) = want[(t - base) as usize] else {
                assert!(path.is_empty(), "{s} -> {t} is unreachable: {path:?}");
                continue;
            };
            reached += 1;
            assert_eq!((path[0], *path.last().unwrap()), (s, t), "{path:?}");
            let length: u64 = path
                .windows(2)
                .map(|w| {
                    let (u, v) = ((w[0] - base) as u32, (w[1] - base) as u32);
                    *arcs
                        .get(&(u, v))
                        .unwrap_or_else(|| panic!("{s} -> {t}: no arc {} -> {}", w[0], w[1]))
                })
                .sum();
            assert_eq!(length, d, "{s} -> {t}: the path's length");
        }
    }
    assert!(reached > 0, "some pair is reachable");
}

/// The runs of [`zero_weight_arcs_and_cycles_give_exact_loopless_paths`]: both CPU halves and,
/// where OpenCL is, GPU PHAST and the work list.
fn every_half() -> Vec<Vec<&'static str>> {
    let mut runs = vec![
        vec!["units.opencl=none", "apsp.cpu_algorithm=\"phast\""],
        vec!["units.opencl=none", "apsp.cpu_algorithm=\"dijkstra\""],
    ];
    if opencl() {
        for a in [
            "apsp.gpu_algorithm=\"phast\"",
            "apsp.gpu_algorithm=\"worklist\"",
        ] {
            runs.push(vec!["units.cpu_workers=0", "units.device_type=\"all\"", a]);
        }
    }
    runs
}

#[test]
fn compact_paths_are_paths_csv_as_arrays_on_every_half() {
    // Zero-weight cycles, unreachable pairs and a source equal to its target.
    let (text, list) = zero_graph();
    let dir = tmpdir("paths-compact");
    let g = dir.join("z.gr");
    std::fs::write(&g, text).unwrap();
    let all: Vec<u64> = (1..=list.n as u64).collect();
    let cfg = od_cfg(&g, &all, &all);
    let arcs = arcs_of(&list);
    for sets in every_half() {
        let csv = run(&cfg, &sets);
        let npy = run(&cfg, &[&sets[..], &["apsp.paths_format=\"npy\""]].concat());
        check_compact(&npy.dir, list.n, 1, &arcs, &all, &all);
        let (paths, descr) = read_compact(&npy.dir);
        assert!(descr.contains("<u4"), "ids that fit u32 are u32: {descr}");
        let want: Vec<Vec<u64>> = read_paths(&csv.dir).into_iter().map(|p| p.path).collect();
        assert!(
            paths == want,
            "the compact form differs from paths.csv ({sets:?})"
        );
        // Only the compact form: no text, no hidden staging left behind.
        for name in [
            "paths.csv",
            "paths.geojson",
            ".paths-trees.npy",
            ".paths-index.npy",
            ".paths-data.0",
        ] {
            assert!(!npy.dir.join(name).exists(), "{name} ({sets:?})");
        }
        // The distances of od.npz are the pairs'; the unreachable ones have empty paths.
        assert_eq!(npy.checksum(), csv.checksum());
    }
}

#[test]
fn compact_paths_of_real_graphs_match_paths_csv() {
    // osm-moscow (1,000 pairs, every path against the reference) and Helsinki with its turn
    // restrictions (junction copies named by their road vertex, once, as paths.csv names them).
    if let Some(gr) = data("osm-moscow.gr.gz") {
        let list = tuccompi_plugins::graph::read_graph(&gr).unwrap();
        let arcs = arcs_of(&list);
        let mut next = lcg(11);
        let sources = ids(&mut next, list.n, list.id_base, 25);
        let targets = ids(&mut next, list.n, list.id_base, 40);
        let cfg = od_cfg(&gr, &sources, &targets);
        let mut runs = vec![vec!["units.opencl=none", "apsp.cpu_algorithm=\"phast\""]];
        if opencl() {
            runs.push(vec![
                "units.cpu_workers=0",
                "units.device_type=\"all\"",
                "apsp.gpu_algorithm=\"phast\"",
            ]);
        }
        for sets in runs {
            let csv = run(&cfg, &sets);
            let npy = run(&cfg, &[&sets[..], &["apsp.paths_format=\"npy\""]].concat());
            check_compact(&npy.dir, list.n, list.id_base, &arcs, &sources, &targets);
            let want: Vec<Vec<u64>> = read_paths(&csv.dir).into_iter().map(|p| p.path).collect();
            assert!(read_compact(&npy.dir).0 == want, "{sets:?}");
        }
    }
    if let Some(pbf) = data("helsinki.osm.pbf") {
        let cfg = format!(
            "{}[apsp]\ntargets = 60\npaths = true\n",
            apsp_file(&pbf, "[1, 50, 300, 600, 900]")
        );
        let sets = ["units.opencl=none"];
        let csv = run(&cfg, &sets);
        let npy = run(&cfg, &[&sets[..], &["apsp.paths_format=\"npy\""]].concat());
        let want: Vec<Vec<u64>> = read_paths(&csv.dir).into_iter().map(|p| p.path).collect();
        assert!(want.iter().any(|p| p.len() > 2), "some paths are long");
        assert!(read_compact(&npy.dir).0 == want);
        assert!(!npy.dir.join("paths.geojson").exists());
    }
}

#[test]
fn a_bad_paths_format_is_refused_naming_the_key() {
    let cfg = apsp_gen("road", 100, "", "4");
    let e = try_run(
        &format!("{cfg}[apsp]\ntargets = 5\npaths = true\npaths_format = \"parquet\"\n"),
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("paths_format = \"parquet\"") && e.contains("\"csv\"") && e.contains("\"npy\""),
        "{e}"
    );
    // Past paths.csv's limit, the message points at the compact form.
    let big = apsp_gen("road", 4000, "", "\"all\"");
    let e = try_run(
        &format!("{big}[apsp]\ntargets = 3000\npaths = true\n"),
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("paths_format = \"npy\""), "{e}");
}

#[test]
fn a_compact_paths_run_killed_mid_way_resumes_to_byte_identical_files() {
    use std::process::{Command, Stdio};
    use tuccompi::sink::outdir;
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let targets: Vec<u32> = (1..=64).map(|i| i * 50).collect();
    let cfg = format!(
        "{}[apsp]\ntargets = {targets:?}\npaths = true\npaths_format = \"npy\"\n",
        apsp_file(&g, "\"all\"")
    );
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=16",
        "output.sync_seconds=0.05",
        "apsp.cpu_algorithm=\"dijkstra\"",
    ];
    let reference = run(&cfg, &sets);
    let dir = tmpdir("paths-npy-kill");
    std::fs::write(dir.join("c.toml"), &cfg).unwrap();
    let out = dir.join("out");
    let mut args = vec!["run".to_string(), dir.join("c.toml").display().to_string()];
    for s in sets
        .iter()
        .map(|s| s.to_string())
        .chain([format!("output.dir={:?}", out.display().to_string())])
    {
        args.extend(["--set".to_string(), s]);
    }
    let bin = env!("CARGO_BIN_EXE_tuccompi");
    let mut child = Command::new(bin)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed (SIGKILL) once the journal holds a few entries (about 560 bytes per chunk of 16
    // tasks: more than the chunk whose index row is altered below) and the walked paths are
    // staged.
    let staged = out.join(outdir::PARTIAL);
    let t = std::time::Instant::now();
    while !std::fs::metadata(staged.join(outdir::JOURNAL)).is_ok_and(|m| m.len() >= 2400) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        assert!(t.elapsed().as_secs() < 120, "no journal entry");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.join("path_vertices.npy").exists());
    // Only the walked paths are staged: an index (a bulk output, journaled with each chunk)
    // and the data it points into; no predecessor rows.
    let index = staged.join(".paths-index.npy");
    assert!(index.exists() && staged.join(".paths-data.0").exists());
    assert!(!staged.join(".paths-trees.npy").exists());
    // Task 0's index row points elsewhere in the data now (its start word, past the header):
    // a journaled row that changed is redone, as the journal's checksum of the index says, so
    // the resumed files are still the reference's. An index the journal did not vouch for
    // would send `finish` to the wrong bytes.
    let mut bytes = std::fs::read(&index).unwrap();
    let header = bytes.len() - 3353 * (3 + targets.len()) * 8;
    bytes[header + 8] ^= 0x10;
    std::fs::write(&index, &bytes).unwrap();
    args.push("--resume".into());
    let resumed = Command::new(bin).args(&args).output().unwrap();
    assert!(
        resumed.status.success(),
        "resume: {}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    for f in [
        "path_offsets.npy",
        "path_vertices.npy",
        "od.npz",
        "summary.csv",
    ] {
        let a = std::fs::read(reference.dir.join(f)).unwrap();
        assert!(
            a == std::fs::read(out.join(f)).unwrap(),
            "{f} differs from the uninterrupted run's"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let resumed_tasks = report["resumed_tasks"].as_u64().unwrap();
    assert!(resumed_tasks > 0 && resumed_tasks < 3353, "{resumed_tasks}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&reference.dir);
}

#[test]
fn a_run_in_memory_hands_back_the_compact_paths() {
    use std::sync::atomic::AtomicBool;
    use tuccompi_plugins::api::{run_apsp, Graph, Ids, Rows};
    let (_, list) = zero_graph();
    // In memory the ids are 0-based.
    let t: Vec<i64> = list.arcs.iter().map(|a| a.0 as i64).collect();
    let h: Vec<i64> = list.arcs.iter().map(|a| a.1 as i64).collect();
    let w: Vec<i64> = list.arcs.iter().map(|a| a.2).collect();
    let g = Graph::from_arcs(list.n as u64, &t, &h, &w, ["t", "h", "w"], "zero").unwrap();
    let all: Vec<u64> = (0..list.n as u64).collect();
    let run_with = |format: &str| {
        let config: toml::Table = toml::from_str(&format!(
            "[apsp]\nsources = {all:?}\ntargets = {all:?}\npaths = true\n\
             paths_format = \"{format}\"\n[units]\ncpu_workers = 2\nopencl = \"none\"\n"
        ))
        .unwrap();
        run_apsp(&g, config, &[], true, &AtomicBool::new(false)).unwrap()
    };
    let npy = run_with("npy");
    let csv = run_with("csv");
    assert!(csv.paths.is_none());
    assert!(npy.texts.iter().all(|(name, _)| name != "paths.csv"));
    let paths = npy.paths.expect("the compact paths");
    let Ids::U32(vertices) = paths.vertices else {
        panic!("u32 ids expected")
    };
    let text = &csv.texts.iter().find(|(n, _)| n == "paths.csv").unwrap().1;
    let want: Vec<Vec<u64>> = text
        .lines()
        .skip(1)
        .map(|l| {
            let path = l.rsplit(',').next().unwrap();
            path.split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(paths.offsets.len(), want.len() + 1);
    let got: Vec<Vec<u64>> = paths
        .offsets
        .windows(2)
        .map(|o| {
            vertices[o[0] as usize..o[1] as usize]
                .iter()
                .map(|&v| v as u64)
                .collect()
        })
        .collect();
    assert!(got == want);
    // Empty exactly where the distance rows say unreachable.
    let Some(Rows::U32(rows)) = npy.rows else {
        panic!("u32 rows expected")
    };
    for (i, p) in got.iter().enumerate() {
        assert_eq!(p.is_empty(), rows[i] == u32::MAX, "pair {i}");
    }
    assert!(rows.contains(&u32::MAX), "some pair is unreachable");
}
