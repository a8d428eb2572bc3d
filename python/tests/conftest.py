"""Shared fixtures: the source tree's cells and a fixed random state."""
import os

import pytest

SOURCE = os.environ.get("CELLC_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def cells_dir():
    return os.path.join(SOURCE, "cells")
