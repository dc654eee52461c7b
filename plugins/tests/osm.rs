//! OpenStreetMap input, coordinates and id files: crafted PBF files with known geometry and
//! tags (weights against a haversine computed here, skips counted), hostile files, the
//! helsinki extract as an origin-destination matrix from points (distances against the
//! great-circle bound, snaps against a brute-force nearest vertex), the same matrix from id
//! and point files, and DIMACS `.co` coordinates.

use crate::util::{bellman_ford, data, run, tmpdir, try_run, Out};
use npyz::WriterBuilder;
use std::path::Path;

// ---- a minimal PBF writer (protobuf by hand), for crafted inputs ----

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}
fn field_bytes(out: &mut Vec<u8>, field: u64, data: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}
fn field_uint(out: &mut Vec<u8>, field: u64, v: u64) {
    varint(out, field << 3);
    varint(out, v);
}
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}
fn packed(out: &mut Vec<u8>, field: u64, vals: impl IntoIterator<Item = u64>) {
    let mut b = Vec::new();
    for v in vals {
        varint(&mut b, v);
    }
    field_bytes(out, field, &b);
}

/// A way: id, node refs, tags (a tag value may be raw bytes, to plant non-UTF-8 text).
struct W(i64, Vec<i64>, Vec<(&'static str, &'static [u8])>);

/// A tag key written as an index far outside the block's string table (a corrupt file).
const BAD_INDEX: &str = "@bad-string-index";

/// An uncompressed PBF file: one header blob, one data blob with plain nodes (`(id, lon,
/// lat)`), the ways, and `relations` empty relations.
fn pbf(nodes: &[(i64, f64, f64)], ways: &[W], relations: usize) -> Vec<u8> {
    pbf_requiring(nodes, ways, relations, &[])
}

/// A relation: id, tags, members `(type, id, role)` (type 0 a node, 1 a way, 2 a relation).
struct R(
    i64,
    Vec<(&'static str, &'static str)>,
    Vec<(u8, i64, &'static str)>,
);

/// [`pbf`] with a header that lists `required` features besides `OsmSchema-V0.6`.
fn pbf_requiring(
    nodes: &[(i64, f64, f64)],
    ways: &[W],
    relations: usize,
    required: &[&str],
) -> Vec<u8> {
    let empty: Vec<R> = (0..relations)
        .map(|i| R(100 + i as i64, vec![], vec![]))
        .collect();
    pbf_with(nodes, ways, &empty, required)
}

/// An uncompressed PBF file with plain nodes, ways and `relations` (tags and members).
fn pbf_with(nodes: &[(i64, f64, f64)], ways: &[W], relations: &[R], required: &[&str]) -> Vec<u8> {
    let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
    let mut sid = |s: &[u8]| -> u64 {
        if s == BAD_INDEX.as_bytes() {
            return 1_000_000;
        }
        if let Some(i) = strings.iter().position(|x| x == s) {
            return i as u64;
        }
        strings.push(s.to_vec());
        strings.len() as u64 - 1
    };
    let mut group = Vec::new();
    for &(id, lon, lat) in nodes {
        let mut n = Vec::new();
        field_uint(&mut n, 1, zigzag(id));
        // Granularity 100 nanodegrees: degrees x 1e7.
        field_uint(&mut n, 8, zigzag((lat * 1e7).round() as i64));
        field_uint(&mut n, 9, zigzag((lon * 1e7).round() as i64));
        field_bytes(&mut group, 1, &n);
    }
    let mut way_group = Vec::new();
    for W(id, refs, tags) in ways {
        let mut w = Vec::new();
        field_uint(&mut w, 1, *id as u64);
        let keys: Vec<u64> = tags.iter().map(|(k, _)| sid(k.as_bytes())).collect();
        let vals: Vec<u64> = tags.iter().map(|(_, v)| sid(v)).collect();
        packed(&mut w, 2, keys);
        packed(&mut w, 3, vals);
        let mut last = 0;
        packed(
            &mut w,
            8,
            refs.iter().map(|&r| {
                let d = r.wrapping_sub(last);
                last = r;
                zigzag(d)
            }),
        );
        field_bytes(&mut way_group, 3, &w);
    }
    let mut rel_group = Vec::new();
    for R(id, tags, members) in relations {
        let mut r = Vec::new();
        field_uint(&mut r, 1, *id as u64);
        if !tags.is_empty() {
            let keys: Vec<u64> = tags.iter().map(|(k, _)| sid(k.as_bytes())).collect();
            let vals: Vec<u64> = tags.iter().map(|(_, v)| sid(v.as_bytes())).collect();
            packed(&mut r, 2, keys);
            packed(&mut r, 3, vals);
        }
        if !members.is_empty() {
            let roles: Vec<u64> = members.iter().map(|m| sid(m.2.as_bytes())).collect();
            packed(&mut r, 8, roles);
            let mut last = 0;
            packed(
                &mut r,
                9,
                members.iter().map(|m| {
                    let d = m.1 - last;
                    last = m.1;
                    zigzag(d)
                }),
            );
            packed(&mut r, 10, members.iter().map(|m| m.0 as u64));
        }
        field_bytes(&mut rel_group, 4, &r);
    }
    let mut table = Vec::new();
    for s in &strings {
        field_bytes(&mut table, 1, s);
    }
    let mut block = Vec::new();
    field_bytes(&mut block, 1, &table);
    field_bytes(&mut block, 2, &group);
    field_bytes(&mut block, 2, &way_group);
    if !relations.is_empty() {
        field_bytes(&mut block, 2, &rel_group);
    }
    let mut header = Vec::new();
    field_bytes(&mut header, 4, b"OsmSchema-V0.6");
    for f in required {
        field_bytes(&mut header, 4, f.as_bytes());
    }
    let mut file = Vec::new();
    for (kind, body) in [("OSMHeader", header), ("OSMData", block)] {
        let mut blob = Vec::new();
        field_bytes(&mut blob, 1, &body);
        field_uint(&mut blob, 2, body.len() as u64);
        let mut bh = Vec::new();
        field_bytes(&mut bh, 1, kind.as_bytes());
        field_uint(&mut bh, 3, blob.len() as u64);
        file.extend_from_slice(&(bh.len() as u32).to_be_bytes());
        file.extend_from_slice(&bh);
        file.extend_from_slice(&blob);
    }
    file
}

/// Great-circle metres, written here apart from the reader's (same sphere, R = 6371008.8 m).
fn gc(a: [f64; 2], b: [f64; 2]) -> f64 {
    let r = 6_371_008.8f64;
    let (p1, p2) = (a[1].to_radians(), b[1].to_radians());
    let dp = p2 - p1;
    let dl = (b[0] - a[0]).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * r * h.sqrt().asin()
}

/// `distances.npy` as u64 rows (`u64::MAX` unreachable), with its shape.
fn distances(out: &Out) -> (Vec<u64>, Vec<u64>) {
    let f =
        npyz::NpyFile::new(std::fs::File::open(out.dir.join("distances.npy")).unwrap()).unwrap();
    let shape = f.shape().to_vec();
    assert_eq!(f.dtype().descr(), "'<u4'");
    let v = f
        .into_vec::<u32>()
        .unwrap()
        .into_iter()
        .map(|d| if d == u32::MAX { u64::MAX } else { d as u64 })
        .collect();
    (v, shape)
}

/// `vertices.csv`'s rows: `(osm_id, lon, lat, kind, of)` by id, checking the header and that
/// ids run 0..n (`osm_id` and `of` are -1 where empty).
fn all_vertices(out: &Out) -> Vec<(i64, f64, f64, String, i64)> {
    let text = std::fs::read_to_string(out.dir.join("vertices.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("id,osm_id,lon,lat,kind,of"));
    let int = |f: &str| if f.is_empty() { -1 } else { f.parse().unwrap() };
    lines
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[0].parse::<usize>().unwrap(), i, "ids run 0..n in order");
            (
                int(f[1]),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].to_string(),
                int(f[5]),
            )
        })
        .collect()
}

