//! Objects an `.osm.pbf` holds more than once: a data block repeated, or overlapping extracts
//! concatenated (`cat a.osm.pbf b.osm.pbf`). Read as they come, each way would be an edge twice
//! (a second copy of a restricted turn escaping its restriction) and each node a vertex twice.
//!
//! The same id of one kind (node, way, relation) with the same content (coordinates, tags,
//! node refs, members; the version aside) is read once and counted; with other content the file
//! is refused, naming the file, the object and the versions, as which copy is right cannot be
//! told. Content is compared by a 64-bit XXH3 of it.
//!
//! **Cost.** Ways and relations are checked in the first pass over the file, each kept as 24
//! bytes ([`Seen`]). Nodes are far more numerous, so that pass also records each data block's
//! node ids (least, greatest, ascending or not: [`NodeSpans`]), and the second pass checks
//! only the nodes whose ids two blocks share or whose block repeats or reorders ids
//! ([`Suspects`]): none in a well-formed extract, whose blocks hold ascending, disjoint runs
//! of ids. Any duplicate is among them: an id held twice is in the span of both its blocks.

use std::collections::HashMap;
use std::path::Path;
use tuccompi::Error;
use xxhash_rust::xxh3::Xxh3;

/// A kind of OpenStreetMap object; ids are unique within a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Node,
    Way,
    Relation,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Way => "way",
            Kind::Relation => "relation",
        }
    }
}

/// What [`Seen::check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sighting {
    /// The first time this id is seen.
    New,
    /// Seen before with the same content: skip it, count it.
    Again,
    /// Seen before with other content, and the version it had then.
    Conflict(Option<i32>),
}

/// The ids of one kind seen so far, each with a hash of its content and its version.
///
/// Files are sorted by id (osmium, the planet dumps), so ids arrive ascending: those are pushed
/// onto a sorted vector (no hashing, 24 bytes each); an id at or below the greatest so far is
/// searched there, and kept in a map when new. O(log n) per id out of order, O(1) otherwise.
#[derive(Debug, Default)]
pub(super) struct Seen {
    sorted: Vec<(i64, u64, Option<i32>)>,
    others: HashMap<i64, (u64, Option<i32>)>,
}

impl Seen {
    /// Record object `id` with content `hash`, `version`: whether it is new, again or in
    /// conflict with an earlier copy.
    pub(super) fn check(&mut self, id: i64, hash: u64, version: Option<i32>) -> Sighting {
        if self.sorted.last().is_none_or(|&(last, ..)| id > last) {
            self.sorted.push((id, hash, version));
            return Sighting::New;
        }
        let earlier = match self.sorted.binary_search_by_key(&id, |&(i, ..)| i) {
            Ok(k) => Some((self.sorted[k].1, self.sorted[k].2)),
            Err(_) => self.others.get(&id).copied(),
        };
        match earlier {
            None => {
                self.others.insert(id, (hash, version));
                Sighting::New
            }
            Some((h, _)) if h == hash => Sighting::Again,
            Some((_, v)) => Sighting::Conflict(v),
        }
    }

    /// [`Seen::check`] as the reader acts on it: `Ok(true)` for a new object, `Ok(false)` for
    /// a copy of one already read (counted in `duplicates`, to be skipped), and the
    /// [`conflict`] refusal for `kind` in `path` when the contents differ (`detail`, made only
    /// then, says what the second copy holds).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn first_sighting(
        &mut self,
        path: &Path,
        kind: Kind,
        id: i64,
        hash: u64,
        version: Option<i32>,
        duplicates: &mut u64,
        detail: impl FnOnce() -> String,
    ) -> tuccompi::Result<bool> {
        match self.check(id, hash, version) {
            Sighting::New => Ok(true),
            Sighting::Again => {
                *duplicates += 1;
                Ok(false)
            }
            Sighting::Conflict(before) => Err(conflict(path, kind, id, before, version, &detail())),
        }
    }
}

/// The refusal of a file holding `kind` `id` twice with different contents: `before` and `now`
/// their versions, `detail` what the second copy holds (`at longitude 24.9, latitude 60.1`).
pub(super) fn conflict(
    path: &Path,
    kind: Kind,
    id: i64,
    before: Option<i32>,
    now: Option<i32>,
    detail: &str,
) -> Error {
    let versions = match (before, now) {
        (Some(a), Some(b)) if a != b => {
            format!(" (versions {a} and {b}: extracts of different dates, it seems)")
        }
        (Some(a), Some(_)) => format!(" (both version {a}: the file is corrupt or was edited)"),
        _ => String::new(),
    };
    Error::Input(format!(
        "{}: {} {id} is in the file twice with different content{versions}; the second copy \
         {detail}. Which one is right cannot be told: use one extract, or extracts cut from \
         the same snapshot merged with `osmium merge` (which keeps each object once)",
        path.display(),
        kind.name()
    ))
}

/// Hash a string of a block's string table, by its index: the bytes (with their length), or
/// the index itself when it is outside the table (a corrupt file still compares exactly).
pub(super) fn string(h: &mut Xxh3, table: &[Vec<u8>], index: i64) {
    match usize::try_from(index).ok().and_then(|i| table.get(i)) {
        Some(s) => {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s);
        }
        None => {
            h.update(&u64::MAX.to_le_bytes());
            h.update(&index.to_le_bytes());
        }
    }
}

