#![forbid(unsafe_code)]
fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&[&collatz::Collatz]) // the whole `tuccompi` command line
}
