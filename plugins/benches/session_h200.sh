# On a GPU machine: a session's jobs against the same jobs from cold (bench `session`), and the Python
# package's warm calls. Usage, from a checkout's root: bash plugins/benches/session_h200.sh DIR
# DIR holds the stripped `tuccompi` and `session` (cargo bench -p tuccompi-plugins --bench session
# --no-run) binaries, osm-moscow.gr.gz, osm-bremen-dist.gr.gz and wheels/ (maturin build --release).
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
export XDG_CACHE_HOME=/tmp/c; B=$(cd "${1:?DIR}" && pwd); MO="input.path=\"$B/osm-moscow.gr.gz\""; BR="input.path=\"$B/osm-bremen-dist.gr.gz\""
# warm the machine (driver JIT cache, clocks) and the hierarchy caches
for i in 1 2; do $B/tuccompi run configs/apsp.toml -q --set "$MO" --set 'apsp.sources="all"' --set 'output.dir="/tmp/w0"'; done
$B/tuccompi run configs/apsp.toml -q --set "$BR" --set apsp.sources=16 --set 'output.dir="/tmp/w1"'
echo "== moscow 1000x1000 OD"; $B/session configs/apsp.toml 4 "$MO" apsp.sources=1000 apsp.targets=1000
echo "== bremen full APSP (summary records)"; $B/session configs/apsp.toml 4 "$BR" 'apsp.sources="all"'
echo "== moscow full APSP"; $B/session configs/apsp.toml 3 "$MO" 'apsp.sources="all"'
echo "== python"
mkdir -p /tmp/site && python3 -m pip install -q --no-deps --target /tmp/site $B/wheels/*.whl 2>&1 | tail -1
python3 plugins/benches/python_session.py /tmp/site $B/osm-moscow.gr.gz
