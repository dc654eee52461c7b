"""Distances from Python against an independent reference (scipy.sparse.csgraph.dijkstra on
the file parsed by the test itself), on real road graphs and graphs from memory."""

import os

import numpy as np
import pytest

import tuccompi
from conftest import data, opencl_or_skip, read_dimacs, reference, scipy_matrix


@pytest.fixture(scope="module")
def rome():
    path = data("rome99.gr.gz")
    n, t, h, w = read_dimacs(path)
    return path, scipy_matrix(n, t, h, w), (n, t, h, w)


def test_import_and_version():
    assert tuccompi.__version__
    assert "apsp" in tuccompi.plugins()


def test_rome99_od_equals_scipy(rome):
    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    assert (g.n, g.id_base) == (3353, 1)
    rng = np.random.default_rng(7)
    sources = rng.choice(np.arange(1, g.n + 1), 60, replace=False)
    targets = rng.choice(np.arange(1, g.n + 1), 200, replace=False)
    d = g.od(sources, targets)
    assert d.dtype == np.float64 and d.shape == (60, 200)
    np.testing.assert_array_equal(d, reference(ref, sources - 1, targets - 1))
    assert g.last_report["plugin"] == "apsp" and g.last_report["tasks"] == 60


def test_every_algorithm_equals_scipy(rome):
    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    sources = np.arange(1, 3354, 97)
    want = reference(ref, sources - 1)
    for algorithm in ("dijkstra", "phast"):
        d = g.distances(sources, cpu_algorithm=algorithm, opencl="none", cpu_workers=2)
        np.testing.assert_array_equal(d, want, err_msg=algorithm)
        assert g.last_report["input"]["cpu_algorithm"] == algorithm


def test_graph_from_memory_equals_the_file(rome):
    path, ref, (n, t, h, w) = rome
    sources = np.array([0, 5, 77, 3352])
    want = reference(ref, sources)
    for g in (tuccompi.Graph.from_scipy(ref), tuccompi.Graph.from_edges(t, h, w, n=n),
              tuccompi.Graph.from_csr(ref.indptr, ref.indices, ref.data)):
        assert g.id_base == 0 and g.n == n
        np.testing.assert_array_equal(g.distances(sources), want)
    # The file's graph and the same graph from memory: one CSR.
    a, b = tuccompi.read_graph(path).csr(), tuccompi.Graph.from_scipy(ref).csr()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_unreachable_is_inf_nan_or_the_marker():
    # 0 -> 1 -> 2, and 3 alone.
    g = tuccompi.Graph.from_edges([0, 1], [1, 2], [5, 7], n=4)
    d = g.od([0, 3], [2, 3])
    np.testing.assert_array_equal(d, [[12, np.inf], [np.inf, 0]])
    raw = g.od([0, 3], [2, 3], integer=True)
    assert raw.dtype == np.uint32
    np.testing.assert_array_equal(raw, [[12, tuccompi.UNREACHABLE_U32], [tuccompi.UNREACHABLE_U32, 0]])
    assert np.isnan(g.od([0], [3], unreachable=np.nan)[0, 0])
    pd = pytest.importorskip("pandas")
    f = g.od([0, 3], [2, 3], as_frame=True)
    assert isinstance(f, pd.DataFrame)
    assert list(f.index) == [0, 3] and list(f.columns) == [2, 3]
    assert f.loc[0, 2] == 12 and np.isnan(f.loc[0, 3])


def test_summary_matches_the_rows(rome):
    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    sources = np.array([1, 2, 3000])
    s = g.summary(sources)
    d = reference(ref, sources - 1)
    finite = np.isfinite(d)
    np.testing.assert_array_equal(s["source"], sources)
    np.testing.assert_array_equal(s["reached"], finite.sum(axis=1))
    np.testing.assert_array_equal(s["sum"], np.where(finite, d, 0).sum(axis=1).astype(np.uint64))
    np.testing.assert_array_equal(s["max"], np.where(finite, d, 0).max(axis=1).astype(np.uint64))


def test_osm_extract_with_points():
    g = tuccompi.read_graph(data("helsinki.osm.pbf"))
    assert g.id_base == 0 and g.coordinates.shape == (g.n, 2) and len(g.osm_ids) == g.n
    # Points snap to their nearest vertex: a vertex's own place gives that vertex's row.
    xy = g.coordinates[[10, 20]]
    by_point = g.od(xy, [0, 1, 2, 3])
    by_id = g.od([10, 20], [0, 1, 2, 3])
    np.testing.assert_array_equal(by_point, by_id)
    ref = reference(g.to_scipy(), [10, 20], [0, 1, 2, 3])
    np.testing.assert_array_equal(by_id, ref)


