//! Bytes that the processes of one machine share: one rank of each machine writes them into a
//! new file, every rank of the machine maps that file read-only, so the machine holds one copy
//! in memory and in its caches (a plugin's input graph, say: four processes with four copies of
//! a large road graph ran 4-11% slower than one process). The node layer moves bytes only; what
//! they mean is the plugin's.

use crate::{Error, Result};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The ranks of a job making what they need together (the node layer under MPI): bytes once
/// per machine (one rank writes them where the others map them), and bytes once per job (rank
/// 0 makes them and sends them to every rank).
pub trait Share: Sync + std::fmt::Debug {
    /// Processes in the job (1 without MPI).
    fn ranks(&self) -> usize;

    /// Bytes made once on each machine. `make` runs on one rank of each machine (and only when
    /// the machine has several) and writes the bytes into the writer it is given; every rank of
    /// the machine then gets them mapped read-only (`Some`). `None`: this rank makes its own
    /// (the machine has one rank, or the bytes could not be written or mapped; the rank that ran
    /// `make` keeps what it made). An error of `make` is every rank's of the machine. Every rank
    /// calls it once, in the same place of its run; `what` names the bytes in the rank's report
    /// entry (`nodes[].<what>`: shared or an own copy, and why).
    fn machine_bytes(
        &self,
        what: &str,
        make: &mut dyn FnMut(&mut dyn Write) -> Result<()>,
    ) -> Result<Option<Mapped>>;

    /// The bytes `make` returns on rank 0, on every rank: `make` runs on rank 0 only, and
    /// its error is every rank's error (the others' message says it came from rank 0). Every
    /// rank calls it in the same place of its run; `what` names the bytes in each rank's
    /// report entry (`nodes[].from_rank_0`). For preprocessing that is deterministic but
    /// costly: made once per job instead of once per rank.
    fn made_on_rank_0(
        &self,
        what: &str,
        make: &mut dyn FnMut() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>>;

    /// Rank 0's file at `path`, as a path this rank reads: `path` itself on rank 0 (and in a
    /// job of one rank); on the other ranks a private copy of rank 0's bytes (`0600`, in a
    /// `0700` directory of the temporary directory), for machines that do not see rank 0's
    /// file system. The copy lasts until the bytes shared from it are made
    /// ([`machine_bytes`](Share::machine_bytes)) or the process ends; copies of processes
    /// killed before that are swept by the next run on the machine. Rank 0's error reading the
    /// file is every rank's. Every rank calls it in the same place of its run; `what` names the
    /// file in the report (`nodes[].from_rank_0`).
    fn rank_0_file(&self, what: &str, path: &std::path::Path) -> Result<std::path::PathBuf>;
}

/// Where a machine's shared files go: `/dev/shm` (memory) where there is one, else the
/// temporary directory.
pub fn shared_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A file mapped read-only (`memmap2`), unmapped when the last clone is dropped. The mapping
/// starts on a page boundary, so its bytes may be viewed as any word type that divides a page.
#[derive(Clone)]
pub struct Mapped(Arc<memmap2::Mmap>);

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped({} bytes)", self.0.len())
    }
}

impl Mapped {
    /// Map the file at `path` read-only. The file must not change while it is mapped: it is
    /// one that [`write_new`] wrote completely and that nothing writes again.
    pub fn open(path: &Path) -> Result<Mapped> {
        let f = std::fs::File::open(path)
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        let bytes = f
            .metadata()
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?
            .len();
        if bytes == 0 {
            return Err(Error::Input(format!(
                "{}: an empty file is not shared bytes",
                path.display()
            )));
        }
        // SAFETY: memmap2's condition is that nobody changes the file while it is mapped. The
        // file is created new (0600) by a rank of this job, written completely before any rank
        // maps it, and never written again; the mapping is read-only and outlives the
        // descriptor.
        let map = unsafe { memmap2::Mmap::map(&f) }
            .map_err(|e| Error::Input(format!("{}: mapping it failed: {e}", path.display())))?;
        Ok(Mapped(Arc::new(map)))
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Write a new file at `path` (readable by this user only: the ranks of a job run as one
/// user) with what `make` writes, synced. An existing file is left alone (an error); a file
/// this call created and could not finish is removed. The error says whether writing failed
/// (`Err(Ok(io))`) or `make` did (`Err(Err(e))`).
pub fn write_new(
    path: &Path,
    make: &mut dyn FnMut(&mut dyn Write) -> Result<()>,
) -> std::result::Result<(), std::result::Result<Error, Error>> {
    let io = |e: std::io::Error| Ok(Error::Output(format!("{}: {e}", path.display())));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    let mut w = Recording {
        inner: std::io::BufWriter::with_capacity(1 << 20, f),
        failed: None,
    };
    let made = make(&mut w);
    let done = match (made, w.failed.take()) {
        (_, Some(e)) => Err(io(e)),
        (Err(e), None) => Err(Err(e)),
        (Ok(()), None) => match w.inner.into_inner() {
            Ok(f) => f.sync_data().map_err(io),
            Err(e) => Err(io(e.into_error())),
        },
    };
    if done.is_err() {
        let _ = std::fs::remove_file(path);
    }
    done
}

/// A writer that keeps its first error, so that a failure of the file can be told from one of
/// the code that writes into it.
struct Recording<W> {
    inner: W,
    failed: Option<std::io::Error>,
}

impl<W: Write> Write for Recording<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|e| {
            self.failed
                .get_or_insert_with(|| std::io::Error::new(e.kind(), e.to_string()));
        })
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|e| {
            self.failed
                .get_or_insert_with(|| std::io::Error::new(e.kind(), e.to_string()));
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn written_bytes_map_back_and_failures_are_told_apart() {
        let dir = tempfile::Builder::new().tempdir().unwrap();
        let path = dir.path().join("b");
        write_new(&path, &mut |w| {
            w.write_all(b"abcdefgh").map_err(|e| Error::io("b", e))
        })
        .unwrap();
        // Never over an existing file, which stays as it was.
        assert!(matches!(
            write_new(&path, &mut |w| w
                .write_all(b"x")
                .map_err(|e| Error::io("b", e))),
            Err(Ok(_))
        ));
        let m = Mapped::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(m.clone().bytes(), b"abcdefgh");
        // The maker's own error: reported as its, and the file is gone.
        let e = write_new(&path, &mut |_| Err(Error::Input("bad input".into()))).unwrap_err();
        assert!(
            matches!(e, Err(Error::Input(ref s)) if s == "bad input"),
            "{e:?}"
        );
        assert!(!path.exists());
        // An empty file is no shared bytes, named.
        std::fs::write(&path, b"").unwrap();
        let e = Mapped::open(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
    }
}
