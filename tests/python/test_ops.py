"""Every registered op as a torch op: forward vs a PyTorch reference, gradcheck in float64 through
the op's backward kernel, torch.library.opcheck where torch has it, and error messages."""
import pytest
import torch

from op_examples import examples_for, input_dims, make_inputs


def _ref_custom_layer(x, beta=1.0):
    return x * torch.sigmoid(beta * x)


def _ref_group_norm(x, scale, bias, num_groups=None, groups=None, epsilon=None, eps=None):
    g = num_groups if num_groups is not None else groups
    e = epsilon if epsilon is not None else (eps if eps is not None else 1e-5)
    return torch.nn.functional.group_norm(x, g, scale, bias, e)


def _ref_affine(x, bias=None, alpha=1.0, mode="plain", tags=()):
    v = x * x if mode == "square" else x
    return alpha * v + (bias if bias is not None else 0)


def _ref_ms_deform_attn(value, spatial_shapes, level_start_index, locations, weights, im2col_step=None):
    from graft.deformable import ms_deform_attn_pytorch  # grid_sample formulation, not graft's kernel
    return ms_deform_attn_pytorch(value, spatial_shapes, level_start_index, locations, weights)


def _ref_ms_deform_attn_trt(value, *rest):
    n, _, m, d = value.shape
    out = _ref_ms_deform_attn(value, *rest)
    return out.view(n, out.shape[1], m, d)


REFERENCES = {"CustomLayer": _ref_custom_layer, "GroupNorm": _ref_group_norm, "PyTestAffine": _ref_affine,
              "MultiScaleDeformableAttention": _ref_ms_deform_attn,
              "MultiscaleDeformableAttnPlugin_TRT": _ref_ms_deform_attn_trt}


def _all_ops(graft_mod):
    from graft import _registry
    return sorted(_registry.ops().values(), key=lambda i: i.torch_name)


def test_registry_exposes_ops(graft_mod, has_test_plugin):
    ops = _all_ops(graft_mod)
    assert ops, "no graft op was exposed to PyTorch"
    for info in ops:
        assert hasattr(torch.ops.graft, info.torch_name)
        assert callable(getattr(graft_mod.ops, info.python_name))
        if info.has_backward:
            assert hasattr(torch.ops.graft, info.torch_name + "_backward")
    if has_test_plugin:
        assert any(i.name == "PyTestAffine" for i in ops), "plugin op did not become a torch op"


def test_examples_come_from_the_definitions(graft_mod):
    # Every op here (graft's and the test plugin's) declares example calls in its OpDef, and they
    # arrive whole: attributes typed, fixed values and draw ranges as written there.
    ops = {i.name: i for i in _all_ops(graft_mod)}
    for info in ops.values():
        assert info.examples, f"{info.name} declares no example call"
        for ex in info.examples:
            assert len(ex.inputs) <= len(info.inputs), info.name
    msda = ops["MultiScaleDeformableAttention"].examples[0]
    assert msda.inputs[1].kind == "fixed" and msda.inputs[1].dims == (2, 2)
    assert msda.inputs[1].values == (3.0, 4.0, 2.0, 2.0)
    assert (msda.inputs[3].lo, msda.inputs[3].hi) == (0.0, 1.0)
    mdcn = ops["ModulatedDeformConv2d"].examples
    assert mdcn[0].attrs["padding"] == [1, 1] and mdcn[0].attrs["groups"] == 2
    assert (mdcn[1].inputs[1].lo, mdcn[1].inputs[1].hi) == (-1.9, -1.1) and mdcn[1].inputs[4].kind == "absent"


def test_forward_matches_reference(graft_mod, seed):
    checked = 0
    for info in _all_ops(graft_mod):
        ref = REFERENCES.get(info.name)
        if ref is None:
            continue
        fn = getattr(graft_mod.ops, info.python_name)
        for shapes, attrs in examples_for(info):
            ins = make_inputs(shapes, torch.float32)
            got = fn(*ins, **attrs)
            want = ref(*ins, **attrs)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5,
                                       msg=lambda m: f"{info.name} {shapes} {attrs} seed {seed}: {m}")
            checked += 1
    assert checked > 0, "no op with a PyTorch reference is registered"


def test_gradcheck_every_op(graft_mod, seed):
    checked = 0
    for info in _all_ops(graft_mod):
        if not info.has_backward:
            continue
        fn = getattr(graft_mod.ops, info.python_name)
        for shapes, attrs in examples_for(info):
            ins = make_inputs(shapes, torch.float64, requires_grad=True)
            try:
                fn(*ins, **attrs)
                kw = {}
            except RuntimeError as e:
                if "float64" not in str(e):
                    raise
                # The op has no float64 kernel: a looser float32 check still catches wrong gradients.
                ins = make_inputs(shapes, torch.float32, requires_grad=True)
                kw = dict(eps=1e-3, atol=2e-2, rtol=2e-2)
            # Only differentiable float inputs are checked (index inputs never require grad).
            for i, t in enumerate(ins):
                if t is not None and t.is_floating_point() and i not in info.diff_inputs:
                    t.requires_grad_(False)
            assert torch.autograd.gradcheck(lambda *xs: fn(*xs, **attrs), tuple(ins), **kw), \
                f"{info.name} {shapes} {attrs} seed {seed}"
            checked += 1
    assert checked > 0, "no op with a backward kernel is registered"


