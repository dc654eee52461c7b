//! The road network of an OpenStreetMap extract as edges (a way's piece between two vertices,
//! with its geometry and way id), and the graph made from it: points snapped onto edges as
//! phantom vertices, turn restrictions expanded, the network written as `edges.csv`.
//!
//! **Phantom vertices.** A point snaps to the nearest point of the nearest segment of any edge
//! (segments indexed as 3-D chords of the unit sphere in an R*-tree; the chord's projection is
//! within centimetres of the great-circle one at road-segment lengths). The projected point lies
//! `s` metres along an edge of `L` metres and integer weight `W`; it splits the edge at
//! `c = round(W · s / L)` (half away from zero), into pieces of weights `c` and `W − c`, in
//! each direction the way allows. A `c` of 0 or `W` is the edge's end vertex itself (no piece
//! of weight 0); points whose `c` coincide on one edge share one phantom vertex. Phantom
//! vertices are numbered after the road vertices, in the order of their edges and positions.
//!
//! **Turn restrictions.** A via vertex `b` with a restriction that binds becomes an arrival-only
//! vertex: every arc into `b` is led instead into a copy of `b` chosen by the turns allowed after
//! that arc (a departure copy where all are, one copy per distinct restricted set), each copy has
//! the arcs out of `b` it allows and an arc of weight 0 into `b`. So the distance to `b` is the
//! best arrival by any arc, and no path turns where a restriction forbids it. A path from `b`
//! starts at its departure copy ([`Network::departure`]). Copies are numbered after the phantom
//! vertices; `vertices.csv` maps each back to `b`.
//!
//! **No U-turn at a phantom.** A phantom vertex is a point on a road, not a junction: a trip
//! that passes it may not turn back there. Without turn restrictions such a turn never
//! shortens a trip (it comes back to the vertex it left); with them it could (turn onto a
//! road, back at another point's phantom, and take the turn a restriction forbids), and a
//! trip's distance would depend on the other points of the run. So where restrictions bind,
//! every phantom inside a two-way edge is expanded as a via vertex with a rule that forbids
//! the U-turn only (a departure copy and one copy per direction of arrival): each trip's
//! distance is that of the road network with its own two points on it, as OSRM's phantom
//! nodes give, and as the query-time phantoms of `apsp::phantom` give on a graph already
//! built. Such copies are not counted in `turn_vertices`. Cost: one departure copy plus one copy per
//! restricted set of allowed turns at each restricted via vertex, and their arcs.

use super::{haversine_m, OsmStats};
use crate::graph::coords::{check_point, unit_vector};
use crate::graph::{Coords, EdgeList, Origin, Snap};
use rstar::primitives::{GeomWithData, Line};
use rstar::RTree;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use tuccompi::Result;

/// A piece of a routable way between two vertices.
#[derive(Debug, Clone)]
pub struct Edge {
    /// The vertex at the first node of the piece.
    pub tail: u32,
    /// The vertex at its last node.
    pub head: u32,
    /// Whether it may be travelled from `tail` to `head`.
    pub forward: bool,
    /// Whether it may be travelled from `head` to `tail`.
    pub backward: bool,
    /// The integer weight of each direction (decimetres or deciseconds).
    pub weight: i64,
    /// Great-circle length along the geometry, metres.
    pub metres: f64,
    /// The way's speed for the profile, km/h.
    pub kmh: f64,
    /// The OSM way id.
    pub way: i64,
    /// `(lon, lat)` of the nodes from `tail` to `head`.
    pub geometry: Vec<[f64; 2]>,
}

/// One (from way, via node, to way) triple of a turn-restriction relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restriction {
    /// The relation's OSM id.
    pub relation: i64,
    /// The from way's OSM id.
    pub from: i64,
    /// The via node's OSM id.
    pub via: i64,
    /// The to way's OSM id.
    pub to: i64,
    /// `only_*` (the to way is the only turn allowed) rather than `no_*` (it is forbidden).
    pub only: bool,
}

