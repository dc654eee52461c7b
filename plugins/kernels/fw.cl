// Dense APSP kernels on an n x n row-major int matrix. INF = 2^30-1; the host guarantees
// |path| < 2^28, so a + b never wraps and any value >= INF/2 means unreachable (see
// plugins/fw/mod.rs). Each update is a plain min(c, a + b), which NVIDIA's compiler fuses into
// one add-min instruction.
#define INF 1073741823
#define T 16

// Set m[0 .. len) to v, item by item over the whole range (64-bit indices): fw-blocked's
// padding, instead of clEnqueueFillBuffer, which NVIDIA's driver fails on buffers of 2^31
// elements and more (benches/big_buffer.rs; a padded matrix of ld >= 46,341).
__kernel void fw_fill(__global int* m, ulong len, int v) {
    size_t step = get_global_size(0);
    for (size_t i = get_global_id(0); i < len; i += step) m[i] = v;
}

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

// ---- Blocked Floyd-Warshall (fw-blocked) ----
// The device matrix is ld x ld with ld a multiple of the block FW_B; the host fills the padding
// with INF (a padded vertex reaches nothing and is reached by nothing, so it never shortens a
// real path) and never reads it back. No bound checks, 16-byte aligned rows.
//
// Round kb (pivots kb*B .. kb*B+B-1): phase 1 closes the diagonal tile D (fwb_phase1); phase 2
// updates block row kb, X = D* (x) X (fwb_phase2); then one launch (fwb_phase3) updates block
// column kb, Y = Y (x) D*, and every other tile, C = min(C, Y (x) X). Phase 3 may read Y before
// or after its update: Y (x) D* (x) X = Y (x) X once X = D* (x) X, and every value read, old
// or new, is the length of a walk and at most the old value, so each result is the same (and
// still bounded by every path it must cover, which keeps negative cycles detectable). The
// same argument lets a product's operand be a tile that other work-groups of the launch are
// updating (phase 2's X, the column's Y).
//
// Phases 2 and 3 are one register-tiled min-plus product (minplus_tile): a work-group owns a
// G x G tile of C in registers (RM x RN per item), and streams the G x B and B x G operands
// through local memory in slabs of KC pivots. The build options set the shape (the tuner
// picks it, plugins/fw/blocked_gpu.rs passes it); the defaults are for builds without them.
#ifndef FW_B
#define FW_B 64
#endif
#ifndef FW_G
#define FW_G FW_B
#endif
#ifndef FW_RM
#define FW_RM 4
#endif
#ifndef FW_RN
#define FW_RN 4
#endif
#ifndef FW_KC
#define FW_KC 16
#endif
#ifndef FW_R1
#define FW_R1 4
#endif
#define FW_TY (FW_G / FW_RM)        // items down a group tile (phases 2, 3)
#define FW_TX (FW_G / FW_RN)        // items across a group tile
#define FW_L (FW_TX * FW_TY)        // local size of phases 2 and 3
#define FW_PER (FW_B / FW_G)        // group tiles along a block
#define FW_T1 (FW_B / FW_R1)        // items along each side in phase 1
#define FW_L1 (FW_T1 * FW_T1)       // local size of phase 1
#define FW_AS (FW_KC + 4)           // row stride of the A slab: rows 4 apart land 16 banks apart
#define FW_NP (FW_G * FW_KC / 4 / FW_L) // 16-byte loads per item per operand slab

#if FW_RM % 4 || FW_RN % 4 || FW_R1 % 4 || FW_KC % 4 || FW_B % FW_KC || FW_G % FW_RM || FW_G % FW_RN || FW_B % FW_R1 || FW_B % FW_G
#error "fw-blocked shape: register tiles and slab multiples of 4, dividing the group tile and block"
#endif
#if (FW_G * FW_KC / 4) % FW_L
#error "fw-blocked shape: a slab must split evenly over the work-group"
#endif

// Component c (a compile-time constant after unrolling) of an int4.
#define FW_COMP(v, c) ((c) == 0 ? (v).x : (c) == 1 ? (v).y : (c) == 2 ? (v).z : (v).w)
// Tile row of an item's register row i (items own 4 consecutive rows in each of RM/4 bands
// T*4 apart, so the 16-byte loads of a warp are contiguous); likewise for columns.
#define FW_ROW(i, ty, T) (((i) / 4) * (T) * 4 + (ty) * 4 + (i) % 4)

