#!/usr/bin/env bash
# GPU-machine measurements for BENCHMARKS.md. Run from the repository root:
#   plugins/benches/device.sh BIN DATA_DIR [SECTION...]
# Sections: devices algos queues hetero batch full tune dense phast phastgpu phastcpu moscowfull mpi
# mpioverhead split split2 cpu16 procs sched idle defaults short
# collatz workers mpienv mpigpu width scale (and more below; phast: PHB=the phast bench binary, phastgpu:
# PB=the phast_gpu bench binary, default beside BIN).
# Prints one line per run:
#   label  wall_s  tasks  tasks/s  checksum
# NVIDIA's OpenCL is registered through OCL_ICD_VENDORS when the loader lacks it.
set -u
B=${1:?binary}; D=${2:?data dir}; shift 2
SECTIONS=${*:-devices algos queues hetero}
if ! ls /etc/OpenCL/vendors/*nvidia* >/dev/null 2>&1; then
  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
fi
CFG=configs/apsp.toml
OUT=${OUT:-/tmp}/bench-out
# With TRACE=1, each run writes trace.json and a line on the end of the run: when the GPU's
# last chunk ended, and the chunk that ended last (against its unit's earlier speed).
cat > /tmp/tail.py <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M"}
sl = [e for e in ev if e["ph"] == "X"]
end = max(e["ts"] + e["dur"] for e in sl)
last = {}
for e in sl:
    last[names[e["tid"]]] = max(last.get(names[e["tid"]], 0), e["ts"] + e["dur"])
gpu = [v for k, v in last.items() if k.startswith("gpu")]
w = max(sl, key=lambda e: e["ts"] + e["dur"])
mine = [e for e in sl if e["tid"] == w["tid"] and e is not w]
rate = sum(e["args"]["tasks"] for e in mine) / max(1e-9, sum(e["dur"] for e in mine)) * 1e6
print(f"   tail: ends {end/1e6:.3f} s; GPU's last chunk ends {max(gpu, default=0)/1e6:.3f} s; last chunk {names[w['tid']]}: {w['args']['tasks']} tasks from {w['ts']/1e6:.3f} s for {w['dur']/1e6:.3f} s (expected {w['args']['tasks']/max(rate,1e-9):.3f} s at its earlier {rate:.1f} tasks/s)")
PY
TR=(); [ -n "${TRACE:-}" ] && TR=(--set output.trace=true)
one() { # label, timeout, --set args...
  local label=$1 t=$2; shift 2
  rm -rf "$OUT"
  if timeout "$t" "$B" run $CFG -q --set output.dir="\"$OUT\"" "${TR[@]}" "$@" 2>/tmp/err.txt; then
    python3 - "$label" "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
w = r["wall_seconds"]; rs = r.get("run_seconds", w); t = r["tasks"]; c = r["checksum"]
busy = {}
for u in r["units"]:
    b = busy.setdefault(u["kind"], [0, 0.0, 0]); b[0] += u["tasks"]; b[1] += u["busy_seconds"]; b[2] += u["chunks"]
# per kind: tasks, and for GPUs the chunks and the rate while busy (tasks / busy seconds)
split = " ".join(f"{k}:{v[0]}" + (f" in {v[2]} chunks, {v[0]/max(v[1],1e-9):.0f}/s busy" if k == "gpu" else "") for k, v in sorted(busy.items()))
dev = r["devices"][0] if r["devices"] else {}
ph = r.get("phase_seconds", {})
phs = " ".join(f"{k}={v:.3f}" for k, v in ph.items())
inp = r.get("input", {})
wid = f" width={inp.get('compute_type', inp.get('distance_type', '-'))} redone={c.get('redone_u64', '-')}" if "distance_type" in inp else ""
print(f"{sys.argv[1]:<44} {w:8.3f} s wall {rs:8.3f} s run {t:7d} tasks {t/rs:9.1f}/s  sum={c['sum']} unr={c['unreachable']}{wid}  [{split}] gpus={len(r['devices'])} q={dev.get('queues','-')} chunk={dev.get('chunk','-')} phases: {phs}", flush=True)
PY
    [ -f "$OUT/trace.json" ] && python3 /tmp/tail.py "$OUT/trace.json"
  else
    echo "$label: FAILED or timed out ($t s): $(tail -c 300 /tmp/err.txt)"
  fi
}
cz() { # label, timeout, count, --set args...
  local label=$1 t=$2 count=$3; shift 3
  rm -rf "$OUT"
  printf '[run]\nplugin = "collatz"\n[collatz]\nfirst = 1\ncount = %s\nblock = 65536\n[units]\ndevice_type = "gpu"\n[output]\ndir = "%s"\ntrace = %s\n' "$count" "$OUT" "$([ -n "${TRACE:-}" ] && echo true || echo false)" > /tmp/cz.toml
  local ok=0
  if [ -n "${NICE:-}" ]; then
    # Experiment: lower the CPU workers' priority (threads named cpuN) once they exist.
    timeout "$t" "$CZ" run /tmp/cz.toml "$@" >/tmp/cz.txt 2>&1 & local P=$!
    for i in $(seq 30); do sleep 0.1; for th in /proc/$P/task/*; do case $(cat $th/comm 2>/dev/null) in cpu*) renice -n $NICE -p ${th##*/} >/dev/null 2>&1;; esac; done; done
    wait $P && ok=1
  else
    timeout "$t" "$CZ" run /tmp/cz.toml "$@" >/tmp/cz.txt 2>&1 && ok=1
  fi
  if [ $ok = 1 ]; then
    python3 - "$label" "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
rs = r["run_seconds"]; t = r["tasks"]; c = r["checksum"]
k = {}
for u in r["units"]:
  b = k.setdefault(u["kind"], [0, 0.0, 0]); b[0] += u["tasks"]; b[1] += u["busy_seconds"]; b[2] += u["chunks"]
split = " ".join(f"{n}:{v[0]} in {v[2]} chunks" + (f", {v[0]/max(v[1],1e-9):.0f}/s busy, busy {v[1]/rs:.0%} of the run" if n == "gpu" else "") for n, v in sorted(k.items()))
print(f"{sys.argv[1]:<44} {rs:8.3f} s run {t:7d} blocks {t/rs:9.1f} blocks/s  steps={c['total_steps']}  [{split}] gpus={len(r['devices'])}", flush=True)
PY
    [ -f "$OUT/trace.json" ] && python3 /tmp/tail.py "$OUT/trace.json"
    [ -n "${KEEP:-}" ] && [ -f "$OUT/trace.json" ] && mkdir -p "$KEEP" && cp "$OUT/trace.json" "$KEEP/$(echo "$label" | tr -c 'a-zA-Z0-9\n' _)-$RANDOM.json"
  else echo "$label: FAILED or timed out: $(tail -c 300 /tmp/cz.txt)"; fi
}
BR="input.path=\"$D/osm-bremen-dist.gr.gz\""
MO="input.path=\"$D/osm-moscow.gr.gz\""
for s in $SECTIONS; do case $s in
devices) "$B" devices; nproc ;;
algos)
  one "bremen 256 cpu16" 120 --set "$BR" --set run.sources=256 --set units.opencl=none
  for a in worklist crauser two-phase martin; do
    one "bremen 256 gpu $a" 120 --set "$BR" --set run.sources=256 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"$a\"
  done
  one "moscow 256 cpu16" 120 --set "$MO" --set run.sources=256 --set units.opencl=none
  for a in worklist crauser two-phase; do
    one "moscow 64 gpu $a" 120 --set "$MO" --set run.sources=64 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"$a\"
  done ;;
