//! Scheduling on real threads, with a synthetic plugin whose units have known speeds: chunks
//! follow speed, and a failing unit's chunks run on the other units.
//!
//! The plugin `paced` sleeps instead of computing: worker `i` (in the order workers are made)
//! takes `cpu_ms[i]` milliseconds per task (the last value for workers beyond the list); its
//! GPU half, on any OpenCL device, takes `gpu_latency_ms + k · gpu_task_ms` per chunk of `k`.
//! Each task's record is `(7 · task + 1, worker)`, so the checksum proves every task ran once
//! and the records say who ran it. Failure injection lives here, in the test plugin: worker
//! `fail_worker` fails (`"error"` or `"panic"`) on its chunk number `fail_chunk` (0 = when it
//! is made); no production code path knows about it. Worker 0 can be slow to make (`make_ms`)
//! and every worker slow to drop (`drop_ms`).

use crate::util::*;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tuccompi::device::{Device, KernelSource};
use tuccompi::plugin::{Gpu, Job, Out, Plugin, PrepareCtx, Records, RecordsOut, Worker};
use tuccompi::tuning::{Choice, LaunchParams, Tuner};
use tuccompi::{node::Single, Error, Plan, Result, RunOptions};

#[derive(Debug)]
struct Paced;

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    tasks: usize,
    cpu_ms: Vec<f64>,
    #[serde(default)]
    gpu_latency_ms: f64,
    #[serde(default)]
    gpu_task_ms: f64,
    #[serde(default = "batch")]
    gpu_batch: usize,
    fail_worker: Option<usize>,
    #[serde(default)]
    fail_chunk: usize,
    #[serde(default)]
    fail_how: String,
    /// The GPU half's workers fail on their chunk number `fail_chunk` (a lost device).
    #[serde(default)]
    fail_gpu: bool,
    /// Worker 0 sleeps this long while it is made (a slow per-worker state).
    #[serde(default)]
    make_ms: f64,
    /// Every worker sleeps this long when it is dropped (a slow release).
    #[serde(default)]
    drop_ms: f64,
}

fn batch() -> usize {
    64
}

#[derive(Debug)]
struct PacedJob {
    o: Options,
    made: AtomicUsize,
}

impl Plugin for Paced {
    fn name(&self) -> &'static str {
        "paced"
    }
    fn description(&self) -> &'static str {
        "sleeps per task at known speeds (scheduling tests)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let o: Options = toml::Value::Table(ctx.plan.plugin_options.clone())
            .try_into()
            .map_err(|e: toml::de::Error| Error::Config(e.to_string()))?;
        Ok(Box::new(PacedJob {
            o,
            made: AtomicUsize::new(0),
        }))
    }
}

impl Job for PacedJob {
    fn tasks(&self) -> usize {
        self.o.tasks
    }
    fn record_words(&self) -> usize {
        2
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "tasks": self.o.tasks })
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        let id = self.made.fetch_add(1, Ordering::Relaxed);
        let ms = self.o.cpu_ms[id.min(self.o.cpu_ms.len() - 1)];
        Ok(Box::new(PacedJob::worker(self, id, 0.0, ms / 1e3)?))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[crate::util::STUB_KERNELS]
    }
    fn gpu_params(&self, _device: &Device, _tuner: &Tuner) -> Result<LaunchParams> {
        let fixed = |v: usize| Choice::fixed(v, "the paced test plugin");
        Ok(LaunchParams {
            local: Default::default(),
            batch: fixed(self.o.gpu_batch),
            groups_per_task: None,
            queues: fixed(1),
            persistent_items: None,
            cache_key: None,
            knobs: Default::default(),
            rules: Vec::new(),
        })
    }
    fn gpu_worker<'a>(&'a self, _gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let id = self.made.fetch_add(1, Ordering::Relaxed);
        let mut w = PacedJob::worker(
            self,
            id,
            self.o.gpu_latency_ms / 1e3,
            self.o.gpu_task_ms / 1e3,
        )?;
        w.gpu = true;
        Ok(Box::new(w))
    }
    fn finish(&self, records: &Records, _out: &Out) -> Result<serde_json::Value> {
        let mut sum = 0u64;
        let mut by = vec![0usize; self.made.load(Ordering::Relaxed)];
        for t in 0..self.o.tasks {
            let r = records.get(t);
            sum += r[0];
            by[r[1] as usize] += 1;
        }
        Ok(serde_json::json!({ "sum": sum, "tasks_by_worker": by }))
    }
}

impl PacedJob {
    fn worker(&self, id: usize, per_chunk: f64, per_task: f64) -> Result<PacedWorker<'_>> {
        if id == 0 {
            std::thread::sleep(Duration::from_secs_f64(self.o.make_ms / 1e3));
        }
        let w = PacedWorker {
            job: self,
            id,
            per_chunk,
            per_task,
            chunks: 0,
            gpu: false,
        };
        w.maybe_fail(0)?;
        Ok(w)
    }
}

