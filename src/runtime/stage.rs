//! Rank 0's side of a run's output directory: lock it, start the run's staging folder and
//! journal, or reopen them to resume after checking that the unfinished run computes the same
//! thing (its identity: the result-defining config, the input's content hash, the task space).

use super::Unfinished;
use crate::config::Plan;
use crate::node::host_name;
use crate::plugin::{Job, Records};
use crate::sink::journal::{self, Journal};
use crate::sink::outdir::{self, OutputDir};
use crate::thread::DoneSet;
use crate::{Error, Result};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Rank 0's side of a run's output: the locked directory, the journal, and what an
/// interrupted run already did (records replayed from its journal, the tasks they cover).
pub(super) struct Stage {
    pub(super) out: OutputDir,
    pub(super) journal: Arc<Journal>,
    pub(super) records: Records,
    pub(super) done: DoneSet,
    /// Whether the bulk files must be created (a fresh run) rather than reopened.
    pub(super) create_bulk: bool,
}

impl Stage {
    /// Lock the output directory and start the run's staging folder and journal, or reopen
    /// them to resume.
    pub(super) fn open(plan: &Plan, job: &dyn Job, mode: Unfinished) -> Result<Stage> {
        let dir = &plan.output.dir;
        let out = OutputDir::lock(
            dir,
            &format!("pid {} on {}", std::process::id(), host_name()),
        )?;
        if let Some(h) = out.stale_holder() {
            tracing::warn!(
                "{}: the run that held it before ({h}) ended without releasing it; its lock is stale and taken over",
                dir.display()
            );
        }
        let partial = out.partial();
        // A file or a link at the partial folder's name: not an unfinished run; `--restart`
        // removes it (a link itself, never what it leads to), anything else names it.
        if let Some(what) = out.stray_partial() {
            if mode == Unfinished::Discard {
                out.remove_stray_partial()?;
                tracing::warn!(
                    "{}: removed {what} that stood where tuccompi keeps its unfinished run (--restart)",
                    partial.display()
                );
            } else {
                return Err(Error::Output(format!(
                    "{} is {what}, not tuccompi's folder of an unfinished run: remove it, or \
                     run with --restart, which removes it (a link itself, not what it leads to)",
                    partial.display()
                )));
            }
        }
        // A commit marker that proves nothing: neither finished nor resumed on its word.
        if let Some(why) = out.bad_commit() {
            if mode == Unfinished::Discard {
                out.discard_bad_commit()?;
                tracing::warn!("{why}; discarded with the unfinished run (--restart)");
            } else {
                return Err(Error::Output(why));
            }
        }
        let identity = identity(plan, job)?;
        let resume = match (mode, out.has_unfinished()) {
            (Unfinished::Resume, false) => return Err(nothing_to_resume(dir)),
            (Unfinished::Refuse, true) => return Err(refuse_unfinished(dir, &partial)),
            (Unfinished::Resume, true) => {
                same_run(&out.identity()?, &identity)?;
                true
            }
            _ => false,
        };
        let (tasks, words) = (job.tasks(), job.record_words());
        let mut records = Records {
            words,
            data: crate::filled(tasks * words, 0, "the per-task records")?,
        };
        let mut done = DoneSet::new(tasks);
        let bulk = bulk_files(job, &partial)?;
        let sync = Duration::from_secs_f64(plan.output.sync_seconds);
        let path = partial.join(outdir::JOURNAL);
        let missing = bulk
            .iter()
            .find(|b| !b.path.exists())
            .map(|b| b.path.clone());
        // A job that keeps its result in memory (one task over the whole matrix) cannot skip
        // done tasks: it redoes everything.
        let resume_at = if resume && path.exists() && job.details().multi_node {
            let mut keep = |t: std::ops::Range<usize>, rec: &[u64]| {
                records.data[t.start * words..t.end * words].copy_from_slice(rec);
                done.insert(t);
            };
            // Every journaled chunk's rows are read back and checked against the journal: one
            // read of the rows written so far.
            let r = match &missing {
                None => journal::replay_checked(&path, tasks, words, &bulk, &mut keep)?,
                Some(_) => journal::replay(&path, tasks, words, &mut keep)?,
            };
            if r.torn {
                tracing::info!(
                    "{}: dropped a torn last entry (a write cut short); its tasks run again",
                    path.display()
                );
            }
            if r.changed > 0 {
                tracing::warn!(
                    "{}: the rows of {} journaled tasks no longer match their checksum (changed \
                     on disk since they were written); those tasks run again",
                    partial.display(),
                    r.changed
                );
            }
            Some(r.valid_len)
        } else if resume && path.exists() {
            Some(0)
        } else {
            if !resume {
                out.begin(&identity)?;
            }
            None
        };
        if let (Some(m), true) = (&missing, done.count() > 0) {
            return Err(Error::Output(format!(
                "{}: the journal lists {} done tasks but {} is missing; start over with --restart",
                path.display(),
                done.count(),
                m.display()
            )));
        }
        let create_bulk = !resume || missing.is_some();
        let journal = Journal::open(&path, words, sync, bulk, resume_at)?;
        if resume {
            tracing::info!(
                "resuming: {} of {tasks} tasks are done in {}",
                done.count(),
                partial.display()
            );
        }
        Ok(Stage {
            out,
            journal: Arc::new(journal),
            records,
            done,
            create_bulk,
        })
    }
}

