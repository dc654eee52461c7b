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
use crate::tuning::{free_local, Cache, CacheEntry, Knob, BATCH, LOCAL_SIZE};
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
    /// The columns of the session's table, which fit every row it times.
    columns: TuneTable,
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

    /// The titles of the table this row belongs to, aligned with [`TuneRow::table_line`]:
    /// `device  candidate  seconds  tasks/s  predicted`.
    pub fn table_header(&self) -> String {
        self.columns.header()
    }

    /// This row in its session's table: the device and candidate columns as wide as the
    /// widest device name and candidate of the session, so that no name shifts a column.
    pub fn table_line(&self) -> String {
        self.columns.row(self)
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

/// The table `tune` prints, one row per timed candidate: the device and candidate columns as
/// wide as the widest device name and candidate of the session (known before the first row
/// is timed), so that a long device name or a plugin's long knob shifts no later column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TuneTable {
    device: usize,
    candidate: usize,
}

impl TuneTable {
    /// Width of the seconds column.
    const SECONDS: usize = 10;
    /// Width of the tasks/s column.
    const RATE: usize = 12;

    /// Columns for the device names `devices` and candidates whose text
    /// ([`TuneRow::setting_text`]) is at most `candidates` characters wide; each at least as
    /// wide as its title.
    fn new<'a>(
        devices: impl IntoIterator<Item = &'a str>,
        candidates: impl IntoIterator<Item = usize>,
    ) -> Self {
        let widest = |title: &str, widths: &mut dyn Iterator<Item = usize>| {
            widths.fold(title.len(), usize::max)
        };
        TuneTable {
            device: widest(
                "device",
                &mut devices.into_iter().map(|d| d.chars().count()),
            ),
            candidate: widest("candidate", &mut candidates.into_iter()),
        }
    }

    /// The titles: `device  candidate  seconds  tasks/s  predicted`.
    fn header(&self) -> String {
        self.line("device", "candidate", "seconds", "tasks/s", "predicted")
    }

    /// One timed candidate's row (`failed` and why, for a candidate that could not run).
    fn row(&self, r: &TuneRow) -> String {
        match &r.failed {
            Some(why) => self.line(
                &r.device,
                &r.setting_text(),
                "failed",
                "",
                &crate::thread::one_line(why),
            ),
            None => self.line(
                &r.device,
                &r.setting_text(),
                &format!("{:.4}", r.seconds),
                &format!("{:.1}", r.tasks as f64 / r.seconds.max(1e-12)),
                if r.predicted { "yes" } else { "" },
            ),
        }
    }

    fn line(&self, device: &str, candidate: &str, secs: &str, rate: &str, last: &str) -> String {
        let (dw, cw) = (self.device, self.candidate);
        let (sw, rw) = (Self::SECONDS, Self::RATE);
        let line = format!("{device:<dw$}  {candidate:<cw$}  {secs:>sw$}  {rate:>rw$}  {last}");
        line.trim_end().to_string()
    }
}

/// Tune the plugin `plan.plugin` (found among `plugins`) on every device the plan
/// selects; `print` sees each row as it is timed (its [`TuneRow::table_line`] aligned with
/// every other row of the session). Writes the tuning cache ([`crate::tuning::cache_path`]).
pub fn tune(
    plan: &Plan,
    plugins: &[&dyn Plugin],
    opts: TuneOptions,
    mut print: impl FnMut(&TuneRow),
) -> Result<(Vec<TuneRow>, Vec<Tuned>)> {
    let prepared = prepare(plan, plugins, 1)?;
    let job = prepared.job.as_ref();
    let selection = tune_selection(plan, &prepared)?;
    let scratch = crate::owned::Scratch::new("tuccompi-tune-")?;
    for b in job.details().bulk {
        b.open(scratch.path(), true)?;
    }
    let mut cache = Cache::load()?;
    // Every device's candidates before the first is timed: the table's columns fit them all.
    let planned = selection
        .devices
        .iter()
        .map(|dev| DevicePlan::new(job, dev, &plan.plugin, opts))
        .collect::<Result<Vec<_>>>()?;
    let table = TuneTable::new(
        planned.iter().map(|p| p.device.as_str()),
        planned.iter().map(DevicePlan::widest_setting),
    );
    let mut rows = Vec::new();
    let mut tuned = Vec::new();
    for (dev, p) in selection.devices.iter().zip(planned) {
        let (mine, t) = time_device(job, dev, p, table, opts, &mut print)?;
        rows.extend(mine);
        cache.entries.insert(t.key.clone(), entry(&t.best));
        tuned.push(t);
    }
    cache.save()?;
    Ok((rows, tuned))
}

