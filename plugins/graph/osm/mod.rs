//! OpenStreetMap input: a `.osm.pbf` extract read through the `osmpbf` crate and turned into a
//! road graph for one travel mode (`[input.osm] profile`), weighted by great-circle length or by
//! travel time (`[input.osm] weight`).
//!
//! Two passes over the file: the ways and relations first (which ways are routable for the
//! profile, in which directions, at what speed; the car profile's turn restrictions), then the
//! nodes those ways name (their coordinates). A way whose nodes the extract lacks in part (cut
//! at its border) keeps each run of two or more consecutive nodes it holds, as pyrosm does. A
//! vertex is a node that ends a routable way (or a kept part of one) or is shared by two of them
//! (or twice by one): the nodes between are contracted into the edge's weight, which follows
//! the way's whole geometry. Vertices are numbered from 0 in increasing OSM node id.
//! [`network`] turns the edges into the graph: points snapped onto them as phantom vertices, turn
//! restrictions expanded, the network exported as `edges.csv`.
//!
//! Nothing in the file is trusted: a way with no two consecutive nodes the file holds, or one
//! with a node placed off the globe, a tag that is not UTF-8 text or not in its block's string
//! table, a `oneway` value that says neither direction is usable are skipped and counted, each in
//! its own category ([`OsmStats`], in report.json; the corrupt ones also in a warning); a
//! restriction relation that cannot be applied is counted by why. A file the crate cannot decode (truncated, not PBF), or
//! whose header requires a feature this reader does not implement (a history file's
//! `HistoricalInformation`), is one error naming the file. An object held twice (a repeated
//! block, overlapping extracts concatenated) is read once and counted when both copies agree,
//! and refused naming it when they do not (`osm/duplicates.rs`).

mod duplicates;
pub mod network;

use duplicates::Kind;

pub use network::{Edge, Network, Restriction};

use super::{Coords, EdgeList};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use tuccompi::{Error, Result};
use xxhash_rust::xxh3::Xxh3;

/// The travel mode: which ways count and which tags bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Motor vehicles.
    #[default]
    Car,
    /// Bicycles.
    Bike,
    /// Pedestrians.
    Foot,
}

/// What an arc's weight measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Weight {
    /// Great-circle length along the way's geometry, in decimetres.
    #[default]
    Distance,
    /// Travel time at the way's speed, in deciseconds.
    Time,
}

/// Where a point (`run.sources`, `apsp.targets` as `[lon, lat]`) lands on the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SnapTo {
    /// The nearest point of the nearest road segment, made a phantom vertex that splits its
    /// edge (OSRM's phantom nodes).
    #[default]
    Edge,
    /// The nearest vertex of the graph.
    Vertex,
}

/// `[input.osm]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OsmOptions {
    /// Travel mode ("car").
    #[serde(default)]
    pub profile: Profile,
    /// Arc weights ("distance").
    #[serde(default)]
    pub weight: Weight,
    /// Where points snap ("edge").
    #[serde(default)]
    pub snap: SnapTo,
    /// Whether turn-restriction relations bind (car only; `None`: on for car).
    #[serde(default)]
    pub turn_restrictions: Option<bool>,
    /// Write the network as `edges.csv` beside `vertices.csv`.
    #[serde(default)]
    pub export: bool,
}

impl OsmOptions {
    /// Whether turn restrictions apply: the key's value, else on for the car profile. Asked
    /// for another profile, an error naming the key.
    pub fn turns(&self) -> Result<bool> {
        match (self.turn_restrictions, self.profile) {
            (Some(true), Profile::Bike | Profile::Foot) => Err(Error::Config(
                "input.osm.turn_restrictions = true applies to profile = \"car\" (restriction \
                 relations bind motor vehicles); remove it or set profile = \"car\""
                    .into(),
            )),
            (Some(on), _) => Ok(on),
            (None, p) => Ok(p == Profile::Car),
        }
    }
}