queues)
  for k in 1 2 4 8; do
    one "bremen 256 gpu crauser k=$k" 120 --set "$BR" --set run.sources=256 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"crauser\" --set units.concurrent_kernels=$k
    one "moscow 2048 gpu worklist k=$k" 120 --set "$MO" --set run.sources=2048 --set units.cpu_workers=0 --set units.concurrent_kernels=$k
  done ;;
batch)
  for b in 1 8 32 128; do
    one "bremen 256 gpu two-phase batch=$b" 120 --set "$BR" --set run.sources=256 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"two-phase\" --set apsp.batch=$b
  done ;;
wl)
  one "bremen 1024 cpu16" 120 --set "$BR" --set run.sources=1024 --set units.opencl=none
  one "moscow 512 cpu16" 120 --set "$MO" --set run.sources=512 --set units.opencl=none
  for k in 1 2 4; do for b in 64 256 1024; do
    one "bremen 1024 gpu worklist k=$k batch=$b" 120 --set "$BR" --set run.sources=1024 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"worklist\" --set units.concurrent_kernels=$k --set apsp.batch=$b
  done; done
  for k in 1 2 4; do for b in 128 256 512; do
    one "moscow 1024 gpu worklist k=$k batch=$b" 120 --set "$MO" --set run.sources=1024 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"worklist\" --set units.concurrent_kernels=$k --set apsp.batch=$b
  done; done ;;
delta)
  for d in 0 auto 1600 6400 25600; do
    one "bremen 1024 gpu worklist k=1 delta=$d" 120 --set "$BR" --set run.sources=1024 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"worklist\" --set apsp.delta=$d --set units.concurrent_kernels=1
    one "moscow 1024 gpu worklist k=1 delta=$d" 120 --set "$MO" --set run.sources=1024 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"worklist\" --set apsp.delta=$d --set units.concurrent_kernels=1
  done
  for b in 128 512 1024; do
    one "moscow 1024 gpu worklist k=1 batch=$b" 120 --set "$MO" --set run.sources=1024 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"worklist\" --set apsp.batch=$b --set units.concurrent_kernels=1
    one "bremen 2048 gpu worklist k=1 batch=$b" 120 --set "$BR" --set run.sources=2048 --set units.cpu_workers=0 --set apsp.gpu_algorithm=\"worklist\" --set apsp.batch=$b --set units.concurrent_kernels=1
  done ;;
hetero)
  for g in "bremen 16384 $BR" "moscow 6144 $MO"; do
    set -- $g
    for p in equitable work-queue; do
      one "$1 $2 gpu+cpu16 $p" 200 --set "$3" --set run.sources=$2 --set scheduler.policy=$p
      one "$1 $2 gpu $p" 200 --set "$3" --set run.sources=$2 --set units.cpu_workers=0 --set scheduler.policy=$p
      one "$1 $2 cpu16 $p" 200 --set "$3" --set run.sources=$2 --set units.opencl=none --set scheduler.policy=$p
    done
  done ;;
full)
  one "bremen full APSP gpu+cpu" 300 --set "$BR" --set run.sources=\"all\"
  one "bremen full APSP gpu" 300 --set "$BR" --set run.sources=\"all\" --set units.cpu_workers=0
  one "moscow 16384 gpu+cpu" 300 --set "$MO" --set run.sources=16384
  one "moscow 8192 gpu" 300 --set "$MO" --set run.sources=8192 --set units.cpu_workers=0
  one "moscow 2048 cpu16" 300 --set "$MO" --set run.sources=2048 --set units.opencl=none ;;
tune)
  export TUCCOMPI_CACHE=/tmp/tune-cache.toml
  RM="input.generate.model=rmat"
  for a in ${ALGOS:-worklist two-phase crauser}; do
    for g in "bremen $BR" "moscow $MO" "rmat18 input.generate.vertices=262144"; do
      set -- $g
      case $a in worklist) S=1024;; two-phase) S=64;; crauser) S=16;; esac
      extra=(--set "$2"); [ "$1" = rmat18 ] && extra+=(--set "$RM" --set input.generate.degree=16 --set input.generate.max_weight=100)
      echo "== tune $a on $1 (sample $S, median of 3)"
      timeout 150 "$B" tune $CFG "${extra[@]}" --set apsp.gpu_algorithm=\"$a\" --set run.sources=$S --sample $S --repeat 3 || echo "tune $a $1 failed or timed out"
    done
  done ;;
dense)
  FW=/tmp/fw.toml
  printf '[run]\nplugin = "fw-blocked"\n[input.generate]\nmodel = "complete"\nvertices = 1024\nseed = 1\n' > $FW
  dn() { # label, timeout, args
    local label=$1 t=$2; shift 2
    rm -rf "$OUT"
    if timeout "$t" "$B" run $FW -q --set output.dir="\"$OUT\"" "$@" 2>/tmp/err.txt; then
      python3 -c "import json,sys;r=json.load(open('$OUT/report.json'));n=r['input']['n'];s=r['run_seconds'];print(f'{sys.argv[1]:<40} n={n:6d} run {s:9.3f} s  {n**3/s/1e12:7.3f} T upd/s  sum={r[\"checksum\"][\"sum\"]} by {r[\"checksum\"].get(\"computed_by\",\"\")}')" "$label"
    else echo "$label: FAILED or timed out: $(tail -c 300 /tmp/err.txt)"; fi
  }
  for n in ${FW_SIZES:-4096 8192 16384}; do dn "gpu fw-blocked" 200 --set input.generate.vertices=$n --set units.cpu_workers=0; done
  [ -n "${BLOCKED_ONLY:-}" ] && continue
  for n in 1024 4096 8192; do dn "gpu fw-naive" 200 --set run.plugin=\"fw-naive\" --set input.generate.vertices=$n --set units.cpu_workers=0; done
  for n in 64 256 1024 4096; do
    dn "gpu rkleene" 200 --set run.plugin=\"rkleene\" --set input.generate.vertices=$n --set units.cpu_workers=0
    RAYON_NUM_THREADS=1 dn "cpu rkleene, 1 thread" 200 --set run.plugin=\"rkleene\" --set input.generate.vertices=$n --set units.opencl=none
  done
  for n in 1024 4096; do dn "cpu fw-blocked, 16 threads" 200 --set input.generate.vertices=$n --set units.opencl=none; done ;;
