//! The runtime: from a validated plan to output files, in four named phases.
//!
//! 1. [`prepare`]: resolve the plugin among those the caller hands over (`main` passes the
//!    built-in registry; the runtime knows no plugin by name), read the input and resolve the
//!    sources (the plugin's `prepare`). Nothing is written.
//! 2. [`select_units`]: the OpenCL devices and CPU workers the plan selects. Nothing is
//!    written. `tuccompi check` runs these two and [`output_status`], and stops there.
//! 3. execute: check the output directory and its free space (still touching nothing), set
//!    up each device (upload, kernels, tuner), then lock the output directory, open the run's
//!    staging folder and journal (or reopen them to resume), and run the units under the
//!    scheduling policy through the thread layer, journaling each finished chunk; with
//!    `[verify] sample`, re-run some of the accelerators' tasks on the CPU half.
//! 4. write outputs: the plugin's files, `report.json` and the trace go to the staging
//!    folder, then move into the output directory together ([`crate::sink::outdir`]).
//!
//! Validate, then touch: every failure before phase 3's lock leaves the disk as it was, and a
//! failure after it leaves the complete result of an earlier run as it was (the unfinished
//! run stays in its staging folder with its journal, to resume).

mod verify;

use crate::config::{DeviceSel, InputSpec, Plan, Policy};
use crate::device::{self, Device, Filter};
use crate::node::{host_name, Node};
use crate::plugin::{Job, Plugin, PrepareCtx, Records};
use crate::scheduler::TaskSource;
use crate::sink::journal::{self, Journal};
use crate::sink::outdir::{self, OutputDir};
use crate::sink::write_file;
use crate::thread::{run_units, DoneSet, Slice, Unit, UnitSpec, UnitStats};
use crate::tuning::{CacheUse, LaunchParams, Tuner};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to do with an unfinished run found in the output directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unfinished {
    /// Refuse to start, saying how to resume or discard it: nothing is lost by accident.
    #[default]
    Refuse,
    /// Continue it (`--resume`): same result-defining config and input content; its journaled
    /// tasks are skipped and its distance rows kept.
    Resume,
    /// Discard it and start over (`--restart`).
    Discard,
}

/// How to run, beyond the plan.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// No progress bar.
    pub quiet: bool,
    /// Plugins beyond the registry passed to [`run`] (a user's own, from an example or another
    /// crate).
    pub extra_plugins: Vec<&'a dyn Plugin>,
    /// What to do with an unfinished run in the output directory.
    pub unfinished: Unfinished,
    /// Set (by a signal handler) to stop: no more chunks are handed out, running ones finish,
    /// the journal is written out, and the run ends with [`Error::Interrupted`].
    pub interrupt: Option<&'a AtomicBool>,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RunOptions(quiet={}, extra={}, unfinished={:?}, interrupt={})",
            self.quiet,
            self.extra_plugins.len(),
            self.unfinished,
            self.interrupt.is_some()
        )
    }
}

/// The outcome of a run (also written as `report.json`).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The report as JSON.
    pub report: serde_json::Value,
    /// This node's devices with their launch parameters.
    pub devices: Vec<DeviceReport>,
    /// Seconds of the scheduling phase alone (no input loading, kernel builds or output).
    pub run_seconds: f64,
}

/// One device of a run, as `report.json` lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceReport {
    /// Device name.
    pub name: String,
    /// Platform name.
    pub platform: String,
    /// "gpu", "cpu", ...
    pub kind: String,
    /// In-order queues (units) on it.
    pub queues: usize,
    /// Tasks per chunk its queues asked for.
    pub chunk: usize,
    /// The GPU half's launch parameters, each with origin and reason.
    pub tuning: LaunchParams,
}

