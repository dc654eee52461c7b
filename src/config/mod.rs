//! Configuration: the raw TOML mirror (`raw`), `--set` overrides, and the validated [`Plan`].
//!
//! Two stages, as in ripgrep: what the user typed, as close to the file as possible, then a plan
//! with every default filled in and every value checked. Unknown keys are rejected by name.

mod origin;
mod raw;

pub use origin::Origins;
pub use raw::{write_ids, AutoOr, DeviceSel, NodePolicy, OnFailure, Policy, Tasks};

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Which units run, after defaults.
#[derive(Debug, Clone)]
pub struct UnitsPlan {
    /// Number of CPU workers (0 = none). With `"auto"` this is every core, and the runtime
    /// leaves one core to the host thread of each GPU queue.
    pub cpu_workers: usize,
    /// Whether `cpu_workers` was "auto".
    pub cpu_workers_auto: bool,
    /// Which OpenCL devices to use.
    pub opencl: DeviceSel,
    /// Device type filter: "gpu", "cpu", "accelerator" or "all".
    pub device_type: String,
    /// In-order queues per device (`None` = chosen by the tuner).
    pub concurrent_kernels: Option<usize>,
    /// What happens when a unit fails.
    pub on_failure: OnFailure,
}

/// How tasks are shared out within a node.
#[derive(Debug, Clone)]
pub struct SchedulerPlan {
    /// Equitable (static) or work-queue (dynamic).
    pub policy: Policy,
    /// Tasks per pull for CPU workers (`None` = automatic).
    pub chunk: Option<usize>,
    /// Tasks per pull for GPU queues (`None` = the GPU half's batch).
    pub gpu_chunk: Option<usize>,
    /// Start the work queue from the speed history and store the run's models in it (when
    /// the caller keeps one: [`crate::RunOptions::speed_history`]).
    pub history: bool,
    /// The equitable policy's shares: equal, or proportional to the units' known speeds.
    pub shares: Shares,
    /// The work queue's rule *give back*: a CPU worker gives back the rest of its chunk while
    /// a unit waits with nothing to run (`scheduler.give_back`, default true).
    pub give_back: bool,
    /// The work queue's rule *device rate*: the queues of a device share one model of its
    /// combined rate (`scheduler.device_rate`, default true).
    pub device_rate: bool,
    /// The work queue's rule *small probe*: a device's first probe is at most a quarter of the
    /// tasks (`scheduler.small_probe`, default true).
    pub small_probe: bool,
    /// The work queue's rule *hand over*: near the end a CPU worker hands the rest of its
    /// chunk to a device that would finish all that is left first (`scheduler.hand_over`,
    /// default true).
    pub hand_over: bool,
    /// The work queue's rule *busy queues*: a device with several queues hands work to only
    /// as many of them as raise its combined rate (`scheduler.busy_queues`, default false).
    pub busy_queues: bool,
}

impl SchedulerPlan {
    /// The defaults of policy `policy`: automatic chunks, the history on, equal shares.
    pub fn with_policy(policy: Policy) -> Self {
        SchedulerPlan {
            policy,
            chunk: None,
            gpu_chunk: None,
            history: true,
            shares: Shares::Equal,
            give_back: true,
            device_rate: true,
            small_probe: true,
            hand_over: true,
            busy_queues: false,
        }
    }
}

/// `scheduler.shares`: how the equitable policy splits the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shares {
    /// One equal share per unit, as the TuCCompi thesis defines the policy.
    #[default]
    Equal,
    /// Shares proportional to each unit's speed as the speed history holds it (a work-queue
    /// run of the same job stores it): the thesis' equitable policy "correctly tuned
    /// accordingly with the load distribution".
    Speed,
}

/// Where results go.
#[derive(Debug, Clone)]
pub struct OutputPlan {
    /// Output directory (created if missing).
    pub dir: PathBuf,
    /// Write a Chrome-trace/Perfetto JSON file of the schedule.
    pub trace: bool,
    /// Seconds between syncs of the journal (and of the bulk files before it); 0 = every chunk.
    pub sync_seconds: f64,
    /// Seconds between progress lines when stderr is not a terminal (a batch log); 0 = none.
    pub progress_seconds: f64,
}

