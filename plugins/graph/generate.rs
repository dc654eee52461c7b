//! Deterministic graph generators for defaults, tests and benchmarks.
//!
//! The random stream is SplitMix64, written out here so that a (model, size, seed) triple gives
//! the same graph on every platform and every future version (a crate's generator may change).

use super::{EdgeList, Origin};
use serde::{Deserialize, Serialize};
use tuccompi::{Error, Result};

/// Which family of graph to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GenModel {
    /// `vertices * degree` arcs with uniformly random ends.
    Uniform,
    /// R-MAT / Kronecker with the Graph500 parameters (a, b, c) = (0.57, 0.19, 0.19);
    /// `vertices` is rounded up to a power of two.
    Rmat,
    /// A road-like network (`road` in this file): a jittered grid of local streets, arterial rows and
    /// columns every 8 cells, highways every 64 with access only at arterials, some one-way
    /// streets; weights are travel times scaled into the weight range.
    Road,
    /// Complete digraph (every ordered pair), weights 1..=10 by default as in the seed papers.
    Complete,
}

/// A generator request, from `[input.generate]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenSpec {
    /// Graph family.
    pub model: GenModel,
    /// Number of vertices.
    pub vertices: u64,
    /// Mean out-degree (uniform and rmat; default 8 and 16).
    pub degree: Option<f64>,
    /// Seed of the random stream (default 1).
    #[serde(default = "one")]
    pub seed: u64,
    /// Smallest arc weight (default 1; 0 allowed).
    pub min_weight: Option<u32>,
    /// Largest arc weight (default 100; 10 for complete graphs).
    pub max_weight: Option<u32>,
}

fn one() -> u64 {
    1
}

impl GenModel {
    /// The name used in `[input.generate] model`.
    pub fn name(self) -> &'static str {
        match self {
            GenModel::Uniform => "uniform",
            GenModel::Rmat => "rmat",
            GenModel::Road => "road",
            GenModel::Complete => "complete",
        }
    }
}

/// Human text for `check` and messages: `road graph, 100000 vertices, seed 1, weights 1..=100`.
impl std::fmt::Display for GenSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} graph, {} vertices", self.model.name(), self.vertices)?;
        match (self.model, self.degree) {
            (GenModel::Uniform | GenModel::Rmat, d) => {
                let d = d.unwrap_or(if self.model == GenModel::Uniform {
                    8.0
                } else {
                    16.0
                });
                write!(f, ", mean out-degree {d}")?;
            }
            (_, Some(d)) => write!(f, ", degree {d} (ignored by this model)")?,
            (_, None) => {}
        }
        let (lo, hi) = weight_range(self);
        write!(f, ", seed {}, weights {lo}..={hi}", self.seed)
    }
}

