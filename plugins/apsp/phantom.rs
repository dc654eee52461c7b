//! Points on the roads at query time, as OSRM's phantom nodes: a point snapped onto an edge of
//! a graph already built (and its contraction hierarchy) is not a vertex of it; a search from
//! it starts at the edge's ends it can drive to, each with the part of the edge's weight still
//! to drive, and a search to it ends at the ends it can be reached from, likewise. The answers
//! are those of the graph the command line makes by splitting the edge at the point
//! (`graph::osm::network`, phantom vertices), to the unit:
//!
//! - the point lands where [`network::land`] puts it (the same nearest segment, ties and
//!   weight split `c = round(W · s / L)`; the same R-tree over the same edges), so a point at
//!   `c = 0` or `c = W` is the edge's end vertex, as there;
//! - a point inside the edge `tail -> head` (weight `W`) leaves by the arc `point -> head` of
//!   weight `W - c` where the way runs forward and `point -> tail` of weight `c` where it runs
//!   backward, and is reached by `tail -> point` (`c`) and `head -> point` (`W - c`);
//! - turn restrictions: the split pieces keep their way, so they enter and leave a restricted
//!   via vertex as the whole edge's arcs do in the turn-expanded graph ([`TurnArc`]): a search
//!   starts at the copy of the head the arc enters, and ends at every vertex the arc leaves
//!   from (the departure copy and the copies that allow the turn onto it);
//! - two points on one edge are also joined along it, `c2 - c1` where the way runs from the
//!   first to the second (the same place: 0), besides any route off the edge and back.
//!
//! The searches are [`route::pairs_seeded`](super::route::pairs_seeded) (one bidirectional
//! query per pair) and [`route::many_to_many`](super::route::many_to_many) (buckets, for
//! matrices).

use super::phast::ch::ChWeight;
use super::route::Seed;
use crate::common::geo::Geo;
use crate::graph::osm::network::{self, Edge, Landing, SegmentTree, TurnArc};
use tuccompi::{Error, Result};

/// Where a trip starts or ends on the graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place {
    /// A vertex (internal id): a start leaves from its departure copy when it is a
    /// restricted via vertex, as the runs' sources do.
    Vertex(u32),
    /// A point snapped onto an edge ([`network::land`]).
    OnEdge(Landing),
}

/// How the searches of one trip end meet the graph: the seeds of a search from it and of a
/// search to it (vertices with the weight from or to the end), and its edge and cumulative
/// weight from the edge's tail when it lies inside an edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct End {
    /// Seeds of a forward search from this end.
    pub from: Vec<(u32, u64)>,
    /// Seeds of a backward search to this end.
    pub to: Vec<(u32, u64)>,
    /// `(edge, c)` for a point inside an edge.
    pub inside: Option<(usize, i64)>,
}

impl End {
    /// The seeds from (`out`) or to this end in weight type `W` (capped at `W::CEIL`: a
    /// distance reaching it is answered again in 64 bits).
    pub fn seeds<W: ChWeight>(&self, out: bool) -> Vec<Seed<W>> {
        let s = if out { &self.from } else { &self.to };
        s.iter().map(|&(v, d)| (v, W::capped(d))).collect()
    }
}

/// Each point's landing on `edges` (the graph's network, as read, unsplit), `tree` their
/// [`network::segment_tree`]; each point is checked first (`key` and its 1-based entry name it
/// in the error). O(P log S).
pub fn land(
    edges: &[Edge],
    tree: &SegmentTree,
    points: &[[f64; 2]],
    key: &str,
) -> Result<Vec<Landing>> {
    if edges.is_empty() {
        return Err(Error::Input(format!(
            "{key}: the graph has no road to snap onto"
        )));
    }
    network::land_all(edges, tree, points, key)
}

/// The vertex a landing is at, when it is at an end of its edge (`c` of 0 or `W`).
pub fn at_vertex(edges: &[Edge], l: &Landing) -> Option<u32> {
    let e = &edges[l.edge];
    if l.cum <= 0 {
        Some(e.tail)
    } else if l.cum >= e.weight {
        Some(e.head)
    } else {
        None
    }
}

/// The searches' seeds of `place` on the graph with places `geo` (module docs; a point on an
/// edge needs `geo`'s edges). O(seeds).
pub fn end(geo: Option<&Geo>, place: &Place) -> End {
    let vertex = |v: u32| End {
        from: vec![(
            geo.and_then(|g| g.departure.get(&v).copied()).unwrap_or(v),
            0,
        )],
        to: vec![(v, 0)],
        inside: None,
    };
    let (geo, l) = match (geo, place) {
        (Some(geo), Place::OnEdge(l)) => (geo, l),
        (_, Place::Vertex(v)) => return vertex(*v),
        (None, Place::OnEdge(_)) => unreachable!("a point lands on the edges of a graph's places"),
    };
    let edges = geo.edges.as_deref().unwrap_or(&[]);
    if let Some(v) = at_vertex(edges, l) {
        return vertex(v);
    }
    let e = &edges[l.edge];
    let (c, w) = (l.cum as u64, e.weight as u64);
    let moved = |backward: bool| geo.turn_arcs.get(&(l.edge as u32, backward));
    // The arc `tail -> head` (backward: `head -> tail`) enters `head` at its copy, if moved,
    // and leaves `tail` from its copies.
    let enters = |backward: bool, head: u32| {
        moved(backward)
            .and_then(|t: &TurnArc| t.head)
            .unwrap_or(head)
    };
    let leaves = |backward: bool, tail: u32| match moved(backward) {
        Some(t) if !t.tails.is_empty() => t.tails.clone(),
        _ => vec![tail],
    };
    let (mut from, mut to) = (Vec::new(), Vec::new());
    if e.forward {
        from.push((enters(false, e.head), w - c));
        to.extend(leaves(false, e.tail).into_iter().map(|v| (v, c)));
    }
    if e.backward {
        from.push((enters(true, e.tail), c));
        to.extend(leaves(true, e.head).into_iter().map(|v| (v, w - c)));
    }
    End {
        from,
        to,
        inside: Some((l.edge, l.cum)),
    }
}

/// The distance from `a` to `b` along their edge without leaving it, when both lie inside one
/// edge and its way runs from `a` to `b` (0 at one place).
pub fn along(edges: &[Edge], a: &End, b: &End) -> Option<u64> {
    let ((ea, ca), (eb, cb)) = (a.inside?, b.inside?);
    if ea != eb {
        return None;
    }
    let e = &edges[ea];
    let forward = (e.forward && cb >= ca).then(|| (cb - ca) as u64);
    let backward = (e.backward && ca >= cb).then(|| (ca - cb) as u64);
    match (forward, backward) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod test;
