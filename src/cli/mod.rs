//! The command line, as a library function: [`main`] gives any binary the whole `tuccompi`
//! tool (`run`, `check`, `tune`, `plugins`, `devices`, `completions`, `man`, `--set`,
//! `--resume`, `--restart`, signals, progress, the closing line and the exit codes) over the
//! built-in plugins and the ones it is handed. The `tuccompi` binary is `cli::main(&[])`; a
//! user's plugin binary is `tuccompi::cli::main(&[&MyPlugin])`.
//!
//! As in ripgrep's `main`: parse, run, turn the error into one message and an exit code
//! (0 success, 2 an error, 128 + N after signal N).

mod signals;

/// Whether standard output was closed by its reader (`tuccompi history | head`): what is left
/// to print is dropped, and the command goes on and ends as it would have.
static STDOUT_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Print a line on standard output, as `println!` does, but without panicking when the reader
/// went away (a broken pipe): the rest of the output is dropped quietly, as `cat` and `ls`
/// end quietly there. Another write error is said once on standard error.
fn say_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
    {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("{}: warning: standard output: {e}", crate::program_name());
        }
    }
}

/// `println!` for the command line's output ([`say_line`]).
macro_rules! say {
    () => {
        say_line(format_args!(""))
    };
    ($($t:tt)*) => {
        say_line(format_args!($($t)*))
    };
}

use crate::plugin::Plugin;
use crate::tuning::{Choice, LaunchParams, Tuner};
use crate::{config::Plan, node, runtime, Error, RunOptions};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Environment variables, for `--help` (and the man page).
const ENVIRONMENT: &str = "\
Environment:
  TUCCOMPI_UNITS=\"cpu_workers=8,opencl=none\"  node-local [units] overrides (after --set)
  TUCCOMPI_KERNELS=DIR         read kernels and characterizations (STEM.cl, STEM.toml) from DIR
  TUCCOMPI_CL_OPTIONS=OPTS     append OpenCL build options to every program
  TUCCOMPI_DUMP_BINARIES=DIR   write each built program's binary and build log into DIR
  XDG_CACHE_HOME=DIR           cache directory (hierarchies, tuning; default ~/.cache/tuccompi)
  OCL_ICD_VENDORS=DIR          where the OpenCL loader finds vendor .icd files
  RUST_LOG=FILTER              log filter (overrides -v; e.g. RUST_LOG=tuccompi=debug)

Config reference: README.md, section \"Configuration reference\" (every key, its values and
default). A config without output.dir writes to tuccompi-out/<config file name without .toml>.
Exit status: 0 success, 2 error, 128+N after signal N (130 for Ctrl-C).";

