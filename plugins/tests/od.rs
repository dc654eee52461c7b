//! Labelled origin-destination output (`od.npz`, `od.csv`) and summary.csv's `mean`, against
//! Bellman-Ford on graphs with unreachable parts, repeated targets and targets equal to a source.

use crate::util::*;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Every array of an `.npz` (entry name without `.npy` → the entry's bytes), read with the zip
/// crate's reader.
fn npz(p: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(p).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).unwrap();
        assert_eq!(f.compression(), zip::CompressionMethod::Stored);
        let name = f.name().unwrap().strip_suffix(".npy").unwrap().to_string();
        let mut b = Vec::new();
        f.read_to_end(&mut b).unwrap();
        out.insert(name, b);
    }
    out
}

fn npy_u64(b: &[u8]) -> (Vec<u64>, Vec<u64>, String) {
    let f = npyz::NpyFile::new(b).unwrap();
    let (shape, descr) = (f.shape().to_vec(), f.dtype().descr());
    (f.into_vec().unwrap(), shape, descr)
}

/// A DIMACS graph of 60 vertices: 1..=50 joined at random (weights 1..=`maxw`), 51..=60
/// unreachable from them, with one arc 55 -> 56.
fn graph(maxw: u64) -> (String, Vec<(u32, u32, i64)>) {
    let mut arcs = Vec::new();
    let mut x = 12345u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    for _ in 0..200 {
        let (u, v, w) = (next() % 50, next() % 50, 1 + next() % maxw);
        arcs.push((u as u32, v as u32, w as i64));
    }
    arcs.push((54, 55, 7));
    let mut text = format!("p sp 60 {}\n", arcs.len());
    for (u, v, w) in &arcs {
        text += &format!("a {} {} {w}\n", u + 1, v + 1);
    }
    (text, arcs)
}

const SOURCES: [u64; 4] = [1, 7, 51, 55];
const TARGETS: [u64; 6] = [3, 1, 7, 56, 60, 3];

fn od_run(maxw: u64, sets: &[&str]) -> (Out, Vec<(u32, u32, i64)>) {
    let (text, arcs) = graph(maxw);
    let dir = tmpdir("od-graph");
    let g = dir.join("g.gr");
    std::fs::write(&g, text).unwrap();
    let cfg = format!(
        "{}[apsp]\ntargets = {TARGETS:?}\n",
        apsp_file(&g, &format!("{SOURCES:?}"))
    );
    let mut all = vec!["units.opencl=none"];
    all.extend_from_slice(sets);
    (run(&cfg, &all), arcs)
}

/// The reference matrix: `Some(d)` or `None` (unreachable), sources × targets.
fn reference(arcs: &[(u32, u32, i64)]) -> Vec<Vec<Option<u128>>> {
    SOURCES
        .iter()
        .map(|&s| {
            let d = bellman_ford(60, arcs, s as usize - 1);
            TARGETS.iter().map(|&t| d[t as usize - 1]).collect()
        })
        .collect()
}

fn check_od(out: &Out, arcs: &[(u32, u32, i64)], wide: bool) {
    let want = reference(arcs);
    let a = npz(&out.dir.join("od.npz"));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        ["distances", "sources", "targets", "unreachable"]
    );
    let (s, shape, descr) = npy_u64(&a["sources"]);
    assert_eq!(
        (s.as_slice(), shape, descr.as_str()),
        (&SOURCES[..], vec![4], "'<u8'")
    );
    let (t, shape, _) = npy_u64(&a["targets"]);
    assert_eq!((t.as_slice(), shape), (&TARGETS[..], vec![6]));
    let d = npyz::NpyFile::new(&a["distances"][..]).unwrap();
    assert_eq!(d.shape(), &[4, 6]);
    let u = npyz::NpyFile::new(&a["unreachable"][..]).unwrap();
    assert_eq!(u.shape(), &[] as &[u64], "unreachable is a 0-d array");
    let (got, sentinel): (Vec<u64>, u64) = if wide {
        assert_eq!(d.dtype().descr(), "'<u8'");
        assert_eq!(u.dtype().descr(), "'<u8'");
        (d.into_vec().unwrap(), u.into_vec::<u64>().unwrap()[0])
    } else {
        assert_eq!(d.dtype().descr(), "'<u4'");
        assert_eq!(u.dtype().descr(), "'<u4'");
        let v: Vec<u32> = d.into_vec().unwrap();
        (
            v.into_iter().map(u64::from).collect(),
            u.into_vec::<u32>().unwrap()[0] as u64,
        )
    };
    assert_eq!(sentinel, if wide { u64::MAX } else { u32::MAX as u64 });
    let flat: Vec<Option<u128>> = want.iter().flatten().copied().collect();
    let got: Vec<Option<u128>> = got
        .iter()
        .map(|&x| (x != sentinel).then_some(x as u128))
        .collect();
    assert_eq!(got, flat);
    assert!(flat.iter().any(Option::is_none) && flat.iter().any(|d| d.is_some_and(|d| d > 0)));
    // summary.csv: reached, sum and max over the targets (the source's own entries count as
    // reached at 0); the mean leaves those out.
    let summary = out.summary();
    let means = means(&out.dir.join("summary.csv"));
    for (i, row) in want.iter().enumerate() {
        let reached: Vec<u128> = row.iter().flatten().copied().collect();
        let own = TARGETS.iter().filter(|&&t| t == SOURCES[i]).count();
        let sum: u128 = reached.iter().sum();
        assert_eq!(
            summary[i],
            [
                SOURCES[i] as u128,
                reached.len() as u128,
                (6 - reached.len()) as u128,
                sum,
                reached.iter().copied().max().unwrap_or(0)
            ]
        );
        let others = reached.len() - own;
        let mean = (others > 0).then(|| sum as f64 / others as f64);
        assert_eq!(means[i], mean, "source {}", SOURCES[i]);
    }
    assert!(
        means.iter().any(Option::is_none),
        "a source that reaches no other target"
    );
}

