//! A float plugin with file inputs and bulk outputs, the template to copy for data in and out:
//! brute-force k nearest neighbours. Two float32 `.npy` files are named in the plugin's own
//! table (`[knn] points = "...", queries = "..."`); each query is one task; its k nearest
//! points (Euclidean distance, ties to the smaller index) go out as rows of two `.npy` files
//! written by the framework's rows sink, `distances.npy` (m x k float32) and `indices.npy`
//! (m x k uint32), and its record holds (nearest index, nearest distance, k-th distance).
//!
//! ```sh
//! cargo run --release -p knn -- run configs/knn.toml
//! ```
//!
//! What the framework does for it:
//! - `tuccompi::npy::read` maps each input and checks its dtype, order and shape, naming the
//!   file in any complaint;
//! - `Job::inputs` declares both files: the run's identity fingerprints them, and `--resume`
//!   after a change to either is refused, naming the file;
//! - `NpyRows::of::<f32>` declares a bulk output (no `.npy` header written by hand); workers
//!   write each query's row at its offset as chunks finish, journaled and resumable;
//! - `Record::fields` names and types the record's words, so `[verify]` compares the float
//!   fields within the `f32` tolerance (`Tolerance::of::<Neighbours>().f32(..)`, or the
//!   config's `verify.f32_relative`) and prints a mismatch decoded.

use std::ops::Range;
use std::path::{Path, PathBuf};
use tuccompi::device::{Arg, DBuf, Device, Kernel, KernelSource, Queue};
use tuccompi::npy::Array;
use tuccompi::plugin::{CpuHalf, Field, FieldType, Gpu, GpuHalf, Job, Plugin, PrepareCtx};
use tuccompi::plugin::{Record, Records, RecordsOut, Tolerance, Worker};
use tuccompi::sink::NpyRows;
use tuccompi::tuning::{LaunchParams, Request, Shape, Tuner};
use tuccompi::Result;

const KERNELS: KernelSource = KernelSource {
    stem: "knn",
    source: include_str!("knn.cl"),
    characterization: include_str!("knn.toml"),
};
const KERNEL: &str = "knn_brute";
/// The largest k the kernel's private top-k list holds (`KMAX` in knn.cl).
const KMAX: usize = 32;

/// The plugin.
#[derive(Debug)]
pub struct Knn;

/// `[knn]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    points: PathBuf,
    queries: PathBuf,
    #[serde(default = "default_k")]
    k: usize,
}

fn default_k() -> usize {
    8
}

/// The prepared job: both inputs in memory, the two bulk outputs declared.
#[derive(Debug)]
pub struct KnnJob {
    options: Options,
    points: Array<f32>,
    queries: Array<f32>,
    distances: NpyRows,
    indices: NpyRows,
}

/// A query's record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbours {
    /// Index of the nearest point.
    pub nearest: u32,
    /// Its distance.
    pub distance: f32,
    /// The distance of the k-th nearest.
    pub kth: f32,
}

impl Record for Neighbours {
    const WORDS: usize = 3;
    fn to_words(&self, w: &mut [u64]) {
        w[0] = self.nearest as u64;
        w[1] = FieldType::f32_word(self.distance);
        w[2] = FieldType::f32_word(self.kth);
    }
    fn from_words(w: &[u64]) -> Self {
        Neighbours {
            nearest: w[0] as u32,
            distance: FieldType::f32(w[1]),
            kth: FieldType::f32(w[2]),
        }
    }
    fn fields() -> Vec<Field> {
        vec![
            Field::new("nearest", FieldType::U32),
            Field::new("distance", FieldType::F32),
            Field::new("kth_distance", FieldType::F32),
        ]
    }
}

/// The k nearest of `points` (n rows of `dims`) to `query`, as (distance, index) pairs in
/// order, ties to the smaller index: the squared differences summed in dimension order, the
/// square root taken at the end. O(n · (dims + k)).
pub fn nearest(points: &[f32], dims: usize, query: &[f32], k: usize) -> Vec<(f32, u32)> {
    let mut best: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
    for (p, y) in points.chunks_exact(dims).enumerate() {
        let mut s = 0.0f32;
        for (a, b) in query.iter().zip(y) {
            let d = a - b;
            s += d * d;
        }
        if best.len() == k && s >= best[k - 1].0 {
            continue;
        }
        let at = best.partition_point(|&(x, _)| x <= s);
        best.insert(at, (s, p as u32));
        best.truncate(k);
    }
    best.iter_mut().for_each(|b| b.0 = b.0.sqrt());
    best
}

