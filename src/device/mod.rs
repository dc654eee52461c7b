//! The device layer: OpenCL platforms and devices through `opencl3`.
//!
//! Takes nothing from the layers above. Offers: discovery and selection of devices
//! ([`discover`]), one context per [`Device`], programs built once per device from the kernel
//! files plugins declare ([`KernelSource`]: embedded by the plugin; `TUCCOMPI_KERNELS=DIR` reads
//! them from DIR instead), and a handle for buffers and launches ([`Queue`], [`DBuf`],
//! [`Kernel`]). The project's OpenCL FFI lives in this folder, each `unsafe` block with its
//! reason. Every launch is checked against the kernel's parameters as the source declares them
//! ([`Signature`]: count, address spaces, scalar and element types); the one contract left,
//! that buffers are as long as the kernel indexes, is [`Queue::launch`]'s `# Safety` section,
//! which each call site answers. A plugin needs no `opencl3` types of its own.
//!
//! For kernel work, `TUCCOMPI_CL_OPTIONS` appends build options to every program (e.g.
//! `-cl-nv-verbose`), and `TUCCOMPI_DUMP_BINARIES=DIR` writes each built program's binary
//! (`CL_PROGRAM_BINARIES`: PTX on NVIDIA) and build log into DIR.
//!
//! The OpenCL library is loaded at run time (`opencl3`'s `dynamic` feature): a machine without
//! it gets [`Error::Device`] explaining what to install, never a crash.

mod extent;
mod kernels;
mod queue;
mod signature;
mod stderr;

pub use kernels::{KernelFile, KernelSource};
pub use queue::{fill_bound, Arg, DBuf, KernelArg, Local, Marker, Pinned, Queue, Scalar};
pub use signature::{ClType, Param, Signature, Space};

use crate::{Error, Result};
use opencl3::context::Context;
use opencl3::device::{
    Device as ClDevice, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU,
    CL_DEVICE_TYPE_GPU,
};
use opencl3::program::Program as ClProgram;
use opencl3::types::cl_device_id;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// What `tuccompi devices`, the tuner and the report know about a device.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    /// Device name as the driver reports it.
    pub name: String,
    /// Platform name.
    pub platform: String,
    /// Vendor.
    pub vendor: String,
    /// "gpu", "cpu", "accelerator" or "other".
    pub kind: String,
    /// Compute units (SMs, CUs, cores).
    pub compute_units: u32,
    /// Maximum clock in MHz.
    pub clock_mhz: u32,
    /// Global memory in bytes.
    pub global_mem: u64,
    /// Largest single allocation in bytes.
    pub max_alloc: u64,
    /// Local memory per work-group in bytes.
    pub local_mem: u64,
    /// Maximum work-group size.
    pub max_work_group: usize,
    /// Whether 64-bit atomics (`cl_khr_int64_base_atomics` + `_extended_atomics`) exist.
    pub int64_atomics: bool,
    /// Whether `double` is supported (`cl_khr_fp64`). A program that uses `double` is refused
    /// on a device without it, naming the device.
    pub fp64: bool,
    /// Driver version string.
    pub driver: String,
}

impl DeviceInfo {
    /// A device described, not discovered: `kind` ("gpu", "cpu"), its compute units and
    /// largest work-group, with 8 GiB of memory (2 GiB per allocation), 48 KiB of local
    /// memory, 64-bit atomics and `double`. For tests of tuning rules against the devices they
    /// were measured on; change the fields that matter to a rule.
    pub fn described(kind: &str, compute_units: u32, max_work_group: usize) -> DeviceInfo {
        DeviceInfo {
            name: "test".into(),
            platform: "p".into(),
            vendor: "v".into(),
            kind: kind.into(),
            compute_units,
            clock_mhz: 1000,
            global_mem: 8 << 30,
            max_alloc: 2 << 30,
            local_mem: 48 << 10,
            max_work_group,
            int64_atomics: true,
            fp64: true,
            driver: "1".into(),
        }
    }
}

