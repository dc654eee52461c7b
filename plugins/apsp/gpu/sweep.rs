//! Level sweeps: kernels that pull over a contraction hierarchy one launch per level, `k` trees
//! per batch with distances vertex-major (PHAST's GPU half). [`sweep_plan`] replaces the
//! generic batch and queue predictions with the sweep's own (trees per batch from the bytes a
//! tree's sweep moves, queues by measurement) and picks the sweep's own parameters (how many
//! small leading levels share one launch, the summary's slices, the upward searches' frontier
//! lists, the trailing levels folded into the summaries), each with its reason; a value set in
//! the config wins. The sweep's parameters go into the [`LaunchParams`] as the plugin's own
//! (`top_levels`, `summary_slices`, `frontier`, `upward_on_device`, `fold_levels`,
//! `fold_quads`, `fold_slices`), with
//! [`SWEEP_RULES`], so that `tuccompi check` and `report.json`
//! show them; [`SweepPlan::of`] reads them back.

use tuccompi::device::DeviceInfo;
use tuccompi::tuning::{Choice, LaunchParams, Setting, Source};

/// The rules, one line each.
pub const SWEEP_RULES: &[(&str, &str)] = &[
    ("trees per batch, level sweeps (PHAST), GPU", "a batch's sweep moves 64 GiB: k = 2^36 / (distance bytes x (n + downward arcs)) rounded up to a power of two, within 32..4096, so the fixed cost of a batch (upward searches, summary, the small levels) stays small; on an H200 the larger batches ran faster on every graph measured (osm-moscow 157k/359k/456k/484k trees/s at k = 128/512/2048/4096; a 6.6M-vertex tiling 21.6k/30.1k/33.8k at k = 64/128/256), and on an H100 a 26.4M-vertex tiling ran 7,723 / 9,001 / 9,314 trees/s at k = 64/128/256, while osm-moscow at 8,192 (one queue) ran 0.82-0.83 s against 0.76-0.77 at 4,096; at most the largest power of two whose distance buffer (k x the positions holding rows, those above the bottom level when it is folded) fits the device's largest allocation; capped by 75% of device memory over all queues (divided by the processes of the machine that use the device, under MPI), rounded down to a power of two; a batch from the tuning cache is lowered to the same two bounds"),
    ("trees per batch, level sweeps (PHAST), CPU device", "16: PoCL vectorizes a work-group's items, and 16 trees of 4-byte distances fill a 64-byte cache line per arc"),
    ("queues, level sweeps (PHAST)", "GPU: 2 (on an H200, whole osm-moscow ran within 3% from 1, 2 and 4 queues and slower from 8: one batch fills the device once the small levels share one launch; a second queue has the next batch ready while the host reads the last one); CPU devices: 1"),
    ("leading levels in one launch", "the leading levels whose items (vertices x k/4, 4 trees per item) fall short of the resident threads (compute units x 2048 on a GPU, x 64 on a CPU device): one launch each would be launch-bound (H200, osm-moscow: the sweep took 15% less time at k = 1024, 5% at 2048); on a GPU whose batch has fewer tree quads than 2 per compute unit, the one launch has only a work-group per quad, so the levels taken are those whose items fall short of those groups' items (H200, a 26.4M-vertex tiling at k = 64: 16 groups; its 48 leading levels in one launch ran 7,146 trees/s, every level in its own launch 7,925)"),
    ("summary slices", "resident threads / (k/4): each item folds 4 trees over n / slices vertices; at most n"),
    ("levels folded into the summaries (PHAST)", "when nothing but each tree's summary is wanted (no distance rows, targets, reach or paths): the trailing levels swept by launches of their own whose vertices number at least 128 x the summary slices, and the bottom level always, are swept and folded at once (phast_fold), so phast_summary reads only the rows above them; the bottom level's vertices are no vertex's tails (a vertex's level is above its lower neighbours'), so it writes none: a tree's bytes per bottom vertex drop by the write and the summary's read, and per other folded vertex by the read; else 0"),
    ("frontier list entries (device upward searches)", "1024 per list, within 3/4 of local memory: a road graph's upward search space is a few hundred vertices (osm-moscow: 267 mean); a tree that overflows is redone on the host"),
    ("fold quads (PHAST)", "GPU: phast_fold's items take 64 tree quads (256 trees) at a time, every slice of the level's vertices for those quads before the next quads, so the rows of the tails a wave reads are 1 KiB wide instead of k x 4 bytes and stay in the cache between neighbouring vertices (H100, osm-moscow at k = 4,096: the bottom level's fold 2.12 ms against 2.45 ms with every quad at once, whole run 0.813-0.816 s against 0.863-0.867 s; 16 or 32 quads with more slices, and 128 quads, were slower); at most k/4; CPU devices: k/4"),
    ("fold slices (PHAST)", "GPU: every item of phast_fold resident at once, one wave: compute units x 1280 items (its 48 registers leave 40 of an SM's 64 warps resident; NVIDIA builds cap the program's registers at 48) over the batch's tree quads; the items loop over the level one vertex at a time with two arcs in flight (H100, fold slices as a share of the summary's, which assume 2048 items per compute unit: osm-moscow full APSP 0.693-0.703 s at 62% against 0.739-0.745 s at 100% and 0.697-0.704 s at 125% (two whole waves), the K = 8 tiling 11,309 trees/s at 62%, 10,610 at 125%, 9,846 at 100%; two vertices in flight per item (64 registers, 32 warps) at one wave, 50%: 10,809); at most n; 64-bit distances and CPU devices: the summary's slices"),
    ("phast_up work-group size", "GPU: 128 items per tree's group unless the config sets the local size: the upward searches are bound by their rounds' latency, and with 128 items twice as many trees are resident as with 256 (H100, osm-moscow at k = 4,096: 0.58-0.62 ms a batch against 0.77-0.80 ms with 256 and 1.07 ms with 64, whose groups local memory then limits)"),
];

