//! Files the run owns: nothing is written through a link, nothing the run did not make is
//! replaced or removed, and a killed writer's temporary files are swept.

use super::*;
use std::os::unix::fs::symlink;
use std::process::Command;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tuccompi-owned-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file outside the directory that a planted link leads to.
fn victim(d: &Path) -> PathBuf {
    let v = d.join("victim");
    std::fs::write(&v, "precious").unwrap();
    v
}

#[test]
fn a_new_file_is_never_created_through_a_planted_link() {
    let d = tmp("create");
    let v = victim(&d);
    symlink(&v, d.join("link")).unwrap();
    symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    for name in ["link", "dangling"] {
        let e = create_new(&d.join(name), "do X").unwrap_err().to_string();
        assert!(
            e.contains("a symbolic link to") && e.contains("do X"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read_to_string(&v).unwrap(), "precious");
    assert!(!d.join("nowhere").exists());
    create_new(&d.join("fresh"), "").unwrap();
    assert!(create_new(&d.join("fresh"), "").is_err(), "never replaced");
}

#[test]
fn reopen_takes_only_a_plain_file() {
    let d = tmp("reopen");
    let v = victim(&d);
    symlink(&v, d.join("link")).unwrap();
    std::fs::hard_link(&v, d.join("hard")).unwrap();
    std::fs::create_dir(d.join("dir")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .unwrap()
        .success());
    for (name, what) in [
        ("link", "symbolic link"),
        ("hard", "2 hard links"),
        ("dir", "directory"),
        ("fifo", "named pipe"),
    ] {
        let e = reopen(&d.join(name), true, "hint").unwrap_err().to_string();
        assert!(e.contains(what), "{name}: {e}");
        assert!(read(&d.join(name), "hint", 1 << 20).is_err(), "{name}");
    }
    assert!(read(&d.join("absent"), "", 1 << 20).unwrap().is_none());
    std::fs::write(d.join("plain"), "x").unwrap();
    assert_eq!(read(&d.join("plain"), "", 1).unwrap().unwrap(), b"x");
    assert_eq!(std::fs::read_to_string(&v).unwrap(), "precious");
}

#[test]
fn a_read_refuses_a_file_over_its_cap_before_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big");
    // A sparse file of 1 GiB: read whole, it would take that much memory.
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(1 << 30).unwrap();
    let e = read(&p, "delete it", 1 << 20).unwrap_err().to_string();
    assert!(
        e.contains("more than 1048576 bytes") && e.contains("delete it"),
        "{e}"
    );
    std::fs::write(&p, "12345").unwrap();
    assert!(read(&p, "", 4).is_err());
    assert_eq!(read(&p, "", 5).unwrap().unwrap(), b"12345");
}

#[test]
fn an_atomic_write_replaces_a_link_never_its_target() {
    let d = tmp("atomic");
    let v = victim(&d);
    symlink(&v, d.join("out.txt")).unwrap();
    // The temporary name of earlier versions, planted: never written through.
    symlink(&v, d.join(".out.txt.tmp")).unwrap();
    write_atomic(&d.join("out.txt"), b"new", "").unwrap();
    assert_eq!(std::fs::read_to_string(&v).unwrap(), "precious");
    let m = std::fs::symlink_metadata(d.join("out.txt")).unwrap();
    assert!(m.file_type().is_file());
    assert_eq!(std::fs::read_to_string(d.join("out.txt")).unwrap(), "new");
    // No temporary file is left; a directory at the name is an error.
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(TMP_MARK))
        .collect();
    assert!(left.is_empty());
    std::fs::create_dir(d.join("sub")).unwrap();
    assert!(write_atomic(&d.join("sub"), b"x", "h")
        .unwrap_err()
        .to_string()
        .contains("a directory"));
}

#[test]
fn remove_plain_leaves_links_and_folders_alone() {
    let d = tmp("remove");
    let v = victim(&d);
    symlink(&v, d.join("link")).unwrap();
    std::fs::create_dir(d.join("dir")).unwrap();
    std::fs::write(d.join("dir/inside"), "x").unwrap();
    std::fs::write(d.join("mine"), "x").unwrap();
    assert!(!remove_plain(&d.join("link")).unwrap());
    assert!(!remove_plain(&d.join("dir")).unwrap());
    assert!(!remove_plain(&d.join("absent")).unwrap());
    assert!(remove_plain(&d.join("mine")).unwrap());
    assert!(d.join("link").exists() && d.join("dir/inside").exists() && v.exists());
    assert!(!d.join("mine").exists());
}

