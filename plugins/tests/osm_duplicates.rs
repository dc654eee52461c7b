//! OpenStreetMap objects held twice (issue 47, N5): the helsinki extract with a data block
//! repeated, and concatenated with itself, reads as the extract itself (same graph, same
//! distances) with the duplicates counted; a second copy whose content differs (a node moved,
//! a way's tag changed) is refused naming the object.

use crate::util::{data, run, tmpdir, try_run};
use std::io::Read;
use std::path::Path;
use tuccompi_plugins::graph::osm::{read_osm, OsmOptions};

/// One blob of a PBF file: its bytes whole (length prefix, header, body), its type
/// (`OSMHeader`, `OSMData`) and where its body starts within those bytes.
struct Blob {
    bytes: Vec<u8>,
    kind: String,
    body_at: usize,
}

fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let x = b[*at];
        *at += 1;
        v |= ((x & 0x7f) as u64) << shift;
        if x < 0x80 {
            break;
        }
    }
    v
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The top-level fields of a protobuf message: `(field, wire type, value or bytes)`.
fn fields(b: &[u8]) -> Vec<(u64, u64, u64, &[u8])> {
    let (mut at, mut out) = (0, Vec::new());
    while at < b.len() {
        let key = varint(b, &mut at);
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => out.push((field, wire, varint(b, &mut at), &b[0..0])),
            2 => {
                let len = varint(b, &mut at) as usize;
                out.push((field, wire, 0, &b[at..at + len]));
                at += len;
            }
            _ => panic!("wire type {wire} in a PBF header"),
        }
    }
    out
}

/// A PBF file cut into its blobs: `[4-byte BE length][BlobHeader][Blob]` each.
fn blobs(file: &[u8]) -> Vec<Blob> {
    let (mut at, mut out) = (0, Vec::new());
    while at < file.len() {
        let hlen = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
        let header = &file[at + 4..at + 4 + hlen];
        let mut kind = String::new();
        let mut size = 0;
        for (f, _, v, b) in fields(header) {
            match f {
                1 => kind = String::from_utf8(b.to_vec()).unwrap(),
                3 => size = v as usize,
                _ => {}
            }
        }
        let end = at + 4 + hlen + size;
        out.push(Blob {
            bytes: file[at..end].to_vec(),
            kind,
            body_at: 4 + hlen,
        });
        at = end;
    }
    out
}

/// The PrimitiveBlock a data blob holds, decompressed.
fn block_of(blob: &Blob) -> Vec<u8> {
    for (f, _, _, b) in fields(&blob.bytes[blob.body_at..]) {
        match f {
            1 => return b.to_vec(),
            3 => {
                let mut out = Vec::new();
                flate2::read::ZlibDecoder::new(b)
                    .read_to_end(&mut out)
                    .unwrap();
                return out;
            }
            _ => {}
        }
    }
    panic!("a blob with neither raw nor zlib data");
}

/// Where the string-table entry `s` of a PrimitiveBlock's bytes starts.
fn string_at(block: &[u8], s: &[u8]) -> usize {
    let (_, _, _, table) = fields(block).into_iter().find(|f| f.0 == 1).unwrap();
    let (_, _, _, entry) = fields(table)
        .into_iter()
        .find(|f| f.0 == 1 && f.3 == s)
        .unwrap();
    entry.as_ptr() as usize - block.as_ptr() as usize
}

/// A data blob holding `block` uncompressed.
fn data_blob(block: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    put_varint(&mut body, 1 << 3 | 2);
    put_varint(&mut body, block.len() as u64);
    body.extend_from_slice(block);
    put_varint(&mut body, 2 << 3);
    put_varint(&mut body, block.len() as u64);
    let mut header = Vec::new();
    put_varint(&mut header, 1 << 3 | 2);
    put_varint(&mut header, 7);
    header.extend_from_slice(b"OSMData");
    put_varint(&mut header, 3 << 3);
    put_varint(&mut header, body.len() as u64);
    let mut out = (header.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&body);
    out
}

/// An element's kind (0 a node, 1 a way, 2 a relation), id and tags.
type Element = (u8, i64, Vec<(String, String)>);

