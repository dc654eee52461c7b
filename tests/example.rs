//! The example plugin (examples/collatz.rs): CPU and GPU halves through the runtime, and the GPU
//! worker alone on chunks and launch sizes the runtime seldom makes, against a plain loop.

#[allow(dead_code)]
#[path = "../examples/collatz.rs"]
pub(crate) mod collatz;

use crate::util::*;
use tuccompi::device::{discover, Filter};
use tuccompi::plugin::{GpuHalf, Job, RecordsOut, Worker};
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
        extra_plugins: vec![&collatz::Collatz],
        ..Default::default()
    };
    let checksum = tuccompi::run(&plan, &opts, &Single).unwrap().report["checksum"].clone();
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
        let mut params = GpuHalf::params(&job, &device, &Tuner::default()).unwrap();
        params
            .local
            .insert("collatz_steps".into(), Choice::fixed(ls, "test"));
        params
            .local
            .insert("collatz_reduce".into(), Choice::fixed(lr, "test"));
        params.batch = Choice::fixed(batch, "test");
        let shared = GpuHalf::setup(&job, &device, &params).unwrap();
        let mut worker = GpuHalf::worker(&job, &device, &shared, device.queue().unwrap()).unwrap();
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
