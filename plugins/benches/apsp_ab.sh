#!/bin/sh
# osm-moscow full APSP (default config, hierarchy cached, GPU + CPU workers) from two builds,
# alternated REPS times in one command: run phase, wall, CPU trees, checksum.
#   REPS=3 sh plugins/benches/apsp_ab.sh OLD_BIN NEW_BIN ../shared/data/osm-moscow.gr.gz
OLD=$1; NEW=$2; GR=$(realpath "$3"); REPS=${REPS:-3}
apsp() { # label bin cache
  rm -rf /tmp/apsp-ab
  XDG_CACHE_HOME=$3 timeout 120 $2 run configs/apsp.toml -q --set input.path="\"$GR\"" --set run.sources='"all"' --set output.dir='"/tmp/apsp-ab"' 2>/tmp/apsp-ab.err || { echo "$1 FAILED: $(tail -c 300 /tmp/apsp-ab.err)"; return; }
  python3 -c "
import json; r=json.load(open('/tmp/apsp-ab/report.json')); c=r['checksum']
cpu=sum(u['tasks'] for u in r['units'] if u['kind']=='cpu')
print(f\"$1: wall {r['wall_seconds']:.2f} s run {r['run_seconds']:.3f} s cpu tasks {cpu} sum {c['sum']}\")"
}
apsp "old warm-up" "$OLD" /tmp/apsp-ab-old
apsp "new warm-up" "$NEW" /tmp/apsp-ab-new
i=1
while [ $i -le "$REPS" ]; do
  apsp "old $i" "$OLD" /tmp/apsp-ab-old
  apsp "new $i" "$NEW" /tmp/apsp-ab-new
  i=$((i + 1))
done
