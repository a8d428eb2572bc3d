"""The package as pip installs it (pyproject.toml, setup.py): into a scratch
venv, from the CMake build these tests import, then imported and run from
outside the checkout with nothing pointing at the build."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

import cellc
from conftest import SOURCE


def cmake_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as cmake:
        return re.search(r"project\(\s*cellc\s+VERSION\s+([0-9.]+)",
                         cmake.read())[1]


def test_version_is_the_projects():
    assert cellc.__version__ == cmake_version()


def test_cell_path_names_the_shipped_cells():
    path = cellc.cell_path("gru")
    assert os.path.basename(path) == "gru.cell"
    with open(path) as shipped, open(os.path.join(SOURCE, "cells",
                                                  "gru.cell")) as source:
        assert shipped.read() == source.read()
    assert cellc.compile(path).name == "gru"


@pytest.mark.parametrize("name", ["nope", "atr.cell", "../cells/atr", ""])
def test_cell_path_of_an_unknown_cell_lists_the_names(name):
    with pytest.raises(ValueError, match=r"no cell named .* there are: "
                                         r"atr, .*gru, .*lstm"):
        cellc.cell_path(name)


def build_dir():
    """The CMake build folder whose module these tests import
    (BUILD/python/cellc/__init__.py), or a skip."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(cellc.__file__))))
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        pytest.skip(f"cellc is imported from {build}, not a CMake build")
    return build


def packaging_artefacts(build):
    """What a build backend could leave in the checkout or in CMake's
    build folder: new entries there mean it wrote outside its temp dir."""
    found = set()
    for folder in (SOURCE, os.path.join(SOURCE, "python"),
                   os.path.join(SOURCE, "python", "cellc")):
        found |= {os.path.join(folder, name) for name in os.listdir(folder)}
    found |= {os.path.join(build, name) for name in os.listdir(build)
              if re.match(r"(lib|bdist|temp)\.", name)}
    return found


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=300, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def test_pip_installs_a_package_that_runs_outside_the_checkout(tmp_path):
    build = build_dir()
    venv = tmp_path / "venv"
    # The venv sees Debian's packages (NumPy, pip, setuptools, wheel), as
    # PEP 668 expects on Debian; pip is Debian's, run by the venv's python.
    made = subprocess.run([sys.executable, "-m", "venv",
                           "--system-site-packages", "--without-pip",
                           str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"no venv (python3-venv): {made.stderr.strip()}")
    python = str(venv / "bin" / "python")
    missing = subprocess.run(
        [python, "-c", "import importlib.util as u; print(*[m for m in "
         "('pip', 'setuptools', 'wheel') if not u.find_spec(m)])"],
        capture_output=True, text=True, check=True).stdout.split()
    if missing:
        pytest.skip(f"no {', '.join(missing)} for the venv (Debian's "
                    "python3-pip, python3-setuptools, python3-wheel)")

    clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
             "TMPDIR": str(tmp_path)}
    before = packaging_artefacts(build)
    run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
         "--no-cache-dir", "--quiet", SOURCE],
        env={**clean, "CELLC_BUILD_DIR": build}, cwd=str(tmp_path))
    assert packaging_artefacts(build) - before == set()

    check = textwrap.dedent("""
        import importlib.metadata, os, sys
        import numpy as np
        import cellc
        venv = sys.argv[1]
        assert cellc.__file__.startswith(venv), cellc.__file__
        print(cellc.__version__, importlib.metadata.version("cellc"))
        atr = cellc.compile(cellc.cell_path("atr"), dims={"H": 2, "I": 2})
        assert atr.source == open(cellc.cell_path("atr")).read()
        x = np.full((2, 1, 2), 0.5, np.float32)
        params = {"Wx": np.eye(2, dtype=np.float32),
                  "Wh": 2 * np.eye(2, dtype=np.float32)}
        out, (h,) = atr.forward([x], params)
        # ATR by hand: p = Wx x, q = Wh h, h' = s(p + q) p + s(p - q) h.
        s = lambda v: 1 / (1 + np.exp(-v))
        h1 = s(0.5) * 0.5
        h2 = s(0.5 + 2 * h1) * 0.5 + s(0.5 - 2 * h1) * h1
        assert np.allclose(out[:, 0, 0], [h1, h2], atol=1e-6), out
        maps = open("/proc/self/maps").read()
        runtime = {line.split()[-1] for line in maps.splitlines()
                   if "libcellrt" in line}
        assert all(path.startswith(venv) for path in runtime), runtime
        print("ok")
        """)
    printed = run([python, "-c", check, str(venv)],
                  env={**clean, "CELLC_CACHE_DIR": str(tmp_path / "cache")},
                  cwd=str(tmp_path)).split()
    assert printed == [cmake_version(), cmake_version(), "ok"]

    # The module finds libcellrt beside it ($ORIGIN), not in the build.
    module, = (venv / "lib").glob("python3*/site-packages/cellc/_cellc*.so")
    try:
        dynamic = run(["readelf", "-d", str(module)])
    except FileNotFoundError:
        return
    runpath = re.search(r"R(UN)?PATH.*\[(.*)\]", dynamic)[2].split(":")
    assert runpath[0] == "$ORIGIN"
    assert not any(path.startswith(build) for path in runpath), runpath
