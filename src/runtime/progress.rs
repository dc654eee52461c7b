//! Progress while the run goes: a bar on a terminal, a line every `output.progress_seconds` otherwise.
//!
//! Both show the time left from one [`Estimator`], which says nothing until it can be trusted.
//! Early in a run the rate is no guide: the first chunks are the work queue's probes, small or
//! slow (a warm-up, a worker's set-up), and extrapolating them said "about 20.9 h left" of a
//! run that took 34 s. So:
//!
//! - No estimate until [`MIN_DONE`] of the run's tasks are done and [`MIN_SECONDS`] have
//!   passed.
//! - What is left is divided by the *recent* rate: the tasks finished over the last
//!   [`RECENT`] of the time since the first ones finished (the warm-up before them counts for
//!   nothing), over at least [`MIN_WINDOW`] and at most [`MAX_WINDOW`]. Tasks finish in bursts
//!   (a chunk's at once), so the window begins where tasks were done (as a chunk ended, not
//!   partway through the next), and reaches back at least to the last such moment with more
//!   done since: it holds a finished chunk.
//! - No task finished in the window: no estimate. And never more than [`SLACK`] times what
//!   the rate since the first finished tasks gives.

use super::*;
use std::collections::VecDeque;

/// No estimate before this part of the run's tasks is done.
const MIN_DONE: f64 = 0.05;
/// No estimate in the run's first seconds.
const MIN_SECONDS: f64 = 5.0;
/// The recent rate is measured over this part of the time since the first tasks finished...
const RECENT: f64 = 0.1;
/// ... over at least these seconds (a shorter window catches a burst or nothing) ...
const MIN_WINDOW: f64 = 2.0;
/// ... and at most these.
const MAX_WINDOW: f64 = 300.0;
/// The estimate is at most this many times what the rate since the first finished tasks gives.
const SLACK: f64 = 2.0;
/// How often the progress lines' estimator samples the tasks done (a line may come less often).
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// The estimator keeps samples at least this many seconds apart.
const MIN_GAP: f64 = 0.1;

/// The time left of a run, from samples of the tasks done (see the module text).
#[derive(Debug, Clone)]
pub(super) struct Estimator {
    /// Tasks done before this run began (resumed), which its rate does not count.
    done0: u64,
    /// The run's tasks, those done before it included.
    tasks: u64,
    /// `(seconds since the run began, tasks done)`, oldest first: those of the last
    /// [`MAX_WINDOW`], and the one before them.
    samples: VecDeque<(f64, u64)>,
    /// The first sample with a task of this run done.
    first: Option<(f64, u64)>,
}

impl Estimator {
    /// An estimator for a run of `tasks` tasks, `done0` of them done before it began.
    pub(super) fn new(done0: u64, tasks: u64) -> Self {
        Estimator {
            done0,
            tasks,
            samples: VecDeque::new(),
            first: None,
        }
    }

    /// `done` tasks are done `secs` seconds after the run began.
    pub(super) fn observe(&mut self, secs: f64, done: u64) {
        let done = done.max(self.done0);
        if self.first.is_none() && done > self.done0 {
            self.first = Some((secs, done));
        }
        // Samples closer than `MIN_GAP` merge into the later one (the bar ticks up to a
        // thousand times a second).
        let n = self.samples.len();
        if n >= 2 && secs - self.samples[n - 2].0 < MIN_GAP {
            self.samples[n - 1] = (secs, done);
        } else {
            self.samples.push_back((secs, done));
        }
        // Keep one sample at or before the widest window's start.
        while self.samples.len() > 2 && self.samples[1].0 <= secs - MAX_WINDOW {
            self.samples.pop_front();
        }
    }

    /// The last sample: `(seconds, tasks done)`.
    fn now(&self) -> (f64, u64) {
        self.samples.back().copied().unwrap_or((0.0, self.done0))
    }

    /// Tasks per second since the run began.
    fn average(&self) -> f64 {
        let (t, done) = self.now();
        (done - self.done0) as f64 / t.max(1e-9)
    }

