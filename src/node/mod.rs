//! The node layer: one process per machine; MPI ranks when built with `--features mpi`.
//!
//! Takes the scheduler's policies; offers the runtime a [`Node`]: this process's rank, the
//! [`TaskSource`] for its units (the whole task space on a single node; a static share, or
//! chunks handed out by rank 0, under MPI), the way finished chunks' records reach rank 0's
//! journal as they finish, and the gathering of records and statistics at rank 0.

#[cfg(feature = "mpi")]
pub mod mpi;

use crate::config::Plan;
use crate::plugin::Records;
use crate::scheduler::{self, TaskSource, UnitInfo};
use crate::sink::journal::Journal;
use crate::thread::UnitStats;
use crate::{Error, Result};
use std::ops::Range;
use std::sync::Arc;

/// What the runtime needs from the node layer.
pub trait Node: Sync {
    /// This process's rank (0 on a single node).
    fn rank(&self) -> usize;
    /// Number of nodes.
    fn size(&self) -> usize;
    /// Wait for every node.
    fn barrier(&self) -> Result<()>;
    /// The source of chunks for this node's `units` over tasks `0..tasks`. On rank 0 (under
    /// MPI), `journal` receives the records of the chunks other ranks finish, as they finish.
    fn task_source(
        &self,
        tasks: usize,
        plan: &Plan,
        units: &[UnitInfo],
        journal: Option<Arc<Journal>>,
    ) -> Result<Box<dyn TaskSource + '_>>;
    /// Send the records of finished tasks to rank 0's journal (called on other ranks, from
    /// their unit threads, as chunks finish; `unit` is the sending unit's index on this node).
    fn forward_records(&self, unit: usize, tasks: Range<usize>, records: &[u64]) -> Result<()>;
    /// Rank 0's `bytes`, on every node.
    fn broadcast(&self, bytes: Vec<u8>) -> Result<Vec<u8>>;
    /// Bring every node's records to rank 0 (each task was run by exactly one node).
    fn gather_records(&self, records: &mut Records) -> Result<()>;
    /// Per-node statistics, gathered at rank 0, for the report; the keys of the object `extra`
    /// are added to this node's entry (e.g. `device_note`: why a node that asked for devices
    /// has none).
    fn gather_stats(
        &self,
        stats: &[UnitStats],
        devices: &[serde_json::Value],
        extra: serde_json::Value,
    ) -> Result<serde_json::Value>;
    /// The ranks of this machine sharing one copy of the input graph (under MPI).
    fn graph_share(&self) -> Option<&dyn crate::graph::GraphShare> {
        None
    }
    /// Whether this process runs under mpirun (each rank then reports its units).
    fn under_mpi(&self) -> bool {
        false
    }
    /// Turn a local failure into the error to report (under MPI: stop every rank, naming this
    /// one).
    fn fail(&self, e: Error) -> Error;
}

/// Add the keys of the object `extra` to the object `into`.
fn merge(into: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(o), serde_json::Value::Object(e)) = (into.as_object_mut(), extra) {
        o.extend(e);
    }
}

/// When this binary was built without the `mpi` feature and a launcher (mpirun, mpiexec,
/// srun) started it as one of several processes: the message to stop with. Each copy would
/// otherwise run the whole job alone, all of them on the same output directory.
pub fn launcher_without_mpi() -> Option<String> {
    if cfg!(feature = "mpi") {
        return None;
    }
    // Each launcher's variable for the number of processes it started.
    const SIZES: &[(&str, &str)] = &[
        ("OMPI_COMM_WORLD_SIZE", "Open MPI"),
        ("PMI_SIZE", "MPICH / Intel MPI (PMI)"),
        ("PMIX_SIZE", "PMIx"),
        ("MV2_COMM_WORLD_SIZE", "MVAPICH2"),
        ("SLURM_STEP_NUM_TASKS", "Slurm (srun)"),
    ];
    let (var, who, n) = SIZES.iter().find_map(|(var, who)| {
        let n: usize = std::env::var(var).ok()?.trim().parse().ok()?;
        (n > 1).then_some((*var, *who, n))
    })?;
    Some(format!(
        "{who} started {n} copies of this program ({var}={n}), but it was built without MPI, so \
         each copy would run the whole job alone; build it with MPI: `cargo build --release \
         --features mpi` (needs libopenmpi-dev openmpi-bin libclang-dev), or start one process"
    ))
}

/// This machine's host name (for reports).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".into())
}