/// Hash key-value pairs of string-table indices.
pub(super) fn tags(h: &mut Xxh3, table: &[Vec<u8>], pairs: impl Iterator<Item = (i64, i64)>) {
    let mut n = 0u64;
    for (k, v) in pairs {
        string(h, table, k);
        string(h, table, v);
        n += 1;
    }
    h.update(&n.to_le_bytes());
}

/// The node ids of one data block: the least, the greatest, the last, and whether each id was
/// above the one before.
#[derive(Debug, Clone, Copy)]
struct Span {
    block: usize,
    lo: i64,
    hi: i64,
    last: i64,
    ascending: bool,
}

/// The node ids of each data block, recorded in the first pass ([`NodeSpans::add`]) for
/// [`Suspects`].
#[derive(Debug, Default)]
pub(super) struct NodeSpans(Vec<Span>);

impl NodeSpans {
    /// Node `id` is in data block `block` (blocks numbered in file order, each added in turn).
    pub(super) fn add(&mut self, block: usize, id: i64) {
        match self.0.last_mut() {
            Some(s) if s.block == block => {
                s.ascending &= id > s.last;
                s.last = id;
                s.lo = s.lo.min(id);
                s.hi = s.hi.max(id);
            }
            _ => self.0.push(Span {
                block,
                lo: id,
                hi: id,
                last: id,
                ascending: true,
            }),
        }
    }

    /// The ids a node held twice may have: those two blocks' spans share, and the whole span of
    /// a block whose ids do not ascend. O(b log b) for b blocks.
    pub(super) fn suspects(mut self) -> Suspects {
        let mut out: Vec<(i64, i64)> = self
            .0
            .iter()
            .filter(|s| !s.ascending)
            .map(|s| (s.lo, s.hi))
            .collect();
        self.0.sort_unstable_by_key(|s| s.lo);
        let mut reach: Option<i64> = None;
        for s in &self.0 {
            if let Some(r) = reach.filter(|&r| s.lo <= r) {
                out.push((s.lo, s.hi.min(r)));
            }
            reach = Some(reach.map_or(s.hi, |r| r.max(s.hi)));
        }
        out.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(out.len());
        for (lo, hi) in out {
            match merged.last_mut() {
                Some(m) if lo <= m.1 => m.1 = m.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        Suspects(merged)
    }
}

/// Disjoint, sorted ranges of node ids that may be held twice ([`NodeSpans::suspects`]).
#[derive(Debug, Default)]
pub(super) struct Suspects(Vec<(i64, i64)>);

impl Suspects {
    /// Whether `id` is in a range. O(log ranges); O(1) when there is none.
    pub(super) fn contains(&self, id: i64) -> bool {
        if self.0.is_empty() {
            return false;
        }
        let k = self.0.partition_point(|&(lo, _)| lo <= id);
        k > 0 && id <= self.0[k - 1].1
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn seen_tells_new_again_and_conflict_in_and_out_of_order() {
        let mut s = Seen::default();
        assert_eq!(s.check(5, 1, Some(1)), Sighting::New);
        assert_eq!(s.check(9, 2, None), Sighting::New);
        assert_eq!(s.check(5, 1, Some(2)), Sighting::Again, "the version aside");
        assert_eq!(s.check(7, 3, None), Sighting::New, "out of order, new");
        assert_eq!(s.check(7, 3, None), Sighting::Again);
        assert_eq!(s.check(7, 4, None), Sighting::Conflict(None));
        assert_eq!(s.check(5, 9, Some(3)), Sighting::Conflict(Some(1)));
        assert_eq!(s.check(9, 2, None), Sighting::Again);
        assert_eq!(s.check(10, 2, None), Sighting::New);
    }

    #[test]
    fn suspects_are_the_shared_and_unordered_spans() {
        let spans = |blocks: &[&[i64]]| {
            let mut n = NodeSpans::default();
            for (b, ids) in blocks.iter().enumerate() {
                for &id in *ids {
                    n.add(b, id);
                }
            }
            n.suspects()
        };
        // Disjoint ascending blocks: nothing to check.
        let s = spans(&[&[1, 2, 3], &[4, 8], &[10, 20]]);
        assert!(s.0.is_empty(), "{s:?}");
        // A block repeated: its span.
        let s = spans(&[&[1, 2, 3], &[4, 8], &[4, 8], &[10]]);
        assert_eq!(s.0, [(4, 8)]);
        // Overlapping extracts: the shared part; a block repeating an id: its whole span.
        let s = spans(&[&[1, 5, 9], &[7, 12], &[30, 30, 40]]);
        assert_eq!(s.0, [(7, 9), (30, 40)]);
        assert!(s.contains(7) && s.contains(9) && s.contains(35));
        assert!(!s.contains(6) && !s.contains(10) && !s.contains(41) && !s.contains(i64::MIN));
        // A later block covering an earlier one whole.
        let s = spans(&[&[3, 4], &[1, 10]]);
        assert_eq!(s.0, [(3, 4)]);
    }
}
