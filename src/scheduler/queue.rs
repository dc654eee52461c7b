//! The work-queue policy: a central queue that plans the end of the run from each unit's
//! measured cost model.
//!
//! Model: a chunk of `k` tasks on unit `i` takes `latency_i + k · per_task_i` seconds, with `k`
//! at most what the unit asks for (a device's batch). The estimate is a least-squares fit over
//! the unit's finished chunks, older chunks weighing less (about the last `Rules::window`
//! seconds of its work count); a CPU worker's latency is taken as 0. The queues of a device
//! share one model, the device's (rule *device rate*). A unit not measured yet borrows the
//! mean estimate of its class (the other CPU workers, the queues of a device of its model).
//!
//! On every request at time `now`, with `R` tasks not handed out yet, the rules below size the
//! requester's chunk ([`WorkQueue`]'s `chunk_size`, one step per rule). They are cited by name
//! (in the code, its tests and the simulator's); the numbers are those of the benchmark diary
//! (docs/history), which cites them by number.
//!
//! 1. **Plan.** The earliest `T` such that the units, each from the moment its current chunk
//!    is expected to end, could finish `R` tasks by `T` in whole chunks (`capacity`). This is
//!    the optimal makespan of the rest when the estimates are right.
//! 2. **Share.** The requester's share is what it can finish by `T`. It takes a fraction
//!    (`Rules::share`) of it, so that the next request corrects any error in the estimates; a
//!    device takes at least enough to amortize its latency (`Rules::amortize`), never more
//!    than its share.
//! 3. **Wait.** A share of 0 means that the others clear everything before this unit could
//!    finish one chunk: it takes nothing and waits (`wait_for_work`); it plans again every
//!    [`RECHECK`] seconds, in case another unit slowed down, and at once when a unit fails.
//! 4. **Probe.** A unit starts from the model an earlier run measured, when the runtime has one
//!    ([`UnitInfo::prior`]). Otherwise, before a unit (or its class) has an estimate, it takes
//!    a probe: 1 task on a CPU worker (one group of tasks, for a worker that runs several
//!    together: [`TaskSource::granule`]); on a device a batch shared by its queues (rule *one
//!    device*), or the device queues' even split of what is left when that is less, and at
//!    most a quarter of what is left (rule *small probe*). **Short while unmeasured:** while
//!    some unit is still unmeasured, no unit takes a chunk longer than the run has lasted so
//!    far, so nothing big is handed out on half the facts. Without an earlier run's model, a
//!    workspace of a few batches can therefore end later than its ideal (a probe decides where
//!    the first tasks go; see the tests).
//!
//! 5. **Class split.** A CPU worker never takes more than an even split of what is left among
//!    the active units of its class, and a worker that runs tasks in groups gets whole groups.
//!
//! 6. **CPUs out.** CPU workers that together have less than `Rules::min_cpu_share` (10%) of
//!    the speed of the units in the plan (each at its chunk size) take nothing while another
//!    unit runs. Measured, such CPU workers cost more than they gave: beside 14 CPU PHAST
//!    workers running 5% of osm-bremen-dist's trees, the GPU ran 10% slower and the workers'
//!    last chunks of 64 trees (5 ms) ended up to 2.2 ms after it (15.1-16.3 ms against
//!    13.7-14.1 ms on the GPU alone); PHAST on osm-moscow (CPUs 2%) and collatz (CPUs 1%) on
//!    GPU + CPUs were 1% and 11% under the GPU alone (BENCHMARKS.md, scheduling). The 10% is a
//!    judgement between those (5-6% and less) and mixed runs that gain (CPUs 16% and more).
//!    The devices then plan without those CPU workers: planning on them, a device left them a
//!    share and waited for work they never took (the simulator: 16.76 against 16.16 ms in
//!    bremen's shape with 2 idle CPU workers), and they could take it when every device waited
//!    (likely what happened once on the H200 machine: 2 CPU workers took 2,368 trees and
//!    ended the run at 131 ms instead of 15).
//!
//! 7. **Prior gives way.** An earlier run's model is a unit's model only until its own chunks
//!    give one; while they show one chunk size, it splits their time between latency and
//!    per-task time. Mixed into the unit's chunks as two samples (at 1 and 64 tasks), a model
//!    whose latency was most of a chunk (stored after a run whose device chunks were all about
//!    one size: 5.86 ms a chunk, 1e-12 s a task) outweighed a short run's few real chunks: the
//!    device's chunks shrank to a task, CPU workers of a new count were left a share, and
//!    osm-bremen-dist's 15 ms run took 105-137 ms on the H100 machine (simulator test
//!    `an_earlier_runs_model_gives_way_to_the_units_own_chunks`).
//!
//! 8. **Device floor.** While some unit is unmeasured, a device's chunk is capped by the run so
//!    far (*short while unmeasured*) but never under its probe. A device starting from an
//!    earlier run's model whose latency was 2.8-4.1 ms a chunk was otherwise held to a task or
//!    a few per launch while 2 CPU workers of a new count probed: osm-bremen-dist's run took
//!    16.7-17.8 ms against about 15.5 ms alone on the H100 machine, the simulator 16.6 against
//!    14.7 (test `a_devices_model_never_shrinks_its_chunks_below_a_probe`).
//!
//! 9. **Prior is provisional.** A CPU worker keeps the cap of *short while unmeasured* (chunks
//!    no longer than the run so far) while a device is known only from an earlier run's model,
//!    without a chunk of its own. Seen on a 4 x H100 machine: a GPU model stored by a run of
//!    16 sources (a task or two per queue: 15 ms a chunk, 7.5 ms a task) and a slow first
//!    chunk (warm-up, 51 ms) had 62 CPU workers plan on a GPU 2,000 times too slow and take
//!    hundreds of trees each; osm-moscow's full APSP took 2.43 s against 1.06 s for the GPU
//!    alone (simulator test `a_cpu_worker_does_not_plan_on_a_devices_model_from_history_alone`:
//!    3.9 s -> 1.10 s).
//!
//! 10. **Give back.** A CPU worker runs its chunk a group at a time ([`TaskSource::granule`]);
//!     between two groups, while some unit waits (nothing left to hand out, or its plan gave it
//!     nothing), it may give back the rest ([`TaskSource::reclaim`]). A waiting device takes
//!     the longest tail it finishes no later than the worker would finish what it keeps, the
//!     worker's rate measured on this chunk (its tasks' neighbours, not the model); otherwise
//!     waiting CPU workers split the rest evenly with it, as work stealing does (not while
//!     *CPUs out* holds). What is given back is the recipients' next chunks whatever their
//!     plans say. The models go wrong where task costs vary: CPU workers measured on the
//!     cheap rows of a Mandelbrot image took chunks of costly ones, and a mixed run took
//!     1.1-2.5 s against 0.41-0.49 s for the GPU alone on the H200 machine (the first run of
//!     the job); 16 CPU workers starting from such a model took 10.5-12.2 s against plain
//!     rayon's 9.1-9.9 s, and 8.4-8.7 s with the rule (BENCHMARKS.md, scheduling; simulator
//!     tests `a_mixed_run_on_uneven_rows_is_not_slower_than_the_gpu_alone`,
//!     `cpu_workers_with_a_wrong_prior_steal_each_others_tails`).
//!
//! 11. **Device rate.** The queues of a device are one device: their chunks make one model of
//!     the device's combined rate, the one [`TaskSource::estimates`] gives for the speed
//!     history, and a queue plans with its part of it (the model times the device's active
//!     queues), so that the device's queues finish together. A finished chunk counts as its
//!     tasks in the device's seconds it had, read three ways: in parts (its time over the
//!     device's active queues: exact when each queue has a fixed part of the device, what a
//!     queue's own model assumed), shared (1 over the number of its queues busy, over its time:
//!     exact when their kernels share the device) and one after another (from the device's
//!     previous chunk end: exact when the driver runs them in turn); the model is fitted to the
//!     reading that fits a line best. On the H200 machine with 4 queues the NVIDIA driver ran the knn
//!     example's kernels one after another, each about twice as long: a queue's own chunk
//!     times mixed its kernels with the others', and the queues' models (the speed history's)
//!     were hundreds of times apart (simulator test `a_devices_queues_are_learned_as_one_device`;
//!     the makespan there moves by 2% at most: no policy that keeps 4 such queues busy comes
//!     near one queue). Measured there (knn, 4 queues, first run without a history, five runs
//!     alternated, 2026-11-29): 7.3-13.7 s, median 8.6, against 9.9-17.3 s, median 11.1, with
//!     the rule off; from a history both took 2.33 s (one queue took every task) or 4.94 s (a
//!     chunk each), as equitable shares do (4.94 s); one queue alone 2.33 s.
//!
//! 12. **Small probe.** A device's first probe (no model of its own, its class's, or an
//!     earlier run's), its queues together, is at most a quarter of what is left (an even
//!     split among fewer units: a device alone takes its batch): a device whose batch fills it
//!     (the knn example's is the whole workspace) otherwise took every task as its probe,
//!     however slow it turned out, and a wrong guess now costs at most a quarter of the
//!     workspace on that device (test `a_devices_first_probe_is_a_small_part_of_the_tasks`).
//!     The *device floor* (a batch per queue) is not bound by it: the tests of models from the
//!     H100 machine's history need it.
//!
//! 13. **Hand over.** With nothing left to hand out, a CPU worker between two groups hands the
//!     rest of its chunk to the device that would finish everything left (each CPU worker's
//!     chunk in flight counted whole, gifts, after the device's own chunk) before the worker
//!     finishes one more group at its rate on this chunk: the worker then starts no task the
//!     device would finish sooner. On Mandelbrot rows (*give back*), the row each CPU worker
//!     ran when the GPU ran out held the run 15% past the GPU alone in the simulator (test
//!     `a_mixed_run_on_uneven_rows_is_not_slower_than_the_gpu_alone`: 1.02x with the rule).
//!     On the H200 machine (the mandel example, GPU + 15 CPU workers, first run, five runs
//!     alternated): 0.345-0.378 s, median 0.346, against 0.324-0.498 s, median 0.402, with
//!     the rule off; the GPU alone 0.45-0.46 s.
//!
//! 14. **Busy queues** (off by default: `Rules::busy_queues`, `scheduler.busy_queues`). A
//!     device with several queues hands work to only as many of them as do not lower its
//!     combined rate. Without a count from the speed history ([`UnitInfo::busy`]) or an earlier run's
//!     model (one stored before the rule was measured with every queue busy: the device keeps
//!     them so), its first two queues first run one small chunk each (a 256th of what is left
//!     per queue: a queue's first chunk may hold its warm-up); a queue past them runs its own
//!     first chunk only when a round first tries it (step *warm*), so that a device that runs
//!     its queues' kernels one after another runs no more than two warm-ups in turn (4 of them
//!     cost the simulator's serial device with 0.1 s warm-ups 1.28x one queue's time, 2 of them
//!     1.11x: test `a_serial_devices_first_run_settles_early_on_one_queue`). Queues past the
//!     count are parked: they take nothing and wait, not starved (no tails are handed to
//!     them). Then rounds, each queue of the round one chunk of that size (or less, as its plan
//!     says) and waiting for the others': one queue (the reference), two, then (if two paid)
//!     all of them, then (if all did not) 3, 4, ...; after each trial the best count runs
//!     again. A round's rate is its tasks over the device's seconds its chunks had (read one
//!     after another: these partition the device's busy time), and a trial's count (more
//!     queues than the best count's) is dropped only when its rate falls below the mean of the
//!     best count's before and after it by [`BUSY_MARGIN`] (10%; the mean cancels costs that
//!     drift along the task space; extra queues that add nothing cost nothing, and a round's
//!     few tasks of uneven cost can read queues that scale as gaining nothing), and kept at
//!     once, without the best count's round again, when it beats the best count's rate before
//!     it by [`BUSY_CLEAR`] (30%: its queues plainly add throughput; a device whose queues
//!     scale settles after 1, 2 and all of them, and the fewer noisy comparisons misread the
//!     scheduling matrix's heavy-tailed costs less). The device then settles at the best count
//!     for the rest of the run (parked queues end it with 0 tasks; a round that its plan leaves
//!     waiting, near the end, settles it too, and leaves no count for the speed history if no
//!     trial was decided yet), and [`TaskSource::busy_queues`] gives the count
//!     for the speed history, so that a later run starts there and tries no other. While a
//!     device searches, CPU workers keep the cap of *short while unmeasured*. A queue that
//!     leaves when it gets nothing ([`UnitInfo::leaves`]: another rank's under MPI
//!     master-slave) would leave for good: its device keeps all its queues busy. On the H200
//!     machine the NVIDIA driver ran the knn example's kernels from 4 queues one after another,
//!     each about twice as long, so 4 busy queues gave less than one: one queue 2.32 s, 4
//!     queues 4.94 s with equitable shares, 3.7-4.9 s under the work queue from a history and
//!     7.3-13.7 s without; with the rule (before its warm-ups were cut to two), 2.346 s from
//!     the history and 9.9-22.4 s for a first run. In the simulator (test
//!     `a_device_whose_queues_add_no_throughput_keeps_one_busy`) such a device ends within 3% of
//!     one queue with the rule, and about 2x later without, deciding after under 1% of the
//!     tasks; a device whose 4 queues each have a quarter of it keeps all 4 busy within 2-5% of
//!     the rule off (test `a_device_whose_queues_add_throughput_keeps_them_all_busy`). The
//!     scheduling matrix passes its bounds with the rule (worst cells 0.993 of the fastest unit
//!     alone, a heavy tail at 1:100 with 4 queues, and 1.324 of the ideal, costly tasks last at
//!     1:100 with 4 queues on each of 2 GPUs; before the trials kept at once and the 10% margin
//!     down, its heavy-tailed costs misread devices whose queues scale and kept 1 queue busy,
//!     up to 1.60 of the ideal against 1.40 without the rule), though on those costs a slow
//!     device's rounds may still keep fewer than all of its scaling queues (a heavy tail at 1:1
//!     and 1:10: 1 and 3 of 4, 1.07 and 1.16 of the ideal). Off by default: on the H200
//!     machine (knn, 4 queues, 2026-11-29, `plugins/benches/knn_busy.sh`) its first runs took
//!     21.5-26.1 s, against 7.2-11.1 s for the build before it without the rule and 2.33-2.36 s
//!     from one queue; the runs after them settled on one queue once (2.336 s) and twice did
//!     not (4.95 and 3.72 s). The simulator's serial device does not yet reproduce what the
//!     driver does there.
//!
//! Complexity: a request costs O(units · 60) (a bisection for `T`) under the queue's lock.

