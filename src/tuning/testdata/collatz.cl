// Collatz stopping times for the example plugin (examples/collatz.rs). Numbers stay far below
// 2^64 for the starting numbers the example allows (< 2^40).

// steps[i] = number of 3x+1 / x/2 steps from first + i down to 1, one work-item per number.
__kernel void collatz_steps(__global uint* steps, ulong first, ulong count) {
    size_t i = get_global_id(0);
    if (i >= count) return;
    ulong x = first + i;
    uint s = 0;
    while (x > 1) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        s++;
    }
    steps[i] = s;
}

// The records of the blocks of `block` numbers in steps[0 .. count] (the last block may be
// shorter), one work-group per block, any local size: records[3b .. 3b + 3] = (sum, max, argmax)
// of block b, where argmax is the smallest number that takes max steps (as the CPU half's
// `reduce`). sums, maxs and args hold one element per work-item.
__kernel void collatz_reduce(__global const uint* steps, ulong first, ulong count, ulong block,
                             __global ulong* records, __local ulong* sums, __local uint* maxs,
                             __local ulong* args) {
    size_t b = get_group_id(0), l = get_local_id(0), n = get_local_size(0);
    ulong start = b * block, end = min(start + block, count);
    // Each item strides over the block in increasing order: a strict > keeps the smallest. An
    // item with no numbers keeps max 0 at the block's first number, which only a block of
    // zero-step numbers (just 1) reports, as the CPU half does.
    ulong sum = 0, arg = first + start;
    uint most = 0;
    for (ulong i = start + l; i < end; i += n) {
        uint s = steps[i];
        sum += s;
        if (s > most) {
            most = s;
            arg = first + i;
        }
    }
    sums[l] = sum;
    maxs[l] = most;
    args[l] = arg;
    barrier(CLK_LOCAL_MEM_FENCE);
    // Fold the upper half of the k partial records onto the lower half until one is left;
    // rounding the half up makes any k work, a power of two or not.
    for (size_t k = n; k > 1;) {
        size_t h = (k + 1) / 2;
        if (l + h < k) {
            size_t o = l + h;
            sums[l] += sums[o];
            if (maxs[o] > maxs[l] || (maxs[o] == maxs[l] && args[o] < args[l])) {
                maxs[l] = maxs[o];
                args[l] = args[o];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        k = h;
    }
    if (l == 0) {
        records[3 * b] = sums[0];
        records[3 * b + 1] = maxs[0];
        records[3 * b + 2] = args[0];
    }
}