sched)
  # On osm-moscow: GPU alone, the same CPU workers alone, both.
  # SCHED_CPUS: the CPU workers of the mixed run ("auto" leaves one core per GPU queue).
  # SCHED_ALGOS="dijkstra worklist": the CPU and GPU algorithms (default: the config's auto,
  # PHAST on road graphs).
  NC=${SCHED_CPUS:-15}; AL=()
  if [ -n "${SCHED_ALGOS:-}" ]; then set -- $SCHED_ALGOS; AL=(--set "apsp.cpu_algorithm=\"$1\"" --set "apsp.gpu_algorithm=\"$2\""); fi
  for rep in 1 2; do
    one "moscow 8192 gpu alone" 200 --set "$MO" --set run.sources=8192 --set units.cpu_workers=0 "${AL[@]}"
    one "moscow 1024 cpu$NC alone" 200 --set "$MO" --set run.sources=1024 --set units.opencl=none --set units.cpu_workers=$NC "${AL[@]}"
    one "moscow 16384 gpu+cpu auto" 200 --set "$MO" --set run.sources=16384 "${AL[@]}"
  done
  [ -n "${SCHED_ALGOS:-}" ] && continue
  one "bremen full APSP gpu alone" 200 --set "$BR" --set run.sources=\"all\" --set units.cpu_workers=0
  one "bremen full APSP gpu+cpu auto" 200 --set "$BR" --set run.sources=\"all\" ;;
workers)
  # The GPU's own rate (tasks / busy seconds) beside fewer or more CPU workers.
  for w in ${WORKERS:-15 12 8 4}; do
    one "moscow 8192 gpu+cpu$w" 200 --set "$MO" --set run.sources=8192 --set units.cpu_workers=$w
  done ;;
czgpus)
  # The collatz example on one GPU, two, the CPU workers, and everything (x2 machine).
  CZ=${COLLATZ:?COLLATZ=path to the collatz example binary}; NC=${SCHED_CPUS:-30}
  for rep in $(seq ${REPS:-2}); do
    (export CUDA_VISIBLE_DEVICES=0; cz "collatz one gpu" 120 ${COUNT_GPU1:-1452474368} --set units.cpu_workers=0)
    cz "collatz two gpus" 120 ${COUNT_GPU2:-2904948736} --set units.cpu_workers=0
    cz "collatz cpu$NC alone" 120 ${COUNT_CPU:-419430400} --set units.opencl=none --set units.cpu_workers=$NC
    cz "collatz two gpus+cpu auto" 120 ${COUNT_GPU2:-2904948736}
  done ;;
collatz)
  # The example plugin (COLLATZ = target/release/examples/collatz). Its config is written
  # here; COUNT_GPU etc. size each run to a few seconds.
  CZ=${COLLATZ:?COLLATZ=path to the collatz example binary}
  NC=${SCHED_CPUS:-15}
  # Probes size the runs to about SECS seconds each (counts in whole blocks of 65,536).
  size() { python3 -c "import json;r=json.load(open('$OUT/report.json'));print(max(1,min(2**23,int(r['tasks']/r['run_seconds']*${SECS:-4})))*65536)"; }
  cz "collatz probe gpu alone" 60 ${COUNT_PROBE:-268435456} --set units.cpu_workers=0
  CG=${COUNT_GPU:-$(size)}
  cz "collatz probe cpu$NC alone" 60 ${COUNT_PROBE_CPU:-16777216} --set units.opencl=none --set units.cpu_workers=$NC
  CC=${COUNT_CPU:-$(size)}
  for rep in $(seq ${REPS:-2}); do
    cz "collatz gpu alone" 120 $CG --set units.cpu_workers=0
    cz "collatz cpu$NC alone" 120 $CC --set units.opencl=none --set units.cpu_workers=$NC
    cz "collatz gpu+cpu auto" 120 $CG
  done
  # The GPU's host thread beside fewer CPU workers, and beside workers of lower priority.
  for w in ${CZ_SWEEP:-}; do cz "collatz gpu+cpu$w" 120 $CG --set units.cpu_workers=$w; done
  [ -n "${CZ_NICE:-}" ] && for rep in 1 2; do NICE=$CZ_NICE cz "collatz gpu+cpu auto, workers nice $CZ_NICE" 120 $CG; done
  for rep in $(seq ${CZ_MIXED:-0}); do cz "collatz gpu+cpu auto" 120 $CG; done ;;
twogpu)
  # 2 GPUs (the nvidia-h200-x2 machine): one GPU (CUDA_VISIBLE_DEVICES=0), both, the CPU
  # workers alone, both GPUs + CPU workers ("auto": every core minus one per GPU queue).
  NC=${SCHED_CPUS:-30}
  for rep in $(seq ${REPS:-2}); do
    (export CUDA_VISIBLE_DEVICES=0; one "moscow 8192 one gpu" 200 --set "$MO" --set run.sources=8192 --set units.cpu_workers=0)
    one "moscow 16384 two gpus" 200 --set "$MO" --set run.sources=16384 --set units.cpu_workers=0
    one "moscow 2048 cpu$NC alone" 200 --set "$MO" --set run.sources=2048 --set units.opencl=none --set units.cpu_workers=$NC
    one "moscow 16384 two gpus+cpu auto" 200 --set "$MO" --set run.sources=16384
  done ;;
mpi2)
  # Two ranks with one GPU and 15 CPU workers each, against one process with both (x2 machine).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  M=${MPIBIN:?MPIBIN}; OCLX="-x OCL_ICD_FILENAMES=libnvidia-opencl.so.1"
  for rep in 1 2; do
    rm -rf "$OUT"
    R="run $CFG -q --set $MO --set run.sources=16384 --set output.dir=\"$OUT\""
    eval mpirun --bind-to none -np 1 $OCLX -x CUDA_VISIBLE_DEVICES=0 -x TUCCOMPI_UNITS=cpu_workers=15 $M $R : -np 1 $OCLX -x CUDA_VISIBLE_DEVICES=1 -x TUCCOMPI_UNITS=cpu_workers=15 $M $R 2>&1 | tail -4
    python3 -c "import json;r=json.load(open('$OUT/report.json'));print(f'moscow 16384 2 ranks x (gpu + 15 cpu): run {r[\"run_seconds\"]:.3f} s, {r[\"tasks\"]/r[\"run_seconds\"]:.1f}/s, tasks per rank {[n[\"tasks\"] for n in r[\"nodes\"]]} per kind {[{k: sum(u[\"tasks\"] for u in n[\"units\"] if u[\"kind\"]==k) for k in (\"gpu\",\"cpu\")} for n in r[\"nodes\"]]} sum={r[\"checksum\"][\"sum\"]}')" || echo "mpi2 failed"
  done ;;
diag)
  lscpu | grep -E "^(Model name|Thread|Core|Socket|CPU\(s\)|NUMA node\(s\))"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  echo "== OCL in this shell:"; env | grep OCL_ || echo none
  env | sort > /tmp/env.here; mpirun -np 1 env | sort > /tmp/env.mpi
  echo "== mpirun adds/changes:"; comm -13 /tmp/env.here /tmp/env.mpi | grep -v "^OMPI_\|^PMIX_\|^OPAL_\|^HFI_\|^IPATH_\|^PSM" | cut -c1-200
  echo "== where OCL_ICD_FILENAMES comes from:"; grep -rs -l OCL_ICD_FILENAMES /etc /usr/share/openmpi /usr/lib/x86_64-linux-gnu/openmpi 2>/dev/null | head
  cat /etc/openmpi/openmpi-mca-params.conf 2>/dev/null | grep -v "^#" | grep . | head
  echo "== mpirun -np 1 env -u OCL_ICD_FILENAMES clinfo -l:"; mpirun -np 1 env -u OCL_ICD_FILENAMES clinfo -l 2>&1 | head -6
  echo "== mpirun -np 1 -x OCL_ICD_FILENAMES=libnvidia-opencl.so.1 clinfo -l:"; mpirun -np 1 -x OCL_ICD_FILENAMES=libnvidia-opencl.so.1 clinfo -l 2>&1 | head -6 ;;
