"""Type stubs of the tuccompi package (see __init__.py for the documentation)."""

import os
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str
UNREACHABLE_U32: int
UNREACHABLE_U64: int
EXIT_GRACE: float
RUN_OPTIONS: Dict[str, str]

_Path = Union[str, "os.PathLike[str]"]
_Ids = Union[npt.ArrayLike, Sequence[int]]
_Units = Union[int, Literal["auto"]]

class Graph:
    last_report: Optional[Dict[str, Any]]
    @classmethod
    def from_csr(
        cls,
        indptr: npt.ArrayLike,
        indices: npt.ArrayLike,
        weights: npt.ArrayLike,
        *,
        weight_scale: Optional[float] = ...,
        name: str = ...,
    ) -> Graph: ...
    @classmethod
    def from_scipy(cls, matrix: Any, *, weight_scale: Optional[float] = ..., name: str = ...) -> Graph: ...
    @classmethod
    def from_edges(
        cls,
        sources: npt.ArrayLike,
        targets: npt.ArrayLike,
        weights: npt.ArrayLike,
        *,
        n: Optional[int] = ...,
        directed: bool = ...,
        weight_scale: Optional[float] = ...,
        name: str = ...,
    ) -> Graph: ...
    @classmethod
    def from_pandas(
        cls,
        frame: Any,
        source: str = ...,
        target: str = ...,
        weight: str = ...,
        *,
        n: Optional[int] = ...,
        directed: bool = ...,
        weight_scale: Optional[float] = ...,
        name: str = ...,
    ) -> Graph: ...
    @property
    def n(self) -> int: ...
    @property
    def m(self) -> int: ...
    @property
    def id_base(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def coordinates(self) -> Optional[npt.NDArray[np.float64]]: ...
    @property
    def osm_ids(self) -> Optional[npt.NDArray[np.int64]]: ...
    def __len__(self) -> int: ...
    def csr(self) -> Tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.uint32]]: ...
    def to_scipy(self) -> Any: ...
    @overload
    def snap(
        self, points: Any, *, name: str = ..., geodataframe: Optional[Literal[False]] = ...
    ) -> Dict[str, npt.NDArray[Any]]: ...
    @overload
    def snap(self, points: Any, *, name: str = ..., geodataframe: Literal[True]) -> Any: ...
    def edges(self, *, geodataframe: Optional[bool] = ...) -> Any: ...
    def route(
        self,
        origins: _Ids,
        destinations: _Ids,
        *,
        paths: bool = ...,
        integer: bool = ...,
        unreachable: float = ...,
        geometry: bool = ...,
        geodataframe: Optional[bool] = ...,
    ) -> Any: ...
    def isochrones(
        self,
        sources: _Ids,
        limits: Sequence[int],
        *,
        polygons: bool = ...,
        width: float = ...,
        geodataframe: Optional[bool] = ...,
    ) -> Any: ...
    def od(
        self,
        sources: _Ids,
        targets: _Ids,
        *,
        integer: bool = ...,
        unreachable: float = ...,
        as_frame: bool = ...,
        cpu_workers: Optional[_Units] = ...,
        opencl: Union[Literal["all", "none"], Sequence[str], None] = ...,
        device_type: Optional[Literal["gpu", "cpu", "accelerator", "all"]] = ...,
        concurrent_kernels: Optional[_Units] = ...,
        policy: Optional[Literal["work-queue", "equitable"]] = ...,
        cpu_algorithm: Optional[Literal["auto", "dijkstra", "phast", "pairs"]] = ...,
        gpu_algorithm: Optional[str] = ...,
        hierarchy: Optional[_Path] = ...,
        progress: Any = ...,
    ) -> Any: ...
    def distances(
        self,
        sources: Optional[_Ids] = ...,
        *,
        integer: bool = ...,
        unreachable: float = ...,
        cpu_workers: Optional[_Units] = ...,
        opencl: Union[Literal["all", "none"], Sequence[str], None] = ...,
        device_type: Optional[Literal["gpu", "cpu", "accelerator", "all"]] = ...,
        concurrent_kernels: Optional[_Units] = ...,
        policy: Optional[Literal["work-queue", "equitable"]] = ...,
        cpu_algorithm: Optional[Literal["auto", "dijkstra", "phast", "pairs"]] = ...,
        gpu_algorithm: Optional[str] = ...,
        hierarchy: Optional[_Path] = ...,
        progress: Any = ...,
    ) -> npt.NDArray[Any]: ...
    def summary(
        self,
        sources: Optional[_Ids] = ...,
        targets: Optional[_Ids] = ...,
        *,
        as_frame: bool = ...,
        cpu_workers: Optional[_Units] = ...,
        opencl: Union[Literal["all", "none"], Sequence[str], None] = ...,
        device_type: Optional[Literal["gpu", "cpu", "accelerator", "all"]] = ...,
        concurrent_kernels: Optional[_Units] = ...,
        policy: Optional[Literal["work-queue", "equitable"]] = ...,
        cpu_algorithm: Optional[Literal["auto", "dijkstra", "phast", "pairs"]] = ...,
        gpu_algorithm: Optional[str] = ...,
        hierarchy: Optional[_Path] = ...,
        progress: Any = ...,
    ) -> Any: ...
    def paths(
        self,
        sources: _Ids,
        targets: _Ids,
        *,
        cpu_workers: Optional[_Units] = ...,
        opencl: Union[Literal["all", "none"], Sequence[str], None] = ...,
        device_type: Optional[Literal["gpu", "cpu", "accelerator", "all"]] = ...,
        concurrent_kernels: Optional[_Units] = ...,
        policy: Optional[Literal["work-queue", "equitable"]] = ...,
        cpu_algorithm: Optional[Literal["auto", "dijkstra", "phast", "pairs"]] = ...,
        gpu_algorithm: Optional[str] = ...,
        hierarchy: Optional[_Path] = ...,
        progress: Any = ...,
    ) -> Any: ...
    def reach(
        self,
        sources: Optional[_Ids] = ...,
        targets: Optional[_Ids] = ...,
        *,
        radii: Sequence[int] = ...,
        decay: Literal["flat", "linear", "exp"] = ...,
        weights: Optional[npt.ArrayLike] = ...,
        nearest: int = ...,
        isochrones: Sequence[int] = ...,
        isochrone_ids: bool = ...,
        cpu_workers: Optional[_Units] = ...,
        opencl: Union[Literal["all", "none"], Sequence[str], None] = ...,
        device_type: Optional[Literal["gpu", "cpu", "accelerator", "all"]] = ...,
        concurrent_kernels: Optional[_Units] = ...,
        policy: Optional[Literal["work-queue", "equitable"]] = ...,
        cpu_algorithm: Optional[Literal["auto", "dijkstra", "phast", "pairs"]] = ...,
        gpu_algorithm: Optional[str] = ...,
        hierarchy: Optional[_Path] = ...,
        progress: Any = ...,
    ) -> Dict[str, Any]: ...

def read_graph(
    path: _Path,
    *,
    columns: Optional[Sequence[str]] = ...,
    weight_scale: Optional[float] = ...,
    coordinates: Optional[_Path] = ...,
    osm: Optional[Mapping[str, Any]] = ...,
) -> Graph: ...
def run(
    config: _Path, *, set: Sequence[str] = ..., resume: bool = ..., restart: bool = ...
) -> Dict[str, Any]: ...
def plugins() -> Dict[str, str]: ...
