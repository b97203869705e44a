"""graft.Engine(max_memory=): builds and runs keep graft's host tensors under the limit, and refuse
with a GraftError naming the limit when they cannot."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import graft  # noqa: E402


def _model(path, n):
    """y = Expand(x, [n, n]) * 2: a tiny model whose run allocates n*n floats."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [n, n])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e"]), helper.make_node("Mul", ["e", "two"], ["y"])]
    graph = helper.make_graph(nodes, "expand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], [shape, two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def test_run_under_the_limit_works_and_over_it_is_a_clear_error(tmp_path):
    path = str(tmp_path / "expand.onnx")
    _model(path, 1024)  # Expand and Mul outputs: 4 MiB each
    x = np.ones((1, 1), np.float32)
    roomy = graft.Engine.build(path, max_memory=64 << 20)
    np.testing.assert_array_equal(roomy.run({"x": x})["y"], np.full((1024, 1024), 2.0, np.float32))
    tight = graft.Engine.build(path, max_memory=1 << 20)
    with pytest.raises(graft.GraftError) as e:
        tight.run({"x": x})
    assert "memory limit of 1048576 bytes" in str(e.value)
    assert e.value.code == "out of memory"
    # The engine stays usable: without a limit (another engine on the same plan) it runs.
    again = graft.Engine.load(tight.serialize())
    assert again.run({"x": x})["y"].shape == (1024, 1024)
    # A loaded plan takes the limit too.
    with pytest.raises(graft.GraftError, match="memory limit"):
        graft.Engine.load(tight.serialize(), max_memory=1 << 20).run({"x": x})


def test_build_counts_the_weights(tmp_path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [1 << 20], np.ones(1 << 20, np.float32).tobytes(), raw=True)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "weights",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 20])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "weights.onnx")
    onnx.save(model, path)
    with pytest.raises(graft.GraftError, match="memory limit"):
        graft.Engine.build(path, max_memory=1 << 20)  # 4 MiB of weights
    assert graft.Engine.build(path, max_memory=32 << 20).inputs[0]["name"] == "x"


@pytest.mark.parametrize("bad", [0, -1, 1.5, "1G", True])
def test_bad_values_are_refused(tmp_path, bad):
    path = str(tmp_path / "expand.onnx")
    _model(path, 4)
    with pytest.raises(graft.GraftError, match="max_memory"):
        graft.Engine.build(path, max_memory=bad)
