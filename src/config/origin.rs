//! Where each key's value came from, so that every message names the key and the place to
//! change it: a `--set` (`--set apsp.batch=0`), a line of the config file (`c.toml:7`), or the
//! file as a whole when the key is not written in it (a default).
//!
//! The line scanner reads TOML's line structure only (table headers, `key = value` lines,
//! continuation lines of multi-line values); it is used after the text parsed, so it never has
//! to judge whether the text is valid.

use crate::Error;
use std::path::{Path, PathBuf};

/// The origins of a plan's values.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    /// The config file (for messages).
    path: PathBuf,
    /// The file's text, as read (lines are counted in it).
    text: String,
    /// Each `--set KEY=VALUE` as (dotted key, the assignment as typed), in order.
    overrides: Vec<(String, String)>,
    /// How an override is introduced in messages (`--set`).
    label: &'static str,
    /// Keys set under a former name, as (key, former key) ([`Origins::alias`]).
    aliases: Vec<(String, String)>,
}

impl Origins {
    /// The origins of a file's text with `overrides` (`KEY=VALUE`) applied over it.
    pub fn new(path: &Path, text: &str, overrides: &[String]) -> Self {
        Origins {
            path: path.to_path_buf(),
            text: text.to_string(),
            overrides: overrides
                .iter()
                .map(|o| {
                    let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k.trim());
                    (key.to_string(), o.clone())
                })
                .collect(),
            label: "--set",
            aliases: Vec::new(),
        }
    }

    /// `key` was set as `former` (a plugin's key under its former name): messages about
    /// `key` name where `former` was set.
    pub fn alias(&mut self, former: &str, key: &str) {
        self.aliases.push((key.to_string(), former.to_string()));
    }

    /// The same, with overrides introduced as `label` (`entry` for `TUCCOMPI_UNITS`'s).
    pub fn labelled(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    /// Where `key` (dotted: `apsp.batch`) was set: `--set apsp.batch=0`, `c.toml:7`, or
    /// `c.toml` when the file does not write it. A `--set` of the key, of a table holding it,
    /// or of a key inside it (the table it completes) counts; the last such one wins, as it
    /// does when the overrides apply.
    pub fn of(&self, key: &str) -> String {
        let aliased = self.aliases.iter().find_map(|(k, former)| {
            let rest = key.strip_prefix(k.as_str())?;
            (rest.is_empty() || rest.starts_with('.')).then(|| format!("{former}{rest}"))
        });
        let key = aliased.as_deref().unwrap_or(key);
        let related = |k: &str| {
            k == key
                || key.strip_prefix(k).is_some_and(|r| r.starts_with('.'))
                || k.strip_prefix(key).is_some_and(|r| r.starts_with('.'))
        };
        if let Some((_, set)) = self.overrides.iter().rev().find(|(k, _)| related(k)) {
            return format!("{} {set}", self.label);
        }
        match key_line(&self.text, key) {
            Some(line) => format!("{}:{line}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// A config error about `key`: `{where}: {msg}` (the message itself names the key).
    pub fn error(&self, key: &str, msg: impl std::fmt::Display) -> Error {
        Error::Config(format!("{}: {msg}", self.of(key)))
    }

    /// `e` with the place its key was set in front, when it is a config error that starts with
    /// a key and its value (`run.tasks = 0, but ...`, `[apsp] batch = 0: ...`) as the checks
    /// after the plan (the plugins', the generator's, the tuner's) write them; other errors as
    /// they are.
    pub fn locate(&self, e: Error) -> Error {
        match e {
            Error::Config(msg) => match leading_key(&msg) {
                Some(key) => Error::Config(format!("{}: {msg}", self.of(&key))),
                None => Error::Config(msg),
            },
            e => e,
        }
    }

    /// The config file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The config file's text, as read (before any `--set`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Which of `keys` (dotted) the last `--set` among those naming one of them (or a key
    /// inside it) named, as its index in `keys`; `None` when no `--set` names any. For keys
    /// that exclude each other (a file or a generator): the later `--set` wins over the file.
    pub fn last_set(&self, keys: &[&str]) -> Option<usize> {
        self.overrides.iter().rev().find_map(|(k, _)| {
            keys.iter()
                .position(|key| k == key || k.strip_prefix(key).is_some_and(|r| r.starts_with('.')))
        })
    }
}

/// The dotted key each line of `text` sets or opens, 1-based by line: a header line gives its
/// table (`input.generate`), a `key = value` line its full key, a continuation line of a
/// multi-line value the key it continues, blank and comment lines the table they sit in.
fn line_keys(text: &str) -> Vec<String> {
    let mut table = String::new();
    let mut last = String::new();
    let mut depth = 0i32; // open brackets of a multi-line array or inline table
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if depth > 0 {
            depth += bracket_balance(t);
            out.push(last.clone());
            continue;
        }
        if t.starts_with('[') {
            let inner = t.trim_start_matches('[');
            let end = inner.find(']').unwrap_or(inner.len());
            table = normalize(&inner[..end]);
            last = table.clone();
        } else if let Some((k, v)) = split_key(t) {
            last = join(&table, &normalize(k));
            depth = bracket_balance(v).max(0);
        } else {
            last = table.clone();
        }
        out.push(last.clone());
    }
    out
}

/// `key = value` split at the first `=` outside quotes.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') => return None,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => return Some((&line[..i], &line[i + 1..])),
            _ => {}
        }
    }
    None
}

/// Opening minus closing brackets and braces outside strings and comments.
fn bracket_balance(s: &str) -> i32 {
    let (mut n, mut quote) = (0, None);
    for c in s.chars() {
        match (quote, c) {
            (None, '#') => break,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '[' | '{') => n += 1,
            (None, ']' | '}') => n -= 1,
            _ => {}
        }
    }
    n
}

/// `a . "b" ` as `a.b`.
fn normalize(key: &str) -> String {
    key.split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\''))
        .collect::<Vec<_>>()
        .join(".")
}

fn join(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    }
}

/// The 1-based line that sets `key`, or else the line of its closest enclosing key written in
/// the text (a key inside an inline table: the line of the table's key).
pub(super) fn key_line(text: &str, key: &str) -> Option<usize> {
    let keys = line_keys(text);
    let mut want = key;
    loop {
        // A header or `key =` line that sets exactly this key (the first line of a multi-line
        // value is the first line that names it).
        if let Some(i) = keys.iter().position(|k| k == want) {
            return Some(i + 1);
        }
        want = &want[..want.rfind('.')?];
    }
}

/// The 1-based line of byte `offset` of `text`, and the dotted key that line belongs to.
pub(super) fn key_at(text: &str, offset: usize) -> (usize, String) {
    let offset = offset.min(text.len());
    let line = text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    let key = line_keys(text).get(line).cloned().unwrap_or_default();
    (line + 1, key)
}

/// The dotted key a message starts with, written `a.b = ` or `[a] b = `.
fn leading_key(msg: &str) -> Option<String> {
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let (head, _) = msg.split_once(" = ")?;
    if let Some(rest) = head.strip_prefix('[') {
        let (table, key) = rest.split_once("] ")?;
        (word(table) && word(key)).then(|| format!("{table}.{key}"))
    } else {
        (word(head) && head.contains('.')).then(|| head.to_string())
    }
}
