// Monte Carlo price of a European call (the example plugin examples/options.rs). Every step
// below is the same as in options.rs, one operation for one: only +, -, *, / and sqrt, which
// OpenCL rounds correctly in double precision, and no fused multiply-adds, so a task's sums are
// bit for bit those of the CPU half. (The built-in exp and log are not correctly rounded: a
// device's and the CPU's results would differ in the last bits.)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

// SplitMix64: the generator's state advance and output function.
ulong splitmix(ulong z) {
    z += 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

// The i-th uniform number in [0, 1) of the path whose key is `key`.
double uniform(ulong key, ulong i) {
    return (double)(splitmix(key + i) >> 11) * (1.0 / 9007199254740992.0);
}

// e^x for |x| < 700: x = k ln 2 + r, e^r by its Taylor polynomial of degree 13, times 2^k.
double exp_basic(double x) {
    double k = floor(x * 1.4426950408889634 + 0.5);
    double r = (x - k * 0.6931471803691238) - k * 1.9082149292705877e-10;
    double p = 1.0;
    for (int i = 13; i >= 1; i--) p = 1.0 + r * p / (double)i;
    return p * as_double((ulong)((long)k + 1023) << 52);
}

// ln x for a normal x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(f),
// f = (m - 1) / (m + 1), by its series to f^23.
double log_basic(double x) {
    ulong bits = as_ulong(x);
    long e = (long)((bits >> 52) & 0x7FF) - 1023;
    double m = as_double((bits & 0x000FFFFFFFFFFFFFUL) | 0x3FF0000000000000UL);
    if (m > 1.4142135623730951) {
        m = m * 0.5;
        e = e + 1;
    }
    double f = (m - 1.0) / (m + 1.0);
    double f2 = f * f;
    double sum = 0.0;
    for (int i = 11; i >= 0; i--) sum = sum * f2 + 1.0 / (double)(2 * i + 1);
    return (double)e * 0.6931471805599453 + 2.0 * f * sum;
}

// payoff[p - first] = the discounted-later payoff of path p, for p in first .. first + count:
// one normal number by the polar Box-Muller method (pairs of uniforms until one falls in the
// unit disc), then the terminal price spot * e^(drift + volt * z).
__kernel void option_payoffs(__global double* payoff, ulong first, ulong count, ulong seed,
                             double spot, double strike, double drift, double volt) {
    size_t i = get_global_id(0);
    if (i >= count) return;
    ulong key = splitmix(seed ^ splitmix(first + i));
    double z = 0.0;
    for (ulong j = 0;; j += 2) {
        double v1 = 2.0 * uniform(key, j) - 1.0;
        double v2 = 2.0 * uniform(key, j + 1) - 1.0;
        double s = v1 * v1 + v2 * v2;
        if (s < 1.0 && s > 0.0) {
            z = v1 * sqrt(-2.0 * log_basic(s) / s);
            break;
        }
    }
    double price = spot * exp_basic(drift + volt * z);
    payoff[i] = fmax(price - strike, 0.0);
}

// sums[2t], sums[2t + 1] = the sum of the payoffs of task t's paths and of their squares, in
// path order (as the CPU half adds them), for the `count` payoffs of tasks of `per_task` paths.
__kernel void option_sums(__global const double* payoff, ulong count, ulong per_task,
                          __global double* sums) {
    size_t t = get_global_id(0);
    ulong start = t * per_task;
    if (start >= count) return;
    ulong end = min(start + per_task, count);
    double sum = 0.0, squares = 0.0;
    for (ulong p = start; p < end; p++) {
        sum = sum + payoff[p];
        squares = squares + payoff[p] * payoff[p];
    }
    sums[2 * t] = sum;
    sums[2 * t + 1] = squares;
}