fn nothing_to_resume(dir: &Path) -> Error {
    Error::Output(format!(
        "nothing to resume: {} holds no unfinished run; run without --resume",
        dir.display()
    ))
}

fn refuse_unfinished(dir: &Path, partial: &Path) -> Error {
    let (done, total) = journaled(partial);
    Error::Output(format!(
        "{} holds an unfinished run ({done} of {total} tasks done, in {}): continue it with \
         --resume, or discard it and start over with --restart",
        dir.display(),
        partial.display()
    ))
}

/// Before any preprocessing (rank 0): `output.dir` is a valid place, and an unfinished run in
/// it agrees with `mode`: none to `--resume` or one a plain run would bury is refused now,
/// and one to resume must have this run's config and input. Returns the tasks the unfinished
/// run has done (0 unless resuming). [`Stage::open`] checks again under the lock.
pub(super) fn precheck(plan: &Plan, mode: Unfinished) -> Result<usize> {
    let dir = &plan.output.dir;
    outdir::validate(dir)?;
    let partial = dir.join(outdir::PARTIAL);
    // A run holding the directory now: `Stage::open` names it (its unfinished run is its own).
    let held = crate::owned::reopen(&dir.join(outdir::LOCK), false, "")
        .is_ok_and(|f| f.try_lock_shared().is_err());
    let unfinished = match std::fs::symlink_metadata(&partial) {
        _ if held => return Ok(0),
        // A file or a link there: `Stage::open` names it (or `--restart` removes it).
        Ok(m) if !m.is_dir() => return Ok(0),
        // A finished run stopped during its commit: not unfinished; the lock finishes it
        // (and a `--resume` ends there: [`finish_commit`]). A marker that proves nothing is
        // refused, unless `--restart` discards it with the unfinished run.
        Ok(_) => match outdir::commit_pending(dir) {
            // `--resume` finishes it only for the run that made it (same config and input).
            Some(Ok(())) if mode == Unfinished::Resume => {
                same_as_unfinished(plan, &partial)?;
                return Ok(0);
            }
            Some(Ok(())) => return Ok(0),
            Some(Err(why)) if mode != Unfinished::Discard => return Err(Error::Output(why)),
            _ => true,
        },
        Err(_) => false,
    };
    match (mode, unfinished) {
        (Unfinished::Resume, false) => Err(nothing_to_resume(dir)),
        (Unfinished::Refuse, true) => Err(refuse_unfinished(dir, &partial)),
        (Unfinished::Resume, true) => {
            same_as_unfinished(plan, &partial)?;
            Ok(journaled(&partial).0)
        }
        _ => Ok(0),
    }
}

/// Refuse to resume the unfinished run in `partial` when it computes something else than
/// `plan` (its config, its input files as they are now). The task space and the job's
/// declared inputs are known only after `prepare`: `Stage::open` compares them. The
/// unfinished run's input files are looked at now, before any preprocessing.
fn same_as_unfinished(plan: &Plan, partial: &Path) -> Result<()> {
    let old: Option<serde_json::Value> =
        crate::owned::read(&partial.join(outdir::IDENTITY), "", outdir::SMALL_FILE_CAP)
            .ok()
            .flatten()
            .and_then(|t| serde_json::from_slice(&t).ok());
    if let Some(old) = old {
        let inputs = crate::input::paths(&old["inputs"]);
        let now = crate::input::fingerprints(&inputs)
            .map_err(|e| Error::Output(format!("cannot resume: {e}; an input file of the unfinished run cannot be read now: restore it, or start over with --restart")))?;
        same_run(
            &old,
            &identity_of(plan, &old["tasks"], &old["record_words"], now)?,
        )?;
    }
    Ok(())
}

