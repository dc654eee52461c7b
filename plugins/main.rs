//! The `tuccompi` command: the library's CLI ([`tuccompi::cli::main`]) with the built-in
//! plugins and no others. A user's own binary is the same call with its plugins.

fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&[])
}
