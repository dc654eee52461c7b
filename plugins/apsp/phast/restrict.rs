//! Target-restricted sweeps (RPHAST: Delling, Goldberg, Werneck, "Faster Batched Shortest
//! Paths in Road Networks", ATMOS 2011): when a job asks for distances to a fixed set of
//! targets only, the PHAST sweep needs only the positions a target's distance is pulled from.
//!
//! **Selection.** A target's distance is the minimum over its seed and its incoming downward
//! arcs `q -> p`, so the positions that can matter are the targets' *downward closure read
//! backwards*: the targets, the tails of their incoming downward arcs, the tails of those, and
//! so on. [`Selection::of`] marks them by a search over the downward arcs by head (O(n) for the
//! marks plus O(selected + their arcs)), then keeps them in sweep order, renumbered
//! `0..selected`, with their incoming arcs: a [`Hierarchy`] of its own whose positions are
//! the selected ones (its `pos` maps every vertex id, `u32::MAX` for the others; its upward
//! graph is empty). The set is closed under "tail of an incoming arc", so every arc into a
//! selected position starts at a selected position, and a seed at an unselected position
//! cannot reach a target (its downward arcs end at unselected positions only): the sweep over
//! the selection gives every target exactly the full sweep's distance.
//!
//! **Use.** The upward searches still run on the whole hierarchy; their seeds are mapped
//! through [`Selection::local`] and those outside are dropped ([`super::cpu::Sweeper`]). The
//! selection is made once per job (and kept in a session per target set), and a tree then
//! costs `O(S log S + selected·k + arcs_selected·k)` instead of `O(S log S + n·k + arcs·k)`.
//! On osm-moscow, 1,000 random targets select a small part of the vertices (the report says
//! how many: `restricted_vertices`).

use super::{AnyHierarchy, ChWeight, Hierarchy};

/// The part of a hierarchy the sweeps toward a fixed set of targets read.
#[derive(Debug)]
pub struct Selection {
    /// The selected positions as a hierarchy of their own (downward arcs only).
    pub sub: AnyHierarchy,
    /// `local[p]`: the selection's position of the whole hierarchy's position `p`, or
    /// `u32::MAX` when `p` is not selected.
    pub local: Vec<u32>,
}

impl Selection {
    /// The selection of `h` that `targets` (vertex ids of the input) need.
    pub fn of(h: &AnyHierarchy, targets: &[u32]) -> Selection {
        match h {
            AnyHierarchy::Narrow(h) => {
                let (sub, local) = select(h, targets);
                Selection {
                    sub: AnyHierarchy::Narrow(sub),
                    local,
                }
            }
            AnyHierarchy::Wide(h) => {
                let (sub, local) = select(h, targets);
                Selection {
                    sub: AnyHierarchy::Wide(sub),
                    local,
                }
            }
        }
    }

    /// Selected positions.
    pub fn len(&self) -> usize {
        match &self.sub {
            AnyHierarchy::Narrow(h) => h.n,
            AnyHierarchy::Wide(h) => h.n,
        }
    }

    /// Whether nothing is selected (no targets).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes it holds.
    pub fn bytes(&self) -> u64 {
        self.sub.bytes() + 4 * self.local.len() as u64
    }
}

/// The downward closure of `targets` in `h`, as a hierarchy over the selected positions, and
/// the map from `h`'s positions to them.
fn select<W: ChWeight>(h: &Hierarchy<W>, targets: &[u32]) -> (Hierarchy<W>, Vec<u32>) {
    const NO: u32 = u32::MAX;
    // Marks first (0 = selected), numbered afterwards in sweep order.
    let mut local = vec![NO; h.n];
    let mut stack: Vec<u32> = Vec::with_capacity(targets.len());
    for &v in targets {
        let p = h.pos[v as usize];
        if local[p as usize] == NO {
            local[p as usize] = 0;
            stack.push(p);
        }
    }
    while let Some(p) = stack.pop() {
        let (a, b) = (
            h.down_offsets[p as usize] as usize,
            h.down_offsets[p as usize + 1] as usize,
        );
        for &q in &h.down_tails[a..b] {
            if local[q as usize] == NO {
                local[q as usize] = 0;
                stack.push(q);
            }
        }
    }
    let mut order = Vec::new();
    for (p, l) in local.iter_mut().enumerate() {
        if *l != NO {
            *l = order.len() as u32;
            order.push(h.order[p]);
        }
    }
    let m = order.len();
    let mut pos = vec![NO; h.n];
    for (i, &v) in order.iter().enumerate() {
        pos[v as usize] = i as u32;
    }
    let (mut down_offsets, mut down_tails, mut down_weights) =
        (Vec::with_capacity(m + 1), Vec::new(), Vec::new());
    down_offsets.push(0u32);
    for &v in &order {
        let p = h.pos[v as usize] as usize;
        let (a, b) = (h.down_offsets[p] as usize, h.down_offsets[p + 1] as usize);
        // Tails ascending in `h`, and `local` keeps their order.
        down_tails.extend(h.down_tails[a..b].iter().map(|&q| local[q as usize]));
        down_weights.extend_from_slice(&h.down_weights[a..b]);
        down_offsets.push(down_tails.len() as u32);
    }
    // The levels of `h` restricted: a level's selected positions are consecutive, and no arc
    // joins two of them (none joined them in `h`). Empty levels are dropped.
    let mut levels = vec![0u32];
    for w in h.levels.windows(2) {
        let end = (w[0]..w[1])
            .rev()
            .map(|p| local[p as usize])
            .find(|&l| l != NO)
            .map(|l| l + 1);
        if let Some(end) = end {
            levels.push(end);
        }
    }
    if m == 0 {
        levels = vec![0, 0];
    }
    let sub = Hierarchy {
        n: m,
        order,
        pos,
        up_offsets: vec![0; m + 1],
        up_heads: Vec::new(),
        up_weights: Vec::new(),
        down_offsets,
        down_tails,
        down_weights,
        levels,
        info: h.info,
    };
    (sub, local)
}

