//! Inputs with places: an OpenStreetMap extract (its graph, coordinates and node ids) or a
//! graph with a DIMACS `.co` file; points in `run.sources` / `apsp.targets` snapped onto the
//! nearest edge of an OpenStreetMap network (phantom vertices, `[input.osm] snap = "edge"`, the
//! default) or to the nearest vertex; `vertices.csv`, `snapped.csv` and `edges.csv` written
//! with the run's outputs.

use crate::common::input::{is_osm, name_path, Input};
use crate::graph::osm::network::{Extra, TurnArc};
use crate::graph::osm::{read_network, Edge, OsmStats, SnapTo};
use crate::graph::{read_co, Coords, Csr, Snap};
use std::collections::HashMap;
use std::fmt::Write as _;
use tuccompi::plugin::PrepareCtx;
use tuccompi::sink::Out;
use tuccompi::{Error, Result};

/// The places of an input's vertices, when it has any.
#[derive(Debug, Clone)]
pub struct Geo {
    /// Each road vertex's coordinates (and OSM node id): the vertices points snap to with
    /// `snap = "vertex"`, ids `0..coords.points.len()`.
    pub coords: Coords,
    /// What the OpenStreetMap reader kept and skipped (OSM input only).
    pub osm: Option<OsmStats>,
    /// The graph's vertices after the road vertices (OSM input): phantom vertices of points
    /// snapped onto edges, then turn-restriction copies.
    pub extra: Vec<Extra>,
    /// A restricted via vertex's departure copy: where a path from that vertex starts.
    pub departure: HashMap<u32, u32>,
    /// The lists of points already snapped onto edges, by key (`run.sources`, `apsp.targets`).
    pub snapped: Vec<(String, Vec<Snap>)>,
    /// The network's edges with their geometry (OSM input): routes drawn along the ways,
    /// and `edges.csv` when `[input.osm] export = true` asks for it.
    pub edges: Option<Vec<Edge>>,
    /// Whether `edges.csv` is written (`[input.osm] export = true`).
    pub export: bool,
    /// Whether points snap onto the nearest edge (`[input.osm] snap = "edge"`, the default for
    /// OpenStreetMap input; false for `snap = "vertex"` and `.co` places). A graph read
    /// without points keeps it for the points given later ([`crate::apsp::phantom`]).
    pub snap_edges: bool,
    /// The arcs the turn expansion moved (OSM input with restrictions), by `(edge,
    /// backward)` into [`Geo::edges`] (as read, before any point split them).
    pub turn_arcs: HashMap<(u32, bool), TurnArc>,
}

impl Geo {
    fn of(coords: Coords) -> Self {
        Geo {
            coords,
            osm: None,
            extra: Vec::new(),
            departure: HashMap::new(),
            snapped: Vec::new(),
            edges: None,
            export: false,
            snap_edges: false,
            turn_arcs: HashMap::new(),
        }
    }

    /// The road vertex graph vertex `v` stands for: a turn-restriction copy's via vertex,
    /// else `v` (a road vertex or a phantom).
    pub fn road_vertex(&self, v: u32) -> u32 {
        let roads = self.coords.points.len() as u32;
        match v
            .checked_sub(roads)
            .and_then(|i| self.extra.get(i as usize))
        {
            Some(Extra::Turn(b)) => *b,
            _ => v,
        }
    }

    /// Graph vertex `v`'s place: a road vertex's, a phantom's point on its edge, a turn
    /// copy's via vertex's.
    pub fn place(&self, v: u32) -> Option<[f64; 2]> {
        let roads = self.coords.points.len() as u32;
        match v
            .checked_sub(roads)
            .and_then(|i| self.extra.get(i as usize))
        {
            Some(Extra::Phantom(p)) => Some(*p),
            // A copy of a phantom (no U-turn there) is at the phantom's place.
            Some(Extra::Turn(b)) if *b >= roads => self.place(*b),
            _ => self
                .coords
                .points
                .get(self.road_vertex(v) as usize)
                .copied()
                .flatten(),
        }
    }
}

