//! The thread layer: one host thread per computational unit.
//!
//! Takes a [`TaskSource`] from the scheduler and workers from the plugin's halves (a CPU worker
//! per core, a GPU worker per in-order queue of each device, so a device with k queues has k
//! threads feeding it, which keeps every queue busy). Offers the runtime [`run_units`]: run every
//! unit until the source is dry and return per-unit statistics and the trace of chunks.
//!
//! Start and end: each unit thread first makes its worker (a CPU half's per-worker state, a
//! device queue's buffers); when every unit has one (or has failed to make it), the source is
//! told the run starts ([`TaskSource::start`]) and all units pull their first chunk at once,
//! so that no unit builds its state while others run, and a short run does not end with late
//! workers' first chunks. The run's span ([`Ran::started`]) begins there; the workers are
//! handed back to the caller ([`Ran::workers`]) so that their release (freeing what a worker
//! touched) is not part of it either. The units are woken at the start each on its own, device
//! queues first (`Start`), and on one node the run ends when the last chunk's records are in
//! ([`Ran::last_result`]), not when the last waiting unit has left.
//!
//! Protocol: each unit thread then pulls a chunk (a guard from the source), runs it into a private
//! record buffer, copies the records into the shared store, drops the chunk (which reports its
//! time to the source), and sends a `ChunkDone` event over a crossbeam channel to the
//! coordinating thread, which drives the progress bar. A unit that gets no chunk waits in
//! [`TaskSource::wait_for_work`] while others run (a failed unit's tasks may come back), then
//! leaves. A failure (error or panic) fails the chunk back to the source: under
//! `units.on_failure = "retry"` the unit is out and the others run its tasks; under `"abort"`
//! the source stops, every other unit ends after its current chunk, and the first error is
//! returned.
//!
//! Resuming: tasks an interrupted run already finished are in a [`DoneSet`]; a unit splits each
//! chunk it pulls into the sub-ranges still pending and runs only those. Every finished
//! (sub-)chunk's records also go to a `finished` callback on the unit's thread (the runtime
//! journals them, or under MPI sends them to rank 0), after they are in the shared store.

mod done;

pub use done::DoneSet;

use crate::config::OnFailure;
use crate::device::Device;
use crate::plugin::{GpuOnDevice, Job, Records, RecordsOut, Worker};
use crate::scheduler::{TaskSource, UnitInfo};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

/// One unit to run.
pub enum UnitSpec<'a> {
    /// A CPU worker.
    Cpu,
    /// One in-order queue of a device, with the GPU half set up on that device.
    Gpu {
        /// The device.
        device: Arc<Device>,
        /// The GPU half with its per-device data; makes the queue's worker.
        half: GpuOnDevice<'a>,
        /// Queue index on the device.
        queue: usize,
    },
}

impl std::fmt::Debug for UnitSpec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitSpec::Cpu => write!(f, "Cpu"),
            UnitSpec::Gpu { device, queue, .. } => write!(f, "Gpu({}, q{queue})", device.info.name),
        }
    }
}

/// A unit with its name and chunk size.
#[derive(Debug)]
pub struct Unit<'a> {
    /// Display name (`cpu0`, `gpu0.q1`).
    pub name: String,
    /// What it is.
    pub spec: UnitSpec<'a>,
    /// Tasks it asks for per pull.
    pub chunk: usize,
}

impl Unit<'_> {
    /// What the scheduler needs to know of this unit: its kind, and its class (units of one
    /// class run at one speed: the CPU workers; the queues of devices of one model).
    pub fn info(&self) -> UnitInfo {
        match &self.spec {
            UnitSpec::Cpu => UnitInfo::cpu("cpu"),
            // The class is the model's name (identical GPUs share a speed prior); the device is
            // this one, whose queues share one model of its rate.
            UnitSpec::Gpu { device, .. } => UnitInfo::device(device.info.name.clone())
                .on_device(format!("gpu{}", device.index))
                .with_chunk(self.chunk),
        }
    }
}

/// What one unit did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct UnitStats {
    /// Display name.
    pub name: String,
    /// "cpu" or "gpu".
    pub kind: &'static str,
    /// Device name for GPU units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Queue index for GPU units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<usize>,
    /// Tasks done.
    pub tasks: usize,
    /// Chunks done.
    pub chunks: usize,
    /// Seconds spent running chunks.
    pub busy_seconds: f64,
    /// When its last chunk ended, in seconds since its layer's run began (0 without chunks):
    /// units that end well before the run does were idle at its end.
    pub ended_seconds: f64,
    /// Why the unit was taken out of the run, if it failed (its chunk ran elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// One chunk on one unit, for the trace.