/// `vertices.csv`'s road vertices (`kind` = `node`, first): `(osm_id, lon, lat)` by id.
fn vertices(out: &Out) -> Vec<(i64, f64, f64)> {
    let all = all_vertices(out);
    let roads: Vec<(i64, f64, f64)> = all
        .iter()
        .take_while(|v| v.3 == "node")
        .map(|v| (v.0, v.1, v.2))
        .collect();
    assert!(
        all[roads.len()..].iter().all(|v| v.3 != "node"),
        "road vertices come first"
    );
    roads
}

/// `snapped.csv` rows: `(kind, index, [x, y], vertex, distance)`.
fn snapped(out: &Out) -> Vec<(String, usize, [f64; 2], u64, f64)> {
    let text = std::fs::read_to_string(out.dir.join("snapped.csv")).unwrap();
    let mut lines = text.lines();
    let head = lines.next().unwrap();
    assert!(
        head == "kind,index,lon,lat,vertex,distance,on_lon,on_lat"
            || head == "kind,index,x,y,vertex,distance,on_x,on_y",
        "{head}"
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                [f[2].parse().unwrap(), f[3].parse().unwrap()],
                f[4].parse().unwrap(),
                f[5].parse().unwrap(),
            )
        })
        .collect()
}

fn osm_config(path: &Path, extra: &str) -> String {
    format!(
        "[run]\nplugin = \"apsp\"\nsources = \"all\"\n[input]\npath = {:?}\n{extra}\n\
         [output]\ndistances = true\n",
        path.display().to_string()
    )
}

// Nodes of the crafted map, around (25.0, 60.0): 2 lies between 1 and 3 on one way.
const NODES: &[(i64, f64, f64)] = &[
    (1, 25.000, 60.000),
    (2, 25.001, 60.0005),
    (3, 25.002, 60.000),
    (4, 25.002, 60.001),
    (5, 25.003, 60.000),
    (6, 25.004, 60.000),
    (7, 25.005, 60.000),
];

fn crafted() -> Vec<u8> {
    let hw = |v: &'static str| ("highway", v.as_bytes());
    pbf(
        NODES,
        &[
            W(10, vec![1, 2, 3], vec![hw("residential")]),
            W(11, vec![3, 4], vec![hw("primary"), ("oneway", b"yes")]),
            W(
                12,
                vec![4, 1],
                vec![hw("residential"), ("access", b"private")],
            ),
            // A node the file does not hold.
            W(13, vec![4, 99, 1], vec![hw("residential")]),
            W(14, vec![3, 5], vec![hw("footway")]),
            W(
                15,
                vec![5, 6],
                vec![hw("residential"), ("oneway", b"reversible")],
            ),
            // A value that is not UTF-8.
            W(
                16,
                vec![6, 7],
                vec![hw("residential"), ("name", b"\xff\xfe")],
            ),
            W(17, vec![1, 7], vec![("building", b"yes")]),
            // Node ids whose deltas overflow.
            W(18, vec![i64::MAX, -2], vec![hw("residential")]),
        ],
        2,
    )
}

fn at(id: i64) -> [f64; 2] {
    let n = NODES.iter().find(|n| n.0 == id).unwrap();
    [n.1, n.2]
}

#[test]
fn crafted_map_car_distance_and_time() {
    let dir = tmpdir("osm-crafted");
    let file = dir.join("m.osm.pbf");
    std::fs::write(&file, crafted()).unwrap();
    // Car: ways 10 (1-2-3, both ways) and 11 (3 -> 4) only; node 2 contracted.
    let out = run(&osm_config(&file, ""), &["units.opencl=none"]);
    let v = vertices(&out);
    let ids: Vec<i64> = v.iter().map(|x| x.0).collect();
    assert_eq!(
        ids,
        vec![1, 3, 4],
        "kept vertices in OSM id order, node 2 contracted"
    );
    for &(osm, lon, lat) in &v {
        assert_eq!([lon, lat], at(osm), "vertices.csv places node {osm}");
    }
    let w13 = (10.0 * (gc(at(1), at(2)) + gc(at(2), at(3)))).round() as u64;
    let w34 = (10.0 * gc(at(3), at(4))).round() as u64;
    let inf = u64::MAX;
    let (d, shape) = distances(&out);
    assert_eq!(shape, vec![3, 3]);
    assert_eq!(
        d,
        vec![0, w13, w13 + w34, w13, 0, w34, inf, inf, 0],
        "decimetres along the way's geometry; 3 -> 4 one way"
    );
    let osm = &out.report["input"]["places"]["osm"];
    assert_eq!(osm["ways_missing_node"], 1, "{osm}");
    assert_eq!(osm["ways_bad_tag"], 1, "{osm}");
    assert_eq!(osm["ways_bad_oneway"], 1, "{osm}");
    assert_eq!(osm["relations_unused"], 2, "{osm}");
    assert_eq!(osm["ways_bad_refs"], 1, "{osm}");
    assert_eq!(osm["ways_used"], 2, "{osm}");
    assert_eq!(osm["nodes"], 7, "{osm}");

    // Time: residential 30 km/h, primary 70 km/h, in deciseconds (m / (km/h / 3.6) x 10).
    let out = run(
        &osm_config(&file, "[input.osm]\nweight = \"time\"\n"),
        &["units.opencl=none"],
    );
    let t13 = ((gc(at(1), at(2)) + gc(at(2), at(3))) * 36.0 / 30.0).round() as u64;
    let t34 = (gc(at(3), at(4)) * 36.0 / 70.0).round() as u64;
    let (d, _) = distances(&out);
    assert_eq!(d[1], t13);
    assert_eq!(d[5], t34);
    assert_eq!(d[2], t13 + t34);
}

#[test]
fn crafted_map_foot_and_bike() {
    let dir = tmpdir("osm-foot");
    let file = dir.join("m.osm.pbf");
    std::fs::write(&file, crafted()).unwrap();
    // Foot: the footway 3-5 and the "reversible" 5-6 (walkers ignore oneway), 3-4 both ways;
    // not the private 4-1.
    let out = run(
        &osm_config(&file, "[input.osm]\nprofile = \"foot\"\n"),
        &["units.opencl=none"],
    );
    let ids: Vec<i64> = vertices(&out).iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![1, 3, 4, 5, 6]);
    let (d, _) = distances(&out);
    let w34 = (10.0 * gc(at(3), at(4))).round() as u64;
    assert_eq!(d[2 * 5 + 1], w34, "4 -> 3 on foot against the oneway");
    let w56 = (10.0 * gc(at(5), at(6))).round() as u64;
    assert_eq!(d[3 * 5 + 4], w56);
    assert_eq!(out.report["input"]["places"]["osm"]["ways_bad_oneway"], 0);
    // Bike: no footway (no bicycle tag), so 5 and 6 only through the reversible way: skipped.
    let out = run(
        &osm_config(&file, "[input.osm]\nprofile = \"bike\"\n"),
        &["units.opencl=none"],
    );
    let ids: Vec<i64> = vertices(&out).iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![1, 3, 4]);
}

