"""Chapter 02: kernels — map, zip, reduce and matmul on the CPU and the GPU.

=================  =========================================================
``index.py``       exercise 2.1: ``to_index_into``, the index helper kernels call
``cpu.py``         exercises 2.2–2.5: CPU kernels (``numba.njit(parallel=True)``)
``gpu.py``         exercises 2.6–2.9: GPU kernels (``numba.cuda.jit``)
``scalar_ops.py``  the per-element functions behind the op codes
``sizes.py``       task, tile and block sizes
``layout.py``      output strides and loop order (PyTorch's TensorIterator rules)
``jit.py``         compiling your functions, stub checks, clear compile errors, caching
``launch.py``      host side: Tensors to kernel arguments, GPU grids
=================  =========================================================

The Tensor operations that reach these kernels (``+``, ``exp()``, ``sum()``, ``@``,
...) live in ``minikernel/aten/`` (``tensor_iterator.py``: the steps before a kernel).
"""
from .. import numba_setup  # noqa: F401 - numba, after the GPU/simulator choice
from . import cpu, gpu, index  # noqa: F401 - exercises 2.1-2.9
