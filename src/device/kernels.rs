//! Kernel files as plugins declare them: OpenCL C source and its characterization (TOML),
//! embedded by the plugin with `include_str!`, so the binary is self-contained and the core
//! holds no table of kernels. `TUCCOMPI_KERNELS=DIR` reads `DIR/STEM.cl` and `DIR/STEM.toml`
//! instead (for kernel development without rebuilding).

use crate::{Error, Result};
use std::borrow::Cow;

/// A kernel file a plugin ships: `kernels/STEM.cl` with its characterization `kernels/STEM.toml`.
///
/// Declared by the plugin itself, next to the code that launches it:
///
/// ```ignore
/// pub const KERNELS: KernelSource = KernelSource {
///     stem: "collatz",
///     source: include_str!("collatz.cl"),
///     characterization: include_str!("collatz.toml"),
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSource {
    /// Stem shared by the two files (`sssp` for `sssp.cl` + `sssp.toml`); also the name
    /// `TUCCOMPI_KERNELS` looks for, and the key of the device's program cache.
    pub stem: &'static str,
    /// OpenCL C source (kernels only).
    pub source: &'static str,
    /// Characterization TOML: one table per `__kernel` of `source`.
    pub characterization: &'static str,
}

/// A kernel file as a run uses it: the embedded copy, or the one `TUCCOMPI_KERNELS` names.
#[derive(Debug, Clone)]
pub struct KernelFile {
    /// Stem (`sssp` for `sssp.cl`).
    pub stem: &'static str,
    /// OpenCL C source.
    pub source: Cow<'static, str>,
    /// Characterization TOML.
    pub characterization: Cow<'static, str>,
    /// Where the source came from (for messages): `sssp.cl (embedded)` or a path.
    pub origin: String,
}

impl KernelFile {
    /// The source's file name as build-log lines should give it: the path under
    /// `TUCCOMPI_KERNELS`, or `STEM.cl` for the embedded copy.
    pub fn path(&self) -> String {
        self.origin.trim_end_matches(" (embedded)").to_string()
    }
    /// Where the characterization came from (for messages).
    pub fn toml_origin(&self) -> String {
        self.origin.replace(".cl", ".toml")
    }
}

impl KernelSource {
    /// The file to build: from `TUCCOMPI_KERNELS` if set, else the embedded copy.
    pub fn load(&self) -> Result<KernelFile> {
        let Some(dir) = std::env::var_os("TUCCOMPI_KERNELS") else {
            return Ok(KernelFile {
                stem: self.stem,
                source: Cow::Borrowed(self.source),
                characterization: Cow::Borrowed(self.characterization),
                origin: format!("{}.cl (embedded)", self.stem),
            });
        };
        let dir = std::path::Path::new(&dir);
        let cl = dir.join(format!("{}.cl", self.stem));
        let toml = dir.join(format!("{}.toml", self.stem));
        let source = std::fs::read_to_string(&cl).map_err(|e| Error::io(&cl, e))?;
        let characterization = std::fs::read_to_string(&toml).map_err(|e| Error::io(&toml, e))?;
        Ok(KernelFile {
            stem: self.stem,
            source: Cow::Owned(source),
            characterization: Cow::Owned(characterization),
            origin: cl.display().to_string(),
        })
    }
}
