#!/usr/bin/env bash
# The workspace build against the build before it on a GPU machine: osm-moscow full APSP
# (default config, GPU + CPU workers; the hierarchy built once, then cached), alternated, with
# the checksum of each run; then the example plugins on the vendor's OpenCL: knn (float32 .npy
# inputs, f32 rows) on the GPU against the CPU half, and collatz's tune then run.
# Usage: bash plugins/benches/workspace_gpu.sh BIN_DIR DATA_DIR   (BIN_DIR: tuccompi-before, tuccompi,
# knn, collatz; DATA_DIR: osm-moscow.gr.gz)
set -u
B=$1; D=$2; W=$(mktemp -d)
export XDG_CACHE_HOME=$W/cache
summary() { python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))
c=r['checksum']; print(sys.argv[2], 'run %.3f s wall %.3f s' % (r['run_seconds'], r['wall_seconds']),
  'phases', {k: round(v,3) for k,v in r.get('phase_seconds',{}).items()}, 'sum', c.get('sum'), 'max', c.get('max'),
  'units', [(u['name'], u['tasks']) for u in r['units'] if u['tasks']][:6])" "$1" "$2"; }
$B/tuccompi devices | head -12
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\""
# Warm: the hierarchy and graph caches (built by the new binary; both read the same format).
eval $B/tuccompi run configs/apsp.toml $M --set output.dir=\"$W/warm\" -q
summary $W/warm/report.json warm-new
for i in 1 2; do
  for b in tuccompi-before tuccompi; do
    eval $B/$b run configs/apsp.toml $M --set output.dir=\"$W/$b-$i\" -q
    summary $W/$b-$i/report.json "$b#$i"
  done
done
# knn: 200,000 points, 4,096 queries, 16 dims, k = 8; GPU only (verify re-runs a sample on the
# CPU half) against CPU workers only; rows compared.
python3 -c "
import numpy as np; r=np.random.default_rng(7)
np.save('$W/points.npy', r.random((200000,16), dtype=np.float32)); np.save('$W/queries.npy', r.random((4096,16), dtype=np.float32))"
printf '[run]\nplugin = "knn"\n[knn]\npoints = "%s"\nqueries = "%s"\nk = 8\n' "$W/points.npy" "$W/queries.npy" > $W/knn.toml
$B/knn run $W/knn.toml --set units.cpu_workers=0 --set output.dir=\"$W/knn-gpu\" --set verify.sample=16 -q; echo "knn gpu exit $?"
$B/knn run $W/knn.toml --set units.opencl=\"none\" --set output.dir=\"$W/knn-cpu\" -q; echo "knn cpu exit $?"
python3 -c "
import numpy as np, json
g=np.load('$W/knn-gpu/distances.npy'); c=np.load('$W/knn-cpu/distances.npy')
gi=np.load('$W/knn-gpu/indices.npy'); ci=np.load('$W/knn-cpu/indices.npy')
p=np.load('$W/points.npy'); q=np.load('$W/queries.npy')
ref=np.sort(((q[:64,None,:].astype(np.float64)-p[None,:,:])**2).sum(-1)**0.5,axis=1)[:,:8]
print('knn: gpu vs cpu max rel diff', float(np.max(np.abs(g-c)/np.maximum(c,1e-30))), 'indices equal', float((gi==ci).mean()),
      'cpu vs float64 numpy (64 queries) max abs', float(np.max(np.abs(c[:64]-ref))))
r=json.load(open('$W/knn-gpu/report.json')); print('knn gpu run', r['run_seconds'], 'verify', r['verify'])"
# collatz: tune on the GPU, then a run that uses the winner.
$B/collatz tune configs/collatz.toml --repeat 3 2>&1 | tail -8
$B/collatz run configs/collatz.toml --set output.dir=\"$W/collatz\" -q; summary $W/collatz/report.json collatz
python3 -c "import json; r=json.load(open('$W/collatz/report.json')); print([d['tuning'].get('local') for d in r['devices']])" | cut -c1-400
