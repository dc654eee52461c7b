//! The plugin API: what a user writes to run a new workload on every unit.
//!
//! A [`Plugin`] is found by name and prepares a [`Job`] from the run plan: the task space, a CPU
//! half and/or a GPU half, and how per-task records become output files. Halves create per-unit
//! workers once (heaps, device buffers) and then run chunks of tasks, writing a fixed number of
//! `u64` words per task into a [`RecordsOut`] (typed through [`Record`]). A [`GpuHalf`] is typed:
//! its per-device data is its own `Shared` type, its launch parameters [`LaunchParams`] from the
//! [`Tuner`], and its kernels [`KernelSource`]s it declares; the runtime erases those types once,
//! privately, through [`Gpu`]. The runtime gathers the records (across nodes too)
//! and hands them to [`Job::finish`] on rank 0. Bulk output (distance rows) is written by the
//! workers themselves at fixed file offsets, so no process holds it whole.
//!
//! `prepare` reads and checks, and writes nothing: a job declares its bulk files
//! ([`Job::bulk_outputs`]), and the runtime opens them in the run's staging directory when the
//! run starts, after every check passed.

use crate::config::Plan;
use crate::device::DeviceInfo;
use crate::device::{Device, KernelSource, Queue};
use crate::sink::NpyRows;
use crate::tuning::{characterizations, default_candidates, Knob, LaunchParams, Tuner};
use crate::Result;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A registered workload.
pub trait Plugin: Sync {
    /// Name used in `run.plugin`.
    fn name(&self) -> &'static str;
    /// One line for `tuccompi plugins`.
    fn description(&self) -> &'static str;
    /// Read the input and options and set up a job. Runs on every node.
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>>;
    /// Config tables this plugin reads besides its own `[NAME]` (the built-in graph plugins
    /// read `[input]`), through [`PrepareCtx::options`]. A config's table that no plugin of the
    /// binary names or reads is refused as unknown. Default none.
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
}

/// What a plugin gets to prepare a job.
pub struct PrepareCtx<'a> {
    /// The validated plan.
    pub plan: &'a Plan,
    /// Under MPI, the ranks of this job making bytes together: once per machine, mapped by its
    /// ranks (the built-in graph plugins share their input graph so), or once per job.
    pub share: Option<&'a dyn crate::node::share::Share>,
    /// `tuccompi check`: prepare writes nothing anywhere (no cache file; caches are only read).
    pub dry_run: bool,
    /// Tasks an unfinished run that this one resumes has already done (0 for a fresh run):
    /// preprocessing that pays only over many tasks can weigh the ones left.
    pub done_tasks: usize,
    /// The OpenCL devices the plan selects, counted (the runtime discovers them in a thread
    /// meanwhile: this waits for it). Ask only when the answer matters.
    pub devices: &'a (dyn Fn() -> DeviceCount + Sync),
    /// The runtime's early free-space check ([`PrepareCtx::check_space`]); `None` where no
    /// check is due (`tuccompi check`, ranks other than 0).
    pub space: Option<&'a (dyn Fn(OutputSize) -> Result<()> + Sync)>,
}

/// What a job will write, known once its input is read and before its expensive
/// preprocessing: for [`PrepareCtx::check_space`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputSize {
    /// Tasks of the run.
    pub tasks: usize,
    /// `u64` words of each task's record.
    pub record_words: usize,
    /// Bytes of the bulk outputs ([`Job::bulk_outputs`]) and of what [`Job::finish`] writes
    /// beyond the records ([`Job::finish_bytes`]).
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
    /// The plugin's own config table (`[table]`) as `T` (a serde struct; use
    /// `#[serde(deny_unknown_fields)]` so a misspelt key is an error naming it).
    /// A bad value is an error naming `table.key` and where it was set ([`Plan::options`]).
    pub fn options<T: serde::de::DeserializeOwned>(&self, table: &str) -> Result<T> {
        self.plan.options(table)
    }

    /// Refuse now, before expensive preprocessing (a hierarchy build), a run whose outputs
    /// cannot fit on the output directory's disk: call it as soon as the input tells the
    /// outputs' size. The same error the runtime gives before it writes (where it checks
    /// again, with every byte the job declares); nothing is checked in `tuccompi check`.
    pub fn check_space(&self, size: OutputSize) -> Result<()> {
        match self.space {
            Some(check) => check(size),
            None => Ok(()),
        }
    }
}

