//! Point-to-point shortest paths on a contraction hierarchy ([`Hierarchy`]), with the routes
//! unpacked into arcs of the original graph.
//!
//! A query is the classic bidirectional CH search: a forward Dijkstra from `s` over the upward
//! arcs and a backward Dijkstra from `t` over the arcs into it (the downward arcs, stored by
//! head), both climbing to smaller sweep positions only. Every shortest path has a shortest
//! up-down form whose top is settled by both sides, so each side stops once its heap's minimum
//! reaches the best meeting distance found. The cost is the two search spaces (a few hundred
//! vertices on road graphs), not `n`: [`Search`] keeps its arrays between queries and tells
//! the live entries by generation stamps. Each side stalls on demand: a position that a higher
//! one already reached shows shorter is not expanded (on osm-bremen-dist, 41% fewer positions
//! settled; `route::test`).
//!
//! A route is the chain of hierarchy arcs through the meeting vertex, each unpacked: an arc
//! `x -> y` of weight `c` is an arc of the graph of that weight, or a shortcut made when a
//! middle vertex `m` (contracted before both, so `m > max(x, y)`) was contracted, with arcs
//! `x -> m` (downward) and `m -> y` (upward) whose weights sum to `c`. Shortcuts keep no
//! middle, so [`Router`] indexes the downward arcs by tail to find one, and memoizes what it
//! finds per hierarchy arc (that the arc is one of the graph's, or the two arcs a shortcut
//! splits into, or, when both are arcs of the graph, their two heads): the first route
//! through an arc pays the search (hundreds of candidates at the top of the hierarchy), later
//! ones read one memo entry per arc, a level of the unpacking at a time. Saturated weights (a
//! u32 hierarchy of a graph whose distances pass u32) cannot be split exactly: such an arc is
//! unpacked by a Dijkstra in the graph, counted in [`Search::fallbacks`].

use super::phast::ch::{ChWeight, Hierarchy};
use crate::graph::Csr;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What queries need beside the hierarchy: its downward arcs indexed by tail (for each position
/// `x`, the arcs `x -> m`, `m > x`, heads ascending), to find shortcuts' middles, and the memo
/// of each hierarchy arc's unpacking, filled by the routes as they meet the arcs.
///
/// The memo is shared by the threads that route with one router (relaxed atomics: every
/// thread that unpacks an arc finds the same answer, so any value read is either "not yet
/// known" or that answer). It records which arcs are arcs of the graph routed in: a router
/// serves routes in the graph its hierarchy was built from only (as [`route`] requires).
/// Clones copy the memo (not the spare search states); equality compares the index only.
#[derive(Debug)]
pub struct Router<W> {
    offsets: Vec<u32>,
    heads: Vec<u32>,
    weights: Vec<W>,
    /// Per upward arc (indexed as `h.up_heads`), then per downward arc (as `h.down_tails`):
    /// what the arc is, as [`Known::encode`] writes it (8 bytes an arc).
    up_memo: Vec<AtomicU64>,
    down_memo: Vec<AtomicU64>,
    /// Whether the memo may hold [`Known::Pair`]s: fewer than 2^31 - 1 downward arcs, so no
    /// split's word has its top bit set.
    pairs: bool,
    /// Search states the last calls left (two O(n) arrays per side each, 1.8 ms to make for
    /// osm-moscow's 412,000 vertices: most of a one-pair call), taken by the next calls.
    spare: parking_lot::Mutex<Vec<Search<W>>>,
}

/// What the memo knows of a hierarchy arc `x -> y` of weight `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// Not unpacked yet.
    Unknown,
    /// An arc of the graph of weight `c` into this vertex (`order[y]`).
    Original(u32),
    /// A shortcut, split at a middle `m` into the downward arc `x -> m` (this index in
    /// `h.down_*`) and the upward arc `m -> y` (this index in `h.up_*`).
    Split(u32, u32),
    /// A shortcut whose two halves are arcs of the graph: the middle's and `y`'s vertex ids
    /// (`order[m]`, below 2^31, and `order[y]`): the bottom of an unpacking, one memo read
    /// instead of three.
    Pair(u32, u32),
    /// No exact middle: unpacked by the Dijkstra fallback, every time.
    NoMiddle,
}

impl Known {
    /// 0 for `Unknown` (the memo starts zeroed); a split as `(down + 1) << 32 | up` (an arc
    /// index is below `u32::MAX`: the offsets are u32); a pair as `1 << 63 | m << 32 | y`;
    /// else the high word 0 and the low word 1 (`NoMiddle`) or the vertex plus 2 (`Original`;
    /// ids are below `u32::MAX - 1`). Splits and pairs differ by the top bit only where the
    /// downward arcs are fewer than 2^31 - 1 ([`Router::pairs`]; pairs are not made otherwise).
    fn encode(self) -> u64 {
        match self {
            Known::Unknown => 0,
            Known::NoMiddle => 1,
            Known::Original(v) => v as u64 + 2,
            Known::Split(down, up) => (down as u64 + 1) << 32 | up as u64,
            Known::Pair(m, y) => 1 << 63 | (m as u64) << 32 | y as u64,
        }
    }

