#!/usr/bin/env bash
# `auto` on a busy machine: the default config against cpu_algorithm = "phast" and "dijkstra"
# named, on a 1,000 x 1,000 OD of osm-moscow (the first 1,000 ids as sources and as targets),
# with two busy background processes and a cold hierarchy cache (a fresh XDG_CACHE_HOME) for
# every run; REPS runs of each, alternated. Run from the repository root:
#   [REPS=3] [BUSY=2] plugins/benches/auto_busy.sh BIN [--set KEY=VALUE ...]
# Prints one line per run (wall seconds, the algorithms, the forecast against the measured
# build and run) and the ratio of the default's median wall to the better named one's.
# Measure on a machine with nothing else running (`uptime` below 3 on 2 cores before it).
set -u
B=${1:?binary}; shift
CFG=configs/apsp.toml
GRAPH=${GRAPH:-../shared/data/osm-moscow.gr.gz}
[ -e "$GRAPH" ] || { echo "NOT RUN: $GRAPH not found"; exit 1; }
echo "load before: $(uptime)"
pids=()
for _ in $(seq "${BUSY:-2}"); do yes > /dev/null & pids+=($!); done
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap stop EXIT
now() { date +%s.%N; }
out=$(mktemp -d)
one() { # label args...
  local label=$1; shift
  local c o t0 t1 rc
  c=$(mktemp -d); o=$out/$label
  t0=$(now)
  XDG_CACHE_HOME=$c "$B" run $CFG -q --set input.path="\"$GRAPH\"" --set run.sources=1000 \
    --set apsp.targets=1000 --set output.dir="\"$o\"" "$@" 2>/dev/null; rc=$?
  t1=$(now)
  python3 - "$label" "$rc" "$t0" "$t1" "$o/report.json" <<'PY'
import json, sys
label, rc, t0, t1, rp = sys.argv[1:]
line = f"{label:12s} {float(t1) - float(t0):7.3f} s rc={rc}"
try:
    r = json.load(open(rp)); i = r["input"]; a = i["algorithm"]; f = a.get("forecast", {})
    ph = {k: round(v, 2) for k, v in r["phase_seconds"].items()}
    line += f" {i['cpu_algorithm']} {ph} sum={r['checksum']['sum']}"
    if f:
        line += (f" | forecast: tree {f['dijkstra_tree_cpu_seconds']*1e3:.1f} ms cpu"
                 f" {f['dijkstra_tree_wall_seconds']*1e3:.1f} ms wall, share {f['core_share']:.2f},"
                 f" build {f['build_seconds']:.1f} s (measured {f.get('measured_build_seconds', float('nan')):.1f}),"
                 f" run {f['run_seconds']:.1f} s ({f['chosen']})")
except Exception as e:
    line += f" (no report: {e})"
print(line, flush=True)
PY
  rm -rf "$c"
}
for rep in $(seq "${REPS:-3}"); do
  one "default$rep" "$@"
  one "phast$rep" --set apsp.cpu_algorithm=\"phast\" "$@"
  one "dijkstra$rep" --set apsp.cpu_algorithm=\"dijkstra\" "$@"
done | tee "$out/lines"
python3 - "$out/lines" <<'PY'
import statistics, sys
walls = {}
for line in open(sys.argv[1]):
    label, wall = line.split()[:2]
    walls.setdefault(label.rstrip("0123456789"), []).append(float(wall))
med = {k: statistics.median(v) for k, v in walls.items()}
best = min(med.get("phast", float("inf")), med.get("dijkstra", float("inf")))
print("median wall: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()))
print(f"default / better named: {med['default'] / best:.2f}")
PY
rm -rf "$out"
