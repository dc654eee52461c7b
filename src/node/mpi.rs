//! The node layer over MPI (cargo feature `mpi`): one process per node, started by `mpirun`.
//!
//! Protocol:
//! - Rank 0 loads the config (with `--set` overrides) and broadcasts the resolved TOML, so no
//!   rank can run a different config; it also broadcasts the input file's bytes, which other
//!   ranks read from a private temporary copy. Each node detects its own units.
//! - `master-slave`: every rank sends rank 0 its unit list; rank 0 runs one work queue with a
//!   slot per unit of every rank, served by a thread. Rank 0's own units (if
//!   `nodes.master_computes`) take from it directly; another rank's unit sends
//!   `[NEXT, unit, want]` per chunk and gets `[start, end]` back (empty = nothing for it). That
//!   request also says that its previous chunk finished: the master holds each remote unit's
//!   chunk guard and drops it then, so the queue learns every unit's chunk times. A failed
//!   chunk is `[FAIL, unit]` (its tasks go back to the queue); a unit that leaves sends
//!   `[LEAVE, unit]`; a rank whose units have all left sends `[BYE]`, and the server stops after
//!   every other rank's BYE. `equitable`: each rank takes a static contiguous share.
//! - Records: every task was run by exactly one rank and other ranks' records of it are zero,
//!   so an element-wise sum (MPI reduce) at rank 0 assembles them. Statistics are gathered
//!   as JSON. Distance rows are written by each rank at their offsets in one shared file.
//! - Failure: the failing rank prints its rank, host and error and calls `MPI_Abort`, so every
//!   rank stops; the output directory keeps its `INCOMPLETE` marker.
//!
//! MPI calls are serialized: one mutex guards the communicator on each rank, and the library
//! is initialized with at least `MPI_THREAD_SERIALIZED`.

use super::{host_name, Node};
use crate::config::{InputSpec, NodePolicy, Plan};
use crate::plugin::Records;
use crate::scheduler::{self, Chunk, TaskSource, UnitInfo, WorkQueue};
use crate::thread::UnitStats;
use crate::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use parking_lot::Mutex;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const TAG_REQ: i32 = 11;
const TAG_REP: i32 = 12;
const TAG_STATS: i32 = 13;
const TAG_UNITS: i32 = 14;

/// This process as one MPI node.
pub struct MpiNode {
    _universe: mpi::environment::Universe,
    world: Mutex<SimpleCommunicator>,
    rank: usize,
    size: usize,
    host: String,
    temp_input: Mutex<Option<PathBuf>>,
}

// SAFETY: the communicator is only used under the `world` mutex, and MPI was initialized with
// at least MPI_THREAD_SERIALIZED, so calls from different threads never overlap.
unsafe impl Sync for MpiNode {}
// SAFETY: as above; the universe is finalized by whichever thread drops the node (main).
unsafe impl Send for MpiNode {}

impl std::fmt::Debug for MpiNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MpiNode(rank {} of {} on {})",
            self.rank, self.size, self.host
        )
    }
}

impl MpiNode {
    /// Initialize MPI.
    pub fn init() -> Result<Self> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or_else(|| Error::Node("MPI was already initialized".into()))?;
        if threading < mpi::Threading::Serialized {
            return Err(Error::Node(format!(
                "the MPI library provides only {threading:?} threading; tuccompi needs MPI_THREAD_SERIALIZED"
            )));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        let host = mpi::environment::processor_name().unwrap_or_else(|_| host_name());
        Ok(MpiNode {
            _universe: universe,
            world: Mutex::new(world),
            rank,
            size,
            host,
            temp_input: Mutex::new(None),
        })
    }

