//! The per-queue buffers every algorithm shares: the batch's distances (`b·n + v`), its sources,
//! and the device reduction of each distance row into a [`PathSummary`].

use super::{Ctx, Setup};
use crate::common::{Dist, PathSummary, RowWrite};
use std::ops::Range;
use tuccompi::device::Kernel;
use tuccompi::device::{Arg, DBuf, Device, KernelArg, Local, Queue, Scalar};
use tuccompi::plugin::Record;
use tuccompi::sink::NpyRows;
use tuccompi::Result;

/// A distance buffer of the job's width.
#[derive(Debug)]
pub enum DistBuf {
    /// u32 distances.
    Narrow(DBuf<u32>),
    /// u64 distances.
    Wide(DBuf<u64>),
}

impl DistBuf {
    /// `len` distances, 64-bit when `wide`.
    pub fn new(device: &Device, len: usize, wide: bool) -> Result<Self> {
        Ok(if wide {
            DistBuf::Wide(DBuf::new(device, len)?)
        } else {
            DistBuf::Narrow(DBuf::new(device, len)?)
        })
    }
    /// As a kernel argument (`__global DIST*`).
    pub fn arg(&self) -> Arg<'_> {
        match self {
            DistBuf::Narrow(b) => Arg::U32s(b),
            DistBuf::Wide(b) => Arg::U64s(b),
        }
    }
}

impl KernelArg for DistBuf {
    fn arg(&self) -> Arg<'_> {
        DistBuf::arg(self)
    }
}

/// One queue's batch buffers.
#[derive(Debug)]
pub struct Batch {
    /// Distances, `b·n + v`.
    pub dist: DistBuf,
    /// The batch's sources (internal ids).
    pub src: DBuf<u32>,
    partial: DBuf<u64>,
    /// `sssp_summary`, for batch-major algorithms only (others never build kernels/sssp.cl).
    summary: Option<Kernel>,
}

impl Batch {
    /// Buffers for batches of up to `params.batch` sources.
    pub fn new(setup: &Setup<'_>) -> Result<Self> {
        let batch = setup.batch();
        let batch_major = setup.job.options.gpu_algorithm.spec().batch_major;
        Ok(Batch {
            dist: setup.dist_buf(setup.items())?,
            src: DBuf::new(setup.device, batch)?,
            partial: DBuf::new(
                setup.device,
                if batch_major {
                    batch * setup.params.groups_per_task() * PathSummary::WORDS
                } else {
                    1
                },
            )?,
            summary: if batch_major {
                Some(setup.kernel("sssp_summary")?)
            } else {
                None
            },
        })
    }

    /// One summary per source: `sssp_summary` reduces each row into `groups_per_task` partial
    /// records on the device; the host merges those.
    pub fn summaries(&self, cx: &Ctx<'_>) -> Result<Vec<PathSummary>> {
        let Some(summary) = &self.summary else {
            return Err(tuccompi::Error::Device(
                "the batch-major summary was asked of an algorithm with its own distances (a \
                 bug; please report it)"
                    .into(),
            ));
        };
        let gpt = cx.sh.params.groups_per_task();
        let lsum = cx.local("sssp_summary")?;
        let words = PathSummary::WORDS;
        // b x groups groups, each writing its 4 words of partial.
        cx.q.launch(
            summary,
            cx.b * gpt * lsum,
            Some(lsum),
            &[
                &self.dist,
                &self.partial,
                &Local::of::<u64>(words * lsum),
                &(cx.n as u32),
                &(gpt as u32),
            ],
        )?;
        let mut partial = vec![0u64; cx.b * gpt * words];
        cx.q.read(&self.partial, 0, &mut partial)?;
        Ok(partial
            .chunks_exact(gpt * words)
            .map(|row| {
                let mut s = PathSummary::default();
                for p in row.chunks_exact(words) {
                    s.merge(PathSummary::from_words(p));
                }
                s
            })
            .collect())
    }

    /// Read each source's row of `dist` and write it as row `task` of `rows`.
    /// Records over `[apsp] targets` (and their rows, when requested) from the batch's
    /// distance rows read back to the host.
    pub fn target_summaries(&self, cx: &Ctx<'_>, tasks: Range<usize>) -> Result<Vec<PathSummary>> {
        match &self.dist {
            DistBuf::Narrow(d) => target_summaries::<u32>(cx, d, tasks),
            DistBuf::Wide(d) => target_summaries::<u64>(cx, d, tasks),
        }
    }

    pub fn write_rows(&self, cx: &Ctx<'_>, tasks: Range<usize>, rows: &NpyRows) -> Result<()> {
        match &self.dist {
            DistBuf::Narrow(d) => write_rows::<u32>(cx.q, d, rows, tasks, cx.n),
            DistBuf::Wide(d) => write_rows::<u64>(cx.q, d, rows, tasks, cx.n),
        }
    }
}

/// Records over `[apsp] targets` of tasks `tasks` (and their rows, when requested) from the
/// batch's full distance rows read back (`b·n + v` layout).
fn target_summaries<D: Scalar + Dist + RowWrite>(
    cx: &Ctx<'_>,
    d: &DBuf<D>,
    tasks: Range<usize>,
) -> Result<Vec<PathSummary>> {
    let (mut row, mut buf) = (vec![D::default(); cx.n], Vec::new());
    tasks
        .enumerate()
        .map(|(i, t)| {
            cx.q.read(d, i * cx.n, &mut row)?;
            crate::apsp::targets::finish_row(cx.job, t, &row, &mut buf)
        })
        .collect()
}

fn write_rows<D: Scalar + RowWrite>(
    q: &Queue,
    d: &DBuf<D>,
    rows: &NpyRows,
    tasks: Range<usize>,
    n: usize,
) -> Result<()> {
    let mut row = vec![D::default(); n];
    for (i, t) in tasks.enumerate() {
        q.read(d, i * n, &mut row)?;
        D::write_row(rows, t, &row)?;
    }
    Ok(())
}
