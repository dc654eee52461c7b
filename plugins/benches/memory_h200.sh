# On a GPU machine: (1) a session's in-memory jobs against its jobs into output directories and
# against jobs from cold (bench `session`, one GPU), and (2) osm-moscow full APSP from the
# command line on 1, 2 and 4 GPUs (as many as the machine has), alternated, wall and phases.
# Usage, from a checkout's root: bash plugins/benches/memory_h200.sh DIR
# DIR holds the stripped `tuccompi` and `session` (cargo bench -p tuccompi-plugins --bench
# session --no-run) binaries, osm-moscow.gr.gz and osm-bremen-dist.gr.gz.
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
export XDG_CACHE_HOME=/tmp/c; B=$(cd "${1:?DIR}" && pwd); MO="input.path=\"$B/osm-moscow.gr.gz\""; BR="input.path=\"$B/osm-bremen-dist.gr.gz\""
HAVE=$(nvidia-smi -L | grep -c '^GPU')
# warm the machine (driver JIT cache, clocks) and the hierarchy caches
for i in 1 2; do $B/tuccompi run configs/apsp.toml -q --set "$MO" --set 'apsp.sources="all"' --set 'output.dir="/tmp/w0"'; rm -rf /tmp/w0; done
$B/tuccompi run configs/apsp.toml -q --set "$BR" --set apsp.sources=16 --set 'output.dir="/tmp/w1"'
echo "== moscow 1000x1000 OD, one GPU + CPU workers"
CUDA_VISIBLE_DEVICES=0 $B/session configs/apsp.toml 5 "$MO" apsp.sources=1000 apsp.targets=1000
echo "== bremen full APSP (summary records), one GPU + CPU workers"
CUDA_VISIBLE_DEVICES=0 $B/session configs/apsp.toml 5 "$BR" 'apsp.sources="all"'
echo "== moscow full APSP, command line, by GPU count (cached hierarchy), alternated"
GPUS=$(for g in 1 2 4 8; do [ "$g" -le "$HAVE" ] && echo -n "$g "; done)
for rep in 1 2 3; do
  for g in $GPUS; do
    V=$(seq -s, 0 $((g - 1)))
    s=$(date +%s.%N)
    CUDA_VISIBLE_DEVICES=$V $B/tuccompi run configs/apsp.toml -q --set "$MO" --set 'apsp.sources="all"' --set "output.dir=\"/tmp/g$g\""
    e=$(date +%s.%N)
    python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
print('gpus', sys.argv[2], 'process wall %.3f s' % (float(sys.argv[4]) - float(sys.argv[3])), 'report wall %.3f run %.3f' % (r['wall_seconds'], r['run_seconds']),
      'phases', {k: round(v, 3) for k, v in r['phase_seconds'].items()}, 'sum', r['checksum']['sum'],
      'setup windows', [[round(x, 3) for x in d['setup_window']] for d in r['devices']])" /tmp/g$g/report.json $g $s $e
    rm -rf /tmp/g$g
  done
done
