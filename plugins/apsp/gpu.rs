//! The GPU half of APSP: batched SSSP on an OpenCL device.
//!
//! A chunk of sources is processed `batch` at a time; all state is `batch × n` (index
//! `b·n + v`), so every launch serves the whole batch and the graph's arcs are shared. The host
//! checks for the end after 1, 2, 4 ... 64 iterations rather than after each one (iterations
//! after the end are no-ops), and the per-source summary is reduced on the device, so only
//! `batch × groups × 4` words come back unless distance rows are requested.
//!
//! Algorithms ([`GpuAlgorithm`]): Crauser and Martin (relax / minimum / update over every
//! vertex), two-phase (mask / cost / updating cost over every vertex), and the work list
//! (rounds over a compacted frontier only).

use super::{ApspJob, GpuAlgorithm, RowWrite};
use crate::device::{Arg, DBuf, Device, Queue};
use crate::plugin::{DeviceSetup, GpuHalf, RecordsOut, Worker};
use crate::tuning::{cache_key, characterizations, choose, subset, Cache, LaunchParams, Shape};
use crate::{Error, Result};
use opencl3::kernel::Kernel;
use std::ops::Range;

/// What each device keeps for all its queues.
struct Shared {
    off: DBuf<u32>,
    tgt: DBuf<u32>,
    wt: DBuf<u32>,
    minw: DBuf<u32>,
    params: LaunchParams,
}

impl ApspJob {
    fn build_options(&self) -> &'static str {
        if self.wide {
            "-DWIDE=1"
        } else {
            ""
        }
    }
    fn dist_bytes(&self) -> u64 {
        if self.wide {
            8
        } else {
            4
        }
    }
    /// Device bytes per source in flight for the chosen algorithm.
    fn bytes_per_source(&self) -> u64 {
        let (n, d) = (self.graph.n as u64, self.dist_bytes());
        64 + n * match self.options.gpu_algorithm {
            GpuAlgorithm::Crauser | GpuAlgorithm::Martin => d + 2,
            GpuAlgorithm::TwoPhase => 2 * d + 2,
            GpuAlgorithm::Worklist => d + 4 + 3 * 4,
        }
    }
    /// The work list's bucket width: `[apsp] delta`, else 64 x the mean arc weight; 0 means no
    /// threshold (the type's maximum).
    fn delta(&self) -> u64 {
        let g = &self.graph;
        let d = match self.options.delta.and_then(|d| d.value()) {
            Some(d) => d as u64,
            None => {
                let mean = g.weights.iter().map(|&w| w as u64).sum::<u64>() / (g.m().max(1) as u64);
                (64 * mean).max(1)
            }
        };
        match (d, self.wide) {
            (0, true) => u64::MAX,
            (0, false) => u32::MAX as u64,
            (d, false) => d.min(u32::MAX as u64),
            (d, true) => d,
        }
    }
}

impl ApspJob {
    /// The tuning cache's key for this job on `device`.
    pub fn cache_key(&self, device: &Device) -> String {
        let kernels = format!(
            "apsp.{:?}.{}",
            self.options.gpu_algorithm,
            if self.wide { "u64" } else { "u32" }
        );
        cache_key(&device.info, &kernels.to_lowercase(), self.graph.n)
    }

    /// Launch parameters on `device`: config > tuning cache > prediction.
    fn params(&self, device: &Device, queues: Option<usize>) -> Result<(Shape, LaunchParams)> {
        let g = &self.graph;
        let n = g.n as u64;
        let shape = Shape {
            n: g.n,
            mean_degree: g.m() as f64 / g.n.max(1) as f64,
            bytes_per_task: self.bytes_per_source(),
            shared_bytes: (2 * n + 1 + 2 * g.m() as u64) * 4,
        };
        let chars = subset(
            &characterizations("sssp")?,
            self.options.gpu_algorithm.kernels(),
        );
        let cached = Cache::load()?.entries.get(&self.cache_key(device)).copied();
        let params = choose(
            &chars,
            &device.info,
            shape,
            self.options.batch.and_then(|b| b.value()),
            queues,
            self.options.local_size.and_then(|l| l.value()),
            cached,
        );
        Ok((shape, params))
    }
}

impl GpuHalf for ApspJob {
    fn launch_plan(&self, device: &Device, queues: Option<usize>) -> Result<serde_json::Value> {
        let (_, params) = self.params(device, queues)?;
        Ok(serde_json::to_value(&params).unwrap_or_default())
    }

