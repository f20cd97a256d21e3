"""Run torch.amp.GradScaler and minikernel.amp.GradScaler side by side.

A ``Twin`` holds two identical set-ups (model, optimizers, scaler): one driven by
torch's GradScaler, one by minikernel's. Every action is applied to both; the
outcome (return value or exception type and message) and the whole state after it
(parameters and gradients bit for bit, optimizer states, scale, growth tracker,
per-optimizer stages and inf records) must be the same.
"""
from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

import minikernel.amp as mk_amp

OPTIMIZERS = {  # name -> (class, kwargs)
    "sgd": (torch.optim.SGD, {"lr": 0.1}),
    "sgd_momentum": (torch.optim.SGD, {"lr": 0.05, "momentum": 0.9}),
    "adam": (torch.optim.Adam, {"lr": 0.01}),
    # no momentum: a fused SGD whose first step is skipped leaves its momentum buffers
    # uninitialised (torch.empty), so they could not be compared
    "sgd_fused": (torch.optim.SGD, {"lr": 0.1, "fused": True}),
    "adamw_fused": (torch.optim.AdamW, {"lr": 0.01, "fused": True}),
}


def bits(t: torch.Tensor | None):
    """Something equal exactly when two tensors are equal bit for bit.

    Every NaN counts as the same NaN: their payload bits carry no meaning, and the
    CPU kernels leave different payloads (a NaN gradient only ever skips a step).
    """
    if t is None:
        return None
    flat = t.detach().contiguous().reshape(-1)
    if flat.is_floating_point():
        flat = torch.where(torch.isnan(flat), torch.full_like(flat, float("nan")), flat)
    return (t.dtype, tuple(t.shape), flat.view(torch.uint8).tolist() if flat.numel() else [])


def outcome(fn, *args, **kwargs) -> tuple[str, Any]:
    """("ok", result) or ("raised", (type, message)); a stub's NotImplementedError propagates."""
    try:
        return "ok", fn(*args, **kwargs)
    except NotImplementedError as err:
        if "exercise" in str(err):
            raise
        return "raised", (type(err), str(err))
    except Exception as err:  # noqa: BLE001 - the error is the result being compared
        return "raised", (type(err), str(err))


@dataclass
class Setup:
    """Model, data and optimizers of one side."""

    model: nn.Module
    extra: list[nn.Parameter]  # a float64 and a bfloat16 parameter: grads of three dtypes
    optimizers: list[torch.optim.Optimizer]
    scaler: Any
    x: torch.Tensor

    def params(self) -> list[torch.Tensor]:
        return [*self.model.parameters(), *self.extra]

    def loss(self, autocast: bool) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16, enabled=autocast):
            out = self.model(self.x)
        loss = out.float().pow(2).mean()
        return loss + (self.extra[0] ** 2).sum().float() + (self.extra[1].float() * 0.5).sum()


@dataclass
class Twin:
    """The same set-up twice; ``do(action)`` applies an action to both and compares."""

    optimizers: tuple[str, ...] = ("sgd",)
    scaler_kwargs: dict = field(default_factory=dict)
    seed: int = 0
    with_extra: bool = True

    def __post_init__(self):
        torch.manual_seed(self.seed)
        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 3))
        extra = [nn.Parameter(torch.randn(3, dtype=torch.float64)),
                 nn.Parameter(torch.randn(2).to(torch.bfloat16))]
        x = torch.randn(5, 4)
        self.sides = [self._side(model, extra, x, torch.amp.GradScaler),
                      self._side(copy.deepcopy(model), copy.deepcopy(extra), x.clone(), mk_amp.GradScaler)]

    def _side(self, model, extra, x, scaler_cls) -> Setup:
        layers = [list(m.parameters()) for m in model if isinstance(m, nn.Linear)]
        groups: list[list] = [[] for _ in self.optimizers]
        for i, params in enumerate(layers):
            groups[i % len(groups)] += params
        if self.with_extra:
            groups[-1] += extra
        opts = []
        for name, params in zip(self.optimizers, groups):
            cls, kwargs = OPTIMIZERS[name]
            # two param groups with different lr where there are enough tensors
            param_groups = ([{"params": params[:2]}, {"params": params[2:], "lr": kwargs["lr"] / 2}]
                            if len(params) > 2 else [{"params": params}])
            opts.append(cls(param_groups, **kwargs))
        scaler = scaler_cls("cpu", **self.scaler_kwargs)
        return Setup(model, extra, opts, scaler, x)

    # ------------------------------------------------------------------ actions
    def do(self, action: tuple, same_message: bool = True) -> Any:
        """Apply ``action`` to both sides; assert the same outcome and state. Returns torch's outcome.

        ``same_message=False`` compares only the exception type where one is raised.
        """
        results = [self._apply(side, action) for side in self.sides]
        if not same_message and results[0][0] == "raised":
            results = [(kind, value[0]) if kind == "raised" else (kind, value) for kind, value in results]
        assert results[1] == results[0], f"{action}: torch gave {results[0]}, minikernel gave {results[1]}"
        self.assert_same_state(action)
        return results[0]

    def _apply(self, side: Setup, action: tuple) -> tuple[str, Any]:
        kind, *args = action
        s, opts = side.scaler, side.optimizers
        if kind == "backward":  # scale(loss).backward(), once or twice (accumulation)
            autocast, times = args
            for _ in range(times):
                result = outcome(lambda: s.scale(side.loss(autocast)).backward())
            return result
        if kind == "inject":  # overwrite one gradient element with inf/-inf/nan
            i, value, position = args
            grads = [p.grad for g in opts[i].param_groups for p in g["params"] if p.grad is not None]
            if grads:
                g = grads[position % len(grads)]
                g.view(-1)[position % g.numel()] = value
            return "ok", None
        if kind == "unscale_":
            return outcome(s.unscale_, opts[args[0]])
        if kind == "clip":
            params = [p for g in opts[args[0]].param_groups for p in g["params"]]
            return "ok", bits(torch.nn.utils.clip_grad_norm_(params, args[1]))
        if kind == "step":
            return outcome(s.step, opts[args[0]])
        if kind == "update":
            return outcome(s.update, *args)
        if kind == "zero_grad":
            opts[args[0]].zero_grad()
            return "ok", None
        if kind == "state_dict":
            return outcome(s.state_dict)
        if kind == "pickle":
            return outcome(lambda: pickle.loads(pickle.dumps(s)).state_dict())
        raise ValueError(f"unknown action {action!r}")

    # ------------------------------------------------------------------ state
    def state(self, side: Setup) -> dict:
        s = side.scaler
        stages, found = [], []
        for opt in side.optimizers:
            entry = s._per_optimizer_states.get(id(opt)) if s.is_enabled() else None
            stages.append(None if entry is None else entry["stage"].name)
            found.append(None if entry is None else
                         {str(d): bits(t) for d, t in entry["found_inf_per_device"].items()})
        opt_states = [[{k: bits(v) if isinstance(v, torch.Tensor) else v for k, v in st.items()}
                       for st in opt.state_dict()["state"].values()] for opt in side.optimizers]
        return {"params": [bits(p) for p in side.params()],
                "grads": [bits(p.grad) for p in side.params()],
                "scale": s.get_scale(), "tracker": s._get_growth_tracker(),
                "stages": stages, "found_inf": found, "optimizer_states": opt_states}

    def assert_same_state(self, after: tuple = ()) -> None:
        expected, got = (self.state(side) for side in self.sides)
        for key in expected:
            assert got[key] == expected[key], f"after {after}: {key} differs from torch's"
