//! The hierarchy cache: a built [`Hierarchy`] kept on disk so that a second run on the same
//! graph skips the build.
//!
//! A cache file is found by its *key*: the graph's content (an XXH3-128 fingerprint of the CSR
//! with n and m), the build parameters, the builder's version and the distance width. It lives
//! in the user's cache directory (`$XDG_CACHE_HOME/tuccompi/hierarchies/` when that variable is
//! an absolute path, else `~/.cache/tuccompi/hierarchies/`) under a name made from the key, or
//! at the path `[apsp] hierarchy` names. Files are written to an exclusive temporary file
//! beside the target and renamed ([`tuccompi::owned`]), so a reader (another rank, another run)
//! never sees half a file; the temporary files of writers that were killed are swept before
//! the next store. Only a hierarchy file (its magic) or an empty file is ever replaced
//! ([`ownable`]): anything else at the path, or a link, is left alone.
//!
//! Layout (little-endian): magic `TUCCOMPI-CH`, format version, the key, the payload's length
//! and XXH3-128 checksum, then the payload (build facts and the hierarchy's arrays). A file
//! whose key differs (another graph or parameters: *mismatched*), whose format is older
//! (*stale*), or whose length or checksum is wrong (*truncated*, *corrupt*) is never used;
//! [`load`] says which, and the caller rebuilds. A payload that passes the checksum is still
//! checked for shape (lengths, offsets, ids in range) before use, so no file can make the
//! sweep index out of bounds.

use super::ch::{ChInfo, ChParams, ChWeight, Hierarchy};
use crate::graph::Csr;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_128;

const MAGIC: &[u8; 11] = b"TUCCOMPI-CH";
/// Version of the file layout and of the builder (bump when either changes what a file holds).
pub const FORMAT: u32 = 3;

/// What identifies a hierarchy: the graph, the parameters, the distance width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// XXH3-128 of the CSR (n, offsets, targets, weights).
    pub graph: u128,
    /// Vertices.
    pub n: u64,
    /// Arcs.
    pub m: u64,
    /// Build parameters.
    pub params: ChParams,
    /// Bytes per weight (4 or 8).
    pub width: u8,
}

impl Key {
    /// The key of `g`'s hierarchy built with `params` at weight type `W`.
    pub fn of<W: ChWeight>(g: &Csr, params: &ChParams) -> Key {
        // Streamed: the same hash as of the bytes laid end to end, without a copy of the graph.
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&(g.n as u64).to_le_bytes());
        let mut buf = Vec::with_capacity(1 << 18);
        for part in [&g.offsets, &g.targets, &g.weights] {
            for chunk in part.chunks(1 << 16) {
                buf.clear();
                buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
                h.update(&buf);
            }
        }
        Key {
            graph: h.digest128(),
            n: g.n as u64,
            m: g.m() as u64,
            params: *params,
            width: std::mem::size_of::<W>() as u8,
        }
    }

    /// A file name unique to the key.
    pub fn file_name(&self) -> String {
        format!(
            "{:032x}-n{}-m{}-s{}-h{}-w{}-v{FORMAT}.ch",
            self.graph,
            self.n,
            self.m,
            self.params.settle_limit,
            self.params.hop_limit,
            self.width * 8
        )
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(41);
        b.extend_from_slice(&self.graph.to_le_bytes());
        b.extend_from_slice(&self.n.to_le_bytes());
        b.extend_from_slice(&self.m.to_le_bytes());
        b.extend_from_slice(&self.params.settle_limit.to_le_bytes());
        b.extend_from_slice(&self.params.hop_limit.to_le_bytes());
        b.push(self.width);
        b
    }
}

/// The default cache directory: `$XDG_CACHE_HOME/tuccompi/hierarchies` (an absolute path;
/// the XDG rule ignores a relative one), else `~/.cache/tuccompi/hierarchies`; `None` without
/// either.
pub fn default_dir() -> Option<PathBuf> {
    Some(
        tuccompi::owned::cache_home()?
            .join("tuccompi")
            .join("hierarchies"),
    )
}

