"""Point-to-point routes on the graph's resident hierarchy (Graph.route, Graph.snap, od's pair
mode) against an independent reference: scipy's Dijkstra on the file parsed by the test."""

import numpy as np
import pytest

import tuccompi
from conftest import data, read_dimacs, reference, scipy_matrix


@pytest.fixture(scope="module")
def rome():
    path = data("rome99.gr.gz")
    n, t, h, w = read_dimacs(path)
    return path, scipy_matrix(n, t, h, w)


def check_path(ref, arcs, path, source, target, distance):
    """``path`` (0-based ids) is a chain of arcs of ``ref`` (whose arcs are the set ``arcs``)
    from source to target whose weights sum to ``distance``."""
    assert path[0] == source and path[-1] == target
    steps = list(zip(path[:-1].tolist(), path[1:].tolist()))
    assert all(a in arcs for a in steps)
    assert sum(ref[u, v] for u, v in steps) == distance


def test_routes_equal_scipy_and_their_paths_are_chains_of_arcs(rome, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path, ref = rome
    g = tuccompi.read_graph(path)
    rng = np.random.default_rng(3)
    o = rng.integers(1, g.n + 1, 300)
    d = rng.integers(1, g.n + 1, 300)
    d[:3] = o[:3]  # a trip to itself: 0
    want = np.array([reference(ref, [a - 1], [b - 1])[0, 0] for a, b in zip(o, d)])
    got = g.route(o, d)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    assert g.last_report["hierarchy"] in ("built", "cache")
    dist, paths = g.route(o, d, paths=True)
    np.testing.assert_array_equal(dist, want)
    coo = ref.tocoo()
    arcs = set(zip(coo.row.tolist(), coo.col.tolist()))
    for a, b, dd, p in zip(o, d, dist, paths):
        assert p.dtype == np.int64
        check_path(ref, arcs, p - 1, a - 1, b - 1, dd)
    # The second call finds the hierarchy in the graph's session: nothing read or built.
    g.route(o[:1], d[:1])
    assert g.last_report["hierarchy"] == "session"
    np.testing.assert_array_equal(g.route(o, d, integer=True).astype(np.float64), want)


def test_route_refuses_unequal_lists_and_bad_ids(rome):
    path, _ = rome
    g = tuccompi.read_graph(path)
    with pytest.raises(ValueError, match="one destination per origin"):
        g.route([1, 2], [3])
    with pytest.raises(ValueError, match="not a vertex"):
        g.route([0], [3])  # .gr ids are 1-based


def test_unreachable_routes_are_inf_and_their_paths_empty():
    g = tuccompi.Graph.from_edges([0, 1], [1, 2], [5, 7], n=4)
    dist, paths = g.route([0, 0, 3, 2], [2, 3, 3, 0], paths=True)
    np.testing.assert_array_equal(dist, [12, np.inf, 0, np.inf])
    assert [p.tolist() for p in paths] == [[0, 1, 2], [], [3], []]
    assert g.route([0], [3], unreachable=-1)[0] == -1
    assert g.route([0], [3], integer=True)[0] == tuccompi.UNREACHABLE_U64


def test_small_od_is_answered_by_pairs_and_equals_the_run(rome):
    path, ref = rome
    g = tuccompi.read_graph(path)
    s, t = [5, 9, 5, 3000], [1, 77, 3353]
    pairs = g.od(s, t)
    assert g.last_report["mode"] == "pairs"
    run = g.od(s, t, cpu_workers=1)
    assert "mode" not in g.last_report
    assert g.last_report.get("tasks") == 3  # three distinct sources, one task each
    np.testing.assert_array_equal(pairs, run)
    np.testing.assert_array_equal(pairs, reference(ref, np.array(s) - 1, np.array(t) - 1))
    frame = g.od(s, t, as_frame=True)
    assert list(frame.index) == s and list(frame.columns) == t


def test_snap_and_route_from_points():
    pbf = data("helsinki.osm.pbf")
    g = tuccompi.read_graph(pbf)
    xy = g.coordinates
    rng = np.random.default_rng(5)
    pick = rng.choice(np.flatnonzero(np.isfinite(xy).all(axis=1)), 50, replace=False)
    pts = xy[pick] + 1e-6
    snapped = g.snap(pts)
    assert snapped["vertex"].dtype == np.int64 and snapped["distance"].shape == (50,)
    assert (snapped["distance"] < 1.0).all()  # 1e-6 degrees is well under a metre
    back = g.coordinates[snapped["vertex"] - g.id_base]
    assert np.abs(back - pts).max() < 1e-5
    # On a graph whose points snap to junctions, points route as their snapped vertices do
    # (on the default graph they start on the road itself: test_snap_edges.py).
    gv = tuccompi.read_graph(pbf, osm={"snap": "vertex"})
    a, b = pts[:25], pts[25:]
    np.testing.assert_array_equal(gv.route(a, b), gv.route(snapped["vertex"][:25],
                                                           snapped["vertex"][25:]))


def test_progress_reaches_the_callback_and_the_log(rome, caplog):
    path, ref = rome
    g = tuccompi.read_graph(path)
    seen = []
    sources = np.arange(1, 3354, 3)
    d = g.distances(sources, progress=lambda done, total: seen.append((done, total)),
                    cpu_workers=2, opencl="none")
    np.testing.assert_array_equal(d, reference(ref, sources - 1))
    assert seen and seen[-1] == (len(sources), len(sources))
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    with pytest.raises(ValueError, match="progress"):
        g.summary(progress="yes")
    import logging
    try:
        import tqdm  # noqa: F401
        pytest.skip("tqdm is installed: progress=True draws a bar instead of log lines")
    except ImportError:
        pass
    with caplog.at_level(logging.INFO, logger="tuccompi"):
        g.summary(sources, progress=True)
    assert any(f"progress: {len(sources)}/{len(sources)} tasks" in r.getMessage()
               for r in caplog.records)
