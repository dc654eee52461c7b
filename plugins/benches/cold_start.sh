#!/usr/bin/env bash
# Cold and cached starts of one full APSP, two builds alternated in one command: each rep runs
# BEFORE then AFTER from a fresh cache folder (the hierarchy built and stored: "cold"), then each
# again on its own warm folder ("cached"). Prints the process's wall (started to exited, as a
# user waits), report.json's wall and phases, the input's read and the hierarchy's build
# (`read_seconds`, `preprocess_seconds`), and the checksum (equal across builds, or MISMATCH).
#   plugins/benches/cold_start.sh BEFORE AFTER GRAPH [REPS] [--set KEY=VALUE ...]
# e.g. CUDA_VISIBLE_DEVICES=0 plugins/benches/cold_start.sh old/tuccompi target/release/tuccompi \
#        ../shared/data/osm-moscow.gr.gz 3
set -u
A=$(realpath "${1:?BEFORE binary}"); B=$(realpath "${2:?AFTER binary}"); G=$(realpath "${3:?graph}")
shift 3
REPS=${1:-3}; [ $# -gt 0 ] && shift
[ -n "${OCL_ICD_VENDORS:-}" ] || [ ! -e /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 ] || {
  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
CFG=$(cd "$(dirname "$0")/../.." && pwd)/configs/apsp.toml
EXTRA=("$@")
SUM=""
one() { # label binary cache-folder
  rm -rf "$W/o"
  local t0 t1; t0=$(date +%s.%N)
  XDG_CACHE_HOME=$3 "$2" -q run "$CFG" --set "input.path=\"$G\"" --set 'apsp.sources="all"' \
    --set "output.dir=\"$W/o\"" "${EXTRA[@]}" 2>"$W/err" || { echo "$1 FAILED: $(tail -c 300 "$W/err")"; return; }
  t1=$(date +%s.%N)
  python3 - "$W/o/report.json" "$1" "$t0" "$t1" "$SUM" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); a = r["input"].get("algorithm", {}); p = r["phase_seconds"]
s = r["checksum"]["sum"]; want = sys.argv[5]
same = "" if not want else ("" if str(s) == want else f" MISMATCH ({want})")
print(f"{sys.argv[2]:18} process {float(sys.argv[4]) - float(sys.argv[3]):.3f} s, report wall {r['wall_seconds']:.3f} s | "
      + " ".join(f"{k} {v:.3f}" for k, v in p.items())
      + f" | read {a.get('read_seconds', 0):.3f} build {a.get('preprocess_seconds', 0):.3f} ({a.get('source')}) | sum {s}{same}")
open(sys.argv[1] + ".sum", "w").write(str(s))
PY
  [ -n "$SUM" ] || SUM=$(cat "$W/o/report.json.sum")
}
# Warm-up: the driver, and each build's kernels.
one "warm-up before" "$A" "$W/warm-a" >/dev/null; one "warm-up after" "$B" "$W/warm-b" >/dev/null
for i in $(seq "$REPS"); do
  one "cold before #$i" "$A" "$W/a$i"; one "cold after #$i" "$B" "$W/b$i"
done
for i in $(seq "$REPS"); do
  one "cached before #$i" "$A" "$W/a$i"; one "cached after #$i" "$B" "$W/b$i"
done
