#!/usr/bin/env bash
# Wall time around a dense run: fw-blocked on an n x n int32 matrix from .npy (weights 1..100,
# 10% no arc = 0 with input.no_arc = 0), one GPU, no outputs asked, the build before against
# this one, alternated. Prints run and wall seconds and the phases of report.json, the
# checksum (equal across builds) and (this build) the driver's seconds listing the devices and
# creating the context.
# Usage: bash plugins/benches/dense_wall.sh BIN_DIR "16384 32768"   (BIN_DIR: tuccompi-before, tuccompi)
set -u
B=$1; SIZES=${2:-"16384 32768"}; W=$(mktemp -d)
export XDG_CACHE_HOME=$W/cache
for n in $SIZES; do
  python3 "$(dirname "$0")/common/dense_npy.py" "$n" "$W/m$n.npy"
  # Warm: the page cache holds the file, the tuning cache the launch shape.
  $B/tuccompi run configs/fw-blocked.toml --set input.path=\"$W/m$n.npy\" --set input.no_arc=0 \
      --set output.dir=\"$W/warm$n\" -q
  for i in 1 2; do
    for b in tuccompi-before tuccompi; do
      $B/$b run configs/fw-blocked.toml --set input.path=\"$W/m$n.npy\" --set input.no_arc=0 \
          --set output.dir=\"$W/$b-$n-$i\" -q
      python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); c = r['checksum']
print(sys.argv[2], 'run %.3f s wall %.3f s' % (r['run_seconds'], r['wall_seconds']),
      'phases', {k: round(v, 3) for k, v in r.get('phase_seconds', {}).items()},
      'sum', c.get('sum'), 'max', c.get('max'),
      'driver list/context', [d.get('opened') for d in r['devices']])" "$W/$b-$n-$i/report.json" "n=$n $b#$i"
    done
  done
  rm -f "$W/m$n.npy"
done
