//! Isochrone polygons: the reachable part of the road network within a limit, buffered by a
//! width, as (Multi)Polygons with holes (`[apsp.reach] isochrone_polygons = true`,
//! `isochrones.geojson`; `tuccompi.Graph.isochrones` in Python).
//!
//! **The construction**, for one tree (distances `d` from a source) and one limit `L`:
//!
//! 1. *The reachable network* `S`: every vertex with `d(v) <= L` (a point), and every arc
//!    `u -> v` of weight `w` whose tail is within the limit: whole when `d(u) + w <= L`, else
//!    its first `(L - d(u)) / w` along its line. An arc's line is its edge's geometry (the
//!    way's nodes, OpenStreetMap input; the same edge `paths.geojson` draws), else the straight
//!    segment between its vertices' places; the fraction is measured along the line's length
//!    in the plane below. Vertices and arcs without places are left out.
//! 2. *The plane*: for longitude/latitude places, an equirectangular projection around the
//!    source's place (`x = R cos(lat0) (lon - lon0)`, `y = R (lat - lat0)`, radians, `R` =
//!    6,371,008.8 m), so the width and the cells are metres (within 0.5% over 30 km at
//!    mid-latitudes); a `.co` file's places are a plane already, and the width is in its
//!    units.
//! 3. *The grid*: square cells of side `c = width / 2` over `S`'s bounding box grown by the
//!    width and a cell, their corners at multiples of `c` from the source (so one source's
//!    polygons at several limits share their cells, and a larger limit's holds a smaller's but
//!    for step 4's filled corners). When that grid would exceed [`MAX_CELLS`] cells, `c` grows by 25% steps
//!    until it fits (the feature's `cell` says the side used; the report counts them).
//! 4. *The buffer*: a cell is inside when its centre lies within `r = max(width, c / sqrt 2)` of
//!    `S` (each segment visits only the rows and columns it can reach). Where two inside cells
//!    touch only at a corner, one of the two outside cells there is filled, until no such
//!    corner is left, so that every ring is simple and no two rings share a point.
//! 5. *The rings*: the cell sides between inside and outside cells, chained with the inside
//!    on the left, keeping only corners: outer rings counter-clockwise and holes clockwise, as
//!    RFC 7946 asks. Each hole belongs to the smallest outer ring around it; each outer ring
//!    with its holes is one polygon. Rings map back to the input's coordinates.
//!
//! **What it guarantees**: every point of `S` (every reached vertex, every reached piece of
//! road) is inside a polygon; every point of a polygon lies within `r + c / sqrt 2` of `S`,
//! or `r + c (1 + 1/sqrt 2)` in a corner cell filled by step 4. With the default cells, a
//! polygon is the buffer of `S` by the width, within 0.7 width.
//!
//! Cost per polygon: `O(A + B log B)` beside the tree, for `A` the cells near reached
//! segments (about `(length / c + 4) x 4` per segment) and `B` the ring corners; the grid holds
//! two bytes per cell (at most [`MAX_CELLS`]).

use crate::common::geo::Geo;
use crate::graph::Csr;
use std::collections::HashMap;
use std::fmt::Write as _;
use tuccompi::{Error, Result};

/// The width when `isochrone_width` is not set: metres for longitude/latitude, the `.co`
/// file's units otherwise.
pub const DEFAULT_WIDTH: f64 = 50.0;

/// Most cells one polygon's grid holds (2,048 x 2,048: 51 km square at the default 25 m
/// cells); a larger area is drawn with larger cells.
pub const MAX_CELLS: usize = 1 << 22;

/// The sphere of the great-circle distances (as the OpenStreetMap reader's).
const EARTH_RADIUS_M: f64 = crate::graph::osm::EARTH_RADIUS_M;

/// A point `[x, y]`: longitude and latitude, a `.co` file's plane, or the local plane.
pub type Point = [f64; 2];

/// One ring, closed (its last point is its first).
pub type Ring = Vec<Point>;

/// Polygons, each an outer ring and its holes.
pub type Polygons = Vec<Vec<Ring>>;

/// Where the polygons are drawn: the input's places mapped to a local plane in which the width
/// and the cells are lengths (`(p - origin) * scale`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plane {
    origin: Point,
    scale: Point,
}

