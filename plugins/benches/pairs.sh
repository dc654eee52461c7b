#!/usr/bin/env bash
# Pair queries against PHAST sweeps for an origin-destination run, CPU workers only: the run
# phase of 256 sources x T targets with apsp.cpu_algorithm = "phast", "pairs" and "auto" (what
# auto picks), every checksum compared. Calibrates PAIR_COST (plugins/apsp/phast/auto.rs).
#   plugins/benches/pairs.sh BIN GRAPH [T...]
set -euo pipefail
BIN=$(realpath "${1:?tuccompi binary}"); GRAPH=$(realpath "${2:?a .gr.gz graph}")
shift 2; TS=${*:-10 30 100 300 1000}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; export XDG_CACHE_HOME=$W/cache
cd "$(dirname "$0")/../.."
for T in $TS; do
  sums=""
  for a in phast pairs auto; do
    "$BIN" run configs/apsp.toml -q --set "input.path=\"$GRAPH\"" --set apsp.sources=256 \
      --set apsp.targets=$T --set 'units.opencl="none"' --set "apsp.cpu_algorithm=\"$a\"" \
      --set "output.dir=\"$W/o-$a\""
    read -r run alg sum < <(python3 -c "import json; r=json.load(open('$W/o-$a/report.json')); print(r['run_seconds'], r['input']['cpu_algorithm'], r['checksum']['sum'])")
    printf 'T=%-5s %-6s ran %-6s run phase %.3f s\n' "$T" "$a" "$alg" "$run"
    sums="$sums $sum"
  done
  [ "$(echo $sums | tr ' ' '\n' | sort -u | wc -l)" = 1 ] || { echo "checksums differ: $sums"; exit 1; }
done
