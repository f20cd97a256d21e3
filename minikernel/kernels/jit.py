"""Compiling kernels: your Python functions, numba-compiled for each path.

A kernel exercise is a plain Python function (``cpu_map``, ``gpu_matmul``, ...). This
module turns the *active* one (yours, or the reference that ``MINIKERNEL_SOLUTIONS``
selects) into compiled code, and takes care of what would otherwise go wrong
silently or cryptically:

* **Unfinished stubs are caught on the host.** A CUDA kernel cannot raise (numba
  drops ``raise`` outside debug mode) and an exception raised by a helper called
  inside a numba ``prange`` loop does not reach the caller, so a kernel that calls a
  stub would return garbage. Before compiling, the kernel and every index helper it
  calls are checked; an untouched stub raises its ``NotImplementedError`` right here.
* **Helpers are compiled per path.** Inside ``minikernel/kernels/cpu.py`` the names
  ``index_to_position`` (your 1.2), ``to_index_into`` (2.1), ``apply_unary``,
  ``apply_binary`` and ``combine`` are ``numba.njit`` functions; inside ``gpu.py``
  the same names are ``cuda.jit(device=True)`` functions.
* **Compile errors name the function to fix**, with numba's own message below.
* **Compiled CPU kernels are cached on disk** (``__pycache__`` next to the source),
  keyed on the kernel's file *and* on everything compiled into it: the code of
  every function it calls (the helpers, as loaded in this process) and the values
  of the constants it reads, so editing ``index_to_position`` recompiles the kernels
  that use it (numba's own cache would not notice).

Several processes may compile the same kernels at once (a notebook beside the
grader, two test workers), each perhaps with a different version of a helper (a
notebook started before an edit). Three rules keep any of them from loading code
compiled for another version: the key is taken from the code this process loaded,
never from the file on disk (which may have been edited since); a data file's name
includes that key, so two versions never write the same file; each file is written
whole under a temporary name and renamed, and the index is updated under a lock.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import os
import textwrap
import time
import types
import warnings
from typing import Any, Callable, Iterator

from .. import device, simulator
from ..course.exercise import STUB_MESSAGE_RE

#: Below this many elements of work a CPU kernel runs on the calling thread alone:
#: waking the other threads would cost more than it saves (PyTorch's grain size).
GRAIN = 32768

#: Flags of every compiled CPU kernel. ``error_model="numpy"``: 1/0 is inf, not an
#: exception. ``reassoc``: sums may be reordered (vectorized); ``contract``: FMA.
CPU_KERNEL_OPTIONS = dict(parallel=True, error_model="numpy", fastmath={"reassoc", "contract"})


def _options_text(options: dict = CPU_KERNEL_OPTIONS) -> str:
    """``options`` (numba's njit options) as text that is the same in every process: a
    set's repr follows string hashing, which Python salts per process, so sort its members."""
    return repr([(k, sorted(v) if isinstance(v, (set, frozenset)) else v)
                 for k, v in sorted(options.items())])

_NUMBA_SUBSET = (
    "Kernels call it from compiled code, so it must stay within numba's nopython subset: "
    "integers, the int64 arrays it is given, for-loops over range() or zip(), arithmetic and "
    "if/else. No lists or tuples built at run time, no f-strings, no exceptions, no Python objects.")


class KernelCompileError(TypeError):
    """numba could not compile a kernel or one of the helpers it calls."""


# ------------------------------------------------------------------ helpers
@functools.cache
def _helper_sources() -> dict[str, tuple[str | None, Callable[[], Callable]]]:
    """name -> (exercise ID or None, getter of the active Python function)."""
    from .. import strides
    from . import index, scalar_ops

    return {
        "index_to_position": ("1.2", lambda: strides.index_to_position),
        "to_index_into": ("2.1", lambda: index.to_index_into),
        "apply_unary": (None, lambda: scalar_ops.apply_unary),
        "apply_binary": (None, lambda: scalar_ops.apply_binary),
        "combine": (None, lambda: scalar_ops.combine),
    }


HELPER_NAMES = ("index_to_position", "to_index_into", "apply_unary", "apply_binary", "combine")
_compiled_helpers: dict[tuple[str, str], Any] = {}


def helper(path: str, name: str):
    """The helper ``name`` compiled for ``path`` ("cpu" or "gpu"); compiled lazily, on first call."""
    key = (path, name)
    if key not in _compiled_helpers:
        fn = _helper_sources()[name][1]()
        if path == "cpu":
            import numba

            _compiled_helpers[key] = numba.njit(error_model="numpy")(fn)
        else:
            from numba import cuda

            _compiled_helpers[key] = cuda.jit(device=True)(fn)
    return _compiled_helpers[key]


def helpers_used(fn: Callable) -> tuple[str, ...]:
    """Helper names the function refers to (directly or as ``mk.name``)."""
    return _helpers_named(fn.__code__)  # the code, not the function: a reload replaces a function's code


@functools.cache
def _helpers_named(code: types.CodeType) -> tuple[str, ...]:
    names = set(code.co_names)
    return tuple(h for h in HELPER_NAMES if h in names)


# -------------------------------------------------------------------- stubs
_stub_messages: dict[Callable, str | None] = {}


def stub_error(fn: Callable) -> NotImplementedError | None:
    """The stub's NotImplementedError if ``fn``'s body is still only ``raise NotImplementedError("exercise ...")``.

    Remembered per function object (a function's code changes only when its module is
    imported again, e.g. after a kernel restart).
    """
    if fn not in _stub_messages:
        _stub_messages[fn] = _stub_message(fn)
    message = _stub_messages[fn]
    return None if message is None else NotImplementedError(message)


def _stub_message(fn: Callable) -> str | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise):
        return None
    call = body[0].exc
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "NotImplementedError"
            and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
            and STUB_MESSAGE_RE.search(call.args[0].value)):
        return call.args[0].value
    return None


