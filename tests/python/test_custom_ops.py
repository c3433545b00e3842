"""Custom operators from Python: weft.register_op with the fields of an ops file, and a
torch.library operator given a shader with weft.torch.register_custom_op, exported inside a torch
module, run by Weft on Vulkan (lavapipe in CI) and compared with the operator's CPU implementation."""
import os
import subprocess
import sys

import numpy as np
import pytest

import weft

SOURCE = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.path.join(SOURCE, "..", "shared")

SCALE = """
#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int n; float alpha; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < uint(pc.n)) y[i] = pc.alpha * x[i];
}
"""


def vulkan_or_skip():
    for name, _, unavailable in weft.backends():
        if name == "vulkan":
            if unavailable:
                pytest.skip(f"no Vulkan device here: {unavailable}")
            return
    pytest.skip("this build has no Vulkan backend")


def scale_fields(**over):
    fields = dict(shader={"source": SCALE}, workgroup_size=[32, 1, 1], inputs=[{}],
                  outputs=[{"shape": ["in0[0]"]}],
                  push_constants=[{"name": "n", "value": "in0[0]"}, {"name": "alpha", "value": "attr.alpha|2.0"}],
                  invocations=["in0[0]"])
    fields.update(over)
    return fields


def test_register_op_replaces_an_onnx_node_and_runs_it(tmp_path):
    onnx = pytest.importorskip("onnx")
    vulkan_or_skip()
    from onnx import TensorProto, helper
    assert weft.register_op("scale", "test.py", replaces={"onnx_domain": "test.py", "onnx_op_type": "Scale"},
                            **scale_fields()) == "scale"
    try:
        node = helper.make_node("Scale", ["x"], ["y"], domain="test.py", alpha=0.25)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("test.py", 1)])
        onnx.save(model, str(tmp_path / "scale.onnx"))
        m = weft.load(str(tmp_path / "scale.onnx"))
        assert [k.pattern for k in m.explain().kernels] == ["CUSTOM"]
        x = np.linspace(-3, 3, 100, dtype=np.float32)
        np.testing.assert_array_equal(m.run({"x": x})["y"], np.float32(0.25) * x)
    finally:
        assert weft.unregister_op("test.py", "scale")
    assert not weft.unregister_op("test.py", "scale")


def test_register_op_errors_name_the_field():
    with pytest.raises(weft.Error) as e:
        weft.register_op("scale", "test.py", **scale_fields(inputs=[{"bindng": 0}]))
    assert e.value.code == "invalid-argument" or e.value.code == "parse"
    assert "unknown key 'bindng'" in str(e.value) and "did you mean 'binding'" in str(e.value)
    assert "weft.register_op('test.py::scale')" in str(e.value)
    with pytest.raises(weft.Error) as e:
        weft.register_op("scale", "test.py", **scale_fields(shader={"source": "#version 450\nvoid main() { x = 1; }"}))
    assert "'x' : undeclared identifier" in str(e.value)
    assert not weft.unregister_op("test.py", "scale")  # nothing was registered


def torch_or_skip():
    return pytest.importorskip("torch")


def test_torch_library_op_with_a_shader_end_to_end(tmp_path):
    torch = torch_or_skip()
    vulkan_or_skip()
    sys.path.insert(0, os.path.join(SOURCE, "examples", "python"))
    try:
        import custom_op  # defines weft_example::channel_rms_norm and registers its shader
    finally:
        sys.path.pop(0)
    import weft.torch as wt
    torch.manual_seed(1)
    net = custom_op.Net().eval()
    x = torch.randn(2, 3, 20, 12)
    compiled = wt.compile(net, x, keep_onnx=str(tmp_path / "net.onnx"))
    y = compiled(x)
    with torch.no_grad():
        want = net(x)
    torch.testing.assert_close(y, want, atol=1e-5, rtol=1e-5)
    # The operator ran as a shader on Vulkan, and the exported node carried its attribute.
    shader = [k for k in compiled.explain().kernels if k.pattern == "CUSTOM"]
    assert len(shader) == 1 and shader[0].backend == "vulkan"
    import onnx
    nodes = [n for n in onnx.load(str(tmp_path / "net.onnx")).graph.node if n.domain == "weft_example"]
    assert [(n.op_type, [a.name for a in n.attribute]) for n in nodes] == [("channel_rms_norm", ["eps"])]

    # Compiled to a VGF: the shader is a COMPUTE segment between the graph segments, and the file
    # runs to the same result.
    vgf = tmp_path / "net.vgf"
    weft.compile(str(tmp_path / "net.onnx"), str(vgf))
    z = weft.load(str(vgf)).run({"input_0": x.numpy()})["output_0"]
    np.testing.assert_allclose(z, want.numpy(), atol=1e-5, rtol=1e-5)
    dump = os.path.join(SHARED, "tools", "bin", "vgf_dump")
    if os.path.exists(dump):
        import json
        subprocess.run([dump, "--input", str(vgf), "--output", str(tmp_path / "net.json")], check=True,
                       capture_output=True)
        modules = json.loads((tmp_path / "net.json").read_text())["modules"]
        assert [m["type"] for m in modules] == ["GRAPH", "COMPUTE", "GRAPH"]
        assert modules[1]["name"] == "channel_rms_norm"
    else:
        print(f"vgf_dump not found at {dump}: the VGF's segments were not checked by Arm's tool")


def test_register_custom_op_checks_the_schema():
    torch = torch_or_skip()
    import torch.library
    import weft.torch as wt
    with pytest.raises(ValueError, match="is not defined in torch"):
        wt.register_custom_op("weft_test_nowhere::op", **scale_fields())
    lib = torch.library.Library("weft_test_schema", "DEF")
    lib.define("two(Tensor a, Tensor b) -> Tensor")
    lib.define("opt(Tensor a, Generator? g) -> Tensor")
    with pytest.raises(ValueError, match="2 Tensor arguments but 1 input resources"):
        wt.register_custom_op("weft_test_schema::two", **scale_fields())
    with pytest.raises(ValueError, match=r"argument .g. has type Optional\[Generator\]|argument .g. has type Generator\?"):
        wt.register_custom_op("weft_test_schema::opt", **scale_fields())
    # A shader error is Weft's, raised before torch's exporter learns of the operator.
    lib.define("one(Tensor a, float alpha) -> Tensor")
    with pytest.raises(weft.Error, match="undeclared identifier"):
        wt.register_custom_op("weft_test_schema::one",
                              **scale_fields(shader={"source": "#version 450\nvoid main() { x = 1; }"}))
    assert "weft_test_schema" not in wt.custom_opsets()


@pytest.mark.parametrize("script", ["custom_op.py"])
def test_example_runs(script):
    torch_or_skip()
    r = subprocess.run([sys.executable, os.path.join(SOURCE, "examples", "python", script)], capture_output=True,
                       text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max |weft - torch|" in r.stdout or "skipped: no Vulkan" in r.stdout
