//! Point-to-point queries against plain Dijkstra (plugins/apsp/dijkstra.rs, which knows no
//! hierarchy): every distance of awkward generated graphs in both weight types, every route a
//! chain of the graph's arcs of the right length, `one_to_many` rows, `pairs` over threads,
//! and random pairs on a real road graph.

use super::*;
use crate::apsp::dijkstra::Dijkstra;
use crate::apsp::phast::ch::test::{csr, gen, real};
use crate::apsp::phast::ch::ChParams;
use crate::graph::GenModel;
use std::sync::atomic::Ordering::Relaxed;

/// SplitMix64, for sampling pairs.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (((z ^ (z >> 31)) as u128 * n as u128) >> 64) as u32
    }
}

/// The lightest arc `u -> v` of `g`.
fn arc(g: &Csr, u: u32, v: u32) -> Option<u64> {
    let r = g.offsets[u as usize] as usize..g.offsets[u as usize + 1] as usize;
    (g.targets[r.clone()].iter().zip(&g.weights[r]))
        .filter(|&(&h, _)| h == v)
        .map(|(_, &w)| w as u64)
        .min()
}

/// `path` is a chain of `g`'s arcs from `s` to `t`; returns its length.
fn walk(g: &Csr, s: u32, t: u32, path: &[u32]) -> u64 {
    assert_eq!(
        path.first(),
        Some(&s),
        "route {path:?} does not start at {s}"
    );
    assert_eq!(path.last(), Some(&t), "route {path:?} does not end at {t}");
    path.windows(2)
        .map(|w| arc(g, w[0], w[1]).unwrap_or_else(|| panic!("no arc {} -> {}", w[0], w[1])))
        .sum()
}

/// `want` (Dijkstra's distance) against `distance` and `route` from `s` to `t`.
fn check_pair<W: ChWeight>(
    g: &Csr,
    h: &Hierarchy<W>,
    r: &Router<W>,
    search: &mut Search<W>,
    (s, t): (u32, u32),
    want: W,
) {
    let d = distance(h, r, s, t, search);
    assert_eq!(d, want, "{}: distance {s} -> {t}", g.name);
    check_route(g, (s, t), want, route(h, r, g, s, t, search));
}

/// `got`, a route from `s` to `t`, against Dijkstra's distance `want`.
fn check_route<W: ChWeight>(g: &Csr, (s, t): (u32, u32), want: W, got: Option<(W, Vec<u32>)>) {
    match got {
        None => assert_eq!(want, W::INF, "{}: no route {s} -> {t}", g.name),
        Some((d, path)) => {
            assert_eq!(d, want, "{}: route distance {s} -> {t}", g.name);
            let len = walk(g, s, t, &path);
            if want < W::CEIL {
                assert_eq!(len, want.to_u64(), "{}: route {s} -> {t}: {path:?}", g.name);
            } else {
                assert!(len >= want.to_u64(), "{}: route {s} -> {t}", g.name);
            }
            if s == t {
                assert_eq!(path, [s]);
            }
        }
    }
}

/// Every pair of `g` on a `W` hierarchy; returns the fallbacks.
fn every_pair<W: ChWeight>(g: &Csr) -> u64 {
    let h = Hierarchy::<W>::build(g, &ChParams::default(), None).unwrap();
    let r = Router::new(&h);
    let mut search = Search::new(h.n);
    let mut dj = Dijkstra::<W>::new(g.n);
    for s in 0..g.n as u32 {
        let row = dj.run(g, s).to_vec();
        for t in 0..g.n as u32 {
            check_pair(g, &h, &r, &mut search, (s, t), row[t as usize]);
        }
    }
    search.fallbacks
}

/// Every pair in u64 and, where the distances fit, in u32; no arc needs a fallback.
fn exact_everywhere(g: &Csr) {
    assert_eq!(every_pair::<u64>(g), 0, "{}: fallbacks in u64", g.name);
    if g.distance_bound() < u32::MAX as u128 {
        assert_eq!(every_pair::<u32>(g), 0, "{}: fallbacks in u32", g.name);
    }
}

