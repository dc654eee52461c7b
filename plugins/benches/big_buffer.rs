//! Buffers of 2^31 elements and more on the first GPU: which operation fails? GPU PHAST keeps
//! k x n below 2^31 distances per buffer since two batches above it (3.4 x 10^9) failed with
//! CL_OUT_OF_RESOURCES on NVIDIA's driver. For each length this fills a u32 buffer with
//! clEnqueueFillBuffer (whole, then in pieces of 2^30 elements), writes it with a kernel
//! indexed in 64 bits, and reads back words around 2^31 and 2^32 and the last ones, naming
//! the first wrong word.
//!
//!     cargo bench --bench big_buffer -- [MODE] [LENGTH...]
//!
//! MODE: `all` (default), or one of `fill`, `pieces`, `kernel`, `kernel-read`, alone (a failed
//! command can leave the context unusable, so run each mode in its own process to tell them
//! apart). `kernel-read` writes the buffer with the kernel, then checks every word with a
//! second kernel (counting the wrong ones on the device). Default lengths: 2^31 - 4096,
//! 2^31 + 2^20, 3.4 x 10^9 (what failed).

use tuccompi::device::{DBuf, KernelSource};
mod common;

const PROBE: KernelSource = KernelSource {
    stem: "big_buffer_probe",
    source: r#"
__kernel void probe_set(__global uint* b, ulong n, uint v) {
    size_t i = get_global_id(0);
    size_t step = get_global_size(0);
    for (; i < n; i += step) b[i] = v ^ (uint)(i * 2654435761u);
}
__kernel void probe_count(__global const uint* b, ulong n, uint v, __global uint* wrong) {
    size_t i = get_global_id(0);
    size_t step = get_global_size(0);
    uint bad = 0;
    for (; i < n; i += step) bad += (b[i] != (v ^ (uint)(i * 2654435761u)));
    if (bad) atomic_add(wrong, bad);
}
"#,
    characterization: r#"
[probe_set]
dims = 1
access = "coalesced"
load = "low"
sharing = "low"
grid = "items"
indexes = { b = "n" }

[probe_count]
dims = 1
access = "coalesced"
load = "low"
sharing = "low"
grid = "items"
indexes = { b = "n", wrong = "1" }
"#,
};

fn check(
    q: &tuccompi::device::Queue,
    b: &DBuf<u32>,
    n: usize,
    want: &dyn Fn(usize) -> u32,
) -> tuccompi::Result<String> {
    let mut spots = vec![0usize];
    for c in [1usize << 20, 1 << 31, 1 << 32] {
        if c + 8 <= n {
            spots.push(c - 8);
        }
    }
    spots.push(n - 16);
    for s in spots {
        let len = 16.min(n - s);
        let mut w = vec![0u32; len];
        q.read(b, s, &mut w)?;
        for (i, &x) in w.iter().enumerate() {
            if x != want(s + i) {
                return Ok(format!(
                    "WRONG at {}: {x:#x}, want {:#x}",
                    s + i,
                    want(s + i)
                ));
            }
        }
    }
    Ok("ok".into())
}

fn main() -> tuccompi::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mode = args
        .first()
        .filter(|a| a.parse::<usize>().is_err())
        .cloned()
        .unwrap_or_else(|| "all".into());
    let on = |m: &str| mode == "all" || mode == m;
    let lens: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let lens = if lens.is_empty() {
        vec![(1 << 31) - 4096, (1 << 31) + (1 << 20), 3_400_000_000]
    } else {
        lens
    };
    let d = &common::first_device()?;
    println!(
        "device: {} ({:.1} GiB, largest allocation {:.1} GiB)",
        d.info.name,
        d.info.global_mem as f64 / (1u64 << 30) as f64,
        d.info.max_alloc as f64 / (1u64 << 30) as f64
    );
    let kernel = d.kernel(&PROBE, "", "probe_set")?;
    let count = d.kernel(&PROBE, "", "probe_count")?;
    for n in lens {
        let q = d.queue()?;
        let b = match DBuf::<u32>::new(d, n) {
            Ok(b) => b,
            Err(e) => {
                println!("{n}: allocation refused: {e}");
                continue;
            }
        };
        if on("fill") {
            let r = q
                .fill_range(&b, 7, 0, n, usize::MAX)
                .and_then(|_| q.finish());
            let whole = match r {
                Ok(()) => check(&q, &b, n, &|_| 7)?,
                Err(e) => format!("failed: {e}"),
            };
            println!("{n}: fill (one call): {whole}");
        }
        if on("pieces") {
            let r = q.fill_range(&b, 9, 0, n, 1 << 30).and_then(|_| q.finish());
            let pieces = match r {
                Ok(()) => check(&q, &b, n, &|_| 9)?,
                Err(e) => format!("failed: {e}"),
            };
            println!("{n}: fill (pieces of 2^30): {pieces}");
        }
        if !on("kernel") && !on("kernel-read") {
            continue;
        }
        let v = 0x5a5a_5a5au32;
        let r = q
            .launch(&kernel, 1 << 22, Some(256), &[&b, &(n as u64), &v])
            .and_then(|_| q.finish());
        let set = match r {
            Ok(()) => check(&q, &b, n, &|i| v ^ (i as u32).wrapping_mul(2654435761u32))?,
            Err(e) => format!("failed: {e}"),
        };
        println!("{n}: kernel writes (64-bit index): {set}");
        if on("kernel-read") {
            let mut wrong = DBuf::<u32>::new(d, 1)?;
            q.write(&mut wrong, 0, &[0])?;
            let r = q
                .launch(&count, 1 << 22, Some(256), &[&b, &(n as u64), &v, &wrong])
                .and_then(|_| q.finish());
            let mut w = [0u32];
            let seen = match r.and_then(|_| q.read(&wrong, 0, &mut w)) {
                Ok(()) => format!("{} wrong words of {n}", w[0]),
                Err(e) => format!("failed: {e}"),
            };
            println!("{n}: kernel reads every word back: {seen}");
        }
    }
    Ok(())
}
