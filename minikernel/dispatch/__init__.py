"""minikernel's dispatcher (chapter 09): one path from an operator call to the kernel that runs.

* ``keys``        ``DispatchKey`` (PyTorch's order) and ``DispatchKeySet``
* ``schema``      operator schemas: ``"add(Tensor self, Tensor other) -> Tensor"``
* ``registry``    operators declared once, kernels per key, fallbacks, fallthrough, and
                  each operator's dispatch table, computed when they are registered
* ``extractor``   ``DispatchKeyExtractor``: a call's key set from its arguments
* ``state``       the thread-local include/exclude sets and the mode stack
* ``dispatcher``  ``call`` and ``redispatch``: a table lookup by the highest key; ``trace``
* ``modes``       ``DispatchMode`` (``TorchDispatchMode``) and the ``Python`` key's fallback
* ``rebuild``     exercises 9.1–9.3: the semantics the table encodes, as the interpretive
                  loop you write (the chapter checks the two agree)

The library's own tensors go through it (``minikernel/aten/native_functions.py`` declares
their operators, ``aten/registration.py`` registers them); exercises never replace it,
so nothing else depends on chapter 09.
"""
from . import rebuild, registry, state  # rebuild: exercises 9.1-9.3
from .dispatcher import Step, call, redispatch, trace
from .extractor import DispatchKeyExtractor, keys_of
from .keys import BACKENDS, DispatchKey, DispatchKeySet, keyset
from .modes import DispatchMode, LoggingMode, install_default_fallbacks
from .registry import FALLTHROUGH, Operator
from .schema import FunctionSchema, parse_schema
from .state import exclude_keys, include_keys, local_exclude, local_include

install_default_fallbacks()

__all__ = ["DispatchKey", "DispatchKeySet", "keyset", "BACKENDS", "FunctionSchema", "parse_schema",
           "Operator", "FALLTHROUGH", "registry", "state", "rebuild", "call", "redispatch", "keys_of",
           "DispatchKeyExtractor", "trace", "Step", "DispatchMode", "LoggingMode", "include_keys", "exclude_keys",
           "local_include", "local_exclude"]
