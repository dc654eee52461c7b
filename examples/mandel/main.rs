#![forbid(unsafe_code)]
fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&[&mandel::Mandel]) // the whole command line
}
