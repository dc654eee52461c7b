#!/usr/bin/env bash
# GPU-machine measurements for BENCHMARKS.md. Run from the repository root:
#   benches/device.sh BIN DATA_DIR [SECTION...]
# Sections: devices algos queues hetero batch full tune dense phast moscowfull mpi
# (phast: PHB=the phast bench binary, default beside BIN). Prints one line per run:
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
one() { # label, timeout, --set args...
  local label=$1 t=$2; shift 2
  rm -rf "$OUT"
  if timeout "$t" "$B" run $CFG -q --set output.dir="\"$OUT\"" "$@" 2>/tmp/err.txt; then
    python3 - "$label" "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
w = r["wall_seconds"]; rs = r.get("run_seconds", w); t = r["tasks"]; c = r["checksum"]
busy = {}
for u in r["units"]:
    busy.setdefault(u["kind"], [0, 0.0]); busy[u["kind"]][0] += u["tasks"]; busy[u["kind"]][1] += u["busy_seconds"]
split = " ".join(f"{k}:{v[0]}" for k, v in sorted(busy.items()))
dev = r["devices"][0] if r["devices"] else {}
print(f"{sys.argv[1]:<44} {w:8.3f} s wall {rs:8.3f} s run {t:7d} tasks {t/rs:9.1f}/s  sum={c['sum']} unr={c['unreachable']}  [{split}] q={dev.get('queues','-')} chunk={dev.get('chunk','-')}", flush=True)
PY
  else
    echo "$label: FAILED or timed out ($t s): $(tail -c 300 /tmp/err.txt)"
  fi
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
phast)
  # Issue 11, end to end: a fresh hierarchy cache, so the first run of each graph builds its
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
moscowfull)
  one "moscow full APSP gpu+cpu" 560 --set "$MO" --set run.sources=\"all\" ;;
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
