"""What a call's arguments and results say about themselves: radii in the graph's integer weight
units (never truncated), ids that must be integers, an empty graph, the nearest POIs' ids as
integers, the documented names, and a result too large as a MemoryError."""

import inspect
import math
import pathlib
import re

import numpy as np
import pytest

import tuccompi

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def ring():
    """0 -> 1 -> 2 -> 3 -> 0, every arc of weight 1."""
    return tuccompi.Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0], [1, 1, 1, 1])


# ---- 3: radii are whole numbers of the graph's weight units --------------------------------

def test_a_fractional_radius_is_refused_not_truncated():
    pytest.importorskip("pandas")
    g = ring()
    units = (r"not a whole number; radii are in the graph's integer weight units "
             r"\(decimetres or deciseconds for OpenStreetMap graphs\)")
    with pytest.raises(ValueError, match=rf"^radii\[0\] = 1\.5: {units}"):
        g.reach([0], [2], radii=[1.5])
    with pytest.raises(ValueError, match=r"^radii\[1\] = 0\.25: not a whole number"):
        g.reach([0], [2], radii=np.array([2.0, 0.25]))
    with pytest.raises(ValueError, match=r"^isochrones\[0\] = 2\.5: not a whole number; "
                                         r"isochrones are in the graph's integer weight units"):
        g.reach([0], isochrones=[2.5])
    # An integral float is that integer: vertex 2 is at distance 2 from 0.
    r = g.reach([0], [2], radii=[2.0])["reach"]
    assert list(r.columns) == ["source", "count_2", "sum_2"]
    assert r["count_2"].tolist() == [1]


# ---- 4: vertex ids must be integers, whatever the call ---------------------------------------

def test_a_fractional_vertex_id_says_ids_are_integers_not_weight_scale():
    cases = [
        (lambda: tuccompi.Graph.from_edges([0.5], [1], [1]), r"sources\[0\] = 0\.5"),
        (lambda: tuccompi.Graph.from_edges([0, 1], [1, 2.5], [1, 1]), r"targets\[1\] = 2\.5"),
        (lambda: tuccompi.Graph.from_csr([0, 1, 1], [0.5], [1]), r"indices\[0\] = 0\.5"),
        (lambda: ring().od([0.5], [1]), r"sources\[0\] = 0\.5"),
        (lambda: ring().od([0], [1, 1.5]), r"targets\[1\] = 1\.5"),
    ]
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"source": [0.5], "target": [1], "weight": [1]})
    cases.append((lambda: tuccompi.Graph.from_pandas(frame), r"column 'source'\[0\] = 0\.5"))
    for call, named in cases:
        with pytest.raises(ValueError) as e:
            call()
        assert e.match(rf"^{named}: not an integer; vertex ids must be integers"), str(e.value)
        assert "weight_scale" not in str(e.value)
    # Weights keep their advice.
    with pytest.raises(ValueError, match=r"^weights\[0\] = 1\.5: not an integer; give "
                                         r"weight_scale="):
        tuccompi.Graph.from_edges([0], [1], [1.5])


# ---- 5: a graph without vertices -------------------------------------------------------------

def test_an_empty_graph_says_it_has_no_vertices():
    g = tuccompi.Graph.from_edges([], [], [], n=0)
    assert g.n == 0
    with pytest.raises(ValueError) as e:
        g.od([0], [0])
    msg = str(e.value)
    assert msg.startswith("sources[0] = 0 is not a vertex of edges: the graph has no vertices")
    assert "0..-1" not in msg


# ---- 6: the names the docstrings give exist --------------------------------------------------

def test_docstrings_and_docs_name_only_what_exists():
    texts = {name: inspect.getdoc(obj) or ""
             for name, obj in inspect.getmembers(tuccompi.Graph) if not name.startswith("__")}
    texts.update({name: inspect.getdoc(getattr(tuccompi, name)) or ""
                  for name in ("read_graph", "run", "plugins")})
    texts["the module"] = tuccompi.__doc__
    texts["docs/python.md"] = DOCS.read_text()
    for where, text in texts.items():
        assert "run_options" not in text, where
        for ref in re.findall(r":(?:func|data|meth|attr):`([\w.]+)`", text):
            name = ref.split(".")[-1]
            assert hasattr(tuccompi, name) or hasattr(tuccompi.Graph, name), (where, ref)
    assert "RUN_OPTIONS" in inspect.getdoc(tuccompi.Graph.od)


