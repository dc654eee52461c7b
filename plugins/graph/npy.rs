//! Dense matrices from numpy: an `n × n` `.npy` file (`numpy.save`) read in place through a
//! read-only memory map, with no text on the way.
//!
//! Element types: signed and unsigned integers of 1-8 bytes, `float32` and `float64`, either
//! byte order, C or Fortran order. Entry `(i, j)` is the arc `i -> j` (vertices numbered from
//! 0, as numpy indexes them). No arc: `inf` and NaN in float matrices, and the value of
//! `input.no_arc` when set. Weights are integers (or integral floats) unless
//! `input.weight_scale` is set: then each is multiplied by it and rounded to the nearest
//! integer. The diagonal is the length of a self-loop: a positive one never shortens a path
//! and is dropped (counted in a log line), a negative one is a negative cycle (refused).
//! Every complaint names the file, and the row and column of an entry.

use crate::common::input::{InputOptions, NoArc};
use rayon::prelude::*;
use std::path::Path;
use tuccompi::{Error, Result};

/// The element types read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Uint,
    Float,
}

/// A mapped `n × n` `.npy` matrix.
#[derive(Debug)]
pub struct NpyMatrix {
    /// Vertices (rows = columns).
    pub n: usize,
    /// The file's path, for messages and the report.
    pub name: String,
    map: memmap2::Mmap,
    /// The mapped file and its length and modification time when mapped
    /// ([`unchanged`](NpyMatrix::unchanged)).
    file: std::fs::File,
    stamp: (u64, Option<std::time::SystemTime>),
    /// Byte offset of the first element.
    offset: usize,
    kind: Kind,
    size: usize,
    big_endian: bool,
    fortran: bool,
    no_arc: Option<NoArc>,
    scale: Option<f64>,
}

/// What a pass over the matrix found.
#[derive(Debug, Clone, Default)]
pub struct MatrixStats {
    /// Arcs (off-diagonal entries with a weight).
    pub arcs: u64,
    /// Largest |weight| off the diagonal.
    pub max_abs: u64,
    /// Whether a weight off the diagonal is negative.
    pub negative: bool,
    /// Positive diagonal entries (dropped self-loops) and the row of the first.
    pub diagonal: (u64, usize),
    /// Largest rounding error of a scaled weight, and its row and column.
    pub rounding: Option<(f64, usize, usize)>,
}

/// One entry read: a weight (scaled, rounded), no arc, or why it cannot be one.
#[derive(Clone, Copy)]
enum Cell {
    Arc(i64, f64),
    None,
    Bad(Bad),
}

/// Why an entry is not a weight (its message is made only for the entry reported).
#[derive(Debug, Clone, Copy)]
enum Bad {
    /// An integer beyond 2^62.
    Range(i128),
    /// A float beyond 2^62.
    FloatRange(f64),
    /// A scaled value beyond 2^62: the entry and the product.
    Scaled(f64, f64),
    /// A fraction without `input.weight_scale`.
    Fraction(f64),
    /// -inf.
    NegInf,
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Range(v) => write!(
                f,
                "{v} is out of range (|weight| below 2^62; no plugin takes more)"
            ),
            Bad::FloatRange(v) => write!(
                f,
                "{v} is out of range (|weight| below 2^62; no plugin takes more)"
            ),
            Bad::Scaled(x, y) => write!(
                f,
                "{x} x input.weight_scale = {y:e} is out of range (|weight| below 2^62)"
            ),
            Bad::Fraction(v) => write!(
                f,
                "{v} is not an integer; tuccompi computes exact integer distances: set \
                 input.weight_scale (1000 keeps three decimals)"
            ),
            Bad::NegInf => write!(f, "-inf is not a weight (inf or NaN mean no arc)"),
        }
    }
}

