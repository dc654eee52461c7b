//! Cache round trips, and every way a file can be wrong: each is refused with its reason, never
//! used.

use super::*;
use crate::graph::{generate, GenModel, GenSpec};

/// A generated 400-vertex road graph with weights 0..=hi (also the auto tests' graph).
pub(in crate::apsp::phast) fn graph(seed: u64, hi: u32) -> Csr {
    let spec = GenSpec {
        model: GenModel::Road,
        vertices: 400,
        degree: None,
        seed,
        min_weight: Some(0),
        max_weight: Some(hi),
    };
    Csr::from_edges(&generate(&spec).unwrap()).unwrap()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tuccompi-chcache-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d.join("sub").join("h.ch")
}

fn built<W: ChWeight>(g: &Csr) -> (Hierarchy<W>, Key) {
    let p = ChParams::default();
    (
        Hierarchy::<W>::build(g, &p, None).unwrap(),
        Key::of::<W>(g, &p),
    )
}

#[test]
fn round_trip_both_widths() {
    let g = graph(1, 50);
    let path = tmp("rt");
    let (h, key) = built::<u32>(&g);
    store(&path, &key, &h).unwrap();
    assert_eq!(load::<u32>(&path, &key).unwrap(), h);
    let (h64, key64) = built::<u64>(&g);
    assert_ne!(key64, key);
    store(&path, &key64, &h64).unwrap();
    assert_eq!(load::<u64>(&path, &key64).unwrap(), h64);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(names.len(), 1);
    assert!(
        key.file_name().ends_with("-w32-v3.ch"),
        "{}",
        key.file_name()
    );
    assert_eq!(load::<u32>(&tmp("none"), &key), Err(Miss::Absent));
}

#[test]
fn mismatched_graph_params_or_width_are_refused() {
    let (g, other) = (graph(1, 50), graph(2, 50));
    let path = tmp("mm");
    let (h, key) = built::<u32>(&g);
    store(&path, &key, &h).unwrap();
    let miss = load::<u32>(&path, &Key::of::<u32>(&other, &ChParams::default())).unwrap_err();
    assert!(
        matches!(&miss, Miss::Mismatched(s) if s.contains("another content")),
        "{miss}"
    );
    let p2 = ChParams {
        settle_limit: 7,
        ..ChParams::default()
    };
    let miss = load::<u32>(&path, &Key::of::<u32>(&g, &p2)).unwrap_err();
    assert!(
        matches!(&miss, Miss::Mismatched(s) if s.contains("witness")),
        "{miss}"
    );
    let miss = load::<u64>(&path, &Key::of::<u64>(&g, &ChParams::default())).unwrap_err();
    assert!(
        matches!(&miss, Miss::Mismatched(s) if s.contains("32-bit weights, this run needs 64-bit")),
        "{miss}"
    );
}

#[test]
fn truncated_flipped_stale_and_foreign_files_are_refused() {
    let g = graph(3, 50);
    let path = tmp("bad");
    let (h, key) = built::<u32>(&g);
    store(&path, &key, &h).unwrap();
    let good = std::fs::read(&path).unwrap();
    let with = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        load::<u32>(&path, &key).unwrap_err()
    };
    // Cut anywhere: in the payload, in the header, to nothing.
    for cut in [good.len() - 1, good.len() / 2, 40, 5, 0] {
        assert!(
            matches!(with(&good[..cut]), Miss::Truncated(_) | Miss::Stale(_)),
            "cut {cut}"
        );
    }
    assert!(matches!(with(&good[..good.len() - 1]), Miss::Truncated(_)));
    let mut longer = good.clone();
    longer.push(0);
    assert!(matches!(with(&longer), Miss::Truncated(_)));
    // One bit flipped anywhere in the payload.
    let payload_start = good.len() - encode(&h).len();
    for at in [payload_start, payload_start + 100, good.len() - 1] {
        let mut b = good.clone();
        b[at] ^= 0x10;
        assert_eq!(
            with(&b),
            Miss::Corrupt("payload checksum differs".into()),
            "byte {at}"
        );
    }
    // Another format version, another kind of file.
    let mut b = good.clone();
    b[MAGIC.len()] += 1;
    assert!(matches!(with(&b), Miss::Stale(s) if s.contains("format")));
    assert!(matches!(
        with(b"hello, world, this is not a hierarchy"),
        Miss::Stale(_)
    ));
}

#[test]
fn a_payload_of_the_wrong_shape_is_refused_even_with_a_valid_checksum() {
    let g = graph(4, 50);
    let path = tmp("shape");
    let (h, key) = built::<u32>(&g);
    let mut bad = h.clone();
    bad.down_tails[0] = bad.n as u32 + 5; // out of range
    store(&path, &key, &bad).unwrap();
    assert!(
        matches!(load::<u32>(&path, &key), Err(Miss::Corrupt(s)) if s.contains("lower position"))
    );
    let mut bad = h.clone();
    bad.order.swap(0, 1);
    bad.order[0] = bad.order[1]; // not a permutation
    store(&path, &key, &bad).unwrap();
    assert!(matches!(load::<u32>(&path, &key), Err(Miss::Corrupt(s)) if s.contains("permutation")));
    let mut bad = h.clone();
    let last = bad.levels.len() - 2;
    bad.levels.remove(last); // two levels merged: an arc inside a level
    store(&path, &key, &bad).unwrap();
    assert!(matches!(load::<u32>(&path, &key), Err(Miss::Corrupt(s)) if s.contains("level")));
}

#[test]
fn a_hierarchy_path_holding_another_file_or_a_link_is_refused_never_replaced() {
    use crate::apsp::phast::auto::{choose, CpuAlgorithm, Request};
    let g = graph(5, 50);
    let path = tmp("foreign");
    let dir = path.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let (h, key) = built::<u32>(&g);
    let precious = dir.join("precious");
    std::fs::write(&precious, "precious").unwrap();
    let link = dir.join("link.ch");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    for p in [&precious, &link] {
        let e = store(p, &key, &h).unwrap_err().to_string();
        assert!(e.contains("replaces only a hierarchy file"), "{e}");
        // Through the plugin's choice: refused before any build, naming the key.
        let req = Request {
            cpu: Some(CpuAlgorithm::Phast),
            gpu: None,
            sources: &[0, 1, 2],
            pending: 300,
            cpu_workers: 1,
            gpus: &|| tuccompi::plugin::DeviceCount::default(),
            cache_path: Some(p),
            store: true,
            targets: false,
            kept: None,
            pair_targets: None,
            restrict: None,
            sweep: Default::default(),
        };
        let e = choose(&g, false, &req).unwrap_err().to_string();
        assert!(
            e.contains("[apsp] hierarchy") && e.contains("remove"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // An empty file (made by `touch`) and a hierarchy of another format are the cache's.
    std::fs::write(&path, "").unwrap();
    store(&path, &key, &h).unwrap();
    assert_eq!(load::<u32>(&path, &key).unwrap(), h);
}

#[test]
fn a_killed_writers_temporary_is_swept_by_the_next_store() {
    let g = graph(6, 50);
    let path = tmp("sweep");
    let dir = path.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    // What a writer killed mid-write leaves: its temporary file, named by its (dead) pid.
    let name =
        tuccompi::owned::temp_name_of(&path.file_name().unwrap().to_string_lossy(), 99999999);
    std::fs::write(dir.join(&name), vec![7u8; 4096]).unwrap();
    let (h, key) = built::<u32>(&g);
    store(&path, &key, &h).unwrap();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["h.ch"], "left: {names:?}");
}
