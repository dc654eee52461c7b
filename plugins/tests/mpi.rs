//! The node layer under a real `mpirun -np 3` (built with `--features mpi`): the merged
//! summary and distance matrix equal a single-process run's, under both node policies; a
//! failure of any rank at any phase ends the job within seconds with its message. Without the
//! feature: a binary started by a launcher of several processes refuses to run.

#[cfg(feature = "mpi")]
use crate::util::*;
use std::process::Command;

/// `mpirun` with the environment Open MPI needs here (root, more ranks than cores), then
/// `mpirun_args` (before the binary) and the tuccompi binary.
fn mpirun_command(mpirun_args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args(mpirun_args)
        .arg(env!("CARGO_BIN_EXE_tuccompi"))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    c
}

#[cfg(feature = "mpi")]
fn mpirun(np: usize, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = mpirun_command(&["-np", &np.to_string()])
        .args(args)
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
#[cfg(feature = "mpi")]
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
        // The three ranks run on this machine: one of them built the graph, every one maps it.
        for n in nodes {
            assert!(
                n["graph"]
                    .as_str()
                    .is_some_and(|g| g.starts_with("shared: one copy for the 3 ranks")),
                "{n}"
            );
        }
        // A PHAST run's hierarchy is made once, on rank 0, and the others receive it.
        if extra.iter().any(|s| s.contains("phast")) {
            for n in nodes {
                let note = n["from_rank_0"]["hierarchy"].as_str().unwrap_or_default();
                let want = if n["rank"] == 0 {
                    "made here"
                } else {
                    "received from rank 0"
                };
                assert!(note.starts_with(want), "{n}");
            }
            assert_eq!(
                report["input"]["algorithm"]["cpu_algorithm"], "phast",
                "{report}"
            );
        }
        // The report's units are every rank's (one CPU worker each).
        assert_eq!(report["units"].as_array().unwrap().len(), 3, "{policy}");
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

#[cfg(feature = "mpi")]
#[test]
fn generated_graph_three_ranks() {
    three_ranks_match_one(
        &apsp_gen("rmat", 2000, "min_weight = 0\nseed = 3", "300"),
        &[],
    );
}

#[cfg(feature = "mpi")]
#[test]
fn phast_three_ranks() {
    // Rank 0 builds the hierarchy and sends it; the results equal one process's, with targets too.
    let cfg = apsp_gen("road", 2000, "min_weight = 0\nseed = 6", "300");
    three_ranks_match_one(&cfg, &["apsp.cpu_algorithm=\"phast\""]);
    three_ranks_match_one(
        &cfg,
        &["apsp.cpu_algorithm=\"phast\"", "apsp.targets=[5, 1999, 5]"],
    );
}

#[cfg(feature = "mpi")]
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

#[cfg(feature = "mpi")]
#[test]
fn a_failing_rank_stops_the_run_and_nothing_looks_complete() {
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
    // The failure comes before any rank wrote a result: nothing looks complete.
    assert!(!out.join("report.json").exists() && !out.join("summary.csv").exists());
}

/// Kill (SIGKILL) every process whose command line mentions `marker`: mpirun and its ranks,
/// whatever process groups Open MPI put them in.
#[cfg(feature = "mpi")]
fn kill_all_mentioning(marker: &str) {
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if pid != std::process::id() && String::from_utf8_lossy(&cmd).contains(marker) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

#[cfg(feature = "mpi")]
#[test]
fn remote_chunks_reach_rank_0s_journal_and_a_killed_run_resumes() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    let tasks = 400;
    let cfg = apsp_file(&g, &tasks.to_string());
    let single = run(
        &cfg,
        &[
            "units.opencl=none",
            "units.cpu_workers=2",
            "output.distances=true",
        ],
    );
    for policy in ["master-slave", "equitable"] {
        let dir = tmpdir("mpikill");
        let path = dir.join("c.toml");
        std::fs::write(&path, &cfg).unwrap();
        let out = dir.join("out");
        let mut args = vec!["run".to_string(), path.display().to_string(), "-q".into()];
        for s in [
            format!("output.dir={:?}", out.display().to_string()),
            format!("nodes.policy={policy}"),
            // Under master-slave rank 0 computes nothing: every journaled chunk came from
            // another rank, as it finished.
            "nodes.master_computes=false".into(),
            "units.opencl=none".into(),
            "units.cpu_workers=1".into(),
            "scheduler.chunk=4".into(),
            "nodes.chunk=4".into(),
            "output.distances=true".into(),
            "output.sync_seconds=0".into(),
        ] {
            args.push("--set".into());
            args.push(s);
        }
        let mut child = mpirun_command(&["-np", "3"])
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let journal = out.join(".tuccompi-partial/journal");
        let t = std::time::Instant::now();
        while !std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{policy}: the run ended before it journaled anything"
            );
            assert!(t.elapsed().as_secs() < 120, "{policy}: no journal entry");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        kill_all_mentioning(&out.display().to_string());
        let _ = child.wait();
        let mut done = 0;
        tuccompi::sink::journal::replay(&journal, tasks, 4, |r, _| done += r.len()).unwrap();
        assert!(
            done > 0 && done < tasks,
            "{policy}: {done} of {tasks} journaled"
        );
        assert!(!out.join("summary.csv").exists());
        args.push("--resume".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, text) = mpirun(3, &args, &[]);
        assert!(ok, "{policy} resume: {text}");
        assert_eq!(
            std::fs::read(out.join("summary.csv")).unwrap(),
            std::fs::read(single.dir.join("summary.csv")).unwrap(),
            "{policy}"
        );
        assert!(
            std::fs::read(out.join("distances.npy")).unwrap()
                == std::fs::read(single.dir.join("distances.npy")).unwrap(),
            "{policy}: distances differ"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(report["resumed_tasks"].as_u64().unwrap(), done as u64);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(feature = "mpi")]
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

#[cfg(feature = "mpi")]
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

#[cfg(feature = "mpi")]
#[test]
fn ranks_report_their_devices_and_a_narrow_affinity_mask() {
    let dir = tmpdir("mpidev");
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_gen("road", 1000, "", "20")).unwrap();
    let out = dir.join("out");
    let od = format!("output.dir={:?}", out.display().to_string());
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let several_cpus = online.contains('-') || online.contains(',');
    for bind in ["core", "none"] {
        // No machine has an OpenCL "accelerator" here: each rank asked for every device and
        // finds none, and must say so.
        let o = mpirun_command(&["-np", "2", "--bind-to", bind])
            .args(["run", path.to_str().unwrap(), "-q", "--set", &od])
            .args([
                "--set",
                "units.device_type=accelerator",
                "--set",
                "units.cpu_workers=1",
            ])
            .output()
            .expect("mpirun");
        let text = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{text}");
        for r in 0..2 {
            assert!(
                text.contains(&format!("rank {r} on"))
                    && text.matches("no OpenCL device").count() >= 2,
                "rank {r} must report its units and the missing device: {text}"
            );
        }
        let warned = text.contains("affinity mask") && text.contains("--bind-to none");
        if bind == "none" {
            assert!(!warned, "{text}");
        } else if several_cpus {
            assert!(
                warned,
                "a rank bound to one core must say so, with the fix: {text}"
            );
            assert_eq!(
                text.matches("affinity mask").count(),
                2,
                "once per rank: {text}"
            );
        }
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        // The note names the filter as the config has it (it once said `[]`).
        assert!(!text.contains("units.opencl = []"), "{text}");
        if text.contains("no OpenCL device matches") {
            assert!(text.contains("units.opencl = \"all\";"), "{text}");
        }
        for n in report["nodes"].as_array().unwrap() {
            assert!(
                n["device_note"]
                    .as_str()
                    .is_some_and(|s| s.contains("no OpenCL device")),
                "{n}"
            );
        }
    }
}

/// Rank 0's server entry of a 2-rank run of `cfg` with `sets`: (seconds, idle probes,
/// messages).
#[cfg(feature = "mpi")]
fn server_of_two_ranks(name: &str, cfg: &str, sets: &[&str]) -> (f64, u64, u64) {
    let dir = tmpdir(name);
    let path = dir.join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let out = dir.join("out");
    let od = format!("output.dir={:?}", out.display().to_string());
    let mut args = vec!["run", path.to_str().unwrap(), "-q", "--set", &od];
    for s in sets {
        args.extend(["--set", s]);
    }
    let (ok, text) = mpirun(2, &args, &[]);
    assert!(ok, "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let server = &report["nodes"][0]["server"];
    let secs = server["seconds"].as_f64().unwrap();
    // Long enough that a 100 us pace would show: thousands of idle probes.
    assert!(secs > 0.2, "the run is too short to tell: {server}");
    (
        secs,
        server["idle_probes"].as_u64().unwrap(),
        server["messages"].as_u64().unwrap(),
    )
}

/// Rank 0's server of a two-rank run received at least `messages` messages and probed in vain
/// fewer times than `most(seconds it ran)`.
#[cfg(feature = "mpi")]
fn assert_server_quiet(
    name: &str,
    cfg: &str,
    sets: &[&str],
    messages: u64,
    most: impl Fn(f64) -> f64,
) {
    let (secs, idle, got) = server_of_two_ranks(name, cfg, sets);
    assert!(got >= messages, "{got}");
    assert!(
        (idle as f64) < most(secs),
        "rank 0's server woke too often: {idle} idle probes in {secs} s"
    );
}

#[cfg(feature = "mpi")]
#[test]
fn rank_zeros_server_sleeps_when_nobody_waits_for_it() {
    // Equitable ranks only send small records, which nobody waits on: rank 0's server must
    // not wake thousands of times a second (each wake preempts a busy worker). It sleeps
    // `Pace::LONGEST` (5 ms) between probes; the old fixed 100 us made 5,000-10,000 idle
    // probes a second.
    let cfg =
        apsp_gen("road", 40_000, "seed = 4", "400") + "[apsp]\ncpu_algorithm = \"dijkstra\"\n";
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=1",
        "nodes.policy=\"equitable\"",
    ];
    assert_server_quiet("mpipace", &cfg, &sets, 2, |secs| secs / 0.005 * 1.5 + 10.0);
    // Records too large to go eagerly (200 tasks of 4 words) keep their sender waiting: the
    // server paces itself by each unit's chunk time (about 0.1 s here), not by the moment
    // between two units' chunks, which end together (a per-rank pace fell to 100 us).
    let cfg =
        apsp_gen("road", 4_000, "seed = 5", "4000") + "[apsp]\ncpu_algorithm = \"dijkstra\"\n";
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "nodes.policy=\"equitable\"",
        "scheduler.policy=\"equitable\"",
        "scheduler.chunk=200",
    ];
    assert_server_quiet("mpipace2", &cfg, &sets, 10, |secs| secs / 0.0005 + 20.0);
}

