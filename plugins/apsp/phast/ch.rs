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
//! Where arcs come in pairs of equal weight (a symmetric graph: most road networks) each pair
//! of a vertex's neighbours is searched once, from the smaller id, and decided for both
//! directions, which keeps the graph symmetric and halves the searches.
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
//! breadth-first rank over the input, for the sweep's cache), which is the order the PHAST
//! sweep reads them in.
//!
//! Complexity: on road graphs near-linear in practice (each vertex is simulated a few times,
//! each simulation runs in-degree witness searches of at most `settle_limit` vertices); on
//! skewed graphs the core densifies, which [`Hierarchy::build`]'s [`Budget`] detects.

use crate::common::Dist;
use crate::graph::Csr;
use parking_lot::Mutex;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Weight/distance type of a hierarchy: u32 (the apsp plugin's default: a tree that
/// overflows is redone in u64) or u64. `INF` (the type's maximum) marks unreachable; sums
/// saturate at `CEIL` (see [`Dist`]).
pub trait ChWeight: Dist + tuccompi::ZeroBits {
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

/// The graph still to contract: arcs among remaining vertices, both directions, weights in
/// the narrowest type that holds the distance bound (`S`: u32 for most graphs, which halves
/// the overlay's memory and the cache lines a witness search reads).
struct Overlay<S> {
    out: Vec<Vec<(u32, S)>>,
    inn: Vec<Vec<(u32, S)>>,
}

/// A shortcut `(tail, head, weight)` found by a witness search.
type Shortcut = (u32, u32, u64);

/// A vertex's witness-search state.
#[derive(Clone, Copy)]
struct Slot {
    dist: u64,
    hops: u32,
    /// Set while the vertex is an unsettled target of the search.
    target: bool,
}

/// One thread's witness-search state, reused across searches: the touched vertices in a
/// small open-addressing table (linear probing) rather than an n-sized array, so a search
/// touches a few cache lines however large the graph, and a thread's state is kilobytes, not
/// 16 bytes per vertex (16 threads on a 26-million-vertex graph held 6.7 GB of arrays).
struct Searcher {
    keys: Vec<u32>,
    slots: Vec<Slot>,
    used: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

const EMPTY: u32 = u32::MAX;

/// Vertices of the round being contracted, which witness paths must avoid (one bit each).
struct Blocked(Vec<AtomicU64>);

impl Blocked {
    #[inline(always)]
    fn has(&self, x: u32) -> bool {
        self.0[(x >> 6) as usize].load(Ordering::Relaxed) >> (x & 63) & 1 != 0
    }
    fn set(&self, x: u32) {
        self.0[(x >> 6) as usize].fetch_or(1 << (x & 63), Ordering::Relaxed);
    }
    /// Clears the whole word of `x`: called for every vertex of the round, whose bits are the
    /// only ones set.
    fn clear(&self, x: u32) {
        self.0[(x >> 6) as usize].store(0, Ordering::Relaxed);
    }
}

/// Mutable access to distinct elements of a slice from several threads: a round's contracted
/// vertices, and the neighbours it touched, are each a set of distinct vertices whose
/// per-vertex state (arc lists, level, priority) the round rewrites in parallel. On a
/// 26-million-vertex graph the early rounds touch millions of vertices, and doing that on one
/// thread was a third of a 16-thread build.
struct Scatter<'a, T> {
    ptr: *mut T,
    len: usize,
    _slice: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Scatter` is a `&mut [T]` whose elements are handed out to at most one holder
// each (the contract of `at`), so sending or sharing it sends `T`s between threads.
unsafe impl<T: Send> Sync for Scatter<'_, T> {}
// SAFETY: as for `Sync`.
unsafe impl<T: Send> Send for Scatter<'_, T> {}

impl<'a, T> Scatter<'a, T> {
    fn new(s: &'a mut [T]) -> Self {
        Scatter {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            _slice: PhantomData,
        }
    }

    /// Element `i` (panics when out of range).
    ///
    /// # Safety
    /// No other reference to element `i` may be alive while the returned one is: the
    /// caller takes each index at most once while the `Scatter` is shared.
    #[allow(clippy::mut_from_ref)]
    unsafe fn at(&self, i: usize) -> &'a mut T {
        assert!(i < self.len, "index {i} out of {}", self.len);
        // SAFETY: in range (checked), derived from a `&'a mut [T]`, and not aliased (the
        // caller's contract).
        unsafe { &mut *self.ptr.add(i) }
    }

    /// A copy of element `i` (panics when out of range).
    ///
    /// # Safety
    /// No reference to element `i` from [`at`](Self::at) may be alive.
    unsafe fn get(&self, i: usize) -> T
    where
        T: Copy,
    {
        assert!(i < self.len, "index {i} out of {}", self.len);
        // SAFETY: in range (checked) and not written meanwhile (the caller's contract).
        unsafe { self.ptr.add(i).read() }
    }
}

impl Searcher {
    fn new() -> Self {
        Searcher {
            keys: vec![EMPTY; 1024],
            slots: vec![
                Slot {
                    dist: u64::MAX,
                    hops: 0,
                    target: false
                };
                1024
            ],
            used: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    #[inline(always)]
    fn home(&self, v: u32) -> usize {
        (v.wrapping_mul(0x9E37_79B1) as usize ^ (v as usize >> 16)) & (self.keys.len() - 1)
    }

    /// The slot of `v`, inserted (unreached) when absent.
    #[inline(always)]
    fn slot(&mut self, v: u32) -> &mut Slot {
        if self.used.len() * 2 >= self.keys.len() {
            self.grow();
        }
        let mask = self.keys.len() - 1;
        let mut i = self.home(v);
        loop {
            let k = self.keys[i];
            if k == v {
                return &mut self.slots[i];
            }
            if k == EMPTY {
                self.keys[i] = v;
                self.slots[i] = Slot {
                    dist: u64::MAX,
                    hops: 0,
                    target: false,
                };
                self.used.push(i as u32);
                return &mut self.slots[i];
            }
            i = (i + 1) & mask;
        }
    }

    /// The distance the last search found to `v` (`MAX` when it did not reach it).
    #[inline]
    fn dist(&self, v: u32) -> u64 {
        let mask = self.keys.len() - 1;
        let mut i = self.home(v);
        loop {
            let k = self.keys[i];
            if k == v {
                return self.slots[i].dist;
            }
            if k == EMPTY {
                return u64::MAX;
            }
            i = (i + 1) & mask;
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old: Vec<(u32, Slot)> = self
            .used
            .iter()
            .map(|&i| (self.keys[i as usize], self.slots[i as usize]))
            .collect();
        let len = self.keys.len() * 2;
        self.keys = vec![EMPTY; len];
        self.slots.resize(
            len,
            Slot {
                dist: u64::MAX,
                hops: 0,
                target: false,
            },
        );
        self.used.clear();
        for (k, s) in old {
            *self.slot(k) = s;
        }
    }

    fn clear(&mut self) {
        for &i in &self.used {
            self.keys[i as usize] = EMPTY;
        }
        self.used.clear();
        self.heap.clear();
    }

    /// Dijkstra from `s` over `out`, never entering `skip` or a `blocked` vertex, until the
    /// distances pass `bound`, `settle_limit` vertices are settled, or every vertex of
    /// `targets` is settled. Afterwards [`dist`](Self::dist) gives the length of a real path
    /// (or `MAX`). Returns the arcs scanned.
    #[allow(clippy::too_many_arguments)]
    fn run<S: ChWeight>(
        &mut self,
        out: &[Vec<(u32, S)>],
        s: u32,
        skip: u32,
        blocked: Option<&Blocked>,
        targets: &[(u32, S)],
        bound: u64,
        settle_limit: u32,
        hop_limit: u32,
    ) -> u64 {
        self.clear();
        let mut left = 0usize;
        for &(t, _) in targets {
            if t != s {
                let sl = self.slot(t);
                if !sl.target {
                    sl.target = true;
                    left += 1;
                }
            }
        }
        *self.slot(s) = Slot {
            dist: 0,
            hops: 0,
            target: false,
        };
        self.heap.push(Reverse((0, s)));
        let mut settled = 0u32;
        let mut scanned = 0u64;
        while let Some(Reverse((d, x))) = self.heap.pop() {
            let sx = self.slot(x);
            if d != sx.dist {
                continue;
            }
            if d > bound {
                break;
            }
            if sx.target {
                sx.target = false;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
            settled += 1;
            if settled >= settle_limit {
                break;
            }
            let h = sx.hops + 1;
            if h > hop_limit {
                continue;
            }
            let arcs = &out[x as usize];
            scanned += arcs.len() as u64;
            for &(y, w) in arcs {
                if y == skip || blocked.is_some_and(|b| b.has(y)) {
                    continue;
                }
                let nd = d.saturating_add(w.to_u64());
                if nd > bound {
                    // Never settled (the search ends past `bound`): not worth a slot.
                    continue;
                }
                let sy = self.slot(y);
                if nd < sy.dist {
                    sy.dist = nd;
                    sy.hops = h;
                    self.heap.push(Reverse((nd, y)));
                }
            }
        }
        scanned
    }
}

/// One witness search of a contraction (real or simulated): from in-neighbour `ins[i]` of `v`
/// to `v`'s out-neighbours. Appends the pairs without a witness to `sc` (when given); returns
/// their number and the arcs scanned.
///
/// With `half` (a buffer), `v`'s neighbourhood is symmetric (its in- and out-lists hold the
/// same arcs) and only the out-neighbours above `u` are searched for: the pair `(w, u)` is
/// answered by the search from the smaller of the two, and a pair without a witness counts, and
/// is appended, in both directions. In a symmetric overlay ([`symmetric`]) a witness path
/// reversed is a witness of the reverse pair, so this is exact there; elsewhere it is used only
/// to estimate a priority.
#[allow(clippy::too_many_arguments)]
fn witness<S: ChWeight>(
    s: &mut Searcher,
    ov: &Overlay<S>,
    v: u32,
    i: usize,
    blocked: Option<&Blocked>,
    settle_limit: u32,
    p: &ChParams,
    cap: u64,
    mut sc: Option<&mut Vec<(u32, u32, u64)>>,
    half: Option<&mut Vec<(u32, S)>>,
) -> (usize, u64) {
    let (u, wu) = ov.inn[v as usize][i];
    let both = half.is_some();
    let outs: &[(u32, S)] = match half {
        Some(above) => {
            above.clear();
            above.extend(ov.out[v as usize].iter().filter(|&&(w, _)| w > u));
            above
        }
        None => &ov.out[v as usize],
    };
    let wu = wu.to_u64();
    let Some(bound) = outs
        .iter()
        .filter(|&&(w, _)| w != u)
        .map(|&(_, ww)| wu.saturating_add(ww.to_u64()))
        .max()
    else {
        return (0, 0);
    };
    let scanned = s.run(
        &ov.out,
        u,
        v,
        blocked,
        outs,
        bound.min(cap),
        settle_limit,
        p.hop_limit,
    );
    let mut count = 0;
    for &(w, ww) in outs {
        if w == u {
            continue;
        }
        let Some(via) = wu.checked_add(ww.to_u64()).filter(|&x| x <= cap) else {
            continue; // heavier than any shortest path: never needed
        };
        if s.dist(w) > via {
            count += 1 + both as usize;
            if let Some(sc) = sc.as_deref_mut() {
                sc.push((u, w, via));
                if both {
                    sc.push((w, u, via));
                }
            }
        }
    }
    (count, scanned)
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
    fn used(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
}

/// Searchers indexed by rayon thread. A searcher is held for one witness search (never across
/// a nested parallel call, so a thread cannot meet its own lock).
struct Pool(Vec<Mutex<Searcher>>);

impl Pool {
    fn new() -> Self {
        Pool(
            (0..rayon::current_num_threads().max(1))
                .map(|_| Mutex::new(Searcher::new()))
                .collect(),
        )
    }
    fn get(&self) -> parking_lot::MutexGuard<'_, Searcher> {
        let i = rayon::current_thread_index().unwrap_or(0) % self.0.len();
        self.0[i].lock()
    }
}

/// Witness searches of the vertices `vs`: per vertex, the number of shortcuts its
/// contraction needs, or (`collect`) the shortcuts themselves, in no particular order (the
/// caller sorts them; the counts may then be left out). Many vertices
/// run one task each; a few (the late rounds contract a handful of high-degree vertices) run
/// one task per in-neighbour, so every thread still has work.
///
/// Each unordered pair of neighbours is searched once where that is exact (`mirror`: the
/// overlay is symmetric) or only estimated (`!collect`: a simulation of a vertex whose in- and
/// out-lists are the same): see [`witness`]. On osm-moscow this took 23% of the build's
/// witness-search work away.
#[allow(clippy::too_many_arguments)]
fn searches<S: ChWeight>(
    ov: &Overlay<S>,
    vs: &[u32],
    blocked: Option<&Blocked>,
    settle_limit: u32,
    p: &ChParams,
    cap: u64,
    work: &Work,
    pool: &Pool,
    collect: bool,
    mirror: bool,
) -> (Vec<usize>, Vec<(u32, u32, u64)>) {
    // Whether `v`'s pairs of neighbours are searched once (decided once per vertex: the check
    // reads both of its lists).
    let half_at = |v: u32| {
        let vi = v as usize;
        mirror || !collect && symmetric_at(&ov.out[vi], &ov.inn[vi])
    };
    // The searches from in-neighbours `ins` of `v` on one searcher, their work counted once
    // (16 threads adding to one counter after every search contended for its cache line).
    let run =
        |v: u32, half: bool, ins: std::ops::Range<usize>, mut sc: Option<&mut Vec<Shortcut>>| {
            if work.over() {
                return 0; // the build is stopping
            }
            let mut above = Vec::new();
            let mut s = pool.get();
            let (mut count, mut scanned) = (0, 0);
            for i in ins {
                let (c, w) = witness(
                    &mut s,
                    ov,
                    v,
                    i,
                    blocked,
                    settle_limit,
                    p,
                    cap,
                    sc.as_deref_mut(),
                    half.then_some(&mut above),
                );
                count += c;
                scanned += w;
            }
            work.add(scanned);
            count
        };
    if vs.len() >= 64 * rayon::current_num_threads() {
        let ins = |v: u32| 0..ov.inn[v as usize].len();
        if collect {
            // One list per rayon task, not per vertex (a round of millions of vertices).
            let parts: Vec<Vec<Shortcut>> = vs
                .par_iter()
                .fold(Vec::new, |mut sc, &v| {
                    run(v, half_at(v), ins(v), Some(&mut sc));
                    sc
                })
                .collect();
            (Vec::new(), parts.concat())
        } else {
            (
                vs.par_iter()
                    .map(|&v| run(v, half_at(v), ins(v), None))
                    .collect(),
                Vec::new(),
            )
        }
    } else {
        let jobs: Vec<(u32, u32)> = vs
            .iter()
            .enumerate()
            .flat_map(|(k, &v)| (0..ov.inn[v as usize].len() as u32).map(move |i| (k as u32, i)))
            .collect();
        let halves: Vec<bool> = vs.par_iter().map(|&v| half_at(v)).collect();
        let found: Vec<(usize, usize, Vec<Shortcut>)> = jobs
            .par_iter()
            .map(|&(k, i)| {
                let mut sc = Vec::new();
                let (k, i) = (k as usize, i as usize);
                let c = run(vs[k], halves[k], i..i + 1, collect.then_some(&mut sc));
                (k, c, sc)
            })
            .collect();
        let mut counts = vec![0usize; vs.len()];
        let mut all = Vec::new();
        for (k, c, sc) in found {
            counts[k] += c;
            all.extend(sc);
        }
        (counts, all)
    }
}

/// Whether every arc of `g` has a reverse arc of the same weight (most road graphs: every
/// street drivable both ways at the same cost). Contraction keeps an overlay symmetric when it
/// decides each pair of neighbours once for both directions, so a build of a symmetric graph
/// searches half the pairs. Rows are searched by binary search: a row out of order can only
/// make the answer "no".
fn symmetric(g: &Csr) -> bool {
    (0..g.n).into_par_iter().all(|u| {
        let row = |x: usize| g.offsets[x] as usize..g.offsets[x + 1] as usize;
        row(u).all(|e| {
            let (v, w) = (g.targets[e] as usize, g.weights[e]);
            let back = row(v);
            g.targets[back.clone()]
                .binary_search(&(u as u32))
                .is_ok_and(|i| g.weights[back.start + i] == w)
        })
    })
}

/// Whether a vertex's in- and out-lists hold the same arcs.
fn symmetric_at<S: ChWeight>(out: &[(u32, S)], inn: &[(u32, S)]) -> bool {
    out.len() == inn.len() && out.iter().all(|a| inn.contains(a))
}

/// The entries of `list` (sorted by their first field) whose first field is `x`, from `*at`
/// on; `*at` moves past them.
fn run_of<'a>(list: &'a [Shortcut], at: &mut usize, x: u32) -> &'a [Shortcut] {
    while *at < list.len() && list[*at].0 < x {
        *at += 1;
    }
    let a = *at;
    while *at < list.len() && list[*at].0 == x {
        *at += 1;
    }
    &list[a..*at]
}

/// `n` empty lists, allocated in parallel (26 million of them for a country-size graph).
fn empty_lists<T: Send>(n: usize) -> Vec<Vec<T>> {
    (0..n).into_par_iter().map(|_| Vec::new()).collect()
}

/// Set the arc to `x` to `min(old, w)`, or add it.
fn upsert<S: ChWeight>(list: &mut Vec<(u32, S)>, x: u32, w: S) {
    match list.iter_mut().find(|a| a.0 == x) {
        Some(a) => a.1 = a.1.min(w),
        None => list.push((x, w)),
    }
}

/// Witness searches settle at most this many vertices when they only estimate a priority
/// (the contraction itself searches up to `settle_limit`). Measured on osm-moscow: priorities
/// from 30-vertex searches gave the same shortcuts per arc and upward search space as 300, with
/// half the build's witness-search work, which the priority updates of the dense late rounds
/// dominate.
pub const SIMULATION_SETTLE_LIMIT: u32 = 30;

/// A vertex whose neighbours were contracted is simulated again (its shortcut estimate
/// renewed) only when its degree changed by more than this percentage since its last
/// simulation, or it has at most 8 arcs and their number changed at all; otherwise its priority
/// takes the new degree and level with the old estimate. The hubs of the late rounds lose a
/// neighbour in almost every round; re-simulating each of them every time was two thirds of the
/// build's witness-search work on osm-moscow. 10% removed 40% of that work with 0.4% more
/// shortcuts and a smaller upward search; 25% cost 3% more shortcuts and 40% more levels.
/// A small vertex whose contracted neighbour left a shortcut in its place (a street's middle
/// vertex: two arcs before and after) keeps its estimate: simulating every touched small vertex
/// again was 84% of the first round's simulations; skipping the unchanged ones made the K = 8
/// tiling's build 13% faster (61.5 -> 53.4 s on 16 cores) for 1.8% more shortcuts (0.950 ->
/// 0.968 per arc) and a smaller upward search (258 -> 257; osm-moscow 252 -> 245).
pub const RESIMULATE_PERCENT: usize = 10;

impl<W: ChWeight> Hierarchy<W> {
    /// Build the hierarchy of `g`. With a `budget`, the build stops with [`ChError::Poor`]
    /// as soon as the shortcuts or the witness-search work pass it (`None` = no limit).
    ///
    /// Exact for any non-negative weights; deterministic (independent of the thread count).
    pub fn build(g: &Csr, p: &ChParams, budget: Option<Budget>) -> Result<Hierarchy<W>, ChError> {
        let cap = g.distance_bound().min(u64::MAX as u128 - 1) as u64;
        if cap < u32::MAX as u64 {
            build_with::<W, u32>(g, p, budget, cap)
        } else {
            build_with::<W, u64>(g, p, budget, cap)
        }
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

/// Progress of a long build at the default verbosity (`stage` lines): one when it starts (a
/// graph of [`ANNOUNCE_ARCS`] arcs or more, or any build still running after a second), then
/// one every [`PROGRESS_EVERY`], then one when it ends.
struct Progress<'a> {
    name: &'a str,
    n: usize,
    m: usize,
    t0: Instant,
    last: Option<Instant>,
}

/// Arcs from which a build says that it starts before it starts (osm-moscow's 0.9 million
/// took 2.45 s on 16 cores before this builder).
pub const ANNOUNCE_ARCS: usize = 500_000;
/// Time between two progress lines of a build.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

impl Progress<'_> {
    fn start(&mut self) {
        tracing::info!(
            target: "stage",
            "{}: building the contraction hierarchy ({} vertices, {} arcs; cached for later runs)",
            self.name,
            self.n,
            self.m
        );
        self.last = Some(Instant::now());
    }
    fn round(&mut self, done: usize, shortcuts: u64, round: u32) {
        let due = match self.last {
            None => self.t0.elapsed() >= Duration::from_secs(1),
            Some(t) => t.elapsed() >= PROGRESS_EVERY,
        };
        if !due {
            return;
        }
        if self.last.is_none() {
            self.start();
        }
        tracing::info!(
            target: "stage",
            "{}: contraction hierarchy: {done}/{} vertices contracted ({:.1}%) in {round} rounds, \
             {shortcuts} shortcuts, {:.1} s",
            self.name,
            self.n,
            100.0 * done as f64 / self.n.max(1) as f64,
            self.t0.elapsed().as_secs_f64()
        );
        self.last = Some(Instant::now());
    }
    fn end(&self, shortcuts: u64) {
        if self.last.is_some() {
            tracing::info!(
                target: "stage",
                "{}: contraction hierarchy built in {:.1} s ({shortcuts} shortcuts)",
                self.name,
                self.t0.elapsed().as_secs_f64()
            );
        }
    }
}

/// [`Hierarchy::build`] with the overlay's weights in `S` (which holds `cap`).
fn build_with<W: ChWeight, S: ChWeight>(
    g: &Csr,
    p: &ChParams,
    budget: Option<Budget>,
    cap: u64,
) -> Result<Hierarchy<W>, ChError> {
    let n = g.n;
    let mut progress = Progress {
        name: &g.name,
        n,
        m: g.m(),
        t0: Instant::now(),
        last: None,
    };
    if g.m() >= ANNOUNCE_ARCS {
        progress.start();
    }
    let mut c = Contraction::<S>::start(g, p, budget, cap)?;
    while !c.remaining.is_empty() {
        progress.round(n - c.remaining.len(), c.shortcuts, c.round);
        c.contract_round()?;
    }
    let h = c.finish::<W>(g);
    if let Ok(h) = &h {
        progress.end(h.info.shortcuts);
    }
    h
}

/// An overlay arc's weight in `S`.
#[inline]
fn overlay_weight<S: ChWeight>(w: u32) -> S {
    // Arc weights are at most the distance bound, which S holds.
    S::from_u64(w as u64).expect("an arc weight fits the overlay")
}

/// The overlay of `g` before any contraction, and whether it is symmetric ([`symmetric`]).
fn overlay_of<S: ChWeight>(g: &Csr) -> (Overlay<S>, bool) {
    let n = g.n;
    // The overlay's lists, each allocated with its exact size; in-lists from the transpose.
    let out: Vec<Vec<(u32, S)>> = (0..n)
        .into_par_iter()
        .map(|u| {
            let (a, b) = (g.offsets[u] as usize, g.offsets[u + 1] as usize);
            (a..b)
                .map(|e| (g.targets[e], overlay_weight(g.weights[e])))
                .collect()
        })
        .collect();
    let mirror = symmetric(g);
    let inn = if mirror {
        // Every in-list is its vertex's out-list.
        out.par_iter().cloned().collect()
    } else {
        in_lists(g)
    };
    (Overlay { out, inn }, mirror)
}

/// The in-lists of `g`, each allocated with its exact size.
fn in_lists<S: ChWeight>(g: &Csr) -> Vec<Vec<(u32, S)>> {
    let n = g.n;
    // The transpose by a parallel sort of (head, tail, weight): each in-list holds its
    // tails ascending.
    let mut flat: Vec<(u32, u32, S)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|u| {
            (g.offsets[u] as usize..g.offsets[u + 1] as usize)
                .map(move |e| (g.targets[e], u as u32, overlay_weight(g.weights[e])))
        })
        .collect();
    flat.par_sort_unstable_by_key(|&(v, u, w)| (v, u, w.to_u64()));
    // Where each head's run starts; each run becomes its head's list.
    let starts: Vec<usize> = (0..flat.len())
        .into_par_iter()
        .filter(|&i| i == 0 || flat[i].0 != flat[i - 1].0)
        .collect();
    let mut inn: Vec<Vec<(u32, S)>> = empty_lists(n);
    let lists = Scatter::new(&mut inn);
    starts.par_iter().enumerate().for_each(|(k, &a)| {
        let b = starts.get(k + 1).copied().unwrap_or(flat.len());
        // SAFETY: every run has its own head.
        *unsafe { lists.at(flat[a].0 as usize) } =
            flat[a..b].iter().map(|&(_, u, w)| (u, w)).collect();
    });
    inn
}

impl<S> Overlay<S> {
    /// Arcs of `x` still in the overlay, out and in.
    #[inline]
    fn degree(&self, x: u32) -> usize {
        self.out[x as usize].len() + self.inn[x as usize].len()
    }
}

/// `round_of` of a vertex not contracted yet, and `touched_at` of one no round touched yet.
const LIVE: u32 = u32::MAX;

/// A build under way: the overlay still to contract, the hierarchy's arcs and levels so far,
/// the priorities and the state of the witness searches, rewritten round by round.
struct Contraction<'a, S> {
    p: &'a ChParams,
    budget: Option<Budget>,
    cap: u64,
    n: usize,
    mirror: bool,
    /// Settle limit of the simulations that estimate priorities.
    sim: u32,
    ov: Overlay<S>,
    round_of: Vec<u32>,
    level: Vec<u32>,
    pool: Pool,
    work: Work,
    prio: Vec<i64>,
    /// Shortcuts each vertex's last simulation estimated.
    sim_added: Vec<u32>,
    /// Each vertex's degree at its last simulation.
    sim_deg: Vec<u32>,
    up: Vec<Vec<(u32, S)>>,
    down: Vec<Vec<(u32, S)>>,
    remaining: Vec<u32>,
    shortcuts: u64,
    round: u32,
    touched_at: Vec<AtomicU32>,
    blocked: Blocked,
}

/// [`ChError::Poor`] for witness-search work past its budget, `remaining` of `n` vertices
/// still to contract.
fn work_over(work: &Work, remaining: usize, n: usize) -> ChError {
    ChError::Poor {
        what: "witness-search work (arcs scanned)",
        used: work.used(),
        budget: work.budget,
        remaining,
        n,
    }
}

impl<'a, S: ChWeight> Contraction<'a, S> {
    /// The build's start: the overlay of `g`, no vertex contracted, each vertex's priority from
    /// a simulation of its contraction.
    fn start(g: &Csr, p: &'a ChParams, budget: Option<Budget>, cap: u64) -> Result<Self, ChError> {
        let n = g.n;
        let (ov, mirror) = overlay_of::<S>(g);
        let round_of = vec![LIVE; n];
        let level = vec![0u32; n];
        let pool = Pool::new();
        let work = Work {
            done: AtomicU64::new(0),
            budget: budget.map_or(u64::MAX, |b| b.work),
        };
        let sim = p.settle_limit.min(SIMULATION_SETTLE_LIMIT);
        let all: Vec<u32> = (0..n as u32).collect();
        let (added, _) = searches(&ov, &all, None, sim, p, cap, &work, &pool, false, mirror);
        let prio: Vec<i64> = added
            .iter()
            .enumerate()
            .map(|(v, &a)| priority(a, ov.out[v].len() + ov.inn[v].len(), 0))
            .collect();
        let sim_added: Vec<u32> = added.iter().map(|&a| a as u32).collect();
        // The shortcut estimate of each vertex's last simulation and its degree then: a touched
        // vertex is simulated again only when its degree moved by more than RESIMULATE_PERCENT
        // (its level and degree enter its priority at once either way).
        let sim_deg: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|v| (ov.out[v].len() + ov.inn[v].len()) as u32)
            .collect();
        drop(added);
        if work.over() {
            return Err(work_over(&work, n, n));
        }
        Ok(Contraction {
            p,
            budget,
            cap,
            n,
            mirror,
            sim,
            ov,
            round_of,
            level,
            pool,
            work,
            prio,
            sim_added,
            sim_deg,
            up: empty_lists(n),
            down: empty_lists(n),
            remaining: all,
            shortcuts: 0,
            round: 0,
            touched_at: (0..n)
                .into_par_iter()
                .map(|_| AtomicU32::new(LIVE))
                .collect(),
            blocked: Blocked((0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()),
        })
    }

    /// One round: contract an independent set of the remaining vertices, move their arcs into
    /// the hierarchy and update their neighbours; an error when the build passes its budget.
    fn contract_round(&mut self) -> Result<(), ChError> {
        let sel = self.select();
        self.mark(&sel);
        let (_, mut new) = searches(
            &self.ov,
            &sel,
            Some(&self.blocked),
            self.p.settle_limit,
            self.p,
            self.cap,
            &self.work,
            &self.pool,
            true,
            self.mirror,
        );
        let blocked = &self.blocked;
        sel.par_iter().for_each(|&v| blocked.clear(v));
        self.shortcuts += new.len() as u64;
        if let Some(b) = self.budget.filter(|b| self.shortcuts > b.shortcuts) {
            return Err(ChError::Poor {
                what: "shortcuts",
                used: self.shortcuts,
                budget: b.shortcuts,
                remaining: self.remaining.len(),
                n: self.n,
            });
        }
        if self.work.over() {
            return Err(work_over(
                &self.work,
                self.remaining.len() + sel.len(),
                self.n,
            ));
        }
        // Move the contracted vertices' arcs into the hierarchy; their neighbours (each
        // handled by one task) drop them, gain the shortcuts and rise above them in level.
        self.take_arcs(&sel);
        let touched = self.touched(&sel);
        new.par_sort_unstable();
        // The shortcuts by head, for the in-lists; in a symmetric overlay the shortcuts into
        // a vertex are the reverses of those out of it.
        let by_head = (!self.mirror).then(|| {
            let mut b: Vec<Shortcut> = new.par_iter().map(|&(u, w, via)| (w, u, via)).collect();
            b.par_sort_unstable();
            b
        });
        let by_head = by_head.as_deref().unwrap_or(&new);
        self.rewire(&touched, &new, by_head);
        drop(new);
        self.resimulate(&touched);
        if self.work.over() {
            return Err(work_over(&self.work, self.remaining.len(), self.n));
        }
        self.round += 1;
        Ok(())
    }

    /// The round's vertices: those remaining whose key is below every neighbour's (an
    /// independent set).
    fn select(&self) -> Vec<u32> {
        let (prio, ov, mirror) = (&self.prio, &self.ov, self.mirror);
        let key = |v: u32| (prio[v as usize], tie(v), v);
        // (A symmetric overlay's in-lists are its out-lists.)
        self.remaining
            .par_iter()
            .copied()
            .filter(|&v| {
                let (k, vi) = (key(v), v as usize);
                let inn: &[(u32, S)] = if mirror { &[] } else { &ov.inn[vi] };
                ov.out[vi].iter().chain(inn).all(|&(x, _)| key(x) > k)
            })
            .collect()
    }

    /// Mark the round's vertices `sel` contracted in this round and blocked for its witness
    /// searches; they leave `remaining`.
    fn mark(&mut self, sel: &[u32]) {
        let (blocked, round) = (&self.blocked, self.round);
        {
            let r = Scatter::new(&mut self.round_of);
            sel.par_iter().for_each(|&v| {
                // SAFETY: the vertices of `sel` are distinct.
                *unsafe { r.at(v as usize) } = round;
                blocked.set(v);
            });
        }
        let round_of = &self.round_of;
        self.remaining.retain(|&v| round_of[v as usize] != round);
    }

    /// Move the overlay's lists of the round's vertices `sel` into the hierarchy's.
    fn take_arcs(&mut self, sel: &[u32]) {
        let (uo, dn) = (Scatter::new(&mut self.up), Scatter::new(&mut self.down));
        let (oo, oi) = (
            Scatter::new(&mut self.ov.out),
            Scatter::new(&mut self.ov.inn),
        );
        sel.par_iter().for_each(|&v| {
            let vi = v as usize;
            // SAFETY: the vertices of `sel` are distinct.
            unsafe {
                *uo.at(vi) = std::mem::take(oo.at(vi));
                *dn.at(vi) = std::mem::take(oi.at(vi));
            }
        });
    }

    /// The neighbours of the round's vertices `sel`, ascending.
    fn touched(&self, sel: &[u32]) -> Vec<u32> {
        let (up, down, touched_at, round) = (&self.up, &self.down, &self.touched_at, self.round);
        // Each neighbour once (the first to swap in this round's number keeps it).
        let mut touched: Vec<u32> = sel
            .par_iter()
            .flat_map_iter(|&v| up[v as usize].iter().chain(&down[v as usize]))
            .map(|&(x, _)| x)
            .filter(|&x| touched_at[x as usize].swap(round, Ordering::Relaxed) != round)
            .collect();
        touched.par_sort_unstable();
        touched
    }

    /// The `touched` neighbours drop their arcs to this round's vertices, gain the shortcuts
    /// `new` (sorted by tail) and `by_head` (sorted by head) and rise above them in level.
    fn rewire(&mut self, touched: &[u32], new: &[Shortcut], by_head: &[Shortcut]) {
        // The touched vertices are distinct and none was contracted this round (the
        // round is an independent set), so each task rewrites its own vertex's lists and
        // level and reads only the contracted vertices' levels.
        let (oo, oi) = (
            Scatter::new(&mut self.ov.out),
            Scatter::new(&mut self.ov.inn),
        );
        let lvs = Scatter::new(&mut self.level);
        let (round_of, round) = (&self.round_of, self.round);
        let gone = |y: u32| round_of[y as usize] == round;
        let s = |via: u64| S::from_u64(via).expect("a shortcut fits the overlay");
        // `touched`, `new` and `by_head` are sorted by vertex: a chunk of touched vertices
        // finds its first shortcuts by binary search, then walks on.
        touched.par_chunks(1024).for_each(|xs| {
            let from = |list: &[Shortcut]| list.partition_point(|t| t.0 < xs[0]);
            let (mut a, mut b) = (from(new), from(by_head));
            for &x in xs {
                let outs = run_of(new, &mut a, x);
                let ins = run_of(by_head, &mut b, x);
                let xi = x as usize;
                // SAFETY: `touched` holds distinct vertices, and the contracted vertices
                // whose levels are read below are not among them (shared reads only).
                let (o, i, lv) = unsafe { (oo.at(xi), oi.at(xi), lvs.at(xi)) };
                for &(y, _) in o.iter().chain(i.iter()) {
                    if gone(y) {
                        // SAFETY: `y` was contracted this round, so it is not in `touched`
                        // and no task holds it.
                        *lv = (*lv).max(unsafe { lvs.get(y as usize) } + 1);
                    }
                }
                o.retain(|&(y, _)| !gone(y));
                i.retain(|&(y, _)| !gone(y));
                for &(_, w, via) in outs {
                    upsert(o, w, s(via));
                }
                for &(_, u, via) in ins {
                    upsert(i, u, s(via));
                }
            }
        });
    }

    /// New priorities of the `touched` neighbours, simulating again those whose degree moved
    /// enough ([`RESIMULATE_PERCENT`]).
    fn resimulate(&mut self, touched: &[u32]) {
        let ov = &self.ov;
        let deg = |x: u32| ov.degree(x);
        let sim_deg = &self.sim_deg;
        let stale: Vec<u32> = touched
            .par_iter()
            .copied()
            .filter(|&x| {
                let (now, then) = (deg(x), sim_deg[x as usize] as usize);
                let tol = RESIMULATE_PERCENT;
                (now <= 8 && now != then)
                    || now * 100 < then * (100 - tol)
                    || now * 100 > then * (100 + tol)
            })
            .collect();
        let (added, _) = searches(
            ov,
            &stale,
            None,
            self.sim,
            self.p,
            self.cap,
            &self.work,
            &self.pool,
            false,
            self.mirror,
        );
        {
            let (sa, sd) = (
                Scatter::new(&mut self.sim_added),
                Scatter::new(&mut self.sim_deg),
            );
            stale.par_iter().zip(&added).for_each(|(&x, &a)| {
                // SAFETY: `stale` holds distinct vertices.
                unsafe {
                    *sa.at(x as usize) = a as u32;
                    *sd.at(x as usize) = deg(x) as u32;
                }
            });
        }
        {
            let (sim_added, level) = (&self.sim_added, &self.level);
            let pr = Scatter::new(&mut self.prio);
            touched.par_iter().for_each(|&x| {
                let xi = x as usize;
                // SAFETY: `touched` holds distinct vertices.
                *unsafe { pr.at(xi) } = priority(sim_added[xi] as usize, deg(x), level[xi]);
            });
        }
    }

    /// The hierarchy of the finished build: the overlay's state dropped, the vertices
    /// renumbered and the arcs laid out ([`assemble`]).
    fn finish<W: ChWeight>(self, g: &Csr) -> Result<Hierarchy<W>, ChError> {
        let Contraction {
            n,
            ov,
            round_of,
            level,
            pool,
            prio,
            up,
            down,
            shortcuts,
            round,
            touched_at,
            blocked,
            ..
        } = self;
        drop((pool, ov, prio, round_of, touched_at, blocked));
        assemble(
            n,
            up,
            down,
            &level,
            &breadth_first(g),
            ChInfo {
                arcs: g.m() as u64,
                shortcuts,
                rounds: round,
            },
        )
    }
}

/// Breadth-first ranks over the input's arcs, a search from each vertex not yet reached in id
/// order: vertices near each other in the graph get near ranks. The sweep orders each level by
/// them, so the vertices in flight together pull over shared tails, whose distance rows are
/// then still in the device's cache (`benches/sweep_bytes.rs` models the traffic: on osm-moscow
/// 20% fewer tail rows missed than in id order).
pub fn breadth_first(g: &Csr) -> Vec<u32> {
    let mut rank = vec![u32::MAX; g.n];
    let mut queue = std::collections::VecDeque::new();
    let mut next = 0u32;
    for s in 0..g.n {
        if rank[s] != u32::MAX {
            continue;
        }
        rank[s] = next;
        next += 1;
        queue.push_back(s as u32);
        while let Some(u) = queue.pop_front() {
            let (a, b) = (
                g.offsets[u as usize] as usize,
                g.offsets[u as usize + 1] as usize,
            );
            for &v in &g.targets[a..b] {
                if rank[v as usize] == u32::MAX {
                    rank[v as usize] = next;
                    next += 1;
                    queue.push_back(v);
                }
            }
        }
    }
    rank
}

/// Renumber into sweep order (by level, top first; within a level by `rank`) and lay the arcs
/// out as CSR over positions.
fn assemble<W: ChWeight, S: ChWeight>(
    n: usize,
    up: Vec<Vec<(u32, S)>>,
    down: Vec<Vec<(u32, S)>>,
    level: &[u32],
    rank: &[u32],
    info: ChInfo,
) -> Result<Hierarchy<W>, ChError> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.par_sort_unstable_by_key(|&v| (Reverse(level[v as usize]), rank[v as usize]));
    let mut pos = vec![0u32; n];
    {
        let ps = Scatter::new(&mut pos);
        order.par_iter().enumerate().for_each(|(p, &v)| {
            // SAFETY: `order` is a permutation: each vertex once.
            *unsafe { ps.at(v as usize) } = p as u32;
        });
    }
    let mut levels = vec![0u32];
    levels.par_extend(
        (1..n as u32).into_par_iter().filter(|&p| {
            level[order[p as usize] as usize] != level[order[p as usize - 1] as usize]
        }),
    );
    levels.push(n as u32);
    if n == 0 {
        levels = vec![0];
    }
    let total: usize = up.par_iter().chain(&down).map(Vec::len).sum();
    if total > u32::MAX as usize {
        return Err(ChError::Unfit(format!(
            "{total} arcs do not fit 32-bit offsets"
        )));
    }
    type Layout<W> = (Vec<u32>, Vec<u32>, Vec<W>);
    // Rows in parallel: offsets from the lengths, then each position writes its own range.
    let layout = |lists: Vec<Vec<(u32, S)>>| -> Layout<W> {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        let lens: Vec<u32> = order
            .par_iter()
            .map(|&v| lists[v as usize].len() as u32)
            .collect();
        let mut at = 0u32;
        offsets.extend(lens.iter().map(|&l| {
            at += l;
            at
        }));
        drop(lens);
        let mut heads = vec![0u32; at as usize];
        let mut weights = vec![W::ZERO; at as usize];
        {
            let (hs, ws) = (Scatter::new(&mut heads), Scatter::new(&mut weights));
            order.par_iter().enumerate().for_each_init(
                Vec::new,
                |row: &mut Vec<(u32, u64)>, (p, &v)| {
                    row.clear();
                    row.extend(
                        lists[v as usize]
                            .iter()
                            .map(|&(x, w)| (pos[x as usize], w.to_u64())),
                    );
                    row.sort_unstable();
                    for (e, &(q, w)) in (offsets[p] as usize..).zip(row.iter()) {
                        // SAFETY: position p's range of the arrays is its own.
                        unsafe {
                            *hs.at(e) = q;
                            // A u32 hierarchy keeps a weight above CEIL as CEIL (a path
                            // over it then overflows u32, and its tree is redone in u64).
                            *ws.at(e) = W::capped(w);
                        }
                    }
                },
            );
        }
        lists.into_par_iter().for_each(drop);
        (offsets, heads, weights)
    };
    let (up_offsets, up_heads, up_weights) = layout(up);
    let (down_offsets, down_tails, down_weights) = layout(down);
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
pub(crate) mod test;
