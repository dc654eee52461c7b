"""The peer job of plugins/benches/osm.sh: scipy's Dijkstra over a tuccompi edges.csv, from the vertices
the points snapped to (snapped.csv), against tuccompi's od.npz. Prints the peer's time; exits 1
when a distance differs."""
import sys, time

t0 = time.perf_counter()
import numpy as np, pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

out = sys.argv[1]
e = pd.read_csv(f"{out}/edges.csv")
v = pd.read_csv(f"{out}/vertices.csv", dtype={"osm_id": "Int64"})
snap = pd.read_csv(f"{out}/snapped.csv")
n = len(v)
# Parallel arcs keep the lighter one, as tuccompi's graph does.
e = e.groupby(["tail", "head"], as_index=False)["weight"].min()
g = csr_matrix((e["weight"].astype(np.float64), (e["tail"], e["head"])), shape=(n, n))
src = snap[snap.kind == "source"].vertex.to_numpy()
dst = snap[snap.kind == "target"].vertex.to_numpy()
uniq, back = np.unique(src, return_inverse=True)
d = dijkstra(g, indices=uniq)[back][:, dst]
peer = time.perf_counter() - t0
z = np.load(f"{out}/od.npz")
mine = np.where(z["distances"] == z["unreachable"], np.inf, z["distances"].astype(np.float64))
equal = np.array_equal(mine, d)
print(f"scipy (pandas read of edges.csv, csr_matrix, dijkstra from {len(uniq)} vertices): {peer:.3f} s")
print(f"  {mine.shape[0]} x {mine.shape[1]} matrices {'equal' if equal else 'DIFFERENT'}; "
      f"{int(np.isfinite(mine).sum())} pairs connected; {len(e)} arcs, {n} vertices")
sys.exit(0 if equal else 1)