/// Distances of `pairs_` on `h` with stall on demand on and off, and the positions each way
/// settled (relaxed) and stalled, in that order.
fn stall_counts<W: ChWeight>(h: &Hierarchy<W>, r: &Router<W>, pairs_: &[(u32, u32)]) -> [u64; 3] {
    let mut on = Search::new(h.n);
    let mut off = Search::new(h.n);
    (off.fwd.stall, off.bwd.stall) = (false, false);
    for &(s, t) in pairs_ {
        assert_eq!(
            distance(h, r, s, t, &mut on),
            distance(h, r, s, t, &mut off),
            "{s} -> {t}"
        );
    }
    let count = |s: &Search<W>| [s.fwd.settled + s.bwd.settled, s.fwd.stalled + s.bwd.stalled];
    let ([on_settled, stalled], [off_settled, off_stalled]) = (count(&on), count(&off));
    assert_eq!(off_stalled, 0);
    [on_settled, off_settled, stalled]
}

/// Stall on demand changes no distance (every pair of a generated road graph, against
/// Dijkstra through [`exact_everywhere`] and against the search without it here) and settles
/// fewer positions: on osm-bremen-dist, at most two thirds of them.
#[test]
fn stall_on_demand_prunes_and_changes_no_distance() {
    let g = gen(GenModel::Road, 400, 0.0, 3, 1, 20);
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let r = Router::new(&h);
    let all: Vec<(u32, u32)> = (0..g.n as u32)
        .flat_map(|s| (0..g.n as u32).map(move |t| (s, t)))
        .collect();
    let [on, off, stalled] = stall_counts(&h, &r, &all);
    assert!(
        stalled > 0 && on < off,
        "generated: {on} settled against {off}"
    );
    let Some(g) = real("osm-bremen-dist.gr.gz") else {
        return;
    };
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let r = Router::new(&h);
    let mut rng = Rng(7);
    let pairs_: Vec<(u32, u32)> = (0..300).map(|_| (rng.below(g.n), rng.below(g.n))).collect();
    let [on, off, stalled] = stall_counts(&h, &r, &pairs_);
    eprintln!(
        "osm-bremen-dist, 300 pairs: {on} positions settled with stalls ({stalled} stalled), \
         {off} without"
    );
    assert!(
        stalled > 0 && 3 * on <= 2 * off,
        "osm-bremen-dist: {on} settled against {off} ({stalled} stalled)"
    );
}

#[test]
fn router_indexes_every_downward_arc_by_tail() {
    let g = gen(GenModel::Road, 400, 0.0, 3, 1, 20);
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let r = Router::new(&h);
    let mut by_head = Vec::new();
    for x in 0..h.n as u32 {
        let (heads, weights) = r.out(x);
        assert!(heads.windows(2).all(|m| m[0] < m[1]), "heads of {x}");
        for (&m, &w) in heads.iter().zip(weights) {
            assert!(m > x);
            by_head.push((m, x, w));
        }
    }
    by_head.sort_unstable();
    let mut want = Vec::new();
    for p in 0..h.n {
        for e in h.down_offsets[p] as usize..h.down_offsets[p + 1] as usize {
            want.push((p as u32, h.down_tails[e], h.down_weights[e]));
        }
    }
    assert_eq!(by_head, want);
}

#[test]
fn exact_routes_on_generated_graphs_with_zero_weights() {
    for seed in 1..=3 {
        exact_everywhere(&gen(GenModel::Uniform, 150, 2.5, seed, 0, 5));
        // Weights 0..=3 on a grid: many shortest paths of equal length.
        exact_everywhere(&gen(GenModel::Road, 196, 0.0, seed, 0, 3));
        exact_everywhere(&gen(GenModel::Rmat, 128, 4.0, seed, 0, 20));
    }
}

#[test]
fn exact_routes_on_sparse_directed_disconnected_graphs() {
    for seed in 1..=3 {
        exact_everywhere(&gen(GenModel::Uniform, 200, 1.0, seed, 1, 9));
    }
    // Two components, a zero-weight cycle, parallel arcs, two equal paths 3 -> 5, a one-way
    // chain, isolated vertices.
    let g = csr(
        11,
        vec![
            (0, 1, 0),
            (1, 2, 0),
            (2, 0, 0),
            (0, 2, 5),
            (0, 2, 3),
            (2, 3, 7),
            (3, 4, 1),
            (4, 3, 1),
            (4, 5, 2),
            (3, 9, 2),
            (9, 5, 1),
            (6, 7, 2),
            (7, 6, 2),
            (7, 8, 0),
        ],
    );
    exact_everywhere(&g);
    exact_everywhere(&csr(1, vec![]));
    exact_everywhere(&csr(3, vec![]));
}

