//! Edge lists as spreadsheets and data frames write them: `.csv` (comma) and `.tsv` (tab)
//! with a header line naming the columns, read with the `csv` crate (quoting, a byte-order
//! mark, CRLF).
//!
//! The tail, head and weight columns are found by name: `[input] columns = ["from", "to",
//! "length"]`, by default `source,target,weight`; other columns are ignored; two names make an
//! unweighted list (every weight 1). Ids are non-negative integers, numbered from 0 as in the
//! other edge lists. Weights are integers (or integral reals) unless `input.weight_scale` is
//! set: then each weight is read as a float, multiplied by the scale and rounded to the nearest
//! integer, and the largest rounding error is reported. Every complaint names `file:line`.

use super::read::{shown, Parser};
use super::EdgeList;
use crate::common::input::InputOptions;
use std::io::Read;
use tuccompi::{Error, Result};

/// The default column names.
const DEFAULT: [&str; 3] = ["source", "target", "weight"];

/// What scaling did to the weights, for the log line.
#[derive(Debug, Default)]
struct Rounding {
    /// Largest |w·scale − round(w·scale)| and the line of its first occurrence.
    worst: Option<(f64, usize)>,
    /// Weights other than 0 that became 0, and the first line of one.
    zeroed: (u64, usize),
}

/// Read a delimited edge list with a header through `p` (for its file name, line numbers and
/// weight checks).
pub(super) fn read(
    p: &mut Parser<'_>,
    reader: impl Read,
    delimiter: u8,
    options: &InputOptions,
) -> Result<EdgeList> {
    let mut rdr = ::csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        .trim(::csv::Trim::All)
        .from_reader(reader);
    let kind = if delimiter == b'\t' { "tab" } else { "comma" };
    let header = rdr.headers().map_err(|e| csv_error(p, e, 1))?.clone();
    if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
        return Err(Error::Input(format!(
            "{}: the file is empty{}; a {kind}-separated edge list starts with a header line \
             such as 'source,target,weight'",
            p.path.display(),
            if p.gz { " (after decompression)" } else { "" }
        )));
    }
    let names: Vec<&str> = match &options.columns {
        Some(c) => c.iter().map(String::as_str).collect(),
        None => DEFAULT.to_vec(),
    };
    let mut index = Vec::with_capacity(names.len());
    for name in &names {
        let Some(i) = header.iter().position(|h| h == *name) else {
            p.line = 1;
            let have: Vec<String> = header.iter().map(|h| format!("'{}'", shown(h))).collect();
            return Err(p.err(format!(
                "no column '{name}' in the header ({}); name the tail, head and weight columns \
                 with input.columns = [\"FROM\", \"TO\", \"WEIGHT\"] (two names for an \
                 unweighted list){}",
                have.join(", "),
                if header.len() == 1 && delimiter == b',' && header[0].contains('\t') {
                    "; the header holds tabs: a tab-separated file ends in .tsv"
                } else {
                    ""
                }
            )));
        };
        index.push(i);
    }
    let scale = options.weight_scale;
    let mut rounding = Rounding::default();
    let mut arcs = Vec::new();
    let mut max_id: i64 = -1;
    let mut record = ::csv::StringRecord::new();
    loop {
        let line = rdr.position().line() as usize;
        match rdr.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(p, e, line)),
        }
        p.line = record.position().map_or(line, |pos| pos.line() as usize);
        // A blank line reads as one empty field.
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        let u = p.id(
            Some(&record[index[0]]),
            &format!("{} id", names[0]),
            0,
            None,
        )?;
        let v = p.id(
            Some(&record[index[1]]),
            &format!("{} id", names[1]),
            0,
            None,
        )?;
        let w = match (index.get(2), scale) {
            (None, _) => 1,
            (Some(&i), None) => p.weight(Some(&record[i]))?,
            (Some(&i), Some(scale)) => scaled(p, &record[i], scale, &mut rounding)?,
        };
        max_id = max_id.max(u as i64).max(v as i64);
        arcs.push((u, v, w));
    }
    if arcs.is_empty() {
        return Err(Error::Input(format!(
            "{}: no edges after the header line; the file holds only '{}'",
            p.path.display(),
            header
                .iter()
                .collect::<Vec<_>>()
                .join(if delimiter == b'\t' { "\t" } else { "," })
        )));
    }
    if let Some(scale) = scale {
        report(p, scale, &rounding);
    }
    Ok(p.done((max_id + 1) as usize, arcs, 0))
}

