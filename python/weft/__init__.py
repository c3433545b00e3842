"""Weft for Python: load a model (.vgf, .tosa, .weft or .onnx) and run it on numpy arrays.

    import numpy as np, weft
    model = weft.load("model.onnx", backends=["cpu"])
    print(model.inputs)                      # [IoInfo(name='input', dtype='f32', shape=(1, 3, 224, 224))]
    session = model.session(threads=2)
    outputs = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})

Every failure raises weft.Error, carrying the code ("invalid-argument", "verify", ...) and the
location (file, node, operand) of the C++ error. See docs/python.md.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import _weft

__all__ = ["Error", "IoInfo", "KernelPlacement", "Explanation", "KernelProfile", "Model", "Session", "Stream", "load",
           "compile", "import_onnx", "register_ops", "register_op", "unregister_op", "backends"]


class Error(Exception):
    """A Weft error: `code`, `message` and the location fields (`file`, `line`, `column`, `graph`,
    `node`, `operand`; empty or 0 when unknown). str(error) is the full text the CLI prints."""

    def __init__(self, text: str, code: str, message: str, file: str, line: int, column: int, graph: str,
                 node: str, operand: str):
        super().__init__(text)
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.graph = graph
        self.node = node
        self.operand = operand


_weft._set_error_type(Error)


@dataclass(frozen=True)
class IoInfo:
    """An input or output of a model: its name, Weft element type ("f32", "i8", ...), the numpy
    dtype its arrays have, and its shape."""
    name: str
    dtype: str
    numpy_dtype: np.dtype
    shape: Tuple[int, ...]


@dataclass(frozen=True)
class KernelPlacement:
    """One kernel of the partition, in execution order: the backend that runs it, its pattern
    ("CONV2D+CLAMP", "CUSTOM", ...), the nodes it covers, and why each backend preferred over it
    did not take it ("name: reason")."""
    backend: str
    pattern: str
    nodes: Tuple[str, ...]
    declined: Tuple[str, ...]


@dataclass(frozen=True)
class Explanation:
    """Model.explain(): the backends in priority order and every kernel (constants and views, which
    run nothing, left out). str() is the text `weft run --explain` prints."""
    backends: Tuple[str, ...]
    kernels: Tuple[KernelPlacement, ...]
    text: str = field(repr=False)

    def __str__(self) -> str:
        return self.text

    def __contains__(self, item: str) -> bool:
        return item in self.text

    def by_backend(self) -> Dict[str, int]:
        """Kernels per backend."""
        counts: Dict[str, int] = {}
        for k in self.kernels:
            counts[k.backend] = counts.get(k.backend, 0) + 1
        return counts


@dataclass(frozen=True)
class KernelProfile:
    """One kernel execution of a profiled run: backend, pattern, the label of its main node,
    microseconds, and the implementation the library chose. `device` records are a GPU region's per-dispatch device times (timestamp
    queries), already inside the region's own record."""
    backend: str
    pattern: str
    node: str
    microseconds: float
    device: bool
    implementation: str = ""  # the library's name for what it ran ("brgconv:avx2", ...), where it has one