#[test]
fn impossible_coordinates_and_string_indices_are_counted_apart() {
    let dir = tmpdir("osm-corrupt");
    let file = dir.join("c.osm.pbf");
    let hw = ("highway", b"residential".as_slice());
    let mut nodes = NODES.to_vec();
    nodes.push((8, 25.006, 95.0)); // latitude beyond the pole
    nodes.push((9, 200.0, 60.0)); // longitude beyond the antimeridian
    let ways = [
        W(10, vec![1, 2, 3], vec![hw]),
        W(20, vec![7, 8], vec![hw]),
        W(21, vec![9, 1], vec![hw]),
        // Off the globe and missing at once: the corrupt node decides.
        W(22, vec![3, 99, 9], vec![hw]),
        W(23, vec![4, 99], vec![hw]),
        W(24, vec![3, 4], vec![hw, (BAD_INDEX, b"x")]),
    ];
    std::fs::write(&file, pbf(&nodes, &ways, 0)).unwrap();
    let out = run(&osm_config(&file, ""), &["units.opencl=none"]);
    let osm = &out.report["input"]["places"]["osm"];
    assert_eq!(osm["ways_bad_coordinates"], 3, "{osm}");
    assert_eq!(osm["ways_missing_node"], 1, "{osm}");
    assert_eq!(osm["ways_bad_string_index"], 1, "{osm}");
    assert_eq!(osm["ways_bad_tag"], 0, "{osm}");
    assert_eq!(osm["ways_used"], 1, "{osm}");
    let ids: Vec<i64> = vertices(&out).iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![1, 3], "only way 10 is kept");
    let (d, _) = distances(&out);
    let w13 = (10.0 * (gc(at(1), at(2)) + gc(at(2), at(3)))).round() as u64;
    assert_eq!(d, vec![0, w13, w13, 0]);
    // With nothing routable, the message counts each kind of skip in its own words.
    let file = dir.join("only-corrupt.osm.pbf");
    std::fs::write(&file, pbf(&nodes, &ways[1..], 0)).unwrap();
    let e = try_run(&osm_config(&file, ""), &["units.opencl=none"])
        .err()
        .unwrap()
        .to_string();
    for want in [
        "only-corrupt.osm.pbf: no way is routable",
        "5 ways",
        "3 ways skipped for a node with impossible coordinates",
        "1 way skipped for a missing node",
        "1 way skipped for a tag index outside the string table",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
}

#[test]
fn a_pbf_requiring_an_unsupported_feature_is_refused() {
    let dir = tmpdir("osm-features");
    let ways = [W(10, vec![1, 2, 3], vec![("highway", b"residential")])];
    for (feature, want) in [
        ("HistoricalInformation", "(a history file"),
        ("Sort.Geographic-V9", "use a plain .osm.pbf extract"),
    ] {
        let file = dir.join("h.osm.pbf");
        std::fs::write(&file, pbf_requiring(NODES, &ways, 0, &[feature])).unwrap();
        let e = try_run(&osm_config(&file, ""), &["units.opencl=none"])
            .err()
            .unwrap_or_else(|| panic!("a file requiring {feature} was accepted"))
            .to_string();
        assert!(
            e.contains(&format!(
                "h.osm.pbf: the file requires the PBF feature \"{feature}\""
            )),
            "{e}"
        );
        assert!(e.contains(want), "{e}");
    }
    // The features the reader implements are accepted.
    let file = dir.join("dense.osm.pbf");
    std::fs::write(&file, pbf_requiring(NODES, &ways, 0, &["DenseNodes"])).unwrap();
    let out = run(&osm_config(&file, ""), &["units.opencl=none"]);
    assert_eq!(out.report["input"]["places"]["osm"]["ways_used"], 1);
}

#[test]
fn hostile_osm_files_are_one_clear_error() {
    let dir = tmpdir("osm-hostile");
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.osm.pbf", Vec::new()),
        (
            "garbage.osm.pbf",
            (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ),
        ("huge-header.osm.pbf", vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3]),
        ("text.osm.pbf", b"<?xml version='1.0'?><osm></osm>".to_vec()),
    ];
    let whole = crafted();
    for cut in [3, whole.len() / 3, whole.len() - 1] {
        cases.push(("cut.osm.pbf", whole[..cut].to_vec()));
    }
    // A node whose latitude overflows the decoder's arithmetic (or lies off the globe).
    cases.push((
        "offglobe.osm.pbf",
        pbf(
            &[(1, 25.0, 1e12), (2, 25.0, 60.0)],
            &[W(1, vec![1, 2], vec![("highway", b"residential")])],
            0,
        ),
    ));
    // Only ways no profile can use: no vertex at all.
    cases.push((
        "noroads.osm.pbf",
        pbf(NODES, &[W(1, vec![1, 2], vec![("building", b"yes")])], 0),
    ));
    if let Some(h) = data("helsinki.osm.pbf") {
        let bytes = std::fs::read(h).unwrap();
        for frac in [0.1, 0.5, 0.9] {
            cases.push((
                "helsinki-cut.osm.pbf",
                bytes[..(bytes.len() as f64 * frac) as usize].to_vec(),
            ));
        }
        let mut flipped = bytes.clone();
        for i in (1000..flipped.len()).step_by(997) {
            flipped[i] ^= 0x5a;
        }
        cases.push(("helsinki-flipped.osm.pbf", flipped));
    }
    for (name, bytes) in cases {
        let file = dir.join(name);
        std::fs::write(&file, &bytes).unwrap();
        let e = try_run(&osm_config(&file, ""), &["units.opencl=none"])
            .err()
            .unwrap_or_else(|| panic!("{name} ({} bytes) was accepted", bytes.len()))
            .to_string();
        assert!(e.contains(name), "{name}: the message names the file: {e}");
        assert!(
            e.contains("not a readable OpenStreetMap PBF") || e.contains("no way is routable"),
            "{name}: {e}"
        );
    }
}

