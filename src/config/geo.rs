//! `[input.osm]` and `input.coordinates`: how an OpenStreetMap extract becomes a graph, and
//! where a DIMACS graph's vertex coordinates are (for points in `run.sources` and
//! `apsp.targets`).

use super::Origins;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// The geographic part of `[input]`, after defaults.
#[derive(Debug, Clone, Default)]
pub struct GeoPlan {
    /// `[input.osm]`, when given (only with an `.osm.pbf` `input.path`), for the plugin that
    /// reads the file ([`super::Plan::table`]).
    pub osm: Option<toml::Table>,
    /// `input.coordinates`: a DIMACS `.co` file for `input.path`'s graph.
    pub coordinates: Option<PathBuf>,
}

/// Whether `path` names an OpenStreetMap PBF file (`.pbf`, as in `x.osm.pbf`).
pub fn is_osm(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pbf"))
}

/// Check that the keys fit the input: `[input.osm]` only with an `.osm.pbf`, `coordinates`
/// only with a graph file that is not one (OpenStreetMap has its own).
pub(super) fn validate(
    path: &Option<PathBuf>,
    osm: Option<toml::Table>,
    coordinates: Option<PathBuf>,
    origins: &Origins,
) -> Result<GeoPlan> {
    let osm_input = path.as_deref().is_some_and(is_osm);
    if osm.is_some() && !osm_input {
        return Err(Error::Config(format!(
            "{}: [input.osm] applies to OpenStreetMap input (input.path = \"x.osm.pbf\"); \
             remove it or name a .osm.pbf file",
            origins.of("input.osm")
        )));
    }
    if let Some(c) = &coordinates {
        let why = if c.as_os_str().is_empty() {
            Some("name a DIMACS .co file")
        } else if path.is_none() {
            Some("coordinates belong to a graph file: set input.path too")
        } else if osm_input {
            Some("an OpenStreetMap input has its own coordinates; remove the key")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Error::Config(format!(
                "{}: input.coordinates = {:?}: {why}",
                origins.of("input.coordinates"),
                c.display().to_string()
            )));
        }
    }
    Ok(GeoPlan { osm, coordinates })
}
