#!/bin/sh
# Issue 49: the knn example's run phase under each policy on one GPU with 4 queues, alone and
# beside the CPU workers, alternated REPS times in one command (seconds of the run phase,
# report.json's run_seconds), with every run's indices.npy checked identical.
#   KNN=target/release/knn REPS=3 sh plugins/benches/knn_queues.sh /tmp/knnq
#   (ONLY=mixed: the GPU alone and GPU + CPU workers, after the same warm-ups)
set -e
KNN=$(realpath "${KNN:-target/release/knn}")
REPS=${REPS:-3}
D=${1:-/tmp/knnq}
N=${N:-1000000}
Q=${Q:-50000}
mkdir -p "$D"
cd "$D"
python3 -c "
import numpy as np
r = np.random.default_rng(1)
np.save('points.npy', r.random(($N, 16), dtype=np.float32))
np.save('queries.npy', r.random(($Q, 16), dtype=np.float32))"
cat > knn.toml <<TOML
[run]
plugin = "knn"
[knn]
points = "points.npy"
queries = "queries.npy"
k = 8
[units]
opencl = "all"
device_type = "gpu"
[verify]
f32_relative = 1e-6
TOML
export XDG_CACHE_HOME="$D/cache"
one() {
    label=$1
    shift
    "$KNN" run knn.toml -q --restart --set output.dir=\"out\" "$@" >/dev/null
    python3 - "$label" <<'PY'
import json, sys, hashlib
r = json.load(open("out/report.json"))
busy = [round(u["busy_seconds"] / max(r["run_seconds"], 1e-9), 2) for u in r["units"] if u["kind"] != "cpu"]
h = hashlib.md5(open("out/indices.npy", "rb").read()).hexdigest()[:8]
cpu = sum(u["tasks"] for u in r["units"] if u["kind"] == "cpu")
print(f'{sys.argv[1]:<34} run {r["run_seconds"]:7.3f} s  gpu queues busy {busy}  cpu tasks {cpu}  indices {h}')
PY
}
G4="--set units.concurrent_kernels=4"
GPU="--set units.cpu_workers=0"
EQ="--set scheduler.policy=\"equitable\""
# A first run of each unit set stores its speed history (scheduler.shares = "speed" reads it).
one "warm-up: gpu work-queue" $GPU
one "warm-up: gpu + cpus work-queue"
one "warm-up: cpus work-queue" --set units.opencl=\"none\"
for rep in $(seq "$REPS"); do
    echo "--- rep $rep"
    if [ "${ONLY:-}" = mixed ]; then # the GPU alone against GPU + CPU workers only
        one "gpu (auto queues) work-queue" $GPU
        one "gpu + cpus work-queue"
        continue
    fi
    one "gpu (auto queues) work-queue" $GPU
    one "gpu (auto queues) equitable" $GPU $EQ
    one "gpu 4 queues equitable" $GPU $G4 $EQ
    one "gpu 4 queues work-queue" $GPU $G4
    one "gpu + cpus work-queue" 
    one "gpu + cpus equitable speed" $EQ --set scheduler.shares=\"speed\"
    one "cpus work-queue" --set units.opencl=\"none\"
done
