//! Fuzzing tuccompi's parsers and recovery paths on stable Rust.
//!
//! - [`targets`]: one function per parser (graph formats, `.co`, id files, `.npy`, `.osm.pbf`,
//!   the config and `--set`, the journal, each cache), taking bytes and calling the real
//!   reader through its public API;
//! - [`mutate`]: a seeded mutation engine (bit flips, interesting integers, insertions,
//!   deletions, splices, and for text formats numbers and tokens replaced);
//! - [`harness`]: the corpus replayed, then a fixed number of mutated cases, each under a time
//!   limit and the memory [`guard`]; findings written outside the repository;
//! - `corpus/TARGET/`: the committed seed corpus (small valid and edge files).
//!
//! `cargo test -p tuccompi-fuzz` runs every target briefly from a fixed seed (CI); the guide's
//! "Fuzzing" section says how to run them for hours. `libfuzzer/` holds `cargo fuzz` targets
//! calling the same functions, for nightly toolchains.

#![warn(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    unsafe_op_in_unsafe_fn
)]

pub mod encode;
pub mod guard;
pub mod harness;
pub mod mutate;
pub mod seeds;
pub mod targets;