#[cfg(test)]
mod test {
    use super::super::cpu::Sweeper;
    use super::*;
    use crate::apsp::dijkstra::Dijkstra;
    use crate::apsp::phast::ch::test::{gen, real};
    use crate::common::Dist;
    use crate::graph::{Csr, GenModel};

    /// Every target's distance from every source equals the full sweep's and Dijkstra's,
    /// through the restricted sweep.
    fn same_as_full(g: &Csr, h: &Hierarchy<u32>, sources: &[u32], targets: &[u32]) {
        let any = AnyHierarchy::Narrow(h.clone());
        let sel = Selection::of(&any, targets);
        let AnyHierarchy::Narrow(sub) = &sel.sub else {
            unreachable!()
        };
        // The selection is closed: every arc into a selected position starts at one.
        for (i, w) in sub.down_offsets.windows(2).enumerate() {
            for &q in &sub.down_tails[w[0] as usize..w[1] as usize] {
                assert!((q as usize) < i, "arc {q} -> {i} not in sweep order");
            }
        }
        let mut full = Sweeper::new(h, 4).unwrap();
        let mut part = Sweeper::restricted(h, sub, &sel.local, 4).unwrap();
        let mut dj = Dijkstra::<u64>::new(g.n);
        for batch in sources.chunks(4) {
            full.run(batch);
            part.run(batch);
            for (j, &s) in batch.iter().enumerate() {
                let reference = dj.run(g, s);
                for &t in targets {
                    let d = reference[t as usize];
                    let d = if d == u64::INF { u32::INF } else { d as u32 };
                    assert_eq!(part.dist(j, t), d, "source {s}, target {t}");
                    assert_eq!(full.dist(j, t), d, "source {s}, target {t}");
                }
            }
        }
    }

    #[test]
    fn restricted_sweeps_give_the_full_sweeps_distances_at_the_targets() {
        let g = gen(GenModel::Road, 3000, 0.0, 7, 1, 100);
        let h = Hierarchy::<u32>::build(&g, &Default::default(), None).unwrap();
        let sources: Vec<u32> = (0..40).map(|i| i * 71 % g.n as u32).collect();
        same_as_full(&g, &h, &sources, &[5]);
        let spread: Vec<u32> = (0..50).map(|i| i * 59 % g.n as u32).collect();
        same_as_full(&g, &h, &sources, &spread);
        let all: Vec<u32> = (0..g.n as u32).collect();
        same_as_full(&g, &h, &sources, &all);
        // Repeated targets select once.
        same_as_full(&g, &h, &sources, &[9, 9, 3, 9]);
        let sel = Selection::of(&AnyHierarchy::Narrow(h.clone()), &[5]);
        assert!(
            sel.len() < g.n / 4,
            "one target selected {} of {}",
            sel.len(),
            g.n
        );
        assert!(Selection::of(&AnyHierarchy::Narrow(h), &[]).is_empty());
    }

    #[test]
    fn restricted_sweeps_on_a_real_road_graph() {
        let Some(g) = real("rome99.gr.gz") else {
            return;
        };
        let h = Hierarchy::<u32>::build(&g, &Default::default(), None).unwrap();
        let sources: Vec<u32> = (0..16).map(|i| i * 211 % g.n as u32).collect();
        let targets: Vec<u32> = (0..100).map(|i| i * 31 % g.n as u32).collect();
        same_as_full(&g, &h, &sources, &targets);
    }
}