impl Plane {
    /// Longitude/latitude degrees around `origin`: equirectangular, metres.
    pub fn lon_lat(origin: Point) -> Plane {
        let k = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;
        // Near a pole the longitude scale vanishes; keep the map invertible.
        let c = origin[1].to_radians().cos().max(1e-9);
        Plane {
            origin,
            scale: [k * c, k],
        }
    }

    /// Places that are a plane already (a `.co` file): the identity.
    pub fn flat() -> Plane {
        Plane {
            origin: [0.0, 0.0],
            scale: [1.0, 1.0],
        }
    }

    /// The plane's point of input point `p`.
    pub fn to(&self, p: Point) -> Point {
        [
            (p[0] - self.origin[0]) * self.scale[0],
            (p[1] - self.origin[1]) * self.scale[1],
        ]
    }

    /// The input point of the plane's point `q`.
    pub fn back(&self, q: Point) -> Point {
        [
            q[0] / self.scale[0] + self.origin[0],
            q[1] / self.scale[1] + self.origin[1],
        ]
    }
}

/// The shape drawn for each directed arc `(u, v)` of road vertices: an index into the
/// network's edges and whether it runs from its tail (the lightest such edge, as the graph
/// keeps the lightest of parallel arcs). The rule `paths.geojson` draws its routes by.
#[derive(Debug, Default)]
pub struct ArcShapes(HashMap<(u32, u32), (usize, bool)>);

impl ArcShapes {
    /// The shapes of an input's network (none without one: straight segments).
    pub fn of(geo: &Geo) -> ArcShapes {
        let mut best: HashMap<(u32, u32), (usize, bool, i64)> = HashMap::new();
        for (i, e) in geo.edges.iter().flatten().enumerate() {
            let mut offer = |key: (u32, u32), forward: bool| {
                if best.get(&key).is_none_or(|&(_, _, w)| e.weight < w) {
                    best.insert(key, (i, forward, e.weight));
                }
            };
            if e.forward {
                offer((e.tail, e.head), true);
            }
            if e.backward {
                offer((e.head, e.tail), false);
            }
        }
        ArcShapes(best.into_iter().map(|(k, (i, f, _))| (k, (i, f))).collect())
    }

    /// The line of arc `u -> v` (graph vertices) into `line` (cleared first), in the input's
    /// coordinates: its edge's geometry when the network has one, else the straight segment
    /// between the vertices' places. `false` when a vertex has no place.
    pub fn line(&self, geo: &Geo, u: u32, v: u32, line: &mut Vec<Point>) -> bool {
        line.clear();
        let (Some(a), Some(b)) = (geo.place(u), geo.place(v)) else {
            return false;
        };
        line.push(a);
        let key = (geo.road_vertex(u), geo.road_vertex(v));
        if let (Some(&(e, forward)), Some(edges)) = (self.0.get(&key), &geo.edges) {
            let g = &edges[e].geometry;
            if g.len() > 2 {
                let inner = &g[1..g.len() - 1];
                if forward {
                    line.extend(inner.iter().copied());
                } else {
                    line.extend(inner.iter().rev().copied());
                }
            }
        }
        line.push(b);
        true
    }

    /// The line of a path (graph vertices, in order) into `out` (cleared first): its arcs'
    /// lines joined, a single vertex as its place twice. `false` when a vertex has no place.
    pub fn path_line(&self, geo: &Geo, path: &[u32], out: &mut Vec<Point>) -> bool {
        out.clear();
        let mut line = Vec::new();
        match path {
            [] => return false,
            [v] => match geo.place(*v) {
                Some(p) => out.extend([p, p]),
                None => return false,
            },
            _ => {
                for pair in path.windows(2) {
                    if !self.line(geo, pair[0], pair[1], &mut line) {
                        return false;
                    }
                    let skip = usize::from(!out.is_empty());
                    out.extend(line.iter().skip(skip).copied());
                }
            }
        }
        true
    }
}

/// The reachable part of the network within `limit` of tree `dist` (construction, step 1), as
/// segments of `plane` (a reached vertex is a segment from its place to itself).
pub fn reached(
    g: &Csr,
    geo: &Geo,
    shapes: &ArcShapes,
    plane: &Plane,
    dist: &[u64],
    limit: u64,
) -> Vec<[Point; 2]> {
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut flat: Vec<Point> = Vec::new();
    for (u, &du) in dist.iter().enumerate().take(g.n) {
        if du > limit {
            continue;
        }
        if let Some(p) = geo.place(u as u32) {
            let q = plane.to(p);
            out.push([q, q]);
        }
        let (lo, hi) = (g.offsets[u] as usize, g.offsets[u + 1] as usize);
        for k in lo..hi {
            let (v, w) = (g.targets[k], g.weights[k] as u64);
            if !shapes.line(geo, u as u32, v, &mut line) {
                continue;
            }
            flat.clear();
            flat.extend(line.iter().map(|&p| plane.to(p)));
            if w == 0 || du + w <= limit {
                out.extend(flat.windows(2).map(|s| [s[0], s[1]]));
            } else {
                cut(&flat, (limit - du) as f64 / w as f64, &mut out);
            }
        }
    }
    out
}

