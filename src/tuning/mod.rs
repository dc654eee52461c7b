//! The tuning layer: launch parameters from kernel characterizations.
//!
//! Takes the characterization of each kernel (`NAME.toml` beside `NAME.cl`, TuCCompi's
//! `KERNELCHAR` in TOML, declared by the plugin as a [`KernelSource`]), the device's properties
//! and the problem's shape; offers GPU halves a [`Tuner`], whose [`Tuner::params`] returns typed
//! [`LaunchParams`]: every value with its origin ([`Source`]) and the reason for it. The rules
//! are the [`GenericRule`]s, each by name, and the README. Values set in the config win over the tuning
//! cache (`tuccompi tune`'s measurements), which wins over the prediction ([`predict`]).
//!
//! The rules here are generic: they read only the characterization, the device and the
//! [`Shape`]. A plugin's own parameters and rules (a blocking factor, the launches one pass takes) are its
//! own: its GPU half adds them to the [`LaunchParams`] it returns, each a named [`Choice`]
//! with its reason ([`LaunchParams::set_knob`]) and the rules that chose them
//! ([`LaunchParams::add_rule`]); `check` and `report.json` show them beside the generic ones.

mod cache;
mod candidates;

pub use cache::{key as cache_key, path as cache_path, Cache, Entry as CacheEntry};
pub use candidates::{default_candidates, free_local, Knob, BATCH, LOCAL_SIZE};

use crate::device::{DeviceInfo, KernelSource};
use crate::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Global memory access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Neighbouring items touch neighbouring words.
    Coalesced,
    /// Items touch arbitrary words (indirect indexing).
    Scatter,
}

/// Low / medium / high.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Little.
    Low,
    /// Some.
    Medium,
    /// Much.
    High,
}

/// How the kernel's global size is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grid {
    /// One work-item per data item; the local size is free.
    Items,
    /// A fixed number of work-groups per source (reductions); the local size sets the work per
    /// item.
    Groups,
    /// A fixed grid that strides over work whose size only the device knows (work lists).
    Persistent,
}

/// One kernel's characterization.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelChar {
    /// Dimensions of the NDRange (1 for every kernel so far).
    pub dims: u32,
    /// Global memory access pattern.
    pub access: Access,
    /// Computational load per work-item.
    pub load: Level,
    /// Data shared across work-groups.
    pub sharing: Level,
    /// Uses global atomics (contention grows with items in flight).
    #[serde(default)]
    pub atomics: bool,
    /// Reduces in local memory with a tree (local size must be a power of two).
    #[serde(default)]
    pub reduction: bool,
    /// How the global size is formed.
    pub grid: Grid,
    /// The work-group size the kernel's code is written for, exactly (arrays in local memory
    /// indexed by the local id). The tuner takes it instead of its rules ([`Source::Fixed`]), and
    /// refuses a device whose work-groups cannot be that large.
    #[serde(default)]
    pub local: Option<usize>,
    /// A class of the plugin's own (e.g. `"product"`), read by the plugin's own rules, which
    /// may fix the kernel's local size; the generic rules ignore it.
    #[serde(default)]
    pub class: Option<String>,
    /// Per buffer or `__local` parameter, the elements it may index, as an expression of the
    /// kernel's integer arguments and the launch's `global`, `local` and `groups`
    /// (`indexes = { out = "3 * groups" }`); [`Queue::launch`](crate::device::Queue::launch)
    /// checks every argument against it. The tuning rules do not read it.
    #[serde(default)]
    pub indexes: BTreeMap<String, String>,
}

/// Kernel names declared in OpenCL C source (`__kernel void NAME(`, with any
/// `__attribute__((...))` before or after `void`).
pub fn kernel_names(source: &str) -> Vec<String> {
    // Skip leading attributes (balanced parentheses).
    fn attributes(mut s: &str) -> &str {
        while let Some(rest) = s.trim_start().strip_prefix("__attribute__") {
            let mut depth = 0usize;
            let mut end = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            s = &rest[end..];
        }
        s.trim_start()
    }
    let mut names = Vec::new();
    for part in source.split("__kernel").skip(1) {
        let rest = attributes(part);
        let rest = rest.strip_prefix("void").map(attributes).unwrap_or(rest);
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            names.push(name);
        }
    }
    names
}