/// How long rank 0's server sleeps between two probes for other ranks' messages. MPI's
/// blocking receive would spin and take a core from rank 0's units for the whole run; a probe
/// every 100 us woke the server 5,000-10,000 times a second, each wake preempting a busy
/// worker. Only messages whose sender waits for the server matter (a request for a chunk; a
/// message too large to be sent eagerly), and each unit sends them once per chunk: per unit
/// and kind, the smoothed gap between two of them is that unit's chunk time, and the server
/// sleeps [`Pace::FRACTION`] of the shortest (bounded by [`Pace::FIRST`] and
/// [`Pace::LONGEST`]). Where nobody waits (equitable ranks sending small records), it sleeps
/// [`Pace::LONGEST`]; a unit that has gone quiet stops counting as its silence grows.
#[derive(Debug)]
pub struct Pace {
    /// The sleep until a gap is known.
    idle: std::time::Duration,
    /// Per key (rank, unit, kind): the last message's time and the smoothed gap (s).
    seen: Vec<(PaceKey, std::time::Instant, Option<f64>)>,
}

/// A sender's unit and the kind of its message: (rank, unit on that rank, kind).
pub type PaceKey = (usize, usize, u64);

impl Pace {
    /// The shortest sleep, and the sleep before any gap is known where requests are expected.
    pub const FIRST: std::time::Duration = std::time::Duration::from_micros(100);
    /// The longest sleep.
    pub const LONGEST: std::time::Duration = std::time::Duration::from_millis(5);
    /// The sleep as a fraction of the shortest smoothed gap.
    pub const FRACTION: f64 = 0.01;

    /// A pace for a server that answers requests (`true`: start at [`Pace::FIRST`]) or only
    /// receives (start at [`Pace::LONGEST`]).
    pub fn new(requests: bool) -> Self {
        Pace {
            idle: if requests { Self::FIRST } else { Self::LONGEST },
            seen: Vec::new(),
        }
    }

    /// A message whose sender waits for the server arrived from `key` at `at`.
    pub fn heard(&mut self, key: PaceKey, at: std::time::Instant) {
        match self.seen.iter_mut().find(|(k, ..)| *k == key) {
            Some((_, last, gap)) => {
                let g = at.saturating_duration_since(*last).as_secs_f64();
                // A shorter gap counts at once (a request must not wait long), a longer one
                // slowly.
                *gap = Some(gap.map_or(g, |s| if g < s { g } else { 0.8 * s + 0.2 * g }));
                *last = at;
            }
            None => self.seen.push((key, at, None)),
        }
    }

    /// How long to sleep before the next probe, at `now`. A key silent for longer than its gap
    /// counts with its silence (a unit that failed or left, or a burst of a resumed run's
    /// sub-chunks, does not keep the server waking fast).
    pub fn sleep(&self, now: std::time::Instant) -> std::time::Duration {
        let shortest = self
            .seen
            .iter()
            .filter_map(|(_, last, g)| {
                Some(
                    g.as_ref()?
                        .max(now.saturating_duration_since(*last).as_secs_f64()),
                )
            })
            .reduce(f64::min);
        shortest.map_or(self.idle, |g| {
            std::time::Duration::from_secs_f64(g * Self::FRACTION).clamp(Self::FIRST, Self::LONGEST)
        })
    }
}

/// A single node: no MPI.
#[derive(Debug, Default)]
pub struct Single;

impl Node for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
    fn task_source(
        &self,
        tasks: usize,
        plan: &Plan,
        units: &[UnitInfo],
        _journal: Option<Arc<Journal>>,
    ) -> Result<Box<dyn TaskSource + '_>> {
        Ok(scheduler::source(plan.scheduler.policy, 0..tasks, units))
    }
    fn forward_records(&self, _unit: usize, _tasks: Range<usize>, _records: &[u64]) -> Result<()> {
        Err(Error::Node(
            "a single node journals its own records; there is no rank 0 to send them to".into(),
        ))
    }
    fn broadcast(&self, bytes: Vec<u8>) -> Result<Vec<u8>> {
        Ok(bytes)
    }
    fn gather_records(&self, _records: &mut Records) -> Result<()> {
        Ok(())
    }
    fn gather_stats(
        &self,
        stats: &[UnitStats],
        devices: &[serde_json::Value],
        extra: serde_json::Value,
    ) -> Result<serde_json::Value> {
        let mut me = serde_json::json!({ "rank": 0, "host": host_name(), "units": stats.len(), "devices": devices.len(),
            "tasks": stats.iter().map(|s| s.tasks).sum::<usize>() });
        merge(&mut me, extra);
        Ok(serde_json::json!([me]))
    }
    fn fail(&self, e: Error) -> Error {
        e
    }
}

#[cfg(test)]
mod test;