#[cfg(feature = "mpi")]
#[test]
fn a_graph_no_rank_can_load_fails_every_rank_with_its_line() {
    // The ranks of this machine share one graph: the rank that loads it fails on line 3, and
    // the others must stop too (not wait for a graph that never comes).
    let dir = tmpdir("mpibadgraph");
    let g = dir.join("bad.gr");
    std::fs::write(&g, "p sp 3 2\na 1 2 5\na 1 x 5\n").unwrap();
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_file(&g, "2")).unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let mut child = mpirun_command(&["-np", "3"])
        .args(["run", path.to_str().unwrap(), "-q", "--set", &od])
        .args(["--set", "units.opencl=none", "--set", "units.cpu_workers=1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mpirun");
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() > 120 {
            let _ = child.kill();
            panic!("the ranks hang on a graph that fails to load");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("bad.gr:3"), "{text}");
}

/// Run `c` (an `mpirun` command) with its output in `dir/mpirun.log`, killing the job (every
/// process whose command line mentions `marker`) after `limit` seconds: (whether it succeeded,
/// its output, the seconds it ran, whether it had to be killed).
#[cfg(feature = "mpi")]
fn mpirun_within(
    mut c: Command,
    dir: &std::path::Path,
    marker: &str,
    limit: f64,
) -> (bool, String, f64, bool) {
    let log = dir.join("mpirun.log");
    let f = std::fs::File::create(&log).unwrap();
    c.stdout(f.try_clone().unwrap()).stderr(f);
    let t0 = std::time::Instant::now();
    let mut child = c.spawn().expect("mpirun");
    let mut killed = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed().as_secs_f64() > limit && !killed {
            kill_all_mentioning(marker);
            killed = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let secs = t0.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    (status.success() && !killed, text, secs, killed)
}

/// The input copies (`tuccompi-rankR-PID`) in `tmp`.
#[cfg(feature = "mpi")]
fn input_copies(tmp: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("tuccompi-rank"))
        .collect()
}

