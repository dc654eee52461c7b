//! Files the run owns: every file a run writes, replaces or deletes goes through here, so that
//! it never writes through a link and never touches a file it did not make (what `git`,
//! `rsync` and the `tempfile` crate do).
//!
//! - A new file is created new (`O_EXCL`): whatever is already at its name, a symbolic link
//!   included, is left alone and reported.
//! - A whole file (a summary, a report, a cache) is written to a temporary file created
//!   exclusive with a unique name beside its target (the `tempfile` crate), then renamed into
//!   place. A rename replaces the name, never what a link there points to. The temporary name
//!   carries this process's host and pid (`.NAME.tuccompi-HOST-PID.RANDOM.tmp`), so that a
//!   later run can remove what a killed writer left ([`sweep_dead`]).
//! - An existing file of the run (the journal and `distances.npy` of a resumed run) is
//!   reopened with `O_NOFOLLOW` and used only when it is a regular file.
//! - A file is removed only when it is a regular file at a name the caller identified as its
//!   own (its record in the run's file list, its magic bytes); a directory or a link at that
//!   name is left alone.
//!
//! Paths are still resolved through the directories above the last component: those are the
//! user's (an `output.dir` that is a link to a directory is fine); a run makes no link itself.

use crate::{Error, Result};
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What is at `path`, in words, for messages ("a symbolic link to /x", "a directory").
pub fn describe(path: &Path) -> String {
    match std::fs::symlink_metadata(path) {
        Err(_) => "nothing".into(),
        Ok(m) => {
            let t = m.file_type();
            if t.is_symlink() {
                match std::fs::read_link(path) {
                    Ok(to) => format!("a symbolic link to {}", to.display()),
                    Err(_) => "a symbolic link".into(),
                }
            } else if t.is_dir() {
                "a directory".into()
            } else if t.is_fifo() {
                "a named pipe".into()
            } else if t.is_socket() {
                "a socket".into()
            } else if t.is_block_device() || t.is_char_device() {
                "a device".into()
            } else if m.nlink() > 1 {
                format!("a file with {} hard links", m.nlink())
            } else {
                "a file".into()
            }
        }
    }
}

/// The error for a `path` that holds something the run did not make: what is there, that
/// tuccompi leaves it alone, and `hint` (what to do).
pub fn foreign(path: &Path, hint: &str) -> Error {
    Error::Output(format!(
        "{} is {}, not a file this run made; tuccompi never writes through a link or \
         replaces what it did not create: {hint}",
        path.display(),
        describe(path)
    ))
}

/// Whether `m` is a file the run may write into: a regular file with no other name (a hard
/// link elsewhere would receive the writes).
fn is_plain(m: &Metadata) -> bool {
    m.file_type().is_file() && m.nlink() == 1
}

/// Open `o` at `path` without following a link at the last component; an error (made by
/// `foreign` with `hint`) when something other than a plain file is there.
fn open_plain(o: &mut OpenOptions, path: &Path, hint: &str) -> Result<File> {
    // O_NONBLOCK: opening a named pipe planted at the name must not wait for a writer.
    let f = o
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENXIO) | Some(libc::EISDIR) => foreign(path, hint),
            _ => Error::io(path, e),
        })?;
    let m = f.metadata().map_err(|e| Error::io(path, e))?;
    if !is_plain(&m) {
        return Err(foreign(path, hint));
    }
    Ok(f)
}

/// Create `path` as a new file for reading and writing, readable by others as the user's
/// umask says. Anything already there (a link included) is an error made with `hint`.
pub fn create_new(path: &Path, hint: &str) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                foreign(path, hint)
            } else {
                Error::io(path, e)
            }
        })
}

/// Reopen an existing file of the run (`write`: for writing too): never through a link, and
/// only a plain file. `NotFound` stays an [`Error::Io`] with that kind.
pub fn reopen(path: &Path, write: bool, hint: &str) -> Result<File> {
    open_plain(OpenOptions::new().read(true).write(write), path, hint)
}

/// Open the file at `path` for writing, creating it when absent (the lock file): never through
/// a link, and only a plain file.
pub fn open_or_create(path: &Path, hint: &str) -> Result<File> {
    open_plain(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
        path,
        hint,
    )
}

