//! `[apsp.reach] isochrone_polygons = true`: `isochrones.geojson` on the helsinki extract
//! (longitude/latitude, the ways' geometry) and on osm-moscow with its `.co` file (a plane),
//! checked against a Dijkstra and the geometry written here: every vertex within the limit and
//! every wholly reached road inside a polygon, every vertex far from every road the limit
//! reaches outside, rings oriented as RFC 7946 says; and the keys' refusals.

use crate::util::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Read;
use std::path::Path;

type Point = [f64; 2];
type Ring = Vec<Point>;

/// A graph with places: arcs by tail (head, weight, line from the tail's place to the
/// head's) and each vertex's place.
struct Net {
    out: Vec<Vec<(usize, u64, Vec<Point>)>>,
    places: Vec<Point>,
}

fn dijkstra(net: &Net, s: usize) -> Vec<u64> {
    let mut d = vec![u64::MAX; net.places.len()];
    let mut h = BinaryHeap::new();
    d[s] = 0;
    h.push(Reverse((0u64, s)));
    while let Some(Reverse((du, u))) = h.pop() {
        if du > d[u] {
            continue;
        }
        for &(v, w, _) in &net.out[u] {
            if du + w < d[v] {
                d[v] = du + w;
                h.push(Reverse((du + w, v)));
            }
        }
    }
    d
}

/// The features of `isochrones.geojson`: `(source, limit, vertices, cell, polygons)`.
type Feature = (u64, u64, u64, f64, Vec<Vec<Ring>>);

fn features(dir: &Path) -> (serde_json::Value, Vec<Feature>) {
    let text = std::fs::read_to_string(dir.join("isochrones.geojson")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "FeatureCollection");
    let ring = |r: &serde_json::Value| -> Ring {
        r.as_array()
            .unwrap()
            .iter()
            .map(|p| [p[0].as_f64().unwrap(), p[1].as_f64().unwrap()])
            .collect()
    };
    let polygon =
        |p: &serde_json::Value| -> Vec<Ring> { p.as_array().unwrap().iter().map(ring).collect() };
    let list = v["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = &f["properties"];
            let g = &f["geometry"];
            let polygons = match g["type"].as_str().unwrap() {
                "Polygon" => vec![polygon(&g["coordinates"])],
                "MultiPolygon" => g["coordinates"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(polygon)
                    .collect(),
                other => panic!("geometry {other}"),
            };
            (
                p["source"].as_u64().unwrap(),
                p["limit"].as_u64().unwrap(),
                p["vertices"].as_u64().unwrap(),
                p["cell"].as_f64().unwrap(),
                polygons,
            )
        })
        .collect();
    (v, list)
}

fn crosses(ring: &Ring, p: Point) -> bool {
    let mut c = false;
    for s in ring.windows(2) {
        let (a, b) = (s[0], s[1]);
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let x = a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
            if p[0] < x {
                c = !c;
            }
        }
    }
    c
}

/// Whether `p` is in one of `polygons` (each an outer ring and holes).
fn inside(polygons: &[Vec<Ring>], p: Point) -> bool {
    polygons
        .iter()
        .any(|rings| crosses(&rings[0], p) && !rings[1..].iter().any(|h| crosses(h, p)))
}

fn signed_area(ring: &Ring) -> f64 {
    ring.windows(2)
        .map(|s| s[0][0] * s[1][1] - s[1][0] * s[0][1])
        .sum::<f64>()
        / 2.0
}

fn distance(p: Point, a: Point, b: Point) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    let t = if l2 > 0.0 {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (a[0] + t * dx - p[0]).hypot(a[1] + t * dy - p[1])
}

