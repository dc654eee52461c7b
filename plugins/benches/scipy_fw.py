"""SciPy's Floyd-Warshall on the same complete digraph (weights 1..10) that plugins/benches/dense.rs
builds, timed in-process; prints seconds and the checksum (sum of all distances)."""
import sys, time
import numpy as np
from scipy.sparse.csgraph import floyd_warshall

def splitmix(seed):
    x = seed
    while True:
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        yield z ^ (z >> 31)

n = int(sys.argv[1])
g = splitmix(1 ^ 0x5EED000000000000)
m = np.zeros((n, n))
for u in range(n):
    for v in range(n):
        if u != v:
            m[u, v] = 1 + ((next(g) * 10) >> 64)
t = time.perf_counter()
d = floyd_warshall(m, directed=True)
print(f"scipy {n} {time.perf_counter() - t:.3f} s checksum {int(d.sum())}")
