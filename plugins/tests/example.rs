//! The example plugins (packages the tests depend on): collatz (examples/collatz/): CPU and GPU halves through the runtime,
//! and the GPU worker alone on chunks and launch sizes the runtime seldom makes, against a plain
//! loop; options (examples/options/): the price against Black-Scholes, the halves bit for bit
//! equal. Through each example's whole command line (this test binary re-run as the example,
//! [`example_cli`]): a kernel that does not build, or whose parameters do not match what the
//! GPU half passes, takes the device out, loudly, and the CPU workers finish the run.

use crate::util::*;
use std::path::Path;
use std::process::Command;
use tuccompi::device::{discover, Filter};
use tuccompi::plugin::{Gpu, Job, RecordsOut, Worker};
use tuccompi::tuning::{Choice, Tuner};
use tuccompi::{node::Single, Plan, RunOptions};

/// The checksum and the per-block records (`collatz.csv`) of a run on 1000 .. 301,000 in blocks
/// of 7,000 (the last one 6,000).
fn run_collatz(sets: &[&str]) -> (serde_json::Value, Vec<[u64; 3]>) {
    let dir = tmpdir("collatz");
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("output.dir={:?}", dir.display().to_string()));
    let text =
        "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = 1000\ncount = 300000\nblock = 7000\n";
    let plan = Plan::from_toml(text, std::path::Path::new("c.toml"), &all).unwrap();
    let opts = RunOptions {
        quiet: true,
        plugins: vec![&collatz::Collatz],
        ..Default::default()
    };
    let checksum = tuccompi_plugins::run(&plan, &opts, &Single).unwrap().report["checksum"].clone();
    let csv = std::fs::read_to_string(dir.join("collatz.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("block,first,sum,max,argmax"));
    let blocks = lines
        .map(|l| {
            let v: Vec<u64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            [v[2], v[3], v[4]]
        })
        .collect();
    (checksum, blocks)
}

fn reference() -> serde_json::Value {
    reference_from(1000)
}

/// The checksum of 300,000 numbers from `first`, each number's steps from `collatz::steps`.
fn reference_from(first: u64) -> serde_json::Value {
    let (mut total, mut best, mut arg) = (0u64, 0u64, 0u64);
    for x in first..first + 300_000 {
        let s = collatz::steps(x) as u64;
        total += s;
        if s > best {
            (best, arg) = (s, x);
        }
    }
    serde_json::json!({ "total_steps": total, "max_steps": best, "argmax": arg })
}

/// What `examples/collatz/session.rs` does (two jobs in one session, on every unit the machine
/// has): both checksums are the reference's, and the second job discovers no device.
#[test]
fn collatz_two_jobs_in_one_session() {
    let session = tuccompi::Session::new();
    for first in [1_000u64, 2_000_000] {
        let dir = tmpdir("collatz-session");
        let config = format!(
            "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = {first}\ncount = 300000\n\
             block = 7000\n[units]\ndevice_type = \"all\"\n[output]\ndir = {:?}\n",
            dir.display().to_string()
        );
        let plan = Plan::from_toml(&config, std::path::Path::new("s.toml"), &[]).unwrap();
        let outcome = session.run(&plan, &[&collatz::Collatz]).unwrap();
        assert_eq!(
            outcome.report["checksum"],
            reference_from(first),
            "from {first}"
        );
    }
    assert!(session.discoveries() <= 1, "{}", session.discoveries());
}

/// Per block of `first .. first + count`: (sum of steps, most steps, the smallest number taking
/// them), each number's steps from `collatz::steps`.
fn reference_blocks(first: u64, count: u64, block: u64) -> Vec<[u64; 3]> {
    let end = first + count;
    (first..end)
        .step_by(block as usize)
        .map(|a| {
            let steps: Vec<u64> = (a..(a + block).min(end))
                .map(|x| collatz::steps(x) as u64)
                .collect();
            let max = *steps.iter().max().unwrap();
            let arg = a + steps.iter().position(|&s| s == max).unwrap() as u64;
            [steps.iter().sum(), max, arg]
        })
        .collect()
}

/// Blocks whose most steps are taken by more than one number: where a rule that kept the largest
/// (or any other) of them would differ.
fn tied_blocks(first: u64, count: u64, block: u64) -> usize {
    let end = first + count;
    (first..end)
        .step_by(block as usize)
        .filter(|&a| {
            let steps: Vec<u32> = (a..(a + block).min(end)).map(collatz::steps).collect();
            let max = *steps.iter().max().unwrap();
            steps.iter().filter(|&&s| s == max).count() > 1
        })
        .count()
}

#[test]
fn collatz_cpu_half() {
    let (checksum, blocks) = run_collatz(&["units.opencl=none", "units.cpu_workers=3"]);
    assert_eq!(checksum, reference());
    assert_eq!(blocks, reference_blocks(1000, 300_000, 7000));
}

#[test]
fn collatz_gpu_half_and_mixed() {
    if !opencl() {
        return;
    }
    let want = (reference(), reference_blocks(1000, 300_000, 7000));
    assert!(tied_blocks(1000, 300_000, 7000) > 0);
    // 43 blocks: one chunk, fewer blocks than the batch.
    let gpu = run_collatz(&["units.cpu_workers=0", "units.device_type=all"]);
    assert_eq!(gpu, want);
    // Chunks of 5 blocks.
    let chunks = run_collatz(&[
        "units.cpu_workers=0",
        "units.device_type=all",
        "scheduler.gpu_chunk=5",
    ]);
    assert_eq!(chunks, want);
    let mixed = run_collatz(&[
        "units.cpu_workers=2",
        "units.device_type=all",
        "scheduler.policy=equitable",
    ]);
    assert_eq!(mixed, want);
}

/// The GPU worker alone, with local sizes and batches set by hand: blocks that are not a multiple
/// of either local size, groups wider than a block, groups of one item, the driver's local size
/// for the steps, partial last blocks, ties for the most steps, and chunks of several sub-batches
/// (the last one short), of fewer blocks than the batch, and of one block.
#[test]
fn collatz_gpu_worker_shapes() {
    if !opencl() {
        return;
    }
    let filter = Filter {
        device_type: "all".into(),
        names: vec![],
    };
    let device = discover(&filter).unwrap().remove(0);
    // (first, count, block, local of collatz_steps, local of collatz_reduce, batch)
    let cases: [(u64, u64, u64, usize, usize, usize); 5] = [
        (1000, 10_500, 1000, 64, 48, 3),
        (1, 333, 10, 7, 64, 4),
        (77, 5000, 999, 32, 1, 2),
        (5, 4321, 700, 0, 256, 5),
        (123_456, 3000, 1024, 96, 100, 1),
    ];
    for (first, count, block, ls, lr, batch) in cases {
        let case =
            format!("first {first} count {count} block {block} locals {ls}/{lr} batch {batch}");
        let job: collatz::CollatzJob = serde_json::from_value(serde_json::json!({
            "first": first, "count": count, "block": block
        }))
        .unwrap();
        let mut params = job.gpu_params(&device, &Tuner::default()).unwrap();
        params
            .local
            .insert("collatz_steps".into(), Choice::fixed(ls, "test"));
        params
            .local
            .insert("collatz_reduce".into(), Choice::fixed(lr, "test"));
        params.batch = Choice::fixed(batch, "test");
        let data = job.gpu_setup(&device, &params).unwrap();
        let gpu = Gpu::new(&device, &params, device.queue().unwrap(), &data);
        let mut worker = job.gpu_worker(gpu).unwrap();
        let tasks = job.tasks();
        let mut records = vec![0u64; tasks * 3];
        let sizes = [2 * batch + 1, batch.saturating_sub(1).max(1), 1];
        let mut a = 0;
        for size in sizes.iter().cycle() {
            if a == tasks {
                break;
            }
            let b = (a + size).min(tasks);
            let mut out = RecordsOut::new(a, 3, &mut records[3 * a..3 * b]);
            worker.run(a..b, &mut out).unwrap();
            a = b;
        }
        let got: Vec<[u64; 3]> = records
            .chunks_exact(3)
            .map(|r| [r[0], r[1], r[2]])
            .collect();
        assert_eq!(got, reference_blocks(first, count, block), "{case}");
        assert!(
            tied_blocks(first, count, block) > 0,
            "{case}: no ties to test"
        );
    }
}

/// Not a test of its own: in a process that [`example`] starts with `TUCCOMPI_TEST_CLI` set,
/// this is the example's `main` (`tuccompi::cli::main_from` with the example's plugin) over the
/// arguments in that variable, and the process exits with its code.
#[test]
fn example_cli() {
    let Some(args) = std::env::var_os("TUCCOMPI_TEST_CLI") else {
        return;
    };
    let args: Vec<String> = args
        .to_str()
        .unwrap()
        .split('\u{1f}')
        .map(String::from)
        .collect();
    let plugin: &dyn tuccompi::plugin::Plugin = match args[0].as_str() {
        "collatz" => &collatz::Collatz,
        _ => &options::Options,
    };
    let code = tuccompi::cli::main_from(args, &[plugin]);
    let n = (0..=255u8)
        .find(|&n| std::process::ExitCode::from(n) == code)
        .unwrap();
    std::process::exit(n as i32)
}

/// Run example `name`'s command line with `args` in `cwd`: (exit code, stdout, stderr).
fn example(name: &str, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let joined = [&[name][..], args].concat().join("\u{1f}");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "example::example_cli",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .current_dir(cwd)
        .env("TUCCOMPI_TEST_CLI", joined)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!e.contains("panicked"), "panic: {e}");
    (out.status.code().unwrap_or(-1), o, e)
}

