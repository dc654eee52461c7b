"""The Python OD against the command line's for the same job, and scipy's Dijkstra as the
peer (see python_od.sh). Arguments: BIN DATA [GRAPH] [SOURCES] [TARGETS] [REPS]."""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import tuccompi

bin_, data = sys.argv[1], sys.argv[2]
graph = os.path.join(data, sys.argv[3] if len(sys.argv) > 3 else "osm-moscow.gr.gz")
k_s = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
k_t = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
reps = int(sys.argv[6]) if len(sys.argv) > 6 else 3

work = tempfile.mkdtemp(prefix="python-od-")
atexit.register(shutil.rmtree, work, True)
# One hierarchy cache for the three: the first run builds it, the timed ones read it.
os.environ["XDG_CACHE_HOME"] = os.path.join(work, "cache")

g = tuccompi.read_graph(graph)
rng = np.random.default_rng(38)
sources = np.sort(rng.choice(np.arange(g.id_base, g.id_base + g.n), k_s, replace=False))
targets = np.sort(rng.choice(np.arange(g.id_base, g.id_base + g.n), k_t, replace=False))
config = os.path.join(work, "od.toml")
with open(config, "w") as f:
    f.write(f'[run]\nplugin = "apsp"\nsources = {sources.tolist()}\n'
            f'[input]\npath = "{os.path.abspath(graph)}"\n'
            f'[apsp]\ntargets = {targets.tolist()}\n')


def cli(i):
    out = os.path.join(work, f"cli{i}")
    t0 = time.perf_counter()
    subprocess.run([bin_, "run", config, "-q", "--set", f'output.dir="{out}"'], check=True)
    return time.perf_counter() - t0, out


def py():
    t0 = time.perf_counter()
    h = tuccompi.read_graph(graph)
    d = h.od(sources, targets, integer=True)
    return time.perf_counter() - t0, d, h.last_report


cli(-1)  # builds the hierarchy into the shared cache
times_cli, times_py = [], []
for i in range(reps):
    t, out = cli(i)
    times_cli.append(t)
    t, d, report = py()
    times_py.append(t)
want = np.load(os.path.join(out, "od.npz"))["distances"]
assert np.array_equal(want, d), "the Python OD differs from the command line's"

from scipy.sparse.csgraph import dijkstra  # noqa: E402

m = g.to_scipy()
t0 = time.perf_counter()
ref = dijkstra(m, directed=True, indices=sources - g.id_base)[:, targets - g.id_base]
t_scipy = time.perf_counter() - t0
mine = np.where(d == np.iinfo(d.dtype).max, np.inf, d.astype(np.float64))
assert np.array_equal(mine, ref), "the OD differs from scipy's"

med = lambda xs: float(np.median(xs))  # noqa: E731
print(f"graph {os.path.basename(graph)}: {g.n} vertices, {k_s} x {k_t} OD, {reps} runs each; "
      f"algorithm {report['input']['cpu_algorithm']}")
print(f"cli     {med(times_cli):8.3f} s  (tuccompi run, median wall incl. process start and graph read)")
print(f"python  {med(times_py):8.3f} s  (read_graph + od, median)")
print(f"ratio   {med(times_py) / med(times_cli):8.3f}   python / cli (target <= 1.2)")
print(f"scipy   {t_scipy:8.3f} s  (csgraph.dijkstra(indices=sources), one run)")
print("equal: python == cli == scipy")
print(json.dumps({"cli_s": times_cli, "python_s": times_py, "scipy_s": t_scipy}))
