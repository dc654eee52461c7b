"""Geometry from Python: Graph.isochrones (polygons) and Graph.route(geometry=True) (lines),
as GeoJSON-like dicts always and as GeoDataFrames when geopandas is installed, checked against
scipy's Dijkstra and geometry written here: every vertex within a limit inside its polygon,
every vertex far from every road the limit reaches outside, rings oriented as RFC 7946 says,
routes drawn through their vertices' places."""

import math
import sys

import numpy as np
import pytest

import tuccompi
from conftest import data

SPACING = 100


@pytest.fixture
def grid(tmp_path):
    """A 7 x 7 grid of streets 100 units apart (a .gr with its planar .co), every street both
    ways at its length, but the bottom row's one way eastwards: (graph, places, arcs)."""
    k = 7
    places = [(x * SPACING, y * SPACING) for y in range(k) for x in range(k)]
    arcs = []
    for y in range(k):
        for x in range(k):
            v = y * k + x
            if x + 1 < k:
                arcs.append((v, v + 1))
                if y > 0:
                    arcs.append((v + 1, v))
            if y + 1 < k:
                arcs += [(v, v + k), (v + k, v)]
    gr, co = tmp_path / "grid.gr", tmp_path / "grid.co"
    gr.write_text(f"p sp {k * k} {len(arcs)}\n"
                  + "".join(f"a {u + 1} {v + 1} {SPACING}\n" for u, v in arcs))
    co.write_text(f"p aux sp co {k * k}\n"
                  + "".join(f"v {i + 1} {x} {y}\n" for i, (x, y) in enumerate(places)))
    return tuccompi.read_graph(gr, coordinates=co), np.array(places, float), arcs


def crosses(ring, p):
    c = False
    for a, b in zip(ring[:-1], ring[1:]):
        if (a[1] > p[1]) != (b[1] > p[1]):
            x = a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1])
            if p[0] < x:
                c = not c
    return c


def polygons_of(geometry):
    if geometry["type"] == "Polygon":
        return [geometry["coordinates"]]
    assert geometry["type"] == "MultiPolygon"
    return geometry["coordinates"]


def inside(polygons, p):
    return any(crosses(rings[0], p) and not any(crosses(h, p) for h in rings[1:])
               for rings in polygons)


def signed_area(ring):
    return sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(ring[:-1], ring[1:])) / 2


def segment_distance(p, a, b):
    a, b, p = np.asarray(a, float), np.asarray(b, float), np.asarray(p, float)
    d = b - a
    t = 0.0 if not d.any() else float(np.clip(np.dot(p - a, d) / np.dot(d, d), 0, 1))
    return float(np.linalg.norm(a + t * d - p))


def check_feature(feature, dist, places, arcs, width, plane=lambda p: p):
    """One isochrone against the tree ``dist`` of its source (``arcs``: (u, v) of the graph,
    0-based; ``plane`` maps a place to the units of ``width``)."""
    props, geom = feature["properties"], feature["geometry"]
    limit, cell = props["limit"], props["cell"]
    within = np.flatnonzero(dist <= limit)
    assert props["vertices"] == len(within)
    polygons = polygons_of(geom)
    for rings in polygons:
        assert signed_area(rings[0]) > 0, "outer rings run counter-clockwise"
        assert all(signed_area(h) < 0 for h in rings[1:]), "holes run clockwise"
        assert all(r[0] == r[-1] for r in rings), "rings are closed"
    for v in within:
        assert inside(polygons, places[v]), f"vertex {v} at {dist[v]} outside"
    # Whole arcs out of the vertices within: more than the limit reaches.
    near = [(plane(places[u]), plane(places[v])) for u, v in arcs if dist[u] <= limit]
    near += [(plane(places[v]),) * 2 for v in within]
    bound = width + cell * (1 + math.sqrt(0.5)) + 1e-6 * width
    far = 0
    for v, p in enumerate(places):
        if min(segment_distance(plane(p), a, b) for a, b in near) > bound:
            far += 1
            assert not inside(polygons, p), f"vertex {v} inside, farther than {bound}"
    assert far > 0


def test_isochrone_polygons_as_dicts_hold_the_reach_and_no_more(grid, monkeypatch):
    import scipy.sparse.csgraph as csg
    g, places, arcs = grid
    # As without geopandas: a list of GeoJSON Feature dicts.
    monkeypatch.setitem(sys.modules, "geopandas", None)
    got = g.isochrones([1, 25], [250, 420], width=20)
    assert isinstance(got, list) and len(got) == 4
    assert [(f["properties"]["source"], f["properties"]["limit"]) for f in got] == [
        (1, 250), (1, 420), (25, 250), (25, 420)]
    assert g.last_report["coordinates"].startswith("planar")
    d = csg.dijkstra(g.to_scipy(), indices=[0, 24])
    for f in got:
        assert f["type"] == "Feature"
        assert f["properties"]["width"] == 20 and f["properties"]["cell"] == 10
        row = 0 if f["properties"]["source"] == 1 else 1
        check_feature(f, d[row], places, arcs, 20)
    # Around the corner, within 250: the first block is enclosed by reached streets.
    corner = polygons_of(got[0]["geometry"])
    assert any(len(rings) > 1 for rings in corner), "the block's hole"
    assert not inside(corner, (50, 50)) and inside(corner, (50, 0))
    # geodataframe=False keeps the dicts whatever is installed; True needs geopandas.
    monkeypatch.delitem(sys.modules, "geopandas")
    assert isinstance(g.isochrones([1], [250], width=20, geodataframe=False), list)


