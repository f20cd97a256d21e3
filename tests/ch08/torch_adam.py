"""torch.optim's Adam as exercise 8.3 specifies it, on every torch the course admits.

Adam's ``decoupled_weight_decay`` argument (the docstring's; torch's from 2.11 at the
latest) is missing from older releases, whose ``AdamW`` is that algorithm: the decay
``θ = θ * (1 - lr * weight_decay)`` before the Adam step. There ``torch_adam`` builds
``AdamW`` for ``decoupled_weight_decay=True`` and ``Adam`` otherwise, and the param
groups and repr it gives lack the option, which ``documented_groups`` and
``documented_repr`` add back (with the value asked for, and the class name asked for).
With a torch that has the argument, all three give torch's own.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch

#: Whether the installed torch's Adam takes ``decoupled_weight_decay``.
HAS_DECOUPLED = "decoupled_weight_decay" in inspect.signature(torch.optim.Adam).parameters


def torch_adam(name: str, params: list, **options: Any) -> torch.optim.Optimizer:
    """``torch.optim.<name>(params, **options)``: ``name`` is "Adam" or "AdamW"."""
    if HAS_DECOUPLED or name == "AdamW":
        return getattr(torch.optim, name)(params, **options)
    decoupled = options.pop("decoupled_weight_decay", False)
    return (torch.optim.AdamW if decoupled else torch.optim.Adam)(params, **options)


def decoupled_of(name: str, options: dict) -> bool:
    return name == "AdamW" or options.get("decoupled_weight_decay", False)


def documented_groups(groups: list[dict], name: str, options: dict) -> list[dict]:
    """``state_dict()["param_groups"]``, with ``decoupled_weight_decay`` where torch lacks it."""
    if HAS_DECOUPLED:
        return groups
    return [dict(g, decoupled_weight_decay=decoupled_of(name, options)) for g in groups]


def documented_repr(text: str, name: str, options: dict) -> str:
    """``repr(optimizer)``: "Name (", then per group "Parameter Group i" and its options, one
    "    key: value" line each in sorted order, then ")"; adds ``decoupled_weight_decay`` where
    torch lacks it, and names the class asked for."""
    if HAS_DECOUPLED:
        return text
    head, *lines = text.splitlines()
    out, entries = [f"{name} ("], []
    for line in lines:
        if line.startswith("    "):
            entries.append(line)
            continue
        if entries:
            out += sorted(entries + [f"    decoupled_weight_decay: {decoupled_of(name, options)}"])
            entries = []
        out.append(line)
    return "\n".join(out)
