//! Predecessors on the GPU (`kernels/paths.cl`): after a batch's trees are solved, the
//! `paths_pred` kernel reads their distances where the algorithm left them and picks each
//! vertex's predecessor over the original graph's in-arcs, the first pass of
//! [`crate::apsp::paths::predecessors`]. The rows come back to the host, which settles the
//! zero-weight components a tree may have (reading that batch's distances back only then) and
//! writes them through [`Tracer`]s, the launch's rows in parallel (rayon): with the compact
//! form each task's targets are walked there too (about 1,000 walks of a few hundred vertices a
//! task on a large road graph), which one host thread would serialize behind the device.
//!
//! Device memory per queue: the in-arcs (`4·(n + 1 + 2m)` bytes), an identity index for the
//! frontier algorithms (`4·n`), and predecessor rows for at most `2^24 / n` trees at once
//! (64 MiB).

use super::{Batch, Ctx};
use crate::apsp::paths::{InArcs, Tracer, PENDING};
use crate::apsp::phast::AnyHierarchy;
use std::ops::Range;
use tuccompi::device::{Arg, DBuf, Device, Kernel, KernelSource};
use tuccompi::{Error, Result};

/// The predecessor kernel and its characterization.
pub const KERNELS: KernelSource = KernelSource {
    stem: "paths",
    source: include_str!("../../kernels/paths.cl"),
    characterization: include_str!("../../kernels/paths.toml"),
};

/// A finite vertex without a tight in-arc (the kernel's mark).
const UNEXPLAINED: u32 = u32::MAX - 2;

/// A distance buffer of either width.
#[derive(Debug, Clone, Copy)]
pub enum DistRef<'a> {
    /// u32 distances.
    Narrow(&'a DBuf<u32>),
    /// u64 distances.
    Wide(&'a DBuf<u64>),
}

/// Where a batch's distances are on the device, as `paths_pred` reads them: element
/// `index[v] · vstride + j · jstride` for vertex `v` of tree `j`.
#[derive(Debug)]
pub struct DistView<'a> {
    /// The distances (u32 or u64, the job's compute width).
    pub dist: DistRef<'a>,
    /// The vertex index (PHAST: the sweep positions); `None` = the vertex id itself.
    pub index: Option<&'a DBuf<u32>>,
    /// Elements between consecutive indices.
    pub vstride: usize,
    /// Elements between consecutive trees.
    pub jstride: usize,
}

/// One queue's predecessor state.
pub struct DevicePaths {
    kernel: Kernel,
    offsets: DBuf<u32>,
    tails: DBuf<u32>,
    weights: DBuf<u32>,
    identity: DBuf<u32>,
    pred: DBuf<u32>,
    /// Trees per launch.
    rows: usize,
    /// The in-arcs the offsets reach (their last offset), for the launches' checks.
    m: u32,
    host: Vec<u32>,
    /// The host's path state, one a row being finished at once, kept from launch to launch.
    tracers: parking_lot::Mutex<Vec<Tracer>>,
}

impl std::fmt::Debug for DevicePaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevicePaths(rows={})", self.rows)
    }
}

