# Shared by the device scripts (source it): `show REPORT NAME` prints one line of a run's
# report.json (run phase, wall, trees/s, the batch, queues and fold knobs, checksum), and
# `one NAME BINARY OUTPUT_DIR ARGS...` runs $B/BINARY on configs/apsp.toml with ARGS into
# $W/OUTPUT_DIR and shows it; `k8_both` tiles osm-moscow 8 x 8 (26.4M vertices), builds its
# hierarchy once, then runs the first 1% of its sources on the GPU alone with tuccompi-before
# and tuccompi, each with its full APSP extrapolated. The caller sets B (the binaries' folder),
# W (a work folder), and for k8_both D (osm-moscow.gr.gz and .co.gz) and TILE (tile_roads.py).
show() { python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); d = r["devices"][0]["tuning"] if r.get("devices") else {}
k = d.get("knobs", {}); v = lambda n: k.get(n, {}).get("value", "-")
print(f"{sys.argv[2]:<34} run {r['run_seconds']:8.4f} s wall {r['wall_seconds']:7.3f} s "
      f"{r['tasks']/r['run_seconds']:10,.0f} trees/s k {d.get('batch', {}).get('value')} "
      f"queues {d.get('queues', {}).get('value')} fold {v('fold_levels')} quads {v('fold_quads')} slices {v('fold_slices')} "
      f"up {d.get('local', {}).get('phast_up', {}).get('value', '-')} sum {r['checksum']['sum']}", flush=True)
PY
}
one() { # name binary output-dir args...
  local name=$1 b=$2 o=$3; shift 3
  eval timeout 300 $B/$b run configs/apsp.toml "$@" --set output.dir=\"$W/$o\" -q && show $W/$o/report.json "$name"
}
k8_both() {
  local T=$W/tiles8.gr b
  timeout 300 python3 $TILE $D/osm-moscow.gr.gz $D/osm-moscow.co.gz 8 $T >/dev/null || exit 1
  local K="--set input.path=\"$T\" --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"phast\""
  one "K=8 warm (hierarchy built)" tuccompi kw $K --set run.sources=64
  for b in tuccompi-before tuccompi; do
    one "K=8 1% $b" $b k-$b $K --set run.sources=263674
    python3 -c "import json; r=json.load(open('$W/k-$b/report.json')); print('   full APSP extrapolated %.1f min' % (26367488 / (r['tasks']/r['run_seconds']) / 60))"
  done
}
