//! The plugin API: what a user writes to run a new workload on every unit.
//!
//! Three traits. A [`Plugin`] is found by name and prepares a [`Job`] from the run plan. The
//! job says how many tasks there are and how many `u64` words each task's record takes, makes
//! the workers of its CPU half ([`Job::cpu_worker`]) and of its GPU half ([`Job::gpu_worker`],
//! one per in-order queue of each device, after [`Job::gpu_setup`] uploaded what the device's
//! queues share), and turns the records into files ([`Job::finish`]). A [`Worker`] runs chunks
//! of tasks and writes each task's record into a [`RecordsOut`] (typed through [`Record`]); a
//! closure is one ([`worker`]). The runtime gathers the records (across nodes too) and hands
//! them to [`Job::finish`] on rank 0. Bulk output (rows of a matrix) is written by the workers
//! themselves at fixed file offsets ([`Details::bulk`]), so no process holds it whole.
//!
//! `prepare` reads and checks, and writes nothing: a job declares its bulk files, and the
//! runtime opens them in the run's staging directory when the run starts, after every check
//! passed. What few jobs need (bulk files, input files, tolerances, a job that must run on one
//! node) is grouped in [`Details`].

use crate::config::Plan;
use crate::device::{DBuf, Device, DeviceInfo, Kernel, KernelSource, Queue, Scalar};
pub use crate::sink::records::{Field, FieldType, Record, Records, RecordsOut};
use crate::sink::NpyRows;
pub use crate::sink::Out;
use crate::tuning::{
    characterizations, default_candidates, kernel_names, Knob, LaunchParams, Request, Shape, Tuner,
};
use crate::{Error, Result};
use std::any::Any;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

/// A registered workload.
pub trait Plugin: Sync {
    /// Name used in `run.plugin`.
    fn name(&self) -> &'static str;
    /// One line for the `plugins` command.
    fn description(&self) -> &'static str;
    /// Read the input and options and set up a job. Runs on every node.
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>>;
    /// Config tables this plugin reads besides its own `[NAME]` (the built-in graph plugins
    /// read `[input]`), through [`PrepareCtx::options`]. A config's table that no plugin of the
    /// binary names or reads is refused as unknown. Default none.
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    /// Keys this plugin took over from the framework's `[run]` and `[output]` tables, as
    /// (former dotted key, key in the plugin's own table): `("run.sources", "sources")`. A
    /// config that still sets one under its former name runs as if it set the new one, with
    /// a one-line warning naming it. Default none.
    fn renamed_keys(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Whether this plugin reads `run.tasks` (which of its tasks run; the graph plugins take
    /// them as source vertex ids). A plugin that does not runs every task, and a config that
    /// sets `run.tasks` to anything but `"all"` for it is refused rather than ignored.
    /// Default false.
    fn selects_tasks(&self) -> bool {
        false
    }
}

/// What a plugin gets to prepare a job.
pub struct PrepareCtx<'a> {
    /// The validated plan.
    pub plan: &'a Plan,
    /// Under MPI, the ranks of this job making bytes together: once per machine, mapped by its
    /// ranks (the built-in graph plugins share their input graph so), or once per job.
    pub share: Option<&'a dyn crate::share::Share>,
    /// `check`: prepare writes nothing anywhere (no cache file; caches are only read).
    pub dry_run: bool,
    /// Tasks an unfinished run that this one resumes has already done (0 for a fresh run):
    /// preprocessing that pays only over many tasks can weigh the ones left.
    pub done_tasks: usize,
    /// The OpenCL devices the plan selects, counted (the runtime discovers them in a thread
    /// meanwhile: this waits for it). Ask only when the answer matters.
    pub devices: &'a (dyn Fn() -> DeviceCount + Sync),
    /// The runtime's early free-space check ([`PrepareCtx::check_space`]); `None` where no
    /// check is due (`check`, ranks other than 0).
    pub space: Option<&'a (dyn Fn(OutputSize) -> Result<()> + Sync)>,
    /// The host data of the session this job is one of ([`PrepareCtx::keep`]); `None` for a
    /// run of its own.
    pub kept: Option<&'a crate::session::Kept>,
}

/// What a job will write, known once its input is read and before its expensive
/// preprocessing: for [`PrepareCtx::check_space`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputSize {
    /// Tasks of the run.
    pub tasks: usize,
    /// `u64` words of each task's record.
    pub record_words: usize,
    /// Bytes of the bulk outputs ([`Details::bulk`]) and of what [`Job::finish`] writes
    /// beyond the records ([`Details::finish_bytes`]).
    pub bulk_bytes: u64,
}