def raise_if_unfinished(fn: Callable) -> None:
    """Raise the stub error of ``fn``, else of the first exercise helper ``fn`` calls that is a stub."""
    err = stub_error(fn)
    if err is not None:
        raise err
    sources = _helper_sources()
    for name in helpers_used(fn):
        exercise_id, get = sources[name]
        if exercise_id is not None and (err := stub_error(get())) is not None:
            raise err


# ------------------------------------------------------------ compile errors
def _probe_signatures():
    from numba import types

    ints = types.int64[:]
    return {"index_to_position": (ints, ints, types.int64), "to_index_into": (types.int64, ints, ints)}


def _culprit(path: str, fn: Callable, exercise_id: str) -> str:
    """Which function to blame: an exercise helper that fails to compile on its own, else the kernel."""
    sources = _helper_sources()
    for name, signature in _probe_signatures().items():
        if name not in helpers_used(fn):
            continue
        helper_id, get = sources[name]
        try:
            if path == "cpu":
                import numba

                numba.njit(error_model="numpy")(get()).compile(signature)
            else:
                from numba import cuda

                cuda.jit(signature, device=True)(get())
        except Exception:  # noqa: BLE001 - any failure here means this helper does not compile
            return f"exercise {helper_id} ({name})"
    return f"exercise {exercise_id} ({fn.__name__})"


@contextlib.contextmanager
def compile_errors(path: str, fn: Callable, exercise_id: str) -> Iterator[None]:
    """Turn numba's typing/lowering errors into a KernelCompileError that names what to fix."""
    from numba.core.errors import NumbaError

    try:
        yield
    except NumbaError as err:
        who = _culprit(path, fn, exercise_id)
        detail = "\n".join(str(err).strip().splitlines()[:25])
        raise KernelCompileError(f"{who} does not compile with numba for the {path} kernels. "
                                 f"{_NUMBA_SUBSET}\nnumba said:\n{detail}") from None


