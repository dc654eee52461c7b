#!/usr/bin/env bash
# fw-blocked on a matrix whose padded device buffer holds 2^31 elements or more (n = 50,001:
# ld^2 > 2^31), the build before (padding filled by clEnqueueFillBuffer, which NVIDIA's driver
# fails there) against this one (fw_fill kernel), on one GPU. The before run is stopped after
# 120 s. Then two rows against a dense Dijkstra in numpy (summary.csv: reached, sum, max).
# Usage: bash plugins/benches/fw_padded.sh BIN_DIR [N]   (BIN_DIR: tuccompi-before, tuccompi)
set -u
B=$1; N=${2:-50001}; W=$(mktemp -d); export XDG_CACHE_HOME=$W/cache
python3 "$(dirname "$0")/common/dense_npy.py" "$N" "$W/m.npy"
A="--set input.path=\"$W/m.npy\" --set input.no_arc=0 --set run.sources=[0,12345] --set units.cpu_workers=0"
for b in tuccompi-before tuccompi; do
  t=$(date +%s%N)
  eval timeout 120 $B/$b run configs/fw-blocked.toml $A --set output.dir=\"$W/$b\" -q > $W/$b.err 2>&1
  rc=$?
  echo "$b: exit $rc after $(( ($(date +%s%N) - t) / 1000000 )) ms; $(tail -c 300 $W/$b.err | tr '\n' ' ')"
  [ -f $W/$b/report.json ] && python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
print('  run %.3f s wall %.3f s' % (r['run_seconds'], r['wall_seconds']), 'checksum', r['checksum'])" $W/$b/report.json
  [ -f $W/$b/summary.csv ] && cat $W/$b/summary.csv
done
python3 -c "
import numpy as np, sys
M = np.load(sys.argv[1], mmap_mode='r'); n = M.shape[0]; INF = np.iinfo(np.int64).max
for s in (0, 12345):
    d = np.full(n, INF, np.int64); d[s] = 0; done = np.zeros(n, bool)
    for _ in range(n):
        dd = np.where(done, INF, d); u = int(dd.argmin())
        if dd[u] == INF: break
        done[u] = True
        row = np.asarray(M[u], dtype=np.int64)
        np.minimum(d, np.where(row > 0, d[u] + row, INF), out=d)
    f = d[d < INF]
    print('numpy dijkstra source %d: reached %d sum %d max %d' % (s, len(f), f.sum(), f.max()))
" $W/m.npy
rm -f $W/m.npy
