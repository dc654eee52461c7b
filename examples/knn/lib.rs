#![forbid(unsafe_code)]
//! Example plugin with file inputs and bulk outputs, k nearest neighbours by brute force
//! (`cargo run --release -p knn -- run configs/knn.toml`): two float32 `.npy` inputs (`[knn]
//! points, queries`, declared as `Details::inputs`), each query's k nearest out as rows of
//! `distances.npy` and `indices.npy` (`NpyRows`), a record typed for `[verify]`'s tolerance.

use std::path::{Path, PathBuf};
use tuccompi::device::{DBuf, Device, KernelArg, KernelSource};
use tuccompi::npy::Array;
use tuccompi::plugin::{worker, Details, DeviceData, Field, FieldType, Gpu, Job, Plugin};
use tuccompi::plugin::{Out, PrepareCtx, Records, RecordsOut, Tolerance, Worker};
use tuccompi::sink::NpyRows;
use tuccompi::tuning::{LaunchParams, Request, Shape, Tuner};
use tuccompi::Result;

const KERNELS: KernelSource = KernelSource {
    stem: "knn",
    source: include_str!("knn.cl"),
    characterization: include_str!("knn.toml"),
};
const KERNEL: &str = "knn_brute";
const KMAX: usize = 32; // the largest k the kernel's private top-k list holds (knn.cl)
pub struct Knn; // the plugin

/// `[knn]`.
#[derive(serde::Deserialize)]
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
struct KnnJob {
    options: Options,
    points: Array<f32>,
    queries: Array<f32>,
    distances: NpyRows,
    indices: NpyRows,
}
/// The k nearest of `points` (n rows of `dims`) to `query`: their distances and indices in
/// order, ties to the smaller index (squared differences summed in order, then the root).
pub fn nearest(points: &[f32], dims: usize, query: &[f32], k: usize) -> (Vec<f32>, Vec<u32>) {
    let mut best: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
    for (p, y) in points.chunks_exact(dims).enumerate() {
        let mut s = 0.0f32;
        for (a, b) in query.iter().zip(y) {
            s += (a - b) * (a - b);
        }
        if best.len() == k && s >= best[k - 1].0 {
            continue;
        }
        let at = best.partition_point(|&(x, _)| x <= s);
        best.insert(at, (s, p as u32));
        best.truncate(k);
    }
    best.into_iter().map(|(s, p)| (s.sqrt(), p)).unzip()
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
        let read = |key: &str, path: &Path| {
            let array = tuccompi::npy::read::<f32>(path, Some(2));
            array.map_err(|e| ctx.refuse(key, format!("{key}: {e}")))
        };
        let points = read("knn.points", &options.points)?;
        let queries = read("knn.queries", &options.queries)?;
        let (n, dims, k) = (points.rows(), points.cols(), options.k);
        if n == 0 || dims == 0 {
            let msg = format!("{}: no points ({n} x {dims})", options.points.display());
            return Err(ctx.refuse("knn.points", msg));
        }
        if queries.cols() != dims {
            let (file, qd) = (options.queries.display(), queries.cols());
            let msg = format!("{file}: queries of {qd} dimensions, the points have {dims}");
            return Err(ctx.refuse("knn.queries", msg));
        }
        if !(1..=KMAX.min(n)).contains(&k) {
            let msg = format!("knn.k = {k}: use 1 to {KMAX} (and at most the {n} points)");
            return Err(ctx.refuse("knn.k", msg));
        }
        Ok(Box::new(KnnJob {
            distances: NpyRows::of::<f32>("distances.npy", queries.rows(), k)?,
            indices: NpyRows::of::<u32>("indices.npy", queries.rows(), k)?,
            options,
            points,
            queries,
        }))
    }
}
/// Write query `t`'s neighbours (distances `d`, indices `i`): its two rows and its record.
fn put(j: &KnnJob, t: usize, d: &[f32], i: &[u32], out: &mut RecordsOut<'_>) -> Result<()> {
    j.distances.write(t, d)?;
    j.indices.write(t, i)?;
    let f = FieldType::f32_word;
    out.put(t, &[i[0] as u64, f(d[0]), f(d[d.len() - 1])]);
    Ok(())
}

