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
//! Commit: the finished run's files are synced and their names written to
//! `.tuccompi-partial/COMMIT`; then the previous run's files that the new run does not have are
//! removed, the new ones renamed into place, `.tuccompi-files` rewritten and the partial folder
//! removed. A commit cut short (a crash between two renames) is finished by the next run that
//! takes the lock. So the directory holds the files of one complete run, plus at most one
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
/// Files of complete runs by versions that kept no list of them.
const LEGACY: &[&str] = &[
    "report.json",
    "summary.csv",
    "trace.json",
    "distances.npy",
    "INCOMPLETE",
];

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
                    "holds {} that no tuccompi run made here ({}): tuccompi writes only into a \
                     new, empty or earlier tuccompi output directory, whose files its list \
                     {FILES} names; choose another output.dir, or move those away",
                    if foreign.len() == 1 {
                        "an entry".to_string()
                    } else {
                        format!("{} entries", foreign.len())
                    },
                    named.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `name` is the temporary file of a tuccompi writer (`.NAME.tuccompi-HOST-PID.X.tmp`,
/// [`owned::temp_beside`]; a killed writer's is swept by the next lock).
fn our_temporary(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tuccompi-") && name.ends_with(".tmp")
}

/// Whether the `report.json` in `dir` is a plain file holding a tuccompi report: how the
/// output of a version that kept no file list is recognized.
fn legacy_report(dir: &Path) -> bool {
    let Ok(Some(bytes)) = owned::read(&dir.join("report.json"), "", SMALL_FILE_CAP) else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|v| {
        ["plugin", "tasks", "units"]
            .iter()
            .all(|k| v.get(k).is_some())
            && (v.get("tuccompi").is_some() || v.get("checksum").is_some())
    })
}

/// The names in the existing directory `dir` that the run cannot prove its own, sorted: all
/// but its bookkeeping (lock, list, partial folder, writers' temporary files) and the files
/// its list names. A directory with no list is an earlier tuccompi output only when its
/// `report.json` is a tuccompi report (then the files that version wrote are its own);
/// a `report.json` or `INCOMPLETE` by another program proves nothing.
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
    let listed: Vec<String> = match read_list(&dir.join(FILES)) {
        Some(list) => list,
        None if legacy_report(dir) => LEGACY.iter().map(|s| s.to_string()).collect(),
        None => Vec::new(),
    };
    Ok(names
        .into_iter()
        .filter(|n| {
            let ours = [LOCK, FILES, PARTIAL].contains(&n.as_str())
                || our_temporary(n)
                || (plain_name(n) && listed.contains(n));
            !ours
        })
        .collect())
}

/// Whether `dir` holds a finished run stopped while its files moved into place: a partial
/// folder (a directory, not a link) with its `COMMIT` list (a plain file). The next lock
/// finishes that commit.
pub fn commit_pending(dir: &Path) -> bool {
    let p = dir.join(PARTIAL);
    std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir())
        && std::fs::symlink_metadata(p.join(COMMIT)).is_ok_and(|m| m.file_type().is_file())
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
             choose another output.dir, or write less (output.distances = false, fewer \
             run.sources)",
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