impl NpyMatrix {
    /// Map `path` and check its header: a 2-D square array of a numeric type, as long as its
    /// header says.
    pub fn open(path: &Path, options: &InputOptions) -> Result<NpyMatrix> {
        let name = path.display().to_string();
        let bad = |msg: String| Error::Input(format!("{name}: {msg}"));
        let file = tuccompi::input::open(path, "input.path", "a .npy file", None)?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if meta.len() == 0 {
            return Err(bad("the file is empty".into()));
        }
        // SAFETY: memmap2's condition is that nobody changes the file while it is mapped.
        // This is the user's input file, mapped read-only while `prepare` scans it and the
        // plugin reads its values (a CPU half's copy, or fw-blocked's GPU half converting it
        // strip by strip during the upload; the mapping is dropped with this value). A file
        // truncated by another process meanwhile would end the process with SIGBUS, as it
        // would any program that maps its input (numpy's mmap_mode too); one rewritten in
        // place is caught by `unchanged`, which the readers call after their last read.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| bad(format!("mapping it failed: {e}")))?;
        let mut rest: &[u8] = &map[..];
        tuccompi::npy::header_fits(rest).map_err(|e| {
            bad(format!(
                "not a .npy file that tuccompi can read ({e}); write it with numpy.save"
            ))
        })?;
        let npy = npyz::NpyFile::new(&mut rest).map_err(|e| {
            bad(format!(
                "not a .npy file that tuccompi can read ({e}); write the matrix with \
                 numpy.save(\"m.npy\", matrix)"
            ))
        })?;
        let shape = npy.shape().to_vec();
        let dtype = npy.dtype();
        let fortran = npy.order() == npyz::Order::Fortran;
        drop(npy);
        let offset = map.len() - rest.len();
        let npyz::DType::Plain(ty) = &dtype else {
            return Err(bad(format!(
                "dtype {} is a structured type; save a plain numeric n x n matrix",
                dtype.descr()
            )));
        };
        let kind = match ty.type_char() {
            npyz::TypeChar::Int => Kind::Int,
            npyz::TypeChar::Uint => Kind::Uint,
            npyz::TypeChar::Float if matches!(ty.size_field(), 4 | 8) => Kind::Float,
            _ => {
                return Err(bad(format!(
                    "dtype {} is not a matrix of weights; use integers (int8..int64, \
                     uint8..uint64) or float32/float64 (matrix.astype(numpy.float64))",
                    dtype.descr()
                )))
            }
        };
        let size = ty.size_field() as usize;
        let big_endian = ty.endianness() == npyz::Endianness::Big && size > 1;
        let n = match shape[..] {
            [r, c] if r == c => r as usize,
            [r, c] => {
                return Err(bad(format!(
                    "the matrix is {r} x {c}; an adjacency matrix is square (n x n)"
                )))
            }
            _ => {
                return Err(bad(format!(
                    "an array of shape {shape:?}; a dense input is a 2-D n x n matrix \
                     (a 1-D array of n*n values: save matrix.reshape(n, n))"
                )))
            }
        };
        if n == 0 {
            return Err(bad("the matrix is 0 x 0: the graph has no vertices".into()));
        }
        let need = (n as u128) * (n as u128) * size as u128;
        let have = rest.len() as u128;
        if have != need {
            return Err(bad(format!(
                "the header declares a {n} x {n} matrix of {} ({need} bytes after the header), \
                 the file holds {have}: it is {}",
                dtype.descr(),
                if have < need {
                    "truncated (copy it again)"
                } else {
                    "longer than its header says"
                }
            )));
        }
        let stamp = (meta.len(), meta.modified().ok());
        Ok(NpyMatrix {
            n,
            name,
            map,
            file,
            stamp,
            offset,
            kind,
            size,
            big_endian,
            fortran,
            no_arc: options.no_arc,
            scale: options.weight_scale,
        })
    }

    /// An error unless the file still has the length and modification time it had when it was
    /// mapped: values read after the scan came from the file the scan checked.
    pub fn unchanged(&self) -> Result<()> {
        let now = self
            .file
            .metadata()
            .map(|m| (m.len(), m.modified().ok()))
            .map_err(|e| Error::io(Path::new(&self.name), e))?;
        if now != self.stamp {
            return Err(Error::Input(format!(
                "{}: the file changed while tuccompi was reading it (its length or modification \
                 time differs from when the run started); run again once nothing writes it",
                self.name
            )));
        }
        Ok(())
    }

    /// An integer entry as a weight.
    #[inline(always)]
    fn int_cell(&self, v: i128) -> Cell {
        match self.no_arc {
            Some(NoArc::Int(a)) if v == a as i128 => return Cell::None,
            Some(NoArc::Float(a)) if v as f64 == a => return Cell::None,
            _ => {}
        }
        match self.scale {
            None if v.unsigned_abs() < 1 << 62 => Cell::Arc(v as i64, 0.0),
            None => Cell::Bad(Bad::Range(v)),
            Some(s) => scaled(v as f64, s),
        }
    }

