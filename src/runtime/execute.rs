//! Phase 3b, execute: the output directory locked, the staging folder and journal opened, the units run under the scheduling policy through the thread layer, the verify sample re-run.

use super::*;
use std::path::PathBuf;

/// Run a plan on this node (and, under MPI, with the other nodes), its plugin found among
/// `opts.plugins`: the four phases. GPU halves' tuners read the tuning cache.
pub fn run(plan: &Plan, opts: &RunOptions<'_>, node: &dyn Node) -> Result<Outcome> {
    run_with_cache(plan, opts, CacheUse::Read, node)
}

/// [`run`], with the tuners reading the tuning cache or not (`tune` ignores it, so the
/// prediction it compares against is the rules' own).
pub fn run_with_cache(
    plan: &Plan,
    opts: &RunOptions<'_>,
    cache: CacheUse,
    node: &dyn Node,
) -> Result<Outcome> {
    let t0 = Instant::now();
    let plugins = &opts.plugins;
    let plan = &plan_for(plan, plugins)?;
    if opts.in_memory && (node.size() > 1 || opts.unfinished == Unfinished::Resume) {
        return Err(node.fail(Error::Config(
            "an in-memory run keeps no journal: it runs on one node and cannot resume; give \
             it an output directory instead (RunOptions::in_memory = false)"
                .into(),
        )));
    }
    // 0: the output directory and an unfinished run in it, before any preprocessing (rank 0;
    // checked again under the lock).
    let done_tasks = if node.rank() == 0 && !opts.in_memory {
        precheck(plan, opts.unfinished).map_err(|e| node.fail(e))?
    } else {
        0
    };
    if opts.unfinished == Unfinished::Resume {
        if let Some(report) = finish_pending_commit(plan, opts, node)? {
            return Ok(Outcome {
                report,
                files: Default::default(),
                devices: Vec::new(),
                run_seconds: 0.0,
            });
        }
    }
    // 1-2: prepare and select units. Nothing is written.
    let (prepared, found) = prepare_discovering(plan, plugins, opts, node, done_tasks);
    let prepared = prepared.map_err(|e| node.fail(e))?;
    injected_rank_failure(node)?;
    let selection = select_units_from(plan, &prepared, node.size(), found, opts.session)
        .map_err(|e| node.fail(e))?;
    let prepare_seconds = t0.elapsed().as_secs_f64();
    // 3: execute.
    let mut ex = execute(plan, opts, cache, node, &prepared, &selection)?;
    ex.prepare_seconds = prepare_seconds;
    if opts.in_memory {
        let tasks = prepared.job.tasks();
        if ex.counted < tasks {
            return Err(unfinished(
                ex.interrupted,
                ex.counted,
                tasks,
                PathBuf::new(),
            ));
        }
        return write_to_memory(plan, &prepared, ex, t0);
    }
    let Some(stage) = ex.stage.take() else {
        // Other ranks: their records and statistics are at rank 0 now.
        node.barrier()?;
        return Ok(Outcome {
            report: serde_json::Value::Null,
            files: Default::default(),
            devices: ex.devices,
            run_seconds: ex.run_seconds,
        });
    };
    let tasks = prepared.job.tasks();
    let done = stage
        .journal
        .flush()
        .and_then(|()| stage.journal.result())
        .map(|()| stage.done.count() + stage.journal.tasks())
        .map_err(|e| node.fail(e))?;
    if done < tasks {
        let journal = stage.journal.path().to_path_buf();
        // The journal is written out: release the directory now (its lock file emptied, then
        // unlocked), before waiting for the other ranks, so that nothing after this point
        // (the barrier, freeing the units, a signal's grace period running out) can leave
        // it looking like a killed run's.
        drop(stage);
        node.barrier()?;
        return Err(unfinished(ex.interrupted, done, tasks, journal));
    }
    // 4: write outputs.
    tracing::debug!(
        "finish: journal flushed at {:.3} s",
        t0.elapsed().as_secs_f64()
    );
    let outcome = write_outputs(plan, &prepared, &stage, ex, node.size(), t0);
    let outcome = outcome.map_err(|e| node.fail(e))?;
    // The output directory's lock and staging go whatever follows.
    super::report::release("the output's stage", stage);
    node.barrier()?;
    super::report::release("the job", prepared);
    Ok(outcome)
}

