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
        .init();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tuccompi: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Run { config, set } => run(&config, &set, cli.quiet),
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
fn run(config: &std::path::Path, set: &[String], quiet: bool) -> Result<(), Error> {
    let plan = Plan::load(config, set)?.with_node_units()?;
    let outcome = runtime::run(
        &plan,
        &plugins::registry(),
        &runtime::RunOptions {
            quiet,
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
fn run(config: &std::path::Path, set: &[String], quiet: bool) -> Result<(), Error> {
    use tuccompi::node::Node;
    let world = node::mpi::MpiNode::init()?;
    let plan = world.load_plan(config, set)?.with_node_units()?;
    let outcome = runtime::run(
        &plan,
        &plugins::registry(),
        &runtime::RunOptions {
            quiet,
            ..Default::default()
        },
        &world,
    )
    .map_err(|e| if world.size() > 1 { world.fail(e) } else { e })?;
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
    let job = plugin.prepare(&tuccompi::plugin::PrepareCtx {
        plan: &plan,
        out_dir: std::path::Path::new("/nonexistent"),
        is_root: false,
    });
    let job_ref = match job {
        Ok(job) => {
            println!("           {}  ({} tasks)", job.describe(), job.tasks());
            Some(job)
        }
        Err(Error::Io { path, .. }) if path.ends_with("distances.npy") => {
            println!("           (input not loaded: output.distances is set)");
            None
        }
        Err(e) => return Err(e),
    };
    println!("sources    {}", plan.sources);
    println!("units      cpu_workers = {}", plan.units.cpu_workers);
    match runtime::select_devices(&plan) {
        Ok(devs) if devs.is_empty() => {
            println!(
                "           no OpenCL device (units.opencl = {})",
                plan.units.opencl
            )
        }
        Ok(devs) => {
            for d in devs {
                println!(
                    "           gpu{}: {} [{}] ({} compute units)",
                    d.index, d.info.name, d.info.platform, d.info.compute_units
                );
                let half = job_ref.as_ref().and_then(|j| j.gpu());
                let tuner = Tuner::new(plan.units.concurrent_kernels, Default::default());
                if let Some(p) = half.map(|g| g.params(&d, &tuner)) {
                    print_launch_plan(&p?);
                }
            }
        }
        Err(e) => return Err(e),
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
    println!("tuning rules:");
    for (when, what) in tuccompi::tuning::RULES
        .iter()
        .chain(tuccompi::tuning::TILE_RULES)
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
    for (k, c) in &p.local {
        show(&format!("local {k}"), c);
    }
}
