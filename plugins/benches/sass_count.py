"""Count SASS instructions per kernel in `cuobjdump --dump-sass` output (plugins/benches/fw_device.sh):
fused add-min (VIADDMNMX), separate add/min, local-memory (LDS) and spill (LDL/STL) traffic.
    python3 plugins/benches/sass_count.py FILE.sass [PREFIX]"""
import re, sys

prefix = sys.argv[2] if len(sys.argv) > 2 else "fwb_"
fn, counts = None, {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1)
        counts[fn] = {}
        continue
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_.]+)", line)
    if fn and m:
        counts[fn][m.group(1)] = counts[fn].get(m.group(1), 0) + 1
for fn, c in counts.items():
    if not fn.startswith(prefix):
        continue
    base = lambda k: sum(v for op, v in c.items() if op == k or op.startswith(k + "."))
    keys = ["VIADDMNMX", "IADD3", "VIMNMX", "IMNMX", "LDS", "LDG", "STS", "STG", "LDL", "STL", "BAR"]
    print(f"  {fn:<12} " + " ".join(f"{k}={base(k)}" for k in keys) + f" total={sum(c.values())}")
    print("     top: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items(), key=lambda x: -x[1])[:12]))
