//! [`RaggedRows`]: a bulk output whose tasks write a variable amount of data each.
//!
//! Each task's data (any bytes, a whole number of `item`-byte elements, in `cols` pieces of
//! any length) is appended to a staging **data file** at a position reserved with an atomic
//! counter (a positional write: the file grows), and its place is written as the task's row of
//! a fixed-width **index**, an [`NpyRows`] of u64 words: `[file, start, xxh3, lengths...]`
//! (which data file, the byte where the task's data begins, the xxh3-64 of its bytes, and the
//! `cols` pieces' lengths in elements; made by [`RaggedRows::index`], handed to every call). The
//! index is the bulk output the job declares (in
//! `Details::bulk`): the runtime opens it, syncs it before journaling a chunk, checksums its
//! rows in the journal and reopens it on `--resume`, so a journaled task's index row is what
//! names its data. The data files sit beside it, hidden like it:
//!
//! - **One data file per process and run**, created new (`<name>-data.<k>`, the first free
//!   `k`) on the process's first write: MPI ranks never share a counter, and a resumed run
//!   appends to a fresh file, past every byte an earlier run wrote (its unjournaled tasks'
//!   bytes are garbage that no journaled index row names). In memory (`RunOptions::in_memory`)
//!   the data file is an anonymous one.
//! - **Durability**: the worker calls [`RaggedRows::sync_data`] at the end of each chunk, before
//!   the runtime journals it, so a journaled index row's data is on disk. The xxh3 in the row
//!   is checked whenever the data is read ([`RaggedRows::read`]): a byte changed or lost since
//!   is an error, never silently read.
//! - **`[verify]`** re-runs tasks with the index captured ([`NpyRows::capture`]): a re-run
//!   whose data hash and lengths equal the row already in the file writes that same row (so
//!   the comparison holds); any difference writes a new row, which the check reports.

use super::NpyRows;
use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Words of an index row before the lengths: file, start, xxh3.
const HEAD: usize = 3;

/// This process's data file.
#[derive(Debug)]
struct Data {
    file: File,
    /// Its number `k` (in the index rows).
    id: u64,
    /// Its path, or a name for messages (in memory).
    path: PathBuf,
    memory: bool,
    /// Written since the last sync.
    dirty: AtomicBool,
}

/// Rows of variable length: an index of fixed-width rows (a bulk output) and data files the
/// rows point into. See the module's documentation.
#[derive(Debug)]
pub struct RaggedRows {
    name: String,
    cols: usize,
    item: usize,
    data: OnceLock<Data>,
    opening: parking_lot::Mutex<()>,
    next: AtomicU64,
    /// Data files of other processes or runs, opened to read.
    readers: parking_lot::Mutex<std::collections::HashMap<u64, std::sync::Arc<File>>>,
}

/// One row of a [`RaggedRows`] as its index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaggedRow {
    /// The `cols` pieces' lengths, in elements.
    pub lengths: Vec<u64>,
    file: u64,
    start: u64,
    hash: u64,
}

impl RaggedRow {
    /// The row's elements (the lengths' sum).
    pub fn items(&self) -> u64 {
        self.lengths.iter().sum()
    }
}

impl RaggedRows {
    /// Declare rows of `cols` pieces of `item`-byte elements, their data files named
    /// `<name>-data.<k>`; the index is [`RaggedRows::index`]'s. Nothing is written yet.
    pub fn new(name: &str, cols: usize, item: usize) -> Self {
        RaggedRows {
            name: name.into(),
            cols,
            item: item.max(1),
            data: OnceLock::new(),
            opening: parking_lot::Mutex::new(()),
            next: AtomicU64::new(0),
            readers: parking_lot::Mutex::new(Default::default()),
        }
    }

    /// Pieces of each row (the lengths an index row holds).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The index of `rows` rows: `<name>-index.npy`, a `rows x (3 + cols)` u64 matrix, the
    /// bulk output the job declares (`Details::bulk`) and hands to every call.
    pub fn index(&self, rows: usize) -> Result<NpyRows> {
        NpyRows::new(
            &format!("{}-index.npy", self.name),
            rows,
            HEAD + self.cols,
            super::NpyType::U64,
        )
    }

    fn data_name(&self, k: u64) -> String {
        format!("{}-data.{k}", self.name)
    }