struct PacedWorker<'a> {
    job: &'a PacedJob,
    id: usize,
    per_chunk: f64,
    per_task: f64,
    chunks: usize,
    gpu: bool,
}

impl PacedWorker<'_> {
    /// The test hook: fail as configured.
    fn maybe_fail(&self, chunk: usize) -> Result<()> {
        let o = &self.job.o;
        let chosen = o.fail_worker == Some(self.id) || (o.fail_gpu && self.gpu);
        if chosen && o.fail_chunk == chunk {
            if o.fail_how == "panic" {
                panic!("injected panic in worker {}", self.id);
            }
            return Err(Error::Device(format!(
                "injected failure in worker {}",
                self.id
            )));
        }
        Ok(())
    }
}

impl Drop for PacedWorker<'_> {
    fn drop(&mut self) {
        std::thread::sleep(Duration::from_secs_f64(self.job.o.drop_ms / 1e3));
    }
}

impl Worker for PacedWorker<'_> {
    fn run(&mut self, tasks: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        self.chunks += 1;
        self.maybe_fail(self.chunks)?;
        let secs = self.per_chunk + tasks.len() as f64 * self.per_task;
        std::thread::sleep(Duration::from_secs_f64(secs));
        for t in tasks {
            out.record(t)
                .copy_from_slice(&[7 * t as u64 + 1, self.id as u64]);
        }
        Ok(())
    }
}

fn paced(options: &str, sets: &[&str]) -> Result<serde_json::Value> {
    let dir = tmpdir("paced");
    // The records tag the worker that ran each task, so a CPU re-run never matches a device's:
    // no [verify] (it is on by default).
    let mut all = vec!["verify.sample=0".to_string()];
    all.extend(sets.iter().map(|s| s.to_string()));
    all.push(format!("output.dir={:?}", dir.display().to_string()));
    let text = format!("[run]\nplugin = \"paced\"\n[paced]\n{options}\n");
    let plan = Plan::from_toml(&text, Path::new("paced.toml"), &all)?;
    let opts = RunOptions {
        quiet: true,
        plugins: vec![&Paced],
        ..Default::default()
    };
    Ok(tuccompi_plugins::run(&plan, &opts, &Single)?.report)
}

fn expected_sum(tasks: usize) -> u64 {
    (0..tasks as u64).map(|t| 7 * t + 1).sum()
}

