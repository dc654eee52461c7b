use super::*;

const SSSP: KernelSource = KernelSource {
    stem: "rules",
    source: include_str!("testdata/rules.cl"),
    characterization: include_str!("testdata/rules.toml"),
};
const COLLATZ: KernelSource = KernelSource {
    stem: "collatz",
    source: include_str!("testdata/collatz.cl"),
    characterization: include_str!("testdata/collatz.toml"),
};

fn dev(kind: &str, cus: u32, maxwg: usize) -> DeviceInfo {
    DeviceInfo::described(kind, cus, maxwg)
}

fn shape(n: usize) -> Shape {
    Shape {
        n,
        bytes_per_task: n as u64 * 6,
        shared_bytes: n as u64 * 16,
    }
}

#[test]
fn sssp_characterizations_are_complete_and_valid() {
    let c = characterizations(&SSSP).unwrap();
    assert!(c.contains_key("sssp_relax") && c["sssp_relax"].access == Access::Scatter);
    assert!(c["sssp_minimum"].reduction);
    characterizations(&COLLATZ).unwrap();
}

#[test]
fn kernel_names_are_found() {
    let src = "__kernel void a(int x) {}\n__kernel  void b_2 (void) {}\n\
               __kernel __attribute__((reqd_work_group_size(256, 1, 1)))\nvoid c(int x) {}\n\
               __kernel void __attribute__((a(1))) d(int x) {}\n";
    assert_eq!(kernel_names(src), vec!["a", "b_2", "c", "d"]);
}

const CRAUSER: [&str; 5] = [
    "sssp_init",
    "sssp_relax",
    "sssp_minimum",
    "sssp_update",
    "sssp_summary",
];

#[test]
fn gpu_rules() {
    let c = subset(&characterizations(&SSSP).unwrap(), &CRAUSER);
    let p = predict(&c, &dev("gpu", 132, 1024), shape(400_000), None, None, None);
    assert_eq!(p.local["sssp_relax"].value, 256);
    assert_eq!(p.local["sssp_update"].value, 256);
    assert_eq!(p.local["sssp_minimum"].value, 256);
    // 132 CUs x 1024 x 16 = 2,162,688 items: 6 sources of 400k vertices.
    assert_eq!(p.batch.value, 6);
    assert_eq!(p.queues.value, 1);
    // A small problem: the batch caps at 256; still one queue (rule *queues*).
    let p = predict(&c, &dev("gpu", 132, 1024), shape(300), None, None, None);
    assert_eq!(p.batch.value, 256);
    assert_eq!(p.queues.value, 1);
    assert!(p.groups_per_task() >= 1);
}

/// Each value names the rule that gave it, and `check` cites the rules behind the values
/// shown by name, in the order of [`GenericRule::ALL`].
#[test]
fn the_rules_behind_the_values_are_cited_by_name() {
    let names: Vec<&str> = GenericRule::ALL.iter().map(|r| r.name()).collect();
    for (i, n) in names.iter().enumerate() {
        assert!(!names[..i].contains(n), "two rules are named {n}");
        assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{n}");
    }
    let cited = |p: &LaunchParams| -> Vec<String> {
        p.applied_rules()
            .into_iter()
            .filter_map(|r| r.name)
            .collect()
    };
    let c = subset(&characterizations(&SSSP).unwrap(), &CRAUSER);
    let p = predict(&c, &dev("gpu", 132, 1024), shape(400_000), None, None, None);
    assert_eq!(p.batch.reason, GenericRule::BatchFill.what());
    assert_eq!(p.queues.reason, GenericRule::Queues.what());
    assert_eq!(
        p.local["sssp_relax"].reason,
        GenericRule::LocalScatterOrHeavy.what()
    );
    assert_eq!(
        cited(&p),
        [
            "local-scatter-or-heavy",
            "local-streaming",
            "batch-fill",
            "groups-per-task",
            "queues"
        ]
    );
    // A reduction cut to a power of two, on a CPU device.
    let p = predict(&c, &dev("cpu", 2, 48), shape(3353), None, None, None);
    assert!(p.local["sssp_minimum"]
        .reason
        .ends_with(GenericRule::LocalReduction.what()));
    assert_eq!(
        cited(&p),
        [
            "local-cpu-device",
            "local-reduction",
            "batch-fill",
            "groups-per-task",
            "queues"
        ]
    );
    let wl = subset(&characterizations(&SSSP).unwrap(), &["wl_init", "wl_round"]);
    let p = predict(
        &wl,
        &dev("gpu", 132, 1024),
        shape(400_000),
        None,
        Some(1),
        None,
    );
    assert_eq!(p.batch.reason, GenericRule::BatchWorkList.what());
    assert_eq!(
        p.persistent_items.as_ref().unwrap().reason,
        GenericRule::PersistentGrid.what()
    );
    // The config's queues bring no rule; a plugin's own rule has no generic name.
    let mut p = p;
    p.add_rule("tile shape", "a plugin's own");
    let rules = p.applied_rules();
    assert_eq!(
        rules.last().map(|r| (r.name.clone(), r.when.as_str())),
        Some((None, "tile shape"))
    );
    assert!(
        cited(&p).contains(&"batch-work-list".to_string()),
        "{:?}",
        cited(&p)
    );
    assert!(
        !cited(&p).contains(&"queues".to_string()),
        "{:?}",
        cited(&p)
    );
}

