//! tuccompi's built-in plugins, on top of every layer of the framework (the `tuccompi` crate,
//! which names none of them; the `tuccompi` binary hands [`registry`] to its CLI), and the graph
//! formats they read ([`graph`]). Adding one: a folder here, its kernels under `kernels/`, one
//! line in [`registry`]. Plugins share helpers through [`common`], never by importing a sibling.

#![warn(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    unsafe_op_in_unsafe_fn
)]

pub mod api;
pub mod apsp;
pub mod common;
pub mod dense_dijkstra;
pub mod fw;
pub mod graph;

// The framework's layers, under the paths the plugins were written against (`tuccompi::config`,
// `tuccompi::plugin`, ...): a plugin crate builds on them as the framework offers them.
pub use tuccompi::{
    cli, config, device, filled, node, owned, plugin, reserved, runtime, scheduler, sink, thread,
    tuning, words_le, zeros, Error, Plan, Result, RunOptions, ZeroBits,
};

use tuccompi::plugin::Plugin;

/// Every built-in plugin, in the order `tuccompi plugins` lists them.
pub fn registry() -> Vec<&'static dyn Plugin> {
    vec![
        &apsp::Apsp,
        &fw::Fw(fw::Variant::Naive),
        &fw::Fw(fw::Variant::Blocked),
        &fw::Fw(fw::Variant::RKleene),
        &dense_dijkstra::DenseDijkstra,
    ]
}

/// Run `plan` with the built-in plugins ([`registry`]) and `opts.plugins`: [`runtime::run`]
/// with the registry in front of them.
pub fn run(plan: &Plan, opts: &RunOptions<'_>, node: &dyn node::Node) -> Result<runtime::Outcome> {
    let opts = RunOptions {
        plugins: registry()
            .into_iter()
            .chain(opts.plugins.iter().copied())
            .collect(),
        ..*opts
    };
    runtime::run(plan, &opts, node)
}
