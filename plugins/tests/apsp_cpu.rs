//! The APSP CPU half against published references (computed with scipy and igraph) on real
//! road graphs, under both policies and 1-3 workers; and distance matrices against
//! Bellman-Ford.

use crate::util::*;

fn across_policies_and_workers(cfg: &str, expect: (u64, u64, u64), row: Option<[u128; 5]>) {
    for policy in ["equitable", "work-queue"] {
        for workers in ["1", "2", "3"] {
            let out = run(
                cfg,
                &[
                    &format!("scheduler.policy={policy}"),
                    &format!("units.cpu_workers={workers}"),
                    "units.opencl=none",
                ],
            );
            assert_eq!(out.checksum(), expect, "{policy}, {workers} workers");
            if let Some(row) = row {
                assert_eq!(
                    out.summary()[0],
                    row,
                    "{policy}, {workers} workers: first source's row"
                );
            }
            let units = out.report["units"].as_array().unwrap();
            assert_eq!(units.len(), workers.parse::<usize>().unwrap());
            let done: u64 = units.iter().map(|u| u["tasks"].as_u64().unwrap()).sum();
            assert_eq!(done, out.report["tasks"].as_u64().unwrap());
            // The phases account for the wall time, each of them measured.
            let ph = &out.report["phase_seconds"];
            let parts: Vec<f64> = ["prepare", "setup", "run", "finish"]
                .iter()
                .map(|k| ph[k].as_f64().unwrap_or(-1.0))
                .collect();
            let wall = out.report["wall_seconds"].as_f64().unwrap();
            assert!(parts.iter().all(|&x| x >= 0.0), "phase_seconds: {ph}");
            assert!(parts[0] > 0.0 && parts[2] > 0.0, "phase_seconds: {ph}");
            assert!(
                (parts.iter().sum::<f64>() - wall).abs() < 1e-6,
                "{ph} vs {wall}"
            );
        }
    }
}

#[test]
fn rome99_all_sources() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    across_policies_and_workers(
        &apsp_file(&g, "\"all\""),
        (160_839_610_183, 0, 77_403),
        None,
    );
}

#[test]
fn bremen_256_sources() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    let row = [1, 33_284, 40_461 - 33_284, 318_849_187, 33_202];
    across_policies_and_workers(
        &apsp_file(&g, "256"),
        (80_041_145_648, 2_254_488, 41_549),
        Some(row),
    );
}

#[test]
fn moscow_16_sources() {
    let Some(g) = data("osm-moscow.gr.gz") else {
        return;
    };
    let row = [1, 404_060, 411_992 - 404_060, 16_780_841_917, 100_090];
    across_policies_and_workers(
        &apsp_file(&g, "16"),
        (226_748_150_954, 126_912, 100_090),
        Some(row),
    );
}

#[test]
fn source_list_uses_the_input_numbering() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let all = run(&apsp_file(&g, "20"), &["units.opencl=none"]).summary();
    let some = run(&apsp_file(&g, "[20, 1, 7]"), &["units.opencl=none"]).summary();
    assert_eq!(some, vec![all[19], all[0], all[6]]);
}

/// distances.npy rows equal Bellman-Ford's, unreachable = the dtype's maximum, and agree with
/// the summary; 64-bit when the weights demand it.
fn npy_against_bellman_ford(extra: &str, wide: bool) {
    let cfg = apsp_gen("uniform", 120, extra, "\"all\"");
    let out = run(
        &cfg,
        &[
            "output.distances=true",
            "units.opencl=none",
            "units.cpu_workers=2",
        ],
    );
    let plan = tuccompi::Plan::from_toml(&cfg, std::path::Path::new("x"), &[]).unwrap();
    let input = tuccompi_plugins::common::input::Input::of(&plan).unwrap();
    let list = match input.spec.unwrap() {
        tuccompi_plugins::common::input::InputSpec::Generate(g) => {
            tuccompi_plugins::graph::generate(
                &tuccompi_plugins::common::generate_spec(&plan, &g).unwrap(),
            )
            .unwrap()
        }
        _ => unreachable!(),
    };
    let file =
        npyz::NpyFile::new(std::fs::File::open(out.dir.join("distances.npy")).unwrap()).unwrap();
    assert_eq!(file.shape(), &[120, 120]);
    let rows: Vec<u64> = if wide {
        assert_eq!(file.dtype().descr(), "'<u8'");
        file.into_vec::<u64>().unwrap()
    } else {
        assert_eq!(file.dtype().descr(), "'<u4'");
        file.into_vec::<u32>()
            .unwrap()
            .into_iter()
            .map(|d| if d == u32::MAX { u64::MAX } else { d as u64 })
            .collect()
    };
    let summary = out.summary();
    for s in 0..120 {
        let want = bellman_ford(120, &list.arcs, s);
        let got = &rows[s * 120..(s + 1) * 120];
        for v in 0..120 {
            let expect = want[v].map_or(u64::MAX, |d| d as u64);
            assert_eq!(got[v], expect, "distance {s} -> {v}");
        }
        let reached = want.iter().flatten().count() as u128;
        let sum: u128 = want.iter().flatten().sum();
        let max = want.iter().flatten().max().copied().unwrap_or(0);
        assert_eq!(summary[s], [s as u128, reached, 120 - reached, sum, max]);
    }
}

#[test]
fn distances_npy_matches_bellman_ford() {
    npy_against_bellman_ford(
        "degree = 1.5\nmin_weight = 0\nmax_weight = 20\nseed = 5",
        false,
    );
}

#[test]
fn wide_distances_when_weights_demand_it() {
    npy_against_bellman_ford(
        "degree = 2.0\nmin_weight = 3_000_000_000\nmax_weight = 4_000_000_000",
        true,
    );
}
