//! The apsp plugin's PHAST CPU worker: chunks of tasks in batches of k trees through a
//! [`Sweeper`], records and rows over the job's targets.

use super::cpu::{Sweeper, SUPPORTED_K};
use super::host_cache::{phast_trees, CpuCache};
use super::{AnyHierarchy, ChWeight, Hierarchy};
use crate::apsp::width::Redo;
use crate::apsp::{ApspJob, RowWrite};
use crate::common::PathSummary;
use std::ops::Range;
use tuccompi::plugin::Record;
use tuccompi::plugin::{RecordsOut, Worker};
use tuccompi::tuning::{Choice, Source};
use tuccompi::{Error, Result};

/// Trees per CPU sweep: `[apsp] cpu_batch`, else the tuning rule for `n` vertices of
/// `value_bytes`-byte distances on this host.
pub fn cpu_batch(config: Option<usize>, n: usize, value_bytes: usize) -> Result<Choice> {
    match config {
        Some(k) if SUPPORTED_K.contains(&k) => Ok(Choice {
            value: k,
            source: Source::Config,
            reason: "[apsp] cpu_batch".into(),
        }),
        Some(k) => Err(Error::Config(format!(
            "[apsp] cpu_batch = {k}: PHAST sweeps {SUPPORTED_K:?} trees at once; use one of \
             these or \"auto\""
        ))),
        None => Ok(phast_trees(n, value_bytes, &CpuCache::host())),
    }
}

/// A PHAST worker for `job` over `h`.
/// With a selection toward the job's targets (`job.selection`), it sweeps only that.
pub fn cpu_worker<'a>(job: &'a ApspJob, h: &'a AnyHierarchy) -> Result<Box<dyn Worker + 'a>> {
    let sel = job.selection.as_deref();
    let sub = sel.map(|s| &s.sub);
    Ok(match (h, sub) {
        (AnyHierarchy::Narrow(h), None) => Box::new(PhastWorker::new(job, h, None)?),
        (AnyHierarchy::Wide(h), None) => Box::new(PhastWorker::new(job, h, None)?),
        (AnyHierarchy::Narrow(h), Some(AnyHierarchy::Narrow(sub))) => {
            Box::new(PhastWorker::new(job, h, sel.map(|s| (sub, &s.local[..])))?)
        }
        (AnyHierarchy::Wide(h), Some(AnyHierarchy::Wide(sub))) => {
            Box::new(PhastWorker::new(job, h, sel.map(|s| (sub, &s.local[..])))?)
        }
        _ => {
            return Err(Error::Output(
                "the targets' selection and the hierarchy differ in width (a bug in tuccompi; \
                 please report it)"
                    .into(),
            ))
        }
    })
}

struct PhastWorker<'a, W: ChWeight> {
    job: &'a ApspJob,
    sw: Sweeper<'a, W>,
    /// Sweep positions of the targets (`None` = every vertex).
    tpos: Option<Vec<u32>>,
    recs: Vec<[u64; 4]>,
    row: Vec<W>,
    batch: Vec<u32>,
    redo: Redo,
    tracer: crate::apsp::paths::Tracer,
    /// With folds over the targets only (no isochrones): the batch's distances at the targets,
    /// tree-major ([`Sweeper::gather`]), and the column numbers `0..T` the fold reads them by.
    gathered: Option<(Vec<W>, Vec<u32>)>,
}

/// A CPU PHAST worker's distances up to this size are mapped when it is made (above).
pub const TOUCH_BYTES: usize = 64 << 20;

impl<'a, W: ChWeight> PhastWorker<'a, W> {
    fn new(
        job: &'a ApspJob,
        h: &'a Hierarchy<W>,
        sel: Option<(&'a Hierarchy<W>, &'a [u32])>,
    ) -> Result<Self> {
        let swept = sel.map_or(h, |s| s.0);
        let k = cpu_batch(
            job.options.cpu_batch.and_then(|b| b.value()),
            swept.n,
            std::mem::size_of::<W>(),
        )?
        .value;
        let mut sw = match sel {
            Some((sub, local)) => Sweeper::restricted(h, sub, local, k)?,
            None => Sweeper::new(h, k)?,
        };
        // The runtime makes every worker before the run starts: map the pages its sweeps write
        // now, not in its first chunk, where that first chunk is short against the mapping
        // (city graphs: a 20 ms run's first chunks took 2-3 times their later ones). A country
        // graph's distances (n·k words: 0.8 GB at 26M vertices) are mapped by the sweeps of the
        // workers that get chunks: touching every worker's took a second and 6 GB of memory
        // for a 16-task run, and a sweep there is long against its page faults.
        if swept.n * k * std::mem::size_of::<W>() <= TOUCH_BYTES {
            sw.touch(job.summaries_only());
        }
        Ok(PhastWorker {
            job,
            sw,
            tpos: job
                .targets
                .as_ref()
                .map(|t| t.iter().map(|&v| swept.pos[v as usize]).collect()),
            recs: vec![[0; 4]; k],
            row: Vec::new(),
            batch: Vec::with_capacity(k),
            redo: Redo::default(),
            tracer: Default::default(),
            gathered: match (&job.targets, &job.reach) {
                (Some(t), Some(r)) if r.isochrones.is_empty() => {
                    Some((Vec::new(), (0..t.len() as u32).collect()))
                }
                _ => None,
            },
        })
    }
}

impl<W: ChWeight + RowWrite> Worker for PhastWorker<'_, W> {
    /// A sweep costs about the same for 1 tree as for k: chunks come in whole sweeps.
    fn granule(&self) -> usize {
        self.sw.k()
    }
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let k = self.sw.k();
        let mut start = range.start;
        while start < range.end {
            let end = (start + k).min(range.end);
            self.batch.clear();
            self.batch.extend_from_slice(&self.job.sources[start..end]);
            self.sw.run_with(&self.batch, self.job.summaries_only());
            self.sw.summarize(self.tpos.as_deref(), &mut self.recs);
            if let (Some((g, _)), Some(tpos)) = (&mut self.gathered, &self.tpos) {
                self.sw.gather(tpos, g);
            }
            for (j, t) in (start..end).enumerate() {
                // A u32 tree with a distance at CEIL overflowed: redone in u64.
                if self.recs[j][3] == W::CEIL.to_u64() {
                    let s = self.redo.tree(self.job, t)?;
                    crate::apsp::reach::put_redone(self.job, out, t, &s);
                    continue;
                }
                let s = PathSummary::from_words(&self.recs[j]);
                let sw = &self.sw;
                match &self.gathered {
                    // Folded by column from the gathered rows: the same targets in the same
                    // order, read from one contiguous row.
                    Some((g, cols)) => {
                        let row = &g[j * cols.len()..(j + 1) * cols.len()];
                        let (job, n) = (self.job, cols.len());
                        crate::apsp::reach::put_over(job, out, t, &s, Some(cols), n, |c| {
                            row[c as usize]
                        });
                    }
                    None => crate::apsp::reach::put(self.job, out, t, &s, |v| sw.dist(j, v)),
                }
                if let Some(rows) = &self.job.rows {
                    self.sw.row(j, self.job.targets.as_deref(), &mut self.row);
                    W::write_row(rows, t, &self.row)?;
                }
                if self.job.paths.is_some() {
                    self.sw.row(j, None, &mut self.row);
                    self.tracer.tree(self.job, t, &self.row)?;
                }
            }
            start = end;
        }
        // The compact form's walked paths on disk before the chunk is journaled.
        crate::apsp::paths::chunk_done(self.job)
    }
}
