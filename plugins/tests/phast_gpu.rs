//! GPU PHAST (kernels/phast.cl) against CPU Dijkstra, on PoCL in CI: real graphs, generated
//! ones (zero weights, unreachable parts, 64-bit distances), upward searches on the host and on
//! the device (with the frontier-overflow fallback), the top levels in one launch or not, 1 and
//! 2 queues, alone and mixed with CPU workers, the bottom level folded into the summaries
//! (`phast_fold`) or swept; distance rows byte for byte, also as an origin-destination matrix
//! (`[apsp] targets`).

use crate::util::*;

fn cpu_reference(cfg: &str) -> Vec<[u128; 5]> {
    dijkstra(cfg, &[]).summary()
}

/// A GPU PHAST run with `sets`, its hierarchy cached in a fresh folder.
fn phast(cfg: &str, sets: &[&str]) -> Out {
    let cache = format!(
        "apsp.hierarchy={:?}",
        tmpdir("phastgpu").join("h.ch").display().to_string()
    );
    let mut all = vec![
        "units.device_type=all",
        "apsp.gpu_algorithm=\"phast\"",
        &cache,
    ];
    all.extend_from_slice(sets);
    run(cfg, &all)
}

/// Run GPU PHAST with `sets`; the summary must equal `want`. Returns the report.
fn phast_matches(cfg: &str, want: &[[u128; 5]], sets: &[&str]) -> serde_json::Value {
    let out = phast(cfg, sets);
    assert_eq!(
        out.report["input"]["gpu_algorithm"], "phast",
        "{}",
        out.report["input"]
    );
    assert_eq!(
        out.summary(),
        want,
        "GPU PHAST differs from Dijkstra with {sets:?}"
    );
    let units = out.report["units"].as_array().unwrap();
    let tasks = |kind: &str| -> u64 {
        units
            .iter()
            .filter(|u| kind.is_empty() || u["kind"] == kind)
            .map(|u| u["tasks"].as_u64().unwrap())
            .sum()
    };
    let gpu_tasks = tasks("gpu");
    if sets.contains(&"scheduler.policy=work-queue") {
        // The queue may leave a slow device out (PoCL beside two CPU workers on a 2-core
        // machine): every task still runs once.
        assert_eq!(tasks("") as usize, want.len(), "tasks run with {sets:?}");
    } else {
        assert!(gpu_tasks > 0, "no task ran on the device with {sets:?}");
    }
    if sets.contains(&"units.cpu_workers=0") {
        assert_eq!(
            gpu_tasks as usize,
            want.len(),
            "GPU alone must run every task"
        );
    }
    out.report
}

#[test]
fn rome99_every_source() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    let cfg = apsp_file(&g, "\"all\"");
    let want = cpu_reference(&cfg);
    // Top levels in one launch: none, the prediction, every level.
    // Trailing levels folded into the summaries: five (swept, written and added to the
    // partials of those below), the prediction, none possible (every level in the one launch).
    // Tree quads the fold sweeps at a time: 3, 7 or 1 of the 16 (slices of 3, 3, 3, 3, 3, 1;
    // 7, 7, 2; sixteen of 1; the last batch, 25 trees, has 7 quads), or the rule's. Slices
    // of a folded level's vertices: 3 or 1000 (fewer or more than the summary's, so the
    // reduction's partials differ in number from the summary's), or the rule's.
    for (up, q, c, top, fold, quads, fslices) in [
        ("device", "1", "0", "0", "5", "3", "3"),
        (
            "host", "2", "0", "\"auto\"", "\"auto\"", "\"auto\"", "\"auto\"",
        ),
        (
            "device", "2", "2", "1000", "\"auto\"", "\"auto\"", "\"auto\"",
        ),
        ("device", "1", "0", "\"auto\"", "2", "7", "1000"),
        ("host", "1", "0", "0", "1", "1", "1"),
    ] {
        let r = phast_matches(
            &cfg,
            &want,
            &[
                &format!("apsp.gpu_upward=\"{up}\""),
                &format!("units.concurrent_kernels={q}"),
                &format!("units.cpu_workers={c}"),
                &format!("apsp.gpu_top_levels={top}"),
                &format!("apsp.gpu_fold_levels={fold}"),
                &format!("apsp.gpu_fold_quads={quads}"),
                &format!("apsp.gpu_fold_slices={fslices}"),
                "apsp.batch=64",
            ],
        );
        if fslices != "\"auto\"" && top != "1000" {
            assert_eq!(
                r["devices"][0]["tuning"]["knobs"]["fold_slices"]["value"].to_string(),
                fslices,
                "{}",
                r["devices"][0]["tuning"]
            );
        }
        if quads != "\"auto\"" {
            assert_eq!(
                r["devices"][0]["tuning"]["knobs"]["fold_quads"]["value"].to_string(),
                quads,
                "{}",
                r["devices"][0]["tuning"]
            );
        }
        let t = &r["devices"][0]["tuning"];
        assert_eq!(
            t["knobs"]["upward_on_device"]["value"],
            (up == "device") as u64,
            "{t}"
        );
        assert_eq!(t["batch"]["value"], 64);
        // Summaries alone: the bottom level at least is folded as it is pulled (phast_fold),
        // unless the one leading launch takes every level.
        let folded = t["knobs"]["fold_levels"]["value"].as_u64().unwrap();
        assert_eq!(folded > 0, top != "1000", "{t}");
        if fold == "5" {
            assert_eq!(folded, 5, "{t}");
        }
        if top == "1000" {
            assert!(
                t["knobs"]["top_levels"]["value"].as_u64().unwrap() > 5,
                "{t}"
            );
        }
    }
}