/// One prepared run of a plugin.
pub trait Job: Sync {
    /// Number of tasks (the workspace).
    fn tasks(&self) -> usize;
    /// `u64` words each task writes into its record.
    fn record_words(&self) -> usize;
    /// Input facts for the report (`n`, `m`, ...), as JSON.
    fn describe(&self) -> serde_json::Value;
    /// What identifies this work's speed across runs (the speed history's key, beside the
    /// plugin and the unit class): its algorithm and input size, nothing that changes from
    /// run to run. Default: [`describe`](Job::describe) without its `*_seconds` fields.
    fn workload(&self) -> serde_json::Value {
        fn strip(v: &mut serde_json::Value) {
            if let Some(o) = v.as_object_mut() {
                o.retain(|k, _| !k.ends_with("_seconds"));
                o.values_mut().for_each(strip);
            }
        }
        let mut d = self.describe();
        strip(&mut d);
        d
    }
    /// How `[verify]` compares an accelerator's record of a task with the CPU half's: word for
    /// word (the default), or some words as `f64` within a relative tolerance, for halves whose
    /// floating-point results may differ in the last bits (a device's `exp`, fused
    /// multiply-adds).
    fn tolerance(&self) -> Tolerance {
        Tolerance::exact()
    }
    /// The files the job reads (its input graph, a points file, a queries file), declared in
    /// `prepare`. The run's identity holds a fingerprint of each ([`crate::input`]: path,
    /// size, modification time, inode and sampled blocks, never the whole file), so `--resume`
    /// refuses, naming the file, when one changed since the unfinished run. Default none.
    fn inputs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// What `tuccompi check` prints about the job's plan besides [`describe`](Job::describe),
    /// as (label, text) lines: its input, the tasks it chose. Default none.
    fn check_lines(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The CPU half, if the plugin has one.
    fn cpu(&self) -> Option<&dyn CpuHalf> {
        None
    }
    /// The GPU half, if the plugin has one: `Some(Gpu::new(self))`.
    fn gpu(&self) -> Option<Gpu<'_>> {
        None
    }
    /// Whether the job can spread over several MPI nodes (its results are all in its records
    /// or in rows written at offsets). A job that keeps its result in memory says no.
    fn multi_node(&self) -> bool {
        true
    }
    /// Whether, when the run has GPU queues, CPU workers should stay idle (a job of one big
    /// task that a device runs best, such as Floyd-Warshall on the whole matrix).
    fn prefers_gpu(&self) -> bool {
        false
    }
    /// Files the workers write at fixed offsets while the run goes (`distances.npy`), declared
    /// in `prepare` without touching the disk. The runtime checks their size against the free
    /// space, opens them in the run's staging directory before the first chunk (created on
    /// rank 0, reopened by other ranks and when resuming), and syncs them before each journal
    /// sync, so a journaled task's rows are on disk.
    fn bulk_outputs(&self) -> Vec<&NpyRows> {
        Vec::new()
    }
    /// Bytes of the files [`finish`](Job::finish) writes beyond the records' own (`od.npz`, a
    /// copy of a bulk file), for the free-space check. Default 0.
    fn finish_bytes(&self) -> u64 {
        0
    }
    /// Turn the records of every task into output files under `dir` (the run's staging
    /// directory; its files move into the output directory when the run succeeds); return the
    /// checksum object for `report.json`. Called once, on the root node, after every task
    /// finished.
    fn finish(&self, records: &Records, dir: &Path) -> Result<serde_json::Value>;

    // Tuning: what `tune` times on each device.

    /// The knobs `tune` times on `device`, given the launch parameters the rules predict there
    /// (`predicted`), in the order it sweeps them: [`Knob::batch`], [`Knob::local_size`] and
    /// knobs of the plugin's own ([`Knob::own`], read back in the GPU half with
    /// [`LaunchParams::knob`]). Default: [`default_candidates`] (the batch around the
    /// prediction, then the usual local sizes). The winners are stored under the key the GPU
    /// half's [`Request::cache_name`](crate::tuning::Request::cache_name) names.
    fn tune_candidates(&self, device: &DeviceInfo, predicted: &LaunchParams) -> Vec<Knob> {
        default_candidates(device, predicted)
    }
}

