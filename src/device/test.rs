//! The device layer on a real OpenCL device (PoCL in CI): buffers, bounds, launches, programs.
//! Without OpenCL these tests print `NOT RUN` and pass, unless `TUCCOMPI_REQUIRE_OPENCL` is set.

use super::*;

const TEST_KERNELS: KernelSource = KernelSource {
    stem: "device_test",
    source: "__kernel void axpy(__global uint* a, uint x, uint n) {\n\
             size_t i = get_global_id(0);\n\
             if (i < n) a[i] = 2 * a[i] + x;\n\
             }\n",
    characterization:
        "[axpy]\ndims = 1\naccess = \"coalesced\"\nload = \"low\"\nsharing = \"low\"\n\
                       grid = \"items\"\nindexes = { a = \"n\" }\n",
};

/// The first device of any type, or `None` (with a message) when OpenCL is absent.
fn device() -> Option<Arc<Device>> {
    let filter = Filter {
        device_type: "all".into(),
        names: vec![],
    };
    match discover(&filter) {
        Ok(mut d) => Some(d.swap_remove(0)),
        Err(e) => {
            if std::env::var_os("TUCCOMPI_REQUIRE_OPENCL").is_some() {
                panic!("TUCCOMPI_REQUIRE_OPENCL is set but OpenCL is unusable: {e}");
            }
            eprintln!("NOT RUN: OpenCL test skipped: {e}");
            None
        }
    }
}

#[test]
fn buffers_round_trip_and_refuse_out_of_bounds() {
    let Some(dev) = device() else { return };
    let q = dev.queue().unwrap();
    let mut b = DBuf::<u64>::new(&dev, 10).unwrap();
    assert_eq!(b.len(), 10);
    q.write(&mut b, 0, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        .unwrap();
    q.write(&mut b, 8, &[u64::MAX, 42]).unwrap();
    let mut out = [0u64; 4];
    q.read(&b, 6, &mut out).unwrap();
    assert_eq!(out, [7, 8, u64::MAX, 42]);
    let err = q.write(&mut b, 9, &[1, 2]).unwrap_err().to_string();
    assert!(err.contains("outside a buffer of 10"), "{err}");
    let err = q.read(&b, usize::MAX, &mut out).unwrap_err().to_string();
    assert!(err.contains("outside a buffer"), "{err}");
    let v = q.read_one_pipelined(&b, 9, || Ok(())).unwrap();
    assert_eq!(v, 42);
}

#[test]
fn a_launch_computes_and_a_wrong_argument_count_is_refused() {
    let Some(dev) = device() else { return };
    let q = dev.queue().unwrap();
    let k = dev.kernel(&TEST_KERNELS, "", "axpy").unwrap();
    let n = 1000usize;
    let mut a = DBuf::<u32>::new(&dev, n).unwrap();
    let input: Vec<u32> = (0..n as u32).collect();
    q.write(&mut a, 0, &input).unwrap();
    q.launch(&k, n, Some(64), &[&a, &5u32, &(n as u32)])
        .unwrap();
    let mut out = vec![0u32; n];
    q.read(&a, 0, &mut out).unwrap();
    assert!(out.iter().enumerate().all(|(i, &v)| v == 2 * i as u32 + 5));
    let err = q.launch(&k, n, None, &[&a, &5u32]).unwrap_err().to_string();
    assert!(
        err.contains("kernel 'axpy' (device_test.cl (embedded):1) takes 3 arguments")
            && err.contains("2 given"),
        "{err}"
    );
}

#[test]
fn programs_are_built_once_and_build_errors_show_the_log() {
    let Some(dev) = device() else { return };
    let p1 = dev.program(&TEST_KERNELS, "").unwrap();
    let p2 = dev.program(&TEST_KERNELS, "").unwrap();
    assert!(Arc::ptr_eq(&p1, &p2), "the program was built twice");
    let p3 = dev.program(&TEST_KERNELS, "-DUNUSED=1").unwrap();
    assert!(!Arc::ptr_eq(&p1, &p3), "other options need another build");
    let broken = KernelSource {
        stem: "device_test_broken",
        source: "__kernel void f(__global uint* a) { a[0] = undeclared_name; }\n",
        characterization: "",
    };
    let err = dev.program(&broken, "").unwrap_err().to_string();
    assert!(
        err.contains("device_test_broken.cl (embedded) failed to build")
            && err.contains("undeclared_name"),
        "{err}"
    );
    // The log names the file that was read at the error's line, not the driver's temporary
    // file.
    assert!(err.contains("device_test_broken.cl:1:"), "{err}");
    assert!(
        !err.contains("kcache") && !err.contains("tempfile"),
        "{err}"
    );
    let err = dev
        .kernel(&TEST_KERNELS, "", "no_such_kernel")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no_such_kernel") && err.contains("the file declares axpy"),
        "{err}"
    );
}

