//! Which SSSP algorithms an apsp run uses, and the one hierarchy its PHAST halves share.
//!
//! `[apsp] cpu_algorithm` and `gpu_algorithm` may name an algorithm or say `"auto"` (the
//! default). Auto takes PHAST when all of these hold, else Dijkstra on CPU cores and the work
//! list on GPUs:
//!
//! 1. the hierarchy pays for itself: a cached hierarchy of this graph exists, or there are at
//!    least [`AUTO_MIN_SOURCES`] sources (on road graphs a build costs about 200 Dijkstra
//!    trees' time, and each PHAST tree then saves over 90% of one);
//! 2. the build stays within [`Budget::for_graph`] (skewed graphs such as R-MAT stop early);
//! 3. the upward search space, sampled from [`SAMPLES`] sources, stays under n/8 vertices
//!    (otherwise the per-tree upward Dijkstra is no longer small).
//!
//! An explicit `"phast"` builds without the budget and skips the checks. The hierarchy is built
//! (or read from the cache, see [`super::cache`]) once per run, in `prepare`, on every MPI rank:
//! the build is deterministic, so every rank holds the same hierarchy.

use super::cache::{self, Key, Miss};
use super::ch::{Budget, ChError, ChParams, ChWeight, Hierarchy};
use super::AnyHierarchy;
use crate::graph::Csr;
use crate::plugins::apsp::GpuAlgorithm;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Sources from which `"auto"` builds a hierarchy it has not cached.
pub const AUTO_MIN_SOURCES: usize = 256;
/// Sources whose upward search spaces `"auto"` samples.
pub const SAMPLES: usize = 64;

/// `[apsp] cpu_algorithm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum CpuAlgorithm {
    /// PHAST when the hierarchy is good (module doc), else Dijkstra.
    #[default]
    Auto,
    /// Dijkstra with a radix heap, one source at a time.
    Dijkstra,
    /// PHAST over a contraction hierarchy, k sources at once.
    Phast,
}

impl TryFrom<String> for CpuAlgorithm {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.as_str() {
            "auto" => Ok(CpuAlgorithm::Auto),
            "dijkstra" => Ok(CpuAlgorithm::Dijkstra),
            "phast" => Ok(CpuAlgorithm::Phast),
            _ => Err(format!(
                "cpu_algorithm = {s:?}: use \"auto\", \"dijkstra\" or \"phast\""
            )),
        }
    }
}

/// The GPU algorithm that runs PHAST (`plugins/apsp/gpu/phast.rs`); `None` in a build without
/// a GPU half of PHAST.
pub const GPU_PHAST: Option<GpuAlgorithm> = Some(GpuAlgorithm::Phast);
/// Whether the GPU half of PHAST honours `[apsp] targets` (it does: summaries and rows over
/// the targets' sweep positions, on the device). Without it, `"auto"` would run the work list
/// on GPUs when targets are set, and an explicit `"phast"` with targets would be refused.
pub const GPU_PHAST_TARGETS: bool = true;

/// `[apsp] gpu_algorithm` as written: `"auto"`, `"phast"` or one frontier algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum GpuRequest {
    /// PHAST when the hierarchy is good (module doc), else the work list.
    #[default]
    Auto,
    /// PHAST.
    Phast,
    /// This frontier algorithm.
    Fixed(GpuAlgorithm),
}

impl<'de> Deserialize<'de> for GpuRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "auto" => return Ok(GpuRequest::Auto),
            "phast" => return Ok(GpuRequest::Phast),
            _ => {}
        }
        let de = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(&s);
        GpuAlgorithm::deserialize(de)
            .map(GpuRequest::Fixed)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "gpu_algorithm = {s:?}: use \"auto\", \"phast\", \"worklist\", \"crauser\", \
                 \"martin\" or \"two-phase\""
                ))
            })
    }
}

