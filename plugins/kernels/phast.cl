// PHAST (Delling et al., JPDC 2013) on a contraction hierarchy: k shortest-path trees per
// batch. Vertices are numbered by sweep position (level order, highest rank first); distances
// are vertex-major, d[p*k + j] for position p and tree j, so the k items of one vertex read k
// consecutive words per arc and share the arc's tail and weight. Built with -DWIDE=1 for 64-bit
// distances and weights, else 32-bit. INF marks unreachable; INF + w stays INF, and a 32-bit sum
// of a finite distance saturates at CEIL = INF - 1 (the host redoes a tree with a distance at
// CEIL in 64 bits; 64-bit sums cannot reach INF).
//
// Per batch: the upward searches leave each tree's search space in `init` and set its bits in
// `mask` (bit j%32 of word mask[p*kw + j/32], kw = ceil(k/32)), by phast_up on the device or
// phast_scatter of host results; the sweep pulls over the downward arcs level by level (the
// small leading levels in one phast_top launch, then one phast_sweep launch per level),
// reading `init` only where the mask says (n/8 bytes per tree instead of 4n);
// phast_summary + phast_reduce fold each tree to [reached, sum_lo, sum_hi, max] (when nothing
// else is wanted, the trailing levels are swept by phast_fold and phast_fold_bottom, which
// fold them as they pull them, and phast_summary reads only the positions above them), and phast_rows
// gathers distance rows in the input's numbering when they are requested. Between batches
// `init` is all INF and `mask` all zero: the sweep resets each entry it reads and clears its
// bits (atomically: 8 items share a mask word), so the host resets both (phast_reset for
// `init`, a fill of the mask) only for new buffers or after a batch that failed half-way. When
// the bottom level is folded, `init`, the mask and the distances hold only the positions above
// it (`rows` of them): its rows are never written, and its sources are 0 in their own trees.
//
// Some kernels take sizes they never read, for their characterizations (kernels/phast.toml),
// which declare with them what each buffer may be indexed up to, checked at every launch: `n`
// (positions, pos's length: the sources are vertices below it), `arcs` (the arcs of the graph
// the kernel walks: dtail's and dw's length, or uhead's and uw's), `end` (phast_top: the first
// position after its levels, bounds[nlev]) and `positions` (the positions `dist` holds rows of:
// every entry of tpos is below it).

#ifdef WIDE
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
typedef ulong dist_t;
#define INF ULONG_MAX
#define ATOMIC_MIN(p, v) atom_min((p), (v))
#define ATOMIC_READ(p) atom_or((p), (dist_t)0)
#else
typedef uint dist_t;
#define INF UINT_MAX
#define ATOMIC_MIN(p, v) atomic_min((p), (v))
#define ATOMIC_READ(p) atomic_or((p), (dist_t)0)
#endif

#ifdef WIDE
inline dist_t sat_add(dist_t a, dist_t w) {
    dist_t s = a + w;
    return (s < a) ? INF : s;
}
#else
#define CEIL (INF - 1u)
inline dist_t sat_add(dist_t a, dist_t w) {
    return a + min(w, max(a, CEIL) - a);
}
#endif

inline void mark(__global uint* mask, uint p, uint j, uint kw) {
    atomic_or(&mask[(size_t)p * kw + j / 32], 1u << (j % 32));
}

// Set d[0 .. len) to INF, item by item over the whole range (64-bit indices). Used instead of
// clEnqueueFillBuffer, which NVIDIA's driver fails on buffers of 2^31 elements and more
// (benches/big_buffer.rs).
__kernel void phast_reset(__global dist_t* d, ulong len) {
    size_t step = get_global_size(0);
    for (size_t i = get_global_id(0); i < len; i += step) d[i] = INF;
}

// Host upward searches: entry e sets init[pos[e]*k + tree[e]] = val[e] and its mask bit;
// entries at positions from `rows` on (a source in the folded bottom level, which has no
// rows: phast_fold_bottom gives it 0 itself) are skipped.
__kernel void phast_scatter(__global dist_t* init, __global uint* mask,
                            __global const uint* pos, __global const uint* tree,
                            __global const dist_t* val, uint count, uint k, uint rows) {
    size_t e = get_global_id(0);
    if (e >= count) return;
    uint p = pos[e], j = tree[e];
    if (p >= rows) return;
    init[(size_t)p * k + j] = val[e];
    mark(mask, p, j, (k + 31) / 32);
}