impl Plugin for Knn {
    fn name(&self) -> &'static str {
        "knn"
    }
    fn description(&self) -> &'static str {
        "k nearest neighbours of float32 queries among float32 points (example plugin)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let options: Options = ctx.options("knn")?;
        let refuse = |key: &str, msg: String| Err(ctx.plan.origins.error(key, msg));
        // A missing or malformed file is named by the key that names it.
        let read = |key: &str, path: &Path| {
            tuccompi::npy::read::<f32>(path, Some(2))
                .map_err(|e| ctx.plan.origins.error(key, format!("{key}: {e}")))
        };
        let points = read("knn.points", &options.points)?;
        let queries = read("knn.queries", &options.queries)?;
        let (n, dims) = (points.rows(), points.cols());
        if n == 0 || dims == 0 {
            return refuse(
                "knn.points",
                format!("{}: no points ({n} x {dims})", options.points.display()),
            );
        }
        if queries.cols() != dims {
            return refuse(
                "knn.queries",
                format!(
                    "{}: queries of {} dimensions, the points have {dims}",
                    options.queries.display(),
                    queries.cols()
                ),
            );
        }
        if !(1..=KMAX.min(n)).contains(&options.k) {
            return refuse(
                "knn.k",
                format!(
                    "knn.k = {}: use 1 to {} (and at most the {n} points)",
                    options.k, KMAX
                ),
            );
        }
        let m = queries.rows();
        Ok(Box::new(KnnJob {
            distances: NpyRows::of::<f32>("distances.npy", m, options.k)?,
            indices: NpyRows::of::<u32>("indices.npy", m, options.k)?,
            options,
            points,
            queries,
        }))
    }
}

impl KnnJob {
    /// Write query `t`'s neighbours: its two rows and its record.
    fn put(&self, t: usize, best: &[(f32, u32)], out: &mut RecordsOut<'_>) -> Result<()> {
        let d: Vec<f32> = best.iter().map(|b| b.0).collect();
        let i: Vec<u32> = best.iter().map(|b| b.1).collect();
        self.distances.write(t, &d)?;
        self.indices.write(t, &i)?;
        out.put(
            t,
            &Neighbours {
                nearest: i[0],
                distance: d[0],
                kth: d[d.len() - 1],
            },
        );
        Ok(())
    }
}

impl Job for KnnJob {
    fn tasks(&self) -> usize {
        self.queries.rows()
    }
    fn record_words(&self) -> usize {
        Neighbours::WORDS
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "points": self.points.rows(),
            "queries": self.queries.rows(),
            "dims": self.points.cols(),
            "k": self.options.k,
        })
    }
    fn inputs(&self) -> Vec<PathBuf> {
        vec![self.options.points.clone(), self.options.queries.clone()]
    }
    fn tolerance(&self) -> Tolerance {
        // Exact with a correctly rounded sqrt on the device; OpenCL allows a few ulp.
        Tolerance::of::<Neighbours>().f32(0.0, 1e-6)
    }
    fn bulk_outputs(&self) -> Vec<&NpyRows> {
        vec![&self.distances, &self.indices]
    }
    fn cpu(&self) -> Option<&dyn CpuHalf> {
        Some(self)
    }
    fn gpu(&self) -> Option<Gpu<'_>> {
        Some(Gpu::new(self))
    }
    fn finish(&self, records: &Records, _dir: &Path) -> Result<serde_json::Value> {
        let (mut sum, mut hash) = (0.0f64, 0u64);
        for t in 0..self.tasks() {
            let r = records.read::<Neighbours>(t);
            sum += r.distance as f64;
            hash = hash.rotate_left(5) ^ (r.nearest as u64);
        }
        Ok(serde_json::json!({
            "mean_nearest_distance": sum / self.tasks().max(1) as f64,
            "nearest_hash": hash,
        }))
    }
}

impl CpuHalf for KnnJob {
    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(CpuWorker(self)))
    }
}

