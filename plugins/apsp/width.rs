//! The distance width of an apsp run: u32 unless a tree really overflows.
//!
//! Every algorithm computes in u32 with sums that saturate at [`Dist::CEIL`] (one below the
//! unreachable mark): it then yields `min(true distance, CEIL)` exactly, so a tree whose
//! summary's maximum equals `CEIL` is one with an output distance of at least `2^32 - 2`, and
//! only those trees are redone, in u64, by a host Dijkstra ([`Redo`]). The check costs nothing:
//! the maximum is part of the summary every unit computes anyway.
//!
//! The run computes in u64 from the start only when that is proven cheaply to pay: when half
//! or more of a sample of the run's sources have an output vertex so many arcs away that even
//! the lightest arcs sum past `CEIL` (a breadth-first search each; [`choose`]). Rows
//! (`distances.npy`) are u64 whenever some distance may not fit u32 (`n · max_weight >=
//! u32::MAX`, [`needs_wide`]), so that one run writes one consistent file; a u32 tree's row is
//! widened as it is written.

use super::targets::finish_row;
use super::ApspJob;
use crate::apsp::dijkstra::Dijkstra;
use crate::common::{needs_wide, Dist, PathSummary, NARROW_CEIL};
use crate::graph::Csr;
use tuccompi::sink::NpyType;
use tuccompi::Result;

/// Sources [`choose`] examines at most.
const SAMPLES: usize = 8;

/// The widths of a run.
#[derive(Debug, Clone)]
pub struct Width {
    /// The trees are computed in u64 from the start.
    pub wide: bool,
    /// Element type of `distances.npy`.
    pub rows: NpyType,
    /// Why (for the report).
    pub reason: String,
}

/// The widths for trees from `sources` (internal ids) over `targets` (`None` = every vertex).
///
/// Complexity: O(m) for the lightest arc, plus at most 8 breadth-first searches
/// (O(n + m) each) when the lightest arc times `n - 1` reaches `CEIL`.
pub fn choose(g: &Csr, sources: &[u32], targets: Option<&[u32]>) -> Width {
    let narrow = |rows, reason: String| Width {
        wide: false,
        rows,
        reason,
    };
    if !needs_wide(g.n, g.max_weight() as u64) {
        return narrow(
            NpyType::U32,
            "u32: every distance fits (n x the heaviest arc < 2^32 - 1)".into(),
        );
    }
    let min_w = g.weights.iter().copied().min().unwrap_or(0) as u64;
    // A vertex `hops` arcs away from its source (fewest arcs) is at least hops · min_w away.
    let hops = if min_w == 0 {
        u64::MAX
    } else {
        NARROW_CEIL.div_ceil(min_w)
    };
    let maybe = format!(
        "u32, trees that overflow redone in u64 (n x the heaviest arc >= 2^32 - 1, but the \
         lightest arc ({min_w}) does not prove that most trees overflow)"
    );
    if sources.is_empty() || hops >= g.n as u64 {
        return narrow(NpyType::U64, maybe);
    }
    let mut is_target = vec![targets.is_none(); g.n];
    for &t in targets.unwrap_or(&[]) {
        is_target[t as usize] = true;
    }
    let step = sources.len().div_ceil(SAMPLES);
    let sample: Vec<u32> = sources.iter().step_by(step).copied().collect();
    let mut bfs = Bfs::new(g.n);
    let proven = sample
        .iter()
        .filter(|&&s| bfs.reaches(g, s, hops as usize, &is_target))
        .count();
    if proven * 2 >= sample.len() {
        Width {
            wide: true,
            rows: NpyType::U64,
            reason: format!(
                "u64: {proven} of {} sampled sources reach a vertex {hops} or more arcs away, \
                 whose distance (arcs >= {min_w}) cannot fit u32",
                sample.len()
            ),
        }
    } else {
        narrow(NpyType::U64, maybe)
    }
}

/// Breadth-first search state, reused across sources.
struct Bfs {
    hop: Vec<u32>,
    queue: Vec<u32>,
}

impl Bfs {
    fn new(n: usize) -> Self {
        Bfs {
            hop: vec![u32::MAX; n],
            queue: Vec::with_capacity(n),
        }
    }