#[derive(Debug, Clone)]
pub struct Slice {
    /// Index into the unit list.
    pub unit: usize,
    /// Tasks run.
    pub tasks: Range<usize>,
    /// Start, microseconds since the run began.
    pub start_us: f64,
    /// Duration in microseconds.
    pub dur_us: f64,
}

enum Event {
    ChunkDone(Slice),
    /// A unit was taken out of the run (`units.on_failure = "retry"`).
    Failed(usize, String),
}

/// What [`run_units`] hands back.
pub struct Ran<'a> {
    /// What each unit did, in the order of the unit list.
    pub stats: Vec<UnitStats>,
    /// Every finished (sub-)chunk, for the trace; times are from [`Ran::started`].
    pub slices: Vec<Slice>,
    /// When every unit had made its worker (or failed to) and the first chunks were pulled:
    /// the run's clock starts here, after the units' set-up.
    pub started: Instant,
    /// When the last (sub-)chunk's records were stored and passed on (`None`: no chunk ran).
    /// On one node the run ends here: the units that were left waiting then still have to
    /// wake and leave, which is not work of the run (measured: 14 CPU workers kept out beside
    /// a GPU took about a millisecond to leave after its last chunk).
    pub last_result: Option<Instant>,
    /// The units' workers (those that could be made), undropped: their release (a CPU
    /// worker's touched per-worker state) is left to the caller, to do after it stops the
    /// run's clock ([`release`]).
    pub workers: Vec<Box<dyn Worker + 'a>>,
}

impl std::fmt::Debug for Ran<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ran")
            .field("stats", &self.stats)
            .field("slices", &self.slices.len())
            .field("workers", &self.workers.len())
            .finish()
    }
}

/// Drop `workers`, each on a thread of its own (freeing a CPU worker's pages takes time; in
/// parallel it takes about one worker's).
pub fn release(workers: Vec<Box<dyn Worker + '_>>) {
    std::thread::scope(|s| {
        for w in workers {
            s.spawn(move || drop(w));
        }
    });
}

/// Callback for each finished (sub-)chunk: its unit (index into the unit list), its tasks and
/// their records.
pub type Finished<'a> = &'a (dyn Fn(usize, Range<usize>, &[u64]) -> Result<()> + Sync);