/// A float weight times `scale`, rounded to the nearest integer; NaN, infinities and results
/// beyond what any plugin takes are refused.
fn scaled(p: &mut Parser<'_>, tok: &str, scale: f64, r: &mut Rounding) -> Result<i64> {
    let f: f64 = tok
        .parse()
        .map_err(|_| p.err(format!("weight '{}' is not a number", shown(tok))))?;
    if !f.is_finite() {
        return Err(p.err(format!(
            "weight '{}' is not a finite number; leave the edge out instead",
            shown(tok)
        )));
    }
    let x = f * scale;
    if x.abs() >= 9.2e18 {
        return Err(p.err(format!(
            "weight {} x input.weight_scale {scale} = {x:e} is out of range; use a smaller \
             input.weight_scale",
            shown(tok)
        )));
    }
    let w = x.round();
    let err = (x - w).abs();
    if r.worst.is_none_or(|(e, _)| err > e) {
        r.worst = Some((err, p.line));
    }
    if w == 0.0 && f != 0.0 {
        if r.zeroed.0 == 0 {
            r.zeroed.1 = p.line;
        }
        r.zeroed.0 += 1;
    }
    let w = w as i64;
    p.note_weight(w);
    Ok(w)
}

/// The log line about scaling: info when harmless, a warning when weights became 0.
fn report(p: &Parser<'_>, scale: f64, r: &Rounding) {
    let (err, line) = r.worst.unwrap_or((0.0, 0));
    let msg = format!(
        "{}: weights x input.weight_scale {scale} rounded to integers; the largest rounding \
         error is {err} (line {line}), in units of 1/{scale} of the file's weights",
        p.path.display()
    );
    if r.zeroed.0 > 0 {
        tracing::warn!(
            "{msg}; {} nonzero weights became 0 (the first on line {}): use a larger \
             input.weight_scale",
            r.zeroed.0,
            r.zeroed.1
        );
    } else {
        tracing::info!("{msg}");
    }
}

/// A `csv` crate error as `file:line: what to change`.
fn csv_error(p: &mut Parser<'_>, e: ::csv::Error, line: usize) -> Error {
    let at = e.position().map_or(line, |pos| pos.line() as usize);
    p.line = at.max(1);
    match e.into_kind() {
        ::csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => p.err(format!(
            "{len} fields, but the header has {expected_len}; every line has one field per \
             header column"
        )),
        ::csv::ErrorKind::Utf8 { .. } => p.err("not valid text (UTF-8); is this an edge list?"),
        ::csv::ErrorKind::Io(e) if p.gz => p.err(format!(
            "cannot decompress ({e}); the .gz file is corrupt or truncated (`gzip -t` checks it)"
        )),
        ::csv::ErrorKind::Io(e) => p.err(format!("cannot read: {e}")),
        other => p.err(format!("{other:?}")),
    }
}

#[cfg(test)]
mod test {
    use crate::common::input::InputOptions;
    use crate::graph::read_graph_with;
    use std::path::PathBuf;