/// `gpu_algorithm = "auto"` (the default) takes GPU PHAST on a road graph with many sources.
#[test]
fn rome99_auto_takes_gpu_phast() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    // Every source: enough trees for the forecast to pay back a build on 2 cores.
    let cfg = apsp_file(&g, "\"all\"");
    let want = cpu_reference(&cfg);
    let cache = format!(
        "apsp.hierarchy={:?}",
        tmpdir("phastgpu").join("h.ch").display().to_string()
    );
    let out = run(
        &cfg,
        &["units.device_type=all", "units.cpu_workers=0", &cache],
    );
    assert_eq!(
        out.report["input"]["gpu_algorithm"], "phast",
        "{}",
        out.report["input"]
    );
    assert_eq!(out.summary(), want);
}

/// A frontier list of one entry overflows on every tree with two upward arcs: every batch is
/// redone with host searches and must still be exact.
#[test]
fn rome99_frontier_overflow_falls_back_to_host() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    let cfg = apsp_file(&g, "100");
    let want = cpu_reference(&cfg);
    phast_matches(
        &cfg,
        &want,
        &[
            "apsp.gpu_upward=\"device\"",
            "apsp.gpu_frontier=1",
            "apsp.batch=16",
            "units.cpu_workers=0",
        ],
    );
}

#[test]
fn bremen_256_sources() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    let cfg = apsp_file(&g, "256");
    let want = cpu_reference(&cfg);
    phast_matches(
        &cfg,
        &want,
        &["units.cpu_workers=0", "units.concurrent_kernels=1"],
    );
    phast_matches(
        &cfg,
        &want,
        &[
            "units.cpu_workers=2",
            "apsp.gpu_upward=\"host\"",
            "apsp.batch=48",
            "scheduler.policy=work-queue",
        ],
    );
}