#[test]
fn osm_keys_are_checked() {
    let cases = [
        (
            "[input]\npath = \"g.gr\"\n[input.osm]\nprofile = \"car\"\n",
            "test.toml:5: [input.osm] applies to OpenStreetMap input",
        ),
        (
            "[input]\npath = \"m.osm.pbf\"\n[input.osm]\nprofile = \"tram\"\n",
            "unknown variant `tram`",
        ),
        (
            "[input]\npath = \"m.osm.pbf\"\n[input.osm]\nspeed = 3\n",
            "unknown field `speed`",
        ),
        (
            "[input]\npath = \"m.osm.pbf\"\n[input.osm]\nsnap = \"road\"\n",
            "unknown variant `road`, expected `edge` or `vertex`",
        ),
        (
            "[input]\npath = \"m.osm.pbf\"\n[input.osm]\nturn_restrictions = \"yes\"\n",
            "input.osm.turn_restrictions",
        ),
        (
            "[input]\npath = \"m.osm.pbf\"\ncoordinates = \"m.co\"\n",
            "input.coordinates = \"m.co\": an OpenStreetMap input has its own",
        ),
        (
            "[input.generate]\nmodel = \"road\"\nvertices = 9\n[input]\ncoordinates = \"m.co\"\n",
            "coordinates belong to a graph file",
        ),
    ];
    for (body, want) in cases {
        let toml = format!("[run]\nplugin = \"apsp\"\n{body}");
        // [input.osm]'s values are the OSM reader's: checked when the plugin reads them.
        let e = match tuccompi::Plan::from_toml(&toml, Path::new("test.toml"), &[]) {
            Err(e) => e,
            Ok(plan) => tuccompi_plugins::common::input::Input::of(&plan)
                .and_then(|input| tuccompi_plugins::common::osm_options(&plan, &input))
                .err()
                .unwrap_or_else(|| panic!("accepted: {body}")),
        }
        .to_string();
        assert!(e.contains(want), "{body}: {e}");
    }
    // Points in the inline forms, and the wrong ones named.
    let plan = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        tuccompi::Plan::from_toml("[run]\nplugin = \"apsp\"\n", Path::new("t.toml"), &sets)
    };
    let keys = |set: &str| {
        plan(&[set]).and_then(|p| {
            tuccompi_plugins::common::sources::split_options::<tuccompi_plugins::apsp::ApspOptions>(
                &p, "apsp",
            )
            .map(|(_, keys)| keys)
        })
    };
    let k = keys("apsp.sources=[[24.5, 60], [1, -2.5]]").unwrap();
    assert_eq!(
        k.sources,
        tuccompi_plugins::common::Sources::Points(vec![[24.5, 60.0], [1.0, -2.5]])
    );
    assert_eq!(k.sources_key, "apsp.sources");
    for (set, want) in [
        (
            "apsp.sources=[[1, 2, 3]]",
            "point 1 is not two finite numbers",
        ),
        (
            "apsp.sources=[[1, 2], 3]",
            "entry 2 (3) is not a [lon, lat] point",
        ),
        (
            "apsp.sources={ path = \"x\" }",
            "must be { file = \"PATH\" } alone",
        ),
    ] {
        let e = keys(set).unwrap_err().to_string();
        assert!(e.contains(want), "{set}: {e}");
    }
    // An id file is read by the plugins (the plan keeps its path).
    let sources = |set: &str| {
        let plan = plan(&[set]).unwrap();
        let (_, keys) = tuccompi_plugins::common::sources::split_options::<
            tuccompi_plugins::apsp::ApspOptions,
        >(&plan, "apsp")
        .unwrap();
        tuccompi_plugins::common::ids::sources(&plan, &keys)
    };
    let e = sources("apsp.sources={ file = \"/nonexistent/ids.txt\" }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("apsp.sources: { file ="), "{e}");
    // Duplicates from a file are refused as inline ones are.
    let dir = tmpdir("osm-dup");
    std::fs::write(dir.join("s.txt"), "3\n5\n3\n").unwrap();
    let e = sources(&format!(
        "run.tasks={{ file = {:?} }}",
        dir.join("s.txt").display().to_string()
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("s.txt:3: vertex id 3 is listed a second time (first at line 1)"),
        "{e}"
    );
    // Points without places.
    let e = try_run(
        "[run]\nplugin = \"apsp\"\n[apsp]\nsources = [[1.0, 2.0]]\n[input.generate]\nmodel = \"road\"\nvertices = 16\n",
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("apsp.sources: points need vertex coordinates"),
        "{e}"
    );
}

/// 16 points on a grid over central Helsinki (inside the extract).
fn helsinki_points(shift: f64) -> Vec<[f64; 2]> {
    (0..16)
        .map(|i| {
            [
                24.9375 + 0.0045 * (i % 4) as f64 + shift,
                60.1665 + 0.0030 * (i / 4) as f64 + shift / 2.0,
            ]
        })
        .collect()
}

fn inline(points: &[[f64; 2]]) -> String {
    let p: Vec<String> = points
        .iter()
        .map(|p| format!("[{}, {}]", p[0], p[1]))
        .collect();
    format!("[{}]", p.join(", "))
}

fn helsinki_od(path: &Path, sources: &str, targets: &str) -> Out {
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = {sources}\n[input]\npath = {:?}\n\
         [input.osm]\nprofile = \"car\"\nweight = \"distance\"\nsnap = \"vertex\"\n\
         [apsp]\ntargets = {targets}\n\
         [output]\ndistances = true\n",
        path.display().to_string()
    );
    run(&cfg, &["units.opencl=none"])
}

#[test]
fn helsinki_od_matrix_from_points_and_from_files() {
    let Some(h) = data("helsinki.osm.pbf") else {
        return;
    };
    let (src, dst) = (helsinki_points(0.0), helsinki_points(0.0012));
    let out = helsinki_od(&h, &inline(&src), &inline(&dst));
    let v = vertices(&out);
    let all = all_vertices(&out);
    assert_eq!(all.len() as u64, out.report["input"]["n"].as_u64().unwrap());
    // Vertex snapping makes no phantom vertex; the rest are turn-restriction copies.
    assert!(all[v.len()..].iter().all(|x| x.3 == "turn"));
    let mut osm_ids: Vec<i64> = v.iter().map(|x| x.0).collect();
    assert!(
        osm_ids.windows(2).all(|w| w[0] < w[1]),
        "ids in OSM id order, unique"
    );
    osm_ids.dedup();
    for &(_, lon, lat) in &v {
        assert!((24.9..25.0).contains(&lon) && (60.1..60.2).contains(&lat));
    }
    // Every snap is the nearest vertex (brute force over vertices.csv) at the stated distance.
    let snaps = snapped(&out);
    assert_eq!(snaps.len(), 32);
    for (i, (kind, idx, p, vertex, dist)) in snaps.iter().enumerate() {
        let want = if i < 16 {
            (src[i], "source", i)
        } else {
            (dst[i - 16], "target", i - 16)
        };
        assert_eq!((*p, kind.as_str(), *idx), want);
        let (_, lon, lat) = v[*vertex as usize];
        assert!((gc(*p, [lon, lat]) - dist).abs() < 0.01, "snap {i}: {dist}");
        let best = v
            .iter()
            .map(|&(_, x, y)| gc(*p, [x, y]))
            .fold(f64::INFINITY, f64::min);
        assert!(
            *dist <= best + 0.01,
            "snap {i} at {dist} m, nearest vertex {best} m"
        );
    }
    let sv: Vec<u64> = snaps[..16].iter().map(|s| s.3).collect();
    let tv: Vec<u64> = snaps[16..].iter().map(|s| s.3).collect();
    // Every finite distance is at least the great-circle distance between the snapped
    // vertices (decimetres; each arc rounds by at most half a decimetre).
    let (d, shape) = distances(&out);
    assert_eq!(shape, vec![16, 16]);
    let mut finite = 0;
    let mut tightest = f64::INFINITY;
    for i in 0..16 {
        for j in 0..16 {
            let dij = d[i * 16 + j];
            if dij == u64::MAX {
                continue;
            }
            finite += 1;
            let (a, b) = (v[sv[i] as usize], v[tv[j] as usize]);
            let line = 10.0 * gc([a.1, a.2], [b.1, b.2]);
            assert!(
                dij as f64 >= 0.999 * line - 1.0,
                "source {i} -> target {j}: {dij} dm on the road, {line:.1} dm as the crow flies"
            );
            if line > 100.0 {
                tightest = tightest.min(dij as f64 / line);
            }
        }
    }
    assert!(finite >= 200, "only {finite} of 256 pairs connected");
    assert!(
        tightest < 1.6,
        "roads are not that much longer than lines: {tightest}"
    );
    let summary = out.summary();
    for (i, row) in summary.iter().enumerate() {
        assert_eq!(
            row[0] as u64, sv[i],
            "summary rows name the snapped vertices"
        );
    }
    // od.npz labels the matrix with the snapped vertices.
    let mut z = zip::ZipArchive::new(std::fs::File::open(out.dir.join("od.npz")).unwrap()).unwrap();
    let mut entry = |name: &str| {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut z.by_name(name).unwrap(), &mut b).unwrap();
        b
    };
    let ids = |b: Vec<u8>| -> Vec<u64> { npyz::NpyFile::new(&b[..]).unwrap().into_vec().unwrap() };
    assert_eq!(ids(entry("sources.npy")), sv, "od.npz sources");
    assert_eq!(ids(entry("targets.npy")), tv, "od.npz targets");
    let od = entry("distances.npy");
    let f = npyz::NpyFile::new(&od[..]).unwrap();
    assert_eq!(f.shape(), &[16, 16]);
    let od: Vec<u64> = f
        .into_vec::<u32>()
        .unwrap()
        .into_iter()
        .map(|x| if x == u32::MAX { u64::MAX } else { x as u64 })
        .collect();
    assert_eq!(od, d, "od.npz distances are distances.npy's");

    // The same matrix from files: ids (.txt, .csv, .npy) and points (.csv, .npy).
    let dir = tmpdir("osm-ids");
    let txt = dir.join("s.txt");
    std::fs::write(
        &txt,
        sv.iter().map(|x| format!("{x}\n")).collect::<String>(),
    )
    .unwrap();
    let csv = dir.join("t.csv");
    std::fs::write(
        &csv,
        format!(
            "id\n{}",
            tv.iter().map(|x| format!("{x}\n")).collect::<String>()
        ),
    )
    .unwrap();
    let npy_ids = dir.join("t.npy");
    let mut f = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[16])
        .writer(std::fs::File::create(&npy_ids).unwrap())
        .begin_nd()
        .unwrap();
    f.extend(tv.iter().map(|&x| x as i64)).unwrap();
    f.finish().unwrap();
    let pts_csv = dir.join("p.csv");
    std::fs::write(
        &pts_csv,
        format!(
            "name,lon,lat\n{}",
            src.iter()
                .enumerate()
                .map(|(i, p)| format!("p{i},{},{}\n", p[0], p[1]))
                .collect::<String>()
        ),
    )
    .unwrap();
    let pts_npy = dir.join("p.npy");
    let mut f = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[16, 2])
        .writer(std::fs::File::create(&pts_npy).unwrap())
        .begin_nd()
        .unwrap();
    f.extend(dst.iter().flatten().copied()).unwrap();
    f.finish().unwrap();
    let file = |p: &Path| format!("{{ file = {:?} }}", p.display().to_string());
    let want = std::fs::read(out.dir.join("distances.npy")).unwrap();
    for (s, t) in [
        (file(&txt), file(&csv)),
        (file(&txt), file(&npy_ids)),
        (file(&pts_csv), file(&pts_npy)),
        (file(&pts_csv), file(&csv)),
    ] {
        let o = helsinki_od(&h, &s, &t);
        assert_eq!(
            std::fs::read(o.dir.join("distances.npy")).unwrap(),
            want,
            "sources {s}, targets {t}"
        );
    }
}

