//! The CPU half of PHAST: k shortest-path trees at once over a [`Hierarchy`].
//!
//! Per batch of at most k sources: one upward Dijkstra per source (over the upward graph, into
//! a small per-worker array, reset through its touched list), whose settled vertices become
//! *seeds* sorted by position; then one sweep over positions 0..n that sets, for all k trees
//! at once, `d[p·k + j] = min(seed, min over incoming downward arcs (q, w) of d[q·k + j] + w)`.
//! Distances are vertex-major, so each arc read serves k trees and the k-lane minimum is one or
//! two vector instructions: the inner loop is written over a fixed-size array `[W; K]` (K a
//! const parameter) so that LLVM vectorizes it, and on x86-64 the sweep is compiled a second
//! time with AVX2 and chosen at run time (the x86-64 baseline has no packed unsigned 32-bit
//! minimum). Unreachable stays `INF` through saturating additions.
//!
//! Complexity per batch: O(k·(S log S) + n·k + a·k), S the upward search space, a the
//! hierarchy's downward arcs. Memory: n·k distances.

use super::ch::{ChWeight, Hierarchy};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Trees per batch the sweep is compiled for.
pub const SUPPORTED_K: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Per-worker PHAST state, reused across batches.
#[derive(Debug)]
pub struct Sweeper<'h, W: ChWeight> {
    /// The hierarchy the upward searches run on.
    h: &'h Hierarchy<W>,
    /// The hierarchy swept: `h`, or a selection of it toward fixed targets
    /// ([`super::restrict`]), whose positions `local` maps `h`'s to.
    swept_h: &'h Hierarchy<W>,
    local: Option<&'h [u32]>,
    k: usize,
    /// Trees of the last batch.
    lanes: usize,
    /// `d[p*k + j]`: distance of tree j to the vertex at position p.
    d: Vec<W>,
    /// Upward search: distances by position (INF outside the touched list).
    up: Vec<W>,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<(W, u32)>>,
    /// (position, lane, distance) from the upward searches, sorted by position.
    seeds: Vec<(u32, u32, W)>,
    /// Per-lane summaries over every vertex, tallied during the last sweep (if it did; its
    /// distances past `stored` were then not written).
    fused: Option<Vec<[u64; 4]>>,
    /// Positions below this are read by some downward arc (one past the largest tail).
    stored: usize,
    /// A sweep has run (`d` holds zeros before).
    swept: bool,
}

impl<'h, W: ChWeight> Sweeper<'h, W> {
    /// State for batches of up to `k` trees (`k` one of [`SUPPORTED_K`]) over `h`.
    pub fn new(h: &'h Hierarchy<W>, k: usize) -> tuccompi::Result<Self> {
        Self::over(h, h, None, k)
    }

    /// State for batches of up to `k` trees over `h` that sweep only `sub`, the selection of
    /// `h` toward a set of targets ([`super::restrict::Selection`]: `local` maps `h`'s
    /// positions to `sub`'s). Only the distances to the selected vertices are defined
    /// afterwards ([`Self::dist`] and [`Self::row`] at the targets).
    pub fn restricted(
        h: &'h Hierarchy<W>,
        sub: &'h Hierarchy<W>,
        local: &'h [u32],
        k: usize,
    ) -> tuccompi::Result<Self> {
        assert_eq!(local.len(), h.n, "a selection of another hierarchy");
        Self::over(h, sub, Some(local), k)
    }

    fn over(
        h: &'h Hierarchy<W>,
        swept_h: &'h Hierarchy<W>,
        local: Option<&'h [u32]>,
        k: usize,
    ) -> tuccompi::Result<Self> {
        if !SUPPORTED_K.contains(&k) {
            return Err(tuccompi::Error::Config(format!(
                "PHAST trees at once = {k}: use one of {SUPPORTED_K:?}"
            )));
        }
        Ok(Sweeper {
            h,
            swept_h,
            local,
            k,
            lanes: 0,
            // Every sweep writes a position's row before any arc reads it: no fill needed.
            // The pages are the OS's on first touch: [`Self::touch`] takes them before a run.
            d: tuccompi::zeros(swept_h.n * k, "PHAST distances (n x trees at once)")?,
            up: tuccompi::filled(h.n, W::INF, "PHAST upward search")?,
            touched: Vec::new(),
            heap: BinaryHeap::new(),
            seeds: Vec::new(),
            fused: None,
            stored: swept_h
                .down_tails
                .iter()
                .max()
                .map_or(0, |&q| q as usize + 1),
            swept: false,
        })
    }

