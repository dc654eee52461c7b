//! The node layer under a real `mpirun -np 3` (built with `--features mpi`): the merged
//! summary and distance matrix equal a single-process run's, under both node policies.

use crate::util::*;
use std::process::Command;

fn mpirun(np: usize, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new("mpirun")
        .args(["-np", &np.to_string(), env!("CARGO_BIN_EXE_tuccompi")])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .envs(env.iter().copied())
        .output()
        .expect(
            "mpirun not found: install openmpi-bin (apt-get install openmpi-bin libopenmpi-dev)",
        );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Run `cfg` under mpirun with 3 ranks and compare with a single-process run.
fn three_ranks_match_one(cfg: &str, extra: &[&str]) {
    let dir = tmpdir("mpi");
    let path = dir.join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let single = run(
        cfg,
        &[
            &[
                "units.opencl=none",
                "units.cpu_workers=2",
                "output.distances=true",
            ][..],
            extra,
        ]
        .concat(),
    );
    for (policy, master) in [
        ("master-slave", "true"),
        ("equitable", "true"),
        ("master-slave", "false"),
    ] {
        let out = dir.join(format!("out-{policy}-{master}"));
        let mut args = vec!["run".to_string(), path.display().to_string(), "-q".into()];
        for s in [
            format!("output.dir={:?}", out.display().to_string()),
            format!("nodes.policy={policy}"),
            format!("nodes.master_computes={master}"),
            "units.opencl=none".into(),
            "units.cpu_workers=1".into(),
            "output.distances=true".into(),
        ]
        .into_iter()
        .chain(extra.iter().map(|s| s.to_string()))
        {
            args.push("--set".into());
            args.push(s);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, text) = mpirun(3, &args, &[]);
        assert!(ok, "{policy}: {text}");
        assert_eq!(
            read_summary(&out.join("summary.csv")),
            single.summary(),
            "{policy}, master computes {master}"
        );
        assert!(
            std::fs::read(out.join("distances.npy")).unwrap()
                == std::fs::read(single.dir.join("distances.npy")).unwrap()
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        let nodes = report["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 3);
        let per: Vec<u64> = nodes.iter().map(|n| n["tasks"].as_u64().unwrap()).collect();
        assert_eq!(
            per.iter().sum::<u64>(),
            report["tasks"].as_u64().unwrap(),
            "{per:?}"
        );
        if master == "false" {
            assert_eq!(per[0], 0, "rank 0 must not compute: {per:?}");
        }
        assert!(!out.join("INCOMPLETE").exists());
    }
}

#[test]
fn generated_graph_three_ranks() {
    three_ranks_match_one(
        &apsp_gen("rmat", 2000, "min_weight = 0\nseed = 3", "300"),
        &[],
    );
}

#[test]
fn phast_three_ranks() {
    // Every rank builds the same hierarchy; the results equal one process's, with targets too.
    let cfg = apsp_gen("road", 2000, "min_weight = 0\nseed = 6", "300");
    three_ranks_match_one(&cfg, &["apsp.cpu_algorithm=\"phast\""]);
    three_ranks_match_one(
        &cfg,
        &["apsp.cpu_algorithm=\"phast\"", "apsp.targets=[5, 1999, 5]"],
    );
}

#[test]
fn bremen_256_three_ranks() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    let cfg = apsp_file(&g, "256");
    three_ranks_match_one(&cfg, &[]);
    let single = run(&cfg, &["units.opencl=none"]);
    assert_eq!(single.checksum(), (80_041_145_648, 2_254_488, 41_549));
}

#[test]
fn a_failing_rank_stops_the_run_and_leaves_it_incomplete() {
    let dir = tmpdir("mpifail");
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_gen("road", 3000, "", "64")).unwrap();
    let out = dir.join("out");
    let od = format!("output.dir={:?}", out.display().to_string());
    let (ok, text) = mpirun(
        3,
        &[
            "run",
            path.to_str().unwrap(),
            "-q",
            "--set",
            &od,
            "--set",
            "units.opencl=none",
        ],
        &[("TUCCOMPI_TEST_FAIL_RANK", "1")],
    );
    assert!(!ok, "the run should fail: {text}");
    assert!(
        text.contains("rank 1 on") && text.contains("injected failure"),
        "{text}"
    );
    assert!(
        out.join("INCOMPLETE").exists(),
        "the output must stay marked incomplete"
    );
    assert!(!out.join("report.json").exists());
}

#[test]
fn plain_run_without_mpirun_is_one_node() {
    let dir = tmpdir("mpi1");
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_gen("road", 1000, "", "20")).unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .args(["run", path.to_str().unwrap(), "-q", "--set", &od])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_summary(&dir.join("out/summary.csv")).len(), 20);
}

#[test]
fn dense_plugins_refuse_several_ranks() {
    let dir = tmpdir("mpidense");
    let path = dir.join("c.toml");
    std::fs::write(
        &path,
        "[run]\nplugin = \"fw-blocked\"\n[input.generate]\nmodel = \"complete\"\nvertices = 50\n",
    )
    .unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let (ok, text) = mpirun(
        2,
        &[
            "run",
            path.to_str().unwrap(),
            "-q",
            "--set",
            &od,
            "--set",
            "units.opencl=none",
        ],
        &[],
    );
    assert!(!ok);
    assert!(text.contains("run it without mpirun"), "{text}");
}
