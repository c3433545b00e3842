"""PyTorch front door: `weft.torch.compile(module, example_inputs)` returns a callable that takes and
returns torch tensors and runs the module with Weft.

The module is exported to ONNX by torch's own exporter (torch.onnx.export, opset 17; Debian's torch
1.13 and newer), then imported, lowered to TOSA, verified and partitioned by Weft, like
`weft.load("model.onnx")`. The example inputs fix the shapes. Inputs are converted to numpy without
a copy where they are contiguous CPU tensors; outputs come back as torch tensors over Weft's
buffers (torch.from_numpy, no copy).

Custom operators: an operator defined with `torch.library` (`mylib::op`, a schema and a CPU
implementation) is given a shader with `weft.torch.register_custom_op("mylib::op", shader=...,
...)`. The exporter then writes it as a node of ONNX domain `mylib` (its tensor arguments as
inputs, its other arguments as attributes), Weft's importer turns that node into a `tosa.CUSTOM`
node carrying the shader payload, and it runs as a compute shader (a COMPUTE segment in a VGF).
"""
from __future__ import annotations

import inspect
import os
import tempfile
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import Model, Session, load, register_op

__all__ = ["compile", "export_onnx", "CompiledModule", "register_custom_op", "custom_opsets"]

# The ONNX domains of the torch.library operators given a shader here, with their versions.
_custom_opset_versions: Dict[str, int] = {}


def _strip_optional(t: str) -> str:
    """"Optional[float]" (torch 1.13's spelling) or "float?" -> "float"."""
    if t.startswith("Optional[") and t.endswith("]"):
        return t[len("Optional["):-1]
    return t.rstrip("?")


def _onnx_attribute(arg_type: str, name: str):
    """How a non-tensor schema argument becomes an ONNX attribute: (attribute key, const kind)."""
    t = _strip_optional(arg_type)
    if t == "float":
        return name + "_f", "f"
    if t in ("int", "SymInt", "bool"):
        return name + "_i", "i"
    if t == "str":
        return name + "_s", "s"
    if t in ("List[int]", "int[]", "SymInt[]", "List[SymInt]"):
        return name + "_i", "is"
    if t in ("List[float]", "float[]"):
        return name + "_f", "fs"
    return None, None


