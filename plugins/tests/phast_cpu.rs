//! PHAST's CPU half through whole runs: published reference checksums on real road graphs,
//! distances.npy byte-equal to Dijkstra's (with and without `[apsp] targets`) on awkward
//! generated graphs, the `auto` decision both ways, and the hierarchy cache.

use crate::util::*;
use std::path::Path;

/// Settings of a CPU-only run with `algo` and the hierarchy cache at `cache`.
fn cpu(algo: &str, cache: &Path) -> Vec<String> {
    vec![
        "units.opencl=none".into(),
        "units.cpu_workers=2".into(),
        format!("apsp.cpu_algorithm={algo:?}"),
        format!("apsp.hierarchy={:?}", cache.display().to_string()),
    ]
}

fn run_with(cfg: &str, sets: &[String]) -> Out {
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    run(cfg, &sets)
}

fn algorithm(out: &Out) -> &str {
    out.report["input"]["cpu_algorithm"].as_str().unwrap()
}

#[test]
fn rome99_every_source_auto_takes_phast() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let cache = tmpdir("rome").join("rome.ch");
    let out = run_with(&apsp_file(&g, "\"all\""), &cpu("auto", &cache));
    assert_eq!(algorithm(&out), "phast", "{}", out.report["input"]);
    let why = out.report["input"]["algorithm"]["reason"].as_str().unwrap();
    assert!(why.starts_with("auto: the hierarchy is good"), "{why}");
    assert_eq!(out.checksum(), (160_839_610_183, 0, 77_403));
}

#[test]
fn bremen_256_sources() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    let cache = tmpdir("bremen").join("bremen.ch");
    let out = run_with(&apsp_file(&g, "256"), &cpu("phast", &cache));
    assert_eq!(algorithm(&out), "phast");
    assert_eq!(out.checksum(), (80_041_145_648, 2_254_488, 41_549));
    assert_eq!(
        out.summary()[0],
        [1, 33_284, 40_461 - 33_284, 318_849_187, 33_202]
    );
}

#[test]
fn moscow_16_sources() {
    let Some(g) = data("osm-moscow.gr.gz") else {
        return;
    };
    let cache = tmpdir("moscow").join("moscow.ch");
    let out = run_with(&apsp_file(&g, "16"), &cpu("phast", &cache));
    assert_eq!(algorithm(&out), "phast");
    assert_eq!(out.checksum(), (226_748_150_954, 126_912, 100_090));
    assert_eq!(
        out.summary()[0],
        [1, 404_060, 411_992 - 404_060, 16_780_841_917, 100_090]
    );
}

/// distances.npy and summary.csv of PHAST equal Dijkstra's byte for byte, for all targets, the
/// first N, and a list with repeats.
fn same_as_dijkstra(cfg: &str, tag: &str) {
    let cache = tmpdir(tag).join("h.ch");
    for targets in ["\"all\"", "7", "[90, 3, 3, 41, 1]"] {
        let mut outs = Vec::new();
        for algo in ["dijkstra", "phast"] {
            let mut sets = cpu(algo, &cache);
            sets.push("output.distances=true".into());
            sets.push(format!("apsp.targets={targets}"));
            sets.push("scheduler.chunk=5".into());
            let out = run_with(cfg, &sets);
            assert_eq!(algorithm(&out), algo);
            outs.push(out);
        }
        let npy = |o: &Out| std::fs::read(o.dir.join("distances.npy")).unwrap();
        assert!(
            npy(&outs[0]) == npy(&outs[1]),
            "{tag}, targets {targets}: distances.npy differ"
        );
        assert_eq!(
            outs[0].summary(),
            outs[1].summary(),
            "{tag}, targets {targets}"
        );
    }
}

#[test]
fn generated_graphs_equal_dijkstra_with_and_without_targets() {
    // Zero weights and unreachable parts (mean out-degree 1.2), a road grid with zero weights,
    // and weights that make distances need 64 bits.
    same_as_dijkstra(
        &apsp_gen(
            "uniform",
            300,
            "degree = 1.2\nmin_weight = 0\nmax_weight = 9\nseed = 4",
            "\"all\"",
        ),
        "sparse",
    );
    same_as_dijkstra(
        &apsp_gen(
            "road",
            400,
            "min_weight = 0\nmax_weight = 5\nseed = 2",
            "\"all\"",
        ),
        "road",
    );
    let wide = apsp_gen(
        "uniform",
        200,
        "degree = 2.0\nmin_weight = 3_000_000_000\nmax_weight = 4_000_000_000",
        "\"all\"",
    );
    same_as_dijkstra(&wide, "wide");
}

