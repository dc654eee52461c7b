// Predecessors from a batch of shortest-path trees' distances (the apsp plugin's paths and
// predecessors, plugins/apsp/paths.rs). One work-item per (tree, vertex): the first in-arc
// (u, w) of the original graph, in the in-arcs' order, with d(u) + w = d(v) and w > 0 gives
// v's predecessor u; a vertex whose tight in-arcs all weigh 0 is PENDING (the host settles
// its zero-weight component by a search from the tree); a finite vertex without a tight in-arc
// is UNEXPLAINED (distances that are not a tree's: reported as a bug). The source and
// unreachable vertices are NONE.
//
// Distances are read where the algorithm keeps them: element index[v] * vstride + j * jstride
// (PHAST: index = sweep positions, vstride = trees at once, jstride = 1; the frontier
// algorithms: index = identity, vstride = 1, jstride = n). Rows j0 .. j0 + rows are computed,
// row r of `pred` (n words) being tree j0 + r. `m` is the in-arcs' count (in_tails' and
// in_weights' length, in_offsets[n]), which the kernel never reads: its characterization
// (kernels/paths.toml) declares their extent with it, and every launch is checked against it.

#ifdef WIDE
typedef ulong dist_t;
#define INF ULONG_MAX
#else
typedef uint dist_t;
#define INF UINT_MAX
#endif

#define NONE 0xFFFFFFFFu
#define PENDING 0xFFFFFFFEu
#define UNEXPLAINED 0xFFFFFFFDu

__kernel void paths_pred(__global const dist_t* dist, __global const uint* index, uint vstride,
                         uint jstride, __global const uint* in_offsets,
                         __global const uint* in_tails, __global const uint* in_weights,
                         __global const uint* src, uint n, uint j0, uint rows,
                         __global uint* pred, uint m) {
    size_t i = get_global_id(0);
    if (i >= (size_t)rows * n) return;
    uint r = (uint)(i / n), v = (uint)(i % n), j = j0 + r;
    size_t col = (size_t)j * jstride;
    dist_t dv = dist[(size_t)index[v] * vstride + col];
    uint p = NONE;
    if (dv != INF && v != src[j]) {
        int zero = 0;
        p = UNEXPLAINED;
        for (uint e = in_offsets[v]; e < in_offsets[v + 1]; e++) {
            uint u = in_tails[e];
            dist_t du = dist[(size_t)index[u] * vstride + col];
            ulong w = in_weights[e];
            if (du == INF || (ulong)du + w != (ulong)dv) continue;
            if (w > 0) {
                p = u;
                break;
            }
            zero = 1;
        }
        if (p == UNEXPLAINED && zero) p = PENDING;
    }
    pred[i] = p;
}
