//! Losing nothing: a failed run leaves the earlier result byte-identical, unsafe output
//! directories are refused, a second run is refused while one runs, a killed or interrupted
//! run resumes to byte-identical outputs, `[verify]` catches a wrong accelerator record, and
//! an output too big for the disk is refused before anything is written.

use crate::util::*;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tuccompi::device::{Device, KernelSource};
use tuccompi::node::Single;
use tuccompi::plugin::{Details, Gpu, Job, Out, Plugin, PrepareCtx, Records, RecordsOut, Worker};
use tuccompi::runtime::{RunOptions, Unfinished};
use tuccompi::sink::outdir;
use tuccompi::tuning::{Choice, LaunchParams, Tuner};
use tuccompi::{Error, Plan, Result};

const BIN: &str = env!("CARGO_BIN_EXE_tuccompi");

/// Every file of `dir` (recursively, hidden ones too) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

/// Run `toml` + `sets` into `dir`, in this process.
fn run_in(
    dir: &Path,
    toml: &str,
    sets: &[&str],
    opts: &RunOptions<'_>,
) -> Result<serde_json::Value> {
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("output.dir={:?}", dir.display().to_string()));
    let plan = Plan::from_toml(toml, Path::new("test.toml"), &all)?;
    Ok(tuccompi_plugins::run(&plan, opts, &Single)?.report)
}

fn quiet() -> RunOptions<'static> {
    RunOptions {
        quiet: true,
        ..Default::default()
    }
}

fn tuccompi(args: &[&str], cwd: Option<&Path>) -> (i32, String, String) {
    let mut c = Command::new(BIN);
    c.args(args);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let out = c.output().unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!e.contains("panicked"), "panic: {e}");
    (out.status.code().unwrap_or(-1), o, e)
}

/// A plugin whose CPU worker fails at task `fail_at` (after earlier chunks finished), and
/// whose "accelerator" half (host code on an OpenCL device's unit) writes a wrong record for
/// task `wrong_at`. Records: `[t * t + 1]`.
#[derive(Debug, Clone, Copy)]
struct Planted {
    tasks: usize,
    fail_at: Option<usize>,
    wrong_at: Option<usize>,
}

impl Plugin for Planted {
    fn name(&self) -> &'static str {
        "planted"
    }
    fn description(&self) -> &'static str {
        "test plugin with planted faults"
    }
    fn prepare(&self, _ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        Ok(Box::new(*self))
    }
}

impl Job for Planted {
    fn tasks(&self) -> usize {
        self.tasks
    }
    fn record_words(&self) -> usize {
        1
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({})
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(PlantedWorker(*self, false)))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[STUB_KERNELS]
    }
    fn gpu_params(&self, _device: &Device, _tuner: &Tuner) -> Result<LaunchParams> {
        Ok(test_params())
    }
    fn gpu_worker<'a>(&'a self, _gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        Ok(Box::new(PlantedWorker(*self, true)))
    }
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        let text: String = (0..self.tasks)
            .map(|t| format!("{}\n", records.get(t)[0]))
            .collect();
        out.write_file("planted.csv", &text)?;
        Ok(serde_json::json!({}))
    }
}

struct PlantedWorker(Planted, bool);

impl Worker for PlantedWorker {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in range {
            if !self.1 && self.0.fail_at == Some(t) {
                return Err(Error::Input(format!("planted failure at task {t}")));
            }
            let wrong = self.1 && self.0.wrong_at == Some(t);
            out.record(t)[0] = if wrong { 0 } else { (t * t + 1) as u64 };
        }
        Ok(())
    }
}

/// The fixed launch parameters of the test plugins' host-code GPU halves: batches of 10 tasks
/// on one queue.
fn test_params() -> LaunchParams {
    let fixed = |v| Choice::fixed(v, "test plugin");
    LaunchParams {
        local: Default::default(),
        batch: fixed(10),
        groups_per_task: None,
        queues: fixed(1),
        persistent_items: None,
        cache_key: None,
        knobs: Default::default(),
        rules: Vec::new(),
    }
}

const PLANTED: &str = "[run]\nplugin = \"planted\"\n";

#[test]
fn a_failed_run_leaves_the_earlier_result_byte_identical() {
    let dir = tmpdir("rel-fail");
    let cfg = apsp_gen("road", 600, "", "40");
    let on = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "apsp.distances=true",
    ];
    run_in(&dir, &cfg, &on, &quiet()).unwrap();
    let before = snapshot(&dir);
    assert!(before.contains_key(&dir.join("distances.npy")));
    // Each fails before touching the directory: nothing changes, not even a staging folder.
    let bad: [(&[&str], &str); 4] = [
        (&["input.path=/no/such/graph.gr"], "/no/such/graph.gr"),
        (&["units.cpu_workers=0"], "no computational units"),
        (&["apsp.sources=[1, 99999]"], "out of range"),
        (&["output.sync_seconds=-1"], "output.sync_seconds"),
    ];
    for (sets, needle) in bad {
        let all: Vec<&str> = on.iter().chain(sets).copied().collect();
        let e = run_in(&dir, &cfg, &all, &quiet()).unwrap_err().to_string();
        assert!(e.contains(needle), "{sets:?}: {e}");
        assert_eq!(snapshot(&dir), before, "{sets:?} changed the directory");
    }
    // A directory that does not exist is not even created by a failing run.
    let fresh = dir.join("never");
    assert!(run_in(
        &fresh,
        &cfg,
        &["units.cpu_workers=0", "units.opencl=none"],
        &quiet()
    )
    .is_err());
    assert!(!fresh.exists());

    // A unit failing mid-run: the complete result stays as it was; the unfinished run waits
    // in its staging folder with its journal, and a plain run refuses to bury it.
    let dir = tmpdir("rel-fail-mid");
    let opts = |p: &'static Planted, unfinished| RunOptions {
        quiet: true,
        plugins: vec![p],
        unfinished,
        interrupt: None,
        discover_early: false,
        ..Default::default()
    };
    static GOOD: Planted = Planted {
        tasks: 50,
        fail_at: None,
        wrong_at: None,
    };
    static FAILS: Planted = Planted {
        tasks: 50,
        fail_at: Some(31),
        wrong_at: None,
    };
    let cpu = [
        "units.opencl=none",
        "units.cpu_workers=1",
        "scheduler.chunk=5",
        "scheduler.policy=equitable",
    ];
    run_in(&dir, PLANTED, &cpu, &opts(&GOOD, Unfinished::Refuse)).unwrap();
    let before = snapshot(&dir);
    let e = run_in(&dir, PLANTED, &cpu, &opts(&FAILS, Unfinished::Refuse)).unwrap_err();
    assert!(e.to_string().contains("planted failure at task 31"), "{e}");
    let after = snapshot(&dir);
    for (p, bytes) in &before {
        if !p.ends_with(outdir::LOCK) {
            assert_eq!(after.get(p), Some(bytes), "{} changed", p.display());
        }
    }
    let partial = dir.join(outdir::PARTIAL);
    assert!(partial.join(outdir::JOURNAL).exists());
    let e = run_in(&dir, PLANTED, &cpu, &opts(&GOOD, Unfinished::Refuse)).unwrap_err();
    assert!(
        e.to_string()
            .contains("holds an unfinished run (30 of 50 tasks done")
            && e.to_string().contains("--resume"),
        "{e}"
    );
    // Resumed with the fault gone: tasks 0..30 come from the journal.
    let report = run_in(&dir, PLANTED, &cpu, &opts(&GOOD, Unfinished::Resume)).unwrap();
    assert_eq!(report["resumed_tasks"], 30);
    assert_eq!(report["units"][0]["tasks"], 20);
    let expect: String = (0..50).map(|t| format!("{}\n", t * t + 1)).collect();
    assert_eq!(
        std::fs::read_to_string(dir.join("planted.csv")).unwrap(),
        expect
    );
    assert!(!partial.exists());
}

