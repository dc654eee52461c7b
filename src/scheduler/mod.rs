//! Scheduling policies: who runs which chunk of tasks.
//!
//! Takes nothing from below; offers the thread and node layers a [`TaskSource`] that units pull
//! [`Chunk`]s from. A chunk is a guard: when the unit drops it (finished) it reports its time to
//! the source, so a speed-aware policy always hears how long each chunk took; [`Chunk::fail`]
//! gives its tasks back to the source instead, to run on another unit.
//!
//! - **Equitable** ([`Equitable`]) splits the task space into one contiguous share per unit
//!   before the run (the thesis' static policy); each unit pulls its share in chunks, so results
//!   stream. A failed unit's tasks go to the units that finish their own shares.
//! - **Work-queue** ([`WorkQueue`]) is a central queue that learns each unit's cost model from
//!   the chunks it finished (a chunk of k tasks takes `latency + k · per_task` seconds) and plans
//!   the end of the run on every request: the earliest time by which the units, each from the
//!   moment its current chunk ends, could clear what is left. A unit takes a fraction of its
//!   share of that plan (so an error in the estimates is corrected on the next request), a
//!   unit with a large per-chunk latency (a GPU batch) takes whole batches, and a unit that
//!   could not finish even one chunk by the planned end takes nothing and leaves the run.
//!
//! The rules were chosen with a deterministic simulator (`sim.rs`, tests only) that runs a
//! source in virtual time against units of known rate and latency and compares the makespan
//! with the ideal one.

mod equitable;
pub mod history;
mod queue;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod test;

pub use equitable::Equitable;
pub use queue::{Estimate, WorkQueue};

use crate::config::{Policy, SchedulerPlan, Shares};
use std::ops::Range;
use std::time::Instant;

/// A source of chunks for units.
///
/// Implementors hand out chunks with [`Chunk::new`]; the thread layer never reports by hand:
/// dropping the chunk calls [`TaskSource::finished`], and [`Chunk::fail`] calls
/// [`TaskSource::failed`].
pub trait TaskSource: Sync {
    /// The next chunk for `unit`, at most `want` tasks; `None` when there is nothing (more) for
    /// it, and the unit then leaves the run.
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>>;
    /// Stop handing out work (after a failure, or when the run is interrupted).
    fn stop(&self);
    /// The units are ready (their workers made) and about to ask for their first chunks: the
    /// run starts now. A source that plans with the time the run has lasted counts from here,
    /// not from when it was made. Called once, before any [`TaskSource::next`].
    fn start(&self) {}
    /// Seconds on this source's clock (a speed-aware source measures chunks with it).
    fn now(&self) -> f64 {
        0.0
    }
    /// `unit` finished `tasks` in `secs` seconds. Called when its [`Chunk`] is dropped.
    fn finished(&self, _unit: usize, _tasks: Range<usize>, _secs: f64) {}
    /// `unit` failed to run `tasks`: they go back to the source for another unit, and `unit`
    /// gets no more work. Called by [`Chunk::fail`] (and when a chunk is dropped while its
    /// thread panics); `tasks` is empty when a unit is taken out without a chunk (its worker
    /// could not be made).
    fn failed(&self, unit: usize, tasks: Range<usize>);
    /// `unit`, a CPU worker between two groups of its chunk, has run `done` in `secs` seconds
    /// and has `rest` (the chunk's end) still to run: the tail of `rest` the source takes
    /// back for units that wait with nothing to run (empty: run it all). Called only while
    /// [`starving`](TaskSource::starving). The default takes nothing.
    fn reclaim(
        &self,
        _unit: usize,
        _done: Range<usize>,
        _secs: f64,
        rest: Range<usize>,
    ) -> Range<usize> {
        rest.end..rest.end
    }
    /// Whether some unit waits with nothing left to hand out, or the run nears its end with
    /// nothing left to hand out (then [`reclaim`] may take back the tail of a chunk in
    /// progress). A cheap check, made between a CPU worker's groups.
    ///
    /// [`reclaim`]: TaskSource::reclaim
    fn starving(&self) -> bool {
        false
    }
    /// Unit `unit` runs `tasks` tasks together for about the cost of one
    /// ([`crate::plugin::Worker::granule`]); said once, before its first request. Sources that
    /// size no chunks ignore it.
    fn granule(&self, _unit: usize, _tasks: usize) {}
    /// Each unit's cost model as measured so far (`None`: not measured), for the speed
    /// history (a device queue's: its device's, all its queues together); empty for sources
    /// that measure nothing.
    fn estimates(&self) -> Vec<Option<Estimate>> {
        Vec::new()
    }
    /// For each unit that is a queue of a device with several queues, how many of its
    /// device's queues the run found worth keeping busy (the work queue's rule *busy queues*),
    /// for the speed history; `None` where it was not decided (or the unit is no such queue);
    /// empty for sources that measure nothing.
    fn busy_queues(&self) -> Vec<Option<usize>> {
        Vec::new()
    }
    /// A counter that changes whenever waiting units should ask again because more of a
    /// device's queues may now take work (rule *busy queues*); the thread layer's waiting
    /// units are woken through [`TaskSource::wait_for_work`], the simulator reads this.
    fn wakes(&self) -> u64 {
        0
    }
    /// Called by a unit that got `None`: blocks while other units are still running (one of
    /// them may fail and give its tasks back), then says whether to ask again (`true`: tasks
    /// came back) or to leave (`false`: the run is over for this unit). The default leaves at
    /// once.
    fn wait_for_work(&self, _unit: usize) -> bool {
        false
    }
    /// After the run: how many tasks no unit finished (given back by failed units with no unit
    /// left to take them). Under MPI, rank 0's source waits for the other ranks first.
    fn left_over(&self) -> usize {
        0
    }
}