/// The OpenCL devices a plan selects, as preprocessing weighs them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCount {
    /// Devices of type GPU or accelerator.
    pub gpus: usize,
    /// Compute units of CPU-type devices (PoCL): cores that also run the CPU workers.
    pub cpu_units: usize,
}

impl DeviceCount {
    /// Count `devices`.
    pub fn of(devices: &[std::sync::Arc<crate::device::Device>]) -> DeviceCount {
        let mut c = DeviceCount::default();
        for d in devices {
            if d.info.kind == "cpu" {
                c.cpu_units += d.info.compute_units as usize;
            } else {
                c.gpus += 1;
            }
        }
        c
    }
}

impl std::fmt::Debug for PrepareCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrepareCtx")
            .field("plan", &self.plan.config_path)
            .field("share", &self.share.is_some())
            .field("dry_run", &self.dry_run)
            .field("done_tasks", &self.done_tasks)
            .finish()
    }
}

impl PrepareCtx<'_> {
    /// What the session keeps under `key`, else `make()`'s value (with its size in bytes),
    /// kept for the session's next jobs ([`crate::session::Kept::get_or_make`]). Key it by
    /// what the value is made from (the input's fingerprint and the parameters), since jobs
    /// on other inputs share the store. A run of its own makes the value every time.
    pub fn keep<T: std::any::Any + Send + Sync>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<(T, u64)>,
    ) -> Result<std::sync::Arc<T>> {
        match self.kept {
            Some(k) => k.get_or_make(key, make),
            None => make().map(|(v, _)| std::sync::Arc::new(v)),
        }
    }

    /// The plugin's own config table (`[table]`) as `T` (a serde struct; use
    /// `#[serde(deny_unknown_fields)]` so a misspelt key is an error naming it).
    /// A bad value is an error naming `table.key` and where it was set ([`Plan::options`]).
    pub fn options<T: serde::de::DeserializeOwned>(&self, table: &str) -> Result<T> {
        self.plan.options(table)
    }

    /// An error about the key `key` (`myplugin.count`) naming where it was set: for a value
    /// the plugin refuses after reading it.
    pub fn refuse(&self, key: &str, message: impl Into<String>) -> Error {
        self.plan.origins.error(key, message.into())
    }

    /// Refuse now, before expensive preprocessing (a hierarchy build), a run whose outputs
    /// cannot fit on the output directory's disk: call it as soon as the input tells the
    /// outputs' size. The same error the runtime gives before it writes (where it checks
    /// again, with every byte the job declares); nothing is checked in `check`.
    pub fn check_space(&self, size: OutputSize) -> Result<()> {
        match self.space {
            Some(check) => check(size),
            None => Ok(()),
        }
    }
}

