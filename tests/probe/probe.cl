// The framework's test plugin's kernel: for tasks first .. first + count, the record (a mixed
// word, the task as a quarter in f32 bits) and two rows of `cols` values (u32 and f32), as the
// CPU half computes them. `wrong` (a task id, or ~0) gets a wrong record, and a wrong first u32
// row value where `wrong_row` is 1: [verify] must see it.
__kernel void probe(ulong first, uint count, uint cols, ulong seed, ulong wrong, uint wrong_row,
                    __global ulong* words, __global uint* ru, __global float* rf) {
    size_t i = get_global_id(0);
    if (i >= count) return;
    ulong t = first + i;
    ulong z = (t ^ seed) + 0x9e3779b97f4a7c15UL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    z ^= z >> 31;
    words[2 * i] = t == wrong ? z + 1 : z;
    words[2 * i + 1] = as_uint((float)t * 0.25f);
    for (uint c = 0; c < cols; c++) {
        ru[i * cols + c] = (uint)(t * cols + c) + (t == wrong && wrong_row && c == 0 ? 1 : 0);
        rf[i * cols + c] = (float)t + (float)c * 0.5f;
    }
}