/// Read the names of a list file of the run (`.tuccompi-files`, `COMMIT`); `None` when there
/// is none, or when something other than a plain file is there (it is not the run's list:
/// warned and ignored).
fn read_list(p: &Path) -> Option<Vec<String>> {
    match owned::read(p, "it is ignored", SMALL_FILE_CAP) {
        Ok(Some(bytes)) => Some(
            String::from_utf8_lossy(&bytes)
                .lines()
                .map(str::to_string)
                .collect(),
        ),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
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
        let commit = out.partial().join(COMMIT);
        if let Some(names) = out.has_unfinished().then(|| read_list(&commit)).flatten() {
            tracing::warn!(
                "{}: finishing the commit of a run that was stopped while moving its files into place",
                dir.display()
            );
            out.apply_commit(&names)?;
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

    /// Move the unfinished run's files (all but its journal and identity) into place, replacing
    /// the complete run's, and remove the partial folder.
    pub fn commit(&self) -> Result<()> {
        let p = self.partial();
        let mut names = Vec::new();
        for e in std::fs::read_dir(&p).map_err(|e| Error::io(&p, e))? {
            let e = e.map_err(|e| Error::io(&p, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let skip = [JOURNAL, IDENTITY, COMMIT].contains(&name.as_str()) || !plain_name(&name);
            // Only the run's plain files: a link or a folder planted here is not an output.
            if !skip && e.file_type().map(|t| t.is_file()).unwrap_or(false) {
                sync_file(&e.path())?;
                names.push(name);
            }
        }
        names.sort();
        write_file(&p, COMMIT, &names.join("\n"))?;
        sync_dir(&p)?;
        self.apply_commit(&names)
    }

    fn apply_commit(&self, names: &[String]) -> Result<()> {
        let p = self.partial();
        let list = self.dir.join(FILES);
        // A list names only plain entries of this directory (a planted `COMMIT` or
        // `.tuccompi-files` cannot move or remove anything elsewhere).
        let names: Vec<&String> = names
            .iter()
            .filter(|n| plain_name(n) && ![JOURNAL, IDENTITY].contains(&n.as_str()))
            .collect();
        // No list: the files of a version that kept none, when its report proves it ours.
        let old: Vec<String> = read_list(&list).unwrap_or_else(|| {
            if legacy_report(&self.dir) {
                LEGACY.iter().map(|s| s.to_string()).collect()
            } else {
                Vec::new()
            }
        });
        for o in old.iter().filter(|o| !names.contains(o)) {
            if !plain_name(o) {
                continue;
            }
            let path = self.dir.join(o);
            // Only a plain file is the previous run's output; a folder or a link at its name
            // is someone else's and stays (a wedge otherwise: every commit would fail on it).
            if !owned::remove_plain(&path)? && std::fs::symlink_metadata(&path).is_ok() {
                tracing::warn!(
                    "{}: left alone: it is {}, not the previous run's file that {} names",
                    path.display(),
                    owned::describe(&path),
                    list.display()
                );
            }
        }
        for n in &names {
            let from = p.join(n);
            let ours = std::fs::symlink_metadata(&from).is_ok_and(|m| m.file_type().is_file());
            if ours {
                let to = self.dir.join(n);
                if std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
                    return Err(owned::foreign(
                        &to,
                        &format!(
                            "move it away, then run again: the finished run waits in {} and \
                             the next run moves it into place",
                            p.display()
                        ),
                    ));
                }
                // A link at `to` is replaced as a name; what it leads to is not touched.
                std::fs::rename(&from, &to).map_err(|e| Error::io(&to, e))?;
            }
        }
        let text: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        write_file(&self.dir, FILES, &text.join("\n"))?;
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

    /// Another program's `report.json`, `INCOMPLETE` and the like do not make a directory
    /// tuccompi's; its own list does, and so does a tuccompi report of a version with no list.
    #[test]
    fn only_the_runs_own_list_or_report_makes_a_directory_ours() {
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
        // Listed by the run: ours, except what the list does not name.
        std::fs::write(
            d.join(FILES),
            "report.json\nsummary.csv\ndistances.npy\nINCOMPLETE",
        )
        .unwrap();
        let e = validate(&d).unwrap_err().to_string();
        assert!(
            e.contains("an entry") && e.contains("\"notes.txt\"") && !e.contains("summary"),
            "{e}"
        );
        std::fs::remove_file(d.join("notes.txt")).unwrap();
        validate(&d).unwrap();
        // No list: a tuccompi report of an earlier version proves the directory its own.
        std::fs::remove_file(d.join(FILES)).unwrap();
        assert!(validate(&d).is_err());
        std::fs::write(
            d.join("report.json"),
            r#"{"tuccompi": "0.1.0", "plugin": "apsp", "tasks": 3, "units": []}"#,
        )
        .unwrap();
        validate(&d).unwrap();
        // ... and its files are replaced at commit; a lookalike's are not touched.
        let o = OutputDir::lock(&d, "me").unwrap();
        o.begin(&serde_json::json!({})).unwrap();
        std::fs::write(o.partial().join("summary.csv"), "new").unwrap();
        o.commit().unwrap();
        assert!(!d.join("distances.npy").exists() && !d.join("INCOMPLETE").exists());
        assert_eq!(
            std::fs::read_to_string(d.join("summary.csv")).unwrap(),
            "new"
        );
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
        o.begin(&serde_json::json!({})).unwrap();
        std::fs::write(o.partial().join("a.csv"), "1").unwrap();
        // The temporary names of earlier versions, planted beside the list and in the folder.
        std::os::unix::fs::symlink(&v, out.join(format!(".{FILES}.tmp"))).unwrap();
        std::os::unix::fs::symlink(&v, o.partial().join(format!(".{COMMIT}.tmp"))).unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&v).unwrap(), "precious");
        let m = std::fs::symlink_metadata(out.join(FILES)).unwrap();
        assert!(
            m.file_type().is_file(),
            ".tuccompi-files stays a plain file"
        );
        assert_eq!(std::fs::read_to_string(out.join(FILES)).unwrap(), "a.csv");
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
            o.begin(&serde_json::json!({})).unwrap();
            std::fs::write(o.partial().join("a.csv"), "1").unwrap();
            o.commit().unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        assert!(
            out.join("photos/p.jpg").exists(),
            "a folder is never deleted"
        );
        assert!(std::fs::symlink_metadata(out.join("link")).is_ok());
        assert_eq!(std::fs::read_to_string(d.join("v")).unwrap(), "precious");
        assert!(
            !out.join("old.csv").exists(),
            "the previous run's file goes"
        );
        assert!(out.join(LOCK).exists());
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
        let live = owned::temp_beside(&d.join(FILES)).unwrap();
        let name = live
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let dead = name.replace(&format!("-{}.", std::process::id()), "-99999999.");
        std::fs::write(d.join(&dead), "half a list").unwrap();
        drop(live);
        let _o = OutputDir::lock(&d, "me").unwrap();
        assert!(!d.join(&dead).exists());
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
        let id = serde_json::json!({"x": 1});
        o.begin(&id).unwrap();
        assert_eq!(o.identity().unwrap(), id);
        std::fs::write(o.partial().join("a.csv"), "1").unwrap();
        std::fs::write(o.partial().join("big.npy"), "2").unwrap();
        std::fs::write(o.partial().join(JOURNAL), "j").unwrap();
        o.commit().unwrap();
        assert!(!o.has_unfinished());
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "1");
        assert!(!d.join(JOURNAL).exists());
        // A second run without big.npy: the stale one goes.
        o.begin(&id).unwrap();
        std::fs::write(o.partial().join("a.csv"), "3").unwrap();
        o.commit().unwrap();
        assert!(!d.join("big.npy").exists());
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "3");
        // A commit cut short after its first rename is finished by the next lock.
        o.begin(&id).unwrap();
        std::fs::write(o.partial().join("a.csv"), "4").unwrap();
        std::fs::write(o.partial().join("b.csv"), "5").unwrap();
        std::fs::write(o.partial().join(COMMIT), "a.csv\nb.csv").unwrap();
        std::fs::rename(o.partial().join("a.csv"), d.join("a.csv")).unwrap();
        drop(o);
        let o = OutputDir::lock(&d, "me").unwrap();
        assert!(!o.has_unfinished());
        assert_eq!(std::fs::read_to_string(d.join("b.csv")).unwrap(), "5");
        assert_eq!(
            std::fs::read_to_string(d.join(FILES)).unwrap(),
            "a.csv\nb.csv"
        );
    }
}
