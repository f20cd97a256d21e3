"""Full backward hooks: how a module learns the gradients of its inputs and outputs.

A module is not a node of the autograd graph: its forward may record many
nodes, or none. So where would "the gradient of the module's output" be
visible? PyTorch's answer (``torch/utils/hooks.py``, ``BackwardHook``): route the
module's tensor inputs, and then its tensor outputs, through an *identity*
``Function`` (``BackwardHookFunction``). Its two nodes sit exactly at the
module's borders:

* the node on the outputs receives d(loss)/d(outputs): it stores them
  (``grad_outputs``) and runs the backward pre-hooks, which may replace them;
* the node on the inputs produces d(loss)/d(inputs): its post-hook calls the full
  backward hooks with ``(module, grad_input, grad_output)``; a hook may return a
  new ``grad_input``.

``Module._call_impl`` makes one ``BackwardHook`` per call and calls
``setup_input_hook`` before ``forward`` and ``setup_output_hook`` after it
(exercise 4.3; the reference bodies are in ``solutions/nn/backward_hooks.py``).
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Optional, Sequence


from ..autograd import values as V
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.graph import Node
from ..course.exercise import exercise
from ..tensor import Tensor

Grads = tuple  #: one gradient (a Tensor) or None per argument / output of the module

NO_INPUT_GRAD_WARNING = (
    "Full backward hook is firing when gradients are computed with respect to module outputs since no inputs "
    "require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
    "#torch.nn.Module.register_full_backward_hook for more details.")


class BackwardHookFunction(Function):
    """The identity, as a ``Function``: its node marks the border of a module in the graph.

    Backward passes the gradients through. A slot that received no gradient gets
    zeros, as torch hands a custom Function's backward zeros for outputs nobody
    used (``ctx.set_materialize_grads(True)``, the default).
    """

    _torch_name = "BackwardHookFunctionBackward"

    @staticmethod
    def forward(ctx, *args: Tensor):
        ctx.likes = [(a.shape, a.dtype) for a in args]
        return args

    @staticmethod
    def backward(ctx, *grads: Optional[Tensor]):
        return tuple(V.zeros(shape, dtype=dtype) if g is None else g for g, (shape, dtype) in zip(grads, ctx.likes))


class BackwardHook:
    """The state of one module call's full backward hooks (``torch.utils.hooks.BackwardHook``).

    Args:
        module: the module being called (handed to every user hook).
        user_hooks (list): full backward hooks, ``hook(module, grad_input, grad_output)``.
        user_pre_hooks (list): backward pre-hooks, ``hook(module, grad_output)``.

    The setup functions fill in: ``n_inputs``/``n_outputs`` (how many arguments /
    outputs the call had, tensors or not), ``input_tensors_index``/
    ``output_tensors_index`` (the positions of the tensors among them, or None
    when no hook was set up), and during backward ``grad_outputs``.
    """

    def __init__(self, module: Any, user_hooks: list[Callable], user_pre_hooks: list[Callable]):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs: Optional[Grads] = None
        self.n_outputs = -1
        self.output_tensors_index: Optional[list[int]] = None
        self.n_inputs = -1
        self.input_tensors_index: Optional[list[int]] = None

    @staticmethod
    def pack_with_none(indices: Sequence[int], values: Sequence[Any], size: int) -> tuple:
        """A ``size``-tuple with ``values[i]`` at position ``indices[i]`` and None elsewhere
        (non-tensor arguments get None in ``grad_input``)."""
        res: list[Any] = [None] * size
        for idx, val in zip(indices, values, strict=True):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def unpack_none(indices: Sequence[int], values: Sequence[Any]) -> tuple:
        """The entries of ``values`` at ``indices``: back from one per argument to one per tensor."""
        return tuple(values[idx] for idx in indices)

    def apply_on_tensors(self, fn: Callable[[Node], None], args: tuple) -> tuple[tuple, Optional[list[int]]]:
        """Route the tensors among ``args`` through one ``BackwardHookFunction`` and call ``fn(its node)``.

        Returns ``(new_args, tensor_positions)``, or ``(args, None)`` untouched when no
        tensor requires grad or grad mode is off (then there is nothing to hook).
        A tensor that does not require grad comes back without history, like
        torch's ``ctx.mark_non_differentiable``.
        """
        tensors_idx, tensors = [], []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        new_tensors = tuple(new if old.requires_grad else old.detach() for new, old in zip(new_tensors, tensors))
        grad_fns = [t.grad_fn for t in new_tensors
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors, strict=True):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx


@exercise("4.3")
def setup_input_hook(bw_hook: BackwardHook, args: tuple) -> tuple:
    """Put the identity node on the module's inputs; its post-hook runs the full backward hooks.

    1. ``new_args, indices = bw_hook.apply_on_tensors(fn, args)`` where ``fn(grad_fn)``
       registers, with ``grad_fn.register_hook``, a hook ``hook(grad_input, grad_output)``
       (the node's own arguments: one gradient per *tensor* input) that

       * returns None at once if ``bw_hook.grad_outputs is None`` (the gradient
         reached the inputs without passing through the outputs' node, e.g. in a
         double backward);
       * makes ``res = bw_hook.pack_with_none(bw_hook.input_tensors_index,
         grad_input, bw_hook.n_inputs)`` — one entry per argument of the call;
       * for each ``user_hook`` in ``bw_hook.user_hooks``: ``out = user_hook(
         bw_hook.module, res, bw_hook.grad_outputs)``; a non-None ``out`` with
         ``len(out) != len(res)`` raises ``RuntimeError(f"Backward hook returned an
         invalid number of grad_input, got {len(out)}, but expected {len(res)}")``,
         otherwise it replaces ``res``;
       * sets ``bw_hook.grad_outputs = None`` (they belong to this backward only);
       * returns ``bw_hook.unpack_none(bw_hook.input_tensors_index, res)``: the
         node's new grad_input, which flows on into the graph before the module.
    2. ``bw_hook.n_inputs = len(args)``; ``bw_hook.input_tensors_index = indices``.
    3. Return ``new_args`` (forward must use these, so that the node is in the graph).

    Matches: ``torch.utils.hooks.BackwardHook.setup_input_hook`` (and ``_set_user_hook``).
    """
    # TODO(4.3): ≈16 lines
    raise NotImplementedError("exercise 4.3 (setup_input_hook) is not implemented yet")


@exercise("4.3")
def setup_output_hook(bw_hook: BackwardHook, outputs: Any) -> Any:
    """Put the identity node on the module's outputs; its post-hook captures grad_output.

    1. A single output counts as the 1-tuple ``(outputs,)`` (remember to unwrap at the end).
    2. ``new, indices = bw_hook.apply_on_tensors(fn, outputs)`` where ``fn(grad_fn)`` registers
       with ``grad_fn.register_hook`` a hook ``hook(grad_input, grad_output)`` that

       * stores ``bw_hook.grad_outputs = bw_hook.pack_with_none(
         bw_hook.output_tensors_index, grad_output, bw_hook.n_outputs)``;
       * runs each backward pre-hook ``pre(bw_hook.module, bw_hook.grad_outputs)``:
         a non-None result of a different length raises ``RuntimeError(f"Backward pre
         hook returned an invalid number of grad_output, got {actual}, but expected
         {expected}")``, otherwise it replaces ``bw_hook.grad_outputs``;
       * keeps ``local = bw_hook.grad_outputs``;
       * if ``bw_hook.input_tensors_index is None`` (no input required grad, so the
         input node was never made): ``warnings.warn(NO_INPUT_GRAD_WARNING,
         stacklevel=5)``, call each full backward hook with ``(module,
         bw_hook.pack_with_none([], [], bw_hook.n_inputs), bw_hook.grad_outputs)``
         — a result other than None or an all-None tuple raises
         ``RuntimeError("Backward hook for Modules where no input requires gradient
         should always return None or None for all gradients.")`` — then set
         ``bw_hook.grad_outputs = None``;
       * returns ``tuple(local[i] for i in bw_hook.output_tensors_index)`` when
         ``local`` is not None: the (possibly replaced) gradients that flow on
         into the module's own graph.
    3. ``bw_hook.n_outputs = len(outputs)``, ``bw_hook.output_tensors_index = indices``.
    4. Return ``new`` (or ``new[0]`` for a single output).

    Matches: ``torch.utils.hooks.BackwardHook.setup_output_hook``.
    """
    # TODO(4.3): ≈28 lines
    raise NotImplementedError("exercise 4.3 (setup_output_hook) is not implemented yet")


def register_non_full_backward_hooks(module: Any, args: tuple, result: Any, hooks: list[Callable]) -> None:
    """The deprecated ``register_backward_hook``: hang each hook on the ``grad_fn`` of the first
    tensor in ``result``, whatever that node is (so ``grad_input`` is that one node's inputs)."""
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(functools.wraps(hook)(  # keeps the hook's name for the count check's message
            lambda grad_input, grad_output, hook=hook: hook(module, grad_input, grad_output)))
    _maybe_warn_non_full_backward_hook(args, result, grad_fn)


def _maybe_warn_non_full_backward_hook(inputs: Any, result: Any, grad_fn: Node) -> None:
    """torch's warnings for the cases where a non-full hook misses gradients (FutureWarning)."""
    def warn(text: str) -> None:
        warnings.warn(text, FutureWarning, stacklevel=4)

    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            warn("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                 "Tensors is deprecated and will be removed in future versions. This hook will be missing some of "
                 "the grad_output. Please use register_full_backward_hook to get the documented behavior.")
            return
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            warn("Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple "
                 "of Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                 "of the grad_input. Please use register_full_backward_hook to get the documented behavior.")
            return
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warn("Using a non-full backward hook when outputs are nested in python data structure is deprecated and "
             "will be removed in future versions. This hook will be missing some grad_output.")
    elif len(out_grad_fn) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
             "deprecated and will be removed in future versions. This hook will be missing some grad_output. "
             "Please use register_full_backward_hook to get the documented behavior.")
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated "
                 "and will be removed in future versions. This hook will be missing some grad_input. Please use "
                 "register_full_backward_hook to get the documented behavior.")
