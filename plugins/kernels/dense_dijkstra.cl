// Kernel of the dense-dijkstra plugin (plugins/dense_dijkstra).

// Dense Dijkstra: one work-group per source, on a matrix of uint weights (UINT_MAX = no arc).
// Each of up to n steps finds the nearest unsettled vertex with a local-memory reduction,
// settles it and relaxes its row (coalesced). dist and done are [batch][n].
__kernel void dd_sssp(__global const uint* w, __global uint* dist, __global uchar* done,
                      __global const uint* src, __local uint* sval, __local uint* sidx, uint n) {
    size_t b = get_group_id(0);
    uint lid = get_local_id(0), L = get_local_size(0);
    __global uint* d = dist + b * n;
    __global uchar* f = done + b * n;
    for (uint u = lid; u < n; u += L) {
        d[u] = (u == src[b]) ? 0 : UINT_MAX;
        f[u] = 0;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint it = 0; it < n; it++) {
        uint best = UINT_MAX, bi = n;
        for (uint u = lid; u < n; u += L) {
            uint du = d[u];
            if (!f[u] && du < best) { best = du; bi = u; }
        }
        sval[lid] = best;
        sidx[lid] = bi;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint h = L / 2; h > 0; h >>= 1) {
            if (lid < h) {
                uint ov = sval[lid + h], oi = sidx[lid + h];
                if (ov < sval[lid] || (ov == sval[lid] && oi < sidx[lid])) { sval[lid] = ov; sidx[lid] = oi; }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        uint u = sidx[0], du = sval[0];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (du == UINT_MAX) break; // every item sees the same value
        if (lid == 0) f[u] = 1;
        __global const uint* row = w + (size_t)u * n;
        for (uint v = lid; v < n; v += L) {
            uint wuv = row[v];
            if (wuv != UINT_MAX && v != u && !f[v]) {
                uint nd = du + wuv;
                if (nd < d[v]) d[v] = nd;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }
}