mpienv)
  # Why mpirun's processes did not see the NVIDIA platform.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  mpirun --version | head -1
  echo "== here: OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-unset}"; clinfo -l 2>&1 | head
  echo "== mpirun -np 1 env:"; mpirun -np 1 env | grep -E "^(OCL_ICD|LD_LIBRARY)" || echo "(no OCL_ICD_VENDORS, no LD_LIBRARY_PATH)"
  echo "== mpirun -np 1 clinfo -l:"; mpirun -np 1 clinfo -l 2>&1 | head
  echo "== mpirun -np 1 -x OCL_ICD_VENDORS clinfo -l:"; mpirun -np 1 -x OCL_ICD_VENDORS clinfo -l 2>&1 | head
  echo "== affinity: mpirun -np 1 / --bind-to none:"; mpirun -np 1 grep Cpus_allowed_list /proc/self/status; mpirun -np 1 --bind-to none grep Cpus_allowed_list /proc/self/status ;;
mpigpu)
  # A GPU rank under mpirun (MPIBIN): the rank reports its devices; then GPU + CPU ranks
  # against one process.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  M=${MPIBIN:?MPIBIN}
  # This machine's image sets OCL_ICD_FILENAMES=libpocl.so.2:libnvidia-opencl.so.1, and mpirun
  # hands its processes only the first entry: name the NVIDIA library for the ranks.
  OCLX="-x OCL_ICD_FILENAMES=libnvidia-opencl.so.1"
  echo "== default binding (expect the affinity warning):"
  mpirun -np 1 $OCLX "$M" run $CFG -q --set "$MO" --set run.sources=64 --set output.dir="\"$OUT\"" 2>&1 | grep -v "^$" | head -5
  for sp in "1 rank gpu+15 cpu|-np 1 $OCLX $M run $CFG -q --set $MO --set run.sources=8192 --set output.dir=\"$OUT\"" \
            "2 ranks (gpu+7 cpu, 8 cpu)|-np 1 $OCLX -x TUCCOMPI_UNITS=cpu_workers=7 $M run $CFG -q --set $MO --set run.sources=8192 --set output.dir=\"$OUT\" : -np 1 -x TUCCOMPI_UNITS=cpu_workers=8,opencl=none $M run $CFG -q --set $MO --set run.sources=8192 --set output.dir=\"$OUT\""; do
    label=${sp%%|*}; args=${sp#*|}
    rm -rf "$OUT"
    T0=$(date +%s.%N)
    eval mpirun --bind-to none $args 2>&1 | tail -6
    T1=$(date +%s.%N)
    python3 -c "import json;r=json.load(open('$OUT/report.json'));print(f'moscow 8192 $label: run {r[\"run_seconds\"]:.3f} s, {r[\"tasks\"]/r[\"run_seconds\"]:.1f}/s, wall {r[\"wall_seconds\"]:.3f} s (mpirun {$T1-$T0:.1f} s) tasks per rank {[n[\"tasks\"] for n in r[\"nodes\"]]} per unit kind {[{k: sum(u[\"tasks\"] for u in n[\"units\"] if u[\"kind\"]==k) for k in (\"gpu\",\"cpu\")} for n in r[\"nodes\"]]} sum={r[\"checksum\"][\"sum\"]}')" || echo "$label failed"
  done ;;
phast)
  # End to end: a fresh hierarchy cache, so the first run of each graph builds its
  # hierarchy in the run (preprocess_seconds) and the second reads it. Then the CPU half alone
  # on every core, through the runtime and through the bench (per thread and in all).
  export XDG_CACHE_HOME=${OUT}-xdg; rm -rf "$XDG_CACHE_HOME"
  pre() { python3 -c "import json;i=json.load(open('$OUT/report.json'))['input'];a=i.get('algorithm',{});print(f'    cpu={i.get(\"cpu_algorithm\")} gpu={i.get(\"gpu_algorithm\")} preprocess={i.get(\"preprocess_seconds\",0):.3f} s hierarchy={a.get(\"source\",\"-\")} levels={a.get(\"levels\",\"-\")} shortcuts/arc={a.get(\"shortcuts_per_arc\",0):.2f} upward={a.get(\"upward_search_mean\",0):.0f}')" 2>/dev/null || true; }
  # GP: the GPU algorithm beside CPU PHAST ("auto" takes GPU PHAST once it is in the build).
  PH=(--set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"${GP:-auto}\")
  one "moscow full APSP phast gpu+cpu (build in run)" 300 --set "$MO" --set run.sources=\"all\" "${PH[@]}"; pre
  one "moscow full APSP phast gpu+cpu (cached)" 300 --set "$MO" --set run.sources=\"all\" "${PH[@]}"; pre
  one "moscow full APSP auto gpu+cpu (cached)" 300 --set "$MO" --set run.sources=\"all\"; pre
  one "moscow full APSP phast gpu alone (cached)" 300 --set "$MO" --set run.sources=\"all\" --set units.cpu_workers=0 "${PH[@]}"; pre
  one "moscow full APSP phast cpu16 alone (cached)" 300 --set "$MO" --set run.sources=\"all\" --set units.opencl=none "${PH[@]}"; pre
  one "bremen full APSP phast gpu+cpu (build in run)" 120 --set "$BR" --set run.sources=\"all\" "${PH[@]}"; pre
  one "bremen full APSP phast gpu+cpu (cached)" 120 --set "$BR" --set run.sources=\"all\" "${PH[@]}"; pre
  one "bremen full APSP phast gpu alone (cached)" 120 --set "$BR" --set run.sources=\"all\" --set units.cpu_workers=0 "${PH[@]}"; pre
  one "bremen full APSP phast cpu16 alone (cached)" 120 --set "$BR" --set run.sources=\"all\" --set units.opencl=none "${PH[@]}"; pre
  PHB=${PHB:-$(dirname "$B")/phast}
  [ -x "$PHB" ] && { timeout 200 "$PHB" "$D/osm-moscow.gr.gz" 16 8192; timeout 100 "$PHB" "$D/osm-moscow.gr.gz" 1 512; } || echo "phast bench binary $PHB missing" ;;
phastgpu)
  # GPU PHAST: phase timings and sweep bandwidth against a device copy (PB = the binary of
  # `cargo bench --bench phast_gpu --no-run`), then whole runs; GPU PHAST's summary.csv must
  # equal CPU Dijkstra's.
  PB=${PB:-$(dirname "$B")/phast_gpu}
  timeout 200 "$PB" "$D/osm-moscow.gr.gz" ${PHAST_KS:-1024 2048 4096} || echo "phast_gpu bench failed"
  timeout 100 "$PB" "$D/osm-bremen-dist.gr.gz" 2048 8192 || echo "phast_gpu bench failed"
  P="apsp.gpu_algorithm=\"phast\""
  one "moscow 2048 cpu16 dijkstra" 120 --set "$MO" --set run.sources=2048 --set units.opencl=none --set apsp.cpu_algorithm=\"dijkstra\"
  cp "$OUT/summary.csv" /tmp/phast-ref.csv
  one "moscow 2048 gpu phast" 120 --set "$MO" --set run.sources=2048 --set units.cpu_workers=0 --set "$P"
  cmp /tmp/phast-ref.csv "$OUT/summary.csv" && echo "moscow 2048: GPU PHAST summary.csv = Dijkstra's"
  one "bremen all gpu phast" 120 --set "$BR" --set run.sources=\"all\" --set units.cpu_workers=0 --set "$P"
  for q in 1 2 4; do
    one "moscow all gpu phast q=$q" 200 --set "$MO" --set run.sources=\"all\" --set units.cpu_workers=0 --set "$P" --set units.concurrent_kernels=$q
  done
  one "moscow all gpu phast top_levels=0" 200 --set "$MO" --set run.sources=\"all\" --set units.cpu_workers=0 --set "$P" --set apsp.gpu_top_levels=0
  one "moscow all gpu phast upward=host q=4" 200 --set "$MO" --set run.sources=\"all\" --set units.cpu_workers=0 --set "$P" --set apsp.gpu_upward=\"host\" --set units.concurrent_kernels=4
  one "moscow all gpu phast + cpu16 dijkstra" 200 --set "$MO" --set run.sources=\"all\" --set "$P" --set apsp.cpu_algorithm=\"dijkstra\"
  one "moscow all gpu phast + cpu16 phast" 200 --set "$MO" --set run.sources=\"all\" --set "$P" --set apsp.cpu_algorithm=\"phast\" ;;
