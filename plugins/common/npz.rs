//! `.npz` files (what `numpy.savez` writes and `numpy.load` reads): a zip archive of `.npy`
//! arrays, one entry `NAME.npy` per array. Entries are stored, not compressed, so a large
//! matrix is copied at disk speed and its bytes inside the archive are the `.npy` file's own.
//!
//! The archive goes through the run's [`Out`]: on disk to an exclusive temporary file beside its
//! target, renamed into place, like every whole file a run writes.

use std::io::Write;
use tuccompi::sink::{NpyRows, NpyType, Out};
use tuccompi::{Error, Result};

/// One array of an `.npz` archive.
#[derive(Debug)]
pub enum NpzEntry<'a> {
    /// A complete `.npy` file's bytes (see [`npy_u64`], [`npy_scalar_max`]).
    Bytes(&'a str, Vec<u8>),
    /// A run's bulk matrix (its `.npy` file, on disk or in memory), copied in as it is.
    Rows(&'a str, &'a NpyRows),
}

/// A 1-D `<u8` array as `.npy` bytes.
pub fn npy_u64(values: &[u64]) -> Result<Vec<u8>> {
    use npyz::WriterBuilder;
    let mut bytes = Vec::with_capacity(128 + values.len() * 8);
    let mut w = npyz::WriteOptions::<u64>::new()
        .default_dtype()
        .shape(&[values.len() as u64])
        .writer(&mut bytes)
        .begin_nd()
        .map_err(npy_err)?;
    w.extend(values.iter().copied()).map_err(npy_err)?;
    w.finish().map_err(npy_err)?;
    Ok(bytes)
}

/// A 0-d array holding the largest value of `ty` (what marks an unreachable pair in a
/// distance matrix of that type), as `.npy` bytes.
pub fn npy_scalar_max(ty: NpyType) -> Result<Vec<u8>> {
    fn scalar<T: npyz::AutoSerialize>(v: T) -> Result<Vec<u8>> {
        use npyz::WriterBuilder;
        let mut bytes = Vec::new();
        let mut w = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(&[])
            .writer(&mut bytes)
            .begin_nd()
            .map_err(npy_err)?;
        w.push(&v).map_err(npy_err)?;
        w.finish().map_err(npy_err)?;
        Ok(bytes)
    }
    match ty {
        NpyType::I8 => scalar(i8::MAX),
        NpyType::U8 => scalar(u8::MAX),
        NpyType::I16 => scalar(i16::MAX),
        NpyType::U16 => scalar(u16::MAX),
        NpyType::I32 => scalar(i32::MAX),
        NpyType::U32 => scalar(u32::MAX),
        NpyType::I64 => scalar(i64::MAX),
        NpyType::U64 => scalar(u64::MAX),
        NpyType::F32 => scalar(f32::INFINITY),
        NpyType::F64 => scalar(f64::INFINITY),
    }
}

fn npy_err(e: std::io::Error) -> Error {
    Error::Output(format!("npy array: {e}"))
}

/// Write `dir/name` as an `.npz` archive of `entries` (stored; zip64 where an entry needs it),
/// through `out` ([`Out::write_stream`]).
pub fn write_npz(out: &Out, name: &str, entries: &[NpzEntry<'_>]) -> Result<()> {
    let zip_err = |e: zip::result::ZipError| Error::Output(format!("{name}: {e}"));
    out.write_stream(name, |w| {
        let mut zip = zip::ZipWriter::new(&mut *w);
        for entry in entries {
            let (entry_name, len) = match entry {
                NpzEntry::Bytes(n, b) => (*n, b.len() as u64),
                NpzEntry::Rows(n, rows) => (*n, rows.bytes()),
            };
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .large_file(len >= u32::MAX as u64)
                .unix_permissions(0o644)
                // A fixed date (zip's 1980-01-01 epoch), so equal results give equal files.
                .last_modified_time(zip::DateTime::default());
            zip.start_file(format!("{entry_name}.npy"), options)
                .map_err(zip_err)?;
            match entry {
                NpzEntry::Bytes(_, b) => zip
                    .write_all(b)
                    .map_err(|e| Error::Output(format!("{name}: {e}")))?,
                NpzEntry::Rows(_, rows) => {
                    let mut f = rows.reader()?;
                    let copied = std::io::copy(&mut f, &mut zip)
                        .map_err(|e| Error::Output(format!("{}: {e}", rows.name())))?;
                    if copied != len {
                        return Err(Error::Output(format!(
                            "{}: {copied} bytes read, {len} expected: the file changed while \
                             {name} was written",
                            rows.name()
                        )));
                    }
                }
            }
        }
        zip.finish().map_err(zip_err)?;
        Ok(())
    })
}
