//! The APSP GPU half (every algorithm) against the CPU half, on PoCL in CI: real graphs and
//! generated ones (zero weights, unreachable parts, 64-bit distances), 1 and 4 queues, alone
//! and mixed with CPU workers, both policies, several batch sizes; distance rows too.

use crate::util::*;
use std::process::Command;

const ALGOS: [&str; 4] = ["crauser", "martin", "two-phase", "worklist"];

/// The CPU half's summary: the reference every GPU run must reproduce exactly.
fn cpu_reference(cfg: &str) -> Vec<[u128; 5]> {
    run(cfg, &["units.opencl=none", "units.cpu_workers=2"]).summary()
}

/// Run on the OpenCL devices with `sets` and compare with `want`; returns the report.
fn gpu_matches(cfg: &str, want: &[[u128; 5]], sets: &[&str]) -> serde_json::Value {
    let mut all = vec!["units.device_type=all"];
    all.extend_from_slice(sets);
    let out = run(cfg, &all);
    assert_eq!(
        out.summary(),
        want,
        "GPU summary differs from the CPU half's with {sets:?}"
    );
    let units = out.report["units"].as_array().unwrap();
    let gpu_tasks: u64 = units
        .iter()
        .filter(|u| u["kind"] == "gpu")
        .map(|u| u["tasks"].as_u64().unwrap())
        .sum();
    assert!(
        !out.report["devices"].as_array().unwrap().is_empty(),
        "no device was used with {sets:?}"
    );
    if sets.contains(&"units.cpu_workers=0") {
        assert_eq!(
            gpu_tasks as usize,
            want.len(),
            "GPU alone must run every task"
        );
    }
    out.report
}

/// The unit mixes: (queues, CPU workers, policy), covering 1 and 4 queues, alone and mixed,
/// under both policies.
const MIXES: [(&str, &str, &str); 4] = [
    (
        "units.concurrent_kernels=1",
        "units.cpu_workers=0",
        "scheduler.policy=equitable",
    ),
    (
        "units.concurrent_kernels=4",
        "units.cpu_workers=2",
        "scheduler.policy=work-queue",
    ),
    (
        "units.concurrent_kernels=4",
        "units.cpu_workers=0",
        "scheduler.policy=work-queue",
    ),
    (
        "units.concurrent_kernels=1",
        "units.cpu_workers=2",
        "scheduler.policy=equitable",
    ),
];

#[test]
fn rome99_128_sources_every_algorithm_and_mix() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    let cfg = apsp_file(&g, "128");
    let want = cpu_reference(&cfg);
    for algo in ALGOS {
        let a = format!("apsp.gpu_algorithm={algo:?}");
        // Martin settles one distance level per iteration, so it is slow on PoCL: two mixes.
        let mixes = if algo == "martin" {
            &MIXES[..2]
        } else {
            &MIXES[..]
        };
        for (q, c, p) in mixes {
            let r = gpu_matches(&cfg, &want, &[&a, q, c, p]);
            let queues: u64 = r["devices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["queues"].as_u64().unwrap())
                .sum();
            assert!(queues >= 1);
        }
    }
}

#[test]
fn rome99_batch_sizes() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    let cfg = apsp_file(&g, "100");
    let want = cpu_reference(&cfg);
    for batch in ["1", "7", "64"] {
        for algo in ["crauser", "two-phase"] {
            let b = format!("apsp.batch={batch}");
            let a = format!("apsp.gpu_algorithm={algo:?}");
            let r = gpu_matches(
                &cfg,
                &want,
                &[&a, &b, "units.cpu_workers=0", "units.concurrent_kernels=2"],
            );
            assert_eq!(
                r["devices"][0]["chunk"].as_u64().unwrap().to_string(),
                batch
            );
        }
    }
}