#[test]
fn co_coordinates_snap_planar_points() {
    // A 2 x 3 grid, 1-based, unit weights along rows, 10 between the rows.
    let dir = tmpdir("co");
    let gr = dir.join("g.gr");
    let arcs = [
        (1, 2, 1),
        (2, 3, 1),
        (4, 5, 1),
        (5, 6, 1),
        (1, 4, 10),
        (3, 6, 10),
    ];
    let mut text = String::from("p sp 6 12\n");
    for &(u, v, w) in &arcs {
        text += &format!("a {u} {v} {w}\na {v} {u} {w}\n");
    }
    std::fs::write(&gr, text).unwrap();
    let co = dir.join("g.co");
    std::fs::write(
        &co,
        "p aux sp co 6\nv 1 0 0\nv 2 100 0\nv 3 200 0\nv 4 0 100\nv 5 100 100\nv 6 200 100\n",
    )
    .unwrap();
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = [[190, 5], [-30, 120]]\n[input]\npath = {:?}\n\
         coordinates = {:?}\n[apsp]\ntargets = [[101, 60], [0, 0]]\n[output]\ndistances = true\n",
        gr.display().to_string(),
        co.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none"]);
    let s = snapped(&out);
    let got: Vec<(u64, f64)> = s.iter().map(|x| (x.3, x.4)).collect();
    let want = [
        (3, 5f64.hypot(10.0)),
        (4, 30f64.hypot(20.0)),
        (5, 1f64.hypot(40.0)),
        (1, 0.0),
    ];
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.0, w.0);
        assert!((g.1 - w.1).abs() < 1e-9, "{g:?} {w:?}");
    }
    assert!(
        !out.dir.join("vertices.csv").exists(),
        "vertices.csv is for OSM input"
    );
    let list: Vec<(u32, u32, i64)> = arcs
        .iter()
        .flat_map(|&(u, v, w)| [(u - 1, v - 1, w), (v - 1, u - 1, w)])
        .collect();
    let (d, _) = distances(&out);
    for (i, src) in [3usize, 4].iter().enumerate() {
        let bf = bellman_ford(6, &list, src - 1);
        for (j, t) in [5usize, 1].iter().enumerate() {
            assert_eq!(d[i * 2 + j] as u128, bf[t - 1].unwrap());
        }
    }
    // A .co file of another graph is refused by name.
    std::fs::write(&co, "p aux sp co 5\n").unwrap();
    let e = try_run(&cfg, &["units.opencl=none"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("g.co:1: 5 vertices, but the graph has 6"), "{e}");
}

