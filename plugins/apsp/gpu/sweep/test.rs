//! The level-sweep rules against the devices and graphs they were measured on.

use super::*;

fn dev(kind: &str, cus: u32, maxwg: usize) -> DeviceInfo {
    DeviceInfo::described(kind, cus, maxwg)
}

/// A request for summaries alone over `level_sizes` (n vertices), 8 MiB a tree's sweep,
/// nothing set in the config.
fn summaries_request(level_sizes: &[u32], n: usize) -> SweepRequest<'_> {
    SweepRequest {
        level_sizes,
        n,
        held: n,
        dist_bytes: 4,
        sharers: 1,
        sweep_bytes: 8 << 20,
        bytes_per_tree: 8 << 20,
        shared_bytes: 0,
        top_levels: None,
        frontier: None,
        fold_levels: None,
        fold_quads: None,
        fold_slices: None,
        summaries_only: true,
    }
}

/// GPU PHAST's trees per batch (`predict_trees`): 64 GiB per sweep, within 32..4096, at most
/// the largest power of two whose distance buffer fits the largest allocation, then 75% of
/// device memory rounded down to a power of two.
#[test]
fn sweep_batches_grow_to_the_allocation_bound_then_memory() {
    let mut h100 = dev("gpu", 132, 1024);
    h100.global_mem = 85_045_000_000;
    h100.max_alloc = 21_261_000_000;
    // Held positions: all of them, or those above a bottom level of 44.7% when it is folded.
    let req = |n: usize, down: usize, held: usize| SweepRequest {
        level_sizes: &[],
        n,
        held,
        dist_bytes: 4,
        sharers: 1,
        sweep_bytes: 4 * (n + down) as u64,
        bytes_per_tree: held as u64 * 8 + (held as u64).div_ceil(8) + 64,
        shared_bytes: 0,
        top_levels: None,
        frontier: None,
        fold_levels: None,
        fold_quads: None,
        fold_slices: None,
        summaries_only: false,
    };
    // osm-moscow (0.41M vertices, 0.89M downward arcs): 2^36 / 5.2 MB = 13,2xx -> the cap of
    // 4,096.
    assert_eq!(
        predict_trees(&h100, &req(411_992, 887_162, 411_992), 2).value,
        4096
    );
    // The 26.4M-vertex tiling (57.7M downward arcs), bottom level folded: 2^36 / 336 MB = 204
    // -> 256; 256 x 14.6M x 4 bytes fits the largest allocation (21.3 GB), and 2 queues of
    // 256 trees x 118.5 MB fit 75% of the memory.
    let k8 = predict_trees(&h100, &req(26_367_488, 57_700_000, 14_580_000), 2);
    assert_eq!(k8.value, 256, "{}", k8.reason);
    // Every position held: the largest allocation allows 21.3 GB / (4 x 26.4M) = 201 -> 128.
    let all = predict_trees(&h100, &req(26_367_488, 57_700_000, 26_367_488), 2);
    assert_eq!(all.value, 128, "{}", all.reason);
    assert!(
        all.reason.contains("largest allocation allows 128"),
        "{}",
        all.reason
    );
    // Two ranks of the machine on the same device: half the share each, 128.
    let shared = SweepRequest {
        sharers: 2,
        ..req(26_367_488, 57_700_000, 14_580_000)
    };
    assert_eq!(predict_trees(&h100, &shared, 2).value, 128);
    // A small graph: the cap of 4,096.
    assert_eq!(
        predict_trees(&h100, &req(40_000, 75_000, 40_000), 2).value,
        4096
    );
    // Device memory: 8 GiB x 0.75 over 2 queues of 3.3 MB per tree = 975 -> 512.
    let small = dev("gpu", 132, 1024);
    let m = predict_trees(&small, &req(411_992, 887_162, 411_992), 2);
    assert_eq!(m.value, 512, "{m:?}");
    assert!(m.reason.contains("device memory allows 512"), "{m:?}");
    // CPU devices: 16.
    assert_eq!(
        predict_trees(&dev("cpu", 2, 4096), &req(411_992, 887_162, 411_992), 1).value,
        16
    );
    // The bound itself: the largest power of two with k x held x bytes within the allocation
    // (2^33 bytes when the device gives none), at least 1.
    for (held, bytes, alloc) in [
        (1usize, 4u64, 1u64 << 30),
        (3, 8, 1 << 30),
        (1000, 4, 0),
        (411_992, 4, 21_261_000_000),
        (26_367_488, 4, 21_261_000_000),
        (1 << 31, 8, 1 << 33),
        (usize::MAX / 16, 4, 1 << 33),
    ] {
        let k = max_trees(held, bytes, alloc);
        let limit = if alloc > 0 { alloc } else { 1 << 33 } as u128;
        let need = |k: usize| k as u128 * held as u128 * bytes as u128;
        assert!(k.is_power_of_two());
        assert!(k == 1 || need(k) <= limit, "held {held} k {k}");
        assert!(need(2 * k) > limit, "held {held}: {k} is not the largest");
    }
}

