//! What fuzzing found, each a named test of the input that found it (the inputs are in the
//! targets' corpora too, so every fuzz run replays them). Each failed before its fix: a panic,
//! or an allocation over the guard's limit (an abort of this binary).

use std::path::Path;
use tuccompi_fuzz::encode::npy;
use tuccompi_fuzz::harness::{corpus_dir, run_case};
use tuccompi_fuzz::targets::target;

/// `input` runs through the target `name` without a panic, a refused allocation or a hang;
/// whether the parser accepted it.
fn passes(name: &str, input: &[u8]) -> bool {
    let t = target(name).expect("a target");
    match run_case(t, input) {
        Ok(accepted) => accepted,
        Err((kind, msg)) => panic!("{name}: {kind:?}: {msg}"),
    }
}

fn corpus(target: &str, name: &str) -> Vec<u8> {
    std::fs::read(corpus_dir(target).join(name)).expect("a corpus file")
}

/// A `.npy` header of version 2 or 3 declares its length in 4 bytes; npyz allocated that many
/// (up to 4 GiB) before reading them, so an 80-byte file asked for 4 GiB. The readers now check
/// the length against the file first (`tuccompi::npy::header_fits`).
#[test]
fn npy_header_longer_than_its_file_is_refused_before_it_is_allocated() {
    let found = corpus("npy", "found-v2-header-length.npy");
    assert!(!passes("npy", &found));
    assert!(!passes("npy_matrix", &found));
    assert!(!passes("ids_npy", &found));
    let found = corpus("ids_npy", "found-v3-header-length.npy");
    assert!(!passes("ids_npy", &found));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.npy");
    std::fs::write(&p, b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'").unwrap();
    let e = tuccompi::npy::read::<u8>(&p, None).unwrap_err().to_string();
    assert!(
        e.contains("a.npy: not a .npy file")
            && e.contains("(its header declares 4294967295 bytes, and 8 follow)"),
        "{e}"
    );
    // A whole header is read as before.
    std::fs::write(&p, npy("|u1", false, &[2], &[4, 5])).unwrap();
    assert_eq!(tuccompi::npy::read::<u8>(&p, Some(1)).unwrap().data, [4, 5]);
}

/// A 0-d array (a numpy scalar, shape `()`) read with any number of dimensions: `cols()`
/// sliced `shape[1..]` and panicked; it is 1.
#[test]
fn npy_scalar_array_has_one_row_of_one_column() {
    let scalar = npy("|u1", false, &[], &[42]);
    assert!(passes("npy", &scalar));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.npy");
    std::fs::write(&p, &scalar).unwrap();
    let a = tuccompi::npy::read::<u8>(&p, None).unwrap();
    assert_eq!((a.rows(), a.cols(), a.row(0)), (1, 1, &[42u8][..]));
}

/// `p sp 3 444444442`: the reader reserved room for every arc a header declared, up to 2^28
/// (4 GiB), before reading any; a 35-byte file asked for 4 GiB. It now reserves at most 2^20
/// arcs up front and grows with what it reads.
#[test]
fn graph_header_declaring_many_arcs_reserves_only_what_is_read() {
    let found = corpus("gr", "found-reserve-declared-arcs.gr");
    assert!(!passes("gr", &found));
    assert!(!passes(
        "mtx",
        b"%%MatrixMarket matrix coordinate integer symmetric\n3 3 200000000\n1 2 3\n"
    ));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.gr");
    std::fs::write(&p, &found).unwrap();
    let e = tuccompi_plugins::graph::read_graph(Path::new(&p))
        .unwrap_err()
        .to_string();
    // Refused as cut short, or (on a machine with less memory) as too large for it.
    assert!(e.contains("444444442 arcs"), "{e}");
}

/// `{{{{{{{{{{{{{{{{{{{{`: npyz's header parser (py_literal) takes time exponential in the
/// nesting (16 braces: minutes), so a 31-byte `.npy` hung every reader of one (the harness's
/// 10 s limit found it in all three targets). Headers nesting more than 8 brackets are now
/// refused before npyz parses them; the case must take well under a second.
#[test]
fn npy_header_of_nested_brackets_is_refused_at_once() {
    for (target, name) in [
        ("npy", "found-nested-braces.npy"),
        ("npy_matrix", "found-nested-shape.npy"),
        ("ids_npy", "found-nested-lists.npy"),
    ] {
        let input = corpus(target, name);
        // On a thread of its own: without the fix the case runs for hours, and the test must
        // fail, not wait.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(passes(target, &input)));
        let got = rx.recv_timeout(std::time::Duration::from_secs(5));
        assert_eq!(got, Ok(false), "{target}: {name}");
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("n.npy");
    std::fs::write(&p, corpus("npy", "found-nested-braces.npy")).unwrap();
    let e = tuccompi::npy::read::<u8>(&p, None).unwrap_err().to_string();
    assert!(
        e.contains("n.npy: not a .npy file")
            && e.contains("(its header nests brackets more than 8 deep; numpy writes 2)"),
        "{e}"
    );
    // A record type's header nests a few brackets and still reaches npyz (which reads it).
    let header = b"{'descr': [('a', '<i4'), ('b', [('c', '<f8')])], 'fortran_order': False, 'shape': (1,), }\n";
    let mut rec = b"\x93NUMPY\x01\x00".to_vec();
    rec.extend_from_slice(&(header.len() as u16).to_le_bytes());
    rec.extend_from_slice(header);
    rec.extend_from_slice(&[0; 12]);
    assert!(tuccompi::npy::header_fits(&rec).is_ok());
}

/// The commit marker target reaches its success path: the corpus's `proven.json` proves the
/// target's staged run (content hashes, the hash of its `run.json`, a journal of every task),
/// so the lock finishes that commit and `a.csv` is in place; a list of names proves nothing.
#[test]
fn a_proven_commit_marker_in_the_corpus_is_finished_and_a_list_is_not() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/commit_marker");
    let proven = std::fs::read(corpus.join("proven.json")).unwrap();
    assert!(tuccompi_fuzz::targets::commit_marker(&proven));
    let out = tuccompi_fuzz::targets::scratch("out");
    assert!(out.join("a.csv").exists() && !out.join(".tuccompi-partial").exists());
    let names = std::fs::read(corpus.join("names.txt")).unwrap();
    assert!(!tuccompi_fuzz::targets::commit_marker(&names));
    assert!(!out.join("a.csv").exists() && out.join(".tuccompi-partial").exists());
}