/// A `--resume` of a run stopped while its finished files moved into place: the commit is
/// finished (under the lock) and that is the whole run; its report, or `None` when there was
/// no such commit to finish. Every rank hears it (under MPI, every rank runs with the same
/// `--resume`); other ranks get an empty report.
fn finish_pending_commit(
    plan: &Plan,
    opts: &RunOptions<'_>,
    node: &dyn Node,
) -> Result<Option<serde_json::Value>> {
    let committed =
        if node.rank() == 0 && matches!(outdir::commit_pending(&plan.output.dir), Some(Ok(()))) {
            if !opts.before_writing.is_none_or(|f| f()) {
                return Err(node.fail(Error::Output(
                    "stopped by a signal before the run started; nothing was written".into(),
                )));
            }
            Some(finish_commit(plan).map_err(|e| node.fail(e))?)
        } else {
            None
        };
    let flag = node.broadcast(vec![u8::from(committed.is_some())])?;
    Ok((flag == [1]).then(|| committed.unwrap_or_default()))
}

/// Phase 1 (the plugin's preparation), with the OpenCL devices discovered in a thread
/// meanwhile when the options ask for it, or when the preparation asks for them first; the
/// devices found are handed on (else `select_units` discovers them).
fn prepare_discovering<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    opts: &RunOptions<'a>,
    node: &dyn Node,
    done_tasks: usize,
) -> (Result<Prepared<'a>>, Option<Found>) {
    let early = opts.discover_early && plan.units.opencl != DeviceSel::None;
    std::thread::scope(|s| {
        let pending =
            Mutex::new(early.then(|| s.spawn(|| select_devices_noting(plan, opts.session))));
        let found: std::sync::OnceLock<Found> = std::sync::OnceLock::new();
        let join = || {
            found.get_or_init(|| match pending.lock().take() {
                Some(h) => h.join().unwrap_or_else(|_| {
                    Err(Error::Device("OpenCL device discovery panicked".into()))
                }),
                None => select_devices_noting(plan, opts.session),
            })
        };
        let devices = || match join() {
            Ok((d, _)) if plan.units.opencl != DeviceSel::None => DeviceCount::of(d),
            _ => DeviceCount::default(),
        };
        // Rank 0's plugin may check the free space (or memory) before its expensive
        // preprocessing.
        let space = match (node.rank(), opts.in_memory) {
            (0, true) => SpaceCheck::Memory,
            (0, false) => SpaceCheck::Disk,
            _ => SpaceCheck::None,
        };
        let prepared = prepare_sharing(
            plan,
            plugins,
            node.size(),
            node.share(),
            done_tasks,
            &devices,
            space,
            opts.session.map(crate::Session::kept),
        );
        // Discovered here or by the preparation: hand it on (else select_units discovers).
        if early {
            join();
        }
        (prepared, found.into_inner())
    })
}

/// The error of a run that ended with `done` of its `tasks` done: interrupted, or a bug.
fn unfinished(interrupted: bool, done: usize, tasks: usize, journal: PathBuf) -> Error {
    if interrupted {
        Error::Interrupted {
            done,
            total: tasks,
            journal,
        }
    } else {
        Error::Output(format!(
            "only {done} of {tasks} tasks ran (a bug in tuccompi: please report it){}",
            if journal.as_os_str().is_empty() {
                String::new()
            } else {
                format!("; the journal in {} can be resumed", journal.display())
            }
        ))
    }
}

/// Phase 3's result on one node.
pub(super) struct Executed<'p> {
    pub(super) units: Vec<Unit<'p>>,
    pub(super) devices: Vec<DeviceReport>,
    pub(super) stats: Vec<UnitStats>,
    pub(super) slices: Vec<Slice>,
    /// Every task's record on rank 0 (gathered); this node's own elsewhere.
    pub(super) records: Records,
    /// Every node's statistics (rank 0).
    pub(super) node_stats: serde_json::Value,
    pub(super) verified: Option<Verified>,
    /// Phase 1-2 (loading the input, the plugin's preprocessing, choosing units).
    pub(super) prepare_seconds: f64,
    /// Phase 3 before the first chunk: devices, kernel builds, uploads, the output's stage.
    pub(super) setup_seconds: f64,
    pub(super) run_seconds: f64,
    /// Rank 0's output directory, journal and resumed tasks.
    pub(super) stage: Option<Stage>,
    /// Whether an interrupt stopped the run before every task ran.
    pub(super) interrupted: bool,
    /// Why no device was found although the plan asked for every device.
    pub(super) device_note: Option<String>,
    /// Where each unit's starting model came from ("history" or "probe"; empty: no history).
    pub(super) starts: Vec<&'static str>,
    /// Tasks whose chunks finished, in an in-memory run (no journal counts them).
    pub(super) counted: usize,
}