#[test]
fn auto_falls_back_on_rmat_and_keeps_the_verdict() {
    let cache = tmpdir("rmat").join("rmat.ch");
    let cfg = apsp_gen("rmat", 2048, "degree = 16.0\nseed = 1", "\"all\"");
    let reference = run_with(&cfg, &cpu("dijkstra", &cache));
    // One worker: the forecast expects a build to pay back, so it is tried (and stops).
    let mut one = cpu("auto", &cache);
    one.push("units.cpu_workers=1".into());
    let out = run_with(&cfg, &one);
    assert_eq!(algorithm(&out), "dijkstra", "{}", out.report["input"]);
    let why = out.report["input"]["algorithm"]["reason"].as_str().unwrap();
    assert!(why.contains("the contraction hierarchy is poor"), "{why}");
    assert_eq!(out.summary(), reference.summary());
    // The verdict is kept in the hierarchy's place, and the next run believes it.
    let kept = std::fs::read_to_string(&cache).unwrap();
    assert!(kept.starts_with("TUCCOMPI-CH-VERDICT"), "{kept}");
    let again = run_with(&cfg, &one);
    let why = again.report["input"]["algorithm"]["reason"]
        .as_str()
        .unwrap();
    assert!(why.contains("a cached verdict"), "{why}");
    assert!(
        again.report["input"]["algorithm"]["preprocess_seconds"].is_null(),
        "no build was tried: {}",
        again.report["input"]
    );
    assert_eq!(again.summary(), reference.summary());
    // An explicit "phast" builds over the verdict, and a later auto run reads that hierarchy.
    let phast = run_with(&cfg, &cpu("phast", &cache));
    assert_eq!(phast.report["input"]["algorithm"]["source"], "built");
    assert!(phast.report["input"]["algorithm"]["cache_miss"].is_null());
    assert_eq!(phast.summary(), reference.summary());
    // Too few sources to pay back: no build at all, nothing cached.
    let cache = tmpdir("few").join("few.ch");
    let out = run_with(&apsp_gen("road", 400, "", "20"), &cpu("auto", &cache));
    assert_eq!(algorithm(&out), "dijkstra");
    let why = out.report["input"]["algorithm"]["reason"].as_str().unwrap();
    assert!(why.contains("would not pay back for 20 tasks"), "{why}");
    assert!(!cache.exists());
}

/// A GPU half left at "auto" where no GPU is found builds no hierarchy, whatever the tasks.
#[test]
fn auto_gpu_half_without_gpus_builds_nothing() {
    let cache = tmpdir("nogpu").join("h.ch");
    let out = run(
        &apsp_gen("road", 2500, "", "\"all\""),
        &[
            "units.cpu_workers=2",
            "units.device_type=accelerator",
            "apsp.cpu_algorithm=\"dijkstra\"",
            &format!("apsp.hierarchy={:?}", cache.display().to_string()),
        ],
    );
    assert_eq!(out.report["input"]["gpu_algorithm"], "worklist");
    let why = out.report["input"]["algorithm"]["reason"].as_str().unwrap();
    assert!(
        why.contains("would not pay back for 2500 tasks on 2 CPU workers and 0 GPUs"),
        "{why}"
    );
    assert!(!cache.exists());
}

