//! Graph file readers: DIMACS `.gr`, Matrix Market `.mtx`, whitespace edge lists
//! (`.el`, `.wel`, `.txt`), each optionally gzip-compressed (`.gz`).
//!
//! Every complaint names `file:line` and says what to change.

use super::{EdgeList, Origin};
use crate::{Error, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Read a graph file; the format follows from the extension (a trailing `.gz` is decompressed).
pub fn read_graph(path: &Path) -> Result<EdgeList> {
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (stem, gz) = match name.strip_suffix(".gz") {
        Some(s) => (s.to_string(), true),
        None => (name.clone(), false),
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let raw: Box<dyn Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let reader = BufReader::with_capacity(1 << 20, raw);
    let ext = stem.rsplit('.').next().unwrap_or("");
    let mut p = Parser::new(path);
    let list = match ext {
        "gr" => p.dimacs(reader)?,
        "mtx" => p.matrix_market(reader)?,
        "el" => p.edge_list(reader, Some(2))?,
        "wel" => p.edge_list(reader, Some(3))?,
        "txt" => p.edge_list(reader, None)?,
        _ => {
            return Err(Error::Input(format!(
                "{}: unknown graph format '.{ext}'; use .gr (DIMACS), .mtx (Matrix Market), \
                 .el/.wel/.txt (edge list), optionally ending in .gz",
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

struct Parser<'a> {
    path: &'a Path,
    line: usize,
    first_negative: Option<usize>,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path) -> Self {
        Parser {
            path,
            line: 0,
            first_negative: None,
        }
    }

    fn err(&self, msg: impl Into<String>) -> Error {
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
            let got = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::parse(self.path, self.line + 1, format!("cannot read: {e}")))?;
            if got == 0 {
                return Ok(());
            }
            self.line += 1;
            let text = std::str::from_utf8(&buf)
                .map_err(|_| self.err("not valid text (UTF-8); is this a graph file?"))?;
            f(self, text.trim_end_matches(['\n', '\r']))?;
        }
    }

    fn id(&self, tok: Option<&str>, what: &str, base: u64, n: Option<u64>) -> Result<u32> {
        let tok = tok.ok_or_else(|| self.err(format!("missing {what}")))?;
        let v: u64 = tok
            .parse()
            .map_err(|_| self.err(format!("{what} '{tok}' is not a non-negative integer")))?;
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

    fn weight(&mut self, tok: Option<&str>) -> Result<i64> {
        let tok = tok.ok_or_else(|| self.err("missing weight"))?;
        let w: i64 = match tok.parse() {
            Ok(w) => w,
            Err(_) => {
                // Accept integral reals such as "3.0" or "1e3"; refuse fractions and giants.
                let f: f64 = tok
                    .parse()
                    .map_err(|_| self.err(format!("weight '{tok}' is not a number")))?;
                if !f.is_finite() || f.fract() != 0.0 {
                    return Err(self.err(format!(
                        "weight '{tok}' is not an integer; tuccompi computes exact integer distances, \
                         so scale the weights to integers"
                    )));
                }
                if f.abs() >= 9.2e18 {
                    return Err(
                        self.err(format!("weight '{tok}' does not fit in a 64-bit integer"))
                    );
                }
                f as i64
            }
        };
        if w < 0 && self.first_negative.is_none() {
            self.first_negative = Some(self.line);
        }
        Ok(w)
    }

    fn done(&self, n: usize, arcs: Vec<(u32, u32, i64)>, id_base: u64) -> EdgeList {
        let name = self.path.display().to_string();
        EdgeList {
            n,
            arcs,
            id_base,
            origin: Origin {
                first_negative: self.first_negative.map(|l| (name.clone(), l)),
                name,
            },
        }
    }

    fn dimacs<R: BufRead>(&mut self, reader: R) -> Result<EdgeList> {
        let mut n: Option<u64> = None;
        let mut declared = 0u64;
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
                    if nn >= u32::MAX as u64 {
                        return Err(p.err(format!("{nn} vertices is too many (at most {})", u32::MAX - 1)));
                    }
                    arcs.reserve(declared.min(1 << 28) as usize);
                    n = Some(nn);
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
                    arcs.push((u, v, w));
                    Ok(())
                }
                Some(tag) => Err(p.err(format!(
                    "unknown line type '{tag}'; a .gr file has only 'c', 'p sp N M' and 'a U V W' lines"
                ))),
            }
        })?;
        let Some(n) = n else {
            return Err(self.err("no 'p sp N M' problem line found; is this a DIMACS .gr file?"));
        };
        if arcs.len() as u64 != declared {
            return Err(self.err(format!(
                "the problem line declares {declared} arcs but the file has {}; is it truncated?",
                arcs.len()
            )));
        }
        Ok(self.done(n as usize, arcs, 1))
    }

    fn matrix_market<R: BufRead>(&mut self, reader: R) -> Result<EdgeList> {
        let mut header_seen = false;
        let mut pattern = false;
        let mut symmetric = false;
        let mut size: Option<(u64, u64)> = None;
        let mut declared = 0u64;
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
                    other => return Err(p.err(format!("field '{other}' unsupported; use integer, real or pattern"))),
                };
                symmetric = match f[4] {
                    "general" => false,
                    "symmetric" => true,
                    other => return Err(p.err(format!("symmetry '{other}' unsupported; use general or symmetric"))),
                };
                header_seen = true;
                return Ok(());
            }
            let line = line.trim();
            if line.is_empty() || line.starts_with('%') {
                return Ok(());
            }
            let mut t = line.split_ascii_whitespace();
            let Some((rows, cols)) = size else {
                let mut num = |what| -> Result<u64> {
                    t.next().and_then(|s| s.parse().ok()).ok_or_else(|| {
                        p.err(format!("expected the size line 'ROWS COLS ENTRIES': {what} missing or not a number"))
                    })
                };
                let (r, c) = (num("ROWS")?, num("COLS")?);
                declared = num("ENTRIES")?;
                if r.max(c) >= u32::MAX as u64 {
                    return Err(p.err("too many vertices"));
                }
                size = Some((r, c));
                arcs.reserve(declared.min(1 << 28) as usize * if symmetric { 2 } else { 1 });
                return Ok(());
            };
            let n = rows.max(cols);
            let u = p.id(t.next(), "row index", 1, Some(n))?;
            let v = p.id(t.next(), "column index", 1, Some(n))?;
            let w = if pattern { 1 } else { p.weight(t.next())? };
            if t.next().is_some() {
                return Err(p.err("extra field after 'ROW COL VALUE'"));
            }
            entries += 1;
            arcs.push((u, v, w));
            if symmetric && u != v {
                arcs.push((v, u, w));
            }
            Ok(())
        })?;
        let Some((rows, cols)) = size else {
            return Err(self.err("no size line 'ROWS COLS ENTRIES' found"));
        };
        if entries != declared {
            return Err(self.err(format!(
                "the size line declares {declared} entries but the file has {entries}; is it truncated?"
            )));
        }
        Ok(self.done(rows.max(cols) as usize, arcs, 1))
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
            let want = *cols.get_or_insert(f.len());
            if f.len() != want || !(2..=3).contains(&want) {
                return Err(p.err(format!(
                    "expected {} fields ('U V{}'), found {}",
                    want.clamp(2, 3),
                    if want == 3 { " W" } else { "" },
                    f.len()
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
        assert!(e.contains("truncated"), "{e}");
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
