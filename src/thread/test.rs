//! The thread layer alone: a CPU-only job whose tasks write their square, on several units under
//! both policies; a unit that fails or panics ends the run with an error naming it.

use super::*;
use crate::config::{OnFailure, Policy};
use crate::plugin::{Details, Records, Worker};
use crate::scheduler;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Tasks write `t * t`; task `fail` returns an error, task `panic` panics.
struct Squares {
    tasks: usize,
    fail: Option<usize>,
    panic: Option<usize>,
    runs: AtomicUsize,
    /// The first worker made sleeps this long while it is made (a slow per-worker state).
    slow_make: Duration,
    /// Workers begun, and made, so far.
    begun: AtomicUsize,
    made: AtomicUsize,
    /// The fewest workers made when some chunk ran.
    made_at_run: AtomicUsize,
    /// Workers dropped so far.
    dropped: AtomicUsize,
}

impl Squares {
    fn new(tasks: usize) -> Self {
        Squares {
            tasks,
            fail: None,
            panic: None,
            runs: AtomicUsize::new(0),
            slow_make: Duration::ZERO,
            begun: AtomicUsize::new(0),
            made: AtomicUsize::new(0),
            made_at_run: AtomicUsize::new(usize::MAX),
            dropped: AtomicUsize::new(0),
        }
    }
}

impl Job for Squares {
    fn tasks(&self) -> usize {
        self.tasks
    }
    fn record_words(&self) -> usize {
        1
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn finish(&self, _: &Records, _out: &crate::plugin::Out) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Null)
    }
    fn cpu_worker(&self) -> Result<Box<dyn Worker + '_>> {
        if self.begun.fetch_add(1, Ordering::Relaxed) == 0 {
            std::thread::sleep(self.slow_make);
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(SquareWorker(self)))
    }
}

struct SquareWorker<'a>(&'a Squares);

impl Drop for SquareWorker<'_> {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

impl Worker for SquareWorker<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let made = self.0.made.load(Ordering::Relaxed);
        self.0.made_at_run.fetch_min(made, Ordering::Relaxed);
        for t in range {
            self.0.runs.fetch_add(1, Ordering::Relaxed);
            if self.0.fail == Some(t) {
                return Err(Error::Input(format!("task {t} refused")));
            }
            if self.0.panic == Some(t) {
                panic!("task {t} exploded");
            }
            out.put(t, &[(t * t) as u64]);
        }
        Ok(())
    }
}

fn cpu_units(k: usize, chunk: usize) -> Vec<Unit<'static>> {
    (0..k)
        .map(|i| Unit {
            name: format!("cpu{i}"),
            spec: UnitSpec::Cpu,
            chunk,
        })
        .collect()
}