/// The characterizations of just the kernels `names` (those one algorithm launches).
pub fn subset(
    chars: &BTreeMap<String, KernelChar>,
    names: &[&str],
) -> BTreeMap<String, KernelChar> {
    chars
        .iter()
        .filter(|(k, _)| names.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Load and validate the characterizations of kernel file `kernels`: every table must name a
/// kernel of the .cl file, and every kernel must have a table.
pub fn characterizations(kernels: &KernelSource) -> Result<BTreeMap<String, KernelChar>> {
    let file = kernels.load()?;
    let stem = file.stem;
    let origin = file.toml_origin();
    let chars: BTreeMap<String, KernelChar> = toml::from_str(&file.characterization)
        .map_err(|e| Error::Config(format!("{origin}: {e}")))?;
    let names = kernel_names(&file.source);
    for k in chars.keys() {
        if !names.contains(k) {
            return Err(Error::Config(format!(
                "{origin}: [{k}] characterizes a kernel that {stem}.cl does not define (it has: {})",
                names.join(", ")
            )));
        }
    }
    for k in &names {
        if !chars.contains_key(k) {
            return Err(Error::Config(format!(
                "{origin}: kernel '{k}' of {stem}.cl has no characterization; add a [{k}] table \
                 with dims, access, load, sharing and grid"
            )));
        }
    }
    for (k, c) in &chars {
        if c.dims != 1 {
            return Err(Error::Config(format!(
                "{origin}: [{k}] dims = {}: only 1 is supported",
                c.dims
            )));
        }
    }
    Ok(chars)
}

/// The reason of a value set in the config, before [`Tuner::params`] names the key.
const CONFIG: &str = "set in the config";

/// Where a parameter's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Set in the config.
    Config,
    /// Measured by `tuccompi tune` (the tuning cache).
    Cache,
    /// Predicted by the rules.
    Predicted,
    /// Fixed by the kernel's characterization (`local = N`) or by the plugin's code, which
    /// depends on it.
    Fixed,
}

impl Source {
    /// The origin as `report.json` and `tuccompi check` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Config => "config",
            Source::Cache => "cache",
            Source::Predicted => "predicted",
            Source::Fixed => "fixed",
        }
    }
}

/// A chosen value with its origin and reason.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Choice {
    /// The value.
    pub value: usize,
    /// Config, cache, predicted or fixed.
    pub source: Source,
    /// Why.
    pub reason: String,
}

/// The problem's shape, as the tuner sees it, in a plugin's terms. How [`predict`] uses each
/// field is in README.md ("Kernel characterizations and tuning", with a worked example).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Work-items one task launches: the data items of a task (the elements of a row; the paths of a
    /// Monte Carlo task; the numbers of a Collatz block). Tasks per launch (`batch`) fill the device
    /// with `batch × n` items (compute units × max work-group × 16 on a GPU, × 1 on a CPU
    /// device, 1..256 tasks); groups per task for `grid = "groups"` kernels are at most
    /// `n / local`.
    pub n: usize,
    /// Device bytes one task holds while in flight (per-task state; a task's output buffer):
    /// the batch is capped so that `queues × batch × bytes_per_task + shared_bytes` stays
    /// within 40% of device memory.
    pub bytes_per_task: u64,
    /// Device bytes uploaded once per device and read by every task (an input matrix or index;
    /// 0 when the tasks share nothing).
    pub shared_bytes: u64,
}

impl Shape {
    /// `n` work-items per task, no per-task or shared device bytes.
    pub fn items(n: usize) -> Shape {
        Shape {
            n,
            bytes_per_task: 0,
            shared_bytes: 0,
        }
    }
}

impl Choice {
    /// A value the plugin's code fixes, with the reason ([`Source::Fixed`]).
    pub fn fixed(value: usize, reason: impl Into<String>) -> Self {
        Choice {
            value,
            source: Source::Fixed,
            reason: reason.into(),
        }
    }
}

/// Launch parameters for a GPU half: what the runtime needs (`batch` is the tasks a queue asks
/// for per chunk, `queues` the in-order queues per device) and what the half's launches use.
/// Serialized only for `report.json` and `tuccompi check`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LaunchParams {
    /// Local size per kernel.
    pub local: BTreeMap<String, Choice>,
    /// Tasks per batch.
    pub batch: Choice,
    /// Work-groups per task, only where a launched kernel has `grid = "groups"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_per_task: Option<Choice>,
    /// In-order queues on the device.
    pub queues: Choice,
    /// Work-items of the persistent grid, only where a launched kernel has `grid =
    /// "persistent"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_items: Option<Choice>,
    /// The tuning cache's key these parameters were looked up under (`None`: no lookup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// The plugin's own parameters by name: those `tune` measured ([`Knob::own`]; from the
    /// tuning cache or a candidate being timed) and those the GPU half chose by its own rules
    /// ([`LaunchParams::set_knob`]). Read them with [`LaunchParams::knob`].
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: BTreeMap<String, Choice>,
    /// The plugin's own rules, one line each ([`LaunchParams::add_rule`]); `check` prints them
    /// after the generic rules that chose the other values ([`LaunchParams::applied_rules`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
}