#[cfg(feature = "mpi")]
#[test]
fn a_failure_on_any_rank_at_any_phase_ends_the_job_within_10_s() {
    // A graph file, so that the other ranks hold input copies; a private temporary directory
    // to see them in.
    let dir = tmpdir("mpiphase");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let g = dir.join("ring.gr");
    let mut gr = String::from("p sp 600 600\n");
    for v in 1..=600 {
        gr += &format!("a {v} {} {}\n", v % 600 + 1, v % 7 + 1);
    }
    std::fs::write(&g, gr).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_file(&g, "64")).unwrap();
    let phases = [
        (
            "config",
            "injected failure (TUCCOMPI_TEST_FAIL_PHASE=config)",
        ),
        ("input", "injected failure (TUCCOMPI_TEST_FAIL_PHASE=input)"),
        ("prepare", "injected failure (TUCCOMPI_TEST_FAIL_RANK)"),
        ("run", "injected failure (TUCCOMPI_TEST_FAIL_PHASE=run)"),
        ("panic", "injected panic (TUCCOMPI_TEST_FAIL_PHASE=panic)"),
    ];
    for np in [2, 3] {
        let rank = (np - 1).to_string();
        for (phase, said) in phases {
            let out = dir.join(format!("out-{np}-{phase}"));
            let od = format!("output.dir={:?}", out.display().to_string());
            let mut c = mpirun_command(&["-np", &np.to_string()]);
            // Static shares: the failing rank surely runs a chunk (under master-slave, rank 0
            // may run all 64 tasks before another rank asks).
            c.args(["run", path.to_str().unwrap(), "-q", "--set", &od])
                .args(["--set", "units.opencl=none", "--set", "units.cpu_workers=1"])
                .args(["--set", "nodes.policy=\"equitable\""])
                .env("TUCCOMPI_TEST_FAIL_RANK", &rank)
                .env("TUCCOMPI_TEST_FAIL_PHASE", phase)
                .env("TMPDIR", &tmp);
            let (ok, text, secs, killed) = mpirun_within(c, &dir, path.to_str().unwrap(), 30.0);
            let what = format!("{np} ranks, rank {rank} failing at {phase}");
            assert!(
                !ok && !killed,
                "{what}: the job must fail by itself: {text}"
            );
            assert!(secs < 10.0, "{what}: the job took {secs:.1} s: {text}");
            assert!(
                text.contains(&format!("rank {rank} on")) && text.contains(said),
                "{what}: the failing rank's message is missing: {text}"
            );
            assert!(!out.join("report.json").exists(), "{what}");
        }
    }
    // A killed rank's input copy (planted here as one of a process that is gone) is swept by
    // the next run, and a run that succeeds leaves none of its own.
    std::fs::create_dir_all(tmp.join("tuccompi-rank1-4294967")).unwrap();
    std::fs::write(tmp.join("tuccompi-rank1-4294967/ring.gr"), "p sp 1 0\n").unwrap();
    let od = format!("output.dir={:?}", dir.join("out-ok").display().to_string());
    let mut c = mpirun_command(&["-np", "3"]);
    c.args(["run", path.to_str().unwrap(), "-q", "--set", &od])
        .args(["--set", "units.opencl=none", "--set", "units.cpu_workers=1"])
        .env("TMPDIR", &tmp);
    let (ok, text, _, _) = mpirun_within(c, &dir, path.to_str().unwrap(), 60.0);
    assert!(ok, "{text}");
    assert_eq!(input_copies(&tmp), Vec::<String>::new());
}

