#!/usr/bin/env bash
# osm-moscow full APSP on one GPU against two (CUDA_VISIBLE_DEVICES 0 and 0,1), default units and GPUs
# alone, cached hierarchy then cold caches, alternated: process wall, report phases, the driver's
# listing and context seconds (devices[].opened), GPU tasks, checksum.
#   bash plugins/benches/two_gpu_start.sh DIR   (DIR holds tuccompi and osm-moscow.gr.gz; run from the repository root)
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
D=$(realpath "${1:?a folder with tuccompi and osm-moscow.gr.gz}"); B=$D/tuccompi; M=$D/osm-moscow.gr.gz
W=$(mktemp -d)
nvidia-smi -L; TIMEFORMAT="clinfo-free listing n/a"
show() { python3 - "$1" "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); a = r["input"].get("algorithm", {}); p = r["phase_seconds"]
dev = [[round(x, 3) for x in d.get("opened", [])] for d in r["devices"]]
print(f"{sys.argv[2]:22} proc {float(sys.argv[3]):.3f} wall {r['wall_seconds']:.3f} s | " + " ".join(f"{k} {v:.3f}" for k, v in p.items())
      + f" | read {a.get('read_seconds', 0):.3f} pre {a.get('preprocess_seconds', 0):.3f} ({a.get('source')}) | opened {dev} | gpu tasks {[u['tasks'] for u in r['units'] if u['kind']=='gpu']} | sum {r['checksum']['sum']}")
PY
}
one() { # label gpus cache extra...
  local l=$1 g=$2 c=$3; shift 3; rm -rf $W/o; t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$g XDG_CACHE_HOME=$c $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set 'apsp.sources="all"' --set "output.dir=\"$W/o\"" "$@" || echo FAILED
  t1=$(date +%s.%N); show $W/o/report.json "$l" "$(python3 -c "print($t1-$t0)")"
}
one warm1 0 $W/c >/dev/null; one warm2 0,1 $W/c > /dev/null
echo "== cached hierarchy, default units, alternated"
for i in 1 2 3 4; do one "1 GPU #$i" 0 $W/c; one "2 GPUs #$i" 0,1 $W/c; done
echo "== GPUs alone"
for i in 1 2; do one "1 GPU alone #$i" 0 $W/c --set units.cpu_workers=0; one "2 GPUs alone #$i" 0,1 $W/c --set units.cpu_workers=0; done
echo "== cold hierarchy cache"
for i in 1 2; do one "cold 1 GPU #$i" 0 $W/cold1$i; one "cold 2 GPUs #$i" 0,1 $W/cold2$i; done