/// A tuning rule as `check` prints it: its name (a generic rule's, [`GenericRule::name`]),
/// when it applies, and what it chooses and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rule {
    /// The generic rule's name (`None`: a plugin's own rule, named by `when`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The parameter and the case (`batch (tasks per launch)`).
    pub when: String,
    /// The value it gives and the measurement behind it.
    pub what: String,
}

impl LaunchParams {
    /// The value of the plugin's own parameter `name`: what `tune` stored (or the candidate
    /// being timed), or what the GPU half set with [`set_knob`](Self::set_knob); `None` when
    /// there is none: the plugin then takes its own default.
    pub fn knob(&self, name: &str) -> Option<usize> {
        self.knobs.get(name).map(|c| c.value)
    }

    /// The plugin's own parameter `name` with its origin and reason, as `check` and
    /// `report.json` show it (`None`: not set).
    pub fn knob_choice(&self, name: &str) -> Option<&Choice> {
        self.knobs.get(name)
    }

    /// Set the plugin's own parameter `name` (a word: `check` and `report.json` name it so),
    /// replacing what was there.
    pub fn set_knob(&mut self, name: &str, choice: Choice) {
        self.knobs.insert(name.to_string(), choice);
    }

    /// Add the rule `when: what` to those `check` prints, unless one of that `when` is there.
    pub fn add_rule(&mut self, when: &str, what: &str) {
        if !self.rules.iter().any(|r| r.when == when) {
            self.rules.push(Rule {
                name: None,
                when: when.to_string(),
                what: what.to_string(),
            });
        }
    }

    /// The rules that chose these parameters: the generic rules ([`GenericRule`]) whose text
    /// is the reason (or part of it) of a value shown, in [`GenericRule::ALL`]'s order, then the
    /// plugin's own. A value the plugin's code fixed afterwards brings no generic rule.
    pub fn applied_rules(&self) -> Vec<Rule> {
        let reasons: Vec<&str> = self
            .local
            .values()
            .chain([&self.batch, &self.queues])
            .chain(self.groups_per_task.iter())
            .chain(self.persistent_items.iter())
            .chain(self.knobs.values())
            .map(|c| c.reason.as_str())
            .collect();
        let mut out: Vec<Rule> = GenericRule::ALL
            .iter()
            .filter(|rule| reasons.iter().any(|r| r.contains(rule.what())))
            .map(|rule| rule.rule())
            .collect();
        out.extend(self.rules.iter().cloned());
        out
    }

    /// Work-groups per task of `grid = "groups"` kernels (1 when none is launched).
    pub fn groups_per_task(&self) -> usize {
        self.groups_per_task.as_ref().map_or(1, |c| c.value)
    }

    /// Work-items of the persistent grid (0 when no `grid = "persistent"` kernel is launched).
    pub fn persistent_items(&self) -> usize {
        self.persistent_items.as_ref().map_or(0, |c| c.value)
    }

    /// The local size chosen for kernel `name` (0 = the driver's choice). A name the
    /// parameters were not chosen for (a typo, or a kernel missing from the half's
    /// [`Request::launched`]) is an error naming it and the kernels that have parameters.
    pub fn local(&self, name: &str) -> Result<usize> {
        match self.local.get(name) {
            Some(c) => Ok(c.value),
            None => {
                let known: Vec<&str> = self.local.keys().map(|k| k.as_str()).collect();
                Err(Error::Config(format!(
                    "no launch parameters for kernel '{name}' (the parameters were chosen for \
                     {}): a bug in the GPU half; name a kernel it listed in Request::launched, \
                     or list '{name}' there",
                    if known.is_empty() {
                        "no kernel".to_string()
                    } else {
                        known.join(", ")
                    }
                )))
            }
        }
    }
}

/// A value of the plugin's config table that overrides a prediction, with the key that set it
/// (the reason shown in the report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The value.
    pub value: usize,
    /// Where it was set, as the user wrote it (`[myplugin] batch`).
    pub key: String,
}

impl Setting {
    /// `value`, set by config key `key`; `None` when the config leaves it to the tuner.
    pub fn from_config(value: Option<usize>, key: &str) -> Option<Self> {
        value.map(|value| Setting {
            value,
            key: key.to_string(),
        })
    }
}