/// Phase 3: check the output directory and its space (touching nothing), set up the units,
/// then lock and stage the output (rank 0), open the bulk files, run the units, verify a
/// sample, and gather records and statistics at rank 0.
pub(super) fn execute<'p>(
    plan: &Plan,
    opts: &RunOptions<'_>,
    cache: CacheUse,
    node: &dyn Node,
    prepared: &'p Prepared<'_>,
    selection: &Selection,
) -> Result<Executed<'p>> {
    let t_setup = Instant::now();
    let job = prepared.job.as_ref();
    if opts.in_memory {
        // Its outputs against the memory available, before any task runs: a result that
        // cannot fit is refused with the estimate, not left to the kernel's OOM killer.
        check_memory(output_bytes(plan, job), job.tasks())?;
    } else if node.rank() == 0 {
        let st = output_status(plan, job).map_err(|e| node.fail(e))?;
        outdir::check_space(&plan.output.dir, st.need, st.free).map_err(|e| node.fail(e))?;
    }
    warn_narrow_affinity(node);
    let (units, devices, failed_devices) =
        build_units(plan, prepared, selection, cache).map_err(|e| node.fail(e))?;
    // Validated: from here on the output directory changes (rank 0 locks it first).
    if !opts.before_writing.is_none_or(|f| f()) {
        return Err(node.fail(Error::Output(
            "stopped by a signal before the run started; nothing was written".into(),
        )));
    }
    let (mut stage, done) = if opts.in_memory {
        job.details()
            .bulk
            .iter()
            .try_for_each(|r| r.open_in_memory())?;
        (None, DoneSet::new(job.tasks()))
    } else {
        open_output(plan, opts, job, node)?
    };
    let records = take_records(stage.as_mut(), job)?;
    let journal = stage.as_ref().map(|s| s.journal.clone());
    let counted = std::sync::atomic::AtomicUsize::new(0);
    let sink = match &journal {
        Some(j) => Finished::Journal(j),
        None if opts.in_memory => Finished::Memory(&counted),
        None => Finished::Rank0,
    };
    say_units(plan, opts, node, selection, &units, &devices);
    let cpus = cpu_workers(&units);
    tracing::info!(
        tasks = job.tasks(),
        done = done.count(),
        cpus,
        gpu_queues = units.len() - cpus,
        "running {}",
        prepared.plugin.name()
    );
    // Set-up, not run: reading the history (and the CPU's model) before the clock starts.
    let mut history = SpeedHistory::open(plan, opts, prepared, &units, node);
    let records = Mutex::new(records);
    let interrupted = AtomicBool::new(false);
    let node_run = run_chunks(
        plan,
        opts,
        node,
        job,
        &units,
        &records,
        &done,
        sink,
        &interrupted,
        &history.priors,
        &history.busy,
    );
    let ran = match node_run {
        Ok(ran) => ran,
        Err(e) => return Err(node.fail(keep_journal(stage.as_ref(), e))),
    };
    if !interrupted.load(Ordering::Relaxed) {
        let t = Instant::now();
        history.store(&units, &ran.stats, &ran.measured, &ran.busy);
        tracing::debug!(
            "finish: speed history stored in {:.3} s",
            t.elapsed().as_secs_f64()
        );
    }
    // The units' workers were made before `started`: set-up.
    let setup_seconds = (ran.started - t_setup).as_secs_f64();
    let run_seconds = (ran.ended - ran.started).as_secs_f64();
    let (mut stats, slices) = (ran.stats, ran.slices);
    // Devices taken out at set-up are failed units of the report (after the units that ran, so
    // unit indices stay those of `units`).
    stats.extend(failed_devices);
    let mut records = records.into_inner();
    let verified =
        verify_sample(plan, job, &units, &slices, &records, run_seconds).map_err(|e| {
            // The journal holds the record that failed: it must not be resumed.
            if let Some(st) = &stage {
                let _ = st.out.discard();
            }
            node.fail(e)
        })?;
    node.gather_records(&mut records)?;
    let node_stats = gather_stats(node, &stats, &devices, selection, verified.as_ref())?;
    Ok(Executed {
        units,
        devices,
        stats,
        slices,
        records,
        node_stats,
        verified,
        prepare_seconds: 0.0,
        setup_seconds,
        run_seconds,
        stage,
        interrupted: interrupted.load(Ordering::Relaxed),
        device_note: selection.device_note.clone(),
        starts: history.starts(),
        counted: counted.into_inner(),
    })
}

