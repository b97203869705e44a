"""Example calls for the generic op tests, taken from each op's definition (OpDef::example, exposed as
OpInfo.examples): graft keeps one table of example calls per op, in its definition, and the tests,
the TensorRT harness and the fuzzers all read it.

An input spec is an ExampleInput (graft._registry): absent (None), drawn at random uniformly in
[lo, hi), or fixed values (index tables, boxes). An op whose definition gives no example (a plugin
that declares none) gets one (2, 3, 4) input per required input, drawn in [-2, 2) as any other, and
default attributes; an op with an integer-only input must give an example (examples_for says so)."""
from graft._registry import ExampleInput
import torch

_TORCH_DTYPES = {"int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
                 "uint8": torch.uint8, "bool": torch.bool}


def examples_for(info):
    """[(input specs, attrs)] for `info` (an OpInfo): its definition's examples, or the default call."""
    if info.examples:
        return [(list(ex.inputs), dict(ex.attrs)) for ex in info.examples]
    ints = [n for i, n in enumerate(info.inputs) if not info.optional_inputs[i] and not info.input_is_float(i)]
    if ints:
        raise AssertionError(f"op {info.name} has integer-only input(s) {', '.join(ints)} and no example call: "
                             "give its OpDef an example() with consistent values for them")
    specs = [ExampleInput("absent") if opt else ExampleInput("random", (2, 3, 4)) for opt in info.optional_inputs]
    return [(specs, {})]


def input_dims(specs):
    """The dims of each input of an example (None for an absent one)."""
    return [None if s.kind == "absent" else tuple(s.dims) for s in specs]


def make_inputs(specs, dtype, requires_grad=False, device="cpu"):
    """Fresh random tensors for `specs` (floats in `dtype`); requires_grad applies to random floats
    only (fixed values are constants of the example)."""
    ins = []
    for s in specs:
        if s.kind == "absent":
            ins.append(None)
            continue
        if s.kind == "fixed":
            t = torch.tensor(s.values, dtype=torch.float64).reshape(s.dims)
            ins.append(t.to(device=device, dtype=_TORCH_DTYPES.get(s.dtype, dtype)))
            continue
        t = torch.rand(s.dims, dtype=dtype, device=device) * (s.hi - s.lo) + s.lo
        if requires_grad:
            t.requires_grad_(True)
        ins.append(t)
    return ins
