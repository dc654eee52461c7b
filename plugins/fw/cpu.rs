//! Floyd-Warshall on the CPU, over rayon. Every inner loop is `c = min(c, a + b)` over a
//! contiguous row, which the compiler vectorizes.

use super::{Val, Variant};
use rayon::prelude::*;

/// Close `m` (n × n, row-major) in place with `variant`; returns it.
pub fn solve<T: Val>(mut m: Vec<T>, n: usize, variant: Variant, tile: usize) -> Vec<T> {
    match variant {
        Variant::Naive => naive(&mut m, n),
        Variant::Blocked => blocked(&mut m, n, tile),
        Variant::RKleene => {
            let mut scratch = Vec::new();
            rkleene(&mut m, n, 0, n, tile, &mut scratch)
        }
    }
    m
}

#[inline(always)]
fn relax_row<T: Val>(row: &mut [T], aik: T, rk: &[T]) {
    T::relax_row(row, aik, rk)
}

/// Rows updated together by [`relax_panel`].
pub(super) const PANEL_ROWS: usize = 4;
/// Columns per register block of [`relax_panel`] (two AVX2 vectors of i32 per row).
const PANEL_COLS: usize = 16;
/// Pivots whose row values are gathered at once.
const PANEL_PIVOTS: usize = 64;

/// `rows` (up to PANEL_ROWS whole rows of n): every row ← min(row, row[k0..k0+t] ⊗ kr), with
/// kr the t closed pivot rows. A PANEL_ROWS × PANEL_COLS block of results stays in registers
/// over all t pivots, so each pivot-row load serves PANEL_ROWS rows. The row's values at the
/// pivots are read before the update: either old or new values give the same minimum (kr is
/// closed over its pivots). Unreachable values need no test: INF + INF fits the element type.
#[inline(always)]
pub(super) fn relax_panel<T: Val>(rows: &mut [T], n: usize, k0: usize, kr: &[T]) {
    let t = kr.len() / n;
    let nr = rows.len() / n;
    if nr != PANEL_ROWS {
        for row in rows.chunks_exact_mut(n) {
            for (kk, rk) in kr.chunks_exact(n).enumerate() {
                let aik = row[k0 + kk];
                if !aik.unreachable() {
                    relax_row(row, aik, rk);
                }
            }
        }
        return;
    }
    for p0 in (0..t).step_by(PANEL_PIVOTS) {
        let pt = PANEL_PIVOTS.min(t - p0);
        let mut a = [[T::ZERO; PANEL_PIVOTS]; PANEL_ROWS];
        for (r, ar) in a.iter_mut().enumerate() {
            ar[..pt].copy_from_slice(&rows[r * n + k0 + p0..r * n + k0 + p0 + pt]);
        }
        let full = n / PANEL_COLS * PANEL_COLS;
        for j in (0..full).step_by(PANEL_COLS) {
            let mut acc = [[T::ZERO; PANEL_COLS]; PANEL_ROWS];
            for (r, accr) in acc.iter_mut().enumerate() {
                accr.copy_from_slice(&rows[r * n + j..r * n + j + PANEL_COLS]);
            }
            for kk in 0..pt {
                let b: &[T; PANEL_COLS] = kr[(p0 + kk) * n + j..(p0 + kk) * n + j + PANEL_COLS]
                    .try_into()
                    .expect("a block of PANEL_COLS");
                for (accr, ar) in acc.iter_mut().zip(&a) {
                    let x = ar[kk];
                    for (c, &bv) in accr.iter_mut().zip(b) {
                        *c = (*c).min(x.add(bv));
                    }
                }
            }
            for (r, accr) in acc.iter().enumerate() {
                rows[r * n + j..r * n + j + PANEL_COLS].copy_from_slice(accr);
            }
        }
        for j in full..n {
            for kk in 0..pt {
                let bv = kr[(p0 + kk) * n + j];
                for (r, ar) in a.iter().enumerate() {
                    let c = &mut rows[r * n + j];
                    *c = (*c).min(ar[kk].add(bv));
                }
            }
        }
    }
}

