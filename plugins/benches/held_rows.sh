#!/usr/bin/env bash
# Larger PHAST batches (issue 36 item 3): the build before against this one, alternated, on one
# GPU. Before: init filled by clEnqueueFillBuffer (fails on NVIDIA above 2^31 elements, so
# batches kept k x n below 2^31), every position holding a row. Now: init reset by a kernel,
# rows held only above the folded bottom level, batches bound by the largest allocation.
# osm-moscow full APSP on the GPU alone, then the K = 8 tiling (26.4M vertices) with 1% of its
# sources, each build's own predicted batch. Prints run phase, trees/s, batch and checksum.
# Usage: bash plugins/benches/held_rows.sh BIN_DIR DATA_DIR TILE_ROADS_PY > LOG
#   (BIN_DIR: tuccompi-before, tuccompi; DATA_DIR: osm-moscow.gr.gz and osm-moscow.co.gz)
# The driver's fill itself: `cargo bench --bench big_buffer -- fill 2148532224` (one mode per
# process: a failed fill leaves the context unusable).
set -u
B=$1; D=$2; TILE=$3; W=$(mktemp -d); export XDG_CACHE_HOME=$W/cache
. "$(dirname "$0")/common/runs.sh"
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\" --set units.cpu_workers=0"
one "warm (hierarchy built)" tuccompi warm $M
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    one "osm-moscow $b #$i" $b m-$b-$i $M
  done
done
k8_both