/// The first `fraction` (0..1) of polyline `line`'s length, as segments into `out`.
fn cut(line: &[Point], fraction: f64, out: &mut Vec<[Point; 2]>) {
    let len = |s: &[Point]| (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1]);
    let total: f64 = line.windows(2).map(len).sum();
    let mut left = total * fraction;
    for s in line.windows(2) {
        let l = len(s);
        if l >= left {
            let t = if l > 0.0 { left / l } else { 0.0 };
            let end = [
                s[0][0] + t * (s[1][0] - s[0][0]),
                s[0][1] + t * (s[1][1] - s[0][1]),
            ];
            out.push([s[0], end]);
            return;
        }
        out.push([s[0], s[1]]);
        left -= l;
    }
}

/// Polygons drawn from segments (construction, steps 3-5), in the plane they are given in.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    /// Each polygon: its outer ring (counter-clockwise), then its holes (clockwise).
    pub polygons: Polygons,
    /// The side of the grid's cells.
    pub cell: f64,
    /// Whether the cells were made larger than `width / 2` to fit [`MAX_CELLS`].
    pub coarsened: bool,
}

/// The cells of one polygon: inside or not, by row (`j`) from the bottom, then column (`i`).
struct Grid {
    w: usize,
    h: usize,
    x0: f64,
    y0: f64,
    c: f64,
    inside: Vec<bool>,
}

impl Grid {
    fn get(&self, i: isize, j: isize) -> bool {
        i >= 0
            && j >= 0
            && (i as usize) < self.w
            && (j as usize) < self.h
            && self.inside[j as usize * self.w + i as usize]
    }

    fn set(&mut self, i: usize, j: usize) {
        self.inside[j * self.w + i] = true;
    }

    /// Mark the cells whose centre is within `r` of segment `[a, b]`.
    fn mark(&mut self, [a, b]: [Point; 2], r: f64) {
        let c = self.c;
        let row = |y: f64| (y - self.y0) / c - 0.5;
        let (ylo, yhi) = (a[1].min(b[1]) - r, a[1].max(b[1]) + r);
        let j0 = row(ylo).ceil().max(0.0) as usize;
        let j1 = (row(yhi).floor().min(self.h as f64 - 1.0)).max(-1.0) as isize;
        let dy = b[1] - a[1];
        for j in j0 as isize..=j1 {
            let yc = self.y0 + (j as f64 + 0.5) * c;
            // The part of the segment within r of this row's centres, in y.
            let (t0, t1) = if dy.abs() < 1e-12 {
                if (a[1] - yc).abs() > r {
                    continue;
                }
                (0.0, 1.0)
            } else {
                let (ta, tb) = ((yc - r - a[1]) / dy, (yc + r - a[1]) / dy);
                (ta.min(tb).max(0.0), ta.max(tb).min(1.0))
            };
            if t0 > t1 {
                continue;
            }
            let (xa, xb) = (a[0] + t0 * (b[0] - a[0]), a[0] + t1 * (b[0] - a[0]));
            let col = |x: f64| (x - self.x0) / c - 0.5;
            let i0 = col(xa.min(xb) - r).ceil().max(0.0) as usize;
            let i1 = col(xa.max(xb) + r).floor().min(self.w as f64 - 1.0);
            if i1 < 0.0 {
                continue;
            }
            for i in i0..=i1 as usize {
                let xc = self.x0 + (i as f64 + 0.5) * c;
                if distance2([xc, yc], a, b) <= r * r {
                    self.set(i, j as usize);
                }
            }
        }
    }

