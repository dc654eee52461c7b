//! The contraction hierarchy that PHAST sweeps over, and its builder.
//!
//! Vertices are contracted in rounds. Each round takes an independent set of vertices whose
//! priority is a strict local minimum among their neighbours (priority: the edge quotient, an
//! edge-difference measure, plus the level; ties broken by a hash of the id) and contracts all of them at
//! once over rayon. Contracting `v` adds a shortcut `u -> w` for each pair of arcs `u -> v -> w`
//! unless a *witness* search from `u` finds a path of at most the same length that avoids `v`
//! and every other vertex of the round. Witness searches are Dijkstras limited in settled
//! vertices and hops; a search that gives up only adds a shortcut, so the limits cost size, never
//! exactness. After a round the priorities of the contracted vertices' neighbours are
//! recomputed by simulating their contraction (lazy updates limited to what changed).
//!
//! Exactness with zero weights, directed arcs and parallel arcs follows from the classic
//! argument: a witness of length `<=` the path it replaces keeps every distance among the
//! vertices still to contract, and only the witness's vertices (all contracted later) appear in
//! it. Shortcut weights are exact sums in u64; a candidate heavier than the graph's distance bound
//! `(n-1)·max_weight` can never lie on a shortest path and is dropped. A u32 hierarchy stores a
//! heavier weight as [`Dist::CEIL`]: any path over it then
//! sums to `CEIL`, which marks a tree that overflowed u32 (the apsp plugin redoes it in u64).
//!
//! The level of a vertex is 1 + the largest level of its lower neighbours (0 without any); no
//! arc joins two vertices of one level. Vertices are renumbered by descending level (ties by
//! input id), which is the order the PHAST sweep reads them in.
//!
//! Complexity: on road graphs near-linear in practice (each vertex is simulated a few times,
//! each simulation runs in-degree witness searches of at most `settle_limit` vertices); on
//! skewed graphs the core densifies, which [`Hierarchy::build`]'s [`Budget`] detects.

use crate::graph::Csr;
use crate::plugins::common::Dist;
use parking_lot::Mutex;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Weight/distance type of a hierarchy: u32 (the apsp plugin's default: a tree that
/// overflows is redone in u64) or u64. `INF` (the type's maximum) marks unreachable; sums
/// saturate at `CEIL` (see [`Dist`]).
pub trait ChWeight: Dist + crate::ZeroBits {
    /// `x` in this type, `None` when it does not fit below `INF`.
    fn from_u64(x: u64) -> Option<Self>;
    /// `x` (below `u64::MAX`) in this type, `CEIL` when it is heavier.
    fn capped(x: u64) -> Self;
    /// `INF` when `self` is `INF`, else `min(self + o, CEIL)`.
    fn sat_add(self, o: Self) -> Self;
}

impl ChWeight for u32 {
    #[inline(always)]
    fn from_u64(x: u64) -> Option<Self> {
        u32::try_from(x).ok().filter(|&x| x != u32::MAX)
    }
    #[inline(always)]
    fn capped(x: u64) -> Self {
        x.min(Self::CEIL as u64) as u32
    }
    /// `self + min(o, max(self, CEIL) - self)`: `INF` adds 0, a finite value at most up to
    /// `CEIL`; branch-free (max, sub, min, add) so that the sweep's lanes vectorize.
    #[inline(always)]
    fn sat_add(self, o: Self) -> Self {
        self + o.min(self.max(Self::CEIL) - self)
    }
}

impl ChWeight for u64 {
    #[inline(always)]
    fn from_u64(x: u64) -> Option<Self> {
        (x != u64::MAX).then_some(x)
    }
    #[inline(always)]
    fn capped(x: u64) -> Self {
        x.min(Self::CEIL)
    }
    #[inline(always)]
    fn sat_add(self, o: Self) -> Self {
        self.saturating_add(o)
    }
}

/// Build parameters that change the hierarchy (and so are part of the cache key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChParams {
    /// Vertices a witness search may settle before giving up (then a shortcut is added).
    pub settle_limit: u32,
    /// Arcs a witness path may have.
    pub hop_limit: u32,
}

impl Default for ChParams {
    fn default() -> Self {
        ChParams {
            settle_limit: 300,
            hop_limit: 64,
        }
    }
}

