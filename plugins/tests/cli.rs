//! The command line: bad input gives a clear message naming what to change and a non-zero
//! exit, never a panic; the subcommands work.

use crate::util::*;
use std::path::Path;
use std::process::Command;

fn tuccompi(args: &[&str]) -> (i32, String, String) {
    tuccompi_env(args, &[])
}

/// Like [`tuccompi`], with extra environment variables. It runs in a fresh temporary working
/// directory, so that a config without `output.dir` never writes into the repository.
fn tuccompi_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    tuccompi_in(&tmpdir("cwd"), args, env)
}

/// [`tuccompi_env`] in the working directory `cwd`.
fn tuccompi_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(cwd)
        // Caches (hierarchies, tuning) go to the test's directory, not the user's.
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .args(args)
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

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Run `apsp` on a graph file with this content; expect failure mentioning `needle`.
fn fails_on_graph(name: &str, text: &str, needle: &str) {
    fails_on_graph_with("apsp", name, text, needle)
}

/// Run `plugin` on a graph file with this content; expect failure mentioning `needle`.
fn fails_on_graph_with(plugin: &str, name: &str, text: &str, needle: &str) {
    let dir = tmpdir("cli");
    let g = write(&dir, name, text);
    let cfg = write(&dir, "c.toml", &format!("[run]\nplugin = \"{plugin}\"\n[input]\npath = {g:?}\n[units]\nopencl = \"none\"\n[output]\ndir = {:?}\n", dir.join("out").display().to_string()));
    let (code, _, err) = tuccompi(&["run", &cfg]);
    assert_ne!(code, 0);
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert!(
        !dir.join("out/report.json").exists(),
        "a failed run must not look complete"
    );
}

#[test]
fn malformed_line_names_file_and_line() {
    fails_on_graph(
        "g.gr",
        "p sp 3 2\na 1 2 3\na 2 three 4\n",
        "g.gr:3: head id 'three'",
    );
}

#[test]
fn missing_file() {
    let dir = tmpdir("cli");
    let cfg = write(
        &dir,
        "c.toml",
        "[run]\nplugin = \"apsp\"\n[input]\npath = \"/no/such/graph.gr\"\n",
    );
    let (code, _, err) = tuccompi(&["run", &cfg]);
    assert_ne!(code, 0);
    assert!(
        err.contains("/no/such/graph.gr") && err.contains("No such file"),
        "{err}"
    );
    let (code, _, err) = tuccompi(&["run", "/no/such/config.toml"]);
    assert_ne!(code, 0);
    assert!(err.contains("/no/such/config.toml"), "{err}");
}

#[test]
fn unknown_config_key_is_named() {
    let dir = tmpdir("cli");
    let cfg = write(&dir, "c.toml", "[run]\nplugin = \"apsp\"\n[input]\npath = \"x.gr\"\n[scheduler]\npolicyy = \"equitable\"\n");
    let (code, _, err) = tuccompi(&["check", &cfg]);
    assert_ne!(code, 0);
    assert!(
        err.contains("c.toml:6: scheduler.policyy: unknown field"),
        "{err}"
    );
    let cfg = write(
        &dir,
        "d.toml",
        "[run]\nplugin = \"apsp\"\n[input]\npath = \"x.gr\"\n[apsp]\nbach = 3\n",
    );
    let (code, _, err) = tuccompi(&["check", &cfg]);
    assert_ne!(code, 0);
    assert!(err.contains("bach"), "{err}");
    let cfg = write(
        &dir,
        "e.toml",
        "[run]\nplugin = \"apsp\"\n[input]\npath = \"x.gr\"\n[aspp]\nbatch = 3\n",
    );
    let (_, _, err) = tuccompi(&["check", &cfg]);
    assert!(err.contains("unknown table [aspp]"), "{err}");
}

