//! The node layer over MPI (cargo feature `mpi`): one process per node, started by `mpirun`.
//!
//! Protocol:
//! - Rank 0 loads the config (with `--set` overrides) and broadcasts the resolved TOML, so no
//!   rank can run a different config; it also broadcasts the input file's bytes, which other
//!   ranks read from a private temporary copy. Each node detects its own units.
//! - Rank 0 runs a server thread for the whole run. Other ranks send it, all on one tag (so a
//!   rank's messages arrive in the order it sent them): `[NEXT, unit, want]` chunk requests
//!   (master-slave), `[FAIL, unit]` / `[LEAVE, unit]`, `[RECORDS, unit, start, end, words...]` with each
//!   finished chunk's records, which the server appends to rank 0's journal as they arrive (so
//!   an interrupted run loses no remote work), and one `[BYE]` when the rank's units have ended
//!   (its source's `Drop`), after its last records. The server stops after every other rank's bye.
//! - `master-slave`: every rank sends rank 0 its unit list; rank 0 runs one work queue with a
//!   slot per unit of every rank. Rank 0's own units (if `nodes.master_computes`) take from it
//!   directly; another rank's unit asks per chunk and gets `[start, end]` back (empty = nothing
//!   for it). That request also says that its previous chunk finished: the server holds each
//!   remote unit's chunk guard and drops it then, so the queue learns every unit's chunk times.
//!   A failed chunk's tasks go back to the queue. `equitable`: each rank takes a static
//!   contiguous share and only sends records and its bye.
//! - Waiting: MPI's blocking calls spin in Open MPI's progress loop, so nothing waits in one
//!   while units of this or another rank on the machine still run. Rank 0's server probes and
//!   sleeps (`Pace`: a small fraction of the gaps between requests, 5 ms where nobody waits on
//!   it), and a rank whose units have ended waits for rank 0's word (`TAG_GO`, a probe every
//!   millisecond) before the collectives that gather the results.
//! - Records: every task was run by exactly one rank and other ranks' records of it are zero,
//!   so an element-wise sum (MPI reduce) at rank 0 assembles them. Statistics are gathered
//!   as JSON. Distance rows are written by each rank at their offsets in one shared file.
//! - Resuming: rank 0 reads the journal and broadcasts the set of done tasks; every rank's
//!   units skip them.
//! - Failure: every rank fails together, whatever fails and wherever. Loading the config and
//!   the input (and each rank's `TUCCOMPI_UNITS`) ends in an agreement (an all-gather of each
//!   rank's error, empty where it succeeded): every rank returns an error naming the failing
//!   rank, host and message, and all finalize together. From there on, a failing rank prints
//!   its rank, host and error and calls `MPI_Abort` (`Node::fail`), so every rank stops; a
//!   panic on the main thread or rank 0's server thread does the same (the panic hook). A rank
//!   that returns early on any other path (its node dropped before the results were gathered)
//!   leaves without `MPI_Finalize`, which would wait for ranks that wait for it: the launcher
//!   then ends the job. The complete result in the output directory is untouched, and the
//!   journal keeps the chunks rank 0 had synced.
//! - Temporary input copies (`$TMPDIR/tuccompi-rankR-PID/`) are removed once the input is
//!   loaded, on failure before the abort, and, for processes killed before either, swept by the
//!   next run on the machine once their process is gone.
//!
//! MPI calls are serialized: one mutex guards the communicator on each rank, and the library
//! is initialized with at least `MPI_THREAD_SERIALIZED`.

use super::{host_name, injected_failure, merge, Node, Pace};
use crate::config::{NodePolicy, Plan};
use crate::scheduler::{self, Chunk, TaskSource, UnitInfo, WorkQueue};
use crate::share::{self, shared_dir, Mapped, Share};
use crate::sink::journal::Journal;
use crate::sink::Records;
use crate::thread::UnitStats;
use crate::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use parking_lot::Mutex;
use std::ops::Range;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const TAG_REQ: i32 = 11;
const TAG_REP: i32 = 12;
const TAG_STATS: i32 = 13;
const TAG_UNITS: i32 = 14;
const TAG_GO: i32 = 15;

/// The name of rank 0's server thread (a panic there ends the job: other ranks wait for it).
const SERVER_THREAD: &str = "mpi-master";