/// What the reader kept and what it skipped, for report.json.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OsmStats {
    /// The profile and weight used.
    pub profile: Profile,
    /// The weight used.
    pub weight: Weight,
    /// Nodes in the file (each id once).
    pub nodes: u64,
    /// Ways in the file (each id once).
    pub ways: u64,
    /// Nodes held a second time with the same content (a repeated block, overlapping
    /// extracts concatenated), read once.
    pub nodes_duplicate: u64,
    /// Ways held a second time with the same content, read once.
    pub ways_duplicate: u64,
    /// Relations held a second time with the same content, read once.
    pub relations_duplicate: u64,
    /// Ways routable for the profile and kept.
    pub ways_used: u64,
    /// Ways skipped because no two consecutive nodes of theirs are in the file (usual at an
    /// extract's border).
    pub ways_missing_node: u64,
    /// Ways cut by the extract's border that keep their parts present (runs of two or more
    /// consecutive nodes the file holds).
    pub ways_clipped: u64,
    /// Ways skipped because a node they name has impossible coordinates (latitude beyond ±90,
    /// longitude beyond ±180, or not a finite number): corrupt data.
    pub ways_bad_coordinates: u64,
    /// Ways skipped because a tag's key or value is not UTF-8 text.
    pub ways_bad_tag: u64,
    /// Ways skipped because a tag's key or value index points outside the block's string table
    /// (corrupt data).
    pub ways_bad_string_index: u64,
    /// Ways skipped because their `oneway` value allows neither direction (`reversible`,
    /// `alternating`, an unknown word).
    pub ways_bad_oneway: u64,
    /// Ways whose delta-coded node ids overflow (a corrupt file).
    pub ways_bad_refs: u64,
    /// Ways with fewer than two nodes.
    pub ways_degenerate: u64,
    /// Kept ways whose `maxspeed` could not be read (the class's default speed was used).
    pub maxspeed_unread: u64,
    /// Relations in the file that are not turn restrictions the profile honours.
    pub relations_unused: u64,
    /// Turn-restriction relations (`no_*`, `only_*`; from-way, via-node, to-way) applied.
    pub restrictions_applied: u64,
    /// Turn-restriction relations with a via way: not supported, skipped.
    pub restrictions_via_way: u64,
    /// Turn-restriction relations skipped because they lack a from, via or to member, have an
    /// unknown value, or name ways and nodes the graph does not join (outside the extract, not
    /// routable for the profile).
    pub restrictions_unusable: u64,
    /// Vertices added by the turn expansion (a departure copy and one copy per set of allowed
    /// turns at each restricted via vertex; `vertices.csv`'s `turn` rows).
    pub turn_vertices: u64,
    /// Phantom vertices added where points snapped onto an edge (`vertices.csv`'s `phantom`
    /// rows).
    pub phantom_vertices: u64,
    /// Arcs whose rounded weight was below 1 and was raised to 1.
    pub arcs_raised_to_1: u64,
}

/// Mean Earth radius (IUGG), metres: great-circle distances use a sphere of this radius.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// Great-circle distance in metres between two `(lon, lat)` points in degrees (haversine).
pub fn haversine_m(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (lon1, lat1) = (a[0].to_radians(), a[1].to_radians());
    let (lon2, lat2) = (b[0].to_radians(), b[1].to_radians());
    let h = ((lat2 - lat1) / 2.0).sin().powi(2)
        + lat1.cos() * lat2.cos() * ((lon2 - lon1) / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_M * h.sqrt().min(1.0).asin()
}

/// How a profile treats one `highway=*` class: whether it may use it without an explicit
/// access tag, and the default speed in km/h.
fn class(profile: Profile, highway: &str) -> Option<(bool, f64)> {
    use Profile::*;
    let car = |s: f64| Some((true, s));
    match (profile, highway) {
        (Car, "motorway") => car(110.0),
        (Car, "trunk") => car(90.0),
        (Car, "primary") => car(70.0),
        (Car, "secondary") => car(60.0),
        (Car, "tertiary") => car(50.0),
        (Car, "motorway_link") => car(60.0),
        (Car, "trunk_link") => car(50.0),
        (Car, "primary_link" | "secondary_link" | "tertiary_link") => car(40.0),
        (Car, "unclassified") => car(40.0),
        (Car, "residential") => car(30.0),
        (Car, "living_street") => car(10.0),
        (Car, "service") => car(15.0),
        (Car, "track") => Some((false, 15.0)),
        (Bike, "cycleway") => Some((true, 18.0)),
        (
            Bike,
            "primary" | "primary_link" | "secondary" | "secondary_link" | "tertiary"
            | "tertiary_link" | "unclassified" | "residential" | "living_street" | "service"
            | "track" | "path" | "road",
        ) => Some((true, 15.0)),
        (Bike, "trunk" | "trunk_link" | "footway" | "pedestrian" | "bridleway") => {
            Some((false, 10.0))
        }
        (
            Foot,
            "footway" | "pedestrian" | "path" | "steps" | "track" | "living_street" | "residential"
            | "service" | "unclassified" | "tertiary" | "tertiary_link" | "secondary"
            | "secondary_link" | "primary" | "primary_link" | "cycleway" | "bridleway" | "road",
        ) => Some((true, 5.0)),
        (Foot, "trunk" | "trunk_link") => Some((false, 5.0)),
        _ => None,
    }
}

/// The access keys of a profile, most specific first: the first one present decides.
fn access_keys(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::Car => &["motorcar", "motor_vehicle", "vehicle", "access"],
        Profile::Bike => &["bicycle", "vehicle", "access"],
        Profile::Foot => &["foot", "access"],
    }
}

/// Whether an access value forbids the mode.
fn denies(value: &str) -> bool {
    matches!(
        value,
        "no" | "private"
            | "agricultural"
            | "forestry"
            | "emergency"
            | "military"
            | "delivery"
            | "use_sidepath"
    )
}

/// Whether an access value explicitly allows the mode (needed on classes that are not open by
/// default, e.g. `highway=footway` with `bicycle=yes`).
fn allows(value: &str) -> bool {
    matches!(
        value,
        "yes" | "designated" | "permissive" | "destination" | "customers"
    )
}

/// Directions a way may be travelled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Both,
    Forward,
    Backward,
}

/// `maxspeed` in km/h: `50`, `30 mph`, `50 km/h`, `50;30` (the first). `None` for values
/// without a number (`signals`, `none`, `FI:urban`).
pub fn parse_maxspeed(v: &str) -> Option<f64> {
    let v = v.split(';').next()?.trim();
    let (num, factor) = if let Some(n) = v.strip_suffix("mph") {
        (n.trim(), 1.609_344)
    } else if let Some(n) = v.strip_suffix("km/h").or_else(|| v.strip_suffix("kmh")) {
        (n.trim(), 1.0)
    } else {
        (v, 1.0)
    };
    let s: f64 = num.parse().ok()?;
    (s.is_finite() && s > 0.0 && s <= 400.0).then_some(s * factor)
}

