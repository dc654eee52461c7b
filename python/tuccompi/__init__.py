"""tuccompi: exact shortest-path distances on road graphs, over every CPU core and OpenCL GPU.

    import tuccompi
    g = tuccompi.read_graph("rome99.gr.gz")          # or Graph.from_csr / from_scipy / from_pandas
    d = g.od(sources=[1, 2, 3], targets=[10, 20])     # numpy float64, inf where unreachable

The work runs in the same runtime as the ``tuccompi`` command (PHAST over a contraction
hierarchy or Dijkstra on CPU workers, OpenCL devices through the GPU halves), with the
command line's defaults and its hierarchy cache, so a graph given from memory and the same
graph read by the command line share one hierarchy.

Vertex ids are numbered as the command line numbers them: from 1 for ``.gr``/``.mtx`` files,
from 0 for graphs from memory, edge lists (``.csv``, ``.wel``...) and OpenStreetMap extracts
(``Graph.id_base`` says which).

Runs release the GIL; Ctrl-C raises KeyboardInterrupt within a second; SIGTERM during a call
stops its run before the process ends by that signal. Errors
are Python exceptions (ValueError, FileNotFoundError, MemoryError, RuntimeError) carrying the
command line's messages, naming the Python argument at fault. Log records go to the
``tuccompi`` logger of :mod:`logging` (a NullHandler keeps it silent until the application
configures logging). No file is written unless asked
(:func:`run` writes where its config says), besides the caches the command line keeps too: a
call's results come back in memory, with no scratch folder.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import math
import os
import re
import signal
import sys
import threading
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native

__all__ = ["Graph", "read_graph", "run", "plugins", "UNREACHABLE_U32", "UNREACHABLE_U64"]

logging.getLogger("tuccompi").addHandler(logging.NullHandler())

__version__ = "0.1.0"

#: Seconds the interpreter waits at exit for runs a KeyboardInterrupt stopped to wind down
#: (their running chunks finish; a cache being written is finished), as the command line's
#: grace period after a signal.
EXIT_GRACE = 10.0
atexit.register(lambda: _native.wait_runs(EXIT_GRACE, True))

#: The most vertices a graph may have (vertex ids are 32-bit; the largest is no vertex).
_MAX_VERTICES = 2**32 - 2
#: The heaviest arc weight (weights are 32-bit), as for the command line.
_MAX_WEIGHT = 2**32 - 1
#: ``od`` (without run options or ``integer``) answers at most this many pairs by one
#: point-to-point query each (:meth:`Graph.route`); more by a run of the apsp plugin's sweeps.
#: A query on a city's road graph costs tens of microseconds; a run's start, tens of
#: milliseconds.
_PAIRS_AT_MOST = 1024

#: The marker of an unreachable target in a uint32 distance matrix (``integer=True``).
UNREACHABLE_U32 = int(np.iinfo(np.uint32).max)
#: The marker of an unreachable target in a uint64 distance matrix (``integer=True``).
UNREACHABLE_U64 = int(np.iinfo(np.uint64).max)

_CPU_ALGORITHMS = ("auto", "dijkstra", "phast", "pairs")
_GPU_ALGORITHMS = ("auto", "phast", "worklist", "crauser", "martin", "two-phase")
_DEVICE_TYPES = ("gpu", "cpu", "accelerator", "all")
_POLICIES = ("work-queue", "equitable")


def _int64(values: Any, name: str, what: str = "weights") -> np.ndarray:
    """``values`` as a 1-D int64 array; a ValueError naming ``name``, the index and the value
    if that is not exact. ``what``: ``"weights"`` (a fraction gets weight_scale= advice),
    ``"ids"`` (vertex ids) or ``"offsets"`` (CSR row offsets)."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise ValueError(f"{name}: a 1-D array is expected, got shape {a.shape}")
    if a.dtype.kind in "iu":
        if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
            i = int(np.argmax(a > np.iinfo(np.int64).max))
            raise ValueError(f"{name}[{i}] = {a[i]}: beyond the int64 range")
        return np.ascontiguousarray(a, dtype="<i8")
    if a.dtype.kind == "b":
        raise ValueError(f"{name}: booleans are not ids or weights")
    if a.dtype.kind == "f":
        _finite(a, name)
        r = np.rint(a)
        if a.size and not np.array_equal(r, a):
            i = int(np.flatnonzero(r != a)[0])
            if what == "ids":
                raise ValueError(f"{name}[{i}] = {a[i]}: not an integer; vertex ids must be "
                                 f"integers")
            if what == "offsets":
                raise ValueError(f"{name}[{i}] = {a[i]}: not an integer; CSR row offsets must "
                                 f"be integers")
            raise ValueError(
                f"{name}[{i}] = {a[i]}: not an integer; give weight_scale= to scale and round "
                f"the weights (as input.weight_scale does), e.g. weight_scale=1000"
            )
        # float64 holds 2**63 exactly: anything at or above it (or below -2**63) would wrap.
        big = np.flatnonzero((r >= 2.0**63) | (r < -2.0**63))
        if big.size:
            i = int(big[0])
            raise ValueError(f"{name}[{i}] = {a[i]}: beyond the int64 range")
        return np.ascontiguousarray(r, dtype="<i8")
    if a.size == 0:
        return np.zeros(0, dtype="<i8")
    raise ValueError(f"{name}: numbers are expected, got dtype {a.dtype}")


def _whole_numbers(values: Any, name: str) -> "list[int]":
    """``values`` (``radii``, ``isochrones``) as Python ints: a ValueError naming the value when
    one is not a whole number (an integral float, 2.0, is taken as 2); they are distances in
    the graph's integer weight units, never truncated."""
    out = []
    for i, x in enumerate(np.asarray(values, dtype=object).reshape(-1)):
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            out.append(int(x))
        elif (isinstance(x, (float, np.floating)) and math.isfinite(x)
              and float(x).is_integer()):
            out.append(int(x))
        else:
            shown = x if isinstance(x, (float, np.floating)) else repr(x)
            raise ValueError(
                f"{name}[{i}] = {shown}: not a whole number; {name} are in the graph's integer "
                f"weight units (decimetres or deciseconds for OpenStreetMap graphs)")
    return out


def _finite(a: np.ndarray, name: str) -> None:
    """A ValueError naming the first entry of the float array ``a`` that is NaN or infinite."""
    if a.size and not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"{name}[{i}] = {a[i]}: not a finite number")


def _weights(values: Any, name: str, weight_scale: Optional[float]) -> np.ndarray:
    """Arc weights as int64, each checked against 0..2**32 - 1 (scaled and rounded first when
    ``weight_scale`` is given): a ValueError names the index, the value as given and the
    limit."""
    if weight_scale is None:
        given = np.asarray(values)
        if given.ndim == 1 and given.dtype.kind in "iuf":
            if given.dtype.kind == "f":
                _finite(given, name)
            # Checked before the conversion, which would wrap what int64 cannot hold.
            _weight_range(given, given, name, lambda i: "")
        return _int64(given, name)
    if (isinstance(weight_scale, bool) or not isinstance(weight_scale, (int, float, np.number))
            or not (weight_scale > 0) or math.isinf(weight_scale)):
        raise ValueError(f"weight_scale = {weight_scale!r}: a positive finite number is expected")
    given = np.asarray(values, dtype=np.float64)
    if given.ndim != 1:
        raise ValueError(f"{name}: a 1-D array is expected, got shape {given.shape}")
    _finite(given, name)
    scaled = np.rint(given * weight_scale)
    _weight_range(scaled, given, name,
                  lambda i: f" (x weight_scale {weight_scale} = {scaled[i]:.17g})")
    return np.ascontiguousarray(scaled, dtype="<i8")


def _weight_range(w: np.ndarray, given: np.ndarray, name: str, note: Any) -> None:
    neg = np.flatnonzero(w < 0)
    if neg.size:
        i = int(neg[0])
        raise ValueError(f"{name}[{i}] = {given[i]}{note(i)}: negative arc weight; shortest paths "
                         f"by Dijkstra and its GPU variants need weights >= 0")
    big = np.flatnonzero(w > _MAX_WEIGHT)
    if big.size:
        i = int(big[0])
        raise ValueError(f"{name}[{i}] = {given[i]}{note(i)}: above the heaviest arc weight, "
                         f"{_MAX_WEIGHT} (2^32 - 1); rescale the weights (weight_scale=)")