/// A vertex of the graph beyond the road vertices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extra {
    /// A point snapped onto an edge, at its place on the edge.
    Phantom([f64; 2]),
    /// A copy of a restricted via vertex (the road vertex it stands for).
    Turn(u32),
}

/// An extract's road network: its edges, road vertices, turn restrictions, and the vertices
/// added to it (phantoms, turn copies).
#[derive(Debug)]
pub struct Network {
    /// The file, for messages and the graph's name.
    pub name: String,
    /// The edges (split where points snapped onto them).
    pub edges: Vec<Edge>,
    /// The road vertices' places and OSM node ids (ids `0..coords.points.len()`).
    pub coords: Coords,
    /// The turn restrictions read (each relation's triples).
    pub restrictions: Vec<Restriction>,
    /// What the reader kept and skipped.
    pub stats: OsmStats,
    /// The vertices after the road vertices, in id order: phantoms, then turn copies.
    pub extra: Vec<Extra>,
    /// A restricted via vertex's departure copy, where paths from it start.
    pub departure: HashMap<u32, u32>,
    /// The arcs the turn expansion moved, by `(edge, backward)`: where each lies in the graph
    /// (set by [`Network::graph`]; a search from a point on the edge starts there).
    pub turn_arcs: HashMap<(u32, bool), TurnArc>,
}

/// The relation id of the rule that forbids U-turns at a phantom vertex (no OSM relation).
const NO_U_TURN: i64 = i64::MIN;

/// Unit vector back to `(lon, lat)` degrees.
fn lon_lat(v: [f64; 3]) -> [f64; 2] {
    [
        v[1].atan2(v[0]).to_degrees(),
        v[2].atan2(v[0].hypot(v[1])).to_degrees(),
    ]
}

/// Where an edge is split: the phantom vertex, its place and its position.
#[derive(Debug, Clone, Copy)]
struct Split {
    vertex: u32,
    along: f64,
    at: [f64; 2],
    segment: usize,
}

/// A point's landing on an edge ([`land`]): the nearest point of the nearest segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Landing {
    /// The edge (index into the network's edges).
    pub edge: usize,
    /// The segment it lands on (from the edge's node `segment`).
    pub segment: usize,
    /// Metres along the edge from its tail.
    pub along: f64,
    /// Cumulative weight from the tail: `round(W · along / L)` (half away from zero), within
    /// `0..=W`; 0 is the tail itself, `W` the head.
    pub cum: i64,
    /// Where it lands, `(lon, lat)`.
    pub at: [f64; 2],
    /// Metres from the point to `at` (great-circle).
    pub distance: f64,
}

/// The edges' segments as 3-D chords of the unit sphere, tagged `(edge, segment)`.
pub type SegmentTree = RTree<GeomWithData<Line<[f64; 3]>, (u32, u32)>>;

/// The R*-tree of `edges`' segments that [`land`] searches (bulk-loaded in edge and segment
/// order: the same edges give the same tree, and so the same ties). O(S log S) for S
/// segments.
pub fn segment_tree(edges: &[Edge]) -> SegmentTree {
    let segments: Vec<_> = edges
        .iter()
        .enumerate()
        .flat_map(|(e, edge)| {
            edge.geometry.windows(2).enumerate().map(move |(k, w)| {
                GeomWithData::new(
                    Line::new(unit_vector(w[0]), unit_vector(w[1])),
                    (e as u32, k as u32),
                )
            })
        })
        .collect();
    RTree::bulk_load(segments)
}