fn run(
    job: &Squares,
    units: &[Unit<'_>],
    policy: Policy,
) -> Result<(Records, Vec<UnitStats>, Vec<Slice>)> {
    let records = Mutex::new(Records {
        words: 1,
        data: vec![u64::MAX; job.tasks],
    });
    let infos = vec![scheduler::UnitInfo::cpu("cpu"); units.len()];
    let source = scheduler::source(
        &crate::config::SchedulerPlan::with_policy(policy),
        0..job.tasks,
        &infos,
    );
    // These tests are about a failure ending the run (units.on_failure = "abort"); the retry
    // path is tested in tests/scheduling.rs.
    let ran = run_units(
        job,
        units,
        source.as_ref(),
        &records,
        &indicatif::ProgressBar::hidden(),
        OnFailure::Abort,
        &DoneSet::new(job.tasks),
        &|_, _, _| Ok(()),
    )?;
    Ok((records.into_inner(), ran.stats, ran.slices))
}

#[test]
fn done_tasks_are_skipped_and_finished_chunks_reported_with_their_records() {
    let job = Squares::new(300);
    let mut done = DoneSet::new(300);
    done.insert(10..150);
    done.insert(200..201);
    let records = Mutex::new(Records {
        words: 1,
        data: vec![u64::MAX; 300],
    });
    let reported = Mutex::new(vec![0u8; 300]);
    let source = scheduler::source(
        &crate::config::SchedulerPlan::with_policy(Policy::WorkQueue),
        0..300,
        &[
            scheduler::UnitInfo::cpu("cpu"),
            scheduler::UnitInfo::cpu("cpu"),
        ],
    );
    let stats = run_units(
        &job,
        &cpu_units(2, 16),
        source.as_ref(),
        &records,
        &indicatif::ProgressBar::hidden(),
        OnFailure::Abort,
        &done,
        &|_, r, rec| {
            assert_eq!(rec.len(), r.len());
            let mut seen = reported.lock();
            for (t, &w) in r.zip(rec) {
                assert_eq!(w, (t * t) as u64);
                seen[t] += 1;
            }
            Ok(())
        },
    )
    .unwrap()
    .stats;
    let records = records.into_inner();
    let seen = reported.into_inner();
    for (t, &reports) in seen.iter().enumerate() {
        let was_done = done.contains(t);
        // Done tasks never ran (their records stay as the journal left them) nor were reported.
        assert_eq!(reports, u8::from(!was_done), "task {t}");
        let want = if was_done { u64::MAX } else { (t * t) as u64 };
        assert_eq!(records.read::<[u64; 1]>(t), [want], "task {t}");
    }
    assert_eq!(job.runs.load(Ordering::Relaxed), 300 - 141);
    assert_eq!(stats.iter().map(|s| s.tasks).sum::<usize>(), 300 - 141);
}

#[test]
fn a_failing_finished_callback_stops_the_run_with_its_error() {
    let job = Squares::new(100);
    let records = Mutex::new(Records {
        words: 1,
        data: vec![0; 100],
    });
    let source = scheduler::source(
        &crate::config::SchedulerPlan::with_policy(Policy::WorkQueue),
        0..100,
        &[scheduler::UnitInfo::cpu("cpu")],
    );
    let err = run_units(
        &job,
        &cpu_units(1, 5),
        source.as_ref(),
        &records,
        &indicatif::ProgressBar::hidden(),
        OnFailure::Abort,
        &DoneSet::new(100),
        &|_, r, _| {
            if r.contains(&20) {
                Err(Error::Output("journal: disk full".into()))
            } else {
                Ok(())
            }
        },
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "journal: disk full");
    assert!(job.runs.load(Ordering::Relaxed) < 100);
}

#[test]
fn every_task_runs_once_and_its_record_lands() {
    for policy in [Policy::Equitable, Policy::WorkQueue] {
        let job = Squares::new(1000);
        let units = cpu_units(3, 7);
        let (records, stats, slices) = run(&job, &units, policy).unwrap();
        for t in 0..1000 {
            assert_eq!(
                records.read::<[u64; 1]>(t),
                [(t * t) as u64],
                "{policy:?} task {t}"
            );
        }
        assert_eq!(
            job.runs.load(Ordering::Relaxed),
            1000,
            "{policy:?}: a task ran twice"
        );
        // The events: every chunk reported once, covering the task space exactly.
        let mut seen = vec![0u8; 1000];
        for s in &slices {
            assert!(s.tasks.len() <= 7 && s.unit < 3, "{s:?}");
            for t in s.tasks.clone() {
                seen[t] += 1;
            }
        }
        assert!(
            seen.iter().all(|&c| c == 1),
            "{policy:?}: chunks overlap or miss tasks"
        );
        assert_eq!(stats.iter().map(|s| s.tasks).sum::<usize>(), 1000);
        assert_eq!(stats.iter().map(|s| s.chunks).sum::<usize>(), slices.len());
        assert!(stats.iter().all(|s| s.kind == "cpu" && s.device.is_none()));
        // Each unit's end is its last slice's end, and its chunks (one after another) fit
        // before it.
        for (i, st) in stats.iter().enumerate() {
            let last = slices
                .iter()
                .filter(|s| s.unit == i)
                .map(|s| (s.start_us + s.dur_us) / 1e6)
                .fold(0.0, f64::max);
            assert_eq!(st.ended_seconds, last, "{policy:?} unit {i}");
            assert!(st.busy_seconds <= st.ended_seconds + 1e-9, "{st:?}");
        }
    }
}

#[test]
fn a_failing_unit_fails_the_run_naming_unit_and_tasks() {
    let mut job = Squares::new(400);
    job.fail = Some(137);
    let units = cpu_units(2, 10);
    let err = run(&job, &units, Policy::WorkQueue).unwrap_err();
    let Error::Unit { unit, msg } = &err else {
        panic!("expected a unit error, got {err}");
    };
    assert!(unit.starts_with("cpu"), "{err}");
    // "tasks A..B: task 137 refused", with A <= 137 < B.
    let range = msg
        .strip_prefix("tasks ")
        .and_then(|m| m.split_once(':'))
        .map(|r| r.0);
    let (a, b) = range
        .and_then(|r| r.split_once(".."))
        .expect("a task range");
    let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
    assert!(
        a <= 137 && 137 < b && msg.contains("task 137 refused"),
        "{err}"
    );
    // The failure stops the source: the other unit ends after its current chunk.
    assert!(
        job.runs.load(Ordering::Relaxed) < 400,
        "the run went on after the failure"
    );
}

#[test]
fn a_panicking_worker_is_an_error_not_a_crash() {
    let mut job = Squares::new(50);
    job.panic = Some(3);
    let err = run(&job, &cpu_units(2, 4), Policy::Equitable).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("panicked")
            && text.contains("task 3 exploded")
            && text.contains("tasks 0..4"),
        "{text}"
    );
}

