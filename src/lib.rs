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
//! The built-in plugins ([`plugins`]) sit on top of all of this: they use the layers, and no
//! layer names them. [`run`] is the runtime with the built-in registry handed to it.

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
pub mod graph;
pub mod input;
pub mod node;
pub mod npy;
pub mod owned;
pub mod plugin;
#[path = "../plugins/mod.rs"]
pub mod plugins;
pub mod runtime;
pub mod scheduler;
pub mod sink;
pub mod thread;
pub mod tuning;

pub use config::Plan;
pub use error::{filled, reserved, words_le, zeros, Error, Result, ZeroBits};
pub use runtime::RunOptions;

/// Run `plan` with the built-in plugins ([`plugins::registry`]) and `opts.extra_plugins`:
/// [`runtime::run`] with the registry handed to it.
pub fn run(plan: &Plan, opts: &RunOptions<'_>, node: &dyn node::Node) -> Result<runtime::Outcome> {
    runtime::run(plan, &plugins::registry(), opts, node)
}
