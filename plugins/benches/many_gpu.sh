#!/usr/bin/env bash
# GPU PHAST on 1, 2, 4 and 8 GPUs of one machine (as many as it has), run phase only.
#
#   bash plugins/benches/many_gpu.sh DIR
#
# DIR holds: tuccompi (a release build), tuccompi-mpi (a release build with --features mpi),
# tile_roads.py (../shared/tools), data/osm-moscow.gr.gz and data/osm-moscow.co.gz, and
# configs/apsp.toml (the repository's). GPUs are chosen with CUDA_VISIBLE_DEVICES = 0..g-1.
# Rows:
#   1. osm-moscow full APSP (every source), cached hierarchy: GPUs alone and GPUs + CPU workers;
#   2. K = 4 and K = 8 tilings of osm-moscow, the first 1% of the sources (extrapolated to all):
#      GPUs alone and GPUs + CPU workers;
#   3. under mpirun, one rank per GPU (units.opencl = "local_rank") against one process
#      driving every GPU (the MPI build, without mpirun), GPUs alone, on osm-moscow and K = 4.
# Each line: run seconds, trees/s, the extrapolated full APSP, the checksum; every checksum of a
# graph must equal its 1-GPU checksum (the script says MISMATCH otherwise).
# Environment: KS (tilings, default "4 8"), GPUS (GPU counts, default 1 2 4 8 up to the
# machine's), MPI (1 to run the mpirun rows, default 1), WORK (scratch, default /tmp/many),
# EXTRA (more arguments for every run, e.g. "--set units.device_type=all" to try it on PoCL),
# BATCHES (apsp.batch values to also run each graph at on 1 GPU alone, e.g. "64 256").
set -u
DIR=$(cd "${1:?usage: many_gpu.sh DIR}" && pwd)
# NVIDIA's OpenCL where it is not registered (the lent GPU machines); keep a caller's setting.
[ -n "${OCL_ICD_VENDORS:-}" ] || { mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; }
WORK=${WORK:-/tmp/many}; mkdir -p "$WORK"
export XDG_CACHE_HOME=$WORK/cache
HAVE=$(nvidia-smi -L | grep -c '^GPU')
GPUS=${GPUS:-$(for g in 1 2 4 8; do [ "$g" -le "$HAVE" ] && echo -n "$g "; done)}
KS=${KS-4 8}
MPI=${MPI:-1}
read -r -a EXTRA <<< "${EXTRA:-}"
CORES=$(nproc)
nvidia-smi -L; echo "cores $CORES; GPU counts: $GPUS"
CFG=$DIR/configs/apsp.toml
declare -A CHECK

visible() { seq -s, 0 $(($1 - 1)); }

# line LABEL GRAPH N REPORT: one result line, checksum compared with the graph's first.
line() {
  python3 - "$1" "$2" "$3" "$4" "${CHECK[$2]:-}" <<'PY'
import json, sys
label, graph, n, path, want = sys.argv[1:6]
r = json.load(open(path)); c = r["checksum"]
src = r["tasks"] if "tasks" in r else sum(u["tasks"] for u in r["units"])
gpu = sum(u["tasks"] for u in r["units"] if u["kind"] == "gpu")
run = r["run_seconds"]; tps = src / run
full = int(n) / tps
sums = f"{c['sum']}/{c['unreachable']}/{c['max']}"
ks = sorted({d["tuning"]["batch"]["value"] for d in r["devices"]})
width = f"{r['input'].get('compute_type')}, {c.get('redone_u64', 0)} redone in u64"
same = "" if not want else (" same" if want == sums else f" MISMATCH (1 GPU: {want})")
print(f"{label:<44} run {run:8.3f} s (wall {r['wall_seconds']:6.2f}) {tps:11,.0f} trees/s full {full/60:8.2f} min "
      f"gpu tasks {gpu}/{src} k {ks} {width} "
      f"sum {sums}{same}", flush=True)
print(sums, file=open(path + ".sum", "w"))
PY
  [ -n "${CHECK[$2]:-}" ] || CHECK[$2]=$(cat "$4.sum")
}

# one LABEL GRAPH N GPUS SOURCES CPU [extra --set ...]: one run of the plain build.
one() {
  local label=$1 graph=$2 n=$3 g=$4 sources=$5 cpu=$6; shift 6
  rm -rf "$WORK/o"
  CUDA_VISIBLE_DEVICES=$(visible "$g") timeout 580 "$DIR/tuccompi" run "$CFG" -q \
    --set input.path="\"$graph\"" --set run.sources="$sources" --set units.cpu_workers="$cpu" \
    --set output.dir="\"$WORK/o\"" "$@" "${EXTRA[@]}" 2>"$WORK/e.txt" \
    || { echo "$label FAILED: $(tail -c 400 "$WORK/e.txt")"; return; }
  line "$label" "$graph" "$n" "$WORK/o/report.json"
}

