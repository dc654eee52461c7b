//! The tuning cache: winners of `tuccompi tune`, kept in a TOML file under the user's cache
//! directory (`$TUCCOMPI_CACHE`, else `$XDG_CACHE_HOME/tuccompi/tuning.toml` when that
//! variable is an absolute path, else `~/.cache/tuccompi/tuning.toml`), keyed by device name,
//! driver version, kernel set and problem size class. Only `tuccompi tune` writes it, through a
//! temporary file renamed into place (never through a link), and only over nothing or a file
//! that is a tuning cache: its first line (`# tuccompi tuning cache`), or, for a file written
//! before it had one, its content. A run reads it through [`crate::owned::CacheFile`]: a file
//! there that is not a tuning cache (or not a plain file, or too large) is left alone with one
//! warning, and the run goes on with predicted launch parameters.

use crate::device::DeviceInfo;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// The key: device, driver, kernel set (e.g. `myplugin.variant.u32`), size class (⌊log2 n⌋).
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

/// The first line of a tuning cache: what recognizes the file as one before it is replaced.
const MAGIC: &str = "# tuccompi tuning cache";
/// The most bytes a tuning cache holds (an entry is about a hundred).
const CAP: u64 = 16 << 20;
/// What to do when the file at the cache's name is not a tuning cache.
const HINT: &str = "name a file for the tuning cache with TUCCOMPI_CACHE, or remove this one";

/// A tuning cache written before the cache had its first line: recognized only when it parses
/// as one, with nothing else in it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Legacy {
    #[serde(rename = "entries")]
    _entries: BTreeMap<String, Entry>,
}

fn is_legacy(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|t| toml::from_str::<Legacy>(t).is_ok())
}

/// The cache file at `p`, through the rule every cache follows ([`crate::owned::CacheFile`]).
fn file(p: &Path) -> crate::owned::CacheFile {
    crate::owned::CacheFile::new(p, "a tuccompi tuning cache")
        .magic(MAGIC.as_bytes())
        .format(is_legacy)
        .cap(CAP)
}

/// The text of `bytes`, a file that is the cache's, as a cache.
fn parse(bytes: &[u8]) -> std::result::Result<Cache, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    toml::from_str(text).map_err(|e| e.message().to_string())
}

impl Cache {
    /// Load the cache to update it (`tuccompi tune`): empty when there is no file, or when
    /// the tuning cache there is unreadable (it is replaced); an error naming the file when
    /// something that is not a tuning cache is there (another file, a link, a named pipe), so
    /// that no tuning is spent on winners that could not be stored.
    pub fn load() -> Result<Cache> {
        Cache::load_at(&path())
    }

    /// [`Cache::load`] of the file at `p`.
    /// (Public for the fuzz targets, which name the file.)
    #[doc(hidden)]
    pub fn load_at(p: &Path) -> Result<Cache> {
        let f = file(p);
        match f.read() {
            Ok(None) => Ok(Cache::default()),
            Ok(Some(bytes)) => Ok(parse(&bytes).unwrap_or_else(|why| {
                tracing::warn!(
                    "{}: unreadable tuning cache ({why}); it is replaced",
                    f.path().display()
                );
                Cache::default()
            })),
            Err(why) => Err(Error::Config(format!(
                "{}: it is {why}; tuccompi replaces only a tuning cache there: {HINT}",
                f.path().display()
            ))),
        }
    }

    /// The cache as a run reads it: empty when there is none; a file that is not a tuning
    /// cache, or a tuning cache that cannot be read, is left alone with one warning, and the
    /// run goes on with the rules' predictions.
    pub fn read() -> Cache {
        Cache::read_at(&path())
    }

    /// [`Cache::read`] of the file at `p`.
    /// (Public for the fuzz targets, which name the file.)
    #[doc(hidden)]
    pub fn read_at(p: &Path) -> Cache {
        let f = file(p);
        let why = match f.read() {
            Ok(None) => return Cache::default(),
            Ok(Some(bytes)) => match parse(&bytes) {
                Ok(c) => return c,
                Err(why) => format!("unreadable tuning cache ({why})"),
            },
            Err(why) => format!("it is {why}"),
        };
        let what = format!(
            "it is not used: the launch parameters are predicted (`{} tune` replaces an \
             unreadable tuning cache; anything else there is left alone)",
            crate::program_name()
        );
        crate::owned::warn_once(f.path(), &why, &what);
        Cache::default()
    }

    /// Write the cache back (creating its directory), through a temporary file renamed into
    /// place, only over nothing or a tuning cache.
    pub fn save(&self) -> Result<()> {
        self.save_at(&path())
    }

    /// [`Cache::save`] to the file at `p`.
    /// (Public for the fuzz targets, which name the file.)
    #[doc(hidden)]
    pub fn save_at(&self, p: &Path) -> Result<()> {
        let text = toml::to_string_pretty(self).map_err(|e| Error::Config(e.to_string()))?;
        let text = format!(
            "{MAGIC}: the winners of `tune` per device, driver, kernel set and size class\n{text}"
        );
        file(p).replace(text.as_bytes(), HINT)
    }
}

#[cfg(test)]
mod test;