    /// This process's data file, created on first use beside the index (or in memory).
    fn data(&self, index: &NpyRows) -> Result<&Data> {
        if let Some(d) = self.data.get() {
            return Ok(d);
        }
        let _guard = self.opening.lock();
        if let Some(d) = self.data.get() {
            return Ok(d);
        }
        let (_, index_path, memory) = index.opened()?;
        let data = if *memory {
            let name = self.data_name(0);
            Data {
                file: super::out::anonymous(&name)?,
                id: 0,
                path: PathBuf::from(format!("{name} (in memory)")),
                memory: true,
                dirty: AtomicBool::new(false),
            }
        } else {
            let dir = index_path.parent().unwrap_or(std::path::Path::new("."));
            let mut k = 0u64;
            loop {
                let path = dir.join(self.data_name(k));
                match std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
                {
                    Ok(file) => {
                        break Data {
                            file,
                            id: k,
                            path,
                            memory: false,
                            dirty: AtomicBool::new(false),
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => k += 1,
                    Err(e) => return Err(Error::io(&path, e)),
                }
            }
        };
        let _ = self.data.set(data);
        Ok(self.data.get().expect("just set"))
    }

    /// Write row `row` of `index`: `lengths` (`cols` pieces, in elements) and their elements'
    /// bytes `data`, appended to this process's data file. Safe from any thread for distinct
    /// rows.
    pub fn write(&self, index: &NpyRows, row: usize, lengths: &[u64], data: &[u8]) -> Result<()> {
        let items: u64 = lengths.iter().sum();
        if lengths.len() != self.cols
            || index.cols() != HEAD + self.cols
            || row >= index.rows()
            || items * self.item as u64 != data.len() as u64
        {
            return Err(Error::Output(format!(
                "{}: row {row} of {} pieces ({items} elements of {} bytes) and {} bytes written \
                 into {} rows of {} pieces (a bug in the plugin)",
                self.name,
                lengths.len(),
                self.item,
                data.len(),
                index.rows(),
                self.cols
            )));
        }
        let hash = xxhash_rust::xxh3::xxh3_64(data);
        // `[verify]`: the same data as the row in the file keeps that row.
        if index.captured.lock().is_some() {
            let old = self.row(index, row)?;
            if old.hash == hash && old.lengths == lengths {
                return index.write(row, &words(&old));
            }
        }
        let d = self.data(index)?;
        let start = self.next.fetch_add(data.len() as u64, Ordering::Relaxed);
        d.file
            .write_all_at(data, start)
            .map_err(|e| Error::io(&d.path, e))?;
        d.dirty.store(true, Ordering::Release);
        let r = RaggedRow {
            lengths: lengths.to_vec(),
            file: d.id,
            start,
            hash,
        };
        index.write(row, &words(&r))
    }

    /// Sync this process's data file when written since the last sync (a worker calls it
    /// before its chunk is journaled); nothing in memory.
    pub fn sync_data(&self) -> Result<()> {
        match self.data.get() {
            Some(d) if !d.memory && d.dirty.swap(false, Ordering::AcqRel) => {
                d.file.sync_data().map_err(|e| Error::io(&d.path, e))
            }
            _ => Ok(()),
        }
    }

    /// Row `row` as `index` holds it (zeros for a row never written).
    pub fn row(&self, index: &NpyRows, row: usize) -> Result<RaggedRow> {
        let bytes = index.read_row(row)?;
        let w: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        Ok(RaggedRow {
            file: w[0],
            start: w[1],
            hash: w[2],
            lengths: w[HEAD..].to_vec(),
        })
    }

    /// Row `r`'s data into `buf`, checked against its hash (an error, never other bytes, when
    /// it changed or was lost since it was written).
    pub fn read(&self, index: &NpyRows, r: &RaggedRow, buf: &mut Vec<u8>) -> Result<()> {
        let len = r.items() * self.item as u64;
        buf.clear();
        buf.resize(len as usize, 0);
        let name = self.data_name(r.file);
        let own = self.data.get().filter(|d| d.id == r.file);
        let read = match own {
            Some(d) => d.file.read_exact_at(buf, r.start),
            None => self.reader(index, r.file)?.read_exact_at(buf, r.start),
        };
        if read.is_err() || xxhash_rust::xxh3::xxh3_64(buf) != r.hash {
            return Err(Error::Output(format!(
                "{name}: the {len} bytes at {} are not the ones its index row was written with \
                 (lost or changed since; start over with --restart)",
                r.start
            )));
        }
        Ok(())
    }

    /// Data file `k` of another process or run, opened to read (once).
    fn reader(&self, index: &NpyRows, k: u64) -> Result<std::sync::Arc<File>> {
        let mut readers = self.readers.lock();
        if let Some(f) = readers.get(&k) {
            return Ok(f.clone());
        }
        let (_, index_path, memory) = index.opened()?;
        let name = self.data_name(k);
        if *memory {
            return Err(Error::Output(format!(
                "{name}: not in this in-memory run (a bug in tuccompi)"
            )));
        }
        let path = index_path
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(&name);
        let f = std::sync::Arc::new(crate::owned::reopen(
            &path,
            false,
            "start over with --restart (it discards the unfinished run)",
        )?);
        readers.insert(k, f.clone());
        Ok(f)
    }
}

fn words(r: &RaggedRow) -> Vec<u64> {
    [r.file, r.start, r.hash]
        .into_iter()
        .chain(r.lengths.iter().copied())
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    fn data_of(t: usize) -> (Vec<u64>, Vec<u8>) {
        let lengths = vec![t as u64 % 3, 0, 2 * t as u64];
        let items: u64 = lengths.iter().sum();
        let bytes = (0..items * 4).map(|i| (i as usize * 7 + t) as u8).collect();
        (lengths, bytes)
    }

    fn read_all(r: &RaggedRows, ix: &NpyRows) -> Vec<(Vec<u64>, Vec<u8>)> {
        (0..ix.rows())
            .map(|t| {
                let row = r.row(ix, t).unwrap();
                let mut buf = Vec::new();
                r.read(ix, &row, &mut buf).unwrap();
                (row.lengths, buf)
            })
            .collect()
    }

    #[test]
    fn rows_written_in_any_order_from_threads_read_back_and_resume_in_a_new_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let r = RaggedRows::new(".x", 3, 4);
        let ix = r.index(40).unwrap();
        ix.open(dir, true).unwrap();
        std::thread::scope(|s| {
            for k in 0..4 {
                let (r, ix) = (&r, &ix);
                s.spawn(move || {
                    for t in (k..20).step_by(4).rev() {
                        let (l, d) = data_of(t);
                        r.write(ix, t, &l, &d).unwrap();
                    }
                });
            }
        });
        r.sync_data().unwrap();
        ix.sync().unwrap();
        let first = std::fs::metadata(dir.join(".x-data.0")).unwrap().len();
        // A resumed run: the index reopened, its data appended to a new file, the rows of the
        // first still read from theirs.
        let again = RaggedRows::new(".x", 3, 4);
        let ix = again.index(40).unwrap();
        ix.open(dir, false).unwrap();
        for t in 20..40 {
            let (l, d) = data_of(t);
            again.write(&ix, t, &l, &d).unwrap();
        }
        assert_eq!(
            std::fs::metadata(dir.join(".x-data.0")).unwrap().len(),
            first
        );
        assert!(dir.join(".x-data.1").exists());
        let want: Vec<_> = (0..40).map(data_of).collect();
        assert_eq!(read_all(&again, &ix), want);
        // A byte changed in a data file is an error, not other bytes.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(".x-data.1"))
            .unwrap();
        f.write_all_at(&[0xff, 0xfe], 3).unwrap();
        let errors = (20..40)
            .filter(|&t| {
                let row = again.row(&ix, t).unwrap();
                again.read(&ix, &row, &mut Vec::new()).is_err()
            })
            .count();
        assert!(errors >= 1);
    }

    #[test]
    fn in_memory_rows_and_bad_shapes() {
        let r = RaggedRows::new(".m", 3, 4);
        let ix = r.index(5).unwrap();
        ix.open_in_memory().unwrap();
        for t in (0..5).rev() {
            let (l, d) = data_of(t);
            r.write(&ix, t, &l, &d).unwrap();
        }
        r.sync_data().unwrap();
        assert_eq!(read_all(&r, &ix), (0..5).map(data_of).collect::<Vec<_>>());
        assert!(
            r.write(&ix, 0, &[1, 0, 0], &[0; 3]).is_err(),
            "4 bytes an element"
        );
        assert!(r.write(&ix, 0, &[1, 0], &[0; 4]).is_err(), "3 pieces");
        assert!(r.write(&ix, 5, &[0, 0, 0], &[]).is_err(), "5 rows");
    }

    #[test]
    fn a_captured_rewrite_keeps_the_row_of_the_same_data() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let r = RaggedRows::new(".c", 3, 4);
        let ix = r.index(2).unwrap();
        ix.open(dir, true).unwrap();
        let (l, d) = data_of(1);
        r.write(&ix, 1, &l, &d).unwrap();
        let file = ix.read_row(1).unwrap();
        ix.capture(true);
        r.write(&ix, 1, &l, &d).unwrap();
        let mut other = d.clone();
        other[0] ^= 1;
        r.write(&ix, 0, &l, &other).unwrap();
        let kept = ix.capture(false);
        assert_eq!(kept[1], (1, file), "the same data: the same row");
        assert_ne!(kept[0].1, ix.read_row(0).unwrap());
    }
}