/// A way's tags as the profile reads them: `None` when it is not routable for the profile,
/// else its directions and speed (km/h), and whether `maxspeed` was present but unreadable.
enum Verdict {
    Skip,
    BadOneway,
    Use {
        dir: Dir,
        kmh: f64,
        maxspeed_unread: bool,
    },
}

fn judge(profile: Profile, tags: &HashMap<&str, &str>) -> Verdict {
    let Some(highway) = tags.get("highway") else {
        return Verdict::Skip;
    };
    let Some((open, default_kmh)) = class(profile, highway) else {
        return Verdict::Skip;
    };
    if tags.get("area") == Some(&"yes") && profile != Profile::Foot {
        return Verdict::Skip;
    }
    match access_keys(profile).iter().find_map(|k| tags.get(k)) {
        Some(v) if denies(v) => return Verdict::Skip,
        Some(v) if !open && !allows(v) => return Verdict::Skip,
        None if !open => return Verdict::Skip,
        _ => {}
    }
    let mut maxspeed_unread = false;
    let kmh = match profile {
        Profile::Car => match tags.get("maxspeed") {
            Some(v) => parse_maxspeed(v).unwrap_or_else(|| {
                maxspeed_unread = true;
                default_kmh
            }),
            None => default_kmh,
        },
        // Cyclists and pedestrians go at their own pace, never faster than the limit.
        _ => tags
            .get("maxspeed")
            .and_then(|v| parse_maxspeed(v))
            .map_or(default_kmh, |m| m.min(default_kmh)),
    };
    let implied = matches!(*highway, "motorway")
        || matches!(tags.get("junction"), Some(&"roundabout" | &"circular"));
    let oneway_key = match profile {
        Profile::Car => "oneway",
        Profile::Bike => "oneway:bicycle",
        Profile::Foot => "oneway:foot",
    };
    let raw = match profile {
        Profile::Car => tags.get("oneway").copied(),
        Profile::Bike => tags.get(oneway_key).or_else(|| tags.get("oneway")).copied(),
        // Pedestrians walk both ways unless a foot-specific oneway says otherwise.
        Profile::Foot => tags.get(oneway_key).copied(),
    };
    let dir = match raw {
        Some("yes" | "true" | "1") => Dir::Forward,
        Some("-1" | "reverse") => Dir::Backward,
        Some("no" | "false" | "0") => Dir::Both,
        Some(_) => return Verdict::BadOneway,
        None if implied && profile != Profile::Foot => Dir::Forward,
        None => Dir::Both,
    };
    Verdict::Use {
        dir,
        kmh,
        maxspeed_unread,
    }
}

/// A routable way as pass 1 keeps it.
struct KeptWay {
    id: i64,
    refs: Vec<i64>,
    dir: Dir,
    kmh: f64,
}

/// A turn-restriction relation as pass 1 reads it, or why it cannot be used.
enum RestrictionRead {
    Use(Vec<Restriction>),
    ViaWay,
    Unusable,
    NotForProfile,
}

/// A relation's tags and members as a car's turn restriction: `type=restriction`, the value of
/// `restriction:motorcar` (else `restriction`), no `except` naming motor cars; each from-way and
/// to-way member pair with the via node.
fn read_restriction(r: &osmpbf::Relation<'_>) -> RestrictionRead {
    let table = r.raw_stringtable();
    let mut tags = HashMap::new();
    for (k, v) in r.raw_tags() {
        let (Some(k), Some(v)) = (table.get(k as usize), table.get(v as usize)) else {
            return RestrictionRead::Unusable;
        };
        if let (Ok(k), Ok(v)) = (std::str::from_utf8(k), std::str::from_utf8(v)) {
            tags.insert(k, v);
        }
    }
    if tags.get("type") != Some(&"restriction") {
        return RestrictionRead::NotForProfile;
    }
    if tags.get("except").is_some_and(|e| {
        e.split(';')
            .any(|x| matches!(x.trim(), "motorcar" | "motor_vehicle"))
    }) {
        return RestrictionRead::NotForProfile;
    }
    let Some(value) = tags
        .get("restriction:motorcar")
        .or_else(|| tags.get("restriction"))
    else {
        // `restriction:hgv` and other vehicles' restrictions alone.
        return RestrictionRead::NotForProfile;
    };
    let only = if value.starts_with("only_") {
        true
    } else if value.starts_with("no_") {
        false
    } else {
        return RestrictionRead::Unusable;
    };
    let (mut from, mut to, mut via_node, mut via_way) = (Vec::new(), Vec::new(), None, false);
    for m in r.members() {
        use osmpbf::RelMemberType::*;
        match (m.role(), &m.member_type) {
            (Ok("from"), Way) => from.push(m.member_id),
            (Ok("to"), Way) => to.push(m.member_id),
            (Ok("via"), Node) if via_node.is_none() => via_node = Some(m.member_id),
            (Ok("via"), Way) => via_way = true,
            (Ok("via"), _) => return RestrictionRead::Unusable,
            _ => {}
        }
    }
    if via_way {
        return RestrictionRead::ViaWay;
    }
    let Some(via) = via_node else {
        return RestrictionRead::Unusable;
    };
    if from.is_empty() || to.is_empty() {
        return RestrictionRead::Unusable;
    }
    let relation = r.id();
    RestrictionRead::Use(
        from.iter()
            .flat_map(|&f| {
                to.iter().map(move |&t| Restriction {
                    relation,
                    from: f,
                    via,
                    to: t,
                    only,
                })
            })
            .collect(),
    )
}

