#!/usr/bin/env bash
# One traced short mixed run: osm-bremen-dist full APSP, GPU PHAST, ARG2 CPU
# workers, labelled ARG1; B= the binary. Used by short_trace.sh and short_fix.sh.
set -u; mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
one() { # label, cpu workers
  rm -rf /tmp/w
  $B run configs/apsp.toml -q --set input.path=\"data/osm-bremen-dist.gr.gz\" --set run.sources=\"all\" --set apsp.cpu_algorithm=\"phast\" --set apsp.gpu_algorithm=\"phast\" --set output.dir=\"/tmp/w\" --set output.trace=true --set units.cpu_workers=$2 2>/tmp/e.txt || { echo "FAILED $1 $(tail -c 200 /tmp/e.txt)"; return; }
  python3 - "$1" /tmp/w <<'PY'
import json, sys
r = json.load(open(sys.argv[2] + "/report.json"))
ev = json.load(open(sys.argv[2] + "/trace.json"))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M"}
g = sorted([e for e in ev if e["ph"] == "X" and names[e["tid"]].startswith("gpu")], key=lambda e: e["ts"])
c = [e for e in ev if e["ph"] == "X" and names[e["tid"]].startswith("cpu")]
gend = max(e["ts"] + e["dur"] for e in g) / 1e3
gt = sum(e["args"]["tasks"] for e in g); gb = sum(e["dur"] for e in g) / 1e3
firsts = {}
for e in g: firsts.setdefault(names[e["tid"]], e["ts"] / 1e3)
gaps = {}
for q in set(names[e["tid"]] for e in g):
    s = [e for e in g if names[e["tid"]] == q]
    gaps[q] = round(sum(b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(s, s[1:])) / 1e3, 2)
print(f"{sys.argv[1]:<6} run {r['run_seconds']*1e3:6.2f} ms gpu ends {gend:6.2f} ms ({gt} tasks, {len(g)} chunks, {gt/gb:6.0f}/ms busy) first chunk at { {k: round(v,2) for k,v in sorted(firsts.items())} } gaps between chunks ms {gaps} cpu tasks {sum(e['args']['tasks'] for e in c)} phases { {k: round(v*1e3,1) for k,v in r['phase_seconds'].items()} }")
PY
}
one "$1" "$2"
