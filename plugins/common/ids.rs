//! `apsp.sources` (or `run.tasks`) / `apsp.targets` given as `{ file = "PATH" }`: vertex ids or points read from a
//! `.txt` (one id per line), a `.csv` with a header (column `id`, or columns `lon` and `lat`)
//! or a `.npy` (a 1-D integer array of ids, or a k x 2 float array of points).
//!
//! Every complaint names the file and, for text, the line; for `.npy`, the element. Ids are
//! checked against the graph only once it is read, long after the file: [`IdOrigins`] keeps
//! where each id came from so that [`resolve`] can still name its line.
//!
//! The framework keeps `run.tasks = { file = ... }` as a path, as the plugins keep their own
//! `sources = { file = ... }` ([`Sources::File`]); they read it here ([`sources`]) and
//! declare the file among their job's inputs, so
//! that `--resume` refuses a changed id file.

use super::sources::{RunKeys, Sources};
use std::io::Read;
use std::path::{Path, PathBuf};
use tuccompi::config::Plan;
use tuccompi::{Error, Result};

/// The most bytes an id file may have: far more ids than any run's sources or targets, small
/// enough that a wrong path (a graph, `/dev/zero`) is refused rather than read whole.
pub const MAX_ID_FILE_BYTES: u64 = 1 << 30;

/// Where each id of a list read from a file came from: the file, and the line of each entry
/// (text files) or its element index (`.npy`), for messages about an id found wrong later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdOrigins {
    path: PathBuf,
    /// The 1-based line of each entry; empty for a `.npy`, whose entries are named by index.
    lines: Vec<u32>,
}

impl IdOrigins {
    /// The file the ids were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An error about entry `entry` (0-based, in file order): `PATH:LINE: msg` for a text
    /// file, `PATH: element I: msg` for a `.npy` (I counted from 0, as numpy indexes).
    pub fn error(&self, entry: usize, msg: String) -> Error {
        match self.lines.get(entry) {
            Some(&line) => parse_err(&self.path, line as usize, msg),
            None => Error::Input(format!(
                "{}: element {entry} (counting from 0): {msg}",
                self.path.display()
            )),
        }
    }

    /// Where entry `entry` is, for a message that names two entries: `line L` or `element I`.
    pub fn place(&self, entry: usize) -> String {
        match self.lines.get(entry) {
            Some(line) => format!("line {line}"),
            None => format!("element {entry}"),
        }
    }
}

/// The sources of a run (`keys.sources`), a file read into `List` or `Points`, with where each id came from
/// (`None` for the inline forms and points). A file's errors name the key and where it was
/// set; an id listed twice in a file is refused naming its two lines (inline lists are checked
/// when the plan is made).
pub fn sources(plan: &Plan, keys: &RunKeys) -> Result<(Sources, Option<IdOrigins>)> {
    let (sources, origins) = load_with_origins(keys.sources.clone(), &keys.sources_key)
        .map_err(|e| plan.origins.locate(e))?;
    if let (Sources::List(ids), Some(o)) = (&sources, &origins) {
        let mut first_at = std::collections::HashMap::with_capacity(ids.len());
        for (i, &id) in ids.iter().enumerate() {
            if let Some(&j) = first_at.get(&id) {
                // Duplicates would run the same task twice and write two summary rows (and
                // two distance rows) for one source.
                return Err(o.error(
                    i,
                    format!(
                        "vertex id {id} is listed a second time (first at {}); each id of \
                         {} is one task with one summary row, so list it once",
                        o.place(j),
                        keys.sources_key
                    ),
                ));
            }
            first_at.insert(id, i);
        }
    }
    Ok((sources, origins))
}

/// The file the sources are read from, if any (for the job's declared inputs).
pub fn sources_file(keys: &RunKeys) -> Option<PathBuf> {
    match &keys.sources {
        Sources::File(p) => Some(p.clone()),
        _ => None,
    }
}

