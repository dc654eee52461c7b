//! The raw serde mirror of the config file. Every table denies unknown keys; values that take
//! a word or a number ("auto" | N) convert through `TryFrom<toml::Value>` so the message says
//! exactly which forms are accepted.

use super::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `"auto"` or an explicit value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum AutoOr {
    /// Let the runtime choose.
    Auto,
    /// This many.
    N(usize),
}

impl TryFrom<toml::Value> for AutoOr {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Self, String> {
        match v {
            toml::Value::String(s) if s == "auto" => Ok(AutoOr::Auto),
            toml::Value::Integer(i) if i >= 0 => Ok(AutoOr::N(i as usize)),
            other => Err(format!(
                "expected \"auto\" or a non-negative integer, found {other}"
            )),
        }
    }
}

impl AutoOr {
    /// The explicit value, if any.
    pub fn value(self) -> Option<usize> {
        match self {
            AutoOr::Auto => None,
            AutoOr::N(n) => Some(n),
        }
    }
}

/// `run.tasks`: which tasks to run, by their ids `0..tasks` in the plugin's numbering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum Tasks {
    /// Every task.
    All,
    /// The first N.
    First(u64),
    /// These ids.
    List(Vec<u64>),
    /// `{ file = "PATH" }`: ids in a file, which the plugin reads (the framework keeps the
    /// path).
    File(PathBuf),
}

impl TryFrom<toml::Value> for Tasks {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Self, String> {
        const WANT: &str = "expected \"all\", a count N, a list of task ids or { file = \"PATH\" }";
        match v {
            toml::Value::String(s) if s == "all" => Ok(Tasks::All),
            toml::Value::Integer(i) if i >= 0 => Ok(Tasks::First(i as u64)),
            toml::Value::Table(t) => match (t.get("file"), t.len()) {
                (Some(toml::Value::String(f)), 1) if !f.is_empty() => {
                    Ok(Tasks::File(PathBuf::from(f)))
                }
                _ => Err(format!(
                    "{WANT}; a table must be {{ file = \"PATH\" }} alone"
                )),
            },
            toml::Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    toml::Value::Integer(i) if i >= 0 => Ok(i as u64),
                    other => Err(format!("{WANT}; list entry {other} is not a task id")),
                })
                .collect::<Result<_, _>>()
                .map(Tasks::List),
            other => Err(format!("{WANT}, found {other}")),
        }
    }
}

impl Tasks {
    /// The selection as TOML, as a config writes it.
    pub fn to_toml(&self) -> toml::Value {
        match self {
            Tasks::All => toml::Value::from("all"),
            Tasks::First(k) => toml::Value::Integer(*k as i64),
            Tasks::List(ids) => ids.iter().map(|&i| i as i64).collect::<Vec<_>>().into(),
            Tasks::File(p) => toml::Value::from(toml::Table::from_iter([(
                "file".into(),
                p.display().to_string().into(),
            )])),
        }
    }
}

/// A list of ids as a message shows it: `[1, 5, 9]`, a long one cut to its first 8 ids and its
/// count (`[1, 2, ... (5000 ids)]`).
pub fn write_ids(f: &mut std::fmt::Formatter<'_>, ids: &[u64]) -> std::fmt::Result {
    const SHOWN: usize = 8;
    let head: Vec<String> = ids.iter().take(SHOWN).map(u64::to_string).collect();
    write!(f, "[{}", head.join(", "))?;
    if ids.len() > SHOWN {
        write!(f, ", ... ({} ids)", ids.len())?;
    }
    write!(f, "]")
}

impl std::fmt::Display for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tasks::All => write!(f, "all"),
            Tasks::First(k) => write!(f, "the first {k}"),
            Tasks::List(ids) => write_ids(f, ids),
            Tasks::File(p) => write!(f, "{{ file = {:?} }}", p.display().to_string()),
        }
    }
}