/// One prepared run of a plugin: its tasks, its halves, its outputs.
///
/// Required: [`tasks`](Job::tasks) and a half: [`cpu_worker`](Job::cpu_worker), and/or
/// [`kernels`](Job::kernels) with [`gpu_worker`](Job::gpu_worker) for a GPU half. A job whose
/// results are rows of a file ([`Details::bulk`]) needs no records and no `finish`.
pub trait Job: Sync {
    /// Number of tasks (the workspace).
    fn tasks(&self) -> usize;
    /// `u64` words each task writes into its record ([`Record::WORDS`] of its record type).
    /// Default 0: a job whose results are all in its bulk files ([`Details::bulk`]).
    fn record_words(&self) -> usize {
        0
    }
    /// Turn the records of every task into output files through `out` (the run's staging
    /// directory, whose files move into the output directory when the run succeeds, or memory
    /// for an in-memory run: [`Out::write_file`], [`Out::write_stream`]); return the checksum
    /// object for `report.json`. Called once, on the root node, after every task finished.
    /// Default: writes nothing and returns [`checksums`] (the xxh3 of the records and of each
    /// bulk file).
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        let _ = out;
        checksums(self.tasks(), records, &self.details().bulk)
    }
    /// Input facts for the report (sizes, options), as JSON. Default none.
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    /// A worker of the CPU half, made once per CPU unit on that unit's thread (its state,
    /// such as a heap, is reused across chunks): a closure through [`worker`], or a type of
    /// the plugin's that implements [`Worker`]. Default: no CPU half (say so in
    /// [`Details::cpu_half`]).
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Err(Error::Config(
            "the job's Details say it has a CPU half, but it does not make CPU workers (a bug in \
             the plugin: implement Job::cpu_worker, or set Details::cpu_half to false)"
                .into(),
        ))
    }

    /// The kernel files of the GPU half (each embedded with `include_str!`): a job with none
    /// (the default) has no GPU half. The runtime checks their characterizations first.
    fn kernels(&self) -> &'static [KernelSource] {
        &[]
    }
    /// Launch parameters on `device`, from [`Tuner::params`] with the characterizations of the
    /// kernels the half launches; uploads nothing (also what `check` prints). Default: every
    /// kernel of the first file in [`kernels`](Job::kernels), one work-item per task.
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        let file = self.kernels().first().ok_or_else(|| {
            Error::Config("gpu_params of a job with no kernels (a bug in the plugin)".into())
        })?;
        let names = kernel_names(&file.load()?.source);
        let names: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        tuner.params(&device.info, Request::new(file, &names, Shape::items(1)))
    }
    /// Set the half up on `device` once, for all its queues: upload what they share and
    /// return it ([`DeviceData::new`]; each queue's worker reads it with [`Gpu::data`]).
    /// Default: build every kernel file (so a build error takes the device out once, with its
    /// log, before any queue starts) and share nothing.
    fn gpu_setup(&self, device: &Device, params: &LaunchParams) -> Result<DeviceData> {
        let _ = params;
        for k in self.kernels() {
            device.program(k, "")?;
        }
        Ok(DeviceData::none())
    }
    /// A worker that owns one in-order queue of a device ([`Gpu`]: the device, its launch
    /// parameters, the queue, the device's shared data).
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let _ = gpu;
        Err(Error::Config(
            "the job declares kernels but makes no GPU workers (a bug in the plugin: implement \
             Job::gpu_worker)"
                .into(),
        ))
    }
    /// The knobs `tune` times on `device`, given the launch parameters the rules predict there
    /// (`predicted`), in the order it sweeps them: [`Knob::batch`], [`Knob::local_size`] and
    /// knobs of the plugin's own ([`Knob::own`], read back with [`LaunchParams::knob`]).
    /// Default: [`default_candidates`] (the batch around the prediction, then the usual local
    /// sizes). The winners are stored under the key the GPU half's
    /// [`Request::cache_name`](crate::tuning::Request::cache_name) names.
    fn tune_candidates(&self, device: &DeviceInfo, predicted: &LaunchParams) -> Vec<Knob> {
        default_candidates(device, predicted)
    }

    /// What few jobs need: bulk files, input files, tolerances, placement. Default
    /// [`Details::default`].
    fn details(&self) -> Details<'_> {
        Details::default()
    }
}

