"""The Python package against the C++ runtime: loading every model format, numpy round trips for
every element type, zero-copy outputs, errors carrying code and location, and sessions of one
model running in parallel threads. Run by ctest (`python`) with PYTHONPATH=build/python."""
import os
import subprocess
import threading

import numpy as np
import pytest

import weft

SOURCE = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("WEFT_CLI", "weft")
EXAMPLE = os.path.join(SOURCE, "examples", "tiny_cnn")


def image():
    return np.load(os.path.join(EXAMPLE, "image.npy"))


def expected():
    return np.load(os.path.join(EXAMPLE, "expected_logits.npy"))


def test_inputs_outputs_and_a_run():
    m = weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"))
    assert [(i.name, i.dtype, i.shape) for i in m.inputs] == [("image", "f32", (1, 8, 8, 3))]
    assert m.inputs[0].numpy_dtype == np.float32
    assert [(o.name, o.shape) for o in m.outputs] == [("logits", (1, 10))]
    out = m.session(threads=2).run({"image": image()})
    assert set(out) == {"logits"}
    np.testing.assert_allclose(out["logits"], expected(), atol=1e-4)
    assert "partition of graph 'main'" in m.explain()
    assert m.memory_stats()["arena_bytes"] > 0


def test_reduced_precision_keeps_the_interface():
    m = weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"), backends=["reference"], precision="fp16")
    assert [(i.name, i.dtype) for i in m.inputs] == [("image", "f32")]
    assert str(m.explain()).startswith("note: precision fp16: ")
    out = m.run({"image": image()})["logits"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected(), atol=2e-2)  # fp16 keeps about 3 decimal digits
    assert np.abs(out - expected()).max() > 0  # it did run in fp16
    with pytest.raises(weft.Error, match="precision must be 'fp32' or 'fp16', got 'bf16'"):
        weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"), precision="bf16")


@pytest.mark.parametrize("ext", ["vgf", "tosa"])
def test_every_model_file_the_cli_writes(tmp_path, ext):
    path = tmp_path / f"m.{ext}"
    subprocess.run([CLI, "compile", os.path.join(EXAMPLE, "tiny_cnn.weft"), "-o", str(path)], check=True,
                   capture_output=True)
    out = weft.load(str(path), backends=["reference"]).run({"image": image()})
    np.testing.assert_allclose(out["logits"], expected(), atol=1e-4)


@pytest.mark.parametrize("dtype,numpy_dtype,values", [
    ("bool", np.bool_, [True, False, True]),
    ("i8", np.int8, [-128, 0, 127]),
    ("i16", np.int16, [-32768, 1, 32767]),
    ("i32", np.int32, [-2**31, 5, 2**31 - 1]),
    ("f16", np.float16, [0.5, -np.inf, 65504]),
    ("f32", np.float32, [1e-30, -0.0, np.nan]),
])
def test_numpy_round_trip_of_every_element_type(tmp_path, dtype, numpy_dtype, values):
    path = tmp_path / "id.weft"
    path.write_text(f"graph @main(%x: {dtype}[3]) -> (%y) {{\n  %y: {dtype}[3] = IDENTITY(%x)\n  return %y\n}}\n")
    m = weft.load(str(path))
    assert m.inputs[0].numpy_dtype == np.dtype(numpy_dtype)
    x = np.array(values, dtype=numpy_dtype)
    y = m.run({"x": x})["y"]
    assert y.dtype == np.dtype(numpy_dtype)
    assert y.tobytes() == x.tobytes()


def test_outputs_are_written_in_place_and_outlive_the_session():
    m = weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"))
    s = m.session()
    y = s.run({"image": image()})["logits"]
    # Each run writes into new arrays (bound as the outputs' memory), so a later run leaves an
    # earlier result alone, and a result outlives its session.
    z = s.run({"image": np.zeros_like(image())})["logits"]
    assert y.flags["OWNDATA"] and y.flags["WRITEABLE"] and not np.shares_memory(y, z)
    del s, m
    np.testing.assert_allclose(y, expected(), atol=1e-4)


