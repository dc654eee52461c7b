//! `[apsp.reach]` on the device: each batch's trees folded over the targets where the sweep
//! left them (`kernels/reach.cl`), so only the folded words come back, never a distance row.
//!
//! One `reach_fold` launch per batch covers the radii and the nearest targets (over the job's
//! targets), a second the isochrone limits (over every vertex). Each launch has `slices x b`
//! items; slice `s` of tree `j` folds the target columns `s, s + slices, ...`, and the host
//! merges a tree's slices in order: counts added, sums added slice after slice (so a device's
//! sums may differ from a CPU's in the last bits: `[verify]` compares them within 1e-9), the
//! nearest lists merged by (distance, column), the CPU half's order.
//!
//! Every launch is checked ([`Queue::launch`]): its arguments against the parameters
//! `kernels/reach.cl` declares (distances of the job's width, matching `-DWIDE=1`), and every
//! buffer against what `kernels/reach.toml` declares: `list` holds `count` indices below `n`
//! (vertices, or PHAST's positions), whose `index x vstride + j x tstride` lies inside the
//! algorithm's distance buffer for every tree `j < b` ([`Layout`]), `radii` `nr` values,
//! `weights` `count` values when weighted, and `partial` `b x slices x (2 nr + 2 nk)` words.

use super::Ctx;
use crate::apsp::reach::{Folded, Reach};
use crate::apsp::{ApspJob, GpuAlgorithm};
use tuccompi::device::{Arg, DBuf, Device, Kernel, KernelSource, Queue};
use tuccompi::{Error, Result};

/// The reduction kernel (`kernels/reach.cl`) and its characterization (`kernels/reach.toml`).
pub const KERNELS: KernelSource = KernelSource {
    stem: "reach",
    source: include_str!("../../kernels/reach.cl"),
    characterization: include_str!("../../kernels/reach.toml"),
};

/// Where an algorithm's distances of the batch lie: the distance of tree `j` to the vertex
/// at index `p` (a vertex id, or a sweep position with PHAST) is `dist[p·vstride + j·tstride]`.
#[derive(Debug, Clone, Copy)]
pub struct Layout<'a> {
    /// The distance buffer.
    pub dist: Arg<'a>,
    /// Stride between indices.
    pub vstride: usize,
    /// Stride between trees.
    pub tstride: usize,
}

/// Partial words kept per launch at most (the slices shrink to fit).
const PARTIAL_WORDS: usize = 1 << 22;
/// Target columns one item folds, about (more slices fill the device, fewer save merging).
const COLUMNS_PER_ITEM: usize = 32;

/// One fold over a list of indices: the list and its parameters on the device.
#[derive(Debug)]
struct Pass {
    list: DBuf<u32>,
    count: usize,
    radii: DBuf<u64>,
    nr: usize,
    nk: usize,
    weights: DBuf<f64>,
    weighted: bool,
    decay: u32,
    slices: usize,
    partial: DBuf<u64>,
    host: Vec<u64>,
}

impl Pass {
    #[allow(clippy::too_many_arguments)]
    fn new(
        device: &Device,
        q: &Queue,
        list: &[u32],
        radii: &[u64],
        nk: usize,
        weights: Option<&[f64]>,
        decay: u32,
        batch: usize,
    ) -> Result<Pass> {
        fn upload<T: tuccompi::device::Scalar>(
            device: &Device,
            q: &Queue,
            data: &[T],
        ) -> Result<DBuf<T>> {
            let mut b = DBuf::new(device, data.len().max(1))?;
            if !data.is_empty() {
                q.write(&mut b, 0, data)?;
            }
            Ok(b)
        }
        let words = 2 * radii.len() + 2 * nk;
        let fit = (PARTIAL_WORDS / (batch.max(1) * words.max(1))).max(1);
        let slices = list.len().div_ceil(COLUMNS_PER_ITEM).clamp(1, fit);
        Ok(Pass {
            list: upload(device, q, list)?,
            count: list.len(),
            radii: upload(device, q, radii)?,
            nr: radii.len(),
            nk,
            weights: upload(device, q, weights.unwrap_or(&[]))?,
            weighted: weights.is_some(),
            decay,
            slices,
            partial: DBuf::new(device, batch * slices * words)?,
            host: vec![0; batch * slices * words],
        })
    }

    fn words(&self) -> usize {
        2 * self.nr + 2 * self.nk
    }

    /// Fold the batch's `b` trees; the partial words, `b x slices x words`, are read into
    /// `self.host`.
    fn run(&mut self, kernel: &Kernel, cx: &Ctx<'_>, at: Layout<'_>) -> Result<()> {
        let items = cx.b * self.slices;
        // Every list index is a vertex or a position below n.
        cx.q.launch(
            kernel,
            items,
            None,
            &[
                &at.dist,
                &self.list,
                &(self.count as u32),
                &(at.vstride as u32),
                &(at.tstride as u32),
                &(cx.b as u32),
                &(self.slices as u32),
                &self.radii,
                &(self.nr as u32),
                &self.weights,
                &(self.weighted as u32),
                &self.decay,
                &(self.nk as u32),
                &self.partial,
                &(cx.n as u32),
            ],
        )?;
        let len = items * self.words();
        cx.q.read(&self.partial, 0, &mut self.host[..len])
    }