/// The rarely needed parts of a [`Job`], grouped ([`Job::details`]): start from
/// `Details::default()` and set what the job needs.
#[derive(Debug, Clone)]
pub struct Details<'a> {
    /// Whether the job has a CPU half ([`Job::cpu_worker`]). Default true.
    pub cpu_half: bool,
    /// Files the workers write at fixed offsets while the run goes (rows of a matrix),
    /// declared in `prepare` without touching the disk. The runtime checks their size against
    /// the free space, opens them in the run's staging directory before the first chunk
    /// (created on rank 0, reopened by other ranks and when resuming), and syncs them before
    /// each journal sync, so a journaled task's rows are on disk. Default none.
    pub bulk: Vec<&'a NpyRows>,
    /// Bytes of the files [`Job::finish`] writes beyond the records' own, for the free-space
    /// check. Default 0.
    pub finish_bytes: u64,
    /// The files the job reads, declared in `prepare`. The run's identity holds a fingerprint
    /// of each ([`crate::input`]: path, size, modification time, inode and sampled blocks,
    /// never the whole file), so `--resume` refuses, naming the file, when one changed since
    /// the unfinished run. Default none.
    pub inputs: Vec<PathBuf>,
    /// How `[verify]` compares an accelerator's record of a task with the CPU half's: word for
    /// word (the default), or floats within a tolerance ([`Tolerance::of`]), for halves whose
    /// floating-point results may differ in the last bits.
    pub tolerance: Tolerance,
    /// What `check` prints about the job's plan besides [`Job::describe`], as (label, text)
    /// lines. Default none.
    pub check_lines: Vec<(String, String)>,
    /// Whether the job can spread over several MPI nodes (its results are all in its records
    /// or in rows written at offsets). Default true; a job that keeps its result in memory
    /// says no.
    pub multi_node: bool,
    /// Whether, when the run has GPU queues, CPU workers should stay idle (a job of one big
    /// task that a device runs best). Default false.
    pub prefers_gpu: bool,
    /// What identifies this work's speed across runs (the speed history's key, beside the
    /// plugin and the unit class): its algorithm and input size, nothing that changes from
    /// run to run. Default (`None`): [`Job::describe`] without its `*_seconds` fields.
    pub workload: Option<serde_json::Value>,
}

impl Default for Details<'_> {
    fn default() -> Self {
        Details {
            cpu_half: true,
            bulk: Vec::new(),
            finish_bytes: 0,
            inputs: Vec::new(),
            tolerance: Tolerance::exact(),
            check_lines: Vec::new(),
            multi_node: true,
            prefers_gpu: false,
            workload: None,
        }
    }
}

/// The default [`Job::finish`]'s checksum object: the `tasks` count, the xxh3-64 (hex) of the
/// records' words (little-endian) when a task has any, and of each bulk file, under
/// its name: `{"tasks": 384, "counts.npy": "9f0c..."}`.
pub fn checksums(tasks: usize, records: &Records, bulk: &[&NpyRows]) -> Result<serde_json::Value> {
    let mut sums = serde_json::json!({ "tasks": tasks });
    if records.words > 0 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        records.data.iter().for_each(|w| h.update(&w.to_le_bytes()));
        sums["records"] = format!("{:016x}", h.digest()).into();
    }
    for b in bulk {
        sums[b.name()] = b.hash()?.into();
    }
    Ok(sums)
}

/// The speed history's key of `job` ([`Details::workload`]).
pub(crate) fn workload(job: &dyn Job) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        if let Some(o) = v.as_object_mut() {
            o.retain(|k, _| !k.ends_with("_seconds"));
            o.values_mut().for_each(strip);
        }
    }
    job.details().workload.unwrap_or_else(|| {
        let mut d = job.describe();
        strip(&mut d);
        d
    })
}

/// Whether `job` has a GPU half.
pub(crate) fn has_gpu(job: &dyn Job) -> bool {
    !job.kernels().is_empty()
}

/// What a GPU half's queues share on one device ([`Job::gpu_setup`]): any type of the
/// plugin's, read back by each queue's worker with [`Gpu::data`].
pub struct DeviceData(Box<dyn Any + Send + Sync>);

impl std::fmt::Debug for DeviceData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceData")
    }
}