def test_explain_and_profile_are_data():
    m = weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"), backends=["reference"])
    e = m.explain()
    assert e.backends == ("reference",)
    assert e.kernels and all(k.backend == "reference" for k in e.kernels)
    assert any(k.pattern.startswith("CONV2D") for k in e.kernels)
    assert all(k.nodes for k in e.kernels)
    assert "partition of graph 'main'" in str(e)
    s = m.session()
    s.run({"image": image()})
    assert s.profile() == []  # off by default
    s.profiling = True
    s.run({"image": image()})
    prof = s.profile()
    assert [p.pattern for p in prof if not p.device] == [k.pattern for k in e.kernels]
    assert all(p.microseconds >= 0 and p.backend == "reference" for p in prof)


def test_errors_carry_code_and_location(tmp_path):
    m = weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"))
    x = image()
    with pytest.raises(weft.Error) as e:
        m.run({"image": x.astype(np.float64)})
    assert e.value.code == "invalid-argument" and e.value.operand == "image"
    assert "dtype float64, expected float32" in str(e.value)
    with pytest.raises(weft.Error, match=r"got shape \[1,8,8\]"):
        m.run({"image": x[..., 0]})
    with pytest.raises(weft.Error, match="not C-contiguous"):
        m.run({"image": np.asfortranarray(np.broadcast_to(x, (1, 8, 8, 3)).copy().transpose(0, 2, 1, 3))})
    with pytest.raises(weft.Error, match="inputs not given: image f32"):
        m.run({})
    with pytest.raises(weft.Error) as e:
        m.run({"img": x})
    assert e.value.code == "not-found" and "image" in str(e.value)
    with pytest.raises(weft.Error) as e:
        weft.load(str(tmp_path / "missing.onnx"))
    assert e.value.file.endswith("missing.onnx")
    bad = tmp_path / "bad.weft"
    bad.write_text("graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[3] = ABS(%x)\n  return %y\n}\n")
    with pytest.raises(weft.Error) as e:
        weft.load(str(bad))
    assert e.value.code == "verify" and e.value.file.endswith("bad.weft")
    assert (e.value.graph, e.value.node, e.value.operand) == ("main", "%y", "output")


def test_sessions_run_in_parallel_threads():
    m = weft.load(os.path.join(EXAMPLE, "tiny_cnn.weft"))
    x, want = image(), expected()
    errors = []

    def work():
        try:
            s = m.session()
            for _ in range(20):
                np.testing.assert_allclose(s.run({"image": x})["logits"], want, atol=1e-4)
        except Exception as e:  # reported below: a thread's failure must fail the test
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_backends_are_listed():
    names = [b[0] for b in weft.backends()]
    assert "reference" in names


ADD = """graph @main(%B: f16[60], %C: f16[60]) -> (%A) {
  %A: f16[60] = ADD(%B, %C)
  return %A
}
"""


def test_compile_writes_every_format_and_the_iospec(tmp_path):
    src = tmp_path / "add.weft"
    src.write_text(ADD)
    for ext in ("vgf", "tosa", "weft"):
        out = tmp_path / f"out.{ext}"
        weft.compile(str(src), str(out), iospec=str(tmp_path / f"{ext}.yaml"), latched=["C"])
        assert out.exists() and (tmp_path / f"{ext}.yaml").exists()
        b = np.arange(60, dtype=np.float16)
        y = weft.load(str(out)).run({"B": b, "C": b})["A"]
        np.testing.assert_array_equal(y, b + b)
    with pytest.raises(weft.Error, match="must end in .vgf, .tosa or .weft"):
        weft.compile(str(src), str(tmp_path / "out.bin"))


