// Stub kernels named as the characterization beside them (rules.toml, a shortest-path
// plugin's kernels as the tuning rules' test data): the rules read characterizations only.
__kernel void sssp_init(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void sssp_relax(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void sssp_minimum(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void sssp_update(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void tp_relax(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void tp_update(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void sssp_summary(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void wl_init(__global uint* x) { x[get_global_id(0)] = 0; }
__kernel void wl_round(__global uint* x) { x[get_global_id(0)] = 0; }
