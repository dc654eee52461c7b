// Batched single-source shortest paths: `batch` sources at once, state laid out as
// [batch][n] (index b*n + u), so one launch serves every source of the batch and the graph's
// arcs are shared. Built with -DWIDE=1 for 64-bit distances (needs the int64 atomics
// extensions), else 32-bit. INF marks unreachable. No value wraps: 32-bit sums of a finite
// distance saturate at CEIL = INF - 1 (the host redoes a tree with a distance at CEIL in 64
// bits), 64-bit sums cannot reach INF.
//
// Crauser / Martin iteration: relax (frontier -> neighbours, atomic min), minimum (per-source
// threshold Delta over unsettled vertices), update (settle every unsettled u with
// dist(u) <= Delta; they form the next frontier).
// Two-phase (mask / cost / updating cost): tp_relax, tp_update until no cost changes.
//
// The kernels that walk the CSR take its arc count `m` (tgt's and wt's length, off[n]), which
// they never read: their characterizations (kernels/sssp.toml) declare the arcs' extent with it,
// and every launch is checked against those declarations.

#ifdef WIDE
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
typedef ulong dist_t;
#define INF ULONG_MAX
#define ATOMIC_MIN(p, v) atom_min((p), (v))
#else
typedef uint dist_t;
#define INF UINT_MAX
#define ATOMIC_MIN(p, v) atomic_min((p), (v))
#endif

#ifdef WIDE
inline dist_t sat_add(dist_t a, uint w) {
    dist_t s = a + (dist_t)w;
    return (s < a) ? INF : s;
}
#else
#define CEIL (INF - 1u)
// INF + w = INF; else min(a + w, CEIL), branch-free.
inline dist_t sat_add(dist_t a, uint w) {
    return a + min(w, max(a, CEIL) - a);
}
#endif

// One item per (source, vertex): INF everywhere, 0 at the source, which is settled and is
// the first frontier.
__kernel void sssp_init(__global dist_t* dist, __global uchar* settled, __global uchar* frontier,
                        __global const uint* src, uint n, uint batch) {
    size_t i = get_global_id(0);
    if (i >= (size_t)n * batch) return;
    uint b = (uint)(i / n);
    uint u = (uint)(i - (size_t)b * n);
    uchar s = (u == src[b]) ? 1 : 0;
    dist[i] = s ? 0 : INF;
    settled[i] = s;
    frontier[i] = s;
}

// Frontier vertices relax their arcs into unsettled neighbours. Items below `batch` also reset
// the per-source threshold for the minimum kernel that follows.
__kernel void sssp_relax(__global const uint* off, __global const uint* tgt, __global const uint* wt,
                         __global dist_t* dist, __global const uchar* settled,
                         __global const uchar* frontier, __global dist_t* delta, uint n, uint batch,
                         uint m) {
    size_t i = get_global_id(0);
    if (i < batch) delta[i] = INF;
    if (i >= (size_t)n * batch || !frontier[i]) return;
    size_t base = (i / n) * n;
    uint u = (uint)(i - base);
    dist_t du = dist[i];
    uint end = off[u + 1];
    for (uint e = off[u]; e < end; e++) {
        size_t j = base + tgt[e];
        if (!settled[j]) {
            dist_t nd = sat_add(du, wt[e]);
            if (nd < dist[j]) ATOMIC_MIN(&dist[j], nd);
        }
    }
}

