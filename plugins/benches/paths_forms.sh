#!/usr/bin/env bash
# Paths of an origin-destination run in both forms: `[apsp] paths = true` with
# paths_format = "csv" (paths.csv) and "npy" (path_offsets.npy + path_vertices.npy), the same
# S x T distinct random vertices (seed 1; default 1,000 x 1,000). A first run without paths
# fills a fresh hierarchy cache, so the timed runs load it. Prints each form's whole-command
# wall seconds, its phases from report.json and the files' sizes, then checks that both forms
# hold the same paths (python3, standard library only). Run from anywhere:
#   plugins/benches/paths_forms.sh BIN GRAPH [S] [T] [--set KEY=VALUE ...]
# e.g. plugins/benches/paths_forms.sh target/release/tuccompi /work/shared/data/osm-moscow.gr.gz
set -euo pipefail
BIN=$(realpath "${1:?tuccompi binary}"); GRAPH=$(realpath "${2:?a .gr or .gr.gz graph}"); shift 2
S=${1:-1000}; [ $# -gt 0 ] && shift
T=${1:-1000}; [ $# -gt 0 ] && shift
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; export XDG_CACHE_HOME=$W/cache
# The vertex count of the DIMACS header (zcat stops early when awk has it).
N=$( { zcat -f "$GRAPH" || true; } | awk '/^p/ {print $3; exit}')
python3 - "$N" "$S" "$T" "$W" <<'PY'
import random, sys
n, s, t = map(int, sys.argv[1:4])
w = sys.argv[4]
rng = random.Random(1)
for name, k in (("sources", s), ("targets", t)):
    ids = rng.sample(range(1, n + 1), k)
    open(f"{w}/{name}.txt", "w").write("\n".join(map(str, ids)) + "\n")
PY
cat > "$W/paths.toml" <<TOML
[run]
plugin = "apsp"
[input]
path = "$GRAPH"
[apsp]
sources = { file = "$W/sources.txt" }
targets = { file = "$W/targets.txt" }
paths = true
TOML
"$BIN" run "$W/paths.toml" -q --set apsp.paths=false --set "output.dir=\"$W/warm\"" "$@"
for form in csv npy; do
  t0=$(date +%s.%N)
  "$BIN" run "$W/paths.toml" -q --set "apsp.paths_format=\"$form\"" \
    --set "output.dir=\"$W/$form\"" "$@"
  t1=$(date +%s.%N)
  python3 - "$form" "$t0" "$t1" "$W/$form" <<'PY'
import json, os, sys
form, t0, t1, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r = json.load(open(f"{out}/report.json"))
phases = " ".join(f"{k} {v:.3f}" for k, v in r["phase_seconds"].items())
files = [f for f in ("paths.csv", "path_offsets.npy", "path_vertices.npy") if os.path.exists(f"{out}/{f}")]
size = " + ".join(f"{f} {os.path.getsize(f'{out}/{f}') / 1e6:.1f} MB" for f in files)
print(f"{form}: {t1 - t0:.3f} s wall (whole command; phases: {phases}); {size}")
PY
done
python3 - "$W" <<'PY'
import ast, struct, sys
w = sys.argv[1]
def load(p):
    with open(p, "rb") as f:
        b = f.read()
    hl = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + hl].decode())
    size = {"<u4": 4, "<u8": 8}[h["descr"]]
    body = memoryview(b)[10 + hl:]
    return body.cast({4: "I", 8: "Q"}[size])
o, v = load(f"{w}/npy/path_offsets.npy"), load(f"{w}/npy/path_vertices.npy")
rows = 0
with open(f"{w}/csv/paths.csv") as f:
    next(f)
    for i, line in enumerate(f):
        path = [int(x) for x in line.rstrip("\n").split(",")[4].split()]
        assert path == list(v[o[i]:o[i + 1]]), f"pair {i} differs"
        rows += 1
assert rows + 1 == len(o) and o[-1] == len(v)
print(f"both forms hold the same {rows} paths ({len(v)} vertices)")
PY
