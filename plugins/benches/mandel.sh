#!/bin/sh
# Issue 49: the mandel example (8,192 x 8,192 rows, up to 2,000 iterations: very uneven rows)
# against plain rayon, run phases (report.json's run_seconds; rayon: its wall) alternated REPS
# times in one command, every counts.npy checked identical to rayon's.
#   MANDEL=target/release/mandel RAYON=target/release/mandel-rayon REPS=5 sh plugins/benches/mandel.sh /tmp/mb
set -e
MANDEL=$(realpath "${MANDEL:-target/release/mandel}")
RAYON=$(realpath "${RAYON:-target/release/mandel-rayon}")
REPS=${REPS:-5}
D=${1:-/tmp/mb}
S=${S:-8192}
IT=${IT:-2000}
mkdir -p "$D"
cd "$D"
printf '[run]\nplugin = "mandel"\n[mandel]\nwidth = %s\nheight = %s\nmax_iter = %s\n[units]\nopencl = "all"\n' "$S" "$S" "$IT" > m.toml
export XDG_CACHE_HOME="$D/cache"
"$RAYON" "$S" "$S" "$IT" rayon.npy
want=$(md5sum < rayon.npy | cut -c1-8)
one() {
    label=$1
    shift
    "$MANDEL" run m.toml -q --restart --set output.dir=\"out\" "$@" >/dev/null
    python3 - "$label" "$want" <<'PY'
import json, sys, hashlib
r = json.load(open("out/report.json"))
h = hashlib.md5(open("out/counts.npy", "rb").read()).hexdigest()[:8]
cpu = sum(u["tasks"] for u in r["units"] if u["kind"] == "cpu")
ok = "same as rayon" if h == sys.argv[2] else "DIFFERENT from rayon"
print(f'{sys.argv[1]:<34} run {r["run_seconds"]:7.3f} s  cpu rows {cpu:5d}  counts {ok}')
PY
}
i=0
while [ $i -lt "$REPS" ]; do
    python3 -c "
import subprocess, sys, time
t = time.perf_counter(); subprocess.run(sys.argv[1:], check=True)
print(f'{\"plain rayon\":<28} wall {time.perf_counter() - t:7.3f} s')" "$RAYON" "$S" "$S" "$IT" rayon.npy
    one "cpu work-queue" --set units.opencl=\"none\"
    one "cpu work-queue, give back off" --set units.opencl=\"none\" --set scheduler.give_back=false
    one "gpu alone" --set units.device_type=\"gpu\" --set units.cpu_workers=0
    one "gpu + cpu work-queue" --set units.device_type=\"gpu\"
    one "gpu + cpu, give back off" --set units.device_type=\"gpu\" --set scheduler.give_back=false
    # No speed history: the first run of a job.
    XDG_CACHE_HOME="$D/fresh-$i" one "gpu + cpu, first run" --set units.device_type=\"gpu\"
    XDG_CACHE_HOME="$D/fresh-off-$i" one "gpu + cpu, first run, no give back" --set units.device_type=\"gpu\" --set scheduler.give_back=false
    i=$((i + 1))
done