/// Find plugin `plan.plugin` among `plugins` and `extra`; every plugin table in the config must
/// name one of them.
pub fn resolve_plugin<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    extra: &[&'a dyn Plugin],
) -> Result<&'a dyn Plugin> {
    let all: Vec<&'a dyn Plugin> = plugins.iter().chain(extra).copied().collect();
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    for t in plan.other_tables.keys() {
        if !names.contains(&t.as_str()) {
            return Err(Error::Config(format!(
                "{}: unknown table [{t}]; known tables are [run] [input] [units] [scheduler] [output] [verify] \
                 [nodes] and plugin tables ({})",
                plan.config_path.display(),
                names.join(", ")
            )));
        }
    }
    all.into_iter()
        .find(|p| p.name() == plan.plugin)
        .ok_or_else(|| {
            Error::Config(format!(
                "{}: run.plugin = \"{}\" is not a known plugin; `tuccompi plugins` lists them ({})",
                plan.config_path.display(),
                plan.plugin,
                names.join(", ")
            ))
        })
}

/// The OpenCL devices a plan selects, or `None` when it asks for none. `Err` only when the
/// config names devices explicitly (or asks for no CPU workers) and none can be opened.
pub fn select_devices(plan: &Plan) -> Result<Vec<Arc<device::Device>>> {
    let names = match &plan.units.opencl {
        DeviceSel::None => return Ok(Vec::new()),
        DeviceSel::All => Vec::new(),
        DeviceSel::Names(n) => n.clone(),
    };
    let filter = Filter {
        device_type: plan.units.device_type.clone(),
        names,
    };
    match device::discover(&filter) {
        Ok(d) => Ok(d),
        Err(e) if plan.units.opencl == DeviceSel::All && plan.units.cpu_workers > 0 => {
            tracing::info!("running on CPU workers only: {e}");
            Ok(Vec::new())
        }
        Err(e) => Err(e),
    }
}

fn cpu_chunk(plan: &Plan, tasks: usize, units: usize) -> usize {
    plan.scheduler
        .chunk
        .unwrap_or_else(|| (tasks / (units.max(1) * 16)).clamp(1, 64))
}

/// Phase 1's result: the plugin and its prepared job.
pub struct Prepared<'a> {
    /// The plugin.
    pub plugin: &'a dyn Plugin,
    /// Its job: input read, sources resolved, nothing written.
    pub job: Box<dyn Job>,
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Prepared({}, {} tasks)",
            self.plugin.name(),
            self.job.tasks()
        )
    }
}

/// Phase 1: resolve the plugin among `plugins` and `extra` and prepare its job (config,
/// plugin, input, sources) for a run on `nodes` nodes. Writes nothing.
pub fn prepare<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    extra: &[&'a dyn Plugin],
    nodes: usize,
) -> Result<Prepared<'a>> {
    let plugin = resolve_plugin(plan, plugins, extra)?;
    let job = plugin.prepare(&PrepareCtx { plan })?;
    if nodes > 1 && !job.multi_node() {
        return Err(Error::Config(format!(
            "plugin {} computes one matrix in one process; run it without mpirun (it uses every core or a GPU of one node)",
            plugin.name()
        )));
    }
    if plan.verify.sample > 0 && job.cpu().is_none() {
        return Err(Error::Config(format!(
            "{}: [verify] sample re-runs tasks on the CPU half, and plugin {} has none; remove [verify]",
            plan.config_path.display(),
            plugin.name()
        )));
    }
    Ok(Prepared { plugin, job })
}

/// Phase 2's result: the devices to set up and the CPU workers to start.
#[derive(Debug)]
pub struct Selection {
    /// The OpenCL devices the GPU half will run on (none without a GPU half).
    pub devices: Vec<Arc<Device>>,
    /// CPU workers asked for (0 without a CPU half). With `"auto"`, the runtime leaves one
    /// core to the host thread of each GPU queue once the queues are known.
    pub cpu_workers: usize,
}