#[test]
fn source_out_of_range() {
    let dir = tmpdir("cli");
    let g = write(&dir, "g.gr", "p sp 3 1\na 1 2 3\n");
    let cfg = write(
        &dir,
        "c.toml",
        &format!("[run]\nplugin = \"apsp\"\nsources = [1, 4]\n[input]\npath = {g:?}\n"),
    );
    let (code, _, err) = tuccompi(&["check", &cfg]);
    assert_ne!(code, 0);
    assert!(
        err.contains("vertex id 4 is out of range") && err.contains("1..=3"),
        "{err}"
    );
    let (_, _, err) = tuccompi(&["check", &cfg, "--set", "apsp.sources=9"]);
    assert!(err.contains("apsp.sources = 9"), "{err}");
}

#[test]
fn negative_weight_is_refused_by_dijkstra_plugins() {
    fails_on_graph(
        "n.gr",
        "p sp 3 2\na 1 2 3\na 2 3 -4\n",
        "n.gr:3: negative arc weight",
    );
}

#[test]
fn empty_graph() {
    fails_on_graph("e.gr", "p sp 0 0\n", "no vertices");
    fails_on_graph("e.el", "# nothing\n", "no vertices");
}

#[test]
fn weight_that_does_not_fit() {
    fails_on_graph(
        "w.gr",
        "p sp 2 1\na 1 2 5000000000\n",
        "weight 5000000000, outside 0..=4294967295",
    );
    fails_on_graph(
        "x.gr",
        "p sp 2 1\na 1 2 99999999999999999999999\n",
        "x.gr:2:",
    );
    // The line of the offending weight reaches the user, for edge lists too.
    fails_on_graph(
        "w.wel",
        "0 1 3\n1 0 5000000000\n",
        "w.wel:2: arc 1 -> 0 has weight 5000000000, outside 0..=4294967295",
    );
    // 2^64 - 1: the limit stated is the plugins', not "64 bits".
    fails_on_graph(
        "y.gr",
        "p sp 2 1\na 1 2 18446744073709551615\n",
        "y.gr:2: weight '18446744073709551615' is out of range: Dijkstra-based plugins (apsp, dense-dijkstra) take 0..=4294967295",
    );
}

#[test]
fn floyd_warshall_range_names_the_heaviest_arc() {
    fails_on_graph_with(
        "fw-naive",
        "f.gr",
        "p sp 3 2\na 1 2 -3\na 2 3 900000000000000000\n",
        "beyond exact 64-bit Floyd-Warshall (2^59); the heaviest weight is at",
    );
    fails_on_graph_with(
        "fw-naive",
        "g.gr",
        "p sp 3 2\na 1 2 -3\na 2 3 9e17\n",
        "g.gr:3; rescale",
    );
}

#[test]
fn more_hostile_files() {
    fails_on_graph(
        "m.gr",
        "p sp 2 1\na 1 2 3\na 2 1 3\n",
        "m.gr:3: arc number 2 but the problem line (line 1) declares 1 arcs",
    );
    fails_on_graph(
        "n.mtx",
        "%%MatrixMarket matrix coordinate integer general\n2 3 1\n1 3 5\n",
        "n.mtx:2: the matrix is 2 x 3",
    );
    fails_on_graph("e.gr", "", "e.gr: the file is empty");
    fails_on_graph(
        "s.gr",
        "p sp 2 1\na 1 2 3\u{a0}\n",
        "s.gr:2: weight '3\\u{a0}'",
    );
    fails_on_graph("d.gr.gz", "not gzip", "d.gr.gz:1: cannot decompress");
    let dir = tmpdir("cli");
    std::fs::create_dir(dir.join("g.gr")).unwrap();
    let cfg = write(
        &dir,
        "c.toml",
        &format!(
            "[run]\nplugin = \"apsp\"\n[input]\npath = {:?}\n",
            dir.join("g.gr").display().to_string()
        ),
    );
    let (code, _, err) = tuccompi(&["check", &cfg]);
    assert_ne!(code, 0);
    assert!(
        err.contains("g.gr: is a directory; input.path must name a graph file"),
        "{err}"
    );
    // A byte-order mark and CRLF line ends are read as the file means.
    let g = write(&dir, "b.gr", "\u{feff}p sp 2 1\r\na 1 2 3\r\n");
    let cfg = write(
        &dir,
        "b.toml",
        &format!("[run]\nplugin = \"apsp\"\n[input]\npath = {g:?}\n"),
    );
    let (code, out, err) = tuccompi(&["check", &cfg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"m\":1,\"n\":2"), "{out}");
}

