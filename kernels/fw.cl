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

// Floyd-Warshall closure of the diagonal block of side s <= T at (o, o), in local memory:
// R-Kleene's base case. One work-group of T*T items.
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

// Blocked Floyd-Warshall with 64 x 64 tiles and 4 x 4 register tiles: a work-group of 256
// items (16 x 16) owns a tile; item (ty, tx) holds rows 4ty..4ty+3 and columns 4tx..4tx+3.
// Row k and column k of a tile do not change in pass k (d[k][k] = 0), so every phase updates
// in place with one barrier per pivot. Padding outside the matrix is INF and never written.
#define BT 64
#define RT 4

inline void load_bt(__local int* t, __global const int* m, uint n, uint r0, uint c0, uint l) {
    for (uint e = l; e < BT * BT; e += 256) {
        uint r = r0 + e / BT, c = c0 + e % BT;
        t[e] = (r < n && c < n) ? m[(size_t)r * n + c] : INF;
    }
}

inline void store_bt(__local const int* t, __global int* m, uint n, uint r0, uint c0, uint l) {
    for (uint e = l; e < BT * BT; e += 256) {
        uint r = r0 + e / BT, c = c0 + e % BT;
        if (r < n && c < n) m[(size_t)r * n + c] = t[e];
    }
}

// Phase 1: close the diagonal tile kb.
__kernel void fwb_phase1(__global int* m, uint n, uint kb) {
    __local int d[BT * BT];
    uint l = get_local_id(0), ty = l / 16, tx = l % 16;
    load_bt(d, m, n, kb * BT, kb * BT, l);
    for (uint k = 0; k < BT; k++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        int rk[RT];
        for (uint c = 0; c < RT; c++) rk[c] = d[k * BT + tx * RT + c];
        for (uint r = 0; r < RT; r++) {
            uint i = ty * RT + r;
            int a = d[i * BT + k];
            for (uint c = 0; c < RT; c++) d[i * BT + tx * RT + c] = min(d[i * BT + tx * RT + c], a + rk[c]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    store_bt(d, m, n, kb * BT, kb * BT, l);
}

// Phase 2: the tiles of row kb (groups g < nb-1) and column kb (the others).
__kernel void fwb_phase2(__global int* m, uint n, uint kb, uint nb) {
    __local int d[BT * BT];
    __local int x[BT * BT];
    uint g = get_group_id(0), l = get_local_id(0), ty = l / 16, tx = l % 16;
    uint row = g < nb - 1;
    uint other = row ? g : g - (nb - 1);
    if (other >= kb) other++;
    uint r0 = row ? kb * BT : other * BT, c0 = row ? other * BT : kb * BT;
    load_bt(d, m, n, kb * BT, kb * BT, l);
    load_bt(x, m, n, r0, c0, l);
    for (uint k = 0; k < BT; k++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint r = 0; r < RT; r++) {
            uint i = ty * RT + r;
            for (uint c = 0; c < RT; c++) {
                uint j = tx * RT + c;
                int v = row ? d[i * BT + k] + x[k * BT + j] : x[i * BT + k] + d[k * BT + j];
                x[i * BT + j] = min(x[i * BT + j], v);
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    store_bt(x, m, n, r0, c0, l);
}

// Phase 3: every tile (bi, bj) off row and column kb: X = min(X, C(bi,kb) (x) R(kb,bj)), the
// 4 x 4 results in registers, both operand tiles in local memory.
__kernel void fwb_phase3(__global int* m, uint n, uint kb, uint nb) {
    __local int cl[BT * BT];
    __local int rw[BT * BT];
    uint g = get_group_id(0);
    uint bi = g / (nb - 1), bj = g % (nb - 1);
    if (bi >= kb) bi++;
    if (bj >= kb) bj++;
    uint l = get_local_id(0), ty = l / 16, tx = l % 16;
    load_bt(cl, m, n, bi * BT, kb * BT, l);
    load_bt(rw, m, n, kb * BT, bj * BT, l);
    barrier(CLK_LOCAL_MEM_FENCE);
    int acc[RT][RT];
    for (uint r = 0; r < RT; r++) {
        uint i = bi * BT + ty * RT + r;
        for (uint c = 0; c < RT; c++) {
            uint j = bj * BT + tx * RT + c;
            acc[r][c] = (i < n && j < n) ? m[(size_t)i * n + j] : INF;
        }
    }
    for (uint k = 0; k < BT; k++) {
        int a[RT], b[RT];
        for (uint r = 0; r < RT; r++) a[r] = cl[(ty * RT + r) * BT + k];
        for (uint c = 0; c < RT; c++) b[c] = rw[k * BT + tx * RT + c];
        for (uint r = 0; r < RT; r++)
            for (uint c = 0; c < RT; c++) acc[r][c] = min(acc[r][c], a[r] + b[c]);
    }
    for (uint r = 0; r < RT; r++) {
        uint i = bi * BT + ty * RT + r;
        for (uint c = 0; c < RT; c++) {
            uint j = bj * BT + tx * RT + c;
            if (i < n && j < n) m[(size_t)i * n + j] = acc[r][c];
        }
    }
}
