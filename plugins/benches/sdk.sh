#!/bin/bash
# On a GPU machine: the plugin SDK's checks on the vendor's OpenCL, and what the
# default [verify] costs. Usage, from a checkout's root:
#   bash plugins/benches/sdk.sh DIR
# DIR holds the stripped binaries `options` and `collatz` (cargo build --release --examples) and
# `base` (a tuccompi binary to compare with), data/osm-bremen-dist.gr.gz and data/osm-moscow.gr.gz,
# cfg/options.toml and cfg/collatz.toml (copies of configs/), ex/collatz.cl and ex/collatz.toml
# (copies of examples/). Prints: the float example on the GPU alone, 16 CPU workers and both
# (options.csv compared byte for byte); collatz with a kernel that does not build and with a
# mismatched launch (GPU + CPU workers, then the GPU alone); the built-in plugins' GPU halves
# (every launch checked) against `base`, with each run's [verify] cost.
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
R=$(pwd); S=$(cd "${1:-.dev-sdk}" && pwd); W=/tmp/w; mkdir -p $W; cd $W; export XDG_CACHE_HOME=/tmp/cache
py() { python3 -c "import json,sys; r=json.load(open('$1/report.json')); print('   wall %.3f run %.3f verify %s failures %s units %s checksum %s' % (r['wall_seconds'], r['run_seconds'], r.get('verify'), [f['unit']+': '+f['error'][:300] for f in r['failures']], [(u['name'],u['tasks']) for u in r['units']][:3], json.dumps(r['checksum'])[:160]))"; }
run() { local name=$1 bin=$2 dir=$3; shift 3; rm -rf $dir; local t0=$(date +%s%N)
  timeout 60 $bin "$@" --set "output.dir=\"$dir\"" > $W/o.txt 2> $W/e.txt; local rc=$?
  echo "== $name: exit $rc ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"; grep -v progress $W/e.txt | cut -c1-400 | head -6; tail -1 $W/o.txt | cut -c1-300; [ -f $dir/report.json ] && py $dir; }
$S/options devices 2>&1 | grep -i nvidia | cut -c1-250
# 1. the float example: NVIDIA alone and 16 CPU workers, per-task records bit for bit
run "options gpu alone" $S/options /tmp/o-gpu run $S/cfg/options.toml --set units.cpu_workers=0 --set 'units.device_type="gpu"'
run "options cpu alone" $S/options /tmp/o-cpu run $S/cfg/options.toml --set 'units.opencl="none"'
run "options gpu+cpu" $S/options /tmp/o-mix run $S/cfg/options.toml --set 'units.device_type="gpu"'
cmp /tmp/o-gpu/options.csv /tmp/o-cpu/options.csv && echo "options.csv: GPU = CPU bit for bit"
cmp /tmp/o-mix/options.csv /tmp/o-cpu/options.csv && echo "options.csv: mixed = CPU bit for bit"
# 2. collatz: a kernel that does not build, a mismatched launch (NVIDIA + CPU workers, then NVIDIA alone)
mkdir -p $W/kb $W/km; cp $S/ex/collatz.toml $W/kb/; cp $S/ex/collatz.toml $W/km/
sed 's/uint s = 0;/uint s = 0 +;/' $S/ex/collatz.cl > $W/kb/collatz.cl
sed 's/collatz_steps(__global uint\* steps/collatz_steps(__global ulong* steps/' $S/ex/collatz.cl > $W/km/collatz.cl
run "collatz cpu alone" $S/collatz /tmp/c-cpu run $S/cfg/collatz.toml --set 'units.opencl="none"'
for k in kb km; do
  TUCCOMPI_KERNELS=$W/$k run "collatz $k gpu+cpu" $S/collatz /tmp/c-$k run $S/cfg/collatz.toml --set 'units.device_type="gpu"'
  TUCCOMPI_KERNELS=$W/$k run "collatz $k gpu alone" $S/collatz /tmp/c-$k-g run $S/cfg/collatz.toml --set 'units.device_type="gpu"' --set units.cpu_workers=0
done
# 3. built-in launches through the check on NVIDIA; [verify] auto's cost; the baseline binary beside
BR="input.path=\"$S/data/osm-bremen-dist.gr.gz\""; MO="input.path=\"$S/data/osm-moscow.gr.gz\""
run "warm-up: bremen hierarchy" $S/options /tmp/a0 run $R/configs/apsp-gpu.toml --set "$BR" --set run.sources=16 --set 'apsp.gpu_algorithm="phast"'
for rep in 1 2; do
  for b in options base; do
    run "$b bremen all phast gpu" $S/$b /tmp/a-$b run $R/configs/apsp-gpu.toml --set "$BR" --set 'run.sources="all"' --set 'apsp.gpu_algorithm="phast"'
    run "$b bremen all phast gpu+cpu" $S/$b /tmp/m-$b run $R/configs/apsp-gpu.toml --set "$BR" --set 'run.sources="all"' --set 'apsp.gpu_algorithm="phast"' --set 'units.cpu_workers="auto"' --set 'apsp.cpu_algorithm="phast"'
  done
done
cmp /tmp/a-options/summary.csv /tmp/a-base/summary.csv && echo "bremen phast: summary.csv = baseline's"
run "options moscow 8192 worklist gpu" $S/options /tmp/w1 run $R/configs/apsp-gpu.toml --set "$MO" --set run.sources=8192
run "base moscow 8192 worklist gpu" $S/base /tmp/w2 run $R/configs/apsp-gpu.toml --set "$MO" --set run.sources=8192
cmp /tmp/w1/summary.csv /tmp/w2/summary.csv && echo "moscow worklist: summary.csv = baseline's"
G='[run]\nplugin = "PLUG"\n[input.generate]\nmodel = "complete"\nvertices = NN\n[units]\ncpu_workers = 0\n'
for p in "fw-blocked 4096" "fw-naive 1024" "rkleene 2048" "dense-dijkstra 2048"; do
  set -- $p; printf "$G" | sed "s/PLUG/$1/;s/NN/$2/" > $W/$1.toml
  run "options $1 n=$2 gpu" $S/options /tmp/d1 run $W/$1.toml
  run "base $1 n=$2 gpu" $S/base /tmp/d2 run $W/$1.toml
done
