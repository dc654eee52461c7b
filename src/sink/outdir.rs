//! The output directory: checked before anything is written, locked while a run writes, and
//! changed only by moving a finished run's files into place.
//!
//! Layout of `output.dir`:
//! - the files of the last complete run (`report.json`, `summary.csv`, ...), listed in
//!   `.tuccompi-files`;
//! - `.tuccompi.lock`: locked (`flock`, through `File::try_lock`) by the run that writes here,
//!   and naming it ("pid P on HOST") for the message a second run gets. The kernel drops the lock when its
//!   process dies, however it dies, so a lock file left behind by a killed run is stale by
//!   construction: the next run takes it over (and says so, since a clean end empties it);
//! - `.tuccompi-partial/`: the unfinished run, if any: its outputs so far, `run.json` (what it
//!   computes: the result-defining config, the input's content hash, the task count) and its
//!   `journal`.
//!
//! Commit: the finished run's files are synced and described in a [`Manifest`] (each file's
//! name, size, identity on disk and, up to [`HASHED_BYTES`], content hash; the task count)
//! written to `.tuccompi-partial/COMMIT`; then the previous run's files that the new run does
//! not have are removed, the new ones renamed into place, the manifest written as
//! `.tuccompi-files` and the partial folder removed. A commit cut short (a crash between two
//! renames) is finished by the next run that takes the lock, and only when it is proven: the
//! marker parses, agrees with the run's `run.json`, the journal holds every task, and every
//! file it names is where it should be, as it was written. Anything else is left as it is
//! and refused, naming it (SQLite's rule: a transaction is committed only when its journal
//! proves it).
//!
//! A file is the run's own only when a manifest proves it (git's rule): same size, and the
//! same inode and modification time, or the same content hash. A copied `report.json`, a
//! list planted from elsewhere or a file put at a listed name later proves nothing: it is
//! kept, and a directory holding it is not taken for tuccompi's. So the directory holds the files of one complete run, plus at most one
//! unfinished run in its partial folder, and a run that fails never touches the complete result.
//! During the commit itself (moments) a reader can see some new files beside old ones; the
//! README says so.
//!
//! Every file here is written through [`crate::owned`]: created new or renamed into place,
//! never through a link; only plain files at names the run owns (its list, its reserved
//! names) are removed or replaced, and a directory or a link at such a name is left alone.

use crate::owned;
use crate::sink::write_file;
use crate::{Error, Result};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Component, Path, PathBuf};

/// The folder of the unfinished run, inside the output directory.
pub const PARTIAL: &str = ".tuccompi-partial";
/// The lock file, inside the output directory.
pub const LOCK: &str = ".tuccompi.lock";
/// The list of the complete run's files, inside the output directory.
pub const FILES: &str = ".tuccompi-files";
/// The journal, inside the partial folder.
pub const JOURNAL: &str = "journal";
/// What the unfinished run computes, inside the partial folder.
pub const IDENTITY: &str = "run.json";
/// Written into the partial folder when its files are complete and being moved into place.
const COMMIT: &str = "COMMIT";
/// The most bytes read from a small file of the run (`run.json`, the file lists): far more
/// than a run writes there, far less than a planted file could hold.
pub const SMALL_FILE_CAP: u64 = 256 << 20;
/// Files up to this size get a content hash in a manifest, so that a copy of an output
/// directory is still recognized (larger files are recognized by their inode and time).
pub const HASHED_BYTES: u64 = 64 << 20;
/// The most files a manifest names.
const MANIFEST_FILES: usize = 10_000;
/// The report every run writes (a commit marker that names none proves nothing).
const REPORT: &str = "report.json";
/// The `format` field of a manifest.
const MANIFEST_FORMAT: &str = "tuccompi-manifest";

/// What a run committed: its task count and record width, and each of its files as it was
/// written. Written as `COMMIT` in the partial folder (the marker of a commit under way) and
/// as `.tuccompi-files` in the output directory (the complete run's files).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `"tuccompi-manifest"`.
    pub format: String,
    /// Format version (1).
    pub version: u32,
    /// Tasks of the run (its journal must hold every one for a commit to be finished).
    pub tasks: u64,
    /// Words of each task's record.
    pub record_words: u64,
    /// xxh3-64 (hex) of the run's `run.json`: the marker belongs to that run alone.
    pub run: String,
    /// The files whose rows the journal checksums (one row per task): checked against it
    /// before a commit cut short is finished.
    pub bulk: Vec<BulkRows>,
    /// The files, sorted by name.
    pub files: Vec<FileProof>,
}

/// A file of a [`Manifest`] whose row `t` is task `t`'s, as the journal checksums it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkRows {
    /// Its name (one of the manifest's files).
    pub name: String,
    /// Byte offset of row 0.
    pub offset: u64,
    /// Bytes of one task's rows.
    pub row_bytes: u64,
}

/// One file of a [`Manifest`]: what proves that a file at that name is the one written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileProof {
    /// Its name in the output directory (a plain name, no folder).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its inode where it was written (a rename keeps it; the device number is not kept,
    /// since it may change across a reboot or a remount).
    pub ino: u64,
    /// Modification time, seconds and nanoseconds.
    pub mtime: (i64, i64),
    /// xxh3-64 of its content (hex), for files up to [`HASHED_BYTES`].
    pub xxh3: Option<String>,
}

