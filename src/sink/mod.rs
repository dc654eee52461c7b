//! Sinks: where task results go as chunks finish.
//!
//! [`NpyRows`] is a `.npy` matrix whose rows are written at their final offsets by whichever
//! unit (or MPI rank) computed them, in any order: the header comes from `npyz`, the file is
//! pre-sized, and rows go in with positional writes, so no process ever holds the matrix.

use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Element type of an [`NpyRows`] matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyType {
    /// `<u4`
    U32,
    /// `<u8`
    U64,
    /// `<i8`
    I64,
}

impl NpyType {
    fn size(self) -> usize {
        match self {
            NpyType::U32 => 4,
            NpyType::U64 | NpyType::I64 => 8,
        }
    }
}

/// A `rows × cols` `.npy` matrix written row by row at fixed offsets.
#[derive(Debug)]
pub struct NpyRows {
    file: File,
    path: PathBuf,
    header: u64,
    cols: usize,
    ty: NpyType,
}

fn header_bytes(rows: usize, cols: usize, ty: NpyType) -> Result<Vec<u8>> {
    match ty {
        NpyType::U32 => header_of::<u32>(rows, cols),
        NpyType::U64 => header_of::<u64>(rows, cols),
        NpyType::I64 => header_of::<i64>(rows, cols),
    }
}

/// npyz's header for a `rows × cols` array of `T`: begin an array into a byte vector and stop
/// before any element (dropping the writer ignores the element count).
fn header_of<T: npyz::AutoSerialize>(rows: usize, cols: usize) -> Result<Vec<u8>> {
    use npyz::WriterBuilder;
    let mut bytes = Vec::new();
    let writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(&[rows as u64, cols as u64])
        .writer(&mut bytes)
        .begin_nd()
        .map_err(|e| Error::Input(format!("npy header: {e}")))?;
    drop(writer);
    Ok(bytes)
}

impl NpyRows {
    /// Create (truncate) `path` for a `rows × cols` matrix of `ty`.
    pub fn create(path: &Path, rows: usize, cols: usize, ty: NpyType) -> Result<Self> {
        let header = header_bytes(rows, cols, ty)?;
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        file.write_all_at(&header, 0)
            .map_err(|e| Error::io(path, e))?;
        let total = header.len() as u64 + (rows as u64) * (cols as u64) * ty.size() as u64;
        file.set_len(total).map_err(|e| Error::io(path, e))?;
        Ok(NpyRows {
            file,
            path: path.into(),
            header: header.len() as u64,
            cols,
            ty,
        })
    }

    /// Open a matrix another process created with the same shape (MPI ranks other than 0).
    pub fn open(path: &Path, rows: usize, cols: usize, ty: NpyType) -> Result<Self> {
        let header = header_bytes(rows, cols, ty)?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(NpyRows {
            file,
            path: path.into(),
            header: header.len() as u64,
            cols,
            ty,
        })
    }

    /// `distances.npy` under `dir`: created by the root node, opened by the others (which
    /// write their rows into the same file).
    pub fn distances(
        dir: &Path,
        is_root: bool,
        rows: usize,
        cols: usize,
        ty: NpyType,
    ) -> Result<Self> {
        let path = dir.join("distances.npy");
        if is_root {
            Self::create(&path, rows, cols, ty)
        } else {
            Self::open(&path, rows, cols, ty)
        }
    }

    fn at(&self, row: usize, bytes: &[u8]) -> Result<()> {
        let off = self.header + (row as u64) * (self.cols as u64) * self.ty.size() as u64;
        self.file
            .write_all_at(bytes, off)
            .map_err(|e| Error::io(&self.path, e))
    }

    fn write_le<T: Copy, const N: usize>(
        &self,
        row: usize,
        values: &[T],
        ty: NpyType,
        le: fn(T) -> [u8; N],
    ) -> Result<()> {
        debug_assert!(self.ty == ty && values.len() == self.cols);
        let bytes: Vec<u8> = values.iter().flat_map(|&v| le(v)).collect();
        self.at(row, &bytes)
    }

    /// Write row `row` (length `cols`) of a u32 matrix.
    pub fn write_u32(&self, row: usize, values: &[u32]) -> Result<()> {
        self.write_le(row, values, NpyType::U32, u32::to_le_bytes)
    }

    /// Write row `row` of a u64 matrix.
    pub fn write_u64(&self, row: usize, values: &[u64]) -> Result<()> {
        self.write_le(row, values, NpyType::U64, u64::to_le_bytes)
    }

    /// Write row `row` of an i64 matrix.
    pub fn write_i64(&self, row: usize, values: &[i64]) -> Result<()> {
        self.write_le(row, values, NpyType::I64, i64::to_le_bytes)
    }

    /// Flush to disk.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
}

/// Write `text` to `dir/name` atomically (temp file + rename), so a reader never sees half a file.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let dst = dir.join(name);
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &dst).map_err(|e| Error::io(&dst, e))
}

#[cfg(test)]
mod test;