/// The arc weight range after defaults.
fn weight_range(spec: &GenSpec) -> (u32, u32) {
    let lo = spec.min_weight.unwrap_or(1);
    let hi = spec
        .max_weight
        .unwrap_or(if spec.model == GenModel::Complete {
            10
        } else {
            100
        });
    (lo, hi)
}

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), by multiply-shift.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Generate the graph a [`GenSpec`] describes. O(vertices × degree).
pub fn generate(spec: &GenSpec) -> Result<EdgeList> {
    let n = spec.vertices;
    if n == 0 || n >= u32::MAX as u64 {
        return Err(Error::Config(format!(
            "input.generate.vertices = {n}: use 1..{}",
            u32::MAX
        )));
    }
    let (lo, hi) = weight_range(spec);
    if lo > hi {
        return Err(Error::Config(format!(
            "input.generate.max_weight = {hi}: below min_weight = {lo}; make min_weight <= max_weight"
        )));
    }
    // Each model checks its arcs' memory before making any (Linux overcommits: a reservation
    // that cannot be backed succeeds, and the run dies later in the OOM killer).
    let fits = |n: u64, m: u64| {
        super::memory::check(
            &format!("input.generate ({spec})"),
            super::memory::input_bytes(n, m),
            &format!("{n} vertices and {m} arcs"),
        )
    };
    let mut rng = SplitMix64(spec.seed ^ 0x5EED_0000_0000_0000);
    let weight = |rng: &mut SplitMix64| (lo as u64 + rng.below((hi - lo) as u64 + 1)) as i64;
    let mut arcs: Vec<(u32, u32, i64)>;
    let what = format!(
        "the arcs of a generated {} graph on {n} vertices",
        spec.model.name()
    );
    let mut n_out = n;
    let degree_arcs = |d: f64| -> Result<u64> {
        if d.is_nan() || d < 0.0 || d * n as f64 > 4e9 {
            return Err(Error::Config(format!(
                "input.generate.degree = {d}: too large or negative for {n} vertices"
            )));
        }
        Ok((d * n as f64).round() as u64)
    };
    match spec.model {
        GenModel::Uniform => {
            let m = degree_arcs(spec.degree.unwrap_or(8.0))?;
            fits(n_out, m)?;
            arcs = tuccompi::reserved(m as usize, &what)?;
            for _ in 0..m {
                let (u, v) = (rng.below(n) as u32, rng.below(n) as u32);
                arcs.push((u, v, weight(&mut rng)));
            }
        }
        GenModel::Rmat => {
            let scale = 64 - (n - 1).leading_zeros().min(63);
            n_out = 1u64 << scale;
            if n_out >= u32::MAX as u64 {
                return Err(Error::Config(format!(
                    "input.generate.vertices = {n}: rmat rounds up to a power of two, here 2^{scale}; use at most 2^31 = {}",
                    1u64 << 31
                )));
            }
            let m = degree_arcs(spec.degree.unwrap_or(16.0))?;
            fits(n_out, m)?;
            arcs = tuccompi::reserved(m as usize, &what)?;
            for _ in 0..m {
                let (mut u, mut v) = (0u64, 0u64);
                for bit in 0..scale {
                    let r = rng.unit();
                    let (du, dv) = if r < 0.57 {
                        (0, 0)
                    } else if r < 0.76 {
                        (0, 1)
                    } else if r < 0.95 {
                        (1, 0)
                    } else {
                        (1, 1)
                    };
                    u |= du << bit;
                    v |= dv << bit;
                }
                arcs.push((u as u32, v as u32, weight(&mut rng)));
            }
        }
        GenModel::Road => {
            // Up to 4 arcs per vertex (two links, both ways); the CSR's offsets are 32-bit,
            // so refuse now rather than after generating gigabytes.
            if 4 * n > u32::MAX as u64 {
                return Err(Error::Config(format!(
                    "input.generate.vertices = {n}: a road graph has up to 4 arcs per vertex and \
                     tuccompi's CSR holds at most {} arcs; use at most {} vertices",
                    u32::MAX,
                    u32::MAX / 4
                )));
            }
            fits(n, 4 * n)?;
            arcs = tuccompi::reserved(4 * n as usize, &what)?;
            road(n, spec.seed, lo, hi, &mut rng, &mut arcs);
        }
        GenModel::Complete => {
            if n > 1 << 15 {
                return Err(Error::Config(format!(
                    "input.generate: a complete graph on {n} vertices has {} arcs; use at most 32768 vertices",
                    n * (n - 1)
                )));
            }
            fits(n, n * n)?;
            arcs = tuccompi::reserved((n * n) as usize, &what)?;
            for u in 0..n {
                for v in 0..n {
                    if u != v {
                        arcs.push((u as u32, v as u32, weight(&mut rng)));
                    }
                }
            }
        }
    }
    Ok(EdgeList {
        n: n_out as usize,
        arcs,
        id_base: 0,
        origin: Origin {
            name: format!("generated {:?} n={} seed={}", spec.model, n_out, spec.seed)
                .to_lowercase(),
            first_negative: None,
            heaviest: None,
        },
    })
}

/// Cells between arterial rows (and between arterial columns) of the road model.
const ARTERIAL: u64 = 8;
/// Cells between highway rows (and columns); a highway is entered only where an arterial
/// crosses it.
const HIGHWAY: u64 = 64;
/// Speeds of local streets, arterials and highways, in cells per unit of time.
const SPEED: [f64; 3] = [1.0, 2.5, 6.0];
/// Local streets: percent missing, percent one-way.
const LOCAL_MISSING: u64 = 10;
const LOCAL_ONE_WAY: u64 = 5;
/// Largest jitter of a vertex from its grid point, in cells (each coordinate).
const JITTER: f64 = 0.3;
/// Largest traffic factor of a local street (arterials and highways: at most 1.1).
const SLOW: f64 = 1.5;

/// Road class of a grid line (a row for horizontal links, a column for vertical ones):
/// 0 local, 1 arterial, 2 highway. The lines are offset from the border, so a small grid has
/// arterials too.
fn road_class(line: u64) -> usize {
    if line % HIGHWAY == HIGHWAY / 2 {
        2
    } else if line % ARTERIAL == ARTERIAL / 2 {
        1
    } else {
        0
    }
}

