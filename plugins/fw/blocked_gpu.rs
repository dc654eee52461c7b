//! fw-blocked on one device: rounds of three phases (kernels/fw.cl, `fwb_*`) on a matrix padded
//! to whole blocks, with the transfers overlapped with the rounds.
//!
//! **Order.** The rounds run strip by strip rather than round by round. The block rows are cut
//! into `strips` strips. First (left-looking), strip s, once uploaded, gets rounds 0 ..
//! end(s) on its own rows (the rounds of its own block rows close them and their pivot row
//! panels); after the last strip this way, that strip is final and is read back. Then
//! (right-looking), strips s = S-2 down to 0 each get the remaining rounds end(s) .. nb, using
//! the pivot rows of the later strips, which are final, and are read back one by one. A round
//! on a strip needs the pivot block row at or after that round; values only decrease and stay
//! lengths of walks, so a pivot row that is further along gives the same result (every path
//! the standard order covers is still covered). With `strips = 1` this is the standard order.
//! The first strip's upload and the last strip's read-back are the only exposed transfers.
//!
//! **Threads.** This thread enqueues the launches on an in-order compute queue; a scoped
//! transfer thread uploads strip by strip on its own queue (announcing each strip), then reads
//! back each strip once its marker on the compute queue is reached.
//!
//! **Transfers** go through two page-locked staging buffers of 16 MiB: every core fills the
//! next piece into one while the other crosses the bus (pageable memory crosses at about 7
//! GB/s through NVIDIA's OpenCL). Up, a `.npy` input's rows are converted straight from the
//! mapped file into the buffer (no host copy of the matrix; prepare only scanned it); down,
//! each piece that holds a source's row is summarized and its rows written to
//! `distances.npy` from the buffer while the next piece comes over the bus (no host copy of
//! the result; `finish` only writes the summaries), and pieces without one are not read.
//!
//! Work: n³ updates (ld³ with padding); phase 1 does 1/nb² of it, phase 2 1/nb.

use super::tile::{tile_shape, TileShape};
use super::{FwJob, Val, KERNELS};
use crate::common::PathSummary;
use parking_lot::Mutex;
use std::ops::Range;
use std::time::Instant;
use tuccompi::device::Kernel;
use tuccompi::device::{Arg, DBuf, Device, KernelArg, Marker, Pinned, Queue};
use tuccompi::tuning::{characterizations, subset};
use tuccompi::{Error, Result};

/// The kernels of the blocked variant, phases 1 to 3.
pub(super) const PHASES: [&str; 3] = ["fwb_phase1", "fwb_phase2", "fwb_phase3"];

/// One step of the strip order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Wait until strip s is on the device.
    Arrive(usize),
    /// Round kb (pivot block row kb) on the block rows `rows`.
    Round { kb: usize, rows: Range<usize> },
    /// Strip s is final: read it back.
    Final(usize),
}

/// The strips (ranges of block rows) and the steps for `nb` block rows cut into `strips`.
pub(super) fn schedule(nb: usize, strips: usize) -> (Vec<Range<usize>>, Vec<Step>) {
    let s = strips.clamp(1, nb.max(1));
    let cut: Vec<Range<usize>> = (0..s).map(|i| i * nb / s..(i + 1) * nb / s).collect();
    let mut steps = Vec::new();
    for (i, r) in cut.iter().enumerate() {
        steps.push(Step::Arrive(i));
        for kb in 0..r.end {
            steps.push(Step::Round {
                kb,
                rows: r.clone(),
            });
        }
    }
    steps.push(Step::Final(s - 1));
    for i in (0..s - 1).rev() {
        for kb in cut[i].end..nb {
            steps.push(Step::Round {
                kb,
                rows: cut[i].clone(),
            });
        }
        steps.push(Step::Final(i));
    }
    (cut, steps)
}

impl FwJob {
    /// The tile shape on `device`: the config's values, else the tuner's (kernels/fw.toml).
    pub(super) fn tile_shape(&self, device: &Device) -> Result<TileShape> {
        let chars = subset(&characterizations(&KERNELS)?, &PHASES);
        tile_shape(&chars, &device.info, self.n, self.gpu_tile)
            .map_err(|m| Error::Config(format!("[fw-blocked] {m}")))
    }
}

