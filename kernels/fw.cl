// Dense APSP kernels on an n x n row-major int matrix. INF = 2^30-1; the host guarantees
// |path| < 2^28, so a + b never wraps and any value >= INF/2 means unreachable (see
// plugins/fw/mod.rs). Each update is a plain min(c, a + b), which NVIDIA's compiler fuses into
// one add-min instruction.
#define INF 1073741823
#define T 16

// Naive: one item per (i, j) for pivot k. Row k and column k do not change in pass k
// (m[k][k] = 0 without negative cycles), so the pass needs no copy.
__kernel void fw_naive(__global int* m, uint n, uint k) {
    size_t g = get_global_id(0);
    if (g >= (size_t)n * n) return;
    size_t i = g / n, j = g - i * n;
    int c = m[i * n + j];
    m[i * n + j] = min(c, m[i * n + k] + m[(size_t)k * n + j]);
}

inline void load_tile(__local int* t, __global const int* m, uint n, uint r0, uint c0, uint li, uint lj) {
    uint r = r0 + li, c = c0 + lj;
    t[li * T + lj] = (r < n && c < n) ? m[(size_t)r * n + c] : INF;
}

// Floyd-Warshall closure of the diagonal block of side s <= T at (o, o), in local memory.
// Blocked phase 1 (o = kb*T, s = T) and R-Kleene's base case. One work-group of T*T items.
__kernel void fw_diag(__global int* m, uint n, uint o, uint s) {
    __local int t[T * T];
    uint l = get_local_id(0), li = l / T, lj = l % T;
    uint lim = o + s;
    uint r = o + li, c = o + lj;
    t[li * T + lj] = (li < s && lj < s && r < n && c < n) ? m[(size_t)r * n + c] : INF;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < s; k++) {
        int v = min(t[li * T + lj], t[li * T + k] + t[k * T + lj]);
        barrier(CLK_LOCAL_MEM_FENCE);
        t[li * T + lj] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (li < s && lj < s && r < n && c < n && r < lim && c < lim) m[(size_t)r * n + c] = t[li * T + lj];
}

// Phase 2: the blocks of row kb (group g < nb-1) and of column kb (the others), each closed
// against the diagonal block, pivots in order.
__kernel void fw_phase2(__global int* m, uint n, uint kb, uint nb) {
    __local int d[T * T];
    __local int x[T * T];
    uint g = get_group_id(0);
    uint l = get_local_id(0), li = l / T, lj = l % T;
    uint row = g < nb - 1;
    uint other = row ? g : g - (nb - 1);
    if (other >= kb) other++;
    uint r0 = row ? kb * T : other * T, c0 = row ? other * T : kb * T;
    load_tile(d, m, n, kb * T, kb * T, li, lj);
    load_tile(x, m, n, r0, c0, li, lj);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < T; k++) {
        int v = row ? min(x[li * T + lj], d[li * T + k] + x[k * T + lj])
                    : min(x[li * T + lj], x[li * T + k] + d[k * T + lj]);
        barrier(CLK_LOCAL_MEM_FENCE);
        x[li * T + lj] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint r = r0 + li, c = c0 + lj;
    if (r < n && c < n) m[(size_t)r * n + c] = x[li * T + lj];
}

// Phase 3: every block (bi, bj) off row and column kb: X = min(X, C(bi,kb) (x) R(kb,bj)).
__kernel void fw_phase3(__global int* m, uint n, uint kb, uint nb) {
    __local int cl[T * T];
    __local int rw[T * T];
    uint g = get_group_id(0);
    uint bi = g / nb, bj = g % nb;
    if (bi == kb || bj == kb) return; // uniform for the whole group
    uint l = get_local_id(0), li = l / T, lj = l % T;
    load_tile(cl, m, n, bi * T, kb * T, li, lj);
    load_tile(rw, m, n, kb * T, bj * T, li, lj);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint r = bi * T + li, c = bj * T + lj;
    if (r >= n || c >= n) return;
    int v = m[(size_t)r * n + c];
    for (uint k = 0; k < T; k++) v = min(v, cl[li * T + k] + rw[k * T + lj]);
    m[(size_t)r * n + c] = v;
}

// Copy the rows x cols block at (r0, c0) into a compact buffer (R-Kleene operands, which may
// alias the product's target).
__kernel void fw_copy(__global const int* m, __global int* out, uint n, uint r0, uint c0, uint rows, uint cols) {
    size_t g = get_global_id(0);
    if (g >= (size_t)rows * cols) return;
    uint r = g / cols, c = g - r * cols;
    out[g] = m[(size_t)(r0 + r) * n + c0 + c];
}

// C(rows x cols at (r0, c0)) = min(C, A (x) B) with A rows x inner and B inner x cols compact.
__kernel void fw_minplus(__global int* m, __global const int* a, __global const int* b, uint n,
                         uint r0, uint c0, uint rows, uint inner, uint cols) {
    size_t g = get_global_id(0);
    if (g >= (size_t)rows * cols) return;
    uint r = g / cols, c = g - r * cols;
    int v = m[(size_t)(r0 + r) * n + c0 + c];
    for (uint k = 0; k < inner; k++) v = min(v, a[(size_t)r * inner + k] + b[(size_t)k * cols + c]);
    m[(size_t)(r0 + r) * n + c0 + c] = v;
}

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