/// Pass 1's reading of one way (its id seen for the first time): kept in `ways` with its
/// nodes in `used` when routable for `profile`, else counted in `stats` by why not.
fn read_way(
    w: &osmpbf::Way<'_>,
    profile: Profile,
    stats: &mut OsmStats,
    ways: &mut Vec<KeptWay>,
    used: &mut std::collections::HashSet<i64>,
) {
    stats.ways += 1;
    let table = w.raw_stringtable();
    let mut tags = HashMap::new();
    for (k, v) in w.raw_tags() {
        let (Some(k), Some(v)) = (table.get(k as usize), table.get(v as usize)) else {
            stats.ways_bad_string_index += 1;
            return;
        };
        match (std::str::from_utf8(k), std::str::from_utf8(v)) {
            (Ok(k), Ok(v)) => {
                tags.insert(k, v);
            }
            _ => {
                stats.ways_bad_tag += 1;
                return;
            }
        }
    }
    let (dir, kmh) = match judge(profile, &tags) {
        Verdict::Skip => return,
        Verdict::BadOneway => {
            stats.ways_bad_oneway += 1;
            return;
        }
        Verdict::Use {
            dir,
            kmh,
            maxspeed_unread,
        } => {
            stats.maxspeed_unread += maxspeed_unread as u64;
            (dir, kmh)
        }
    };
    // Delta-coded: summed here with checks, as a corrupt file can overflow them.
    let mut id = 0i64;
    let mut refs = Vec::with_capacity(w.raw_refs().len());
    for &d in w.raw_refs() {
        match id.checked_add(d) {
            Some(next) => id = next,
            None => {
                stats.ways_bad_refs += 1;
                return;
            }
        }
        refs.push(id);
    }
    if refs.len() < 2 {
        stats.ways_degenerate += 1;
        return;
    }
    used.extend(&refs);
    ways.push(KeptWay {
        id: w.id(),
        refs,
        dir,
        kmh,
    });
}

fn pbf_error(path: &Path, e: osmpbf::Error) -> Error {
    Error::Input(format!(
        "{}: not a readable OpenStreetMap PBF file ({e}); check that the file is complete \
         (a download cut short, a copy in progress) and is .osm.pbf, not .osm XML or .o5m",
        path.display()
    ))
}

/// The `required_features` of a PBF header this reader implements: the schema and dense nodes.
/// Anything else required changes what the blocks mean (`HistoricalInformation`: every version
/// of each object, deleted ones too), so a file that requires it is refused rather than misread.
const SUPPORTED_FEATURES: &[&str] = &["OsmSchema-V0.6", "DenseNodes"];

fn check_features(path: &Path, header: &osmpbf::HeaderBlock) -> Result<()> {
    let Some(feature) = header
        .required_features()
        .iter()
        .find(|f| !SUPPORTED_FEATURES.contains(&f.as_str()))
    else {
        return Ok(());
    };
    let why = if feature == "HistoricalInformation" {
        " (a history file: every version of each object, deleted ones too); use a current \
         extract, or make one with `osmium time-filter`"
    } else {
        "; use a plain .osm.pbf extract"
    };
    Err(Error::Input(format!(
        "{}: the file requires the PBF feature \"{}\", which tuccompi's reader does not \
         implement (it reads {}){why}",
        path.display(),
        feature.escape_debug(),
        SUPPORTED_FEATURES.join(" and ")
    )))
}

/// One pass over the file: `f` on each element of each data block, with the block's number
/// (data blocks counted from 0 in file order) and its string table, after each header block's
/// required features are checked. The first error `f` returns ends the pass.
fn each_element(
    path: &Path,
    mut f: impl for<'a> FnMut(usize, &'a [Vec<u8>], osmpbf::Element<'a>) -> Result<()>,
) -> Result<()> {
    let file = tuccompi::input::open(path, "input.path", "a graph file", None)?;
    let blobs = osmpbf::BlobReader::new(std::io::BufReader::with_capacity(1 << 20, file));
    guarded(path, || {
        let mut number = 0;
        for blob in blobs {
            let blob = blob.map_err(|e| pbf_error(path, e))?;
            match blob.decode().map_err(|e| pbf_error(path, e))? {
                osmpbf::BlobDecode::OsmHeader(h) => check_features(path, &h)?,
                osmpbf::BlobDecode::OsmData(block) => {
                    let table = block.raw_stringtable();
                    for el in block.elements() {
                        f(number, table, el)?;
                    }
                    number += 1;
                }
                // The format says readers skip blob types they do not know.
                osmpbf::BlobDecode::Unknown(_) => {}
            }
        }
        Ok(())
    })
}

