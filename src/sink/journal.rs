//! The journal of an unfinished run: the records of every finished chunk, and a checksum of
//! its rows in the bulk outputs, so that an interrupted run can be resumed without redoing
//! them and without keeping a row that changed since.
//!
//! Format (version 2): a sequence of independent entries, each made of little-endian `u64`
//! words: `MAGIC, start, end`, then `(end - start) × words` record words, then the xxh3-64 of
//! the chunk's rows in every bulk output with one row per task ([`BulkFile`], in order), then
//! the xxh3-64 checksum of the entry's bytes before it. A reader keeps every whole entry whose
//! checksum holds and stops at the first that does not (a kill during a write tears at most the
//! last entry); a resumed run truncates the journal there and appends after it. Replayed for a
//! resume ([`replay_checked`]), each entry's rows are read back from the bulk files and hashed
//! again: an entry whose rows no longer match (a byte changed on disk since) is not replayed,
//! so its tasks run again. That is one full read of the rows the journal vouches for, at
//! resume. A journal of version 1 (no row checksums; its entries begin with `TUCJRNL1`) is
//! refused with `--restart` advice rather than trusted.
//!
//! The journal is read as a stream, one entry at a time: an entry never holds more than the
//! run's task count allows (`end <= tasks`), so replaying a planted or garbage journal of any
//! size costs at most one entry's memory, and garbage ends the replay at its first word.
//!
//! Durability: appended entries wait in memory and are written every `sync_every`, at chunk
//! boundaries, in this order: take the waiting entries, sync the bulk output files (distance
//! rows, written by the units before they appended their chunk), write the entries, sync the
//! journal. An entry on disk therefore implies its rows are on disk, even after a power
//! failure. A kill loses at most the chunks of the last interval (a resumed run redoes them).
//! After an interrupt the journal turns eager: every entry is written and synced at once.
//! Appending never waits for a sync in progress: the I/O runs under its own lock, taken with
//! `try_lock` by whichever unit finds the interval elapsed. The rows' checksum is computed
//! when a chunk is appended, by reading its rows back (from the page cache: the unit has just
//! written them), in the appending unit's thread.

use crate::{owned, Error, Result};
use parking_lot::Mutex;
use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a message about a journal that is not the run's says to do.
const RESTART: &str = "start over with --restart (it discards the unfinished run)";

/// First word of every entry (version 2: with the rows' checksum).
const MAGIC: u64 = u64::from_le_bytes(*b"TUCJRNL2");
/// First word of every entry of a version-1 journal (no rows' checksum).
const MAGIC_V1: u64 = u64::from_le_bytes(*b"TUCJRNL1");

/// A bulk output whose row `t` is task `t`'s (rows of a matrix): synced before each write of
/// entries, and the rows of each journaled chunk checksummed in its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkFile {
    /// The file (in the run's staging folder).
    pub path: PathBuf,
    /// Byte offset of row 0 (the header's length).
    pub offset: u64,
    /// Bytes of one task's rows (one row, or several when each task writes several).
    pub row_bytes: u64,
}

impl BulkFile {
    /// The bulk file of `rows` in the staging folder `dir`.
    pub fn of(rows: &crate::sink::NpyRows, dir: &Path) -> BulkFile {
        let (offset, row_bytes) = rows.row_span();
        BulkFile {
            path: dir.join(rows.name()),
            offset,
            row_bytes,
        }
    }
}

/// The xxh3-64 of the rows of `tasks` in every file of `bulk`, in order (0 without any).
fn rows_hash(bulk: &[BulkFile], tasks: Range<usize>) -> Result<u64> {
    if bulk.is_empty() {
        return Ok(0);
    }
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = Vec::new();
    for b in bulk {
        let f = owned::reopen(&b.path, false, RESTART)?;
        let mut at = b.offset + tasks.start as u64 * b.row_bytes;
        let end = b.offset + tasks.end as u64 * b.row_bytes;
        while at < end {
            let n = (end - at).min(4 << 20) as usize;
            buf.resize(n, 0);
            f.read_exact_at(&mut buf, at)
                .map_err(|e| Error::io(&b.path, e))?;
            h.update(&buf);
            at += n as u64;
        }
    }
    Ok(h.digest())
}

