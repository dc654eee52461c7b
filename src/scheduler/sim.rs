//! A deterministic simulator for scheduling policies (tests only).
//!
//! Drives any [`TaskSource`] in virtual time: each simulated unit runs a chunk of `k` tasks in
//! `latency + k · per_task` seconds (plus a pause if it stalls), asks for its next chunk the
//! moment it finishes one, and drops the [`Chunk`] guard at the chunk's virtual end, so the
//! source hears exactly the times it would on real units. A unit that gets `None` waits and
//! asks again at the first chunk end anywhere at least `RECHECK` seconds later, as the thread
//! layer's waiting units do. Ties are
//! broken by unit index, so a run is a pure function of its inputs.
//!
//! [`ideal`] is the optimal makespan for identical tasks: the least `T` such that the units
//! together can finish every task by `T` (each in whole chunks of at most its `want`).

use super::queue::RECHECK;
use super::{Chunk, Clock, TaskSource, UnitInfo};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Virtual time, set by the simulator.
#[derive(Debug, Clone, Default)]
pub(crate) struct VirtualClock(Arc<AtomicU64>);

impl VirtualClock {
    /// Move the clock to `t`.
    pub(crate) fn set(&self, t: f64) {
        self.0.store(t.to_bits(), Ordering::Relaxed);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// A simulated unit.
#[derive(Debug, Clone)]
pub(crate) struct SimUnit {
    pub(crate) info: UnitInfo,
    /// Seconds per chunk.
    pub(crate) latency: f64,
    /// Seconds per task.
    pub(crate) per_task: f64,
    /// Tasks it asks for per chunk.
    pub(crate) want: usize,
    /// It makes no progress from `.0` for `.1` seconds.
    pub(crate) stall: Option<(f64, f64)>,
    /// Task `t` costs `per_task · (1 + noise · u(t))`, `u` a fixed pseudo-random value in
    /// [-1, 1] (tasks of unequal cost; 0 = all equal).
    pub(crate) noise: f64,
    /// Every `.0`-th chunk of this unit takes `.1` seconds longer (the host thread preempted,
    /// a driver hiccup).
    pub(crate) hiccup: Option<(usize, f64)>,
    /// It asks for its first chunk at this time (a rank that starts late).
    pub(crate) start: f64,
    /// It runs tasks in groups of this many, a group costing as much as this many tasks
    /// however few it holds (PHAST's trees per sweep); it says so to the source first.
    pub(crate) granule: usize,
    /// Its first chunk takes this much longer (per-worker state built on first use: fresh
    /// pages, cold caches).
    pub(crate) setup: f64,
    /// Task `t` costs `weights[t]` times `per_task` (uneven tasks: rows of a fractal, the
    /// costly ones first); `None`: every task 1.
    pub(crate) weights: Option<std::sync::Arc<Vec<f64>>>,
    /// A queue of a device that runs its queues' chunks one after another (`.0`: the device),
    /// in the order they were handed out, each `.1` times as long when another chunk of the
    /// device was in flight as it was handed out (the NVIDIA driver with 4 queues of the knn
    /// example's kernel: one after another, each about twice as long); `None`: a unit of its
    /// own.
    pub(crate) serial: Option<(usize, f64)>,
}

impl SimUnit {
    /// A CPU worker doing one task in `per_task` seconds.
    pub(crate) fn cpu(per_task: f64) -> Self {
        SimUnit {
            info: UnitInfo::cpu("cpu"),
            latency: 0.0,
            per_task,
            want: usize::MAX,
            stall: None,
            noise: 0.0,
            hiccup: None,
            start: 0.0,
            granule: 1,
            setup: 0.0,
            weights: None,
            serial: None,
        }
    }
    /// A device queue of class `class` running batches of up to `batch` tasks.
    pub(crate) fn gpu(class: &str, latency: f64, per_task: f64, batch: usize) -> Self {
        SimUnit {
            info: UnitInfo::device(class).with_chunk(batch),
            latency,
            per_task,
            want: batch,
            stall: None,
            noise: 0.0,
            hiccup: None,
            start: 0.0,
            granule: 1,
            setup: 0.0,
            weights: None,
            serial: None,
        }
    }
    /// The same unit, task `t` costing `weights[t]` times its per-task time.
    pub(crate) fn weighted(mut self, weights: &std::sync::Arc<Vec<f64>>) -> Self {
        self.weights = Some(weights.clone());
        self
    }
    /// The same unit, a queue of device `device` whose queues' chunks run one after another,
    /// each `slower` times as long when the device has another in flight.
    pub(crate) fn serial(mut self, device: usize, slower: f64) -> Self {
        self.serial = Some((device, slower));
        self
    }
    /// The same unit, pausing for `secs` at time `at`.
    pub(crate) fn stalls(mut self, at: f64, secs: f64) -> Self {
        self.stall = Some((at, secs));
        self
    }

    /// The same unit, asking first at time `t`.
    pub(crate) fn starts_at(mut self, t: f64) -> Self {
        self.start = t;
        self
    }

    /// The same unit, every `every`-th chunk `secs` seconds longer.
    pub(crate) fn hiccups(mut self, every: usize, secs: f64) -> Self {
        self.hiccup = Some((every, secs));
        self
    }

    /// The same unit, running tasks in groups of `granule` and `setup` seconds slower in its
    /// first chunk (the cost shape of a CPU PHAST worker).
    pub(crate) fn grouped(mut self, granule: usize, setup: f64) -> Self {
        self.granule = granule;
        self.setup = setup;
        self
    }

    /// The same unit, its tasks' costs varying by up to `noise` around the mean.
    pub(crate) fn noisy(mut self, noise: f64) -> Self {
        self.noise = noise;
        self
    }

    /// When its chunk number `n` of tasks `tasks`, started at `t`, ends; `first`: the chunk's
    /// first group (a CPU worker runs its chunk a group at a time), which alone pays the
    /// chunk's latency, first-chunk setup and hiccups.
    fn end(&self, t: f64, tasks: Range<usize>, n: usize, first: bool) -> f64 {
        // A group costs as much as `granule` tasks however few it holds.
        let padding = tasks.len().div_ceil(self.granule) * self.granule - tasks.len();
        let setup = if n == 0 && first { self.setup } else { 0.0 };
        let cost: f64 = padding as f64
            + tasks
                .map(|task| {
                    // SplitMix64 of the task id, mapped to [-1, 1].
                    let mut z = (task as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    let w = self.weights.as_ref().map_or(1.0, |w| w[task]);
                    w * (1.0 + self.noise * ((z >> 11) as f64 / (1u64 << 52) as f64 - 1.0))
                })
                .sum::<f64>();
        let extra = match self.hiccup {
            Some((every, secs)) if first && n % every == every - 1 => secs,
            _ => 0.0,
        };
        let latency = if first { self.latency } else { 0.0 };
        let work = latency + cost * self.per_task + extra + setup;
        match self.stall {
            Some((at, secs)) if t >= at && t < at + secs => at + secs + work,
            Some((at, secs)) if t < at && t + work > at => t + work + secs,
            _ => t + work,
        }
    }

    /// Most tasks it can finish in `span` seconds of uninterrupted work (greedy whole chunks).
    fn can_do(&self, mut span: f64) -> usize {
        // Hiccups count as their mean share of every chunk.
        let latency = self.latency + self.hiccup.map_or(0.0, |(every, secs)| secs / every as f64);
        let mut done = 0;
        loop {
            if span < latency + self.per_task {
                return done;
            }
            let fit = ((span - latency) / self.per_task).floor() as usize;
            let k = fit.min(self.want);
            done += k;
            span -= latency + k as f64 * self.per_task;
            if k < self.want {
                return done;
            }
        }
    }

    /// Most tasks it can finish by time `t` from time 0, stall included.
    fn can_do_by(&self, t: f64) -> usize {
        let t = t - self.start;
        match self.stall {
            Some((at, secs)) if t > at => self
                .can_do(t - secs)
                .max(self.can_do(at) + self.can_do(t - at - secs)),
            _ => self.can_do(t),
        }
    }
}

/// What a simulated run did.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// When the last chunk ended.
    pub(crate) makespan: f64,
    /// Tasks per unit.
    pub(crate) tasks: Vec<usize>,
    /// Chunks per unit.
    pub(crate) chunks: Vec<usize>,
    /// Seconds the serial devices ([`SimUnit::serial`]) were busy, all together.
    pub(crate) serial_busy: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);
impl Eq for Time {}
impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Time {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Run `tasks` on `units` under `source` (made with `clock`). Panics if a task is lost or
/// run twice.
pub(crate) fn run(
    source: &dyn TaskSource,
    clock: &VirtualClock,
    units: &[SimUnit],
    tasks: Range<usize>,
) -> Outcome {
    clock.set(0.0);
    let n = units.len();
    let mut sim = Sim {
        source,
        units,
        held: (0..n).map(|_| None).collect(),
        at: vec![0; n],
        started: vec![0; n],
        events: BinaryHeap::new(),
        devices: std::collections::HashMap::new(),
        serial_busy: 0.0,
    };
    let mut waiting = vec![false; n];
    let mut asked = vec![0.0; n];
    let mut out = Outcome {
        makespan: 0.0,
        tasks: vec![0; n],
        chunks: vec![0; n],
        serial_busy: 0.0,
    };
    let mut runs = vec![0u32; tasks.len()];
    let mut wakes = source.wakes();
    for (u, unit) in units.iter().enumerate() {
        // As the thread layer does once it has made the unit's worker.
        source.granule(u, unit.granule);
    }
    for (u, w) in waiting.iter_mut().enumerate() {
        if units[u].start > 0.0 {
            // Not started: its first ask is an event without a chunk.
            sim.events.push(Reverse((Time(units[u].start), u)));
        } else {
            *w = !sim.ask(u, 0.0);
        }
    }
    while let Some(Reverse((Time(t), u))) = sim.events.pop() {
        clock.set(t);
        let Some(mut c) = sim.held[u].take() else {
            waiting[u] = !sim.ask(u, t);
            asked[u] = t;
            continue;
        };
        // A CPU worker between two groups: the source may take the rest back (the waiting
        // units then ask at once), then the worker runs its next group, as the thread layer
        // does.
        if sim.at[u] < c.tasks().end {
            let before = c.tasks().end;
            let end = c.reclaim(sim.at[u]);
            if end < before {
                for (w, wait) in waiting.iter_mut().enumerate() {
                    if *wait && w != u {
                        asked[w] = t;
                        *wait = !sim.ask(w, t);
                    }
                }
            }
            if sim.at[u] < end {
                let next = group_end(&units[u], sim.at[u], &c.tasks());
                let e = units[u].end(t, sim.at[u]..next, sim.started[u], false);
                sim.at[u] = next;
                sim.events.push(Reverse((Time(e), u)));
                sim.held[u] = Some(c);
                continue;
            }
        }
        if let Some((d, _)) = units[u].serial {
            sim.devices.entry(d).or_default().1 -= 1;
        }
        for task in c.tasks() {
            runs[task - tasks.start] += 1;
        }
        out.tasks[u] += c.tasks().len();
        out.chunks[u] += 1;
        out.makespan = out.makespan.max(t);
        drop(c);
        waiting[u] = !sim.ask(u, t);
        asked[u] = t;
        // Waiting units plan again every RECHECK seconds, as in the thread layer, and at once
        // when the source wakes them (more of a device's queues may take work).
        let woken = source.wakes() != wakes;
        wakes = source.wakes();
        for (w, wait) in waiting.iter_mut().enumerate() {
            if *wait && w != u && (woken || t >= asked[w] + RECHECK) {
                asked[w] = t;
                *wait = !sim.ask(w, t);
            }
        }
    }
    out.serial_busy = sim.serial_busy;
    if let Some(i) = runs.iter().position(|&r| r != 1) {
        panic!(
            "task {} ran {} times (units: {:?})",
            tasks.start + i,
            runs[i],
            out.tasks
        );
    }
    out
}

/// The simulated units' state: the chunk each holds, where a CPU worker is in it (the end of
/// the group it runs), how many chunks each started, and the events to come.
struct Sim<'a> {
    source: &'a dyn TaskSource,
    units: &'a [SimUnit],
    held: Vec<Option<Chunk<'a>>>,
    at: Vec<usize>,
    started: Vec<usize>,
    events: Events,
    /// Serial devices ([`SimUnit::serial`]): when each is free, and its chunks in flight.
    devices: std::collections::HashMap<usize, (f64, usize)>,
    /// Seconds they were busy.
    serial_busy: f64,
}

impl Sim<'_> {
    /// Unit `u` asks for a chunk at time `t`; false if it got none.
    fn ask(&mut self, u: usize, t: f64) -> bool {
        let unit = &self.units[u];
        match self.source.next(u, unit.want) {
            Some(c) => {
                let first = c.tasks().start..group_end(unit, c.tasks().start, &c.tasks());
                self.at[u] = first.end;
                let mut end = unit.end(t, first, self.started[u], true);
                if let Some((d, slower)) = unit.serial {
                    // After the device's earlier chunks, slower while it has others.
                    let (free, busy) = self.devices.entry(d).or_default();
                    let work = (end - t) * if *busy > 0 { slower } else { 1.0 };
                    end = free.max(t) + work;
                    (*free, *busy) = (end, *busy + 1);
                    self.serial_busy += work;
                }
                self.events.push(Reverse((Time(end), u)));
                self.started[u] += 1;
                self.held[u] = Some(c);
                true
            }
            None => false,
        }
    }
}

type Events = BinaryHeap<Reverse<(Time, usize)>>;

/// Where the group `unit` starts at `from` in `chunk` ends: a CPU worker's group, a device's
/// whole chunk.
fn group_end(unit: &SimUnit, from: usize, chunk: &Range<usize>) -> usize {
    match unit.info.kind {
        super::UnitKind::Cpu => from.saturating_add(unit.granule).min(chunk.end),
        _ => chunk.end,
    }
}

/// The optimal makespan of `tasks` identical tasks on `units`.
pub(crate) fn ideal(units: &[SimUnit], tasks: usize) -> f64 {
    let done_by = |t: f64| -> usize { units.iter().map(|u| u.can_do_by(t)).sum() };
    let mut hi = 1.0;
    while done_by(hi) < tasks {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if done_by(mid) >= tasks {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The makespan of the fastest unit alone.
pub(crate) fn best_single(units: &[SimUnit], tasks: usize) -> f64 {
    units
        .iter()
        .map(|u| ideal(std::slice::from_ref(u), tasks))
        .fold(f64::INFINITY, f64::min)
}