/// `sources` with a `File` read into `List` or `Points`; any other form as it is. `key` names
/// the config key in messages.
pub fn load(sources: Sources, key: &str) -> Result<Sources> {
    load_with_origins(sources, key).map(|(s, _)| s)
}

/// [`load`], and for ids read from a file, where each came from (`None` for inline forms and
/// points).
pub fn load_with_origins(sources: Sources, key: &str) -> Result<(Sources, Option<IdOrigins>)> {
    let Sources::File(path) = sources else {
        return Ok((sources, None));
    };
    let bytes = read_bounded(&path, key)?;
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (loaded, lines) = if name.ends_with(".txt") {
        txt(&path, &bytes)?
    } else if name.ends_with(".csv") {
        csv_file(&path, &bytes)?
    } else if name.ends_with(".npy") {
        (npy(&path, &bytes)?, Vec::new())
    } else {
        return Err(Error::Config(format!(
            "{key}: {{ file = \"{}\" }}: unknown id file format; use .txt (one id per line), \
             .csv (a header with column id, or columns lon,lat) or .npy (1-D integer ids, or \
             k x 2 floats for points)",
            path.display()
        )));
    };
    match &loaded {
        Sources::List(v) if v.is_empty() => {}
        Sources::Points(v) if v.is_empty() => {}
        Sources::List(_) => return Ok((loaded, Some(IdOrigins { path, lines }))),
        _ => return Ok((loaded, None)),
    }
    Err(Error::Input(format!(
        "{}: no ids or points; {key} needs at least one",
        path.display()
    )))
}

/// The bytes of the id file at `path`: a regular file of at most [`MAX_ID_FILE_BYTES`], its
/// size checked before any byte is read (a device such as `/dev/zero`, a named pipe or a huge
/// sparse file is refused unread).
fn read_bounded(path: &Path, key: &str) -> Result<Vec<u8>> {
    let file = tuccompi::input::open(
        path,
        key,
        "a .txt, .csv or .npy file of ids or points",
        Some(MAX_ID_FILE_BYTES),
    )
    .map_err(|e| match e {
        Error::Io { source, .. } => Error::Config(format!(
            "{key}: {{ file = \"{}\" }}: {source}; check the path (relative paths start at \
             the directory tuccompi runs in)",
            path.display()
        )),
        e => e,
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_ID_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_ID_FILE_BYTES {
        return Err(Error::Input(format!(
            "{}: more than {} MiB; an id file holds ids or points, check that this is the file \
             meant for {key}",
            path.display(),
            MAX_ID_FILE_BYTES >> 20
        )));
    }
    Ok(bytes)
}

fn parse_err(path: &Path, line: usize, msg: String) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        line,
        msg,
    }
}

fn id(path: &Path, line: usize, tok: &str) -> Result<u64> {
    tok.parse::<u64>().map_err(|_| {
        parse_err(
            path,
            line,
            format!(
                "'{}' is not a vertex id (a non-negative integer)",
                tok.escape_debug()
            ),
        )
    })
}

fn coordinate(path: &Path, line: usize, tok: &str, what: &str) -> Result<f64> {
    match tok.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(parse_err(
            path,
            line,
            format!("{what} '{}' is not a finite number", tok.escape_debug()),
        )),
    }
}

fn text<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        parse_err(path, line, "not UTF-8 text".into())
    })
}

/// A 1-based line number as kept in [`IdOrigins`]: a file of at most [`MAX_ID_FILE_BYTES`]
/// has fewer than `u32::MAX` lines.
fn line32(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// One id per line; blank lines and lines starting with `#` are skipped. The ids, and the
/// line of each.
fn txt(path: &Path, bytes: &[u8]) -> Result<(Sources, Vec<u32>)> {
    let text = text(path, bytes)?;
    let mut ids = Vec::new();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start_matches('\u{feff}').trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        ids.push(id(path, i + 1, t)?);
        lines.push(line32(i + 1));
    }
    Ok((Sources::List(ids), lines))
}

