"""Grad mode: whether new operations are recorded (``torch.autograd.grad_mode``).

``no_grad``, ``enable_grad`` and ``set_grad_enabled`` work the three ways torch's
do: as a ``with`` block, as a decorator (of plain and generator functions), and
``set_grad_enabled(mode)`` also as a plain call that switches the mode at once.
The flag is per thread, as in PyTorch.

This module imports nothing from minikernel: the Tensor (below the rest of
autograd) reads the flag, so it sits at the bottom of the autograd package.
"""
from __future__ import annotations

import functools
import inspect
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

_local = threading.local()


def is_grad_enabled() -> bool:
    """Whether new operations are recorded (``torch.is_grad_enabled()``)."""
    return getattr(_local, "enabled", True)


def _set_enabled(mode: bool) -> None:
    _local.enabled = bool(mode)


class _GradModeContext:
    """Base of the three grad-mode switches: a context manager and a decorator.

    As a decorator of a generator function, the mode holds while the generator's own
    code runs and is restored at every ``yield`` (``torch.autograd.grad_mode``'s
    ``_DecoratorContextManager`` does the same), so the caller's mode is untouched.
    """

    mode: bool = True

    def __init__(self) -> None:
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(is_grad_enabled())
        _set_enabled(self.mode)

    def __exit__(self, *exc: Any) -> None:
        _set_enabled(self._previous.pop())

    def clone(self) -> "_GradModeContext":
        return type(self)()

    def __call__(self, func: Callable) -> Callable:
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    request = gen.send(None)
                while True:
                    try:
                        response = yield request
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as err:  # noqa: BLE001 - forwarded into the generator
                        with self.clone():
                            request = gen.throw(err)
                    else:
                        with self.clone():
                            request = gen.send(response)
            except StopIteration as stop:
                return stop.value

        return wrapper


class _NoParamContext(_GradModeContext):
    """A switch that takes no argument, so it also decorates bare: ``@no_grad`` as well as
    ``@no_grad()`` (torch's ``_NoParamDecoratorContextManager``)."""

    def __new__(cls, orig_func: Callable | None = None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamContext):  # noqa: N801 - torch's name
    """``with minikernel.no_grad():``, ``@minikernel.no_grad()`` or ``@minikernel.no_grad`` —
    nothing inside is recorded."""

    mode = False


class enable_grad(_NoParamContext):  # noqa: N801 - torch's name
    """``with minikernel.enable_grad():`` (or as a decorator) — record again inside a ``no_grad`` block."""

    mode = True


class inference_mode(_GradModeContext):  # noqa: N801 - torch's name
    """``with minikernel.inference_mode():`` (``mode=True``) — nothing inside is recorded, like
    ``no_grad``; ``inference_mode(False)`` changes nothing.

    Unlike torch, the tensors made inside are ordinary tensors, not "inference tensors"
    (``docs/conformance.md``, deliberate differences): using one in a recorded computation
    later works here where torch refuses it.
    """

    def __new__(cls, mode: Any = True):
        if callable(mode) and not isinstance(mode, bool):  # bare @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._inference = mode
        self._outer: list[tuple[bool, bool]] = []

    def __enter__(self) -> None:
        self._outer.append((is_grad_enabled(), is_inference_mode_enabled()))
        _local.inference = self._inference
        if self._inference:
            _set_enabled(False)

    def __exit__(self, *exc: Any) -> None:
        grad, _local.inference = self._outer.pop()
        _set_enabled(grad)

    def clone(self) -> "inference_mode":
        return type(self)(self._inference)


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode()`` block is open (``torch.is_inference_mode_enabled()``)."""
    return getattr(_local, "inference", False)


class set_grad_enabled(_GradModeContext):  # noqa: N801 - torch's name
    """Record (True) or not (False).

    Like ``torch.set_grad_enabled``, the mode is switched as soon as it is called, so
    ``set_grad_enabled(False)`` on its own line turns recording off; used in a ``with``
    block the previous mode comes back at the end of the block.
    """

    def __init__(self, mode: bool) -> None:
        super().__init__()
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.mode = mode
        self._before_call = is_grad_enabled()
        _set_enabled(mode)

    def __enter__(self) -> None:
        # The mode is already set by __init__; exiting restores what was there before the call.
        self._previous.append(self._before_call)

    def clone(self) -> "set_grad_enabled":
        return set_grad_enabled(self.mode)

    def __call__(self, func: Callable) -> Callable:
        _set_enabled(self._before_call)  # used as a decorator: the call itself must not change the mode
        return super().__call__(func)


def backward_running() -> bool:
    """True while the engine runs a backward pass (see ``engine_running``)."""
    return getattr(_local, "in_backward", 0) > 0


@contextmanager
def engine_running() -> Iterator[None]:
    """Mark a backward pass: tensor arithmetic inside it takes the autograd path
    (numpy values, ``functions.py``), so a backward formula never needs chapter 02's kernels."""
    _local.in_backward = getattr(_local, "in_backward", 0) + 1
    try:
        yield
    finally:
        _local.in_backward -= 1