    /// Tasks per second over the recent window (see the module text), and the window's
    /// length; `None` before the first tasks finished, or when none finished since.
    fn recent(&self) -> Option<(f64, f64)> {
        let (t1, _) = self.first?;
        let (t, done) = self.now();
        let window = (RECENT * (t - t1)).clamp(MIN_WINDOW, MAX_WINDOW);
        let start = (t - window).max(t1);
        // The window begins where tasks were done (as a chunk ended, not partway through the
        // next one): at the last such sample at or before `start`, or earlier, at the last one
        // with more done after it, so that it holds a finished chunk.
        let rose = |i: usize| {
            let (ti, di) = self.samples[i];
            ti >= t1 && (i == 0 || di > self.samples[i - 1].1)
        };
        let n = self.samples.len();
        let by_time = (0..n)
            .rev()
            .find(|&i| self.samples[i].0 <= start && rose(i));
        let by_rise = (0..n.saturating_sub(1)).rev().find(|&i| {
            let di = self.samples[i].1;
            rose(i) && self.samples.range(i + 1..).any(|s| s.1 > di)
        });
        let (t0, done0) = match (by_time, by_rise) {
            (Some(a), Some(b)) => self.samples[a.min(b)],
            (Some(i), None) | (None, Some(i)) => self.samples[i],
            (None, None) => self.first?,
        };
        let span = t - t0;
        (span > 0.0).then(|| (done.saturating_sub(done0) as f64 / span, span))
    }

    /// Tasks per second to show: the recent rate once tasks were done in the window, else the
    /// average since the run began.
    pub(super) fn rate(&self) -> f64 {
        match self.recent() {
            Some((rate, _)) if rate > 0.0 => rate,
            _ => self.average(),
        }
    }

    /// Seconds left, or `None` while no estimate can be trusted (see the module text).
    pub(super) fn seconds_left(&self) -> Option<f64> {
        let (t, done) = self.now();
        let (t1, done1) = self.first?;
        let ran = (done - self.done0) as f64;
        let run = self.tasks.saturating_sub(self.done0) as f64;
        if t < MIN_SECONDS || ran < MIN_DONE * run {
            return None;
        }
        let (rate, span) = self.recent()?;
        if span < MIN_WINDOW || rate <= 0.0 {
            return None;
        }
        let left = self.tasks.saturating_sub(done) as f64;
        let since_first = done.saturating_sub(done1) as f64 / (t - t1).max(1e-9);
        let most = if since_first > 0.0 {
            SLACK * left / since_first
        } else {
            f64::INFINITY
        };
        Some((left / rate).min(most))
    }

    /// `about 4.7 s left`, `about 12.5 min left`, `about 2.1 h left`, or `no estimate yet`.
    pub(super) fn left_text(&self) -> String {
        match self.seconds_left() {
            Some(s) if s < 120.0 => format!("about {s:.1} s left"),
            Some(s) if s < 7200.0 => format!("about {:.1} min left", s / 60.0),
            Some(s) => format!("about {:.1} h left", s / 3600.0),
            None => "no estimate yet".into(),
        }
    }
}

/// Progress for a batch log (stderr not a terminal, as under Slurm or `2> log`), where the
/// bar does not draw: one line every `every` until the run is `over`, the tasks done sampled
/// every second meanwhile for the estimate.
pub(super) fn log_progress(
    progress: &indicatif::ProgressBar,
    done0: u64,
    tasks: usize,
    every: Duration,
    over: crossbeam_channel::Receiver<()>,
) {
    let t0 = Instant::now();
    let mut estimate = Estimator::new(done0, tasks as u64);
    let mut next_line = every;
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
        over.recv_timeout(every.min(SAMPLE_EVERY))
    {
        let now = t0.elapsed();
        estimate.observe(now.as_secs_f64(), progress.position());
        if now >= next_line {
            say(&progress_line(&estimate));
            while next_line <= now {
                next_line += every;
            }
        }
    }
}

/// `NAME: progress: 1200/5000 tasks (24.0%), 812.3 tasks/s, about 4.7 s left` at the
/// estimator's last sample (the rate is the recent one, the tasks done before this run began
/// not counted).
pub(super) fn progress_line(estimate: &Estimator) -> String {
    let (_, done) = estimate.now();
    format!(
        "{}: progress: {done}/{} tasks ({:.1}%), {:.1} tasks/s, {}\n",
        crate::program_name(),
        estimate.tasks,
        100.0 * done as f64 / (estimate.tasks.max(1)) as f64,
        estimate.rate(),
        estimate.left_text()
    )
}