#[test]
fn exact_routes_with_distances_that_need_u64() {
    for seed in 1..=2 {
        let g = gen(GenModel::Uniform, 120, 2.0, seed, 3_000_000_000, u32::MAX);
        assert_eq!(every_pair::<u64>(&g), 0);
    }
    let arcs = (0..20u32)
        .flat_map(|i| [(i, i + 1, 4_000_000_000i64), (i + 1, i, 1)])
        .collect();
    assert_eq!(every_pair::<u64>(&csr(21, arcs)), 0);
}

/// A u32 hierarchy of a graph whose distances pass u32 stores heavy shortcuts as `CEIL`: the
/// distances saturate like Dijkstra's in u32, and the routes are still chains from s to t (the
/// arcs that cannot be split exactly are found by the fallback).
#[test]
fn saturated_u32_hierarchy_still_routes() {
    let arcs = (0..20u32)
        .flat_map(|i| [(i, i + 1, 4_000_000_000i64), (i + 1, i, 1)])
        .collect();
    let fallbacks = every_pair::<u32>(&csr(21, arcs));
    let g = gen(GenModel::Uniform, 120, 2.0, 1, 1_000_000_000, u32::MAX);
    let fallbacks = fallbacks + every_pair::<u32>(&g);
    // The chain's two-arc shortcuts (8e9) are stored as CEIL: only the fallback splits them.
    assert!(fallbacks > 0);
    eprintln!("saturated u32 hierarchies: {fallbacks} fallbacks");
}

#[test]
fn one_to_many_matches_dijkstra_rows() {
    for g in [
        gen(GenModel::Road, 900, 0.0, 5, 0, 30),
        gen(GenModel::Uniform, 300, 1.5, 2, 0, 10),
    ] {
        let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
        let r = Router::new(&h);
        let mut search = Search::new(h.n);
        let mut dj = Dijkstra::<u32>::new(g.n);
        let mut rng = Rng(g.n as u64);
        for _ in 0..30 {
            let s = rng.below(g.n);
            let row = dj.run(&g, s).to_vec();
            // Repeats and s itself included.
            let mut targets: Vec<u32> = (0..40).map(|_| rng.below(g.n)).collect();
            targets.extend([s, targets[0]]);
            let mut out = vec![0u32; targets.len()];
            one_to_many(&h, &r, s, &targets, &mut search, &mut out);
            for (&t, &d) in targets.iter().zip(&out) {
                assert_eq!(d, row[t as usize], "{}: {s} -> {t}", g.name);
            }
        }
        // Every target of one source, in u64 too.
        let h64 = Hierarchy::<u64>::build(&g, &ChParams::default(), None).unwrap();
        let r64 = Router::new(&h64);
        let mut search64 = Search::new(h64.n);
        let all: Vec<u32> = (0..g.n as u32).collect();
        let mut out = vec![0u64; g.n];
        one_to_many(&h64, &r64, 7, &all, &mut search64, &mut out);
        assert_eq!(out, Dijkstra::<u64>::new(g.n).run(&g, 7));
    }
}

#[test]
fn pairs_over_threads_match_single_queries() {
    // Unreachable pairs included (mean out-degree 1).
    let g = gen(GenModel::Uniform, 500, 1.2, 4, 0, 10);
    let h = Hierarchy::<u64>::build(&g, &ChParams::default(), None).unwrap();
    let r = Router::new(&h);
    let mut rng = Rng(99);
    let origins: Vec<u32> = (0..301).map(|_| rng.below(g.n)).collect();
    let destinations: Vec<u32> = (0..301).map(|_| rng.below(g.n)).collect();
    let mut search = Search::new(h.n);
    let single: Vec<Option<(u64, Vec<u32>)>> = origins
        .iter()
        .zip(&destinations)
        .map(|(&s, &t)| route(&h, &r, &g, s, t, &mut search))
        .collect();
    assert!(single.iter().any(Option::is_none) && single.iter().any(Option::is_some));
    for threads in [1, 3, 8, 1000] {
        let p = pairs(&h, &r, &g, &origins, &destinations, true, threads);
        assert_eq!(p.offsets.len(), origins.len() + 1);
        assert_eq!(p.offsets[0], 0);
        assert_eq!(*p.offsets.last().unwrap() as usize, p.vertices.len());
        for (i, want) in single.iter().enumerate() {
            let path = &p.vertices[p.offsets[i] as usize..p.offsets[i + 1] as usize];
            match want {
                None => {
                    assert_eq!(p.distances[i], u64::MAX, "pair {i}");
                    assert!(path.is_empty(), "pair {i}");
                }
                Some((d, v)) => {
                    assert_eq!(p.distances[i], *d, "pair {i}, {threads} threads");
                    assert_eq!(path, v, "pair {i}, {threads} threads");
                }
            }
        }
        let q = pairs(&h, &r, &g, &origins, &destinations, false, threads);
        assert_eq!(q.distances, p.distances);
        assert!(q.offsets.is_empty() && q.vertices.is_empty());
        // The calls' search states are kept for the next calls (which the comparisons above
        // ran on), at most one per core.
        let kept = r.spare.lock().len();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            (1..=cores).contains(&kept),
            "{kept} states kept, {cores} cores"
        );
    }
    let none = pairs(&h, &r, &g, &[], &[], true, 4);
    assert_eq!(
        (none.distances.len(), none.offsets, none.vertices.len()),
        (0, vec![0], 0)
    );
}