/// A directory for `TUCCOMPI_KERNELS` holding collatz.cl with `edit` applied and collatz.toml.
fn collatz_kernels(dir: &Path, edit: impl Fn(&str) -> String) -> String {
    let k = dir.join("kernels");
    std::fs::create_dir_all(&k).unwrap();
    let cl = include_str!("../../examples/collatz/collatz.cl");
    let edited = edit(cl);
    assert_ne!(edited, cl, "the edit changed nothing");
    std::fs::write(k.join("collatz.cl"), edited).unwrap();
    std::fs::write(
        k.join("collatz.toml"),
        include_str!("../../examples/collatz/collatz.toml"),
    )
    .unwrap();
    k.display().to_string()
}

const COLLATZ: &str =
    "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = 1000\ncount = 300000\nblock = 7000\n";

/// `collatz run` in `dir` with `sets` (each a `--set`) and `env`; the checksum of report.json
/// when the run succeeded.
fn collatz_cli(
    dir: &Path,
    sets: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String, Option<serde_json::Value>) {
    std::fs::write(dir.join("c.toml"), COLLATZ).unwrap();
    let out = dir.join("out");
    let od = format!("output.dir={:?}", out.display().to_string());
    let mut args = vec!["run", "c.toml", "--set", &od];
    for s in sets {
        args.extend(["--set", s]);
    }
    let (code, o, e) = example("collatz", dir, &args, env);
    let checksum = std::fs::read_to_string(out.join("report.json"))
        .ok()
        .map(|r| serde_json::from_str::<serde_json::Value>(&r).unwrap()["checksum"].clone());
    (code, o, e, checksum)
}

