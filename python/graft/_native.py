"""Finds and loads graft's native pieces: libgraft_torch.so (torch ops) and _engine*.so (engine).

Search order for each file: $GRAFT_LIB_DIR, then every ``graft`` folder on sys.path (the package
itself and, with ``PYTHONPATH=python:build/python``, the build tree), then ``build*/python/graft``
beside the source tree. The first match wins.
"""
import glob
import importlib.machinery
import importlib.util
import os
import sys

from ._errors import GraftError

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(os.path.dirname(_PKG_DIR))


def _candidate_dirs():
    dirs = []
    env = os.environ.get("GRAFT_LIB_DIR")
    if env:
        for d in env.split(os.pathsep):
            dirs += [d, os.path.join(d, "graft"), os.path.join(d, "python", "graft")]
    dirs.append(_PKG_DIR)
    for p in sys.path:
        dirs.append(os.path.join(p or os.getcwd(), "graft"))
    dirs += sorted(glob.glob(os.path.join(_REPO_DIR, "build*", "python", "graft")))
    seen, out = set(), []
    for d in dirs:
        d = os.path.abspath(d)
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def find_file(patterns):
    for d in _candidate_dirs():
        for pat in patterns:
            hits = sorted(glob.glob(os.path.join(d, pat)))
            if hits:
                return hits[0]
    return None


def _missing(what, patterns):
    return GraftError(
        f"graft: {what} ({' or '.join(patterns)}) was not found. Build it (ninja -C build "
        f"graft_torch graft_engine_py) and either set PYTHONPATH=python:build/python or "
        f"GRAFT_LIB_DIR=build/python/graft. Searched: {', '.join(_candidate_dirs())}")


_engine_module = None


def engine_module():
    """The graft._engine extension module (pybind11), loaded from wherever it was built."""
    global _engine_module
    if _engine_module is not None:
        return _engine_module
    suffixes = [f"_engine{s}" for s in importlib.machinery.EXTENSION_SUFFIXES]
    path = find_file(suffixes)
    if path is None:
        raise _missing("the engine bindings", ["_engine*.so"])
    name = "graft._engine"
    if name in sys.modules:
        _engine_module = sys.modules[name]
        return _engine_module
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        loader.exec_module(mod)
    except Exception:
        del sys.modules[name]
        raise
    _engine_module = mod
    return mod


def torch_library_path():
    path = find_file(["libgraft_torch.so"])
    if path is None:
        raise _missing("the PyTorch extension", ["libgraft_torch.so"])
    return path