/// A chunk of tasks handed to one unit. Dropping it reports the chunk finished, with the time
/// since it was handed out; [`Chunk::fail`] gives the tasks back instead.
#[must_use = "a chunk reports its time when dropped; drop it when the unit has finished it"]
pub struct Chunk<'a> {
    source: &'a dyn TaskSource,
    unit: usize,
    tasks: Range<usize>,
    start: f64,
    settled: bool,
    /// When it last asked [`TaskSource::reclaim`] (seconds into the chunk).
    asked: Option<f64>,
}

impl std::fmt::Debug for Chunk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Chunk(unit {}, tasks {}..{})",
            self.unit, self.tasks.start, self.tasks.end
        )
    }
}

impl<'a> Chunk<'a> {
    /// Hand `tasks` to `unit`; the clock starts now (`source.now()`).
    pub fn new(source: &'a dyn TaskSource, unit: usize, tasks: Range<usize>) -> Self {
        Chunk {
            start: source.now(),
            source,
            unit,
            tasks,
            settled: false,
            asked: None,
        }
    }
    /// The tasks to run.
    pub fn tasks(&self) -> Range<usize> {
        self.tasks.clone()
    }
    /// Seconds since the chunk was handed out, on the source's clock.
    pub fn elapsed(&self) -> f64 {
        (self.source.now() - self.start).max(0.0)
    }
    /// Between two groups, the unit has run `done` (from the chunk's start) and `at..` is
    /// left: the source may take a tail of it back ([`TaskSource::reclaim`]); the chunk then
    /// ends where that tail starts, and that end is returned.
    /// It asks at most every [`RECLAIM_EVERY`] seconds, so that workers of tiny tasks do not
    /// queue on the source's lock.
    pub fn reclaim(&mut self, at: usize) -> usize {
        if at >= self.tasks.end || !self.source.starving() {
            return self.tasks.end;
        }
        let secs = self.elapsed();
        if self.asked.is_some_and(|t| secs - t < RECLAIM_EVERY) {
            return self.tasks.end;
        }
        self.asked = Some(secs);
        let done = self.tasks.start..at;
        let back = self
            .source
            .reclaim(self.unit, done, secs, at..self.tasks.end);
        if !back.is_empty() {
            self.tasks.end = back.start;
        }
        self.tasks.end
    }
    /// The unit could not run these tasks: they go back to the source.
    pub fn fail(mut self) {
        self.settled = true;
        self.source.failed(self.unit, self.tasks.clone());
    }
}

/// Seconds between a chunk's asks to give back its rest ([`Chunk::reclaim`]).
pub const RECLAIM_EVERY: f64 = 1e-3;

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        if std::thread::panicking() {
            // Unwinding through a chunk: its results were not delivered.
            self.source.failed(self.unit, self.tasks.clone());
        } else {
            let secs = (self.source.now() - self.start).max(0.0);
            self.source.finished(self.unit, self.tasks.clone(), secs);
        }
    }
}

/// What kind of cost a unit's chunk has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitKind {
    /// A CPU worker: a chunk costs its tasks' time, nothing per chunk.
    Cpu,
    /// A device queue: a chunk is a batch with a fixed cost (launches, transfers, rounds) on
    /// top of its tasks' time; the policy learns both.
    Device,
}

/// What the scheduler knows of a unit before the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UnitInfo {
    /// Its kind.
    pub kind: UnitKind,
    /// Units of one class run at the same speed (the CPU workers of a node, the queues of one
    /// device): a unit not measured yet borrows its class's estimate.
    pub class: String,
    /// Its cost model measured by an earlier run, if any: the queue starts from it instead of
    /// probing, and the unit's own chunks take over as they finish. For a device queue, the
    /// model of its device (all its queues together, as [`TaskSource::estimates`] gives it).
    #[serde(default)]
    pub prior: Option<Estimate>,
    /// For a device queue, the device it runs on (its queues share the device's speed: the
    /// work queue learns one model of their combined rate); `None`: its class names it (the
    /// device's name, so that identical devices count as one).
    #[serde(default)]
    pub device: Option<String>,
    /// The most tasks it asks for at once (a device's batch), when known: where a speed is
    /// read off its model ([`speed_weights`]).
    #[serde(default)]
    pub chunk: Option<usize>,
    /// For a device queue, how many of its device's queues an earlier run found worth keeping
    /// busy (rule *busy queues*, from the speed history): the work queue starts there and
    /// tries no other count. `None`: not known; the work queue finds it.
    #[serde(default)]
    pub busy: Option<usize>,
    /// It leaves the run when it gets nothing, rather than wait to be asked again (another
    /// rank's unit under MPI master-slave): rule *busy queues* keeps every queue of its device
    /// busy, since a queue it held back would leave for good.
    #[serde(default)]
    pub leaves: bool,
}

