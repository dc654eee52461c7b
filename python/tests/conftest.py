"""Shared helpers of the pytest suite: the real graphs in ../shared/data (beside the
repository), an independent reference (scipy's Dijkstra on the file parsed here), and the
OpenCL gate.

Like the Rust tests: a missing data file or OpenCL runtime skips a test, unless
TUCCOMPI_REQUIRE_DATA / TUCCOMPI_REQUIRE_OPENCL is set (CI), where it fails.
TUCCOMPI_SLOW=1 runs the long comparisons in full (osm-moscow 1,000 x 1,000)."""

import gzip
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def data(name):
    """The path of a data file, or skip (fail under TUCCOMPI_REQUIRE_DATA)."""
    p = DATA / name
    if not p.exists():
        if os.environ.get("TUCCOMPI_REQUIRE_DATA"):
            pytest.fail(f"TUCCOMPI_REQUIRE_DATA is set but {p} is missing")
        pytest.skip(f"NOT RUN: {p} is missing")
    return p


def read_dimacs(path):
    """A DIMACS .gr(.gz) file parsed here, independently of tuccompi: (n, tails, heads,
    weights), ids 0-based."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    n = 0
    rows = []
    for line in text.splitlines():
        if line.startswith("p "):
            n = int(line.split()[2])
        elif line.startswith("a "):
            rows.append(line[2:])
    a = np.array(" ".join(rows).split(), dtype=np.int64).reshape(-1, 3)
    return n, a[:, 0] - 1, a[:, 1] - 1, a[:, 2]


def scipy_matrix(n, tails, heads, weights):
    """The arcs as a scipy CSR matrix: self-loops dropped, parallel arcs at their minimum
    (the files' stated convention), weights as float64."""
    import scipy.sparse as sp

    keep = tails != heads
    t, h, w = tails[keep], heads[keep], weights[keep]
    order = np.lexsort((w, h, t))
    t, h, w = t[order], h[order], w[order]
    first = np.ones(len(t), dtype=bool)
    first[1:] = (t[1:] != t[:-1]) | (h[1:] != h[:-1])
    t, h, w = t[first], h[first], w[first]
    return sp.csr_matrix((w.astype(np.float64), (t, h)), shape=(n, n))


def reference(matrix, sources, targets=None):
    """scipy's Dijkstra from `sources` (0-based), the columns `targets` (all when None)."""
    from scipy.sparse.csgraph import dijkstra

    d = dijkstra(matrix, directed=True, indices=np.asarray(sources))
    return d if targets is None else d[:, np.asarray(targets)]


def opencl_or_skip(report):
    """Skip (fail under TUCCOMPI_REQUIRE_OPENCL) when a run meant for an OpenCL device ran on
    none: `report` is its report."""
    units = [u.get("name", "") for u in report.get("units", [])]
    if not any(str(u).startswith("gpu") for u in units):
        if os.environ.get("TUCCOMPI_REQUIRE_OPENCL"):
            pytest.fail(f"TUCCOMPI_REQUIRE_OPENCL is set but no OpenCL unit ran: {units}")
        pytest.skip("NOT RUN: no OpenCL device")
