//! The graph cache: the CSR of a large input file kept on disk, so that a later run on the
//! same file skips parsing its text (a 1.28 GB `.gr` took about 10 s on 16 cores; its CSR
//! reads in well under a second).
//!
//! **Key.** A cache file is named by the input's *identity*: its canonical path, size,
//! modification time (ns), device and inode, and an XXH3-128 of [`SAMPLES`] blocks of
//! [`BLOCK`] bytes spread evenly over the file (the first and the last included). Hashing the
//! whole input would cost what parsing it does at this size (a `.gz` must be inflated), so the
//! key trusts the file system: any write through the ordinary interfaces changes the
//! modification time, and a file replaced under its name changes its inode; the sampled blocks
//! catch a file restored with an old time stamp whose content differs where sampled. What it
//! cannot see is a same-size edit outside the samples whose writer then set the time back.
//!
//! **File.** Magic `TUCCOMPI-CSR`, format version, the identity's bytes, `id_base`, n, m, the
//! payload's XXH3-128, then the payload (offsets, targets, weights; little-endian u32). Written
//! through an exclusive temporary file renamed into place ([`tuccompi::owned`]); only a file that
//! begins with the magic (or an empty one) is ever read or replaced. A file whose identity,
//! length, checksum or shape is wrong is never used: [`load`] says why, and the caller parses
//! the input again and replaces it.

use super::Csr;
use rayon::prelude::*;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tuccompi::{Error, Result};
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

const MAGIC: &[u8; 12] = b"TUCCOMPI-CSR";
/// Version of the file layout.
pub const FORMAT: u32 = 1;
/// Input files from this size on are cached (smaller ones parse in a fraction of a second).
pub const MIN_BYTES: u64 = 16 << 20;
/// Blocks of the input hashed into its identity.
pub const SAMPLES: u64 = 64;
/// Bytes of each sampled block.
pub const BLOCK: u64 = 64 << 10;

/// What identifies an input file's content for the cache (module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    bytes: Vec<u8>,
    /// The input's size in bytes.
    pub len: u64,
}

impl Identity {
    /// The identity of the file at `path` (the file a link names, when it is one).
    ///
    /// O(SAMPLES · BLOCK) bytes read.
    pub fn of(path: &Path) -> std::io::Result<Identity> {
        use std::os::unix::fs::MetadataExt;
        let canonical = std::fs::canonicalize(path)?;
        // Never blocking, only a regular file: the reader says why another is refused.
        let mut f = tuccompi::input::open(&canonical, "input.path", "a graph file", None)
            .map_err(std::io::Error::other)?;
        let m = f.metadata()?;
        let len = m.len();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(canonical.as_os_str().as_encoded_bytes());
        bytes.push(0);
        for x in [
            len,
            m.mtime() as u64,
            m.mtime_nsec() as u64,
            m.dev(),
            m.ino(),
        ] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let mut h = Xxh3::new();
        let mut block = vec![0u8; BLOCK as usize];
        let last = len.saturating_sub(BLOCK);
        for i in 0..SAMPLES {
            let at = last * i / (SAMPLES - 1);
            f.seek(SeekFrom::Start(at))?;
            let mut got = 0;
            while got < block.len() {
                match f.read(&mut block[got..])? {
                    0 => break,
                    k => got += k,
                }
            }
            h.update(&block[..got]);
        }
        bytes.extend_from_slice(&h.digest128().to_le_bytes());
        Ok(Identity { bytes, len })
    }

    /// The cache file's name for this identity.
    pub fn file_name(&self) -> String {
        format!("{:032x}-v{FORMAT}.csr", xxh3_128(&self.bytes))
    }
}

/// The default directory: `$XDG_CACHE_HOME/tuccompi/graphs` (an absolute path), else
/// `~/.cache/tuccompi/graphs`; `None` without either.
pub fn default_dir() -> Option<PathBuf> {
    Some(
        tuccompi::owned::cache_home()?
            .join("tuccompi")
            .join("graphs"),
    )
}

/// Whether the cache may read and replace what is at `path`: nothing, an empty file, or a
/// plain file that begins with the magic. Otherwise what is there, in words.
fn ownable(path: &Path) -> std::result::Result<(), String> {
    file(path).replaceable()
}

/// The graph cache file at `path`, through the rule every cache follows
/// ([`tuccompi::owned::CacheFile`]): recognized by its magic, of any size (it is as large as the
/// graph it holds; its identity, shape and checksum are checked after it is read).
fn file(path: &Path) -> tuccompi::owned::CacheFile {
    tuccompi::owned::CacheFile::new(path, "a tuccompi graph cache")
        .magic(MAGIC)
        .cap(u64::MAX)
}

