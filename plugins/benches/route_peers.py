"""1,000 random origin-destination trips on osm-moscow, with their paths: tuccompi's
g.route (pair queries on the graph's resident hierarchy) against routingkit-cch (a customizable
contraction hierarchy, RoutingKit's Python binding) on the same pairs, in one process, every
distance checked against the other and 20 against scipy's Dijkstra.

    pip install routingkit-cch scipy      # beside the tuccompi package
    python plugins/benches/route_peers.py ../shared/data/osm-moscow.gr.gz [../shared/data/osm-moscow.co.gz]

Prints each side's preprocessing and the medians (of 7, after one warm-up) of: one pair, 1,000
pairs, 1,000 pairs with paths. The .co file, when given, orders routingkit's hierarchy by
inertial flow (its recommended order); without it, by degree."""
import gzip
import sys
import time

import numpy as np
import routingkit_cch as rk
import scipy.sparse
import scipy.sparse.csgraph

import tuccompi


def read_gr(path):
    """The arcs of a DIMACS .gr(.gz): n, tails, heads, weights (0-based)."""
    with gzip.open(path, "rt") as f:
        rows = [l.split() for l in f if l.startswith("a ")]
    a = np.array([[int(r[1]), int(r[2]), int(r[3])] for r in rows], dtype=np.int64)
    n = int(a[:, :2].max())
    return n, a[:, 0] - 1, a[:, 1] - 1, a[:, 2]


def read_co(path, n):
    lon, lat = np.zeros(n), np.zeros(n)
    with gzip.open(path, "rt") as f:
        for l in f:
            if l.startswith("v "):
                _, v, x, y = l.split()
                lon[int(v) - 1], lat[int(v) - 1] = int(x) / 1e6, int(y) / 1e6
    return lat, lon


def med(label, f, reps=7):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    print(f"{label}: median {1e3 * ts[reps // 2]:.2f} ms (min {1e3 * ts[0]:.2f}, max "
          f"{1e3 * ts[-1]:.2f})", flush=True)


n, tail, head, w = read_gr(sys.argv[1])
rng = np.random.default_rng(50)
o, d = rng.integers(0, n, 1000), rng.integers(0, n, 1000)

t0 = time.perf_counter()
g = tuccompi.read_graph(sys.argv[1])
g.route(o[:1] + 1, d[:1] + 1)   # reads (or builds) the hierarchy once; ids from 1 in .gr
print(f"tuccompi: graph read and hierarchy ready in {time.perf_counter() - t0:.2f} s "
      f"(the hierarchy cache warm or not)")

t0 = time.perf_counter()
if len(sys.argv) > 2:
    lat, lon = read_co(sys.argv[2], n)
    order = rk.compute_order_inertial(n, tail.astype(np.uint32), head.astype(np.uint32), lat, lon)
else:
    order = rk.compute_order_degree(n, tail.astype(np.uint32), head.astype(np.uint32))
cch = rk.CCH(order, tail.astype(np.uint32), head.astype(np.uint32), False)
metric = rk.CCHMetric(cch, w.astype(np.uint32))
query = rk.CCHQuery(metric)
print(f"routingkit-cch: order, CCH and customization in {time.perf_counter() - t0:.2f} s")


def rk_pairs(paths):
    out = []
    for a, b in zip(o, d):
        r = query.run(int(a), int(b))
        out.append((r.distance, np.asarray(r.node_path) if paths else None))
        del r  # a query's result must go before its next run
    return out


dist, mine_paths = g.route(o + 1, d + 1, paths=True)
theirs = rk_pairs(True)
rk_dist = np.array([np.inf if x is None else x for x, _ in theirs], dtype=np.float64)
assert np.array_equal(dist, rk_dist), "tuccompi and routingkit-cch disagree"
# Each path a chain of arcs whose weights sum to its distance (both sides' paths).
arcs = {}
for a, b, x in zip(tail, head, w):
    arcs[(a, b)] = min(arcs.get((a, b), x), x)
for k, ((x, p), q) in enumerate(zip(theirs, mine_paths)):
    for path in (p, np.asarray(q) - 1):
        if x is not None and len(path) > 1:
            assert sum(arcs[(int(u), int(v))] for u, v in zip(path[:-1], path[1:])) == x, k
m = scipy.sparse.csr_matrix((w, (tail, head)), shape=(n, n))
sp = scipy.sparse.csgraph.dijkstra(m, indices=o[:20])
assert np.array_equal(sp[np.arange(20), d[:20]], dist[:20]), "scipy disagrees"
print("every distance equal (1,000 against routingkit-cch, 20 against scipy)")

med("tuccompi g.route one pair", lambda: g.route(o[:1] + 1, d[:1] + 1))
def rk_one():
    r = query.run(int(o[0]), int(d[0]))
    x = r.distance
    del r
    return x


med("routingkit-cch one pair", rk_one)
med("tuccompi g.route 1,000 pairs", lambda: g.route(o + 1, d + 1))
med("routingkit-cch 1,000 pairs", lambda: rk_pairs(False))
med("tuccompi g.route 1,000 pairs + paths", lambda: g.route(o + 1, d + 1, paths=True))
med("routingkit-cch 1,000 pairs + node paths", lambda: rk_pairs(True))
