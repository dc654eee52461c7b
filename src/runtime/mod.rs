//! The runtime: from a validated plan to output files, in four named phases.
//!
//! Each phase is a file of this folder: `prepare.rs`, `select.rs` (and `check.rs`, what
//! `tuccompi check` reports of the output directory), `units.rs` and `execute.rs`, `report.rs`;
//! beside them `stage.rs` (the staging folder and journal), `verify.rs`, `history.rs` (the speed
//! history) and `progress.rs`.
//!
//! 1. [`prepare`]: resolve the plugin among those the caller hands over (`main` passes the
//!    built-in registry; the runtime knows no plugin by name), read the input and resolve the
//!    tasks (the plugin's `prepare`). Nothing is written.
//! 2. [`select_units`]: the OpenCL devices and CPU workers the plan selects. Nothing is
//!    written. `tuccompi check` runs these two and [`output_status`], and stops there.
//! 3. execute: check the output directory and its free space (still touching nothing), set
//!    up each device (upload, kernels, tuner), then lock the output directory, open the run's
//!    staging folder and journal (or reopen them to resume), and run the units under the
//!    scheduling policy through the thread layer, journaling each finished chunk; with
//!    `[verify] sample`, re-run some of the accelerators' tasks on the CPU half.
//! 4. write outputs: the plugin's files, `report.json` and the trace go to the staging
//!    folder, then move into the output directory together ([`crate::sink::outdir`]).
//!
//! Validate, then touch: every failure before phase 3's lock leaves the disk as it was, and a
//! failure after it leaves the complete result of an earlier run as it was (the unfinished
//! run stays in its staging folder with its journal, to resume).

mod check;
mod execute;
mod history;
mod prepare;
mod progress;
mod report;
mod select;
mod stage;
mod tune;
mod units;
mod verify;

pub use check::*;
pub use execute::*;
use history::*;
pub use prepare::*;
use progress::*;
use report::*;
pub use select::*;
pub use tune::{tune, TuneOptions, TuneRow, Tuned};
pub use units::unit_names;
use units::*;

use stage::{finish_commit, journaled, precheck, Stage};
use verify::Verified;

use crate::config::{DeviceSel, OnFailure, Plan, Policy};
use crate::device::{self, Device, Filter};
use crate::node::Node;
use crate::plugin::{DeviceCount, Job, OutputSize, Plugin, PrepareCtx, Records};
use crate::scheduler::TaskSource;
use crate::scheduler::{Estimate, UnitInfo};
use crate::sink::journal::Journal;
use crate::sink::outdir;
use crate::sink::write_file;
use crate::thread::{run_units, DoneSet, Slice, Unit, UnitSpec, UnitStats};
use crate::tuning::{CacheUse, LaunchParams, Tuner};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to do with an unfinished run found in the output directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unfinished {
    /// Refuse to start, saying how to resume or discard it: nothing is lost by accident.
    #[default]
    Refuse,
    /// Continue it (`--resume`): same result-defining config and input content; its journaled
    /// tasks are skipped and its distance rows kept.
    Resume,
    /// Discard it and start over (`--restart`).
    Discard,
}

