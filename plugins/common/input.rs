//! `[input]`: the graph the built-in plugins read, parsed by the plugins (the framework's config
//! knows no input): a file (`input.path`, format from its extension, with `columns`,
//! `weight_scale`, `no_arc` for the formats they describe) or a generator (`[input.generate]`),
//! and for places `[input.osm]` (an OpenStreetMap extract's profile) or `input.coordinates`
//! (a DIMACS `.co` file). Every error names the key and where it was set.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use tuccompi::config::Plan;
use tuccompi::node::share::Share;
use tuccompi::{Error, Result};

/// Where the input comes from.
#[derive(Debug, Clone)]
pub enum InputSpec {
    /// A file; format from its extension.
    Path(PathBuf),
    /// A generated input: the `[input.generate]` table ([`super::generate_spec`]).
    Generate(toml::Table),
}

/// How an input file is read, beyond its extension.
#[derive(Debug, Clone, Default)]
pub struct InputOptions {
    /// `input.columns`: the header names of the tail, head and (optional) weight columns of a
    /// `.csv`/`.tsv` edge list (`None`: `source,target,weight`).
    pub columns: Option<Vec<String>>,
    /// `input.weight_scale`: weights are multiplied by this and rounded to integers (`.csv`,
    /// `.tsv` and `.npy` inputs).
    pub weight_scale: Option<f64>,
    /// `input.no_arc`: the value that marks a missing arc in a `.npy` matrix (besides inf and
    /// NaN in float matrices).
    pub no_arc: Option<NoArc>,
}

/// `input.no_arc`: the matrix value that means "no arc" in a dense `.npy` input, as written.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum NoArc {
    /// An integer.
    Int(i64),
    /// A float (compared after conversion of the element to f64).
    Float(f64),
}

impl TryFrom<toml::Value> for NoArc {
    type Error = String;
    fn try_from(v: toml::Value) -> std::result::Result<Self, String> {
        match v {
            toml::Value::Integer(i) => Ok(NoArc::Int(i)),
            toml::Value::Float(f) => Ok(NoArc::Float(f)),
            other => Err(format!(
                "expected the number that marks a missing arc in the matrix (such as 0 or \
                 -1; inf and nan always do in float matrices), found {other}"
            )),
        }
    }
}

/// Whether `path` names an OpenStreetMap PBF file (`.pbf`, as in `x.osm.pbf`).
pub fn is_osm(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pbf"))
}

/// The `[input]` table as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawInput {
    path: Option<PathBuf>,
    generate: Option<toml::Table>,
    osm: Option<toml::Table>,
    coordinates: Option<PathBuf>,
    columns: Option<Vec<String>>,
    weight_scale: Option<f64>,
    no_arc: Option<NoArc>,
}

/// `[input]`, checked, with its defaults.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// The graph (`None` when the config has no `[input]`).
    pub spec: Option<InputSpec>,
    /// `[input.osm]`, when given (only with an `.osm.pbf` `input.path`), read by
    /// [`super::osm_options`].
    pub osm: Option<toml::Table>,
    /// `input.coordinates`: a DIMACS `.co` file for `input.path`'s graph.
    pub coordinates: Option<PathBuf>,
    /// How the input file is read (`input.columns`, `input.weight_scale`, `input.no_arc`).
    pub options: InputOptions,
}

