//! Predecessors on the GPU (`kernels/paths.cl`): after a batch's trees are solved, the
//! `paths_pred` kernel reads their distances where the algorithm left them and picks each
//! vertex's predecessor over the original graph's in-arcs, the first pass of
//! [`crate::apsp::paths::predecessors`]. The rows come back to the host, which settles the
//! zero-weight components a tree may have (reading that batch's distances back only then) and
//! writes them through the job's [`Tracer`].
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
        })
    }

    /// The predecessor rows of the batch's tasks `tasks` (skipping `skip`, trees redone on the
    /// host), written through `tracer`.
    pub fn trees(
        &mut self,
        cx: &Ctx<'_>,
        view: DistView<'_>,
        batch: &Batch,
        tasks: Range<usize>,
        skip: &[usize],
        tracer: &mut Tracer,
    ) -> Result<()> {
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
            for i in 0..r {
                let (j, t) = (j0 + i, tasks.start + j0 + i);
                if skip.contains(&t) {
                    continue;
                }
                let row = &self.host[i * n..(i + 1) * n];
                if let Some(v) = row.iter().position(|&p| p == UNEXPLAINED) {
                    return Err(Error::Device(format!(
                        "paths_pred: vertex {} of source {} has a distance no in-arc explains \
                         (a bug in tuccompi; please report it with the input)",
                        v as u64 + cx.job.graph.id_base,
                        cx.job.sources[t] as u64 + cx.job.graph.id_base
                    )));
                }
                let pending = row.contains(&PENDING);
                let out = tracer.row();
                out.clear();
                out.extend_from_slice(row);
                if pending && host_dist.is_none() {
                    host_dist = Some(read_all(cx, &view)?);
                }
                tracer.finish_device_row(cx.job, t, || {
                    let all = host_dist.as_ref().expect("read when a tree is pending");
                    Ok(row_of(cx, &view, all, j))
                })?;
            }
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

/// Tree `j`'s distances by vertex id from the host copy `all`.
fn row_of(cx: &Ctx<'_>, view: &DistView<'_>, all: &[u64], j: usize) -> Vec<u64> {
    let at = |i: usize| all[i * view.vstride + j * view.jstride];
    let pos = match (view.index, cx.job.hierarchy.as_deref()) {
        (Some(_), Some(AnyHierarchy::Narrow(h))) => &h.pos,
        (Some(_), Some(AnyHierarchy::Wide(h))) => &h.pos,
        _ => return (0..cx.n).map(at).collect(),
    };
    pos.iter().map(|&p| at(p as usize)).collect()
}