struct CpuWorker<'a>(&'a KnnJob);

impl Worker for CpuWorker<'_> {
    fn run(&mut self, tasks: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let j = self.0;
        for t in tasks {
            let best = nearest(
                &j.points.data,
                j.points.cols(),
                j.queries.row(t),
                j.options.k,
            );
            j.put(t, &best, out)?;
        }
        Ok(())
    }
}

/// What each device holds for all its queues: the points and the queries, uploaded once.
#[derive(Debug)]
pub struct OnDevice {
    points: DBuf<f32>,
    queries: DBuf<f32>,
    batch: usize,
    local: usize,
}

impl GpuHalf for KnnJob {
    type Shared = OnDevice;
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        // One work-item per query: a task launches n = 1 item (it loops over the points), so
        // the tuner's batch is the device's resident work-items, not a sliver of them.
        let shape = Shape {
            n: 1,
            mean_degree: 1.0,
            bytes_per_task: (self.options.k * 8) as u64,
            shared_bytes: ((self.points.data.len() + self.queries.data.len()) * 4) as u64,
        };
        tuner.params(&device.info, Request::new(&KERNELS, &[KERNEL], shape))
    }
    fn setup(&self, device: &Device, params: &LaunchParams) -> Result<OnDevice> {
        device.program(&KERNELS, "")?;
        let q = device.queue()?;
        let mut points = DBuf::new(device, self.points.data.len())?;
        let mut queries = DBuf::new(device, self.queries.data.len().max(1))?;
        q.write(&mut points, 0, &self.points.data)?;
        q.write(&mut queries, 0, &self.queries.data)?;
        q.finish()?;
        Ok(OnDevice {
            points,
            queries,
            batch: params.batch.value,
            local: params.local(KERNEL)?,
        })
    }
    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a OnDevice,
        q: Queue,
    ) -> Result<impl Worker + 'a> {
        let k = self.options.k;
        Ok(GpuWorker {
            job: self,
            shared,
            kernel: device.kernel(&KERNELS, "", KERNEL)?,
            dist: DBuf::new(device, shared.batch * k)?,
            idx: DBuf::new(device, shared.batch * k)?,
            host_dist: vec![0.0; shared.batch * k],
            host_idx: vec![0; shared.batch * k],
            q,
        })
    }
}

struct GpuWorker<'a> {
    job: &'a KnnJob,
    shared: &'a OnDevice,
    kernel: Kernel,
    dist: DBuf<f32>,
    idx: DBuf<u32>,
    host_dist: Vec<f32>,
    host_idx: Vec<u32>,
    q: Queue,
}

impl Worker for GpuWorker<'_> {
    /// Per sub-batch of at most `batch` queries: one launch (an item per query), two reads.
    fn run(&mut self, tasks: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let (j, s, k) = (self.job, self.shared, self.job.options.k);
        for start in tasks.clone().step_by(s.batch) {
            let sub = start..(start + s.batch).min(tasks.end);
            let args = [
                Arg::F32s(&s.points),
                Arg::U32(j.points.rows() as u32),
                Arg::U32(j.points.cols() as u32),
                Arg::F32s(&s.queries),
                Arg::U32(sub.start as u32),
                Arg::U32(sub.len() as u32),
                Arg::U32(k as u32),
                Arg::F32s(&self.dist),
                Arg::U32s(&self.idx),
            ];
            // SAFETY: knn_brute item q < count reads points[..n * dims] and queries[(first +
            // q) * dims..][..dims] (first + count <= the queries uploaded) and writes
            // dist/idx[q * k..][..k]; both hold batch * k >= count * k.
            unsafe { self.q.launch(&self.kernel, sub.len(), Some(s.local), &args) }?;
            let n = sub.len() * k;
            self.q.read(&self.dist, 0, &mut self.host_dist[..n])?;
            self.q.read(&self.idx, 0, &mut self.host_idx[..n])?;
            for (i, t) in sub.enumerate() {
                let best: Vec<(f32, u32)> = (i * k..(i + 1) * k)
                    .map(|x| (self.host_dist[x], self.host_idx[x]))
                    .collect();
                j.put(t, &best, out)?;
            }
        }
        Ok(())
    }
}
