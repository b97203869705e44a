"""graft.compare: two backends, two models, or graft against ONNX Runtime, output by output or layer by
layer (the Python side of `graft run --compare-backend/--compare-model/--layerwise`)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def mlp(b1_shift=0.0):
    """y = Sigmoid(Relu(x W1 + b1) W2 + b2), x: float32[2, 4]; b1_shift changes b1[3] (layer fc1_bias)."""
    w1 = np.sin(0.7 * np.arange(32) + 0.3).reshape(4, 8).astype(np.float32)
    w2 = np.cos(0.9 * np.arange(24)).reshape(8, 3).astype(np.float32)
    b1 = (0.05 * np.arange(8) + 1.0).astype(np.float32)
    b1[3] += b1_shift
    b2 = np.array([0.1, -0.2, 0.3], np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="fc1"),
             helper.make_node("Add", ["h1", "b1"], ["h1b"], name="fc1_bias"),
             helper.make_node("Relu", ["h1b"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="fc2"),
             helper.make_node("Add", ["h2", "b2"], ["h2b"], name="fc2_bias"),
             helper.make_node("Sigmoid", ["h2b"], ["y"], name="sigmoid")]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "b1"), (w2, "W2"), (b2, "b2"))]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_layerwise_names_the_changed_layer_first(graft_mod):
    r = graft_mod.compare(mlp(), mlp(0.25), layerwise=True, seed=1)
    assert not r.passed
    first = r.first_divergence
    assert (first["layer"], first["op_type"], first["tensor"]) == ("fc1_bias", "Add", "h1b"), first
    assert first["worst_at"] == [0, 3] and abs(first["max_abs_error"] - 0.25) < 1e-6
    assert [t["layer"] for t in r.tensors] == ["fc1", "fc1_bias", "relu1", "fc2", "fc2_bias", "sigmoid"]
    assert r.tensors[0]["status"] == "match"
    assert "first divergence: layer 'fc1_bias' (Add)" in str(r)


def test_same_model_matches_and_per_tensor_tolerance(graft_mod):
    r = graft_mod.compare(mlp(), reference_device="cpu", layerwise=True)
    assert r.passed and r.report["summary"]["matched"] == 6
    assert r.report["format"] == "graft-compare"
    x = np.ones((2, 4), np.float32)
    assert not graft_mod.compare(mlp(), mlp(0.25), inputs={"x": x}).passed
    loose = graft_mod.compare(mlp(), mlp(0.25), inputs={"x": x}, atol={"": 1e-5, "y": 0.5})
    assert loose.passed, str(loose)
    assert loose.tensors[0]["atol"] == 0.5


def test_onnxruntime_older_than_onnx_gets_its_own_ir_version(graft_mod, monkeypatch):
    """An onnxruntime that refuses the IR version a newer onnx stamped on the model (onnx 1.23 writes 14,
    onnxruntime 1.30 reads up to 13) runs it stamped with the version it names; other errors stand.
    A stand-in onnxruntime module (this test needs none installed) records what it was given."""
    import sys
    import types
    seen = []

    class Session:
        def __init__(self, model, providers):
            proto = onnx.load_from_string(model)
            seen.append(proto.ir_version)
            if proto.ir_version > 7:
                raise RuntimeError(f"[ONNXRuntimeError] : 1 : FAIL : Unsupported model IR version: "
                                   f"{proto.ir_version}, max supported IR version: 7")

        def get_outputs(self):
            return [types.SimpleNamespace(name="y")]

        def run(self, names, feeds):
            return [np.zeros((2, 3), np.float32)]

    monkeypatch.setitem(sys.modules, "onnxruntime", types.SimpleNamespace(InferenceSession=Session))
    model = onnx.load_from_string(mlp())
    model.ir_version = 9
    r = graft_mod.compare(model.SerializeToString(), reference_device="onnxruntime")
    assert seen == [9, 7]
    assert not r.passed  # the stand-in's zeros are not the model's outputs: its answer was used

    def refuse(model, providers):
        raise RuntimeError("[ONNXRuntimeError] : 10 : INVALID_GRAPH : something else")

    monkeypatch.setitem(sys.modules, "onnxruntime", types.SimpleNamespace(InferenceSession=refuse))
    with pytest.raises(RuntimeError, match="something else"):
        graft_mod.compare(mlp(), reference_device="onnxruntime")


def test_bad_tolerance_name(graft_mod):
    with pytest.raises(graft_mod.GraftError, match="rtol/atol name 'nosuch', which is not an output of the model"):
        graft_mod.compare(mlp(), rtol={"nosuch": 1e-2})


def test_against_onnxruntime(graft_mod):
    pytest.importorskip("onnxruntime")
    r = graft_mod.compare(mlp(), reference_device="onnxruntime", layerwise=True)
    assert r.passed, str(r)
    assert r.report["summary"]["matched"] == 6