#[test]
fn stale_files_of_another_run_do_not_survive() {
    let dir = tmpdir("rel-stale");
    let cfg = apsp_gen("road", 400, "", "20");
    let cpu = ["units.opencl=none", "units.cpu_workers=1"];
    run_in(
        &dir,
        &cfg,
        &[&cpu[..], &["apsp.distances=true", "output.trace=true"]].concat(),
        &quiet(),
    )
    .unwrap();
    assert!(dir.join("distances.npy").exists() && dir.join("trace.json").exists());
    run_in(
        &dir,
        &apsp_gen("road", 300, "seed = 5", "7"),
        &cpu,
        &quiet(),
    )
    .unwrap();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names, ["report.json", "summary.csv"]);
    assert_eq!(read_summary(&dir.join("summary.csv")).len(), 7);
}

#[test]
fn unsafe_output_directories_are_refused_and_nothing_is_deleted() {
    let cwd = tmpdir("rel-cwd");
    std::fs::write(cwd.join("summary.csv"), "mine").unwrap();
    std::fs::write(cwd.join("report.json"), "mine too").unwrap();
    std::fs::write(cwd.join("a-file"), "x").unwrap();
    let cfg = cwd.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 100, "", "3")).unwrap();
    let cfg = cfg.display().to_string();
    for (dir, needle) in [
        ("\"\"", "output.dir is empty"),
        ("\"/\"", "filesystem root"),
        ("\".\"", "current directory"),
        ("\"..\"", "contains the current directory"),
        ("\"a-file\"", "is a file, not a directory"),
        ("\"a-file/out\"", "is a file, not a directory"),
    ] {
        let set = format!("output.dir={dir}");
        let (code, _, err) = tuccompi(
            &["run", &cfg, "--set", &set, "--set", "units.opencl=none"],
            Some(&cwd),
        );
        assert_eq!(code, 2, "{dir}: {err}");
        assert!(err.contains(needle), "{dir}: {err}");
        let (code, _, err) = tuccompi(&["check", &cfg, "--set", &set], Some(&cwd));
        assert_ne!(code, 0, "check {dir}");
        assert!(err.contains(needle), "check {dir}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(cwd.join("summary.csv")).unwrap(),
        "mine"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("report.json")).unwrap(),
        "mine too"
    );
    // A directory full of someone else's files.
    let foreign = tmpdir("rel-foreign");
    std::fs::write(foreign.join("thesis.tex"), "x").unwrap();
    let set = format!("output.dir={:?}", foreign.display().to_string());
    let (code, _, err) = tuccompi(&["run", &cfg, "--set", &set], None);
    assert_eq!(code, 2);
    assert!(err.contains("no tuccompi run made here"), "{err}");
}

#[test]
fn a_second_run_is_refused_naming_the_holder_and_a_stale_lock_is_taken_over() {
    let dir = tmpdir("rel-lock");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 200, "", "4")).unwrap();
    let out = dir.join("out");
    let set = format!("output.dir={:?}", out.display().to_string());
    let args = [
        "run",
        cfg.to_str().unwrap(),
        "-q",
        "--set",
        &set,
        "--set",
        "units.opencl=none",
    ];
    let held = outdir::OutputDir::lock(&out, "pid 4242 on testhost").unwrap();
    let t = Instant::now();
    let (code, _, err) = tuccompi(&args, None);
    assert_eq!(code, 2);
    assert!(
        err.contains("in use by another tuccompi run (pid 4242 on testhost)"),
        "{err}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "refused at once, not after waiting"
    );
    drop(held);
    let (code, _, err) = tuccompi(&args, None);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("stale"),
        "a clean end leaves no stale lock: {err}"
    );
    // A lock file left by a dead process: the kernel released its lock; the run takes over.
    std::fs::write(out.join(outdir::LOCK), "pid 999999 on gone-host\n").unwrap();
    let (code, _, err) = tuccompi(&args, None);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("pid 999999 on gone-host") && err.contains("stale"),
        "{err}"
    );
}