def test_backward_op_direct(graft_mod, seed):
    # The generated _backward op agrees with autograd through the Python Function.
    for info in _all_ops(graft_mod):
        if not info.has_backward:
            continue
        shapes, attrs = examples_for(info)[0]
        ins = make_inputs(shapes, torch.float32, requires_grad=True)
        y = getattr(graft_mod.ops, info.python_name)(*ins, **attrs)
        gy = torch.randn_like(y)
        y.backward(gy)
        grads = info.torch_backward_op()(*[None if t is None else t.detach() for t in ins], gy, **attrs)
        grads = grads if isinstance(grads, (tuple, list)) else (grads,)
        for k, idx in enumerate(info.diff_inputs):
            if ins[idx] is None:
                continue
            torch.testing.assert_close(grads[k], ins[idx].grad, msg=lambda m: f"{info.name} seed {seed}: {m}")


@pytest.mark.skipif(not hasattr(getattr(torch, "library", None), "opcheck"),
                    reason=f"torch.library.opcheck needs torch >= 2.4 (have {torch.__version__})")
def test_opcheck(graft_mod, seed):
    for info in _all_ops(graft_mod):
        shapes, attrs = examples_for(info)[0]
        ins = make_inputs(shapes, torch.float32, requires_grad=info.has_backward)
        # Dynamic-shape AOT dispatch would need a SymInt-aware Meta kernel; the rest is checked.
        torch.library.opcheck(info.torch_op(), tuple(ins), attrs,
                              test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))


def test_meta_kernel_gives_shapes(graft_mod):
    for info in _all_ops(graft_mod):
        shapes, attrs = examples_for(info)[0]
        reals = make_inputs(shapes, torch.float32)
        metas = [None if t is None else torch.empty_like(t, device="meta") for t in reals]
        out = info.torch_op()(*metas, **attrs)
        out = out if isinstance(out, (tuple, list)) else (out,)
        real = info.torch_op()(*reals, **attrs)
        real = real if isinstance(real, (tuple, list)) else (real,)
        assert [o.shape for o in out] == [r.shape for r in real]
        assert all(o.device.type == "meta" for o in out)


# ---- errors: Python exceptions carrying the op's message --------------------------------------
def test_wrong_dtype_names_input(graft_mod):
    info = _pick(graft_mod, "CustomLayer", "PyTestAffine")
    shapes, attrs = examples_for(info)[0]
    ins = [None if d is None else torch.randint(0, 5, d, dtype=torch.int32) for d in input_dims(shapes)]
    with pytest.raises(RuntimeError) as e:
        info.torch_op()(*ins, **attrs)
    msg = str(e.value)
    assert info.name in msg and "int32" in msg and info.inputs[0] in msg, msg


def test_attribute_out_of_range_names_attribute(graft_mod):
    for info in _all_ops(graft_mod):
        ranged = [a for a in info.attrs if a.type == "float" and a.max_value is not None and a.max_value < 1e30]
        if not ranged:
            continue
        a = ranged[0]
        shapes, attrs = examples_for(info)[0]
        attrs = dict(attrs)
        attrs[a.name] = a.max_value * 2 + 1
        with pytest.raises(RuntimeError) as e:
            getattr(graft_mod.ops, info.python_name)(*make_inputs(shapes, torch.float32), **attrs)
        assert a.name in str(e.value) and "maximum" in str(e.value), str(e.value)
        return
    pytest.skip("no registered op has a bounded float attribute")


def test_wrong_rank_and_unknown_string(graft_mod, has_test_plugin):
    if not has_test_plugin:
        pytest.skip("the test plugin library (graft_python_test_ops) is not built")
    with pytest.raises(RuntimeError, match="rank"):
        graft_mod.ops.py_test_affine(torch.randn(()))
    with pytest.raises(RuntimeError, match="mode"):
        graft_mod.ops.py_test_affine(torch.randn(3), mode="cube")
    with pytest.raises(RuntimeError, match="bias has 2 elements"):
        graft_mod.ops.py_test_affine(torch.randn(3, 4), torch.randn(2))
    with pytest.raises(TypeError, match="unknown attribute 'gamma'"):
        graft_mod.ops.py_test_affine(torch.randn(3), gamma=1.0)


def test_custom_layer_wrong_rank_or_group_norm_channels(graft_mod):
    from graft import _registry
    if "GroupNorm" not in {i.name for i in _registry.ops().values()}:
        pytest.skip("GroupNorm is not registered yet")
    info = _registry.find("GroupNorm")
    shapes, attrs = examples_for(info)[0]
    with pytest.raises(RuntimeError) as e:
        info.torch_op()(torch.randn(4), torch.randn(4), torch.randn(4), **attrs)
    assert "GroupNorm" in str(e.value)


def _pick(graft_mod, *names):
    from graft import _registry
    have = {i.name: i for i in _registry.ops().values()}
    for n in names:
        if n in have:
            return have[n]
    pytest.skip(f"none of {names} is registered")