/// Where point `p` (`[lon, lat]`, checked) lands on `edges` (module docs: the nearest point of
/// the nearest segment, the weight split by its place along the edge); `tree` is
/// [`segment_tree`] of `edges`, which are not empty. O(log S).
pub fn land(edges: &[Edge], tree: &SegmentTree, p: [f64; 2]) -> Landing {
    let u = unit_vector(p);
    let seg = tree
        .nearest_neighbor(&u)
        .expect("a network has at least one edge");
    let (e, k) = (seg.data.0 as usize, seg.data.1 as usize);
    let (a, b) = (seg.geom().from, seg.geom().to);
    let ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let len2 = ab.iter().map(|x| x * x).sum::<f64>();
    let t = if len2 > 0.0 {
        (((u[0] - a[0]) * ab[0] + (u[1] - a[1]) * ab[1] + (u[2] - a[2]) * ab[2]) / len2)
            .clamp(0.0, 1.0)
    } else {
        0.0
    };
    let edge = &edges[e];
    let g = &edge.geometry;
    let at = if t == 0.0 {
        g[k]
    } else if t == 1.0 {
        g[k + 1]
    } else {
        lon_lat([a[0] + t * ab[0], a[1] + t * ab[1], a[2] + t * ab[2]])
    };
    // The same running sum as the edge's length, so that its end is at `metres`.
    let mut along = 0.0;
    for w in g[..=k].windows(2) {
        along += haversine_m(w[0], w[1]);
    }
    along += haversine_m(g[k], at);
    let cum = if edge.metres > 0.0 {
        ((edge.weight as f64 * along / edge.metres).round() as i64).clamp(0, edge.weight)
    } else {
        0
    };
    Landing {
        edge: e,
        segment: k,
        along,
        cum,
        at,
        distance: haversine_m(p, at),
    }
}

/// [`land`] for each of `points`, each checked first (`key` and its 1-based entry name a bad
/// one in the error). O(P log S).
pub fn land_all(
    edges: &[Edge],
    tree: &SegmentTree,
    points: &[[f64; 2]],
    key: &str,
) -> Result<Vec<Landing>> {
    for (i, &p) in points.iter().enumerate() {
        check_point(p, key, i, true)?;
    }
    Ok(points.iter().map(|&p| land(edges, tree, p)).collect())
}

/// Where an arc of the road network lies in the turn-expanded graph (module docs), for an arc
/// into or out of a restricted via vertex.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnArc {
    /// The copy of the head it enters (`None`: the head itself).
    pub head: Option<u32>,
    /// The vertices it leaves from, when its tail is a restricted via vertex: the departure
    /// copy and the copies whose allowed turns include it (empty: the tail itself).
    pub tails: Vec<u32>,
}

impl Network {
    /// A network of `edges` between the vertices of `coords`.
    pub fn new(
        name: String,
        edges: Vec<Edge>,
        coords: Coords,
        restrictions: Vec<Restriction>,
        stats: OsmStats,
    ) -> Self {
        Network {
            name,
            edges,
            coords,
            restrictions,
            stats,
            extra: Vec::new(),
            departure: HashMap::new(),
            turn_arcs: HashMap::new(),
        }
    }

    /// Road vertices.
    pub fn roads(&self) -> usize {
        self.coords.points.len()
    }

