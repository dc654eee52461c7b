use super::*;

const SSSP: KernelSource = KernelSource {
    stem: "sssp",
    source: include_str!("../../kernels/sssp.cl"),
    characterization: include_str!("../../kernels/sssp.toml"),
};
const COLLATZ: KernelSource = KernelSource {
    stem: "collatz",
    source: include_str!("../../examples/collatz.cl"),
    characterization: include_str!("../../examples/collatz.toml"),
};

fn dev(kind: &str, cus: u32, maxwg: usize) -> DeviceInfo {
    DeviceInfo {
        name: "test".into(),
        platform: "p".into(),
        vendor: "v".into(),
        kind: kind.into(),
        compute_units: cus,
        clock_mhz: 1000,
        global_mem: 8 << 30,
        max_alloc: 2 << 30,
        local_mem: 48 << 10,
        max_work_group: maxwg,
        int64_atomics: true,
        driver: "1".into(),
    }
}

fn shape(n: usize) -> Shape {
    Shape {
        n,
        mean_degree: 2.5,
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
    let src = "__kernel void a(int x) {}\n__kernel  void b_2 (void) {}\n";
    assert_eq!(kernel_names(src), vec!["a", "b_2"]);
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
    // A small graph: the batch caps at 256 and the device is still not full, so 4 queues.
    let p = predict(&c, &dev("gpu", 132, 1024), shape(300), None, None, None);
    assert_eq!(p.batch.value, 256);
    assert_eq!(p.queues.value, 4);
    assert!(p.groups_per_task.value >= 1);
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
    // 40% of 64 MiB = 25.6 MiB, minus 16 MB of graph, over 6 MB per source: 1.
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
    assert_eq!(p.persistent_items.value, 132 * 2048);
    let b = |n| {
        predict(&c, &dev("gpu", 132, 1024), shape(n), None, Some(1), None)
            .batch
            .value
    };
    assert_eq!((b(40_000), b(600_000)), (1024, 256));
    let p = predict(&c, &dev("cpu", 2, 4096), shape(3000), None, None, None);
    assert_eq!((p.batch.value, p.persistent_items.value), (16, 128));
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
    });
    let p = choose(&c, &d, shape(400_000), None, None, None, cached);
    assert_eq!((p.batch.value, p.batch.source), (300, Source::Cache));
    assert_eq!(
        (p.local["wl_round"].value, p.local["wl_round"].source),
        (64, Source::Cache)
    );
    assert_eq!(p.local["sssp_summary"].source, Source::Predicted);
    let p = choose(&c, &d, shape(400_000), Some(7), None, Some(32), cached);
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
    let k = cache_key(&dev("gpu", 132, 1024), "apsp.worklist.u32", 411_992);
    assert!(k.ends_with("apsp.worklist.u32 | n~2^18"), "{k}");
    c.entries.insert(
        k.clone(),
        CacheEntry {
            local_size: Some(256),
            batch: Some(512),
        },
    );
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, toml::to_string_pretty(&c).unwrap()).unwrap();
    let back: Cache = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        back.entries[&k],
        CacheEntry {
            local_size: Some(256),
            batch: Some(512)
        }
    );
    std::fs::write(&file, "[entries.x]\nlocal_sise = 3\n").unwrap();
    assert!(toml::from_str::<Cache>(&std::fs::read_to_string(&file).unwrap()).is_err());
}