/// Cross-checks of accelerator results.
#[derive(Debug, Clone)]
pub struct VerifyPlan {
    /// Tasks run by an accelerator to re-run on the CPU half and compare (0 = none); `None`
    /// (`"auto"`, the default): a few, as long as they cost about 1% of the run (see
    /// `runtime::verify`).
    pub sample: Option<usize>,
    /// `verify.f32_absolute`, `f32_relative`, `f64_absolute`, `f64_relative`: the tolerances
    /// of the records' float fields, replacing the plugin's own where set.
    pub tolerances: FloatTolerances,
}

/// `[verify]`'s float tolerances as the config sets them (`None`: the plugin's own). Two
/// values agree when they differ by at most the absolute tolerance, or by at most the relative
/// one times the larger magnitude.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FloatTolerances {
    /// `verify.f32_absolute`
    pub f32_absolute: Option<f64>,
    /// `verify.f32_relative`
    pub f32_relative: Option<f64>,
    /// `verify.f64_absolute`
    pub f64_absolute: Option<f64>,
    /// `verify.f64_relative`
    pub f64_relative: Option<f64>,
}

/// How tasks are shared out among nodes (MPI ranks).
#[derive(Debug, Clone)]
pub struct NodesPlan {
    /// Master-slave (dynamic) or equitable (static).
    pub policy: NodePolicy,
    /// Whether rank 0 also computes under master-slave.
    pub master_computes: bool,
    /// Tasks per request under master-slave (`None` = automatic).
    pub chunk: Option<usize>,
}

/// A validated run plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The config file's path (for messages).
    pub config_path: PathBuf,
    /// The final TOML text after overrides (what MPI broadcasts).
    pub resolved_toml: String,
    /// The `--set KEY=VALUE` overrides applied, in order (for the report).
    pub overrides: Vec<String>,
    /// Plugin name.
    pub plugin: String,
    /// Which tasks to run (`run.tasks`). A `{ file = PATH }` stays unread here: the plugin
    /// reads it, declares it among its job's inputs, and names its lines in messages.
    pub tasks: Tasks,
    /// Keys of `[run]` and `[output]` the framework does not know, by dotted key: the plugin's
    /// own keys under their former names ([`Plan::with_renamed_keys`] moves them into its
    /// table), or mistakes, refused then.
    pub unclaimed: std::collections::BTreeMap<String, toml::Value>,
    /// The keys [`Plan::with_renamed_keys`] moved, by former dotted key.
    pub renamed: Vec<String>,
    /// Units.
    pub units: UnitsPlan,
    /// Scheduler.
    pub scheduler: SchedulerPlan,
    /// Output.
    pub output: OutputPlan,
    /// Node layer.
    pub nodes: NodesPlan,
    /// Cross-checks.
    pub verify: VerifyPlan,
    /// The plugin's own table (`[apsp]` for plugin "apsp"), empty when absent.
    pub plugin_options: toml::Table,
    /// Every plugin table in the file, by name (checked against the registry at run time).
    pub other_tables: std::collections::BTreeMap<String, toml::Table>,
    /// Where each key's value came from (a `--set`, a line of the file), for messages.
    pub origins: Origins,
}

/// The largest config file read, in bytes. A config is a few lines of text; the bound keeps a
/// wrong path (`/dev/zero`, a graph file, a log) from being read into memory whole.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The longest `--set` (or `TUCCOMPI_UNITS`) assignment, in bytes; the longest honest one is a
/// `run.tasks` list of some ten thousand ids.
pub const MAX_SET_BYTES: usize = 1 << 20;
/// The most dotted parts a `--set` key may have (a config's own keys have at most four).
pub const MAX_KEY_PARTS: usize = 64;