    /// The memo word `m` of a router whose memo may hold pairs (`pairs`).
    #[inline(always)]
    fn decode(m: u64, pairs: bool) -> Known {
        if pairs && m >> 63 == 1 {
            return Known::Pair((m >> 32) as u32 & PAIR_MASK, m as u32);
        }
        match ((m >> 32) as u32, m as u32) {
            (0, 0) => Known::Unknown,
            (0, 1) => Known::NoMiddle,
            (0, v) => Known::Original(v - 2),
            (down, up) => Known::Split(down - 1, up),
        }
    }
}

impl<W: Clone> Clone for Router<W> {
    fn clone(&self) -> Self {
        let copy = |m: &[AtomicU64]| m.iter().map(|a| AtomicU64::new(a.load(Relaxed))).collect();
        Router {
            offsets: self.offsets.clone(),
            heads: self.heads.clone(),
            weights: self.weights.clone(),
            up_memo: copy(&self.up_memo),
            down_memo: copy(&self.down_memo),
            pairs: self.pairs,
            spare: parking_lot::Mutex::new(Vec::new()),
        }
    }
}

impl<W: PartialEq> PartialEq for Router<W> {
    fn eq(&self, o: &Self) -> bool {
        (&self.offsets, &self.heads, &self.weights) == (&o.offsets, &o.heads, &o.weights)
    }
}

/// The middle vertex ids a [`Known::Pair`] holds: below 2^31.
const PAIR_MASK: u32 = (1 << 31) - 1;

/// `len` memo entries, all `Known::Unknown`.
fn unknowns(len: usize) -> Vec<AtomicU64> {
    (0..len).map(|_| AtomicU64::new(0)).collect()
}

impl<W: ChWeight> Router<W> {
    /// The index of `h`'s downward arcs by tail (a counting sort), and an empty memo. O(n +
    /// arcs).
    pub fn new(h: &Hierarchy<W>) -> Router<W> {
        let n = h.n;
        assert!(
            n < u32::MAX as usize - 1,
            "vertex ids must leave room for the memo's marks"
        );
        let mut offsets = vec![0u32; n + 1];
        for &q in &h.down_tails {
            offsets[q as usize + 1] += 1;
        }
        for p in 0..n {
            offsets[p + 1] += offsets[p];
        }
        let mut at: Vec<u32> = offsets[..n].to_vec();
        let mut heads = vec![0u32; h.down_tails.len()];
        let mut weights = vec![W::ZERO; h.down_tails.len()];
        // Heads visited ascending: each tail's list comes out sorted.
        for p in 0..n {
            for e in h.down_offsets[p] as usize..h.down_offsets[p + 1] as usize {
                let q = h.down_tails[e] as usize;
                heads[at[q] as usize] = p as u32;
                weights[at[q] as usize] = h.down_weights[e];
                at[q] += 1;
            }
        }
        Router {
            offsets,
            heads,
            weights,
            up_memo: unknowns(h.up_heads.len()),
            down_memo: unknowns(h.down_tails.len()),
            pairs: h.down_tails.len() < PAIR_MASK as usize,
            spare: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// A search state for `h` (`n` vertices): one an earlier call left, else a new one.
    fn search(&self, n: usize) -> Search<W> {
        let spare = self.spare.lock().pop();
        spare
            .filter(|s| s.fwd.at.len() == n)
            .unwrap_or_else(|| Search::new(n))
    }

    /// Keep `search` for the next call ([`Router::search`]); at most as many as the machine
    /// has cores are kept.
    fn keep(&self, search: Search<W>) {
        let mut spare = self.spare.lock();
        if spare.len() < std::thread::available_parallelism().map_or(1, |n| n.get()) {
            spare.push(search);
        }
    }

    /// The memo of the arc `e` (upward when `up`, else downward).
    #[inline(always)]
    fn memo(&self, e: u32, up: bool) -> &AtomicU64 {
        if up {
            &self.up_memo[e as usize]
        } else {
            &self.down_memo[e as usize]
        }
    }

    /// The downward arcs out of position `x`: heads (ascending) and weights.
    fn out(&self, x: u32) -> (&[u32], &[W]) {
        let r = self.offsets[x as usize] as usize..self.offsets[x as usize + 1] as usize;
        (&self.heads[r.clone()], &self.weights[r])
    }
}

/// No parent: the search's start.
const NONE: u32 = u32::MAX;

/// One position's state in a [`Side`]: its distance and parent hold only while `stamp` is the
/// side's `gen`; `parent` is `(position it was reached from, arc index)`. One entry, so a
/// relaxation touches one cache line.
#[derive(Debug, Clone, Copy)]
struct Entry<W> {
    stamp: u32,
    parent: (u32, u32),
    dist: W,
}

/// One direction's Dijkstra over positions.
#[derive(Debug, Clone)]
struct Side<W> {
    at: Vec<Entry<W>>,
    gen: u32,
    heap: BinaryHeap<Reverse<(W, u32)>>,
    /// Stall on demand (on unless a test turns it off): a popped position that a higher
    /// position already reached shows shorter (through an arc that this side's direction does
    /// not climb) is settled without relaxing its arcs. Its distance is no shortest one, so no
    /// shortest up-down path climbs through it; on road hierarchies this prunes most of a
    /// search space.
    stall: bool,
    /// Positions stalled, and positions whose arcs were relaxed, since this side was made.
    stalled: u64,
    settled: u64,
}

impl<W: ChWeight> Side<W> {
    fn new(n: usize) -> Self {
        Side {
            at: vec![
                Entry {
                    stamp: 0,
                    parent: (NONE, NONE),
                    dist: W::INF,
                };
                n
            ],
            gen: 0,
            heap: BinaryHeap::new(),
            stall: true,
            stalled: 0,
            settled: 0,
        }
    }

    /// Forget the last search (O(1), O(n) once every 2^32 searches) and start one at `p`.
    fn start(&mut self, p: u32) {
        self.start_at(&[(p, W::ZERO)]);
    }

    /// Forget the last search and start one at each of `seeds` (position, the distance it
    /// starts at; a position given twice keeps its smaller distance).
    fn start_at(&mut self, seeds: &[(u32, W)]) {
        self.heap.clear();
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.at.iter_mut().for_each(|e| e.stamp = 0);
            self.gen = 1;
        }
        for &(p, d) in seeds {
            if d < self.get(p) {
                self.set(p, d, (NONE, NONE));
            }
        }
    }

    /// The start of the tree's branch through `p`.
    fn root(&self, mut p: u32) -> u32 {
        while self.at[p as usize].parent.0 != NONE {
            p = self.at[p as usize].parent.0;
        }
        p
    }

    #[inline(always)]
    fn get(&self, p: u32) -> W {
        let e = &self.at[p as usize];
        if e.stamp == self.gen {
            e.dist
        } else {
            W::INF
        }
    }

    #[inline(always)]
    fn set(&mut self, p: u32, d: W, parent: (u32, u32)) {
        let i = p as usize;
        self.at[i] = Entry {
            stamp: self.gen,
            parent,
            dist: d,
        };
        self.heap.push(Reverse((d, p)));
    }

    /// The tree's arcs from `p` back to the start, as `(p, parent, arc index)`: forward the arc
    /// `parent -> p`, backward `p -> parent`.
    fn back(&self, mut p: u32) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        std::iter::from_fn(move || {
            let (q, e) = self.at[p as usize].parent;
            (q != NONE).then(|| (std::mem::replace(&mut p, q), q, e))
        })
    }