/// Phase 2: the units a plan selects for a prepared job on a run of `nodes` nodes. Opens no
/// device context beyond discovery and writes nothing.
pub fn select_units(plan: &Plan, prepared: &Prepared<'_>, nodes: usize) -> Result<Selection> {
    let job = prepared.job.as_ref();
    let name = prepared.plugin.name();
    let devices = if job.gpu().is_some() {
        select_devices(plan)?
    } else if plan.units.opencl != DeviceSel::None && plan.units.cpu_workers == 0 {
        return Err(Error::Config(format!(
            "plugin {name} has no GPU half; set units.cpu_workers >= 1"
        )));
    } else {
        Vec::new()
    };
    let cpu_workers = if job.cpu().is_some() {
        plan.units.cpu_workers
    } else {
        if plan.units.cpu_workers > 0 {
            tracing::info!("plugin {name} has no CPU half; CPU workers stay idle");
        }
        0
    };
    if devices.is_empty() && cpu_workers == 0 && nodes == 1 {
        return Err(Error::Config(
            "no computational units: units.cpu_workers = 0 and no OpenCL device was selected; \
             set units.cpu_workers >= 1 or select a device with units.opencl"
                .into(),
        ));
    }
    Ok(Selection {
        devices,
        cpu_workers,
    })
}

/// What a run would do to its output directory: checked by `run` before it touches anything,
/// shown by `check`.
#[derive(Debug, Clone)]
pub struct OutputStatus {
    /// Bytes the outputs still need on disk (exact for bulk files; what an unfinished run
    /// already wrote is subtracted).
    pub need: u64,
    /// Bytes free to this user on the output directory's filesystem.
    pub free: u64,
    /// An unfinished run in the directory: tasks journaled, tasks in all.
    pub unfinished: Option<(usize, usize)>,
}

/// Validate `output.dir` and measure what the outputs need against the free space, touching
/// nothing.
pub fn output_status(plan: &Plan, job: &dyn Job) -> Result<OutputStatus> {
    let dir = &plan.output.dir;
    outdir::validate(dir)?;
    let partial = dir.join(outdir::PARTIAL);
    let unfinished = partial.is_dir().then(|| journaled(&partial));
    Ok(OutputStatus {
        need: output_bytes(plan, job).saturating_sub(outdir::allocated_bytes(&partial)),
        free: outdir::available_space(dir)?,
        unfinished,
    })
}

/// Bytes a run's outputs take on disk: the bulk files (exact), the journal, summary and trace
/// (per task), and 1 MiB for the report and the rest.
pub fn output_bytes(plan: &Plan, job: &dyn Job) -> u64 {
    let bulk: u64 = job.bulk_outputs().iter().map(|r| r.bytes()).sum();
    let per_task = 8 * job.record_words() as u64 + 64 + if plan.output.trace { 160 } else { 0 };
    bulk + job.tasks() as u64 * per_task + (1 << 20)
}

/// (tasks journaled, tasks) of the unfinished run in `partial`; (0, 0) when unreadable.
fn journaled(partial: &Path) -> (usize, usize) {
    let id: Option<serde_json::Value> = std::fs::read_to_string(partial.join(outdir::IDENTITY))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let Some(id) = id else { return (0, 0) };
    let tasks = id["tasks"].as_u64().unwrap_or(0) as usize;
    let words = id["record_words"].as_u64().unwrap_or(0) as usize;
    let mut done = DoneSet::new(tasks);
    let _ = journal::replay(&partial.join(outdir::JOURNAL), tasks, words, |r, _| {
        done.insert(r)
    });
    (done.count(), tasks)
}

/// Failure injection for the node layer's tests: this rank fails as a plugin would.
fn injected_rank_failure(node: &dyn Node) -> Result<()> {
    if std::env::var("TUCCOMPI_TEST_FAIL_RANK")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        == Some(node.rank())
    {
        return Err(node.fail(Error::Unit {
            unit: "cpu0".into(),
            msg: "injected failure (TUCCOMPI_TEST_FAIL_RANK)".into(),
        }));
    }
    Ok(())
}

