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

mod stage;
mod verify;

use stage::{journaled, precheck, Stage};
use verify::Verified;

use crate::config::{DeviceSel, OnFailure, Plan, Policy};
use crate::device::{self, Device, Filter};
use crate::node::Node;
use crate::plugin::{DeviceCount, Job, Plugin, PrepareCtx, Records};
use crate::scheduler::TaskSource;
use crate::scheduler::{Estimate, UnitInfo};
use crate::sink::journal::Journal;
use crate::sink::outdir;
use crate::sink::write_file;
use crate::thread::{run_units, DoneSet, Slice, Unit, UnitSpec, UnitStats};
use crate::tuning::{CacheUse, LaunchParams, Tuner};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::ops::Range;
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
    /// Called once, just before the run first touches the output directory (after the input,
    /// the preprocessing and the units' set-up): the command line's signal handling ends the
    /// process at once before this point (nothing to resume) and stops the run cleanly after
    /// it. Returning `false` (a signal came first) ends the run with nothing written.
    pub before_writing: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Discover the OpenCL devices in a thread while the input loads, which hides the drivers'
    /// start-up (a quarter of a second on the GPU machine). For a process that runs one plan at
    /// a time, as the `tuccompi` command does; off by default, since a process running several
    /// plans at once (a test harness) would discover beside other runs' OpenCL work, which PoCL
    /// does not always survive.
    pub discover_early: bool,
    /// Keep the speed history ([`crate::scheduler::history`]) in the user's cache directory:
    /// the work queue starts from the models an earlier run of the same work measured, and this
    /// run's models are stored at its end (unless `scheduler.history = false`). The command
    /// line sets it; off by default, so a library caller (a test) writes no cache.
    pub speed_history: bool,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RunOptions(quiet={}, extra={}, unfinished={:?}, interrupt={}, before_writing={}, discover_early={}, speed_history={})",
            self.quiet,
            self.extra_plugins.len(),
            self.unfinished,
            self.interrupt.is_some(),
            self.before_writing.is_some(),
            self.discover_early,
            self.speed_history
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
    select_devices_noting(plan).map(|(d, _)| d)
}

/// [`select_devices`], and why none was found when the plan asked for every device and
/// there is none (the run then goes on with CPU workers).
fn select_devices_noting(plan: &Plan) -> Found {
    let names = match &plan.units.opencl {
        DeviceSel::None => return Ok((Vec::new(), None)),
        DeviceSel::All => Vec::new(),
        DeviceSel::Names(n) => n.clone(),
    };
    let filter = Filter {
        device_type: plan.units.device_type.clone(),
        names,
    };
    match device::discover(&filter) {
        Ok(d) => Ok((d, None)),
        Err(e) if plan.units.opencl == DeviceSel::All && plan.units.cpu_workers > 0 => {
            Ok((Vec::new(), Some(e.to_string())))
        }
        Err(e) => Err(e),
    }
}

/// The CPUs this process may run on (its affinity mask) and the machine's online CPUs, from
/// `/proc/self/status` and `/sys/devices/system/cpu/online`; `None` where they cannot be read.
pub fn cpu_affinity() -> Option<(usize, usize)> {
    fn count(list: &str) -> Option<usize> {
        list.trim().split(',').try_fold(0, |n, part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            Some(n + b.checked_sub(a)? + 1)
        })
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(count)?;
    let online = count(&std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?)?;
    Some((allowed, online))
}

/// `line` (ending in a newline) on stderr in one write, so that the lines of several ranks do
/// not interleave (`eprintln!` writes in pieces).
fn say(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}

/// Say once per process when the affinity mask is narrower than the machine (Open MPI binds
/// each rank to one core by default), with the fix.
fn warn_narrow_affinity(node: &dyn Node) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if let Some((allowed, online)) = cpu_affinity().filter(|(a, o)| a < o) {
        ONCE.call_once(|| {
            let line = format!(
                "tuccompi: warning: rank {} on {}: this process may run on {allowed} of the \
                 machine's {online} CPUs (its CPU affinity mask), so its CPU workers share \
                 {allowed}. Under mpirun, which binds each rank to one core by default, start \
                 with `mpirun --bind-to none ...` (or give each rank its cores, e.g. `--map-by \
                 ppr:1:node:PE={online} --bind-to core`).\n",
                node.rank(),
                crate::node::host_name()
            );
            say(&line);
        });
    }
}

