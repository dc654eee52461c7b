#!/usr/bin/env bash
# An origin-destination matrix on CPU workers only (S random sources x T random targets, the
# matrix written as distances.npy): the run phase with the CPU sweeps over every vertex
# (apsp.sweep = "full"), restricted to the targets' selection ("auto"), and with the binary OLD
# when it is set (a build from before restricted sweeps), alternated REPS times; every
# distances.npy must be identical. The hierarchy is built once, by an untimed first run.
#   [OLD=BIN] [REPS=3] plugins/benches/od_restricted.sh BIN GRAPH [S [T]]
set -euo pipefail
BIN=$(realpath "${1:?tuccompi binary}"); GRAPH=$(realpath "${2:?a .gr.gz graph}")
S=${3:-1000}; T=${4:-1000}; REPS=${REPS:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/tuccompi-od-bench.XXXXXX"); trap 'rm -rf "$W"' EXIT
export XDG_CACHE_HOME=$W/cache
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
python3 - "$GRAPH" "$W" "$S" "$T" <<'PY'
import gzip, random, sys
n = next(int(l.split()[2]) for l in gzip.open(sys.argv[1], "rt") if l.startswith("p"))
r = random.Random(51)
for name, k in (("sources", int(sys.argv[3])), ("targets", int(sys.argv[4]))):
    open(f"{sys.argv[2]}/{name}.txt", "w").write("\n".join(str(r.randint(1, n)) for _ in range(k)) + "\n")
PY
cat > "$W/od.toml" <<TOML
[run]
plugin = "apsp"
sources = { file = "$W/sources.txt" }
[input]
path = "$GRAPH"
[apsp]
targets = { file = "$W/targets.txt" }
[units]
opencl = "none"
[output]
distances = true
TOML
# The keys as the old build knows them (the new one warns that they moved).
"$BIN" -q run "$W/od.toml" --set "output.dir=\"$W/first\"" 2>/dev/null
for rep in $(seq "$REPS"); do
  for run in full auto ${OLD:+old}; do
    bin=$BIN; set=(--set "apsp.sweep=\"$run\"")
    [ "$run" = old ] && { bin=$(realpath "$OLD"); set=(); }
    rm -rf "$W/o-$run"
    "$bin" -q run "$W/od.toml" --set "output.dir=\"$W/o-$run\"" "${set[@]}" 2>/dev/null
    python3 - "$W/o-$run/report.json" "$run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); a = r["input"].get("algorithm", {})
print(f"{sys.argv[2]:5} run phase {r['run_seconds']:.3f} s, wall {r['wall_seconds']:.3f} s "
      f"({r['input']['cpu_algorithm']}, {a.get('sweep', 'full')}: "
      f"{a.get('restricted_vertices', r['input']['n'])} of {r['input']['n']} vertices)")
PY
    cmp "$W/first/distances.npy" "$W/o-$run/distances.npy"
  done
done