#[test]
fn a_job_without_a_cpu_half_gets_a_clear_error() {
    struct NoCpu;
    impl Job for NoCpu {
        fn tasks(&self) -> usize {
            1
        }
        fn record_words(&self) -> usize {
            0
        }
        fn describe(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
        fn finish(&self, _: &Records, _out: &crate::plugin::Out) -> Result<serde_json::Value> {
            Ok(serde_json::Value::Null)
        }
        fn details(&self) -> Details<'_> {
            Details {
                cpu_half: false,
                ..Details::default()
            }
        }
    }
    let records = Mutex::new(Records {
        words: 0,
        data: vec![],
    });
    let source = scheduler::source(
        &crate::config::SchedulerPlan::with_policy(Policy::WorkQueue),
        0..1,
        &[scheduler::UnitInfo::cpu("cpu")],
    );
    let err = run_units(
        &NoCpu,
        &cpu_units(1, 1),
        source.as_ref(),
        &records,
        &indicatif::ProgressBar::hidden(),
        OnFailure::Abort,
        &DoneSet::new(1),
        &|_, _, _| Ok(()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no CPU half"), "{err}");
}

#[test]
fn every_worker_is_made_before_the_first_chunk_and_released_by_the_caller() {
    // One worker takes 300 ms to make; 2,000 trivial tasks take far less. Were the units to
    // pull as soon as their own worker is made, the other two would run every task before the
    // slow one exists (the run's clock would count its set-up, and a short run would end with
    // its late first chunk).
    let mut job = Squares::new(2000);
    job.slow_make = Duration::from_millis(300);
    let units = cpu_units(3, 4);
    let records = Mutex::new(Records {
        words: 1,
        data: vec![u64::MAX; job.tasks],
    });
    let infos = vec![scheduler::UnitInfo::cpu("cpu"); units.len()];
    let source = scheduler::source(
        &crate::config::SchedulerPlan::with_policy(Policy::WorkQueue),
        0..job.tasks,
        &infos,
    );
    let before = Instant::now();
    let ran = run_units(
        &job,
        &units,
        source.as_ref(),
        &records,
        &indicatif::ProgressBar::hidden(),
        OnFailure::Abort,
        &DoneSet::new(job.tasks),
        &|_, _, _| Ok(()),
    )
    .unwrap();
    assert_eq!(
        job.made_at_run.load(Ordering::Relaxed),
        3,
        "a chunk ran before every worker was made"
    );
    // The run's start is after the slow worker was made; the slices count from it.
    assert!(ran.started - before >= Duration::from_millis(300));
    assert_eq!(ran.stats.iter().map(|s| s.tasks).sum::<usize>(), 2000);
    // The workers come back undropped, for the caller to release after its clock stops.
    assert_eq!(job.dropped.load(Ordering::Relaxed), 0);
    assert_eq!(ran.workers.len(), 3);
    release(ran.workers);
    assert_eq!(job.dropped.load(Ordering::Relaxed), 3);
}

#[test]
fn the_start_wakes_device_queues_first_and_every_unit_at_one_time() {
    // Three CPU workers arrive at the gate before two device queues (a device's set-up is the
    // longest); the devices are woken first, and every unit gets the same start time.
    let start = Start::default();
    let source = scheduler::source(
        &crate::config::SchedulerPlan::with_policy(Policy::WorkQueue),
        0..10,
        &[],
    );
    let kinds = [false, false, true, false, true];
    let got = std::thread::scope(|s| {
        let threads: Vec<_> = kinds
            .iter()
            .enumerate()
            .map(|(i, &device)| {
                let start = &start;
                let t = s.spawn(move || start.ready(device));
                // Arrivals in this order.
                while start.state.lock().units <= i {
                    std::thread::yield_now();
                }
                t
            })
            .collect();
        let order = start.go(kinds.len(), source.as_ref());
        let t0: Vec<Instant> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (order, t0)
    });
    assert_eq!(got.0, [true, true, false, false, false]);
    assert!(got.1.iter().all(|&t| t == start.started()));
}

/// A source whose units, told to leave, take `linger` to do so (as units left waiting on a
/// virtual machine's idle cores took to wake up).
struct SlowLeave {
    inner: Box<dyn scheduler::TaskSource>,
    linger: Duration,
}

impl scheduler::TaskSource for SlowLeave {
    fn next(&self, unit: usize, want: usize) -> Option<scheduler::Chunk<'_>> {
        self.inner.next(unit, want)
    }
    fn stop(&self) {
        self.inner.stop()
    }
    fn start(&self) {
        self.inner.start()
    }
    fn now(&self) -> f64 {
        self.inner.now()
    }
    fn failed(&self, unit: usize, tasks: Range<usize>) {
        self.inner.failed(unit, tasks)
    }
    fn wait_for_work(&self, unit: usize) -> bool {
        let again = self.inner.wait_for_work(unit);
        if !again {
            std::thread::sleep(self.linger);
        }
        again
    }
}

#[test]
fn the_run_ends_with_its_last_records_not_when_waiting_units_leave() {
    let job = Squares::new(200);
    let units = cpu_units(3, 8);
    let records = Mutex::new(Records {
        words: 1,
        data: vec![u64::MAX; job.tasks],
    });
    let infos = vec![scheduler::UnitInfo::cpu("cpu"); units.len()];
    let source = SlowLeave {
        inner: scheduler::source(
            &crate::config::SchedulerPlan::with_policy(Policy::WorkQueue),
            0..job.tasks,
            &infos,
        ),
        linger: Duration::from_millis(400),
    };
    let ran = run_units(
        &job,
        &units,
        &source,
        &records,
        &indicatif::ProgressBar::hidden(),
        OnFailure::Abort,
        &DoneSet::new(job.tasks),
        &|_, _, _| Ok(()),
    )
    .unwrap();
    let returned = Instant::now();
    assert_eq!(ran.stats.iter().map(|s| s.tasks).sum::<usize>(), 200);
    let last = ran.last_result.expect("chunks ran");
    // The units lingered 400 ms after the last records; the run's end is before that.
    assert!(returned - last >= Duration::from_millis(400));
    let end_us = ran
        .slices
        .iter()
        .map(|s| s.start_us + s.dur_us)
        .fold(0.0, f64::max);
    assert!(((last - ran.started).as_secs_f64() * 1e6 - end_us).abs() < 1.0);
}

/// A source that hands out 0..100 and, while it says it starves, takes back the rest of that
/// first chunk after the worker's second task, then hands that tail out as the next chunk.
struct Reclaiming {
    starving: bool,
    handed: Mutex<Vec<Range<usize>>>,
    taken: Mutex<Option<Range<usize>>>,
    asked: Mutex<Vec<(Range<usize>, Range<usize>)>>,
    clock: AtomicUsize,
}

impl scheduler::TaskSource for Reclaiming {
    fn next(&self, unit: usize, _want: usize) -> Option<scheduler::Chunk<'_>> {
        let mut handed = self.handed.lock();
        let r = match (handed.len(), self.taken.lock().take()) {
            (0, _) => 0..100,
            (_, Some(tail)) => tail,
            _ => return None,
        };
        handed.push(r.clone());
        Some(scheduler::Chunk::new(self, unit, r))
    }
    fn stop(&self) {}
    fn failed(&self, _: usize, _: Range<usize>) {}
    fn now(&self) -> f64 {
        // A clock a task long per look: every ask is past the chunk's last by more than
        // `RECLAIM_EVERY`.
        self.clock.fetch_add(1, Ordering::Relaxed) as f64 * 0.01
    }
    fn starving(&self) -> bool {
        self.starving
    }
    fn reclaim(&self, _: usize, done: Range<usize>, _: f64, rest: Range<usize>) -> Range<usize> {
        self.asked.lock().push((done.clone(), rest.clone()));
        if done.len() == 2 && self.handed.lock().len() == 1 {
            *self.taken.lock() = Some(rest.clone());
            rest
        } else {
            rest.end..rest.end
        }
    }
}