/// Launch parameters with `k` trees per batch set in the config, 2 queues and `phast_top`
/// groups of 256, for [`sweep_plan`] to complete.
fn set_params(k: usize) -> LaunchParams {
    LaunchParams {
        local: [("phast_top".to_string(), Choice::fixed(256, "test"))].into(),
        batch: Choice {
            value: k,
            source: Source::Config,
            reason: "test".into(),
        },
        groups_per_task: None,
        queues: Choice::fixed(2, "test"),
        persistent_items: None,
        cache_key: None,
        knobs: Default::default(),
        rules: Vec::new(),
    }
}

/// The leading levels in one launch: against every resident thread while the batch has at least
/// 2 tree quads per compute unit; against the one launch's own groups (a group per quad) below.
#[test]
fn top_levels_follow_the_groups_the_one_launch_has() {
    let gpu = dev("gpu", 132, 1024);
    // Level sizes from the top: 1, 2, 4, ..., 2^20.
    let sizes: Vec<u32> = (0..21).map(|i| 1u32 << i).collect();
    let top = |k: usize| {
        let mut p = set_params(k);
        let req = SweepRequest {
            sweep_bytes: 8 << 21,
            bytes_per_tree: 8 << 21,
            ..summaries_request(&sizes, 1 << 21)
        };
        sweep_plan(&gpu, &mut p, &req);
        SweepPlan::of(&p).unwrap().top_levels.value
    };
    // k = 4096: 1024 quads >= 264: levels under 132 x 2048 / 1024 = 264 vertices (1..128).
    assert_eq!(top(4096), 9);
    // k = 64: 16 quads, 16 groups of 256 items: levels under 4096 / 16 = 256 vertices (1..128),
    // not the 16,896 that every resident thread would take (1..16384: 15 levels).
    assert_eq!(top(64), 8);
    // k = 1024: 256 quads < 264: 256 groups x 256 = 65,536 items, under 256 vertices.
    assert_eq!(top(1024), 8);
}

/// Levels are folded only when nothing but the summaries is wanted: the bottom one whenever it
/// has a launch of its own (not inside the one leading launch), and the trailing levels above
/// it of at least 128 x the summary slices vertices (132 x 2048 / 256 quads = 1056 slices); a
/// count set in the config is capped at the levels after the leading launch.
#[test]
fn levels_are_folded_only_for_summaries_below_the_leading_launch() {
    let gpu = dev("gpu", 132, 1024);
    let sizes = [1u32, 4, 5000, 130_000, 140_000, 900_000];
    let fold = |summaries_only: bool, top: Option<usize>, set: Option<usize>| {
        let mut p = set_params(1024);
        let setting = |v: Option<usize>, key: &str| {
            v.map(|value| Setting {
                value,
                key: key.into(),
            })
        };
        let req = SweepRequest {
            top_levels: setting(top, "[apsp] gpu_top_levels"),
            fold_levels: setting(set, "[apsp] gpu_fold_levels"),
            summaries_only,
            ..summaries_request(&sizes, 1_445_005)
        };
        sweep_plan(&gpu, &mut p, &req);
        let plan = SweepPlan::of(&p).unwrap();
        assert_eq!(plan.summary_slices.value, 1056);
        plan.fold_levels.value
    };
    // 140,000 and 900,000 are at least 128 x 1056 = 135,168; 130,000 is not.
    assert_eq!(fold(true, None, None), 2);
    assert_eq!(fold(false, None, None), 0);
    assert_eq!(fold(true, Some(4), None), 2);
    assert_eq!(fold(true, Some(5), None), 1);
    assert_eq!(fold(true, Some(6), None), 0);
    assert_eq!(fold(true, Some(100), None), 0);
    // Set: capped at the levels after the leading launch; nothing without summaries alone.
    assert_eq!(fold(true, Some(2), Some(3)), 3);
    assert_eq!(fold(true, Some(2), Some(9)), 4);
    assert_eq!(fold(true, None, Some(0)), 0);
    assert_eq!(fold(false, None, Some(3)), 0);
}

