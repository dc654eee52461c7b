//! The tuning cache: winners of `tuccompi tune`, kept in a TOML file under the user's cache
//! directory (`$TUCCOMPI_CACHE`, else `$XDG_CACHE_HOME/tuccompi/tuning.toml` when that
//! variable is an absolute path, else `~/.cache/tuccompi/tuning.toml`), keyed by device name,
//! driver version, kernel set and problem size class. Only `tuccompi tune` writes it, through a
//! temporary file renamed into place (never through a link).

use crate::device::DeviceInfo;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Tuned values for one key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Work-group size of the kernels without local-memory constraints (0 = the driver's).
    pub local_size: Option<usize>,
    /// Tasks per batch.
    pub batch: Option<usize>,
    /// The plugin's own knobs (its [`Knob::own`](super::Knob::own) candidates), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: BTreeMap<String, usize>,
}

/// The cache file's content.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cache {
    /// Entries by key.
    #[serde(default)]
    pub entries: BTreeMap<String, Entry>,
}

/// The key: device, driver, kernel set (e.g. `apsp.worklist.u32`), size class (⌊log2 n⌋).
pub fn key(dev: &DeviceInfo, kernels: &str, n: usize) -> String {
    let class = usize::BITS - n.max(1).leading_zeros() - 1;
    format!(
        "{} | {} | {} | n~2^{}",
        dev.name, dev.driver, kernels, class
    )
}

/// Where the cache lives.
pub fn path() -> PathBuf {
    if let Some(p) = std::env::var_os("TUCCOMPI_CACHE") {
        return PathBuf::from(p);
    }
    let base = crate::owned::cache_home().unwrap_or_else(std::env::temp_dir);
    base.join("tuccompi").join("tuning.toml")
}

impl Cache {
    /// Load the cache (empty if the file does not exist; an error if it is corrupt).
    pub fn load() -> Result<Cache> {
        let p = path();
        match std::fs::read_to_string(&p) {
            Ok(text) => toml::from_str(&text).map_err(|e| {
                Error::Config(format!(
                    "{}: {}; delete the file to start a fresh tuning cache",
                    p.display(),
                    e.message()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Cache::default()),
            Err(e) => Err(Error::io(&p, e)),
        }
    }

    /// Write the cache back (creating its directory).
    pub fn save(&self) -> Result<()> {
        let p = path();
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let text = toml::to_string_pretty(self).map_err(|e| Error::Config(e.to_string()))?;
        if let Some(dir) = p.parent() {
            crate::owned::sweep_dead(dir);
        }
        crate::owned::write_atomic(
            &p,
            text.as_bytes(),
            "name a file for the tuning cache with TUCCOMPI_CACHE",
        )
    }
}