/// Read a config file of at most [`MAX_CONFIG_BYTES`], as UTF-8 text.
fn read_config(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    if path == Path::new(STDIN) {
        std::io::stdin()
            .lock()
            .take(MAX_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("standard input", e))?;
    } else {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        file.take(MAX_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
    }
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Error::Config(format!(
            "{}: more than {} MiB; a config is a short TOML file (data files are named in it, \
             long lists go in files of their own): check that this is the config file",
            path.display(),
            MAX_CONFIG_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::Config(format!(
            "{}:{line}: not UTF-8 text (byte {at}); TOML files are UTF-8: save it as UTF-8",
            path.display()
        ))
    })
}

impl Plan {
    /// Read a config file (`-`: standard input) and apply `key=value` overrides.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Plan> {
        let text = read_config(path)?;
        Self::from_toml(&text, path, overrides)
    }

    /// Build a plan from TOML text; `path` names it in messages.
    pub fn from_toml(text: &str, path: &Path, overrides: &[String]) -> Result<Plan> {
        Self::with_sets(text, Origins::new(path, text, overrides), overrides)
    }

    fn with_sets(text: &str, origins: Origins, overrides: &[String]) -> Result<Plan> {
        if let Some(o) = overrides.iter().find(|o| o.len() > MAX_SET_BYTES) {
            let key = o.split_once('=').map_or("", |(k, _)| k.trim());
            return Err(Error::Config(format!(
                "--set {key}=...: the value is {} bytes, more than the {} KiB a value may have; \
                 put long values in the config file",
                o.len(),
                MAX_SET_BYTES >> 10
            )));
        }
        // Parse into a typed mirror first: errors then carry the file's line and the key.
        let _: raw::RawConfig =
            toml::from_str(text).map_err(|e| file_error(origins.path(), text, e))?;
        let mut tree: toml::Table =
            toml::from_str(text).map_err(|e| file_error(origins.path(), text, e))?;
        for o in overrides {
            apply_override(&mut tree, o)?;
        }
        let resolved_toml = toml::to_string(&tree).map_err(|e| Error::Config(e.to_string()))?;
        let raw: raw::RawConfig = toml::from_str(&resolved_toml)
            .map_err(|e| override_error(&origins, &resolved_toml, e))?;
        let mut plan = raw.validate(origins, resolved_toml)?;
        plan.overrides = overrides.to_vec();
        Ok(plan)
    }

    /// The plugin's own table (`[table]`) as `T`, a serde struct with
    /// `#[serde(deny_unknown_fields)]`: a bad value is an error naming `table.key` and where it
    /// was set.
    pub fn options<T: serde::de::DeserializeOwned>(&self, table: &str) -> Result<T> {
        // The table asked for (the run's plugin's own is `plugin_options`; any other, such as a
        // table a plugin shares with another, comes from the file's tables), empty if absent.
        let empty = toml::Table::new();
        let t = if table == self.plugin {
            &self.plugin_options
        } else {
            self.other_tables.get(table).unwrap_or(&empty)
        };
        self.table(table, t)
    }

    /// The table `t`, found at the dotted key `table` (`input.generate`), as `T`, a serde
    /// struct with `#[serde(deny_unknown_fields)]`: a bad value is an error naming `table.key`
    /// and where it was set.
    pub fn table<T: serde::de::DeserializeOwned>(&self, table: &str, t: &toml::Table) -> Result<T> {
        // Through TOML text rather than the value tree: the error then has a span, and the
        // span gives the key.
        let text = toml::to_string(t).map_err(|e| Error::Config(e.to_string()))?;
        toml::from_str(&text).map_err(|e: toml::de::Error| {
            // A missing field is the table's: its span is only where the table starts.
            let key = match e.span() {
                Some(s) if !e.message().starts_with("missing field") => {
                    origin::key_at(&text, s.start).1
                }
                _ => String::new(),
            };
            let key = if key.is_empty() {
                table.to_string()
            } else {
                format!("{table}.{key}")
            };
            self.origins.error(&key, format!("{key}: {}", e.message()))
        })
    }
}

/// The config path that means standard input (`tuccompi run -`).
pub const STDIN: &str = "-";