    /// Tree `j`'s counts, sums and nearest list, its slices merged in order.
    fn merge(&self, j: usize) -> (Vec<u64>, Vec<f64>, Vec<(u64, u64)>) {
        let w = self.words();
        let (mut count, mut sum) = (vec![0u64; self.nr], vec![0f64; self.nr]);
        let mut near = Vec::new();
        for s in 0..self.slices {
            let p = &self.host[(j * self.slices + s) * w..][..w];
            for r in 0..self.nr {
                count[r] += p[2 * r];
                sum[r] += f64::from_bits(p[2 * r + 1]);
            }
            near.extend(
                p[2 * self.nr..]
                    .chunks_exact(2)
                    .filter(|e| e[0] != crate::apsp::reach::NONE)
                    .map(|e| (e[1], e[0])),
            );
        }
        near.sort_unstable();
        near.truncate(self.nk);
        (count, sum, near)
    }
}

/// Refuse a device without double precision when the job folds (its sums are `double`):
/// called in the half's set-up, so the device is left out before any queue starts.
pub fn check_device(job: &ApspJob, device: &Device) -> Result<()> {
    if job.reach.is_some() && !device.info.fp64 {
        return Err(Error::Device(format!(
            "'{}' lacks double precision (cl_khr_fp64), which [apsp.reach] needs for its sums; \
             run the job on CPU workers (units.opencl = \"none\") or another device",
            device.info.name
        )));
    }
    Ok(())
}

/// One queue's reductions: the kernel and the passes' buffers.
#[derive(Debug)]
pub struct DeviceReach {
    kernel: Kernel,
    targets: Option<Pass>,
    all: Option<Pass>,
}

impl DeviceReach {
    /// The reductions of `job` on `device` for batches of up to `batch` trees, or `None` when
    /// the job folds nothing.
    pub fn new(job: &ApspJob, device: &Device, batch: usize) -> Result<Option<DeviceReach>> {
        let Some(reach) = &job.reach else {
            return Ok(None);
        };
        check_device(job, device)?;
        // The private arrays sized for this run (at least 1: OpenCL has no empty arrays).
        let options = format!(
            "{} -DMAX_RADII={} -DMAX_NEAREST={}",
            if job.wide { "-DWIDE=1" } else { "" },
            reach.radii.len().max(reach.isochrones.len()).max(1),
            reach.nearest.max(1)
        );
        let kernel = device.kernel(&KERNELS, &options, "reach_fold")?;
        let q = device.queue()?;
        // Indices into the algorithm's distances: PHAST's are sweep positions.
        let index: Box<dyn Fn(u32) -> u32> =
            match (job.options.gpu_algorithm, job.hierarchy.as_deref()) {
                (GpuAlgorithm::Phast, Some(crate::apsp::phast::AnyHierarchy::Narrow(h))) => {
                    Box::new(move |v| h.pos[v as usize])
                }
                (GpuAlgorithm::Phast, Some(crate::apsp::phast::AnyHierarchy::Wide(h))) => {
                    Box::new(move |v| h.pos[v as usize])
                }
                _ => Box::new(|v| v),
            };
        let n = job.graph.n as u32;
        let cols: Vec<u32> = match &job.targets {
            Some(ts) => ts.iter().map(|&v| index(v)).collect(),
            None => (0..n).map(&index).collect(),
        };
        let targets = if reach.radii.is_empty() && reach.nearest == 0 {
            None
        } else {
            Some(Pass::new(
                device,
                &q,
                &cols,
                &reach.radii,
                reach.nearest,
                reach.weights.as_deref(),
                reach.decay.code(),
                batch,
            )?)
        };
        let all = if reach.isochrones.is_empty() {
            None
        } else {
            let every: Vec<u32> = (0..n).map(&index).collect();
            Some(Pass::new(
                device,
                &q,
                &every,
                &reach.isochrones,
                0,
                None,
                0,
                batch,
            )?)
        };
        q.finish()?;
        Ok(Some(DeviceReach {
            kernel,
            targets,
            all,
        }))
    }

    /// Fold the batch's trees where `at` says they lie: one word slice per tree, laid out as
    /// the record's words after its summary.
    pub fn fold(&mut self, reach: &Reach, cx: &Ctx<'_>, at: Layout<'_>) -> Result<Vec<Vec<u64>>> {
        if let Some(p) = &mut self.targets {
            p.run(&self.kernel, cx, at)?;
        }
        if let Some(p) = &mut self.all {
            p.run(&self.kernel, cx, at)?;
        }
        Ok((0..cx.b)
            .map(|j| {
                let mut f = Folded::new(reach);
                if let Some(p) = &self.targets {
                    (f.count, f.sum, f.near) = p.merge(j);
                }
                if let Some(p) = &self.all {
                    f.iso = p.merge(j).0;
                }
                let mut words = vec![0; reach.words()];
                f.to_words(reach, &mut words);
                words
            })
            .collect())
    }
}