/// Check one feature against the tree `d` of its source: `to_plane` maps a place to metres (or
/// the plane's units) in which `width` holds.
fn check(net: &Net, d: &[u64], f: &Feature, width: f64, to_plane: &dyn Fn(Point) -> Point) {
    let (source, limit, count, cell, polygons) = f;
    let what = format!("source {source} limit {limit}");
    let within: Vec<usize> = (0..d.len()).filter(|&v| d[v] <= *limit).collect();
    assert_eq!(*count, within.len() as u64, "{what}: vertices within");
    assert!(!polygons.is_empty(), "{what}: no polygon");
    for rings in polygons {
        assert!(signed_area(&rings[0]) > 0.0, "{what}: outer ring clockwise");
        for h in &rings[1..] {
            assert!(signed_area(h) < 0.0, "{what}: hole counter-clockwise");
        }
        for r in rings {
            assert_eq!(r.first(), r.last(), "{what}: ring not closed");
        }
    }
    // Inside: every vertex within the limit, and every point along every wholly reached arc.
    for &v in &within {
        assert!(
            inside(polygons, net.places[v]),
            "{what}: vertex {v} at d = {}",
            d[v]
        );
        for (h, w, line) in &net.out[v] {
            if d[v] + w <= *limit {
                for s in line.windows(2) {
                    for k in 0..=4 {
                        let t = k as f64 / 4.0;
                        let p = [
                            s[0][0] + t * (s[1][0] - s[0][0]),
                            s[0][1] + t * (s[1][1] - s[0][1]),
                        ];
                        assert!(inside(polygons, p), "{what}: arc {v} -> {h} at {p:?}");
                    }
                }
            }
        }
    }
    // Outside: every vertex farther than the bound from every arc whose tail is within the
    // limit (whole arcs: more than is reached).
    let segments: Vec<[Point; 2]> =
        within
            .iter()
            .flat_map(|&v| {
                let p = net.places[v];
                std::iter::once([p, p]).chain(net.out[v].iter().flat_map(|(_, _, line)| {
                    line.windows(2).map(|s| [s[0], s[1]]).collect::<Vec<_>>()
                }))
            })
            .map(|[a, b]| [to_plane(a), to_plane(b)])
            .collect();
    let bound = width + cell * (1.0 + std::f64::consts::FRAC_1_SQRT_2) + 1e-6 * width;
    // Outside the polygons' bounding box nothing is inside: the vertices in it are tested.
    let corners = polygons.iter().flat_map(|r| &r[0]);
    let lo = corners
        .clone()
        .fold([f64::INFINITY; 2], |b, p| [b[0].min(p[0]), b[1].min(p[1])]);
    let hi = corners.fold([f64::NEG_INFINITY; 2], |b, p| {
        [b[0].max(p[0]), b[1].max(p[1])]
    });
    let mut outside = 0;
    for (v, &p) in net.places.iter().enumerate() {
        if p[0] < lo[0] || p[0] > hi[0] || p[1] < lo[1] || p[1] > hi[1] {
            continue;
        }
        let q = to_plane(p);
        let near = segments
            .iter()
            .map(|s| distance(q, s[0], s[1]))
            .fold(f64::INFINITY, f64::min);
        if near > bound {
            outside += 1;
            assert!(
                !inside(polygons, p),
                "{what}: vertex {v} inside at {near} from the roads"
            );
        }
    }
    assert!(
        outside > 0,
        "{what}: no vertex in the polygons' box far enough to test"
    );
}

/// helsinki's network from the run's `edges.csv` and `vertices.csv` (turn restrictions off,
/// so the edges are the graph's arcs).
fn helsinki_net(dir: &Path) -> Net {
    let text = std::fs::read_to_string(dir.join("vertices.csv")).unwrap();
    let places: Vec<Point> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            [f[2].parse().unwrap(), f[3].parse().unwrap()]
        })
        .collect();
    let mut out = vec![Vec::new(); places.len()];
    let mut r = csv::Reader::from_path(dir.join("edges.csv")).unwrap();
    for rec in r.records() {
        let rec = rec.unwrap();
        let wkt = rec[6]
            .strip_prefix("LINESTRING (")
            .and_then(|x| x.strip_suffix(')'))
            .unwrap();
        let line: Vec<Point> = wkt
            .split(", ")
            .map(|xy| {
                let (x, y) = xy.split_once(' ').unwrap();
                [x.parse().unwrap(), y.parse().unwrap()]
            })
            .collect();
        let (u, v): (usize, usize) = (rec[0].parse().unwrap(), rec[1].parse().unwrap());
        out[u].push((v, rec[2].parse().unwrap(), line));
    }
    Net { out, places }
}

