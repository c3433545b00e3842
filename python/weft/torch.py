"""PyTorch front door: `weft.torch.compile(module, example_inputs)` returns a callable that takes and
returns torch tensors and runs the module with Weft.

The module is exported to ONNX by torch's own exporter (torch.onnx.export, opset 17; Debian's torch
1.13 and newer), then imported, lowered to TOSA, verified and partitioned by Weft, like
`weft.load("model.onnx")`. The example inputs fix the shapes. Inputs are converted to numpy without
a copy where they are contiguous CPU tensors; outputs come back as torch tensors over Weft's
buffers (torch.from_numpy, no copy).
"""
from __future__ import annotations

import os
import tempfile
from typing import Optional, Sequence

import numpy as np

from . import Model, Session, load

__all__ = ["compile", "CompiledModule"]


class CompiledModule:
    """A torch module compiled by Weft. Calling it runs one session (one call at a time per
    CompiledModule; create several for parallel threads)."""

    def __init__(self, model: Model, session: Session, input_names: Sequence[str], output_names: Sequence[str]):
        self.model = model
        self._session = session
        self._inputs = list(input_names)
        self._outputs = list(output_names)

    def __call__(self, *args):
        import torch
        if len(args) != len(self._inputs):
            raise TypeError(f"expected {len(self._inputs)} inputs ({', '.join(self._inputs)}), got {len(args)}")
        feeds = {}
        for name, a in zip(self._inputs, args):
            t = a.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            feeds[name] = np.ascontiguousarray(t.numpy())
        out = self._session.run(feeds)
        results = [torch.from_numpy(out[n]) for n in self._outputs]
        return results[0] if len(results) == 1 else tuple(results)

    def explain(self) -> str:
        return self.model.explain()


def compile(module, example_inputs, backends: Optional[Sequence[str]] = None, threads: int = 1,
            opset: int = 17, keep_onnx: Optional[str] = None) -> CompiledModule:
    """Exports `module` with `example_inputs` (a tensor or a tuple of tensors) to ONNX and loads it
    with Weft. `backends` as for weft.load; `keep_onnx`: also write the exported model there."""
    import torch
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    input_names = [f"input_{i}" for i in range(len(example_inputs))]
    module = module.eval()
    with torch.no_grad():
        reference = module(*example_inputs)
    n_out = len(reference) if isinstance(reference, (tuple, list)) else 1
    output_names = [f"output_{i}" for i in range(n_out)]
    with tempfile.TemporaryDirectory() as tmp:
        path = keep_onnx or os.path.join(tmp, "module.onnx")
        torch.onnx.export(module, example_inputs, path, input_names=input_names, output_names=output_names,
                          opset_version=opset, do_constant_folding=True)
        model = load(path, backends=backends)
    return CompiledModule(model, model.session(threads=threads), input_names, output_names)
