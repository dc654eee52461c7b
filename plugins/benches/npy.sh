#!/usr/bin/env bash
# Dense input from numpy: fw-blocked on an N x N float64 .npy matrix (inf = no arc)
# against the same matrix as DIMACS text, in one command. Checks that both runs write the
# same distances.npy and prints each run's phases (prepare = reading the input and building
# the matrix; run = the sweep) from report.json:
#   plugins/benches/npy.sh 4096            (needs python3 with numpy; writes under ${TMPDIR:-/tmp})
set -eu
N=${1:-4096}
cargo build --release -q
BIN=$PWD/target/release/tuccompi
W=$(mktemp -d "${TMPDIR:-/tmp}/tuccompi-npy-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
python3 - "$N" "$W" <<'PY'
import sys, numpy as np
n, w = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(1)
m = rng.integers(1, 1001, (n, n)).astype(np.float64)
m[rng.random((n, n)) < 0.3] = np.inf          # 30% of the pairs without an arc
np.fill_diagonal(m, 0)
np.save(f"{w}/m.npy", m)
i, j = np.nonzero(np.isfinite(m) & ~np.eye(n, dtype=bool))
with open(f"{w}/m.gr", "w") as f:
    f.write(f"p sp {n} {len(i)}\n")
    for k in range(0, len(i), 1 << 20):
        s = slice(k, k + (1 << 20))
        f.write("".join(f"a {a} {b} {c}\n" for a, b, c in zip(i[s] + 1, j[s] + 1, m[i[s], j[s]].astype(np.int64))))
PY
echo "load average: $(cut -d" " -f1-3 /proc/loadavg) on $(nproc) cores"
ls -l "$W"/m.npy "$W"/m.gr | awk '{print $5, $9}'
cfg="[run]
plugin = \"fw-blocked\"
[units]
opencl = \"none\"
[output]
distances = true"
for input in m.npy m.gr; do
  echo "$cfg" | "$BIN" -q run - --set "input.path=\"$W/$input\"" --set "output.dir=\"$W/out-$input\""
  python3 - "$W/out-$input/report.json" "$input" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); p = r["phase_seconds"]; wall = r["wall_seconds"]
print(f"{sys.argv[2]}: wall {wall:.2f} s; prepare (read + matrix) {p['prepare']:.3f} s = {100 * p['prepare'] / wall:.1f}% of the run; sweep {p['run']:.2f} s; finish {p['finish']:.2f} s")
PY
done
# numpy's npy header differs by nothing: the runs must write identical files.
cmp "$W/out-m.npy/distances.npy" "$W/out-m.gr/distances.npy" && echo "distances.npy identical"
# The .npy run numbers vertices from 0, the text from 1: summaries equal up to that shift.
