//! Inputs as people have them: edge lists with a header and float weights (`.csv`, `.tsv`),
//! dense matrices from numpy (`.npy`), each against the same graph in a format read before.

use crate::util::*;
use std::io::Read;
use std::path::Path;

/// The `distances` array of a run's `od.npz`, as u64.
fn od_distances(dir: &Path) -> Vec<u64> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(dir.join("od.npz")).unwrap()).unwrap();
    let mut b = Vec::new();
    z.by_name("distances.npy")
        .unwrap()
        .read_to_end(&mut b)
        .unwrap();
    let f = npyz::NpyFile::new(&b[..]).unwrap();
    if f.dtype().descr() == "'<u4'" {
        let v: Vec<u32> = f.into_vec().unwrap();
        v.into_iter()
            .map(|d| if d == u32::MAX { u64::MAX } else { d as u64 })
            .collect()
    } else {
        f.into_vec().unwrap()
    }
}

/// rome99's arcs as DIMACS gives them (1-based ids).
fn rome99() -> Option<Vec<(u64, u64, u64)>> {
    let p = data("rome99.gr.gz")?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    Some(
        text.lines()
            .filter_map(|l| l.strip_prefix("a "))
            .map(|l| {
                let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
                (v[0], v[1], v[2])
            })
            .collect(),
    )
}

#[test]
fn a_csv_with_float_weights_gives_the_distances_of_the_dimacs_file_it_came_from() {
    let (Some(arcs), Some(gr)) = (rome99(), data("rome99.gr.gz")) else {
        return;
    };
    let dir = tmpdir("csv-rome");
    // Weights in "kilometres" (w / 1000, printed with up to 3 decimals), extra columns, the
    // columns in another order: weight_scale = 1000 gives the integers back.
    let mut csv = String::from("length_km,name,to,from\n");
    let mut tsv = String::from("u\tv\tw\n");
    for (i, (u, v, w)) in arcs.iter().enumerate() {
        csv += &format!("{},\"road {i}, rome\",{v},{u}\n", *w as f64 / 1000.0);
        tsv += &format!("{u}\t{v}\t{}\n", *w as f64 / 1000.0);
    }
    std::fs::write(dir.join("rome.csv"), csv).unwrap();
    std::fs::write(dir.join("rome.tsv"), tsv).unwrap();
    let sources = "[1, 17, 400, 1234, 3353]";
    let od = "[apsp]\ntargets = [1, 2, 99, 3000, 3353, 17]\n";
    let sets = ["units.opencl=none", "apsp.cpu_algorithm=\"dijkstra\""];
    let want = run(&format!("{}{od}", apsp_file(&gr, sources)), &sets);
    for (file, columns) in [
        ("rome.csv", "[\"from\", \"to\", \"length_km\"]"),
        ("rome.tsv", "[\"u\", \"v\", \"w\"]"),
    ] {
        let cfg = format!(
            "{}columns = {columns}\nweight_scale = 1000\n{od}",
            apsp_file(&dir.join(file), sources)
        );
        let got = run(&cfg, &sets);
        assert_eq!(od_distances(&got.dir), od_distances(&want.dir), "{file}");
        // The summary over the targets is the same too (same ids: the CSV keeps DIMACS's).
        assert_eq!(
            std::fs::read(got.dir.join("summary.csv")).unwrap(),
            std::fs::read(want.dir.join("summary.csv")).unwrap(),
            "{file}"
        );
    }
    // Without the scale, the fractions are refused with the line and the fix.
    let e = try_run(
        &format!(
            "{}columns = [\"from\", \"to\", \"length_km\"]\n",
            apsp_file(&dir.join("rome.csv"), "[1]")
        ),
        &sets,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("rome.csv:") && e.contains("is not an integer"),
        "{e}"
    );
}

