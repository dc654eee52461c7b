//! The whole `tuccompi` command line (`run`, `check`, `tune`, `plugins`, `devices`, `--set`,
//! `--resume`...) with the knn plugin as its registry.

fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&[&knn::Knn])
}
