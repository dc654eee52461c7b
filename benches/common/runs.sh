# Shared by the device scripts (source it): `show REPORT NAME` prints one line of a run's
# report.json (run phase, wall, trees/s, the batch, queues and fold knobs, checksum), and
# `one NAME BINARY OUTPUT_DIR ARGS...` runs $B/BINARY on configs/apsp.toml with ARGS into
# $W/OUTPUT_DIR and shows it. The caller sets B (the binaries' folder) and W (a work folder).
show() { python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); d = r["devices"][0]["tuning"] if r.get("devices") else {}
k = d.get("knobs", {}); v = lambda n: k.get(n, {}).get("value", "-")
print(f"{sys.argv[2]:<34} run {r['run_seconds']:8.4f} s wall {r['wall_seconds']:7.3f} s "
      f"{r['tasks']/r['run_seconds']:10,.0f} trees/s k {d.get('batch', {}).get('value')} "
      f"queues {d.get('queues', {}).get('value')} fold {v('fold_levels')} quads {v('fold_quads')} "
      f"up {d.get('local', {}).get('phast_up', {}).get('value', '-')} sum {r['checksum']['sum']}", flush=True)
PY
}
one() { # name binary output-dir args...
  local name=$1 b=$2 o=$3; shift 3
  eval timeout 300 $B/$b run configs/apsp.toml "$@" --set output.dir=\"$W/$o\" -q && show $W/$o/report.json "$name"
}
