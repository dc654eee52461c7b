//! `[apsp.reach]`: counts and decayed sums of targets within radii, the nearest targets and
//! isochrone counts, folded per source inside the run, against a plain Dijkstra written here
//! (with a limit for the counts, whole trees sorted for the nearest), on the CPU halves
//! (Dijkstra, PHAST) and the GPU half (PHAST, work list); resumable byte for byte.

use crate::util::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A graph as adjacency lists, 0-based.
struct Graph {
    adj: Vec<Vec<(u32, u64)>>,
}

/// A DIMACS `.gr` (optionally gzip-compressed) read here, independently of the plugin.
fn read_gr(p: &Path) -> Graph {
    let mut text = String::new();
    let f = std::fs::File::open(p).unwrap();
    if p.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .unwrap();
    } else {
        std::io::BufReader::new(f)
            .read_to_string(&mut text)
            .unwrap();
    }
    parse_gr(&text)
}

fn parse_gr(text: &str) -> Graph {
    let mut adj = Vec::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.first() {
            Some(&"p") => adj = vec![Vec::new(); w[2].parse().unwrap()],
            Some(&"a") => {
                let (u, v, c): (usize, u32, u64) = (
                    w[1].parse().unwrap(),
                    w[2].parse().unwrap(),
                    w[3].parse().unwrap(),
                );
                adj[u - 1].push((v - 1, c));
            }
            _ => {}
        }
    }
    Graph { adj }
}

/// Distances from `s`, those above `limit` left unknown (`u64::MAX`): a plain Dijkstra with
/// a binary heap that stops at the limit.
fn dijkstra(g: &Graph, s: u32, limit: u64) -> Vec<u64> {
    let mut d = vec![u64::MAX; g.adj.len()];
    let mut h = BinaryHeap::new();
    d[s as usize] = 0;
    h.push(Reverse((0u64, s)));
    while let Some(Reverse((du, u))) = h.pop() {
        if du > d[u as usize] {
            continue;
        }
        for &(v, w) in &g.adj[u as usize] {
            let nd = du + w;
            if nd <= limit && nd < d[v as usize] {
                d[v as usize] = nd;
                h.push(Reverse((nd, v)));
            }
        }
    }
    d
}

/// What `[apsp.reach]` asks, as the reference computes it.
#[derive(Clone)]
struct Ask {
    radii: Vec<u64>,
    decay: &'static str,
    weights: Option<Vec<f64>>,
    nearest: usize,
    isochrones: Vec<u64>,
}

/// One source's expected row.
#[derive(Debug, PartialEq)]
struct Row {
    counts: Vec<u64>,
    sums: Vec<f64>,
    /// (target id in the input's numbering, distance, position in the listed targets),
    /// closest first.
    near: Vec<(u64, u64, Option<u64>)>,
    within: Vec<u64>,
}

/// The reference rows: sources and targets 1-based ids (`targets` `None`: every vertex).
fn expected(g: &Graph, sources: &[u64], targets: Option<&[u64]>, ask: &Ask) -> Vec<Row> {
    let n = g.adj.len() as u64;
    let cols: Vec<u64> = targets.map_or_else(|| (1..=n).collect(), <[u64]>::to_vec);
    sources
        .iter()
        .map(|&s| {
            let whole = ask.nearest > 0;
            let limit = if whole {
                u64::MAX
            } else {
                ask.radii
                    .iter()
                    .chain(&ask.isochrones)
                    .copied()
                    .max()
                    .unwrap()
            };
            let d = dijkstra(g, s as u32 - 1, limit);
            let at = |v: u64| d[v as usize - 1];
            let mut counts = vec![0; ask.radii.len()];
            let mut sums = vec![0.0; ask.radii.len()];
            for (i, &v) in cols.iter().enumerate() {
                for (j, &r) in ask.radii.iter().enumerate() {
                    if at(v) <= r {
                        counts[j] += 1;
                        let w = ask.weights.as_ref().map_or(1.0, |w| w[i]);
                        let x = at(v) as f64 / r as f64;
                        sums[j] += w * match ask.decay {
                            "linear" => 1.0 - x,
                            "exp" => (-x).exp(),
                            _ => 1.0,
                        };
                    }
                }
            }
            // Brute force: every reachable target sorted by (distance, position in the list).
            let mut all: Vec<(u64, usize)> = cols
                .iter()
                .enumerate()
                .filter(|&(_, &v)| at(v) != u64::MAX)
                .map(|(i, &v)| (at(v), i))
                .collect();
            all.sort();
            let near = all
                .iter()
                .take(ask.nearest)
                .map(|&(dv, i)| (cols[i], dv, targets.map(|_| i as u64)))
                .collect();
            let within = ask
                .isochrones
                .iter()
                .map(|&l| d.iter().filter(|&&x| x <= l).count() as u64)
                .collect();
            Row {
                counts,
                sums,
                near,
                within,
            }
        })
        .collect()
}