/// One pass per k: rows in parallel, row k copied first (it is read by every row).
/// O(n³).
pub fn naive<T: Val>(m: &mut [T], n: usize) {
    let mut rk = vec![T::ZERO; n];
    for k in 0..n {
        rk.copy_from_slice(&m[k * n..(k + 1) * n]);
        m.par_chunks_mut(n).for_each(|row| {
            let aik = row[k];
            if !aik.unreachable() {
                relax_row(row, aik, &rk);
            }
        });
    }
}

/// Blocked: for each tile of pivots, first close the tile's own rows (phase 1: Floyd-Warshall
/// on the diagonal block; phase 2: the rest of those rows against it), then every other row
/// against the closed tile rows in parallel (the column and the rest: phases 2 and 3), the
/// last two PANEL_ROWS rows at a time with their results in registers (`relax_panel`). Any path from row i through tile
/// vertices enters the tile at a first vertex k, and the closed row k already covers the rest
/// of the path within the tile. O(n³), tile rows stay in cache.
pub fn blocked<T: Val>(m: &mut [T], n: usize, tile: usize) {
    let mut krows = vec![T::ZERO; tile.min(n) * n];
    let mut k0 = 0;
    while k0 < n {
        let k1 = (k0 + tile).min(n);
        let t = k1 - k0;
        // The tile rows: close the diagonal block, then X = D* ⊗ X over the whole rows (a
        // product with the closed block, so the same register-blocked update).
        fw_block(m, n, k0, t);
        krows[..t * n].copy_from_slice(&m[k0 * n..k1 * n]);
        m[k0 * n..k1 * n]
            .par_chunks_mut(PANEL_ROWS * n)
            .for_each(|rows| T::relax_panel(rows, n, k0, &krows[..t * n]));
        krows[..t * n].copy_from_slice(&m[k0 * n..k1 * n]);
        let kr = &krows[..t * n];
        let (above, rest) = m.split_at_mut(k0 * n);
        let below = &mut rest[t * n..];
        for part in [above, below] {
            part.par_chunks_mut(PANEL_ROWS * n)
                .for_each(|rows| T::relax_panel(rows, n, k0, kr));
        }
        k0 = k1;
    }
}

/// Floyd-Warshall on the block of side `s` at (o, o).
fn fw_block<T: Val>(m: &mut [T], n: usize, o: usize, s: usize) {
    for k in o..o + s {
        let rk: Vec<T> = m[k * n + o..k * n + o + s].to_vec();
        for i in o..o + s {
            let aik = m[i * n + k];
            if !aik.unreachable() {
                relax_row(&mut m[i * n + o..i * n + o + s], aik, &rk);
            }
        }
    }
}

/// R-Kleene on the diagonal block of side `s` at (o, o): split into A B / C D quadrants
/// (A of side h = s/2), then A = A*; B = A·B; C = C·A; D = D + C·B; D = D*; B = B·D;
/// C = D·C; A = A + B·C (all min-plus, "+" is min). O(s³).
pub fn rkleene<T: Val>(
    m: &mut [T],
    n: usize,
    o: usize,
    s: usize,
    base: usize,
    scratch: &mut Vec<T>,
) {
    if s <= base.max(2) {
        fw_block(m, n, o, s);
        return;
    }
    let h = s / 2;
    let (a, d) = (o, o + h);
    let sd = s - h;
    rkleene(m, n, a, h, base, scratch);
    rect_minplus(m, n, (a, d), (a, a), (a, d), h, h, sd, scratch); // B = A·B
    rect_minplus(m, n, (d, a), (d, a), (a, a), sd, h, h, scratch); // C = C·A
    rect_minplus(m, n, (d, d), (d, a), (a, d), sd, h, sd, scratch); // D = D + C·B
    rkleene(m, n, d, sd, base, scratch);
    rect_minplus(m, n, (a, d), (a, d), (d, d), h, sd, sd, scratch); // B = B·D
    rect_minplus(m, n, (d, a), (d, d), (d, a), sd, sd, h, scratch); // C = D·C
    rect_minplus(m, n, (a, a), (a, d), (d, a), h, sd, h, scratch); // A = A + B·C
}

