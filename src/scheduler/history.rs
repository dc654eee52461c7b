//! Speed history: each unit class's measured cost model, kept across runs, so that the work
//! queue starts from what an earlier run of the same work measured instead of probing (as
//! StarPU keeps its performance models per codelet and data size).
//!
//! One JSON file in the user's cache directory (`$XDG_CACHE_HOME/tuccompi/speeds.json`, else
//! `~/.cache/tuccompi/speeds.json`; a relative `XDG_CACHE_HOME` is ignored, as the XDG rule
//! says), beside the tuning cache. Entries are keyed by plugin, workload (the job's
//! [`crate::plugin::Details::workload`]: its algorithm and input size), unit class (CPU model and
//! worker count, or device name, driver and queues) and the tasks a unit asks for; a device's
//! entry is the model of the whole device, its queues together. An entry that
//! is not a finite positive model, or a history of another version, is ignored with a note and
//! rewritten after the run. The file is read and replaced through [`crate::owned::CacheFile`]:
//! never through a link, never blocking (a named pipe or a device there is refused), checked
//! against its 64 MiB cap before it is read, and replaced only when it is a speed history (a
//! JSON object of a `version` and `entries`, nothing else); anything else there is left alone
//! with a note, and the run goes on without a history.

use super::Estimate;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file format's version: entries of another are ignored. Version 2: a device's entry is
/// the model of the device, all its queues together (rule *device rate*); version 1 held a
/// queue's. A device's entry may also hold `busy`, how many of its queues the run kept busy
/// (rule *busy queues*), and its model is then the device's with that many busy: an entry
/// without it (written before the rule, or by a run that did not decide) is read as not
/// knowing the count, and a build that does not know the field ignores it, so the version
/// stays 2 both ways.
const VERSION: u32 = 2;
/// Entries kept at most (the oldest go first).
const MAX_ENTRIES: usize = 4096;

/// One unit class's model, as a run measured it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Saved {
    latency: f64,
    per_task: f64,
    /// Tasks the measuring units ran (a model of a handful of tasks is weak).
    tasks: u64,
    /// Seconds since the epoch when it was stored (the oldest are dropped first).
    stored: u64,
    /// For a device: how many of its queues were kept busy (rule *busy queues*), if decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    busy: Option<usize>,
}

impl Saved {
    fn model(&self) -> Estimate {
        Estimate {
            latency: self.latency,
            per_task: self.per_task,
        }
    }
}

/// Seconds since the epoch (a stored model's `stored`).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    entries: BTreeMap<String, Saved>,
}

/// The speed history of this user (loaded at a run's start, stored at its end).
#[derive(Debug, Default)]
pub struct History {
    /// Where it is stored; `None`: it is not (no cache directory, or something that is not a
    /// speed history is at its name).
    path: Option<PathBuf>,
    entries: BTreeMap<String, Saved>,
}

/// The most bytes a speed history holds (4096 entries of a few hundred bytes).
const CAP: u64 = 64 << 20;

/// A speed history's shape, of any version: recognizes the file as one (JSON has no magic).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    #[serde(rename = "version")]
    _version: u64,
    #[serde(rename = "entries")]
    _entries: serde_json::Map<String, serde_json::Value>,
}

fn is_history(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Shape>(bytes).is_ok()
}

/// The history file at `path`, through the rule every cache follows.
fn file(path: &Path) -> crate::owned::CacheFile {
    crate::owned::CacheFile::new(path, "a tuccompi speed history")
        .format(is_history)
        .cap(CAP)
}

/// What [`clear`] found at the history's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleared {
    /// A speed history (or an empty file) was there and is removed.
    Removed,
    /// Nothing was there.
    Absent,
}