    /// Whether this is rank 0.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    fn bcast_bytes(&self, bytes: Option<Vec<u8>>) -> Vec<u8> {
        let w = self.world.lock();
        let root = w.process_at_rank(0);
        let mut len = [bytes.as_ref().map_or(0, |b| b.len() as u64)];
        root.broadcast_into(&mut len[..]);
        let mut buf = bytes.unwrap_or_else(|| vec![0u8; len[0] as usize]);
        buf.resize(len[0] as usize, 0);
        root.broadcast_into(&mut buf[..]);
        buf
    }

    fn bcast_status(&self, ok: bool) -> bool {
        let w = self.world.lock();
        let mut s = [ok as u8];
        w.process_at_rank(0).broadcast_into(&mut s[..]);
        s[0] == 1
    }

    /// Rank 0 loads and validates the config and reads the input file; every rank gets the
    /// same resolved config (and its own copy of the input).
    pub fn load_plan(&self, config: &Path, overrides: &[String]) -> Result<Plan> {
        let mut loaded = if self.is_root() {
            Some(Plan::load(config, overrides))
        } else {
            None
        };
        let ok = self.bcast_status(loaded.as_ref().is_none_or(|r| r.is_ok()));
        if !ok {
            return match loaded {
                Some(Err(e)) => Err(e),
                _ => Err(Error::Node(
                    "rank 0 could not load the config (its message says why)".into(),
                )),
            };
        }
        let text = self.bcast_bytes(
            loaded
                .as_ref()
                .map(|p| p.as_ref().unwrap().resolved_toml.clone().into_bytes()),
        );
        let mut plan = match loaded.take() {
            Some(p) => p?,
            None => Plan::from_toml(&String::from_utf8_lossy(&text), config, &[])?,
        };
        if let Some(InputSpec::Path(path)) = plan.input.clone() {
            let bytes = if self.is_root() {
                Some(std::fs::read(&path))
            } else {
                None
            };
            let ok = self.bcast_status(bytes.as_ref().is_none_or(|r| r.is_ok()));
            if !ok {
                return match bytes {
                    Some(Err(e)) => Err(Error::io(&path, e)),
                    _ => Err(Error::Node(
                        "rank 0 could not read the input (its message says why)".into(),
                    )),
                };
            }
            let data = self.bcast_bytes(bytes.map(|b| b.unwrap()));
            if !self.is_root() {
                let dir = std::env::temp_dir().join(format!(
                    "tuccompi-rank{}-{}",
                    self.rank,
                    std::process::id()
                ));
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                let copy = dir.join(path.file_name().unwrap_or_default());
                std::fs::write(&copy, data).map_err(|e| Error::io(&copy, e))?;
                plan.input = Some(InputSpec::Path(copy));
                *self.temp_input.lock() = Some(dir);
            }
        }
        Ok(plan)
    }
}