bremenmix)
  # A short full APSP (osm-bremen-dist, cached hierarchy): PHAST on the GPU alone, on the CPU
  # alone, and both (TRACE=1 prints how each run ended).
  export XDG_CACHE_HOME=${OUT}-xdg
  PH=(--set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\")
  one "bremen warm-up (hierarchy)" 120 --set "$BR" --set run.sources=16 "${PH[@]}"
  for rep in 1 2 3; do
    one "bremen full APSP phast gpu alone" 120 --set "$BR" --set run.sources=\"all\" --set units.cpu_workers=0 "${PH[@]}"
    one "bremen full APSP phast cpu alone" 120 --set "$BR" --set run.sources=\"all\" --set units.opencl=none "${PH[@]}"
    one "bremen full APSP phast gpu+cpu" 120 --set "$BR" --set run.sources=\"all\" "${PH[@]}"
    one "bremen full APSP default config" 120 --set "$BR" --set run.sources=\"all\"
  done ;;
phastcpu)
  # The CPU half: the bench on 1, 8 and 16 threads (each k with the summaries tallied after
  # the sweep and in it), and the machine's cores.
  lscpu | grep -E "^(Model name|Thread|Core|Socket|CPU\(s\)|L2|L3)"
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
  PHB=${PHB:-$(dirname "$B")/phast}
  for t in ${PHAST_THREADS:-16 8 1}; do
    timeout 200 "$PHB" "$D/osm-moscow.gr.gz" $t $((t * 512)) | grep -v "^hierarchy"
  done
  # The runtime's CPU half on the full graph (cached hierarchy).
  export XDG_CACHE_HOME=${OUT}-xdg
  one "moscow full APSP phast cpu16" 300 --set "$MO" --set run.sources=\"all\" --set units.opencl=none --set apsp.cpu_algorithm=\"phast\" ;;
mpioverhead)
  # CPU-only ranks on one machine, 1 x 16 workers against 2 x 8 and 4 x 4,
  # both node policies, about a minute of work per run (MO_SOURCES Dijkstra trees of
  # osm-moscow); REPS repetitions, the configurations interleaved. Each line also shows every
  # rank's CPU time and involuntary context switches, and rank 0's server (idle probes).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  M=${MPIBIN:?MPIBIN}; S=${MO_SOURCES:-28000}
  for rep in $(seq ${REPS:-1}); do
    for np in ${NPS:-1 2 4}; do
      POLS=${NODE_POLICIES:-master-slave equitable}
      for pol in $POLS; do
        # One rank has no node policy: run it once per round.
        [ $np = 1 ] && [ "$pol" != "${POLS%% *}" ] && continue
        w=$((16 / np)); rm -rf "$OUT"
        T0=$(date +%s.%N)
        mpirun --bind-to none -np $np "$M" run $CFG -q --set "$MO" --set run.sources=$S --set units.opencl=none --set units.cpu_workers=$w --set apsp.cpu_algorithm=\"dijkstra\" --set nodes.policy=\"$pol\" --set output.dir="\"$OUT\"" || echo "mpirun failed"
        T1=$(date +%s.%N)
        python3 - "$OUT/report.json" "$S $np $w $pol $T0 $T1" <<'PY' || echo "no report"
import json, sys
r = json.load(open(sys.argv[1])); S, np, w, pol, t0, t1 = sys.argv[2].split()
S = int(S); nd = r.get("nodes") or []
per = [n["tasks"] for n in nd]
pr = " ".join(f"r{n['rank']}:{n['process']['user_seconds']:.1f}u/{n['process']['system_seconds']:.2f}s/{n['process']['involuntary_switches']}inv" for n in nd if n.get("process"))
sv = nd[0].get("server", {}) if nd else {}
rs = r['run_seconds']
# Per rank: its units' busy time against the run (idle = waiting for chunks, or done early),
# their rate while busy (trees per busy second per worker), and chunks per unit.
def busy(us):
  us = [u for u in us if isinstance(u, dict)] or [{"busy_seconds": 0, "tasks": 0, "chunks": 0}]
  b = [u["busy_seconds"] / rs for u in us]
  rate = sum(u["tasks"] for u in us) / max(1e-9, sum(u["busy_seconds"] for u in us))
  e = [u.get("ended_seconds", 0) for u in us]
  return f"busy {min(b):.1%}-{max(b):.1%} ended {min(e):.2f}-{max(e):.2f} s rate {rate:.2f}/s ch {sum(u['chunks'] for u in us)/len(us):.0f}"
bz = "; ".join(f"r{n['rank']} " + busy(n.get("units", [])) for n in nd) if nd else busy(r.get("units", []))
print(f"moscow {S} cpu {np} ranks x {w} workers, {pol}: wall {r['wall_seconds']:.3f} s run {rs:.3f} s ({S/rs:.1f}/s) mpirun {float(t1)-float(t0):.3f} s tasks per rank {per} sum={r['checksum']['sum']} [{pr}] server {sv}\n   units: {bz}", flush=True)
PY
      done
      if [ -n "${PROCS:-}" ] && [ $np -gt 1 ]; then
        # Control: np independent processes of 16/np workers (no MPI), S/np trees each, at once.
        Q=$((S / np))
        for i in $(seq $np); do
          "$B" run $CFG -q --set "$MO" --set run.sources=$Q --set units.opencl=none --set units.cpu_workers=$w --set apsp.cpu_algorithm=\"dijkstra\" --set output.dir="\"$OUT-p$i\"" & done; wait
        python3 -c "import json;rs=[json.load(open(f'$OUT-p{i}/report.json'))['run_seconds'] for i in range(1,$np+1)];print(f'moscow $S cpu $np processes x $w (independent, {$Q} trees each): run {max(rs):.3f} s (each {[round(x,2) for x in rs]}), {$S/max(rs):.1f}/s', flush=True)"
      fi
    done
  done ;;