#[test]
fn config_wins_and_reductions_stay_power_of_two() {
    let c = subset(&characterizations(&SSSP).unwrap(), &CRAUSER);
    let p = predict(
        &c,
        &dev("gpu", 8, 1024),
        shape(1000),
        Some(7),
        Some(3),
        Some(96),
    );
    assert_eq!((p.batch.value, p.batch.source), (7, Source::Config));
    assert_eq!(p.queues.value, 3);
    assert_eq!(p.local["sssp_relax"].value, 96);
    assert_eq!(p.local["sssp_minimum"].value, 64);
}

#[test]
fn cpu_device_rules() {
    let c = subset(&characterizations(&SSSP).unwrap(), &CRAUSER);
    let p = predict(&c, &dev("cpu", 2, 4096), shape(3353), None, None, None);
    assert_eq!(p.local["sssp_relax"].value, 64);
    assert_eq!(p.queues.value, 1);
    assert_eq!(p.batch.value, 3); // 2 x 4096 / 3353
}

#[test]
fn memory_caps_the_batch() {
    let c = subset(&characterizations(&SSSP).unwrap(), &CRAUSER);
    let mut d = dev("gpu", 132, 1024);
    d.global_mem = 64 << 20; // 64 MiB
    let p = predict(&c, &d, shape(1_000_000), None, Some(1), None);
    // 40% of 64 MiB = 25.6 MiB, minus 16 MB of shared data, over 6 MB per source: 1.
    assert_eq!(p.batch.value, 1);
}

#[test]
fn work_list_rules() {
    let c = subset(
        &characterizations(&SSSP).unwrap(),
        &["wl_init", "wl_round", "sssp_summary"],
    );
    assert_eq!(c.len(), 3);
    let p = predict(
        &c,
        &dev("gpu", 132, 1024),
        shape(400_000),
        None,
        Some(1),
        None,
    );
    assert_eq!(p.batch.value, 512);
    assert_eq!(p.local["wl_round"].value, 256);
    assert_eq!(p.persistent_items(), 132 * 2048);
    let b = |n| {
        predict(&c, &dev("gpu", 132, 1024), shape(n), None, Some(1), None)
            .batch
            .value
    };
    assert_eq!((b(40_000), b(600_000)), (1024, 256));
    let p = predict(&c, &dev("cpu", 2, 4096), shape(3000), None, None, None);
    assert_eq!((p.batch.value, p.persistent_items()), (16, 128));
}

#[test]
fn driver_choice_only_where_allowed() {
    let c = subset(
        &characterizations(&SSSP).unwrap(),
        &["wl_init", "wl_round", "sssp_summary"],
    );
    let p = predict(&c, &dev("gpu", 132, 1024), shape(1000), None, None, Some(0));
    assert_eq!(p.local["wl_init"].value, 0);
    assert_eq!(p.local["wl_round"].value, 256);
    assert_eq!(p.local["sssp_summary"].value, 256);
}