/// Whether the cache may read and replace what is at `path`: nothing, an empty file, or a
/// file that begins with a hierarchy's magic (of any format version). Otherwise, what is there
/// in words ("a symbolic link to /x", "a file that is not a tuccompi hierarchy").
pub fn ownable(path: &Path) -> Result<(), String> {
    file(path).replaceable()
}

/// The hierarchy file at `path`, through the rule every cache follows
/// ([`tuccompi::owned::CacheFile`]): recognized by its magic, of any size (it is as large as the
/// hierarchy; its length is checked against its header before the payload is read).
fn file(path: &Path) -> tuccompi::owned::CacheFile {
    tuccompi::owned::CacheFile::new(path, "a tuccompi hierarchy")
        .magic(MAGIC)
        .cap(u64::MAX)
}

/// Why a cache file was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No file there.
    Absent,
    /// Not a hierarchy file, or one of an older format or builder version.
    Stale(String),
    /// A hierarchy of another graph, other parameters or another distance width.
    Mismatched(String),
    /// Shorter or longer than its header says.
    Truncated(String),
    /// The checksum or the shape of the payload is wrong.
    Corrupt(String),
    /// It could not be read.
    Unreadable(String),
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Absent => write!(f, "no cached hierarchy"),
            Miss::Stale(s) => write!(f, "stale cache ({s})"),
            Miss::Mismatched(s) => write!(f, "cache of another graph or parameters ({s})"),
            Miss::Truncated(s) => write!(f, "truncated cache ({s})"),
            Miss::Corrupt(s) => write!(f, "corrupt cache ({s})"),
            Miss::Unreadable(s) => write!(f, "unreadable cache ({s})"),
        }
    }
}

/// Read the hierarchy at `path` if it holds the one `key` names. The file is read once,
/// straight into the hierarchy's arrays, hashing as it goes (a country-size hierarchy is a
/// gigabyte: reading it whole and then converting it took seconds).
pub fn load<W: ChWeight>(path: &Path, key: &Key) -> Result<Hierarchy<W>, Miss> {
    // Never through a link, never blocking on a named pipe, never past a foreign file's
    // first bytes.
    match file(path).open() {
        Ok(Some((f, size))) => read_from(f, size, key),
        Ok(None) => Err(Miss::Absent),
        Err(what) => Err(Miss::Stale(format!("it is {what}"))),
    }
}

/// The hierarchy that [`to_bytes`] wrote into `bytes` (a cache file's content), if it is the
/// one `key` names: header, key, length and checksum are checked, then the arrays' shape.
pub fn from_bytes<W: ChWeight>(bytes: &[u8], key: &Key) -> Result<Hierarchy<W>, Miss> {
    read_from(bytes, bytes.len() as u64, key)
}