    fn setup(&self, device: &Device, queues: Option<usize>) -> Result<DeviceSetup> {
        let g = &self.graph;
        if self.wide && !device.info.int64_atomics {
            return Err(Error::Device(format!(
                "'{}' lacks 64-bit atomics (cl_khr_int64_base_atomics and _extended_atomics), which \
                 this graph needs: n x max weight = {} x {} does not fit 32 bits. Use CPU workers \
                 (units.opencl = \"none\") or another device",
                device.info.name,
                g.n,
                g.max_weight()
            )));
        }
        let n = g.n as u64;
        let (shape, params) = self.params(device, queues)?;
        let batch = params.batch.value as u64;
        if batch * n >= u32::MAX as u64 {
            return Err(Error::Config(format!(
                "[apsp] batch = {batch}: batch x n = {} must stay below 2^32; use a smaller batch",
                batch * n
            )));
        }
        let total = shape.shared_bytes + params.queues.value as u64 * batch * shape.bytes_per_task;
        let largest = (batch * n * self.dist_bytes()).max(g.m() as u64 * 4);
        device.check_fits(
            total,
            largest,
            &format!("APSP on {} vertices, batch {batch}", g.n),
        )?;
        // Build now, so a kernel that fails to compile is reported once, with its log.
        device.program("sssp", self.build_options())?;
        let q = device.queue()?;
        let upload = |data: &[u32]| -> Result<DBuf<u32>> {
            let mut b = DBuf::new(device, data.len())?;
            q.write(&mut b, 0, data)?;
            Ok(b)
        };
        let shared = Shared {
            off: upload(&g.offsets)?,
            tgt: upload(&g.targets)?,
            wt: upload(&g.weights)?,
            minw: upload(&g.min_out_weight())?,
            params: params.clone(),
        };
        Ok(DeviceSetup {
            shared: Box::new(shared),
            chunk: params.batch.value,
            queues: params.queues.value,
            tuning: {
                let mut t = serde_json::to_value(&params).unwrap_or_default();
                t["cache_key"] = serde_json::json!(self.cache_key(device));
                t
            },
        })
    }

    fn worker<'a>(
        &'a self,
        device: &'a Device,
        shared: &'a (dyn std::any::Any + Send + Sync),
        _queue: usize,
    ) -> Result<Box<dyn Worker + 'a>> {
        let sh = shared
            .downcast_ref::<Shared>()
            .expect("APSP shared device data");
        let batch = sh.params.batch.value;
        let items = batch * self.graph.n;
        let opts = self.build_options();
        let k = |name| device.kernel("sssp", opts, name);
        let wide = self.wide;
        let state = match self.options.gpu_algorithm {
            GpuAlgorithm::Crauser | GpuAlgorithm::Martin => State::Dense {
                init: k("sssp_init")?,
                relax: k("sssp_relax")?,
                minimum: k("sssp_minimum")?,
                update: k("sssp_update")?,
                settled: DBuf::new(device, items)?,
                frontier: DBuf::new(device, items)?,
                delta: DistBuf::new(device, batch, wide)?,
                changed: DBuf::new(device, 1)?,
            },
            GpuAlgorithm::TwoPhase => State::TwoPhase {
                init: k("sssp_init")?,
                relax: k("tp_relax")?,
                update: k("tp_update")?,
                upd: DistBuf::new(device, items, wide)?,
                settled: DBuf::new(device, items)?,
                mask: DBuf::new(device, items)?,
                changed: DBuf::new(device, 1)?,
            },
            GpuAlgorithm::Worklist => State::Worklist {
                init: k("wl_init")?,
                round: k("wl_round")?,
                stamp: DBuf::new(device, items)?,
                lists: [
                    DBuf::new(device, items)?,
                    DBuf::new(device, items)?,
                    DBuf::new(device, items)?,
                ],
                counts: DBuf::new(device, 3)?,
                // Per-source state, one copy per round modulo 3 (see wl_round).
                thresh: DistBuf::new(device, 3 * batch, wide)?,
                farmin: DistBuf::new(device, 3 * batch, wide)?,
                active: DBuf::new(device, 3 * batch)?,
            },
        };
        Ok(Box::new(GpuWorker {
            job: self,
            sh,
            q: device.queue()?,
            summary: k("sssp_summary")?,
            dist: DistBuf::new(device, items, wide)?,
            src: DBuf::new(device, batch)?,
            partial: DBuf::new(device, batch * sh.params.groups_per_task.value * 4)?,
            state,
        }))
    }
}

enum DistBuf {
    Narrow(DBuf<u32>),
    Wide(DBuf<u64>),
}