#[test]
fn moscow_co_file_snaps_to_its_vertices() {
    let (Some(gr), Some(co)) = (data("osm-moscow.gr.gz"), data("osm-moscow.co.gz")) else {
        return;
    };
    // The .co file's own first vertex, given as a point, snaps to itself at distance 0.
    let text = {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&co).unwrap())
            .take(1 << 16)
            .read_to_string(&mut s)
            .ok();
        s
    };
    let v1 = text
        .lines()
        .find(|l| l.starts_with("v "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .unwrap();
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = [[{}, {}]]\n[input]\npath = {:?}\ncoordinates = {:?}\n\
         [apsp]\ncpu_algorithm = \"dijkstra\"\ntargets = 16\n",
        v1[2],
        v1[3],
        gr.display().to_string(),
        co.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none"]);
    let s = snapped(&out);
    assert_eq!(s[0].4, 0.0);
    let id: u64 = v1[1].parse().unwrap();
    assert_eq!(s[0].3, id, "snapped to the vertex the point came from");
}

// ---- OSM networks as routers build them: restrictions, clipped ways, edge snapping, export ----

/// `distances.npy` rows as a square matrix's road block `k x k` (of `n x n`).
fn block(d: &[u64], n: usize, k: usize) -> Vec<Vec<u64>> {
    (0..k).map(|i| d[i * n..i * n + k].to_vec()).collect()
}

#[test]
fn turn_restrictions_change_car_distances_as_computed_by_hand() {
    // A plus-shaped junction C with four arms W, E, N, S (two-way residential ways 20-23).
    let nodes = [
        (1, 25.001, 60.001),  // C
        (2, 25.000, 60.001),  // W
        (3, 25.0025, 60.001), // E
        (4, 25.001, 60.0016), // N
        (5, 25.001, 60.0003), // S
    ];
    let hw = ("highway", b"residential".as_slice());
    let ways = [
        W(20, vec![2, 1], vec![hw]),
        W(21, vec![1, 3], vec![hw]),
        W(22, vec![1, 4], vec![hw]),
        W(23, vec![5, 1], vec![hw]),
    ];
    let rt = |v: &'static str| vec![("type", "restriction"), ("restriction", v)];
    let (node, way) = (0u8, 1u8);
    let rels = [
        // Heading east from W, left is north.
        R(
            300,
            rt("no_left_turn"),
            vec![(way, 20, "from"), (node, 1, "via"), (way, 22, "to")],
        ),
        // Heading north from S: straight on only.
        R(
            301,
            rt("only_straight_on"),
            vec![(way, 23, "from"), (node, 1, "via"), (way, 22, "to")],
        ),
        // A via way: not supported, counted.
        R(
            302,
            rt("no_right_turn"),
            vec![(way, 20, "from"), (way, 21, "via"), (way, 22, "to")],
        ),
        // No via: unusable.
        R(
            303,
            rt("no_left_turn"),
            vec![(way, 20, "from"), (way, 22, "to")],
        ),
        // A from way the graph lacks: binds nothing.
        R(
            307,
            rt("no_left_turn"),
            vec![(way, 99, "from"), (node, 1, "via"), (way, 22, "to")],
        ),
        // Not for cars.
        R(304, vec![("type", "multipolygon")], vec![]),
        R(
            305,
            vec![("type", "restriction"), ("restriction:hgv", "no_left_turn")],
            vec![(way, 20, "from"), (node, 1, "via"), (way, 22, "to")],
        ),
        R(
            306,
            vec![
                ("type", "restriction"),
                ("restriction", "no_left_turn"),
                ("except", "motorcar"),
            ],
            vec![(way, 20, "from"), (node, 1, "via"), (way, 22, "to")],
        ),
    ];
    let dir = tmpdir("osm-turns");
    let file = dir.join("t.osm.pbf");
    std::fs::write(&file, pbf_with(&nodes, &ways, &rels, &[])).unwrap();
    let place = |id: i64| {
        let n = nodes.iter().find(|n| n.0 == id).unwrap();
        [n.1, n.2]
    };
    // Arm weights in decimetres, and the hand-computed road distances (ids: C 0, W 1, E 2,
    // N 3, S 4): through C, arm to arm.
    let arm: Vec<u64> = [2, 3, 4, 5]
        .iter()
        .map(|&x| (10.0 * gc(place(1), place(x))).round() as u64)
        .collect();
    let (w, e, n, s) = (arm[0], arm[1], arm[2], arm[3]);
    let free = |a: usize, b: usize| -> u64 {
        match (a, b) {
            _ if a == b => 0,
            (0, b) => arm[b - 1],
            (a, 0) => arm[a - 1],
            (a, b) => arm[a - 1] + arm[b - 1],
        }
    };
    let plain: Vec<Vec<u64>> = (0..5)
        .map(|a| (0..5).map(|b| free(a, b)).collect())
        .collect();
    let mut turned = plain.clone();
    // W -> N: not left at C; a U-turn at the end of E or S instead.
    turned[1][3] = w + 2 * e.min(s) + n;
    // S -> W and S -> E: straight on to N only, then back through C.
    turned[4][1] = s + 2 * n + w;
    turned[4][2] = s + 2 * n + e;

    let out = run(&osm_config(&file, ""), &["units.opencl=none"]);
    let total = all_vertices(&out).len();
    let (d, shape) = distances(&out);
    assert_eq!(shape, vec![total as u64, total as u64]);
    assert_eq!(
        block(&d, total, 5),
        turned,
        "car distances with the restrictions"
    );
    let osm = &out.report["input"]["places"]["osm"];
    assert_eq!(osm["restrictions_applied"], 2, "{osm}");
    assert_eq!(osm["restrictions_via_way"], 1, "{osm}");
    assert_eq!(osm["restrictions_unusable"], 2, "{osm}");
    assert_eq!(osm["relations_unused"], 3, "{osm}");
    assert_eq!(osm["turn_vertices"], (total - 5) as u64, "{osm}");
    // The GPU half (PoCL in CI) runs the same expanded graph: PHAST and the work list.
    if crate::util::opencl() {
        for alg in ["phast", "worklist"] {
            let gpu = run(
                &osm_config(&file, ""),
                &[
                    "units.cpu_workers=0",
                    "units.device_type=all",
                    &format!("apsp.gpu_algorithm={alg}"),
                ],
            );
            assert_eq!(distances(&gpu).0, d, "the GPU half's {alg}");
        }
    }
    // A source at C runs from its departure copy and is named C; the copies run their own.
    let labels: Vec<u64> = out.summary().iter().map(|r| r[0] as u64).collect();
    assert_eq!(&labels[..5], &[0, 1, 2, 3, 4]);
    // Each turn copy stands for C (vertices.csv's `of`).
    for v in &all_vertices(&out)[5..] {
        assert_eq!((v.0, v.3.as_str(), v.4), (1, "turn", 0), "{v:?}");
    }
    // Paths through the junction name road vertices only: W -> N turns around at the end of
    // E or S (the copies of C shown as C), and the GeoJSON places every vertex.
    let routed = run(
        &osm_config(&file, ""),
        &[
            "units.opencl=none",
            "run.sources=[0, 1, 2, 3, 4]",
            "apsp.targets=[0, 1, 2, 3, 4]",
            "apsp.paths=true",
        ],
    );
    let paths = std::fs::read_to_string(routed.dir.join("paths.csv")).unwrap();
    let w_to_n = paths
        .lines()
        .find(|l| l.starts_with("1,3,"))
        .unwrap_or_else(|| panic!("{paths}"));
    assert!(
        w_to_n.ends_with(",1 0 2 0 3") || w_to_n.ends_with(",1 0 4 0 3"),
        "{w_to_n}"
    );
    assert!(
        w_to_n.starts_with(&format!("1,3,{},4,", turned[1][3])),
        "{w_to_n}"
    );
    let geojson = std::fs::read_to_string(routed.dir.join("paths.geojson")).unwrap();
    assert_eq!(geojson.matches("\"LineString\"").count(), 25, "{geojson}");
    // Switched off (and for pedestrians), the junction is free.
    let out = run(
        &osm_config(&file, "[input.osm]\nturn_restrictions = false\n"),
        &["units.opencl=none"],
    );
    let (d, shape) = distances(&out);
    assert_eq!(shape, vec![5, 5]);
    assert_eq!(block(&d, 5, 5), plain);
    assert_eq!(out.report["input"]["places"]["osm"]["relations_unused"], 8);
    let out = run(
        &osm_config(&file, "[input.osm]\nprofile = \"foot\"\n"),
        &["units.opencl=none"],
    );
    assert_eq!(distances(&out).1, vec![5, 5]);
    let e = try_run(
        &osm_config(
            &file,
            "[input.osm]\nprofile = \"foot\"\nturn_restrictions = true\n",
        ),
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("input.osm.turn_restrictions = true applies to profile = \"car\""),
        "{e}"
    );
}

#[test]
fn a_clipped_way_keeps_its_present_parts() {
    let nodes = [
        (1, 25.000, 60.000),
        (2, 25.001, 60.000),
        (3, 25.002, 60.000),
        (5, 25.004, 60.000),
        (6, 25.005, 60.000),
        (7, 25.006, 60.000),
    ];
    let hw = ("highway", b"residential".as_slice());
    // Way 40 leaves the extract twice (97, 98, 99 are missing): parts 1-2 and 3-5 remain.
    // Way 41 keeps no two consecutive nodes: skipped.
    let ways = [
        W(40, vec![99, 1, 2, 98, 3, 5, 97], vec![hw]),
        W(41, vec![6, 96, 7], vec![hw]),
        W(42, vec![5, 6], vec![hw]),
    ];
    let dir = tmpdir("osm-clipped");
    let file = dir.join("c.osm.pbf");
    std::fs::write(&file, pbf_with(&nodes, &ways, &[], &[])).unwrap();
    let out = run(&osm_config(&file, ""), &["units.opencl=none"]);
    let ids: Vec<i64> = vertices(&out).iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![1, 2, 3, 5, 6]);
    let osm = &out.report["input"]["places"]["osm"];
    assert_eq!(osm["ways_clipped"], 1, "{osm}");
    assert_eq!(osm["ways_missing_node"], 1, "{osm}");
    assert_eq!(osm["ways_used"], 2, "{osm}");
    let place = |id: i64| {
        let n = nodes.iter().find(|n| n.0 == id).unwrap();
        [n.1, n.2]
    };
    let dm = |a, b| (10.0 * gc(place(a), place(b))).round() as u64;
    let inf = u64::MAX;
    let (w12, w35, w56) = (dm(1, 2), dm(3, 5), dm(5, 6));
    let (d, _) = distances(&out);
    assert_eq!(
        block(&d, 5, 5),
        vec![
            vec![0, w12, inf, inf, inf],
            vec![w12, 0, inf, inf, inf],
            vec![inf, inf, 0, w35, w35 + w56],
            vec![inf, inf, w35, 0, w56],
            vec![inf, inf, w35 + w56, w56, 0],
        ]
    );
}

/// The foot of `p` on the segment `a`-`b`, by hand: a plane tangent at `a` (east and north
/// metres), clamped to the segment.
fn foot(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    let r = 6_371_008.8f64;
    let k = a[1].to_radians().cos();
    let xy = |q: [f64; 2]| {
        [
            (q[0] - a[0]).to_radians() * k * r,
            (q[1] - a[1]).to_radians() * r,
        ]
    };
    let (pb, pp) = (xy(b), xy(p));
    let t = ((pp[0] * pb[0] + pp[1] * pb[1]) / (pb[0] * pb[0] + pb[1] * pb[1])).clamp(0.0, 1.0);
    [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])]
}

