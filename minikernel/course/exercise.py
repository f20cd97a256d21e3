"""The exercise mechanism: ``@exercise("1.2")`` and ``MINIKERNEL_SOLUTIONS``.

Every function a learner writes is decorated with ``@exercise(id)``. The decorator
records the stub in a registry and returns a *plain function* (never a wrapper, so
numba can compile it):

* the learner's own function, by default;
* ``solutions.<module>.<same name>`` when the exercise is switched to its reference
  (the module path mirrors minikernel's: ``minikernel.kernels.cpu`` ->
  ``solutions.kernels.cpu``).

Which exercises use the reference is read once, at import, from the environment
variable ``MINIKERNEL_SOLUTIONS``:

======================  ==================================================
unset or empty          the learner's code everywhere (student mode)
``all``                 every reference
``1.2,1.5``             just these exercises
``1.*,2.3``             whole chapters (globs) and single IDs, mixed
======================  ==================================================

Changing it needs a fresh interpreter (in Jupyter: restart the kernel).

Grading someone else's body (the wrong-solution corpus in ``tests/wrong/`` does this):
``MINIKERNEL_OVERRIDE`` names Python files, separated by ``;``, each declaring
``EXERCISE = "2.5"`` and defining functions with the names and signatures of that
exercise's stubs. ``@exercise`` returns those functions (plain function objects, so
numba compiles them) instead of the stub or the reference; the exercise's functions a
file does not define follow ``MINIKERNEL_SOLUTIONS`` as usual.
"""
from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

ENV_VAR = "MINIKERNEL_SOLUTIONS"
OVERRIDE_VAR = "MINIKERNEL_OVERRIDE"
_ID_RE = re.compile(r"^[1-9][0-9]*\.[1-9][0-9]*$")
_TOKEN_RE = re.compile(r"^[1-9][0-9]*\.([1-9][0-9]*|\*)$")
#: How a stub's NotImplementedError names its exercise: "exercise 1.2 (...) ...".
STUB_MESSAGE_RE = re.compile(r"exercise ([1-9][0-9]*\.[1-9][0-9]*)\b")


@dataclass
class Exercise:
    """One exercise: an ID and the functions (usually one) the learner writes."""

    id: str
    module: str  #: module path under minikernel/, e.g. "strides" or "kernels.cpu"
    stubs: dict[str, Callable] = field(default_factory=dict)
    active: dict[str, Callable] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return ", ".join(self.stubs)

    @property
    def uses_reference(self) -> bool:
        return any(self.active[n] is not self.stubs[n] for n in self.stubs)

    @property
    def overridden(self) -> bool:
        """Whether a ``MINIKERNEL_OVERRIDE`` file replaces (some of) this exercise's bodies."""
        return self.id in _OVERRIDES


_REGISTRY: dict[str, Exercise] = {}


def parse_selection(spec: str | None, where: str | None = None) -> list[str]:
    """Split a ``MINIKERNEL_SOLUTIONS`` value into tokens, checking their form.

    ``where`` names what the text came from in error messages (default: the variable).

    >>> parse_selection("1.2, 2.*")
    ['1.2', '2.*']
    """
    if spec is None or not spec.strip():
        return []
    tokens = [t.strip() for t in re.split(r"[,\s]+", spec.strip()) if t.strip()]
    for token in tokens:
        if token != "all" and not _TOKEN_RE.match(token):
            raise ValueError(
                f"{f'{where} {token!r}' if where else f'{ENV_VAR}={spec!r}: {token!r}'} is not an exercise ID. Use 'all', IDs "
                f"like '1.2', or chapter globs like '1.*', separated by commas.")
    return tokens


def _token_matches(token: str, exercise_id: str) -> bool:
    return token == "all" or fnmatch.fnmatchcase(exercise_id, token)


_SELECTION = parse_selection(os.environ.get(ENV_VAR))


def parse_overrides(spec: str | None) -> dict[str, Path]:
    """Read ``MINIKERNEL_OVERRIDE``: ``{exercise ID: file}``, one file per exercise.

    Only each file's ``EXERCISE = "N.M"`` line is read here (without running the file):
    the file itself is imported when its exercise's stub is decorated, so it may import
    minikernel's modules like a reference does.
    """
    found: dict[str, Path] = {}
    for part in (spec or "").split(";"):
        if not part.strip():
            continue
        path = Path(part.strip()).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"{OVERRIDE_VAR}: {part.strip()!r} is not a file. Give paths of "
                                    "Python files, separated by ';'.")
        exercise_id = _declared_exercise(path)
        if exercise_id in found:
            raise ValueError(f"{OVERRIDE_VAR}: {found[exercise_id]} and {path} both override exercise "
                             f"{exercise_id}; give one file per exercise.")
        found[exercise_id] = path
    return found