/// Rule *give back* in the thread layer: a CPU worker runs its chunk a task (group) at a time
/// and asks the source between two; a tail taken back is not run in that chunk, the chunk is
/// reported as what ran, and the tail runs once, later. A source that does not starve is never
/// asked, and the chunk is one report.
#[test]
fn a_cpu_worker_gives_back_the_rest_of_its_chunk_between_two_tasks() {
    for starving in [true, false] {
        let job = Squares::new(100);
        let source = Reclaiming {
            starving,
            handed: Mutex::new(Vec::new()),
            taken: Mutex::new(None),
            asked: Mutex::new(Vec::new()),
            clock: AtomicUsize::new(0),
        };
        let records = Mutex::new(Records {
            words: 1,
            data: vec![u64::MAX; 100],
        });
        let reported = Mutex::new(Vec::new());
        run_units(
            &job,
            &cpu_units(1, 100),
            &source,
            &records,
            &indicatif::ProgressBar::hidden(),
            OnFailure::Abort,
            &DoneSet::new(100),
            &|_, r, _| {
                reported.lock().push(r);
                Ok(())
            },
        )
        .unwrap();
        let records = records.into_inner();
        for t in 0..100 {
            assert_eq!(records.read::<[u64; 1]>(t), [(t * t) as u64], "task {t}");
        }
        assert_eq!(job.runs.load(Ordering::Relaxed), 100, "every task once");
        let reported = reported.into_inner();
        if starving {
            assert_eq!(reported, vec![0..2, 2..100]);
            assert_eq!(source.asked.lock()[..2], [(0..1, 1..100), (0..2, 2..100)]);
        } else {
            assert_eq!(reported, vec![0..100]);
            assert!(source.asked.lock().is_empty());
        }
    }
}
