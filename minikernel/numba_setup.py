"""numba, imported after minikernel has chosen where GPU kernels run.

numba reads ``NUMBA_ENABLE_CUDASIM`` (numba's CUDA simulator, or the GPU) when it is first
imported, and ``device.py`` makes that choice when it is imported. So the library takes numba
from here: importing this module imports ``device`` first, then numba, wherever an import
starts. A module imports this one before numba (``from .numba_setup import cuda``), or sits
in a package whose ``__init__`` does — the exercise files (``kernels/cpu.py``,
``kernels/gpu.py``, ``norm/cpu.py``, ``norm/gpu.py``) import numba as a kernel's author
does, and ``kernels/__init__.py`` and ``norm/__init__.py`` import this module before them.
``tests/test_layers.py`` checks that every numba import comes after this module's.
"""
from .device import CUDA_BACKEND  # the choice, made when device.py is imported

# isort: split
import numba
import numba.extending
from numba import cuda, prange, types

__all__ = ["CUDA_BACKEND", "numba", "cuda", "prange", "types"]
