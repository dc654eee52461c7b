//! `tune`: time the candidates a plugin declares ([`Job::tune_candidates`]) on the real
//! devices, and store the winners in the tuning cache, for any plugin with a GPU half.
//!
//! Per selected device: the rules' own prediction first (the cache is not read), then each
//! knob swept in the plugin's order at the best values of the knobs before it. A candidate
//! runs the job's first `sample` tasks through the GPU half alone (set up with the candidate's
//! launch parameters, one queue, chunks of the candidate's batch), `repeat` times; the median
//! counts. Bulk outputs the workers write go to a temporary directory removed at the end.
//! The winners are stored under the GPU half's cache key; `run` reads them back
//! (config > cache > prediction).

use super::*;
use crate::plugin::RecordsOut;
use crate::tuning::{free_local, Cache, CacheEntry, BATCH, LOCAL_SIZE};
use std::collections::BTreeMap;

/// Options of a tuning session.
#[derive(Debug, Clone, Copy)]
pub struct TuneOptions {
    /// Tasks per timed run (`None`: four predicted batches, at most every task).
    pub sample: Option<usize>,
    /// Timed runs per candidate (median).
    pub repeat: usize,
}

/// One timed candidate.
#[derive(Debug, Clone)]
pub struct TuneRow {
    /// Device name.
    pub device: String,
    /// The candidate: every knob's value (`batch`, `local_size`, the plugin's own).
    pub setting: BTreeMap<String, usize>,
    /// Tasks per timed run.
    pub tasks: usize,
    /// Median seconds of a timed run (`f64::INFINITY` when the candidate failed).
    pub seconds: f64,
    /// Whether this is what the rules predict.
    pub predicted: bool,
    /// Why the candidate could not run on the device (it is then left out).
    pub failed: Option<String>,
}

impl TuneRow {
    /// `batch=64 local_size=128`.
    pub fn setting_text(&self) -> String {
        let v: Vec<String> = self
            .setting
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        v.join(" ")
    }
}

/// The winners `tune` stored for one device.
#[derive(Debug, Clone)]
pub struct Tuned {
    /// Device name.
    pub device: String,
    /// The tuning cache's key.
    pub key: String,
    /// The winning values.
    pub best: BTreeMap<String, usize>,
}

/// Tune the plugin `plan.plugin` (found among `plugins` and `extra`) on every device the plan
/// selects; `print` sees each row as it is timed. Writes the tuning cache
/// ([`crate::tuning::cache_path`]).
pub fn tune(
    plan: &Plan,
    plugins: &[&dyn Plugin],
    extra: &[&dyn Plugin],
    opts: TuneOptions,
    mut print: impl FnMut(&TuneRow),
) -> Result<(Vec<TuneRow>, Vec<Tuned>)> {
    let prepared = prepare(plan, plugins, extra, 1)?;
    let name = prepared.plugin.name();
    let job = prepared.job.as_ref();
    if !crate::plugin::has_gpu(job) {
        return Err(Error::Config(format!(
            "plugin {name} has no GPU half: tune times GPU launch parameters, and there are none"
        )));
    }
    let selection = select_units(plan, &prepared, 1)?;
    if selection.devices.is_empty() {
        return Err(Error::Device(format!(
            "tune needs an OpenCL device, and none is selected (units.opencl = {}, \
             units.device_type = \"{}\"{}); `devices` lists what this machine has",
            plan.units.opencl,
            plan.units.device_type,
            selection
                .device_note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        )));
    }
    let scratch = crate::owned::Scratch::new("tuccompi-tune-")?;
    for b in job.details().bulk {
        b.open(scratch.path(), true)?;
    }
    let mut cache = Cache::load()?;
    let mut rows = Vec::new();
    let mut tuned = Vec::new();
    for dev in &selection.devices {
        let (mine, t) = tune_device(job, dev, &plan.plugin, opts, &mut print)?;
        rows.extend(mine);
        cache.entries.insert(
            t.key.clone(),
            CacheEntry {
                batch: t.best.get(BATCH).copied(),
                local_size: t.best.get(LOCAL_SIZE).copied(),
                knobs: t
                    .best
                    .iter()
                    .filter(|(k, _)| *k != BATCH && *k != LOCAL_SIZE)
                    .map(|(k, &v)| (k.clone(), v))
                    .collect(),
            },
        );
        tuned.push(t);
    }
    cache.save()?;
    Ok((rows, tuned))
}