/// Start `tuccompi run` in the background.
fn spawn(args: &[String]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Whole journal entries so far (by size: the journal's first entry is at least 40 bytes).
fn wait_for_journal(journal: &Path, child: &mut Child) {
    let t = Instant::now();
    loop {
        if std::fs::metadata(journal).is_ok_and(|m| m.len() >= 40) {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before it journaled anything");
        }
        assert!(t.elapsed() < Duration::from_secs(120), "no journal entry");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

/// Tasks journaled in the unfinished run of `out`.
fn journaled(out: &Path, tasks: usize) -> usize {
    // The record's width as the unfinished run's identity states it (the summary's 4 words,
    // more for a job that folds more into each record).
    let identity: serde_json::Value =
        std::fs::read_to_string(out.join(outdir::PARTIAL).join(outdir::IDENTITY))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    let words = identity["record_words"].as_u64().unwrap_or(4) as usize;
    let mut n = 0;
    tuccompi::sink::journal::replay(
        &out.join(outdir::PARTIAL).join(outdir::JOURNAL),
        tasks,
        words,
        |r, _| n += r.len(),
    )
    .unwrap();
    n
}

/// Run `cfg` to completion in this process (the reference), interrupt the binary with `kill`
/// once its journal has entries, resume it, and compare the outputs byte for byte.
pub(crate) fn interrupt_then_resume(
    tag: &str,
    cfg: &str,
    tasks: usize,
    sets: &[&str],
    kill: &dyn Fn(&mut Child, &Path),
) -> (String, String) {
    interrupt_tamper_resume(tag, cfg, tasks, sets, kill, &|_| 0)
}

/// [`interrupt_then_resume`], with `tamper` changing the unfinished run in the output
/// directory between the interruption and the resume; it returns how many journaled tasks
/// it spoiled (the resume must run them again).
fn interrupt_tamper_resume(
    tag: &str,
    cfg: &str,
    tasks: usize,
    sets: &[&str],
    kill: &dyn Fn(&mut Child, &Path),
    tamper: &dyn Fn(&Path) -> usize,
) -> (String, String) {
    let reference = run(cfg, sets);
    let dir = tmpdir(tag);
    let path = dir.join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let out = dir.join("out");
    let mut args = vec!["run".to_string(), path.display().to_string()];
    for s in sets
        .iter()
        .map(|s| s.to_string())
        .chain([format!("output.dir={:?}", out.display().to_string())])
    {
        args.push("--set".into());
        args.push(s);
    }
    let mut child = spawn(&args);
    wait_for_journal(&out.join(outdir::PARTIAL).join(outdir::JOURNAL), &mut child);
    kill(&mut child, &out);
    let first = child.wait_with_output().unwrap();
    let first_err = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(
        !first.status.success(),
        "the run was not interrupted: {first_err}"
    );
    let done = journaled(&out, tasks);
    assert!(
        done > 0 && done < tasks,
        "interrupted mid-way: {done} of {tasks} journaled"
    );
    assert!(
        !out.join("summary.csv").exists(),
        "an unfinished run's files stay staged"
    );
    let spoiled = tamper(&out);
    args.push("--resume".into());
    let resumed = Command::new(BIN).args(&args).output().unwrap();
    let resumed_err = String::from_utf8_lossy(&resumed.stderr).into_owned();
    assert!(resumed.status.success(), "resume: {resumed_err}");
    for f in [
        "summary.csv",
        "distances.npy",
        "od.npz",
        "od.csv",
        "predecessors.npy",
        "paths.csv",
        "reach.csv",
        "nearest.csv",
        "isochrones.csv",
    ] {
        let a = std::fs::read(reference.dir.join(f)).ok();
        // A run with targets writes its OD matrix, unless it folds them ([apsp.reach]).
        if f.starts_with("od.") && cfg.contains("targets") && !cfg.contains("[apsp.reach]") {
            assert!(a.is_some(), "{f} written");
        }
        assert!(
            a == std::fs::read(out.join(f)).ok(),
            "{f} differs from the uninterrupted run's"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["checksum"], reference.report["checksum"]);
    // The resumed run skipped what was journaled and ran only the rest.
    let ran: u64 = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["tasks"].as_u64().unwrap())
        .sum();
    assert_eq!(
        report["resumed_tasks"].as_u64().unwrap(),
        (done - spoiled) as u64
    );
    assert_eq!(
        ran + report["resumed_tasks"].as_u64().unwrap(),
        tasks as u64
    );
    assert!(!out.join(outdir::PARTIAL).exists());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&reference.dir);
    (first_err, resumed_err)
}

#[test]
fn killed_mid_run_then_resumed_gives_byte_identical_outputs() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let cfg = apsp_file(&g, "\"all\"");
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=16",
        "apsp.distances=true",
        "output.sync_seconds=0.05",
    ];
    interrupt_then_resume("rel-kill", &cfg, 3353, &sets, &|child, _| {
        child.kill().unwrap(); // SIGKILL
    });
}

#[test]
fn an_od_run_killed_mid_way_resumes_to_byte_identical_od_files() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    // Targets without output.distances: the rows resume from the staging folder's hidden
    // file, and od.npz / od.csv are made from it at the end.
    let targets: Vec<u32> = (1..=64).map(|i| i * 50).collect();
    let cfg = format!(
        "{}[apsp]\ntargets = {targets:?}\n",
        apsp_file(&g, "\"all\"")
    );
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=16",
        "apsp.format=\"csv\"",
        "output.sync_seconds=0.05",
        "apsp.cpu_algorithm=\"dijkstra\"",
    ];
    interrupt_then_resume("rel-od", &cfg, 3353, &sets, &|child, out| {
        assert!(
            out.join(outdir::PARTIAL).join(".od-distances.npy").exists(),
            "the rows are staged"
        );
        child.kill().unwrap(); // SIGKILL
    });
}

#[test]
fn sigint_stops_with_a_resume_hint_and_resumes_byte_identical() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    let cfg = apsp_file(&g, "1000");
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=4",
        "output.sync_seconds=0.05",
    ];
    let (first, _) = interrupt_then_resume("rel-sigint", &cfg, 1000, &sets, &|child, out| {
        // While it runs, a second run on the same directory is refused, naming the first.
        let cfg = std::fs::read_dir(out.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "toml"))
            .unwrap();
        let set = format!("output.dir={:?}", out.display().to_string());
        let (code, _, err) = tuccompi(
            &[
                "run",
                cfg.to_str().unwrap(),
                "--set",
                &set,
                "--set",
                "units.opencl=none",
            ],
            None,
        );
        assert_eq!(code, 2);
        assert!(
            err.contains(&format!(
                "in use by another tuccompi run (pid {} on",
                child.id()
            )),
            "{err}"
        );
        signal(child, "-INT");
    });
    assert!(
        first.contains("interrupted:")
            && first.contains("continue with:")
            && first.contains("--resume"),
        "{first}"
    );
}

#[test]
fn a_second_signal_exits_at_once_and_the_journal_stays_valid() {
    let Some(g) = data("osm-bremen-dist.gr.gz") else {
        return;
    };
    let cfg = apsp_file(&g, "300");
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=32",
        "output.sync_seconds=0",
    ];
    let (first, _) = interrupt_then_resume("rel-sigint2", &cfg, 300, &sets, &|child, _| {
        signal(child, "-INT");
        std::thread::sleep(Duration::from_millis(5));
        signal(child, "-TERM");
    });
    assert!(
        first.contains("second signal") && first.contains("--resume"),
        "{first}"
    );
}

