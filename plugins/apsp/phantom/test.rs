//! Query-time phantoms against the command line's phantom graph: on a small network with a
//! one-way edge, a multi-segment edge and turn restrictions, random points (some exactly at
//! vertices, some on one edge) are snapped both ways; every distance of the seeded pair
//! queries and of the bucket matrix equals a Dijkstra on the graph split at the points (where
//! a trip may not U-turn at another point's phantom to dodge a restriction: with turns on,
//! the first pair below did so before phantoms became no-U-turn vertices).

use super::*;
use crate::apsp::phast::ch::{ChParams, Hierarchy};
use crate::apsp::route::{many_to_many, pairs_seeded, Router};
use crate::graph::osm::network::{Network, Restriction};
use crate::graph::osm::{haversine_m, OsmStats};
use crate::graph::{Coords, Csr, EdgeList};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

const AT: [[f64; 2]; 6] = [
    [25.000, 60.000],
    [25.002, 60.000],
    [25.004, 60.000],
    [25.000, 60.001],
    [25.002, 60.001],
    [25.004, 60.001],
];

/// An edge: `(tail, head, backward too, way, middle node)`.
type Spec = (u32, u32, bool, i64, Option<[f64; 2]>);

/// Six vertices in two rows.
fn network(turns: bool) -> Network {
    let spec: [Spec; 7] = [
        (0, 1, true, 10, None),
        (1, 2, true, 11, Some([25.003, 60.0002])),
        (3, 4, false, 12, None),
        (4, 5, true, 13, None),
        (0, 3, true, 14, None),
        (1, 4, true, 15, None),
        (5, 2, false, 16, None),
    ];
    let edges = spec
        .iter()
        .map(|&(t, h, back, way, mid)| {
            let mut geometry = vec![AT[t as usize]];
            geometry.extend(mid);
            geometry.push(AT[h as usize]);
            let metres: f64 = geometry.windows(2).map(|w| haversine_m(w[0], w[1])).sum();
            Edge {
                tail: t,
                head: h,
                forward: true,
                backward: back,
                weight: (metres * 10.0).round() as i64,
                metres,
                kmh: 30.0,
                way,
                geometry,
            }
        })
        .collect();
    // No turning from way 10 onto way 15 at vertex 1 (OSM node 2); only straight on from
    // way 13 at vertex 4 (node 5) onto way 12 (against its direction: binds nothing) or 15.
    let restrictions = if turns {
        vec![
            Restriction {
                relation: 1,
                from: 10,
                via: 2,
                to: 15,
                only: false,
            },
            Restriction {
                relation: 2,
                from: 13,
                via: 5,
                to: 15,
                only: true,
            },
        ]
    } else {
        Vec::new()
    };
    Network::new(
        "t".into(),
        edges,
        Coords {
            spherical: true,
            points: AT.iter().map(|&p| Some(p)).collect(),
            osm_ids: Some(vec![1, 2, 3, 4, 5, 6]),
            source: "t".into(),
        },
        restrictions,
        OsmStats::default(),
    )
}

/// Dijkstra distances from `s` in `list`.
fn dijkstra(list: &EdgeList, s: u32) -> Vec<u64> {
    let mut dist = vec![u64::MAX; list.n];
    let mut out: HashMap<u32, Vec<(u32, u64)>> = HashMap::new();
    for &(u, v, w) in &list.arcs {
        out.entry(u).or_default().push((v, w as u64));
    }
    dist[s as usize] = 0;
    let mut heap = BinaryHeap::from([Reverse((0u64, s))]);
    while let Some(Reverse((d, u))) = heap.pop() {
        if d != dist[u as usize] {
            continue;
        }
        for &(v, w) in out.get(&u).map_or(&[][..], Vec::as_slice) {
            if d + w < dist[v as usize] {
                dist[v as usize] = d + w;
                heap.push(Reverse((d + w, v)));
            }
        }
    }
    dist
}

/// SplitMix64 in `[0, 1)`.
fn unit(x: &mut u64) -> f64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// Random points over the network, a few exactly at vertices and two pairs sharing an edge.
fn points() -> Vec<[f64; 2]> {
    let mut x = 7u64;
    let mut p: Vec<[f64; 2]> = (0..40)
        .map(|_| {
            [
                24.9995 + 0.005 * unit(&mut x),
                59.9995 + 0.002 * unit(&mut x),
            ]
        })
        .collect();
    p.extend([AT[1], AT[4], [25.0027, 60.001], [25.0031, 60.001]]);
    p.extend([
        [25.0005, 60.00003],
        [25.0005, 60.00003],
        [25.0015, 59.99998],
    ]);
    p
}