    /// A float entry as a weight.
    #[inline(always)]
    fn float_cell(&self, v: f64) -> Cell {
        if v.is_nan() || v == f64::INFINITY {
            return Cell::None;
        }
        match self.no_arc {
            Some(NoArc::Int(a)) if v == a as f64 => return Cell::None,
            Some(NoArc::Float(a)) if v == a => return Cell::None,
            _ => {}
        }
        if v == f64::NEG_INFINITY {
            return Cell::Bad(Bad::NegInf);
        }
        match self.scale {
            Some(s) => scaled(v, s),
            None if v.fract() != 0.0 => Cell::Bad(Bad::Fraction(v)),
            None if v.abs() >= (1u64 << 62) as f64 => Cell::Bad(Bad::FloatRange(v)),
            None => Cell::Arc(v as i64, 0.0),
        }
    }

    /// The file's bytes from row `i`'s first entry on, and the byte step from one entry of the
    /// row to the next. C order: the row is contiguous; Fortran order: entry (i, j) is element
    /// j·n + i.
    #[inline(always)]
    fn row_bytes(&self, i: usize) -> (&[u8], usize) {
        let (n, size) = (self.n, self.size);
        let (start, step) = if self.fortran {
            (self.offset + i * size, n * size)
        } else {
            (self.offset + i * n * size, size)
        };
        (&self.map[start..], step)
    }

    /// Call `f(j, cell)` for every entry of row `i`, in column order. The element type is
    /// matched once per row, so each type's loop is compiled on its own.
    #[inline(always)]
    fn for_row(&self, i: usize, mut f: impl FnMut(usize, Cell)) {
        let n = self.n;
        let (data, step) = self.row_bytes(i);
        macro_rules! each {
            ($t:ty, $cell:ident, $conv:expr) => {{
                const S: usize = std::mem::size_of::<$t>();
                for j in 0..n {
                    let at = j * step;
                    let mut b = [0u8; S];
                    b.copy_from_slice(&data[at..at + S]);
                    let v = if self.big_endian {
                        <$t>::from_be_bytes(b)
                    } else {
                        <$t>::from_le_bytes(b)
                    };
                    f(j, self.$cell($conv(v)));
                }
            }};
        }
        match (self.kind, self.size) {
            (Kind::Int, 1) => each!(i8, int_cell, i128::from),
            (Kind::Int, 2) => each!(i16, int_cell, i128::from),
            (Kind::Int, 4) => each!(i32, int_cell, i128::from),
            (Kind::Int, 8) => each!(i64, int_cell, i128::from),
            (Kind::Uint, 1) => each!(u8, int_cell, i128::from),
            (Kind::Uint, 2) => each!(u16, int_cell, i128::from),
            (Kind::Uint, 4) => each!(u32, int_cell, i128::from),
            (Kind::Uint, 8) => each!(u64, int_cell, i128::from),
            (Kind::Float, 4) => each!(f32, float_cell, f64::from),
            (Kind::Float, 8) => each!(f64, float_cell, f64::from),
            // `open` admits no other (kind, size).
            _ => (0..n).for_each(|j| f(j, Cell::None)),
        }
    }

    fn entry_error(&self, i: usize, j: usize, msg: &str) -> Error {
        Error::Input(format!("{}: row {i}, column {j}: {msg}", self.name))
    }

    /// One pass over every entry (rows in parallel): checks each and returns what the plugins
    /// need to choose their value type. The first bad entry (by row) is the error.
    ///
    /// O(n²).
    pub fn scan(&self) -> Result<MatrixStats> {
        let rows: Vec<std::result::Result<MatrixStats, Error>> = (0..self.n)
            .into_par_iter()
            .map_init(Vec::new, |buf, i| match self.scan_int_row(i, buf) {
                Some(s) => Ok(s),
                None => self.scan_row(i),
            })
            .collect();
        let mut all = MatrixStats::default();
        for r in rows {
            let s = r?;
            all.arcs += s.arcs;
            all.max_abs = all.max_abs.max(s.max_abs);
            all.negative |= s.negative;
            if all.diagonal.0 == 0 {
                all.diagonal.1 = s.diagonal.1;
            }
            all.diagonal.0 += s.diagonal.0;
            if let Some(r) = s.rounding {
                if all.rounding.is_none_or(|(e, _, _)| r.0 > e) {
                    all.rounding = Some(r);
                }
            }
        }
        if all.diagonal.0 > 0 {
            tracing::info!(
                "{}: {} positive diagonal entries (self-loops, the first in row {}) dropped: \
                 a path from a vertex to itself has length 0",
                self.name,
                all.diagonal.0,
                all.diagonal.1
            );
        }
        if let (Some(scale), Some((err, i, j))) = (self.scale, all.rounding) {
            tracing::info!(
                "{}: weights x input.weight_scale {scale} rounded to integers; the largest \
                 rounding error is {err} (row {i}, column {j})",
                self.name
            );
        }
        Ok(all)
    }

