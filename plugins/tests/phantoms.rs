//! Points snapped onto roads at query time (`api::Graph::matrix_at`, `routes_at`: OSRM's
//! phantom nodes on a graph already built) against the command line, which splits the edges
//! at the points before it builds anything: on the helsinki extract, random points in its
//! bounding box give the same matrix entry for entry, with and without turn restrictions; a
//! second point set reuses the resident hierarchy; `snap = "vertex"` graphs keep vertex
//! snapping, as the command line's do.

use crate::util::{data, run, Out};
use std::path::Path;
use tuccompi_plugins::api::{Ends, Graph};

/// SplitMix64 in `[0, 1)`.
fn unit(x: &mut u64) -> f64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// `k` points uniform in the bounding box of `g`'s vertices.
fn points(g: &Graph, k: usize, seed: u64) -> Vec<[f64; 2]> {
    let places: Vec<[f64; 2]> = (g.geo.as_ref().unwrap().coords.points.iter())
        .flatten()
        .copied()
        .collect();
    let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
    for p in &places {
        for c in 0..2 {
            lo[c] = lo[c].min(p[c]);
            hi[c] = hi[c].max(p[c]);
        }
    }
    let mut x = seed;
    (0..k)
        .map(|_| {
            [
                lo[0] + (hi[0] - lo[0]) * unit(&mut x),
                lo[1] + (hi[1] - lo[1]) * unit(&mut x),
            ]
        })
        .collect()
}

fn inline(points: &[[f64; 2]]) -> String {
    let p: Vec<String> = points
        .iter()
        .map(|p| format!("[{:?}, {:?}]", p[0], p[1]))
        .collect();
    format!("[{}]", p.join(", "))
}

/// The `[input.osm]` table both sides read with.
fn osm(snap: &str, turns: bool) -> String {
    format!("profile = \"car\"\nweight = \"distance\"\nsnap = \"{snap}\"\nturn_restrictions = {turns}\n")
}

/// The command line's matrix from `sources` to `targets` (u64, `u64::MAX` unreachable).
fn cli(path: &Path, osm: &str, sources: &[[f64; 2]], targets: &[[f64; 2]]) -> (Vec<u64>, Out) {
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\n[input]\npath = {:?}\n[input.osm]\n{osm}\
         [apsp]\nsources = {}\ntargets = {}\ndistances = true\n",
        path.display().to_string(),
        inline(sources),
        inline(targets)
    );
    let out = run(&cfg, &["units.opencl=none"]);
    let f =
        npyz::NpyFile::new(std::fs::File::open(out.dir.join("distances.npy")).unwrap()).unwrap();
    assert_eq!(f.shape(), &[sources.len() as u64, targets.len() as u64]);
    let d = f
        .into_vec::<u32>()
        .unwrap()
        .into_iter()
        .map(|d| if d == u32::MAX { u64::MAX } else { d as u64 })
        .collect();
    (d, out)
}

fn read(path: &Path, osm: &str) -> Graph {
    let table: toml::Table = format!("path = {:?}\n[osm]\n{osm}", path.display().to_string())
        .parse()
        .unwrap();
    Graph::read(table).unwrap()
}

/// The first number under `key` anywhere in `v`.
fn find(v: &serde_json::Value, key: &str) -> Option<u64> {
    match v {
        serde_json::Value::Object(m) => m
            .get(key)
            .and_then(|x| x.as_u64())
            .or_else(|| m.values().find_map(|x| find(x, key))),
        serde_json::Value::Array(a) => a.iter().find_map(|x| find(x, key)),
        _ => None,
    }
}

/// The first entry where two matrices differ, for the message.
fn first_difference(a: &[u64], b: &[u64], cols: usize) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(
            "entry ({}, {}): {} here, {} by the command line",
            i / cols,
            i % cols,
            a[i],
            b[i]
        ),
        None => "equal".into(),
    }
}

fn helsinki_equals_the_command_line(turns: bool) {
    let Some(pbf) = data("helsinki.osm.pbf") else {
        return;
    };
    let table = osm("edge", turns);
    let g = read(&pbf, &table);
    assert!(g.snaps_onto_edges());
    let (src, dst) = (points(&g, 150, 1), points(&g, 150, 2));
    let (want, out) = cli(&pbf, &table, &src, &dst);
    let phantoms = find(&out.report, "phantom_vertices").expect("counted in the report");
    assert!(
        phantoms > 150,
        "the command line split edges: {phantoms} phantoms"
    );
    let got = g.matrix_at(Ends::Points(&src), Ends::Points(&dst)).unwrap();
    assert!(got.distances.iter().filter(|&&d| d != u64::MAX).count() > want.len() / 2);
    assert!(
        got.distances == want,
        "turns {turns}: {}",
        first_difference(&got.distances, &want, dst.len())
    );
    // The pair queries (with paths) answer the same.
    let pairs: Vec<(usize, usize)> = (0..300).map(|i| (i % 150, (i * 7 + 3) % 150)).collect();
    let (o, d): (Vec<[f64; 2]>, Vec<[f64; 2]>) =
        pairs.iter().map(|&(i, j)| (src[i], dst[j])).unzip();
    let r = g
        .routes_at(Ends::Points(&o), Ends::Points(&d), true)
        .unwrap();
    assert_eq!(r.hierarchy, "session", "the matrix's hierarchy, kept");
    for (k, &(i, j)) in pairs.iter().enumerate() {
        assert_eq!(r.distances[k], want[i * 150 + j], "pair {i} -> {j}");
        let path = &r.vertices[r.offsets[k] as usize..r.offsets[k + 1] as usize];
        assert!(
            path.iter()
                .all(|&v| (v as usize) < g.geo.as_ref().unwrap().coords.points.len()),
            "paths hold road vertices"
        );
    }
    // A second point set builds nothing.
    let again = g
        .matrix_at(Ends::Points(&points(&g, 40, 3)), Ends::Points(&dst[..40]))
        .unwrap();
    assert_eq!(again.hierarchy, "session");
}

#[test]
fn helsinki_phantoms_equal_the_command_line() {
    helsinki_equals_the_command_line(true);
}

#[test]
fn helsinki_phantoms_without_turn_restrictions() {
    helsinki_equals_the_command_line(false);
}

#[test]
fn helsinki_vertex_snapping_stays_at_junctions() {
    let Some(pbf) = data("helsinki.osm.pbf") else {
        return;
    };
    let table = osm("vertex", true);
    let g = read(&pbf, &table);
    assert!(!g.snaps_onto_edges());
    let (src, dst) = (points(&g, 30, 4), points(&g, 30, 5));
    let (want, _) = cli(&pbf, &table, &src, &dst);
    let got = g.matrix_at(Ends::Points(&src), Ends::Points(&dst)).unwrap();
    assert_eq!(got.distances, want);
    let s = g.snap(&src, "points").unwrap();
    assert!(s.tails.iter().all(|&t| t == u32::MAX), "no edge positions");
}

#[test]
fn bad_points_and_ids_are_named() {
    let Some(pbf) = data("helsinki.osm.pbf") else {
        return;
    };
    let g = read(&pbf, &osm("edge", true));
    let e = g
        .matrix_at(
            Ends::Points(&[[24.9, 60.2], [f64::NAN, 60.0]]),
            Ends::Vertices(&[0]),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("sources: point 2"), "{e}");
    let e = g
        .routes_at(Ends::Vertices(&[u32::MAX - 5]), Ends::Vertices(&[0]), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("origins: vertex"), "{e}");
    let e = g
        .routes_at(Ends::Vertices(&[0, 1]), Ends::Vertices(&[0]), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("one destination per origin"), "{e}");
}