/// Lock and stage the output directory (rank 0: a fresh run, or the unfinished one to
/// resume), open the bulk files (rank 0 creates or reopens them, then the other ranks open
/// them), and hear from rank 0 which tasks are done already.
fn open_output(
    plan: &Plan,
    opts: &RunOptions<'_>,
    job: &dyn Job,
    node: &dyn Node,
) -> Result<(Option<Stage>, DoneSet)> {
    let stage = if node.rank() == 0 {
        Some(Stage::open(plan, job, opts.unfinished).map_err(|e| node.fail(e))?)
    } else {
        None
    };
    let partial = plan.output.dir.join(outdir::PARTIAL);
    let open_bulk = |create: bool| -> Result<()> {
        job.details()
            .bulk
            .iter()
            .try_for_each(|r| r.open(&partial, create))
    };
    if let Some(st) = &stage {
        open_bulk(st.create_bulk).map_err(|e| node.fail(e))?;
    }
    node.barrier()?;
    if node.rank() != 0 {
        open_bulk(false).map_err(|e| node.fail(e))?;
    }
    let done = node.broadcast(stage.as_ref().map_or(Vec::new(), |s| s.done.to_bytes()))?;
    let done = DoneSet::from_bytes(&done)
        .filter(|d| d.len() == job.tasks())
        .ok_or_else(|| node.fail(Error::Node("the set of done tasks arrived garbled".into())))?;
    Ok((stage, done))
}

/// The per-task records the units write into: rank 0's from its stage (a resumed run's
/// records kept), elsewhere a fresh table of every task's.
fn take_records(stage: Option<&mut Stage>, job: &dyn Job) -> Result<Records> {
    let words = job.record_words();
    Ok(match stage {
        Some(st) => std::mem::replace(
            &mut st.records,
            Records {
                words,
                data: Vec::new(),
            },
        ),
        None => Records {
            words,
            data: crate::filled(job.tasks() * words, 0, "the per-task records")?,
        },
    })
}