/// Limits on a build, so that a graph without a good hierarchy (R-MAT, social graphs) is
/// detected early instead of contracting a dense core for minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Most shortcuts.
    pub shortcuts: u64,
    /// Most arcs scanned by witness searches, summed over the build.
    pub work: u64,
}

impl Budget {
    /// The default for a graph of `n` vertices and `m` arcs: 3m + n shortcuts and 2000m + 5·10^7
    /// arcs scanned. Road graphs stay far below (osm-moscow: 0.95 shortcuts and 430 scans per
    /// arc; rome99, small enough for its dense top to dominate, 1.4 and 1,534); a 2,048-vertex
    /// R-MAT graph of mean degree 16 scans 28,000 per arc before its first round.
    pub fn for_graph(n: usize, m: usize) -> Budget {
        Budget {
            shortcuts: 3 * m as u64 + n as u64,
            work: 2000 * m as u64 + 50_000_000,
        }
    }
}

/// Facts about a build, for the report and the `auto` decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChInfo {
    /// Arcs of the input CSR.
    pub arcs: u64,
    /// Shortcuts (the hierarchy has `arcs + shortcuts` arcs, up and down together).
    pub shortcuts: u64,
    /// Contraction rounds (independent sets).
    pub rounds: u32,
}

/// Why a build stopped.
#[derive(Debug, thiserror::Error)]
pub enum ChError {
    /// The graph does not contract well (skewed degrees, a dense core): the build ran past
    /// its budget of shortcuts or witness-search work.
    #[error(
        "the contraction hierarchy is poor: {what} passed its budget ({used} > {budget}) with \
         {remaining} of {n} vertices still to contract"
    )]
    Poor {
        /// "shortcuts" or "witness-search work (arcs scanned)".
        what: &'static str,
        /// The amount when the build stopped.
        used: u64,
        /// The budget.
        budget: u64,
        /// Vertices not yet contracted.
        remaining: usize,
        /// Vertices.
        n: usize,
    },
    /// The hierarchy does not fit the chosen weight type or 32-bit offsets.
    #[error("contraction hierarchy: {0}")]
    Unfit(String),
}

/// A contraction hierarchy with vertices renumbered into SWEEP ORDER: position 0 is the highest
/// rank; the PHAST sweep visits positions 0, 1, ..., n-1.
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy<W> {
    /// Vertices.
    pub n: usize,
    /// `order[p]` = vertex id (0-based CSR id) at sweep position `p`.
    pub order: Vec<u32>,
    /// `pos[v]` = sweep position of vertex `v` (inverse of `order`).
    pub pos: Vec<u32>,
    /// Upward graph over positions (arcs `p -> q`, `q < p`), CSR offsets (`n + 1`).
    pub up_offsets: Vec<u32>,
    /// Heads of the upward arcs.
    pub up_heads: Vec<u32>,
    /// Weights of the upward arcs.
    pub up_weights: Vec<W>,
    /// Downward graph over positions stored by head: for position `p`, the arcs `q -> p`
    /// (`q < p`) are `down_tails/down_weights[down_offsets[p]..down_offsets[p+1]]`, tails
    /// ascending.
    pub down_offsets: Vec<u32>,
    /// Tails of the downward arcs.
    pub down_tails: Vec<u32>,
    /// Weights of the downward arcs.
    pub down_weights: Vec<W>,
    /// Level boundaries in sweep order: positions `levels[l]..levels[l+1]` form level `l` (the
    /// top level first); no downward arc joins two positions of one level. `levels[0] = 0`,
    /// last = `n`.
    pub levels: Vec<u32>,
    /// Build facts.
    pub info: ChInfo,
}

/// The graph still to contract: arcs among remaining vertices, both directions.
struct Overlay {
    out: Vec<Vec<(u32, u64)>>,
    inn: Vec<Vec<(u32, u64)>>,
}

/// A vertex's witness-search state, one cache line access per visit.
#[derive(Clone, Copy)]
struct Slot {
    dist: u64,
    hops: u32,
    /// Equal to the search's stamp while the vertex is an unsettled target.
    mark: u32,
}