/// What a GPU half asks the tuner for.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The kernel file.
    pub kernels: &'a KernelSource,
    /// The kernels of that file this half launches (their characterizations drive the rules).
    pub launched: &'a [&'a str],
    /// The kernel set's name in the tuning cache (`myplugin.variant.u32`); `None`: the
    /// default, the plugin's name and the launched kernels (`myplugin.k1+k2`, see
    /// [`Tuner::plugin`]), so that every GPU half can be tuned with no change.
    pub cache_name: Option<String>,
    /// The problem's shape.
    pub shape: Shape,
    /// Tasks per batch set in the plugin's config table.
    pub batch: Option<Setting>,
    /// Local size set in the plugin's config table (0 = the driver's choice where allowed).
    pub local_size: Option<Setting>,
}

impl<'a> Request<'a> {
    /// A request for kernels `launched` of `kernels` on a problem of `shape`, with nothing set in
    /// the config and the default cache name (set the other fields to change that).
    pub fn new(kernels: &'a KernelSource, launched: &'a [&'a str], shape: Shape) -> Self {
        Request {
            kernels,
            launched,
            cache_name: None,
            shape,
            batch: None,
            local_size: None,
        }
    }
}

/// Whether the tuner reads the tuning cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheUse {
    /// Read it: config > cache > prediction (runs, `check`).
    #[default]
    Read,
    /// Ignore it (`tuccompi tune`, so the prediction it compares against is the rules' own).
    Ignore,
}

/// The tuning layer's handle, given to GPU halves: turns a [`Request`] into [`LaunchParams`].
#[derive(Debug, Clone, Default)]
pub struct Tuner {
    queues: Option<usize>,
    /// The plugin's name: the first part of a default cache name.
    plugin: Option<String>,
    cache: CacheUse,
    /// A candidate `tune` is timing: it wins over the config, the cache and the prediction
    /// (only the kernels' fixed values and the plugin's own code win over it).
    trial: Option<CacheEntry>,
}

impl Tuner {
    /// A tuner for a run whose config sets `units.concurrent_kernels` to `queues` (`None`:
    /// "auto"), reading the tuning cache or not.
    pub fn new(queues: Option<usize>, cache: CacheUse) -> Self {
        Tuner {
            queues,
            plugin: None,
            cache,
            trial: None,
        }
    }

    /// This tuner for plugin `name`: a [`Request`] without a cache name is looked up (and
    /// stored by `tune`) under `name.kernel+kernel` (its launched kernels). Without it, the
    /// kernel file's stem takes the plugin name's place.
    pub fn plugin(mut self, name: &str) -> Self {
        self.plugin = Some(name.to_string());
        self
    }

    /// The cache name of `req`: its own, else the plugin's name (or the kernel file's stem)
    /// and the kernels it launches.
    fn cache_name(&self, req: &Request<'_>) -> String {
        if let Some(n) = &req.cache_name {
            return n.clone();
        }
        let owner = self.plugin.as_deref().unwrap_or(req.kernels.stem);
        format!("{owner}.{}", req.launched.join("+"))
    }

    /// This tuner with candidate `trial` in place of the tuning cache and of the config's
    /// `batch` and `local_size` (for the values it holds): what `tune` times.
    pub fn trying(&self, trial: CacheEntry) -> Self {
        Tuner {
            trial: Some(trial),
            ..self.clone()
        }
    }

