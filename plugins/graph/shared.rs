//! Graph arrays that the processes of one machine share: one rank of each machine writes its
//! CSR into a file, the others (and it) map that file read-only, so the machine holds one copy
//! of the graph in memory and in its caches (four processes with four copies of osm-moscow ran
//! 4-11% slower than one process; BENCHMARKS.md, "A minute of work").

use super::Csr;
use crate::{Error, Result};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

/// The ranks of a job loading what they need together (the node layer under MPI): the graph
/// once per machine (one rank builds it and writes it where the others map it), and a
/// plugin's preprocessing once per job (rank 0 makes it and sends it to every rank).
pub trait GraphShare: Sync + std::fmt::Debug {
    /// The graph `build` makes: this process's own, or mapped from the one a rank of this
    /// machine built. Every rank calls it once, in the same place of its run.
    fn share(&self, build: &mut dyn FnMut() -> Result<Csr>) -> Result<Csr>;

    /// Processes in the job (1 without MPI).
    fn ranks(&self) -> usize;

    /// The bytes `make` returns on rank 0, on every rank: `make` runs on rank 0 only, and
    /// its error is every rank's error (the others' message says it came from rank 0). Every
    /// rank calls it in the same place of its run; `what` names the bytes in each rank's
    /// report entry (`nodes[].from_rank_0`). For preprocessing that is deterministic but
    /// costly (apsp's contraction hierarchy): made once per job instead of once per rank.
    fn made_on_rank_0(
        &self,
        what: &str,
        make: &mut dyn FnMut() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>>;
}

/// Where a machine's shared graph files go: `/dev/shm` (memory) where there is one, else the
/// temporary directory.
pub fn shared_dir() -> std::path::PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A read-only array of `u32`: owned, or a window of a file mapped read-only.
#[derive(Clone, Default)]
pub struct Words(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Vec<u32>),
    Mapped {
        map: Arc<Mapping>,
        start: usize,
        len: usize,
    },
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Owned(Vec::new())
    }
}

impl std::ops::Deref for Words {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::Mapped { map, start, len } => &map.words()[*start..*start + *len],
        }
    }
}

impl From<Vec<u32>> for Words {
    fn from(v: Vec<u32>) -> Self {
        Words(Repr::Owned(v))
    }
}

impl PartialEq for Words {
    fn eq(&self, o: &Words) -> bool {
        **self == **o
    }
}

impl PartialEq<Vec<u32>> for Words {
    fn eq(&self, o: &Vec<u32>) -> bool {
        **self == o[..]
    }
}

impl<'a> IntoIterator for &'a Words {
    type Item = &'a u32;
    type IntoIter = std::slice::Iter<'a, u32>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Words({} words, {how})", self.len())
    }
}

impl Words {
    /// Whether these words are a window of a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Repr::Mapped { .. })
    }
}

/// A file mapped read-only (`memmap2`), unmapped when the last window on it is dropped.
struct Mapping(memmap2::Mmap);

impl Mapping {
    fn open(path: &Path) -> Result<Mapping> {
        let f = std::fs::File::open(path)
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        let bytes = f
            .metadata()
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?
            .len();
        if bytes == 0 || !bytes.is_multiple_of(4) {
            return Err(Error::Input(format!(
                "{}: {bytes} bytes is not a shared graph",
                path.display()
            )));
        }
        // SAFETY: memmap2's condition is that nobody changes the file while it is mapped. The
        // file is created new (0600) by a rank of this job, written completely before any rank
        // maps it, and never written again; the mapping is read-only and outlives the
        // descriptor.
        let map = unsafe { memmap2::Mmap::map(&f) }
            .map_err(|e| Error::Input(format!("{}: mapping it failed: {e}", path.display())))?;
        let m = Mapping(map);
        if m.words().len() * 4 != m.0.len() {
            // A mapping starts on a page: never seen, but a misaligned view must not be read.
            return Err(Error::Input(format!(
                "{}: the mapping is not aligned to 4 bytes",
                path.display()
            )));
        }
        Ok(m)
    }

    fn words(&self) -> &[u32] {
        // SAFETY: every bit pattern is a valid u32; `align_to` gives the aligned middle (the
        // whole mapping, page-aligned, which `open` checks).
        let (_, words, _) = unsafe { self.0.align_to::<u32>() };
        words
    }
}

/// First words of a shared graph file: magic, version, then n, m and id_base as two words
/// each (low, high).
const MAGIC: u32 = 0x5443_4752; // "TCGR"
const VERSION: u32 = 1;
const HEADER: usize = 8;

