#![forbid(unsafe_code)]
//! The whole `tuccompi` command line with the options plugin as its registry.

fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&[&options::Options])
}