/// Remove the speed history at `path`: only a file that [`crate::owned::CacheFile`]
/// recognizes as one (a plain file with the history's JSON shape, or empty). Anything else
/// there (another file, a link, a pipe, a directory) is left alone and refused with an
/// [`Error::Config`] naming the path and what is there.
pub fn clear(path: &Path) -> Result<Cleared> {
    match file(path).open() {
        Ok(None) => Ok(Cleared::Absent),
        Ok(Some(_)) => match std::fs::remove_file(path) {
            Ok(()) => Ok(Cleared::Removed),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Cleared::Absent),
            Err(e) => Err(Error::io(path, e)),
        },
        Err(what) => Err(Error::Config(format!(
            "{}: it is {what}; `history --clear` removes only a tuccompi speed history there: \
             move or remove it yourself if it is not needed",
            path.display()
        ))),
    }
}

/// The history file's path: under the user's cache directory ([`crate::owned::cache_home`]).
pub fn path() -> Option<PathBuf> {
    Some(
        crate::owned::cache_home()?
            .join("tuccompi")
            .join("speeds.json"),
    )
}

/// The key of a unit class's entry.
pub fn key(plugin: &str, workload: &str, class: &str) -> String {
    format!("{plugin} | {workload} | {class}")
}

fn valid(s: &Saved) -> bool {
    s.latency.is_finite() && s.latency >= 0.0 && s.per_task.is_finite() && s.per_task > 0.0
}

impl History {
    /// Load the history at `path`; a missing file is an empty history, and an unreadable one
    /// is ignored with the note returned beside it. A file that is not a speed history (or
    /// not a plain file, or larger than 64 MiB) is left alone: the history is then not stored.
    pub fn load(path: &Path) -> (History, Option<String>) {
        let empty = |keep: bool, note: Option<String>| {
            (
                History {
                    path: keep.then(|| path.to_path_buf()),
                    entries: BTreeMap::new(),
                },
                note,
            )
        };
        let text = match file(path).read() {
            Ok(Some(t)) => t,
            Ok(None) => return empty(true, None),
            Err(what) => {
                return empty(
                    false,
                    Some(format!(
                        "{}: it is {what}; it is left alone and this run keeps no speed \
                         history (remove it to let tuccompi keep one)",
                        path.display()
                    )),
                )
            }
        };
        let file: File = match serde_json::from_slice(&text) {
            Ok(f) => f,
            Err(e) => {
                return empty(
                    true,
                    (!text.is_empty()).then(|| {
                        format!(
                            "{}: unreadable ({e}); the speed history is ignored and replaced \
                             after this run",
                            path.display()
                        )
                    }),
                )
            }
        };
        if file.version != VERSION {
            return empty(
                true,
                Some(format!(
                    "{}: version {} (this build writes {VERSION}); the speed history is ignored \
                     and replaced after this run",
                    path.display(),
                    file.version
                )),
            );
        }
        let all = file.entries.len();
        let entries: BTreeMap<String, Saved> =
            file.entries.into_iter().filter(|(_, s)| valid(s)).collect();
        let note = (entries.len() < all).then(|| {
            format!(
                "{}: {} entries with impossible models ignored",
                path.display(),
                all - entries.len()
            )
        });
        (
            History {
                path: Some(path.to_path_buf()),
                entries,
            },
            note,
        )
    }

    /// The model stored for `key`, if any.
    pub fn get(&self, key: &str) -> Option<Estimate> {
        self.entries.get(key).filter(|s| valid(s)).map(Saved::model)
    }

