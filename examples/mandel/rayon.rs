#![forbid(unsafe_code)]
//! The mandel plugin's job in plain rayon, its baseline: `mandel-rayon WIDTH HEIGHT MAX_ITER
//! OUT.npy` writes the same `counts.npy`.
use npyz::WriterBuilder;
use rayon::prelude::*;

fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize| a.get(i).and_then(|s| s.parse().ok());
    let (Some(w), Some(h), Some(max_iter), Some(out)) = (arg(1), arg(2), arg(3), a.get(4)) else {
        eprintln!("usage: mandel-rayon WIDTH HEIGHT MAX_ITER OUT.npy");
        std::process::exit(2);
    };
    let (dx, dy) = (mandel::SIDE / w as f64, mandel::SIDE / h as f64);
    let mut counts = vec![0u32; w as usize * h as usize];
    counts
        .par_chunks_mut(w as usize)
        .enumerate()
        .for_each(|(r, row)| {
            let cy = mandel::Y0 + r as f64 * dy;
            for (i, c) in row.iter_mut().enumerate() {
                *c = mandel::escape(mandel::X0 + i as f64 * dx, cy, max_iter);
            }
        });
    let shape = [h as u64, w as u64];
    let mut f = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(std::io::BufWriter::new(std::fs::File::create(out)?))
        .begin_nd()?;
    f.extend(counts)?;
    f.finish()
}