    /// The smallest live key, when below `bound`.
    fn min_below(&self, bound: W) -> Option<W> {
        self.heap.peek().map(|r| r.0 .0).filter(|&d| d < bound)
    }

    /// Pop one entry; when it is live and not stalled, relax its arcs (`forward`: upward arcs
    /// out of it, else downward arcs into it) and return it with its distance.
    fn step(&mut self, h: &Hierarchy<W>, forward: bool) -> Option<(u32, W)> {
        let Reverse((d, p)) = self.heap.pop()?;
        if d != self.get(p) {
            return None; // stale
        }
        let pi = p as usize;
        let (up, down) = (
            (&h.up_offsets, &h.up_heads, &h.up_weights),
            (&h.down_offsets, &h.down_tails, &h.down_weights),
        );
        let ((offsets, ends, weights), (s_offsets, s_ends, s_weights)) =
            if forward { (up, down) } else { (down, up) };
        // The arcs the other way at `p`: forward, the downward arcs `q -> p` from higher `q`;
        // backward, the upward arcs `p -> q`. Either gives a path through `q` to compare.
        if self.stall {
            for e in s_offsets[pi] as usize..s_offsets[pi + 1] as usize {
                let dq = self.get(s_ends[e]);
                if dq != W::INF && dq.sat_add(s_weights[e]) < d {
                    self.stalled += 1;
                    return None;
                }
            }
        }
        self.settled += 1;
        for e in offsets[pi] as usize..offsets[pi + 1] as usize {
            let q = ends[e];
            let nd = d.sat_add(weights[e]);
            if nd < self.get(q) {
                self.set(q, nd, (p, e as u32));
            }
        }
        Some((p, d))
    }
}

/// One thread's query state, reused across queries: per direction, distances, stamps and parent
/// arcs over positions and a binary heap. (2·16·n bytes, 2·24·n for u64 distances; a query
/// touches only its search spaces.)
#[derive(Debug, Clone)]
pub struct Search<W> {
    fwd: Side<W>,
    bwd: Side<W>,
    /// Hierarchy arcs unpacked by a Dijkstra in the graph since this state was made (no exact
    /// middle: saturated weights, or a hierarchy not from this graph). 0 on a correct
    /// hierarchy whose distances fit `W`.
    pub fallbacks: u64,
    unpacking: Unpacking,
    /// A query's seeds as positions.
    seeds: Vec<(u32, W)>,
}

