#!/usr/bin/env bash
# OSM networks as routers build them, against scipy: the Helsinki extract by car, N points
# (default 1000, seeded, inside the extract's roads) snapped onto the nearest road as both the
# sources and the targets of an OD matrix, the network exported as edges.csv. The peer job loads
# edges.csv with pandas and runs scipy's dijkstra from the snapped vertices; its matrix must
# equal od.npz's. Turn restrictions are off in the compared run (edges.csv is the road network,
# without the turn expansion); a second tuccompi run with them on is timed and its hierarchy's
# size printed. Times are wall-clock seconds of each whole job (read, snap, build, solve, write).
#   plugins/benches/osm.sh TUCCOMPI_BIN DATA_DIR [N]
# e.g. plugins/benches/osm.sh target/release/tuccompi ../shared/data 1000
# Needs python3 with numpy, scipy and pandas. Exits 1 when the matrices differ.
set -eu
BIN=${1:?tuccompi binary}; DATA=${2:?data folder}; N=${3:-1000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
python3 - "$work/points.csv" "$N" <<'PY'
import random, sys
random.seed(37)
with open(sys.argv[1], "w") as f:
    f.write("lon,lat\n")
    for _ in range(int(sys.argv[2])):
        f.write(f"{random.uniform(24.936, 24.953):.6f},{random.uniform(60.1645, 60.1790):.6f}\n")
PY
config() { # output dir, extra [input.osm] lines
  printf '[run]\nplugin = "apsp"\nsources = { file = "%s" }\n[input]\npath = "%s"\n[input.osm]\nprofile = "car"\n%s\n[apsp]\ntargets = { file = "%s" }\n[output]\ndir = "%s"\n' \
    "$work/points.csv" "$DATA/helsinki.osm.pbf" "$2" "$work/points.csv" "$1"
}
config "$work/plain" 'export = true
turn_restrictions = false' >"$work/plain.toml"
config "$work/turns" '' >"$work/turns.toml"
secs() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}")' "$@"; }
t0=$(date +%s.%N)
"$BIN" run -q "$work/plain.toml" --set units.opencl='"none"'
t1=$(date +%s.%N)
"$BIN" run -q "$work/turns.toml" --set units.opencl='"none"'
t2=$(date +%s.%N)
echo "tuccompi, $N x $N points snapped onto edges, turn restrictions off, edges.csv written: $(secs "$t0" "$t1") s"
echo "tuccompi, the same with turn restrictions: $(secs "$t1" "$t2") s"
python3 - "$work/plain/report.json" "$work/turns/report.json" <<'PY'
import json, sys
for name, p in zip(("off", "on"), sys.argv[1:]):
    i = json.load(open(p))["input"]
    o = i["places"]["osm"]
    print(f"  turn restrictions {name}: {i['n']} vertices ({o['phantom_vertices']} phantom, "
          f"{o['turn_vertices']} turn copies), {i['m']} arcs, hierarchy "
          f"{i.get('preprocess_seconds', 0):.3f} s; restrictions applied {o['restrictions_applied']}, "
          f"via way {o['restrictions_via_way']}, unusable {o['restrictions_unusable']}")
PY
python3 "$here/osm.py" "$work/plain"
