#!/usr/bin/env bash
# Call 4 of the work-queue measurements: traced short runs (GPU from history, new CPU worker counts), head vs new
# short runs, and the two CPU-only combinations with 4 rounds.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# DIR holds tuccompi (this build), tuccompi-head (the build before, for the A/B rows), collatz
# (the example), data/osm-bremen-dist.gr.gz and data/osm-moscow.gr.gz: run as
#   bash plugins/benches/q22_call4.sh DIR    (on the GPU machine; prints and tees into $OUT or /tmp)
D=$(cd "${1:?usage: q22_call4.sh DIR}" && pwd); cd "$D"
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
exec > >(tee ${OUT:-/tmp}/go4.log) 2>&1
nvidia-smi -L
tr() { # label binary cache workers
  rm -rf /tmp/w
  XDG_CACHE_HOME=$3 ./$2 run "$REPO/configs/apsp.toml" -q --set input.path=\"data/osm-bremen-dist.gr.gz\" --set run.sources=\"all\" --set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\" --set output.dir=\"/tmp/w\" --set output.trace=true --set units.cpu_workers=$4 2>/tmp/e.txt || { echo "FAILED $1 $(tail -c 200 /tmp/e.txt)"; return; }
  python3 - "$1" "$3" <<'PY'
import json, sys, glob
r = json.load(open("/tmp/w/report.json"))
ev = json.load(open("/tmp/w/trace.json"))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M"}
st = "".join({"history": "H", "probe": "P"}.get(u.get("start"), "-") for u in r["units"])
print(f"{sys.argv[1]}: run {r['run_seconds']*1e3:.2f} ms, start {st}")
xs = sorted((e for e in ev if e["ph"] == "X"), key=lambda e: e["ts"])
print("   " + "; ".join(f"{names[e['tid']]} {e['ts']/1e3:.2f}+{e['dur']/1e3:.2f} {e['args']['tasks']}" for e in xs if names[e['tid']].startswith("gpu") or e["ts"] < 4000))
for f in glob.glob(sys.argv[2] + "/tuccompi/speeds*"):
    for k, v in json.load(open(f))["entries"].items():
        if "queues" in k and '"cpu_algorithm":"phast"' in k:
            print(f"   gpu model now: latency {v['latency']*1e3:.3f} ms, per task {v['per_task']*1e9:.1f} ns")
PY
}
for rep in 1 2; do
  c=/tmp/t$rep
  tr "new cpu0 first" tuccompi $c 0
  tr "new cpu14 new" tuccompi $c 14
  tr "new cpu2 new" tuccompi $c 2
  tr "new cpu2 again" tuccompi $c 2
  tr "new cpu14 again" tuccompi $c 14
done
echo "== CPU-only combinations, 4 rounds =="
(cd "$REPO" && XDG_CACHE_HOME=/tmp/cache OUT=/tmp REPS=4 COMBOS="phast cpu;dijkstra cpu" bash plugins/benches/device.sh "$D/tuccompi" "$D/data" defaults)