/// A route's unpacking, reused across queries: the route as a linked list of arcs still to
/// unpack and vertices, refined a round at a time (every arc still to unpack is replaced by
/// its two arcs, or by the vertices it stands for). A round reads the memo of all its arcs
/// first, so that their cache misses overlap: the latency is the unpacking's depth, not its
/// size.
#[derive(Debug, Clone, Default)]
struct Unpacking {
    /// The list: its nodes and the next of each (`NONE` at the end). Node 0 is the first.
    nodes: Vec<(Node, u32)>,
    /// The nodes to unpack this round and the next.
    round: Vec<u32>,
    next: Vec<u32>,
    /// The memos of this round's arcs.
    memos: Vec<u64>,
    /// A fallback's path.
    path: Vec<u32>,
}

/// A node of an [`Unpacking`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    /// A hierarchy arc still to unpack.
    Arc(Link),
    /// A vertex of the route (an id of the graph).
    Vertex(u32),
}

/// A hierarchy arc to unpack: `h.up_*[e]` when `up`, else `h.down_*[e]`, and the end its
/// arrays do not hold (an upward arc's tail, a downward arc's head), or `NONE` when the memo
/// gave the arc (found in the offsets then, if needed: only the first unpacking needs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    e: u32,
    end: u32,
    up: bool,
}

impl Link {
    /// Positions `x -> y` and weight of the arc. O(1), O(log n) without `end`.
    fn arc<W: ChWeight>(self, h: &Hierarchy<W>) -> (u32, u32, u64) {
        let e = self.e as usize;
        // The position whose range of `offsets` holds `e`.
        let owner = |offsets: &[u32]| match self.end {
            NONE => (offsets.partition_point(|&o| o as usize <= e) - 1) as u32,
            end => end,
        };
        if self.up {
            let x = owner(&h.up_offsets);
            (x, h.up_heads[e], h.up_weights[e].to_u64())
        } else {
            let y = owner(&h.down_offsets);
            (h.down_tails[e], y, h.down_weights[e].to_u64())
        }
    }
}

impl<W: ChWeight> Search<W> {
    /// State for a hierarchy of `n` vertices. O(n).
    pub fn new(n: usize) -> Self {
        Search {
            fwd: Side::new(n),
            bwd: Side::new(n),
            fallbacks: 0,
            unpacking: Unpacking::default(),
            seeds: Vec::new(),
        }
    }
}

/// A search's start: a vertex of the graph and the distance the search starts it at (a point
/// on an edge starts at the edge's ends, each with its part of the edge's weight).
pub type Seed<W> = (u32, W);

/// The bidirectional query: the distance and the meeting position (`NONE` when unreachable).
fn query<W: ChWeight>(h: &Hierarchy<W>, s: u32, t: u32, search: &mut Search<W>) -> (W, u32) {
    query_seeded(h, &[(s, W::ZERO)], &[(t, W::ZERO)], search)
}

/// [`query`] from several starts to several ends: the least `ds + d(s, t) + dt` over the
/// seeds `(s, ds)` of `sources` and `(t, dt)` of `targets` (a Dijkstra from a virtual vertex
/// with an arc to each source seed, to one with an arc from each target seed: the stopping
/// rule holds as for one seed each).
fn query_seeded<W: ChWeight>(
    h: &Hierarchy<W>,
    sources: &[Seed<W>],
    targets: &[Seed<W>],
    search: &mut Search<W>,
) -> (W, u32) {
    let (f, b, buf) = (&mut search.fwd, &mut search.bwd, &mut search.seeds);
    for (side, seeds) in [(&mut *f, sources), (&mut *b, targets)] {
        buf.clear();
        buf.extend(seeds.iter().map(|&(v, d)| (h.pos[v as usize], d)));
        side.start_at(buf);
    }
    let (mut best, mut meet) = (W::INF, NONE);
    loop {
        // The side with the smaller key steps; a side whose key reached `best` is done.
        let forward = match (f.min_below(best), b.min_below(best)) {
            (None, None) => break,
            (Some(x), Some(y)) => x <= y,
            (x, _) => x.is_some(),
        };
        let (me, other) = if forward {
            (&mut *f, &*b)
        } else {
            (&mut *b, &*f)
        };
        if let Some((p, d)) = me.step(h, forward) {
            let o = other.get(p);
            if o != W::INF && d.sat_add(o) < best {
                (best, meet) = (d.sat_add(o), p);
            }
        }
    }
    (best, meet)
}

/// The shortest-path distance from `s` to `t` (vertex ids of the graph `h` was built from;
/// `W::INF` when unreachable, 0 when `s == t`). O(S log S), S the two upward search spaces.
pub fn distance<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    s: u32,
    t: u32,
    search: &mut Search<W>,
) -> W {
    debug_assert_eq!(r.offsets.len(), h.n + 1);
    query(h, s, t, search).0
}

