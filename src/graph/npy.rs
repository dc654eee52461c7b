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

use crate::config::{InputOptions, NoArc};
use crate::{Error, Result};
use rayon::prelude::*;
use std::path::Path;

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
enum Cell {
    Arc(i64, f64),
    None,
    Bad(String),
}

impl NpyMatrix {
    /// Map `path` and check its header: a 2-D square array of a numeric type, as long as its
    /// header says.
    pub fn open(path: &Path, options: &InputOptions) -> Result<NpyMatrix> {
        let name = path.display().to_string();
        let bad = |msg: String| Error::Input(format!("{name}: {msg}"));
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            return Err(bad(
                "not a plain file; input.path must name a .npy file".into()
            ));
        }
        if meta.len() == 0 {
            return Err(bad("the file is empty".into()));
        }
        // SAFETY: memmap2's condition is that nobody changes the file while it is mapped.
        // This is the user's input file, mapped read-only for the few moments `prepare`
        // copies it into the plugin's own matrix (the mapping is dropped with this value);
        // a file truncated by another process during those moments would end the process
        // with SIGBUS, as it would any program that maps its input (numpy's mmap_mode too).
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| bad(format!("mapping it failed: {e}")))?;
        let mut rest: &[u8] = &map[..];
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
        Ok(NpyMatrix {
            n,
            name,
            map,
            offset,
            kind,
            size,
            big_endian,
            fortran,
            no_arc: options.no_arc,
            scale: options.weight_scale,
        })
    }

    /// The raw bytes of entry (i, j).
    #[inline(always)]
    fn raw(&self, i: usize, j: usize) -> &[u8] {
        let idx = if self.fortran {
            j * self.n + i
        } else {
            i * self.n + j
        };
        let at = self.offset + idx * self.size;
        &self.map[at..at + self.size]
    }

    #[inline(always)]
    fn int(&self, b: &[u8]) -> i128 {
        let mut a = [0u8; 8];
        let neg = self.kind == Kind::Int
            && (if self.big_endian {
                b[0]
            } else {
                b[b.len() - 1]
            }) & 0x80
                != 0;
        if neg {
            a = [0xff; 8];
        }
        if self.big_endian {
            for (k, &x) in b.iter().rev().enumerate() {
                a[k] = x;
            }
        } else {
            a[..b.len()].copy_from_slice(b);
        }
        let u = u64::from_le_bytes(a);
        if self.kind == Kind::Int {
            u as i64 as i128
        } else {
            u as i128
        }
    }

    #[inline(always)]
    fn float(&self, b: &[u8]) -> f64 {
        match (self.size, self.big_endian) {
            (4, false) => f32::from_le_bytes(b.try_into().unwrap_or_default()) as f64,
            (4, true) => f32::from_be_bytes(b.try_into().unwrap_or_default()) as f64,
            (_, false) => f64::from_le_bytes(b.try_into().unwrap_or_default()),
            (_, true) => f64::from_be_bytes(b.try_into().unwrap_or_default()),
        }
    }

    /// Entry (i, j) as a weight.
    #[inline(always)]
    fn cell(&self, i: usize, j: usize) -> Cell {
        let b = self.raw(i, j);
        let x = match self.kind {
            Kind::Int | Kind::Uint => {
                let v = self.int(b);
                match self.no_arc {
                    Some(NoArc::Int(a)) if v == a as i128 => return Cell::None,
                    Some(NoArc::Float(a)) if v as f64 == a => return Cell::None,
                    _ => {}
                }
                match self.scale {
                    None if v.unsigned_abs() < 1 << 62 => return Cell::Arc(v as i64, 0.0),
                    None => {
                        return Cell::Bad(format!(
                            "{v} is out of range (|weight| below 2^62; no plugin takes more)"
                        ))
                    }
                    Some(_) => v as f64,
                }
            }
            Kind::Float => {
                let v = self.float(b);
                if v.is_nan() || v == f64::INFINITY {
                    return Cell::None;
                }
                if let Some(a) = self.no_arc {
                    let a = match a {
                        NoArc::Int(a) => a as f64,
                        NoArc::Float(a) => a,
                    };
                    if v == a {
                        return Cell::None;
                    }
                }
                if v == f64::NEG_INFINITY {
                    return Cell::Bad("-inf is not a weight (inf or NaN mean no arc)".into());
                }
                if self.scale.is_none() && v.fract() != 0.0 {
                    return Cell::Bad(format!(
                        "{v} is not an integer; tuccompi computes exact integer distances: set \
                         input.weight_scale (1000 keeps three decimals)"
                    ));
                }
                v
            }
        };
        let y = x * self.scale.unwrap_or(1.0);
        if y.abs() >= (1u64 << 62) as f64 {
            return Cell::Bad(format!(
                "{x} x input.weight_scale = {y:e} is out of range (|weight| below 2^62)"
            ));
        }
        let w = y.round();
        Cell::Arc(w as i64, (y - w).abs())
    }

    fn entry_error(&self, i: usize, j: usize, msg: &str) -> Error {
        Error::Input(format!("{}: row {i}, column {j}: {msg}", self.name))
    }

    /// One pass over every entry (rows in parallel): checks each and returns what the plugins
    /// need to choose their value type. The first bad entry (by row) is the error.
    ///
    /// O(n²).
    pub fn scan(&self) -> Result<MatrixStats> {
        let n = self.n;
        let rows: Vec<std::result::Result<MatrixStats, Error>> = (0..n)
            .into_par_iter()
            .map(|i| {
                let mut s = MatrixStats::default();
                for j in 0..n {
                    match self.cell(i, j) {
                        Cell::None => {}
                        Cell::Bad(m) => return Err(self.entry_error(i, j, &m)),
                        Cell::Arc(w, err) => {
                            if self.scale.is_some() && s.rounding.is_none_or(|(e, _, _)| err > e) {
                                s.rounding = Some((err, i, j));
                            }
                            if i == j {
                                if w < 0 {
                                    return Err(self.entry_error(
                                        i,
                                        j,
                                        &format!(
                                            "a negative diagonal entry ({w}) is a negative \
                                             cycle (a self-loop); shortest paths are undefined"
                                        ),
                                    ));
                                }
                                if w > 0 {
                                    if s.diagonal.0 == 0 {
                                        s.diagonal.1 = i;
                                    }
                                    s.diagonal.0 += 1;
                                }
                                continue;
                            }
                            s.arcs += 1;
                            s.max_abs = s.max_abs.max(w.unsigned_abs());
                            s.negative |= w < 0;
                        }
                    }
                }
                Ok(s)
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

    /// Fill `out` (`n × n`, row-major) with `arc(w)` for each arc off the diagonal, `none` where
    /// there is no arc and `zero` on the diagonal; rows in parallel. Call after [`scan`]
    /// (`NpyMatrix::scan`) accepted every entry.
    ///
    /// O(n²).
    pub fn fill<T: Copy + Send + Sync>(
        &self,
        out: &mut [T],
        zero: T,
        none: T,
        arc: impl Fn(i64) -> T + Sync,
    ) {
        let n = self.n;
        out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            for (j, c) in row.iter_mut().enumerate() {
                *c = if i == j {
                    zero
                } else {
                    match self.cell(i, j) {
                        Cell::Arc(w, _) => arc(w),
                        _ => none,
                    }
                };
            }
        });
    }

    /// The arcs off the diagonal as an edge list (for a negative-cycle check). O(n²).
    pub fn arcs(&self) -> Vec<(u32, u32, i64)> {
        let n = self.n;
        (0..n)
            .into_par_iter()
            .flat_map_iter(|i| {
                (0..n).filter_map(move |j| match self.cell(i, j) {
                    Cell::Arc(w, _) if i != j => Some((i as u32, j as u32, w)),
                    _ => None,
                })
            })
            .collect()
    }
}