/// Set up each selected device (tuner, upload, kernels) and make the units: the queues of
/// every device, then the CPU workers. Returns the units and the devices' reports.
fn build_units<'j>(
    plan: &Plan,
    prepared: &'j Prepared<'_>,
    selection: &Selection,
    cache: CacheUse,
) -> Result<(Vec<Unit<'j>>, Vec<DeviceReport>)> {
    let job = prepared.job.as_ref();
    let mut units = Vec::new();
    let mut device_reports = Vec::new();
    if let Some(gpu) = job.gpu() {
        let tuner = Tuner::new(plan.units.concurrent_kernels, cache);
        for dev in &selection.devices {
            let params = gpu.params(dev, &tuner)?;
            let half = gpu.setup(dev.clone(), &params)?;
            let chunk = plan.scheduler.gpu_chunk.unwrap_or(params.batch.value);
            let queues = params.queues.value;
            for q in 0..queues {
                units.push(Unit {
                    name: format!("gpu{}.q{q}", dev.index),
                    spec: UnitSpec::Gpu {
                        device: dev.clone(),
                        half: half.clone(),
                        queue: q,
                    },
                    chunk,
                });
            }
            device_reports.push(DeviceReport {
                name: dev.info.name.clone(),
                platform: dev.info.platform.clone(),
                kind: dev.info.kind.clone(),
                queues,
                chunk,
                tuning: params,
            });
        }
    }
    // CPU workers: "auto" leaves one core to the host thread of each GPU queue (it launches
    // kernels and waits on the device; starved, it slows the whole device down).
    let gpu_queues = units.len();
    let cpu_workers = if job.prefers_gpu() && gpu_queues > 0 {
        tracing::info!(
            "plugin {} runs on the GPU; CPU workers stay idle",
            prepared.plugin.name()
        );
        0
    } else if plan.units.cpu_workers_auto {
        selection
            .cpu_workers
            .saturating_sub(gpu_queues)
            .max(if gpu_queues == 0 { 1 } else { 0 })
    } else {
        selection.cpu_workers
    };
    if job.cpu().is_some() {
        for i in 0..cpu_workers {
            units.push(Unit {
                name: format!("cpu{i}"),
                spec: UnitSpec::Cpu,
                chunk: 0,
            });
        }
    }
    let chunk = cpu_chunk(plan, job.tasks(), units.len());
    for u in units.iter_mut().filter(|u| matches!(u.spec, UnitSpec::Cpu)) {
        u.chunk = chunk;
    }
    Ok((units, device_reports))
}

/// Rank 0's side of a run's output: the locked directory, the journal, and what an
/// interrupted run already did (records replayed from its journal, the tasks they cover).
struct Stage {
    out: OutputDir,
    journal: Arc<Journal>,
    records: Records,
    done: DoneSet,
    /// Whether the bulk files must be created (a fresh run) rather than reopened.
    create_bulk: bool,
}

