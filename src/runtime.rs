//! The runtime: from a validated plan to output files.
//!
//! Resolves the plugin among those the caller hands over (`main` passes the built-in registry;
//! the runtime knows no plugin by name), prepares its job, builds the node's units (CPU workers, and the
//! queues of every selected OpenCL device, each set up once by the GPU half), runs them under
//! the scheduling policy through the thread layer, and writes `report.json` (and the trace).
//! While a run is in progress its output directory holds a file `INCOMPLETE`; it is removed
//! only after every output file is written, so a failed run never looks complete.

use crate::config::{DeviceSel, Plan, Policy};
use crate::device::{self, Filter};
use crate::node::Node;
use crate::plugin::{Job, Plugin, PrepareCtx, Records};
use crate::scheduler::UnitInfo;
use crate::sink::write_file;
use crate::thread::{run_units, Slice, Unit, UnitSpec, UnitStats};
use crate::tuning::{CacheUse, LaunchParams, Tuner};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Instant;

/// How to run, beyond the plan.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// No progress bar.
    pub quiet: bool,
    /// Plugins beyond the registry passed to [`run`] (a user's own, from an example or another
    /// crate).
    pub extra_plugins: Vec<&'a dyn Plugin>,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RunOptions(quiet={}, extra={})",
            self.quiet,
            self.extra_plugins.len()
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
                "{}: unknown table [{t}]; known tables are [run] [input] [units] [scheduler] [output] \
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
fn select_devices_noting(plan: &Plan) -> Result<(Vec<Arc<device::Device>>, Option<String>)> {
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

/// Say once per process when the affinity mask is narrower than the machine (Open MPI binds
/// each rank to one core by default), with the fix.
fn warn_narrow_affinity(node: &dyn Node) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if let Some((allowed, online)) = cpu_affinity().filter(|(a, o)| a < o) {
        ONCE.call_once(|| {
            eprintln!(
                "tuccompi: warning: rank {} on {}: this process may run on {allowed} of the \
                 machine's {online} CPUs (its CPU affinity mask), so its CPU workers share \
                 {allowed}. Under mpirun, which binds each rank to one core by default, start \
                 with `mpirun --bind-to none ...` (or give each rank its cores, e.g. `--map-by \
                 ppr:1:node:PE={online} --bind-to core`).",
                node.rank(),
                crate::node::host_name()
            );
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

/// Run a plan on this node (and, under MPI, with the other nodes), with `plugins` (the
/// registry) and `opts.extra_plugins` to choose from. GPU halves' tuners read the tuning cache.
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
    let plugin = resolve_plugin(plan, plugins, &opts.extra_plugins)?;
    let dir = &plan.output.dir;
    let is_root = node.rank() == 0;
    if is_root {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        write_file(
            dir,
            "INCOMPLETE",
            "a tuccompi run is writing here, or failed; see report.json when it is gone\n",
        )?;
        for stale in ["report.json", "summary.csv", "trace.json"] {
            let _ = std::fs::remove_file(dir.join(stale));
        }
    }
    node.barrier()?;
    // Rank 0 prepares first (it creates shared files such as distances.npy), then the others.
    let prepare = || {
        plugin
            .prepare(&PrepareCtx {
                plan,
                out_dir: dir,
                is_root,
            })
            .map_err(|e| node.fail(e))
    };
    let root_job = if is_root { Some(prepare()?) } else { None };
    node.barrier()?;
    let job = match root_job {
        Some(j) => j,
        None => prepare()?,
    };
    if node.size() > 1 && !job.multi_node() {
        return Err(node.fail(Error::Config(format!(
            "plugin {} computes one matrix in one process; run it without mpirun (it uses every core or a GPU of one node)",
            plugin.name()
        ))));
    }
    // Failure injection for the node layer's tests: this rank fails as a plugin would.
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
    let tasks = job.tasks();

    warn_narrow_affinity(node);
    let mut units = Vec::new();
    let mut device_reports = Vec::new();
    // Why no device was found although the plan asked for every device (report and output).
    let mut device_note = None;
    if let Some(gpu) = job.gpu() {
        let tuner = Tuner::new(plan.units.concurrent_kernels, cache);
        let (devices, note) = select_devices_noting(plan).map_err(|e| node.fail(e))?;
        if let Some(why) = &note {
            device_note = Some(format!(
                "units.opencl = \"all\" found no OpenCL device ({why}); running on CPU workers only"
            ));
        }
        for dev in devices {
            let params = gpu.params(&dev, &tuner).map_err(|e| node.fail(e))?;
            let half = gpu.setup(dev.clone(), &params).map_err(|e| node.fail(e))?;
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
    } else if plan.units.opencl != DeviceSel::None && plan.units.cpu_workers == 0 {
        return Err(Error::Config(format!(
            "plugin {} has no GPU half; set units.cpu_workers >= 1",
            plugin.name()
        )));
    }
    // CPU workers: "auto" leaves one core to the host thread of each GPU queue (it launches
    // kernels and waits on the device; starved, it slows the whole device down).
    let gpu_queues = units.len();
    let cpu_workers = if job.prefers_gpu() && gpu_queues > 0 {
        tracing::info!(
            "plugin {} runs on the GPU; CPU workers stay idle",
            plugin.name()
        );
        0
    } else if plan.units.cpu_workers_auto {
        plan.units
            .cpu_workers
            .saturating_sub(gpu_queues)
            .max(if gpu_queues == 0 { 1 } else { 0 })
    } else {
        plan.units.cpu_workers
    };
    if job.cpu().is_some() {
        for i in 0..cpu_workers {
            units.push(Unit {
                name: format!("cpu{i}"),
                spec: UnitSpec::Cpu,
                chunk: 0,
            });
        }
    } else if plan.units.cpu_workers > 0 {
        tracing::info!(
            "plugin {} has no CPU half; CPU workers stay idle",
            plugin.name()
        );
    }
    if units.is_empty() && node.size() == 1 {
        return Err(Error::Config(
            "no computational units: units.cpu_workers = 0 and no OpenCL device was selected; \
             set units.cpu_workers >= 1 or select a device with units.opencl"
                .into(),
        ));
    }
    let cpus = units
        .iter()
        .filter(|u| matches!(u.spec, UnitSpec::Cpu))
        .count();
    // Under MPI every rank says what it found: its CPU workers and devices.
    if node.under_mpi() {
        let found: Vec<String> = device_reports
            .iter()
            .map(|d| format!("{} ({} queues)", d.name, d.queues))
            .collect();
        eprintln!(
            "tuccompi: rank {} on {}: {cpus} CPU workers; OpenCL devices: {}",
            node.rank(),
            crate::node::host_name(),
            if found.is_empty() {
                device_note
                    .clone()
                    .unwrap_or_else(|| "none (units.opencl = \"none\")".into())
            } else {
                found.join(", ")
            }
        );
    } else if let Some(note) = &device_note {
        tracing::info!("{note}");
    }
    let chunk = cpu_chunk(plan, tasks, units.len());
    for u in units.iter_mut().filter(|u| matches!(u.spec, UnitSpec::Cpu)) {
        u.chunk = chunk;
    }
    tracing::info!(
        tasks,
        cpus,
        gpu_queues = units.len() - cpus,
        "running {}",
        plugin.name()
    );

    let words = job.record_words();
    let records = Mutex::new(Records {
        words,
        data: crate::filled(tasks * words, 0, "the per-task records")?,
    });
    let progress = progress_bar(opts.quiet || !is_root, tasks as u64);
    let infos: Vec<UnitInfo> = units.iter().map(Unit::info).collect();
    let t_run = Instant::now();
    let node_run = node.task_source(tasks, plan, &infos).and_then(|source| {
        let ran = run_units(
            job.as_ref(),
            &units,
            source.as_ref(),
            &records,
            &progress,
            plan.units.on_failure,
        )?;
        // Failed units gave their chunks back; if no unit was left to take them, say so.
        let left = source.left_over();
        if left > 0 {
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
    });
    progress.finish_and_clear();
    let run_seconds = t_run.elapsed().as_secs_f64();
    let (stats, slices) = match node_run {
        Ok(r) => r,
        Err(e) => return Err(node.fail(e)),
    };
    let mut records = records.into_inner();
    node.gather_records(&mut records)?;
    let device_json: Vec<serde_json::Value> = device_reports
        .iter()
        .map(|d| serde_json::to_value(d).expect("device report serializes"))
        .collect();
    let node_stats = node.gather_stats(&stats, &device_json, device_note.as_deref())?;
    if !is_root {
        node.barrier()?;
        return Ok(Outcome {
            report: serde_json::Value::Null,
            devices: device_reports,
            run_seconds,
        });
    }
    let checksum = job.finish(&records, dir)?;
    let wall = t0.elapsed().as_secs_f64();
    let mut report = report_json(
        plan,
        plugin,
        job.as_ref(),
        &stats,
        &device_json,
        node_stats,
        checksum,
        wall,
        node.size(),
        device_note.as_deref(),
    );
    // The scheduling phase alone (no input loading, kernel builds or output): what throughput
    // figures divide by.
    report["run_seconds"] = serde_json::json!(run_seconds);
    write_file(
        dir,
        "report.json",
        &serde_json::to_string_pretty(&report).expect("report serializes"),
    )?;
    if plan.output.trace {
        write_file(dir, "trace.json", &trace_json(&units, &slices))?;
    }
    node.barrier()?;
    std::fs::remove_file(dir.join("INCOMPLETE"))
        .map_err(|e| Error::io(dir.join("INCOMPLETE"), e))?;
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
    device_note: Option<&str>,
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