#[test]
fn resume_refuses_another_config_or_input() {
    let dir = tmpdir("rel-resume-id");
    static FAILS: Planted = Planted {
        tasks: 20,
        fail_at: Some(12),
        wrong_at: None,
    };
    let cpu = [
        "units.opencl=none",
        "units.cpu_workers=1",
        "scheduler.chunk=4",
    ];
    let opts = |unfinished| RunOptions {
        quiet: true,
        plugins: vec![&FAILS],
        unfinished,
        interrupt: None,
        discover_early: false,
        ..Default::default()
    };
    assert!(run_in(&dir, PLANTED, &cpu, &opts(Unfinished::Refuse)).is_err());
    let e = run_in(
        &dir,
        PLANTED,
        &[&cpu[..], &["output.trace=true"]].concat(),
        &opts(Unfinished::Resume),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("cannot resume") && e.contains("output.trace was false, is true"),
        "{e}"
    );
    // Units are not part of what a run computes: resuming on others is fine (and fails again
    // at the planted task, journaled tasks skipped).
    let e = run_in(
        &dir,
        PLANTED,
        &["units.opencl=none", "units.cpu_workers=2"],
        &opts(Unfinished::Resume),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("planted failure at task 12"), "{e}");
    // Another input file content: refused. An interrupt before the first chunk leaves an
    // unfinished run with nothing done.
    let d2 = tmpdir("rel-resume-input");
    let g = d2.join("g.gr");
    std::fs::write(&g, "p sp 3 2\na 1 2 3\na 2 3 4\n").unwrap();
    let cfg = apsp_file(&g, "3");
    let out = d2.join("out");
    let stop = std::sync::atomic::AtomicBool::new(true);
    let cpu = ["units.opencl=none", "units.cpu_workers=1"];
    let interrupted = RunOptions {
        quiet: true,
        interrupt: Some(&stop),
        ..Default::default()
    };
    let e = run_in(&out, &cfg, &cpu, &interrupted).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Interrupted {
                done: 0,
                total: 3,
                ..
            }
        ),
        "{e}"
    );
    std::fs::write(&g, "p sp 3 2\na 1 2 3\na 2 3 5\n").unwrap();
    let resume = RunOptions {
        quiet: true,
        unfinished: Unfinished::Resume,
        ..Default::default()
    };
    let e = run_in(&out, &cfg, &cpu, &resume).unwrap_err().to_string();
    assert!(e.contains("input file's content changed"), "{e}");
    std::fs::write(&g, "p sp 3 2\na 1 2 3\na 2 3 4\n").unwrap();
    run_in(&out, &cfg, &cpu, &resume).unwrap();
    let e = run_in(&out, &cfg, &cpu, &resume).unwrap_err().to_string();
    assert!(e.contains("nothing to resume"), "{e}");
    // Said before any preprocessing: even with the input gone, that is the message.
    std::fs::rename(&g, g.with_extension("gone")).unwrap();
    let e = run_in(&out, &cfg, &cpu, &resume).unwrap_err().to_string();
    assert!(e.contains("nothing to resume"), "{e}");
    std::fs::rename(g.with_extension("gone"), &g).unwrap();
    // --restart throws an unfinished run away.
    let e = run_in(&out, &cfg, &cpu, &interrupted).unwrap_err();
    assert!(matches!(e, Error::Interrupted { .. }), "{e}");
    let restart = RunOptions {
        quiet: true,
        unfinished: Unfinished::Discard,
        ..Default::default()
    };
    let report = run_in(&out, &cfg, &cpu, &restart).unwrap();
    assert_eq!(report["resumed_tasks"], 0);
}

#[test]
fn resume_refuses_a_changed_sources_file_naming_it() {
    // run.sources names an id file: the plugins read it and declare it among the job's
    // inputs. Rewritten with other ids of the same count (same task space, same config text),
    // the unfinished run is not resumed.
    let d = tmpdir("rel-resume-sources");
    let g = d.join("g.gr");
    std::fs::write(&g, "p sp 3 2\na 1 2 3\na 2 3 4\n").unwrap();
    let ids = d.join("ids.txt");
    std::fs::write(&ids, "1\n2\n").unwrap();
    let cfg = apsp_file(&g, &format!("{{ file = {:?} }}", ids.display().to_string()));
    let out = d.join("out");
    let stop = std::sync::atomic::AtomicBool::new(true);
    let cpu = ["units.opencl=none", "units.cpu_workers=1"];
    let interrupted = RunOptions {
        quiet: true,
        interrupt: Some(&stop),
        ..Default::default()
    };
    let e = run_in(&out, &cfg, &cpu, &interrupted).unwrap_err();
    assert!(matches!(e, Error::Interrupted { total: 2, .. }), "{e}");
    std::fs::write(&ids, "1\n3\n").unwrap();
    let resume = RunOptions {
        quiet: true,
        unfinished: Unfinished::Resume,
        ..Default::default()
    };
    let e = run_in(&out, &cfg, &cpu, &resume).unwrap_err().to_string();
    assert!(
        e.contains("cannot resume") && e.contains("content changed") && e.contains("ids.txt"),
        "{e}"
    );
    std::fs::write(&ids, "1\n2\n").unwrap();
    let report = run_in(&out, &cfg, &cpu, &resume).unwrap();
    assert_eq!(report["tasks"], 2, "{report}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn verify_detects_a_planted_wrong_record() {
    if !opencl() {
        return;
    }
    static WRONG: Planted = Planted {
        tasks: 60,
        fail_at: None,
        wrong_at: Some(37),
    };
    static RIGHT: Planted = Planted {
        tasks: 60,
        fail_at: None,
        wrong_at: None,
    };
    let sets = [
        "units.cpu_workers=0",
        "units.device_type=all",
        "units.opencl=all",
    ];
    let opts = |p: &'static Planted| RunOptions {
        quiet: true,
        plugins: vec![p],
        ..Default::default()
    };
    // Every task checked: the planted one is found, named with its unit.
    let dir = tmpdir("rel-verify");
    let e = run_in(
        &dir,
        PLANTED,
        &[&sets[..], &["verify.sample=60"]].concat(),
        &opts(&WRONG),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("unit gpu")
            && e.contains("task 37")
            && e.contains("[0]")
            && e.contains("[1370]"),
        "{e}"
    );
    assert!(!dir.join("planted.csv").exists());
    assert!(
        !dir.join(outdir::PARTIAL).exists(),
        "a run with a wrong record is not resumable"
    );
    // Without [verify] the wrong record goes through: the check is what catches it.
    let report = run_in(
        &tmpdir("rel-verify"),
        PLANTED,
        &[&sets[..], &["verify.sample=0"]].concat(),
        &opts(&WRONG),
    )
    .unwrap();
    assert!(report.get("verify").is_none());
    // A sample of a correct half: counted in the report.
    let report = run_in(
        &tmpdir("rel-verify"),
        PLANTED,
        &[&sets[..], &["verify.sample=25"]].concat(),
        &opts(&RIGHT),
    )
    .unwrap();
    assert_eq!(report["verify"]["verified"], 25);
    // The real APSP GPU half on PoCL.
    let report = run(
        &apsp_gen("road", 500, "", "40"),
        &[
            "units.device_type=all",
            "units.cpu_workers=0",
            "verify.sample=8",
        ],
    );
    assert_eq!(report.report["verify"]["verified"], 8);
}

/// A plugin with f32 bulk rows (`rows.npy`, row t = four values t + 0.5) whose CPU half
/// writes its rows off by `cpu_off` (relative): the device's rows are the run's.
struct RowsPlugin {
    cpu_off: f32,
}

struct RowsJob {
    cpu_off: f32,
    rows: tuccompi::sink::NpyRows,
}

impl Plugin for RowsPlugin {
    fn name(&self) -> &'static str {
        "rows"
    }
    fn description(&self) -> &'static str {
        "test plugin with float bulk rows"
    }
    fn prepare(&self, _ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        Ok(Box::new(RowsJob {
            cpu_off: self.cpu_off,
            rows: tuccompi::sink::NpyRows::of::<f32>("rows.npy", 40, 4)?,
        }))
    }
}