    /// Snap each list of points (`(key, points)`, the key naming it in messages) onto its
    /// nearest edge, splitting edges at phantom vertices; the snaps, list by list.
    ///
    /// O((P + S) log S) for P points and S segments. Call before [`Network::graph`].
    pub fn snap(&mut self, lists: &[(&str, &[[f64; 2]])]) -> Result<Vec<Vec<Snap>>> {
        for (key, points) in lists {
            for (i, &p) in points.iter().enumerate() {
                check_point(p, key, i, true)?;
            }
        }
        let tree = segment_tree(&self.edges);
        // (list, entry, landing)
        let landings: Vec<(usize, usize, Landing)> = lists
            .iter()
            .enumerate()
            .flat_map(|(list, (_, points))| {
                let tree = &tree;
                let edges = &self.edges;
                (points.iter().enumerate())
                    .map(move |(entry, &p)| (list, entry, land(edges, tree, p)))
            })
            .collect();
        let mut snaps: Vec<Vec<Snap>> = lists
            .iter()
            .map(|(_, points)| {
                points
                    .iter()
                    .map(|&p| Snap {
                        point: p,
                        vertex: 0,
                        distance: 0.0,
                        on: p,
                    })
                    .collect()
            })
            .collect();
        // Phantoms by edge and position, so their ids do not depend on the points' order.
        let mut splits: BTreeMap<usize, BTreeMap<i64, Split>> = BTreeMap::new();
        for (_, _, l) in &landings {
            let edge = &self.edges[l.edge];
            if l.cum > 0 && l.cum < edge.weight {
                let split = Split {
                    vertex: 0,
                    along: l.along,
                    at: l.at,
                    segment: l.segment,
                };
                let e = splits
                    .entry(l.edge)
                    .or_default()
                    .entry(l.cum)
                    .or_insert(split);
                if l.along < e.along {
                    *e = split;
                }
            }
        }
        let n = self.roads() as u32;
        for pos in splits.values_mut() {
            for p in pos.values_mut() {
                p.vertex = n + self.extra.len() as u32;
                self.extra.push(Extra::Phantom(p.at));
            }
        }
        self.stats.phantom_vertices = self.extra.len() as u64;
        for (list, entry, l) in &landings {
            let edge = &self.edges[l.edge];
            let (vertex, on) = if l.cum == 0 {
                (edge.tail, edge.geometry[0])
            } else if l.cum == edge.weight {
                (edge.head, *edge.geometry.last().expect("two nodes or more"))
            } else {
                let p = splits[&l.edge][&l.cum];
                (p.vertex, p.at)
            };
            let s = &mut snaps[*list][*entry];
            s.vertex = vertex;
            s.distance = l.distance;
            s.on = if vertex >= n { on } else { l.at };
        }
        // Split the edges at their phantoms.
        for (&e, pos) in splits.iter().rev() {
            let edge = self.edges.swap_remove(e);
            let mut pieces = Vec::with_capacity(pos.len() + 1);
            let (mut tail, mut cum, mut along) = (edge.tail, 0i64, 0.0f64);
            // The nodes up to a phantom's segment go before it.
            let mut node = 1;
            let mut shape = vec![edge.geometry[0]];
            for (&c, split) in pos {
                while node <= split.segment {
                    shape.push(edge.geometry[node]);
                    node += 1;
                }
                shape.push(split.at);
                pieces.push(Edge {
                    tail,
                    head: split.vertex,
                    weight: c - cum,
                    metres: split.along - along,
                    geometry: std::mem::replace(&mut shape, vec![split.at]),
                    ..edge.clone()
                });
                (tail, cum, along) = (split.vertex, c, split.along);
            }
            shape.extend_from_slice(&edge.geometry[node..]);
            pieces.push(Edge {
                tail,
                head: edge.head,
                weight: edge.weight - cum,
                metres: edge.metres - along,
                geometry: shape,
                ..edge
            });
            self.edges.extend(pieces);
        }
        Ok(snaps)
    }

    /// Which edge and direction each of [`Network::arcs`] is: `(edge, backward)`.
    fn arc_keys(&self) -> Vec<(u32, bool)> {
        let mut keys = Vec::with_capacity(self.edges.len() * 2);
        for (i, e) in self.edges.iter().enumerate() {
            if e.forward {
                keys.push((i as u32, false));
            }
            if e.backward {
                keys.push((i as u32, true));
            }
        }
        keys
    }

    /// The arcs of the edges: `(tail, head, weight, way)`, each direction the way allows.
    fn arcs(&self) -> Vec<(u32, u32, i64, i64)> {
        let mut arcs = Vec::with_capacity(self.edges.len() * 2);
        for e in &self.edges {
            if e.forward {
                arcs.push((e.tail, e.head, e.weight, e.way));
            }
            if e.backward {
                arcs.push((e.head, e.tail, e.weight, e.way));
            }
        }
        arcs
    }

    /// The graph: the edges' arcs over the road and phantom vertices, with the turn
    /// restrictions expanded when `turns` (module docs). Sets [`Network::departure`] and the
    /// restriction counts.
    ///
    /// O(V + A log A) for A arcs.
    pub fn graph(&mut self, turns: bool) -> EdgeList {
        let mut arcs = self.arcs();
        if turns && !self.restrictions.is_empty() {
            arcs = self.expand(arcs);
        }
        EdgeList {
            n: self.roads() + self.extra.len(),
            arcs: arcs.into_iter().map(|(u, v, w, _)| (u, v, w)).collect(),
            id_base: 0,
            origin: Origin {
                name: self.name.clone(),
                ..Origin::default()
            },
        }
    }

