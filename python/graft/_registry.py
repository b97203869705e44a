"""The op registry as the PyTorch extension sees it: loads libgraft_torch.so, defines the torch ops
and describes them (names, inputs, attributes) for the generated Python API."""
import contextlib
import dataclasses
import json
import threading
from typing import List, Optional

from . import _native
from ._errors import GraftError


@dataclasses.dataclass
class AttrInfo:
    name: str
    type: str           # "float", "int", "string", "floats", "ints", "strings"
    required: bool
    default: str        # graft's text form of the default ("" when required)
    min_value: Optional[float]
    max_value: Optional[float]


@dataclasses.dataclass
class ExampleInput:
    """One input of an op's example call (OpDef::example): absent, drawn at random uniformly in
    [lo, hi), or fixed values (index tables, boxes) of a graft dtype, flat in row-major order."""
    kind: str           # "absent", "random" or "fixed"
    dims: tuple = ()
    lo: float = -2.0
    hi: float = 2.0
    dtype: str = ""     # fixed: graft's dtype name ("int64", "float32", ...)
    values: tuple = ()  # fixed: the values


@dataclasses.dataclass
class Example:
    inputs: List[ExampleInput]
    attrs: dict         # attribute name -> Python value


@dataclasses.dataclass
class OpInfo:
    torch_name: str     # torch.ops.graft.<torch_name>
    name: str           # ONNX op_type == TensorRT plugin name
    domain: str
    version: str
    plugin_namespace: str
    has_backward: bool
    inputs: List[str] = dataclasses.field(default_factory=list)
    optional_inputs: List[bool] = dataclasses.field(default_factory=list)
    input_dtypes: List[List[str]] = dataclasses.field(default_factory=list)  # allowed; [] = any
    outputs: List[str] = dataclasses.field(default_factory=list)
    differentiable: List[int] = dataclasses.field(default_factory=list)
    attrs: List[AttrInfo] = dataclasses.field(default_factory=list)
    examples: List[Example] = dataclasses.field(default_factory=list)  # the definition's example calls
    doc: str = ""

    @property
    def python_name(self):
        return snake_case(self.torch_name)

    @property
    def diff_inputs(self):
        return self.differentiable or list(range(len(self.inputs)))

    def input_is_float(self, i):
        """Whether input i takes floating-point tensors (False for index/integer-only inputs)."""
        dts = self.input_dtypes[i] if i < len(self.input_dtypes) else []
        return not dts or any(d.startswith(("float", "bfloat")) for d in dts)

    def attr(self, name):
        for a in self.attrs:
            if a.name == name:
                return a
        return None

    def torch_op(self):
        import torch
        return getattr(torch.ops.graft, self.torch_name)

    def torch_backward_op(self):
        import torch
        return getattr(torch.ops.graft, self.torch_name + "_backward")


def snake_case(name):
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i > 0 and (not name[i - 1].isupper() or
                                      (i + 1 < len(name) and name[i + 1].islower())):
            if name[i - 1] != "_":
                out.append("_")
        out.append(c.lower())
    return "".join(out)


_lock = threading.RLock()
_loaded = False
_ops = {}            # torch_name -> OpInfo
_listeners = []      # called with the list of new OpInfo after each (re)definition


def _parse(text):
    ops = []
    cur = None
    for rec in text.split("\x1e"):
        if not rec:
            continue
        f = rec.split("\x1f")
        kind = f[0]
        if kind == "op":
            cur = OpInfo(torch_name=f[1], name=f[2], domain=f[3], version=f[4], plugin_namespace=f[5],
                         has_backward=f[6] == "1")
        elif kind == "in":
            cur.inputs.append(f[1])
            cur.optional_inputs.append(f[2] == "1")
            cur.input_dtypes.append([d for d in f[3].split(",") if d] if len(f) > 3 else [])
        elif kind == "out":
            cur.outputs.append(f[1])
        elif kind == "diff":
            cur.differentiable.append(int(f[1]))
        elif kind == "attr":
            cur.attrs.append(AttrInfo(f[1], f[2], f[3] == "1", f[4],
                                      float(f[5]) if f[5] else None, float(f[6]) if f[6] else None))
        elif kind == "ex":
            cur.examples.append(Example([], {k: v["value"] for k, v in json.loads(f[1]).items()}))
        elif kind == "exin":
            dims = tuple(int(d) for d in f[3].split(",") if d) if len(f) > 3 else ()
            spec = ExampleInput(f[2], dims)
            if f[2] != "absent":
                spec.lo, spec.hi = float(f[4]), float(f[5])
            if f[2] == "fixed":
                spec.dtype = f[6]
                spec.values = tuple(float(v) for v in f[7].split(",") if v)
            cur.examples[-1].inputs.append(spec)
        elif kind == "doc":
            cur.doc = "\x1f".join(f[1:])
        elif kind == "end":
            ops.append(cur)
            cur = None
    return ops


@contextlib.contextmanager
def _untraced():
    # The registry calls (_define_ops, _op_metadata) are torch ops; a first lookup from inside
    # torch.jit.trace / the TorchScript ONNX exporter would be recorded, and the tracer rejects
    # their string-list argument ("unsupported input list type: str"). They are not model code.
    import torch
    get = getattr(torch._C, "_get_tracing_state", None)
    state = get() if get is not None else None
    if state is None:
        yield
        return
    torch._C._set_tracing_state(None)
    try:
        yield
    finally:
        torch._C._set_tracing_state(state)


def ensure_loaded(plugins=()):
    """Loads libgraft_torch.so once, loads `plugins` into graft's registry and defines every op
    not defined yet as torch.ops.graft.*. Returns {torch_name: OpInfo}."""
    global _loaded
    import torch
    from . import ops  # noqa: F401 - registers the listeners that generate graft.ops.*
    with _lock, _untraced():
        if not _loaded:
            torch.ops.load_library(_native.torch_library_path())
            _loaded = True
        try:
            problems = torch.ops.graft._define_ops(list(plugins))
        except RuntimeError as e:
            raise GraftError(str(e).split("\nException raised from")[0]) from None
        for p in problems:
            import warnings
            warnings.warn(f"graft: op not exposed to PyTorch: {p}")
        new = []
        for info in _parse(torch.ops.graft._op_metadata()):
            if info.torch_name not in _ops:
                _ops[info.torch_name] = info
                new.append(info)
        for fn in list(_listeners):
            fn(new)
        return dict(_ops)


def ops():
    """{torch_name: OpInfo}; loads the extension on first use (cheap afterwards)."""
    if _loaded:
        return _ops
    return ensure_loaded()


def find(name):
    """OpInfo by torch name, ONNX name or python (snake_case) name."""
    # Known ops first (no extension call); then a reload, for ops registered since (plugins).
    for table in (ops, ensure_loaded):
        for info in table().values():
            if name in (info.torch_name, info.name, info.python_name):
                return info
    raise GraftError(f"graft: no op named '{name}' is registered (known: "
                     f"{', '.join(sorted(_ops)) or 'none'}); load its plugin with graft.load_plugin(path)")


_found = {}  # name -> OpInfo, for find_once


def find_once(name):
    """find(name) on the first call, the same OpInfo afterwards without calling into the extension
    (which must not happen while torch traces a module that uses the op)."""
    info = _found.get(name)
    if info is None:
        info = _found[name] = find(name)
    return info


def available(name):
    """Whether graft's torch extension loads and has the op `name`."""
    try:
        find_once(name)
        return True
    except Exception:  # noqa: BLE001 - any load failure means "not available"
        return False


def on_new_ops(fn):
    with _lock:
        _listeners.append(fn)
