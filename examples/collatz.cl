// Collatz stopping times for the example plugin (examples/collatz.rs): one work-item per
// number. steps[i] = number of 3x+1 / x/2 steps from first + i down to 1. Values stay far
// below 2^64 for the starting numbers the example allows (< 2^40).
__kernel void collatz_steps(__global uint* steps, ulong first, uint count) {
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