/// Run one pass of the decoder. Its errors name the file; so does a panic inside it (the crate
/// sums delta-coded ids and coordinates unchecked, which a corrupt file can overflow where
/// overflow checks are on), which is caught here rather than ending the run.
fn guarded(path: &Path, pass: impl FnOnce() -> Result<()>) -> Result<()> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(pass)) {
        Ok(r) => r,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::Input(format!(
                "{}: not a readable OpenStreetMap PBF file (corrupt data: the decoder \
                 stopped: {why}); check that the file is complete and is .osm.pbf",
                path.display()
            )))
        }
    }
}

/// Read `path` as an OpenStreetMap PBF extract: the road graph for `opts` (turn restrictions
/// expanded when they apply, no points snapped), the road vertices' coordinates and OSM node
/// ids, and what was kept and skipped.
///
/// O(file size) time; memory O(nodes of routable ways).
pub fn read_osm(path: &Path, opts: OsmOptions) -> Result<(EdgeList, Coords, OsmStats)> {
    let mut net = read_network(path, opts)?;
    let list = net.graph(opts.turns()?);
    Ok((list, net.coords, net.stats))
}

/// Read `path` as an OpenStreetMap PBF extract: the road network for `opts` as edges with their
/// geometry and way ids, the vertices' coordinates and OSM node ids, the turn restrictions read,
/// and what was kept and skipped.
///
/// O(file size) time; memory O(nodes of routable ways).
pub fn read_network(path: &Path, opts: OsmOptions) -> Result<Network> {
    let turns = opts.turns()?;
    // Only a regular file, refused before anything is read otherwise: the two passes open it
    // twice, which a pipe cannot give.
    drop(tuccompi::input::open(
        path,
        "input.path",
        "a graph file",
        None,
    )?);
    let mut stats = OsmStats {
        profile: opts.profile,
        weight: opts.weight,
        ..OsmStats::default()
    };
    // Pass 1: the ways and the restriction relations, each id once ([`duplicates`]), and
    // where the node ids lie for pass 2's duplicate check.
    let WayPass {
        ways,
        restrictions,
        used,
        spans,
        ..
    } = WayPass::read(path, opts.profile, turns, &mut stats)?;
    // Pass 2: the coordinates of the nodes the kept ways use, each id once.
    let suspects = spans.suspects();
    let (at, off_globe) = read_nodes(path, &used, &suspects, &mut stats)?;
    drop((used, suspects));
    warn_duplicates(path, &stats);
    let (ways, first_off_globe) = clip_ways(ways, &at, &off_globe, &mut stats);
    stats.ways_used = ways
        .iter()
        .enumerate()
        .filter(|&(i, w)| i == 0 || ways[i - 1].id != w.id)
        .count() as u64;
    let corrupt = skipped(&stats, true);
    if !corrupt.is_empty() {
        let example = first_off_globe.map_or(String::new(), |(id, [lon, lat])| {
            format!("; node {id} is at longitude {lon}, latitude {lat}")
        });
        tracing::warn!(
            "{}: corrupt data skipped: {}{example} (counted in report.json's input.places.osm)",
            path.display(),
            corrupt.join(", ")
        );
    }
    let kept = vertex_ids(&ways);
    if kept.is_empty() {
        return Err(no_routable_way(path, opts.profile, &stats));
    }
    let index: HashMap<i64, u32> = kept
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as u32))
        .collect();
    let edges = edges_of(&ways, &at, &index, opts.weight, &mut stats);
    let coords = Coords {
        spherical: true,
        points: kept.iter().map(|id| Some(at[id])).collect(),
        osm_ids: Some(kept),
        source: path.display().to_string(),
    };
    Ok(Network::new(
        path.display().to_string(),
        edges,
        coords,
        restrictions,
        stats,
    ))
}

/// Pass 1: the ways and the restriction relations, each id once ([`duplicates`]), and
/// where the node ids lie for pass 2's duplicate check.
#[derive(Default)]
struct WayPass {
    ways: Vec<KeptWay>,
    restrictions: Vec<Restriction>,
    used: std::collections::HashSet<i64>,
    seen_ways: duplicates::Seen,
    seen_relations: duplicates::Seen,
    spans: duplicates::NodeSpans,
}

impl WayPass {
    /// Run pass 1 over `path`: the routable ways for `profile`, the turn restrictions (when
    /// `turns`), the nodes the ways use, counted in `stats`.
    fn read(path: &Path, profile: Profile, turns: bool, stats: &mut OsmStats) -> Result<WayPass> {
        let mut pass = WayPass::default();
        each_element(path, |block, table, el| {
            match el {
                osmpbf::Element::Node(n) => pass.spans.add(block, n.id()),
                osmpbf::Element::DenseNode(n) => pass.spans.add(block, n.id()),
                osmpbf::Element::Way(w) => pass.way(path, table, &w, profile, stats)?,
                osmpbf::Element::Relation(r) => pass.relation(path, table, &r, turns, stats)?,
            }
            Ok(())
        })?;
        Ok(pass)
    }

