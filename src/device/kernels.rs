//! Kernel files: `kernels/NAME.cl` with its characterization `kernels/NAME.toml`, embedded in
//! the binary so it is self-contained. `TUCCOMPI_KERNELS=DIR` reads them from DIR instead (for
//! kernel development without rebuilding).

use crate::{Error, Result};

/// One kernel file and its characterization.
#[derive(Debug, Clone)]
pub struct KernelFile {
    /// Stem (`sssp` for `kernels/sssp.cl`).
    pub stem: String,
    /// OpenCL C source.
    pub source: String,
    /// Characterization TOML.
    pub characterization: String,
    /// Where it came from (for messages).
    pub origin: String,
}

const EMBEDDED: &[(&str, &str, &str)] = &[
    (
        "sssp",
        include_str!("../../kernels/sssp.cl"),
        include_str!("../../kernels/sssp.toml"),
    ),
    (
        "collatz",
        include_str!("../../kernels/collatz.cl"),
        include_str!("../../kernels/collatz.toml"),
    ),
    (
        "fw",
        include_str!("../../kernels/fw.cl"),
        include_str!("../../kernels/fw.toml"),
    ),
];

/// Every kernel stem known to this binary.
pub fn kernel_files() -> Result<Vec<KernelFile>> {
    EMBEDDED
        .iter()
        .map(|(stem, _, _)| kernel_file(stem))
        .collect()
}

/// The kernel file `stem`, from `TUCCOMPI_KERNELS` if set, else embedded.
pub fn kernel_file(stem: &str) -> Result<KernelFile> {
    if let Ok(dir) = std::env::var("TUCCOMPI_KERNELS") {
        let dir = std::path::Path::new(&dir);
        let cl = dir.join(format!("{stem}.cl"));
        let toml = dir.join(format!("{stem}.toml"));
        let source = std::fs::read_to_string(&cl).map_err(|e| Error::io(&cl, e))?;
        let characterization = std::fs::read_to_string(&toml).map_err(|e| Error::io(&toml, e))?;
        return Ok(KernelFile {
            stem: stem.into(),
            source,
            characterization,
            origin: cl.display().to_string(),
        });
    }
    EMBEDDED
        .iter()
        .find(|(s, _, _)| *s == stem)
        .map(|(s, cl, toml)| KernelFile {
            stem: s.to_string(),
            source: cl.to_string(),
            characterization: toml.to_string(),
            origin: format!("kernels/{s}.cl (embedded)"),
        })
        .ok_or_else(|| Error::Device(format!("no kernel file '{stem}' in this binary")))
}
