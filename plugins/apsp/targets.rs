//! `[apsp] targets`: an origin-destination matrix instead of all pairs.
//!
//! With targets, each source's record `[reached, sum_lo, sum_hi, max]` covers only the target
//! vertices, and its distances.npy row holds their distances in the listed order, so the file
//! is a sources × targets matrix in the input's numbering. Every algorithm computes whole trees
//! and then gathers the targets (PHAST from its vertex-major sweep, Dijkstra and the GPU frontier
//! algorithms from a full distance row).

use super::ApspJob;
use crate::common::ids::IdOrigins;
use crate::common::Sources;
use crate::common::{Dist, PathSummary, RowWrite};
use tuccompi::{Error, Result};

/// Resolve `[apsp] targets` (not "all") against a graph of `n` vertices numbered from `base`:
/// internal ids in the listed order (repeats allowed). `origins`: where the ids came from when
/// read from a file, so that an id outside the graph is named with its file and line.
pub fn resolve(
    targets: &Sources,
    origins: Option<&IdOrigins>,
    n: usize,
    base: u64,
) -> Result<Vec<u32>> {
    match targets {
        Sources::All => Ok((0..n as u32).collect()),
        Sources::First(k) => {
            if *k as usize > n || *k == 0 {
                return Err(Error::Config(format!(
                    "[apsp] targets = {k}, but the graph has {n} vertices; use 1..={n}, a list \
                     of vertex ids or \"all\""
                )));
            }
            Ok((0..*k as u32).collect())
        }
        Sources::List(ids) => {
            if ids.is_empty() {
                return Err(Error::Config(
                    "[apsp] targets = []: list at least one vertex id, or say \"all\"".into(),
                ));
            }
            crate::common::ids::resolve(ids, origins, "[apsp] targets", n, base)
        }
        // Snapped in `prepare` (they need the input's places); read from their file there.
        Sources::Points(_) | Sources::File(_) => Err(Error::Config(
            "[apsp] targets: points and files are resolved before the ids; this is a bug".into(),
        )),
    }
}

/// Task `t`'s record, and its row when distances.npy is written, from its full distance row
/// `dist` (every vertex): restricted to the job's targets when it has some. `buf` is scratch.
/// A u32 row that overflowed (a distance at `D::CEIL`) is not written: its tree is redone.
pub fn finish_row<D: Dist + RowWrite>(
    job: &ApspJob,
    t: usize,
    dist: &[D],
    buf: &mut Vec<D>,
) -> Result<PathSummary> {
    let row = match &job.targets {
        None => dist,
        Some(ts) => {
            buf.clear();
            buf.extend(ts.iter().map(|&v| dist[v as usize]));
            &buf[..]
        }
    };
    let s = PathSummary::of(row);
    if let Some(rows) = &job.rows {
        if s.max != D::CEIL.to_u64() {
            D::write_row(rows, t, row)?;
        }
    }
    Ok(s)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn resolves_counts_lists_and_refuses_bad_ids() {
        assert_eq!(
            resolve(&Sources::First(3), None, 10, 1).unwrap(),
            vec![0, 1, 2]
        );
        assert_eq!(
            resolve(&Sources::List(vec![10, 1, 10]), None, 10, 1).unwrap(),
            vec![9, 0, 9]
        );
        let e = resolve(&Sources::List(vec![0]), None, 10, 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[apsp] targets: vertex id 0 is out of range; this graph's ids are 1..=10"),
            "{e}"
        );
        let e = resolve(&Sources::First(11), None, 10, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("targets = 11"), "{e}");
        assert!(resolve(&Sources::List(vec![]), None, 10, 1).is_err());
    }
}