impl DeviceData {
    /// `data`, shared by the device's queues.
    pub fn new<T: Any + Send + Sync>(data: T) -> DeviceData {
        DeviceData(Box::new(data))
    }
    /// Nothing shared.
    pub fn none() -> DeviceData {
        DeviceData::new(())
    }
}

/// What a GPU worker gets ([`Job::gpu_worker`]): its device, the launch parameters chosen
/// there, its own in-order queue, and the data [`Job::gpu_setup`] left on the device.
#[derive(Debug)]
pub struct Gpu<'a> {
    /// The device.
    pub device: &'a Device,
    /// Its launch parameters ([`Job::gpu_params`]).
    pub params: &'a LaunchParams,
    /// The worker's queue.
    pub queue: Queue,
    data: &'a DeviceData,
}

impl<'a> Gpu<'a> {
    /// What the runtime hands [`Job::gpu_worker`]; for driving a GPU half by hand (a test, a
    /// benchmark): `data` is what [`Job::gpu_setup`] returned for `device`.
    pub fn new(
        device: &'a Device,
        params: &'a LaunchParams,
        queue: Queue,
        data: &'a DeviceData,
    ) -> Gpu<'a> {
        Gpu {
            device,
            params,
            queue,
            data,
        }
    }
    /// The data [`Job::gpu_setup`] returned for this device, as the type it was made with.
    pub fn data<T: Any + Send + Sync>(&self) -> Result<&'a T> {
        self.data.0.downcast_ref().ok_or_else(|| {
            Error::Config(format!(
                "Gpu::data::<{}>: the job's gpu_setup shared another type (a bug in the plugin)",
                std::any::type_name::<T>()
            ))
        })
    }
    /// Kernel `name` of `file`, built without options (built once per device and reused).
    pub fn kernel(&self, file: &KernelSource, name: &str) -> Result<Kernel> {
        self.device.kernel(file, "", name)
    }
    /// A buffer of `len` elements on the device.
    pub fn buffer<T: Scalar>(&self, len: usize) -> Result<DBuf<T>> {
        DBuf::new(self.device, len)
    }
    /// The local size chosen for kernel `name`.
    pub fn local(&self, name: &str) -> Result<usize> {
        self.params.local(name)
    }
    /// Tasks per batch chosen for this device.
    pub fn batch(&self) -> usize {
        self.params.batch.value
    }
    /// `tasks` cut into consecutive ranges of at most [`batch`](Gpu::batch) tasks, one launch
    /// each: `for sub in gpu.batches(tasks) { ... }`.
    pub fn batches(&self, tasks: Range<usize>) -> impl Iterator<Item = Range<usize>> {
        let batch = self.batch().max(1);
        tasks
            .clone()
            .step_by(batch)
            .map(move |s| s..(s + batch).min(tasks.end))
    }
}

/// Launch parameters of `job`'s GPU half on `device`, after checking every declared kernel
/// file's characterizations.
pub(crate) fn gpu_params(job: &dyn Job, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
    for k in job.kernels() {
        characterizations(k)?;
    }
    job.gpu_params(device, tuner)
}

/// A job's GPU half set up on one device: its parameters and shared data, from which each
/// queue's worker is made. Cloned into every queue's unit.
#[derive(Clone)]
pub struct GpuOnDevice<'a>(Arc<OnDevice<'a>>);

struct OnDevice<'a> {
    job: &'a dyn Job,
    device: Arc<Device>,
    params: LaunchParams,
    data: DeviceData,
}

impl std::fmt::Debug for GpuOnDevice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuOnDevice({})", self.0.device.info.name)
    }
}

