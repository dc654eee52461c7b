#!/usr/bin/env bash
# Where the idle CPU workers' time goes in a short mixed run (history warm). Traced
# runs of `short_one.sh` (one run each: the GPU's chunks, first chunk times, gaps).
# Usage: from a folder holding short_one.sh, configs/apsp.toml and
# data/osm-bremen-dist.gr.gz, with B= the binary.
set -u
cd "$(dirname "$0")"
export B=${B:-../.dev-k8/tuccompi-new} XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cache-r}
bash short_one.sh warm0 0; bash short_one.sh warm14 14
for rep in 1 2 3; do for w in 0 14 2; do bash short_one.sh "cpu$w" $w; done; done
