//! `tuccompi tune`: measured calibration of APSP's GPU launch parameters (`[apsp] batch` and
//! `[apsp] local_size`).
//!
//! For each selected device, runs APSP's GPU half alone on a fixed sample of tasks with a
//! few candidates, in two sweeps (batch at the predicted local size, then local size at the
//! best batch; local size 0 is the driver's own choice), each timed `repeat` times (median of
//! `run_seconds`). Prints the table and stores the winners in the tuning cache, which later
//! runs use unless the config sets the value (config > cache > prediction).

use crate::config::Plan;
use crate::node::Single;
use crate::plugin::Plugin;
use crate::runtime::{run_with_cache, select_devices, Outcome, RunOptions};
use crate::tuning::{Cache, CacheEntry, CacheUse, LaunchParams};
use crate::{Error, Result};
use std::path::Path;

/// One timed candidate.
#[derive(Debug, Clone)]
pub struct Row {
    /// Device name.
    pub device: String,
    /// Local size tried (0 = the driver's).
    pub local_size: usize,
    /// Batch tried.
    pub batch: usize,
    /// Tasks per timed run.
    pub tasks: usize,
    /// Median seconds of the scheduling phase.
    pub seconds: f64,
    /// Whether this is what the rules predict.
    pub predicted: bool,
}

/// Options of a tuning session.
#[derive(Debug, Clone, Copy)]
pub struct TuneOptions {
    /// Tasks per timed run (`None`: four predicted batches, at most every task).
    pub sample: Option<usize>,
    /// Timed runs per candidate (median).
    pub repeat: usize,
}

/// `tuccompi tune` for apsp: print each candidate's timing as it comes, then the winner and
/// where it is stored.
pub fn command(plan: &Plan, sample: Option<usize>, repeat: usize) -> Result<()> {
    println!(
        "{:<40} {:>10} {:>7} {:>12} {:>10}  predicted",
        "device", "local_size", "batch", "seconds", "tasks/s"
    );
    let rows = tune(plan, TuneOptions { sample, repeat }, |r| {
        println!(
            "{:<40} {:>10} {:>7} {:>12.4} {:>10.1}  {}",
            r.device,
            if r.local_size == 0 {
                "driver".to_string()
            } else {
                r.local_size.to_string()
            },
            r.batch,
            r.seconds,
            r.tasks as f64 / r.seconds.max(1e-12),
            if r.predicted { "yes" } else { "" }
        );
    })?;
    let best = rows.iter().min_by(|a, b| a.seconds.total_cmp(&b.seconds));
    if let Some(b) = best {
        println!(
            "best: local_size {} batch {}; stored in {}",
            b.local_size,
            b.batch,
            crate::tuning::cache_path().display()
        );
    }
    Ok(())
}

fn pick_local(tuning: &LaunchParams) -> usize {
    // The predicted local size of the kernels the cache's local size applies to.
    ["wl_round", "sssp_relax", "tp_relax"]
        .iter()
        .find_map(|k| tuning.local.get(*k).map(|c| c.value))
        .unwrap_or(128)
}

/// Tune APSP's GPU half (`plan.plugin` must be `apsp`) on every selected device; returns the
/// timed rows and writes the cache.
pub fn tune(plan: &Plan, opts: TuneOptions, mut print: impl FnMut(&Row)) -> Result<Vec<Row>> {
    if plan.plugin != "apsp" {
        return Err(Error::Config(format!(
            "tuccompi tune calibrates the apsp plugin ([apsp] batch and local_size); run.plugin is {}",
            plan.plugin
        )));
    }
    let devices = select_devices(plan)?;
    if devices.is_empty() {
        return Err(Error::Device(
            "tune needs an OpenCL device; none is selected or present".into(),
        ));
    }
    let tmp = std::env::temp_dir().join(format!("tuccompi-tune-{}", std::process::id()));
    let mut cache = Cache::load()?;
    let rows = tune_devices(plan, devices, opts, &mut print, &tmp, &mut cache);
    let _ = std::fs::remove_dir_all(&tmp);
    let rows = rows?;
    cache.save()?;
    Ok(rows)
}