#[test]
fn temporaries_of_dead_writers_are_swept_and_live_ones_kept() {
    let d = tmp("sweep");
    let live = temp_beside(&d.join("h.ch")).unwrap();
    let (h, pid) = writer_of(live.path().file_name().unwrap().to_str().unwrap()).unwrap();
    assert_eq!((h, pid), (host().as_str(), std::process::id()));
    // pid_max is at most 2^22: this process cannot exist.
    let dead = d.join(temp_name_of("h.ch", 99999999));
    let other_host = d.join(temp_name_of("h.ch", 99999999).replace(
        &format!("{TMP_MARK}{}-", host()),
        &format!("{TMP_MARK}elsewhere-"),
    ));
    let not_ours = d.join(".h.ch.99999999.tmp");
    for p in [&dead, &other_host, &not_ours] {
        std::fs::write(p, "0123456789").unwrap();
    }
    let v = victim(&d);
    let dead_link = d.join(temp_name_of("g", 99999998));
    symlink(&v, &dead_link).unwrap();
    assert_eq!(sweep_dead(&d), 10);
    assert!(!dead.exists());
    assert!(live.path().exists(), "a live writer's file stays");
    assert!(
        other_host.exists(),
        "another machine's pid means nothing here (and its renamed host breaks the signature)"
    );
    assert!(not_ours.exists());
    assert!(v.exists() && std::fs::symlink_metadata(&dead_link).is_ok());
}

/// N4 of issue 47: a file merely named like a dead writer's temporary (host and a dead pid
/// right, the rest made up, or a real name with its pid changed) is not tuccompi's: kept.
#[test]
fn a_file_named_like_a_dead_writers_temporary_is_kept() {
    let d = tmp("sweep-planted");
    let made_up = d.join(format!(".X{TMP_MARK}{}-99999999.Y{TMP_SUFFIX}", host()));
    let repid = d.join(temp_name_of("h.ch", 4242).replace("-4242.", "-99999999."));
    for p in [&made_up, &repid] {
        std::fs::write(p, "precious").unwrap();
        assert!(!is_our_temporary(&p.file_name().unwrap().to_string_lossy()));
    }
    assert_eq!(sweep_dead(&d), 0);
    assert!(made_up.exists() && repid.exists());
    assert!(is_our_temporary(&temp_name_of("h.ch", 99999999)));
}

#[test]
fn a_relative_xdg_cache_home_is_ignored() {
    let os = |s: &str| Some(std::ffi::OsString::from(s));
    assert_eq!(cache_home_of(os("/c"), os("/h")), Some(PathBuf::from("/c")));
    assert_eq!(
        cache_home_of(os("~/c"), os("/h")),
        Some(PathBuf::from("/h/.cache"))
    );
    assert_eq!(
        cache_home_of(os(""), os("/h")),
        Some(PathBuf::from("/h/.cache"))
    );
    assert_eq!(cache_home_of(os("rel"), os("also-rel")), None);
    assert_eq!(cache_home_of(None, None), None);
}

#[test]
fn whole_files_get_the_umask_mode_not_a_secret_one() {
    let d = tmp("mode");
    write_atomic(&d.join("r.json"), b"{}", "").unwrap();
    let mode = std::fs::metadata(d.join("r.json")).unwrap().mode() & 0o777;
    std::fs::write(d.join("plain"), "").unwrap();
    let plain = std::fs::metadata(d.join("plain")).unwrap().mode() & 0o777;
    assert_eq!(mode, plain);
}

