use super::queue::Rules;
use super::sim::{self, SimUnit, VirtualClock};
use super::*;
use std::ops::Range;

/// Take every chunk at once, round robin, finishing each at once.
fn drain(src: &dyn TaskSource, units: usize, want: usize) -> Vec<usize> {
    let mut seen = Vec::new();
    let mut live = true;
    while live {
        live = false;
        for u in 0..units {
            if let Some(c) = src.next(u, want) {
                seen.extend(c.tasks());
                live = true;
            }
        }
    }
    seen.sort();
    seen
}

fn cpus(n: usize) -> Vec<UnitInfo> {
    vec![UnitInfo::cpu("cpu"); n]
}

#[test]
fn every_task_exactly_once() {
    for (tasks, units, want) in [(0..0, 3, 4), (0..10, 3, 4), (5..1000, 7, 64), (0..2, 5, 1)] {
        let expect: Vec<usize> = tasks.clone().collect();
        assert_eq!(
            drain(
                &Equitable::new(tasks.clone(), &vec![1.0; units]),
                units,
                want
            ),
            expect
        );
        assert_eq!(
            drain(&WorkQueue::new(tasks.clone(), &cpus(units)), units, want),
            expect
        );
    }
}

#[test]
fn equitable_shares_are_equal_and_contiguous() {
    let e = Equitable::new(0..10, &[1.0, 1.0, 1.0]);
    let lens = e.share_lens();
    assert_eq!(lens.iter().sum::<usize>(), 10);
    assert!(lens.iter().all(|&l| l == 3 || l == 4), "{lens:?}");
}

#[test]
fn a_dropped_chunk_reports_its_time() {
    let clock = VirtualClock::default();
    let q = WorkQueue::with_clock(0..1000, &cpus(1), Box::new(clock.clone()), Rules::default());
    assert_eq!(q.estimates(), vec![None]);
    let c = q.next(0, 10).unwrap();
    let k = c.tasks().len();
    clock_advance(&clock, 0.5);
    drop(c);
    let e = q.estimates()[0].expect("the drop reported the chunk");
    assert!((e.per_task - 0.5 / k as f64).abs() < 1e-12, "{e:?}");
}

fn clock_advance(clock: &VirtualClock, secs: f64) {
    clock.set(clock.now() + secs);
}

#[test]
fn failed_chunks_go_to_other_units() {
    for src in [
        Box::new(WorkQueue::new(0..100, &cpus(2))) as Box<dyn TaskSource>,
        Box::new(Equitable::new(0..100, &[1.0, 1.0])),
    ] {
        let c = src.next(0, 10).unwrap();
        let lost = c.tasks();
        c.fail();
        assert!(src.next(0, 10).is_none(), "a failed unit gets nothing more");
        let mut seen = drain(src.as_ref(), 2, 10);
        seen.dedup();
        assert_eq!(seen, (0..100).collect::<Vec<_>>(), "lost {lost:?}");
    }
}

#[test]
fn a_unit_failing_without_a_chunk_leaves_its_share_to_others() {
    let e = Equitable::new(0..100, &[1.0, 1.0]);
    e.failed(0, 0..0);
    assert_eq!(drain(&e, 2, 7), (0..100).collect::<Vec<_>>());
}

#[test]
fn stop_ends_the_queue() {
    let q = WorkQueue::new(0..100, &cpus(2));
    q.stop();
    assert!(q.next(0, 1).is_none());
    assert!(!q.wait_for_work(0));
}

// ---- The simulator: makespan against the ideal -------------------------------------------

/// osm-moscow on the H200 machine: a CPU worker does 36 SSSP/s; the GPU 2,730/s in
/// batches of 512 (0.1875 s a batch), of which `latency` is per batch.
const CPU: f64 = 1.0 / 36.0;
fn gpu(class: &str, latency: f64) -> SimUnit {
    SimUnit::gpu(class, latency, (0.1875 - latency) / 512.0, 512)
}

fn mixed(gpus: usize, cpus: usize, latency: f64) -> Vec<SimUnit> {
    // Identical GPUs are one class (the runtime's class is the device's name).
    let mut u: Vec<SimUnit> = (0..gpus).map(|_| gpu("H200", latency)).collect();
    u.extend((0..cpus).map(|_| SimUnit::cpu(CPU)));
    u
}

/// A source under test, built on the simulator's clock.
type Make = fn(usize, &[UnitInfo], VirtualClock) -> Box<dyn TaskSource>;

fn work_queue(tasks: usize, units: &[UnitInfo], clock: VirtualClock) -> Box<dyn TaskSource> {
    Box::new(WorkQueue::with_clock(
        0..tasks,
        units,
        Box::new(clock),
        Rules::default(),
    ))
}

/// Makespan over the ideal, and over the best unit alone.
fn score(make: Make, units: &[SimUnit], tasks: usize) -> (f64, f64, sim::Outcome) {
    let clock = VirtualClock::default();
    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
    let src = make(tasks, &infos, clock.clone());
    let out = sim::run(src.as_ref(), &clock, units, 0..tasks);
    let ideal = sim::ideal(units, tasks);
    let single = sim::best_single(units, tasks);
    (out.makespan / ideal, out.makespan / single, out)
}

/// A simulated run of `tasks` tasks on `units` under the work queue with `rules`.
fn run_under(units: &[SimUnit], tasks: usize, rules: Rules) -> sim::Outcome {
    let clock = VirtualClock::default();
    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
    let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), rules);
    sim::run(&q, &clock, units, 0..tasks)
}

/// The mixed CPU + GPU scenarios, each with its task count.
fn scenarios() -> Vec<(&'static str, Vec<SimUnit>, usize)> {
    let mut stall_cpu = mixed(1, 15, 0.06);
    stall_cpu[5] = SimUnit::cpu(CPU).stalls(2.5, 1.5);
    let mut stall_gpu = mixed(1, 15, 0.06);
    stall_gpu[0] = gpu("gpu0", 0.06).stalls(2.5, 1.5);
    vec![
        ("1 GPU + 15 CPUs", mixed(1, 15, 0.06), 16_384),
        ("2 GPUs + 30 CPUs", mixed(2, 30, 0.06), 32_768),
        ("GPU batch latency dominates", mixed(1, 15, 0.18), 16_384),
        ("a CPU stalls halfway", stall_cpu, 16_384),
        ("the GPU stalls halfway", stall_gpu, 16_384),
        ("1 GPU + 15 CPUs, 2,048 tasks", mixed(1, 15, 0.06), 2_048),
        ("CPUs only", mixed(0, 16, 0.0), 2_048),
        (
            "collatz-like, GPU chunks with hiccups",
            vec![SimUnit::gpu("gpu0", 0.0002, 0.0001, 4).hiccups(997, 0.05)]
                .into_iter()
                .chain((0..15).map(|_| SimUnit::cpu(0.0065)))
                .collect(),
            20_000,
        ),
        (
            "collatz-like, one 0.2 s GPU hiccup near the end",
            vec![SimUnit::gpu("gpu0", 0.0002, 0.0001, 4).hiccups(3500, 0.2)]
                .into_iter()
                .chain((0..15).map(|_| SimUnit::cpu(0.0065)))
                .collect(),
            20_000,
        ),
        (
            "2 ranks of 1 GPU + 15 CPUs, the second 0.5 s late",
            mixed(1, 15, 0.06)
                .into_iter()
                .chain(mixed(1, 15, 0.06).into_iter().map(|mut u| {
                    // Another rank: its own classes (as the MPI master names them).
                    u.info.class = format!("rank1/{}", u.info.class);
                    u.starts_at(0.5)
                }))
                .collect(),
            32_768,
        ),
        (
            "tasks of unequal cost (±80%)",
            mixed(1, 15, 0.06)
                .into_iter()
                .map(|u| u.noisy(0.8))
                .collect(),
            16_384,
        ),
        (
            "CPUs listed first",
            {
                let mut u = mixed(1, 15, 0.06);
                u.rotate_left(1);
                u
            },
            16_384,
        ),
        ("GPU latency small", mixed(1, 15, 0.01), 16_384),
        (
            "GPU slower than the CPUs",
            vec![SimUnit::gpu("gpu0", 0.05, 0.005, 64)]
                .into_iter()
                .chain((0..15).map(|_| SimUnit::cpu(0.01)))
                .collect(),
            20_000,
        ),
        (
            "two unlike GPUs + 14 CPUs",
            vec![gpu("gpu0", 0.06), SimUnit::gpu("gpu1", 0.02, 0.001, 256)]
                .into_iter()
                .chain((0..14).map(|_| SimUnit::cpu(CPU)))
                .collect(),
            16_384,
        ),
        (
            // osm-bremen-dist with GPU PHAST: 40 ms on the GPU; the CPU workers are ready
            // (their PHAST state built) near the end, and one task takes them 10 ms.
            "a 40 ms run, CPU workers ready late",
            vec![SimUnit::gpu("gpu0", 0.0005, 8.8e-7, 8192)]
                .into_iter()
                .chain((0..14).map(|_| SimUnit::cpu(0.010).starts_at(0.029)))
                .collect(),
            40_461,
        ),
        (
            "collatz-like: fast GPU, no batch latency",
            vec![SimUnit::gpu("gpu0", 0.0002, 0.0001, 4)]
                .into_iter()
                .chain((0..15).map(|_| SimUnit::cpu(0.0065)))
                .collect(),
            2_000,
        ),
    ]
}