impl Job for RowsJob {
    fn tasks(&self) -> usize {
        40
    }
    fn record_words(&self) -> usize {
        1
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({})
    }
    fn details(&self) -> Details<'_> {
        Details {
            tolerance: tuccompi::plugin::Tolerance::exact().f32(0.0, 1e-5),
            bulk: vec![&self.rows],
            ..Details::default()
        }
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(RowsWorker(self, self.cpu_off)))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[STUB_KERNELS]
    }
    fn gpu_params(&self, _device: &Device, _tuner: &Tuner) -> Result<LaunchParams> {
        Ok(test_params())
    }
    fn gpu_worker<'a>(&'a self, _gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        Ok(Box::new(RowsWorker(self, 0.0)))
    }
    fn finish(&self, _records: &Records, _out: &Out) -> Result<serde_json::Value> {
        Ok(serde_json::json!({}))
    }
}

struct RowsWorker<'a>(&'a RowsJob, f32);

impl Worker for RowsWorker<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in range {
            out.record(t)[0] = t as u64;
            let v = (t as f32 + 0.5) * (1.0 + self.1);
            self.0.rows.write(t, &[v; 4])?;
        }
        Ok(())
    }
}

/// A3 of issue 47: `[verify]` re-runs never write over the device's bulk rows, and it compares
/// them: within the tolerance the file holds the device's rows exactly; beyond it the run
/// fails naming the row.
#[test]
fn verify_compares_bulk_rows_and_never_writes_them() {
    if !opencl() {
        return;
    }
    static CLOSE: RowsPlugin = RowsPlugin { cpu_off: 2e-6 };
    static FAR: RowsPlugin = RowsPlugin { cpu_off: 1e-3 };
    let sets = [
        "units.cpu_workers=0",
        "units.device_type=all",
        "units.opencl=all",
        "verify.sample=40",
    ];
    let opts = |p: &'static RowsPlugin| RunOptions {
        quiet: true,
        plugins: vec![p],
        ..Default::default()
    };
    let cfg = "[run]\nplugin = \"rows\"\n";
    let dir = tmpdir("rel-verify-rows");
    let report = run_in(&dir, cfg, &sets, &opts(&CLOSE)).unwrap();
    assert_eq!(report["verify"]["verified"], 40);
    let bytes = std::fs::read(dir.join("rows.npy")).unwrap();
    let header = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let want: Vec<u8> = (0..40)
        .flat_map(|t| [t as f32 + 0.5; 4])
        .flat_map(f32::to_le_bytes)
        .collect();
    assert!(
        bytes[header..] == want[..],
        "rows.npy holds the CPU half's re-run rows, not the device's"
    );
    let e = run_in(&tmpdir("rel-verify-rows"), cfg, &sets, &opts(&FAR))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rows.npy") && e.contains("column 0") && e.contains("unit gpu"),
        "{e}"
    );
}

#[test]
fn the_size_check_refuses_an_output_too_big_for_the_disk() {
    let dir = tmpdir("rel-size");
    let out = dir.join("out");
    let free = outdir::available_space(&dir).unwrap();
    // Every source of an n-vertex graph with u32 distances writes 4 n^2 bytes: make it twice
    // the free space.
    let n = ((free as f64 / 2.0).sqrt().ceil() as u64).max(1000);
    let path = dir.join("c.toml");
    std::fs::write(&path, apsp_gen("road", n, "", "\"all\"")).unwrap();
    let set = format!("output.dir={:?}", out.display().to_string());
    let args = [
        "--set",
        &set,
        "--set",
        "apsp.distances=true",
        "--set",
        "units.opencl=none",
    ];
    let cfg = path.to_str().unwrap();
    // `--resume` with nothing to resume is refused before the input is even generated.
    let (code, _, err) = tuccompi(&[&["run", cfg, "--resume"][..], &args].concat(), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing to resume"), "{err}");
    assert!(!out.exists(), "refused before touching the disk");
    // A plain run is refused by the size check, before touching the disk.
    let (code, _, err) = tuccompi(&[&["run", cfg][..], &args].concat(), None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the outputs need") && err.contains("are free on the filesystem"),
        "{err}"
    );
    assert!(!out.exists(), "refused before touching the disk");
    let (code, stdout, err) = tuccompi(&[&["check", cfg][..], &args].concat(), None);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("warning: the outputs need"), "{stdout}");
    // Without the distance matrix it fits.
    let (_, stdout, _) = tuccompi(&["check", cfg, "--set", &set], None);
    assert!(!stdout.contains("warning: the outputs need"), "{stdout}");
}

/// An apsp config on a generated road graph with CPU PHAST (a hierarchy is built and cached).
fn phast_cfg(extra: &str) -> String {
    format!(
        "[run]\nplugin = \"apsp\"\nsources = 300\n[input.generate]\nmodel = \"road\"\n\
         vertices = 300\n[units]\nopencl = \"none\"\ncpu_workers = 1\n[apsp]\n\
         cpu_algorithm = \"phast\"\n{extra}\n"
    )
}

fn tuccompi_env(args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!e.contains("panicked"), "panic: {e}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        e,
    )
}

#[test]
fn check_writes_no_hierarchy_cache_and_run_does() {
    let dir = tmpdir("rel-check-cache");
    let cache = dir.join("xdg");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, phast_cfg("")).unwrap();
    let set = format!("output.dir={:?}", dir.join("out").display().to_string());
    let env = [("XDG_CACHE_HOME", cache.as_path()), ("HOME", dir.as_path())];
    let args = ["check", cfg.to_str().unwrap(), "--set", &set];
    let (code, _, err) = tuccompi_env(&args, &env);
    assert_eq!(code, 0, "{err}");
    assert!(snapshot(&dir.join("xdg")).is_empty() && !dir.join(".cache").exists());
    assert!(!dir.join("out").exists());
    let (code, _, err) = tuccompi_env(&["run", "-q", cfg.to_str().unwrap(), "--set", &set], &env);
    assert_eq!(code, 0, "{err}");
    assert_eq!(snapshot(&cache.join("tuccompi/hierarchies")).len(), 1);
}

#[test]
fn a_hierarchy_path_holding_a_users_file_is_refused_not_replaced() {
    let dir = tmpdir("rel-hier-foreign");
    let precious = dir.join("v4");
    std::fs::write(&precious, "precious\n").unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        phast_cfg(&format!("hierarchy = {:?}", precious.display().to_string())),
    )
    .unwrap();
    let set = format!("output.dir={:?}", dir.join("out").display().to_string());
    let (code, _, err) = tuccompi(&["run", "-q", cfg.to_str().unwrap(), "--set", &set], None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[apsp] hierarchy") && err.contains("not a tuccompi hierarchy"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
}