#[cfg(feature = "mpi")]
#[test]
fn a_bad_node_override_on_one_rank_fails_every_rank() {
    // This once hung, rank 0 spinning.
    let dir = tmpdir("mpiunits");
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_gen("road", 500, "", "8")).unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let bin = env!("CARGO_BIN_EXE_tuccompi");
    let args = ["run", path.to_str().unwrap(), "-q", "--set", &od];
    let args = [&args[..], &["--set", "units.opencl=none"]].concat();
    let mut c = mpirun_command(&["-np", "1"]);
    c.args(&args)
        .args([":", "-np", "1", "-x", "TUCCOMPI_UNITS=garbage", bin])
        .args(&args);
    let (ok, text, secs, killed) = mpirun_within(c, &dir, path.to_str().unwrap(), 30.0);
    assert!(!ok && !killed && secs < 10.0, "{secs:.1} s: {text}");
    assert!(
        text.contains("rank 1 on") && text.contains("TUCCOMPI_UNITS: 'garbage'"),
        "{text}"
    );
    // The same error found past the ranks' agreement (the test phase `late`): the rank
    // returns without MPI_Finalize, which would wait for rank 0, and the launcher ends the job.
    let mut c = mpirun_command(&["-np", "1"]);
    c.args(&args)
        .args([":", "-np", "1", "-x", "TUCCOMPI_UNITS=garbage"])
        .args([
            "-x",
            "TUCCOMPI_TEST_FAIL_RANK=1",
            "-x",
            "TUCCOMPI_TEST_FAIL_PHASE=late",
        ])
        .arg(bin)
        .args(&args);
    let (ok, text, secs, killed) = mpirun_within(c, &dir, path.to_str().unwrap(), 30.0);
    assert!(!ok && !killed && secs < 10.0, "{secs:.1} s: {text}");
    assert!(
        text.contains("rank 1 on") && text.contains("stopped before the other ranks"),
        "{text}"
    );
    assert!(text.contains("TUCCOMPI_UNITS: 'garbage'"), "{text}");
}

