//! The runtime's guarantees, tested on the framework's own test plugin (`probe/`), through the
//! whole command line in child processes (this test binary re-run as `probe`, see
//! [`child`]): both policies, CPU and GPU halves (PoCL in CI) against an independent reference,
//! kill and `--resume` byte-identical, `[verify]`, a failing unit's work retried on another,
//! the output directory's rules, and MPI ranks (with the `mpi` feature, under `mpirun`).
//!
//! Without OpenCL the GPU tests print `NOT RUN` and pass, unless `TUCCOMPI_REQUIRE_OPENCL` is
//! set (as in CI).

mod probe;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that makes this test binary the `probe` command line.
const CHILD: &str = "TUCCOMPI_PROBE_ARGS";

/// Not a test: the entry of the child processes the tests start (`probe ARGS...` with the
/// arguments in `TUCCOMPI_PROBE_ARGS`, as JSON). Ignored in a plain test run.
#[test]
#[ignore = "the entry point of the child processes the other tests start"]
fn child() {
    let Ok(args) = std::env::var(CHILD) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&args).unwrap();
    let argv = std::iter::once("probe".to_string()).chain(args);
    let code = tuccompi::cli::main_from(argv, &[&probe::Probe]);
    let n = (0..=255u8)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(1);
    std::process::exit(n as i32);
}

/// A fresh directory under the system's temporary directory, with a private cache folder
/// (tuning, speed history, the temporary-name key) for the children.
fn tmpdir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "tuccompi-core-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("cache")).unwrap();
    d
}

/// The child command `probe ARGS` in `dir`.
fn probe(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child", "--ignored", "--nocapture", "--quiet"])
        .env(CHILD, serde_json::to_string(args).unwrap())
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .current_dir(dir)
        .stdin(Stdio::null());
    c
}

/// A finished child: its exit code and stderr.
struct Ran {
    code: i32,
    err: String,
}