/// What the journal did, for the report.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct JournalStats {
    /// Entries appended by this run.
    pub entries: u64,
    /// Bytes written by this run.
    pub bytes: u64,
    /// Syncs (bulk files, then journal).
    pub syncs: u64,
    /// Seconds spent writing and syncing.
    pub sync_seconds: f64,
}

#[derive(Debug)]
struct Pending {
    bytes: Vec<u8>,
    entries: u64,
    last: Instant,
    eager: bool,
    /// Tasks appended by this run (written or waiting).
    tasks: usize,
    /// The first write error: every later append and [`Journal::result`] return it.
    failed: Option<String>,
}

#[derive(Debug)]
struct Io {
    file: File,
    stats: JournalStats,
}

/// An open journal, appended to by the units (and, under MPI, by rank 0's server thread).
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    words: usize,
    sync_every: Duration,
    bulk: Vec<BulkFile>,
    pending: Mutex<Pending>,
    io: Mutex<Io>,
}

/// What [`replay`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Whole entries read.
    pub entries: usize,
    /// Tasks they cover.
    pub tasks: usize,
    /// Bytes of whole entries (the journal is truncated here before appending).
    pub valid_len: u64,
    /// Whether bytes after the last whole entry were dropped (a torn write).
    pub torn: bool,
    /// Tasks of whole entries whose rows in the bulk files no longer match their checksum:
    /// not replayed (they run again). Always 0 from [`replay`], which reads no rows.
    pub changed: usize,
}