/// The distance from `s` to `t` and a shortest path as vertex ids of `g` (the graph `h` was
/// built from), `s` and `t` included (`[s]` when `s == t`); `None` when `t` is unreachable.
/// The path is a chain of arcs of `g` whose weights sum to the distance (unless the distance
/// saturated at `W::CEIL`). O(S log S + L), L the path's arcs, once `r`'s memo knows the
/// hierarchy arcs met unpacking (an arc's first time: O(d log d'), d the downward arcs out of
/// its tail, d' the upward arcs out of each).
///
/// # Panics
/// When an arc of `h` has no path in `g` (`h` was not built from `g`).
pub fn route<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    s: u32,
    t: u32,
    search: &mut Search<W>,
) -> Option<(W, Vec<u32>)> {
    let mut path = Vec::new();
    let d = route_into(h, r, g, s, t, search, &mut path);
    (d != W::INF).then_some((d, path))
}

/// [`route`] appending the path to `out` (nothing when unreachable); returns the distance.
fn route_into<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    s: u32,
    t: u32,
    search: &mut Search<W>,
    out: &mut Vec<u32>,
) -> W {
    let d = route_seeded_into(h, r, g, &[(s, W::ZERO)], &[(t, W::ZERO)], search, out);
    debug_assert!(d == W::INF || out.last() == Some(&t));
    d
}

/// [`query_seeded`] with its path appended to `out` (nothing when unreachable): from the
/// source seed it starts at to the target seed it ends at; returns the distance.
fn route_seeded_into<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    sources: &[Seed<W>],
    targets: &[Seed<W>],
    search: &mut Search<W>,
    out: &mut Vec<u32>,
) -> W {
    let (best, meet) = query_seeded(h, sources, targets, search);
    if meet == NONE {
        return best;
    }
    // The hierarchy arcs of the up-down path, in path order: the backward chain is read from
    // the meeting vertex to t, the forward one from it back to s.
    let Search {
        fwd,
        bwd,
        unpacking: u,
        fallbacks,
        ..
    } = search;
    let arc = |up: bool| move |(_, end, e)| (Node::Arc(Link { e, end, up }), NONE);
    u.nodes.clear();
    u.nodes.extend(fwd.back(meet).map(arc(true)));
    u.nodes.reverse();
    u.nodes.extend(bwd.back(meet).map(arc(false)));
    let k = u.nodes.len() as u32;
    for (i, node) in (1..).zip(&mut u.nodes) {
        node.1 = if i < k { i } else { NONE };
    }
    out.push(h.order[fwd.root(meet) as usize]);
    unpack(h, r, g, u, out, fallbacks);
    best
}

/// Unpack the list `u.nodes` (arcs, in path order) into original vertex ids, each arc's head
/// appended to `out`; what each arc is (an arc of `g`, a shortcut and its two arcs, or
/// neither) is read from `r`'s memo, found and memoized the first time.
fn unpack<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    u: &mut Unpacking,
    out: &mut Vec<u32>,
    fallbacks: &mut u64,
) {
    let Unpacking {
        nodes,
        round,
        next,
        memos,
        path,
    } = u;
    let arc = |node: Node| match node {
        Node::Arc(link) => link,
        Node::Vertex(_) => unreachable!("a round holds arcs"),
    };
    round.clear();
    round.extend(0..nodes.len() as u32);
    // Positions only grow down a split: the rounds end within the height.
    while !round.is_empty() {
        // The round's memos first: loads that do not wait on one another.
        memos.clear();
        memos.extend(round.iter().map(|&i| {
            let link = arc(nodes[i as usize].0);
            r.memo(link.e, link.up).load(Relaxed)
        }));
        next.clear();
        for (&i, &memo) in round.iter().zip(memos.iter()) {
            let (node, after) = nodes[i as usize];
            let link = arc(node);
            // The middle's position when found here (the memo keeps the arcs only).
            let mut m = NONE;
            let mut known = Known::decode(memo, r.pairs);
            if known == Known::Unknown {
                // Any thread that gets here finds the same answer: the order of the stores
                // does not matter.
                let (x, y, c) = link.arc(h);
                let v = h.order[y as usize];
                known = if has_arc(g, h.order[x as usize], v, c) {
                    Known::Original(v)
                } else if let Some(mid) = middle(h, r, x, y, c) {
                    m = mid;
                    let (down, up) = split(h, x, m, y, c).expect("a middle splits its arc");
                    let (vx, vm) = (h.order[x as usize], h.order[m as usize]);
                    let (a, b) = (h.down_weights[down as usize], h.up_weights[up as usize]);
                    if r.pairs
                        && vm <= PAIR_MASK
                        && has_arc(g, vx, vm, a.to_u64())
                        && has_arc(g, vm, v, b.to_u64())
                    {
                        Known::Pair(vm, v)
                    } else {
                        Known::Split(down, up)
                    }
                } else {
                    Known::NoMiddle
                };
                r.memo(link.e, link.up).store(known.encode(), Relaxed);
            }
            match known {
                Known::Original(v) => nodes[i as usize].0 = Node::Vertex(v),
                Known::Pair(vm, vy) => {
                    let j = nodes.len() as u32;
                    nodes[i as usize] = (Node::Vertex(vm), j);
                    nodes.push((Node::Vertex(vy), after));
                }
                Known::Split(down, up) => {
                    let j = nodes.len() as u32;
                    let (down, up) = (
                        Link {
                            e: down,
                            end: m,
                            up: false,
                        },
                        Link {
                            e: up,
                            end: m,
                            up: true,
                        },
                    );
                    nodes[i as usize] = (Node::Arc(down), j);
                    nodes.push((Node::Arc(up), after));
                    next.extend([i, j]);
                }
                Known::Unknown => unreachable!("found above"),
                Known::NoMiddle => {
                    *fallbacks += 1;
                    let (x, y, c) = link.arc(h);
                    let (u, v) = (h.order[x as usize], h.order[y as usize]);
                    let bound = if c >= W::CEIL.to_u64() { u64::MAX } else { c };
                    path.clear();
                    if !dijkstra_path(g, u, v, bound, path) {
                        panic!(
                            "hierarchy arc {u} -> {v} of weight {c} has no such path in {}: \
                             the hierarchy was not built from this graph",
                            g.name
                        );
                    }
                    // The path's vertices in the arc's place (at least one: `v`).
                    let mut at = i;
                    nodes[at as usize].0 = Node::Vertex(path[0]);
                    for &w in &path[1..] {
                        let j = nodes.len() as u32;
                        nodes[at as usize].1 = j;
                        nodes.push((Node::Vertex(w), after));
                        at = j;
                    }
                }
            }
        }
        std::mem::swap(round, next);
    }
    // The vertices, in list order.
    let mut i = if nodes.is_empty() { NONE } else { 0 };
    while i != NONE {
        let (node, after) = nodes[i as usize];
        match node {
            Node::Vertex(v) => out.push(v),
            Node::Arc(_) => unreachable!("every arc is unpacked"),
        }
        i = after;
    }
}

