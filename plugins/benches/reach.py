"""plugins/benches/reach.sh's Python side: pick the sources and POIs, then the scipy peer job and the
comparison with tuccompi's reach.csv.

  reach.py pick GRAPH.gr.gz WORKDIR SOURCES POIS   -> WORKDIR/sources.txt, pois.txt (1-based)
  reach.py scipy GRAPH.gr.gz WORKDIR               -> times, and the counts compared
"""
import gzip
import sys
import time

import numpy as np


def n_of(path):
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("p"):
                return int(line.split()[2])
    raise SystemExit(f"{path}: no 'p sp N M' line")


def read_graph(path):
    import scipy.sparse as sp

    n = n_of(path)
    with gzip.open(path, "rt") as f:
        rows = [l.split() for l in f if l.startswith("a")]
    a = np.array([[int(r[1]), int(r[2]), int(r[3])] for r in rows], dtype=np.int64)
    u, v, w = a[:, 0] - 1, a[:, 1] - 1, a[:, 2]
    keep = u != v  # self-loops never shorten a path
    u, v, w = u[keep], v[keep], w[keep]
    # Parallel arcs: the lightest (a CSR built from duplicates would add them up).
    order = np.lexsort((w, v, u))
    u, v, w = u[order], v[order], w[order]
    first = np.ones(len(u), dtype=bool)
    first[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    return sp.csr_matrix((w[first].astype(np.float64), (u[first], v[first])), shape=(n, n))


def pick(path, work, k_sources, k_pois):
    n = n_of(path)
    rng = np.random.default_rng(37)
    sources = np.sort(rng.choice(n, size=min(k_sources, n), replace=False)) + 1
    pois = rng.integers(1, n + 1, size=k_pois)
    np.savetxt(f"{work}/sources.txt", sources, fmt="%d")
    np.savetxt(f"{work}/pois.txt", pois, fmt="%d")
    print(f"{len(sources)} sources, {len(pois)} POIs on {n} vertices")


def scipy_job(path, work):
    from scipy.sparse.csgraph import dijkstra

    radii = [500, 1000, 2000]
    t0 = time.perf_counter()
    g = read_graph(path)
    t1 = time.perf_counter()
    sources = np.loadtxt(f"{work}/sources.txt", dtype=np.int64).reshape(-1) - 1
    pois = np.loadtxt(f"{work}/pois.txt", dtype=np.int64).reshape(-1) - 1
    counts = np.zeros((len(sources), len(radii)), dtype=np.int64)
    chunk = 256  # 256 full rows of float64 at a time: about 0.8 GB on osm-moscow
    for i in range(0, len(sources), chunk):
        d = dijkstra(g, indices=sources[i : i + chunk], limit=max(radii))[:, pois]
        for j, r in enumerate(radii):
            counts[i : i + chunk, j] = (d <= r).sum(axis=1)
    t2 = time.perf_counter()
    print(f"scipy: read {t1 - t0:.2f} s, dijkstra(limit=2000) + counting {t2 - t1:.2f} s, total {t2 - t0:.2f} s")
    got = np.loadtxt(f"{work}/out/reach.csv", delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    assert (got[:, 0].astype(np.int64) == sources + 1).all(), "reach.csv rows are the sources in order"
    ours = got[:, 1::2].astype(np.int64)
    if not np.array_equal(ours, counts):
        bad = np.argwhere(ours != counts)
        raise SystemExit(f"counts differ at {len(bad)} places, first {bad[:5].tolist()}")
    print(f"counts equal: {counts.size} (source, radius) counts, {int(counts.sum())} POIs within in all")


if __name__ == "__main__":
    if sys.argv[1] == "pick":
        pick(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        scipy_job(sys.argv[2], sys.argv[3])
