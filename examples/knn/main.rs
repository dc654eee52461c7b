#![forbid(unsafe_code)]
fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&[&knn::Knn]) // the whole `tuccompi` command line
}
