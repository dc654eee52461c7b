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

/// `run.sources`: which tasks to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum Sources {
    /// Every vertex.
    All,
    /// The first N vertex ids of the input's numbering.
    First(u64),
    /// These ids, in the input's numbering.
    List(Vec<u64>),
    /// These points (`[x, y]`: longitude and latitude for OpenStreetMap input, a `.co` file's
    /// units otherwise), each snapped to its nearest vertex.
    Points(Vec<[f64; 2]>),
    /// `{ file = "PATH" }`: ids or points in a file, which the plugin reads (the framework
    /// keeps the path; the built-ins read `.txt`, `.csv` and `.npy` id files).
    File(PathBuf),
}

impl TryFrom<toml::Value> for Sources {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Self, String> {
        const WANT: &str = "expected \"all\", a count N, a list of vertex ids, a list of \
                            [lon, lat] points or { file = \"PATH\" }";
        match v {
            toml::Value::String(s) if s == "all" => Ok(Sources::All),
            toml::Value::Integer(i) if i >= 0 => Ok(Sources::First(i as u64)),
            toml::Value::Table(t) => match (t.get("file"), t.len()) {
                (Some(toml::Value::String(f)), 1) if !f.is_empty() => {
                    Ok(Sources::File(PathBuf::from(f)))
                }
                _ => Err(format!(
                    "{WANT}; a table must be {{ file = \"PATH\" }} alone"
                )),
            },
            toml::Value::Array(a) if a.first().is_some_and(toml::Value::is_array) => a
                .into_iter()
                .enumerate()
                .map(|(i, x)| {
                    let num = |c: &toml::Value| match c {
                        toml::Value::Float(f) if f.is_finite() => Some(*f),
                        toml::Value::Integer(n) => Some(*n as f64),
                        _ => None,
                    };
                    match x {
                        toml::Value::Array(p) => match p.as_slice() {
                            [x, y] => match (num(x), num(y)) {
                                (Some(lon), Some(lat)) => Ok([lon, lat]),
                                _ => Err(format!(
                                    "{WANT}; point {} is not two finite numbers",
                                    i + 1
                                )),
                            },
                            _ => Err(format!(
                                "{WANT}; point {} is not two finite numbers ([lon, lat])",
                                i + 1
                            )),
                        },
                        other => Err(format!(
                            "{WANT}; entry {} ({other}) is not a [lon, lat] point (a list is \
                             all ids or all points)",
                            i + 1
                        )),
                    }
                })
                .collect::<Result<_, _>>()
                .map(Sources::Points),
            toml::Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    toml::Value::Integer(i) if i >= 0 => Ok(i as u64),
                    other => Err(format!("{WANT}; list entry {other} is not a vertex id")),
                })
                .collect::<Result<_, _>>()
                .map(Sources::List),
            other => Err(format!("{WANT}, found {other}")),
        }
    }
}

/// As the user would write it in words: `all`, `the first 64 ids`, `[1, 5, 9]` (long lists
/// shortened to their first ids and a count).
impl std::fmt::Display for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sources::All => write!(f, "all"),
            Sources::First(k) => write!(f, "the first {k} ids"),
            Sources::List(ids) => {
                const SHOWN: usize = 8;
                let head: Vec<String> = ids.iter().take(SHOWN).map(u64::to_string).collect();
                write!(f, "[{}", head.join(", "))?;
                if ids.len() > SHOWN {
                    write!(f, ", ... ({} ids)", ids.len())?;
                }
                write!(f, "]")
            }
            Sources::Points(p) => match p.as_slice() {
                [one] => write!(f, "[[{}, {}]]", one[0], one[1]),
                _ => write!(f, "{} points", p.len()),
            },
            Sources::File(p) => write!(f, "{{ file = {:?} }}", p.display().to_string()),
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