#[test]
fn a_point_snaps_onto_the_nearest_edge_and_distances_start_there() {
    let nodes = [
        (1, 25.000, 60.000),
        (8, 25.001, 60.0002), // inside way 50: not a vertex
        (2, 25.002, 60.000),
        (3, 25.000, 60.010),
        (4, 25.002, 60.010),
    ];
    let place = |id: i64| {
        let n = nodes.iter().find(|n| n.0 == id).unwrap();
        [n.1, n.2]
    };
    let hw = ("highway", b"residential".as_slice());
    let ways = [
        W(50, vec![1, 8, 2], vec![hw]),
        W(51, vec![3, 4], vec![hw, ("oneway", b"yes")]),
    ];
    let dir = tmpdir("osm-snap-edge");
    let file = dir.join("s.osm.pbf");
    std::fs::write(&file, pbf_with(&nodes, &ways, &[], &[])).unwrap();
    // p1 lies beside the segment 8-2 of the two-way way 50; p2 beside the oneway way 51.
    let (p1, p2) = ([25.0014, 60.00025], [25.0007, 60.0101]);
    let (f1, f2) = (foot(p1, place(8), place(2)), foot(p2, place(3), place(4)));
    // The split rule: c = round(W * s / L), pieces c and W - c.
    let l1 = gc(place(1), place(8)) + gc(place(8), place(2));
    let w1 = (10.0 * l1).round() as u64;
    let s1 = gc(place(1), place(8)) + gc(place(8), f1);
    let l2 = gc(place(3), place(4));
    let w2 = (10.0 * l2).round() as u64;
    let s2 = gc(place(3), f2);
    let (x1, x2) = (w1 as f64 * s1 / l1, w2 as f64 * s2 / l2);
    for x in [x1, x2] {
        assert!(
            (x - x.round()).abs() < 0.4,
            "the case stays clear of a rounding tie: {x}"
        );
    }
    let (c1, c2) = (x1.round() as u64, x2.round() as u64);
    let inf = u64::MAX;
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = {}\n[input]\npath = {:?}\n[output]\ndistances = true\n",
        inline(&[p1, p2]),
        file.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none"]);
    let all = all_vertices(&out);
    assert_eq!(all.len(), 6, "4 road vertices and 2 phantoms: {all:?}");
    for (v, f) in [(&all[4], f1), (&all[5], f2)] {
        assert_eq!((v.0, v.3.as_str(), v.4), (-1, "phantom", -1));
        assert!(
            gc([v.1, v.2], f) < 0.02,
            "a phantom at its point's foot: {v:?} {f:?}"
        );
    }
    let (d, shape) = distances(&out);
    assert_eq!(shape, vec![2, 6]);
    assert_eq!(
        d,
        vec![
            c1,
            w1 - c1,
            inf,
            inf,
            0,
            inf,
            inf,
            inf,
            inf,
            w2 - c2,
            inf,
            0
        ],
        "from the projected points: both ways on way 50, forward only on the oneway 51"
    );
    if crate::util::opencl() {
        let gpu = run(&cfg, &["units.cpu_workers=0", "units.device_type=all"]);
        assert_eq!(distances(&gpu).0, d, "the GPU half from phantom vertices");
    }
    let snaps = snapped(&out);
    for (snap, (p, f, v)) in snaps.iter().zip([(p1, f1, 4), (p2, f2, 5)]) {
        assert_eq!(snap.3, v);
        assert!((snap.4 - gc(p, f)).abs() < 0.02, "{snap:?}: {}", gc(p, f));
    }
    // To the points as targets, from the ways' first nodes.
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = [0, 2]\n[input]\npath = {:?}\n[apsp]\ntargets = {}\n\
         [output]\ndistances = true\n",
        file.display().to_string(),
        inline(&[p1, p2]),
    );
    let (d, _) = distances(&run(&cfg, &["units.opencl=none"]));
    assert_eq!(d, vec![c1, inf, inf, c2]);
    // snap = "vertex": the nearest vertex (node 2), as before.
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = {}\n[input]\npath = {:?}\n[input.osm]\n\
         snap = \"vertex\"\n[output]\ndistances = true\n",
        inline(&[p1]),
        file.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none"]);
    let s = snapped(&out);
    assert_eq!(s[0].3, 1);
    assert!((s[0].4 - gc(p1, place(2))).abs() < 0.01);
    assert_eq!(all_vertices(&out).len(), 4);
}

/// `edges.csv` rows: `(tail, head, weight, metres, seconds, way_id, geometry)`.
type EdgeRow = (u64, u64, u64, f64, f64, i64, Vec<[f64; 2]>);

fn edges(out: &Out) -> Vec<EdgeRow> {
    let mut r = csv::Reader::from_path(out.dir.join("edges.csv")).unwrap();
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        ["tail", "head", "weight", "metres", "seconds", "way_id", "geometry"]
    );
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let wkt = rec[6]
                .strip_prefix("LINESTRING (")
                .and_then(|x| x.strip_suffix(')'))
                .unwrap_or_else(|| panic!("WKT LINESTRING: {}", &rec[6]));
            let line = wkt
                .split(", ")
                .map(|xy| {
                    let (x, y) = xy.split_once(' ').unwrap();
                    [x.parse().unwrap(), y.parse().unwrap()]
                })
                .collect();
            (
                rec[0].parse().unwrap(),
                rec[1].parse().unwrap(),
                rec[2].parse().unwrap(),
                rec[3].parse().unwrap(),
                rec[4].parse().unwrap(),
                rec[5].parse().unwrap(),
                line,
            )
        })
        .collect()
}

/// Checks of an exported network against the graph's arcs (`arc_sum`, in decimetres) and its
/// vertices: weights sum to the arcs'; each row's metres follow its geometry and match its
/// weight; the geometry runs from the tail's place to the head's.
fn check_export(out: &Out, arc_sum: u64) {
    let rows = edges(out);
    let all = all_vertices(out);
    assert_eq!(
        rows.iter().map(|r| r.2).sum::<u64>(),
        arc_sum,
        "weights sum to the graph's"
    );
    for r in &rows {
        let along: f64 = r.6.windows(2).map(|w| gc(w[0], w[1])).sum();
        // 7 decimals of a degree: a centimetre per point.
        assert!(
            (along - r.3).abs() < 0.02 * r.6.len() as f64,
            "{r:?}: geometry {along} m"
        );
        // A whole edge rounds its length once; the pieces of an edge split at a phantom
        // vertex keep their sum, each within one unit of its own length.
        assert!(r.2 == 1 || (r.3 * 10.0 - r.2 as f64).abs() <= 1.0, "{r:?}");
        for (v, p) in [(r.0, r.6[0]), (r.1, *r.6.last().unwrap())] {
            let (lon, lat) = (all[v as usize].1, all[v as usize].2);
            assert!(
                gc([lon, lat], p) < 0.02,
                "{r:?}: vertex {v} at {lon}, {lat}"
            );
        }
    }
}

#[test]
fn the_exported_network_sums_to_the_graph_arcs() {
    let dir = tmpdir("osm-export");
    let file = dir.join("m.osm.pbf");
    std::fs::write(&file, crafted()).unwrap();
    let opts = tuccompi_plugins::graph::osm::OsmOptions::default();
    let (list, _, _) = tuccompi_plugins::graph::osm::read_osm(&file, opts).unwrap();
    let arc_sum: u64 = list.arcs.iter().map(|a| a.2 as u64).sum();
    let out = run(
        &osm_config(&file, "[input.osm]\nexport = true\n"),
        &["units.opencl=none"],
    );
    assert_eq!(out.report["input"]["places"]["edges_csv"], "edges.csv");
    let rows = edges(&out);
    // Way 10 both ways (1-2-3, through node 2), way 11 one way.
    assert_eq!(
        rows.iter()
            .map(|r| (r.0, r.1, r.5, r.6.len()))
            .collect::<Vec<_>>(),
        vec![(0, 1, 10, 3), (1, 0, 10, 3), (1, 2, 11, 2)]
    );
    // Residential 30 km/h, primary 70 km/h.
    for r in &rows {
        let kmh = if r.5 == 10 { 30.0 } else { 70.0 };
        assert!((r.4 - r.3 / (kmh / 3.6)).abs() < 0.002, "{r:?}");
    }
    check_export(&out, arc_sum);
    // Split by a phantom, the pieces still sum to the arcs.
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = [[25.0015, 60.0004]]\n[input]\npath = {:?}\n\
         [input.osm]\nexport = true\n",
        file.display().to_string()
    );
    let out = run(&cfg, &["units.opencl=none"]);
    assert_eq!(edges(&out).len(), 5);
    check_export(&out, arc_sum);
}

fn helsinki_run(path: &Path, sources: &str, osm: &str, extra: &str) -> Out {
    let cfg = format!(
        "[run]\nplugin = \"apsp\"\nsources = {sources}\n[input]\npath = {:?}\n\
         [input.osm]\n{osm}\n{extra}\n[output]\ndistances = true\n",
        path.display().to_string()
    );
    run(&cfg, &["units.opencl=none"])
}