/// What a run needs to decide.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// CPU algorithm as configured; `None` when no CPU worker runs.
    pub cpu: Option<CpuAlgorithm>,
    /// GPU algorithm as configured; `None` when no OpenCL device is wanted.
    pub gpu: Option<GpuRequest>,
    /// Tasks of the run.
    pub sources: usize,
    /// `[apsp] hierarchy`: a cache file, or `None` for the user's cache directory.
    pub cache_path: Option<&'a Path>,
    /// Whether a built hierarchy is stored in the cache (not for `tuccompi check`, which
    /// writes nothing).
    pub store: bool,
    /// Whether `[apsp] targets` limits the records and rows.
    pub targets: bool,
}

/// The decision, with what it is based on.
#[derive(Debug)]
pub struct Choice {
    /// The CPU algorithm that runs (never `Auto`).
    pub cpu: CpuAlgorithm,
    /// The GPU algorithm that runs.
    pub gpu: GpuAlgorithm,
    /// Why, in one sentence, for `check` and `report.json`.
    pub reason: String,
    /// The hierarchy, when a PHAST half runs.
    pub hierarchy: Option<AnyHierarchy>,
    /// Facts for the report: where the hierarchy came from, its shape, `preprocess_seconds`.
    pub report: serde_json::Value,
}