    /// The turn expansion of `arcs` (module docs).
    fn expand(&mut self, arcs: Vec<(u32, u32, i64, i64)>) -> Vec<(u32, u32, i64, i64)> {
        let osm_ids = self.coords.osm_ids.as_deref().unwrap_or(&[]);
        let mut at_via: BTreeMap<u32, Vec<Restriction>> = BTreeMap::new();
        let mut unusable: Vec<i64> = Vec::new();
        for r in &self.restrictions {
            match osm_ids.binary_search(&r.via) {
                Ok(b) => at_via.entry(b as u32).or_default().push(*r),
                Err(_) => unusable.push(r.relation),
            }
        }
        // A phantom vertex is no junction: no U-turn there (module docs), where it has two
        // neighbours (inside a two-way edge that is no loop; elsewhere none can happen).
        if !at_via.is_empty() {
            let roads = self.roads() as u32;
            let mut around: BTreeMap<u32, (Vec<u32>, i64)> = BTreeMap::new();
            for &(u, v, _, way) in &arcs {
                let phantom = v
                    .checked_sub(roads)
                    .and_then(|i| self.extra.get(i as usize))
                    .is_some_and(|x| matches!(x, Extra::Phantom(_)));
                if phantom {
                    let (from, _) = around.entry(v).or_insert((Vec::new(), way));
                    if !from.contains(&u) {
                        from.push(u);
                    }
                }
            }
            for (p, (from, way)) in around {
                if from.len() == 2 {
                    at_via.entry(p).or_default().push(Restriction {
                        relation: NO_U_TURN,
                        from: way,
                        via: NO_U_TURN,
                        to: way,
                        only: false,
                    });
                }
            }
        }
        let mut ins: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut outs: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, &(u, v, _, _)) in arcs.iter().enumerate() {
            if at_via.contains_key(&v) {
                ins.entry(v).or_default().push(i);
            }
            if at_via.contains_key(&u) {
                outs.entry(u).or_default().push(i);
            }
        }
        let mut applied: Vec<i64> = Vec::new();
        let mut new_tail: HashMap<usize, u32> = HashMap::new();
        let mut new_head: HashMap<usize, u32> = HashMap::new();
        // Arcs out of copies: (copy, the arc out of the via vertex it repeats).
        let mut copied: Vec<(u32, usize)> = Vec::new();
        let mut zero: Vec<(u32, u32)> = Vec::new();
        for (&b, rules) in &at_via {
            let (ins_b, outs_b) = (
                ins.get(&b).map_or(&[][..], Vec::as_slice),
                outs.get(&b).map_or(&[][..], Vec::as_slice),
            );
            // A triple binds when the graph has an arc of its from way into b and one of its
            // to way out of b.
            let binds = |r: &Restriction| {
                ins_b.iter().any(|&i| arcs[i].3 == r.from)
                    && outs_b.iter().any(|&o| arcs[o].3 == r.to)
            };
            let rules: Vec<Restriction> = rules
                .iter()
                .filter(|r| {
                    let ok = binds(r);
                    if r.relation != NO_U_TURN {
                        if ok { &mut applied } else { &mut unusable }.push(r.relation);
                    }
                    ok
                })
                .copied()
                .collect();
            let mut groups: BTreeMap<Vec<bool>, Vec<usize>> = BTreeMap::new();
            for &i in ins_b {
                let (tail, _, _, way) = arcs[i];
                let onlys: Vec<i64> = rules
                    .iter()
                    .filter(|r| r.only && r.from == way)
                    .map(|r| r.to)
                    .collect();
                let allowed: Vec<bool> = outs_b
                    .iter()
                    .map(|&o| {
                        let (_, head, _, to) = arcs[o];
                        (onlys.is_empty() || onlys.contains(&to))
                            && !rules.iter().any(|r| {
                                !r.only
                                    && r.from == way
                                    && r.to == to
                                    // The same way as from and to: its U-turn only.
                                    && (r.from != r.to || head == tail)
                            })
                    })
                    .collect();
                groups.entry(allowed).or_default().push(i);
            }
            if groups.keys().all(|a| a.iter().all(|&x| x)) {
                continue;
            }
            let roads = self.roads() as u32;
            let fresh = |extra: &mut Vec<Extra>| {
                extra.push(Extra::Turn(b));
                roads + extra.len() as u32 - 1
            };
            let free = fresh(&mut self.extra);
            self.departure.insert(b, free);
            zero.push((free, b));
            for &o in outs_b {
                new_tail.insert(o, free);
            }
            for (allowed, members) in groups {
                let to = if allowed.iter().all(|&x| x) {
                    free
                } else {
                    let c = fresh(&mut self.extra);
                    zero.push((c, b));
                    copied.extend(
                        outs_b
                            .iter()
                            .zip(&allowed)
                            .filter(|&(_, &a)| a)
                            .map(|(&o, _)| (c, o)),
                    );
                    c
                };
                for i in members {
                    new_head.insert(i, to);
                }
            }
        }
        applied.sort_unstable();
        applied.dedup();
        unusable.sort_unstable();
        unusable.dedup();
        unusable.retain(|r| applied.binary_search(r).is_err());
        self.stats.restrictions_applied = applied.len() as u64;
        self.stats.restrictions_unusable += unusable.len() as u64;
        self.stats.turn_vertices = self
            .extra
            .iter()
            .filter(|e| matches!(e, Extra::Turn(b) if (*b as usize) < self.coords.points.len()))
            .count() as u64;
        let keys = self.arc_keys();
        self.turn_arcs.clear();
        for (&i, &h) in &new_head {
            self.turn_arcs.entry(keys[i]).or_default().head = Some(h);
        }
        for (&o, &t) in &new_tail {
            self.turn_arcs.entry(keys[o]).or_default().tails.push(t);
        }
        for &(c, o) in &copied {
            self.turn_arcs.entry(keys[o]).or_default().tails.push(c);
        }
        let head = |i: usize| new_head.get(&i).copied().unwrap_or(arcs[i].1);
        let mut out: Vec<(u32, u32, i64, i64)> = arcs
            .iter()
            .enumerate()
            .map(|(i, &(u, _, w, way))| (new_tail.get(&i).copied().unwrap_or(u), head(i), w, way))
            .collect();
        out.extend(
            copied
                .iter()
                .map(|&(c, o)| (c, head(o), arcs[o].2, arcs[o].3)),
        );
        out.extend(zero.iter().map(|&(c, b)| (c, b, 0, 0)));
        out
    }
}

