//! Encoders the targets and the seed generator share: gzip, `.npy` headers, OpenStreetMap PBF
//! blobs (protobuf by hand: the format's few messages), and the seals that give a mutated
//! journal or cache valid checksums so that mutations reach the checks behind them.

use std::io::Write;

/// `data` gzip-compressed.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    w.write_all(data).expect("writing to memory");
    w.finish().expect("writing to memory")
}

/// `data` zlib-compressed (a PBF blob's `zlib_data`).
pub fn zlib(data: &[u8]) -> Vec<u8> {
    let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    w.write_all(data).expect("writing to memory");
    w.finish().expect("writing to memory")
}

/// A `.npy` file (format 1.0) of `descr` (`<i8`), `shape` and the raw element bytes `data`.
pub fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let fortran = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
    // The magic, version and length take 10 bytes; the header ends in a newline at a multiple
    // of 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Protocol buffers, as far as the OpenStreetMap PBF format needs them.
pub mod pbf {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
        varint(out, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A length-delimited field (bytes, a string, a message, a packed array).
    pub fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
        key(out, field, 2);
        varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }

    /// A varint field.
    pub fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
        key(out, field, 0);
        varint(out, v);
    }

    fn zigzag(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    /// A packed array of zigzag varints (`sint64`).
    pub fn packed_sint(out: &mut Vec<u8>, field: u32, values: &[i64]) {
        let mut body = Vec::new();
        values.iter().for_each(|&v| varint(&mut body, zigzag(v)));
        bytes(out, field, &body);
    }

    /// A packed array of varints (`uint32`, `int32` of non-negative values, enums).
    pub fn packed_uint(out: &mut Vec<u8>, field: u32, values: &[u64]) {
        let mut body = Vec::new();
        values.iter().for_each(|&v| varint(&mut body, v));
        bytes(out, field, &body);
    }

    /// Deltas of `values` (the PBF format delta-codes ids, coordinates and references).
    pub fn deltas(values: &[i64]) -> Vec<i64> {
        let mut last = 0i64;
        values
            .iter()
            .map(|&v| {
                let d = v.wrapping_sub(last);
                last = v;
                d
            })
            .collect()
    }

    /// One blob of the file: the length of its header (4 bytes, big-endian), the `BlobHeader`
    /// of `kind` ("OSMHeader", "OSMData"), then the `Blob` holding `message`, compressed with
    /// zlib or stored raw.
    pub fn blob(kind: &str, message: &[u8], compress: bool) -> Vec<u8> {
        let mut blob = Vec::new();
        if compress {
            uint(&mut blob, 2, message.len() as u64);
            bytes(&mut blob, 3, &super::zlib(message));
        } else {
            bytes(&mut blob, 1, message);
        }
        let mut header = Vec::new();
        bytes(&mut header, 1, kind.as_bytes());
        uint(&mut header, 3, blob.len() as u64);
        let mut out = (header.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&header);
        out.extend_from_slice(&blob);
        out
    }

    /// A `HeaderBlock` requiring `features`.
    pub fn header_block(features: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in features {
            bytes(&mut out, 4, f.as_bytes());
        }
        bytes(&mut out, 16, b"tuccompi-fuzz");
        out
    }

    /// A whole `.osm.pbf`: a header blob requiring the schema and dense nodes, then one data
    /// blob per primitive block.
    pub fn file(blocks: &[Vec<u8>], compress: bool) -> Vec<u8> {
        let mut out = blob(
            "OSMHeader",
            &header_block(&["OsmSchema-V0.6", "DenseNodes"]),
            compress,
        );
        for b in blocks {
            out.extend_from_slice(&blob("OSMData", b, compress));
        }
        out
    }

    /// A way: id, tags, node references.
    pub type Way<'a> = (i64, &'a [(&'a str, &'a str)], &'a [i64]);
    /// A relation: id, tags, members (role, type: 0 node 1 way 2 relation, id).
    pub type Relation<'a> = (i64, &'a [(&'a str, &'a str)], &'a [(&'a str, u64, i64)]);

    /// A `PrimitiveBlock` of dense nodes (`(id, lon, lat)`), ways and relations, each kind in
    /// a group of its own; granularity 100 nanodegrees.
    pub fn block(
        nodes: &[(i64, f64, f64)],
        ways: &[Way<'_>],
        relations: &[Relation<'_>],
    ) -> Vec<u8> {
        let mut strings: Vec<&str> = vec![""];
        let mut sid = |s| match strings.iter().position(|&x| x == s) {
            Some(i) => i as u64,
            None => {
                strings.push(s);
                strings.len() as u64 - 1
            }
        };
        let mut groups = Vec::new();
        if !nodes.is_empty() {
            let ids: Vec<i64> = nodes.iter().map(|n| n.0).collect();
            let lat: Vec<i64> = nodes.iter().map(|n| (n.2 * 1e7).round() as i64).collect();
            let lon: Vec<i64> = nodes.iter().map(|n| (n.1 * 1e7).round() as i64).collect();
            let mut dense = Vec::new();
            packed_sint(&mut dense, 1, &deltas(&ids));
            packed_sint(&mut dense, 8, &deltas(&lat));
            packed_sint(&mut dense, 9, &deltas(&lon));
            let mut g = Vec::new();
            bytes(&mut g, 2, &dense);
            groups.push(g);
        }
        if !ways.is_empty() {
            let mut g = Vec::new();
            for (id, tags, refs) in ways {
                let mut w = Vec::new();
                uint(&mut w, 1, *id as u64);
                let keys: Vec<u64> = tags.iter().map(|t| sid(t.0)).collect();
                let vals: Vec<u64> = tags.iter().map(|t| sid(t.1)).collect();
                packed_uint(&mut w, 2, &keys);
                packed_uint(&mut w, 3, &vals);
                packed_sint(&mut w, 8, &deltas(refs));
                bytes(&mut g, 3, &w);
            }
            groups.push(g);
        }
        if !relations.is_empty() {
            let mut g = Vec::new();
            for (id, tags, members) in relations {
                let mut r = Vec::new();
                uint(&mut r, 1, *id as u64);
                let keys: Vec<u64> = tags.iter().map(|t| sid(t.0)).collect();
                let vals: Vec<u64> = tags.iter().map(|t| sid(t.1)).collect();
                packed_uint(&mut r, 2, &keys);
                packed_uint(&mut r, 3, &vals);
                let roles: Vec<u64> = members.iter().map(|m| sid(m.0)).collect();
                let ids: Vec<i64> = members.iter().map(|m| m.2).collect();
                let types: Vec<u64> = members.iter().map(|m| m.1).collect();
                packed_uint(&mut r, 8, &roles);
                packed_sint(&mut r, 9, &deltas(&ids));
                packed_uint(&mut r, 10, &types);
                bytes(&mut g, 4, &r);
            }
            groups.push(g);
        }
        let mut table = Vec::new();
        for s in &strings {
            bytes(&mut table, 1, s.as_bytes());
        }
        let mut out = Vec::new();
        bytes(&mut out, 1, &table);
        for g in &groups {
            bytes(&mut out, 2, g);
        }
        out
    }
}

/// The journal's entry magic (version 2), as its module documents the format.
const JOURNAL_MAGIC: &[u8; 8] = b"TUCJRNL2";

/// Give the entries of `journal` (a run of `words`-word records) valid checksums, as the
/// journal documents them: walk the entries as a reader does (`MAGIC, start, end`, records,
/// the rows' checksum, the entry's checksum); each entry's checksum is recomputed, and its
/// rows' checksum too when the word there is even (`rows` hashes a task range's rows), so that
/// an odd word stands for rows changed since. Stops where a reader would; the rest is kept.
pub fn seal_journal(
    journal: &mut [u8],
    tasks: usize,
    words: usize,
    rows: impl Fn(std::ops::Range<usize>) -> u64,
) {
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let mut at = 0;
    while at + 24 <= journal.len() {
        let (start, end) = (word(journal, at + 8), word(journal, at + 16));
        if &journal[at..at + 8] != JOURNAL_MAGIC || start >= end || end > tasks as u64 {
            return;
        }
        let n = (end - start) as usize * words;
        let len = 24 + (n + 2) * 8;
        if at + len > journal.len() {
            return;
        }
        let rows_at = at + 24 + n * 8;
        if word(journal, rows_at) % 2 == 0 {
            let h = rows(start as usize..end as usize);
            journal[rows_at..rows_at + 8].copy_from_slice(&h.to_le_bytes());
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&journal[at..rows_at + 8]);
        journal[rows_at + 8..rows_at + 16].copy_from_slice(&sum.to_le_bytes());
        at += len;
    }
}

/// A journal entry as the journal writes one: `MAGIC, start, end`, the records, `rows` (the
/// rows' checksum: 0 to let [`seal_journal`] compute it), and a checksum left 0 for
/// [`seal_journal`].
pub fn journal_entry(start: u64, end: u64, records: &[u64], rows: u64) -> Vec<u8> {
    let mut out = JOURNAL_MAGIC.to_vec();
    for w in [start, end].iter().chain(records).chain([rows, 0].iter()) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn npy_headers_are_aligned_and_read_by_the_framework() {
        let data: Vec<u8> = [1i64, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b = npy("<i8", false, &[3], &data);
        assert_eq!((b.len() - data.len()) % 64, 0);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        std::fs::write(&p, &b).unwrap();
        let a = tuccompi::npy::read::<i64>(&p, Some(1)).unwrap();
        assert_eq!(a.data, vec![1, 2, 3]);
    }
}
