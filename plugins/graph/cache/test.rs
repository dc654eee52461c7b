//! The graph cache: a stored CSR reads back equal; every way a file can be wrong is refused
//! with a reason, never used; an input changed under its name gets another identity.

use super::*;
use crate::graph::{generate, GenSpec};

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tuccompi-gcache-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn graph() -> Csr {
    let spec: GenSpec = toml::from_str("model = \"road\"\nvertices = 400\nseed = 3").unwrap();
    Csr::from_edges(&generate(&spec).unwrap()).unwrap()
}

#[test]
fn stored_graph_reads_back_equal_and_bad_files_are_refused() {
    let d = dir("rw");
    let input = d.join("in.gr");
    std::fs::write(&input, vec![b'x'; 300_000]).unwrap();
    let id = Identity::of(&input).unwrap();
    assert_eq!(id.len, 300_000);
    let g = graph();
    let f = d.join(id.file_name());
    assert_eq!(load(&f, &id, "in.gr").unwrap().map(|g| g.n), None);
    store(&f, &id, &g).unwrap();
    let back = load(&f, &id, "named").unwrap().unwrap();
    assert_eq!((back.n, back.m(), back.id_base), (g.n, g.m(), g.id_base));
    assert_eq!(
        (&back.offsets[..], &back.targets[..], &back.weights[..]),
        (&g.offsets[..], &g.targets[..], &g.weights[..])
    );
    assert_eq!(back.name, "named");
    // Stored again over its own file: allowed.
    store(&f, &id, &g).unwrap();
    let bytes = std::fs::read(&f).unwrap();
    let mut flipped = bytes.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 1;
    let mut far = bytes.clone();
    // The first target word (after the header and n + 1 offsets) set to n.
    let head = bytes.len() - 4 * (g.n + 1 + 2 * g.m());
    let t0 = head + 4 * (g.n + 1);
    far[t0..t0 + 4].copy_from_slice(&(g.n as u32).to_le_bytes());
    for (bad, why) in [
        (bytes[..bytes.len() - 8].to_vec(), "cut short"),
        (flipped, "corrupt"),
        (b"something else".to_vec(), "not a tuccompi graph cache"),
        (
            [&bytes[..12], &99u32.to_le_bytes()[..], &bytes[16..]].concat(),
            "format 99",
        ),
    ] {
        std::fs::write(&f, &bad).unwrap();
        let e = load(&f, &id, "x").unwrap_err();
        assert!(e.contains(why), "{why}: {e}");
    }
    // A checksum that matches arrays that are no CSR: refused by shape (the checksum is
    // recomputed over the planted word, as a writer's bug would make it).
    let off: Vec<u32> = far[head..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let (o, rest) = off.split_at(g.n + 1);
    let (t, w) = rest.split_at(g.m());
    let sum = checksum([o, t, w]).to_le_bytes();
    far[head - 16..head].copy_from_slice(&sum);
    std::fs::write(&f, &far).unwrap();
    assert!(load(&f, &id, "x").unwrap_err().contains("CSR"));
    // Another file's identity: refused as another input.
    let other = d.join("other.gr");
    std::fs::write(&other, vec![b'y'; 300_000]).unwrap();
    store(&f, &id, &g).unwrap();
    let e = load(&f, &Identity::of(&other).unwrap(), "x").unwrap_err();
    assert!(e.contains("another input"), "{e}");
    // A user's file at the cache's name is neither read nor replaced.
    std::fs::write(&f, b"mine").unwrap();
    assert!(store(&f, &id, &g).is_err());
    assert_eq!(std::fs::read(&f).unwrap(), b"mine");
    // Nor a link.
    std::fs::remove_file(&f).unwrap();
    std::os::unix::fs::symlink(&other, &f).unwrap();
    assert!(load(&f, &id, "x").is_err());
    assert!(store(&f, &id, &g).is_err());
    assert_eq!(std::fs::read(&other).unwrap().len(), 300_000);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_input_changed_under_its_name_has_another_identity() {
    let d = dir("id");
    let input = d.join("in.gr");
    let text = vec![b'a'; 5_000_000];
    std::fs::write(&input, &text).unwrap();
    let id = Identity::of(&input).unwrap();
    assert_eq!(Identity::of(&input).unwrap(), id);
    // The same size and time, one sampled byte changed (the last block is sampled).
    let t = std::fs::metadata(&input).unwrap().modified().unwrap();
    let mut changed = text.clone();
    *changed.last_mut().unwrap() = b'b';
    std::fs::write(&input, &changed).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&input)
        .unwrap()
        .set_modified(t)
        .unwrap();
    assert_ne!(Identity::of(&input).unwrap(), id);
    // Replaced by another file with the same content: another inode.
    let id2 = Identity::of(&input).unwrap();
    let tmp = d.join("new");
    std::fs::write(&tmp, &changed).unwrap();
    std::fs::rename(&tmp, &input).unwrap();
    assert_ne!(Identity::of(&input).unwrap(), id2);
    let _ = std::fs::remove_dir_all(&d);
}