impl DistBuf {
    fn new(device: &Device, len: usize, wide: bool) -> Result<Self> {
        Ok(if wide {
            DistBuf::Wide(DBuf::new(device, len)?)
        } else {
            DistBuf::Narrow(DBuf::new(device, len)?)
        })
    }
    fn arg(&self) -> Arg<'_> {
        match self {
            DistBuf::Narrow(b) => Arg::U32s(b),
            DistBuf::Wide(b) => Arg::U64s(b),
        }
    }
}

/// Per-algorithm kernels and buffers of one queue.
enum State {
    Dense {
        init: Kernel,
        relax: Kernel,
        minimum: Kernel,
        update: Kernel,
        settled: DBuf<u8>,
        frontier: DBuf<u8>,
        delta: DistBuf,
        changed: DBuf<u32>,
    },
    TwoPhase {
        init: Kernel,
        relax: Kernel,
        update: Kernel,
        upd: DistBuf,
        settled: DBuf<u8>,
        mask: DBuf<u8>,
        changed: DBuf<u32>,
    },
    Worklist {
        init: Kernel,
        round: Kernel,
        stamp: DBuf<u32>,
        lists: [DBuf<u32>; 3],
        counts: DBuf<u32>,
        thresh: DistBuf,
        farmin: DistBuf,
        active: DBuf<u32>,
    },
}

struct GpuWorker<'a> {
    job: &'a ApspJob,
    sh: &'a Shared,
    q: Queue,
    summary: Kernel,
    dist: DistBuf,
    src: DBuf<u32>,
    partial: DBuf<u64>,
    state: State,
}