/// The units `tune` times on: the plan's devices, refused when the plugin has no GPU half or
/// no device is selected.
fn tune_selection(plan: &Plan, prepared: &Prepared<'_>) -> Result<Selection> {
    let job = prepared.job.as_ref();
    if !crate::plugin::has_gpu(job) {
        return Err(Error::Config(format!(
            "plugin {} has no GPU half: tune times GPU launch parameters, and there are none",
            prepared.plugin.name()
        )));
    }
    let selection = select_units(plan, prepared, 1)?;
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
    Ok(selection)
}

/// The knobs' values as a cache entry (what [`Tuner::trying`] takes, and what the cache
/// stores).
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

/// What `tune` times on one device, decided before any timing.
struct DevicePlan {
    /// The device's name.
    device: String,
    /// One queue, the rules' own prediction (no cache): what the candidates are measured
    /// against.
    base: Tuner,
    /// The tuning cache's key of the GPU half's parameters.
    key: String,
    /// The knobs and their values, in the order they are swept.
    knobs: Vec<Knob>,
    /// Every knob at its predicted value.
    predicted: BTreeMap<String, usize>,
    /// Tasks per timed run.
    sample: usize,
}

impl DevicePlan {
    fn new(job: &dyn Job, dev: &Arc<Device>, plugin: &str, opts: TuneOptions) -> Result<Self> {
        let device = dev.info.name.clone();
        let base = Tuner::new(Some(1), CacheUse::Ignore).plugin(plugin);
        let params = crate::plugin::gpu_params(job, dev, &base)?;
        let Some(key) = params.cache_key.clone() else {
            return Err(Error::Config(
                "the GPU half's launch parameters carry no tuning cache key (they were not \
                 made by Tuner::params), so tune has nowhere to store its winners: build them \
                 with Tuner::params"
                    .into(),
            ));
        };
        let knobs = job.tune_candidates(&dev.info, &params);
        if knobs.iter().all(|k| k.values.is_empty()) {
            return Err(Error::Config(format!(
                "nothing to tune on '{device}': the plugin declares no candidates (its batch \
                 and local sizes are fixed)"
            )));
        }
        let predicted = knobs
            .iter()
            .map(|k| {
                let v = match k.name.as_str() {
                    BATCH => params.batch.value,
                    LOCAL_SIZE => free_local(&params).unwrap_or(k.values[0]),
                    own => params.knob(own).unwrap_or(k.values[0]),
                };
                (k.name.clone(), v)
            })
            .collect();
        let sample = opts
            .sample
            .unwrap_or(4 * params.batch.value)
            .clamp(1, job.tasks().max(1));
        Ok(DevicePlan {
            device,
            base,
            key,
            knobs,
            predicted,
            sample,
        })
    }

    /// The most characters a candidate's text can have: each knob at its widest value.
    fn widest_setting(&self) -> usize {
        let digits = |v: usize| v.to_string().len();
        let knobs: Vec<usize> = self
            .predicted
            .iter()
            .map(|(name, &p)| {
                let values = self.knobs.iter().filter(|k| &k.name == name);
                let widest = values.flat_map(|k| k.values.iter()).map(|&v| digits(v));
                name.len() + 1 + widest.fold(digits(p), usize::max)
            })
            .collect();
        knobs.iter().sum::<usize>() + knobs.len().saturating_sub(1)
    }
}

