//! The journal of an unfinished run: the records of every finished chunk, so that an
//! interrupted run can be resumed without redoing them.
//!
//! Format: a sequence of independent entries, each made of little-endian `u64` words:
//! `MAGIC, start, end`, then `(end - start) × words` record words, then the xxh3-64 checksum of
//! the entry's bytes before it. A reader keeps every whole entry whose checksum holds and stops
//! at the first that does not (a kill during a write tears at most the last entry); a resumed
//! run truncates the journal there and appends after it.
//!
//! Durability: appended entries wait in memory and are written every `sync_every`, at chunk
//! boundaries, in this order: take the waiting entries, sync the bulk output files (distance
//! rows, written by the units before they appended their chunk), write the entries, sync the
//! journal. An entry on disk therefore implies its rows are on disk, even after a power
//! failure. A kill loses at most the chunks of the last interval (a resumed run redoes them).
//! After an interrupt the journal turns eager: every entry is written and synced at once.
//! Appending never waits for a sync in progress: the I/O runs under its own lock, taken with
//! `try_lock` by whichever unit finds the interval elapsed.

use crate::{owned, Error, Result};
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a message about a journal that is not the run's says to do.
const RESTART: &str = "start over with --restart (it discards the unfinished run)";

/// First word of every entry.
const MAGIC: u64 = u64::from_le_bytes(*b"TUCJRNL1");

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
    bulk: Vec<PathBuf>,
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
}

impl Journal {
    /// Open the journal at `path` for `words`-word records: a new, empty one, or (with
    /// `resume_at = Some(len)`) an existing one truncated to its `len` valid bytes. `bulk` are
    /// the files synced before each write of entries.
    pub fn open(
        path: &Path,
        words: usize,
        sync_every: Duration,
        bulk: Vec<PathBuf>,
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

    /// Append the records of the finished tasks `tasks` (`words` per task). Written and
    /// synced when the interval has elapsed (or at once once eager).
    pub fn append(&self, tasks: Range<usize>, records: &[u64]) -> Result<()> {
        debug_assert_eq!(records.len(), tasks.len() * self.words);
        let due = {
            let mut p = self.pending.lock();
            if let Some(e) = &p.failed {
                return Err(Error::Output(e.clone()));
            }
            p.tasks += tasks.len();
            let mut h = Vec::with_capacity((4 + records.len()) * 8);
            for w in [MAGIC, tasks.start as u64, tasks.end as u64]
                .iter()
                .chain(records)
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
            owned::reopen(b, false, RESTART)?
                .sync_data()
                .map_err(|e| Error::io(b, e))?;
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
/// `each(tasks, records)` for every whole entry in order; stop at the first torn one.
pub fn replay(
    path: &Path,
    tasks: usize,
    words: usize,
    mut each: impl FnMut(Range<usize>, &[u64]),
) -> Result<Replayed> {
    let bytes = owned::read(path, RESTART, u64::MAX)?
        .ok_or_else(|| Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound)))?;
    let word = |i: usize| -> Option<u64> {
        bytes
            .get(i * 8..i * 8 + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let mut at = 0usize; // in words
    let mut out = Replayed {
        entries: 0,
        tasks: 0,
        valid_len: 0,
        torn: false,
    };
    let mut records = Vec::new();
    while let (Some(magic), Some(start), Some(end)) = (word(at), word(at + 1), word(at + 2)) {
        let (start, end) = (start as usize, end as usize);
        if magic != MAGIC || start >= end || end > tasks {
            break;
        }
        let n = (end - start) * words;
        let Some(sum) = word(at + 3 + n) else { break };
        if xxhash_rust::xxh3::xxh3_64(&bytes[at * 8..(at + 3 + n) * 8]) != sum {
            break;
        }
        records.clear();
        records.extend((0..n).map(|i| word(at + 3 + i).expect("inside the entry")));
        each(start..end, &records);
        out.entries += 1;
        out.tasks += end - start;
        at += 4 + n;
    }
    out.valid_len = at as u64 * 8;
    out.torn = out.valid_len < bytes.len() as u64;
    Ok(out)
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
        for cut in (whole.len() - 5 * 8 + 1)..whole.len() {
            std::fs::write(&p, &whole[..cut]).unwrap();
            let (got, r) = read_all(&p, 4, 1);
            assert_eq!(got, vec![(0..3, vec![1, 2, 3])], "cut at {cut}");
            assert!(r.torn);
            assert_eq!(r.valid_len, 7 * 8);
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
}
