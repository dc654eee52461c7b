// Brute-force k nearest neighbours: one work-item per query, a private top-k list kept sorted
// by insertion (distance, then index). Mirrors `nearest` in knn.rs operation for operation
// (squared differences summed in dimension order, no contraction), so the halves agree bit for
// bit where sqrt is correctly rounded.
#pragma OPENCL FP_CONTRACT OFF

#define KMAX 32

__kernel void knn_brute(__global const float* points, uint n, uint dims,
                        __global const float* queries, uint first, uint count, uint k,
                        __global float* dist, __global uint* idx) {
    uint q = get_global_id(0);
    if (q >= count) return;
    __global const float* x = queries + (ulong)(first + q) * dims;
    float best[KMAX];
    uint arg[KMAX];
    uint have = 0;
    for (uint p = 0; p < n; p++) {
        __global const float* y = points + (ulong)p * dims;
        float s = 0.0f;
        for (uint j = 0; j < dims; j++) {
            float d = x[j] - y[j];
            float sq = d * d;
            s = s + sq;
        }
        if (have == k && !(s < best[k - 1])) continue;
        uint i = have < k ? have : k - 1;
        while (i > 0 && s < best[i - 1]) {
            best[i] = best[i - 1];
            arg[i] = arg[i - 1];
            i--;
        }
        best[i] = s;
        arg[i] = p;
        if (have < k) have++;
    }
    for (uint i = 0; i < k; i++) {
        dist[(ulong)q * k + i] = sqrt(best[i]);
        idx[(ulong)q * k + i] = arg[i];
    }
}