/// The fold sweeps 64 tree quads at a time on a GPU (fewer when the batch has fewer), every
/// quad at once on a CPU device; `phast_up` runs 128 items per tree on a GPU unless its local
/// size was set or measured.
#[test]
fn the_fold_takes_a_slice_of_the_trees_and_upward_groups_shrink_on_gpus() {
    let plan = |kind: &str, k: usize, up: Choice| {
        let mut p = set_params(k);
        p.local.insert("phast_up".into(), up);
        let req = summaries_request(&[1, 10, 1000, 100_000], 101_011);
        sweep_plan(&dev(kind, 132, 1024), &mut p, &req);
        let quads = SweepPlan::of(&p).unwrap().fold_quads.value;
        (quads, p.local["phast_up"].clone())
    };
    let predicted = Choice {
        value: 256,
        source: Source::Predicted,
        reason: "characterization".into(),
    };
    let (q, up) = plan("gpu", 4096, predicted.clone());
    assert_eq!((q, up.value, up.source), (64, 128, Source::Predicted));
    assert_eq!(plan("gpu", 64, predicted.clone()).0, 16);
    let (q, up) = plan("cpu", 4096, predicted);
    assert_eq!((q, up.value), (1024, 256));
    let set = Choice {
        value: 512,
        source: Source::Config,
        reason: "[apsp] local_size".into(),
    };
    assert_eq!(plan("gpu", 4096, set).1.value, 512);
}

/// A batch predicted for the rows above the bottom level (the only ones held when it is
/// folded) is predicted again for every row when nothing is folded (here every level is in the
/// leading launch); a batch set in the config is left as set.
#[test]
fn a_batch_without_a_fold_is_bounded_by_every_row() {
    let mut h100 = dev("gpu", 132, 1024);
    h100.global_mem = 85_045_000_000;
    h100.max_alloc = 21_261_000_000;
    // The 26.4M-vertex tiling as two levels, the bottom one 44.7% of the vertices.
    let sizes = [14_580_000u32, 11_787_488];
    let held = 14_580_000usize;
    let run = |top: Option<usize>, set: Option<usize>| {
        let mut p = set_params(set.unwrap_or(1));
        if set.is_none() {
            p.batch = Choice {
                value: 1,
                source: Source::Predicted,
                reason: "characterization".into(),
            };
        }
        let req = SweepRequest {
            held,
            sweep_bytes: 4 * (26_367_488 + 57_700_000),
            bytes_per_tree: held as u64 * 8 + (held as u64).div_ceil(8) + 64,
            top_levels: Setting::from_config(top, "[apsp] gpu_top_levels"),
            ..summaries_request(&sizes, 26_367_488)
        };
        sweep_plan(&h100, &mut p, &req);
        (p.batch.value, SweepPlan::of(&p).unwrap().fold_levels.value)
    };
    // Folded: 256 (2^36 / 336 MB = 204 -> 256, within the allocation and memory).
    let (k, folded) = run(None, None);
    assert_eq!(k, 256);
    assert!(folded >= 1, "{folded}");
    // Both levels in the leading launch: nothing folded, every row held: 21.3 GB / (4 x
    // 26.4M) = 201 -> 128.
    assert_eq!(run(Some(2), None), (128, 0));
    // Set in the config: kept (setup refuses it if its buffer exceeds the allocation).
    assert_eq!(run(Some(2), Some(256)), (256, 0));
}