#[derive(Parser)]
#[command(
    name = "tuccompi",
    version = version(),
    long_version = long_version(),
    about = "Run embarrassingly parallel workloads on every CPU core, OpenCL device and MPI node",
    after_help = ENVIRONMENT
)]
struct Cli {
    /// No progress bar or progress lines and no closing summary line.
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
        /// The config file (TOML); `-` reads it from standard input.
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
    /// Validate a config, load its input, and print the resolved plan; run nothing, write
    /// nothing.
    Check {
        /// The config file (TOML); `-` reads it from standard input.
        config: PathBuf,
        /// Override a config key.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Time the candidates the plugin declares for its GPU half (batch, local size, its own
    /// knobs) on the real devices and problem, print the table, and store the winners in the
    /// tuning cache, which later runs use.
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
    /// Show the speed history the work queue starts from (each unit class's measured model,
    /// by plugin and workload), or clear it so that the next runs probe again.
    History {
        /// Delete the history file (the next run of each work probes and stores anew).
        #[arg(long)]
        clear: bool,
    },
    /// List the plugins.
    Plugins,
    /// List CPU cores and OpenCL devices.
    Devices,
    // `command` gives `completions` and `man` their help, with the binary's name.
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Man,
}

/// `history`: print the speed history's models, one line each (or say there are none), or
/// delete its file with `clear` (only a file recognized as a speed history; anything else there
/// is refused and left alone).
fn history(clear: bool) -> crate::Result<()> {
    let Some(path) = crate::scheduler::history::path() else {
        return Err(Error::Config(
            "no cache directory: set XDG_CACHE_HOME (an absolute path) or HOME".into(),
        ));
    };
    if clear {
        use crate::scheduler::history::Cleared;
        match crate::scheduler::history::clear(&path)? {
            Cleared::Removed => say!("{}: removed", path.display()),
            Cleared::Absent => say!("{}: no speed history", path.display()),
        }
        return Ok(());
    }
    let (store, note) = crate::scheduler::history::History::load(&path);
    if let Some(n) = note {
        eprintln!("{}: warning: {n}", crate::program_name());
    }
    let now = crate::scheduler::history::now_secs();
    let mut n = 0;
    for (key, model, tasks, stored) in store.entries() {
        n += 1;
        say!(
            "{key}\n    latency {:.3} ms, per task {:.3} us, measured over {tasks} tasks, {} ago",
            model.latency * 1e3,
            model.per_task * 1e6,
            age(now.saturating_sub(stored))
        );
    }
    if n == 0 {
        say!("{}: no speed history", path.display());
    } else {
        say!("{}: {n} models", path.display());
    }
    Ok(())
}

/// `45 s`, `12 min`, `3 h`, `2 d`.
fn age(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        7200..=172_799 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// `0.1.0 (commit abc1234, features: mpi)`: what `--version` prints after the name.
fn version() -> &'static str {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (commit ",
        env!("TUCCOMPI_COMMIT"),
        ", features: ",
        env!("TUCCOMPI_FEATURES"),
        ")"
    )
}

/// `--version` with the build's details, for bug reports.
fn long_version() -> &'static str {
    concat!(
        env!("CARGO_PKG_VERSION"),
        "\ncommit:   ",
        env!("TUCCOMPI_COMMIT"),
        "\nfeatures: ",
        env!("TUCCOMPI_FEATURES"),
        "\nrustc:    ",
        env!("TUCCOMPI_RUSTC"),
        "\nprofile:  ",
        env!("TUCCOMPI_PROFILE"),
        "\nOpenCL:   loaded at run time (`devices` lists what it finds)"
    )
}

/// The command line [`main_from`] was given (else the process's), for the program's name and
/// the resume hint.
static ARGS: std::sync::OnceLock<Vec<std::ffi::OsString>> = std::sync::OnceLock::new();

fn args() -> Vec<std::ffi::OsString> {
    ARGS.get()
        .cloned()
        .unwrap_or_else(|| std::env::args_os().collect())
}

/// The program's name as it was started (a user's plugin binary has its own), for help,
/// completions and messages.
fn bin_name() -> String {
    name_of(args().first().map(|a| a.as_os_str()))
}

/// The file name of `argv0` (a path or a bare name), else the framework's package name
/// (`tuccompi`): what the command line calls itself.
fn name_of(argv0: Option<&std::ffi::OsStr>) -> String {
    argv0
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| env!("CARGO_PKG_NAME").into())
}

/// The command line of the binary called `name`: its name in the usage, help, man page and
/// completions, and in the examples of `completions` and `man`, so that a user's binary
/// (`collatz --help`) never says `tuccompi`.
fn command(name: &str) -> clap::Command {
    Cli::command()
        .name(name.to_string())
        .bin_name(name.to_string())
        .mut_subcommand("completions", |c| {
            c.about(format!(
                "Print a shell completion script (e.g. `{name} completions bash > \
                 ~/.local/share/bash-completion/completions/{name}`)"
            ))
        })
        .mut_subcommand("man", |c| {
            c.about(format!(
                "Print the man page (roff; e.g. `{name} man > ~/.local/share/man/man1/{name}.1`)"
            ))
        })
}

/// The whole command line over the plugins `extra` (a binary's registry: `tuccompi`'s is its
/// built-in plugins, a user's binary names its own): parse the
/// arguments, run the command, print one message per error, and return the exit code.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     tuccompi::cli::main(&[/* &MyPlugin */])
/// }
/// ```
pub fn main(extra: &[&dyn Plugin]) -> ExitCode {
    main_from(std::env::args_os(), extra)
}

