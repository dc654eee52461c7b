use super::*;

/// The forecast of the quick start's shape: a 100k-vertex road graph (347k arcs, a tree
/// scanning every arc), 2 build threads.
fn quick(pending: usize, cores: [(usize, bool); 2], gpus: usize, gpu_phast: bool) -> Forecast {
    Forecast::of(
        Sample::idle(0.012, 347_000.0),
        347_000,
        2,
        pending,
        cores,
        gpus,
        gpu_phast,
    )
}

#[test]
fn a_hierarchy_pays_back_only_over_enough_trees() {
    // 256 sources on 2 CPU workers: the build costs more than the whole Dijkstra run.
    let f = quick(256, [(2, true), (0, false)], 0, false);
    assert!(!f.pays(), "{f:?}");
    // Every source: the build pays back many times over.
    let f = quick(100_000, [(2, true), (0, false)], 0, false);
    assert!(f.pays(), "{f:?}");
    assert!(f.build + f.phast < f.without / 5.0, "{f:?}");
    // Resuming with few tasks left weighs only those.
    assert!(!quick(200, [(2, true), (0, false)], 0, false).pays());
}

#[test]
fn a_gpu_half_without_gpus_never_builds() {
    // CPU workers fixed to Dijkstra, GPU half "auto", no GPU: nothing can take PHAST.
    for pending in [256, 100_000, 10_000_000] {
        let f = quick(pending, [(2, false), (0, false)], 0, true);
        assert!(!f.pays(), "{pending}: {f:?}");
        assert_eq!(f.work, 0, "no slack, no build work");
    }
    // With a GPU it pays over enough trees, and only then.
    assert!(quick(10_000_000, [(2, false), (0, false)], 1, true).pays());
    assert!(!quick(256, [(2, false), (0, false)], 1, true).pays());
    // A GPU running the work list makes the CPU half's PHAST worth less.
    let alone = quick(20_000, [(15, true), (0, false)], 0, false);
    let beside = quick(20_000, [(15, true), (0, false)], 1, false);
    assert!(alone.pays() && !beside.pays(), "{alone:?} {beside:?}");
}

#[test]
fn the_build_budget_is_the_break_even() {
    let f = quick(100_000, [(2, true), (0, false)], 0, false);
    // The work a road graph needs, scaled by the slack over the forecast build.
    let want = ROAD_WORK_PER_ARC * 347_000.0 * (f.without - f.phast) / f.build;
    assert!(
        (f.work as f64 - want).abs() < want * 1e-9 + 1.0,
        "{f:?} {want}"
    );
    // More tasks, more slack, a larger budget.
    assert!(quick(1_000_000, [(2, true), (0, false)], 0, false).work > f.work);
    // A graph whose trees reach a tenth of its arcs: the build is ten times dearer.
    let part = Forecast::of(
        Sample::idle(0.0012, 34_700.0),
        347_000,
        2,
        100_000,
        [(2, true), (0, false)],
        0,
        false,
    );
    assert!(
        (part.build / f.build - 1.0).abs() < 1e-9,
        "per scan, not per tree"
    );
    // More threads build faster, less than in proportion.
    let wide = Forecast::of(
        Sample::idle(0.012, 347_000.0),
        347_000,
        16,
        100_000,
        [(2, true), (0, false)],
        0,
        false,
    );
    assert!(
        wide.build < f.build && wide.build > f.build / 8.0,
        "{wide:?} {f:?}"
    );
}

