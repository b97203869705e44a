"""graft.nn layers inside ordinary torch models."""
import pytest
import torch


def test_custom_layer_in_sequential_trains(graft_mod, seed):
    nn = graft_mod.nn
    model = torch.nn.Sequential(nn.CustomLayer(param=0.5), torch.nn.Linear(6, 3), nn.CustomLayer(beta=1.5))
    assert model[0].beta == 0.5 and model[2].beta == 1.5
    x = torch.randn(4, 6)
    y = model(x)
    want = model[1](x * torch.sigmoid(0.5 * x))
    want = want * torch.sigmoid(1.5 * want)
    torch.testing.assert_close(y, want, msg=lambda m: f"seed {seed}: {m}")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model[1].weight.detach().clone()
    y.pow(2).mean().backward()
    assert model[1].weight.grad is not None and model[1].weight.grad.abs().sum() > 0
    opt.step()
    assert not torch.equal(before, model[1].weight)


def test_custom_layer_state_dict_and_repr(graft_mod):
    layer = graft_mod.nn.CustomLayer(beta=0.25)
    assert "beta=0.25" in repr(layer)
    m = torch.nn.Sequential(layer, torch.nn.Linear(3, 2))
    sd = m.state_dict()
    m2 = torch.nn.Sequential(graft_mod.nn.CustomLayer(beta=0.25), torch.nn.Linear(3, 2))
    m2.load_state_dict(sd)
    x = torch.randn(2, 3)
    torch.testing.assert_close(m(x), m2(x))
    with pytest.raises(TypeError):
        graft_mod.nn.CustomLayer(beta=1.0, param=2.0)


def test_half_on_cpu_if_supported(graft_mod):
    layer = graft_mod.nn.CustomLayer(beta=1.0).half()
    x = torch.randn(3, 4).half()
    try:
        y = layer(x)
    except RuntimeError as e:
        # The op must say clearly that it lacks a CPU float16 kernel, nothing vaguer.
        assert "float16" in str(e), str(e)
        pytest.skip(f"CustomLayer has no CPU float16 kernel: {e}")
    assert y.dtype == torch.float16
    torch.testing.assert_close(y.float(), x.float() * torch.sigmoid(x.float()), rtol=2e-3, atol=2e-3)


def test_group_norm_layer(graft_mod, seed):
    from graft import _registry
    if "GroupNorm" not in {i.name for i in _registry.ops().values()}:
        pytest.skip("GroupNorm is not registered yet")
    gn = graft_mod.nn.GroupNorm(2, 4, eps=1e-5)
    params = dict(gn.named_parameters())
    assert len(params) == 2 and all(p.shape == (4,) for p in params.values())
    with torch.no_grad():
        for p in params.values():
            p.copy_(torch.randn(4))
    ref = torch.nn.GroupNorm(2, 4, eps=1e-5)
    names = list(params)
    with torch.no_grad():
        ref.weight.copy_(params[names[0]])
        ref.bias.copy_(params[names[1]])
    x = torch.randn(3, 4, 5, 5)
    torch.testing.assert_close(gn(x), ref(x), rtol=1e-4, atol=1e-4, msg=lambda m: f"seed {seed}: {m}")
    gn(x).sum().backward()
    assert all(p.grad is not None for p in params.values())
    sd = torch.nn.Sequential(gn).state_dict()
    assert set(k.split(".", 1)[1] for k in sd) == set(names)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_layer(graft_mod, seed):
    model = torch.nn.Sequential(graft_mod.nn.CustomLayer(beta=0.5), torch.nn.Linear(4, 2)).cuda()
    x = torch.randn(5, 4, device="cuda")
    y = model(x)
    want = model[1](x * torch.sigmoid(0.5 * x))
    torch.testing.assert_close(y, want, msg=lambda m: f"seed {seed}: {m}")
    y.sum().backward()