// Device upward searches: one work-group per tree j, Bellman-Ford rounds over the upward
// graph (a DAG) from pos[src[j]], with atomic minima into init[q*k + j]. A vertex whose distance a
// round lowers joins the next round's frontier (two local lists of `cap` entries). A frontier
// that would overflow stops the tree and sets overflow[j]; the host then redoes that batch
// with host searches. Rounds are at most the longest upward path, in arcs. Positions from
// `rows` on (the folded bottom level) have no entries in init and the mask: only the source
// can be one (upward arcs lead to higher levels), and its distance is 0.
#ifndef NO_DEVICE_UP
__kernel void phast_up(__global const uint* uoff, __global const uint* uhead,
                       __global const dist_t* uw, __global dist_t* init, __global uint* mask,
                       __global const uint* src, __global const uint* pos, uint k,
                       __local uint* fa, __local uint* fb,
                       uint cap, __global uint* overflow, uint rows, uint n, uint arcs) {
    __local uint counts[3]; // [0] current size, [1] next size, [2] overflow
    uint j = get_group_id(0);
    uint lid = get_local_id(0), L = get_local_size(0);
    uint kw = (k + 31) / 32;
    if (lid == 0) {
        uint s = pos[src[j]];
        if (s < rows) {
            init[(size_t)s * k + j] = 0;
            mark(mask, s, j, kw);
        }
        fa[0] = s;
        counts[0] = 1;
        counts[1] = 0;
        counts[2] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    uint round = 0;
    while (counts[0] > 0 && counts[2] == 0) {
        __local uint* cur = (round & 1) ? fb : fa;
        __local uint* nxt = (round & 1) ? fa : fb;
        uint na = counts[0];
        for (uint f = lid; f < na; f += L) {
            uint p = cur[f];
            dist_t dp = (p < rows) ? ATOMIC_READ(&init[(size_t)p * k + j]) : 0;
            uint end = uoff[p + 1];
            for (uint e = uoff[p]; e < end; e++) {
                uint q = uhead[e];
                dist_t nd = sat_add(dp, uw[e]);
                __global dist_t* t = &init[(size_t)q * k + j];
                if (nd < *t) {
                    dist_t old = ATOMIC_MIN(t, nd);
                    if (nd < old) {
                        if (old == INF) mark(mask, q, j, kw);
                        uint slot = atomic_inc(&counts[1]);
                        if (slot < cap) nxt[slot] = q; else counts[2] = 1;
                    }
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) {
            counts[0] = min(counts[1], cap);
            counts[1] = 0;
        }
        round++;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    if (lid == 0) overflow[j] = counts[2];
}
#endif

// One level: positions first .. first+count-1, k trees each (k, the row stride, is a
// multiple of 4). Item (p, q) handles trees 4q .. 4q+3 of vertex p: it pulls over p's incoming
// downward arcs (tails ranked higher, so already final), reading 4 consecutive distances of the
// tail's row per arc (one 16- or 32-byte load; the items of a vertex read its tails' rows
// whole), two arcs at a time so that two loads are in flight, and writes d[p*k + 4q ..].
// Entries of `init` outside the search spaces are INF, so when any of the 4 mask bits is set
// the 4 entries are taken as they are, and reset to INF.
#ifdef WIDE
typedef ulong4 dist4_t;
typedef long4 mask4_t;
#else
typedef uint4 dist4_t;
typedef int4 mask4_t;
#endif

#ifdef WIDE
inline dist4_t sat_add4(dist4_t a, dist_t w) {
    dist4_t s = a + w;
    return select(s, (dist4_t)(INF), (mask4_t)(s < a));
}
#else
inline dist4_t sat_add4(dist4_t a, dist_t w) {
    return a + min((dist4_t)(w), max(a, (dist4_t)(CEIL)) - a);
}
#endif

// The 4 distances of trees j .. j+3 at position p before its pulls: from `init` where the
// mask says (and reset there), or, at positions from `rows` on (the folded bottom level, which
// has no rows in init, the mask and the distances), 0 for the trees whose source is p (s4:
// their sources' positions) and INF for the others.
inline dist4_t own(__global dist_t* init, __global uint* mask, uint p, uint j, uint k,
                   uint rows, uint4 s4) {
    dist4_t d = (dist4_t)(INF);
    if (p >= rows) {
        d.x = (s4.x == p) ? 0 : INF;
        d.y = (s4.y == p) ? 0 : INF;
        d.z = (s4.z == p) ? 0 : INF;
        d.w = (s4.w == p) ? 0 : INF;
        return d;
    }
    __global uint* mw = mask + (size_t)p * ((k + 31) / 32) + j / 32;
    if ((*mw >> (j % 32)) & 0xFu) {
        __global dist4_t* i4 = (__global dist4_t*)init;
        size_t me = ((size_t)p * k + j) / 4;
        d = i4[me];
        i4[me] = (dist4_t)(INF);
        atomic_and(mw, ~(0xFu << (j % 32)));
    }
    return d;
}

// The 4 distances of trees j .. j+3 at position p, pulled over p's incoming downward arcs
// (own values as `own` gives them).
inline dist4_t pull(__global const uint* doff, __global const uint* dtail,
                    __global const dist_t* dw, __global dist_t* init,
                    __global uint* mask, __global const dist_t* dist, uint p, uint j,
                    uint k, uint rows, uint4 s4) {
    __global const dist4_t* d4 = (__global const dist4_t*)dist;
    dist4_t d = own(init, mask, p, j, k, rows, s4);
    uint e = doff[p], end = doff[p + 1];
    for (; e + 1 < end; e += 2) {
        uint t0 = dtail[e], t1 = dtail[e + 1];
        dist_t w0 = dw[e], w1 = dw[e + 1];
        dist4_t a = d4[((size_t)t0 * k + j) / 4];
        dist4_t b = d4[((size_t)t1 * k + j) / 4];
        d = min(d, min(sat_add4(a, w0), sat_add4(b, w1)));
    }
    if (e < end) {
        d = min(d, sat_add4(d4[((size_t)dtail[e] * k + j) / 4], dw[e]));
    }
    return d;
}

inline void sweep_item(__global const uint* doff, __global const uint* dtail,
                       __global const dist_t* dw, __global dist_t* init,
                       __global uint* mask, __global dist_t* dist, uint p, uint j,
                       uint k) {
    ((__global dist4_t*)dist)[((size_t)p * k + j) / 4] =
        pull(doff, dtail, dw, init, mask, dist, p, j, k, UINT_MAX, (uint4)(UINT_MAX));
}

__kernel void phast_sweep(__global const uint* doff, __global const uint* dtail,
                          __global const dist_t* dw, __global dist_t* init,
                          __global uint* mask, __global dist_t* dist, uint first,
                          uint count, uint k, uint arcs) {
    size_t i = get_global_id(0);
    uint k4 = k / 4;
    if (i >= (size_t)count * k4) return;
    sweep_item(doff, dtail, dw, init, mask, dist, first + (uint)(i / k4), 4 * (uint)(i % k4), k);
}

// The first `nlev` levels (the small ones at the top of the hierarchy, too small to fill the
// device one launch each) in one launch. Trees are independent, so work-group g owns tree
// quads g*qpg .. g*qpg+qpg-1 and sweeps them level after level, with a barrier between levels
// (no other group reads or writes its columns). `bounds` = the hierarchy's level boundaries.
__kernel void phast_top(__global const uint* doff, __global const uint* dtail,
                        __global const dist_t* dw, __global dist_t* init,
                        __global uint* mask, __global dist_t* dist,
                        __global const uint* bounds, uint nlev, uint k, uint qpg, uint end,
                        uint arcs) {
    uint lid = get_local_id(0), L = get_local_size(0);
    uint q0 = get_group_id(0) * qpg;
    uint k4 = k / 4;
    uint nq = (q0 < k4) ? min(qpg, k4 - q0) : 0;
    for (uint l = 0; l < nlev; l++) {
        uint first = bounds[l], count = bounds[l + 1] - first;
        for (uint x = lid; x < count * nq; x += L) {
            sweep_item(doff, dtail, dw, init, mask, dist, first + x / nq, 4 * (q0 + x % nq), k);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

// Per-item folds of 4 trees: counts, sums and maxima of the finite distances. A 32-bit item
// folds fewer than 2^32 values below 2^32, so its sum needs no carry; a 64-bit one counts
// carries in `hi`.
#ifdef WIDE
#define LFOLD(v, l) if ((v) != INF) { cnt[l]++; ulong s = lo[l] + (v); hi[l] += (s < lo[l]); \
    lo[l] = s; mx[l] = max(mx[l], (v)); }
#else
#define LFOLD(v, l) if ((v) != INF) { cnt[l]++; lo[l] += (ulong)(v); mx[l] = max(mx[l], (v)); }
#endif
#define LFOLD4(d) LFOLD((d).x, 0) LFOLD((d).y, 1) LFOLD((d).z, 2) LFOLD((d).w, 3)

// Per-tree partial summaries over targets: item (g, q) folds targets g, g + slices, ... of
// trees 4q .. 4q+3 (those below b; row stride k) into partial[(g*b + j)*4 ..] = [reached,
// sum_lo, sum_hi, max]: one 16- or 32-byte load per target, two targets in flight, in the
// accumulators of phast_fold (LFOLD4). `tpos` lists the targets' positions; with
// `ident` = 1 target t is position t (all vertices, in memory order).
__kernel void phast_summary(__global const dist_t* dist, __global const uint* tpos,
                            uint ident, uint targets, uint k, uint b, uint slices,
                            __global ulong* partial, uint positions) {
    size_t i = get_global_id(0);
    uint b4 = (b + 3) / 4;
    if (i >= (size_t)slices * b4) return;
    uint g = (uint)(i / b4), j = 4 * (uint)(i % b4);
    __global const dist4_t* d4 = (__global const dist4_t*)dist;
    uint cnt[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
    ulong lo[4] = {0, 0, 0, 0};
    dist_t mx[4] = {0, 0, 0, 0};
    uint t = g;
    for (; t + slices < targets; t += 2 * slices) {
        uint p0 = ident ? t : tpos[t], p1 = ident ? t + slices : tpos[t + slices];
        dist4_t a = d4[((size_t)p0 * k + j) / 4];
        dist4_t c = d4[((size_t)p1 * k + j) / 4];
        LFOLD4(a)
        LFOLD4(c)
    }
    if (t < targets) {
        dist4_t a = d4[((size_t)(ident ? t : tpos[t]) * k + j) / 4];
        LFOLD4(a)
    }
    for (uint l = 0; l < 4 && j + l < b; l++) {
        __global ulong* o = partial + ((size_t)g * b + j + l) * 4;
        o[0] = cnt[l]; o[1] = lo[l]; o[2] = hi[l]; o[3] = (ulong)mx[l];
    }
}

// A trailing level (positions first .. first+count-1) swept and folded into the summaries at
// once, when nothing but the summaries is wanted, by two kernels with one body (`fold_level`):
// phast_fold for the levels above the bottom, whose rows it writes (lower levels pull over
// them), and phast_fold_bottom for the bottom level, whose vertices are no vertex's tails: it
// writes nothing, and its positions (from `rows` on) have no rows in init or the mask, so a
// vertex's own value is 0 in the trees whose source it is (their positions, `pos[src[j]]`)
// and INF in the others. Each kernel holds only its own level type's code, and so fewer
// registers. Item (g, q) pulls vertices first+g, first+g+slices, ... of trees 4q .. 4q+3 (those
// below b; row stride k), one at a time (two arcs in flight; two vertices in flight cost 16
// registers, and the resident items with them), and adds them to
// partial[((base + g)*b + j)*4 ..] = [reached, sum_lo, sum_hi, max] (as phast_summary), which
// it first sets to zero unless `add` (the first folded level of a batch). On a GPU with 32-bit
// distances the host sizes `slices` so that every item is resident at once (one wave: the
// fold's slices rule in plugins/apsp/gpu/sweep.rs), unless the config sets them. Items are numbered quad slice by quad slice: the first
// slices x qs items take quads 0 .. qs-1 (every g), the next the following qs quads (the last
// slice may hold fewer), so the rows a wave of resident items reads are qs quads wide and stay
// in the cache from one vertex to its neighbours.
inline void fold_level(__global const uint* doff, __global const uint* dtail,
                       __global const dist_t* dw, __global dist_t* init,
                       __global uint* mask, __global dist_t* dist, uint first,
                       uint count, uint k, uint b, uint slices, uint base, uint add,
                       __global ulong* partial, uint qs, __global const uint* src,
                       __global const uint* pos, const uint bottom) {
    size_t i = get_global_id(0);
    uint b4 = (b + 3) / 4;
    if (i >= (size_t)slices * b4) return;
    qs = max(qs, 1u); // the host passes 1 or more; 0 would divide by zero below
    uint span = slices * qs;
    uint qslice = (uint)i / span;
    uint within = (uint)i - qslice * span;
    uint ws = min(qs, b4 - qslice * qs);
    uint g = within / ws, j = 4 * (qslice * qs + within % ws);
    // Every position of the bottom level is at or past `rows` (0 here), none of the others
    // (UINT_MAX).
    uint rows = bottom ? 0 : UINT_MAX;
    uint4 s4 = (uint4)(UINT_MAX);
    if (bottom) {
        if (j < b) s4.x = pos[src[j]];
        if (j + 1 < b) s4.y = pos[src[j + 1]];
        if (j + 2 < b) s4.z = pos[src[j + 2]];
        if (j + 3 < b) s4.w = pos[src[j + 3]];
    }
    uint cnt[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
    ulong lo[4] = {0, 0, 0, 0};
    dist_t mx[4] = {0, 0, 0, 0};
    __global dist4_t* d4 = (__global dist4_t*)dist;
    for (uint x = g; x < count; x += slices) {
        uint p = first + x;
        dist4_t d = pull(doff, dtail, dw, init, mask, dist, p, j, k, rows, s4);
        if (!bottom) d4[((size_t)p * k + j) / 4] = d;
        LFOLD4(d)
    }
    for (uint l = 0; l < 4 && j + l < b; l++) {
        __global ulong* o = partial + ((size_t)(base + g) * b + j + l) * 4;
        ulong c0 = cnt[l], s0 = lo[l], h0 = hi[l], m0 = (ulong)mx[l];
        if (add) {
            ulong s = o[1] + s0;
            h0 += o[2] + (s < s0);
            s0 = s;
            c0 += o[0];
            m0 = max(m0, o[3]);
        }
        o[0] = c0; o[1] = s0; o[2] = h0; o[3] = m0;
    }
}

__kernel void phast_fold(__global const uint* doff, __global const uint* dtail,
                         __global const dist_t* dw, __global dist_t* init,
                         __global uint* mask, __global dist_t* dist, uint first,
                         uint count, uint k, uint b, uint slices, uint base, uint add,
                         __global ulong* partial, uint qs, __global const uint* src,
                         __global const uint* pos, uint arcs, uint n) {
    fold_level(doff, dtail, dw, init, mask, dist, first, count, k, b, slices, base, add,
               partial, qs, src, pos, 0);
}

__kernel void phast_fold_bottom(__global const uint* doff, __global const uint* dtail,
                                __global const dist_t* dw, __global dist_t* init,
                                __global uint* mask, __global dist_t* dist, uint first,
                                uint count, uint k, uint b, uint slices, uint base, uint add,
                                __global ulong* partial, uint qs, __global const uint* src,
                                __global const uint* pos, uint arcs, uint n) {
    fold_level(doff, dtail, dw, init, mask, dist, first, count, k, b, slices, base, add,
               partial, qs, src, pos, 1);
}

// Fold the slices of each tree: work-group j folds partial[(g*b + j)*4 ..] over g into
// out[j*4 ..] (sums with carry into the high word, maxima), each item over slices lid,
// lid + L, ..., then a tree in local memory (`scratch`: 4 x L words; L a power of two).
__kernel void phast_reduce(__global const ulong* partial, uint slices, uint b,
                           __global ulong* out, __local ulong* scratch) {
    uint j = get_group_id(0);
    uint lid = get_local_id(0), L = get_local_size(0);
    ulong cnt = 0, lo = 0, hi = 0, mx = 0;
    for (uint g = lid; g < slices; g += L) {
        __global const ulong* q = partial + ((size_t)g * b + j) * 4;
        cnt += q[0];
        ulong s = lo + q[1];
        hi += q[2] + ((s < lo) ? 1 : 0);
        lo = s;
        mx = max(mx, q[3]);
    }
    __local ulong* sc = scratch;
    __local ulong* sl = scratch + L;
    __local ulong* sh = scratch + 2 * L;
    __local ulong* sm = scratch + 3 * L;
    sc[lid] = cnt; sl[lid] = lo; sh[lid] = hi; sm[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = L / 2; h > 0; h >>= 1) {
        if (lid < h) {
            ulong x = sl[lid], s = x + sl[lid + h];
            sl[lid] = s;
            sh[lid] += sh[lid + h] + ((s < x) ? 1 : 0);
            sc[lid] += sc[lid + h];
            sm[lid] = max(sm[lid], sm[lid + h]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[j * 4 + 0] = sc[0]; out[j * 4 + 1] = sl[0]; out[j * 4 + 2] = sh[0]; out[j * 4 + 3] = sm[0];
    }
}

// Distance rows of trees j0 .. j0+rows-1 over the targets, in target order:
// out[r*targets + t] = d[tpos[t]*k + j0 + r].
__kernel void phast_rows(__global const dist_t* dist, __global const uint* tpos, uint targets,
                         uint k, uint j0, uint rows, __global dist_t* out, uint positions) {
    size_t i = get_global_id(0);
    if (i >= (size_t)rows * targets) return;
    uint r = (uint)(i / targets), t = (uint)(i % targets);
    out[i] = dist[(size_t)tpos[t] * k + j0 + r];
}
