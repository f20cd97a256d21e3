"""Chapter 05: variance and LayerNorm — the statistics, then the kernels.

================  ==========================================================
``stats.py``      exercise 5.1: two-pass variance; ``var``/``std``/``var_mean``/``std_mean``
``online.py``     exercises 5.2, 5.3: Welford's update and Chan's merge; the one-pass formula
``cpu.py``        exercises 5.4, 5.5: LayerNorm forward and backward kernels (numba parallel)
``gpu.py``        exercises 5.6, 5.7: the same on the GPU (numba CUDA; simulator without one)
``native.py``     host side: ``native_layer_norm`` and ``native_layer_norm_backward``
``sizes.py``      rows per CPU task, threads per GPU block
================  ==========================================================
"""
from .. import numba_setup  # noqa: F401 - numba, after the GPU/simulator choice
from . import cpu, gpu, online, stats  # noqa: F401 - exercises 5.1-5.7
from .native import layer_norm, native_layer_norm, native_layer_norm_backward
from .online import one_pass_var, welford, welford_var
from .stats import std, std_mean, var, var_mean

__all__ = ["var", "std", "var_mean", "std_mean", "welford", "welford_var", "one_pass_var",
           "native_layer_norm", "native_layer_norm_backward", "layer_norm"]
