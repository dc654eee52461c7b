//! Where a job's `finish` writes its output files ([`Out`]): the run's staging folder, whose
//! files move into the output directory when the run succeeds (the command line), or memory
//! (a library caller's run with [`crate::RunOptions::in_memory`]: Python, an embedding
//! program), where every file is an anonymous in-memory file and nothing touches a disk.

use super::table::Table;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Where a job's `finish` writes its files: [`write_file`](Out::write_file) for text built
/// whole, [`write_stream`](Out::write_stream) for files written piece by piece.
#[derive(Debug)]
pub struct Out {
    to: To,
}

#[derive(Debug)]
enum To {
    Dir(PathBuf),
    Memory(Mutex<MemoryFiles>),
}

impl Out {
    /// Files in the directory `dir` (each written atomically, as [`super::write_file`] does).
    pub fn dir(dir: &Path) -> Out {
        Out {
            to: To::Dir(dir.to_path_buf()),
        }
    }

    /// Files in memory, taken back with [`into_files`](Out::into_files).
    pub fn memory() -> Out {
        Out {
            to: To::Memory(Mutex::new(MemoryFiles::default())),
        }
    }

    /// The directory the files go to; `None` in memory (a plugin that must hand a path to
    /// another library refuses an in-memory run, naming what it writes).
    pub fn path(&self) -> Option<&Path> {
        match &self.to {
            To::Dir(d) => Some(d),
            To::Memory(_) => None,
        }
    }

    /// Write `text` as the file `name`.
    pub fn write_file(&self, name: &str, text: &str) -> Result<()> {
        match &self.to {
            To::Dir(d) => super::write_file(d, name, text),
            To::Memory(_) => self.write_stream(name, |w| {
                w.write_all(text.as_bytes())
                    .map_err(|e| Error::Output(format!("{name}: {e}")))
            }),
        }
    }

    /// Write the file `name` through `write`: on disk into an exclusive temporary file beside
    /// it, synced and renamed into place ([`super::write_stream`]); in memory into an
    /// anonymous file (the writer's `get_ref()` is that file, for positional writes).
    pub fn write_stream(
        &self,
        name: &str,
        write: impl FnOnce(&mut BufWriter<&File>) -> Result<()>,
    ) -> Result<()> {
        match &self.to {
            To::Dir(d) => super::write_stream(d, name, write),
            To::Memory(files) => {
                let file = anonymous(name)?;
                {
                    let mut w = BufWriter::with_capacity(1 << 20, &file);
                    write(&mut w)?;
                    w.flush()
                        .map_err(|e| Error::Output(format!("{name}: {e}")))?;
                }
                files.lock().insert(name, file);
                Ok(())
            }
        }
    }

    /// Write `table` as the file `name`: CSV in a directory ([`Table::to_csv`]); in memory the
    /// typed columns themselves ([`MemoryFiles::table`]), which a caller reads without parsing.
    pub fn write_table(&self, name: &str, table: Table) -> Result<()> {
        match &self.to {
            To::Dir(d) => super::write_file(d, name, &table.to_csv()),
            To::Memory(files) => {
                files.lock().insert_table(name, table);
                Ok(())
            }
        }
    }

    /// The files written in memory, by name (none for a directory).
    pub fn into_files(self) -> MemoryFiles {
        match self.to {
            To::Dir(_) => MemoryFiles::default(),
            To::Memory(files) => files.into_inner(),
        }
    }
}

/// Files of a run held in memory ([`Out::memory`], and the bulk files of an in-memory run):
/// each an anonymous file, read with [`bytes`](MemoryFiles::bytes), or a [`Table`] as
/// [`Out::write_table`] was given it ([`table`](MemoryFiles::table)).
#[derive(Debug, Default)]
pub struct MemoryFiles {
    files: Vec<(String, File)>,
    tables: Vec<(String, Table)>,
}

impl MemoryFiles {
    /// Add the file `name` (replacing a file or table of that name).
    pub fn insert(&mut self, name: &str, file: File) {
        self.remove(name);
        self.files.push((name.to_string(), file));
    }

    /// Add the table `name` (replacing a file or table of that name).
    pub fn insert_table(&mut self, name: &str, table: Table) {
        self.remove(name);
        self.tables.push((name.to_string(), table));
    }

    fn remove(&mut self, name: &str) {
        self.files.retain(|(n, _)| n != name);
        self.tables.retain(|(n, _)| n != name);
    }

    /// Move in every file and table of `other`.
    pub fn extend(&mut self, other: MemoryFiles) {
        for (n, f) in other.files {
            self.insert(&n, f);
        }
        for (n, t) in other.tables {
            self.insert_table(&n, t);
        }
    }

