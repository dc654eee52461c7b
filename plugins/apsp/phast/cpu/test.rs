//! k-tree PHAST against plain Dijkstra (the independent reference) for every supported k,
//! partial batches, u32 and u64 distances, summaries and rows with and without targets.

use super::*;
use crate::apsp::dijkstra::Dijkstra;
use crate::apsp::phast::ch::ChParams;
use crate::common::PathSummary;
use crate::graph::{generate, Csr, GenModel, GenSpec};
use tuccompi::plugin::Record;

fn summarize<W: ChWeight>(row: &[W], rec: &mut [u64; 4]) {
    PathSummary::of(row).to_words(rec);
}

fn gen(model: GenModel, n: u64, degree: f64, lo: u32, hi: u32) -> Csr {
    let spec = GenSpec {
        model,
        vertices: n,
        degree: Some(degree),
        seed: 11,
        min_weight: Some(lo),
        max_weight: Some(hi),
    };
    Csr::from_edges(&generate(&spec).unwrap()).unwrap()
}

fn against_dijkstra<W: ChWeight>(g: &Csr) {
    let h = Hierarchy::<W>::build(g, &ChParams::default(), None).unwrap();
    let mut dj = Dijkstra::<W>::new(g.n);
    let targets: Vec<u32> = (0..g.n as u32).rev().step_by(3).collect();
    let tpos: Vec<u32> = targets.iter().map(|&v| h.pos[v as usize]).collect();
    let mut row = Vec::new();
    for k in SUPPORTED_K {
        let mut sw = Sweeper::new(&h, k).unwrap();
        let all: Vec<u32> = (0..g.n as u32).collect();
        // Full batches, then a partial last one (lanes past the sources stay INF).
        for batch in all.chunks(k) {
            // Summaries tallied by a summaries-only sweep (which skips the bottom rows), then
            // by a pass over a full sweep's distances: both must be the reference's.
            sw.run_with(batch, true);
            let mut recs = vec![[0u64; 4]; k];
            let mut trecs = vec![[0u64; 4]; k];
            sw.summarize(None, &mut recs);
            let tallied = recs.clone();
            sw.run(batch);
            sw.summarize(None, &mut recs);
            sw.summarize(Some(&tpos), &mut trecs);
            for (j, &s) in batch.iter().enumerate() {
                let want = dj.run(g, s).to_vec();
                sw.row(j, None, &mut row);
                assert_eq!(row, want, "{}: k {k}, source {s}", g.name);
                let mut rec = [0u64; 4];
                summarize(&want, &mut rec);
                assert_eq!(recs[j], rec, "k {k}, source {s}: summary");
                assert_eq!(
                    tallied[j], rec,
                    "k {k}, source {s}: summary tallied in the sweep"
                );
                let wt: Vec<W> = targets.iter().map(|&v| want[v as usize]).collect();
                sw.row(j, Some(&targets), &mut row);
                assert_eq!(row, wt, "k {k}, source {s}: row over targets");
                summarize(&wt, &mut rec);
                assert_eq!(trecs[j], rec, "k {k}, source {s}: summary over targets");
                assert_eq!(sw.dist(j, targets[0]), wt[0]);
            }
            for j in batch.len()..k {
                assert!((0..g.n as u32).all(|v| sw.dist(j, v) == W::INF));
            }
        }
    }
}

#[test]
fn every_k_matches_dijkstra_u32() {
    against_dijkstra::<u32>(&gen(GenModel::Road, 144, 0.0, 0, 9));
    against_dijkstra::<u32>(&gen(GenModel::Uniform, 100, 1.3, 0, 30));
}

#[test]
fn every_k_matches_dijkstra_u64() {
    let g = gen(GenModel::Uniform, 90, 2.0, 3_000_000_000, u32::MAX);
    assert!(g.distance_bound() > u32::MAX as u128);
    against_dijkstra::<u64>(&g);
}

#[test]
fn unsupported_k_is_refused() {
    let g = gen(GenModel::Road, 16, 0.0, 1, 9);
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    let e = Sweeper::new(&h, 3).unwrap_err().to_string();
    assert!(e.contains("use one of"), "{e}");
}
