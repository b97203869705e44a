"""graft.Engine from Python: build from an exported model, run, compare with PyTorch, errors."""
import numpy as np
import pytest
import torch

onnx = pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def exported(graft_mod, tmp_path_factory):
    torch.manual_seed(1234)
    model = torch.nn.Sequential(graft_mod.nn.CustomLayer(param=0.5), torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4), graft_mod.nn.CustomLayer(beta=1.25)).eval()
    path = str(tmp_path_factory.mktemp("engine") / "model.onnx")
    graft_mod.export(model, torch.randn(2, 8), path, exporter="torchscript", opset_version=11,
                     input_names=["input"], output_names=["output"])
    return model, path


@pytest.fixture(scope="module")
def engine(graft_mod, exported):
    _, path = exported
    try:
        from graft import _native
        _native.engine_module()
    except graft_mod.GraftError as e:
        pytest.fail(f"graft._engine is not built: {e}")
    return graft_mod.Engine.build(path, profile={"input": ((1, 8), (4, 8), (16, 8))})


@pytest.mark.parametrize("batch", [1, 7])
def test_engine_matches_pytorch(engine, exported, batch, seed):
    model, _ = exported
    x = np.random.default_rng(seed).standard_normal((batch, 8)).astype(np.float32)
    out = engine.run({"input": x})
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert set(out) == {"output"}
    assert out["output"].shape == (batch, 4)
    np.testing.assert_allclose(out["output"], want, rtol=1e-4, atol=1e-5, err_msg=f"seed {seed}")


def test_engine_torch_in_torch_out(engine, exported, seed):
    model, _ = exported
    x = torch.randn(3, 8)
    out = engine.run({"input": x})
    assert isinstance(out["output"], torch.Tensor)
    with torch.no_grad():
        torch.testing.assert_close(out["output"], model(x), rtol=1e-4, atol=1e-5)


def test_engine_io_description(engine):
    (i,) = engine.inputs
    (o,) = engine.outputs
    assert i["name"] == "input" and i["dtype"] == "float32"
    assert o["name"] == "output"


def test_engine_errors_then_still_usable(graft_mod, engine, exported):
    model, _ = exported
    with pytest.raises(graft_mod.GraftError) as e:
        engine.run({"input": np.random.rand(2, 5).astype(np.float32)})
    assert "input" in str(e.value)
    with pytest.raises(graft_mod.GraftError) as e:
        engine.run({"input": np.random.rand(2, 8).astype(np.float64)})
    assert "input" in str(e.value)
    with pytest.raises(graft_mod.GraftError):
        engine.run({"input": np.random.rand(32, 8).astype(np.float32)})  # outside the profile
    with pytest.raises(graft_mod.GraftError):
        engine.run({})
    x = np.random.rand(2, 8).astype(np.float32)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(engine.run({"input": x})["output"], want, rtol=1e-4, atol=1e-5)


def test_engine_save_load(graft_mod, engine, tmp_path):
    plan = tmp_path / "model.plan"
    engine.save(plan)
    again = graft_mod.Engine.load(plan)
    x = np.random.rand(5, 8).astype(np.float32)
    np.testing.assert_array_equal(again.run({"input": x})["output"], engine.run({"input": x})["output"])
    from_bytes = graft_mod.Engine.load(engine.serialize())
    np.testing.assert_array_equal(from_bytes.run({"input": x})["output"], engine.run({"input": x})["output"])


def test_engine_build_errors(graft_mod, tmp_path):
    with pytest.raises(graft_mod.GraftError) as e:
        graft_mod.Engine.build(str(tmp_path / "missing.onnx"))
    assert "missing.onnx" in str(e.value)
    with pytest.raises(graft_mod.GraftError):
        graft_mod.Engine.build(b"not an onnx model")
    with pytest.raises(graft_mod.GraftError) as e:
        graft_mod.load_plugin(str(tmp_path / "nope.so"))
    assert "nope.so" in str(e.value)


