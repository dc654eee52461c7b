//! Files the run owns: every file a run writes, replaces or deletes goes through here, so that
//! it never writes through a link and never touches a file it did not make (what `git`,
//! `rsync` and the `tempfile` crate do).
//!
//! - A new file is created new (`O_EXCL`): whatever is already at its name, a symbolic link
//!   included, is left alone and reported.
//! - A whole file (a summary, a report, a cache) is written to a temporary file created
//!   exclusive with a unique name beside its target (the `tempfile` crate), then renamed into
//!   place. A rename replaces the name, never what a link there points to. The temporary name
//!   carries this process's host and pid and a signature with the user's key
//!   (`.NAME.tuccompi-HOST-PID.RANDOM-TAG.tmp`), so that a later run can remove what a killed
//!   writer left ([`sweep_dead`]) and nothing else: a file merely named like one is kept.
//! - An existing file of the run (the journal and the bulk rows of a resumed run) is
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

/// `n` random bytes from the kernel (`getrandom`); `None` when it gives none.
fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let mut b = [0u8; N];
    let mut got = 0;
    while got < N {
        // SAFETY: getrandom writes at most `N - got` bytes into the rest of `b`.
        let r = unsafe { libc::getrandom(b[got..].as_mut_ptr().cast(), N - got, 0) };
        if r <= 0 {
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        got += r as usize;
    }
    Some(b)
}

/// The user's secret that signs temporary names, so that a name proves it was made by a
/// tuccompi process of this user (N4 of issue 47: a file merely *named* like a temporary must
/// never be deleted). Kept in the user's cache directory, `~/.cache/tuccompi/key/temp.key`
/// (`$XDG_CACHE_HOME` honoured; without one, `$TMPDIR/.tuccompi-UID/temp.key`), a folder of
/// mode 0700 owned by the user, the key 0600. When that cannot be made or trusted, a key of this process alone: its
/// temporaries are then not recognized after it dies (left, never deleted wrongly).
fn temp_key() -> &'static [u8; 16] {
    static KEY: std::sync::OnceLock<[u8; 16]> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        user_key().unwrap_or_else(|why| {
            tracing::debug!("temporary names signed by a key of this process alone: {why}");
            random_bytes().unwrap_or_else(|| {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                xxhash_rust::xxh3::xxh3_128(
                    &[t.to_le_bytes(), (std::process::id() as u128).to_le_bytes()].concat(),
                )
                .to_le_bytes()
            })
        })
    })
}

