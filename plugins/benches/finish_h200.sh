#!/usr/bin/env bash
# Where a cached osm-moscow full APSP's `finish` goes: the default config, `-vv` (debug lines
# "finish: ..."), two builds alternated four times: DIR/tuccompi-old (before) and DIR/tuccompi.
#   bash plugins/benches/finish_h200.sh DIR     (DIR as for plugins/benches/many_gpu.sh, plus tuccompi-old)
# Prints wall, phases, the time summary.csv took, the checksum and the md5 of summary.csv.
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
D=$(cd "${1:?usage: finish_h200.sh DIR}" && pwd); export XDG_CACHE_HOME=/tmp/wc
for i in 1 2 3 4; do for b in tuccompi-old tuccompi; do
  rm -rf /tmp/o
  $D/$b run $D/configs/apsp.toml -vv --set input.path="\"$D/data/osm-moscow.gr.gz\"" --set run.sources='"all"' --set output.dir='"/tmp/o"' 2>/tmp/e.txt
  w=$(grep -h "outputs written" /tmp/e.txt | sed 's/.*written in //')
  python3 -c "
import json; r=json.load(open('/tmp/o/report.json')); print('$b'.ljust(13), 'wall', round(r['wall_seconds'],3), {k: round(v,3) for k,v in r['phase_seconds'].items()}, 'outputs', '$w', 'sum', r['checksum']['sum'])"
  md5sum /tmp/o/summary.csv | cut -c1-12
done; done
