//! Build details for `tuccompi --version`: the commit, the enabled features, the compiler and
//! the profile. A build outside a git checkout (a crate tarball) says `unknown` for the commit.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).map_or("unknown".to_string(), |c| {
        // Uncommitted changes to tracked files make it another build than the commit.
        match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(_) => format!("{c}-modified"),
            None => c,
        }
    });
    // Rebuild the details when HEAD moves (a commit, a checkout).
    for p in ["HEAD", "index"] {
        if let Some(path) = git(&["rev-parse", "--git-path", p]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &r]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(|f| f.to_lowercase()))
        .filter(|f| f != "default")
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TUCCOMPI_COMMIT={commit}");
    println!("cargo:rustc-env=TUCCOMPI_FEATURES={features}");
    println!("cargo:rustc-env=TUCCOMPI_RUSTC={rustc}");
    println!(
        "cargo:rustc-env=TUCCOMPI_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
}
