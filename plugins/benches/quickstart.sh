#!/usr/bin/env bash
# The README's quick start, timed: `auto` against Dijkstra/worklist named, 3 runs alternated,
# each with a cold cache (a fresh XDG_CACHE_HOME) and a fresh output directory; then `check`
# and `run --resume` (nothing to resume) 3 times each. Run from the repository root:
#   [REPS=3] plugins/benches/quickstart.sh BIN [BASE_BIN] [--set KEY=VALUE ...]
# BASE_BIN (another build) runs `auto` beside them. Prints one line per command: label, wall
# seconds, exit status, the algorithms, phase seconds, checksum and `auto`'s reason.
set -u
B=${1:?binary}; shift
BASE=""; if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then BASE=$1; shift; fi
CFG=configs/apsp.toml
if ! ls /etc/OpenCL/vendors/*nvidia* >/dev/null 2>&1 && [ -e /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 ]; then
  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
fi
now() { date +%s.%N; }
one() { # label bin args...
  local label=$1 bin=$2; shift 2
  local c o t0 rc
  c=$(mktemp -d); o=$(mktemp -d)/out
  t0=$(now)
  XDG_CACHE_HOME=$c "$bin" run $CFG -q --set output.dir="\"$o\"" "$@" 2>/dev/null; rc=$?
  python3 - "$label" "$rc" "$t0" "$(now)" "$o/report.json" <<'PY'
import json, sys
label, rc, t0, t1, rp = sys.argv[1:]
line = f"{label:14s} {float(t1) - float(t0):7.3f} s rc={rc}"
try:
    r = json.load(open(rp)); i = r["input"]
    ph = {k: round(v, 3) for k, v in r["phase_seconds"].items()}
    line += f" {i['cpu_algorithm']}/{i['gpu_algorithm']} {ph} sum={r['checksum']['sum']} {i['algorithm'].get('reason', '')[:150]}"
except Exception as e:
    line += f" (no report: {e})"
print(line)
PY
  rm -rf "$c" "$(dirname "$o")"
}
timed() { # label command...
  local label=$1; shift
  local t0 rc; t0=$(now); "$@" >/dev/null 2>&1; rc=$?
  python3 -c "import sys; print(f'{sys.argv[1]:14s} {float(sys.argv[3]) - float(sys.argv[2]):7.3f} s rc={sys.argv[4]}')" "$label" "$t0" "$(now)" "$rc"
}
for rep in $(seq ${REPS:-3}); do
  [ -n "$BASE" ] && one "base-auto$rep" "$BASE" "$@"
  one "auto$rep" "$B" "$@"
  one "named$rep" "$B" --set apsp.cpu_algorithm=\"dijkstra\" --set apsp.gpu_algorithm=\"worklist\" "$@"
done
for rep in $(seq ${REPS:-3}); do
  c=$(mktemp -d); o=$(mktemp -d)/out
  XDG_CACHE_HOME=$c timed "check$rep" "$B" check $CFG --set output.dir="\"$o\"" "$@"
  XDG_CACHE_HOME=$c timed "resume$rep" "$B" run $CFG --set output.dir="\"$o\"" --resume "$@"
  rm -rf "$c" "$(dirname "$o")"
done
