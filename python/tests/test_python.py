"""What a Python user expects beyond the distances: a pandas edge list equal to the same list
read from .csv by the command line's runtime, exceptions that name the bad argument,
KeyboardInterrupt within a second, no files left behind."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tuccompi


def grid_edges(side, seed):
    """An undirected side x side grid with random weights 1..100, as directed arc arrays."""
    rng = np.random.default_rng(seed)
    v = np.arange(side * side).reshape(side, side)
    t = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    h = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    w = rng.integers(1, 101, len(t))
    return np.concatenate([t, h]), np.concatenate([h, t]), np.concatenate([w, w])


def test_pandas_edge_list_equals_the_csv_read_by_the_cli(tmp_path):
    pd = pytest.importorskip("pandas")
    t, h, w = grid_edges(40, 1)
    frame = pd.DataFrame({"from": t, "to": h, "length": w})
    g = tuccompi.Graph.from_pandas(frame, "from", "to", "length")
    sources = [0, 17, 1599]
    mine = g.distances(sources, integer=True)
    # The same list as a .csv, run from a config by the command line's runtime.
    frame.to_csv(tmp_path / "edges.csv", index=False)
    (tmp_path / "od.toml").write_text(textwrap.dedent(f"""
        [run]
        plugin = "apsp"
        sources = {sources}
        [input]
        path = "{tmp_path / 'edges.csv'}"
        columns = ["from", "to", "length"]
        [output]
        dir = "{tmp_path / 'out'}"
        distances = true
    """))
    report = tuccompi.run(tmp_path / "od.toml")
    assert report["plugin"] == "apsp" and report["tasks"] == 3
    cli = np.load(tmp_path / "out" / "distances.npy")
    assert cli.dtype == mine.dtype
    np.testing.assert_array_equal(mine, cli)
    # And against an independent reference.
    from conftest import reference, scipy_matrix
    ref = reference(scipy_matrix(1600, t, h, w), sources)
    np.testing.assert_array_equal(mine.astype(np.float64), ref)


def test_run_with_overrides_and_its_errors(tmp_path):
    (tmp_path / "gen.toml").write_text(textwrap.dedent(f"""
        [run]
        plugin = "apsp"
        [apsp]
        sources = 4
        [input.generate]
        model = "road"
        vertices = 500
        [output]
        dir = "{tmp_path / 'out'}"
    """))
    report = tuccompi.run(tmp_path / "gen.toml", set=["apsp.sources=6"])
    assert report["tasks"] == 6
    assert (tmp_path / "out" / "summary.csv").exists()
    with pytest.raises(ValueError, match="apsp.sources"):
        tuccompi.run(tmp_path / "gen.toml", set=["apsp.sources=-3"], restart=True)
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        tuccompi.run(tmp_path / "nope.toml")


def test_bad_arguments_name_themselves(tmp_path):
    g = tuccompi.Graph.from_edges([0, 1], [1, 2], [1, 1])
    with pytest.raises(ValueError, match=r"sources\[1\] = 3 is not a vertex"):
        g.od([0, 3], [1])
    with pytest.raises(ValueError, match=r"targets\[0\] = -1"):
        g.od([0], [-1])
    with pytest.raises(ValueError, match="cpu_workers"):
        g.od([0], [1], cpu_workers=-2)
    with pytest.raises(ValueError, match="gpu_algorithm"):
        g.od([0], [1], gpu_algorithm="fast")
    with pytest.raises(TypeError, match="workers"):
        g.od([0], [1], workers=2)
    with pytest.raises(ValueError, match=r"weights\[1\] = -4"):
        tuccompi.Graph.from_edges([0, 1], [1, 2], [1, -4])
    with pytest.raises(ValueError, match=r"weights\[0\] = 1.5: not an integer.*weight_scale"):
        tuccompi.Graph.from_edges([0], [1], [1.5])
    assert tuccompi.Graph.from_edges([0], [1], [1.5], weight_scale=2).od([0], [1])[0, 0] == 3
    with pytest.raises(ValueError, match=r"indices\[1\] = 9 is not a vertex"):
        tuccompi.Graph.from_csr([0, 1, 2], [1, 9], [1, 1])
    with pytest.raises(ValueError, match="indptr"):
        tuccompi.Graph.from_csr([0, 2, 1], [1, 0], [1, 1])
    with pytest.raises(FileNotFoundError, match="missing.gr"):
        tuccompi.read_graph(tmp_path / "missing.gr")
    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 2 1\na 1 x 3\n")
    with pytest.raises(ValueError, match="bad.gr:2"):
        tuccompi.read_graph(bad)
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match="weight = 'w'"):
        tuccompi.Graph.from_pandas(pd.DataFrame({"source": [0], "target": [1]}), weight="w")
    with pytest.raises(TypeError):
        tuccompi.Graph(None)


def test_logging_is_silent_by_default_and_forwards_on_request(caplog):
    g = tuccompi.Graph.from_edges(*grid_edges(10, 2))
    with caplog.at_level("DEBUG", logger="tuccompi"):
        g.distances([0])
    # Whatever the runtime logged reached `logging` under the `tuccompi` logger.
    assert all(r.name.startswith("tuccompi") for r in caplog.records)


CHILD = """
import os, sys, time
import numpy as np
import tuccompi
tuccompi.EXIT_GRACE = 1.0   # the run's chunk may outlast it
side = 400
v = np.arange(side * side).reshape(side, side)
t = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
h = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
w = np.random.default_rng(3).integers(1, 100, len(t))
g = tuccompi.Graph.from_edges(t, h, w, directed=False)
print("started", flush=True)
try:
    g.summary(cpu_algorithm="dijkstra", opencl="none")   # 160,000 trees: minutes
