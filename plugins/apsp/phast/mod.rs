//! PHAST (Delling, Goldberg, Nowatzyk, Werneck, JPDC 2013): one shortest-path tree per source
//! as a small upward Dijkstra plus one linear sweep over a contraction hierarchy.
//!
//! [`ch`] builds the hierarchy (renumbered into sweep order, with levels for a GPU sweep) and
//! [`cache`] keeps it on disk; [`auto`] decides when PHAST runs; [`restrict`] selects the part
//! of it that sweeps toward fixed targets need. The CPU half ([`cpu`], wired
//! into the plugin by [`worker`]) sweeps k trees at once with distances vertex-major.

pub mod auto;
pub mod cache;
pub mod ch;
pub mod cpu;
pub mod host_cache;
pub mod restrict;
pub mod worker;

pub use ch::{ChWeight, Hierarchy};

/// A hierarchy of either distance width (the plugin's `wide`: u32 unless most trees provably
/// overflow; a u32 hierarchy stores weights past `CEIL` as `CEIL`).
#[derive(Debug)]
pub enum AnyHierarchy {
    /// 32-bit weights and distances.
    Narrow(Hierarchy<u32>),
    /// 64-bit weights and distances.
    Wide(Hierarchy<u64>),
}

impl AnyHierarchy {
    /// Bytes it holds in memory.
    pub fn bytes(&self) -> u64 {
        fn of<W>(h: &Hierarchy<W>) -> u64 {
            let w = std::mem::size_of::<W>() as u64;
            let (n, arcs) = (h.n as u64, (h.up_heads.len() + h.down_tails.len()) as u64);
            // order, pos, two offset arrays, levels; heads/tails and weights.
            4 * (4 * n + 2 + h.levels.len() as u64) + arcs * (4 + w)
        }
        match self {
            AnyHierarchy::Narrow(h) => of(h),
            AnyHierarchy::Wide(h) => of(h),
        }
    }

    /// Build the hierarchy of `graph` at the width `wide` says, with the default parameters
    /// and no budget (no cache: [`auto::choose`] is the plugin's way in).
    pub fn build(graph: &crate::graph::Csr, wide: bool) -> tuccompi::Result<Self> {
        let p = ch::ChParams::default();
        let err = |e: ch::ChError| tuccompi::Error::Input(format!("{}: {e}", graph.name));
        Ok(if wide {
            AnyHierarchy::Wide(Hierarchy::build(graph, &p, None).map_err(err)?)
        } else {
            AnyHierarchy::Narrow(Hierarchy::build(graph, &p, None).map_err(err)?)
        })
    }
}
