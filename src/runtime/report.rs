//! Phase 4, write outputs: the plugin's files, `report.json` and the trace, into the staging folder and then the output directory together.

use super::*;

/// This process's CPU time and context switches so far (`getrusage`): where a node's cores
/// went, e.g. a thread that wakes too often shows as involuntary switches of the workers.
pub(super) fn process_usage() -> serde_json::Value {
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

pub(super) fn device_json(devices: &[DeviceReport]) -> Vec<serde_json::Value> {
    devices
        .iter()
        .map(|d| serde_json::to_value(d).expect("device report serializes"))
        .collect()
}

/// Phase 4 (rank 0): the plugin's files, `report.json` and the trace into the staging folder,
/// then into the output directory together.
pub(super) fn write_outputs(
    plan: &Plan,
    prepared: &Prepared<'_>,
    stage: &Stage,
    ex: Executed<'_>,
    nodes: usize,
    t0: Instant,
) -> Result<Outcome> {
    let job = prepared.job.as_ref();
    let partial = stage.out.partial();
    let t = Instant::now();
    let checksum = job.finish(&ex.records, &crate::sink::Out::dir(&partial))?;
    tracing::debug!(
        "finish: the plugin's outputs written in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let mut report = run_report(plan, prepared, &ex, checksum, nodes, t0);
    report["resumed_tasks"] = serde_json::json!(stage.done.count());
    let js = stage.journal.stats();
    report["journal"] = serde_json::json!({
        "sync_every_seconds": plan.output.sync_seconds, "entries": js.entries, "bytes": js.bytes,
        "syncs": js.syncs, "sync_seconds": js.sync_seconds,
    });
    write_file(
        &partial,
        "report.json",
        &serde_json::to_string_pretty(&report).expect("report serializes"),
    )?;
    if plan.output.trace {
        write_file(&partial, "trace.json", &trace_json(&ex.units, &ex.slices))?;
    }
    let t = Instant::now();
    stage
        .out
        .commit(job.tasks(), job.record_words(), stage.journal.bulk())?;
    tracing::debug!(
        "finish: report written and the output committed in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let (devices, run_seconds) = (ex.devices, ex.run_seconds);
    release("the units", ex.units);
    Ok(Outcome {
        report,
        files: Default::default(),
        devices,
        run_seconds,
    })
}

/// Frees `value` once a run's outputs are committed, timed at debug level (`finish: ... released
/// in`): what a run's end costs beyond its report (device buffers, a job's data, and the pages
/// of files it still holds open).
pub(super) fn release<T>(what: &str, value: T) {
    let t = Instant::now();
    drop(value);
    tracing::debug!(
        "finish: {what} released in {:.3} s",
        t.elapsed().as_secs_f64()
    );
}

/// Phase 4 of an in-memory run ([`RunOptions::in_memory`]): the plugin's files written into
/// memory, handed back with the bulk files (hidden ones, the plugin's own scratch, left out)
/// and the report; nothing is written anywhere.
pub(super) fn write_to_memory(
    plan: &Plan,
    prepared: &Prepared<'_>,
    ex: Executed<'_>,
    t0: Instant,
) -> Result<Outcome> {
    let job = prepared.job.as_ref();
    let out = crate::sink::Out::memory();
    let checksum = job.finish(&ex.records, &out)?;
    let mut report = run_report(plan, prepared, &ex, checksum, 1, t0);
    report["output"] = serde_json::json!("memory");
    let mut files = out.into_files();
    for rows in job.details().bulk {
        if !rows.name().starts_with('.') {
            files.insert(rows.name(), rows.reader()?);
        }
    }
    if plan.output.trace {
        let trace = crate::sink::Out::memory();
        trace.write_file("trace.json", &trace_json(&ex.units, &ex.slices))?;
        files.extend(trace.into_files());
    }
    Ok(Outcome {
        report,
        files,
        devices: ex.devices,
        run_seconds: ex.run_seconds,
    })
}

/// The run's report (`report.json`) from what phase 3 found and the plugin's `checksum`.
fn run_report(
    plan: &Plan,
    prepared: &Prepared<'_>,
    ex: &Executed<'_>,
    checksum: serde_json::Value,
    nodes: usize,
    t0: Instant,
) -> serde_json::Value {
    let mut report = report_json(
        plan,
        prepared.plugin,
        prepared.job.as_ref(),
        &ex.stats,
        &device_json(&ex.devices),
        ex.node_stats.clone(),
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
    if let Some(list) = report["units"].as_array_mut() {
        for (u, start) in list.iter_mut().zip(&ex.starts) {
            u["start"] = serde_json::json!(start);
        }
    }
    if let Some(v) = &ex.verified {
        let verified: u64 = report["nodes"].as_array().map_or(v.checked as u64, |n| {
            n.iter().map(|x| x["verified"].as_u64().unwrap_or(0)).sum()
        });
        report["verify"] = serde_json::json!({
            "sample": plan.verify.sample.map_or(serde_json::json!("auto"), |n| serde_json::json!(n)),
            "verified": verified, "seed": v.seed, "seconds": v.seconds,
        });
    }
    report
}

#[allow(clippy::too_many_arguments)]
pub(super) fn report_json(
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
pub(super) fn trace_json(units: &[Unit<'_>], slices: &[Slice]) -> String {
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