/// A copy of collatz.cl with a syntax error, under TUCCOMPI_KERNELS. On PoCL + CPU
/// workers under the default "retry": exit 0, the CPU-only checksum, one warning line naming the
/// device unit and the copy's path and line, the closing line counting the failed unit. Under
/// "abort", and with no CPU worker, the run fails with that message and writes no result.
#[test]
fn a_kernel_that_does_not_build_takes_its_device_out() {
    if !opencl() {
        return;
    }
    let dir = tmpdir("collatz-broken");
    let kdir = collatz_kernels(&dir, |cl| cl.replace("uint s = 0;", "uint s = 0 +;"));
    let line = include_str!("../../examples/collatz/collatz.cl")
        .lines()
        .position(|l| l.contains("uint s = 0;"))
        .unwrap()
        + 1;
    let env = [("TUCCOMPI_KERNELS", kdir.as_str())];
    let path = format!("{kdir}/collatz.cl:{line}:");
    let (code, out, err, checksum) = collatz_cli(
        &dir,
        &["units.device_type=all", "units.cpu_workers=2"],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(checksum, Some(reference()), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("unit gpu0") && warnings[0].contains(&path),
        "{err}"
    );
    // The failure reaches stderr once, as the binary's own message: no raw line of the
    // driver's compiler (clang's "1 error generated.").
    assert!(warnings[0].starts_with("collatz: warning:"), "{err}");
    assert_eq!(err.matches("failed to build on '").count(), 1, "{err}");
    assert!(!err.contains(" generated."), "{err}");
    assert!(
        out.contains("1 unit failed and was taken out of the run"),
        "{out}"
    );
    // Under "abort", and on the device alone: the run fails, naming the copy.
    for sets in [
        &[
            "units.device_type=all",
            "units.cpu_workers=2",
            "units.on_failure=\"abort\"",
        ][..],
        &["units.device_type=all", "units.cpu_workers=0"][..],
    ] {
        let d = tmpdir("collatz-broken");
        let (code, _, err, checksum) = collatz_cli(&d, sets, &env);
        assert_eq!(code, 2, "{sets:?}: {err}");
        assert!(
            err.contains(&path) && err.contains("failed to build"),
            "{err}"
        );
        assert_eq!(checksum, None);
    }
}

/// A copy whose collatz_steps declares `__global ulong* steps` while the GPU half
/// passes a u32 buffer. The launch is refused before it runs, naming the kernel, the argument
/// and both types; with CPU workers the run ends with the CPU-only checksum, on the device alone
/// it fails: never a different result.
#[test]
fn a_launch_that_does_not_match_the_kernel_is_refused() {
    if !opencl() {
        return;
    }
    let dir = tmpdir("collatz-mistyped");
    let kdir = collatz_kernels(&dir, |cl| {
        cl.replace(
            "collatz_steps(__global uint* steps",
            "collatz_steps(__global ulong* steps",
        )
    });
    let env = [("TUCCOMPI_KERNELS", kdir.as_str())];
    let want = "kernel 'collatz_steps'";
    let arg = "argument 0 'steps' is declared __global ulong*, but the GPU half passes __global uint* (a DBuf<u32>)";
    let (code, out, err, checksum) = collatz_cli(
        &dir,
        &["units.device_type=all", "units.cpu_workers=2"],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(checksum, Some(reference()), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("unit gpu0.q0")
            && warnings[0].contains(want)
            && warnings[0].contains(arg),
        "{err}"
    );
    assert!(out.contains("1 unit failed"), "{out}");
    let d = tmpdir("collatz-mistyped");
    let (code, _, err, checksum) =
        collatz_cli(&d, &["units.device_type=all", "units.cpu_workers=0"], &env);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(want) && err.contains(arg), "{err}");
    assert_eq!(checksum, None);
}

/// Black-Scholes price of a European call; the normal CDF by Simpson's rule on the density
/// (independent of the example's code).
fn black_scholes(spot: f64, strike: f64, rate: f64, vol: f64, t: f64) -> f64 {
    let phi = |x: f64| {
        let (a, n) = (-12.0f64, 200_000);
        let h = (x - a) / n as f64;
        let f = |u: f64| (-0.5 * u * u).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let mut s = f(a) + f(x);
        for i in 1..n {
            s += f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    };
    let d1 = ((spot / strike).ln() + (rate + 0.5 * vol * vol) * t) / (vol * t.sqrt());
    let d2 = d1 - vol * t.sqrt();
    spot * phi(d1) - strike * (-rate * t).exp() * phi(d2)
}

/// The options example on `sets`: its checksum (price, standard error), options.csv and the
/// report.
fn run_options(sets: &[&str]) -> (f64, f64, String, serde_json::Value) {
    let dir = tmpdir("options");
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("output.dir={:?}", dir.display().to_string()));
    let text = "[run]\nplugin = \"options\"\n[options]\nspot = 100.0\nstrike = 105.0\n\
                rate = 0.03\nvolatility = 0.25\nmaturity = 0.75\npaths = 300000\n\
                paths_per_task = 10000\nseed = 7\n";
    let plan = Plan::from_toml(text, std::path::Path::new("o.toml"), &all).unwrap();
    let opts = RunOptions {
        quiet: true,
        plugins: vec![&options::Options],
        ..Default::default()
    };
    let report = tuccompi_plugins::run(&plan, &opts, &Single).unwrap().report;
    let c = &report["checksum"];
    let csv = std::fs::read_to_string(dir.join("options.csv")).unwrap();
    (
        c["price"].as_f64().unwrap(),
        c["standard_error"].as_f64().unwrap(),
        csv,
        report,
    )
}

#[test]
fn options_price_is_within_4_standard_errors_of_black_scholes() {
    let (price, se, csv, _) = run_options(&["units.opencl=none", "units.cpu_workers=3"]);
    let bs = black_scholes(100.0, 105.0, 0.03, 0.25, 0.75);
    // The closed form as Python's math.erfc gives it: 7.4674604603430055.
    assert!((bs - 7.4674604603430055).abs() < 1e-9, "{bs}");
    assert!(se > 0.0 && se < 0.05, "{se}");
    assert!(
        (price - bs).abs() <= 4.0 * se,
        "price {price} ± {se}, Black-Scholes {bs}"
    );
    // 30 tasks of 10,000 paths.
    assert_eq!(csv.lines().count(), 31);
    assert!(csv
        .lines()
        .skip(1)
        .all(|l| l.split(',').nth(1) == Some("10000")));
    // Another seed gives another estimate, as close.
    let (p2, se2, _, _) = run_options(&["units.opencl=none", "options.seed=8"]);
    assert_ne!(p2, price);
    assert!((p2 - bs).abs() <= 4.0 * se2);
}

/// The GPU half (PoCL) gives every task's record bit for bit as the CPU half does: the same
/// options.csv, so the same price; the default [verify] re-ran some of its tasks on the CPU.
#[test]
fn options_gpu_half_equals_the_cpu_half() {
    if !opencl() {
        return;
    }
    let cpu = run_options(&["units.opencl=none"]);
    let gpu = run_options(&["units.cpu_workers=0", "units.device_type=all"]);
    assert_eq!(gpu.2, cpu.2, "per-task records differ");
    assert!((gpu.0 - cpu.0).abs() <= 1e-9 * cpu.0.abs());
    assert_eq!((gpu.0, gpu.1), (cpu.0, cpu.1));
    assert!(
        gpu.3["verify"]["verified"].as_u64().unwrap() >= 1,
        "{}",
        gpu.3["verify"]
    );
    assert_eq!(gpu.3["verify"]["sample"], "auto");
    let mixed = run_options(&[
        "units.cpu_workers=2",
        "units.device_type=all",
        "scheduler.gpu_chunk=3",
    ]);
    assert_eq!(mixed.2, cpu.2);
}

/// `check` and `report.json` speak the plugin's terms: for collatz (a kernel of `grid =
/// "items"` and a reduction of `grid = "groups"`, no input table, no distance matrix) no
/// graph, APSP or Floyd-Warshall field or rule, no persistent grid; its kernels' local sizes
/// and its groups per task with origin and reason, and only the generic rules behind the
/// values shown. options (two `grid = "items"` kernels) shows no groups per task either. The built-ins keep their own: apsp's GPU
/// PHAST shows its sweep parameters and rules, fw-blocked its tile shape and rules.
#[test]
fn check_and_report_speak_the_plugins_terms() {
    if !opencl() {
        return;
    }
    let dir = tmpdir("collatz-terms");
    std::fs::write(dir.join("c.toml"), COLLATZ).unwrap();
    let od = format!("output.dir={:?}", dir.join("out").display().to_string());
    let sets = ["--set", &od, "--set", "units.device_type=all"];
    let (code, out, err) = example(
        "collatz",
        &dir,
        &[&["check", "c.toml"][..], &sets].concat(),
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("local collatz_steps"), "{out}");
    assert!(out.contains("tuning rules:\n"), "{out}");
    let lower = out.to_lowercase();
    assert!(out.contains("groups_per_task"), "{out}");
    for word in [
        "persistent",
        "distances",
        "sources",
        "input ",
        "phast",
        "sweep",
        "tile",
        "floyd",
        "apsp",
        "graph",
    ] {
        assert!(
            !lower.contains(word),
            "check of collatz says {word:?}:\n{out}"
        );
    }
    let (code, _, err) = example(
        "collatz",
        &dir,
        &[&["run", "c.toml", "-q"][..], &sets].concat(),
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/report.json")).unwrap())
            .unwrap();
    let t = &report["devices"][0]["tuning"];
    let steps = &t["local"]["collatz_steps"];
    assert!(steps["value"].as_u64().unwrap() >= 1, "{t}");
    assert!(!steps["reason"].as_str().unwrap().is_empty(), "{t}");
    assert!(t["groups_per_task"]["value"].as_u64().unwrap() >= 1, "{t}");
    for key in ["persistent_items", "tile", "sweep"] {
        assert!(t.get(key).is_none(), "report.json's tuning has {key}: {t}");
    }

    std::fs::write(
        dir.join("o.toml"),
        "[run]\nplugin = \"options\"\n[options]\nspot = 100.0\nstrike = 105.0\nrate = 0.03\n\
         volatility = 0.25\nmaturity = 0.75\npaths = 300000\npaths_per_task = 10000\nseed = 7\n",
    )
    .unwrap();
    let (code, out, err) = example(
        "options",
        &dir,
        &[&["check", "o.toml"][..], &sets].concat(),
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("local option_payoffs"), "{out}");
    for word in [
        "groups",
        "persistent",
        "distances",
        "phast",
        "tile",
        "graph",
    ] {
        assert!(
            !out.to_lowercase().contains(word),
            "check of options says {word:?}:\n{out}"
        );
    }

    // apsp's GPU PHAST and fw-blocked keep their own parameters and rules.
    let tuccompi = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
            .current_dir(&dir)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    std::fs::write(
        dir.join("apsp.toml"),
        "[run]\nplugin = \"apsp\"\nsources = 64\n[input.generate]\nmodel = \"road\"\n\
         vertices = 2000\nseed = 1\n[apsp]\ngpu_algorithm = \"phast\"\n[units]\n\
         device_type = \"all\"\n",
    )
    .unwrap();
    let out = tuccompi(&["check", "apsp.toml", "--set", &od]);
    for want in [
        "top_levels",
        "frontier",
        "upward_on_device",
        "level sweeps (PHAST)",
    ] {
        assert!(out.contains(want), "apsp's check lacks {want:?}:\n{out}");
    }
    std::fs::write(
        dir.join("fw.toml"),
        "[run]\nplugin = \"fw-blocked\"\n[input.generate]\nmodel = \"complete\"\n\
         vertices = 64\nseed = 1\n[units]\ndevice_type = \"all\"\n",
    )
    .unwrap();
    let out = tuccompi(&["check", "fw.toml", "--set", &od]);
    for want in [
        "block",
        "register_rows",
        "slab",
        "register tile, CPU device (PoCL)",
    ] {
        assert!(
            out.contains(want),
            "fw-blocked's check lacks {want:?}:\n{out}"
        );
    }
}

/// Escape counts of the mandel example's image, written here apart from the plugin: the
/// iteration on (re, im) pairs, stopping once |z|^2 exceeds 4.
fn mandel_reference(w: usize, h: usize, max_iter: u32) -> Vec<u32> {
    let mut counts = Vec::with_capacity(w * h);
    for r in 0..h {
        let ci = -1.25 + r as f64 * (2.5 / h as f64);
        for i in 0..w {
            let cr = -2.0 + i as f64 * (2.5 / w as f64);
            let (mut zr, mut zi, mut n) = (0.0f64, 0.0f64, 0u32);
            loop {
                let (rr, ii) = (zr * zr, zi * zi);
                if n == max_iter || rr + ii > 4.0 {
                    break;
                }
                zi = 2.0 * zr * zi + ci;
                zr = rr - ii + cr;
                n += 1;
            }
            counts.push(n);
        }
    }
    counts
}

/// The mandel example (results in a bulk file only, no records) gives the reference's counts,
/// byte for byte the same file on CPU workers, the GPU half alone and both, under both policies.
#[test]
fn mandel_rows_equal_the_reference_on_every_unit_mix() {
    let (w, h, max_iter) = (96usize, 80usize, 300u32);
    let want = mandel_reference(w, h, max_iter);
    assert_eq!(
        want[(h / 2) * w + w * 4 / 5],
        max_iter,
        "c = 0 is inside the set"
    );
    assert_eq!(want[0], 1, "c = -2 - 1.25i leaves at once");
    let mut mixes = vec![vec!["units.opencl=none", "units.cpu_workers=3"]];
    if opencl() {
        for policy in [
            "scheduler.policy=\"equitable\"",
            "scheduler.policy=\"work-queue\"",
        ] {
            mixes.push(vec![
                "units.device_type=\"all\"",
                "units.cpu_workers=0",
                policy,
            ]);
            mixes.push(vec![
                "units.device_type=\"all\"",
                "units.cpu_workers=2",
                policy,
            ]);
        }
    }
    let mut first: Option<Vec<u8>> = None;
    for sets in mixes {
        let dir = tmpdir("mandel");
        let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        all.push(format!("output.dir={:?}", dir.display().to_string()));
        let text = format!("[run]\nplugin = \"mandel\"\n[mandel]\nwidth = {w}\nheight = {h}\nmax_iter = {max_iter}\n");
        let plan = Plan::from_toml(&text, Path::new("m.toml"), &all).unwrap();
        let opts = RunOptions {
            quiet: true,
            plugins: vec![&mandel::Mandel],
            ..Default::default()
        };
        tuccompi_plugins::run(&plan, &opts, &Single).unwrap();
        let bytes = std::fs::read(dir.join("counts.npy")).unwrap();
        let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
        assert_eq!(npy.shape(), &[h as u64, w as u64]);
        assert!(
            npy.into_vec::<u32>().unwrap() == want,
            "{sets:?}: other counts than the reference"
        );
        match &first {
            None => first = Some(bytes),
            Some(f) => assert!(f == &bytes, "{sets:?}: other bytes than the first mix's"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A 0 in a `NonZeroU32` option is refused naming the key.
#[test]
fn mandel_refuses_a_zero_naming_the_key() {
    let text = "[run]\nplugin = \"mandel\"\n[mandel]\nwidth = 8\nheight = 0\nmax_iter = 10\n";
    let dir = tmpdir("mandel-zero");
    let out = format!("output.dir={:?}", dir.display().to_string());
    let plan = Plan::from_toml(text, Path::new("m.toml"), &[out]).unwrap();
    let opts = RunOptions {
        quiet: true,
        plugins: vec![&mandel::Mandel],
        ..Default::default()
    };
    let e = tuccompi_plugins::run(&plan, &opts, &Single)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mandel.height") && e.contains("nonzero"), "{e}");
}