/// Build options fixing the shape in kernels/fw.cl.
pub(super) fn build_options(t: &TileShape) -> String {
    format!(
        "-D FW_B={} -D FW_G={} -D FW_RM={} -D FW_RN={} -D FW_KC={} -D FW_R1={}",
        t.block.value,
        t.group.value,
        t.register_rows.value,
        t.register_cols.value,
        t.slab.value,
        t.closure_register.value
    )
}

/// Padded side: n rounded up to whole blocks.
pub(super) fn padded(n: usize, block: usize) -> usize {
    n.div_ceil(block).max(1) * block
}

/// Enqueue setting all of `m` to INF with `fw_fill` (the padding around the n x n matrix,
/// whose rows the strips then overwrite): a kernel, since NVIDIA's driver fails
/// clEnqueueFillBuffer on buffers of 2^31 elements and more, which `m` is from ld = 46,341.
fn pad(q: &Queue, fill: &Kernel, m: &DBuf<i32>, device: &Device) -> Result<()> {
    let local = 256.min(device.info.max_work_group.max(1));
    let items = m.len().div_ceil(local).clamp(1, 4096) * local;
    // SAFETY: fw_fill(m, len, v) writes m[0 .. len), m's length, and reads nothing.
    unsafe {
        super::gpu::launch(
            q,
            fill,
            items,
            Some(local),
            &[Arg::I32s(m), Arg::U64(m.len() as u64), Arg::I32(i32::INF)],
        )
    }
}

/// The three kernels and their local sizes, launched on the compute queue.
struct Launcher<'a> {
    q: &'a Queue,
    m: &'a DBuf<i32>,
    kernels: [Kernel; 3],
    locals: [usize; 3],
    ld: u32,
    /// Blocks a side.
    nb: usize,
    /// Group tiles a block side, and a matrix side.
    per: usize,
    ng: usize,
    /// Per launch, its phase and marker (profiled runs only).
    timed: Option<Vec<(usize, Marker)>>,
}

impl Launcher<'_> {
    fn launch(&mut self, phase: usize, groups: usize, args: &[Arg<'_>]) -> Result<()> {
        if groups == 0 {
            return Ok(());
        }
        let (k, l) = (&self.kernels[phase - 1], self.locals[phase - 1]);
        // SAFETY: `args` follow fwb_phase1/2/3's parameters in kernels/fw.cl (round calls this
        // with m, ld, kb, then ng, r0, col_groups as each declares); m is ld x ld, and the
        // group counts of `round` address only whole group tiles inside it; the local size is
        // the one the kernels were built for (reqd_work_group_size from the same shape).
        let refs: Vec<&dyn KernelArg> = args.iter().map(|a| a as &dyn KernelArg).collect();
        let marker = unsafe { self.q.launch_unchecked(k, groups * l, Some(l), &refs) }?;
        if let Some(t) = &mut self.timed {
            t.push((phase, marker));
        }
        Ok(())
    }

    /// Round kb on the block rows `rows` (see the module's doc and kernels/fw.cl).
    fn round(&mut self, kb: usize, rows: &Range<usize>) -> Result<()> {
        let (nb, per, ng, own) = (self.nb, self.per, self.ng, rows.contains(&kb));
        let (m, ld, kbu, ngu) = (
            Arg::I32s(self.m),
            Arg::U32(self.ld),
            Arg::U32(kb as u32),
            Arg::U32(ng as u32),
        );
        if own {
            self.launch(1, 1, &[m, ld, kbu])?;
        }
        if nb > 1 {
            if own {
                self.launch(2, per * (ng - per), &[m, ld, kbu, ngu])?;
            }
            // Group rows of the strip off block row kb; the first per of each row's groups
            // are block column kb's.
            let grows = (rows.len() - own as usize) * per;
            self.launch(
                3,
                grows * ng,
                &[
                    m,
                    ld,
                    kbu,
                    ngu,
                    Arg::U32((rows.start * per) as u32),
                    Arg::U32((grows * per) as u32),
                ],
            )?;
        }
        Ok(())
    }
}