#[test]
fn work_queue_is_near_ideal_and_never_worse_than_the_best_unit() {
    let mut bad = Vec::new();
    for (name, units, tasks) in scenarios() {
        let (vs_ideal, vs_single, out) = score(work_queue, &units, tasks);
        eprintln!(
            "{name:<32} {:7.3} s, {vs_ideal:6.3} of ideal, {vs_single:6.3} of best single; tasks {:?} chunks {:?}",
            out.makespan,
            &out.tasks[..4.min(out.tasks.len())],
            &out.chunks[..4.min(out.tasks.len())]
        );
        if vs_ideal > 1.05 || vs_single > 1.0 + 1e-9 {
            bad.push(format!(
                "{name}: {vs_ideal:.3} of ideal, {vs_single:.3} of best unit alone"
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The queue of the previous main with no speed feedback (what the thread layer gave it): a
/// unit takes half of an even split of what is left, capped by what it asks for.
#[derive(Debug)]
struct SpeedBlind {
    next: parking_lot::Mutex<usize>,
    end: usize,
    units: usize,
}

impl TaskSource for SpeedBlind {
    fn next(&self, unit: usize, want: usize) -> Option<Chunk<'_>> {
        let mut next = self.next.lock();
        let left = self.end - *next;
        if left == 0 {
            return None;
        }
        let k = want.min(left / (2 * self.units)).max(1);
        *next += k;
        Some(Chunk::new(self, unit, *next - k..*next))
    }
    fn stop(&self) {}
    fn failed(&self, _unit: usize, _tasks: Range<usize>) {}
}

fn speed_blind(tasks: usize, units: &[UnitInfo], _clock: VirtualClock) -> Box<dyn TaskSource> {
    Box::new(SpeedBlind {
        next: parking_lot::Mutex::new(0),
        end: tasks,
        units: units.len(),
    })
}

fn equitable(tasks: usize, units: &[UnitInfo], _clock: VirtualClock) -> Box<dyn TaskSource> {
    Box::new(Equitable::new(0..tasks, &vec![1.0; units.len()]))
}

#[test]
fn policies_that_ignore_speed_fail_the_bounds() {
    // The bounds above can fail: on the mixed scenarios the speed-blind queue and equal
    // shares break them (the GPU idles at the end while CPUs finish long chunks, or takes a
    // whole batch at the end). CPU workers ask for chunks as the previous main did:
    // tasks / (units · 16), at most 64.
    let names = [
        "1 GPU + 15 CPUs",
        "2 GPUs + 30 CPUs",
        "GPU batch latency dominates",
    ];
    for (name, mut units, tasks) in scenarios().into_iter().filter(|s| names.contains(&s.0)) {
        let n = units.len();
        for u in units.iter_mut().filter(|u| u.info.kind == UnitKind::Cpu) {
            u.want = (tasks / (n * 16)).clamp(1, 64);
        }
        for (policy, make) in [
            ("speed-blind queue", speed_blind as Make),
            ("equitable", equitable),
        ] {
            let (vs_ideal, vs_single, _) = score(make, &units, tasks);
            eprintln!(
                "{policy:<18} {name:<32} {vs_ideal:6.3} of ideal, {vs_single:6.3} of best single"
            );
            assert!(
                vs_ideal > 1.05 || vs_single > 1.0,
                "{policy} on {name}: {vs_ideal:.3} of ideal, {vs_single:.3} of best single"
            );
        }
    }
}

/// The models a run of `tasks` on `units` ends with, per unit, as the runtime keeps them in the
/// speed history: one per class (a device's: the device's), for every unit of the class.
fn learned(units: &[SimUnit], tasks: usize) -> Vec<Option<Estimate>> {
    let clock = VirtualClock::default();
    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
    let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), Rules::default());
    sim::run(&q, &clock, units, 0..tasks);
    let m = q.measured();
    infos
        .iter()
        .map(|u| {
            infos
                .iter()
                .zip(&m)
                .find_map(|(v, e)| e.filter(|_| v.class == u.class))
        })
        .collect()
}

/// A model measured on one of a device's `queues` queues while they all ran (what the speed
/// history held before rule *device rate*: the figures the H100 machine stored), as the model
/// of the device (what it holds now).
fn device_model(queue: Estimate, queues: usize) -> Estimate {
    Estimate {
        latency: queue.latency / queues as f64,
        per_task: queue.per_task / queues as f64,
    }
}

/// A simulated unit's own model, as a prior: a device queue's as its device's, one of
/// `queues`.
fn model_of(u: &SimUnit, queues: usize) -> Estimate {
    let own = Estimate {
        latency: u.latency,
        per_task: u.per_task,
    };
    match u.info.kind {
        UnitKind::Device => device_model(own, queues),
        UnitKind::Cpu => own,
    }
}

fn small_scenarios() -> Vec<(&'static str, Vec<SimUnit>, usize)> {
    let fast_gpu = || -> Vec<SimUnit> {
        vec![SimUnit::gpu("gpu0", 0.0002, 0.0001, 4)]
            .into_iter()
            .chain((0..15).map(|_| SimUnit::cpu(0.0065)))
            .collect()
    };
    vec![
        ("tiny: 10 tasks", mixed(1, 15, 0.06), 10),
        ("tiny: 3 tasks", mixed(1, 15, 0.06), 3),
        ("tiny: 10 tasks, latency-bound GPU", mixed(1, 15, 0.18), 10),
        ("tiny: 10 tasks, fast GPU", fast_gpu(), 10),
        ("300 tasks", mixed(1, 15, 0.06), 300),
        ("300 tasks, 2 GPUs + 30 CPUs", mixed(2, 30, 0.06), 300),
    ]
}

#[test]
fn small_workspaces_with_an_earlier_runs_speeds() {
    // Fewer tasks than units, or a few batches: no probe can find the speeds in time, so the
    // queue starts from the models an earlier run on the same units measured (2,048 tasks).
    let mut bad = Vec::new();
    for (name, units, tasks) in small_scenarios() {
        let priors = learned(&units, 2048);
        let with: Vec<SimUnit> = units
            .iter()
            .zip(&priors)
            .map(|(u, p)| {
                let mut u = u.clone();
                u.info = u.info.with_prior(*p);
                u
            })
            .collect();
        let (vs_ideal, vs_single, out) = score(work_queue, &with, tasks);
        eprintln!(
            "{name:<36} {:8.4} s, {vs_ideal:6.3} of ideal, {vs_single:6.3} of best single; tasks {:?}",
            out.makespan,
            &out.tasks[..4]
        );
        if vs_ideal > 1.05 || vs_single > 1.0 + 1e-9 {
            bad.push(format!(
                "{name}: {vs_ideal:.3} of ideal, {vs_single:.3} of best unit alone"
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn small_workspaces_without_history_end_within_a_chunk() {
    // The first run on new units: probes decide. The makespan stays within the slowest
    // unit's first chunk of the best single unit's time; `small_workspaces_with_an_earlier_
    // runs_speeds` shows the queue near ideal once speeds are known.
    for (name, units, tasks) in small_scenarios() {
        let (_, _, out) = score(work_queue, &units, tasks);
        let single = sim::best_single(&units, tasks);
        let probe = units
            .iter()
            .map(|u| u.latency + u.per_task * u.want.min(tasks) as f64)
            .fold(0.0, f64::max);
        eprintln!(
            "{name:<36} {:8.4} s cold; best single {single:.4} s",
            out.makespan
        );
        assert!(out.makespan <= single + probe, "{name}: {} s", out.makespan);
    }
}

#[test]
fn a_waiting_unit_does_not_take_the_rest_from_a_unit_between_chunks() {
    // Seen on the H200 with the collatz example: a CPU worker waiting out the end asked in
    // the microseconds between two of the GPU's chunks, found no chunk in flight, and took the
    // last 8 tasks (0.2 s of CPU work) that the GPU would have run in 1.6 ms.
    let clock = VirtualClock::default();
    let gpu = Estimate {
        latency: 0.0002,
        per_task: 0.0001,
    };
    let cpu = Estimate {
        latency: 0.0,
        per_task: 0.02,
    };
    let infos = [
        UnitInfo::device("gpu").with_prior(Some(gpu)),
        UnitInfo::cpu("cpu").with_prior(Some(cpu)),
    ];
    let q = WorkQueue::with_clock(0..12, &infos, Box::new(clock.clone()), Rules::default());
    let c = q.next(0, 4).expect("the GPU takes a batch");
    assert!(
        q.next(1, usize::MAX).is_none(),
        "the CPU leaves the rest to the GPU"
    );
    clock.set(0.0006);
    drop(c);
    // The GPU has finished its chunk and not asked again yet; the waiting CPU plans again.
    assert!(
        q.next(1, usize::MAX).is_none(),
        "the GPU is about to ask: the CPU must not take its tasks"
    );
    let c = q.next(0, 4).expect("the GPU goes on");
    assert_eq!(c.tasks().len(), 4);
}

/// 16 CPU workers of CPU PHAST's cost shape (8 trees per sweep, so a chunk of 1 task
/// costs as much as one of 8; the first chunk slower while the worker's state warms up), with
/// and without noise, and beside a GPU. Measured on a 16-core machine, the policy before
/// the probe-first policy kept the workers busy half the run: it probed with 1 task (read as 8 times too
/// slow), so the first workers to ask again took most of the rest at once. The current policy
/// must end each within 3% of the ideal; the old one (`groups: false`) must not.
#[test]
fn grouped_cpu_workers_are_kept_busy() {
    let phast = |noise: f64| SimUnit::cpu(1.3e-3).grouped(8, 6e-3).noisy(noise);
    let mut with_gpu = vec![gpu("H200", 0.002)];
    with_gpu.extend((0..15).map(|_| phast(0.0)));
    let cases: Vec<(&str, Vec<SimUnit>, usize)> = vec![
        ("16 phast workers", vec![phast(0.0); 16], 30_000),
        ("16 noisy phast workers", vec![phast(0.3); 16], 30_000),
        ("16 phast workers, 2,048 tasks", vec![phast(0.0); 16], 2_048),
        ("gpu + 15 phast workers", with_gpu, 60_000),
    ];
    let old = |tasks: usize, units: &[UnitInfo], clock: VirtualClock| -> Box<dyn TaskSource> {
        let rules = Rules {
            groups: false,
            ..Rules::default()
        };
        Box::new(WorkQueue::with_clock(
            0..tasks,
            units,
            Box::new(clock),
            rules,
        ))
    };
    let mut bad = Vec::new();
    let mut old_worse = 0;
    for (name, units, tasks) in cases {
        let (now, _, out) = score(work_queue, &units, tasks);
        let (before, _, _) = score(old, &units, tasks);
        eprintln!(
            "{name:<32} {:7.3} s: {now:6.3} of ideal (the earlier policy: {before:6.3}); chunks {:?}",
            out.makespan,
            &out.chunks[..4]
        );
        // The ideal counts no warm-up: allow the first chunk's 6 ms beside the 3%.
        let bound = 1.03 + 6e-3 / sim::ideal(&units, tasks);
        if now > bound {
            bad.push(format!("{name}: {now:.3} of ideal (bound {bound:.3})"));
        }
        if before > 1.03 {
            old_worse += 1;
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    // The scenario catches the defect: the old policy misses the bound in most cases.
    assert!(
        old_worse >= 2,
        "the old policy passes: the scenario shows nothing"
    );
}

/// osm-bremen-dist's full APSP on an H200 (BENCHMARKS.md, scheduling): two queues of GPU PHAST
/// finish its 40,461 trees in about 14 ms; 14 CPU PHAST workers (64 trees in 5 ms) could run
/// about 6% of them. Measured, they cost more than that: with speeds known, such CPU workers
/// take nothing while the GPU runs (the queue's rule *CPUs out*); with the rule off it
/// takes its part.
#[test]
fn cpu_workers_with_a_tiny_part_of_the_plan_stay_out() {
    let tasks = 40_461;
    let mut units: Vec<SimUnit> = (0..2)
        .map(|_| SimUnit::gpu("H200", 3e-4, 6.8e-7, 8192))
        .collect();
    units.extend((0..14).map(|_| SimUnit::cpu(7.8e-5).grouped(64, 0.0)));
    for u in &mut units {
        u.info = u.info.clone().with_prior(Some(model_of(u, 2)));
    }
    let run = |rules: Rules| run_under(&units, tasks, rules);
    let on = run(Rules::default());
    let off = run(Rules {
        min_cpu_share: 0.0,
        ..Rules::default()
    });
    let cpu = |o: &sim::Outcome| o.tasks[2..].iter().sum::<usize>();
    eprintln!(
        "CPU tasks: {} (rule off: {}); makespan {:.2} ms (rule off: {:.2} ms)",
        cpu(&on),
        cpu(&off),
        on.makespan * 1e3,
        off.makespan * 1e3
    );
    assert_eq!(cpu(&on), 0, "the CPU workers should stay out");
    assert!(
        cpu(&off) > 0,
        "the scenario should give CPU workers tasks without the rule"
    );
}

#[test]
fn devices_do_not_leave_work_to_cpu_workers_that_stay_out() {
    // Bremen's shape with 2 CPU workers (3% of the speed, from history): *CPUs out* keeps them
    // out, so the GPU's queues must plan without them; otherwise they leave the CPU workers
    // a share, wait, and the CPU workers take it when both queues wait.
    let tasks = 40_461;
    let gpus = || (0..2).map(|_| SimUnit::gpu("H200", 3e-4, 6.8e-7, 8192));
    let mut units: Vec<SimUnit> = gpus().collect();
    units.extend((0..2).map(|_| SimUnit::cpu(7.8e-5).grouped(64, 0.0)));
    let prior = |us: &mut Vec<SimUnit>| {
        for u in us {
            u.info = u.info.clone().with_prior(Some(model_of(u, 2)));
        }
    };
    prior(&mut units);
    let mut alone: Vec<SimUnit> = gpus().collect();
    prior(&mut alone);
    let run = |units: &[SimUnit], rules: Rules| run_under(units, tasks, rules);
    let gpu = run(&alone, Rules::default()).makespan;
    let on = run(&units, Rules::default());
    let off = run(
        &units,
        Rules {
            plan_without_cpus_out: false,
            ..Rules::default()
        },
    );
    let cpu = |o: &sim::Outcome| o.tasks[2..].iter().sum::<usize>();
    eprintln!(
        "GPU alone {:.2} ms; with 2 CPU workers {:.2} ms, {} CPU tasks (devices planning on them: {:.2} ms, {} CPU tasks)",
        gpu * 1e3,
        on.makespan * 1e3,
        cpu(&on),
        off.makespan * 1e3,
        cpu(&off)
    );
    assert_eq!(cpu(&on), 0);
    assert!(on.makespan <= gpu * 1.01, "{} against {gpu}", on.makespan);
    assert!(
        off.makespan > gpu * 1.02,
        "the scenario should show the devices waiting for the CPU workers' share: {}",
        off.makespan
    );
}

/// Bremen's shape with an earlier run's model for the GPU's two queues (`gpu`:
/// latency, per-task time) and `cpus` CPU workers without one (a new worker count: they
/// probe). Returns the makespan under `rules` and the GPU alone's ideal.
fn gpu_history_new_cpus(gpu: (f64, f64), cpus: usize, rules: Rules) -> (f64, f64) {
    let tasks = 40_461;
    let mut units: Vec<SimUnit> = (0..2)
        .map(|_| SimUnit::gpu("H100", 3e-4, 6.8e-7, 8192))
        .collect();
    for u in &mut units {
        u.info = u.info.clone().with_prior(Some(device_model(
            Estimate {
                latency: gpu.0,
                per_task: gpu.1,
            },
            2,
        )));
    }
    let alone = sim::ideal(&units, tasks);
    units.extend((0..cpus).map(|_| SimUnit::cpu(6.8e-5).grouped(32, 0.0)));
    (run_under(&units, tasks, rules).makespan, alone)
}

/// The queue's rule *prior gives way*: an earlier run's model is a unit's model only until its
/// own chunks give one. Measured on the H100 machine: GPU models stored by runs whose chunks
/// were all about one size read as mostly latency (5.86 ms a chunk and 1e-12 s a task; 4.07
/// ms and 8.4e-8 s; 2.76 ms and 2.8e-7 s). Entered as two samples among the next run's
/// chunks, such a model outweighed its few real ones: the fit read the GPU as free of latency
/// and its queue took ever smaller chunks at 0.3 ms each while 14 new CPU workers probed. With
/// the all-latency model and 2 CPU workers (*prior gives way* and *device floor* off) the
/// GPU's chunks shrank to a task and the workers were left a share: 105-137 ms on the H100
/// machine against 15-16 ms for the GPU alone (they took 1,300-2,900 trees).
#[test]
fn an_earlier_runs_model_gives_way_to_the_units_own_chunks() {
    for (gpu, cpus) in [((4.07e-3, 8.4e-8), 14), ((2.76e-3, 2.8e-7), 14)] {
        let (on, alone) = gpu_history_new_cpus(gpu, cpus, Rules::default());
        // The rule's effect alone: *give back* and *hand over* also rescue this run (the GPU
        // takes the CPU workers' tails), so they are off here too.
        let (off, _) = gpu_history_new_cpus(
            gpu,
            cpus,
            Rules {
                prior_gives_way: false,
                give_back: false,
                hand_over: false,
                ..Rules::default()
            },
        );
        eprintln!(
            "GPU model {gpu:?}, {cpus} new CPU workers: {:.2} ms (prior gives way off: {:.2} ms), GPU alone ideal {:.2} ms",
            on * 1e3,
            off * 1e3,
            alone * 1e3
        );
        // The first run of new CPU workers probes them: allow one probe (a group of 32 tasks,
        // 2.2 ms) beside 5%.
        let probe = 32.0 * 6.8e-5;
        assert!(on <= 1.05 * alone + probe, "{on} s against {alone} s");
        assert!(off > 1.15 * alone, "prior gives way off passes: {off} s");
    }
    // The all-latency model with 2 CPU workers: 183 ms with *prior gives way* and *device
    // floor* off (the measured
    // 105-137 ms); either one alone keeps the run near the GPU's.
    let gpu = (5.86e-3, 1.1e-12);
    let (both_off, alone) = gpu_history_new_cpus(
        gpu,
        2,
        Rules {
            prior_gives_way: false,
            device_floor: false,
            give_back: false, // which alone brings it to 1.5x (21.8 ms)
            hand_over: false,
            ..Rules::default()
        },
    );
    assert!(both_off > 5.0 * alone, "{both_off} s");
    for rules in [
        Rules {
            prior_gives_way: false,
            ..Rules::default()
        },
        Rules {
            device_floor: false,
            ..Rules::default()
        },
        Rules::default(),
    ] {
        let (t, _) = gpu_history_new_cpus(gpu, 2, rules);
        eprintln!(
            "all-latency model, 2 new CPU workers: {:.2} ms under {rules:?}",
            t * 1e3
        );
        assert!(t <= 1.2 * alone, "{t} s under {rules:?}");
    }
}

/// The queue's rule *device floor*: with an earlier run's model for the GPU (latency 2.8-4.1
/// ms a chunk, as stored on the H100 machine) and 2 CPU workers of a new count probing, the
/// GPU's chunks, capped by the run so far while the workers are unmeasured, must not fall
/// under its probe: the run then ends with the GPU alone's.
#[test]
fn a_devices_model_never_shrinks_its_chunks_below_a_probe() {
    for gpu in [(2.76e-3, 2.8e-7), (4.07e-3, 8.4e-8)] {
        let (on, alone) = gpu_history_new_cpus(gpu, 2, Rules::default());
        let (off, _) = gpu_history_new_cpus(
            gpu,
            2,
            Rules {
                device_floor: false,
                ..Rules::default()
            },
        );
        eprintln!(
            "GPU model {gpu:?}, 2 new CPU workers: {:.2} ms (device floor off: {:.2} ms), GPU alone ideal {:.2} ms",
            on * 1e3,
            off * 1e3,
            alone * 1e3
        );
        assert!(on <= 1.02 * alone, "{on} s against {alone} s");
        assert!(off > 1.1 * alone, "device floor off passes: {off} s");
    }
}

/// The queue's rule *prior is provisional*. Seen on a 4 x H100 machine with 62 CPU workers: the
/// GPU's stored model came from a run of 16 sources (its queues ran a task or two each: read as
/// 15 ms a chunk and 7.5 ms a task), and its first chunk of the run was slow (warm-up: 51 ms
/// against 21 ms later). The CPU workers, measured after their 8-tree probes while the GPU still had
/// no chunk of its own, planned with that model and took hundreds of trees each: osm-moscow's
/// full APSP took 2.43 s against 1.06 s for the GPU alone (30,192 CPU trees). A CPU worker now
/// keeps the cap of *short while unmeasured* while a device has only an earlier run's model.
#[test]
fn a_cpu_worker_does_not_plan_on_a_devices_model_from_history_alone() {
    let tasks = 411_992;
    let warm_up = 0.03;
    let run = |prior: Option<Estimate>, rules: Rules| {
        let mut units: Vec<SimUnit> = (0..2)
            .map(|_| SimUnit::gpu("H100", 5.7e-3, 3.8e-6, 4096).grouped(1, warm_up))
            .collect();
        for u in &mut units {
            u.info = u.info.clone().with_prior(prior.map(|p| device_model(p, 2)));
        }
        let alone = sim::ideal(&units, tasks) + warm_up;
        units.extend((0..62).map(|_| SimUnit::cpu(2.39e-3).grouped(8, 5e-3)));
        let o = run_under(&units, tasks, rules);
        (o.makespan, alone, o.tasks[2..].iter().sum::<usize>())
    };
    let weak = Some(Estimate {
        latency: 0.015,
        per_task: 0.0075,
    });
    let good = Some(Estimate {
        latency: 5.7e-3,
        per_task: 3.8e-6,
    });
    for prior in [weak, good, None] {
        let (on, alone, cpu) = run(prior, Rules::default());
        eprintln!(
            "GPU model {prior:?}: {on:.3} s, {cpu} CPU tasks; the GPU alone's ideal {alone:.3} s"
        );
        assert!(on <= 1.05 * alone, "{on} s against {alone} s");
    }
    let (off, alone, cpu) = run(
        weak,
        Rules {
            prior_is_provisional: false,
            give_back: false, // which also rescues this run: the rule's effect alone
            ..Rules::default()
        },
    );
    eprintln!("weak model, prior is provisional off: {off:.3} s, {cpu} CPU tasks");
    assert!(
        off > 2.0 * alone,
        "prior is provisional off passes: {off} s"
    );
}

/// `scheduler.shares = "speed"`: equitable shares weighted by the models a work-queue run
/// stored (the speed history) come near the ideal makespan on mixed units, where equal shares
/// leave the GPU idle; a unit with no model makes the shares equal again, naming it.
#[test]
fn speed_shares_from_the_history_come_near_the_ideal() {
    use crate::config::{SchedulerPlan, Shares};
    let speed = SchedulerPlan {
        shares: Shares::Speed,
        ..SchedulerPlan::with_policy(Policy::Equitable)
    };
    let equal = SchedulerPlan::with_policy(Policy::Equitable);
    for (name, mut units, tasks) in scenarios()
        .into_iter()
        .filter(|s| ["1 GPU + 15 CPUs", "2 GPUs + 30 CPUs"].contains(&s.0))
    {
        let n = units.len();
        for u in units.iter_mut().filter(|u| u.info.kind == UnitKind::Cpu) {
            u.want = (tasks / (n * 16)).clamp(1, 64);
        }
        let models = learned(&units, tasks);
        let infos: Vec<UnitInfo> = units
            .iter()
            .zip(&models)
            .map(|(u, m)| u.info.clone().with_prior(*m))
            .collect();
        let ideal = sim::ideal(&units, tasks);
        let makespan = |plan: &SchedulerPlan| {
            let clock = VirtualClock::default();
            let src = super::source(plan, 0..tasks, &infos);
            sim::run(src.as_ref(), &clock, &units, 0..tasks).makespan
        };
        let (by_speed, by_count) = (makespan(&speed), makespan(&equal));
        eprintln!(
            "{name}: speed shares {:.3} of ideal, equal shares {:.3}",
            by_speed / ideal,
            by_count / ideal
        );
        assert!(
            by_speed <= 1.10 * ideal,
            "{name}: {by_speed} against {ideal}"
        );
        assert!(
            by_count > 1.5 * by_speed,
            "{name}: {by_count} against {by_speed}"
        );
    }
    // A unit whose class has no model: equal shares, and the reason names it.
    let mut infos = vec![
        UnitInfo::device("gpu0").with_prior(Some(Estimate {
            latency: 0.0,
            per_task: 0.001,
        })),
        UnitInfo::cpu("cpu"),
    ];
    let e = super::speed_weights(&infos).unwrap_err();
    assert!(e.contains("unit 1 (cpu)"), "{e}");
    // A class-mate's model counts for the unit.
    infos.push(UnitInfo::cpu("cpu").with_prior(Some(Estimate {
        latency: 0.0,
        per_task: 0.004,
    })));
    let w = super::speed_weights(&infos).unwrap();
    assert!((w[0] / w[1] - 4.0).abs() < 1e-9 && w[1] == w[2], "{w:?}");
}

/// Task costs of the scheduling matrix, over `n` tasks: every task alike, the costly first
/// (fractal rows), the costly last, and a heavy tail (one task in 61 costs 40).
fn cost_profiles(n: usize) -> Vec<(&'static str, std::sync::Arc<Vec<f64>>)> {
    let x = |t: usize| t as f64 / n as f64;
    vec![
        ("uniform", vec![1.0; n]),
        (
            "falling",
            (0..n).map(|t| 0.1 + 3.8 * (1.0 - x(t)).powi(2)).collect(),
        ),
        ("rising", (0..n).map(|t| 0.1 + 3.8 * x(t).powi(2)).collect()),
        (
            "heavy tail",
            (0..n)
                .map(|t| if t % 61 == 7 { 40.0 } else { 1.0 })
                .collect(),
        ),
    ]
    .into_iter()
    .map(|(name, w)| (name, std::sync::Arc::new(w)))
    .collect()
}

/// Greedy one-task-at-a-time dispatch with no overhead: each task to the unit that is free
/// first, as fine-grained work stealing (rayon) comes to on identical workers.
fn greedy_makespan(units: &[SimUnit], weights: &[f64]) -> f64 {
    let mut free = vec![0.0f64; units.len()];
    for &w in weights {
        let (i, _) = free
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        free[i] += w * units[i].per_task;
    }
    free.into_iter().fold(0.0, f64::max)
}

/// CPU workers alone on uneven tasks: the work queue within 5% of fine-grained greedy
/// dispatch (the work-stealing bound) on every cost profile.
#[test]
fn cpu_workers_on_uneven_tasks_come_near_work_stealing() {
    let tasks = 8192;
    let mut report = Vec::new();
    for (name, weights) in cost_profiles(tasks) {
        let units: Vec<SimUnit> = (0..16)
            .map(|_| SimUnit::cpu(CPU / 64.0).weighted(&weights))
            .collect();
        let clock = VirtualClock::default();
        let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
        let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), Rules::default());
        let out = sim::run(&q, &clock, &units, 0..tasks);
        let bound = greedy_makespan(&units, &weights);
        report.push((name, out.makespan / bound, out.chunks.iter().sum::<usize>()));
    }
    eprintln!("{report:?}");
    for (name, ratio, _) in &report {
        assert!(
            *ratio <= 1.05,
            "{name}: {ratio:.3} of greedy dispatch: {report:?}"
        );
    }
}

/// The scheduling matrix: cost profiles x CPU:GPU speed ratios (1:1 to 1:100) x 1 or 4 queues
/// per device x 1-2 GPUs, 15 CPU workers, each queue simulated as a unit of its own with its
/// share of the device's speed. Printed with `--nocapture`; the bounds are what the queue
/// holds (BENCHMARKS.md, scheduling matrix), so that a change that loses ground fails: a mixed
/// run within 1% of its fastest unit alone (the worst cell: a heavy tail, 1:100, 4 queues of
/// one GPU, 1.010 since rule *device rate*, 0.989 before it: at the bound), and within 1.5x of
/// the ideal (the worst: a heavy tail on devices no faster than a CPU worker, 1.40). Each cell
/// of several queues runs again with rule *busy queues* on (off by default): there the
/// worst cells are 0.993 of the fastest unit alone (a heavy tail, 1:100, 4 queues of one GPU)
/// and 1.324 of the ideal (costly tasks last, 1:100, 4 queues of each of 2 GPUs); before, the
/// rule misread such devices on a heavy tail and kept 1 queue busy (up to 1.60 of the ideal). Before rule *one device* (each queue probing a whole batch) costly tasks
/// first on such devices ended at 2.98x the ideal, and costly tasks last at 1:100 with 4
/// queues at 1.049x the GPU alone.
#[test]
fn scheduling_matrix() {
    let tasks = 16_384;
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for (profile, weights) in cost_profiles(tasks) {
        let total: f64 = weights.iter().sum();
        let mean = total / tasks as f64;
        for ratio in [1.0, 10.0, 100.0] {
            for queues in [1usize, 4] {
                for (gpus, busy) in [1usize, 2]
                    .into_iter()
                    .flat_map(|g| [(g, false), (g, true)])
                {
                    if busy && queues == 1 {
                        continue; // rule busy queues acts on devices of several queues only
                    }
                    let cpu_task = CPU / 16.0;
                    // A device runs `ratio` CPU workers' speed; its queues share it.
                    let per_task = cpu_task / ratio * queues as f64;
                    let (latency, batch) = (2e-3, 256);
                    let mut units: Vec<SimUnit> = (0..gpus * queues)
                        .map(|g| {
                            SimUnit::gpu(&format!("gpu{}", g / queues), latency, per_task, batch)
                                .weighted(&weights)
                        })
                        .collect();
                    units.extend((0..15).map(|_| SimUnit::cpu(cpu_task).weighted(&weights)));
                    let clock = VirtualClock::default();
                    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
                    let q = WorkQueue::with_clock(
                        0..tasks,
                        &infos,
                        Box::new(clock.clone()),
                        Rules {
                            busy_queues: busy,
                            ..Rules::default()
                        },
                    );
                    let got = sim::run(&q, &clock, &units, 0..tasks).makespan;
                    // The fastest unit alone: one device with all its queues, or one CPU worker.
                    let device_alone = total * cpu_task / ratio
                        + (tasks.div_ceil(batch * queues)) as f64 * latency;
                    let alone = device_alone.min(total * cpu_task);
                    // The ideal of tasks of the mean cost, batch latencies included.
                    let mean_units: Vec<SimUnit> = units
                        .iter()
                        .map(|u| SimUnit {
                            per_task: u.per_task * mean,
                            weights: None,
                            ..u.clone()
                        })
                        .collect();
                    let ideal = sim::ideal(&mean_units, tasks);
                    let rule = if busy { ", busy queues on" } else { "" };
                    let cell = format!("{profile}, 1:{ratio}, {queues} queues, {gpus} GPUs{rule}");
                    rows.push(format!(
                        "{cell}: {:.3} of the fastest unit alone, {:.3} of ideal; busy queues {:?}",
                        got / alone,
                        got / ideal,
                        q.busy_queues().first().copied().flatten()
                    ));
                    if got > alone * 1.01 || got > 1.5 * ideal {
                        bad.push(rows.last().unwrap().clone());
                    }
                }
            }
        }
    }
    eprintln!("{}", rows.join("\n"));
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Escape-time costs of the rows of a Mandelbrot image (x in [-2, 0.5], y in [-1.25, 1.25],
/// `cols` pixels a row, up to `max_iter` iterations), normalized to a mean of 1: the rows
/// through the set cost hundreds of times the edge rows.
fn mandelbrot_rows(rows: usize, cols: usize, max_iter: u32) -> std::sync::Arc<Vec<f64>> {
    let iters = |cx: f64, cy: f64| {
        let (mut x, mut y, mut n) = (0.0f64, 0.0f64, 0u32);
        while n < max_iter && x * x + y * y <= 4.0 {
            (x, y) = (x * x - y * y + cx, 2.0 * x * y + cy);
            n += 1;
        }
        n as f64 + 1.0
    };
    let w: Vec<f64> = (0..rows)
        .map(|r| {
            let cy = -1.25 + 2.5 * r as f64 / rows as f64;
            (0..cols)
                .map(|i| iters(-2.0 + 2.5 * i as f64 / cols as f64, cy))
                .sum()
        })
        .collect();
    let mean = w.iter().sum::<f64>() / rows as f64;
    std::sync::Arc::new(w.into_iter().map(|x| x / mean).collect())
}

/// `units` on `tasks` under the default rules, and with rule *give back* off (and *hand over*,
/// which alone takes a CPU worker's tail for a device once nothing is left to hand out).
fn with_and_without_give_back(units: &[SimUnit], tasks: usize) -> (sim::Outcome, sim::Outcome) {
    let off = Rules {
        give_back: false,
        hand_over: false,
        ..Rules::default()
    };
    (
        run_under(units, tasks, Rules::default()),
        run_under(units, tasks, off),
    )
}

/// Rule *give back*, calibrated on the mandel example on one H200 + 16 cores (8,192 rows of
/// 8,192 pixels, up to 2,000 iterations, the rows in their natural order: the GPU alone 0.35-0.41
/// s, plain rayon on 16 cores 7.3-7.8 s, so a CPU worker runs a row in 14.6 ms on average
/// and the GPU in 46 us). Without it, CPU workers measured on the cheap edge rows planned on
/// a speed they did not have in the middle ones and held costly rows after the GPU had run
/// out: 0.58-3.96 s on the H200 against 0.35-0.41 s for the GPU alone. With it, a CPU worker
/// gives the rest of its chunk back between two rows as soon as a unit starves.
#[test]
fn a_mixed_run_on_uneven_rows_is_not_slower_than_the_gpu_alone() {
    let rows = 8192;
    let weights = mandelbrot_rows(rows, 64, 2000);
    let (gpu_row, cpu_row, latency, batch) = (46e-6, 14.6e-3, 5e-5, 64);
    // The GPU's first chunk as measured, and 30 ms slower (a first launch), which makes the
    // GPU look slow to the plan for most of so short a run.
    for warm_up in [0.0, 0.03] {
        let gpu = SimUnit::gpu("H200", latency, gpu_row, batch)
            .weighted(&weights)
            .grouped(1, warm_up);
        let alone = run_under(std::slice::from_ref(&gpu), rows, Rules::default()).makespan;
        let mut units = vec![gpu];
        units.extend((0..15).map(|_| SimUnit::cpu(cpu_row).weighted(&weights)));
        let ideal = 1.0 / (1.0 / alone + 15.0 / (cpu_row * rows as f64));
        let (on, off) = with_and_without_give_back(&units, rows);
        let no_hand_over = run_under(
            &units,
            rows,
            Rules {
                hand_over: false,
                ..Rules::default()
            },
        );
        eprintln!(
            "warm-up {warm_up} s: GPU alone {:.3} s, ideal sum {:.3} s; GPU + 15 CPU workers {:.3} s \
             ({} CPU rows), hand over off {:.3} s, give back off {:.3} s ({} CPU rows)",
            alone,
            ideal,
            on.makespan,
            on.tasks[1..].iter().sum::<usize>(),
            no_hand_over.makespan,
            off.makespan,
            off.tasks[1..].iter().sum::<usize>()
        );
        // Rule *hand over*: the CPU workers start no row the GPU would finish first. Without
        // it, the row each CPU worker ran when the GPU ran out (a middle row costs up to 3.4
        // mean rows, 50 ms on a core) held the run 8-15% past the GPU alone.
        assert!(
            on.makespan <= 1.03 * alone,
            "{} s against {alone} s",
            on.makespan
        );
        assert!(
            no_hand_over.makespan > 1.05 * alone,
            "hand over off passes: {} s",
            no_hand_over.makespan
        );
        assert!(
            off.makespan > 1.5 * alone,
            "give back off passes: {} s",
            off.makespan
        );
    }
}

/// Rule *give back* among CPU workers: 16 workers on the Mandelbrot rows, each starting from
/// an earlier run's model that reads them 5 times too fast (the history of a run whose chunks
/// were cheap rows). Seen on the H200 machine: chunks of 200-380 rows planned on that model
/// left half the workers idle for the last third of the run (9.6-9.7 s against 7.1 s without
/// the history). Idle workers now take half of a busy worker's rest, as work stealing does.
#[test]
fn cpu_workers_with_a_wrong_prior_steal_each_others_tails() {
    let rows = 8192;
    let weights = mandelbrot_rows(rows, 64, 2000);
    let cpu_row = 14.6e-3;
    let prior = Some(Estimate {
        latency: 0.0,
        per_task: cpu_row / 5.0,
    });
    let units: Vec<SimUnit> = (0..16)
        .map(|_| {
            let mut u = SimUnit::cpu(cpu_row).weighted(&weights);
            u.info = u.info.clone().with_prior(prior);
            u
        })
        .collect();
    let bound = greedy_makespan(&units, &weights);
    let (on, off) = with_and_without_give_back(&units, rows);
    let (on, off) = (on.makespan, off.makespan);
    eprintln!(
        "16 CPU workers, wrong prior: {:.3} of the work-stealing bound ({:.3} with give back off)",
        on / bound,
        off / bound
    );
    assert!(on <= 1.05 * bound, "{on} s against {bound} s");
    assert!(off > 1.1 * bound, "give back off passes: {off} s");
}

/// Rule *small probe*: a device slower than the 15 CPU workers beside it (each task 2 CPU
/// tasks' time), whose batch is the whole workspace (the knn example's fills the device), has
/// no model yet. Its probe is a quarter of the tasks, not all of them.
#[test]
fn a_devices_first_probe_is_a_small_part_of_the_tasks() {
    let tasks = 20_000;
    let mut units = vec![SimUnit::gpu("gpu0", 0.05, 0.02, tasks)];
    units.extend((0..15).map(|_| SimUnit::cpu(0.01)));
    let on = run_under(&units, tasks, Rules::default());
    let off = run_under(
        &units,
        tasks,
        Rules {
            small_probe: false,
            ..Rules::default()
        },
    );
    let quarter = 0.05 + 0.02 * (tasks / 4) as f64;
    eprintln!(
        "slow device, a batch of every task: {:.1} s, GPU tasks {} (small probe off: {:.1} s, {}); ideal {:.1} s",
        on.makespan,
        on.tasks[0],
        off.makespan,
        off.tasks[0],
        sim::ideal(&units, tasks)
    );
    assert!(on.makespan <= 1.01 * quarter, "{} s", on.makespan);
    assert!(off.makespan > 3.0 * on.makespan, "small probe off passes");
}

/// The knn example on the H200 machine with 4 queues (50,000 queries; one queue 2.32 s, 46 us a
/// query): the NVIDIA driver ran the queues' kernels one after another, each about twice as
/// long (`SimUnit::serial`).
fn knn_queues(queues: usize, slower: f64, batch: usize, cpus: usize, cpu: f64) -> Vec<SimUnit> {
    let mut u: Vec<SimUnit> = (0..queues)
        .map(|_| SimUnit::gpu("H200", 2e-3, 46e-6, batch).serial(0, slower))
        .collect();
    u.extend((0..cpus).map(|_| SimUnit::cpu(cpu)));
    u
}

/// Rule *device rate* on the knn example's 4 queues of one H200 (`knn_queues`): the queues'
/// chunks make one model, the device's, which every queue reports for the speed history, and
/// its per-task time is the device's (a kernel's while others wait: 92 us) within 10%; with
/// the rule off each queue's own chunks (its kernels behind the others') give it a model of
/// its own, hundreds of times apart in per-task time. Started from a first run's models, the
/// work queue ends with equitable shares (which hand each queue its quarter at once, the best
/// 4 queues of such a device can do), 2% later from the queues' own. No policy that keeps the
/// 4 queues busy comes near one queue alone (2.31 s): the device is 2x slower with them (rule
/// *busy queues*, off here, keeps one busy).
#[test]
fn a_devices_queues_are_learned_as_one_device() {
    let tasks = 50_000;
    let units = knn_queues(4, 2.0, 16_384, 0, 0.0);
    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
    let equitable = {
        let clock = VirtualClock::default();
        let src = equitable(tasks, &infos, clock.clone());
        sim::run(src.as_ref(), &clock, &units, 0..tasks).makespan
    };
    let one = run_under(&knn_queues(1, 2.0, 16_384, 0, 0.0), tasks, Rules::default()).makespan;
    // A first run, its models, and a second run from them.
    let runs = |rules: Rules| {
        let clock = VirtualClock::default();
        let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), rules);
        let first = sim::run(&q, &clock, &units, 0..tasks).makespan;
        let models = q.measured();
        let with: Vec<UnitInfo> = infos
            .iter()
            .zip(&models)
            .map(|(i, p)| i.clone().with_prior(*p))
            .collect();
        let clock = VirtualClock::default();
        let q = WorkQueue::with_clock(0..tasks, &with, Box::new(clock.clone()), rules);
        let second = sim::run(&q, &clock, &units, 0..tasks).makespan;
        (first, second, models)
    };
    // With every queue busy (rule *busy queues* off; with it, the device keeps one busy:
    // `a_device_whose_queues_add_no_throughput_keeps_one_busy`).
    let (first, second, models) = runs(busy_off());
    let (first_off, second_off, models_off) = runs(Rules {
        device_rate: false,
        ..busy_off()
    });
    eprintln!(
        "4 serial queues: first run {first:.3} s, from its models {second:.3} s (device rate off: \
         {first_off:.3} s, {second_off:.3} s); equitable {equitable:.3} s, one queue {one:.3} s\n\
         models {models:?}\noff: {models_off:?}"
    );
    let per_task = |m: &[Option<Estimate>]| -> Vec<f64> {
        m.iter()
            .map(|e| e.expect("every queue ran").per_task)
            .collect()
    };
    assert!(models.iter().all(|m| *m == models[0]), "{models:?}");
    let device = per_task(&models)[0];
    assert!((device / 92e-6 - 1.0).abs() < 0.1, "{device} s a task");
    let off = per_task(&models_off);
    let (lo, hi) = off
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(
        hi > 2.0 * lo,
        "device rate off: the queues' models agree {off:?}"
    );
    assert!(
        second <= 1.001 * equitable,
        "{second} s against {equitable} s"
    );
    assert!(
        second_off > 1.01 * equitable,
        "device rate off passes: {second_off} s"
    );
    assert!((first - first_off).abs() < 0.01 * first_off);
}

/// A device of `queues` queues whose queues run side by side, each with its part of the
/// device (kernels too small to fill it): the device runs a task in `per_task` seconds with
/// all its queues busy, a queue alone at a `queues`-th of that rate.
fn scaling_queues(queues: usize, latency: f64, per_task: f64, batch: usize) -> Vec<SimUnit> {
    (0..queues)
        .map(|_| SimUnit::gpu("H200", latency, per_task * queues as f64, batch))
        .collect()
}

/// A run of `units` under `rules`, and the count of busy queues it decided per unit (what the
/// speed history keeps).
fn run_busy(units: &[SimUnit], tasks: usize, rules: Rules) -> (sim::Outcome, Vec<Option<usize>>) {
    let clock = VirtualClock::default();
    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
    let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), rules);
    let out = sim::run(&q, &clock, units, 0..tasks);
    (out, q.busy_queues())
}

fn busy_on() -> Rules {
    Rules {
        busy_queues: true,
        ..Rules::default()
    }
}

fn busy_off() -> Rules {
    Rules {
        busy_queues: false,
        ..busy_on()
    }
}

/// Rule *busy queues* on the knn example's 4 queues of one H200 (`knn_queues`: the driver ran
/// their kernels one after another, each about twice as long while another was in flight;
/// measured there: one queue 2.32 s, 4 queues 4.94 s with equitable shares, 7.3-13.7 s for a
/// first work-queue run). Without a history, the work queue tries one queue, then 4, then 2,
/// and keeps one: within 5% of one queue alone. With the rule off, its 4 busy queues take far
/// longer. Again beside 15 CPU workers (knn on a CPU core: 100 times a GPU query).
#[test]
fn a_device_whose_queues_add_no_throughput_keeps_one_busy() {
    let tasks = 50_000;
    for cpus in [0, 15] {
        let units = knn_queues(4, 2.0, 16_384, cpus, 4.6e-3);
        let one = run_under(&knn_queues(1, 2.0, 16_384, cpus, 4.6e-3), tasks, busy_on()).makespan;
        let (on, busy) = run_busy(&units, tasks, busy_on());
        let (off, _) = run_busy(&units, tasks, busy_off());
        eprintln!(
            "4 serial queues + {cpus} CPU workers: {:.3} s, tasks {:?} (busy queues off: {:.3} s, \
             {:?}); one queue {one:.3} s; busy {:?}",
            on.makespan,
            &on.tasks[..4],
            off.makespan,
            &off.tasks[..4],
            &busy[..4]
        );
        assert!(
            on.makespan <= 1.05 * one,
            "{} s against {one} s",
            on.makespan
        );
        assert!(
            off.makespan > 1.3 * one,
            "busy queues off passes: {} s",
            off.makespan
        );
        assert_eq!(&busy[..4], &[Some(1); 4]);
        let others: usize = on.tasks[1..4].iter().sum();
        assert!(others * 20 < tasks, "the other queues ran {others} tasks");
    }
}

/// Rule *busy queues* leaves devices whose queues add throughput as they were: 4 queues that
/// each have a quarter of the device (the scheduling matrix's device, and the knn device's
/// speed) keep all 4 busy, within 5% of the rule off, alone and beside 15 CPU workers.
#[test]
fn a_device_whose_queues_add_throughput_keeps_them_all_busy() {
    let cases = [
        (
            "matrix's device",
            scaling_queues(4, 2e-3, CPU / 16.0 / 100.0, 256),
            16_384,
        ),
        (
            "knn's speed",
            scaling_queues(4, 2e-3, 46e-6 / 4.0, 16_384),
            50_000,
        ),
    ];
    for (name, device, tasks) in cases {
        for cpus in [0, 15] {
            let mut units = device.clone();
            units.extend((0..cpus).map(|_| SimUnit::cpu(CPU / 16.0)));
            let (on, busy) = run_busy(&units, tasks, busy_on());
            let (off, _) = run_busy(&units, tasks, busy_off());
            eprintln!(
                "4 scaling queues ({name}) + {cpus} CPU workers: {:.4} s, tasks {:?} (busy \
                 queues off: {:.4} s, {:?}); busy {:?}",
                on.makespan,
                &on.tasks[..4],
                off.makespan,
                &off.tasks[..4],
                &busy[..4]
            );
            assert!(
                on.makespan <= 1.05 * off.makespan,
                "{name}, {cpus} CPU workers: {} s against {} s",
                on.makespan,
                off.makespan
            );
            assert_eq!(&busy[..4], &[Some(4); 4], "{name}, {cpus} CPU workers");
            assert!(on.tasks[..4].iter().all(|&t| t > 0), "{:?}", on.tasks);
        }
    }
}

/// Rule *busy queues* with the speed history: a run from an earlier run's models and counts
/// starts at the count it learned (the serial device's other queues take nothing from the
/// start, the scaling device's all take work) and keeps it for the history again.
#[test]
fn with_history_the_next_run_starts_at_the_learned_count() {
    let tasks = 50_000;
    let serial = knn_queues(4, 2.0, 16_384, 0, 0.0);
    let scaling = scaling_queues(4, 2e-3, 46e-6 / 4.0, 16_384);
    let one = run_under(&knn_queues(1, 2.0, 16_384, 0, 0.0), tasks, busy_on()).makespan;
    for (name, units, expect) in [("serial", serial, 1), ("scaling", scaling, 4)] {
        let clock = VirtualClock::default();
        let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
        let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), busy_on());
        let first = sim::run(&q, &clock, &units, 0..tasks);
        let (models, busy) = (q.measured(), q.busy_queues());
        assert_eq!(busy, vec![Some(expect); 4], "{name}");
        let mut again = units.clone();
        for ((u, m), b) in again.iter_mut().zip(&models).zip(&busy) {
            u.info = u.info.clone().with_prior(*m).with_busy(*b);
        }
        let (second, busy2) = run_busy(&again, tasks, busy_on());
        eprintln!(
            "{name}: first run {:.3} s {:?}, from the history {:.3} s {:?}",
            first.makespan, first.tasks, second.makespan, second.tasks
        );
        assert_eq!(busy2, busy, "{name}");
        assert!(second.tasks[..expect].iter().all(|&t| t > 0), "{name}");
        assert!(second.tasks[expect..].iter().all(|&t| t == 0), "{name}");
        assert!(
            second.makespan <= 1.01 * first.makespan,
            "{name}: {} s against {} s",
            second.makespan,
            first.makespan
        );
        if expect == 1 {
            assert!(second.makespan <= 1.02 * one, "{} s", second.makespan);
        }
    }
}

/// Rule *busy queues*, a first run (no history) on the knn example's 4 serial queues
/// (`knn_queues`), each queue's first chunk 0.1 s longer (its warm-up, which the driver runs
/// one after another with the others' kernels, as it does them): the device decides on one
/// queue within the first 2% of the tasks and ends within 10% of one queue alone (its warm-up
/// included). Warming every queue before the rounds (one small chunk each), the warm-ups of
/// the 4 queues ran in turn, each twice as long: 1.25x one queue; with the rule off, 2.2x.
#[test]
fn a_serial_devices_first_run_settles_early_on_one_queue() {
    let tasks = 50_000;
    let device = |queues: usize| -> Vec<SimUnit> {
        knn_queues(queues, 2.0, 50_000, 0, 0.0)
            .into_iter()
            .map(|u| u.grouped(1, 0.1))
            .collect()
    };
    let one = run_under(&device(1), tasks, busy_on()).makespan;
    let units = device(4);
    let clock = VirtualClock::default();
    let infos: Vec<UnitInfo> = units.iter().map(|u| u.info.clone()).collect();
    let q = WorkQueue::with_clock(0..tasks, &infos, Box::new(clock.clone()), busy_on());
    let on = sim::run(&q, &clock, &units, 0..tasks);
    let (busy, settled) = (q.busy_queues(), q.busy_settled_left());
    let (off, _) = run_busy(&units, tasks, busy_off());
    let decided_after = settled[0].map(|left| tasks - left);
    eprintln!(
        "4 serial queues with warm-ups, first run: {:.3} s ({:.3} of one queue), tasks {:?}, \
         chunks {:?}, busy {:?}, decided after {decided_after:?} tasks; busy queues off: \
         {:.3} s ({:.3}); one queue {one:.3} s",
        on.makespan,
        on.makespan / one,
        on.tasks,
        on.chunks,
        busy[0],
        off.makespan,
        off.makespan / one
    );
    assert_eq!(busy, vec![Some(1); 4]);
    assert!(
        decided_after.is_some_and(|n| n * 50 <= tasks),
        "decided after {decided_after:?} tasks"
    );
    assert!(
        on.makespan <= 1.15 * one,
        "{} s against one queue's {one} s",
        on.makespan
    );
    assert!(
        off.makespan > 1.5 * one,
        "busy queues off: {} s",
        off.makespan
    );
}
