"""The worked example (python/examples/road_analyst.py) end to end on the Helsinki extract, in
a child process writing into a temporary directory, its files checked against scipy's
Dijkstra on the graph read here: the OD matrix (exact, and bounded below by the road network
of Graph.edges(), which ignores turn restrictions), the accessibility counts, the isochrones'
counts and the routes' lines. With geopandas installed it runs twice, with and without, and
both write the same."""

import csv
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tuccompi
from conftest import ROOT, data

EXAMPLE = ROOT / "python" / "examples" / "road_analyst.py"


def run_example(graph, out, env, hide_geopandas=False):
    """The example as a newcomer runs it (``python road_analyst.py GRAPH --out OUT``), with
    geopandas hidden if asked; its standard output."""
    argv = [str(graph), "--out", str(out)]
    if hide_geopandas:
        cmd = [sys.executable, "-c",
               "import runpy, sys; sys.modules['geopandas'] = None; "
               f"sys.argv = [{str(EXAMPLE)!r}] + {argv!r}; "
               f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')"]
    else:
        cmd = [sys.executable, str(EXAMPLE)] + argv
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=out.parent,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def flat(coordinates):
    """Every number of a GeoJSON geometry's (nested) coordinates, in order."""
    if isinstance(coordinates, (int, float)):
        return [float(coordinates)]
    return [x for c in coordinates for x in flat(c)]


def features(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["type"] == "FeatureCollection"
    return doc["features"]


@pytest.fixture(scope="module")
def helsinki():
    return data("helsinki.osm.pbf")


@pytest.fixture
def env(tmp_path):
    # The hierarchy cache of the child's runs goes to a temporary folder too.
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PYTHONDONTWRITEBYTECODE": "1"}


def test_road_analyst_example_against_scipy(helsinki, tmp_path, env):
    from scipy.sparse.csgraph import dijkstra

    out = tmp_path / "out"
    stdout = run_example(helsinki, out, env)
    assert str(out) in stdout
    assert {p.name for p in out.iterdir()} >= {
        "snapped.csv", "od.csv", "routes.geojson", "reach.csv", "isochrones.geojson",
        "edges.geojson"}

    g = tuccompi.read_graph(helsinki)
    snapped = rows(out / "snapped.csv")
    vertex = np.array([int(r["vertex"]) for r in snapped])
    want = g.snap(np.array([[float(r["lon"]), float(r["lat"])] for r in snapped]))
    np.testing.assert_array_equal(vertex, want["vertex"])
    places = g.coordinates
    np.testing.assert_array_equal(
        [[float(r["vertex_lon"]), float(r["vertex_lat"])] for r in snapped], places[vertex])

    # The reference: scipy on the graph's arcs. A trip from a junction with turn restrictions
    # starts at its departure copy, which holds every arc out of the junction: the least of
    # the rows of the junction and its copies (vertices beyond the road vertices with its
    # OpenStreetMap node).
    roads = tuccompi.read_graph(helsinki, osm={"turn_restrictions": False}).n
    ids = g.osm_ids
    starts = [[v] + [c for c in range(roads, g.n) if ids[c] == ids[v]] for v in vertex]
    tree = dijkstra(g.to_scipy(), indices=sorted({c for s in starts for c in s}))
    index = {c: i for i, c in enumerate(sorted({c for s in starts for c in s}))}
    exact = np.array([tree[[index[c] for c in s]].min(axis=0) for s in starts])

    od = rows(out / "od.csv")
    k = len(vertex)
    got = np.array([float(r["distance_dm"]) if r["distance_dm"] else np.inf
                    for r in od]).reshape(k, k)
    np.testing.assert_array_equal(got, exact[:, vertex])
    assert np.isfinite(got).all(), "the example's places reach each other"
    assert [float(r["distance_m"]) for r in od] == (got.ravel() / 10).tolist()
    # Over the road network as Graph.edges() draws it (turns unrestricted): never longer.
    e = g.edges(geodataframe=False)
    import scipy.sparse as sp
    net = sp.csr_matrix((e["weight"].astype(float), (e["source"], e["target"])),
                        shape=(roads, roads))
    assert (dijkstra(net, indices=vertex)[:, vertex] <= got).all()

    for r, row in zip(rows(out / "reach.csv"), exact):
        for radius in (5000, 10000):
            assert int(r[f"vertices_within_{radius}"]) == int((row <= radius).sum())

    iso = features(out / "isochrones.geojson")
    assert [(f["properties"]["source"], f["properties"]["limit"]) for f in iso] == [
        (vertex[0], 5000), (vertex[0], 10000), (vertex[4], 5000), (vertex[4], 10000)]
    for f in iso:
        i = list(vertex).index(f["properties"]["source"])
        assert f["properties"]["vertices"] == int((exact[i] <= f["properties"]["limit"]).sum())
        assert f["geometry"]["type"] in ("Polygon", "MultiPolygon")

    routes = features(out / "routes.geojson")
    trips = [(0, 2), (0, 3), (1, 5), (4, 0)]
    for f, (a, b) in zip(routes, trips):
        p = f["properties"]
        assert (p["origin"], p["destination"]) == (vertex[a], vertex[b])
        assert p["distance"] == got[a, b]
        line = np.array(f["geometry"]["coordinates"])
        assert np.allclose(line[0], places[vertex[a]]) and np.allclose(line[-1],
                                                                        places[vertex[b]])

    edges = features(out / "edges.geojson")
    assert len(edges) == len(e["source"])
    assert [f["properties"]["weight"] for f in edges] == e["weight"].tolist()


def test_road_analyst_example_without_geopandas_writes_the_same(helsinki, tmp_path, env):
    pytest.importorskip("geopandas")
    with_gpd, without = tmp_path / "with", tmp_path / "without"
    run_example(helsinki, with_gpd, env)
    run_example(helsinki, without, env, hide_geopandas=True)
    assert "snapped.geojson" not in {p.name for p in without.iterdir()}
    for name in ("snapped.csv", "od.csv", "reach.csv"):
        assert (with_gpd / name).read_text() == (without / name).read_text(), name
    for name in ("routes.geojson", "isochrones.geojson", "edges.geojson"):
        a, b = features(with_gpd / name), features(without / name)
        assert len(a) == len(b), name
        for fa, fb in zip(a, b):
            assert fa["properties"] == fb["properties"], name
            assert fa["geometry"]["type"] == fb["geometry"]["type"], name
            np.testing.assert_allclose(flat(fa["geometry"]["coordinates"]),
                                       flat(fb["geometry"]["coordinates"]), rtol=1e-12)


def test_road_analyst_example_refuses_an_output_in_the_repository(helsinki, env, tmp_path):
    r = subprocess.run([sys.executable, str(EXAMPLE), str(helsinki), "--out",
                        str(ROOT / "python" / "examples" / "out")],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 2 and "inside the repository" in r.stderr
    assert not (ROOT / "python" / "examples" / "out").exists()
    r = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "none.osm.pbf")],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 2 and "no such file" in r.stderr


def test_example_is_linked_from_the_guide():
    assert "examples/road_analyst.py" in (ROOT / "docs" / "python.md").read_text()
    assert pathlib.Path(EXAMPLE).exists()


# The second example, python/examples/accessibility_map.py: POIs from a CSV, counts within 2, 5
# and 10 minutes by car (weights in deciseconds) from every junction, the nearest POI's time,
# and isochrones, against scipy's Dijkstra on the time-weighted graph read here.

ACCESS = ROOT / "python" / "examples" / "accessibility_map.py"
TIME = {"profile": "car", "weight": "time"}


def accessibility_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("accessibility_map", ACCESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def time_reference(helsinki):
    """(graph, junctions, exact): scipy from every junction over the time-weighted graph. A
    trip from a junction with turn restrictions starts at its departure copy (a vertex beyond
    the road vertices with the junction's OpenStreetMap node), so a junction's row is the least
    of its own and its copies' rows; exact has shape (junctions, g.n)."""
    from scipy.sparse.csgraph import dijkstra
    g = tuccompi.read_graph(helsinki, osm=TIME)
    roads = tuccompi.read_graph(helsinki, osm={**TIME, "turn_restrictions": False}).n
    ids = g.osm_ids
    junction = {int(x): v for v, x in enumerate(ids[:roads])}
    assert len(junction) == roads, "one road vertex per OpenStreetMap node"
    d = dijkstra(g.to_scipy())
    exact = d[:roads].copy()
    for c in range(roads, g.n):
        j = junction[int(ids[c])]
        exact[j] = np.minimum(exact[j], d[c])
    return g, roads, exact


@pytest.fixture(scope="module")
def accessibility_run(helsinki, tmp_path_factory):
    out = tmp_path_factory.mktemp("accessibility") / "out"
    return accessibility_module().main(helsinki, out)


def check_accessibility(acc, pois_vertex, names, roads, exact):
    """accessibility.csv's rows (dicts of strings) against scipy: every junction, its counts
    within 2, 5 and 10 minutes of the POIs' junctions and its nearest POI's time."""
    assert [int(r["vertex"]) for r in acc] == list(range(roads))
    to_pois = exact[:, pois_vertex]
    for radius in (1200, 3000, 6000):
        got = np.array([int(r[f"pois_within_{radius}"]) for r in acc])
        np.testing.assert_array_equal(got, (to_pois <= radius).sum(axis=1), err_msg=radius)
    nearest = np.array([float(r["nearest_ds"]) if r["nearest_ds"] else np.inf for r in acc])
    np.testing.assert_array_equal(nearest, to_pois.min(axis=1))
    for v, r in enumerate(acc):
        if r["nearest_poi"]:
            assert exact[v, pois_vertex[names.index(r["nearest_poi"])]] == nearest[v]
            assert float(r["nearest_min"]) == round(nearest[v] / 600, 2)
        else:
            assert np.isinf(nearest[v])


def test_accessibility_map_example_against_scipy(helsinki, time_reference, accessibility_run):
    g, roads, exact = time_reference
    res = accessibility_run
    out = res["out"]

    # 1. pois.csv, written and read back: the named places first, all inside the extract.
    pois = rows(out / "pois.csv")
    assert len(pois) == 40 and [r["name"] for r in pois[:2]] == ["Central station",
                                                                 "Market Square"]
    points = np.array([[float(r["lon"]), float(r["lat"])] for r in pois])
    lo, hi = g.coordinates.min(axis=0), g.coordinates.max(axis=0)
    assert ((points >= lo) & (points <= hi)).all()
    np.testing.assert_array_equal(points, res["pois"][["lon", "lat"]].to_numpy())
    # reach and isochrones start and count targets at a point's nearest junction.
    vertex = g.snap(points)["vertex"]
    np.testing.assert_array_equal(vertex, res["pois"]["vertex"])
    assert (vertex < roads).all()

    # 2. The counts and nearest times, as written and as returned.
    acc = rows(out / "accessibility.csv")
    check_accessibility(acc, vertex, [r["name"] for r in pois], roads, exact)
    assert len(set(res["accessibility"]["pois_within_1200"])) > 5, "a map worth drawing"
    np.testing.assert_array_equal(res["accessibility"]["pois_within_6000"],
                                  (exact[:, vertex] <= 6000).sum(axis=1))

    # 3. The isochrones: the first three POIs, 2 and 10 minutes, vertices within each.
    iso = features(out / "isochrones.geojson")
    assert [(f["properties"]["source"], f["properties"]["limit"]) for f in iso] == [
        (v, limit) for v in vertex[:3] for limit in (1200, 6000)]
    for f in iso:
        p = f["properties"]
        i = list(vertex[:3]).index(p["source"])
        assert p["vertices"] == int((exact[vertex[i]] <= p["limit"]).sum())
        assert f["geometry"]["type"] in ("Polygon", "MultiPolygon")

    # 4. The map, where geopandas and matplotlib are installed.
    try:
        import geopandas  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError:
        assert res["png"] is None and not (out / "accessibility.png").exists()
    else:
        assert (out / "accessibility.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_accessibility_map_isochrones_cover_the_junctions_within(time_reference,
                                                                  accessibility_run):
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import Point
    g, roads, exact = time_reference
    iso = accessibility_run["isochrones"]
    assert isinstance(iso, gpd.GeoDataFrame) and iso.crs == "EPSG:4326"
    places = g.coordinates
    for _, f in iso.iterrows():
        d = exact[f["source"]]
        within = np.flatnonzero(d <= f["limit"])
        assert len(within) == f["vertices"]
        outside = [v for v in within if not f.geometry.covers(Point(places[v]))]
        assert not outside, (f["source"], f["limit"], outside[:5])
        if f["limit"] == 1200:  # 2 minutes: far from the whole extract
            assert not all(f.geometry.covers(Point(p)) for p in places[:roads])


def test_accessibility_map_reads_a_given_csv_without_geopandas(helsinki, time_reference,
                                                                tmp_path, env):
    """The command line with --pois (columns in another order, an extra one), geopandas and
    matplotlib hidden: no plot, the same counts."""
    g, roads, exact = time_reference
    places = [("kind", "lat", "name", "lon"), ("cafe", 60.1700, "Ateneum", 24.9440),
              ("shop", 60.1686, "Stockmann", 24.9410), ("park", 60.1745, "Kaisaniemi", 24.9465),
              ("pier", 60.1675, "Market Square", 24.9527)]
    given = tmp_path / "places.csv"
    given.write_text("\n".join(",".join(map(str, r)) for r in places) + "\n")
    out = tmp_path / "out"
    argv = [str(helsinki), "--out", str(out), "--pois", str(given)]
    r = subprocess.run(
        [sys.executable, "-c",
         "import runpy, sys; sys.modules['geopandas'] = sys.modules['matplotlib'] = None; "
         f"sys.argv = [{str(ACCESS)!r}] + {argv!r}; "
         f"runpy.run_path({str(ACCESS)!r}, run_name='__main__')"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "4 POIs" in r.stdout and "no accessibility.png" in r.stdout
    assert {p.name for p in out.iterdir()} == {"accessibility.csv", "isochrones.geojson"}
    points = np.array([[lon, lat] for _, lat, _, lon in places[1:]])
    vertex = g.snap(points)["vertex"]
    check_accessibility(rows(out / "accessibility.csv"), vertex,
                        [name for _, _, name, _ in places[1:]], roads, exact)
    iso = features(out / "isochrones.geojson")
    assert [f["properties"]["vertices"] for f in iso] == [
        int((exact[v] <= limit).sum()) for v in vertex[:3] for limit in (1200, 6000)]


def test_accessibility_map_is_in_the_guide():
    guide = (ROOT / "docs" / "python.md").read_text()
    assert "examples/accessibility_map.py" in guide
    assert ACCESS.exists()
