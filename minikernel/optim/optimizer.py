"""``Optimizer``: the base class of every optimizer, and exercise 8.1 (param groups).

An optimizer holds *parameter groups*: dicts with a ``"params"`` list and the
hyper-parameters for those parameters (``lr``, ``momentum``, ...). Every option a
group does not set is taken from the optimizer's ``defaults``, so one optimizer can
train the weights with weight decay and the biases and BatchNorm scales without::

    SGD([{"params": weights, "weight_decay": 5e-4},
         {"params": biases}], lr=0.1, momentum=0.9)   # both groups get lr=0.1, momentum=0.9

Per-parameter state (momentum buffers, Adam's moving averages) lives in
``optimizer.state[param]``. ``state_dict()`` replaces the parameters by their
position (0, 1, 2, ... across the groups, in order), so a checkpoint can be loaded
into a new optimizer over new parameter objects.

Complete code here: ``__init__``, ``zero_grad``, ``state_dict``,
``load_state_dict``, ``__repr__``. Exercise 8.1 is ``add_param_group``, the checks
and default-filling that ``__init__`` runs on every group.
"""
from __future__ import annotations

import copy
from collections import defaultdict
from itertools import chain
from typing import Any, Callable, Iterable, Optional, Union

import numpy as np

from ..autograd import values
from ..autograd.grad_mode import enable_grad, no_grad
from ..course.exercise import exercise
from ..tensor import Tensor, typename

ParamGroup = dict[str, Any]  #: {"params": [Tensor, ...], "lr": 0.1, ...}
Params = Union[Iterable[Tensor], Iterable[ParamGroup], Iterable[tuple[str, Tensor]]]
StateDict = dict[str, Any]   #: {"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}