#[test]
fn input_keys_that_do_not_fit_the_format_are_named() {
    let dir = tmpdir("keys");
    let g = dir.join("g.gr");
    std::fs::write(&g, "p sp 2 1\na 1 2 3\n").unwrap();
    let cfg = format!("{}columns = [\"a\", \"b\"]\n", apsp_file(&g, "[1]"));
    let e = try_run(&cfg, &[]).unwrap_err().to_string();
    assert!(
        e.contains("test.toml:6: input.columns applies to .csv and .tsv edge lists, and input.path is a .gr file; remove input.columns"),
        "{e}"
    );
    let e = try_run(&apsp_file(&g, "[1]"), &["input.no_arc=0"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--set input.no_arc=0: input.no_arc applies to .npy matrices"),
        "{e}"
    );
    for (set, want) in [
        (
            "input.weight_scale=0",
            "input.weight_scale = 0: use a positive number",
        ),
        ("input.columns=[\"a\"]", "name 3 columns"),
        (
            "input.columns=[\"a\", \"a\"]",
            "column \"a\" is named twice",
        ),
    ] {
        let e = try_run(&apsp_file(&g, "[1]"), &[set])
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{set}: {e}");
    }
    let e = try_run(
        &apsp_gen("road", 100, "", "[1]"),
        &["input.weight_scale=10"],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("describes an input file, but there is no input.path"),
        "{e}"
    );
}

/// A `.npy` file written by hand (format 1.0), independent of the reader's crate.
fn npy_bytes(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    b.extend_from_slice(dict.as_bytes());
    b.extend_from_slice(data);
    b
}

/// A random n × n weight matrix: `None` = no arc, weights 0..100; with `negative`, shifted by
/// the potentials 3·i (w + 3i − 3j: negative arcs, but every cycle keeps its length >= 0).
fn matrix(n: usize, seed: u64, negative: bool) -> Vec<Option<i64>> {
    let mut x = seed;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    (0..n * n)
        .map(|k| {
            let (i, j) = (k / n, k % n);
            if i == j {
                return Some(0);
            }
            match next() % 10 {
                0..=5 => None,
                _ if negative => Some((next() % 100) as i64 + 3 * (i as i64 - j as i64)),
                _ => Some((next() % 100) as i64),
            }
        })
        .collect()
}

fn gr_text(n: usize, m: &[Option<i64>]) -> String {
    let arcs: Vec<String> = (0..n * n)
        .filter(|&k| k / n != k % n)
        .filter_map(|k| m[k].map(|w| format!("a {} {} {w}", k / n + 1, k % n + 1)))
        .collect();
    format!("p sp {n} {}\n{}\n", arcs.len(), arcs.join("\n"))
}

/// The matrix in one of several encodings, with the config lines it needs.
fn encode(n: usize, m: &[Option<i64>], how: &str) -> (Vec<u8>, &'static str) {
    let at = |k: usize, fortran: bool| {
        if fortran {
            m[(k % n) * n + k / n]
        } else {
            m[k]
        }
    };
    let shape = format!("({n}, {n})");
    let mut data = Vec::new();
    let (descr, fortran, extra) = match how {
        "<i4 -1e6" => ("<i4", false, "no_arc = -1000000\n"),
        ">i8 F" => (">i8", true, "no_arc = 1000000\n"),
        ">i4 F" => (">i4", true, "no_arc = 1000000\n"),
        "<f8 inf" => ("<f8", false, ""),
        "<f4 nan F" => ("<f4", true, ""),
        "<f8 /10" => ("<f8", false, "weight_scale = 10\n"),
        "|u1 255" => ("|u1", false, "no_arc = 255\n"),
        ">u2 0.5" => (">u2", false, "no_arc = 65535.0\n"),
        _ => unreachable!(),
    };
    for k in 0..n * n {
        let v = at(k, fortran);
        match descr {
            "<i4" => data.extend_from_slice(&(v.unwrap_or(-1_000_000) as i32).to_le_bytes()),
            ">i8" => data.extend_from_slice(&v.unwrap_or(1_000_000).to_be_bytes()),
            ">i4" => data.extend_from_slice(&(v.unwrap_or(1_000_000) as i32).to_be_bytes()),
            "<f8" if how.ends_with("/10") => {
                data.extend_from_slice(&v.map_or(f64::INFINITY, |w| w as f64 / 10.0).to_le_bytes())
            }
            "<f8" => data.extend_from_slice(&v.map_or(f64::INFINITY, |w| w as f64).to_le_bytes()),
            "<f4" => data.extend_from_slice(&v.map_or(f32::NAN, |w| w as f32).to_le_bytes()),
            "|u1" => data.push(v.map_or(255, |w| w as u8)),
            ">u2" => data.extend_from_slice(&(v.map_or(65535, |w| w as u16)).to_be_bytes()),
            _ => unreachable!(),
        }
    }
    (npy_bytes(descr, fortran, &shape, &data), extra)
}

const DENSE: [&str; 4] = ["fw-naive", "fw-blocked", "rkleene", "dense-dijkstra"];

#[test]
fn every_dense_plugin_reads_npy_matrices_as_it_reads_the_same_graph_as_text() {
    let n = 37;
    let dir = tmpdir("npy");
    for negative in [false, true] {
        let m = matrix(n, 7 + negative as u64, negative);
        std::fs::write(dir.join("g.gr"), gr_text(n, &m)).unwrap();
        let hows: &[&str] = if negative {
            &["<i4 -1e6", ">i4 F", ">i8 F", "<f8 inf"]
        } else {
            &[
                "<i4 -1e6",
                ">i4 F",
                ">i8 F",
                "<f8 inf",
                "<f4 nan F",
                "<f8 /10",
                "|u1 255",
                ">u2 0.5",
            ]
        };
        for p in DENSE {
            if negative && p == "dense-dijkstra" {
                continue;
            }
            let cfg = |path: &Path, extra: &str| {
                format!(
                    "[run]\nplugin = \"{p}\"\n[input]\npath = {:?}\n{extra}",
                    path.display().to_string()
                )
            };
            let distances = format!("{p}.distances=true");
            let sets = [distances.as_str(), "units.opencl=none"];
            let want = run(&cfg(&dir.join("g.gr"), ""), &sets);
            let want_npy = std::fs::read(want.dir.join("distances.npy")).unwrap();
            let summary = std::fs::read_to_string(want.dir.join("summary.csv")).unwrap();
            // The text is 1-based, the matrix 0-based: the source column differs by one.
            let shifted: String = summary
                .lines()
                .enumerate()
                .map(|(i, l)| match (i, l.split_once(',')) {
                    (0, _) | (_, None) => format!("{l}\n"),
                    (_, Some((s, rest))) => {
                        format!("{},{rest}\n", s.parse::<u64>().unwrap() - 1)
                    }
                })
                .collect();
            for how in hows {
                let (bytes, extra) = encode(n, &m, how);
                let f = dir.join("m.npy");
                std::fs::write(&f, bytes).unwrap();
                let got = run(&cfg(&f, extra), &sets);
                assert!(
                    std::fs::read(got.dir.join("distances.npy")).unwrap() == want_npy,
                    "{p} {how} negative={negative}: distances.npy differs"
                );
                assert_eq!(
                    std::fs::read_to_string(got.dir.join("summary.csv")).unwrap(),
                    shifted,
                    "{p} {how}"
                );
            }
        }
    }
}

/// GPU fw-blocked reads a `.npy` matrix strip by strip from the file as it uploads it, and
/// summarizes (and writes) each source's row as its strip comes back: against the CPU half on
/// the same file, with several strips, sources out of order and strips without a source (not
/// read back), in a C-order and a Fortran-order encoding.
#[test]
fn gpu_fw_blocked_streams_npy_matrices_as_the_cpu_reads_them() {
    if !opencl() {
        return;
    }
    let n = 100;
    let dir = tmpdir("npy-gpu");
    for negative in [false, true] {
        let m = matrix(n, 11 + negative as u64, negative);
        for how in ["<i4 -1e6", ">i4 F", ">i8 F", "<f8 inf"] {
            let (bytes, extra) = encode(n, &m, how);
            let f = dir.join("m.npy");
            std::fs::write(&f, bytes).unwrap();
            let cfg = format!(
                "[run]\nplugin = \"fw-blocked\"\n[input]\npath = {:?}\n{extra}",
                f.display().to_string()
            );
            for sources in ["\"all\"", "[97, 3, 4]"] {
                let src = format!("fw-blocked.sources={sources}");
                let base = ["fw-blocked.distances=true", src.as_str()];
                let want = run(&cfg, &[&base[..], &["units.opencl=none"]].concat());
                let got = run(
                    &cfg,
                    &[
                        &base[..],
                        &[
                            "units.cpu_workers=0",
                            "units.device_type=\"all\"",
                            "fw-blocked.tile=16",
                            "fw-blocked.strips=3",
                        ],
                    ]
                    .concat(),
                );
                let by = got.report["checksum"]["computed_by"].as_str().unwrap();
                assert!(by.starts_with("gpu"), "{by}");
                assert_eq!(got.report["checksum"]["gpu_seconds"]["strips"], 3);
                for file in ["summary.csv", "distances.npy"] {
                    assert!(
                        std::fs::read(got.dir.join(file)).unwrap()
                            == std::fs::read(want.dir.join(file)).unwrap(),
                        "{how} negative={negative} sources={sources}: {file} differs"
                    );
                }
            }
        }
    }
}

#[test]
fn hostile_npy_files_get_one_clear_error() {
    let dir = tmpdir("npy-bad");
    let i4 = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let good = npy_bytes("<i4", false, "(2, 2)", &i4(&[0, 3, 1, 0]));
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("truncated", good[..good.len() - 3].to_vec(), "", "truncated (copy it again)"),
        ("long", [good.clone(), vec![0; 4]].concat(), "", "longer than its header says"),
        ("shape", npy_bytes("<i4", false, "(2, 3)", &i4(&[0; 6])), "", "the matrix is 2 x 3; an adjacency matrix is square"),
        ("1d", npy_bytes("<i4", false, "(4,)", &i4(&[0; 4])), "", "an array of shape [4]; a dense input is a 2-D n x n matrix"),
        ("3d", npy_bytes("<i4", false, "(1, 2, 2)", &i4(&[0; 4])), "", "an array of shape [1, 2, 2]"),
        ("empty", Vec::new(), "", "the file is empty"),
        ("zero", npy_bytes("<i4", false, "(0, 0)", &[]), "", "the matrix is 0 x 0"),
        ("garbage", b"source,target,weight\n0,1,2\n".to_vec(), "", "not a .npy file that tuccompi can read"),
        ("header", good[..20].to_vec(), "", "not a .npy file that tuccompi can read"),
        ("complex", npy_bytes("<c16", false, "(1, 1)", &[0; 16]), "", "dtype '<c16' is not a matrix of weights"),
        ("bool", npy_bytes("|b1", false, "(1, 1)", &[1]), "", "is not a matrix of weights"),
        ("fraction", npy_bytes("<f8", false, "(2, 2)", &[0f64, 0.5, 1.0, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()), "", "row 0, column 1: 0.5 is not an integer; tuccompi computes exact integer distances: set input.weight_scale"),
        ("neginf", npy_bytes("<f8", false, "(2, 2)", &[0f64, 1.0, f64::NEG_INFINITY, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()), "", "row 1, column 0: -inf is not a weight"),
        ("diagonal", npy_bytes("<i4", false, "(2, 2)", &i4(&[0, 1, 1, -2])), "", "row 1, column 1: a negative diagonal entry (-2) is a negative cycle"),
        ("huge", npy_bytes("<u8", false, "(1, 1)", &u64::MAX.to_le_bytes()), "", "row 0, column 0: 18446744073709551615 is out of range"),
        ("columns", good.clone(), "columns = [\"a\", \"b\"]\n", "input.columns applies to .csv and .tsv edge lists, and input.path is a .npy file"),
    ];
    let mut rng = 99u64;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
            (rng >> 56) as u8
        })
        .collect();
    for (name, bytes, extra, want) in
        cases
            .into_iter()
            .chain([("random", random, "", "not a .npy file")])
    {
        let f = dir.join(format!("{name}.npy"));
        std::fs::write(&f, bytes).unwrap();
        for p in ["fw-blocked", "dense-dijkstra"] {
            let cfg = format!(
                "[run]\nplugin = \"{p}\"\n[input]\npath = {:?}\n{extra}",
                f.display().to_string()
            );
            let e = try_run(&cfg, &["units.opencl=none"])
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{name} {p}: {e}");
            assert!(
                e.contains(&format!("{name}.npy")) || name == "columns",
                "{name}: {e}"
            );
        }
    }
    // A matrix is the dense plugins' input; apsp says so.
    let f = dir.join("m.npy");
    std::fs::write(&f, &good).unwrap();
    let e = try_run(&apsp_file(&f, "[0]"), &[]).unwrap_err().to_string();
    assert!(
        e.contains("a .npy matrix is the input of the dense plugins"),
        "{e}"
    );
    // Negative weights: dense-dijkstra refuses them, Floyd-Warshall takes them.
    std::fs::write(&f, npy_bytes("<i4", false, "(2, 2)", &i4(&[0, -1, 5, 0]))).unwrap();
    let cfg = |p: &str| {
        format!(
            "[run]\nplugin = \"{p}\"\n[input]\npath = {:?}\n",
            f.display().to_string()
        )
    };
    let e = try_run(&cfg("dense-dijkstra"), &["units.opencl=none"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("m.npy: the matrix has negative weights; dense-dijkstra needs weights >= 0"),
        "{e}"
    );
    let out = run(&cfg("fw-naive"), &["units.opencl=none"]);
    assert_eq!(
        std::fs::read_to_string(out.dir.join("summary.csv")).unwrap(),
        "source,reached,unreachable,sum,max,mean\n0,2,0,-1,0,-1\n1,2,0,5,5,5\n"
    );
}

/// Every config in `configs/` passes `tuccompi check` (APSP ones with Dijkstra and the work
/// list, so that no hierarchy is built for the check), and the dense ones run on a `.npy`
/// matrix as their comments say.
#[test]
fn every_config_passes_check_and_the_dense_ones_run_on_a_npy_matrix() {
    let configs = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("configs");
    let dir = tmpdir("configs");
    let m = dir.join("m.npy");
    let data: Vec<u8> = [0f64, 2.5, f64::INFINITY, 1.25, 0.0, 0.5, 1.0, f64::NAN, 0.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    std::fs::write(&m, npy_bytes("<f8", false, "(3, 3)", &data)).unwrap();
    let mut seen = Vec::new();
    for e in std::fs::read_dir(&configs).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Beside the configs: the point files some of them read.
        if !name.ends_with(".toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Configs on the real data name it relative to the repository root, where the README
        // runs them: checked there (check writes nothing), when the data is present.
        let at_root = text.contains("\"../shared/data/");
        if at_root {
            let file = text.split("\"../shared/data/").nth(1).unwrap();
            let file = file.split('"').next().unwrap();
            if crate::util::data(file).is_none() {
                continue;
            }
        }
        // The examples' plugins (collatz, options, knn, mandel) are their own binaries' (tests/example.rs
        // runs them).
        if ["collatz", "options", "knn", "mandel"]
            .iter()
            .any(|p| text.contains(&format!("plugin = \"{p}\"")))
        {
            continue;
        }
        // GPU-only configs check on PoCL (a CPU device) where no GPU is.
        if text.contains("cpu_workers = 0") && !opencl() {
            eprintln!("NOT RUN: check {name}: it runs on OpenCL devices only");
            continue;
        }
        let mut args = vec!["check".to_string(), path.display().to_string()];
        args.extend(["--set".into(), "units.device_type=\"all\"".into()]);
        if text.contains("plugin = \"apsp\"") {
            for s in [
                "apsp.cpu_algorithm=\"dijkstra\"",
                "apsp.gpu_algorithm=\"worklist\"",
            ] {
                args.extend(["--set".into(), s.into()]);
            }
        }
        let cwd = if at_root {
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        } else {
            dir.as_path()
        };
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tuccompi"))
            .current_dir(cwd)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "check {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        seen.push(name.clone());
        if let Some(plugin) = DENSE
            .iter()
            .find(|p| text.contains(&format!("plugin = \"{p}\"")))
        {
            let od = dir.join(format!("out-{name}"));
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_tuccompi"))
                .current_dir(&dir)
                .env("XDG_CACHE_HOME", dir.join("cache"))
                .args(["-q", "run", &path.display().to_string()])
                .args([
                    "--set",
                    &format!("input.path={:?}", m.display().to_string()),
                ])
                .args([
                    "--set",
                    "input.weight_scale=4",
                    "--set",
                    "units.opencl=\"none\"",
                ])
                .args(["--set", &format!("{plugin}.sources=\"all\"")])
                .args([
                    "--set",
                    &format!("output.dir={:?}", od.display().to_string()),
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "run {name} on m.npy: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // 0 -> 1: 10; 0 -> 2: 10 + 2 = 12; 1 -> 0: 5; 1 -> 2: 2; 2 -> 0: 4; 2 -> 1: 14.
            assert_eq!(
                std::fs::read_to_string(od.join("summary.csv")).unwrap(),
                "source,reached,unreachable,sum,max,mean\n0,3,0,22,12,11\n1,3,0,7,5,3.5\n2,3,0,18,14,9\n",
                "{name}"
            );
        }
    }
    seen.sort();
    for want in [
        "apsp.toml",
        "apsp-hetero.toml",
        "dense-dijkstra.toml",
        "fw-blocked.toml",
        "fw-naive.toml",
        "rkleene.toml",
    ] {
        assert!(seen.iter().any(|s| s == want), "{want} in {seen:?}");
    }
}

/// An id file's bytes as `numpy.save` writes a 1-D `<i8` array.
fn npy_ids(ids: &[i64]) -> Vec<u8> {
    let data: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    npy_bytes("<i8", false, &format!("({},)", ids.len()), &data)
}

#[test]
fn an_id_outside_the_graph_is_named_by_its_file_and_line() {
    // A generated graph of 16 vertices (ids 0..=15); the ids are checked only once it is read.
    let dir = tmpdir("id-range");
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        format!("{{ file = {:?} }}", p.display().to_string())
    };
    let cases = [
        (
            file("s.txt", b"# sources\n3\n\n5\n16\n"),
            "\"all\"",
            "s.txt:5: vertex id 16 (in apsp.sources) is out of range; this graph's ids are 0..=15",
        ),
        (
            file("s.csv", b"name,id\na,1\nb,99\n"),
            "\"all\"",
            "s.csv:3: vertex id 99 (in apsp.sources) is out of range",
        ),
        (
            file("s.npy", &npy_ids(&[1, 2, 3, 40, 5])),
            "\"all\"",
            "s.npy: element 3 (counting from 0): vertex id 40 (in apsp.sources) is out of range",
        ),
        (
            "[0, 1]".to_string(),
            &file("t.txt", b"2\n#\n1000\n"),
            "t.txt:3: vertex id 1000 (in [apsp] targets) is out of range",
        ),
        (
            "[0, 1]".to_string(),
            &file("t.npy", &npy_ids(&[7, 77])),
            "t.npy: element 1 (counting from 0): vertex id 77 (in [apsp] targets)",
        ),
        // Inline lists have no file: the key, as before.
        (
            "[0, 16]".to_string(),
            "\"all\"",
            "apsp.sources: vertex id 16 is out of range; this graph's ids are 0..=15",
        ),
    ];
    for (sources, targets, want) in &cases {
        let cfg = apsp_gen("road", 16, &format!("[apsp]\ntargets = {targets}"), sources);
        let e = try_run(&cfg, &["units.opencl=none"])
            .err()
            .unwrap_or_else(|| panic!("accepted: sources {sources}, targets {targets}"))
            .to_string();
        assert!(
            e.contains(want),
            "sources {sources}, targets {targets}: {e}"
        );
    }
    // The dense plugins resolve run.sources the same way.
    let cfg = format!(
        "[run]\nplugin = \"fw-naive\"\nsources = {}\n[input.generate]\nmodel = \"complete\"\nvertices = 8\n",
        file("d.txt", b"0\n8\n")
    );
    let e = try_run(&cfg, &["units.opencl=none"])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("d.txt:2: vertex id 8 (in fw-naive.sources) is out of range"),
        "{e}"
    );
    // A duplicate read from a file is named by its two lines.
    let cfg = apsp_gen("road", 16, "", &file("dup.txt", b"4\n# again\n4\n"));
    let e = try_run(&cfg, &["units.opencl=none"])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("dup.txt:3: vertex id 4 is listed a second time (first at line 1)"),
        "{e}"
    );
}
