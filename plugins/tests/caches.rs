//! Files tuccompi reads or replaces outside the output directory (the tuning cache, the speed
//! history, tune's scratch space), and the edges of the command line around them: whatever is
//! planted at a cache's name (a named pipe, a link to a device, a huge file, another program's
//! file) is left alone with a warning, hangs nothing, fails no run and costs no memory; a
//! signal while devices are discovered ends the process with the signal's status.
//!
//! `TUCCOMPI_TEST_BIN` runs these tests against another build of the binary (an earlier
//! commit's), to see them fail where it has the defects they reproduce.

use crate::util::*;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// The binary under test.
fn bin() -> PathBuf {
    std::env::var_os("TUCCOMPI_TEST_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_tuccompi")),
        PathBuf::from,
    )
}

/// What a command did: its status, standard output and error.
struct Done {
    status: ExitStatus,
    out: String,
    err: String,
}

/// Run `cmd` (its output into files of `dir`) for at most `limit`: a command still running
/// then is killed and the test fails, naming what hung.
fn within(mut cmd: Command, dir: &Path, limit: Duration, what: &str) -> Done {
    let (o, e) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, limit, || {
        format!(
            "{what}: still running after {limit:?} (hung); stderr: {}",
            std::fs::read_to_string(&e).unwrap_or_default()
        )
    });
    let done = Done {
        status,
        out: std::fs::read_to_string(&o).unwrap_or_default(),
        err: std::fs::read_to_string(&e).unwrap_or_default(),
    };
    assert!(
        !done.err.contains("panicked"),
        "{what}: panic: {}",
        done.err
    );
    done
}

/// The binary with `args`, in `cwd`, its cache directory `cwd/cache`.
fn tuccompi(cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .env_remove("TUCCOMPI_CACHE")
        .args(args);
    c
}

fn mkfifo(p: &Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

fn is_fifo(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_fifo())
}

