"""A dims key that no cell of the file declares is an error naming it: the
front end once ignored it, leaving the dimension the user meant free."""
import os
import sys

import pytest

import cellc


def test_unknown_compile_dim_is_named(cells_dir):
    path = os.path.join(cells_dir, "atr.cell")
    with pytest.raises(Exception, match="--dim Q=3: no cell in this file "
                                        "has a dimension 'Q'"):
        cellc.compile(path, dims={"Q": 3})
    assert cellc.compile(path, dims={"H": 4}) is not None


def test_cache_names_the_compiler_build_not_python():
    # The JIT's cache key named the process's executable, which here is
    # python3: a rebuilt compiler's objects never replaced the cached ones
    # (a changed front end went unseen). It names the file holding the JIT.
    identity = cellc._cellc._compiler_identity()
    holder = identity.rsplit(":", 2)[0]
    assert os.path.realpath(holder) != os.path.realpath(sys.executable)
    assert os.path.realpath(holder) == os.path.realpath(cellc._cellc.__file__)
