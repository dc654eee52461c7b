#!/usr/bin/env bash
# CPU-only PHAST on osm-moscow (100,000 sources, 16 workers): the defaults, `scheduler.chunk = 1024`
# and `output.sync_seconds = 60`, alternated, with chunks and journal syncs per run.
#   bash plugins/benches/cpu_defaults_h200.sh DIR   (DIR as for plugins/benches/many_gpu.sh)
set -u
D=$(cd "${1:?usage: cpu_defaults_h200.sh DIR}" && pwd); export XDG_CACHE_HOME=/tmp/q22c
one() { rm -rf /tmp/o; $D/tuccompi run $D/configs/apsp.toml -q --set input.path="\"$D/data/osm-moscow.gr.gz\"" --set run.sources=100000 --set units.opencl='"none"' --set apsp.cpu_algorithm='"phast"' --set output.dir='"/tmp/o"' "$@" 2>/tmp/e.txt || { echo "FAILED $* $(tail -c 300 /tmp/e.txt)"; return; }
python3 - "$*" <<'PY'
import json, sys
r = json.load(open("/tmp/o/report.json"))
us = r["units"]
print(sys.argv[1].ljust(30), "SSSP/s %.0f" % (100000 / r["run_seconds"]), "run %.3f" % r["run_seconds"], "phases", {k: round(v, 3) for k, v in r["phase_seconds"].items()})
print("   chunks", sum(u.get("chunks", 0) for u in us), "least busy %.3f" % min(u["busy_seconds"] / r["run_seconds"] for u in us))
print("   journal", r.get("journal"), "scheduler", {k: v for k, v in r.get("scheduler", {}).items() if not isinstance(v, (list, dict))})
PY
}
one --set scheduler.history=false; one --set scheduler.chunk=1024
for i in 1 2; do one; one --set scheduler.chunk=1024; one --set output.sync_seconds=60; done