/// A small APSP config in `dir` (CPU workers only unless `gpu`), writing into `dir/out`.
fn config(dir: &Path, gpu: bool) -> String {
    let units = if gpu {
        "[units]\ndevice_type = \"all\"\n"
    } else {
        "[units]\nopencl = \"none\"\n"
    };
    let text = format!(
        "{}[output]\ndir = \"out\"\n{units}",
        apsp_gen("road", 400, "seed = 5", "16")
    );
    let p = dir.join("c.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A named pipe at the speed history's name: `history` and `run` used to open it and wait for
/// a writer forever (`run` after making its output directory, leaving an unfinished run).
/// Now both warn that it is a named pipe and go on; the pipe stays.
#[test]
fn a_named_pipe_at_the_speed_history_hangs_neither_history_nor_run() {
    let cwd = tmpdir("caches-fifo-history");
    let fifo = cwd.join("cache/tuccompi/speeds.json");
    mkfifo(&fifo);
    let limit = Duration::from_secs(60);
    let d = within(tuccompi(&cwd, &["history"]), &cwd, limit, "history");
    assert_eq!(d.status.code(), Some(0), "{}", d.err);
    assert!(
        d.err.contains("speeds.json") && d.err.contains("a named pipe"),
        "{}",
        d.err
    );
    assert!(d.out.contains("no speed history"), "{}", d.out);
    let cfg = config(&cwd, false);
    let d = within(tuccompi(&cwd, &["run", &cfg, "-q"]), &cwd, limit, "run");
    assert_eq!(d.status.code(), Some(0), "{}", d.err);
    assert_eq!(
        d.err.matches("a named pipe").count(),
        1,
        "one warning: {}",
        d.err
    );
    assert!(cwd.join("out/report.json").exists());
    assert!(
        !cwd.join("out/.tuccompi-partial").exists(),
        "an unfinished run was left"
    );
    assert!(is_fifo(&fifo));
}

/// A speed history that is a link to `/dev/zero`, or a 2 GiB sparse file: it used to be read
/// whole before its cap was checked (unbounded memory for `/dev/zero`). Under a 1 GiB address
/// space limit, `history` now refuses both unread, with a warning naming what is there.
#[test]
fn a_speed_history_linked_to_dev_zero_or_huge_is_refused_in_bounded_memory() {
    let cwd = tmpdir("caches-huge-history");
    let p = cwd.join("cache/tuccompi/speeds.json");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    for (plant, says) in [
        ("zero", "a symbolic link to /dev/zero"),
        ("sparse", "a file of 2147483648 bytes"),
    ] {
        let _ = std::fs::remove_file(&p);
        if plant == "zero" {
            std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
        } else {
            std::fs::File::create(&p).unwrap().set_len(2 << 30).unwrap();
        }
        let mut sh = Command::new("sh");
        sh.current_dir(&cwd)
            .env("XDG_CACHE_HOME", cwd.join("cache"))
            .args(["-c", "ulimit -v 1048576 && exec \"$0\" history"])
            .arg(bin());
        let d = within(sh, &cwd, Duration::from_secs(60), plant);
        assert_eq!(
            d.status.code(),
            Some(0),
            "{plant}: {:?} {}",
            d.status,
            d.err
        );
        assert!(
            d.err.contains(says) && d.err.contains("left alone"),
            "{plant}: {}",
            d.err
        );
    }
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 << 30);
}

/// `--set` with a key of 20,000 dotted parts used to overflow the stack (exit 134); now it is a
/// clean error naming the `--set` and the limit, as a file's deep key is ("recursion limit").
#[test]
fn a_set_key_of_twenty_thousand_parts_is_a_clean_error() {
    let cwd = tmpdir("caches-deep-set");
    let cfg = config(&cwd, false);
    let key = vec!["a"; 20_000].join(".");
    let set = format!("{key}=1");
    let d = within(
        tuccompi(&cwd, &["check", &cfg, "--set", &set]),
        &cwd,
        Duration::from_secs(60),
        "check",
    );
    assert_eq!(d.status.code(), Some(2), "{:?}: {}", d.status, d.err);
    assert!(
        d.err.contains("--set a.a.a") && d.err.contains("20000 dotted parts"),
        "{}",
        d.err
    );
    assert!(
        d.err.len() < 1000,
        "the key is not repeated whole: {} bytes",
        d.err.len()
    );
}

/// A named pipe at the tuning cache's name: `run` and `check` with an OpenCL device used to
/// wait on it forever. Now each warns once and goes on with predicted launch parameters.
#[test]
fn a_named_pipe_at_the_tuning_cache_hangs_no_run_or_check() {
    if !opencl() {
        return;
    }
    let cwd = tmpdir("caches-fifo-tuning");
    let fifo = cwd.join("cache/tuccompi/tuning.toml");
    mkfifo(&fifo);
    let cfg = config(&cwd, true);
    for cmd in ["check", "run"] {
        let mut c = tuccompi(&cwd, &[cmd, &cfg, "-q"]);
        // PoCL's kernel cache stays the test process's own (warm), not `cwd/cache`.
        c.env("TUCCOMPI_CACHE", &fifo);
        let d = within(c, &cwd, Duration::from_secs(300), cmd);
        assert_eq!(d.status.code(), Some(0), "{cmd}: {}", d.err);
        assert_eq!(
            d.err.matches("tuning.toml: it is a named pipe").count(),
            1,
            "{cmd}: one warning: {}",
            d.err
        );
    }
    assert!(cwd.join("out/report.json").exists());
    assert!(is_fifo(&fifo));
}

/// A tuning cache of garbage (not even UTF-8) used to fail every run that saw an OpenCL
/// device ("stream did not contain valid UTF-8"). Now the run warns once, predicts its
/// launch parameters and finishes; the file is left as it was.
#[test]
fn a_garbage_tuning_cache_fails_no_run() {
    if !opencl() {
        return;
    }
    let cwd = tmpdir("caches-garbage-tuning");
    let cache = cwd.join("tuning.toml");
    let garbage = b"\xff\xfe\x00 not a tuning cache [[[".to_vec();
    std::fs::write(&cache, &garbage).unwrap();
    let cfg = config(&cwd, true);
    let mut c = tuccompi(&cwd, &["run", &cfg, "-q"]);
    c.env("TUCCOMPI_CACHE", &cache);
    let d = within(c, &cwd, Duration::from_secs(300), "run");
    assert_eq!(d.status.code(), Some(0), "{}", d.err);
    assert_eq!(
        d.err.matches("not a tuccompi tuning cache").count(),
        1,
        "one warning: {}",
        d.err
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("out/report.json")).unwrap())
            .unwrap();
    assert!(
        !report["devices"].as_array().unwrap().is_empty(),
        "{report}"
    );
    assert_eq!(std::fs::read(&cache).unwrap(), garbage);
}

/// `tune` options for a short session.
const TUNE: [&str; 4] = ["--repeat", "1", "--sample", "16"];

