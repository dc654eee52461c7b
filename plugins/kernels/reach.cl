// [apsp.reach]: each batch's trees folded over the targets on the device, after the sweep, so
// that only the folded words come back (never the distance rows).
//
// reach_fold: item (s, j) = slice s of tree j walks the target columns i = s, s + slices, ...
// and folds the distance dist[list[i] * vstride + j * tstride] into, per radius r, the count of
// distances <= radii[r] and the sum of weight x decay (0 flat, 1 linear 1 - d/r, 2 exp(-d/r)),
// and into its nearest nk (distance, column) pairs, ordered by distance then column. It writes
// them at partial[(j * slices + s) * (2 nr + 2 nk)]: nr (count, sum bits) pairs, then nk
// (column, distance) pairs (ULONG_MAX when unset). The host merges the slices in order.
// `n` bounds the list's entries (the vertices, or PHAST's sweep positions); the kernel never
// reads it: its characterization (kernels/reach.toml) declares the distances' extent with it,
// and every launch is checked against it. `nr` and `nk` are capped at the private arrays'
// sizes (the host never passes more), so no argument writes past them.

#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifdef WIDE
typedef ulong dist_t;
#define INF ULONG_MAX
#else
typedef uint dist_t;
#define INF UINT_MAX
#endif

// The private arrays' sizes: the host builds with the run's own (-DMAX_RADII=3 ...), so an
// item holds no more than it uses; these are the largest a run may ask.
#ifndef MAX_RADII
#define MAX_RADII 16
#endif
#ifndef MAX_NEAREST
#define MAX_NEAREST 64
#endif

__kernel void reach_fold(__global const dist_t* dist, __global const uint* list, uint count,
                         uint vstride, uint tstride, uint trees, uint slices,
                         __global const ulong* radii, uint nr, __global const double* weights,
                         uint weighted, uint decay, uint nk, __global ulong* partial, uint n) {
    size_t g = get_global_id(0);
    nr = min(nr, (uint)MAX_RADII);
    nk = min(nk, (uint)MAX_NEAREST);
    if (g >= (size_t)trees * slices) return;
    uint j = (uint)(g % trees), s = (uint)(g / trees);
    ulong cnt[MAX_RADII];
    double sum[MAX_RADII];
    ulong nd[MAX_NEAREST];
    uint nc[MAX_NEAREST];
    for (uint r = 0; r < nr; r++) {
        cnt[r] = 0;
        sum[r] = 0.0;
    }
    uint have = 0;
    for (uint i = s; i < count; i += slices) {
        dist_t raw = dist[(size_t)list[i] * vstride + (size_t)j * tstride];
        if (raw == INF) continue;
        ulong d = (ulong)raw;
        double w = weighted ? weights[i] : 1.0;
        for (uint r = 0; r < nr; r++) {
            ulong rad = radii[r];
            if (d <= rad) {
                cnt[r] += 1;
                double f = 1.0;
                if (decay == 1) f = 1.0 - (double)d / (double)rad;
                else if (decay == 2) f = exp(-(double)d / (double)rad);
                sum[r] += w * f;
            }
        }
        // Columns arrive in increasing order: an equal distance goes after those kept.
        if (nk > 0 && (have < nk || d < nd[nk - 1])) {
            uint at = have < nk ? have : nk - 1;
            while (at > 0 && nd[at - 1] > d) {
                nd[at] = nd[at - 1];
                nc[at] = nc[at - 1];
                at--;
            }
            nd[at] = d;
            nc[at] = i;
            if (have < nk) have++;
        }
    }
    __global ulong* out = partial + ((size_t)j * slices + s) * (2 * nr + 2 * nk);
    for (uint r = 0; r < nr; r++) {
        out[2 * r] = cnt[r];
        out[2 * r + 1] = as_ulong(sum[r]);
    }
    for (uint e = 0; e < nk; e++) {
        out[2 * nr + 2 * e] = e < have ? (ulong)nc[e] : ULONG_MAX;
        out[2 * nr + 2 * e + 1] = e < have ? nd[e] : ULONG_MAX;
    }
}