class Session:
    """One execution context of a model: its own memory, runs one call at a time. Sessions of one
    model run in parallel from several threads (the GIL is released while running)."""

    def __init__(self, model: "Model", threads: int = 1, max_loop_iterations: int = 0, deadline_ms: float = 0.0,
                 max_memory_bytes: int = 0):
        self._model = model
        self._session = _weft.Session(model._model, threads, max_loop_iterations, deadline_ms, max_memory_bytes)
        self._profiling = False

    def run(self, feeds: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Runs the model on `feeds` (every input by name: arrays of its dtype and shape,
        C-contiguous) and returns every output by name: new arrays the runtime wrote into (no
        copy)."""
        return self._session.run(dict(feeds))

    @property
    def profiling(self) -> bool:
        return self._profiling

    @profiling.setter
    def profiling(self, on: bool) -> None:
        """Per-kernel timing of every run from now on (off by default; costs a clock read per kernel)."""
        self._session.set_profiling(bool(on))
        self._profiling = bool(on)

    def profile(self) -> List[KernelProfile]:
        """The last profiled run's kernels in execution order (weft run --profile)."""
        return [KernelProfile(*k) for k in self._session.profile()]


class Model:
    """A loaded, verified and partitioned model (weft::Model)."""

    def __init__(self, model):
        self._model = model

    @property
    def inputs(self) -> List[IoInfo]:
        return [IoInfo(n, d, np.dtype(nd), tuple(s)) for n, d, nd, s in self._model.inputs]

    @property
    def outputs(self) -> List[IoInfo]:
        return [IoInfo(n, d, np.dtype(nd), tuple(s)) for n, d, nd, s in self._model.outputs]

    def session(self, threads: int = 1, max_loop_iterations: int = 0, deadline_ms: float = 0.0,
                max_memory_bytes: int = 0) -> Session:
        """A new execution context (see weft::ContextOptions for the bounds)."""
        return Session(self, threads, max_loop_iterations, deadline_ms, max_memory_bytes)

    def run(self, feeds: Mapping[str, np.ndarray], threads: int = 1) -> Dict[str, np.ndarray]:
        """One run in a fresh session."""
        return self.session(threads).run(feeds)

    @property
    def is_dynamic(self) -> bool:
        """Whether input dimensions are left open (-1 in `inputs`): each new input shape signature
        is imported and prepared on its first run, then reused."""
        return self._model.is_dynamic

    @property
    def specializations(self) -> int:
        """Input shape signatures prepared so far (1 for a static model)."""
        return self._model.specializations

    def explain(self) -> Explanation:
        """Which backend runs each kernel, and why the preferred ones did not (weft run --explain),
        as data; str() of it is the text."""
        kernels = tuple(KernelPlacement(b, p, tuple(n), tuple(d)) for b, p, n, d in self._model.placement())
        return Explanation(tuple(self._model.backend_priority()), kernels, self._model.explain())

    def memory_stats(self) -> Dict[str, int]:
        """The memory plan: arena bytes, intermediate bytes, constants, workspaces."""
        return self._model.memory_stats()


def load(path: str, backends: Optional[Sequence[str]] = None, device: str = "",
         shapes: Optional[Mapping[str, Sequence[int]]] = None, precision: str = "fp32") -> Model:
    """Loads a .vgf, .tosa, .weft or .onnx model. `backends`: names in priority order, each taking
    what it can (default: every backend available here, fastest first, with the default rules of
    docs/backends.md; ["cpu"]: the CPU backends with those rules); `device`: the Vulkan device for shader nodes;
    `shapes`: static shapes of ONNX inputs with dynamic dimensions; `precision`: "fp16" runs an
    fp32 model in reduced precision (for GPUs: fp16 tensors and weights, fp32 accumulators and fp32
    inputs and outputs; `weft run --precision`)."""
    return Model(_weft.load(str(path), list(backends or []), device,
                            {k: [int(d) for d in v] for k, v in (shapes or {}).items()}, str(precision)))


class Stream:
    """A streaming session driven by an IOSpec (weft stream): inputs are written one at a time in
    the IOSpec's sequence order, the model runs when the main sequence's last input arrives, and
    outputs are read one at a time in order. Latched inputs keep their value until rewritten. A
    write or read out of order raises weft.Error and leaves the session as it was."""

    def __init__(self, model: Model, iospec: str, target: str = ""):
        self._stream = _weft.Stream(model._model, str(iospec), str(target))

    def write(self, key: str, value: np.ndarray) -> None:
        """Writes input `key`: exactly its `length` elements, of its element type."""
        self._stream.write(key, np.asarray(value))

    def write_values(self, key: str, values: Sequence[float]) -> None:
        """Writes input `key` from real values, quantized as the IOSpec says."""
        self._stream.write_values(key, [float(v) for v in values])

    def read(self, key: str) -> np.ndarray:
        """Reads the next output, which must be `key`."""
        return self._stream.read(key)

    def read_values(self, key: str) -> List[float]:
        """Reads the next output, dequantized as the IOSpec says."""
        return self._stream.read_values(key)

    def expected(self) -> str:
        """What the session expects next, e.g. "input 'C' of main_seq"."""
        return self._stream.expected()


def compile(src: str, out: str, custom_ops: Optional[Sequence[str]] = None, iospec: str = "",
            latched: Optional[Sequence[str]] = None, target: str = "",
            shapes: Optional[Mapping[str, Sequence[int]]] = None) -> None:
    """weft compile: reads `src` (.onnx, .weft, .tosa, .vgf), registers the operators of the ops
    files `custom_ops`, prepares custom shader nodes, verifies, and writes `out` by its extension
    (.vgf, .tosa or .weft); with `iospec`, also the model's IOSpec (YAML), `latched` inputs and the
    transport of `target`."""
    for f in custom_ops or []:
        register_ops(f)
    _weft.compile(str(src), str(out), str(iospec), list(latched or []), str(target),
                  {k: [int(d) for d in v] for k, v in (shapes or {}).items()})


def import_onnx(path: str, shapes: Optional[Mapping[str, Sequence[int]]] = None) -> str:
    """The ONNX model lowered to TOSA, in Weft's text form (weft import)."""
    return _weft.import_onnx(str(path), {k: [int(d) for d in v] for k, v in (shapes or {}).items()})


def register_ops(path: str) -> List[str]:
    """Registers the custom operators of an ops file (docs/custom-ops.md); returns their names."""
    return list(_weft.register_ops(str(path)))


def register_op(operator_name: str, domain_name: str, *, shader: Mapping[str, Any],
                workgroup_size: Sequence[int], inputs: Sequence[Mapping[str, Any]],
                outputs: Sequence[Mapping[str, Any]], invocations: Sequence[Any],
                push_constants: Optional[Sequence[Mapping[str, Any]]] = None,
                replaces: Optional[Mapping[str, str]] = None,
                attributes: Optional[Mapping[str, Sequence[str]]] = None,
                base_dir: Optional[str] = None) -> str:
    """Registers one custom operator from Python, with the fields of an ops file entry
    (docs/custom-ops.md): `shader` ({"source": ...}, {"file": ...} or {"spirv_file": ...}, with
    "language" and "entry_point"), `workgroup_size`, `inputs`/`outputs` resources, `invocations`,
    `push_constants`, `replaces` ({"onnx_domain": ..., "onnx_op_type": ...}) and `attributes`.
    The shader is compiled and checked now; errors are weft.Error naming the field. Relative
    shader files are read against `base_dir` (default: the current directory). Registering the
    same (domain_name, operator_name) again replaces it. Returns the operator name."""
    entry: Dict[str, Any] = {
        "operator_name": operator_name,
        "domain_name": domain_name,
        "shader": dict(shader),
        "workgroup_size": [int(v) for v in workgroup_size],
        "inputs": [dict(r) for r in inputs],
        "outputs": [dict(r) for r in outputs],
        "invocations": list(invocations),
    }
    if push_constants is not None:
        entry["push_constants"] = [dict(p) for p in push_constants]
    if replaces is not None:
        entry["replaces"] = dict(replaces)
    if attributes is not None:
        entry["attributes"] = {k: list(v) for k, v in attributes.items()}
    origin = f"weft.register_op('{domain_name}::{operator_name}')"
    text = json.dumps({"custom_ops": [entry]})
    return list(_weft.register_ops_text(text, origin, str(base_dir) if base_dir is not None else os.getcwd()))[0]


def unregister_op(domain_name: str, operator_name: str) -> bool:
    """Removes a registration; False when there was none."""
    return bool(_weft.unregister_op(domain_name, operator_name))


def backends() -> List[Tuple[str, str, str]]:
    """Every backend of this build: (name, description, why unavailable here or "")."""
    return [tuple(b) for b in _weft.backends()]