/// Zero weights, unreachable parts and 64-bit distances; distance rows byte-equal to
/// Dijkstra's, with batches that do not divide the sources.
#[test]
fn generated_graphs_and_rows() {
    if !opencl() {
        return;
    }
    let graphs = [
        apsp_gen(
            "road",
            1600,
            "min_weight = 0\nmax_weight = 9\nseed = 4",
            "150",
        ),
        apsp_gen(
            "uniform",
            900,
            "degree = 1.2\nmin_weight = 0\nmax_weight = 1000\nseed = 2",
            "\"all\"",
        ),
        apsp_gen(
            "uniform",
            400,
            "degree = 3\nmin_weight = 1_000_000_000\nmax_weight = 4_294_967_295\nseed = 3",
            "64",
        ),
    ];
    for cfg in &graphs {
        let cpu = dijkstra(cfg, &["output.distances=true"]);
        let want = cpu.summary();
        assert!(
            want.iter().any(|r| r[2] > 0),
            "the graph should have unreachable pairs"
        );
        let cpu_npy = std::fs::read(cpu.dir.join("distances.npy")).unwrap();
        // An origin-destination matrix: targets in a given order, with a repeat.
        let targets = "apsp.targets=[9, 1, 300, 9, 57]";
        let cpu_od = dijkstra(cfg, &["output.distances=true", targets]);
        let od = phast(
            cfg,
            &[
                "units.cpu_workers=0",
                "apsp.batch=6",
                "output.distances=true",
                targets,
            ],
        );
        assert_eq!(od.report["input"]["targets"], 5);
        assert_eq!(od.summary(), cpu_od.summary(), "targets: summary");
        assert!(
            std::fs::read(od.dir.join("distances.npy")).unwrap()
                == std::fs::read(cpu_od.dir.join("distances.npy")).unwrap(),
            "targets: distances.npy differs from Dijkstra's"
        );
        for (up, b, c, top) in [
            ("device", "7", "0", "1000"),
            ("host", "16", "0", "0"),
            ("auto", "5", "2", "\"auto\""),
        ] {
            let sets = [
                &format!("apsp.gpu_upward=\"{up}\""),
                &format!("apsp.gpu_top_levels={top}"),
                &format!("apsp.batch={b}"),
                &format!("units.cpu_workers={c}"),
                "output.distances=true",
            ];
            let out = phast(cfg, &sets);
            assert_eq!(out.summary(), want, "{sets:?}: summary");
            let npy = std::fs::read(out.dir.join("distances.npy")).unwrap();
            assert!(
                npy == cpu_npy,
                "{sets:?}: distances.npy differs from Dijkstra's"
            );
        }
        // Summaries alone: the bottom level folded as it is pulled, never written (one launch
        // per level, so that the leading launch cannot take the bottom level on a CPU device
        // of many cores).
        let folded = phast(cfg, &["units.cpu_workers=0", "apsp.gpu_top_levels=0"]);
        assert_eq!(folded.summary(), want, "levels folded: summary");
        let knobs = &folded.report["devices"][0]["tuning"]["knobs"];
        assert!(
            knobs["fold_levels"]["value"].as_u64().unwrap() >= 1,
            "{knobs}"
        );
        // And with fold slices other than the summary's (also with 64-bit distances, whose
        // prediction is the summary's): 5 slices over three folded levels.
        let sliced = phast(
            cfg,
            &[
                "units.cpu_workers=0",
                "apsp.gpu_top_levels=0",
                "apsp.gpu_fold_levels=3",
                "apsp.gpu_fold_slices=5",
            ],
        );
        assert_eq!(sliced.summary(), want, "fold slices 5: summary");
        let knobs = &sliced.report["devices"][0]["tuning"]["knobs"];
        assert_eq!(knobs["fold_slices"]["value"], 5, "{knobs}");
        assert_ne!(knobs["summary_slices"]["value"], 5, "{knobs}");
        let wide = cpu.report["input"]["distance_type"] == "u64";
        assert_eq!(wide, cfg.contains("4_294_967_295"));
    }
}

/// Two GPU PHAST jobs on one graph in one session: the second takes the hierarchy the first
/// read (`"source": "session"`), uploads nothing (the device keeps the first job's buffers),
/// builds no program, and both equal Dijkstra.
#[test]
fn a_session_keeps_the_hierarchy_on_the_host_and_on_the_device() {
    if !opencl() {
        return;
    }
    private_cache();
    let cfg = apsp_gen("road", 900, "seed = 5", "\"all\"");
    let want = cpu_reference(&cfg);
    let cache = tmpdir("session-h").join("h.ch").display().to_string();
    let session = tuccompi::Session::new();
    let job = |tag: &str| {
        let dir = tmpdir(tag);
        let sets = [
            "units.device_type=\"all\"".to_string(),
            "units.cpu_workers=0".to_string(),
            "apsp.gpu_algorithm=\"phast\"".to_string(),
            format!("apsp.hierarchy={cache:?}"),
            format!("output.dir={:?}", dir.display().to_string()),
        ];
        let plan =
            tuccompi::Plan::from_toml(&cfg, std::path::Path::new("test.toml"), &sets).unwrap();
        let opts = tuccompi::RunOptions {
            quiet: true,
            plugins: tuccompi_plugins::registry(),
            ..Default::default()
        };
        let out = session.run_with(&plan, opts).unwrap();
        Out {
            dir,
            report: out.report,
        }
    };
    let first = job("session-1");
    assert_ne!(first.report["input"]["algorithm"]["source"], "session");
    assert_eq!(first.summary(), want);
    let devices = session.devices();
    assert!(!devices.is_empty());
    let builds: Vec<usize> = devices.iter().map(|d| d.builds()).collect();
    let made: Vec<usize> = devices.iter().map(|d| d.kept().made()).collect();
    assert!(
        made.iter().all(|&m| m == 1),
        "each device kept the hierarchy once: {made:?}"
    );
    let second = job("session-2");
    assert_eq!(
        second.report["input"]["algorithm"]["source"], "session",
        "{}",
        second.report["input"]["algorithm"]
    );
    assert_eq!(second.summary(), want);
    assert_eq!(
        devices.iter().map(|d| d.kept().made()).collect::<Vec<_>>(),
        made,
        "nothing uploaded again"
    );
    assert_eq!(
        devices.iter().map(|d| d.builds()).collect::<Vec<_>>(),
        builds,
        "nothing built again"
    );
    assert_eq!(session.kept().made(), 1, "the host hierarchy was read once");
}