/// [`main`] over the command line `args` (the program's name first) instead of the process's:
/// for a binary that picks its arguments itself, and for tests that run a plugin's whole
/// command line in a process of their own. The first call's arguments are the ones messages
/// use.
pub fn main_from<I, T>(args: I, extra: &[&dyn Plugin]) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let _ = ARGS.set(args.clone());
    let name = bin_name();
    crate::set_program_name(&name);
    let cli = match command(&name)
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // Stage lines (target "stage": reading a large input, building a hierarchy, with their
    // progress) show at the default verbosity, so a long stage never looks like a hang, also
    // in a batch log; `-q` keeps only warnings.
    let level = match cli.verbose {
        0 if cli.quiet => "warn",
        0 => "warn,stage=info",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // A second call (a test harness that runs main twice) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .event_format(Lines(name.clone()))
        .try_init();
    match real_main(cli, extra, &name) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Interrupted {
            done,
            total,
            journal,
        }) => {
            eprintln!(
                "{name}: interrupted: {done} of {total} tasks are done and journaled in {}",
                journal.display()
            );
            eprintln!("{name}: {}", resume_hint());
            ExitCode::from(signals::exit_code())
        }
        Err(e) => {
            eprintln!("{name}: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Log lines as a command-line tool writes them: `NAME: warning: ...`, `NAME: ...`
/// (info), `NAME: debug: ...`, the event's fields after its message; no timestamps or
/// module paths (`RUST_LOG=debug` users get the target in debug lines).
struct Lines(String);

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Lines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing::Level;
        let meta = event.metadata();
        let level = match *meta.level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            Level::DEBUG | Level::TRACE => "debug: ",
        };
        write!(w, "{}: {level}", self.0)?;
        if *meta.level() >= Level::DEBUG {
            write!(w, "[{}] ", meta.target())?;
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// "continue with: tuccompi run ... --resume", from this process's own command line.
fn resume_hint() -> String {
    let mut args: Vec<String> = args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
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

fn real_main(cli: Cli, extra: &[&dyn Plugin], name: &str) -> Result<(), Error> {
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
            run(&config, &set, cli.quiet, unfinished, extra)
        }
        Command::Check { config, set } => check(&config, &set, extra, name),
        Command::Tune {
            config,
            set,
            sample,
            repeat,
        } => tune(
            &config,
            &set,
            runtime::TuneOptions { sample, repeat },
            extra,
        ),
        Command::History { clear } => history(clear),
        Command::Plugins => {
            plugins(extra);
            Ok(())
        }
        Command::Devices => {
            devices();
            Ok(())
        }
        Command::Completions { shell } => completions(shell, name),
        Command::Man => man(name),
    }
}

/// `tune`: time the GPU half's candidates on every selected device, one table row each as it
/// is timed, then the winners and where they are stored.
fn tune(
    config: &Path,
    set: &[String],
    options: runtime::TuneOptions,
    extra: &[&dyn Plugin],
) -> Result<(), Error> {
    let plan = Plan::load(config, set)?.with_node_units()?;
    // A signal ends `tune` at once (it stores nothing until it has measured), its scratch
    // folder removed first.
    signals::install().map_err(|e| Error::Node(format!("signal handling: {e}")))?;
    let mut header = false;
    let (_, tuned) = runtime::tune(&plan, extra, options, |row| {
        if !std::mem::replace(&mut header, true) {
            say!("{}", row.table_header());
        }
        say!("{}", row.table_line());
    })?;
    for t in &tuned {
        let best: Vec<String> = t.best.iter().map(|(k, v)| format!("{k}={v}")).collect();
        say!("best on {}: {}", t.device, best.join(" "));
    }
    say!("stored in {}", crate::tuning::cache_path().display());
    Ok(())
}

/// `plugins`: each plugin's name and description, the descriptions in one column.
fn plugins(extra: &[&dyn Plugin]) {
    let all = registry(extra);
    let width = all
        .iter()
        .map(|p| p.name().len())
        .max()
        .unwrap_or(0)
        .max(12);
    for p in all {
        say!("{:<width$} {}", p.name(), p.description());
    }
}

/// `man`: the man page of the binary called `name`.
fn man(name: &str) -> Result<(), Error> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command(name))
        .render(&mut page)
        .map_err(|e| Error::io("the man page", e))?;
    print_bytes(&page)
}