impl Journal {
    /// Open the journal at `path` for `words`-word records: a new, empty one, or (with
    /// `resume_at = Some(len)`) an existing one truncated to its `len` valid bytes. `bulk` are
    /// the files synced before each write of entries, whose rows each entry checksums.
    pub fn open(
        path: &Path,
        words: usize,
        sync_every: Duration,
        bulk: Vec<BulkFile>,
        resume_at: Option<u64>,
    ) -> Result<Journal> {
        // Created new, or reopened as the plain file it is: never through a link.
        let mut file = match resume_at {
            None => owned::create_new(path, RESTART)?,
            Some(len) => {
                let f = owned::reopen(path, true, RESTART)?;
                f.set_len(len).map_err(|e| Error::io(path, e))?;
                f
            }
        };
        use std::io::Seek;
        file.seek(std::io::SeekFrom::End(0))
            .map_err(|e| Error::io(path, e))?;
        Ok(Journal {
            path: path.into(),
            words,
            sync_every,
            bulk,
            pending: Mutex::new(Pending {
                bytes: Vec::new(),
                entries: 0,
                last: Instant::now(),
                eager: false,
                tasks: 0,
                failed: None,
            }),
            io: Mutex::new(Io {
                file,
                stats: JournalStats::default(),
            }),
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the records of the finished tasks `tasks` (`words` per task), whose rows the
    /// caller has written into the bulk files. Written and synced when the interval has
    /// elapsed (or at once once eager).
    pub fn append(&self, tasks: Range<usize>, records: &[u64]) -> Result<()> {
        debug_assert_eq!(records.len(), tasks.len() * self.words);
        // Outside the lock: units hash their own chunk's rows in parallel.
        let rows = rows_hash(&self.bulk, tasks.clone());
        let due = {
            let mut p = self.pending.lock();
            if let Some(e) = &p.failed {
                return Err(Error::Output(e.clone()));
            }
            let rows = match rows {
                Ok(r) => r,
                Err(e) => {
                    p.failed = Some(format!("journal: {e}"));
                    return Err(e);
                }
            };
            p.tasks += tasks.len();
            let mut h = Vec::with_capacity((5 + records.len()) * 8);
            for w in [MAGIC, tasks.start as u64, tasks.end as u64]
                .iter()
                .chain(records)
                .chain([rows].iter())
            {
                h.extend_from_slice(&w.to_le_bytes());
            }
            let sum = xxhash_rust::xxh3::xxh3_64(&h);
            h.extend_from_slice(&sum.to_le_bytes());
            p.bytes.extend_from_slice(&h);
            p.entries += 1;
            p.eager || p.last.elapsed() >= self.sync_every
        };
        if due {
            if let Some(mut io) = self.io.try_lock() {
                self.write_out(&mut io)?;
            }
        }
        Ok(())
    }

    /// Write and sync every waiting entry now; from now on, write each entry at once.
    pub fn flush_and_turn_eager(&self) -> Result<()> {
        self.pending.lock().eager = true;
        self.flush()
    }

    /// Write and sync every waiting entry now (waiting for a sync in progress).
    pub fn flush(&self) -> Result<()> {
        let mut io = self.io.lock();
        self.write_out(&mut io)
    }

    /// Statistics of this run's appends.
    pub fn stats(&self) -> JournalStats {
        self.io.lock().stats
    }

    /// The bulk files whose rows each entry checksums.
    pub fn bulk(&self) -> &[BulkFile] {
        &self.bulk
    }

    /// Tasks appended by this run.
    pub fn tasks(&self) -> usize {
        self.pending.lock().tasks
    }

    /// The first write error, if any (appends from a thread that cannot report errors, such
    /// as the MPI server, are checked here at the end of the run).
    pub fn result(&self) -> Result<()> {
        match &self.pending.lock().failed {
            Some(e) => Err(Error::Output(e.clone())),
            None => Ok(()),
        }
    }

    fn write_out(&self, io: &mut Io) -> Result<()> {
        let r = self.write_waiting(io);
        if let Err(e) = &r {
            self.pending
                .lock()
                .failed
                .get_or_insert_with(|| format!("journal: {e}"));
        }
        r
    }

    fn write_waiting(&self, io: &mut Io) -> Result<()> {
        let t = Instant::now();
        let (bytes, entries) = {
            let mut p = self.pending.lock();
            p.last = Instant::now();
            (std::mem::take(&mut p.bytes), std::mem::take(&mut p.entries))
        };
        if bytes.is_empty() {
            return Ok(());
        }
        // Rows before the entries that vouch for them.
        for b in &self.bulk {
            owned::reopen(&b.path, false, RESTART)?
                .sync_data()
                .map_err(|e| Error::io(&b.path, e))?;
        }
        io.file
            .write_all(&bytes)
            .and_then(|()| io.file.sync_data())
            .map_err(|e| Error::io(&self.path, e))?;
        io.stats.entries += entries;
        io.stats.bytes += bytes.len() as u64;
        io.stats.syncs += 1;
        io.stats.sync_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
}

/// Read the journal at `path` of a run of `tasks` tasks with `words`-word records, calling
/// `each(tasks, records)` for every whole entry in order; stop at the first torn one. The rows
/// are not checked (for counting what a journal holds): a resume uses [`replay_checked`].
pub fn replay(
    path: &Path,
    tasks: usize,
    words: usize,
    each: impl FnMut(Range<usize>, &[u64]),
) -> Result<Replayed> {
    read_entries(path, tasks, words, None, each)
}

/// [`replay`] for a resume: each whole entry's rows are read back from `bulk` and hashed, and
/// an entry whose rows no longer match is not passed to `each` (its tasks run again; counted
/// in [`Replayed::changed`]).
pub fn replay_checked(
    path: &Path,
    tasks: usize,
    words: usize,
    bulk: &[BulkFile],
    each: impl FnMut(Range<usize>, &[u64]),
) -> Result<Replayed> {
    read_entries(path, tasks, words, Some(bulk), each)
}

fn read_entries(
    path: &Path,
    tasks: usize,
    words: usize,
    bulk: Option<&[BulkFile]>,
    mut each: impl FnMut(Range<usize>, &[u64]),
) -> Result<Replayed> {
    let f = owned::reopen(path, false, RESTART)?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let mut out = Replayed {
        entries: 0,
        tasks: 0,
        valid_len: 0,
        torn: false,
        changed: 0,
    };
    let mut head = [0u8; 24];
    let mut body = Vec::new();
    let mut records = Vec::new();
    let word =
        |b: &[u8], i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    loop {
        if read_full(&mut r, &mut head).map_err(|e| Error::io(path, e))? < head.len() {
            break;
        }
        let (magic, start, end) = (word(&head, 0), word(&head, 1), word(&head, 2));
        if magic == MAGIC_V1 && out.entries == 0 {
            return Err(Error::Output(format!(
                "{}: a journal written by an earlier tuccompi, without checksums of the rows it \
                 vouches for, so its tasks cannot be trusted on resume; {RESTART}",
                path.display()
            )));
        }
        if magic != MAGIC || start >= end || end > tasks as u64 {
            break;
        }
        let (start, end) = (start as usize, end as usize);
        let n = (end - start) * words;
        // The records, the rows' checksum and the entry's checksum: bounded by the task space.
        body.resize((n + 2) * 8, 0);
        if read_full(&mut r, &mut body).map_err(|e| Error::io(path, e))? < body.len() {
            break;
        }
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&head);
        h.update(&body[..(n + 1) * 8]);
        if h.digest() != word(&body, n + 1) {
            break;
        }
        out.entries += 1;
        out.valid_len += 24 + body.len() as u64;
        if let Some(bulk) = bulk {
            if rows_hash(bulk, start..end)? != word(&body, n) {
                out.changed += end - start;
                continue;
            }
        }
        records.clear();
        records.extend((0..n).map(|i| word(&body, i)));
        each(start..end, &records);
        out.tasks += end - start;
    }
    out.torn = out.valid_len < len;
    Ok(out)
}

/// Read into `buf` until it is full or the stream ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod test {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tuccompi-journal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("journal")
    }

    type Entries = Vec<(Range<usize>, Vec<u64>)>;

    fn read_all(path: &Path, tasks: usize, words: usize) -> (Entries, Replayed) {
        let mut got = Vec::new();
        let r = replay(path, tasks, words, |t, rec| got.push((t, rec.to_vec()))).unwrap();
        (got, r)
    }

    #[test]
    fn entries_round_trip_and_wait_for_the_interval() {
        let p = tmp("roundtrip");
        let j = Journal::open(&p, 2, Duration::from_secs(3600), vec![], None).unwrap();
        j.append(0..2, &[1, 2, 3, 4]).unwrap();
        j.append(5..6, &[9, 9]).unwrap();
        // Not due yet: nothing on disk.
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
        j.flush().unwrap();
        let (got, r) = read_all(&p, 10, 2);
        assert_eq!(got, vec![(0..2, vec![1, 2, 3, 4]), (5..6, vec![9, 9])]);
        assert_eq!((r.entries, r.tasks, r.torn), (2, 3, false));
        assert_eq!(j.stats().entries, 2);
        // Eager: written at once.
        j.flush_and_turn_eager().unwrap();
        j.append(6..7, &[7, 7]).unwrap();
        assert_eq!(read_all(&p, 10, 2).1.entries, 3);
    }

    #[test]
    fn a_torn_or_corrupt_tail_is_dropped_and_truncated_on_resume() {
        let p = tmp("torn");
        let j = Journal::open(&p, 1, Duration::ZERO, vec![], None).unwrap();
        j.append(0..3, &[1, 2, 3]).unwrap();
        j.append(3..4, &[4]).unwrap();
        drop(j);
        let whole = std::fs::read(&p).unwrap();
        // Every cut inside the second entry keeps exactly the first.
        for cut in (whole.len() - 6 * 8 + 1)..whole.len() {
            std::fs::write(&p, &whole[..cut]).unwrap();
            let (got, r) = read_all(&p, 4, 1);
            assert_eq!(got, vec![(0..3, vec![1, 2, 3])], "cut at {cut}");
            assert!(r.torn);
            assert_eq!(r.valid_len, 8 * 8);
        }
        // A flipped bit in a record fails the checksum.
        let mut bad = whole.clone();
        bad[10 * 8] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        assert_eq!(read_all(&p, 4, 1).0.len(), 1);
        // Entries beyond the task space are not believed.
        std::fs::write(&p, &whole).unwrap();
        assert_eq!(read_all(&p, 3, 1).0.len(), 1);
        // Resume: truncate to the valid part and append after it.
        std::fs::write(&p, &whole[..whole.len() - 3]).unwrap();
        let r = read_all(&p, 4, 1).1;
        let j = Journal::open(&p, 1, Duration::ZERO, vec![], Some(r.valid_len)).unwrap();
        j.append(3..4, &[4]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), whole);
    }