impl FileProof {
    /// The proof of the plain file at `path`, under `name`.
    pub fn of(path: &Path, name: &str) -> Result<FileProof> {
        use std::os::unix::fs::MetadataExt;
        let f = owned::reopen(path, false, RESTART)?;
        let m = f.metadata().map_err(|e| Error::io(path, e))?;
        let xxh3 = if m.len() <= HASHED_BYTES {
            Some(hash_file(f, path)?)
        } else {
            None
        };
        Ok(FileProof {
            name: name.into(),
            size: m.len(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            xxh3,
        })
    }

    /// Whether the file at `path` is this one: a plain file (never a link) of the same size,
    /// with the same inode and time or, when a hash was kept, the same content.
    pub fn proves(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Ok(m) = std::fs::symlink_metadata(path) else {
            return false;
        };
        if !m.file_type().is_file() || m.len() != self.size {
            return false;
        }
        if (m.ino(), (m.mtime(), m.mtime_nsec())) == (self.ino, self.mtime) {
            return true;
        }
        let Some(want) = &self.xxh3 else {
            return false;
        };
        owned::reopen(path, false, "")
            .and_then(|f| hash_file(f, path))
            .is_ok_and(|h| &h == want)
    }
}

/// xxh3-64 of a file's content (at most [`HASHED_BYTES`] + 1 bytes are read), in hex.
fn hash_file(f: File, path: &Path) -> Result<String> {
    hash_upto(f, path, HASHED_BYTES + 1)
}

/// The xxh3-64 (hex) of the whole plain file at `path` (never through a link).
pub fn hash_path(path: &Path) -> Result<String> {
    hash_upto(owned::reopen(path, false, "")?, path, u64::MAX)
}

/// The xxh3 of what `f` holds from its position on (`path` names it in messages).
pub(crate) fn hash_whole(f: File, path: &Path) -> Result<String> {
    hash_upto(f, path, u64::MAX)
}

fn hash_upto(f: File, path: &Path, limit: u64) -> Result<String> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut r = f.take(limit);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => h.update(&buf[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(format!("{:016x}", h.digest()))
}

impl Manifest {
    /// Parse a manifest's bytes, checking every name is a plain name tuccompi may write
    /// (no folder, not hidden, not the partial folder's own files), none twice, and the
    /// file count bounded. A message says what is wrong.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Manifest, String> {
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| {
            format!("not a tuccompi manifest ({e}); tuccompi writes a JSON object with \"format\": \"{MANIFEST_FORMAT}\"")
        })?;
        if m.format != MANIFEST_FORMAT || m.version != 1 {
            return Err(format!(
                "format {:?} version {}, not {MANIFEST_FORMAT:?} version 1",
                m.format, m.version
            ));
        }
        if m.files.len() > MANIFEST_FILES {
            return Err(format!("{} files, more than a run writes", m.files.len()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for f in &m.files {
            if !plain_name(&f.name) || [JOURNAL, IDENTITY, COMMIT].contains(&f.name.as_str()) {
                return Err(format!("names {:?}, not a name tuccompi writes", f.name));
            }
            if !seen.insert(&f.name) {
                return Err(format!("names {:?} twice", f.name));
            }
        }
        if let Some(b) = m.bulk.iter().find(|b| !seen.contains(&b.name)) {
            return Err(format!("its rows file {:?} is not among its files", b.name));
        }
        Ok(m)
    }

    fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest serializes")
    }

    /// The file named `name`, if listed.
    fn get(&self, name: &str) -> Option<&FileProof> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// Read and parse the manifest at `p`: `Ok(None)` when nothing is there; an error in words
/// when something else is there or it does not parse.
fn read_manifest(p: &Path) -> std::result::Result<Option<Manifest>, String> {
    match owned::read(p, "", SMALL_FILE_CAP) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => Manifest::parse(&bytes).map(Some),
        Err(_) => Err(format!("it is {}", owned::describe(p))),
    }
}

fn refuse(dir: &Path, why: &str) -> Error {
    Error::Output(format!(
        "output.dir = {:?} {why}",
        dir.display().to_string()
    ))
}

/// Whether `name` (from a file list) names a plain entry of the output directory: not empty,
/// not hidden (the run's own bookkeeping), no path separator (nothing outside the directory).
fn plain_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains('/')
}

/// What the hint of a message about a file in the partial folder says to do.
const RESTART: &str = "start over with --restart (it discards the unfinished run's folder, \
                       removing links without following them)";

/// `path` made absolute, `.` and `..` resolved lexically, then the longest existing prefix
/// resolved by the filesystem (symbolic links).
fn resolve(path: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_owned()),
            None => break,
        }
        existing.pop();
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    Ok(out)
}

/// The nearest existing ancestor of `path` (itself when it exists).
fn nearest_existing(path: &Path) -> Result<PathBuf> {
    let mut p = resolve(path)?;
    while !p.exists() {
        if !p.pop() {
            break;
        }
    }
    Ok(p)
}

/// Check that `dir` can hold tuccompi's outputs, touching nothing: not empty, not the root,
/// the current directory or one of its ancestors, not the home directory, not a file (nor
/// under one), and, when it exists and has files, a directory of tuccompi results.
pub fn validate(dir: &Path) -> Result<()> {
    if dir.as_os_str().is_empty() {
        return Err(Error::Output(
            "output.dir is empty: name a directory for the results, e.g. output.dir = \"tuccompi-out\""
                .into(),
        ));
    }
    // A shell expands `~`; TOML and tuccompi do not: the run would make a folder named `~`.
    if dir.starts_with("~") {
        return Err(refuse(
            dir,
            &format!(
                "starts with ~, which only a shell expands: write the full path{}",
                home_dir().map_or(String::new(), |h| format!(
                    ", e.g. \"{}\"",
                    h.join(dir.strip_prefix("~").unwrap_or(dir)).display()
                ))
            ),
        ));
    }
    // A link to nothing: creating the directory would fail with a bare "File exists".
    if let Ok(m) = std::fs::symlink_metadata(dir) {
        if m.file_type().is_symlink() && !dir.exists() {
            return Err(refuse(
                dir,
                &format!(
                    "is {} that leads nowhere: create the directory it names, remove the \
                     link, or choose another output.dir",
                    owned::describe(dir)
                ),
            ));
        }
    }
    let r = resolve(dir)?;
    if r.parent().is_none() {
        return Err(refuse(
            dir,
            "is the filesystem root; name a directory of its own for the results, e.g. \"tuccompi-out\"",
        ));
    }
    if let Ok(cwd) = std::env::current_dir().and_then(|c| c.canonicalize()) {
        if cwd == r {
            return Err(refuse(
                dir,
                "is the current directory: tuccompi would write among your files; name a \
                 subdirectory, e.g. \"tuccompi-out\"",
            ));
        }
        if cwd.starts_with(&r) {
            return Err(refuse(
                dir,
                "contains the current directory; name a directory of its own, e.g. \"tuccompi-out\"",
            ));
        }
    }
    if let Some(home) = home_dir().and_then(|h| h.canonicalize().ok()) {
        if home.starts_with(&r) {
            return Err(refuse(
                dir,
                &format!(
                    "is your home directory (or contains it); name a directory of its own, \
                     e.g. \"{}\"",
                    home.join("tuccompi-out").display()
                ),
            ));
        }
    }
    let mut up = r.clone();
    while !up.exists() {
        up.pop();
    }
    if !up.is_dir() {
        return Err(if up == r {
            refuse(
                dir,
                "is a file, not a directory; remove the file or choose another output.dir",
            )
        } else {
            refuse(
                dir,
                &format!(
                    "cannot be created: {} is a file, not a directory",
                    up.display()
                ),
            )
        });
    }
    if up == r {
        let foreign = foreign_entries(&r)?;
        if !foreign.is_empty() {
            const SHOWN: usize = 5;
            let mut named: Vec<String> = foreign
                .iter()
                .take(SHOWN)
                .map(|n| format!("{n:?}"))
                .collect();
            if foreign.len() > SHOWN {
                named.push(format!("and {} more", foreign.len() - SHOWN));
            }
            return Err(refuse(
                dir,
                &format!(
                    "holds {} that no tuccompi run made here ({}){}: tuccompi writes only into \
                     a new, empty or earlier tuccompi output directory, whose manifest {FILES} \
                     proves its files (same size, and same inode and time or same content); \
                     choose another output.dir, or move those away",
                    if foreign.len() == 1 {
                        "an entry".to_string()
                    } else {
                        format!("{} entries", foreign.len())
                    },
                    named.join(", "),
                    why_foreign(&r, &foreign)
                ),
            ));
        }
    }
    Ok(())
}

