"""OpenMP's wait policy for the grading commands: idle threads sleep instead of spinning.

torch loads GNU OpenMP (``libgomp``) when it is imported, and numba's parallel kernels
(``prange``, numba's ``omp`` threading layer) run on that same loaded copy. libgomp reads
``OMP_WAIT_POLICY`` once, when it is loaded. Unset, a thread that has finished its share
of a parallel loop keeps spinning for a while (libgomp's ``GOMP_SPINCOUNT``, 300 000 turns)
before it sleeps. The grader runs one exercise per core at once, each process with one
OpenMP thread per core: the spinning threads take the cores that the other exercise's
threads need, and when other work loads the machine a parallel loop's barrier waits for
threads that are not running. ``PASSIVE`` makes an idle thread sleep at once.

``python -m minikernel grade`` (and ``gradebook``, which runs that command for each
submission) imports this package before the command's own code runs, and the package
imports torch. So the policy is set here, by ``minikernel/__init__.py`` before anything
else, when the interpreter was started as one of those commands (``sys.orig_argv``) and
``OMP_WAIT_POLICY`` is not set already. Everything else (``bench``, notebooks, tests)
keeps OpenMP's default: the benchmarks time torch as it is normally run.
"""
from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

VARIABLE = "OMP_WAIT_POLICY"
PASSIVE = "PASSIVE"
#: The commands of ``python -m minikernel`` whose processes get ``PASSIVE``.
GRADING_COMMANDS = frozenset({"grade", "gradebook"})
#: Interpreter options that take the next argument as their value (``-X importtime``).
_OPTIONS_WITH_VALUE = frozenset({"-X", "-W"})


def minikernel_command(argv: list[str]) -> str | None:
    """The command of an interpreter started as ``python [options] -m minikernel COMMAND ...``
    (``argv`` as in ``sys.orig_argv``: the interpreter first): ``"grade"`` for ``python -m
    minikernel grade 1.2``. None when the interpreter runs anything else (another module,
    a script, ``-c``) or no command is given."""
    k = 1
    while k < len(argv):
        arg = argv[k]
        if arg == "-m" or arg.startswith("-m"):
            module, rest = (argv[k + 1] if k + 1 < len(argv) else None, k + 2) if arg == "-m" else (arg[2:], k + 1)
            return argv[rest] if module == "minikernel" and rest < len(argv) else None
        if arg in _OPTIONS_WITH_VALUE:
            k += 2
            continue
        if not arg.startswith("-") or arg in ("-", "-c"):
            return None  # a script, stdin or -c: what follows are its own arguments
        k += 1
    return None


def set_for_grading(argv: list[str], environ: MutableMapping[str, str]) -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` in ``environ`` when ``argv`` runs a grading command
    (``GRADING_COMMANDS``) and the variable is not set (a value the user chose stays);
    returns whether it set it."""
    if minikernel_command(argv) not in GRADING_COMMANDS or VARIABLE in environ:
        return False
    environ[VARIABLE] = PASSIVE
    return True


set_for_grading(sys.orig_argv, os.environ)