#[cfg(feature = "mpi")]
#[test]
fn the_closing_line_counts_every_ranks_units() {
    let dir = tmpdir("mpiunitcount");
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_gen("road", 500, "", "32")).unwrap();
    let out = dir.join("out");
    let od = format!("output.dir={:?}", out.display().to_string());
    let (ok, text) = mpirun(
        2,
        &["run", path.to_str().unwrap(), "--set", &od],
        &[("TUCCOMPI_UNITS", "cpu_workers=2,opencl=none")],
    );
    assert!(ok, "{text}");
    assert!(text.contains("32 tasks on 4 units"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let names: Vec<&str> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names[2].starts_with("rank1/"), "{names:?}");
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_under_a_launcher_stops_and_names_the_feature() {
    let dir = crate::util::tmpdir("nompi");
    let path = dir.join("c.toml");
    std::fs::write(&path, crate::util::apsp_gen("road", 300, "", "4")).unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let args = ["run", path.to_str().unwrap(), "-q", "--set", &od];
    let says = |text: &str| text.contains("--features mpi") && text.contains("without MPI");
    // What a launcher of two processes sets (Open MPI; Slurm's srun), without one.
    for env in [
        [("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "0")],
        [("SLURM_STEP_NUM_TASKS", "2"), ("SLURM_PROCID", "0")],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
            .args(args)
            .envs(env)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && says(&text), "{env:?}: {text}");
    }
    assert!(!dir.join("out").exists());
    // The real launcher, where Open MPI is installed.
    let Ok(o) = mpirun_command(&["-np", "2"]).args(args).output() else {
        eprintln!("NOT RUN under mpirun: mpirun not found");
        return;
    };
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("--features mpi"), "{text}");
}

#[cfg(feature = "mpi")]
#[test]
fn rank_0s_failure_to_make_the_hierarchy_fails_every_rank_with_its_message() {
    // Only rank 0 touches the hierarchy's path; the others learn its error from it.
    let dir = tmpdir("mpi-ch");
    let foreign = dir.join("notes.txt");
    std::fs::write(&foreign, "mine").unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 500, "seed = 2", "50")).unwrap();
    let out = dir.join("out");
    let od = format!("output.dir={:?}", out.display().to_string());
    let ch = format!("apsp.hierarchy={:?}", foreign.display().to_string());
    let mut c = mpirun_command(&["-np", "3"]);
    c.args(["run", cfg.to_str().unwrap(), "--set", &od])
        .args(["--set", "units.opencl=none", "--set", "units.cpu_workers=1"])
        .args(["--set", "apsp.cpu_algorithm=\"phast\"", "--set", &ch]);
    let (ok, text, secs, killed) = mpirun_within(c, &dir, cfg.to_str().unwrap(), 30.0);
    assert!(!killed && secs < 30.0, "{secs} s: {text}");
    assert!(!ok, "{text}");
    assert!(text.contains("notes.txt"), "{text}");
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "mine");
    assert!(!out.join("summary.csv").exists());
}