def _declared_exercise(path: Path) -> str:
    """The string assigned to ``EXERCISE`` at the top level of ``path``."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["EXERCISE"]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            if not _ID_RE.match(node.value.value):
                raise ValueError(f"{path}: EXERCISE = {node.value.value!r} is not an exercise ID like '2.5'")
            return node.value.value
    raise ValueError(f"{path}: declare which exercise the file replaces, e.g. EXERCISE = \"2.5\", "
                     "at the top level.")


_OVERRIDES = parse_overrides(os.environ.get(OVERRIDE_VAR))
_OVERRIDE_MODULES: dict[str, ModuleType] = {}


def _override_module(exercise_id: str) -> ModuleType:
    """Import the override file of ``exercise_id`` once, as module ``minikernel_override_N_M``."""
    if exercise_id not in _OVERRIDE_MODULES:
        path = _OVERRIDES[exercise_id]
        name = "minikernel_override_" + exercise_id.replace(".", "_")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        # Registered before it runs: numba looks kernels' globals up through sys.modules.
        sys.modules[name] = module
        _OVERRIDE_MODULES[exercise_id] = module
        spec.loader.exec_module(module)
    return _OVERRIDE_MODULES[exercise_id]


def override_of(exercise_id: str, stub: Callable) -> Callable | None:
    """The function that ``MINIKERNEL_OVERRIDE`` puts in place of ``stub``, else None."""
    if exercise_id not in _OVERRIDES:
        return None
    replacement = getattr(_override_module(exercise_id), stub.__name__, None)
    if replacement is None:
        return None
    if _parameters(replacement) != _parameters(stub):
        raise TypeError(f"{_OVERRIDES[exercise_id]}: {stub.__name__}{inspect.signature(replacement)} does not "
                        f"match the stub's signature {inspect.signature(stub)} (exercise {exercise_id})")
    return replacement


def _parameters(function: Callable) -> list[tuple]:
    """Names, kinds and defaults of the parameters (type hints may differ)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def uses_reference(exercise_id: str, selection: list[str] | None = None) -> bool:
    """Whether ``exercise_id`` runs the reference under ``selection`` (default: the env)."""
    tokens = _SELECTION if selection is None else selection
    return any(_token_matches(t, exercise_id) for t in tokens)


