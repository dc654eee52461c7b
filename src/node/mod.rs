//! The node layer: one process per machine; MPI ranks when built with `--features mpi`.
//!
//! Takes the scheduler's policies; offers the runtime a [`Node`]: this process's rank, the
//! [`TaskSource`] for its units (the whole task space on a single node; a static share, or
//! chunks handed out by rank 0, under MPI), the way finished chunks' records reach rank 0's
//! journal as they finish, and the gathering of records and statistics at rank 0.

#[cfg(feature = "mpi")]
pub mod mpi;
/// Machine-local shared bytes (the top-level [`crate::share`], which the plugin API names too).
pub use crate::share;

use crate::config::Plan;
use crate::scheduler::{self, TaskSource, UnitInfo};
use crate::sink::journal::Journal;
use crate::sink::Records;
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
    /// The ranks of this job making bytes together: once per machine, mapped by its ranks,
    /// or once per job on rank 0 (under MPI).
    fn share(&self) -> Option<&dyn share::Share> {
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

/// This process's place among the processes of its machine: (its index, their number). Set
/// once by the node layer under MPI (the ranks that share memory with it); (0, 1) otherwise.
static LOCAL_RANK: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();

/// This process's index among the ranks of its machine and their number ((0, 1) for a
/// process alone): what `units.opencl = "local_rank"` divides the machine's devices by.
pub fn local_rank() -> (usize, usize) {
    LOCAL_RANK.get().copied().unwrap_or((0, 1))
}

/// Record this process's place among its machine's ranks (the node layer, once).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn set_local_rank(index: usize, ranks: usize) {
    let _ = LOCAL_RANK.set((index, ranks.max(1)));
}

/// The processes that use each device when `ranks` ranks of a machine with `devices` devices
/// choose them: under `units.opencl = "local_rank"` (`divided`) one per device while there are
/// at least as many devices as ranks, else the ranks per device rounded up; otherwise every
/// rank takes the same devices, so all `ranks` use each.
pub fn ranks_per_device(divided: bool, ranks: usize, devices: usize) -> usize {
    let ranks = ranks.max(1);
    if !divided {
        ranks
    } else if devices == 0 || ranks <= devices {
        1
    } else {
        ranks.div_ceil(devices)
    }
}

/// The indices (into a machine's `devices` devices) that local rank `index` of `ranks` takes
/// under `units.opencl = "local_rank"`: `index`, `index + ranks`, ... while there are at least
/// as many devices as ranks; with more ranks than devices, device `index mod devices` (ranks
/// then share a device). Every device goes to some rank.
pub fn devices_of_local_rank(index: usize, ranks: usize, devices: usize) -> Vec<usize> {
    if devices == 0 || ranks == 0 {
        return Vec::new();
    }
    if ranks > devices {
        return vec![index % devices];
    }
    (index..devices).step_by(ranks).collect()
}

/// This machine's host name (for reports).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".into())
}

/// The environment variables by which launchers tell a process that it is one of several:
/// sizes (a job of more than one process) and ranks (rank 1 and up exist only in such a job).
/// Slurm's `SLURM_NTASKS` is also set in a batch script's own shell, which is one process: it
/// counts only inside a step (`SLURM_STEP_ID`), where `srun` started the tasks.
const LAUNCHER_SIZES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"];
const LAUNCHER_RANKS: [&str; 4] = [
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
];

/// Why this process must stop when it was built without the `mpi` feature but a launcher
/// (`mpirun`/`mpiexec` of Open MPI, MPICH/Hydra or PMIx, or Slurm's `srun`) started several
/// copies of it: each copy would run the whole job on its own and they would collide on the
/// output directory. `None` when built with MPI, or when this is the only process.
pub fn launcher_without_mpi() -> Option<String> {
    if cfg!(feature = "mpi") {
        return None;
    }
    launcher_of_several(|k| std::env::var(k).ok())
}

/// [`launcher_without_mpi`], refused as an error (`run` and `check` call it first).
pub fn refuse_launcher_without_mpi() -> Result<()> {
    launcher_without_mpi().map_or(Ok(()), |m| Err(Error::Node(m)))
}

/// The message for a launcher of several processes, as `var` (the environment) shows it.
pub(crate) fn launcher_of_several(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    let number = |k: &str| var(k).and_then(|v| v.trim().parse::<u64>().ok());
    let slurm_step = var("SLURM_STEP_ID").is_some();
    let (key, said) = LAUNCHER_SIZES
        .iter()
        .chain(slurm_step.then_some(&"SLURM_NTASKS"))
        .find_map(|k| {
            number(k)
                .filter(|&n| n > 1)
                .map(|n| (*k, format!("{n} processes")))
        })
        .or_else(|| {
            LAUNCHER_RANKS.iter().find_map(|k| {
                number(k)
                    .filter(|&r| r > 0)
                    .map(|r| (*k, format!("this process as rank {r}")))
            })
        })?;
    Some(format!(
        "this tuccompi was built without MPI, but a launcher started {said} ({key}={}): each \
         would run the whole job alone. Build it with MPI (`cargo build --release --features mpi`, \
         which needs libopenmpi-dev openmpi-bin libclang-dev) and start that binary, or start \
         one process without mpirun/srun",
        var(key).unwrap_or_default().trim()
    ))
}

/// Failure injection for the node layer's tests: whether rank `rank` is to fail at `phase`
/// (`TUCCOMPI_TEST_FAIL_RANK=R`, `TUCCOMPI_TEST_FAIL_PHASE=config|input|prepare|run|panic`;
/// no phase means `prepare`; `late`: a bad `TUCCOMPI_UNITS` is left for the caller to find,
/// past the ranks' agreement).
pub fn injected_failure(rank: usize, phase: &str) -> bool {
    let var = |k: &str| std::env::var(k).ok();
    var("TUCCOMPI_TEST_FAIL_RANK").and_then(|r| r.parse::<usize>().ok()) == Some(rank)
        && var("TUCCOMPI_TEST_FAIL_PHASE")
            .as_deref()
            .unwrap_or("prepare")
            == phase
}

/// The report's units: rank 0's (`stats`), then every other rank's from the gathered node
/// statistics (`nodes`, one entry per rank), named `rankR/NAME` with their `rank`, so the
/// report and the closing line count every unit of the job. A single node's are its own.
pub fn job_units(stats: &[UnitStats], nodes: &serde_json::Value) -> serde_json::Value {
    let mut all = serde_json::to_value(stats).unwrap_or_default();
    let (Some(list), Some(nodes)) = (all.as_array_mut(), nodes.as_array()) else {
        return all;
    };
    for node in nodes.iter().skip(1) {
        let rank = node["rank"].clone();
        for unit in node["units"].as_array().into_iter().flatten() {
            let mut u = unit.clone();
            if let Some(o) = u.as_object_mut() {
                let name = o
                    .get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or("")
                    .to_string();
                o.insert(
                    "name".into(),
                    serde_json::json!(format!("rank{rank}/{name}")),
                );
                o.insert("rank".into(), rank.clone());
            }
            list.push(u);
        }
    }
    all
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
        Ok(scheduler::source(&plan.scheduler, 0..tasks, units))
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