/// Why the entries `foreign` of `dir` are not tuccompi's, where more can be said than that:
/// its manifest is not one tuccompi wrote (and why), or it names files that changed since.
fn why_foreign(dir: &Path, foreign: &[String]) -> String {
    let mut notes = Vec::new();
    match read_manifest(&dir.join(FILES)) {
        Err(why) if foreign.iter().any(|n| n == FILES) => {
            notes.push(format!("{FILES} is not a manifest tuccompi wrote: {why}"))
        }
        Ok(Some(m)) => {
            let changed: Vec<String> = foreign
                .iter()
                .filter(|n| m.get(n).is_some())
                .map(|n| format!("{n:?}"))
                .collect();
            if !changed.is_empty() {
                notes.push(format!(
                    "{} named in {FILES} but changed since the run wrote {}, or copied here \
                     without keeping {}",
                    changed.join(", "),
                    if changed.len() == 1 { "it" } else { "them" },
                    if changed.len() == 1 {
                        "its content"
                    } else {
                        "their content"
                    }
                ));
            }
        }
        _ => {}
    }
    if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    }
}

/// The names in the existing directory `dir` that the run cannot prove its own, sorted: all
/// but its bookkeeping (lock, partial folder, the temporary files of tuccompi writers, their
/// signature checked), its manifest `.tuccompi-files` when it parses, and the files that
/// manifest proves ([`FileProof::proves`]). A directory with no manifest is tuccompi's only
/// when it is empty: a copied `report.json` or a planted list proves nothing.
fn foreign_entries(dir: &Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok(names);
    }
    let manifest = read_manifest(&dir.join(FILES)).ok().flatten();
    // A commit cut short has moved some of its files into place already: its marker proves
    // them (the lock then proves the whole commit before finishing it).
    let pending = read_manifest(&dir.join(PARTIAL).join(COMMIT))
        .ok()
        .flatten();
    let proven = |m: &Option<Manifest>, n: &str| {
        m.as_ref()
            .and_then(|m| m.get(n))
            .is_some_and(|f| f.proves(&dir.join(n)))
    };
    Ok(names
        .into_iter()
        .filter(|n| {
            let ours = [LOCK, PARTIAL].contains(&n.as_str())
                || (n == FILES && manifest.is_some())
                || owned::is_our_temporary(n)
                || proven(&manifest, n)
                || proven(&pending, n);
            !ours
        })
        .collect())
}

/// Whether `dir` holds a finished run stopped while its files moved into place: a partial
/// folder (a directory, not a link) with something at its `COMMIT` name. `Some(Ok(()))` when
/// that commit is proven (its marker, `run.json`, files and journal agree) and the next lock finishes it; `Some(Err(why))`
/// when it is not: the marker is refused, naming why, and nothing is moved.
pub fn commit_pending(dir: &Path) -> Option<std::result::Result<(), String>> {
    let p = dir.join(PARTIAL);
    let marker = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir())
        && std::fs::symlink_metadata(p.join(COMMIT)).is_ok();
    marker.then(|| prove_commit(dir).map(|_| ()))
}

/// The commit marker of the partial folder in `dir`, when it proves a finished run: it
/// parses; its task count and record width are those of the run's `run.json`; the journal
/// holds every task; each file it names is in the partial folder or already in place, as it
/// was written. Otherwise why not, naming the marker.
fn prove_commit(dir: &Path) -> std::result::Result<Manifest, String> {
    let p = dir.join(PARTIAL);
    let marker = p.join(COMMIT);
    let bad = |why: String| {
        format!(
            "{} does not prove a finished run ({why}); tuccompi moves nothing on its word: \
             the unfinished run in {} is left as it is. Start over with --restart (it \
             discards the unfinished run and the files this marker proves it had moved into \
             place); or, when COMMIT was put there by hand and none of its files was moved, \
             remove it and continue the run with --resume",
            marker.display(),
            p.display()
        )
    };
    let m = read_manifest(&marker)
        .and_then(|m| m.ok_or_else(|| "it vanished".to_string()))
        .map_err(bad)?;
    let id_bytes = owned::read(&p.join(IDENTITY), "", SMALL_FILE_CAP)
        .ok()
        .flatten()
        .ok_or_else(|| bad(format!("{IDENTITY} is missing or unreadable")))?;
    if m.run != format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&id_bytes)) {
        return Err(bad(format!(
            "it was written for another run than {IDENTITY}'s"
        )));
    }
    let identity: serde_json::Value = serde_json::from_slice(&id_bytes)
        .map_err(|e| bad(format!("{IDENTITY} is unreadable: {e}")))?;
    let (tasks, words) = (
        identity["tasks"].as_u64(),
        identity["record_words"].as_u64(),
    );
    if (tasks, words) != (Some(m.tasks), Some(m.record_words)) {
        return Err(bad(format!(
            "it names {} tasks of {} words, {IDENTITY} {} of {}",
            m.tasks,
            m.record_words,
            tasks.map_or("no count".into(), |t| t.to_string()),
            words.map_or("no width".into(), |w| w.to_string())
        )));
    }
    if m.get(REPORT).is_none() {
        return Err(bad(format!("it names no {REPORT}, which every run writes")));
    }
    // Each file where it is now: still in the partial folder, or moved into place.
    let mut at = std::collections::BTreeMap::new();
    for f in &m.files {
        let path = [p.join(&f.name), dir.join(&f.name)]
            .into_iter()
            .find(|path| f.proves(path))
            .ok_or_else(|| {
                bad(format!(
                    "it names {:?}, which is neither in the partial folder nor in place as it \
                     was written",
                    f.name
                ))
            })?;
        at.insert(f.name.clone(), path);
    }
    let tasks = usize::try_from(m.tasks).map_err(|_| bad("too many tasks".into()))?;
    let words = usize::try_from(m.record_words)
        .ok()
        .filter(|&w| w <= 1 << 16)
        .ok_or_else(|| bad("records too wide".into()))?;
    // Every task journaled, its rows in the files as the journal vouches for them.
    let bulk: Vec<crate::sink::journal::BulkFile> = m
        .bulk
        .iter()
        .map(|b| crate::sink::journal::BulkFile {
            path: at[&b.name].clone(),
            offset: b.offset,
            row_bytes: b.row_bytes,
        })
        .collect();
    let mut done = vec![false; tasks];
    let mut count = 0usize;
    crate::sink::journal::replay_checked(&p.join(JOURNAL), tasks, words, &bulk, |r, _| {
        for t in r {
            if !std::mem::replace(&mut done[t], true) {
                count += 1;
            }
        }
    })
    .map_err(|e| bad(format!("its journal: {e}")))?;
    if count != tasks {
        return Err(bad(format!(
            "the journal vouches for {count} of the {tasks} tasks done, rows included"
        )));
    }
    Ok(m)
}

