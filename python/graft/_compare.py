"""graft.compare: run a model on two backends (or two models, or graft against ONNX Runtime) on the
same inputs and compare the outputs, or every intermediate tensor (Polygraphy's ``mark all``).

    r = graft.compare("model.onnx", reference_device="onnxruntime", layerwise=True)
    print(r)                      # a table, one row per tensor, and the first layer that diverges
    r.passed, r.first_divergence  # bool; None or {"layer", "op_type", "tensor", "max_abs_error", ...}

The same comparison as ``graft run --compare-backend/--compare-model/--layerwise``; ``r.report`` is
its JSON report (format "graft-compare", documented in docs/cli.md).
"""
import json
import os

import numpy as np

from . import _native
from ._errors import GraftError


class Comparison:
    """The report of graft.compare: .passed, .first_divergence, .tensors, .report (the whole dict);
    str() gives the table."""

    def __init__(self, report, table):
        self.report = report
        self._table = table

    @property
    def passed(self):
        return self.report["passed"]

    @property
    def first_divergence(self):
        return self.report["first_divergence"]

    @property
    def tensors(self):
        return self.report["tensors"]

    def __str__(self):
        return self._table

    def __repr__(self):
        s = self.report["summary"]
        return (f"<graft.Comparison passed={self.passed} tensors={s['tensors']} mismatched={s['mismatched']} "
                f"not_compared={s['not_compared']}>")


def _model_bytes(model, what):
    if isinstance(model, (bytes, bytearray)):
        return bytes(model), "<bytes>"
    path = os.fspath(model)
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        raise GraftError(f"{what}: cannot read {path}: {e.strerror}", "kNotFound") from None


def _tolerances(value, what):
    """A number, or {tensor: number} with "" (or None) as the default for the others (Polygraphy's habit)."""
    default = {"rtol": 1e-3, "atol": 1e-5}[what]
    if not isinstance(value, dict):
        return float(value), {}
    per = {}
    for k, v in value.items():
        if k in ("", None):
            default = float(v)
        else:
            per[str(k)] = float(v)
    return default, per


def _random_inputs(engine, given, seed):
    """The given inputs, and seeded random data (floats in [-1, 1], integers in [0, 4)) for the others."""
    rng = np.random.default_rng(seed)
    feeds = dict(given or {})
    for info in engine.inputs:
        if info["name"] in feeds:
            continue
        dims = info["static_dims"]
        if any(d < 0 for d in dims):
            dims = info["profile"][1] if "profile" in info else None
        if dims is None:
            raise GraftError(f"input '{info['name']}' has dynamic shape {info['shape']}: give it in inputs= or "
                             "its shape in shapes=", "kInvalidArgument")
        dt = np.dtype(info["dtype"])
        if dt.kind == "f":
            feeds[info["name"]] = rng.uniform(-1, 1, dims).astype(dt)
        elif dt.kind == "b":
            feeds[info["name"]] = rng.integers(0, 2, dims).astype(dt)
        else:
            feeds[info["name"]] = rng.integers(0, 4, dims).astype(dt)
    return feeds


def _max_ir_version(message):
    """The IR version onnxruntime's 'Unsupported model IR version: N, max supported IR version: M'
    names as its newest, or None for any other message."""
    import re
    m = re.search(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)", message)
    return int(m.group(2)) if m and int(m.group(2)) < int(m.group(1)) else None


def _with_ir_version(model, ir_version):
    """The model's bytes (model: a path or bytes) with its IR version set to ir_version."""
    import onnx
    proto = onnx.load_from_string(model) if isinstance(model, bytes) else onnx.load(os.fspath(model))
    proto.ir_version = ir_version
    return proto.SerializeToString()


