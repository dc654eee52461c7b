//! The command line: bad input gives a clear message naming what to change and a non-zero
//! exit, never a panic; the subcommands work.

use crate::util::*;
use std::process::Command;

fn tuccompi(args: &[&str]) -> (i32, String, String) {
    tuccompi_env(args, &[])
}

/// Like [`tuccompi`], with extra environment variables.
fn tuccompi_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
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
    let (_, _, err) = tuccompi(&["check", &cfg, "--set", "run.sources=9"]);
    assert!(err.contains("run.sources = 9"), "{err}");
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
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/apsp.toml");
    let (code, out, err) = tuccompi_env(
        &["check", cfg, "--set", "units.cpu_workers=1"],
        &[("TUCCOMPI_UNITS", "cpu_workers=3,opencl=none")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cpu_workers = 3") && out.contains("units.opencl = none"),
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
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/apsp.toml");
    let (code, out, err) = tuccompi(&["check", cfg, "--set", "units.opencl=none"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("input      generated road graph, 100000 vertices, seed 1, weights 1..=1000")
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
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/apsp.toml");
    let (code, _, err) = tuccompi(&["check", cfg, "--set", "units.cpu_workers=100000"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("units.cpu_workers = 100000 is more than"),
        "{err}"
    );
    let (code, _, err) = tuccompi(&["check", cfg, "--set", "run.sources=[1, 2, 1]"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("run.sources lists vertex id 1 twice (entries 1 and 3)"),
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
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/apsp.toml");
    let (code, out, err) = tuccompi(&["check", cfg, "--set", "units.cpu_workers=3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("plugin     apsp")
            && out.contains("cpu_workers = 3")
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
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/apsp.toml");
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
            "run.sources=64",
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
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/apsp.toml");
    let od = format!("output.dir={:?}", dir.display().to_string());
    let (code, out, err) = tuccompi(&[
        "run",
        cfg,
        "--set",
        &od,
        "--set",
        "run.sources=16",
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