/// How to run, beyond the plan.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// No progress bar.
    pub quiet: bool,
    /// The plugins the plan's `run.plugin` names one of: a binary's own (the built-ins of
    /// `tuccompi-plugins`, a user's plugin).
    pub plugins: Vec<&'a dyn Plugin>,
    /// What to do with an unfinished run in the output directory.
    pub unfinished: Unfinished,
    /// Set (by a signal handler) to stop: no more chunks are handed out, running ones finish,
    /// the journal is written out, and the run ends with [`Error::Interrupted`].
    pub interrupt: Option<&'a AtomicBool>,
    /// Called once, just before the run first touches the output directory (after the input,
    /// the preprocessing and the units' set-up): the command line's signal handling ends the
    /// process at once before this point (nothing to resume) and stops the run cleanly after
    /// it. Returning `false` (a signal came first) ends the run with nothing written.
    pub before_writing: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Discover the OpenCL devices in a thread while the input loads, which hides the drivers'
    /// start-up (a quarter of a second on the GPU machine). For a process that runs one plan at
    /// a time, as the `tuccompi` command does; off by default, since a process running several
    /// plans at once (a test harness) would discover beside other runs' OpenCL work, which PoCL
    /// does not always survive.
    pub discover_early: bool,
    /// Keep the speed history ([`crate::scheduler::history`]) in the user's cache directory:
    /// the work queue starts from the models an earlier run of the same work measured, and this
    /// run's models are stored at its end (unless `scheduler.history = false`). The command
    /// line sets it; off by default, so a library caller (a test) writes no cache.
    pub speed_history: bool,
    /// The session this run is a job of ([`crate::Session::run`] sets it): its devices (with
    /// their contexts, programs and kept data) and its speed history, instead of the run's
    /// own. `None`: a run of its own, from cold.
    pub session: Option<&'a crate::Session>,
    /// Called with (tasks done, tasks) every [`PROGRESS_EVERY`] while the units run, and once
    /// when they stop (a library caller's progress: Python's callback and bar). Tasks an
    /// unfinished run resumed count as done.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
    /// Results into memory, nothing onto a disk: no output directory, lock, staging folder or
    /// journal; the bulk files are anonymous in-memory files and the plugin's `finish` writes
    /// into memory ([`crate::sink::Out::memory`]); [`Outcome::files`] hands both back, and
    /// `report.json`'s content is [`Outcome::report`]. `[output]` is ignored. One node only,
    /// and nothing to resume: an interrupted in-memory run is lost.
    pub in_memory: bool,
}

/// How often [`RunOptions::progress`] is called while a run goes.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(200);

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RunOptions(quiet={}, plugins={}, unfinished={:?}, interrupt={}, before_writing={}, discover_early={}, speed_history={}, session={}, progress={}, in_memory={})",
            self.quiet,
            self.plugins.len(),
            self.unfinished,
            self.interrupt.is_some(),
            self.before_writing.is_some(),
            self.discover_early,
            self.speed_history,
            self.session.is_some(),
            self.progress.is_some(),
            self.in_memory
        )
    }
}

/// The outcome of a run (also written as `report.json`).
#[derive(Debug)]
pub struct Outcome {
    /// The report as JSON.
    pub report: serde_json::Value,
    /// An in-memory run's files ([`RunOptions::in_memory`]): the plugin's outputs and its bulk
    /// files (`.npy`, whole), by name; empty for a run into an output directory.
    pub files: crate::sink::MemoryFiles,
    /// This node's devices with their launch parameters.
    pub devices: Vec<DeviceReport>,
    /// Seconds of the scheduling phase alone (no input loading, kernel builds or output).
    pub run_seconds: f64,
}

/// One device of a run, as `report.json` lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceReport {
    /// The device's id in this process (`gpu0`, ...: its units are `gpu0.q0`, ...).
    pub id: String,
    /// When its setup (launch parameters, programs, the plugin's `setup`: GPU PHAST uploads
    /// its hierarchy there) began and ended, in seconds from the start of unit setup: the
    /// devices are set up in parallel, so the windows overlap.
    pub setup_window: [f64; 2],
    /// Seconds the OpenCL driver took to list the platforms and devices (once for all
    /// devices) and to create this device's context, within the prepare phase.
    pub opened: [f64; 2],
    /// Device name.
    pub name: String,
    /// Platform name.
    pub platform: String,
    /// "gpu", "cpu", ...
    pub kind: String,
    /// In-order queues (units) on it.
    pub queues: usize,
    /// Tasks per chunk its queues asked for.
    pub chunk: usize,
    /// The GPU half's launch parameters, each with origin and reason.
    pub tuning: LaunchParams,
}

/// The policy's name as written in the config.
pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Equitable => "equitable",
        Policy::WorkQueue => "work-queue",
    }
}