# ---- 8: the nearest POIs' ids are integers ---------------------------------------------------

def test_nearest_ids_are_int64_with_minus_one_for_none():
    pytest.importorskip("pandas")
    g = ring()
    near = g.reach([0, 1], [2, 3], nearest=3)["nearest"]
    for col in ("target_1", "target_2", "target_3", "index_1", "index_2", "index_3"):
        assert near[col].dtype == np.int64, (col, near.dtypes)
    # From 0: vertex 2 at 2, vertex 3 at 3; from 1: 2 at 1, 3 at 2; a third POI there is not.
    assert near["target_1"].tolist() == [2, 2] and near["target_2"].tolist() == [3, 3]
    assert near["index_1"].tolist() == [0, 0] and near["index_2"].tolist() == [1, 1]
    assert near["target_3"].tolist() == [-1, -1] and near["index_3"].tolist() == [-1, -1]
    assert near["distance_1"].tolist() == [2, 1] and near["distance_3"].isna().all()
    # Every vertex as a target: no index column, the ids still int64.
    every = g.reach([0], nearest=2)["nearest"]
    assert every["target_1"].dtype == np.int64 and every["target_1"].tolist() == [0]


# ---- 9: the docs give the units of OpenStreetMap results -------------------------------------

def test_the_docs_say_osm_results_are_decimetres_or_deciseconds():
    text = DOCS.read_text()
    graphs = text[text.index("## Graphs"):text.index("## Distances")]
    assert "decimetres" in graphs and "deciseconds" in graphs
    assert '"distance"' in graphs and '"time"' in graphs


# ---- 10: a result too large is a MemoryError about its size ----------------------------------

def test_a_result_beyond_memory_is_a_memory_error_before_the_run(monkeypatch):
    g = tuccompi.Graph.from_edges(np.arange(999), np.arange(1, 1000), np.ones(999), n=1000)
    # 1000 x 1000 distances in 1 MiB: refused before anything runs.
    monkeypatch.setattr(tuccompi, "_available_memory", lambda: 2**20)
    for call in (lambda: g.distances(), lambda: g.od(np.arange(1000), np.arange(1000))):
        with pytest.raises(MemoryError) as e:
            call()
        msg = str(e.value)
        assert "1000 x 1000 distances" in msg and "in memory" in msg and "GiB" in msg, msg
        assert "output.dir" not in msg, msg
    # What fits runs.
    assert g.od([0], [999])[0, 0] == 999
    monkeypatch.undo()
    assert tuccompi._available_memory() is None or tuccompi._available_memory() > 0


def test_a_result_beyond_the_available_memory_is_a_memory_error_from_the_run(monkeypatch):
    # With the package's own check left out, the in-memory run checks its outputs against the
    # memory available before any tree is grown: a graph whose every-vertex rows (4 bytes a
    # distance) need about 4 times that.
    avail = tuccompi._available_memory()
    if avail is None:
        pytest.skip("NOT RUN: the available memory cannot be read here")
    n = 2 * math.isqrt(avail // 4) + 1000
    if n > 50_000_000:
        pytest.skip(f"NOT RUN: {avail} bytes available need too large a graph")
    monkeypatch.setattr(tuccompi, "_available_memory", lambda: None)
    g = tuccompi.Graph.from_edges([0], [1], [1], n=n)
    with pytest.raises(MemoryError) as e:
        g.distances()
    msg = str(e.value)
    assert "needs about " in msg and re.search(r"\d GiB", msg), msg
    assert "but this machine has" in msg and "available" in msg, msg
    assert "output.dir" not in msg and "tuccompi-" not in msg, msg