except KeyboardInterrupt:
    print("KeyboardInterrupt at", time.monotonic(), flush=True)
    raise
print("finished", flush=True)
"""


def test_ctrl_c_raises_keyboard_interrupt_within_a_second(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             cwd=os.path.dirname(__file__))
    try:
        assert child.stdout.readline().strip() == "started"
        # Into the run phase: the graph is built and the trees are being computed.
        time.sleep(2.0)
        assert child.poll() is None, child.communicate()
        sent = time.monotonic()  # CLOCK_MONOTONIC: the child's clock too
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    lines = [l for l in out.splitlines() if l.startswith("KeyboardInterrupt at")]
    assert lines, (out, err)
    raised = float(lines[0].split()[-1])
    assert raised - sent < 1.0, f"KeyboardInterrupt came {raised - sent:.2f} s after SIGINT"
    assert "KeyboardInterrupt" in err and child.returncode != 0
    # Nothing was written to $TMPDIR.
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())


def test_run_any_plugin_from_its_config(tmp_path):
    """A dense plugin's config (Floyd-Warshall on a generated complete graph), with overrides:
    its distance matrix equals scipy's."""
    out = tmp_path / "fw"
    report = tuccompi.run(os.path.join(os.path.dirname(__file__), "..", "..", "configs", "fw-naive.toml"),
                          set=["input.generate.vertices=64", "fw-naive.distances=true",
                               f'output.dir="{out}"', 'units.device_type="gpu"'])
    assert report["plugin"] == "fw-naive"
    d = np.load(out / "distances.npy")
    assert d.shape == (64, 64)
    # The same generated graph from apsp (a different plugin, a different algorithm).
    (tmp_path / "apsp.toml").write_text(textwrap.dedent(f"""
        [run]
        plugin = "apsp"
        sources = "all"
        [input.generate]
        model = "complete"
        vertices = 64
        seed = 1
        [output]
        dir = "{tmp_path / 'apsp'}"
        distances = true
    """))
    tuccompi.run(tmp_path / "apsp.toml")
    np.testing.assert_array_equal(d, np.load(tmp_path / "apsp" / "distances.npy"))
