"""Several optimization profiles from Python: Engine.build(profiles=[...]), run(..., profile=k)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


@pytest.fixture(scope="module")
def relu_model():
    """y = Relu(x), x: float32[batch, 4]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


# Profile 0: batch 1..4; profile 1: batch 8..16 (disjoint).
PROFILES = [{"x": ((1, 4), (2, 4), (4, 4))}, {"x": ((8, 4), (12, 4), (16, 4))}]


def test_each_profile_runs_its_range(graft_mod, relu_model):
    eng = graft_mod.Engine.build(relu_model, profiles=PROFILES)
    assert eng.num_profiles == 2
    assert eng.profiles[1]["x"] == ([8, 4], [12, 4], [16, 4])
    for batch, profile in ((3, 0), (12, 1), (16, 1), (1, 0)):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        out = eng.run({"x": x}, profile=profile)
        np.testing.assert_array_equal(out["y"], np.maximum(x, 0))


def test_shape_outside_the_selected_profile(graft_mod, relu_model):
    eng = graft_mod.Engine.build(relu_model, profiles=PROFILES)
    x = np.ones((12, 4), np.float32)
    with pytest.raises(graft_mod.GraftError) as e:
        eng.run({"x": x})  # profile 0 by default
    msg = str(e.value)
    assert "input 'x'" in msg and "[12,4]" in msg and "optimization profile 0 [min 1, max 4]" in msg, msg
    assert "profile 1 covers it" in msg, msg
    with pytest.raises(graft_mod.GraftError, match="run\\(profile=...\\): optimization profile 2 does not exist"):
        eng.run({"x": x}, profile=2)
    assert eng.run({"x": x}, profile=1)["y"].shape == (12, 4)  # still usable


def test_plan_round_trip_keeps_profiles(graft_mod, relu_model, tmp_path):
    eng = graft_mod.Engine.build(relu_model, profiles=PROFILES)
    eng.save(tmp_path / "two.plan")
    again = graft_mod.Engine.load(tmp_path / "two.plan")
    assert again.profiles == eng.profiles
    assert again.run({"x": np.ones((9, 4), np.float32)}, profile=1)["y"].shape == (9, 4)


def test_profile_arguments_checked(graft_mod, relu_model):
    with pytest.raises(graft_mod.GraftError, match="profile= .* or profiles="):
        graft_mod.Engine.build(relu_model, profile=PROFILES[0], profiles=PROFILES)
    with pytest.raises(graft_mod.GraftError, match="'x' is in both profiles= and shapes="):
        graft_mod.Engine.build(relu_model, profiles=PROFILES, shapes={"x": (2, 4)})
    bad = [PROFILES[0], {"x": ((9, 4), (9, 4), (8, 4))}]
    with pytest.raises(graft_mod.GraftError, match="profile 1 for input 'x' dimension 0"):
        graft_mod.Engine.build(relu_model, profiles=bad)
    with pytest.raises(graft_mod.GraftError, match="profiles\\[1\\] for input 'x' must be \\(min, opt, max\\)"):
        graft_mod.Engine.build(relu_model, profiles=[PROFILES[0], {"x": ((1, 4), (2, 4))}])
