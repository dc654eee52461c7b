//! Built-in plugins, on top of every layer (no layer imports them; `main` hands [`registry`] to
//! the runtime). Adding one: a folder here, its kernels under `kernels/`, one line in
//! [`registry`]. Plugins share helpers through [`common`], never by importing a sibling.

pub mod apsp;
pub mod common;
pub mod dense_dijkstra;
pub mod fw;

use crate::plugin::Plugin;

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
