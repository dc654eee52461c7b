//! Graphs as flat arrays: an edge list as read, and the CSR every algorithm runs on.
//!
//! The CSR is three plain vectors (`offsets`, `targets`, `weights`) so that the device layer can
//! copy them to OpenCL buffers as they are. Vertex ids inside are 0-based; `id_base` maps them
//! back to the input's numbering (1 for DIMACS and Matrix Market, 0 for edge lists).

pub mod cache;
mod coords;
mod delimited;
mod generate;
pub mod memory;
mod npy;
pub mod osm;
mod read;
mod shared;

pub use coords::{read_co, Coords, Snap, SnapIndex};
pub use generate::{generate, GenModel, GenSpec};
pub use npy::{MatrixStats, NpyMatrix};
pub use read::{read_graph, read_graph_with};
pub use shared::{share_csr, Words};

/// Where an edge came from, so later checks can still name the file and line.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// Input path or generator description.
    pub name: String,
    /// File and 1-based line of the first negative weight, if any.
    pub first_negative: Option<(String, usize)>,
    /// File and 1-based line of the first arc with the largest weight magnitude, if read from a
    /// file: range errors of the plugins point there.
    pub heaviest: Option<(String, usize)>,
}

/// Directed, weighted arcs as read (before collapsing parallel arcs).
#[derive(Debug, Clone, Default)]
pub struct EdgeList {
    /// Number of vertices.
    pub n: usize,
    /// Arcs `(from, to, weight)`, 0-based ids.
    pub arcs: Vec<(u32, u32, i64)>,
    /// First id of the input's numbering (1 for `.gr`/`.mtx`, 0 for edge lists).
    pub id_base: u64,
    /// Provenance for messages.
    pub origin: Origin,
}

/// Compressed sparse rows with non-negative 32-bit integer weights.
///
/// Parallel arcs are collapsed to their minimum weight, self-loops dropped. Arcs out of `u` are
/// `targets[offsets[u]..offsets[u+1]]`, sorted by target.
#[derive(Debug, Clone)]
pub struct Csr {
    /// Number of vertices.
    pub n: usize,
    /// Row offsets, length `n + 1`.
    pub offsets: Words,
    /// Arc heads.
    pub targets: Words,
    /// Arc weights.
    pub weights: Words,
    /// First id of the input's numbering.
    pub id_base: u64,
    /// Input name for messages and the report.
    pub name: String,
}

impl Csr {
    /// Number of arcs after collapsing.
    pub fn m(&self) -> usize {
        self.targets.len()
    }

    /// Largest arc weight (0 for a graph without arcs).
    pub fn max_weight(&self) -> u32 {
        self.weights.iter().copied().max().unwrap_or(0)
    }

    /// An upper bound on any shortest-path distance: `(n - 1) * max_weight`.
    pub fn distance_bound(&self) -> u128 {
        (self.n.saturating_sub(1) as u128) * self.max_weight() as u128
    }

    /// Lightest outgoing arc of each vertex (`u32::MAX` for a vertex without arcs): the ω(u) of
    /// the Crauser criterion.
    pub fn min_out_weight(&self) -> Vec<u32> {
        (0..self.n)
            .map(|u| {
                let (a, b) = (self.offsets[u] as usize, self.offsets[u + 1] as usize);
                self.weights[a..b].iter().copied().min().unwrap_or(u32::MAX)
            })
            .collect()
    }