/// The user's key file read, or made when absent (module rule of [`temp_key`]).
fn user_key() -> std::result::Result<[u8; 16], String> {
    use std::os::unix::fs::DirBuilderExt;
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    // In the user's cache directory (a folder of its own, never a temporary directory that
    // a caller empties and checks), else the system's temporary directory, hidden.
    let dir = match cache_home() {
        Some(c) => {
            let parent = c.join("tuccompi");
            std::fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            parent.join("key")
        }
        None => std::env::temp_dir().join(format!(".tuccompi-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !m.is_dir() || m.uid() != uid || m.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{} is {} not a private folder of this user",
            dir.display(),
            describe(&dir)
        ));
    }
    let path = dir.join("temp.key");
    let read = || -> std::result::Result<Option<[u8; 16]>, String> {
        let Some(bytes) = read(&path, "", 64).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let f = reopen(&path, false, "").map_err(|e| e.to_string())?;
        let m = f.metadata().map_err(|e| e.to_string())?;
        if m.uid() != uid || m.permissions().mode() & 0o077 != 0 {
            return Err(format!("{} is not private to this user", path.display()));
        }
        bytes
            .try_into()
            .map(Some)
            .map_err(|_| format!("{} is not a key of 16 bytes", path.display()))
    };
    if let Some(k) = read()? {
        return Ok(k);
    }
    // Made under a name of this process, then linked to the key's name: another process
    // making it at the same moment either wins the link or reads the whole key.
    let key: [u8; 16] = random_bytes().ok_or("the kernel gives no random bytes")?;
    let mine = dir.join(format!("temp.key.{}", std::process::id()));
    let _ = std::fs::remove_file(&mine);
    let made = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&mine)
        .and_then(|mut f| f.write_all(&key).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::hard_link(&mine, &path));
    let _ = std::fs::remove_file(&mine);
    match made {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            read()?.ok_or_else(|| format!("{} vanished", path.display()))
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The signature of a temporary name: 16 hex digits of a keyed hash over the writer's host,
/// pid, random part and target name.
fn temp_tag(host: &str, pid: u32, random: &str, name: &str) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(temp_key());
    for part in [
        host.as_bytes(),
        &pid.to_le_bytes(),
        random.as_bytes(),
        name.as_bytes(),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    format!("{:016x}", h.digest())
}

/// The temporary name of `target`'s file name as the process `pid` of this machine writes it:
/// `.NAME.tuccompi-HOST-PID.RANDOM-TAG.tmp`, where TAG signs the rest with the user's key
/// ([`temp_key`]). For tests that stand in for a writer that died.
#[doc(hidden)]
pub fn temp_name_of(name: &str, pid: u32) -> String {
    let random: [u8; 8] = random_bytes().unwrap_or_else(|| {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        (N.fetch_add(1, std::sync::atomic::Ordering::Relaxed) ^ u64::from(pid) << 32).to_le_bytes()
    });
    let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let host = host();
    let tag = temp_tag(&host, pid, &random, name);
    format!(".{name}{TMP_MARK}{host}-{pid}.{random}-{tag}{TMP_SUFFIX}")
}

/// A new temporary file beside `target` (same directory, so that the rename is atomic),
/// created exclusive with a unique name that names this process and proves it a tuccompi
/// writer's ([`temp_name_of`]).
pub fn temp_beside(target: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = parent(target);
    let name = target
        .file_name()
        .map_or("file".into(), |s| s.to_string_lossy().into_owned());
    // 0666 less the umask, as `File::create` gives: outputs are as readable as the user's
    // other files (tempfile's default, 0600, is for secrets). The whole name is ours (no
    // random part added by tempfile): a name taken already is tried again with another.
    let mut tries = 0;
    loop {
        let made = tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(0o666))
            .prefix(&temp_name_of(&name, std::process::id()))
            .suffix("")
            .rand_bytes(0)
            .tempfile_in(dir);
        match made {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            r => return r.map_err(|e| Error::io(dir, e)),
        }
    }
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

/// A file a cache keeps outside the output directory (the tuning cache, the speed history, a
/// graph cache, a hierarchy): the one way such a file is opened, read and replaced, so that
/// the next cache inherits the rule instead of re-implementing it.
///
/// - It is opened without following a link at its name and without blocking (`O_NOFOLLOW |
///   O_NONBLOCK`): a link, a named pipe, a socket, a device or a directory there is refused,
///   in words ("a named pipe", "a symbolic link to /dev/zero").
/// - Its size is checked (`fstat`) against the cache's cap before a byte is read, and no more
///   than the cap is ever read.
/// - It is the cache's own only when it is empty, begins with the cache's magic bytes, or
///   (for a format with no magic, or an older version that had none) its content passes the
///   cache's format check. Only then is it read as the cache or replaced; anything else is
///   left alone, and the caller warns once and goes on without the cache.
/// - It is replaced through an exclusive temporary file beside it, renamed into place
///   ([`temp_beside`]): a rename replaces the name, never what a link there points to.
///
/// O(cap) memory at most for a read; O(magic) bytes read to recognize a file with a magic.
#[derive(Debug, Clone)]
pub struct CacheFile {
    path: PathBuf,
    what: &'static str,
    magic: &'static [u8],
    format: Option<fn(&[u8]) -> bool>,
    cap: u64,
}

impl CacheFile {
    /// The cache file at `path`, of the kind `what` names in messages ("a tuccompi tuning
    /// cache"). Until [`magic`](Self::magic) or [`format`](Self::format) says how it is
    /// recognized, only an empty file is taken for it; its cap is 64 MiB until
    /// [`cap`](Self::cap) sets another.
    pub fn new(path: impl Into<PathBuf>, what: &'static str) -> CacheFile {
        CacheFile {
            path: path.into(),
            what,
            magic: b"",
            format: None,
            cap: 64 << 20,
        }
    }

    /// The first bytes every file of this cache begins with.
    pub fn magic(mut self, magic: &'static [u8]) -> CacheFile {
        self.magic = magic;
        self
    }

    /// A check of a whole file's bytes that recognizes this cache's files without the magic
    /// (a format with none, such as JSON, or an older version written before it had one).
    pub fn format(mut self, check: fn(&[u8]) -> bool) -> CacheFile {
        self.format = Some(check);
        self
    }

    /// The most bytes a file of this cache holds: a larger file is refused unread.
    pub fn cap(mut self, bytes: u64) -> CacheFile {
        self.cap = bytes;
        self
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file opened for reading when it is this cache's: `Ok(None)` when nothing is there,
    /// else the file (at its start) and its size; an empty file is returned as it is. What
    /// else is there is refused, in words. A file recognized by its format alone is read whole
    /// (within the cap) to be checked.
    pub fn open(&self) -> std::result::Result<Option<(File, u64)>, String> {
        use std::io::{Seek, SeekFrom};
        let Some((mut f, len)) = self.open_any()? else {
            return Ok(None);
        };
        if self.recognized_by_head(&f, len)? {
            return Ok(Some((f, len)));
        }
        self.read_checked(&mut f)?;
        f.seek(SeekFrom::Start(0))
            .map_err(|e| format!("unreadable ({e})"))?;
        Ok(Some((f, len)))
    }

    /// The file's bytes when it is this cache's (module rule): `Ok(None)` when nothing is
    /// there; what else is there is refused, in words.
    pub fn read(&self) -> std::result::Result<Option<Vec<u8>>, String> {
        let Some((mut f, len)) = self.open_any()? else {
            return Ok(None);
        };
        self.recognized_by_head(&f, len)?;
        self.read_checked(&mut f).map(Some)
    }

    /// Whether the cache may replace what is at its name: nothing, or a file that is its own
    /// (module rule). Otherwise what is there, in words.
    pub fn replaceable(&self) -> std::result::Result<(), String> {
        self.open().map(|_| ())
    }

    /// Replace the file with `bytes` (creating its directory): only when
    /// [`replaceable`](Self::replaceable), checked again just before the rename, so that a
    /// file that appeared meanwhile is not replaced. First removes the temporary files that
    /// killed writers left beside it. A refusal is an [`Error::Config`] naming the file, what
    /// is there and `hint` (what to do).
    pub fn replace(&self, bytes: &[u8], hint: &str) -> Result<()> {
        let dir = parent(&self.path);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        sweep_dead(dir);
        let refuse = |why: String| {
            Error::Config(format!(
                "{}: it is {why}; tuccompi replaces only {} there: {hint}",
                self.path.display(),
                self.what
            ))
        };
        self.replaceable().map_err(refuse)?;
        let mut tmp = temp_beside(&self.path)?;
        tmp.write_all(bytes)
            .and_then(|()| tmp.as_file().sync_data())
            .map_err(|e| Error::io(tmp.path(), e))?;
        if std::fs::symlink_metadata(&self.path).is_err() {
            tmp.persist_noclobber(&self.path)
        } else {
            self.replaceable().map_err(refuse)?;
            tmp.persist(&self.path)
        }
        .map_err(|e| Error::io(&self.path, e.error))?;
        Ok(())
    }

    /// Open whatever regular file is at the name, never through a link and never blocking,
    /// and check its size against the cap.
    fn open_any(&self) -> std::result::Result<Option<(File, u64)>, String> {
        let f = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ELOOP | libc::ENXIO | libc::EISDIR) => describe(&self.path),
                    _ => format!("unreadable ({e})"),
                })
            }
        };
        let m = f.metadata().map_err(|e| format!("unreadable ({e})"))?;
        if !m.file_type().is_file() {
            return Err(describe(&self.path));
        }
        if m.len() > self.cap {
            return Err(format!(
                "a file of {} bytes, more than {} ever holds ({} bytes at most)",
                m.len(),
                self.what,
                self.cap
            ));
        }
        Ok(Some((f, m.len())))
    }

    /// `Ok(true)` when `f` (of `len` bytes) is the cache's by its first bytes (empty, or the
    /// magic), `Ok(false)` when only its format check can tell (read it whole), refused when
    /// neither can make it the cache's: a foreign file is never read beyond its magic.
    fn recognized_by_head(&self, f: &File, len: u64) -> std::result::Result<bool, String> {
        if len == 0 || self.has_magic(f)? {
            Ok(true)
        } else if self.format.is_some() {
            Ok(false)
        } else {
            Err(format!("a file that is not {}", self.what))
        }
    }

    /// Whether `f` begins with the magic (read in place, the file offset unmoved).
    fn has_magic(&self, f: &File) -> std::result::Result<bool, String> {
        use std::os::unix::fs::FileExt;
        if self.magic.is_empty() {
            return Ok(false);
        }
        let mut head = vec![0u8; self.magic.len()];
        let mut got = 0;
        while got < head.len() {
            match f.read_at(&mut head[got..], got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("unreadable ({e})")),
            }
        }
        Ok(got == head.len() && head == self.magic)
    }

    /// `f` read whole (within the cap) when it is empty, begins with the magic or passes the
    /// format check.
    fn read_checked(&self, f: &mut File) -> std::result::Result<Vec<u8>, String> {
        let mut bytes = Vec::new();
        f.take(self.cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("unreadable ({e})"))?;
        if bytes.len() as u64 > self.cap {
            return Err(format!(
                "a file of more than {} bytes (it grew while read), more than {} ever holds",
                self.cap, self.what
            ));
        }
        let ours = bytes.is_empty()
            || (!self.magic.is_empty() && bytes.starts_with(self.magic))
            || self.format.is_some_and(|check| check(&bytes));
        if !ours {
            return Err(format!("a file that is not {}", self.what));
        }
        Ok(bytes)
    }
}