#[test]
fn precedence_config_then_cache_then_prediction() {
    let c = subset(
        &characterizations(&SSSP).unwrap(),
        &["wl_init", "wl_round", "sssp_summary"],
    );
    let d = dev("gpu", 132, 1024);
    let cached = Some(CacheEntry {
        local_size: Some(64),
        batch: Some(300),
        knobs: Default::default(),
    });
    let p = choose(&c, &d, shape(400_000), None, None, None, cached.clone());
    assert_eq!((p.batch.value, p.batch.source), (300, Source::Cache));
    assert_eq!(
        (p.local["wl_round"].value, p.local["wl_round"].source),
        (64, Source::Cache)
    );
    assert_eq!(p.local["sssp_summary"].source, Source::Predicted);
    let p = choose(
        &c,
        &d,
        shape(400_000),
        Some(7),
        None,
        Some(32),
        cached.clone(),
    );
    assert_eq!((p.batch.value, p.batch.source), (7, Source::Config));
    assert_eq!(
        (p.local["wl_round"].value, p.local["wl_round"].source),
        (32, Source::Config)
    );
    let p = choose(&c, &d, shape(400_000), None, None, None, None);
    assert_eq!(p.batch.source, Source::Predicted);
}

#[test]
fn cache_round_trip() {
    let dir = std::env::temp_dir().join(format!("tuccompi-cache-{}", std::process::id()));
    let file = dir.join("t.toml");
    let mut c = Cache::default();
    let k = cache_key(&dev("gpu", 132, 1024), "myplugin.kernels.u32", 411_992);
    assert!(k.ends_with("myplugin.kernels.u32 | n~2^18"), "{k}");
    c.entries.insert(
        k.clone(),
        CacheEntry {
            local_size: Some(256),
            batch: Some(512),
            knobs: Default::default(),
        },
    );
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, toml::to_string_pretty(&c).unwrap()).unwrap();
    let back: Cache = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        back.entries[&k],
        CacheEntry {
            local_size: Some(256),
            batch: Some(512),
            knobs: Default::default(),
        }
    );
    std::fs::write(&file, "[entries.x]\nlocal_sise = 3\n").unwrap();
    assert!(toml::from_str::<Cache>(&std::fs::read_to_string(&file).unwrap()).is_err());
}

#[test]
fn settings_the_device_cannot_take_are_refused_by_key() {
    let chars = ["sssp_relax"];
    let req = |batch: Option<usize>, local: Option<usize>| {
        let mut r = Request::new(&SSSP, &chars, shape(1000));
        r.batch = Setting::from_config(batch, "[myplugin] batch");
        r.local_size = Setting::from_config(local, "[myplugin] local_size");
        r
    };
    let tuner = Tuner::new(None, CacheUse::Ignore);
    let d = dev("cpu", 2, 1024);
    // batch = 0 was a divide-by-zero panic in the groups-per-task rule.
    let e = tuner
        .params(&d, req(Some(0), None))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("[myplugin] batch = 0: a batch runs at least one task"),
        "{e}"
    );
    let e = tuner
        .params(&d, req(Some(1 << 62), None))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("[myplugin] batch = 4611686018427387904: the batch's state"),
        "{e}"
    );
    let e = tuner
        .params(&d, req(None, Some(2048)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "[myplugin] local_size = 2048: 'test' runs work-groups of at most 1024 items"
        ),
        "{e}"
    );
    assert!(tuner.params(&d, req(Some(1), Some(1024))).is_ok());
    assert!(tuner.params(&d, req(None, Some(0))).is_ok());
}

