"""Building and running ``cpp/libtorch_side.cpp``: chapter 08's TorchScript file loaded in C++.

The program is linked against the libtorch that the installed torch wheel ships (headers
in ``torch/include``, libraries in ``torch/lib``) with the system C++ compiler; no cmake,
nothing downloaded. It has two modes:

* ``load MODEL INPUT``: ``torch::jit::load`` a saved TorchScript module — the file holds
  its TorchScript code (IR) and its weights — and run ``forward`` on the tensor in
  ``INPUT``; libtorch's interpreter runs it, with no Python in the process.
* ``train STEPS LR``: the C++ frontend — ``torch::manual_seed(0)``, ``x = randn(8, 3)``,
  ``y = x @ [1, -2, 0.5]ᵀ + 0.3``, a ``torch::nn::Linear(3, 1)`` and ``STEPS`` steps of
  ``torch::optim::SGD(LR)`` on ``mse_loss``; it prints the loss before each step.

The binary is built once into a cache folder keyed by the sha256 of (source, torch
version, compiler version, flags): ``$MINIKERNEL_CPP_CACHE``, else
``$XDG_CACHE_HOME/minikernel/libtorch``, else ``~/.cache/minikernel/libtorch``. The
compiler is ``$MINIKERNEL_CXX`` if set, else ``g++``.

Nothing here raises for a missing compiler or a failed build: :func:`build` returns a
one-line reason, and :func:`load_and_run` / :func:`train` then answer from the outputs
recorded with the course (``cpp/libtorch_side_recorded.json``), with a note saying so,
when the same request was recorded. Running chapter 08 with ``MINIKERNEL_RECORD_CPP`` naming a
JSON file writes every successful run there (:func:`record`), in the recording's format.

Build time, first build into an empty cache (Debian 12, g++ 12.2.0, torch 2.13.0+cpu, two
cores shared with other work): 47.9 s at load 6.9–7.6 and 71.7 s at load 10.3–11.2 (``uptime``
before and after), each measured with
``MINIKERNEL_CPP_CACHE=<empty folder> python -c "...; t = time.perf_counter(); libtorch_build.build();
print(time.perf_counter() - t)"``; a second ``build()`` finds the binary in 0.01 s.

Tensors cross as text: a line ``shape d0 d1 ...`` and a line ``values v0 v1 ...``
(row-major float32, 9 significant digits, which reads back to the same float).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils import cpp_extension

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "cpp" / "libtorch_side.cpp"
RECORDED = HERE / "cpp" / "libtorch_side_recorded.json"
PROGRAM = "libtorch_side"
CXX_VAR = "MINIKERNEL_CXX"
CACHE_VAR = "MINIKERNEL_CPP_CACHE"
RECORD_VAR = "MINIKERNEL_RECORD_CPP"
NO_COMPILER_HINT = "install a C++ compiler (Debian: apt install g++) to build this"
BUILD_TIMEOUT_S = 900
RUN_TIMEOUT_S = 120


@dataclass(frozen=True)
class Built:
    """The outcome of :func:`build`: the program's path, or ``None`` and a one-line ``reason``."""

    path: Path | None
    reason: str | None = None
    compiler: str = ""


@dataclass(frozen=True)
class CppResult:
    """The program's stdout for one request, and ``note``: None if it ran here, else one line
    saying why it did not and where ``text`` comes from (a recording, or nothing: ``text`` empty)."""

    text: str
    note: str | None = None


def compiler_name() -> str:
    """The compiler to use: ``$MINIKERNEL_CXX``, else ``g++``."""
    return os.environ.get(CXX_VAR) or "g++"


def cache_root() -> Path:
    """The folder the builds go to (see the module's docstring)."""
    if os.environ.get(CACHE_VAR):
        return Path(os.environ[CACHE_VAR])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minikernel" / "libtorch"


