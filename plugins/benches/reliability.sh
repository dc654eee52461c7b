#!/usr/bin/env bash
# Reliability measurements for BENCHMARKS.md.
#
#   plugins/benches/reliability.sh BIN DATA resume     # runs killed at many points, resumed, compared
#   plugins/benches/reliability.sh BIN DATA overhead   # journal cost on long runs (default sync vs none)
#   plugins/benches/reliability.sh BIN DATA bad        # bad inputs and their messages
#
# BIN: a release binary (target/release/tuccompi); DATA: the folder of the .gr.gz graphs.
set -uo pipefail
BIN=$(realpath "$1"); DATA=$(realpath "$2"); WHAT=$3
W=$(mktemp -d /tmp/tuccompi-rel-XXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"

cfg() { # cfg NAME GRAPH SOURCES DISTANCES
    cat > "$1.toml" <<EOF
[run]
plugin = "apsp"
sources = $3
[input]
path = "$DATA/$2"
[units]
opencl = "none"
cpu_workers = 2
[output]
dir = "$1-out"
distances = $4
EOF
}

journal_tasks() { # tasks journaled in OUT (32-byte records + 32 bytes per entry: an estimate)
    local j="$1/.tuccompi-partial/journal"
    [ -f "$j" ] && echo $(( $(stat -c %s "$j") / 32 )) || echo 0
}

if [ "$WHAT" = resume ]; then
    # rome99, every source, distances: 3,353 tasks, a 45 MB matrix; chunks of 16.
    cfg ref rome99.gr.gz '"all"' true
    "$BIN" run ref.toml -q --set scheduler.chunk=16
    REF_SUM=$(sha256sum < ref-out/summary.csv); REF_NPY=$(sha256sum < ref-out/distances.npy)
    echo "| trial | signals (@ tasks journaled when stopped) | exit codes | resumes | summary.csv | distances.npy |"
    echo "|---|---|---|---|---|---|"
    trial=0
    # Each plan: a list of SIGNAL@FRACTION kills, one per successive attempt, then a final
    # uninterrupted --resume.
    for plan in KILL@0.05 KILL@0.3 KILL@0.6 KILL@0.9 INT@0.1 INT@0.5 INT@0.85 TERM@0.4 \
                INT+TERM@0.3 KILL@0.2,KILL@0.5,KILL@0.8 INT@0.25,KILL@0.5,TERM@0.75; do
        trial=$((trial + 1))
        cfg t rome99.gr.gz '"all"' true
        rm -rf t-out
        flags=""; exits=""; at=""; resumes=0
        for step in ${plan//,/ }; do
            sig=${step%@*}; frac=${step#*@}
            target=$(awk -v f="$frac" 'BEGIN { printf "%d", f * 3353 }')
            "$BIN" run t.toml -q --set scheduler.chunk=16 --set output.sync_seconds=0.05 $flags \
                2> t.err &
            pid=$!
            while [ "$(journal_tasks t-out)" -lt "$target" ] && kill -0 $pid 2> /dev/null; do
                sleep 0.005
            done
            if [ "$sig" = "INT+TERM" ]; then
                kill -INT $pid; sleep 0.005; kill -TERM $pid
            else
                kill -"$sig" $pid
            fi
            wait $pid; exits="$exits $?"
            at="$at $sig@$("$BIN" check t.toml 2> /dev/null | grep -o '[0-9]* of 3353 tasks done' | cut -d' ' -f1)"
            [ -n "$flags" ] && resumes=$((resumes + 1))
            flags="--resume"
        done
        "$BIN" run t.toml -q --set scheduler.chunk=16 --resume 2> t.err || cat t.err
        resumes=$((resumes + 1))
        s=$( [ "$(sha256sum < t-out/summary.csv)" = "$REF_SUM" ] && echo identical || echo DIFFERENT)
        n=$( [ "$(sha256sum < t-out/distances.npy)" = "$REF_NPY" ] && echo identical || echo DIFFERENT)
        echo "| $trial |$at |$exits | $resumes | $s | $n |"
    done
fi

if [ "$WHAT" = overhead ]; then
    # The journal's cost: the default (written and synced every 2 s, rows synced first) against
    # sync_seconds = 3600 (written once, at the end). Alternated, two runs each.
    # Long run without distances: osm-bremen-dist, every source (40,461 tasks).
    # With distances: osm-bremen-dist, 8,000 sources (a 1.3 GB matrix).
    cfg long osm-bremen-dist.gr.gz '"all"' false
    cfg rows osm-bremen-dist.gr.gz 8000 true
    echo "| run | sync_seconds | wall_seconds | run_seconds | journal syncs | journal seconds | journal seconds / (run_seconds x units) |"
    echo "|---|---|---|---|---|---|---|"
    for name in long rows; do
        for rep in 1 2; do
            for s in 2 3600; do
                "$BIN" run $name.toml -q --restart --set output.sync_seconds=$s
                jq -r --arg n "$name" --arg s "$s" '"| \($n) | \($s) | \(.wall_seconds*1000|round/1000) | \(.run_seconds*1000|round/1000) | \(.journal.syncs) | \(.journal.sync_seconds*10000|round/10000) | \((.journal.sync_seconds / (.run_seconds * (.units|length)) * 100000 | round) / 1000)% |"' $name-out/report.json
            done
        done
    done
fi

if [ "$WHAT" = bad ]; then
    cfg ok rome99.gr.gz 8 false
    echo 'x' > a-file
    mkdir -p foreign && echo x > foreign/notes.txt
    try() { # try DESCRIPTION ARGS...
        local d=$1; shift
        local err; err=$("$BIN" "$@" 2>&1 > /dev/null); local code=$?
        printf '| %s | `%s` | %s | %s |\n' "$d" "$*" "$code" \
            "$(echo "$err" | sed 's/|/\\|/g' | awk 'NR > 1 { printf " <br> " } { printf "%s", $0 }')"
    }
    echo "| case | command | exit | message |"
    echo "|---|---|---|---|"
    try "empty output.dir" run ok.toml --set 'output.dir=""'
    try "root" run ok.toml --set 'output.dir="/"'
    try "current directory" run ok.toml --set 'output.dir="."'
    try "parent of the current directory" run ok.toml --set 'output.dir=".."'
    try "home directory" run ok.toml --set "output.dir=\"$HOME\""
    try "a file" run ok.toml --set 'output.dir="a-file"'
    try "under a file" run ok.toml --set 'output.dir="a-file/out"'
    try "someone else's directory" run ok.toml --set 'output.dir="foreign"'
    "$BIN" run ok.toml -q
    try "typo in input.path (earlier result kept)" run ok.toml --set 'input.path="rome99.gr"'
    try "no units (earlier result kept)" run ok.toml --set units.cpu_workers=0
    try "nothing to resume" run ok.toml --resume
    try "too big for the disk" run ok.toml --set 'input.path="'"$DATA"'/osm-moscow.gr.gz"' --set 'run.sources="all"' --set output.distances=true
    try "sync interval out of range" run ok.toml --set output.sync_seconds=-1
    cfg slow osm-bremen-dist.gr.gz 2000 false
    "$BIN" run slow.toml -q --set output.sync_seconds=0 2> /dev/null &
    pid=$!
    while [ "$(journal_tasks slow-out)" -lt 10 ]; do sleep 0.01; done
    try "second run on the same directory" run slow.toml
    kill -KILL $pid; wait $pid 2> /dev/null
    try "unfinished run, no --resume" run slow.toml
    try "resume with another config" run slow.toml --resume --set run.sources=1000
    try "resume on other units (allowed)" run slow.toml -q --resume --set units.cpu_workers=1
    sha256sum ok-out/summary.csv > /dev/null
fi
