#!/usr/bin/env bash
# On the H200 machine: K = 8 tiles of osm-moscow (cold build, cached prepare, 1% of the
# sources on the default config), then osm-moscow's full APSP cached.
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
# Usage: put the binary (tuccompi), plugins/benches/device.sh, ../shared/tools/tile_roads.py and
# osm-moscow.{gr,co}.gz (under data/) in .dev-k8/, then run from the repository root.
K=.dev-k8; B=$K/tuccompi; D=$K/data
nproc; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
t0=$(date +%s.%N)
mkdir -p /tmp/scale
python3 $K/tile_roads.py $D/osm-moscow.gr.gz $D/osm-moscow.co.gz 8 /tmp/scale/tiles8.gr >/dev/null
echo "K=8 generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s, $(stat -c %s /tmp/scale/tiles8.gr) bytes"
# Cold build and cached prepare (CPU workers only, 16 sources); cache in /tmp/scale/cache-tuccompi.
KS=8 GDIR=/tmp/scale timeout 400 bash $K/device.sh $B $D scale
export XDG_CACHE_HOME=/tmp/scale/cache-tuccompi
# 1% of the sources (264,000 of 26.4M) on the default config (GPU + CPU workers, auto -> PHAST
# from the cached hierarchy), then the GPU alone.
OUT=/tmp/o; cd $K/.. 
for units in both gpu; do
  extra=(); [ $units = gpu ] && extra=(--set units.cpu_workers=0)
  rm -rf /tmp/o
  /usr/bin/time -v -o /tmp/t.txt timeout 300 $B run configs/apsp.toml -q --set input.path='"/tmp/scale/tiles8.gr"' --set run.sources=264000 --set output.dir='"/tmp/o"' "${extra[@]}" 2>/tmp/e.txt || { echo "$units FAILED: $(tail -c 400 /tmp/e.txt)"; continue; }
  python3 - "$units" /tmp/o/report.json /tmp/t.txt <<'PY'
import json, re, sys
r = json.load(open(sys.argv[2])); t = open(sys.argv[3]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 2**20
ph = r.get("phase_seconds", {}); inp = r["input"]; a = inp.get("algorithm", {}); c = r["checksum"]
n = inp["n"]; rate = r["tasks"] / r["run_seconds"]
gpu = sum(u["tasks"] for u in r["units"] if u["kind"] == "gpu")
print(f"K=8 {sys.argv[1]}: {r['tasks']} trees in {r['run_seconds']:.2f} s run = {rate:,.0f} trees/s (GPU {gpu}); full APSP extrapolated {n/rate/3600:.2f} h; wall {r['wall_seconds']:.2f} s; phases { {k: round(v,2) for k,v in ph.items()} }; width {inp.get('compute_type', inp.get('distance_type'))} redone {c.get('redone_u64')}; cpu {a.get('cpu_algorithm')} gpu {a.get('gpu_algorithm')} source {a.get('source')}; RSS {rss:.1f} GiB; sum {c['sum']}", flush=True)
PY
done
# osm-moscow full APSP, default config: cold (builds), then cached twice.
unset XDG_CACHE_HOME; export XDG_CACHE_HOME=/tmp/mcache
for i in 1 2 3; do
  rm -rf /tmp/o
  timeout 120 $B run configs/apsp.toml -q --set input.path="\"$D/osm-moscow.gr.gz\"" --set run.sources='"all"' --set output.dir='"/tmp/o"' 2>/tmp/e.txt || { echo "moscow FAILED: $(tail -c 300 /tmp/e.txt)"; continue; }
  python3 -c "
import json; r=json.load(open('/tmp/o/report.json')); a=r['input'].get('algorithm',{}); c=r['checksum']
print(f\"moscow full APSP run $i: wall {r['wall_seconds']:.2f} s run {r['run_seconds']:.3f} s phases { {k: round(v,2) for k,v in r.get('phase_seconds',{}).items()} } source {a.get('source')} width {r['input'].get('compute_type')} sum {c['sum']} unr {c['unreachable']}\")"
done
