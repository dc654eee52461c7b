//! Typed errors for every layer. Only `main.rs` turns them into text and an exit code.
//!
//! Each variant carries the context a user needs to fix the problem: the file and line of bad
//! input, the config key, the device, the unit.

use std::path::PathBuf;

/// Everything that can go wrong in a tuccompi run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Bad content in an input file, at a known line.
    #[error("{path}:{line}: {msg}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong and what to change.
        msg: String,
    },
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// The input is valid in form but not usable by the chosen plugin.
    #[error("{0}")]
    Input(String),
    /// An OpenCL problem (no runtime, build failure, too little memory...).
    #[error("OpenCL: {0}")]
    Device(String),
    /// A unit failed while running a chunk of tasks.
    #[error("unit {unit}: {msg}")]
    Unit {
        /// The unit's name.
        unit: String,
        /// What went wrong.
        msg: String,
    },
    /// Units failed and no unit able to run the remaining tasks is left.
    #[error(
        "{left} of {tasks} tasks were not run: every unit that could run them failed ({failures})"
    )]
    NoUnitLeft {
        /// Tasks not run.
        left: usize,
        /// Tasks of the run.
        tasks: usize,
        /// Each failed unit and its error.
        failures: String,
    },
    /// The node layer (MPI) failed.
    #[error("node layer: {0}")]
    Node(String),
    /// The output directory cannot take this run (unsafe path, in use, too little space, an
    /// unfinished run in the way, a journal that does not match).
    #[error("{0}")]
    Output(String),
    /// The run was stopped (a signal) after its finished chunks were journaled.
    #[error("interrupted: {done} of {total} tasks are done{}", journaled(journal))]
    Interrupted {
        /// Tasks done (this run and the runs it resumed).
        done: usize,
        /// Tasks in the run.
        total: usize,
        /// The journal.
        journal: PathBuf,
    },
}

/// Where an interrupted run's tasks are journaled, for its message (an in-memory run has no
/// journal: its path is empty).
fn journaled(journal: &std::path::Path) -> String {
    if journal.as_os_str().is_empty() {
        " (an in-memory run: nothing is kept to resume)".into()
    } else {
        format!(" and journaled in {}", journal.display())
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wrap an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// A parse error at `path:line`.
    pub fn parse(path: impl Into<PathBuf>, line: usize, msg: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            msg: msg.into(),
        }
    }
}

/// A vector of `len` copies of `value`, or a clear error instead of aborting when the memory
/// cannot be had (hostile headers such as `p sp 3000000000 0` ask for gigabytes).
pub fn filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = reserved(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// Element types whose all-zero bytes are the value zero.
///
/// # Safety
/// Only for plain integers: [`zeros`] hands out memory the allocator zeroed as values of `T`.
pub unsafe trait ZeroBits: Copy {}
// SAFETY: plain integers.
unsafe impl ZeroBits for u32 {}
// SAFETY: plain integers.
unsafe impl ZeroBits for u64 {}
// SAFETY: plain integers.
unsafe impl ZeroBits for i32 {}
// SAFETY: plain integers.
unsafe impl ZeroBits for i64 {}

/// `len` zeros, or a clear error when the memory cannot be had. The allocator's zeroed memory
/// (for large blocks, pages the OS maps on first touch): nothing is written here, so a buffer
/// that a worker overwrites before reading costs nothing until it is used.
pub fn zeros<T: ZeroBits>(len: usize, what: &str) -> Result<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| no_memory::<T>(len, what))?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout's size is not zero.
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if p.is_null() {
        return Err(no_memory::<T>(len, what));
    }
    // SAFETY: `p` is a block of the global allocator with `T`'s alignment and room for exactly
    // `len` values, all of them initialized (zero bytes are a valid `T`: `ZeroBits`).
    Ok(unsafe { Vec::from_raw_parts(p, len, len) })
}

/// The little-endian words of `raw` (a whole number of them) as a vector, in one copy (the
/// caches' arrays are gigabytes at country scale; converting word by word took most of a
/// load). A clear error when the memory cannot be had.
pub fn words_le<T: ZeroBits>(raw: &[u8], what: &str) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    debug_assert_eq!(raw.len() % size, 0);
    let mut v = zeros::<T>(raw.len() / size, what)?;
    // SAFETY: `v` holds `raw.len() / size` initialized plain integers (`ZeroBits`): their
    // bytes may be overwritten with any bytes, every bit pattern being a value.
    let dst =
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * size) };
    dst.copy_from_slice(&raw[..dst.len()]);
    #[cfg(target_endian = "big")]
    compile_error!("the caches hold little-endian words: swap them here on a big-endian target");
    Ok(v)
}

/// An empty vector with room for `len` elements, or a clear error instead of aborting when the
/// memory cannot be had (an input asking for billions of elements, say).
pub fn reserved<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| no_memory::<T>(len, what))?;
    Ok(v)
}

fn no_memory<T>(len: usize, what: &str) -> Error {
    Error::Input(format!(
        "not enough memory for {what}: {len} elements of {} bytes ({:.1} GiB)",
        std::mem::size_of::<T>(),
        (len as f64) * std::mem::size_of::<T>() as f64 / (1u64 << 30) as f64
    ))
}

#[cfg(test)]
mod test {
    #[test]
    fn impossible_allocation_is_an_error_not_an_abort() {
        let e = super::filled(usize::MAX / 4, 0u64, "a test")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("not enough memory for a test"), "{e}");
        assert_eq!(super::filled(3, 7u8, "x").unwrap(), vec![7, 7, 7]);
        let e = super::reserved::<u64>(usize::MAX / 4, "b test").unwrap_err();
        assert!(
            e.to_string().starts_with("not enough memory for b test"),
            "{e}"
        );
        // Zeros: too large for a layout, too large for the machine (2^60 bytes), empty, and
        // a block large enough to come as fresh pages, read and written through.
        for len in [usize::MAX / 4, 1 << 57] {
            let e = super::zeros::<u64>(len, "c test").unwrap_err().to_string();
            assert!(e.starts_with("not enough memory for c test"), "{e}");
        }
        assert!(super::zeros::<u32>(0, "d").unwrap().is_empty());
        let mut z = super::zeros::<u32>(3 << 20, "e").unwrap();
        assert_eq!(z.len(), 3 << 20);
        assert!(z.iter().all(|&x| x == 0));
        z[12345] = 7;
        z.push(1);
        assert_eq!(
            (
                z[12345],
                z[3 << 20],
                z.iter().map(|&x| x as u64).sum::<u64>()
            ),
            (7, 1, 8)
        );
    }
}