impl Drop for MpiNode {
    fn drop(&mut self) {
        if let Some(dir) = self.temp_input.lock().take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Rank 0's source under master-slave: the central queue, served to other ranks by a thread.
struct Master {
    queue: Arc<WorkQueue>,
    computes: bool,
    server: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Master {
    /// Wait until every other rank has finished.
    fn join(&self) {
        if let Some(h) = self.server.lock().take() {
            let _ = h.join();
        }
    }
}

impl TaskSource for Master {
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>> {
        // The chunk reports to the queue itself.
        if self.computes {
            self.queue.next(unit, want)
        } else {
            None
        }
    }
    fn stop(&self) {
        self.queue.stop();
    }
    fn now(&self) -> f64 {
        self.queue.now()
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        self.queue.failed(unit, tasks);
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        self.computes && self.queue.wait_for_work(unit)
    }
    fn left_over(&self) -> usize {
        self.join();
        self.queue.left_over()
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.join();
    }
}

/// Requests to the master: `[REQ_*, unit, want]`.
const REQ_NEXT: u64 = 0;
/// The unit's chunk failed: its tasks go back to the queue, the unit is out.
const REQ_FAIL: u64 = 1;
/// The unit leaves the run (it got nothing and will not ask again).
const REQ_LEAVE: u64 = 2;
/// Every unit of this rank has left (its source is dropped).
const REQ_BYE: u64 = 3;

/// The master's server: answers every other rank's requests from the queue. Each remote unit
/// has its own slot in the queue; the chunk it holds is kept here, and its next request says
/// how that chunk ended (`REQ_NEXT`: finished, so the guard drops and the queue learns its time
/// from grant to request; `REQ_FAIL`: its tasks go back), so no outcome can be lost.
fn serve(queue: &WorkQueue, offsets: &[usize], cap: Option<usize>) {
    // MPI calls here never overlap with rank 0's main thread, which makes none until this
    // thread is joined (Master's Drop).
    let world = SimpleCommunicator::world();
    let others = offsets.len() - 1;
    let mut held: Vec<Option<Chunk<'_>>> = (0..offsets[others]).map(|_| None).collect();
    let mut finished = 0;
    while finished < others {
        let (msg, status) = world.any_process().receive_vec_with_tag::<u64>(TAG_REQ);
        let rank = status.source_rank() as usize;
        let (kind, unit, want) = (msg[0], msg[1] as usize, msg[2] as usize);
        let slot = offsets[rank - 1] + unit;
        let reply = match kind {
            REQ_NEXT => {
                drop(held[slot].take());
                let want = cap.map_or(want, |c| c.min(want)).max(1);
                queue.next(slot, want).map(|c| {
                    let r = c.tasks();
                    held[slot] = Some(c);
                    r
                })
            }
            REQ_FAIL => {
                match held[slot].take() {
                    Some(c) => c.fail(),
                    None => queue.failed(slot, 0..0),
                }
                None
            }
            REQ_LEAVE => {
                // Out of the plan: an idle remote unit must not count as capacity.
                queue.failed(slot, 0..0);
                None
            }
            _ => {
                finished += 1;
                continue;
            }
        }
        .unwrap_or(0..0);
        world
            .process_at_rank(status.source_rank())
            .send_with_tag(&[reply.start as u64, reply.end as u64][..], TAG_REP);
    }
}

/// Another rank's source under master-slave: asks rank 0 for each chunk, per unit.
struct Remote<'a> {
    node: &'a MpiNode,
    stopped: std::sync::atomic::AtomicBool,
}

impl Remote<'_> {
    fn ask(&self, kind: u64, unit: usize, want: usize) -> Range<usize> {
        let w = self.node.world.lock();
        let root = w.process_at_rank(0);
        root.send_with_tag(&[kind, unit as u64, want as u64][..], TAG_REQ);
        let (r, _) = root.receive_vec_with_tag::<u64>(TAG_REP);
        r[0] as usize..r[1] as usize
    }
}

impl TaskSource for Remote<'_> {
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>> {
        if self.stopped.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        // This request also tells the master that the unit's previous chunk finished.
        let r = self.ask(REQ_NEXT, unit, want.max(1));
        (!r.is_empty()).then(|| Chunk::new(self, unit, r))
    }
    fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    fn failed(&self, unit: usize, _tasks: Range<usize>) {
        self.ask(REQ_FAIL, unit, 0);
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        // Remote units do not wait for tasks given back: they leave, and say so.
        self.ask(REQ_LEAVE, unit, 0);
        false
    }
}

impl Drop for Remote<'_> {
    fn drop(&mut self) {
        let w = self.node.world.lock();
        w.process_at_rank(0)
            .send_with_tag(&[REQ_BYE, 0, 0][..], TAG_REQ);
    }
}

