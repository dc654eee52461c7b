//! The OpenCL half of the dense plugins: the matrix lives on one device; naive = one launch
//! per pivot, blocked = three phases per block of pivots with register-tiled min-plus kernels
//! (blocked_gpu.rs; the tuner picks the tile shape), R-Kleene = recursion on the host over
//! min-plus products, with 16 × 16 diagonal blocks closed in local memory.

use super::blocked_gpu;
use super::{FwJob, Matrix, Variant, KERNELS};
use std::ops::Range;
use tuccompi::device::Kernel;
use tuccompi::device::{Arg, DBuf, Device, KernelArg, KernelSource, Queue};
use tuccompi::plugin::{DeviceData, Gpu, RecordsOut, Worker};
use tuccompi::tuning::{Choice, LaunchParams, Request, Shape, Tuner};
use tuccompi::{Error, Result};

/// [`Queue::launch_unchecked`] with `args` as the kernels' parameters are typed. The kernels
/// of fw.cl index the matrix through offsets and sizes whose bounds the callers keep (the
/// SAFETY comment at each call), which no extent of the arguments alone states.
///
/// # Safety
///
/// As for [`Queue::launch_unchecked`].
pub(super) unsafe fn launch(
    q: &Queue,
    k: &Kernel,
    global: usize,
    local: Option<usize>,
    args: &[Arg<'_>],
) -> Result<()> {
    let refs: Vec<&dyn KernelArg> = args.iter().map(|a| a as &dyn KernelArg).collect();
    // SAFETY: this function's contract.
    unsafe { q.launch_unchecked(k, global, local, &refs) }.map(drop)
}

/// Tile side in kernels/fw.cl.
const T: usize = 16;

impl Variant {
    /// The kernels of [`KERNELS`] this variant launches.
    fn launched(self) -> &'static [&'static str] {
        match self {
            Variant::Naive => &["fw_naive"],
            Variant::Blocked => &["fwb_phase1", "fwb_phase2", "fwb_phase3"],
            Variant::RKleene => &["fw_diag", "fw_copy", "fw_minplus"],
        }
    }
}

impl FwJob {
    pub(super) fn kernel_files(&self) -> &'static [KernelSource] {
        &[KERNELS]
    }

    pub(super) fn params_on(&self, device: &Device, tuner: &Tuner) -> Result<LaunchParams> {
        let nn = (self.n * self.n) as u64;
        let mut p = tuner.params(
            &device.info,
            Request::new(
                &KERNELS,
                self.variant.launched(),
                Shape {
                    n: self.n * self.n,
                    bytes_per_task: nn * 4,
                    shared_bytes: 0,
                },
            ),
        )?;
        p.batch = Choice::fixed(1, "the whole matrix is one task");
        p.queues = Choice::fixed(1, "one device runs the whole matrix, on one queue");
        if self.variant == Variant::Blocked {
            let shape = self
                .tile_shape(device)
                .map_err(|e| self.origins.locate(e))?;
            shape.publish(&mut p);
        }
        Ok(p)
    }

    pub(super) fn setup_on(&self, device: &Device, params: &LaunchParams) -> Result<DeviceData> {
        if !self.input.narrow() {
            return Err(Error::Device(format!(
                "{}: paths may exceed 2^28 in magnitude, beyond the devices' exact 32-bit Floyd-Warshall; run it on CPU workers (units.opencl = \"none\")",
                self.name
            )));
        }
        if self.variant == Variant::Blocked {
            // The shape params published, chosen again by the same rules (they depend only on
            // the device, n and the config).
            let shape = &self
                .tile_shape(device)
                .map_err(|e| self.origins.locate(e))?;
            let ld = blocked_gpu::padded(self.n, shape.block.value) as u64;
            device.check_fits(
                ld * ld * 4,
                ld * ld * 4,
                &format!("a dense {} x {} matrix (padded to {ld})", self.n, self.n),
            )?;
            device.program(&KERNELS, &blocked_gpu::build_options(shape))?;
            return Ok(DeviceData::none());
        }
        let nn = (self.n * self.n) as u64 * 4;
        let scratch = if self.variant == Variant::RKleene {
            nn / 2 + 16
        } else {
            0
        };
        device.check_fits(
            nn + scratch,
            nn,
            &format!("a dense {} x {} matrix", self.n, self.n),
        )?;
        device.program(&KERNELS, "")?;
        let _ = params;
        Ok(DeviceData::none())
    }

    pub(super) fn worker_on<'a>(&'a self, gpu: Gpu<'a>) -> Result<Box<dyn Worker + 'a>> {
        Ok(Box::new(GpuFw {
            job: self,
            device: gpu.device,
            params: gpu.params,
            q: gpu.queue,
        }))
    }
}

struct GpuFw<'a> {
    job: &'a FwJob,
    device: &'a Device,
    params: &'a LaunchParams,
    q: Queue,
}

impl GpuFw<'_> {
    fn k(&self, name: &str) -> Result<Kernel> {
        self.device.kernel(&KERNELS, "", name)
    }
}

struct Rk<'a> {
    q: &'a Queue,
    m: &'a DBuf<i32>,
    ta: &'a DBuf<i32>,
    tb: &'a DBuf<i32>,
    diag: Kernel,
    copy: Kernel,
    mp: Kernel,
    n: u32,
    params: &'a LaunchParams,
}

