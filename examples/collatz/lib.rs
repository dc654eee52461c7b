//! A plugin that is not a graph problem, written the way a user writes one: Collatz stopping
//! times of the numbers `first .. first + count`, in blocks. Each block is a task; its record
//! is (sum of steps, most steps, the number that took them).
//!
//! Run it (every core, plus OpenCL devices when there are any):
//!
//! ```sh
//! cargo run --release -p collatz -- run configs/collatz.toml
//! ```
//!
//! It is a package of its own (`examples/collatz/`: `Cargo.toml`, this `lib.rs`, the kernel
//! and its characterization, a `main.rs`) that depends on the framework alone. Its `main` is one
//! line, `tuccompi::cli::main(&[&collatz::Collatz])`: the binary is the whole `tuccompi` tool
//! (`run`, `check`, `tune`, `plugins`, `devices`, `--set`, `--resume`, signals, progress) with
//! this plugin as its registry.
//!
//! The steps to write a plugin, as here:
//! 1. Options: a serde struct for the plugin's own config table (`[collatz]`).
//! 2. `Plugin::prepare`: read options/input, return a `Job` (task count, record width).
//! 3. `CpuHalf::worker` and/or `GpuHalf`: per-unit state, then `Worker::run` on a chunk.
//! 4. `Job::finish`: turn the records into files and a checksum.
//! 5. Kernels: `collatz.cl` with its characterization `collatz.toml` beside this file, declared
//!    as a `KernelSource`; the tuner picks the local size from the characterization, and
//!    `tune` times the candidates `Job::tune_candidates` declares and stores the winners.
//! 6. Register it: in `plugins/lib.rs` for a built-in plugin, or pass it in
//!    `tuccompi::cli::main(&[&YourPlugin])` from your own binary, as `main.rs` does.

use std::ops::Range;
use std::path::Path;
use tuccompi::device::{Arg, DBuf, Device, KernelSource, Queue};
use tuccompi::plugin::Worker;
use tuccompi::plugin::{CpuHalf, Gpu, Job, Plugin, PrepareCtx, Records, RecordsOut, SimpleGpuHalf};
use tuccompi::tuning::{Choice, Knob, LaunchParams, Request, Shape, Tuner};
use tuccompi::Result;

/// The kernel, shipped with the example.
const KERNELS: KernelSource = KernelSource {
    stem: "collatz",
    source: include_str!("collatz.cl"),
    characterization: include_str!("collatz.toml"),
};

/// The plugin.
#[derive(Debug)]
pub struct Collatz;

/// `[collatz]` options; also the prepared job.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollatzJob {
    first: u64,
    count: u64,
    #[serde(default = "default_block")]
    block: u64,
}

fn default_block() -> u64 {
    1 << 16
}

/// Steps from `x` down to 1.
pub fn steps(mut x: u64) -> u32 {
    let mut s = 0;
    while x > 1 {
        x = if x & 1 == 1 { 3 * x + 1 } else { x >> 1 };
        s += 1;
    }
    s
}

impl CollatzJob {
    fn block_range(&self, task: usize) -> Range<u64> {
        let a = self.first + task as u64 * self.block;
        a..(a + self.block).min(self.first + self.count)
    }
}

/// The record of a block: sum, max and argmax of the steps of the numbers `range`; argmax is the
/// smallest number that takes max steps (the GPU half's `collatz_reduce` keeps the same one).
fn reduce(range: Range<u64>, steps: impl Iterator<Item = u32>) -> [u64; 3] {
    let (mut sum, mut max, mut arg) = (0u64, 0u64, range.start);
    for (x, s) in range.zip(steps) {
        sum += s as u64;
        if s as u64 > max {
            (max, arg) = (s as u64, x);
        }
    }
    [sum, max, arg]
}

impl Plugin for Collatz {
    fn name(&self) -> &'static str {
        "collatz"
    }
    fn description(&self) -> &'static str {
        "Collatz stopping times of a range of numbers (example plugin)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let job: CollatzJob = ctx.options("collatz")?;
        // Each refusal names its key and where it was set.
        let refuse = |key: &str, msg: String| Err(ctx.plan.origins.error(key, msg));
        for (key, v) in [
            ("first", job.first),
            ("count", job.count),
            ("block", job.block),
        ] {
            if v == 0 {
                return refuse(
                    &format!("collatz.{key}"),
                    format!("[collatz] {key} = 0: use 1 or more"),
                );
            }
        }
        if job.first.saturating_add(job.count) > 1 << 40 {
            return refuse(
                "collatz.count",
                format!(
                    "[collatz] first = {} and count = {}: the numbers must end at 2^40; make \
                     first + count <= 2^40",
                    job.first, job.count
                ),
            );
        }
        Ok(Box::new(job))
    }
}

