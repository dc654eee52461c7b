#![forbid(unsafe_code)]
//! Example plugin with floating point, the template to copy: the Monte Carlo price of a European
//! call option (`cargo run --release -p options -- run configs/options.toml`). Each task prices
//! `paths_per_task` paths of the stock under geometric Brownian motion; its record is (sum of
//! the payoffs, sum of their squares, paths), and `finish` turns the records into the price and
//! its standard error.
//!
//! Both halves draw path `p`'s numbers from a counter-based generator (a SplitMix64 hash of the
//! seed and `p`), turn them into a normal number by the polar Box-Muller method and sum the
//! payoffs in path order with the same operations (`options.cl` mirrors the functions below one
//! for one, with `#pragma OPENCL FP_CONTRACT OFF`). Only `+ - * /` and `sqrt` are used, which
//! both sides round correctly, so a task's record is bit for bit the same on a CPU and a GPU,
//! and `[verify]` compares it exactly. (With the device's own `exp` and `log`, which are not
//! correctly rounded, a plugin would declare how far its records may differ instead, in
//! `Job::details`: `tolerance: Tolerance::f64_words([0, 1], 1e-12)`.)

use std::ops::Range;
use tuccompi::device::{Device, KernelArg, KernelSource};
use tuccompi::plugin::{worker, Gpu, Job, Out, Plugin, PrepareCtx, Records, Worker};
use tuccompi::tuning::{LaunchParams, Request, Shape, Tuner};
use tuccompi::Result;

const KERNELS: KernelSource = KernelSource {
    stem: "options",
    source: include_str!("options.cl"),
    characterization: include_str!("options.toml"),
};
const PAYOFFS: &str = "option_payoffs";
const SUMS: &str = "option_sums";

/// The plugin.
pub struct Options;

/// `[options]`; also the prepared job.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionsJob {
    spot: f64,
    strike: f64,
    rate: f64,
    volatility: f64,
    maturity: f64,
    paths: u64,
    #[serde(default = "default_per_task")]
    paths_per_task: u64,
    #[serde(default)]
    seed: u64,
}

fn default_per_task() -> u64 {
    1 << 16
}

/// SplitMix64: the state advance and output function.
fn splitmix(z: u64) -> u64 {
    let z = z.wrapping_add(0x9E3779B97F4A7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// The `i`-th uniform number in [0, 1) of the path whose key is `key`.
fn uniform(key: u64, i: u64) -> f64 {
    (splitmix(key.wrapping_add(i)) >> 11) as f64 * (1.0 / 9007199254740992.0)
}

/// e^x for |x| < 700 from `+ - * /`: x = k ln 2 + r, e^r by its Taylor polynomial, times 2^k.
fn exp_basic(x: f64) -> f64 {
    let k = (x * std::f64::consts::LOG2_E + 0.5).floor();
    let r = (x - k * 0.6931471803691238) - k * 1.9082149292705877e-10;
    let mut p = 1.0;
    for i in (1..=13).rev() {
        p = 1.0 + r * p / i as f64;
    }
    p * f64::from_bits(((k as i64 + 1023) as u64) << 52)
}

/// ln x for a normal x > 0: x = m 2^e, m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)).
fn log_basic(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7FF) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let f = (m - 1.0) / (m + 1.0);
    let f2 = f * f;
    let mut sum = 0.0;
    for i in (0..=11).rev() {
        sum = sum * f2 + 1.0 / (2 * i + 1) as f64;
    }
    e as f64 * std::f64::consts::LN_2 + 2.0 * f * sum
}

impl OptionsJob {
    /// The paths of task `t`.
    fn paths_of(&self, t: usize) -> Range<u64> {
        let a = t as u64 * self.paths_per_task;
        a..(a + self.paths_per_task).min(self.paths)
    }
    /// (r - σ²/2) T and σ √T: the terminal price is spot · e^(drift + volt · z).
    fn drift_volt(&self) -> (f64, f64) {
        let v = self.volatility;
        (
            (self.rate - 0.5 * v * v) * self.maturity,
            v * self.maturity.sqrt(),
        )
    }
    /// The payoff of path `p` (options.cl's `option_payoffs`).
    fn payoff(&self, p: u64) -> f64 {
        let (drift, volt) = self.drift_volt();
        let key = splitmix(self.seed ^ splitmix(p));
        let mut j = 0;
        let z = loop {
            let v1 = 2.0 * uniform(key, j) - 1.0;
            let v2 = 2.0 * uniform(key, j + 1) - 1.0;
            let s = v1 * v1 + v2 * v2;
            if s < 1.0 && s > 0.0 {
                break v1 * (-2.0 * log_basic(s) / s).sqrt();
            }
            j += 2;
        };
        let price = self.spot * exp_basic(drift + volt * z);
        (price - self.strike).max(0.0)
    }
    /// Task `t`'s record: the payoffs' sum and sum of squares (as `f64` bits), and its paths.
    fn record(&self, t: usize, sum: f64, squares: f64) -> [u64; 3] {
        let paths = self.paths_of(t);
        [sum.to_bits(), squares.to_bits(), paths.end - paths.start]
    }
}

impl Plugin for Options {
    fn name(&self) -> &'static str {
        "options"
    }
    fn description(&self) -> &'static str {
        "Monte Carlo price of a European call option (example plugin with floats)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let job: OptionsJob = ctx.options("options")?;
        // Each refusal names its key and where it was set.
        let refuse = |key: &str, what: &str| {
            let key = format!("options.{key}");
            Err(ctx.refuse(&key, format!("{key}: {what}")))
        };
        let (drift, volt) = job.drift_volt();
        let positive = [
            ("spot", job.spot),
            ("volatility", job.volatility),
            ("maturity", job.maturity),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return refuse(key, "must be a positive number");
        }
        if !(job.strike.is_finite() && job.strike >= 0.0) {
            return refuse("strike", "must be a number >= 0");
        }
        if !job.rate.is_finite() {
            return refuse("rate", "must be a finite number");
        }
        // The normal numbers stay within ±12, and exp_basic within ±700.
        if drift.abs() + 12.0 * volt >= 700.0 {
            return refuse("volatility", "volatility, rate and maturity are too large");
        }
        if job.paths == 0 || job.paths_per_task == 0 {
            return refuse("paths", "paths and paths_per_task must be 1 or more");
        }
        Ok(Box::new(job))
    }
}

