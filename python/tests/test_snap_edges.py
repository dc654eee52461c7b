"""Points on the roads at query time (OSRM's phantom nodes on a graph already built): Python's
od, route and paths from points equal the command line's runs, which split the edges at the
points before building anything, entry for entry; a second point set reuses the resident
hierarchy; snap() says where each point went; snap = "vertex" graphs keep junctions."""

import csv

import numpy as np
import pytest

import tuccompi
from conftest import data


@pytest.fixture(scope="module")
def helsinki():
    return data("helsinki.osm.pbf")


def points(g, k, seed):
    """k points uniform in the bounding box of the graph's vertices."""
    xy = g.coordinates[np.isfinite(g.coordinates).all(axis=1)]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    return lo + (hi - lo) * np.random.default_rng(seed).random((k, 2))


def inline(pts):
    return "[" + ", ".join(f"[{x!r}, {y!r}]" for x, y in pts.tolist()) + "]"


def command_line(pbf, tmp_path, sources, targets, osm):
    """The command line's run (tuccompi.run, as `tuccompi run`): distances.npy as uint64
    (UNREACHABLE_U64 where unreachable), snapped.csv's rows, and the report."""
    out = tmp_path / "out"
    table = "\n".join(f"{k} = {v!r}".replace("'", '"').replace("True", "true")
                      .replace("False", "false") for k, v in osm.items())
    cfg = tmp_path / "od.toml"
    cfg.write_text(
        f'[run]\nplugin = "apsp"\n'
        f'[input]\npath = "{pbf}"\n[input.osm]\n{table}\n'
        f'[apsp]\nsources = {inline(sources)}\ntargets = {inline(targets)}\ndistances = true\n'
        f'[units]\nopencl = "none"\n'
        f'[output]\ndir = "{out}"\n')
    report = tuccompi.run(cfg)
    d = np.load(out / "distances.npy")
    assert d.dtype == np.uint32
    wide = d.astype(np.uint64)
    wide[d == np.iinfo(np.uint32).max] = tuccompi.UNREACHABLE_U64
    with open(out / "snapped.csv") as f:
        rows = list(csv.DictReader(f))
    return wide, rows, report


def test_od_from_points_equals_the_command_line(helsinki, tmp_path):
    g = tuccompi.read_graph(helsinki, osm={"profile": "car"})
    pts = points(g, 300, 1)
    got = g.od(pts, pts, integer=True)
    assert g.last_report["mode"] == "phantoms" and g.last_report["snap"] == "edge"
    want, rows, report = command_line(helsinki, tmp_path, pts, pts, {"profile": "car",
                                                                     "snap": "edge"})
    assert got.dtype == np.uint64 and got.shape == (300, 300)
    mismatch = np.argwhere(got != want)
    assert not mismatch.size, f"{len(mismatch)} entries differ, first {mismatch[0]}: " \
        f"{got[tuple(mismatch[0])]} here, {want[tuple(mismatch[0])]} by the command line"
    assert (want != tuccompi.UNREACHABLE_U64).mean() > 0.5
    # Most points land inside an edge (phantoms), so the matrix is not the junctions' one.
    s = g.snap(pts)
    inside = (s["offset"] > 0) & (s["fraction"] < 1)
    assert inside.mean() > 0.5
    junctions = g.od(s["vertex"], s["vertex"], integer=True)
    assert (junctions != got).mean() > 0.3
    # snap()'s road distance is the command line's, point by point (snapped.csv).
    np.testing.assert_allclose(s["road_distance"][:len(pts)],
                               [float(r["distance"]) for r in rows[:len(pts)]], atol=0.006)
    # The float matrix, with inf where unreachable.
    f = g.od(pts, pts)
    np.testing.assert_array_equal(np.isinf(f), got == tuccompi.UNREACHABLE_U64)

    # A second set of points builds no hierarchy: the session's is reused.
    other = points(g, 1000, 2)
    g.od(other, other[:50])
    assert g.last_report["hierarchy"] == "session"


def test_route_and_paths_from_points(helsinki):
    g = tuccompi.read_graph(helsinki)
    pts = points(g, 60, 3)
    o, d = pts[:30], pts[30:]
    m = g.od(o, d)
    r, walks = g.route(o, d, paths=True)
    np.testing.assert_array_equal(r, np.diag(m))
    assert g.last_report["hierarchy"] == "session"
    roads = tuccompi.read_graph(helsinki, osm={"turn_restrictions": False}).n
    for w in walks:
        assert w.dtype == np.int64 and ((w >= 0) & (w < roads)).all(), "road vertices only"
    # A trip to itself is 0: no vertex inside an edge, the vertex itself at an edge's end.
    same = g.route(o, o, paths=True)
    np.testing.assert_array_equal(same[0], 0)
    assert all(len(w) <= 1 for w in same[1]) and sum(len(w) == 0 for w in same[1]) > 10
    frame = g.paths(o[:5], d[:4])
    assert len(frame) == 20 and list(frame["source"]) == [i for i in range(5) for _ in range(4)]
    np.testing.assert_array_equal(frame["distance"].to_numpy().reshape(5, 4), m[:5, :4])
    # Ids and points mixed: a vertex is a trip end as it is, as a point at its place.
    ids = g.snap(o[:3])["vertex"]
    np.testing.assert_array_equal(g.od(ids, d[:4]), g.od(g.coordinates[ids - g.id_base], d[:4]))
    with pytest.raises(ValueError, match="cpu_workers"):
        g.od(o, d, cpu_workers=1)


def test_snap_columns(helsinki):
    g = tuccompi.read_graph(helsinki)
    pts = points(g, 40, 4)
    s = g.snap(pts)
    e = g.edges(geodataframe=False)
    arcs = set(zip(e["source"].tolist(), e["target"].tolist()))
    for t, h in zip(s["tail"], s["head"]):
        assert (t, h) in arcs or (h, t) in arcs, "an edge of the network"
    assert ((s["fraction"] >= 0) & (s["fraction"] <= 1)).all()
    assert (s["road_distance"] <= s["distance"] + 1e-3).all(), "a road is no farther than " \
        "its nearest junction"
    assert (s["offset"][s["fraction"] == 0] == 0).all()
    # The foot lies between the edge's ends (a box test; the edges are short).
    lo = np.minimum(g.coordinates[s["tail"]], g.coordinates[s["head"]])
    hi = np.maximum(g.coordinates[s["tail"]], g.coordinates[s["head"]])
    foot = np.stack([s["road_x"], s["road_y"]], axis=1)
    assert ((foot >= lo - 0.01) & (foot <= hi + 0.01)).all()
    pytest.importorskip("geopandas")
    frame = g.snap(pts, geodataframe=True)
    assert list(frame["tail"]) == s["tail"].tolist() and "road_x" in frame.columns


def test_vertex_snapping_graphs_stay_at_junctions(helsinki, tmp_path):
    g = tuccompi.read_graph(helsinki, osm={"snap": "vertex"})
    pts = points(g, 30, 5)
    s = g.snap(pts)
    assert list(s) == ["vertex", "distance", "x", "y"], "no road columns"
    got = g.od(pts, pts)
    want, _, _ = command_line(helsinki, tmp_path, pts, pts, {"snap": "vertex"})
    np.testing.assert_array_equal(got, np.where(want == tuccompi.UNREACHABLE_U64, np.inf,
                                                want.astype(np.float64)))