# The input graphs: osm-moscow, then the tilings; each hierarchy built once (cold, timed).
# Sources of a run: osm-moscow whole, a tiling's first 1%.
sources_of() { case $1 in *.gz) echo '"all"' ;; *) echo $(($2 / 100)) ;; esac; }
declare -a GRAPHS=("$DIR/data/osm-moscow.gr.gz")
for K in $KS; do
  t=$WORK/tiles$K.gr
  [ -s "$t" ] || python3 "$DIR/tile_roads.py" "$DIR/data/osm-moscow.gr.gz" "$DIR/data/osm-moscow.co.gz" "$K" "$t" >/dev/null
  GRAPHS+=("$t")
done
declare -A N
for gr in "${GRAPHS[@]}"; do
  rm -rf "$WORK/o"
  t0=$(date +%s.%N)
  "$DIR/tuccompi" run "$CFG" -q --set input.path="\"$gr\"" --set run.sources=16 \
    --set apsp.gpu_algorithm='"phast"' --set apsp.cpu_algorithm='"phast"' \
    --set output.dir="\"$WORK/o\"" "${EXTRA[@]}" 2>"$WORK/e.txt" || { echo "build FAILED: $(tail -c 400 "$WORK/e.txt")"; exit 1; }
  N[$gr]=$(python3 -c "import json; print(json.load(open('$WORK/o/report.json'))['input']['n'])")
  echo "$(basename "$gr"): ${N[$gr]} vertices, hierarchy ready in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
done

echo "== GPU PHAST, run phase, cached hierarchy =="
for gr in "${GRAPHS[@]}"; do
  n=${N[$gr]}
  sources=$(sources_of "$gr" "$n")
  for g in $GPUS; do
    [ "$g" -gt "$HAVE" ] && continue
    one "$(basename "$gr") $g GPU alone" "$gr" "$n" "$g" "$sources" 0 --set apsp.gpu_algorithm='"phast"'
    one "$(basename "$gr") $g GPU + CPU workers" "$gr" "$n" "$g" "$sources" '"auto"' \
      --set apsp.gpu_algorithm='"phast"'
  done
done

for b in ${BATCHES:-}; do
  for gr in "${GRAPHS[@]}"; do
    n=${N[$gr]}
    sources=$(sources_of "$gr" "$n")
    one "$(basename "$gr") 1 GPU alone, apsp.batch=$b" "$gr" "$n" 1 "$sources" 0 \
      --set apsp.gpu_algorithm='"phast"' --set apsp.batch="$b"
  done
done

[ "$MPI" = 1 ] || exit 0
echo "== one rank per GPU (mpirun, units.opencl = \"local_rank\") against one process, GPUs alone =="
for gr in "${GRAPHS[@]:0:2}"; do
  n=${N[$gr]}
  sources=$(sources_of "$gr" "$n")
  for g in $GPUS; do
    [ "$g" -gt "$HAVE" ] && continue
    sets=(--set input.path="\"$gr\"" --set run.sources="$sources" --set units.cpu_workers=0
      --set apsp.gpu_algorithm='"phast"' --set output.dir="\"$WORK/o\"" "${EXTRA[@]}")
    rm -rf "$WORK/o"
    CUDA_VISIBLE_DEVICES=$(visible "$g") timeout 580 "$DIR/tuccompi-mpi" run "$CFG" -q "${sets[@]}" \
      2>"$WORK/e.txt" && line "$(basename "$gr") $g GPU one process (MPI build)" "$gr" "$n" "$WORK/o/report.json" \
      || echo "one process FAILED: $(tail -c 400 "$WORK/e.txt")"
    rm -rf "$WORK/o"
    timeout 580 mpirun --allow-run-as-root --bind-to none -np "$g" \
      -x OCL_ICD_FILENAMES=libnvidia-opencl.so.1 -x CUDA_VISIBLE_DEVICES="$(visible "$g")" \
      -x XDG_CACHE_HOME "$DIR/tuccompi-mpi" run "$CFG" -q "${sets[@]}" \
      --set units.opencl='"local_rank"' 2>"$WORK/e.txt" \
      && line "$(basename "$gr") $g GPU $g ranks (local_rank)" "$gr" "$n" "$WORK/o/report.json" \
      || echo "mpirun FAILED: $(tail -c 400 "$WORK/e.txt")"
  done
done
