#!/usr/bin/env bash
# Fewer bytes per PHAST tree (issue 36 item 3): the build before against this one, alternated.
# osm-moscow full APSP (default config, then GPU alone), then the K = 8 tiling (26.4M vertices)
# with 1% of its sources on the GPU alone (each binary builds its own hierarchy first: their
# cache formats differ); CPU PHAST alone on osm-moscow. Prints run phase, trees/s and checksum
# per run.
# Usage: bash plugins/benches/phast_bytes.sh BIN_DIR DATA_DIR [TILE_ROADS_PY]
#   (BIN_DIR: tuccompi-before, tuccompi; DATA_DIR: osm-moscow.gr.gz, and osm-moscow.co.gz for K = 8)
set -u
B=$1; D=$2; TILE=${3:-}; W=$(mktemp -d); export XDG_CACHE_HOME=$W/cache
show() { python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); d = r["devices"][0]["tuning"] if r.get("devices") else {}
k = d.get("knobs", {})
print(f"{sys.argv[2]:<34} run {r['run_seconds']:7.3f} s wall {r['wall_seconds']:7.3f} s "
      f"{r['tasks']/r['run_seconds']:10,.0f} trees/s k {d.get('batch', {}).get('value')} "
      f"fold {k.get('fold_levels', {}).get('value', '-')} top {k.get('top_levels', {}).get('value', '-')} sum {r['checksum']['sum']}", flush=True)
PY
}
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\""
for b in tuccompi-before tuccompi; do
  eval $B/$b run configs/apsp.toml $M --set output.dir=\"$W/warm-$b\" -q && show $W/warm-$b/report.json "warm (hierarchy built) $b"
done
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    eval $B/$b run configs/apsp.toml $M --set output.dir=\"$W/d-$b-$i\" -q && show $W/d-$b-$i/report.json "default $b#$i"
    eval $B/$b run configs/apsp.toml $M --set units.cpu_workers=0 --set output.dir=\"$W/g-$b-$i\" -q && show $W/g-$b-$i/report.json "gpu alone $b#$i"
  done
done
# CPU PHAST alone (every core, no OpenCL), 65,536 sources: the vertex order's share.
for i in 1 2; do
  for b in tuccompi-before tuccompi; do
    eval $B/$b run configs/apsp.toml $M --set run.sources=65536 --set units.opencl=\"none\" --set apsp.cpu_algorithm=\"phast\" --set output.dir=\"$W/c-$b-$i\" -q && show $W/c-$b-$i/report.json "cpu phast $b#$i"
  done
done
[ -n "$TILE" ] || exit 0
T=$W/tiles8.gr
python3 $TILE $D/osm-moscow.gr.gz $D/osm-moscow.co.gz 8 $T >/dev/null || exit 1
K="--set input.path=\"$T\" --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"phast\""
for b in tuccompi-before tuccompi; do
  eval $B/$b run configs/apsp.toml $K --set run.sources=64 --set output.dir=\"$W/kw-$b\" -q && show $W/kw-$b/report.json "K=8 warm (hierarchy built) $b"
done
for b in tuccompi-before tuccompi; do
  eval $B/$b run configs/apsp.toml $K --set run.sources=263674 --set output.dir=\"$W/k-$b\" -q && show $W/k-$b/report.json "K=8 1% $b"
  python3 -c "import json; r=json.load(open('$W/k-$b/report.json')); print('   full APSP extrapolated %.1f min' % (26367488 / (r['tasks']/r['run_seconds']) / 60))"
done