/// One OpenCL device with its context and program cache. Shared (`Arc`) by its queues.
pub struct Device {
    /// Position in the list of selected devices (`gpu0`, `gpu1`, ...).
    pub index: usize,
    /// Properties.
    pub info: DeviceInfo,
    // opencl3's Device, Context and Program are Send + Sync (OpenCL objects are thread-safe
    // except for setting kernel arguments, and `Device::kernel` makes a new kernel object per
    // call); the program cache is behind a mutex.
    cl: ClDevice,
    context: std::mem::ManuallyDrop<Context>,
    programs: Mutex<HashMap<(String, String), Arc<Program>>>,
    /// Seconds the driver took: listing the platforms and devices (once per discovery, for
    /// all its devices: the first call initializes the driver) and creating this device's
    /// context.
    pub opened: [f64; 2],
    /// The processes of this machine that use this device, as the runtime chose them (1 for a
    /// process alone): [`Device::check_fits`] divides device memory by it.
    sharers: std::sync::atomic::AtomicUsize,
    /// Buffers plugins keep on the device between the jobs of a session ([`Device::keep`]),
    /// at most half its memory; released before the context.
    kept: crate::session::Kept,
    /// Programs built on it so far ([`Device::builds`]).
    builds: std::sync::atomic::AtomicUsize,
}

/// Held while devices are listed and while PoCL's contexts are created or released. PoCL
/// initializes its devices in clGetDeviceIDs, tears them down when the last context goes and
/// sets them up again in the next enumeration; a device query in another thread meanwhile read
/// freed memory (seen as crashes of concurrent tests). Other platforms' contexts are created
/// and released without it, several at once: NVIDIA's release of a context takes tens of
/// milliseconds, which one after the other added up at a run's end with several GPUs.
static SETUP: Mutex<()> = Mutex::new(());

impl Drop for Device {
    fn drop(&mut self) {
        self.kept.clear();
        let _setup = self.is_pocl().then(|| SETUP.lock());
        self.programs.lock().clear();
        // SAFETY: dropped once, here; no other use of the context follows.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.context) };
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("index", &self.index)
            .field("info", &self.info)
            .finish()
    }
}

/// Which devices a run may use.
#[derive(Debug, Clone)]
pub struct Filter {
    /// "gpu", "cpu", "accelerator" or "all".
    pub device_type: String,
    /// Name substrings (case-insensitive); empty = every device of the type.
    pub names: Vec<String>,
}

fn cl_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Device(format!("{what}: {e}"))
}

/// Why there is no OpenCL platform, in words a user can act on.
pub fn no_platform_help() -> String {
    let mut s = String::from(
        "no OpenCL platform found. For CPUs, install PoCL (Debian/Ubuntu: apt-get install \
         pocl-opencl-icd ocl-icd-libopencl1).",
    );
    if nvidia_library_present() {
        s.push_str(
            " An NVIDIA OpenCL library (libnvidia-opencl.so.1) is installed but not registered \
             with the ICD loader: run `mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > \
             /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd`.",
        );
    }
    s
}

/// Whether an NVIDIA OpenCL library is present although no platform may be registered.
pub fn nvidia_library_present() -> bool {
    let mut dirs: Vec<String> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    dirs.extend(
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/nvidia/lib64",
            "/usr/local/nvidia/lib",
        ]
        .map(String::from),
    );
    dirs.iter().any(|d| {
        std::path::Path::new(d)
            .join("libnvidia-opencl.so.1")
            .exists()
    })
}

/// Every OpenCL device on this machine, with its properties. An error when the OpenCL library
/// is missing or no platform is registered (see [`no_platform_help`]).
pub fn list() -> Result<Vec<(DeviceInfo, cl_device_id)>> {
    let _setup = SETUP.lock();
    list_unlocked()
}

