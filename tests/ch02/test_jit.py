"""Compiling the kernels (minikernel/kernels/jit.py): stub checks on the host and compile
errors that name the function to fix. No ``exercise`` marker: these pass in both modes.
(Native lowering of the GPU kernels is checked per exercise in test_gpu_kernels.py.)"""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from minikernel import strides
from minikernel.course import exercise as ex
from minikernel.kernels import jit, launch

KERNEL_IDS = [f"2.{n}" for n in range(1, 10)]


@pytest.mark.parametrize("exercise_id", KERNEL_IDS)
def test_stub_detection_tells_stub_from_reference(exercise_id):
    entry = ex.registry()[exercise_id]
    for name, stub in entry.stubs.items():
        err = jit.stub_error(stub)
        assert isinstance(err, NotImplementedError) and f"exercise {exercise_id} ({name})" in str(err)
        assert jit.stub_error(ex.reference_of(exercise_id, stub)) is None


def test_a_started_stub_is_not_an_untouched_stub():
    def started(x):
        """Docstring."""
        y = x + 1  # noqa: F841 - the learner began
        raise NotImplementedError("exercise 2.2 (cpu_map) is not implemented yet")

    def untouched(x):
        """Docstring."""
        # TODO(2.2): ≈1 line
        raise NotImplementedError("exercise 2.2 (cpu_map) is not implemented yet")

    assert jit.stub_error(started) is None
    assert str(jit.stub_error(untouched)) == "exercise 2.2 (cpu_map) is not implemented yet"


def test_kernels_are_registered_per_device_and_path():
    for where, path in (("cpu", "cpu"), ("cuda", "gpu")):
        for name in ("map", "zip", "reduce", "matmul"):
            k = launch.kernel(where, name)
            assert k.path == path and k.function.__name__ == f"{path}_{name}"
    with pytest.raises(TypeError, match="GPU kernel"):
        launch.kernel("cuda", "map")(0)
    with pytest.raises(TypeError, match="CPU kernel"):
        launch.kernel("cpu", "map").launch(1, 1)


def test_a_helper_that_does_not_compile_is_named(monkeypatch):
    """A learner's index_to_position that builds a tuple: the error says which exercise and why."""
    import numba

    def tuple_building(index, strides, offset=0):
        return offset + sum(tuple(i * s for i, s in zip(index, strides)))

    monkeypatch.setattr(strides, "index_to_position", tuple_building)
    namespace = {"index_to_position": numba.njit(tuple_building), "np": np}
    exec(textwrap.dedent("""
        def kernel(out, index, strides):
            out[0] = index_to_position(index, strides, 0)
    """), namespace)
    fake_module = type(sys)("minikernel.kernels.fake")
    fake_module.kernel = namespace["kernel"]
    kernel = jit.Kernel("2.2", fake_module, "kernel")
    with pytest.raises(jit.KernelCompileError) as info:
        kernel(np.zeros(1), np.zeros(2, np.int64), np.ones(2, np.int64))
    message = str(info.value)
    assert message.startswith("exercise 1.2 (index_to_position) does not compile with numba for the cpu kernels")
    assert "no lists or tuples" in message.lower() and "numba said" in message
