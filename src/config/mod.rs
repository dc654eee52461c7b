//! Configuration: the raw TOML mirror (`raw`), `--set` overrides, and the validated [`Plan`].
//!
//! Two stages, as in ripgrep: what the user typed, as close to the file as possible, then a plan
//! with every default filled in and every value checked. Unknown keys are rejected by name.

mod raw;

pub use raw::{AutoOr, DeviceSel, NodePolicy, OnFailure, Policy, Sources};

use crate::graph::GenSpec;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Where the graph comes from.
#[derive(Debug, Clone)]
pub enum InputSpec {
    /// A file; format from its extension.
    Path(PathBuf),
    /// A generated graph.
    Generate(GenSpec),
}

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
}

/// Where results go.
#[derive(Debug, Clone)]
pub struct OutputPlan {
    /// Output directory (created if missing).
    pub dir: PathBuf,
    /// Write the full distance matrix (`distances.npy`).
    pub distances: bool,
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
    /// Tasks run by an accelerator to re-run on the CPU half and compare (0 = none).
    pub sample: usize,
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
    /// Which tasks (sources) to run.
    pub sources: Sources,
    /// The input graph (`None` when the config has no \[input\]).
    pub input: Option<InputSpec>,
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
}

impl Plan {
    /// Read a config file (`-`: standard input) and apply `key=value` overrides.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Plan> {
        let text = if path == Path::new(STDIN) {
            use std::io::Read;
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .take(MAX_CONFIG_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io("standard input", e))?;
            if bytes.len() as u64 > MAX_CONFIG_BYTES {
                return Err(Error::Config(format!(
                    "the config on standard input is larger than {} MiB: a config is a short \
                     TOML file; pass ids and long lists in files",
                    MAX_CONFIG_BYTES >> 20
                )));
            }
            String::from_utf8(bytes).map_err(|_| {
                Error::Config("the config on standard input is not UTF-8 text".into())
            })?
        } else {
            std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?
        };
        Self::from_toml(&text, path, overrides)
    }

    /// Build a plan from TOML text; `path` names it in messages.
    pub fn from_toml(text: &str, path: &Path, overrides: &[String]) -> Result<Plan> {
        let shown = path.display().to_string();
        // Parse into a typed mirror first: errors then carry the file's line and column.
        let _: raw::RawConfig = toml::from_str(text).map_err(|e| toml_error(&shown, e))?;
        let mut tree: toml::Table = toml::from_str(text).map_err(|e| toml_error(&shown, e))?;
        for o in overrides {
            apply_override(&mut tree, o)?;
        }
        let resolved_toml = toml::to_string(&tree).map_err(|e| Error::Config(e.to_string()))?;
        let raw: raw::RawConfig = toml::from_str(&resolved_toml)
            .map_err(|e| Error::Config(format!("{shown} after overrides: {}", e.message())))?;
        let mut plan = raw.validate(path, resolved_toml)?;
        plan.overrides = overrides.to_vec();
        Ok(plan)
    }
}

/// The config path that means standard input (`tuccompi run -`).
pub const STDIN: &str = "-";

/// The largest config accepted (a config is a short TOML file; this bounds what a wrong path
/// such as `/dev/zero` can cost).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

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
        output.insert("distances".into(), self.output.distances.into());
        output.insert("trace".into(), self.output.trace.into());
        t.insert("output".into(), output.into());
        let mut run = table(&mut t, "run");
        let sources = match &self.sources {
            Sources::All => toml::Value::from("all"),
            Sources::First(k) => toml::Value::Integer(*k as i64),
            Sources::List(ids) => ids.iter().map(|&i| i as i64).collect::<Vec<_>>().into(),
        };
        run.insert("sources".into(), sources);
        t.insert("run".into(), run.into());
        t
    }

    /// Apply node-local unit overrides from `TUCCOMPI_UNITS` (`"cpu_workers=8,opencl=none"`):
    /// each node picks its own units (as `CUDA_VISIBLE_DEVICES` does), everything else stays
    /// as rank 0 resolved it. Only keys of `[units]` are accepted.
    pub fn with_node_units(self) -> Result<Plan> {
        let Ok(spec) = std::env::var("TUCCOMPI_UNITS") else {
            return Ok(self);
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
        Plan::from_toml(&self.resolved_toml, &self.config_path, &sets).map_err(|e| {
            Error::Config(format!(
                "TUCCOMPI_UNITS=\"{spec}\" (node-local [units] override): {e}"
            ))
        })
    }
}

fn toml_error(path: &str, e: toml::de::Error) -> Error {
    match e.span() {
        Some(_) => Error::Config(format!("{path}: {e}")),
        None => Error::Config(format!("{path}: {}", e.message())),
    }
}

/// Set a dotted key (`input.path`, `run.sources`, `apsp.batch`) in the TOML tree. The value is
/// read as TOML (`64`, `true`, `[1, 2]`, `"x"`), and as a bare string when that fails (`all`).
pub fn apply_override(tree: &mut toml::Table, assignment: &str) -> Result<()> {
    let Some((key, value)) = assignment.split_once('=') else {
        return Err(Error::Config(format!(
            "--set {assignment}: expected KEY=VALUE, e.g. --set run.sources=64"
        )));
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(Error::Config(format!(
            "--set {assignment}: malformed key '{key}'"
        )));
    }
    let value = value.trim();
    let parsed: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").expect("parsed table has the key"),
        Err(_) => toml::Value::String(value.to_string()),
    };
    // The input is a file or a generator: setting one replaces the other.
    if let Some(toml::Value::Table(input)) = tree.get_mut("input") {
        if key == "input.path" {
            input.remove("generate");
        } else if key.starts_with("input.generate") {
            input.remove("path");
        }
    }
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