#[test]
fn od_npz_labels_the_matrix_and_od_csv_lists_every_pair() {
    let (out, arcs) = od_run(20, &["apsp.format=\"csv\""]);
    check_od(&out, &arcs, false);
    // The rows live in a hidden staging file when distances.npy is not asked for: neither it
    // nor distances.npy is in the output.
    let mut names: Vec<String> = std::fs::read_dir(&out.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".tuccompi"))
        .collect();
    names.sort();
    assert_eq!(names, ["od.csv", "od.npz", "report.json", "summary.csv"]);
    let want = reference(&arcs);
    let csv = std::fs::read_to_string(out.dir.join("od.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("source,target,distance"));
    for (i, s) in SOURCES.iter().enumerate() {
        for (j, t) in TARGETS.iter().enumerate() {
            let d = want[i][j].map_or(String::new(), |d| d.to_string());
            assert_eq!(lines.next(), Some(format!("{s},{t},{d}").as_str()));
        }
    }
    assert_eq!(lines.next(), None);
}

#[test]
fn od_npz_follows_the_runs_distance_type_and_matches_distances_npy() {
    // Weights up to 2^31: 60 x 2^31 exceeds u32, so the run picks u64 rows.
    let (out, arcs) = od_run(1 << 31, &["apsp.distances=true"]);
    assert_eq!(out.report["input"]["distance_type"], "u64");
    check_od(&out, &arcs, true);
    let a = npz(&out.dir.join("od.npz"));
    assert_eq!(
        a["distances"],
        std::fs::read(out.dir.join("distances.npy")).unwrap(),
        "od.npz's distances are distances.npy's bytes"
    );
    assert!(!out.dir.join("od.csv").exists());
}

#[test]
fn no_targets_no_od_and_the_mean_leaves_out_the_source() {
    let (text, arcs) = graph(20);
    let dir = tmpdir("od-all");
    let g = dir.join("g.gr");
    std::fs::write(&g, text).unwrap();
    let out = run(&apsp_file(&g, "\"all\""), &["units.opencl=none"]);
    assert!(!out.dir.join("od.npz").exists());
    let means = means(&out.dir.join("summary.csv"));
    for (s, row) in out.summary().iter().enumerate() {
        let d: Vec<u128> = bellman_ford(60, &arcs, s).into_iter().flatten().collect();
        assert_eq!(row[1], d.len() as u128);
        let mean = (d.len() > 1).then(|| d.iter().sum::<u128>() as f64 / (d.len() - 1) as f64);
        assert_eq!(means[s], mean, "vertex {}", s + 1);
    }
    assert_eq!(means[59], None, "vertex 60 reaches nothing");
}

#[test]
fn csv_format_is_refused_where_it_writes_nothing_or_too_much() {
    let (text, _) = graph(20);
    let dir = tmpdir("od-refuse");
    let g = dir.join("g.gr");
    std::fs::write(&g, text).unwrap();
    let e = try_run(&apsp_file(&g, "[1]"), &["apsp.format=\"csv\""])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("apsp.format = \"csv\" writes od.csv") && e.contains("set [apsp] targets"),
        "{e}"
    );
    let e = try_run(&apsp_file(&g, "[1]"), &["apsp.format=\"xml\""])
        .unwrap_err()
        .to_string();
    assert!(e.contains("apsp.format") && e.contains("xml"), "{e}");
    // 5,000 x 2,001 pairs: above the documented limit, refused before the run.
    let big = tmpdir("od-big");
    let out = big.join("out");
    let e = try_run(
        &apsp_gen("road", 5000, "", "\"all\""),
        &[
            "apsp.targets=2001",
            "apsp.format=\"csv\"",
            "units.opencl=none",
            "apsp.cpu_algorithm=\"dijkstra\"",
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "5000 sources x 2001 targets = 10005000 pairs, more than od.csv takes (10000000)"
        ),
        "{e}"
    );
    assert!(!out.exists());
    let cfg = format!(
        "[run]\nplugin = \"fw-naive\"\n[input]\npath = {:?}\n",
        g.display().to_string()
    );
    let e = try_run(&cfg, &["fw-naive.format=\"csv\""])
        .unwrap_err()
        .to_string();
    assert!(e.contains("fw-naive writes summary.csv"), "{e}");
}

