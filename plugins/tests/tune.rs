//! Tuning and checks for any plugin: `check` lists exactly the units `run` starts; `tune`
//! times the candidates a plugin declares and the next run uses the stored winners.

use crate::util::*;
use std::path::Path;
use std::process::Command;

/// `tuccompi ARGS` in `cwd`, with the caches in `cwd/cache`: (exit code, stdout, stderr).
fn tuccompi_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .args(args)
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!e.contains("panicked"), "panic: {e}");
    (out.status.code().unwrap_or(-1), o, e)
}

/// The unit names of `check`'s `units` line (`units      gpu0.q0, cpu0  (2 units)`).
fn check_units(out: &str) -> Vec<String> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("units      "))
        .unwrap_or_else(|| panic!("no units line in:\n{out}"));
    let names = line.split("  (").next().unwrap();
    names.split(", ").map(str::to_string).collect()
}

/// `check` prints exactly the units `run` starts (names and number), with PoCL's device and
/// without, with "auto" CPU workers (one core left to each GPU queue) and a fixed count.
#[test]
fn check_lists_the_units_run_starts() {
    let with_gpu = opencl();
    let cwd = tmpdir("tune-units");
    let cfg = cwd.join("dense.toml");
    std::fs::write(
        &cfg,
        "[run]\nplugin = \"dense-dijkstra\"\nsources = 16\n[input.generate]\n\
         model = \"complete\"\nvertices = 64\nseed = 1\n[units]\ncpu_workers = \"auto\"\n\
         opencl = \"all\"\ndevice_type = \"all\"\n[output]\ndir = \"out\"\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let mut cases = vec![vec!["units.opencl=\"none\""], vec!["units.cpu_workers=3"]];
    cases.push(vec![]);
    for sets in cases {
        let mut args = vec![];
        for s in &sets {
            args.extend(["--set", s]);
        }
        let (code, out, err) = tuccompi_in(&cwd, &[&["check", cfg], &args[..]].concat());
        assert_eq!(code, 0, "{err}");
        let checked = check_units(&out);
        let _ = std::fs::remove_dir_all(cwd.join("out"));
        let (code, _, err) = tuccompi_in(&cwd, &[&["run", cfg, "-q"], &args[..]].concat());
        assert_eq!(code, 0, "{err}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(cwd.join("out/report.json")).unwrap())
                .unwrap();
        let ran: Vec<String> = report["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(checked, ran, "check and run disagree with --set {sets:?}");
        if with_gpu && sets.is_empty() {
            assert!(ran.iter().any(|u| u.starts_with("gpu")), "{ran:?}");
        }
    }
}

/// `tune` on a user's plugin (examples/collatz/, which declares its steps kernel's local
/// sizes as candidates): every candidate is timed and listed with its time, the fastest is
/// stored in the tuning cache, and the next `run` launches with it (origin "cache"), with the
/// same results as a CPU-only run.
#[test]
fn tune_times_a_plugins_candidates_and_run_uses_the_winner() {
    use tuccompi::{node::Single, Plan, RunOptions};
    if !opencl() {
        return;
    }
    let dir = tmpdir("tune-collatz");
    let text = "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = 1\ncount = 200000\nblock = 5000\n\
                [units]\nopencl = \"all\"\ndevice_type = \"all\"\ncpu_workers = 1\n";
    let out = format!("output.dir={:?}", dir.join("out").display().to_string());
    let plan = Plan::from_toml(text, Path::new("collatz.toml"), &[out]).unwrap();
    let mut rows = Vec::new();
    let options = tuccompi::runtime::TuneOptions {
        sample: Some(8),
        repeat: 1,
    };
    let (_, tuned) = tuccompi::runtime::tune(&plan, &[&collatz::Collatz], options, |r| {
        rows.push(r.clone())
    })
    .unwrap();
    assert!(!dir.join("out").exists(), "tune wrote into output.dir");
    // The declared candidates, each timed once (the device allows all four on PoCL).
    let dev = &tuned[0];
    let mine: Vec<_> = rows.iter().filter(|r| r.device == dev.device).collect();
    let mut sizes: Vec<usize> = mine.iter().map(|r| r.setting["local_size"]).collect();
    sizes.sort_unstable();
    sizes.dedup();
    assert_eq!(sizes, [32, 64, 128, 256], "{mine:?}");
    assert!(mine
        .iter()
        .all(|r| r.seconds.is_finite() && r.seconds > 0.0 && r.tasks == 8));
    // The kept size is the smallest whose time is within the tuner's noise (3%) of the
    // fastest: computed here from the listed times, not by the tuner's own `pick`.
    let fastest = mine.iter().map(|r| r.seconds).fold(f64::INFINITY, f64::min);
    let kept = mine
        .iter()
        .filter(|r| r.seconds <= fastest * 1.03)
        .map(|r| r.setting["local_size"])
        .min()
        .unwrap();
    assert_eq!(dev.best["local_size"], kept, "{mine:?}");
    assert!(dev.key.contains("collatz.steps"), "{}", dev.key);
    // The next run reads the winner from the cache.
    let opts = RunOptions {
        quiet: true,
        plugins: vec![&collatz::Collatz],
        ..Default::default()
    };
    let outcome = tuccompi_plugins::run(&plan, &opts, &Single).unwrap();
    let d = outcome
        .devices
        .iter()
        .find(|d| d.name == dev.device)
        .expect("the tuned device ran");
    let steps = &d.tuning.local["collatz_steps"];
    assert_eq!(
        (steps.value, steps.source.as_str()),
        (dev.best["local_size"], "cache"),
        "{:?}",
        d.tuning
    );
    let dev_json = &outcome.report["devices"][0]["tuning"]["local"]["collatz_steps"];
    assert_eq!(dev_json["source"], "cache", "{dev_json}");
    // Same results as the CPU half alone.
    let cpu_dir = format!("output.dir={:?}", dir.join("cpu").display().to_string());
    let cpu_plan = Plan::from_toml(
        text,
        Path::new("collatz.toml"),
        &[cpu_dir, "units.opencl=\"none\"".into()],
    )
    .unwrap();
    let cpu = tuccompi_plugins::run(&cpu_plan, &opts, &Single).unwrap();
    assert_eq!(outcome.report["checksum"], cpu.report["checksum"]);
}

/// `tune` on a plugin whose GPU half names no tuning cache key (examples/options/ builds its
/// request with `Request::new`): the winners are stored under the default key, the plugin's
/// name and its launched kernels, and the next run launches with them (origin "cache").
#[test]
fn tune_stores_a_half_without_a_cache_name_under_the_default_key() {
    use tuccompi::{node::Single, Plan, RunOptions};
    if !opencl() {
        return;
    }
    let dir = tmpdir("tune-options");
    let text = "[run]\nplugin = \"options\"\n[options]\nspot = 100.0\nstrike = 105.0\n\
                rate = 0.03\nvolatility = 0.25\nmaturity = 0.75\npaths = 40000\n\
                paths_per_task = 1000\nseed = 7\n[units]\nopencl = \"all\"\n\
                device_type = \"all\"\ncpu_workers = 0\n";
    let out = format!("output.dir={:?}", dir.join("out").display().to_string());
    let plan = Plan::from_toml(text, Path::new("options.toml"), &[out]).unwrap();
    let options = tuccompi::runtime::TuneOptions {
        sample: Some(4),
        repeat: 1,
    };
    let (rows, tuned) =
        tuccompi::runtime::tune(&plan, &[&options::Options], options, |_| {}).unwrap();
    assert!(!rows.is_empty());
    let dev = &tuned[0];
    assert!(
        dev.key.contains("| options.option_payoffs+option_sums |"),
        "{}",
        dev.key
    );
    let opts = RunOptions {
        quiet: true,
        plugins: vec![&options::Options],
        ..Default::default()
    };
    let outcome = tuccompi_plugins::run(&plan, &opts, &Single).unwrap();
    let d = outcome
        .devices
        .iter()
        .find(|d| d.name == dev.device)
        .expect("the tuned device ran");
    assert_eq!(d.tuning.cache_key.as_deref(), Some(dev.key.as_str()));
    assert_eq!(
        (d.tuning.batch.value, d.tuning.batch.source.as_str()),
        (dev.best["batch"], "cache"),
        "{:?}",
        d.tuning
    );
}

/// N1 of issue 47: `tune` of GPU PHAST does not try the driver's choice (local size 0), which
/// its grids cannot take (it panicked dividing by it), and `run` with `apsp.local_size = 0`
/// and PHAST is refused naming the key instead of dropping the unit as a bug. N8 and N7: the
/// scratch folder `tune` times in is private (0700) and removed when SIGTERM stops it.
#[test]
fn tune_of_phast_skips_local_size_0_and_its_scratch_goes_on_sigterm() {
    use std::os::unix::fs::PermissionsExt;
    if !opencl() {
        return;
    }
    let cwd = tmpdir("tune-phast");
    let cfg = cwd.join("p.toml");
    std::fs::write(
        &cfg,
        "[run]\nplugin = \"apsp\"\nsources = 64\n[input.generate]\nmodel = \"road\"\n\
         vertices = 3000\n[apsp]\ngpu_algorithm = \"phast\"\n[units]\nopencl = \"all\"\n\
         device_type = \"all\"\ncpu_workers = 1\n[output]\ndir = \"out\"\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let (code, out, err) = tuccompi_in(&cwd, &["tune", cfg]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("local_size"), "{out}");
    assert!(!out.contains("local_size=0 "), "{out}");
    let (code, _, err) = tuccompi_in(
        &cwd,
        &[
            "run",
            cfg,
            "-q",
            "--set",
            "apsp.local_size=0",
            "--set",
            "units.cpu_workers=0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[apsp] local_size = 0") && !err.contains("bug"),
        "{err}"
    );
    // Stopped by SIGTERM while timing: its scratch folder is gone.
    let tmp = cwd.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(&cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .env("TMPDIR", &tmp)
        .args(["tune", cfg])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let scratch = |tmp: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("tuccompi-tune-")
            })
            .collect()
    };
    let t = std::time::Instant::now();
    let seen = loop {
        if let Some(p) = scratch(&tmp).pop() {
            break p;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "tune ended before its scratch folder was seen"
        );
        assert!(t.elapsed().as_secs() < 120, "no scratch folder");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let mode = std::fs::metadata(&seen).map(|m| m.permissions().mode() & 0o777);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let end = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&end.stderr);
    assert!(!err.contains("panicked"), "{err}");
    if let Ok(mode) = mode {
        assert_eq!(mode, 0o700, "{}", seen.display());
    }
    assert!(scratch(&tmp).is_empty(), "left: {:?}; {err}", scratch(&tmp));
}