impl<'a> GpuOnDevice<'a> {
    /// Set `job`'s GPU half up on `device` with `params`.
    pub(crate) fn setup(
        job: &'a dyn Job,
        device: Arc<Device>,
        params: &LaunchParams,
    ) -> Result<Self> {
        let data = job.gpu_setup(&device, params)?;
        Ok(GpuOnDevice(Arc::new(OnDevice {
            job,
            device,
            params: params.clone(),
            data,
        })))
    }
    /// A worker that owns `queue`.
    pub(crate) fn worker(&self, queue: Queue) -> Result<Box<dyn Worker + '_>> {
        let d = &*self.0;
        d.job.gpu_worker(Gpu {
            device: &d.device,
            params: &d.params,
            queue,
            data: &d.data,
        })
    }
}

/// Runs chunks of tasks on one unit.
pub trait Worker: Send {
    /// Run tasks `range` and write each task's record into `out`.
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()>;
    /// Tasks this worker runs together for about the cost of one group (trees per sweep: a
    /// chunk of 1 task costs as much as one of k). The work queue then hands a CPU worker its
    /// first chunk as one group and sizes its chunks in whole groups, so that its speed is
    /// measured, and its tasks run, at the rate a full group gives. Default 1.
    fn granule(&self) -> usize {
        1
    }
}

impl<W: Worker + ?Sized> Worker for Box<W> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        (**self).run(range, out)
    }
    fn granule(&self) -> usize {
        (**self).granule()
    }
}

/// A worker from a closure over a chunk of tasks: `worker(move |tasks, out| { ... })`. What
/// it captures (buffers, a queue, a heap) is its per-unit state.
pub fn worker<'a, F>(f: F) -> Box<dyn Worker + 'a>
where
    F: FnMut(Range<usize>, &mut RecordsOut<'_>) -> Result<()> + Send + 'a,
{
    struct Closure<F>(F);
    impl<F> Worker for Closure<F>
    where
        F: FnMut(Range<usize>, &mut RecordsOut<'_>) -> Result<()> + Send,
    {
        fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
            (self.0)(range, out)
        }
    }
    Box::new(Closure(f))
}

/// How far two floats may differ and still agree: by at most `absolute`, or by at most
/// `relative` times the larger magnitude. Both 0 (the default): equal values only. Two NaNs
/// agree.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Within {
    /// The largest difference accepted.
    pub absolute: f64,
    /// The largest difference accepted, relative to the larger magnitude.
    pub relative: f64,
}

impl Within {
    /// Whether `a` and `b` agree.
    pub fn agree(&self, a: f64, b: f64) -> bool {
        let d = (a - b).abs();
        a == b
            || (a.is_nan() && b.is_nan())
            || d <= self.absolute
            || d <= self.relative * a.abs().max(b.abs())
    }
}

/// How `[verify]` compares two records of one task ([`Details::tolerance`]): integer fields
/// exactly, `f32` and `f64` fields within their [`Within`] (absolute or relative; the config's
/// `verify.f32_absolute`, `f32_relative`, `f64_absolute`, `f64_relative` replace the plugin's
/// values). Words beyond the declared fields are compared exactly. A mismatch is shown
/// decoded as the fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tolerance {
    /// The record's fields (empty: every word an unnamed `u64`).
    pub fields: Vec<Field>,
    /// Tolerance of the `f32` fields.
    pub f32: Within,
    /// Tolerance of the `f64` fields.
    pub f64: Within,
}

impl Tolerance {
    /// Every word exactly.
    pub fn exact() -> Self {
        Tolerance::default()
    }

    /// The fields of `R` ([`Record::fields`]), floats compared exactly until
    /// [`f32`](Tolerance::f32) or [`f64`](Tolerance::f64) widens them.
    pub fn of<R: Record>() -> Self {
        Tolerance {
            fields: R::fields(),
            ..Tolerance::default()
        }
    }

    /// Accept `f32` fields that differ by at most `absolute`, or `relative` times the larger.
    pub fn f32(mut self, absolute: f64, relative: f64) -> Self {
        self.f32 = Within { absolute, relative };
        self
    }

    /// Accept `f64` fields that differ by at most `absolute`, or `relative` times the larger.
    pub fn f64(mut self, absolute: f64, relative: f64) -> Self {
        self.f64 = Within { absolute, relative };
        self
    }