/// The CPU workers among `units`.
fn cpu_workers(units: &[Unit<'_>]) -> usize {
    units
        .iter()
        .filter(|u| matches!(u.spec, UnitSpec::Cpu))
        .count()
}

/// What the node runs on, said before the run: under MPI every rank's line (its CPU workers
/// and devices); on one node, why no device was found when the config asked for devices.
fn say_units(
    plan: &Plan,
    opts: &RunOptions<'_>,
    node: &dyn Node,
    selection: &Selection,
    units: &[Unit<'_>],
    devices: &[DeviceReport],
) {
    if node.under_mpi() {
        let found: Vec<String> = devices
            .iter()
            .map(|d| format!("{} {} ({} queues)", d.id, d.name, d.queues))
            .collect();
        let line = format!(
            "{}: rank {} on {}: {} CPU workers; OpenCL devices: {}\n",
            crate::program_name(),
            node.rank(),
            crate::node::host_name(),
            cpu_workers(units),
            if found.is_empty() {
                selection
                    .device_note
                    .clone()
                    .unwrap_or_else(|| "none (units.opencl = \"none\")".into())
            } else {
                found.join(", ")
            }
        );
        say(&line);
    } else if let Some(note) = &selection.device_note {
        // Asked for GPUs and found none: say so at the default verbosity (as JAX's "falling
        // back to CPU"), once, not only in report.json. A config that says nothing of
        // units.opencl takes every device there is, and none is no news: an info line.
        let asked = toml::from_str::<toml::Table>(&plan.resolved_toml)
            .ok()
            .and_then(|t| t.get("units")?.get("opencl").cloned())
            .is_some();
        if asked && !opts.quiet {
            say(&format!("{}: warning: {note}\n", crate::program_name()));
        } else {
            tracing::info!("{note}");
        }
    }
}

/// The units' run failed with `e`: rank 0's journal is written out, and the log says how to
/// continue; `e` is passed on.
fn keep_journal(stage: Option<&Stage>, e: Error) -> Error {
    if let Some(st) = stage {
        let _ = st.journal.flush();
        tracing::warn!(
            "the finished tasks are journaled in {}: after fixing the cause, continue with \
             --resume (or start over with --restart)",
            st.journal.path().display()
        );
    }
    e
}

/// Re-run a sample of the accelerators' tasks on the CPU half (`[verify] sample` tasks, or by
/// default a few, for about 1% of the run's time); `None` when there is nothing to verify.
fn verify_sample(
    plan: &Plan,
    job: &dyn Job,
    units: &[Unit<'_>],
    slices: &[Slice],
    records: &Records,
    run_seconds: f64,
) -> Result<Option<Verified>> {
    let want = match plan.verify.sample {
        Some(n) => verify::Want::Tasks(n),
        // A few tasks, for about 1% of the run's time (the first always runs).
        None => verify::Want::Auto(Duration::from_secs_f64(run_seconds / 100.0)),
    };
    if want == verify::Want::Tasks(0) || !job.details().cpu_half {
        return Ok(None);
    }
    let tolerances = &plan.verify.tolerances;
    verify::verify(job, units, slices, records, want, tolerances).map(Some)
}

/// Every node's statistics at rank 0: its units', its devices', and what else the report
/// shows of a node (why no device was found, the tasks verified, the process's usage).
fn gather_stats(
    node: &dyn Node,
    stats: &[UnitStats],
    devices: &[DeviceReport],
    selection: &Selection,
    verified: Option<&Verified>,
) -> Result<serde_json::Value> {
    let mut extra = serde_json::json!({ "device_note": selection.device_note });
    if let Some(v) = verified {
        extra["verified"] = serde_json::json!(v.checked);
    }
    extra["process"] = process_usage();
    node.gather_stats(stats, &device_json(devices), extra)
}

/// What the units of a node did.
pub(super) struct NodeRun {
    /// Each unit's statistics.
    pub(super) stats: Vec<UnitStats>,
    /// Their chunks, for the trace.
    pub(super) slices: Vec<Slice>,
    /// The models the work queue measured, for the speed history.
    pub(super) measured: Vec<Option<Estimate>>,
    /// How many of each device's queues the work queue kept busy (rule *busy queues*), per
    /// unit, for the speed history.
    pub(super) busy: Vec<Option<usize>>,
    /// The run's clock: from when every unit had its worker (set-up before this counts as
    /// set-up)...
    pub(super) started: Instant,
    /// ... to when the last chunk's records were in (under MPI, rank 0: when every rank's units
    /// had left), before the workers were released.
    pub(super) ended: Instant,
}

/// Where a node's finished chunks go once their records are in.
#[derive(Clone, Copy)]
pub(super) enum Finished<'a> {
    /// Rank 0's journal (a run with an output directory).
    Journal(&'a Arc<Journal>),
    /// Sent to rank 0 (the other ranks under MPI).
    Rank0,
    /// Counted, nothing written (an in-memory run: [`RunOptions::in_memory`]).
    Memory(&'a std::sync::atomic::AtomicUsize),
}

/// Run the units over the node's task source until it is dry or interrupted, skipping the
/// `done` tasks; each finished chunk goes to rank 0's `journal` (or, on other ranks, is sent to
/// it).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_chunks(
    plan: &Plan,
    opts: &RunOptions<'_>,
    node: &dyn Node,
    job: &dyn Job,
    units: &[Unit<'_>],
    records: &Mutex<Records>,
    done: &DoneSet,
    sink: Finished<'_>,
    interrupted: &AtomicBool,
    priors: &[Option<Estimate>],
    busy_priors: &[Option<usize>],
) -> Result<NodeRun> {
    let journal = match sink {
        Finished::Journal(j) => Some(j),
        _ => None,
    };
    let tasks = job.tasks();
    let quiet = opts.quiet || node.rank() != 0;
    let mut measured = Vec::new();
    let mut busy = Vec::new();
    let progress = progress_bar(quiet, tasks as u64, done.count() as u64);
    let log_every = (!quiet
        && plan.output.progress_seconds > 0.0
        && !std::io::IsTerminal::is_terminal(&std::io::stderr()))
    .then(|| Duration::from_secs_f64(plan.output.progress_seconds));
    let infos: Vec<UnitInfo> = units
        .iter()
        .zip(priors.iter().copied().chain(std::iter::repeat(None)))
        .zip(busy_priors.iter().copied().chain(std::iter::repeat(None)))
        .map(|((u, p), b)| u.info().with_prior(p).with_busy(b))
        .collect();
    let finished = |unit: usize, r: Range<usize>, rec: &[u64]| -> Result<()> {
        match sink {
            Finished::Journal(j) => j.append(r, rec),
            Finished::Rank0 => node.forward_records(unit, r, rec),
            Finished::Memory(n) => {
                n.fetch_add(r.len(), Ordering::Relaxed);
                Ok(())
            }
        }
    };
    let result = node
        .task_source(tasks, plan, &infos, journal.cloned())
        .and_then(|source| {
            let (over, over_rx) = crossbeam_channel::bounded::<()>(1);
            std::thread::scope(|s| {
                if opts.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    // Interrupted before the first chunk.
                    interrupted.store(true, Ordering::Relaxed);
                    source.stop();
                }
                if let Some(call) = opts.progress {
                    let (over, progress) = (over_rx.clone(), progress.clone());
                    s.spawn(move || {
                        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                            over.recv_timeout(PROGRESS_EVERY)
                        {
                            call(progress.position(), tasks as u64);
                        }
                        call(progress.position(), tasks as u64);
                    });
                }
                if let Some(every) = log_every {
                    let (over, progress) = (over_rx.clone(), progress.clone());
                    let before = done.count() as u64;
                    s.spawn(move || log_progress(&progress, before, tasks, every, over));
                }
                if let Some(flag) = opts.interrupt {
                    let (source, journal) = (source.as_ref(), journal.map(|j| j.as_ref()));
                    s.spawn(move || watch(flag, over_rx, source, journal, interrupted));
                }
                let r = run_units(
                    job,
                    units,
                    source.as_ref(),
                    records,
                    &progress,
                    plan.units.on_failure,
                    done,
                    &finished,
                );
                drop(over);
                measured = source.estimates();
                busy = source.busy_queues();
                let ran = r?;
                // Failed units gave their chunks back; if no unit was left to take them, say
                // so (an interrupted run leaves tasks on purpose). Under MPI this waits for
                // the other ranks' units: the run lasts until they end.
                let left = source.left_over();
                // On one node the run ended with its last records (units left waiting still
                // had to wake and leave); under MPI, when every rank's units have (above).
                let ended = match ran.last_result {
                    Some(t) if node.size() == 1 => t,
                    _ => Instant::now(),
                };
                // Not run time: freeing what the workers touched.
                let releasing = Instant::now();
                crate::thread::release(ran.workers);
                tracing::debug!(
                    "finish: the units left {:.3} s after the last records, their workers \
                     released in {:.3} s",
                    (releasing - ended).as_secs_f64(),
                    releasing.elapsed().as_secs_f64()
                );
                if left > 0 && !interrupted.load(Ordering::Relaxed) {
                    let failures: Vec<String> = ran
                        .stats
                        .iter()
                        .filter_map(|u| Some(format!("{}: {}", u.name, u.failed.as_ref()?)))
                        .collect();
                    return Err(Error::NoUnitLeft {
                        left,
                        tasks,
                        failures: failures.join("; "),
                    });
                }
                Ok((ran.stats, ran.slices, ran.started, ended))
            })
        });
    progress.finish_and_clear();
    result.map(|(stats, slices, started, ended)| NodeRun {
        stats,
        slices,
        measured,
        busy,
        started,
        ended,
    })
}
