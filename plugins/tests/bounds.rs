//! Bounds: every numeric key of every table takes 0, 1, a huge value and a negative value
//! without a panic or a hang; each is accepted or refused with a message naming the key and
//! where it was set. Through `Plan::from_toml` for the plan's tables, through `tuccompi check`
//! and `tuccompi run` on a tiny graph (CPU workers, and PoCL where present) for the plugins'.

use crate::util::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tuccompi::{node::Single, Plan, RunOptions};

/// 0, 1, a huge value (2^62) and a negative one.
const VALUES: [&str; 4] = ["0", "1", "4611686018427387904", "-1"];

/// The numeric keys of the plan's own tables.
const PLAN_KEYS: &[&str] = &[
    "run.tasks",
    "units.cpu_workers",
    "units.concurrent_kernels",
    "scheduler.chunk",
    "scheduler.gpu_chunk",
    "output.sync_seconds",
    "verify.sample",
    "nodes.chunk",
];

/// The generator's numeric keys (a uniform graph of 50 vertices around them).
const GENERATE_KEYS: &[&str] = &[
    "input.generate.vertices",
    "input.generate.degree",
    "input.generate.seed",
    "input.generate.min_weight",
    "input.generate.max_weight",
];

/// Each plugin's numeric keys.
const PLUGIN_KEYS: &[(&str, &[&str])] = &[
    (
        "apsp",
        &[
            "apsp.cpu_batch",
            "apsp.targets",
            "apsp.batch",
            "apsp.local_size",
            "apsp.delta",
            "apsp.gpu_frontier",
            "apsp.gpu_top_levels",
            "apsp.gpu_fold_levels",
            "apsp.gpu_fold_quads",
            "apsp.gpu_fold_slices",
        ],
    ),
    (
        "fw-blocked",
        &[
            "fw-blocked.tile",
            "fw-blocked.group",
            "fw-blocked.slab",
            "fw-blocked.strips",
        ],
    ),
    ("rkleene", &["rkleene.tile"]),
    ("fw-naive", &["fw-naive.tile"]),
];

/// Whether message `e` names dotted `key` (as `a.b` or `[a] b`).
fn names(e: &str, key: &str) -> bool {
    let (table, k) = key.rsplit_once('.').unwrap();
    e.contains(key) || e.contains(&format!("[{table}] {k}"))
}

const GRAPH: &str = "p sp 5 7\na 1 2 3\na 2 3 4\na 3 4 1\na 4 5 2\na 5 1 2\na 1 3 9\na 2 5 1\n";

#[test]
fn every_plan_key_loads_or_is_refused_by_name() {
    let text = "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr\"\n";
    let generate =
        "[run]\nplugin = \"apsp\"\n[input.generate]\nmodel = \"uniform\"\nvertices = 50\n";
    for (text, keys) in [(text, PLAN_KEYS), (generate, GENERATE_KEYS)] {
        for key in keys {
            for v in VALUES {
                let set = format!("{key}={v}");
                match Plan::from_toml(text, Path::new("c.toml"), std::slice::from_ref(&set)) {
                    Ok(_) => {}
                    Err(e) => {
                        let e = e.to_string();
                        assert!(
                            e.starts_with(&format!("--set {set}: ")) && names(&e, key),
                            "{set}: {e}"
                        );
                    }
                }
            }
        }
    }
}

/// `tuccompi ARGS` with a deadline: (exit code, stderr). A panic, a signal or the deadline
/// fails the test.
fn tuccompi_bounded(args: &[&str], what: &str) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(120), || {
        format!("{what}: still running after 120 s")
    });
    let mut e = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut e).unwrap();
    assert!(
        !e.contains("panicked") && status.code().is_some_and(|c| c == 0 || c == 2),
        "{what}: {status}: {e}"
    );
    (status.code().unwrap(), e)
}