    /// Fill one outside cell of every 2 x 2 block whose inside cells touch only at a corner,
    /// until there is none (construction, step 4).
    fn fill_corners(&mut self) {
        loop {
            let mut changed = false;
            for j in 0..self.h.saturating_sub(1) {
                for i in 0..self.w.saturating_sub(1) {
                    let (ii, jj) = (i as isize, j as isize);
                    let (p, q) = (self.get(ii, jj), self.get(ii + 1, jj));
                    let (s, t) = (self.get(ii, jj + 1), self.get(ii + 1, jj + 1));
                    if p && t && !q && !s {
                        self.set(i + 1, j);
                        changed = true;
                    } else if q && s && !p && !t {
                        self.set(i, j);
                        changed = true;
                    }
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// The boundary's rings in lattice points (corners only, not closed), the inside on the
    /// left (construction, step 5). Needs [`fill_corners`](Grid::fill_corners) first: then
    /// each lattice point starts at most one boundary side.
    fn rings(&self) -> Vec<Vec<[i64; 2]>> {
        const STEP: [[i64; 2]; 5] = [[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1]];
        let vw = self.w + 1;
        let mut out = vec![0u8; vw * (self.h + 1)];
        let mut put = |i: usize, j: usize, d: u8| {
            debug_assert_eq!(out[j * vw + i], 0, "two sides start at ({i}, {j})");
            out[j * vw + i] = d;
        };
        for j in 0..self.h {
            for i in 0..self.w {
                let (ii, jj) = (i as isize, j as isize);
                if !self.get(ii, jj) {
                    continue;
                }
                if !self.get(ii, jj - 1) {
                    put(i, j, 1);
                }
                if !self.get(ii + 1, jj) {
                    put(i + 1, j, 2);
                }
                if !self.get(ii, jj + 1) {
                    put(i + 1, j + 1, 3);
                }
                if !self.get(ii - 1, jj) {
                    put(i, j + 1, 4);
                }
            }
        }
        let mut rings = Vec::new();
        for start in 0..out.len() {
            if out[start] == 0 {
                continue;
            }
            let mut ring: Vec<[i64; 2]> = Vec::new();
            let mut at = start;
            let first = out[start];
            let mut last = 0u8;
            loop {
                let d = std::mem::take(&mut out[at]);
                debug_assert_ne!(d, 0, "a ring stops");
                let p = [(at % vw) as i64, (at / vw) as i64];
                if d != last {
                    ring.push(p);
                }
                last = d;
                let s = STEP[d as usize];
                at = ((p[1] + s[1]) as usize) * vw + (p[0] + s[0]) as usize;
                if at == start {
                    break;
                }
            }
            // The start is a corner unless the ring arrives in the direction it left.
            if ring.len() > 1 && last == first {
                ring.remove(0);
            }
            rings.push(ring);
        }
        rings
    }
}

/// Squared distance from `p` to segment `[a, b]`.
fn distance2(p: Point, a: Point, b: Point) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    let t = if l2 > 0.0 {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (x, y) = (a[0] + t * dx - p[0], a[1] + t * dy - p[1]);
    x * x + y * y
}

/// Twice the signed area of a lattice ring (positive: counter-clockwise).
fn area2(ring: &[[i64; 2]]) -> i64 {
    let n = ring.len();
    (0..n)
        .map(|k| {
            let (a, b) = (ring[k], ring[(k + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum()
}

/// Whether lattice point `p`, on no side of `ring` (whose sides are axis-parallel), is inside
/// it (crossing number).
fn encloses(ring: &[[i64; 2]], p: [i64; 2]) -> bool {
    let n = ring.len();
    let mut inside = false;
    for k in 0..n {
        let (a, b) = (ring[k], ring[(k + 1) % n]);
        if (a[1] > p[1]) != (b[1] > p[1]) && p[0] < a[0] {
            inside = !inside;
        }
    }
    inside
}

/// Draw the buffer of `segments` (in a plane) by `width` (construction, steps 3-5), on a grid of
/// at most `max_cells` cells. No segment: no polygon.
pub fn draw(segments: &[[Point; 2]], width: f64, max_cells: usize) -> Result<Drawn> {
    if !(width.is_finite() && width > 0.0) {
        return Err(Error::Config(format!(
            "isochrone width {width}: a positive number is expected"
        )));
    }
    let finite = |s: &&[Point; 2]| s.iter().flatten().all(|x| x.is_finite());
    let mut lo = [f64::INFINITY; 2];
    let mut hi = [f64::NEG_INFINITY; 2];
    for s in segments.iter().filter(finite) {
        for p in s {
            for k in 0..2 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
    }
    let mut c = width / 2.0;
    if lo[0] > hi[0] {
        return Ok(Drawn {
            polygons: Vec::new(),
            cell: c,
            coarsened: false,
        });
    }
    let radius = |c: f64| width.max(c * std::f64::consts::FRAC_1_SQRT_2 * (1.0 + 1e-9));
    let (mut w, mut h);
    loop {
        let pad = radius(c) + c;
        // One more cell each way than the box needs: the grid is aligned on the origin.
        w = ((hi[0] - lo[0] + 2.0 * pad) / c).ceil() as usize + 2;
        h = ((hi[1] - lo[1] + 2.0 * pad) / c).ceil() as usize + 2;
        if w.saturating_mul(h) <= max_cells.max(16) {
            break;
        }
        c *= 1.25;
    }
    let r = radius(c);
    let pad = r + c;
    // Cells aligned on the plane's origin (the source): the polygons of one source at several
    // limits are drawn on the same cells, so a larger limit's area holds a smaller's (but for
    // filled corners).
    let (x0, y0) = (
        ((lo[0] - pad) / c).floor() * c,
        ((lo[1] - pad) / c).floor() * c,
    );
    let mut grid = Grid {
        w,
        h,
        x0,
        y0,
        c,
        inside: vec![false; w * h],
    };
    for s in segments.iter().filter(finite) {
        grid.mark(*s, r);
    }
    grid.fill_corners();
    let rings = grid.rings();
    let (outer, holes): (Vec<_>, Vec<_>) = rings.into_iter().partition(|r| area2(r) > 0);
    let bbox = |r: &[[i64; 2]]| {
        r.iter()
            .fold([i64::MAX, i64::MAX, i64::MIN, i64::MIN], |b, p| {
                [
                    b[0].min(p[0]),
                    b[1].min(p[1]),
                    b[2].max(p[0]),
                    b[3].max(p[1]),
                ]
            })
    };
    let boxes: Vec<[i64; 4]> = outer.iter().map(|r| bbox(r)).collect();
    let areas: Vec<i64> = outer.iter().map(|r| area2(r)).collect();
    let mut polygons: Vec<Vec<&[[i64; 2]]>> = outer.iter().map(|r| vec![&r[..]]).collect();
    for hole in &holes {
        let p = hole[0];
        let around = (0..outer.len())
            .filter(|&k| {
                let b = boxes[k];
                b[0] <= p[0] && p[0] <= b[2] && b[1] <= p[1] && p[1] <= b[3]
            })
            .filter(|&k| encloses(&outer[k], p))
            .min_by_key(|&k| areas[k]);
        match around {
            Some(k) => polygons[k].push(hole),
            None => debug_assert!(false, "a hole outside every outer ring"),
        }
    }
    let at = |p: [i64; 2]| [grid.x0 + p[0] as f64 * c, grid.y0 + p[1] as f64 * c];
    let polygons = polygons
        .into_iter()
        .map(|rings| {
            rings
                .into_iter()
                .map(|r| {
                    let mut ring: Ring = r.iter().map(|&p| at(p)).collect();
                    ring.push(ring[0]);
                    ring
                })
                .collect()
        })
        .collect();
    Ok(Drawn {
        polygons,
        cell: c,
        coarsened: c > width / 2.0 * (1.0 + 1e-9),
    })
}

/// One isochrone's polygons in the input's coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Isochrone {
    /// The source, as outputs name it (the input's numbering).
    pub source: u64,
    /// The limit, in the graph's weight units.
    pub limit: u64,
    /// Vertices within the limit.
    pub vertices: u64,
    /// The polygons drawn and their cells, mapped back to the input's coordinates.
    pub drawn: Drawn,
}

/// The plane an isochrone from `source` is drawn in (construction, step 2): around the
/// source's place for longitude/latitude (else the first placed vertex within the limit).
pub fn plane_of(geo: &Geo, source: u32, dist: &[u64], limit: u64) -> Plane {
    if !geo.coords.spherical {
        return Plane::flat();
    }
    let origin = geo.place(source).or_else(|| {
        (0..dist.len())
            .filter(|&v| dist[v] <= limit)
            .find_map(|v| geo.place(v as u32))
    });
    Plane::lon_lat(origin.unwrap_or([0.0, 0.0]))
}

/// What isochrones are drawn on: a graph, its places, its arcs' lines and the buffer width.
#[derive(Debug)]
pub struct Canvas<'a> {
    /// The graph the trees are of.
    pub graph: &'a Csr,
    /// Its vertices' places (and edges, for OpenStreetMap input).
    pub geo: &'a Geo,
    /// Its arcs' lines.
    pub shapes: ArcShapes,
    /// The buffer width, in the plane's units (metres for longitude/latitude).
    pub width: f64,
}

impl<'a> Canvas<'a> {
    /// A canvas over `graph` with places `geo`, drawing at `width`.
    pub fn new(graph: &'a Csr, geo: &'a Geo, width: f64) -> Canvas<'a> {
        Canvas {
            graph,
            geo,
            shapes: ArcShapes::of(geo),
            width,
        }
    }

    /// The isochrones of one tree `dist` from `source` (a graph vertex), one per limit,
    /// labelled `label`: steps 1-5, then back to the input's coordinates.
    pub fn of_tree(
        &self,
        source: u32,
        label: u64,
        dist: &[u64],
        limits: &[u64],
    ) -> Result<Vec<Isochrone>> {
        limits
            .iter()
            .map(|&limit| {
                let plane = plane_of(self.geo, source, dist, limit);
                let segments = reached(self.graph, self.geo, &self.shapes, &plane, dist, limit);
                let mut drawn = draw(&segments, self.width, MAX_CELLS)?;
                for ring in drawn.polygons.iter_mut().flatten() {
                    for p in ring.iter_mut() {
                        *p = plane.back(*p);
                    }
                }
                Ok(Isochrone {
                    source: label,
                    limit,
                    vertices: dist.iter().filter(|&&d| d <= limit).count() as u64,
                    drawn,
                })
            })
            .collect()
    }
}

/// What the input's coordinates are, for the GeoJSON's `coordinates` member and messages.
pub fn coordinate_system(geo: &Geo) -> String {
    if geo.coords.spherical {
        "WGS84 longitude, latitude (degrees)".into()
    } else {
        format!("planar, the units of {}", geo.coords.source)
    }
}

/// Append `iso` as one GeoJSON Feature: a Polygon, a MultiPolygon when there are several, or
/// null geometry when nothing is placed; properties `source`, `limit`, `vertices`, `width`,
/// `cell`. Longitude/latitude with 7 decimals (OpenStreetMap's own precision), a plane's
/// coordinates as they are.
pub fn feature(text: &mut String, iso: &Isochrone, width: f64, spherical: bool) {
    let _ = write!(
        text,
        "{{\"type\":\"Feature\",\"properties\":{{\"source\":{},\"limit\":{},\"vertices\":{},\
         \"width\":{width},\"cell\":{}}},\"geometry\":",
        iso.source, iso.limit, iso.vertices, iso.drawn.cell
    );
    let polygons = &iso.drawn.polygons;
    let point = |text: &mut String, [x, y]: Point| {
        let _ = if spherical {
            write!(text, "[{x:.7},{y:.7}]")
        } else {
            write!(text, "[{x},{y}]")
        };
    };
    let polygon = |text: &mut String, rings: &[Ring]| {
        text.push('[');
        for (k, ring) in rings.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            text.push('[');
            for (i, &p) in ring.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                point(text, p);
            }
            text.push(']');
        }
        text.push(']');
    };
    match polygons.len() {
        0 => text.push_str("null}"),
        1 => {
            text.push_str("{\"type\":\"Polygon\",\"coordinates\":");
            polygon(text, &polygons[0]);
            text.push_str("}}");
        }
        _ => {
            text.push_str("{\"type\":\"MultiPolygon\",\"coordinates\":[");
            for (k, p) in polygons.iter().enumerate() {
                if k > 0 {
                    text.push(',');
                }
                polygon(text, p);
            }
            text.push_str("]}}");
        }
    }
}

/// The opening of a FeatureCollection of isochrones, up to its first feature: the coordinate
/// system and the width as foreign members.
pub fn collection_head(geo: &Geo, width: f64) -> String {
    format!(
        "{{\"type\":\"FeatureCollection\",\"coordinates\":{},\"width\":{width},\"features\":[\n",
        serde_json::Value::from(coordinate_system(geo))
    )
}

/// The refusal of polygons on a graph without places, naming `key`.
pub fn no_places(key: &str, graph: &str) -> Error {
    Error::Config(format!(
        "{key}: isochrone polygons are drawn from the vertices' places, and {graph} has none: \
         read an OpenStreetMap extract (input.path = \"x.osm.pbf\") or give input.coordinates = \
         \"x.co\" beside the .gr file; or leave the polygons out (isochrone_ids = true lists the \
         vertices within each limit)"
    ))
}

/// The isochrones of `sources` (graph vertices; `labels` name them) for each of `limits`, from
/// a Dijkstra per source on the CPU (sources in parallel): what Python's
/// `Graph.isochrones` draws, the command line's construction on a graph in memory.
pub fn of_sources(
    g: &Csr,
    geo: &Geo,
    sources: &[u32],
    labels: &[u64],
    limits: &[u64],
    width: f64,
) -> Result<Vec<Isochrone>> {
    use rayon::prelude::*;
    let canvas = Canvas::new(g, geo, width);
    let per: Vec<Vec<Isochrone>> = (0..sources.len())
        .into_par_iter()
        .map_init(
            || super::dijkstra::Dijkstra::<u64>::new(g.n),
            |dj, t| {
                let dist = dj.run(g, sources[t]);
                canvas.of_tree(sources[t], labels[t], dist, limits)
            },
        )
        .collect::<Result<_>>()?;
    Ok(per.into_iter().flatten().collect())
}

#[cfg(test)]
mod test {
    use super::*;

    /// Whether `p` is inside polygon `rings` (outer, then holes): crossing number, written here
    /// apart from the module's lattice test.
    fn contains(rings: &[Ring], p: Point) -> bool {
        let crosses = |ring: &Ring| {
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
        };
        crosses(&rings[0]) && !rings[1..].iter().any(crosses)
    }

    fn signed_area(ring: &Ring) -> f64 {
        ring.windows(2)
            .map(|s| s[0][0] * s[1][1] - s[1][0] * s[0][1])
            .sum::<f64>()
            / 2.0
    }

    fn near(segments: &[[Point; 2]], p: Point) -> f64 {
        segments
            .iter()
            .map(|s| distance2(p, s[0], s[1]).sqrt())
            .fold(f64::INFINITY, f64::min)
    }

    /// A square ring of roads (a block 400 m across) with a spur: one polygon with one hole.
    fn block() -> Vec<[Point; 2]> {
        let (a, b, c, d) = ([0.0, 0.0], [400.0, 0.0], [400.0, 400.0], [0.0, 400.0]);
        vec![[a, b], [b, c], [c, d], [d, a], [c, [700.0, 650.0]], [a, a]]
    }

    #[test]
    fn a_block_is_one_polygon_with_a_hole_around_every_road_and_no_further() {
        let s = block();
        let width = 50.0;
        let d = draw(&s, width, MAX_CELLS).unwrap();
        assert_eq!(d.cell, 25.0);
        assert!(!d.coarsened);
        assert_eq!(d.polygons.len(), 1, "{:?}", d.polygons);
        let p = &d.polygons[0];
        assert_eq!(p.len(), 2, "an outer ring and the block's hole");
        // Outer counter-clockwise, hole clockwise; every ring closed.
        assert!(signed_area(&p[0]) > 0.0);
        assert!(signed_area(&p[1]) < 0.0);
        for r in p {
            assert_eq!(r.first(), r.last());
        }
        // Every point of every road is inside.
        for seg in &s {
            for k in 0..=40 {
                let t = k as f64 / 40.0;
                let q = [
                    seg[0][0] + t * (seg[1][0] - seg[0][0]),
                    seg[0][1] + t * (seg[1][1] - seg[0][1]),
                ];
                assert!(contains(p, q), "{q:?} of {seg:?}");
            }
        }
        // Sampled every 5 m over a wide box: inside only within the bound of the module doc;
        // within width - half a cell diagonal of a road, always inside.
        let (c, r) = (d.cell, width);
        let far = r + c * (1.0 + std::f64::consts::FRAC_1_SQRT_2);
        let sure = r - c * std::f64::consts::FRAC_1_SQRT_2;
        for i in -40..200 {
            for j in -40..200 {
                let q = [i as f64 * 5.0 + 0.3, j as f64 * 5.0 + 0.7];
                let (inside, dist) = (contains(p, q), near(&s, q));
                assert!(
                    !inside || dist <= far,
                    "{q:?} inside at {dist} m from every road"
                );
                assert!(
                    inside || dist > sure,
                    "{q:?} outside at {dist} m from a road"
                );
            }
        }
        // The hole's middle is outside, the spur's end inside.
        assert!(!contains(p, [200.0, 200.0]));
        assert!(contains(p, [700.0, 650.0]));
    }

    #[test]
    fn apart_roads_are_apart_polygons_and_corners_never_touch() {
        // Two roads 1 km apart; a third crossing diagonally at a corner-prone angle.
        let s = vec![
            [[0.0, 0.0], [100.0, 0.0]],
            [[1000.0, 0.0], [1100.0, 0.0]],
            [[2000.0, 0.0], [2013.0, 13.0]],
        ];
        let d = draw(&s, 10.0, MAX_CELLS).unwrap();
        assert_eq!(d.polygons.len(), 3);
        for p in &d.polygons {
            assert_eq!(p.len(), 1);
            assert!(signed_area(&p[0]) > 0.0);
            // A simple ring: no point twice (but the closing one).
            let mut seen: Vec<(i64, i64)> = p[0][1..]
                .iter()
                .map(|q| ((q[0] * 1e6) as i64, (q[1] * 1e6) as i64))
                .collect();
            seen.sort_unstable();
            let before = seen.len();
            seen.dedup();
            assert_eq!(seen.len(), before, "{:?}", p[0]);
        }
        assert!(draw(&[], 10.0, MAX_CELLS).unwrap().polygons.is_empty());
    }

    #[test]
    fn a_checkerboard_of_corners_is_filled_into_simple_rings() {
        let mut g = Grid {
            w: 6,
            h: 6,
            x0: 0.0,
            y0: 0.0,
            c: 1.0,
            inside: vec![false; 36],
        };
        for (i, j) in [(1, 1), (2, 2), (3, 3), (3, 1), (1, 3)] {
            g.set(i, j);
        }
        g.fill_corners();
        let rings = g.rings();
        assert_eq!(rings.len(), 1, "{rings:?}");
        assert!(area2(&rings[0]) > 0);
        let mut pts = rings[0].clone();
        pts.sort_unstable();
        pts.dedup();
        assert_eq!(pts.len(), rings[0].len());
    }

    #[test]
    fn a_huge_area_is_drawn_with_larger_cells_within_the_bound() {
        // 200 km of road at a 50 m width: 8,000 x 4 cells of 25 m would do, but a diagonal's
        // bounding box is 5,600 x 5,600 cells: coarsened under the bound.
        let s = vec![[[0.0, 0.0], [141_000.0, 141_000.0]]];
        let d = draw(&s, 50.0, MAX_CELLS).unwrap();
        assert!(d.coarsened && d.cell > 25.0, "{}", d.cell);
        let span = 141_000.0 + 2.0 * (50.0f64.max(d.cell) + d.cell);
        assert!(((span / d.cell).ceil() + 1.0).powi(2) <= MAX_CELLS as f64);
        assert_eq!(d.polygons.len(), 1);
        assert!(contains(&d.polygons[0], [70_500.0, 70_500.0]));
        // A tiny bound still draws, at cells larger than the width: the road stays inside.
        let d = draw(&s, 50.0, 64).unwrap();
        assert!(d.cell > 50.0);
        assert!(contains(&d.polygons[0], [1000.0, 1000.0]));
        assert!(draw(&s, 0.0, 64).is_err());
        assert!(draw(&s, f64::NAN, 64).is_err());
    }

    #[test]
    fn a_partly_reached_line_is_cut_along_its_length() {
        let line = [[0.0, 0.0], [30.0, 0.0], [30.0, 40.0]];
        let mut out = Vec::new();
        cut(&line, 0.5, &mut out);
        assert_eq!(
            out,
            vec![[[0.0, 0.0], [30.0, 0.0]], [[30.0, 0.0], [30.0, 5.0]]]
        );
        out.clear();
        cut(&line, 0.0, &mut out);
        assert_eq!(out, vec![[[0.0, 0.0], [0.0, 0.0]]]);
    }

    #[test]
    fn the_plane_is_metres_around_the_origin_and_maps_back() {
        let p = Plane::lon_lat([24.94, 60.17]);
        let q = p.to([24.95, 60.17]);
        // 0.01 degree of longitude at 60.17 N: about 553 m.
        assert!((q[0] - 553.6).abs() < 1.0 && q[1].abs() < 1e-9, "{q:?}");
        let q = p.to([24.94, 60.18]);
        assert!((q[1] - 1111.95).abs() < 0.1, "{q:?}");
        let back = p.back(p.to([24.9, 60.2]));
        assert!((back[0] - 24.9).abs() < 1e-12 && (back[1] - 60.2).abs() < 1e-12);
    }
}
