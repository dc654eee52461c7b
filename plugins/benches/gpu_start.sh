#!/usr/bin/env bash
# Start-up with several GPUs: osm-moscow full APSP on every GPU of the machine plus CPU workers
# (default config, hierarchy and graph caches warm), the build before against this one,
# alternated. Prints prepare/setup/run/finish phases and wall seconds, the checksum, and (this
# build) the driver's seconds listing the devices and creating each context; clinfo -l first.
# Usage: bash plugins/benches/gpu_start.sh BIN_DIR DATA_DIR   (BIN_DIR: tuccompi-before, tuccompi)
set -u
B=$1; D=$2; W=$(mktemp -d)
export XDG_CACHE_HOME=$W/cache
# The driver alone: listing every platform and device (clinfo), three times.
if command -v clinfo >/dev/null; then
  TIMEFORMAT="clinfo -l %R s"; for i in 1 2 3; do time clinfo -l >/dev/null; done
fi
nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\""
# Warm: each build's hierarchy (their cache formats may differ) and the graph cache.
for b in tuccompi-before tuccompi; do
  eval $B/$b run configs/apsp.toml $M --set output.dir=\"$W/warm-$b\" -q
done
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    eval $B/$b run configs/apsp.toml $M --set output.dir=\"$W/$b-$i\" -q
    python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); c = r['checksum']
print(sys.argv[2], 'run %.3f s wall %.3f s' % (r['run_seconds'], r['wall_seconds']),
      'phases', {k: round(v, 3) for k, v in r.get('phase_seconds', {}).items()},
      'sum', c.get('sum'), 'gpus', len(r['devices']),
      'driver list/contexts', [d.get('opened') for d in r['devices']][:1] + [[round(d['opened'][1], 3) for d in r['devices'] if 'opened' in d]])" \
      "$W/$b-$i/report.json" "$b#$i"
  done
done
