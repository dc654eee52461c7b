#!/usr/bin/env bash
# A 1,000 x 1,000 random OD with paths in the compact form (paths_format = "npy") on osm-moscow,
# two builds alternated three times (each with its own hierarchy cache, warmed first): process
# wall, report wall and phases, the ids file's size, the first units' tasks, and whether both
# builds wrote identical path_offsets.npy and path_vertices.npy.
#   bash plugins/benches/paths_ab.sh BEFORE AFTER osm-moscow.gr.gz [--set KEY=VALUE ...]
set -u
[ -n "${OCL_ICD_VENDORS:-}" ] || [ ! -e /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 ] || {
  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; }
A=$(realpath "${1:?BEFORE binary}"); B=$(realpath "${2:?AFTER binary}"); M=$(realpath "${3:?graph}"); shift 3
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
N=$( { zcat -f "$M" || true; } | awk '/^p/ {print $3; exit}')
python3 - "$N" 1000 1000 "$W" <<'PY'
import random, sys
n, s, t = map(int, sys.argv[1:4]); w = sys.argv[4]; rng = random.Random(1)
for name, k in (("sources", s), ("targets", t)):
    open(f"{w}/{name}.txt", "w").write("\n".join(map(str, rng.sample(range(1, n + 1), k))) + "\n")
PY
printf '[run]\nplugin = "apsp"\n[input]\npath = "%s"\n[apsp]\nsources = { file = "%s/sources.txt" }\ntargets = { file = "%s/targets.txt" }\npaths = true\npaths_format = "npy"\n' "$M" "$W" "$W" > "$W/p.toml"
for b in before after; do
  bin=$A; [ $b = after ] && bin=$B
  XDG_CACHE_HOME=$W/c-$b "$bin" run "$W/p.toml" -q --set apsp.paths=false --set "output.dir=\"$W/warm-$b\"" "$@" 2>/dev/null
done
for rep in 1 2 3; do for b in before after; do
  bin=$A; [ $b = after ] && bin=$B
  rm -rf "$W/o-$b"; t0=$(date +%s.%N)
  XDG_CACHE_HOME=$W/c-$b "$bin" run "$W/p.toml" -q --set "output.dir=\"$W/o-$b\"" "$@" 2>"$W/err" || echo "FAILED $(tail -c 300 "$W/err")"
  t1=$(date +%s.%N)
  python3 - $b "$t0" "$t1" "$W/o-$b" <<'PY'
import json, os, sys
b, t0, t1, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r = json.load(open(f"{out}/report.json"))
phases = " ".join(f"{k} {v:.3f}" for k, v in r["phase_seconds"].items())
print(f"{b:7} {t1 - t0:.3f} s process, report wall {r['wall_seconds']:.3f} ({phases}); vertices {os.path.getsize(out + '/path_vertices.npy')/1e6:.1f} MB; units {[(u['name'], u['tasks']) for u in r['units']][:3]}", flush=True)
PY
done
cmp "$W/o-before/path_vertices.npy" "$W/o-after/path_vertices.npy" && cmp "$W/o-before/path_offsets.npy" "$W/o-after/path_offsets.npy" && echo "rep $rep: identical path files"
done