impl Plan {
    /// The part of the config that determines the results, as TOML: everything but the tables
    /// that only say where and how the tasks run (`[units]`, `[scheduler]`, `[nodes]`,
    /// `[verify]`), `output.dir` and `output.sync_seconds`. A run can be resumed under another
    /// value of those.
    pub fn result_config(&self) -> toml::Table {
        let mut t: toml::Table = toml::from_str(&self.resolved_toml).unwrap_or_default();
        for key in ["units", "scheduler", "nodes", "verify"] {
            t.remove(key);
        }
        // Defaults written out, so that leaving a key out and writing its default agree.
        let table = |t: &mut toml::Table, k: &str| -> toml::Table {
            match t.remove(k) {
                Some(toml::Value::Table(x)) => x,
                _ => toml::Table::new(),
            }
        };
        let mut output = table(&mut t, "output");
        output.remove("dir");
        output.remove("sync_seconds");
        output.insert("trace".into(), self.output.trace.into());
        let mut run = table(&mut t, "run");
        run.insert("tasks".into(), self.tasks.to_toml());
        // A key a plugin took over counts under its new name, as the plugin reads it.
        for key in self.unclaimed.keys().chain(&self.renamed) {
            if let Some((table, k)) = key.split_once('.') {
                match table {
                    "run" => run.remove(k),
                    _ => output.remove(k),
                };
            }
        }
        if !self.plugin_options.is_empty() {
            t.insert(self.plugin.clone(), self.plugin_options.clone().into());
        }
        t.insert("output".into(), output.into());
        t.insert("run".into(), run.into());
        t
    }

    /// This plan for plugin `plugin`, which took over the keys `renamed`, as (former dotted
    /// key, key in its own table): each one the config still sets under its former name is
    /// moved into the plugin's table, with a one-line warning naming the new key. A key of
    /// `[run]` or `[output]` that neither the framework nor the plugin knows is refused,
    /// naming it and where it was set; so is a key set under both names.
    pub fn with_renamed_keys(&self, renamed: &[(&str, &str)]) -> Result<Plan> {
        let mut plan = self.clone();
        for (old, value) in &self.unclaimed {
            let Some((_, new)) = renamed.iter().find(|(o, _)| o == old) else {
                let table = old.split_once('.').map_or("run", |(t, _)| t);
                let known = match table {
                    "run" => "`plugin`, `tasks`",
                    _ => "`dir`, `trace`, `sync_seconds`, `progress_seconds`",
                };
                let key = old.split_once('.').map_or(old.as_str(), |(_, k)| k);
                return Err(self.origins.error(
                    old,
                    format!(
                        "{old}: unknown field `{key}`, expected one of {known} (the {} plugin \
                         takes none of [{table}]'s keys)",
                        self.plugin
                    ),
                ));
            };
            let full = format!("{}.{new}", self.plugin);
            tracing::warn!(
                "{}: {old} is deprecated: write {full} (the former name works in this release)",
                self.origins.of(old)
            );
            if plan.plugin_options.contains_key(*new) {
                // Both names: the later `--set` wins over the file, as it does for one name;
                // both in the file is a contradiction.
                match self.origins.last_set(&[old, &full]) {
                    Some(0) => {}
                    Some(_) => {
                        plan.renamed.push(old.clone());
                        continue;
                    }
                    None => {
                        return Err(self.origins.error(
                            old,
                            format!(
                                "{old} and {full} are both set: {old} is {full}'s former \
                                 name; keep {full}"
                            ),
                        ))
                    }
                }
            }
            plan.plugin_options.insert(new.to_string(), value.clone());
            plan.origins.alias(old, &full);
            plan.renamed.push(old.clone());
        }
        plan.unclaimed.clear();
        plan.other_tables
            .insert(plan.plugin.clone(), plan.plugin_options.clone());
        Ok(plan)
    }