impl Rk<'_> {
    /// C(rows x cols at c) = min(C, A(rows x inner at a) ⊗ B(inner x cols at b)).
    #[allow(clippy::too_many_arguments)]
    fn product(
        &self,
        c: (usize, usize),
        a: (usize, usize),
        b: (usize, usize),
        rows: usize,
        inner: usize,
        cols: usize,
    ) -> Result<()> {
        let u = |x: usize| Arg::U32(x as u32);
        let n = Arg::U32(self.n);
        // SAFETY: fw.cl's argument types; m is n x n, operands (half + 1)^2.
        unsafe {
            launch(
                self.q,
                &self.copy,
                rows * inner,
                Some(self.params.local("fw_copy")?),
                &[
                    Arg::I32s(self.m),
                    Arg::I32s(self.ta),
                    n,
                    u(a.0),
                    u(a.1),
                    u(rows),
                    u(inner),
                ],
            )
        }?;
        // SAFETY: fw.cl's argument types; m is n x n, operands (half + 1)^2.
        unsafe {
            launch(
                self.q,
                &self.copy,
                inner * cols,
                Some(self.params.local("fw_copy")?),
                &[
                    Arg::I32s(self.m),
                    Arg::I32s(self.tb),
                    n,
                    u(b.0),
                    u(b.1),
                    u(inner),
                    u(cols),
                ],
            )
        }?;
        // SAFETY: fw.cl's argument types; m is n x n, operands (half + 1)^2.
        unsafe {
            launch(
                self.q,
                &self.mp,
                rows * cols,
                Some(self.params.local("fw_minplus")?),
                &[
                    Arg::I32s(self.m),
                    Arg::I32s(self.ta),
                    Arg::I32s(self.tb),
                    n,
                    u(c.0),
                    u(c.1),
                    u(rows),
                    u(inner),
                    u(cols),
                ],
            )
        }
    }

    /// Close the diagonal block of side s at (o, o).
    fn closure(&self, o: usize, s: usize) -> Result<()> {
        if s <= T {
            // SAFETY: fw.cl's argument types; m is n x n, operands (half + 1)^2.
            return unsafe {
                launch(
                    self.q,
                    &self.diag,
                    T * T,
                    Some(self.params.local("fw_diag")?),
                    &[
                        Arg::I32s(self.m),
                        Arg::U32(self.n),
                        Arg::U32(o as u32),
                        Arg::U32(s as u32),
                    ],
                )
            };
        }
        let h = s / 2;
        let (a, d, sd) = (o, o + h, s - h);
        self.closure(a, h)?;
        self.product((a, d), (a, a), (a, d), h, h, sd)?;
        self.product((d, a), (d, a), (a, a), sd, h, h)?;
        self.product((d, d), (d, a), (a, d), sd, h, sd)?;
        self.closure(d, sd)?;
        self.product((a, d), (a, d), (d, d), h, sd, sd)?;
        self.product((d, a), (d, d), (d, a), sd, sd, h)?;
        self.product((a, a), (a, d), (d, a), h, sd, h)
    }
}

impl Worker for GpuFw<'_> {
    fn run(&mut self, _range: Range<usize>, out: &mut RecordsOut<'_>) -> Result<()> {
        if !self.job.input.narrow() {
            return Err(super::wide_on_device());
        }
        let n = self.job.n;
        if self.job.variant == Variant::Blocked {
            let shape = &self
                .job
                .tile_shape(self.device)
                .map_err(|e| self.job.origins.locate(e))?;
            let (summaries, timing) = blocked_gpu::run(self.job, self.device, shape)?;
            tracing::info!("fw-blocked on '{}': {timing}", self.device.info.name);
            *self.job.timing.lock() = Some(timing);
            let unit = format!("gpu ({})", self.device.info.name);
            self.job.done(&summaries, out, &unit);
            return Ok(());
        }
        let input = self.job.input.narrow_matrix()?;
        let mut m = DBuf::<i32>::new(self.device, n * n)?;
        self.q.write(&mut m, 0, &input)?;
        let nn = Arg::U32(n as u32);
        match self.job.variant {
            Variant::Naive => {
                let k = self.k("fw_naive")?;
                for p in 0..n {
                    // SAFETY: fw.cl's argument types; m is n x n, operands (half + 1)^2.
                    unsafe {
                        launch(
                            &self.q,
                            &k,
                            n * n,
                            Some(self.params.local("fw_naive")?),
                            &[Arg::I32s(&m), nn, Arg::U32(p as u32)],
                        )
                    }?;
                }
            }
            Variant::Blocked => {
                return Err(Error::Device(
                    "fw-blocked reached the naive/R-Kleene launcher (a bug)".into(),
                ))
            }
            Variant::RKleene => {
                let half = n.div_ceil(2) + 1;
                let (ta, tb) = (
                    DBuf::new(self.device, half * half)?,
                    DBuf::new(self.device, half * half)?,
                );
                let rk = Rk {
                    q: &self.q,
                    m: &m,
                    ta: &ta,
                    tb: &tb,
                    diag: self.k("fw_diag")?,
                    copy: self.k("fw_copy")?,
                    mp: self.k("fw_minplus")?,
                    n: n as u32,
                    params: self.params,
                };
                rk.closure(0, n)?;
            }
        }
        let mut result = vec![0i32; n * n];
        self.q.read(&m, 0, &mut result)?;
        let unit = format!("gpu ({})", self.device.info.name);
        self.job.closed(&Matrix::Narrow(result), out, &unit)
    }
}
