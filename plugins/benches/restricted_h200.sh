#!/usr/bin/env bash
# One GPU machine: osm-moscow full APSP from a cold hierarchy cache (three times, each followed
# by a cached run), a 1,000 x 1,000 random OD and the 10,000 x 5,000 accessibility job with the
# CPU sweeps full and restricted (apsp.sweep), default units and CPU workers only; each line
# gives the wall, the phases, the input read and the hierarchy (report.json), the sweep and the
# checksum; the reach.csv files are compared.
set -u
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
# Run from the repository root: plugins/benches/restricted_h200.sh DIR (DIR holds tuccompi,
# osm-moscow.gr.gz and osm-bremen-dist.gr.gz).
D=$(realpath "${1:?a folder with tuccompi and the graphs}")
B=$D/tuccompi; M=$D/osm-moscow.gr.gz; BR=$D/osm-bremen-dist.gr.gz
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
show() { python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); a = r["input"].get("algorithm", {}); p = r["phase_seconds"]
print(f"{sys.argv[2]:28} wall {r['wall_seconds']:.3f} s | " + " ".join(f"{k} {v:.3f}" for k, v in p.items())
      + f" | read {a.get('read_seconds', 0):.3f} preprocess {a.get('preprocess_seconds', 0):.3f} ({a.get('source')})"
      + f" | sweep {a.get('sweep', 'full')} {a.get('restricted_vertices', '')} cpu {r['input']['cpu_algorithm']} gpu {r['input']['gpu_algorithm']} | sum {r['checksum']['sum']}")
PY
}
# Warm up the GPU and the driver
for i in 1 2; do XDG_CACHE_HOME=$W/c0 $B -q run configs/apsp.toml --set "input.path=\"$BR\"" --set "output.dir=\"$W/w$i\"" >/dev/null 2>&1; done
# osm-moscow's hierarchy into the cache the OD and accessibility runs read (a full APSP builds it).
XDG_CACHE_HOME=$W/c0 $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set "apsp.sources=\"all\"" --set "output.dir=\"$W/w3\"" >/dev/null 2>&1
echo "== osm-moscow full APSP, cold (fresh hierarchy cache each) and cached"
for i in 1 2 3; do
  C=$W/cold$i; t0=$(date +%s.%N)
  XDG_CACHE_HOME=$C $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set "apsp.sources=\"all\"" --set "output.dir=\"$W/cold$i-o\""
  t1=$(date +%s.%N); echo "process wall $(python3 -c "print(f'{$t1-$t0:.3f}')") s"; show $W/cold$i-o/report.json "cold $i"
  XDG_CACHE_HOME=$C $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set "apsp.sources=\"all\"" --set "output.dir=\"$W/warm$i-o\""
  show $W/warm$i-o/report.json "cached $i"
done
echo "== osm-moscow 1000 x 1000 random OD, default units (GPU + CPU), sweep full / auto"
python3 - $W <<'PY'
import random, sys
r = random.Random(51)
for name in ("s", "t"):
    open(f"{sys.argv[1]}/{name}.txt", "w").write("\n".join(str(r.randint(1, 411992)) for _ in range(1000)) + "\n")
PY
for rep in 1 2; do for sw in full auto; do
  XDG_CACHE_HOME=$W/c0 $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set "apsp.sources={file=\"$W/s.txt\"}" --set "apsp.targets={file=\"$W/t.txt\"}" --set "apsp.sweep=\"$sw\"" --set "output.dir=\"$W/od-$sw$rep\"" 2>&1 | grep -v deprecated
  show $W/od-$sw$rep/report.json "od $sw $rep"
  for u in cpu; do
  XDG_CACHE_HOME=$W/c0 $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set "apsp.sources={file=\"$W/s.txt\"}" --set "apsp.targets={file=\"$W/t.txt\"}" --set "apsp.sweep=\"$sw\"" --set 'units.opencl="none"' --set "output.dir=\"$W/odc-$sw$rep\"" 2>&1 | grep -v deprecated
  show $W/odc-$sw$rep/report.json "od cpu-only $sw $rep"; done
done; done
echo "== osm-moscow 10,000 x 5,000 reach (radii 500/1000/2000, nearest 3), default units and CPU only"
python3 - $W <<'PY'
import random, sys
r = random.Random(37)
open(f"{sys.argv[1]}/rs.txt", "w").write("\n".join(str(x) for x in sorted(r.sample(range(1, 411993), 10000))) + "\n")
open(f"{sys.argv[1]}/rp.txt", "w").write("\n".join(str(r.randint(1, 411992)) for _ in range(5000)) + "\n")
PY
for rep in 1 2; do for sw in full auto; do for u in default cpu; do
  extra=(); [ $u = cpu ] && extra=(--set 'units.opencl="none"')
  XDG_CACHE_HOME=$W/c0 $B -q run configs/apsp.toml --set "input.path=\"$M\"" --set "apsp.sources={file=\"$W/rs.txt\"}" --set "apsp.targets={file=\"$W/rp.txt\"}" --set 'apsp.reach={radii=[500,1000,2000],nearest=3}' --set "apsp.sweep=\"$sw\"" "${extra[@]}" --set "output.dir=\"$W/r-$sw$u$rep\"" 2>&1 | grep -v deprecated
  show $W/r-$sw$u$rep/report.json "reach $u $sw $rep"
  cmp $W/r-full${u}1/reach.csv $W/r-$sw$u$rep/reach.csv || echo "REACH DIFFERS"
done; done; done