#[test]
fn node_local_units_apply_without_mpi() {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    let (code, out, err) = tuccompi_env(
        &["check", cfg, "--set", "units.cpu_workers=1"],
        &[("TUCCOMPI_UNITS", "cpu_workers=3,opencl=none")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cpu0, cpu1, cpu2  (3 units)") && out.contains("units.opencl = none"),
        "{out}"
    );
    let (code, _, err) = tuccompi_env(&["check", cfg], &[("TUCCOMPI_UNITS", "policy=equitable")]);
    assert_ne!(code, 0);
    assert!(
        err.contains("TUCCOMPI_UNITS=\"policy=equitable\"")
            && err.contains("unknown field `policy`"),
        "{err}"
    );
}

#[test]
fn check_and_devices_print_words_not_debug_text() {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    let (code, out, err) = tuccompi(&["check", cfg, "--set", "units.opencl=none"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("input      generated { max_weight = 1000, model = \"road\", seed = 1, vertices = 100000 }")
            && out.contains("sources    the first 256 ids"),
        "{out}"
    );
    assert!(!out.contains("GenSpec") && !out.contains("First("), "{out}");
    // No OpenCL platform registered: the error says "OpenCL: " once.
    let none = tmpdir("cli");
    let (code, out, _) = tuccompi_env(&["devices"], &[("OCL_ICD_VENDORS", none.to_str().unwrap())]);
    assert_eq!(code, 0);
    assert!(
        out.contains("OpenCL: ") && !out.contains("OpenCL: OpenCL"),
        "{out}"
    );
}

#[test]
fn too_many_cpu_workers_and_duplicate_sources() {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    let (code, _, err) = tuccompi(&["check", cfg, "--set", "units.cpu_workers=100000"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("units.cpu_workers = 100000 is more than"),
        "{err}"
    );
    let (code, _, err) = tuccompi(&["check", cfg, "--set", "apsp.sources=[1, 2, 1]"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("apsp.sources lists vertex id 1 twice (entries 1 and 3)"),
        "{err}"
    );
}

#[test]
fn hostile_files() {
    fails_on_graph("t.gr", "p sp 3 5\na 1 2 3\n", "truncated");
    fails_on_graph("b.gr", "\u{0}\u{1}\u{2}\u{ff}garbage", "b.gr:1:");
    fails_on_graph("h.gr", "a 1 2 3\n", "before the 'p sp N M' line");
    fails_on_graph("k.gr", "p sp 99999999999 1\n", "too many");
    fails_on_graph(
        "m.mtx",
        "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 1\n",
        "m.mtx:1: field 'complex'",
    );
    fails_on_graph("z.gz", "x", "unknown graph format");
}

#[test]
fn subcommands() {
    let (code, out, _) = tuccompi(&["plugins"]);
    assert_eq!(code, 0);
    assert!(out.contains("apsp"));
    let (code, out, _) = tuccompi(&["devices"]);
    assert_eq!(code, 0);
    assert!(out.contains("CPU:") && out.contains("OpenCL"), "{out}");
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    let (code, out, err) = tuccompi(&["check", cfg, "--set", "units.cpu_workers=3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("plugin     apsp")
            && out.contains("cpu0, cpu1, cpu2  (3 units)")
            && out.contains("\"n\":100000"),
        "{out}"
    );
}

/// The command discovers devices while the input loads (`RunOptions::discover_early`): with an
/// OpenCL device (PoCL in CI) the run uses it, and its result equals a CPU-only run's.
#[test]
fn devices_found_while_the_input_loads() {
    if !opencl() {
        return;
    }
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    let mut sums = Vec::new();
    for units in ["units.device_type=\"all\"", "units.opencl=\"none\""] {
        let dir = tmpdir("cli-early");
        let od = format!("output.dir={:?}", dir.display().to_string());
        let (code, _, err) = tuccompi(&[
            "run",
            cfg,
            "-q",
            "--set",
            &od,
            "--set",
            "apsp.sources=64",
            "--set",
            units,
        ]);
        assert_eq!(code, 0, "{units}: {err}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        let gpu_tasks: u64 = report["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["kind"] == "gpu")
            .map(|u| u["tasks"].as_u64().unwrap())
            .sum();
        if units.contains("all") {
            assert!(
                !report["devices"].as_array().unwrap().is_empty(),
                "{report}"
            );
            assert!(gpu_tasks > 0, "the device ran nothing: {report}");
        }
        sums.push(report["checksum"].clone());
    }
    assert_eq!(sums[0], sums[1]);
}

#[test]
fn default_config_runs_and_writes_its_files() {
    let dir = tmpdir("cli");
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    let od = format!("output.dir={:?}", dir.display().to_string());
    let (code, out, err) = tuccompi(&[
        "run",
        cfg,
        "--set",
        &od,
        "--set",
        "apsp.sources=16",
        "--set",
        "output.trace=true",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("16 tasks"), "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["tasks"], 16);
    assert_eq!(read_summary(&dir.join("summary.csv")).len(), 16);
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap()).unwrap();
    let slices = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert!(slices >= 1);
    assert!(!dir.join("INCOMPLETE").exists());
}

/// A small APSP config on a generated road graph, CPU only, without `[output]`.
fn small_apsp(sources: usize) -> String {
    format!(
        "[run]\nplugin = \"apsp\"\n[input.generate]\nmodel = \"road\"\n\
         vertices = 4000\n[units]\nopencl = \"none\"\ncpu_workers = 2\n[apsp]\n\
         sources = {sources}\ncpu_algorithm = \"dijkstra\"\n"
    )
}

/// The default `output.dir` is `tuccompi-out/<config stem>`: two configs without `[output]`
/// never collide, and a `tuccompi-out/` already holding another config's results (the quick
/// start's `tuccompi-out/apsp/`) is no obstacle.
#[test]
fn configs_without_output_dir_get_their_own_default_directory() {
    let cwd = tmpdir("cli-default-dir");
    std::fs::create_dir_all(cwd.join("tuccompi-out/apsp")).unwrap();
    std::fs::write(cwd.join("tuccompi-out/apsp/report.json"), "{}").unwrap();
    for name in ["first", "second"] {
        write(&cwd, &format!("{name}.toml"), &small_apsp(4));
        let (code, out, err) = tuccompi_in(&cwd, &["run", &format!("{name}.toml")], &[]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("tuccompi-out/{name}")), "{out}");
        assert!(cwd
            .join(format!("tuccompi-out/{name}/summary.csv"))
            .exists());
    }
    assert_eq!(
        std::fs::read_to_string(cwd.join("tuccompi-out/apsp/report.json")).unwrap(),
        "{}"
    );
}

/// `tuccompi run -` reads the config from standard input (its default directory is
/// `tuccompi-out/stdin`), and report.json keeps the `--set` overrides and the effective config.
#[test]
fn a_config_from_standard_input_and_the_overrides_in_the_report() {
    use std::io::Write;
    let cwd = tmpdir("cli-stdin");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(&cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .args(["run", "-", "-q", "--set", "apsp.sources=3"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(small_apsp(8).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cwd.join("tuccompi-out/stdin/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["tasks"], 3);
    assert_eq!(report["overrides"], serde_json::json!(["apsp.sources=3"]));
    assert_eq!(report["effective_config"]["apsp"]["sources"], 3);
    assert_eq!(
        report["effective_config"]["input"]["generate"]["vertices"],
        4000
    );
}

/// When stderr is not a terminal (a batch job's log), a progress line comes every
/// `output.progress_seconds`; `-q` silences them.
#[test]
fn progress_lines_in_a_batch_log() {
    let cwd = tmpdir("cli-progress");
    let mut cfg = small_apsp(600);
    cfg = cfg.replace("cpu_workers = 2", "cpu_workers = 1");
    cfg.push_str("[output]\nprogress_seconds = 0.02\n");
    write(&cwd, "p.toml", &cfg);
    let (code, _, err) = tuccompi_in(&cwd, &["run", "p.toml"], &[]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tuccompi: progress: "))
        .collect();
    assert!(lines.len() >= 2, "{err}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("/600 tasks") && l.contains("tasks/s")),
        "{err}"
    );
    let (code, _, err) = tuccompi_in(&cwd, &["run", "p.toml", "-q", "--restart"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("progress:"), "{err}");
}

/// GPUs asked for and none found: one warning at the default verbosity, naming the filter as
/// the config has it.
#[test]
fn gpus_asked_for_and_not_found_give_one_warning_naming_the_filter() {
    let cwd = tmpdir("cli-nogpu");
    let cfg = small_apsp(2).replace(
        "opencl = \"none\"",
        "opencl = \"all\"\ndevice_type = \"accelerator\"",
    );
    write(&cwd, "g.toml", &cfg);
    let (code, _, err) = tuccompi_in(&cwd, &["run", "g.toml"], &[]);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("units.opencl = \"all\"")
            && warnings[0].contains("units.device_type = \"accelerator\"")
            && !warnings[0].contains("[]"),
        "{err}"
    );
    // A config that never mentions units.opencl gets no warning for having no GPU.
    let quiet = small_apsp(2).replace("opencl = \"none\"\n", "device_type = \"accelerator\"\n");
    write(&cwd, "n.toml", &quiet);
    let (code, _, err) = tuccompi_in(&cwd, &["run", "n.toml"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning:"), "{err}");
}

/// A binary built without MPI and started as one of several processes stops, naming the
/// feature to build with, instead of running the job once per process.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_launcher_of_several_processes_stops_a_binary_built_without_mpi() {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/apsp.toml");
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"] {
        let (code, _, err) = tuccompi_env(&["run", cfg], &[(var, "2")]);
        assert_eq!(code, 2, "{var}: {err}");
        assert!(err.contains("--features mpi") && err.contains(var), "{err}");
    }
    // One process under a launcher is fine.
    let (code, _, err) = tuccompi_env(&["check", cfg], &[("OMPI_COMM_WORLD_SIZE", "1")]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn version_completions_and_man_page() {
    let (code, out, _) = tuccompi(&["--version"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("commit:") && out.contains("features:"),
        "{out}"
    );
    let (code, out, _) = tuccompi(&["-V"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(env!("CARGO_PKG_VERSION")) && out.contains("features: "),
        "{out}"
    );
    let (code, out, _) = tuccompi(&["completions", "bash"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("_tuccompi()") && out.contains("complete "),
        "{out}"
    );
    let (code, out, _) = tuccompi(&["man"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(".TH tuccompi 1") && out.contains("TUCCOMPI_UNITS"),
        "{out}"
    );
    let (code, out, _) = tuccompi(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("TUCCOMPI_KERNELS") && out.contains("Configuration reference"),
        "{out}"
    );
}

/// A signal while the input loads (here a graph whose gigabyte of comments takes seconds) ends
/// the process at once, says nothing was written, and leaves no output directory to resume.
#[test]
fn a_signal_while_the_input_loads_ends_at_once_and_writes_nothing() {
    let cwd = tmpdir("cli-sig-prepare");
    crate::util::slow_graph(&cwd, "g");
    let cfg = "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr.gz\"\n[units]\nopencl = \"none\"\n";
    write(&cwd, "f.toml", cfg);
    let child = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(&cwd)
        .args(["run", "f.toml"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let sent = std::time::Instant::now();
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(3),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("nothing was written") && !err.contains("--resume"),
        "{err}"
    );
    assert!(!cwd.join("tuccompi-out").exists());
}

fn report_in(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

fn starts(report: &serde_json::Value) -> Vec<String> {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["start"].as_str().unwrap_or("none").to_string())
        .collect()
}

/// The speed history: a run stores each unit class's measured model in the cache directory,
/// and a run of the same work starts its units from it (`"start": "history"`) instead of
/// probing; `scheduler.history = false` neither reads nor writes it; a corrupt file is
/// ignored with a warning and replaced.
#[test]
fn a_repeated_run_starts_from_the_speed_history() {
    let cwd = tmpdir("cli-history");
    write(&cwd, "h.toml", &small_apsp(40));
    let speeds = cwd.join("cache/tuccompi/speeds.json");
    let out = cwd.join("tuccompi-out/h");
    let (code, _, err) = tuccompi_in(&cwd, &["run", "h.toml", "-q"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["probe", "probe"]);
    let stored = std::fs::read_to_string(&speeds).unwrap();
    assert!(
        stored.contains("\"per_task\"") && stored.contains("apsp | "),
        "{stored}"
    );
    let (code, _, err) = tuccompi_in(&cwd, &["run", "h.toml", "-q"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["history", "history"]);
    // Other work (another input size) has no history yet.
    let (code, _, err) = tuccompi_in(
        &cwd,
        &[
            "run",
            "h.toml",
            "-q",
            "--set",
            "input.generate.vertices=3000",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["probe", "probe"]);
    // Off: no start field, the file untouched.
    let before = std::fs::read(&speeds).unwrap();
    let (code, _, err) = tuccompi_in(
        &cwd,
        &["run", "h.toml", "-q", "--set", "scheduler.history=false"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["none", "none"]);
    assert_eq!(std::fs::read(&speeds).unwrap(), before);
    // Not a speed history: a warning, a probe, and the file left alone; once it is removed,
    // a good file again afterwards.
    std::fs::write(&speeds, "{ not json").unwrap();
    let (code, _, err) = tuccompi_in(&cwd, &["run", "h.toml"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("speeds.json: it is a file that is not a tuccompi speed history"),
        "{err}"
    );
    assert_eq!(starts(&report_in(&out)), ["probe", "probe"]);
    assert_eq!(std::fs::read_to_string(&speeds).unwrap(), "{ not json");
    std::fs::remove_file(&speeds).unwrap();
    let (code, _, err) = tuccompi_in(&cwd, &["run", "h.toml", "-q"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["probe", "probe"]);
    let (code, _, err) = tuccompi_in(&cwd, &["run", "h.toml", "-q"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["history", "history"]);
    // `history` shows the stored models; `history --clear` removes them, and the next run
    // probes again.
    let (code, shown, err) = tuccompi_in(&cwd, &["history"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        shown.contains("apsp | ") && shown.contains("per task") && shown.contains("1 models"),
        "{shown}"
    );
    let (code, said, err) = tuccompi_in(&cwd, &["history", "--clear"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(said.contains("removed"), "{said}");
    assert!(!speeds.exists());
    let (code, shown, _) = tuccompi_in(&cwd, &["history"], &[]);
    assert_eq!(code, 0);
    assert!(shown.contains("no speed history"), "{shown}");
    let (code, _, err) = tuccompi_in(&cwd, &["run", "h.toml", "-q"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(starts(&report_in(&out)), ["probe", "probe"]);
    // A history file that is a link, or a file that is not a speed history: `--clear`
    // refuses, naming it, and leaves it (and what a link points to) alone.
    #[cfg(unix)]
    {
        let target = cwd.join("not-ours.txt");
        std::fs::write(&target, "keep me").unwrap();
        std::fs::remove_file(&speeds).unwrap();
        std::os::unix::fs::symlink(&target, &speeds).unwrap();
        let (code, _, err) = tuccompi_in(&cwd, &["history", "--clear"], &[]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("speeds.json") && err.contains("symbolic link"),
            "{err}"
        );
        assert!(std::fs::symlink_metadata(&speeds).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        std::fs::remove_file(&speeds).unwrap();
    }
    std::fs::write(&speeds, "my notes").unwrap();
    let (code, _, err) = tuccompi_in(&cwd, &["history", "--clear"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a tuccompi speed history"), "{err}");
    assert_eq!(std::fs::read_to_string(&speeds).unwrap(), "my notes");
}

/// A large input (16 MiB and more) is read once: its CSR goes to the graph cache, the next run
/// reads that instead of the text (saying so on stderr, here a pipe, not a terminal), with the
/// same results; an input changed in place (same size, one weight) or a corrupt cache file is
/// read again, never answered from the stale graph.
#[test]
fn a_large_input_is_read_once_then_from_the_graph_cache() {
    let cwd = tmpdir("gcache");
    let input = cwd.join("grid.gr");
    // A 500 x 500 grid, both directions, weights 10..99: about 18 MB of text.
    let side = 500u32;
    let mut text = String::new();
    let mut arcs = Vec::new();
    for r in 0..side {
        for c in 0..side {
            let v = r * side + c + 1;
            if c + 1 < side {
                arcs.push((v, v + 1));
                arcs.push((v + 1, v));
            }
            if r + 1 < side {
                arcs.push((v, v + side));
                arcs.push((v + side, v));
            }
        }
    }
    text.push_str(&format!("p sp {} {}\n", side * side, arcs.len()));
    for (i, (u, v)) in arcs.iter().enumerate() {
        text.push_str(&format!("a {u} {v} {}\n", 10 + (i * 7919) % 90));
    }
    assert!(text.len() as u64 >= tuccompi_plugins::graph::cache::MIN_BYTES);
    std::fs::write(&input, &text).unwrap();
    let cfg = cwd.join("g.toml");
    std::fs::write(
        &cfg,
        format!(
            "[run]\nplugin = \"apsp\"\n[input]\npath = {:?}\n\
             [units]\nopencl = \"none\"\ncpu_workers = 2\n[apsp]\nsources = [1, 777, 250000]\ncpu_algorithm = \"dijkstra\"\n\
             [output]\ndir = \"out\"\n",
            input.display().to_string()
        ),
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    let summary = || std::fs::read_to_string(cwd.join("out/summary.csv")).unwrap();
    let (code, _, e) = tuccompi_in(&cwd, &["run", &cfg], &[]);
    assert_eq!(code, 0, "{e}");
    assert!(
        e.contains("MB of input") && e.contains("cached for later runs"),
        "{e}"
    );
    let first = summary();
    let (code, _, e) = tuccompi_in(&cwd, &["run", &cfg], &[]);
    assert_eq!(code, 0, "{e}");
    assert!(e.contains("read from the graph cache"), "{e}");
    assert!(!e.contains("MB of input"), "{e}");
    assert_eq!(summary(), first);
    // A corrupt cache file: a warning, the input read again, the same results.
    let dir = cwd.join("cache/tuccompi/graphs");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 5;
    bytes[last] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let (code, _, e) = tuccompi_in(&cwd, &["run", &cfg], &[]);
    assert_eq!(code, 0, "{e}");
    assert!(
        e.contains("warning") && e.contains("corrupt") && e.contains("MB of input"),
        "{e}"
    );
    assert_eq!(summary(), first);
    // The input changed in place, same size (the first arc's weight 10 -> 99): read again,
    // and the results follow the new content.
    let changed = text.replacen("a 1 2 10\n", "a 1 2 99\n", 1);
    assert_eq!(changed.len(), text.len());
    assert_ne!(changed, text);
    std::fs::write(&input, &changed).unwrap();
    let (code, _, e) = tuccompi_in(&cwd, &["run", &cfg], &[]);
    assert_eq!(code, 0, "{e}");
    assert!(e.contains("MB of input"), "{e}");
    assert_ne!(summary(), first);
    // `-q` keeps the stage lines out.
    let (code, _, e) = tuccompi_in(&cwd, &["run", "-q", &cfg], &[]);
    assert_eq!((code, e.as_str()), (0, ""));
}

/// A5 of issue 47: a reader that closes the pipe early (`tuccompi history | head`) ends the
/// command quietly, exit 0, instead of a panic with a backtrace.
#[test]
fn a_closed_stdout_pipe_ends_quietly_not_in_a_panic() {
    let cwd = tmpdir("cli-pipe");
    for cmd in [&["plugins"][..], &["history"][..], &["devices"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
            .current_dir(&cwd)
            .env("XDG_CACHE_HOME", cwd.join("cache"))
            .args(cmd)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{cmd:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{cmd:?}: {err}");
    }
}

/// The graph plugins' keys under their former names (`run.sources`, `output.distances`) run as
/// the new ones (`apsp.sources`, `apsp.distances`) with byte-identical outputs and one warning
/// each naming the new key; `run.tasks` gives the sources too, and setting it beside
/// `apsp.sources` in one file is refused.
#[test]
fn former_key_names_run_as_the_new_ones_with_a_warning() {
    let cwd = tmpdir("cli-renamed");
    let base = "[input.generate]\nmodel = \"road\"\nvertices = 900\n[units]\nopencl = \"none\"\n\
                cpu_workers = 2\n";
    let configs = [
        (
            "old",
            format!(
                "[run]\nplugin = \"apsp\"\nsources = [1, 5, 9]\n{base}[output]\ndir = \"old\"\n\
                 distances = true\n"
            ),
        ),
        (
            "new",
            format!(
                "[run]\nplugin = \"apsp\"\n{base}[apsp]\nsources = [1, 5, 9]\ndistances = true\n\
                 [output]\ndir = \"new\"\n"
            ),
        ),
        (
            "tasks",
            format!(
                "[run]\nplugin = \"apsp\"\ntasks = [1, 5, 9]\n{base}[apsp]\ndistances = true\n\
                 [output]\ndir = \"tasks\"\n"
            ),
        ),
    ];
    let mut errs = Vec::new();
    for (name, text) in &configs {
        write(&cwd, &format!("{name}.toml"), text);
        let (code, _, err) = tuccompi_in(&cwd, &["run", &format!("{name}.toml"), "-q"], &[]);
        assert_eq!(code, 0, "{name}: {err}");
        errs.push(err);
    }
    for file in ["summary.csv", "distances.npy"] {
        let want = std::fs::read(cwd.join("new").join(file)).unwrap();
        for dir in ["old", "tasks"] {
            assert_eq!(
                std::fs::read(cwd.join(dir).join(file)).unwrap(),
                want,
                "{dir}/{file}"
            );
        }
    }
    assert!(
        errs[0].contains("old.toml:3: run.sources is deprecated: write apsp.sources")
            && errs[0].contains("output.distances is deprecated: write apsp.distances"),
        "{}",
        errs[0]
    );
    assert!(!errs[1].contains("deprecated") && !errs[2].contains("deprecated"));
    // Both in one file: which one is meant is unclear.
    write(
        &cwd,
        "both.toml",
        &configs[2].1.replace("distances = true", "sources = 4"),
    );
    let (code, _, err) = tuccompi_in(&cwd, &["check", "both.toml"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("run.tasks and apsp.sources are both set"),
        "{err}"
    );
}
