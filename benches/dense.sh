#!/usr/bin/env bash
# CPU fw-blocked against SciPy's floyd_warshall on the same graph, in one command:
#   benches/dense.sh 2048
set -eu
N=${1:-2048}
cargo bench --bench dense -- "$N" | tail -n 1
python3 "$(dirname "$0")/scipy_fw.py" "$N"
