//! The labelled origin-destination output of a run with `[apsp] targets`: `od.npz` (numpy's
//! archive of `sources`, `targets`, `distances` and `unreachable`) and, with
//! `apsp.format = "csv"`, the long-format `od.csv`.
//!
//! The distance rows are written at their offsets as chunks finish, into `distances.npy` (with
//! `apsp.distances`) or into a hidden file of the staging folder (`.od-distances.npy`, never
//! committed), so an interrupted run resumes them like any bulk output. `od.npz` and `od.csv`
//! are assembled from that file when every task is done, in `finish`: a resumed run ends with
//! the same files as an uninterrupted one.

use super::ApspJob;
use crate::common::npz::{npy_scalar_max, npy_u64, write_npz, NpzEntry};
use crate::common::{RunKeys, TableFormat};
use std::io::Write;
use std::path::Path;
use tuccompi::sink::{NpyRows, NpyType, Out};
use tuccompi::{Error, Result};

/// The staging-folder name of the distance rows when `apsp.distances` is off: hidden, so the
/// commit leaves it behind (and removes it with the staging folder).
pub const HIDDEN_ROWS: &str = ".od-distances.npy";

/// The most source-target pairs `od.csv` takes (about 250 MB of text); larger matrices are
/// refused in `prepare`: numpy and pandas read `od.npz` faster than any text.
pub const MAX_CSV_PAIRS: u64 = 10_000_000;

/// The rows file of a run: `distances.npy` when asked for, else (with targets) the hidden
/// file `od.npz` is made from; `None` without either.
pub fn rows(
    plan: &tuccompi::config::Plan,
    keys: &RunKeys,
    targets: Option<&[u32]>,
    sources: usize,
    cols: usize,
    ty: NpyType,
) -> Result<Option<NpyRows>> {
    if keys.format == TableFormat::Csv {
        let Some(ts) = targets else {
            return Err(plan.origins.error(
                "apsp.format",
                "apsp.format = \"csv\" writes od.csv, the long-format table of an \
                 origin-destination run: set [apsp] targets, or remove apsp.format (summary.csv \
                 is always written)",
            ));
        };
        let pairs = sources as u64 * ts.len() as u64;
        if pairs > MAX_CSV_PAIRS {
            return Err(plan.origins.error(
                "apsp.format",
                format!(
                    "apsp.format = \"csv\": {sources} sources x {} targets = {pairs} pairs, \
                     more than od.csv takes ({MAX_CSV_PAIRS}); read od.npz instead \
                     (numpy.load), or ask for fewer sources or targets",
                    ts.len()
                ),
            ));
        }
    }
    let name = match (keys.distances, targets) {
        (true, _) => "distances.npy",
        (false, Some(_)) => HIDDEN_ROWS,
        (false, None) => return Ok(None),
    };
    NpyRows::new(name, sources, cols, ty).map(Some)
}

/// Bytes `od.npz` (and `od.csv`) add to the output: a copy of the rows, the labels, and at most
/// 32 bytes a pair of text.
pub fn finish_bytes(job: &ApspJob, csv: bool) -> u64 {
    finish_bytes_of(
        job.sources.len(),
        job.targets.as_deref(),
        job.rows.as_ref(),
        csv,
    )
}

/// [`finish_bytes`] of a run of `sources` sources to `targets` with rows file `rows`.
pub fn finish_bytes_of(
    sources: usize,
    targets: Option<&[u32]>,
    rows: Option<&NpyRows>,
    csv: bool,
) -> u64 {
    match (targets, rows) {
        (Some(ts), Some(rows)) => {
            let labels = 8 * (sources + ts.len()) as u64 + 4096;
            let text = if csv {
                32 * sources as u64 * ts.len() as u64
            } else {
                0
            };
            rows.bytes() + labels + text
        }
        _ => 0,
    }
}

/// Write `od.npz` (and `od.csv` when `csv`) into `dir` from the finished rows.
pub fn write(job: &ApspJob, out: &Out, csv: bool) -> Result<()> {
    let (Some(targets), Some(rows)) = (&job.targets, &job.rows) else {
        return Ok(());
    };
    let base = job.graph.id_base;
    let labels = crate::common::geo::source_labels(job.geo.geo.as_ref(), &job.sources);
    let source_ids: Vec<u64> = labels.iter().map(|&s| s as u64 + base).collect();
    let target_ids: Vec<u64> = targets.iter().map(|&t| t as u64 + base).collect();
    write_npz(
        out,
        "od.npz",
        &[
            NpzEntry::Bytes("sources", npy_u64(&source_ids)?),
            NpzEntry::Bytes("targets", npy_u64(&target_ids)?),
            NpzEntry::Rows("distances", rows),
            NpzEntry::Bytes("unreachable", npy_scalar_max(rows.ty())?),
        ],
    )?;
    if csv {
        write_csv(out, rows, &source_ids, &target_ids)?;
    }
    Ok(())
}

/// `od.csv`: `source,target,distance`, one line per pair in row order, the distance empty when
/// the target is unreachable.
fn write_csv(out: &Out, matrix: &NpyRows, sources: &[u64], targets: &[u64]) -> Result<()> {
    let (ty, name) = (matrix.ty(), Path::new(matrix.name()));
    let npy = npyz::NpyFile::new(std::io::BufReader::with_capacity(1 << 20, matrix.reader()?))
        .map_err(|e| Error::io(name, e))?;
    let rows = name;
    fn lines<T: npyz::Deserialize + Copy + PartialEq + std::fmt::Display>(
        npy: npyz::NpyFile<impl std::io::Read>,
        rows: &Path,
        unreachable: T,
        sources: &[u64],
        targets: &[u64],
        w: &mut impl Write,
    ) -> Result<()> {
        let mut data = npy
            .data::<T>()
            .map_err(|e| Error::Output(format!("{}: {e}", rows.display())))?;
        let out = |e| Error::Output(format!("od.csv: {e}"));
        writeln!(w, "source,target,distance").map_err(out)?;
        for s in sources {
            for t in targets {
                let d = data
                    .next()
                    .ok_or_else(|| Error::Output(format!("{}: cut short", rows.display())))?
                    .map_err(|e| Error::io(rows, e))?;
                if d == unreachable {
                    writeln!(w, "{s},{t},").map_err(out)?;
                } else {
                    writeln!(w, "{s},{t},{d}").map_err(out)?;
                }
            }
        }
        Ok(())
    }
    out.write_stream("od.csv", |w| match ty {
        NpyType::U32 => lines(npy, rows, u32::MAX, sources, targets, w),
        NpyType::U64 => lines(npy, rows, u64::MAX, sources, targets, w),
        NpyType::I64 => lines(npy, rows, i64::MAX, sources, targets, w),
        other => Err(tuccompi::Error::Output(format!(
            "od.csv: distances of type {} are not written as text",
            other.name()
        ))),
    })
}