/// The rows of `reach.csv`, `nearest.csv` and `isochrones.csv` (those asked), checking the
/// headers and the source column.
fn read_rows(dir: &Path, sources: &[u64], ask: &Ask, listed: bool) -> Vec<Row> {
    let lines = |name: &str| -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let mut l: Vec<Vec<String>> = text
            .lines()
            .map(|l| l.split(',').map(String::from).collect())
            .collect();
        let header = l.remove(0);
        assert_eq!(header[0], "source", "{name}");
        assert_eq!(l.len(), sources.len(), "{name}: one row per source");
        for (row, &s) in l.iter().zip(sources) {
            assert_eq!(row[0], s.to_string(), "{name}: source column");
        }
        l
    };
    let mut rows: Vec<Row> = sources
        .iter()
        .map(|_| Row {
            counts: Vec::new(),
            sums: Vec::new(),
            near: Vec::new(),
            within: Vec::new(),
        })
        .collect();
    if !ask.radii.is_empty() {
        for (row, l) in rows.iter_mut().zip(lines("reach.csv")) {
            for j in 0..ask.radii.len() {
                row.counts.push(l[1 + 2 * j].parse().unwrap());
                row.sums.push(l[2 + 2 * j].parse().unwrap());
            }
        }
    }
    if ask.nearest > 0 {
        let per = if listed { 3 } else { 2 };
        for (row, l) in rows.iter_mut().zip(lines("nearest.csv")) {
            assert_eq!(l.len(), 1 + per * ask.nearest);
            for e in l[1..].chunks(per) {
                if e[0].is_empty() {
                    assert!(
                        e.iter().all(String::is_empty),
                        "unset entries are empty: {l:?}"
                    );
                } else {
                    let index = listed.then(|| e[2].parse().unwrap());
                    row.near
                        .push((e[0].parse().unwrap(), e[1].parse().unwrap(), index));
                }
            }
        }
    }
    if !ask.isochrones.is_empty() {
        for (row, l) in rows.iter_mut().zip(lines("isochrones.csv")) {
            row.within = l[1..].iter().map(|x| x.parse().unwrap()).collect();
        }
    }
    rows
}

/// Compare a run's rows with the reference: counts, nearest and isochrones exactly, sums
/// within 1e-9 relative (the device adds a source's targets in another order).
fn check(what: &str, got: &[Row], want: &[Row]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.counts, w.counts, "{what}: counts of source row {i}");
        assert_eq!(g.near, w.near, "{what}: nearest of source row {i}");
        assert_eq!(g.within, w.within, "{what}: isochrones of source row {i}");
        for (a, b) in g.sums.iter().zip(&w.sums) {
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
                "{what}: sum of source row {i}: {a} against {b}"
            );
        }
    }
    assert_eq!(got.len(), want.len());
}

fn toml_list(v: &[u64]) -> String {
    format!("{v:?}")
}

/// The config of a reach run on `input`.
fn config(
    input: &Path,
    sources: &[u64],
    targets: Option<&[u64]>,
    ask: &Ask,
    wfile: Option<&Path>,
) -> String {
    let mut cfg = format!("{}[apsp]\n", apsp_file(input, &toml_list(sources)));
    if let Some(t) = targets {
        cfg += &format!("targets = {}\n", toml_list(t));
    }
    cfg += &format!(
        "[apsp.reach]\nradii = {}\ndecay = \"{}\"\nnearest = {}\nisochrones = {}\n",
        toml_list(&ask.radii),
        ask.decay,
        ask.nearest,
        toml_list(&ask.isochrones)
    );
    if let Some(w) = wfile {
        cfg += &format!("weights = {{ file = {:?} }}\n", w.display().to_string());
    }
    cfg
}

fn write_npy_f64(p: &Path, data: &[f64]) {
    use npyz::WriterBuilder;
    let mut out = Vec::new();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[data.len() as u64])
        .writer(&mut out)
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
    std::fs::write(p, out).unwrap();
}