/// `units.opencl = "local_rank"` divides a machine's devices among its ranks: with
/// PoCL listing two devices, rank 0 takes gpu0 and rank 1 gpu1 (one rank per GPU); with three
/// ranks, the third shares gpu0 and says so. The results equal CPU Dijkstra's.
#[cfg(feature = "mpi")]
#[test]
fn local_rank_gives_each_rank_of_a_machine_its_own_devices() {
    let Some(spec) = crate::many_gpu::two_pocl_devices() else {
        return;
    };
    let cfg = apsp_gen("road", 2000, "seed = 8", "96");
    let want = dijkstra(&cfg, &[]);
    let dir = tmpdir("mpilocal");
    let path = dir.join("c.toml");
    std::fs::write(&path, &cfg).unwrap();
    let hierarchy = format!(
        "apsp.hierarchy={:?}",
        dir.join("h.ch").display().to_string()
    );
    for np in [2, 3] {
        let out = dir.join(format!("out{np}"));
        let od = format!("output.dir={:?}", out.display().to_string());
        let (ok, text) = mpirun(
            np,
            &[
                "run",
                path.to_str().unwrap(),
                "-q",
                "--set",
                &od,
                "--set",
                "units.opencl=\"local_rank\"",
                "--set",
                "units.device_type=all",
                "--set",
                "units.cpu_workers=0",
                "--set",
                "apsp.gpu_algorithm=\"phast\"",
                "--set",
                &hierarchy,
            ],
            &[("POCL_DEVICES", spec)],
        );
        assert!(ok, "{text}");
        let line = |r: usize| {
            text.lines()
                .find(|l| l.contains(&format!("rank {r} on")) && l.contains("OpenCL devices"))
                .unwrap_or_else(|| panic!("rank {r} said nothing of its devices: {text}"))
                .to_string()
        };
        assert!(
            line(0).contains(": gpu0 ") && !line(0).contains("gpu1"),
            "{text}"
        );
        assert!(
            line(1).contains(": gpu1 ") && !line(1).contains("gpu0"),
            "{text}"
        );
        if np == 3 {
            assert!(line(2).contains(": gpu0 "), "{text}");
            assert!(text.contains("share its 2 OpenCL device"), "{text}");
        }
        assert_eq!(
            read_summary(&out.join("summary.csv")),
            want.summary(),
            "{text}"
        );
    }
}