/// `--resume` of a run that had finished and was stopped while moving its files into place
/// (rank 0): take the lock, which finishes that commit, and return the finished run's report
/// (`report.json`; null when it wrote none). Nothing is left to resume.
pub(super) fn finish_commit(plan: &Plan) -> Result<serde_json::Value> {
    let dir = &plan.output.dir;
    let out = OutputDir::lock(
        dir,
        &format!("pid {} on {}", std::process::id(), host_name()),
    )?;
    if let Some(why) = out.bad_commit() {
        return Err(Error::Output(why));
    }
    if out.has_unfinished() {
        // A run came between the check and the lock: it is not the stopped commit.
        return Err(refuse_unfinished(dir, &out.partial()));
    }
    tracing::info!(
        "{}: the interrupted run had finished; its files are now in place, nothing is left to resume",
        dir.display()
    );
    Ok(
        crate::owned::read(&dir.join("report.json"), "", outdir::SMALL_FILE_CAP)
            .ok()
            .flatten()
            .and_then(|t| serde_json::from_slice(&t).ok())
            .unwrap_or_default(),
    )
}

/// What a run computes: the result-defining config, a fingerprint of each file the job
/// declares it reads ([`Job::inputs`], [`crate::input`]), the task space. A journal is only
/// resumed by a run with the same identity.
fn identity(plan: &Plan, job: &dyn Job) -> Result<serde_json::Value> {
    identity_of(
        plan,
        &serde_json::json!(job.tasks()),
        &serde_json::json!(job.record_words()),
        crate::input::fingerprints(&job.details().inputs)?,
    )
}

fn identity_of(
    plan: &Plan,
    tasks: &serde_json::Value,
    record_words: &serde_json::Value,
    inputs: serde_json::Value,
) -> Result<serde_json::Value> {
    Ok(serde_json::json!({
        "tuccompi": env!("CARGO_PKG_VERSION"),
        "plugin": plan.plugin,
        "config": serde_json::to_value(plan.result_config()).unwrap_or_default(),
        "inputs": inputs,
        "tasks": tasks,
        "record_words": record_words,
    }))
}

/// Refuse to resume a journal written for another run, naming what differs.
fn same_run(old: &serde_json::Value, new: &serde_json::Value) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::Output(format!(
            "cannot resume: {what}; resume with the interrupted run's config and input, or \
             start over with --restart"
        )))
    };
    if old["tuccompi"] != new["tuccompi"] {
        return refuse(format!(
            "the unfinished run was made by tuccompi {}, this is {}",
            old["tuccompi"], new["tuccompi"]
        ));
    }
    let mut a = Vec::new();
    let mut b = Vec::new();
    flatten("", &old["config"], &mut a);
    flatten("", &new["config"], &mut b);
    let keys: std::collections::BTreeSet<&String> = a.iter().chain(&b).map(|(k, _)| k).collect();
    let get = |v: &[(String, serde_json::Value)], k: &str| {
        v.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone())
    };
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| get(&a, k) != get(&b, k))
        .map(|k| difference(k, get(&a, k).as_ref(), get(&b, k).as_ref()))
        .collect();
    if !diffs.is_empty() || old["plugin"] != new["plugin"] {
        return refuse(format!(
            "the config differs from the unfinished run's ({})",
            if diffs.is_empty() {
                format!("run.plugin was {}, is {}", old["plugin"], new["plugin"])
            } else {
                diffs.join("; ")
            }
        ));
    }
    if let Some(why) = crate::input::differences(&old["inputs"], &new["inputs"]) {
        return refuse(why);
    }
    if old["tasks"] != new["tasks"] || old["record_words"] != new["record_words"] {
        return refuse(format!(
            "the unfinished run had {} tasks, this one has {}",
            old["tasks"], new["tasks"]
        ));
    }
    Ok(())
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

