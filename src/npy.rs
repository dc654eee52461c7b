//! numpy arrays in and out for any plugin: the scalar types a `.npy` file holds ([`NpyType`],
//! [`Element`]) and [`read`], which maps a `.npy` input of a given element type and returns
//! its values with their shape. The rows sink ([`crate::sink::NpyRows`]) writes the same
//! types, so a plugin never writes or parses a `.npy` header itself.
//!
//! [`read`] maps the file read-only (no second copy in the page cache), checks its header
//! against what the plugin asked for (element type, C order, number of dimensions) and its
//! length against the header, and decodes the values. Every complaint names the
//! file and says how to save it so that it reads. O(file size) time, one copy of the data.

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Element type of a `.npy` array: the integers of 1 to 8 bytes and the IEEE floats, stored
/// little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NpyType {
    /// `<i1` (`int8`)
    I8,
    /// `|u1` (`uint8`)
    U8,
    /// `<i2` (`int16`)
    I16,
    /// `<u2` (`uint16`)
    U16,
    /// `<i4` (`int32`)
    I32,
    /// `<u4` (`uint32`)
    U32,
    /// `<i8` (`int64`)
    I64,
    /// `<u8` (`uint64`)
    U64,
    /// `<f4` (`float32`)
    F32,
    /// `<f8` (`float64`)
    F64,
}

impl NpyType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            NpyType::I8 | NpyType::U8 => 1,
            NpyType::I16 | NpyType::U16 => 2,
            NpyType::I32 | NpyType::U32 | NpyType::F32 => 4,
            NpyType::I64 | NpyType::U64 | NpyType::F64 => 8,
        }
    }

    /// numpy's name of the type (`float32`), for messages.
    pub fn name(self) -> &'static str {
        match self {
            NpyType::I8 => "int8",
            NpyType::U8 => "uint8",
            NpyType::I16 => "int16",
            NpyType::U16 => "uint16",
            NpyType::I32 => "int32",
            NpyType::U32 => "uint32",
            NpyType::I64 => "int64",
            NpyType::U64 => "uint64",
            NpyType::F32 => "float32",
            NpyType::F64 => "float64",
        }
    }

    fn char(self) -> npyz::TypeChar {
        match self {
            NpyType::I8 | NpyType::I16 | NpyType::I32 | NpyType::I64 => npyz::TypeChar::Int,
            NpyType::U8 | NpyType::U16 | NpyType::U32 | NpyType::U64 => npyz::TypeChar::Uint,
            NpyType::F32 | NpyType::F64 => npyz::TypeChar::Float,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A scalar type that `.npy` files hold and plugins read and write: `u8`..`u64`, `i8`..`i64`,
/// `f32`, `f64`.
pub trait Element:
    Copy + Send + Sync + PartialEq + std::fmt::Debug + npyz::AutoSerialize + sealed::Sealed + 'static
{
    /// The `.npy` type of `Self`.
    const TYPE: NpyType;
    /// Append the little-endian bytes of `self` to `out`.
    fn put_le(self, out: &mut Vec<u8>);
    /// The value whose bytes are `bytes` (`TYPE.size()` long) in the given byte order.
    fn from_bytes(bytes: &[u8], big_endian: bool) -> Self;
}

macro_rules! element {
    ($($t:ty => $v:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: NpyType = NpyType::$v;
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_bytes(bytes: &[u8], big_endian: bool) -> Self {
                let b = bytes.try_into().expect("one element's bytes");
                if big_endian { <$t>::from_be_bytes(b) } else { <$t>::from_le_bytes(b) }
            }
        }
    )*};
}

element!(i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64,
         u64 => U64, f32 => F32, f64 => F64);

/// A `.npy` array read whole: its shape and its values in C order (row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Array<T> {
    /// The file it came from (for messages).
    pub path: PathBuf,
    /// The shape, as numpy gives it (`()` for a scalar).
    pub shape: Vec<usize>,
    /// The values, `shape.iter().product()` of them, last index fastest.
    pub data: Vec<T>,
}

impl<T: Element> Array<T> {
    /// Rows of a 2-D array (its first dimension; the length of a 1-D one).
    pub fn rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(1)
    }
    /// Columns of a 2-D array (1 for a 1-D one).
    pub fn cols(&self) -> usize {
        self.shape.get(1..).map_or(1, |d| d.iter().product())
    }
    /// Row `i` of a 2-D array.
    pub fn row(&self, i: usize) -> &[T] {
        let c = self.cols();
        &self.data[i * c..(i + 1) * c]
    }
}

