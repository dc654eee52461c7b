use super::*;

/// The forecast of the quick start's shape: a 100k-vertex road graph (347k arcs, a tree
/// scanning every arc), 2 build threads.
fn quick(pending: usize, cores: [(usize, bool); 2], gpus: usize, gpu_phast: bool) -> Forecast {
    Forecast::of(
        0.012, 347_000.0, 347_000, 2, pending, cores, gpus, gpu_phast,
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
        0.0012,
        34_700.0,
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
        0.012,
        347_000.0,
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
            hierarchy: Some(AnyHierarchy::build(&a, wide).unwrap()),
            report: serde_json::json!({"source": "built", "levels": 7}),
        };
        let bytes = c.to_bytes(&a);
        let back = Choice::from_bytes(&bytes, &a).unwrap();
        assert_eq!((back.cpu, back.gpu), (c.cpu, c.gpu));
        assert_eq!(back.reason, c.reason);
        assert_eq!(back.report["levels"], 7);
        assert_eq!(back.report["from_rank_0"], true);
        match (
            c.hierarchy.as_ref().unwrap(),
            back.hierarchy.as_ref().unwrap(),
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
    };
    let back = Choice::from_bytes(&c.to_bytes(&a), &b).unwrap();
    assert!(back.hierarchy.is_none() && back.gpu == GpuAlgorithm::Worklist);
}