/// The places of `net` (after [`Network::graph`]) as a graph read without points keeps them.
fn geo_of(net: &Network) -> Geo {
    Geo {
        coords: net.coords.clone(),
        osm: None,
        extra: net.extra.clone(),
        departure: net.departure.clone(),
        snapped: Vec::new(),
        edges: Some(net.edges.clone()),
        export: false,
        snap_edges: true,
        turn_arcs: net.turn_arcs.clone(),
    }
}

fn check(turns: bool) {
    let pts = points();
    // The command line: the network split at the points, Dijkstra from each.
    let mut cli = network(turns);
    let snaps = cli.snap(&[("run.sources", &pts)]).unwrap();
    let split = cli.graph(turns);
    let want: Vec<Vec<u64>> = snaps[0]
        .iter()
        .map(|s| {
            let from = cli.departure.get(&s.vertex).copied().unwrap_or(s.vertex);
            let d = dijkstra(&split, from);
            snaps[0].iter().map(|t| d[t.vertex as usize]).collect()
        })
        .collect();
    // Query time: the unsplit graph, its hierarchy, the points as seeds.
    let mut net = network(turns);
    let list = net.graph(turns);
    let g = Csr::from_edges(&list).unwrap();
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let r = Router::new(&h);
    let geo = geo_of(&net);
    let edges = &net.edges;
    let tree = network::segment_tree(edges);
    let ends: Vec<End> = land(edges, &tree, &pts, "points")
        .unwrap()
        .iter()
        .map(|l| end(Some(&geo), &Place::OnEdge(*l)))
        .collect();
    assert!(ends.iter().any(|e| e.inside.is_none()), "some at a vertex");
    let k = pts.len();
    let (mut os, mut ds) = (Vec::new(), Vec::new());
    for i in 0..k {
        for j in 0..k {
            os.push(ends[i].seeds::<u32>(true));
            ds.push(ends[j].seeds::<u32>(false));
        }
    }
    let got = pairs_seeded(&h, &r, &g, &os, &ds, true, 2);
    let all_from: Vec<_> = ends.iter().map(|e| e.seeds::<u32>(true)).collect();
    let all_to: Vec<_> = ends.iter().map(|e| e.seeds::<u32>(false)).collect();
    let matrix = many_to_many(&h, &all_from, &all_to, 2);
    let mut along_used = 0;
    for i in 0..k {
        for j in 0..k {
            let wide = |x: u32| if x == u32::MAX { u64::MAX } else { x as u64 };
            let edge = along(edges, &ends[i], &ends[j]);
            along_used += edge.is_some() as usize;
            let pair = wide(got.distances[i * k + j]).min(edge.unwrap_or(u64::MAX));
            let m = wide(matrix[i * k + j]).min(edge.unwrap_or(u64::MAX));
            assert_eq!(pair, want[i][j], "turns {turns}: pair {i} -> {j}");
            assert_eq!(m, want[i][j], "turns {turns}: matrix {i} -> {j}");
        }
    }
    assert!(along_used > k, "points share edges");
    // A one-way edge: a point behind another on it goes round.
    let oneway = |x: f64| {
        let l = land(edges, &tree, &[[x, 60.001]], "p").unwrap()[0];
        assert_eq!((edges[l.edge].tail, edges[l.edge].head), (3, 4));
        end(Some(&geo), &Place::OnEdge(l))
    };
    let (a, b) = (oneway(25.0005), oneway(25.0015));
    assert!(along(edges, &a, &b).is_some_and(|x| x > 0));
    assert_eq!(along(edges, &b, &a), None, "against the one-way edge");
}

#[test]
fn seeded_queries_equal_dijkstra_on_the_split_graph() {
    check(false);
}

#[test]
fn seeded_queries_keep_turn_restrictions() {
    check(true);
}

#[test]
fn a_point_at_an_edge_end_is_that_vertex() {
    let mut net = network(true);
    net.graph(true);
    let tree = network::segment_tree(&net.edges);
    let l = land(&net.edges, &tree, &[AT[4]], "p").unwrap()[0];
    assert_eq!(at_vertex(&net.edges, &l), Some(4));
    let e = end(Some(&geo_of(&net)), &Place::OnEdge(l));
    // A restricted via vertex: leaving from its departure copy.
    let from = net.departure[&4];
    assert_eq!(
        (e.from, e.to, e.inside),
        (vec![(from, 0)], vec![(4, 0)], None)
    );
}