split)
  # Is one process of 16 Dijkstra workers slower than four of 4? In one round: tuccompi 1 x 16
  # (no mpirun), 4 MPI ranks x 4 (master-slave, one shared graph), 4 independent tuccompi
  # processes x 4 (own graphs), and the copies bench (CP, default beside BIN: bare Dijkstra
  # threads, no runtime) as 1 process x 16 threads and as 4 processes x 4 threads at once.
  S=${MO_SOURCES:-12000}; Q=$((S / 4)); CP=${CP:-$(dirname "$B")/copies}
  for rep in $(seq ${REPS:-1}); do
    one "moscow $S cpu 1 process x 16" 300 --set "$MO" --set run.sources=$S --set units.opencl=none --set units.cpu_workers=16 --set apsp.cpu_algorithm=\"dijkstra\"
    MO_SOURCES=$S NPS=4 NODE_POLICIES=master-slave REPS=1 bash "$0" "$B" "$D" mpioverhead 2>&1 | grep -v "^tuccompi: rank"
    for i in 1 2 3 4; do
      "$B" run $CFG -q --set "$MO" --set run.sources=$Q --set units.opencl=none --set units.cpu_workers=4 --set apsp.cpu_algorithm=\"dijkstra\" --set output.dir="\"$OUT-p$i\"" & done; wait
    python3 -c "import json;rs=[json.load(open(f'$OUT-p{i}/report.json'))['run_seconds'] for i in (1,2,3,4)];print(f'moscow $S cpu 4 processes x 4 (independent): run {max(rs):.3f} s (each {[round(x,2) for x in rs]}), {$S/max(rs):.1f}/s', flush=True)"
    REPS=1 "$CP" $S 16 "$D/osm-moscow.gr.gz" 1 | sed -n 's/^rep 0: /copies bench, 1 process x 16 threads: /p'
    for i in 1 2 3 4; do REPS=1 "$CP" $Q 4 "$D/osm-moscow.gr.gz" 1 > /tmp/cp$i.txt & done; wait
    python3 -c "import re;r=[float(re.search(r'([0-9.]+) SSSP/s',open(f'/tmp/cp{i}.txt').read()).group(1)) for i in (1,2,3,4)];print(f'copies bench, 4 processes x 4 threads at once: {$S/max($Q/x for x in r):.1f} SSSP/s (each {r})', flush=True)"
  done ;;
split2)
  # The same question without tuccompi's runtime: bare Dijkstra threads (the copies bench, CP)
  # on one graph mapped from /dev/shm, as 1 process x 16 threads and as 4 processes x 4 threads
  # sharing that one file (a quarter of the sources each), sources 0..S as in tuccompi's runs;
  # then tuccompi 1 x 16 and 4 MPI ranks x 4 (master-slave) on the same sources.
  S=${MO_SOURCES:-12000}; Q=$((S / 4)); CP=${CP:-$(dirname "$B")/copies}; SF=/dev/shm/tuccompi-bench-split
  for rep in $(seq ${REPS:-1}); do
    rm -f $SF; FIRST=1 SHARED_FILE=$SF REPS=1 "$CP" 16 1 "$D/osm-moscow.gr.gz" 1m > /dev/null
    FIRST=1 SHARED_FILE=$SF REPS=1 "$CP" $S 16 "$D/osm-moscow.gr.gz" 1m | sed -n 's/^rep 0: /copies bench, 1 process x 16 threads: /p'
    for i in 0 1 2 3; do FIRST=1 SKIP=$((i * Q)) SHARED_FILE=$SF REPS=1 "$CP" $Q 4 "$D/osm-moscow.gr.gz" 1m > /tmp/cp$i.txt & done; wait
    python3 -c "import re;r=[float(re.search(r'([0-9.]+) SSSP/s',open(f'/tmp/cp{i}.txt').read()).group(1)) for i in (0,1,2,3)];print(f'copies bench, 4 processes x 4 threads on one shared file: {$S/max($Q/x for x in r):.1f} SSSP/s (each {r})', flush=True)"
    rm -f $SF
    one "moscow $S cpu 1 process x 16" 300 --set "$MO" --set run.sources=$S --set units.opencl=none --set units.cpu_workers=16 --set apsp.cpu_algorithm=\"dijkstra\"
    MO_SOURCES=$S NPS=4 NODE_POLICIES=master-slave REPS=1 bash "$0" "$B" "$D" mpioverhead 2>&1 | grep -v "^tuccompi: rank"
  done ;;
cpu16)
  # One process of 16 Dijkstra workers on osm-moscow's first MO_SOURCES ids (A/B of builds).
  S=${MO_SOURCES:-12000}
  one "moscow $S cpu 1 process x 16 ($B)" 300 --set "$MO" --set run.sources=$S --set units.opencl=none --set units.cpu_workers=16 --set apsp.cpu_algorithm=\"dijkstra\" ;;
procs)
  # Is four ranks' loss MPI's? Four independent processes of 4 workers (no MPI), each with a
  # quarter of the trees, at once, against one process of 16 workers.
  S=${MO_SOURCES:-28000}; Q=$((S / 4))
  for rep in $(seq ${REPS:-1}); do
    one "moscow $S cpu 1 process x 16" 300 --set "$MO" --set run.sources=$S --set units.opencl=none --set units.cpu_workers=16 --set apsp.cpu_algorithm=\"dijkstra\"
    for i in 1 2 3 4; do
      "$B" run $CFG -q --set "$MO" --set run.sources=$Q --set units.opencl=none --set units.cpu_workers=4 --set apsp.cpu_algorithm=\"dijkstra\" --set output.dir="\"$OUT-p$i\"" & done; wait
    python3 -c "import json;rs=[json.load(open(f'$OUT-p{i}/report.json'))['run_seconds'] for i in (1,2,3,4)];print(f'moscow $S cpu 4 processes x 4 (independent): run {max(rs):.3f} s (each {[round(x,2) for x in rs]}), {$S/max(rs):.1f}/s')"
  done ;;