/// A pseudo-random sequence (SplitMix64), the same on every run.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Rome: 40 sources, 300 targets (one listed twice), radii 500/1,000/2,000 m with weights and
/// a decay, the 5 nearest, isochrones of 1 and 3 km.
struct Case {
    graph: PathBuf,
    sources: Vec<u64>,
    targets: Vec<u64>,
    ask: Ask,
    weights: PathBuf,
    want: Vec<Row>,
}

fn rome_case(decay: &'static str) -> Option<Case> {
    let g = data("rome99.gr.gz")?;
    let graph = read_gr(&g);
    let mut r = rng(7);
    let sources: Vec<u64> = (0..40)
        .map(|_| 1 + r() % 3353)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut targets: Vec<u64> = (0..300).map(|_| 1 + r() % 3353).collect();
    targets[299] = targets[0];
    let weights: Vec<f64> = (0..300).map(|_| (r() % 1000) as f64 / 7.0).collect();
    let dir = tmpdir("reach-rome");
    let wfile = dir.join("w.npy");
    write_npy_f64(&wfile, &weights);
    let ask = Ask {
        radii: vec![500, 1000, 2000],
        decay,
        weights: Some(weights),
        nearest: 5,
        isochrones: vec![1000, 3000],
    };
    let want = expected(&graph, &sources, Some(&targets), &ask);
    Some(Case {
        graph: g,
        sources,
        targets,
        ask,
        weights: wfile,
        want,
    })
}

#[test]
fn rome_counts_sums_nearest_and_isochrones_equal_dijkstra_on_the_cpu_halves() {
    for decay in ["linear", "exp"] {
        let Some(Case {
            graph: g,
            sources,
            targets,
            ask,
            weights: wfile,
            want,
        }) = rome_case(decay)
        else {
            return;
        };
        let cfg = config(&g, &sources, Some(&targets), &ask, Some(&wfile));
        for cpu in ["dijkstra", "phast"] {
            let out = run(
                &cfg,
                &[
                    "units.opencl=none",
                    "units.cpu_workers=2",
                    &format!("apsp.cpu_algorithm=\"{cpu}\""),
                ],
            );
            check(
                &format!("{cpu} {decay}"),
                &read_rows(&out.dir, &sources, &ask, true),
                &want,
            );
            // No matrix: the summary and the per-source tables only.
            assert!(!out.dir.join("distances.npy").exists() && !out.dir.join("od.npz").exists());
            assert_eq!(out.summary().len(), sources.len());
        }
    }
}