    /// One way: skipped when seen before with the same content (refused when the content
    /// differs), else read ([`read_way`]).
    fn way(
        &mut self,
        path: &Path,
        table: &[Vec<u8>],
        w: &osmpbf::Way<'_>,
        profile: Profile,
        stats: &mut OsmStats,
    ) -> Result<()> {
        let mut h = Xxh3::new();
        duplicates::tags(
            &mut h,
            table,
            w.raw_tags().map(|(k, v)| (k as i64, v as i64)),
        );
        for &d in w.raw_refs() {
            h.update(&d.to_le_bytes());
        }
        let version = w.info().version();
        let new = self.seen_ways.first_sighting(
            path,
            Kind::Way,
            w.id(),
            h.digest(),
            version,
            &mut stats.ways_duplicate,
            || {
                format!(
                    "has {} node refs and {} tags",
                    w.raw_refs().len(),
                    w.raw_tags().len()
                )
            },
        )?;
        if !new {
            return Ok(());
        }
        read_way(w, profile, stats, &mut self.ways, &mut self.used);
        Ok(())
    }

    /// One relation: skipped when seen before with the same content (refused when the content
    /// differs), else read as a turn restriction when `turns` ([`read_restriction`]) and
    /// counted by what it is.
    fn relation(
        &mut self,
        path: &Path,
        table: &[Vec<u8>],
        r: &osmpbf::Relation<'_>,
        turns: bool,
        stats: &mut OsmStats,
    ) -> Result<()> {
        let mut h = Xxh3::new();
        duplicates::tags(
            &mut h,
            table,
            r.raw_tags().map(|(k, v)| (k as i64, v as i64)),
        );
        let mut members = 0u64;
        for m in r.members() {
            h.update(&[m.member_type as u8]);
            h.update(&m.member_id.to_le_bytes());
            duplicates::string(&mut h, table, m.role_sid as i64);
            members += 1;
        }
        h.update(&members.to_le_bytes());
        let version = r.info().version();
        let new = self.seen_relations.first_sighting(
            path,
            Kind::Relation,
            r.id(),
            h.digest(),
            version,
            &mut stats.relations_duplicate,
            || format!("has {members} members and {} tags", r.raw_tags().len()),
        )?;
        if !new {
            return Ok(());
        }
        if !turns {
            stats.relations_unused += 1;
            return Ok(());
        }
        match read_restriction(r) {
            RestrictionRead::Use(r) => self.restrictions.extend(r),
            RestrictionRead::ViaWay => stats.restrictions_via_way += 1,
            RestrictionRead::Unusable => stats.restrictions_unusable += 1,
            RestrictionRead::NotForProfile => stats.relations_unused += 1,
        }
        Ok(())
    }
}

/// Where pass 2 puts each node the kept ways use: on the globe, or off it (corrupt data).
type NodePlaces = (HashMap<i64, [f64; 2]>, HashMap<i64, [f64; 2]>);

/// Pass 2: the coordinates of the nodes the kept ways use (`used`), each id once (the
/// `suspects`, ids that may be held twice, checked for duplicates), counted in `stats`.
fn read_nodes(
    path: &Path,
    used: &std::collections::HashSet<i64>,
    suspects: &duplicates::Suspects,
    stats: &mut OsmStats,
) -> Result<NodePlaces> {
    let mut seen_nodes = duplicates::Seen::default();
    let mut at: HashMap<i64, [f64; 2]> = HashMap::with_capacity(used.len());
    // Used nodes placed off the globe (corrupt data), kept apart from the missing ones.
    let mut off_globe: HashMap<i64, [f64; 2]> = HashMap::new();
    each_element(path, |_, table, el| {
        let (id, lon, lat) = match &el {
            osmpbf::Element::Node(n) => (n.id(), n.lon(), n.lat()),
            osmpbf::Element::DenseNode(n) => (n.id(), n.lon(), n.lat()),
            _ => return Ok(()),
        };
        if suspects.contains(id) {
            let (digest, version) = node_digest(table, &el);
            let new = seen_nodes.first_sighting(
                path,
                Kind::Node,
                id,
                digest,
                version,
                &mut stats.nodes_duplicate,
                || format!("is at longitude {lon:.7}, latitude {lat:.7} (or has other tags)"),
            )?;
            if !new {
                return Ok(());
            }
        }
        stats.nodes += 1;
        if !used.contains(&id) {
            return Ok(());
        }
        // The ranges are false for NaN too.
        if (-180.0..=180.0).contains(&lon) && (-90.0..=90.0).contains(&lat) {
            at.insert(id, [lon, lat]);
        } else {
            off_globe.insert(id, [lon, lat]);
        }
        Ok(())
    })?;
    Ok((at, off_globe))
}

/// A node's content hash for the duplicate check (its place and tags) and its version.
fn node_digest(table: &[Vec<u8>], el: &osmpbf::Element<'_>) -> (u64, Option<i32>) {
    let mut h = Xxh3::new();
    let version = match el {
        osmpbf::Element::Node(n) => {
            h.update(&n.nano_lat().to_le_bytes());
            h.update(&n.nano_lon().to_le_bytes());
            duplicates::tags(
                &mut h,
                table,
                n.raw_tags().map(|(k, v)| (k as i64, v as i64)),
            );
            n.info().version()
        }
        osmpbf::Element::DenseNode(n) => {
            h.update(&n.nano_lat().to_le_bytes());
            h.update(&n.nano_lon().to_le_bytes());
            duplicates::tags(
                &mut h,
                table,
                n.raw_tags().map(|(k, v)| (k as i64, v as i64)),
            );
            n.info().map(|i| i.version())
        }
        _ => None,
    };
    (h.digest(), version)
}

