#!/usr/bin/env bash
# Call 3 of the work-queue measurements: (a) short bremen runs, head (d901263) vs new (item 7), history per build,
# CPU worker counts changing; (b) 2,048-source mixed runs against the ideal end; (c) CPU-only
# PHAST at 100,000 sources, defaults vs fixed chunks; (d) the nine-way table (paired).
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# DIR holds tuccompi (this build), tuccompi-head (the build before, for the A/B rows), collatz
# (the example), data/osm-bremen-dist.gr.gz and data/osm-moscow.gr.gz: run as
#   bash plugins/benches/q22_call3.sh DIR    (on the GPU machine; prints and tees into $OUT or /tmp)
D=$(cd "${1:?usage: q22_call3.sh DIR}" && pwd); cd "$D"
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
exec > >(tee ${OUT:-/tmp}/go3.log) 2>&1
nvidia-smi -L; nproc
br() { # label binary cache workers
  rm -rf /tmp/w
  XDG_CACHE_HOME=$3 ./$2 run "$REPO/configs/apsp.toml" -q --set input.path=\"data/osm-bremen-dist.gr.gz\" --set run.sources=\"all\" --set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\" --set output.dir=\"/tmp/w\" --set units.cpu_workers=$4 2>/tmp/e.txt || { echo "FAILED $1 $(tail -c 200 /tmp/e.txt)"; return; }
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open("/tmp/w/report.json")); us = r["units"]
cpu = [u for u in us if u["kind"] == "cpu"]
st = "".join({"history": "H", "probe": "P"}.get(u.get("start"), "-") for u in us)
print(f"{sys.argv[1]:<22} run {r['run_seconds']*1e3:7.2f} ms cpu tasks {sum(u['tasks'] for u in cpu):5d} gpu chunks {sum(u['chunks'] for u in us if u['kind']=='gpu'):2d} start {st} sum={r['checksum']['sum']}", flush=True)
PY
}
echo "== (a) short: osm-bremen-dist full APSP, GPU PHAST =="
for rep in 1 2; do
  for b in head new; do
    bin=tuccompi; [ $b = head ] && bin=tuccompi-head
    c=/tmp/s-$b-$rep
    br "$b cpu0 first" $bin $c 0
    br "$b cpu14 new cpus" $bin $c 14
    br "$b cpu2 new cpus" $bin $c 2
    for i in 1 2 3; do for w in 0 14 2; do br "$b cpu$w" $bin $c $w; done; done
  done
done
echo "== (b) 2,048 sources, Dijkstra (CPU) + work list (GPU), osm-moscow, history warm =="
for i in 0 1 2 3 4; do
  rm -rf /tmp/w
  XDG_CACHE_HOME=/tmp/mix ./tuccompi run "$REPO/configs/apsp.toml" -q --set input.path=\"data/osm-moscow.gr.gz\" --set run.sources=2048 --set apsp.cpu_algorithm=\"dijkstra\" --set apsp.gpu_algorithm=\"worklist\" --set output.dir=\"/tmp/w\" 2>/tmp/e.txt || { echo "FAILED $(tail -c 200 /tmp/e.txt)"; continue; }
  python3 - $i <<'PY'
import json, sys
r = json.load(open("/tmp/w/report.json")); us = r["units"]; rs = r["run_seconds"]
rate = sum(u["tasks"] / u["busy_seconds"] for u in us if u["tasks"] and u["busy_seconds"] > 0)
ideal = r["tasks"] / rate
ends = [u.get("ended_seconds") for u in us]
print(f"run {sys.argv[1]}: {rs:.3f} s, ideal by the units' measured rates {ideal:.3f} s, ratio {rs/ideal:.3f}; gpu {sum(u['tasks'] for u in us if u['kind']=='gpu')} cpu {sum(u['tasks'] for u in us if u['kind']=='cpu')} tasks; start {sorted(set(u.get('start','-') for u in us))}", flush=True)
PY
done
echo "== (c) CPU PHAST, osm-moscow, 100,000 sources, 16 workers =="
(cd "$REPO" && OUT=/tmp XDG_CACHE_HOME=/tmp/idle REPS=3 bash plugins/benches/device.sh "$D/tuccompi" "$D/data" idle)
echo "== (d) nine combinations =="
(cd "$REPO" && XDG_CACHE_HOME=/tmp/cache OUT=/tmp REPS=2 CZ="$D/collatz" bash plugins/benches/device.sh "$D/tuccompi" "$D/data" defaults)