fn list_unlocked() -> Result<Vec<(DeviceInfo, cl_device_id)>> {
    let platforms = match opencl3::platform::get_platforms() {
        Ok(p) => p,
        Err(e) if e.0 == -2000 => {
            return Err(Error::Device(format!(
                "the OpenCL library (libOpenCL.so.1) is not installed; {}",
                no_platform_help()
            )))
        }
        Err(e) if e.0 == -1001 => return Err(Error::Device(no_platform_help())),
        Err(e) => return Err(cl_err("listing platforms", e)),
    };
    if platforms.is_empty() {
        return Err(Error::Device(no_platform_help()));
    }
    let mut out = Vec::new();
    for p in platforms {
        let pname = p.name().unwrap_or_default();
        let ids = match p.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(_) => continue, // a platform without devices
        };
        for id in ids {
            let d = ClDevice::new(id);
            let ty = d.dev_type().unwrap_or(0);
            let kind = if ty & CL_DEVICE_TYPE_GPU != 0 {
                "gpu"
            } else if ty & CL_DEVICE_TYPE_CPU != 0 {
                "cpu"
            } else if ty & CL_DEVICE_TYPE_ACCELERATOR != 0 {
                "accelerator"
            } else {
                "other"
            };
            let ext = d.extensions().unwrap_or_default();
            out.push((
                DeviceInfo {
                    name: d.name().unwrap_or_default().trim().to_string(),
                    platform: pname.clone(),
                    vendor: d.vendor().unwrap_or_default(),
                    kind: kind.into(),
                    compute_units: d.max_compute_units().unwrap_or(1),
                    clock_mhz: d.max_clock_frequency().unwrap_or(0),
                    global_mem: d.global_mem_size().unwrap_or(0),
                    max_alloc: d.max_mem_alloc_size().unwrap_or(0),
                    local_mem: d.local_mem_size().unwrap_or(0),
                    max_work_group: d.max_work_group_size().unwrap_or(1),
                    int64_atomics: ext.contains("cl_khr_int64_base_atomics")
                        && ext.contains("cl_khr_int64_extended_atomics"),
                    fp64: ext.contains("cl_khr_fp64"),
                    driver: d.driver_version().unwrap_or_default(),
                },
                id,
            ));
        }
    }
    Ok(out)
}

/// Open the devices `filter` selects, one context each. Errors when none matches.
pub fn discover(filter: &Filter) -> Result<Vec<Arc<Device>>> {
    let mut setup = Some(SETUP.lock());
    let listing = std::time::Instant::now();
    let all = list_unlocked()?;
    let listed = listing.elapsed().as_secs_f64();
    let mut chosen = Vec::new();
    for (info, id) in &all {
        let type_ok = filter.device_type == "all" || filter.device_type == info.kind;
        let name_ok = filter.names.is_empty()
            || filter.names.iter().any(|n| {
                let n = n.to_lowercase();
                info.name.to_lowercase().contains(&n) || info.platform.to_lowercase().contains(&n)
            });
        if type_ok && name_ok {
            chosen.push((info.clone(), *id));
        }
    }
    if chosen.is_empty() {
        let have: Vec<String> = all
            .iter()
            .map(|(i, _)| format!("'{}' ({})", i.name, i.kind))
            .collect();
        return Err(Error::Device(format!(
            "no OpenCL device matches units.device_type = \"{}\" and units.opencl = {}; this \
             machine has {}. Change the filter (units.device_type = \"all\" includes CPU devices \
             such as PoCL) or set units.opencl = \"none\"",
            filter.device_type,
            // As the config says it: an empty name list is "all".
            if filter.names.is_empty() {
                "\"all\"".to_string()
            } else {
                format!("{:?}", filter.names)
            },
            have.join(", ")
        )));
    }
    // Listed: the lock stays only for PoCL's contexts (see SETUP).
    if !chosen
        .iter()
        .any(|(info, _)| info.platform == "Portable Computing Language")
    {
        setup.take();
    }
    // One context per device, created in parallel: a driver may take a few hundred
    // milliseconds per context (each device's initialization), which one after the other
    // adds up with several GPUs.
    struct Id(cl_device_id);
    // SAFETY: an OpenCL device id is a handle that any thread may pass to the API.
    unsafe impl Send for Id {}
    let open = |index: usize, info: DeviceInfo, id: Id| -> Result<Arc<Device>> {
        let id = id.0;
        let t = std::time::Instant::now();
        let context = Context::from_device(&ClDevice::new(id))
            .map_err(|e| cl_err(&format!("creating a context on '{}'", info.name), e))?;
        let opened = [listed, t.elapsed().as_secs_f64()];
        let kept = crate::session::Kept::with_limit((info.global_mem / 2).max(1));
        Ok(Arc::new(Device {
            index,
            info,
            cl: ClDevice::new(id),
            context: std::mem::ManuallyDrop::new(context),
            programs: Mutex::new(HashMap::new()),
            opened,
            sharers: std::sync::atomic::AtomicUsize::new(1),
            kept,
            builds: std::sync::atomic::AtomicUsize::new(0),
        }))
    };
    std::thread::scope(|s| {
        let opening: Vec<_> = chosen
            .into_iter()
            .enumerate()
            .map(|(index, (info, id))| {
                let name = info.name.clone();
                let id = Id(id);
                (name, s.spawn(move || open(index, info, id)))
            })
            .collect();
        opening
            .into_iter()
            .map(|(name, h)| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Device(format!(
                        "creating a context on '{name}' panicked in the OpenCL driver"
                    )))
                })
            })
            .collect()
    })
}

