//! The documents against the code. Every config key that the runtime and the built-in plugins
//! accept appears in the user guide's configuration reference: the keys are not listed here
//! but read from the code, through serde's own refusal of an unknown key (`unknown field
//! `x`, expected one of `a`, `b``), which names every field of the table's type; a field that
//! refuses an unknown key inside it is a table of its own and is walked too. And each headline
//! figure of BENCHMARKS.md is stated once: not twice there, and not again in the README or the
//! guides (they point to it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tuccompi::Plan;
use tuccompi_plugins::common::input::{Input, InputSpec};
use tuccompi_plugins::common::sources::{split_options, RENAMED_KEYS};
use tuccompi_plugins::{apsp::ApspOptions, fw::FwOptions};

/// A key no table has: serde's message for it lists the table's fields.
const PROBE: &str = "zz_docs_probe";

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The fields serde lists after refusing [`PROBE`], or `None` when `message` is another error.
fn fields_in(message: &str) -> Option<Vec<String>> {
    let head = format!("unknown field `{PROBE}`");
    let at = message.find(&head)?;
    let line = message[at + head.len()..].lines().next().unwrap_or("");
    // ", expected `a`", ", expected `a` or `b`", ", expected one of `a`, `b`, ...", or
    // ", there are no fields": the names are the backquoted words.
    Some(
        line.split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect(),
    )
}

/// A probe: the error text (empty when none) of a config whose table `table` holds `body`.
type Probe<'a> = &'a dyn Fn(&str, &str) -> String;

/// Every key of `table` (dotted from the file's top), nested tables walked.
fn walk(table: &str, probe: Probe<'_>, keys: &mut BTreeSet<String>) {
    let message = probe(table, &format!("{PROBE} = 1"));
    let fields = fields_in(&message).unwrap_or_else(|| {
        panic!("[{table}] did not refuse the unknown key {PROBE}; it said: {message:?}")
    });
    assert!(!fields.is_empty(), "[{table}] has no fields: {message}");
    for f in fields {
        let key = format!("{table}.{f}");
        if fields_in(&probe(table, &format!("{f} = {{ {PROBE} = 1 }}"))).is_some() {
            walk(&key, probe, keys);
        } else {
            keys.insert(key);
        }
    }
}

fn error_text<T>(r: tuccompi::Result<T>) -> String {
    r.err().map(|e| e.to_string()).unwrap_or_default()
}

/// `[table]` holding `body` beside `[run] plugin = "PLUGIN"`, as a plan.
fn plan(plugin: &str, table: &str, body: &str) -> tuccompi::Result<Plan> {
    let text = if table == "run" {
        format!("[run]\nplugin = \"{plugin}\"\n{body}\n")
    } else {
        format!("[run]\nplugin = \"{plugin}\"\n[{table}]\n{body}\n")
    };
    Plan::from_toml(&text, Path::new("probe.toml"), &[])
}

/// The runtime's tables, as the runtime names them when it refuses a table it does not know.
fn core_tables() -> Vec<String> {
    let p = plan("apsp", PROBE, "x = 1").expect("a plugin table parses");
    let registry = tuccompi_plugins::registry();
    let message = error_text(tuccompi::runtime::resolve_plugin(&p, &registry));
    let list = message
        .split_once("known tables are ")
        .and_then(|(_, rest)| rest.split_once(" and plugin tables"))
        .unwrap_or_else(|| panic!("an unknown table's message changed: {message:?}"))
        .0;
    let tables: Vec<String> = list
        .split(['[', ']', ' '])
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    assert!(tables.len() >= 2, "{message}");
    tables
}

/// Every key the runtime's tables and the built-in plugins' tables accept.
fn accepted_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    // `[run]` and `[output]` keys the framework does not know are refused once the plugin has
    // claimed its own (`Plan::with_renamed_keys`); none claimed here.
    let core = |table: &str, body: &str| {
        error_text(plan("apsp", table, body).and_then(|p| p.with_renamed_keys(&[])))
    };
    for t in core_tables() {
        walk(&t, &core, &mut keys);
    }
    // `[input]` is the graph plugins' (`common::input::Input::of`), and so are its tables
    // `[input.generate]` and `[input.osm]` (`common::generate_spec`, `common::osm_options`).
    let input = |table: &str, body: &str| -> String {
        // `[input.osm]` goes with an OpenStreetMap input (the file need not exist to parse).
        let parsed = match table {
            "input.osm" => Plan::from_toml(
                &format!(
                    "[run]\nplugin = \"apsp\"\n[input]\npath = \"x.osm.pbf\"\n[input.osm]\n{body}\n"
                ),
                Path::new("probe.toml"),
                &[],
            ),
            _ => plan("apsp", table, body),
        };
        let Ok(plan) = parsed else {
            return error_text(parsed);
        };
        match (table, Input::of(&plan)) {
            (_, Err(e)) => e.to_string(),
            (
                "input.generate",
                Ok(Input {
                    spec: Some(InputSpec::Generate(t)),
                    ..
                }),
            ) => error_text(tuccompi_plugins::common::generate_spec(&plan, &t)),
            ("input.osm", Ok(input)) => {
                error_text(tuccompi_plugins::common::osm_options(&plan, &input))
            }
            ("input", Ok(_)) => String::new(),
            _ => format!("[{table}] is not read by the graph plugins"),
        }
    };
    walk("input", &input, &mut keys);
    for t in ["input.generate", "input.osm"] {
        keys.remove(t);
        walk(t, &input, &mut keys);
    }
    for p in tuccompi_plugins::registry() {
        let name = p.name();
        // The plugin's options type, as its `prepare` reads it (`ctx.options::<T>(name)`).
        let options = |table: &str, body: &str| -> String {
            match plan(name, table, body) {
                Err(e) => e.to_string(),
                Ok(plan) => match name {
                    "apsp" => error_text(split_options::<ApspOptions>(&plan, name)),
                    _ => error_text(split_options::<FwOptions>(&plan, name)),
                },
            }
        };
        // The keys every graph plugin reads beside its own (`common::sources::split_options`).
        keys.extend(RENAMED_KEYS.iter().map(|(_, k)| format!("{name}.{k}")));
        match name {
            "apsp" | "fw-naive" | "fw-blocked" | "rkleene" => walk(name, &options, &mut keys),
            // Takes no options of its own: its `prepare` refuses any other key.
            "dense-dijkstra" => {}
            other => panic!(
                "plugin {other}: tests/docs.rs does not know its options type; add it to \
                 accepted_keys so its keys are checked against the reference"
            ),
        }
    }
    keys
}

