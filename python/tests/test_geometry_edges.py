"""The network as a table (Graph.edges) and snapped points with their places (Graph.snap), as
dicts always and as GeoDataFrames when geopandas is installed: the arcs against the graph file
the test wrote (and against the turn-free graph for turn-restriction copies), the lines against
the vertices' places and, for OpenStreetMap, against the way lengths the weights measure."""

import math
import sys

import numpy as np
import pytest

import tuccompi
from conftest import data

#: A small planar graph: (x, y) places from a .co file, and arcs (u, v, w) 0-based, one of
#: them twice (the lighter is the graph's).
PLACES = [(0, 0), (300, 0), (300, 400), (0, 400), (150, 200), (900, 900), (600, -100)]
ARCS = [(0, 1, 300), (1, 2, 400), (2, 1, 400), (2, 3, 300), (3, 0, 400), (0, 4, 250),
        (4, 2, 250), (4, 2, 900), (1, 5, 1000), (5, 6, 7), (6, 0, 9)]


@pytest.fixture
def plane(tmp_path):
    gr, co = tmp_path / "plane.gr", tmp_path / "plane.co"
    gr.write_text(f"p sp {len(PLACES)} {len(ARCS)}\n"
                  + "".join(f"a {u + 1} {v + 1} {w}\n" for u, v, w in ARCS))
    co.write_text(f"p aux sp co {len(PLACES)}\n"
                  + "".join(f"v {i + 1} {p[0]} {p[1]}\n" for i, p in enumerate(PLACES)))
    return tuccompi.read_graph(gr, coordinates=co)


def lightest(arcs):
    """{(u, v): w} of arc triples, parallel arcs at their lightest, loops dropped."""
    out = {}
    for u, v, w in arcs:
        if u != v:
            out[(u, v)] = min(w, out.get((u, v), w))
    return out


def csr_arcs(g):
    """The graph's arcs as arrays (tails, heads, weights) in CSR order, in its numbering."""
    indptr, indices, weights = g.csr()
    tails = np.repeat(np.arange(g.n), np.diff(indptr.astype(np.int64)))
    return tails + g.id_base, indices.astype(np.int64) + g.id_base, weights.astype(np.int64)


def test_edges_of_a_co_graph_are_its_arcs_with_straight_lines(plane, monkeypatch):
    monkeypatch.setitem(sys.modules, "geopandas", None)  # as without geopandas
    e = plane.edges()
    assert isinstance(e, dict) and list(e) == ["source", "target", "weight", "geometry"]
    assert all(e[k].dtype == np.int64 for k in ("source", "target", "weight"))
    # The arcs the file holds (1-based ids, as the package numbers a .gr), each once.
    want = {(u + 1, v + 1): w for (u, v), w in lightest(ARCS).items()}
    got = dict(zip(zip(e["source"].tolist(), e["target"].tolist()), e["weight"].tolist()))
    assert len(e["source"]) == len(want) == plane.m and got == want
    # In CSR order.
    for a, b in zip((e["source"], e["target"], e["weight"]), csr_arcs(plane)):
        np.testing.assert_array_equal(a, b)
    for s, t, line in zip(e["source"], e["target"], e["geometry"]):
        p, q = PLACES[s - 1], PLACES[t - 1]
        # A .co file's own plane, as written: the straight segment.
        assert line == {"type": "LineString", "coordinates": [list(map(float, p)),
                                                              list(map(float, q))]}
    # geodataframe=False keeps the dict whatever is installed; True needs geopandas.
    with pytest.raises(ImportError, match="needs geopandas"):
        plane.edges(geodataframe=True)
    monkeypatch.delitem(sys.modules, "geopandas")
    assert isinstance(plane.edges(geodataframe=False), dict)
    with pytest.raises(ValueError, match="geodataframe = 'yes'"):
        plane.edges(geodataframe="yes")


def test_edges_refuse_a_graph_without_coordinates():
    bare = tuccompi.Graph.from_edges([0, 1], [1, 0], [3, 3])
    with pytest.raises(ValueError, match=r"edges: edges has no coordinates.*coordinates=\"x.co\""):
        bare.edges()


def test_edges_as_a_geodataframe_on_the_plane(plane):
    gpd = pytest.importorskip("geopandas")
    frame = plane.edges()
    assert isinstance(frame, gpd.GeoDataFrame)
    assert frame.crs is None, "a .co file's plane has no crs"
    assert list(frame.columns) == ["source", "target", "weight", "geometry"]
    lines = plane.edges(geodataframe=False)["geometry"]
    for geom, line in zip(frame.geometry, lines):
        assert geom.geom_type == "LineString"
        assert [list(c) for c in geom.coords] == line["coordinates"]
    # Lengths on the plane: the square's sides are their weights.
    side = frame[(frame.source == 1) & (frame.target == 2)]
    assert side.geometry.length.iloc[0] == 300


def test_snap_gives_the_vertex_and_its_place(plane, monkeypatch):
    monkeypatch.setitem(sys.modules, "geopandas", None)
    pts = np.array([[10.0, -5.0], [160.0, 190.0], [880.0, 930.0]])
    s = plane.snap(pts)
    assert list(s) == ["vertex", "distance", "x", "y"]
    np.testing.assert_array_equal(s["vertex"], [1, 5, 6])
    np.testing.assert_allclose(s["distance"], [math.hypot(10, 5), math.hypot(10, 10),
                                               math.hypot(20, 30)])
    np.testing.assert_array_equal(np.column_stack([s["x"], s["y"]]),
                                  [PLACES[0], PLACES[4], PLACES[5]])
    with pytest.raises(ImportError, match="needs geopandas"):
        plane.snap(pts, geodataframe=True)
    with pytest.raises(ValueError, match="geodataframe = 1"):
        plane.snap(pts, geodataframe=1)