/// One warning when objects were held twice with the same content (each read once).
fn warn_duplicates(path: &Path, stats: &OsmStats) {
    let twice = stats.nodes_duplicate + stats.ways_duplicate + stats.relations_duplicate;
    if twice > 0 {
        tracing::warn!(
            "{}: {twice} objects are in the file a second time with the same content \
             ({} nodes, {} ways, {} relations: a repeated block, or overlapping extracts \
             concatenated); each was read once (counted in report.json's input.places.osm)",
            path.display(),
            stats.nodes_duplicate,
            stats.ways_duplicate,
            stats.relations_duplicate
        );
    }
}

/// The kept ways cut to the nodes the file places (`at`), counted in `stats`; with the first
/// node placed off the globe, for the warning.
fn clip_ways(
    ways: Vec<KeptWay>,
    at: &HashMap<i64, [f64; 2]>,
    off_globe: &HashMap<i64, [f64; 2]>,
    stats: &mut OsmStats,
) -> (Vec<KeptWay>, Option<(i64, [f64; 2])>) {
    // A way with a node placed off the globe is dropped whole (corrupt data); one cut by the
    // extract's border keeps each run of two or more consecutive nodes the file holds.
    let mut first_off_globe: Option<(i64, [f64; 2])> = None;
    let mut parts: Vec<KeptWay> = Vec::with_capacity(ways.len());
    for w in ways {
        if let Some((&id, &p)) = w.refs.iter().find_map(|r| off_globe.get_key_value(r)) {
            stats.ways_bad_coordinates += 1;
            first_off_globe = first_off_globe.or(Some((id, p)));
            continue;
        }
        if w.refs.iter().all(|r| at.contains_key(r)) {
            parts.push(w);
            continue;
        }
        let before = parts.len();
        for run in w.refs.split(|r| !at.contains_key(r)) {
            if run.len() >= 2 {
                parts.push(KeptWay {
                    id: w.id,
                    refs: run.to_vec(),
                    dir: w.dir,
                    kmh: w.kmh,
                });
            }
        }
        if parts.len() > before {
            stats.ways_clipped += 1;
        } else {
            stats.ways_missing_node += 1;
        }
    }
    (parts, first_off_globe)
}

/// The OSM ids of the graph's vertices, ascending: the nodes that end a way or that two ways
/// (or one twice) use.
fn vertex_ids(ways: &[KeptWay]) -> Vec<i64> {
    let mut uses: HashMap<i64, u32> = HashMap::new();
    for w in ways {
        let last = w.refs.len() - 1;
        for (i, &r) in w.refs.iter().enumerate() {
            // Ends count twice: they are vertices whatever else uses them.
            *uses.entry(r).or_insert(0) += if i == 0 || i == last { 2 } else { 1 };
        }
    }
    let mut kept: Vec<i64> = uses
        .iter()
        .filter(|&(_, &u)| u >= 2)
        .map(|(&id, _)| id)
        .collect();
    kept.sort_unstable();
    kept
}

/// The error for an extract with no way routable for `profile`, with what was skipped.
fn no_routable_way(path: &Path, profile: Profile, stats: &OsmStats) -> Error {
    let mut counts = vec![format!("{} ways", stats.ways)];
    counts.extend(skipped(stats, false));
    Error::Input(format!(
        "{}: no way is routable for profile \"{}\" ({}); check the profile ([input.osm] \
         profile = \"car\" | \"bike\" | \"foot\") and that the extract holds roads",
        path.display(),
        serde_json::to_value(profile)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        counts.join(", ")
    ))
}

/// The edges between consecutive vertices (`index`) along each way, weighted by `weight` over
/// the way's geometry (`at`); weights raised to 1 counted in `stats`.
fn edges_of(
    ways: &[KeptWay],
    at: &HashMap<i64, [f64; 2]>,
    index: &HashMap<i64, u32>,
    weight: Weight,
    stats: &mut OsmStats,
) -> Vec<Edge> {
    let mut edges = Vec::new();
    for w in ways {
        let mut from = index[&w.refs[0]];
        let mut metres = 0.0;
        let mut geometry = vec![at[&w.refs[0]]];
        for pair in w.refs.windows(2) {
            metres += haversine_m(at[&pair[0]], at[&pair[1]]);
            geometry.push(at[&pair[1]]);
            if let Some(&to) = index.get(&pair[1]) {
                let exact = match weight {
                    Weight::Distance => metres * 10.0,
                    // km/h -> m/ds: kmh / 36.
                    Weight::Time => metres / (w.kmh / 36.0),
                };
                let mut weight = exact.round() as i64;
                if weight < 1 {
                    weight = 1;
                    stats.arcs_raised_to_1 += 1;
                }
                edges.push(Edge {
                    tail: from,
                    head: to,
                    forward: w.dir != Dir::Backward,
                    backward: w.dir != Dir::Forward,
                    weight,
                    metres,
                    kmh: w.kmh,
                    way: w.id,
                    geometry: std::mem::replace(&mut geometry, vec![at[&pair[1]]]),
                });
                from = to;
                metres = 0.0;
            }
        }
    }
    edges
}