/// Tasks a CPU worker asks for per pull: the configured cap; under the work queue, no cap
/// (the queue sizes chunks); under equitable, a slice of its share so results stream.
fn cpu_chunk(plan: &Plan, tasks: usize, units: usize) -> usize {
    plan.scheduler.chunk.unwrap_or(match plan.scheduler.policy {
        Policy::WorkQueue => usize::MAX,
        Policy::Equitable => (tasks / (units.max(1) * 16)).clamp(1, 64),
    })
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
/// plugin, input, sources) for a run on `nodes` nodes. Writes nothing, caches included
/// (`tuccompi check`).
pub fn prepare<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    extra: &[&'a dyn Plugin],
    nodes: usize,
) -> Result<Prepared<'a>> {
    let devices = || {
        select_devices_noting(plan)
            .map(|(d, _)| DeviceCount::of(&d))
            .unwrap_or_default()
    };
    prepare_with(plan, plugins, extra, nodes, None, true, 0, &devices)
}

/// [`prepare`], the ranks of one machine sharing one copy of the input graph through `graphs`.
///
/// `done_tasks`: the tasks an unfinished run that this one resumes has done; `devices`: the
/// OpenCL devices the plan selects, counted (asked only by preprocessing that weighs them).
pub fn prepare_sharing<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    extra: &[&'a dyn Plugin],
    nodes: usize,
    graphs: Option<&dyn crate::graph::GraphShare>,
    done_tasks: usize,
    devices: &(dyn Fn() -> DeviceCount + Sync),
) -> Result<Prepared<'a>> {
    prepare_with(
        plan, plugins, extra, nodes, graphs, false, done_tasks, devices,
    )
}

#[allow(clippy::too_many_arguments)]
fn prepare_with<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    extra: &[&'a dyn Plugin],
    nodes: usize,
    graphs: Option<&dyn crate::graph::GraphShare>,
    dry_run: bool,
    done_tasks: usize,
    devices: &(dyn Fn() -> DeviceCount + Sync),
) -> Result<Prepared<'a>> {
    let plugin = resolve_plugin(plan, plugins, extra)?;
    let job = plugin.prepare(&PrepareCtx {
        plan,
        graphs,
        dry_run,
        done_tasks,
        devices,
    })?;
    if nodes > 1 && !job.multi_node() {
        return Err(Error::Config(format!(
            "plugin {} computes one matrix in one process; run it without mpirun (it uses every core or a GPU of one node)",
            plugin.name()
        )));
    }
    if plan.verify.sample.is_some_and(|n| n > 0) && job.cpu().is_none() {
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
    /// Why no device was found although the plan asked for every device (report and output).
    pub device_note: Option<String>,
}

/// Phase 2: the units a plan selects for a prepared job on a run of `nodes` nodes. Opens no
/// device context beyond discovery and writes nothing.
pub fn select_units(plan: &Plan, prepared: &Prepared<'_>, nodes: usize) -> Result<Selection> {
    select_units_from(plan, prepared, nodes, None)
}

/// The devices a plan selects, and why none was found (see [`select_devices_noting`]).
type Found = Result<(Vec<Arc<device::Device>>, Option<String>)>;