#[test]
fn helsinki_isochrone_polygons_hold_what_the_limit_reaches_and_no_more() {
    let Some(h) = data("helsinki.osm.pbf") else {
        return;
    };
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = [100, 700]\n[input]\npath = {:?}\n\
         [input.osm]\nexport = true\nturn_restrictions = false\n\
         [apsp.reach]\nisochrones = [3000, 8000]\nisochrone_polygons = true\n",
        h.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none", "units.cpu_workers=2"]);
    let reach = &out.report["checksum"]["reach"];
    assert_eq!(reach["isochrone_polygons"], "isochrones.geojson", "{reach}");
    assert_eq!(reach["isochrone_width"], 50.0);
    let (head, list) = features(&out.dir);
    assert_eq!(head["coordinates"], "WGS84 longitude, latitude (degrees)");
    assert_eq!(
        list.iter().map(|f| (f.0, f.1)).collect::<Vec<_>>(),
        vec![(100, 3000), (100, 8000), (700, 3000), (700, 8000)]
    );
    let net = helsinki_net(&out.dir);
    for f in &list {
        assert_eq!(f.3, 25.0, "default cells: half the width");
        let d = dijkstra(&net, f.0 as usize);
        // The run's plane: equirectangular metres around the source.
        let [lon0, lat0] = net.places[f.0 as usize];
        let k = 6_371_008.8 * std::f64::consts::PI / 180.0;
        let plane = move |p: Point| {
            [
                (p[0] - lon0) * k * lat0.to_radians().cos(),
                (p[1] - lat0) * k,
            ]
        };
        check(&net, &d, f, 50.0, &plane);
    }
    // A wider buffer: fewer, larger cells, the same vertices.
    let wide = run(
        &cfg.replace(
            "isochrone_polygons = true",
            "isochrone_polygons = true\nisochrone_width = 120",
        ),
        &["units.opencl=none", "units.cpu_workers=2"],
    );
    let (_, wide_list) = features(&wide.dir);
    for (a, b) in list.iter().zip(&wide_list) {
        assert_eq!((a.0, a.1, a.2), (b.0, b.1, b.2));
        assert_eq!(b.3, 60.0);
    }
    let f = &wide_list[1];
    let d = dijkstra(&net, f.0 as usize);
    let [lon0, lat0] = net.places[f.0 as usize];
    let k = 6_371_008.8 * std::f64::consts::PI / 180.0;
    let plane = move |p: Point| {
        [
            (p[0] - lon0) * k * lat0.to_radians().cos(),
            (p[1] - lat0) * k,
        ]
    };
    check(&net, &d, f, 120.0, &plane);
}

/// A gzip file's text.
fn gz_text(p: &Path) -> String {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s
}

#[test]
fn moscow_polygons_are_drawn_in_the_co_files_plane() {
    let (Some(gr), Some(co)) = (data("osm-moscow.gr.gz"), data("osm-moscow.co.gz")) else {
        return;
    };
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = [1, 200000]\n[input]\npath = {:?}\ncoordinates = {:?}\n\
         [apsp]\ncpu_algorithm = \"dijkstra\"\n\
         [apsp.reach]\nisochrones = [3000]\nisochrone_polygons = true\nisochrone_width = 40\n",
        gr.display().to_string(),
        co.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none", "units.cpu_workers=2"]);
    let (head, list) = features(&out.dir);
    assert!(
        head["coordinates"].as_str().unwrap().starts_with("planar"),
        "{}",
        head["coordinates"]
    );
    // The graph and its places, read here (ids from 1 in the files, from 0 below).
    let mut places = Vec::new();
    for l in gz_text(&co).lines() {
        if let Some(rest) = l.strip_prefix("v ") {
            let f: Vec<f64> = rest
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            assert_eq!(f[0] as usize, places.len() + 1);
            places.push([f[1], f[2]]);
        }
    }
    let mut out_arcs = vec![Vec::new(); places.len()];
    for l in gz_text(&gr).lines() {
        if let Some(rest) = l.strip_prefix("a ") {
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            let (u, v) = (f[0] as usize - 1, f[1] as usize - 1);
            if u != v {
                out_arcs[u].push((v, f[2], vec![places[u], places[v]]));
            }
        }
    }
    let net = Net {
        out: out_arcs,
        places,
    };
    assert_eq!(list.len(), 2);
    for f in &list {
        assert_eq!(f.3, 20.0);
        // Ids from 1 in the output; the plane is the file's own.
        let d = dijkstra(&net, f.0 as usize - 1);
        let shifted = (f.0 - 1, f.1, f.2, f.3, f.4.clone());
        check(&net, &d, &shifted, 40.0, &|p| p);
    }
}

#[test]
fn isochrone_polygon_keys_are_checked() {
    let gen = apsp_gen("road", 400, "", "[0]");
    let err = |table: &str| {
        try_run(
            &format!("{gen}[apsp.reach]\n{table}\n"),
            &["units.opencl=none"],
        )
        .unwrap_err()
        .to_string()
    };
    let e = err("isochrone_polygons = true\nradii = [5]");
    assert!(
        e.contains("isochrone_polygons = true: polygons") && e.contains("isochrones = ["),
        "{e}"
    );
    let e = err("isochrones = [50]\nisochrone_width = 30");
    assert!(
        e.contains("isochrone_width") && e.contains("set isochrone_polygons = true"),
        "{e}"
    );
    let e = err("isochrones = [50]\nisochrone_polygons = true\nisochrone_width = 0");
    assert!(
        e.contains("isochrone_width = 0") && e.contains("positive"),
        "{e}"
    );
    // A generated graph has no places: the key is named, with what to change.
    let e = err("isochrones = [50]\nisochrone_polygons = true");
    assert!(
        e.contains("[apsp.reach] isochrone_polygons = true") && e.contains("input.coordinates"),
        "{e}"
    );
}