    /// The no-arc value of the integer fast paths ([`int_row`](NpyMatrix::int_row)): `Some(None)`
    /// for none, `None` where they do not apply (weights scaled, a float no_arc).
    fn int_no_arc(&self) -> Option<Option<i64>> {
        match (self.scale, self.no_arc) {
            (None, None) => Some(None),
            (None, Some(NoArc::Int(a))) => Some(Some(a)),
            _ => None,
        }
    }

    /// Row `i` as i64 into `buf`, for the fast paths of integer matrices of at most 4-byte
    /// elements (every value a valid weight); `false` where they do not apply.
    fn int_row(&self, i: usize, buf: &mut Vec<i64>) -> bool {
        if self.kind == Kind::Float || self.size > 4 || self.int_no_arc().is_none() {
            return false;
        }
        let (n, size) = (self.n, self.size);
        let (data, step) = self.row_bytes(i);
        buf.clear();
        macro_rules! each {
            ($t:ty) => {{
                const S: usize = std::mem::size_of::<$t>();
                let at = |c: &[u8]| c.try_into().unwrap_or([0u8; S]);
                if !self.fortran && !self.big_endian {
                    // Contiguous little-endian (numpy's default): a loop the compiler vectorizes.
                    let row = data[..n * S].chunks_exact(S);
                    buf.extend(row.map(|c| <$t>::from_le_bytes(at(c)) as i64));
                } else {
                    buf.extend((0..n).map(|j| at(&data[j * step..j * step + S])).map(|b| {
                        (if self.big_endian {
                            <$t>::from_be_bytes(b)
                        } else {
                            <$t>::from_le_bytes(b)
                        }) as i64
                    }));
                }
            }};
        }
        match (self.kind, size) {
            (Kind::Int, 1) => each!(i8),
            (Kind::Int, 2) => each!(i16),
            (Kind::Int, 4) => each!(i32),
            (Kind::Uint, 1) => each!(u8),
            (Kind::Uint, 2) => each!(u16),
            (Kind::Uint, 4) => each!(u32),
            _ => return false,
        }
        true
    }

    /// [`scan_row`](NpyMatrix::scan_row)'s fast path for an integer row ([`int_row`]
    /// (NpyMatrix::int_row)): loops without a branch per entry; `None` where it does not apply
    /// or the row has an error (a negative diagonal entry: `scan_row` names it).
    fn scan_int_row(&self, i: usize, buf: &mut Vec<i64>) -> Option<MatrixStats> {
        let na = self.int_no_arc()?.unwrap_or(i64::MIN);
        if !self.int_row(i, buf) {
            return None;
        }
        let (mut arcs, mut max_abs, mut negative) = (0u64, 0u64, false);
        for part in [&buf[..i], &buf[i + 1..]] {
            for &v in part {
                let arc = v != na;
                arcs += arc as u64;
                max_abs = max_abs.max(if arc { v.unsigned_abs() } else { 0 });
                negative |= arc & (v < 0);
            }
        }
        let d = buf[i];
        if d != na && d < 0 {
            return None;
        }
        Some(MatrixStats {
            arcs,
            max_abs,
            negative,
            diagonal: ((d != na && d > 0) as u64, i),
            rounding: None,
        })
    }

    /// Check row `i`'s entries: the row's stats or its first bad entry.
    fn scan_row(&self, i: usize) -> Result<MatrixStats> {
        let mut s = MatrixStats::default();
        let mut bad: Option<Error> = None;
        self.for_row(i, |j, cell| {
            if bad.is_some() {
                return;
            }
            match cell {
                Cell::None => {}
                Cell::Bad(m) => bad = Some(self.entry_error(i, j, &m.to_string())),
                Cell::Arc(w, err) => {
                    if self.scale.is_some() && s.rounding.is_none_or(|(e, _, _)| err > e) {
                        s.rounding = Some((err, i, j));
                    }
                    if i != j {
                        s.arcs += 1;
                        s.max_abs = s.max_abs.max(w.unsigned_abs());
                        s.negative |= w < 0;
                    } else if w < 0 {
                        bad = Some(self.entry_error(
                            i,
                            j,
                            &format!(
                                "a negative diagonal entry ({w}) is a negative cycle \
                                 (a self-loop); shortest paths are undefined"
                            ),
                        ));
                    } else if w > 0 {
                        if s.diagonal.0 == 0 {
                            s.diagonal.1 = i;
                        }
                        s.diagonal.0 += 1;
                    }
                }
            }
        });
        match bad {
            Some(e) => Err(e),
            None => Ok(s),
        }
    }

