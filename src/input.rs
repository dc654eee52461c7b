//! The files a job reads, as the run's identity holds them: a [`Fingerprint`] per file
//! declared in [`Details::inputs`](crate::plugin::Details::inputs), so that `--resume` never mixes the
//! results of two versions of an input.
//!
//! **What is hashed.** Hashing a 100 GB input whole would cost minutes at every start and every
//! resume, so a fingerprint trusts the file system, as `make`, rsync's quick check and the
//! graph cache do: the file's canonical path, size, modification time (ns), device and inode,
//! and an XXH3-128 of [`SAMPLES`] blocks of [`BLOCK`] bytes spread evenly over the file, the
//! first and the last included (4 MiB read at most, whatever the size). A file of up to
//! 4 MiB is hashed whole, so its content alone decides: written again with the same bytes, it
//! is the same input. For larger files, any write through the ordinary interfaces changes the modification
//! time, a file replaced under its name (an editor's save, `cp` over a link target,
//! `numpy.save` to a new file renamed into place) changes its inode, and the sampled blocks
//! catch a file restored with an old time stamp whose content differs where sampled. What a
//! fingerprint cannot see is a same-size edit outside the samples whose writer then set the
//! time back.
//!
//! **Opening a user's file.** Every reader of a user's input (the graph, `.co` coordinates,
//! id and point files, `.npy` arrays, `.osm.pbf` extracts, and the fingerprint itself) opens
//! it through [`open`]: only a regular file is read, checked before any byte is, and never
//! with an open that can block. An input is opened more than once (fingerprinted for
//! `--resume` and the graph cache, then parsed, an `.osm.pbf` in two passes), which a named
//! pipe (`<(zcat x.gz)`), `/dev/stdin` or a device cannot give: the first read would
//! drain it and the next open wait for a writer forever. So they are refused, saying to
//! write the stream to a file first.