def _check_n(n: Any, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{name} = {n!r}: a number of vertices (an integer >= 0) is expected")
    if n > _MAX_VERTICES:
        raise ValueError(f"{name} = {n}: more than the {_MAX_VERTICES} vertices a graph may have "
                         f"(vertex ids are 32-bit)")
    return int(n)


# ---- messages: the Python arguments, not the config keys they become --------------------

#: The config key each Python argument sets, as the runtime's messages name them.
_ARGUMENTS = {
    "apsp.sources": "sources",
    "apsp.targets": "targets",
    "units.cpu_workers": "cpu_workers",
    "units.opencl": "opencl",
    "units.device_type": "device_type",
    "units.concurrent_kernels": "concurrent_kernels",
    "scheduler.policy": "policy",
    "apsp.cpu_algorithm": "cpu_algorithm",
    "apsp.gpu_algorithm": "gpu_algorithm",
    "apsp.hierarchy": "hierarchy",
    "apsp.reach.radii": "radii",
    "apsp.reach.decay": "decay",
    "apsp.reach.weights": "weights",
    "apsp.reach.nearest": "nearest",
    "apsp.reach.isochrones": "isochrones",
    "apsp.reach.isochrone_ids": "isochrone_ids",
    "input.path": "path",
    "input.columns": "columns",
    "input.weight_scale": "weight_scale",
    "input.coordinates": "coordinates",
    "input.osm": "osm",
}
_TABLES = r"(?:run|units|scheduler|apsp|input)"
#: A dotted key (``apsp.reach.radii``) or a table and a key (``[apsp.reach] weights``).
_KEY = re.compile(rf"\[({_TABLES}(?:\.\w+)*)\](?: (\w+))?|\b({_TABLES}(?:\.\w+)+)")


def _argument_names(message: str) -> str:
    """``message`` with each config key that a Python argument sets named as that argument
    (``apsp.reach.radii`` -> ``radii``, ``input.osm.profile`` -> ``osm["profile"]``)."""
    def name(m: "re.Match[str]") -> str:
        if m.group(3):
            key = m.group(3)
            if key.startswith("input.osm."):
                return f'osm["{key[len("input.osm."):]}"]'
            return _ARGUMENTS.get(key, key)
        table, word = m.group(1), m.group(2)
        if word and f"{table}.{word}" in _ARGUMENTS:
            return _ARGUMENTS[f"{table}.{word}"]
        if table in _ARGUMENTS:
            return _ARGUMENTS[table] + (f" {word}" if word else "")
        return m.group(0)
    return _KEY.sub(name, message)


class _named_as_arguments:
    """Within it, a native error's message names the Python arguments, not the config keys
    they were turned into (the native half already left out the config text's lines)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, e: Any, tb: Any) -> bool:
        if (isinstance(e, Exception) and len(e.args) == 1 and isinstance(e.args[0], str)):
            e.args = (_argument_names(e.args[0]),)
        return False


# ---- signals: a call stopped by SIGTERM leaves nothing behind ----------------------------

#: Signals that end the process by default. While a call runs on the main thread, each whose
#: handler is the default one raises _Stopped instead: the call's run is told to stop, and
#: the process then ends by that same signal. A handler the
#: application installed is left alone (KeyboardInterrupt is Python's own).
_ENDING = tuple(getattr(signal, s) for s in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, s))
#: Seconds a call stopped by such a signal waits for its run to end before the process ends
#: under it: its results are lost either way, and a container's stop grants about 10 s
#: before SIGKILL. tuccompi.run waits EXIT_GRACE, as the command line, for its journal.
_SIGNAL_GRACE = 1.0


class _Stopped(BaseException):
    """A terminating signal came during a call (not catchable as Exception)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise _Stopped(signum)


def _ends_on_signal(call: Any = None, *, journaled: bool = False) -> Any:
    """Run ``call`` with the default-handled terminating signals raising _Stopped (see
    ``_ENDING``), then end the process by the signal once the runs are stopped; ``journaled``:
    the call's run keeps a journal, so its running chunks get ``EXIT_GRACE`` to finish."""
    if call is None:
        return functools.partial(_ends_on_signal, journaled=journaled)

    @functools.wraps(call)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return call(*args, **kwargs)
        installed = []
        for sig in _ENDING:
            try:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    signal.signal(sig, _raise_stopped)
                    installed.append(sig)
            except (OSError, ValueError):  # pragma: no cover: not settable here
                pass
        try:
            return call(*args, **kwargs)
        except _Stopped as stopped:
            _end_by(stopped.signum, installed, EXIT_GRACE if journaled else _SIGNAL_GRACE)
            raise  # pragma: no cover: _end_by does not return
        finally:
            for sig in installed:
                if signal.getsignal(sig) is _raise_stopped:
                    signal.signal(sig, signal.SIG_DFL)
    return guarded


def _end_by(signum: int, installed: Sequence[int], grace: float) -> None:
    """End the process by ``signum`` once every run has stopped (at most ``grace`` seconds,
    then under the runs still working; a second signal meanwhile ends the process at once)."""
    for sig in installed:
        signal.signal(sig, signal.SIG_DFL)
    try:
        _native.wait_runs(grace, True)
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:  # pragma: no cover: a closed stream
                pass
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # pragma: no cover: the signal ended the process


class Graph:
    """A directed graph with non-negative integer arc weights, held in memory.

    Make one with :meth:`from_csr`, :meth:`from_scipy`, :meth:`from_edges`,
    :meth:`from_pandas` or :func:`read_graph`. Parallel arcs collapse to their lightest,
    self-loops are dropped. Weights are integers (up to 2**32 - 1); float weights must be
    integral, or be scaled and rounded with ``weight_scale=``.
    """

    __slots__ = ("_g", "last_report", "_tables")

    def __init__(self, native: Any) -> None:
        if not isinstance(native, _native.Graph):
            raise TypeError(
                "Graph(...) is not made directly: use Graph.from_csr, Graph.from_scipy, "
                "Graph.from_edges, Graph.from_pandas or tuccompi.read_graph"
            )
        self._g = native
        #: The report of the last run on this graph (as ``report.json``), or None.
        self.last_report: Optional[Dict[str, Any]] = None
        self._tables: Dict[str, Any] = {}

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_csr(cls, indptr: Any, indices: Any, weights: Any, *,
                 weight_scale: Optional[float] = None, name: str = "csr") -> "Graph":
        """From compressed sparse rows: the arcs out of ``u`` go to ``indices[indptr[u]:indptr[u+1]]``
        with weights ``weights[...]`` (scipy's ``csr_matrix.indptr``, ``.indices``, ``.data``).
        Vertex ids are 0-based."""
        p = _int64(indptr, "indptr", "offsets")
        i = _int64(indices, "indices", "ids")
        w = _weights(weights, "weights", weight_scale)
        return cls(_native.graph_from_csr(p.tobytes(), i.tobytes(), w.tobytes(), str(name)))

    @classmethod
    def from_scipy(cls, matrix: Any, *, weight_scale: Optional[float] = None,
                   name: str = "scipy.sparse") -> "Graph":
        """From a square scipy.sparse matrix (or array): entry ``(u, v)`` is the arc ``u -> v``.
        Stored entries are arcs, explicit zeros included, as for scipy.sparse.csgraph."""
        try:
            import scipy.sparse as sp
        except ImportError as e:  # pragma: no cover
            raise ImportError("Graph.from_scipy needs scipy") from e
        if not sp.issparse(matrix):
            raise ValueError(f"matrix: a scipy.sparse matrix is expected, got {type(matrix).__name__}")
        if matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"matrix: a square matrix is expected, got shape {matrix.shape}")
        m = sp.csr_matrix(matrix)
        return cls.from_csr(m.indptr, m.indices, m.data, weight_scale=weight_scale, name=name)

    @classmethod
    def from_edges(cls, sources: Any, targets: Any, weights: Any, *, n: Optional[int] = None,
                   directed: bool = True, weight_scale: Optional[float] = None,
                   name: str = "edges") -> "Graph":
        """From arc arrays: ``sources[i] -> targets[i]`` of weight ``weights[i]``, ids 0-based.
        ``n``: the number of vertices (default: the largest id + 1). ``directed=False`` adds
        each edge in both directions."""
        t = _int64(sources, "sources", "ids")
        h = _int64(targets, "targets", "ids")
        w = _weights(weights, "weights", weight_scale)
        return cls._of_arcs(t, h, w, n, directed, ("sources", "targets", "weights"), name)

    @classmethod
    def from_pandas(cls, frame: Any, source: str = "source", target: str = "target",
                    weight: str = "weight", *, n: Optional[int] = None, directed: bool = True,
                    weight_scale: Optional[float] = None, name: str = "DataFrame") -> "Graph":
        """From a pandas DataFrame edge list: columns ``source``, ``target`` and ``weight``
        (other names through the arguments), ids 0-based as in a ``.csv`` edge list."""
        columns = list(getattr(frame, "columns", []))
        for arg, col in (("source", source), ("target", target), ("weight", weight)):
            if col not in columns:
                raise ValueError(
                    f"{arg} = {col!r}: no such column in the DataFrame (its columns: "
                    f"{', '.join(map(str, columns)) or 'none'})"
                )
        names = (f"column {source!r}", f"column {target!r}", f"column {weight!r}")
        t = _int64(frame[source].to_numpy(), names[0], "ids")
        h = _int64(frame[target].to_numpy(), names[1], "ids")
        w = _weights(frame[weight].to_numpy(), names[2], weight_scale)
        return cls._of_arcs(t, h, w, n, directed, names, name)

    @classmethod
    def _of_arcs(cls, t: np.ndarray, h: np.ndarray, w: np.ndarray, n: Optional[int],
                 directed: bool, names: Sequence[str], name: str) -> "Graph":
        if n is None:
            n = int(max(t.max(initial=-1), h.max(initial=-1))) + 1
        n = _check_n(n)
        if not directed and len(t) == len(h) == len(w):
            t, h, w = np.concatenate([t, h]), np.concatenate([h, t]), np.concatenate([w, w])
        return cls(_native.graph_from_arcs(n, t.tobytes(), h.tobytes(), w.tobytes(),
                                           tuple(names), str(name)))

    # ---- what it is ---------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Vertices."""
        return self._g.n

    @property
    def m(self) -> int:
        """Arcs (parallel arcs collapsed, self-loops dropped)."""
        return self._g.m

    @property
    def id_base(self) -> int:
        """The first vertex id: 1 for ``.gr``/``.mtx`` files, else 0."""
        return self._g.id_base

    @property
    def name(self) -> str:
        """The input's name."""
        return self._g.name

    def __repr__(self) -> str:
        return f"tuccompi.Graph({self.name!r}, n={self.n}, m={self.m}, id_base={self.id_base})"

    def __len__(self) -> int:
        return self.n

    def csr(self) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
        """The graph as CSR arrays ``(indptr, indices, weights)``, uint32, internal 0-based ids
        (the input's id = internal id + ``id_base``)."""
        o, t, w = self._g.csr_bytes()
        return (np.frombuffer(o, dtype="<u4"), np.frombuffer(t, dtype="<u4"),
                np.frombuffer(w, dtype="<u4"))

    def to_scipy(self) -> Any:
        """The graph as a scipy.sparse.csr_matrix of shape (n, n), internal 0-based ids."""
        import scipy.sparse as sp
        o, t, w = self.csr()
        return sp.csr_matrix((w.astype(np.float64), t.astype(np.int64), o.astype(np.int64)),
                             shape=(self.n, self.n))

    @property
    def coordinates(self) -> Optional[np.ndarray]:
        """The vertices' places, shape (n, 2): longitude and latitude for OpenStreetMap input,
        a ``.co`` file's units otherwise (NaN for a vertex without one); None without places."""
        p = self._g.places()
        return None if p is None else np.frombuffer(p[0], dtype="<f8").reshape(-1, 2)

    @property
    def osm_ids(self) -> Optional[np.ndarray]:
        """The OpenStreetMap node id of each vertex (OSM input: a turn-restriction copy has its
        junction's, a phantom vertex -1), else None."""
        p = self._g.places()
        return None if p is None or p[2] is None else np.frombuffer(p[2], dtype="<i8")

    # ---- runs ---------------------------------------------------------------------------

    def _ids(self, ids: Any, name: str,
             unique: bool) -> "tuple[str, np.ndarray, Optional[np.ndarray]]":
        """A source or target list as the run takes it: ``("ids", ids, inverse)`` in the graph's
        numbering, or ``("points", xy, None)`` for an (k, 2) float array of points to snap.
        With ``unique``, repeated ids are run once: ``ids`` are then the distinct ones and
        ``inverse`` gives, for each entry as given, its index among them (``None``: no
        repeats, ``ids`` as given)."""
        a = np.asarray(ids)
        if a.ndim == 2 and a.shape[1] == 2 and a.dtype.kind == "f":
            if self._g.places() is None:
                raise ValueError(
                    f"{name}: points need vertex coordinates (an OpenStreetMap extract, or a .gr "
                    f"file read with coordinates=\"x.co\"); give vertex ids instead"
                )
            return "points", np.ascontiguousarray(a, dtype="<f8"), None
        if a.ndim == 0:
            a = a.reshape(1)
        if a.ndim != 1:
            raise ValueError(f"{name}: a 1-D array of vertex ids (or an (k, 2) array of points) is "
                             f"expected, got shape {a.shape}")
        if a.size == 0:
            raise ValueError(f"{name}: empty; give at least one vertex id")
        if a.dtype.kind not in "iuf":
            raise ValueError(f"{name}: vertex ids are integers, got dtype {a.dtype}")
        if a.dtype.kind == "f" and not np.array_equal(a, np.rint(a)):
            i = int(np.flatnonzero(a != np.rint(a))[0])
            raise ValueError(f"{name}[{i}] = {a[i]}: not an integer; vertex ids must be integers")
        # Checked on the values as given, before any conversion could wrap them.
        lo, hi = self.id_base, self.id_base + self.n - 1
        bad = np.flatnonzero((a < lo) | (a > hi))
        if bad.size:
            i = int(bad[0])
            if self.n == 0:
                raise ValueError(f"{name}[{i}] = {a[i]} is not a vertex of {self.name}: the graph "
                                 f"has no vertices")
            raise ValueError(f"{name}[{i}] = {a[i]} is not a vertex of {self.name} (ids {lo}..{hi})")
        a = np.ascontiguousarray(a, dtype="<i8")
        if not unique:
            return "ids", a, None
        distinct, inverse = np.unique(a, return_inverse=True)
        if len(distinct) == len(a):
            return "ids", a, None
        return "ids", distinct, inverse.reshape(-1)

    @staticmethod
    def _put(config: Dict[str, Any], lists: list, key: str, name: str, kind: str,
             values: np.ndarray) -> None:
        """Hand ``values`` to the run as the list ``key`` (dotted): its bytes as they are, no
        text and no file between them and the run."""
        del config
        lists.append((key, name, kind, np.ascontiguousarray(values).tobytes()))

    def _run(self, sources: Any, targets: Any, rows: bool, options: Mapping[str, Any],
             apsp: Optional[Mapping[str, Any]] = None, unique_targets: bool = True,
             lists: Sequence[Any] = ()) -> Any:
        """Run apsp: ``(matrix, summary text, sources, targets)``, the last two each
        ``(inverse, count)``: the inverse as :meth:`_ids` gives it and the count of entries run
        (the distinct ids; None for every vertex)."""
        options = dict(options)
        progress = _progress(options.pop("progress", None))
        config = _config(options)
        lists = list(lists)
        inv_s = inv_t = ks = kt = None
        if sources is not None:
            kind, values, inv_s = self._ids(sources, "sources", True)
            self._put(config, lists, "apsp.sources", "sources", kind, values)
            ks = len(values)
        if targets is not None:
            kind, values, inv_t = self._ids(targets, "targets", unique_targets)
            self._put(config, lists, "apsp.targets", "targets", kind, values)
            kt = len(values)
        if apsp:
            config.setdefault("apsp", {}).update(apsp)
        try:
            with _named_as_arguments():
                report, matrix, summary, tables, texts, paths = _native.run_apsp(
                    self._g, json.dumps(config), lists, rows, progress)
        finally:
            if progress is not None and hasattr(progress, "close"):
                progress.close()
        self.last_report = json.loads(report)
        # The call's own tables (another thread's call on this graph cannot replace them):
        # the typed ones as dicts of columns, the ragged ones as text.
        own: Dict[str, Any] = dict(texts)
        for name, cols in tables:
            own[name] = _columns(cols)
        if paths is not None:
            # paths_format = "npy": (offsets bytes, vertices bytes, vertices dtype).
            own["path arrays"] = paths
        self._tables = own
        return matrix, _columns(summary), (inv_s, ks), (inv_t, kt), own

    def _run_ids(self, ids: Any, name: str) -> np.ndarray:
        """The distinct ids a run takes for ``ids`` (points: the vertices they snap to), in the
        graph's numbering, in the order of its matrix's rows or columns."""
        kind, values, _ = self._ids(ids, name, True)
        if kind == "points":
            return np.asarray(self.snap(values)["vertex"], dtype=np.int64)
        return values.astype(np.int64)

    def _check_result(self, sources: Any, targets: Any) -> None:
        """A MemoryError, before the run, when the distance matrix asked for cannot fit in the
        memory this machine has available (:data:`_RESULT_BYTES` a distance)."""
        def entries(ids: Any) -> int:
            return self.n if ids is None else 1 if np.ndim(ids) == 0 else len(ids)
        rows, cols = entries(sources), entries(targets)
        need = rows * cols * _RESULT_BYTES
        avail = _available_memory()
        if avail is not None and need > avail:
            raise MemoryError(
                f"the result, {rows} x {cols} distances, needs about {_gib(need)} in memory "
                f"({_RESULT_BYTES} bytes a distance: the float64 matrix and the run's rows read "
                f"back), but this machine has {_gib(avail)} available; ask for fewer sources or "
                f"targets (summary() and reach() keep no matrix)")

    @_ends_on_signal
    def paths(self, sources: Any, targets: Any, **options: Any) -> Any:
        """The shortest path of every (source, target) pair, as a pandas DataFrame in row
        order (sources major): ``source``, ``target``, ``distance`` (float, NaN when
        unreachable), ``hops`` and ``path``, a numpy int64 array of the vertex ids from the
        source to the target in the graph's numbering (empty when unreachable). What
        ``[apsp] paths = true`` writes to ``paths.csv``; every path's arcs sum to its
        distance. Repeated ids are allowed (each distinct pair is run once). Run options: see
        :data:`RUN_OPTIONS`. Needs pandas. Points ((k, 2) arrays) on an OpenStreetMap graph read
        with ``snap = "edge"`` (the default) are put on the nearest road as :meth:`route`
        puts them, one query per pair and no run options: ``source``/``target`` are then
        the entries' positions in the lists, and ``path`` the road vertices between them."""
        import pandas as pd
        if targets is None:
            raise ValueError("targets: None; give the target ids")
        if self._trip_ends(sources, "sources") or self._trip_ends(targets, "targets"):
            return self._paths_phantoms(sources, targets, options)
        # The compact form (path_offsets.npy, path_vertices.npy) and the distance matrix: no
        # text is written or parsed.
        m, _, (inv_s, ks), (inv_t, kt), tables = self._run(
            sources, targets, True, options, {"paths": True, "paths_format": "npy"})
        offsets_b, vertices_b, vdtype = tables["path arrays"]
        offsets = np.frombuffer(offsets_b, dtype="<u8").astype(np.int64)
        vertices = np.frombuffer(vertices_b, dtype=vdtype).astype(np.int64)
        buf, mdtype, shape = m
        d = np.frombuffer(buf, dtype=mdtype).reshape(shape)
        rows, cols = shape
        src_ids, tgt_ids = self._run_ids(sources, "sources"), self._run_ids(targets, "targets")
        if (len(src_ids), len(tgt_ids)) != (rows, cols):
            raise RuntimeError(f"paths: a {rows} x {cols} matrix for {len(src_ids)} sources and "
                               f"{len(tgt_ids)} targets (a bug in tuccompi; please report it)")
        lengths = np.diff(offsets)
        hops = pd.array(np.where(lengths > 0, lengths - 1, 0), dtype="Int64")
        hops[lengths == 0] = pd.NA
        unreachable = np.iinfo(d.dtype).max
        distance = np.where(d == unreachable, np.nan, d.astype(np.float64)).ravel()
        frame = pd.DataFrame({
            "source": np.repeat(src_ids, cols),
            "target": np.tile(tgt_ids, rows),
            "distance": distance,
            "hops": hops,
            "path": np.split(vertices, offsets[1:-1]),
        })
        if inv_s is not None or inv_t is not None:
            # The run's pairs are its distinct sources x its distinct targets, row-major.
            rs = np.arange(ks) if inv_s is None else inv_s
            rt = np.arange(kt) if inv_t is None else inv_t
            frame = frame.iloc[(rs[:, None] * kt + rt[None, :]).ravel()].reset_index(drop=True)
        return frame

    def _paths_phantoms(self, sources: Any, targets: Any, options: Mapping[str, Any]) -> Any:
        """:meth:`paths` with points on the roads (:meth:`_trip_ends`): one query per pair on
        the resident hierarchy. ``source`` and ``target`` are then the entries' positions in
        the lists given (a point is no vertex); ``path`` holds the road vertices between the
        points' feet."""
        import pandas as pd
        if options:
            raise ValueError(f"{', '.join(sorted(options))}: run options do not apply to points "
                             f"snapped onto roads (their paths are answered on the graph's "
                             f"resident hierarchy); leave them out")
        s_ends, t_ends = self._ends_of(sources, "sources"), self._ends_of(targets, "targets")
        ks, kt = self._count(s_ends), self._count(t_ends)
        width = 16 if s_ends[0] == "points" else 8
        o = (s_ends[0], b"".join(s_ends[1][i * width:(i + 1) * width] for i in range(ks)
                                 for _ in range(kt)))
        d = (t_ends[0], t_ends[1] * ks)
        with _named_as_arguments():
            dist, walks, source = _native.route_at(self._g, o, d, True)
        raw = np.frombuffer(dist, dtype="<u8")
        self.last_report = {"plugin": "apsp", "mode": "pairs", "pairs": len(raw),
                            "hierarchy": source, "snap": "edge"}
        offsets = np.frombuffer(walks[0], dtype="<u8").astype(np.int64)
        vertices = np.frombuffer(walks[1], dtype="<u4").astype(np.int64) + self.id_base
        lengths = np.diff(offsets)
        hops = pd.array(np.where(lengths > 0, lengths - 1, 0), dtype="Int64")
        hops[raw == UNREACHABLE_U64] = pd.NA

        def label(ends: "tuple[str, bytes]", values: Any) -> np.ndarray:
            if ends[0] == "points":
                return np.arange(self._count(ends))
            return np.asarray(values, dtype=np.int64).reshape(-1)

        return pd.DataFrame({
            "source": np.repeat(label(s_ends, sources), kt),
            "target": np.tile(label(t_ends, targets), ks),
            "distance": np.where(raw == UNREACHABLE_U64, np.nan, raw.astype(np.float64)),
            "hops": hops,
            "path": np.split(vertices, offsets[1:-1]),
        })

    @_ends_on_signal
    def reach(self, sources: Any = None, targets: Any = None, *, radii: Sequence[int] = (),
              decay: str = "flat", weights: Any = None, nearest: int = 0,
              isochrones: Sequence[int] = (), isochrone_ids: bool = False,
              **options: Any) -> Dict[str, Any]:
        """Accessibility per source, folded inside each tree (no matrix is made): over
        ``targets`` (default every vertex), the count and the (decayed) sum of ``weights``
        (one per target; default 1 each) within each of ``radii``; the ``nearest`` targets
        with their distances; and the count of vertices within each of ``isochrones``.
        ``decay``: ``"flat"``, ``"linear"`` or ``"exp"``, as pandana's. ``radii`` and
        ``isochrones`` are whole numbers in the graph's integer weight units (decimetres, or
        deciseconds with ``osm={"weight": "time"}``, for OpenStreetMap graphs); a fraction is a
        ValueError. What ``[apsp.reach]`` writes: a dict of pandas DataFrames under
        ``"reach"``, ``"nearest"``, ``"isochrones"`` (those asked for), as ``reach.csv``,
        ``nearest.csv`` and
        ``isochrones.csv``; in ``"nearest"`` the ``target_k`` ids and ``index_k`` positions
        are int64, -1 where a source reaches fewer than ``k`` targets (``distance_k`` is NaN
        there); with ``isochrone_ids=True`` also ``"isochrone_ids"``: per source
        and limit, ``vertices``, a numpy array of the ids within it. A repeated source gets its
        rows repeated; a repeated target counts once per entry (two points of interest at one
        vertex). Run options: see :data:`RUN_OPTIONS`. Needs pandas."""
        import io
        import pandas as pd
        table: Dict[str, Any] = {}
        if len(radii):
            table["radii"] = _whole_numbers(radii, "radii")
            table["decay"] = decay
        if nearest:
            if (isinstance(nearest, (bool, np.bool_))
                    or not isinstance(nearest, (int, np.integer, float, np.floating))
                    or not float(nearest).is_integer()):
                raise ValueError(f"nearest = {nearest!r}: a count of targets (an integer) is "
                                 f"expected")
            table["nearest"] = int(nearest)
        if len(isochrones):
            table["isochrones"] = _whole_numbers(isochrones, "isochrones")
        if isochrone_ids:
            table["isochrone_ids"] = True
        if not table:
            raise ValueError("reach: ask for radii, nearest or isochrones")
        lists = []
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.ndim != 1:
                raise ValueError(f"weights: a 1-D array (one per target), got shape {w.shape}")
            lists.append(("apsp.reach.weights", "weights", "numbers",
                          np.ascontiguousarray(w, dtype="<f8").tobytes()))
        _, _, (inv_s, ks), _, tables = self._run(sources, targets, False, options,
                                                 {"reach": table}, unique_targets=False,
                                                 lists=lists)
        # Typed columns straight from the run (no text between them): counts and ids as int64.
        out = {name[:-4]: pd.DataFrame({k: v.astype(np.int64) if v.dtype == np.uint64 else v
                                        for k, v in cols.items()})
               for name, cols in tables.items() if isinstance(cols, dict)}
        if "nearest" in out:
            # Ids as int64, -1 where a source reaches fewer targets than asked.
            near = out["nearest"]
            for col in near.columns:
                if col.startswith(("target_", "index_")):
                    near[col] = near[col].fillna(-1).astype(np.int64)
        if "isochrone_ids.csv" in tables:
            ids = pd.read_csv(io.StringIO(tables["isochrone_ids.csv"]),
                              keep_default_na=False, dtype={"vertices": str})
            ids["vertices"] = [np.array(v.split(), dtype=np.int64) for v in ids["vertices"]]
            out["isochrone_ids"] = ids
        if inv_s is not None:
            # One row per distinct source (per source and limit for the isochrones' ids).
            for key, frame in out.items():
                per = len(frame) // ks
                rows = (inv_s[:, None] * per + np.arange(per)[None, :]).ravel()
                out[key] = frame.iloc[rows].reset_index(drop=True)
        return out

    def _vertices(self, values: Any, name: str) -> np.ndarray:
        """0-based int64 vertex ids of a list of ids (the graph's numbering) or of (k, 2)
        points, each snapped to its nearest vertex."""
        kind, v, _ = self._ids(values, name, False)
        if kind == "points":
            return self.snap(v, name=name, geodataframe=False)["vertex"] - self.id_base
        return v - self.id_base

    def snap(self, points: Any, *, name: str = "points",
             geodataframe: Optional[bool] = None) -> Any:
        """Where each of ``points`` (a (k, 2) float array: longitude, latitude for
        OpenStreetMap graphs, the ``.co`` file's own plane otherwise) lands on the graph.

        Two places, as the calls use them. The nearest *junction* (vertex): ``vertex`` (int64,
        the graph's numbering), ``distance`` (float64: metres on the sphere for longitude and
        latitude, the coordinates' units otherwise) and ``x``, ``y`` (the vertex's place);
        :meth:`reach`, :meth:`isochrones`, :meth:`summary` and :meth:`distances` start points
        there. And the nearest *road*, on OpenStreetMap graphs read with ``osm={"snap":
        "edge"}`` (the default, as the command line's ``[input.osm] snap``): the point's foot
        on the nearest edge, OSRM's phantom node, where :meth:`od`, :meth:`route` and
        :meth:`paths` start and end trips from points (docs/python.md): ``tail``, ``head``
        (int64: the edge's end vertices, as :meth:`edges` lists them), ``fraction`` (float64:
        how far along the edge from ``tail``, by length), ``offset`` (int64: the weight from
        ``tail`` to the point, ``round(weight · fraction)``, the split the trips use; 0 or the
        edge's weight: the point is at that end vertex), ``road_x``, ``road_y`` (the foot) and
        ``road_distance`` (from the point to its foot). On other graphs (``osm={"snap":
        "vertex"}``, ``.co`` places) trips start at the junction, and those keys are left
        out.

        Returns a dict of numpy arrays under those keys. With ``geodataframe=True`` (needs
        geopandas), a GeoDataFrame instead, one row per point: those columns (``x``, ``y``
        left out), ``input_x``, ``input_y`` (the point as given) and a Point geometry at the
        vertex's place, in the graph's coordinate system (crs "EPSG:4326" for OpenStreetMap
        graphs, none for a ``.co`` plane). Unlike :meth:`edges`, :meth:`isochrones` and
        :meth:`route`, ``geodataframe=None`` here means the dict even where geopandas is
        installed: this call's result does not change type with what happens to be
        installed."""
        a = np.asarray(points, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != 2:
            raise ValueError(f"{name}: a (k, 2) array of points is expected, got shape {a.shape}")
        if self._g.places() is None:
            raise ValueError(f"{name}: points need vertex coordinates (an OpenStreetMap extract, "
                             f"or a .gr file read with coordinates=\"x.co\")")
        if not any(geodataframe is x for x in (None, True, False)):
            raise ValueError(f"geodataframe = {geodataframe!r}: True (a GeoDataFrame, needs "
                             f"geopandas), or False/None (a dict of numpy arrays)")
        gpd = _geopandas(True) if geodataframe else None
        xy = np.ascontiguousarray(a, dtype="<f8").tobytes()
        with _named_as_arguments():
            v, d = _native.snap(self._g, xy, name, "vertex")[:2]
            road = (_native.snap(self._g, xy, name, "edge")
                    if _native.snaps_onto_edges(self._g) else None)
        vertex = np.frombuffer(v, dtype="<u4").astype(np.int64)
        at = self.coordinates[vertex]
        out = {"vertex": vertex + self.id_base, "distance": np.frombuffer(d, dtype="<f8").copy(),
               "x": at[:, 0].copy(), "y": at[:, 1].copy()}
        if road is not None:
            _, rd, tails, heads, fractions, offsets, places = road
            foot = np.frombuffer(places, dtype="<f8").reshape(-1, 2)
            out.update(
                tail=np.frombuffer(tails, dtype="<u4").astype(np.int64) + self.id_base,
                head=np.frombuffer(heads, dtype="<u4").astype(np.int64) + self.id_base,
                fraction=np.frombuffer(fractions, dtype="<f8").copy(),
                offset=np.frombuffer(offsets, dtype="<u8").astype(np.int64),
                road_x=foot[:, 0].copy(), road_y=foot[:, 1].copy(),
                road_distance=np.frombuffer(rd, dtype="<f8").copy())
        if gpd is None:
            return out
        columns = {key: value for key, value in out.items() if key not in ("x", "y")}
        return gpd.GeoDataFrame(
            {**columns, "input_x": a[:, 0].copy(), "input_y": a[:, 1].copy()},
            geometry=gpd.points_from_xy(out["x"], out["y"]), crs=self._crs())

    def _trip_ends(self, values: Any, name: str) -> "Optional[tuple[str, bytes]]":
        """A list of trip ends as the native ``route_at`` takes it, when it holds points and
        the graph snaps points onto edges (their trips start on the roads, as phantoms):
        ``("points", bytes)``; else None (the caller's usual path: points snap to
        junctions)."""
        a = np.asarray(values)
        if not (a.ndim == 2 and a.shape[1] == 2 and a.dtype.kind == "f"):
            return None
        if self._g.places() is None or not _native.snaps_onto_edges(self._g):
            return None
        return "points", np.ascontiguousarray(a, dtype="<f8").tobytes()

    @staticmethod
    def _count(ends: "tuple[str, bytes]") -> int:
        """The entries of a list of trip ends (:meth:`_ends_of`)."""
        return len(ends[1]) // (16 if ends[0] == "points" else 8)

    def _ends_of(self, values: Any, name: str) -> "tuple[str, bytes]":
        """:meth:`_trip_ends`, or the list's 0-based vertex ids (``("ids", bytes)``)."""
        ends = self._trip_ends(values, name)
        if ends is not None:
            return ends
        return "ids", self._vertices(values, name).astype("<i8").tobytes()

    def edges(self, *, geodataframe: Optional[bool] = None) -> Any:
        """The network's arcs with their lines (graphs with places): ``source``, ``target``
        (int64 ids in the graph's numbering), ``weight`` (int64, the graph's units: decimetres
        or deciseconds for OpenStreetMap graphs) and a LineString from the source's place to
        the target's: along the way's shape for OpenStreetMap graphs (the lightest way between
        the two, as :meth:`route` draws it), the straight segment for a ``.co`` file's places
        (None where a vertex has no place). Coordinates: WGS84 longitude/latitude for
        OpenStreetMap graphs (crs "EPSG:4326"), a ``.co`` file's own plane otherwise (no crs).

        Returns a geopandas GeoDataFrame when geopandas is installed (``geodataframe=None``;
        ``True`` requires it, ``False`` never uses it), else a dict: ``source``, ``target``,
        ``weight`` as numpy arrays and ``geometry`` a list of GeoJSON-like LineString dicts
        (``{"type": "LineString", "coordinates": [[x, y], ...]}``, or None), the geometry
        objects of :meth:`route`'s features.

        One row per arc of the graph, in :meth:`csr` order, for a graph without
        turn-restriction copies. An OpenStreetMap graph read with turn restrictions has extra
        vertices, copies of a restricted junction; here, as in :meth:`route`'s paths, a copy
        is shown as its junction, so each arc shows once between the two junctions it joins:
        the arcs that then join the same two junctions are one row, at the lightest weight,
        and a copy's zero-weight link to its own junction (a loop there) is left out. The
        table is then the road network as a map shows it, which permits turns the graph
        forbids: distances over it are lower bounds of the graph's, equal without
        restrictions (``osm={"turn_restrictions": False}``). Rows are by source, each
        source's arcs in the CSR's order, then its copies'. O(m) plus the lines' points."""
        if not any(geodataframe is x for x in (None, True, False)):
            raise ValueError(f"geodataframe = {geodataframe!r}: None (a GeoDataFrame when "
                             f"geopandas is installed), True or False")
        if self._g.places() is None:
            raise ValueError(
                f"edges: {self.name} has no coordinates, so its arcs have no geometry: read an "
                f"OpenStreetMap extract, or a .gr file with coordinates=\"x.co\" (csr() gives "
                f"the arcs without geometry)")
        with _named_as_arguments():
            t, h, w, xy, starts = _native.edges(self._g)
        cols = {"source": np.frombuffer(t, dtype="<u4").astype(np.int64) + self.id_base,
                "target": np.frombuffer(h, dtype="<u4").astype(np.int64) + self.id_base,
                "weight": np.frombuffer(w, dtype="<u4").astype(np.int64)}
        pts = np.frombuffer(xy, dtype="<f8").reshape(-1, 2)
        at = np.frombuffer(starts, dtype="<u8").astype(np.int64)
        gpd = None if geodataframe is False else _geopandas(bool(geodataframe))
        if gpd is None:
            lines: list = [{"type": "LineString", "coordinates": pts[a:b].tolist()} if b > a
                           else None for a, b in zip(at[:-1].tolist(), at[1:].tolist())]
            return {**cols, "geometry": lines}
        import shapely
        counts = np.diff(at)
        geoms = np.full(len(counts), None, dtype=object)
        if not hasattr(shapely, "linestrings"):  # shapely 1.x: one line at a time
            from shapely.geometry import LineString
            for k in np.flatnonzero(counts):
                geoms[k] = LineString(pts[at[k]:at[k + 1]])
        elif counts.any():
            # One call for every line: each point tagged with its arc's row.
            shapely.linestrings(pts, indices=np.repeat(np.arange(len(counts)), counts),
                                out=geoms)
        return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries(geoms, crs=self._crs()),
                                crs=self._crs())

    def _crs(self) -> Optional[str]:
        """The coordinate reference system of the graph's places for geopandas: "EPSG:4326"
        (WGS84 longitude/latitude) for OpenStreetMap input, None for a ``.co`` file's plane."""
        p = self._g.places()
        return "EPSG:4326" if p is not None and p[1] else None

    def _require_places(self, what: str) -> None:
        if self._g.places() is None:
            raise ValueError(f"{what}: {self.name} has no vertex places: read an OpenStreetMap "
                             f"extract, or a .gr file with coordinates=\"x.co\"")

    def _features(self, features: list, geodataframe: Optional[bool]) -> Any:
        """GeoJSON-like feature dicts as a geopandas GeoDataFrame (``geodataframe`` True, or None
        and geopandas importable) in the graph's coordinate system, else as they are."""
        if geodataframe is False:
            return features
        geopandas = _geopandas(bool(geodataframe))
        if geopandas is None:
            return features
        columns = list(features[0]["properties"]) if features else []
        return geopandas.GeoDataFrame.from_features(features, crs=self._crs(),
                                                    columns=columns + ["geometry"])

    @_ends_on_signal
    def isochrones(self, sources: Any, limits: Sequence[int], *, polygons: bool = True,
                   width: float = 50.0, geodataframe: Optional[bool] = None) -> Any:
        """The area reachable from each of ``sources`` (vertex ids, or (k, 2) points snapped to
        their nearest vertex) within each of ``limits`` (whole numbers in the graph's weight
        units: decimetres or deciseconds for OpenStreetMap graphs), as polygons: what
        ``[apsp.reach] isochrone_polygons = true`` writes to ``isochrones.geojson``, drawn the
        same way (docs/roads.md, "Isochrone polygons"): the reachable network (every arc whose
        tail is within the limit, the reached fraction of an arc that crosses it) buffered by
        ``width`` (metres for longitude/latitude, the ``.co`` file's units for a plane) on a grid
        of cells of ``width / 2``, outer rings counter-clockwise and holes clockwise.

        Coordinates are the graph's: WGS84 longitude/latitude for OpenStreetMap graphs (crs
        "EPSG:4326"), a ``.co`` file's own plane otherwise (no crs). Returns a geopandas
        GeoDataFrame when geopandas is installed (``geodataframe=None``; ``True`` requires it,
        ``False`` never uses it), else a list of GeoJSON Feature dicts; one row or feature per
        source and limit, sources major, with ``source``, ``limit``, ``vertices`` (the count
        within the limit), ``width`` and ``cell`` (the grid's cell side; larger than
        ``width / 2`` where an area would need more than 4,194,304 cells) and a Polygon or
        MultiPolygon geometry. Each source's tree is a Dijkstra on the CPU cores.

        ``polygons=False`` returns the vertices within each limit instead (a DataFrame:
        ``source``, ``limit``, ``count``, ``vertices``, an id array), as
        ``reach(isochrone_ids=True)`` does; needs pandas."""
        lims = _whole_numbers(limits, "limits")
        if not lims:
            raise ValueError("limits: empty; give at least one limit")
        bad = [x for x in lims if x <= 0]
        if bad:
            raise ValueError(f"limits: {bad[0]} is not a positive distance in the graph's "
                             f"weight units")
        if not polygons:
            return self.reach(sources, isochrones=lims, isochrone_ids=True)["isochrone_ids"]
        if (isinstance(width, (bool, np.bool_)) or not isinstance(width, (int, float, np.number))
                or not math.isfinite(width) or width <= 0):
            raise ValueError(f"width = {width!r}: the polygons' buffer width, a positive number "
                             f"(metres for longitude/latitude, the .co file's units otherwise)")
        self._require_places("isochrones")
        ids = self._vertices(sources, "sources")
        with _named_as_arguments():
            text = _native.isochrones(self._g, ids.astype("<i8").tobytes(), lims, float(width))
        collection = json.loads(text)
        self.last_report = {"plugin": "apsp", "mode": "isochrones", "sources": len(ids),
                            "limits": lims, "width": float(width),
                            "coordinates": collection["coordinates"]}
        return self._features(collection["features"], geodataframe)

    def _route_features(self, o: np.ndarray, d: np.ndarray, dist: np.ndarray, walks: Any,
                        paths: bool, geodataframe: Optional[bool]) -> Any:
        """Routes as LineString features (see :meth:`route`, ``geometry=True``)."""
        xy, starts = _native.path_lines(self._g, bytes(walks[0]), bytes(walks[1]))
        pts = np.frombuffer(xy, dtype="<f8").reshape(-1, 2)
        at = np.frombuffer(starts, dtype="<u8").astype(np.int64)
        offsets = np.frombuffer(walks[0], dtype="<u8").astype(np.int64)
        vertices = np.frombuffer(walks[1], dtype="<u4").astype(np.int64) + self.id_base
        features = []
        for i in range(len(o)):
            line = pts[at[i]:at[i + 1]]
            reached = dist[i] != UNREACHABLE_U64 and len(line) > 0
            props: Dict[str, Any] = {
                "origin": int(o[i]) + self.id_base,
                "destination": int(d[i]) + self.id_base,
                "distance": float(dist[i]) if dist[i] != UNREACHABLE_U64 else math.nan,
            }
            if paths:
                props["path"] = vertices[offsets[i]:offsets[i + 1]]
            features.append({
                "type": "Feature", "properties": props,
                "geometry": ({"type": "LineString", "coordinates": line.tolist()}
                             if reached else None)})
        return self._features(features, geodataframe)

    def route(self, origins: Any, destinations: Any, *, paths: bool = False,
              integer: bool = False, unreachable: float = math.inf, geometry: bool = False,
              geodataframe: Optional[bool] = None) -> Any:
        """The shortest distance of each trip ``origins[i] -> destinations[i]`` (equal-length
        lists of vertex ids in the graph's numbering, or (k, 2) arrays of points: on the
        nearest road for OpenStreetMap graphs read with ``snap = "edge"``, the default, as the
        command line puts them (see :meth:`snap`; a path then holds the road vertices between
        the points, empty along one edge), else on their nearest vertex): one query per pair
        on the graph's contraction hierarchy, which
        the graph keeps in memory after its first use (read from the hierarchy cache, or built
        once), the pairs spread over the machine's cores. Nothing is written.

        Returns a float64 array of the distances (``unreachable`` where there is no path;
        ``integer=True``: uint64 with ``UNREACHABLE_U64`` there). With ``paths=True``, returns
        ``(distances, paths)``, ``paths`` a list of int64 arrays of vertex ids from the origin to
        the destination (empty when unreachable), each a chain of arcs whose weights sum to its
        distance.

        With ``geometry=True`` (graphs with places), returns the routes as lines instead: a
        geopandas GeoDataFrame when geopandas is installed (``geodataframe`` as for
        :meth:`isochrones`), else a list of GeoJSON Feature dicts, one per pair, with
        ``origin``, ``destination``, ``distance`` (NaN when unreachable), with ``paths=True``
        also ``path`` (an id array), and a LineString through the route's vertices, along the
        ways' geometry for OpenStreetMap graphs (as ``paths.geojson``), straight between the
        vertices' places otherwise (None when unreachable; a trip to itself is its place
        twice). Coordinates: WGS84 longitude/latitude for OpenStreetMap graphs (crs
        "EPSG:4326"), a ``.co`` file's own plane otherwise (no crs)."""
        if self._trip_ends(origins, "origins") or self._trip_ends(destinations, "destinations"):
            return self._route_phantoms(origins, destinations, paths, integer, unreachable,
                                        geometry, geodataframe)
        o = self._vertices(origins, "origins")
        d = self._vertices(destinations, "destinations")
        if len(o) != len(d):
            raise ValueError(f"origins has {len(o)} entries and destinations {len(d)}: give one "
                             f"destination per origin (od() gives every origin x destination)")
        if geometry:
            self._require_places("geometry=True")
        with _named_as_arguments():
            dist, walks, source = _native.route(self._g, o.astype("<i8").tobytes(),
                                                d.astype("<i8").tobytes(),
                                                bool(paths or geometry))
        self.last_report = {"plugin": "apsp", "mode": "pairs", "pairs": len(o),
                            "hierarchy": source}
        raw = np.frombuffer(dist, dtype="<u8")
        if geometry:
            return self._route_features(o, d, raw, walks, paths, geodataframe)
        return self._routes_out(raw, walks, paths, integer, unreachable)

    def _route_phantoms(self, origins: Any, destinations: Any, paths: bool, integer: bool,
                        unreachable: float, geometry: bool, geodataframe: Optional[bool]) -> Any:
        """:meth:`route` with points on the roads (:meth:`_trip_ends`)."""
        o = self._ends_of(origins, "origins")
        d = self._ends_of(destinations, "destinations")
        with _named_as_arguments():
            dist, walks, source = _native.route_at(self._g, o, d, bool(paths or geometry))
        raw = np.frombuffer(dist, dtype="<u8")
        self.last_report = {"plugin": "apsp", "mode": "pairs", "pairs": len(raw),
                            "hierarchy": source, "snap": "edge"}
        if geometry:
            # The lines run through the routes' road vertices (the points' feet left out).
            offsets = np.frombuffer(walks[0], dtype="<u8").astype(np.int64)
            vertices = np.frombuffer(walks[1], dtype="<u4").astype(np.int64)
            first = np.array([vertices[a] if b > a else -1
                              for a, b in zip(offsets[:-1], offsets[1:])], dtype=np.int64)
            last = np.array([vertices[b - 1] if b > a else -1
                             for a, b in zip(offsets[:-1], offsets[1:])], dtype=np.int64)
            return self._route_features(first, last, raw, walks, paths, geodataframe)
        return self._routes_out(raw, walks, paths, integer, unreachable)

    def _routes_out(self, raw: np.ndarray, walks: Any, paths: bool, integer: bool,
                    unreachable: float) -> Any:
        """:meth:`route`'s result from the native call's distances (``raw``, uint64) and
        walks (offsets and 0-based vertices as bytes)."""
        if integer:
            out = raw.copy()
        else:
            out = raw.astype(np.float64)
            out[raw == UNREACHABLE_U64] = unreachable
        if not paths:
            return out
        offsets = np.frombuffer(walks[0], dtype="<u8").astype(np.int64)
        vertices = np.frombuffer(walks[1], dtype="<u4").astype(np.int64) + self.id_base
        return out, [vertices[offsets[i]:offsets[i + 1]] for i in range(len(raw))]

    @_ends_on_signal
    def od(self, sources: Any, targets: Any, *, integer: bool = False,
           unreachable: float = math.inf, as_frame: bool = False, **options: Any) -> Any:
        """The origin-destination matrix: ``d[i, j]`` is the shortest distance from
        ``sources[i]`` to ``targets[j]`` (vertex ids in the graph's numbering, repeats allowed:
        each distinct id is run once; or (k, 2) float arrays of points, for graphs with places:
        on the nearest road for OpenStreetMap graphs read with ``snap = "edge"`` (the default;
        the command line's matrix for the same points, answered on the resident hierarchy with
        no run options; ``integer=True`` gives uint64 then), else on their nearest vertex).

        Returns a float64 array with ``unreachable`` (default ``inf``, as scipy) where there is
        no path; ``integer=True`` returns the exact unsigned integers the run computed (uint32
        or uint64) with ``UNREACHABLE_U32``/``UNREACHABLE_U64`` there; ``as_frame=True``
        returns a pandas DataFrame labelled by the ids, NaN where there is no path.
        Run options: see :data:`RUN_OPTIONS`. Without run options or ``integer``, a matrix of
        at most 1,024 entries is answered by one point-to-point query per entry on the graph's
        resident hierarchy (:meth:`route`; ``last_report["mode"]`` is ``"pairs"``), a larger
        one by a run of the apsp plugin."""
        if targets is None:
            raise ValueError("targets: None; give the target ids (distances() gives every vertex)")
        self._check_result(sources, targets)
        if self._trip_ends(sources, "sources") or self._trip_ends(targets, "targets"):
            # Points on the roads: their matrix on the resident hierarchy (nothing is built
            # for a new set of points); a run would snap them to junctions.
            if options:
                raise ValueError(
                    f"{', '.join(sorted(options))}: run options do not apply to points snapped "
                    f"onto roads (their matrix is answered on the graph's resident hierarchy); "
                    f"leave them out, or give vertex ids, or read the graph with "
                    f"osm={{\"snap\": \"vertex\"}}")
            s_ends, t_ends = self._ends_of(sources, "sources"), self._ends_of(targets, "targets")
            with _named_as_arguments():
                raw, source = _native.od_at(self._g, s_ends, t_ends)
            shape = (len(np.frombuffer(raw, dtype="<u8")) // max(1, self._count(t_ends)),
                     self._count(t_ends))
            self.last_report = {"plugin": "apsp", "mode": "phantoms", "hierarchy": source,
                                "snap": "edge", "pairs": shape[0] * shape[1]}
            return _matrix((bytes(raw), "<u8", shape), integer, unreachable, as_frame,
                           sources, targets, None, None)
        if not options and not integer:
            # auto: few pairs are answered by point-to-point queries on the graph's resident
            # hierarchy, in memory; more by the run's sweeps.
            o, d = self._vertices(sources, "sources"), self._vertices(targets, "targets")
            if len(o) * len(d) <= _PAIRS_AT_MOST:
                raw = self.route(np.repeat(o, len(d)) + self.id_base,
                                 np.tile(d, len(o)) + self.id_base, integer=True)
                self.last_report["reason"] = (f"auto: {len(o)} x {len(d)} pairs, at most "
                                              f"{_PAIRS_AT_MOST}: one query per pair")
                m = (raw.astype("<u8").tobytes(), "<u8", (len(o), len(d)))
                return _matrix(m, False, unreachable, as_frame, sources, targets, None, None)
        m, _, (inv_s, _), (inv_t, _), _ = self._run(sources, targets, True, options)
        return _matrix(m, integer, unreachable, as_frame, sources, targets, inv_s, inv_t)

    @_ends_on_signal
    def distances(self, sources: Any = None, *, integer: bool = False,
                  unreachable: float = math.inf, **options: Any) -> np.ndarray:
        """The distance rows from ``sources`` (default: every vertex; repeats allowed) to every
        vertex, shape (len(sources), n); column ``j`` is internal vertex ``j`` (id
        ``j + id_base``). As :meth:`od` for ``integer`` and ``unreachable``."""
        self._check_result(sources, None)
        m, _, (inv_s, _), _, _ = self._run(sources, None, True, options)
        return _matrix(m, integer, unreachable, False, sources, None, inv_s, None)

    @_ends_on_signal
    def summary(self, sources: Any = None, targets: Any = None, *, as_frame: bool = False,
                **options: Any) -> Any:
        """Per source, over the targets (default: every vertex), what ``summary.csv`` holds:
        ``source``, ``reached``, ``unreachable``, ``sum``, ``max`` (integers) and ``mean``
        (float, NaN when nothing but the source is reached). A dict of numpy arrays, or a
        pandas DataFrame with ``as_frame=True``. No matrix is kept: any number of sources. A
        repeated source gets its row repeated; a repeated target counts once per entry."""
        _, cols, (inv_s, _), _, _ = self._run(sources, targets, False, options,
                                              unique_targets=False)
        if inv_s is not None:
            cols = {k: v[inv_s] for k, v in cols.items()}
        if as_frame:
            import pandas as pd
            return pd.DataFrame(cols)
        return cols