#[test]
fn every_numeric_key_checks_and_runs_or_is_refused_by_name() {
    let dir = tmpdir("bounds");
    let graph = dir.join("g.gr");
    std::fs::write(&graph, GRAPH).unwrap();
    let mut devices = vec![vec!["units.opencl=\"none\""]];
    if opencl() {
        devices.push(vec![
            "units.opencl=\"all\"",
            "units.device_type=\"all\"",
            "units.cpu_workers=1",
        ]);
    }
    let mut cases: Vec<(&str, &str)> = Vec::new();
    for (plugin, keys) in PLUGIN_KEYS {
        cases.extend(keys.iter().map(|k| (*plugin, *k)));
    }
    cases.extend(PLAN_KEYS.iter().map(|k| ("apsp", *k)));
    cases.extend(GENERATE_KEYS.iter().map(|k| ("apsp", *k)));
    let mut runs = 0;
    for (plugin, key) in cases {
        let config = dir.join(format!("{plugin}.toml"));
        let input = if key.starts_with("input.generate") {
            "[input.generate]\nmodel = \"uniform\"\nvertices = 50\n".to_string()
        } else {
            format!("[input]\npath = {:?}\n", graph.display().to_string())
        };
        std::fs::write(
            &config,
            format!("[run]\nplugin = \"{plugin}\"\nsources = 1\n{input}[units]\ncpu_workers = 1\n"),
        )
        .unwrap();
        for device in &devices {
            for v in VALUES {
                runs += 1;
                let out = dir.join(format!("out{runs}"));
                let mut args = vec![config.display().to_string()];
                for s in device.iter().map(|s| s.to_string()).chain([
                    format!("{key}={v}"),
                    format!("output.dir={:?}", out.display().to_string()),
                ]) {
                    args.push("--set".into());
                    args.push(s);
                }
                let what = format!("{key}={v} with {device:?}");
                for cmd in ["check", "run"] {
                    let mut a = vec![cmd];
                    if cmd == "run" {
                        a.push("-q");
                    }
                    a.extend(args.iter().map(String::as_str));
                    let (code, e) = tuccompi_bounded(&a, &format!("{cmd} {what}"));
                    if code != 0 {
                        // Refused: by name (the whole message, as the user sees it).
                        // Plugin and generator keys also say where they were set (the
                        // runtime's own messages, such as "no computational units", name the
                        // key only).
                        let placed =
                            e.contains(&format!("--set {key}={v}: ")) || PLAN_KEYS.contains(&key);
                        assert!(
                            names(&e, key) && placed,
                            "{cmd} {what}: the message does not name {key} and its --set: {e}"
                        );
                        break;
                    }
                }
            }
        }
    }
}

#[test]
fn collatz_keys_load_or_are_refused_by_name() {
    for key in ["collatz.first", "collatz.count", "collatz.block"] {
        for v in VALUES {
            let dir = tmpdir("bounds-collatz");
            let sets = vec![
                format!("{key}={v}"),
                format!("output.dir={:?}", dir.display().to_string()),
                "units.opencl=\"none\"".to_string(),
            ];
            let text =
                "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = 1\ncount = 1000\nblock = 100\n";
            let plan = Plan::from_toml(text, Path::new("c.toml"), &sets).unwrap();
            let opts = RunOptions {
                quiet: true,
                plugins: vec![&collatz::Collatz],
                ..Default::default()
            };
            if let Err(e) = tuccompi_plugins::run(&plan, &opts, &Single) {
                let e = e.to_string();
                assert!(names(&e, key), "{key}={v}: {e}");
            }
        }
    }
}

/// A config for `plugin` on a graph file with this content, in a fresh directory: (dir, config).
fn setup(plugin: &str, graph: &str) -> (std::path::PathBuf, String) {
    let dir = tmpdir("bounds-cli");
    std::fs::write(dir.join("g.gr"), graph).unwrap();
    let config = dir.join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[run]\nplugin = \"{plugin}\"\nsources = 2\n[input]\npath = {:?}\n[units]\ncpu_workers = 1\n[output]\ndir = {:?}\n",
            dir.join("g.gr").display().to_string(),
            dir.join("out").display().to_string()
        ),
    )
    .unwrap();
    (dir, config.display().to_string())
}

#[test]
fn batch_zero_with_every_device_type_is_refused_not_a_panic() {
    let (_dir, c) = setup("apsp", GRAPH);
    for cmd in ["check", "run"] {
        let (code, e) = tuccompi_bounded(
            &[
                cmd,
                &c,
                "--set",
                "units.device_type=\"all\"",
                "--set",
                "apsp.batch=0",
            ],
            "batch = 0",
        );
        if opencl() {
            assert!(code == 2 && names(&e, "apsp.batch"), "{cmd}: {e}");
        }
    }
}

/// `tuccompi run` of GPU PHAST on the test graph with `set` (on any OpenCL device): (exit
/// code, stderr); `None` without OpenCL.
fn gpu_phast_with(set: &str) -> Option<(i32, String)> {
    if !opencl() {
        return None;
    }
    let (_dir, c) = setup("apsp", GRAPH);
    Some(tuccompi_bounded(
        &[
            "run",
            &c,
            "--set",
            "units.device_type=\"all\"",
            "--set",
            "apsp.gpu_algorithm=\"phast\"",
            "--set",
            set,
        ],
        set,
    ))
}

#[test]
fn gpu_phast_frontier_beyond_local_memory_is_refused() {
    // Beyond any device's local memory (PoCL gives a CPU its L2 size: 2 MiB on some).
    let Some((code, e)) = gpu_phast_with("apsp.gpu_frontier=50000000") else {
        return;
    };
    assert!(
        code == 2
            && e.contains("[apsp] gpu_frontier = 50000000: phast_up keeps two frontier lists")
            && e.contains("bytes of local memory; use 1..="),
        "{e}"
    );
}