/// The CPU half of a plugin: makes one worker per CPU unit.
pub trait CpuHalf: Sync {
    /// Per-worker state, set up once and reused across chunks.
    fn worker(&self) -> Result<Box<dyn Worker + '_>>;
}

/// The GPU half of a plugin: choose launch parameters and set up each device once, then make one
/// worker per in-order queue.
///
/// The runtime calls, per selected device: [`params`](GpuHalf::params) (also what `tuccompi
/// check` prints), then [`setup`](GpuHalf::setup) with those parameters, then
/// [`worker`](GpuHalf::worker) once per queue (`params.queues`), on that queue's unit thread.
/// Each queue's unit asks for `params.batch` tasks per chunk unless `scheduler.gpu_chunk` says
/// otherwise. A [`Job`] hands its GPU half to the runtime as [`Gpu::new(self)`](Gpu::new).
pub trait GpuHalf: Sync {
    /// What [`setup`](GpuHalf::setup) leaves on each device for all its queues: uploaded data
    /// and whatever of the launch parameters the workers need. Workers borrow it.
    type Shared: Send + Sync;
    /// The kernel files this half launches (each embedded by the plugin with `include_str!`).
    /// The runtime checks their characterizations before [`params`](GpuHalf::params).
    fn kernels(&self) -> &'static [KernelSource];
    /// Launch parameters on `device`, from [`Tuner::params`] with the characterizations of the
    /// kernels this half launches (and values of its config table). Uploads nothing.
    fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams>;
    /// Upload shared data to `device` and build its programs (so a build error is reported
    /// once, with its log).
    fn setup(&self, device: &Device, params: &LaunchParams) -> Result<Self::Shared>;
    /// A worker that owns `queue`, one in-order queue of `device`.
    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a Self::Shared,
        queue: Queue,
    ) -> Result<impl Worker + 'a>;
}

/// A GPU half that uploads nothing and needs only its programs: implement this instead of
/// [`GpuHalf`] and its `Shared` type is the [`LaunchParams`] (each queue's worker gets them),
/// its `setup` builds every kernel file of [`kernels`](SimpleGpuHalf::kernels) with
/// [`build_options`](SimpleGpuHalf::build_options) (so a build error takes the device out
/// before any queue starts). `examples/options.rs` is one.
pub trait SimpleGpuHalf: Sync {
    /// The kernel files this half launches (each embedded by the plugin with `include_str!`).
    fn kernels(&self) -> &'static [KernelSource];
    /// OpenCL build options of those files (default none).
    fn build_options(&self) -> &str {
        ""
    }
    /// Launch parameters on `device` ([`GpuHalf::params`]).
    fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams>;
    /// A worker that owns `queue`, one in-order queue of `device`.
    fn worker<'a>(
        &'a self,
        device: &'a Device,
        params: &'a LaunchParams,
        queue: Queue,
    ) -> Result<impl Worker + 'a>;
}

impl<T: SimpleGpuHalf> GpuHalf for T {
    type Shared = LaunchParams;
    fn kernels(&self) -> &'static [KernelSource] {
        SimpleGpuHalf::kernels(self)
    }
    fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        SimpleGpuHalf::params(self, device, tuner)
    }
    fn setup(&self, device: &Device, params: &LaunchParams) -> Result<LaunchParams> {
        for k in SimpleGpuHalf::kernels(self) {
            device.program(k, self.build_options())?;
        }
        Ok(params.clone())
    }
    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a LaunchParams,
        queue: Queue,
    ) -> Result<impl Worker + 'a> {
        SimpleGpuHalf::worker(self, device, shared, queue)
    }
}

/// A job's GPU half as the runtime holds it: [`GpuHalf`] with its `Shared` type erased (the one
/// place that happens). Made by [`Gpu::new`] in [`Job::gpu`].
#[derive(Clone, Copy)]
pub struct Gpu<'a>(&'a dyn erased::ErasedGpu);