    /// Every stored model: key, model, tasks it was measured over, seconds since the epoch
    /// when it was stored; in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, Estimate, u64, u64)> {
        self.entries
            .iter()
            .map(|(k, s)| (k.as_str(), s.model(), s.tasks, s.stored))
    }

    /// For a device's `key`: how many of its queues a run kept busy (rule *busy queues*), if
    /// it decided.
    pub fn busy(&self, key: &str) -> Option<usize> {
        self.entries
            .get(key)
            .filter(|s| valid(s))
            .and_then(|s| s.busy)
            .filter(|&b| b > 0)
    }

    /// Remember `model` for `key`, measured over `tasks` tasks.
    pub fn put(&mut self, key: String, model: Estimate, tasks: u64) {
        self.put_busy(key, model, tasks, None);
    }

    /// Remember `model` for `key`, measured over `tasks` tasks with `busy` of the device's
    /// queues busy (rule *busy queues*; `None`: not decided, or not a device).
    pub fn put_busy(&mut self, key: String, model: Estimate, tasks: u64, busy: Option<usize>) {
        let s = Saved {
            latency: model.latency,
            per_task: model.per_task,
            tasks,
            stored: now_secs(),
            busy: busy.filter(|&b| b > 0),
        };
        if valid(&s) {
            self.entries.insert(key, s);
        }
    }

    /// Write the history back (creating its directory), replacing the file atomically.
    pub fn save(&mut self) -> Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        while self.entries.len() > MAX_ENTRIES {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, s)| s.stored)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.entries.remove(&k),
                None => break,
            };
        }
        if path.file_name().is_none() {
            return Err(Error::Output(format!(
                "{}: not a file path for the speed history",
                path.display()
            )));
        }
        let file = File {
            version: VERSION,
            entries: std::mem::take(&mut self.entries),
        };
        let text = serde_json::to_string_pretty(&file).expect("the history serializes");
        self.entries = file.entries;
        self::file(&path).replace(
            text.as_bytes(),
            "remove it to let tuccompi keep a speed history",
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tuccompi-history-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("speeds.json")
    }

    #[test]
    fn a_stored_model_comes_back_and_bad_files_are_ignored_with_a_note() {
        let p = tmp("roundtrip");
        let (mut h, note) = History::load(&p);
        assert!(note.is_none() && h.get("k").is_none());
        let e = Estimate {
            latency: 0.002,
            per_task: 1.5e-4,
        };
        h.put("k".into(), e, 100);
        h.put(
            "bad".into(),
            Estimate {
                latency: f64::NAN,
                per_task: 1.0,
            },
            1,
        );
        h.save().unwrap();
        let (h, note) = History::load(&p);
        assert!(note.is_none(), "{note:?}");
        assert_eq!(h.get("k"), Some(e));
        assert_eq!(h.get("bad"), None);
        // Another version, impossible entries, entries of another shape: ignored, each with
        // a note, and replaced by the next save.
        for (text, says) in [
            (r#"{"version": 2, "entries": {"x": 5}}"#, "unreadable"),
            (r#"{"version": 99, "entries": {}}"#, "version 99"),
            (
                r#"{"version": 2, "entries": {"x": {"latency": -1, "per_task": 0, "tasks": 1, "stored": 0}}}"#,
                "impossible",
            ),
        ] {
            std::fs::write(&p, text).unwrap();
            let (h, note) = History::load(&p);
            assert!(
                note.as_deref().is_some_and(|n| n.contains(says)),
                "{note:?}"
            );
            assert_eq!(h.get("x"), None);
        }
        let (mut h, _) = History::load(&p);
        h.put("k".into(), e, 100);
        h.save().unwrap();
        assert_eq!(History::load(&p).0.get("k"), Some(e));
    }

    /// Rule *busy queues*: a device's count of busy queues comes back with its model; an entry
    /// written before the rule (no `busy`) is read, its count unknown.
    #[test]
    fn a_devices_busy_queues_come_back_and_older_entries_are_read() {
        let p = tmp("busy");
        let e = Estimate {
            latency: 0.002,
            per_task: 4.6e-5,
        };
        let (mut h, _) = History::load(&p);
        h.put_busy("gpu".into(), e, 50_000, Some(1));
        h.put("cpu".into(), e, 100);
        h.save().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("\"busy\"").count(), 1, "{text}");
        let (h, note) = History::load(&p);
        assert!(note.is_none(), "{note:?}");
        assert_eq!((h.get("gpu"), h.busy("gpu")), (Some(e), Some(1)));
        assert_eq!((h.get("cpu"), h.busy("cpu")), (Some(e), None));
        std::fs::write(
            &p,
            r#"{"version": 2, "entries": {"old": {"latency": 0.002, "per_task": 4.6e-5, "tasks": 9, "stored": 0}}}"#,
        )
        .unwrap();
        let (h, note) = History::load(&p);
        assert!(note.is_none(), "{note:?}");
        assert_eq!((h.get("old"), h.busy("old")), (Some(e), None));
    }

    /// What is not a speed history at its name (another program's JSON, garbage, a named
    /// pipe, a link to `/dev/zero`, a 2 GiB sparse file) is refused unread beyond its cap and
    /// never blocking, with a note, and left alone: the history is not stored over it.
    #[test]
    fn what_is_not_a_speed_history_is_refused_unread_and_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let e = Estimate {
            latency: 0.002,
            per_task: 1.5e-4,
        };
        let foreign = d.path().join("foreign.json");
        std::fs::write(&foreign, r#"{"name": "someone else's"}"#).unwrap();
        let garbage = d.path().join("garbage.json");
        std::fs::write(&garbage, "{not json").unwrap();
        let fifo = d.path().join("fifo.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let zero = d.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let sparse = d.path().join("sparse.json");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        for (p, says) in [
            (&foreign, "not a tuccompi speed history"),
            (&garbage, "not a tuccompi speed history"),
            (&fifo, "a named pipe"),
            (&zero, "a symbolic link to /dev/zero"),
            (&sparse, "a file of 2147483648 bytes"),
        ] {
            let (mut h, note) = History::load(p);
            assert!(
                note.as_deref()
                    .is_some_and(|n| n.contains(says) && n.contains("left alone")),
                "{note:?}"
            );
            h.put("k".into(), e, 100);
            h.save().unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(&foreign).unwrap(),
            r#"{"name": "someone else's"}"#
        );
        assert_eq!(std::fs::read_to_string(&garbage).unwrap(), "{not json");
        assert!(std::fs::symlink_metadata(&zero).unwrap().is_symlink());
        assert_eq!(std::fs::metadata(&sparse).unwrap().len(), 2 << 30);
    }

    /// `clear` removes a speed history (and an empty file), says when nothing is there, and
    /// refuses anything else at the name, leaving it and what a link points to untouched.
    #[test]
    fn clear_removes_only_a_speed_history() {
        let p = tmp("clear");
        assert_eq!(clear(&p).unwrap(), Cleared::Absent);
        let (mut h, _) = History::load(&p);
        h.put(
            "k".into(),
            Estimate {
                latency: 0.001,
                per_task: 1e-4,
            },
            10,
        );
        h.save().unwrap();
        assert_eq!(clear(&p).unwrap(), Cleared::Removed);
        assert!(std::fs::symlink_metadata(&p).is_err());
        std::fs::write(&p, "").unwrap();
        assert_eq!(clear(&p).unwrap(), Cleared::Removed);
        // Someone else's JSON, plain text, a link to a file, a directory: all left alone.
        let other = p.with_file_name("notes.txt");
        std::fs::write(&other, "keep me").unwrap();
        for (content, says) in [
            (
                r#"{"name": "someone else's"}"#,
                "not a tuccompi speed history",
            ),
            ("keep me", "not a tuccompi speed history"),
        ] {
            std::fs::write(&p, content).unwrap();
            let e = clear(&p).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("speeds.json"), "{e}");
            assert_eq!(std::fs::read_to_string(&p).unwrap(), content);
        }
        std::fs::remove_file(&p).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&other, &p).unwrap();
            let e = clear(&p).unwrap_err().to_string();
            assert!(e.contains("symbolic link"), "{e}");
            assert!(std::fs::symlink_metadata(&p).unwrap().is_symlink());
            assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep me");
            std::fs::remove_file(&p).unwrap();
        }
        std::fs::create_dir(&p).unwrap();
        assert!(clear(&p).is_err());
        assert!(p.is_dir());
    }
}
