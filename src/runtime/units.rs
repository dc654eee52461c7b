//! Phase 3a, set up: each device set up (upload, kernels, tuner; a device that fails is taken out under `"retry"`), CPU workers built, the signal and progress watcher.

use super::*;
use crate::plugin::{gpu_params, GpuOnDevice};

/// Tasks a CPU worker asks for per pull: the configured cap; under the work queue, no cap
/// (the queue sizes chunks); under equitable, a slice of its share so results stream.
pub(super) fn cpu_chunk(plan: &Plan, tasks: usize, units: usize) -> usize {
    plan.scheduler.chunk.unwrap_or(match plan.scheduler.policy {
        Policy::WorkQueue => usize::MAX,
        Policy::Equitable => (tasks / (units.max(1) * 16)).clamp(1, 64),
    })
}

/// The CPU workers a run starts beside `gpu_queues` GPU queues: none without a CPU half or when
/// the job prefers the GPU and has queues; under `cpu_workers = "auto"`, one core is left to
/// the host thread of each GPU queue (it launches kernels and waits on the device; starved,
/// it slows the whole device down), at least one worker when there is no queue.
pub(super) fn cpu_workers_beside(
    plan: &Plan,
    job: &dyn Job,
    selection: &Selection,
    gpu_queues: usize,
) -> usize {
    if !job.details().cpu_half || (job.details().prefers_gpu && gpu_queues > 0) {
        0
    } else if plan.units.cpu_workers_auto {
        selection
            .cpu_workers
            .saturating_sub(gpu_queues)
            .max(if gpu_queues == 0 { 1 } else { 0 })
    } else {
        selection.cpu_workers
    }
}

/// The names of the units a run starts (`gpu0.q0`, ..., then `cpu0`, ...), given the queues
/// each selected device gets (`queues[i]` for `selection.devices[i]`, from its launch
/// parameters). `run` names its units this way, and `check` prints this list, so the two
/// agree.
pub fn unit_names(
    plan: &Plan,
    job: &dyn Job,
    selection: &Selection,
    queues: &[usize],
) -> Vec<String> {
    let mut names = Vec::new();
    for (dev, &q) in selection.devices.iter().zip(queues) {
        names.extend((0..q).map(|q| format!("gpu{}.q{q}", dev.index)));
    }
    let gpu_queues = names.len();
    names.extend(
        (0..cpu_workers_beside(plan, job, selection, gpu_queues)).map(|i| format!("cpu{i}")),
    );
    names
}

/// Failure injection for the node layer's tests: this rank fails as a plugin would.
pub(super) fn injected_rank_failure(node: &dyn Node) -> Result<()> {
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
pub(super) fn build_units<'j>(
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
    if crate::plugin::has_gpu(job) {
        let tuner = Tuner::new(plan.units.concurrent_kernels, cache).plugin(&plan.plugin);
        // Each device set up on its own thread: a plugin's setup uploads what the device's
        // queues share (GPU PHAST: the hierarchy, 1-3 GB for a country), and devices take it
        // in parallel.
        let t0 = std::time::Instant::now();
        let set_ups: Vec<_> = std::thread::scope(|s| {
            let pending: Vec<_> = selection
                .devices
                .iter()
                .map(|dev| {
                    let tuner = &tuner;
                    s.spawn(move || {
                        let began = t0.elapsed().as_secs_f64();
                        let set_up = gpu_params(job, dev, tuner).and_then(|params| {
                            Ok((GpuOnDevice::setup(job, dev.clone(), &params)?, params))
                        });
                        (set_up, [began, t0.elapsed().as_secs_f64()])
                    })
                })
                .collect();
            pending
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|p| {
                        let e = Error::Device(format!(
                            "the GPU half's setup {}",
                            crate::thread::panic_text(p)
                        ));
                        (Err(e), [0.0; 2])
                    })
                })
                .collect()
        });
        for (dev, (set_up, setup_window)) in selection.devices.iter().zip(set_ups) {
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
                id: format!("gpu{}", dev.index),
                setup_window,
                opened: dev.opened,
                name: dev.info.name.clone(),
                platform: dev.info.platform.clone(),
                kind: dev.info.kind.clone(),
                queues,
                chunk,
                tuning: params,
            });
        }
    }
    let gpu_queues = units.len();
    if job.details().prefers_gpu && gpu_queues > 0 {
        tracing::info!(
            "plugin {} runs on the GPU; CPU workers stay idle",
            prepared.plugin.name()
        );
    }
    for i in 0..cpu_workers_beside(plan, job, selection, gpu_queues) {
        units.push(Unit {
            name: format!("cpu{i}"),
            spec: UnitSpec::Cpu,
            chunk: 0,
        });
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
pub(super) fn watch(
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