def _run_onnxruntime(model, feeds):
    try:
        import onnxruntime
    except ImportError:
        raise GraftError("reference_device='onnxruntime' needs the onnxruntime Python module "
                         "(pip install onnxruntime)", "kUnsupported") from None
    try:
        session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own Fail type
        # A newer onnx than the onnxruntime stamps models with an IR version the runtime refuses
        # (onnx 1.23 writes 14, onnxruntime 1.30 reads up to 13), though nothing in the model needs
        # it: lower the stamp to what the runtime names and try once more; other errors stand.
        supported = _max_ir_version(str(e))
        if supported is None:
            raise
        session = onnxruntime.InferenceSession(_with_ir_version(model, supported),
                                               providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def compare(model, reference=None, *, device="cpu", reference_device="cpu", inputs=None, shapes=None,
            layerwise=False, rtol=1e-3, atol=1e-5, seed=0, plugins=()):
    """Runs `model` (an .onnx path or its bytes) on `device` and the reference on the same inputs.

    reference: another ONNX model (path or bytes) to compare with; None: the same model.
    reference_device: "cpu", "cuda", "cuda:N", or "onnxruntime" (its CPU provider; needs the
      onnxruntime module, and graft's custom ops registered there: see docs/onnxruntime.md).
    inputs: {name: array} (a dynamic input's shape comes from its array); others get random data
      from `seed`, at their static shape or the one `shapes` gives.
    layerwise: mark every tensor a node computes as an output on both sides, compare them in
      topological order and report the first layer beyond tolerance. A tensor only one side has is
      listed as not compared.
    rtol, atol: a number, or {tensor: number} with "" as the default for the others. An element passes
      when |got - want| <= atol + rtol * |want|.
    The reference is built with the shapes only (float32, default fusion). Returns a Comparison."""
    eng = _native.engine_module()
    cand_bytes, cand_name = _model_bytes(model, "model")
    ref_bytes, ref_name = _model_bytes(reference, "reference") if reference is not None else (cand_bytes, cand_name)
    layers = []
    if layerwise:
        cand_bytes, layers = eng.mark_all_outputs(cand_bytes, cand_name)
        ref_bytes, _ = eng.mark_all_outputs(ref_bytes, ref_name)
    from .engine import Engine
    shapes = dict(shapes or {})
    given = dict(inputs or {})
    candidate = Engine.build(cand_bytes, device=device, shapes=shapes, inputs=given, plugins=plugins)
    rtol, rtols = _tolerances(rtol, "rtol")
    atol, atols = _tolerances(atol, "atol")
    known = {o["name"] for o in candidate.outputs}
    for name in list(rtols) + list(atols):
        if name not in known:
            what = "a tensor of the model" if layerwise else "an output of the model"
            raise GraftError(f"rtol/atol name '{name}', which is not {what} ({', '.join(sorted(known))})",
                             "kInvalidArgument")
    feeds = _random_inputs(candidate, given, seed)
    got = candidate.run(feeds)
    if str(reference_device) == "onnxruntime":
        want = _run_onnxruntime(ref_bytes, feeds)
        ref_where = "onnxruntime (CPU)"
    else:
        ref_engine = Engine.build(ref_bytes, device=reference_device, shapes=shapes, inputs=given, plugins=plugins)
        want_inputs = {i["name"] for i in ref_engine.inputs}
        if want_inputs != set(feeds):
            raise GraftError(f"the models take different inputs: {cand_name} ({', '.join(sorted(feeds))}) and "
                             f"{ref_name} ({', '.join(sorted(want_inputs))})", "kInvalidArgument")
        want = ref_engine.run(feeds)
        ref_where = ref_engine.device
    if not set(got) & set(want):
        raise GraftError(f"the models have no output name in common: {cand_name} ({', '.join(sorted(got))}) and "
                         f"{ref_name} ({', '.join(sorted(want))})", "kInvalidArgument")
    marked = ", every tensor marked" if layerwise else ""
    report, table = eng.compare_tensors(got, want, layers, [o["name"] for o in candidate.outputs], rtol, atol,
                                        rtols, atols, f"{cand_name} on {candidate.device}{marked}",
                                        f"{ref_name} on {ref_where}{marked}")
    return Comparison(json.loads(report), table)