impl Device {
    /// The program of kernel file `kernels` built with `options`, built once and cached (by stem
    /// and options). A build failure returns the compiler's log, its lines naming the file that
    /// was read (the embedded copy's stem, or the file under `TUCCOMPI_KERNELS`) rather than
    /// the driver's temporary file. A program that uses `double` is refused on a device without
    /// `cl_khr_fp64`.
    pub fn program(&self, kernels: &KernelSource, options: &str) -> Result<Arc<Program>> {
        let stem = kernels.stem;
        let key = (stem.to_string(), options.to_string());
        if let Some(p) = self.programs.lock().get(&key) {
            return Ok(p.clone());
        }
        let file = kernels.load()?;
        let path = file.path();
        let extra = std::env::var("TUCCOMPI_CL_OPTIONS").unwrap_or_default();
        let opts = format!("-cl-std=CL1.2 {options} {extra}");
        let (signatures, uses_double) = signature::parse(&file.source, &opts);
        if uses_double && !self.info.fp64 {
            return Err(Error::Device(format!(
                "{} uses double, but '{}' has no double precision (no cl_khr_fp64); run it on \
                 CPU workers or on a device with fp64, or leave this device out with \
                 units.opencl",
                file.origin, self.info.name
            )));
        }
        self.builds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut program = ClProgram::create_from_source(&self.context, &file.source)
            .map_err(|e| cl_err(&format!("creating program {}", file.origin), e))?;
        // PoCL's clang writes its diagnostic count on the process's stderr (module stderr):
        // captured there, so that the failure reaches the user once, as this error.
        let pocl = self.info.platform.contains("Portable Computing Language");
        let built = if pocl {
            let (built, captured) = stderr::capture(|| program.build(&[self.cl.id()], &opts));
            stderr::release(&captured);
            built
        } else {
            program.build(&[self.cl.id()], &opts)
        };
        if let Err(e) = built {
            let log = program.get_build_log(self.cl.id()).unwrap_or_default();
            return Err(Error::Device(format!(
                "{} failed to build on '{}' ({e}) with options '{}'. Build log:\n{}",
                file.origin,
                self.info.name,
                opts.trim(),
                relocate_log(log.trim(), &path)
            )));
        }
        if let Some(dir) = std::env::var_os("TUCCOMPI_DUMP_BINARIES") {
            self.dump(&program, stem, &opts, std::path::Path::new(&dir))?;
        }
        // What each kernel declares about its launches (its characterization's `indexes`,
        // `local` and `reduction`; the tuning layer reads and checks the rest).
        let launch: HashMap<String, LaunchDecl> = toml::from_str(&file.characterization)
            .map_err(|e| Error::Config(format!("{}: {e}", file.toml_origin())))?;
        let p = Arc::new(Program {
            cl: program,
            origin: file.origin.clone(),
            toml_origin: file.toml_origin(),
            signatures,
            launch,
        });
        self.programs.lock().insert(key, p.clone());
        Ok(p)
    }