/// This process's private copy of the input (other ranks than 0), removed once the input is
/// loaded or when the process fails. Process-wide: the panic hook removes it too.
static INPUT_COPY: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The first panic's text on any thread: a unit thread's uncaught panic reaches the main
/// thread as "a scoped thread panicked", and the job's message should name the real one.
static FIRST_PANIC: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Write `line` to stderr in one call: `eprintln!` writes its pieces one by one, and the ranks'
/// lines, all forwarded by the launcher into one stream, interleave mid-line.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Remove this process's input copy, if any.
fn remove_input_copy() {
    if let Some(dir) = INPUT_COPY.lock().take() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Print `msg` as this rank's failure and end every rank of the job (`MPI_Abort`). The
/// communicator's lock may be held by a thread blocked in a request; `MPI_Abort` is safe to
/// call regardless, so this takes the world communicator without waiting.
fn abort_job(rank: usize, host: &str, msg: &str) -> ! {
    say(&format!(
        "{}: error: rank {rank} on {host} failed: {msg}",
        crate::program_name()
    ));
    remove_input_copy();
    SimpleCommunicator::world().abort(3)
}

/// A panic's message and place.
fn panic_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    let p = info.payload();
    let msg = p
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    match info.location() {
        Some(l) => format!("{msg} (at {}:{})", l.file(), l.line()),
        None => msg.to_string(),
    }
}

/// A panic on the main thread or on rank 0's server thread ends the job at once, with its
/// message: the other ranks wait in a collective or for an answer that would never come, and
/// unwinding the main thread could itself wait (a task source joins the server thread, which
/// waits for every rank's end). Unit threads catch their plugin's panics (a unit failure: the
/// runtime decides), and an uncaught one reaches the main thread when the unit threads end.
fn install_panic_hook(rank: usize, host: String) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed").to_string();
        let text = format!("a panic on its thread '{name}': {}", panic_text(info));
        let first = FIRST_PANIC.get_or_init(|| text.clone());
        if name == "main" || name == SERVER_THREAD {
            let msg = if *first == text {
                text
            } else {
                format!("{text}; the first was {first}")
            };
            abort_job(rank, &host, &msg)
        }
    }));
}

/// Whether process `pid` still runs: it has a `/proc` entry and is not a zombie. A rank that
/// `MPI_Abort` ended stays a zombie until its parent reaps it, which in a container without an
/// init that reaps can take seconds after `mpirun` has returned.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold any byte.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_none_or(|state| !matches!(state, 'Z' | 'X')),
        Err(_) => false,
    }
}

