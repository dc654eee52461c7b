#!/usr/bin/env bash
# Rule busy queues (scheduler.busy_queues) on the knn example with 4 queues on one GPU, the GPU
# alone: per rep, the BEFORE build's first run (fresh cache folder) and its run with that
# history, this build's with the rule on, one queue, and equal shares over the 4 queues; run
# phase, each queue's busy share and tasks, and an md5 of indices.npy (equal in every line).
#   bash plugins/benches/knn_busy.sh KNN_BEFORE KNN [REPS]   (needs python3 with numpy)
set -u
[ -n "${OCL_ICD_VENDORS:-}" ] || [ ! -e /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 ] || {
  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; }
A=$(realpath "${1:?knn binary before}"); B=$(realpath "${2:?knn binary}"); REPS=${3:-3}
K=$(mktemp -d); trap 'rm -rf "$K"' EXIT; cd "$K"
python3 -c "
import numpy as np
r = np.random.default_rng(1)
np.save('points.npy', r.random((1000000, 16), dtype=np.float32))
np.save('queries.npy', r.random((50000, 16), dtype=np.float32))"
printf '[run]\nplugin = "knn"\n[knn]\npoints = "points.npy"\nqueries = "queries.npy"\nk = 8\n[units]\nopencl = "all"\ndevice_type = "gpu"\ncpu_workers = 0\n[verify]\nf32_relative = 1e-6\n' > knn.toml
kn() { local l=$1 b=$2 c=$3; shift 3
  XDG_CACHE_HOME=$c "$b" run knn.toml -q --restart --set output.dir=\"out\" "$@" >/dev/null 2>err.txt || { echo "$l FAILED $(tail -c 300 err.txt)"; return; }
  python3 - "$l" <<'PY'
import json, sys, hashlib
r = json.load(open("out/report.json"))
busy = [round(u["busy_seconds"] / max(r["run_seconds"], 1e-9), 2) for u in r["units"] if u["kind"] != "cpu"]
tasks = [u["tasks"] for u in r["units"] if u["kind"] != "cpu"]
h = hashlib.md5(open("out/indices.npy", "rb").read()).hexdigest()[:8]
print(f'{sys.argv[1]:<40} run {r["run_seconds"]:7.3f} s  queues busy {busy} tasks {tasks} indices {h}', flush=True)
PY
}
G4="--set units.concurrent_kernels=4"
kn "warm-up" "$B" "$K/cw"
for rep in $(seq "$REPS"); do
  kn "before 4q work-queue first run #$rep" "$A" "$K/fb$rep" $G4
  kn "before 4q work-queue w/ history #$rep" "$A" "$K/fb$rep" $G4
  kn "busy_queues 4q first run #$rep" "$B" "$K/fa$rep" $G4 --set scheduler.busy_queues=true
  kn "busy_queues 4q w/ history #$rep" "$B" "$K/fa$rep" $G4 --set scheduler.busy_queues=true
  kn "1 queue work-queue #$rep" "$B" "$K/one$rep"
  kn "4q equitable #$rep" "$B" "$K/eq$rep" $G4 --set scheduler.policy=\"equitable\"
done