    /// Write `program`'s binary for this device and its build log into `dir`, named after the
    /// stem, the device and the options (`TUCCOMPI_DUMP_BINARIES`).
    fn dump(
        &self,
        program: &ClProgram,
        stem: &str,
        opts: &str,
        dir: &std::path::Path,
    ) -> Result<()> {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect::<String>()
                .split('_')
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("_")
        };
        let name = format!("{stem}-{}-{}", clean(&self.info.name), clean(opts));
        let bins = program
            .get_binaries()
            .map_err(|e| cl_err(&format!("reading the binary of {stem}.cl"), e))?;
        let log = program.get_build_log(self.cl.id()).unwrap_or_default();
        dump_dir(dir)?;
        // Each file renamed into place: a link at a name is replaced, never written through.
        let hint = "move it away, or name another TUCCOMPI_DUMP_BINARIES directory";
        for (i, b) in bins.iter().enumerate() {
            crate::owned::write_atomic(&dir.join(format!("{name}.{i}.bin")), b, hint)?;
        }
        crate::owned::write_atomic(
            &dir.join(format!("{name}.log")),
            format!("options: {opts}\n{log}").as_bytes(),
            hint,
        )
    }

    /// A new kernel object `name` of `kernels` built with `options` (one per queue: kernel
    /// arguments are per object), with the parameters its source declares, against which every
    /// launch is checked. A name the source does not declare is an error listing those it does.
    pub fn kernel(&self, kernels: &KernelSource, options: &str, name: &str) -> Result<Kernel> {
        let p = self.program(kernels, options)?;
        let signature = p.signatures.iter().find(|s| s.name == name).cloned();
        let cl = opencl3::kernel::Kernel::create(&p.cl, name).map_err(|e| {
            Error::Device(format!(
                "kernel '{name}' of {}: {e}; the file declares {}",
                p.origin,
                p.kernel_list()
            ))
        })?;
        let decl = p.launch.get(name).cloned().unwrap_or_default();
        let extents = match &signature {
            Some(sig) => Some(extent::extents(
                &p.toml_origin,
                name,
                &sig.params,
                &decl.indexes,
            )?),
            None => None,
        };
        Ok(Kernel {
            cl,
            name: name.to_string(),
            origin: p.origin.clone(),
            signature,
            extents,
            fixed_local: decl.local,
            pow2_local: decl.reduction,
        })
    }

    /// A new in-order command queue on this device.
    pub fn queue(&self) -> Result<Queue> {
        Queue::new(
            &self.context,
            self.cl.id(),
            &self.info.name,
            false,
            self.is_pocl(),
            queue::fill_bound(&self.info.platform),
        )
    }

    /// A new in-order command queue that records device times ([`Marker::seconds`]).
    pub fn profiled_queue(&self) -> Result<Queue> {
        Queue::new(
            &self.context,
            self.cl.id(),
            &self.info.name,
            true,
            self.is_pocl(),
            queue::fill_bound(&self.info.platform),
        )
    }

    /// Whether this is a PoCL device, whose kernels run one at a time in the process (see
    /// [`Queue`]).
    fn is_pocl(&self) -> bool {
        self.info.platform == "Portable Computing Language"
    }

    /// Check that `bytes` in total, the largest single buffer being `largest`, fit on the device;
    /// `what` says what they are for. Leaves 10% of global memory for the driver, and divides
    /// the rest among the machine's processes that use the device ([`Device::sharers`]).
    pub fn check_fits(&self, bytes: u64, largest: u64, what: &str) -> Result<()> {
        fits(&self.info, bytes, largest, self.sharers(), what)?;
        // What earlier jobs of a session kept here goes when this one would not fit beside it
        // (a job still using a kept buffer holds it until it ends).
        let kept = self.kept.bytes();
        if kept > 0 && fits(&self.info, bytes + kept, largest, self.sharers(), what).is_err() {
            tracing::debug!(
                "'{}': {kept} bytes kept by earlier jobs released for {what}",
                self.info.name
            );
            self.kept.clear();
        }
        Ok(())
    }

    /// The buffers kept on this device under `key` (an input's fingerprint with the
    /// parameters of its layout), else those `make()` uploads (with their size in bytes),
    /// kept for the next jobs of the session that holds this device: a second job on the same
    /// data neither rebuilds nor uploads it. At most half the device's memory is kept, the
    /// least recently used released first ([`crate::session::Kept`]); a run of its own drops
    /// them with the device at its end.
    pub fn keep<T: std::any::Any + Send + Sync>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<(T, u64)>,
    ) -> Result<Arc<T>> {
        self.kept.get_or_make(key, make)
    }

    /// Programs built on this device so far: each (kernel file, options) is built once per
    /// device and reused by every later job of its session.
    pub fn builds(&self) -> usize {
        self.builds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What [`Device::keep`] holds on this device.
    pub fn kept(&self) -> &crate::session::Kept {
        &self.kept
    }

    /// The processes of this machine that use this device (at least 1), as the runtime chose
    /// them when it selected the devices.
    pub fn sharers(&self) -> usize {
        self.sharers
            .load(std::sync::atomic::Ordering::Relaxed)
            .max(1)
    }

    /// Record [`Device::sharers`] (the runtime, when it selects the devices).
    pub(crate) fn set_sharers(&self, n: usize) {
        self.sharers
            .store(n.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    pub(crate) fn id(&self) -> cl_device_id {
        self.cl.id()
    }
}

/// A program built on one device from a [`KernelSource`], with the kernel signatures its
/// source declares (under the options it was built with).
pub struct Program {
    cl: ClProgram,
    origin: String,
    toml_origin: String,
    signatures: Vec<Signature>,
    launch: HashMap<String, LaunchDecl>,
}

/// What a kernel's characterization declares about its launches.
#[derive(Debug, Clone, Default, serde::Deserialize)]
struct LaunchDecl {
    /// Per buffer or `__local` parameter, the extent it may index ([`extent`]).
    #[serde(default)]
    indexes: std::collections::BTreeMap<String, String>,
    /// The exact work-group size the code is written for.
    #[serde(default)]
    local: Option<usize>,
    /// A tree reduction in local memory: the work-group size must be a power of two.
    #[serde(default)]
    reduction: bool,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("origin", &self.origin)
            .field("kernels", &self.kernel_list())
            .finish()
    }
}

impl Program {
    /// The kernels the source declares, with their parameters.
    pub fn signatures(&self) -> &[Signature] {
        &self.signatures
    }

    fn kernel_list(&self) -> String {
        let names: Vec<&str> = self.signatures.iter().map(|s| s.name.as_str()).collect();
        if names.is_empty() {
            "no kernel the parser could read".into()
        } else {
            names.join(", ")
        }
    }
}

/// A kernel object for one queue, with the parameters its source declares: what
/// [`Queue::launch`] takes and checks the arguments against (made by [`Device::kernel`]).
pub struct Kernel {
    pub(crate) cl: opencl3::kernel::Kernel,
    name: String,
    origin: String,
    signature: Option<Signature>,
    /// Per parameter, the extent the characterization declares (`None` without a signature).
    extents: Option<extent::Extents>,
    /// The characterization's `local`: the only work-group size a launch may use.
    fixed_local: Option<usize>,
    /// The characterization's `reduction`: launches use a power-of-two work-group size.
    pow2_local: bool,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({} of {})", self.name, self.origin)
    }
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The file it came from (for messages).
    pub fn origin(&self) -> &str {
        &self.origin
    }
    /// Its parameters as the source declares them, when the parser found the kernel (a kernel
    /// named through a macro is not found; its launches are checked by count only).
    pub fn signature(&self) -> Option<&Signature> {
        self.signature.as_ref()
    }
}

