"""``nn.DataParallel``'s four steps, on CPU "devices", one forward at a time.

``torch.nn.DataParallel(module)(x)`` does, on *every* call:

1. ``replicate``      copy the module to each device (parameters broadcast, buffers too);
2. ``scatter``        cut the batch along ``dim`` with ``torch.chunk`` (one piece per device);
3. ``parallel_apply`` run replica ``i`` on piece ``i``, one Python thread per device;
4. ``gather``         concatenate the outputs along ``dim`` on ``output_device``.

``torch.nn.parallel``'s own ``replicate``/``scatter``/``gather`` are CUDA-only (on CPU
tensors they raise: "Broadcast function not implemented for CPU tensors"), and on a
machine without GPUs ``DataParallel`` skips all four and just calls the module. The
functions here do the same four steps with CPU tensors, so each step can be looked at;
``DataParallel`` here runs them on every forward like torch's does on GPUs.

What carries over from torch's, by construction:

* a replica's parameters are *not* leaves: they are differentiable copies of the
  original's (torch: outputs of ``Broadcast``), so ``backward`` sums every replica's
  gradient into the original parameter's ``.grad``;
* replica 0 shares the original's buffers (torch's broadcast returns the source
  tensors themselves for the first device), the others get copies; so a BatchNorm's
  running statistics are updated from the first piece of the batch only, and each
  replica normalises with the statistics of its own ``B / n`` rows;
* ``scatter`` uses ``chunk``: 5 rows on 4 devices give pieces of 2, 2 and 1 — only 3
  replicas run.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def replicate(module: nn.Module, n: int) -> list[nn.Module]:
    """``n`` replicas of ``module`` whose parameters are differentiable copies of its own.

    Follows ``torch.nn.parallel.replicate``: every submodule is copied with
    ``_replicate_for_data_parallel`` (a shallow copy with no ``_parameters``); each
    parameter becomes a plain tensor attribute computed from the original
    (``param.clone()`` here, a ``Broadcast`` to another GPU there), so gradients flow
    back to the original. Replica 0 keeps the original buffers; the others get copies.

    Example::

        >>> lin = nn.Linear(3, 2)
        >>> r = replicate(lin, 2)
        >>> r[1].weight.is_leaf, r[1].weight.grad_fn is not None, list(r[1].parameters())
        (False, True, [])
    """
    if n < 1:
        raise ValueError(f"replicate needs at least one device, got n={n}")
    modules = list(module.modules())
    copies = [[m._replicate_for_data_parallel() for m in modules] for _ in range(n)]
    where = {m: i for i, m in enumerate(modules)}
    for i, m in enumerate(modules):
        for j in range(n):
            replica = copies[j][i]
            for key, child in m._modules.items():
                replica._modules[key] = None if child is None else copies[j][where[child]]
            for key, param in m._parameters.items():
                setattr(replica, key, None if param is None else param.clone())
            for key, buf in m._buffers.items():
                replica._buffers[key] = buf if (j == 0 or buf is None) else buf.clone()
    return [c[0] for c in copies]


def scatter(inputs: Any, n: int, dim: int = 0) -> list[Any]:
    """Cut ``inputs`` into at most ``n`` pieces along ``dim`` with ``torch.chunk``.

    Tensors are chunked; tuples, lists and dicts are scattered element by element
    and rebuilt per piece; anything else is given to every piece as is. Like torch's
    ``scatter``, the number of pieces is the number of chunks, which can be fewer
    than ``n`` (``torch.arange(5).chunk(4)`` has 3 chunks).

    Example::

        >>> [p.tolist() for p in scatter(torch.arange(5), 4)]
        [[0, 1], [2, 3], [4]]
    """
    if isinstance(inputs, torch.Tensor):
        return list(inputs.chunk(n, dim))
    if isinstance(inputs, (tuple, list)) and inputs:
        pieces = [scatter(x, n, dim) for x in inputs]
        k = min(len(p) for p in pieces)
        return [type(inputs)(p[i] for p in pieces) for i in range(k)]
    if isinstance(inputs, dict) and inputs:
        pieces = {key: scatter(v, n, dim) for key, v in inputs.items()}
        k = min(len(p) for p in pieces.values())
        return [{key: p[i] for key, p in pieces.items()} for i in range(k)]
    return [inputs] * n


def parallel_apply(modules: Sequence[nn.Module], inputs: Sequence[Any]) -> list[Any]:
    """``modules[i](*inputs[i])`` in one thread each (torch: one thread per GPU); outputs in order.

    Each thread inherits the caller's grad mode. An exception in a replica is raised
    here, naming the replica (torch: "Caught ValueError in replica 1 on device 1").
    """
    if len(modules) != len(inputs):
        raise ValueError(f"parallel_apply got {len(modules)} modules but {len(inputs)} inputs; "
                         "scatter the inputs first and replicate to as many pieces as it gave")
    results: list[Any] = [None] * len(modules)
    errors: list[BaseException | None] = [None] * len(modules)
    grad_enabled = torch.is_grad_enabled()

    def work(i: int) -> None:
        try:
            with torch.set_grad_enabled(grad_enabled):
                x = inputs[i]
                results[i] = modules[i](*x) if isinstance(x, (tuple, list)) else modules[i](x)
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            errors[i] = err

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(modules))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, err in enumerate(errors):
        if err is not None:
            raise RuntimeError(f"Caught {type(err).__name__} in replica {i}: {err}") from err
    return results


def gather(outputs: Sequence[Any], dim: int = 0) -> Any:
    """Concatenate the replicas' outputs along ``dim`` (tuples and dicts element by element).

    ``torch.cat`` is differentiable: in backward the gradient is cut back into the
    pieces, as torch's ``Gather`` scatters it back to the devices.
    """
    first = outputs[0]
    if isinstance(first, torch.Tensor):
        return torch.cat(list(outputs), dim)
    if isinstance(first, (tuple, list)):
        return type(first)(gather([o[i] for o in outputs], dim) for i in range(len(first)))
    if isinstance(first, dict):
        return {key: gather([o[key] for o in outputs], dim) for key in first}
    raise TypeError(f"gather can concatenate tensors, tuples, lists and dicts of them, not {type(first).__name__}")


class DataParallel(nn.Module):
    """``torch.nn.DataParallel`` on ``devices`` CPU "devices": the four steps on every forward.

    Args:
        module (nn.Module): the model; it stays the one holding the parameters, as
            ``self.module`` (hence the ``module.`` prefix in ``state_dict()``).
        devices (int, optional): how many replicas to run. Default: ``2``
        dim (int, optional): the batch dimension to scatter along. Default: ``0``

    Example::

        >>> dp = DataParallel(nn.Linear(3, 2), devices=2)
        >>> dp(torch.randn(6, 3)).shape, list(dp.state_dict())
        (torch.Size([6, 2]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module: nn.Module, devices: int = 2, dim: int = 0):
        super().__init__()
        if devices < 1:
            raise ValueError(f"DataParallel needs at least one device, got devices={devices}")
        self.module, self.devices, self.dim = module, devices, dim
        self.trace: list[str] = []  #: what the last forward did, step by step

    def forward(self, *inputs: Any) -> Any:
        pieces = scatter(inputs, self.devices, self.dim)
        replicas = replicate(self.module, len(pieces))
        outputs = parallel_apply(replicas, pieces)
        self.trace = [f"scatter: {len(pieces)} pieces of {[_shape(p[0]) for p in pieces]}",
                      f"replicate: {len(replicas)} replicas",
                      f"parallel_apply: {len(outputs)} outputs of {[_shape(o) for o in outputs]}",
                      "gather: torch.cat along dim"]
        return gather(outputs, self.dim)


def _shape(x: Any) -> Any:
    """A tensor's shape as a tuple, for the trace; anything else by its type name."""
    return tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
