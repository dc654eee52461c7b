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
    assert!(e.contains("rome.csv:") && e.contains("is not an integer"), "{e}");
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
    assert!(e.contains("--set input.no_arc=0: input.no_arc applies to .npy matrices"), "{e}");
    for (set, want) in [
        ("input.weight_scale=0", "input.weight_scale = 0: use a positive number"),
        ("input.columns=[\"a\"]", "name 3 columns"),
        ("input.columns=[\"a\", \"a\"]", "column \"a\" is named twice"),
    ] {
        let e = try_run(&apsp_file(&g, "[1]"), &[set]).unwrap_err().to_string();
        assert!(e.contains(want), "{set}: {e}");
    }
    let e = try_run(&apsp_gen("road", 100, "", "[1]"), &["input.weight_scale=10"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("describes an input file, but there is no input.path"), "{e}");
}
