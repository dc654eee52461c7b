// Stub kernels named as the characterization beside them (collatz.toml, the collatz example's
// as the tuning rules' test data): the rules read characterizations only.
__kernel void collatz_steps(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void collatz_reduce(__global uint* x) { x[get_global_id(0)] = 0; }