#[test]
fn a_file_at_the_partial_folder_is_refused_and_removed_by_restart() {
    let dir = tmpdir("rel-stray-partial");
    static GOOD: Planted = Planted {
        tasks: 20,
        fail_at: None,
        wrong_at: None,
    };
    let opts = |unfinished| RunOptions {
        quiet: true,
        plugins: vec![&GOOD],
        unfinished,
        interrupt: None,
        discover_early: false,
        ..Default::default()
    };
    let cpu = ["units.opencl=none", "units.cpu_workers=1"];
    run_in(&dir, PLANTED, &cpu, &opts(Unfinished::Refuse)).unwrap();
    std::fs::write(dir.join(outdir::PARTIAL), "x").unwrap();
    for mode in [Unfinished::Refuse, Unfinished::Resume] {
        let e = run_in(&dir, PLANTED, &cpu, &opts(mode))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not tuccompi's folder") && e.contains("--restart"),
            "{mode:?}: {e}"
        );
    }
    run_in(&dir, PLANTED, &cpu, &opts(Unfinished::Discard)).unwrap();
    assert!(!dir.join(outdir::PARTIAL).exists());
    // A link there: --restart removes the link, never what it leads to.
    let elsewhere = tmpdir("rel-stray-partial-target");
    std::fs::write(elsewhere.join("keep"), "x").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(outdir::PARTIAL)).unwrap();
    assert!(run_in(&dir, PLANTED, &cpu, &opts(Unfinished::Resume)).is_err());
    run_in(&dir, PLANTED, &cpu, &opts(Unfinished::Discard)).unwrap();
    assert_eq!(snapshot(&elsewhere).len(), 1);
}

#[test]
fn links_planted_in_the_partial_folder_are_not_followed_on_resume() {
    let dir = tmpdir("rel-planted-links");
    static GOOD: Planted = Planted {
        tasks: 40,
        fail_at: None,
        wrong_at: None,
    };
    static FAILS: Planted = Planted {
        tasks: 40,
        fail_at: Some(21),
        wrong_at: None,
    };
    let opts = |p: &'static Planted, unfinished| RunOptions {
        quiet: true,
        plugins: vec![p],
        unfinished,
        interrupt: None,
        discover_early: false,
        ..Default::default()
    };
    let cpu = [
        "units.opencl=none",
        "units.cpu_workers=1",
        "scheduler.chunk=5",
        "scheduler.policy=equitable",
    ];
    assert!(run_in(&dir, PLANTED, &cpu, &opts(&FAILS, Unfinished::Refuse)).is_err());
    let partial = dir.join(outdir::PARTIAL);
    assert!(partial.join(outdir::JOURNAL).exists());
    let victim = tmpdir("rel-planted-victim").join("v");
    std::fs::write(&victim, "precious").unwrap();
    // Earlier versions' temporary names, and an output's own name.
    for name in [
        ".report.json.tmp",
        ".planted.csv.tmp",
        ".COMMIT.tmp",
        "planted.csv",
    ] {
        std::os::unix::fs::symlink(&victim, partial.join(name)).unwrap();
    }
    run_in(&dir, PLANTED, &cpu, &opts(&GOOD, Unfinished::Resume)).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    for name in ["report.json", "planted.csv"] {
        let m = std::fs::symlink_metadata(dir.join(name)).unwrap();
        assert!(m.file_type().is_file(), "{name} is the run's own file");
    }
    let expect: String = (0..40).map(|t| format!("{}\n", t * t + 1)).collect();
    assert_eq!(
        std::fs::read_to_string(dir.join("planted.csv")).unwrap(),
        expect
    );
}

/// Another program's files, with a `report.json` and an `INCOMPLETE` among them, are not an
/// earlier tuccompi output: the run is refused, naming them, and changes nothing.
#[test]
fn a_directory_of_lookalike_files_is_refused_and_left_untouched() {
    let dir = tmpdir("rel-lookalike");
    let x = dir.join("x");
    std::fs::create_dir(&x).unwrap();
    for f in [
        "report.json",
        "summary.csv",
        "distances.npy",
        "trace.json",
        "INCOMPLETE",
        "notes.txt",
    ] {
        std::fs::write(x.join(f), "foreign\n").unwrap();
    }
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 100, "", "3")).unwrap();
    let before = snapshot(&x);
    let set = format!("output.dir={:?}", x.display().to_string());
    for extra in [&[][..], &["--resume"][..], &["--restart"][..]] {
        let args = [&["run", cfg.to_str().unwrap(), "--set", &set][..], extra].concat();
        let (code, _, err) = tuccompi(&args, None);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(
            err.contains("no tuccompi run made here")
                && err.contains("\"report.json\"")
                && err.contains("\"INCOMPLETE\"")
                && err.contains("another output.dir"),
            "{extra:?}: {err}"
        );
        assert_eq!(snapshot(&x), before, "{extra:?} changed the directory");
    }
    // An earlier tuccompi output with a file of the user's added: refused, naming it.
    let out = dir.join("out");
    let set = format!("output.dir={:?}", out.display().to_string());
    let args = ["run", cfg.to_str().unwrap(), "-q", "--set", &set];
    assert_eq!(tuccompi(&args, None).0, 0);
    std::fs::write(out.join("mine.txt"), "x").unwrap();
    let (code, _, err) = tuccompi(&args, None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\"mine.txt\"") && !err.contains("summary.csv"),
        "{err}"
    );
    std::fs::remove_file(out.join("mine.txt")).unwrap();
    assert_eq!(tuccompi(&args, None).0, 0);
    // N9 of issue 47: a real tuccompi report copied beside the user's own files proves
    // nothing, nor does a planted list naming them: refused, nothing deleted.
    let y = dir.join("y");
    std::fs::create_dir(&y).unwrap();
    std::fs::copy(out.join("report.json"), y.join("report.json")).unwrap();
    for f in ["distances.npy", "trace.json", "notes.txt", "thesis.tex"] {
        std::fs::write(y.join(f), "mine\n").unwrap();
    }
    let set = format!("output.dir={:?}", y.display().to_string());
    let args = ["run", cfg.to_str().unwrap(), "-q", "--set", &set];
    for list in [None, Some("notes.txt\nthesis.tex\nreport.json")] {
        if let Some(l) = list {
            std::fs::write(y.join(outdir::FILES), l).unwrap();
        }
        let before = snapshot(&y);
        let (code, _, err) = tuccompi(&args, None);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("\"distances.npy\"") && err.contains("no tuccompi run made here"),
            "{err}"
        );
        assert_eq!(snapshot(&y), before);
    }
}

