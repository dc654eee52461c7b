//! Shortest paths: `[apsp] paths` (`paths.csv`, `paths.geojson`) and `[apsp] predecessors`
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