/// Read the `.npy` file at `path` as an array of `T` with `dims` dimensions (`None`: any).
///
/// The file's type must be `T`'s (either byte order), in C order; the error names the file and
/// what to change otherwise (`numpy.save(path, a.astype(numpy.float32))`,
/// `numpy.ascontiguousarray`). A file shorter than its header says is an error naming the
/// bytes missing. O(file size).
pub fn read<T: Element>(path: &Path, dims: Option<usize>) -> Result<Array<T>> {
    let bad = |msg: String| Error::Input(format!("{}: {msg}", path.display()));
    // Only a regular file, checked before anything is read ([`crate::input::open`]).
    let file = crate::input::open(path, "the path", "a .npy file (numpy.save)", None)?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if meta.len() == 0 {
        return Err(bad("the file is empty; write it with numpy.save".into()));
    }
    // SAFETY: memmap2's condition is that nobody changes the file while it is mapped. The
    // mapping lives only inside this function, while the values are copied out; a file cut
    // short by another process meanwhile would end the process with SIGBUS, as it would any
    // program that maps its input (numpy's mmap_mode too).
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| bad(format!("mapping it failed: {e}")))?;
    let mut rest: &[u8] = &map[..];
    header_fits(rest).map_err(|e| {
        bad(format!(
            "not a .npy file that tuccompi can read ({e}); write it with numpy.save"
        ))
    })?;
    let npy = npyz::NpyFile::new(&mut rest).map_err(|e| {
        bad(format!(
            "not a .npy file that tuccompi can read ({e}); write it with numpy.save(\"{}\", array)",
            path.display()
        ))
    })?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let dtype = npy.dtype();
    let fortran = npy.order() == npyz::Order::Fortran;
    drop(npy);
    let want = T::TYPE;
    let convert = format!(
        "save it as {0}: numpy.save(\"{1}\", numpy.ascontiguousarray(a, dtype=numpy.{0}))",
        want.name(),
        path.display()
    );
    let npyz::DType::Plain(ty) = &dtype else {
        return Err(bad(format!(
            "dtype {} is a structured type, this plugin reads {}; {convert}",
            dtype.descr(),
            want.name()
        )));
    };
    if ty.type_char() != want.char() || ty.size_field() as usize != want.size() {
        return Err(bad(format!(
            "dtype {} is not {} ({}), which this plugin reads; {convert}",
            dtype.descr(),
            want.name(),
            T::TYPE.descr_le()
        )));
    }
    if fortran && shape.len() > 1 {
        return Err(bad(format!(
            "the array is in Fortran order (column-major); this plugin reads C order: {convert}"
        )));
    }
    if let Some(d) = dims.filter(|&d| d != shape.len()) {
        return Err(bad(format!(
            "an array of shape {shape:?} ({} dimensions), this plugin reads {d}",
            shape.len()
        )));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(format!("the shape {shape:?} overflows")))?;
    let need = count as u128 * want.size() as u128;
    let have = rest.len() as u128;
    if have != need {
        return Err(bad(format!(
            "the header declares shape {shape:?} of {} ({need} bytes after the header), the \
             file holds {have}: it is {}",
            want.name(),
            if have < need {
                "truncated (write it again)"
            } else {
                "longer than its header says"
            }
        )));
    }
    let big = ty.endianness() == npyz::Endianness::Big && want.size() > 1;
    let mut data = crate::reserved::<T>(count, &format!("{}", path.display()))?;
    data.extend(
        rest.chunks_exact(want.size())
            .map(|b| T::from_bytes(b, big)),
    );
    Ok(Array {
        path: path.to_path_buf(),
        shape,
        data,
    })
}

/// Brackets a `.npy` header may nest: a plain array's nests 2 (`{'shape': (2, 3)}`), a record
/// type's a few more. npyz's parser of the header (py_literal) takes time exponential in the
/// depth: 12 braces take seconds, 16 minutes.
const MAX_HEADER_DEPTH: usize = 8;

/// An error unless the header that `bytes` (a whole `.npy` file) begins with fits in it and
/// nests at most `MAX_HEADER_DEPTH` (8) brackets. Call it before `npyz::NpyFile::new`, which
/// allocates the length a header declares before reading it (up to 4 GiB from a version 2 or 3
/// header: a 12-byte file would ask for that much), and whose parser would take minutes over a
/// 30-byte header of nested braces. Anything else wrong with the header is left for npyz.
pub fn header_fits(bytes: &[u8]) -> std::result::Result<(), String> {
    let field = |at: usize, len: usize| -> Option<u64> {
        let b = bytes.get(at..at + len)?;
        Some(b.iter().rev().fold(0, |v, &x| v << 8 | u64::from(x)))
    };
    // The magic and version, then the header's length: 2 bytes (version 1), 4 (2 and 3).
    let (start, len) = match (bytes.starts_with(b"\x93NUMPY"), bytes.get(6)) {
        (true, Some(1)) => (10, field(8, 2)),
        (true, Some(2 | 3)) => (12, field(8, 4)),
        _ => return Ok(()),
    };
    let Some(len) = len else {
        return Ok(());
    };
    if start + len > bytes.len() as u64 {
        return Err(format!(
            "its header declares {len} bytes, and {} follow",
            bytes.len() as u64 - start
        ));
    }
    let mut depth = 0usize;
    for &b in &bytes[start as usize..(start + len) as usize] {
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_HEADER_DEPTH {
            return Err(format!(
                "its header nests brackets more than {MAX_HEADER_DEPTH} deep; numpy writes 2"
            ));
        }
    }
    Ok(())
}

impl NpyType {
    /// numpy's little-endian type string (`<f4`).
    pub fn descr_le(self) -> String {
        let c = match self.char() {
            npyz::TypeChar::Int => 'i',
            npyz::TypeChar::Uint => 'u',
            _ => 'f',
        };
        let order = if self.size() == 1 { '|' } else { '<' };
        format!("{order}{c}{}", self.size())
    }
}

#[cfg(test)]
mod test;