def _geopandas(required: bool) -> Any:
    """The geopandas module, or None where it is not installed (an ImportError saying how to
    install it when ``required``: ``geodataframe=True``)."""
    try:
        import geopandas
    except ImportError:
        if required:
            raise ImportError("geodataframe=True needs geopandas (pip install "
                              "'tuccompi[geo]')") from None
        return None
    return geopandas


#: Bytes a distance of an od/distances result takes in memory at its peak: the float64 matrix
#: returned and the run's (32- or 64-bit) rows it is made from.
_RESULT_BYTES = 16


class _Bar:
    """``progress=True``: a tqdm bar when tqdm is installed, else a log line (logger
    ``tuccompi``, INFO) every five seconds."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._last = 0.0
        try:
            from tqdm.auto import tqdm
            self._bar = tqdm(total=0, unit="task", desc="tuccompi")
        except ImportError:
            pass

    def __call__(self, done: int, total: int) -> None:
        import time
        if self._bar is not None:
            self._bar.total = total
            self._bar.n = done
            self._bar.refresh()
        elif time.monotonic() - self._last >= 5.0 or done == total:
            self._last = time.monotonic()
            logging.getLogger("tuccompi").info("progress: %d/%d tasks (%.1f%%)", done, total,
                                               100.0 * done / max(total, 1))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _progress(progress: Any) -> Any:
    """The callback a run reports its progress to: ``None``/``False`` none, ``True`` a bar
    (:class:`_Bar`), a callable ``f(done, total)`` itself."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _Bar()
    if not callable(progress):
        raise ValueError(f"progress = {progress!r}: True (a tqdm bar, or log lines), or a "
                         f"callable f(done, total)")
    return progress