#[test]
fn verdicts_round_trip_and_never_replace_a_foreign_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.ch");
    Verdict::store(&path, "the contraction hierarchy is poor", 1234, false);
    let v = Verdict::load(&path).unwrap();
    assert_eq!(
        (v.reason.as_str(), v.work, v.structural),
        ("the contraction hierarchy is poor", 1234, false)
    );
    assert!(v.stops(1234) && v.stops(10) && !v.stops(1235));
    // A verdict occupies the hierarchy's place and the cache treats it as its own.
    assert!(cache::ownable(&path).is_ok());
    Verdict::store(&path, "poor", u64::MAX, true);
    assert!(Verdict::load(&path).unwrap().stops(u64::MAX));
    // Someone else's file is left alone.
    let other = dir.path().join("mine.ch");
    std::fs::write(&other, b"my notes").unwrap();
    Verdict::store(&other, "poor", 1, false);
    assert_eq!(std::fs::read(&other).unwrap(), b"my notes");
    assert!(Verdict::load(&other).is_none());
    // A link is not followed.
    let link = dir.path().join("link.ch");
    std::os::unix::fs::symlink(&other, &link).unwrap();
    Verdict::store(&link, "poor", 1, false);
    assert_eq!(std::fs::read(&other).unwrap(), b"my notes");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_choice_crosses_to_another_rank_whole_and_only_for_its_graph() {
    let g = |seed| crate::apsp::phast::cache::test::graph(seed, 1000);
    let (a, b) = (g(1), g(2));
    for wide in [false, true] {
        let c = Choice {
            cpu: CpuAlgorithm::Phast,
            gpu: GpuAlgorithm::Phast,
            reason: "explicit".into(),
            hierarchy: Some(std::sync::Arc::new(AnyHierarchy::build(&a, wide).unwrap())),
            report: serde_json::json!({"source": "built", "levels": 7}),
            selection: None,
            stored: Stored::default(),
        };
        let bytes = c.to_bytes(&a);
        let back = Choice::from_bytes(&bytes, &a).unwrap();
        assert_eq!((back.cpu, back.gpu), (c.cpu, c.gpu));
        assert_eq!(back.reason, c.reason);
        assert_eq!(back.report["levels"], 7);
        assert_eq!(back.report["from_rank_0"], true);
        match (
            c.hierarchy.as_deref().unwrap(),
            back.hierarchy.as_deref().unwrap(),
        ) {
            (AnyHierarchy::Narrow(x), AnyHierarchy::Narrow(y)) => {
                assert_eq!(
                    (&x.order, &x.up_weights, &x.down_weights),
                    (&y.order, &y.up_weights, &y.down_weights)
                )
            }
            (AnyHierarchy::Wide(x), AnyHierarchy::Wide(y)) => {
                assert_eq!(
                    (&x.order, &x.up_weights, &x.down_weights),
                    (&y.order, &y.up_weights, &y.down_weights)
                )
            }
            _ => panic!("the width changed on the way (wide = {wide})"),
        }
        // A rank holding another graph refuses the hierarchy, naming the difference.
        let Err(e) = Choice::from_bytes(&bytes, &b) else {
            panic!("a hierarchy of another graph was taken")
        };
        assert!(e.to_string().contains("another content"), "{e}");
        // Cut short or flipped: an error, never a wrong hierarchy.
        assert!(Choice::from_bytes(&bytes[..bytes.len() - 3], &a).is_err());
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(Choice::from_bytes(&flipped, &a).is_err());
        assert!(Choice::from_bytes(&bytes[..5], &a).is_err());
    }
    // Without a hierarchy (the fallback), only the head crosses.
    let c = Choice {
        cpu: CpuAlgorithm::Dijkstra,
        gpu: GpuAlgorithm::Worklist,
        reason: "as configured".into(),
        hierarchy: None,
        report: serde_json::json!({}),
        selection: None,
        stored: Stored::default(),
    };
    let back = Choice::from_bytes(&c.to_bytes(&a), &b).unwrap();
    assert!(back.hierarchy.is_none() && back.gpu == GpuAlgorithm::Worklist);
}

/// osm-moscow's arcs, and the arcs a Dijkstra tree of it scans (its largest component).
const MOSCOW: (usize, f64) = (901_838, 885_820.0);

/// Samples of osm-moscow's first 1,000 sources on the 2-core machine (2026-11-26). `LOADED`:
/// recorded by [`record_osm_moscow`] beside other helpers' builds (load average 7-8; three
/// samplings gave trees of 34.9-37.6 ms CPU, 135-150 ms wall, share 0.243-0.248); its build
/// took 4.70 CPU seconds, 9.27 wall seconds on 2 threads (the trees' share of the cores).
/// `IDLE`: from a run at load average 2.5 (the sampled tree 29.3 ms of wall; the run's 1,000
/// Dijkstra trees took 26.2 ms each on 2 workers, an upper bound of their CPU time), its
/// share taken as 1.
const LOADED: Sample = Sample {
    tree_cpu: 0.0355,
    tree_wall: 0.1496,
    scanned: MOSCOW.1,
    share: 0.244,
};
const IDLE: Sample = Sample {
    tree_cpu: 0.0262,
    tree_wall: 0.0293,
    scanned: MOSCOW.1,
    share: 1.0,
};

