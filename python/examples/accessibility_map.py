"""An accessibility map from a CSV of places: how many points of interest each junction reaches
within 10 minutes by car, the nearest one's travel time, and 10-minute isochrones around three.

    python python/examples/accessibility_map.py                  # ../shared/data/helsinki.osm.pbf
    python python/examples/accessibility_map.py city.osm.pbf --out results/ --pois shops.csv

Needs numpy and pandas. Writes pois.csv (unless --pois names one: name,lon,lat in WGS84),
accessibility.csv and isochrones.geojson to --out (default: a new temporary directory); with
geopandas and matplotlib installed also accessibility.png. Units: the graph is read with
osm={"weight": "time"}, so every distance is in deciseconds (6000 = 10 minutes).
"""

import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np
import pandas as pd

import tuccompi

DEFAULT_GRAPH = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "helsinki.osm.pbf"
RADII = [1200, 3000, 6000]  # 2, 5 and 10 minutes, in deciseconds
LIMIT = 6000  # the isochrones' limit: 10 minutes
NAMED = {"Central station": (24.9414, 60.1719), "Market Square": (24.9527, 60.1675),
         "Kaisaniemi": (24.9465, 60.1745), "Esplanadi": (24.9470, 60.1675)}


def main(pbf=DEFAULT_GRAPH, out=None, pois_csv=None, n_pois=40, seed=7):
    out = pathlib.Path(out or tempfile.mkdtemp(prefix="tuccompi-accessibility-"))
    out.mkdir(parents=True, exist_ok=True)

    # 1. The graph, car profile, weights in deciseconds (travel time at the ways' speeds).
    g = tuccompi.read_graph(pbf, osm={"profile": "car", "weight": "time"})

    # 2. Points of interest from a CSV. Without one, write pois.csv first: a few named places
    #    plus places drawn (seeded) near the graph's own junctions, ~10 m of noise, kept inside
    #    the extract's bounding box. Then read it back, as any CSV of places would be read.
    if pois_csv is None:
        rng = np.random.default_rng(seed)
        lo, hi = g.coordinates.min(axis=0), g.coordinates.max(axis=0)
        k = n_pois - len(NAMED)
        drawn = g.coordinates[rng.choice(g.n, size=k, replace=False)]
        drawn = np.clip(drawn + rng.normal(0, 1e-4, drawn.shape), lo + 1e-6, hi - 1e-6).round(6)
        pd.DataFrame({"name": list(NAMED) + [f"poi {i + 1:02d}" for i in range(k)],
                      "lon": np.r_[[p[0] for p in NAMED.values()], drawn[:, 0]],
                      "lat": np.r_[[p[1] for p in NAMED.values()], drawn[:, 1]],
                      }).to_csv(out / "pois.csv", index=False)
        pois_csv = out / "pois.csv"
    pois = pd.read_csv(pois_csv)
    points = pois[["lon", "lat"]].to_numpy(float)
    # reach and isochrones start (and count targets) at a point's nearest junction: say which.
    snapped = g.snap(points)
    pois["vertex"], pois["snap_m"] = snapped["vertex"], snapped["distance"].round(1)

    # 3. Accessibility from every junction (turn-restriction copies of a junction share its
    #    OpenStreetMap node and come after the road vertices: the first of each node is the
    #    junction): the POIs within 2, 5 and 10 minutes, and the nearest one's travel time.
    origins = np.sort(np.unique(g.osm_ids, return_index=True)[1])
    r = g.reach(origins, points, radii=RADII, nearest=1)
    acc = pd.DataFrame({"vertex": origins, "lon": g.coordinates[origins, 0],
                        "lat": g.coordinates[origins, 1]})
    for radius in RADII:
        acc[f"pois_within_{radius}"] = r["reach"][f"count_{radius}"].to_numpy()
    near = r["nearest"]
    acc["nearest_poi"] = [pois["name"][i] if i >= 0 else "" for i in near["index_1"]]
    acc["nearest_ds"] = near["distance_1"].to_numpy()  # NaN: no POI reachable
    acc["nearest_min"] = (acc["nearest_ds"] / 600).round(2)
    acc.to_csv(out / "accessibility.csv", index=False)

    # 4. Isochrone polygons: the area within 2 and 10 minutes of the first three POIs, roads
    #    buffered 50 m. A GeoDataFrame with geopandas, else GeoJSON Feature dicts; written
    #    either way. Rows: source (the POI's junction), limit, vertices (the count within), ...
    iso = g.isochrones(points[:3], [RADII[0], LIMIT], width=50)
    features = json.loads(iso.to_json()) if hasattr(iso, "to_json") else {
        "type": "FeatureCollection", "features": iso}
    (out / "isochrones.geojson").write_text(json.dumps(features, default=lambda x: x.tolist()))

    # 5. The map: the junctions coloured by how many POIs they reach within 2 minutes (on
    #    this small extract nearly every junction reaches every POI within 10), the 2-minute
    #    isochrones filled, the 10-minute ones outlined, the POIs as crosses.
    try:
        import geopandas as gpd
        import matplotlib
    except ImportError:
        gpd = png = None
    if gpd is not None:
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 8))
        colours = ["C0", "C1", "C2"]
        iso[iso["limit"] < LIMIT].plot(ax=ax, color=colours, alpha=0.3)
        iso[iso["limit"] == LIMIT].boundary.plot(ax=ax, color=colours, lw=2)
        gpd.GeoDataFrame(acc, geometry=gpd.points_from_xy(acc.lon, acc.lat), crs="EPSG:4326"
                         ).plot(ax=ax, column=f"pois_within_{RADII[0]}", cmap="viridis",
                                markersize=6, legend=True)
        ax.scatter(pois.lon, pois.lat, marker="x", c="red", s=25)
        ax.tick_params(axis="x", labelrotation=45)
        ax.set_title(f"POIs within {RADII[0] // 600} min by car; isochrones of 3 POIs")
        png = out / "accessibility.png"
        fig.savefig(png, dpi=120)
        plt.close(fig)

    # 6. A summary.
    print(f"{g.name}: {g.n} vertices; {len(pois)} POIs from {pois_csv}")
    for radius in RADII:
        c = acc[f"pois_within_{radius}"]
        print(f"  within {radius / 600:4.0f} min: median {c.median():.0f} POIs, "
              f"{(c == 0).sum()} junctions reach none")
    print(f"  nearest POI: median {acc.nearest_min.median():.2f} min")
    print(f"wrote {', '.join(sorted(p.name for p in out.iterdir()))} to {out}"
          + ("" if png else " (no accessibility.png: needs geopandas and matplotlib)"))
    return {"out": out, "pois": pois, "accessibility": acc, "isochrones": iso, "png": png}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph", nargs="?", default=str(DEFAULT_GRAPH))
    ap.add_argument("--out", help="output directory (default: a new temporary directory)")
    ap.add_argument("--pois", help="a CSV of places: name,lon,lat (default: pois.csv made here)")
    a = ap.parse_args(sys.argv[1:])
    main(a.graph, a.out, a.pois)