# ------------------------------------------------------------------ caching
def _source_bytes(obj: Any) -> bytes:
    try:
        return inspect.getsource(obj).encode()
    except (OSError, TypeError):
        return repr(obj).encode()


#: Seconds after which a data file that no index names is removed (the next save of that kernel).
STALE_DATA_AGE = 3600

_CONSTANT_TYPES = (int, float, complex, bool, str, bytes, type(None))


def _is_constant(value: Any) -> bool:
    import numpy as np

    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return isinstance(value, (*_CONSTANT_TYPES, np.generic, np.dtype))


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _stable_repr(value: Any) -> str:
    """repr that is the same in every process: sets sorted (their order follows string
    hashing, salted per process), code objects by their bytecode and names (marshal's
    output depends on reference counts)."""
    if isinstance(value, types.CodeType):
        return _stable_repr((value.co_code, value.co_consts, value.co_names, value.co_varnames,
                             value.co_freevars, value.co_cellvars, value.co_argcount,
                             value.co_kwonlyargcount, value.co_flags))
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_stable_repr(v) for v in value)) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_stable_repr(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{_stable_repr(k)}: {_stable_repr(v)}" for k, v in value.items())) + "}"
    return repr(value)


def _compiled_function(value: Any) -> Callable | None:
    """The Python function behind a numba dispatcher (the only callables that compiled code
    can call besides numba's own built-ins), else None."""
    fn = getattr(value, "py_func", None)
    return fn if isinstance(fn, types.FunctionType) else None


def fingerprint(fn: Callable) -> str:
    """A hash of everything numba compiles into ``fn``: the code objects of ``fn`` and
    of every numba-compiled function it calls through its globals (directly or as
    ``module.name``), the constants those globals hold (numba freezes them into the
    machine code), closure values and each dispatcher's options.

    Taken from the functions loaded in this process, not from the files on disk: a
    notebook started before an edit compiles the old helper and must say so.
    """
    h = hashlib.sha256()
    seen: set[int] = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        h.update(_stable_repr(f.__code__).encode())
        h.update(_stable_repr([c.cell_contents if _is_constant(c.cell_contents) else type(c.cell_contents).__name__
                               for c in (f.__closure__ or ())]).encode())
        names = sorted({n for code in _code_objects(f.__code__) for n in code.co_names})
        modules = [v for n in names if isinstance(v := f.__globals__.get(n), types.ModuleType)]
        for name in names:
            candidates = [f.__globals__[name]] if name in f.__globals__ else []
            candidates += [getattr(m, name) for m in modules if hasattr(m, name)]
            for value in candidates:
                if _is_constant(value):
                    h.update(f"{name}={value!r};".encode())
                elif (inner := _compiled_function(value)) is not None:
                    options = _stable_repr(getattr(value, "targetoptions", None))
                    h.update(f"{name}->{inner.__module__}.{inner.__qualname__}{options};".encode())
                    todo.append(inner)
    return h.hexdigest()


def _enable_cache(dispatcher, fn: Callable, options: dict = CPU_KERNEL_OPTIONS) -> None:
    """Cache ``dispatcher`` on disk, invalidated when ``fn`` or anything compiled into it changes.

    ``options`` are the njit options ``dispatcher`` was made with. A build with other
    options than the kernels' (``bounds_checked``) keeps an index and data files of its
    own: numba names them after the function alone, and one index stamped with two
    option sets would be emptied by each build in turn."""
    from numba.core.caching import FunctionCache

    from . import scalar_ops, sizes

    try:
        cache = FunctionCache(fn)
    except RuntimeError:
        return  # no writable place for a cache: compile in every process instead
    options_text = _options_text(options)
    parts = [fingerprint(fn).encode(), _source_bytes(scalar_ops), _source_bytes(sizes), options_text.encode()]
    stamp = hashlib.sha256(b"\0".join(parts)).hexdigest()
    index_file = getattr(cache, "_cache_file", None)
    if index_file is None or not all(hasattr(index_file, a) for a in _CACHE_FILE_ATTRIBUTES):
        return  # a numba whose cache layout we do not know: stay uncached rather than stale
    # numba stamps the index with the kernel file's mtime and size; add what is compiled in
    index_file._source_stamp = (index_file._source_stamp, stamp)
    index_file.__class__ = _shared_cache_file_class()
    if options != CPU_KERNEL_OPTIONS:
        base = index_file._index_name.removesuffix(".nbi") + "-" + hashlib.sha256(options_text.encode()).hexdigest()[:8]
        index_file._index_name = f"{base}.nbi"
        index_file._index_path = os.path.join(index_file._cache_path, index_file._index_name)
        index_file._data_name_pattern = base + ".{number:d}.nbc"
    dispatcher._cache = cache


