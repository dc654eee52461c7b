#!/usr/bin/env bash
# The fold a slice of the trees at a time, phast_up groups of 128, the mask cleared by the sweep
# (issue 36 item 3): the build before against this one, alternated, on one GPU. osm-moscow full
# APSP (default config, then GPU alone); a frontier of 256 entries, where trees overflow and are
# redone on the host (every checksum must equal the others); then the K = 8 tiling (26.4M
# vertices) with 1% of its sources on the GPU alone. Prints run phase, trees/s and checksum.
# Usage: bash plugins/benches/fold_slices.sh BIN_DIR DATA_DIR TILE_ROADS_PY > LOG
#   (BIN_DIR: tuccompi-before, tuccompi; DATA_DIR: osm-moscow.gr.gz and osm-moscow.co.gz)
set -u
B=$1; D=$2; TILE=$3; W=$(mktemp -d); export XDG_CACHE_HOME=$W/cache
. "$(dirname "$0")/common/runs.sh"
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\""
one "warm (hierarchy built)" tuccompi warm $M
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    one "default $b#$i" $b d-$b-$i $M
    one "gpu alone $b#$i" $b g-$b-$i $M --set units.cpu_workers=0
  done
done
for b in tuccompi-before tuccompi; do
  one "frontier 256 $b" $b f-$b $M --set units.cpu_workers=0 --set apsp.gpu_frontier=256
done
k8_both
