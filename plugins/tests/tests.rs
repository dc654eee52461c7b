//! Integration tests: one binary, one module per capability.

mod util;

mod apsp_cpu;
mod apsp_gpu;
mod bounds;
mod caches;
mod cli;
mod dense;
mod docs;
mod example;
mod input_files;
mod inputs;
mod isochrones;
mod knn;
mod many_gpu;
mod mpi;
mod od;
mod osm;
mod osm_duplicates;
mod paths;
mod phantoms;
mod phast_cpu;
mod phast_gpu;
mod reach;
mod reliability;
mod restricted;
mod scheduling;
mod tune;
mod width;