/// A header naming `id`, or `lon` and `lat` (other columns are ignored). The ids or points,
/// and the line of each id.
fn csv_file(path: &Path, bytes: &[u8]) -> Result<(Sources, Vec<u32>)> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let mut r = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(bytes);
    let bad = |e: csv::Error| {
        let line = e.position().map_or(1, |p| p.line() as usize);
        parse_err(path, line, format!("not CSV: {e}"))
    };
    let header = r.headers().map_err(bad)?.clone();
    let col = |name: &str| header.iter().position(|h| h.eq_ignore_ascii_case(name));
    enum Shape {
        Ids(usize),
        Points(usize, usize),
    }
    let shape = match (col("id"), col("lon"), col("lat")) {
        (Some(i), None, None) => Shape::Ids(i),
        (None, Some(x), Some(y)) => Shape::Points(x, y),
        _ => {
            return Err(parse_err(
                path,
                1,
                format!(
                    "header '{}': name a column id (vertex ids) or two columns lon,lat (points), \
                     not both",
                    header.iter().collect::<Vec<_>>().join(",")
                ),
            ))
        }
    };
    let mut ids = Vec::new();
    let mut lines = Vec::new();
    let mut points = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(bad)?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        match shape {
            Shape::Ids(i) => {
                ids.push(id(path, line, &rec[i])?);
                lines.push(line32(line));
            }
            Shape::Points(x, y) => points.push([
                coordinate(path, line, &rec[x], "lon")?,
                coordinate(path, line, &rec[y], "lat")?,
            ]),
        }
    }
    Ok(match shape {
        Shape::Ids(_) => (Sources::List(ids), lines),
        Shape::Points(..) => (Sources::Points(points), lines),
    })
}

/// A 1-D array of integers (ids) or a k x 2 array of floats (points, `[lon, lat]` rows).
fn npy(path: &Path, bytes: &[u8]) -> Result<Sources> {
    use npyz::{DType, TypeChar};
    let bad = |what: String| Error::Input(format!("{}: {what}", path.display()));
    tuccompi::npy::header_fits(bytes).map_err(|e| {
        bad(format!(
            "not a .npy file that tuccompi can read ({e}); save it with numpy.save"
        ))
    })?;
    let file = npyz::NpyFile::new(bytes).map_err(|e| {
        bad(format!(
            "not a .npy file that tuccompi can read ({e}); save it with numpy.save"
        ))
    })?;
    let shape = file.shape().to_vec();
    let fortran = file.order() == npyz::Order::Fortran;
    let DType::Plain(ty) = file.dtype() else {
        return Err(bad(format!(
            "dtype {} is a record type; save a plain integer or float array",
            file.dtype().descr()
        )));
    };
    let (ch, size) = (ty.type_char(), ty.size_field());
    let io = |e: std::io::Error| {
        bad(format!(
            "cannot read the array ({e}); the file is cut short"
        ))
    };
    macro_rules! ints {
        ($($t:ty),*) => {
            match size {
                $(s if s as usize == std::mem::size_of::<$t>() => {
                    let v: Vec<$t> = file.into_vec().map_err(io)?;
                    v.into_iter()
                        .enumerate()
                        .map(|(i, x)| {
                            u64::try_from(x).map_err(|_| {
                                bad(format!("entry {i} is {x}, not a vertex id (ids are >= 0)"))
                            })
                        })
                        .collect::<Result<Vec<u64>>>()?
                })*
                _ => return Err(bad(format!("unsupported integer size {size}"))),
            }
        };
    }
    match (shape.as_slice(), ch) {
        ([_], TypeChar::Int) => Ok(Sources::List(ints!(i8, i16, i32, i64))),
        ([_], TypeChar::Uint) => Ok(Sources::List(ints!(u8, u16, u32, u64))),
        (&[k, 2], TypeChar::Float) => {
            let flat: Vec<f64> = match size {
                4 => file
                    .into_vec::<f32>()
                    .map_err(io)?
                    .into_iter()
                    .map(f64::from)
                    .collect(),
                8 => file.into_vec::<f64>().map_err(io)?,
                _ => return Err(bad(format!("unsupported float size {size}"))),
            };
            let k = k as usize;
            let points: Vec<[f64; 2]> = (0..k)
                .map(|i| {
                    if fortran {
                        [flat[i], flat[k + i]]
                    } else {
                        [flat[2 * i], flat[2 * i + 1]]
                    }
                })
                .collect();
            if let Some(i) = points.iter().position(|p| !p.iter().all(|c| c.is_finite())) {
                return Err(bad(format!("row {i} is not a finite [lon, lat] pair")));
            }
            Ok(Sources::Points(points))
        }
        _ => Err(bad(format!(
            "shape {shape:?} of dtype {}: use a 1-D integer array of vertex ids or a k x 2 \
             float array of [lon, lat] points",
            file.dtype().descr()
        ))),
    }
}

