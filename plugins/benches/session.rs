//! Jobs in one session against the same jobs each from cold, in one process: what a session
//! saves per job (device discovery, contexts, program builds, the hierarchy's reading and
//! upload).
//!
//!     cargo bench -p tuccompi-plugins --bench session -- CONFIG JOBS [KEY=VALUE ...]
//!
//! Runs CONFIG (with the `--set` style overrides) JOBS times as runs of their own, then JOBS
//! times as jobs of one session, each into its own output directory under `$TMPDIR`, then JOBS
//! times as in-memory jobs of that session (`RunOptions::in_memory`: no directory at all), and
//! prints each job's wall and run-phase seconds and its checksum (every job must agree).
use std::time::Instant;
use tuccompi::{node::Single, Plan, RunOptions, Session};

fn main() -> tuccompi::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (Some(config), Some(jobs)) = (args.first(), args.get(1)) else {
        eprintln!("usage: session CONFIG JOBS [KEY=VALUE ...]");
        std::process::exit(2);
    };
    let jobs: usize = jobs.parse().expect("JOBS is a number");
    let base = tempfile::tempdir().expect("a temporary directory");
    let plugins = tuccompi_plugins::registry();
    let session = Session::new();
    let mut checksums = Vec::new();
    for (mode, in_session, in_memory) in [
        ("cold", false, false),
        ("session", true, false),
        ("memory", true, true),
    ] {
        for j in 0..jobs {
            let mut sets: Vec<String> = args[2..].to_vec();
            let dir = base.path().join(format!("{mode}-{j}"));
            sets.push(format!("output.dir={:?}", dir.display().to_string()));
            let plan = Plan::load(std::path::Path::new(config), &sets)?.with_node_units()?;
            let opts = RunOptions {
                quiet: true,
                plugins: plugins.clone(),
                in_memory,
                ..RunOptions::default()
            };
            let t = Instant::now();
            let out = if in_session {
                session.run_with(&plan, opts)?
            } else {
                tuccompi::runtime::run(&plan, &opts, &Single)?
            };
            let wall = t.elapsed().as_secs_f64();
            println!(
                "{mode} job {j}: wall {:.1} ms, run phase {:.1} ms, checksum {}",
                wall * 1e3,
                out.run_seconds * 1e3,
                out.report["checksum"]
            );
            checksums.push(out.report["checksum"].to_string());
            std::fs::remove_dir_all(&dir).ok();
        }
    }
    assert!(
        checksums.windows(2).all(|w| w[0] == w[1]),
        "the jobs disagree: {checksums:?}"
    );
    Ok(())
}