/// A byte flipped in a journaled row of the staged `distances.npy` between a kill and the
/// resume: that chunk's rows no longer match the journal's checksum, so it runs again and the
/// result equals an uninterrupted run's.
#[test]
fn a_flipped_byte_in_a_journaled_row_is_recomputed_on_resume() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let cfg = apsp_file(&g, "\"all\"");
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=16",
        "apsp.distances=true",
        "output.sync_seconds=0.05",
    ];
    let tasks = 3353;
    let (_, resumed) = interrupt_tamper_resume(
        "rel-flip",
        &cfg,
        tasks,
        &sets,
        &|child, _| child.kill().unwrap(),
        &|out| {
            let partial = out.join(outdir::PARTIAL);
            let mut first = None;
            tuccompi::sink::journal::replay(&partial.join(outdir::JOURNAL), tasks, 4, |r, _| {
                first.get_or_insert(r);
            })
            .unwrap();
            let first = first.unwrap();
            let path = partial.join("distances.npy");
            let mut bytes = std::fs::read(&path).unwrap();
            let header = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            let row = (bytes.len() - header) / tasks;
            bytes[header + first.start * row + row / 2] ^= 0x40;
            std::fs::write(&path, &bytes).unwrap();
            first.len()
        },
    );
    assert!(resumed.contains("no longer match"), "{resumed}");
}

/// A run killed while its finished files moved into place (after its commit marker was
/// written, or after its first file was moved: `TUCCOMPI_FAILPOINT`, an abort as a `kill -9`
/// there): a plain run finishes that commit and runs; `--resume` finishes it and ends there,
/// exit 0, with the stopped run's report.
#[test]
fn a_commit_stopped_midway_is_finished_by_run_and_by_resume() {
    let dir = tmpdir("rel-commit");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 300, "", "12")).unwrap();
    let cfg = cfg.display().to_string();
    for point in ["commit-marked", "commit-renamed"] {
        for resume in [false, true] {
            let out = dir.join(format!("{point}-{resume}"));
            let set = format!("output.dir={:?}", out.display().to_string());
            let base = [
                "run",
                cfg.as_str(),
                "-q",
                "--set",
                &set,
                "--set",
                "units.opencl=none",
            ];
            // An earlier complete run, whose files the stopped commit replaces.
            assert_eq!(tuccompi(&base, None).0, 0);
            let stopped = Command::new(BIN)
                .args(base)
                .env("TUCCOMPI_FAILPOINT", point)
                .output()
                .unwrap();
            assert!(!stopped.status.success(), "{point}: not stopped");
            let partial = out.join(outdir::PARTIAL);
            assert!(partial.join("COMMIT").exists(), "{point}");
            let moved =
                !partial.join("report.json").exists() || !partial.join("summary.csv").exists();
            assert_eq!(moved, point == "commit-renamed", "{point}");
            let args: Vec<&str> = if resume {
                [&base[..], &["--resume"]].concat()
            } else {
                base.to_vec()
            };
            let (code, _, err) = tuccompi(&args, None);
            assert_eq!(code, 0, "{point} resume={resume}: {err}");
            assert!(!partial.exists(), "{point}");
            assert_eq!(read_summary(&out.join("summary.csv")).len(), 12);
            let list: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join(outdir::FILES)).unwrap()).unwrap();
            let names: Vec<&str> = list["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["report.json", "summary.csv"]);
            if resume {
                // Then there is nothing left to resume.
                let (code, _, err) = tuccompi(&args, None);
                assert_eq!(code, 2, "{err}");
                assert!(err.contains("nothing to resume"), "{err}");
            }
        }
    }
}

