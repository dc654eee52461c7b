//! What `check` reports of the output directory before anything is touched: its state, the bytes the run will write.

use super::*;

/// What a run would do to its output directory: checked by `run` before it touches anything,
/// shown by `check`.
#[derive(Debug, Clone)]
pub struct OutputStatus {
    /// Bytes the outputs still need on disk (exact for bulk files; what an unfinished run
    /// already wrote is subtracted).
    pub need: u64,
    /// Bytes free to this user on the output directory's filesystem.
    pub free: u64,
    /// An unfinished run in the directory: tasks journaled, tasks in all.
    pub unfinished: Option<(usize, usize)>,
}

/// Validate `output.dir` and measure what the outputs need against the free space, touching
/// nothing.
pub fn output_status(plan: &Plan, job: &dyn Job) -> Result<OutputStatus> {
    let dir = &plan.output.dir;
    outdir::validate(dir)?;
    let partial = dir.join(outdir::PARTIAL);
    let unfinished = partial.is_dir().then(|| journaled(&partial));
    Ok(OutputStatus {
        need: output_bytes(plan, job).saturating_sub(outdir::allocated_bytes(&partial)),
        free: outdir::available_space(dir)?,
        unfinished,
    })
}

/// Bytes a run's outputs take on disk: the bulk files (exact), the journal, summary and trace
/// (per task), and 1 MiB for the report and the rest.
pub fn output_bytes(plan: &Plan, job: &dyn Job) -> u64 {
    let bulk: u64 =
        job.details().bulk.iter().map(|r| r.bytes()).sum::<u64>() + job.details().finish_bytes;
    output_bytes_of(plan, job.tasks(), job.record_words(), bulk)
}

/// [`output_bytes`] of `tasks` tasks of `words`-word records and `bulk` bytes of bulk files.
pub fn output_bytes_of(plan: &Plan, tasks: usize, words: usize, bulk: u64) -> u64 {
    let per_task = 8 * words as u64 + 64 + if plan.output.trace { 160 } else { 0 };
    bulk + tasks as u64 * per_task + (1 << 20)
}