impl DevicePaths {
    /// Upload the in-arcs of `arcs` (a graph of `n` vertices) for batches of up to `batch`
    /// trees, the kernel built for `wide` (u64) distances or u32.
    pub fn new(
        device: &Device,
        q: &tuccompi::device::Queue,
        arcs: &InArcs,
        n: usize,
        batch: usize,
        wide: bool,
    ) -> Result<Self> {
        let options = if wide { "-DWIDE=1" } else { "" };
        let rows = ((1usize << 24) / n.max(1)).clamp(1, batch.max(1));
        let upload = |data: &[u32]| -> Result<DBuf<u32>> {
            let mut b = DBuf::new(device, data.len().max(1))?;
            q.write(&mut b, 0, data)?;
            Ok(b)
        };
        let identity: Vec<u32> = (0..n as u32).collect();
        Ok(DevicePaths {
            kernel: device.kernel(&KERNELS, options, "paths_pred")?,
            offsets: upload(&arcs.offsets)?,
            tails: upload(&arcs.tails)?,
            weights: upload(&arcs.weights)?,
            identity: upload(&identity)?,
            pred: DBuf::new(device, rows * n)?,
            rows,
            m: arcs.offsets.last().copied().unwrap_or(0),
            host: vec![0; rows * n],
            tracers: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// The predecessor rows of the batch's tasks `tasks` (skipping `skip`, trees redone on the
    /// host), written through the host's tracers, a launch's rows in parallel. The worker calls
    /// [`crate::apsp::paths::chunk_done`] at the end of its chunk.
    pub fn trees(
        &mut self,
        cx: &Ctx<'_>,
        view: DistView<'_>,
        batch: &Batch,
        tasks: Range<usize>,
        skip: &[usize],
    ) -> Result<()> {
        use rayon::prelude::*;
        let n = cx.n;
        let index = view.index.unwrap_or(&self.identity);
        let mut host_dist: Option<Vec<u64>> = None;
        let b = tasks.len();
        let mut j0 = 0;
        while j0 < b {
            let r = self.rows.min(b - j0);
            let dist = match view.dist {
                DistRef::Narrow(d) => Arg::U32s(d),
                DistRef::Wide(d) => Arg::U64s(d),
            };
            // r x n items, each reading distances where the view says the algorithm keeps them.
            cx.q.launch(
                &self.kernel,
                r * n,
                None,
                &[
                    &dist,
                    index,
                    &(view.vstride as u32),
                    &(view.jstride as u32),
                    &self.offsets,
                    &self.tails,
                    &self.weights,
                    &batch.src,
                    &(n as u32),
                    &(j0 as u32),
                    &(r as u32),
                    &self.pred,
                    &self.m,
                ],
            )?;
            cx.q.read(&self.pred, 0, &mut self.host[..r * n])?;
            let job = cx.job;
            let rows: Vec<(usize, usize)> = (0..r)
                .map(|i| (i, tasks.start + j0 + i))
                .filter(|(_, t)| !skip.contains(t))
                .collect();
            // Checked, and the distances read back when a tree has zero-weight components to
            // settle, before the rows are finished in parallel.
            let scan = rows.par_iter().map(|&(i, t)| {
                let row = &self.host[i * n..(i + 1) * n];
                match row.iter().position(|&p| p == UNEXPLAINED) {
                    Some(v) => Err(Error::Device(format!(
                        "paths_pred: vertex {} of source {} has a distance no in-arc explains \
                         (a bug in tuccompi; please report it with the input)",
                        v as u64 + job.graph.id_base,
                        job.sources[t] as u64 + job.graph.id_base
                    ))),
                    None => Ok(row.contains(&PENDING)),
                }
            });
            let pending: Vec<bool> = scan.collect::<Result<_>>()?;
            if pending.contains(&true) && host_dist.is_none() {
                host_dist = Some(read_all(cx, &view)?);
            }
            let layout = Layout::of(cx, &view);
            let (host, all, pool) = (&self.host, host_dist.as_deref(), &self.tracers);
            rows.par_iter().try_for_each(|&(i, t)| {
                let mut tracer = pool.lock().pop().unwrap_or_default();
                let out = tracer.row();
                out.clear();
                out.extend_from_slice(&host[i * n..(i + 1) * n]);
                let done = tracer.finish_device_row(job, t, || {
                    let all = all.expect("read when a tree is pending");
                    Ok(layout.row(all, j0 + i))
                });
                pool.lock().push(tracer);
                done
            })?;
            j0 += r;
        }
        Ok(())
    }
}

/// The batch's whole distance buffer on the host, as u64 (`u64::MAX` = unreachable).
fn read_all(cx: &Ctx<'_>, view: &DistView<'_>) -> Result<Vec<u64>> {
    Ok(match view.dist {
        DistRef::Narrow(d) => {
            let mut h = vec![0u32; d.len()];
            cx.q.read(d, 0, &mut h)?;
            h.into_iter()
                .map(|x| if x == u32::MAX { u64::MAX } else { x as u64 })
                .collect()
        }
        DistRef::Wide(d) => {
            let mut h = vec![0u64; d.len()];
            cx.q.read(d, 0, &mut h)?;
            h
        }
    })
}

/// Where a tree's distances are in a host copy of the batch's buffer.
struct Layout<'a> {
    n: usize,
    vstride: usize,
    jstride: usize,
    /// The sweep positions of the vertices (PHAST), else the vertex ids themselves.
    pos: Option<&'a [u32]>,
}

impl<'a> Layout<'a> {
    fn of(cx: &Ctx<'a>, view: &DistView<'_>) -> Layout<'a> {
        let pos = match (view.index, cx.job.hierarchy.as_deref()) {
            (Some(_), Some(AnyHierarchy::Narrow(h))) => Some(&h.pos[..]),
            (Some(_), Some(AnyHierarchy::Wide(h))) => Some(&h.pos[..]),
            _ => None,
        };
        Layout {
            n: cx.n,
            vstride: view.vstride,
            jstride: view.jstride,
            pos,
        }
    }

    /// Tree `j`'s distances by vertex id from the host copy `all`.
    fn row(&self, all: &[u64], j: usize) -> Vec<u64> {
        let at = |i: usize| all[i * self.vstride + j * self.jstride];
        match self.pos {
            Some(pos) => pos.iter().map(|&p| at(p as usize)).collect(),
            None => (0..self.n).map(at).collect(),
        }
    }
}
