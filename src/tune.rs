//! `tuccompi tune`: measured calibration of a plugin's GPU launch parameters.
//!
//! For each selected device, runs the plugin's GPU half alone on a fixed sample of tasks with a
//! few candidates, in two sweeps (batch at the predicted local size, then local size at the
//! best batch; local size 0 is the driver's own choice), each timed `repeat` times (median of
//! `run_seconds`). Prints the table and stores the winners in the tuning cache, which later
//! runs use unless the config sets the value (config > cache > prediction).

use crate::config::Plan;
use crate::node::Single;
use crate::runtime::{run, select_devices, RunOptions};
use crate::tuning::{cache_key, Cache, CacheEntry};
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

fn pick_local(tuning: &serde_json::Value) -> usize {
    // The predicted local size of the kernels the cache's local size applies to.
    let locals = tuning["local"].as_object().cloned().unwrap_or_default();
    ["wl_round", "sssp_relax", "tp_relax"]
        .iter()
        .find_map(|k| locals.get(*k).and_then(|c| c["value"].as_u64()))
        .unwrap_or(128) as usize
}

/// Tune `plan`'s GPU half on every selected device; returns the timed rows and writes the cache.
pub fn tune(plan: &Plan, opts: TuneOptions, mut print: impl FnMut(&Row)) -> Result<Vec<Row>> {
    if plan.plugin != "apsp" {
        return Err(Error::Config(format!(
            "tuccompi tune calibrates plugins whose GPU half reads [{0}] batch and local_size; {0} does not",
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
    // Every timed run compares against the rules' own prediction, not an earlier tuning.
    crate::tuning::bypass_cache(true);
    let rows = tune_devices(plan, devices, opts, &mut print, &tmp, &mut cache);
    crate::tuning::bypass_cache(false);
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
        let base = |extra: &[String]| -> Result<serde_json::Value> {
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
            Ok(run(
                &p,
                &RunOptions {
                    quiet: true,
                    ..Default::default()
                },
                &Single,
            )?
            .report)
        };
        // A first run shows the prediction (and loads and builds everything once).
        let first = base(&["run.sources=1".into()])?;
        let tuning = &first["devices"][0]["tuning"];
        let pred_batch = tuning["batch"]["value"].as_u64().unwrap_or(1) as usize;
        let pred_local = pick_local(tuning);
        let n = first["input"]["n"].as_u64().unwrap_or(1) as usize;
        let tasks_all = match &plan.sources {
            crate::config::Sources::All => n,
            crate::config::Sources::First(k) => *k as usize,
            crate::config::Sources::List(l) => l.len(),
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
                secs.push(
                    base(&extra)?["run_seconds"]
                        .as_f64()
                        .unwrap_or(f64::INFINITY),
                );
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
        let key = tuning["cache_key"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| cache_key(&dev.info, &plan.plugin, n));
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