    /// Write the distances a sweep writes (with `tally`, those of the positions some arc reads;
    /// else all), so that their pages are mapped now rather than during the first sweep: the
    /// runtime makes every worker before its run's clock starts, and a first sweep that maps
    /// n·k distances' pages took 2-3 times as long as the later ones. O(n·k).
    pub fn touch(&mut self, tally: bool) {
        let positions = if tally { self.stored } else { self.swept_h.n };
        self.d[..positions * self.k].fill(W::ZERO);
    }

    /// Trees per batch.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The hierarchy.
    pub fn hierarchy(&self) -> &'h Hierarchy<W> {
        self.h
    }

    /// Grow shortest-path trees from `sources` (vertex ids of the input CSR, at most k): lane
    /// j holds the tree of `sources[j]`; lanes past `sources.len()` are all INF. Every
    /// distance is kept, for [`Self::dist`], [`Self::row`] and [`Self::summarize`].
    pub fn run(&mut self, sources: &[u32]) {
        self.run_with(sources, false);
    }

    /// [`Self::run`]; with `tally`, only the summaries over every vertex are wanted: the sweep
    /// tallies them itself and skips writing the distances nobody reads, so afterwards only
    /// [`Self::summarize`] with no targets may be asked.
    pub fn run_with(&mut self, sources: &[u32], tally: bool) {
        assert!(sources.len() <= self.k, "more sources than trees at once");
        assert!(
            !(tally && self.local.is_some()),
            "summaries over every vertex from a restricted sweep"
        );
        self.lanes = sources.len();
        self.swept = true;
        self.seeds.clear();
        for (j, &s) in sources.iter().enumerate() {
            self.upward(j as u32, self.h.pos[s as usize]);
        }
        if let Some(local) = self.local {
            // Seeds outside the selection reach no target.
            self.seeds.retain_mut(|s| {
                s.0 = local[s.0 as usize];
                s.0 != u32::MAX
            });
        }
        self.seeds.sort_unstable_by_key(|s| (s.0, s.1));
        let (h, d, seeds, stored) = (self.swept_h, &mut self.d[..], &self.seeds[..], self.stored);
        self.fused = match self.k {
            1 => sweep_k::<W, 1>(tally, h, d, seeds, stored),
            2 => sweep_k::<W, 2>(tally, h, d, seeds, stored),
            4 => sweep_k::<W, 4>(tally, h, d, seeds, stored),
            8 => sweep_k::<W, 8>(tally, h, d, seeds, stored),
            16 => sweep_k::<W, 16>(tally, h, d, seeds, stored),
            32 => sweep_k::<W, 32>(tally, h, d, seeds, stored),
            _ => unreachable!("k checked in new"),
        };
    }

    /// Dijkstra from position `ps` over upward arcs, stalled on demand; settled positions
    /// become seeds of lane j.
    fn upward(&mut self, j: u32, ps: u32) {
        let h = self.h;
        self.up[ps as usize] = W::ZERO;
        self.touched.push(ps);
        self.heap.push(Reverse((W::ZERO, ps)));
        while let Some(Reverse((dp, p))) = self.heap.pop() {
            if dp != self.up[p as usize] {
                continue;
            }
            // Stall on demand: a higher vertex reaches p by a downward arc for less, so p's
            // distance is not this one, and the sweep pulls the right one over that arc;
            // nothing above p is reached for less through p either.
            let (a, b) = (
                h.down_offsets[p as usize] as usize,
                h.down_offsets[p as usize + 1] as usize,
            );
            let up = &self.up;
            if h.down_tails[a..b]
                .iter()
                .zip(&h.down_weights[a..b])
                .any(|(&q, &w)| up[q as usize].sat_add(w) < dp)
            {
                continue;
            }
            self.seeds.push((p, j, dp));
            let (a, b) = (
                h.up_offsets[p as usize] as usize,
                h.up_offsets[p as usize + 1] as usize,
            );
            for (&q, &w) in h.up_heads[a..b].iter().zip(&h.up_weights[a..b]) {
                let nd = dp.sat_add(w);
                let dq = &mut self.up[q as usize];
                if nd < *dq {
                    if *dq == W::INF {
                        self.touched.push(q);
                    }
                    *dq = nd;
                    self.heap.push(Reverse((nd, q)));
                }
            }
        }
        for &p in &self.touched {
            self.up[p as usize] = W::INF;
        }
        self.touched.clear();
    }

    /// Distance of tree `j` of the last batch to vertex `v` (input CSR id).
    pub fn dist(&self, j: usize, v: u32) -> W {
        assert!(self.fused.is_none(), "distances of a summaries-only sweep");
        assert!(self.swept, "distances before any sweep");
        let p = self.swept_h.pos[v as usize];
        debug_assert!(p != u32::MAX, "vertex {v} is outside the restricted sweep");
        self.d[p as usize * self.k + j]
    }

    /// Per-tree records `[reached, sum_lo, sum_hi, max]` of the last batch over `targets`
    /// (sweep positions; `None` = every vertex), into `records[j]` for each lane.
    pub fn summarize(&self, targets: Option<&[u32]>, records: &mut [[u64; 4]]) {
        assert!(self.swept, "summaries before any sweep");
        let (d, t) = (&self.d[..], targets);
        if let Some(acc) = &self.fused {
            assert!(targets.is_none(), "targets after a summaries-only sweep");
            records[..self.lanes].copy_from_slice(&acc[..self.lanes]);
            return;
        }
        assert!(
            t.is_some() || self.local.is_none(),
            "summaries over every vertex from a restricted sweep"
        );
        let n = self.swept_h.n;
        let acc = match self.k {
            1 => Tally::<1>::over(d, t, n),
            2 => Tally::<2>::over(d, t, n),
            4 => Tally::<4>::over(d, t, n),
            8 => Tally::<8>::over(d, t, n),
            16 => Tally::<16>::over(d, t, n),
            32 => Tally::<32>::over(d, t, n),
            _ => unreachable!("k checked in new"),
        };
        for (j, r) in records.iter_mut().enumerate().take(self.lanes) {
            *r = [acc[j][0], acc[j][1], acc[j][2], acc[j][3]];
        }
    }

    /// The last batch's distances at the sweep positions `tpos` (of the hierarchy swept: see
    /// [`Self::swept_pos`]), tree-major: `out[j·T + i]` is tree `j`'s distance to `tpos[i]`
    /// (T = `tpos.len()`). One read of a position's k lanes serves every tree.
    pub fn gather(&self, tpos: &[u32], out: &mut Vec<W>) {
        assert!(self.fused.is_none(), "distances of a summaries-only sweep");
        assert!(self.swept, "distances before any sweep");
        let (t, k, lanes) = (tpos.len(), self.k, self.lanes);
        out.clear();
        out.resize(t * lanes, W::INF);
        for (i, &p) in tpos.iter().enumerate() {
            let row = &self.d[p as usize * k..p as usize * k + lanes];
            for (j, &x) in row.iter().enumerate() {
                out[j * t + i] = x;
            }
        }
    }

    /// The sweep position of each vertex id in the hierarchy swept (`u32::MAX` outside a
    /// restricted sweep's selection).
    pub fn swept_pos(&self) -> &'h [u32] {
        &self.swept_h.pos
    }

    /// Distance row of tree `j` of the last batch in the input's numbering: `row[i]` is the
    /// distance to vertex `targets[i]` (vertex ids), or to vertex `i` when `targets` is `None`.
    pub fn row(&self, j: usize, targets: Option<&[u32]>, row: &mut Vec<W>) {
        assert!(self.fused.is_none(), "distances of a summaries-only sweep");
        assert!(self.swept, "distances before any sweep");
        row.clear();
        let (pos, k) = (&self.swept_h.pos, self.k);
        match targets {
            None if self.local.is_some() => panic!("a whole row from a restricted sweep"),
            None => row.extend(pos.iter().map(|&p| self.d[p as usize * k + j])),
            Some(t) => row.extend(t.iter().map(|&v| self.d[pos[v as usize] as usize * k + j])),
        }
    }
}