/// `TUCCOMPI_CACHE` naming a TOML file that is not a tuning cache (here a config): `tune` used
/// to replace it with the cache. Now it refuses before tuning, naming the file, which stays.
#[test]
fn tune_never_replaces_a_file_that_is_not_its_cache() {
    if !opencl() {
        return;
    }
    let cwd = tmpdir("caches-tune-foreign");
    let cfg = config(&cwd, true);
    let before = std::fs::read(&cfg).unwrap();
    let mut c = tuccompi(&cwd, &[&["tune", &cfg][..], &TUNE].concat());
    c.env("TUCCOMPI_CACHE", &cfg);
    let d = within(c, &cwd, Duration::from_secs(300), "tune");
    assert_eq!(d.status.code(), Some(2), "{}", d.err);
    assert!(
        d.err.contains("c.toml") && d.err.contains("not a tuccompi tuning cache"),
        "{}",
        d.err
    );
    assert_eq!(std::fs::read(&cfg).unwrap(), before);
}

/// `tune` used to work in `$TMPDIR/tuccompi-tune-<pid>`: a folder already there made it fail,
/// and then it deleted that folder with its contents. Here a shell plants that folder for its
/// own pid and `exec`s tune (same pid): tune now works in a fresh directory of its own, leaves
/// the planted one as it was and removes only its own. An empty file given as the cache is
/// taken (as the other caches take one).
#[test]
fn tune_works_in_a_fresh_scratch_directory_and_leaves_a_planted_one_alone() {
    if !opencl() {
        return;
    }
    let cwd = tmpdir("caches-tune-scratch");
    let cfg = config(&cwd, true);
    let tmp = cwd.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let cache = cwd.join("empty.toml");
    std::fs::write(&cache, "").unwrap();
    let mut sh = Command::new("sh");
    sh.current_dir(&cwd)
        .env("TMPDIR", &tmp)
        .env("TUCCOMPI_CACHE", &cache)
        .args([
            "-c",
            "d=\"$TMPDIR/tuccompi-tune-$$\" && mkdir -p \"$d/keep\" && echo precious > \"$d/keep/f\" \
             && exec \"$0\" tune \"$@\"",
        ])
        .arg(bin())
        .arg(&cfg)
        .args(TUNE);
    let d = within(sh, &cwd, Duration::from_secs(300), "tune");
    assert_eq!(d.status.code(), Some(0), "{}", d.err);
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tuccompi-tune-"))
        .collect();
    assert_eq!(left.len(), 1, "only the planted folder is left: {left:?}");
    let planted = tmp.join(&left[0]).join("keep/f");
    assert_eq!(std::fs::read_to_string(planted).unwrap(), "precious\n");
    let stored = std::fs::read_to_string(&cache).unwrap();
    assert!(
        stored.starts_with("# tuccompi tuning cache") && stored.contains("batch ="),
        "{stored}"
    );
}

/// SIGTERM while the OpenCL discovery thread runs in the ICD (the input takes seconds to load,
/// so the process stays in its preparation): the process used to end through the C library's
/// exit handlers while that thread ran, and died of a segmentation fault or an abort in some
/// 5 % of tries. Over many tries with the signal at spread times, every one now ends with the
/// signal's status (143, or death by SIGTERM itself when it came before the handler was set).
#[test]
fn a_signal_during_device_discovery_ends_with_the_signals_status() {
    if !opencl() {
        return;
    }
    let cwd = tmpdir("caches-signal-discovery");
    crate::util::slow_graph(&cwd, "g");
    std::fs::write(
        cwd.join("f.toml"),
        "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr.gz\"\n[units]\ndevice_type = \"all\"\n",
    )
    .unwrap();
    // A fixed sequence of delays spread over discovery's first few hundred milliseconds.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut bad = Vec::new();
    const TRIES: usize = 80;
    for i in 0..TRIES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = Duration::from_millis(x % 300);
        let mut child = tuccompi(&cwd, &["run", "f.toml", "-q"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let ok = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let status = wait_within(&mut child, Duration::from_secs(30), || {
            format!("try {i}: still running 30 s after SIGTERM")
        });
        if !(status.code() == Some(143) || status.signal() == Some(SIGTERM)) {
            bad.push(format!("try {i} (signal after {delay:?}): {status:?}"));
        }
    }
    assert!(bad.is_empty(), "{} of {TRIES} tries: {bad:#?}", bad.len());
    assert!(!cwd.join("out").exists());
}

/// SIGTERM's number on Linux.
const SIGTERM: i32 = 15;