/// The bar's `{estimate}`: the rate and the time left from an [`Estimator`] fed at every
/// update of the bar.
#[derive(Debug, Clone)]
struct BarEstimate {
    start: Instant,
    estimate: Estimator,
}

impl indicatif::style::ProgressTracker for BarEstimate {
    fn clone_box(&self) -> Box<dyn indicatif::style::ProgressTracker> {
        Box::new(self.clone())
    }
    fn tick(&mut self, state: &indicatif::ProgressState, now: Instant) {
        let secs = now.saturating_duration_since(self.start).as_secs_f64();
        self.estimate.observe(secs, state.pos());
    }
    fn reset(&mut self, _: &indicatif::ProgressState, _: Instant) {}
    fn write(&self, _: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
        let _ = write!(
            w,
            "{:.1} tasks/s, {}",
            self.estimate.rate(),
            self.estimate.left_text()
        );
    }
}

/// The progress bar of a run of `len` tasks, `done0` of them done before it began (hidden:
/// one that draws nothing).
pub(super) fn progress_bar(hidden: bool, len: u64, done0: u64) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let estimate = BarEstimate {
        start: Instant::now(),
        estimate: Estimator::new(done0, len),
    };
    // indicatif draws only when stderr is a terminal.
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} tasks  {estimate}")
            .expect("valid template")
            .with_key("estimate", estimate),
    );
    pb
}

#[cfg(test)]
mod test {
    use super::*;

    /// The estimator fed a sample every `tick` seconds of a run of `tasks` tasks whose tasks
    /// done at time `t` are `done(t)`; the estimates at each `every` seconds, with the truth
    /// (the seconds until `done` reaches `tasks`).
    fn run(
        tasks: u64,
        tick: f64,
        every: f64,
        done: impl Fn(f64) -> u64,
    ) -> Vec<(f64, Option<f64>, f64)> {
        let end = (0..)
            .map(|i| i as f64 * 0.01)
            .find(|&t| done(t) >= tasks)
            .unwrap();
        let mut e = Estimator::new(0, tasks);
        let mut out = Vec::new();
        let mut t = tick;
        while t < end {
            e.observe(t, done(t).min(tasks));
            if (t / every).fract() < 1e-6 || (t / every).fract() > 1.0 - 1e-6 {
                out.push((t, e.seconds_left(), end - t));
            }
            t = ((t + tick) * 1e6).round() / 1e6;
        }
        out
    }

    #[test]
    fn a_slow_first_chunk_then_fast_ones_never_reads_as_hours() {
        // 34,000 tasks: the first chunk (one task, a warm-up) ends at 10 s, then 1,400 tasks/s
        // until the end at about 34 s. Extrapolating the first 10 s said about 94 h.
        let done = |t: f64| {
            if t < 10.0 {
                0
            } else {
                1 + ((t - 10.0) * 1400.0) as u64
            }
        };
        let lines = run(34_000, 1.0, 10.0, done);
        assert!(!lines.is_empty());
        for &(t, left, truth) in &lines {
            if let Some(s) = left {
                assert!(
                    (s - truth).abs() <= 0.25 * truth + 1.0,
                    "at {t} s: {s:.1} s left, truly {truth:.1} s ({lines:?})"
                );
            }
        }
        // By 20 s (a third of the tasks done) the lines show an estimate.
        assert!(
            lines.iter().any(|l| l.0 == 20.0 && l.1.is_some()),
            "{lines:?}"
        );
        // The old extrapolation at the first line: hours.
        let old = 34_000.0 / (done(10.0) as f64 / 10.0);
        assert!(old > 3600.0, "{old}");
    }

    #[test]
    fn small_probes_that_grow_into_large_chunks_are_not_extrapolated() {
        // A work queue's start: chunks as long as the run so far while it probes (1, 2, 4, 8
        // ... tasks ending at 1, 2, 4, 8 ... s), then the full rate of 5,000 tasks/s.
        let tasks = 200_000;
        let done = |t: f64| {
            if t < 16.0 {
                (t.log2().floor().exp2()) as u64
            } else {
                16 + ((t - 16.0) * 5000.0) as u64
            }
        };
        for &(t, left, truth) in &run(tasks, 1.0, 1.0, done) {
            // Never an estimate from the probes, never more than twice the truth.
            if t < 16.0 {
                assert_eq!(left, None, "at {t} s");
            }
            if let Some(s) = left {
                assert!(
                    s <= 2.0 * truth + 1.0,
                    "at {t} s: {s:.1} s, truly {truth:.1} s"
                );
            }
        }
    }

