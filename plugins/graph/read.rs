//! Graph file readers: DIMACS `.gr`, Matrix Market `.mtx`, whitespace edge lists
//! (`.el`, `.wel`, `.txt`), edge lists with a header (`.csv`, `.tsv`: [`super::delimited`]), each
//! optionally gzip-compressed (`.gz`).
//!
//! Every complaint names `file:line` and says what to change. Tokens are quoted with invisible
//! characters escaped (`'3\u{a0}'`), a leading UTF-8 byte-order mark is skipped, and CRLF line
//! ends are accepted.

use super::{EdgeList, Origin};
use crate::common::input::InputOptions;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use tuccompi::{Error, Result};

/// Read a graph file; the format follows from the extension (a trailing `.gz` is decompressed).
pub fn read_graph(path: &Path) -> Result<EdgeList> {
    read_graph_with(path, &InputOptions::default())
}

/// [`read_graph`] with the `[input]` options that say how a file is read (`columns` and
/// `weight_scale` for `.csv`/`.tsv`; the caller has checked that they apply to the format).
pub fn read_graph_with(path: &Path, options: &InputOptions) -> Result<EdgeList> {
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (stem, gz) = match name.strip_suffix(".gz") {
        Some(s) => (s.to_string(), true),
        None => (name.clone(), false),
    };
    if stem.ends_with(".pbf") {
        if gz {
            return Err(Error::Input(format!(
                "{}: a gzip-compressed OpenStreetMap file; PBF is compressed inside already: \
                 gunzip it and name the .osm.pbf",
                path.display()
            )));
        }
        // With the default profile; the plugins read [input.osm] through `osm::read_osm`.
        return super::osm::read_osm(path, Default::default()).map(|(list, _, _)| list);
    }
    // Only a regular file: a directory, a named pipe or a device is refused before reading.
    let file = tuccompi::input::open(path, "input.path", "a graph file", None)?;
    let raw: Box<dyn Read> = if gz {
        // Inflated by a thread of its own while the text before is parsed.
        Box::new(ReadAhead::new(flate2::read::MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    };
    let reader = BufReader::with_capacity(1 << 20, raw);
    let ext = stem.rsplit('.').next().unwrap_or("");
    let mut p = Parser::new(path, gz);
    let list = match ext {
        "gr" => p.dimacs(reader)?,
        "mtx" => p.matrix_market(reader)?,
        "el" => p.edge_list(reader, Some(2))?,
        "wel" => p.edge_list(reader, Some(3))?,
        "txt" => p.edge_list(reader, None)?,
        "csv" => super::delimited::read(&mut p, reader, b',', options)?,
        "tsv" => super::delimited::read(&mut p, reader, b'\t', options)?,
        _ => {
            return Err(Error::Input(format!(
                "{}: unknown graph format '.{ext}'; use .gr (DIMACS), .mtx (Matrix Market), \
                 .el/.wel/.txt (edge list), .csv/.tsv (edge list with a header), optionally \
                 ending in .gz, or .osm.pbf (OpenStreetMap)",
                path.display()
            )))
        }
    };
    if list.n == 0 {
        return Err(Error::Input(format!(
            "{}: the graph has no vertices",
            path.display()
        )));
    }
    Ok(list)
}

/// A reader whose source is read by a thread of its own, at most [`AHEAD`] blocks of
/// [`AHEAD_BLOCK`] bytes ahead of its consumer: a compressed input is inflated while the text
/// before is parsed (osm-moscow: 16.6 MB of text from 4.8 MB, about half of the read's time
/// inflating). The source's errors reach the consumer in order; the thread stops when the
/// source ends or fails, or when the consumer is dropped (a parse error stops the read).
pub(super) struct ReadAhead {
    blocks: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    block: Vec<u8>,
    at: usize,
    ended: bool,
}

/// Bytes of each block [`ReadAhead`] reads.
const AHEAD_BLOCK: usize = 1 << 20;
/// Blocks [`ReadAhead`] holds ahead of its consumer.
const AHEAD: usize = 4;

impl ReadAhead {
    pub(super) fn new<R: Read + Send + 'static>(mut source: R) -> ReadAhead {
        let (tx, blocks) = std::sync::mpsc::sync_channel(AHEAD);
        let read = move || loop {
            let mut block = vec![0u8; AHEAD_BLOCK];
            let mut filled = 0;
            while filled < AHEAD_BLOCK {
                match source.read(&mut block[filled..]) {
                    Ok(0) => break,
                    Ok(k) => filled += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        // The bytes before the error first.
                        block.truncate(filled);
                        if filled > 0 && tx.send(Ok(block)).is_err() {
                            return;
                        }
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            block.truncate(filled);
            // The end is an empty block: a thread that stopped without one failed.
            let end = filled < AHEAD_BLOCK;
            if filled > 0 && tx.send(Ok(block)).is_err() {
                return;
            }
            if end {
                let _ = tx.send(Ok(Vec::new()));
                return;
            }
        };
        let blocks = match std::thread::Builder::new()
            .name("input read-ahead".into())
            .spawn(read)
        {
            Ok(_) => blocks,
            Err(e) => {
                let (tx, blocks) = std::sync::mpsc::sync_channel(1);
                let _ = tx.send(Err(e));
                blocks
            }
        };
        ReadAhead {
            blocks,
            block: Vec::new(),
            at: 0,
            ended: false,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.block.len() {
            if self.ended {
                return Ok(0);
            }
            match self.blocks.recv() {
                Ok(Ok(block)) => {
                    self.ended = block.is_empty();
                    self.block = block;
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(_) => {
                    self.ended = true;
                    return Err(std::io::Error::other(
                        "the thread reading the input stopped before its end",
                    ));
                }
            }
        }
        let k = out.len().min(self.block.len() - self.at);
        out[..k].copy_from_slice(&self.block[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

/// Arcs reserved up front from a header's count, at most: a header may declare far more arcs
/// than its file holds (a 30-byte file declaring 2^28 arcs reserved 4 GiB); beyond this the
/// list grows as arcs are read.
const RESERVE: u64 = 1 << 20;

/// The longest line any format needs (a few numbers and a comment) is far below this.
const MAX_LINE: usize = 64 << 10;

pub(super) struct Parser<'a> {
    pub(super) path: &'a Path,
    pub(super) gz: bool,
    pub(super) line: usize,
    first_negative: Option<usize>,
    /// Largest weight magnitude so far and the line of its first occurrence.
    heaviest: Option<(u64, usize)>,
}

/// A token as the user should see it in a message: invisible characters (a no-break space, a
/// zero-width space, control bytes) escaped rather than printed as nothing.
pub(super) fn shown(tok: &str) -> String {
    tok.escape_debug().to_string()
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, gz: bool) -> Self {
        Parser {
            path,
            gz,
            line: 0,
            first_negative: None,
            heaviest: None,
        }
    }

    pub(super) fn err(&self, msg: impl Into<String>) -> Error {
        Error::parse(self.path, self.line, msg)
    }

    /// Calls `f` for each line (with its number recorded), reading bytes so that invalid UTF-8
    /// is reported rather than panicking.
    fn lines<R: BufRead>(
        &mut self,
        mut reader: R,
        mut f: impl FnMut(&mut Self, &str) -> Result<()>,
    ) -> Result<()> {
        let mut buf = Vec::with_capacity(256);
        loop {
            buf.clear();
            // A bounded read: a binary file without newlines must not be slurped whole.
            let got = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| {
                    let msg = if self.gz {
                        format!(
                            "cannot decompress ({e}); the .gz file is corrupt or truncated \
                         (`gzip -t` checks it)"
                        )
                    } else {
                        format!("cannot read: {e}")
                    };
                    Error::parse(self.path, self.line + 1, msg)
                })?;
            if got == 0 {
                if self.line == 0 {
                    return Err(Error::Input(format!(
                        "{}: the file is empty{}",
                        self.path.display(),
                        if self.gz {
                            " (after decompression)"
                        } else {
                            ""
                        }
                    )));
                }
                return Ok(());
            }
            self.line += 1;
            if got > MAX_LINE {
                return Err(self.err(format!(
                    "line longer than {} KiB; is this a graph file?",
                    MAX_LINE >> 10
                )));
            }
            let mut text = std::str::from_utf8(&buf)
                .map_err(|_| self.err("not valid text (UTF-8); is this a graph file?"))?;
            if self.line == 1 {
                // Editors on Windows may start a UTF-8 file with a byte-order mark.
                text = text.strip_prefix('\u{feff}').unwrap_or(text);
            }
            f(self, text.trim_end_matches(['\n', '\r']))?;
        }
    }

    pub(super) fn id(
        &self,
        tok: Option<&str>,
        what: &str,
        base: u64,
        n: Option<u64>,
    ) -> Result<u32> {
        let tok = tok.ok_or_else(|| self.err(format!("missing {what}")))?;
        let v: u64 = tok.parse().map_err(|_| {
            self.err(format!(
                "{what} '{}' is not a non-negative integer",
                shown(tok)
            ))
        })?;
        if v < base {
            return Err(self.err(format!("{what} {v} is below the first id {base}")));
        }
        if let Some(n) = n {
            if v - base >= n {
                return Err(self.err(format!(
                    "{what} {v} is out of range: the header declares {n} vertices ({base}..={})",
                    n + base - 1
                )));
            }
        }
        if v - base >= u32::MAX as u64 {
            return Err(self.err(format!(
                "{what} {v} is too large (at most {} vertices)",
                u32::MAX
            )));
        }
        Ok((v - base) as u32)
    }

    pub(super) fn weight(&mut self, tok: Option<&str>) -> Result<i64> {
        let tok = tok.ok_or_else(|| self.err("missing weight"))?;
        let w: i64 = match tok.parse() {
            Ok(w) => w,
            Err(_) => {
                // Accept integral reals such as "3.0" or "1e3"; refuse fractions and giants.
                let f: f64 = tok
                    .parse()
                    .map_err(|_| self.err(format!("weight '{}' is not a number", shown(tok))))?;
                if f.is_nan() {
                    return Err(self.err(format!("weight '{}' is not a number", shown(tok))));
                }
                if f.is_finite() && f.fract() != 0.0 {
                    return Err(self.err(format!(
                        "weight '{}' is not an integer; tuccompi computes exact integer distances, \
                         so scale the weights to integers",
                        shown(tok)
                    )));
                }
                // Weights are kept as i64; no plugin takes anything near that, so say what
                // each takes rather than the storage limit.
                if !f.is_finite() || f.abs() >= 9.2e18 {
                    return Err(self.err(format!(
                        "weight '{}' is out of range: Dijkstra-based plugins (apsp, \
                         dense-dijkstra) take 0..={}, Floyd-Warshall plugins (fw-naive, \
                         fw-blocked, rkleene) magnitudes below 2^59 / (vertices - 1); rescale \
                         the weights",
                        shown(tok),
                        u32::MAX
                    )));
                }
                f as i64
            }
        };
        self.note_weight(w);
        Ok(w)
    }

    /// Record a weight read some other way (scaled from a float): negatives and the heaviest.
    pub(super) fn note_weight(&mut self, w: i64) {
        if w < 0 && self.first_negative.is_none() {
            self.first_negative = Some(self.line);
        }
        if self.heaviest.is_none_or(|(a, _)| w.unsigned_abs() > a) {
            self.heaviest = Some((w.unsigned_abs(), self.line));
        }
    }

    pub(super) fn done(&self, n: usize, arcs: Vec<(u32, u32, i64)>, id_base: u64) -> EdgeList {
        let name = self.path.display().to_string();
        EdgeList {
            n,
            arcs,
            id_base,
            origin: Origin {
                first_negative: self.first_negative.map(|l| (name.clone(), l)),
                heaviest: self.heaviest.map(|(_, l)| (name.clone(), l)),
                name,
            },
        }
    }

    fn dimacs<R: BufRead>(&mut self, reader: R) -> Result<EdgeList> {
        let mut n: Option<u64> = None;
        let mut declared = 0u64;
        let mut problem_line = 0;
        let mut arcs = Vec::new();
        self.lines(reader, |p, line| {
            let mut t = line.split_ascii_whitespace();
            match t.next() {
                None | Some("c") => Ok(()),
                Some("p") => {
                    if n.is_some() {
                        return Err(p.err("second 'p' line; a .gr file has exactly one"));
                    }
                    if t.next() != Some("sp") {
                        return Err(p.err("expected 'p sp N M' (a DIMACS shortest-path problem line)"));
                    }
                    let parse = |tok: Option<&str>, what| -> Result<u64> {
                        tok.and_then(|s| s.parse().ok())
                            .ok_or_else(|| p.err(format!("expected 'p sp N M': {what} missing or not a number")))
                    };
                    let nn = parse(t.next(), "N")?;
                    declared = parse(t.next(), "M")?;
                    if t.next().is_some() {
                        return Err(p.err("extra field after 'p sp N M'"));
                    }
                    if nn >= u32::MAX as u64 {
                        return Err(p.err(format!("{nn} vertices is too many (at most {})", u32::MAX - 1)));
                    }
                    super::memory::check(
                        &format!("{}:{}", p.path.display(), p.line),
                        super::memory::input_bytes(nn, declared),
                        &format!("the problem line declares {nn} vertices and {declared} arcs"),
                    )?;
                    arcs.reserve(declared.min(RESERVE) as usize);
                    n = Some(nn);
                    problem_line = p.line;
                    Ok(())
                }
                Some("a") => {
                    let Some(nn) = n else {
                        return Err(p.err("arc before the 'p sp N M' line; put the problem line first"));
                    };
                    let u = p.id(t.next(), "tail id", 1, Some(nn))?;
                    let v = p.id(t.next(), "head id", 1, Some(nn))?;
                    let w = p.weight(t.next())?;
                    if t.next().is_some() {
                        return Err(p.err("extra field after 'a U V W'"));
                    }
                    if arcs.len() as u64 == declared {
                        return Err(p.err(format!(
                            "arc number {} but the problem line (line {problem_line}) declares \
                             {declared} arcs; correct M in 'p sp N M' or remove the extra arcs",
                            declared + 1
                        )));
                    }
                    arcs.push((u, v, w));
                    Ok(())
                }
                Some(tag) => Err(p.err(format!(
                    "unknown line type '{}'; a .gr file has only 'c', 'p sp N M' and 'a U V W' lines",
                    shown(tag)
                ))),
            }
        })?;
        let Some(n) = n else {
            return Err(self.err("no 'p sp N M' problem line found; is this a DIMACS .gr file?"));
        };
        if (arcs.len() as u64) < declared {
            return Err(self.err(format!(
                "the problem line (line {problem_line}) declares {declared} arcs but the file \
                 ends after {}; is it truncated?",
                arcs.len()
            )));
        }
        Ok(self.done(n as usize, arcs, 1))
    }

    fn matrix_market<R: BufRead>(&mut self, reader: R) -> Result<EdgeList> {
        let mut header_seen = false;
        let mut pattern = false;
        let mut symmetric = false;
        let mut size: Option<u64> = None;
        let mut declared = 0u64;
        let mut size_line = 0;
        let mut entries = 0u64;
        let mut arcs = Vec::new();
        self.lines(reader, |p, line| {
            if !header_seen {
                let l = line.to_ascii_lowercase();
                let f: Vec<&str> = l.split_ascii_whitespace().collect();
                if f.first() != Some(&"%%matrixmarket") || f.len() < 5 {
                    return Err(p.err("first line must be '%%MatrixMarket matrix coordinate <field> <symmetry>'"));
                }
                if f[1] != "matrix" || f[2] != "coordinate" {
                    return Err(p.err("only 'matrix coordinate' Matrix Market files hold graphs"));
                }
                pattern = match f[3] {
                    "pattern" => true,
                    "integer" | "real" => false,
                    other => return Err(p.err(format!("field '{}' unsupported; use integer, real or pattern", shown(other)))),
                };
                symmetric = match f[4] {
                    "general" => false,
                    "symmetric" => true,
                    other => return Err(p.err(format!("symmetry '{}' unsupported; use general or symmetric", shown(other)))),
                };
                header_seen = true;
                return Ok(());
            }
            let line = line.trim();
            if line.is_empty() || line.starts_with('%') {
                return Ok(());
            }
            let mut t = line.split_ascii_whitespace();
            let Some(n) = size else {
                let mut num = |what| -> Result<u64> {
                    t.next().and_then(|s| s.parse().ok()).ok_or_else(|| {
                        p.err(format!("expected the size line 'ROWS COLS ENTRIES': {what} missing or not a number"))
                    })
                };
                let (r, c) = (num("ROWS")?, num("COLS")?);
                declared = num("ENTRIES")?;
                if t.next().is_some() {
                    return Err(p.err("extra field after the size line 'ROWS COLS ENTRIES'"));
                }
                if r != c {
                    return Err(p.err(format!(
                        "the matrix is {r} x {c}; a graph's adjacency matrix is square \
                         (ROWS = COLS = the number of vertices)"
                    )));
                }
                if r >= u32::MAX as u64 {
                    return Err(p.err(format!("{r} vertices is too many (at most {})", u32::MAX - 1)));
                }
                let m = declared.saturating_mul(if symmetric { 2 } else { 1 });
                super::memory::check(
                    &format!("{}:{}", p.path.display(), p.line),
                    super::memory::input_bytes(r, m),
                    &format!("the size line declares {r} vertices and {declared} entries"),
                )?;
                size_line = p.line;
                size = Some(r);
                arcs.reserve(declared.min(RESERVE) as usize * if symmetric { 2 } else { 1 });
                return Ok(());
            };
            let u = p.id(t.next(), "row index", 1, Some(n))?;
            let v = p.id(t.next(), "column index", 1, Some(n))?;
            let w = if pattern { 1 } else { p.weight(t.next())? };
            if t.next().is_some() {
                return Err(p.err("extra field after 'ROW COL VALUE'"));
            }
            if entries == declared {
                return Err(p.err(format!(
                    "entry number {} but the size line (line {size_line}) declares {declared} \
                     entries; correct ENTRIES or remove the extra entries",
                    declared + 1
                )));
            }
            entries += 1;
            arcs.push((u, v, w));
            if symmetric && u != v {
                arcs.push((v, u, w));
            }
            Ok(())
        })?;
        let Some(rows) = size else {
            return Err(self.err("no size line 'ROWS COLS ENTRIES' found"));
        };
        if entries < declared {
            return Err(self.err(format!(
                "the size line (line {size_line}) declares {declared} entries but the file ends \
                 after {entries}; is it truncated?"
            )));
        }
        Ok(self.done(rows as usize, arcs, 1))
    }

    fn edge_list<R: BufRead>(&mut self, reader: R, columns: Option<usize>) -> Result<EdgeList> {
        let mut cols = columns;
        let mut arcs = Vec::new();
        let mut max_id: i64 = -1;
        self.lines(reader, |p, line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('%') {
                return Ok(());
            }
            let f: Vec<&str> = line.split_ascii_whitespace().collect();
            if cols.is_none() && !(2..=3).contains(&f.len()) {
                return Err(p.err(format!(
                    "expected 2 fields ('U V') or 3 ('U V W'), found {}",
                    f.len()
                )));
            }
            let want = *cols.get_or_insert(f.len());
            if f.len() != want {
                return Err(p.err(format!(
                    "expected {want} fields ('U V{}'), found {}{}",
                    if want == 3 { " W" } else { "" },
                    f.len(),
                    if columns.is_none() {
                        "; every line of a .txt edge list has as many fields as its first"
                    } else {
                        ""
                    }
                )));
            }
            let u = p.id(Some(f[0]), "source id", 0, None)?;
            let v = p.id(Some(f[1]), "target id", 0, None)?;
            let w = if want == 3 { p.weight(Some(f[2]))? } else { 1 };
            max_id = max_id.max(u as i64).max(v as i64);
            arcs.push((u, v, w));
            Ok(())
        })?;
        Ok(self.done((max_id + 1) as usize, arcs, 0))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tuccompi-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A source handing out its bytes a few at a time, then an error or its end.
    struct Trickle(Vec<u8>, usize, bool);
    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.1 == self.0.len() {
                return if self.2 {
                    Err(std::io::Error::other("disk on fire"))
                } else {
                    Ok(0)
                };
            }
            let k = out.len().min(7).min(self.0.len() - self.1);
            out[..k].copy_from_slice(&self.0[self.1..self.1 + k]);
            self.1 += k;
            Ok(k)
        }
    }

    #[test]
    fn read_ahead_hands_over_every_byte_in_order_then_the_end_or_the_error() {
        // Several blocks and a partial one; exactly one block; nothing.
        for len in [3 * AHEAD_BLOCK + 12345, AHEAD_BLOCK, 0] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut got = Vec::new();
            ReadAhead::new(Trickle(bytes.clone(), 0, false))
                .read_to_end(&mut got)
                .unwrap();
            assert!(got == bytes, "{len} bytes");
            // An error after the bytes: every byte first, then the error.
            let mut r = ReadAhead::new(Trickle(bytes.clone(), 0, true));
            let mut got = vec![0u8; len];
            r.read_exact(&mut got).unwrap();
            assert!(got == bytes);
            let e = r.read(&mut [0u8; 8]).unwrap_err();
            assert_eq!(e.to_string(), "disk on fire");
        }
        // A consumer that stops early lets the thread go (it would block forever otherwise).
        let mut r = ReadAhead::new(std::io::repeat(7));
        let mut b = [0u8; 100];
        r.read_exact(&mut b).unwrap();
        drop(r);
    }

    #[test]
    fn dimacs_ok_and_errors_name_the_line() {
        let g = read_graph(&write("a.gr", "c hi\np sp 3 2\na 1 2 5\na 3 1 0\n")).unwrap();
        assert_eq!((g.n, g.arcs.len(), g.id_base), (3, 2, 1));
        assert_eq!(g.arcs[1], (2, 0, 0));
        let e = read_graph(&write("b.gr", "p sp 3 1\na 1 x 5\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("b.gr:2: head id 'x' is not a non-negative integer"),
            "{e}"
        );
        let e = read_graph(&write("c.gr", "p sp 3 1\na 1 4 5\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.gr:2: head id 4 is out of range"), "{e}");
        let e = read_graph(&write("d.gr", "p sp 3 2\na 1 2 5\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("d.gr:2: the problem line (line 1) declares 2 arcs but the file ends after 1; is it truncated?"),
            "{e}"
        );
        let e = read_graph(&write("e.gr", "p sp 2 1\na 1 2 99999999999999999999\n")).unwrap_err();
        assert!(e.to_string().contains("e.gr:2:"), "{e}");
    }

    #[test]
    fn matrix_market_symmetric_and_pattern() {
        let g = read_graph(&write(
            "m.mtx",
            "%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 2\n2 1\n3 3\n",
        ))
        .unwrap();
        assert_eq!(g.arcs, vec![(1, 0, 1), (0, 1, 1), (2, 2, 1)]);
        let e = read_graph(&write(
            "r.mtx",
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 0.5\n",
        ))
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("r.mtx:3: weight '0.5' is not an integer"),
            "{e}"
        );
    }

    fn fails(name: &str, text: &[u8]) -> String {
        let dir = std::env::temp_dir().join(format!("tuccompi-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        read_graph(&p).unwrap_err().to_string()
    }

    #[test]
    fn more_arcs_than_declared_is_not_called_truncated() {
        let e = fails("more.gr", b"p sp 2 1\na 1 2 3\na 2 1 3\n");
        assert!(
            e.ends_with("more.gr:3: arc number 2 but the problem line (line 1) declares 1 arcs; correct M in 'p sp N M' or remove the extra arcs"),
            "{e}"
        );
        let e = fails(
            "more.mtx",
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n2 1\n",
        );
        assert!(
            e.ends_with("more.mtx:4: entry number 2 but the size line (line 2) declares 1 entries; correct ENTRIES or remove the extra entries"),
            "{e}"
        );
        let e = fails(
            "less.mtx",
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 2\n",
        );
        assert!(e.contains("ends after 1; is it truncated?"), "{e}");
    }

    #[test]
    fn non_square_matrix_is_refused() {
        let e = fails(
            "ns.mtx",
            b"%%MatrixMarket matrix coordinate integer general\n% c\n2 3 1\n1 3 5\n",
        );
        assert!(
            e.ends_with("ns.mtx:3: the matrix is 2 x 3; a graph's adjacency matrix is square (ROWS = COLS = the number of vertices)"),
            "{e}"
        );
    }

    #[test]
    fn weights_out_of_range_name_the_line_and_the_real_limits() {
        // Beyond i64: the reader refuses, stating what the plugins take (not "64 bits").
        let e = fails("big.gr", b"p sp 2 1\na 1 2 18446744073709551615\n");
        assert!(
            e.contains("big.gr:2: weight '18446744073709551615' is out of range: Dijkstra-based plugins (apsp, dense-dijkstra) take 0..=4294967295, Floyd-Warshall plugins")
                && !e.contains("64-bit"),
            "{e}"
        );
        assert!(fails("inf.gr", b"p sp 2 1\na 1 2 1e400\n").contains("out of range"));
        assert!(fails("nan.gr", b"p sp 2 1\na 1 2 NaN\n").contains("'NaN' is not a number"));
        // Within i64 but beyond u32: the CSR (Dijkstra plugins) names the line of the heaviest.
        let dir = std::env::temp_dir().join(format!("tuccompi-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("w.wel");
        std::fs::write(&p, "0 1 5\n1 2 5000000000\n2 0 6000000000\n").unwrap();
        let g = read_graph(&p).unwrap();
        assert_eq!(g.origin.heaviest.as_ref().unwrap().1, 3);
        let e = crate::graph::Csr::from_edges(&g).unwrap_err().to_string();
        assert!(
            e.contains("w.wel:3: arc 2 -> 0 has weight 6000000000, outside 0..=4294967295"),
            "{e}"
        );
    }

    #[test]
    fn byte_order_mark_crlf_and_invisible_characters() {
        let g = read_graph(&write("bom.gr", "\u{feff}p sp 2 1\r\na 1 2 3\r\n")).unwrap();
        assert_eq!(g.arcs, vec![(0, 1, 3)]);
        let g = read_graph(&write("bom.el", "\u{feff}0 1\n")).unwrap();
        assert_eq!(g.n, 2);
        // A no-break space glued to a number is shown, not printed as a blank.
        let e = fails("nbsp.gr", "p sp 2 1\na 1 2 3\u{a0}\n".as_bytes());
        assert!(
            e.ends_with("nbsp.gr:2: weight '3\\u{a0}' is not a number"),
            "{e}"
        );
        let e = fails("zw.gr", "\u{200b}p sp 2 1\n".as_bytes());
        assert!(e.contains("zw.gr:1: unknown line type '\\u{200b}p'"), "{e}");
    }

    #[test]
    fn hostile_files_get_a_message() {
        let e = fails("empty.gr", b"");
        assert!(e.ends_with("empty.gr: the file is empty"), "{e}");
        let e = fails("empty.mtx", b"");
        assert!(e.ends_with("empty.mtx: the file is empty"), "{e}");
        let e = fails(
            "hdr.mtx",
            b"%%MatrixMarket matrix coordinate integer general\n",
        );
        assert!(
            e.ends_with("hdr.mtx:1: no size line 'ROWS COLS ENTRIES' found"),
            "{e}"
        );
        let e = fails("x.txt", b"0 1 2 3\n");
        assert!(
            e.ends_with("x.txt:1: expected 2 fields ('U V') or 3 ('U V W'), found 4"),
            "{e}"
        );
        let e = fails("y.txt", b"0 1 2\n1 2\n");
        assert!(
            e.contains("y.txt:2: expected 3 fields ('U V W'), found 2; every line"),
            "{e}"
        );
        let mut long = b"c ".to_vec();
        long.resize(100 << 10, b'x');
        let e = fails("long.gr", &long);
        assert!(
            e.ends_with("long.gr:1: line longer than 64 KiB; is this a graph file?"),
            "{e}"
        );
        let e = fails("p.gr", b"p sp 2 1 9\n");
        assert!(e.ends_with("p.gr:1: extra field after 'p sp N M'"), "{e}");
        // gzip: corrupt, truncated, or empty after decompression.
        let e = fails("bad.gr.gz", b"not gzip at all");
        assert!(
            e.contains("bad.gr.gz:1: cannot decompress") && e.contains("corrupt or truncated"),
            "{e}"
        );
        let mut gz = Vec::new();
        {
            use std::io::Write;
            let mut w = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::default());
            w.write_all("p sp 3 2\na 1 2 3\na 2 3 4\n".repeat(50).as_bytes())
                .unwrap();
        }
        let e = fails("cut.gr.gz", &gz[..gz.len() / 2]);
        assert!(
            e.contains("cut.gr.gz:") && e.contains("corrupt or truncated"),
            "{e}"
        );
        let mut empty = Vec::new();
        flate2::write::GzEncoder::new(&mut empty, flate2::Compression::default())
            .finish()
            .unwrap();
        let e = fails("e.gr.gz", &empty);
        assert!(
            e.ends_with("e.gr.gz: the file is empty (after decompression)"),
            "{e}"
        );
        // A directory opens on Linux; reading it must not be the message.
        let dir = std::env::temp_dir().join(format!("tuccompi-read-{}/dir.gr", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_graph(&dir).unwrap_err().to_string();
        assert!(
            e.ends_with("dir.gr: is a directory; input.path must name a graph file"),
            "{e}"
        );
    }

    #[test]
    fn edge_list_zero_based() {
        let g = read_graph(&write("x.wel", "# c\n0 4 3\n4 0 -2\n")).unwrap();
        assert_eq!((g.n, g.id_base), (5, 0));
        assert!(g.origin.first_negative.as_ref().unwrap().1 == 3);
        let e = read_graph(&write("y.el", "0 1\n0 1 2\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("y.el:2: expected 2 fields"), "{e}");
    }
}
