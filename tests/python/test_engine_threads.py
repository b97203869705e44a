"""graft.Engine under concurrency and ownership: one engine shared by 8 Python threads (no deadlock,
bit-exact results), and outputs that own their memory even when an output is a graph input."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _convnet(path, seed):
    """A small Conv/Relu/MaxPool/Gemm/Softmax model with random weights."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(8).astype(np.float32) * 0.1
    w2 = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2
    wf = rng.standard_normal((16, 10)).astype(np.float32) * 0.3
    inits = [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.flatten().tolist())
             for n, a in [("w1", w1), ("b1", b1), ("w2", w2), ("wf", wf)]]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "wf"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    graph = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


# Runs in a child process: a deadlock there (the bug this guards against froze the whole
# interpreter) becomes a timeout here instead of a hung test run.
_WORKER = textwrap.dedent("""
    import sys, threading, numpy as np, graft
    model, nthreads, nruns, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    eng = graft.Engine.build(model, device="cpu")
    rng = np.random.default_rng(seed)
    feeds = [rng.standard_normal((2, 3, 16, 16)).astype(np.float32) for _ in range(nthreads)]
    # Single-threaded reference for every thread's input.
    want = [eng.run({"x": f})["y"] for f in feeds]
    assert all(np.isfinite(w).all() for w in want)
    assert not np.array_equal(want[0], want[1]), "inputs must differ so a mix-up between threads shows"
    errors = []
    def work(t):
        try:
            for i in range(nruns):
                got = eng.run({"x": feeds[t]})["y"]
                if not np.array_equal(got, want[t]):
                    errors.append(f"thread {t} run {i}: output differs from the single-threaded run")
                    return
        except Exception as e:  # reported by the parent
            errors.append(f"thread {t}: {e!r}")
    threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for th in threads: th.start()
    for th in threads: th.join()
    if errors:
        print("\\n".join(errors)); sys.exit(1)
    print(f"ok {nthreads}x{nruns}")
""")


def test_one_engine_from_8_threads_bit_exact(graft_mod, tmp_path, seed):
    model = str(tmp_path / "convnet.onnx")
    _convnet(model, seed)
    env = dict(os.environ)
    try:
        r = subprocess.run([sys.executable, "-c", _WORKER, model, "8", "300", str(seed)], env=env,
                           capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("8 threads x 300 runs on one graft.Engine did not finish in 240 s (deadlock?)")
    assert r.returncode == 0, f"seed {seed}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert "ok 8x300" in r.stdout


def _passthrough(path, with_view):
    """Graph output == graph input 'x' (no node), plus optionally 'v', a Reshape view of the input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 1024])
    outs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 1024])]
    nodes, inits = [], []
    if with_view:
        inits.append(helper.make_tensor("shape", TensorProto.INT64, [2], [1024, 256]))
        nodes.append(helper.make_node("Reshape", ["x", "shape"], ["v"]))
        outs.append(helper.make_tensor_value_info("v", TensorProto.FLOAT, [1024, 256]))
    graph = helper.make_graph(nodes, "passthrough", [x], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.parametrize("with_view", [False, True])
def test_output_that_is_an_input_owns_its_memory(graft_mod, tmp_path, with_view):
    path = str(tmp_path / "passthrough.onnx")
    _passthrough(path, with_view)
    eng = graft_mod.Engine.build(path, device="cpu")
    x = np.random.default_rng(7).standard_normal((256, 1024)).astype(np.float32)
    expected = x.copy()
    out = eng.run({"x": x})
    names = ["x", "v"] if with_view else ["x"]
    for name in names:
        assert not np.shares_memory(out[name], x), f"output '{name}' aliases the caller's input buffer"
    # The input dies; its memory is reused by new allocations. The outputs must be unaffected.
    del x
    gc.collect()
    junk = [np.full((256, 1024), -1.0, np.float32) for _ in range(4)]
    np.testing.assert_array_equal(out["x"], expected)
    if with_view:
        np.testing.assert_array_equal(out["v"], expected.reshape(1024, 256))
    del junk
