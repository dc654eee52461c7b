//! The tuning cache is replaced only when it is one, and a run never fails on what is at its
//! name.

use super::*;
use std::process::Command;

fn one() -> Cache {
    let mut c = Cache::default();
    c.entries.insert(
        "dev | 1.0 | myplugin.kernels.u32 | n~2^12".into(),
        Entry {
            local_size: Some(64),
            batch: Some(16),
            knobs: Default::default(),
        },
    );
    c
}

/// A TOML file that is not a tuning cache (a config), given as the cache: tune refuses it
/// before any tuning and never replaces it; a run reads it as no cache.
#[test]
fn a_toml_file_that_is_not_a_tuning_cache_is_never_replaced() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("myplugin.toml");
    let config = "[run]\nplugin = \"myplugin\"\nsources = 8\n";
    std::fs::write(&p, config).unwrap();
    let e = Cache::load_at(&p).unwrap_err().to_string();
    assert!(
        e.contains("myplugin.toml")
            && e.contains("not a tuccompi tuning cache")
            && e.contains("TUCCOMPI_CACHE"),
        "{e}"
    );
    let e = one().save_at(&p).unwrap_err().to_string();
    assert!(e.contains("replaces only a tuccompi tuning cache"), "{e}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), config);
    assert!(Cache::read_at(&p).entries.is_empty());
    // Nothing else was left beside it.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

/// An empty file, a cache of this build and a cache written before the first line existed are
/// the cache's: read back and replaced.
#[test]
fn an_empty_file_a_cache_and_a_legacy_cache_are_taken() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tuning.toml");
    std::fs::write(&p, "").unwrap();
    assert!(Cache::load_at(&p).unwrap().entries.is_empty());
    one().save_at(&p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.starts_with(MAGIC), "{text}");
    assert_eq!(Cache::read_at(&p).entries, one().entries);
    assert_eq!(Cache::load_at(&p).unwrap().entries, one().entries);
    // The same entries without the first line: a cache of an earlier build.
    let legacy = toml::to_string_pretty(&one()).unwrap();
    std::fs::write(&p, &legacy).unwrap();
    assert_eq!(Cache::read_at(&p).entries, one().entries);
    Cache::default().save_at(&p).unwrap();
    assert!(Cache::read_at(&p).entries.is_empty());
}

/// Garbage, a named pipe, a link (to `/dev/zero`), a file over the cap: a run reads no cache
/// (never blocking, never reading past the cap) and nothing there is replaced; a garbled
/// cache of this build (its first line, then garbage) is replaced by tune.
#[test]
fn what_is_not_a_tuning_cache_is_read_as_none_and_left_alone() {
    let d = tempfile::tempdir().unwrap();
    let garbage = d.path().join("garbage");
    std::fs::write(&garbage, b"\xff\xfe not text").unwrap();
    let fifo = d.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let link = d.path().join("link");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let big = d.path().join("big");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(CAP + 1)
        .unwrap();
    for p in [&garbage, &fifo, &link, &big] {
        assert!(Cache::read_at(p).entries.is_empty(), "{}", p.display());
        assert!(Cache::load_at(p).is_err(), "{}", p.display());
        assert!(one().save_at(p).is_err(), "{}", p.display());
    }
    assert_eq!(std::fs::read(&garbage).unwrap(), b"\xff\xfe not text");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let garbled = d.path().join("garbled");
    std::fs::write(&garbled, format!("{MAGIC}\n[entries\n")).unwrap();
    assert!(Cache::read_at(&garbled).entries.is_empty());
    assert!(Cache::load_at(&garbled).unwrap().entries.is_empty());
    one().save_at(&garbled).unwrap();
    assert_eq!(Cache::read_at(&garbled).entries, one().entries);
}
