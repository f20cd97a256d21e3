"""Reading the installed PyTorch: the C++ headers its wheel ships, and where its kernels come from.

Chapters 01 and 02 point at PyTorch's C++ (``c10/core/TensorImpl.h``,
``torch/csrc/autograd/variable.h``, ``ATen/core/TensorAccessor.h``, ...). The wheel
installs those headers under ``torch/include``, so the claims can be checked against
the very version that runs, not quoted from memory:

* ``data_members(header, struct)``: the data members a struct declares (PyTorch names
  them with a trailing underscore: ``storage_``, ``sizes_and_strides_``);
* ``registration_origins()``: for every operator the dispatcher knows, the source file
  each kernel was registered from (``torch._C._dispatch_dump``), grouped by the part
  of PyTorch's source tree it is in;
* ``legacy_th_names()``: what is left of the old TH/THC libraries in ``torch._C`` and
  in the shipped headers.
"""
from __future__ import annotations

import collections
import os
import re

import torch

#: Where the kernels of the dispatcher's registrations come from, by path prefix (first match wins).
ORIGINS = (
    ("build/aten/src/ATen/Register", "generated from native_functions.yaml (build/aten/src/ATen/Register*.cpp)"),
    ("torch/csrc/autograd/generated/", "generated from derivatives.yaml (torch/csrc/autograd/generated/)"),
    ("aten/src/ATen/native/", "hand-written in aten/src/ATen/native/"),
    ("aten/src/ATen/functorch/", "hand-written in aten/src/ATen/functorch/ (vmap, grad)"),
    ("aten/src/ATen/", "hand-written elsewhere in aten/src/ATen/ (autocast, fallbacks)"),
    ("torch/csrc/", "hand-written in torch/csrc/ (tracing, distributed, inductor)"),
    ("aten/src/TH", "the legacy TH/THC libraries (aten/src/TH*/)"),
)
PYTHON_ORIGIN = "Python (torch/*.py: meta functions, custom ops, primitives)"
OTHER_ORIGIN = "elsewhere"


def include_dir() -> str:
    """The directory of C++ headers installed with torch (``torch/include``)."""
    return os.path.join(os.path.dirname(torch.__file__), "include")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"(\w+_)\s*\{[^{}]*\}\s*;", r"\1;", text)  # brace initializers: `bool flag_{false};`


def data_members(header: str, struct: str) -> list[str]:
    """Names of the data members ``struct`` declares in ``header`` (a path under ``include_dir()``),
    in declaration order: the identifiers ending in ``_`` declared at the struct's own
    level (not inside its methods), bit-fields included.

    Raises ValueError if the header has no definition of ``struct``.
    """
    with open(os.path.join(include_dir(), header)) as fh:
        text = _strip_comments(fh.read())
    match = re.search(rf"\b(?:struct|class)\s+(?:\w+\s+)?{re.escape(struct)}\b[^;{{]*\{{", text)
    if match is None:
        raise ValueError(f"no definition of {struct} in {header}")
    depth, start, names = 1, match.end(), []
    statement = []
    for pos in range(start, len(text)):
        ch = text[pos]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
            if depth == 1:
                statement = []  # a method body (or a nested type) ended: not a data member
            continue
        if depth != 1:
            continue
        if ch == ";":
            decl = "".join(statement).strip()
            statement = []
            if "(" in decl.split("=")[0] or re.match(r"(using|friend|typedef|static|template)\b", decl):
                continue
            found = re.search(r"(\w+_)\s*(?::\s*\d+)?\s*(?:=.*|\{.*\})?$", decl, re.S)
            if found:
                names.append(found.group(1))
        else:
            statement.append(ch)
            if ch == ":" and re.search(r"\b(public|private|protected)\s*:$", "".join(statement)):
                statement = []
    return names


def _origin(path: str) -> str:
    path = path.replace("\\", "/")
    if path.endswith(".py"):
        return PYTHON_ORIGIN
    for prefix, origin in ORIGINS:
        if prefix in path:
            return origin
    return OTHER_ORIGIN


def registration_origins(ops: list[str] | None = None) -> collections.Counter:
    """How many kernel registrations come from each part of PyTorch's source tree.

    Reads ``torch._C._dispatch_dump`` of each operator in ``ops`` (default: every
    operator the dispatcher knows, ``torch._C._dispatch_get_all_op_names()``); each line
    ``Key: registered at <file>:<line>`` is one kernel, counted under its ``ORIGINS``
    group (``PYTHON_ORIGIN`` for ``.py`` files).
    """
    counts: collections.Counter = collections.Counter()
    for op in ops if ops is not None else torch._C._dispatch_get_all_op_names():
        for path in re.findall(r"^[\w\[\] ()]+: registered at (\S+?):\d+", torch._C._dispatch_dump(op), re.M):
            counts[_origin(path)] += 1
    return counts


def legacy_th_names() -> dict[str, list[str]]:
    """Names of the old TH/THC libraries still in the installed torch.

    ``"torch._C"``: attributes of ``torch._C`` whose name contains ``TH``;
    ``"include"``: header directories under ``include_dir()`` named ``TH``, ``THC``,
    ``THCUNN`` or ``THNN`` (the old wheels shipped them).
    """
    names = [n for n in dir(torch._C) if "TH" in n]
    dirs = [d for d in ("TH", "THC", "THCUNN", "THNN") if os.path.isdir(os.path.join(include_dir(), d))]
    return {"torch._C": names, "include": dirs}


def header_lines(header: str, pattern: str, before: int = 0) -> list[str]:
    """The lines of ``header`` (a path under ``include_dir()``) that match the regular
    expression ``pattern``, stripped; with ``before``, each preceded by that many lines
    above it (a template's parameter list, say)."""
    with open(os.path.join(include_dir(), header)) as fh:
        lines = [line.strip() for line in fh]
    return [lines[j] for i, line in enumerate(lines) if re.search(pattern, line)
            for j in range(max(0, i - before), i + 1)]
