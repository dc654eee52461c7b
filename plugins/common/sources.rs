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
            Sources::List(ids) => {
                const SHOWN: usize = 8;
                let head: Vec<String> = ids.iter().take(SHOWN).map(u64::to_string).collect();
                write!(f, "[{}", head.join(", "))?;
                if ids.len() > SHOWN {
                    write!(f, ", ... ({} ids)", ids.len())?;
                }
                write!(f, "]")
            }
            Sources::Points(p) => match p.as_slice() {
                [one] => write!(f, "[[{}, {}]]", one[0], one[1]),
                _ => write!(f, "{} points", p.len()),
            },
            Sources::File(p) => write!(f, "{{ file = {:?} }}", p.display().to_string()),
        }
    }
}


impl Sources {
    /// The sources of a run: the plugin's own `{table}.sources` when set, else `run.tasks`
    /// read as vertex ids (both set, other than `run.tasks = "all"`, is refused). An id
    /// listed twice is refused: it would run twice and write two summary rows.
    pub fn of_run(plan: &Plan, table: &str, own: Option<&Sources>) -> Result<Sources> {
        let key = format!("{table}.sources");
        let sources = match (own, &plan.tasks) {
            (Some(s), Tasks::All) => s.clone(),
            (Some(_), _) => {
                return Err(plan.origins.error(
                    "run.tasks",
                    format!(
                        "run.tasks and {key} are both set: {key} says which vertices start \
                         the trees; remove run.tasks"
                    ),
                ))
            }
            (None, Tasks::All) => Sources::All,
            (None, Tasks::First(k)) => Sources::First(*k),
            (None, Tasks::List(ids)) => Sources::List(ids.clone()),
            (None, Tasks::File(p)) => Sources::File(p.clone()),
        };
        if let Sources::List(ids) = &sources {
            let mut first_at = std::collections::HashMap::with_capacity(ids.len());
            for (i, &id) in ids.iter().enumerate() {
                if let Some(&j) = first_at.insert(id, i) {
                    let at = if own.is_some() { key.as_str() } else { "run.tasks" };
                    return Err(plan.origins.error(
                        at,
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
        Ok(sources)
    }
}