/// `output.format`: the formats of the tabular results besides `summary.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// numpy files only (`distances.npy`, `od.npz`).
    #[default]
    Npy,
    /// Also text: with `apsp.targets`, a long-format `od.csv` beside `od.npz`.
    Csv,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    plugin: String,
    sources: Option<Sources>,
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
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutput {
    dir: Option<PathBuf>,
    #[serde(default)]
    distances: bool,
    #[serde(default)]
    trace: bool,
    sync_seconds: Option<f64>,
    progress_seconds: Option<f64>,
    format: Option<OutputFormat>,
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
    pub(super) fn validate(self, origins: Origins, resolved_toml: String) -> Result<Plan> {
        let at = |key: &str| origins.of(key);
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let cpu_workers = match self.units.cpu_workers.unwrap_or(AutoOr::Auto) {
            AutoOr::Auto => cores,
            AutoOr::N(n) if n > max_cpu_workers(cores) => {
                // Each worker is a thread with its own per-task state (O(n) for a graph), and
                // CPU-bound workers beyond the cores only take turns: 100,000 of them exhaust
                // memory or threads long before they help.
                return Err(Error::Config(format!(
                    "{}: units.cpu_workers = {n} is more than this process can use: it may \
                     run on {cores} cores, and tuccompi allows up to {} workers here (4 per core, \
                     at least {MIN_WORKER_CAP}); use \"auto\" (one per core) or at most {}. Under \
                     mpirun the cores a rank may use depend on binding: `--bind-to none` gives \
                     it the whole node",
                    at("units.cpu_workers"),
                    max_cpu_workers(cores),
                    max_cpu_workers(cores)
                )));
            }
            AutoOr::N(n) => n,
        };
        let sources = self.run.sources;
        if let Some(Sources::List(ids)) = &sources {
            let mut first_at = std::collections::HashMap::with_capacity(ids.len());
            for (i, &id) in ids.iter().enumerate() {
                if let Some(&j) = first_at.get(&id) {
                    // Duplicates would run the same task twice and write two summary rows
                    // (and two distance rows) for one source.
                    return Err(Error::Config(format!(
                        "{}: run.sources lists vertex id {id} twice (entries {} and {}); \
                         each id is one task with one summary row, so list it once",
                        at("run.sources"),
                        j + 1,
                        i + 1
                    )));
                }
                first_at.insert(id, i);
            }
        }
        let device_type = self
            .units
            .device_type
            .unwrap_or_else(|| "gpu".into())
            .to_lowercase();
        if !["gpu", "cpu", "accelerator", "all"].contains(&device_type.as_str()) {
            return Err(Error::Config(format!(
                "{}: units.device_type = \"{device_type}\": use \"gpu\", \"cpu\", \"accelerator\" or \"all\"",
                at("units.device_type")
            )));
        }
        let positive = |key: &str, v: Option<AutoOr>| -> Result<Option<usize>> {
            match v.and_then(AutoOr::value) {
                Some(0) => Err(Error::Config(format!(
                    "{}: {key} = 0: use \"auto\" or N >= 1",
                    at(key)
                ))),
                other => Ok(other),
            }
        };
        let concurrent_kernels =
            positive("units.concurrent_kernels", self.units.concurrent_kernels)?;
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
        let mut plugin_options = toml::Table::new();
        let mut extra = BTreeMap::new();
        for (name, value) in self.plugin_tables {
            let toml::Value::Table(t) = value else {
                return Err(Error::Config(format!(
                    "{}: unknown top-level key '{name}'; known tables are [run] [units] [scheduler] \
                     [output] [nodes] [verify] and the plugins' tables",
                    at(&name)
                )));
            };
            if name == self.run.plugin {
                plugin_options = t.clone();
            }
            extra.insert(name, t);
        }
        Ok(Plan {
            config_path: origins.path().to_path_buf(),
            resolved_toml,
            overrides: Vec::new(),
            plugin: self.run.plugin,
            sources: sources.unwrap_or(Sources::All),
            units: UnitsPlan {
                cpu_workers,
                cpu_workers_auto: self.units.cpu_workers.unwrap_or(AutoOr::Auto) == AutoOr::Auto,
                opencl: self.units.opencl.unwrap_or(DeviceSel::All),
                device_type,
                concurrent_kernels,
                on_failure: self.units.on_failure.unwrap_or(OnFailure::Retry),
            },
            scheduler: SchedulerPlan {
                policy: self.scheduler.policy.unwrap_or(Policy::WorkQueue),
                chunk: positive("scheduler.chunk", self.scheduler.chunk)?,
                gpu_chunk: positive("scheduler.gpu_chunk", self.scheduler.gpu_chunk)?,
                history: self.scheduler.history.unwrap_or(true),
            },
            output: OutputPlan {
                dir: self
                    .output
                    .dir
                    .unwrap_or_else(|| default_output_dir(origins.path())),
                distances: self.output.distances,
                trace: self.output.trace,
                format: self.output.format.unwrap_or_default(),
                sync_seconds: match self.output.sync_seconds {
                    None => 2.0,
                    Some(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => s,
                    Some(s) => {
                        return Err(Error::Config(format!(
                            "{}: output.sync_seconds = {s}: use seconds between 0 (sync at \
                             every chunk) and 86400",
                            at("output.sync_seconds")
                        )))
                    }
                },
                progress_seconds: match self.output.progress_seconds {
                    None => 10.0,
                    Some(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => s,
                    Some(s) => {
                        return Err(Error::Config(format!(
                            "{}: output.progress_seconds = {s}: use seconds between 0 (no \
                             progress lines in logs) and 86400",
                            at("output.progress_seconds")
                        )))
                    }
                },
            },
            nodes: NodesPlan {
                policy: self.nodes.policy.unwrap_or(NodePolicy::MasterSlave),
                master_computes: self.nodes.master_computes.unwrap_or(true),
                chunk: positive("nodes.chunk", self.nodes.chunk)?,
            },
            verify: VerifyPlan {
                sample: self.verify.sample.unwrap_or(AutoOr::Auto).value(),
                tolerances: {
                    let v = &self.verify;
                    let bound = |key: &str, x: Option<f64>| match x {
                        Some(t) if !(t.is_finite() && t >= 0.0) => Err(Error::Config(format!(
                            "{}: {key} = {t}: a tolerance is a finite number >= 0 (0: exact)",
                            at(key)
                        ))),
                        _ => Ok(x),
                    };
                    FloatTolerances {
                        f32_absolute: bound("verify.f32_absolute", v.f32_absolute)?,
                        f32_relative: bound("verify.f32_relative", v.f32_relative)?,
                        f64_absolute: bound("verify.f64_absolute", v.f64_absolute)?,
                        f64_relative: bound("verify.f64_relative", v.f64_relative)?,
                    }
                },
            },
            plugin_options,
            other_tables: extra,
            origins,
        })
    }
}