/// 200 random pairs of osm-bremen-dist against Dijkstra, routes checked; prints the mean time
/// of a query (`--nocapture`).
#[test]
fn random_pairs_on_bremen() {
    let Some(g) = real("osm-bremen-dist.gr.gz") else {
        return;
    };
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let t0 = std::time::Instant::now();
    let r = Router::new(&h);
    let router_time = t0.elapsed();
    let mut search = Search::new(h.n);
    let mut dj = Dijkstra::<u32>::new(g.n);
    let mut rng = Rng(2024);
    let pairs_: Vec<(u32, u32)> = (0..200).map(|_| (rng.below(g.n), rng.below(g.n))).collect();
    for &(s, t) in &pairs_ {
        let want = dj.run(&g, s)[t as usize];
        check_pair(&g, &h, &r, &mut search, (s, t), want);
    }
    assert_eq!(search.fallbacks, 0);
    // Timings (no assertion): distance, route, and `pairs` on 4 threads.
    let t0 = std::time::Instant::now();
    let mut sum = 0u64;
    for _ in 0..10 {
        for &(s, t) in &pairs_ {
            sum = sum.wrapping_add(distance(&h, &r, s, t, &mut search) as u64);
        }
    }
    let per_distance = t0.elapsed() / 2000;
    let t0 = std::time::Instant::now();
    let mut arcs = 0;
    for &(s, t) in &pairs_ {
        arcs += route(&h, &r, &g, s, t, &mut search).map_or(0, |(_, p)| p.len());
    }
    let per_route = t0.elapsed() / 200;
    let t0 = std::time::Instant::now();
    let (o, d): (Vec<u32>, Vec<u32>) = pairs_.iter().copied().unzip();
    let p = pairs(&h, &r, &g, &o, &d, true, 4);
    let pairs_time = t0.elapsed();
    assert_eq!(p.vertices.len(), arcs);
    eprintln!(
        "osm-bremen-dist ({} vertices): Router::new {router_time:?}; distance {per_distance:?} \
         per query (checksum {sum}); route {per_route:?} per query ({:.0} vertices per \
         path); pairs (200, paths, 4 threads) {pairs_time:?}",
        g.n,
        arcs as f64 / 200.0
    );
}