    /// Launch parameters for `req` on `dev`: config > tuning cache > prediction, each with its
    /// origin and reason. Errors when the characterizations do not match the kernel file (a
    /// tuning cache that cannot be used is left alone with a warning: [`Cache::read`]).
    pub fn params(&self, dev: &DeviceInfo, req: Request<'_>) -> Result<LaunchParams> {
        let all = characterizations(req.kernels)?;
        let chars = subset(&all, req.launched);
        for k in req.launched {
            let Some(c) = chars.get(*k) else {
                let known: Vec<&str> = all.keys().map(|k| k.as_str()).collect();
                return Err(Error::Config(format!(
                    "{}.cl has no kernel '{k}'; it declares {} (a bug in the GPU half that \
                     launches it: Request::launched names its kernels)",
                    req.kernels.stem,
                    known.join(", ")
                )));
            };
            if let Some(l) = c.local.filter(|&l| l > dev.max_work_group) {
                return Err(Error::Device(format!(
                    "kernel '{k}' of {}.cl needs work-groups of {l} items, but '{}' allows at most \
                     {}; run it on CPU workers (units.opencl = \"none\") or another device",
                    req.kernels.stem, dev.name, dev.max_work_group
                )));
            }
        }
        check_settings(dev, &req)?;
        let key = Some(cache_key(dev, &self.cache_name(&req), req.shape.n));
        let cached = match (&key, self.cache, &self.trial) {
            (_, _, Some(t)) => Some(t.clone()),
            (Some(k), CacheUse::Read, None) => Cache::read().entries.get(k).cloned(),
            _ => None,
        };
        // A candidate being timed replaces the config's values it holds.
        let trial = self.trial.as_ref();
        let batch = req
            .batch
            .as_ref()
            .filter(|_| trial.is_none_or(|t| t.batch.is_none()));
        let local_size = req
            .local_size
            .as_ref()
            .filter(|_| trial.is_none_or(|t| t.local_size.is_none()));
        let knobs = cached.as_ref().map(|c| c.knobs.clone()).unwrap_or_default();
        let mut p = choose(
            &chars,
            dev,
            req.shape,
            batch.map(|s| s.value),
            self.queues,
            local_size.map(|s| s.value),
            cached,
        );
        // The config's own key names the reason.
        if let Some(s) = batch {
            p.batch.reason = p.batch.reason.replacen(CONFIG, &s.key, 1);
        }
        if let Some(s) = local_size {
            for c in p.local.values_mut() {
                c.reason = c.reason.replacen(CONFIG, &s.key, 1);
            }
        }
        let why = if self.trial.is_some() {
            "a candidate tune is timing"
        } else {
            "measured by tune"
        };
        p.knobs = knobs
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    Choice {
                        value: v,
                        source: Source::Cache,
                        reason: why.into(),
                    },
                )
            })
            .collect();
        p.cache_key = key;
        Ok(p)
    }
}

/// Refuse values set in the config that the device cannot take, naming the key: a batch of 0
/// (nothing would run, and the rules divide by it), a batch whose per-task state alone exceeds
/// the device's memory, a local size above the device's work-group limit.
fn check_settings(dev: &DeviceInfo, req: &Request<'_>) -> Result<()> {
    if let Some(s) = &req.batch {
        if s.value == 0 {
            return Err(Error::Config(format!(
                "{} = 0: a batch runs at least one task; use N >= 1 or \"auto\"",
                s.key
            )));
        }
        let need = (s.value as u128) * (req.shape.bytes_per_task.max(1) as u128)
            + req.shape.shared_bytes as u128;
        if need > dev.global_mem as u128 {
            let most = (dev.global_mem.saturating_sub(req.shape.shared_bytes)
                / req.shape.bytes_per_task.max(1))
            .max(1);
            return Err(Error::Config(format!(
                "{} = {}: the batch's state ({:.1} GiB) does not fit '{}' ({:.1} GiB); use at \
                 most {most} or \"auto\"",
                s.key,
                s.value,
                need as f64 / (1u64 << 30) as f64,
                dev.name,
                dev.global_mem as f64 / (1u64 << 30) as f64
            )));
        }
    }
    if let Some(s) = req
        .local_size
        .as_ref()
        .filter(|s| s.value > dev.max_work_group)
    {
        return Err(Error::Config(format!(
            "{} = {}: '{}' runs work-groups of at most {} items; use 1..={}, 0 (the driver's \
             choice) or \"auto\"",
            s.key, s.value, dev.name, dev.max_work_group, dev.max_work_group
        )));
    }
    Ok(())
}

/// The generic prediction rules, by name: each gives [`predict`] a value (its text is the
/// value's reason, or part of it), and `check` prints those behind the values it shows
/// ([`LaunchParams::applied_rules`]), by name, with when each applies and what it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenericRule {
    /// Local size on a GPU of a kernel with scatter access or a medium/high load.
    LocalScatterOrHeavy,
    /// Local size on a GPU of a coalesced kernel with a low load.
    LocalStreaming,
    /// Local size on a CPU device (PoCL).
    LocalCpuDevice,
    /// Local size of a reduction kernel: a power of two.
    LocalReduction,
    /// Tasks per launch: enough items to fill the device.
    BatchFill,
    /// Work-groups per task of reduction kernels (`grid = "groups"`).
    GroupsPerTask,
    /// Tasks per launch of work-list kernels (a persistent grid).
    BatchWorkList,
    /// Work-items of a persistent grid.
    PersistentGrid,
    /// In-order queues per device.
    Queues,
}