/// `units.opencl`: which OpenCL devices to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum DeviceSel {
    /// Every device of the chosen type.
    All,
    /// Every device of the chosen type, divided among the ranks of each machine
    /// ([`crate::node::local_rank`]): rank r of a machine's R takes devices r, r + R, ...; with
    /// more ranks than devices, device r mod D. One process alone takes every device.
    LocalRank,
    /// No OpenCL device.
    None,
    /// Devices whose name (or platform name) contains one of these substrings, case-insensitive.
    Names(Vec<String>),
}

impl TryFrom<toml::Value> for DeviceSel {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Self, String> {
        match v {
            toml::Value::String(s) if s == "all" => Ok(DeviceSel::All),
            toml::Value::String(s) if s == "none" => Ok(DeviceSel::None),
            toml::Value::String(s) if s == "local_rank" => Ok(DeviceSel::LocalRank),
            toml::Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    toml::Value::String(s) => Ok(s),
                    other => Err(format!(
                        "device name substrings must be strings, found {other}"
                    )),
                })
                .collect::<Result<_, _>>()
                .map(DeviceSel::Names),
            other => Err(format!(
                "expected \"all\", \"local_rank\", \"none\" or a list of device name \
                 substrings, found {other}"
            )),
        }
    }
}

/// As in the config: `all`, `none`, `["A100", "0000:41"]`.
impl std::fmt::Display for DeviceSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSel::All => write!(f, "all"),
            DeviceSel::LocalRank => write!(f, "local_rank"),
            DeviceSel::None => write!(f, "none"),
            DeviceSel::Names(n) => write!(f, "{n:?}"),
        }
    }
}

/// Scheduling policy among a node's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Static equal shares, one contiguous range per unit.
    Equitable,
    /// Dynamic: each idle unit takes the next chunk.
    WorkQueue,
}

/// What happens when a unit fails (`units.on_failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Take the unit out of the run and give its chunk to the other units.
    Retry,
    /// Stop the run with the unit's error.
    Abort,
}

/// Scheduling policy among nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodePolicy {
    /// Rank 0 hands out chunks on request.
    MasterSlave,
    /// Static equal shares per rank.
    Equitable,
}