/// Bytes of each of the two page-locked staging buffers.
const STAGE_BYTES: usize = 16 << 20;

/// The pieces of `rows`, `piece` rows each.
fn pieces(rows: Range<usize>, piece: usize) -> Vec<Range<usize>> {
    rows.clone()
        .step_by(piece)
        .map(|r| r..(r + piece).min(rows.end))
        .collect()
}

/// The entries of `by_row` ((row, source index), sorted) whose rows are in `rows`.
fn sources_in(by_row: &[(usize, usize)], rows: Range<usize>) -> &[(usize, usize)] {
    let at = |i: usize| by_row.partition_point(|x| x.0 < i);
    &by_row[at(rows.start)..at(rows.end)]
}

/// Host rows `rows` (of `n` columns) into a buffer, packed.
type Fill<'a> = dyn Fn(Range<usize>, &mut [i32]) -> Result<()> + Sync + 'a;
/// Takes rows `rows` (of `n` columns) read back, packed.
type Take<'a> = dyn Fn(Range<usize>, &[i32]) -> Result<()> + Sync + 'a;

/// Upload rows `rows` (of `n`) through the two staging buffers: while one piece goes over the
/// bus (this thread), `fill` puts the next into the other buffer (a helper thread, every core).
#[allow(clippy::too_many_arguments)]
fn staged_write(
    q: &Queue,
    m: &DBuf<i32>,
    ld: usize,
    n: usize,
    rows: Range<usize>,
    fill: &Fill<'_>,
    stage: &mut [Pinned<i32>; 2],
    piece: usize,
) -> Result<()> {
    let ps = pieces(rows, piece);
    let [mut cur, mut next] = stage.each_mut();
    if let Some(p) = ps.first() {
        fill(p.clone(), cur.as_mut_slice())?;
    }
    for (i, p) in ps.iter().enumerate() {
        let following = ps.get(i + 1).cloned();
        std::thread::scope(|sc| -> Result<()> {
            let next = &mut *next;
            let filled = sc.spawn(move || match following {
                Some(f) => fill(f, next.as_mut_slice()),
                None => Ok(()),
            });
            let sent = q.write_rows(m, ld, p.start, n, &cur.as_slice()[..p.len() * n]);
            joined(filled)?;
            sent
        })?;
        std::mem::swap(&mut cur, &mut next);
    }
    Ok(())
}