#[test]
fn gpu_phast_fold_of_no_slices_is_refused() {
    let Some((code, e)) = gpu_phast_with("apsp.gpu_fold_slices=0") else {
        return;
    };
    assert!(
        code == 2 && e.contains("[apsp] gpu_fold_slices = 0: the fold's items take at least 1"),
        "{e}"
    );
}

#[test]
fn gpu_phast_fold_of_no_tree_quads_is_refused() {
    let Some((code, e)) = gpu_phast_with("apsp.gpu_fold_quads=0") else {
        return;
    };
    assert!(
        code == 2 && e.contains("[apsp] gpu_fold_quads = 0: the fold sweeps at least 1"),
        "{e}"
    );
}

#[test]
fn header_declaring_more_than_the_memory_is_refused_before_allocating() {
    // 4e9 vertices: about 75 GiB to read, more than a test machine has available.
    let (_dir, c) = setup("apsp", "p sp 4000000000 1\na 1 2 5\n");
    if tuccompi_plugins::graph::memory::available().is_none_or(|a| a > 70 << 30) {
        eprintln!("NOT RUN: this machine has 70 GiB or more available");
        return;
    }
    let t = Instant::now();
    let (code, e) = tuccompi_bounded(&["check", &c], "4e9 vertices");
    assert!(
        code == 2
            && e.contains("g.gr:1: needs about 74.5 GiB (the problem line declares 4000000000 vertices and 1 arcs), but this machine has")
            && t.elapsed() < Duration::from_secs(10),
        "{e}"
    );
}

#[test]
fn run_sources_beyond_the_memory_is_refused_naming_the_input() {
    // Enough vertices that every source's record and the hierarchy cannot fit, few enough to
    // read (a header of 2^k vertices and one arc).
    let avail = match tuccompi_plugins::graph::memory::available() {
        Some(a) if a < 40 << 30 => a,
        _ => {
            eprintln!("NOT RUN: 40 GiB or more available, or unknown");
            return;
        }
    };
    // 84 bytes a task + 24 a vertex for the worker + 96 for a hierarchy: 204 bytes a vertex.
    let n = (avail / 204 + 1_000_000).min(u32::MAX as u64 - 1);
    if tuccompi_plugins::graph::memory::input_bytes(n, 1) > avail / 2 {
        eprintln!("NOT RUN: reading the header's graph alone would take half the memory");
        return;
    }
    let (_dir, c) = setup("apsp", &format!("p sp {n} 1\na 1 2 5\n"));
    let (code, e) = tuccompi_bounded(
        &["check", &c, "--set", "apsp.sources=\"all\""],
        "sources = all",
    );
    assert!(
        code == 2
            && e.contains(&format!("g.gr ({n} vertices): needs about"))
            && e.contains("apsp.sources = all"),
        "{e}"
    );
}

#[test]
fn negative_cycle_in_fw_leaves_no_run_to_resume() {
    let neg = "p sp 3 3\na 1 2 1\na 2 3 -3\na 3 1 1\n";
    for plugin in ["fw-naive", "fw-blocked", "rkleene"] {
        let (dir, c) = setup(plugin, neg);
        let (code, e) = tuccompi_bounded(&["run", &c, "--set", "units.opencl=\"none\""], plugin);
        assert!(
            code == 2 && e.contains("negative cycle through vertex") && !e.contains("--resume"),
            "{plugin}: {e}"
        );
        // Nothing that a later run would have to resume or discard.
        assert!(
            !dir.join("out").exists(),
            "{plugin}: an output directory was made"
        );
    }
}

#[test]
fn issue_24_messages_name_their_key() {
    let (_dir, c) = setup("apsp", GRAPH);
    for (set, want) in [
        (
            "apsp.sources=\"al\"",
            "--set apsp.sources=\"al\": apsp.sources: expected",
        ),
        (
            "units.cpu_workers=-1",
            "--set units.cpu_workers=-1: units.cpu_workers: expected",
        ),
        (
            "input.path=\"nope.gr\"",
            "--set input.path=\"nope.gr\": input.path = \"nope.gr\": No such file",
        ),
        (
            "input.path=\"\"",
            "--set input.path=\"\": input.path = \"\": name the graph file",
        ),
    ] {
        let (code, e) = tuccompi_bounded(&["check", &c, "--set", set], set);
        assert!(code == 2 && e.contains(want), "{set}: {e}");
    }
    // A missing input named in the file: its line.
    let (dir, _) = setup("apsp", GRAPH);
    let c = dir.join("m.toml");
    std::fs::write(
        &c,
        "[run]\nplugin = \"apsp\"\n[input]\npath = \"nope.gr\"\n",
    )
    .unwrap();
    let (_, e) = tuccompi_bounded(&["check", &c.display().to_string()], "missing");
    assert!(
        e.contains("m.toml:4: input.path = \"nope.gr\": No such file"),
        "{e}"
    );
}