/// [`select_units`] with the devices `found` beforehand ([`RunOptions::discover_early`]), or
/// discovered here when `None`.
fn select_units_from(
    plan: &Plan,
    prepared: &Prepared<'_>,
    nodes: usize,
    found: Option<Found>,
) -> Result<Selection> {
    let job = prepared.job.as_ref();
    let name = prepared.plugin.name();
    let mut device_note = None;
    let devices = if job.gpu().is_some() {
        let (devices, note) = found.unwrap_or_else(|| select_devices_noting(plan))?;
        if let Some(why) = note {
            // The device layer's message names the filter when devices exist but none
            // matches; otherwise (no OpenCL at all) name it here.
            device_note = Some(if why.contains("units.device_type") {
                format!("{why}; running on CPU workers only")
            } else {
                format!(
                    "units.opencl = \"all\" with units.device_type = \"{}\" found no OpenCL \
                     device ({why}); running on CPU workers only",
                    plan.units.device_type
                )
            });
        }
        devices
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
        device_note,
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
    let bulk: u64 = job.bulk_outputs().iter().map(|r| r.bytes()).sum::<u64>() + job.finish_bytes();
    let per_task = 8 * job.record_words() as u64 + 64 + if plan.output.trace { 160 } else { 0 };
    bulk + job.tasks() as u64 * per_task + (1 << 20)
}

/// Failure injection for the node layer's tests: this rank fails as a plugin would.
fn injected_rank_failure(node: &dyn Node) -> Result<()> {
    if crate::node::injected_failure(node.rank(), "prepare") {
        return Err(node.fail(Error::Unit {
            unit: "cpu0".into(),
            msg: "injected failure (TUCCOMPI_TEST_FAIL_RANK)".into(),
        }));
    }
    Ok(())
}

/// Set up each selected device (tuner, upload, kernels) and make the units: the queues of
/// every device, then the CPU workers. Returns the units, the devices' reports, and the devices
/// taken out of the run as failed units.
///
/// A device whose set-up fails with a device error (a kernel that does not build there, no
/// fp64, too little memory) is, under `units.on_failure = "retry"`, taken out of the run with a
/// warning naming it and the error: the other devices and the CPU workers run the tasks. Under
/// `"abort"`, or when no unit is left, that error ends the run. Other errors (a bad config
/// value, characterizations that do not match their kernels) end it in any case.
fn build_units<'j>(
    plan: &Plan,
    prepared: &'j Prepared<'_>,
    selection: &Selection,
    cache: CacheUse,
) -> Result<(Vec<Unit<'j>>, Vec<DeviceReport>, Vec<UnitStats>)> {
    let job = prepared.job.as_ref();
    let mut units = Vec::new();
    let mut device_reports = Vec::new();
    let mut failed = Vec::new();
    let mut first_error = None;
    if let Some(gpu) = job.gpu() {
        let tuner = Tuner::new(plan.units.concurrent_kernels, cache);
        for dev in &selection.devices {
            let set_up = gpu
                .params(dev, &tuner)
                .and_then(|params| Ok((gpu.setup(dev.clone(), &params)?, params)));
            let (half, params) = match set_up {
                Ok(x) => x,
                Err(e @ Error::Device(_)) if plan.units.on_failure == OnFailure::Retry => {
                    let name = format!("gpu{}", dev.index);
                    tracing::warn!(
                        "unit {name} ('{}') failed and is out of the run: {}",
                        dev.info.name,
                        crate::thread::one_line(&e.to_string())
                    );
                    failed.push(UnitStats {
                        name,
                        kind: "gpu",
                        device: Some(dev.info.name.clone()),
                        queue: None,
                        tasks: 0,
                        chunks: 0,
                        busy_seconds: 0.0,
                        ended_seconds: 0.0,
                        failed: Some(e.to_string()),
                    });
                    first_error.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
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
    if units.is_empty() {
        if let Some(e) = first_error {
            // No unit is left to run the tasks: the run fails with the device's message.
            return Err(e);
        }
    }
    Ok((units, device_reports, failed))
}

/// Until `over` is dropped: once `flag` is set, stop handing out chunks (running ones finish)
/// and write the journal out, eagerly from then on.
fn watch(
    flag: &AtomicBool,
    over: crossbeam_channel::Receiver<()>,
    source: &dyn TaskSource,
    journal: Option<&Journal>,
    interrupted: &AtomicBool,
) {
    // Polls the flag every 20 ms, and returns as soon as the run is over (a sleep here would
    // add up to its length to every run).
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
        over.recv_timeout(Duration::from_millis(20))
    {
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
    // 0: the output directory and an unfinished run in it, before any preprocessing (rank 0;
    // checked again under the lock).
    let done_tasks = if node.rank() == 0 {
        precheck(plan, opts.unfinished).map_err(|e| node.fail(e))?
    } else {
        0
    };
    // 1-2: prepare and select units. Nothing is written. The devices are discovered in a
    // thread meanwhile (when asked to), or when the preparation asks for them first.
    let early = opts.discover_early && plan.units.opencl != DeviceSel::None;
    let (prepared, found) = std::thread::scope(|s| {
        let pending = Mutex::new(early.then(|| s.spawn(|| select_devices_noting(plan))));
        let found: std::sync::OnceLock<Found> = std::sync::OnceLock::new();
        let join = || {
            found.get_or_init(|| match pending.lock().take() {
                Some(h) => h.join().unwrap_or_else(|_| {
                    Err(Error::Device("OpenCL device discovery panicked".into()))
                }),
                None => select_devices_noting(plan),
            })
        };
        let devices = || match join() {
            Ok((d, _)) if plan.units.opencl != DeviceSel::None => DeviceCount::of(d),
            _ => DeviceCount::default(),
        };
        let prepared = prepare_sharing(
            plan,
            plugins,
            &opts.extra_plugins,
            node.size(),
            node.graph_share(),
            done_tasks,
            &devices,
        );
        // Discovered here or by the preparation: hand it on (else select_units discovers).
        if early {
            join();
        }
        (prepared, found.into_inner())
    });
    let prepared = prepared.map_err(|e| node.fail(e))?;
    injected_rank_failure(node)?;
    let selection =
        select_units_from(plan, &prepared, node.size(), found).map_err(|e| node.fail(e))?;
    let prepare_seconds = t0.elapsed().as_secs_f64();
    // 3: execute.
    let mut ex = execute(plan, opts, cache, node, &prepared, &selection)?;
    ex.prepare_seconds = prepare_seconds;
    let Some(stage) = ex.stage.take() else {
        // Other ranks: their records and statistics are at rank 0 now.
        node.barrier()?;
        return Ok(Outcome {
            report: serde_json::Value::Null,
            devices: ex.devices,
            run_seconds: ex.run_seconds,
        });
    };
    let tasks = prepared.job.tasks();
    let done = stage
        .journal
        .flush()
        .and_then(|()| stage.journal.result())
        .map(|()| stage.done.count() + stage.journal.tasks())
        .map_err(|e| node.fail(e))?;
    if done < tasks {
        node.barrier()?;
        let journal = stage.journal.path().to_path_buf();
        return Err(if ex.interrupted {
            Error::Interrupted {
                done,
                total: tasks,
                journal,
            }
        } else {
            Error::Output(format!(
                "only {done} of {tasks} tasks ran (a bug in tuccompi: please report it); the \
                 journal in {} can be resumed",
                journal.display()
            ))
        });
    }
    // 4: write outputs.
    let outcome = write_outputs(plan, &prepared, &stage, ex, node.size(), t0);
    let outcome = outcome.map_err(|e| node.fail(e))?;
    node.barrier()?;
    Ok(outcome)
}

/// Phase 3's result on one node.
struct Executed<'p> {
    units: Vec<Unit<'p>>,
    devices: Vec<DeviceReport>,
    stats: Vec<UnitStats>,
    slices: Vec<Slice>,
    /// Every task's record on rank 0 (gathered); this node's own elsewhere.
    records: Records,
    /// Every node's statistics (rank 0).
    node_stats: serde_json::Value,
    verified: Option<Verified>,
    /// Phase 1-2 (loading the input, the plugin's preprocessing, choosing units).
    prepare_seconds: f64,
    /// Phase 3 before the first chunk: devices, kernel builds, uploads, the output's stage.
    setup_seconds: f64,
    run_seconds: f64,
    /// Rank 0's output directory, journal and resumed tasks.
    stage: Option<Stage>,
    /// Whether an interrupt stopped the run before every task ran.
    interrupted: bool,
    /// Why no device was found although the plan asked for every device.
    device_note: Option<String>,
    /// Where each unit's starting model came from ("history" or "probe"; empty: no history).
    starts: Vec<&'static str>,
}

/// Phase 3: check the output directory and its space (touching nothing), set up the units,
/// then lock and stage the output (rank 0), open the bulk files, run the units, verify a
/// sample, and gather records and statistics at rank 0.
fn execute<'p>(
    plan: &Plan,
    opts: &RunOptions<'_>,
    cache: CacheUse,
    node: &dyn Node,
    prepared: &'p Prepared<'_>,
    selection: &Selection,
) -> Result<Executed<'p>> {
    let t_setup = Instant::now();
    let is_root = node.rank() == 0;
    let job = prepared.job.as_ref();
    let (tasks, words) = (job.tasks(), job.record_words());
    if is_root {
        let st = output_status(plan, job).map_err(|e| node.fail(e))?;
        outdir::check_space(&plan.output.dir, st.need, st.free).map_err(|e| node.fail(e))?;
    }
    warn_narrow_affinity(node);
    let (units, devices, failed_devices) =
        build_units(plan, prepared, selection, cache).map_err(|e| node.fail(e))?;
    // Validated: from here on the output directory changes (rank 0 locks it first).
    if !opts.before_writing.is_none_or(|f| f()) {
        return Err(node.fail(Error::Output(
            "stopped by a signal before the run started; nothing was written".into(),
        )));
    }
    let mut stage = if is_root {
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
    let records = match stage.as_mut() {
        Some(st) => std::mem::replace(
            &mut st.records,
            Records {
                words,
                data: Vec::new(),
            },
        ),
        None => Records {
            words,
            data: crate::filled(tasks * words, 0, "the per-task records")?,
        },
    };
    let journal = stage.as_ref().map(|s| s.journal.clone());
    let cpus = units
        .iter()
        .filter(|u| matches!(u.spec, UnitSpec::Cpu))
        .count();
    // Under MPI every rank says what it found: its CPU workers and devices.
    if node.under_mpi() {
        let found: Vec<String> = devices
            .iter()
            .map(|d| format!("{} ({} queues)", d.name, d.queues))
            .collect();
        let line = format!(
            "tuccompi: rank {} on {}: {cpus} CPU workers; OpenCL devices: {}\n",
            node.rank(),
            crate::node::host_name(),
            if found.is_empty() {
                selection
                    .device_note
                    .clone()
                    .unwrap_or_else(|| "none (units.opencl = \"none\")".into())
            } else {
                found.join(", ")
            }
        );
        say(&line);
    } else if let Some(note) = &selection.device_note {
        // Asked for GPUs and found none: say so at the default verbosity (as JAX's "falling
        // back to CPU"), once, not only in report.json. A config that says nothing of
        // units.opencl takes every device there is, and none is no news: an info line.
        let asked = toml::from_str::<toml::Table>(&plan.resolved_toml)
            .ok()
            .and_then(|t| t.get("units")?.get("opencl").cloned())
            .is_some();
        if asked && !opts.quiet {
            say(&format!("tuccompi: warning: {note}\n"));
        } else {
            tracing::info!("{note}");
        }
    }
    tracing::info!(
        tasks,
        done = done.count(),
        cpus,
        gpu_queues = units.len() - cpus,
        "running {}",
        prepared.plugin.name()
    );
    let setup_seconds = t_setup.elapsed().as_secs_f64();
    // Set-up, not run: reading the history (and the CPU's model) before the clock starts.
    let mut history = SpeedHistory::open(plan, opts, prepared, &units, node);
    let t_run = Instant::now();
    let records = Mutex::new(records);
    let interrupted = AtomicBool::new(false);
    let node_run = run_chunks(
        plan,
        opts,
        node,
        job,
        &units,
        &records,
        &done,
        journal.as_ref(),
        &interrupted,
        &history.priors,
    );
    let run_seconds = t_run.elapsed().as_secs_f64();
    let (stats, slices) = match node_run {
        Ok((mut stats, slices, measured)) => {
            if !interrupted.load(Ordering::Relaxed) {
                history.store(&units, &stats, &measured);
            }
            // Devices taken out at set-up are failed units of the report (after the units
            // that ran, so unit indices stay those of `units`).
            stats.extend(failed_devices);
            (stats, slices)
        }
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
    let want = match plan.verify.sample {
        Some(n) => verify::Want::Tasks(n),
        // A few tasks, for about 1% of the run's time (the first always runs).
        None => verify::Want::Auto(t_run.elapsed() / 100),
    };
    let verified = if want != verify::Want::Tasks(0) && job.cpu().is_some() {
        match verify::verify(job, &units, &slices, &records, want) {
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
    let mut extra = serde_json::json!({ "device_note": selection.device_note });
    if let Some(v) = &verified {
        extra["verified"] = serde_json::json!(v.checked);
    }
    extra["process"] = process_usage();
    let node_stats = node.gather_stats(&stats, &device_json(&devices), extra)?;
    Ok(Executed {
        units,
        devices,
        stats,
        slices,
        records,
        node_stats,
        verified,
        prepare_seconds: 0.0,
        setup_seconds,
        run_seconds,
        stage,
        interrupted: interrupted.load(Ordering::Relaxed),
        device_note: selection.device_note.clone(),
        starts: history.starts(),
    })
}

/// The speed history of a run: each unit's starting model (from an earlier run of the same
/// work on the same kind of unit, else none: the queue probes) and, after the run, the models
/// it measured ([`crate::scheduler::history`]).
struct SpeedHistory {
    store: Option<crate::scheduler::history::History>,
    keys: Vec<String>,
    priors: Vec<Option<Estimate>>,
}

impl SpeedHistory {
    fn open(
        plan: &Plan,
        opts: &RunOptions<'_>,
        prepared: &Prepared<'_>,
        units: &[Unit<'_>],
        node: &dyn Node,
    ) -> Self {
        // Under MPI the node layer's sources measure nothing they could report: no history.
        let on = opts.speed_history
            && !node.under_mpi()
            && plan.scheduler.history
            && plan.scheduler.policy == Policy::WorkQueue;
        let path = on.then(crate::scheduler::history::path).flatten();
        let Some(path) = path else {
            return SpeedHistory {
                store: None,
                keys: Vec::new(),
                priors: vec![None; units.len()],
            };
        };
        let (store, note) = crate::scheduler::history::History::load(&path);
        if let Some(n) = note {
            tracing::warn!("{n}");
        }
        let workload = prepared.job.workload().to_string();
        let cpus = units
            .iter()
            .filter(|u| matches!(u.spec, UnitSpec::Cpu))
            .count();
        let keys: Vec<String> = units
            .iter()
            .map(|u| {
                let class = match &u.spec {
                    UnitSpec::Cpu => format!("cpu {} x{cpus}", cpu_model()),
                    UnitSpec::Gpu { device, .. } => {
                        let queues = units
                            .iter()
                            .filter(|v| matches!(&v.spec, UnitSpec::Gpu { device: d, .. } if d.index == device.index))
                            .count();
                        format!(
                            "{} | {} | {queues} queues | chunk {}",
                            device.info.name, device.info.driver, u.chunk
                        )
                    }
                };
                crate::scheduler::history::key(prepared.plugin.name(), &workload, &class)
            })
            .collect();
        let priors = keys.iter().map(|k| store.get(k)).collect();
        SpeedHistory {
            store: Some(store),
            keys,
            priors,
        }
    }

    /// "history" or "probe" per unit, for the report (empty when the history is off).
    fn starts(&self) -> Vec<&'static str> {
        if self.store.is_none() {
            return Vec::new();
        }
        self.priors
            .iter()
            .map(|p| if p.is_some() { "history" } else { "probe" })
            .collect()
    }

    /// Store the mean of each unit class's measured models (units that failed or ran nothing
    /// excluded).
    fn store(&mut self, units: &[Unit<'_>], stats: &[UnitStats], measured: &[Option<Estimate>]) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        let mut by_key: std::collections::BTreeMap<&str, (Estimate, u64, usize)> =
            Default::default();
        for (i, key) in self.keys.iter().enumerate() {
            let (Some(Some(e)), Some(s)) = (measured.get(i), stats.get(i)) else {
                continue;
            };
            if s.failed.is_some() || s.tasks == 0 || i >= units.len() {
                continue;
            }
            let acc = by_key.entry(key).or_insert((
                Estimate {
                    latency: 0.0,
                    per_task: 0.0,
                },
                0,
                0,
            ));
            acc.0.latency += e.latency;
            acc.0.per_task += e.per_task;
            acc.1 += s.tasks as u64;
            acc.2 += 1;
        }
        if by_key.is_empty() {
            return;
        }
        for (key, (sum, tasks, n)) in by_key {
            let n = n as f64;
            let mean = Estimate {
                latency: sum.latency / n,
                per_task: sum.per_task / n,
            };
            store.put(key.to_string(), mean, tasks);
        }
        if let Err(e) = store.save() {
            tracing::warn!("the speed history could not be stored: {e}");
        }
    }
}

/// The CPU's model name (`/proc/cpuinfo`), for the speed history's key. Read once per process:
/// on a 16-core virtual machine one read of `/proc/cpuinfo` took most of a millisecond (it
/// samples every core's clock), which, once per CPU worker, added 10 ms to a 20 ms run.
fn cpu_model() -> &'static str {
    static MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_string())
            })
            .unwrap_or_else(|| "cpu".into())
    })
}

/// This process's CPU time and context switches so far (`getrusage`): where a node's cores
/// went, e.g. a thread that wakes too often shows as involuntary switches of the workers.
fn process_usage() -> serde_json::Value {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return serde_json::Value::Null;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    serde_json::json!({
        "user_seconds": secs(u.ru_utime),
        "system_seconds": secs(u.ru_stime),
        "voluntary_switches": u.ru_nvcsw,
        "involuntary_switches": u.ru_nivcsw,
    })
}

/// What the units of a node did: their statistics, their chunks (for the trace) and the models
/// the work queue measured (for the speed history).
type NodeRun = (Vec<UnitStats>, Vec<Slice>, Vec<Option<Estimate>>);

/// Run the units over the node's task source until it is dry or interrupted, skipping the
/// `done` tasks; each finished chunk goes to rank 0's `journal` (or, on other ranks, is sent to
/// it).
#[allow(clippy::too_many_arguments)]
fn run_chunks(
    plan: &Plan,
    opts: &RunOptions<'_>,
    node: &dyn Node,
    job: &dyn Job,
    units: &[Unit<'_>],
    records: &Mutex<Records>,
    done: &DoneSet,
    journal: Option<&Arc<Journal>>,
    interrupted: &AtomicBool,
    priors: &[Option<Estimate>],
) -> Result<NodeRun> {
    let tasks = job.tasks();
    let quiet = opts.quiet || node.rank() != 0;
    let mut measured = Vec::new();
    let progress = progress_bar(quiet, tasks as u64);
    let log_every = (!quiet
        && plan.output.progress_seconds > 0.0
        && !std::io::IsTerminal::is_terminal(&std::io::stderr()))
    .then(|| Duration::from_secs_f64(plan.output.progress_seconds));
    let infos: Vec<UnitInfo> = units
        .iter()
        .zip(priors.iter().copied().chain(std::iter::repeat(None)))
        .map(|(u, p)| u.info().with_prior(p))
        .collect();
    let finished = |unit: usize, r: Range<usize>, rec: &[u64]| -> Result<()> {
        match journal {
            Some(j) => j.append(r, rec),
            None => node.forward_records(unit, r, rec),
        }
    };
    let result = node
        .task_source(tasks, plan, &infos, journal.cloned())
        .and_then(|source| {
            let (over, over_rx) = crossbeam_channel::bounded::<()>(1);
            std::thread::scope(|s| {
                if opts.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    // Interrupted before the first chunk.
                    interrupted.store(true, Ordering::Relaxed);
                    source.stop();
                }
                if let Some(every) = log_every {
                    let (over, progress) = (over_rx.clone(), progress.clone());
                    let before = done.count() as u64;
                    s.spawn(move || log_progress(&progress, before, tasks, every, over));
                }
                if let Some(flag) = opts.interrupt {
                    let (source, journal) = (source.as_ref(), journal.map(|j| j.as_ref()));
                    s.spawn(move || watch(flag, over_rx, source, journal, interrupted));
                }
                let r = run_units(
                    job,
                    units,
                    source.as_ref(),
                    records,
                    &progress,
                    plan.units.on_failure,
                    done,
                    &finished,
                );
                drop(over);
                measured = source.estimates();
                let ran = r?;
                // Failed units gave their chunks back; if no unit was left to take them, say
                // so (an interrupted run leaves tasks on purpose).
                let left = source.left_over();
                if left > 0 && !interrupted.load(Ordering::Relaxed) {
                    let failures: Vec<String> = ran
                        .0
                        .iter()
                        .filter_map(|u| Some(format!("{}: {}", u.name, u.failed.as_ref()?)))
                        .collect();
                    return Err(Error::NoUnitLeft {
                        left,
                        tasks,
                        failures: failures.join("; "),
                    });
                }
                Ok(ran)
            })
        });
    progress.finish_and_clear();
    result.map(|(stats, slices)| (stats, slices, measured))
}

fn device_json(devices: &[DeviceReport]) -> Vec<serde_json::Value> {
    devices
        .iter()
        .map(|d| serde_json::to_value(d).expect("device report serializes"))
        .collect()
}

/// Phase 4 (rank 0): the plugin's files, `report.json` and the trace into the staging folder,
/// then into the output directory together.
fn write_outputs(
    plan: &Plan,
    prepared: &Prepared<'_>,
    stage: &Stage,
    ex: Executed<'_>,
    nodes: usize,
    t0: Instant,
) -> Result<Outcome> {
    let job = prepared.job.as_ref();
    let partial = stage.out.partial();
    let checksum = job.finish(&ex.records, &partial)?;
    let mut report = report_json(
        plan,
        prepared.plugin,
        job,
        &ex.stats,
        &device_json(&ex.devices),
        ex.node_stats,
        checksum,
        t0.elapsed().as_secs_f64(),
        nodes,
        ex.device_note.as_deref(),
    );
    // The scheduling phase alone (no input loading, kernel builds or output): what throughput
    // figures divide by.
    report["run_seconds"] = serde_json::json!(ex.run_seconds);
    // Where the wall time went (rank 0): the rest is verification, gathering, the plugin's
    // output files and the report.
    let wall = report["wall_seconds"].as_f64().unwrap_or(0.0);
    report["phase_seconds"] = serde_json::json!({
        "prepare": ex.prepare_seconds,
        "setup": ex.setup_seconds,
        "run": ex.run_seconds,
        "finish": (wall - ex.prepare_seconds - ex.setup_seconds - ex.run_seconds).max(0.0),
    });
    report["resumed_tasks"] = serde_json::json!(stage.done.count());
    if let Some(list) = report["units"].as_array_mut() {
        for (u, start) in list.iter_mut().zip(&ex.starts) {
            u["start"] = serde_json::json!(start);
        }
    }
    let js = stage.journal.stats();
    report["journal"] = serde_json::json!({
        "sync_every_seconds": plan.output.sync_seconds, "entries": js.entries, "bytes": js.bytes,
        "syncs": js.syncs, "sync_seconds": js.sync_seconds,
    });
    if let Some(v) = &ex.verified {
        let verified: u64 = report["nodes"].as_array().map_or(v.checked as u64, |n| {
            n.iter().map(|x| x["verified"].as_u64().unwrap_or(0)).sum()
        });
        report["verify"] = serde_json::json!({
            "sample": plan.verify.sample.map_or(serde_json::json!("auto"), |n| serde_json::json!(n)),
            "verified": verified, "seed": v.seed, "seconds": v.seconds,
        });
    }
    write_file(
        &partial,
        "report.json",
        &serde_json::to_string_pretty(&report).expect("report serializes"),
    )?;
    if plan.output.trace {
        write_file(&partial, "trace.json", &trace_json(&ex.units, &ex.slices))?;
    }
    stage.out.commit()?;
    Ok(Outcome {
        report,
        devices: ex.devices,
        run_seconds: ex.run_seconds,
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
    device_note: Option<&str>,
) -> serde_json::Value {
    serde_json::json!({
        "tuccompi": env!("CARGO_PKG_VERSION"),
        "plugin": plugin.name(),
        "config": plan.config_path.display().to_string(),
        // What ran, as Hydra keeps it: the command line's overrides and the config they made.
        "overrides": plan.overrides,
        "effective_config": toml::from_str::<toml::Table>(&plan.resolved_toml)
            .ok()
            .and_then(|t| serde_json::to_value(t).ok()),
        "input": job.describe(),
        "tasks": job.tasks(),
        "policy": plan.scheduler.policy,
        "node_policy": if node_count > 1 { serde_json::json!(plan.nodes.policy) } else { serde_json::Value::Null },
        "units": crate::node::job_units(stats, &nodes),
        "failures": stats.iter().filter_map(|u| Some(serde_json::json!({"unit": u.name, "error": u.failed.as_ref()?}))).collect::<Vec<_>>(),
        "devices": devices,
        "device_note": device_note,
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

/// Progress for a batch log (stderr not a terminal, as under Slurm or `2> log`), where the
/// bar does not draw: one line every `every` until the run is `over`. Tasks done, their rate
/// over the run so far and the estimated end.
fn log_progress(
    progress: &indicatif::ProgressBar,
    done0: u64,
    tasks: usize,
    every: Duration,
    over: crossbeam_channel::Receiver<()>,
) {
    let t0 = Instant::now();
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = over.recv_timeout(every) {
        say(&progress_line(
            progress.position(),
            done0,
            tasks as u64,
            t0.elapsed().as_secs_f64(),
        ));
    }
}

/// `tuccompi: progress: 1200/5000 tasks (24.0%), 812.3 tasks/s, about 4.7 s left` (the rate
/// counts the tasks done since this run began, `done0` having been done before it).
fn progress_line(done: u64, done0: u64, tasks: u64, seconds: f64) -> String {
    let rate = done.saturating_sub(done0) as f64 / seconds.max(1e-9);
    let left = tasks.saturating_sub(done);
    let eta = if rate > 0.0 {
        let s = left as f64 / rate;
        if s < 120.0 {
            format!("about {s:.1} s left")
        } else if s < 7200.0 {
            format!("about {:.1} min left", s / 60.0)
        } else {
            format!("about {:.1} h left", s / 3600.0)
        }
    } else {
        "no estimate yet".into()
    };
    format!(
        "tuccompi: progress: {done}/{tasks} tasks ({:.1}%), {rate:.1} tasks/s, {eta}\n",
        100.0 * done as f64 / (tasks.max(1)) as f64
    )
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