/// The files the commit marker of `dir`'s partial folder proves it moved into place (for
/// `--restart`, which discards a marker that proves no finished run: those files are the
/// unproven run's, and tuccompi's by the marker's proofs).
fn moved_by_marker(dir: &Path) -> Vec<PathBuf> {
    let Ok(Some(m)) = read_manifest(&dir.join(PARTIAL).join(COMMIT)) else {
        return Vec::new();
    };
    m.files
        .iter()
        .filter(|f| f.proves(&dir.join(&f.name)))
        .map(|f| dir.join(&f.name))
        .collect()
}

/// `$HOME`, when set and absolute.
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// Bytes available to this user on the filesystem that holds (or will hold) `dir`; an error
/// for a filesystem that holds no files (`/proc`, `/sys`: no blocks at all), which would
/// otherwise read as full.
pub fn available_space(dir: &Path) -> Result<u64> {
    let at = nearest_existing(dir)?;
    let st = rustix::fs::statvfs(&at).map_err(|e| Error::io(&at, e.into()))?;
    if st.f_blocks == 0 {
        return Err(refuse(
            dir,
            &format!(
                "is on a filesystem that holds no files ({} is on a virtual filesystem, like \
                 /proc and /sys): choose a directory on a disk",
                at.display()
            ),
        ));
    }
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Refuse a run whose outputs need `need` more bytes than the `free` bytes on `dir`'s disk.
pub fn check_space(dir: &Path, need: u64, free: u64) -> Result<()> {
    if need > free {
        return Err(Error::Output(format!(
            "the outputs need {} but only {} are free on the filesystem of {}; free some space, \
             choose another output.dir, or write less (fewer tasks, fewer optional outputs)",
            human_bytes(need),
            human_bytes(free),
            dir.display()
        )));
    }
    Ok(())
}

/// `1.5 GiB`-style sizes for messages.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Bytes the files in `dir` occupy on disk (allocated blocks, so sparse files count only what
/// was written); 0 when `dir` does not exist.
pub fn allocated_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.blocks() * 512)
                .sum()
        })
        .unwrap_or(0)
}

/// A locked output directory. The lock is released when this is dropped (or the process
/// dies).
#[derive(Debug)]
pub struct OutputDir {
    dir: PathBuf,
    lock: File,
    stale: Option<String>,
    /// This lock's place in [`HELD`].
    id: u64,
}

/// The lock files this process holds, each as a second descriptor (same open file, same
/// lock), so that a process ending on purpose without unwinding (a second signal, the end of
/// the grace period: `std::process::exit` runs no destructor) can still empty them through
/// [`release_for_exit`] and the next run does not take it for a killed one.
static HELD: parking_lot::Mutex<Vec<(u64, File)>> = parking_lot::Mutex::new(Vec::new());

/// Empty the lock file of every output directory this process holds: for a process about to
/// end with `std::process::exit` (the kernel releases the locks themselves at exit). What the
/// run leaves is valid as it stands (a journal of whole, checksummed entries).
pub fn release_for_exit() {
    for (_, f) in HELD.lock().iter() {
        let _ = f.set_len(0);
    }
}

/// Sync a directory (its entries: renames, new files).
fn sync_dir(p: &Path) -> Result<()> {
    File::open(p)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(p, e))
}

/// Sync a file of the run (never through a link).
fn sync_file(p: &Path) -> Result<()> {
    owned::reopen(p, false, RESTART)?
        .sync_all()
        .map_err(|e| Error::io(p, e))
}