/// The road model: vertex `u` sits near grid point `(u mod w, u div w)`, `w = ⌈√n⌉`, jittered
/// by up to [`JITTER`] cells (a hash of the seed and `u`). Each vertex links to its right and
/// lower neighbours; a link's class is its line's ([`road_class`]): local streets (10%
/// missing, 5% one-way, traffic factor 0.9..1.5), arterials every [`ARTERIAL`] cells and
/// highways every [`HIGHWAY`] cells (never missing, factor 0.9..1.1), at the [`SPEED`]s.
/// Highways have access only where an arterial or highway crosses them: local streets stop
/// short of them. An arc's weight is its travel time (length / speed × factor) scaled into
/// `lo..=hi`, the slowest possible local street weighing `hi`, so long trips take the fast
/// roads: the graph has a road hierarchy (a contraction hierarchy with about one shortcut per
/// arc and small upward searches, like a city's). Deterministic in `(n, seed, lo, hi)`.
///
/// O(n).
fn road(
    n: u64,
    seed: u64,
    lo: u32,
    hi: u32,
    rng: &mut SplitMix64,
    arcs: &mut Vec<(u32, u32, i64)>,
) {
    let w = (n as f64).sqrt().ceil().max(1.0) as u64;
    let jitter = |u: u64, axis: u64| {
        let mut h = SplitMix64(
            seed ^ (u.wrapping_mul(2).wrapping_add(axis)).wrapping_mul(0xD6E8_FEB8_6659_FD93),
        );
        (h.unit() * 2.0 - 1.0) * JITTER
    };
    let at = |u: u64| ((u % w) as f64 + jitter(u, 0), (u / w) as f64 + jitter(u, 1));
    // The slowest local street: the longest jittered link at the largest traffic factor.
    let longest = ((1.0 + 2.0 * JITTER).powi(2) + (2.0 * JITTER).powi(2)).sqrt();
    let slowest = longest * SLOW / SPEED[0];
    let scale = (hi - lo) as f64 / slowest;
    for u in 0..n {
        let (x, y) = (u % w, u / w);
        let pu = at(u);
        // (neighbour, class of the link, whether a local street here would enter a highway)
        let right = (x + 1 < w).then(|| {
            (
                u + 1,
                road_class(y),
                road_class(x) == 2 || road_class(x + 1) == 2,
            )
        });
        let down = Some((
            u + w,
            road_class(x),
            road_class(y) == 2 || road_class(y + 1) == 2,
        ));
        for (v, class, into_highway) in [right, down].into_iter().flatten() {
            if v >= n || (class == 0 && into_highway) {
                continue;
            }
            let (missing, one_way, factor) = if class == 0 {
                let missing = rng.below(100) < LOCAL_MISSING;
                let one_way = rng.below(100) < LOCAL_ONE_WAY;
                (missing, one_way, 0.9 + (SLOW - 0.9) * rng.unit())
            } else {
                (false, false, 0.9 + 0.2 * rng.unit())
            };
            if missing {
                continue;
            }
            let pv = at(v);
            let length = ((pu.0 - pv.0).powi(2) + (pu.1 - pv.1).powi(2)).sqrt();
            let time = length / SPEED[class] * factor;
            let wt = (lo as f64 + (time * scale).round()).min(hi as f64) as i64;
            let forward = !one_way || rng.below(2) == 0;
            if forward || !one_way {
                arcs.push((u as u32, v as u32, wt));
            }
            if !forward || !one_way {
                arcs.push((v as u32, u as u32, wt));
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn spec(model: GenModel, n: u64) -> GenSpec {
        GenSpec {
            model,
            vertices: n,
            degree: None,
            seed: 7,
            min_weight: Some(0),
            max_weight: Some(9),
        }
    }

    #[test]
    fn deterministic_and_in_range() {
        for m in [
            GenModel::Uniform,
            GenModel::Rmat,
            GenModel::Road,
            GenModel::Complete,
        ] {
            let a = generate(&spec(m, 100)).unwrap();
            let b = generate(&spec(m, 100)).unwrap();
            assert_eq!(a.arcs, b.arcs, "{m:?}");
            assert!(!a.arcs.is_empty());
            assert!(a
                .arcs
                .iter()
                .all(|&(u, v, w)| (u as usize) < a.n && (v as usize) < a.n && w >= 0));
        }
        assert_eq!(generate(&spec(GenModel::Rmat, 100)).unwrap().n, 128);
        assert_eq!(
            generate(&spec(GenModel::Complete, 5)).unwrap().arcs.len(),
            20
        );
    }

    #[test]
    fn huge_requests_are_errors_not_aborts() {
        // 4e9 road vertices asked for 256 GB of arcs and aborted ("memory allocation failed").
        let e = generate(&spec(GenModel::Road, 4_000_000_000))
            .unwrap_err()
            .to_string();
        assert!(e.contains("use at most 1073741823 vertices"), "{e}");
        let e = generate(&spec(GenModel::Rmat, 3_000_000_000))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rmat rounds up to a power of two"), "{e}");
    }

    #[test]
    fn road_highways_stay_in_u32() {
        let mut s = spec(GenModel::Road, 400);
        s.min_weight = Some(u32::MAX - 1);
        s.max_weight = Some(u32::MAX);
        let g = generate(&s).unwrap();
        assert!(g.arcs.iter().all(|a| a.2 <= u32::MAX as i64));
        assert!(crate::graph::Csr::from_edges(&g).is_ok());
    }

    #[test]
    fn spec_prints_as_words() {
        let mut s = spec(GenModel::Road, 100_000);
        s.seed = 1;
        s.min_weight = None;
        s.max_weight = None;
        assert_eq!(
            s.to_string(),
            "road graph, 100000 vertices, seed 1, weights 1..=100"
        );
        assert_eq!(
            spec(GenModel::Uniform, 10).to_string(),
            "uniform graph, 10 vertices, mean out-degree 8, seed 7, weights 0..=9"
        );
    }
}