/// One thread's witness-search state, reused across searches.
struct Searcher {
    slot: Vec<Slot>,
    stamp: u32,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

/// Vertices of the round being contracted, which witness paths must avoid (one bit each).
struct Blocked(Vec<u64>);

impl Blocked {
    #[inline(always)]
    fn has(&self, x: u32) -> bool {
        self.0[(x >> 6) as usize] >> (x & 63) & 1 != 0
    }
}

impl Searcher {
    fn new(n: usize) -> Self {
        Searcher {
            slot: vec![
                Slot {
                    dist: u64::MAX,
                    hops: 0,
                    mark: 0
                };
                n
            ],
            stamp: 0,
            touched: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    fn reset(&mut self) {
        for &x in &self.touched {
            self.slot[x as usize].dist = u64::MAX;
        }
        self.touched.clear();
        self.heap.clear();
    }

    /// Dijkstra from `s` over `out`, never entering `skip` or a `blocked` vertex, until the
    /// distances pass `bound`, `settle_limit` vertices are settled, or every vertex of
    /// `targets` is settled. Afterwards `dist` holds the length of a real path (or `MAX`).
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        out: &[Vec<(u32, u64)>],
        s: u32,
        skip: u32,
        blocked: Option<&Blocked>,
        targets: &[(u32, u64)],
        bound: u64,
        p: &ChParams,
    ) -> u64 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.slot.iter_mut().for_each(|x| x.mark = 0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        let mut left = 0usize;
        for &(t, _) in targets {
            let m = &mut self.slot[t as usize].mark;
            if t != s && *m != stamp {
                *m = stamp;
                left += 1;
            }
        }
        self.slot[s as usize].dist = 0;
        self.slot[s as usize].hops = 0;
        self.touched.push(s);
        self.heap.push(Reverse((0, s)));
        let mut settled = 0u32;
        let mut scanned = 0u64;
        while let Some(Reverse((d, x))) = self.heap.pop() {
            let sx = &mut self.slot[x as usize];
            if d != sx.dist {
                continue;
            }
            if d > bound {
                break;
            }
            if sx.mark == stamp {
                sx.mark = 0;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
            settled += 1;
            if settled >= p.settle_limit {
                break;
            }
            let h = sx.hops + 1;
            if h > p.hop_limit {
                continue;
            }
            let arcs = &out[x as usize];
            scanned += arcs.len() as u64;
            for &(y, w) in arcs {
                if y == skip || blocked.is_some_and(|b| b.has(y)) {
                    continue;
                }
                let nd = d.saturating_add(w);
                let sy = &mut self.slot[y as usize];
                if nd < sy.dist {
                    if sy.dist == u64::MAX {
                        self.touched.push(y);
                    }
                    sy.dist = nd;
                    sy.hops = h;
                    self.heap.push(Reverse((nd, y)));
                }
            }
        }
        // Clear the marks of targets not settled, so the next stamp wraps cleanly.
        if left > 0 {
            for &(t, _) in targets {
                let m = &mut self.slot[t as usize].mark;
                if *m == stamp {
                    *m = 0;
                }
            }
        }
        scanned
    }

    /// The shortcuts contracting `v` needs (pairs without a witness), appended to `sc`;
    /// returns their number. `cap` drops candidates heavier than the distance bound.
    #[allow(clippy::too_many_arguments)]
    fn shortcuts(
        &mut self,
        ov: &Overlay,
        v: u32,
        blocked: Option<&Blocked>,
        p: &ChParams,
        cap: u64,
        work: &Work,
        mut sc: Option<&mut Vec<(u32, u32, u64)>>,
    ) -> usize {
        let (ins, outs) = (&ov.inn[v as usize], &ov.out[v as usize]);
        let mut count = 0;
        for &(u, wu) in ins {
            let Some(bound) = outs
                .iter()
                .filter(|&&(w, _)| w != u)
                .map(|&(_, ww)| wu.saturating_add(ww))
                .max()
            else {
                continue;
            };
            if work.over() {
                return count; // the build is stopping
            }
            let scanned = self.run(&ov.out, u, v, blocked, outs, bound.min(cap), p);
            work.add(scanned);
            for &(w, ww) in outs {
                if w == u {
                    continue;
                }
                let Some(via) = wu.checked_add(ww).filter(|&x| x <= cap) else {
                    continue; // heavier than any shortest path: never needed
                };
                if self.slot[w as usize].dist > via {
                    count += 1;
                    if let Some(sc) = sc.as_deref_mut() {
                        sc.push((u, w, via));
                    }
                }
            }
            self.reset();
        }
        count
    }
}

/// Priority of contracting `v` next (smaller first): the edge quotient (shortcuts added per
/// arc removed, the edge-difference measure that does not favour low-degree vertices forever)
/// plus half the vertex's level. The level term keeps the hierarchy shallow, which the GPU
/// sweep (one launch per level) needs. Measured on osm-bremen-dist and osm-moscow against
/// edge difference with contracted neighbours (4·ED + 2·CN + 2·level): 9% fewer shortcuts,
/// 25-40% fewer levels, the same upward search space; a contracted-neighbours term only added
/// shortcuts and levels there.
fn priority(added: usize, removed: usize, level: u32) -> i64 {
    (added as i64 * 1000) / removed.max(1) as i64 + 500 * level as i64
}

/// A per-id hash breaking priority ties, so equal priorities still give an independent set.
#[inline]
fn tie(v: u32) -> u64 {
    let mut z = (v as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 27)
}

/// Witness-search work of a build, summed over threads, against its budget. Whether the
/// budget is passed does not depend on the threads: the total of a round is fixed, and a
/// round stopped early had passed it already.
struct Work {
    done: AtomicU64,
    budget: u64,
}

impl Work {
    fn add(&self, x: u64) {
        self.done.fetch_add(x, Ordering::Relaxed);
    }
    fn over(&self) -> bool {
        self.done.load(Ordering::Relaxed) > self.budget
    }
}

/// Searchers indexed by rayon thread.
struct Pool(Vec<Mutex<Searcher>>);

impl Pool {
    fn new(n: usize) -> Self {
        Pool(
            (0..rayon::current_num_threads().max(1))
                .map(|_| Mutex::new(Searcher::new(n)))
                .collect(),
        )
    }
    fn get(&self) -> parking_lot::MutexGuard<'_, Searcher> {
        let i = rayon::current_thread_index().unwrap_or(0) % self.0.len();
        self.0[i].lock()
    }
}

impl<W: ChWeight> Hierarchy<W> {
    /// Build the hierarchy of `g`. With a `budget`, the build stops with [`ChError::Poor`]
    /// as soon as the shortcuts or the witness-search work pass it (`None` = no limit).
    ///
    /// Exact for any non-negative weights; deterministic (independent of the thread count).
    pub fn build(g: &Csr, p: &ChParams, budget: Option<Budget>) -> Result<Hierarchy<W>, ChError> {
        let n = g.n;
        let cap = g.distance_bound().min(u64::MAX as u128 - 1) as u64;
        // Lists allocated in id order with their exact size: neighbouring ids (often
        // neighbouring places) then sit close in memory for the witness searches.
        let mut indeg = vec![0usize; n];
        for &v in &g.targets {
            indeg[v as usize] += 1;
        }
        let mut ov = Overlay {
            out: Vec::with_capacity(n),
            inn: Vec::with_capacity(n),
        };
        for (row, &d) in g.offsets.windows(2).zip(&indeg) {
            ov.out.push(Vec::with_capacity((row[1] - row[0]) as usize));
            ov.inn.push(Vec::with_capacity(d));
        }
        drop(indeg);
        for u in 0..n {
            let (a, b) = (g.offsets[u] as usize, g.offsets[u + 1] as usize);
            for e in a..b {
                let (v, w) = (g.targets[e], g.weights[e] as u64);
                ov.out[u].push((v, w));
                ov.inn[v as usize].push((u as u32, w));
            }
        }
        const LIVE: u32 = u32::MAX;
        let mut round_of = vec![LIVE; n];
        let mut level = vec![0u32; n];
        let pool = Pool::new(n);
        let work = Work {
            done: AtomicU64::new(0),
            budget: budget.map_or(u64::MAX, |b| b.work),
        };
        let poor = |what, used, budget, remaining| ChError::Poor {
            what,
            used,
            budget,
            remaining,
            n,
        };
        let mut prio: Vec<i64> = (0..n as u32)
            .into_par_iter()
            .map(|v| {
                let added = pool.get().shortcuts(&ov, v, None, p, cap, &work, None);
                let removed = ov.out[v as usize].len() + ov.inn[v as usize].len();
                priority(added, removed, 0)
            })
            .collect();
        if work.over() {
            let used = work.done.load(Ordering::Relaxed);
            return Err(poor(
                "witness-search work (arcs scanned)",
                used,
                work.budget,
                n,
            ));
        }
        let mut up: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
        let mut down: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
        let mut remaining: Vec<u32> = (0..n as u32).collect();
        let mut shortcuts = 0u64;
        let mut round = 0u32;
        let mut touched_at = vec![LIVE; n];
        while !remaining.is_empty() {
            let key = |v: u32| (prio[v as usize], tie(v), v);
            let sel: Vec<u32> = remaining
                .par_iter()
                .copied()
                .filter(|&v| {
                    let k = key(v);
                    ov.out[v as usize]
                        .iter()
                        .chain(&ov.inn[v as usize])
                        .all(|&(x, _)| key(x) > k)
                })
                .collect();
            let mut blocked = Blocked(vec![0u64; n.div_ceil(64)]);
            for &v in &sel {
                round_of[v as usize] = round;
                blocked.0[v as usize >> 6] |= 1 << (v & 63);
            }
            let new: Vec<Vec<(u32, u32, u64)>> = sel
                .par_iter()
                .map(|&v| {
                    let mut sc = Vec::new();
                    pool.get()
                        .shortcuts(&ov, v, Some(&blocked), p, cap, &work, Some(&mut sc));
                    sc
                })
                .collect();
            shortcuts += new.iter().map(|s| s.len() as u64).sum::<u64>();
            remaining.retain(|&v| round_of[v as usize] == LIVE);
            if let Some(b) = budget.filter(|b| shortcuts > b.shortcuts) {
                return Err(poor("shortcuts", shortcuts, b.shortcuts, remaining.len()));
            }
            if work.over() {
                let used = work.done.load(Ordering::Relaxed);
                return Err(poor(
                    "witness-search work (arcs scanned)",
                    used,
                    work.budget,
                    remaining.len() + sel.len(),
                ));
            }
            // Move the contracted vertices' arcs into the hierarchy and detach them.
            let mut touched = Vec::new();
            for &v in &sel {
                let vi = v as usize;
                let outs = std::mem::take(&mut ov.out[vi]);
                let ins = std::mem::take(&mut ov.inn[vi]);
                for &(x, _) in outs.iter().chain(&ins) {
                    let xi = x as usize;
                    if touched_at[xi] != round {
                        touched_at[xi] = round;
                        touched.push(x);
                    }
                    level[xi] = level[xi].max(level[vi] + 1);
                }
                for &(x, _) in &outs {
                    ov.inn[x as usize].retain(|&(y, _)| y != v);
                }
                for &(x, _) in &ins {
                    ov.out[x as usize].retain(|&(y, _)| y != v);
                }
                up[vi] = outs;
                down[vi] = ins;
            }
            for sc in &new {
                for &(u, w, wt) in sc {
                    upsert(&mut ov.out[u as usize], w, wt);
                    upsert(&mut ov.inn[w as usize], u, wt);
                }
            }
            let fresh: Vec<(u32, i64)> = touched
                .par_iter()
                .map(|&x| {
                    let added = pool.get().shortcuts(&ov, x, None, p, cap, &work, None);
                    let xi = x as usize;
                    let removed = ov.out[xi].len() + ov.inn[xi].len();
                    (x, priority(added, removed, level[xi]))
                })
                .collect();
            for (x, pr) in fresh {
                prio[x as usize] = pr;
            }
            if work.over() {
                let used = work.done.load(Ordering::Relaxed);
                return Err(poor(
                    "witness-search work (arcs scanned)",
                    used,
                    work.budget,
                    remaining.len(),
                ));
            }
            round += 1;
        }
        drop(pool);
        assemble(
            n,
            up,
            down,
            &level,
            ChInfo {
                arcs: g.m() as u64,
                shortcuts,
                rounds: round,
            },
        )
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len() - 1
    }