/// Sweep the knobs of `plan` on `dev` (each in turn over its values, the others at their best
/// so far), timing every candidate once; `print` sees each row as it is timed.
fn time_device(
    job: &dyn Job,
    dev: &Arc<Device>,
    plan: DevicePlan,
    columns: TuneTable,
    opts: TuneOptions,
    print: &mut dyn FnMut(&TuneRow),
) -> Result<(Vec<TuneRow>, Tuned)> {
    let mut timed: Vec<TuneRow> = Vec::new();
    let mut time = |setting: &BTreeMap<String, usize>| -> Result<f64> {
        if let Some(r) = timed.iter().find(|r| &r.setting == setting) {
            return Ok(r.seconds);
        }
        let seconds = median_seconds(job, dev, &plan.base, setting, plan.sample, opts.repeat);
        let (seconds, failed) = match seconds {
            Ok(s) => (s, None),
            // A candidate the device cannot take (a local size, a batch too big for its
            // memory) is left out; the others are still timed.
            Err(e @ (Error::Device(_) | Error::Config(_))) => (f64::INFINITY, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        let row = TuneRow {
            device: plan.device.clone(),
            setting: setting.clone(),
            tasks: plan.sample,
            seconds,
            predicted: *setting == plan.predicted,
            failed,
            columns,
        };
        print(&row);
        timed.push(row);
        Ok(seconds)
    };
    let mut current = plan.predicted.clone();
    time(&current)?;
    for k in &plan.knobs {
        let mut times = vec![(current[&k.name], time(&current)?)];
        // A batch larger than the sample would time the sample in one partial batch: it is
        // not measured, so not chosen.
        let values = k
            .values
            .iter()
            .filter(|&&v| k.name != BATCH || v <= plan.sample);
        for &v in values {
            let mut s = current.clone();
            s.insert(k.name.clone(), v);
            times.push((v, time(&s)?));
        }
        current.insert(k.name.clone(), pick(&times));
    }
    if !time(&current)?.is_finite() {
        return Err(Error::Device(format!(
            "no candidate ran on '{}' (each row says why)",
            plan.device
        )));
    }
    Ok((
        timed,
        Tuned {
            device: plan.device,
            key: plan.key,
            best: current,
        },
    ))
}

/// Candidates whose times are within this fraction of the fastest are taken as equal: a
/// sweep's repeated medians differ by a few percent.
pub(crate) const TUNE_NOISE: f64 = 0.03;

/// The value `tune` keeps among `(value, seconds)`: the smallest whose time is within
/// [`TUNE_NOISE`] of the fastest (a smaller batch or group costs less when the guess is
/// wrong: fewer tasks per chunk at a run's end, less memory).
pub(crate) fn pick(times: &[(usize, f64)]) -> usize {
    let fastest = times.iter().map(|&(_, t)| t).fold(f64::INFINITY, f64::min);
    times
        .iter()
        .filter(|&&(_, t)| t.is_finite() && t <= fastest * (1.0 + TUNE_NOISE))
        .map(|&(v, _)| v)
        .min()
        .unwrap_or(times[0].0)
}

/// The median seconds of `repeat` runs of the job's first `sample` tasks through its GPU half
/// alone on `dev`, set up with the candidate `setting` (one queue, chunks of its batch).
fn median_seconds(
    job: &dyn Job,
    dev: &Arc<Device>,
    base: &Tuner,
    setting: &BTreeMap<String, usize>,
    sample: usize,
    repeat: usize,
) -> Result<f64> {
    let words = job.record_words();
    let params = crate::plugin::gpu_params(job, dev, &base.trying(entry(setting)))?;
    let on = crate::plugin::GpuOnDevice::setup(job, dev.clone(), &params)?;
    let mut worker = on.worker(dev.queue()?)?;
    let batch = params.batch.value.max(1);
    let mut buf = Vec::new();
    let mut secs = Vec::new();
    for _ in 0..repeat.max(1) {
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
}

#[cfg(test)]
mod test {
    use super::*;

    fn row(device: &str, setting: &[(&str, usize)], seconds: f64, columns: TuneTable) -> TuneRow {
        TuneRow {
            device: device.into(),
            setting: setting.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
            tasks: 4096,
            seconds,
            predicted: seconds == 0.5,
            failed: (seconds == f64::INFINITY).then(|| "local size 1024 > 512\nat launch".into()),
            columns,
        }
    }

    /// Of candidates within noise the smallest is kept (two batches 1% apart: the smaller);
    /// a clear winner is kept whatever its size; a candidate that failed never is.
    #[test]
    fn tune_keeps_the_smallest_candidate_within_noise() {
        assert_eq!(pick(&[(8192, 1.00), (32768, 0.99), (1024, 1.30)]), 8192);
        assert_eq!(pick(&[(8192, 1.00), (32768, 0.80)]), 32768);
        assert_eq!(pick(&[(256, f64::INFINITY), (512, 1.0)]), 512);
        assert_eq!(pick(&[(64, 1.0), (32, 1.0 + TUNE_NOISE / 2.0)]), 32);
    }

    #[test]
    fn the_table_sizes_its_columns_to_the_longest_device_name_and_candidate() {
        let long = "NVIDIA H200 NVL with a very long name";
        let plan = |knobs: Vec<Knob>, predicted: &[(&str, usize)]| DevicePlan {
            device: String::new(),
            base: Tuner::default(),
            key: String::new(),
            knobs,
            predicted: predicted.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
            sample: 1,
        };
        let plans = [
            plan(
                vec![
                    Knob::batch([32, 64, 128]),
                    Knob::local_size([256, 64, 512, 0]),
                ],
                &[(BATCH, 64), (LOCAL_SIZE, 256)],
            ),
            plan(
                vec![Knob::own("tile_rows", [1, 2, 100_000]), Knob::batch([8])],
                &[("tile_rows", 2), (BATCH, 8)],
            ),
        ];
        // The widest candidate either device can time.
        assert_eq!(plans[0].widest_setting(), "batch=128 local_size=512".len());
        assert_eq!(plans[1].widest_setting(), "batch=8 tile_rows=100000".len());
        let columns = TuneTable::new(["gfx90a", long], plans.iter().map(|p| p.widest_setting()));
        let rows = [
            row("gfx90a", &[(BATCH, 64), (LOCAL_SIZE, 256)], 0.5, columns),
            row(long, &[(BATCH, 8), ("tile_rows", 100_000)], 123.25, columns),
            row(
                long,
                &[(BATCH, 128), (LOCAL_SIZE, 0)],
                f64::INFINITY,
                columns,
            ),
            row("gfx90a", &[(BATCH, 32), (LOCAL_SIZE, 512)], 0.0625, columns),
        ];
        let header = rows[0].table_header();
        let candidate = header.find("candidate").unwrap();
        let seconds_end = header.find("seconds").unwrap() + "seconds".len();
        let rate_end = header.find("tasks/s").unwrap() + "tasks/s".len();
        assert!(candidate > long.len(), "{header}");
        for r in &rows {
            let line = r.table_line();
            assert_eq!(line[..candidate].trim_end(), r.device, "{header}\n{line}");
            assert!(
                line[candidate..].starts_with(&r.setting_text()),
                "{header}\n{line}"
            );
            let secs = if r.failed.is_some() {
                "failed".to_string()
            } else {
                format!("{:.4}", r.seconds)
            };
            assert_eq!(
                &line[seconds_end - secs.len()..seconds_end],
                secs,
                "{header}\n{line}"
            );
            if r.failed.is_none() {
                let rate = format!("{:.1}", r.tasks as f64 / r.seconds);
                assert_eq!(
                    &line[rate_end - rate.len()..rate_end],
                    rate,
                    "{header}\n{line}"
                );
            } else {
                assert!(line.ends_with("  local size 1024 > 512"), "{line}");
            }
        }
        assert!(rows[0].table_line().ends_with("yes"));
    }
}
