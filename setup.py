"""Packages cellc's Python module from a CMake build of this checkout
(pyproject.toml holds the rest of the package's description).

The compiler is not built here. The module comes from the CMake build folder
$CELLC_BUILD_DIR (default: build; relative paths are the checkout's), used
as it is; only where the folder has no CMake build yet is it configured and
the target _cellc built (scripts/build.sh _cellc). CMake then stages the
module, with an RPATH of $ORIGIN, and libcellrt beside it
(`cmake --install BUILD --component python-wheel`), and they join the
package's .py files and cells/*.cell. setuptools' own build folders go to
a temporary folder: ./build is CMake's.
"""

import atexit
import glob
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = os.path.dirname(os.path.abspath(__file__))


def project_version():
    """The version CMakeLists.txt's project() declares: the one source of
    truth, which the module reports as cellc.__version__."""
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as cmake:
        declared = re.search(r"project\(\s*cellc\s+VERSION\s+([0-9.]+)",
                             cmake.read())
    if not declared:
        raise RuntimeError("CMakeLists.txt declares no project(cellc "
                           "VERSION ...)")
    return declared[1]


def cmake_build_dir():
    """The CMake build to package, configured and built (_cellc only) if it
    does not exist yet."""
    build = os.path.join(SOURCE, os.environ.get("CELLC_BUILD_DIR") or "build")
    if os.path.exists(os.path.join(build, "CMakeCache.txt")):
        print(f"setup.py: packaging the CMake build in {build} as it is "
              f"(rebuild it first with: ninja -C {build} _cellc)", flush=True)
    else:
        print(f"setup.py: {build} holds no CMake build: configuring it and "
              "building the target _cellc (scripts/build.sh _cellc; the "
              "compiler's libraries too, which takes a while)", flush=True)
        subprocess.run([os.path.join(SOURCE, "scripts", "build.sh"), "_cellc"],
                       env={**os.environ, "BUILD_DIR": build}, check=True)
    return build


def copy_libraries(stage, destination):
    """The staged files into `destination`, a library under the name of the
    link to it (its soname, which the module asks for): wheels keep links
    as copies."""
    names = os.listdir(stage)
    linked = {os.path.realpath(os.path.join(stage, name)) for name in names
              if os.path.islink(os.path.join(stage, name))}
    for name in names:
        path = os.path.join(stage, name)
        if os.path.islink(path) or os.path.realpath(path) not in linked:
            shutil.copy2(path, os.path.join(destination, name))


class CMakeBuiltExtension(build_ext):
    """Takes cellc._cellc and libcellrt from CMake instead of compiling."""

    def build_extension(self, extension):
        build = cmake_build_dir()
        name = "_cellc" + sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build, "python", "cellc")
        if not os.path.exists(os.path.join(built, name)):
            found = glob.glob(os.path.join(built, "_cellc*"))
            raise RuntimeError(
                f"{build} holds no {name} for this Python (found: "
                f"{[os.path.basename(f) for f in found] or 'none'}): build "
                f"it with ninja -C {build} _cellc, for this Python with "
                "cmake -DCELLC_PYTHON=... (python3-pybind11 installed)")
        stage = tempfile.mkdtemp(prefix="cellc-stage-")
        try:
            subprocess.run(["cmake", "--install", build, "--component",
                            "python-wheel", "--prefix", stage], check=True)
            staged = os.path.join(stage, "cellc")
            if not os.path.isdir(staged):
                raise RuntimeError(
                    f"{build} was configured without the python-wheel "
                    f"install component: ninja -C {build} _cellc "
                    "configures it again")
            target = self.get_ext_fullpath(extension.name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            copy_libraries(staged, os.path.dirname(target))
        finally:
            shutil.rmtree(stage)


scratch = tempfile.mkdtemp(prefix="cellc-setuptools-")
atexit.register(shutil.rmtree, scratch, ignore_errors=True)

setup(
    version=project_version(),
    ext_modules=[Extension("cellc._cellc", sources=[])],
    cmdclass={"build_ext": CMakeBuiltExtension},
    options={"build": {"build_base": os.path.join(scratch, "build")},
             "egg_info": {"egg_base": scratch}},
)