impl GenericRule {
    /// Every rule, in the order `check` lists them.
    pub const ALL: [GenericRule; 9] = [
        GenericRule::LocalScatterOrHeavy,
        GenericRule::LocalStreaming,
        GenericRule::LocalCpuDevice,
        GenericRule::LocalReduction,
        GenericRule::BatchFill,
        GenericRule::GroupsPerTask,
        GenericRule::BatchWorkList,
        GenericRule::PersistentGrid,
        GenericRule::Queues,
    ];

    /// The rule's name, as `check` cites it (`batch-fill`).
    pub fn name(self) -> &'static str {
        match self {
            GenericRule::LocalScatterOrHeavy => "local-scatter-or-heavy",
            GenericRule::LocalStreaming => "local-streaming",
            GenericRule::LocalCpuDevice => "local-cpu-device",
            GenericRule::LocalReduction => "local-reduction",
            GenericRule::BatchFill => "batch-fill",
            GenericRule::GroupsPerTask => "groups-per-task",
            GenericRule::BatchWorkList => "batch-work-list",
            GenericRule::PersistentGrid => "persistent-grid",
            GenericRule::Queues => "queues",
        }
    }

    /// When it applies: the parameter and the case (`batch (tasks per launch)`).
    pub fn when(self) -> &'static str {
        match self {
            GenericRule::LocalScatterOrHeavy => {
                "local size, GPU, scatter access or medium/high load"
            }
            GenericRule::LocalStreaming => "local size, GPU, coalesced and low load",
            GenericRule::LocalCpuDevice => "local size, CPU device (PoCL)",
            GenericRule::LocalReduction => "local size, reduction kernels",
            GenericRule::BatchFill => "batch (tasks per launch)",
            GenericRule::GroupsPerTask => "groups per task (reductions)",
            GenericRule::BatchWorkList => "batch, work-list kernels (a persistent grid)",
            GenericRule::PersistentGrid => "persistent grid",
            GenericRule::Queues => "queues",
        }
    }

    /// The value it gives and the measurement behind it: the reason of each value it gives.
    pub fn what(self) -> &'static str {
        match self {
            GenericRule::LocalScatterOrHeavy => "256: on an H100, `tuccompi tune` found 256-512 best for the irregular SSSP kernels (work list within 3% of the best on bremen and moscow; 128 was 8-14% slower)",
            GenericRule::LocalStreaming => "256: wide groups stream memory; 256 is a multiple of every vendor's SIMD width (32/64)",
            GenericRule::LocalCpuDevice => "the device's preferred 64 (capped by max work-group): PoCL vectorizes across a group's items",
            GenericRule::LocalReduction => "rounded down to a power of two, as the tree needs",
            GenericRule::BatchFill => "enough items to fill the device: compute units x max work-group x 16 items (GPU; x 1 for CPU devices) / n, between 1 and 256 but never fewer than the device's resident items (compute units x 2048 on a GPU, x max work-group on a CPU device) / n over the queues, so that a kernel of one work-item per task fills it; at most 40% of device memory over all queues (H100: twice the old x 8 batch ran 1-22% faster for crauser and two-phase)",
            GenericRule::GroupsPerTask => "4 groups per compute unit spread over the batch, at least 1 and no more than n / local",
            GenericRule::BatchWorkList => "GPU: 2^28 / n rounded down to a power of two, within 256..1024 (frontiers are sparse, so only many sources fill the device; on an H100 osm-bremen-dist ran best at 1024, osm-moscow at 512); CPU devices: 16; capped by 40% of device memory over all queues",
            GenericRule::PersistentGrid => "GPU: compute units x 2048 items (every resident thread of an NVIDIA SM / AMD CU); CPU devices: compute units x local size",
            GenericRule::Queues => "1 on every device: no kernel measured ran faster from several queues than from one (on an H200 through NVIDIA OpenCL the kNN example's kernels ran one after another from 4 queues, each twice as long: 3.7-4.9 s against 2.3 s; collatz 0.399-0.403 s against 0.397 s; the work list 0.51x at 4 queues on an H100); units.concurrent_kernels sets more",
        }
    }

    /// The rule as `check` prints it.
    pub fn rule(self) -> Rule {
        Rule {
            name: Some(self.name().to_string()),
            when: self.when().to_string(),
            what: self.what().to_string(),
        }
    }
}