#[test]
fn rome_folds_on_the_gpu_half_equal_dijkstra() {
    if !opencl() {
        return;
    }
    let Some(Case {
        graph: g,
        sources,
        targets,
        ask,
        weights: wfile,
        want,
    }) = rome_case("exp")
    else {
        return;
    };
    let cfg = config(&g, &sources, Some(&targets), &ask, Some(&wfile));
    for algo in ["phast", "worklist"] {
        let out = run(
            &cfg,
            &[
                "units.device_type=all",
                "units.cpu_workers=0",
                "verify.sample=0",
                &format!("apsp.gpu_algorithm=\"{algo}\""),
            ],
        );
        let gpu_tasks: u64 = out.report["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["kind"] == "gpu")
            .map(|u| u["tasks"].as_u64().unwrap())
            .sum();
        assert_eq!(
            gpu_tasks as usize,
            sources.len(),
            "the GPU half ran every task"
        );
        check(
            &format!("gpu {algo}"),
            &read_rows(&out.dir, &sources, &ask, true),
            &want,
        );
    }
}

/// A graph of weights 1..=3 (ties everywhere), with a part unreachable from the rest: every
/// vertex a target, flat counts, the 8 nearest (fewer where few are reachable), on every half.
#[test]
fn nearest_ties_go_to_the_lower_id_and_short_lists_are_marked_on_every_half() {
    let mut r = rng(3);
    let n = 400u64;
    let mut text = String::new();
    let mut m = 0;
    for _ in 0..1200 {
        let (u, v) = (1 + r() % 380, 1 + r() % 380);
        text += &format!("a {u} {v} {}\n", 1 + r() % 3);
        m += 1;
    }
    // 381..=400: a chain of their own, unreachable from the rest.
    for u in 381..400 {
        text += &format!("a {u} {} 1\n", u + 1);
        m += 1;
    }
    let text = format!("p sp {n} {m}\n{text}");
    let dir = tmpdir("reach-ties");
    let path = dir.join("g.gr");
    std::fs::write(&path, &text).unwrap();
    let graph = parse_gr(&text);
    let sources: Vec<u64> = vec![1, 2, 50, 100, 200, 379, 395, 400];
    let ask = Ask {
        radii: vec![2, 4, 6],
        decay: "flat",
        weights: None,
        nearest: 8,
        isochrones: vec![3],
    };
    let want = expected(&graph, &sources, None, &ask);
    assert!(
        want.last().unwrap().near.len() < 8,
        "the last source reaches few vertices"
    );
    // And a target list where one far vertex, listed 100 times, fills every device slice's
    // list with ties before the sources themselves (distance 0) arrive at the end: a slice
    // must then drop its tied entry listed last.
    let d1 = dijkstra(&graph, 0, u64::MAX);
    let far = (0..n as usize)
        .filter(|&v| d1[v] != u64::MAX)
        .max_by_key(|&v| d1[v])
        .unwrap();
    let mut listed: Vec<u64> = vec![far as u64 + 1; 100];
    listed.extend([1, 2, 50, 100]);
    let want_listed = expected(&graph, &sources, Some(&listed), &ask);
    let ties = &want_listed[0].near;
    let tied = ties.iter().filter(|e| e.0 == far as u64 + 1).count();
    assert!(ties[0].1 == 0 && tied >= 4, "{ties:?}");
    let cases = [
        (config(&path, &sources, None, &ask, None), false, &want),
        (
            config(&path, &sources, Some(&listed), &ask, None),
            true,
            &want_listed,
        ),
    ];
    let mut runs: Vec<(&str, Vec<&str>)> = vec![
        (
            "dijkstra",
            vec!["units.opencl=none", "apsp.cpu_algorithm=\"dijkstra\""],
        ),
        (
            "phast",
            vec!["units.opencl=none", "apsp.cpu_algorithm=\"phast\""],
        ),
    ];
    if opencl() {
        for algo in [
            "apsp.gpu_algorithm=\"phast\"",
            "apsp.gpu_algorithm=\"worklist\"",
        ] {
            runs.push((
                algo,
                vec![
                    "units.device_type=all",
                    "units.cpu_workers=0",
                    "verify.sample=0",
                    algo,
                ],
            ));
        }
    }
    for (what, sets) in &runs {
        for (cfg, listed, want) in &cases {
            let out = run(cfg, sets);
            let got = read_rows(&out.dir, &sources, &ask, *listed);
            check(&format!("{what} (targets listed: {listed})"), &got, want);
            // Flat and unweighted: the sum is the count.
            assert!(got
                .iter()
                .all(|r| r.sums.iter().zip(&r.counts).all(|(&s, &c)| s == c as f64)));
        }
    }
}

#[test]
fn bad_reach_options_are_refused_naming_the_key_or_file() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let dir = tmpdir("reach-bad");
    let w = dir.join("w.npy");
    write_npy_f64(&w, &[1.0, 2.0]);
    let base = format!("{}[apsp]\ntargets = [1, 2, 3]\n", apsp_file(&g, "2"));
    let err = |extra: &str| {
        try_run(
            &format!("{base}[apsp.reach]\n{extra}"),
            &["units.opencl=none"],
        )
        .unwrap_err()
        .to_string()
    };
    let e = err(&format!(
        "radii = [500]\nweights = {{ file = {:?} }}\n",
        w.display().to_string()
    ));
    assert!(
        e.contains("w.npy") && e.contains("2 weights for 3 targets"),
        "{e}"
    );
    let e = err("radii = [0, 500]\n");
    assert!(e.contains("radii contains 0"), "{e}");
    let e = err("nearest = 65\n");
    assert!(e.contains("nearest = 65"), "{e}");
    let e = err("radius = [500]\n");
    assert!(e.contains("radius"), "{e}");
    let e = err("decay = \"exp\"\n");
    assert!(e.contains("radii"), "{e}");
    let csv = dir.join("pois.csv");
    std::fs::write(&csv, "id,jobs\n1,3\n2,x\n3,4\n").unwrap();
    let e = err(&format!(
        "radii = [500]\nweights = {{ file = {:?}, column = \"jobs\" }}\n",
        csv.display().to_string()
    ));
    assert!(e.contains("pois.csv:3") && e.contains("\"x\""), "{e}");
}