/// `edges.csv`: `tail,head,weight,metres,seconds,way_id,geometry`, one row per arc of the road
/// network (each direction the way allows; ids in `id_base` numbering, phantom vertices
/// included, turn copies not), the geometry as a WKT `LINESTRING` of lon/lat. Its weights sum
/// to the road graph's arc weights.
pub fn edges_csv(edges: &[Edge], id_base: u64) -> String {
    let mut csv = String::with_capacity(edges.len() * 200 + 64);
    csv.push_str("tail,head,weight,metres,seconds,way_id,geometry\n");
    for e in edges {
        let seconds = e.metres / (e.kmh / 3.6);
        for (on, u, v, rev) in [
            (e.forward, e.tail, e.head, false),
            (e.backward, e.head, e.tail, true),
        ] {
            if !on {
                continue;
            }
            let _ = write!(
                csv,
                "{},{},{},{:.3},{:.3},{},\"LINESTRING (",
                u as u64 + id_base,
                v as u64 + id_base,
                e.weight,
                e.metres,
                seconds,
                e.way
            );
            let mut first = true;
            let mut point = |p: &[f64; 2]| {
                let _ = write!(
                    csv,
                    "{}{:.7} {:.7}",
                    if first { "" } else { ", " },
                    p[0],
                    p[1]
                );
                first = false;
            };
            if rev {
                e.geometry.iter().rev().for_each(&mut point);
            } else {
                e.geometry.iter().for_each(&mut point);
            }
            csv.push_str(")\"\n");
        }
    }
    csv
}