    /// The names of the files, then of the tables, each in the order they were written.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let files = self.files.iter().map(|(n, _)| n.as_str());
        files.chain(self.tables.iter().map(|(n, _)| n.as_str()))
    }

    /// Whether there is a file or table `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.names().any(|n| n == name)
    }

    /// The table `name`, as its columns, if the run wrote one of that name.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The content of file `name`, whole (a table as the CSV a directory would hold); `None`
    /// when there is none. A result larger than the memory free for it is an error, never an
    /// abort.
    pub fn bytes(&self, name: &str) -> Result<Option<Vec<u8>>> {
        if let Some(t) = self.table(name) {
            return Ok(Some(t.to_csv().into_bytes()));
        }
        let Some((_, file)) = self.files.iter().find(|(n, _)| n == name) else {
            return Ok(None);
        };
        let mut f = file;
        let io = |e: std::io::Error| Error::Output(format!("{name} (in memory): {e}"));
        let len = f.metadata().map_err(io)?.len() as usize;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| {
            Error::Output(format!(
                "{name}: {len} bytes do not fit in the memory left to read them back"
            ))
        })?;
        f.rewind().map_err(io)?;
        f.read_to_end(&mut bytes).map_err(io)?;
        Ok(Some(bytes))
    }

    /// The file `name` itself (for reading it in place), if there is one.
    pub fn file(&self, name: &str) -> Option<&File> {
        self.files.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

/// Bytes the machine can still give this process: `MemAvailable` of `/proc/meminfo`, lowered to
/// the cgroup's (v2) `memory.max` less its `memory.current` when a limit is set (a container,
/// a Slurm job). `None` where neither can be read (checks against it are then skipped).
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()?;
    let mut avail = kib.saturating_mul(1024);
    let read = |f: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    if let (Some(max), Some(cur)) = (read("memory.max"), read("memory.current")) {
        avail = avail.min(max.saturating_sub(cur));
    }
    Some(avail)
}

/// An anonymous file in memory, empty: on Linux a `memfd` (no name in any directory, its
/// pages the process's own); elsewhere an unnamed temporary file.
pub(crate) fn anonymous(name: &str) -> Result<File> {
    #[cfg(target_os = "linux")]
    {
        let fd =
            rustix::fs::memfd_create(format!("tuccompi {name}"), rustix::fs::MemfdFlags::CLOEXEC)
                .map_err(|e| Error::Output(format!("{name}: no in-memory file: {e}")))?;
        Ok(File::from(fd))
    }
    #[cfg(not(target_os = "linux"))]
    {
        tempfile::tempfile().map_err(|e| Error::Output(format!("{name}: no in-memory file: {e}")))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn files_in_memory_come_back_whole_and_a_name_written_twice_is_replaced() {
        let out = Out::memory();
        assert!(out.path().is_none());
        out.write_file("a.csv", "x,y\n1,2\n").unwrap();
        out.write_stream("b.bin", |w| {
            w.write_all(&[1, 2, 3]).unwrap();
            // Positional writes through the file itself, as the compact paths do.
            use std::os::unix::fs::FileExt;
            w.flush().unwrap();
            w.get_ref().write_all_at(&[9], 1).unwrap();
            Ok(())
        })
        .unwrap();
        out.write_file("a.csv", "z\n").unwrap();
        let t = Table::new().with("x", super::super::table::Column::U64(vec![4, 5]));
        out.write_table("t.csv", t.clone()).unwrap();
        let files = out.into_files();
        assert_eq!(
            files.names().collect::<Vec<_>>(),
            ["b.bin", "a.csv", "t.csv"]
        );
        assert_eq!(files.table("t.csv"), Some(&t));
        assert_eq!(files.bytes("t.csv").unwrap().unwrap(), b"x\n4\n5\n");
        assert_eq!(files.bytes("a.csv").unwrap().unwrap(), b"z\n");
        assert_eq!(files.bytes("b.bin").unwrap().unwrap(), [1, 9, 3]);
        assert!(files.bytes("c").unwrap().is_none());
    }

    #[test]
    fn files_in_a_directory_are_written_there() {
        let dir = tempfile::tempdir().unwrap();
        let out = Out::dir(dir.path());
        out.write_file("a.csv", "1\n").unwrap();
        out.write_stream("b.csv", |w| {
            w.write_all(b"2\n").map_err(|e| Error::io("b", e))
        })
        .unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.csv")).unwrap(), b"1\n");
        assert_eq!(std::fs::read(dir.path().join("b.csv")).unwrap(), b"2\n");
        let t = Table::new().with("x", super::super::table::Column::U64(vec![3]));
        out.write_table("t.csv", t).unwrap();
        assert_eq!(std::fs::read(dir.path().join("t.csv")).unwrap(), b"x\n3\n");
        assert_eq!(out.into_files().names().count(), 0);
    }
}
