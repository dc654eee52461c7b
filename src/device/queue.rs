//! A handle over one in-order command queue: typed buffers with bounds-checked blocking
//! transfers (safe), and kernel launches with their arguments, checked against the kernel's
//! declared parameters (`unsafe` only because no one can check that a buffer is as long as the
//! kernel indexes, see [`Queue::launch`]).

use super::signature::{ClType, Space};
use super::{cl_err, Device, Kernel};
use crate::{Error, Result};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::event::Event;
use opencl3::memory::{
    Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::types::{cl_device_id, CL_BLOCKING, CL_NON_BLOCKING};
use std::ffi::c_void;
use std::ptr;

/// Plain scalar types that may cross to the device byte for byte: every integer width and
/// `f32`/`f64` (OpenCL's `float`/`double`; `double` needs a device with `cl_khr_fp64`).
pub trait Scalar: Copy + Default + Send + Sync + 'static + private::Sealed {
    /// The OpenCL C type of the same bits.
    const CL: ClType;
    /// A `__global` buffer argument of this element type.
    fn buf_arg(buf: &DBuf<Self>) -> Arg<'_>;
    /// This value as a by-value argument.
    fn value_arg(self) -> Arg<'static>;
}
macro_rules! scalars {
    ($($t:ty => $cl:ident, $bufs:ident, $val:ident;)*) => {
        $(
            impl Scalar for $t {
                const CL: ClType = ClType::$cl;
                fn buf_arg(buf: &DBuf<Self>) -> Arg<'_> {
                    Arg::$bufs(buf)
                }
                fn value_arg(self) -> Arg<'static> {
                    Arg::$val(self)
                }
            }
            impl private::Sealed for $t {}
        )*
    };
}
scalars! {
    u8 => UChar, U8s, U8;
    i8 => Char, I8s, I8;
    u16 => UShort, U16s, U16;
    i16 => Short, I16s, I16;
    u32 => UInt, U32s, U32;
    i32 => Int, I32s, I32;
    u64 => ULong, U64s, U64;
    i64 => Long, I64s, I64;
    f32 => Float, F32s, F32;
    f64 => Double, F64s, F64;
}
mod private {
    pub trait Sealed {}
}

/// A device buffer of `len` elements of `T`.
pub struct DBuf<T: Scalar> {
    buf: Buffer<T>,
    len: usize,
}

impl<T: Scalar> std::fmt::Debug for DBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DBuf<{}>[{}]", std::any::type_name::<T>(), self.len)
    }
}

impl<T: Scalar> DBuf<T> {
    /// Allocate `len` elements (at least one) on `device`.
    pub fn new(device: &Device, len: usize) -> Result<Self> {
        Self::in_context(device.context(), len, &device.info.name)
    }

    fn in_context(context: &Context, len: usize, dev: &str) -> Result<Self> {
        // SAFETY: no host pointer is passed (null), so OpenCL allocates and owns the memory.
        let buf =
            unsafe { Buffer::<T>::create(context, CL_MEM_READ_WRITE, len.max(1), ptr::null_mut()) }
                .map_err(|e| {
                    cl_err(
                        &format!(
                            "allocating {:.1} MiB on '{dev}'",
                            (len * std::mem::size_of::<T>()) as f64 / 1048576.0
                        ),
                        e,
                    )
                })?;
        Ok(DBuf { buf, len })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Page-locked host memory from the OpenCL runtime (`CL_MEM_ALLOC_HOST_PTR`, mapped): transfers
/// between it and device buffers run at the bus's speed, where pageable memory goes through
/// the driver's own staging copy (about 7 GB/s on an H200 through NVIDIA's OpenCL). Unmapped
/// when dropped.
pub struct Pinned<T: Scalar> {
    buf: Buffer<T>,
    queue: CommandQueue,
    ptr: *mut T,
    len: usize,
}

impl<T: Scalar> std::fmt::Debug for Pinned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pinned<{}>[{}]", std::any::type_name::<T>(), self.len)
    }
}

// SAFETY: the mapping is plain host memory owned by this value; the buffer and queue handles
// are thread-safe OpenCL objects.
unsafe impl<T: Scalar> Send for Pinned<T> {}

impl<T: Scalar> Pinned<T> {
    /// `len` elements (at least one) of page-locked memory usable with `device`'s queues.
    pub fn new(device: &Device, len: usize) -> Result<Self> {
        let len = len.max(1);
        let dev = &device.info.name;
        let err = |e| {
            cl_err(
                &format!(
                    "allocating {:.1} MiB of page-locked host memory for '{dev}'",
                    (len * std::mem::size_of::<T>()) as f64 / 1048576.0
                ),
                e,
            )
        };
        // SAFETY: no host pointer is passed; OpenCL allocates host-accessible memory.
        let buf = unsafe {
            Buffer::<T>::create(
                device.context(),
                CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                len,
                ptr::null_mut(),
            )
        }
        .map_err(err)?;
        // SAFETY: `device.id()` is the device the context was created for.
        #[allow(deprecated)]
        let queue =
            unsafe { CommandQueue::create(device.context(), device.id(), 0) }.map_err(err)?;
        let mut mapped: opencl3::types::cl_mem = ptr::null_mut();
        // SAFETY: a blocking map of the whole buffer; the pointer stays valid until unmapped
        // in Drop.
        unsafe {
            queue.enqueue_map_buffer(
                &buf,
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                len * std::mem::size_of::<T>(),
                &mut mapped,
                &[],
            )
        }
        .map_err(err)?;
        Ok(Pinned {
            buf,
            queue,
            ptr: mapped as *mut T,
            len,
        })
    }