// Per-source threshold: min over unsettled reached u of dist(u) + omega(u) (Crauser) or
// dist(u) (Martin, use_omega = 0). `groups_per_batch` work-groups serve each source; each
// work-item strides over that source's vertices, then the group reduces in local memory
// (the local size must be a power of two) and one item per group does an atomic min.
__kernel void sssp_minimum(__global const dist_t* dist, __global const uchar* settled,
                           __global const uint* minw, __global dist_t* delta,
                           __local dist_t* scratch, uint n, uint groups_per_batch, uint use_omega) {
    size_t lid = get_local_id(0), L = get_local_size(0);
    size_t g = get_group_id(0);
    size_t b = g / groups_per_batch, gb = g % groups_per_batch;
    size_t stride = (size_t)groups_per_batch * L;
    __global const dist_t* d = dist + b * n;
    __global const uchar* s = settled + b * n;
    dist_t best = INF;
    for (size_t u = gb * L + lid; u < n; u += stride) {
        if (!s[u]) {
            dist_t du = d[u];
            if (du != INF) best = min(best, use_omega ? sat_add(du, minw[u]) : du);
        }
    }
    scratch[lid] = best;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t h = L / 2; h > 0; h >>= 1) {
        if (lid < h) scratch[lid] = min(scratch[lid], scratch[lid + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && scratch[0] != INF) ATOMIC_MIN(&delta[b], scratch[0]);
}

// Settle every unsettled reached u with dist(u) <= Delta of its source; those form the next
// frontier. `changed` is set when anything settles (the host reads it now and then).
__kernel void sssp_update(__global const dist_t* dist, __global uchar* settled, __global uchar* frontier,
                          __global const dist_t* delta, __global uint* changed, uint n, uint batch) {
    size_t i = get_global_id(0);
    if (i >= (size_t)n * batch) return;
    uchar f = 0;
    if (!settled[i]) {
        dist_t d = dist[i];
        if (d != INF && d <= delta[i / n]) {
            settled[i] = 1;
            f = 1;
            *changed = 1;
        }
    }
    frontier[i] = f;
}

// Two-phase, phase 1: masked vertices relax their arcs into the updating cost.
__kernel void tp_relax(__global const uint* off, __global const uint* tgt, __global const uint* wt,
                       __global const dist_t* cost, __global dist_t* upd, __global uchar* mask,
                       uint n, uint batch, uint m) {
    size_t i = get_global_id(0);
    if (i >= (size_t)n * batch || !mask[i]) return;
    mask[i] = 0;
    size_t base = (i / n) * n;
    uint u = (uint)(i - base);
    dist_t du = cost[i];
    uint end = off[u + 1];
    for (uint e = off[u]; e < end; e++) {
        size_t j = base + tgt[e];
        dist_t nd = sat_add(du, wt[e]);
        if (nd < upd[j]) ATOMIC_MIN(&upd[j], nd);
    }
}

// Two-phase, phase 2: a lowered updating cost becomes the cost and re-enters the mask.
__kernel void tp_update(__global dist_t* cost, __global dist_t* upd, __global uchar* mask,
                        __global uint* changed, uint n, uint batch) {
    size_t i = get_global_id(0);
    if (i >= (size_t)n * batch) return;
    dist_t u = upd[i];
    if (u < cost[i]) {
        cost[i] = u;
        mask[i] = 1;
        *changed = 1;
    }
    upd[i] = cost[i];
}

// Per-source summary on the device: reached count, 128-bit sum and max of finite distances.
// Same grid as sssp_minimum; each group writes 4 words (count, sum_lo, sum_hi, max) to
// partial[g*4..], which the host adds up.
__kernel void sssp_summary(__global const dist_t* dist, __global ulong* partial, __local ulong* scratch,
                           uint n, uint groups_per_batch) {
    size_t lid = get_local_id(0), L = get_local_size(0);
    size_t g = get_group_id(0);
    size_t b = g / groups_per_batch, gb = g % groups_per_batch;
    size_t stride = (size_t)groups_per_batch * L;
    __global const dist_t* d = dist + b * n;
    ulong cnt = 0, lo = 0, hi = 0, mx = 0;
    for (size_t u = gb * L + lid; u < n; u += stride) {
        dist_t du = d[u];
        if (du != INF) {
            ulong x = (ulong)du;
            cnt++;
            lo += x;
            hi += (lo < x) ? 1 : 0;
            mx = max(mx, x);
        }
    }
    __local ulong* sc = scratch;
    __local ulong* sl = scratch + L;
    __local ulong* sh = scratch + 2 * L;
    __local ulong* sm = scratch + 3 * L;
    sc[lid] = cnt; sl[lid] = lo; sh[lid] = hi; sm[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t h = L / 2; h > 0; h >>= 1) {
        if (lid < h) {
            ulong a = sl[lid], c = sl[lid + h];
            ulong s = a + c;
            sl[lid] = s;
            sh[lid] += sh[lid + h] + ((s < a) ? 1 : 0);
            sc[lid] += sc[lid + h];
            sm[lid] = max(sm[lid], sm[lid + h]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        partial[g * 4 + 0] = sc[0];
        partial[g * 4 + 1] = sl[0];
        partial[g * 4 + 2] = sh[0];
        partial[g * 4 + 3] = sm[0];
    }
}

// Work-list SSSP (near-far): Bellman-Ford rounds over a compacted frontier of (source,
// vertex) entries i = b*n + v, batched, with a per-source threshold as in Delta-stepping.
// Round k (one launch of wl_round) processes list slot k%3: an entry whose distance is within
// its source's threshold relaxes its arcs (near work); one beyond it is carried to the next
// list unchanged (far) and offers its distance to farmin. Every vertex whose distance the round
// lowers, or that it carries, is appended to slot (k+1)%3 once per round (stamp[i] = k+1
// deduplicates). Appends are gathered per work-group in local memory and reserved with one
// global atomic per group. The round also clears the count of slot (k+2)%3, which the next
// round fills.
// Per-source state (thresh, farmin, active) is triple-buffered by round like the lists: round k
// derives its thresholds from round k-1's (a source that had no near work moves to its nearest
// far entry + delta), stores them for round k+1, and clears the buffers round k+1 will fill.
// A persistent grid strides over the frontier, whose size it reads on the device, so the host
// never sizes a launch and checks for an empty frontier only every few rounds (later rounds are
// no-ops). Exact: a vertex whose distance drops is always processed again in a later round.
__kernel void wl_init(__global dist_t* dist, __global uint* stamp, __global uint* list0,
                      __global uint* counts, __global const uint* src, __global dist_t* thresh,
                      __global dist_t* farmin, __global uint* active, dist_t delta, uint n, uint batch) {
    size_t i = get_global_id(0);
    if (i == 0) {
        counts[0] = batch;
        counts[1] = 0;
        counts[2] = 0;
    }
    if (i < batch) {
        // Round 0 reads buffer 2 as "round -1": threshold delta, active (so it does not jump).
        for (uint k = 0; k < 3; k++) {
            thresh[k * batch + i] = delta;
            farmin[k * batch + i] = INF;
            active[k * batch + i] = (k == 2) ? 1 : 0;
        }
    }
    if (i >= (size_t)n * batch) return;
    uint b = (uint)(i / n);
    uint u = (uint)(i - (size_t)b * n);
    uchar s = (u == src[b]) ? 1 : 0;
    dist[i] = s ? 0 : INF;
    stamp[i] = 0;
    if (s) list0[b] = (uint)i;
}

inline dist_t wl_threshold(__global const dist_t* thresh, __global const dist_t* farmin,
                           __global const uint* active, size_t prev, size_t b, dist_t delta) {
    dist_t t = thresh[prev + b];
    dist_t f = farmin[prev + b];
    if (!active[prev + b] && f != INF) {
        t = f + delta;
        if (t < f) t = INF;
    }
    return t;
}

__kernel void wl_round(__global const uint* off, __global const uint* tgt, __global const uint* wt,
                       __global dist_t* dist, __global uint* stamp, __global const uint* cur,
                       __global uint* next, __global uint* counts, __global dist_t* thresh,
                       __global dist_t* farmin, __global uint* active, __local uint* lbuf,
                       dist_t delta, uint slot, uint n, uint batch, uint round, uint lcap,
                       uint m) {
    __local uint lcount, lbase;
    size_t gid = get_global_id(0), gsz = get_global_size(0);
    size_t lid = get_local_id(0), L = get_local_size(0);
    size_t prev = (size_t)((slot + 2) % 3) * batch, mine = (size_t)slot * batch;
    uint ns = (slot + 1) % 3;
    uint cnt = counts[slot];
    if (gid == 0) counts[(slot + 2) % 3] = 0;
    for (size_t b = gid; b < batch; b += gsz) {
        thresh[mine + b] = wl_threshold(thresh, farmin, active, prev, b, delta);
        farmin[(size_t)ns * batch + b] = INF;
        active[(size_t)ns * batch + b] = 0;
    }
    // Every item of a group runs the same number of passes (barriers inside).
    for (size_t base = get_group_id(0) * L; base < cnt; base += gsz) {
        if (lid == 0) lcount = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        size_t k = base + lid;
        if (k < cnt) {
            uint i = cur[k];
            uint b = i / n;
            size_t row = (size_t)b * n;
            uint u = (uint)(i - row);
            dist_t du = dist[i];
            uint push_far = 0;
            if (du > wl_threshold(thresh, farmin, active, prev, b, delta)) {
                if (du < farmin[mine + b]) ATOMIC_MIN(&farmin[mine + b], du);
                push_far = 1;
            } else if (!active[mine + b]) {
                active[mine + b] = 1;
            }
            uint end = push_far ? off[u] : off[u + 1];
            if (push_far && atomic_xchg(&stamp[i], round + 1) != round + 1) {
                uint p = atomic_inc(&lcount);
                if (p < lcap) lbuf[p] = i; else next[atomic_inc(&counts[ns])] = i;
            }
            for (uint e = off[u]; e < end; e++) {
                size_t j = row + tgt[e];
                dist_t nd = sat_add(du, wt[e]);
                if (nd < dist[j]) {
                    dist_t old = ATOMIC_MIN(&dist[j], nd);
                    if (nd < old && atomic_xchg(&stamp[j], round + 1) != round + 1) {
                        uint p = atomic_inc(&lcount);
                        if (p < lcap) lbuf[p] = (uint)j; else next[atomic_inc(&counts[ns])] = (uint)j;
                    }
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint c = min(lcount, lcap);
        if (lid == 0 && c > 0) lbase = atomic_add(&counts[ns], c);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint t = lid; t < c; t += L) next[lbase + t] = lbuf[t];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
