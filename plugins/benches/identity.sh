#!/usr/bin/env bash
# Byte-identity of two builds' results: every CPU-runnable built-in config (the quick start
# included) and the real graphs rome99 and osm-bremen-dist, run by both binaries on CPUs only
# (`units.opencl = "none"`), each into a fresh directory; summary.csv, distances.npy and od.npz
# must be equal byte for byte, and report.json's checksum equal. Run from the repository root:
#   plugins/benches/identity.sh BASE_BIN NEW_BIN
# e.g. plugins/benches/identity.sh /work/main/target/release/tuccompi target/release/tuccompi
# Prints one line per case and exits 1 on any difference.
set -u
BASE=${1:?base binary}; NEW=${2:?new binary}
DATA=${DATA:-../shared/data}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
fail=0
one() { # label config --set ...
  local label=$1 cfg=$2; shift 2
  local b n f
  for who in base new; do
    local bin=$BASE; [ $who = new ] && bin=$NEW
    XDG_CACHE_HOME=$work/cache-$who "$bin" run "$cfg" -q --set units.opencl='"none"' \
      --set output.dir="\"$work/$label-$who\"" "$@" >"$work/$label-$who.log" 2>&1 \
      || { echo "$label: $who failed: $(tail -3 "$work/$label-$who.log")"; fail=1; return; }
  done
  b=$work/$label-base; n=$work/$label-new
  local same="" diff=""
  for f in summary.csv distances.npy od.npz; do
    if [ -e "$b/$f" ] || [ -e "$n/$f" ]; then
      if cmp -s "$b/$f" "$n/$f"; then same="$same $f"; else diff="$diff $f"; fi
    fi
  done
  if python3 - "$b/report.json" "$n/report.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["checksum"] for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
PY
  then same="$same checksum"; else diff="$diff checksum"; fi
  if [ -n "$diff" ]; then echo "$label: DIFFERENT:$diff (same:$same)"; fail=1
  else echo "$label: identical:$same"; fi
}
one quickstart configs/apsp.toml
one apsp-gpu configs/apsp-gpu.toml --set units.cpu_workers='"auto"' --set run.sources=64
one apsp-hetero configs/apsp-hetero.toml --set output.trace=false --set run.sources=256
one dense-dijkstra configs/dense-dijkstra.toml --set output.distances=true
one fw-naive configs/fw-naive.toml --set output.distances=true
one fw-blocked configs/fw-blocked.toml --set input.generate.vertices=1024 --set output.distances=true
one rkleene configs/rkleene.toml --set input.generate.vertices=1024 --set output.distances=true
one osm-od configs/osm-od.toml --set input.path="\"$DATA/helsinki.osm.pbf\""
for g in rome99 osm-bremen-dist; do
  printf '[run]\nplugin = "apsp"\nsources = 64\n[input]\npath = "%s"\n[output]\ndistances = true\n' \
    "$DATA/$g.gr.gz" >"$work/$g.toml"
  one "$g" "$work/$g.toml"
  one "$g-dijkstra" "$work/$g.toml" --set apsp.cpu_algorithm='"dijkstra"'
done
exit $fail
