//! The framework's own test plugin, `probe`: tasks whose records and bulk rows are simple
//! functions of the task id, a CPU half and a GPU half (`probe.cl`, run on PoCL in CI), two bulk
//! files of different types, and switches that make a unit slow, fail or lie, so the runtime's
//! guarantees are tested without any built-in plugin.
//!
//! Per task `t`: the record `[mix(t), f32 bits of t / 4]` and two rows of `cols` values,
//! `rows_u32.npy[t][c] = t * cols + c` and `rows_f32.npy[t][c] = t + c / 2`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tuccompi::device::KernelSource;
use tuccompi::plugin::{
    worker, Details, Field, FieldType, Gpu, Job, Out, Plugin, PrepareCtx, Records, Tolerance,
    Worker,
};
use tuccompi::sink::NpyRows;
use tuccompi::{Error, Result};

const KERNELS: KernelSource = KernelSource {
    stem: "probe",
    source: include_str!("probe.cl"),
    characterization: include_str!("probe.toml"),
};

/// The plugin.
#[derive(Debug)]
pub struct Probe;

/// Which unit fails on purpose (`probe.fail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fail {
    /// None.
    #[default]
    None,
    /// Every GPU worker, at its first chunk.
    Gpu,
    /// The first chunk any CPU worker runs.
    CpuOnce,
}

/// `[probe]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    tasks: usize,
    #[serde(default = "four")]
    cols: usize,
    #[serde(default)]
    seed: u64,
    /// Milliseconds each task takes (a sleep, on every unit): a run slow enough to kill.
    #[serde(default)]
    task_ms: u64,
    #[serde(default)]
    fail: Fail,
    /// A task whose record the GPU half gets wrong (for `[verify]`); its first u32 row value
    /// too under `rows_only`.
    #[serde(default)]
    wrong: Option<u64>,
    /// No records: the results are the rows alone, and `finish` is the trait's default.
    #[serde(default)]
    rows_only: bool,
}

fn four() -> usize {
    4
}

/// The prepared job.
struct ProbeJob {
    o: Options,
    rows_u32: NpyRows,
    rows_f32: NpyRows,
    failed_once: AtomicBool,
}

/// SplitMix64 of `t ^ seed`, as `probe.cl` computes it.
pub fn mix(t: u64, seed: u64) -> u64 {
    let mut z = (t ^ seed).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Plugin for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn description(&self) -> &'static str {
        "the framework's test plugin"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let o: Options = ctx.options("probe")?;
        if o.tasks == 0 || o.cols == 0 {
            return Err(ctx.refuse("probe.tasks", "[probe] tasks and cols must be 1 or more"));
        }
        Ok(Box::new(ProbeJob {
            rows_u32: NpyRows::of::<u32>("rows_u32.npy", o.tasks, o.cols)?,
            rows_f32: NpyRows::of::<f32>("rows_f32.npy", o.tasks, o.cols)?,
            o,
            failed_once: AtomicBool::new(false),
        }))
    }
}

impl ProbeJob {
    fn pause(&self, tasks: usize) {
        std::thread::sleep(Duration::from_millis(self.o.task_ms * tasks as u64));
    }
}

impl Job for ProbeJob {
    fn tasks(&self) -> usize {
        self.o.tasks
    }
    fn record_words(&self) -> usize {
        if self.o.rows_only {
            0
        } else {
            2
        }
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "tasks": self.o.tasks, "cols": self.o.cols, "seed": self.o.seed })
    }
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        if self.o.rows_only {
            let bulk = self.details().bulk;
            return tuccompi::plugin::checksums(self.o.tasks, records, &bulk);
        }
        let mut csv = String::from("task,mix,quarter\n");
        let mut xor = 0;
        for t in 0..self.o.tasks {
            let [m, q] = records.read::<[u64; 2]>(t);
            csv.push_str(&format!("{t},{m},{}\n", FieldType::f32(q)));
            xor ^= m;
        }
        out.write_file("probe.csv", &csv)?;
        Ok(serde_json::json!({ "mix_xor": xor }))
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        let cols = self.o.cols;
        Ok(worker(move |tasks, out| {
            // The first chunk any CPU worker runs: a worker that never gets one cannot fail.
            if self.o.fail == Fail::CpuOnce && !self.failed_once.swap(true, Ordering::SeqCst) {
                return Err(Error::Input(
                    "probe: this CPU worker fails on purpose".into(),
                ));
            }
            for t in tasks {
                self.pause(1);
                let t64 = t as u64;
                if !self.o.rows_only {
                    let record = [mix(t64, self.o.seed), FieldType::f32_word(t as f32 * 0.25)];
                    out.put(t, &record);
                }
                let u: Vec<u32> = (0..cols).map(|c| (t * cols + c) as u32).collect();
                let f: Vec<f32> = (0..cols).map(|c| t as f32 + c as f32 * 0.5).collect();
                self.rows_u32.write(t, &u)?;
                self.rows_f32.write(t, &f)?;
            }
            Ok(())
        }))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let kernel = gpu.kernel(&KERNELS, "probe")?;
        let (batch, cols) = (gpu.batch().max(1), self.o.cols);
        let words = gpu.buffer::<u64>(2 * batch)?;
        let ru = gpu.buffer::<u32>(batch * cols)?;
        let rf = gpu.buffer::<f32>(batch * cols)?;
        let (mut hw, mut hu, mut hf) = (
            vec![0u64; 2 * batch],
            vec![0u32; batch * cols],
            vec![0f32; batch * cols],
        );
        let wrong = self.o.wrong.unwrap_or(u64::MAX);
        Ok(worker(move |tasks, out| {
            if self.o.fail == Fail::Gpu {
                return Err(Error::Device(
                    "probe: this GPU worker fails on purpose".into(),
                ));
            }
            for sub in gpu.batches(tasks) {
                let (start, n) = (sub.start, sub.len());
                let (first, count, c32) = (start as u64, n as u32, cols as u32);
                let wrong_row = self.o.rows_only as u32;
                gpu.queue.launch(
                    &kernel,
                    n,
                    None,
                    &[
                        &first,
                        &count,
                        &c32,
                        &self.o.seed,
                        &wrong,
                        &wrong_row,
                        &words,
                        &ru,
                        &rf,
                    ],
                )?;
                gpu.queue.read(&words, 0, &mut hw[..2 * n])?;
                gpu.queue.read(&ru, 0, &mut hu[..n * cols])?;
                gpu.queue.read(&rf, 0, &mut hf[..n * cols])?;
                self.pause(n);
                for i in 0..n {
                    if !self.o.rows_only {
                        out.put(start + i, &[hw[2 * i], hw[2 * i + 1]]);
                    }
                    self.rows_u32
                        .write(start + i, &hu[i * cols..(i + 1) * cols])?;
                    self.rows_f32
                        .write(start + i, &hf[i * cols..(i + 1) * cols])?;
                }
            }
            Ok(())
        }))
    }
    fn details(&self) -> Details<'_> {
        Details {
            bulk: vec![&self.rows_u32, &self.rows_f32],
            tolerance: Tolerance {
                fields: vec![
                    Field::new("mix", FieldType::U64),
                    Field::new("quarter", FieldType::F32),
                ],
                ..Tolerance::exact()
            },
            ..Details::default()
        }
    }
}