use super::{Chunk, Clock, TaskSource, UnitInfo, UnitKind, WallClock};
use parking_lot::{Condvar, Mutex};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A unit's cost model: a chunk of `k` tasks takes `latency + k · per_task` seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// Seconds per chunk, whatever its size.
    pub latency: f64,
    /// Seconds per task.
    pub per_task: f64,
}

impl Estimate {
    /// Seconds for a chunk of `k` tasks.
    pub fn time(&self, k: usize) -> f64 {
        self.latency + k as f64 * self.per_task
    }

    /// Tasks this unit can finish within `span` seconds in chunks of at most `cap` tasks.
    pub fn capacity(&self, cap: usize, span: f64) -> usize {
        if span <= 0.0 || cap == 0 {
            return 0;
        }
        let c = cap as f64;
        let chunk = self.time(cap);
        let full = (span / chunk).floor();
        let rest = span - full * chunk;
        let part = if rest < self.latency {
            0.0
        } else if self.per_task > 0.0 {
            ((rest - self.latency) / self.per_task).floor().min(c)
        } else {
            c
        };
        let tasks = full * c + part;
        if tasks >= usize::MAX as f64 / 2.0 {
            usize::MAX / 2
        } else {
            tasks as usize
        }
    }
}

/// Seconds between a waiting unit's plans while tasks are left (it declined them; another
/// unit may slow down). Its plan is not made at every finished chunk: a device finishing a
/// chunk every millisecond would keep the queue's lock busy with the waiters' plans.
pub(crate) const RECHECK: f64 = 0.02;

/// Rule *small probe*: a device's first probe, its queues together, is at most this part of
/// what is left (or an even split among fewer units). An even split among all the units (a
/// sixteenth beside 15 CPU workers) was too little: probed at an eighth of its batch, the GPU
/// of the simulator's 2,048-task scenario and of the 40 ms run read as slower than it was, and
/// both runs ended 8% later.
const PROBE_PARTS: usize = 4;

/// Rule *busy queues*: a trial's count of busy queues (more than the best count's) is dropped
/// only when the device's combined rate with it is at least this much below the best count's:
/// a device whose extra queues add nothing loses nothing by them, and on tasks of uneven cost
/// (the scheduling matrix's heavy tail: one task in 61 costing 40) a round's few tasks can
/// read a device whose queues scale as not gaining. Asking them to gain 5% instead, the
/// matrix's heavy tail at 1:10 with 4 queues on each of 2 GPUs ended at 1.47 of the ideal
/// (1.16 now), and costly tasks last at 1:1 kept 3 of 4 queues busy.
pub(crate) const BUSY_MARGIN: f64 = 0.1;

/// Rule *busy queues*: a trial count whose rate is at least this much above the best count's
/// (before it) is kept at once, without the best count's round again (a device whose queues
/// add throughput: 2 queues twice one's rate) so that the search costs such a device one
/// round less, and no trial is kept thus on a device whose queues add none (half one queue's
/// rate with 2 on the knn example's).
pub(crate) const BUSY_CLEAR: f64 = 0.3;

/// Rule *busy queues*: a round's chunk, per queue, is at most what is left over this many
/// times the device's queues (and at most the device's first chunk), so that the rounds that
/// try more queues on a device that runs them one after another cost little (the knn
/// example: 50,000 tasks, 4 queues, chunks of about 50 tasks in the rounds: 1.03x one queue
/// in the simulator, against 1.04x with 64 parts), and a device whose queues do pay idles
/// little while it searches.
const ROUND_PARTS: usize = 256;

/// The second chunk size an earlier run's model is entered at.
const PRIOR_SIZE: usize = 64;