impl Stage {
    /// Lock the output directory and start the run's staging folder and journal, or reopen
    /// them to resume.
    fn open(plan: &Plan, job: &dyn Job, mode: Unfinished) -> Result<Stage> {
        let dir = &plan.output.dir;
        let out = OutputDir::lock(
            dir,
            &format!("pid {} on {}", std::process::id(), host_name()),
        )?;
        if let Some(h) = out.stale_holder() {
            tracing::warn!(
                "{}: the run that held it before ({h}) ended without releasing it; its lock is stale and taken over",
                dir.display()
            );
        }
        let partial = out.partial();
        let identity = identity(plan, job)?;
        let resume = match (mode, out.has_unfinished()) {
            (Unfinished::Resume, false) => {
                return Err(Error::Output(format!(
                    "nothing to resume: {} holds no unfinished run; run without --resume",
                    dir.display()
                )))
            }
            (Unfinished::Refuse, true) => {
                let (done, total) = journaled(&partial);
                return Err(Error::Output(format!(
                    "{} holds an unfinished run ({done} of {total} tasks done, in {}): continue \
                     it with --resume, or discard it and start over with --restart",
                    dir.display(),
                    partial.display()
                )));
            }
            (Unfinished::Resume, true) => {
                same_run(&out.identity()?, &identity)?;
                true
            }
            _ => false,
        };
        let (tasks, words) = (job.tasks(), job.record_words());
        let mut records = Records {
            words,
            data: crate::filled(tasks * words, 0, "the per-task records")?,
        };
        let mut done = DoneSet::new(tasks);
        let bulk: Vec<PathBuf> = job
            .bulk_outputs()
            .iter()
            .map(|r| partial.join(r.name()))
            .collect();
        let sync = Duration::from_secs_f64(plan.output.sync_seconds);
        let path = partial.join(outdir::JOURNAL);
        // A job that keeps its result in memory (one task over the whole matrix) cannot skip
        // done tasks: it redoes everything.
        let resume_at = if resume && path.exists() && job.multi_node() {
            let r = journal::replay(&path, tasks, words, |t, rec| {
                records.data[t.start * words..t.end * words].copy_from_slice(rec);
                done.insert(t);
            })?;
            if r.torn {
                tracing::info!(
                    "{}: dropped a torn last entry (a write cut short); its tasks run again",
                    path.display()
                );
            }
            Some(r.valid_len)
        } else if resume && path.exists() {
            Some(0)
        } else {
            if !resume {
                out.begin(&identity)?;
            }
            None
        };
        let missing = bulk.iter().find(|p| !p.exists());
        if let (Some(m), true) = (missing, done.count() > 0) {
            return Err(Error::Output(format!(
                "{}: the journal lists {} done tasks but {} is missing; start over with --restart",
                path.display(),
                done.count(),
                m.display()
            )));
        }
        let create_bulk = !resume || missing.is_some();
        let journal = Journal::open(&path, words, sync, bulk, resume_at)?;
        if resume {
            tracing::info!(
                "resuming: {} of {tasks} tasks are done in {}",
                done.count(),
                partial.display()
            );
        }
        Ok(Stage {
            out,
            journal: Arc::new(journal),
            records,
            done,
            create_bulk,
        })
    }
}

/// What a run computes: the result-defining config, the input's content hash, the task
/// space. A journal is only resumed by a run with the same identity.
fn identity(plan: &Plan, job: &dyn Job) -> Result<serde_json::Value> {
    let input_hash = match &plan.input {
        Some(InputSpec::Path(p)) => Some(content_hash(p)?),
        _ => None,
    };
    Ok(serde_json::json!({
        "tuccompi": env!("CARGO_PKG_VERSION"),
        "plugin": plan.plugin,
        "config": serde_json::to_value(plan.result_config()).unwrap_or_default(),
        "input_hash": input_hash,
        "tasks": job.tasks(),
        "record_words": job.record_words(),
    }))
}

/// xxh3-128 of a file's bytes, in hex.
fn content_hash(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:032x}", h.digest128()))
}