fn tune_devices(
    plan: &Plan,
    devices: Vec<std::sync::Arc<crate::device::Device>>,
    opts: TuneOptions,
    print: &mut impl FnMut(&Row),
    tmp: &Path,
    cache: &mut Cache,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for dev in devices {
        let name = dev.info.name.clone();
        let base = |extra: &[String]| -> Result<Outcome> {
            let mut sets = vec![
                "units.cpu_workers=0".to_string(),
                format!("units.opencl=[{:?}]", name),
                "units.concurrent_kernels=1".into(),
                format!("output.dir={:?}", tmp.display().to_string()),
                "output.distances=false".into(),
                "output.trace=false".into(),
            ];
            sets.extend_from_slice(extra);
            let p = Plan::from_toml(&plan.resolved_toml, Path::new(&plan.config_path), &sets)?;
            let apsp: &dyn Plugin = &super::Apsp;
            let opts = RunOptions {
                quiet: true,
                ..Default::default()
            };
            // Every timed run compares against the rules' own prediction, not an earlier
            // tuning.
            run_with_cache(&p, &[apsp], &opts, CacheUse::Ignore, &Single)
        };
        // A first run shows the prediction (and loads and builds everything once).
        let first = base(&["run.sources=1".into()])?;
        let Some(tuning) = first.devices.first().map(|d| d.tuning.clone()) else {
            return Err(Error::Device(format!("'{name}' ran no GPU queue")));
        };
        let pred_batch = tuning.batch.value;
        let pred_local = pick_local(&tuning);
        // The input's size, as the plugin describes it in the report.
        let n = first.report["input"]["n"].as_u64().unwrap_or(1) as usize;
        let tasks_all = match &plan.sources {
            crate::config::Sources::All => n,
            crate::config::Sources::First(k) => *k as usize,
            crate::config::Sources::List(l) => l.len(),
            crate::config::Sources::Points(p) => p.len(),
            crate::config::Sources::File(_) => n,
        };
        let sample = opts
            .sample
            .unwrap_or(4 * pred_batch)
            .clamp(1, tasks_all.min(n));
        let mut time = |local: usize, batch: usize| -> Result<Row> {
            let extra = [
                format!("run.sources={sample}"),
                format!("apsp.local_size={local}"),
                format!("apsp.batch={batch}"),
            ];
            let mut secs = Vec::new();
            for _ in 0..opts.repeat.max(1) {
                secs.push(base(&extra)?.run_seconds);
            }
            secs.sort_by(f64::total_cmp);
            let row = Row {
                device: name.clone(),
                local_size: local,
                batch,
                tasks: sample,
                seconds: secs[secs.len() / 2],
                predicted: local == pred_local && batch == pred_batch,
            };
            print(&row);
            Ok(row)
        };
        let mut mine = Vec::new();
        let mut batches = vec![pred_batch / 2, pred_batch, pred_batch * 2];
        batches.retain(|&b| b >= 1);
        batches.dedup();
        for b in batches {
            mine.push(time(pred_local, b)?);
        }
        let best_batch = mine
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
            .map(|r| r.batch)
            .unwrap_or(pred_batch);
        let maxwg = dev.info.max_work_group;
        // 0 = the driver's choice; the work list's persistent kernel cannot take it, so the
        // plugin falls back to its own there.
        for l in [64usize, 128, 256, 512, 0] {
            // The predicted local size was timed at every batch of the first sweep already.
            if l <= maxwg && l != pred_local {
                mine.push(time(l, best_batch)?);
            }
        }
        let best = mine
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
            .cloned()
            .expect("candidates");
        let Some(key) = tuning.cache_key else {
            return Err(Error::Device(format!("'{name}': no tuning cache key")));
        };
        cache.entries.insert(
            key,
            CacheEntry {
                local_size: Some(best.local_size),
                batch: Some(best.batch),
            },
        );
        rows.extend(mine);
    }
    Ok(rows)
}
