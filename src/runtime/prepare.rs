//! Phase 1, prepare: the plugin resolved among those handed over, the input read, the job made. Nothing is written.

use super::*;

/// Find plugin `plan.plugin` among `plugins`; every plugin table in the config must name one
/// of them.
pub fn resolve_plugin<'a>(plan: &Plan, plugins: &[&'a dyn Plugin]) -> Result<&'a dyn Plugin> {
    let all = plugins;
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    let mut tables: Vec<&str> = names.clone();
    for t in all.iter().flat_map(|p| p.tables()) {
        if !tables.contains(t) {
            tables.push(t);
        }
    }
    for t in plan.other_tables.keys() {
        if !tables.contains(&t.as_str()) {
            return Err(plan.origins.error(
                t,
                format!(
                    "unknown table [{t}]; known tables are [run] [units] [scheduler] [output] \
                     [verify] [nodes] and plugin tables ({})",
                    tables.join(", ")
                ),
            ));
        }
    }
    all.iter()
        .find(|p| p.name() == plan.plugin)
        .copied()
        .ok_or_else(|| {
            Error::Config(format!(
                "{}: run.plugin = \"{}\" is not a known plugin; `tuccompi plugins` lists them ({})",
                plan.config_path.display(),
                plan.plugin,
                names.join(", ")
            ))
        })
}

/// `plan` as its plugin (among `plugins`) reads it: the plugin's keys set under
/// their former names in `[run]` and `[output]` moved into its table, each with a warning
/// ([`Plan::with_renamed_keys`]).
pub fn plan_for(plan: &Plan, plugins: &[&dyn Plugin]) -> Result<Plan> {
    let plugin = resolve_plugin(plan, plugins)?;
    if plan.tasks != crate::config::Tasks::All && !plugin.selects_tasks() {
        return Err(plan.origins.error(
            "run.tasks",
            format!(
                "run.tasks = {}: the {} plugin runs every task of its job and reads no task \
                 selection; remove run.tasks (or set it to \"all\")",
                plan.tasks,
                plugin.name()
            ),
        ));
    }
    plan.with_renamed_keys(plugin.renamed_keys())
}

/// Phase 1's result: the plugin and its prepared job.
pub struct Prepared<'a> {
    /// The plugin.
    pub plugin: &'a dyn Plugin,
    /// Its job: input read, tasks resolved, nothing written.
    pub job: Box<dyn Job>,
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Prepared({}, {} tasks)",
            self.plugin.name(),
            self.job.tasks()
        )
    }
}

/// Phase 1: resolve the plugin among `plugins` and prepare its job (config,
/// plugin, input, tasks) for a run on `nodes` nodes. Writes nothing, caches included
/// (`tuccompi check`).
pub fn prepare<'a>(plan: &Plan, plugins: &[&'a dyn Plugin], nodes: usize) -> Result<Prepared<'a>> {
    let devices = || {
        select_devices_noting(plan, None)
            .map(|(d, _)| DeviceCount::of(&d))
            .unwrap_or_default()
    };
    prepare_with(
        plan,
        plugins,
        nodes,
        None,
        true,
        0,
        &devices,
        SpaceCheck::None,
        None,
    )
}

/// [`prepare`], the ranks of one machine sharing bytes (the built-ins: one copy of the input) through `share`.
///
/// `done_tasks`: the tasks an unfinished run that this one resumes has done; `devices`: the
/// OpenCL devices the plan selects, counted (asked only by preprocessing that weighs them);
/// What a plugin's early check of its outputs' size ([`PrepareCtx::check_space`]) compares
/// them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceCheck {
    /// Nothing (`check`, other ranks).
    None,
    /// The free space of the output directory's disk.
    Disk,
    /// The memory available (an in-memory run).
    Memory,
}

/// The error of `need` bytes of a `tasks`-task run's outputs that cannot fit in the memory
/// this machine has available (an in-memory run); `Ok` when they fit or it cannot be read.
pub(super) fn check_memory(need: u64, tasks: usize) -> Result<()> {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    match crate::sink::available_memory() {
        Some(avail) if need > avail => Err(Error::Input(format!(
            "the results of {tasks} tasks: needs about {} in memory (their bulk files, records \
             and tables), but this machine has {} available; ask for fewer tasks or smaller \
             outputs, or run into an output directory",
            gib(need),
            gib(avail)
        ))),
        _ => Ok(()),
    }
}

/// `check_space`: what the plugin's early check of its outputs' size looks at
/// ([`PrepareCtx::check_space`]; rank 0 of a run).
#[allow(clippy::too_many_arguments)]
pub fn prepare_sharing<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    nodes: usize,
    share: Option<&dyn crate::share::Share>,
    done_tasks: usize,
    devices: &(dyn Fn() -> DeviceCount + Sync),
    check_space: SpaceCheck,
    kept: Option<&crate::session::Kept>,
) -> Result<Prepared<'a>> {
    prepare_with(
        plan,
        plugins,
        nodes,
        share,
        false,
        done_tasks,
        devices,
        check_space,
        kept,
    )
}

#[allow(clippy::too_many_arguments)]
pub(super) fn prepare_with<'a>(
    plan: &Plan,
    plugins: &[&'a dyn Plugin],
    nodes: usize,
    share: Option<&dyn crate::share::Share>,
    dry_run: bool,
    done_tasks: usize,
    devices: &(dyn Fn() -> DeviceCount + Sync),
    check_space: SpaceCheck,
    kept: Option<&crate::session::Kept>,
) -> Result<Prepared<'a>> {
    let plugin = resolve_plugin(plan, plugins)?;
    let plan = &plan.with_renamed_keys(plugin.renamed_keys())?;
    // The free-space check a plugin asks for before its expensive preprocessing: the bytes
    // an unfinished run already wrote in the partial folder count as written.
    let space = |size: OutputSize| -> Result<()> {
        let need = output_bytes_of(plan, size.tasks, size.record_words, size.bulk_bytes);
        if check_space == SpaceCheck::Memory {
            return check_memory(need, size.tasks);
        }
        let dir = &plan.output.dir;
        let need = need.saturating_sub(outdir::allocated_bytes(&dir.join(outdir::PARTIAL)));
        outdir::check_space(dir, need, outdir::available_space(dir)?)
    };
    let job = plugin.prepare(&PrepareCtx {
        plan,
        share,
        dry_run,
        done_tasks,
        devices,
        space: (check_space != SpaceCheck::None && !dry_run)
            .then_some(&space as &(dyn Fn(OutputSize) -> Result<()> + Sync)),
        kept,
    })?;
    if nodes > 1 && !job.details().multi_node {
        return Err(Error::Config(format!(
            "plugin {} computes one matrix in one process; run it without mpirun (it uses every core or a GPU of one node)",
            plugin.name()
        )));
    }
    if plan.verify.sample.is_some_and(|n| n > 0) && !job.details().cpu_half {
        return Err(Error::Config(format!(
            "{}: [verify] sample re-runs tasks on the CPU half, and plugin {} has none; remove [verify]",
            plan.config_path.display(),
            plugin.name()
        )));
    }
    Ok(Prepared { plugin, job })
}