/// A helper thread's result (its panic goes on).
fn joined(h: std::thread::ScopedJoinHandle<'_, Result<()>>) -> Result<()> {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Read back device row pieces `ps` (of `n` columns) through the staging buffers, handing each
/// to `take` (a helper thread, every core) while the next comes over the bus.
fn staged_read(
    q: &Queue,
    m: &DBuf<i32>,
    ld: usize,
    n: usize,
    ps: &[Range<usize>],
    take: &Take<'_>,
    stage: &mut [Pinned<i32>; 2],
) -> Result<()> {
    let [mut cur, mut next] = stage.each_mut();
    if let Some(p) = ps.first() {
        q.read_rows(m, ld, p.start, n, &mut cur.as_mut_slice()[..p.len() * n])?;
    }
    for (i, p) in ps.iter().enumerate() {
        let following = ps.get(i + 1).cloned();
        std::thread::scope(|sc| -> Result<()> {
            let done = &cur.as_slice()[..p.len() * n];
            let taken = sc.spawn(move || take(p.clone(), done));
            let read = match following {
                Some(f) => q.read_rows(m, ld, f.start, n, &mut next.as_mut_slice()[..f.len() * n]),
                None => Ok(()),
            };
            joined(taken)?;
            read
        })?;
        std::mem::swap(&mut cur, &mut next);
    }
    Ok(())
}

/// Run fw-blocked for `job` on `device`: the input goes up strip by strip as it is read
/// ([`FwJob::input`]'s rows, converted into the staging buffers), and each source's row is
/// summarized (and written to `distances.npy` when asked) as its strip comes back, so no whole
/// matrix is held on the host. Returns the sources' summaries and where the time went
/// (seconds: `total`, `upload`, `readback`, and with `profile` each phase's device time).
pub(super) fn run(
    job: &FwJob,
    device: &Device,
    shape: &TileShape,
) -> Result<(Vec<PathSummary>, serde_json::Value)> {
    let t0 = Instant::now();
    let n = job.n;
    let b = shape.block.value;
    let ld = padded(n, b);
    let nb = ld / b;
    let opts = build_options(shape);
    let k = |name| device.kernel(&KERNELS, &opts, name);
    let qc = if job.profile {
        device.profiled_queue()?
    } else {
        device.queue()?
    };
    let qt = device.queue()?;
    let fill_k = k("fw_fill")?;
    let m = DBuf::<i32>::new(device, ld * ld)?;
    let mut launcher = Launcher {
        q: &qc,
        m: &m,
        kernels: [k(PHASES[0])?, k(PHASES[1])?, k(PHASES[2])?],
        locals: PHASES.map(|name| shape.local[name].value),
        ld: ld as u32,
        nb,
        per: b / shape.group.value,
        ng: ld / shape.group.value,
        timed: job.profile.then(Vec::new),
    };
    let (cut, steps) = schedule(nb, shape.strips.value);
    let piece_rows = (STAGE_BYTES / (4 * n)).clamp(1, n);
    let fill = |rows: Range<usize>, out: &mut [i32]| job.input.narrow_rows(n, rows, out);
    // The sources by row: a piece read back serves those whose rows it holds.
    let mut by_row: Vec<(usize, usize)> = (job.sources.iter().enumerate())
        .map(|(t, &s)| (s as usize, t))
        .collect();
    by_row.sort_unstable();
    let summaries = Mutex::new(vec![PathSummary::default(); job.sources.len()]);
    let take = |rows: Range<usize>, data: &[i32]| -> Result<()> {
        use rayon::prelude::*;
        if let Some(v) = rows.clone().find(|&i| data[(i - rows.start) * n + i] < 0) {
            return Err(job.cycle_error(v));
        }
        let done = (sources_in(&by_row, rows.clone()).par_iter())
            .map(|&(r, t)| Ok((t, job.row_out(t, &data[(r - rows.start) * n..][..n])?)))
            .collect::<Result<Vec<_>>>()?;
        let mut all = summaries.lock();
        for (t, s) in done {
            all[t] = s;
        }
        Ok(())
    };
    // Pieces without a source's row are not read back.
    let wanted = |rows: Range<usize>| -> Vec<Range<usize>> {
        pieces(rows, piece_rows)
            .into_iter()
            .filter(|p| !sources_in(&by_row, p.clone()).is_empty())
            .collect()
    };
    let (arrive_tx, arrive_rx) = crossbeam_channel::unbounded::<usize>();
    let (final_tx, final_rx) = crossbeam_channel::unbounded::<(usize, Marker)>();
    let mut first_arrival = 0.0;
    let rows_of = |r: &Range<usize>| (r.start * b).min(n)..(r.end * b).min(n);
    let (compute, transfers) = std::thread::scope(|sc| {
        let (cut, m, fill, take, wanted) = (&cut, &m, &fill, &take, &wanted);
        let transfers = sc.spawn(move || -> Result<[f64; 4]> {
            let t = Instant::now();
            let mut stage = [
                Pinned::<i32>::new(device, piece_rows * n)?,
                Pinned::<i32>::new(device, piece_rows * n)?,
            ];
            let pin = t.elapsed().as_secs_f64();
            let (mut up, mut down, mut last) = (0.0, 0.0, 0.0);
            if ld != n {
                pad(&qt, &fill_k, m, device)?;
            }
            for (s, r) in cut.iter().enumerate() {
                let t = Instant::now();
                staged_write(&qt, m, ld, n, rows_of(r), fill, &mut stage, piece_rows)?;
                up += t.elapsed().as_secs_f64();
                if arrive_tx.send(s).is_err() {
                    break;
                }
            }
            drop(arrive_tx);
            // Every value read came from the file the scan checked.
            job.input.unchanged()?;
            for (s, marker) in final_rx {
                marker.wait()?;
                let t = Instant::now();
                staged_read(&qt, m, ld, n, &wanted(rows_of(&cut[s])), take, &mut stage)?;
                last = t.elapsed().as_secs_f64();
                down += last;
            }
            Ok([pin, up, down, last])
        });
        let compute = (|| -> Result<()> {
            for step in &steps {
                match step {
                    Step::Arrive(s) => {
                        if arrive_rx.recv() != Ok(*s) {
                            return Ok(()); // the transfer thread failed: its error follows
                        }
                        if *s == 0 {
                            first_arrival = t0.elapsed().as_secs_f64();
                        }
                    }
                    Step::Round { kb, rows } => launcher.round(*kb, rows)?,
                    Step::Final(s) => {
                        if final_tx.send((*s, qc.marker()?)).is_err() {
                            return Ok(());
                        }
                    }
                }
            }
            Ok(())
        })();
        drop(final_tx);
        (compute, transfers.join())
    });
    let [pin, up, down, last] = match transfers {
        Ok(r) => r?,
        Err(p) => std::panic::resume_unwind(p),
    };
    compute?;
    qc.finish()?;
    let mut t = serde_json::json!({
        "total": t0.elapsed().as_secs_f64(),
        "pin": pin, "upload": up, "first_strip_uploaded_at": first_arrival,
        "readback": down, "last_readback": last,
        "padded_n": ld, "rounds": nb, "strips": cut.len(),
    });
    if let Some(timed) = &launcher.timed {
        let mut per = [0.0f64; 4];
        for (phase, mk) in timed {
            per[*phase] += mk.seconds()?;
        }
        t["kernels"] = serde_json::json!(per[1] + per[2] + per[3]);
        t["phase1"] = serde_json::json!(per[1]);
        t["phase2"] = serde_json::json!(per[2]);
        t["phase3"] = serde_json::json!(per[3]);
        t["launches"] = serde_json::json!(timed.len());
    }
    Ok((summaries.into_inner(), t))
}

#[cfg(test)]
mod test {
    use super::*;

    const INF: i64 = 1 << 50;

    /// `c = min(c, a ⊗ b)` on b × b tiles given by their block coordinates, reading every
    /// operand before writing (as one work-group does).
    fn product(
        m: &mut [i64],
        ld: usize,
        b: usize,
        c: (usize, usize),
        a: (usize, usize),
        bb: (usize, usize),
    ) {
        let at =
            |m: &[i64], t: (usize, usize), i: usize, j: usize| m[(t.0 * b + i) * ld + t.1 * b + j];
        let mut next = vec![0; b * b];
        for i in 0..b {
            for j in 0..b {
                let mut v = at(m, c, i, j);
                for k in 0..b {
                    v = v.min(at(m, a, i, k) + at(m, bb, k, j));
                }
                next[i * b + j] = v.min(INF);
            }
        }
        for i in 0..b {
            for j in 0..b {
                m[(c.0 * b + i) * ld + c.1 * b + j] = next[i * b + j];
            }
        }
    }

    /// The steps of `schedule` on the CPU, launch by launch as the kernels do them; phase 3
    /// takes block column kb from before its update (the GPU may read it before or after).
    fn simulate(m: &mut [i64], ld: usize, b: usize, steps: &[Step]) {
        let nb = ld / b;
        for step in steps {
            let Step::Round { kb, rows } = step else {
                continue;
            };
            let kb = *kb;
            if rows.contains(&kb) {
                let o = kb * b;
                for k in 0..b {
                    for i in 0..b {
                        for j in 0..b {
                            let v = m[(o + i) * ld + o + k] + m[(o + k) * ld + o + j];
                            let c = &mut m[(o + i) * ld + o + j];
                            *c = (*c).min(v).min(INF);
                        }
                    }
                }
                for j in (0..nb).filter(|&j| j != kb) {
                    product(m, ld, b, (kb, j), (kb, kb), (kb, j));
                }
            }
            let old = m.to_vec();
            for i in rows.clone().filter(|&i| i != kb) {
                product(m, ld, b, (i, kb), (i, kb), (kb, kb));
            }
            let mut stale = m.to_vec();
            for i in rows.clone().filter(|&i| i != kb) {
                for r in i * b..(i + 1) * b {
                    let cols = r * ld + kb * b..r * ld + (kb + 1) * b;
                    stale[cols.clone()].copy_from_slice(&old[cols]);
                }
                for j in (0..nb).filter(|&j| j != kb) {
                    product(&mut stale, ld, b, (i, j), (i, kb), (kb, j));
                    for r in i * b..(i + 1) * b {
                        let cols = r * ld + j * b..r * ld + (j + 1) * b;
                        m[cols.clone()].copy_from_slice(&stale[cols]);
                    }
                }
            }
        }
    }

    #[test]
    fn every_strip_order_matches_a_plain_triple_loop() {
        let mut x = 7u64;
        let mut rnd = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for &(n, b) in &[(1usize, 4usize), (13, 4), (37, 8), (64, 8)] {
            let ld = padded(n, b);
            // Negative arcs without negative cycles: w = base + p(j) - p(i).
            let pot: Vec<i64> = (0..n).map(|_| (rnd() % 9) as i64).collect();
            let mut m = vec![INF; ld * ld];
            for i in 0..ld {
                m[i * ld + i] = if i < n { 0 } else { INF };
            }
            for i in 0..n {
                for j in 0..n {
                    if i != j && rnd() % 100 < 25 {
                        m[i * ld + j] = (rnd() % 10) as i64 + 1 + pot[j] - pot[i];
                    }
                }
            }
            let mut want = m.clone();
            for k in 0..n {
                for i in 0..n {
                    for j in 0..n {
                        let v = want[i * ld + k] + want[k * ld + j];
                        if want[i * ld + k] < INF / 2
                            && want[k * ld + j] < INF / 2
                            && v < want[i * ld + j]
                        {
                            want[i * ld + j] = v;
                        }
                    }
                }
            }
            let real = |m: &[i64]| -> Vec<Option<i64>> {
                (0..n * n)
                    .map(|e| m[(e / n) * ld + e % n])
                    .map(|d| (d < INF / 2).then_some(d))
                    .collect()
            };
            for strips in [1, 2, 3, 5, 100] {
                let (cut, steps) = schedule(ld / b, strips);
                let mut got = m.clone();
                simulate(&mut got, ld, b, &steps);
                assert_eq!(real(&got), real(&want), "n {n} block {b} strips {strips}");
                // Every strip arrives once and is read back once, after all its rounds.
                for (s, strip) in cut.iter().enumerate() {
                    let fin = steps.iter().position(|x| *x == Step::Final(s)).unwrap();
                    let rounds = steps
                        .iter()
                        .filter(|x| matches!(x, Step::Round { rows, .. } if rows == strip))
                        .count();
                    assert_eq!(rounds, ld / b, "strip {s} gets every round once");
                    assert!(steps[fin..]
                        .iter()
                        .all(|x| !matches!(x, Step::Round { rows, .. } if rows == strip)));
                }
            }
        }
    }

    #[test]
    fn staged_transfers_round_trip_in_pieces() {
        let filter = tuccompi::device::Filter {
            device_type: "all".into(),
            names: vec![],
        };
        let dev = match tuccompi::device::discover(&filter) {
            Ok(mut d) => d.swap_remove(0),
            Err(e) => {
                assert!(
                    std::env::var_os("TUCCOMPI_REQUIRE_OPENCL").is_none(),
                    "TUCCOMPI_REQUIRE_OPENCL is set but OpenCL is unusable: {e}"
                );
                eprintln!("NOT RUN: OpenCL test skipped: {e}");
                return;
            }
        };
        // 11 rows of 7 in a padded 16 x 16 buffer, through 3-row pieces (4 of them, the last
        // short), both staging buffers taking turns.
        let (n, ld, piece) = (7, 16, 3);
        let q = dev.queue().unwrap();
        let m = DBuf::<i32>::new(&dev, ld * ld).unwrap();
        q.fill(&m, i32::INF).unwrap();
        let input: Vec<i32> = (0..11 * n as i32).map(|x| x * 3 - 50).collect();
        let mut stage = [
            Pinned::<i32>::new(&dev, piece * n).unwrap(),
            Pinned::<i32>::new(&dev, piece * n).unwrap(),
        ];
        let fill = |rows: Range<usize>, out: &mut [i32]| {
            out[..rows.len() * n].copy_from_slice(&input[rows.start * n..rows.end * n]);
            Ok(())
        };
        staged_write(&q, &m, ld, n, 0..11, &fill, &mut stage, piece).unwrap();
        // Rows 2..11 back in pieces, but for the piece 5..8, each handed over once.
        let back = Mutex::new(vec![-1; 11 * n]);
        let take = |rows: Range<usize>, data: &[i32]| {
            let mut b = back.lock();
            assert!(b[rows.start * n] == -1, "piece {rows:?} handed over twice");
            b[rows.start * n..rows.end * n].copy_from_slice(&data[..rows.len() * n]);
            Ok(())
        };
        staged_read(&q, &m, ld, n, &[2..5, 8..11], &take, &mut stage).unwrap();
        let back = back.into_inner();
        for i in 0..11 {
            let want = if (2..5).contains(&i) || (8..11).contains(&i) {
                &input[i * n..(i + 1) * n]
            } else {
                &[-1; 7][..]
            };
            assert_eq!(&back[i * n..(i + 1) * n], want, "row {i}");
        }
        // A failing fill or take is the transfer's error.
        let bad = |_: Range<usize>, _: &mut [i32]| Err(Error::Input("no rows".into()));
        assert!(staged_write(&q, &m, ld, n, 0..11, &bad, &mut stage, piece).is_err());
        let refuse = |_: Range<usize>, _: &[i32]| Err(Error::Input("refused".into()));
        assert!(staged_read(&q, &m, ld, n, &[2..5, 5..8], &refuse, &mut stage).is_err());
        let mut pad = vec![0; ld];
        q.read(&m, 11 * ld, &mut pad).unwrap();
        assert!(pad.iter().all(|&x| x == i32::INF), "row 11 is padding");
        assert_eq!(pieces(2..11, 3), vec![2..5, 5..8, 8..11]);
        assert_eq!(pieces(0..7, 3), vec![0..3, 3..6, 6..7]);
    }

    #[test]
    fn pieces_serve_the_sources_whose_rows_they_hold() {
        // Sources 0..5 at rows 7, 2, 7, 9, 3 (row 7 twice), sorted by row.
        let mut by_row: Vec<(usize, usize)> = [7, 2, 7, 9, 3]
            .iter()
            .enumerate()
            .map(|(t, &r)| (r, t))
            .collect();
        by_row.sort_unstable();
        assert_eq!(sources_in(&by_row, 0..2), &[]);
        assert_eq!(sources_in(&by_row, 2..4), &[(2, 1), (3, 4)]);
        assert_eq!(sources_in(&by_row, 4..7), &[]);
        assert_eq!(sources_in(&by_row, 7..8), &[(7, 0), (7, 2)]);
        assert_eq!(sources_in(&by_row, 8..10), &[(9, 3)]);
        assert_eq!(sources_in(&by_row, 10..12), &[]);
        // Every source in exactly one piece, whatever the piece size.
        for piece in 1..12 {
            let got: usize = pieces(0..10, piece)
                .into_iter()
                .map(|p| sources_in(&by_row, p).len())
                .sum();
            assert_eq!(got, 5, "piece {piece}");
        }
    }

    #[test]
    fn strips_overlap_transfers_with_rounds() {
        // With 4 strips, strip 1 arrives after rounds of strip 0 were issued, and the last
        // strip is read back while rounds of the others remain; with 1 strip neither happens.
        let (_, steps) = schedule(16, 4);
        let pos = |s: &Step| steps.iter().position(|x| x == s).unwrap();
        let first_round = steps
            .iter()
            .position(|x| matches!(x, Step::Round { .. }))
            .unwrap();
        let last_round = steps
            .iter()
            .rposition(|x| matches!(x, Step::Round { .. }))
            .unwrap();
        assert!(pos(&Step::Arrive(1)) > first_round);
        assert!(pos(&Step::Final(3)) < last_round);
        assert_eq!(
            steps.iter().filter(|x| matches!(x, Step::Final(_))).count(),
            4
        );
        let (_, one) = schedule(16, 1);
        assert_eq!(one.first(), Some(&Step::Arrive(0)));
        assert_eq!(one.last(), Some(&Step::Final(0)));
        assert_eq!(one.len(), 18);
    }
}