use crate::{Error, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What `t` is in words when it is not a regular file (`a named pipe (FIFO)`); `None` for a
/// regular file.
fn not_regular(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// The refusal of `path`, which is `kind` (from [`not_regular`]), as the input `key` names.
fn refuse(path: &Path, key: &str, what: &str, kind: &str) -> Error {
    if kind == "a directory" {
        return Error::Input(format!(
            "{}: is a directory; {key} must name {what}",
            path.display()
        ));
    }
    Error::Input(format!(
        "{}: is {kind}, not a regular file; {key} must name {what}. tuccompi opens an input \
         more than once (its fingerprint for --resume, then the reading), which a pipe, a \
         socket or a device cannot give, so it reads none of it: write it to a regular file \
         first (`zcat x.gz > x` instead of `<(zcat x.gz)` or /dev/stdin), or name the .gz \
         file itself where the reader takes it compressed",
        path.display()
    ))
}

/// Open a user's input file for reading, as the config key `key` names it (`input.path`),
/// which must name `what` (`a graph file`), of at most `cap` bytes (`None`: any size).
///
/// Everything is checked before a byte is read. The path is looked at first (links
/// followed): a named pipe, a socket, a device or a directory is refused unopened (opening a
/// pipe waits for a writer; opening a device may act on it). The open itself carries
/// `O_NONBLOCK` and `O_NOCTTY`, so that a file swapped for a pipe meanwhile cannot block it,
/// and the open file is looked at again: a regular file, no larger than `cap`. The
/// refusals are [`Error::Input`] naming the file, what it is and what to do; a file that
/// cannot be looked at or opened is an [`Error::Io`] naming it (callers name the key).
/// Readers with a cap still read at most `cap + 1` bytes, for a file that grows meanwhile.
pub fn open(path: &Path, key: &str, what: &str, cap: Option<u64>) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e| Error::io(path, e);
    let before = std::fs::metadata(path).map_err(io)?;
    if let Some(kind) = not_regular(before.file_type()) {
        return Err(refuse(path, key, what, kind));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let m = file.metadata().map_err(io)?;
    if let Some(kind) = not_regular(m.file_type()) {
        return Err(refuse(path, key, what, kind));
    }
    if let Some(cap) = cap.filter(|&c| m.len() > c) {
        return Err(Error::Input(format!(
            "{}: {} bytes, more than the {} {key} may hold ({what}); it is not read: check \
             that this is the file meant for {key}",
            path.display(),
            m.len(),
            bytes_in_words(cap)
        )));
    }
    // A regular file reads the same either way; the flag is cleared so that no reader (a
    // file system that honours it, a decoder that retries) ever sees `WouldBlock`.
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| io(e.into()))?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
        .map_err(|e| io(e.into()))?;
    Ok(file)
}

/// A cap in words: `1024 MiB`, `16 KiB`, `100 bytes`.
fn bytes_in_words(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// Blocks of a file hashed into its fingerprint.
pub const SAMPLES: u64 = 64;
/// Bytes of each sampled block.
pub const BLOCK: u64 = 64 << 10;

/// What identifies the content of one input file (module doc). O(SAMPLES · BLOCK) to make.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    /// The canonical path (links resolved).
    pub path: PathBuf,
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time, nanoseconds since the epoch.
    pub modified_ns: i128,
    /// Device and inode: which file the path named.
    pub file: (u64, u64),
    /// XXH3-128 of the sampled blocks, in hex.
    pub sampled_xxh3: String,
}

impl Fingerprint {
    /// The fingerprint of the file at `path` (the file a link names, when it is one). An error
    /// names the file.
    pub fn of(path: &Path) -> Result<Fingerprint> {
        use std::os::unix::fs::MetadataExt;
        let canonical = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
        let io = |e| Error::io(&canonical, e);
        let mut f = open(
            &canonical,
            "a job's declared input (Job::inputs)",
            "a regular file",
            None,
        )?;
        let m = f.metadata().map_err(io)?;
        let len = m.len();
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut block = vec![0u8; BLOCK as usize];
        let last = len.saturating_sub(BLOCK);
        for i in 0..SAMPLES {
            let at = last * i / (SAMPLES - 1);
            f.seek(SeekFrom::Start(at)).map_err(io)?;
            let mut got = 0;
            while got < block.len() {
                match f.read(&mut block[got..]).map_err(io)? {
                    0 => break,
                    k => got += k,
                }
            }
            h.update(&block[..got]);
        }
        Ok(Fingerprint {
            path: canonical,
            bytes: len,
            modified_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            file: (m.dev(), m.ino()),
            sampled_xxh3: format!("{:032x}", h.digest128()),
        })
    }

    /// What changed from `self` (an earlier fingerprint of the same path) to `now`, in words;
    /// `None` when nothing did.
    pub fn change(&self, now: &Fingerprint) -> Option<String> {
        if self.bytes != now.bytes {
            Some(format!(
                "its size changed from {} to {} bytes",
                self.bytes, now.bytes
            ))
        } else if self.sampled_xxh3 != now.sampled_xxh3 {
            Some("a sampled block differs".into())
        } else if self.bytes <= SAMPLES * BLOCK {
            // Hashed whole: the same bytes are the same input, whatever their time stamp.
            None
        } else if self.file != now.file {
            Some("it was replaced by another file of that name (another inode)".into())
        } else if self.modified_ns != now.modified_ns {
            Some(format!(
                "it was modified (modification time {} is now {})",
                stamp(self.modified_ns),
                stamp(now.modified_ns)
            ))
        } else {
            None
        }
    }
}

/// A modification time as seconds.nanoseconds since the epoch.
fn stamp(ns: i128) -> String {
    format!(
        "{}.{:09}",
        ns.div_euclid(1_000_000_000),
        ns.rem_euclid(1_000_000_000)
    )
}

/// Fingerprints of `paths`, deduplicated by canonical path, in order, as JSON for the run's
/// identity.
pub fn fingerprints(paths: &[PathBuf]) -> Result<serde_json::Value> {
    let mut out: Vec<Fingerprint> = Vec::new();
    for p in paths {
        let f = Fingerprint::of(p)?;
        if !out.iter().any(|o| o.path == f.path) {
            out.push(f);
        }
    }
    Ok(serde_json::to_value(out).unwrap_or_default())
}

/// The files of an identity's `inputs` (as [`fingerprints`] wrote them).
pub fn paths(inputs: &serde_json::Value) -> Vec<PathBuf> {
    inputs
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["path"].as_str().map(PathBuf::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Why an unfinished run whose inputs were `old` cannot be resumed by a run whose inputs are
/// `new` (both as [`fingerprints`] wrote them), naming each file and what changed; `None`
/// when they agree.
pub fn differences(old: &serde_json::Value, new: &serde_json::Value) -> Option<String> {
    let parse = |v: &serde_json::Value| -> Vec<Fingerprint> {
        serde_json::from_value(v.clone()).unwrap_or_default()
    };
    let (old, new) = (parse(old), parse(new));
    let mut why = Vec::new();
    for o in &old {
        match new.iter().find(|n| n.path == o.path) {
            Some(n) => {
                if let Some(c) = o.change(n) {
                    why.push(format!(
                        "the input file's content changed since the unfinished run: {}: {c}",
                        o.path.display()
                    ));
                }
            }
            None => why.push(format!(
                "the unfinished run read the input file {}, this one does not",
                o.path.display()
            )),
        }
    }
    for n in new.iter().filter(|n| !old.iter().any(|o| o.path == n.path)) {
        why.push(format!(
            "this run reads the input file {}, the unfinished run did not",
            n.path.display()
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[cfg(test)]
mod test {
    use super::*;

    /// A regular file opens (blocking reads, as any file); a directory, a named pipe nobody
    /// writes and a device are refused by what they are, without waiting; a file over the cap
    /// is refused by its size; a missing file is an I/O error naming it.
    #[test]
    fn open_takes_only_a_regular_file_within_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.gr");
        std::fs::write(&p, b"p sp 1 0\n").unwrap();
        let f = open(&p, "input.path", "a graph file", Some(9)).unwrap();
        let flags = rustix::fs::fcntl_getfl(&f).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
        let e = open(&p, "run.tasks", "an id file", Some(8))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "g.gr: 9 bytes, more than the 8 bytes run.tasks may hold (an id file); it is \
                 not read: check that this is the file meant for run.tasks"
            ),
            "{e}"
        );
        let e = open(dir.path(), "input.path", "a graph file", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(": is a directory; input.path must name a graph file"),
            "{e}"
        );
        let fifo = dir.path().join("pipe.gr");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let (tx, rx) = std::sync::mpsc::channel();
        let f2 = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(open(&f2, "input.path", "a graph file", None).map(|_| ()));
        });
        let e = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("open waited on a named pipe")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "pipe.gr: is a named pipe (FIFO), not a regular file; input.path must \
                 name a graph file"
            ) && e.contains("zcat x.gz > x"),
            "{e}"
        );
        let e = open(Path::new("/dev/null"), "input.path", "a graph file", None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/dev/null: is a character device"), "{e}");
        let e = open(&dir.path().join("none"), "input.path", "a graph file", None).unwrap_err();
        assert!(
            matches!(e, Error::Io { .. }) && e.to_string().contains("none"),
            "{e}"
        );
    }

    #[test]
    fn a_change_of_size_content_file_or_time_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.bin");
        let big: Vec<u8> = (0..(3 * SAMPLES * BLOCK))
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&p, &big).unwrap();
        let a = Fingerprint::of(&p).unwrap();
        let same = fingerprints(&[p.clone(), dir.path().join(".").join("q.bin")]).unwrap();
        assert_eq!(same.as_array().unwrap().len(), 1, "one file, two spellings");
        assert_eq!(differences(&same, &same), None);
        assert_eq!(a.change(&Fingerprint::of(&p).unwrap()), None);
        // Same size, the first block's content changed.
        let mut edited = big.clone();
        edited[0] ^= 1;
        std::fs::write(&p, &edited).unwrap();
        let b = Fingerprint::of(&p).unwrap();
        let why = a.change(&b).unwrap();
        assert!(why.contains("sampled block differs"), "{why}");
        let d = differences(&same, &fingerprints(std::slice::from_ref(&p)).unwrap()).unwrap();
        assert!(d.contains("q.bin") && d.contains("content changed"), "{d}");
        // Another size.
        std::fs::write(&p, &big[..100]).unwrap();
        let why = a.change(&Fingerprint::of(&p).unwrap()).unwrap();
        assert!(why.contains("size changed"), "{why}");
        // Same bytes, written again later: the modification time tells.
        std::fs::write(&p, &big).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        let c = Fingerprint::of(&p).unwrap();
        assert!(a.change(&c).is_some_and(|w| w.contains("modified")));
        // Replaced by another file with the same bytes and time.
        let q = dir.path().join("q2.bin");
        std::fs::write(&q, &big).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&q)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        std::fs::rename(&q, &p).unwrap();
        let r = Fingerprint::of(&p).unwrap();
        assert!(c.change(&r).is_some_and(|w| w.contains("replaced")));
        // A small file is hashed whole: written again with the same bytes, it is the same.
        let s = dir.path().join("small.bin");
        std::fs::write(&s, b"0123").unwrap();
        let before = Fingerprint::of(&s).unwrap();
        std::fs::remove_file(&s).unwrap();
        std::fs::write(&s, b"0123").unwrap();
        assert_eq!(before.change(&Fingerprint::of(&s).unwrap()), None);
        std::fs::write(&s, b"0124").unwrap();
        assert!(before.change(&Fingerprint::of(&s).unwrap()).is_some());
        // A file read by one run and not the other.
        let d = differences(&same, &serde_json::json!([])).unwrap();
        assert!(d.contains("q.bin") && d.contains("does not"), "{d}");
        let e = Fingerprint::of(&dir.path().join("gone"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gone"), "{e}");
    }
}
