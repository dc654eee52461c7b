#!/usr/bin/env bash
# Start-up with several GPUs: osm-moscow full APSP on every GPU of the machine plus CPU workers
# (default config, hierarchy and graph caches warm), the build before against this one,
# alternated. Prints prepare/setup/run/finish phases and wall seconds, and the checksum.
# Usage: bash benches/gpu_start.sh BIN_DIR DATA_DIR   (BIN_DIR: tuccompi-before, tuccompi)
set -u
B=$1; D=$2; W=$(mktemp -d)
export XDG_CACHE_HOME=$W/cache
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\""
eval $B/tuccompi run configs/apsp.toml $M --set output.dir=\"$W/warm\" -q
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    eval $B/$b run configs/apsp.toml $M --set output.dir=\"$W/$b-$i\" -q
    python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); c = r['checksum']
print(sys.argv[2], 'run %.3f s wall %.3f s' % (r['run_seconds'], r['wall_seconds']),
      'phases', {k: round(v, 3) for k, v in r.get('phase_seconds', {}).items()},
      'sum', c.get('sum'), 'gpus', sum(1 for u in r['units'] if u['name'].startswith('gpu')))" \
      "$W/$b-$i/report.json" "$b#$i"
  done
done