/// Kill a reach run mid-way (SIGKILL once its journal has entries), resume it, and compare
/// every table with an uninterrupted run's, byte for byte.
#[test]
fn a_reach_run_killed_mid_way_resumes_byte_identical() {
    let Some(g) = data("rome99.gr.gz") else {
        return;
    };
    let targets: Vec<u64> = (1..=200).map(|i| i * 16).collect();
    let cfg = format!(
        "{}[apsp]\ntargets = {targets:?}\n[apsp.reach]\nradii = [500, 1000, 2000]\ndecay = \"exp\"\nnearest = 4\nisochrones = [1500]\n",
        apsp_file(&g, "\"all\"")
    );
    let sets = [
        "units.opencl=none",
        "units.cpu_workers=2",
        "scheduler.chunk=16",
        "apsp.cpu_algorithm=\"dijkstra\"",
        "output.sync_seconds=0.05",
    ];
    crate::reliability::interrupt_then_resume("reach-kill", &cfg, 3353, &sets, &|child, out| {
        assert!(
            !out.join("reach.csv").exists(),
            "an unfinished run's tables stay staged"
        );
        child.kill().unwrap(); // SIGKILL
    });
}

/// osm-moscow, a slice of the 10,000 sources x 5,000 POIs: counts within 500, 1,000
/// and 2,000 against a Dijkstra limited to 2,000, and no file larger than the per-source
/// table.
#[test]
fn moscow_counts_within_500_1000_2000_equal_a_limited_dijkstra() {
    let Some(g) = data("osm-moscow.gr.gz") else {
        return;
    };
    let graph = read_gr(&g);
    let mut r = rng(11);
    let n = graph.adj.len() as u64;
    let sources: Vec<u64> = (0..64)
        .map(|_| 1 + r() % n)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let pois: Vec<u64> = (0..5000).map(|_| 1 + r() % n).collect();
    let ask = Ask {
        radii: vec![500, 1000, 2000],
        decay: "flat",
        weights: None,
        nearest: 0,
        isochrones: vec![],
    };
    let want = expected(&graph, &sources, Some(&pois), &ask);
    assert!(
        want.iter().any(|w| w.counts[2] > 0),
        "some POIs within 2 km"
    );
    let dir = tmpdir("reach-moscow");
    let cfg = format!(
        "{}[apsp]\ntargets = {{ file = {:?} }}\n[apsp.reach]\nradii = [500, 1000, 2000]\n",
        apsp_file(&g, &toml_list(&sources)),
        {
            let p = dir.join("pois.txt");
            let text: String = pois.iter().map(|p| format!("{p}\n")).collect();
            std::fs::write(&p, text).unwrap();
            p.display().to_string()
        }
    );
    let out = run(&cfg, &["units.opencl=none", "units.cpu_workers=2"]);
    check("moscow", &read_rows(&out.dir, &sources, &ask, true), &want);
    let table = std::fs::metadata(out.dir.join("reach.csv")).unwrap().len();
    for e in std::fs::read_dir(&out.dir).unwrap().flatten() {
        let len = e.metadata().unwrap().len();
        assert!(
            e.path().is_dir() || len <= table.max(64 << 10),
            "{} is {len} bytes, larger than the per-source table ({table})",
            e.path().display()
        );
    }
}

#[test]
fn isochrone_ids_are_the_vertices_within_each_limit_on_every_half() {
    let Some(path) = data("rome99.gr.gz") else {
        return;
    };
    let g = read_gr(&path);
    let sources = [1u64, 77, 1500, 3353];
    let limits = [1000u64, 3000];
    let cfg = format!(
        "{}[apsp.reach]\nisochrones = [1000, 3000]\nisochrone_ids = true\n",
        apsp_file(&path, &format!("{sources:?}"))
    );
    let mut halves = vec![vec!["units.opencl=none"]];
    if opencl() {
        halves.push(vec!["units.cpu_workers=0", "units.device_type=\"all\""]);
    }
    for sets in halves {
        let out = run(&cfg, &sets);
        let text = std::fs::read_to_string(out.dir.join("isochrone_ids.csv")).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("source,limit,count,vertices"));
        for &s in &sources {
            let d = dijkstra(&g, (s - 1) as u32, 3000);
            for &l in &limits {
                let want: Vec<String> = (0..d.len())
                    .filter(|&v| d[v] <= l)
                    .map(|v| (v + 1).to_string())
                    .collect();
                let line = lines.next().unwrap_or_else(|| panic!("{sets:?}: {text}"));
                assert_eq!(
                    line,
                    format!("{s},{l},{},{}", want.len(), want.join(" ")),
                    "{sets:?}"
                );
            }
        }
        assert_eq!(lines.next(), None);
    }
    // Without limits the ids are refused by name.
    let e = try_run(
        &format!(
            "{}[apsp.reach]\nradii = [500]\nisochrone_ids = true\n",
            apsp_file(&path, "2")
        ),
        &["units.opencl=none"],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("isochrone_ids = true"), "{e}");
}
