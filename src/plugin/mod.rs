//! The plugin API: what a user writes to run a new workload on every unit.
//!
//! A [`Plugin`] is found by name and prepares a [`Job`] from the run plan: the task space, a CPU
//! half and/or a GPU half, and how per-task records become output files. Halves create per-unit
//! workers once (heaps, device buffers) and then run chunks of tasks, writing a fixed number of
//! `u64` words per task into a [`RecordsOut`]. The runtime gathers the records (across nodes too)
//! and hands them to [`Job::finish`] on rank 0. Bulk output (distance rows) is written by the
//! workers themselves at fixed file offsets, so no process holds it whole.

use crate::config::Plan;
use crate::device::Device;
use crate::Result;
use std::ops::Range;
use std::path::Path;

/// A registered workload.
pub trait Plugin: Sync {
    /// Name used in `run.plugin`.
    fn name(&self) -> &'static str;
    /// One line for `tuccompi plugins`.
    fn description(&self) -> &'static str;
    /// Read the input and options and set up a job. Runs on every node.
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>>;
}

/// What a plugin gets to prepare a job.
#[derive(Debug)]
pub struct PrepareCtx<'a> {
    /// The validated plan.
    pub plan: &'a Plan,
    /// The output directory (already created).
    pub out_dir: &'a Path,
    /// True on the node that writes the summary files (rank 0, or the only node).
    pub is_root: bool,
}

/// One prepared run of a plugin.
pub trait Job: Sync {
    /// Number of tasks (the workspace).
    fn tasks(&self) -> usize;
    /// `u64` words each task writes into its record.
    fn record_words(&self) -> usize;
    /// Input facts for the report (`n`, `m`, ...), as JSON.
    fn describe(&self) -> serde_json::Value;
    /// The CPU half, if the plugin has one.
    fn cpu(&self) -> Option<&dyn CpuHalf> {
        None
    }
    /// The GPU half, if the plugin has one.
    fn gpu(&self) -> Option<&dyn GpuHalf> {
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
    /// Turn the records of every task into output files under `dir`; return the checksum object
    /// for `report.json`. Called once, on the root node, after every task finished.
    fn finish(&self, records: &Records, dir: &Path) -> Result<serde_json::Value>;
}

/// The CPU half of a plugin: makes one worker per CPU unit.
pub trait CpuHalf: Sync {
    /// Per-worker state, set up once and reused across chunks.
    fn worker(&self) -> Result<Box<dyn Worker + '_>>;
}

/// What a GPU half sets up once per device: data shared by the device's queues, and the tuned
/// numbers the runtime needs.
pub struct DeviceSetup {
    /// Shared by the device's queues (uploaded graph, launch parameters...).
    pub shared: Box<dyn std::any::Any + Send + Sync>,
    /// Tasks per chunk the device's queues ask for.
    pub chunk: usize,
    /// In-order queues (concurrent kernels) to run on the device.
    pub queues: usize,
    /// The chosen launch parameters and their reasons, for the report and `tuccompi check`.
    pub tuning: serde_json::Value,
}

impl std::fmt::Debug for DeviceSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceSetup(chunk={}, queues={})",
            self.chunk, self.queues
        )
    }
}

/// The GPU half of a plugin: set up each device once, then make one worker per in-order queue.
pub trait GpuHalf: Sync {
    /// Upload shared data to `device` and choose launch parameters. `queues` is
    /// `units.concurrent_kernels` when the config sets it.
    fn setup(&self, device: &Device, queues: Option<usize>) -> Result<DeviceSetup>;
    /// The launch parameters `setup` would choose on `device`, with where each came from, for
    /// `tuccompi check` (uploads nothing). `Null` when the half has nothing to show.
    fn launch_plan(&self, _device: &Device, _queues: Option<usize>) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Null)
    }
    /// A worker bound to one in-order queue of `device`.
    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a (dyn std::any::Any + Send + Sync),
        queue: usize,
    ) -> Result<Box<dyn Worker + 'a>>;
}

/// Runs chunks of tasks on one unit.
pub trait Worker: Send {
    /// Run tasks `range` and write each task's record into `out`.
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()>;
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
}
