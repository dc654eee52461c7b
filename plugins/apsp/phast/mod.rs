//! PHAST (Delling, Goldberg, Nowatzyk, Werneck, JPDC 2013): one shortest-path tree per source
//! as a small upward Dijkstra plus one linear sweep over a contraction hierarchy.
//!
//! [`ch`] builds the hierarchy (renumbered into sweep order, with levels for the GPU). The CPU
//! half sweeps k trees at once with distances vertex-major.

pub mod ch;
pub mod cpu;
