//! Progress while the run goes: a bar on a terminal, a line every `output.progress_seconds` otherwise.

use super::*;

/// Progress for a batch log (stderr not a terminal, as under Slurm or `2> log`), where the
/// bar does not draw: one line every `every` until the run is `over`. Tasks done, their rate
/// over the run so far and the estimated end.
pub(super) fn log_progress(
    progress: &indicatif::ProgressBar,
    done0: u64,
    tasks: usize,
    every: Duration,
    over: crossbeam_channel::Receiver<()>,
) {
    let t0 = Instant::now();
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = over.recv_timeout(every) {
        say(&progress_line(
            progress.position(),
            done0,
            tasks as u64,
            t0.elapsed().as_secs_f64(),
        ));
    }
}

/// `NAME: progress: 1200/5000 tasks (24.0%), 812.3 tasks/s, about 4.7 s left` (the rate
/// counts the tasks done since this run began, `done0` having been done before it).
pub(super) fn progress_line(done: u64, done0: u64, tasks: u64, seconds: f64) -> String {
    let rate = done.saturating_sub(done0) as f64 / seconds.max(1e-9);
    let left = tasks.saturating_sub(done);
    let eta = if rate > 0.0 {
        let s = left as f64 / rate;
        if s < 120.0 {
            format!("about {s:.1} s left")
        } else if s < 7200.0 {
            format!("about {:.1} min left", s / 60.0)
        } else {
            format!("about {:.1} h left", s / 3600.0)
        }
    } else {
        "no estimate yet".into()
    };
    format!(
        "{}: progress: {done}/{tasks} tasks ({:.1}%), {rate:.1} tasks/s, {eta}\n",
        crate::program_name(),
        100.0 * done as f64 / (tasks.max(1)) as f64
    )
}

pub(super) fn progress_bar(hidden: bool, len: u64) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    // indicatif draws only when stderr is a terminal.
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} tasks  {per_sec}  ETA {eta}")
            .expect("valid template"),
    );
    pb
}