impl UnitInfo {
    /// A CPU worker of class `class`.
    pub fn cpu(class: impl Into<String>) -> Self {
        UnitInfo {
            kind: UnitKind::Cpu,
            class: class.into(),
            prior: None,
            chunk: None,
            device: None,
            busy: None,
            leaves: false,
        }
    }
    /// A device queue of class `class` (the device).
    pub fn device(class: impl Into<String>) -> Self {
        UnitInfo {
            kind: UnitKind::Device,
            class: class.into(),
            prior: None,
            chunk: None,
            device: None,
            busy: None,
            leaves: false,
        }
    }
    /// The same unit, asking for at most `chunk` tasks at once.
    pub fn with_chunk(mut self, chunk: usize) -> Self {
        self.chunk = Some(chunk);
        self
    }
    /// The same unit, a queue of device `device` (see [`UnitInfo::device`]).
    pub fn on_device(mut self, device: impl Into<String>) -> Self {
        self.device = Some(device.into());
        self
    }
    /// For a device queue, the name of its device ([`UnitInfo::device`], else its class).
    fn device_name(&self) -> Option<&str> {
        (self.kind == UnitKind::Device).then(|| self.device.as_deref().unwrap_or(&self.class))
    }
    /// The same unit, a queue of a device of which an earlier run kept `busy` queues busy
    /// (see [`UnitInfo::busy`]).
    pub fn with_busy(mut self, busy: Option<usize>) -> Self {
        self.busy = busy;
        self
    }
    /// The same unit, with the cost model an earlier run measured.
    pub fn with_prior(mut self, prior: Option<Estimate>) -> Self {
        self.prior = prior;
        self
    }
}

/// A clock in seconds.
pub trait Clock: Send + Sync {
    /// Seconds since some fixed start.
    fn now(&self) -> f64;
}

/// The wall clock: seconds since it was made.
#[derive(Debug)]
pub struct WallClock(Instant);

impl Default for WallClock {
    fn default() -> Self {
        WallClock(Instant::now())
    }
}

impl Clock for WallClock {
    fn now(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// Build the source for the plan's policy over `tasks` for `units`. Equitable shares are
/// equal, or (`scheduler.shares = "speed"`) proportional to each unit's known speed
/// ([`speed_weights`]); without a speed for every unit they are equal, and a warning says
/// which unit has none.
pub fn source(
    plan: &SchedulerPlan,
    tasks: Range<usize>,
    units: &[UnitInfo],
) -> Box<dyn TaskSource> {
    match plan.policy {
        Policy::Equitable => {
            let weights = match plan.shares {
                Shares::Equal => vec![1.0; units.len()],
                Shares::Speed => speed_weights(units).unwrap_or_else(|why| {
                    tracing::warn!("scheduler.shares = \"speed\": {why}; equal shares instead");
                    vec![1.0; units.len()]
                }),
            };
            Box::new(Equitable::new(tasks, &weights))
        }
        Policy::WorkQueue => Box::new(WorkQueue::new(tasks, units).rules_of(plan)),
    }
}

/// Each unit's speed in tasks per second, from the cost model an earlier run measured
/// ([`UnitInfo::prior`], or a unit of its class's): the weights of speed-proportional
/// equitable shares. A model is read at the unit's chunk ([`UnitInfo::chunk`], else
/// [`SPEED_CHUNK`] tasks), its per-chunk latency spread over them; a device's speed is split
/// evenly among its queues. The error names the first unit with no model.
pub fn speed_weights(units: &[UnitInfo]) -> Result<Vec<f64>, String> {
    units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let model = u.prior.or_else(|| {
                units
                    .iter()
                    .filter(|v| v.class == u.class)
                    .find_map(|v| v.prior)
            });
            let k = u.chunk.unwrap_or(SPEED_CHUNK).max(1);
            // A device's model is its queues' together: each queue has its part.
            let queues = units
                .iter()
                .filter(|v| v.device_name().is_some() && v.device_name() == u.device_name())
                .count()
                .max(1);
            match model {
                Some(m) if m.time(k) > 0.0 && m.time(k).is_finite() => {
                    Ok(k as f64 / m.time(k) / queues as f64)
                }
                _ => Err(format!(
                    "no speed is known for unit {i} ({}): a work-queue run of the same job \
                     stores one (scheduler.history)",
                    u.class
                )),
            }
        })
        .collect()
}

/// The chunk a cost model is read at for a unit's speed when its chunk is not known
/// ([`speed_weights`]).
pub const SPEED_CHUNK: usize = 64;