def compile_command(cxx: str, source: Path, output: Path) -> list[str]:
    """The one command that compiles and links ``source`` into ``output`` against torch's libtorch.

    ``-O1`` and one translation unit keep the build short; ``_GLIBCXX_USE_CXX11_ABI`` must match
    the wheel's, or the linker cannot find libtorch's functions that take a ``std::string``.
    """
    command = [cxx, "-std=c++20", "-O1", "-w"]
    if sys.platform.startswith("linux"):
        command.append(f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
    command += [f"-I{p}" for p in cpp_extension.include_paths()]
    command += [str(source), "-o", str(output)]
    for lib in cpp_extension.library_paths():
        command += [f"-L{lib}", f"-Wl,-rpath,{lib}"]
    return command + ["-ltorch", "-ltorch_cpu", "-lc10"]


def compiler_version(cxx_path: str) -> str | None:
    """The first line of ``cxx --version``, None if it does not run."""
    try:
        done = subprocess.run([cxx_path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0] if done.returncode == 0 and lines else None


def build_key(source_text: str, cxx_version: str, command: list[str]) -> str:
    """The cache key: sha256 of the source, torch's version, the compiler's version and the flags."""
    flags = " ".join(a for a in command if a.startswith("-"))
    text = "\n".join([source_text, torch.__version__, cxx_version, flags])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build(source: Path = SOURCE, cache: Path | None = None) -> Built:
    """Compile ``source`` once into the cache (or find it there); never raises for a missing
    compiler or a failed build: the returned ``reason`` says what went wrong, in one line."""
    if sys.platform == "win32":
        return Built(None, "building the libtorch program is set up for Linux and macOS only (g++ or clang++)")
    name = compiler_name()
    cxx_path = shutil.which(name)
    if cxx_path is None:
        shown = f"{CXX_VAR}={name}" if os.environ.get(CXX_VAR) else name
        return Built(None, f"{shown} not found: {NO_COMPILER_HINT}")
    version = compiler_version(cxx_path)
    if version is None:
        return Built(None, f"{cxx_path} --version failed: is it a C++ compiler? {NO_COMPILER_HINT}")
    folder = (cache or cache_root())
    probe = compile_command(cxx_path, source, folder / PROGRAM)
    target = folder / build_key(source.read_text(encoding="utf-8"), version, probe) / PROGRAM
    if target.is_file():
        return Built(target, compiler=version)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return Built(None, f"cannot create the build folder {target.parent}: {err.strerror}")
    partial = target.with_name(f"{PROGRAM}.{os.getpid()}.partial")  # renamed into place when complete
    log = target.with_name("build.log")
    try:
        done = subprocess.run(compile_command(cxx_path, source, partial), capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        partial.unlink(missing_ok=True)
        return Built(None, f"the build took over {BUILD_TIMEOUT_S} s and was stopped")
    except OSError as err:
        return Built(None, f"{cxx_path} did not start: {err.strerror}")
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        errors = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines() or [""]
        return Built(None, f"the build failed ({name} exit {done.returncode}): {errors[0].strip()[:200]}; "
                           f"full log: {log}")
    os.replace(partial, target)
    return Built(target, compiler=version)


def tensor_text(t: torch.Tensor) -> str:
    """``t`` in the program's text format (float32, row-major)."""
    values = t.detach().to(torch.float32).contiguous().flatten().tolist()
    return (f"shape {' '.join(str(d) for d in t.shape)}\n"
            f"values {' '.join(f'{v:.9g}' for v in values)}\n")


def parse_tensor(text: str) -> torch.Tensor:
    """The tensor the program printed (the inverse of :func:`tensor_text`)."""
    lines = text.strip().splitlines()
    if len(lines) != 2 or not lines[0].startswith("shape") or not lines[1].startswith("values"):
        raise ValueError(f"expected a 'shape ...' line and a 'values ...' line, got: {text[:200]!r}")
    shape = [int(d) for d in lines[0].split()[1:]]
    return torch.tensor([float(v) for v in lines[1].split()[1:]], dtype=torch.float32).reshape(shape)


def parse_losses(text: str) -> list[float]:
    """The losses the ``train`` mode printed."""
    words = text.split()
    if not words or words[0] != "losses":
        raise ValueError(f"expected a line 'losses ...', got: {text[:200]!r}")
    return [float(v) for v in words[1:]]


def recorded() -> dict:
    """The outputs recorded with the course: ``{"recorded_on": ..., "runs": [{"args", "input", "stdout"}]}``."""
    return json.loads(RECORDED.read_text(encoding="utf-8"))


def _recorded_answer(reason: str, args: list[str], input_text: str) -> CppResult:
    book = recorded()
    for run in book["runs"]:
        if run["args"] == args and run["input"] == input_text:
            return CppResult(run["stdout"], f"{reason}; the output below was recorded on {book['recorded_on']}")
    return CppResult("", f"{reason}; no output was recorded for this request")


def machine() -> str:
    """Where a recording is made: the platform, torch's version and the compiler's."""
    built = build()
    return f"{sys.platform} {platform.machine()}, torch {torch.__version__}, {built.compiler or 'no compiler'}"


def record(args: list[str], input_text: str, stdout: str, path: Path, when: str) -> None:
    """Store one run's ``stdout`` in the recording at ``path`` (replacing the same request's)."""
    book = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"runs": []}
    runs = [r for r in book["runs"] if not (r["args"] == args and r["input"] == input_text)]
    runs.append({"args": args, "input": input_text, "stdout": stdout})
    book = {"recorded_on": when, "runs": runs}
    path.write_text(json.dumps(book, indent=1) + "\n", encoding="utf-8")


def run(args: list[str], input_text: str = "", cache: Path | None = None,
        recorded_as: list[str] | None = None) -> CppResult:
    """Build if needed and run the program with ``args``; the string ``INPUT`` among them is replaced
    by a file holding ``input_text``. Without a compiler, or when the build or run fails, the answer
    is the recorded output of the same request — ``recorded_as`` (default ``args``) and
    ``input_text`` — with a note, or empty with a note if it was not recorded."""
    key = recorded_as or args
    built = build(cache=cache)
    if built.path is None:
        return _recorded_answer(built.reason, key, input_text)
    input_path = built.path.with_name(f"input.{os.getpid()}.txt")
    input_path.write_text(input_text, encoding="utf-8")
    argv = [str(built.path)] + [str(input_path) if a == "INPUT" else a for a in args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return _recorded_answer(f"{PROGRAM} ran over {RUN_TIMEOUT_S} s and was stopped", key, input_text)
    finally:
        input_path.unlink(missing_ok=True)
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or [""])[-1]
        return _recorded_answer(f"{PROGRAM} failed (exit {done.returncode}): {message}", key, input_text)
    if os.environ.get(RECORD_VAR):
        record(key, input_text, done.stdout, Path(os.environ[RECORD_VAR]),
               f"{datetime.date.today().isoformat()} ({machine()})")
    return CppResult(done.stdout)


def load_and_run(model_path: str | os.PathLike, x: torch.Tensor, cache: Path | None = None) -> CppResult:
    """``torch::jit::load(model_path)`` and its ``forward(x)``, in C++ (parse ``text`` with :func:`parse_tensor`).

    The recording is looked up by the model's file name and ``x``."""
    model = Path(model_path)
    return run(["load", str(model.resolve()), "INPUT"], tensor_text(x), cache=cache,
               recorded_as=["load", model.name, "INPUT"])


def train(steps: int, lr: float, cache: Path | None = None) -> CppResult:
    """The C++ frontend's SGD steps on a ``torch::nn::Linear(3, 1)`` (parse ``text`` with :func:`parse_losses`)."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    return run(["train", str(steps), repr(float(lr))], cache=cache)
