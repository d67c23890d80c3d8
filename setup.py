"""setup.py — the build step of the Python package (pyproject.toml holds its
metadata): the package `spindle` is bindings/python/spindle (Python files,
type stubs, py.typed); its extension module spindle._C is built by the
project's CMake (target spindle_python) and copied into the wheel.

The CMake build folder is, in order: $SPINDLE_BUILD_DIR; the checkout's
build/ when it is already configured (the folder the README's commands make,
so nothing compiles twice); otherwise a folder under setuptools' build_temp,
configured for the running interpreter without tests, benchmarks or Node.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = self.cmake_build_dir()
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "spindle_python", "-j", jobs], check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build_dir / "bindings" / "python" / "spindle" / f"_C{suffix}"
        if not built.exists():
            found = sorted(p.name for p in built.parent.glob("_C*.so"))
            sys.exit(f"spindle: {built} was not built (found {found or 'nothing'}); the build folder "
                     f"{build_dir} was configured for another Python than {sys.executable}: "
                     "set SPINDLE_BUILD_DIR to a new folder")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)

    def cmake_build_dir(self):
        if os.environ.get("SPINDLE_BUILD_DIR"):
            build_dir = Path(os.environ["SPINDLE_BUILD_DIR"]).resolve()
        elif (ROOT / "build" / "CMakeCache.txt").exists():
            build_dir = ROOT / "build"
        else:
            build_dir = Path(self.build_temp).resolve() / "cmake"
        if not (build_dir / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator, "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPython_EXECUTABLE={sys.executable}", "-DSPINDLE_BUILD_TESTS=OFF",
                            "-DSPINDLE_BUILD_BENCH=OFF", "-DSPINDLE_BUILD_NODE=OFF"], check=True)
        return build_dir


setup(packages=["spindle", "spindle.capi"], package_dir={"": "bindings/python"},
      package_data={"spindle": ["__init__.pyi", "py.typed"]},
      ext_modules=[Extension("spindle._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