/// Decide the algorithms of a run on `g` and get the hierarchy PHAST needs.
pub fn choose(g: &Csr, wide: bool, req: &Request<'_>) -> Result<Choice> {
    let cpu_req = req.cpu.unwrap_or(CpuAlgorithm::Dijkstra);
    let mut gpu_req = req.gpu.unwrap_or(GpuRequest::Fixed(GpuAlgorithm::Worklist));
    // The GPU half of PHAST, when it exists and can serve this run.
    let gpu_phast = GPU_PHAST.filter(|_| GPU_PHAST_TARGETS || !req.targets);
    if gpu_phast.is_none() {
        match gpu_req {
            GpuRequest::Phast => {
                return Err(Error::Config(if GPU_PHAST.is_some() {
                    "[apsp] gpu_algorithm = \"phast\" does not support [apsp] targets yet: use \
                     \"auto\" or \"worklist\" on GPUs, or leave targets = \"all\""
                        .into()
                } else {
                    "[apsp] gpu_algorithm = \"phast\": this build has no GPU half of PHAST; use \
                     \"auto\" or \"worklist\" (cpu_algorithm = \"phast\" runs PHAST on CPU cores)"
                        .into()
                }))
            }
            GpuRequest::Auto => gpu_req = GpuRequest::Fixed(GpuAlgorithm::Worklist),
            GpuRequest::Fixed(_) => {}
        }
    }
    let explicit = cpu_req == CpuAlgorithm::Phast || gpu_req == GpuRequest::Phast;
    let auto = cpu_req == CpuAlgorithm::Auto || gpu_req == GpuRequest::Auto;
    let resolve = |phast: bool| {
        let cpu = match cpu_req {
            CpuAlgorithm::Auto if phast => CpuAlgorithm::Phast,
            CpuAlgorithm::Auto => CpuAlgorithm::Dijkstra,
            fixed => fixed,
        };
        let gpu = match (gpu_req, gpu_phast) {
            (GpuRequest::Auto | GpuRequest::Phast, Some(g)) if phast => g,
            (GpuRequest::Fixed(a), _) => a,
            _ => GpuAlgorithm::Worklist,
        };
        (cpu, gpu)
    };
    // `auto` tried PHAST and gave it up after spending time on the hierarchy: one line at
    // the default verbosity, so the time spent is not a mystery.
    let warn_fallback = |why: &str| {
        tracing::warn!(
            "apsp: {why}; running Dijkstra on CPUs and the work list on GPUs instead of PHAST \
             (apsp.cpu_algorithm / apsp.gpu_algorithm = \"phast\" insists, \"dijkstra\" / \
             \"worklist\" skips the attempt)"
        )
    };
    let fallback = |reason: String, report: serde_json::Value| {
        let (cpu, gpu) = resolve(false);
        Ok(Choice {
            cpu,
            gpu,
            reason,
            hierarchy: None,
            report,
        })
    };
    if !explicit && !auto {
        return fallback("as configured".into(), serde_json::json!({}));
    }
    let params = ChParams::default();
    let path = cache_file(g, wide, &params, req.cache_path);
    // What is at the cache path must be a hierarchy (or nothing) to be read or replaced: a
    // configured path holding anything else (a user's file, a link) is refused before any
    // work; in the default directory it is left alone with a warning.
    let path = match path.map(|p| (cache::ownable(&p), p)) {
        Some((Err(what), p)) if req.cache_path.is_some() => {
            return Err(Error::Config(format!(
                "[apsp] hierarchy = {:?}: it is {what}; tuccompi reads and replaces only a \
                 hierarchy file there: name another file (a new one is created), or remove \
                 this one",
                p.display().to_string()
            )))
        }
        Some((Err(what), p)) => {
            tracing::warn!(
                "{}: it is {what}, not a hierarchy: left alone, the hierarchy is not cached",
                p.display()
            );
            None
        }
        Some((Ok(()), p)) => Some(p),
        None => None,
    };
    let cache = Cache {
        path: path.as_deref(),
        store: req.store,
    };
    if !explicit {
        let cached = path.as_deref().is_some_and(Path::exists);
        if !cached && req.sources < AUTO_MIN_SOURCES {
            return fallback(
                format!(
                    "auto: {} sources are too few to pay for building a contraction hierarchy \
                     (PHAST from {AUTO_MIN_SOURCES} sources, or with a cached hierarchy)",
                    req.sources
                ),
                serde_json::json!({}),
            );
        }
    }
    let budget = (!explicit).then(|| Budget::for_graph(g.n, g.m()));
    let t = Instant::now();
    let got = if wide {
        obtain::<u64>(g, &params, budget, &cache).map(|(h, r)| (AnyHierarchy::Wide(h), r))
    } else {
        obtain::<u32>(g, &params, budget, &cache).map(|(h, r)| (AnyHierarchy::Narrow(h), r))
    };
    let seconds = t.elapsed().as_secs_f64();
    let (h, mut report) = match got {
        Ok(x) => x,
        Err(Obtain::Poor(e)) => {
            warn_fallback(&format!("auto: {e}"));
            return fallback(
                format!("auto: {e}"),
                serde_json::json!({ "preprocess_seconds": seconds }),
            );
        }
        Err(Obtain::Fail(e)) => return Err(e),
    };
    let (shortcuts, arcs, levels) = match &h {
        AnyHierarchy::Narrow(h) => (h.info.shortcuts, h.info.arcs, h.num_levels()),
        AnyHierarchy::Wide(h) => (h.info.shortcuts, h.info.arcs, h.num_levels()),
    };
    let upward = match &h {
        AnyHierarchy::Narrow(h) => upward_space(h, SAMPLES),
        AnyHierarchy::Wide(h) => upward_space(h, SAMPLES),
    };
    report["preprocess_seconds"] = serde_json::json!(seconds);
    report["shortcuts"] = serde_json::json!(shortcuts);
    report["shortcuts_per_arc"] = serde_json::json!(shortcuts as f64 / arcs.max(1) as f64);
    report["levels"] = serde_json::json!(levels);
    report["upward_search_mean"] = serde_json::json!(upward);
    let shape = format!(
        "{:.2} shortcuts per arc, {levels} levels, upward search {upward:.0} of {} vertices",
        shortcuts as f64 / arcs.max(1) as f64,
        g.n
    );
    if !explicit && upward > (g.n as f64 / 8.0).max(1.0) {
        warn_fallback(&format!("auto: the hierarchy is poor ({shape})"));
        return fallback(
            format!("auto: the hierarchy is poor ({shape}: over n/8 vertices per upward search)"),
            report,
        );
    }
    let (cpu, gpu) = resolve(true);
    let reason = if explicit && !auto {
        format!("as configured ({shape})")
    } else {
        format!("auto: the hierarchy is good ({shape})")
    };
    Ok(Choice {
        cpu,
        gpu,
        reason,
        hierarchy: Some(h),
        report,
    })
}