fn owned<'a>(tags: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    tags.map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The elements of data blob `blob` as `osmpbf` decodes them (after the file's `header`
/// blob), in order.
fn elements(header: &Blob, blob: &Blob) -> Vec<Element> {
    let mut file = header.bytes.clone();
    file.extend_from_slice(&blob.bytes);
    let mut out = Vec::new();
    osmpbf::ElementReader::new(&file[..])
        .for_each(|e| {
            out.push(match e {
                osmpbf::Element::Node(n) => (0, n.id(), owned(n.tags())),
                osmpbf::Element::DenseNode(n) => (0, n.id(), owned(n.tags())),
                osmpbf::Element::Way(w) => (1, w.id(), owned(w.tags())),
                osmpbf::Element::Relation(r) => (2, r.id(), owned(r.tags())),
            })
        })
        .unwrap();
    out
}

/// The objects of the whole file by kind: nodes, ways, relations.
fn counts(path: &Path) -> [u64; 3] {
    let mut c = [0u64; 3];
    osmpbf::ElementReader::from_path(path)
        .unwrap()
        .for_each(|e| match e {
            osmpbf::Element::Node(_) | osmpbf::Element::DenseNode(_) => c[0] += 1,
            osmpbf::Element::Way(_) => c[1] += 1,
            osmpbf::Element::Relation(_) => c[2] += 1,
        })
        .unwrap();
    c
}

/// The graph, places and stats `read_osm` gives, the duplicate counts apart.
fn graph(path: &Path) -> (String, [u64; 3]) {
    let (list, coords, stats) = read_osm(path, OsmOptions::default()).unwrap();
    let mut s = serde_json::to_value(&stats).unwrap();
    let twice = ["nodes_duplicate", "ways_duplicate", "relations_duplicate"].map(|k| {
        s.as_object_mut()
            .unwrap()
            .remove(k)
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    });
    (
        format!(
            "{} {:?} {:?} {:?} {s}",
            list.n, list.arcs, coords.points, coords.osm_ids
        ),
        twice,
    )
}

fn cfg(path: &Path) -> String {
    format!(
        "[run]\nplugin = \"apsp\"\nsources = 64\n[input]\npath = {:?}\n[output]\n\
         distances = true\n",
        path.display().to_string()
    )
}