#[test]
fn rows_pinned_memory_fill_and_markers() {
    let Some(dev) = device() else { return };
    let q = dev.profiled_queue().unwrap();
    // A 5 x 8 buffer (ld 8) holding 5 x 6 host rows: columns 6..8 keep the fill value.
    let b = DBuf::<i32>::new(&dev, 40).unwrap();
    q.fill(&b, -7).unwrap();
    let mut pinned = Pinned::<i32>::new(&dev, 30).unwrap();
    for (i, v) in pinned.as_mut_slice().iter_mut().enumerate() {
        *v = i as i32;
    }
    q.write_rows(&b, 8, 0, 6, &pinned.as_slice()[..18]).unwrap();
    q.write_rows(&b, 8, 3, 6, &pinned.as_slice()[18..30])
        .unwrap();
    let mut all = [0i32; 40];
    q.read(&b, 0, &mut all).unwrap();
    for r in 0..5 {
        for c in 0..8 {
            let want = if c < 6 { (r * 6 + c) as i32 } else { -7 };
            assert_eq!(all[r * 8 + c], want, "row {r} column {c}");
        }
    }
    // Rows 1..3 back, packed; ld == cols takes the plain path.
    let mut two = [0i32; 12];
    q.read_rows(&b, 8, 1, 6, &mut two).unwrap();
    assert_eq!(two[..6], [6, 7, 8, 9, 10, 11]);
    let mut whole = [0i32; 16];
    q.read_rows(&b, 8, 3, 8, &mut whole).unwrap();
    assert_eq!(whole[6..8], [-7, -7]);
    // Out of bounds and ragged rows are refused.
    let e = q.write_rows(&b, 8, 4, 6, &[0; 12]).unwrap_err().to_string();
    assert!(e.contains("outside a buffer"), "{e}");
    let e = q
        .read_rows(&b, 8, 0, 6, &mut [0; 7])
        .unwrap_err()
        .to_string();
    assert!(e.contains("rows of 6"), "{e}");
    // A launch's marker carries its device time; a plain marker can be waited for.
    let k = dev.kernel(&TEST_KERNELS, "", "axpy").unwrap();
    let u = DBuf::<u32>::new(&dev, 64).unwrap();
    let m = q.launch_marked(&k, 64, None, &[&u, &1u32, &64u32]).unwrap();
    q.marker().unwrap().wait().unwrap();
    assert!(m.seconds().unwrap() >= 0.0);
}

/// Fills of a range in pieces: every piece lands (uneven last piece), elements outside the
/// range keep their values, and a range past the buffer is refused.
#[test]
fn fills_of_a_range_in_pieces() {
    let Some(dev) = device() else { return };
    let q = dev.queue().unwrap();
    let b = DBuf::<u32>::new(&dev, 100).unwrap();
    q.fill(&b, 1).unwrap();
    // Elements 10..87 in pieces of 7 (11 pieces, the last of 0 left over: 77 = 11 x 7), then
    // 20..45 in pieces of 6 (the last of 1).
    q.fill_range(&b, 5, 10, 77, 7).unwrap();
    q.fill_range(&b, 9, 20, 25, 6).unwrap();
    let mut all = [0u32; 100];
    q.read(&b, 0, &mut all).unwrap();
    for (i, &v) in all.iter().enumerate() {
        let want = if (20..45).contains(&i) {
            9
        } else if (10..87).contains(&i) {
            5
        } else {
            1
        };
        assert_eq!(v, want, "element {i}");
    }
    let e = q.fill_range(&b, 0, 90, 11, 4).unwrap_err().to_string();
    assert!(e.contains("90..101") && e.contains("buffer of 100"), "{e}");
}