/// Whether `g` has an arc `u -> v` of weight exactly `c`. O(out-degree of `u`).
fn has_arc(g: &Csr, u: u32, v: u32, c: u64) -> bool {
    let r = g.offsets[u as usize] as usize..g.offsets[u as usize + 1] as usize;
    (g.targets[r.clone()].iter().zip(&g.weights[r])).any(|(&h, &w)| h == v && w as u64 == c)
}

/// A middle of the shortcut `x -> y` of weight `c`: a position `m > max(x, y)` with a downward
/// arc `x -> m` of weight `a` and an upward arc `m -> y` of weight `c - a`. The first such `m`
/// (ascending). O(k log k'), k the downward arcs out of `x`, k' the upward ones out of each
/// `m`.
fn middle<W: ChWeight>(h: &Hierarchy<W>, r: &Router<W>, x: u32, y: u32, c: u64) -> Option<u32> {
    let (heads, weights) = r.out(x);
    let from = heads.partition_point(|&m| m <= y);
    (heads[from..].iter().zip(&weights[from..]))
        .find(|&(&m, &a)| a.to_u64() <= c && up_arc(h, m, y, c - a.to_u64()).is_some())
        .map(|(&m, _)| m)
}

/// The arcs that split the shortcut `x -> y` of weight `c` at its middle `m`, as indices: the
/// downward arc `x -> m` (in `h.down_*`) and the upward arc `m -> y` (in `h.up_*`) whose
/// weights sum to `c`: the first such downward arc (in storage order), as [`middle`] meets
/// them through the router. O(log k), k the arcs at `m`.
fn split<W: ChWeight>(h: &Hierarchy<W>, x: u32, m: u32, y: u32, c: u64) -> Option<(u32, u32)> {
    let (lo, hi) = (
        h.down_offsets[m as usize] as usize,
        h.down_offsets[m as usize + 1] as usize,
    );
    let mut e = lo + h.down_tails[lo..hi].partition_point(|&q| q < x);
    while e < hi && h.down_tails[e] == x {
        let a = h.down_weights[e].to_u64();
        if a <= c {
            if let Some(f) = up_arc(h, m, y, c - a) {
                return Some((e as u32, f));
            }
        }
        e += 1;
    }
    None
}

/// The upward arc `m -> y` of weight `w`, as its index in `h.up_*`. O(log k), k the upward
/// arcs out of `m`.
fn up_arc<W: ChWeight>(h: &Hierarchy<W>, m: u32, y: u32, w: u64) -> Option<u32> {
    let (lo, hi) = (
        h.up_offsets[m as usize] as usize,
        h.up_offsets[m as usize + 1] as usize,
    );
    let from = lo + h.up_heads[lo..hi].partition_point(|&q| q < y);
    (from..hi)
        .take_while(|&e| h.up_heads[e] == y)
        .find(|&e| h.up_weights[e].to_u64() == w)
        .map(|e| e as u32)
}