    /// A staging folder with a 6 x 3 u32 matrix `d.npy` whose row t holds t+1, and a journal
    /// of its chunks 0..2 and 2..6.
    fn journaled_rows(name: &str) -> (PathBuf, Vec<BulkFile>) {
        let p = tmp(name);
        let dir = p.parent().unwrap().to_path_buf();
        let m = crate::sink::NpyRows::new("d.npy", 6, 3, crate::sink::NpyType::U32).unwrap();
        m.open(&dir, true).unwrap();
        for t in 0..6 {
            m.write_u32(t, &[t as u32 + 1; 3]).unwrap();
        }
        let bulk = vec![BulkFile::of(&m, &dir)];
        let j = Journal::open(&p, 1, Duration::ZERO, bulk.clone(), None).unwrap();
        j.append(0..2, &[10, 11]).unwrap();
        j.append(2..6, &[12, 13, 14, 15]).unwrap();
        (p, bulk)
    }

    #[test]
    fn a_chunk_whose_rows_changed_on_disk_is_not_replayed() {
        let (p, bulk) = journaled_rows("rows-changed");
        let replayed = |bulk: &[BulkFile]| {
            let mut got = Vec::new();
            let r = replay_checked(&p, 6, 1, bulk, |t, rec| got.push((t, rec.to_vec()))).unwrap();
            (got, r)
        };
        let (got, r) = replayed(&bulk);
        assert_eq!(got.len(), 2);
        assert_eq!((r.tasks, r.changed), (6, 0));
        // One byte of row 3 (in the second chunk) flipped: that chunk runs again, the first
        // stays; the journal's entries are whole, so nothing is truncated.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&bulk[0].path)
            .unwrap();
        let at = bulk[0].offset + 3 * bulk[0].row_bytes + 1;
        let mut b = [0u8];
        f.read_exact_at(&mut b, at).unwrap();
        f.write_all_at(&[b[0] ^ 0x10], at).unwrap();
        let (got, r) = replayed(&bulk);
        assert_eq!(got, vec![(0..2, vec![10, 11])]);
        assert_eq!((r.entries, r.tasks, r.changed, r.torn), (2, 2, 4, false));
        // Counting without the rows keeps both.
        assert_eq!(read_all(&p, 6, 1).0.len(), 2);
    }

