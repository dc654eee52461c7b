//! The `tuccompi` command: parse, run, turn the error into one message and an exit code.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tuccompi::plugin::Plugin;
use tuccompi::tuning::{Choice, LaunchParams, Tuner};
use tuccompi::{config::Plan, node, plugins, runtime, Error};

#[derive(Parser)]
#[command(
    name = "tuccompi",
    version,
    about = "Run embarrassingly parallel workloads on every CPU core, OpenCL device and MPI node"
)]
struct Cli {
    /// No progress bar and no closing summary line.
    #[arg(long, short, global = true)]
    quiet: bool,
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the job a config file describes.
    Run {
        /// The config file (TOML).
        config: PathBuf,
        /// Override a config key: --set input.path=g.gr --set run.sources=64
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Continue the unfinished run in the output directory (same config and input): its
        /// journaled tasks are skipped.
        #[arg(long, conflicts_with = "restart")]
        resume: bool,
        /// Discard an unfinished run in the output directory and start over.
        #[arg(long)]
        restart: bool,
    },
    /// Validate a config, load its input, and print the resolved plan; run nothing.
    Check {
        /// The config file (TOML).
        config: PathBuf,
        /// Override a config key.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Time candidate launch parameters of APSP's GPU half ([apsp] batch and local_size) on the
    /// real devices and problem, print the table, and store the winners in the tuning cache.
    Tune {
        /// The config file (TOML).
        config: PathBuf,
        /// Override a config key.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Tasks per timed run (default: four predicted batches).
        #[arg(long)]
        sample: Option<usize>,
        /// Timed runs per candidate; the median counts.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
    },
    /// List the plugins.
    Plugins,
    /// List CPU cores and OpenCL devices.
    Devices,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Interrupted {
            done,
            total,
            journal,
        }) => {
            eprintln!(
                "tuccompi: interrupted: {done} of {total} tasks are done and journaled in {}",
                journal.display()
            );
            eprintln!("tuccompi: {}", resume_hint());
            ExitCode::from(signals::exit_code())
        }
        Err(e) => {
            eprintln!("tuccompi: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// "continue with: tuccompi run ... --resume", from this process's own command line.
fn resume_hint() -> String {
    let mut args: Vec<String> = std::env::args().collect();
    args.retain(|a| a != "--restart");
    if !args.iter().any(|a| a == "--resume") {
        args.push("--resume".into());
    }
    let quoted: Vec<String> = args
        .iter()
        .map(|a| {
            if a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect();
    format!("continue with: {}", quoted.join(" "))
}

/// SIGINT / SIGTERM: the first one stops the run after its running chunks (the journal is
/// written out); a second one, or running chunks that outlast the grace period, end the
/// process at once. The journal stays valid either way: every entry carries its checksum, and
/// a torn last entry is dropped when resuming.
mod signals {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::time::Duration;

    /// How long running chunks get to finish after the first signal.
    pub(super) const GRACE: Duration = Duration::from_secs(10);

    static SIGNAL: AtomicI32 = AtomicI32::new(0);

    /// The exit code for the signal received: 128 + its number (130 for SIGINT).
    pub(super) fn exit_code() -> u8 {
        match SIGNAL.load(Ordering::Relaxed) {
            0 => 130,
            s => (128 + s) as u8,
        }
    }

    /// Watch for the signals on a thread of its own; returns the flag the run polls.
    pub(super) fn install() -> Result<&'static AtomicBool, std::io::Error> {
        static STOP: AtomicBool = AtomicBool::new(false);
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
                    if SIGNAL.swap(sig, Ordering::Relaxed) != 0 {
                        eprintln!("tuccompi: second signal ({name}): stopping now");
                        eprintln!("tuccompi: {}", super::resume_hint());
                        std::process::exit(exit_code().into());
                    }
                    STOP.store(true, Ordering::Relaxed);
                    eprintln!(
                        "tuccompi: {name}: no more chunks are handed out; the running ones get {} s to finish (send it again to stop at once)",
                        GRACE.as_secs()
                    );
                    std::thread::spawn(|| {
                        std::thread::sleep(GRACE);
                        eprintln!(
                            "tuccompi: running chunks did not finish within {} s: stopping now",
                            GRACE.as_secs()
                        );
                        eprintln!("tuccompi: {}", super::resume_hint());
                        std::process::exit(exit_code().into());
                    });
                }
            })?;
        Ok(&STOP)
    }
}

fn real_main(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Run {
            config,
            set,
            resume,
            restart,
        } => {
            let unfinished = if resume {
                runtime::Unfinished::Resume
            } else if restart {
                runtime::Unfinished::Discard
            } else {
                runtime::Unfinished::Refuse
            };
            run(&config, &set, cli.quiet, unfinished)
        }
        Command::Check { config, set } => check(&config, &set),
        Command::Tune {
            config,
            set,
            sample,
            repeat,
        } => {
            let plan = Plan::load(&config, &set)?.with_node_units()?;
            println!(
                "{:<40} {:>10} {:>7} {:>12} {:>10}  predicted",
                "device", "local_size", "batch", "seconds", "tasks/s"
            );
            let options = plugins::apsp::tune::TuneOptions { sample, repeat };
            let rows = plugins::apsp::tune::tune(&plan, options, |r| {
                println!(
                    "{:<40} {:>10} {:>7} {:>12.4} {:>10.1}  {}",
                    r.device,
                    if r.local_size == 0 {
                        "driver".to_string()
                    } else {
                        r.local_size.to_string()
                    },
                    r.batch,
                    r.seconds,
                    r.tasks as f64 / r.seconds.max(1e-12),
                    if r.predicted { "yes" } else { "" }
                );
            })?;
            let best = rows.iter().min_by(|a, b| a.seconds.total_cmp(&b.seconds));
            if let Some(b) = best {
                println!(
                    "best: local_size {} batch {}; stored in {}",
                    b.local_size,
                    b.batch,
                    tuccompi::tuning::cache_path().display()
                );
            }
            Ok(())
        }
        Command::Plugins => {
            for p in plugins::registry() {
                println!("{:<12} {}", p.name(), p.description());
            }
            Ok(())
        }
        Command::Devices => {
            devices();
            Ok(())
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn run(
    config: &std::path::Path,
    set: &[String],
    quiet: bool,
    unfinished: runtime::Unfinished,
) -> Result<(), Error> {
    node::refuse_launcher_without_mpi()?;
    let plan = Plan::load(config, set)?.with_node_units()?;
    let stop = signals::install().map_err(|e| Error::Node(format!("signal handling: {e}")))?;
    let outcome = runtime::run(
        &plan,
        &plugins::registry(),
        &runtime::RunOptions {
            quiet,
            unfinished,
            interrupt: Some(stop),
            discover_early: true,
            ..Default::default()
        },
        &node::Single,
    )?;
    if !quiet {
        print_outcome(&plan, &outcome.report);
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn run(
    config: &std::path::Path,
    set: &[String],
    quiet: bool,
    unfinished: runtime::Unfinished,
) -> Result<(), Error> {
    use tuccompi::node::Node;
    let world = node::mpi::MpiNode::init()?;
    let plan = world.load_plan(config, set)?.with_node_units()?;
    let stop = signals::install().map_err(|e| Error::Node(format!("signal handling: {e}")))?;
    let outcome = runtime::run(
        &plan,
        &plugins::registry(),
        &runtime::RunOptions {
            quiet,
            unfinished,
            interrupt: Some(stop),
            discover_early: true,
            ..Default::default()
        },
        &world,
    )
    .map_err(|e| match e {
        // Every rank has finished its part; rank 0 says how to resume.
        Error::Interrupted { .. } => e,
        e if world.size() > 1 => world.fail(e),
        e => e,
    })?;
    if !quiet && world.is_root() {
        print_outcome(&plan, &outcome.report);
    }
    Ok(())
}

fn print_outcome(plan: &Plan, report: &serde_json::Value) {
    println!(
        "{}: {} tasks on {} units in {:.3} s; checksum {}; results in {}",
        report["plugin"].as_str().unwrap_or(""),
        report["tasks"],
        report["units"].as_array().map_or(0, |u| u.len()),
        report["wall_seconds"].as_f64().unwrap_or(0.0),
        report["checksum"],
        plan.output.dir.display()
    );
}

fn check(config: &std::path::Path, set: &[String]) -> Result<(), Error> {
    node::refuse_launcher_without_mpi()?;
    let plan = Plan::load(config, set)?.with_node_units()?;
    let registry: Vec<&dyn Plugin> = plugins::registry();
    let plugin = runtime::resolve_plugin(&plan, &registry, &[])?;
    println!("config     {}", plan.config_path.display());
    println!("plugin     {} — {}", plugin.name(), plugin.description());
    match &plan.input {
        Some(tuccompi::config::InputSpec::Path(p)) => println!("input      {}", p.display()),
        Some(tuccompi::config::InputSpec::Generate(g)) => println!("input      generated {g}"),
        None => println!("input      none"),
    }
    let prepared = runtime::prepare(&plan, &registry, &[], 1)?;
    let job = prepared.job.as_ref();
    println!("           {}  ({} tasks)", job.describe(), job.tasks());
    println!("sources    {}", plan.sources);
    let selection = runtime::select_units(&plan, &prepared, 1)?;
    println!("units      cpu_workers = {}", selection.cpu_workers);
    if selection.devices.is_empty() {
        println!(
            "           no OpenCL device (units.opencl = {})",
            plan.units.opencl
        )
    }
    let tuner = Tuner::new(plan.units.concurrent_kernels, Default::default());
    for d in &selection.devices {
        println!(
            "           gpu{}: {} [{}] ({} compute units)",
            d.index, d.info.name, d.info.platform, d.info.compute_units
        );
        if let Some(g) = job.gpu() {
            print_launch_plan(&g.params(d, &tuner)?);
        }
    }
    println!(
        "           concurrent_kernels = {}",
        plan.units
            .concurrent_kernels
            .map_or("auto (tuner)".to_string(), |k| k.to_string())
    );
    println!(
        "scheduler  policy = {}, chunk = {}, gpu_chunk = {}",
        runtime::policy_name(plan.scheduler.policy),
        plan.scheduler
            .chunk
            .map_or("auto".into(), |c| c.to_string()),
        plan.scheduler
            .gpu_chunk
            .map_or("auto (batch)".into(), |c| c.to_string())
    );
    println!(
        "output     {} (distances = {}, trace = {})",
        plan.output.dir.display(),
        plan.output.distances,
        plan.output.trace
    );
    let out = runtime::output_status(&plan, job)?;
    use tuccompi::sink::outdir::human_bytes;
    println!(
        "           needs {}; {} free",
        human_bytes(out.need),
        human_bytes(out.free)
    );
    if out.need > out.free {
        println!(
            "           warning: the outputs need {} but only {} are free: `run` will refuse this",
            human_bytes(out.need),
            human_bytes(out.free)
        );
    }
    if let Some((done, total)) = out.unfinished {
        println!(
            "           holds an unfinished run ({done} of {total} tasks done): `run --resume` continues it, `run --restart` discards it"
        );
    }
    println!("tuning rules:");
    for (when, what) in tuccompi::tuning::RULES
        .iter()
        .chain(tuccompi::tuning::TILE_RULES)
        .chain(tuccompi::tuning::SWEEP_RULES)
    {
        println!("  - {when}: {what}");
    }
    Ok(())
}

fn devices() {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!("CPU: {cores} cores (host threads available to CPU workers)");
    match tuccompi::device::list() {
        Ok(list) if list.is_empty() => {
            println!("OpenCL: platforms found, but none lists a device")
        }
        Ok(list) => {
            for (i, (d, _)) in list.iter().enumerate() {
                println!(
                    "OpenCL {i}: {} [{}] type={} compute_units={} clock={} MHz global={:.0} MiB local={} KiB max_work_group={} int64_atomics={} driver={}",
                    d.name, d.platform, d.kind, d.compute_units, d.clock_mhz,
                    d.global_mem as f64 / 1048576.0, d.local_mem / 1024, d.max_work_group, d.int64_atomics, d.driver
                );
            }
        }
        // The error's own text starts with "OpenCL: ".
        Err(e) => println!("{e}"),
    }
}

fn print_launch_plan(p: &LaunchParams) {
    let show = |what: &str, c: &Choice| {
        println!(
            "             {what:<22} {:>7}  ({}: {})",
            c.value,
            c.source.as_str(),
            c.reason
        );
    };
    show("batch", &p.batch);
    show("queues", &p.queues);
    show("groups_per_task", &p.groups_per_task);
    show("persistent_items", &p.persistent_items);
    if let Some(t) = &p.tile {
        // Register-tiled kernels' shape (tuning::TileShape).
        show("tile (block)", &t.block);
        show("group tile", &t.group);
        show("register rows", &t.register_rows);
        show("register cols", &t.register_cols);
        show("slab", &t.slab);
        show("closure register", &t.closure_register);
        show("strips", &t.strips);
    }
    if let Some(s) = &p.sweep {
        // Level sweeps (tuning::SweepPlan).
        show("top levels", &s.top_levels);
        show("summary slices", &s.summary_slices);
        show("frontier", &s.frontier);
        show("upward on device", &s.upward_on_device);
    }
    for (k, c) in &p.local {
        show(&format!("local {k}"), c);
    }
}
