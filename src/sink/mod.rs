//! Sinks: where task results go as chunks finish.
//!
//! [`NpyRows`] is a `.npy` matrix whose rows are written at their final offsets by whichever
//! unit (or MPI rank) computed them, in any order: the header comes from `npyz`, the file is
//! pre-sized, and rows go in with positional writes, so no process ever holds the matrix.
//! [`outdir`] keeps the output directory safe (validation, lock, staging, commit) and
//! [`journal`] records finished chunks so that an interrupted run can be resumed.
//! Sinks take nothing from the layers above; the runtime and the plugins use them.

pub mod journal;
pub mod out;
pub mod outdir;
pub mod ragged;
pub mod records;
pub mod table;
pub use out::{available_memory, MemoryFiles, Out};
pub use ragged::{RaggedRow, RaggedRows};
pub use records::{Records, RecordsOut};
pub use table::{Column, Table};

use crate::{owned, Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Element type of an [`NpyRows`] matrix (every scalar type a `.npy` file holds).
pub use crate::npy::{Element, NpyType};

/// A `rows × cols` `.npy` matrix written row by row at fixed offsets.
///
/// A job declares it in `prepare` ([`NpyRows::new`]: name, shape, type; nothing is written) and
/// lists it in `Job::bulk_outputs`; the runtime checks its size against the free space and
/// opens it in the run's staging directory before the first chunk ([`NpyRows::open`]).
#[derive(Debug)]
pub struct NpyRows {
    name: String,
    header: Vec<u8>,
    rows: usize,
    cols: usize,
    ty: NpyType,
    /// The opened file and its path (for messages), and whether it is an anonymous file in
    /// memory ([`NpyRows::open_in_memory`]).
    file: OnceLock<(File, PathBuf, bool)>,
    /// While `[verify]` re-runs tasks on the CPU half: the rows they write, kept here instead
    /// of the file, so that a check never changes the outputs ([`NpyRows::capture`]).
    captured: parking_lot::Mutex<Option<std::collections::BTreeMap<usize, Vec<u8>>>>,
}

fn header_bytes(rows: usize, cols: usize, ty: NpyType) -> Result<Vec<u8>> {
    match ty {
        NpyType::I8 => header_of::<i8>(rows, cols),
        NpyType::U8 => header_of::<u8>(rows, cols),
        NpyType::I16 => header_of::<i16>(rows, cols),
        NpyType::U16 => header_of::<u16>(rows, cols),
        NpyType::I32 => header_of::<i32>(rows, cols),
        NpyType::U32 => header_of::<u32>(rows, cols),
        NpyType::I64 => header_of::<i64>(rows, cols),
        NpyType::U64 => header_of::<u64>(rows, cols),
        NpyType::F32 => header_of::<f32>(rows, cols),
        NpyType::F64 => header_of::<f64>(rows, cols),
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
    /// Declare the file `name` for a `rows × cols` matrix of `ty`; nothing is written yet.
    pub fn new(name: &str, rows: usize, cols: usize, ty: NpyType) -> Result<Self> {
        Ok(NpyRows {
            name: name.into(),
            header: header_bytes(rows, cols, ty)?,
            rows,
            cols,
            ty,
            file: OnceLock::new(),
            captured: parking_lot::Mutex::new(None),
        })
    }

    /// Declare the file `name` for a `rows × cols` matrix of `T` (`f32`, `u32`, ...); write
    /// its rows with [`write`](NpyRows::write). Nothing is written yet.
    pub fn of<T: Element>(name: &str, rows: usize, cols: usize) -> Result<Self> {
        Self::new(name, rows, cols, T::TYPE)
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns (values per row).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The element type.
    pub fn dtype(&self) -> NpyType {
        self.ty
    }

    /// The file name (in the output directory).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The element type.
    pub fn ty(&self) -> NpyType {
        self.ty
    }

    /// The path of the opened file (in the run's staging folder); `None` before the runtime
    /// opened it.
    pub fn path(&self) -> Option<&Path> {
        self.file
            .get()
            .filter(|(_, _, memory)| !memory)
            .map(|(_, p, _)| p.as_path())
    }

    /// Open the matrix as an anonymous file in memory (an in-memory run: nothing on a disk),
    /// at its full size, unwritten rows zero.
    pub fn open_in_memory(&self) -> Result<()> {
        let file = out::anonymous(&self.name)?;
        let shown = PathBuf::from(format!("{} (in memory)", self.name));
        file.write_all_at(&self.header, 0)
            .and_then(|()| file.set_len(self.bytes()))
            .map_err(|e| Error::io(&shown, e))?;
        self.file
            .set((file, shown, true))
            .map_err(|_| Error::Output(format!("{}: opened twice", self.name)))
    }

    /// A handle of the opened file (the whole `.npy`, header first), positioned at its start:
    /// for reading the finished matrix, on disk or in memory.
    pub fn reader(&self) -> Result<File> {
        use std::io::Seek;
        let (file, path, _) = self.opened()?;
        let mut f = file.try_clone().map_err(|e| Error::io(path, e))?;
        f.rewind().map_err(|e| Error::io(path, e))?;
        Ok(f)
    }

    /// The xxh3 of the whole file, as [`outdir::hash_path`] gives for a file on disk.
    pub fn hash(&self) -> Result<String> {
        let (_, path, _) = self.opened()?;
        outdir::hash_whole(self.reader()?, path)
    }

    /// Byte offset of row 0 and the bytes of one row (the journal reads a chunk's rows back
    /// to checksum them).
    pub fn row_span(&self) -> (u64, u64) {
        (
            self.header.len() as u64,
            (self.cols as u64) * self.ty.size() as u64,
        )
    }

    /// The file's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.header.len() as u64 + (self.rows as u64) * (self.cols as u64) * self.ty.size() as u64
    }

    /// Open the file in `dir`. With `create`, create it new at its full size (unwritten rows
    /// read as zero until written; anything already at its name is an error, never replaced);
    /// without, open the file an earlier run or another MPI rank created (never through a
    /// link), after checking that its header and size are this matrix's.
    pub fn open(&self, dir: &Path, create: bool) -> Result<()> {
        const RESTART: &str = "start over with --restart (it discards the unfinished run)";
        let path = dir.join(&self.name);
        let file = if create {
            let file = owned::create_new(&path, RESTART)?;
            file.write_all_at(&self.header, 0)
                .map_err(|e| Error::io(&path, e))?;
            file.set_len(self.bytes())
                .map_err(|e| Error::io(&path, e))?;
            file
        } else {
            let file = owned::reopen(&path, true, RESTART)?;
            let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
            let mut head = vec![0u8; self.header.len()];
            let header_ok = file.read_exact_at(&mut head, 0).is_ok() && head == self.header;
            let expected = format!(
                "a {} x {} matrix of {} bytes",
                self.rows,
                self.cols,
                self.bytes()
            );
            if !header_ok {
                return Err(Error::Output(format!(
                    "{}: {len} bytes that do not begin with the header of {expected}: it holds \
                     another matrix, not this run's; {RESTART}",
                    path.display()
                )));
            }
            if len != self.bytes() {
                return Err(Error::Output(format!(
                    "{}: {len} bytes, expected {expected}: the file was {} since the \
                     unfinished run sized it (a full disk, or a change by hand); {RESTART}",
                    path.display(),
                    if len < self.bytes() {
                        "cut short"
                    } else {
                        "extended"
                    }
                )));
            }
            file
        };
        self.file
            .set((file, path.clone(), false))
            .map_err(|_| Error::Output(format!("{}: opened twice", path.display())))
    }

    fn opened(&self) -> Result<&(File, PathBuf, bool)> {
        self.file.get().ok_or_else(|| {
            Error::Output(format!(
                "{}: written before the runtime opened it (a bug in tuccompi or the plugin)",
                self.name
            ))
        })
    }

    /// Start (`true`) or end (`false`) keeping the rows written in memory instead of the
    /// file; ending returns the rows kept (row index, little-endian bytes). For `[verify]`,
    /// which re-runs tasks whose rows are already in the file: the check compares, never
    /// writes.
    pub fn capture(&self, on: bool) -> Vec<(usize, Vec<u8>)> {
        let mut c = self.captured.lock();
        let kept = c
            .take()
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        if on {
            *c = Some(std::collections::BTreeMap::new());
        }
        kept
    }

    /// Row `row` as the file holds it (little-endian bytes).
    pub fn read_row(&self, row: usize) -> Result<Vec<u8>> {
        let (file, path, _) = self.opened()?;
        let (start, len) = self.row_span();
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, start + row as u64 * len)
            .map_err(|e| Error::io(path, e))?;
        Ok(bytes)
    }

    fn at(&self, row: usize, bytes: &[u8]) -> Result<()> {
        if let Some(kept) = self.captured.lock().as_mut() {
            let len = self.row_span().1.max(1) as usize;
            for (i, r) in bytes.chunks(len).enumerate() {
                kept.insert(row + i, r.to_vec());
            }
            return Ok(());
        }
        let (file, path, _) = self.opened()?;
        let off =
            self.header.len() as u64 + (row as u64) * (self.cols as u64) * self.ty.size() as u64;
        file.write_all_at(bytes, off)
            .map_err(|e| Error::io(path, e))
    }

    /// Write row `row` (`cols` values of the matrix's element type) at its offset. Safe to
    /// call from any unit for distinct rows at once; a row is journaled as done only after the
    /// runtime synced the file, so a resumed run never trusts a row that was not written.
    pub fn write<T: Element>(&self, row: usize, values: &[T]) -> Result<()> {
        if T::TYPE != self.ty || values.len() != self.cols || row >= self.rows {
            return Err(Error::Output(format!(
                "{}: row {row} of {} {} values written into a {} x {} matrix of {} (a bug in \
                 the plugin)",
                self.name,
                values.len(),
                T::TYPE.name(),
                self.rows,
                self.cols,
                self.ty.name()
            )));
        }
        let mut bytes = Vec::with_capacity(values.len() * self.ty.size());
        values.iter().for_each(|&v| v.put_le(&mut bytes));
        self.at(row, &bytes)
    }

    /// Write row `row` (length `cols`) of a u32 matrix.
    pub fn write_u32(&self, row: usize, values: &[u32]) -> Result<()> {
        self.write(row, values)
    }

    /// Write row `row` of a u64 matrix.
    pub fn write_u64(&self, row: usize, values: &[u64]) -> Result<()> {
        self.write(row, values)
    }

    /// Write row `row` of an i64 matrix.
    pub fn write_i64(&self, row: usize, values: &[i64]) -> Result<()> {
        self.write(row, values)
    }

    /// Flush to disk.
    pub fn sync(&self) -> Result<()> {
        match self.opened()? {
            (_, _, true) => Ok(()),
            (file, path, false) => file.sync_data().map_err(|e| Error::io(path, e)),
        }
    }
}

/// Write `dir/name` through `write` into an exclusive temporary file beside it, synced and
/// renamed into place (as [`write_file`], for files too large to build in memory first).
pub fn write_stream(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut std::io::BufWriter<&File>) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    let target = dir.join(name);
    if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        return Err(owned::foreign(
            &target,
            "move it away (tuccompi writes its file of that name here)",
        ));
    }
    let tmp = owned::temp_beside(&target)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
        write(&mut w)?;
        w.flush().map_err(|e| Error::io(tmp.path(), e))?;
    }
    tmp.as_file()
        .sync_data()
        .map_err(|e| Error::io(tmp.path(), e))?;
    // On error the temporary file is removed (NamedTempFile's drop).
    tmp.persist(&target)
        .map_err(|e| Error::io(&target, e.error))?;
    Ok(())
}

/// Write `text` to `dir/name` atomically (an exclusive temporary file beside it, renamed into
/// place: [`owned::write_atomic`]), so a reader never sees half a file and nothing is written
/// through a link.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<()> {
    owned::write_atomic(
        &dir.join(name),
        text.as_bytes(),
        "move it away (tuccompi writes its file of that name here)",
    )
}

#[cfg(test)]
mod test;
