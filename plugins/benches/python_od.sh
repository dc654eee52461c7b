#!/usr/bin/env bash
# The Python package's OD against the command line's for the same job (target: within 1.2x),
# with scipy.sparse.csgraph.dijkstra as the peer; all three results must be equal.
#   plugins/benches/python_od.sh BIN DATA [WHEEL] [GRAPH] [SOURCES] [TARGETS] [REPS]
# BIN: the tuccompi binary; DATA: the folder with osm-moscow.gr.gz; WHEEL: the package's wheel
# (`maturin build` at the repository root, target/wheels/ or as printed), installed into a
# private folder when `import tuccompi` fails (numpy and scipy must be importable).
# Prints the median wall seconds of each and the ratio.
set -euo pipefail
BIN=$(realpath "${1:?tuccompi binary}"); DATA=$(realpath "${2:?data folder}")
WHEEL=${3:-}
here=$(dirname "$(realpath "$0")")
if ! python3 -c "import tuccompi" 2>/dev/null; then
    [ -n "$WHEEL" ] || { echo "tuccompi is not importable: give its wheel as the third argument"; exit 1; }
    site=$(mktemp -d)
    python3 -m pip install --quiet --no-deps --target "$site" "$WHEEL"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 "$here/python_od.py" "$BIN" "$DATA" "${@:4}"