class _RequiredParameter:
    """Singleton marking a hyper-parameter every group must set (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


SET_MESSAGE = ("optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
               "in sets will change between runs. Please use a list instead.")
DUPLICATE_WARNING = ("optimizer contains a parameter group with duplicate parameters; in future, this will cause an "
                     "error; see github.com/pytorch/pytorch/issues/40967 for more information")


@exercise("8.1")
def add_param_group(param_groups: list[ParamGroup], param_group: ParamGroup, defaults: dict[str, Any]) -> None:
    """Check ``param_group``, fill in its missing options from ``defaults``, append it to ``param_groups``.

    In this order (each error is torch's type and text):

    1. ``param_group`` not a dict: ``TypeError(f"param_group must be a dict, but got {type(param_group)}")``.
    2. ``params = param_group["params"]``: a single ``Tensor`` becomes ``[params]``; a ``set``
       raises ``TypeError("optimizer parameters need to be organized in ordered collections, but
       the ordering of tensors in sets will change between runs. Please use a list instead.")``
       (see ``SET_MESSAGE``); anything else becomes ``list(params)``. Store the list back
       in ``param_group["params"]``.
    3. Named parameters: items may be ``(name, tensor)`` tuples (``model.named_parameters()``).
       Then ``param_group["params"]`` keeps only the tensors and ``param_group["param_names"]``
       the names; a mix of named and unnamed (whichever comes first) raises ``ValueError("all optimizer params should
       be with/without names. Some param names are missing")``.
    4. Every param must be a minikernel ``Tensor``, else ``TypeError("optimizer can only optimize
       Tensors, but one of the params is " + typename(param))``; and a leaf (``param.is_leaf``, or
       ``param.retains_grad``), else ``ValueError("can't optimize a non-leaf Tensor")``. A frozen
       leaf (``requires_grad=False``) is a leaf: it is accepted, as in torch.
    5. For each ``name, default`` in ``defaults``: a missing option whose default is ``required``
       raises ``ValueError(f"parameter group didn't specify a value of required optimization
       parameter {name}")``; otherwise ``param_group.setdefault(name, default)``.
    6. The same tensor twice in this group: ``warnings.warn(DUPLICATE_WARNING, stacklevel=3)``
       (a ``UserWarning``; torch only warns).
    7. Named and unnamed groups cannot mix: if ``("param_names" in param_group) != ("param_names"
       in group)`` for an existing group, ``ValueError("all optimizer param groups should be
       with/without names. cannot add param group with names to the optimizer")`` (or
       ``"without names"``).
    8. A tensor already in an existing group: ``ValueError("some parameters appear in more than
       one parameter group")``.
    9. ``param_groups.append(param_group)`` — the same dict object, now completed.

    Tensors are compared by identity (``set`` of tensors works: a minikernel Tensor hashes by id).

    Matches: ``torch.optim.SGD(...).add_param_group(param_group)`` (the resulting
    ``param_groups``, and every exception type and message).
    """
    # TODO(8.1): ≈35 lines
    raise NotImplementedError("exercise 8.1 (add_param_group) is not implemented yet")


class Optimizer:
    r"""Base class of minikernel's optimizers (``torch.optim.Optimizer``).

    Args:
        params (iterable): Tensors, ``(name, Tensor)`` pairs, or dicts defining
            parameter groups (each with a ``"params"`` entry).
        defaults (dict): the hyper-parameters a group gets when it does not set them.

    A subclass implements ``step()``: for each group, the parameters that have a
    ``.grad``, updated in place under ``no_grad``.

    Example::

        >>> opt = minikernel.optim.SGD(model.parameters(), lr=0.1)
        >>> opt.zero_grad()
        >>> loss_fn(model(x), y).backward()
        >>> opt.step()
    """

    def __init__(self, params: Params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + typename(params))
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[ParamGroup] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: ParamGroup) -> None:
        """Add a group (a dict with ``"params"`` and any options); unset options come
        from ``defaults``. Useful to unfreeze layers while fine-tuning."""
        add_param_group(self.param_groups, param_group, self.defaults)

    # ------------------------------------------------------------------ steps
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        raise NotImplementedError(f"{type(self).__name__} does not define step(): an Optimizer subclass must")

    def _closure_loss(self, closure: Optional[Callable[[], Any]]) -> Any:
        """Re-evaluate the loss with recording on (``step(closure)`` runs under no_grad otherwise)."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _params_with_grad(self, group: ParamGroup) -> list[Tensor]:
        return [p for p in group["params"] if p.grad is not None]

    @staticmethod
    def _check_options(name: str, foreach: Optional[bool], fused: Optional[bool], differentiable: bool,
                       capturable: bool = False) -> None:
        """minikernel updates one tensor at a time with numpy: the fast and differentiable
        variants of torch's optimizers do not exist here (``foreach`` is accepted and ignored:
        it changes speed, not results)."""
        for option, value in (("fused", fused), ("differentiable", differentiable), ("capturable", capturable)):
            if value:
                raise ValueError(f"minikernel's {name} has no {option} implementation: leave {option} "
                                 f"at its default ({'None' if option == 'fused' else 'False'})")

    @no_grad()
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: ``p.grad = None`` (default), or fill them with zeros in place.

        With ``set_to_none=True`` a parameter that gets no gradient in the next backward
        keeps ``grad is None`` and the optimizer skips it; with zeros it takes a step
        with a zero gradient (which still moves it under momentum or weight decay).
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.grad_fn is not None:  # a gradient recorded with create_graph=True
                    p.grad = p.grad.detach()
                else:
                    p.grad.requires_grad_(False)
                values.array(p.grad)[...] = 0
                p.grad._bump_version()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> StateDict:
        """``{"state": {index: per-parameter state}, "param_groups": [group without tensors]}``.

        Parameters are numbered 0, 1, 2, ... in the order the groups list them; each
        group's ``"params"`` holds those numbers. The state's tensors are the optimizer's
        own (not copies), as in torch: save or deep-copy the dict to keep a snapshot.
        """
        index: dict[int, int] = {}
        start = 0

        def pack(group: ParamGroup) -> ParamGroup:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            index.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in index})
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load ``state_dict()`` output: options of each group, and each parameter's state
        (copied, and cast to the parameter's float dtype; Adam's ``step`` keeps float32).

        The groups must have the same number of parameters as this optimizer's.
        """
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: _cast(param, value, key) for key, value in v.items()}
            else:
                state[k] = v
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved_groups

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
    """A copy of a state value for ``param``: tensors copied and cast to its float dtype
    (``step`` stays as saved), containers copied item by item."""
    if isinstance(value, Tensor):
        array = values.array(value)
        if key != "step" and param.dtype.kind == "f":
            array = array.astype(param.dtype)
        return values.wrap(np.array(array))
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value