/// This process's effective user id.
fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Remove the input copies (`tuccompi-rankR-PID` in `dir`) of processes that are gone: an
/// aborted or killed run could not remove its own.
fn sweep_input_copies(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let pid = name
            .strip_prefix("tuccompi-rank")
            .and_then(|r| r.split_once('-'))
            .filter(|(r, _)| r.parse::<u32>().is_ok())
            .and_then(|(_, p)| p.parse::<u32>().ok());
        // Only a directory this program makes (not a link to one, and this user's), of a
        // process that is gone.
        let ours = entry
            .metadata()
            .is_ok_and(|m| m.is_dir() && m.uid() == own_uid());
        if pid.is_some_and(|p| !process_alive(p))
            && entry.file_type().is_ok_and(|t| t.is_dir())
            && ours
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// This process as one MPI node.
pub struct MpiNode {
    /// Finalized on drop only where every rank ends together (see `together`).
    universe: std::mem::ManuallyDrop<mpi::environment::Universe>,
    world: Mutex<SimpleCommunicator>,
    rank: usize,
    size: usize,
    host: String,
    /// Whether every rank is known to end with this one from here: set by an agreement that
    /// failed (all return an error together) and once the results are gathered. A node
    /// dropped before that is a rank returning early while the others go on.
    together: AtomicBool,
    /// Rank 0's server thread, counted for the report.
    served: Arc<Served>,
    /// How this rank got its machine's shared bytes (for the report, under the key the plugin
    /// named them by): shared with the machine's ranks, or why it holds its own.
    machine_note: Mutex<Option<(String, String)>>,
    /// What this rank made for the others or received from rank 0 (`made_on_rank_0`), by name,
    /// for the report.
    rank_0_notes: Mutex<serde_json::Map<String, serde_json::Value>>,
}

/// What rank 0's server did: messages received, probes that found none (each one a sleep and
/// a wake), and the seconds it ran.
#[derive(Debug, Default)]
struct Served {
    messages: std::sync::atomic::AtomicU64,
    idle_probes: std::sync::atomic::AtomicU64,
    micros: std::sync::atomic::AtomicU64,
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
        {
            // This rank's place among the ranks of its machine (`units.opencl = "local_rank"`).
            let on_host = world.split_shared(rank as i32);
            super::set_local_rank(on_host.rank() as usize, on_host.size() as usize);
        }
        if size > 1 {
            install_panic_hook(rank, host.clone());
        }
        Ok(MpiNode {
            universe: std::mem::ManuallyDrop::new(universe),
            world: Mutex::new(world),
            rank,
            size,
            host,
            together: AtomicBool::new(false),
            served: Arc::default(),
            machine_note: Mutex::new(None),
            rank_0_notes: Mutex::default(),
        })
    }

    /// Whether this is rank 0.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    fn bcast_bytes(&self, bytes: Option<Vec<u8>>) -> Vec<u8> {
        let w = self.world.lock();
        bcast_from(&w.process_at_rank(0), bytes)
    }

    /// Every rank's outcome of one step, agreed: `Ok` where every rank succeeded; else, on
    /// every rank, the first failing rank's error with its rank and host (the failing rank's
    /// own line must say so too: the launcher may end the others before they print). Every
    /// rank calls it at the same step: it is the collective that keeps one rank's early error
    /// from leaving the others waiting in the next one. A single process keeps its own error.
    fn agree<T>(&self, mine: Result<T>) -> Result<T> {
        if self.size == 1 {
            return mine;
        }
        // One byte at least from every rank (Open MPI refuses an all-empty gather): `+` for
        // success, `!` and the message for a failure.
        let text = match &mine {
            Ok(_) => "+".to_string(),
            Err(e) => format!("!rank {} on {} failed: {e}", self.rank, self.host),
        };
        let all = {
            let w = self.world.lock();
            let mut lens = vec![0i32; self.size];
            w.all_gather_into(&[text.len() as i32][..], &mut lens[..]);
            let displs: Vec<i32> = lens
                .iter()
                .scan(0, |at, &l| {
                    *at += l;
                    Some(*at - l)
                })
                .collect();
            let mut buf = vec![0u8; lens.iter().map(|&l| l as usize).sum()];
            let mut part = mpi::datatype::PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
            w.all_gather_varcount_into(text.as_bytes(), &mut part);
            (0..self.size)
                .map(|r| {
                    let at = displs[r] as usize;
                    String::from_utf8_lossy(&buf[at..at + lens[r] as usize]).into_owned()
                })
                .collect::<Vec<_>>()
        };
        let mine_failed = text.strip_prefix('!');
        match mine_failed.or_else(|| all.iter().find_map(|t| t.strip_prefix('!'))) {
            None => mine,
            Some(failed) => {
                // Every rank returns an error here: they finalize together.
                self.together.store(true, Ordering::Relaxed);
                Err(Error::Node(failed.to_string()))
            }
        }
    }

    /// Rank 0 loads and validates the config; every rank gets the same config text and
    /// `--set` overrides (so that its messages name the same lines and settings), and applies
    /// its `TUCCOMPI_UNITS`. A failure at any rank fails every rank here (two agreements: rank
    /// 0's reading, then each rank's own part). The plugins' files are theirs: a plugin that
    /// needs rank 0's bytes of one asks [`Share::rank_0_file`].
    pub fn load_plan(&self, config: &Path, overrides: &[String]) -> Result<Plan> {
        sweep_input_copies(&std::env::temp_dir());
        let root = self.is_root();
        let loaded = self.agree(if root {
            Plan::load(config, overrides).map(Some)
        } else {
            Ok(None)
        })?;
        let said = loaded.as_ref().map(|plan| {
            serde_json::to_vec(&(plan.origins.text(), &plan.overrides)).expect("serializes")
        });
        let said = self.bcast_bytes(said);
        let mine = match loaded {
            Some(plan) => Ok(plan),
            None => serde_json::from_slice::<(String, Vec<String>)>(&said)
                .map_err(|e| Error::Node(format!("rank 0's config did not arrive whole: {e}")))
                .and_then(|(text, sets)| Plan::from_toml(&text, config, &sets)),
        }
        .and_then(|plan| {
            if injected_failure(self.rank, "config") {
                return Err(Error::Config(
                    "injected failure (TUCCOMPI_TEST_FAIL_PHASE=config)".into(),
                ));
            }
            // The node-local override is applied again by the caller; checked here, where
            // every rank can still learn of a bad one (a job once hung on it). The
            // test phase `late` leaves it to the caller, to fail past every agreement.
            if !injected_failure(self.rank, "late") {
                plan.clone().with_node_units()?;
            }
            Ok(plan)
        });
        self.agree(mine)
    }

    /// A private copy of `bytes` named like `path`, in this process's copy directory (made on
    /// the first copy: exclusive and private, never through a link).
    fn private_copy(&self, path: &Path, bytes: &[u8]) -> Result<PathBuf> {
        let mut held = INPUT_COPY.lock();
        let dir = match &*held {
            Some(dir) => dir.clone(),
            None => {
                let dir = std::env::temp_dir().join(format!(
                    "tuccompi-rank{}-{}",
                    self.rank,
                    std::process::id()
                ));
                // A directory of this name is a leftover of an earlier process with this pid
                // (not swept: the pid is this live process's): replaced if it is a real
                // directory of ours.
                if dir
                    .symlink_metadata()
                    .is_ok_and(|m| m.is_dir() && m.uid() == own_uid())
                {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&dir)
                    .map_err(|e| Error::io(&dir, e))?;
                *held = Some(dir.clone());
                dir
            }
        };
        // Several files keep apart: the n-th copy's name starts with n.
        let n = std::fs::read_dir(&dir).map_or(0, |d| d.count());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let copy = dir.join(if n == 0 {
            name.to_string()
        } else {
            format!("{n}-{name}")
        });
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&copy)
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
            .map_err(|e| Error::io(&copy, e))?;
        Ok(copy)
    }
}

