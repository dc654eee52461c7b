// Mandelbrot escape counts of rows first .. first + rows of a width-pixel-wide image, one
// work-item per pixel. Only + - * in the same order as escape() in lib.rs, no fused
// multiply-adds: the counts are bit for bit the CPU half's.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

__kernel void mandel_rows(__global uint* counts, uint first, uint rows, uint width,
                          uint max_iter, double x0, double y0, double dx, double dy) {
    size_t g = get_global_id(0);
    if (g >= (size_t)rows * width) return;
    uint r = first + (uint)(g / width), i = (uint)(g % width);
    double cx = x0 + (double)i * dx, cy = y0 + (double)r * dy;
    double x = 0.0, y = 0.0;
    uint n = 0;
    while (n < max_iter) {
        double x2 = x * x, y2 = y * y;
        if (x2 + y2 > 4.0) break;
        y = 2.0 * x * y + cy;
        x = x2 - y2 + cx;
        n++;
    }
    counts[g] = n;
}