def test_snap_as_a_geodataframe(plane):
    gpd = pytest.importorskip("geopandas")
    pts = np.array([[10.0, -5.0], [160.0, 190.0]])
    assert isinstance(plane.snap(pts), dict), "the dict unless a GeoDataFrame is asked for"
    frame = plane.snap(pts, geodataframe=True)
    assert isinstance(frame, gpd.GeoDataFrame) and frame.crs is None
    assert list(frame.columns) == ["vertex", "distance", "input_x", "input_y", "geometry"]
    assert frame["vertex"].tolist() == [1, 5]
    assert frame["input_x"].tolist() == [10.0, 160.0] and frame["input_y"].tolist() == [-5, 190]
    assert [(p.x, p.y) for p in frame.geometry] == [PLACES[0], PLACES[4]]
    np.testing.assert_allclose(frame["distance"], frame.geometry.distance(
        gpd.GeoSeries(gpd.points_from_xy(frame["input_x"], frame["input_y"]))))


def haversine(a, b):
    """Metres between two (lon, lat) arrays of points, on the sphere of radius 6,371,008.8 m."""
    lon1, lat1, lon2, lat2 = map(np.radians, (a[:, 0], a[:, 1], b[:, 0], b[:, 1]))
    h = (np.sin((lat2 - lat1) / 2) ** 2
         + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2)
    return 2 * 6_371_008.8 * np.arcsin(np.sqrt(h))


def test_helsinki_edges_follow_the_ways(monkeypatch):
    monkeypatch.setitem(sys.modules, "geopandas", None)
    g = tuccompi.read_graph(data("helsinki.osm.pbf"), osm={"turn_restrictions": False})
    e = g.edges()
    for a, b in zip((e["source"], e["target"], e["weight"]), csr_arcs(g)):
        np.testing.assert_array_equal(a, b)
    places = g.coordinates
    lengths = np.empty(len(e["weight"]))
    for k, (s, t, line) in enumerate(zip(e["source"], e["target"], e["geometry"])):
        xy = np.array(line["coordinates"])
        assert np.array_equal(xy[0], places[s]) and np.array_equal(xy[-1], places[t]), k
        lengths[k] = haversine(xy[:-1], xy[1:]).sum()
    # Weights are decimetres along the ways: the lines measure them (rounding aside), where
    # the straight segments between the ends would fall short on every bend.
    w = e["weight"]
    assert np.all(np.abs(lengths * 10 - w) <= 1 + 1e-3 * w), np.max(np.abs(lengths * 10 - w))
    straight = haversine(places[e["source"]], places[e["target"]]) * 10
    assert np.sum(w - straight > 10) > 0.05 * len(w), "ways with bends drawn straight"


def test_helsinki_turn_copies_show_as_their_junction(monkeypatch):
    monkeypatch.setitem(sys.modules, "geopandas", None)
    path = data("helsinki.osm.pbf")
    turns = tuccompi.read_graph(path)
    free = tuccompi.read_graph(path, osm={"turn_restrictions": False})
    roads = free.n
    assert turns.n > roads, "helsinki has turn restrictions: copies to show"
    # The copies are the vertices after the road vertices, each at its junction's node.
    ids = turns.osm_ids
    np.testing.assert_array_equal(ids[:roads], free.osm_ids)
    junction = {int(x): i for i, x in enumerate(ids[:roads])}
    assert all(int(x) in junction for x in ids[roads:])
    e = turns.edges()
    pairs = list(zip(e["source"].tolist(), e["target"].tolist()))
    assert max(max(p) for p in pairs) < roads, "a copy's id shown"
    assert len(set(pairs)) == len(pairs), "an arc shown twice"
    assert all(s != t for s, t in pairs), "a copy's link to its junction shown"
    # The graph's arcs, their copies named by their junction, at their lightest...
    t, h, w = csr_arcs(turns)
    as_junction = np.array([i if i < roads else junction[int(ids[i])] for i in range(turns.n)])
    want = lightest(zip(as_junction[t].tolist(), as_junction[h].tolist(), w.tolist()))
    got = dict(zip(pairs, e["weight"].tolist()))
    assert got == want
    # ...which are the road network's arcs: the graph without restrictions.
    t, h, w = csr_arcs(free)
    assert got == dict(zip(zip(t.tolist(), h.tolist()), w.tolist()))
    # Drawn as routes draw them: from the junction's place to the next one's.
    places = free.coordinates
    for s, tt, line in zip(e["source"][:2000], e["target"][:2000], e["geometry"][:2000]):
        c = line["coordinates"]
        assert c[0] == places[s].tolist() and c[-1] == places[tt].tolist()


def test_helsinki_geodataframes_are_wgs84():
    gpd = pytest.importorskip("geopandas")
    g = tuccompi.read_graph(data("helsinki.osm.pbf"))
    frame = g.edges()
    assert isinstance(frame, gpd.GeoDataFrame) and frame.crs.to_epsg() == 4326
    assert (frame.geom_type == "LineString").all() and len(frame) == len(g.edges(
        geodataframe=False)["source"])
    pts = g.coordinates[[10, 500]] + 1e-5
    snapped = g.snap(pts, geodataframe=True)
    assert snapped.crs.to_epsg() == 4326
    assert snapped["input_x"].tolist() == pts[:, 0].tolist()
    assert np.all(snapped["distance"] < 3) and np.all(snapped["distance"] > 0.5)
