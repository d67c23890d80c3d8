# spindle.pyi — type stubs for the spindle extension module
# (bindings/python/spindle_module.cpp), shipped next to it by the Python
# package. tests/test_stubs.py checks that every public name of the module is
# declared here and nothing else is.
from enum import Enum
from typing import Any, Mapping, Sequence

import numpy as np

__version__: str

class Fail(RuntimeError): ...
class InvalidArgument(Fail, ValueError): ...
class NotFound(Fail, KeyError): ...
class Unsupported(Fail, NotImplementedError): ...

class ExecutionMode(Enum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1

class GraphOptimizationLevel(Enum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99

class SessionOptions:
    # Thread counts count the calling thread; 0 = the physical cores this
    # process may use. Invalid counts raise InvalidArgument when set.
    intra_op_num_threads: int
    inter_op_num_threads: int
    execution_mode: ExecutionMode
    graph_optimization_level: GraphOptimizationLevel
    use_per_session_threads: bool
    enable_profiling: bool
    profile_file_prefix: str
    # Accepted for ONNX Runtime compatibility; no effect.
    log_severity_level: int
    log_verbosity_level: int
    logid: str
    enable_cpu_mem_arena: bool
    enable_mem_pattern: bool
    enable_mem_reuse: bool
    def __init__(self) -> None: ...
    def add_session_config_entry(self, key: str, value: str) -> None: ...
    def get_session_config_entry(self, key: str) -> str: ...

class RunOptions:
    log_severity_level: int
    log_verbosity_level: int
    logid: str
    terminate: bool
    run_tag: str
    timeout_ms: int
    def __init__(self) -> None: ...

class ModelMetadata:
    @property
    def producer_name(self) -> str: ...
    @property
    def graph_name(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def graph_description(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def custom_metadata_map(self) -> dict[str, str]: ...

class NodeArg:
    @property
    def name(self) -> str: ...
    # Fixed dimensions as int, named dynamic ones as str, unnamed as None.
    @property
    def shape(self) -> list[int | str | None]: ...
    # e.g. "tensor(float)", "seq(tensor(int64))"
    @property
    def type(self) -> str: ...

# A fed or returned value: a numpy array, a list of them (a sequence) or None
# (an empty optional).
Value = np.ndarray | list[np.ndarray] | None

class InferenceSession:
    def __init__(
        self,
        path_or_bytes: str | bytes,
        sess_options: SessionOptions | None = None,
        providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
        provider_options: Sequence[Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None: ...
    def get_inputs(self) -> list[NodeArg]: ...
    def get_outputs(self) -> list[NodeArg]: ...
    def get_providers(self) -> list[str]: ...
    def get_provider_options(self) -> dict[str, dict[str, str]]: ...
    def get_modelmeta(self) -> ModelMetadata: ...
    def get_session_options(self) -> SessionOptions: ...
    def end_profiling(self) -> str: ...
    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None = None,
    ) -> list[Value]: ...

def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def set_num_interop_threads(n: int) -> None: ...
def get_num_interop_threads() -> int: ...
def parallel_info() -> str: ...
def get_available_providers() -> list[str]: ...
def get_device() -> str: ...
