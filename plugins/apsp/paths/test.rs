use super::*;
use crate::apsp::dijkstra::Dijkstra;
use crate::graph::EdgeList;

fn csr(n: usize, arcs: &[(u32, u32, i64)]) -> Csr {
    let list = EdgeList {
        n,
        arcs: arcs.to_vec(),
        ..EdgeList::default()
    };
    Csr::from_edges(&list).unwrap()
}

/// Bellman-Ford distances (u64::MAX = unreachable): the independent reference.
fn reference(g: &Csr, s: usize) -> Vec<u64> {
    let mut d = vec![u64::MAX; g.n];
    d[s] = 0;
    loop {
        let mut changed = false;
        for u in 0..g.n {
            if d[u] == u64::MAX {
                continue;
            }
            for e in g.offsets[u] as usize..g.offsets[u + 1] as usize {
                let v = g.targets[e] as usize;
                let nd = d[u] + g.weights[e] as u64;
                if nd < d[v] {
                    d[v] = nd;
                    changed = true;
                }
            }
        }
        if !changed {
            return d;
        }
    }
}

/// Every reached vertex walks back to `s` within n steps over existing arcs whose weights sum
/// to its reference distance; the source and unreachable vertices have no predecessor.
fn check_tree(g: &Csr, s: u32, pred: &[u32], want: &[u64]) {
    for v in 0..g.n {
        if want[v] == u64::MAX || v == s as usize {
            assert_eq!(pred[v], NONE, "vertex {v} (source {s})");
            continue;
        }
        let (mut x, mut len, mut hops) = (v as u32, 0u64, 0usize);
        while x != s {
            let u = pred[x as usize];
            assert!(u != NONE && u != PENDING, "vertex {v}: walk stops at {x}");
            len += arc_weight(g, u, x).unwrap_or_else(|| panic!("no arc {u} -> {x}")) as u64;
            x = u;
            hops += 1;
            assert!(hops <= g.n, "vertex {v}: the walk from source {s} loops");
        }
        assert_eq!(len, want[v], "vertex {v} from source {s}");
    }
}

fn check_all_sources(g: &Csr) {
    let arcs = InArcs::of(g);
    let mut dj = Dijkstra::<u64>::new(g.n);
    let (mut pred, mut queue) = (Vec::new(), Vec::new());
    for s in 0..g.n as u32 {
        let dist = dj.run(g, s);
        predecessors(g, &arcs, s, dist, &mut pred, &mut queue).unwrap();
        check_tree(g, s, &pred, &reference(g, s as usize));
    }
}

#[test]
fn zero_weight_cycles_give_trees_without_loops() {
    // 0 -> 1 (5); 1 <-> 2 <-> 3 <-> 1 a zero-weight cycle, each also reachable at equal
    // distance by a zero arc from the other; 3 -> 4 (0), 4 -> 1 (0): every tight arc into
    // the cycle but the entry weighs 0. Also 0 -> 5 (5) -> 2 (0): a second entry.
    let g = csr(
        7,
        &[
            (0, 1, 5),
            (1, 2, 0),
            (2, 1, 0),
            (2, 3, 0),
            (3, 2, 0),
            (3, 1, 0),
            (1, 3, 0),
            (3, 4, 0),
            (4, 1, 0),
            (0, 5, 5),
            (5, 2, 0),
            (4, 6, 3),
            (6, 4, 0),
        ],
    );
    check_all_sources(&g);
    // Source 1 sits inside the cycle at distance 0 with its whole component.
    let arcs = InArcs::of(&g);
    let dist = Dijkstra::<u64>::new(g.n).run(&g, 1).to_vec();
    let (mut pred, mut queue) = (Vec::new(), Vec::new());
    predecessors(&g, &arcs, 1, &dist, &mut pred, &mut queue).unwrap();
    assert_eq!(pred[1], NONE);
    assert!(
        [1, 3].contains(&pred[2]) && [1, 2].contains(&pred[3]),
        "{pred:?}"
    );
}

#[test]
fn random_graphs_with_many_zero_weights() {
    let mut x = 99u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    for round in 0..30 {
        let n = 5 + (round % 20);
        let arcs: Vec<(u32, u32, i64)> = (0..3 * n)
            .map(|_| {
                let w = if next().is_multiple_of(2) {
                    0
                } else {
                    1 + next() % 4
                };
                ((next() % n) as u32, (next() % n) as u32, w as i64)
            })
            .collect();
        check_all_sources(&csr(n as usize, &arcs));
    }
}

#[test]
fn in_arcs_list_every_arc_by_head() {
    let g = csr(4, &[(0, 1, 2), (2, 1, 3), (3, 0, 1), (1, 2, 7)]);
    let a = InArcs::of(&g);
    assert_eq!(a.of_head(1), (&[0u32, 2][..], &[2u32, 3][..]));
    assert_eq!(a.of_head(0), (&[3u32][..], &[1u32][..]));
    assert_eq!(a.of_head(3), (&[][..], &[][..]));
}

#[test]
fn distances_no_arc_explains_are_an_error_not_a_loop() {
    let g = csr(3, &[(0, 1, 2), (1, 2, 2)]);
    let arcs = InArcs::of(&g);
    let (mut pred, mut queue) = (Vec::new(), Vec::new());
    let e = predecessors(&g, &arcs, 0, &[0u64, 2, 5], &mut pred, &mut queue).unwrap_err();
    assert!(
        e.to_string()
            .contains("vertex 2 has a distance no in-arc explains"),
        "{e}"
    );
}

#[test]
fn a_one_dimensional_header_has_the_same_length_for_every_count() {
    // write_compact reserves the longest header and writes the real one last.
    for ty in [NpyType::U32, NpyType::U64] {
        let room = header_1d(ty, u64::MAX).unwrap().len();
        for len in [0, 1, 9, 10, 123_456_789, 1 << 40, u64::MAX - 1] {
            assert_eq!(header_1d(ty, len).unwrap().len(), room, "{ty:?} {len}");
        }
    }
}
