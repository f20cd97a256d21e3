"""Which dtype each op produces under autocast, measured by running it.

Autocast sorts ops into three kinds, and each device type has its own lists:

* **lower precision** — matmul-like ops (mm, linear, conv, bmm, attention) run in
  float16/bfloat16 even on float32 inputs;
* **float32** — ops that lose too much in 16 bits (losses, prod, and on CUDA also
  softmax, norms, sum, exp, log, ...) run in float32 even on 16-bit inputs;
* **input dtype** — everything else has no autocast rule and runs in whatever
  dtype arrives.

``autocast_table`` measures this by running each probe twice under autocast, on
float32 inputs and on low-precision inputs, and classifying the two output dtypes.
CUDA is measured without a GPU: *fake tensors* (``torch._subclasses.FakeTensorMode``)
carry a device and a dtype but no memory, and the autocast layer decides casts from
the device alone, so its CUDA rules run on any machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

Shape = tuple[int, ...]

LOWER, FLOAT32, INPUT = "lower precision", "float32", "input dtype"


def _target(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(x.shape[0], dtype=torch.long, device=x.device)


#: name -> (the op, the shapes of its floating-point inputs)
PROBES: dict[str, tuple[Callable[..., torch.Tensor], list[Shape]]] = {
    "mm": (torch.mm, [(8, 8), (8, 8)]),
    "matmul (@)": (lambda a, b: a @ b, [(8, 8), (8, 8)]),
    "linear": (F.linear, [(4, 8), (8, 8)]),
    "conv2d": (F.conv2d, [(1, 2, 5, 5), (3, 2, 3, 3)]),
    "bmm": (torch.bmm, [(2, 4, 4), (2, 4, 4)]),
    "addmm": (torch.addmm, [(4, 4), (4, 4), (4, 4)]),
    "einsum": (lambda a, b: torch.einsum("ij,jk->ik", a, b), [(4, 4), (4, 4)]),
    "scaled_dot_product_attention": (F.scaled_dot_product_attention, [(1, 2, 4, 8)] * 3),
    "add": (torch.add, [(4, 4), (4, 4)]),
    "relu": (F.relu, [(4, 4)]),
    "gelu": (F.gelu, [(4, 4)]),
    "exp": (torch.exp, [(4, 4)]),
    "log": (torch.log, [(4, 4)]),
    "pow": (lambda x: torch.pow(x, 2), [(4, 4)]),
    "sum": (torch.sum, [(4, 4)]),
    "mean": (torch.mean, [(4, 4)]),
    "var": (torch.var, [(4, 4)]),
    "cumsum": (lambda x: torch.cumsum(x, 0), [(4, 4)]),
    "vector_norm": (torch.linalg.vector_norm, [(4, 4)]),
    "softmax": (lambda x: torch.softmax(x, -1), [(4, 4)]),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), [(4, 4)]),
    "layer_norm": (lambda x: F.layer_norm(x, (4,)), [(4, 4)]),
    "group_norm": (lambda x: F.group_norm(x, 2), [(2, 4, 3)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, _target(x)), [(4, 5)]),
    "nll_loss": (lambda x: F.nll_loss(x, _target(x)), [(4, 5)]),
    "mse_loss": (F.mse_loss, [(4, 4), (4, 4)]),
    "binary_cross_entropy_with_logits": (F.binary_cross_entropy_with_logits, [(4, 4), (4, 4)]),
    "prod": (torch.prod, [(4, 4)]),
    "cat": (lambda a, b: torch.cat([a, b]), [(4, 4), (4, 4)]),
}


def output_dtype(op: Callable[..., torch.Tensor], shapes: Sequence[Shape], device_type: str,
                 autocast_dtype: torch.dtype, input_dtype: torch.dtype) -> torch.dtype:
    """The dtype ``op`` returns inside autocast(device_type, autocast_dtype) on inputs of ``input_dtype``.

    ``device_type`` is ``"cpu"`` (real tensors, ``torch.autocast``) or ``"cuda"``
    (fake tensors: no GPU needed, nothing is computed).
    """
    if device_type == "cpu":
        inputs = [torch.full(s, 0.5, dtype=input_dtype) for s in shapes]
        with torch.autocast("cpu", dtype=autocast_dtype):
            return op(*inputs).dtype
    if device_type != "cuda":
        raise ValueError(f"device_type must be 'cpu' or 'cuda', not {device_type!r}")
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    with mode:
        inputs = [torch.empty(s, dtype=input_dtype, device="cuda") for s in shapes]
    # torch.autocast("cuda") refuses to turn on without a GPU, so set the same
    # thread-local switches it sets, and restore them whatever happens.
    was_on, was_dtype = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", autocast_dtype)
    try:
        with mode:
            return op(*inputs).dtype
    finally:
        torch.set_autocast_enabled("cuda", was_on)
        torch.set_autocast_dtype("cuda", was_dtype)
        torch.clear_autocast_cache()


def classify(from_float32: torch.dtype, from_low: torch.dtype, low: torch.dtype) -> str:
    """The kind of rule, from the output dtypes on float32 inputs and on ``low`` inputs."""
    if from_float32 == low:
        return LOWER
    if from_low == torch.float32:
        return FLOAT32
    if (from_float32, from_low) == (torch.float32, low):
        return INPUT
    return f"{from_float32} / {from_low}"


@dataclass(frozen=True)
class Column:
    """One autocast setting to measure: a device type and its low-precision dtype."""

    device_type: str
    dtype: torch.dtype

    @property
    def title(self) -> str:
        return f"{self.device_type} {str(self.dtype).removeprefix('torch.')}"


DEFAULT_COLUMNS = (Column("cpu", torch.bfloat16), Column("cpu", torch.float16), Column("cuda", torch.float16))


def autocast_table(columns: Sequence[Column] = DEFAULT_COLUMNS,
                   probes: dict[str, tuple[Callable, list[Shape]]] | None = None) -> dict[str, list[str]]:
    """``{op name: [kind under each column]}``, measured now.

    Args:
        columns (sequence of Column, optional): the autocast settings to measure.
            Default: CPU bfloat16, CPU float16, CUDA float16
        probes (dict, optional): ``name -> (op, input shapes)``. Default: ``PROBES``

    Example::

        >>> autocast_table([Column("cpu", torch.bfloat16)])["softmax"]
        ['input dtype']
    """
    rows = {}
    for name, (op, shapes) in (PROBES if probes is None else probes).items():
        rows[name] = [classify(output_dtype(op, shapes, c.device_type, c.dtype, torch.float32),
                               output_dtype(op, shapes, c.device_type, c.dtype, c.dtype), c.dtype)
                      for c in columns]
    return rows


def format_table(rows: dict[str, list[str]], columns: Sequence[Column] = DEFAULT_COLUMNS) -> str:
    """The table as aligned text, one op per line, rows grouped in the order given."""
    width = max(len(n) for n in [*rows, "op"])
    cells = [c.title for c in columns]
    col = max(len(x) for x in [*cells, LOWER])
    lines = [f"{'op':<{width}}  " + "  ".join(f"{t:<{col}}" for t in cells)]
    lines += [f"{name:<{width}}  " + "  ".join(f"{k:<{col}}" for k in kinds) for name, kinds in rows.items()]
    return "\n".join(line.rstrip() for line in lines)
