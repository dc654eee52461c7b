#!/usr/bin/env bash
# Paths for an origin-destination matrix: tuccompi (`[apsp] paths = true`, paths.csv) against
# scipy's `dijkstra(indices=sources, return_predecessors=True)` and a vectorized walk from
# every target back to its source, for the same pairs. Default: 1,000 x 1,000 random vertices
# (seed 1) of osm-moscow. Run from anywhere:
#   plugins/benches/paths.sh BIN DATA_DIR [GRAPH_FILE_NAME] [SOURCES] [TARGETS] [--set KEY=VALUE ...]
# e.g. plugins/benches/paths.sh target/release/tuccompi ../shared/data
#      plugins/benches/paths.sh target/debug/tuccompi ../shared/data rome99.gr.gz 50 50
# Prints the wall seconds of each job (tuccompi: the whole command, the graph read and the
# hierarchy built or loaded from a fresh cache included; scipy: graph read, trees and walks),
# then checks that every pair's distance is equal, that every tuccompi path is a chain of
# existing arcs whose weights sum to it, and counts the pairs whose two paths are the same
# vertices (equal-length alternatives may differ). Needs python3 with numpy, scipy, pandas.
set -eu
B=$(realpath "${1:?tuccompi binary}"); DATA=$(realpath "${2:?data folder}"); shift 2
NAME=${1:-osm-moscow.gr.gz}; [ $# -gt 0 ] && shift
S=${1:-1000}; [ $# -gt 0 ] && shift
T=${1:-1000}; [ $# -gt 0 ] && shift
GRAPH=$DATA/$NAME
[ -e "$GRAPH" ] || { echo "NOT RUN: $GRAPH not found"; exit 1; }
HERE=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$HERE/paths.py" ids "$GRAPH" "$S" "$T" "$work"
cat > "$work/paths.toml" <<TOML
[run]
plugin = "apsp"
sources = { file = "$work/sources.txt" }
[input]
path = "$GRAPH"
[apsp]
targets = { file = "$work/targets.txt" }
paths = true
TOML
t0=$(date +%s.%N)
XDG_CACHE_HOME=$work/cache "$B" run "$work/paths.toml" -q --set output.dir="\"$work/out\"" "$@"
t1=$(date +%s.%N)
python3 - "$t0" "$t1" <<'PY'
import sys
print(f"tuccompi: {float(sys.argv[2]) - float(sys.argv[1]):.3f} s (paths.csv, whole command)")
PY
python3 "$HERE/paths.py" check "$GRAPH" "$S" "$T" "$work"