/// Dijkstra in `g` from `u` until `v` is settled, no further than `bound`; appends the path's
/// vertices after `u` to `out`. False when `v` is not within `bound`. O(S log S), S the
/// vertices within the distance (hash maps: no O(n) state).
fn dijkstra_path(g: &Csr, u: u32, v: u32, bound: u64, out: &mut Vec<u32>) -> bool {
    let mut seen: HashMap<u32, (u64, u32)> = HashMap::from([(u, (0, NONE))]);
    let mut heap = BinaryHeap::from([Reverse((0u64, u))]);
    while let Some(Reverse((d, x))) = heap.pop() {
        if d != seen[&x].0 {
            continue;
        }
        if x == v {
            let at = out.len();
            let mut y = v;
            while y != u {
                out.push(y);
                y = seen[&y].1;
            }
            out[at..].reverse();
            return true;
        }
        let r = g.offsets[x as usize] as usize..g.offsets[x as usize + 1] as usize;
        for (&y, &w) in g.targets[r.clone()].iter().zip(&g.weights[r]) {
            let nd = d + w as u64;
            if nd <= bound && seen.get(&y).is_none_or(|&(dy, _)| nd < dy) {
                seen.insert(y, (nd, x));
                heap.push(Reverse((nd, y)));
            }
        }
    }
    false
}

/// Distances from `s` to each of `targets` into `out` (same length): one complete upward
/// search from `s`, kept, then per target a backward search that stops against it. Cheaper
/// than a PHAST sweep for a row of few targets. O(S log S) per target plus the forward search.
pub fn one_to_many<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    s: u32,
    targets: &[u32],
    search: &mut Search<W>,
    out: &mut [W],
) {
    debug_assert_eq!(targets.len(), out.len());
    debug_assert_eq!(r.offsets.len(), h.n + 1);
    let (f, b) = (&mut search.fwd, &mut search.bwd);
    f.start(h.pos[s as usize]);
    while !f.heap.is_empty() {
        f.step(h, true);
    }
    for (&t, o) in targets.iter().zip(out.iter_mut()) {
        // The forward distances are final: a backward vertex settled meets them exactly.
        b.start(h.pos[t as usize]);
        let mut best = W::INF;
        while b.min_below(best).is_some() {
            if let Some((p, d)) = b.step(h, false) {
                let fd = f.get(p);
                if fd != W::INF {
                    best = best.min(d.sat_add(fd));
                }
            }
        }
        *o = best;
    }
}

/// Answers of [`pairs`], in pair order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairs<W> {
    /// Distance of each pair (`W::INF` when unreachable).
    pub distances: Vec<W>,
    /// With paths: pair `i`'s path is `vertices[offsets[i]..offsets[i + 1]]` (`pairs + 1`
    /// entries); empty without.
    pub offsets: Vec<u64>,
    /// The paths' vertex ids, concatenated (an unreachable pair's path is empty).
    pub vertices: Vec<u32>,
}

/// One query per pair `origins[i] -> destinations[i]` (valid ids of `g`, equal lengths), with
/// the paths when `paths`; `threads` threads, one [`Search`] each, take the pairs a few at a
/// time. O(pairs · query + threads · n).
pub fn pairs<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    origins: &[u32],
    destinations: &[u32],
    paths: bool,
    threads: usize,
) -> Pairs<W> {
    debug_assert_eq!(origins.len(), destinations.len());
    debug_assert!(origins
        .iter()
        .chain(destinations)
        .all(|&v| (v as usize) < g.n));
    pairs_by(h, r, g, origins.len(), paths, threads, &|i, s, t| {
        s.push((origins[i], W::ZERO));
        t.push((destinations[i], W::ZERO));
    })
}

/// [`pairs`] from seeds: pair `i`'s query starts at `origins[i]`'s seeds and ends at
/// `destinations[i]`'s (valid ids of `g`, equal lengths; an empty list is unreachable), and
/// its path runs from the source seed it starts at to the target seed it ends at. O(pairs ·
/// query + threads · n).
pub fn pairs_seeded<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    origins: &[Vec<Seed<W>>],
    destinations: &[Vec<Seed<W>>],
    paths: bool,
    threads: usize,
) -> Pairs<W> {
    debug_assert_eq!(origins.len(), destinations.len());
    pairs_by(h, r, g, origins.len(), paths, threads, &|i, s, t| {
        s.extend_from_slice(&origins[i]);
        t.extend_from_slice(&destinations[i]);
    })
}

/// Appends pair `i`'s source and target seeds: `(i, sources, targets)`.
type SeedsOf<'a, W> = &'a (dyn Fn(usize, &mut Vec<Seed<W>>, &mut Vec<Seed<W>>) + Sync);