/// Header, key, length (against `size`, the source's bytes), then the payload through the
/// checksum, then the arrays' shape.
fn read_from<W: ChWeight, R: std::io::Read>(
    mut src: R,
    size: u64,
    key: &Key,
) -> Result<Hierarchy<W>, Miss> {
    let want = key.bytes();
    let mut head = vec![0u8; MAGIC.len() + 4 + want.len() + 8 + 16];
    if let Err(e) = src.read_exact(&mut head) {
        let short = e.kind() == std::io::ErrorKind::UnexpectedEof;
        // A file shorter than a header: stale if it does not even start like one.
        let got = size.min(head.len() as u64) as usize;
        if short && !MAGIC.starts_with(&head[..got.min(MAGIC.len())]) {
            return Err(Miss::Stale("not a tuccompi hierarchy file".into()));
        }
        return Err(if short {
            Miss::Truncated("header ends early: the data ends early".into())
        } else {
            Miss::Unreadable(e.to_string())
        });
    }
    let mut r = Reader { b: &head, at: 0 };
    let head_err = |e: &'static str| Miss::Truncated(format!("header ends early: {e}"));
    if r.take(MAGIC.len()).map_err(head_err)? != MAGIC {
        return Err(Miss::Stale("not a tuccompi hierarchy file".into()));
    }
    let format = r.u32().map_err(head_err)?;
    if format != FORMAT {
        return Err(Miss::Stale(format!(
            "format {format}, this build reads {FORMAT}"
        )));
    }
    let got = r.take(want.len()).map_err(head_err)?;
    if got != want.as_slice() {
        return Err(Miss::Mismatched(describe_key_difference(got, key)));
    }
    let len = r.u64().map_err(head_err)?;
    let sum = u128::from_le_bytes(r.take(16).map_err(head_err)?.try_into().expect("16 bytes"));
    let payload = size.saturating_sub(head.len() as u64);
    if payload != len {
        return Err(Miss::Truncated(format!(
            "payload of {payload} bytes, header says {len}"
        )));
    }
    let mut p = Payload {
        src,
        hash: xxhash_rust::xxh3::Xxh3::new(),
        left: len,
    };
    let arrays = read_arrays::<W, R>(&mut p);
    // A wrong checksum is the finding, whatever the arrays looked like on the way.
    if p.left != 0 || p.hash.digest128() != sum {
        return Err(Miss::Corrupt("payload checksum differs".into()));
    }
    let arrays = arrays.map_err(Miss::Corrupt)?;
    if p.src.read(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
        return Err(Miss::Truncated("the file grew while it was read".into()));
    }
    decode(arrays, key).map_err(Miss::Corrupt)
}

fn describe_key_difference(got: &[u8], key: &Key) -> String {
    if got.len() < 41 {
        return "short key".into();
    }
    let n = u64::from_le_bytes(got[16..24].try_into().expect("8 bytes"));
    let m = u64::from_le_bytes(got[24..32].try_into().expect("8 bytes"));
    if got[..16] != key.graph.to_le_bytes() {
        format!(
            "it holds a graph of {n} vertices and {m} arcs with another content; this one has {} and {}",
            key.n, key.m
        )
    } else if got[40] != key.width {
        format!(
            "{}-bit weights, this run needs {}-bit",
            got[40] as u32 * 8,
            key.width as u32 * 8
        )
    } else {
        "built with other witness-search limits".into()
    }
}

/// Write `h` (keyed by `key`) to `path` through an exclusive temporary file and a rename,
/// first removing the temporary files that killed writers left beside it; creates the
/// directory. What is at `path` is replaced only when [`ownable`] allows it.
pub fn store<W: ChWeight>(path: &Path, key: &Key, h: &Hierarchy<W>) -> tuccompi::Result<()> {
    use std::io::Write;
    let out = to_bytes(key, h);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| tuccompi::Error::io(dir, e))?;
    let freed = tuccompi::owned::sweep_dead(dir);
    if freed > 0 {
        tracing::info!(
            "{}: removed {freed} bytes of temporary files left by killed runs",
            dir.display()
        );
    }
    let refuse = |why: String| {
        tuccompi::Error::Config(format!(
            "{}: {why}; tuccompi replaces only a hierarchy file there: name another file, or \
             remove this one",
            path.display()
        ))
    };
    ownable(path).map_err(refuse)?;
    let mut tmp = tuccompi::owned::temp_beside(path)?;
    // Not synced: a cache cut short by a power failure is detected (its length, its checksum)
    // and rebuilt.
    tmp.write_all(&out)
        .map_err(|e| tuccompi::Error::io(tmp.path(), e))?;
    // Checked again just before the rename: a file that appeared meanwhile is not replaced.
    if std::fs::symlink_metadata(path).is_err() {
        tmp.persist_noclobber(path)
    } else {
        ownable(path).map_err(refuse)?;
        tmp.persist(path)
    }
    .map_err(|e| tuccompi::Error::io(path, e.error))?;
    Ok(())
}