/// Fills of buffers at the platform's bound and past it are refused with an error naming the
/// size, instead of the hang NVIDIA's driver gives (bound 2^31 elements there, none elsewhere);
/// a buffer below the bound is filled.
#[test]
fn fills_of_buffers_at_the_platform_bound_are_refused() {
    assert_eq!(queue::fill_bound("NVIDIA CUDA"), 1 << 31);
    assert_eq!(queue::fill_bound("Portable Computing Language"), usize::MAX);
    let Some(dev) = device() else { return };
    let q = Queue::new(
        &dev.context,
        dev.cl.id(),
        &dev.info.name,
        false,
        dev.is_pocl(),
        100,
    )
    .unwrap();
    let b = DBuf::<u32>::new(&dev, 100).unwrap();
    let e = q.fill(&b, 1).unwrap_err().to_string();
    assert!(
        e.contains("a buffer of 100 elements") && e.contains("reset it with a kernel"),
        "{e}"
    );
    let small = DBuf::<u32>::new(&dev, 99).unwrap();
    q.fill(&small, 7).unwrap();
    let mut all = [0u32; 99];
    q.read(&small, 0, &mut all).unwrap();
    assert!(all.iter().all(|&v| v == 7));
}

/// One kernel with many global sizes from two queues at once (on PoCL they run one at a time,
/// see `POCL_KERNELS`); every result as on the host.
#[test]
fn one_kernel_with_many_grid_sizes_on_two_queues() {
    let Some(dev) = device() else { return };
    let n = 64 * 300;
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let dev = &dev;
            s.spawn(move || {
                let q = dev.queue().unwrap();
                let k = dev.kernel(&TEST_KERNELS, "", "axpy").unwrap();
                let mut a = DBuf::<u32>::new(dev, n).unwrap();
                let mut want = vec![t; n];
                q.write(&mut a, 0, &want).unwrap();
                for i in 0..300usize {
                    // Growing sizes: each new widest grid is a new entry in PoCL's cache
                    // while the other queue's launches are in flight.
                    let count = 64 * (1 + i);
                    q.launch(&k, count, Some(64), &[&a, &1u32, &(count as u32)])
                        .unwrap();
                    for w in &mut want[..count] {
                        *w = w.wrapping_mul(2).wrapping_add(1);
                    }
                }
                let mut out = vec![0u32; n];
                q.read(&a, 0, &mut out).unwrap();
                assert_eq!(out, want, "queue {t}");
            });
        }
    });
}