/// Launch parameters with the run-time precedence: a value set in the config, else the tuning
/// cache's (`cached`), else the prediction. The local size from the cache applies to kernels
/// that need no particular local size (not reductions, not persistent grids sized by it).
pub fn choose(
    chars: &BTreeMap<String, KernelChar>,
    dev: &DeviceInfo,
    shape: Shape,
    config_batch: Option<usize>,
    config_queues: Option<usize>,
    config_local: Option<usize>,
    cached: Option<CacheEntry>,
) -> LaunchParams {
    let mut p = predict(chars, dev, shape, config_batch, config_queues, config_local);
    let Some(c) = cached else { return p };
    let fixed = |name: &str| chars[name].local.is_some();
    if config_batch.is_none() {
        if let Some(b) = c.batch {
            p.batch = Choice {
                value: b,
                source: Source::Cache,
                reason: "measured by tune".into(),
            };
        }
    }
    if config_local.is_none() {
        if let Some(l) = c.local_size {
            for (name, ch) in chars {
                // Reductions need a power of two; a persistent grid's local memory is sized by
                // its local size, so it cannot be the driver's (0).
                let free = !ch.reduction
                    && !fixed(name)
                    && (ch.grid == Grid::Items || (ch.grid == Grid::Persistent && l > 0));
                if free {
                    p.local.insert(
                        name.clone(),
                        Choice {
                            value: l,
                            source: Source::Cache,
                            reason: "measured by tune (0 = the driver's choice)".into(),
                        },
                    );
                }
            }
        }
    }
    p
}

/// Work-items a device keeps resident at once: compute units x 2048 on a GPU (every thread an
/// NVIDIA SM or AMD CU holds), compute units x max work-group on a CPU device.
pub fn resident_items(dev: &DeviceInfo) -> usize {
    let per_unit = if dev.kind == "gpu" {
        2048
    } else {
        dev.max_work_group.max(1)
    };
    (dev.compute_units as usize).max(1) * per_unit
}

/// Tasks per launch that fill `dev` when each task launches `n` work-items (before the memory
/// cap): compute units x max work-group x 16 items on a GPU (x 1 on a CPU device) over `n`,
/// between 1 and 256 tasks, but never fewer than the tasks whose items keep every resident
/// work-item busy ([`resident_items`] / `n`, shared by the 4 queues such small tasks get on a
/// GPU): a kernel with one work-item per task gets a batch the size of the device, not 256.
pub fn fill_batch(dev: &DeviceInfo, n: usize) -> usize {
    let gpu = dev.kind == "gpu";
    let n = n.max(1);
    let fill =
        (dev.compute_units as usize).max(1) * dev.max_work_group.max(1) * if gpu { 16 } else { 1 };
    let queues = if gpu { 4 } else { 1 };
    fill.div_ceil(n)
        .clamp(1, 256)
        .max(resident_items(dev).div_ceil(n * queues))
}

/// Predict launch parameters for kernels `chars` on `dev` for `shape`; `batch` and `queues`
/// set in the config override the prediction.
pub fn predict(
    chars: &BTreeMap<String, KernelChar>,
    dev: &DeviceInfo,
    shape: Shape,
    config_batch: Option<usize>,
    config_queues: Option<usize>,
    config_local: Option<usize>,
) -> LaunchParams {
    let local = predict_local(chars, dev, config_local);
    let queues = predict_queues(config_queues);
    let batch = predict_batch(chars, dev, shape, config_batch, queues.value);
    let gpu = dev.kind == "gpu";
    // The largest local size among the kernels of one grid kind (64 when there are none).
    let max_local = |grid: Grid| {
        chars
            .iter()
            .filter(|(_, c)| c.grid == grid)
            .map(|(k, _)| local[k].value)
            .max()
            .unwrap_or(64)
    };
    let has = |grid: Grid| chars.values().any(|c| c.grid == grid);
    // Rule *persistent-grid*.
    let plocal = max_local(Grid::Persistent);
    let pitems = dev.compute_units as usize * if gpu { 2048 } else { plocal };
    let persistent_items = has(Grid::Persistent).then(|| Choice {
        value: pitems.div_ceil(plocal) * plocal,
        source: Source::Predicted,
        reason: GenericRule::PersistentGrid.what().into(),
    });
    // Rule *groups-per-task*.
    let red_local = max_local(Grid::Groups);
    let gpt = (dev.compute_units as usize * 4)
        .div_ceil(batch.value)
        .clamp(1, shape.n.div_ceil(red_local).max(1));
    LaunchParams {
        local,
        batch,
        groups_per_task: has(Grid::Groups).then(|| Choice {
            value: gpt,
            source: Source::Predicted,
            reason: GenericRule::GroupsPerTask.what().into(),
        }),
        queues,
        persistent_items,
        cache_key: None,
        knobs: BTreeMap::new(),
        rules: Vec::new(),
    }
}