/// The non-zero skip counts of `stats` in words (`2 skipped for a missing node`); with
/// `corrupt_only`, only those that mean a damaged file.
fn skipped(stats: &OsmStats, corrupt_only: bool) -> Vec<String> {
    [
        (stats.ways_missing_node, "for a missing node", false),
        (
            stats.ways_bad_coordinates,
            "for a node with impossible coordinates",
            true,
        ),
        (stats.ways_bad_tag, "for a tag that is not UTF-8", false),
        (
            stats.ways_bad_string_index,
            "for a tag index outside the string table",
            true,
        ),
        (stats.ways_bad_refs, "for node ids that overflow", true),
        (stats.ways_bad_oneway, "for an unusable oneway value", false),
        (stats.ways_degenerate, "for fewer than two nodes", false),
    ]
    .into_iter()
    .filter(|&(n, _, corrupt)| n > 0 && (corrupt || !corrupt_only))
    .map(|(n, why, _)| format!("{n} way{} skipped {why}", if n == 1 { "" } else { "s" }))
    .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn haversine_matches_known_distances() {
        // One degree of latitude on the mean sphere: 2 pi R / 360.
        let d = haversine_m([24.9, 60.0], [24.9, 61.0]);
        assert!((d - 111_195.08).abs() < 0.1, "{d}");
        // Helsinki - Tallinn, about 82.9 km (spherical).
        let d = haversine_m([24.9384, 60.1699], [24.7536, 59.4370]);
        assert!((d - 82_335.0).abs() < 1_000.0, "{d}");
        assert_eq!(haversine_m([1.0, 2.0], [1.0, 2.0]), 0.0);
    }

    #[test]
    fn maxspeed_forms() {
        assert_eq!(parse_maxspeed("50"), Some(50.0));
        assert_eq!(parse_maxspeed("50 km/h"), Some(50.0));
        assert!((parse_maxspeed("30 mph").unwrap() - 48.28).abs() < 0.01);
        assert_eq!(parse_maxspeed("40;30"), Some(40.0));
        for bad in [
            "signals", "none", "FI:urban", "", "0", "-5", "NaN", "inf", "1e9",
        ] {
            assert_eq!(parse_maxspeed(bad), None, "{bad}");
        }
    }

    fn verdict(profile: Profile, tags: &[(&'static str, &'static str)]) -> Option<(Dir, f64)> {
        let tags: HashMap<&str, &str> = tags.iter().copied().collect();
        match judge(profile, &tags) {
            Verdict::Use { dir, kmh, .. } => Some((dir, kmh)),
            Verdict::Skip => None,
            Verdict::BadOneway => Some((Dir::Both, -1.0)),
        }
    }

    #[test]
    fn profiles_read_access_oneway_and_speed() {
        use Profile::*;
        let hw = ("highway", "residential");
        assert_eq!(verdict(Car, &[hw]), Some((Dir::Both, 30.0)));
        assert_eq!(
            verdict(Car, &[hw, ("maxspeed", "40")]),
            Some((Dir::Both, 40.0))
        );
        assert_eq!(
            verdict(Car, &[hw, ("oneway", "yes")]),
            Some((Dir::Forward, 30.0))
        );
        assert_eq!(
            verdict(Car, &[hw, ("oneway", "-1")]),
            Some((Dir::Backward, 30.0))
        );
        assert_eq!(
            verdict(Car, &[hw, ("oneway", "reversible")]),
            Some((Dir::Both, -1.0))
        );
        assert_eq!(verdict(Car, &[hw, ("access", "private")]), None);
        // The most specific key wins.
        assert!(verdict(Car, &[hw, ("access", "no"), ("motor_vehicle", "yes")]).is_some());
        assert_eq!(
            verdict(Car, &[hw, ("access", "yes"), ("motorcar", "no")]),
            None
        );
        assert_eq!(verdict(Car, &[("highway", "footway")]), None);
        assert_eq!(verdict(Car, &[("highway", "track")]), None);
        assert!(verdict(Car, &[("highway", "track"), ("motor_vehicle", "yes")]).is_some());
        assert_eq!(verdict(Car, &[("building", "yes")]), None);
        // Roundabouts and motorways are one way unless said otherwise.
        assert_eq!(
            verdict(Car, &[hw, ("junction", "roundabout")]).map(|v| v.0),
            Some(Dir::Forward)
        );
        assert_eq!(
            verdict(Car, &[("highway", "motorway")]),
            Some((Dir::Forward, 110.0))
        );
        // Pedestrians ignore oneway; cyclists honour it unless oneway:bicycle says no.
        assert_eq!(
            verdict(Foot, &[hw, ("oneway", "yes")]),
            Some((Dir::Both, 5.0))
        );
        assert_eq!(
            verdict(Bike, &[hw, ("oneway", "yes")]).map(|v| v.0),
            Some(Dir::Forward)
        );
        assert_eq!(
            verdict(Bike, &[hw, ("oneway", "yes"), ("oneway:bicycle", "no")]).map(|v| v.0),
            Some(Dir::Both)
        );
        assert_eq!(verdict(Bike, &[("highway", "footway")]), None);
        assert!(verdict(Bike, &[("highway", "footway"), ("bicycle", "yes")]).is_some());
        assert_eq!(verdict(Bike, &[("highway", "motorway")]), None);
        assert_eq!(verdict(Foot, &[("highway", "motorway")]), None);
        assert!(verdict(Foot, &[("highway", "steps")]).is_some());
        // A walking speed is not raised by a road's limit.
        assert_eq!(
            verdict(Foot, &[hw, ("maxspeed", "50")]),
            Some((Dir::Both, 5.0))
        );
    }
}
