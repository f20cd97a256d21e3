"""Side-by-side checks for the notebooks: your function beside PyTorch's, per case."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .exercise import stub_exercise_id


def _plain(value: Any) -> Any:
    """Make torch.Size / tensors / lists comparable and printable as plain Python."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


_RAISES = object()


class _Todo:
    """Your side of a case whose exercise is not written yet (prints as "TODO 1.2")."""

    def __init__(self, error: NotImplementedError) -> None:
        self.error = error

    def __str__(self) -> str:
        return f"TODO {stub_exercise_id(self.error)}"


def _outcome(fn: Callable, args: tuple, refused: Any = _RAISES) -> Any:
    try:
        return _plain(fn(*args))
    except NotImplementedError as err:
        if stub_exercise_id(err) is None:
            raise
        return _Todo(err)  # torch's side still gets computed and shown
    except Exception as err:  # noqa: BLE001 - a refusal is a result to compare
        return f"{type(err).__name__}" if refused is _RAISES else refused


def agree(yours: Callable, torch_fn: Callable, cases: Iterable[tuple], refused: Any = _RAISES) -> None:
    """Print your result beside torch's for each case, then how many agree.

    Where your function is still a stub, its column says ``TODO N.M``, torch's
    answers are printed all the same, and the stub's error is raised at the end
    (a notebook shows it as the exercise's box, see ``notebook_display``).

    Args:
        yours: your function, called as ``yours(*case)``.
        torch_fn: the same question asked of PyTorch, called as ``torch_fn(*case)``.
        cases: argument tuples. An exception counts as its type's name, so
            "RuntimeError" on both sides agrees.
        refused: what your function returns where torch raises, when it
            answers a refusal with a value instead (``view_strides`` returns None).

    Example::

        >>> agree(contiguous_strides, lambda s: torch.empty(s).stride(), [((2, 3),), ((4,),)])
    """
    cases = list(cases)
    rows = [(_plain(c if len(c) != 1 else c[0]), _outcome(yours, c), _outcome(torch_fn, c, refused)) for c in cases]
    width = max(len(str(r[0])) for r in rows)
    good = 0
    todo = None
    for case, mine, theirs in rows:
        ok = mine == theirs
        good += ok
        if isinstance(mine, _Todo):
            todo = todo or mine.error
            verdict = ""
        else:
            verdict = "ok" if ok else "DIFFERENT"
        print(f"{case!s:<{width}}  yours: {mine!s:<22} torch: {theirs!s:<22} {verdict}".rstrip())
    if todo is not None:
        raise todo
    print(f"{good}/{len(rows)} cases agree with torch")