#[test]
fn helsinki_export_edge_snapping_and_turn_restrictions() {
    let Some(h) = data("helsinki.osm.pbf") else {
        return;
    };
    // The export sums to the road graph's arcs, with and without the turn expansion.
    let opts = tuccompi_plugins::graph::osm::OsmOptions {
        turn_restrictions: Some(false),
        ..Default::default()
    };
    let (list, _, stats) = tuccompi_plugins::graph::osm::read_osm(&h, opts).unwrap();
    let arc_sum: u64 = list.arcs.iter().map(|a| a.2 as u64).sum();
    let roads = list.n;
    assert!(
        stats.ways_clipped > 0,
        "helsinki's border cuts ways: {stats:?}"
    );
    let plain = helsinki_run(
        &h,
        "\"all\"",
        "export = true\nturn_restrictions = false",
        "",
    );
    check_export(&plain, arc_sum);
    let turned = helsinki_run(&h, "\"all\"", "export = true", "");
    check_export(&turned, arc_sum);
    let osm = &turned.report["input"]["places"]["osm"];
    assert!(osm["restrictions_applied"].as_u64().unwrap() > 10, "{osm}");
    let n = turned.report["input"]["n"].as_u64().unwrap() as usize;
    eprintln!(
        "helsinki car hierarchy: turn restrictions off: {} vertices, {} arcs, {:.3} s; on: {} \
         vertices, {} arcs, {:.3} s; {osm}",
        plain.report["input"]["n"],
        plain.report["input"]["m"],
        plain.report["input"]["preprocess_seconds"]
            .as_f64()
            .unwrap_or(f64::NAN),
        n,
        turned.report["input"]["m"],
        turned.report["input"]["preprocess_seconds"]
            .as_f64()
            .unwrap_or(f64::NAN),
    );
    // Restrictions only take paths away: no road distance shrinks, some grow.
    let (dp, _) = distances(&plain);
    let (dt, _) = distances(&turned);
    let (mut longer, mut lost) = (0, 0);
    for i in 0..roads {
        for j in 0..roads {
            let (a, b) = (dp[i * roads + j], dt[i * n + j]);
            assert!(b >= a, "{i} -> {j}: {b} with restrictions, {a} without");
            longer += (b > a && b != u64::MAX) as usize;
            lost += (b == u64::MAX && a != u64::MAX) as usize;
        }
    }
    assert!(longer > 0, "the restrictions change some distances");
    // The expanded graph's road distances against an edge-based Dijkstra here (a state per
    // arc, each turn checked against the restrictions read), from a sample of sources.
    let net = tuccompi_plugins::graph::osm::read_network(&h, Default::default()).unwrap();
    for s in (0..roads).step_by(37) {
        let want = turn_dijkstra(&net, s);
        for (t, &w) in want.iter().enumerate() {
            assert_eq!(dt[s * n + t], w, "{s} -> {t} with turn restrictions");
        }
    }
    eprintln!(
        "helsinki: {longer} of {} road pairs longer with turn restrictions, {lost} cut",
        roads * roads
    );

    // Points snapped onto edges: each at most as far as its nearest vertex, and the OD matrix
    // is that of the exported network (a Dijkstra here over edges.csv, phantoms included).
    let (src, dst) = (helsinki_points(0.0), helsinki_points(0.0012));
    let out = helsinki_run(
        &h,
        &inline(&src),
        "export = true\nturn_restrictions = false",
        &format!("[apsp]\ntargets = {}\n", inline(&dst)),
    );
    let all = all_vertices(&out);
    let v = vertices(&out);
    let snaps = snapped(&out);
    assert_eq!(snaps.len(), 32);
    for s in &snaps {
        let nearest = v
            .iter()
            .map(|&(_, x, y)| gc(s.2, [x, y]))
            .fold(f64::INFINITY, f64::min);
        assert!(
            s.4 <= nearest + 0.01,
            "{s:?}: the nearest vertex is {nearest} m away"
        );
    }
    let phantoms = all.iter().filter(|x| x.3 == "phantom").count();
    assert!(
        phantoms >= 16,
        "most points land inside an edge: {phantoms}"
    );
    let arcs: Vec<(u32, u32, i64)> = edges(&out)
        .iter()
        .map(|r| (r.0 as u32, r.1 as u32, r.2 as i64))
        .collect();
    let ix = petgraph::graph::NodeIndex::<u32>::new;
    let mut g = petgraph::graph::DiGraph::<(), i64>::new();
    for _ in 0..all.len() {
        g.add_node(());
    }
    for &(u, v, w) in &arcs {
        g.add_edge(ix(u as usize), ix(v as usize), w);
    }
    let (d, shape) = distances(&out);
    assert_eq!(shape, vec![16, 16]);
    let mut finite = 0;
    for i in 0..16 {
        let tree = petgraph::algo::dijkstra(&g, ix(snaps[i].3 as usize), None, |e| *e.weight());
        for j in 0..16 {
            let want = tree
                .get(&ix(snaps[16 + j].3 as usize))
                .map_or(u64::MAX, |&x| x as u64);
            assert_eq!(d[i * 16 + j], want, "source {i} -> target {j}");
            finite += (want != u64::MAX) as usize;
        }
    }
    assert!(finite >= 200, "only {finite} of 256 pairs connected");
}

/// Road distances from `s` by Dijkstra over arcs (a state is the arc last taken), a turn from
/// arc `e` into arc `f` at vertex `b` allowed unless a restriction at `b` that binds (an arc of
/// its from way into `b`, one of its to way out of `b`) forbids it: `only_*` from `e`'s way
/// allows only its to ways, `no_*` forbids its to way (its U-turn alone when from = to).
fn turn_dijkstra(net: &tuccompi_plugins::graph::osm::Network, s: usize) -> Vec<u64> {
    use std::cmp::Reverse;
    let mut arcs: Vec<(usize, usize, u64, i64)> = Vec::new();
    for e in &net.edges {
        if e.forward {
            arcs.push((e.tail as usize, e.head as usize, e.weight as u64, e.way));
        }
        if e.backward {
            arcs.push((e.head as usize, e.tail as usize, e.weight as u64, e.way));
        }
    }
    let n = net.coords.points.len();
    let osm = net.coords.osm_ids.as_ref().unwrap();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, a) in arcs.iter().enumerate() {
        out[a.0].push(i);
    }
    let binds = |r: &tuccompi_plugins::graph::osm::Restriction, b: usize| {
        arcs.iter().any(|a| a.1 == b && a.3 == r.from) && out[b].iter().any(|&f| arcs[f].3 == r.to)
    };
    let rules: Vec<Vec<_>> = (0..n)
        .map(|b| {
            net.restrictions
                .iter()
                .filter(|r| r.via == osm[b] && binds(r, b))
                .copied()
                .collect()
        })
        .collect();
    let allowed = |e: usize, f: usize| {
        let (tail, b, _, way) = arcs[e];
        let (_, head, _, to) = arcs[f];
        let rs = &rules[b];
        let onlys: Vec<i64> = rs
            .iter()
            .filter(|r| r.only && r.from == way)
            .map(|r| r.to)
            .collect();
        (onlys.is_empty() || onlys.contains(&to))
            && !rs
                .iter()
                .any(|r| !r.only && r.from == way && r.to == to && (r.from != r.to || head == tail))
    };
    let mut best = vec![u64::MAX; arcs.len()];
    let mut heap = std::collections::BinaryHeap::new();
    for &f in &out[s] {
        best[f] = arcs[f].2;
        heap.push(Reverse((arcs[f].2, f)));
    }
    while let Some(Reverse((d, e))) = heap.pop() {
        if d > best[e] {
            continue;
        }
        for &f in &out[arcs[e].1] {
            let nd = d + arcs[f].2;
            if allowed(e, f) && nd < best[f] {
                best[f] = nd;
                heap.push(Reverse((nd, f)));
            }
        }
    }
    let mut dist = vec![u64::MAX; n];
    dist[s] = 0;
    for (i, a) in arcs.iter().enumerate() {
        dist[a.1] = dist[a.1].min(best[i]);
    }
    dist
}