    #[test]
    fn a_version_1_journal_is_refused_with_restart_advice() {
        let p = tmp("v1");
        let mut old = Vec::new();
        for w in [MAGIC_V1, 0, 1, 7] {
            old.extend_from_slice(&u64::to_le_bytes(w));
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&old);
        old.extend_from_slice(&sum.to_le_bytes());
        std::fs::write(&p, &old).unwrap();
        let e = replay(&p, 4, 1, |_, _| {}).unwrap_err().to_string();
        assert!(
            e.contains("earlier tuccompi") && e.contains("--restart"),
            "{e}"
        );
    }

    /// Peak resident memory of this process, in KiB (`VmHWM`).
    fn peak_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    }

    #[test]
    fn a_huge_garbage_journal_is_replayed_in_bounded_memory() {
        let p = tmp("huge");
        let j = Journal::open(&p, 1, Duration::ZERO, vec![], None).unwrap();
        j.append(0..2, &[5, 6]).unwrap();
        drop(j);
        let valid = std::fs::metadata(&p).unwrap().len();
        // 1.5 GB of zeros after one whole entry (sparse: no disk used).
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(1_500_000_000)
            .unwrap();
        let before = peak_kib();
        let (got, r) = read_all(&p, 10, 1);
        assert_eq!(got, vec![(0..2, vec![5, 6])]);
        assert!(r.torn && r.valid_len == valid);
        let grew = peak_kib().saturating_sub(before);
        assert!(
            grew < 100 << 10,
            "replaying grew the peak memory by {grew} KiB"
        );
        std::fs::remove_file(&p).unwrap();
    }
}
