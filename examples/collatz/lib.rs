#![forbid(unsafe_code)]
//! Example plugin: Collatz stopping times of `first .. first + count`, a task per block of
//! numbers, recording (sum of steps, most steps, the first number taking them); run it with
//! `cargo run --release -p collatz -- run configs/collatz.toml`. A plugin: options (a serde
//! struct), a `Plugin` whose `prepare` checks them and returns a `Job` (tasks, record words,
//! CPU and GPU workers, `finish`), kernels whose TOML declares what each buffer may index.

use tuccompi::device::{Device, DeviceInfo, KernelArg, KernelSource, Local};
use tuccompi::plugin::{worker, Gpu, Job, Out, Plugin, PrepareCtx, Records, Worker};
use tuccompi::tuning::{Choice, Knob, LaunchParams, Request, Shape, Tuner};
use tuccompi::Result;

const KERNELS: KernelSource = KernelSource {
    stem: "collatz",
    source: include_str!("collatz.cl"),
    characterization: include_str!("collatz.toml"),
};
const STEPS: &str = "collatz_steps";
const REDUCE: &str = "collatz_reduce";
pub struct Collatz; // the plugin
/// `[collatz]` options; also the prepared job.
#[derive(serde::Deserialize)]
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
pub fn steps(x: u64) -> u32 {
    let next = |&x: &u64| (x > 1).then_some(if x & 1 == 1 { 3 * x + 1 } else { x >> 1 });
    std::iter::successors(Some(x), next).count() as u32 - 1
}
fn numbers(j: &CollatzJob, t: usize) -> std::ops::Range<u64> {
    let a = j.first + t as u64 * j.block;
    a..(a + j.block).min(j.first + j.count)
}

impl Plugin for Collatz {
    fn name(&self) -> &'static str {
        "collatz"
    }
    fn description(&self) -> &'static str {
        "Collatz stopping times of a range of numbers (example plugin)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let j: CollatzJob = ctx.options("collatz")?;
        let zero = [("first", j.first), ("count", j.count), ("block", j.block)];
        if let Some((key, _)) = zero.into_iter().find(|z| z.1 == 0) {
            let msg = format!("[collatz] {key} = 0: use 1 or more");
            return Err(ctx.refuse(&format!("collatz.{key}"), msg));
        }
        let (first, count) = (j.first, j.count);
        if first.saturating_add(count) > 1 << 40 {
            let fix = "the numbers must end at 2^40; make first + count <= 2^40";
            let msg = format!("[collatz] first = {first} and count = {count}: {fix}");
            return Err(ctx.refuse("collatz.count", msg));
        }
        Ok(Box::new(j))
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
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        let mut csv = String::from("block,first,sum,max,argmax\n");
        let (mut total, mut best) = (0, [0, 0]);
        for t in 0..self.tasks() {
            let [sum, max, argmax] = records.read::<[u64; 3]>(t);
            csv += &format!("{t},{},{sum},{max},{argmax}\n", numbers(self, t).start);
            total += sum;
            best = if max > best[0] { [max, argmax] } else { best };
        }
        out.write_file("collatz.csv", &csv)?;
        Ok(serde_json::json!({ "total_steps": total, "max_steps": best[0], "argmax": best[1] }))
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(worker(move |tasks, out| {
            for t in tasks {
                let r = numbers(self, t);
                let record = r.clone().fold([0, 0, r.start], |[sum, max, arg], x| {
                    let s = steps(x) as u64;
                    let (max, arg) = if s > max { (s, x) } else { (max, arg) };
                    [sum + s, max, arg]
                });
                out.put(t, &record);
            }
            Ok(())
        }))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        let shape = Shape::items(self.block as usize); // the batch below is fixed: no memory bound
        let mut request = Request::new(&KERNELS, &[STEPS, REDUCE], shape);
        request.cache_name = Some("collatz.steps".into()); // where `tune` keeps its winners
        let mut params = tuner.params(&device.info, request)?;
        let why = "2^24 numbers per chunk, in whole blocks (the example's choice): a chunk costs \
                   two launches and one small read on the queue's host thread whatever its size, \
                   so big chunks keep that host work small next to the device's";
        params.batch = Choice::fixed(((1 << 24) / self.block).max(1) as usize, why);
        Ok(params)
    }
    /// Per sub-batch of `batch` blocks: steps of its numbers, a work-group reducing each block.
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let (batch, ls, lr) = (gpu.batch(), gpu.local(STEPS)?, gpu.local(REDUCE)?);
        let (ks, kr) = (gpu.kernel(&KERNELS, STEPS)?, gpu.kernel(&KERNELS, REDUCE)?);
        let st = gpu.buffer::<u32>(batch * self.block as usize)?;
        let rc = gpu.buffer::<u64>(3 * batch)?;
        let mut host = vec![0; 3 * batch];
        let (w, n) = (Local::of::<u64>(lr), Local::of::<u32>(lr)); // an element per work-item
        Ok(worker(move |tasks, out| {
            for start in tasks.clone().step_by(batch) {
                let sub = start..(start + batch).min(tasks.end);
                let first = numbers(self, sub.start).start;
                let count = numbers(self, sub.end - 1).end - first;
                let q = &gpu.queue;
                q.launch(&ks, count as usize, Some(ls), &[&st, &first, &count])?;
                let args: [&dyn KernelArg; 8] = [&st, &first, &count, &self.block, &rc, &w, &n, &w];
                q.launch(&kr, sub.len() * lr, Some(lr), &args)?;
                q.read(&rc, 0, &mut host[..3 * sub.len()])?;
                sub.zip(host.chunks_exact(3))
                    .for_each(|(t, r)| out.put(t, &[r[0], r[1], r[2]]));
            }
            Ok(())
        }))
    }
    fn tune_candidates(&self, device: &DeviceInfo, _: &LaunchParams) -> Vec<Knob> {
        let max = device.max_work_group; // `tune` times the steps kernel's local sizes
        let sizes = [32, 64, 128, 256].into_iter().filter(|&l| l <= max);
        vec![Knob::local_size(sizes)]
    }
}
