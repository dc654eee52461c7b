#![forbid(unsafe_code)]
//! tuccompi embedded in a program of its own: one session, two jobs. The first job discovers
//! the devices and builds the programs; the second reuses both (and whatever the plugin kept).
//!
//!     cargo run --release -p collatz --bin collatz-session -- OUT_DIR
use std::path::Path;
use tuccompi::{Plan, Session};

fn main() -> tuccompi::Result<()> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "out/collatz-session".into());
    let session = Session::new();
    for first in [1_000, 2_000_000] {
        let dir = Path::new(&out).join(format!("from-{first}"));
        let config = format!(
            "[run]\nplugin = \"collatz\"\n[collatz]\nfirst = {first}\ncount = 300000\n\
             block = 7000\n[output]\ndir = {:?}\n",
            dir.display().to_string()
        );
        let plan = Plan::from_toml(&config, Path::new("<collatz-session>"), &[])?;
        let outcome = session.run(&plan, &[&collatz::Collatz])?;
        println!(
            "{}: checksum {} ({:.3} s run phase)",
            dir.display(),
            outcome.report["checksum"],
            outcome.run_seconds
        );
    }
    Ok(())
}
