#!/usr/bin/env bash
# Accessibility without a matrix: how many of 5,000 POIs lie within 500, 1,000 and 2,000 of each
# of 10,000 sources on osm-moscow (issue 37's job), with tuccompi ([apsp.reach], the counts
# folded per source inside the run) and with scipy (dijkstra(indices=..., limit=2000) in
# chunks, then counting); the counts are compared equal and the times printed in seconds.
# The warm run is repeated with the CPU sweeps over every vertex (`apsp.sweep = "full"`) and
# restricted to the POIs' selection ("auto"), and with the binary OLD when it is set (a build
# from before restricted sweeps); their reach.csv must be identical.
#   [OLD=BIN] [CPU_ONLY=1] plugins/benches/reach.sh TUCCOMPI_BINARY DATA_FOLDER [GRAPH [SOURCES [POIS]]]
# GRAPH defaults to osm-moscow.gr.gz (rome99.gr.gz works for a quick try); needs python3 with
# numpy and scipy. Writes only under a fresh ${TMPDIR:-/tmp}/tuccompi-reach-bench.XXXXXX.
set -eu
BIN=$(realpath "$1")
DATA=$(realpath "$2")
GRAPH=${3:-osm-moscow.gr.gz}
SOURCES=${4:-10000}
POIS=${5:-5000}
W=$(mktemp -d "${TMPDIR:-/tmp}/tuccompi-reach-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export XDG_CACHE_HOME="$W/cache"   # the hierarchy is built by the first run, read by the second
HERE=$(dirname "$(realpath "$0")")
echo "load average: $(cut -d" " -f1-3 /proc/loadavg) on $(nproc) cores"
python3 "$HERE/reach.py" pick "$DATA/$GRAPH" "$W" "$SOURCES" "$POIS"
cat > "$W/reach.toml" <<TOML
[run]
plugin = "apsp"
sources = { file = "$W/sources.txt" }
[input]
path = "$DATA/$GRAPH"
[apsp]
targets = { file = "$W/pois.txt" }
[apsp.reach]
radii = [500, 1000, 2000]
nearest = 3
TOML
[ -n "${CPU_ONLY:-}" ] && printf '[units]\nopencl = "none"\n' >> "$W/reach.toml"
for pass in cold warm; do
  rm -rf "$W/out"
  t0=$(date +%s.%N)
  "$BIN" -q run "$W/reach.toml" --set "output.dir=\"$W/out\""
  t1=$(date +%s.%N)
  echo "tuccompi ($pass: hierarchy $( [ $pass = cold ] && echo built || echo cached )): $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s wall"
done
# Warm runs side by side: full sweeps, restricted sweeps, the old build.
for run in full auto ${OLD:+old}; do
  bin=$BIN; set=(--set "apsp.sweep=\"$run\"")
  [ "$run" = old ] && { bin=$(realpath "$OLD"); set=(); }
  rm -rf "$W/o-$run"
  t0=$(date +%s.%N)
  "$bin" -q run "$W/reach.toml" --set "output.dir=\"$W/o-$run\"" "${set[@]}"
  t1=$(date +%s.%N)
  python3 - "$W/o-$run/report.json" "$run" "$(awk "BEGIN { print $t1 - $t0 }")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); a = r["input"].get("algorithm", {})
print(f"tuccompi sweep={sys.argv[2]:5}: {float(sys.argv[3]):.2f} s wall, run phase "
      f"{r['run_seconds']:.2f} s ({a.get('sweep', 'full')}: "
      f"{a.get('restricted_vertices', r['input']['n'])} of {r['input']['n']} vertices)")
PY
  cmp "$W/o-full/reach.csv" "$W/o-$run/reach.csv"
  cmp "$W/o-full/nearest.csv" "$W/o-$run/nearest.csv"
done
python3 - "$W/out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); p = r["phase_seconds"]
print("tuccompi warm phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in p.items()))
units = {}
for u in r["units"]:
    units[u["kind"]] = units.get(u["kind"], 0) + u["tasks"]
print("tasks per unit kind: " + ", ".join(f"{k} {v}" for k, v in units.items()))
PY
ls -l "$W/out" | awk 'NR > 1 {print "  " $5 " bytes  " $9}'
python3 "$HERE/reach.py" scipy "$DATA/$GRAPH" "$W"