/// Routes of `pairs_` on a `W` hierarchy of `g`, with the router's memo: from a cold router,
/// the same warm, with half the memo forgotten (warm splits over cold arcs, whose far ends are
/// found in the offsets), from a clone, and from several threads at once on one cold router;
/// all the same, every one checked against Dijkstra; the fallbacks are counted alike cold and
/// warm. Returns the fallbacks of one pass and the shortcuts memoized as pairs of arcs.
fn memo_keeps_routes<W: ChWeight>(g: &Csr, pairs_: &[(u32, u32)]) -> (u64, usize) {
    let h = Hierarchy::<W>::build(g, &ChParams::default(), None).unwrap();
    let memo = |r: &Router<W>| -> Vec<u64> {
        (r.up_memo.iter().chain(&r.down_memo))
            .map(|m| m.load(Relaxed))
            .collect()
    };
    let r = Router::new(&h);
    assert!(memo(&r).iter().all(|&m| m == 0));
    let mut search = Search::new(h.n);
    let mut routes = |r: &Router<W>| -> Vec<Option<(W, Vec<u32>)>> {
        (pairs_.iter())
            .map(|&(s, t)| route(&h, r, g, s, t, &mut search))
            .collect()
    };
    let cold = routes(&r);
    let filled = memo(&r);
    assert!(filled.iter().any(|&m| m != 0), "{}: no memo", g.name);
    let pairs_made = (filled.iter())
        .filter(|&&m| matches!(Known::decode(m, r.pairs), Known::Pair(..)))
        .count();

    let warm = routes(&r);
    assert_eq!(warm, cold, "{}: warm memo", g.name);
    for (m, _) in (r.up_memo.iter().chain(&r.down_memo))
        .zip(0..)
        .filter(|(_, i)| i % 2 == 0)
    {
        m.store(0, Relaxed);
    }
    assert_eq!(routes(&r), cold, "{}: half the memo", g.name);
    assert_eq!(memo(&r), filled, "{}: memo refilled", g.name);
    let copy = r.clone();
    assert!(copy == r && memo(&copy) == filled);
    assert_eq!(routes(&copy), cold, "{}: cloned memo", g.name);
    let fallbacks = search.fallbacks;
    assert_eq!(fallbacks % 4, 0, "{}: fallbacks of 4 passes", g.name);
    let mut dj = Dijkstra::<W>::new(g.n);
    for (&(s, t), got) in pairs_.iter().zip(cold) {
        let want = dj.run(g, s)[t as usize];
        check_route(g, (s, t), want, got);
    }
    // Threads at once on one cold router, then warm: the answers of one thread.
    let (o, d): (Vec<u32>, Vec<u32>) = pairs_.iter().copied().unzip();
    let want = pairs(&h, &Router::new(&h), g, &o, &d, true, 1);
    let shared = Router::new(&h);
    std::thread::scope(|sc| {
        let calls: Vec<_> = (0..4)
            .map(|_| sc.spawn(|| pairs(&h, &shared, g, &o, &d, true, 3)))
            .collect();
        for c in calls {
            assert_eq!(c.join().unwrap(), want, "{}: threads, cold memo", g.name);
        }
    });
    assert_eq!(memo(&shared), filled, "{}: memo filled by threads", g.name);
    let again = pairs(&h, &shared, g, &o, &d, true, 5);
    assert_eq!(again, want, "{}: threads, warm memo", g.name);
    (fallbacks / 4, pairs_made)
}

#[test]
fn memo_changes_no_route() {
    fn shared<T: Send + Sync>() {}
    shared::<Router<u32>>();
    shared::<Router<u64>>();
    for g in [
        gen(GenModel::Road, 900, 0.0, 7, 0, 30),
        gen(GenModel::Uniform, 300, 2.0, 3, 0, 5),
        gen(GenModel::Rmat, 256, 4.0, 2, 1, 20),
        gen(GenModel::Uniform, 400, 1.2, 4, 0, 10),
    ] {
        let mut rng = Rng(g.n as u64);
        let pairs_: Vec<(u32, u32)> = (0..300).map(|_| (rng.below(g.n), rng.below(g.n))).collect();
        // Routes of these graphs meet shortcuts of two of the graph's arcs.
        for (fallbacks, pairs_made) in [
            memo_keeps_routes::<u32>(&g, &pairs_),
            memo_keeps_routes::<u64>(&g, &pairs_),
        ] {
            assert_eq!(fallbacks, 0, "{}", g.name);
            assert!(pairs_made > 0, "{}: no pair memoized", g.name);
        }
    }
    // Saturated shortcuts: the fallback, every time, memo or not.
    let arcs = (0..20u32)
        .flat_map(|i| [(i, i + 1, 4_000_000_000i64), (i + 1, i, 1)])
        .collect();
    let g = csr(21, arcs);
    let all: Vec<(u32, u32)> = (0..21).flat_map(|s| (0..21).map(move |t| (s, t))).collect();
    assert!(memo_keeps_routes::<u32>(&g, &all).0 > 0);
}