/// `completions`: the completion script of `shell` for the binary called `name`. Written
/// into memory first: clap_complete panics when its writer fails (`NAME completions bash |
/// head`).
fn completions(shell: clap_complete::Shell, name: &str) -> Result<(), Error> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(name), name, &mut script);
    print_bytes(&script)
}

/// Write `bytes` to standard output; a reader that closed the pipe early (`NAME man | head`)
/// is not an error.
fn print_bytes(bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::io("standard output", e))
        }
        _ => Ok(()),
    }
}

/// The binary's plugins, in the order it lists them.
fn registry<'a>(extra: &[&'a dyn Plugin]) -> Vec<&'a dyn Plugin> {
    extra.to_vec()
}

/// The options of a run from the command line. Signals are watched from the start: a stop
/// during the input's loading or the preprocessing ends the process at once (nothing was
/// written yet); from the moment the output directory is touched, it stops the run cleanly.
fn run_options<'a>(
    quiet: bool,
    unfinished: runtime::Unfinished,
    extra: &[&'a dyn Plugin],
    session: &'a crate::Session,
) -> Result<RunOptions<'a>, Error> {
    let stop = signals::install().map_err(|e| Error::Node(format!("signal handling: {e}")))?;
    Ok(RunOptions {
        quiet,
        unfinished,
        interrupt: Some(stop),
        before_writing: Some(&signals::begin_writing),
        discover_early: true,
        speed_history: true,
        plugins: extra.to_vec(),
        session: Some(session),
        progress: None,
        in_memory: false,
    })
}

