#!/usr/bin/env bash
# The fix (devices plan without the CPU workers kept out) against the build before it, short
# bremen runs, history warm per build; alternated. Run from a folder holding short_one.sh,
# configs/apsp.toml and data/osm-bremen-dist.gr.gz, with the binaries in ../.dev-k8/.
set -u
cd "$(dirname "$0")"
for rep in 1 2 3; do
  for b in new fix; do
    for w in 0 14 2; do
      B=../.dev-k8/tuccompi-$b XDG_CACHE_HOME=/tmp/c-$b bash short_one.sh "$b-cpu$w" $w
    done
  done
done