impl Job for OptionsJob {
    fn tasks(&self) -> usize {
        self.paths.div_ceil(self.paths_per_task) as usize
    }
    fn record_words(&self) -> usize {
        3
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "paths": self.paths, "paths_per_task": self.paths_per_task })
    }
    fn finish(&self, records: &Records, out: &Out) -> Result<serde_json::Value> {
        let mut csv = String::from("task,paths,sum,sum_of_squares\n");
        let (mut n, mut sum, mut squares) = (0u64, 0.0f64, 0.0f64);
        for t in 0..self.tasks() {
            let [s, q, paths] = records.read::<[u64; 3]>(t);
            let (s, q) = (f64::from_bits(s), f64::from_bits(q));
            csv.push_str(&format!("{t},{paths},{s:e},{q:e}\n"));
            (n, sum, squares) = (n + paths, sum + s, squares + q);
        }
        out.write_file("options.csv", &csv)?;
        let n = n as f64;
        let mean = sum / n;
        let variance = ((squares - n * mean * mean) / (n - 1.0).max(1.0)).max(0.0);
        let discount = (-self.rate * self.maturity).exp();
        Ok(serde_json::json!({
            "price": discount * mean,
            "standard_error": discount * (variance / n).sqrt(),
        }))
    }

    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(worker(move |tasks, out| {
            for t in tasks {
                let (mut sum, mut squares) = (0.0, 0.0);
                for p in self.paths_of(t) {
                    let payoff = self.payoff(p);
                    sum += payoff;
                    squares += payoff * payoff;
                }
                out.put(t, &self.record(t, sum, squares));
            }
            Ok(())
        }))
    }

    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        // A task is `paths_per_task` work-items, each writing one f64 payoff.
        let mut shape = Shape::items(self.paths_per_task as usize);
        shape.bytes_per_task = self.paths_per_task * 8;
        let request = Request::new(&KERNELS, &[PAYOFFS, SUMS], shape);
        tuner.params(&device.info, request)
    }
    /// Per sub-batch of at most `batch` tasks: one launch computes every path's payoff, one
    /// sums each task's payoffs in order, one read brings back two numbers per task.
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let (batch, lp, ls) = (gpu.batch(), gpu.local(PAYOFFS)?, gpu.local(SUMS)?);
        let (pk, sk) = (gpu.kernel(&KERNELS, PAYOFFS)?, gpu.kernel(&KERNELS, SUMS)?);
        let pay = gpu.buffer::<f64>(batch * self.paths_per_task as usize)?; // the payoffs
        let sums = gpu.buffer::<f64>(2 * batch)?;
        let mut host = vec![0.0; 2 * batch];
        let (seed, spot, strike, per_task) =
            (self.seed, self.spot, self.strike, self.paths_per_task);
        let (drift, volt) = self.drift_volt();
        Ok(worker(move |tasks, out| {
            for start in tasks.clone().step_by(batch) {
                let sub = start..(start + batch).min(tasks.end);
                let first = self.paths_of(sub.start).start;
                let count = self.paths_of(sub.end - 1).end - first;
                let args: [&dyn KernelArg; 8] =
                    [&pay, &first, &count, &seed, &spot, &strike, &drift, &volt];
                let q = &gpu.queue;
                q.launch(&pk, count as usize, Some(lp), &args)?;
                q.launch(&sk, sub.len(), Some(ls), &[&pay, &count, &per_task, &sums])?;
                q.read(&sums, 0, &mut host[..2 * sub.len()])?;
                for (t, s) in sub.zip(host.chunks_exact(2)) {
                    out.put(t, &self.record(t, s[0], s[1]));
                }
            }
            Ok(())
        }))
    }
}
