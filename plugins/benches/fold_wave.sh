#!/usr/bin/env bash
# The fold in one wave (issue 36 item 3): the build before (one phast_fold for every folded
# level, two vertices in flight per item, 64 registers, the summary's slices) against this one
# (phast_fold / phast_fold_bottom, one vertex per step, 48 registers, fold_slices = one wave of
# resident items), alternated, on one GPU. First the registers of this build's kernels (ptxas,
# through -cl-nv-verbose), then osm-moscow full APSP on the GPU alone three times each and with
# the default config (GPU + CPU workers) three times each, then
# the K = 8 tiling (26.4M vertices) with 1% of its sources, each with its full APSP
# extrapolated. Prints run phase, trees/s, batch, knobs and checksum.
# Usage: bash plugins/benches/fold_wave.sh BIN_DIR DATA_DIR TILE_ROADS_PY > LOG
#   (BIN_DIR: tuccompi-before, tuccompi; DATA_DIR: osm-moscow.gr.gz and osm-moscow.co.gz)
set -u
B=$1; D=$2; TILE=$3; W=$(mktemp -d); export XDG_CACHE_HOME=$W/cache
. "$(dirname "$0")/common/runs.sh"
M="--set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\" --set units.cpu_workers=0"
one "warm (hierarchy built)" tuccompi warm $M
mkdir -p $W/dump
TUCCOMPI_DUMP_BINARIES=$W/dump TUCCOMPI_CL_OPTIONS=-cl-nv-verbose one "registers" tuccompi v $M > /dev/null
grep -h -A3 "entry function 'phast_" $W/dump/phast*.log | grep -oE "entry function '[a-z_]+'|Used [0-9]+ registers" | paste - - | sed 's/entry function //'
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    one "osm-moscow $b #$i" $b m-$b-$i $M
  done
done
# The default config (GPU + CPU workers).
for i in 1 2 3; do
  for b in tuccompi-before tuccompi; do
    one "default config $b #$i" $b d-$b-$i --set input.path=\"$D/osm-moscow.gr.gz\" --set run.sources=\"all\"
  done
done
k8_both