impl Input {
    /// The plan's `[input]`, checked: a bad key or value is an error naming `input.KEY` and
    /// where it was set.
    pub fn of(plan: &Plan) -> Result<Input> {
        let raw: RawInput = plan.options("input")?;
        let origins = &plan.origins;
        let spec = match (raw.path, raw.generate) {
            (Some(p), _) if p.as_os_str().is_empty() => {
                return Err(origins.error(
                    "input.path",
                    "input.path = \"\": name the graph file (input.path = \"graph.gr\") or \
                     generate one with an [input.generate] table",
                ))
            }
            (Some(p), None) => Some(InputSpec::Path(p)),
            (None, Some(g)) => Some(InputSpec::Generate(g)),
            // The input is a file or a generator: a `--set` of one replaces the other.
            (Some(p), Some(g)) => match origins.last_set(&["input.path", "input.generate"]) {
                Some(0) => Some(InputSpec::Path(p)),
                Some(_) => Some(InputSpec::Generate(g)),
                None => {
                    return Err(origins.error(
                        "input",
                        "[input] has both 'path' and [input.generate]; keep one",
                    ))
                }
            },
            // Plugins that read no graph need no [input].
            (None, None) => None,
        };
        let path = match &spec {
            Some(InputSpec::Path(p)) => Some(p.as_path()),
            _ => None,
        };
        check_places(path, raw.osm.is_some(), raw.coordinates.as_deref(), plan)?;
        let options = file_options(
            plan,
            path.is_some(),
            raw.columns,
            raw.weight_scale,
            raw.no_arc,
        )?;
        Ok(Input {
            spec,
            osm: raw.osm,
            coordinates: raw.coordinates,
            options,
        })
    }

    /// [`Input::of`] with its file readable on this rank: under MPI with several ranks, every
    /// rank reads rank 0's bytes of `input.path` ([`Share::rank_0_file`]: a private copy on the
    /// other ranks, for machines that do not share rank 0's file system). Every rank calls it
    /// once, in the same place of its prepare.
    pub fn on_this_rank(plan: &Plan, share: Option<&dyn Share>) -> Result<Input> {
        let mut input = Input::of(plan)?;
        if let (Some(share), Some(InputSpec::Path(p))) = (share, &input.spec) {
            let local = share
                .rank_0_file("input", p)
                .map_err(|e| name_path(plan, p, e))?;
            input.spec = Some(InputSpec::Path(local));
        }
        Ok(input)
    }

    /// The input file, if the input is one.
    pub fn path(&self) -> Option<&Path> {
        match &self.spec {
            Some(InputSpec::Path(p)) => Some(p),
            _ => None,
        }
    }

    /// What `tuccompi check` says of the input: the file, or the generator's table.
    pub fn describe(&self) -> Option<String> {
        match &self.spec {
            Some(InputSpec::Path(p)) => Some(p.display().to_string()),
            Some(InputSpec::Generate(g)) => {
                Some(format!("generated {}", toml::Value::Table(g.clone())))
            }
            None => None,
        }
    }
}

/// An error opening the input file `p` named by the key that names it.
pub fn name_path(plan: &Plan, p: &Path, e: Error) -> Error {
    match e {
        Error::Io { path, source } if path == *p => plan.origins.error(
            "input.path",
            format!(
                "input.path = \"{}\": {source}; check the path (relative paths start at the \
                 directory tuccompi runs in)",
                p.display()
            ),
        ),
        e => e,
    }
}

/// Check that the place keys fit the input: `[input.osm]` only with an `.osm.pbf`,
/// `coordinates` only with a graph file that is not one (OpenStreetMap has its own).
fn check_places(
    path: Option<&Path>,
    osm: bool,
    coordinates: Option<&Path>,
    plan: &Plan,
) -> Result<()> {
    let osm_input = path.is_some_and(is_osm);
    if osm && !osm_input {
        return Err(plan.origins.error(
            "input.osm",
            "[input.osm] applies to OpenStreetMap input (input.path = \"x.osm.pbf\"); remove \
             it or name a .osm.pbf file",
        ));
    }
    if let Some(c) = coordinates {
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
            return Err(plan.origins.error(
                "input.coordinates",
                format!("input.coordinates = {:?}: {why}", c.display().to_string()),
            ));
        }
    }
    Ok(())
}

