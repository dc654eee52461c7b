//! A plugin that is not a graph problem, written the way a user writes one: Collatz stopping
//! times of the numbers `first .. first + count`, in blocks. Each block is a task; its record
//! is (sum of steps, most steps, the number that took them).
//!
//! Run it (every core, plus OpenCL devices when there are any):
//!
//!     cargo run --release --example collatz -- configs/collatz.toml
//!
//! The steps to write a plugin, as here:
//! 1. Options: a serde struct for the plugin's own config table (`[collatz]`).
//! 2. `Plugin::prepare`: read options/input, return a `Job` (task count, record width).
//! 3. `CpuHalf::worker` and/or `GpuHalf::{setup, worker}`: per-unit state, then `run` a chunk.
//! 4. `Job::finish`: turn the records into files and a checksum.
//! 5. Kernels in `kernels/NAME.cl` with a characterization `kernels/NAME.toml`; the tuner picks
//!    the local size from it.
//! 6. Register it: in `plugins/mod.rs` for a built-in plugin, or pass it in
//!    `RunOptions::extra_plugins` from your own binary, as `main` does below.

use std::ops::Range;
use std::path::Path;
use tuccompi::device::{Arg, DBuf, Device, Queue};
use tuccompi::plugin::{
    CpuHalf, DeviceSetup, GpuHalf, Job, Plugin, PrepareCtx, Records, RecordsOut, Worker,
};
use tuccompi::tuning::{characterizations, predict, Shape};
use tuccompi::{Error, Result};

/// The plugin.
#[derive(Debug)]
pub struct Collatz;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    first: u64,
    count: u64,
    #[serde(default = "default_block")]
    block: u64,
}

fn default_block() -> u64 {
    1 << 16
}

/// A prepared run.
#[derive(Debug)]
pub struct CollatzJob {
    first: u64,
    count: u64,
    block: u64,
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

/// Sum, max and argmax of the steps of the numbers `range`, given per-number steps.
fn reduce(range: Range<u64>, steps: impl Iterator<Item = u32>, rec: &mut [u64]) {
    let (mut sum, mut max, mut arg) = (0u64, 0u64, range.start);
    for (x, s) in range.zip(steps) {
        sum += s as u64;
        if s as u64 > max {
            max = s as u64;
            arg = x;
        }
    }
    rec.copy_from_slice(&[sum, max, arg]);
}

impl Plugin for Collatz {
    fn name(&self) -> &'static str {
        "collatz"
    }
    fn description(&self) -> &'static str {
        "Collatz stopping times of a range of numbers (example plugin)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let o: Options = toml::Value::Table(ctx.plan.plugin_options.clone())
            .try_into()
            .map_err(|e: toml::de::Error| Error::Config(format!("[collatz]: {}", e.message())))?;
        if o.first == 0 || o.count == 0 || o.block == 0 || o.first.saturating_add(o.count) > 1 << 40
        {
            return Err(Error::Config(
                "[collatz]: need first >= 1, count >= 1, block >= 1 and first + count <= 2^40"
                    .into(),
            ));
        }
        Ok(Box::new(CollatzJob {
            first: o.first,
            count: o.count,
            block: o.block,
        }))
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
    fn gpu(&self) -> Option<&dyn GpuHalf> {
        Some(self)
    }
    fn finish(&self, records: &Records, dir: &Path) -> Result<serde_json::Value> {
        let mut csv = String::from("block,first,sum,max,argmax\n");
        let (mut total, mut best, mut arg) = (0u64, 0u64, 0u64);
        for t in 0..self.tasks() {
            let r = records.get(t);
            csv.push_str(&format!(
                "{t},{},{},{},{}\n",
                self.block_range(t).start,
                r[0],
                r[1],
                r[2]
            ));
            total += r[0];
            if r[1] > best {
                (best, arg) = (r[1], r[2]);
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
            reduce(r.clone(), r.map(steps), out.record(t));
        }
        Ok(())
    }
}

impl GpuHalf for CollatzJob {
    fn setup(&self, device: &Device, queues: Option<usize>) -> Result<DeviceSetup> {
        // The tuner reads kernels/collatz.toml: nothing to upload, just launch parameters.
        let shape = Shape {
            n: self.block as usize,
            mean_degree: 1.0,
            bytes_per_task: self.block * 4,
            shared_bytes: 0,
        };
        let params = predict(
            &characterizations("collatz")?,
            &device.info,
            shape,
            Some(4),
            queues,
            None,
        );
        device.program("collatz", "")?;
        Ok(DeviceSetup {
            chunk: params.batch.value,
            queues: params.queues.value,
            tuning: serde_json::to_value(&params).unwrap_or_default(),
            shared: Box::new(params.local["collatz_steps"].value),
        })
    }

    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a (dyn std::any::Any + Send + Sync),
        _queue: usize,
    ) -> Result<Box<dyn Worker + 'a>> {
        Ok(Box::new(GpuWorker {
            job: self,
            local: *shared.downcast_ref::<usize>().expect("local size"),
            kernel: device.kernel("collatz", "", "collatz_steps")?,
            steps: DBuf::new(device, self.block as usize)?,
            host: vec![0; self.block as usize],
            q: device.queue()?,
        }))
    }
}

struct GpuWorker<'a> {
    job: &'a CollatzJob,
    local: usize,
    kernel: opencl3::kernel::Kernel,
    steps: DBuf<u32>,
    host: Vec<u32>,
    q: Queue,
}

impl Worker for GpuWorker<'_> {
    fn run(&mut self, tasks: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in tasks {
            let r = self.job.block_range(t);
            let len = (r.end - r.start) as usize;
            let args = [
                Arg::U32s(&self.steps),
                Arg::U64(r.start),
                Arg::U32(len as u32),
            ];
            self.q.launch(&self.kernel, len, Some(self.local), &args)?;
            self.q.read(&self.steps, 0, &mut self.host[..len])?;
            reduce(r, self.host[..len].iter().copied(), out.record(t));
        }
        Ok(())
    }
}

#[allow(dead_code)] // the integration tests include this file as a module and run the plugin directly
fn main() -> std::process::ExitCode {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "configs/collatz.toml".into());
    let sets: Vec<String> = std::env::args().skip(2).filter(|a| a != "--set").collect();
    let result = tuccompi::Plan::load(Path::new(&path), &sets).and_then(|plan| {
        let opts = tuccompi::RunOptions {
            quiet: false,
            extra_plugins: vec![&Collatz],
        };
        let out = tuccompi::run(&plan, &opts, &tuccompi::node::Single)?;
        println!(
            "collatz: {} -> {}",
            out.report["tasks"], out.report["checksum"]
        );
        Ok(())
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("collatz: error: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
