#!/usr/bin/env bash
# fw-blocked on one GPU, for BENCHMARKS.md: the generated code of the tuner's shape (PTX from
# CL_PROGRAM_BINARIES, ptxas -v, SASS instruction counts), tile shapes and strips at n = 16,384
# with phase shares, the sizes of the acceptance, and fw-naive for the blocked vs naive table.
#   plugins/benches/fw_device.sh BIN [SECTION...]      sections: code shapes sizes naive (default: all)
# Logs under $OUT (or /tmp): fw_device.log, code.txt, code.tgz. One line per run:
#   label  n  run_seconds  T updates/s (n^3 / run_seconds)  [phase shares from profile = true]
set -u
B=${1:?binary}; shift
SECTIONS=${*:-code shapes sizes naive}
if ! ls /etc/OpenCL/vendors/*nvidia* >/dev/null 2>&1 && ldconfig -p | grep -q libnvidia-opencl; then
  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
fi
O=${OUT:-/tmp}; mkdir -p $O
W=/tmp/fwdev; mkdir -p $W
CFG=$W/fw.toml
printf '[run]\nplugin = "fw-blocked"\n[input.generate]\nmodel = "complete"\nvertices = 1024\nseed = 1\n' > $CFG
TABLE=$W/table.txt; : > $TABLE
fw() { # label, n, timeout, --set args...
  local label=$1 n=$2 t=$3; shift 3
  rm -rf $W/out
  if timeout "$t" "$B" run $CFG -q --set output.dir="\"$W/out\"" --set input.generate.vertices=$n --set units.cpu_workers=0 "$@" 2>$W/err.txt; then
    python3 - "$label" $W/out/report.json <<'PY' | tee -a $TABLE
import json, sys
r = json.load(open(sys.argv[2])); c = r["checksum"]; n = r["input"]["n"]; s = r["run_seconds"]
g = c.get("gpu_seconds", {})
line = f"{sys.argv[1]:<34} n={n:6d} run {s:8.3f} s {n**3/s/1e12:7.3f} T/s (wall {r['wall_seconds']:.1f} s)"
if g:
    line += f" | pin {g['pin']:.3f} up {g['upload']:.3f} first {g['first_strip_uploaded_at']:.3f} down {g['readback']:.3f} last {g['last_readback']:.3f} total {g['total']:.3f}"
if "kernels" in g:
    k = g["kernels"]
    line += f" | kern {k:.3f} s {n**3/k/1e12:6.2f} T/s p1 {g['phase1']/k:5.1%} p2 {g['phase2']/k:5.1%} p3 {g['phase3']/k:5.1%}"
line += f" | sum={c['sum']}"
print(line, flush=True)
PY
  else echo "$label n=$n: FAILED or timed out: $(tail -c 400 $W/err.txt)" | tee -a $TABLE; fi
}
P="--set fw-blocked.profile=true"
for s in $SECTIONS; do case $s in
code)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  "$B" devices
  rm -rf $W/bin
  TUCCOMPI_DUMP_BINARIES=$W/bin TUCCOMPI_CL_OPTIONS=-cl-nv-verbose fw "ptx dump (tuner's shape)" 4096 120
  TUCCOMPI_DUMP_BINARIES=$W/bin TUCCOMPI_CL_OPTIONS="-cl-nv-verbose" fw "ptx dump (block 64)" 4096 120 --set fw-blocked.tile=64
  export PATH=$PATH:/usr/local/cuda/bin
  {
    for f in $W/bin/fw-*.bin; do
      g=${f%.0.bin}; echo "== $g"; grep -E "Compiling entry|Used|spill" "$g.log" | grep -A2 "fwb_"
      tr -d '\000' < "$f" > "$g.ptx"
      ptxas -arch=sm_90 -v "$g.ptx" -o "$g.cubin" 2>&1 | grep -E "fwb_|Used|spill" | head -9
      cuobjdump --dump-sass "$g.cubin" > "$g.sass" 2>&1
      python3 "$(dirname "$0")/sass_count.py" "$g.sass"
    done
  } 2>&1 | tee $O/code.txt
  (cd $W && tar czf $O/code.tgz bin) ;;
shapes)
  N=16384
  fw "tuner (128, group 64, 8x8, slab 32, 4 strips)" $N 120 $P
  fw "block 64 (group 64, 8x8)" $N 120 $P --set fw-blocked.tile=64
  fw "group 64, 4x4 (256 items)" $N 120 $P --set fw-blocked.register_tile=\"4x4\"
  fw "group 128 (one group per SM)" $N 120 $P --set fw-blocked.group=128
  fw "group 32, 4x4 (64 items)" $N 120 $P --set fw-blocked.group=32 --set fw-blocked.register_tile=\"4x4\"
  fw "slab 16" $N 120 $P --set fw-blocked.slab=16
  fw "strips 1" $N 120 $P --set fw-blocked.strips=1
  fw "strips 1, not profiled" $N 120 --set fw-blocked.strips=1
  fw "strips 2" $N 120 --set fw-blocked.strips=2
  fw "strips 8" $N 120 --set fw-blocked.strips=8 ;;
sizes)
  for n in 4096 8192 16384 16384 32768 32768; do fw "fw-blocked (tuner)" $n 200; done
  fw "fw-blocked strips 1, profiled" 32768 200 $P --set fw-blocked.strips=1 ;;
smoke) # on this machine's PoCL: plugins/benches/fw_device.sh BIN smoke
  fw "smoke" 200 120 $P --set units.device_type=\"all\" --set fw-blocked.tile=32 --set fw-blocked.strips=2 ;;
naive)
  for n in 4096 8192; do fw "fw-naive" $n 200 --set run.plugin=\"fw-naive\"; done ;;
esac; done
cp $TABLE $O/table.txt
echo "=== summary"; cat $O/code.txt 2>/dev/null | grep -E "^  fwb_|Used" | head -30; cat $TABLE