/// `input.columns`, `input.weight_scale` and `input.no_arc`, checked: they describe a file, so
/// a generated input refuses them; which formats take which is checked by the reader
/// ([`super::check_input_options`]).
fn file_options(
    plan: &Plan,
    file: bool,
    columns: Option<Vec<String>>,
    weight_scale: Option<f64>,
    no_arc: Option<NoArc>,
) -> Result<InputOptions> {
    let origins = &plan.origins;
    let set: Vec<&str> = [
        columns.is_some().then_some("input.columns"),
        weight_scale.is_some().then_some("input.weight_scale"),
        no_arc.is_some().then_some("input.no_arc"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let (Some(key), false) = (set.first(), file) {
        return Err(origins.error(
            key,
            format!("{key} describes an input file, but there is no input.path; remove it"),
        ));
    }
    if let Some(c) = &columns {
        let key = "input.columns";
        if !(2..=3).contains(&c.len()) {
            return Err(origins.error(
                key,
                format!(
                    "{key} = {c:?}: name 3 columns (tail, head, weight), or 2 for an \
                     unweighted list (every weight 1), such as [\"from\", \"to\", \"length\"]"
                ),
            ));
        }
        if let Some(e) = c.iter().find(|x| x.trim().is_empty()) {
            return Err(origins.error(key, format!("{key}: column name {e:?} is empty")));
        }
        for (i, x) in c.iter().enumerate() {
            if c[..i].contains(x) {
                return Err(origins.error(
                    key,
                    format!("{key}: column \"{x}\" is named twice; name 3 different columns"),
                ));
            }
        }
    }
    if let Some(s) = weight_scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(origins.error(
                "input.weight_scale",
                format!(
                    "input.weight_scale = {s}: use a positive number; weights are multiplied \
                     by it and rounded to integers (1000 turns kilometres into metres)"
                ),
            ));
        }
    }
    if let Some(NoArc::Float(f)) = no_arc {
        if f.is_nan() {
            return Err(origins.error(
                "input.no_arc",
                "input.no_arc = nan: NaN always means no arc in a float matrix; remove the key",
            ));
        }
    }
    Ok(InputOptions {
        columns,
        weight_scale,
        no_arc,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    fn input(text: &str, sets: &[&str]) -> Result<Input> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let plan = Plan::from_toml(text, Path::new("c.toml"), &sets)?;
        Input::of(&plan)
    }

    const MIN: &str = "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr\"\n";

    #[test]
    fn a_file_input_is_read_from_its_table() {
        let i = input(MIN, &[]).unwrap();
        assert_eq!(i.path(), Some(Path::new("g.gr")));
        let i = input(MIN, &["input.path=x.mtx"]).unwrap();
        assert_eq!(i.path(), Some(Path::new("x.mtx")));
    }

    #[test]
    fn a_set_of_path_or_generator_replaces_the_other() {
        let gen = "[run]\nplugin = \"apsp\"\n[input.generate]\nmodel = \"road\"\n";
        let i = input(gen, &["input.path=x.gr"]).unwrap();
        assert_eq!(i.path(), Some(Path::new("x.gr")));
        let i = input(MIN, &["input.generate.model=grid"]).unwrap();
        assert!(
            matches!(i.spec, Some(InputSpec::Generate(ref g)) if g["model"].as_str() == Some("grid"))
        );
        // Both written in the file: refused with the table's line.
        let both = format!("{MIN}[input.generate]\nmodel = \"road\"\n");
        let e = input(&both, &[]).unwrap_err().to_string();
        assert!(e.contains("has both 'path' and [input.generate]"), "{e}");
    }

    #[test]
    fn empty_input_path_is_refused_with_its_key() {
        let e = input(MIN, &["input.path=\"\""]).unwrap_err().to_string();
        assert!(
            e.starts_with("--set input.path=\"\": input.path = \"\": name the graph file"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_input_key_is_named_with_its_line() {
        let e = input(&format!("{MIN}pth = 3\n"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:5: input.pth: unknown field"), "{e}");
    }

    #[test]
    fn place_and_file_keys_must_fit_the_input() {
        let e = input(MIN, &["input.osm.profile=car"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[input.osm] applies to OpenStreetMap input"),
            "{e}"
        );
        let e = input(MIN, &["input.path=x.osm.pbf", "input.coordinates=x.co"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("has its own coordinates"), "{e}");
        let gen = "[run]\nplugin = \"apsp\"\n[input.generate]\nmodel = \"road\"\n";
        let e = input(gen, &["input.weight_scale=2"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("there is no input.path"), "{e}");
        let e = input(MIN, &["input.columns=[\"a\", \"a\"]"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("named twice"), "{e}");
        let e = input(MIN, &["input.no_arc=nan"]).unwrap_err().to_string();
        assert!(e.contains("NaN always means no arc"), "{e}");
    }
}