/// The 1,000 x 1,000 OD on osm-moscow on the 2-core machine: 2 CPU workers, 2 build threads.
fn moscow_od(sample: Sample, gpus: usize, gpu_phast: bool, pending: usize) -> Forecast {
    Forecast::of(
        sample,
        MOSCOW.0,
        2,
        pending,
        [(2, true), (0, false)],
        gpus,
        gpu_phast,
    )
}

#[test]
fn a_busy_machine_still_builds_for_the_moscow_od() {
    // The forecast before CPU time (wall-clock trees, 900 trees of build): Dijkstra under
    // load, as the busy machine chose (forecast 37-142 s of build that took 6.1-6.4 s).
    let old = |s: Sample| {
        let without = 1000.0 * s.tree_wall / 2.0;
        let build = 1000.0 * MOSCOW.0 as f64 * 0.9 * s.tree_wall / s.scanned / 2f64.powf(0.65);
        build + without / CPU_PHAST_SPEEDUP < without
    };
    assert!(
        !old(LOADED),
        "the recorded case no longer shows the old choice"
    );
    for (what, s) in [("loaded", LOADED), ("idle", IDLE)] {
        let f = moscow_od(s, 0, false, 1000);
        assert!(f.pays(), "{what}: {f:?}");
        // The build's work budget covers the work a road graph's build needs.
        assert!(
            f.work as f64 >= ROAD_WORK_PER_ARC * MOSCOW.0 as f64,
            "{what}: {f:?}"
        );
        // The forecast build is within a few times of the measured one (4.70 CPU seconds:
        // 9.27 s at the loaded share), never below it.
        let measured = 4.70 / (2.0 * s.share);
        assert!(
            f.build > measured && f.build < 6.0 * measured,
            "{what}: {f:?} against {measured:.2} s"
        );
    }
    // The load slows the build and the CPU workers' trees alike: where only CPU cores run,
    // the decision and the build's work budget are the same under load and idle.
    let (busy, calm) = (
        moscow_od(LOADED, 0, false, 1000),
        moscow_od(
            Sample {
                share: 1.0,
                ..LOADED
            },
            0,
            false,
            1000,
        ),
    );
    assert!((busy.build / calm.build - 1.0 / LOADED.share).abs() < 1e-9);
    assert!((busy.without / calm.without - 1.0 / LOADED.share).abs() < 1e-9);
    assert_eq!(busy.work, calm.work);
    // Few tasks still do not pay, loaded or not.
    for s in [LOADED, IDLE] {
        assert!(!moscow_od(s, 0, false, 100).pays(), "{s:?}");
    }
}

#[test]
fn a_busy_machine_slows_the_cores_not_the_gpus() {
    // Every source of osm-moscow on 2 loaded cores beside a GPU fixed to the work list: the
    // CPU half's PHAST would add little to the GPU, and the build takes the loaded cores
    // for long. In CPU time with the cores' share: no build. In wall-clock terms (the GPU
    // counted as if slowed by the load as much as the cores): a build.
    let all = 411_992;
    let f = moscow_od(LOADED, 1, false, all);
    assert!(!f.pays(), "{f:?}");
    let wall = Sample {
        tree_cpu: LOADED.tree_wall,
        share: 1.0,
        ..LOADED
    };
    assert!(moscow_od(wall, 1, false, all).pays());
    // Idle, the CPU half's PHAST is worth its build.
    assert!(
        moscow_od(IDLE, 1, false, all).pays(),
        "{:?}",
        moscow_od(IDLE, 1, false, all)
    );
    // The GPU's trees take as long loaded as idle.
    let gpu_only = |s: Sample| {
        Forecast::of(s, MOSCOW.0, 2, all, [(0, false), (0, false)], 1, true).phast / s.tree_cpu
    };
    assert!((gpu_only(LOADED) / gpu_only(IDLE) - 1.0).abs() < 1e-9);
}