impl GpuWorker<'_> {
    fn local(&self, kernel: &str) -> usize {
        self.sh.params.local[kernel].value
    }

    /// Run iterations of `step` (which enqueues one iteration and says how to read the "not
    /// done" word) until that word reads 0; the check doubles from 1 to 64 iterations apart.
    fn iterate(
        &mut self,
        n: usize,
        mut step: impl FnMut(&mut Self, usize) -> Result<()>,
        mut done: impl FnMut(&mut Self, usize) -> Result<bool>,
    ) -> Result<usize> {
        let (mut check, mut k) = (1usize, 0usize);
        // Crauser and Martin settle at least one vertex of every unfinished source per
        // iteration; two-phase is Bellman-Ford by rounds (at most n + 1); the work list adds at
        // most one round per threshold step, and a step always reaches a far vertex.
        let limit = 2 * n + 2 + 128;
        loop {
            for _ in 0..check {
                step(self, k)?;
                k += 1;
            }
            if done(self, k)? {
                return Ok(k);
            }
            if k > limit {
                return Err(Error::Device(format!(
                    "{:?} SSSP did not converge after {k} iterations on {n} vertices (a bug; please report it)",
                    self.job.options.gpu_algorithm
                )));
            }
            check = (check * 2).min(64);
        }
    }

    /// Read a flag word, and clear it for the next block of iterations.
    fn take_flag(q: &Queue, flag: &mut DBuf<u32>) -> Result<bool> {
        let mut v = [0u32];
        q.read(flag, 0, &mut v)?;
        if v[0] != 0 {
            q.write(flag, 0, &[0])?;
        }
        Ok(v[0] == 0)
    }

    /// Run one batch of at most `params.batch` sources (tasks `range`).
    fn batch(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let job = self.job;
        let n = job.graph.n;
        let b = range.len();
        let items = n * b;
        let (nn, bb) = (Arg::U32(n as u32), Arg::U32(b as u32));
        self.q
            .write(&mut self.src, 0, &job.sources[range.clone()])?;
        let sh = self.sh;
        let algo = job.options.gpu_algorithm;
        let gpt = sh.params.groups_per_task.value;
        let dsize = if job.wide { 8 } else { 4 };
        let iterations = match algo {
            GpuAlgorithm::Crauser | GpuAlgorithm::Martin => {
                let State::Dense {
                    init,
                    settled,
                    frontier,
                    changed,
                    ..
                } = &mut self.state
                else {
                    unreachable!()
                };
                self.q.launch(
                    init,
                    items,
                    Some(sh.params.local["sssp_init"].value),
                    &[
                        self.dist.arg(),
                        Arg::U8s(settled),
                        Arg::U8s(frontier),
                        Arg::U32s(&self.src),
                        nn,
                        bb,
                    ],
                )?;
                self.q.write(changed, 0, &[0])?;
                let lmin = self.local("sssp_minimum");
                let use_omega = Arg::U32((algo == GpuAlgorithm::Crauser) as u32);
                let (lr, lu) = (self.local("sssp_relax"), self.local("sssp_update"));
                self.iterate(
                    n,
                    |w, _| {
                        let State::Dense {
                            relax,
                            minimum,
                            update,
                            settled,
                            frontier,
                            delta,
                            changed,
                            ..
                        } = &w.state
                        else {
                            unreachable!()
                        };
                        w.q.launch(
                            relax,
                            items,
                            Some(lr),
                            &[
                                Arg::U32s(&sh.off),
                                Arg::U32s(&sh.tgt),
                                Arg::U32s(&sh.wt),
                                w.dist.arg(),
                                Arg::U8s(settled),
                                Arg::U8s(frontier),
                                delta.arg(),
                                nn,
                                bb,
                            ],
                        )?;
                        w.q.launch(
                            minimum,
                            b * gpt * lmin,
                            Some(lmin),
                            &[
                                w.dist.arg(),
                                Arg::U8s(settled),
                                Arg::U32s(&sh.minw),
                                delta.arg(),
                                Arg::Local(lmin * dsize),
                                nn,
                                Arg::U32(gpt as u32),
                                use_omega,
                            ],
                        )?;
                        w.q.launch(
                            update,
                            items,
                            Some(lu),
                            &[
                                w.dist.arg(),
                                Arg::U8s(settled),
                                Arg::U8s(frontier),
                                delta.arg(),
                                Arg::U32s(changed),
                                nn,
                                bb,
                            ],
                        )
                    },
                    |w, _| {
                        let State::Dense { changed, .. } = &mut w.state else {
                            unreachable!()
                        };
                        Self::take_flag(&w.q, changed)
                    },
                )?
            }
            GpuAlgorithm::TwoPhase => {
                // sssp_init gives cost = dist and mask = {source}; the updating cost starts as
                // a copy of the cost (a second init into it).
                let State::TwoPhase {
                    init,
                    upd,
                    settled,
                    mask,
                    changed,
                    ..
                } = &mut self.state
                else {
                    unreachable!()
                };
                let li = sh.params.local["sssp_init"].value;
                self.q.launch(
                    init,
                    items,
                    Some(li),
                    &[
                        self.dist.arg(),
                        Arg::U8s(settled),
                        Arg::U8s(mask),
                        Arg::U32s(&self.src),
                        nn,
                        bb,
                    ],
                )?;
                self.q.launch(
                    init,
                    items,
                    Some(li),
                    &[
                        upd.arg(),
                        Arg::U8s(settled),
                        Arg::U8s(mask),
                        Arg::U32s(&self.src),
                        nn,
                        bb,
                    ],
                )?;
                self.q.write(changed, 0, &[0])?;
                let (lr, lu) = (self.local("tp_relax"), self.local("tp_update"));
                self.iterate(
                    n,
                    |w, _| {
                        let State::TwoPhase {
                            relax,
                            update,
                            upd,
                            mask,
                            changed,
                            ..
                        } = &w.state
                        else {
                            unreachable!()
                        };
                        w.q.launch(
                            relax,
                            items,
                            Some(lr),
                            &[
                                Arg::U32s(&sh.off),
                                Arg::U32s(&sh.tgt),
                                Arg::U32s(&sh.wt),
                                w.dist.arg(),
                                upd.arg(),
                                Arg::U8s(mask),
                                nn,
                                bb,
                            ],
                        )?;
                        w.q.launch(
                            update,
                            items,
                            Some(lu),
                            &[
                                w.dist.arg(),
                                upd.arg(),
                                Arg::U8s(mask),
                                Arg::U32s(changed),
                                nn,
                                bb,
                            ],
                        )
                    },
                    |w, _| {
                        let State::TwoPhase { changed, .. } = &mut w.state else {
                            unreachable!()
                        };
                        Self::take_flag(&w.q, changed)
                    },
                )?
            }
            GpuAlgorithm::Worklist => {
                let delta = if job.wide {
                    Arg::U64(job.delta())
                } else {
                    Arg::U32(job.delta() as u32)
                };
                let State::Worklist {
                    init,
                    stamp,
                    lists,
                    counts,
                    thresh,
                    farmin,
                    active,
                    ..
                } = &self.state
                else {
                    unreachable!()
                };
                self.q.launch(
                    init,
                    items,
                    Some(sh.params.local["wl_init"].value),
                    &[
                        self.dist.arg(),
                        Arg::U32s(stamp),
                        Arg::U32s(&lists[0]),
                        Arg::U32s(counts),
                        Arg::U32s(&self.src),
                        thresh.arg(),
                        farmin.arg(),
                        Arg::U32s(active),
                        delta,
                        nn,
                        bb,
                    ],
                )?;
                let lr = self.local("wl_round");
                // Appends gathered in local memory: 8 per work-item (road graphs have degree
                // < 8; a fuller group falls back to global appends).
                let lcap = 8 * lr;
                let grid = sh.params.persistent_items.value;
                let launch = |w: &Self, k: usize| -> Result<()> {
                    let State::Worklist {
                        round,
                        stamp,
                        lists,
                        counts,
                        thresh,
                        farmin,
                        active,
                        ..
                    } = &w.state
                    else {
                        unreachable!()
                    };
                    let slot = k % 3;
                    w.q.launch(
                        round,
                        grid,
                        Some(lr),
                        &[
                            Arg::U32s(&sh.off),
                            Arg::U32s(&sh.tgt),
                            Arg::U32s(&sh.wt),
                            w.dist.arg(),
                            Arg::U32s(stamp),
                            Arg::U32s(&lists[slot]),
                            Arg::U32s(&lists[(slot + 1) % 3]),
                            Arg::U32s(counts),
                            thresh.arg(),
                            farmin.arg(),
                            Arg::U32s(active),
                            Arg::Local(lcap * 4),
                            delta,
                            Arg::U32(slot as u32),
                            nn,
                            bb,
                            Arg::U32(k as u32),
                            Arg::U32(lcap as u32),
                        ],
                    )
                };
                // Pipelined: the next block of rounds is enqueued before waiting for the
                // frontier count at the end of the previous one, so the device never idles
                // while the host thread catches up (rounds past the end are no-ops).
                let limit = 2 * n + 2 + 128;
                let (mut k, mut check) = (0usize, 1usize);
                for _ in 0..check {
                    launch(self, k)?;
                    k += 1;
                }
                loop {
                    let State::Worklist { counts, .. } = &self.state else {
                        unreachable!()
                    };
                    let next_check = (check * 2).min(64);
                    let start = k;
                    let this = &*self;
                    let left = this.q.read_one_pipelined(counts, k % 3, || {
                        for r in start..start + next_check {
                            launch(this, r)?;
                        }
                        Ok(())
                    })?;
                    k += next_check;
                    check = next_check;
                    if left == 0 {
                        break k;
                    }
                    if k > limit {
                        return Err(Error::Device(format!(
                            "work-list SSSP did not converge after {k} rounds on {n} vertices (a bug; please report it)"
                        )));
                    }
                }
            }
        };
        let lsum = self.local("sssp_summary");
        self.q.launch(
            &self.summary,
            b * gpt * lsum,
            Some(lsum),
            &[
                self.dist.arg(),
                Arg::U64s(&self.partial),
                Arg::Local(4 * lsum * 8),
                nn,
                Arg::U32(gpt as u32),
            ],
        )?;
        let mut partial = vec![0u64; b * gpt * 4];
        self.q.read(&self.partial, 0, &mut partial)?;
        for (i, t) in range.clone().enumerate() {
            let (mut cnt, mut sum, mut max) = (0u64, 0u128, 0u64);
            for p in partial[i * gpt * 4..(i + 1) * gpt * 4].chunks_exact(4) {
                cnt += p[0];
                sum += p[1] as u128 | (p[2] as u128) << 64;
                max = max.max(p[3]);
            }
            let rec = out.record(t);
            rec[0] = cnt;
            rec[1] = sum as u64;
            rec[2] = (sum >> 64) as u64;
            rec[3] = max;
        }
        if let Some(rows) = &job.rows {
            match &self.dist {
                DistBuf::Narrow(d) => write_rows::<u32>(&self.q, d, rows, range, n)?,
                DistBuf::Wide(d) => write_rows::<u64>(&self.q, d, rows, range, n)?,
            }
        }
        tracing::trace!(iterations, sources = b, "batch done");
        Ok(())
    }
}

fn write_rows<D: crate::device::Scalar + RowWrite>(
    q: &Queue,
    d: &DBuf<D>,
    rows: &crate::sink::NpyRows,
    range: Range<usize>,
    n: usize,
) -> Result<()> {
    let mut row = vec![D::default(); n];
    for (i, t) in range.enumerate() {
        q.read(d, i * n, &mut row)?;
        D::write_row(rows, t, &row)?;
    }
    Ok(())
}

impl Worker for GpuWorker<'_> {
    fn run(&mut self, range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        let batch = self.sh.params.batch.value;
        let mut start = range.start;
        while start < range.end {
            let end = (start + batch).min(range.end);
            self.batch(start..end, out)?;
            start = end;
        }
        Ok(())
    }
}