fn by_worker(report: &serde_json::Value) -> Vec<u64> {
    report["checksum"]["tasks_by_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn chunks_follow_speed_on_cpu_workers() {
    // One worker 8x faster than the two others: the work queue gives it about 8/10 of the
    // tasks (ideal 192 of 240); equal shares would give it 80. Asserted with a wide margin.
    let opts = "tasks = 240\ncpu_ms = [1.0, 8.0, 8.0]";
    let sets = ["units.opencl=none", "units.cpu_workers=3"];
    let r = paced(opts, &sets).unwrap();
    assert_eq!(r["checksum"]["sum"], expected_sum(240));
    let by = by_worker(&r);
    eprintln!("tasks by worker (1, 8, 8 ms per task): {by:?}");
    assert!(
        by[0] >= 3 * by[1].max(by[2]) && by[0] >= 150,
        "the fast worker should run most tasks: {by:?}"
    );
    // The control: a policy that ignores speed gives every worker the same share.
    let r = paced(opts, &[&sets[..], &["scheduler.policy=equitable"]].concat()).unwrap();
    assert_eq!(by_worker(&r), vec![80, 80, 80]);
}

#[test]
fn the_run_counts_neither_the_workers_set_up_nor_their_release() {
    // Worker 0 takes 1.5 s to be made and every worker 1.5 s to be dropped; the tasks take
    // about 90 ms on 3 workers. The run starts when every worker is made (the slow one then
    // runs tasks like the others, instead of arriving after they have run them all) and ends
    // before the workers are dropped: `run_seconds` is the tasks' time, and the set-up is in
    // `phase_seconds.setup`. Margins are wide for a loaded machine.
    let opts = "tasks = 90\ncpu_ms = [3.0]\nmake_ms = 1500.0\ndrop_ms = 1500.0";
    let r = paced(opts, &["units.opencl=none", "units.cpu_workers=3"]).unwrap();
    assert_eq!(r["checksum"]["sum"], expected_sum(90));
    let run = r["run_seconds"].as_f64().unwrap();
    let setup = r["phase_seconds"]["setup"].as_f64().unwrap();
    let wall = r["wall_seconds"].as_f64().unwrap();
    eprintln!("run {run:.3} s, set-up {setup:.3} s, wall {wall:.3} s");
    assert!(run < 1.0, "run_seconds {run} counts set-up or release");
    assert!(
        setup >= 1.5,
        "the workers' set-up should be set-up: {setup}"
    );
    assert!(wall >= 3.0, "{wall}");
    let by = by_worker(&r);
    assert!(
        by.iter().all(|&n| n > 0),
        "the slow-to-make worker 0 should run tasks too: {by:?}"
    );
}

#[test]
fn a_device_with_batch_latency_takes_batches_and_leaves_the_tail_to_cpus() {
    if !opencl() {
        return;
    }
    // The "GPU" (any OpenCL device; the work is a sleep): 20 ms per chunk + 0.2 ms per task,
    // batches of 64 (about 1,950 tasks/s); two CPU workers at 100 tasks/s each.
    let opts =
        "tasks = 600\ncpu_ms = [10.0]\ngpu_latency_ms = 20.0\ngpu_task_ms = 0.2\ngpu_batch = 64";
    let sets = [
        "units.cpu_workers=2",
        "units.device_type=all",
        "units.concurrent_kernels=1",
    ];
    let r = paced(opts, &sets).unwrap();
    assert_eq!(r["checksum"]["sum"], expected_sum(600));
    let units = r["units"].as_array().unwrap();
    let gpu = units.iter().find(|u| u["kind"] == "gpu").unwrap();
    let (tasks, chunks) = (
        gpu["tasks"].as_u64().unwrap(),
        gpu["chunks"].as_u64().unwrap(),
    );
    eprintln!(
        "device: {tasks} tasks in {chunks} chunks; run {} s",
        r["run_seconds"]
    );
    // Ideal: the device runs about 90% of the tasks, in near-full batches.
    assert!(tasks >= 420, "the device should run most tasks: {units:#?}");
    assert!(
        tasks as f64 / chunks as f64 >= 32.0,
        "the device's chunks should be near-full batches: {units:#?}"
    );
}

#[test]
fn a_failing_unit_is_taken_out_and_its_chunks_run_elsewhere() {
    for (how, chunk, policy) in [
        ("error", 2, "work-queue"),
        ("panic", 1, "work-queue"),
        ("error", 0, "work-queue"),
        ("panic", 2, "equitable"),
    ] {
        let opts = format!(
            "tasks = 120\ncpu_ms = [1.0]\nfail_worker = 1\nfail_chunk = {chunk}\nfail_how = \"{how}\""
        );
        let sets = [
            "units.opencl=none".to_string(),
            "units.cpu_workers=3".into(),
            format!("scheduler.policy={policy}"),
            "scheduler.chunk=5".into(),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let r = paced(&opts, &sets).unwrap_or_else(|e| panic!("{how} {chunk} {policy}: {e}"));
        assert_eq!(
            r["checksum"]["sum"],
            expected_sum(120),
            "{how} {chunk} {policy}"
        );
        let failures = r["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{r:#}");
        assert!(
            failures[0]["error"].as_str().unwrap().contains("injected"),
            "{failures:?}"
        );
        let by = by_worker(&r);
        assert_eq!(by.iter().sum::<u64>(), 120);
        let unit = failures[0]["unit"].as_str().unwrap();
        let stats = r["units"].as_array().unwrap();
        let failed = stats.iter().find(|u| u["name"] == unit).unwrap();
        assert!(failed["failed"].is_string());
    }
}

#[test]
fn a_lost_device_is_taken_out_and_the_cpu_workers_run_its_chunk() {
    if !opencl() {
        return;
    }
    let opts = "tasks = 200\ncpu_ms = [1.0]\ngpu_latency_ms = 5.0\ngpu_task_ms = 0.1\n\
                fail_gpu = true\nfail_chunk = 2\nfail_how = \"error\"";
    let sets = [
        "units.cpu_workers=2",
        "units.device_type=all",
        "units.concurrent_kernels=1",
    ];
    let r = paced(opts, &sets).unwrap();
    assert_eq!(r["checksum"]["sum"], expected_sum(200));
    let failures = r["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{r:#}");
    assert_eq!(failures[0]["unit"], "gpu0.q0");
    let units = r["units"].as_array().unwrap();
    let cpu: u64 = units
        .iter()
        .filter(|u| u["kind"] == "cpu")
        .map(|u| u["tasks"].as_u64().unwrap())
        .sum();
    let gpu = units.iter().find(|u| u["kind"] == "gpu").unwrap();
    // The device finished one chunk, failed the second; everything else ran on the CPUs.
    assert_eq!(gpu["chunks"], 1, "{units:#?}");
    assert_eq!(cpu + gpu["tasks"].as_u64().unwrap(), 200);
}

#[test]
fn on_failure_abort_stops_the_run() {
    let opts = "tasks = 60\ncpu_ms = [1.0]\nfail_worker = 0\nfail_chunk = 1\nfail_how = \"error\"";
    let e = paced(
        opts,
        &[
            "units.opencl=none",
            "units.cpu_workers=2",
            "units.on_failure=abort",
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("injected failure"), "{e}");
}

#[test]
fn the_run_fails_when_no_unit_is_left() {
    // A single worker that fails: nobody can run its chunk.
    let opts = "tasks = 30\ncpu_ms = [1.0]\nfail_worker = 0\nfail_chunk = 1\nfail_how = \"panic\"";
    let e = paced(opts, &["units.opencl=none", "units.cpu_workers=1"]).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("were not run") && text.contains("injected panic"),
        "{text}"
    );
}
