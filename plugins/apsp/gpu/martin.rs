//! Martin et al.'s baseline: the settle-by-threshold loop of [`crauser`](super::crauser) with
//! Δ = min over unsettled u of δ(u), so one distance level is settled per iteration (slow on
//! graphs with many distinct distances). Same kernels, same buffers, a different threshold.

use super::crauser::{Settle, Threshold, LAUNCHED};
use super::Spec;

/// The algorithm as [`GpuAlgorithm::Martin`](crate::apsp::GpuAlgorithm::Martin).
pub(super) const SPEC: Spec = Spec {
    launched: LAUNCHED,
    bytes_per_vertex: |dist| dist + 2,
    make: |setup| Ok(Box::new(Settle::new(setup, Threshold::Martin)?)),
    batch_major: true,
};