def exercise(exercise_id: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as (part of) exercise ``exercise_id``.

    Returns the function itself, or its reference from ``solutions`` when
    ``MINIKERNEL_SOLUTIONS`` selects this exercise.

    Example::

        @exercise("1.2")
        def index_to_position(index, strides, offset=0):
            raise NotImplementedError("exercise 1.2 (index_to_position) is not implemented yet")
    """
    if not _ID_RE.match(exercise_id):
        raise ValueError(f"exercise ID {exercise_id!r} must look like '1.2'")

    def register(stub: Callable) -> Callable:
        module = _relative_module(stub)
        entry = _REGISTRY.setdefault(exercise_id, Exercise(exercise_id, module))
        if entry.module != module:
            raise ValueError(f"exercise {exercise_id} spans modules {entry.module} and {module}")
        if stub.__name__ in entry.stubs:
            raise ValueError(f"{stub.__name__} is registered twice for exercise {exercise_id}")
        entry.stubs[stub.__name__] = stub
        chosen = override_of(exercise_id, stub)
        if chosen is None:
            chosen = reference_of(exercise_id, stub) if uses_reference(exercise_id) else stub
        entry.active[stub.__name__] = chosen
        return chosen

    return register


def _relative_module(stub: Callable) -> str:
    """``minikernel.kernels.cpu`` -> ``kernels.cpu``: where the reference lives under solutions/."""
    package, _, rest = stub.__module__.partition(".")
    if package != "minikernel" or not rest:
        raise ValueError(f"@exercise is for functions in minikernel's modules, not {stub.__module__}")
    return rest


def edition_references() -> tuple[str, ...] | None:
    """The IDs whose references a student edition ships; None in the full course.

    ``python -m minikernel release`` writes them as ``solutions.KEPT``; without any
    ``solutions`` package no reference ships at all.
    """
    try:
        solutions = importlib.import_module("solutions")
    except ImportError:
        return ()
    return getattr(solutions, "KEPT", None)


def reference_of(exercise_id: str, stub: Callable) -> Callable:
    """The reference implementation of ``stub``: ``solutions.<module>.<name>``."""
    module = _relative_module(stub)
    kept = edition_references()
    if kept is not None and exercise_id not in kept:
        raise LookupError(
            f"{ENV_VAR}={os.environ.get(ENV_VAR)!r} switches on the reference of exercise {exercise_id}, "
            f"but the references are not part of this student edition of the course (it ships "
            f"{'those of ' + ', '.join(kept) if kept else 'none'}). Unset {ENV_VAR} to run your own code"
            f"{', or list only ' + ','.join(kept) if kept else ''}.")
    solutions = importlib.import_module(f"solutions.{module}")
    try:
        reference = getattr(solutions, stub.__name__)
    except AttributeError:
        raise LookupError(
            f"exercise {exercise_id}: solutions/{module.replace('.', '/')}.py has no {stub.__name__}()") from None
    if inspect.signature(reference) != inspect.signature(stub):
        raise TypeError(
            f"exercise {exercise_id}: solutions.{module}.{stub.__name__}{inspect.signature(reference)}"
            f" does not match the stub's signature {inspect.signature(stub)}")
    return reference


def registry() -> dict[str, Exercise]:
    """All registered exercises, by ID, in numeric order."""
    return dict(sorted(_REGISTRY.items(), key=lambda kv: id_key(kv[0])))


def id_key(exercise_id: str) -> tuple[int, int]:
    """Sort key: "1.10" after "1.9"."""
    chapter, number = exercise_id.split(".")
    return int(chapter), int(number)


def select(patterns: list[str] | None, where: str = "argument") -> list[str]:
    """The registered IDs that ``patterns`` (IDs or globs; all when empty) name.

    Raises ValueError for a pattern that names no exercise; ``where`` names the patterns'
    origin in that message (a command-line option, say).
    """
    known = list(registry())
    if not patterns:
        return known
    chosen: list[str] = []
    for pattern in parse_selection(",".join(patterns), where=where):
        hits = [i for i in known if _token_matches(pattern, i)]
        if not hits:
            raise ValueError(f"no exercise matches {pattern!r} (given as {where}); known exercises: {', '.join(known)}")
        chosen += [h for h in hits if h not in chosen]
    return sorted(chosen, key=id_key)


def check_selection() -> None:
    """Fail clearly when ``MINIKERNEL_SOLUTIONS`` names an exercise that does not exist,
    or a ``MINIKERNEL_OVERRIDE`` file names an unknown exercise or none of its functions.

    Called once all minikernel modules are imported (the registry is complete then).
    """
    known = registry()
    for token in _SELECTION:
        if not any(_token_matches(token, i) for i in known):
            raise ValueError(
                f"{ENV_VAR}={os.environ.get(ENV_VAR)!r}: {token!r} matches no exercise. "
                f"Known exercises: {', '.join(known)}.")
    for exercise_id, path in _OVERRIDES.items():
        if exercise_id not in known:
            raise ValueError(f"{OVERRIDE_VAR}: {path} declares EXERCISE = {exercise_id!r}, which is no "
                             f"exercise. Known exercises: {', '.join(known)}.")
        names = list(known[exercise_id].stubs)
        if not any(hasattr(_override_module(exercise_id), n) for n in names):
            raise ValueError(f"{OVERRIDE_VAR}: {path} defines none of exercise {exercise_id}'s functions; "
                             f"define {' or '.join(n + '()' for n in names)} with the stub's signature.")


def stub_exercise_id(exc: BaseException) -> str | None:
    """The exercise ID named by a stub's NotImplementedError, else None."""
    if isinstance(exc, NotImplementedError):
        match = STUB_MESSAGE_RE.search(str(exc))
        if match:
            return match.group(1)
    return None


def finish_message(exc: BaseException, doing: str) -> str | None:
    """What a widget shows instead of a stub's traceback: ``"Finish exercise 1.2
    (index_to_position) <doing>"``; None when ``exc`` is not a stub's error."""
    which = stub_exercise_id(exc)
    if which is None:
        return None
    name = re.search(r"\(([^)]*)\)", str(exc))
    return f"Finish exercise {which}{f' ({name[1]})' if name else ''} {doing}"