/// A value for a message: JSON, cut to about 60 characters.
fn short(v: Option<&serde_json::Value>) -> String {
    let Some(v) = v else {
        return "(not set)".into();
    };
    let t = v.to_string();
    match t.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &t[..at]),
        None => t,
    }
}

/// What differs in `key` between the unfinished run (`old`) and this one, in one line however
/// long the values: for two lists (`run.tasks`), their lengths and the first positions
/// where they differ, never both whole lists.
fn difference(
    key: &str,
    old: Option<&serde_json::Value>,
    new: Option<&serde_json::Value>,
) -> String {
    let (Some(serde_json::Value::Array(x)), Some(serde_json::Value::Array(y))) = (old, new) else {
        return format!("{key} was {}, is {}", short(old), short(new));
    };
    const SHOWN: usize = 3;
    let at: Vec<usize> = (0..x.len().max(y.len()))
        .filter(|&i| x.get(i) != y.get(i))
        .collect();
    let mut parts: Vec<String> = at
        .iter()
        .take(SHOWN)
        .map(|&i| format!("[{i}] was {}, is {}", short(x.get(i)), short(y.get(i))))
        .collect();
    if at.len() > SHOWN {
        parts.push(format!("{} more positions differ", at.len() - SHOWN));
    }
    format!(
        "{key} had {} entries, has {}; {}",
        x.len(),
        y.len(),
        parts.join(", ")
    )
}

/// The job's bulk outputs in the staging folder `partial`, each with one row per task (what
/// the journal checksums per chunk).
fn bulk_files(job: &dyn Job, partial: &Path) -> Result<Vec<journal::BulkFile>> {
    let tasks = job.tasks().max(1);
    job.details()
        .bulk
        .into_iter()
        .map(|r| {
            // Task t owns rows t·k .. (t+1)·k: one row per task, or every row for a one-task
            // job.
            if r.rows() % tasks != 0 {
                return Err(Error::Output(format!(
                    "{}: {} rows for {} tasks; a bulk output holds the same number of rows for \
                     every task (a bug in the plugin)",
                    r.name(),
                    r.rows(),
                    job.tasks()
                )));
            }
            let mut b = journal::BulkFile::of(r, partial);
            b.row_bytes *= (r.rows() / tasks) as u64;
            Ok(b)
        })
        .collect()
}

/// (tasks journaled, tasks) of the unfinished run in `partial`; (0, 0) when unreadable.
pub(super) fn journaled(partial: &Path) -> (usize, usize) {
    let id: Option<serde_json::Value> = crate::owned::read(
        &partial.join(outdir::IDENTITY),
        "ignored",
        outdir::SMALL_FILE_CAP,
    )
    .ok()
    .flatten()
    .and_then(|t| serde_json::from_slice(&t).ok());
    let Some(id) = id else { return (0, 0) };
    let tasks = id["tasks"].as_u64().unwrap_or(0) as usize;
    let words = id["record_words"].as_u64().unwrap_or(0) as usize;
    let mut done = DoneSet::new(tasks);
    let _ = journal::replay(&partial.join(outdir::JOURNAL), tasks, words, |r, _| {
        done.insert(r)
    });
    (done.count(), tasks)
}

#[cfg(test)]
mod test {
    use super::*;

    fn config(sources: Vec<u64>) -> serde_json::Value {
        serde_json::json!({
            "tuccompi": "1", "plugin": "apsp", "input_hash": null, "tasks": sources.len(),
            "record_words": 4, "config": {"run": {"sources": sources}, "output": {"distances": false}},
        })
    }

    #[test]
    fn a_changed_list_is_summed_up_in_one_screen() {
        let old: Vec<u64> = (1..=3000).collect();
        let mut new = old.clone();
        new[17] = 99_999;
        new.push(4000);
        let e = same_run(&config(old.clone()), &config(new))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 600, "{} bytes: {e}", e.len());
        assert!(
            e.contains("run.sources had 3000 entries, has 3001")
                && e.contains("[17] was 18, is 99999")
                && e.contains("[3000] was (not set), is 4000"),
            "{e}"
        );
        let mut many = old.clone();
        many.iter_mut().for_each(|v| *v += 1);
        let e = same_run(&config(old.clone()), &config(many))
            .unwrap_err()
            .to_string();
        assert!(
            e.len() < 600 && e.contains("2997 more positions differ"),
            "{e}"
        );
        same_run(&config(old.clone()), &config(old)).unwrap();
    }
}