/// Internal (0-based) ids of `ids`, vertex ids of a graph of `n` vertices numbered from
/// `base`. `key` names the list in messages (`run.sources`); an id outside the graph is named
/// with its file and line (or `.npy` element) when `origins` says where the list came from.
///
/// O(ids).
pub fn resolve(
    ids: &[u64],
    origins: Option<&IdOrigins>,
    key: &str,
    n: usize,
    base: u64,
) -> Result<Vec<u32>> {
    ids.iter()
        .enumerate()
        .map(|(i, &id)| {
            if id >= base && id - base < n as u64 {
                return Ok((id - base) as u32);
            }
            let range = match n {
                0 => "this graph has no vertices".to_string(),
                _ => format!(
                    "this graph's ids are {base}..={}",
                    base as u128 + n as u128 - 1
                ),
            };
            Err(match origins {
                Some(o) => o.error(
                    i,
                    format!("vertex id {id} (in {key}) is out of range; {range}"),
                ),
                None => Error::Config(format!("{key}: vertex id {id} is out of range; {range}")),
            })
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;
    use npyz::WriterBuilder;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> Sources {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        Sources::File(p)
    }

    fn npy_bytes<T: npyz::AutoSerialize + Copy>(shape: &[u64], data: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut out)
            .begin_nd()
            .unwrap();
        w.extend(data.iter().copied()).unwrap();
        w.finish().unwrap();
        out
    }

    #[test]
    fn every_format_gives_the_inline_form() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        let ids = Sources::List(vec![5, 1, 5, 9]);
        let pts = Sources::Points(vec![[24.5, 60.25], [-1.0, 2.0]]);
        for (name, bytes) in [
            ("a.txt", b"# sources\n5\n\n1\r\n5\n  9\n".to_vec()),
            (
                "a.csv",
                b"\xef\xbb\xbfname,id\nx,5\ny,1\nz,5\nw,9\n".to_vec(),
            ),
            ("a.npy", npy_bytes(&[4], &[5i32, 1, 5, 9])),
            ("b.npy", npy_bytes(&[4], &[5u64, 1, 5, 9])),
            ("c.npy", npy_bytes(&[4], &[5i16, 1, 5, 9])),
        ] {
            assert_eq!(load(write(d, name, &bytes), "k").unwrap(), ids, "{name}");
        }
        for (name, bytes) in [
            ("p.csv", b"lat,lon\n60.25,24.5\n2,-1\n".to_vec()),
            ("p.npy", npy_bytes(&[2, 2], &[24.5f64, 60.25, -1.0, 2.0])),
            ("q.npy", npy_bytes(&[2, 2], &[24.5f32, 60.25, -1.0, 2.0])),
        ] {
            assert_eq!(load(write(d, name, &bytes), "k").unwrap(), pts, "{name}");
        }
        // Inline forms pass through.
        assert_eq!(load(Sources::First(3), "k").unwrap(), Sources::First(3));
    }

    #[test]
    fn ids_outside_the_graph_are_named_by_line_or_element() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        for (name, bytes, want) in [
            (
                "a.txt",
                b"# header\n1\n\n12\n2\n".to_vec(),
                "a.txt:4: vertex id 12 (in run.sources) is out of range; this graph's ids are 1..=10",
            ),
            (
                "a.csv",
                b"name,id\nx,3\n\"two\nlines\",0\n".to_vec(),
                "a.csv:3: vertex id 0 (in run.sources) is out of range",
            ),
            (
                "a.npy",
                npy_bytes(&[3], &[1u32, 11, 2]),
                "a.npy: element 1 (counting from 0): vertex id 11 (in run.sources)",
            ),
        ] {
            let (s, o) = load_with_origins(write(d, name, &bytes), "run.sources").unwrap();
            let Sources::List(ids) = s else {
                panic!("{name}: not ids")
            };
            let o = o.expect("a file's ids keep their origins");
            let e = resolve(&ids, Some(&o), "run.sources", 10, 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
        // In range: internal ids; inline lists have no origins and are named by their key.
        assert_eq!(resolve(&[1, 10], None, "k", 10, 1).unwrap(), vec![0, 9]);
        let (s, o) = load_with_origins(Sources::List(vec![0]), "k").unwrap();
        assert!(o.is_none());
        let Sources::List(ids) = s else { panic!() };
        let e = resolve(&ids, None, "run.sources", 10, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "run.sources: vertex id 0 is out of range; this graph's ids are 1..=10"
        );
    }

    #[test]
    fn bad_files_are_named_with_their_line() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "a.txt",
                b"1\n2\n-3\n".to_vec(),
                "a.txt:3: '-3' is not a vertex id",
            ),
            (
                "b.txt",
                b"1\n2.5\n".to_vec(),
                "b.txt:2: '2.5' is not a vertex id",
            ),
            ("c.txt", b"# nothing\n".to_vec(), "c.txt: no ids or points"),
            ("d.txt", vec![b'1', b'\n', 0xff], "d.txt:2: not UTF-8"),
            (
                "a.csv",
                b"id\n1\nx\n".to_vec(),
                "a.csv:3: 'x' is not a vertex id",
            ),
            (
                "b.csv",
                b"vertex\n1\n".to_vec(),
                "b.csv:1: header 'vertex': name a column id",
            ),
            (
                "c.csv",
                b"lon,lat\n1,2\n3,nan\n".to_vec(),
                "c.csv:3: lat 'nan' is not a finite",
            ),
            ("d.csv", b"id,x\n1,2\n3\n".to_vec(), "d.csv:3: not CSV"),
            ("e.csv", b"id\n".to_vec(), "e.csv: no ids or points"),
            ("a.npy", b"garbage".to_vec(), "a.npy: not a .npy file"),
            (
                "b.npy",
                npy_bytes(&[2], &[1i32, -4]),
                "b.npy: entry 1 is -4",
            ),
            (
                "c.npy",
                npy_bytes(&[2], &[1.0f64, 2.0]),
                "c.npy: shape [2] of dtype",
            ),
            (
                "d.npy",
                npy_bytes(&[1, 3], &[1.0f64, 2.0, 3.0]),
                "d.npy: shape [1, 3]",
            ),
            (
                "e.npy",
                npy_bytes(&[1, 2], &[f64::NAN, 2.0]),
                "e.npy: row 0 is not a finite",
            ),
            ("a.json", b"[1]".to_vec(), "unknown id file format"),
        ];
        for (name, bytes, want) in cases {
            let e = load(write(d, name, &bytes), "run.sources")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
        // A cut .npy.
        let mut cut = npy_bytes(&[100], &[7u32; 100]);
        cut.truncate(cut.len() - 10);
        let e = load(write(d, "cut.npy", &cut), "k")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cut.npy: cannot read the array"), "{e}");
        let e = load(Sources::File(d.join("none.txt")), "apsp.targets")
            .unwrap_err()
            .to_string();
        assert!(e.contains("apsp.targets: { file = \""), "{e}");
    }
}