// C = min(C, A (x) B) for the G x G tile C at (cr, cc), A = the G x B tile at (cr, o) and
// B = the B x G tile at (o, cc): every product of blocked FW has this form (o = kb * B).
inline void minplus_tile(__global int* m, uint ld, uint cr, uint cc, uint o, __local int* As,
                         __local int* Bs) {
    uint l = get_local_id(0), ty = l / FW_TX, tx = l % FW_TX;
    int acc[FW_RM][FW_RN];
#pragma unroll
    for (uint i = 0; i < FW_RM; i++) {
        __global const int* p = m + (size_t)(cr + FW_ROW(i, ty, FW_TY)) * ld + cc + tx * 4;
#pragma unroll
        for (uint u = 0; u < FW_RN / 4; u++) {
            int4 v = *(__global const int4*)(p + u * FW_TX * 4);
            acc[i][u * 4] = v.x;
            acc[i][u * 4 + 1] = v.y;
            acc[i][u * 4 + 2] = v.z;
            acc[i][u * 4 + 3] = v.w;
        }
    }
    for (uint k0 = 0; k0 < FW_B; k0 += FW_KC) {
        // Stage the slabs, 16 bytes a load, consecutive items on consecutive addresses
        // (coalesced, and no bank conflicts on the stores).
#pragma unroll
        for (uint p = 0; p < FW_NP; p++) {
            uint e = l + p * FW_L, row = e / (FW_KC / 4), q = e % (FW_KC / 4);
            *(__local int4*)(As + row * FW_AS + q * 4) =
                *(__global const int4*)(m + (size_t)(cr + row) * ld + o + k0 + q * 4);
        }
#pragma unroll
        for (uint p = 0; p < FW_NP; p++) {
            uint e = l + p * FW_L, row = e / (FW_G / 4), q = e % (FW_G / 4);
            *(__local int4*)(Bs + row * FW_G + q * 4) =
                *(__global const int4*)(m + (size_t)(o + k0 + row) * ld + cc + q * 4);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // Per 4 pivots: RM + RN 16-byte local loads feed 4 x RM x RN add-mins from registers.
#pragma unroll
        for (uint k = 0; k < FW_KC; k += 4) {
            int4 a[FW_RM];
#pragma unroll
            for (uint i = 0; i < FW_RM; i++)
                a[i] = *(__local const int4*)(As + FW_ROW(i, ty, FW_TY) * FW_AS + k);
#pragma unroll
            for (uint kk = 0; kk < 4; kk++) {
                int4 b[FW_RN / 4];
#pragma unroll
                for (uint u = 0; u < FW_RN / 4; u++)
                    b[u] = *(__local const int4*)(Bs + (k + kk) * FW_G + u * FW_TX * 4 + tx * 4);
#pragma unroll
                for (uint i = 0; i < FW_RM; i++) {
                    int ai = FW_COMP(a[i], kk);
#pragma unroll
                    for (uint j = 0; j < FW_RN; j++)
                        acc[i][j] = min(acc[i][j], ai + FW_COMP(b[j / 4], j % 4));
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (uint i = 0; i < FW_RM; i++) {
        __global int* p = m + (size_t)(cr + FW_ROW(i, ty, FW_TY)) * ld + cc + tx * 4;
#pragma unroll
        for (uint u = 0; u < FW_RN / 4; u++)
            *(__global int4*)(p + u * FW_TX * 4) =
                (int4)(acc[i][u * 4], acc[i][u * 4 + 1], acc[i][u * 4 + 2], acc[i][u * 4 + 3]);
    }
}

// Local arrays are declared as int4 so that they are 16-byte aligned (NVIDIA aligns an int
// array to 4 bytes, and a 16-byte access to it faults).
#define FW_LOCAL_DECL                                   \
    __local int4 As4[FW_G * FW_AS / 4];                 \
    __local int4 Bs4[FW_KC * FW_G / 4];                 \
    __local int* As = (__local int*)As4;                \
    __local int* Bs = (__local int*)Bs4

// Phase 1: close the diagonal tile kb in registers (R1 x R1 per item). Pivot k's row and
// column go through local memory, double-buffered so one barrier per pivot suffices.
__kernel __attribute__((reqd_work_group_size(FW_L1, 1, 1)))
void fwb_phase1(__global int* m, uint ld, uint kb) {
    __local int4 rowb4[2 * FW_B / 4];
    __local int4 colb4[2 * FW_B / 4];
    __local int* rowb = (__local int*)rowb4;
    __local int* colb = (__local int*)colb4;
    uint l = get_local_id(0), ty = l / FW_T1, tx = l % FW_T1, o = kb * FW_B;
    int acc[FW_R1][FW_R1];
#pragma unroll
    for (uint i = 0; i < FW_R1; i++) {
        __global const int* p = m + (size_t)(o + FW_ROW(i, ty, FW_T1)) * ld + o + tx * 4;
#pragma unroll
        for (uint u = 0; u < FW_R1 / 4; u++) {
            int4 v = *(__global const int4*)(p + u * FW_T1 * 4);
            acc[i][u * 4] = v.x;
            acc[i][u * 4 + 1] = v.y;
            acc[i][u * 4 + 2] = v.z;
            acc[i][u * 4 + 3] = v.w;
        }
    }
    // Pivot k = s*T1*4 + t*4 + r is row s*4+r of the items with ty == t and column s*4+r of
    // those with tx == t; its parity is r's.
#pragma unroll
    for (uint s = 0; s < FW_R1 / 4; s++) {
        for (uint t = 0; t < FW_T1; t++) {
#pragma unroll
            for (uint r = 0; r < 4; r++) {
                __local int* rb = rowb + (r & 1) * FW_B;
                __local int* cb = colb + (r & 1) * FW_B;
                if (ty == t) {
#pragma unroll
                    for (uint j = 0; j < FW_R1; j++) rb[FW_ROW(j, tx, FW_T1)] = acc[s * 4 + r][j];
                }
                if (tx == t) {
#pragma unroll
                    for (uint i = 0; i < FW_R1; i++) cb[FW_ROW(i, ty, FW_T1)] = acc[i][s * 4 + r];
                }
                barrier(CLK_LOCAL_MEM_FENCE);
                int4 a[FW_R1 / 4], b[FW_R1 / 4];
#pragma unroll
                for (uint u = 0; u < FW_R1 / 4; u++) {
                    a[u] = *(__local const int4*)(cb + u * FW_T1 * 4 + ty * 4);
                    b[u] = *(__local const int4*)(rb + u * FW_T1 * 4 + tx * 4);
                }
#pragma unroll
                for (uint i = 0; i < FW_R1; i++) {
                    int ai = FW_COMP(a[i / 4], i % 4);
#pragma unroll
                    for (uint j = 0; j < FW_R1; j++)
                        acc[i][j] = min(acc[i][j], ai + FW_COMP(b[j / 4], j % 4));
                }
            }
        }
    }
#pragma unroll
    for (uint i = 0; i < FW_R1; i++) {
        __global int* p = m + (size_t)(o + FW_ROW(i, ty, FW_T1)) * ld + o + tx * 4;
#pragma unroll
        for (uint u = 0; u < FW_R1 / 4; u++)
            *(__global int4*)(p + u * FW_T1 * 4) =
                (int4)(acc[i][u * 4], acc[i][u * 4 + 1], acc[i][u * 4 + 2], acc[i][u * 4 + 3]);
    }
}

// Phase 2: block row kb, X = D* (x) X, one group per G x G tile (ng group tiles a side).
__kernel __attribute__((reqd_work_group_size(FW_L, 1, 1)))
void fwb_phase2(__global int* m, uint ld, uint kb, uint ng) {
    FW_LOCAL_DECL;
    uint g = get_group_id(0), o = kb * FW_B, cols = ng - FW_PER;
    uint r = g / cols, c = g % cols;
    if (c >= kb * FW_PER) c += FW_PER;
    minplus_tile(m, ld, o + r * FW_G, c * FW_G, o, As, Bs);
}

// Phase 3 on the group rows r0 .. of a strip (the block row kb skipped): the first
// `col_groups` groups update block column kb (Y = Y (x) D*), the others every tile off block
// row and column kb (C = min(C, Y (x) X)).
__kernel __attribute__((reqd_work_group_size(FW_L, 1, 1)))
void fwb_phase3(__global int* m, uint ld, uint kb, uint ng, uint r0, uint col_groups) {
    FW_LOCAL_DECL;
    uint g = get_group_id(0), o = kb * FW_B, kg = kb * FW_PER, r, c;
    if (g < col_groups) {
        r = r0 + g / FW_PER;
        c = kg + g % FW_PER;
    } else {
        g -= col_groups;
        r = r0 + g / (ng - FW_PER);
        c = g % (ng - FW_PER);
        if (c >= kg) c += FW_PER;
    }
    if (kg >= r0 && r >= kg) r += FW_PER;
    minplus_tile(m, ld, r * FW_G, c * FW_G, o, As, Bs);
}