def _available_memory() -> Optional[int]:
    """Bytes this process can still have (MemAvailable, lowered to a cgroup's limit), or None
    where that cannot be read."""
    return _native.available_memory()


def _gib(b: int) -> str:
    return f"{b / 2**30:.1f} GiB"


def _matrix(m: Any, integer: bool, unreachable: float, as_frame: bool, sources: Any,
            targets: Any, inv_s: Optional[np.ndarray], inv_t: Optional[np.ndarray]) -> Any:
    data, dtype, shape = m
    raw = np.frombuffer(data, dtype=dtype).reshape(shape)
    # The run's rows and columns are the distinct ids: back to the entries as given.
    if inv_s is not None:
        raw = raw[inv_s]
    if inv_t is not None:
        raw = raw[:, inv_t]
    if integer:
        return raw
    marker = np.iinfo(raw.dtype).max
    out = raw.astype(np.float64)
    missing = raw == marker
    out[missing] = np.nan if as_frame else unreachable
    if as_frame:
        import pandas as pd
        index = pd.Index(np.asarray(sources), name="source")
        columns = pd.Index(np.asarray(targets), name="target")
        if index.nlevels != 1 or np.asarray(sources).ndim != 1:
            index = pd.RangeIndex(out.shape[0], name="source")
        if np.asarray(targets).ndim != 1:
            columns = pd.RangeIndex(out.shape[1], name="target")
        return pd.DataFrame(out, index=index, columns=columns)
    return out


