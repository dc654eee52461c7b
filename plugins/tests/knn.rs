//! The float example plugin (examples/knn/), through the framework's data in and out: two
//! float32 `.npy` inputs read with `tuccompi::npy`, f32 and u32 rows written by the rows sink,
//! equal to a plain brute force in this file on CPU workers and on PoCL; a queries file
//! changed between a stop and `--resume` is refused naming it.

use knn as example;

use crate::util::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use tuccompi::runtime::Unfinished;
use tuccompi::{node::Single, Plan, RunOptions};

const DIMS: usize = 5;
const K: usize = 6;

/// `rows x DIMS` float32 values from a linear congruential generator, saved with npyz (not
/// with the framework's writer).
fn save_points(path: &Path, rows: usize, seed: u64) {
    let mut x = seed;
    let data: Vec<f32> = (0..rows * DIMS)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 40) as f32) / (1u64 << 24) as f32 * 100.0 - 50.0
        })
        .collect();
    save(path, &[rows as u64, DIMS as u64], &data);
}

fn save<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    use npyz::WriterBuilder;
    let f = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(std::io::BufWriter::new(f))
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

fn load<T: npyz::Deserialize>(path: &Path) -> (Vec<usize>, Vec<T>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().iter().map(|&d| d as usize).collect();
    (shape, npy.into_vec().unwrap())
}

/// Every query's k nearest points as (index, distance), by sorting all n distances (computed
/// as the plugin defines them: squared differences summed in order, then the square root).
fn reference(points: &[f32], queries: &[f32]) -> Vec<Vec<(u32, f32)>> {
    queries
        .chunks(DIMS)
        .map(|q| {
            let mut all: Vec<(f32, u32)> = points
                .chunks(DIMS)
                .enumerate()
                .map(|(i, p)| {
                    let s = q
                        .iter()
                        .zip(p)
                        .fold(0.0f32, |s, (a, b)| s + (a - b) * (a - b));
                    (s, i as u32)
                })
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            all[..K].iter().map(|&(s, i)| (i, s.sqrt())).collect()
        })
        .collect()
}

struct Setup {
    dir: PathBuf,
    config: String,
}

fn setup(tag: &str) -> Setup {
    let dir = tmpdir(tag);
    save_points(&dir.join("points.npy"), 700, 1);
    save_points(&dir.join("queries.npy"), 90, 2);
    let config = format!(
        "[run]\nplugin = \"knn\"\n[knn]\npoints = {:?}\nqueries = {:?}\nk = {K}\n\
         [output]\ndir = {:?}\n",
        dir.join("points.npy").display().to_string(),
        dir.join("queries.npy").display().to_string(),
        dir.join("out").display().to_string(),
    );
    Setup { dir, config }
}

fn run(s: &Setup, sets: &[&str], opts: &RunOptions<'_>) -> tuccompi::Result<serde_json::Value> {
    let sets: Vec<String> = sets.iter().map(|x| x.to_string()).collect();
    let plan = Plan::from_toml(&s.config, &s.dir.join("knn.toml"), &sets)?;
    let mut o = RunOptions {
        quiet: true,
        plugins: vec![&example::Knn],
        unfinished: opts.unfinished,
        interrupt: opts.interrupt,
        ..Default::default()
    };
    o.quiet = true;
    tuccompi::runtime::run(&plan, &o, &Single).map(|o| o.report)
}

/// The run's rows, read back with npyz, against the reference.
fn check_rows(s: &Setup) {
    let (_, points) = load::<f32>(&s.dir.join("points.npy"));
    let (_, queries) = load::<f32>(&s.dir.join("queries.npy"));
    let want = reference(&points, &queries);
    let (dshape, d) = load::<f32>(&s.dir.join("out/distances.npy"));
    let (ishape, i) = load::<u32>(&s.dir.join("out/indices.npy"));
    assert_eq!(dshape, [queries.len() / DIMS, K]);
    assert_eq!(ishape, dshape);
    for (q, w) in want.iter().enumerate() {
        for (j, &(wi, wd)) in w.iter().enumerate() {
            assert_eq!(i[q * K + j], wi, "query {q}, neighbour {j}");
            let got = d[q * K + j];
            assert!(
                (got - wd).abs() <= 1e-6 * wd.abs(),
                "query {q}: {got} against {wd}"
            );
        }
    }
}

#[test]
fn knn_rows_equal_a_plain_brute_force_on_cpu_and_pocl() {
    let s = setup("knn-cpu");
    let cpu = run(
        &s,
        &["units.opencl=none", "units.cpu_workers=2"],
        &RunOptions::default(),
    )
    .unwrap();
    check_rows(&s);
    assert!(cpu["checksum"]["nearest_hash"].as_u64().is_some());
    if !opencl() {
        return;
    }
    let g = setup("knn-gpu");
    let gpu = run(
        &g,
        &[
            "units.cpu_workers=0",
            "units.device_type=all",
            "verify.sample=4",
        ],
        &RunOptions::default(),
    )
    .unwrap();
    check_rows(&g);
    assert_eq!(
        gpu["checksum"]["nearest_hash"],
        cpu["checksum"]["nearest_hash"]
    );
    assert_eq!(
        gpu["verify"]["verified"].as_u64(),
        Some(4),
        "{}",
        gpu["verify"]
    );
}

#[test]
fn a_changed_queries_file_is_refused_on_resume_naming_it() {
    let s = setup("knn-resume");
    let cpu = ["units.opencl=none", "units.cpu_workers=1"];
    let stop = AtomicBool::new(true);
    let e = run(
        &s,
        &cpu,
        &RunOptions {
            interrupt: Some(&stop),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, tuccompi::Error::Interrupted { .. }), "{e}");
    let resume = RunOptions {
        unfinished: Unfinished::Resume,
        ..Default::default()
    };
    // Other queries of the same shape, saved over the file.
    save_points(&s.dir.join("queries.npy"), 90, 3);
    let e = run(&s, &cpu, &resume).unwrap_err().to_string();
    assert!(e.contains("queries.npy") && e.contains("--restart"), "{e}");
    assert!(
        !e.contains("points.npy"),
        "only the changed file is named: {e}"
    );
    // The original queries back: the same input, resumed to the reference's rows.
    save_points(&s.dir.join("queries.npy"), 90, 2);
    run(&s, &cpu, &resume).unwrap();
    check_rows(&s);
}

#[test]
fn a_bad_input_file_is_named_by_its_key() {
    let s = setup("knn-bad");
    std::fs::write(s.dir.join("queries.npy"), "not numpy").unwrap();
    let e = run(&s, &["units.opencl=none"], &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("knn.queries") && e.contains("queries.npy"),
        "{e}"
    );
    save(
        &s.dir.join("queries.npy"),
        &[2, DIMS as u64],
        &[0.0f64; 2 * DIMS],
    );
    let e = run(&s, &["units.opencl=none"], &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("<f8") && e.contains("float32"), "{e}");
}