/// A kernel name the request or the parameters do not know is an error listing the ones they
/// do (the GPU half's typo, never a panic).
#[test]
fn unknown_kernel_names_are_errors_listing_the_known_ones() {
    let d = dev("gpu", 132, 1024);
    let err = Tuner::default()
        .params(&d, Request::new(&COLLATZ, &["collatz_step"], shape(1000)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has no kernel 'collatz_step'")
            && err.contains("collatz_reduce, collatz_steps"),
        "{err}"
    );
    let p = Tuner::default()
        .params(&d, Request::new(&COLLATZ, &["collatz_steps"], shape(1000)))
        .unwrap();
    assert_eq!(p.local("collatz_steps").unwrap(), 256);
    let err = p.local("collatz_reduce").unwrap_err().to_string();
    assert!(
        err.contains("no launch parameters for kernel 'collatz_reduce'")
            && err.contains("chosen for collatz_steps"),
        "{err}"
    );
}

#[test]
fn one_item_per_task_gets_a_batch_that_fills_the_device() {
    let c = subset(&characterizations(&COLLATZ).unwrap(), &["collatz_steps"]);
    let one = Shape {
        n: 1,
        bytes_per_task: 64,
        shared_bytes: 0,
    };
    // An H100-like description: 132 compute units, 2048 resident items each.
    let gpu = dev("gpu", 132, 1024);
    let p = predict(&c, &gpu, one, None, None, None);
    // A quarter of the resident items a launch: the in-order queue launches the next batch
    // at once, and chunks stay small enough to share with other units.
    assert_eq!(p.batch.value, resident_items(&gpu) / 4);
    assert_eq!(p.queues.value, 1);
    // A CPU device of 2 cores whose work-groups hold 4096 items: 8192 tasks a launch.
    let p = predict(&c, &dev("cpu", 2, 4096), one, None, None, None);
    assert_eq!(p.batch.value, 2 * 4096);
    // Large tasks keep the batch the 16x fill rule gives (unchanged by the floor).
    assert_eq!(fill_batch(&gpu, 400_000), 6);
    assert_eq!(fill_batch(&gpu, 300), 256);
    // Memory still caps it: 1 MiB per task on an 8 GiB device, 40% over 4 queues.
    let big = Shape {
        bytes_per_task: 1 << 20,
        ..one
    };
    let p = predict(&c, &gpu, big, None, None, None);
    assert!(p.batch.value <= (8 << 30) * 4 / 10 / (1 << 20));
}

#[test]
fn a_candidate_being_timed_wins_over_the_config_and_carries_own_knobs() {
    let d = dev("gpu", 8, 1024);
    let mut req = Request::new(&COLLATZ, &["collatz_steps", "collatz_reduce"], shape(5000));
    req.cache_name = Some("collatz.steps".into());
    req.batch = Setting::from_config(Some(3), "[collatz] batch");
    let trial = CacheEntry {
        local_size: Some(32),
        batch: Some(9),
        knobs: [("unroll".to_string(), 4)].into(),
    };
    let tuner = Tuner::new(None, CacheUse::Ignore);
    let p = tuner.trying(trial).params(&d, req.clone()).unwrap();
    assert_eq!(p.batch.value, 9);
    assert_eq!(p.local["collatz_steps"].value, 32);
    // The reduction's tree keeps the rules' power of two.
    assert_ne!(p.local["collatz_reduce"].source, Source::Cache);
    assert_eq!(p.knob("unroll"), Some(4));
    assert_eq!(p.knob("other"), None);
    // Without the candidate: the config's batch, no knob.
    let p = tuner.params(&d, req).unwrap();
    assert_eq!((p.batch.value, p.batch.source), (3, Source::Config));
    assert!(p.knobs.is_empty());
}

#[test]
fn default_candidates_time_the_batch_around_the_prediction_then_local_sizes() {
    let c = subset(&characterizations(&SSSP).unwrap(), &CRAUSER);
    let d = dev("gpu", 132, 256);
    let p = predict(&c, &d, shape(400_000), None, None, None);
    let k = default_candidates(&d, &p);
    let b = p.batch.value;
    assert!(b >= 2, "{b}");
    assert_eq!(k[0], Knob::batch([b / 2, b, 2 * b]));
    assert_eq!(k[1].name, LOCAL_SIZE);
    // The device allows 256 items a group: 512 is left out; 0 (the driver's) is tried.
    assert_eq!(k[1].values, [256, 64, 128, 0]);
    // A batch the plugin fixes is not a candidate.
    let mut fixed = p.clone();
    fixed.batch = Choice::fixed(7, "the plugin's");
    assert!(default_candidates(&d, &fixed)
        .iter()
        .all(|k| k.name != BATCH));
}