/// The user guide's configuration reference: its section, up to the next `## ` heading.
fn reference() -> String {
    let guide = read("docs/guide.md");
    let start = guide
        .find("\n## Configuration reference")
        .expect("docs/guide.md has a `## Configuration reference` section");
    let rest = &guide[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

/// The keys that `reference` does not name as `` `key` ``.
fn missing<'a>(reference: &str, keys: &'a BTreeSet<String>) -> Vec<&'a str> {
    keys.iter()
        .filter(|k| !reference.contains(&format!("`{k}`")))
        .map(String::as_str)
        .collect()
}

#[test]
fn every_config_key_is_in_the_reference() {
    let keys = accepted_keys();
    // The walk reached nested tables and the plugins' tables, not only the top.
    for sample in [
        "units.cpu_workers",
        "input.generate.seed",
        "input.weight_scale",
        "apsp.batch",
        "fw-blocked.tile",
    ] {
        assert!(keys.contains(sample), "{sample} not derived: {keys:?}");
    }
    let reference = reference();
    let absent = missing(&reference, &keys);
    assert!(
        absent.is_empty(),
        "keys the code accepts but docs/guide.md's configuration reference does not name \
         (write each as `table.key` in it): {absent:?}"
    );
    // The check itself can fail: a reference without one key's row names that key.
    let cut = reference.replace("`units.cpu_workers`", "units.cpu_workers");
    assert_eq!(missing(&cut, &keys), ["units.cpu_workers"]);
}

/// The bold spans of `text` that hold a digit: the headline figures.
fn headlines(text: &str) -> Vec<String> {
    text.split("**")
        .skip(1)
        .step_by(2)
        .filter(|s| s.chars().any(|c| c.is_ascii_digit()))
        .map(String::from)
        .collect()
}

/// The numbers of a headline that identify it: those with a decimal point or a thousands
/// separator ("1.99", "478,000"), trimmed of the punctuation around them.
fn figures(headline: &str) -> Vec<String> {
    headline
        .split(|c: char| c.is_whitespace() || "()[]/;:".contains(c))
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_digit()))
        .filter(|w| w.contains(['.', ',']) && w.chars().any(|c| c.is_ascii_digit()))
        .map(String::from)
        .collect()
}

/// Whether `text` holds `figure` as a number of its own (not inside a longer one).
fn holds(text: &str, figure: &str) -> bool {
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    // A digit next to it, or a separator with a digit beyond ("1.99" inside "21.99" or "1.995").
    let continues = |mut side: std::iter::Peekable<Box<dyn Iterator<Item = char> + '_>>| {
        let first = side.next();
        digit(first) || (matches!(first, Some('.' | ',')) && digit(side.peek().copied()))
    };
    text.match_indices(figure).any(|(i, _)| {
        let before: Box<dyn Iterator<Item = char>> = Box::new(text[..i].chars().rev());
        let after: Box<dyn Iterator<Item = char>> = Box::new(text[i + figure.len()..].chars());
        !continues(before.peekable()) && !continues(after.peekable())
    })
}

#[test]
fn each_headline_figure_is_stated_once() {
    let bench = read("BENCHMARKS.md");
    let heads = headlines(&bench);
    assert!(
        heads.len() >= 10,
        "BENCHMARKS.md has {} bold figures",
        heads.len()
    );
    let mut seen = BTreeSet::new();
    for h in &heads {
        assert!(
            seen.insert(h.as_str()),
            "BENCHMARKS.md states **{h}** twice"
        );
    }
    for doc in [
        "README.md",
        "docs/guide.md",
        "docs/plugins.md",
        "docs/roads.md",
    ] {
        let text = read(doc);
        for h in &heads {
            for f in figures(h) {
                assert!(
                    !holds(&text, &f),
                    "{doc} repeats BENCHMARKS.md's figure {f} (**{h}**): point to BENCHMARKS.md \
                     instead"
                );
            }
        }
    }
    // The check itself can fail: a README that quotes a headline is refused.
    let f = heads
        .iter()
        .flat_map(|h| figures(h))
        .next()
        .expect("a figure");
    assert!(holds(&format!("took {f} s"), &f));
    assert!(!holds(&format!("took 9{f} s"), &f));
}