    /// Whether a target lies at least `hops` arcs (fewest) from `s`.
    fn reaches(&mut self, g: &Csr, s: u32, hops: usize, is_target: &[bool]) -> bool {
        for &v in &self.queue {
            self.hop[v as usize] = u32::MAX;
        }
        self.queue.clear();
        self.hop[s as usize] = 0;
        self.queue.push(s);
        let mut head = 0;
        while head < self.queue.len() {
            let u = self.queue[head] as usize;
            head += 1;
            let h = self.hop[u];
            if h as usize >= hops && is_target[u] {
                return true;
            }
            let (a, b) = (g.offsets[u] as usize, g.offsets[u + 1] as usize);
            for &v in &g.targets[a..b] {
                if self.hop[v as usize] == u32::MAX {
                    self.hop[v as usize] = h + 1;
                    self.queue.push(v);
                }
            }
        }
        false
    }
}

/// Whether a u32 tree's summary says it overflowed (and must be redone in u64).
pub fn overflowed(job: &ApspJob, s: &PathSummary) -> bool {
    !job.wide && s.max >= NARROW_CEIL
}

/// Redoes overflowed u32 trees in u64 on the host, for any unit (a CPU worker or a GPU's
/// driver thread): one Dijkstra, allocated on the first tree that needs it.
#[derive(Debug, Default)]
pub struct Redo {
    dj: Option<Dijkstra<u64>>,
    buf: Vec<u64>,
    tracer: crate::apsp::paths::Tracer,
    /// Trees this unit redid.
    pub trees: usize,
}

impl Redo {
    /// Task `t`'s record from a u64 tree, with its row written when rows are requested.
    pub fn tree(&mut self, job: &ApspJob, t: usize) -> Result<PathSummary> {
        let g = &job.graph;
        let dj = self.dj.get_or_insert_with(|| Dijkstra::new(g.n));
        let dist = dj.run(g, job.sources[t]);
        let mut s = finish_row(job, t, dist, &mut self.buf)?;
        self.tracer.tree(job, t, dist)?;
        debug_assert!(s.max < u64::CEIL);
        s.redone = true;
        self.trees += 1;
        Ok(s)
    }
}

impl Drop for Redo {
    fn drop(&mut self) {
        if self.trees > 0 {
            tracing::debug!(
                trees = self.trees,
                "trees whose u32 distances overflowed were redone in u64"
            );
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::graph::EdgeList;

    fn csr(n: usize, arcs: &[(u32, u32, i64)]) -> Csr {
        let list = EdgeList {
            n,
            arcs: arcs.to_vec(),
            ..EdgeList::default()
        };
        Csr::from_edges(&list).unwrap()
    }

    #[test]
    fn u32_plus_saturates_below_unreachable() {
        assert_eq!(5u32.plus(7), 12);
        assert_eq!((u32::MAX - 10).plus(9), u32::MAX - 1);
        assert_eq!((u32::MAX - 10).plus(u32::MAX), u32::CEIL);
        assert_eq!(u32::CEIL.plus(0), u32::CEIL);
    }

    #[test]
    fn chooses_u64_only_when_most_samples_must_overflow() {
        // Bound proven: u32 rows.
        let small = csr(3, &[(0, 1, 5), (1, 2, 5)]);
        let w = choose(&small, &[0, 1, 2], None);
        assert!(!w.wide && w.rows == NpyType::U32, "{w:?}");
        // A chain of 3e9 arcs: every source but the last two reaches 2 arcs away.
        let heavy: Vec<_> = (0..9).map(|i| (i, i + 1, 3_000_000_000)).collect();
        let w = choose(&csr(10, &heavy), &(0..10).collect::<Vec<_>>(), None);
        assert!(w.wide && w.rows == NpyType::U64, "{w:?}");
        // The same chain seen only from its end: nothing is 2 arcs away.
        let w = choose(&csr(10, &heavy), &[8, 9], None);
        assert!(!w.wide && w.rows == NpyType::U64, "{w:?}");
        // Targets next to the sources: no output is far.
        let w = choose(&csr(10, &heavy), &[0, 1], Some(&[0, 1]));
        assert!(!w.wide, "{w:?}");
        // A light arc somewhere: no proof, u32 with redo.
        let mut light = heavy.clone();
        light.push((9, 0, 1));
        let w = choose(&csr(10, &light), &(0..10).collect::<Vec<_>>(), None);
        assert!(!w.wide && w.rows == NpyType::U64, "{w:?}");
    }
}