/// The policy's constants, chosen by simulation (`sim.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    /// Fraction of its planned share a unit takes per request.
    pub share: f64,
    /// A device's chunk is at least `amortize · latency / per_task` tasks (its latency at most
    /// 1 / (1 + amortize) of the chunk's time), capped by its share.
    pub amortize: f64,
    /// Seconds of a unit's work its estimate remembers: a chunk of `t` seconds scales the
    /// weight of the older ones by `exp(-t / window)`, so a device that runs a chunk every
    /// millisecond averages hundreds of them, and a chunk that took long (a stall) counts at
    /// once.
    pub window: f64,
    /// For a device measured at one chunk size only: the part of its chunk time taken as
    /// latency until a second size shows the split.
    pub split: f64,
    /// Probe and size a grouped unit's chunks in whole groups, and cap a CPU worker at an even
    /// split of what is left among its class (rule *class split*). Off only in the
    /// simulator's test of the earlier policy.
    pub groups: bool,
    /// CPU workers that together have less than this part of the units' speed take nothing
    /// while another unit runs (rule *CPUs out*).
    pub min_cpu_share: f64,
    /// Devices plan without the CPU workers that *CPUs out* keeps out. Off only in the
    /// simulator's test of the policy without it.
    pub plan_without_cpus_out: bool,
    /// Rule *prior gives way*: an earlier run's model is the unit's model until its own chunks
    /// give one (and its latency split while they show one size), rather than two samples
    /// among its chunks.
    pub prior_gives_way: bool,
    /// Rule *device floor*: while some unit is unmeasured, a device's chunk is still at least
    /// its probe. Off only in the simulator's test of the policy without it.
    pub device_floor: bool,
    /// Rule *prior is provisional*: for a CPU worker's chunk, a device whose model is an
    /// earlier run's alone (no chunk of its own yet) counts as unmeasured for the cap of
    /// *short while unmeasured*. Off only in the simulator's test of the policy without it.
    pub prior_is_provisional: bool,
    /// Rule *give back*: while a unit waits with nothing left to hand out, a CPU worker gives
    /// back the tail of its chunk between two groups. Off only in the simulator's test of the
    /// policy without it.
    pub give_back: bool,
    /// Rule *device rate*: the queues of a device share one model, the device's combined
    /// rate, each queue planned with its part of it. Off (each queue its own model, as if it
    /// were a device of its own) only to measure without it.
    pub device_rate: bool,
    /// Rule *small probe*: a device's first probe, its queues together, is at most a quarter
    /// of what is left ([`PROBE_PARTS`]). Off only to measure without it.
    pub small_probe: bool,
    /// Rule *hand over*: with nothing left to hand out, a CPU worker hands the rest of its
    /// chunk to a device that would finish all that is left before the worker finishes one
    /// more task. Off only to measure without it.
    pub hand_over: bool,
    /// Rule *busy queues*: a device with several queues hands work to only as many of them as
    /// do not lower its combined rate (starting from one; the count the speed history holds, when it
    /// holds one). Needs rule *device rate* (it counts a device's queues). Off by default (on the
    /// H200 machine its first runs were slower than without it: module doc, rule 14); off,
    /// every queue takes work.
    pub busy_queues: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            share: 0.25,
            amortize: 4.0,
            window: 0.5,
            split: 0.5,
            groups: true,
            min_cpu_share: 0.10,
            plan_without_cpus_out: true,
            prior_gives_way: true,
            device_floor: true,
            prior_is_provisional: true,
            give_back: true,
            device_rate: true,
            small_probe: true,
            hand_over: true,
            busy_queues: false,
        }
    }
}

/// Decayed sums over a unit's finished chunks: sizes `k` and times `t`.
#[derive(Debug, Clone, Copy, Default)]
struct Samples {
    w: f64,
    k: f64,
    t: f64,
    kk: f64,
    kt: f64,
    tt: f64,
}

impl Samples {
    fn add(&mut self, k: f64, t: f64, window: f64) {
        let d = if self.w > 0.0 {
            (-t / window).exp()
        } else {
            0.0
        };
        self.w = self.w * d + 1.0;
        self.k = self.k * d + k;
        self.t = self.t * d + t;
        self.kk = self.kk * d + k * k;
        self.kt = self.kt * d + k * t;
        self.tt = self.tt * d + t * t;
    }

    /// How badly a line `latency + k · per_task` fits the samples: 1 when its latency or
    /// per-task time is negative (larger chunks took less time), else the residual variance of
    /// the times over their mean square (0: exactly, as 2 samples always fit).
    fn misfit(&self) -> f64 {
        if self.w == 0.0 || self.k == 0.0 {
            return 0.0;
        }
        let (mk, mt) = (self.k / self.w, self.t / self.w);
        let var_k = self.kk / self.w - mk * mk;
        let cov = self.kt / self.w - mk * mt;
        if var_k <= (0.05 * mk).powi(2) {
            return 0.0; // one chunk size: any split fits
        }
        let per_task = cov / var_k;
        if per_task <= 0.0 || mt - per_task * mk < 0.0 {
            return 1.0;
        }
        let var_t = (self.tt / self.w - mt * mt).max(0.0);
        ((var_t - cov * per_task).max(0.0) / (mt * mt).max(1e-300)).min(0.99)
    }

    fn estimate(&self, kind: UnitKind) -> Fit {
        if self.w == 0.0 || self.k == 0.0 {
            return Fit::None;
        }
        let (mk, mt) = (self.k / self.w, self.t / self.w);
        // A zero time (a coarse clock, an empty task) must not read as infinite speed.
        let mt = mt.max(1e-9);
        let pure_rate = Estimate {
            latency: 0.0,
            per_task: mt / mk,
        };
        if kind == UnitKind::Cpu {
            return Fit::Known(pure_rate);
        }
        let var = self.kk / self.w - mk * mk;
        if var <= (0.05 * mk).powi(2) {
            // One chunk size so far: the split between latency and per-task time is unknown.
            return Fit::OneSize { k: mk, t: mt };
        }
        let per_task = (self.kt / self.w - mk * mt) / var;
        let latency = mt - per_task * mk;
        Fit::Known(if per_task <= 0.0 {
            Estimate {
                latency: mt,
                per_task: 1e-12,
            }
        } else if latency < 0.0 {
            pure_rate
        } else {
            Estimate { latency, per_task }
        })
    }
}

/// What a unit's chunks say about its model.
#[derive(Debug, Clone, Copy)]
enum Fit {
    None,
    Known(Estimate),
    /// A device measured at one chunk size: `k` tasks take `t` seconds.
    OneSize {
        k: f64,
        t: f64,
    },
}

#[derive(Debug, Clone)]
struct UnitState {
    kind: UnitKind,
    class: usize,
    /// The most it asked for (its chunk cap).
    want: usize,
    samples: Samples,
    /// The chunk it runs: handed out at, tasks.
    in_flight: Option<(f64, usize)>,
    /// Got `None` and has not asked again since: it waits (`wait_for_work`). A unit between
    /// two chunks is not waiting: it is about to ask.
    waiting: bool,
    /// Waiting: nothing was left to hand out, or its plan gave it nothing (rule *give back*).
    starved: bool,
    /// Tasks another unit gave back for this one (rule *give back*): its next chunks, whatever
    /// its plan says (the giver decided with its own measured rate).
    gifts: Vec<Range<usize>>,
    /// Failed: gets nothing more.
    out: bool,
    /// Tasks it runs together for the cost of one group ([`TaskSource::granule`]).
    granule: usize,
    /// Chunks it finished (its own measurements, beside a prior's).
    chunks: usize,
    /// An earlier run's model (rule *prior gives way*): its model until its own chunks give
    /// one; its split between latency and per-task time while they show one size.
    prior: Option<Estimate>,
    /// The device whose queue it is, when its queues share one model (rule *device rate*).
    device: Option<usize>,
    /// Its device's integral of 1 / (queues busy) when its chunk in flight was handed out.
    area0: f64,
    /// Its device's step (rule *busy queues*) when its last chunk was handed out.
    epoch0: u64,
}

impl UnitState {
    /// What its own chunks (and an earlier run's model) say about its model.
    fn fit(&self) -> Fit {
        fit_of(&self.samples, self.kind, self.prior)
    }
}

/// What chunks (and an earlier run's model, rule *prior gives way*) say about a model.
fn fit_of(samples: &Samples, kind: UnitKind, prior: Option<Estimate>) -> Fit {
    match (samples.estimate(kind), prior) {
        (Fit::None, Some(p)) => Fit::Known(p),
        (Fit::OneSize { k, t }, Some(p)) => {
            let split = (p.latency / p.time(k.round() as usize).max(1e-12)).clamp(0.0, 1.0);
            Fit::Known(Estimate {
                latency: split * t,
                per_task: ((1.0 - split) * t / k).max(1e-12),
            })
        }
        (fit, _) => fit,
    }
}

/// The queues of one device (rule *device rate*): their chunks, each counted at its share of
/// the device, make one model of the device's combined rate.
#[derive(Debug, Clone, Default)]
struct DeviceState {
    /// Each chunk of its queues as `k` tasks in the seconds of the device it had, read three
    /// ways; the model is fitted to the reading that fits a line best. Here: its time over the
    /// device's active queues, exact where each queue has a fixed part of the device (kernels
    /// too small to fill it; what a queue's own model assumed before rule *device rate*).
    parts: Samples,
    /// The integral of 1 / (the device's queues busy) over the chunk's time (a chunk that ran
    /// while 4 queues were busy had a quarter of the device): exact where the queues' kernels
    /// share the device; these seconds add up to the time the device was busy.
    shared: Samples,
    /// The time from the device's previous chunk end (or the chunk's start, if later) to its
    /// end: exact where the device runs its queues' kernels one after another (as the NVIDIA
    /// driver did with 4 queues of the knn example); these too add up to its busy time.
    serial: Samples,
    /// When a chunk of its queues last ended.
    last_end: f64,
    /// An earlier run's model of the device (rule *prior gives way*).
    prior: Option<Estimate>,
    /// Chunks its queues finished.
    chunks: usize,
    /// Its queues with a chunk in flight.
    busy: usize,
    /// The integral of 1 / `busy` over the time some queue was busy, up to `since`: a queue's
    /// part of the device's seconds.
    area: f64,
    since: f64,
    /// Rule *busy queues*: how many of its queues take work (the first ones in unit order that
    /// have not failed); `usize::MAX`: all of them (the rule off, or a single queue).
    limit: usize,
    /// Where the search for that count stands.
    step: Step,
    /// Bumped at every step: a chunk counts for the round it was handed out in.
    epoch: u64,
    /// The round's finished chunks: tasks, the device's seconds they had (read one after
    /// another: these partition the device's busy time), chunks.
    round: (f64, f64, usize),
    /// Tasks a queue runs in a round (every round of the device the same, so that their rates
    /// compare).
    round_k: usize,
    /// The best count so far, with its combined rate (tasks per second of the device).
    best: Option<(usize, f64)>,
    /// Tasks of its first chunk.
    first_k: usize,
    /// Whether its count was decided: by its rounds, or by an earlier run (the speed history
    /// keeps it then).
    decided: bool,
    /// A trial round's count and rate, until the best count has run again.
    pending: Option<(usize, f64)>,
    /// Trials decided (kept or not): without one, a search cut short by the run's end leaves
    /// no count for the speed history.
    trials: usize,
    /// Tasks not handed out yet when its search ended (the simulator's tests).
    settled_left: Option<usize>,
    /// Where rule *busy queues* starts: `None`, it does not apply (a single queue, queues
    /// that leave, or an earlier run's model without a count); `Some(None)`: a search;
    /// `Some(Some(c))`: the count an earlier run found.
    start: Option<Option<usize>>,
}