#[test]
fn hierarchy_cache_round_trip_and_bad_files() {
    let cache = tmpdir("cache").join("g.ch");
    let cfg = apsp_gen("road", 2500, "min_weight = 0\nseed = 9", "\"all\"");
    let source = |o: &Out| {
        o.report["input"]["algorithm"]["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let miss = |o: &Out| {
        o.report["input"]["algorithm"]["cache_miss"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let first = run_with(&cfg, &cpu("auto", &cache));
    assert_eq!(
        (algorithm(&first), source(&first).as_str()),
        ("phast", "built")
    );
    let second = run_with(&cfg, &cpu("auto", &cache));
    assert_eq!(source(&second), "cache");
    assert_eq!(second.summary(), first.summary());
    // A flipped bit and a cut file are noticed and replaced.
    let good = std::fs::read(&cache).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 4;
    std::fs::write(&cache, &flipped).unwrap();
    let out = run_with(&cfg, &cpu("auto", &cache));
    assert_eq!(source(&out), "built");
    assert!(miss(&out).contains("corrupt cache"), "{}", miss(&out));
    assert_eq!(out.summary(), first.summary());
    assert_eq!(
        std::fs::read(&cache).unwrap(),
        good,
        "the rebuilt cache is the same file"
    );
    std::fs::write(&cache, &good[..good.len() - 100]).unwrap();
    let out = run_with(&cfg, &cpu("phast", &cache));
    assert!(miss(&out).contains("truncated cache"), "{}", miss(&out));
    assert_eq!(out.summary(), first.summary());
    // The same path used for another graph: mismatched, rebuilt, right answers.
    let other = apsp_gen("road", 2500, "min_weight = 0\nseed = 10", "\"all\"");
    let out = run_with(&other, &cpu("phast", &cache));
    assert!(miss(&out).contains("another graph"), "{}", miss(&out));
    let reference = run_with(&other, &cpu("dijkstra", &cache));
    assert_eq!(out.summary(), reference.summary());
}

#[test]
fn bad_options_are_refused_by_name() {
    let cfg = apsp_gen("road", 100, "", "10");
    let e = try_run(&cfg, &["apsp.cpu_algorithm=\"fast\"", "units.opencl=none"]).unwrap_err();
    assert!(e.to_string().contains("cpu_algorithm"), "{e}");
    let e = try_run(&cfg, &["apsp.gpu_algorithm=\"quick\"", "units.opencl=none"]).unwrap_err();
    assert!(e.to_string().contains("gpu_algorithm = \"quick\""), "{e}");
    let e = try_run(
        &cfg,
        &[
            "apsp.cpu_algorithm=\"phast\"",
            "apsp.cpu_batch=3",
            "units.opencl=none",
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("[apsp] cpu_batch = 3"), "{e}");
    let e = try_run(&cfg, &["apsp.targets=[100]", "units.opencl=none"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("[apsp] targets: vertex id 100 is out of range; this graph's ids are 0..=99"),
        "{e}"
    );
}

#[test]
fn gpu_algorithms_honour_targets() {
    if !opencl() {
        return;
    }
    let cfg = apsp_gen(
        "road",
        300,
        "min_weight = 0\nmax_weight = 7\nseed = 5",
        "40",
    );
    let cache = tmpdir("gputargets").join("h.ch");
    let hierarchy = format!("apsp.hierarchy={:?}", cache.display().to_string());
    let targets = "apsp.targets=[299, 0, 17, 17]";
    let mut sets = cpu("dijkstra", &cache);
    sets.extend(["output.distances=true".into(), targets.into()]);
    let want = run_with(&cfg, &sets);
    for algo in ["worklist", "crauser", "auto", "phast"] {
        let gpu = run(
            &cfg,
            &[
                "units.device_type=all",
                "units.cpu_workers=0",
                "output.distances=true",
                targets,
                &hierarchy,
                &format!("apsp.gpu_algorithm={algo:?}"),
            ],
        );
        assert_eq!(gpu.report["input"]["targets"], 4);
        assert_eq!(gpu.summary(), want.summary(), "{algo}");
        let npy = |o: &Out| std::fs::read(o.dir.join("distances.npy")).unwrap();
        assert!(npy(&gpu) == npy(&want), "{algo}: distances.npy differ");
    }
}

/// The generated road model has a road hierarchy: on 200,000 vertices at most 1.5 shortcuts
/// per arc and an upward search of at most 800 vertices (osm-moscow: 0.95 and 267), as the
/// hierarchy builder itself reports them.
#[test]
fn generated_road_graph_has_a_road_hierarchy() {
    use tuccompi_plugins::apsp::phast::{auto, ch, Hierarchy};
    use tuccompi_plugins::graph::{generate, GenModel, GenSpec};
    {
        let n = 200_000;
        let spec = GenSpec {
            model: GenModel::Road,
            vertices: n,
            degree: None,
            seed: 1,
            min_weight: None,
            max_weight: Some(1000),
        };
        let g = tuccompi_plugins::graph::Csr::from_edges(&generate(&spec).unwrap()).unwrap();
        let t = std::time::Instant::now();
        let h = Hierarchy::<u32>::build(&g, &ch::ChParams::default(), None).unwrap();
        let per_arc = h.info.shortcuts as f64 / h.info.arcs as f64;
        let upward = auto::upward_space(&h, auto::SAMPLES);
        eprintln!(
            "road n={n}: m={} shortcuts/arc {per_arc:.3}, upward {upward:.0}, levels {}, build {:.2} s",
            g.m(),
            h.num_levels(),
            t.elapsed().as_secs_f64()
        );
        assert!(per_arc <= 1.5, "{per_arc} shortcuts per arc");
        assert!(upward <= 800.0, "upward search {upward}");
    }
}