#[test]
fn bremen_32_sources() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    if !opencl() {
        return;
    }
    let cfg = apsp_file(&g, "32");
    let want = cpu_reference(&cfg);
    gpu_matches(
        &cfg,
        &want,
        &[
            "apsp.gpu_algorithm=\"crauser\"",
            "apsp.batch=64",
            "units.cpu_workers=0",
            "units.concurrent_kernels=1",
        ],
    );
    gpu_matches(
        &cfg,
        &want,
        &[
            "apsp.gpu_algorithm=\"two-phase\"",
            "apsp.batch=16",
            "units.cpu_workers=0",
            "units.concurrent_kernels=4",
            "scheduler.policy=equitable",
        ],
    );
    gpu_matches(
        &cfg,
        &want,
        &[
            "apsp.gpu_algorithm=\"crauser\"",
            "apsp.batch=8",
            "units.cpu_workers=2",
            "units.concurrent_kernels=2",
            "scheduler.policy=work-queue",
        ],
    );
}

/// Generated graphs with zero-weight arcs and unreachable parts; distance rows compared too.
#[test]
fn generated_graphs_every_algorithm() {
    if !opencl() {
        return;
    }
    let graphs = [
        apsp_gen(
            "rmat",
            1500,
            "degree = 4\nmin_weight = 0\nmax_weight = 30\nseed = 9",
            "200",
        ),
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
        // Huge weights: 64-bit distances on the device (int64 atomics).
        apsp_gen(
            "uniform",
            400,
            "degree = 3\nmin_weight = 1_000_000_000\nmax_weight = 4_294_967_295\nseed = 3",
            "64",
        ),
    ];
    for (g, cfg) in graphs.iter().enumerate() {
        let cpu = run(
            cfg,
            &[
                "units.opencl=none",
                "units.cpu_workers=2",
                "output.distances=true",
            ],
        );
        let want = cpu.summary();
        assert!(
            want.iter().any(|r| r[2] > 0),
            "the graph should have unreachable pairs"
        );
        let cpu_npy = std::fs::read(cpu.dir.join("distances.npy")).unwrap();
        // Two of the four mixes per (graph, algorithm), turning with both: across the graphs
        // every algorithm meets every mix twice, and every graph every mix twice.
        for (k, algo) in ALGOS.iter().enumerate() {
            for (i, (q, c, p)) in MIXES.iter().enumerate() {
                if (i + k + g) % 4 >= 2 {
                    continue;
                }
                let a = format!("apsp.gpu_algorithm={algo:?}");
                let b = format!("apsp.batch={}", [1, 7, 64, 5][i]);
                let out = run(
                    cfg,
                    &[
                        "units.device_type=all",
                        &a,
                        &b,
                        q,
                        c,
                        p,
                        "output.distances=true",
                    ],
                );
                assert_eq!(out.summary(), want, "{algo} {q} {c} {p}: summary");
                let npy = std::fs::read(out.dir.join("distances.npy")).unwrap();
                assert!(
                    npy == cpu_npy,
                    "{algo} {q} {c} {p}: distances.npy differs from the CPU half's"
                );
            }
        }
        let wide = cpu.report["input"]["distance_type"] == "u64";
        assert_eq!(wide, cfg.contains("4_294_967_295"));
    }
}

