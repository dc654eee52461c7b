//! Graph arrays that the processes of one machine share: one rank of each machine writes its
//! CSR into a file, the others (and it) map that file read-only, so the machine holds one copy
//! of the graph in memory and in its caches (four processes with four copies of osm-moscow ran
//! 4-11% slower than one process; BENCHMARKS.md, "A minute of work").

use super::Csr;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use tuccompi::node::share::{write_new, Mapped, Share};
use tuccompi::{Error, Result};

/// The graph `build` makes, shared by the ranks of this machine through the node layer's
/// machine-local bytes: one rank builds it and writes its arrays, every rank maps them
/// (`nodes[].graph` in the report says which). Where the bytes could not be shared, a rank
/// uses the graph it built or builds its own. Every rank calls it once, in the same place of
/// its run.
pub fn share_csr(share: &dyn Share, build: &mut dyn FnMut() -> Result<Csr>) -> Result<Csr> {
    let mut built = None;
    let mapped = share.machine_bytes("graph", &mut |w| {
        let g = build()?;
        let written = g.write_words(w);
        built = Some(g);
        written.map_err(|e| Error::Output(format!("the shared graph: {e}")))
    })?;
    let own = |built: Option<Csr>, build: &mut dyn FnMut() -> Result<Csr>| match built {
        Some(g) => Ok(g),
        None => build(),
    };
    match mapped {
        None => own(built, build),
        // A mapping that does not hold a graph: this rank's own, as when mapping fails.
        Some(m) => match Csr::from_mapped(m, "the machine's shared graph") {
            Ok(g) => Ok(g),
            Err(_) => own(built, build),
        },
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

/// A mapping of the node layer's viewed as `u32` words, unmapped when the last window on it
/// is dropped.
struct Mapping(Mapped);

impl Mapping {
    fn new(m: Mapped, what: &str) -> Result<Mapping> {
        let bytes = m.bytes().len();
        if bytes == 0 || !bytes.is_multiple_of(4) {
            return Err(Error::Input(format!(
                "{what}: {bytes} bytes is not a shared graph"
            )));
        }
        let m = Mapping(m);
        if m.words().len() * 4 != bytes {
            // A mapping starts on a page: never seen, but a misaligned view must not be read.
            return Err(Error::Input(format!(
                "{what}: the mapping is not aligned to 4 bytes"
            )));
        }
        Ok(m)
    }

    fn words(&self) -> &[u32] {
        // SAFETY: every bit pattern is a valid u32; `align_to` gives the aligned middle (the
        // whole mapping, page-aligned, which `new` checks).
        let (_, words, _) = unsafe { self.0.bytes().align_to::<u32>() };
        words
    }
}

/// First words of a shared graph file: magic, version, then n, m and id_base as two words
/// each (low, high), then the name's length in bytes; the name follows the arrays, padded to
/// a whole word.
const MAGIC: u32 = 0x5443_4752; // "TCGR"
const VERSION: u32 = 2;
const HEADER: usize = 9;

impl Csr {
    /// Write this graph into a new file at `path` for [`Csr::map_shared`] (native byte order:
    /// the file is for processes of this machine). An existing file is left alone (an error);
    /// a file this call created and could not finish is removed.
    pub fn write_shared(&self, path: &Path) -> Result<()> {
        write_new(path, &mut |w| {
            self.write_words(w)
                .map_err(|e| Error::Output(format!("{}: {e}", path.display())))
        })
        .map_err(|e| e.unwrap_or_else(|e| e))
    }

    fn write_words(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let split = |x: u64| [x as u32, (x >> 32) as u32];
        let mut head = vec![MAGIC, VERSION];
        for x in [self.n as u64, self.m() as u64, self.id_base] {
            head.extend(split(x));
        }
        head.push(self.name.len() as u32);
        let mut name = self.name.as_bytes().to_vec();
        name.resize(self.name.len().next_multiple_of(4), 0);
        for part in [&head[..], &self.offsets, &self.targets, &self.weights] {
            for chunk in part.chunks(1 << 16) {
                let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_ne_bytes()).collect();
                w.write_all(&bytes)?;
            }
        }
        w.write_all(&name)?;
        w.flush()
    }

    /// The graph that [`Csr::write_shared`] wrote at `path`, mapped read-only.
    pub fn map_shared(path: &Path) -> Result<Csr> {
        let shown = path.display().to_string();
        Csr::from_mapped(Mapped::open(path)?, &shown)
    }

    /// The graph in the mapped bytes `m`; `what` names them in errors.
    fn from_mapped(m: Mapped, what: &str) -> Result<Csr> {
        let map = Arc::new(Mapping::new(m, what)?);
        let w = map.words();
        let bad = |why: &str| Error::Input(format!("{what}: not a shared graph ({why})"));
        if w.len() < HEADER || w[0] != MAGIC || w[1] != VERSION {
            return Err(bad("header"));
        }
        let join = |i: usize| w[i] as u64 | (w[i + 1] as u64) << 32;
        let (n, m, id_base) = (join(2) as usize, join(4) as usize, join(6));
        let name_len = w[8] as usize;
        let arrays = n
            .checked_add(1 + HEADER)
            .and_then(|x| m.checked_mul(2)?.checked_add(x));
        if arrays.and_then(|a| a.checked_add(name_len.div_ceil(4))) != Some(w.len()) {
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
        let name_at = (HEADER + n + 1 + 2 * m) * 4;
        let name = std::str::from_utf8(&map.0.bytes()[name_at..name_at + name_len])
            .map_err(|_| bad("name"))?
            .to_string();
        Ok(Csr {
            n,
            offsets,
            targets,
            weights: window(HEADER + n + 1 + m, m),
            id_base,
            name,
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
        assert!(Csr::map_shared(&path).is_ok());
        let s = Csr::map_shared(&path).unwrap();
        // The file may go once mapped.
        std::fs::remove_file(&path).unwrap();
        assert!(s.is_shared() && !g.is_shared());
        assert_eq!(
            (s.n, s.m(), s.id_base, &s.name),
            (g.n, g.m(), g.id_base, &g.name)
        );
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
            let e = Csr::map_shared(&p).unwrap_err().to_string();
            assert!(e.contains(&p.display().to_string()), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