/// numpy itself, when this machine has it: `numpy.load` reads the archive.
#[test]
fn numpy_loads_od_npz() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("NOT RUN: numpy_loads_od_npz: no python3 with numpy");
        return;
    }
    let (out, arcs) = od_run(20, &[]);
    let want = reference(&arcs);
    let script = "import numpy, sys\n\
        z = numpy.load(sys.argv[1])\n\
        d = z['distances']\n\
        print(sorted(z.files))\n\
        print(z['sources'].tolist(), z['targets'].tolist(), d.dtype, d.shape, int(z['unreachable']))\n\
        print([[('' if x == z['unreachable'] else int(x)) for x in r] for r in d])\n";
    let o = std::process::Command::new("python3")
        .args(["-c", script, &out.dir.join("od.npz").display().to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("['distances', 'sources', 'targets', 'unreachable']")
    );
    assert_eq!(
        lines.next(),
        Some("[1, 7, 51, 55] [3, 1, 7, 56, 60, 3] uint32 (4, 6) 4294967295")
    );
    let rows: Vec<String> = want
        .iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .map(|d| d.map_or("''".into(), |d| d.to_string()))
                .collect();
            format!("[{}]", cells.join(", "))
        })
        .collect();
    assert_eq!(
        lines.next(),
        Some(format!("[{}]", rows.join(", ")).as_str())
    );
}

/// Pair queries (`cpu_algorithm = "pairs"`) give the reference's matrix and summaries, in u32
/// and in u64 (weights up to 2^31: a u32 row overflows and is redone); against full sweeps
/// `auto` takes them for few targets and sweeps for many, and a sweep restricted to the targets
/// beats them; a run they cannot answer is refused naming the key.
#[test]
fn pair_queries_answer_an_od_run_and_auto_takes_them_for_few_targets() {
    for (maxw, wide) in [(20, false), (1 << 31, true)] {
        let (out, arcs) = od_run(
            maxw,
            &["apsp.cpu_algorithm=\"pairs\"", "units.cpu_workers=2"],
        );
        assert_eq!(out.report["input"]["cpu_algorithm"], "pairs");
        check_od(&out, &arcs, wide);
    }
    // auto, the hierarchy cached (a first run builds it): against full sweeps, one target on a
    // road graph of 3,000 vertices is worth pair queries, 600 are not; against the sweep
    // restricted to the one target's selection (a few dozen vertices), a sweep wins.
    let cfg = apsp_gen("road", 3000, "seed = 3", "[1, 2, 3, 4, 5, 6, 7, 8]");
    run(&cfg, &["units.opencl=none", "apsp.cpu_algorithm=\"phast\""]);
    let few = run(
        &format!("{cfg}[apsp]\ntargets = [2999]\n"),
        &["units.opencl=none", "apsp.sweep=\"full\""],
    );
    assert_eq!(
        few.report["input"]["cpu_algorithm"], "pairs",
        "{}",
        few.report["input"]
    );
    let restricted = run(
        &format!("{cfg}[apsp]\ntargets = [2999]\n"),
        &["units.opencl=none"],
    );
    let a = &restricted.report["input"]["algorithm"];
    assert_eq!(restricted.report["input"]["cpu_algorithm"], "phast", "{a}");
    assert_eq!(a["sweep"], "restricted", "{a}");
    assert_eq!(restricted.summary(), few.summary());
    let many = run(
        &format!("{cfg}[apsp]\ntargets = 600\n"),
        &["units.opencl=none"],
    );
    assert_eq!(
        many.report["input"]["cpu_algorithm"], "phast",
        "{}",
        many.report["input"]
    );
    let sweep = dijkstra(&format!("{cfg}[apsp]\ntargets = [2999]\n"), &[]);
    assert_eq!(few.summary(), sweep.summary());
    // Folds or paths: refused by name.
    let e = try_run(
        &format!("{cfg}[apsp]\ntargets = [2999]\ncpu_algorithm = \"pairs\"\n[apsp.reach]\nradii = [100]\n"),
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cpu_algorithm = \"pairs\""), "{e}");
}