def test_engine_dynamic_input_shapes(graft_mod, exported):
    model, path = exported
    # No profile for a dynamic input: the error names the input and the Python arguments, no CLI flag.
    with pytest.raises(graft_mod.GraftError) as e:
        graft_mod.Engine.build(path)
    msg = str(e.value)
    assert "'input'" in msg and "profile={'input': (min, opt, max)}" in msg and "shapes=" in msg, msg
    assert "--" not in msg, msg
    # shapes=: one fixed shape; inputs=: the sample's shape (as ONNX Runtime takes it from the data).
    x = torch.randn(3, 8)
    with torch.no_grad():
        want = model(x).numpy()
    for eng in (graft_mod.Engine.build(path, shapes={"input": (3, 8)}),
                graft_mod.Engine.build(path, inputs={"input": x.numpy()})):
        assert eng.inputs[0]["static_dims"] == [3, 8]
        np.testing.assert_allclose(eng.run({"input": x.numpy()})["output"], want, rtol=1e-4, atol=1e-5)
    # A sample of the wrong rank or fixed dimension is refused naming the input.
    with pytest.raises(graft_mod.GraftError, match="'input'"):
        graft_mod.Engine.build(path, inputs={"input": np.zeros((3, 9), np.float32)})
    with pytest.raises(graft_mod.GraftError, match="both profile= and shapes="):
        graft_mod.Engine.build(path, shapes={"input": (3, 8)}, profile={"input": ((1, 8), (2, 8), (4, 8))})


def test_engine_cuda_only_arguments_warn_on_cpu(graft_mod, exported, tmp_path):
    _, path = exported
    cache = tmp_path / "cache.json"
    with pytest.warns(UserWarning, match="fp16=True, timing_cache apply to CUDA engines only"):
        eng = graft_mod.Engine.build(path, shapes={"input": (2, 8)}, fp16=True, timing_cache=cache)
    assert not cache.exists()
    assert "fp16" not in eng.describe().splitlines()[0]


def test_engine_describe_json(graft_mod, engine):
    d = engine.describe_json()
    assert d["device"] == "cpu"
    assert [i["name"] for i in d["inputs"]] == [i["name"] for i in engine.inputs]
    assert d["layers"] and all({"name", "op_type", "outputs", "attributes"} <= set(l) for l in d["layers"])
    assert not any("tactics" in l for l in d["layers"]), "a CPU engine times no tactics"


def test_engine_outputs_argument_needs_cuda(graft_mod, engine):
    x = torch.randn(2, 8)
    with pytest.raises(graft_mod.GraftError, match="outputs="):
        engine.run({"input": x}, outputs={"output": torch.empty(2, 4)})
    with pytest.raises(graft_mod.GraftError, match="needs a CUDA engine"):
        engine._impl.run({"input": x.numpy()}, stream=1)
    assert engine.run({"input": x})["output"].shape == (2, 4)  # still usable


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_engine_runs_on_torch_stream(graft_mod, exported):
    """CUDA tensors in, CUDA tensors out, ordered on torch's current stream: the input is produced
    by a long kernel queued just before, on a side stream, and read back only through that stream."""
    model, path = exported
    eng = graft_mod.Engine.build(path, device="cuda", profile={"input": ((1, 8), (4, 8), (64, 8))})
    model = model.cuda()
    side = torch.cuda.Stream()
    big = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    for batch in (64, 64, 5):  # the second call uses the learned output shape; the third a new one
        with torch.cuda.stream(side):
            slow = big @ big  # keeps the stream busy, so an unordered engine would read stale memory
            x = torch.randn(batch, 8, device="cuda") + 1e-30 * slow[:batch, :8]
            out = eng.run({"input": x})["output"]
            got = out.clone()
        side.synchronize()
        assert out.device.type == "cuda" and out.dtype == torch.float32 and out.shape == (batch, 4)
        with torch.no_grad():
            torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)

    x = torch.randn(6, 8, device="cuda")
    given = torch.full((6, 4), float("nan"), device="cuda")  # poisoned: must be overwritten
    out = eng.run({"input": x}, outputs={"output": given})["output"]
    assert out is given
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
    with pytest.raises(graft_mod.GraftError, match="output 'output'"):
        eng.run({"input": x}, outputs={"output": torch.empty(5, 4, device="cuda")})
    with pytest.raises(graft_mod.GraftError, match="no output named 'logits'"):
        eng.run({"input": x}, outputs={"logits": given})


