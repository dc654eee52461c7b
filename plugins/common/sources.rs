//! Which vertices a graph plugin starts from (`sources`) or reads distances to (`targets`):
//! the plugins' own keys (the framework's `run.tasks` knows task ids only, which a graph
//! plugin takes as vertex ids when its `sources` is not set).

use std::path::PathBuf;
use tuccompi::config::{Plan, Tasks};
use tuccompi::Result;

/// The sources of a graph plugin (`apsp.sources`, formerly `run.sources`) and its targets
/// (`apsp.targets`): which vertices.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum Sources {
    /// Every vertex.
    All,
    /// The first N vertex ids of the input's numbering.
    First(u64),
    /// These ids, in the input's numbering.
    List(Vec<u64>),
    /// These points (`[x, y]`: longitude and latitude for OpenStreetMap input, a `.co` file's
    /// units otherwise), each snapped to its nearest vertex.
    Points(Vec<[f64; 2]>),
    /// `{ file = "PATH" }`: ids or points in a file, which the plugin reads (the framework
    /// keeps the path; the built-ins read `.txt`, `.csv` and `.npy` id files).
    File(PathBuf),
}

impl TryFrom<toml::Value> for Sources {
    type Error = String;
    fn try_from(v: toml::Value) -> std::result::Result<Self, String> {
        const WANT: &str = "expected \"all\", a count N, a list of vertex ids, a list of \
                            [lon, lat] points or { file = \"PATH\" }";
        match v {
            toml::Value::String(s) if s == "all" => Ok(Sources::All),
            toml::Value::Integer(i) if i >= 0 => Ok(Sources::First(i as u64)),
            toml::Value::Table(t) => match (t.get("file"), t.len()) {
                (Some(toml::Value::String(f)), 1) if !f.is_empty() => {
                    Ok(Sources::File(PathBuf::from(f)))
                }
                _ => Err(format!(
                    "{WANT}; a table must be {{ file = \"PATH\" }} alone"
                )),
            },
            toml::Value::Array(a) if a.first().is_some_and(toml::Value::is_array) => a
                .into_iter()
                .enumerate()
                .map(|(i, x)| {
                    let num = |c: &toml::Value| match c {
                        toml::Value::Float(f) if f.is_finite() => Some(*f),
                        toml::Value::Integer(n) => Some(*n as f64),
                        _ => None,
                    };
                    match x {
                        toml::Value::Array(p) => match p.as_slice() {
                            [x, y] => match (num(x), num(y)) {
                                (Some(lon), Some(lat)) => Ok([lon, lat]),
                                _ => Err(format!(
                                    "{WANT}; point {} is not two finite numbers",
                                    i + 1
                                )),
                            },
                            _ => Err(format!(
                                "{WANT}; point {} is not two finite numbers ([lon, lat])",
                                i + 1
                            )),
                        },
                        other => Err(format!(
                            "{WANT}; entry {} ({other}) is not a [lon, lat] point (a list is \
                             all ids or all points)",
                            i + 1
                        )),
                    }
                })
                .collect::<std::result::Result<_, _>>()
                .map(Sources::Points),
            toml::Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    toml::Value::Integer(i) if i >= 0 => Ok(i as u64),
                    other => Err(format!("{WANT}; list entry {other} is not a vertex id")),
                })
                .collect::<std::result::Result<_, _>>()
                .map(Sources::List),
            other => Err(format!("{WANT}, found {other}")),
        }
    }
}

/// As the user would write it in words: `all`, `the first 64 ids`, `[1, 5, 9]` (long lists
/// shortened to their first ids and a count).
impl std::fmt::Display for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sources::All => write!(f, "all"),
            Sources::First(k) => write!(f, "the first {k} ids"),
            Sources::List(ids) => tuccompi::config::write_ids(f, ids),
            Sources::Points(p) => match p.as_slice() {
                [one] => write!(f, "[[{}, {}]]", one[0], one[1]),
                _ => write!(f, "{} points", p.len()),
            },
            Sources::File(p) => write!(f, "{{ file = {:?} }}", p.display().to_string()),
        }
    }
}