/// Run every unit until `source` is dry, skipping tasks in `done`. Records land in `records`
/// (task-indexed) and are passed to `finished` chunk by chunk.
///
/// Every unit makes its worker before any unit pulls a chunk (the module text: "Start and
/// end"); the workers come back in [`Ran::workers`], undropped.
///
/// A unit whose worker cannot be made, or whose chunk fails (an error or a panic), is taken out
/// of the run: under [`OnFailure::Retry`] its chunk goes back to the source for the other
/// units and its [`UnitStats::failed`] says why; under [`OnFailure::Abort`] the source stops and
/// the first error is returned. Whether every task ran is for the caller to check
/// ([`TaskSource::left_over`]).
// Each argument is one thing the runtime hands the layer; bundling them would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn run_units<'a>(
    job: &'a dyn Job,
    units: &'a [Unit<'_>],
    source: &dyn TaskSource,
    records: &Mutex<Records>,
    progress: &indicatif::ProgressBar,
    on_failure: OnFailure,
    done: &DoneSet,
    finished: Finished<'_>,
) -> Result<Ran<'a>> {
    let words = job.record_words();
    let start = Start::default();
    let (tx, rx) = crossbeam_channel::unbounded::<Event>();
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let mut slices = Vec::new();
    let mut failed: Vec<Option<String>> = vec![None; units.len()];
    let mut workers = Vec::new();
    std::thread::scope(|s| {
        let mut threads = Vec::with_capacity(units.len());
        for (index, unit) in units.iter().enumerate() {
            let tx = tx.clone();
            let first_error = &first_error;
            let start = &start;
            let thread = std::thread::Builder::new()
                .name(unit.name.clone())
                .spawn_scoped(s, move || {
                    // Take this unit out: its chunk (if any) has gone back to the source.
                    let fail = |msg: String| match on_failure {
                        OnFailure::Retry => {
                            tracing::warn!(
                                "unit {} failed and is out of the run: {}",
                                unit.name,
                                one_line(&msg)
                            );
                            let _ = tx.send(Event::Failed(index, msg));
                        }
                        OnFailure::Abort => {
                            source.stop();
                            first_error.lock().get_or_insert(Error::Unit {
                                unit: unit.name.clone(),
                                msg,
                            });
                        }
                    };
                    let made = catch_unwind(AssertUnwindSafe(|| {
                        let w = make_worker(job, &unit.spec)?;
                        source.granule(index, w.granule().max(1));
                        Ok::<_, Error>(w)
                    }));
                    let worker = match made {
                        Ok(Ok(w)) => Ok(w),
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(p) => Err(panic_text(p)),
                    };
                    // Out before the start, so that the source plans without this unit.
                    let worker = worker
                        .map_err(|msg| {
                            source.failed(index, 0..0);
                            fail(msg)
                        })
                        .ok();
                    let t0 = start.ready(matches!(unit.spec, UnitSpec::Gpu { .. }));
                    let mut worker = worker?;
                    // A CPU worker runs its chunk a group at a time, so that it can give back
                    // the rest between two groups (rule *give back*); a device, a batch.
                    let group = match unit.spec {
                        UnitSpec::Cpu => worker.granule().max(1),
                        UnitSpec::Gpu { .. } => usize::MAX,
                    };
                    let mut buf = Vec::new();
                    'pull: loop {
                        // The chunk reports its time to the source when dropped below.
                        let Some(mut chunk) = source.next(index, unit.chunk) else {
                            if source.wait_for_work(index) {
                                continue;
                            }
                            break;
                        };
                        let pulled = chunk.tasks();
                        for range in done.pending(pulled) {
                            // The chunk may have ended earlier: its tail was given back.
                            let mut range = range.start..range.end.min(chunk.tasks().end);
                            if range.is_empty() {
                                break;
                            }
                            let start = t0.elapsed();
                            buf.clear();
                            buf.resize(range.len() * words, 0);
                            let r = catch_unwind(AssertUnwindSafe(|| {
                                let mut at = range.start;
                                while at < range.end {
                                    let to = at.saturating_add(group).min(range.end);
                                    let span =
                                        (at - range.start) * words..(to - range.start) * words;
                                    let mut out = RecordsOut::new(at, words, &mut buf[span]);
                                    worker.run(at..to, &mut out)?;
                                    at = to;
                                    if at < range.end {
                                        range.end = chunk.reclaim(at).clamp(at, range.end);
                                    }
                                }
                                buf.truncate(range.len() * words);
                                Ok::<_, Error>(())
                            }));
                            let msg = match r {
                                Ok(Ok(())) => None,
                                Ok(Err(e)) => Some(e.to_string()),
                                Err(p) => Some(panic_text(p)),
                            };
                            if let Some(msg) = msg {
                                chunk.fail();
                                fail(format!("tasks {}..{}: {msg}", range.start, range.end));
                                break 'pull;
                            }
                            records.lock().data[range.start * words..range.end * words]
                                .copy_from_slice(&buf);
                            if let Err(e) = finished(index, range.clone(), &buf) {
                                source.stop();
                                first_error.lock().get_or_insert(e);
                                break 'pull;
                            }
                            let end = t0.elapsed();
                            let _ = tx.send(Event::ChunkDone(Slice {
                                unit: index,
                                tasks: range,
                                start_us: start.as_secs_f64() * 1e6,
                                dur_us: (end - start).as_secs_f64() * 1e6,
                            }));
                        }
                        drop(chunk);
                    }
                    // This unit's end: its channel closes (the run ends when every unit's has)
                    // before its worker goes back undropped.
                    drop(tx);
                    Some(worker)
                });
            match thread {
                Ok(t) => threads.push(t),
                // The others must not wait for it at the start.
                Err(e) => {
                    source.failed(index, 0..0);
                    source.stop();
                    first_error.lock().get_or_insert(Error::Unit {
                        unit: unit.name.clone(),
                        msg: format!("its thread could not be started: {e}"),
                    });
                }
            }
        }
        drop(tx);
        start.go(threads.len(), source);
        progress.set_position(done.count() as u64);
        for ev in rx.iter() {
            match ev {
                Event::ChunkDone(slice) => {
                    progress.inc(slice.tasks.len() as u64);
                    slices.push(slice);
                }
                Event::Failed(unit, msg) => failed[unit] = Some(msg),
            }
        }
        for t in threads {
            match t.join() {
                Ok(w) => workers.extend(w),
                // A unit's panics are caught around its worker; one elsewhere in its thread is
                // a bug of this layer: raised here, as the scope would have.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    let started = start.started();
    let last_result = slices
        .iter()
        .map(|s| s.start_us + s.dur_us)
        .reduce(f64::max)
        .map(|us| started + std::time::Duration::from_secs_f64(us / 1e6));
    if let Some(e) = first_error.into_inner() {
        return Err(e);
    }
    let stats = units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let mine = slices.iter().filter(|s| s.unit == i);
            let (mut tasks, mut chunks, mut busy, mut ended) = (0, 0, 0.0, 0.0f64);
            for s in mine {
                tasks += s.tasks.len();
                chunks += 1;
                busy += s.dur_us / 1e6;
                ended = ended.max((s.start_us + s.dur_us) / 1e6);
            }
            let (kind, device, queue) = match &u.spec {
                UnitSpec::Cpu => ("cpu", None, None),
                UnitSpec::Gpu { device, queue, .. } => {
                    ("gpu", Some(device.info.name.clone()), Some(*queue))
                }
            };
            UnitStats {
                name: u.name.clone(),
                kind,
                device,
                queue,
                tasks,
                chunks,
                busy_seconds: busy,
                ended_seconds: ended,
                failed: failed[i].take(),
            }
        })
        .collect();
    Ok(Ran {
        stats,
        slices,
        started,
        last_result,
        workers,
    })
}