impl Drop for MpiNode {
    fn drop(&mut self) {
        remove_input_copy();
        if self.size > 1 && !self.together.load(Ordering::Relaxed) {
            if std::thread::panicking() {
                let first = FIRST_PANIC.get().map_or("a panic", String::as_str);
                abort_job(self.rank, &self.host, first);
            }
            // MPI_Finalize would wait for the other ranks, which wait for this one: leave
            // without it (the universe is not dropped). mpirun and srun end a job one of whose
            // processes exits without finalizing; this rank's error is printed as it returns.
            say(&format!(
                "{}: rank {} on {} stopped before the other ranks: the launcher ends the job",
                crate::program_name(),
                self.rank,
                self.host
            ));
            return;
        }
        // SAFETY: dropped once, here, and never used after.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.universe) };
    }
}

/// Message kinds on `TAG_REQ` (the first word), from other ranks to rank 0's server thread.
/// One tag for all of them keeps MPI's per-sender order: a rank's records always arrive before
/// its end, and the server never takes a message meant for the main thread (`TAG_STATS`).
/// `[BYE]`: every unit of this rank has ended (its source is dropped), after its last records.
const MSG_BYE: u64 = 0;
/// `[NEXT, unit, want]`: the unit's next chunk (master-slave). It also says that the unit's
/// previous chunk finished.
const MSG_NEXT: u64 = 1;
/// `[RECORDS, unit, start, end, words...]`: a finished chunk's records, for rank 0's journal.
const MSG_RECORDS: u64 = 2;
/// `[FAIL, unit]`: the unit's chunk failed: its tasks go back to the queue, the unit is out.
const MSG_FAIL: u64 = 3;
/// `[LEAVE, unit]`: the unit got nothing and will not ask again.
const MSG_LEAVE: u64 = 4;

/// Rank 0's source: its units' source (a share of the task space, or the central queue under
/// master-slave), and the server thread that answers other ranks' requests and journals their
/// records until every other rank has said bye.
struct Master {
    local: Box<dyn TaskSource>,
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
        // The chunk reports to the local source itself.
        if self.computes {
            self.local.next(unit, want)
        } else {
            None
        }
    }
    fn stop(&self) {
        // Under master-slave this also stops handing chunks to other ranks.
        self.local.stop();
    }
    fn start(&self) {
        self.local.start();
    }
    fn now(&self) -> f64 {
        self.local.now()
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        // A unit that does not compute has no slot (master-slave) and no tasks to give back.
        if self.computes {
            self.local.failed(unit, tasks);
        }
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        self.computes && self.local.wait_for_work(unit)
    }
    fn granule(&self, unit: usize, tasks: usize) {
        // Rank 0's units are the local source's first units (remote units' requests carry no
        // group size).
        if self.computes {
            self.local.granule(unit, tasks);
        }
    }
    fn left_over(&self) -> usize {
        self.join();
        self.local.left_over()
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.join();
    }
}

/// The master-slave queue as rank 0's own units see it.
struct Shared(Arc<WorkQueue>);

impl TaskSource for Shared {
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>> {
        self.0.next(unit, want)
    }
    fn stop(&self) {
        self.0.stop();
    }
    fn start(&self) {
        self.0.start();
    }
    fn now(&self) -> f64 {
        self.0.now()
    }
    fn finished(&self, unit: usize, tasks: Range<usize>, secs: f64) {
        self.0.finished(unit, tasks, secs);
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        self.0.failed(unit, tasks);
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        self.0.wait_for_work(unit)
    }
    fn left_over(&self) -> usize {
        self.0.left_over()
    }
    fn granule(&self, unit: usize, tasks: usize) {
        self.0.granule(unit, tasks);
    }
}

