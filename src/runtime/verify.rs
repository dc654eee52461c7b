//! `[verify] sample = N`: re-run N randomly chosen tasks that an accelerator ran on this node,
//! on the plugin's CPU half, and compare the records word for word, or, for the words the job
//! declares floating point ([`Job::tolerance`]), within its tolerance. The bulk rows the
//! re-runs write ([`Job::bulk_outputs`]) are kept in memory, never written over the device's
//! ([`NpyRows::capture`](crate::sink::NpyRows::capture)), and compared with the file's rows:
//! integers exactly, `f32`/`f64` elements within the same tolerance. A mismatch is an error
//! naming the task and the unit. A check never changes the outputs. Cost: N tasks on one CPU
//! thread, after the run, plus one read of their rows.
//!
//! `sample = "auto"` (the default) re-runs up to [`AUTO_TASKS`] of them, stopping once the
//! re-runs took 1% of the run's time (the first always runs), and none when the accelerators
//! ran fewer than [`AUTO_MIN_TASKS`] tasks (a job of one big task, such as Floyd-Warshall on
//! the whole matrix, would pay the whole run again on one thread).

use crate::config::FloatTolerances;
use crate::plugin::{Job, Records, RecordsOut, Tolerance};
use crate::thread::{Slice, Unit, UnitSpec};
use crate::{Error, Result};
use std::collections::BTreeSet;

/// Most tasks `"auto"` re-runs.
pub(super) const AUTO_TASKS: usize = 8;
/// `"auto"` checks nothing when the accelerators ran fewer tasks than this.
pub(super) const AUTO_MIN_TASKS: usize = 16;

/// How many tasks to re-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// This many (fewer if the accelerators ran fewer).
    Tasks(usize),
    /// Up to [`AUTO_TASKS`], stopping once the re-runs took this long.
    Auto(std::time::Duration),
}

/// What was verified on this node.
#[derive(Debug, Clone, Copy)]
pub(super) struct Verified {
    /// Tasks re-run and found equal.
    pub(super) checked: usize,
    /// Seed of the random choice (in the report, to repeat it).
    pub(super) seed: u64,
    /// Seconds the re-runs took (the cost of the check).
    pub(super) seconds: f64,
}

/// The `i`-th number of the stream `seed` (xxh3 of the counter: uniform enough to sample).
fn random(seed: u64, i: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(&i.to_le_bytes(), seed)
}