    /// Build a CSR from an edge list; refuses negative weights and weights over `u32::MAX`
    /// (naming where the first one was read), and graphs with more than `u32::MAX` arcs.
    ///
    /// O(n + m log d) for maximum out-degree d.
    pub fn from_edges(list: &EdgeList) -> tuccompi::Result<Csr> {
        if let Some((path, line)) = &list.origin.first_negative {
            return Err(tuccompi::Error::Input(format!(
                "{path}:{line}: negative arc weight; shortest paths by Dijkstra and its GPU \
                 variants need weights >= 0 (use a Floyd-Warshall plugin for negative weights)"
            )));
        }
        if let Some(&(u, v, w)) = list.arcs.iter().rev().max_by_key(|a| a.2.unsigned_abs()) {
            if !(0..=u32::MAX as i64).contains(&w) {
                let at = match &list.origin.heaviest {
                    Some((path, line)) => format!("{path}:{line}"),
                    None => list.origin.name.clone(),
                };
                return Err(tuccompi::Error::Input(format!(
                    "{at}: arc {} -> {} has weight {w}, outside 0..={}, the weights that \
                     Dijkstra and its GPU variants take; rescale the weights (the Floyd-Warshall \
                     plugins take 64-bit weights)",
                    u as u64 + list.id_base,
                    v as u64 + list.id_base,
                    u32::MAX
                )));
            }
        }
        let n = list.n;
        let mut count = tuccompi::filled(
            n + 1,
            0u64,
            &format!("the CSR of {} ({n} vertices)", list.origin.name),
        )?;
        for &(u, v, _) in &list.arcs {
            if u != v {
                count[u as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let total = count[n] as usize;
        let mut fill = count.clone();
        let mut pairs = tuccompi::filled(
            total,
            (0u32, 0u32),
            &format!("the arcs of {}", list.origin.name),
        )?;
        for &(u, v, w) in &list.arcs {
            if u != v {
                let slot = &mut fill[u as usize];
                pairs[*slot as usize] = (v, w as u32);
                *slot += 1;
            }
        }
        let mut offsets = tuccompi::reserved(n + 1, &format!("the CSR of {}", list.origin.name))?;
        let mut targets = tuccompi::reserved(total, &format!("the arcs of {}", list.origin.name))?;
        let mut weights =
            tuccompi::reserved(total, &format!("the weights of {}", list.origin.name))?;
        offsets.push(0u32);
        for u in 0..n {
            let row = &mut pairs[count[u] as usize..count[u + 1] as usize];
            row.sort_unstable();
            let mut last = u32::MAX;
            for &(v, w) in row.iter() {
                // Sorted by (target, weight): the first of a run of parallel arcs is the lightest.
                if v != last {
                    targets.push(v);
                    weights.push(w);
                    last = v;
                }
            }
            if targets.len() > u32::MAX as usize {
                return Err(tuccompi::Error::Input(format!(
                    "{}: more than {} arcs; tuccompi's CSR uses 32-bit offsets",
                    list.origin.name,
                    u32::MAX
                )));
            }
            offsets.push(targets.len() as u32);
        }
        Ok(Csr {
            n,
            offsets: offsets.into(),
            targets: targets.into(),
            weights: weights.into(),
            id_base: list.id_base,
            name: list.origin.name.clone(),
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn list(n: usize, arcs: &[(u32, u32, i64)]) -> EdgeList {
        EdgeList {
            n,
            arcs: arcs.to_vec(),
            id_base: 0,
            origin: Origin::default(),
        }
    }

    #[test]
    fn collapses_parallel_arcs_and_drops_loops() {
        let g = Csr::from_edges(&list(
            3,
            &[(0, 1, 5), (0, 1, 2), (1, 1, 1), (2, 0, 0), (0, 2, 7)],
        ))
        .unwrap();
        assert_eq!(g.offsets, vec![0, 2, 2, 3]);
        assert_eq!(g.targets, vec![1, 2, 0]);
        assert_eq!(g.weights, vec![2, 7, 0]);
        assert_eq!(g.min_out_weight(), vec![2, u32::MAX, 0]);
    }

    #[test]
    fn refuses_huge_weight() {
        let e = Csr::from_edges(&list(2, &[(0, 1, 1 << 33)])).unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        // The heaviest arc is named, with its file and line when the reader recorded them.
        let mut l = list(3, &[(0, 1, 7), (1, 2, 1 << 34), (2, 0, 1 << 33)]);
        l.origin.heaviest = Some(("g.wel".into(), 2));
        let e = Csr::from_edges(&l).unwrap_err().to_string();
        assert!(
            e.starts_with("g.wel:2: arc 1 -> 2 has weight 17179869184, outside 0..=4294967295"),
            "{e}"
        );
    }
}