    /// Apply node-local unit overrides from `TUCCOMPI_UNITS` (`"cpu_workers=8,opencl=none"`):
    /// each node picks its own units (as `CUDA_VISIBLE_DEVICES` does), everything else stays
    /// as rank 0 resolved it. Only keys of `[units]` are accepted.
    pub fn with_node_units(self) -> Result<Plan> {
        let spec = match std::env::var("TUCCOMPI_UNITS") {
            Ok(spec) => spec,
            Err(std::env::VarError::NotPresent) => return Ok(self),
            // Ignoring it would run with units the user did not ask for.
            Err(std::env::VarError::NotUnicode(raw)) => {
                return Err(Error::Config(format!(
                    "TUCCOMPI_UNITS={}: not UTF-8 text; write it as KEY=VALUE pairs of [units] \
                     in plain text, e.g. TUCCOMPI_UNITS=\"cpu_workers=8,opencl=none\"",
                    raw.to_string_lossy()
                )))
            }
        };
        let sets: Vec<String> = spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| format!("units.{s}"))
            .collect();
        if let Some(bad) = sets.iter().find(|s| {
            s.split_once('=')
                .is_none_or(|(k, _)| k.matches('.').count() != 1)
        }) {
            return Err(Error::Config(format!(
                "TUCCOMPI_UNITS: '{}' is not KEY=VALUE of [units], e.g. TUCCOMPI_UNITS=\"cpu_workers=8,opencl=none\"",
                bad.trim_start_matches("units.")
            )));
        }
        let origins = Origins::new(&self.config_path, &self.resolved_toml, &sets).labelled("entry");
        Plan::with_sets(&self.resolved_toml, origins, &sets).map_err(|e| {
            Error::Config(format!(
                "TUCCOMPI_UNITS=\"{spec}\" (node-local [units] override): {e}"
            ))
        })
    }
}

/// An error of the config file's own text: `c.toml:6: units.cpu_workers: MESSAGE` when the
/// error has a place in a key's line, else the parser's message with its excerpt.
fn file_error(path: &Path, text: &str, e: toml::de::Error) -> Error {
    let shown = path.display();
    match e.span() {
        Some(span) => match origin::key_at(text, span.start) {
            (line, key) if !key.is_empty() => {
                Error::Config(format!("{shown}:{line}: {key}: {}", e.message().trim_end()))
            }
            _ => Error::Config(format!("{shown}: {e}")),
        },
        None => Error::Config(format!("{shown}: {}", e.message().trim_end())),
    }
}

/// An error that shows only once the overrides are applied: named by the key in the resolved
/// text, placed where that key was set (`--set run.tasks="al": run.tasks: MESSAGE`).
fn override_error(origins: &Origins, resolved: &str, e: toml::de::Error) -> Error {
    let key = e
        .span()
        .map(|s| origin::key_at(resolved, s.start).1)
        .unwrap_or_default();
    let msg = e.message().trim_end();
    if key.is_empty() {
        Error::Config(format!(
            "{} with its --set overrides: {msg}",
            origins.path().display()
        ))
    } else {
        // A table the message is about (a missing field) is shown as a table.
        let shown = if msg.starts_with("missing field") {
            format!("[{key}]")
        } else {
            key.clone()
        };
        origins.error(&key, format!("{shown}: {msg}"))
    }
}

/// Set a dotted key (`input.path`, `run.tasks`, `apsp.batch`) in the TOML tree. The value is
/// read as TOML (`64`, `true`, `[1, 2]`, `"x"`), and as a bare string when that fails (`all`).
pub fn apply_override(tree: &mut toml::Table, assignment: &str) -> Result<()> {
    let Some((key, value)) = assignment.split_once('=') else {
        return Err(Error::Config(format!(
            "--set {assignment}: expected KEY=VALUE, e.g. --set run.tasks=64"
        )));
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(Error::Config(format!(
            "--set {assignment}: malformed key '{key}'"
        )));
    }
    // A tree as deep as the key would overflow the stack when it is written out or dropped;
    // the TOML parser refuses such depth in a file ("recursion limit").
    if parts.len() > MAX_KEY_PARTS {
        let head: String = key.chars().take(40).collect();
        return Err(Error::Config(format!(
            "--set {head}...: the key has {} dotted parts, more than the {MAX_KEY_PARTS} a key \
             may have",
            parts.len()
        )));
    }
    let value = value.trim();
    let parsed: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").expect("parsed table has the key"),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let mut table = tree;
    for p in &parts[..parts.len() - 1] {
        let entry = table
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
        table = entry.as_table_mut().ok_or_else(|| {
            Error::Config(format!("--set {assignment}: '{p}' is a value, not a table"))
        })?;
    }
    table.insert(parts[parts.len() - 1].to_string(), parsed);
    Ok(())
}

#[cfg(test)]
mod test;
