//! The apsp plugin's pair-query CPU worker (`cpu_algorithm = "pairs"`, or `"auto"` for an
//! origin-destination run with few targets): each source's row over the targets from one
//! upward search and one backward search per target on the contraction hierarchy
//! ([`crate::apsp::route::one_to_many`]), instead of a sweep over every vertex.

use super::phast::{AnyHierarchy, ChWeight, Hierarchy};
use super::route::{one_to_many, Router, Search};
use super::width::{overflowed, Redo};
use super::{ApspJob, RowWrite};
use crate::common::PathSummary;
use std::ops::Range;
use std::sync::Arc;
use tuccompi::plugin::{PrepareCtx, RecordsOut, Worker};
use tuccompi::{Error, Result};

/// A [`Router`] of either weight type, made once per job and shared by its workers.
#[derive(Debug)]
pub enum AnyRouter {
    /// For a u32 hierarchy.
    Narrow(Router<u32>),
    /// For a u64 hierarchy.
    Wide(Router<u64>),
}

impl AnyRouter {
    /// The router of `h`. O(n + arcs).
    pub fn of(h: &AnyHierarchy) -> AnyRouter {
        match h {
            AnyHierarchy::Narrow(h) => AnyRouter::Narrow(Router::new(h)),
            AnyHierarchy::Wide(h) => AnyRouter::Wide(Router::new(h)),
        }
    }
}

/// A job's router with the hierarchy it indexes (kept alive with it, so that the session key
/// naming the hierarchy by address never names another).
#[derive(Debug)]
pub struct JobRouter {
    /// The router.
    pub router: AnyRouter,
    _source: Arc<AnyHierarchy>,
}

/// The router of `h` for a job: the one the session keeps for this hierarchy, else made (and
/// kept). O(n + arcs) the first time.
pub fn router_for(ctx: &PrepareCtx<'_>, h: &Arc<AnyHierarchy>) -> Result<Arc<JobRouter>> {
    let key = format!("apsp pair router {:p}", Arc::as_ptr(h));
    ctx.keep(&key, || {
        let bytes = h.bytes() / 2;
        Ok((
            JobRouter {
                router: AnyRouter::of(h),
                _source: h.clone(),
            },
            bytes,
        ))
    })
}

/// A pair-query worker for `job` (which has targets) over `h`.
pub fn cpu_worker<'a>(job: &'a ApspJob, h: &'a AnyHierarchy) -> Result<Box<dyn Worker + 'a>> {
    let Some(targets) = job.targets.as_deref() else {
        return Err(Error::Config(
            "[apsp] cpu_algorithm = \"pairs\" answers an origin-destination run: give \
             apsp.targets, or use \"phast\" or \"dijkstra\""
                .into(),
        ));
    };
    let Some(router) = job.router.as_ref().map(|r| &r.router) else {
        return Err(Error::Config(
            "the pair-query worker of a job prepared without its router (a bug in tuccompi)".into(),
        ));
    };
    Ok(match (h, router) {
        (AnyHierarchy::Narrow(h), AnyRouter::Narrow(r)) => {
            Box::new(PairsWorker::new(job, h, r, targets))
        }
        (AnyHierarchy::Wide(h), AnyRouter::Wide(r)) => {
            Box::new(PairsWorker::new(job, h, r, targets))
        }
        _ => unreachable!("the router is made from the job's hierarchy"),
    })
}

struct PairsWorker<'a, W> {
    job: &'a ApspJob,
    h: &'a Hierarchy<W>,
    r: &'a Router<W>,
    targets: &'a [u32],
    search: Search<W>,
    row: Vec<W>,
    redo: Redo,
}

impl<'a, W: ChWeight> PairsWorker<'a, W> {
    fn new(job: &'a ApspJob, h: &'a Hierarchy<W>, r: &'a Router<W>, targets: &'a [u32]) -> Self {
        PairsWorker {
            job,
            h,
            r,
            targets,
            search: Search::new(h.n),
            row: vec![W::INF; targets.len()],
            redo: Redo::default(),
        }
    }
}

impl<W: ChWeight + RowWrite> Worker for PairsWorker<'_, W> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        for t in range {
            let s = self.job.sources[t];
            one_to_many(
                self.h,
                self.r,
                s,
                self.targets,
                &mut self.search,
                &mut self.row,
            );
            let summary = PathSummary::of(&self.row);
            // A u32 distance at CEIL overflowed: the tree again in u64.
            if overflowed(self.job, &summary) {
                let s = self.redo.tree(self.job, t)?;
                crate::apsp::reach::put_redone(self.job, out, t, &s);
                continue;
            }
            crate::apsp::reach::put::<W>(self.job, out, t, &summary, |_| W::INF);
            if let Some(rows) = &self.job.rows {
                W::write_row(rows, t, &self.row)?;
            }
        }
        Ok(())
    }
}