/// Rule *busy queues*: where a device's search for its count of busy queues stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Step {
    /// Its first two queues' first chunks, one each, small (a queue's first chunk may hold
    /// its warm-up, which no round should measure).
    #[default]
    First,
    /// Before a round: queues of the round that never ran a chunk run one (a queue's first
    /// chunk may hold its warm-up), the others theirs as planned, at most the rounds' size.
    Warm,
    /// A round: each of its first `limit` queues runs one chunk of `round_k` tasks (and waits
    /// for the others'); their combined rate is then compared with the best count's.
    Round,
    /// The count is decided (or the rule does not apply).
    Settled,
}

impl DeviceState {
    /// Rule *busy queues* on or off for this device of `queues` queues, before the run.
    fn busy_rule(&mut self, on: bool, queues: usize) {
        self.decided = false;
        (self.limit, self.step) = match self.start {
            // Its first two queues warm up; the others when a round first tries them.
            Some(None) if on => (2.min(queues), Step::First),
            Some(Some(b)) if on => {
                self.decided = true;
                (b, Step::Settled)
            }
            _ => (usize::MAX, Step::Settled),
        };
        // Its first step counts the chunks handed out in it (a queue's `epoch0` starts at 0).
        self.epoch = 1;
    }
    /// The reading of the device's chunk times its model is fitted to: the one that fits a
    /// line best (on a tie the earlier: fixed parts, shared, one after another).
    fn fitted(&self) -> &Samples {
        let mut best = &self.parts;
        for s in [&self.shared, &self.serial] {
            if s.misfit() < best.misfit() {
                best = s;
            }
        }
        best
    }
    /// Bring the integral up to `now`.
    fn touch(&mut self, now: f64) {
        if now > self.since {
            if self.busy > 0 {
                self.area += (now - self.since) / self.busy as f64;
            }
            self.since = now;
        }
    }
}

/// A model of a whole device as one of its `queues` queues sees it while they all run: each
/// has its part of the device, so its chunk takes `queues` times as long.
fn per_queue(fit: Fit, queues: f64) -> Fit {
    match fit {
        Fit::Known(e) => Fit::Known(Estimate {
            latency: e.latency * queues,
            per_task: e.per_task * queues,
        }),
        Fit::OneSize { k, t } => Fit::OneSize { k, t: t * queues },
        Fit::None => Fit::None,
    }
}

#[derive(Debug)]
struct State {
    next: usize,
    /// Tasks given back by failed units (served first).
    returned: Vec<Range<usize>>,
    units: Vec<UnitState>,
    /// Bumped whenever tasks come back (a unit failed, or gave back the tail of its chunk):
    /// waiting units may get them.
    returns: u64,
    /// The devices whose queues share one model (rule *device rate*).
    devices: Vec<DeviceState>,
}

impl State {
    /// Tasks not handed out yet, gifts included.
    fn left(&self, end: usize) -> usize {
        let gifts = self.units.iter().flat_map(|u| &u.gifts);
        self.pool(end) + gifts.map(|r| r.len()).sum::<usize>()
    }
    /// Tasks any unit may take: not handed out and not given to a unit.
    fn pool(&self, end: usize) -> usize {
        end - self.next + self.returned.iter().map(|r| r.len()).sum::<usize>()
    }
    /// What `unit` may take: the pool and its gifts.
    fn left_for(&self, unit: usize, end: usize) -> usize {
        self.pool(end)
            + self.units[unit]
                .gifts
                .iter()
                .map(|r| r.len())
                .sum::<usize>()
    }
    fn in_flight(&self) -> usize {
        self.units.iter().filter(|u| u.in_flight.is_some()).count()
    }
    /// Active (not failed) queues of device `d` (rule *device rate*) that take work (rule
    /// *busy queues*), at least 1.
    fn queues(&self, d: usize) -> usize {
        self.active_queues(d).min(self.devices[d].limit).max(1)
    }
    /// Active (not failed) queues of device `d`.
    fn active_queues(&self, d: usize) -> usize {
        self.units
            .iter()
            .filter(|u| !u.out && u.device == Some(d))
            .count()
    }
    /// Rule *busy queues*: whether `unit` is a queue its device keeps idle (past the count of
    /// queues that take work).
    fn parked(&self, unit: usize) -> bool {
        let u = &self.units[unit];
        let Some(d) = u.device else {
            return false;
        };
        let limit = self.devices[d].limit;
        if u.out || limit == usize::MAX {
            return false;
        }
        let before = self.units[..unit]
            .iter()
            .filter(|v| !v.out && v.device == Some(d))
            .count();
        before >= limit
    }
    /// Rule *busy queues*: whether `unit` takes nothing now: it is parked, or it has run its
    /// chunk of its device's round and waits for the round's end.
    fn held(&self, unit: usize) -> bool {
        let u = &self.units[unit];
        match u.device {
            Some(d) => {
                let dev = &self.devices[d];
                (matches!(dev.step, Step::Round | Step::First) && u.epoch0 == dev.epoch)
                    || self.parked(unit)
            }
            None => false,
        }
    }
    /// `unit` starts running `k` tasks at `now` (its device counts one more queue busy).
    fn begin(&mut self, unit: usize, now: f64, k: usize) {
        self.units[unit].in_flight = Some((now, k));
        if let Some(d) = self.units[unit].device {
            let dev = &mut self.devices[d];
            dev.touch(now);
            dev.busy += 1;
            self.units[unit].area0 = dev.area;
            self.units[unit].epoch0 = dev.epoch;
        }
    }
    /// `unit`'s chunk in flight ended at `now` (finished or failed); returns the device's
    /// seconds it had, shared and one after another (rule *device rate*: `None` for a unit of
    /// its own).
    fn end_chunk(&mut self, unit: usize, now: f64) -> Option<(f64, f64)> {
        let u = &mut self.units[unit];
        let (Some((start, _)), Some(d)) = (u.in_flight.take(), u.device) else {
            return None;
        };
        let dev = &mut self.devices[d];
        dev.touch(now);
        dev.busy = dev.busy.saturating_sub(1);
        let serial = now - start.max(dev.last_end);
        dev.last_end = dev.last_end.max(now);
        Some(((dev.area - u.area0).max(0.0), serial.max(0.0)))
    }
    /// Whether `u`'s model is an earlier run's alone, with no chunk of its own (of its device's
    /// queues, under rule *device rate*) yet.
    fn prior_only(&self, u: &UnitState) -> bool {
        match u.device {
            Some(d) => self.devices[d].prior.is_some() && self.devices[d].chunks == 0,
            None => u.prior.is_some() && u.chunks == 0,
        }
    }
    /// Whether `a` and `b` are queues of one device (rule *one device*): of one device under
    /// rule *device rate*, else of one class.
    fn same_device(a: &UnitState, b: &UnitState) -> bool {
        match (a.device, b.device) {
            (Some(x), Some(y)) => x == y,
            _ => a.class == b.class,
        }
    }
    /// Whether a unit other than `unit` runs a chunk or is about to ask for one (is neither
    /// out nor waiting): then `unit` may leave the rest to it.
    fn others_active(&self, unit: usize) -> bool {
        self.units
            .iter()
            .enumerate()
            .any(|(j, u)| j != unit && !u.out && !u.waiting)
    }
}

/// A request being sized: the unit, the tasks not handed out yet, its chunk cap (at most
/// those), the time.
#[derive(Debug, Clone, Copy)]
struct Ask {
    unit: usize,
    left: usize,
    want: usize,
    now: f64,
}

/// A unit the requester plans with (rule *plan*).
#[derive(Debug, Clone, Copy)]
struct Planned {
    est: Estimate,
    /// Its chunk cap.
    cap: usize,
    /// When its current chunk is expected to end (or now).
    free: f64,
    kind: UnitKind,
}

impl Planned {
    /// Tasks per second at its chunk size.
    fn rate(&self) -> f64 {
        self.cap as f64 / self.est.time(self.cap).max(1e-12)
    }
}

/// The units a request plans with, and whether rule *CPUs out* keeps the CPU workers out.
#[derive(Debug)]
struct Plan {
    units: Vec<Planned>,
    cpus_out: bool,
}

impl Plan {
    /// Tasks the planned units can finish by time `t`.
    fn can_do(&self, t: f64) -> usize {
        self.units
            .iter()
            .map(|p| p.est.capacity(p.cap, t - p.free))
            .fold(0usize, |a, b| a.saturating_add(b))
    }