_CACHE_FILE_ATTRIBUTES = ("_source_stamp", "_index_name", "_index_path", "_cache_path", "_data_name_pattern")

#: njit options of ``bounds_checked``: every index checked, loops run serially.
BOUNDS_CHECKED_OPTIONS = dict(boundscheck=True, error_model="numpy", parallel=False)


def bounds_checked(fn: Callable):
    """``fn`` compiled with numba's bounds checks (``BOUNDS_CHECKED_OPTIONS``), cached on disk.

    A kernel compiled as usual checks no index: one element past an array is read or
    written silently. This build raises ``IndexError`` for any such index instead, and
    runs ``prange`` loops serially so that the error reaches the caller. Slower: for
    finding a kernel's out-of-bounds access, not for timing it.

    Example (``args``: what the kernel is called with)::

        checked = bounds_checked(launch.kernel("cpu", "reduce").function)
        checked(*args)  # IndexError where the kernel would read or write past an array
    """
    import numba

    dispatcher = numba.njit(**BOUNDS_CHECKED_OPTIONS)(fn)
    _enable_cache(dispatcher, fn, BOUNDS_CHECKED_OPTIONS)
    return dispatcher


@functools.cache
def _shared_cache_file_class():
    """numba's index/data cache file, made safe for processes that compile at the same time."""
    from numba.core.caching import IndexDataCacheFile

    class SharedIndexDataCacheFile(IndexDataCacheFile):
        """numba numbers a kernel's data files 1, 2, ... in the order signatures are
        saved. Two processes compiling different signatures of one kernel at once (two
        test workers, two notebooks) can both read an empty index, both choose file 1,
        and leave an index that maps one signature to the other's machine code: an
        int64 kernel that reads its scalar as a float's bits, say. Here each signature
        *and source stamp* gets its own data file, named by a hash of both and written
        before the index, and the index is re-read and updated under a file lock. (With
        the signature alone, a process compiling another version of a helper would
        overwrite the file that a current index points to.)
        """

        def save(self, key, data):
            data_name = self._data_name_for(key)
            self._save_data(data_name, data)
            with _file_lock(self._index_path + ".lock"):
                overloads = self._load_index()
                if overloads.get(key) != data_name:
                    overloads[key] = data_name
                    self._save_index(overloads)
                self._remove_stale_data(set(overloads.values()))

        def _remove_stale_data(self, current: set[str]) -> None:
            """Remove this kernel's data files of earlier versions (an hour old, so that a
            process compiling another version right now keeps its file)."""
            prefix = self._data_name_pattern.split("{number:d}")[0]
            now = time.time()
            for entry in os.scandir(self._cache_path):
                if (entry.name.startswith(prefix) and entry.name.endswith(".nbc") and entry.name not in current
                        and now - entry.stat().st_mtime > STALE_DATA_AGE):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

        def _data_name_for(self, key) -> str:
            digest = hashlib.sha256(repr((self._source_stamp, key)).encode()).hexdigest()[:16]
            return self._data_name_pattern.replace("{number:d}", digest)

    return SharedIndexDataCacheFile


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX); elsewhere, no lock: a lost index
    update only means one more compile, never a wrong kernel."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ------------------------------------------------------------------ kernels