/// The `k` pairs whose seeds `seeds(i, sources, targets)` appends, queried over `threads`:
/// each thread takes the next [`PAIRS_CHUNK`] pairs while any are left (routes differ in cost
/// by their lengths, so fixed blocks would leave a thread waiting on the longest).
fn pairs_by<W: ChWeight>(
    h: &Hierarchy<W>,
    r: &Router<W>,
    g: &Csr,
    k: usize,
    paths: bool,
    threads: usize,
    seeds: SeedsOf<'_, W>,
) -> Pairs<W> {
    let chunks = k.div_ceil(PAIRS_CHUNK);
    let next = std::sync::atomic::AtomicUsize::new(0);
    // One thread's work: per chunk it took, the chunk, its distances, and its paths' lengths and
    // vertices.
    type Done<W> = Vec<(usize, Vec<W>, Vec<u64>, Vec<u32>)>;
    let run = || -> Done<W> {
        let mut search = r.search(h.n);
        let (mut s, mut t) = (Vec::new(), Vec::new());
        let mut done = Vec::new();
        loop {
            let c = next.fetch_add(1, Relaxed);
            if c >= chunks {
                break;
            }
            let pairs = c * PAIRS_CHUNK..((c + 1) * PAIRS_CHUNK).min(k);
            let (mut d, mut lens, mut vertices) = (Vec::new(), Vec::new(), Vec::new());
            for i in pairs {
                s.clear();
                t.clear();
                seeds(i, &mut s, &mut t);
                if paths {
                    let at = vertices.len();
                    d.push(route_seeded_into(
                        h,
                        r,
                        g,
                        &s,
                        &t,
                        &mut search,
                        &mut vertices,
                    ));
                    lens.push((vertices.len() - at) as u64);
                } else {
                    d.push(query_seeded(h, &s, &t, &mut search).0);
                }
            }
            done.push((c, d, lens, vertices));
        }
        r.keep(search);
        done
    };
    let threads = threads.clamp(1, chunks.max(1));
    let mut done: Done<W> = if threads == 1 {
        run()
    } else {
        std::thread::scope(|sc| {
            let run = &run;
            let handles: Vec<_> = (0..threads).map(|_| sc.spawn(run)).collect();
            (handles.into_iter())
                .flat_map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    };
    done.sort_unstable_by_key(|c| c.0);
    let mut distances = Vec::with_capacity(k);
    let (mut offsets, mut vertices) = (Vec::new(), Vec::new());
    if paths {
        offsets.reserve(k + 1);
        offsets.push(0u64);
        vertices.reserve(done.iter().map(|c| c.3.len()).sum());
    }
    for (_, d, lens, vs) in done {
        distances.extend(d);
        for l in lens {
            offsets.push(offsets.last().unwrap() + l);
        }
        vertices.extend(vs);
    }
    Pairs {
        distances,
        offsets,
        vertices,
    }
}

/// Pairs a thread of [`pairs`] takes at a time.
const PAIRS_CHUNK: usize = 16;

/// The distance from each of `sources` to each of `targets` (each a list of seeds; row-major,
/// `W::INF` where unreachable or a list is empty), by buckets (Knopp et al., 2007): each
/// target's complete backward upward search leaves `(target, distance)` at every position it
/// settles, then each source's complete forward upward search meets them: the shortest path's
/// top is settled by both. Both phases are split over `threads`. O((S + T) · U log U + B)
/// for U the vertices of an upward search and B the bucket entries the forward searches read;
/// memory O(T · U).
pub fn many_to_many<W: ChWeight>(
    h: &Hierarchy<W>,
    sources: &[Vec<Seed<W>>],
    targets: &[Vec<Seed<W>>],
    threads: usize,
) -> Vec<W> {
    let (ns, nt) = (sources.len(), targets.len());
    let threads = threads.max(1);
    // A complete upward search from `seeds`, each settled position with its distance to `f`.
    let sweep =
        |side: &mut Side<W>, seeds: &[Seed<W>], forward: bool, f: &mut dyn FnMut(u32, W)| {
            let pos: Vec<(u32, W)> = seeds.iter().map(|&(v, d)| (h.pos[v as usize], d)).collect();
            side.start_at(&pos);
            while !side.heap.is_empty() {
                if let Some((p, d)) = side.step(h, forward) {
                    f(p, d);
                }
            }
        };
    // The buckets: (position, target, distance), sorted by position.
    let per = nt.div_ceil(threads).max(1);
    let mut entries: Vec<(u32, u32, W)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..nt)
            .step_by(per)
            .map(|from| {
                let sweep = &sweep;
                sc.spawn(move || {
                    let mut side = Side::new(h.n);
                    let mut out = Vec::new();
                    for (j, seeds) in (from..).zip(&targets[from..(from + per).min(nt)]) {
                        sweep(&mut side, seeds, false, &mut |p, d| {
                            out.push((p, j as u32, d))
                        });
                    }
                    out
                })
            })
            .collect();
        (handles.into_iter())
            .flat_map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    entries.sort_unstable_by_key(|e| e.0);
    let mut starts = vec![0usize; h.n + 1];
    for e in &entries {
        starts[e.0 as usize + 1] += 1;
    }
    for p in 0..h.n {
        starts[p + 1] += starts[p];
    }
    let mut out = vec![W::INF; ns * nt];
    if nt == 0 {
        return out;
    }
    let per = ns.div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        for (b, rows) in out.chunks_mut(per * nt).enumerate() {
            let (sweep, entries, starts) = (&sweep, &entries, &starts);
            sc.spawn(move || {
                let mut side = Side::new(h.n);
                for (i, row) in rows.chunks_mut(nt).enumerate() {
                    sweep(&mut side, &sources[b * per + i], true, &mut |p, d| {
                        let r = starts[p as usize]..starts[p as usize + 1];
                        for &(_, j, dj) in &entries[r] {
                            let x = d.sat_add(dj);
                            if x < row[j as usize] {
                                row[j as usize] = x;
                            }
                        }
                    });
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod test;