/// The largest power of two at most `x` (1 for 0).
fn pow2_floor(x: usize) -> usize {
    if x == 0 {
        1
    } else {
        1usize << (usize::BITS - 1 - x.leading_zeros())
    }
}

/// Each kernel's local size: fixed by its characterization, the driver's choice (config 0,
/// where the kernel can take it), the config's, or rules *local-cpu-device*,
/// *local-scatter-or-heavy* and *local-streaming* (then *local-reduction* for a reduction);
/// within the device's work-group limit.
fn predict_local(
    chars: &BTreeMap<String, KernelChar>,
    dev: &DeviceInfo,
    config_local: Option<usize>,
) -> BTreeMap<String, Choice> {
    let gpu = dev.kind == "gpu";
    let maxwg = dev.max_work_group.max(1);
    let mut local = BTreeMap::new();
    // local_size = 0 asks for the driver's choice, which only kernels with no local-memory
    // needs can take (items grids, no reduction); the others keep the prediction.
    let driver = config_local == Some(0);
    let config_local = config_local.filter(|&l| l > 0);
    for (name, c) in chars {
        if let Some(l) = c.local {
            let reason = format!(
                "local = {l} in the kernel's characterization: its code is written for work-groups of exactly {l} items"
            );
            local.insert(name.clone(), Choice::fixed(l, reason));
            continue;
        }
        if driver && c.grid == Grid::Items && !c.reduction {
            local.insert(
                name.clone(),
                Choice {
                    value: 0,
                    source: Source::Config,
                    reason: "local_size = 0: the driver's choice".into(),
                },
            );
            continue;
        }
        let (mut v, mut reason) = if let Some(l) = config_local {
            (l, CONFIG.to_string())
        } else if !gpu {
            (64, GenericRule::LocalCpuDevice.what().to_string())
        } else if c.access == Access::Scatter || c.load >= Level::Medium {
            (256, GenericRule::LocalScatterOrHeavy.what().to_string())
        } else {
            (256, GenericRule::LocalStreaming.what().to_string())
        };
        v = v.clamp(1, maxwg);
        if c.reduction && !v.is_power_of_two() {
            v = pow2_floor(v);
            reason.push_str("; ");
            reason.push_str(GenericRule::LocalReduction.what());
        }
        let source = if config_local.is_some() {
            Source::Config
        } else {
            Source::Predicted
        };
        local.insert(
            name.clone(),
            Choice {
                value: v,
                source,
                reason,
            },
        );
    }
    local
}

/// The in-order queues per device: `units.concurrent_kernels`, else rule *queues*.
fn predict_queues(config_queues: Option<usize>) -> Choice {
    if let Some(q) = config_queues {
        return Choice {
            value: q,
            source: Source::Config,
            reason: "units.concurrent_kernels".into(),
        };
    }
    // No kernel measured ran faster from several queues than from one (rule *queues*).
    Choice {
        value: 1,
        source: Source::Predicted,
        reason: GenericRule::Queues.what().into(),
    }
}

/// Tasks per batch: the config's, else rule *batch-work-list* (a persistent grid) or
/// *batch-fill*, capped by 40% of device memory over the `queues`.
fn predict_batch(
    chars: &BTreeMap<String, KernelChar>,
    dev: &DeviceInfo,
    shape: Shape,
    config_batch: Option<usize>,
    queues: usize,
) -> Choice {
    if let Some(b) = config_batch {
        return Choice {
            value: b,
            source: Source::Config,
            reason: CONFIG.into(),
        };
    }
    let mem_cap = ((dev.global_mem as f64 * 0.4 - shape.shared_bytes as f64).max(0.0)
        / (queues as f64 * shape.bytes_per_task.max(1) as f64)) as usize;
    if chars.values().any(|c| c.grid == Grid::Persistent) {
        let b = if dev.kind == "gpu" {
            pow2_floor((1usize << 28) / shape.n.max(1)).clamp(256, 1024)
        } else {
            16
        };
        return Choice {
            value: b.min(mem_cap.max(1)),
            source: Source::Predicted,
            reason: GenericRule::BatchWorkList.what().into(),
        };
    }
    Choice {
        value: fill_batch(dev, shape.n).min(mem_cap.max(1)),
        source: Source::Predicted,
        reason: GenericRule::BatchFill.what().into(),
    }
}

#[cfg(test)]
mod test;