impl Node for MpiNode {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) -> Result<()> {
        self.world.lock().barrier();
        Ok(())
    }

    fn task_source(
        &self,
        tasks: usize,
        plan: &Plan,
        units: &[UnitInfo],
    ) -> Result<Box<dyn TaskSource + '_>> {
        match plan.nodes.policy {
            NodePolicy::Equitable => {
                let (r, s) = (self.rank, self.size);
                let share = tasks * r / s..tasks * (r + 1) / s;
                Ok(scheduler::source(plan.scheduler.policy, share, units))
            }
            NodePolicy::MasterSlave if self.rank == 0 => {
                // One queue slot per unit of every rank: rank 0's units, then each other
                // rank's, so the queue plans with every unit's own speed.
                let mut all: Vec<UnitInfo> = units.to_vec();
                let mut offsets = Vec::with_capacity(self.size);
                {
                    let w = self.world.lock();
                    for r in 1..self.size {
                        let (bytes, _) = w
                            .process_at_rank(r as i32)
                            .receive_vec_with_tag::<u8>(TAG_UNITS);
                        let theirs: Vec<UnitInfo> = serde_json::from_slice(&bytes)
                            .map_err(|e| Error::Node(format!("rank {r}'s unit list: {e}")))?;
                        offsets.push(all.len());
                        all.extend(theirs.into_iter().map(|mut u| {
                            u.class = format!("rank{r}/{}", u.class);
                            u
                        }));
                    }
                }
                offsets.push(all.len());
                let queue = Arc::new(WorkQueue::new(0..tasks, &all));
                let q = queue.clone();
                let cap = plan.nodes.chunk;
                let server = std::thread::Builder::new()
                    .name("mpi-master".into())
                    .spawn(move || serve(&q, &offsets, cap))
                    .map_err(|e| Error::Node(format!("starting the master thread: {e}")))?;
                Ok(Box::new(Master {
                    queue,
                    computes: plan.nodes.master_computes,
                    server: Mutex::new(Some(server)),
                }))
            }
            NodePolicy::MasterSlave => {
                let bytes = serde_json::to_vec(units).expect("unit infos serialize");
                self.world
                    .lock()
                    .process_at_rank(0)
                    .send_with_tag(&bytes[..], TAG_UNITS);
                Ok(Box::new(Remote {
                    node: self,
                    stopped: std::sync::atomic::AtomicBool::new(false),
                }))
            }
        }
    }

    fn gather_records(&self, records: &mut Records) -> Result<()> {
        let w = self.world.lock();
        let root = w.process_at_rank(0);
        if self.rank == 0 {
            let mut sum = vec![0u64; records.data.len()];
            root.reduce_into_root(&records.data[..], &mut sum[..], SystemOperation::sum());
            records.data = sum;
        } else {
            root.reduce_into(&records.data[..], SystemOperation::sum());
        }
        Ok(())
    }

    fn under_mpi(&self) -> bool {
        // A binary built with MPI but started without mpirun is a singleton: one plain node.
        self.size > 1
            || std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some()
            || std::env::var_os("PMI_SIZE").is_some()
    }

    fn gather_stats(
        &self,
        stats: &[UnitStats],
        devices: &[serde_json::Value],
        note: Option<&str>,
    ) -> Result<serde_json::Value> {
        let mine = serde_json::json!({
            "rank": self.rank, "host": self.host, "units": stats, "devices": devices,
            "device_note": note,
            "failures": stats.iter().filter_map(|u| Some(serde_json::json!({"unit": u.name, "error": u.failed.as_ref()?}))).collect::<Vec<_>>(),
            "tasks": stats.iter().map(|s| s.tasks).sum::<usize>(),
        });
        let w = self.world.lock();
        if self.rank != 0 {
            let bytes = serde_json::to_vec(&mine).expect("json");
            w.process_at_rank(0).send_with_tag(&bytes[..], TAG_STATS);
            return Ok(serde_json::Value::Null);
        }
        let mut all = vec![mine];
        for r in 1..self.size {
            let (bytes, _) = w
                .process_at_rank(r as i32)
                .receive_vec_with_tag::<u8>(TAG_STATS);
            all.push(serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null));
        }
        Ok(serde_json::Value::Array(all))
    }

    fn fail(&self, e: Error) -> Error {
        eprintln!(
            "tuccompi: error: rank {} on {} failed: {e}",
            self.rank, self.host
        );
        // Stop every rank; the output directory keeps its INCOMPLETE marker.
        // The lock may be held by a unit thread blocked in a request; MPI_Abort is safe to call
        // regardless, so take the communicator without waiting.
        let w = SimpleCommunicator::world();
        w.abort(3)
    }
}