fn tuccompi(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(tmpdir("cwd"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code().unwrap_or(-1), err)
}

#[test]
fn device_errors_are_clear() {
    if !opencl() {
        return;
    }
    let dir = tmpdir("gpuerr");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 2000, "", "8")).unwrap();
    let cfg = cfg.to_str().unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let gpu_only = [
        "--set",
        "units.cpu_workers=0",
        "--set",
        "units.device_type=all",
        "--set",
        &od,
    ];

    // A kernel that fails to build: the compiler's log is shown.
    let kdir = dir.join("kernels");
    std::fs::create_dir_all(&kdir).unwrap();
    write_broken_sssp_kernels(&kdir);
    let src = tuccompi_plugins::apsp::gpu::KERNELS;
    let (code, err) = tuccompi(
        &[&["run", cfg][..], &gpu_only].concat(),
        &[("TUCCOMPI_KERNELS", kdir.to_str().unwrap())],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("sssp.cl failed to build") && err.contains("undeclared_name"),
        "{err}"
    );

    // A characterization that does not match the kernels.
    std::fs::write(kdir.join("sssp.cl"), src.source).unwrap();
    std::fs::write(
        kdir.join("sssp.toml"),
        src.characterization
            .replace("[sssp_update]", "[sssp_updat]"),
    )
    .unwrap();
    let (code, err) = tuccompi(
        &[&["run", cfg][..], &gpu_only].concat(),
        &[("TUCCOMPI_KERNELS", kdir.to_str().unwrap())],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("[sssp_updat]") && err.contains("does not define"),
        "{err}"
    );

    // Too big for the device: 2,000,000 sources x 2,000 vertices fit 32-bit indices but need
    // tens of GB.
    let (code, err) = tuccompi(
        &[
            &["run", cfg][..],
            &gpu_only,
            &["--set", "apsp.batch=2000000"],
        ]
        .concat(),
        &[],
    );
    assert_ne!(code, 0);
    // Refused by the tuner before any buffer is sized, naming the key.
    assert!(
        err.contains("[apsp] batch = 2000000: the batch's state") && err.contains("does not fit"),
        "{err}"
    );
    // A batch whose k x n indices would not fit 32 bits.
    let (code, err) = tuccompi(
        &[
            &["run", cfg][..],
            &gpu_only,
            &["--set", "apsp.batch=100000000"],
        ]
        .concat(),
        &[],
    );
    assert_ne!(code, 0);
    // The index bound, or (on a device of less memory than k x n distances) the tuner's.
    assert!(
        err.contains("must stay below 2^32")
            || err.contains("[apsp] batch = 100000000: the batch's state"),
        "{err}"
    );

    // No device matches the filter.
    let (code, err) = tuccompi(
        &[
            &["run", cfg][..],
            &gpu_only,
            &["--set", "units.opencl=[\"no-such-device\"]"],
        ]
        .concat(),
        &[],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("no OpenCL device matches") && err.contains("this machine has"),
        "{err}"
    );
    assert!(!dir.join("out/report.json").exists());
}

#[test]
fn tune_stores_winners_that_runs_then_use() {
    if !opencl() {
        return;
    }
    let dir = tmpdir("tune");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 3000, "seed = 3", "64")).unwrap();
    let cfg = cfg.to_str().unwrap();
    let cache = dir.join("cache/tuning.toml");
    let env = [("TUCCOMPI_CACHE", cache.to_str().unwrap())];
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .args([
            "tune",
            cfg,
            "--set",
            "units.device_type=all",
            "--repeat",
            "1",
            "--sample",
            "32",
        ])
        .envs(env)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("predicted")
            && text.contains("yes")
            && text.contains("local_size=0")
            && text.contains("best on "),
        "{text}"
    );
    let stored = std::fs::read_to_string(&cache).unwrap();
    assert!(
        stored.contains("apsp.worklist.u32") && stored.contains("batch ="),
        "{stored}"
    );
    // A run now takes the cached values (config > cache > prediction) ...
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
            .args(
                [
                    &[
                        "run",
                        cfg,
                        "-q",
                        "--set",
                        "units.device_type=all",
                        "--set",
                        "units.cpu_workers=0",
                        "--set",
                        &od,
                    ][..],
                    extra,
                ]
                .concat(),
            )
            .envs(env)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("out/report.json")).unwrap())
                .unwrap();
        r["devices"][0]["tuning"]["batch"]["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(run(&[]), "cache");
    // ... unless the config sets them.
    assert_eq!(run(&["--set", "apsp.batch=5"]), "config");
    // check shows where each value comes from.
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .args(["check", cfg, "--set", "units.device_type=all"])
        .envs(env)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(cache: measured by tune)") && text.contains("(predicted:"),
        "{text}"
    );
    // A file that is not a tuning cache is left alone with a warning naming it; the run's
    // parameters are predicted.
    std::fs::write(&cache, "entries = 3\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .args(["check", cfg, "--set", "units.device_type=all"])
        .envs(env)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success()
            && err.contains("tuning.toml")
            && err.contains("not a tuccompi tuning cache"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&cache).unwrap(), "entries = 3\n");
}