#[test]
fn a_dump_binaries_path_naming_a_file_says_so() {
    let d = std::env::temp_dir().join(format!("tuccompi-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("file"), "x").unwrap();
    let e = super::dump_dir(&d.join("file")).unwrap_err().to_string();
    assert!(
        e.contains("TUCCOMPI_DUMP_BINARIES") && e.contains("not a directory"),
        "{e}"
    );
    super::dump_dir(&d.join("new/sub")).unwrap();
    assert!(d.join("new/sub").is_dir());
    let _ = std::fs::remove_dir_all(&d);
}

const TYPED_KERNELS: KernelSource = KernelSource {
    stem: "device_typed",
    source: "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n\
             __kernel void scale(__global double* d, __global float* f, double a, float b,\n\
                                 __global short* s, short c, uint n) {\n\
             size_t i = get_global_id(0);\n\
             if (i < n) { d[i] = d[i] * a; f[i] = f[i] * b; s[i] = s[i] + c; }\n\
             }\n",
    characterization: "[scale]\nindexes = { d = \"n\", f = \"n\", s = \"n\" }\n",
};

/// Floats and every width cross to the device and back; a launch whose arguments do not match
/// the kernel's parameters is refused before anything runs, naming the kernel, the argument
/// and both types; without `cl_khr_fp64` a program using double is refused naming the device.
#[test]
fn floats_launch_and_mismatched_arguments_are_refused() {
    let Some(mut dev) = device() else { return };
    let q = dev.queue().unwrap();
    let k = dev.kernel(&TYPED_KERNELS, "", "scale").unwrap();
    let n = 100usize;
    let mut d = DBuf::<f64>::new(&dev, n).unwrap();
    let mut f = DBuf::<f32>::new(&dev, n).unwrap();
    let mut s = DBuf::<i16>::new(&dev, n).unwrap();
    let dv: Vec<f64> = (0..n).map(|i| i as f64 + 0.25).collect();
    let fv: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let sv: Vec<i16> = (0..n).map(|i| -(i as i16)).collect();
    q.write(&mut d, 0, &dv).unwrap();
    q.write(&mut f, 0, &fv).unwrap();
    q.write(&mut s, 0, &sv).unwrap();
    let good = [
        Arg::buf(&d),
        Arg::F32s(&f),
        Arg::F64(1.5),
        Arg::value(2.0f32),
        Arg::I16s(&s),
        Arg::I16(7),
        Arg::U32(n as u32),
    ];
    let refs: Vec<&dyn KernelArg> = good.iter().map(|a| a as &dyn KernelArg).collect();
    q.launch(&k, n, None, &refs).unwrap();
    let (mut d2, mut f2, mut s2) = (vec![0.0f64; n], vec![0.0f32; n], vec![0i16; n]);
    q.read(&d, 0, &mut d2).unwrap();
    q.read(&f, 0, &mut f2).unwrap();
    q.read(&s, 0, &mut s2).unwrap();
    for i in 0..n {
        assert_eq!(d2[i], dv[i] * 1.5);
        assert_eq!(f2[i], fv[i] * 2.0);
        assert_eq!(s2[i], sv[i] + 7);
    }
    let u = DBuf::<u32>::new(&dev, n).unwrap();
    let cases: [(usize, Arg<'_>, &str); 4] = [
        (
            0,
            Arg::U32s(&u),
            "argument 0 'd' is declared __global double*, but the GPU half passes __global uint* (a DBuf<u32>)",
        ),
        (2, Arg::F32(1.0), "argument 2 'a' is declared double, but the GPU half passes float by value"),
        (6, Arg::U64(5), "argument 6 'n' is declared uint, but the GPU half passes ulong by value"),
        (1, Arg::Local(64), "argument 1 'f' is declared __global float*, but the GPU half passes __local memory"),
    ];
    for (i, wrong, want) in cases {
        let mut args = good;
        args[i] = wrong;
        let refs: Vec<&dyn KernelArg> = args.iter().map(|a| a as &dyn KernelArg).collect();
        let err = q.launch(&k, n, None, &refs).unwrap_err().to_string();
        assert!(
            err.contains("kernel 'scale' (device_typed.cl (embedded):2)") && err.contains(want),
            "{err}"
        );
    }
    // The buffers are unchanged by the refused launches.
    q.read(&d, 0, &mut d2).unwrap();
    assert_eq!(d2[1], dv[1] * 1.5);
    drop((k, q, d, f, s, u));
    // A device without fp64.
    let Some(dev) = Arc::get_mut(&mut dev) else {
        panic!("the test's device is shared")
    };
    dev.info.fp64 = false;
    let name = dev.info.name.clone();
    let mut other = TYPED_KERNELS;
    other.stem = "device_typed_nofp64";
    let err = dev.program(&other, "").unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "'{name}' has no double precision (no cl_khr_fp64)"
        )) && err.contains("device_typed_nofp64.cl"),
        "{err}"
    );
}

/// The memory check leaves 10% to the driver and divides the rest among the processes of the
/// machine that use the device: a batch that fits one process is refused for two, naming the
/// share.
#[test]
fn memory_checks_divide_the_device_among_its_processes() {
    let mut info = DeviceInfo::described("gpu", 132, 1024);
    info.global_mem = 80 << 30;
    info.max_alloc = 20 << 30;
    // 60 GiB in buffers of 15 GiB: within 72 GiB alone, over the 36 GiB of two processes.
    assert!(fits(&info, 60 << 30, 15 << 30, 1, "a batch").is_ok());
    let e = fits(&info, 60 << 30, 15 << 30, 2, "a batch")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a batch needs 61440.0 MiB") && e.contains("2 processes of this machine"),
        "{e}"
    );
    // The largest allocation still bounds one buffer.
    let e = fits(&info, 30 << 30, 21 << 30, 1, "a batch")
        .unwrap_err()
        .to_string();
    assert!(e.contains("largest allocation 20480.0 MiB"), "{e}");
}

const CHECKED_KERNELS: KernelSource = KernelSource {
    stem: "device_checked",
    source: "__kernel void sums(__global const uint* x, ulong count, __global ulong* out,\n\
                                __local ulong* part) {\n\
             size_t l = get_local_id(0), g = get_group_id(0), n = get_local_size(0);\n\
             ulong s = 0;\n\
             for (size_t i = g * n + l; i < count; i += get_global_size(0)) s += x[i];\n\
             part[l] = s;\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             if (l == 0) { for (size_t k = 1; k < n; k++) s += part[k]; out[g] = s; }\n\
             }\n\
             __kernel void bare(__global uint* a) { a[get_global_id(0)] = 1; }\n\
             __kernel void fixed(__global uint* a) { a[get_global_id(0)] = 2; }\n",
    characterization: "[sums]\nreduction = true\n\
                       indexes = { x = \"count\", out = \"groups\", part = \"local\" }\n\
                       [bare]\n[fixed]\nlocal = 32\nindexes = { a = \"global\" }\n",
};

