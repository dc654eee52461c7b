//! Vertex coordinates: an OpenStreetMap input's (longitude, latitude in degrees) or a DIMACS
//! `.co` file's (planar, in the file's units), and snapping points to the nearest vertex
//! through an R*-tree (`rstar`). Snapping onto the nearest edge of an OpenStreetMap network is
//! `osm::network`'s.
//!
//! Geographic coordinates are indexed as 3-D unit vectors: the chord between two of them grows
//! with the great-circle angle, so the nearest vector is the great-circle nearest vertex, with
//! no trouble at the antimeridian or the poles. Planar coordinates are indexed as they are.

use rstar::primitives::GeomWithData;
use rstar::RTree;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use tuccompi::{Error, Result};

/// Coordinates of a graph's vertices, by internal (0-based) id.
#[derive(Debug, Clone)]
pub struct Coords {
    /// Longitude/latitude in degrees (great-circle distances in metres), else planar
    /// coordinates (Euclidean distances in the same units).
    pub spherical: bool,
    /// `(x, y)` = `(lon, lat)` of each vertex; `None` for a vertex the file gave no place.
    pub points: Vec<Option<[f64; 2]>>,
    /// The OpenStreetMap node id of each vertex (OSM input only).
    pub osm_ids: Option<Vec<i64>>,
    /// Where the coordinates came from (for messages).
    pub source: String,
}

/// A point snapped to a vertex.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snap {
    /// The point as given.
    pub point: [f64; 2],
    /// The vertex it snapped to (internal id): the nearest vertex, or the phantom vertex (or
    /// edge end) where it snapped onto an edge.
    pub vertex: u32,
    /// Distance from the point to where it landed (`on`): metres (great-circle) for
    /// geographic coordinates, the file's units for planar ones.
    pub distance: f64,
    /// Where it landed: the vertex's place, or its projection onto the edge.
    pub on: [f64; 2],
}

/// Refuse a point that is not a finite pair, or (`spherical`) not `[lon, lat]` in degrees,
/// naming `key` and its 1-based entry.
pub(crate) fn check_point(point: [f64; 2], key: &str, entry: usize, spherical: bool) -> Result<()> {
    let bad = |what: &str| {
        Err(Error::Config(format!(
            "{key}: point {} ({}, {}) {what}",
            entry + 1,
            point[0],
            point[1]
        )))
    };
    if !point.iter().all(|c| c.is_finite()) {
        return bad("is not a finite coordinate pair");
    }
    if spherical && (!(-180.0..=180.0).contains(&point[0]) || !(-90.0..=90.0).contains(&point[1])) {
        return bad(
            "is not [longitude, latitude] in degrees (longitude -180..180, latitude -90..90); \
             write points as [lon, lat]",
        );
    }
    Ok(())
}

/// `(lon, lat)` in degrees as a 3-D unit vector.
pub(crate) fn unit_vector(p: [f64; 2]) -> [f64; 3] {
    let (lon, lat) = (p[0].to_radians(), p[1].to_radians());
    [lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()]
}

enum Tree {
    Sphere(RTree<GeomWithData<[f64; 3], u32>>),
    Plane(RTree<GeomWithData<[f64; 2], u32>>),
}

/// A nearest-vertex index over a graph's coordinates.
pub struct SnapIndex<'a> {
    coords: &'a Coords,
    tree: Tree,
}

impl std::fmt::Debug for SnapIndex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SnapIndex({} vertices)", self.coords.points.len())
    }
}

impl Coords {
    /// The distance between two points in these coordinates' metric.
    pub fn distance(&self, a: [f64; 2], b: [f64; 2]) -> f64 {
        if self.spherical {
            super::osm::haversine_m(a, b)
        } else {
            (a[0] - b[0]).hypot(a[1] - b[1])
        }
    }

    /// Build the index (bulk-loaded R*-tree: O(n log n)).
    pub fn index(&self) -> SnapIndex<'_> {
        let placed = self
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (i as u32, p)));
        let tree = if self.spherical {
            Tree::Sphere(RTree::bulk_load(
                placed
                    .map(|(i, p)| GeomWithData::new(unit_vector(p), i))
                    .collect(),
            ))
        } else {
            Tree::Plane(RTree::bulk_load(
                placed.map(|(i, p)| GeomWithData::new(p, i)).collect(),
            ))
        };
        SnapIndex { coords: self, tree }
    }
}

impl SnapIndex<'_> {
    /// The vertex nearest to `point` (O(log n) expected). `key` names the list in messages.
    pub fn snap(&self, point: [f64; 2], key: &str, entry: usize) -> Result<Snap> {
        check_point(point, key, entry, self.coords.spherical)?;
        let vertex = match &self.tree {
            Tree::Sphere(t) => t.nearest_neighbor(&unit_vector(point)).map(|g| g.data),
            Tree::Plane(t) => t.nearest_neighbor(&point).map(|g| g.data),
        };
        let vertex = vertex.ok_or_else(|| {
            Error::Input(format!(
                "{key}: {} gives no vertex a place, so points cannot be snapped",
                self.coords.source
            ))
        })?;
        let at = self.coords.points[vertex as usize].expect("indexed vertices have a place");
        Ok(Snap {
            point,
            vertex,
            distance: self.coords.distance(point, at),
            on: at,
        })
    }
}