def test_isochrone_arguments_are_checked(grid, tmp_path):
    g, _, _ = grid
    with pytest.raises(ValueError, match="width = 0"):
        g.isochrones([1], [100], width=0)
    with pytest.raises(ValueError, match=r"limits\[0\] = 1.5"):
        g.isochrones([1], [1.5])
    with pytest.raises(ValueError, match="limits: empty"):
        g.isochrones([1], [])
    with pytest.raises(ValueError, match=r"sources\[0\] = 99 is not a vertex"):
        g.isochrones([99], [100])
    bare = tuccompi.Graph.from_edges([0, 1], [1, 0], [3, 3])
    with pytest.raises(ValueError, match="no vertex places"):
        bare.isochrones([0], [5])
    with pytest.raises(ValueError, match="no vertex places"):
        bare.route([0], [1], geometry=True)


def test_route_geometry_as_dicts_runs_through_the_vertices(grid, monkeypatch):
    g, places, _ = grid
    monkeypatch.setitem(sys.modules, "geopandas", None)
    # The bottom row is one way eastwards: 7 -> 1 goes round through the second row.
    routes = g.route([1, 7, 3], [7, 1, 3], paths=True, geometry=True)
    assert [r["properties"]["distance"] for r in routes] == [600, 800, 0]
    for r in routes:
        path = r["properties"]["path"]
        line = r["geometry"]["coordinates"]
        assert r["geometry"]["type"] == "LineString"
        # Straight between the places of the path's vertices (a .co plane has no ways); a trip
        # to itself is its place twice.
        want = places[path - g.id_base].tolist()
        assert line == (want if len(want) > 1 else want * 2)
    assert routes[1]["properties"]["path"].tolist() == [7, 14, 13, 12, 11, 10, 9, 8, 1]


def test_geodataframes_carry_the_coordinate_system(grid):
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import Point
    g, places, _ = grid
    frame = g.isochrones([1, 25], [250], width=20)
    assert isinstance(frame, gpd.GeoDataFrame)
    assert frame.crs is None, "a .co file's plane has no crs"
    assert list(frame.columns) == ["source", "limit", "vertices", "width", "cell", "geometry"]
    assert frame.is_valid.all()
    assert frame.geometry.iloc[0].covers(Point(places[0]))
    lines = g.route([1, 7], [7, 1], geometry=True)
    assert isinstance(lines, gpd.GeoDataFrame) and (lines.geom_type == "LineString").all()
    assert list(lines["distance"]) == [600, 800]


def test_helsinki_isochrones_and_routes_in_lon_lat():
    import scipy.sparse.csgraph as csg
    g = tuccompi.read_graph(data("helsinki.osm.pbf"), osm={"turn_restrictions": False})
    places = g.coordinates
    src, limit = 100, 6000
    feats = g.isochrones([src], [limit], geodataframe=False)
    assert g.last_report["coordinates"].startswith("WGS84")
    d = csg.dijkstra(g.to_scipy(), indices=src)
    f = feats[0]
    assert f["properties"]["vertices"] == int((d <= limit).sum())
    assert f["properties"]["cell"] == 25
    polygons = polygons_of(f["geometry"])
    for v in np.flatnonzero(d <= limit):
        assert inside(polygons, places[v]), v
    for rings in polygons:
        assert signed_area(rings[0]) > 0 and all(signed_area(h) < 0 for h in rings[1:])
    # Weights are decimetres along the ways, so everything reached lies within limit / 10
    # metres of the source in a straight line: a vertex farther than that, the width (50 m)
    # and the bound of a filled cell (25 m x 1.71) is outside.
    lon0, lat0 = places[src]
    k = 6_371_008.8 * math.pi / 180
    xy = np.column_stack([(places[:, 0] - lon0) * k * math.cos(math.radians(lat0)),
                          (places[:, 1] - lat0) * k])
    far = np.flatnonzero(np.hypot(xy[:, 0], xy[:, 1]) > limit / 10 * 1.005 + 50 + 25 * 1.71)
    assert far.size
    corners = np.array([p for rings in polygons for p in rings[0]])
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    boxed = [v for v in far if np.all(places[v] >= lo) and np.all(places[v] <= hi)]
    assert boxed, "no far vertex within the polygons' box to test"
    for v in boxed:
        assert not inside(polygons, places[v]), v
    # A route along the ways: from the origin's place to the destination's, through each
    # vertex of its path in order.
    r = g.route([src], [700], paths=True, geometry=True, geodataframe=False)[0]
    line = np.array(r["geometry"]["coordinates"])
    path = r["properties"]["path"]
    assert np.allclose(line[0], places[path[0]]) and np.allclose(line[-1], places[path[-1]])
    at = 0
    for v in path:
        hits = np.flatnonzero(np.all(np.isclose(line[at:], places[v]), axis=1))
        assert hits.size, f"vertex {v} not on the line after point {at}"
        at += int(hits[0])
    assert len(line) >= len(path)


def test_helsinki_geodataframes_are_wgs84():
    gpd = pytest.importorskip("geopandas")
    g = tuccompi.read_graph(data("helsinki.osm.pbf"))
    frame = g.isochrones([100, 700], [3000, 6000])
    assert isinstance(frame, gpd.GeoDataFrame)
    assert frame.crs.to_epsg() == 4326
    assert frame.is_valid.all()
    assert list(frame["limit"]) == [3000, 6000, 3000, 6000]
    small, large = frame.geometry.iloc[0], frame.geometry.iloc[1]
    # On the same cells (aligned on the source), the larger limit's area holds the smaller's
    # but for filled corners.
    assert large.area > small.area
    assert small.difference(large).area <= 0.01 * small.area
    lines = g.route([100], [700], geometry=True)
    assert lines.crs.to_epsg() == 4326 and lines.geom_type.iloc[0] == "LineString"