impl std::fmt::Debug for Gpu<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gpu")
    }
}

impl<'a> Gpu<'a> {
    /// The runtime's handle on `half`.
    pub fn new<H: GpuHalf>(half: &'a H) -> Self {
        Gpu(half)
    }
    /// Launch parameters on `device` (after checking every declared kernel file's
    /// characterizations).
    pub fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        self.0.params(device, tuner)
    }
    /// Set the half up on `device` with `params`.
    pub fn setup(&self, device: Arc<Device>, params: &LaunchParams) -> Result<GpuOnDevice<'a>> {
        self.0
            .setup(device, params)
            .map(|d| GpuOnDevice(Arc::from(d)))
    }
}

/// A GPU half set up on one device: its shared data, from which each queue's worker is made.
/// Cloned into every queue's unit.
#[derive(Clone)]
pub struct GpuOnDevice<'a>(Arc<dyn erased::ErasedOnDevice + 'a>);

impl std::fmt::Debug for GpuOnDevice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuOnDevice")
    }
}

impl GpuOnDevice<'_> {
    /// A worker that owns `queue`.
    pub fn worker(&self, queue: Queue) -> Result<Box<dyn Worker + '_>> {
        self.0.worker(queue)
    }
}

/// The type erasure the runtime needs, done once: a `GpuHalf` with any `Shared` behind one
/// object-safe trait, and the device it was set up on with its shared data behind another.
mod erased {
    use super::*;

    pub(super) trait ErasedGpu: Sync {
        fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams>;
        fn setup<'a>(
            &'a self,
            device: Arc<Device>,
            params: &LaunchParams,
        ) -> Result<Box<dyn ErasedOnDevice + 'a>>;
    }

    pub(super) trait ErasedOnDevice: Send + Sync {
        fn worker(&self, queue: Queue) -> Result<Box<dyn Worker + '_>>;
    }

    struct OnDevice<'a, H: GpuHalf> {
        half: &'a H,
        device: Arc<Device>,
        shared: H::Shared,
    }

    impl<H: GpuHalf> ErasedGpu for H {
        fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
            for k in self.kernels() {
                characterizations(k)?;
            }
            GpuHalf::params(self, device, tuner)
        }
        fn setup<'a>(
            &'a self,
            device: Arc<Device>,
            params: &LaunchParams,
        ) -> Result<Box<dyn ErasedOnDevice + 'a>> {
            let shared = GpuHalf::setup(self, &device, params)?;
            Ok(Box::new(OnDevice {
                half: self,
                device,
                shared,
            }))
        }
    }

    impl<H: GpuHalf> ErasedOnDevice for OnDevice<'_, H> {
        fn worker(&self, queue: Queue) -> Result<Box<dyn Worker + '_>> {
            let w = self.half.worker(&self.device, &self.shared, queue)?;
            Ok(Box::new(w))
        }
    }
}

