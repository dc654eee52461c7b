#!/usr/bin/env bash
# Contraction-hierarchy builds at scale, the build before a change against the build after it,
# alternated: osm-moscow and the K = 4 and K = 8 tilings (../shared/tools/tile_roads.py), then
# osm-moscow's full APSP end to end (default config, cold and cached, each binary its own cache).
#   bash plugins/benches/ch_scale_h200.sh DIR
# DIR holds ch_build-old and ch_build (`cargo bench --bench ch_build --no-run` binaries),
# tuccompi-old and tuccompi, tile_roads.py, data/osm-moscow.{gr,co}.gz, configs/apsp.toml.
# Env: KS (default "4 8"), ROUNDS (default 2). Tilings are kept in /tmp/many.
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
D=$(cd "${1:?usage: ch_scale_h200.sh DIR}" && pwd); W=/tmp/many; mkdir -p $W
for K in ${KS-4 8}; do
  T=$W/tiles$K.gr
  [ -s $T ] || python3 $D/tile_roads.py $D/data/osm-moscow.gr.gz $D/data/osm-moscow.co.gz $K $T >/dev/null
done
for g in moscow ${KS-4 8}; do
  case $g in moscow) p=$D/data/osm-moscow.gr.gz ;; *) p=$W/tiles$g.gr ;; esac
  for r in $(seq ${ROUNDS:-2}); do for b in ch_build-old ch_build; do
    echo "$g $b: $(/usr/bin/time -f 'process peak RSS %M KB' $D/$b $p 2>&1 | grep -E '^build|RSS' | tr '\n' ' ')"
  done; done
done
one() {
  rm -rf /tmp/o
  XDG_CACHE_HOME=/tmp/wc-$1 $D/$1 run $D/configs/apsp.toml -q --set input.path="\"$D/data/osm-moscow.gr.gz\"" \
    --set run.sources='"all"' --set output.dir='"/tmp/o"' 2>/tmp/e.txt || { echo "$1 FAILED $(tail -c 300 /tmp/e.txt)"; return; }
  python3 -c "
import json; r=json.load(open('/tmp/o/report.json')); p=r['phase_seconds']
print('moscow full APSP $1 $2'.ljust(40), 'wall %.3f s prepare %.3f run %.3f finish %.3f sum %s' % (r['wall_seconds'], p['prepare'], p['run'], p['finish'], r['checksum']['sum']))"
}
rm -rf /tmp/wc-tuccompi /tmp/wc-tuccompi-old
one tuccompi-old cold; one tuccompi cold
for i in 1 2 3; do one tuccompi-old cached; one tuccompi cached; done