    /// Bytes per element in the file.
    pub fn element_bytes(&self) -> usize {
        self.size
    }

    /// Fill `out` (`n × n`, row-major) with `arc(w)` for each arc off the diagonal, `none` where
    /// there is no arc and `zero` on the diagonal; rows in parallel. Call after
    /// [`scan`](NpyMatrix::scan) accepted every entry.
    ///
    /// O(n²).
    pub fn fill<T: Copy + Send + Sync>(
        &self,
        out: &mut [T],
        zero: T,
        none: T,
        arc: impl Fn(i64) -> T + Sync,
    ) {
        self.fill_rows(0..self.n, out, zero, none, arc);
    }

    /// [`fill`](NpyMatrix::fill) for rows `rows` only: `out` holds them packed (`rows.len() ×
    /// n`), so a consumer can take the matrix a piece at a time straight from the file.
    pub fn fill_rows<T: Copy + Send + Sync>(
        &self,
        rows: std::ops::Range<usize>,
        out: &mut [T],
        zero: T,
        none: T,
        arc: impl Fn(i64) -> T + Sync,
    ) {
        let n = self.n;
        let na = self.int_no_arc().flatten().unwrap_or(i64::MIN);
        out[..rows.len() * n]
            .par_chunks_mut(n.max(1))
            .zip(rows)
            .for_each_init(Vec::new, |buf, (row, i)| {
                if self.int_row(i, buf) {
                    // Integer fast path: every value is a weight or no_arc.
                    for (o, &v) in row.iter_mut().zip(buf.iter()) {
                        *o = if v == na { none } else { arc(v) };
                    }
                    row[i] = zero;
                    return;
                }
                self.for_row(i, |j, cell| {
                    row[j] = match cell {
                        _ if i == j => zero,
                        Cell::Arc(w, _) => arc(w),
                        _ => none,
                    };
                });
            });
    }

    /// The arcs off the diagonal as an edge list (for a negative-cycle check). O(n²).
    pub fn arcs(&self) -> Vec<(u32, u32, i64)> {
        let n = self.n;
        (0..n)
            .into_par_iter()
            .flat_map_iter(|i| {
                let mut row = Vec::new();
                self.for_row(i, |j, cell| {
                    if let (Cell::Arc(w, _), false) = (cell, i == j) {
                        row.push((i as u32, j as u32, w));
                    }
                });
                row
            })
            .collect()
    }
}

/// `x · scale` rounded to the nearest integer, with the rounding error.
#[inline(always)]
fn scaled(x: f64, scale: f64) -> Cell {
    let y = x * scale;
    if y.abs() >= (1u64 << 62) as f64 {
        return Cell::Bad(Bad::Scaled(x, y));
    }
    let w = y.round();
    Cell::Arc(w as i64, (y - w).abs())
}

#[cfg(test)]
mod test {
    use super::*;

    /// A 2 x 2 int32 `.npy`, written by npyz.
    fn two_by_two(v: [i32; 4]) -> Vec<u8> {
        use npyz::WriterBuilder;
        let mut b = Vec::new();
        let mut w = npyz::WriteOptions::<i32>::new()
            .default_dtype()
            .shape(&[2, 2])
            .writer(&mut b)
            .begin_nd()
            .unwrap();
        w.extend(v).unwrap();
        w.finish().unwrap();
        b
    }

    #[test]
    fn a_file_rewritten_after_the_scan_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.npy");
        std::fs::write(&p, two_by_two([0, 3, 0, 0])).unwrap();
        let m = NpyMatrix::open(&p, &InputOptions::default()).unwrap();
        let no_arc = InputOptions {
            no_arc: Some(NoArc::Int(0)),
            ..Default::default()
        };
        assert_eq!(
            NpyMatrix::open(&p, &no_arc).unwrap().scan().unwrap().arcs,
            1
        );
        m.unchanged().unwrap();
        // Rewritten in place, same length, a later modification time.
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        std::io::Write::write_all(&mut &f, &two_by_two([0, 9, 9, 0])).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        f.set_modified(later).unwrap();
        let e = m.unchanged().unwrap_err().to_string();
        assert!(
            e.contains("m.npy: the file changed while tuccompi was reading it"),
            "{e}"
        );
    }
}