/// The start of a run: the unit threads wait in [`Start::ready`] until the coordinating thread,
/// in [`Start::go`], has seen every one of them arrive (its worker made or failed), started the
/// source's clock and taken the run's start time.
///
/// Each waiting thread is woken on its own ([`std::thread::Thread::unpark`]), device queues
/// first, and reads the start time without a lock. A condition variable's `notify_all` (parking
/// lot's) wakes one waiter and hands the rest over to its mutex, so the units left the gate one
/// after another, each woken by the one before: on the H200 machine's virtual CPUs that chain
/// of 16 wake-ups started the device queues, which arrive last (their set-up is the longest),
/// up to 0.6 ms after the run's clock (BENCHMARKS.md, scheduling).
#[derive(Default)]
struct Start {
    /// Units arrived, and the waiting threads (devices' marked).
    state: Mutex<Gate>,
    arrived: parking_lot::Condvar,
    t0: std::sync::OnceLock<Instant>,
}

#[derive(Default)]
struct Gate {
    units: usize,
    waiting: Vec<(bool, std::thread::Thread)>,
}

impl Start {
    /// A unit is ready (or out): wait for the start, and return its time. `device`: the unit is
    /// a device queue (woken first).
    fn ready(&self, device: bool) -> Instant {
        {
            let mut st = self.state.lock();
            st.units += 1;
            st.waiting.push((device, std::thread::current()));
            self.arrived.notify_one();
        }
        loop {
            if let Some(t0) = self.t0.get() {
                return *t0;
            }
            // An unpark before the park is kept: the start is never missed.
            std::thread::park();
        }
    }

    /// Wait for `units` units to be ready, then start `source` and the run, and wake the units
    /// (devices first); returns the order they were woken in (true: a device).
    fn go(&self, units: usize, source: &dyn TaskSource) -> Vec<bool> {
        let mut st = self.state.lock();
        while st.units < units {
            self.arrived.wait(&mut st);
        }
        source.start();
        let _ = self.t0.set(Instant::now());
        let mut waiting = std::mem::take(&mut st.waiting);
        drop(st);
        // Stable: the threads of one kind in the order they arrived.
        waiting.sort_by_key(|w| !w.0);
        for (_, t) in &waiting {
            t.unpark();
        }
        waiting.into_iter().map(|w| w.0).collect()
    }

    /// When the run started ([`Start::go`]; now, if it never ran).
    fn started(&self) -> Instant {
        self.t0.get().copied().unwrap_or_else(Instant::now)
    }
}

fn make_worker<'a>(job: &'a dyn Job, spec: &'a UnitSpec<'_>) -> Result<Box<dyn Worker + 'a>> {
    match spec {
        UnitSpec::Cpu if !job.details().cpu_half => Err(Error::Config(
            "this plugin has no CPU half; set units.cpu_workers = 0".into(),
        )),
        UnitSpec::Cpu => job.cpu_worker(),
        // Each queue's worker owns its own in-order queue.
        UnitSpec::Gpu { device, half, .. } => half.worker(device.queue()?),
    }
}

/// A failure message as one warning line: its first line, and, when more follows (a build
/// log), the first later line that reports an error (`file:line:col: error: ...`). The whole
/// message goes to `report.json`.
pub fn one_line(msg: &str) -> String {
    let mut lines = msg.lines();
    let first = lines.next().unwrap_or("").trim_end();
    match lines.find(|l| l.contains("error")) {
        Some(e) => format!("{first} [{}] (report.json has the whole message)", e.trim()),
        None => first.to_string(),
    }
}

pub(crate) fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("panicked: {msg} (a bug in tuccompi or the plugin; please report it)")
}

#[cfg(test)]
mod test;