/// Warn once per process about a cache file that is left alone: `{path}: {why}; {consequence}`.
/// A run that asks for the same cache again (the tuning cache, once per device) does not
/// repeat it.
pub fn warn_once(path: &Path, why: &str, consequence: &str) {
    static WARNED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if warned.iter().any(|p| p == path) {
        return;
    }
    warned.push(path.to_path_buf());
    tracing::warn!("{}: {why}; {consequence}", path.display());
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

/// The host and pid named by a temporary file name of [`temp_beside`], when its signature
/// proves a tuccompi process of this user made it; `None` for any other name.
fn writer_of(name: &str) -> Option<(&str, u32)> {
    let rest = name.strip_suffix(TMP_SUFFIX)?.strip_prefix('.')?;
    let at = rest.rfind(TMP_MARK)?;
    let (target, rest) = (&rest[..at], &rest[at + TMP_MARK.len()..]);
    let (who, signed) = rest.rsplit_once('.')?;
    let (random, tag) = signed.split_once('-')?;
    let (host, pid) = who.rsplit_once('-')?;
    let pid: u32 = pid.parse().ok()?;
    (temp_tag(host, pid, random, target) == tag).then_some((host, pid))
}

/// Whether `name` is a temporary file name that a tuccompi process of this user made
/// ([`temp_beside`]; its signature checked), alive or dead.
pub fn is_our_temporary(name: &str) -> bool {
    writer_of(name).is_some()
}

/// Whether process `pid` of this machine is alive.
fn alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

/// Remove the temporary files that writers of this machine left in `dir` when they died (a
/// kill while a cache was written): regular files named by [`temp_beside`], their signature
/// checked (a file merely named like one is never touched), whose process is gone. Returns the bytes freed. Errors are ignored: a sweep is a courtesy.
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

/// A private scratch folder of this process (mode 0700, made new under the system's
/// temporary directory, named `PREFIX.RANDOM`), removed with everything in it when dropped,
/// and also when the process is ended by a signal ([`remove_scratch_for_exit`], which the
/// command line's signal handling calls before it exits without running destructors).
#[derive(Debug)]
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
}

/// The scratch folders alive in this process.
static SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

impl Scratch {
    /// A new scratch folder whose name begins with `prefix` (`tuccompi-tune-`).
    pub fn new(prefix: &str) -> Result<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        SCRATCH
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(dir.path().to_path_buf());
        Ok(Scratch { dir: Some(dir) })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            SCRATCH
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|p| p != d.path());
            let _ = d.close();
        }
    }
}

/// Remove every scratch folder of this process now: for a process about to end without
/// running destructors (a signal's `_exit`). A folder is removed as `remove_dir_all` does,
/// never following a link inside it.
pub fn remove_scratch_for_exit() {
    let dirs = std::mem::take(&mut *SCRATCH.lock().unwrap_or_else(|p| p.into_inner()));
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
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