/// `h` (keyed by `key`) as a cache file holds it: magic, format, key, length, checksum, then
/// the arrays. [`from_bytes`] reads it back.
pub fn to_bytes<W: ChWeight>(key: &Key, h: &Hierarchy<W>) -> Vec<u8> {
    let payload = encode(h);
    let mut out = Vec::with_capacity(payload.len() + 96);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&key.bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&xxh3_128(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_ws<W: ChWeight>(out: &mut Vec<u8>, v: &[W]) {
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        let x = x.to_u64();
        out.extend_from_slice(&x.to_le_bytes()[..std::mem::size_of::<W>()]);
    }
}

fn encode<W: ChWeight>(h: &Hierarchy<W>) -> Vec<u8> {
    let mut out = Vec::new();
    for x in [
        h.info.arcs,
        h.info.shortcuts,
        h.info.rounds as u64,
        h.n as u64,
    ] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    put_u32s(&mut out, &h.order);
    put_u32s(&mut out, &h.up_offsets);
    put_u32s(&mut out, &h.up_heads);
    put_ws(&mut out, &h.up_weights);
    put_u32s(&mut out, &h.down_offsets);
    put_u32s(&mut out, &h.down_tails);
    put_ws(&mut out, &h.down_weights);
    put_u32s(&mut out, &h.levels);
    out
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], &'static str> {
        let end = self.at.checked_add(len).filter(|&e| e <= self.b.len());
        let end = end.ok_or("the data ends early")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, &'static str> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, &'static str> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

/// A hierarchy file's payload as it is read: hashed and counted.
struct Payload<R> {
    src: R,
    hash: xxhash_rust::xxh3::Xxh3,
    /// Bytes the header says are still to come.
    left: u64,
}

impl<R: std::io::Read> Payload<R> {
    fn fill(&mut self, dst: &mut [u8], what: &str) -> Result<(), String> {
        if dst.len() as u64 > self.left {
            return Err(format!("{what}: the data ends early"));
        }
        self.src
            .read_exact(dst)
            .map_err(|e| format!("{what}: {e}"))?;
        self.hash.update(dst);
        self.left -= dst.len() as u64;
        Ok(())
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let mut b = [0u8; 8];
        self.fill(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }
    /// A length-prefixed array of little-endian words, read into place (the length is checked
    /// against what is left before anything is allocated).
    fn words<T: tuccompi::ZeroBits>(&mut self, what: &str) -> Result<Vec<T>, String> {
        let len = self.u64(what)?;
        let size = std::mem::size_of::<T>() as u64;
        let bytes = len
            .checked_mul(size)
            .filter(|&b| b <= self.left)
            .ok_or_else(|| format!("{what}: length {len} exceeds the file"))?;
        let mut v = tuccompi::zeros::<T>(len as usize, what).map_err(|e| e.to_string())?;
        // SAFETY: `v` holds `len` initialized plain integers (`ZeroBits`), whose bytes may be
        // viewed and overwritten as bytes: every bit pattern is a value.
        let raw =
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), bytes as usize) };
        self.fill(raw, what)?;
        #[cfg(target_endian = "big")]
        compile_error!("the hierarchy cache holds little-endian words: swap them here");
        Ok(v)
    }
}

/// A hierarchy's arrays as read, before their shape is checked.
struct Arrays<W> {
    facts: [u64; 4],
    order: Vec<u32>,
    up_offsets: Vec<u32>,
    up_heads: Vec<u32>,
    up_weights: Vec<W>,
    down_offsets: Vec<u32>,
    down_tails: Vec<u32>,
    down_weights: Vec<W>,
    levels: Vec<u32>,
}

fn read_arrays<W: ChWeight, R: std::io::Read>(r: &mut Payload<R>) -> Result<Arrays<W>, String> {
    let mut facts = [0u64; 4];
    for f in &mut facts {
        *f = r.u64("build facts")?;
    }
    Ok(Arrays {
        facts,
        order: r.words("order")?,
        up_offsets: r.words("upward offsets")?,
        up_heads: r.words("upward heads")?,
        up_weights: r.words("upward weights")?,
        down_offsets: r.words("downward offsets")?,
        down_tails: r.words("downward tails")?,
        down_weights: r.words("downward weights")?,
        levels: r.words("levels")?,
    })
}

