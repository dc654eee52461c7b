//! Inputs that are not regular files, and id files too large to read (issue 47, N6 and N13):
//! a named pipe, `/dev/stdin` or a device as any input file (graph, `.osm.pbf`, `.npy`, `.co`
//! coordinates, id and point files, a plugin's `.npy` through `tuccompi::npy::read`, a
//! declared input's fingerprint) is refused before a byte is read, never waiting on the pipe;
//! `/dev/zero` or a 50 GB sparse file as an id file is refused by its size, unread, in bounded
//! memory.

use crate::util::{tmpdir, wait_within};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

/// `tuccompi ARGS` in `cwd` (its cache there), stdin a pipe nobody writes, killed with a
/// failure after 60 s: the exit code and stderr.
fn tuccompi(cwd: &Path, prefix: &[&str], args: &[&str]) -> (Option<i32>, String) {
    let err = cwd.join("stderr.txt");
    let mut c = if prefix.is_empty() {
        Command::new(env!("CARGO_BIN_EXE_tuccompi"))
    } else {
        let mut c = Command::new(prefix[0]);
        c.args(&prefix[1..]).arg(env!("CARGO_BIN_EXE_tuccompi"));
        c
    };
    let mut child = c
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .env_remove("TUCCOMPI_CACHE")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(60), || {
        format!(
            "tuccompi {args:?} in {} still runs after 60 s (waiting on a pipe?)",
            cwd.display()
        )
    });
    (status.code(), std::fs::read_to_string(&err).unwrap())
}

/// `f` on a thread of its own; a failure naming `what` if it has not returned within 30 s.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{what}: still blocked after 30 s"))
}

/// A named pipe (nobody ever writes it) or a device in the place of each kind of input file:
/// `run` ends at once with exit 2, naming the file, what it is and what to do, and writes
/// nothing (no output directory, no lock held); the pipe is never opened.
#[test]
fn fifo_input_is_refused_before_reading() {
    let cwd = tmpdir("inputs-fifo");
    for name in [
        "g.gr",
        "m.osm.pbf",
        "m.npy",
        "c.co",
        "ids.txt",
        "points.csv",
    ] {
        mkfifo(&cwd.join(name));
    }
    std::fs::write(cwd.join("r.gr"), "p sp 3 2\na 1 2 5\na 2 3 4\n").unwrap();
    let apsp = |input: &str, extra: &str| {
        format!(
            "[run]\nplugin = \"apsp\"\n{extra}[input]\n{input}\n[units]\nopencl = \"none\"\n\
             [output]\ndir = \"out\"\n"
        )
    };
    let cases = [
        (
            apsp("path = \"g.gr\"", ""),
            "g.gr: is a named pipe (FIFO), not a regular file; input.path must name a graph file",
        ),
        (
            apsp("path = \"m.osm.pbf\"", ""),
            "m.osm.pbf: is a named pipe (FIFO), not a regular file; input.path",
        ),
        (
            "[run]\nplugin = \"fw-naive\"\n[input]\npath = \"m.npy\"\n[output]\ndir = \"out\"\n"
                .to_string(),
            "m.npy: is a named pipe (FIFO), not a regular file; input.path must name a .npy file",
        ),
        (
            apsp(
                "path = \"r.gr\"\ncoordinates = \"c.co\"",
                "sources = [[0.5, 0.5]]\n",
            ),
            "c.co: is a named pipe (FIFO), not a regular file; input.coordinates must name a .co \
             file",
        ),
        (
            apsp("path = \"r.gr\"", "sources = { file = \"ids.txt\" }\n"),
            "ids.txt: is a named pipe (FIFO), not a regular file; apsp.sources must name",
        ),
        (
            apsp(
                "path = \"r.gr\"",
                "[apsp]\ntargets = { file = \"points.csv\" }\n",
            ),
            "points.csv: is a named pipe (FIFO), not a regular file; apsp.targets must name",
        ),
        (
            apsp("path = \"/dev/stdin\"", ""),
            "/dev/stdin: is a named pipe (FIFO), not a regular file; input.path",
        ),
        (
            apsp("path = \"r.gr\"", "sources = { file = \"/dev/zero\" }\n"),
            "/dev/zero: is a character device, not a regular file; apsp.sources must name",
        ),
    ];
    for (cfg, says) in cases {
        std::fs::write(cwd.join("f.toml"), &cfg).unwrap();
        let (code, err) = tuccompi(&cwd, &[], &["run", "f.toml"]);
        assert_eq!(code, Some(2), "{cfg}\n{err}");
        assert!(err.contains(says), "{says}\n{err}");
        assert!(
            err.contains("write it to a regular file first (`zcat x.gz > x`"),
            "{err}"
        );
        assert!(!cwd.join("out").exists(), "{cfg}: an output directory");
    }
    // The framework's readers, called by a plugin: a `.npy` input and a declared input's
    // fingerprint.
    let fifo = cwd.join("m.npy");
    let e = within("npy::read of a named pipe", move || {
        tuccompi::npy::read::<f32>(&fifo, Some(2))
            .unwrap_err()
            .to_string()
    });
    assert!(e.contains("m.npy: is a named pipe (FIFO)"), "{e}");
    let fifo = cwd.join("g.gr");
    let e = within("the fingerprint of a named pipe", move || {
        tuccompi::input::Fingerprint::of(&fifo)
            .unwrap_err()
            .to_string()
    });
    assert!(e.contains("g.gr: is a named pipe (FIFO)"), "{e}");
    let e = within("open of /dev/zero", || {
        tuccompi::input::open(Path::new("/dev/zero"), "k", "a file", None)
            .unwrap_err()
            .to_string()
    });
    assert!(e.contains("/dev/zero: is a character device"), "{e}");
}

/// An id file that is `/dev/zero` (a link named `ids.txt`) or a 50 GB sparse file: refused
/// before reading, by what it is or by its size against the 1 GiB cap, under a 1 GiB
/// address-space limit (reading up to the cap, as before, ran out of it).
#[test]
fn an_id_file_too_large_or_a_device_is_refused_unread() {
    let cwd = tmpdir("inputs-huge-ids");
    std::fs::write(cwd.join("r.gr"), "p sp 3 2\na 1 2 5\na 2 3 4\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", cwd.join("zero.txt")).unwrap();
    let sparse = cwd.join("sparse.txt");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(50 << 30)
        .unwrap();
    for (file, says) in [
        ("zero.txt", "zero.txt: is a character device".to_string()),
        (
            "sparse.txt",
            format!(
                "sparse.txt: {} bytes, more than the 1024 MiB apsp.sources may hold",
                50u64 << 30
            ),
        ),
    ] {
        std::fs::write(
            cwd.join("f.toml"),
            format!(
                "[run]\nplugin = \"apsp\"\nsources = {{ file = \"{file}\" }}\n[input]\n\
                 path = \"r.gr\"\n[units]\nopencl = \"none\"\n[output]\ndir = \"out\"\n"
            ),
        )
        .unwrap();
        let (code, err) = tuccompi(
            &cwd,
            &["sh", "-c", "ulimit -v 1048576 && exec \"$0\" \"$@\""],
            &["check", "f.toml"],
        );
        assert_eq!(code, Some(2), "{file}: {err}");
        assert!(err.contains(&says), "{says}\n{err}");
    }
    assert_eq!(std::fs::metadata(&sparse).unwrap().len(), 50 << 30);
    std::fs::remove_file(&sparse).unwrap();
}
