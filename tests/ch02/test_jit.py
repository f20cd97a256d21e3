"""Compiling the kernels (minikernel/kernels/jit.py): stub checks on the host and compile
errors that name the function to fix. No ``exercise`` marker: these pass in both modes.
(Native lowering of the GPU kernels is checked per exercise in test_gpu_kernels.py.)"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

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


def _fake_kernel(tmp_path: Path, source: str, name: str = "kernel"):
    """A Kernel of exercise 2.2 whose function is ``source``, from a file (numba warns only for code from a file)."""
    path = tmp_path / "fake_kernel.py"
    path.write_text(textwrap.dedent(source))
    namespace = {"np": np}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    fake_module = type(sys)("minikernel.kernels.fake")
    setattr(fake_module, name, namespace[name])
    return jit.Kernel("2.2", fake_module, name), namespace[name]


def test_compiling_shows_none_of_numbas_performance_hints(tmp_path):
    """Each new argument type compiles under the quiet filters, the first call's and later ones."""
    import numba

    source = """
        def kernel(out):
            out[0] = 1.0
    """  # parallel=True without a prange: numba warns that nothing could be parallelized
    kernel, fn = _fake_kernel(tmp_path, source)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kernel(np.zeros(1))
        kernel(np.zeros(1, np.float32))  # a second specialization, compiled on a later call
        kernel(np.zeros(1, np.float32))
    assert [str(w.message) for w in seen] == []
    with warnings.catch_warnings(record=True) as raw:  # the hint the kernel hid
        warnings.simplefilter("always")
        numba.njit(**jit.CPU_KERNEL_OPTIONS)(fn)(np.zeros(1, np.int64))
    assert any("parallel=True" in str(w.message) for w in raw)


def test_a_kernel_that_does_not_compile_for_a_later_type_is_named(tmp_path):
    """The second argument type fails to compile: still a KernelCompileError naming the exercise."""
    kernel, _ = _fake_kernel(tmp_path, """
        def kernel(out, x):
            out[0] = x
    """)
    kernel(np.zeros(1), 2.0)
    with pytest.raises(jit.KernelCompileError, match=r"^exercise 2\.2 \(kernel\) does not compile"):
        kernel(np.zeros(1), "text")


def _racing_cache_files(tmp_path, cls):
    from numba.core.caching import IndexDataCacheFile

    files = [IndexDataCacheFile(str(tmp_path), "cpu_zip-1.py311", "stamp") for _ in range(3)]
    for f in files:
        f.__class__ = cls
    return files


def test_two_processes_saving_at_once_never_swap_kernels(tmp_path):
    """The interleaving that once gave an int64 kernel another signature's code: A and B
    both read the empty index, both write it, then B's data and last A's data."""
    a, b, reader = _racing_cache_files(tmp_path, jit._shared_cache_file_class())
    stale = {}
    b._load_index = lambda: dict(stale)  # B read the index before A wrote it
    real_save_data = a._save_data

    def a_writes_data_last(name, data):
        b.save("int64 signature", "int64 code")
        real_save_data(name, data)

    a._save_data = a_writes_data_last
    a.save("float32 signature", "float32 code")
    for key, code in [("int64 signature", "int64 code"), ("float32 signature", "float32 code")]:
        assert reader.load(key) in (code, None), f"{key} loads another signature's code"
    assert reader.load("int64 signature") == "int64 code"


def test_cached_kernels_survive_two_workers_compiling(tmp_path):
    """Two processes compile different signatures of one kernel into one cache; a third
    loads both from disk and computes what numpy computes."""
    (tmp_path / "kern.py").write_text(textwrap.dedent('''
        import sys
        import numpy as np
        import numba
        from minikernel.kernels.jit import _enable_cache

        def add(out, a, s):
            for i in range(a.shape[0]):
                out[i] = a[i] + s

        d = numba.njit(add)
        _enable_cache(d, add)
        for dtype, s in [(sys.argv[1], 2), ("float32" if sys.argv[1] == "int64" else "int64", -3)]:
            a = np.arange(-5, 5).astype(dtype)
            out = np.empty_like(a)
            d(out, a, np.asarray(s, dtype=dtype)[()])
            assert (out == a + np.asarray(s, dtype=dtype)).all(), (dtype, out)
        print(len(d.stats.cache_hits))
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "kern.py", dt], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, text=True) for dt in ("int64", "float32")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    third = subprocess.run([sys.executable, "kern.py", "int64"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stderr
    assert int(third.stdout.split()[-1]) == 2, "the third process should load both signatures from disk"


def test_a_bounds_checked_build_is_cached_beside_the_kernel(tmp_path):
    """The kernel and its bounds-checked build, compiled in one process, both load from
    disk in the next (neither empties the other's index); the checked build still
    raises IndexError for an index past the array, which the kernel does not check."""
    (tmp_path / "kern.py").write_text(textwrap.dedent('''
        import numpy as np
        import numba
        from minikernel.kernels import jit

        def first(out, a, i):
            out[0] = a[i]

        kernel = numba.njit(**jit.CPU_KERNEL_OPTIONS)(first)
        jit._enable_cache(kernel, first)
        checked = jit.bounds_checked(first)
        a, out = np.arange(4.0), np.zeros(1)
        kernel(out, a, 3)
        checked(out, a, 2)
        assert out[0] == 2.0
        try:
            checked(out, a, 4)
            raised = "none"
        except IndexError:
            raised = "IndexError"
        print(len(kernel.stats.cache_hits), len(checked.stats.cache_hits), raised)
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    runs = [subprocess.run([sys.executable, "kern.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    assert runs[0].stdout.split() == ["0", "0", "IndexError"]
    assert runs[1].stdout.split() == ["1", "1", "IndexError"], "the second process should load both builds from disk"
