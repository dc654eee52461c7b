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
    /// The node layer (MPI) failed.
    #[error("node layer: {0}")]
    Node(String),
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