idle)
  # CPU PHAST on 16 workers, 100,000 osm-moscow sources, the default chunk against
  # fixed ones (REPS rounds, interleaved); busy = each unit's busy_seconds over the run. Then
  # the GPU alone and GPU + 15 workers.
  idle() { # label, sets...
    local label=$1; shift
    rm -rf "$OUT"
    "$B" run $CFG -q --set "$MO" --set run.sources=${MO_SOURCES:-100000} --set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\" --set output.dir="\"$OUT\"" "$@" 2>/tmp/err.txt || { echo "$label: FAILED $(tail -c 300 /tmp/err.txt)"; return; }
    python3 - "$label" "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2])); rs = r["run_seconds"]; t = r["tasks"]; us = r["units"]
share = [u["busy_seconds"] / rs for u in us]
print(f"{sys.argv[1]:<28} {t/rs:9.0f} SSSP/s run {rs:6.3f} s chunks {sum(u['chunks'] for u in us):5d} busy mean {sum(share)/len(share):.3f} min {min(share):.3f} units {len(us)} sum={r['checksum']['sum']}")
PY
  }
  idle warm --set units.opencl=none --set run.sources=64
  for rep in $(seq ${REPS:-2}); do
    idle "cpu16 default" --set units.opencl=none
    idle "cpu16 chunk=4096" --set units.opencl=none --set scheduler.chunk=4096
    idle "cpu16 chunk=1024" --set units.opencl=none --set scheduler.chunk=1024
  done
  idle "gpu only default" --set units.cpu_workers=0
  idle "gpu+cpu15 default"
  idle "gpu+cpu15 chunk=4096" --set scheduler.chunk=4096 ;;
defaults)
  # The default chunk against fixed ones for CPU only, GPU only and both, with PHAST,
  # Dijkstra / the work list and the collatz example; REPS rounds, the settings of each
  # combination in a new shuffled order every round (the machine drifts within a command).
  # Prints one line per run, then per combination the mean rate of each setting and the
  # default's ratio to the best. CZ = the collatz example's binary (default beside BIN).
  CZ=${CZ:-$(dirname "$B")/examples/collatz}
  dflt() { # combo, setting, cmd...
    local combo=$1 setting=$2; shift 2
    rm -rf "$OUT"
    if timeout 120 "$@" -q --set output.dir="\"$OUT\"" 2>/tmp/err.txt >/dev/null; then
      python3 - "$combo" "$setting" "$OUT/report.json" <<'PY' | tee -a /tmp/defaults.txt
import json, sys
r = json.load(open(sys.argv[3])); rs = r["run_seconds"]; t = r["tasks"]; us = r["units"]
share = [u["busy_seconds"] / rs for u in us]
print(f"{sys.argv[1]}\t{sys.argv[2]}\t{t/rs:.1f}\t{sum(share)/len(share):.3f}\t{min(share):.3f}\t{sum(u['chunks'] for u in us)}")
PY
    else echo "$combo $setting FAILED: $(tail -c 200 /tmp/err.txt)"; fi
  }
  : > /tmp/defaults.txt
  # COMBOS="phast cpu;dijkstra cpu" runs those combinations only.
  IFS=';' read -r -a COMBOS <<< "${COMBOS:-phast cpu;phast gpu;phast both;dijkstra cpu;worklist gpu;dijkstra+worklist both;collatz cpu;collatz gpu;collatz both}"
  A=(--set "$MO" --set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\")
  J=(--set "$MO" --set apsp.cpu_algorithm=\"dijkstra\" --set apsp.gpu_algorithm=\"worklist\")
  printf '[run]\nplugin = "collatz"\n[collatz]\nfirst = 1\ncount = %s\nblock = 65536\n[units]\ndevice_type = "gpu"\n' 40000000 > /tmp/czc.toml
  printf '[run]\nplugin = "collatz"\n[collatz]\nfirst = 1\ncount = %s\nblock = 65536\n[units]\ndevice_type = "gpu"\n' 400000000 > /tmp/czg.toml
  "$B" run $CFG -q "${A[@]}" --set run.sources=64 --set units.opencl=none --set output.dir="\"$OUT\"" # the hierarchy, cached
  for rep in $(seq ${REPS:-2}); do
    for combo in "${COMBOS[@]}"; do
      case $combo in
        "phast cpu") cmd=("$B" run $CFG "${A[@]}" --set run.sources=30000 --set units.opencl=none) ;;
        "phast gpu") cmd=("$B" run $CFG "${A[@]}" --set run.sources=\"all\" --set units.cpu_workers=0) ;;
        "phast both") cmd=("$B" run $CFG "${A[@]}" --set run.sources=\"all\") ;;
        "dijkstra cpu") cmd=("$B" run $CFG "${J[@]}" --set run.sources=2048 --set units.opencl=none) ;;
        "worklist gpu") cmd=("$B" run $CFG "${J[@]}" --set run.sources=8192 --set units.cpu_workers=0) ;;
        "dijkstra+worklist both") cmd=("$B" run $CFG "${J[@]}" --set run.sources=8192) ;;
        "collatz cpu") cmd=("$CZ" run /tmp/czc.toml --set units.opencl=\"none\") ;;
        "collatz gpu") cmd=("$CZ" run /tmp/czg.toml --set units.cpu_workers=0) ;;
        "collatz both") cmd=("$CZ" run /tmp/czg.toml) ;;
      esac
      # GPU only: the GPU queues' chunk (scheduler.gpu_chunk); otherwise the CPU workers'.
      case $combo in *gpu) key=scheduler.gpu_chunk; vals="64 256 1024" ;; *) key=scheduler.chunk; vals="64 256 1024 4096" ;; esac
      # One run of each setting per round, the default among them, in a shuffled order.
      for v in $( (echo default; printf '%s\n' $vals) | shuf); do
        if [ "$v" = default ]; then dflt "$combo" default "${cmd[@]}"; else dflt "$combo" "$key=$v" "${cmd[@]}" --set $key=$v; fi
      done
    done
  done
  python3 - <<'PY'
import collections, math
rates = collections.defaultdict(list); busy = collections.defaultdict(list)
for line in open("/tmp/defaults.txt"):
    c, s, r, b, m, ch = line.rstrip("\n").split("\t")
    rates[(c, s)].append(float(r)); busy[(c, s)].append(float(m))
combos = list(dict.fromkeys(c for c, _ in rates))
# Paired: each round's default against the same round's fixed setting (the machine drifts
# between rounds more than within one), as a geometric mean over rounds; the best fixed
# setting is the one the default trails most. Means are printed beside.
print(f"{'combination':<26} {'default /s':>11} {'best fixed':>24} {'paired default/best':>20} {'means':>7} {'min busy (default)':>18}")
for c in combos:
    mean = {s: sum(v) / len(v) for (cc, s), v in rates.items() if cc == c}
    d = rates[(c, "default")]
    paired = {}
    for (cc, s), v in rates.items():
        if cc == c and s != "default":
            n = min(len(v), len(d))
            paired[s] = math.exp(sum(math.log(d[i] / v[i]) for i in range(n)) / n)
    best = min(paired, key=paired.get)
    span = lambda s: f"{min(rates[(c, s)]):.1f}-{max(rates[(c, s)]):.1f}"
    print(f"{c:<26} {mean['default']:11.1f} {best + ' ' + format(mean[best], '.1f'):>24} {paired[best]:20.3f} {mean['default'] / mean[best]:7.3f} {min(busy[(c, 'default')]):18.3f}  default {span('default')}, best {span(best)}")
PY
  ;;