fn checksum(parts: [&[u32]; 3]) -> u128 {
    let mut h = Xxh3::new();
    let mut buf = Vec::with_capacity(1 << 18);
    for part in parts {
        for chunk in part.chunks(1 << 16) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
            h.update(&buf);
        }
    }
    h.digest128()
}

/// The graph cached at `path` for the input `id`, named `name`: `Ok(None)` when there is no
/// file; `Err(why)` when the file cannot be used (another input, cut short, corrupt, not a
/// graph cache).
pub fn load(path: &Path, id: &Identity, name: &str) -> std::result::Result<Option<Csr>, String> {
    // Never through a link, never blocking on a named pipe, never past a foreign file's magic.
    let Some(bytes) = file(path).read()? else {
        return Ok(None);
    };
    let mut at = 0usize;
    let mut take = |len: usize| -> std::result::Result<&[u8], String> {
        let end = at
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or("the file ends early (cut short)")?;
        let s = &bytes[at..end];
        at = end;
        Ok(s)
    };
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    if take(MAGIC.len())? != MAGIC {
        return Err("not a tuccompi graph cache".into());
    }
    let format = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    if format != FORMAT {
        return Err(format!("format {format}, this build reads {FORMAT}"));
    }
    let id_len = word(take(8)?) as usize;
    if take(id_len)? != id.bytes.as_slice() {
        return Err("it holds another input (or another version of this one)".into());
    }
    let (id_base, n, m) = (word(take(8)?), word(take(8)?), word(take(8)?));
    let sum = u128::from_le_bytes(take(16)?.try_into().expect("16 bytes"));
    let (n, m) = (n as usize, m as usize);
    let want = n
        .checked_add(1)
        .and_then(|x| x.checked_add(m.checked_mul(2)?))
        .and_then(|w| w.checked_mul(4));
    let payload = &bytes[at..];
    if want != Some(payload.len()) {
        return Err(format!(
            "a payload of {} bytes, its header says {n} vertices and {m} arcs (cut short?)",
            payload.len()
        ));
    }
    // The checksum is of the arrays' little-endian bytes, which the payload is.
    if xxh3_128(payload) != sum {
        return Err("its payload checksum differs (corrupt)".into());
    }
    let words = |from: usize, len: usize| {
        tuccompi::words_le::<u32>(&payload[from * 4..(from + len) * 4], "the cached graph")
            .map_err(|e| e.to_string())
    };
    let (offsets, targets, weights) = (words(0, n + 1)?, words(n + 1, m)?, words(n + 1 + m, m)?);
    if offsets[0] != 0
        || offsets[n] as usize != m
        || offsets.windows(2).any(|p| p[0] > p[1])
        || targets.par_iter().any(|&v| v as usize >= n)
    {
        return Err("its arrays do not form a CSR (corrupt)".into());
    }
    Ok(Some(Csr {
        n,
        offsets: offsets.into(),
        targets: targets.into(),
        weights: weights.into(),
        id_base,
        name: name.to_string(),
    }))
}

/// Write `g`, the graph of the input `id`, to `path` through an exclusive temporary file and
/// a rename, first removing the temporary files that killed writers left beside it; creates
/// the directory. What is at `path` is replaced only when it is a graph cache (or empty).
pub fn store(path: &Path, id: &Identity, g: &Csr) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    tuccompi::owned::sweep_dead(dir);
    let refuse = |why: String| {
        Error::Config(format!(
            "{}: {why}; tuccompi replaces only a graph cache there: remove this file",
            path.display()
        ))
    };
    ownable(path).map_err(refuse)?;
    let mut tmp = tuccompi::owned::temp_beside(path)?;
    let parts = [&g.offsets[..], &g.targets[..], &g.weights[..]];
    let write = |f: &mut std::fs::File| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        w.write_all(&(id.bytes.len() as u64).to_le_bytes())?;
        w.write_all(&id.bytes)?;
        for x in [g.id_base, g.n as u64, g.m() as u64] {
            w.write_all(&x.to_le_bytes())?;
        }
        w.write_all(&checksum(parts).to_le_bytes())?;
        let mut buf = Vec::with_capacity(1 << 18);
        for part in parts {
            for chunk in part.chunks(1 << 16) {
                buf.clear();
                buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
                w.write_all(&buf)?;
            }
        }
        w.flush()
    };
    // Not synced: a file cut short by a power failure is detected (length, checksum).
    write(tmp.as_file_mut()).map_err(|e| Error::io(tmp.path(), e))?;
    if std::fs::symlink_metadata(path).is_err() {
        tmp.persist_noclobber(path)
    } else {
        ownable(path).map_err(refuse)?;
        tmp.persist(path)
    }
    .map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod test;