/// Write `probe.toml` with `[probe] extra` into `dir` and run it with `--set`s into `out`.
fn run(dir: &Path, extra: &str, out: &str, sets: &[&str], flags: &[&str]) -> Ran {
    std::fs::write(
        dir.join("probe.toml"),
        format!("[run]\nplugin = \"probe\"\n[probe]\n{extra}\n"),
    )
    .unwrap();
    let od = format!("output.dir={out:?}");
    let mut args = vec!["run", "probe.toml", "--set", &od];
    for s in sets {
        args.extend(["--set", s]);
    }
    args.extend(flags);
    let o = probe(dir, &args).output().unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        err: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// Whether an OpenCL device exists (PoCL in CI); absent: `NOT RUN`, or a failure under
/// `TUCCOMPI_REQUIRE_OPENCL`.
fn opencl() -> bool {
    match tuccompi::device::list() {
        Ok(l) if !l.is_empty() => true,
        other => {
            let why = other.map_or_else(|e| e.to_string(), |_| "no device".into());
            assert!(
                std::env::var_os("TUCCOMPI_REQUIRE_OPENCL").is_none(),
                "TUCCOMPI_REQUIRE_OPENCL is set but OpenCL is unusable: {why}"
            );
            eprintln!("NOT RUN: OpenCL test skipped: {why}");
            false
        }
    }
}

/// The outputs' bytes: probe.csv (none under `rows_only`) and both row files.
fn outputs(out: &Path) -> [Option<Vec<u8>>; 3] {
    let csv = std::fs::read(out.join("probe.csv")).ok();
    let [u, f] = ["rows_u32.npy", "rows_f32.npy"]
        .map(|f| std::fs::read(out.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")));
    [csv, Some(u), Some(f)]
}

/// Check `out`'s files against the definition of the probe (computed here, not by the
/// plugin's code): every record, every row, and the report's checksum.
fn check_reference(out: &Path, tasks: usize, cols: usize, seed: u64) {
    check_rows(out, tasks, cols);
    let csv = std::fs::read_to_string(out.join("probe.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("task,mix,quarter"));
    let mut xor = 0u64;
    for t in 0..tasks {
        let mut z = (t as u64 ^ seed).wrapping_add(0x9e3779b97f4a7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^= z >> 31;
        xor ^= z;
        assert_eq!(
            lines.next(),
            Some(format!("{t},{z},{}", t as f32 / 4.0).as_str())
        );
    }
    assert_eq!(lines.next(), None);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["checksum"]["mix_xor"].as_u64(), Some(xor));
}

/// Check `out`'s two row files against the probe's definition.
fn check_rows(out: &Path, tasks: usize, cols: usize) {
    let u: Vec<u32> = read_npy(&out.join("rows_u32.npy"), tasks, cols);
    let f: Vec<f32> = read_npy(&out.join("rows_f32.npy"), tasks, cols);
    for t in 0..tasks {
        for c in 0..cols {
            assert_eq!(u[t * cols + c], (t * cols + c) as u32, "rows_u32[{t}][{c}]");
            assert_eq!(
                f[t * cols + c],
                t as f32 + c as f32 / 2.0,
                "rows_f32[{t}][{c}]"
            );
        }
    }
}

fn read_npy<T: npyz::Deserialize>(p: &Path, rows: usize, cols: usize) -> Vec<T> {
    let bytes = std::fs::read(p).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(npy.shape(), &[rows as u64, cols as u64], "{}", p.display());
    npy.into_vec().unwrap()
}

/// Every policy on CPU workers, the GPU half alone and both together give the reference's
/// records and rows, byte for byte the same files.
#[test]
fn both_policies_and_both_halves_give_the_reference() {
    let dir = tmpdir("halves");
    let (tasks, cols, seed) = (700, 5, 12345);
    let extra = format!("tasks = {tasks}\ncols = {cols}\nseed = {seed}");
    let mut modes: Vec<Vec<&str>> = vec![
        vec![
            "units.opencl=\"none\"",
            "units.cpu_workers=3",
            "scheduler.policy=\"equitable\"",
        ],
        vec![
            "units.opencl=\"none\"",
            "units.cpu_workers=3",
            "scheduler.policy=\"work-queue\"",
        ],
    ];
    if opencl() {
        for policy in [
            "scheduler.policy=\"equitable\"",
            "scheduler.policy=\"work-queue\"",
        ] {
            modes.push(vec![
                "units.device_type=\"all\"",
                "units.cpu_workers=0",
                policy,
            ]);
            modes.push(vec![
                "units.device_type=\"all\"",
                "units.cpu_workers=2",
                "scheduler.gpu_chunk=64",
                policy,
            ]);
        }
    }
    let mut first = None;
    for (i, sets) in modes.iter().enumerate() {
        let out = format!("out{i}");
        let r = run(&dir, &extra, &out, sets, &["--quiet"]);
        assert_eq!(r.code, 0, "{sets:?}: {}", r.err);
        let out = dir.join(out);
        check_reference(&out, tasks, cols, seed);
        let files = outputs(&out);
        match &first {
            None => first = Some(files),
            Some(f) => assert!(f == &files, "{sets:?}: other bytes than the first mode's"),
        }
        // The units the report names are the ones asked for.
        let report = std::fs::read_to_string(out.join("report.json")).unwrap();
        let gpu = sets.iter().any(|s| s.contains("device_type"));
        assert_eq!(report.contains("\"gpu0"), gpu, "{sets:?}: {report}");
    }
}

/// A run killed (SIGKILL) once its journal holds tasks resumes with `--resume` to files
/// byte-identical to an uninterrupted run's, running only the tasks left.
#[test]
fn a_killed_run_resumes_to_byte_identical_files() {
    killed_and_resumed("kill", "");
}

/// The same for a job without records (its results only in rows, the default `finish`).
#[test]
fn a_killed_run_without_records_resumes_to_byte_identical_files() {
    killed_and_resumed("kill-rows", "rows_only = true");
}

fn killed_and_resumed(tag: &str, probe_keys: &str) {
    let dir = tmpdir(tag);
    let rows_only = !probe_keys.is_empty();
    let (tasks, cols) = (240, 3);
    let extra = format!("tasks = {tasks}\ncols = {cols}\ntask_ms = 15\n{probe_keys}");
    let sets = [
        "units.opencl=\"none\"",
        "units.cpu_workers=2",
        "scheduler.chunk=8",
        "output.sync_seconds=0.05",
    ];
    let reference = run(&dir, &extra, "whole", &sets, &["--quiet"]);
    assert_eq!(reference.code, 0, "{}", reference.err);
    // The killed run: the same config, into another directory.
    std::fs::write(
        dir.join("probe.toml"),
        format!("[run]\nplugin = \"probe\"\n[probe]\n{extra}\n"),
    )
    .unwrap();
    let mut args = vec![
        "run",
        "probe.toml",
        "--quiet",
        "--set",
        "output.dir=\"cut\"",
    ];
    for s in sets {
        args.extend(["--set", s]);
    }
    let mut child = probe(&dir, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = dir.join("cut/.tuccompi-partial/journal");
    let start = Instant::now();
    while std::fs::metadata(&journal).map_or(true, |m| m.len() < 200) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no journal after 60 s"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!dir.join("cut/report.json").exists());
    // A plain run refuses to bury the unfinished one; --resume finishes it.
    let plain = run(&dir, &extra, "cut", &sets, &["--quiet"]);
    assert_eq!(plain.code, 2, "{}", plain.err);
    assert!(plain.err.contains("--resume"), "{}", plain.err);
    let resumed = run(&dir, &extra, "cut", &sets, &["--quiet", "--resume"]);
    assert_eq!(resumed.code, 0, "{}", resumed.err);
    assert!(outputs(&dir.join("whole")) == outputs(&dir.join("cut")));
    if rows_only {
        check_rows(&dir.join("cut"), tasks, cols);
    } else {
        check_reference(&dir.join("cut"), tasks, cols, 0);
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cut/report.json")).unwrap())
            .unwrap();
    let resumed_tasks = report["resumed_tasks"].as_u64().unwrap();
    assert!(
        resumed_tasks > 0 && resumed_tasks < tasks as u64,
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `[verify]` re-runs the GPU half's tasks on the CPU half: a run whose GPU half is right
/// passes; one record wrong on the GPU fails the run, naming the task and the field, and
/// leaves no result.
#[test]
fn verify_finds_a_wrong_gpu_record() {
    if !opencl() {
        return;
    }
    let dir = tmpdir("verify");
    let sets = [
        "units.device_type=\"all\"",
        "units.cpu_workers=0",
        "verify.sample=60",
    ];
    let good = run(&dir, "tasks = 60", "good", &sets, &["--quiet"]);
    assert_eq!(good.code, 0, "{}", good.err);
    let report = std::fs::read_to_string(dir.join("good/report.json")).unwrap();
    assert!(report.contains("\"verified\""), "{report}");
    let bad = run(&dir, "tasks = 60\nwrong = 17", "bad", &sets, &["--quiet"]);
    assert_ne!(bad.code, 0, "{}", bad.err);
    assert!(
        bad.err.contains("17") && bad.err.contains("mix"),
        "the message names the task and the field: {}",
        bad.err
    );
    assert!(!dir.join("bad/report.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job without records: its rows are the reference on every unit mix, the default `finish`'s
/// checksum is the xxh3 of each row file (computed here), and `[verify]` compares the rows
/// themselves, naming a wrong task.
#[test]
fn a_job_without_records_is_checksummed_and_verified_by_its_rows() {
    let dir = tmpdir("rows-only");
    let (tasks, cols) = (300, 4);
    let extra = format!("tasks = {tasks}\ncols = {cols}\nrows_only = true");
    let mut mixes = vec![vec!["units.opencl=\"none\"", "units.cpu_workers=2"]];
    if opencl() {
        mixes.push(vec!["units.device_type=\"all\"", "units.cpu_workers=1"]);
    }
    for (i, sets) in mixes.iter().enumerate() {
        let out = format!("out{i}");
        let r = run(&dir, &extra, &out, sets, &["--quiet"]);
        assert_eq!(r.code, 0, "{sets:?}: {}", r.err);
        let out = dir.join(out);
        check_rows(&out, tasks, cols);
        assert!(!out.join("probe.csv").exists());
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        let sums = &report["checksum"];
        assert_eq!(sums["tasks"].as_u64(), Some(tasks as u64), "{report}");
        assert!(sums.get("records").is_none(), "{report}");
        for f in ["rows_u32.npy", "rows_f32.npy"] {
            let want = xxhash_rust::xxh3::xxh3_64(&std::fs::read(out.join(f)).unwrap());
            assert_eq!(
                sums[f].as_str(),
                Some(format!("{want:016x}").as_str()),
                "{f}"
            );
        }
    }
    if !opencl() {
        return;
    }
    let sets = [
        "units.device_type=\"all\"",
        "units.cpu_workers=0",
        "verify.sample=60",
    ];
    let bad = run(
        &dir,
        "tasks = 60\nrows_only = true\nwrong = 23",
        "bad",
        &sets,
        &["--quiet"],
    );
    assert_ne!(bad.code, 0, "{}", bad.err);
    assert!(
        bad.err.contains("23"),
        "the message names the task: {}",
        bad.err
    );
    assert!(!dir.join("bad/report.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A unit whose worker fails hands its chunk to the others under `on_failure = "retry"` (the
/// result is the reference, a warning names the unit); under `"abort"` the run fails and
/// writes no result.
#[test]
fn a_failing_units_tasks_are_retried_on_another() {
    let dir = tmpdir("retry");
    let cpu = ["units.opencl=\"none\"", "units.cpu_workers=2"];
    let r = run(
        &dir,
        "tasks = 100\nfail = \"cpu-once\"",
        "retry",
        &cpu,
        &["--quiet"],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err.contains("warning") && r.err.contains("fails on purpose"),
        "{}",
        r.err
    );
    check_reference(&dir.join("retry"), 100, 4, 0);
    let abort = [cpu[0], cpu[1], "units.on_failure=\"abort\""];
    let r = run(
        &dir,
        "tasks = 100\nfail = \"cpu-once\"",
        "abort",
        &abort,
        &["--quiet"],
    );
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("fails on purpose"), "{}", r.err);
    assert!(!dir.join("abort/report.json").exists());
    if opencl() {
        // Equal static shares: the device surely gets tasks to fail on.
        let mixed = [
            "units.device_type=\"all\"",
            "units.cpu_workers=2",
            "scheduler.policy=\"equitable\"",
        ];
        let r = run(
            &dir,
            "tasks = 100\nfail = \"gpu\"",
            "gpu",
            &mixed,
            &["--quiet"],
        );
        assert_eq!(r.code, 0, "{}", r.err);
        assert!(
            r.err.contains("gpu0"),
            "the warning names the unit: {}",
            r.err
        );
        check_reference(&dir.join("gpu"), 100, 4, 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The output directory: a rerun replaces an earlier result; a directory holding anything no
/// run made there is refused before anything is touched, naming the entry, and keeps it.
#[test]
fn output_directory_rules() {
    let dir = tmpdir("outdir");
    let cpu = ["units.opencl=\"none\"", "units.cpu_workers=2"];
    assert_eq!(run(&dir, "tasks = 10", "out", &cpu, &["--quiet"]).code, 0);
    let r = run(&dir, "tasks = 20", "out", &cpu, &["--quiet"]);
    assert_eq!(r.code, 0, "{}", r.err);
    check_reference(&dir.join("out"), 20, 4, 0);
    std::fs::write(dir.join("out/notes.txt"), "mine").unwrap();
    let before = outputs(&dir.join("out"));
    let r = run(&dir, "tasks = 30", "out", &cpu, &["--quiet"]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("notes.txt") && r.err.contains("output.dir"),
        "{}",
        r.err
    );
    assert!(before == outputs(&dir.join("out")));
    assert_eq!(
        std::fs::read_to_string(dir.join("out/notes.txt")).unwrap(),
        "mine"
    );
    // A file of the user's is never an output directory.
    std::fs::write(dir.join("file"), "x").unwrap();
    let r = run(&dir, "tasks = 10", "file", &cpu, &["--quiet"]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert_eq!(std::fs::read_to_string(dir.join("file")).unwrap(), "x");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run.tasks` for a plugin that reads no task selection is refused, naming the key and the
/// plugin, rather than ignored (every task would run); `"all"` is what it runs anyway.
#[test]
fn a_task_selection_the_plugin_does_not_read_is_refused() {
    let dir = tmpdir("tasks");
    let cpu = ["units.opencl=\"none\"", "units.cpu_workers=2"];
    for set in ["run.tasks=[3, 1]", "run.tasks=5"] {
        let sets = [cpu[0], cpu[1], set];
        let r = run(&dir, "tasks = 10", "out", &sets, &["--quiet"]);
        assert_eq!(r.code, 2, "{set}: {}", r.err);
        assert!(
            r.err.contains("run.tasks") && r.err.contains("the probe plugin runs every task"),
            "{set}: {}",
            r.err
        );
        assert!(!dir.join("out/report.json").exists());
    }
    let sets = [cpu[0], cpu[1], "run.tasks=\"all\""];
    let r = run(&dir, "tasks = 10", "out", &sets, &["--quiet"]);
    assert_eq!(r.code, 0, "{}", r.err);
    check_reference(&dir.join("out"), 10, 4, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// MPI ranks (the `mpi` feature, under `mpirun -np 3`): the ranks share the tasks and rank 0
/// writes the reference's files.
#[cfg(feature = "mpi")]
mod mpi {
    use super::*;

    #[test]
    fn mpi_ranks_share_the_tasks_and_give_the_reference() {
        let dir = tmpdir("mpi");
        std::fs::write(
            dir.join("probe.toml"),
            "[run]\nplugin = \"probe\"\n[probe]\ntasks = 300\ncols = 2\n",
        )
        .unwrap();
        let args = [
            "run",
            "probe.toml",
            "--quiet",
            "--set",
            "output.dir=\"out\"",
            "--set",
            "units.opencl=\"none\"",
            "--set",
            "units.cpu_workers=1",
        ];
        let exe = std::env::current_exe().unwrap();
        let o = Command::new("mpirun")
            .args(["-np", "3", "-x", CHILD, "-x", "XDG_CACHE_HOME"])
            .arg(exe)
            .args(["--exact", "child", "--ignored", "--nocapture", "--quiet"])
            .env(CHILD, serde_json::to_string(&args).unwrap())
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        check_reference(&dir.join("out"), 300, 2, 0);
        let report = std::fs::read_to_string(dir.join("out/report.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&report).unwrap();
        assert_eq!(v["nodes"].as_array().map(Vec::len), Some(3), "{report}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Two jobs one after the other, then two at once, in one session: every output is the
/// reference's, the devices are discovered once, and no program is built again.
#[test]
fn jobs_of_one_session_share_its_devices_and_programs() {
    let dir = tmpdir("session");
    let gpu = opencl();
    let units = if gpu {
        "[units]\nopencl = \"all\"\ndevice_type = \"all\"\ncpu_workers = 1\n"
    } else {
        "[units]\nopencl = \"none\"\ncpu_workers = 2\n"
    };
    let plan = |seed: u64, out: &str| {
        let cfg = dir.join(format!("{out}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[run]\nplugin = \"probe\"\n{}[output]\ndir = {:?}\n[probe]\ntasks = 300\nseed = {seed}\n",
                units,
                dir.join(out)
            ),
        )
        .unwrap();
        tuccompi::Plan::load(&cfg, &[]).unwrap()
    };
    let session = tuccompi::Session::new();
    session.run(&plan(1, "a"), &[&probe::Probe]).unwrap();
    check_reference(&dir.join("a"), 300, 4, 1);
    let builds: Vec<usize> = session.devices().iter().map(|d| d.builds()).collect();
    session.run(&plan(2, "b"), &[&probe::Probe]).unwrap();
    check_reference(&dir.join("b"), 300, 4, 2);
    let (c, d) = (plan(3, "c"), plan(4, "d"));
    std::thread::scope(|s| {
        let jobs = [
            s.spawn(|| session.run(&c, &[&probe::Probe])),
            s.spawn(|| session.run(&d, &[&probe::Probe])),
        ];
        for j in jobs {
            j.join().unwrap().unwrap();
        }
    });
    check_reference(&dir.join("c"), 300, 4, 3);
    check_reference(&dir.join("d"), 300, 4, 4);
    if gpu {
        assert_eq!(session.discoveries(), 1, "the devices are discovered once");
        assert!(
            builds.iter().all(|&b| b >= 1),
            "the first job built its programs"
        );
        let again: Vec<usize> = session.devices().iter().map(|d| d.builds()).collect();
        assert_eq!(again, builds, "later jobs build no program again");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `RunOptions::progress` is called while the units run, with tasks done never going back, and
/// last with every task done.
#[test]
fn a_progress_callback_sees_the_run_advance_to_its_end() {
    let dir = tmpdir("progress");
    let cfg = dir.join("p.toml");
    std::fs::write(
        &cfg,
        format!(
            "[run]\nplugin = \"probe\"\n[units]\nopencl = \"none\"\ncpu_workers = 2\n[output]\ndir = {:?}\n[probe]\ntasks = 200\ntask_ms = 3\n",
            dir.join("out")
        ),
    )
    .unwrap();
    let plan = tuccompi::Plan::load(&cfg, &[]).unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let call = |done: u64, total: u64| seen.lock().unwrap().push((done, total));
    let opts = tuccompi::RunOptions {
        quiet: true,
        plugins: vec![&probe::Probe],
        progress: Some(&call),
        ..Default::default()
    };
    tuccompi::Session::new().run_with(&plan, opts).unwrap();
    check_reference(&dir.join("out"), 200, 4, 0);
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert!(seen.iter().all(|&(_, t)| t == 200));
    assert_eq!(seen.last(), Some(&(200, 200)));
    assert!(seen[0].0 < 200, "a call came while the run went: {seen:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An in-memory run (`RunOptions::in_memory`) writes nothing (its `[output] dir` is not even
/// made) and hands back the same files, byte for byte, as the same run into a directory, on
/// the CPU workers and (where there is one) an OpenCL device; the report comes back as a value.
/// Such a run cannot resume, and an interrupted one says how many tasks were done.
#[test]
fn an_in_memory_run_writes_nothing_and_hands_back_the_files_a_run_writes() {
    let dir = tmpdir("in-memory");
    let units = if opencl() {
        "opencl = \"all\"\ndevice_type = \"all\"\ncpu_workers = 1"
    } else {
        "opencl = \"none\"\ncpu_workers = 2"
    };
    let plan_into = |out: &str| {
        let cfg = dir.join(format!("{out}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[run]\nplugin = \"probe\"\n[units]\n{units}\n[output]\ndir = {:?}\n[probe]\ntasks = 300\ncols = 5\n",
                dir.join(out)
            ),
        )
        .unwrap();
        tuccompi::Plan::load(&cfg, &[]).unwrap()
    };
    let session = tuccompi::Session::new();
    let memory = tuccompi::RunOptions {
        quiet: true,
        plugins: vec![&probe::Probe],
        in_memory: true,
        ..Default::default()
    };
    let outcome = session.run_with(&plan_into("memory"), memory).unwrap();
    assert!(
        !dir.join("memory").exists(),
        "an in-memory run made its output.dir"
    );
    assert_eq!(outcome.report["output"], "memory");
    // Its files, put where check_reference looks, with the report it returned.
    let mem = dir.join("from-memory");
    std::fs::create_dir(&mem).unwrap();
    let names: Vec<String> = outcome.files.names().map(String::from).collect();
    for name in &names {
        std::fs::write(mem.join(name), outcome.files.bytes(name).unwrap().unwrap()).unwrap();
    }
    std::fs::write(mem.join("report.json"), outcome.report.to_string()).unwrap();
    check_reference(&mem, 300, 5, 0);
    // The same run into a directory: the same bytes in every file.
    let disk = tuccompi::RunOptions {
        quiet: true,
        plugins: vec![&probe::Probe],
        ..Default::default()
    };
    session.run_with(&plan_into("disk"), disk).unwrap();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["probe.csv", "rows_f32.npy", "rows_u32.npy"]);
    for name in &names {
        assert_eq!(
            std::fs::read(dir.join("disk").join(name)).unwrap(),
            outcome.files.bytes(name).unwrap().unwrap(),
            "{name}"
        );
    }
    // Nothing to resume in memory; an interrupted in-memory run is an interruption.
    let resume = tuccompi::RunOptions {
        quiet: true,
        plugins: vec![&probe::Probe],
        in_memory: true,
        unfinished: tuccompi::runtime::Unfinished::Resume,
        ..Default::default()
    };
    let e = session.run_with(&plan_into("memory"), resume).unwrap_err();
    assert!(e.to_string().contains("cannot resume"), "{e}");
    let stop = std::sync::atomic::AtomicBool::new(true);
    let stopped = tuccompi::RunOptions {
        quiet: true,
        plugins: vec![&probe::Probe],
        in_memory: true,
        interrupt: Some(&stop),
        ..Default::default()
    };
    let e = session.run_with(&plan_into("memory"), stopped).unwrap_err();
    assert!(
        matches!(e, tuccompi::Error::Interrupted { total: 300, .. }),
        "{e}"
    );
    assert!(!dir.join("memory").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
