//! Bounds: every numeric key of every table takes 0, 1, a huge value and a negative value
//! without a panic or a hang; each is accepted or refused with a message naming the key and
//! where it was set. Through `Plan::from_toml` for the plan's tables, through `tuccompi check`
//! and `tuccompi run` on a tiny graph (CPU workers, and PoCL where present) for the plugins'.

#[allow(dead_code)]
#[path = "../examples/collatz.rs"]
mod collatz;

use crate::util::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tuccompi::{node::Single, Plan, RunOptions};

/// 0, 1, a huge value (2^62) and a negative one.
const VALUES: [&str; 4] = ["0", "1", "4611686018427387904", "-1"];

/// The numeric keys of the plan's own tables.
const PLAN_KEYS: &[&str] = &[
    "run.sources",
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
    let generate = "[run]\nplugin = \"apsp\"\n[input.generate]\nmodel = \"uniform\"\nvertices = 50\n";
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
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{what}: still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
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
                        assert!(names(&e, key), "{cmd} {what}: the message does not name {key}: {e}");
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
            let text = "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = 1\ncount = 1000\nblock = 100\n";
            let plan = Plan::from_toml(text, Path::new("c.toml"), &sets).unwrap();
            let opts = RunOptions {
                quiet: true,
                extra_plugins: vec![&collatz::Collatz],
                ..Default::default()
            };
            if let Err(e) = tuccompi::run(&plan, &opts, &Single) {
                let e = e.to_string();
                assert!(names(&e, key), "{key}={v}: {e}");
            }
        }
    }
}