    /// The memory.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` maps `len` elements of memory the runtime allocated (the OS hands out
        // zeroed pages) for the life of self; every T is a plain integer or float, valid for any
        // bits.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The memory, writable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in as_slice; `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: Scalar> Drop for Pinned<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from mapping `buf` on this queue and is unmapped once.
        let unmapped = unsafe {
            self.queue
                .enqueue_unmap_mem_object(self.buf.get(), self.ptr as *mut c_void, &[])
        };
        if unmapped.is_ok() {
            let _ = self.queue.finish();
        }
    }
}

/// A kernel argument: a buffer (`__global` or `__constant` pointer to its element type), a
/// value, or a `__local` array's byte count. [`Queue::launch`] checks each against the
/// kernel's parameter. Generic code can use [`Arg::buf`] and [`Arg::value`].
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// A `__global uchar*`.
    U8s(&'a DBuf<u8>),
    /// A `__global char*`.
    I8s(&'a DBuf<i8>),
    /// A `__global ushort*`.
    U16s(&'a DBuf<u16>),
    /// A `__global short*`.
    I16s(&'a DBuf<i16>),
    /// A `__global uint*`.
    U32s(&'a DBuf<u32>),
    /// A `__global int*`.
    I32s(&'a DBuf<i32>),
    /// A `__global ulong*`.
    U64s(&'a DBuf<u64>),
    /// A `__global long*`.
    I64s(&'a DBuf<i64>),
    /// A `__global float*`.
    F32s(&'a DBuf<f32>),
    /// A `__global double*`.
    F64s(&'a DBuf<f64>),
    /// A `uchar` by value.
    U8(u8),
    /// A `char` by value.
    I8(i8),
    /// A `ushort` by value.
    U16(u16),
    /// A `short` by value.
    I16(i16),
    /// A `uint` by value.
    U32(u32),
    /// An `int` by value.
    I32(i32),
    /// A `ulong` by value.
    U64(u64),
    /// A `long` by value.
    I64(i64),
    /// A `float` by value.
    F32(f32),
    /// A `double` by value.
    F64(f64),
    /// A `__local` buffer of this many bytes.
    Local(usize),
}

/// What an argument is, for the check: a buffer of, a value of, or local memory.
enum Passed {
    Buffer(ClType, &'static str),
    Value(ClType),
    Local,
}

impl<'a> Arg<'a> {
    /// A buffer argument of any element type.
    pub fn buf<T: Scalar>(buf: &'a DBuf<T>) -> Self {
        T::buf_arg(buf)
    }

    /// A by-value argument of any scalar type.
    pub fn value<T: Scalar>(v: T) -> Arg<'static> {
        v.value_arg()
    }

    fn passed(&self) -> Passed {
        fn b<T: Scalar>(_: &DBuf<T>) -> Passed {
            Passed::Buffer(T::CL, std::any::type_name::<T>())
        }
        match *self {
            Arg::U8s(x) => b(x),
            Arg::I8s(x) => b(x),
            Arg::U16s(x) => b(x),
            Arg::I16s(x) => b(x),
            Arg::U32s(x) => b(x),
            Arg::I32s(x) => b(x),
            Arg::U64s(x) => b(x),
            Arg::I64s(x) => b(x),
            Arg::F32s(x) => b(x),
            Arg::F64s(x) => b(x),
            Arg::U8(_) => Passed::Value(ClType::UChar),
            Arg::I8(_) => Passed::Value(ClType::Char),
            Arg::U16(_) => Passed::Value(ClType::UShort),
            Arg::I16(_) => Passed::Value(ClType::Short),
            Arg::U32(_) => Passed::Value(ClType::UInt),
            Arg::I32(_) => Passed::Value(ClType::Int),
            Arg::U64(_) => Passed::Value(ClType::ULong),
            Arg::I64(_) => Passed::Value(ClType::Long),
            Arg::F32(_) => Passed::Value(ClType::Float),
            Arg::F64(_) => Passed::Value(ClType::Double),
            Arg::Local(_) => Passed::Local,
        }
    }

    /// Set this argument at `i` of `kernel`.
    ///
    /// # Safety
    ///
    /// The argument has the type of the kernel's parameter `i` (checked by [`check_args`]).
    unsafe fn set(&self, kernel: &opencl3::kernel::Kernel, i: u32) -> opencl3::Result<()> {
        // SAFETY: a live cl_mem handle or a plain scalar, of the parameter's type (this
        // function's contract); a local size is a byte count.
        unsafe {
            match *self {
                Arg::U8s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::I8s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::U16s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::I16s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::U32s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::I32s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::U64s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::I64s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::F32s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::F64s(b) => kernel.set_arg(i, &b.buf.get()),
                Arg::U8(v) => kernel.set_arg(i, &v),
                Arg::I8(v) => kernel.set_arg(i, &v),
                Arg::U16(v) => kernel.set_arg(i, &v),
                Arg::I16(v) => kernel.set_arg(i, &v),
                Arg::U32(v) => kernel.set_arg(i, &v),
                Arg::I32(v) => kernel.set_arg(i, &v),
                Arg::U64(v) => kernel.set_arg(i, &v),
                Arg::I64(v) => kernel.set_arg(i, &v),
                Arg::F32(v) => kernel.set_arg(i, &v),
                Arg::F64(v) => kernel.set_arg(i, &v),
                Arg::Local(bytes) => kernel.set_arg_local_buffer(i, bytes),
            }
        }
    }
}

/// A kernel argument: a [`DBuf`] (a `__global` or `__constant` buffer), a scalar by value
/// (`u8` to `u64`, `i8` to `i64`, `f32`, `f64`), or [`Local`] memory. [`Queue::launch`] takes
/// them as `&[&buf, &n, &Local::of::<u32>(256)]`.
pub trait KernelArg {
    /// The argument as the launch passes it.
    fn arg(&self) -> Arg<'_>;
}

impl<T: Scalar> KernelArg for DBuf<T> {
    fn arg(&self) -> Arg<'_> {
        T::buf_arg(self)
    }
}

impl<T: Scalar> KernelArg for T {
    fn arg(&self) -> Arg<'_> {
        self.value_arg()
    }
}

impl KernelArg for Arg<'_> {
    fn arg(&self) -> Arg<'_> {
        *self
    }
}

/// A `__local` array of a launch, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Local(pub usize);

impl Local {
    /// `count` elements of `T`.
    pub fn of<T>(count: usize) -> Local {
        Local(count * std::mem::size_of::<T>())
    }
}

impl KernelArg for Local {
    fn arg(&self) -> Arg<'_> {
        Arg::Local(self.0)
    }
}

impl Arg<'_> {
    /// Elements of a buffer argument; bytes of local memory; `None` for a value.
    fn extent(&self) -> Option<usize> {
        fn n<T: Scalar>(b: &DBuf<T>) -> Option<usize> {
            Some(b.len)
        }
        match *self {
            Arg::U8s(x) => n(x),
            Arg::I8s(x) => n(x),
            Arg::U16s(x) => n(x),
            Arg::I16s(x) => n(x),
            Arg::U32s(x) => n(x),
            Arg::I32s(x) => n(x),
            Arg::U64s(x) => n(x),
            Arg::I64s(x) => n(x),
            Arg::F32s(x) => n(x),
            Arg::F64s(x) => n(x),
            Arg::Local(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// An integer value argument as an `i128` (extent expressions read them).
    fn integer(&self) -> Option<i128> {
        Some(match *self {
            Arg::U8(v) => v.into(),
            Arg::I8(v) => v.into(),
            Arg::U16(v) => v.into(),
            Arg::I16(v) => v.into(),
            Arg::U32(v) => v.into(),
            Arg::I32(v) => v.into(),
            Arg::U64(v) => v.into(),
            Arg::I64(v) => v.into(),
            _ => return None,
        })
    }
}

/// Check a launch of `kernel` over `global` work-items (already rounded up to whole groups) in
/// groups of `local` against what its characterization declares: its work-group size (`local`,
/// `reduction`), and for every buffer and `__local` parameter the extent it may index
/// (`indexes`), which the argument must hold. Called after [`check_args`].
pub(super) fn check_extents(
    kernel: &Kernel,
    args: &[Arg<'_>],
    global: usize,
    local: Option<usize>,
) -> Result<()> {
    let name = kernel.name();
    let fix = "declare it in the kernel's characterization, or launch with the unsafe \
               Queue::launch_unchecked";
    let (Some(sig), Some(extents)) = (kernel.signature(), kernel.extents.as_ref()) else {
        return Err(Error::Device(format!(
            "kernel '{name}' of {}: its parameters could not be read from the source (named \
             through a macro?), so its launches cannot be checked; name it plainly, or launch it \
             with the unsafe Queue::launch_unchecked",
            kernel.origin()
        )));
    };
    let at = format!("kernel '{name}' ({}:{})", kernel.origin(), sig.line);
    if let Some(want) = kernel.fixed_local {
        if local != Some(want) {
            return Err(Error::Device(format!(
                "{at} is written for work-groups of exactly {want} (its characterization's \
                 local), but is launched with {local:?}"
            )));
        }
    }
    if kernel.pow2_local && local.is_some_and(|l| !l.is_power_of_two()) {
        return Err(Error::Device(format!(
            "{at} reduces with a tree (its characterization's reduction = true): launch it with \
             a power-of-two work-group size, not {local:?}"
        )));
    }
    let groups = local.map(|l| global / l.max(1));
    let var = |v: &str| -> Option<i128> {
        match v {
            "global" => Some(global as i128),
            "local" => local.map(|l| l as i128),
            "groups" => groups.map(|g| g as i128),
            _ => sig
                .params
                .iter()
                .position(|p| p.name == v)
                .and_then(|i| args[i].integer()),
        }
    };
    for (i, (p, a)) in sig.params.iter().zip(args).enumerate() {
        let Some(have) = a.extent() else { continue };
        let Some((text, expr)) = &extents[i] else {
            return Err(Error::Device(format!(
                "{at}: argument {i} '{}' ({}) has no declared extent, so the launch cannot be \
                 checked; add `indexes = {{ {} = \"...\" }}` to [{name}] (the elements it may \
                 index, from its scalar arguments, global, local and groups), or {fix}",
                p.name,
                p.describe(),
                p.name
            )));
        };
        let Some(need) = expr.eval(&var) else {
            return Err(Error::Device(format!(
                "{at}: the extent of '{}' (\"{text}\") cannot be evaluated for this launch \
                 (local {local:?}; an overflow or a division by zero?)",
                p.name
            )));
        };
        let need = need.max(0);
        let (need, unit) = if p.space == Space::Local {
            let size = p.ty.bytes().unwrap_or(1) as i128;
            (need.saturating_mul(size), "bytes")
        } else {
            (need, "elements")
        };
        if need > have as i128 {
            return Err(Error::Device(format!(
                "{at}: argument {i} '{}' holds {have} {unit}, but the kernel may index {need} \
                 (\"{text}\" with this launch's arguments, global {global}, local {local:?}): \
                 pass a larger buffer or a smaller launch",
                p.name
            )));
        }
    }
    Ok(())
}

/// Check `args` against `kernel`'s declared parameters: their count always; with a signature,
/// each argument's kind (buffer, value, local memory), address space and scalar or element
/// type. A mismatch is an error naming the kernel, its file and line, the argument (index and
/// name), the declared type and the passed one.
pub(super) fn check_args(kernel: &Kernel, args: &[Arg<'_>], expected: usize) -> Result<()> {
    let name = kernel.name();
    let Some(sig) = kernel.signature() else {
        if expected != args.len() {
            return Err(Error::Device(format!(
                "kernel '{name}' of {} takes {expected} arguments, {} given (a bug in the GPU half)",
                kernel.origin(),
                args.len()
            )));
        }
        return Ok(());
    };
    let at = format!("kernel '{name}' ({}:{})", kernel.origin(), sig.line);
    if sig.params.len() != args.len() {
        let declared: Vec<String> = sig.params.iter().map(|p| p.describe()).collect();
        return Err(Error::Device(format!(
            "{at} takes {} arguments ({}), {} given (a bug in the GPU half)",
            sig.params.len(),
            declared.join(", "),
            args.len()
        )));
    }
    for (i, (p, a)) in sig.params.iter().zip(args).enumerate() {
        let known = |t: &ClType| !matches!(t, ClType::Other(_));
        let (ok, passed) = match a.passed() {
            Passed::Local => (
                p.pointer && p.space == Space::Local,
                "__local memory (Arg::Local)".to_string(),
            ),
            Passed::Buffer(t, rust) => (
                p.pointer
                    && matches!(p.space, Space::Global | Space::Constant)
                    && (!known(&p.ty) || p.ty == t),
                format!("__global {}* (a DBuf<{rust}>)", t.name()),
            ),
            Passed::Value(t) => (
                !p.pointer && p.space == Space::Private && (!known(&p.ty) || p.ty == t),
                format!("{} by value", t.name()),
            ),
        };
        if !ok {
            return Err(Error::Device(format!(
                "{at}: argument {i} '{}' is declared {}, but the GPU half passes {passed} (a bug \
                 in the GPU half or in the kernel file)",
                p.name,
                p.describe()
            )));
        }
    }
    Ok(())
}

/// The global size a launch runs (rounded up to whole groups, at least one item) and its
/// work-group size, if given.
fn work_sizes(global: usize, local: Option<usize>) -> (usize, Option<[usize; 1]>) {
    match local {
        Some(l) if l > 0 => (global.div_ceil(l).max(1) * l, Some([l])),
        _ => (global.max(1), None),
    }
}

/// [`check_args`] with the count the OpenCL kernel object reports.
fn check_launch(kernel: &Kernel, args: &[Arg<'_>]) -> Result<()> {
    let expected = kernel.cl.num_args().unwrap_or(args.len() as u32) as usize;
    check_args(kernel, args, expected)
}

/// One in-order command queue.
pub struct Queue {
    queue: CommandQueue,
    device: String,
    /// Run each launch to completion under [`POCL_KERNELS`] (PoCL devices).
    serial: bool,
    /// Buffers of this many elements and more are not filled ([`fill_bound`]).
    fill_bound: usize,
}

/// The buffer length (elements) from which [`Queue::fill`] refuses to fill on a platform:
/// 2^31 on NVIDIA's, whose driver fails such fills (one call never returned; fills in pieces
/// gave `CL_INVALID_COMMAND_QUEUE`; benches/big_buffer.rs), so that a caller gets an error
/// instead of a hang; none elsewhere.
pub fn fill_bound(platform: &str) -> usize {
    if platform.contains("NVIDIA") {
        1 << 31
    } else {
        usize::MAX
    }
}

/// Held by a PoCL queue from a launch until the kernel has finished. The test suite aborted in
/// about 3 of 7 runs inside PoCL 3 (`pocl_release_dlhandle_cache: Assertion 'found->ref_count >
/// 0' failed`), also with one test at a time. PoCL's CPU drivers keep one process-wide cache of
/// compiled work-group functions, fetched by kernel, local size and grid width but released by
/// kernel and local size alone, so with launches of one kernel in flight at once a release can
/// hit another entry. With one kernel in flight in the process, the entry released is the one
/// fetched. (A small two-queue stress test did not reproduce the abort, so this is the cause as
/// read from PoCL's code, not a reproduction.) PoCL is the test and fallback device; its queues
/// lose only their overlap.
static POCL_KERNELS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Queue({})", self.device)
    }
}

/// A point in a queue's command stream: a marker, or one launch ([`Queue::launch_marked`]).
/// Waiting on it waits for everything enqueued before it on its queue (in-order queues).
#[derive(Debug)]
pub struct Marker(Event);

impl Marker {
    /// Block until the point is reached.
    pub fn wait(&self) -> Result<()> {
        self.0.wait().map_err(|e| cl_err("waiting for a marker", e))
    }

    /// Device time in seconds between the start and the end of the command; the queue must
    /// come from [`Device::profiled_queue`] and the command must have finished.
    pub fn seconds(&self) -> Result<f64> {
        let start = self
            .0
            .profiling_command_start()
            .map_err(|e| cl_err("reading a profiling start time", e))?;
        let end = self
            .0
            .profiling_command_end()
            .map_err(|e| cl_err("reading a profiling end time", e))?;
        Ok(end.saturating_sub(start) as f64 * 1e-9)
    }
}

impl Queue {
    pub(super) fn new(
        context: &Context,
        id: cl_device_id,
        device: &str,
        profiling: bool,
        serial: bool,
        fill_bound: usize,
    ) -> Result<Self> {
        let props = if profiling {
            CL_QUEUE_PROFILING_ENABLE
        } else {
            0
        };
        // SAFETY: `id` is the device the context was created for.
        #[allow(deprecated)]
        let queue = unsafe { CommandQueue::create(context, id, props) }
            .map_err(|e| cl_err(&format!("creating a queue on '{device}'"), e))?;
        Ok(Queue {
            queue,
            device: device.into(),
            serial,
            fill_bound,
        })
    }

    fn bounds<T: Scalar>(
        &self,
        buf: &DBuf<T>,
        offset: usize,
        len: usize,
        what: &str,
    ) -> Result<()> {
        if offset.checked_add(len).is_none_or(|end| end > buf.len) {
            return Err(Error::Device(format!(
                "{what} of {len} elements at {offset} outside a buffer of {} on '{}' (a bug in the GPU half)",
                buf.len, self.device
            )));
        }
        Ok(())
    }

    /// Copy `data` into `buf` at element `offset`; returns when done.
    pub fn write<T: Scalar>(&self, buf: &mut DBuf<T>, offset: usize, data: &[T]) -> Result<()> {
        self.bounds(buf, offset, data.len(), "write")?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the range was checked against the buffer; the call blocks, so `data` outlives it.
        unsafe {
            self.queue.enqueue_write_buffer(
                &mut buf.buf,
                CL_BLOCKING,
                offset * std::mem::size_of::<T>(),
                data,
                &[],
            )
        }
        .map_err(|e| cl_err(&format!("writing to '{}'", self.device), e))?;
        Ok(())
    }

    /// Copy from `buf` at element `offset` into `out`; returns when done.
    pub fn read<T: Scalar>(&self, buf: &DBuf<T>, offset: usize, out: &mut [T]) -> Result<()> {
        self.bounds(buf, offset, out.len(), "read")?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: the range was checked; the call blocks, so `out` outlives the transfer.
        unsafe {
            self.queue.enqueue_read_buffer(
                &buf.buf,
                CL_BLOCKING,
                offset * std::mem::size_of::<T>(),
                out,
                &[],
            )
        }
        .map_err(|e| cl_err(&format!("reading from '{}'", self.device), e))?;
        Ok(())
    }

    /// Read one element of `buf` at `offset` as of this point in the queue, run `meanwhile`
    /// (which may enqueue more work behind the read, keeping the device busy), then wait for
    /// the read and return the value.
    pub fn read_one_pipelined<T: Scalar>(
        &self,
        buf: &DBuf<T>,
        offset: usize,
        meanwhile: impl FnOnce() -> Result<()>,
    ) -> Result<T> {
        self.bounds(buf, offset, 1, "read")?;
        let mut value = Box::new([T::default()]);
        // SAFETY: the range was checked; `value` is heap memory owned by this frame, and the
        // event is waited for below before it is read or dropped, also when `meanwhile` fails.
        let event = unsafe {
            self.queue.enqueue_read_buffer(
                &buf.buf,
                CL_NON_BLOCKING,
                offset * std::mem::size_of::<T>(),
                &mut value[..],
                &[],
            )
        }
        .map_err(|e| cl_err(&format!("reading from '{}'", self.device), e))?;
        let more = meanwhile();
        let waited = event
            .wait()
            .map_err(|e| cl_err(&format!("waiting for '{}'", self.device), e));
        more?;
        waited?;
        Ok(value[0])
    }

    /// Check the rows `row .. row + rows` of `cols` elements in a buffer of rows of `ld`.
    fn rows_bounds<T: Scalar>(
        &self,
        buf: &DBuf<T>,
        ld: usize,
        row: usize,
        cols: usize,
        len: usize,
    ) -> Result<usize> {
        if cols == 0 || cols > ld || !len.is_multiple_of(cols) {
            return Err(Error::Device(format!(
                "rows of {cols} elements in rows of {ld} ({len} elements given) on '{}' (a bug in the GPU half)",
                self.device
            )));
        }
        let rows = len / cols;
        if rows > 0 {
            self.bounds(buf, (row + rows - 1) * ld, cols, "row transfer")?;
        }
        Ok(rows)
    }

    /// Copy `data`, packed rows of `cols` elements, into rows `row..` of `buf`, whose rows are
    /// `ld` elements apart (columns `cols..ld` are left alone); returns when done. Takes the
    /// buffer by shared reference so that another queue may run kernels on other rows
    /// meanwhile: ordering between queues is the caller's ([`Marker`]).
    pub fn write_rows<T: Scalar>(
        &self,
        buf: &DBuf<T>,
        ld: usize,
        row: usize,
        cols: usize,
        data: &[T],
    ) -> Result<()> {
        let rows = self.rows_bounds(buf, ld, row, cols, data.len())?;
        if rows == 0 {
            return Ok(());
        }
        let sz = std::mem::size_of::<T>();
        let (origin, host, region) = ([0, row, 0], [0usize; 3], [cols * sz, rows, 1]);
        // SAFETY: the rows were checked against the buffer; the call blocks, so `data` outlives
        // the transfer; the origin and region arrays live across the call.
        let ev = unsafe {
            if cols == ld {
                opencl3::command_queue::enqueue_write_buffer(
                    self.queue.get(),
                    buf.buf.get(),
                    CL_BLOCKING,
                    row * ld * sz,
                    std::mem::size_of_val(data),
                    data.as_ptr() as *const c_void,
                    0,
                    ptr::null(),
                )
            } else {
                opencl3::command_queue::enqueue_write_buffer_rect(
                    self.queue.get(),
                    buf.buf.get(),
                    CL_BLOCKING,
                    origin.as_ptr(),
                    host.as_ptr(),
                    region.as_ptr(),
                    ld * sz,
                    0,
                    cols * sz,
                    0,
                    data.as_ptr() as *const c_void,
                    0,
                    ptr::null(),
                )
            }
        }
        .map_err(|e| cl_err(&format!("writing rows to '{}'", self.device), e))?;
        drop(Event::new(ev));
        Ok(())
    }

    /// Copy rows `row..` of `buf` (rows `ld` elements apart), their first `cols` elements, into
    /// `out` as packed rows; returns when done. See [`Queue::write_rows`].
    pub fn read_rows<T: Scalar>(
        &self,
        buf: &DBuf<T>,
        ld: usize,
        row: usize,
        cols: usize,
        out: &mut [T],
    ) -> Result<()> {
        let rows = self.rows_bounds(buf, ld, row, cols, out.len())?;
        if rows == 0 {
            return Ok(());
        }
        let sz = std::mem::size_of::<T>();
        let (origin, host, region) = ([0, row, 0], [0usize; 3], [cols * sz, rows, 1]);
        // SAFETY: as in write_rows; `out` is exclusively borrowed for the blocking call.
        let ev = unsafe {
            if cols == ld {
                opencl3::command_queue::enqueue_read_buffer(
                    self.queue.get(),
                    buf.buf.get(),
                    CL_BLOCKING,
                    row * ld * sz,
                    std::mem::size_of_val(out),
                    out.as_mut_ptr() as *mut c_void,
                    0,
                    ptr::null(),
                )
            } else {
                opencl3::command_queue::enqueue_read_buffer_rect(
                    self.queue.get(),
                    buf.buf.get(),
                    CL_BLOCKING,
                    origin.as_ptr(),
                    host.as_ptr(),
                    region.as_ptr(),
                    ld * sz,
                    0,
                    cols * sz,
                    0,
                    out.as_mut_ptr() as *mut c_void,
                    0,
                    ptr::null(),
                )
            }
        }
        .map_err(|e| cl_err(&format!("reading rows from '{}'", self.device), e))?;
        drop(Event::new(ev));
        Ok(())
    }

    /// Enqueue a device-side copy of the first `len` elements of `src` into `dst` (does not
    /// wait).
    pub fn copy<T: Scalar>(&self, src: &DBuf<T>, dst: &mut DBuf<T>, len: usize) -> Result<()> {
        self.bounds(src, 0, len, "copy")?;
        self.bounds(dst, 0, len, "copy")?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both ranges were checked against their buffers; `dst` is borrowed mutably
        // while `src` is borrowed, so they are distinct buffers and the regions cannot overlap.
        unsafe {
            self.queue.enqueue_copy_buffer(
                &src.buf,
                &mut dst.buf,
                0,
                0,
                len * std::mem::size_of::<T>(),
                &[],
            )
        }
        .map_err(|e| cl_err(&format!("copying on '{}'", self.device), e))?;
        Ok(())
    }

    /// Enqueue filling all of `buf` with `value` (does not wait). NVIDIA's driver fails fills
    /// of buffers of 2^31 elements and more, in one call or in pieces
    /// (benches/big_buffer.rs), so on NVIDIA such a fill is refused ([`fill_bound`]): reset
    /// such a buffer with a kernel (GPU PHAST's `phast_reset`, fw-blocked's `fw_fill`).
    pub fn fill<T: Scalar>(&self, buf: &DBuf<T>, value: T) -> Result<()> {
        self.fill_range(buf, value, 0, buf.len, buf.len.max(1))
    }

    /// Enqueue filling elements `start .. start + len` of `buf` with `value`, in fills of at
    /// most `piece` elements each (does not wait).
    pub fn fill_range<T: Scalar>(
        &self,
        buf: &DBuf<T>,
        value: T,
        start: usize,
        len: usize,
        piece: usize,
    ) -> Result<()> {
        let sz = std::mem::size_of::<T>();
        if buf.len >= self.fill_bound {
            return Err(Error::Device(format!(
                "filling a buffer of {} elements on '{}': this platform's driver fails fills \
                 of buffers of {} elements and more (benches/big_buffer.rs); reset it with a \
                 kernel instead",
                buf.len, self.device, self.fill_bound
            )));
        }
        if start + len > buf.len {
            return Err(Error::Device(format!(
                "filling elements {start}..{} of a buffer of {} on '{}'",
                start + len,
                buf.len,
                self.device
            )));
        }
        let mut at = start;
        while at < start + len {
            let m = piece.max(1).min(start + len - at);
            // SAFETY: at + m <= buf.len (checked above); OpenCL copies the pattern before
            // returning.
            let ev = unsafe {
                opencl3::command_queue::enqueue_fill_buffer(
                    self.queue.get(),
                    buf.buf.get(),
                    &value as *const T as *const c_void,
                    sz,
                    at * sz,
                    m * sz,
                    0,
                    ptr::null(),
                )
            }
            .map_err(|e| cl_err(&format!("filling a buffer on '{}'", self.device), e))?;
            drop(Event::new(ev));
            at += m;
        }
        Ok(())
    }

    /// Enqueue a marker after everything enqueued so far, and flush, so that another thread
    /// may wait for it.
    pub fn marker(&self) -> Result<Marker> {
        // SAFETY: an empty wait list; the returned event is owned by the Marker.
        let ev = unsafe { self.queue.enqueue_marker_with_wait_list(&[]) }
            .map_err(|e| cl_err(&format!("enqueueing a marker on '{}'", self.device), e))?;
        self.flush()?;
        Ok(Marker(ev))
    }

    /// Enqueue `kernel` over `global` work-items (rounded up to a multiple of `local`), with
    /// `args` in the kernel's parameter order (`&[&buffer, &count, &Local::of::<u32>(l)]`).
    /// Does not wait.
    ///
    /// Checked before anything is set or launched, an error naming the kernel, its file and
    /// line, and the argument:
    /// - the arguments against the parameters the source declares ([`Kernel::signature`]):
    ///   their number, and each one's kind (buffer, value, `__local`), address space and type;
    /// - every buffer and `__local` argument against the extent the kernel's characterization
    ///   declares it may index (`indexes = { out = "3 * groups" }`: an expression of the
    ///   kernel's integer arguments, `global`, `local` and `groups`), evaluated for this launch;
    /// - the work-group size against the characterization's `local` and `reduction`.
    ///
    /// What it cannot catch: a kernel that indexes past what its characterization declares
    /// (the declaration is the kernel author's promise, as a SAFETY comment was), and, on PoCL,
    /// such a write lands in host memory. Buffers stay alive until the queue finishes the
    /// launch: a [`DBuf`] is dropped only by its owner, and every blocking read or
    /// [`Queue::finish`] on this in-order queue waits for earlier launches.
    pub fn launch(
        &self,
        kernel: &Kernel,
        global: usize,
        local: Option<usize>,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.launch_marked(kernel, global, local, args).map(drop)
    }

    /// [`Queue::launch`], returning the launch's [`Marker`] (for its device time on a
    /// profiled queue).
    pub fn launch_marked(
        &self,
        kernel: &Kernel,
        global: usize,
        local: Option<usize>,
        args: &[&dyn KernelArg],
    ) -> Result<Marker> {
        let args: Vec<Arg<'_>> = args.iter().map(|a| a.arg()).collect();
        let (rounded, _) = work_sizes(global, local);
        check_launch(kernel, &args)?;
        check_extents(kernel, &args, rounded, local.filter(|&l| l > 0))?;
        // SAFETY: the arguments match the declared parameters (checked above), every buffer
        // holds what the kernel declares it may index and the work-group size is one its
        // characterization accepts (checked above); the declaration is the kernel's promise.
        unsafe { self.enqueue(kernel, global, local, &args) }.map(Marker)
    }

    /// [`Queue::launch`] without the extent and work-group checks (the argument types are
    /// still checked), for kernels whose extents no expression of their arguments can state.
    ///
    /// # Safety
    ///
    /// OpenCL does not know how long a buffer the kernel expects. The caller guarantees that
    /// - every buffer holds at least as many elements as the kernel, with these scalar
    ///   arguments and `global` work-items, indexes (the kernel reads and writes only inside
    ///   the buffers it is given), and a [`Local`] is as many bytes as the kernel indexes
    ///   within;
    /// - `local`, when given, is a size the kernel's code accepts (for instance the exact
    ///   work-group size of a kernel whose local-memory tiles are indexed by the local id);
    /// - where the source could not say a parameter's type (a kernel named through a macro, a
    ///   vector or struct type), the argument has that type.
    pub unsafe fn launch_unchecked(
        &self,
        kernel: &Kernel,
        global: usize,
        local: Option<usize>,
        args: &[&dyn KernelArg],
    ) -> Result<Marker> {
        let args: Vec<Arg<'_>> = args.iter().map(|a| a.arg()).collect();
        check_launch(kernel, &args)?;
        // SAFETY: this function's contract is enqueue's.
        unsafe { self.enqueue(kernel, global, local, &args) }.map(Marker)
    }

    /// # Safety
    ///
    /// As for [`Queue::launch_unchecked`]; the arguments were checked by [`check_launch`].
    unsafe fn enqueue(
        &self,
        kernel: &Kernel,
        global: usize,
        local: Option<usize>,
        args: &[Arg<'_>],
    ) -> Result<Event> {
        let name = kernel.name();
        for (i, a) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: the argument matches the parameter's declared type (checked by
            // check_launch, or, where the source could not say, this function's contract).
            unsafe { a.set(&kernel.cl, i) }
                .map_err(|e| cl_err(&format!("argument {i} of kernel '{name}'"), e))?;
        }
        let (global, local_arr) = work_sizes(global, local);
        let gws = [global];
        let serial = self
            .serial
            .then(|| POCL_KERNELS.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: arguments are set above; the work sizes are plain arrays living across the
        // call; the kernel stays inside the buffers it was given (this function's contract).
        let event = unsafe {
            self.queue.enqueue_nd_range_kernel(
                kernel.cl.get(),
                1,
                ptr::null(),
                gws.as_ptr(),
                local_arr.as_ref().map_or(ptr::null(), |l| l.as_ptr()),
                &[],
            )
        }
        .map_err(|e| {
            cl_err(
                &format!(
                    "launching '{name}' on '{}' (global {global}, local {local:?})",
                    self.device
                ),
                e,
            )
        })?;
        if serial.is_some() {
            event
                .wait()
                .map_err(|e| cl_err(&format!("running '{name}' on '{}'", self.device), e))?;
        }
        Ok(event)
    }

    /// Wait until everything enqueued has finished.
    pub fn finish(&self) -> Result<()> {
        self.queue
            .finish()
            .map_err(|e| cl_err(&format!("waiting for '{}'", self.device), e))
    }

    /// Submit everything enqueued without waiting.
    pub fn flush(&self) -> Result<()> {
        self.queue
            .flush()
            .map_err(|e| cl_err(&format!("flushing '{}'", self.device), e))
    }
}
