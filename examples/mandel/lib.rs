#![forbid(unsafe_code)]
//! Example plugin: Mandelbrot escape counts of a `width x height` image of x in [-2, 0.5],
//! y in [-1.25, 1.25], one task per row, into `counts.npy` (u32 rows). Its tasks are very
//! uneven (the rows through the set cost `max_iter` per pixel, the edge rows a few): the
//! scheduling benchmark's workload. A plugin whose results are rows of a file needs no
//! records and no `finish`. `rayon.rs` is the same job in plain rayon.

use std::num::NonZeroU32;
use tuccompi::device::{Device, KernelArg, KernelSource};
use tuccompi::plugin::{worker, Details, Gpu, Job, Plugin, PrepareCtx, Worker};
use tuccompi::sink::NpyRows;
use tuccompi::tuning::{LaunchParams, Request, Shape, Tuner};
use tuccompi::Result;

const KERNELS: KernelSource = KernelSource {
    stem: "mandel",
    source: include_str!("mandel.cl"),
    characterization: include_str!("mandel.toml"),
};
pub const X0: f64 = -2.0;
pub const Y0: f64 = -1.25;
pub const SIDE: f64 = 2.5;
pub struct Mandel; // the plugin

/// `[mandel]` options (a 0 is refused by its type, naming the key).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    width: NonZeroU32,
    height: NonZeroU32,
    max_iter: NonZeroU32,
}
struct MandelJob {
    width: u32,
    max_iter: u32,
    dx: f64,
    dy: f64,
    counts: NpyRows,
}

/// Iterations before z = z^2 + c leaves |z| <= 2 (max_iter if it never does): only + - * in
/// this order, as mandel.cl (built with FP_CONTRACT OFF), so both halves agree bit for bit.
pub fn escape(cx: f64, cy: f64, max_iter: u32) -> u32 {
    let (mut x, mut y, mut n) = (0.0f64, 0.0f64, 0);
    while n < max_iter && x * x + y * y <= 4.0 {
        (x, y) = (x * x - y * y + cx, 2.0 * x * y + cy);
        n += 1;
    }
    n
}

impl Plugin for Mandel {
    fn name(&self) -> &'static str {
        "mandel"
    }
    fn description(&self) -> &'static str {
        "Mandelbrot escape counts, one task per image row (example plugin)"
    }
    fn prepare(&self, ctx: &PrepareCtx<'_>) -> Result<Box<dyn Job>> {
        let o: Options = ctx.options("mandel")?;
        let (width, height) = (o.width.get(), o.height.get());
        Ok(Box::new(MandelJob {
            width,
            max_iter: o.max_iter.get(),
            dx: SIDE / width as f64,
            dy: SIDE / height as f64,
            counts: NpyRows::of::<u32>("counts.npy", height as usize, width as usize)?,
        }))
    }
}

impl Job for MandelJob {
    fn tasks(&self) -> usize {
        self.counts.rows()
    }
    fn details(&self) -> Details<'_> {
        let bulk = vec![&self.counts];
        Details {
            bulk,
            ..Details::default()
        }
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        let mut row = vec![0u32; self.width as usize];
        Ok(worker(move |tasks, _| {
            for t in tasks {
                let cy = Y0 + t as f64 * self.dy;
                for (i, c) in row.iter_mut().enumerate() {
                    *c = escape(X0 + i as f64 * self.dx, cy, self.max_iter);
                }
                self.counts.write(t, &row)?;
            }
            Ok(())
        }))
    }
    fn kernels(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }
    fn gpu_params(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        let shape = Shape::items(self.width as usize); // a work-item per pixel of a row
        tuner.params(
            &device.info,
            Request::new(&KERNELS, &["mandel_rows"], shape),
        )
    }
    fn gpu_worker<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        let (w, local) = (self.width as usize, gpu.local("mandel_rows")?);
        let kernel = gpu.kernel(&KERNELS, "mandel_rows")?;
        let counts = gpu.buffer::<u32>(gpu.batch() * w)?;
        let mut host = vec![0u32; gpu.batch() * w];
        Ok(worker(move |tasks, _| {
            for sub in gpu.batches(tasks) {
                let (first, rows) = (sub.start as u32, sub.len() as u32);
                let args: [&dyn KernelArg; 9] = [
                    &counts,
                    &first,
                    &rows,
                    &self.width,
                    &self.max_iter,
                    &X0,
                    &Y0,
                    &self.dx,
                    &self.dy,
                ];
                gpu.queue
                    .launch(&kernel, sub.len() * w, Some(local), &args)?;
                gpu.queue.read(&counts, 0, &mut host[..sub.len() * w])?;
                for (t, row) in sub.zip(host.chunks(w)) {
                    self.counts.write(t, row)?;
                }
            }
            Ok(())
        }))
    }
}