    /// Rule *plan*: the earliest time by which the planned units finish the `left` tasks of
    /// `ask`, to 0.1% of the time left (bisection; `me`, the requester, alone finishes them by
    /// the first upper bound).
    fn end(&self, me: Estimate, ask: Ask) -> f64 {
        let (now, left, want) = (ask.now, ask.left, ask.want);
        let mut hi = now + me.time(want) * left.div_ceil(want) as f64 + 1e-9;
        while self.can_do(hi) < left {
            hi = now + (hi - now) * 2.0;
        }
        let mut lo = now;
        // To 0.1% of the time left: finer than any share needs.
        while hi - lo > 1e-3 * (hi - now) {
            let mid = 0.5 * (lo + hi);
            if self.can_do(mid) >= left {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

/// A central queue with chunk sizes planned from measured speeds (see the module text).
pub struct WorkQueue {
    state: Mutex<State>,
    changed: Condvar,
    end: usize,
    /// When the run started on `clock` ([`TaskSource::start`], else when the queue was made),
    /// as `f64` bits.
    start_time: AtomicU64,
    clock: Box<dyn Clock>,
    stopped: AtomicBool,
    /// Some unit is starved ([`TaskSource::starving`]), kept with the units' flags.
    starving: AtomicBool,
    /// Bumped when more of a device's queues may take work ([`TaskSource::wakes`]).
    wakes: AtomicU64,
    rules: Rules,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.state.lock();
        write!(
            f,
            "WorkQueue(next {} of {}, {} units)",
            st.next,
            self.end,
            st.units.len()
        )
    }
}

impl WorkQueue {
    /// A queue over `tasks` shared by `units`, timed by the wall clock.
    pub fn new(tasks: Range<usize>, units: &[UnitInfo]) -> Self {
        Self::with_clock(
            tasks,
            units,
            Box::new(WallClock::default()),
            Rules::default(),
        )
    }

    /// The same queue, with rule *give back* on or off.
    pub fn give_back(mut self, on: bool) -> Self {
        self.rules.give_back = on;
        self
    }

    /// The same queue, with the rules that `[scheduler]` switches (`give_back`,
    /// `device_rate`, `small_probe`, `hand_over`, `busy_queues`) as `plan` sets them. Call it before the
    /// first request: rule *device rate* decides how the units' models are kept.
    pub fn rules_of(self, plan: &crate::config::SchedulerPlan) -> Self {
        let mut q = self.give_back(plan.give_back);
        q.rules.small_probe = plan.small_probe;
        q.rules.hand_over = plan.hand_over;
        q.rules.busy_queues = plan.busy_queues;
        let st = q.state.get_mut();
        for d in 0..st.devices.len() {
            let queues = st.active_queues(d);
            st.devices[d].busy_rule(plan.busy_queues, queues);
        }
        if !plan.device_rate {
            q.rules.device_rate = false;
            // Each queue its own model (its own chunks and prior are kept beside the device's).
            let st = q.state.get_mut();
            for u in &mut st.units {
                u.device = None;
            }
            st.devices.clear();
        }
        q
    }

    /// A queue timed by `clock` (the simulator's virtual clock) under `rules`.
    pub(crate) fn with_clock(
        tasks: Range<usize>,
        units: &[UnitInfo],
        clock: Box<dyn Clock>,
        rules: Rules,
    ) -> Self {
        let units_in = units;
        let mut classes: Vec<&str> = Vec::new();
        // Rule *device rate*: the queues of one device (named by the runtime, else by their
        // class) share one model.
        let mut devices: Vec<&str> = Vec::new();
        let mut device_states: Vec<DeviceState> = Vec::new();
        let units = units
            .iter()
            .map(|u| {
                let device = (rules.device_rate && u.kind == UnitKind::Device).then(|| {
                    let name = u.device.as_deref().unwrap_or(&u.class);
                    devices.iter().position(|d| *d == name).unwrap_or_else(|| {
                        devices.push(name);
                        device_states.push(DeviceState::default());
                        devices.len() - 1
                    })
                });
                if let (Some(d), Some(p)) = (device, u.prior) {
                    // Its queues' earlier models are the device's (the speed history stores
                    // the device's model under each of its queues' key).
                    let dev = &mut device_states[d];
                    if rules.prior_gives_way {
                        dev.prior = dev.prior.or(Some(p));
                    } else if dev.shared.w == 0.0 {
                        for samples in [&mut dev.parts, &mut dev.shared, &mut dev.serial] {
                            samples.add(1.0, p.time(1), rules.window);
                            samples.add(PRIOR_SIZE as f64, p.time(PRIOR_SIZE), rules.window);
                        }
                    }
                }
                let class = classes
                    .iter()
                    .position(|c| *c == u.class)
                    .unwrap_or_else(|| {
                        classes.push(&u.class);
                        classes.len() - 1
                    });
                // Rule *prior gives way*: an earlier run's model is kept beside the unit's own
                // chunks, not mixed into them (before the rule, and with it off: as two samples
                // of distinct sizes, outweighed as real chunks finish).
                let mut samples = Samples::default();
                if let (Some(p), false) = (u.prior, rules.prior_gives_way) {
                    samples.add(1.0, p.time(1), rules.window);
                    samples.add(PRIOR_SIZE as f64, p.time(PRIOR_SIZE), rules.window);
                }
                UnitState {
                    prior: u.prior.filter(|_| rules.prior_gives_way),
                    kind: u.kind,
                    class,
                    want: usize::MAX,
                    samples,
                    in_flight: None,
                    waiting: false,
                    starved: false,
                    gifts: Vec::new(),
                    out: false,
                    granule: 1,
                    chunks: 0,
                    device,
                    area0: 0.0,
                    epoch0: 0,
                }
            })
            .collect::<Vec<UnitState>>();
        let now = clock.now();
        for (i, d) in device_states.iter_mut().enumerate() {
            d.since = now;
            // Rule *busy queues*: a device of several queues starts with one busy, or with
            // the count an earlier run found (then it tries no other).
            let mine = || {
                units_in
                    .iter()
                    .zip(&units)
                    .filter(|(_, s)| s.device == Some(i))
            };
            let queues = mine().count();
            let known = mine().find_map(|(u, _)| u.busy);
            let leaves = mine().any(|(u, _)| u.leaves);
            // An earlier run's model without a count (stored before the rule) was measured
            // with every queue busy: the device keeps them so.
            let prior = mine().any(|(u, _)| u.prior.is_some());
            d.start = match known {
                _ if queues < 2 || leaves => None,
                None if prior => None,
                Some(b) => Some(Some(b.clamp(1, queues))),
                None => Some(None),
            };
            d.busy_rule(rules.busy_queues, queues);
        }
        WorkQueue {
            state: Mutex::new(State {
                next: tasks.start,
                returned: Vec::new(),
                units,
                returns: 0,
                devices: device_states,
            }),
            changed: Condvar::new(),
            end: tasks.end,
            start_time: AtomicU64::new(clock.now().to_bits()),
            clock,
            stopped: AtomicBool::new(false),
            starving: AtomicBool::new(false),
            wakes: AtomicU64::new(0),
            rules,
        }
    }

    /// When the run started, on the queue's clock.
    fn start_time(&self) -> f64 {
        f64::from_bits(self.start_time.load(Ordering::Relaxed))
    }

    /// Rule *busy queues*: for each unit of a device, the tasks not handed out yet when its
    /// device's search ended (`None`: no search, or not ended).
    #[cfg(test)]
    pub(crate) fn busy_settled_left(&self) -> Vec<Option<usize>> {
        let st = self.state.lock();
        st.units
            .iter()
            .map(|u| st.devices[u.device?].settled_left)
            .collect()
    }

    /// The current estimate of every unit (`None`: not measured, nor any of its class).
    pub fn estimates(&self) -> Vec<Option<Estimate>> {
        let st = self.state.lock();
        self.all_estimates(&st)
    }

    /// Each unit's model from its own chunks (`None`: it ran none), what the speed history
    /// keeps; while its chunks showed one size only, their time split as its earlier run's
    /// model split it (rule *prior gives way*), else as its class's or `Rules::split`.
    pub fn measured(&self) -> Vec<Option<Estimate>> {
        let st = self.state.lock();
        let est = self.all_estimates(&st);
        st.units
            .iter()
            .zip(est)
            .map(|(u, e)| match u.device {
                // Rule *device rate*: the device's model, its queues' together.
                Some(d) if st.devices[d].chunks > 0 && !u.out => e.map(|e| {
                    let q = st.queues(d) as f64;
                    Estimate {
                        latency: e.latency / q,
                        per_task: e.per_task / q,
                    }
                }),
                Some(_) => None,
                None => e.filter(|_| u.chunks > 0 && !u.out),
            })
            .collect()
    }

    fn all_estimates(&self, st: &State) -> Vec<Option<Estimate>> {
        let fits: Vec<Fit> = st
            .units
            .iter()
            .map(|u| match u.device {
                // Rule *device rate*: a queue plans with its part of the device's model.
                Some(d) => {
                    let dev = &st.devices[d];
                    let fit = fit_of(dev.fitted(), UnitKind::Device, dev.prior);
                    per_queue(fit, st.queues(d) as f64)
                }
                None => u.fit(),
            })
            .collect();
        let known = |class: usize| -> Vec<Estimate> {
            st.units
                .iter()
                .zip(&fits)
                .filter_map(|(v, f)| match f {
                    Fit::Known(e) if v.class == class => Some(*e),
                    _ => None,
                })
                .collect()
        };
        let mean = |es: &[Estimate]| -> Option<Estimate> {
            let n = es.len() as f64;
            (n > 0.0).then(|| Estimate {
                latency: es.iter().map(|e| e.latency).sum::<f64>() / n,
                per_task: es.iter().map(|e| e.per_task).sum::<f64>() / n,
            })
        };
        st.units
            .iter()
            .zip(&fits)
            .map(|(u, f)| match *f {
                Fit::Known(e) => Some(e),
                Fit::OneSize { k, t } => {
                    // Split its chunk time as its class-mates' models do at that size, else
                    // by the rule's fixed split.
                    let split = mean(&known(u.class))
                        .map(|m| m.latency / m.time(k.round() as usize).max(1e-12))
                        .unwrap_or(self.rules.split)
                        .clamp(0.0, 1.0);
                    Some(Estimate {
                        latency: split * t,
                        per_task: ((1.0 - split) * t / k).max(1e-12),
                    })
                }
                // Not measured: borrow the class's mean.
                Fit::None => mean(&known(u.class)),
            })
            .collect()
    }

    /// How many tasks `unit` takes now (0: none, it waits): the rules of the module text, one
    /// step each.
    fn chunk_size(&self, st: &State, unit: usize, left: usize, now: f64) -> usize {
        let me_state = &st.units[unit];
        let ask = Ask {
            unit,
            left,
            want: me_state.want.min(left).max(1),
            now,
        };
        // Rule *busy queues*: a parked queue takes nothing; in a round, a queue takes one
        // chunk of the round's size (or less, as its plan says), and then waits for the
        // others'.
        if let Some(d) = me_state.device {
            let dev = &st.devices[d];
            if st.held(unit) {
                return 0;
            }
            match dev.step {
                Step::Round | Step::Warm => {
                    let k = self.planned_size(st, unit, ask);
                    return if k == 0 { 0 } else { k.min(dev.round_k) };
                }
                // Its first chunk on each queue: the rounds' size (a probe would keep the
                // queues from the rounds for longer).
                Step::First => {
                    let active = st.active_queues(d).max(1);
                    return left.div_ceil(ROUND_PARTS * active).min(ask.want).max(1);
                }
                Step::Settled => {}
            }
        }
        self.planned_size(st, unit, ask)
    }

    /// The chunk `ask` gets from the rules after *busy queues* (0: none, it waits).
    fn planned_size(&self, st: &State, unit: usize, ask: Ask) -> usize {
        let (left, now) = (ask.left, ask.now);
        let me_state = &st.units[unit];
        let est = self.all_estimates(st);
        let plan = self.plan(st, &est, ask);
        let Some(me) = est[unit] else {
            return self.probe(st, ask, &plan);
        };
        // Rule *CPUs out*.
        if me_state.kind == UnitKind::Cpu && st.others_active(unit) && plan.cpus_out {
            return 0;
        }
        let share = me.capacity(ask.want, plan.end(me, ask) - now).min(left);
        if share == 0 {
            // Rule *wait*: others clear the rest before this unit could finish a chunk. Wait,
            // unless no other unit is running or about to ask (then nothing would wake this
            // one).
            return if st.others_active(unit) {
                0
            } else {
                ask.want.min(left)
            };
        }
        let k = self.part_of_share(me, share, ask.want);
        let k = self.short_while_unmeasured(st, &est, ask, me, k);
        if !self.rules.groups {
            return k.max(1);
        }
        Self::class_split(st, ask, k)
    }

    /// Rules *plan* and *CPUs out*: everyone measured who can take part, with the time it
    /// becomes free; without the CPU workers that *CPUs out* keeps out when the requester is a
    /// device.
    fn plan(&self, st: &State, est: &[Option<Estimate>], ask: Ask) -> Plan {
        let mut units: Vec<Planned> = st
            .units
            .iter()
            .enumerate()
            .filter(|(j, u)| !u.out && !st.parked(*j))
            .filter_map(|(j, u)| {
                let e = est[j]?;
                let free = match u.in_flight {
                    Some((start, k)) if j != ask.unit => (start + e.time(k)).max(ask.now),
                    _ => ask.now,
                };
                Some(Planned {
                    est: e,
                    cap: u.want.min(ask.left).max(1),
                    free,
                    kind: u.kind,
                })
            })
            .collect();
        // Rule *CPUs out*: CPU workers with a tiny part of the speed take nothing while
        // another unit runs, so nobody plans on them (a device that left them a share would
        // wait for work they never take, and they would take it when every device waits).
        let all: f64 = units.iter().map(Planned::rate).sum();
        let cpus: f64 = units
            .iter()
            .filter(|p| p.kind == UnitKind::Cpu)
            .map(Planned::rate)
            .sum();
        let cpus_out =
            cpus < self.rules.min_cpu_share * all && units.iter().any(|p| p.kind != UnitKind::Cpu);
        let me = st.units[ask.unit].kind;
        if cpus_out && me != UnitKind::Cpu && self.rules.plan_without_cpus_out {
            units.retain(|p| p.kind != UnitKind::Cpu);
        }
        Plan { units, cpus_out }
    }

    /// Rule *probe*: the chunk of a unit with no estimate (nor its class).
    fn probe(&self, st: &State, ask: Ask, plan: &Plan) -> usize {
        let me = &st.units[ask.unit];
        // Measured units (the plan: this unit is not in it) that clear what is left within as
        // long again as this unit took to ask since the run started (a unit of another rank,
        // whose workers are made on their own clock; on one node every unit's worker is made
        // before the start) leave it nothing worth a probe, which could end after them (a 20
        // ms run would end with every late CPU worker's first task). It waits, and plans again
        // if they slow down.
        let waited = ask.now - self.start_time();
        if plan.can_do(ask.now + waited) >= ask.left && st.others_active(ask.unit) {
            return 0;
        }
        // A probe: one task on a CPU worker; on a device, what is left split among the
        // devices' queues, up to a batch (a smaller batch would cost as much).
        match me.kind {
            // One group: a probe of 1 task on a unit that runs k together would cost as much
            // as k and read as k times too slow.
            UnitKind::Cpu if self.rules.groups => me.granule.min(ask.want).min(ask.left).max(1),
            UnitKind::Cpu => 1,
            UnitKind::Device => {
                // Rule *small probe*: the device's queues together take at most a quarter of
                // what is left (an even split among fewer units): a device whose batch is the
                // whole workspace took it all as its probe.
                let bound = if self.rules.small_probe {
                    let active = st.units.iter().filter(|u| !u.out).count();
                    ask.left.div_ceil(active.clamp(1, PROBE_PARTS))
                } else {
                    usize::MAX
                };
                Self::device_probe(st, Some(ask.unit), ask.left, ask.want, bound)
            }
        }
    }

    /// Rule *share*: the part of its `share` the requester takes now (a fraction, a device at
    /// least enough to amortize its latency, never more than its share or its cap `want`).
    fn part_of_share(&self, me: Estimate, share: usize, want: usize) -> usize {
        let amortized = if me.latency > 0.0 {
            (self.rules.amortize * me.latency / me.per_task).ceil() as usize
        } else {
            1
        };
        ((self.rules.share * share as f64).ceil() as usize)
            .max(amortized)
            .min(share)
            .min(want)
    }

    /// Rules *short while unmeasured*, *device floor* and *prior is provisional*: while some
    /// unit is unmeasured, chunk `k` is cut to what `me` finishes within the run so far, a
    /// device's never under its probe.
    fn short_while_unmeasured(
        &self,
        st: &State,
        est: &[Option<Estimate>],
        ask: Ask,
        me: Estimate,
        k: usize,
    ) -> usize {
        let me_state = &st.units[ask.unit];
        // Rule *prior is provisional*: for a CPU worker, a device known only from an earlier
        // run's model (no chunk of its own yet) counts as unmeasured here.
        let provisional = self.rules.prior_is_provisional && me_state.kind == UnitKind::Cpu;
        // Rule *busy queues*: for a CPU worker, a device still searching for its count of busy
        // queues (its chunks small, its first one's warm-up most of its model) too.
        let searching = |u: &UnitState| {
            me_state.kind == UnitKind::Cpu
                && u.device
                    .is_some_and(|d| st.devices[d].step != Step::Settled)
        };
        let unmeasured = st.units.iter().zip(est).any(|(u, e)| {
            !u.out
                && (e.is_none()
                    || (provisional && u.kind == UnitKind::Device && st.prior_only(u))
                    || searching(u))
        });
        if !unmeasured {
            return k;
        }
        let horizon = (ask.now - self.start_time()).max(me.time(1));
        // Rule *device floor*: a device's chunk is never under its probe (an earlier run's
        // model, its latency most of a chunk, would make it a few tasks at a launch each).
        let floor = match me_state.kind {
            UnitKind::Device if self.rules.device_floor => {
                Self::device_probe(st, None, ask.left, ask.want, usize::MAX)
            }
            _ => 1,
        };
        k.min(me.capacity(ask.want, horizon).max(floor))
    }

    /// Rule *class split*: a CPU worker takes at most an even split of what is left among the
    /// active units of its class, and a unit that runs tasks together whole groups.
    fn class_split(st: &State, ask: Ask, mut k: usize) -> usize {
        let me_state = &st.units[ask.unit];
        if me_state.kind == UnitKind::Cpu {
            // Workers alike in speed: a class-mate whose model still holds its first, slow
            // chunk (a cold start) reads as far slower than it is, and the plan would otherwise
            // hand this unit most of the rest at once (measured: one worker of 16 took 2,300 of
            // 22,000 tasks and ran 1 s after the others had ended).
            let mates = st
                .units
                .iter()
                .filter(|u| !u.out && u.class == me_state.class)
                .count();
            k = k.min(ask.left.div_ceil(mates.max(1)));
        }
        let g = me_state.granule.max(1);
        k.div_ceil(g)
            .saturating_mul(g)
            .min(ask.want)
            .min(ask.left)
            .max(1)
    }

    /// A device's probe: what is left split among the devices' queues, up to a batch (a
    /// smaller batch would cost as much), and at most `bound` for the device's queues together
    /// (rule *small probe*).
    ///
    /// Rule *one device* (`unit`: the probing queue): the queues of a device probe one batch
    /// together, each its part, rather than a batch each: a device no faster than a CPU worker
    /// with 4 queues otherwise took 4 batches of the costliest tasks first and ended at 2.8x
    /// the ideal (test `scheduling_matrix`). The *device floor* keeps a batch per queue
    /// (`unit` = `None`).
    fn device_probe(
        st: &State,
        unit: Option<usize>,
        left: usize,
        want: usize,
        bound: usize,
    ) -> usize {
        let active = st
            .units
            .iter()
            .filter(|u| !u.out && u.kind == UnitKind::Device);
        let queues = active.clone().count();
        let mates = unit.map_or(1, |me| {
            let me = &st.units[me];
            active.filter(|u| State::same_device(u, me)).count()
        });
        left.div_ceil(queues.max(1))
            .min(want.div_ceil(mates.max(1)))
            .min(bound.div_ceil(mates.max(1)))
            .clamp(1, want)
    }

    /// Whether CPU workers should ask [`TaskSource::reclaim`] between their groups: some unit
    /// starves (rule *give back*), or nothing is left to hand out while a device runs (rule
    /// *hand over*).
    fn note_starving(&self, st: &State) {
        let any = st.units.iter().any(|u| u.starved && u.waiting && !u.out);
        let ending = self.rules.hand_over
            && st.pool(self.end) == 0
            && st
                .units
                .iter()
                .any(|u| u.kind == UnitKind::Device && !u.out);
        self.starving.store(any || ending, Ordering::Relaxed);
    }

    /// Rule *hand over*: with nothing left to hand out, the device to which `unit` (a CPU
    /// worker that runs a task in `rate` seconds, `rest` tasks left in its chunk) hands its
    /// rest: the one that would finish all that is left (every CPU worker's chunk taken
    /// whole, gifts, and its own chunk) before the worker finishes one more task (or group).
    fn hand_over_to(
        &self,
        st: &State,
        est: &[Option<Estimate>],
        unit: usize,
        rate: f64,
        rest: usize,
    ) -> Option<usize> {
        if !self.rules.hand_over || st.pool(self.end) > 0 || rate <= 0.0 {
            return None;
        }
        let now = self.clock.now();
        let cpu_left: usize = st
            .units
            .iter()
            .enumerate()
            .filter(|(j, u)| *j != unit && !u.out && u.kind == UnitKind::Cpu)
            .map(|(_, u)| u.in_flight.map_or(0, |(_, k)| k))
            .sum();
        let gifts: usize = st
            .units
            .iter()
            .flat_map(|u| &u.gifts)
            .map(|r| r.len())
            .sum();
        let left = rest + cpu_left + gifts;
        let mine = now + rate * st.units[unit].granule.max(1) as f64;
        st.units
            .iter()
            .enumerate()
            .filter(|(j, u)| !u.out && u.kind == UnitKind::Device && !st.held(*j))
            .filter_map(|(j, u)| {
                let e = est[j]?;
                let free = match u.in_flight {
                    Some((start, k)) => (start + e.time(k)).max(now),
                    None => now,
                };
                let cap = u.want.max(1);
                let end = free + left.div_ceil(cap) as f64 * e.latency + left as f64 * e.per_task;
                (end <= mine).then_some((end, j))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, j)| j)
    }

    /// Rule *give back*: of the `rest` tasks left in `unit`'s chunk (a CPU worker that ran
    /// `done` of them in `secs`), how many it keeps while other units starve. A starved device
    /// takes the longest tail it finishes no later than the worker finishes what it keeps
    /// (the worker's rate from this chunk, its tasks' neighbours); starved CPU workers split
    /// the rest evenly with it (work stealing's half, for one thief). Returns what it keeps
    /// and the units the tail goes to.
    fn tail_kept(
        &self,
        st: &State,
        unit: usize,
        done: usize,
        secs: f64,
        rest: usize,
    ) -> (usize, Vec<usize>) {
        let starved = |kind| {
            st.units.iter().enumerate().filter(move |(j, u)| {
                *j != unit && u.starved && u.waiting && !u.out && u.kind == kind
            })
        };
        let est = self.all_estimates(st);
        let rate = if done > 0 && secs > 0.0 {
            secs / done as f64
        } else {
            est[unit].map_or(0.0, |e| e.per_task)
        };
        if let Some(device) = self.hand_over_to(st, &est, unit, rate, rest) {
            return (0, vec![device]);
        }
        if rest < 2 {
            return (rest, Vec::new());
        }
        // The device that finishes m tasks soonest, in chunks of at most its cap.
        let device_time = |m: usize| {
            starved(UnitKind::Device)
                .map(|(j, u)| match est[j] {
                    Some(e) => {
                        let cap = u.want.max(1);
                        (
                            m.div_ceil(cap) as f64 * e.latency + m as f64 * e.per_task,
                            j,
                        )
                    }
                    None => (0.0, j), // unmeasured, yet idle: it may as well run them
                })
                .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a })
        };
        let (t1, device) = device_time(1);
        if t1.is_finite() {
            // The largest tail m with device_time(m) <= rate * (rest - m), by bisection.
            let (mut lo, mut hi) = (0, rest);
            while lo < hi {
                let m = (lo + hi).div_ceil(2);
                if device_time(m).0 <= rate * (rest - m) as f64 {
                    lo = m;
                } else {
                    hi = m - 1;
                }
            }
            if lo > 0 {
                return (rest - lo, vec![device]);
            }
        }
        // CPU thieves, unless rule *CPUs out* keeps the CPU workers out (the tail then stays
        // with this worker rather than spreading over more of them).
        let ask = Ask {
            unit,
            left: rest,
            want: rest,
            now: self.clock.now(),
        };
        if self.plan(st, &est, ask).cpus_out {
            return (rest, Vec::new());
        }
        let thieves: Vec<usize> = starved(UnitKind::Cpu).map(|(j, _)| j).collect();
        (rest - rest * thieves.len() / (thieves.len() + 1), thieves)
    }

    /// Rule *busy queues*: a queue of a round that its plan leaves waiting (the others clear
    /// what is left first: the run nears its end) ends its device's search, at the best count
    /// so far (not decided without one).
    fn busy_gives_up(&self, st: &mut State, unit: usize) {
        let Some(d) = st.units[unit].device else {
            return;
        };
        if !matches!(st.devices[d].step, Step::Round | Step::Warm) || st.held(unit) {
            return;
        }
        let left = st.pool(self.end);
        let dev = &mut st.devices[d];
        dev.epoch += 1;
        dev.step = Step::Settled;
        dev.settled_left = Some(left);
        if let Some((best, _)) = dev.best {
            (dev.limit, dev.decided) = (best, dev.trials > 0);
        }
        tracing::debug!(
            "busy queues: device {d} keeps {} queues busy (run ending)",
            dev.limit
        );
        self.wake(st);
    }

    /// Waiting units ask again: more of a device's queues may take work (rule *busy queues*).
    fn wake(&self, st: &mut State) {
        st.returns += 1;
        self.wakes.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_all();
    }

    /// Rule *busy queues*, after a chunk of device `d` ended: its first chunk starts the
    /// rounds (one queue, two, then all, then three, four, ... while each count raises the
    /// combined rate, within [`BUSY_MARGIN`], over the best so far); a complete round is compared with the
    /// best count, and the next round starts, or the device settles at the best count.
    fn busy_step(&self, st: &mut State, d: usize) {
        let active = st.active_queues(d);
        let members = st.queues(d);
        let left = st.pool(self.end);
        // Whether each of the first `c` queues has run a chunk (its warm-up behind it).
        let warm = |st: &State, c: usize| {
            st.units
                .iter()
                .filter(|u| !u.out && u.device == Some(d))
                .take(c)
                .all(|u| u.chunks > 0)
        };
        let warm_now = warm(st, members);
        let dev = &mut st.devices[d];
        let next = match dev.step {
            Step::Settled => return,
            Step::Warm if !warm_now => return,
            Step::Warm => {
                // The round proper.
                dev.epoch += 1;
                dev.round = (0.0, 0.0, 0);
                dev.step = Step::Round;
                return;
            }
            Step::First if dev.round.2 < members => return,
            Step::First => {
                // The reference round: one queue, at the rounds' chunk size.
                dev.round_k = dev
                    .first_k
                    .min(left.div_ceil(ROUND_PARTS * active.max(1)))
                    .max(1);
                Some(1)
            }
            Step::Round if dev.round.2 < members => return,
            Step::Round => {
                let rate = dev.round.0 / dev.round.1.max(1e-12);
                let count = dev.limit.min(active);
                tracing::debug!(
                    "busy queues: device {d} ran {} tasks on {count} queues at {rate:.1} tasks/s",
                    dev.round.0
                );
                match (dev.best, dev.pending) {
                    // The first reference (one queue): then two.
                    (None, _) => {
                        dev.best = Some((count, rate));
                        (active > 1).then_some(2)
                    }
                    // A trial: the best count runs again, so that the trial is compared with
                    // the best count's rate before and after it (tasks whose cost drifts
                    // along the task space, rising or falling, cancel out).
                    // A trial far above the best count's rate (its queues plainly add
                    // throughput) is kept at once: no drift comes near it.
                    (Some((_, before)), None) if rate >= (1.0 + BUSY_CLEAR) * before => {
                        tracing::debug!(
                            "busy queues: device {d}, {count} queues at {rate:.1} tasks/s \
                             against {before:.1}: kept at once"
                        );
                        dev.best = Some((count, rate));
                        dev.trials += 1;
                        next_trial(count, true, active)
                    }
                    (Some((best, _)), None) => {
                        dev.pending = Some((count, rate));
                        Some(best)
                    }
                    // The best count again: decide.
                    (Some((best, before)), Some((trial, trial_rate))) => {
                        dev.pending = None;
                        let base = 0.5 * (before + rate);
                        let kept = trial_rate >= (1.0 - BUSY_MARGIN) * base;
                        dev.trials += 1;
                        dev.best = Some(if kept {
                            (trial, trial_rate)
                        } else {
                            (best, rate)
                        });
                        tracing::debug!(
                            "busy queues: device {d}, {trial} queues at {trial_rate:.1} tasks/s \
                             against {best} at {base:.1}: {}",
                            if kept { "kept" } else { "not kept" }
                        );
                        next_trial(trial, kept, active)
                    }
                }
            }
        };
        dev.epoch += 1;
        dev.round = (0.0, 0.0, 0);
        match next {
            // Only while each of its queues can still have a chunk.
            Some(c) if left >= c => {
                let step = if warm(st, c) { Step::Round } else { Step::Warm };
                let dev = &mut st.devices[d];
                (dev.limit, dev.step) = (c, step);
            }
            _ => {
                let best = dev.best.map_or(dev.limit, |(c, _)| c);
                (dev.limit, dev.step) = (best.max(1), Step::Settled);
                dev.decided = dev.best.is_some() && dev.trials > 0;
                dev.settled_left = Some(left);
                tracing::debug!("busy queues: device {d} keeps {} queues busy", dev.limit);
            }
        }
        self.wake(st);
    }

    fn take(st: &mut State, k: usize, end: usize) -> Range<usize> {
        if let Some(last) = st.returned.last_mut() {
            let r = last.start..(last.start + k).min(last.end);
            last.start = r.end;
            if last.start == last.end {
                st.returned.pop();
            }
            return r;
        }
        let r = st.next..(st.next + k).min(end);
        st.next = r.end;
        r
    }
}

/// Rule *busy queues*: the count a device of `active` queues tries after trying `trial`
/// (`None`: it settles). One queue (the reference), then two; if two paid, all of them; if
/// all did not, three, four, ... while each pays.
fn next_trial(trial: usize, kept: bool, active: usize) -> Option<usize> {
    match trial {
        2 if kept && active > 2 => Some(active),
        c if c == active && !kept && active > 3 => Some(3),
        c if c > 2 && c < active && kept && c + 1 < active => Some(c + 1),
        _ => None,
    }
}

impl TaskSource for WorkQueue {
    fn start(&self) {
        self.start_time
            .store(self.clock.now().to_bits(), Ordering::Relaxed);
    }
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>> {
        let mut st = self.state.lock();
        if self.stopped.load(Ordering::Relaxed) || st.units[unit].out {
            return None;
        }
        if let Some(g) = st.units[unit].gifts.pop() {
            let r = g.start..g.start + g.len().min(want.max(1));
            if r.end < g.end {
                st.units[unit].gifts.push(r.end..g.end);
            }
            let u = &mut st.units[unit];
            (u.waiting, u.starved, u.want) = (false, false, want.max(1));
            st.begin(unit, self.clock.now(), r.len());
            self.note_starving(&st);
            drop(st);
            return Some(Chunk::new(self, unit, r));
        }
        let left = st.pool(self.end);
        // Until it gets a chunk, this unit waits (and asks again later).
        st.units[unit].waiting = true;
        // Starved until it gets a chunk: with nothing left to hand out, or told to wait by
        // its plan (whose models may be wrong: the units that run chunks then decide, with
        // the rates they measure now, whether to give it their tails).
        st.units[unit].starved = self.rules.give_back;
        if left == 0 {
            self.note_starving(&st);
            return None;
        }
        st.units[unit].want = want.max(1);
        let now = self.clock.now();
        let k = self.chunk_size(&st, unit, left, now);
        if k == 0 {
            self.busy_gives_up(&mut st, unit);
            if st.held(unit) {
                // Rule *busy queues*: it waits by the rule, not for work: no tails for it.
                st.units[unit].starved = false;
            }
            self.note_starving(&st);
            return None;
        }
        (st.units[unit].waiting, st.units[unit].starved) = (false, false);
        let r = Self::take(&mut st, k, self.end);
        st.begin(unit, now, r.len());
        self.note_starving(&st);
        drop(st);
        Some(Chunk::new(self, unit, r))
    }
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _g = self.state.lock();
        self.changed.notify_all();
    }
    fn now(&self) -> f64 {
        self.clock.now()
    }
    fn finished(&self, unit: usize, tasks: Range<usize>, secs: f64) {
        let mut st = self.state.lock();
        let window = self.rules.window;
        // Rule *device rate*: the chunk had its part of the device (1 over the number of its
        // queues busy, over its time): that many of the device's seconds it took.
        let had = st.end_chunk(unit, self.clock.now());
        let u = &mut st.units[unit];
        u.chunks += 1;
        u.samples.add(tasks.len() as f64, secs, window);
        let epoch0 = u.epoch0;
        if let (Some(d), Some((shared, serial))) = (u.device, had) {
            let queues = st.queues(d) as f64;
            let dev = &mut st.devices[d];
            dev.chunks += 1;
            let k = tasks.len() as f64;
            dev.parts.add(k, secs / queues, window);
            dev.shared.add(k, shared, window);
            dev.serial.add(k, serial, window);
            // Rule *busy queues*: a chunk of the round counts for its rate.
            if dev.chunks == 1 {
                dev.first_k = tasks.len();
            }
            if matches!(dev.step, Step::Round | Step::First) && epoch0 == dev.epoch {
                dev.round.0 += k;
                dev.round.1 += serial;
                dev.round.2 += 1;
            }
            self.busy_step(&mut st, d);
        }
        if st.in_flight() == 0 {
            // Waiting units may be done (or the last ones able to run what is left).
            self.changed.notify_all();
        }
    }
    fn estimates(&self) -> Vec<Option<Estimate>> {
        self.measured()
    }
    fn busy_queues(&self) -> Vec<Option<usize>> {
        let st = self.state.lock();
        st.units
            .iter()
            .map(|u| {
                let dev = &st.devices[u.device?];
                (self.rules.busy_queues && dev.decided && dev.limit != usize::MAX)
                    .then_some(dev.limit)
            })
            .collect()
    }
    fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }
    fn granule(&self, unit: usize, tasks: usize) {
        self.state.lock().units[unit].granule = tasks.max(1);
    }
    fn starving(&self) -> bool {
        self.starving.load(Ordering::Relaxed)
    }
    fn reclaim(
        &self,
        unit: usize,
        done: Range<usize>,
        secs: f64,
        rest: Range<usize>,
    ) -> Range<usize> {
        let mut st = self.state.lock();
        let (keep, to) = if self.stopped.load(Ordering::Relaxed) {
            (rest.len(), Vec::new())
        } else {
            self.tail_kept(&st, unit, done.len(), secs, rest.len())
        };
        let back = rest.start + keep..rest.end;
        tracing::trace!(
            "give back: unit {unit} ran {} tasks in {secs:.4} s, keeps {keep} of {}, {to:?} take the rest",
            done.len(),
            rest.len()
        );
        if back.is_empty() {
            return back;
        }
        if let Some((_, k)) = &mut st.units[unit].in_flight {
            *k = k.saturating_sub(back.len());
        }
        // Each recipient an even part of the tail, in order.
        let mut from = back.start;
        for (i, &j) in to.iter().enumerate() {
            let part = (back.end - from) / (to.len() - i);
            st.units[j].gifts.push(from..from + part);
            from += part;
        }
        st.returns += 1;
        self.changed.notify_all();
        back
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        let mut st = self.state.lock();
        st.end_chunk(unit, self.clock.now());
        let u = &mut st.units[unit];
        u.out = true;
        if let Some(d) = u.device {
            // Rule *busy queues*: its round may be complete without it, and a parked queue
            // takes its place.
            self.busy_step(&mut st, d);
            self.wake(&mut st);
        }
        let u = &mut st.units[unit];
        u.starved = false;
        let gifts = std::mem::take(&mut u.gifts);
        st.returned.extend(gifts);
        if !tasks.is_empty() {
            st.returned.push(tasks);
        }
        st.returns += 1;
        self.changed.notify_all();
    }
    fn left_over(&self) -> usize {
        self.state.lock().left(self.end)
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        let mut st = self.state.lock();
        let seen = st.returns;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(RECHECK);
        loop {
            if self.stopped.load(Ordering::Relaxed) || st.units[unit].out {
                return false;
            }
            let left = st.left(self.end);
            if left == 0 && st.in_flight() == 0 {
                st.units[unit].starved = false;
                self.note_starving(&st);
                return false;
            }
            if st.returns != seen {
                return true;
            }
            // Nobody else will change anything: ask again (the queue then gives this unit
            // the work rather than wait for nobody).
            let mine = st.left_for(unit, self.end);
            if mine > 0 && (!st.others_active(unit) || std::time::Instant::now() >= deadline) {
                // Plan again: another unit may have slowed down.
                return true;
            }
            if left > 0 {
                self.changed.wait_until(&mut st, deadline);
            } else {
                self.changed.wait(&mut st);
            }
        }
    }
}