impl Sources {
    /// The sources of a run, and the key they were given as: the plugin's own
    /// `{table}.sources` when set, else `run.tasks` read as vertex ids. Both set (other than
    /// `run.tasks = "all"`): the later `--set` of the two wins over the file, as for one key;
    /// both in the file is refused. An id listed twice is refused: it would run twice and
    /// write two summary rows.
    pub fn of_run(plan: &Plan, table: &str, own: Option<&Sources>) -> Result<(Sources, String)> {
        let key = format!("{table}.sources");
        let tasks = match &plan.tasks {
            Tasks::All => None,
            Tasks::First(k) => Some(Sources::First(*k)),
            Tasks::List(ids) => Some(Sources::List(ids.clone())),
            Tasks::File(p) => Some(Sources::File(p.clone())),
        };
        let (sources, at) = match (own, tasks) {
            (Some(s), None) => (s.clone(), key),
            (None, None) => (Sources::All, key),
            (None, Some(t)) => (t, "run.tasks".to_string()),
            (Some(s), Some(t)) => match plan.origins.last_set(&["run.tasks", &key]) {
                Some(0) => (t, "run.tasks".to_string()),
                Some(_) => (s.clone(), key),
                None => {
                    return Err(plan.origins.error(
                        "run.tasks",
                        format!(
                            "run.tasks and {key} are both set: {key} says which vertices \
                             start the trees; remove run.tasks"
                        ),
                    ))
                }
            },
        };
        if let Sources::List(ids) = &sources {
            let mut first_at = std::collections::HashMap::with_capacity(ids.len());
            for (i, &id) in ids.iter().enumerate() {
                if let Some(j) = first_at.insert(id, i) {
                    return Err(plan.origins.error(
                        &at,
                        format!(
                            "{at} lists vertex id {id} twice (entries {} and {}); each id is \
                             one task with one summary row, so list it once",
                            j + 1,
                            i + 1
                        ),
                    ));
                }
            }
        }
        Ok((sources, at))
    }
}

/// The keys of a graph plugin's own table that its users once set in `[run]` and `[output]`,
/// as ([`Plugin::renamed_keys`](tuccompi::plugin::Plugin::renamed_keys)) declares them: a
/// config that still writes `run.sources = 64` runs as `apsp.sources = 64`, with a warning.
pub const RENAMED_KEYS: &[(&str, &str)] = &[
    ("run.sources", "sources"),
    ("output.distances", "distances"),
    ("output.format", "format"),
];

/// `format`: the tables a graph plugin writes besides `summary.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TableFormat {
    /// numpy files only (`distances.npy`, `od.npz`).
    #[default]
    Npy,
    /// Also text: with `apsp.targets`, a long-format `od.csv` beside `od.npz`.
    Csv,
}

#[derive(Debug, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRunKeys {
    sources: Option<Sources>,
    #[serde(default)]
    distances: bool,
    #[serde(default)]
    format: TableFormat,
}

/// What a graph plugin's table says about what it runs and writes, the same for every
/// built-in: `sources` (or `run.tasks`), `distances` (write `distances.npy`) and `format`.
#[derive(Debug, Clone)]
pub struct RunKeys {
    /// The sources, a file still unread ([`crate::common::ids::sources`] reads it).
    pub sources: Sources,
    /// The key they were given under, for messages: `apsp.sources`, or `run.tasks`.
    pub sources_key: String,
    /// Write the full distance matrix, `distances.npy`.
    pub distances: bool,
    /// Text tables beside the numpy files, or not.
    pub format: TableFormat,
}

/// The plugin table `table`'s options as `T` (a `deny_unknown_fields` struct without the run
/// keys) and its [`RunKeys`]: one table, read in two parts, each bad value named by its key.
pub fn split_options<T: serde::de::DeserializeOwned>(
    plan: &Plan,
    table: &str,
) -> Result<(T, RunKeys)> {
    let mut own = if table == plan.plugin {
        plan.plugin_options.clone()
    } else {
        plan.other_tables.get(table).cloned().unwrap_or_default()
    };
    let mut run = toml::Table::new();
    for (_, key) in RENAMED_KEYS {
        if let Some(v) = own.remove(*key) {
            run.insert(key.to_string(), v);
        }
    }
    let raw: RawRunKeys = plan.table(table, &run)?;
    let options: T = plan.table(table, &own)?;
    let (sources, sources_key) = Sources::of_run(plan, table, raw.sources.as_ref())?;
    Ok((
        options,
        RunKeys {
            sources,
            sources_key,
            distances: raw.distances,
            format: raw.format,
        },
    ))
}