/// N3 of issue 47, re-probed: a stopped commit is finished only when its journal vouches for
/// the rows as they are (a marker rewritten over a tampered `distances.npy` is refused, naming
/// it), only by a `--resume` of the same run (another config is refused), and `--restart`
/// gets out of a marker that proves nothing even after files were moved into place.
#[test]
fn a_stopped_commit_is_finished_only_when_proven_and_for_its_own_run() {
    let dir = tmpdir("rel-commit-proof");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, apsp_gen("road", 400, "", "12")).unwrap();
    let cfg = cfg.display().to_string();
    let args = |out: &Path, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["run", &cfg, "-q", "--set", "units.opencl=none"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push("--set".into());
        a.push(format!("output.dir={:?}", out.display().to_string()));
        a.extend(["--set".into(), "apsp.distances=true".into()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let stop = |out: &Path, point: &str| {
        let st = Command::new(BIN)
            .args(args(out, &[]))
            .env("TUCCOMPI_FAILPOINT", point)
            .output()
            .unwrap();
        assert!(!st.status.success());
        assert!(out.join(outdir::PARTIAL).join("COMMIT").exists());
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        tuccompi(&a, None)
    };
    // Rows zeroed after the marker, and the marker rewritten to name the file as it is now.
    let out = dir.join("tampered");
    stop(&out, "commit-marked");
    let partial = out.join(outdir::PARTIAL);
    let npy = partial.join("distances.npy");
    let mut bytes = std::fs::read(&npy).unwrap();
    let n = bytes.len();
    bytes[n - 400..].iter_mut().for_each(|b| *b = 0);
    std::fs::write(&npy, &bytes).unwrap();
    let mut marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(partial.join("COMMIT")).unwrap()).unwrap();
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(&npy).unwrap();
    for f in marker["files"].as_array_mut().unwrap() {
        if f["name"] == "distances.npy" {
            f["mtime"] = serde_json::json!([m.mtime(), m.mtime_nsec()]);
            f["xxh3"] = serde_json::json!(format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes)));
        }
    }
    std::fs::write(partial.join("COMMIT"), marker.to_string()).unwrap();
    let before = snapshot(&out);
    for extra in [&["--resume"][..], &[][..]] {
        let (code, _, err) = run(args(&out, extra));
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(
            err.contains("COMMIT") && err.contains("vouches for"),
            "{err}"
        );
        assert_eq!(snapshot(&out), before, "{extra:?}");
    }
    let (code, _, err) = run(args(&out, &["--restart"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(read_summary(&out.join("summary.csv")).len(), 12);
    // A `--resume` with another config does not finish this run's commit.
    let out = dir.join("other");
    stop(&out, "commit-marked");
    let (code, _, err) = run(args(&out, &["--resume", "--set", "run.sources=7"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot resume"), "{err}");
    assert!(out.join(outdir::PARTIAL).join("COMMIT").exists());
    let (code, _, err) = run(args(&out, &["--resume"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(read_summary(&out.join("summary.csv")).len(), 12);
    // A journal cut short after files were moved: refused; `--restart` gets out of it.
    let out = dir.join("cut");
    stop(&out, "commit-renamed");
    let journal = out.join(outdir::PARTIAL).join(outdir::JOURNAL);
    let len = std::fs::metadata(&journal).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .unwrap()
        .set_len(len - 50)
        .unwrap();
    let (code, _, err) = run(args(&out, &[]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--restart"), "{err}");
    let (code, _, err) = run(args(&out, &["--restart"]));
    assert_eq!(code, 0, "{err}");
    assert!(!out.join(outdir::PARTIAL).exists());
    assert_eq!(read_summary(&out.join("summary.csv")).len(), 12);
}

/// N3 of issue 47: a commit marker planted in an unfinished run (a list of names, or empty)
/// is not trusted: `--resume` and a plain run refuse it naming it, move nothing and keep the
/// journal; without the marker the run resumes; `--restart` discards it.
#[test]
fn a_planted_commit_marker_is_refused_and_moves_nothing() {
    static FAILS: Planted = Planted {
        tasks: 40,
        fail_at: Some(30),
        wrong_at: None,
    };
    static GOOD: Planted = Planted {
        tasks: 40,
        fail_at: None,
        wrong_at: None,
    };
    let opts = |p: &'static Planted, unfinished| RunOptions {
        quiet: true,
        plugins: vec![p],
        unfinished,
        ..Default::default()
    };
    let cpu = [
        "units.opencl=none",
        "units.cpu_workers=1",
        "scheduler.chunk=5",
        "scheduler.policy=equitable",
    ];
    for marker in ["planted.csv\nreport.json", ""] {
        let dir = tmpdir("rel-planted-commit");
        assert!(run_in(&dir, PLANTED, &cpu, &opts(&FAILS, Unfinished::Refuse)).is_err());
        let partial = dir.join(outdir::PARTIAL);
        std::fs::write(partial.join("planted.csv"), "0\n0\n").unwrap();
        std::fs::write(partial.join("COMMIT"), marker).unwrap();
        let before = snapshot(&dir);
        for mode in [Unfinished::Resume, Unfinished::Refuse] {
            let e = run_in(&dir, PLANTED, &cpu, &opts(&GOOD, mode))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("COMMIT") && e.contains("does not prove a finished run"),
                "{marker:?} {mode:?}: {e}"
            );
            assert_eq!(
                snapshot(&dir),
                before,
                "{marker:?} {mode:?} changed the directory"
            );
        }
        assert!(!dir.join("planted.csv").exists());
        std::fs::remove_file(partial.join("COMMIT")).unwrap();
        std::fs::remove_file(partial.join("planted.csv")).unwrap();
        let report = run_in(&dir, PLANTED, &cpu, &opts(&GOOD, Unfinished::Resume)).unwrap();
        assert!(report["resumed_tasks"].as_u64().is_some(), "{report}");
        let expect: String = (0..40).map(|t| format!("{}\n", t * t + 1)).collect();
        assert_eq!(
            std::fs::read_to_string(dir.join("planted.csv")).unwrap(),
            expect
        );
        // --restart discards an unfinished run with a planted marker.
        assert!(run_in(&dir, PLANTED, &cpu, &opts(&FAILS, Unfinished::Refuse)).is_err());
        std::fs::write(partial.join("COMMIT"), marker).unwrap();
        run_in(&dir, PLANTED, &cpu, &opts(&GOOD, Unfinished::Discard)).unwrap();
        assert!(!partial.exists());
        assert_eq!(
            std::fs::read_to_string(dir.join("planted.csv")).unwrap(),
            expect
        );
    }
}

/// A run whose outputs cannot fit on the disk is refused before the plugin's expensive
/// preprocessing: no hierarchy is built or cached.
#[test]
fn a_run_too_big_for_the_disk_is_refused_before_the_hierarchy_is_built() {
    let dir = tmpdir("rel-space-early");
    let free = outdir::available_space(&dir).unwrap();
    // Every source of an n-vertex graph with u32 distances writes 4 n^2 bytes: twice the free
    // space.
    let n = ((free as f64 / 2.0).sqrt().ceil() as u64).max(1000);
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[run]\nplugin = \"apsp\"\nsources = \"all\"\n[input.generate]\nmodel = \"road\"\n\
             vertices = {n}\n[units]\nopencl = \"none\"\ncpu_workers = 1\n[apsp]\n\
             cpu_algorithm = \"phast\"\n[output]\ndistances = true\n"
        ),
    )
    .unwrap();
    let cache = dir.join("xdg");
    let set = format!("output.dir={:?}", dir.join("out").display().to_string());
    let env = [("XDG_CACHE_HOME", cache.as_path()), ("HOME", dir.as_path())];
    let (code, _, err) = tuccompi_env(&["run", "-q", cfg.to_str().unwrap(), "--set", &set], &env);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the outputs need"), "{err}");
    assert!(
        snapshot(&cache).is_empty(),
        "no hierarchy was built or cached"
    );
    assert!(!dir.join("out").exists());
}

/// A dense run whose `finish` failed after its one task (here: a directory in the way of
/// `summary.csv`) is resumed to the same `summary.csv` and `distances.npy` as a run that never
/// failed: the task, whose matrix lived in memory, runs again.
#[test]
fn a_dense_run_whose_finish_failed_resumes_to_the_same_outputs() {
    let dir = tmpdir("rel-dense-resume");
    // About half a second of CPU Floyd-Warshall on two cores.
    let cfg = "[run]\nplugin = \"fw-blocked\"\n[input.generate]\nmodel = \"complete\"\nvertices = 1600\nseed = 5\n";
    let sets = [
        "units.opencl=none",
        "fw-blocked.distances=true",
        "run.sources=[1599, 0, 700]",
    ];
    let whole = dir.join("whole");
    run_in(&whole, cfg, &sets, &quiet()).unwrap();
    let out = dir.join("failed");
    let partial = out.join(outdir::PARTIAL);
    // While the task runs, its staging folder gets a directory where summary.csv goes.
    let block = || {
        let target = partial.join("summary.csv");
        std::thread::spawn(move || {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(30) {
                if std::fs::create_dir(&target).is_ok() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        true
    };
    let failing = RunOptions {
        quiet: true,
        before_writing: Some(&block),
        ..Default::default()
    };
    let e = run_in(&out, cfg, &sets, &failing).unwrap_err().to_string();
    assert!(e.contains("summary.csv"), "{e}");
    assert!(partial.join(outdir::JOURNAL).exists());
    std::fs::remove_dir(partial.join("summary.csv")).unwrap();
    let resume = RunOptions {
        quiet: true,
        unfinished: Unfinished::Resume,
        ..Default::default()
    };
    let report = run_in(&out, cfg, &sets, &resume).unwrap();
    assert_eq!(report["resumed_tasks"], 0, "{report}");
    assert_eq!(
        report["units"][0]["tasks"].as_u64().unwrap()
            + report["units"][1]["tasks"].as_u64().unwrap(),
        1
    );
    for f in ["summary.csv", "distances.npy"] {
        assert!(
            std::fs::read(out.join(f)).unwrap() == std::fs::read(whole.join(f)).unwrap(),
            "{f} differs after the resume"
        );
    }
    assert!(!partial.exists());
}
