"""The peer job and the checks of plugins/benches/paths.sh.

    paths.py ids GRAPH S T WORK     write WORK/sources.txt, WORK/targets.txt (distinct random
                                    vertex ids, 1-based, seed 1)
    paths.py check GRAPH S T WORK   time scipy's trees + walks for the same pairs, compare with
                                    WORK/out/paths.csv
"""
import gzip
import io
import sys
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra


def read_gr(path):
    """A DIMACS .gr(.gz) as (n, tails, heads, weights), 0-based, self-loops dropped and
    parallel arcs collapsed to their minimum (as tuccompi reads it)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    n = int(next(line for line in lines if line.startswith("p")).split()[2])
    text = "\n".join(line for line in lines if line.startswith("a"))
    arcs = pd.read_csv(io.StringIO(text), sep=r"\s+", header=None, usecols=[1, 2, 3],
                       names=["a", "u", "v", "w"], dtype={"u": np.int64, "v": np.int64,
                                                          "w": np.int64})
    u, v, w = arcs.u.to_numpy() - 1, arcs.v.to_numpy() - 1, arcs.w.to_numpy()
    keep = u != v
    u, v, w = u[keep], v[keep], w[keep]
    key = u * n + v
    order = np.lexsort((w, key))
    key, w = key[order], w[order]
    first = np.r_[True, key[1:] != key[:-1]]
    key, w = key[first], w[first]
    return n, key // n, key % n, w


def ids(graph, s, t, work):
    n, *_ = read_gr(graph)
    rng = np.random.default_rng(1)
    np.savetxt(f"{work}/sources.txt", rng.choice(n, s, replace=False) + 1, fmt="%d")
    np.savetxt(f"{work}/targets.txt", rng.choice(n, t, replace=False) + 1, fmt="%d")


def check(graph, s, t, work):
    t0 = time.perf_counter()
    n, tails, heads, w = read_gr(graph)
    g = sp.csr_matrix((w.astype(np.float64), (tails, heads)), shape=(n, n))
    sources = np.loadtxt(f"{work}/sources.txt", dtype=np.int64).reshape(-1) - 1
    targets = np.loadtxt(f"{work}/targets.txt", dtype=np.int64).reshape(-1) - 1
    chunk = 10
    dist = np.empty((len(sources), len(targets)))
    hops = np.full((len(sources), len(targets)), -1, dtype=np.int64)
    idsum = np.zeros((len(sources), len(targets)), dtype=np.int64)
    walked = 0
    for c0 in range(0, len(sources), chunk):
        src = sources[c0:c0 + chunk]
        d, pred = dijkstra(g, directed=True, indices=src, return_predecessors=True)
        dist[c0:c0 + len(src)] = d[:, targets]
        # Every target of every source of the chunk walked back at once; the paths' vertices
        # kept step by step (a path is column (i, j) of `steps`, target first).
        rows = np.repeat(np.arange(len(src)), len(targets))
        cur = np.tile(targets, len(src))
        reach = np.isfinite(d[rows, cur])
        cur = np.where(reach, cur, -9999)
        steps = [cur.copy()]
        while True:
            live = cur >= 0
            nxt = np.where(live, pred[rows, np.maximum(cur, 0)], -9999)
            if not (nxt >= 0).any():
                break
            steps.append(nxt)
            cur = nxt
        steps = np.array(steps)
        valid = steps >= 0
        walked += int(valid.sum())
        h = valid.sum(axis=0) - 1
        h[~reach] = -1
        hops[c0:c0 + len(src)] = h.reshape(len(src), len(targets))
        idsum[c0:c0 + len(src)] = np.where(valid, steps + 1, 0).sum(axis=0).reshape(len(src), -1)
    t1 = time.perf_counter()
    print(f"scipy: {t1 - t0:.3f} s (graph read, dijkstra with predecessors, {walked} path "
          f"vertices walked)")

    out = pd.read_csv(f"{work}/out/paths.csv", dtype={"path": str}, keep_default_na=False)
    assert len(out) == len(sources) * len(targets), "one line per pair"
    assert (out.source.to_numpy().reshape(len(sources), -1)[:, 0] == sources + 1).all()
    d_t = pd.to_numeric(out.distance, errors="coerce").to_numpy().reshape(len(sources), -1)
    same_reach = np.isfinite(d_t) == np.isfinite(dist)
    assert same_reach.all(), f"{(~same_reach).sum()} pairs differ in reachability"
    fin = np.isfinite(dist)
    assert (d_t[fin] == dist[fin]).all(), "distances differ"
    # tuccompi's paths: one flat array, the arcs of each checked and summed.
    text = " ".join(p for p in out.path if p)
    flat = np.fromstring(text, dtype=np.int64, sep=" ") - 1  # C-level parse, no Python ints
    del text
    lens = np.array([p.count(" ") + 1 if p else 0 for p in out.path])
    ends = np.cumsum(lens)
    arcs = np.ones(len(flat), dtype=bool)
    arcs[(ends - 1)[lens > 0]] = False  # no arc out of a path's last vertex
    u, v = flat[:-1][arcs[:-1]], flat[1:][arcs[:-1]]
    keys = tails * n + heads
    at = np.searchsorted(keys, u * n + v)
    assert (at < len(keys)).all() and (keys[np.minimum(at, len(keys) - 1)] == u * n + v).all(), \
        "a path uses an arc the graph lacks"
    pair_of_arc = np.repeat(np.arange(len(out)), np.maximum(lens - 1, 0))
    length = np.bincount(pair_of_arc, weights=w[at], minlength=len(out))
    d_flat = d_t.reshape(-1)
    ok = np.isfinite(d_flat)
    assert (length[ok] == d_flat[ok]).all(), "a path's length differs from its distance"
    same = (lens - 1 == hops.reshape(-1)) & (
        np.bincount(np.repeat(np.arange(len(out)), lens), weights=flat + 1, minlength=len(out))
        == idsum.reshape(-1))
    print(f"equal: {fin.sum()} reachable pairs of {fin.size}, every distance equal, every "
          f"tuccompi path a chain of arcs of its pair's length; {same[ok].sum()} paths the same "
          f"vertices as scipy's (others: equal-length alternatives)")


if __name__ == "__main__":
    mode, graph, s, t, work = sys.argv[1:6]
    {"ids": ids, "check": check}[mode](graph, int(s), int(t), work)