/// `C = min(C, A ⊗ B)` with C rows × cols at `c`, A rows × inner at `a`, B inner × cols at `b`.
#[allow(clippy::too_many_arguments)]
fn rect_minplus<T: Val>(
    m: &mut [T],
    n: usize,
    c: (usize, usize),
    a: (usize, usize),
    b: (usize, usize),
    rows: usize,
    inner: usize,
    cols: usize,
    scratch: &mut Vec<T>,
) {
    scratch.clear();
    for r in 0..inner {
        scratch.extend_from_slice(&m[(b.0 + r) * n + b.1..(b.0 + r) * n + b.1 + cols]);
    }
    let bb = &scratch[..];
    let acopy: Vec<T> = (0..rows)
        .flat_map(|r| m[(a.0 + r) * n + a.1..(a.0 + r) * n + a.1 + inner].to_vec())
        .collect();
    m[c.0 * n..(c.0 + rows) * n]
        .par_chunks_mut(n)
        .enumerate()
        .for_each(|(r, row)| {
            let crow = &mut row[c.1..c.1 + cols];
            for k in 0..inner {
                let aik = acopy[r * inner + k];
                if !aik.unreachable() {
                    relax_row(crow, aik, &bb[k * cols..(k + 1) * cols]);
                }
            }
        });
}

#[cfg(test)]
mod test {
    use super::*;

    fn plain(m: &mut [i64], n: usize) {
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    let (a, b) = (m[i * n + k], m[k * n + j]);
                    if a < i64::INF / 2 && b < i64::INF / 2 && a + b < m[i * n + j] {
                        m[i * n + j] = a + b;
                    }
                }
            }
        }
    }

    fn random(n: usize, seed: u64, neg: bool) -> Vec<i64> {
        let mut x = seed;
        let mut m = vec![i64::INF; n * n];
        for i in 0..n {
            for j in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = (x >> 33) % 100;
                if i == j {
                    m[i * n + j] = 0;
                } else if r < 40 {
                    // Potentials keep negative arcs free of negative cycles: w = base + p(j) - p(i).
                    let base = (r % 10) as i64 + 1;
                    m[i * n + j] = if neg {
                        base + (j as i64 % 7) - (i as i64 % 7)
                    } else {
                        base
                    };
                }
            }
        }
        m
    }

    #[test]
    fn every_variant_matches_a_plain_triple_loop() {
        for &n in &[1usize, 2, 7, 33, 70, 129] {
            for neg in [false, true] {
                let input = random(n, n as u64 * 31 + neg as u64, neg);
                let mut want = input.clone();
                plain(&mut want, n);
                let norm = |v: Vec<i64>| -> Vec<i64> {
                    v.into_iter()
                        .map(|d| if d >= i64::INF / 2 { i64::MAX } else { d })
                        .collect()
                };
                let want = norm(want);
                for (variant, tile) in [
                    (Variant::Naive, 1),
                    (Variant::Blocked, 16),
                    (Variant::Blocked, 5),
                    (Variant::RKleene, 8),
                    (Variant::RKleene, 3),
                ] {
                    assert_eq!(
                        norm(solve(input.clone(), n, variant, tile)),
                        want,
                        "{variant:?} tile {tile} n {n} neg {neg}"
                    );
                    let narrow: Vec<i32> = input
                        .iter()
                        .map(|&d| {
                            if d >= i64::INF / 2 {
                                i32::INF
                            } else {
                                d as i32
                            }
                        })
                        .collect();
                    let got: Vec<i64> = solve(narrow, n, variant, tile)
                        .into_iter()
                        .map(|d| if d.unreachable() { i64::MAX } else { d as i64 })
                        .collect();
                    assert_eq!(got, want, "{variant:?} i32 tile {tile} n {n} neg {neg}");
                }
            }
        }
    }
}
