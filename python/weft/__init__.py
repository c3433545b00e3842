"""Weft for Python: load a model (.vgf, .tosa, .weft or .onnx) and run it on numpy arrays.

    import numpy as np, weft
    model = weft.load("model.onnx", backends=["onednn", "reference"])
    print(model.inputs)                      # [IoInfo(name='input', dtype='f32', shape=(1, 3, 224, 224))]
    session = model.session(threads=2)
    outputs = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})

Every failure raises weft.Error, carrying the code ("invalid-argument", "verify", ...) and the
location (file, node, operand) of the C++ error. See docs/python.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import _weft

__all__ = ["Error", "IoInfo", "Model", "Session", "load", "backends"]


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


class Session:
    """One execution context of a model: its own memory, runs one call at a time. Sessions of one
    model run in parallel from several threads (the GIL is released while running)."""

    def __init__(self, model: "Model", threads: int = 1, max_loop_iterations: int = 0, deadline_ms: float = 0.0,
                 max_memory_bytes: int = 0):
        self._model = model
        self._session = _weft.Session(model._model, threads, max_loop_iterations, deadline_ms, max_memory_bytes)

    def run(self, feeds: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Runs the model on `feeds` (every input by name: arrays of its dtype and shape,
        C-contiguous) and returns every output by name, as arrays over the runtime's buffers."""
        return self._session.run(dict(feeds))


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

    def explain(self) -> str:
        """Which backend runs each node, and why the others did not (weft run --explain)."""
        return self._model.explain()

    def memory_stats(self) -> Dict[str, int]:
        """The memory plan: arena bytes, intermediate bytes, constants, workspaces."""
        return self._model.memory_stats()


def load(path: str, backends: Optional[Sequence[str]] = None, device: str = "",
         shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Model:
    """Loads a .vgf, .tosa, .weft or .onnx model. `backends`: names in priority order (default:
    every backend available here, fastest first); `device`: the Vulkan device for shader nodes;
    `shapes`: static shapes of ONNX inputs with dynamic dimensions."""
    return Model(_weft.load(str(path), list(backends or []), device,
                            {k: [int(d) for d in v] for k, v in (shapes or {}).items()}))


def backends() -> List[Tuple[str, str, str]]:
    """Every backend of this build: (name, description, why unavailable here or "")."""
    return [tuple(b) for b in _weft.backends()]