impl Job for CollatzJob {
    fn tasks(&self) -> usize {
        self.count.div_ceil(self.block) as usize
    }
    fn record_words(&self) -> usize {
        3
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "first": self.first, "count": self.count, "block": self.block })
    }
    fn cpu(&self) -> Option<&dyn CpuHalf> {
        Some(self)
    }
    fn gpu(&self) -> Option<Gpu<'_>> {
        Some(Gpu::new(self))
    }
    /// What `tune` times: the steps kernel's local size (the batch is the example's own
    /// choice, below). The winner is stored under the key `collatz.steps` per device and
    /// size class, and `run` uses it.
    fn tune_candidates(
        &self,
        device: &tuccompi::device::DeviceInfo,
        _predicted: &LaunchParams,
    ) -> Vec<Knob> {
        let sizes = [32, 64, 128, 256].into_iter();
        vec![Knob::local_size(
            sizes.filter(|&l| l <= device.max_work_group),
        )]
    }
    fn finish(&self, records: &Records, dir: &Path) -> Result<serde_json::Value> {
        let mut csv = String::from("block,first,sum,max,argmax\n");
        let (mut total, mut best, mut arg) = (0u64, 0u64, 0u64);
        for t in 0..self.tasks() {
            let [sum, max, argmax] = records.read::<[u64; 3]>(t);
            let first = self.block_range(t).start;
            csv.push_str(&format!("{t},{first},{sum},{max},{argmax}\n"));
            total += sum;
            if max > best {
                (best, arg) = (max, argmax);
            }
        }
        tuccompi::sink::write_file(dir, "collatz.csv", &csv)?;
        Ok(serde_json::json!({ "total_steps": total, "max_steps": best, "argmax": arg }))
    }
}

impl CpuHalf for CollatzJob {
    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(CpuWorker(self)))
    }
}

struct CpuWorker<'a>(&'a CollatzJob);

impl Worker for CpuWorker<'_> {
    fn run(&mut self, tasks: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in tasks {
            let r = self.0.block_range(t);
            out.put(t, &reduce(r.clone(), r.map(steps)));
        }
        Ok(())
    }
}

/// Nothing to upload: a `SimpleGpuHalf` builds the kernels at set-up and gives each queue's
/// worker the launch parameters.
impl SimpleGpuHalf for CollatzJob {
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        let shape = Shape {
            n: self.block as usize,
            mean_degree: 1.0,
            bytes_per_task: self.block * 4,
            shared_bytes: 0,
        };
        let mut request = Request::new(&KERNELS, &["collatz_steps", "collatz_reduce"], shape);
        // Where `tune`'s winners are kept (beside the device and the size class of `n`).
        request.cache_name = Some("collatz.steps".into());
        let mut params = tuner.params(&device.info, request)?;
        let batch = ((1 << 24) / self.block).max(1) as usize;
        params.batch = Choice::fixed(
            batch,
            "2^24 numbers per chunk, in whole blocks (the example's choice): a chunk costs two \
             launches and one small read on the queue's host thread whatever its size, so big \
             chunks keep that host work small next to the device's",
        );
        Ok(params)
    }
    fn worker<'a>(
        &'a self,
        device: &'a Device,
        params: &'a LaunchParams,
        q: Queue,
    ) -> Result<impl Worker + 'a> {
        let batch = params.batch.value;
        Ok(GpuWorker {
            job: self,
            batch,
            steps_local: params.local("collatz_steps")?,
            reduce_local: params.local("collatz_reduce")?,
            steps_kernel: device.kernel(&KERNELS, "", "collatz_steps")?,
            reduce_kernel: device.kernel(&KERNELS, "", "collatz_reduce")?,
            steps: DBuf::new(device, batch * self.block as usize)?,
            records: DBuf::new(device, batch * 3)?,
            host: vec![0; batch * 3],
            q,
        })
    }
}

struct GpuWorker<'a> {
    job: &'a CollatzJob,
    batch: usize,
    steps_local: usize,
    reduce_local: usize,
    steps_kernel: tuccompi::device::Kernel,
    reduce_kernel: tuccompi::device::Kernel,
    steps: DBuf<u32>,
    records: DBuf<u64>,
    host: Vec<u64>,
    q: Queue,
}

impl Worker for GpuWorker<'_> {
    /// Per sub-batch of at most `batch` blocks (consecutive numbers): one launch computes the
    /// steps of all its numbers, one reduces each block on the device, one read brings back the
    /// records (3 words per block).
    fn run(&mut self, tasks: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for start in tasks.clone().step_by(self.batch) {
            let sub = start..(start + self.batch).min(tasks.end);
            let first = self.job.block_range(sub.start).start;
            let count = self.job.block_range(sub.end - 1).end - first;
            let (blocks, ls, lr) = (sub.len(), self.steps_local, self.reduce_local);
            let args = [Arg::U32s(&self.steps), Arg::U64(first), Arg::U64(count)];
            // SAFETY: collatz_steps(uint* steps, ulong first, ulong count) writes steps[..count]
            // (items past count return); steps holds batch * block >= count numbers.
            unsafe {
                self.q
                    .launch(&self.steps_kernel, count as usize, Some(ls), &args)
            }?;
            let args = [
                Arg::U32s(&self.steps),
                Arg::U64(first),
                Arg::U64(count),
                Arg::U64(self.job.block),
                Arg::U64s(&self.records),
                Arg::Local(lr * 8),
                Arg::Local(lr * 4),
                Arg::Local(lr * 8),
            ];
            // SAFETY: collatz_reduce(uint* steps, ulong first, ulong count, ulong block,
            // ulong* records, local ulong* sums, local uint* maxs, local ulong* args): group b of
            // `blocks` groups reads steps[..count] and writes records[3b..3b + 3] (records holds
            // 3 * batch); each local array holds one element per item of a group (lr items).
            unsafe {
                self.q
                    .launch(&self.reduce_kernel, blocks * lr, Some(lr), &args)
            }?;
            let host = &mut self.host[..3 * blocks];
            self.q.read(&self.records, 0, host)?;
            for (t, r) in sub.zip(host.chunks_exact(3)) {
                out.put(t, &[r[0], r[1], r[2]]);
            }
        }
        Ok(())
    }
}