class Kernel:
    """One kernel exercise, compiled for its path on first use.

    Args:
        exercise_id: e.g. ``"2.2"``.
        module: the minikernel module that defines it (``minikernel.kernels.cpu``).
        name: the function's name in that module (``"cpu_map"``).
    """

    def __init__(self, exercise_id: str, module, name: str):
        self.exercise_id, self.module, self.name = exercise_id, module, name
        self.path = "gpu" if module.__name__.endswith(".gpu") else "cpu"
        self._compiled = None
        self._compiled_for = None

    @property
    def function(self) -> Callable:
        """The active Python function: yours, or the reference."""
        return getattr(self.module, self.name)

    def check_implemented(self) -> None:
        """Raise the stub's NotImplementedError if this kernel is still the untouched stub."""
        err = stub_error(self.function)
        if err is not None:
            raise err

    def compiled(self):
        fn = self.function
        if self._compiled_for is not fn:
            if self.path == "cpu":
                import numba

                self._compiled = numba.njit(**CPU_KERNEL_OPTIONS)(fn)
                _enable_cache(self._compiled, fn)
                _compile_quietly(self._compiled, fn, self.exercise_id)
            else:
                from numba import cuda

                self._compiled = cuda.jit(fn)
            self._compiled_for = fn
        return self._compiled

    def __call__(self, *args, work: int | None = None) -> None:
        """Run on the CPU: ``kernel(*args)``; ``work`` (elements) below ``GRAIN`` runs on one thread."""
        if self.path != "cpu":
            raise TypeError(f"{self.name} is a GPU kernel: launch it with kernel.launch(grid, block, *args)")
        fn = self.function
        raise_if_unfinished(fn)
        compiled = self.compiled()  # compiles (quietly, errors named) on a call with new argument types
        if work is not None and work < GRAIN:
            with _one_thread():
                compiled(*args)
        else:  # no context managers here: a 256 x 256 matmul takes 0.3 ms, their cost was 5% of it
            compiled(*args)

    def launch(self, grid, block, *args) -> None:
        """Launch on the GPU: ``kernel[grid, block](*args)``; returns before the kernel finishes."""
        if self.path != "gpu":
            raise TypeError(f"{self.name} is a CPU kernel: call it directly")
        device.check_cuda()
        fn = self.function
        raise_if_unfinished(fn)
        with compile_errors("gpu", fn, self.exercise_id), _quiet(), simulator.kernel_launch():
            self.compiled()[grid, block](*args)

    def __repr__(self) -> str:
        return f"<{self.path} kernel {self.name} (exercise {self.exercise_id})>"


def _compile_quietly(dispatcher, fn: Callable, exercise_id: str) -> None:
    """Compile ``dispatcher``'s new specializations under ``_quiet`` and ``compile_errors``.

    numba's dispatcher calls its ``_compile_for_args`` only when no compiled version
    matches the argument types, so the checks cost nothing on every later call.
    """
    compile_for_args = dispatcher._compile_for_args

    def compile_for_args_quietly(*args, **kws):
        with compile_errors("cpu", fn, exercise_id), _quiet():
            return compile_for_args(*args, **kws)

    dispatcher._compile_for_args = compile_for_args_quietly


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Run the parallel loops of small work on the calling thread only."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Hide numba's performance hints and, on the simulator, numpy's inf/nan warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"numba(\.|_cuda)?")
        warnings.filterwarnings("ignore", message=r".*(NumbaPerformanceWarning|parallel=True|prange).*")
        try:
            from numba.core.errors import NumbaPerformanceWarning

            warnings.simplefilter("ignore", NumbaPerformanceWarning)
        except ImportError:
            pass
        if device.SIMULATOR:
            warnings.simplefilter("ignore", RuntimeWarning)
        yield
