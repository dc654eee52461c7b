//! Inputs with places: an OpenStreetMap extract (its graph, coordinates and node ids) or a
//! graph with a DIMACS `.co` file; points in `run.sources` / `apsp.targets` snapped to their
//! nearest vertex; `vertices.csv` and `snapped.csv` written with the run's outputs.

use crate::common::input::{is_osm, name_path, Input};
use crate::graph::osm::{read_osm, OsmStats};
use crate::graph::{read_co, Coords, Csr, Snap, SnapIndex};
use crate::plugin::PrepareCtx;
use crate::sink::write_file;
use crate::{Error, Result};
use std::fmt::Write as _;
use std::path::Path;

/// The places of an input's vertices, when it has any.
#[derive(Debug)]
pub struct Geo {
    /// Each vertex's coordinates (and OSM node id).
    pub coords: Coords,
    /// What the OpenStreetMap reader kept and skipped (OSM input only).
    pub osm: Option<OsmStats>,
}

/// The input graph as a CSR, with its vertices' places when the input has them (an `.osm.pbf`,
/// or `input.coordinates`).
///
/// Under MPI every rank reads the places itself (each needs them to snap points): an OSM
/// extract is parsed once per rank, and the CSR built from it is still shared per machine.
pub fn load_input(ctx: &PrepareCtx<'_>, input: &Input) -> Result<(Csr, Option<Geo>)> {
    let plan = ctx.plan;
    if let Some(p) = input.path() {
        if is_osm(p) {
            let (list, coords, stats) =
                read_osm(p, super::osm_options(plan)?).map_err(|e| name_path(plan, p, e))?;
            let mut build = || Csr::from_edges(&list);
            let csr = match ctx.share {
                Some(s) => crate::graph::share_csr(s, &mut build)?,
                None => build()?,
            };
            let geo = Geo {
                coords,
                osm: Some(stats),
            };
            return Ok((csr, Some(geo)));
        }
    }
    let csr = super::load_csr(ctx, input)?;
    let geo = match &input.coordinates {
        None => None,
        Some(co) => {
            if csr.id_base != 1 {
                return Err(plan.origins.error(
                    "input.coordinates",
                    format!(
                        "input.coordinates: a .co file numbers vertices from 1, as .gr files \
                         do, but {}'s ids start at {}; use the .gr file the coordinates \
                         belong to",
                        csr.name, csr.id_base
                    ),
                ));
            }
            let coords = read_co(co, csr.n).map_err(|e| match e {
                Error::Io { path, source } if path == *co => plan.origins.error(
                    "input.coordinates",
                    format!(
                        "input.coordinates = \"{}\": {source}; check the path",
                        co.display()
                    ),
                ),
                e => e,
            })?;
            Some(Geo { coords, osm: None })
        }
    };
    Ok((csr, geo))
}

/// Points snapped to their nearest vertex through `index`, in order (several points may snap
/// to one vertex, each keeping its own task or column): the vertices (internal ids) and the
/// snaps. `key` names the list in messages.
pub fn resolve(
    points: &[[f64; 2]],
    index: Option<&SnapIndex<'_>>,
    key: &str,
) -> Result<(Vec<u32>, Vec<Snap>)> {
    let Some(index) = index else {
        return Err(Error::Config(format!(
            "{key}: points need vertex coordinates: an OpenStreetMap input (input.path = \
             \"x.osm.pbf\") or input.coordinates = \"x.co\" beside a .gr file; or list vertex ids"
        )));
    };
    if points.is_empty() {
        return Err(Error::Config(format!(
            "{key} = []: list at least one point"
        )));
    }
    let snaps = points
        .iter()
        .enumerate()
        .map(|(i, &p)| index.snap(p, key, i))
        .collect::<Result<Vec<_>>>()?;
    Ok((snaps.iter().map(|s| s.vertex).collect(), snaps))
}

/// The places' facts for report.json: the OSM reader's counts, where vertices.csv is, and each
/// snapped list's count, largest and mean snapping distance.
pub fn report(geo: &Geo, snapped: &[(&str, &[Snap])]) -> serde_json::Value {
    let mut report = serde_json::Map::new();
    report.insert(
        "coordinates".into(),
        if geo.coords.spherical {
            "lon/lat degrees".into()
        } else {
            format!("planar, from {}", geo.coords.source).into()
        },
    );
    if geo.coords.osm_ids.is_some() {
        report.insert("vertices_csv".into(), "vertices.csv".into());
    }
    if let Some(stats) = &geo.osm {
        report.insert(
            "osm".into(),
            serde_json::to_value(stats).unwrap_or_default(),
        );
    }
    if snapped.iter().any(|(_, s)| !s.is_empty()) {
        let mut facts = serde_json::Map::new();
        for (kind, snaps) in snapped.iter().filter(|(_, s)| !s.is_empty()) {
            let max = snaps.iter().map(|s| s.distance).fold(0.0, f64::max);
            let mean = snaps.iter().map(|s| s.distance).sum::<f64>() / snaps.len() as f64;
            facts.insert(
                format!("{kind}s"),
                serde_json::json!({ "points": snaps.len(), "max_distance": max, "mean_distance": mean }),
            );
        }
        facts.insert(
            "distance_unit".into(),
            if geo.coords.spherical {
                "metres (great-circle)".into()
            } else {
                "the .co file's units (Euclidean)".into()
            },
        );
        facts.insert("file".into(), "snapped.csv".into());
        report.insert("snapped".into(), facts.into());
    }
    report.into()
}

/// Write `vertices.csv` (`id,osm_id,lon,lat`, OSM input) and, when points were snapped,
/// `snapped.csv` (`kind,index,lon,lat,vertex,distance`; `x,y` for a `.co` file's planar
/// coordinates), ids in the input's numbering.
pub fn write_outputs(
    dir: &Path,
    geo: &Geo,
    id_base: u64,
    snapped: &[(&str, &[Snap])],
) -> Result<()> {
    if let Some(osm_ids) = &geo.coords.osm_ids {
        let mut csv = String::with_capacity(osm_ids.len() * 40 + 32);
        csv.push_str("id,osm_id,lon,lat\n");
        for (i, (&osm, p)) in osm_ids.iter().zip(&geo.coords.points).enumerate() {
            let [lon, lat] = p.expect("every OSM vertex has a place");
            // 7 decimals: OSM's own precision (100 nanodegrees).
            let _ = writeln!(csv, "{},{osm},{lon:.7},{lat:.7}", i as u64 + id_base);
        }
        write_file(dir, "vertices.csv", &csv)?;
    }
    if snapped.iter().any(|(_, s)| !s.is_empty()) {
        let (xn, yn) = if geo.coords.spherical {
            ("lon", "lat")
        } else {
            ("x", "y")
        };
        let mut csv = format!("kind,index,{xn},{yn},vertex,distance\n");
        for (kind, snaps) in snapped {
            for (i, s) in snaps.iter().enumerate() {
                let _ = writeln!(
                    csv,
                    "{kind},{i},{},{},{},{}",
                    s.point[0],
                    s.point[1],
                    s.vertex as u64 + id_base,
                    s.distance
                );
            }
        }
        write_file(dir, "snapped.csv", &csv)?;
    }
    Ok(())
}