def register_custom_op(qualname: str, *, shader: Mapping[str, Any], workgroup_size: Sequence[int],
                       inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Mapping[str, Any]],
                       invocations: Sequence[Any], push_constants: Optional[Sequence[Mapping[str, Any]]] = None,
                       attributes: Optional[Mapping[str, Sequence[str]]] = None,
                       base_dir: Optional[str] = None, opset_version: int = 1) -> None:
    """Gives the `torch.library` operator `qualname` ("mylib::op", already defined with its schema)
    a Vulkan shader, with the fields of an ops-file entry (docs/custom-ops.md): `inputs` has one
    resource per Tensor argument of the schema, in order; `outputs` one per returned Tensor, with
    its `shape` (and `dtype`) expressions. The schema's other arguments (int, float, bool, str and
    lists of int or float) become attributes of the exported node, read in expressions as
    `attr.<argument name>`.

    Registers the operator with Weft (domain `mylib`, operator `op`, replacing ONNX nodes of that
    domain and type) and an ONNX symbolic function with torch's exporter, so that weft.torch.compile
    and torch.onnx.export write it as such a node."""
    import torch
    from torch.onnx import symbolic_helper

    if "::" not in qualname:
        raise ValueError(f"custom operator '{qualname}': expected a qualified name 'namespace::name'")
    namespace, name = qualname.split("::", 1)
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        schema = packet.default._schema
    except (AttributeError, RuntimeError) as e:
        raise ValueError(f"custom operator '{qualname}' is not defined in torch (define it with "
                         f"torch.library.Library('{namespace}', 'DEF').define(...) first): {e}") from None

    args = []  # (name, "tensor" | (attribute key, kind))
    n_tensors = 0
    for a in schema.arguments:
        t = str(a.type)
        if _strip_optional(t) == "Tensor":
            args.append((a.name, "tensor"))
            n_tensors += 1
            continue
        key, kind = _onnx_attribute(t, a.name)
        if key is None:
            raise ValueError(f"custom operator '{qualname}': argument '{a.name}' has type {t}, which has no ONNX "
                             "form (Tensor, int, float, bool, str and lists of int or float do)")
        args.append((a.name, (key, kind)))
    n_results = len(schema.returns)
    for r in schema.returns:
        if str(r.type) != "Tensor":
            raise ValueError(f"custom operator '{qualname}': it returns {r.type}; only Tensor results can run as a shader")
    if len(inputs) != n_tensors:
        raise ValueError(f"custom operator '{qualname}': the schema has {n_tensors} Tensor arguments but "
                         f"{len(inputs)} input resources were given")
    if len(outputs) != n_results:
        raise ValueError(f"custom operator '{qualname}': the schema returns {n_results} tensors but "
                         f"{len(outputs)} output resources were given")

    # Weft first: a shader that does not compile or a bad field fails before torch learns anything.
    register_op(name, namespace, shader=shader, workgroup_size=workgroup_size, inputs=inputs, outputs=outputs,
                invocations=invocations, push_constants=push_constants,
                replaces={"onnx_domain": namespace, "onnx_op_type": name}, attributes=attributes,
                base_dir=base_dir)

    def symbolic(g, *values):
        tensors, attrs = [], {}
        for (arg_name, how), v in zip(args, values):
            if how == "tensor":
                if v is not None and not symbolic_helper._is_none(v):
                    tensors.append(v)
                continue
            key, kind = how
            c = symbolic_helper._maybe_get_const(v, kind)
            if symbolic_helper._is_value(c):
                raise RuntimeError(f"custom operator '{qualname}': argument '{arg_name}' must be a constant "
                                   "when exported to ONNX (it becomes an attribute)")
            if c is None:
                continue
            if kind == "i" and isinstance(c, bool):
                c = int(c)
            attrs[key] = c
        return g.op(f"{namespace}::{name}", *tensors, outputs=n_results, **attrs)

    torch.onnx.register_custom_op_symbolic(qualname, symbolic, opset_version)
    _custom_opset_versions[namespace] = opset_version


def custom_opsets() -> Dict[str, int]:
    """The ONNX domains of the operators given a shader here, with their versions: pass it to
    torch.onnx.export(custom_opsets=...) when exporting yourself."""
    return dict(_custom_opset_versions)


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


def _export_kwargs(torch) -> Dict[str, Any]:
    kwargs: Dict[str, Any] = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: it knows register_custom_op_symbolic
    if _custom_opset_versions:
        kwargs["custom_opsets"] = dict(_custom_opset_versions)
    return kwargs


def export_onnx(module, example_inputs, path: str, opset: int = 17) -> Tuple[List[str], List[str]]:
    """Exports `module` at `example_inputs` (a tensor or a tuple of tensors) to the ONNX file
    `path` as weft.torch.compile does (inputs input_0.., outputs output_0.., the custom operators
    registered here as nodes of their domains), for `weft.compile` to a .vgf or for other tools.
    Returns the input and output names."""
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
    with warnings.catch_warnings():
        # torch cannot infer a custom node's output shape; Weft computes it from the registration.
        for ns in _custom_opset_versions:
            warnings.filterwarnings("ignore", message=f"The shape inference of {ns}::", category=UserWarning)
        torch.onnx.export(module, example_inputs, str(path), input_names=input_names, output_names=output_names,
                          opset_version=opset, do_constant_folding=True, **_export_kwargs(torch))
    return input_names, output_names


def compile(module, example_inputs, backends: Optional[Sequence[str]] = None, threads: int = 1,
            opset: int = 17, keep_onnx: Optional[str] = None) -> CompiledModule:
    """Exports `module` with `example_inputs` (a tensor or a tuple of tensors) to ONNX and loads it
    with Weft. `backends` as for weft.load; `keep_onnx`: also write the exported model there."""
    with tempfile.TemporaryDirectory() as tmp:
        path = keep_onnx or os.path.join(tmp, "module.onnx")
        input_names, output_names = export_onnx(module, example_inputs, path, opset)
        model = load(path, backends=backends)
    return CompiledModule(model, model.session(threads=threads), input_names, output_names)