#[test]
fn the_share_comes_from_cpu_seconds_over_wall_seconds() {
    // Two threads that obtained 0.5 CPU seconds in all over 1 wall second: a quarter core each.
    let trees = [(0.03, 0.12, 10.0), (0.04, 0.15, 12.0), (0.035, 0.14, 11.0)];
    let s = Sample::of(&trees, 0.5, 2, 1.0);
    assert_eq!((s.tree_cpu, s.tree_wall, s.scanned), (0.035, 0.14, 11.0));
    assert!((s.share - 0.25).abs() < 1e-12, "{s:?}");
    // Idle: at most one core per thread, whatever the clocks' rounding.
    assert_eq!(Sample::of(&trees, 2.1, 2, 1.0).share, 1.0);
    // Starved: no less than MIN_SHARE; too short to tell: 1.
    assert_eq!(Sample::of(&trees, 0.03, 2, 10.0).share, MIN_SHARE);
    assert_eq!(Sample::of(&trees, 0.001, 2, 1.0).share, 1.0);
}

#[test]
fn the_report_sets_the_forecast_beside_what_happened() {
    let g = crate::apsp::phast::cache::test::graph(3, 1000);
    let dir = tempfile::tempdir().unwrap();
    let cache_path = dir.path().join("g.ch");
    let sources: Vec<u32> = (0..g.n as u32).collect();
    let gpus = || tuccompi::plugin::DeviceCount::default();
    let req = Request {
        cpu: Some(CpuAlgorithm::Auto),
        gpu: None,
        sources: &sources,
        // Far more tasks than the build costs on any machine (the sources are sampled only).
        pending: 1_000_000,
        cpu_workers: 1,
        gpus: &gpus,
        cache_path: Some(&cache_path),
        store: true,
        targets: false,
        kept: None,
        pair_targets: None,
        restrict: None,
        sweep: Default::default(),
    };
    let c = choose(&g, false, &req).unwrap();
    let f = &c.report["forecast"];
    assert_eq!(c.cpu, CpuAlgorithm::Phast, "{}", c.report);
    for key in [
        "dijkstra_tree_cpu_seconds",
        "dijkstra_tree_wall_seconds",
        "core_share",
        "build_seconds",
        "run_seconds",
        "measured_build_seconds",
    ] {
        assert!(f[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {f}");
    }
    assert_eq!(f["chosen"], "phast", "{f}");
    assert_eq!(f["build_finished"], true, "{f}");
    assert_eq!(f["measured_build_seconds"], c.report["preprocess_seconds"]);
    // The built hierarchy goes to its cache file beside the run: there once waited for, and
    // what the next run reads.
    c.stored.wait();
    let key = Key::of::<u32>(&g, &ChParams::default());
    let stored = crate::apsp::phast::cache::load::<u32>(&cache_path, &key).unwrap();
    let Some(AnyHierarchy::Narrow(h)) = c.hierarchy.as_deref() else {
        panic!("a u32 hierarchy: {}", c.report)
    };
    assert!(&stored == h, "the cache file holds another hierarchy");
    let again = choose(&g, false, &req).unwrap();
    assert_eq!(again.report["source"], "cache", "{}", again.report);
}

/// Prints what the forecast's recorded samples are made of on this machine (osm-moscow, the
/// first 1,000 sources): `cargo test --lib record_osm_moscow -- --ignored --nocapture`, once
/// idle and once beside two busy processes (`yes > /dev/null &` twice).
#[test]
#[ignore]
fn record_osm_moscow() {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/osm-moscow.gr.gz");
    let g = Csr::from_edges(&crate::graph::read_graph(&p).unwrap()).unwrap();
    let sources: Vec<u32> = (0..1000).collect();
    let proc_cpu = || {
        let s = std::fs::read_to_string("/proc/self/stat").unwrap();
        let f: Vec<&str> = s.rsplit_once(')').unwrap().1.split_whitespace().collect();
        (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
    };
    for _ in 0..3 {
        eprintln!("{:?}", sample_trees(&g, &sources));
    }
    let (c, t) = (proc_cpu(), Instant::now());
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).unwrap();
    eprintln!(
        "build: wall {:.3} s, cpu {:.3} s, {} threads, {} levels",
        t.elapsed().as_secs_f64(),
        proc_cpu() - c,
        rayon::current_num_threads(),
        h.num_levels()
    );
    let (c, t) = (thread_cpu(), Instant::now());
    let mut dj = crate::apsp::dijkstra::Dijkstra::<u64>::new(g.n);
    for s in 0..20 {
        dj.run(&g, s * 997);
    }
    eprintln!(
        "20 trees on one thread: wall {:.3} s, cpu {:.3} s",
        t.elapsed().as_secs_f64(),
        thread_cpu() - c
    );
}