/// A data blob repeated in place, and the whole file twice (its header blob once): the graph
/// (arcs, places, OSM ids, every skip count), the turn restrictions applied and the distances
/// are the extract's own, and each object held twice is counted once per extra copy, with a
/// warning.
#[test]
fn osm_duplicate_blob_counted_once() {
    let Some(h) = data("helsinki.osm.pbf") else {
        return;
    };
    let dir = tmpdir("osm-duplicates");
    let bytes = std::fs::read(&h).unwrap();
    let all = blobs(&bytes);
    assert_eq!(all[0].kind, "OSMHeader");
    let (want, none) = graph(&h);
    assert_eq!(none, [0, 0, 0]);
    let [nodes, ways, relations] = counts(&h);
    // The data blob holding the most ways, twice in a row.
    let k = (1..all.len())
        .max_by_key(|&i| {
            elements(&all[0], &all[i])
                .iter()
                .filter(|e| e.0 == 1)
                .count()
        })
        .unwrap();
    let in_k = elements(&all[0], &all[k]);
    let kinds = |kind: u8| in_k.iter().filter(|e| e.0 == kind).count() as u64;
    assert!(kinds(1) > 0, "helsinki has a block of ways");
    let mut repeated = Vec::new();
    for (i, b) in all.iter().enumerate() {
        repeated.extend_from_slice(&b.bytes);
        if i == k {
            repeated.extend_from_slice(&b.bytes);
        }
    }
    let mut twice = bytes.clone();
    twice.extend_from_slice(&bytes[all[0].bytes.len()..]);
    let reference = run(&cfg(&h), &["units.opencl=none"]);
    for (name, file, expect) in [
        (
            "repeated-block.osm.pbf",
            repeated,
            [kinds(0), kinds(1), kinds(2)],
        ),
        ("twice.osm.pbf", twice, [nodes, ways, relations]),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, &file).unwrap();
        let (got, counted) = graph(&p);
        assert!(got == want, "{name}: the graph differs from the extract's");
        assert_eq!(counted, expect, "{name}: nodes, ways, relations held twice");
        let out = run(&cfg(&p), &["units.opencl=none"]);
        let osm = &out.report["input"]["places"]["osm"];
        assert_eq!(osm["ways_duplicate"], expect[1], "{name}: {osm}");
        assert_eq!(
            osm["restrictions_applied"],
            reference.report["input"]["places"]["osm"]["restrictions_applied"],
            "{name}"
        );
        assert_eq!(out.report["input"]["n"], reference.report["input"]["n"]);
        assert_eq!(out.report["input"]["m"], reference.report["input"]["m"]);
        assert_eq!(out.summary(), reference.summary(), "{name}");
        assert_eq!(
            std::fs::read(out.dir.join("distances.npy")).unwrap(),
            std::fs::read(reference.dir.join("distances.npy")).unwrap(),
            "{name}: distances"
        );
    }
    // The warning names the file and the counts.
    let c = dir.join("c.toml");
    std::fs::write(&c, cfg(&dir.join("twice.osm.pbf"))).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tuccompi"))
        .current_dir(&dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .args(["check", "c.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let says = format!(
        "twice.osm.pbf: {} objects are in the file a second time with the same content ({nodes} \
         nodes, {ways} ways, {relations} relations",
        nodes + ways + relations
    );
    assert!(err.contains(&says), "{err}");
}

/// A second copy that differs: a data blob of nodes repeated with its latitudes moved (the
/// block's `lat_offset`), and one of ways with a tag value changed. Each is refused, naming the
/// file and the first object that differs.
#[test]
fn osm_conflicting_duplicate_is_refused_naming_it() {
    let Some(h) = data("helsinki.osm.pbf") else {
        return;
    };
    let dir = tmpdir("osm-conflicts");
    let bytes = std::fs::read(&h).unwrap();
    let all = blobs(&bytes);
    let first_with = |kind: u8| {
        (1..all.len())
            .find(|&i| elements(&all[0], &all[i]).iter().any(|e| e.0 == kind))
            .unwrap()
    };
    // Nodes: PrimitiveBlock field 19 (lat_offset, nanodegrees) appended: the last value wins.
    let k = first_with(0);
    let mut moved = block_of(&all[k]);
    put_varint(&mut moved, 19 << 3);
    put_varint(&mut moved, 1000);
    let node = elements(&all[0], &all[k])[0].1;
    // Ways and relations: the string table's `residential` spelled otherwise, in a block of
    // ways; the first object tagged with it is the first that differs.
    let residential = |e: &Element| {
        e.0 > 0
            && e.2
                .iter()
                .any(|t| t.0 == "residential" || t.1 == "residential")
    };
    let k = (1..all.len())
        .find(|&i| {
            elements(&all[0], &all[i])
                .iter()
                .any(|e| e.0 == 1 && residential(e))
        })
        .unwrap();
    let mut retagged = block_of(&all[k]);
    let at = string_at(&retagged, b"residential");
    retagged[at + 10] = b'X';
    let (kind, id) = elements(&all[0], &all[k])
        .into_iter()
        .find(|e| residential(e))
        .map(|e| (["node", "way", "relation"][e.0 as usize], e.1))
        .unwrap();
    for (name, block, says) in [
        ("moved.osm.pbf", moved, format!("node {node} is in")),
        ("retagged.osm.pbf", retagged, format!("{kind} {id} is in")),
    ] {
        let p = dir.join(name);
        let mut file = bytes.clone();
        file.extend_from_slice(&data_blob(&block));
        std::fs::write(&p, &file).unwrap();
        let e = read_osm(&p, OsmOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{name} was accepted"))
            .to_string();
        assert!(
            e.contains(&format!(
                "{name}: {says} the file twice with different content"
            )),
            "{name}: {e}"
        );
        assert!(e.contains("osmium merge"), "{e}");
        let e = try_run(&cfg(&p), &["units.opencl=none"])
            .err()
            .unwrap_or_else(|| panic!("{name} was run"))
            .to_string();
        assert!(e.contains(&says), "{name}: {e}");
    }
}