    #[test]
    fn bursts_of_large_chunks_give_no_absurd_estimate() {
        // Tasks done in jumps, as chunks end: 100,000 tasks at 2,500 tasks/s, in batches of
        // 5,000 (a jump every 2 s), or as a work queue hands them out (a quarter of what is
        // left per chunk, at least 1,000: the first ends at 10 s, then 7.5 s ...); or at 750
        // tasks/s from two workers in turn.
        let tasks = 100_000u64;
        let batches = |t: f64| (t / 2.0).floor() as u64 * 5000;
        let queue = |t: f64| {
            let (mut left, mut end) = (tasks as f64, 0.0);
            loop {
                let k = (left * 0.25).max(1000.0).min(left);
                end += k / 2500.0;
                if end > t || left == 0.0 {
                    return tasks - left as u64;
                }
                left -= k;
            }
        };
        // Two CPU workers' chunks of 1,500 tasks each, ending in turn every 2 s.
        let workers = |t: f64| 1500 * ((t / 4.0).floor() + ((t + 2.0) / 4.0).floor()) as u64;
        for done in [&batches as &dyn Fn(f64) -> u64, &queue, &workers] {
            let lines = run(tasks, 0.5, 1.0, done);
            for &(t, left, truth) in &lines {
                if let Some(s) = left {
                    assert!(
                        s <= 3.0 * truth + 2.0 && s >= truth / 3.0 - 2.0,
                        "at {t} s: {s:.1} s, truly {truth:.1} s"
                    );
                }
            }
            assert!(lines.iter().filter(|l| l.1.is_some()).count() > lines.len() / 2);
        }
    }

    #[test]
    fn steady_runs_get_an_estimate_early_and_resumed_tasks_do_not_count() {
        // 10,000 tasks at 1,000 tasks/s; a resumed run with 5,000 of 15,000 done before it.
        for done0 in [0, 5000] {
            let mut e = Estimator::new(done0, 10_000 + done0);
            for i in 1..=6 {
                e.observe(i as f64, done0 + 1000 * i);
            }
            let s = e.seconds_left().expect("an estimate at 6 s");
            assert!((s - 4.0).abs() < 0.1, "{s}");
            assert!((e.rate() - 1000.0).abs() < 1.0, "{}", e.rate());
            assert_eq!(e.left_text(), "about 4.0 s left");
        }
        // The bar's samples, up to a thousand a second, are kept a tenth of a second apart.
        let mut e = Estimator::new(0, 100_000);
        for ms in 1..=20_000u64 {
            e.observe(ms as f64 / 1000.0, 4 * ms);
        }
        assert!(e.samples.len() <= 205, "{}", e.samples.len());
        let s = e.seconds_left().unwrap();
        assert!(
            (s - 5.0).abs() < 0.01 && (e.rate() - 4000.0).abs() < 1.0,
            "{s}"
        );
        // Before the minimum time, or with too few tasks done: none.
        let mut e = Estimator::new(0, 10_000);
        e.observe(4.0, 4000);
        assert_eq!(e.seconds_left(), None);
        let mut e = Estimator::new(0, 1_000_000);
        e.observe(1.0, 1);
        e.observe(10.0, 40_000);
        assert_eq!(e.seconds_left(), None);
        assert_eq!(e.left_text(), "no estimate yet");
    }

    #[test]
    fn the_progress_line_shows_the_recent_rate_and_the_estimate() {
        let mut e = Estimator::new(0, 34_000);
        e.observe(10.0, 1);
        assert!(
            progress_line(&e)
                .ends_with(": progress: 1/34000 tasks (0.0%), 0.1 tasks/s, no estimate yet\n"),
            "{}",
            progress_line(&e)
        );
        e.observe(15.0, 7001);
        e.observe(20.0, 14_001);
        let line = progress_line(&e);
        assert!(
            line.ends_with(
                ": progress: 14001/34000 tasks (41.2%), 1400.0 tasks/s, about 14.3 s left\n"
            ),
            "{line}"
        );
    }
}