/// Per-lane reached count, 128-bit sum (low word and carries) and maximum, branch-free over
/// `[W; K]` rows so that it vectorizes like the sweep.
struct Tally<const K: usize>;

impl<const K: usize> Tally<K> {
    fn over<W: ChWeight>(d: &[W], targets: Option<&[u32]>, n: usize) -> Vec<[u64; 4]> {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above; the answer is cached).
            return unsafe { Self::over_avx2(d, targets, n) };
        }
        Self::over_portable(d, targets, n)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn over_avx2<W: ChWeight>(d: &[W], targets: Option<&[u32]>, n: usize) -> Vec<[u64; 4]> {
        Self::over_portable(d, targets, n)
    }

    #[inline(always)]
    fn over_portable<W: ChWeight>(d: &[W], targets: Option<&[u32]>, n: usize) -> Vec<[u64; 4]> {
        let mut t = Lanes::<W, K>::default();
        // Plain loops, no closure: a closure would be compiled apart, without AVX2.
        match targets {
            None => {
                for row in d[..n * K].chunks_exact(K) {
                    t.add(row.try_into().expect("K lanes"));
                }
            }
            Some(ts) => {
                for &p in ts {
                    let p = p as usize;
                    t.add(d[p * K..p * K + K].try_into().expect("K lanes"));
                }
            }
        }
        t.records()
    }
}

