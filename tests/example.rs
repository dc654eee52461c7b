//! The example plugin (examples/collatz.rs) through the runtime: CPU and GPU halves agree with a
//! plain loop.

#[allow(dead_code)]
#[path = "../examples/collatz.rs"]
mod collatz;

use crate::util::*;
use tuccompi::{node::Single, Plan, RunOptions};

fn run_collatz(sets: &[&str]) -> serde_json::Value {
    let dir = tmpdir("collatz");
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("output.dir={:?}", dir.display().to_string()));
    let text =
        "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = 1000\ncount = 300000\nblock = 7000\n";
    let plan = Plan::from_toml(text, std::path::Path::new("c.toml"), &all).unwrap();
    let opts = RunOptions {
        quiet: true,
        extra_plugins: vec![&collatz::Collatz],
        ..Default::default()
    };
    tuccompi::run(&plan, &opts, &Single).unwrap().report["checksum"].clone()
}

fn reference() -> serde_json::Value {
    let (mut total, mut best, mut arg) = (0u64, 0u64, 0u64);
    for x in 1000..301_000u64 {
        let s = collatz::steps(x) as u64;
        total += s;
        if s > best {
            (best, arg) = (s, x);
        }
    }
    serde_json::json!({ "total_steps": total, "max_steps": best, "argmax": arg })
}

#[test]
fn collatz_cpu_half() {
    assert_eq!(
        run_collatz(&["units.opencl=none", "units.cpu_workers=3"]),
        reference()
    );
}

#[test]
fn collatz_gpu_half_and_mixed() {
    if !opencl() {
        return;
    }
    let want = reference();
    assert_eq!(
        run_collatz(&["units.cpu_workers=0", "units.device_type=all"]),
        want
    );
    assert_eq!(
        run_collatz(&[
            "units.cpu_workers=2",
            "units.device_type=all",
            "scheduler.policy=equitable"
        ]),
        want
    );
}
