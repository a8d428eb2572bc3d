"""What several test files need beside the fixtures."""
import os

import pytest

import cellc


def cellc_binary():
    """build/bin/cellc beside the module (build/python/cellc/__init__.py),
    or a skip when the module is an install without it."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(cellc.__file__))))
    path = os.path.join(build, "bin", "cellc")
    if not os.path.exists(path):
        pytest.skip("no cellc binary beside the module (an install)")
    return path