/// A launch is checked against the extents the characterization declares: it runs when every
/// buffer and local array holds them; a buffer too short, local memory too small, a buffer
/// without a declared extent, and a work-group size the characterization excludes are each
/// refused before anything runs, naming the kernel and the argument.
#[test]
fn launches_are_checked_against_the_declared_extents() {
    let Some(dev) = device() else { return };
    let q = dev.queue().unwrap();
    let k = dev.kernel(&CHECKED_KERNELS, "", "sums").unwrap();
    let count = 1000u64;
    let mut x = DBuf::<u32>::new(&dev, 1000).unwrap();
    q.write(&mut x, 0, &(0..1000u32).collect::<Vec<_>>())
        .unwrap();
    let out = DBuf::<u64>::new(&dev, 4).unwrap();
    // 4 groups of 64: out holds 4, part 64 ulongs.
    q.launch(
        &k,
        256,
        Some(64),
        &[&x, &count, &out, &Local::of::<u64>(64)],
    )
    .unwrap();
    let mut sums = [0u64; 4];
    q.read(&out, 0, &mut sums).unwrap();
    assert_eq!(sums.iter().sum::<u64>(), 999 * 1000 / 2);
    let refused = |global: usize, local: usize, args: &[&dyn KernelArg]| {
        q.launch(&k, global, Some(local), args)
            .unwrap_err()
            .to_string()
    };
    // Five groups need out[5].
    let e = refused(320, 64, &[&x, &count, &out, &Local::of::<u64>(64)]);
    assert!(
        e.contains("kernel 'sums' (device_checked.cl (embedded):1)")
            && e.contains("argument 2 'out' holds 4 elements, but the kernel may index 5"),
        "{e}"
    );
    // count past the buffer.
    let e = refused(256, 64, &[&x, &1001u64, &out, &Local::of::<u64>(64)]);
    assert!(
        e.contains("argument 0 'x' holds 1000 elements") && e.contains("1001"),
        "{e}"
    );
    // Local memory of 32 ulongs for groups of 64.
    let e = refused(256, 64, &[&x, &count, &out, &Local::of::<u64>(32)]);
    assert!(
        e.contains("'part' holds 256 bytes, but the kernel may index 512"),
        "{e}"
    );
    // A reduction's group size is a power of two.
    let e = refused(240, 48, &[&x, &count, &out, &Local::of::<u64>(48)]);
    assert!(e.contains("power-of-two"), "{e}");
    // No declared extent: refused, saying what to add.
    let bare = dev.kernel(&CHECKED_KERNELS, "", "bare").unwrap();
    let a = DBuf::<u32>::new(&dev, 64).unwrap();
    let e = q.launch(&bare, 64, None, &[&a]).unwrap_err().to_string();
    assert!(
        e.contains("'a'") && e.contains("no declared extent") && e.contains("indexes"),
        "{e}"
    );
    // The characterization's exact local size.
    let fixed = dev.kernel(&CHECKED_KERNELS, "", "fixed").unwrap();
    let e = q
        .launch(&fixed, 64, Some(64), &[&a])
        .unwrap_err()
        .to_string();
    assert!(e.contains("exactly 32"), "{e}");
    q.launch(&fixed, 64, Some(32), &[&a]).unwrap();
    // The unchecked launch runs what the checks would refuse (here within bounds).
    // SAFETY: bare writes a[global id] for 64 items into a buffer of 64.
    unsafe { q.launch_unchecked(&bare, 64, None, &[&a]) }.unwrap();
    let mut all = [0u32; 64];
    q.read(&a, 0, &mut all).unwrap();
    assert!(all.iter().all(|&v| v == 1));
    // An extent naming something that is not an integer argument is refused when the kernel
    // is made, naming the file and the key.
    let bad = KernelSource {
        stem: "device_checked_bad",
        source: "__kernel void f(__global uint* a, float s) { a[0] = s; }\n",
        characterization: "[f]\nindexes = { a = \"s + 1\" }\n",
    };
    let e = dev.kernel(&bad, "", "f").unwrap_err().to_string();
    assert!(
        e.contains("device_checked_bad.toml") && e.contains("reads 's'"),
        "{e}"
    );
}