#[cfg(not(feature = "mpi"))]
fn run(
    config: &Path,
    set: &[String],
    quiet: bool,
    unfinished: runtime::Unfinished,
    extra: &[&dyn Plugin],
) -> Result<(), Error> {
    node::refuse_launcher_without_mpi()?;
    // One session, one job.
    let session = crate::Session::new();
    let opts = run_options(quiet, unfinished, extra, &session)?;
    let plan = Plan::load(config, set)?.with_node_units()?;
    let outcome = runtime::run(&plan, &opts, &node::Single)?;
    if !quiet {
        print_outcome(&plan, &outcome.report);
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn run(
    config: &Path,
    set: &[String],
    quiet: bool,
    unfinished: runtime::Unfinished,
    extra: &[&dyn Plugin],
) -> Result<(), Error> {
    use crate::node::Node;
    let world = node::mpi::MpiNode::init()?;
    // One session, one job.
    let session = crate::Session::new();
    let opts = run_options(quiet, unfinished, extra, &session)?;
    let plan = world.load_plan(config, set)?.with_node_units()?;
    let outcome = runtime::run(&plan, &opts, &world).map_err(|e| match e {
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

/// The closing line: what ran, on how many units of how many ranks, in how long, where the
/// results are; failed units and where their tasks went.
fn print_outcome(plan: &Plan, report: &serde_json::Value) {
    say!("{}", outcome_line(plan, report));
}

/// The closing line's text.
fn outcome_line(plan: &Plan, report: &serde_json::Value) -> String {
    let nodes = report["nodes"].as_array();
    // Every rank's units (`nodes[].units` counts them), not only rank 0's.
    let units = nodes
        .map(|n| n.iter().filter_map(|x| x["units"].as_u64()).sum::<u64>())
        .filter(|&u| u > 0)
        .unwrap_or_else(|| report["units"].as_array().map_or(0, |u| u.len() as u64));
    let ranks = nodes.map_or(1, |n| n.len());
    let failed = report["failures"].as_array().map_or(0, |f| f.len());
    // Units the work queue left out (it planned the run faster without them), said once.
    let idle = report["units"].as_array().map_or(0, |u| {
        u.iter()
            .filter(|u| {
                u["tasks"].as_u64() == Some(0) && u.get("failed").is_none_or(|f| f.is_null())
            })
            .count()
    });
    let idle = if idle > 0 && report["tasks"].as_u64().is_some_and(|t| t > 0) {
        format!(
            "; {} ran no task (the scheduler found the other units faster than they could \
             help; report.json: units)",
            count(idle, "unit")
        )
    } else {
        String::new()
    };
    format!(
        "{}: {} tasks on {}{} in {:.3} s; checksum {}; results in {}{}{idle}",
        report["plugin"].as_str().unwrap_or(""),
        report["tasks"],
        count(units as usize, "unit"),
        if ranks > 1 {
            format!(" of {ranks} ranks")
        } else {
            String::new()
        },
        report["wall_seconds"].as_f64().unwrap_or(0.0),
        report["checksum"],
        plan.output.dir.display(),
        if failed > 0 {
            format!(
                "; {failed} unit{} failed and {} taken out of the run, the other units ran \
                 their tasks (report.json: failures)",
                if failed == 1 { "" } else { "s" },
                if failed == 1 { "was" } else { "were" }
            )
        } else {
            String::new()
        }
    )
}

/// `check`: validate the config, load the input, and print the resolved plan (the plugin and
/// its job, the units with each device's launch parameters, the scheduler, the output and its
/// space, the tuning rules behind the parameters); run nothing, write nothing. `name` is the
/// binary's, for the commands it suggests.
fn check(config: &Path, set: &[String], extra: &[&dyn Plugin], name: &str) -> Result<(), Error> {
    node::refuse_launcher_without_mpi()?;
    let plan = Plan::load(config, set)?.with_node_units()?;
    let plugin = runtime::resolve_plugin(&plan, extra)?;
    let plan = runtime::plan_for(&plan, extra)?;
    say!("config     {}", plan.config_path.display());
    say!("plugin     {} — {}", plugin.name(), plugin.description());
    // Before any preprocessing: a bad output.dir is refused at once.
    crate::sink::outdir::validate(&plan.output.dir)?;
    let prepared = runtime::prepare(&plan, extra, 1)?;
    let job = prepared.job.as_ref();
    say!("           {}  ({} tasks)", job.describe(), job.tasks());
    // What the plugin says of its plan (its input, the tasks it chose), aligned as ours.
    for (label, text) in job.details().check_lines {
        say!("{label:<10} {text}");
    }
    let selection = runtime::select_units(&plan, &prepared, 1)?;
    let params = check_units(&plan, job, &selection)?;
    check_scheduler(&plan);
    check_output(&plan, job, name)?;
    check_rules(&params);
    Ok(())
}

/// `check`'s units: the launch parameters `run` would choose on each device (the same tuner,
/// cache included), and from their queues the units `run` would start, then each device with
/// its parameters. Returns the parameters.
fn check_units(
    plan: &Plan,
    job: &dyn crate::plugin::Job,
    selection: &runtime::Selection,
) -> Result<Vec<LaunchParams>, Error> {
    let tuner = Tuner::new(plan.units.concurrent_kernels, Default::default()).plugin(&plan.plugin);
    let mut params = Vec::new();
    if crate::plugin::has_gpu(job) {
        for d in &selection.devices {
            params.push(crate::plugin::gpu_params(job, d, &tuner)?);
        }
    }
    let queues: Vec<usize> = params.iter().map(|p| p.queues.value).collect();
    let units = runtime::unit_names(plan, job, selection, &queues);
    say!(
        "units      {}  ({})",
        units.join(", "),
        count(units.len(), "unit")
    );
    if selection.devices.is_empty() {
        say!(
            "           no OpenCL device (units.opencl = {})",
            plan.units.opencl
        )
    }
    for (i, d) in selection.devices.iter().enumerate() {
        say!(
            "           gpu{}: {} [{}] ({} compute units)",
            d.index,
            d.info.name,
            d.info.platform,
            d.info.compute_units
        );
        if let Some(p) = params.get(i) {
            print_launch_plan(p);
        }
    }
    say!(
        "           concurrent_kernels = {}",
        plan.units
            .concurrent_kernels
            .map_or("auto (tuner)".to_string(), |k| k.to_string())
    );
    Ok(params)
}

/// `check`'s scheduler line: the policy and chunk sizes.
fn check_scheduler(plan: &Plan) {
    say!(
        "scheduler  policy = {}, chunk = {}, gpu_chunk = {}",
        runtime::policy_name(plan.scheduler.policy),
        plan.scheduler
            .chunk
            .map_or("auto".into(), |c| c.to_string()),
        plan.scheduler
            .gpu_chunk
            .map_or("auto (batch)".into(), |c| c.to_string())
    );
}

/// `check`'s output lines: the directory and what is written, the space needed and free, and
/// an unfinished run there (with the commands of binary `name` that continue or discard it).
fn check_output(plan: &Plan, job: &dyn crate::plugin::Job, name: &str) -> Result<(), Error> {
    say!(
        "output     {} (trace = {})",
        plan.output.dir.display(),
        plan.output.trace
    );
    let out = runtime::output_status(plan, job)?;
    use crate::sink::outdir::human_bytes;
    say!(
        "           needs {}; {} free",
        human_bytes(out.need),
        human_bytes(out.free)
    );
    if out.need > out.free {
        say!(
            "           warning: the outputs need {} but only {} are free: `{name} run` will refuse this",
            human_bytes(out.need),
            human_bytes(out.free)
        );
    }
    if let Some((done, total)) = out.unfinished {
        say!(
            "           holds an unfinished run ({done} of {total} tasks done): `{name} run --resume` continues it, `{name} run --restart` discards it"
        );
    }
    Ok(())
}

/// `check`'s tuning rules: those that chose the parameters shown (the generic ones behind a
/// value shown, then the plugin's own), each once, by name; none without a device.
fn check_rules(params: &[LaunchParams]) {
    let mut rules: Vec<crate::tuning::Rule> = Vec::new();
    for r in params.iter().flat_map(|p| p.applied_rules()) {
        if !rules.iter().any(|x| x.when == r.when) {
            rules.push(r);
        }
    }
    if !rules.is_empty() {
        say!("tuning rules:");
        for r in &rules {
            match &r.name {
                Some(name) => say!("  - [{name}] {}: {}", r.when, r.what),
                None => say!("  - {}: {}", r.when, r.what),
            }
        }
    }
}

/// `1 unit`, `3 units`.
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

fn devices() {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    say!("CPU: {cores} cores (host threads available to CPU workers)");
    match crate::device::list() {
        Ok(list) if list.is_empty() => {
            say!("OpenCL: platforms found, but none lists a device")
        }
        Ok(list) => {
            for (i, (d, _)) in list.iter().enumerate() {
                say!(
                    "OpenCL {i}: {} [{}] type={} compute_units={} clock={} MHz global={:.0} MiB local={} KiB max_work_group={} int64_atomics={} fp64={} driver={}",
                    d.name, d.platform, d.kind, d.compute_units, d.clock_mhz,
                    d.global_mem as f64 / 1048576.0, d.local_mem / 1024, d.max_work_group, d.int64_atomics, d.fp64, d.driver
                );
            }
        }
        // The error's own text starts with "OpenCL: ".
        Err(e) => say!("{e}"),
    }
}

fn print_launch_plan(p: &LaunchParams) {
    let show = |what: &str, c: &Choice| {
        say!(
            "             {what:<22} {:>7}  ({}: {})",
            c.value,
            c.source.as_str(),
            c.reason
        );
    };
    show("batch", &p.batch);
    show("queues", &p.queues);
    // Only the grid kinds the launched kernels have, then the plugin's own parameters.
    if let Some(c) = &p.groups_per_task {
        show("groups_per_task", c);
    }
    if let Some(c) = &p.persistent_items {
        show("persistent_items", c);
    }
    for (k, c) in &p.knobs {
        show(k, c);
    }
    for (k, c) in &p.local {
        show(&format!("local {k}"), c);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The closing line says when units ran no task (and not when they failed, which it says
    /// otherwise).
    #[test]
    fn the_closing_line_names_units_that_ran_no_task() {
        let plan = Plan::from_toml("[run]\nplugin = \"x\"\n", Path::new("x.toml"), &[]).unwrap();
        let report = |tasks: [u64; 3], failed: bool| {
            let units: Vec<serde_json::Value> = tasks
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    let failed = (failed && i == 2).then_some("broke");
                    serde_json::json!({ "name": format!("cpu{i}"), "tasks": t, "failed": failed })
                })
                .collect();
            serde_json::json!({ "plugin": "x", "tasks": tasks.iter().sum::<u64>(), "units": units,
                "failures": if failed { vec!["broke"] } else { vec![] }, "checksum": {} })
        };
        let line = outcome_line(&plan, &report([10, 0, 0], false));
        assert!(line.contains("; 2 units ran no task"), "{line}");
        let line = outcome_line(&plan, &report([10, 5, 0], true));
        assert!(!line.contains("ran no task"), "{line}");
        let line = outcome_line(&plan, &report([10, 5, 1], false));
        assert!(!line.contains("ran no task"), "{line}");
    }

    /// `text` with the framework's own names taken out (its output folder, cache folder and log
    /// target, which every binary shares): what is left must not say `tuccompi`.
    fn names_the_command(text: &str) -> bool {
        [
            "tuccompi-out",
            ".cache/tuccompi",
            "tuccompi=debug",
            "TUCCOMPI_",
        ]
        .iter()
        .fold(text.replace("\\-", "-"), |t, shared| t.replace(shared, ""))
        .contains("tuccompi")
    }

    #[test]
    fn the_command_line_calls_itself_by_the_binarys_name() {
        let mut cmd = command("collatz");
        cmd.build();
        let help = cmd.render_long_help().to_string();
        assert!(
            help.contains("Usage: collatz [OPTIONS] <COMMAND>"),
            "{help}"
        );
        assert!(!names_the_command(&help), "{help}");
        for sub in [
            "run",
            "check",
            "tune",
            "history",
            "plugins",
            "devices",
            "completions",
            "man",
        ] {
            let sub = cmd.find_subcommand_mut(sub).unwrap();
            let help = sub.render_long_help().to_string();
            assert!(
                help.contains(&format!("Usage: collatz {}", sub.get_name())),
                "{help}"
            );
            assert!(!names_the_command(&help), "{help}");
        }
        let completions = cmd.find_subcommand("completions").unwrap();
        let about = completions.get_about().unwrap().to_string();
        assert!(about.contains("`collatz completions bash"), "{about}");
        let man = cmd
            .find_subcommand("man")
            .unwrap()
            .get_about()
            .unwrap()
            .to_string();
        assert!(
            man.contains("`collatz man > ~/.local/share/man/man1/collatz.1`"),
            "{man}"
        );
        // A mistake's message shows the binary's usage.
        let e = command("collatz")
            .try_get_matches_from(["collatz", "rnu"])
            .err()
            .unwrap()
            .render()
            .to_string();
        assert!(
            e.contains("Usage: collatz") && !names_the_command(&e),
            "{e}"
        );
        // The man page and the completion scripts.
        let mut man = Vec::new();
        clap_mangen::Man::new(command("collatz"))
            .render(&mut man)
            .unwrap();
        let man = String::from_utf8(man).unwrap();
        assert!(
            man.contains(".TH collatz 1") && !names_the_command(&man),
            "{man}"
        );
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command("collatz"), "collatz", &mut script);
            let script = String::from_utf8(script).unwrap();
            assert!(
                script.contains("_collatz") && !names_the_command(&script),
                "{script}"
            );
        }
        // The built-in binary still says `tuccompi`.
        let help = command("tuccompi").render_long_help().to_string();
        assert!(
            help.contains("Usage: tuccompi [OPTIONS] <COMMAND>"),
            "{help}"
        );
    }

    #[test]
    fn the_name_is_argv0s_file_name_else_the_package_name() {
        let name = |a: &str| name_of(Some(std::ffi::OsStr::new(a)));
        assert_eq!(name("/home/me/target/release/collatz"), "collatz");
        assert_eq!(name("./knn"), "knn");
        assert_eq!(name("tuccompi"), "tuccompi");
        assert_eq!(name(""), "tuccompi");
        assert_eq!(name("/"), "tuccompi");
        assert_eq!(name_of(None), "tuccompi");
    }
}