/// A build log whose lines name the driver's temporary file (PoCL's
/// `error: /root/.cache/pocl/kcache/tempfile_X.cl:5:3: ...`, NVIDIA's `<kernel>:5:3: ...`) with
/// `path`, the file that was read, instead: in each line, the first word of the form
/// `FILE:LINE:COLUMN:`.
fn relocate_log(log: &str, path: &str) -> String {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    log.lines()
        .map(|l| {
            let mut done = false;
            let words: Vec<String> = l
                .split(' ')
                .map(|w| {
                    let parts: Vec<&str> = w.splitn(4, ':').collect();
                    if !done
                        && parts.len() == 4
                        && !parts[0].is_empty()
                        && digits(parts[1])
                        && digits(parts[2])
                    {
                        done = true;
                        format!("{path}:{}:{}:{}", parts[1], parts[2], parts[3])
                    } else {
                        w.to_string()
                    }
                })
                .collect();
            words.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Create the `TUCCOMPI_DUMP_BINARIES` directory `dir` (or find it): an error naming the
/// variable when something other than a directory is there.
fn dump_dir(dir: &std::path::Path) -> Result<()> {
    if std::fs::symlink_metadata(dir).is_ok() && !dir.is_dir() {
        return Err(Error::Config(format!(
            "TUCCOMPI_DUMP_BINARIES = {}: it is {}, not a directory; name a directory for the \
             program binaries (it is created when missing)",
            dir.display(),
            crate::owned::describe(dir)
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// [`Device::check_fits`] for `sharers` processes using the device.
fn fits(info: &DeviceInfo, bytes: u64, largest: u64, sharers: usize, what: &str) -> Result<()> {
    let usable = info.global_mem / 10 * 9 / sharers.max(1) as u64;
    if bytes > usable || (info.max_alloc > 0 && largest > info.max_alloc) {
        let shared = if sharers > 1 {
            format!(" (its share: {sharers} processes of this machine use the device)")
        } else {
            String::new()
        };
        return Err(Error::Device(format!(
            "{what} needs {:.1} MiB on '{}' (largest buffer {:.1} MiB), but the device has \
             {:.1} MiB usable{shared} (largest allocation {:.1} MiB). Use a smaller batch, fewer \
             concurrent kernels, or run it on CPU workers",
            bytes as f64 / 1048576.0,
            info.name,
            largest as f64 / 1048576.0,
            usable as f64 / 1048576.0,
            info.max_alloc as f64 / 1048576.0
        )));
    }
    Ok(())
}

#[cfg(test)]
mod test;
