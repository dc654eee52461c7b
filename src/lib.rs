//! # tuccompi
//!
//! Runs embarrassingly parallel workloads over every computational unit a cluster has: CPU
//! cores, OpenCL devices with several kernels in flight each, and many machines through MPI,
//! after the TuCCompi model (Tuned, Concurrent, CUDA, OpenMP, MPI), rebuilt on OpenCL and Rust.
//!
//! Layers, outermost first (dependencies point downward only):
//! [`node`] → [`thread`] → ([`scheduler`], [`tuning`]) → concurrent kernels (queues of the
//! [`device`] layer, one unit thread each) → [`device`].
//! A [`plugin::Plugin`] provides a CPU half and a GPU half of one task; see `examples/collatz.rs`
//! and, with floating point, `examples/options.rs`.
//! The built-in plugins (the `tuccompi-plugins` package under `plugins/`) sit on top of all of
//! this: they use the layers, and no layer names them; the `tuccompi` binary is
//! [`cli::main`] with their registry.

#![warn(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    unsafe_op_in_unsafe_fn
)]

pub mod cli;
pub mod config;
pub mod device;
mod error;
pub mod input;
pub mod node;
pub mod npy;
pub mod owned;
pub mod plugin;
pub mod runtime;
pub mod scheduler;
pub mod session;
pub mod share;
pub mod sink;
pub mod thread;
pub mod tuning;

pub use config::Plan;
pub use error::{filled, reserved, words_le, zeros, Error, Result, ZeroBits};
pub use runtime::RunOptions;
pub use session::Session;

/// The name the running program's messages start with (`knn: warning: ...`): the binary's own,
/// as [`cli::main`] was started, else `tuccompi`.
pub fn program_name() -> &'static str {
    PROGRAM.get().map_or("tuccompi", String::as_str)
}

/// Set once by [`cli::main`] (the first call wins).
static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Name the program for [`program_name`] (the first call wins).
pub(crate) fn set_program_name(name: &str) {
    let _ = PROGRAM.set(name.to_string());
}

/// A test's stand-in for a kill at a named point of a recovery protocol (debug builds only,
/// as the tests build the binary): when `TUCCOMPI_FAILPOINT` names `point`, the process
/// aborts there, leaving what a `kill -9` at that moment leaves. Points: `commit-marked`
/// (the commit marker written, nothing moved), `commit-renamed` (the first file moved).
#[doc(hidden)]
pub fn failpoint(point: &str) {
    if cfg!(debug_assertions) && std::env::var_os("TUCCOMPI_FAILPOINT").is_some_and(|v| v == point)
    {
        std::process::abort();
    }
}