/// Read a file of the run whole (its `run.json`, its file list, a cache): never through a
/// link, never blocking (a named pipe or a device there is refused), only a plain file, and
/// only when it holds at most `cap` bytes: the size is checked before anything is read, and
/// no more than `cap` bytes are ever read (a file growing meanwhile is refused too).
/// `Ok(None)` when there is none.
pub fn read(path: &Path, hint: &str, cap: u64) -> Result<Option<Vec<u8>>> {
    match reopen(path, false, hint) {
        Ok(f) => {
            let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
            let too_big = || {
                Error::Output(format!(
                    "{} holds more than {cap} bytes, more than tuccompi ever writes there; \
                     it is not read: {hint}",
                    path.display()
                ))
            };
            if len > cap {
                return Err(too_big());
            }
            let mut bytes = Vec::with_capacity(len as usize);
            f.take(cap.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(path, e))?;
            if bytes.len() as u64 > cap {
                return Err(too_big());
            }
            Ok(Some(bytes))
        }
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// This machine's name, for temporary names (a cache directory may be shared by machines,
/// and a pid is only meaningful on its own).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
        .replace(['/', '.'], "_")
}

/// The marker between a target's name and the writer's host and pid in a temporary name.
const TMP_MARK: &str = ".tuccompi-";
const TMP_SUFFIX: &str = ".tmp";

/// A new temporary file beside `target` (same directory, so that the rename is atomic),
/// created exclusive with a unique name that names this process.
pub fn temp_beside(target: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = parent(target);
    let name = target
        .file_name()
        .map_or("file".into(), |s| s.to_string_lossy().into_owned());
    // 0666 less the umask, as `File::create` gives: outputs are as readable as the user's
    // other files (tempfile's default, 0600, is for secrets).
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o666))
        .prefix(&format!(
            ".{name}{TMP_MARK}{}-{}.",
            host(),
            std::process::id()
        ))
        .suffix(TMP_SUFFIX)
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))
}

fn parent(p: &Path) -> &Path {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Write `bytes` to `target` atomically: a temporary file beside it, synced, renamed over it.
/// What was at `target` is replaced as a name (a link there is replaced, its target is not
/// touched); the caller has checked that it may be replaced. A directory there is an error
/// made with `hint`.
pub fn write_atomic(target: &Path, bytes: &[u8], hint: &str) -> Result<()> {
    if std::fs::symlink_metadata(target).is_ok_and(|m| m.is_dir()) {
        return Err(foreign(target, hint));
    }
    let mut tmp = temp_beside(target)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_data())
        .map_err(|e| Error::io(tmp.path(), e))?;
    // On error the temporary file is removed (NamedTempFile's drop).
    tmp.persist(target)
        .map_err(|e| Error::io(target, e.error))?;
    Ok(())
}

/// Whether a cache may read and replace what is at `path`: nothing, an empty file, or a plain
/// file whose first bytes are `magic` (its own kind of file, of any format version).
/// Otherwise what is there, in words: "a symbolic link to /x", or "a file that is not
/// {what}".
pub fn ownable_by_magic(path: &Path, magic: &[u8], what: &str) -> std::result::Result<(), String> {
    let m = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("unreadable ({e})")),
        Ok(m) => m,
    };
    if !m.file_type().is_file() {
        return Err(describe(path));
    }
    if m.len() == 0 {
        return Ok(());
    }
    let mut head = Vec::new();
    reopen(path, false, "")
        .map_err(|_| describe(path))?
        .take(magic.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("unreadable ({e})"))?;
    if head != magic {
        return Err(format!("a file that is not {what}"));
    }
    Ok(())
}

/// Remove `path` when it is a regular file (the caller identified the name as the run's);
/// `Ok(false)` when something else is there (left alone) or nothing is.
pub fn remove_plain(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path, e)),
        },
        _ => Ok(false),
    }
}

/// The host and pid named by a temporary file name of [`temp_beside`].
fn writer_of(name: &str) -> Option<(&str, u32)> {
    let rest = name.strip_suffix(TMP_SUFFIX)?;
    let rest = &rest[rest.rfind(TMP_MARK)? + TMP_MARK.len()..];
    let (who, _random) = rest.rsplit_once('.')?;
    let (host, pid) = who.rsplit_once('-')?;
    Some((host, pid.parse().ok()?))
}

/// Whether process `pid` of this machine is alive.
fn alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

/// Remove the temporary files that writers of this machine left in `dir` when they died (a
/// kill while a cache was written): regular files named by [`temp_beside`] whose process is
/// gone. Returns the bytes freed. Errors are ignored: a sweep is a courtesy.
pub fn sweep_dead(dir: &Path) -> u64 {
    let here = host();
    let mut freed = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some((h, pid)) = name.to_str().and_then(writer_of) else {
            continue;
        };
        let Ok(m) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let dead = h == here && !alive(pid) && m.file_type().is_file();
        if dead && std::fs::remove_file(entry.path()).is_ok() {
            freed += m.len();
        }
    }
    freed
}

/// The user's cache directory: `$XDG_CACHE_HOME` when it is an absolute path (the XDG rule:
/// a relative one is ignored), else `$HOME/.cache` (when `HOME` is absolute).
pub fn cache_home() -> Option<PathBuf> {
    cache_home_of(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`cache_home`] from the two variables' values.
fn cache_home_of(
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    xdg.and_then(absolute)
        .or_else(|| home.and_then(absolute).map(|h| h.join(".cache")))
}

#[cfg(test)]
mod test;
