# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "cellc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".cell", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cellc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "unit", "numerics", "Inputs", "install"]

config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
config.substitutions.append(("%cells", os.path.join(config.cellc_src_root, "cells")))
config.substitutions.append(("%cellrt_include",
                             os.path.join(config.cellc_src_root, "runtime", "include")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.cellc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["cellc", "cell-opt"], [config.cellc_tools_dir])

# `cellc check` runs cellc-check, built only where LibTorch is installed.
if os.path.exists(os.path.join(config.cellc_tools_dir, "cellc-check")):
    config.available_features.add("cellc-check")

# The GPU backend is linked into cellc; a GPU run needs a CUDA driver too.
if getattr(config, "cellc_has_cuda", False):
    config.available_features.add("cuda-backend")
def usable_gpu():
    import ctypes
    try:
        return ctypes.CDLL("libcuda.so.1").cuInit(0) == 0
    except (OSError, AttributeError):
        return False
if usable_gpu():
    config.available_features.add("cuda-driver")

# PTX validation needs ptxas (CUDA toolkit); tests say REQUIRES: ptxas.
ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# Pictures are drawn by Debian's Python with python3-matplotlib (installed by
# scripts/setup.sh); tests that draw say REQUIRES: matplotlib.
import subprocess
plot_python = "/usr/bin/python3"
if os.path.exists(plot_python) and subprocess.call(
        [plot_python, "-c", "import matplotlib"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("matplotlib")
    config.substitutions.append(("%plotpython", plot_python))

# The independent PyTorch implementation of models/nmt/reference runs on
# Debian's python3-torch (scripts/setup.sh); its tests say REQUIRES: torch.
if os.path.exists(plot_python) and subprocess.call(
        [plot_python, "-c", "import torch"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("torch")
    config.substitutions.append(("%torchpython", plot_python))

# Data-parallel training through Open MPI's launcher (scripts/setup.sh
# installs openmpi-bin); tests say REQUIRES: mpirun. Containers run tests
# as root, which mpirun refuses unless told, and may have no ssh, which
# mpirun looks for even to start ranks on this machine ("false" stands in).
if shutil.which("mpirun"):
    config.available_features.add("mpirun")
    config.environment["OMPI_MCA_plm_rsh_agent"] = "false"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
