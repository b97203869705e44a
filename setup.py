"""Builds graft's native parts with CMake while pip builds the package (see pyproject.toml).

The pure-Python package comes from python/graft; this adds what `cmake --install --component
python` puts beside it: graft._engine, libgraft, libgraft_torch (when PyTorch is importable) and
bin/graft. Settings, through the environment:
  GRAFT_CMAKE_BUILD_DIR  an existing build to reuse (configured with scripts/build.sh, say), else
                         build-pip/cmake in the source tree
  GRAFT_CUDA=1           build the CUDA backend (needs nvcc, cuDNN, cuBLASLt)
  GRAFT_CUDA_ARCHS       the GPUs that build runs on, as CMAKE_CUDA_ARCHITECTURES (default for a package:
                         machine code for sm_80, sm_86, sm_89 and sm_90 plus sm_90 PTX, which newer GPUs
                         compile when they load it; a development build of the tree alone defaults to 90)
  GRAFT_CMAKE_ARGS       more arguments for the configure step
  GRAFT_BUILD_JOBS       parallel build jobs (default: the machine's CPU count)
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def _run(cmd):
    print("graft setup.py:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.check_call(cmd)


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build_dir = os.path.abspath(os.environ.get("GRAFT_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build-pip", "cmake"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DGRAFT_BUILD_TESTS=OFF",
                    f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                args += ["-G", "Ninja"]
            if os.environ.get("GRAFT_CUDA") == "1":
                # A package may be installed on any recent GPU, not only the one it was built on.
                archs = os.environ.get("GRAFT_CUDA_ARCHS") or "80-real;86-real;89-real;90-real;90-virtual"
                args += ["-DGRAFT_ENABLE_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={archs}"]
            try:  # the PyTorch extension builds against the torch this Python imports
                import torch.utils
                args.append(f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}")
            except ImportError:
                args.append("-DGRAFT_BUILD_TORCH=OFF")
            args += shlex.split(os.environ.get("GRAFT_CMAKE_ARGS", ""))
            _run(args)
        jobs = os.environ.get("GRAFT_BUILD_JOBS") or str(os.cpu_count() or 1)
        targets = ["graft", "graft_engine_py", "graft_cli"]
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            if "GRAFT_BUILD_TORCH:BOOL=ON" in f.read() and self._torch_importable():
                targets.append("graft_torch")
        _run(["cmake", "--build", build_dir, "-j", jobs, "--target"] + targets)
        with tempfile.TemporaryDirectory() as stage:
            _run(["cmake", "--install", build_dir, "--component", "python", "--prefix", stage])
            found = glob.glob(os.path.join(stage, "**", "graft", "__init__.py"), recursive=True)
            if not found:
                raise RuntimeError(f"cmake --install put no graft package under {stage}")
            src = os.path.dirname(found[0])
            dst = os.path.join(self.build_lib, "graft")
            for name in os.listdir(src):
                if name.endswith(".py"):
                    continue  # build_py already copied the pure-Python files
                path = os.path.join(src, name)
                target = os.path.join(dst, name)
                if os.path.isdir(path):
                    shutil.copytree(path, target, symlinks=True, dirs_exist_ok=True)
                    continue
                if os.path.lexists(target):  # left by an earlier build in the same folder
                    os.remove(target)
                shutil.copy2(path, target, follow_symlinks=False)

    @staticmethod
    def _torch_importable():
        try:
            import torch  # noqa: F401
            return True
        except ImportError:
            return False


setup(cmdclass={"build_py": BuildWithCMake})
