//! The `tuccompi` command: the framework's CLI ([`tuccompi::cli::main`]) with the built-in
//! plugins and no others. A user's own binary is the same call with its plugins.

fn main() -> std::process::ExitCode {
    tuccompi::cli::main(&tuccompi_plugins::registry())
}