/// Refuse to resume a journal written for another run, naming what differs.
fn same_run(old: &serde_json::Value, new: &serde_json::Value) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::Output(format!(
            "cannot resume: {what}; resume with the interrupted run's config and input, or \
             start over with --restart"
        )))
    };
    if old["tuccompi"] != new["tuccompi"] {
        return refuse(format!(
            "the unfinished run was made by tuccompi {}, this is {}",
            old["tuccompi"], new["tuccompi"]
        ));
    }
    let mut a = Vec::new();
    let mut b = Vec::new();
    flatten("", &old["config"], &mut a);
    flatten("", &new["config"], &mut b);
    let keys: std::collections::BTreeSet<&String> = a.iter().chain(&b).map(|(k, _)| k).collect();
    let get = |v: &[(String, String)], k: &str| {
        v.iter()
            .find(|(x, _)| x == k)
            .map_or("(not set)".to_string(), |(_, v)| v.clone())
    };
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| get(&a, k) != get(&b, k))
        .map(|k| format!("{k} was {}, is {}", get(&a, k), get(&b, k)))
        .collect();
    if !diffs.is_empty() || old["plugin"] != new["plugin"] {
        return refuse(format!(
            "the config differs from the unfinished run's ({})",
            if diffs.is_empty() {
                format!("run.plugin was {}, is {}", old["plugin"], new["plugin"])
            } else {
                diffs.join("; ")
            }
        ));
    }
    if old["input_hash"] != new["input_hash"] {
        return refuse("the input file's content changed since the unfinished run".into());
    }
    if old["tasks"] != new["tasks"] || old["record_words"] != new["record_words"] {
        return refuse(format!(
            "the unfinished run had {} tasks, this one has {}",
            old["tasks"], new["tasks"]
        ));
    }
    Ok(())
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// Until `over`: once `flag` is set, stop handing out chunks (running ones finish) and write
/// the journal out, eagerly from then on.
fn watch(
    flag: &AtomicBool,
    over: &AtomicBool,
    source: &dyn TaskSource,
    journal: Option<&Journal>,
    interrupted: &AtomicBool,
) {
    while !over.load(Ordering::Relaxed) {
        if flag.load(Ordering::Relaxed) {
            interrupted.store(true, Ordering::Relaxed);
            source.stop();
            if let Some(j) = journal {
                if let Err(e) = j.flush_and_turn_eager() {
                    tracing::error!("{e}");
                }
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run a plan on this node (and, under MPI, with the other nodes), with `plugins` (the
/// registry) and `opts.extra_plugins` to choose from: the four phases. GPU halves' tuners read
/// the tuning cache.
pub fn run(
    plan: &Plan,
    plugins: &[&dyn Plugin],
    opts: &RunOptions<'_>,
    node: &dyn Node,
) -> Result<Outcome> {
    run_with_cache(plan, plugins, opts, CacheUse::Read, node)
}

/// [`run`], with the tuners reading the tuning cache or not (`tuccompi tune` ignores it, so the
/// prediction it compares against is the rules' own).
pub fn run_with_cache(
    plan: &Plan,
    plugins: &[&dyn Plugin],
    opts: &RunOptions<'_>,
    cache: CacheUse,
    node: &dyn Node,
) -> Result<Outcome> {
    let t0 = Instant::now();
    let is_root = node.rank() == 0;
    // 1-2: prepare and select units. Nothing is written.
    let prepared =
        prepare(plan, plugins, &opts.extra_plugins, node.size()).map_err(|e| node.fail(e))?;
    injected_rank_failure(node)?;
    let selection = select_units(plan, &prepared, node.size()).map_err(|e| node.fail(e))?;
    let job = prepared.job.as_ref();
    let (tasks, words) = (job.tasks(), job.record_words());

    // 3: execute. The output directory and the space first, still touching nothing; then the
    // devices; then the lock and the staging folder.
    if is_root {
        let st = output_status(plan, job).map_err(|e| node.fail(e))?;
        outdir::check_space(&plan.output.dir, st.need, st.free).map_err(|e| node.fail(e))?;
    }
    let (units, device_reports) =
        build_units(plan, &prepared, &selection, cache).map_err(|e| node.fail(e))?;
    let stage = if is_root {
        Some(Stage::open(plan, job, opts.unfinished).map_err(|e| node.fail(e))?)
    } else {
        None
    };
    // Bulk files: rank 0 creates (or reopens) them, then the other ranks open them.
    let partial = plan.output.dir.join(outdir::PARTIAL);
    let open_bulk = |create: bool| -> Result<()> {
        job.bulk_outputs()
            .iter()
            .try_for_each(|r| r.open(&partial, create))
    };
    if let Some(st) = &stage {
        open_bulk(st.create_bulk).map_err(|e| node.fail(e))?;
    }
    node.barrier()?;
    if !is_root {
        open_bulk(false).map_err(|e| node.fail(e))?;
    }
    let done = node.broadcast(stage.as_ref().map_or(Vec::new(), |s| s.done.to_bytes()))?;
    let done = DoneSet::from_bytes(&done)
        .filter(|d| d.len() == tasks)
        .ok_or_else(|| node.fail(Error::Node("the set of done tasks arrived garbled".into())))?;
    let (stage, records) = match stage {
        Some(mut st) => {
            let r = std::mem::replace(
                &mut st.records,
                Records {
                    words,
                    data: Vec::new(),
                },
            );
            (Some(st), r)
        }
        None => (
            None,
            Records {
                words,
                data: crate::filled(tasks * words, 0, "the per-task records")?,
            },
        ),
    };
    let journal = stage.as_ref().map(|s| s.journal.clone());
    let cpus = units
        .iter()
        .filter(|u| matches!(u.spec, UnitSpec::Cpu))
        .count();
    tracing::info!(
        tasks,
        done = done.count(),
        cpus,
        gpu_queues = units.len() - cpus,
        "running {}",
        prepared.plugin.name()
    );
    let records = Mutex::new(records);
    let progress = progress_bar(opts.quiet || !is_root, tasks as u64);
    let weights = vec![1.0; units.len()];
    // Rank 0 journals its chunks; other ranks send theirs to rank 0's journal.
    let finished = |r: Range<usize>, rec: &[u64]| -> Result<()> {
        match &journal {
            Some(j) => j.append(r, rec),
            None => node.forward_records(r, rec),
        }
    };
    let interrupted = AtomicBool::new(false);
    let t_run = Instant::now();
    let node_run = node
        .task_source(tasks, plan, &weights, journal.clone())
        .and_then(|source| {
            let over = AtomicBool::new(false);
            std::thread::scope(|s| {
                if opts.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    // Interrupted before the first chunk.
                    interrupted.store(true, Ordering::Relaxed);
                    source.stop();
                }
                if let Some(flag) = opts.interrupt {
                    let (source, journal, over, interrupted) =
                        (source.as_ref(), journal.as_deref(), &over, &interrupted);
                    s.spawn(move || watch(flag, over, source, journal, interrupted));
                }
                let r = run_units(
                    job,
                    &units,
                    source.as_ref(),
                    &records,
                    &progress,
                    &done,
                    &finished,
                );
                over.store(true, Ordering::Relaxed);
                r
            })
        });
    progress.finish_and_clear();
    let run_seconds = t_run.elapsed().as_secs_f64();
    let (stats, slices) = match node_run {
        Ok(r) => r,
        Err(e) => {
            if let Some(st) = &stage {
                let _ = st.journal.flush();
                tracing::warn!(
                    "the finished tasks are journaled in {}: after fixing the cause, continue \
                     with --resume (or start over with --restart)",
                    st.journal.path().display()
                );
            }
            return Err(node.fail(e));
        }
    };
    let mut records = records.into_inner();
    let verified = if plan.verify.sample > 0 {
        match verify::verify(job, &units, &slices, &records, plan.verify.sample) {
            Ok(v) => Some(v),
            Err(e) => {
                // The journal holds the record that failed: it must not be resumed.
                if let Some(st) = &stage {
                    let _ = st.out.discard();
                }
                return Err(node.fail(e));
            }
        }
    } else {
        None
    };
    node.gather_records(&mut records)?;
    let device_json: Vec<serde_json::Value> = device_reports
        .iter()
        .map(|d| serde_json::to_value(d).expect("device report serializes"))
        .collect();
    let node_stats = node.gather_stats(
        &stats,
        &device_json,
        verified.as_ref().map_or(
            serde_json::json!({}),
            |v| serde_json::json!({ "verified": v.checked }),
        ),
    )?;
    if !is_root {
        node.barrier()?;
        return Ok(Outcome {
            report: serde_json::Value::Null,
            devices: device_reports,
            run_seconds,
        });
    }
    let st = stage.expect("rank 0 has a stage");
    let resumed = st.done.count();
    let ended = st
        .journal
        .flush()
        .and_then(|()| st.journal.result())
        .map(|()| resumed + st.journal.tasks());
    let done_now = match ended {
        Ok(d) => d,
        Err(e) => return Err(node.fail(e)),
    };
    if done_now < tasks {
        node.barrier()?;
        if !interrupted.load(Ordering::Relaxed) {
            return Err(Error::Output(format!(
                "only {done_now} of {tasks} tasks ran (a bug in tuccompi: please report it); the \
                 journal in {} can be resumed",
                st.journal.path().display()
            )));
        }
        return Err(Error::Interrupted {
            done: done_now,
            total: tasks,
            journal: st.journal.path().to_path_buf(),
        });
    }

    // 4: write outputs into the staging folder, then move them into place.
    let checksum = job.finish(&records, &partial).map_err(|e| node.fail(e))?;
    let wall = t0.elapsed().as_secs_f64();
    let mut report = report_json(
        plan,
        prepared.plugin,
        job,
        &stats,
        &device_json,
        node_stats,
        checksum,
        wall,
        node.size(),
    );
    // The scheduling phase alone (no input loading, kernel builds or output): what throughput
    // figures divide by.
    report["run_seconds"] = serde_json::json!(run_seconds);
    report["resumed_tasks"] = serde_json::json!(resumed);
    let js = st.journal.stats();
    report["journal"] = serde_json::json!({
        "sync_every_seconds": plan.output.sync_seconds, "entries": js.entries, "bytes": js.bytes,
        "syncs": js.syncs, "sync_seconds": js.sync_seconds,
    });
    if let Some(v) = &verified {
        report["verify"] = serde_json::json!({
            "sample": plan.verify.sample,
            "verified": report["nodes"].as_array().map_or(v.checked as u64, |n| {
                n.iter().map(|x| x["verified"].as_u64().unwrap_or(0)).sum()
            }),
            "seed": v.seed,
        });
    }
    let written = write_file(
        &partial,
        "report.json",
        &serde_json::to_string_pretty(&report).expect("report serializes"),
    )
    .and_then(|()| {
        if plan.output.trace {
            write_file(&partial, "trace.json", &trace_json(&units, &slices))
        } else {
            Ok(())
        }
    })
    .and_then(|()| st.out.commit());
    if let Err(e) = written {
        return Err(node.fail(e));
    }
    node.barrier()?;
    Ok(Outcome {
        report,
        devices: device_reports,
        run_seconds,
    })
}

#[allow(clippy::too_many_arguments)]
fn report_json(
    plan: &Plan,
    plugin: &dyn Plugin,
    job: &dyn Job,
    stats: &[UnitStats],
    devices: &[serde_json::Value],
    nodes: serde_json::Value,
    checksum: serde_json::Value,
    wall: f64,
    node_count: usize,
) -> serde_json::Value {
    serde_json::json!({
        "tuccompi": env!("CARGO_PKG_VERSION"),
        "plugin": plugin.name(),
        "config": plan.config_path.display().to_string(),
        "input": job.describe(),
        "tasks": job.tasks(),
        "policy": plan.scheduler.policy,
        "node_policy": if node_count > 1 { serde_json::json!(plan.nodes.policy) } else { serde_json::Value::Null },
        "units": stats,
        "devices": devices,
        "nodes": nodes,
        "wall_seconds": wall,
        "checksum": checksum,
    })
}

/// A Chrome-trace / Perfetto JSON document: one track per unit, one slice per chunk.
fn trace_json(units: &[Unit<'_>], slices: &[Slice]) -> String {
    let mut events: Vec<serde_json::Value> = units
        .iter()
        .enumerate()
        .map(|(i, u)| serde_json::json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": i, "args": {"name": u.name}}))
        .collect();
    events.extend(slices.iter().map(|s| {
        serde_json::json!({
            "name": format!("tasks {}..{}", s.tasks.start, s.tasks.end),
            "ph": "X", "pid": 0, "tid": s.unit, "ts": s.start_us, "dur": s.dur_us,
            "args": {"tasks": s.tasks.len()},
        })
    }));
    serde_json::to_string(&serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }))
        .expect("trace serializes")
}

fn progress_bar(hidden: bool, len: u64) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    // indicatif draws only when stderr is a terminal.
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} tasks  {per_sec}  ETA {eta}")
            .expect("valid template"),
    );
    pb
}

/// The policy's name as written in the config.
pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Equitable => "equitable",
        Policy::WorkQueue => "work-queue",
    }
}