/// Vertices per item at least in a folded level other than the bottom one (see [`SWEEP_RULES`]).
pub const FOLD_MIN_ITEMS: usize = 128;

/// Tree quads per slice of `phast_fold`'s items on a GPU (see [`SWEEP_RULES`]).
pub const FOLD_QUADS: usize = 64;

/// `phast_fold`'s items resident per compute unit of a GPU: 40 warps of 32 at its 48
/// registers (see [`SWEEP_RULES`]; [`FOLD_REGISTERS`]).
pub const FOLD_RESIDENT: usize = 1280;

/// The registers NVIDIA builds of the sweep's program are capped at, so that
/// [`FOLD_RESIDENT`] holds (`-cl-nv-maxrregcount`; phast_fold needs 47-48 uncapped).
pub const FOLD_REGISTERS: usize = 48;

/// What a level-sweep half knows about its problem.
#[derive(Debug, Clone)]
pub struct SweepRequest<'a> {
    /// Vertices of each level, in sweep order.
    pub level_sizes: &'a [u32],
    /// Vertices.
    pub n: usize,
    /// Positions whose rows a batch holds if the bottom level is folded (`n` if it cannot
    /// be): the bound and `bytes_per_tree` count these.
    pub held: usize,
    /// Bytes of one distance.
    pub dist_bytes: u64,
    /// Processes of this machine using the device
    /// ([`Device::sharers`](tuccompi::device::Device::sharers)): the memory share is divided
    /// among them.
    pub sharers: usize,
    /// Bytes the sweep of one tree moves.
    pub sweep_bytes: u64,
    /// Device memory one tree in flight needs.
    pub bytes_per_tree: u64,
    /// Device memory shared by all trees (the hierarchy).
    pub shared_bytes: u64,
    /// Leading levels in one launch, set in the config.
    pub top_levels: Option<Setting>,
    /// Frontier list entries, set in the config.
    pub frontier: Option<Setting>,
    /// Trailing levels folded into the summaries, set in the config.
    pub fold_levels: Option<Setting>,
    /// Tree quads the fold sweeps at a time, set in the config.
    pub fold_quads: Option<Setting>,
    /// Slices of a folded level's vertices (the fold's items: slices x k/4), set in the
    /// config.
    pub fold_slices: Option<Setting>,
    /// Nothing but each tree's summary is read after the sweep (no rows, targets, reach or
    /// paths).
    pub summaries_only: bool,
}

/// The sweep's own parameters.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepPlan {
    /// Leading levels swept by one launch per batch.
    pub top_levels: Choice,
    /// Slices of the vertices in the summary (slices x k/4 items).
    pub summary_slices: Choice,
    /// Entries per local-memory frontier list of the device upward searches.
    pub frontier: Choice,
    /// Where the upward searches run: 1 on the device, 0 on the host (set by the half).
    pub upward_on_device: Choice,
    /// Trailing levels swept and folded into the summaries at once (the bottom one not
    /// written).
    pub fold_levels: Choice,
    /// Tree quads `phast_fold` sweeps at a time (every slice of the level's vertices for them
    /// before the next ones).
    pub fold_quads: Choice,
    /// Slices of a folded level's vertices: `phast_fold` runs slices x k/4 items.
    pub fold_slices: Choice,
}

/// The names of the sweep's parameters among the plugin's own in [`LaunchParams`].
const NAMES: [&str; 7] = [
    "top_levels",
    "summary_slices",
    "frontier",
    "upward_on_device",
    "fold_levels",
    "fold_quads",
    "fold_slices",
];