/// Read a DIMACS coordinate file (`.co`, optionally `.gz`): `p aux sp co N`, then `v ID X Y`
/// for ids 1..=N. The graph must have `n` vertices, and each its `v` line: a vertex without a
/// place could never be snapped to, so a file that leaves one out (cut short, or written for
/// another graph) is refused, naming the first vertex missing.
pub fn read_co(path: &Path, n: usize) -> Result<Coords> {
    let file = tuccompi::input::open(path, "input.coordinates", "a .co file", None)?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let raw: Box<dyn Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let err = |line: usize, msg: String| Error::Parse {
        path: path.to_path_buf(),
        line,
        msg,
    };
    let mut points: Option<Vec<Option<[f64; 2]>>> = None;
    let mut buf = Vec::new();
    let mut reader = BufReader::with_capacity(1 << 20, raw);
    let mut line_no = 0;
    loop {
        buf.clear();
        // A line longer than any honest one is a binary file, not a reason to fill memory.
        let got = (&mut reader)
            .take(64 << 10)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if got == 0 {
            break;
        }
        line_no += 1;
        if !buf.ends_with(b"\n") && got == 64 << 10 {
            return Err(err(
                line_no,
                "line longer than 64 KiB: not a .co file".into(),
            ));
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| err(line_no, "not text: a .co file is ASCII lines".into()))?;
        let text = text.trim_start_matches('\u{feff}').trim_end();
        let mut tok = text.split_ascii_whitespace();
        match tok.next() {
            None | Some("c") => {}
            Some("p") => {
                let rest: Vec<&str> = tok.collect();
                let count = match rest.as_slice() {
                    ["aux", "sp", "co", k] => k.parse::<usize>().ok(),
                    _ => None,
                };
                let Some(count) = count else {
                    return Err(err(
                        line_no,
                        format!("'{text}': expected 'p aux sp co N' (DIMACS coordinates)"),
                    ));
                };
                if points.is_some() {
                    return Err(err(line_no, "a second 'p' line".into()));
                }
                if count != n {
                    return Err(err(
                        line_no,
                        format!(
                            "{count} vertices, but the graph has {n}: the coordinates must \
                             be those of input.path's graph"
                        ),
                    ));
                }
                points = Some(vec![None; n]);
            }
            Some("v") => {
                let Some(points) = points.as_mut() else {
                    return Err(err(
                        line_no,
                        "'v' line before the 'p aux sp co N' line".into(),
                    ));
                };
                let rest: Vec<&str> = tok.collect();
                let parsed = match rest.as_slice() {
                    [id, x, y] => match (id.parse::<usize>(), x.parse::<f64>(), y.parse::<f64>()) {
                        (Ok(id), Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => {
                            Some((id, x, y))
                        }
                        _ => None,
                    },
                    _ => None,
                };
                let Some((id, x, y)) = parsed else {
                    return Err(err(
                        line_no,
                        format!(
                            "'{}': expected 'v ID X Y' with numbers",
                            text.escape_debug()
                        ),
                    ));
                };
                if id == 0 || id > n {
                    return Err(err(
                        line_no,
                        format!("vertex id {id} is out of range; ids are 1..={n}"),
                    ));
                }
                if points[id - 1].replace([x, y]).is_some() {
                    return Err(err(line_no, format!("vertex {id} has a second 'v' line")));
                }
            }
            Some(other) => {
                return Err(err(
                    line_no,
                    format!(
                        "unknown line type '{}': a .co file has c, p and v lines",
                        other.escape_debug()
                    ),
                ))
            }
        }
    }
    let Some(points) = points else {
        return Err(Error::Input(format!(
            "{}: no 'p aux sp co N' line: not a DIMACS coordinate file",
            path.display()
        )));
    };
    if let Some(first) = points.iter().position(Option::is_none) {
        let missing = points.iter().filter(|p| p.is_none()).count();
        return Err(Error::Input(format!(
            "{}: vertex {} has no 'v' line ({missing} of the {n} vertices have none); a .co \
             file places every vertex of input.path's graph: add 'v {} X Y', or check that \
             the file is complete and belongs to this graph",
            path.display(),
            first + 1,
            first + 1
        )));
    }
    Ok(Coords {
        spherical: false,
        points,
        osm_ids: None,
        source: path.display().to_string(),
    })
}

#[cfg(test)]
mod test {
    use super::*;

    /// SplitMix64, so the points are the same everywhere.
    fn rng(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn brute(c: &Coords, p: [f64; 2]) -> f64 {
        c.points
            .iter()
            .flatten()
            .map(|&q| c.distance(p, q))
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn snapping_finds_the_nearest_vertex_on_the_sphere_and_the_plane() {
        let mut s = 7;
        for spherical in [true, false] {
            // Around the antimeridian and near a pole too: lon/lat boxes would get these wrong.
            let points: Vec<Option<[f64; 2]>> = (0..2000)
                .map(|i| {
                    (i % 17 != 0).then(|| {
                        let lon = rng(&mut s) * 360.0 - 180.0;
                        let lat = rng(&mut s) * 170.0 - 85.0;
                        [lon, lat]
                    })
                })
                .collect();
            let c = Coords {
                spherical,
                points,
                osm_ids: None,
                source: "test".into(),
            };
            let idx = c.index();
            for q in 0..300 {
                let p = [rng(&mut s) * 360.0 - 180.0, rng(&mut s) * 178.0 - 89.0];
                let snap = idx.snap(p, "run.sources", q).unwrap();
                assert!(c.points[snap.vertex as usize].is_some(), "unplaced vertex");
                let best = brute(&c, p);
                assert!(
                    (snap.distance - best).abs() <= 1e-6 * best.max(1.0),
                    "spherical={spherical} point {p:?}: snapped at {} but the nearest is {best}",
                    snap.distance
                );
            }
        }
        // Across the antimeridian: 179.9 E is nearer to 179.9 W than to 170 E.
        let c = Coords {
            spherical: true,
            points: vec![Some([170.0, 0.0]), Some([-179.9, 0.0])],
            osm_ids: None,
            source: "t".into(),
        };
        assert_eq!(c.index().snap([179.9, 0.0], "k", 0).unwrap().vertex, 1);
    }

    #[test]
    fn snapping_refuses_bad_points() {
        let c = Coords {
            spherical: true,
            points: vec![Some([24.9, 60.2])],
            osm_ids: None,
            source: "t".into(),
        };
        let idx = c.index();
        let e = idx
            .snap([60.2, 124.9], "apsp.targets", 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("apsp.targets: point 3 (60.2, 124.9)"), "{e}");
        assert!(e.contains("[lon, lat]"), "{e}");
        assert!(idx.snap([f64::NAN, 1.0], "k", 0).is_err());
        let empty = Coords {
            spherical: false,
            points: vec![None],
            osm_ids: None,
            source: "g.co".into(),
        };
        let e = empty
            .index()
            .snap([1.0, 1.0], "k", 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("g.co gives no vertex a place"), "{e}");
    }

    #[test]
    fn co_files_are_read_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let ok = write(
            "g.co",
            "c hi\np aux sp co 3\nv 1 10 20\nv 3 -5 7\nv 2 0 0\n",
        );
        let c = read_co(&ok, 3).unwrap();
        assert_eq!(
            c.points,
            vec![Some([10.0, 20.0]), Some([0.0, 0.0]), Some([-5.0, 7.0])]
        );
        assert!(!c.spherical);
        let cases = [
            (
                "p aux sp co 3\n",
                4,
                "g.co:1: 3 vertices, but the graph has 4",
            ),
            (
                "p aux sp co 2\nv 3 1 1\n",
                2,
                "g.co:2: vertex id 3 is out of range",
            ),
            (
                "p aux sp co 2\nv 1 1 1\nv 1 2 2\n",
                2,
                "g.co:3: vertex 1 has a second",
            ),
            ("p aux sp co 2\nv 1 x 1\n", 2, "g.co:2: 'v 1 x 1': expected"),
            ("v 1 1 1\n", 2, "g.co:1: 'v' line before"),
            (
                "p sp 2 1\n",
                2,
                "g.co:1: 'p sp 2 1': expected 'p aux sp co N'",
            ),
            ("c only\n", 2, "no 'p aux sp co N' line"),
            ("p aux sp co 2\nq\n", 2, "g.co:2: unknown line type 'q'"),
        ];
        for (text, n, want) in cases {
            let p = write("g.co", text);
            let e = read_co(&p, n).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let p = dir.path().join("g.co");
        std::fs::write(&p, [0xff, 0xfe, 0, 1, 2]).unwrap();
        assert!(read_co(&p, 2).unwrap_err().to_string().contains("not text"));
    }

    #[test]
    fn a_co_file_missing_a_vertex_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.co");
        for (text, want) in [
            (
                "p aux sp co 4\nv 1 0 0\nv 4 1 1\nv 3 2 2\n",
                "g.co: vertex 2 has no 'v' line (1 of the 4 vertices have none)",
            ),
            // Cut short after its header.
            (
                "p aux sp co 4\n",
                "g.co: vertex 1 has no 'v' line (4 of the 4 vertices have none)",
            ),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_co(&p, 4).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.contains("add 'v "), "{e}");
        }
    }
}