impl Csr {
    /// Write this graph into a new file at `path` for [`Csr::map_shared`] (native byte order:
    /// the file is for processes of this machine). An existing file is left alone (an error);
    /// a file this call created and could not finish is removed.
    pub fn write_shared(&self, path: &Path) -> Result<()> {
        let err = |e: std::io::Error| Error::Output(format!("{}: {e}", path.display()));
        // Readable by this user only (the ranks of a job run as one user).
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(err)?;
        self.write_words(f).map_err(|e| {
            let _ = std::fs::remove_file(path);
            err(e)
        })
    }

    fn write_words(&self, f: std::fs::File) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let split = |x: u64| [x as u32, (x >> 32) as u32];
        let mut head = vec![MAGIC, VERSION];
        for x in [self.n as u64, self.m() as u64, self.id_base] {
            head.extend(split(x));
        }
        for part in [&head[..], &self.offsets, &self.targets, &self.weights] {
            for chunk in part.chunks(1 << 16) {
                let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_ne_bytes()).collect();
                w.write_all(&bytes)?;
            }
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_data()
    }

    /// The graph that [`Csr::write_shared`] wrote at `path`, mapped read-only, named `name`.
    pub fn map_shared(path: &Path, name: &str) -> Result<Csr> {
        let map = Arc::new(Mapping::open(path)?);
        let w = map.words();
        let bad =
            |what: &str| Error::Input(format!("{}: not a shared graph ({what})", path.display()));
        if w.len() < HEADER || w[0] != MAGIC || w[1] != VERSION {
            return Err(bad("header"));
        }
        let join = |i: usize| w[i] as u64 | (w[i + 1] as u64) << 32;
        let (n, m, id_base) = (join(2) as usize, join(4) as usize, join(6));
        if n.checked_add(1 + HEADER)
            .and_then(|x| m.checked_mul(2)?.checked_add(x))
            != Some(w.len())
        {
            return Err(bad("its length does not match its header"));
        }
        let window = |start: usize, len: usize| {
            Words(Repr::Mapped {
                map: map.clone(),
                start,
                len,
            })
        };
        let offsets = window(HEADER, n + 1);
        let targets = window(HEADER + n + 1, m);
        if offsets[n] as usize != m
            || offsets.windows(2).any(|p| p[0] > p[1])
            || targets.iter().any(|&v| v as usize >= n)
        {
            return Err(bad("offsets"));
        }
        Ok(Csr {
            n,
            offsets,
            targets,
            weights: window(HEADER + n + 1 + m, m),
            id_base,
            name: name.to_string(),
        })
    }

    /// Whether this graph's arrays are mapped from a shared file.
    pub fn is_shared(&self) -> bool {
        self.targets.is_mapped()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::graph::{generate, GenSpec};

    #[test]
    fn a_shared_graph_maps_back_equal_and_a_bad_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("tuccompi-shared-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec: GenSpec = toml::from_str("model = \"road\"\nvertices = 500\nseed = 9").unwrap();
        let g = Csr::from_edges(&generate(&spec).unwrap()).unwrap();
        let path = dir.join("g");
        g.write_shared(&path).unwrap();
        // Never over an existing file, which stays as it was.
        assert!(g.write_shared(&path).is_err());
        assert!(Csr::map_shared(&path, "kept").is_ok());
        let s = Csr::map_shared(&path, "mapped").unwrap();
        // The file may go once mapped.
        std::fs::remove_file(&path).unwrap();
        assert!(s.is_shared() && !g.is_shared());
        assert_eq!((s.n, s.m(), s.id_base), (g.n, g.m(), g.id_base));
        assert_eq!(
            (&s.offsets[..], &s.targets[..], &s.weights[..]),
            (&g.offsets[..], &g.targets[..], &g.weights[..])
        );
        let c = s.clone();
        drop(s);
        assert_eq!(&c.weights[..], &g.weights[..]);
        // Cut short, a wrong header, empty: errors naming the file.
        let bytes = {
            g.write_shared(&path).unwrap();
            std::fs::read(&path).unwrap()
        };
        // An arc head past the last vertex (the first target word set to n).
        let mut far = bytes.clone();
        let t0 = (HEADER + g.n + 1) * 4;
        far[t0..t0 + 4].copy_from_slice(&(g.n as u32).to_ne_bytes());
        for (i, bad) in [
            bytes[..bytes.len() - 4].to_vec(),
            [&[0u8; 4][..], &bytes[4..]].concat(),
            Vec::new(),
            far,
        ]
        .into_iter()
        .enumerate()
        {
            let p = dir.join(format!("bad{i}"));
            std::fs::write(&p, bad).unwrap();
            let e = Csr::map_shared(&p, "x").unwrap_err().to_string();
            assert!(e.contains(&p.display().to_string()), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