impl SweepPlan {
    /// Store the plan in `p` as the plugin's own parameters, with the sweep's rules.
    pub fn publish(&self, p: &mut LaunchParams) {
        for (name, c) in NAMES.iter().zip([
            &self.top_levels,
            &self.summary_slices,
            &self.frontier,
            &self.upward_on_device,
            &self.fold_levels,
            &self.fold_quads,
            &self.fold_slices,
        ]) {
            p.set_knob(name, c.clone());
        }
        for (when, what) in SWEEP_RULES {
            p.add_rule(when, what);
        }
    }

    /// The plan [`sweep_plan`] stored in `p` (`None`: the parameters were not made by it).
    pub fn of(p: &LaunchParams) -> Option<SweepPlan> {
        let get = |i: usize| p.knob_choice(NAMES[i]).cloned();
        Some(SweepPlan {
            top_levels: get(0)?,
            summary_slices: get(1)?,
            frontier: get(2)?,
            upward_on_device: get(3)?,
            fold_levels: get(4)?,
            fold_quads: get(5)?,
            fold_slices: get(6)?,
        })
    }
}

fn rule(i: usize) -> String {
    SWEEP_RULES[i].1.to_string()
}

fn set_or(s: &Option<Setting>, predicted: Choice) -> Choice {
    match s {
        Some(s) => Choice {
            value: s.value,
            source: Source::Config,
            reason: s.key.clone(),
        },
        None => predicted,
    }
}

/// Trees per batch for `req` on `dev` when neither the config nor the tuning cache set it, with
/// `queues` queues each holding a batch.
pub fn predict_trees(dev: &DeviceInfo, req: &SweepRequest<'_>, queues: usize) -> Choice {
    let (k, reason) = if dev.kind == "gpu" {
        let want = (1u64 << 36) / req.sweep_bytes.max(1);
        let k = (want.clamp(32, 4096) as usize).next_power_of_two();
        (k, rule(0))
    } else {
        (16, rule(1))
    };
    let (k, reason) = bounded(dev, req, queues, k, reason);
    Choice {
        value: k,
        source: Source::Predicted,
        reason,
    }
}

/// `k` within the largest allocation (one distance buffer of k x the held positions) and the
/// memory share of this process's queues, each bound that lowers it added to `reason`.
fn bounded(
    dev: &DeviceInfo,
    req: &SweepRequest<'_>,
    queues: usize,
    k: usize,
    mut reason: String,
) -> (usize, String) {
    let most = max_trees(req.held, req.dist_bytes, dev.max_alloc);
    let k = if most < k {
        reason.push_str(&format!(
            "; one distance buffer of k x {} positions within the device's largest allocation \
             allows {most}",
            req.held
        ));
        most
    } else {
        k
    };
    let share = MEMORY_SHARE / req.sharers.max(1) as f64;
    let cap = ((dev.global_mem as f64 * share - req.shared_bytes as f64).max(0.0)
        / (queues.max(1) as f64 * req.bytes_per_tree.max(1) as f64)) as usize;
    if cap < k {
        let cap = floor_pow2(cap);
        reason.push_str(&format!("; device memory allows {cap}"));
        (cap, reason)
    } else {
        (k, reason)
    }
}

/// The share of device memory the batches of all queues may take ([`SWEEP_RULES`]).
pub const MEMORY_SHARE: f64 = 0.75;

/// The largest power of two at most `x` (1 for 0).
fn floor_pow2(x: usize) -> usize {
    1usize << (usize::BITS - 1 - x.max(1).leading_zeros())
}

/// The most trees per batch with `held` positions of `dist_bytes` each per tree in one buffer
/// of at most `max_alloc` bytes (the device's largest allocation; 0 = unknown, taken as 2^31
/// elements of 4 bytes): the largest power of two (and multiple of 4, the sweep's row stride,
/// where it is at least 4) with k x held x dist_bytes within it; at least 1. (NVIDIA's driver
/// once failed batches above 2^31 elements; the cause was its fill of `init`, now a kernel:
/// benches/big_buffer.rs.)
pub fn max_trees(held: usize, dist_bytes: u64, max_alloc: u64) -> usize {
    let limit = if max_alloc > 0 { max_alloc } else { 1 << 33 };
    let per_tree = held.max(1) as u64 * dist_bytes.max(1);
    floor_pow2((limit / per_tree) as usize)
}

