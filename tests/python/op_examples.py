"""Per-op example calls for the generic tests: input shapes (None = absent optional input) and
attributes. Ops missing here get one (2, 3, 4) tensor per required input and default attributes.
Attribute names an op does not declare are dropped, so the table tolerates naming differences."""
import torch

EXAMPLES = {
    "CustomLayer": [
        dict(inputs=[(2, 3, 4)], attrs={"beta": 0.7}),
        dict(inputs=[(5,)], attrs={"beta": 2.0}),
    ],
    "GroupNorm": [
        dict(inputs=[(2, 4, 3, 3), (4,), (4,)], attrs={"num_groups": 2, "groups": 2}),
        dict(inputs=[(1, 6, 5), (6,), (6,)], attrs={"num_groups": 3, "groups": 3}),
    ],
    "PyTestAffine": [
        dict(inputs=[(3, 5), (5,)], attrs={"alpha": 1.5, "mode": "square"}),
        dict(inputs=[(2, 2, 4), None], attrs={"alpha": -0.5}),
    ],
}


def examples_for(info):
    cases = EXAMPLES.get(info.name)
    if cases is None:
        cases = [dict(inputs=[None if opt else (2, 3, 4) for opt in info.optional_inputs], attrs={})]
    out = []
    for c in cases:
        attrs = {k: v for k, v in c["attrs"].items() if info.attr(k) is not None}
        out.append((c["inputs"], attrs))
    return out


def make_inputs(shapes, dtype, requires_grad=False, device="cpu"):
    ins = []
    for s in shapes:
        if s is None:
            ins.append(None)
            continue
        t = torch.randn(s, dtype=dtype, device=device)
        if requires_grad:
            t.requires_grad_(True)
        ins.append(t)
    return ins
