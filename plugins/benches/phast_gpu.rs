//! GPU PHAST phase timings against the device's measured copy bandwidth.
//!
//!     cargo bench --bench phast_gpu -- [GRAPH] [K...]
//!
//! Defaults: ../shared/data/osm-moscow.gr.gz, k = 128 256 512 1024. Builds the hierarchy,
//! measures the bandwidth of a 1 GiB device-to-device copy (bytes read + written), then per k
//! the medians of 5 batches: mask zeroing, device and host upward searches, the level sweeps,
//! the summaries, and a whole batch; the sweep's bytes per second against the copy's. Each k
//! with the predictions, with 0, 1, 3 and 5 trailing levels folded into the summaries
//! (`phast_fold`; 0: every level swept, then summarized), and with the bottom level folded and 4
//! or 8 more leading levels in the one launch; then each launch of the sweep alone with the bytes it would move if every tail
//! row came from memory (an upper bound: rows still in the cache move none).

use std::time::Instant;
use tuccompi::config::AutoOr;
use tuccompi::device::DBuf;
mod common;
use tuccompi_plugins::apsp::gpu::phast::profile;
use tuccompi_plugins::apsp::phast::auto::CpuAlgorithm;
use tuccompi_plugins::apsp::phast::AnyHierarchy;
use tuccompi_plugins::apsp::{ApspJob, ApspOptions, GpuAlgorithm};
use tuccompi_plugins::graph::{read_graph, Csr};

fn main() -> tuccompi::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let path = args.first().cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/osm-moscow.gr.gz"
        )
        .into()
    });
    let ks: Vec<usize> = if args.len() > 1 {
        args[1..].iter().map(|a| a.parse().expect("k")).collect()
    } else {
        vec![128, 256, 512, 1024]
    };
    let graph = Csr::from_edges(&read_graph(std::path::Path::new(&path))?)?;
    // The plugin's rule: u32 unless most trees provably overflow.
    let all: Vec<u32> = (0..graph.n as u32).collect();
    let width = tuccompi_plugins::apsp::width::choose(&graph, &all, None);
    let wide = width.wide;
    let t = Instant::now();
    let hierarchy = AnyHierarchy::build(&graph, wide)?;
    let (down, up, bounds) = match &hierarchy {
        AnyHierarchy::Narrow(h) => (h.down_tails.len(), h.up_heads.len(), h.levels.clone()),
        AnyHierarchy::Wide(h) => (h.down_tails.len(), h.up_heads.len(), h.levels.clone()),
    };
    let levels = bounds.len() - 1;
    let sizes: Vec<u32> = bounds.windows(2).map(|w| w[1] - w[0]).collect();
    println!(
        "{path}: n = {}, m = {}, hierarchy built in {:.2} s: {down} downward and {up} upward \
         arcs, {levels} levels",
        graph.n,
        graph.m(),
        t.elapsed().as_secs_f64()
    );
    println!("level sizes in sweep order: {sizes:?}");
    let device = &common::first_device()?;
    println!(
        "device: {} ({} compute units)",
        device.info.name, device.info.compute_units
    );

    // Copy bandwidth: 1 GiB each way, 10 copies after a warm-up.
    let q = device.queue()?;
    let words = (1usize << 28).min(device.info.max_alloc as usize / 4 / 2);
    let src = DBuf::<u32>::new(device, words)?;
    let mut dst = DBuf::<u32>::new(device, words)?;
    q.copy(&src, &mut dst, words)?;
    q.finish()?;
    let reps = 10;
    let t = Instant::now();
    for _ in 0..reps {
        q.copy(&src, &mut dst, words)?;
    }
    q.finish()?;
    let copy_bw = (2 * words * 4 * reps) as f64 / t.elapsed().as_secs_f64();
    println!(
        "copy: {:.1} GB/s (read + write of {} MiB, {reps} copies)",
        copy_bw / 1e9,
        (words * 4) >> 20
    );
    drop((src, dst));

    let n = graph.n;
    let mut job = ApspJob {
        inputs: Vec::new(),
        check: Vec::new(),
        sources: Vec::new(),
        wide,
        width,
        options: ApspOptions {
            gpu_algorithm: GpuAlgorithm::Phast,
            ..Default::default()
        },
        rows: None,
        hierarchy: Some(std::sync::Arc::new(hierarchy)),
        graph,
        cpu_algorithm: CpuAlgorithm::Dijkstra,
        choice: serde_json::Value::Null,
        targets: None,
        geo: Default::default(),
        paths: None,
        origins: Default::default(),
        reach: None,
        router: None,
        selection: None,
        stored: Default::default(),
    };
    println!(
        "{:>5} {:>4} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>10} {:>8}",
        "top",
        "fold",
        "k",
        "levels",
        "zero ms",
        "up dev",
        "up host",
        "sweep ms",
        "summ ms",
        "batch ms",
        "sweep GB/s",
        "of copy",
        "trees/s",
        "overflow"
    );
    // Each k with the predictions, then with 0, 1, 3 and 5 levels folded, then the bottom
    // level folded and 4 or 8 more leading levels in the one launch.
    let mut tables = Vec::new();
    for &k in &ks {
        // Sources spread over the id range.
        job.sources = (0..k).map(|i| (i * n / k) as u32).collect();
        job.options.batch = Some(AutoOr::N(k));
        let mut top = 0;
        for (fold, more) in [
            (None, None),
            (Some(0), None),
            (Some(1), None),
            (Some(3), None),
            (Some(5), None),
            (Some(1), Some(4)),
            (Some(1), Some(8)),
        ] {
            job.options.gpu_top_levels = more.map(|m| AutoOr::N(top + m));
            let p = match profile(&job, device, 5, None, fold) {
                Ok(p) => p,
                Err(e) => {
                    println!("  fold {fold:?}, {more:?} more leading levels: {e}");
                    continue;
                }
            };
            if fold.is_none() {
                top = p.top_levels;
            }
            let bw = p.sweep_bytes as f64 / p.sweep_s;
            println!(
            "{:>5} {:>4} {:>6} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.1} {:>6.0}% {:>10.0} {:>8}",
            p.top_levels,
            p.fold_levels,
            p.k,
            p.levels,
            p.zero_s * 1e3,
            p.up_device_s * 1e3,
            p.up_host_s * 1e3,
            p.sweep_s * 1e3,
            p.summary_s * 1e3,
            p.batch_s * 1e3,
            bw / 1e9,
            100.0 * bw / copy_bw,
            p.k as f64 / p.batch_s,
            p.overflowed
            );
            tables.push(p);
        }
    }
    for p in &tables {
        println!(
            "k = {}, {} levels folded, {} leading levels in one launch: each launch alone",
            p.k, p.fold_levels, p.top_levels
        );
        let total: f64 = p.launches.iter().map(|l| l.seconds).sum();
        for (i, l) in p.launches.iter().enumerate() {
            let folded = p.fold_levels > 0 && i + 1 == p.launches.len();
            let words = l.arcs as u64 + if folded { 0 } else { l.vertices as u64 };
            let bytes = (p.k as u64).next_multiple_of(4) * 4 * words;
            println!(
                "  level {:>3} vertices {:>8} arcs {:>8} {:>8.3} ms ({:>4.1}%) at most {:>7.1} GB/s",
                l.level,
                l.vertices,
                l.arcs,
                l.seconds * 1e3,
                100.0 * l.seconds / total,
                bytes as f64 / l.seconds / 1e9
            );
        }
        println!("  sum of launches {:.3} ms", total * 1e3);
    }
    Ok(())
}
