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
use std::path::{Path, PathBuf};
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
        let bulk: Vec<PathBuf> = job
            .bulk_outputs()
            .iter()
            .map(|r| partial.join(r.name()))
            .collect();
        let sync = Duration::from_secs_f64(plan.output.sync_seconds);
        let path = partial.join(outdir::JOURNAL);
        // A job that keeps its result in memory (one task over the whole matrix) cannot skip
        // done tasks: it redoes everything.
        let resume_at = if resume && path.exists() && job.multi_node() {
            let r = journal::replay(&path, tasks, words, |t, rec| {
                records.data[t.start * words..t.end * words].copy_from_slice(rec);
                done.insert(t);
            })?;
            if r.torn {
                tracing::info!(
                    "{}: dropped a torn last entry (a write cut short); its tasks run again",
                    path.display()
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
        let missing = bulk.iter().find(|p| !p.exists());
        if let (Some(m), true) = (missing, done.count() > 0) {
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
        Ok(_) => true,
        Err(_) => false,
    };
    match (mode, unfinished) {
        (Unfinished::Resume, false) => Err(nothing_to_resume(dir)),
        (Unfinished::Refuse, true) => Err(refuse_unfinished(dir, &partial)),
        (Unfinished::Resume, true) => {
            let old: Option<serde_json::Value> =
                crate::owned::read(&partial.join(outdir::IDENTITY), "", outdir::SMALL_FILE_CAP)
                    .ok()
                    .flatten()
                    .and_then(|t| serde_json::from_slice(&t).ok());
            // The task space and the job's declared inputs are known only after `prepare`:
            // `Stage::open` compares them. The unfinished run's input files are looked at now,
            // before any preprocessing.
            if let Some(old) = old {
                let inputs = crate::input::paths(&old["inputs"]);
                let now = crate::input::fingerprints(&inputs)
                    .map_err(|e| Error::Output(format!("cannot resume: {e}; an input file of the unfinished run cannot be read now: restore it, or start over with --restart")))?;
                same_run(
                    &old,
                    &identity_of(plan, &old["tasks"], &old["record_words"], now)?,
                )?;
            }
            Ok(journaled(&partial).0)
        }
        _ => Ok(0),
    }
}

/// What a run computes: the result-defining config, a fingerprint of each file the job
/// declares it reads ([`Job::inputs`], [`crate::input`]), the task space. A journal is only
/// resumed by a run with the same identity.
fn identity(plan: &Plan, job: &dyn Job) -> Result<serde_json::Value> {
    identity_of(
        plan,
        &serde_json::json!(job.tasks()),
        &serde_json::json!(job.record_words()),
        crate::input::fingerprints(&job.inputs())?,
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
    let get = |v: &[(String, String)], k: &str| {
        v.iter()
            .find(|(x, _)| x == k)
            .map_or("(not set)".to_string(), |(_, v)| v.clone())
    };
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| get(&a, k) != get(&b, k))
        .map(|k| format!("{k} was {}, is {}", get(&a, k), get(&b, k)))
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

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
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
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// (tasks journaled, tasks) of the unfinished run in `partial`; (0, 0) when unreadable.
pub(super) fn journaled(partial: &Path) -> (usize, usize) {
    let id: Option<serde_json::Value> =
        crate::owned::read(&partial.join(outdir::IDENTITY), "ignored", outdir::SMALL_FILE_CAP)
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
