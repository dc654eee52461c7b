"""A graph's warm calls from Python: od (the run, and pair queries), route, summary.
Arguments: SITE (where the wheel is installed) GRAPH."""
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
import tuccompi
g = tuccompi.read_graph(sys.argv[2])
rng = np.random.default_rng(38)
s = np.sort(rng.choice(np.arange(1, g.n + 1), 1000, replace=False))
t = np.sort(rng.choice(np.arange(1, g.n + 1), 1000, replace=False))
o = rng.integers(1, g.n + 1, 1000); d = rng.integers(1, g.n + 1, 1000)
def med(label, f, reps=5):
    f(); ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    ts.sort(); print(f"{label}: median {1e3*ts[reps//2]:.1f} ms (min {1e3*ts[0]:.1f}, max {1e3*ts[-1]:.1f})", flush=True)
med("od 1000x1000", lambda: g.od(s, t))
print("   ", g.last_report.get("units") and [(u["name"], u["tasks"]) for u in g.last_report["units"]][:3], g.last_report["input"]["algorithm"].get("source"))
med("od one pair", lambda: g.od(s[:1], t[:1]))
med("route one pair", lambda: g.route(o[:1], d[:1]))
med("route 1000 pairs", lambda: g.route(o, d))
med("route 1000 pairs + paths", lambda: g.route(o, d, paths=True))
if len(sys.argv) <= 3: med("summary() full APSP", lambda: g.summary(), reps=3)
a = g.od(s[:50], t[:50]); b = g.od(s[:50], t[:50], cpu_workers=1)
print("od pairs == run:", bool(np.array_equal(a, b)))
