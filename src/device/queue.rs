//! A handle over one in-order command queue: typed buffers with bounds-checked blocking
//! transfers (safe), and kernel launches with their arguments (`unsafe`: OpenCL cannot tell
//! whether an argument has the type the kernel declares, see [`Queue::launch`]).

use super::{cl_err, Device};
use crate::{Error, Result};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::types::{cl_device_id, CL_BLOCKING, CL_NON_BLOCKING};
use std::ptr;

/// Plain scalar types that may cross to the device byte for byte.
pub trait Scalar: Copy + Default + Send + Sync + 'static + private::Sealed {}
impl Scalar for u32 {}
impl Scalar for u64 {}
impl Scalar for i32 {}
impl Scalar for i64 {}
impl Scalar for u8 {}
mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
    impl Sealed for u8 {}
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

/// A kernel argument.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// A `__global u32*`.
    U32s(&'a DBuf<u32>),
    /// A `__global u64*`.
    U64s(&'a DBuf<u64>),
    /// A `__global i32*`.
    I32s(&'a DBuf<i32>),
    /// A `__global uchar*`.
    U8s(&'a DBuf<u8>),
    /// A `__global i64*`.
    I64s(&'a DBuf<i64>),
    /// A `uint` by value.
    U32(u32),
    /// A `ulong` by value.
    U64(u64),
    /// A `long` by value.
    I64(i64),
    /// A `__local` buffer of this many bytes.
    Local(usize),
}

/// One in-order command queue.
pub struct Queue {
    queue: CommandQueue,
    device: String,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Queue({})", self.device)
    }
}

impl Queue {
    pub(super) fn new(context: &Context, id: cl_device_id, device: &str) -> Result<Self> {
        // SAFETY: `id` is the device the context was created for.
        #[allow(deprecated)]
        let queue = unsafe { CommandQueue::create(context, id, 0) }
            .map_err(|e| cl_err(&format!("creating a queue on '{device}'"), e))?;
        Ok(Queue {
            queue,
            device: device.into(),
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

    /// Enqueue `kernel` over `global` work-items (rounded up to a multiple of `local`), with
    /// `args` in the kernel's parameter order. Does not wait. A wrong number of arguments is
    /// refused (an error, before any is set).
    ///
    /// # Safety
    ///
    /// OpenCL does not check argument types: the device reads whatever it is given as what the
    /// kernel declares. The caller guarantees that
    /// - each argument has the kernel's type for that parameter: [`Arg::U32s`] for a
    ///   `__global uint*`, [`Arg::U64s`] for `__global ulong*`, [`Arg::I32s`] for `__global int*`,
    ///   [`Arg::U8s`] for `__global uchar*`, [`Arg::I64s`] for `__global long*`, [`Arg::U32`] for
    ///   `uint`, [`Arg::U64`] for `ulong`, [`Arg::I64`] for `long`, [`Arg::Local`] for a
    ///   `__local` pointer (the byte count the kernel indexes within);
    /// - every buffer holds at least as many elements as the kernel, with these scalar
    ///   arguments and `global` work-items, indexes (the kernel reads and writes only inside
    ///   the buffers it is given);
    /// - `local`, when given, is a size the kernel's code accepts (for instance the exact
    ///   work-group size of a kernel whose local-memory tiles are indexed by the local id).
    ///
    /// Buffers must also stay alive until the queue finishes the launch: [`DBuf`] is dropped
    /// only by its owner, and every blocking read or [`Queue::finish`] on this in-order queue
    /// waits for earlier launches.
    pub unsafe fn launch(
        &self,
        kernel: &Kernel,
        global: usize,
        local: Option<usize>,
        args: &[Arg<'_>],
    ) -> Result<()> {
        let name = kernel.function_name().unwrap_or_default();
        let expected = kernel.num_args().unwrap_or(args.len() as u32) as usize;
        if expected != args.len() {
            return Err(Error::Device(format!(
                "kernel '{name}' takes {expected} arguments, {} given (a bug in the GPU half)",
                args.len()
            )));
        }
        for (i, a) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: each argument is a live cl_mem handle or a plain scalar of the type the
            // kernel declares at this position (this function's contract; the count was checked
            // above); a local size is a byte count.
            let r = unsafe {
                match *a {
                    Arg::U32s(b) => kernel.set_arg(i, &b.buf.get()),
                    Arg::U64s(b) => kernel.set_arg(i, &b.buf.get()),
                    Arg::I32s(b) => kernel.set_arg(i, &b.buf.get()),
                    Arg::U8s(b) => kernel.set_arg(i, &b.buf.get()),
                    Arg::I64s(b) => kernel.set_arg(i, &b.buf.get()),
                    Arg::U32(v) => kernel.set_arg(i, &v),
                    Arg::U64(v) => kernel.set_arg(i, &v),
                    Arg::I64(v) => kernel.set_arg(i, &v),
                    Arg::Local(bytes) => kernel.set_arg_local_buffer(i, bytes),
                }
            };
            r.map_err(|e| cl_err(&format!("argument {i} of kernel '{name}'"), e))?;
        }
        let (global, local_arr) = match local {
            Some(l) if l > 0 => (global.div_ceil(l).max(1) * l, Some([l])),
            _ => (global.max(1), None),
        };
        let gws = [global];
        // SAFETY: arguments are set above; the work sizes are plain arrays living across the
        // call; the kernel stays inside the buffers it was given (this function's contract).
        unsafe {
            self.queue.enqueue_nd_range_kernel(
                kernel.get(),
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
        Ok(())
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