def test_engine_string_tensors(graft_mod, tmp_path):
    """numpy text in ('U', 'S' or object arrays), object arrays of str out (StringNormalizer, Cast)."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("StringNormalizer", ["words"], ["kept"], case_change_action="UPPER", stopwords=["monday"]),
         helper.make_node("Cast", ["x"], ["text"], to=TensorProto.STRING)],
        "strings",
        [helper.make_tensor_value_info("words", TensorProto.STRING, [4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("kept", TensorProto.STRING, None),
         helper.make_tensor_value_info("text", TensorProto.STRING, [3])])
    path = str(tmp_path / "strings.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    eng = graft_mod.Engine.build(path)
    rng = np.random.default_rng()
    x = rng.standard_normal(3).astype(np.float32)
    for words in (np.array(["Monday", "tuesday", "\u00e9t\u00e9", "monday"]),
                  np.array([b"Monday", b"tuesday", "\u00e9t\u00e9".encode(), b"monday"]),
                  np.array(["Monday", "tuesday", "\u00e9t\u00e9", b"monday"], dtype=object)):
        out = eng.run({"words": words, "x": x})
        assert out["kept"].dtype == object and out["kept"].tolist() == ["TUESDAY", "\u00c9T\u00c9"]
        assert [np.float32(s) for s in out["text"].tolist()] == list(x)
    with pytest.raises(graft_mod.GraftError, match="'words'"):
        eng.run({"words": np.array([1, "a", None, "b"], dtype=object), "x": x})


def test_engine_layer_precisions(graft_mod, exported):
    """layer_precisions= (trtexec's --layerPrecisions): names and '*' patterns are checked against the
    model's nodes; a CPU engine takes fp32 holds and refuses fp16; on CUDA, an fp16 build whose every
    layer is held to fp32 computes as the fp32 build does, closer to PyTorch than the plain fp16 one."""
    import copy
    model, path = exported
    x = torch.randn(5, 8)
    with torch.no_grad():  # a CPU copy: an earlier test may have moved the module's model to CUDA
        want = copy.deepcopy(model).cpu()(x).numpy()
    eng = graft_mod.Engine.build(path, shapes={"input": (5, 8)}, layer_precisions={"*Gemm*": "fp32"})
    np.testing.assert_allclose(eng.run({"input": x.numpy()})["output"], want, rtol=1e-4, atol=1e-5)
    with pytest.raises(graft_mod.GraftError, match="'/nope' matches no node"):
        graft_mod.Engine.build(path, shapes={"input": (5, 8)}, layer_precisions={"/nope": "fp32"})
    with pytest.raises(graft_mod.GraftError, match="held to fp32 or fp16"):
        graft_mod.Engine.build(path, shapes={"input": (5, 8)}, layer_precisions={"*": "int8"})
    with pytest.raises(graft_mod.GraftError, match="no float16"):
        graft_mod.Engine.build(path, shapes={"input": (5, 8)}, layer_precisions={"*": "fp16"})
    if not torch.cuda.is_available():
        return
    prof = {"input": ((1, 8), (4, 8), (16, 8))}
    fp16 = graft_mod.Engine.build(path, device="cuda", fp16=True, profile=prof)
    held = graft_mod.Engine.build(path, device="cuda", fp16=True, profile=prof, layer_precisions={"*": "fp32"})
    fp32 = graft_mod.Engine.build(path, device="cuda", profile=prof)
    got = {name: e.run({"input": x.numpy()})["output"] for name, e in (("fp16", fp16), ("held", held), ("fp32", fp32))}
    np.testing.assert_allclose(got["held"], got["fp32"], rtol=1e-5, atol=1e-6)
    err = {k: float(np.abs(v - want).max()) for k, v in got.items()}
    assert err["held"] < err["fp16"], err