/// `k` distinct numbers of `0..n`, uniformly (Floyd's algorithm).
fn sample(n: usize, k: usize, seed: u64) -> BTreeSet<usize> {
    let mut chosen = BTreeSet::new();
    for (i, j) in (n - k.min(n)..n).enumerate() {
        let t = (random(seed, i as u64) % (j as u64 + 1)) as usize;
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen
}

/// Re-run up to `want` of the tasks the accelerator units of `units` ran (`slices`) on the CPU
/// half and compare them with `records`.
pub(super) fn verify(
    job: &dyn Job,
    units: &[Unit<'_>],
    slices: &[Slice],
    records: &Records,
    want: Want,
    tolerances: &FloatTolerances,
) -> Result<Verified> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let tolerance = job.details().tolerance.with_config(tolerances);
    verify_seeded(job, units, slices, records, want, &tolerance, seed)
}

/// The message of a task whose accelerator record `got` differs from the CPU half's `cpu`:
/// both records decoded as the job's fields, then the fields that differ.
fn mismatch(tolerance: &Tolerance, task: usize, got: &[u64], cpu: &[u64]) -> String {
    format!(
        "task {task}: its record {} differs from the CPU half's {} ({}){} ([verify] re-ran it \
         on the CPU); the unfinished run was discarded",
        tolerance.show(got),
        tolerance.show(cpu),
        tolerance.differing(got, cpu).join("; "),
        tolerance.describe()
    )
}

/// The message of a bulk row `row` (written by task `task`) whose bytes in the file, `got`,
/// differ from the CPU half's `cpu` beyond the tolerance: the first differing element.
fn row_mismatch(
    tolerance: &Tolerance,
    b: &crate::sink::NpyRows,
    task: usize,
    row: usize,
    got: &[u8],
    cpu: &[u8],
) -> Option<String> {
    use crate::sink::NpyType;
    let size = b.ty().size();
    let value = |v: &[u8]| -> (f64, String) {
        let mut w = [0u8; 8];
        w[..size].copy_from_slice(v);
        let bits = u64::from_le_bytes(w);
        match b.ty() {
            NpyType::F32 => {
                let x = f32::from_bits(bits as u32);
                (x as f64, x.to_string())
            }
            NpyType::F64 => {
                let x = f64::from_bits(bits);
                (x, x.to_string())
            }
            NpyType::I8 | NpyType::I16 | NpyType::I32 | NpyType::I64 => {
                let shift = 64 - 8 * size as u32;
                let x = ((bits << shift) as i64) >> shift;
                (x as f64, x.to_string())
            }
            _ => (bits as f64, bits.to_string()),
        }
    };
    if got.len() != cpu.len() {
        return Some(format!(
            "task {task}: the CPU half wrote {} bytes into row {row} of {}, the file's row has {}",
            cpu.len(),
            b.name(),
            got.len()
        ));
    }
    let within = match b.ty() {
        NpyType::F32 => Some(tolerance.f32),
        NpyType::F64 => Some(tolerance.f64),
        _ => None,
    };
    let (i, (g, c)) = got
        .chunks(size)
        .zip(cpu.chunks(size))
        .enumerate()
        .find(|(_, (g, c))| {
            g != c
                && within.is_none_or(|w| {
                    let (x, y) = (value(g).0, value(c).0);
                    !w.agree(x, y)
                })
        })?;
    Some(format!(
        "task {task}: row {row} of {} holds {} at column {i}, the CPU half's {} ({}) ([verify] \
         re-ran it on the CPU; the file was left as the device wrote it); the unfinished run was \
         discarded",
        b.name(),
        value(g).1,
        value(c).1,
        within.map_or("integers exactly".to_string(), |w| format!(
            "within {} absolute or {} relative",
            w.absolute, w.relative
        ))
    ))
}

fn verify_seeded(
    job: &dyn Job,
    units: &[Unit<'_>],
    slices: &[Slice],
    records: &Records,
    want: Want,
    tolerance: &Tolerance,
    seed: u64,
) -> Result<Verified> {
    let ran: Vec<&Slice> = slices
        .iter()
        .filter(|s| matches!(units[s.unit].spec, UnitSpec::Gpu { .. }))
        .collect();
    let total: usize = ran.iter().map(|s| s.tasks.len()).sum();
    let (count, budget) = match want {
        Want::Tasks(n) => (n, None),
        Want::Auto(_) if total < AUTO_MIN_TASKS => (0, None),
        Want::Auto(b) => (AUTO_TASKS, Some(b)),
    };
    let chosen = sample(total, count, seed);
    if chosen.is_empty() {
        return Ok(Verified {
            checked: 0,
            seed,
            seconds: 0.0,
        });
    }
    let start = std::time::Instant::now();
    if !job.details().cpu_half {
        return Err(Error::Config("[verify] needs a CPU half".into()));
    }
    let mut worker = job.cpu_worker()?;
    let words = job.record_words();
    let mut checked = 0;
    let mut buf = vec![0u64; words];
    // Walk the accelerator's slices in order, mapping the chosen indices to tasks.
    let (mut base, mut picks) = (0usize, chosen.iter().peekable());
    'slices: for s in ran {
        while let Some(&&i) = picks.peek() {
            if checked > 0 && budget.is_some_and(|b| start.elapsed() >= b) {
                break 'slices;
            }
            if i >= base + s.tasks.len() {
                break;
            }
            picks.next();
            let t = s.tasks.start + (i - base);
            buf.iter_mut().for_each(|w| *w = 0);
            let bulk = job.details().bulk;
            bulk.iter().for_each(|b| drop(b.capture(true)));
            let ran = worker.run(t..t + 1, &mut RecordsOut::new(t, words, &mut buf));
            let rows: Vec<_> = bulk.iter().map(|b| b.capture(false)).collect();
            ran?;
            checked += 1;
            let unit = || units[s.unit].name.clone();
            if !tolerance.same(&buf, records.get(t)) {
                return Err(Error::Unit {
                    unit: unit(),
                    msg: mismatch(tolerance, t, records.get(t), &buf),
                });
            }
            for (b, rows) in bulk.iter().zip(rows) {
                for (row, cpu) in rows {
                    let got = b.read_row(row)?;
                    if let Some(msg) = row_mismatch(tolerance, b, t, row, &got, &cpu) {
                        return Err(Error::Unit { unit: unit(), msg });
                    }
                }
            }
        }
        base += s.tasks.len();
    }
    Ok(Verified {
        checked,
        seed,
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::plugin::{Field, FieldType};

    #[test]
    fn tolerance_compares_float_words_relatively_and_the_rest_exactly() {
        let f = |x: f64| x.to_bits();
        let t = Tolerance::f64_words([1], 1e-9);
        assert!(t.same(&[7, f(1.0)], &[7, f(1.0 + 5e-10)]));
        assert!(!t.same(&[7, f(1.0)], &[7, f(1.0 + 5e-9)]));
        assert!(!t.same(&[8, f(1.0)], &[7, f(1.0)]), "word 0 is exact");
        assert!(t.same(&[7, f(f64::NAN)], &[7, f(-f64::NAN)]));
        assert!(!t.same(&[7, f(0.0)], &[7, f(1e-300)]));
        let exact = Tolerance::exact();
        assert!(!exact.same(&[f(1.0)], &[f(1.0 + 1e-15)]));
        assert_eq!(t.show(&[7, f(0.5)]), "{word0 = 7, word1 = 0.5}");
        assert_eq!(exact.show(&[7, 8]), "[7, 8]");
    }

    /// A record of an index and two f32 distances, as a float plugin declares it.
    fn knn_like() -> Tolerance {
        Tolerance {
            fields: vec![
                Field::new("nearest", FieldType::U32),
                Field::new("distance", FieldType::F32),
                Field::new("sum", FieldType::F64),
            ],
            ..Tolerance::default()
        }
    }

    #[test]
    fn f32_and_f64_fields_have_absolute_and_relative_tolerances() {
        let w = FieldType::f32_word;
        let d = f64::to_bits;
        let exact = knn_like();
        let a = [3, w(1.0), d(2.0)];
        assert!(exact.same(&a, &a));
        assert!(!exact.same(&a, &[3, w(1.0 + 1e-6), d(2.0)]));
        // f32 relative: 1e-6 apart passes at 1e-5, not at 1e-7; the f64 field stays exact.
        let rel = knn_like().f32(0.0, 1e-5);
        assert!(rel.same(&a, &[3, w(1.0 + 1e-6), d(2.0)]));
        assert!(!knn_like()
            .f32(0.0, 1e-7)
            .same(&a, &[3, w(1.0 + 1e-6), d(2.0)]));
        assert!(!rel.same(&a, &[3, w(1.0), d(2.0 + 1e-12)]));
        // f32 absolute: near zero a relative tolerance accepts nothing, an absolute one does.
        let z = [3, w(0.0), d(0.0)];
        assert!(!rel.same(&z, &[3, w(1e-9), d(0.0)]));
        assert!(knn_like().f32(1e-8, 0.0).same(&z, &[3, w(1e-9), d(0.0)]));
        // f64 both ways; the integer field is exact whatever the tolerances.
        let f64s = knn_like().f64(1e-3, 0.0);
        assert!(f64s.same(&a, &[3, w(1.0), d(2.0005)]));
        assert!(!f64s.same(&a, &[4, w(1.0), d(2.0)]));
        assert!(knn_like().f64(0.0, 1e-3).same(&a, &[3, w(1.0), d(2.001)]));
        // The config's keys replace the plugin's values, the unset ones keep them.
        let c = FloatTolerances {
            f32_relative: Some(0.0),
            f64_absolute: Some(1.0),
            ..FloatTolerances::default()
        };
        let t = knn_like().f32(1e-8, 1e-5).f64(0.0, 0.5).with_config(&c);
        assert_eq!((t.f32.absolute, t.f32.relative), (1e-8, 0.0));
        assert_eq!((t.f64.absolute, t.f64.relative), (1.0, 0.5));
    }

    #[test]
    fn a_mismatch_is_shown_as_the_records_fields() {
        let w = FieldType::f32_word;
        let t = knn_like().f32(0.0, 1e-6);
        let msg = mismatch(
            &t,
            5,
            &[3, w(1.5), 0.25f64.to_bits()],
            &[3, w(2.5), 0.25f64.to_bits()],
        );
        assert!(
            msg.contains("{nearest = 3, distance = 1.5, sum = 0.25}")
                && msg.contains("{nearest = 3, distance = 2.5, sum = 0.25}"),
            "{msg}"
        );
        assert!(msg.contains("(distance: 1.5 against 2.5)"), "{msg}");
        assert!(
            msg.contains("task 5") && msg.contains("f32 fields within"),
            "{msg}"
        );
        let neg = Tolerance {
            fields: vec![
                Field::new("offset", FieldType::I32),
                Field::new("total", FieldType::I64),
            ],
            ..Tolerance::default()
        };
        let msg = mismatch(&neg, 0, &[FieldType::i32_word(-2), (-7i64) as u64], &[0, 0]);
        assert!(msg.contains("{offset = -2, total = -7}"), "{msg}");
    }

    #[test]
    fn sample_is_distinct_uniform_and_capped() {
        for seed in 0..50 {
            let s = sample(10, 4, seed);
            assert_eq!(s.len(), 4);
            assert!(s.iter().all(|&x| x < 10));
        }
        assert_eq!(sample(3, 10, 7).len(), 3);
        assert!(sample(0, 5, 7).is_empty());
        // Every element gets picked about equally often.
        let mut hits = [0usize; 10];
        for seed in 0..5000 {
            for x in sample(10, 3, seed) {
                hits[x] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (1200..1800).contains(&h)), "{hits:?}");
    }
}