/// The input graph as a CSR, with its vertices' places when the input has them (an `.osm.pbf`,
/// or `input.coordinates`). `points` are the lists of `[lon, lat]` points the job will snap
/// (`(key, points)`): on an OpenStreetMap input with `snap = "edge"` they are snapped here, as
/// the phantom vertices they make are part of the graph ([`resolve`] returns them).
///
/// Under MPI every rank reads the places itself (each needs them to snap points): an OSM
/// extract is parsed once per rank, and the CSR built from it is still shared per machine.
pub fn load_input(
    ctx: &PrepareCtx<'_>,
    input: &Input,
    points: &[(&str, &[[f64; 2]])],
) -> Result<(Csr, Option<Geo>)> {
    let plan = ctx.plan;
    if let Some(p) = input.path() {
        if is_osm(p) {
            let opts = super::osm_options(plan, input)?;
            let mut net = read_network(p, opts).map_err(|e| name_path(plan, p, e))?;
            let lists: Vec<(&str, &[[f64; 2]])> = points
                .iter()
                .copied()
                .filter(|(_, p)| !p.is_empty())
                .collect();
            let snapped = if opts.snap == SnapTo::Edge && !lists.is_empty() {
                let snaps = net.snap(&lists)?;
                lists
                    .iter()
                    .map(|(k, _)| k.to_string())
                    .zip(snaps)
                    .collect()
            } else {
                Vec::new()
            };
            let list = net.graph(opts.turns().map_err(|e| plan.origins.locate(e))?);
            let mut build = || Csr::from_edges(&list);
            let csr = match ctx.share {
                Some(s) => crate::graph::share_csr(s, &mut build)?,
                None => build()?,
            };
            let geo = Geo {
                coords: net.coords,
                osm: Some(net.stats),
                extra: net.extra,
                departure: net.departure,
                snapped,
                edges: Some(net.edges),
                export: opts.export,
                snap_edges: opts.snap == SnapTo::Edge,
                turn_arcs: net.turn_arcs,
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
            Some(Geo::of(coords))
        }
    };
    Ok((csr, geo))
}

/// Points snapped in order (several points may snap to one vertex, each keeping its own task or
/// column): the vertices (internal ids) and the snaps. The points [`load_input`] snapped onto
/// edges for `key` are those snaps; others snap to their nearest road vertex. `key` names the
/// list in messages.
pub fn resolve(points: &[[f64; 2]], geo: Option<&Geo>, key: &str) -> Result<(Vec<u32>, Vec<Snap>)> {
    let Some(geo) = geo else {
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
    if let Some((_, snaps)) = geo.snapped.iter().find(|(k, _)| k == key) {
        return Ok((snaps.iter().map(|s| s.vertex).collect(), snaps.clone()));
    }
    let index = geo.coords.index();
    let snaps = points
        .iter()
        .enumerate()
        .map(|(i, &p)| index.snap(p, key, i))
        .collect::<Result<Vec<_>>>()?;
    Ok((snaps.iter().map(|s| s.vertex).collect(), snaps))
}

/// The vertices paths from `sources` start at: a restricted via vertex's departure copy
/// (turn restrictions), else the vertex itself.
pub fn departures(geo: Option<&Geo>, mut sources: Vec<u32>) -> Vec<u32> {
    if let Some(g) = geo.filter(|g| !g.departure.is_empty()) {
        for s in &mut sources {
            *s = g.departure.get(s).copied().unwrap_or(*s);
        }
    }
    sources
}

/// The ids outputs name `sources` by (`summary.csv`, `od.npz`): the road vertex of a departure
/// copy (turn restrictions), else the source itself.
pub fn source_labels(geo: Option<&Geo>, sources: &[u32]) -> Vec<u32> {
    let Some(g) = geo.filter(|g| !g.departure.is_empty()) else {
        return sources.to_vec();
    };
    sources.iter().map(|&s| g.road_vertex(s)).collect()
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
    if geo.export {
        report.insert("edges_csv".into(), "edges.csv".into());
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

/// Write `vertices.csv` (`id,osm_id,lon,lat,kind,of`, OSM input: `kind` is `node` for a road
/// vertex, `phantom` for a point snapped onto an edge (no `osm_id`, no `of`), `turn` for a
/// turn-restriction copy of the road vertex `of`, with that vertex's OSM id and place), when
/// asked `edges.csv` ([`edges_csv`](crate::graph::osm::network::edges_csv)) and, when
/// points were snapped, `snapped.csv` (`kind,index,lon,lat,vertex,distance,on_lon,on_lat`;
/// `x,y`/`on_x,on_y` for a `.co` file's planar coordinates), ids in the input's numbering.
pub fn write_outputs(
    out: &Out,
    geo: &Geo,
    id_base: u64,
    snapped: &[(&str, &[Snap])],
) -> Result<()> {
    if let Some(osm_ids) = &geo.coords.osm_ids {
        let mut csv = String::with_capacity((osm_ids.len() + geo.extra.len()) * 48 + 32);
        csv.push_str("id,osm_id,lon,lat,kind,of\n");
        for (i, (&osm, p)) in osm_ids.iter().zip(&geo.coords.points).enumerate() {
            let [lon, lat] = p.expect("every OSM vertex has a place");
            let id = i as u64 + id_base;
            // 7 decimals: OSM's own precision (100 nanodegrees).
            let _ = writeln!(csv, "{id},{osm},{lon:.7},{lat:.7},node,{id}");
        }
        let n = osm_ids.len() as u64;
        for (i, e) in geo.extra.iter().enumerate() {
            let id = n + i as u64 + id_base;
            let _ = match *e {
                Extra::Phantom([lon, lat]) => {
                    writeln!(csv, "{id},,{lon:.7},{lat:.7},phantom,")
                }
                Extra::Turn(b) => {
                    let [lon, lat] = geo.place(b).expect("road and phantom vertices have places");
                    // A phantom's copy (no U-turn there) has no OSM node.
                    let osm = osm_ids
                        .get(b as usize)
                        .map_or(String::new(), |x| x.to_string());
                    writeln!(
                        csv,
                        "{id},{osm},{lon:.7},{lat:.7},turn,{}",
                        b as u64 + id_base
                    )
                }
            };
        }
        out.write_file("vertices.csv", &csv)?;
    }
    if let Some(edges) = geo.edges.as_ref().filter(|_| geo.export) {
        out.write_file(
            "edges.csv",
            &crate::graph::osm::network::edges_csv(edges, id_base),
        )?;
    }
    if snapped.iter().any(|(_, s)| !s.is_empty()) {
        let (xn, yn) = if geo.coords.spherical {
            ("lon", "lat")
        } else {
            ("x", "y")
        };
        let mut csv = format!("kind,index,{xn},{yn},vertex,distance,on_{xn},on_{yn}\n");
        for (kind, snaps) in snapped {
            for (i, s) in snaps.iter().enumerate() {
                let _ = writeln!(
                    csv,
                    "{kind},{i},{},{},{},{},{},{}",
                    s.point[0],
                    s.point[1],
                    s.vertex as u64 + id_base,
                    s.distance,
                    s.on[0],
                    s.on[1]
                );
            }
        }
        out.write_file("snapped.csv", &csv)?;
    }
    Ok(())
}
