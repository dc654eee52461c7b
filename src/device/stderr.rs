//! What a driver's compiler writes on the process's stderr while it builds a program.
//!
//! PoCL runs clang inside `clBuildProgram`, and clang closes a failed compilation with its
//! diagnostic count (`4 errors generated.`) written straight to file descriptor 2: a raw line
//! among the binary's own messages, although the build log (which the error carries) already
//! holds every diagnostic. PoCL accepts no build option that silences it (it refuses
//! `-fno-caret-diagnostics`), so [`capture`] points fd 2 at an anonymous temporary file for
//! the call and restores it afterwards. fd 2 is the process's, so captures are serialized by
//! one lock, and what other threads wrote meanwhile is written back to stderr afterwards
//! ([`release`]), minus clang's counts.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;

/// Serializes the captures: only one may hold fd 2 at a time.
static LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// fd 2 pointed at a temporary file until dropped, then restored.
struct Redirect {
    saved: libc::c_int,
    file: std::fs::File,
}

impl Redirect {
    /// Point fd 2 at a new temporary file; `None` (nothing redirected) when that fails.
    fn start() -> Option<Redirect> {
        let file = tempfile::tempfile().ok()?;
        let _ = std::io::stderr().flush();
        // SAFETY: dup on the process's fd 2, which stays open; the new descriptor is ours.
        let saved = unsafe { libc::dup(2) };
        if saved < 0 {
            return None;
        }
        // SAFETY: both descriptors are open (the file is owned by `file`, alive in the
        // returned value); dup2 atomically makes fd 2 refer to the file.
        if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
            // SAFETY: `saved` is the descriptor dup returned above, closed once.
            unsafe { libc::close(saved) };
            return None;
        }
        Some(Redirect { saved, file })
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        // SAFETY: `saved` is the duplicate of the original fd 2 made in `start`, still open;
        // dup2 restores fd 2 to it, then the duplicate is closed once.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}

/// Run `f` with fd 2 captured; returns its value and what was written on fd 2 meanwhile
/// (empty when the redirection could not be made: `f` then writes where it always does).
pub(super) fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    let _one = LOCK.lock();
    let Some(r) = Redirect::start() else {
        return (f(), String::new());
    };
    let value = f();
    let mut file = r.file.try_clone();
    drop(r);
    let mut text = Vec::new();
    if let Ok(f) = file.as_mut() {
        let _ = f.seek(SeekFrom::Start(0));
        let _ = f.read_to_end(&mut text);
    }
    (value, String::from_utf8_lossy(&text).into_owned())
}

/// Whether `line` is clang's closing count (`1 error generated.`, `2 warnings and 4 errors
/// generated.`).
fn is_count(line: &str) -> bool {
    let line = line.trim();
    line.starts_with(|c: char| c.is_ascii_digit())
        && line.ends_with(" generated.")
        && (line.contains(" error") || line.contains(" warning"))
}

/// Write `captured` back to stderr without clang's counts (other threads' lines, a driver's
/// other notes).
pub(super) fn release(captured: &str) {
    let rest: String = captured
        .split_inclusive('\n')
        .filter(|l| !is_count(l))
        .collect();
    if !rest.is_empty() {
        let _ = std::io::stderr().write_all(rest.as_bytes());
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn clang_counts_are_recognized_and_nothing_else() {
        for l in [
            "1 error generated.",
            "4 errors generated.\n",
            "2 warnings and 4 errors generated.",
            "1 warning generated.",
        ] {
            assert!(is_count(l), "{l}");
        }
        for l in [
            "collatz: warning: unit gpu0 failed",
            "error generated.",
            "4 files generated.",
        ] {
            assert!(!is_count(l), "{l}");
        }
    }
}