def test_opencl_half_equals_scipy(rome):
    """The GPU half on an OpenCL device (PoCL in CI): no CPU worker."""
    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    sources = np.arange(1, 3354, 211)
    targets = np.arange(1, 3354, 7)
    try:
        d = g.od(sources, targets, cpu_workers=0, opencl="all", device_type="all")
    except (RuntimeError, ValueError) as e:
        if "OpenCL" not in str(e):
            raise
        opencl_or_skip({"units": []})
    opencl_or_skip(g.last_report)
    np.testing.assert_array_equal(d, reference(ref, sources - 1, targets - 1))


def test_moscow_od_equals_scipy():
    """osm-moscow: 1,000 x 1,000 under TUCCOMPI_SLOW=1 (scipy needs minutes on 2 cores),
    else 20 x 1,000; the hierarchy comes from the command line's cache."""
    path = data("osm-moscow.gr.gz")
    n, t, h, w = read_dimacs(path)
    ref = scipy_matrix(n, t, h, w)
    g = tuccompi.read_graph(path)
    rng = np.random.default_rng(38)
    k = 1000 if os.environ.get("TUCCOMPI_SLOW") else 20
    sources = rng.choice(np.arange(1, n + 1), k, replace=False)
    targets = rng.choice(np.arange(1, n + 1), 1000, replace=False)
    d = g.od(sources, targets)
    np.testing.assert_array_equal(d, reference(ref, sources - 1, targets - 1))


def test_paths_are_chains_of_arcs_of_scipys_length(rome):
    pytest.importorskip("pandas")
    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    rng = np.random.default_rng(11)
    sources = rng.choice(np.arange(1, g.n + 1), 12, replace=False)
    targets = rng.choice(np.arange(1, g.n + 1), 30, replace=False)
    p = g.paths(sources, targets)
    want = reference(ref, sources - 1, targets - 1)
    assert len(p) == 12 * 30
    assert list(p["source"]) == [int(s) for s in sources for _ in targets]
    assert list(p["target"]) == [int(t) for _ in sources for t in targets]
    for row, d in zip(p.itertuples(), want.ravel()):
        if np.isinf(d):
            assert np.isnan(row.distance) and len(row.path) == 0
            continue
        assert row.distance == d
        ids = row.path - 1
        assert ids[0] == row.source - 1 and ids[-1] == row.target - 1
        assert row.hops == len(ids) - 1
        # Each step an arc of the file; the weights sum to the distance.
        steps = [ref[u, v] for u, v in zip(ids[:-1], ids[1:])]
        assert all(w > 0 for w in steps), row
        assert sum(steps) == d


def test_reach_counts_equal_a_limited_scipy_dijkstra(rome):
    pytest.importorskip("pandas")
    from scipy.sparse.csgraph import dijkstra

    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    rng = np.random.default_rng(5)
    sources = rng.choice(np.arange(1, g.n + 1), 20, replace=False)
    targets = rng.choice(np.arange(1, g.n + 1), 300, replace=False)
    weights = rng.random(300)
    radii = [500, 1000, 2000]
    out = g.reach(sources, targets, radii=radii, weights=weights, nearest=3,
                  isochrones=[1500], isochrone_ids=True)
    d = dijkstra(ref, directed=True, indices=sources - 1)[:, targets - 1]
    reach = out["reach"]
    assert list(reach["source"]) == [int(s) for s in sources]
    for r in radii:
        within = d <= r
        np.testing.assert_array_equal(reach[f"count_{r}"], within.sum(axis=1))
        np.testing.assert_allclose(reach[f"sum_{r}"], (within * weights).sum(axis=1),
                                   rtol=1e-12)
    # Nearest: the three smallest distances, in order.
    near = out["nearest"]
    np.testing.assert_array_equal(
        near[["distance_1", "distance_2", "distance_3"]].to_numpy(),
        np.sort(d, axis=1)[:, :3])
    full = dijkstra(ref, directed=True, indices=sources - 1)
    np.testing.assert_array_equal(out["isochrones"]["within_1500"], (full <= 1500).sum(axis=1))
    ids = out["isochrone_ids"]
    for row, f in zip(ids.itertuples(), full):
        np.testing.assert_array_equal(row.vertices, np.flatnonzero(f <= 1500) + 1)
    with pytest.raises(ValueError, match="radii, nearest or isochrones"):
        g.reach(sources)


def test_two_threads_on_one_graph_get_exact_results(rome):
    """A graph keeps one session: two threads calling od on it at once share its units and
    its hierarchy, and each gets its own exact matrix."""
    import threading
    path, ref, _ = rome
    g = tuccompi.read_graph(path)
    g.od([1], [2])  # the session's hierarchy, once
    rng = np.random.default_rng(11)
    jobs = [(rng.choice(np.arange(1, g.n + 1), 40, replace=False),
             rng.choice(np.arange(1, g.n + 1), 90, replace=False)) for _ in range(2)]
    got = [None, None]

    def call(i):
        got[i] = g.od(*jobs[i], opencl="none", cpu_workers=1)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (s, t), d in zip(jobs, got):
        np.testing.assert_array_equal(d, reference(ref, s - 1, t - 1))