def test_stream_enforces_the_sequence_and_keeps_latched_inputs(tmp_path):
    src = tmp_path / "add.weft"
    src.write_text(ADD)
    weft.compile(str(src), str(tmp_path / "add.vgf"), iospec=str(tmp_path / "add.yaml"), latched=["C"])
    model = weft.load(str(tmp_path / "add.vgf"))
    stream = weft.Stream(model, str(tmp_path / "add.yaml"))
    b = np.arange(60, dtype=np.float16)
    c = np.full(60, 0.5, dtype=np.float16)
    stream.write("C", c)
    stream.write("B", b)
    np.testing.assert_array_equal(stream.read("A"), b + c)
    # Reading before the next input is an error that leaves the session as it was.
    before = stream.expected()
    with pytest.raises(weft.Error):
        stream.read("A")
    assert stream.expected() == before
    stream.write("B", b * 2)  # C stays latched
    np.testing.assert_array_equal(stream.read("A"), b * 2 + c)
    with pytest.raises(weft.Error, match="takes 60 elements"):
        stream.write("B", b[:10])


def test_import_onnx_returns_the_text_form(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    text = weft.import_onnx(str(path))
    assert "graph @main" in text and "CLAMP" in text
    y = weft.load(str(path)).run({"x": np.array([[-1, 2, -3], [4, -5, 6]], np.float32)})["y"]
    np.testing.assert_array_equal(y, [[0, 2, 0], [4, 0, 6]])


def test_unsigned_onnx_inputs_and_outputs_are_numpy_unsigned(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["f"]),
             helper.make_node("Relu", ["f"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"])]
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
             helper.make_tensor("z", TensorProto.UINT8, [], [128])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [5])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [5])], inits)
    path = tmp_path / "qdq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    model = weft.load(str(path))
    x = np.array([0, 127, 128, 200, 255], np.uint8)
    y = model.run({"x": x})["y"]
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y, np.maximum(x, 128))  # values below the zero point clip to it
    with pytest.raises(weft.Error, match="expected uint8"):
        model.run({"x": x.astype(np.int8)})


@pytest.mark.parametrize("script", ["run_model.py", "stream.py"])
def test_examples_run(script):
    import sys
    path = os.path.join(SOURCE, "examples", "python", script)
    r = subprocess.run([sys.executable, path], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr


def test_torch_modules_compiled_through_onnx(tmp_path):
    torch = pytest.importorskip("torch")
    import weft.torch as wt
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(8, 4))
    x = torch.randn(2, 3, 16, 16)
    compiled = wt.compile(net, x, keep_onnx=str(tmp_path / "net.onnx"))
    y = compiled(x)
    assert isinstance(y, torch.Tensor) and y.shape == (2, 4)
    torch.testing.assert_close(y, net(x).detach(), atol=1e-5, rtol=1e-5)
    assert (tmp_path / "net.onnx").exists()

    class TwoWay(torch.nn.Module):
        def forward(self, a, b):
            return a * b + 1, torch.tanh(a - b)

    a, b = torch.randn(3, 5), torch.randn(3, 5)
    two = wt.compile(TwoWay(), (a, b))
    p, q = two(a, b)
    torch.testing.assert_close(p, a * b + 1)
    torch.testing.assert_close(q, torch.tanh(a - b), atol=1e-6, rtol=1e-6)
    with pytest.raises(TypeError, match="expected 2 inputs"):
        two(a)


def test_dynamic_batch_is_specialized_per_shape(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    b = numpy_helper.from_array(np.array([1, 2, 3], np.float32), "b")
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], initializer=[b])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    m = weft.load(str(path))
    assert m.is_dynamic and m.inputs[0].shape == (-1, 3) and m.specializations == 0
    s = m.session()
    for n in (2, 7, 2):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(s.run({"x": x})["y"], x + np.array([1, 2, 3], np.float32))
    assert m.specializations == 2
    with pytest.raises(weft.Error, match=r"got shape \[2,4\]"):
        s.run({"x": np.zeros((2, 4), np.float32)})
