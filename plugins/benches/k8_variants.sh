#!/usr/bin/env bash
# GPU PHAST on the K = 8 tiling, 1% of the sources, GPU alone: the predicted parameters, then
# apsp.gpu_top_levels = 0 (one launch per level). Run after plugins/benches/many_gpu.sh (same WORK
# folder /tmp/many: the tiling and its cached hierarchy).
#   bash plugins/benches/k8_variants.sh DIR     (DIR as for plugins/benches/many_gpu.sh)
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
D=$(cd "${1:?usage: k8_variants.sh DIR}" && pwd); W=/tmp/many; mkdir -p $W; export XDG_CACHE_HOME=$W/cache
T=$W/tiles8.gr
[ -s $T ] || python3 $D/tile_roads.py $D/data/osm-moscow.gr.gz $D/data/osm-moscow.co.gz 8 $T >/dev/null
run() { rm -rf $W/o; $D/tuccompi run $D/configs/apsp.toml -q --set input.path="\"$T\"" --set run.sources=263674 --set units.cpu_workers=0 --set apsp.gpu_algorithm='"phast"' --set output.dir="\"$W/o\"" "$@" 2>$W/e.txt || { echo "FAILED $*: $(tail -c 300 $W/e.txt)"; return; }
python3 - "$*" <<'PY'
import json, sys
r = json.load(open("/tmp/many/o/report.json")); d = r["devices"][0]["tuning"]
print(f"{sys.argv[1]:<50} run {r['run_seconds']:7.3f} s {263674/r['run_seconds']:8,.0f} trees/s full {26367488/(263674/r['run_seconds'])/60:6.2f} min k {d['batch']['value']} queues {d['queues']['value']} top {d['sweep']['top_levels']['value']} sum {r['checksum']['sum']}", flush=True)
PY
}
# (the hierarchy is built by many_gpu.sh first)
for a in "" "--set apsp.gpu_top_levels=0"; do run $a; done