/// Runs chunks of tasks on one unit.
pub trait Worker: Send {
    /// Run tasks `range` and write each task's record into `out`.
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()>;
    /// Tasks this worker runs together for about the cost of one group (PHAST's trees per
    /// sweep: a chunk of 1 task costs as much as one of k). The work queue then hands a CPU
    /// worker its first chunk as one group and sizes its chunks in whole groups, so that its
    /// speed is measured, and its tasks run, at the rate a full group gives. Default 1.
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

/// A typed view of a task's record: how a value is laid out in `u64` words (a 128-bit sum
/// takes two), and what each word holds ([`fields`](Record::fields): names and types, so that
/// `[verify]` compares floats within a tolerance and prints a mismatch decoded). Write with
/// [`RecordsOut::put`], read with [`Records::read`].
pub trait Record: Sized {
    /// Words per record ([`Job::record_words`]).
    const WORDS: usize;
    /// Lay `self` out in `words` (`WORDS` long).
    fn to_words(&self, words: &mut [u64]);
    /// Read a record back from `words` (`WORDS` long).
    fn from_words(words: &[u64]) -> Self;
    /// The record's fields, one per word, in order (default: `WORDS` `u64` words named
    /// `word0`, `word1`, ...). A job hands them to `[verify]` through [`Job::tolerance`]
    /// ([`Tolerance::of`]).
    fn fields() -> Vec<Field> {
        (0..Self::WORDS)
            .map(|i| Field::new(format!("word{i}"), FieldType::U64))
            .collect()
    }
}

/// `N` plain words.
impl<const N: usize> Record for [u64; N] {
    const WORDS: usize = N;
    fn to_words(&self, words: &mut [u64]) {
        words.copy_from_slice(self);
    }
    fn from_words(words: &[u64]) -> Self {
        let mut r = [0; N];
        r.copy_from_slice(words);
        r
    }
}

/// What one word of a record holds. Each field takes one `u64` word; a 32-bit value sits in
/// its low half ([`FieldType::f32_word`], [`FieldType::f32`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// An unsigned integer (compared exactly).
    U64,
    /// A signed integer, two's complement (compared exactly).
    I64,
    /// A `u32` in the low half (compared exactly).
    U32,
    /// An `i32` in the low half, two's complement (compared exactly).
    I32,
    /// An `f32`'s bits (`f32::to_bits`) in the low half, compared within the `f32` tolerance.
    F32,
    /// An `f64`'s bits (`f64::to_bits`), compared within the `f64` tolerance.
    F64,
}

impl FieldType {
    /// The word that holds an `f32`.
    pub fn f32_word(x: f32) -> u64 {
        x.to_bits() as u64
    }
    /// The `f32` a word holds.
    pub fn f32(word: u64) -> f32 {
        f32::from_bits(word as u32)
    }
    /// The word that holds an `i32`.
    pub fn i32_word(x: i32) -> u64 {
        x as u32 as u64
    }
    /// A word decoded as this type, as messages show it (`1.5`, `-3`).
    pub fn show(self, w: u64) -> String {
        match self {
            FieldType::U64 => w.to_string(),
            FieldType::I64 => (w as i64).to_string(),
            FieldType::U32 => (w as u32).to_string(),
            FieldType::I32 => (w as u32 as i32).to_string(),
            FieldType::F32 => format!("{:?}", FieldType::f32(w)),
            FieldType::F64 => format!("{:?}", f64::from_bits(w)),
        }
    }
}

/// One named field of a record ([`Record::fields`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name, as messages show it.
    pub name: String,
    /// What its word holds.
    pub ty: FieldType,
}

impl Field {
    /// The field `name` of type `ty`.
    pub fn new(name: impl Into<String>, ty: FieldType) -> Field {
        Field {
            name: name.into(),
            ty,
        }
    }
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

/// How `[verify]` compares two records of one task ([`Job::tolerance`]): integer fields
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

/// Records of one chunk, written by a worker.
#[derive(Debug)]
pub struct RecordsOut<'a> {
    start: usize,
    words: usize,
    data: &'a mut [u64],
}

impl<'a> RecordsOut<'a> {
    /// A view over `data` for the tasks starting at `start`, `words` per task.
    pub fn new(start: usize, words: usize, data: &'a mut [u64]) -> Self {
        RecordsOut { start, words, data }
    }
    /// The record of task `task` (absolute task index).
    pub fn record(&mut self, task: usize) -> &mut [u64] {
        let i = (task - self.start) * self.words;
        &mut self.data[i..i + self.words]
    }
    /// Write `record` as the record of task `task`.
    pub fn put<R: Record>(&mut self, task: usize, record: &R) {
        debug_assert_eq!(R::WORDS, self.words, "record type of the wrong width");
        record.to_words(self.record(task));
    }
}

/// Records of every task, `words` per task, in task order.
#[derive(Debug, Clone)]
pub struct Records {
    /// Words per task.
    pub words: usize,
    /// `tasks * words` words.
    pub data: Vec<u64>,
}

impl Records {
    /// The record of `task`.
    pub fn get(&self, task: usize) -> &[u64] {
        &self.data[task * self.words..(task + 1) * self.words]
    }
    /// The record of `task` as `R`.
    pub fn read<R: Record>(&self, task: usize) -> R {
        debug_assert_eq!(R::WORDS, self.words, "record type of the wrong width");
        R::from_words(self.get(task))
    }
}