/// A cache file is opened never through a link and never blocking: a named pipe, a link (to
/// `/dev/zero` or to a real cache), a directory, a socket-free device are refused in words,
/// at once, and a file over the cap is refused before a byte of it is read.
#[test]
fn a_cache_file_refuses_links_pipes_devices_and_oversized_files_unread() {
    let d = tmp("cache-kinds");
    let real = d.join("real");
    std::fs::write(&real, b"MAGIC and more").unwrap();
    symlink(&real, d.join("link")).unwrap();
    symlink("/dev/zero", d.join("zero")).unwrap();
    std::fs::create_dir(d.join("dir")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .unwrap()
        .success());
    // A sparse file of 2 GiB with the magic: read whole, it would take that much memory.
    let big = d.join("big");
    std::fs::write(&big, b"MAGIC").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let cache = |name: &str| {
        CacheFile::new(d.join(name), "a test cache")
            .magic(b"MAGIC")
            .cap(1 << 20)
    };
    for (name, what) in [
        ("link", "a symbolic link to"),
        ("zero", "a symbolic link to /dev/zero"),
        ("dir", "a directory"),
        ("fifo", "a named pipe"),
        (
            "big",
            "a file of 2147483648 bytes, more than a test cache ever holds",
        ),
    ] {
        let c = cache(name);
        let e = c.read().unwrap_err();
        assert!(e.contains(what), "{name}: {e}");
        assert!(c.open().is_err(), "{name}");
        assert!(c.replaceable().is_err(), "{name}");
        let e = c.replace(b"MAGIC new", "do X").unwrap_err().to_string();
        assert!(e.contains(what) && e.contains("do X"), "{name}: {e}");
    }
    // Through it all, the device is a device, the link a link, the file unchanged.
    assert!(std::fs::symlink_metadata(d.join("zero"))
        .unwrap()
        .is_symlink());
    assert_eq!(std::fs::read(&real).unwrap(), b"MAGIC and more");
    assert_eq!(cache("real").read().unwrap().unwrap(), b"MAGIC and more");
    assert!(cache("absent").read().unwrap().is_none());
}

/// Only the cache's own file is read or replaced: empty, its magic, or (without a magic) its
/// format; a foreign file is refused after its first bytes and left as it was.
#[test]
fn a_cache_file_is_replaced_only_when_its_magic_or_format_says_it_is_ours() {
    let d = tmp("cache-own");
    let by_magic = |name: &str| CacheFile::new(d.join(name), "a test cache").magic(b"MAGIC");
    std::fs::write(d.join("foreign"), "someone's notes").unwrap();
    let e = by_magic("foreign").read().unwrap_err();
    assert_eq!(e, "a file that is not a test cache");
    let e = by_magic("foreign")
        .replace(b"MAGIC x", "do X")
        .unwrap_err()
        .to_string();
    assert!(e.contains("replaces only a test cache there: do X"), "{e}");
    assert_eq!(
        std::fs::read_to_string(d.join("foreign")).unwrap(),
        "someone's notes"
    );
    // Empty (made by `touch`), absent, ours: replaced.
    std::fs::write(d.join("empty"), "").unwrap();
    for name in ["empty", "absent", "empty"] {
        by_magic(name).replace(b"MAGIC 1", "").unwrap();
        assert_eq!(by_magic(name).read().unwrap().unwrap(), b"MAGIC 1");
    }
    // A format with no magic: recognized by its check, else foreign.
    let json = |name: &str| {
        CacheFile::new(d.join(name), "a test history")
            .format(|b| b.starts_with(b"{") && b.ends_with(b"}"))
    };
    std::fs::write(d.join("h"), "{1}").unwrap();
    json("h").replace(b"{2}", "").unwrap();
    let (mut f, len) = json("h").open().unwrap().unwrap();
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!((s.as_str(), len), ("{2}", 3));
    std::fs::write(d.join("h"), "[1]").unwrap();
    assert!(json("h").replace(b"{3}", "").is_err());
    assert_eq!(std::fs::read_to_string(d.join("h")).unwrap(), "[1]");
    // Nothing was left behind by the refusals and replacements.
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// N7 and N8 of issue 47: a scratch folder is private (0700) and removed when dropped, and by
/// `remove_scratch_for_exit` (a process ending on a signal runs no destructor).
#[test]
fn a_scratch_folder_is_private_and_removed_at_exit() {
    let a = Scratch::new("tuccompi-test-scratch-").unwrap();
    let mode = std::fs::metadata(a.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let b = Scratch::new("tuccompi-test-scratch-").unwrap();
    std::fs::write(b.path().join("x"), "1").unwrap();
    let (pa, pb) = (a.path().to_path_buf(), b.path().to_path_buf());
    drop(a);
    assert!(!pa.exists());
    remove_scratch_for_exit();
    assert!(!pb.exists());
    drop(b);
}