/// `[run]`. Keys the framework does not know are kept (a plugin may have taken them over:
/// [`crate::plugin::Plugin::renamed_keys`]) and refused when the plugin does not claim them.
#[derive(Debug, Deserialize)]
pub(super) struct RawRun {
    plugin: String,
    tasks: Option<Tasks>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUnits {
    cpu_workers: Option<AutoOr>,
    opencl: Option<DeviceSel>,
    device_type: Option<String>,
    concurrent_kernels: Option<AutoOr>,
    on_failure: Option<OnFailure>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScheduler {
    policy: Option<Policy>,
    chunk: Option<AutoOr>,
    gpu_chunk: Option<AutoOr>,
    history: Option<bool>,
    shares: Option<super::Shares>,
    give_back: Option<bool>,
    device_rate: Option<bool>,
    small_probe: Option<bool>,
    hand_over: Option<bool>,
    busy_queues: Option<bool>,
}

/// `[output]`; unknown keys are kept as in [`RawRun`].
#[derive(Debug, Deserialize, Default)]
pub(super) struct RawOutput {
    dir: Option<PathBuf>,
    #[serde(default)]
    trace: bool,
    sync_seconds: Option<f64>,
    progress_seconds: Option<f64>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVerify {
    sample: Option<AutoOr>,
    f32_absolute: Option<f64>,
    f32_relative: Option<f64>,
    f64_absolute: Option<f64>,
    f64_relative: Option<f64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNodes {
    policy: Option<NodePolicy>,
    master_computes: Option<bool>,
    chunk: Option<AutoOr>,
}

/// The whole file. Tables other than the fixed ones are plugin option tables (`[apsp]`), checked
/// against the plugin registry when the plugin is resolved.
#[derive(Debug, Deserialize)]
pub(super) struct RawConfig {
    run: RawRun,
    #[serde(default)]
    units: RawUnits,
    #[serde(default)]
    scheduler: RawScheduler,
    #[serde(default)]
    output: RawOutput,
    #[serde(default)]
    nodes: RawNodes,
    #[serde(default)]
    verify: RawVerify,
    #[serde(flatten)]
    plugin_tables: BTreeMap<String, toml::Value>,
}

/// `units.cpu_workers` may be at most this many on a process that may use `cores` cores: room
/// to oversubscribe (I/O-bound plugins, tests of scheduling) without letting a typo start
/// 100,000 threads.
pub(super) fn max_cpu_workers(cores: usize) -> usize {
    (4 * cores).max(MIN_WORKER_CAP)
}

/// The smallest `units.cpu_workers` bound, so that a config fits a process confined to one or
/// two cores (a container, an MPI rank bound to a core).
pub(super) const MIN_WORKER_CAP: usize = 16;

/// The most in-order queues `units.concurrent_kernels` may ask for per device.
pub(super) const MAX_QUEUES_PER_DEVICE: usize = 64;

/// The output directory of a config without `output.dir`: `tuccompi-out/STEM`, STEM being the
/// config file's name without its extension (`stdin` for a config read from standard input),
/// so that two configs never share a default directory (as cargo's target directories never
/// collide with the sources).
pub(super) fn default_output_dir(config: &Path) -> PathBuf {
    let stem = config
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| {
            s.chars().any(char::is_alphanumeric)
                && !s.starts_with('.')
                && s.chars()
                    .all(|c| c.is_alphanumeric() || "-_.+@".contains(c))
        })
        .unwrap_or("stdin");
    Path::new("tuccompi-out").join(stem)
}

impl RawConfig {
    /// The plan this file describes: defaults filled in, each value checked in turn (the first
    /// value refused is the error).
    pub(super) fn validate(self, origins: Origins, resolved_toml: String) -> Result<Plan> {
        let cpu_workers = cpu_workers(self.units.cpu_workers, &origins)?;
        let tasks = self.run.tasks;
        if let Some(Tasks::List(ids)) = &tasks {
            check_task_ids(ids, &origins)?;
        }
        let mut unclaimed = BTreeMap::new();
        for (table, keys) in [("run", self.run.other), ("output", self.output.other)] {
            for (k, v) in keys {
                unclaimed.insert(format!("{table}.{k}"), v);
            }
        }
        let device_type = device_type(self.units.device_type, &origins)?;
        let concurrent_kernels = concurrent_kernels(self.units.concurrent_kernels, &origins)?;
        let (plugin_options, extra) =
            plugin_tables(self.plugin_tables, &self.run.plugin, &origins)?;
        let units = UnitsPlan {
            cpu_workers,
            cpu_workers_auto: self.units.cpu_workers.unwrap_or(AutoOr::Auto) == AutoOr::Auto,
            opencl: self.units.opencl.unwrap_or(DeviceSel::All),
            device_type,
            concurrent_kernels,
            on_failure: self.units.on_failure.unwrap_or(OnFailure::Retry),
        };
        let scheduler = SchedulerPlan {
            policy: self.scheduler.policy.unwrap_or(Policy::WorkQueue),
            chunk: positive(&origins, "scheduler.chunk", self.scheduler.chunk)?,
            gpu_chunk: positive(&origins, "scheduler.gpu_chunk", self.scheduler.gpu_chunk)?,
            history: self.scheduler.history.unwrap_or(true),
            shares: self.scheduler.shares.unwrap_or_default(),
            give_back: self.scheduler.give_back.unwrap_or(true),
            device_rate: self.scheduler.device_rate.unwrap_or(true),
            small_probe: self.scheduler.small_probe.unwrap_or(true),
            hand_over: self.scheduler.hand_over.unwrap_or(true),
            busy_queues: self.scheduler.busy_queues.unwrap_or(false),
        };
        let dir = self
            .output
            .dir
            .unwrap_or_else(|| default_output_dir(origins.path()));
        let (sync_seconds, progress_seconds) = output_seconds(
            self.output.sync_seconds,
            self.output.progress_seconds,
            &origins,
        )?;
        let output = OutputPlan {
            dir,
            trace: self.output.trace,
            sync_seconds,
            progress_seconds,
        };
        let nodes = NodesPlan {
            policy: self.nodes.policy.unwrap_or(NodePolicy::MasterSlave),
            master_computes: self.nodes.master_computes.unwrap_or(true),
            chunk: positive(&origins, "nodes.chunk", self.nodes.chunk)?,
        };
        let verify = VerifyPlan {
            sample: self.verify.sample.unwrap_or(AutoOr::Auto).value(),
            tolerances: tolerances(&self.verify, &origins)?,
        };
        Ok(Plan {
            config_path: origins.path().to_path_buf(),
            resolved_toml,
            overrides: Vec::new(),
            plugin: self.run.plugin,
            tasks: tasks.unwrap_or(Tasks::All),
            unclaimed,
            renamed: Vec::new(),
            units,
            scheduler,
            output,
            nodes,
            verify,
            plugin_options,
            other_tables: extra,
            origins,
        })
    }
}

/// `units.cpu_workers` as a number of workers: one per core for `"auto"`, refused above
/// [`max_cpu_workers`].
fn cpu_workers(v: Option<AutoOr>, origins: &Origins) -> Result<usize> {
    let at = |key: &str| origins.of(key);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    match v.unwrap_or(AutoOr::Auto) {
        AutoOr::Auto => Ok(cores),
        AutoOr::N(n) if n > max_cpu_workers(cores) => {
            // Each worker is a thread with its own per-task state (O(n) for a graph), and
            // CPU-bound workers beyond the cores only take turns: 100,000 of them exhaust
            // memory or threads long before they help.
            Err(Error::Config(format!(
                "{}: units.cpu_workers = {n} is more than this process can use: it may \
                 run on {cores} cores, and tuccompi allows up to {} workers here (4 per core, \
                 at least {MIN_WORKER_CAP}); use \"auto\" (one per core) or at most {}. Under \
                 mpirun the cores a rank may use depend on binding: `--bind-to none` gives \
                 it the whole node",
                at("units.cpu_workers"),
                max_cpu_workers(cores),
                max_cpu_workers(cores)
            )))
        }
        AutoOr::N(n) => Ok(n),
    }
}

/// Refuse a `run.tasks` list that names a task twice.
fn check_task_ids(ids: &[u64], origins: &Origins) -> Result<()> {
    let at = |key: &str| origins.of(key);
    let mut first_at = std::collections::HashMap::with_capacity(ids.len());
    for (i, &id) in ids.iter().enumerate() {
        if let Some(&j) = first_at.get(&id) {
            // Duplicates would run the same task twice and write two records for it.
            return Err(Error::Config(format!(
                "{}: run.tasks lists task {id} twice (entries {} and {}); list it once",
                at("run.tasks"),
                j + 1,
                i + 1
            )));
        }
        first_at.insert(id, i);
    }
    Ok(())
}

/// `units.device_type` in lower case (`"gpu"` when absent), refused unless it names a type.
fn device_type(v: Option<String>, origins: &Origins) -> Result<String> {
    let at = |key: &str| origins.of(key);
    let device_type = v.unwrap_or_else(|| "gpu".into()).to_lowercase();
    if !["gpu", "cpu", "accelerator", "all"].contains(&device_type.as_str()) {
        return Err(Error::Config(format!(
            "{}: units.device_type = \"{device_type}\": use \"gpu\", \"cpu\", \"accelerator\" or \"all\"",
            at("units.device_type")
        )));
    }
    Ok(device_type)
}

/// An `"auto" | N` key's explicit value, refused when it is 0.
fn positive(origins: &Origins, key: &str, v: Option<AutoOr>) -> Result<Option<usize>> {
    let at = |key: &str| origins.of(key);
    match v.and_then(AutoOr::value) {
        Some(0) => Err(Error::Config(format!(
            "{}: {key} = 0: use \"auto\" or N >= 1",
            at(key)
        ))),
        other => Ok(other),
    }
}

/// `units.concurrent_kernels`' explicit value, refused when 0 or above
/// [`MAX_QUEUES_PER_DEVICE`].
fn concurrent_kernels(v: Option<AutoOr>, origins: &Origins) -> Result<Option<usize>> {
    let at = |key: &str| origins.of(key);
    let concurrent_kernels = positive(origins, "units.concurrent_kernels", v)?;
    if let Some(k) = concurrent_kernels.filter(|&k| k > MAX_QUEUES_PER_DEVICE) {
        // Each queue is a unit with its own host thread; devices run a handful of hardware
        // queues at most, so more only adds threads.
        return Err(Error::Config(format!(
            "{}: units.concurrent_kernels = {k}: at most {MAX_QUEUES_PER_DEVICE} queues \
             per device (each is a unit with its own host thread); use \"auto\" (the tuner \
             picks 1 or 4) or 1..={MAX_QUEUES_PER_DEVICE}",
            at("units.concurrent_kernels")
        )));
    }
    Ok(concurrent_kernels)
}

/// The tables other than the fixed ones: the run's plugin's options (empty without its
/// table) and every table by name; a top-level key that is not a table is refused.
fn plugin_tables(
    tables: BTreeMap<String, toml::Value>,
    plugin: &str,
    origins: &Origins,
) -> Result<(toml::Table, BTreeMap<String, toml::Table>)> {
    let at = |key: &str| origins.of(key);
    let mut plugin_options = toml::Table::new();
    let mut extra = BTreeMap::new();
    for (name, value) in tables {
        let toml::Value::Table(t) = value else {
            return Err(Error::Config(format!(
                "{}: unknown top-level key '{name}'; known tables are [run] [units] [scheduler] \
                 [output] [nodes] [verify] and the plugins' tables",
                at(&name)
            )));
        };
        if name == plugin {
            plugin_options = t.clone();
        }
        extra.insert(name, t);
    }
    Ok((plugin_options, extra))
}

/// `output.sync_seconds` and `output.progress_seconds` (2 and 10 when absent), each refused
/// outside 0..=86400 seconds.
fn output_seconds(
    sync_seconds: Option<f64>,
    progress_seconds: Option<f64>,
    origins: &Origins,
) -> Result<(f64, f64)> {
    let at = |key: &str| origins.of(key);
    let sync_seconds = match sync_seconds {
        None => 2.0,
        Some(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => s,
        Some(s) => {
            return Err(Error::Config(format!(
                "{}: output.sync_seconds = {s}: use seconds between 0 (sync at \
                 every chunk) and 86400",
                at("output.sync_seconds")
            )))
        }
    };
    let progress_seconds = match progress_seconds {
        None => 10.0,
        Some(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => s,
        Some(s) => {
            return Err(Error::Config(format!(
                "{}: output.progress_seconds = {s}: use seconds between 0 (no \
                 progress lines in logs) and 86400",
                at("output.progress_seconds")
            )))
        }
    };
    Ok((sync_seconds, progress_seconds))
}

/// The `verify` tolerances, each refused unless a finite number >= 0.
fn tolerances(v: &RawVerify, origins: &Origins) -> Result<FloatTolerances> {
    let at = |key: &str| origins.of(key);
    let bound = |key: &str, x: Option<f64>| match x {
        Some(t) if !(t.is_finite() && t >= 0.0) => Err(Error::Config(format!(
            "{}: {key} = {t}: a tolerance is a finite number >= 0 (0: exact)",
            at(key)
        ))),
        _ => Ok(x),
    };
    Ok(FloatTolerances {
        f32_absolute: bound("verify.f32_absolute", v.f32_absolute)?,
        f32_relative: bound("verify.f32_relative", v.f32_relative)?,
        f64_absolute: bound("verify.f64_absolute", v.f64_absolute)?,
        f64_relative: bound("verify.f64_relative", v.f64_relative)?,
    })
}