def _columns(cols: Sequence[Any]) -> Dict[str, np.ndarray]:
    """A table from the native half, ``(name, dtype, bytes)`` per column, as numpy arrays; a sum
    beyond 64 bits (dtype ``i16``: 16-byte little-endian signed integers) as Python ints."""
    out: Dict[str, np.ndarray] = {}
    for name, dtype, data in cols:
        if dtype == "i16":
            b = bytes(data)
            out[name] = np.array([int.from_bytes(b[i:i + 16], "little", signed=True)
                                  for i in range(0, len(b), 16)], dtype=object)
        else:
            out[name] = np.frombuffer(data, dtype=dtype)
    return out


def _config(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The run options (keyword arguments) as config tables, each checked by name."""
    units: Dict[str, Any] = {}
    sched: Dict[str, Any] = {}
    apsp: Dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key == "cpu_workers":
            if value != "auto" and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0):
                raise ValueError(f"cpu_workers = {value!r}: \"auto\" (every core) or a count >= 0 (0 = none)")
            units["cpu_workers"] = value if value == "auto" else int(value)
        elif key == "opencl":
            if isinstance(value, str):
                if value not in ("all", "none"):
                    raise ValueError(f"opencl = {value!r}: \"all\", \"none\" or a list of device-name substrings")
                units["opencl"] = value
            elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                units["opencl"] = list(value)
            else:
                raise ValueError(f"opencl = {value!r}: \"all\", \"none\" or a list of device-name substrings")
        elif key == "device_type":
            if value not in _DEVICE_TYPES:
                raise ValueError(f"device_type = {value!r}: one of {', '.join(map(repr, _DEVICE_TYPES))}")
            units["device_type"] = value
        elif key == "concurrent_kernels":
            if value != "auto" and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"concurrent_kernels = {value!r}: \"auto\" or a count >= 1")
            units["concurrent_kernels"] = value if value == "auto" else int(value)
        elif key == "policy":
            if value not in _POLICIES:
                raise ValueError(f"policy = {value!r}: one of {', '.join(map(repr, _POLICIES))}")
            sched["policy"] = value
        elif key == "cpu_algorithm":
            if value not in _CPU_ALGORITHMS:
                raise ValueError(f"cpu_algorithm = {value!r}: one of {', '.join(map(repr, _CPU_ALGORITHMS))}")
            apsp["cpu_algorithm"] = value
        elif key == "gpu_algorithm":
            if value not in _GPU_ALGORITHMS:
                raise ValueError(f"gpu_algorithm = {value!r}: one of {', '.join(map(repr, _GPU_ALGORITHMS))}")
            apsp["gpu_algorithm"] = value
        elif key == "hierarchy":
            if not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"hierarchy = {value!r}: the path of a hierarchy cache file")
            apsp["hierarchy"] = os.fspath(value)
        else:
            raise TypeError(
                f"unexpected keyword argument {key!r}; run options are: "
                + ", ".join(RUN_OPTIONS)
            )
    config: Dict[str, Any] = {}
    if units:
        config["units"] = units
    if sched:
        config["scheduler"] = sched
    if apsp:
        config["apsp"] = apsp
    return config


#: The run options of :meth:`Graph.od`, :meth:`Graph.distances` and :meth:`Graph.summary`,
#: with the config key each sets. Left out (or None), each takes the command line's default.
RUN_OPTIONS = {
    "cpu_workers": "units.cpu_workers: \"auto\" (every core, the default) or a count; 0 = none",
    "opencl": "units.opencl: \"all\" (the default: every device found), \"none\", or name substrings",
    "device_type": "units.device_type: \"gpu\" (the default), \"cpu\" (PoCL), \"accelerator\", \"all\"",
    "concurrent_kernels": "units.concurrent_kernels: queues per device (\"auto\")",
    "policy": "scheduler.policy: \"work-queue\" (the default) or \"equitable\"",
    "cpu_algorithm": "apsp.cpu_algorithm: \"auto\" (the default), \"dijkstra\", \"phast\", \"pairs\"",
    "gpu_algorithm": "apsp.gpu_algorithm: \"auto\" (the default), \"phast\", \"worklist\", ...",
    "hierarchy": "apsp.hierarchy: the hierarchy cache file (default: the command line's cache)",
    "progress": "no config key: True shows a tqdm bar (log lines at INFO without tqdm); a "
                "callable f(done, total) is called as tasks finish",
}


def read_graph(path: Union[str, "os.PathLike[str]"], *, columns: Optional[Sequence[str]] = None,
               weight_scale: Optional[float] = None,
               coordinates: Union[str, "os.PathLike[str]", None] = None,
               osm: Optional[Mapping[str, Any]] = None) -> Graph:
    """Read a graph file as the command line's ``[input]`` does: ``.gr``, ``.mtx``, edge lists
    (``.el``, ``.wel``, ``.txt``, ``.csv``, ``.tsv``), each optionally ``.gz``, and
    OpenStreetMap ``.osm.pbf`` extracts. ``columns`` (input.columns): the tail, head and
    weight column names of a ``.csv``/``.tsv``; ``weight_scale`` (input.weight_scale);
    ``coordinates`` (input.coordinates): a DIMACS ``.co`` file beside a ``.gr``; ``osm``: the
    ``[input.osm]`` table (e.g. ``{"profile": "car"}``). Large files go through the command
    line's graph cache."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    if coordinates is not None and not os.path.exists(os.fspath(coordinates)):
        raise FileNotFoundError(2, "No such file or directory", os.fspath(coordinates))
    table: Dict[str, Any] = {"path": os.path.abspath(p)}
    if columns is not None:
        table["columns"] = [str(c) for c in columns]
    if weight_scale is not None:
        table["weight_scale"] = float(weight_scale)
    if coordinates is not None:
        table["coordinates"] = os.path.abspath(os.fspath(coordinates))
    if osm is not None:
        table["osm"] = dict(osm)
    with _named_as_arguments():
        return Graph(_native.read_graph(json.dumps(table)))


@_ends_on_signal(journaled=True)
def run(config: Union[str, "os.PathLike[str]"], *, set: Sequence[str] = (),
        resume: bool = False, restart: bool = False) -> Dict[str, Any]:
    """Run a config file as ``tuccompi run CONFIG`` does, with any built-in plugin, writing its
    outputs where the config says; ``set``: ``KEY=VALUE`` overrides (``--set``); ``resume`` /
    ``restart`` as ``--resume`` / ``--restart``. Returns the report (``report.json``) as a dict.
    A KeyboardInterrupt stops the run cleanly: its finished chunks are journaled, and
    ``resume=True`` continues it."""
    if resume and restart:
        raise ValueError("resume and restart: give at most one")
    p = os.fspath(config)
    if not os.path.exists(p):
        raise FileNotFoundError(2, "No such file or directory", p)
    if isinstance(set, str):
        set = [set]
    unfinished = "resume" if resume else "restart" if restart else "refuse"
    return json.loads(_native.run_config(p, [str(s) for s in set], unfinished))


def plugins() -> Dict[str, str]:
    """The built-in plugins :func:`run` can run: name -> description."""
    return dict(_native.plugins())