/// Running per-lane summary: counts and maxima in the distances' own lane width, sums in 64
/// bits (plus carries for 64-bit distances), so that a row of K lanes takes a few vector
/// instructions.
struct Lanes<W, const K: usize> {
    reached: [u32; K],
    lo: [u64; K],
    hi: [u64; K],
    max: [W; K],
}

impl<W: ChWeight, const K: usize> Default for Lanes<W, K> {
    fn default() -> Self {
        Lanes {
            reached: [0; K],
            lo: [0; K],
            hi: [0; K],
            max: [W::ZERO; K],
        }
    }
}

impl<W: ChWeight, const K: usize> Lanes<W, K> {
    /// Add one vertex's K distances. The count fits u32 (positions are u32). With 32-bit
    /// distances the 64-bit sum cannot overflow (fewer than 2^32 vertices, each below 2^32),
    /// so the carry is compiled out.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // one lane index over five arrays in step
    fn add(&mut self, row: &[W; K]) {
        let wide = std::mem::size_of::<W>() > 4;
        for j in 0..K {
            let ok = row[j] != W::INF;
            let x = if ok { row[j] } else { W::ZERO };
            self.reached[j] += ok as u32;
            if wide {
                let (s, carry) = self.lo[j].overflowing_add(x.to_u64());
                self.lo[j] = s;
                self.hi[j] += carry as u64;
            } else {
                self.lo[j] += x.to_u64();
            }
            self.max[j] = self.max[j].max(x);
        }
    }

    /// `[reached, sum_lo, sum_hi, max]` per lane.
    fn records(&self) -> Vec<[u64; 4]> {
        (0..K)
            .map(|j| {
                [
                    self.reached[j] as u64,
                    self.lo[j],
                    self.hi[j],
                    self.max[j].to_u64(),
                ]
            })
            .collect()
    }
}