impl Job for KnnJob {
    fn tasks(&self) -> usize {
        self.queries.rows()
    }
    fn record_words(&self) -> usize {
        3
    }
    fn describe(&self) -> serde_json::Value {
        let (p, q, k) = (&self.points, &self.queries, self.options.k);
        serde_json::json!({ "points": p.rows(), "queries": q.rows(), "dims": p.cols(), "k": k })
    }
    fn details(&self) -> Details<'_> {
        let f = |name: &str, ty| Field::new(name, ty);
        let (u, x) = (FieldType::U32, FieldType::F32);
        // Floats within 1e-6 relative: exact with a correctly rounded sqrt, OpenCL allows ulps.
        let mut tolerance = Tolerance::exact().f32(0.0, 1e-6);
        tolerance.fields = vec![f("nearest", u), f("distance", x), f("kth_distance", x)];
        Details {
            bulk: vec![&self.distances, &self.indices],
            inputs: vec![self.options.points.clone(), self.options.queries.clone()],
            tolerance,
            ..Details::default()
        }
    }
    fn finish(&self, records: &Records, _out: &Out) -> Result<serde_json::Value> {
        let (mut sum, mut hash) = (0.0f64, 0u64);
        for t in 0..self.tasks() {
            let [nearest, distance, _] = records.read::<[u64; 3]>(t);
            sum += FieldType::f32(distance) as f64;
            hash = hash.rotate_left(5) ^ nearest;
        }
        let mean = sum / self.tasks().max(1) as f64;
        Ok(serde_json::json!({ "mean_nearest_distance": mean, "nearest_hash": hash }))
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        let (points, dims, k) = (&self.points.data, self.points.cols(), self.options.k);
        Ok(worker(move |tasks, out| {
            for t in tasks {
                let (d, i) = nearest(points, dims, self.queries.row(t), k);
                put(self, t, &d, &i, out)?;
            }
            Ok(())
        }))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        // n = 1 item per task (it loops over the points): the batch fills the device's items.
        let mut shape = Shape::items(1);
        shape.bytes_per_task = (self.options.k * 8) as u64;
        shape.shared_bytes = ((self.points.data.len() + self.queries.data.len()) * 4) as u64;
        tuner.params(&device.info, Request::new(&KERNELS, &[KERNEL], shape))
    }
    fn gpu_setup(&self, device: &Device, _: &LaunchParams) -> Result<DeviceData> {
        device.program(&KERNELS, "")?;
        let q = device.queue()?;
        let mut points = DBuf::new(device, self.points.data.len())?;
        let mut queries = DBuf::new(device, self.queries.data.len().max(1))?;
        q.write(&mut points, 0, &self.points.data)?;
        q.write(&mut queries, 0, &self.queries.data)?; // (writes block)
        Ok(DeviceData::new((points, queries))) // once per device, for all its queues
    }
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let (p, q) = gpu.data::<(DBuf<f32>, DBuf<f32>)>()?; // the points, the queries
        let (batch, local, k) = (gpu.batch(), gpu.local(KERNEL)?, self.options.k);
        let kernel = gpu.kernel(&KERNELS, KERNEL)?;
        let (dist, idx) = (gpu.buffer::<f32>(batch * k)?, gpu.buffer::<u32>(batch * k)?);
        let (mut hd, mut hi) = (vec![0.0; batch * k], vec![0; batch * k]);
        let (n, dims) = (self.points.rows() as u32, self.points.cols() as u32);
        Ok(worker(move |tasks, out| {
            for start in tasks.clone().step_by(batch) {
                let sub = start..(start + batch).min(tasks.end); // one launch, two reads
                let (first, count) = (sub.start as u32, sub.len() as u32);
                let args: [&dyn KernelArg; 9] =
                    [p, &n, &dims, q, &first, &count, &(k as u32), &dist, &idx];
                gpu.queue.launch(&kernel, sub.len(), Some(local), &args)?;
                gpu.queue.read(&dist, 0, &mut hd[..sub.len() * k])?;
                gpu.queue.read(&idx, 0, &mut hi[..sub.len() * k])?;
                for ((t, d), i) in sub.zip(hd.chunks(k)).zip(hi.chunks(k)) {
                    put(self, t, d, i, out)?;
                }
            }
            Ok(())
        }))
    }
}