#[test]
fn memo_words_and_arc_ends() {
    for k in [
        Known::Unknown,
        Known::NoMiddle,
        Known::Original(0),
        Known::Original(u32::MAX - 2),
        Known::Split(0, 0),
        Known::Split(0, u32::MAX),
        Known::Pair(0, 0),
        Known::Pair(PAIR_MASK, u32::MAX - 2),
        Known::Split(PAIR_MASK - 2, u32::MAX),
    ] {
        assert_eq!(Known::decode(k.encode(), true), k);
        if !matches!(k, Known::Pair(..)) {
            assert_eq!(Known::decode(k.encode(), false), k);
        }
    }
    // Without pairs, a split of any arc index.
    let k = Known::Split(u32::MAX - 1, 7);
    assert_eq!(Known::decode(k.encode(), false), k);
    assert_eq!(Known::Unknown.encode(), 0);
    // An arc's far end from the offsets (isolated positions included) is the stored one.
    let g = gen(GenModel::Uniform, 300, 1.0, 5, 1, 9);
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    for p in 0..h.n as u32 {
        let pi = p as usize;
        for e in h.up_offsets[pi]..h.up_offsets[pi + 1] {
            let want = (p, h.up_heads[e as usize], h.up_weights[e as usize] as u64);
            for end in [p, NONE] {
                assert_eq!(Link { e, end, up: true }.arc(&h), want);
            }
        }
        for e in h.down_offsets[pi]..h.down_offsets[pi + 1] {
            let want = (
                h.down_tails[e as usize],
                p,
                h.down_weights[e as usize] as u64,
            );
            for end in [p, NONE] {
                assert_eq!(Link { e, end, up: false }.arc(&h), want);
            }
        }
    }
}

/// Timings of `pairs` on osm-moscow (1,000 seeded random pairs, 2 threads, one router):
/// distances only and with paths, first calls (the paths' with a cold unpacking memo) then the
/// best of five more, wall and CPU time (all threads: steadier when the machine is shared).
/// Prints the figures; no assertion on times. `--ignored --nocapture`.
#[test]
#[ignore]
fn pairs_timing_on_moscow() {
    let Some(g) = real("osm-moscow.gr.gz") else {
        return;
    };
    let t0 = std::time::Instant::now();
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let build = t0.elapsed();
    let t0 = std::time::Instant::now();
    let r = Router::new(&h);
    let router_time = t0.elapsed();
    let t0 = std::time::Instant::now();
    let search = Search::<u32>::new(h.n);
    let search_time = t0.elapsed();
    drop(search);
    let mut rng = Rng(1000);
    let (o, d): (Vec<u32>, Vec<u32>) = (0..1000).map(|_| (rng.below(g.n), rng.below(g.n))).unzip();
    let cpu = || {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let time = |paths: bool| {
        let (t0, c0) = (std::time::Instant::now(), cpu());
        let p = pairs(&h, &r, &g, &o, &d, paths, 2);
        ((t0.elapsed(), cpu() - c0), p)
    };
    let (dist1, q1) = time(false);
    let (path1, p1) = time(true);
    let best = |a: &mut (std::time::Duration, std::time::Duration), b: (_, _)| {
        *a = (a.0.min(b.0), a.1.min(b.1))
    };
    let never = (std::time::Duration::MAX, std::time::Duration::MAX);
    let (mut dist2, mut path2) = (never, never);
    for _ in 0..5 {
        let (t, q) = time(false);
        assert_eq!(q, q1);
        best(&mut dist2, t);
        let (t, p) = time(true);
        assert_eq!(p, p1);
        best(&mut path2, t);
    }
    assert_eq!(q1.distances, p1.distances);
    // The same without stall on demand: the router's spare searches with it off.
    let (mut dist_off, mut path_off) = (never, never);
    for _ in 0..5 {
        for _ in 0..2 {
            let mut s = r.search(h.n);
            (s.fwd.stall, s.bwd.stall) = (false, false);
            r.keep(s);
        }
        let (t, q) = time(false);
        assert_eq!(q, q1);
        best(&mut dist_off, t);
        let (t, p) = time(true);
        assert_eq!(p, p1);
        best(&mut path_off, t);
    }
    eprintln!("without stall on demand: distances {dist_off:?}, paths {path_off:?} best of 5");
    eprintln!(
        "osm-moscow ({} vertices, {} up + {} down arcs; build {build:?}, Router::new \
         {router_time:?}, Search::new {search_time:?}): 1,000 pairs on 2 threads: distances \
         (wall, CPU) {dist1:?} first, {dist2:?} best of 5 more; paths {path1:?} first (cold \
         memo), {path2:?} best of 5 more; {:.0} vertices per path",
        g.n,
        h.up_heads.len(),
        h.down_tails.len(),
        p1.vertices.len() as f64 / 1000.0
    );
}