short)
  # A 20 ms run (osm-bremen-dist's full APSP, PHAST on the GPU) with and without the
  # CPU workers, alternated REPS times; the speed history in $XDG_CACHE_HOME carries over from
  # run to run (the first run of each probes).
  for rep in $(seq ${REPS:-5}); do
    for units in gpu both; do
      rm -rf "$OUT"
      extra=(); [ $units = gpu ] && extra=(--set units.cpu_workers=0)
      "$B" run $CFG -q --set "$BR" --set run.sources=\"all\" --set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\" --set output.dir="\"$OUT\"" "${extra[@]}" 2>/tmp/err.txt || { echo "$units FAILED $(tail -c 200 /tmp/err.txt)"; continue; }
      python3 - "$units" "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2])); us = r["units"]
cpu = [u for u in us if u["kind"] == "cpu"]
print(f"bremen all {sys.argv[1]:<5} run {r['run_seconds']*1e3:7.2f} ms wall {r['wall_seconds']:.3f} s cpu tasks {sum(u['tasks'] for u in cpu):5d} start {sorted(set(u.get('start', '-') for u in us))} sum={r['checksum']['sum']}")
PY
    done
  done ;;
scale)
  # Country-scale road graphs: K x K tiles of osm-moscow (../shared/tools/tile_roads.py,
  # TILER= its path, default beside BIN; needs DATA/osm-moscow.co.gz), K in KS (default 1 2 4 8).
  # For each binary in BINS (default BIN; BASE=another binary adds a baseline first): the
  # hierarchy build (apsp.cpu_algorithm = "phast", 16 sources, CPU workers only) cold (empty
  # cache), then the same run cached; wall, prepare, preprocess seconds, peak RSS (time -v),
  # distance width, shortcuts per arc, levels, upward search; the stage lines it printed.
  TILER=${TILER:-$(dirname "$B")/tile_roads.py}
  G=${GDIR:-/tmp/scale}; mkdir -p "$G"
  for K in ${KS:-1 2 4 8}; do
    if [ "$K" = 1 ]; then IN=$D/osm-moscow.gr.gz; else
      IN=$G/tiles$K.gr
      [ -f "$IN" ] || { t0=$(date +%s.%N); python3 "$TILER" "$D/osm-moscow.gr.gz" "$D/osm-moscow.co.gz" "$K" "$IN" >/dev/null; echo "K=$K generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s, $(stat -c %s "$IN") bytes"; }
    fi
    for bin in ${BASE:-} ${BINS:-$B}; do
      export XDG_CACHE_HOME=$G/cache-$(basename "$bin"); rm -rf "$XDG_CACHE_HOME"
      for pass in cold cached; do
        rm -rf "$OUT"
        /usr/bin/time -v -o /tmp/time.txt timeout 590 "$bin" run $CFG --set input.path="\"$IN\"" --set run.sources=16 \
          --set apsp.cpu_algorithm=\"phast\" --set units.opencl=\"none\" --set output.dir="\"$OUT\"" 2>/tmp/err.txt >/dev/null || echo "K=$K $(basename "$bin") $pass FAILED: $(tail -c 300 /tmp/err.txt)"
        python3 - "K=$K $(basename "$bin") $pass" "$OUT/report.json" /tmp/time.txt <<'PY'
import json, re, sys
r = json.load(open(sys.argv[2])); t = open(sys.argv[3]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 2**20
a = r["input"]["algorithm"]; ph = r.get("phase_seconds", {})
print(f"{sys.argv[1]:<24} n={r['input']['n']} wall {r['wall_seconds']:7.2f} s prepare {ph.get('prepare', 0):7.2f} s preprocess {a.get('preprocess_seconds', 0):7.2f} s ({a.get('source')}) peak RSS {rss:5.2f} GiB {r['input']['distance_type']} {a.get('shortcuts_per_arc', 0):.3f} shortcuts/arc {a.get('levels')} levels upward {a.get('upward_search_mean', 0):.0f}", flush=True)
PY
        sed 's/^/    stderr: /' /tmp/err.txt | head -8
      done
    done
  done ;;
moscowfull)
  one "moscow full APSP gpu+cpu" 560 --set "$MO" --set run.sources=\"all\" ;;
width)
  # "u32 unless a distance really overflows": trees/s of the default config (GPU +
  # CPU workers, PHAST) on osm-moscow (WSRC sources, default 65536) and on K x K tilings of it
  # (WSRC / K^2 sources; TILES, default "2 4", made
  # with TILE=tile_roads.py into DATA_DIR, which needs osm-moscow.co.gz there), for BASE (the
  # binary before, if given) and BIN (the hierarchy is built in prepare, outside run_seconds,
  # and cached under XDG_CACHE_HOME). Checksums must be equal between the two binaries.
  for K in ${TILES:-2 4}; do
    [ -f "$D/tiles$K.gr" ] || python3 "${TILE:-../shared/tools/tile_roads.py}" "$D/osm-moscow.gr.gz" "$D/osm-moscow.co.gz" "$K" "$D/tiles$K.gr"
  done
  graphs=("moscow|$MO|${WSRC:-65536}")
  for K in ${TILES:-2 4}; do graphs+=("tiles$K|input.path=\"$D/tiles$K.gr\"|$((${WSRC:-65536} / K / K))"); done
  for g in "${graphs[@]}"; do
    IFS='|' read -r name in srcs <<<"$g"
    for bin in ${BASE:+"$BASE"} "$B"; do
      tag=$([ "$bin" = "$B" ] && echo after || echo before)
      (B=$bin; one "$name $srcs $tag" 300 --set "$in" --set run.sources=$srcs)
    done
  done ;;
mpi)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  M=${MPIBIN:-$B}
  for r in 1 2 4; do
    w=$((16 / r))
    T0=$(date +%s.%N)
    mpirun -np $r --bind-to none "$M" run $CFG -q --set "$BR" --set run.sources=4096 --set units.opencl=none --set units.cpu_workers=$w --set output.dir="\"$OUT\"" || echo "mpirun failed"
    T1=$(date +%s.%N)
    python3 -c "import json;r=json.load(open('$OUT/report.json'));print(f'bremen 4096 cpu {r[\"nodes\"].__len__()} ranks x $w workers  {r[\"wall_seconds\"]:.3f} s (mpirun total {$T1-$T0:.3f} s)  sum={r[\"checksum\"][\"sum\"]}')"
  done
  T0=$(date +%s.%N)
  mpirun --bind-to none -np 1 -x TUCCOMPI_UNITS="cpu_workers=8" "$M" run $CFG -q --set "$MO" --set run.sources=2048 --set output.dir="\"$OUT\"" : \
         -np 1 -x TUCCOMPI_UNITS="cpu_workers=8,opencl=none" "$M" run $CFG -q --set "$MO" --set run.sources=2048 --set output.dir="\"$OUT\"" || echo "mpirun failed"
  T1=$(date +%s.%N)
  python3 -c "import json;r=json.load(open('$OUT/report.json'));print(f'moscow 2048 2 ranks (gpu+8 cpu | 8 cpu)  {r[\"wall_seconds\"]:.3f} s (mpirun total {$T1-$T0:.3f} s) tasks per rank {[n[\"tasks\"] for n in r[\"nodes\"]]} sum={r[\"checksum\"][\"sum\"]}')"
  one "moscow 2048 1 process gpu+16 cpu" 200 --set "$MO" --set run.sources=2048 ;;
esac; done