/// [`sweep_dispatch`] for K trees, with the tally or without.
fn sweep_k<W: ChWeight, const K: usize>(
    tally: bool,
    h: &Hierarchy<W>,
    d: &mut [W],
    seeds: &[(u32, u32, W)],
    stored: usize,
) -> Option<Vec<[u64; 4]>> {
    if tally {
        sweep_dispatch::<W, K, true>(h, d, seeds, stored)
    } else {
        sweep_dispatch::<W, K, false>(h, d, seeds, stored)
    }
}

/// The sweep with AVX2 where the CPU has it, else the baseline build. With `TALLY` it returns
/// the per-lane summaries over every vertex and leaves the distances of positions `stored..n`
/// unwritten (no downward arc reads them).
fn sweep_dispatch<W: ChWeight, const K: usize, const TALLY: bool>(
    h: &Hierarchy<W>,
    d: &mut [W],
    seeds: &[(u32, u32, W)],
    stored: usize,
) -> Option<Vec<[u64; 4]>> {
    let mut lanes = Lanes::<W, K>::default();
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above; the answer is cached).
        unsafe { sweep_avx2::<W, K, TALLY>(h, d, seeds, &mut lanes, stored) };
        return TALLY.then(|| lanes.records());
    }
    sweep::<W, K, TALLY>(h, d, seeds, &mut lanes, stored);
    TALLY.then(|| lanes.records())
}

/// [`sweep`] compiled for AVX2 (8 u32 or 4 u64 lanes per instruction).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sweep_avx2<W: ChWeight, const K: usize, const TALLY: bool>(
    h: &Hierarchy<W>,
    d: &mut [W],
    seeds: &[(u32, u32, W)],
    lanes: &mut Lanes<W, K>,
    stored: usize,
) {
    sweep::<W, K, TALLY>(h, d, seeds, lanes, stored);
}

/// One pass over positions 0..n for K trees: seeds, then the minimum over incoming downward
/// arcs. Every tail q of an arc into p has q < p, so `d[q]` is final when p is reached.
///
/// With `TALLY` (summaries over every vertex, no distance rows wanted), the positions from
/// `stored` on, which no arc reads (the bottom level: about half the vertices of a road
/// graph), are tallied in registers and never written; the written part is tallied by a
/// streaming pass afterwards. That spares a write and a read of their n·K distances.
#[inline(always)]
fn sweep<W: ChWeight, const K: usize, const TALLY: bool>(
    h: &Hierarchy<W>,
    d: &mut [W],
    seeds: &[(u32, u32, W)],
    lanes: &mut Lanes<W, K>,
    stored: usize,
) {
    let store = if TALLY { stored } else { h.n };
    let mut next = 0usize;
    for p in 0..store {
        let acc = relax::<W, K>(h, d, seeds, &mut next, p);
        d[p * K..p * K + K].copy_from_slice(&acc);
    }
    if TALLY {
        for p in store..h.n {
            let acc = relax::<W, K>(h, d, seeds, &mut next, p);
            lanes.add(&acc);
        }
        for row in d[..store * K].chunks_exact(K) {
            lanes.add(row.try_into().expect("K lanes"));
        }
    }
}

/// The K distances of position `p`: its seeds (from `seeds[*next..]`, sorted by position),
/// then the minimum over its incoming downward arcs.
#[inline(always)]
fn relax<W: ChWeight, const K: usize>(
    h: &Hierarchy<W>,
    d: &[W],
    seeds: &[(u32, u32, W)],
    next: &mut usize,
    p: usize,
) -> [W; K] {
    let mut acc = [W::INF; K];
    while *next < seeds.len() && seeds[*next].0 as usize == p {
        let (_, j, x) = seeds[*next];
        acc[j as usize] = acc[j as usize].min(x);
        *next += 1;
    }
    let (a, b) = (h.down_offsets[p] as usize, h.down_offsets[p + 1] as usize);
    for (&q, &w) in h.down_tails[a..b].iter().zip(&h.down_weights[a..b]) {
        let src: &[W; K] = d[q as usize * K..q as usize * K + K]
            .try_into()
            .expect("K lanes");
        for j in 0..K {
            acc[j] = acc[j].min(src[j].sat_add(w));
        }
    }
    acc
}

#[cfg(test)]
mod test;