/// The first line of a lock file's content, at most 200 bytes of it (a holder is one short
/// line: "pid P on HOST"), for messages.
fn holder_line(lock: &mut File) -> String {
    let mut head = Vec::new();
    let _ = lock.rewind();
    let _ = Read::by_ref(lock).take(200).read_to_end(&mut head);
    String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

impl OutputDir {
    /// Create `dir` if needed and take its lock, refusing at once (naming the holder) when
    /// another run holds it; `holder` names this run ("pid P on HOST"). Finishes a commit that
    /// a killed run left half done.
    pub fn lock(dir: &Path, holder: &str) -> Result<OutputDir> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(LOCK);
        // Never through a link, never another kind of file: a link planted here would have its
        // target truncated and its content quoted in the messages below.
        let mut lock = owned::open_or_create(
            &path,
            "remove it (the name is tuccompi's lock file) or choose another output.dir",
        )?;
        let mut tries = 0;
        // The content is read only after `try_lock` answered: read before it, the content of a
        // run ending at that moment (its name, then emptied as it releases the lock) would be
        // taken for a dead holder's once the lock is free.
        let (taken, previous) = loop {
            let r = lock.try_lock();
            let previous = holder_line(&mut lock);
            // An empty lock file held by someone: a run that is starting, or one that ended
            // cleanly while a process forked at that moment (by any thread of the process)
            // still shares its descriptor until it execs. Both pass within moments: look
            // again for up to a second before refusing.
            if matches!(r, Err(TryLockError::WouldBlock)) && previous.is_empty() && tries < 50 {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
                continue;
            }
            break (r, previous);
        };
        match taken {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let who = previous.as_str();
                return Err(Error::Output(format!(
                    "{} is in use by another tuccompi run ({}); wait for it to end, or stop it \
                     and continue its work with --resume",
                    dir.display(),
                    if who.is_empty() {
                        "it is starting"
                    } else {
                        who
                    }
                )));
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
        // The lock is ours: whoever wrote the old content is gone, and so is any writer that
        // left a temporary file here (a kill while `.tuccompi-files` was written).
        let stale = Some(previous).filter(|s| !s.is_empty());
        owned::sweep_dead(dir);
        lock.set_len(0)
            .and_then(|()| lock.rewind())
            .and_then(|()| writeln!(lock, "{holder}"))
            .map_err(|e| Error::io(&path, e))?;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(second) = lock.try_clone() {
            HELD.lock().push((id, second));
        }
        let out = OutputDir {
            dir: dir.into(),
            lock,
            stale,
            id,
        };
        // A proven commit is finished; an unproven marker is left for the caller to refuse
        // ([`OutputDir::bad_commit`]) or for `--restart` to discard with its folder.
        if let Some(Ok(())) = commit_pending(dir) {
            let m = prove_commit(dir).map_err(Error::Output)?;
            tracing::warn!(
                "{}: finishing the commit of a run that was stopped while moving its files into place",
                dir.display()
            );
            out.apply_commit(&m)?;
        }
        Ok(out)
    }

    /// Who held the lock before, when that run ended without releasing it (killed).
    pub fn stale_holder(&self) -> Option<&str> {
        self.stale.as_deref()
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The unfinished run's folder (it may not exist).
    pub fn partial(&self) -> PathBuf {
        self.dir.join(PARTIAL)
    }

    /// Whether an unfinished run is here (a directory, not a link to one).
    pub fn has_unfinished(&self) -> bool {
        std::fs::symlink_metadata(self.partial()).is_ok_and(|m| m.is_dir())
    }

    /// What is at the partial folder's name when it is not a directory (a file, a link), in
    /// words; `None` when it is a directory or absent.
    pub fn stray_partial(&self) -> Option<String> {
        let p = self.partial();
        std::fs::symlink_metadata(&p)
            .ok()
            .filter(|m| !m.is_dir())
            .map(|_| owned::describe(&p))
    }

    /// Remove what [`Self::stray_partial`] found (for `--restart`): a link is removed itself,
    /// never what it leads to; a file is removed (the name is tuccompi's).
    pub fn remove_stray_partial(&self) -> Result<()> {
        let p = self.partial();
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(m) if m.file_type().is_symlink() || m.file_type().is_file() => {
                std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))
            }
            Ok(_) => Err(owned::foreign(&p, "remove it yourself")),
            Err(_) => Ok(()),
        }
    }

    /// What the unfinished run computes (its `run.json`).
    pub fn identity(&self) -> Result<serde_json::Value> {
        let p = self.partial().join(IDENTITY);
        let bytes = owned::read(&p, RESTART, SMALL_FILE_CAP)?.ok_or_else(|| {
            Error::Output(format!(
                "{} is missing: the unfinished run in {} cannot be checked against this one \
                 (it was stopped while starting, or the file was removed); {RESTART}",
                p.display(),
                self.partial().display()
            ))
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::Output(format!(
                "{}: unreadable ({e}); discard the unfinished run with --restart",
                p.display()
            ))
        })
    }

    /// Start a new unfinished run computing `identity`, discarding any other.
    pub fn begin(&self, identity: &serde_json::Value) -> Result<()> {
        self.discard()?;
        let p = self.partial();
        std::fs::create_dir(&p).map_err(|e| Error::io(&p, e))?;
        write_file(
            &p,
            IDENTITY,
            &serde_json::to_string_pretty(identity).expect("identity serializes"),
        )
    }

    /// Remove the unfinished run, if any. Links inside it are removed, never followed
    /// (`remove_dir_all`); something other than a directory at its name is an error (see
    /// [`Self::remove_stray_partial`]).
    pub fn discard(&self) -> Result<()> {
        let p = self.partial();
        if self.stray_partial().is_some() {
            return Err(owned::foreign(
                &p,
                "remove it, or run with --restart, which removes it (a link itself, not what \
                 it leads to)",
            ));
        }
        match std::fs::remove_dir_all(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&p, e)),
            _ => Ok(()),
        }
    }

    /// Why the unfinished run's commit marker proves nothing, when it has one
    /// ([`commit_pending`]): such a run is neither finished nor resumed on the marker's word.
    pub fn bad_commit(&self) -> Option<String> {
        commit_pending(&self.dir).and_then(|r| r.err())
    }

    /// Discard an unfinished run whose commit marker proves nothing (`--restart`), with the
    /// files the marker proves it had moved into place: they are that unproven run's.
    pub fn discard_bad_commit(&self) -> Result<()> {
        for path in moved_by_marker(&self.dir) {
            owned::remove_plain(&path)?;
        }
        self.discard()
    }

    /// Move the unfinished run of `tasks` tasks with `record_words`-word records (every one
    /// done and journaled) into place: its files (all but its journal and identity) replace the
    /// complete run's, and the partial folder is removed.
    pub fn commit(
        &self,
        tasks: usize,
        record_words: usize,
        bulk: &[crate::sink::journal::BulkFile],
    ) -> Result<()> {
        let m = self.mark(tasks, record_words, bulk)?;
        crate::failpoint("commit-marked");
        self.apply_commit(&m)
    }

    /// The first step of [`Self::commit`]: the partial folder's files synced and described in
    /// its commit marker.
    fn mark(
        &self,
        tasks: usize,
        record_words: usize,
        bulk: &[crate::sink::journal::BulkFile],
    ) -> Result<Manifest> {
        let p = self.partial();
        let mut files = Vec::new();
        for e in std::fs::read_dir(&p).map_err(|e| Error::io(&p, e))? {
            let e = e.map_err(|e| Error::io(&p, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let skip = [JOURNAL, IDENTITY, COMMIT].contains(&name.as_str()) || !plain_name(&name);
            // Only the run's plain files: a link or a folder planted here is not an output.
            if !skip && e.file_type().map(|t| t.is_file()).unwrap_or(false) {
                sync_file(&e.path())?;
                files.push(FileProof::of(&e.path(), &name)?);
            }
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let id = owned::read(&p.join(IDENTITY), RESTART, SMALL_FILE_CAP)?.unwrap_or_default();
        let bulk = bulk
            .iter()
            .filter_map(|b| {
                let name = b.path.file_name()?.to_string_lossy().into_owned();
                files.iter().any(|f| f.name == name).then_some(BulkRows {
                    name,
                    offset: b.offset,
                    row_bytes: b.row_bytes,
                })
            })
            .collect();
        let m = Manifest {
            format: MANIFEST_FORMAT.into(),
            version: 1,
            tasks: tasks as u64,
            record_words: record_words as u64,
            run: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&id)),
            bulk,
            files,
        };
        write_file(&p, COMMIT, &m.to_json())?;
        sync_dir(&p)?;
        Ok(m)
    }

    /// Move the files of the proven manifest `m` into place (those not moved yet), remove the
    /// previous run's files that `m` does not name and that its manifest proves its own,
    /// write `m` as the directory's manifest and remove the partial folder.
    fn apply_commit(&self, m: &Manifest) -> Result<()> {
        let p = self.partial();
        let list = self.dir.join(FILES);
        let old = read_manifest(&list).ok().flatten();
        let previous = |name: &str| {
            old.as_ref()
                .and_then(|o| o.get(name))
                .is_some_and(|f| f.proves(&self.dir.join(name)))
        };
        if let Some(old) = &old {
            for o in old.files.iter().filter(|o| m.get(&o.name).is_none()) {
                let path = self.dir.join(&o.name);
                // Only the previous run's file as it was written; anything else at its name
                // (a folder, a link, a file put there since) is someone else's and stays.
                if o.proves(&path) {
                    owned::remove_plain(&path)?;
                } else if std::fs::symlink_metadata(&path).is_ok() {
                    tracing::warn!(
                        "{}: left alone: it is {}, not the previous run's file that {} names",
                        path.display(),
                        owned::describe(&path),
                        list.display()
                    );
                }
            }
        }
        for (i, f) in m.files.iter().enumerate() {
            let (from, to) = (p.join(&f.name), self.dir.join(&f.name));
            if !f.proves(&from) {
                // Moved into place before a kill cut the commit short (proven by the caller).
                continue;
            }
            let taken = std::fs::symlink_metadata(&to).is_ok();
            if taken && !previous(&f.name) {
                return Err(owned::foreign(
                    &to,
                    &format!(
                        "move it away, then run again: the finished run waits in {} and \
                         the next run moves it into place",
                        p.display()
                    ),
                ));
            }
            std::fs::rename(&from, &to).map_err(|e| Error::io(&to, e))?;
            if i == 0 {
                crate::failpoint("commit-renamed");
            }
        }
        write_file(&self.dir, FILES, &m.to_json())?;
        sync_dir(&self.dir)?;
        std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        sync_dir(&self.dir)
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        // Empty the lock file so that the next run knows this one ended cleanly, then close
        // the second descriptor (the lock is released when the last one closes).
        let _ = self.lock.set_len(0);
        HELD.lock().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tuccompi-outdir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn unsafe_directories_are_refused() {
        let msg = |p: &str| validate(Path::new(p)).unwrap_err().to_string();
        assert!(msg("").contains("output.dir is empty"));
        assert!(msg("/").contains("filesystem root"));
        assert!(msg(".").contains("current directory"));
        assert!(msg("..").contains("contains the current directory"));
        assert!(msg("sub/..").contains("current directory"));
        if let Some(home) = std::env::var_os("HOME") {
            let home = home.to_string_lossy().into_owned();
            if Path::new(&home).exists() && !std::env::current_dir().unwrap().starts_with(&home) {
                assert!(msg(&home).contains("home directory"), "{}", msg(&home));
            }
        }
        let d = tmp("validate");
        std::fs::write(d.join("file"), "x").unwrap();
        let f = d.join("file").display().to_string();
        assert!(msg(&f).contains("is a file"), "{}", msg(&f));
        assert!(msg(&format!("{f}/sub")).contains("cannot be created"));
        // A directory of someone's files is not ours to write into; an empty one is.
        let d2 = tmp("validate-foreign");
        std::fs::write(d2.join("notes.txt"), "x").unwrap();
        let e = msg(&d2.display().to_string());
        assert!(
            e.contains("no tuccompi run made") && e.contains("\"notes.txt\""),
            "{e}"
        );
        std::fs::remove_file(d2.join("notes.txt")).unwrap();
        validate(&d2).unwrap();
        validate(&d2.join("new/deeper")).unwrap();
    }

    /// A run of `tasks` one-word tasks with every task journaled, and `files` in its folder.
    fn finished(o: &OutputDir, tasks: usize, files: &[(&str, &str)]) {
        journaled(o, tasks, tasks, files)
    }

    /// A run of `tasks` one-word tasks with the first `done` journaled, `files` and its
    /// report in its folder.
    fn journaled(o: &OutputDir, tasks: usize, done: usize, files: &[(&str, &str)]) {
        o.begin(&serde_json::json!({"tasks": tasks, "record_words": 1}))
            .unwrap();
        let j = crate::sink::journal::Journal::open(
            &o.partial().join(JOURNAL),
            1,
            std::time::Duration::ZERO,
            Vec::new(),
            None,
        )
        .unwrap();
        if done > 0 {
            j.append(0..done, &vec![7; done]).unwrap();
        }
        j.flush().unwrap();
        for (name, text) in files {
            std::fs::write(o.partial().join(name), text).unwrap();
        }
        std::fs::write(o.partial().join(REPORT), "{}").unwrap();
    }

    /// The names a manifest file lists.
    fn listed(p: &Path) -> Vec<String> {
        let m = Manifest::parse(&std::fs::read(p).unwrap()).unwrap();
        m.files.into_iter().map(|f| f.name).collect()
    }

    /// N9 of issue 47: another program's `report.json`, `INCOMPLETE` and the like, a copied
    /// tuccompi report, or a planted list naming the user's files do not make a directory
    /// tuccompi's; only a manifest that proves its files does, and a copy of a real output
    /// directory is still recognized by the content hashes.
    #[test]
    fn only_a_proven_manifest_makes_a_directory_ours() {
        let d = tmp("validate-lookalike");
        for f in [
            "report.json",
            "summary.csv",
            "distances.npy",
            "INCOMPLETE",
            "notes.txt",
        ] {
            std::fs::write(d.join(f), "foreign").unwrap();
        }
        let e = validate(&d).unwrap_err().to_string();
        for f in ["report.json", "summary.csv", "INCOMPLETE", "notes.txt"] {
            assert!(e.contains(&format!("{f:?}")), "{f}: {e}");
        }
        assert!(
            e.contains("5 entries") && e.contains("another output.dir"),
            "{e}"
        );
        // A copied tuccompi report proves nothing (no list of earlier versions is trusted).
        std::fs::write(
            d.join("report.json"),
            r#"{"tuccompi": "0.1.0", "plugin": "apsp", "tasks": 3, "units": []}"#,
        )
        .unwrap();
        assert!(validate(&d).unwrap_err().to_string().contains("5 entries"));
        // A planted list of names (the old format) proves nothing either, nor does a
        // manifest whose proofs do not match the files.
        std::fs::write(d.join(FILES), "report.json\nnotes.txt").unwrap();
        assert!(validate(&d).unwrap_err().to_string().contains("6 entries"));
        let planted = Manifest {
            format: MANIFEST_FORMAT.into(),
            version: 1,
            tasks: 1,
            record_words: 1,
            run: String::new(),
            bulk: Vec::new(),
            files: vec![FileProof {
                name: "notes.txt".into(),
                size: 7,
                ino: 0,
                mtime: (0, 0),
                xxh3: Some("0".repeat(16)),
            }],
        };
        std::fs::write(d.join(FILES), planted.to_json()).unwrap();
        let e = validate(&d).unwrap_err().to_string();
        assert!(e.contains("5 entries") && e.contains("notes.txt"), "{e}");
        // A real run's directory is ours; a copy of it too (same content); a file changed
        // since, even at the same size, is not.
        let out = d.join("out");
        let o = OutputDir::lock(&out, "me").unwrap();
        finished(&o, 2, &[("a.csv", "1,2"), ("report.json", "{}")]);
        o.commit(2, 1, &[]).unwrap();
        drop(o);
        validate(&out).unwrap();
        assert_eq!(listed(&out.join(FILES)), ["a.csv", "report.json"]);
        let copy = d.join("copy");
        std::fs::create_dir(&copy).unwrap();
        for n in ["a.csv", "report.json", FILES] {
            std::fs::copy(out.join(n), copy.join(n)).unwrap();
        }
        validate(&copy).unwrap();
        std::fs::write(copy.join("a.csv"), "9,9").unwrap();
        let e = validate(&copy).unwrap_err().to_string();
        assert!(e.contains("an entry") && e.contains("\"a.csv\""), "{e}");
    }

    /// A commit removes the previous run's files only when its manifest proves them: a
    /// planted manifest naming the user's files (copied from elsewhere) removes nothing.
    #[test]
    fn a_planted_manifest_gets_nothing_removed() {
        let d = tmp("planted-manifest");
        let elsewhere = d.join("elsewhere");
        let o = OutputDir::lock(&elsewhere, "me").unwrap();
        finished(&o, 1, &[("notes.txt", "theirs"), ("thesis.tex", "theirs")]);
        o.commit(1, 1, &[]).unwrap();
        drop(o);
        let out = d.join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("notes.txt"), "mine!!").unwrap();
        std::fs::write(out.join("thesis.tex"), "mine!!").unwrap();
        std::fs::copy(elsewhere.join(FILES), out.join(FILES)).unwrap();
        let o = OutputDir::lock(&out, "me").unwrap();
        finished(&o, 1, &[("a.csv", "1")]);
        o.commit(1, 1, &[]).unwrap();
        for n in ["notes.txt", "thesis.tex"] {
            assert_eq!(std::fs::read_to_string(out.join(n)).unwrap(), "mine!!");
        }
        assert_eq!(listed(&out.join(FILES)), ["a.csv", "report.json"]);
    }

    #[test]
    fn space_check() {
        assert!(check_space(Path::new("/x"), 10, 10).is_ok());
        let e = check_space(Path::new("/x"), 3 << 30, 1 << 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("need 3.0 GiB") && e.contains("1.0 GiB are free"),
            "{e}"
        );
        assert!(available_space(&tmp("space").join("not/yet")).unwrap() > 0);
    }

    #[test]
    fn second_lock_is_refused_naming_the_holder_and_released_on_drop() {
        let d = tmp("lock");
        let a = OutputDir::lock(&d, "pid 1 on here").unwrap();
        assert!(a.stale_holder().is_none());
        let e = OutputDir::lock(&d, "pid 2 on there")
            .unwrap_err()
            .to_string();
        assert!(e.contains("in use") && e.contains("pid 1 on here"), "{e}");
        drop(a);
        let b = OutputDir::lock(&d, "pid 2 on there").unwrap();
        assert!(
            b.stale_holder().is_none(),
            "a clean end leaves no stale holder"
        );
        std::mem::forget(b); // as if killed: the content stays; the fd (and its lock) leaks
    }

    /// An ended run's lock, still held a moment through a descriptor that a forked child
    /// shares (here: another descriptor of this process, released after 100 ms), is taken
    /// after a second look rather than refused; a named holder is refused at once.
    #[test]
    fn a_nameless_lock_held_for_a_moment_is_waited_for() {
        let d = tmp("moment");
        std::fs::write(d.join(LOCK), "").unwrap();
        let other = File::open(d.join(LOCK)).unwrap();
        other.try_lock().unwrap();
        let t = std::time::Instant::now();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            drop(other);
        });
        let o = OutputDir::lock(&d, "pid 4 on here").unwrap();
        assert!(t.elapsed().as_secs_f64() >= 0.09);
        release.join().unwrap();
        drop(o);
        // Named: refused without waiting out the second.
        std::fs::write(d.join(LOCK), "pid 5 on there\n").unwrap();
        let held = File::open(d.join(LOCK)).unwrap();
        held.try_lock().unwrap();
        let e = OutputDir::lock(&d, "pid 6 on here")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pid 5 on there"), "{e}");
    }

    /// A process that ends with `std::process::exit` (no destructor runs) after
    /// [`release_for_exit`] leaves an empty lock file: the next run sees a clean end.
    #[test]
    fn a_lock_released_for_exit_is_not_taken_for_a_dead_holders() {
        let d = tmp("exit");
        let a = OutputDir::lock(&d, "pid 7 on here").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join(LOCK)).unwrap(),
            "pid 7 on here\n"
        );
        release_for_exit();
        // What the next run reads once `exit` has closed the descriptors (and so the lock).
        assert_eq!(std::fs::read_to_string(d.join(LOCK)).unwrap(), "");
        assert!(HELD.lock().iter().any(|(id, _)| *id == a.id));
        drop(a);
        let b = OutputDir::lock(&d, "pid 8 on here").unwrap();
        assert_eq!(
            b.stale_holder(),
            None,
            "a run that ended on purpose is not stale"
        );
    }

    #[test]
    fn a_dead_holders_lock_is_taken_over() {
        let d = tmp("stale");
        std::fs::write(d.join(LOCK), "pid 999999 on gone\n").unwrap();
        let o = OutputDir::lock(&d, "pid 3 on here").unwrap();
        assert_eq!(o.stale_holder(), Some("pid 999999 on gone"));
    }

    #[test]
    fn a_symlinked_lock_is_refused_and_its_target_untouched() {
        let d = tmp("lock-link");
        let v = d.join("v");
        std::fs::write(&v, "a\nb\n").unwrap();
        let out = d.join("out");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&v, out.join(LOCK)).unwrap();
        let e = OutputDir::lock(&out, "pid 1 on here")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("symbolic link") && e.contains("remove it"),
            "{e}"
        );
        assert!(!e.contains("a\nb") && !e.contains("in use"), "{e}");
        assert_eq!(std::fs::read_to_string(&v).unwrap(), "a\nb\n");
        // A directory or a hard link to someone's file there: refused the same way.
        std::fs::remove_file(out.join(LOCK)).unwrap();
        std::fs::hard_link(&v, out.join(LOCK)).unwrap();
        assert!(OutputDir::lock(&out, "me").is_err());
        assert_eq!(std::fs::read_to_string(&v).unwrap(), "a\nb\n");
    }

    #[test]
    fn a_symlinked_files_list_temp_is_never_written_through() {
        let d = tmp("list-link");
        let v = d.join("v");
        std::fs::write(&v, "precious").unwrap();
        let out = d.join("out");
        let o = OutputDir::lock(&out, "me").unwrap();
        finished(&o, 1, &[("a.csv", "1")]);
        // The temporary names of earlier versions, planted beside the list and in the folder.
        std::os::unix::fs::symlink(&v, out.join(format!(".{FILES}.tmp"))).unwrap();
        std::os::unix::fs::symlink(&v, o.partial().join(format!(".{COMMIT}.tmp"))).unwrap();
        o.commit(1, 1, &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&v).unwrap(), "precious");
        let m = std::fs::symlink_metadata(out.join(FILES)).unwrap();
        assert!(
            m.file_type().is_file(),
            ".tuccompi-files stays a plain file"
        );
        assert_eq!(listed(&out.join(FILES)), ["a.csv", "report.json"]);
    }

    #[test]
    fn a_files_list_naming_a_directory_or_link_does_not_wedge_the_commit() {
        let d = tmp("list-dir");
        let out = d.join("out");
        let o = OutputDir::lock(&out, "me").unwrap();
        std::fs::create_dir_all(out.join("photos")).unwrap();
        std::fs::write(out.join("photos/p.jpg"), "x").unwrap();
        std::fs::write(d.join("v"), "precious").unwrap();
        std::os::unix::fs::symlink(d.join("v"), out.join("link")).unwrap();
        std::fs::write(out.join("old.csv"), "old").unwrap();
        std::fs::write(
            out.join(FILES),
            "photos\nlink\nold.csv\n../v\n.tuccompi.lock",
        )
        .unwrap();
        for round in 0..2 {
            finished(&o, 1, &[("a.csv", "1")]);
            o.commit(1, 1, &[])
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        assert!(
            out.join("photos/p.jpg").exists(),
            "a folder is never deleted"
        );
        assert!(std::fs::symlink_metadata(out.join("link")).is_ok());
        assert_eq!(std::fs::read_to_string(d.join("v")).unwrap(), "precious");
        assert!(
            out.join("old.csv").exists(),
            "a file a list of names names is not proven the previous run's"
        );
        assert!(out.join(LOCK).exists());
        // A file the previous run's manifest proves goes when the next run lacks it.
        finished(&o, 1, &[("b.csv", "2")]);
        o.commit(1, 1, &[]).unwrap();
        assert!(!out.join("a.csv").exists() && out.join("b.csv").exists());
    }

    #[test]
    fn a_file_at_the_partial_folder_is_named_and_removable() {
        let d = tmp("stray");
        let o = OutputDir::lock(&d, "me").unwrap();
        std::fs::write(o.partial(), "x").unwrap();
        assert!(!o.has_unfinished());
        assert_eq!(o.stray_partial().as_deref(), Some("a file"));
        let e = o.begin(&serde_json::json!({})).unwrap_err().to_string();
        assert!(e.contains("--restart"), "{e}");
        o.remove_stray_partial().unwrap();
        o.begin(&serde_json::json!({})).unwrap();
        assert!(o.has_unfinished());
        // A link to a directory is not an unfinished run, and removing it keeps the target.
        std::fs::remove_dir_all(o.partial()).unwrap();
        let elsewhere = d.join("..").join(format!(
            "tuccompi-outdir-{}-stray-elsewhere",
            std::process::id()
        ));
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("keep"), "x").unwrap();
        std::os::unix::fs::symlink(&elsewhere, o.partial()).unwrap();
        assert!(!o.has_unfinished() && o.stray_partial().unwrap().contains("symbolic link"));
        o.remove_stray_partial().unwrap();
        assert!(elsewhere.join("keep").exists());
        let _ = std::fs::remove_dir_all(&elsewhere);
    }

    #[test]
    fn a_killed_writers_temporary_in_the_output_directory_is_swept_by_the_next_lock() {
        let d = tmp("sweep");
        let dead = owned::temp_name_of(FILES, 99999999);
        std::fs::write(d.join(&dead), "half a list").unwrap();
        // N4 of issue 47: a file merely named like one is neither removed nor ours.
        let planted = format!(".X.tuccompi-{}-99999999.Y.tmp", "somehost");
        std::fs::write(d.join(&planted), "precious").unwrap();
        assert!(validate(&d).unwrap_err().to_string().contains(&planted));
        let _o = OutputDir::lock(&d, "me").unwrap();
        assert!(!d.join(&dead).exists());
        assert!(d.join(&planted).exists());
    }

    #[test]
    fn a_missing_run_json_says_to_restart() {
        let d = tmp("noid");
        let o = OutputDir::lock(&d, "me").unwrap();
        o.begin(&serde_json::json!({})).unwrap();
        std::fs::remove_file(o.partial().join(IDENTITY)).unwrap();
        let e = o.identity().unwrap_err().to_string();
        assert!(
            e.contains("run.json is missing") && e.contains("--restart"),
            "{e}"
        );
    }

    #[test]
    fn a_dangling_link_tilde_or_virtual_filesystem_is_named() {
        let d = tmp("odd-dirs");
        let link = d.join("link");
        std::os::unix::fs::symlink(d.join("nowhere"), &link).unwrap();
        let e = validate(&link).unwrap_err().to_string();
        assert!(e.contains("leads nowhere") && e.contains("nowhere"), "{e}");
        let e = validate(Path::new("~/tuccompi-out"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only a shell expands"), "{e}");
        if let Some(home) = home_dir() {
            assert!(
                e.contains(&home.join("tuccompi-out").display().to_string()),
                "{e}"
            );
        }
        for virt in ["/proc/tuccompi-out", "/sys/tuccompi-out"] {
            if Path::new(virt).parent().unwrap().exists() {
                let e = available_space(Path::new(virt)).unwrap_err().to_string();
                assert!(e.contains("holds no files") && !e.contains("free"), "{e}");
            }
        }
    }

    #[test]
    fn commit_replaces_the_previous_files_and_finishes_after_a_crash() {
        let d = tmp("commit");
        let o = OutputDir::lock(&d, "me").unwrap();
        finished(&o, 3, &[("a.csv", "1"), ("big.npy", "2")]);
        o.commit(3, 1, &[]).unwrap();
        assert!(!o.has_unfinished());
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "1");
        assert!(!d.join(JOURNAL).exists());
        // A second run without big.npy: the stale one goes.
        finished(&o, 3, &[("a.csv", "3")]);
        o.commit(3, 1, &[]).unwrap();
        assert!(!d.join("big.npy").exists());
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "3");
        // A commit cut short after its first rename is finished by the next lock.
        finished(&o, 3, &[("a.csv", "4"), ("b.csv", "5")]);
        o.mark(3, 1, &[]).unwrap();
        std::fs::rename(o.partial().join("a.csv"), d.join("a.csv")).unwrap();
        drop(o);
        assert_eq!(commit_pending(&d), Some(Ok(())));
        let o = OutputDir::lock(&d, "me").unwrap();
        assert!(!o.has_unfinished());
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "4");
        assert_eq!(std::fs::read_to_string(d.join("b.csv")).unwrap(), "5");
        assert_eq!(listed(&d.join(FILES)), ["a.csv", "b.csv", "report.json"]);
    }

    /// N3 of issue 47: a commit marker is trusted only when it proves a finished run. A list
    /// of names, an empty marker, a marker over a journal that lacks tasks, or one naming a
    /// file changed since, moves nothing and is named.
    #[test]
    fn an_unproven_commit_marker_moves_nothing_and_is_named() {
        let d = tmp("bad-commit");
        let o = OutputDir::lock(&d, "me").unwrap();
        finished(&o, 1, &[("old.csv", "old")]);
        o.commit(1, 1, &[]).unwrap();
        type Plant<'a> = (&'a str, &'a dyn Fn(&OutputDir));
        let cases: [Plant<'_>; 5] = [
            ("planted names", &|o| {
                std::fs::write(o.partial().join(COMMIT), "x.csv").unwrap()
            }),
            ("empty", &|o| {
                std::fs::write(o.partial().join(COMMIT), "").unwrap()
            }),
            ("journal short", &|o| {
                journaled(o, 5, 3, &[("x.csv", "half")]);
                o.mark(5, 1, &[]).unwrap();
            }),
            ("file changed", &|o| {
                o.mark(4, 1, &[]).unwrap();
                std::fs::write(o.partial().join("x.csv"), "HALF").unwrap();
            }),
            ("other width", &|o| {
                o.mark(4, 2, &[]).unwrap();
            }),
        ];
        drop(o);
        for (what, plant) in cases {
            let o = OutputDir::lock(&d, "me").unwrap();
            finished(&o, 4, &[("x.csv", "half")]);
            plant(&o);
            let why = o.bad_commit().unwrap_or_else(|| panic!("{what}: taken"));
            assert!(
                why.contains("COMMIT") && why.contains("--restart"),
                "{what}: {why}"
            );
            drop(o);
            let o = OutputDir::lock(&d, "me").unwrap();
            assert!(o.has_unfinished(), "{what}: the unfinished run stays");
            assert!(o.partial().join(JOURNAL).exists(), "{what}");
            assert_eq!(std::fs::read_to_string(d.join("old.csv")).unwrap(), "old");
            assert!(!d.join("x.csv").exists(), "{what}: nothing moved");
            o.discard().unwrap();
        }
    }
}
