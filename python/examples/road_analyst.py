"""A road analyst's first hour with tuccompi: points of interest on an OpenStreetMap extract,
their distances, routes, accessibility and isochrones, written as GeoJSON and CSV.

    python python/examples/road_analyst.py                      # ../shared/data/helsinki.osm.pbf
    python python/examples/road_analyst.py city.osm.pbf --out results/

Needs numpy and pandas; with geopandas installed the geometry comes back as GeoDataFrames
(crs EPSG:4326), without it as GeoJSON-like dicts: the files written are the same either way.
Output goes to --out (created if missing), else to a new temporary directory; the directory is
printed at the end.

Units: an OpenStreetMap graph's weights are decimetres (the default, osm={"weight":
"distance"}) or deciseconds (osm={"weight": "time"}); distances, radii and isochrone limits
below are in decimetres, so 5000 is 500 m.
"""

import argparse
import csv
import json
import pathlib
import sys
import tempfile

import numpy as np

import tuccompi

HERE = pathlib.Path(__file__).resolve()
REPOSITORY = HERE.parents[2]
DEFAULT_GRAPH = REPOSITORY.parent / "shared" / "data" / "helsinki.osm.pbf"

#: Places to study in central Helsinki, longitude and latitude (WGS84). A point outside the
#: extract still has a nearest junction, and says how far that is (snapped.csv's
#: distance_m); one on a pedestrian square snaps to a street by it. A place no car can leave or
#: reach has empty distances in od.csv and no line in routes.geojson.
PLACES = {
    "Central station": (24.9414, 60.1719),
    "Ateneum": (24.9440, 60.1700),
    "Stockmann": (24.9410, 60.1686),
    "Esplanadi": (24.9470, 60.1675),
    "Market Square": (24.9527, 60.1675),
    "Kaisaniemi": (24.9465, 60.1745),
}
#: Accessibility radii and isochrone limits, in decimetres (500 m, 1 km).
RADII = [5000, 10000]


def geojson(obj):
    """A GeoJSON FeatureCollection (a dict) of what tuccompi returned: a GeoDataFrame, a list
    of Feature dicts, or Graph.edges()'s dict of columns."""
    if hasattr(obj, "to_json"):  # a GeoDataFrame
        return json.loads(obj.to_json(default=_plain))
    if isinstance(obj, dict):  # edges(): columns and a list of geometries
        names = [k for k in obj if k != "geometry"]
        obj = [{"type": "Feature", "geometry": line,
                "properties": {k: obj[k][i] for k in names}}
               for i, line in enumerate(obj["geometry"])]
    return {"type": "FeatureCollection", "features": obj}


def _plain(x):
    """numpy values as JSON takes them (a route's path is an id array)."""
    return x.tolist() if hasattr(x, "tolist") else str(x)


def write_geojson(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(geojson(obj), f, default=_plain)
        f.write("\n")


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph", nargs="?", default=str(DEFAULT_GRAPH),
                    help=f"an OpenStreetMap extract (default: {DEFAULT_GRAPH})")
    ap.add_argument("--out", help="the output directory (default: a new temporary directory)")
    args = ap.parse_args(argv)

    graph_path = pathlib.Path(args.graph)
    if not graph_path.exists():
        ap.error(f"{graph_path}: no such file; give an .osm.pbf extract as the first argument")
    if args.out:
        out = pathlib.Path(args.out).resolve()
        if out == REPOSITORY or REPOSITORY in out.parents:
            ap.error(f"--out {out}: inside the repository; give a directory outside it")
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = pathlib.Path(tempfile.mkdtemp(prefix="tuccompi-road-analyst-"))

    # 1. The graph: car profile, distances in decimetres, turn restrictions applied.
    g = tuccompi.read_graph(graph_path)
    print(f"{g.name}: {g.n} vertices, {g.m} arcs")

    # 2. Where the places land: g.snap gives each place's nearest junction (vertex, x, y,
    #    distance) and, on this graph that snaps onto edges, its place on the nearest road
    #    (tail, head, fraction, road_x, road_y, road_distance; see docs/python.md). This study
    #    works from the junctions, which scipy (the example's check) knows too; g.od(points,
    #    points) and g.route(points, ...) start on the roads themselves, as the command line.
    names = list(PLACES)
    points = np.array([PLACES[k] for k in names])
    snapped = g.snap(points)
    vertex = snapped["vertex"]
    write_csv(out / "snapped.csv",
              ["place", "lon", "lat", "vertex", "vertex_lon", "vertex_lat", "distance_m"],
              [(k, *points[i], vertex[i], snapped["x"][i], snapped["y"][i],
                round(float(snapped["distance"][i]), 2)) for i, k in enumerate(names)])
    try:
        write_geojson(out / "snapped.geojson", g.snap(points, geodataframe=True))
    except ImportError:
        pass  # geopandas is not installed: snapped.csv has the same

    # 3. The origin-destination matrix between the places, along the roads.
    od = g.od(vertex, vertex)
    write_csv(out / "od.csv", ["origin", "destination", "origin_vertex", "destination_vertex",
                               "distance_dm", "distance_m"],
              [(a, b, vertex[i], vertex[j],
                "" if np.isinf(od[i, j]) else int(od[i, j]),
                "" if np.isinf(od[i, j]) else od[i, j] / 10)
               for i, a in enumerate(names) for j, b in enumerate(names)])

    # 4. A few routes, as lines along the ways.
    trips = [(0, 2), (0, 3), (1, 5), (4, 0)]
    o = vertex[[a for a, _ in trips]]
    d = vertex[[b for _, b in trips]]
    routes = g.route(o, d, paths=True, geometry=True)
    write_geojson(out / "routes.geojson", routes)

    # 5. Accessibility: the graph's vertices within each radius of each place (reach counts
    #    every vertex of the graph: a junction with turn restrictions counts with its copies;
    #    targets=[...] counts chosen vertices, weights=[...] sums jobs or shops instead).
    reach = g.reach(vertex, radii=RADII)["reach"]
    write_csv(out / "reach.csv", ["place", "vertex"] + [f"vertices_within_{r}" for r in RADII],
              [(k, vertex[i], *(int(reach[f"count_{r}"][i]) for r in RADII))
               for i, k in enumerate(names)])

    # 6. Isochrone polygons: the area within 500 m and 1 km of the station and of the
    #    Market Square.
    iso = g.isochrones(vertex[[0, 4]], RADII, width=50)
    write_geojson(out / "isochrones.geojson", iso)

    # 7. The network itself, for a map's background.
    write_geojson(out / "edges.geojson", g.edges())

    for i, a in enumerate(names):
        print(f"  {a:16s} -> {names[2]}: {od[i, 2] / 10:8.0f} m")
    print(f"wrote {', '.join(sorted(p.name for p in out.iterdir()))} to {out}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