    /// Words `f64_words` as `f64` within `relative`; the others exactly `u64`s.
    pub fn f64_words(f64_words: impl IntoIterator<Item = usize>, relative: f64) -> Self {
        let f: Vec<usize> = f64_words.into_iter().collect();
        let len = f.iter().max().map_or(0, |&m| m + 1);
        Tolerance {
            fields: (0..len)
                .map(|i| {
                    let ty = if f.contains(&i) {
                        FieldType::F64
                    } else {
                        FieldType::U64
                    };
                    Field::new(format!("word{i}"), ty)
                })
                .collect(),
            f64: Within {
                absolute: 0.0,
                relative,
            },
            ..Tolerance::default()
        }
    }

    /// This tolerance with the values `[verify]` sets replacing the plugin's.
    pub fn with_config(mut self, c: &crate::config::FloatTolerances) -> Self {
        let set = |w: &mut Within, a: Option<f64>, r: Option<f64>| {
            w.absolute = a.unwrap_or(w.absolute);
            w.relative = r.unwrap_or(w.relative);
        };
        set(&mut self.f32, c.f32_absolute, c.f32_relative);
        set(&mut self.f64, c.f64_absolute, c.f64_relative);
        self
    }

    fn ty(&self, i: usize) -> FieldType {
        self.fields.get(i).map_or(FieldType::U64, |f| f.ty)
    }

    /// Whether records `a` and `b` agree.
    pub fn same(&self, a: &[u64], b: &[u64]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).enumerate().all(|(i, (&x, &y))| {
                x == y
                    || match self.ty(i) {
                        FieldType::F32 => self
                            .f32
                            .agree(FieldType::f32(x) as f64, FieldType::f32(y) as f64),
                        FieldType::F64 => self.f64.agree(f64::from_bits(x), f64::from_bits(y)),
                        _ => false,
                    }
            })
    }

    /// A record as messages show it: `[1, 2]` for plain words, else decoded as its fields
    /// (`{nearest = 3, distance = 0.5}`).
    pub fn show(&self, r: &[u64]) -> String {
        if self.fields.is_empty() {
            let words: Vec<String> = r.iter().map(u64::to_string).collect();
            return format!("[{}]", words.join(", "));
        }
        let fields: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, &w)| match self.fields.get(i) {
                Some(f) => format!("{} = {}", f.name, f.ty.show(w)),
                None => format!("word{i} = {w}"),
            })
            .collect();
        format!("{{{}}}", fields.join(", "))
    }

    /// The fields of `a` that differ from `b`'s beyond the tolerance, as
    /// `name: a against b`.
    pub fn differing(&self, a: &[u64], b: &[u64]) -> Vec<String> {
        (0..a.len().min(b.len()))
            .filter(|&i| self.word_differs(i, a[i], b[i]))
            .map(|i| {
                let (name, ty) = match self.fields.get(i) {
                    Some(f) => (f.name.clone(), f.ty),
                    None => (format!("word{i}"), FieldType::U64),
                };
                format!("{name}: {} against {}", ty.show(a[i]), ty.show(b[i]))
            })
            .collect()
    }

    /// Whether word `i` of two records differs beyond the tolerance of its type.
    fn word_differs(&self, i: usize, x: u64, y: u64) -> bool {
        let one = Tolerance {
            fields: vec![Field::new("", self.ty(i))],
            ..self.clone()
        };
        !one.same(&[x], &[y])
    }

    /// The tolerance in words, for messages (empty when every field is compared exactly).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (ty, w, name) in [
            (FieldType::F32, self.f32, "f32"),
            (FieldType::F64, self.f64, "f64"),
        ] {
            if self.fields.iter().any(|f| f.ty == ty) && w != Within::default() {
                parts.push(format!(
                    "{name} fields within {:e} absolute or {:e} relative",
                    w.absolute, w.relative
                ));
            }
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" beyond the tolerance ({})", parts.join("; "))
        }
    }
}