fn decode<W: ChWeight>(a: Arrays<W>, key: &Key) -> Result<Hierarchy<W>, String> {
    let [arcs, shortcuts, rounds, n] = a.facts;
    if n != key.n || arcs != key.m {
        return Err(format!(
            "payload holds n = {n}, m = {arcs}; its key says {} and {}",
            key.n, key.m
        ));
    }
    let n = n as usize;
    let Arrays {
        order,
        up_offsets,
        up_heads,
        up_weights,
        down_offsets,
        down_tails,
        down_weights,
        levels,
        ..
    } = a;
    for (what, w) in [("upward", &up_weights), ("downward", &down_weights)] {
        if w.par_iter().any(|&x| x == W::INF) {
            return Err(format!(
                "{what} weights: a weight equals the unreachable mark"
            ));
        }
    }
    // Shape: a permutation, CSR offsets that index their arrays, arcs between earlier and
    // later positions as the sweep needs, levels that cover 0..n.
    if order.len() != n {
        return Err(format!(
            "order has {} entries for {n} vertices",
            order.len()
        ));
    }
    let mut pos = vec![u32::MAX; n];
    for (p, &v) in order.iter().enumerate() {
        match pos.get_mut(v as usize) {
            Some(slot) if *slot == u32::MAX => *slot = p as u32,
            _ => return Err(format!("order is not a permutation (entry {p} = {v})")),
        }
    }
    let csr = |what: &str, off: &[u32], heads: &[u32], weights: usize, up: bool| {
        let ok = off.len() == n + 1
            && off.first() == Some(&0)
            && off.windows(2).all(|w| w[0] <= w[1])
            && off.last().map(|&l| l as usize) == Some(heads.len())
            && weights == heads.len();
        if !ok {
            return Err(format!(
                "{what} arrays do not form a CSR over {n} positions"
            ));
        }
        // Over every arc, in parallel (a country-size hierarchy has 10^8); the first bad one
        // is named.
        let bad = (0..n).into_par_iter().find_map_first(|p| {
            heads[off[p] as usize..off[p + 1] as usize]
                .iter()
                .find(|&&q| q as usize >= p)
                .map(|&q| (p, q))
        });
        if let Some((p, q)) = bad {
            let dir = if up { "upward" } else { "downward" };
            return Err(format!(
                "{dir} arc between positions {p} and {q} is not toward a lower position"
            ));
        }
        Ok(())
    };
    csr("upward", &up_offsets, &up_heads, up_weights.len(), true)?;
    csr(
        "downward",
        &down_offsets,
        &down_tails,
        down_weights.len(),
        false,
    )?;
    let levels_ok = levels.first() == Some(&0)
        && levels.last().map(|&l| l as usize) == Some(n)
        && levels.windows(2).all(|w| w[0] < w[1] || n == 0);
    if !levels_ok {
        return Err("level boundaries do not cover the positions in order".into());
    }
    // One GPU launch per level needs no arc inside a level.
    let mut level_of = vec![0u32; n];
    for (l, w) in levels.windows(2).enumerate() {
        level_of[w[0] as usize..w[1] as usize].fill(l as u32);
    }
    let bad = (0..n).into_par_iter().find_map_first(|p| {
        down_tails[down_offsets[p] as usize..down_offsets[p + 1] as usize]
            .iter()
            .find(|&&q| level_of[q as usize] >= level_of[p])
            .map(|&q| (p, q))
    });
    if let Some((p, q)) = bad {
        return Err(format!("downward arc {q} -> {p} does not go down a level"));
    }
    Ok(Hierarchy {
        n,
        order,
        pos,
        up_offsets,
        up_heads,
        up_weights,
        down_offsets,
        down_tails,
        down_weights,
        levels,
        info: ChInfo {
            arcs,
            shortcuts,
            rounds: rounds as u32,
        },
    })
}

#[cfg(test)]
pub(super) mod test;