/// Rank 0's server: chunk requests of other ranks' units (master-slave; `queue` with one slot
/// per remote unit from `offsets[rank - 1]`), their records to journal, and their byes. Each
/// remote unit's chunk guard is held here; its next request says how that chunk ended
/// (`NEXT`: finished, so the guard drops and the queue learns its time from grant to request;
/// `FAIL`: its tasks go back), so no outcome can be lost.
fn serve(
    queue: Option<&WorkQueue>,
    offsets: &[usize],
    others: usize,
    cap: Option<usize>,
    journal: Option<Arc<Journal>>,
    served: &Served,
) {
    let t0 = std::time::Instant::now();
    // MPI calls here never overlap with rank 0's main thread, which makes none until this
    // thread is joined (Master's `left_over` or Drop), nor with its unit threads, which make
    // none.
    let world = SimpleCommunicator::world();
    let slots = offsets.last().copied().unwrap_or(0);
    let mut held: Vec<Option<Chunk<'_>>> = (0..slots).map(|_| None).collect();
    let mut finished = 0;
    let mut pace = Pace::new(queue.is_some());
    while finished < others {
        let (msg, status) = next_request(&world, &pace, served);
        let rank = status.source_rank() as usize;
        let kind = msg.first().copied().unwrap_or(MSG_BYE);
        // Its sender waits for the server: a request, or a message too large to go eagerly
        // (Open MPI's shared-memory transport sends up to 4 KiB eagerly by default). Both come
        // once per chunk of the sending unit (the message's second word).
        if kind != MSG_BYE && (kind != MSG_RECORDS || msg.len() * 8 > 4096) {
            let unit = msg.get(1).copied().unwrap_or(0) as usize;
            pace.heard((rank, unit, kind), std::time::Instant::now());
        }
        let slot = |unit: u64| offsets.get(rank - 1).map(|o| o + unit as usize);
        let reply = match kind {
            MSG_RECORDS if msg.len() >= 4 => {
                if let Some(j) = &journal {
                    // An error is kept by the journal and reported by the runtime at the end.
                    let _ = j.append(msg[2] as usize..msg[3] as usize, &msg[4..]);
                }
                continue;
            }
            MSG_NEXT if msg.len() >= 3 => match (queue, slot(msg[1])) {
                (Some(q), Some(s)) if s < slots => {
                    drop(held[s].take());
                    let want = cap.map_or(msg[2] as usize, |c| c.min(msg[2] as usize));
                    q.next(s, want.max(1)).map(|c| {
                        let r = c.tasks();
                        held[s] = Some(c);
                        r
                    })
                }
                _ => None,
            },
            MSG_FAIL if msg.len() >= 2 => {
                if let (Some(q), Some(s)) = (queue, slot(msg[1])) {
                    if s < slots {
                        match held[s].take() {
                            Some(c) => c.fail(),
                            None => q.failed(s, 0..0),
                        }
                    }
                }
                None
            }
            MSG_LEAVE if msg.len() >= 2 => {
                // Out of the plan: an idle remote unit must not count as capacity.
                if let (Some(q), Some(s)) = (queue, slot(msg[1])) {
                    if s < slots {
                        q.failed(s, 0..0);
                    }
                }
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
    served
        .micros
        .store(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// The next message on `TAG_REQ` from any rank. A blocking receive would spin in Open MPI's
/// progress loop and take a core from rank 0's units for the whole run: this probes, and
/// sleeps between probes as long as `pace` says (a small fraction of the senders' chunk times).
fn next_request(
    world: &SimpleCommunicator,
    pace: &Pace,
    served: &Served,
) -> (Vec<u64>, mpi::point_to_point::Status) {
    loop {
        if let Some(st) = world.any_process().immediate_probe_with_tag(TAG_REQ) {
            served.messages.fetch_add(1, Ordering::Relaxed);
            // Messages from one rank with one tag arrive in order: this is the probed one.
            return world
                .process_at_rank(st.source_rank())
                .receive_vec_with_tag::<u64>(TAG_REQ);
        }
        served.idle_probes.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(pace.sleep(std::time::Instant::now()));
    }
}

/// Another rank's source: its static share (equitable), or a chunk per request to rank 0
/// (master-slave). Dropped after the rank's units ended: tells rank 0 it is finished.
struct Remote<'a> {
    node: &'a MpiNode,
    share: Option<Box<dyn TaskSource>>,
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
        if let Some(share) = &self.share {
            return share.next(unit, want);
        }
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        // This request also tells the master that the unit's previous chunk finished.
        let r = self.ask(MSG_NEXT, unit, want.max(1));
        (!r.is_empty()).then(|| Chunk::new(self, unit, r))
    }
    fn stop(&self) {
        if let Some(share) = &self.share {
            share.stop();
        }
        self.stopped.store(true, Ordering::Relaxed);
    }
    fn start(&self) {
        if let Some(share) = &self.share {
            share.start();
        }
    }
    fn now(&self) -> f64 {
        self.share.as_ref().map_or(0.0, |s| s.now())
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        match &self.share {
            Some(share) => share.failed(unit, tasks),
            None => {
                self.ask(MSG_FAIL, unit, 0);
            }
        }
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        match &self.share {
            Some(share) => share.wait_for_work(unit),
            None => {
                // Remote units do not wait for tasks given back: they leave, and say so.
                self.ask(MSG_LEAVE, unit, 0);
                false
            }
        }
    }
    fn left_over(&self) -> usize {
        self.share.as_ref().map_or(0, |s| s.left_over())
    }
}

impl Drop for Remote<'_> {
    fn drop(&mut self) {
        let w = self.node.world.lock();
        w.process_at_rank(0).send_with_tag(&[MSG_BYE][..], TAG_REQ);
    }
}

/// What the first rank of a machine tells the others about the machine's bytes
/// ([`Share::machine_bytes`]).
#[derive(serde::Serialize, serde::Deserialize)]
enum HostBytes {
    /// Map the file at `path`.
    At { path: PathBuf },
    /// Make your own: the bytes could not be written for sharing (why).
    Own(String),
    /// Making the bytes failed (the error).
    Failed(String),
}

/// `root`'s `bytes` (given there, `None` elsewhere) on every process of its communicator.
fn bcast_from(root: &mpi::topology::Process<'_>, bytes: Option<Vec<u8>>) -> Vec<u8> {
    let mut len = [bytes.as_ref().map_or(0, |b| b.len() as u64)];
    root.broadcast_into(&mut len[..]);
    let mut buf = bytes.unwrap_or_else(|| vec![0u8; len[0] as usize]);
    buf.resize(len[0] as usize, 0);
    root.broadcast_into(&mut buf[..]);
    buf
}

/// A new file for a machine's shared bytes: in `/dev/shm` (memory) where there is one. Files
/// that earlier runs left there (killed between writing and removing theirs) go first, if
/// their writer's process is gone.
fn shared_bytes_path() -> PathBuf {
    let dir = shared_dir();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let pid = name
            .strip_prefix("tuccompi-shared-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !process_alive(p)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    dir.join(format!("tuccompi-shared-{}-{nanos}", std::process::id()))
}

impl Share for MpiNode {
    fn machine_bytes(
        &self,
        what: &str,
        make: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<Option<Mapped>> {
        if injected_failure(self.rank, "input") {
            // Before the machine's collective below, which the other ranks are in.
            return Err(Error::Input(
                "injected failure (TUCCOMPI_TEST_FAIL_PHASE=input)".into(),
            ));
        }
        if injected_failure(self.rank, "panic") {
            panic!("injected panic (TUCCOMPI_TEST_FAIL_PHASE=panic)");
        }
        let m = self.share_among_host(what, make);
        // Made from the input: nothing reads the input copy again (the journal's input hash
        // is rank 0's).
        remove_input_copy();
        m
    }

    fn ranks(&self) -> usize {
        self.size
    }

    fn made_on_rank_0(
        &self,
        what: &str,
        make: &mut dyn FnMut() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        // Prepare runs on the main thread before any unit: nothing else calls MPI meanwhile.
        let w = self.world.lock();
        let root = w.process_at_rank(0);
        let t0 = std::time::Instant::now();
        // Rank 0 keeps its own error (its kind and text) and sends its text.
        let (made, own_error) = match (self.rank == 0).then(&mut *make) {
            Some(Ok(b)) => (Some(b), None),
            Some(Err(e)) => (Some(e.to_string().into_bytes()), Some(e)),
            None => (None, None),
        };
        // A status word (0: the bytes follow; 1: an error's text follows) and the length,
        // then the bytes in pieces below MPI's 2^31 count limit.
        let mut head = [
            own_error.is_some() as u64,
            made.as_ref().map_or(0, |b| b.len() as u64),
        ];
        root.broadcast_into(&mut head[..]);
        let mut bytes = made.unwrap_or_else(|| vec![0u8; head[1] as usize]);
        for piece in bytes.chunks_mut(1 << 30) {
            root.broadcast_into(piece);
        }
        drop(w);
        let note = if self.rank == 0 {
            format!(
                "made here, {} bytes sent to {} ranks",
                head[1],
                self.size - 1
            )
        } else {
            format!(
                "received from rank 0: {} bytes in {:.2} s",
                head[1],
                t0.elapsed().as_secs_f64()
            )
        };
        self.rank_0_notes
            .lock()
            .insert(what.to_string(), serde_json::json!(note));
        if let Some(e) = own_error {
            return Err(e);
        }
        if head[0] == 1 {
            let msg = String::from_utf8_lossy(&bytes);
            return Err(Error::Input(format!(
                "{msg} (on rank 0, which makes the {what} for every rank)"
            )));
        }
        Ok(bytes)
    }

    fn rank_0_file(&self, what: &str, path: &Path) -> Result<PathBuf> {
        if self.size == 1 {
            return Ok(path.to_path_buf());
        }
        let bytes = self.made_on_rank_0(what, &mut || {
            std::fs::read(path).map_err(|e| Error::io(path, e))
        });
        match bytes {
            _ if self.rank == 0 => bytes.map(|_| path.to_path_buf()),
            Ok(bytes) => self.private_copy(path, &bytes),
            Err(e) => Err(e),
        }
    }
}

impl MpiNode {
    /// [`Share::machine_bytes`] without the test hooks.
    fn share_among_host(
        &self,
        what: &str,
        make: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<Option<Mapped>> {
        // Prepare runs on the main thread before any unit: nothing else calls MPI meanwhile.
        let w = self.world.lock();
        let host = w.split_shared(self.rank as i32);
        let ranks = host.size() as usize;
        if ranks == 1 {
            return Ok(None);
        }
        let leader = host.rank() == 0;
        let mut own_error = None;
        let said = leader.then(|| {
            let path = shared_bytes_path();
            let said = match share::write_new(&path, make) {
                Ok(()) => HostBytes::At { path },
                Err(Ok(e)) => HostBytes::Own(e.to_string()),
                Err(Err(e)) => {
                    let said = HostBytes::Failed(e.to_string());
                    own_error = Some(e);
                    said
                }
            };
            serde_json::to_vec(&said).expect("serializes")
        });
        let bytes = bcast_from(&host.process_at_rank(0), said);
        let said: HostBytes = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Node(format!("the machine's shared {what} note: {e}")))?;
        let (mapped, note) = match said {
            HostBytes::Failed(e) => {
                drop(w);
                return Err(own_error.unwrap_or_else(|| {
                    Error::Input(format!("{e} (loaded by another rank of this machine)"))
                }));
            }
            HostBytes::Own(why) => {
                drop(w);
                let note = format!("own copy: the {what} could not be shared ({why})");
                (None, note)
            }
            HostBytes::At { path } => {
                let mapped = Mapped::open(&path);
                // Every rank has mapped it (or failed to): the file can go, its memory stays
                // while mapped.
                host.barrier();
                if leader {
                    let _ = std::fs::remove_file(&path);
                }
                drop(w);
                match mapped {
                    Ok(m) => (
                        Some(m),
                        format!("shared: one copy for the {ranks} ranks of this machine"),
                    ),
                    Err(e) => (
                        None,
                        format!("own copy: mapping the shared {what} failed ({e})"),
                    ),
                }
            }
        };
        *self.machine_note.lock() = Some((what.to_string(), note));
        Ok(mapped)
    }
}

impl Node for MpiNode {
    fn share(&self) -> Option<&dyn Share> {
        Some(self)
    }
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
        journal: Option<Arc<Journal>>,
    ) -> Result<Box<dyn TaskSource + '_>> {
        let (r, s) = (self.rank, self.size);
        let share = tasks * r / s..tasks * (r + 1) / s;
        let master_slave = plan.nodes.policy == NodePolicy::MasterSlave;
        if r != 0 {
            if master_slave {
                let bytes = serde_json::to_vec(units).expect("unit infos serialize");
                self.world
                    .lock()
                    .process_at_rank(0)
                    .send_with_tag(&bytes[..], TAG_UNITS);
            }
            return Ok(Box::new(Remote {
                node: self,
                share: (!master_slave).then(|| scheduler::source(&plan.scheduler, share, units)),
                stopped: std::sync::atomic::AtomicBool::new(false),
            }));
        }
        // Master-slave: one queue slot per unit of every rank (rank 0's units if it computes,
        // then each other rank's), so the queue plans with every unit's own speed.
        let mut offsets = Vec::with_capacity(s);
        let (local, queue): (Box<dyn TaskSource>, Option<Arc<WorkQueue>>) = if master_slave {
            // Rank 0's units are in the queue only if they compute: a slot that never asks
            // would count as a unit about to ask, and the others could leave the last tasks
            // to it (seen: a three-rank run ending with a task not run).
            let mut all: Vec<UnitInfo> = if plan.nodes.master_computes {
                units.to_vec()
            } else {
                Vec::new()
            };
            {
                let w = self.world.lock();
                for r in 1..s {
                    let (bytes, _) = w
                        .process_at_rank(r as i32)
                        .receive_vec_with_tag::<u8>(TAG_UNITS);
                    let theirs: Vec<UnitInfo> = serde_json::from_slice(&bytes)
                        .map_err(|e| Error::Node(format!("rank {r}'s unit list: {e}")))?;
                    offsets.push(all.len());
                    all.extend(theirs.into_iter().map(|mut u| {
                        u.class = format!("rank{r}/{}", u.class);
                        u.device = u.device.map(|d| format!("rank{r}/{d}"));
                        // A remote unit that gets nothing leaves (`Remote::wait_for_work`).
                        u.leaves = true;
                        u
                    }));
                }
            }
            offsets.push(all.len());
            let queue = Arc::new(WorkQueue::new(0..tasks, &all).rules_of(&plan.scheduler));
            (Box::new(Shared(queue.clone())), Some(queue))
        } else {
            (scheduler::source(&plan.scheduler, share, units), None)
        };
        let cap = plan.nodes.chunk;
        let served = self.served.clone();
        let server = std::thread::Builder::new()
            .name(SERVER_THREAD.into())
            .spawn(move || serve(queue.as_deref(), &offsets, s - 1, cap, journal, &served))
            .map_err(|e| Error::Node(format!("starting the master thread: {e}")))?;
        Ok(Box::new(Master {
            local,
            computes: !master_slave || plan.nodes.master_computes,
            server: Mutex::new(Some(server)),
        }))
    }

    fn forward_records(&self, unit: usize, tasks: Range<usize>, records: &[u64]) -> Result<()> {
        if injected_failure(self.rank, "run") {
            return Err(Error::Node(
                "injected failure (TUCCOMPI_TEST_FAIL_PHASE=run)".into(),
            ));
        }
        let mut msg = Vec::with_capacity(4 + records.len());
        msg.extend_from_slice(&[
            MSG_RECORDS,
            unit as u64,
            tasks.start as u64,
            tasks.end as u64,
        ]);
        msg.extend_from_slice(records);
        let w = self.world.lock();
        w.process_at_rank(0).send_with_tag(&msg[..], TAG_REQ);
        Ok(())
    }

    fn broadcast(&self, bytes: Vec<u8>) -> Result<Vec<u8>> {
        Ok(self.bcast_bytes(self.is_root().then_some(bytes)))
    }

    fn gather_records(&self, records: &mut Records) -> Result<()> {
        // A rank whose units have ended waits here for rank 0, whose units may still run (and
        // under equitable, other ranks' too). MPI's collective would spin and take a core from
        // them: wait for rank 0's word with a probe every millisecond instead.
        if self.rank == 0 {
            let w = self.world.lock();
            for r in 1..self.size {
                w.process_at_rank(r as i32)
                    .send_with_tag(&[1u64][..], TAG_GO);
            }
        } else {
            loop {
                let w = self.world.lock();
                let root = w.process_at_rank(0);
                if root.immediate_probe_with_tag(TAG_GO).is_some() {
                    let _ = root.receive_vec_with_tag::<u64>(TAG_GO);
                    break;
                }
                drop(w);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
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
        extra: serde_json::Value,
    ) -> Result<serde_json::Value> {
        let mut mine = serde_json::json!({
            "rank": self.rank, "host": self.host, "units": stats, "devices": devices,
            "failures": stats.iter().filter_map(|u| Some(serde_json::json!({"unit": u.name, "error": u.failed.as_ref()?}))).collect::<Vec<_>>(),
            "tasks": stats.iter().map(|s| s.tasks).sum::<usize>(),
        });
        merge(&mut mine, extra);
        if let Some((what, note)) = self.machine_note.lock().clone() {
            mine[what.as_str()] = serde_json::json!(note);
        }
        let notes = self.rank_0_notes.lock().clone();
        if !notes.is_empty() {
            mine["from_rank_0"] = serde_json::Value::Object(notes);
        }
        if self.rank == 0 {
            let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
            mine["server"] = serde_json::json!({
                "messages": n(&self.served.messages),
                "idle_probes": n(&self.served.idle_probes),
                "seconds": n(&self.served.micros) as f64 * 1e-6,
            });
        }
        let w = self.world.lock();
        // The last message of a run: from here every rank ends with the others (rank 0's
        // failures still abort the job).
        self.together.store(true, Ordering::Relaxed);
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
        // Stop every rank; the output directory keeps its INCOMPLETE marker.
        abort_job(self.rank, &self.host, &e.to_string())
    }
}

#[cfg(test)]
mod test {
    #[test]
    fn a_zombie_process_counts_as_gone() {
        assert!(super::process_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        // Exited and not reaped yet: a zombie, as an aborted rank is until its parent reaps it.
        let t0 = std::time::Instant::now();
        while super::process_alive(child.id()) && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(std::path::Path::new(&format!("/proc/{}", child.id())).exists());
        assert!(!super::process_alive(child.id()));
        child.wait().unwrap();
        assert!(!super::process_alive(4_294_967));
    }

    #[test]
    fn input_copies_of_dead_processes_are_swept() {
        let dir = std::env::temp_dir().join(format!("tuccompi-sweep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // No process has this id (above Linux's largest pid_max); this process is alive.
        let dead = dir.join("tuccompi-rank1-4294967");
        let live = dir.join(format!("tuccompi-rank2-{}", std::process::id()));
        let other = dir.join("tuccompi-rankings-4294967");
        for d in [&dead, &live, &other] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("g.gr"), b"x").unwrap();
        }
        // A link named like a copy is not one this program made: left alone.
        let link = dir.join("tuccompi-rank3-4294967");
        std::os::unix::fs::symlink(&other, &link).unwrap();
        super::sweep_input_copies(&dir);
        assert!(!dead.exists() && live.exists() && other.join("g.gr").exists());
        assert!(link.symlink_metadata().is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shared_files_of_dead_writers_are_swept() {
        let fresh = super::shared_bytes_path();
        let dir = fresh.parent().unwrap();
        // No process has this id (above Linux's largest pid_max); this process is alive.
        let dead = dir.join("tuccompi-shared-4294967-1");
        let live = dir.join(format!("tuccompi-shared-{}-test", std::process::id()));
        std::fs::write(&dead, b"x").unwrap();
        std::fs::write(&live, b"x").unwrap();
        let next = super::shared_bytes_path();
        assert!(!dead.exists() && live.exists());
        assert!(!next.exists() && next.parent() == Some(dir));
        std::fs::remove_file(&live).unwrap();
    }
}
