#!/usr/bin/env bash
# CPU fw-blocked (best of three) against SciPy's floyd_warshall on the same graph, in one
# command; prints both, their checksums (sum of all distances) and the ratio:
#   plugins/benches/dense.sh 2048
set -eu
N=${1:-2048}
ours=$(cargo bench --bench dense -- "$N" blocked | tail -n 1)
echo "$ours"
theirs=$(python3 "$(dirname "$0")/scipy_fw.py" "$N")
echo "$theirs"
python3 - "$ours" "$theirs" <<'PY'
import re, sys
o, t = sys.argv[1], sys.argv[2]
so = float(re.search(r"best of 3 ([0-9.]+) s", o).group(1)); co = re.search(r"checksum (\d+)", o).group(1)
st = float(re.search(r"scipy \d+ ([0-9.]+) s", t).group(1)); ct = re.search(r"checksum (\d+)", t).group(1)
print(f"fw-blocked {so:.3f} s, scipy {st:.3f} s: {st / so:.1f}x" + ("" if co == ct else f"  CHECKSUMS DIFFER ({co} vs {ct})"))
PY
