"""Write an n x n int32 .npy for the dense benchmarks: weights 1..100, 10% no arc (0, read with
input.no_arc = 0), seed 3, written 1,024 rows at a time through a memory map.
    python3 benches/common/dense_npy.py N PATH"""
import sys

import numpy as np

n, path = int(sys.argv[1]), sys.argv[2]
r = np.random.default_rng(3)
m = np.lib.format.open_memmap(path, mode="w+", dtype=np.int32, shape=(n, n))
for i in range(0, n, 1024):
    b = r.integers(1, 101, size=(min(1024, n - i), n), dtype=np.int32)
    b[r.random(b.shape) < 0.1] = 0
    m[i:i + 1024] = b
m.flush()