    /// Arcs of the hierarchy (upward plus downward).
    pub fn arcs(&self) -> usize {
        self.up_heads.len() + self.down_tails.len()
    }

    /// Shortest-path distances from vertex `s` (input CSR id) to every vertex, indexed by
    /// vertex id (`INF` = unreachable): one upward Dijkstra and one single-tree sweep. The plain
    /// reference form of PHAST (the CPU and GPU halves do many trees at once).
    ///
    /// O(n + arcs + S log S), S the upward search space.
    pub fn distances_from(&self, s: u32) -> Vec<W> {
        let mut d = vec![W::INF; self.n];
        let mut heap = BinaryHeap::new();
        let ps = self.pos[s as usize];
        d[ps as usize] = W::ZERO;
        heap.push(Reverse((W::ZERO, ps)));
        while let Some(Reverse((dp, p))) = heap.pop() {
            if dp != d[p as usize] {
                continue;
            }
            let (a, b) = (self.up_offsets[p as usize], self.up_offsets[p as usize + 1]);
            for e in a as usize..b as usize {
                let q = self.up_heads[e] as usize;
                let nd = dp.sat_add(self.up_weights[e]);
                if nd < d[q] {
                    d[q] = nd;
                    heap.push(Reverse((nd, q as u32)));
                }
            }
        }
        for p in 0..self.n {
            let (a, b) = (
                self.down_offsets[p] as usize,
                self.down_offsets[p + 1] as usize,
            );
            let mut best = d[p];
            for e in a..b {
                best = best.min(d[self.down_tails[e] as usize].sat_add(self.down_weights[e]));
            }
            d[p] = best;
        }
        let mut out = vec![W::INF; self.n];
        for (p, &v) in self.order.iter().enumerate() {
            out[v as usize] = d[p];
        }
        out
    }
}

/// Set the arc to `x` to `min(old, w)`, or add it.
fn upsert(list: &mut Vec<(u32, u64)>, x: u32, w: u64) {
    match list.iter_mut().find(|a| a.0 == x) {
        Some(a) => a.1 = a.1.min(w),
        None => list.push((x, w)),
    }
}

/// Renumber into sweep order and lay the arcs out as CSR over positions.
fn assemble<W: ChWeight>(
    n: usize,
    up: Vec<Vec<(u32, u64)>>,
    down: Vec<Vec<(u32, u64)>>,
    level: &[u32],
    info: ChInfo,
) -> Result<Hierarchy<W>, ChError> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&v| (Reverse(level[v as usize]), v));
    let mut pos = vec![0u32; n];
    for (p, &v) in order.iter().enumerate() {
        pos[v as usize] = p as u32;
    }
    let mut levels = vec![0u32];
    for p in 1..n {
        if level[order[p] as usize] != level[order[p - 1] as usize] {
            levels.push(p as u32);
        }
    }
    levels.push(n as u32);
    if n == 0 {
        levels = vec![0];
    }
    let total: usize = up.iter().chain(&down).map(Vec::len).sum();
    if total > u32::MAX as usize {
        return Err(ChError::Unfit(format!(
            "{total} arcs do not fit 32-bit offsets"
        )));
    }
    type Layout<W> = (Vec<u32>, Vec<u32>, Vec<W>);
    let layout = |lists: &[Vec<(u32, u64)>]| -> Layout<W> {
        let mut offsets = Vec::with_capacity(n + 1);
        let mut heads = Vec::new();
        let mut weights = Vec::new();
        offsets.push(0u32);
        let mut row: Vec<(u32, u64)> = Vec::new();
        for &v in &order {
            row.clear();
            row.extend(lists[v as usize].iter().map(|&(x, w)| (pos[x as usize], w)));
            row.sort_unstable();
            for &(q, w) in &row {
                heads.push(q);
                // A u32 hierarchy keeps a weight above CEIL as CEIL (a path over it then
                // overflows u32, and its tree is redone in u64).
                weights.push(W::capped(w));
            }
            offsets.push(heads.len() as u32);
        }
        (offsets, heads, weights)
    };
    let (up_offsets, up_heads, up_weights) = layout(&up);
    let (down_offsets, down_tails, down_weights) = layout(&down);
    // Shortcuts that met in one arc (or improved an arc) were counted once each while
    // building; count what the hierarchy holds.
    let info = ChInfo {
        shortcuts: total as u64 - info.arcs,
        ..info
    };
    Ok(Hierarchy {
        n,
        order,
        pos,
        up_offsets,
        up_heads,
        up_weights,
        down_offsets,
        down_tails,
        down_weights,
        levels,
        info,
    })
}

#[cfg(test)]
mod test;
