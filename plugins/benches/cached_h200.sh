#!/usr/bin/env bash
# Cached starts and short mixed runs, H200 machine. OLD = .dev-k8/tuccompi
# (main at c05799f: before the cache reader change and the ready merge), NEW = main at the merge.
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
# Usage: .dev-k8/ as for plugins/benches/scale_h200.sh plus tuccompi-new (the build measured against
# tuccompi); .dev-ready/ with device.sh, configs/apsp.toml and data/osm-bremen-dist.gr.gz.
K=.dev-k8; D=$K/data
nvidia-smi -L; nproc
# 1. bremen full APSP (GPU PHAST), GPU alone vs GPU + CPU workers, the rule build
#    (= NEW), speed history carried over.
( cd .dev-ready && OUT=/tmp XDG_CACHE_HOME=/tmp/c-rule REPS=5 bash device.sh ../$K/tuccompi-new data short )
# 2. K = 8, cold build by NEW, then cached prepare OLD/NEW alternated.
t0=$(date +%s.%N); mkdir -p /tmp/scale
python3 $K/tile_roads.py $D/osm-moscow.gr.gz $D/osm-moscow.co.gz 8 /tmp/scale/tiles8.gr >/dev/null
echo "K=8 generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
export XDG_CACHE_HOME=/tmp/scale/cache
run8() { # label bin
  rm -rf /tmp/o
  /usr/bin/time -v -o /tmp/t.txt timeout 300 $2 run configs/apsp.toml -q --set input.path='"/tmp/scale/tiles8.gr"' --set run.sources=16 --set apsp.cpu_algorithm='"phast"' --set units.opencl='"none"' --set output.dir='"/tmp/o"' 2>/tmp/e.txt || { echo "$1 FAILED: $(tail -c 400 /tmp/e.txt)"; return; }
  python3 - "$1" /tmp/o/report.json /tmp/t.txt <<'PY'
import json, re, sys
r = json.load(open(sys.argv[2])); t = open(sys.argv[3]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 2**20
ph = r.get("phase_seconds", {}); a = r["input"].get("algorithm", {})
print(f"{sys.argv[1]:<16} wall {r['wall_seconds']:7.2f} s prepare {ph.get('prepare',0):7.2f} s preprocess {a.get('preprocess_seconds',0):7.2f} s ({a.get('source')}) RSS {rss:5.2f} GiB width {a.get('width')} sum {r['checksum']['sum']}", flush=True)
PY
}
run8 "K=8 new cold" $K/tuccompi-new
ls -la /tmp/scale/cache/tuccompi/*/
for i in 1 2; do run8 "K=8 old cached" $K/tuccompi; run8 "K=8 new cached" $K/tuccompi-new; done
# 3. osm-moscow full APSP, default config, NEW: cold then cached twice.
export XDG_CACHE_HOME=/tmp/mcache
for i in 1 2 3; do
  rm -rf /tmp/o
  timeout 120 $K/tuccompi-new run configs/apsp.toml -q --set input.path="\"$D/osm-moscow.gr.gz\"" --set run.sources='"all"' --set output.dir='"/tmp/o"' 2>/tmp/e.txt || { echo "moscow FAILED: $(tail -c 300 /tmp/e.txt)"; continue; }
  python3 -c "
import json; r=json.load(open('/tmp/o/report.json')); a=r['input'].get('algorithm',{}); c=r['checksum']
cpu=sum(u['tasks'] for u in r['units'] if u['kind']=='cpu')
print(f\"moscow full APSP new $i: wall {r['wall_seconds']:.2f} s run {r['run_seconds']:.3f} s phases { {k: round(v,3) for k,v in r.get('phase_seconds',{}).items()} } source {a.get('source')} cpu tasks {cpu} sum {c['sum']} unr {c['unreachable']}\")"
done