/// The fold's slices: every item resident at once on a GPU with 32-bit distances (compute
/// units x FOLD_RESIDENT over the batch's quads), the summary's slices with 64-bit ones and on
/// a CPU device, the config's value when set (within 1..=n).
#[test]
fn the_fold_runs_one_wave_of_items_on_gpus() {
    let plan = |kind: &str, k: usize, dist_bytes: u64, set: Option<usize>| {
        let mut p = set_params(k);
        let req = SweepRequest {
            dist_bytes,
            fold_slices: Setting::from_config(set, "[apsp] gpu_fold_slices"),
            ..summaries_request(&[1, 10, 1000, 100_000], 101_011)
        };
        sweep_plan(&dev(kind, 132, 1024), &mut p, &req);
        let plan = SweepPlan::of(&p).unwrap();
        (plan.fold_slices, plan.summary_slices.value)
    };
    // An H100 (132 compute units): osm-moscow's batch of 4,096 trees, 1,024 quads: 165 slices
    // of 1,024 items, 168,960 = 132 x 1,280 resident; the summary's 264 assume 2,048 a unit.
    let (f, summary) = plan("gpu", 4096, 4, None);
    assert_eq!((f.value, f.source, summary), (165, Source::Predicted, 264));
    assert!(f.reason.contains("one wave"), "{}", f.reason);
    // The 26.4M-vertex tiling's 256 trees: 2,640 slices of 64 quads.
    assert_eq!(plan("gpu", 256, 4, None).0.value, 2640);
    // 64-bit distances and CPU devices: the summary's slices.
    let (f, summary) = plan("gpu", 4096, 8, None);
    assert_eq!(f.value, summary);
    let (f, summary) = plan("cpu", 16, 4, None);
    assert_eq!(f.value, summary);
    // Set: the config's value, within 1..=n.
    let f = plan("gpu", 4096, 4, Some(3)).0;
    assert_eq!((f.value, f.source), (3, Source::Config));
    assert_eq!(plan("gpu", 4096, 4, Some(10_000_000)).0.value, 101_011);
}

/// A batch from the tuning cache is kept within the bounds a predicted one has: the largest
/// allocation over the held rows and the memory share divided among the device's processes;
/// one within them is kept as measured.
#[test]
fn a_cached_batch_is_lowered_to_what_the_device_allows() {
    let mut h100 = dev("gpu", 132, 1024);
    h100.global_mem = 85_045_000_000;
    h100.max_alloc = 21_261_000_000;
    let plan = |cached: usize, sharers: usize| {
        let mut p = set_params(cached);
        p.batch.source = Source::Cache;
        // The K = 8 tiling with its bottom level folded: 14.6M positions held, 117 MB a tree.
        let held = 14_601_311usize;
        let req = SweepRequest {
            held,
            n: 26_367_488,
            sharers,
            bytes_per_tree: held as u64 * 8 + (held as u64).div_ceil(8) + 64,
            ..summaries_request(&[1, 10, 1000, 100_000], 26_367_488)
        };
        sweep_plan(&h100, &mut p, &req);
        p.batch
    };
    // 256 fits alone (2 queues x 256 x 117 MB = 60 GB of 75% of 85 GB).
    let b = plan(256, 1);
    assert_eq!((b.value, b.source), (256, Source::Cache));
    // 512 exceeds the largest allocation (512 x 14.6M x 4 bytes = 29.9 GB): 256.
    let b = plan(512, 1);
    assert_eq!((b.value, b.source), (256, Source::Predicted));
    assert!(
        b.reason.contains("tuning cache's 512, lowered") && b.reason.contains("allocation"),
        "{}",
        b.reason
    );
    // Two processes on the device: half the share, 128.
    let b = plan(256, 2);
    assert_eq!(b.value, 128);
    assert!(
        b.reason.contains("device memory allows 128"),
        "{}",
        b.reason
    );
}