/// The knobs' values as a cache entry (what [`Tuner::trying`] takes).
fn entry(setting: &BTreeMap<String, usize>) -> CacheEntry {
    CacheEntry {
        batch: setting.get(BATCH).copied(),
        local_size: setting.get(LOCAL_SIZE).copied(),
        knobs: setting
            .iter()
            .filter(|(k, _)| *k != BATCH && *k != LOCAL_SIZE)
            .map(|(k, &v)| (k.clone(), v))
            .collect(),
    }
}

fn tune_device(
    job: &dyn Job,
    dev: &Arc<Device>,
    plugin: &str,
    opts: TuneOptions,
    print: &mut impl FnMut(&TuneRow),
) -> Result<(Vec<TuneRow>, Tuned)> {
    let device = dev.info.name.clone();
    // One queue, the rules' own prediction (no cache): what the candidates are measured
    // against.
    let base = Tuner::new(Some(1), CacheUse::Ignore).plugin(plugin);
    let predicted = crate::plugin::gpu_params(job, dev, &base)?;
    let Some(key) = predicted.cache_key.clone() else {
        return Err(Error::Config(
            "the GPU half's launch parameters carry no tuning cache key (they were not made \
             by Tuner::params), so tune has nowhere to store its winners: build them with \
             Tuner::params"
                .into(),
        ));
    };
    let knobs = job.tune_candidates(&dev.info, &predicted);
    if knobs.iter().all(|k| k.values.is_empty()) {
        return Err(Error::Config(format!(
            "nothing to tune on '{device}': the plugin declares no candidates (its batch and \
             local sizes are fixed)"
        )));
    }
    let mut current: BTreeMap<String, usize> = BTreeMap::new();
    for k in &knobs {
        let v = match k.name.as_str() {
            BATCH => predicted.batch.value,
            LOCAL_SIZE => free_local(&predicted).unwrap_or(k.values[0]),
            own => predicted.knob(own).unwrap_or(k.values[0]),
        };
        current.insert(k.name.clone(), v);
    }
    let pred_setting = current.clone();
    let sample = opts
        .sample
        .unwrap_or(4 * predicted.batch.value)
        .clamp(1, job.tasks().max(1));
    let words = job.record_words();
    let mut timed: Vec<TuneRow> = Vec::new();
    let mut time = |setting: &BTreeMap<String, usize>| -> Result<f64> {
        if let Some(r) = timed.iter().find(|r| &r.setting == setting) {
            return Ok(r.seconds);
        }
        let run = || -> Result<f64> {
            let params = crate::plugin::gpu_params(job, dev, &base.trying(entry(setting)))?;
            let on = crate::plugin::GpuOnDevice::setup(job, dev.clone(), &params)?;
            let mut worker = on.worker(dev.queue()?)?;
            let batch = params.batch.value.max(1);
            let mut buf = Vec::new();
            let mut secs = Vec::new();
            for _ in 0..opts.repeat.max(1) {
                let t0 = Instant::now();
                let mut start = 0;
                while start < sample {
                    let end = (start + batch).min(sample);
                    buf.clear();
                    buf.resize((end - start) * words, 0);
                    worker.run(start..end, &mut RecordsOut::new(start, words, &mut buf))?;
                    start = end;
                }
                secs.push(t0.elapsed().as_secs_f64());
            }
            secs.sort_by(f64::total_cmp);
            Ok(secs[secs.len() / 2])
        };
        let (seconds, failed) = match run() {
            Ok(s) => (s, None),
            // A candidate the device cannot take (a local size, a batch too big for its
            // memory) is left out; the others are still timed.
            Err(e @ (Error::Device(_) | Error::Config(_))) => (f64::INFINITY, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        let row = TuneRow {
            device: device.clone(),
            setting: setting.clone(),
            tasks: sample,
            seconds,
            predicted: *setting == pred_setting,
            failed,
        };
        print(&row);
        timed.push(row);
        Ok(seconds)
    };
    time(&current)?;
    for k in &knobs {
        let mut best = (time(&current)?, current[&k.name]);
        for &v in &k.values {
            let mut s = current.clone();
            s.insert(k.name.clone(), v);
            let t = time(&s)?;
            if t < best.0 {
                best = (t, v);
            }
        }
        current.insert(k.name.clone(), best.1);
    }
    if !time(&current)?.is_finite() {
        return Err(Error::Device(format!(
            "no candidate ran on '{device}' (each row says why)"
        )));
    }
    Ok((
        timed,
        Tuned {
            device,
            key,
            best: current,
        },
    ))
}
