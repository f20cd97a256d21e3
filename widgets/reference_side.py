"""Drawing the reference's side while the learner's code is missing.

``references()`` switches every exercise to the course's reference solution for the
length of a ``with`` block (the module attributes that ``@exercise`` bound, and the
kernels numba compiled from them), then puts the learner's functions back. A widget
uses it to draw *something* from the start, labelled as the reference's, when the
learner's exercise is not written yet. Where this edition of the course ships no
references, it raises LookupError and the widget shows its notice alone.
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Iterator

from minikernel.course import exercise as ex, stub_reload


@contextlib.contextmanager
def references() -> Iterator[None]:
    """Every exercise runs its reference inside the block (module doc)."""
    swapped = []
    try:
        for entry in ex.registry().values():
            module = importlib.import_module(f"minikernel.{entry.module}")
            for name, stub in entry.stubs.items():
                reference = ex.reference_of(entry.id, stub)
                swapped.append((module, name, getattr(module, name)))
                setattr(module, name, reference)
        stub_reload.forget_compiled()
        yield
    finally:
        for module, name, function in reversed(swapped):
            setattr(module, name, function)
        stub_reload.forget_compiled()