#[cfg(test)]
mod test {
    use super::*;

    /// One two-way edge 0 - 1 along a parallel, `w` decimetres, and one oneway edge 2 -> 3.
    fn two_edges() -> Network {
        let (a, b, c, d) = ([25.0, 60.0], [25.002, 60.0], [25.0, 60.01], [25.002, 60.01]);
        let edge = |tail, head, p: [f64; 2], q: [f64; 2], backward| {
            let metres = haversine_m(p, q);
            Edge {
                tail,
                head,
                forward: true,
                backward,
                weight: (metres * 10.0).round() as i64,
                metres,
                kmh: 30.0,
                way: 7 + tail as i64,
                geometry: vec![p, q],
            }
        };
        Network::new(
            "t".into(),
            vec![edge(0, 1, a, b, true), edge(2, 3, c, d, false)],
            Coords {
                spherical: true,
                points: vec![Some(a), Some(b), Some(c), Some(d)],
                osm_ids: Some(vec![1, 2, 3, 4]),
                source: "t".into(),
            },
            Vec::new(),
            OsmStats::default(),
        )
    }

    #[test]
    fn points_on_one_edge_make_a_chain_of_phantoms_that_keeps_its_weight() {
        let mut net = two_edges();
        let w = net.edges[0].weight;
        // Two points at one place share a phantom; one near an end is that end vertex.
        let points = [
            [25.0005, 60.0001],
            [25.0015, 59.9999],
            [25.0005, 60.0001],
            [25.000_000_1, 60.00001],
        ];
        let snaps = net.snap(&[("run.sources", &points)]).unwrap();
        let v: Vec<u32> = snaps[0].iter().map(|s| s.vertex).collect();
        assert_eq!(v, vec![4, 5, 4, 0]);
        assert_eq!(net.extra.len(), 2);
        let list = net.graph(false);
        assert_eq!(list.n, 6);
        let mut pieces: Vec<(u32, u32, i64)> = list.arcs.clone();
        pieces.sort_unstable();
        let c1 = pieces.iter().find(|a| a.0 == 0 && a.1 == 4).unwrap().2;
        let c12 = pieces.iter().find(|a| a.0 == 4 && a.1 == 5).unwrap().2;
        let c2 = pieces.iter().find(|a| a.0 == 5 && a.1 == 1).unwrap().2;
        assert_eq!(c1 + c12 + c2, w, "the pieces keep the edge's weight");
        // Both ways on the two-way edge, with the same pieces; the oneway edge untouched.
        for &(u, v, x) in &pieces {
            assert!(
                pieces.contains(&(v, u, x)) || (u, v) == (2, 3),
                "{u} -> {v}"
            );
        }
        assert_eq!(
            pieces.iter().map(|a| a.2).sum::<i64>(),
            2 * w + net.edges.iter().find(|e| e.tail == 2).unwrap().weight
        );
        // The geometry of the pieces runs through the projected points.
        let at = |i: usize| match net.extra[i] {
            Extra::Phantom(p) => p,
            Extra::Turn(_) => unreachable!(),
        };
        // A centimetre: 1e-7 degrees.
        assert!(
            haversine_m(at(0), [25.0005, 60.0]) < 0.01,
            "the foot of the first point: {:?}",
            at(0)
        );
        assert!(net
            .edges
            .iter()
            .any(|e| e.tail == 4 && e.head == 5 && e.geometry == vec![at(0), at(1)]));
    }

    #[test]
    fn bad_points_are_named() {
        let mut net = two_edges();
        let e = net
            .snap(&[("apsp.targets", &[[25.0, 60.0], [60.0, 124.0]])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("apsp.targets: point 2 (60, 124)"), "{e}");
        assert!(e.contains("[lon, lat]"), "{e}");
    }
}
