//! The binary part of the seed corpus, generated: gzip streams, `.npy` arrays, `.osm.pbf`
//! extracts, journals and cache files are easier to make right in code than by hand. The text
//! seeds are plain files under `corpus/`. `TUCCOMPI_FUZZ_WRITE_SEEDS=1 cargo test -p
//! tuccompi-fuzz generated_seeds` writes these into `corpus/` (the test otherwise checks that
//! the committed files are these).

use crate::encode::{self, gzip, npy, pbf};
use crate::targets::{self, small_graph};
use tuccompi_plugins::apsp::phast::cache as ch_cache;
use tuccompi_plugins::apsp::phast::ch::{ChParams, ChWeight, Hierarchy};

/// A generated seed: its target, its file name, its bytes.
pub type Seed = (&'static str, &'static str, Vec<u8>);

fn le<T: Copy, const N: usize>(values: &[T], bytes: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| bytes(v)).collect()
}

/// A small road network: a 3 x 3 grid of nodes around Valladolid, residential streets, one
/// one-way primary with a speed limit in mph, a footway, a cycleway, a way that references a
/// missing node, and a no-left-turn restriction.
fn osm_block() -> Vec<u8> {
    let nodes: Vec<(i64, f64, f64)> = (0..9)
        .map(|i| {
            (
                100 + i as i64,
                -4.72 + 0.001 * (i % 3) as f64,
                41.65 + 0.001 * (i / 3) as f64,
            )
        })
        .collect();
    let ways: Vec<pbf::Way<'_>> = vec![
        (1, &[("highway", "residential")], &[100, 101, 102]),
        (
            2,
            &[("highway", "residential"), ("oneway", "yes")],
            &[103, 104, 105],
        ),
        (
            3,
            &[
                ("highway", "primary"),
                ("maxspeed", "30 mph"),
                ("oneway", "-1"),
            ],
            &[106, 107, 108],
        ),
        (4, &[("highway", "residential")], &[100, 103, 106]),
        (5, &[("highway", "footway")], &[101, 104, 107]),
        (
            6,
            &[("highway", "cycleway"), ("bicycle", "designated")],
            &[102, 105, 108],
        ),
        (
            7,
            &[("highway", "service"), ("access", "private")],
            &[100, 104],
        ),
        (8, &[("highway", "tertiary")], &[108, 999]),
    ];
    let relations: Vec<pbf::Relation<'_>> = vec![(
        50,
        &[("type", "restriction"), ("restriction", "no_left_turn")],
        &[("from", 1, 1), ("via", 0, 101), ("to", 1, 5)],
    )];
    pbf::block(&nodes, &ways, &relations)
}