/// The cache file for this graph: `[apsp] hierarchy`, else one named by the key in the user's
/// cache directory.
fn cache_file(g: &Csr, wide: bool, p: &ChParams, configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = configured {
        return Some(p.to_path_buf());
    }
    let key = if wide {
        Key::of::<u64>(g, p)
    } else {
        Key::of::<u32>(g, p)
    };
    cache::default_dir().map(|d| d.join(key.file_name()))
}

enum Obtain {
    Poor(ChError),
    Fail(Error),
}

/// Where [`obtain`] reads and stores a hierarchy.
struct Cache<'a> {
    /// The cache file (checked [`cache::ownable`]), if any.
    path: Option<&'a Path>,
    /// Whether a built hierarchy is written there.
    store: bool,
}

/// The hierarchy from the cache at `path`, else built (and then stored there). A cache that
/// cannot be used is reported and replaced; one that cannot be written is reported and left.
fn obtain<W: ChWeight>(
    g: &Csr,
    p: &ChParams,
    budget: Option<Budget>,
    cache: &Cache<'_>,
) -> std::result::Result<(Hierarchy<W>, serde_json::Value), Obtain> {
    let key = Key::of::<W>(g, p);
    let mut report = serde_json::json!({ "width": std::mem::size_of::<W>() * 8 });
    if let Some(path) = cache.path {
        report["cache"] = serde_json::json!(path.display().to_string());
        match cache::load::<W>(path, &key) {
            Ok(h) => {
                report["source"] = serde_json::json!("cache");
                return Ok((h, report));
            }
            Err(Miss::Absent) => {}
            Err(miss) => {
                tracing::warn!("{}: {miss}; building the hierarchy again", path.display());
                report["cache_miss"] = serde_json::json!(miss.to_string());
            }
        }
    }
    let h = Hierarchy::<W>::build(g, p, budget).map_err(|e| match e {
        ChError::Poor { .. } => Obtain::Poor(e),
        ChError::Unfit(_) => Obtain::Fail(Error::Input(format!("{}: {e}", g.name))),
    })?;
    report["source"] = serde_json::json!("built");
    if let (Some(path), true) = (cache.path, cache.store) {
        if let Err(e) = cache::store(path, &key, &h) {
            tracing::warn!(
                "{}: could not keep the hierarchy for later runs: {e}",
                path.display()
            );
            report["cache_store_error"] = serde_json::json!(e.to_string());
        }
    }
    Ok((h, report))
}

/// Mean number of vertices an upward search from `samples` evenly spread sources reaches.
///
/// O(samples · S) for search spaces of S vertices.
pub fn upward_space<W>(h: &Hierarchy<W>, samples: usize) -> f64 {
    let samples = samples.min(h.n);
    if samples == 0 {
        return 0.0;
    }
    let mut seen = vec![false; h.n];
    let (mut stack, mut list) = (Vec::new(), Vec::new());
    let mut total = 0usize;
    for i in 0..samples {
        let s = h.pos[i * h.n / samples];
        seen[s as usize] = true;
        stack.push(s);
        list.push(s);
        while let Some(p) = stack.pop() {
            let (a, b) = (h.up_offsets[p as usize], h.up_offsets[p as usize + 1]);
            for &q in &h.up_heads[a as usize..b as usize] {
                if !seen[q as usize] {
                    seen[q as usize] = true;
                    stack.push(q);
                    list.push(q);
                }
            }
        }
        total += list.len();
        for q in list.drain(..) {
            seen[q as usize] = false;
        }
    }
    total as f64 / samples as f64
}