    fn write(name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tuccompi-delim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn opts(columns: Option<&[&str]>, scale: Option<f64>) -> InputOptions {
        InputOptions {
            columns: columns.map(|c| c.iter().map(|s| s.to_string()).collect()),
            weight_scale: scale,
            no_arc: None,
        }
    }

    fn fails(name: &str, text: &str, o: &InputOptions) -> String {
        read_graph_with(&write(name, text), o)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn columns_by_name_in_any_order_with_extra_columns_quotes_and_a_bom() {
        let g = read_graph_with(
            &write(
                "a.csv",
                "\u{feff}name,weight,target,source\r\n\"x, y\",5,1,0\r\nz,2.0,0,3\r\n\r\n",
            ),
            &opts(None, None),
        )
        .unwrap();
        assert_eq!((g.n, g.id_base), (4, 0));
        assert_eq!(g.arcs, vec![(0, 1, 5), (3, 0, 2)]);
        let g = read_graph_with(
            &write("b.tsv", "from\tto\tlength\n2\t1\t0.25\n1\t2\t1.5\n"),
            &opts(Some(&["from", "to", "length"]), Some(10.0)),
        )
        .unwrap();
        // 0.25 x 10 = 2.5 rounds away from zero (f64::round), to 3.
        assert_eq!(g.arcs, vec![(2, 1, 3), (1, 2, 15)]);
        let g = read_graph_with(
            &write("u.csv", "a,b\n0,1\n1,2\n"),
            &opts(Some(&["a", "b"]), None),
        )
        .unwrap();
        assert_eq!(g.arcs, vec![(0, 1, 1), (1, 2, 1)]);
    }

    #[test]
    fn hostile_tables_get_one_message_naming_file_and_line() {
        let o = opts(None, None);
        let e = fails("h.csv", "source,target,weight\n", &o);
        assert!(
            e.ends_with(
                "h.csv: no edges after the header line; the file holds only 'source,target,weight'"
            ),
            "{e}"
        );
        let e = fails("e.csv", "", &o);
        assert!(e.contains("e.csv: the file is empty"), "{e}");
        let e = fails("m.csv", "from,to,w\n0,1,2\n", &o);
        assert!(
            e.contains("m.csv:1: no column 'source' in the header ('from', 'to', 'w'); name the tail, head and weight columns with input.columns"),
            "{e}"
        );
        let e = fails("t.csv", "source\ttarget\tweight\n0\t1\t2\n", &o);
        assert!(e.contains("a tab-separated file ends in .tsv"), "{e}");
        let e = fails("n.csv", "source,target,weight\n0,1,2\n1,0,abc\n", &o);
        assert!(e.ends_with("n.csv:3: weight 'abc' is not a number"), "{e}");
        let e = fails("f.csv", "source,target,weight\n0,1,2.5\n", &o);
        assert!(
            e.contains("f.csv:2: weight '2.5' is not an integer") && e.contains("scale"),
            "{e}"
        );
        let e = fails("i.csv", "source,target,weight\n0,x1,2\n", &o);
        assert!(
            e.ends_with("i.csv:2: target id 'x1' is not a non-negative integer"),
            "{e}"
        );
        let e = fails("l.csv", "source,target,weight\n0,1,2\n0,1\n", &o);
        assert!(
            e.ends_with("l.csv:3: 2 fields, but the header has 3; every line has one field per header column"),
            "{e}"
        );
        let e = fails("bin.csv", "source,target,weight\n0,1,\u{0}\u{ff}", &o);
        assert!(e.contains("bin.csv:2:"), "{e}");
        let s = opts(None, Some(100.0));
        let e = fails("nan.csv", "source,target,weight\n0,1,1\n0,1,NaN\n", &s);
        assert!(
            e.ends_with(
                "nan.csv:3: weight 'NaN' is not a finite number; leave the edge out instead"
            ),
            "{e}"
        );
        let e = fails("inf.csv", "source,target,weight\n0,1,inf\n", &s);
        assert!(
            e.contains("inf.csv:2: weight 'inf' is not a finite number"),
            "{e}"
        );
        let e = fails("big.csv", "source,target,weight\n0,1,1e300\n", &s);
        assert!(
            e.contains("big.csv:2: weight 1e300 x input.weight_scale 100 = "),
            "{e}"
        );
        // A negative weight is read (the Floyd-Warshall plugins take it); the CSR of the
        // Dijkstra plugins refuses it, naming the line.
        let g = read_graph_with(
            &write("neg.csv", "source,target,weight\n0,1,1\n1,0,-0.5\n"),
            &s,
        )
        .unwrap();
        assert_eq!(g.arcs[1], (1, 0, -50));
        let e = crate::graph::Csr::from_edges(&g).unwrap_err().to_string();
        assert!(e.contains("neg.csv:3: negative arc weight"), "{e}");
        // Cut gzip.
        let mut gz = Vec::new();
        {
            use std::io::Write;
            let mut w = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::default());
            w.write_all(b"source,target,weight\n").unwrap();
            w.write_all("0,1,2\n".repeat(5000).as_bytes()).unwrap();
        }
        let e = read_graph_with(&write("cut.csv.gz", &gz[..gz.len() / 2]), &o)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cut.csv.gz:") && e.contains("corrupt or truncated"),
            "{e}"
        );
    }
}