fn hierarchy_seeds<W: ChWeight>(width: u8, out: &mut Vec<Seed>, names: [&'static str; 3]) {
    let g = small_graph();
    let params = ChParams::default();
    let key = ch_cache::Key::of::<W>(&g, &params);
    let h = Hierarchy::<W>::build(&g, &params, None).expect("a hierarchy of a small graph");
    let full = ch_cache::to_bytes(&key, &h);
    out.push(("hierarchy_cache", names[0], [&[width][..], &full].concat()));
    out.push((
        "hierarchy_cache",
        names[1],
        [&[width | 2][..], &full[80..]].concat(),
    ));
    out.push((
        "hierarchy_cache",
        names[2],
        [&[width | 4][..], &full].concat(),
    ));
}

/// Every generated seed.
pub fn all() -> Vec<Seed> {
    let mut s: Vec<Seed> = Vec::new();

    // gzip streams: first byte picks .gr.gz, .mtx.gz, .wel.gz, .csv.gz, .co.gz.
    let gr = b"p sp 3 3\na 1 2 5\na 2 3 1\na 3 1 0\n";
    s.push(("gz", "gr.gz", [&[0u8][..], &gzip(gr)].concat()));
    s.push((
        "gz",
        "mtx.gz",
        [
            &[1u8][..],
            &gzip(b"%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 4\n3 2 1\n"),
        ]
        .concat(),
    ));
    s.push((
        "gz",
        "wel.gz",
        [&[2u8][..], &gzip(b"0 1 3\n1 2 4\n")].concat(),
    ));
    s.push((
        "gz",
        "csv.gz",
        [&[3u8][..], &gzip(b"source,target,weight\n0,1,2\n1,0,3\n")].concat(),
    ));
    s.push((
        "gz",
        "co.gz",
        [
            &[4u8][..],
            &gzip(b"p aux sp co 4\nv 1 0 0\nv 2 1 0\nv 3 0 1\nv 4 1 1\n"),
        ]
        .concat(),
    ));
    let two = [gzip(b"p sp 2 2\na 1 2 1\n"), gzip(b"a 2 1 1\n")].concat();
    s.push(("gz", "two-members.gz", [&[0u8][..], &two].concat()));
    let cut = gzip(&gr.repeat(20));
    s.push((
        "gz",
        "cut-short.gz",
        [&[0u8][..], &cut[..cut.len() / 2]].concat(),
    ));
    s.push(("gz", "empty.gz", [&[2u8][..], &gzip(b"")].concat()));

    // Id and point files as .npy.
    let ids = le(&[1i64, 5, 9, 2], i64::to_le_bytes);
    s.push(("ids_npy", "i8-ids.npy", npy("<i8", false, &[4], &ids)));
    s.push((
        "ids_npy",
        "u1-ids.npy",
        npy("|u1", false, &[3], &[0, 7, 255]),
    ));
    s.push((
        "ids_npy",
        "u4-be-ids.npy",
        npy(">u4", false, &[2], &le(&[3u32, 4], u32::to_be_bytes)),
    ));
    s.push((
        "ids_npy",
        "negative.npy",
        npy("<i4", false, &[2], &le(&[3i32, -1], i32::to_le_bytes)),
    ));
    s.push((
        "ids_npy",
        "repeated.npy",
        npy("<i8", false, &[3], &le(&[3i64, 4, 3], i64::to_le_bytes)),
    ));
    let pts = le(&[-4.72f64, 41.65, -4.71, 41.66], f64::to_le_bytes);
    s.push(("ids_npy", "f8-points.npy", npy("<f8", false, &[2, 2], &pts)));
    s.push((
        "ids_npy",
        "f8-points-fortran.npy",
        npy("<f8", true, &[2, 2], &pts),
    ));
    s.push((
        "ids_npy",
        "f4-points.npy",
        npy("<f4", false, &[1, 2], &le(&[1.5f32, 2.5], f32::to_le_bytes)),
    ));
    s.push((
        "ids_npy",
        "nan-point.npy",
        npy(
            "<f8",
            false,
            &[1, 2],
            &le(&[f64::NAN, 0.0], f64::to_le_bytes),
        ),
    ));
    s.push(("ids_npy", "empty.npy", npy("<i8", false, &[0], &[])));
    s.push(("ids_npy", "short.npy", npy("<i8", false, &[5], &ids)));
    s.push(("ids_npy", "2d-ints.npy", npy("<i8", false, &[2, 2], &ids)));

    // Arrays for tuccompi::npy::read.
    s.push(("npy", "i8.npy", npy("<i8", false, &[4], &ids)));
    s.push((
        "npy",
        "f4-2d.npy",
        npy(
            "<f4",
            false,
            &[2, 2],
            &le(&[1f32, 2., 3., 4.], f32::to_le_bytes),
        ),
    ));
    s.push((
        "npy",
        "u2-be.npy",
        npy(">u2", false, &[3], &le(&[1u16, 2, 3], u16::to_be_bytes)),
    ));
    s.push(("npy", "u1-scalar.npy", npy("|u1", false, &[], &[42])));
    s.push(("npy", "f8-empty-rows.npy", npy("<f8", false, &[0, 3], &[])));
    s.push(("npy", "f8-3d.npy", npy("<f8", false, &[2, 1, 2], &pts)));
    s.push((
        "npy",
        "i4-fortran.npy",
        npy(
            "<i4",
            true,
            &[2, 2],
            &le(&[1i32, 2, 3, 4], i32::to_le_bytes),
        ),
    ));
    s.push(("npy", "i2-long.npy", npy("<i2", false, &[1], &[1, 0, 2, 0])));
    s.push(("npy", "c16.npy", npy("<c16", false, &[1], &[0; 16])));

    // Dense matrices.
    let m3 = le(&[0i32, 4, 0, 2, 0, 7, 0, 1, 0], i32::to_le_bytes);
    s.push(("npy_matrix", "i4-3x3.npy", npy("<i4", false, &[3, 3], &m3)));
    let inf = f64::INFINITY;
    let mf = le(
        &[0.0f64, 1.5, inf, 2.0, 0.0, f64::NAN, -1.0, 3.0, 0.0],
        f64::to_le_bytes,
    );
    s.push(("npy_matrix", "f8-3x3.npy", npy("<f8", false, &[3, 3], &mf)));
    s.push((
        "npy_matrix",
        "f4-fortran.npy",
        npy(
            "<f4",
            true,
            &[2, 2],
            &le(&[0f32, 3., -2., 0.], f32::to_le_bytes),
        ),
    ));
    s.push((
        "npy_matrix",
        "u1-2x2.npy",
        npy("|u1", false, &[2, 2], &[0, 255, 1, 0]),
    ));
    s.push((
        "npy_matrix",
        "i2-be.npy",
        npy(
            ">i2",
            false,
            &[2, 2],
            &le(&[0i16, -1, 5, 0], i16::to_be_bytes),
        ),
    ));
    s.push((
        "npy_matrix",
        "u8-huge.npy",
        npy(
            "<u8",
            false,
            &[2, 2],
            &le(&[0u64, u64::MAX, 1 << 62, 0], u64::to_le_bytes),
        ),
    ));
    s.push((
        "npy_matrix",
        "i8-1x1.npy",
        npy("<i8", false, &[1, 1], &le(&[-3i64], i64::to_le_bytes)),
    ));
    s.push(("npy_matrix", "i8-0x0.npy", npy("<i8", false, &[0, 0], &[])));
    s.push((
        "npy_matrix",
        "not-square.npy",
        npy("<i4", false, &[2, 3], &m3[..24]),
    ));

    // OpenStreetMap: whole files (first byte 0, profile and weight bits), and a block to be
    // wrapped (first byte 1 or 2).
    let block = osm_block();
    let file = pbf::file(std::slice::from_ref(&block), true);
    s.push(("osm", "car.osm.pbf", [&[0u8][..], &file].concat()));
    s.push((
        "osm",
        "bike-time-snap.osm.pbf",
        [&[0b11_0100u8][..], &file].concat(),
    ));
    s.push(("osm", "foot.osm.pbf", [&[0b1000u8][..], &file].concat()));
    s.push((
        "osm",
        "raw-blobs.osm.pbf",
        [&[0u8][..], &pbf::file(std::slice::from_ref(&block), false)].concat(),
    ));
    s.push((
        "osm",
        "repeated-block.osm.pbf",
        [
            &[0u8][..],
            &pbf::file(&[block.clone(), block.clone()], true),
        ]
        .concat(),
    ));
    let history = pbf::blob(
        "OSMHeader",
        &pbf::header_block(&["OsmSchema-V0.6", "HistoricalInformation"]),
        true,
    );
    s.push(("osm", "history.osm.pbf", [&[0u8][..], &history].concat()));
    s.push(("osm", "block-zlib", [&[1u8][..], &block].concat()));
    s.push((
        "osm",
        "block-raw-snap",
        [&[0b10_0010u8][..], &block].concat(),
    ));

    // Journals: first byte sealed bit and words, second the tasks less one.
    let e = |a, b, rec: &[u64]| encode::journal_entry(a, b, rec, 0);
    let valid = [e(0, 2, &[1, 2, 3, 4]), e(2, 3, &[5, 6]), e(5, 8, &[0; 6])].concat();
    s.push((
        "journal",
        "sealed-2-words",
        [&[0b101u8, 9][..], &valid].concat(),
    ));
    let mut v1 = valid.clone();
    crate::encode::seal_journal(&mut v1, 10, 2, |_| 0);
    s.push(("journal", "raw-2-words", [&[0b100u8, 9][..], &v1].concat()));
    let torn = [e(0, 1, &[7]), e(1, 4, &[8, 9, 10])].concat();
    s.push((
        "journal",
        "sealed-torn",
        [&[0b011u8, 3][..], &torn[..torn.len() - 5]].concat(),
    ));
    let changed = [e(0, 1, &[]), encode::journal_entry(1, 2, &[], 1)].concat();
    s.push((
        "journal",
        "sealed-changed-rows",
        [&[0b001u8, 1][..], &changed].concat(),
    ));
    let mut old = valid.clone();
    old[..8].copy_from_slice(b"TUCJRNL1");
    s.push(("journal", "version-1", [&[0b100u8, 9][..], &old].concat()));

    // The graph cache: a stored file as it is (mode 0), after its head (mode 1), and as
    // fields and payload (mode 2).
    let dir = tempfile::tempdir().expect("a temporary folder");
    let input = dir.path().join("input.gr");
    std::fs::write(&input, b"p sp 6 0\n").expect("writing");
    let id = tuccompi_plugins::graph::cache::Identity::of(&input).expect("an identity");
    let at = dir.path().join("g.csr");
    tuccompi_plugins::graph::cache::store(&at, &id, &small_graph()).expect("a stored cache");
    let full = std::fs::read(&at).expect("reading");
    let head = 24 + u64::from_le_bytes(full[16..24].try_into().expect("8 bytes")) as usize;
    // Another input's identity (fixed bytes: the real one names a temporary folder).
    let other = [&full[..16], &32u64.to_le_bytes(), &[7u8; 32], &full[head..]].concat();
    s.push((
        "graph_cache",
        "another-input.csr",
        [&[0u8][..], &other].concat(),
    ));
    s.push((
        "graph_cache",
        "after-head.csr",
        [&[1u8][..], &full[head..]].concat(),
    ));
    s.push((
        "graph_cache",
        "fields-payload.csr",
        [&[2u8][..], &full[head..head + 24], &full[head + 40..]].concat(),
    ));

    // The hierarchy cache, 32- and 64-bit.
    hierarchy_seeds::<u32>(0, &mut s, ["w32.ch", "w32-payload.ch", "w32-file.ch"]);
    hierarchy_seeds::<u64>(1, &mut s, ["w64.ch", "w64-payload.ch", "w64-file.ch"]);

    debug_assert!(s.iter().all(|(t, ..)| targets::target(t).is_some()));
    s
}