/// Apply the sweep rules to `p` (from [`Tuner::params`](tuccompi::tuning::Tuner::params) over the
/// sweep's kernels): the queues and the trees per batch unless the config or the cache set
/// them, and the sweep's own parameters ([`SweepPlan::publish`]). The half sets
/// `upward_on_device` afterwards.
pub fn sweep_plan(dev: &DeviceInfo, p: &mut LaunchParams, req: &SweepRequest<'_>) {
    let gpu = dev.kind == "gpu";
    if p.queues.source == Source::Predicted {
        p.queues = Choice {
            value: if gpu { 2 } else { 1 },
            source: Source::Predicted,
            reason: rule(2),
        };
    }
    if p.batch.source == Source::Predicted {
        p.batch = predict_trees(dev, req, p.queues.value);
    } else if p.batch.source == Source::Cache {
        // Measured by `tuccompi tune`, perhaps for other rows held, another graph's hierarchy
        // or a process alone on the device: kept within the same bounds as a prediction.
        let cached = p.batch.value;
        let (k, why) = bounded(dev, req, p.queues.value, cached, String::new());
        if k < cached {
            p.batch = Choice {
                value: k,
                source: Source::Predicted,
                reason: format!("the tuning cache's {cached}, lowered{why}"),
            };
        }
    }
    let fill = dev.compute_units as usize * if gpu { 2048 } else { 64 };
    let quads = p.batch.value.div_ceil(4);
    // The top launch runs about 2 work-groups per compute unit, each owning some tree quads:
    // with fewer quads than that, one group per quad, of phast_top's local size.
    let cus = dev.compute_units as usize;
    let reach = if gpu && quads < 2 * cus {
        let lt = p
            .local
            .get("phast_top")
            .map(|c| c.value)
            .filter(|&v| v > 0)
            .unwrap_or(256);
        (quads * lt).min(fill)
    } else {
        fill
    };
    let top = req
        .level_sizes
        .iter()
        .take_while(|&&s| (s as usize) * quads < reach)
        .count();
    let levels = req.level_sizes.len();
    let mut top_levels = set_or(
        &req.top_levels,
        Choice {
            value: top,
            source: Source::Predicted,
            reason: rule(3),
        },
    );
    top_levels.value = top_levels.value.min(levels);
    let summary_slices = Choice {
        value: (fill / quads.max(1)).clamp(1, req.n.max(1)),
        source: Source::Predicted,
        reason: rule(4),
    };
    let frontier = set_or(
        &req.frontier,
        Choice {
            value: 1024.min((dev.local_mem as usize * 3 / 4 / 8).max(1)),
            source: Source::Predicted,
            reason: rule(6),
        },
    );
    // Levels after the leading launch.
    let after = levels - top_levels.value.min(levels);
    let mut fold_levels = set_or(
        &req.fold_levels,
        Choice {
            value: if after > 0 {
                let big = FOLD_MIN_ITEMS * summary_slices.value;
                let tail = req.level_sizes[levels - after..levels - 1]
                    .iter()
                    .rev()
                    .take_while(|&&s| s as usize >= big)
                    .count();
                1 + tail
            } else {
                0
            },
            source: Source::Predicted,
            reason: rule(5),
        },
    );
    fold_levels.value = fold_levels.value.min(after);
    if !req.summaries_only && fold_levels.value > 0 {
        fold_levels = Choice {
            value: 0,
            source: Source::Predicted,
            reason: "0: distance rows, targets, reach or paths read every row after the sweep"
                .into(),
        };
    }
    // The batch was predicted for the rows of the positions above the bottom level; without a
    // fold (every level in the leading launch) every position holds a row.
    if fold_levels.value == 0 && req.held < req.n && p.batch.source == Source::Predicted {
        let all = SweepRequest {
            held: req.n,
            bytes_per_tree: (req.bytes_per_tree as u128 * req.n as u128 / req.held.max(1) as u128)
                as u64,
            ..req.clone()
        };
        let again = predict_trees(dev, &all, p.queues.value);
        if again.value < p.batch.value {
            p.batch = again;
        }
    }
    let mut fold_quads = set_or(
        &req.fold_quads,
        Choice {
            value: if gpu { FOLD_QUADS.min(quads) } else { quads },
            source: Source::Predicted,
            reason: rule(7),
        },
    );
    fold_quads.value = fold_quads.value.clamp(1, quads.max(1));
    let mut fold_slices = set_or(
        &req.fold_slices,
        Choice {
            value: if gpu && req.dist_bytes == 4 {
                dev.compute_units as usize * FOLD_RESIDENT / quads.max(1)
            } else {
                summary_slices.value
            },
            source: Source::Predicted,
            reason: rule(8),
        },
    );
    fold_slices.value = fold_slices.value.clamp(1, req.n.max(1));
    if gpu {
        if let Some(c) = p
            .local
            .get_mut("phast_up")
            .filter(|c| c.source == Source::Predicted)
        {
            *c = Choice {
                value: 128.min(dev.max_work_group.max(1)),
                source: Source::Predicted,
                reason: rule(9),
            };
        }
    }
    SweepPlan {
        top_levels,
        summary_slices,
        frontier,
        upward_on_device: Choice::fixed(1, "set by the GPU half"),
        fold_levels,
        fold_quads,
        fold_slices,
    }
    .publish(p);
}

#[cfg(test)]
mod test;
