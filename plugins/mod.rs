//! Built-in plugins. Adding one: a folder here, one line in [`registry`], its kernels under
//! `kernels/`, and an example under `examples/`.

pub mod apsp;
pub mod fw;

use crate::plugin::Plugin;

/// Every built-in plugin, in the order `tuccompi plugins` lists them.
pub fn registry() -> Vec<&'static dyn Plugin> {
    vec![
        &apsp::Apsp,
        &fw::Fw(fw::Variant::Naive),
        &fw::Fw(fw::Variant::Blocked),
        &fw::Fw(fw::Variant::RKleene),
        &fw::dijkstra::DenseDijkstra,
    ]
}
